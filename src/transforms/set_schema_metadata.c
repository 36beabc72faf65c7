/*
 * set_schema_metadata.c - org.apache.kafka.connect.transforms.
 * SetSchemaMetadata$Key and $Value: set the name and/or version of the key
 * (value) schema, e.g. to give an Avro record the name a registry subject
 * expects.
 *
 * As Kafka (SetSchemaMetadata.java): at least one of schema.name and
 * schema.version ("Neither schema name nor version configured"); a record
 * without schema and value passes; a value without a schema is refused
 * ("Schema required for [updating schema metadata]"); everything else of
 * the schema (type, optionality, default, doc, parameters, fields) is kept;
 * a struct value is rebuilt on the new schema, null fields taking their
 * default with replace.null.with.default=true (default).
 */
#include <stdlib.h>
#include <string.h>

#include "cdcflow/transforms.h"
#include "xf_util.h"

typedef struct ssm {
    bool is_key, replace_null;
    char *name; /* NULL: keep */
    bool has_version;
    int32_t version;
    xf_cache cache;
} ssm;

static const cf_cfg_def ssm_defs[] = {
    {.name = "schema.name", .type = CF_CFG_STRING, .nullable = true, .importance = CF_IMPORTANCE_HIGH,
     .group = "Schema", .doc = "Schema name to set."},
    {.name = "schema.version", .type = CF_CFG_INT, .nullable = true, .importance = CF_IMPORTANCE_HIGH,
     .group = "Schema", .doc = "Schema version to set."},
    XF_REPLACE_NULL_DEF("Schema"),
    {.name = NULL},
};

const cf_cfg_table cf_set_schema_metadata_table = {
    .name = "SetSchemaMetadata",
    .title = "SetSchemaMetadata (`org.apache.kafka.connect.transforms.SetSchemaMetadata$Key`, `$Value`)",
    .intro = "Set the schema name, version or both on the record's key or value schema.",
    .defs = ssm_defs,
};

static void ssm_destroy(void *state) {
    ssm *t = state;
    if (!t) return;
    free(t->name);
    xf_cache_clear(&t->cache);
    free(t);
}

static cf_code ssm_create(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    const char *name = cf_config_string(cfg, "schema.name");
    const cf_props *raw = cf_config_props(cfg);
    bool has_version = cf_props_get(raw, "schema.version") != NULL;
    if (!name && !has_version) {
        cf_err_set(err, CF_ERR_CONFIG, "Neither schema name nor version configured");
        cf_err_hint(err, "Set schema.name, schema.version or both.");
        return CF_ERR_CONFIG;
    }
    ssm *t = cf_xcalloc(1, sizeof *t);
    t->is_key = is_key;
    t->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    t->name = name ? cf_xstrdup(name) : NULL;
    t->has_version = has_version;
    if (has_version) t->version = cf_config_int(cfg, "schema.version");
    *state = t;
    return CF_OK;
}

static cf_code ssm_create_key(const cf_config *cfg, void **state, cf_err *err) {
    return ssm_create(cfg, true, state, err);
}
static cf_code ssm_create_value(const cf_config *cfg, void **state, cf_err *err) {
    return ssm_create(cfg, false, state, err);
}

static cf_code ssm_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    ssm *t = state;
    *out = NULL;
    cf_schema *schema = xf_op_schema(rec, t->is_key);
    cf_value *value = xf_op_value(rec, t->is_key);
    if (!schema && !value) {
        *out = rec;
        return CF_OK;
    }
    cf_code rc = xf_require_schema(schema, "updating schema metadata", err);
    if (rc) return rc;
    cf_schema *ns = xf_cache_get(&t->cache, schema, 0);
    if (!ns) {
        ns = xf_shallow_copy(schema);
        if (t->name) cf_schema_set_name(ns, t->name);
        if (t->has_version) cf_schema_set_version(ns, t->version);
        xf_cache_put(&t->cache, schema, 0, ns);
    }
    cf_value *nv;
    if (value && value->type == CF_STRUCT) {
        /* the fields are the same: only the struct's schema reference changes */
        nv = cf_value_struct(cf_schema_ref(ns));
        for (size_t i = 0; i < ns->n_fields && i < value->u.st.schema->n_fields; i++)
            nv->u.st.fields[i] = xf_get_clone(value, i, t->replace_null);
    } else {
        nv = value;
        if (t->is_key) rec->key = NULL;
        else rec->value = NULL;
    }
    xf_op_set(rec, t->is_key, ns, nv);
    *out = rec;
    return CF_OK;
}

XF_KEY_VALUE(cf_xf_set_schema_metadata, "SetSchemaMetadata", &cf_set_schema_metadata_table, ssm_create_key,
             ssm_create_value, ssm_apply, ssm_destroy);
