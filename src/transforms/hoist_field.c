/*
 * hoist_field.c - org.apache.kafka.connect.transforms.HoistField$Key and
 * $Value: wrap the key (value) in a struct (a map without a schema) with one
 * field, e.g. a bare string key becomes {"id": "..."}, which a table sink can
 * take as its primary key.
 *
 * As Kafka (HoistField.java): with a schema the new schema is an unnamed
 * required struct whose one field has the old schema; a null value is
 * wrapped too (the struct's field is null); without a schema the result is
 * a map of one entry.
 */
#include <stdlib.h>

#include "cdcflow/transforms.h"
#include "xf_util.h"

typedef struct hf {
    bool is_key;
    char *field;
    xf_cache cache;
} hf;

static const cf_cfg_def hf_defs[] = {
    {.name = "field", .type = CF_CFG_STRING, .default_value = CF_CFG_REQUIRED, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields",
     .doc = "Field name for the single field that will be created in the resulting Struct or Map."},
    {.name = NULL},
};

const cf_cfg_table cf_hoist_field_table = {
    .name = "HoistField",
    .title = "HoistField (`org.apache.kafka.connect.transforms.HoistField$Key`, `$Value`)",
    .intro = "Wrap data using the specified field name in a Struct when schema present, or a Map in the case of "
             "schemaless data.",
    .defs = hf_defs,
};

static void hf_destroy(void *state) {
    hf *t = state;
    if (!t) return;
    free(t->field);
    xf_cache_clear(&t->cache);
    free(t);
}

static cf_code hf_create(const cf_config *cfg, bool is_key, void **state) {
    hf *t = cf_xcalloc(1, sizeof *t);
    t->is_key = is_key;
    t->field = cf_xstrdup(cf_config_string(cfg, "field"));
    *state = t;
    return CF_OK;
}

static cf_code hf_create_key(const cf_config *cfg, void **state, cf_err *err) {
    (void)err;
    return hf_create(cfg, true, state);
}
static cf_code hf_create_value(const cf_config *cfg, void **state, cf_err *err) {
    (void)err;
    return hf_create(cfg, false, state);
}

static cf_code hf_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    (void)err;
    hf *t = state;
    cf_schema *schema = xf_op_schema(rec, t->is_key);
    cf_value *value = t->is_key ? rec->key : rec->value;
    /* take the value out of the record: it moves into the wrapper */
    if (t->is_key) rec->key = NULL;
    else rec->value = NULL;
    if (!schema) {
        cf_value *m = cf_value_map();
        cf_value_map_put(m, cf_value_string(t->field), value);
        xf_op_set(rec, t->is_key, NULL, m);
    } else {
        cf_schema *ns = xf_cache_get(&t->cache, schema, 0);
        if (!ns) {
            ns = cf_schema_new_struct();
            cf_schema_add_field(ns, t->field, cf_schema_ref(schema), NULL);
            xf_cache_put(&t->cache, schema, 0, ns);
        }
        cf_value *st = cf_value_struct(cf_schema_ref(ns));
        st->u.st.fields[0] = value;
        xf_op_set(rec, t->is_key, ns, st);
    }
    *out = rec;
    return CF_OK;
}

XF_KEY_VALUE(cf_xf_hoist_field, "HoistField", &cf_hoist_field_table, hf_create_key, hf_create_value, hf_apply,
             hf_destroy);
