/*
 * value_to_key.c - org.apache.kafka.connect.transforms.ValueToKey: the key
 * becomes a struct (or, without a schema, a map) of the listed fields of the
 * value. This is how a keyless source (a CSV or JSON lines file) gets the
 * primary key a table sink needs: `fields=id`.
 *
 * As Kafka (ValueToKey.java): the key schema is an unnamed required struct
 * whose fields carry the value fields' schemas; a listed field the value
 * schema lacks is "Field does not exist: x"; without a schema an absent
 * field becomes a null entry of the key map; a null value is refused
 * (requireMap / requireStruct); replace.null.with.default (default true)
 * takes a field's default for a null.
 */
#include <stdlib.h>
#include <string.h>

#include "cdcflow/transforms.h"
#include "xf_util.h"

#define PURPOSE "copying fields from value to key"

typedef struct vtk {
    char **fields;
    size_t n;
    bool replace_null;
    xf_cache cache;
} vtk;

static const cf_cfg_def vtk_defs[] = {
    {.name = "fields", .type = CF_CFG_LIST, .default_value = CF_CFG_REQUIRED, .validator = xf_nonempty_list,
     .importance = CF_IMPORTANCE_HIGH, .group = "Fields",
     .doc = "Field names on the record value to extract as the record key."},
    XF_REPLACE_NULL_DEF("Fields"),
    {.name = NULL},
};

const cf_cfg_table cf_value_to_key_table = {
    .name = "ValueToKey",
    .title = "ValueToKey (`org.apache.kafka.connect.transforms.ValueToKey`)",
    .intro = "Replace the record key with a new key formed from a subset of fields in the record value: a struct "
             "with those fields (their schemas kept), or a map without a schema. A table sink takes this key as the "
             "primary key, so `fields=id` turns rows of a CSV or JSON lines file into upserts by id.",
    .defs = vtk_defs,
};

static void vtk_destroy(void *state) {
    vtk *t = state;
    if (!t) return;
    xf_list_free(t->fields, t->n);
    xf_cache_clear(&t->cache);
    free(t);
}

static cf_code vtk_create(const cf_config *cfg, void **state, cf_err *err) {
    (void)err;
    vtk *t = cf_xcalloc(1, sizeof *t);
    t->fields = xf_list_copy(cfg, "fields", &t->n);
    t->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    *state = t;
    return CF_OK;
}

static cf_code vtk_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    vtk *t = state;
    *out = NULL;
    cf_code rc;
    if (!rec->value_schema) {
        if ((rc = xf_require_map(rec->value, PURPOSE, err))) return rc;
        cf_value *key = cf_value_map();
        for (size_t i = 0; i < t->n; i++)
            xf_map_put(key, t->fields[i], cf_value_clone(cf_value_map_get_str(rec->value, t->fields[i])));
        cf_record_set_key(rec, NULL, key);
        *out = rec;
        return CF_OK;
    }
    if ((rc = xf_require_struct(rec->value, PURPOSE, err))) return rc;
    const cf_schema *vs = rec->value->u.st.schema;
    cf_schema *ks = xf_cache_get(&t->cache, vs, 0);
    if (!ks) {
        ks = cf_schema_new_struct();
        for (size_t i = 0; i < t->n; i++) {
            const cf_field *f = cf_schema_field(vs, t->fields[i]);
            if (!f) {
                cf_schema_unref(ks);
                cf_err_set(err, CF_ERR_SCHEMA, "Field does not exist: %s", t->fields[i]);
                cf_err_where(err, "%s", t->fields[i]);
                return CF_ERR_SCHEMA;
            }
            /* a field listed twice: Java's SchemaBuilder refuses the duplicate */
            if ((rc = cf_schema_add_field(ks, t->fields[i], cf_schema_ref(f->schema), err))) {
                cf_schema_unref(ks);
                return rc;
            }
        }
        xf_cache_put(&t->cache, vs, 0, ks);
    }
    cf_value *key = cf_value_struct(ks);
    for (size_t i = 0; i < t->n; i++)
        key->u.st.fields[i] = xf_get_clone(rec->value, cf_schema_field(vs, t->fields[i])->index, t->replace_null);
    cf_record_set_key(rec, cf_schema_ref(ks), key);
    *out = rec;
    return CF_OK;
}

static const char *const vtk_aliases[] = {"org.apache.kafka.connect.transforms.ValueToKey", NULL};

const cf_transform_plugin cf_xf_value_to_key = {
    .name = "ValueToKey",
    .aliases = vtk_aliases,
    .config = &cf_value_to_key_table,
    .create = vtk_create,
    .apply = vtk_apply,
    .destroy = vtk_destroy,
};
