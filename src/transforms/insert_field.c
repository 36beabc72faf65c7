/*
 * insert_field.c - org.apache.kafka.connect.transforms.InsertField$Key and
 * $Value: add fields from the record's metadata (topic, partition, offset,
 * timestamp) or a static string to the key (value) struct or map.
 *
 * As Kafka (InsertField.java): a field name may end in "!" (required field)
 * or "?" (optional, the default); at least one field must be configured
 * ("No field insertion configured"); static.field needs static.value; a
 * null key/value passes unchanged; with a schema the struct is rebuilt with
 * the name, version, doc and parameters of the old one (required), the old
 * fields first (null fields take their default with
 * replace.null.with.default=true), then topic (string), partition (int32),
 * offset (int64), timestamp (Connect Timestamp) and the static field
 * (string), in that order; without a schema the map gets the same entries,
 * the timestamp as a long. The partition and the timestamp are left out
 * when the record has none; the offset exists only on records read from
 * Kafka ("Only SinkRecord supported for [field insertion]" otherwise).
 */
#include <stdlib.h>
#include <string.h>

#include "cdcflow/transforms.h"
#include "xf_util.h"

#define PURPOSE "field insertion"

typedef struct spec {
    char *name; /* NULL: not configured */
    bool optional;
} spec;

enum { F_TOPIC, F_PARTITION, F_OFFSET, F_TIMESTAMP, F_STATIC, F_N };
static const char *const spec_keys[F_N] = {"topic.field", "partition.field", "offset.field", "timestamp.field",
                                           "static.field"};

typedef struct inf {
    bool is_key, replace_null;
    spec f[F_N];
    char *static_value;
    xf_cache cache;
} inf;

#define OPTIONALITY " Suffix with `!` to make this a required field, or `?` to keep it optional (the default)."
static const cf_cfg_def inf_defs[] = {
    {.name = "topic.field", .type = CF_CFG_STRING, .nullable = true, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Field name for Kafka topic." OPTIONALITY},
    {.name = "partition.field", .type = CF_CFG_STRING, .nullable = true, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Field name for Kafka partition." OPTIONALITY},
    {.name = "offset.field", .type = CF_CFG_STRING, .nullable = true, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Field name for Kafka offset - only applicable to sink connectors." OPTIONALITY},
    {.name = "timestamp.field", .type = CF_CFG_STRING, .nullable = true, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Field name for record timestamp." OPTIONALITY},
    {.name = "static.field", .type = CF_CFG_STRING, .nullable = true, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Field name for static data field." OPTIONALITY},
    {.name = "static.value", .type = CF_CFG_STRING, .nullable = true, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Static field value, if field name configured."},
    XF_REPLACE_NULL_DEF("Fields"),
    {.name = NULL},
};

const cf_cfg_table cf_insert_field_table = {
    .name = "InsertField",
    .title = "InsertField (`org.apache.kafka.connect.transforms.InsertField$Key`, `$Value`)",
    .intro = "Insert field(s) using attributes from the record metadata or a configured static value.",
    .defs = inf_defs,
};

static void inf_destroy(void *state) {
    inf *t = state;
    if (!t) return;
    for (int i = 0; i < F_N; i++) free(t->f[i].name);
    free(t->static_value);
    xf_cache_clear(&t->cache);
    free(t);
}

static cf_code inf_create(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    inf *t = cf_xcalloc(1, sizeof *t);
    t->is_key = is_key;
    t->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    bool any = false;
    for (int i = 0; i < F_N; i++) {
        const char *s = cf_config_string(cfg, spec_keys[i]);
        if (!s) continue;
        size_t n = strlen(s);
        t->f[i].optional = true;
        if (n && (s[n - 1] == '?' || s[n - 1] == '!')) {
            t->f[i].optional = s[n - 1] == '?';
            n--;
        }
        t->f[i].name = cf_xstrndup(s, n);
        any = true;
    }
    const char *sv = cf_config_string(cfg, "static.value");
    t->static_value = sv ? cf_xstrdup(sv) : NULL;
    if (!any) {
        inf_destroy(t);
        cf_err_set(err, CF_ERR_CONFIG, "No field insertion configured");
        cf_err_hint(err, "Set at least one of topic.field, partition.field, offset.field, timestamp.field, "
                         "static.field.");
        return CF_ERR_CONFIG;
    }
    if (t->f[F_STATIC].name && !t->static_value) {
        cf_err_set(err, CF_ERR_CONFIG, "Invalid value null for configuration static.value: No value specified for "
                                       "static field: %s", t->f[F_STATIC].name);
        cf_err_where(err, "static.value");
        inf_destroy(t);
        return CF_ERR_CONFIG;
    }
    *state = t;
    return CF_OK;
}

static cf_code inf_create_key(const cf_config *cfg, void **state, cf_err *err) {
    return inf_create(cfg, true, state, err);
}
static cf_code inf_create_value(const cf_config *cfg, void **state, cf_err *err) {
    return inf_create(cfg, false, state, err);
}

static cf_schema *field_schema(int which, bool optional) {
    cf_schema *s;
    switch (which) {
    case F_PARTITION: s = cf_schema_new(CF_INT32); break;
    case F_OFFSET: s = cf_schema_new(CF_INT64); break;
    case F_TIMESTAMP: s = cf_schema_timestamp(); break;
    default: s = cf_schema_new(CF_STRING); break;
    }
    cf_schema_set_optional(s, optional);
    return s;
}

/* The value to insert for field `which`, or NULL when the record has none. */
static cf_value *field_value(const inf *t, int which, const cf_record *rec) {
    switch (which) {
    case F_TOPIC: return rec->topic ? cf_value_string(rec->topic) : NULL;
    case F_PARTITION: return rec->partition >= 0 ? cf_value_int32(rec->partition) : NULL;
    case F_OFFSET: return cf_value_int64(rec->offset);
    case F_TIMESTAMP: return rec->ts_type != CF_TS_NONE ? cf_value_int64(rec->timestamp) : NULL;
    default: return cf_value_string(t->static_value);
    }
}

static cf_code inf_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    inf *t = state;
    *out = NULL;
    cf_value *value = xf_op_value(rec, t->is_key);
    if (!value) {
        *out = rec;
        return CF_OK;
    }
    cf_code rc;
    if (t->f[F_OFFSET].name && rec->offset < 0) {
        cf_err_set(err, CF_ERR_SCHEMA, "Only SinkRecord supported for [%s], found: %s", PURPOSE,
                   rec->source_offset ? "SourceRecord" : "a record without a Kafka offset");
        cf_err_hint(err, "offset.field works on records read from Kafka (sink connectors).");
        return CF_ERR_SCHEMA;
    }
    cf_schema *schema = xf_op_schema(rec, t->is_key);
    if (!schema) {
        if ((rc = xf_require_map(value, PURPOSE, err))) return rc;
        cf_value *m = cf_value_clone(value);
        for (int i = 0; i < F_N; i++) {
            if (!t->f[i].name) continue;
            cf_value *v = field_value(t, i, rec);
            if (v || i == F_TOPIC) xf_map_put(m, t->f[i].name, v);
        }
        xf_op_set(rec, t->is_key, NULL, m);
        *out = rec;
        return CF_OK;
    }
    if ((rc = xf_require_struct(value, PURPOSE, err))) return rc;
    const cf_schema *vs = value->u.st.schema;
    cf_schema *ns = xf_cache_get(&t->cache, vs, 0);
    if (!ns) {
        ns = xf_struct_basics(vs);
        for (size_t i = 0; i < vs->n_fields; i++)
            cf_schema_add_field(ns, vs->fields[i].name, cf_schema_ref(vs->fields[i].schema), NULL);
        for (int i = 0; i < F_N; i++) {
            if (!t->f[i].name) continue;
            if ((rc = cf_schema_add_field(ns, t->f[i].name, field_schema(i, t->f[i].optional), err))) {
                cf_schema_unref(ns);
                cf_err_hint(err, "The record already has a field named \"%s\"; choose another name for %s.",
                            t->f[i].name, spec_keys[i]);
                return rc;
            }
        }
        xf_cache_put(&t->cache, vs, 0, ns);
    }
    cf_value *nv = cf_value_struct(cf_schema_ref(ns));
    size_t k = 0;
    for (; k < vs->n_fields; k++) nv->u.st.fields[k] = xf_get_clone(value, k, t->replace_null);
    for (int i = 0; i < F_N; i++)
        if (t->f[i].name) nv->u.st.fields[k++] = field_value(t, i, rec);
    xf_op_set(rec, t->is_key, ns, nv);
    *out = rec;
    return CF_OK;
}

XF_KEY_VALUE(cf_xf_insert_field, "InsertField", &cf_insert_field_table, inf_create_key, inf_create_value, inf_apply,
             inf_destroy);
