/*
 * mask_field.c - org.apache.kafka.connect.transforms.MaskField$Key and
 * $Value: replace the listed fields with the "null value" of their type (0,
 * false, "", empty array or map, the epoch for dates and times, 0 for a
 * Decimal) or with `replacement` converted to the field's type, e.g. to keep
 * e-mail addresses out of an analytics table.
 *
 * As Kafka (MaskField.java): the schema is unchanged; a null field stays
 * null; without a schema a listed field the map lacks is added as null (a
 * HashMap.put of null); a replacement is taken for numbers, strings and
 * decimals only ("Cannot mask value of type ... with custom replacement."),
 * must convert to the field's type ("Unable to convert ... to number") and
 * must not be empty; bytes and structs cannot be masked ("Cannot mask value
 * of type: ..."); replace.null.with.default=true (default) gives a null
 * field with a default its default first (so it is masked too).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/transforms.h"
#include "xf_util.h"

#define PURPOSE "mask fields"

typedef struct mf {
    bool is_key, replace_null;
    char **fields;
    size_t n;
    char *replacement; /* NULL: the type's null value */
} mf;

static cf_code replacement_validator(const char *key, const char *value, cf_err *err) {
    return value ? xf_nonempty_string(key, value, err) : CF_OK;
}

static const cf_cfg_def mf_defs[] = {
    {.name = "fields", .type = CF_CFG_LIST, .default_value = CF_CFG_REQUIRED, .validator = xf_nonempty_list,
     .importance = CF_IMPORTANCE_HIGH, .group = "Fields", .doc = "Names of fields to mask."},
    {.name = "replacement", .type = CF_CFG_STRING, .nullable = true, .validator = replacement_validator,
     .importance = CF_IMPORTANCE_LOW, .group = "Fields",
     .doc = "Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty string "
            "values only)."},
    XF_REPLACE_NULL_DEF("Fields"),
    {.name = NULL},
};

const cf_cfg_table cf_mask_field_table = {
    .name = "MaskField",
    .title = "MaskField (`org.apache.kafka.connect.transforms.MaskField$Key`, `$Value`)",
    .intro = "Mask specified fields with a valid null value for the field type (i.e. 0, false, empty string, and so "
             "on). For numeric and string fields, an optional replacement value can be specified that is converted "
             "to the correct type.",
    .defs = mf_defs,
};

static void mf_destroy(void *state) {
    mf *t = state;
    if (!t) return;
    xf_list_free(t->fields, t->n);
    free(t->replacement);
    free(t);
}

static cf_code mf_create(const cf_config *cfg, bool is_key, void **state) {
    mf *t = cf_xcalloc(1, sizeof *t);
    t->is_key = is_key;
    t->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    t->fields = xf_list_copy(cfg, "fields", &t->n);
    const char *r = cf_config_string(cfg, "replacement");
    t->replacement = r ? cf_xstrdup(r) : NULL;
    *state = t;
    return CF_OK;
}
static cf_code mf_create_key(const cf_config *cfg, void **state, cf_err *err) {
    (void)err;
    return mf_create(cfg, true, state);
}
static cf_code mf_create_value(const cf_config *cfg, void **state, cf_err *err) {
    (void)err;
    return mf_create(cfg, false, state);
}

static bool is_time(const cf_schema *s) {
    return s && (cf_schema_is_logical(s, CF_LOGICAL_DATE) || cf_schema_is_logical(s, CF_LOGICAL_TIME) ||
                 cf_schema_is_logical(s, CF_LOGICAL_TIMESTAMP));
}

static cf_code not_number(const char *r, cf_err *err) {
    cf_err_set(err, CF_ERR_SCHEMA, "Unable to convert %s (class java.lang.String) to number", r);
    cf_err_hint(err, "The replacement must convert to the field's type.");
    return CF_ERR_SCHEMA;
}

/* `replacement` as a value of v's type. */
static cf_code with_replacement(const mf *t, const cf_schema *s, const cf_value *v, cf_value **out, cf_err *err) {
    const char *r = t->replacement;
    int32_t scale;
    if (s && cf_schema_decimal_scale(s, &scale)) {
        uint8_t *b = NULL;
        size_t n = 0;
        if (cf_decimal_from_string(r, scale, &b, &n, NULL) != CF_OK) return not_number(r, err);
        *out = cf_value_bytes_take(b, n);
        return CF_OK;
    }
    if (is_time(s) || v->type == CF_BOOLEAN || v->type == CF_BYTES || v->type == CF_ARRAY || v->type == CF_MAP ||
        v->type == CF_STRUCT) {
        cf_err_set(err, CF_ERR_SCHEMA, "Cannot mask value of type %s with custom replacement.",
                   is_time(s) ? "java.util.Date" : xf_java_type(v));
        return CF_ERR_SCHEMA;
    }
    if (v->type == CF_STRING) {
        *out = cf_value_string(r);
        return CF_OK;
    }
    char *end;
    errno = 0;
    if (v->type == CF_FLOAT32 || v->type == CF_FLOAT64) {
        double d = strtod(r, &end);
        if (end == r || *end) return not_number(r, err);
        *out = v->type == CF_FLOAT32 ? cf_value_float32((float)d) : cf_value_float64(d);
        return CF_OK;
    }
    long long x = strtoll(r, &end, 10);
    if (end == r || *end || errno) {
        /* Connect's Values parse "12.0" as a number too */
        double d = strtod(r, &end);
        if (end == r || *end || d != floor(d) || fabs(d) > 9.2e18) return not_number(r, err);
        x = (long long)d;
    }
    static const long long lo[] = {INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN};
    static const long long hi[] = {INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX};
    if (x < lo[v->type - CF_INT8] || x > hi[v->type - CF_INT8]) return not_number(r, err);
    switch (v->type) {
    case CF_INT8: *out = cf_value_int8((int8_t)x); break;
    case CF_INT16: *out = cf_value_int16((int16_t)x); break;
    case CF_INT32: *out = cf_value_int32((int32_t)x); break;
    default: *out = cf_value_int64(x); break;
    }
    return CF_OK;
}

/* MaskField.masked: the masked copy of v (s: its schema, NULL without). */
static cf_code masked(const mf *t, const cf_schema *s, const cf_value *v, cf_value **out, cf_err *err) {
    *out = NULL;
    if (!v) return CF_OK;
    if (t->replacement) return with_replacement(t, s, v, out, err);
    int32_t scale;
    if (s && cf_schema_decimal_scale(s, &scale)) {
        *out = cf_value_bytes("\0", 1); /* BigDecimal.ZERO */
        return CF_OK;
    }
    switch (v->type) {
    case CF_INT8: *out = cf_value_int8(0); break;
    case CF_INT16: *out = cf_value_int16(0); break;
    case CF_INT32: *out = cf_value_int32(0); break; /* Date and Time: the epoch */
    case CF_INT64: *out = cf_value_int64(0); break; /* Timestamp: the epoch */
    case CF_FLOAT32: *out = cf_value_float32(0); break;
    case CF_FLOAT64: *out = cf_value_float64(0); break;
    case CF_BOOLEAN: *out = cf_value_bool(false); break;
    case CF_STRING: *out = cf_value_string(""); break;
    case CF_ARRAY: *out = cf_value_array(); break;
    case CF_MAP: *out = cf_value_map(); break;
    default:
        cf_err_set(err, CF_ERR_SCHEMA, "Cannot mask value of type: %s", xf_java_type(v));
        return CF_ERR_SCHEMA;
    }
    return CF_OK;
}

static cf_code mf_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    mf *t = state;
    *out = NULL;
    cf_schema *schema = xf_op_schema(rec, t->is_key);
    cf_value *value = xf_op_value(rec, t->is_key);
    cf_code rc;
    cf_value *nv;
    if (!schema) {
        if ((rc = xf_require_map(value, PURPOSE, err))) return rc;
        nv = cf_value_clone(value);
        for (size_t i = 0; i < t->n; i++) {
            cf_value *m = NULL;
            if ((rc = masked(t, NULL, cf_value_map_get_str(value, t->fields[i]), &m, err))) {
                cf_err_where(err, "%s", t->fields[i]);
                cf_value_destroy(nv);
                return rc;
            }
            xf_map_put(nv, t->fields[i], m);
        }
        xf_op_set(rec, t->is_key, NULL, nv);
        *out = rec;
        return CF_OK;
    }
    if ((rc = xf_require_struct(value, PURPOSE, err))) return rc;
    const cf_schema *vs = value->u.st.schema;
    nv = cf_value_struct(cf_schema_ref((cf_schema *)vs));
    for (size_t i = 0; i < vs->n_fields; i++) {
        cf_value *orig = xf_get_clone(value, i, t->replace_null);
        if (!xf_list_has(t->fields, t->n, vs->fields[i].name)) {
            nv->u.st.fields[i] = orig;
            continue;
        }
        rc = masked(t, vs->fields[i].schema, orig, &nv->u.st.fields[i], err);
        cf_value_destroy(orig);
        if (rc) {
            cf_err_where(err, "%s", vs->fields[i].name);
            cf_value_destroy(nv);
            return rc;
        }
    }
    xf_op_set(rec, t->is_key, cf_schema_ref(schema), nv);
    *out = rec;
    return CF_OK;
}

XF_KEY_VALUE(cf_xf_mask_field, "MaskField", &cf_mask_field_table, mf_create_key, mf_create_value, mf_apply,
             mf_destroy);
