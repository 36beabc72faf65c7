/*
 * extract_field.c - org.apache.kafka.connect.transforms.ExtractField$Key and
 * $Value: the key (value) becomes one of its fields, e.g. a Debezium key
 * struct {id} becomes the bare id.
 *
 * As Kafka (ExtractField.java, KIP-821 field paths): `field` is a name, or
 * with field.syntax.version=V2 a dotted path into nested structs/maps.
 * With a schema, a field the schema lacks is "Unknown field: <path>"; the
 * new schema is the field's; a null struct gives null with that schema.
 * Without a schema, a missing field gives null; a null key/value stays null.
 * replace.null.with.default (default true) takes the field's default for a
 * null.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/transforms.h"
#include "xf_util.h"

#define PURPOSE "field extraction"

typedef struct ef {
    bool is_key, replace_null;
    char *original;
    xf_path path;
} ef;

static const cf_cfg_def ef_defs[] = {
    {.name = "field", .type = CF_CFG_STRING, .default_value = CF_CFG_REQUIRED, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Field name to extract."},
    XF_REPLACE_NULL_DEF("Fields"),
    XF_FIELD_SYNTAX_DEF,
    {.name = NULL},
};

const cf_cfg_table cf_extract_field_table = {
    .name = "ExtractField",
    .title = "ExtractField (`org.apache.kafka.connect.transforms.ExtractField$Key`, `$Value`)",
    .intro = "Extract the specified field from a Struct when schema present, or a Map in the case of schemaless "
             "data. Any null values are passed through unmodified. With `field.syntax.version=V2` the field is a "
             "dotted path into nested structs or maps.",
    .defs = ef_defs,
};

static void ef_destroy(void *state) {
    ef *t = state;
    if (!t) return;
    free(t->original);
    xf_path_free(&t->path);
    free(t);
}

static cf_code ef_create(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    ef *t = cf_xcalloc(1, sizeof *t);
    t->is_key = is_key;
    t->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    t->original = cf_xstrdup(cf_config_string(cfg, "field"));
    bool v2 = strcasecmp(cf_config_string(cfg, "field.syntax.version"), "V2") == 0;
    cf_code rc = xf_path_parse(t->original, v2, &t->path, err);
    if (rc) {
        cf_err_where(err, "field");
        ef_destroy(t);
        return rc;
    }
    *state = t;
    return CF_OK;
}

static cf_code ef_create_key(const cf_config *cfg, void **state, cf_err *err) { return ef_create(cfg, true, state, err); }
static cf_code ef_create_value(const cf_config *cfg, void **state, cf_err *err) {
    return ef_create(cfg, false, state, err);
}

static cf_code ef_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    ef *t = state;
    *out = NULL;
    cf_schema *schema = xf_op_schema(rec, t->is_key);
    cf_value *value = xf_op_value(rec, t->is_key);
    cf_code rc;
    if (!schema) {
        const cf_value *v = NULL;
        if (value) {
            if ((rc = xf_require_map(value, PURPOSE, err))) return rc;
            if ((rc = xf_path_map_value(&t->path, value, &v, err))) return rc;
        }
        xf_op_set(rec, t->is_key, NULL, cf_value_clone(v));
        *out = rec;
        return CF_OK;
    }
    if (value && (rc = xf_require_struct(value, PURPOSE, err))) return rc;
    const cf_field *f = xf_path_field(&t->path, schema);
    if (!f) {
        cf_err_set(err, CF_ERR_SCHEMA, "Unknown field: %s", t->original);
        cf_err_where(err, "%s", t->original);
        return CF_ERR_SCHEMA;
    }
    const cf_value *v = NULL;
    if (value && (rc = xf_path_struct_value(&t->path, value, t->replace_null, &v, err))) return rc;
    xf_op_set(rec, t->is_key, cf_schema_ref(f->schema), cf_value_clone(v));
    *out = rec;
    return CF_OK;
}

XF_KEY_VALUE(cf_xf_extract_field, "ExtractField", &cf_extract_field_table, ef_create_key, ef_create_value, ef_apply,
             ef_destroy);
