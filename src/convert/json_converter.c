/*
 * json_converter.c - org.apache.kafka.connect.json.JsonConverter in C.
 *
 * Wire format and rules are Kafka's (connect/json JsonConverter.java):
 *   schemas.enable=true   {"schema": <Connect schema as JSON>, "payload": <value>}
 *   schemas.enable=false  the bare value; reading infers INT64 / FLOAT64 /
 *                         BOOLEAN / STRING / ARRAY / MAP (string keys)
 * Schema JSON field names and order as Kafka (Jackson) writes them: "type",
 * then "items" | "keys","values" | "fields" (each field's schema followed by
 * "field"), then "optional", "name", "version", "doc", "parameters",
 * "default". Logical types by name: Decimal (bytes, base64 or, with
 * decimal.format=NUMERIC, a JSON number; both accepted on input), Date and
 * Time (int32), Timestamp (int64). Numbers are written as Java writes them
 * (Double.toString, Float.toString, BigDecimal.toString).
 *
 * Deliberate differences, all towards errors instead of silent data change:
 * where Kafka coerces a JSON value of the wrong kind (booleanValue() of a
 * number is false, intValue() of 3.5 is 3, textValue() of a number is null,
 * a long narrowed to int8 wraps) we report a CF_ERR_SCHEMA naming the field.
 * Float fields accept the strings "NaN", "Infinity", "-Infinity" that
 * Jackson writes for non-finite numbers, so our output reads back.
 *
 * Two caches as in Kafka (schemas.cache.size entries each, LRU): JSON schema
 * text -> cf_schema for reading (keyed by the exact bytes of the "schema"
 * value: Debezium repeats the same schema text in every message), and
 * cf_schema -> JSON schema text for writing (keyed by the schema object, a
 * reference is held so the key cannot be recycled).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/convert.h"
#include "json_dom.h"

/* ------------------------------------------------------------------ cache */

typedef struct cache_ent {
    uint64_t hash;
    char *key; /* owned copy of the key bytes */
    size_t klen;
    void *val;
    size_t vlen;
    uint64_t tick;
    int next; /* bucket chain, -1 = end */
    bool used;
} cache_ent;

typedef struct cache {
    cache_ent *ents;
    int cap, count;
    int *buckets;
    int nbuckets;
    uint64_t tick;
    void (*free_val)(void *val, const char *key);
} cache;

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static void cache_init(cache *c, int cap, void (*free_val)(void *, const char *)) {
    memset(c, 0, sizeof *c);
    c->cap = cap;
    c->free_val = free_val;
    if (cap <= 0) return;
    c->ents = cf_xcalloc((size_t)cap, sizeof *c->ents);
    c->nbuckets = 16;
    while (c->nbuckets < cap * 2) c->nbuckets <<= 1;
    c->buckets = cf_xmalloc((size_t)c->nbuckets * sizeof(int));
    for (int i = 0; i < c->nbuckets; i++) c->buckets[i] = -1;
}

static void cache_free(cache *c) {
    for (int i = 0; i < c->count; i++)
        if (c->ents[i].used) {
            c->free_val(c->ents[i].val, c->ents[i].key);
            free(c->ents[i].key);
        }
    free(c->ents);
    free(c->buckets);
}

static cache_ent *cache_get(cache *c, const void *key, size_t klen, uint64_t h) {
    if (c->cap <= 0) return NULL;
    for (int i = c->buckets[h & (uint64_t)(c->nbuckets - 1)]; i >= 0; i = c->ents[i].next) {
        cache_ent *e = &c->ents[i];
        if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0) {
            e->tick = ++c->tick;
            return e;
        }
    }
    return NULL;
}

static void cache_unlink(cache *c, int idx) {
    int *pp = &c->buckets[c->ents[idx].hash & (uint64_t)(c->nbuckets - 1)];
    while (*pp != idx) pp = &c->ents[*pp].next;
    *pp = c->ents[idx].next;
}

/* Takes val; the caller must not use it after if the cache is disabled. */
static int cache_put(cache *c, const void *key, size_t klen, uint64_t h, void *val, size_t vlen) {
    if (c->cap <= 0) {
        c->free_val(val, key);
        return -1;
    }
    int idx;
    if (c->count < c->cap) {
        idx = c->count++;
    } else { /* evict the least recently used */
        idx = 0;
        for (int i = 1; i < c->count; i++)
            if (c->ents[i].tick < c->ents[idx].tick) idx = i;
        cache_unlink(c, idx);
        c->free_val(c->ents[idx].val, c->ents[idx].key);
        free(c->ents[idx].key);
    }
    cache_ent *e = &c->ents[idx];
    e->hash = h;
    e->key = cf_xmemdup(key, klen);
    e->klen = klen;
    e->val = val;
    e->vlen = vlen;
    e->tick = ++c->tick;
    e->used = true;
    int *b = &c->buckets[h & (uint64_t)(c->nbuckets - 1)];
    e->next = *b;
    *b = idx;
    return idx;
}

static void free_schema_val(void *val, const char *key) {
    (void)key;
    cf_schema_unref(val);
}

/* from-connect cache: the key is the cf_schema pointer, whose reference we hold */
static void free_text_val(void *val, const char *key) {
    cf_schema *s;
    memcpy(&s, key, sizeof s);
    cf_schema_unref(s);
    free(val);
}

/* ------------------------------------------------------------------ state */

typedef struct json_conv {
    bool schemas_enable;
    bool decimal_numeric;
    bool replace_null;
    bool is_key;
    cf_arena *arena;
    cf_buf out;
    cache to_cache;   /* schema JSON text -> cf_schema */
    int to_last;      /* to_cache entry of the last message's schema, or -1 */
    cache from_cache; /* cf_schema* -> schema JSON text */
} json_conv;

static const char *const decimal_formats[] = {"BASE64", "NUMERIC", NULL};
static const char *const converter_types[] = {"key", "value", "header", NULL};

static const cf_cfg_def json_defs[] = {
    {.name = "schemas.enable", .type = CF_CFG_BOOLEAN, .default_value = "true", .importance = CF_IMPORTANCE_HIGH,
     .group = "Schemas",
     .doc = "Include schemas within each of the serialized values and keys: `{\"schema\": ..., \"payload\": ...}`. "
            "With `false` the bare JSON value is written and read (numbers become int64 or float64, objects maps)."},
    {.name = "schemas.cache.size", .type = CF_CFG_INT, .default_value = "1000", .has_range = true, .min = 0,
     .max = 2147483647, .importance = CF_IMPORTANCE_HIGH, .group = "Schemas",
     .doc = "The maximum number of schemas that can be cached in this converter instance (each direction)."},
    {.name = "decimal.format", .type = CF_CFG_STRING, .default_value = "BASE64", .valid_values = decimal_formats,
     .importance = CF_IMPORTANCE_LOW, .group = "Serialization",
     .doc = "Controls which format this converter will serialize decimals in: `BASE64` (the unscaled two's "
            "complement bytes, default) or `NUMERIC` (a JSON number). Case insensitive. Both are accepted on input."},
    {.name = "replace.null.with.default", .type = CF_CFG_BOOLEAN, .default_value = "true",
     .importance = CF_IMPORTANCE_LOW, .group = "Serialization",
     .doc = "Whether to replace fields that have a default value and that are null to the default value. When set "
            "to true, the default value is used, otherwise null is used (Kafka 3.7+)."},
    {.name = "converter.type", .type = CF_CFG_STRING, .nullable = true, .valid_values = converter_types,
     .importance = CF_IMPORTANCE_LOW, .group = "Serialization",
     .doc = "Set by the worker (`key`, `value` or `header`); accepted for compatibility, ignored."},
    {.name = NULL},
};

const cf_cfg_table cf_json_converter_table = {
    .name = "json converter",
    .title = "JsonConverter (`json`, `org.apache.kafka.connect.json.JsonConverter`)",
    .intro = "Kafka Connect's JSON format, byte-compatible with Kafka's JsonConverter.",
    .defs = json_defs,
    .prefixes = NULL,
};

static cf_code json_create(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    (void)err;
    json_conv *jc = cf_xcalloc(1, sizeof *jc);
    jc->schemas_enable = cf_config_bool(cfg, "schemas.enable");
    const char *fmt = cf_config_string(cfg, "decimal.format");
    jc->decimal_numeric = fmt && strcasecmp(fmt, "NUMERIC") == 0;
    jc->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    jc->is_key = is_key;
    int cache_size = cf_config_int(cfg, "schemas.cache.size");
    jc->arena = cf_arena_new(0);
    jc->to_last = -1;
    cache_init(&jc->to_cache, cache_size, free_schema_val);
    cache_init(&jc->from_cache, cache_size, free_text_val);
    *state = jc;
    return CF_OK;
}

static void json_destroy(void *state) {
    json_conv *jc = state;
    if (!jc) return;
    cache_free(&jc->to_cache);
    cache_free(&jc->from_cache);
    cf_arena_destroy(jc->arena);
    cf_buf_free(&jc->out);
    free(jc);
}

/* ------------------------------------------------------------ helpers */

static const char *upper_type(cf_type t) {
    static const char *const n[CF_TYPE_COUNT] = {"INT8",    "INT16",  "INT32", "INT64", "FLOAT32", "FLOAT64",
                                                 "BOOLEAN", "STRING", "BYTES", "ARRAY", "MAP",     "STRUCT"};
    return (unsigned)t < CF_TYPE_COUNT ? n[t] : "?";
}

/* Deep copy of a schema without its default (used to type a struct default
 * value without a reference cycle schema -> default -> schema). */
static cf_schema *schema_copy_nodefault(const cf_schema *s) {
    cf_schema *c = cf_schema_new(s->type);
    c->optional = s->optional;
    if (s->name) cf_schema_set_name(c, s->name);
    if (s->has_version) cf_schema_set_version(c, s->version);
    if (s->doc) cf_schema_set_doc(c, s->doc);
    for (size_t i = 0; i < s->n_params; i++) cf_schema_set_param(c, s->params[i].key, s->params[i].value);
    c->key_schema = cf_schema_ref(s->key_schema);
    c->value_schema = cf_schema_ref(s->value_schema);
    for (size_t i = 0; i < s->n_fields; i++) cf_schema_add_field(c, s->fields[i].name, cf_schema_ref(s->fields[i].schema), NULL);
    return c;
}

/* Strip redundant sign bytes of a two's complement big-endian integer
 * (Java's BigInteger.toByteArray is minimal). */
static size_t minimal_twos(const uint8_t *p, size_t n, size_t *skip) {
    size_t k = 0;
    while (k + 1 < n && ((p[k] == 0x00 && !(p[k + 1] & 0x80)) || (p[k] == 0xff && (p[k + 1] & 0x80)))) k++;
    *skip = k;
    return n - k;
}

static bool is_logical(const cf_schema *s, const char *name, cf_type t) {
    return s && s->type == t && s->name && strcmp(s->name, name) == 0;
}

/* ------------------------------------------------------- JSON -> Connect */

static cf_code tc_value(json_conv *jc, const cf_schema *s, const jnode *n, cf_value **out, cf_err *err);

/* The items of JSON array n, each converted with item schema `item` (NULL:
 * schemaless); a failing item's path gets "[i]" in front. */
static cf_code tc_array(json_conv *jc, const cf_schema *item, const jnode *n, cf_value **out, cf_err *err) {
    cf_value *a = cf_value_array();
    for (size_t i = 0; i < n->len; i++) {
        cf_value *v;
        cf_code rc = tc_value(jc, item, n->items[i], &v, err);
        if (rc) {
            char seg[32];
            snprintf(seg, sizeof seg, "[%zu]", i);
            cf_err_where_prefix(err, seg);
            cf_value_destroy(a);
            return rc;
        }
        cf_value_array_push(a, v);
    }
    *out = a;
    return CF_OK;
}

static cf_code kind_err(cf_err *err, const cf_schema *s, const char *want, const jnode *n) {
    cf_err_set(err, CF_ERR_SCHEMA, "invalid JSON %s for a%s %s%s%s value: expected %s", json_type_name(n),
               (s->type == CF_INT8 || s->type == CF_INT16 || s->type == CF_INT32 || s->type == CF_INT64 ||
                s->type == CF_ARRAY) ? "n" : "",
               cf_type_name(s->type), s->name ? " " : "", s->name ? s->name : "", want);
    if (n && (n->type == JN_NUMBER || n->type == JN_STRING))
        cf_err_detail(err, "the value is %.*s%.*s%.*s", n->type == JN_STRING ? 1 : 0, "\"", (int)(n->len > 200 ? 200 : n->len),
                      n->str, n->type == JN_STRING ? 1 : 0, "\"");
    return CF_ERR_SCHEMA;
}

/* 0 = ok, 1 = not an integral JSON number, 2 = out of [lo, hi] */
static int parse_int(const jnode *n, int64_t lo, int64_t hi, int64_t *out) {
    if (n->type != JN_NUMBER || !n->integral) return 1;
    errno = 0;
    char *end;
    long long v = strtoll(n->str, &end, 10);
    if (errno == ERANGE || *end || v < lo || v > hi) return 2;
    *out = v;
    return 0;
}

static cf_code tc_int(const cf_schema *s, const jnode *n, int64_t lo, int64_t hi, cf_value **out, cf_err *err) {
    int64_t v = 0;
    int r = parse_int(n, lo, hi, &v);
    if (r == 1) return kind_err(err, s, "an integral JSON number", n);
    if (r == 2) {
        cf_err_set(err, CF_ERR_SCHEMA, "number %s is out of range for %s", n->str, cf_type_name(s->type));
        cf_err_detail(err, "%s holds %" PRId64 " to %" PRId64, cf_type_name(s->type), lo, hi);
        return CF_ERR_SCHEMA;
    }
    cf_value *x = cf_value_int64(v);
    x->type = s->type;
    *out = x;
    return CF_OK;
}

static bool non_finite_text(const jnode *n, double *d) {
    if (n->type != JN_STRING) return false;
    if (strcmp(n->str, "NaN") == 0) *d = NAN;
    else if (strcmp(n->str, "Infinity") == 0) *d = INFINITY;
    else if (strcmp(n->str, "-Infinity") == 0) *d = -INFINITY;
    else return false;
    return true;
}

static cf_code tc_decimal(const cf_schema *s, const jnode *n, cf_value **out, cf_err *err) {
    int32_t scale;
    if (!cf_schema_decimal_scale(s, &scale)) {
        cf_err_set(err, CF_ERR_SCHEMA, "Invalid Decimal schema: scale parameter not found.");
        cf_err_hint(err, "A Decimal schema needs \"parameters\": {\"scale\": \"<int>\"}.");
        return CF_ERR_SCHEMA;
    }
    if (n->type == JN_NUMBER) {
        uint8_t *bytes;
        size_t len;
        cf_code rc = cf_decimal_from_string(n->str, scale, &bytes, &len, err);
        if (rc) {
            if (err) err->code = CF_ERR_SCHEMA;
            return CF_ERR_SCHEMA;
        }
        *out = cf_value_bytes(bytes, len);
        free(bytes);
        return CF_OK;
    }
    if (n->type == JN_STRING) {
        uint8_t *bytes;
        size_t len, skip;
        if (!json_base64_decode(n->str, n->len, &bytes, &len) || len == 0) {
            cf_err_set(err, CF_ERR_SCHEMA, "Invalid bytes for Decimal field");
            cf_err_detail(err, "\"%.*s\" is not base64 of a non-empty two's complement integer",
                          (int)(n->len > 200 ? 200 : n->len), n->str);
            return CF_ERR_SCHEMA;
        }
        size_t m = minimal_twos(bytes, len, &skip);
        *out = cf_value_bytes(bytes + skip, m);
        free(bytes);
        return CF_OK;
    }
    cf_err_set(err, CF_ERR_SCHEMA,
               "Invalid type for Decimal, underlying representation should be numeric or bytes but was %s",
               json_type_name(n));
    return CF_ERR_SCHEMA;
}

static cf_value *schemaless_key(const jmember *m) { return cf_value_string_n(m->key, m->klen); }

static cf_code tc_value(json_conv *jc, const cf_schema *s, const jnode *n, cf_value **out, cf_err *err) {
    *out = NULL;
    if (!s) { /* schemaless: infer as Kafka does */
        if (!n || n->type == JN_NULL) return CF_OK;
        switch (n->type) {
        case JN_TRUE:
        case JN_FALSE: *out = cf_value_bool(n->type == JN_TRUE); return CF_OK;
        case JN_NUMBER:
            if (n->integral) {
                errno = 0;
                char *end;
                long long v = strtoll(n->str, &end, 10);
                if (errno == ERANGE || *end) {
                    cf_err_set(err, CF_ERR_SCHEMA, "integer %s is out of range for int64", n->str);
                    cf_err_hint(err, "Schemaless JSON integers become int64; send a schema with a Decimal "
                                     "field or a string for larger numbers.");
                    return CF_ERR_SCHEMA;
                }
                *out = cf_value_int64(v);
            } else {
                *out = cf_value_float64(strtod(n->str, NULL));
            }
            return CF_OK;
        case JN_STRING: *out = cf_value_string_n(n->str, n->len); return CF_OK;
        case JN_ARRAY: return tc_array(jc, NULL, n, out, err);
        case JN_OBJECT: {
            cf_value *m = cf_value_map();
            for (size_t i = 0; i < n->len; i++) {
                cf_value *v;
                cf_code rc = tc_value(jc, NULL, n->members[i].val, &v, err);
                if (rc) {
                    cf_err_where_prefix(err, n->members[i].key);
                    cf_value_destroy(m);
                    return rc;
                }
                cf_value_map_put(m, schemaless_key(&n->members[i]), v);
            }
            *out = m;
            return CF_OK;
        }
        default: return CF_OK;
        }
    }

    if (!n || n->type == JN_NULL) {
        if (s->has_default && s->default_value && jc->replace_null) {
            *out = cf_value_clone(s->default_value);
            return CF_OK;
        }
        if (s->optional) return CF_OK;
        cf_err_set(err, CF_ERR_SCHEMA, "Invalid null value for required %s field", upper_type(s->type));
        cf_err_hint(err, "The schema says the field is required (\"optional\": false) and has no default.");
        return CF_ERR_SCHEMA;
    }

    /* logical types (only on their physical type) */
    if (s->name) {
        if (is_logical(s, CF_LOGICAL_DECIMAL, CF_BYTES)) return tc_decimal(s, n, out, err);
        if (is_logical(s, CF_LOGICAL_DATE, CF_INT32) || is_logical(s, CF_LOGICAL_TIME, CF_INT32)) {
            bool is_time = is_logical(s, CF_LOGICAL_TIME, CF_INT32);
            int64_t v = 0;
            if (parse_int(n, INT32_MIN, INT32_MAX, &v) != 0) {
                cf_err_set(err, CF_ERR_SCHEMA, "Invalid type for %s, underlying representation should be integer but was %s",
                           is_time ? "Time" : "Date", json_type_name(n));
                if (n->type == JN_NUMBER) cf_err_detail(err, "%s is not a 32-bit integer", n->str);
                return CF_ERR_SCHEMA;
            }
            if (is_time && (v < 0 || v >= 86400000)) {
                cf_err_set(err, CF_ERR_SCHEMA,
                           "Time values must use number of milliseconds greater than 0 and less than 86400000");
                cf_err_detail(err, "got %" PRId64, v);
                return CF_ERR_SCHEMA;
            }
            *out = cf_value_int32((int32_t)v);
            return CF_OK;
        }
        if (is_logical(s, CF_LOGICAL_TIMESTAMP, CF_INT64)) {
            int64_t v = 0;
            if (parse_int(n, INT64_MIN, INT64_MAX, &v) != 0) {
                cf_err_set(err, CF_ERR_SCHEMA,
                           "Invalid type for Timestamp, underlying representation should be integral but was %s",
                           json_type_name(n));
                if (n->type == JN_NUMBER) cf_err_detail(err, "%s is not a 64-bit integer", n->str);
                return CF_ERR_SCHEMA;
            }
            *out = cf_value_int64(v);
            return CF_OK;
        }
    }

    switch (s->type) {
    case CF_BOOLEAN:
        if (n->type != JN_TRUE && n->type != JN_FALSE) return kind_err(err, s, "true or false", n);
        *out = cf_value_bool(n->type == JN_TRUE);
        return CF_OK;
    case CF_INT8: return tc_int(s, n, INT8_MIN, INT8_MAX, out, err);
    case CF_INT16: return tc_int(s, n, INT16_MIN, INT16_MAX, out, err);
    case CF_INT32: return tc_int(s, n, INT32_MIN, INT32_MAX, out, err);
    case CF_INT64: return tc_int(s, n, INT64_MIN, INT64_MAX, out, err);
    case CF_FLOAT32:
    case CF_FLOAT64: {
        double d;
        if (n->type == JN_NUMBER) {
            d = s->type == CF_FLOAT32 ? (double)strtof(n->str, NULL) : strtod(n->str, NULL);
        } else if (!non_finite_text(n, &d)) {
            return kind_err(err, s, "a JSON number (or \"NaN\", \"Infinity\", \"-Infinity\")", n);
        }
        *out = s->type == CF_FLOAT32 ? cf_value_float32((float)d) : cf_value_float64(d);
        return CF_OK;
    }
    case CF_STRING:
        if (n->type != JN_STRING) return kind_err(err, s, "a JSON string", n);
        *out = cf_value_string_n(n->str, n->len);
        return CF_OK;
    case CF_BYTES: {
        if (n->type != JN_STRING) return kind_err(err, s, "a base64 JSON string", n);
        uint8_t *bytes;
        size_t len;
        if (!json_base64_decode(n->str, n->len, &bytes, &len)) {
            cf_err_set(err, CF_ERR_SCHEMA, "Invalid bytes field");
            cf_err_detail(err, "\"%.*s\" is not valid base64", (int)(n->len > 200 ? 200 : n->len), n->str);
            return CF_ERR_SCHEMA;
        }
        *out = cf_value_bytes_take(bytes, len);
        return CF_OK;
    }
    case CF_ARRAY: {
        if (n->type != JN_ARRAY) return kind_err(err, s, "a JSON array", n);
        return tc_array(jc, s->value_schema, n, out, err);
    }
    case CF_MAP: {
        cf_value *m = cf_value_map();
        if (s->key_schema->type == CF_STRING) {
            if (n->type != JN_OBJECT) {
                cf_value_destroy(m);
                cf_err_set(err, CF_ERR_SCHEMA, "Maps with string fields should be encoded as JSON objects, but found %s",
                           json_type_name(n));
                return CF_ERR_SCHEMA;
            }
            for (size_t i = 0; i < n->len; i++) {
                cf_value *v;
                cf_code rc = tc_value(jc, s->value_schema, n->members[i].val, &v, err);
                if (rc) {
                    cf_err_where_prefix(err, n->members[i].key);
                    cf_value_destroy(m);
                    return rc;
                }
                cf_value_map_put(m, schemaless_key(&n->members[i]), v);
            }
        } else {
            if (n->type != JN_ARRAY) {
                cf_value_destroy(m);
                cf_err_set(err, CF_ERR_SCHEMA,
                           "Maps with non-string fields should be encoded as JSON array of tuples, but found %s",
                           json_type_name(n));
                return CF_ERR_SCHEMA;
            }
            for (size_t i = 0; i < n->len; i++) {
                const jnode *e = n->items[i];
                cf_value *k = NULL, *v = NULL;
                cf_code rc = CF_OK;
                if (e->type != JN_ARRAY) {
                    rc = cf_err_set(err, CF_ERR_SCHEMA, "Found invalid map entry instead of array tuple: %s",
                                    json_type_name(e));
                } else if (e->len != 2) {
                    rc = cf_err_set(err, CF_ERR_SCHEMA, "Found invalid map entry, expected length 2 but found :%zu",
                                    e->len);
                } else {
                    rc = tc_value(jc, s->key_schema, e->items[0], &k, err);
                    if (!rc) rc = tc_value(jc, s->value_schema, e->items[1], &v, err);
                }
                if (rc) {
                    char seg[32];
                    snprintf(seg, sizeof seg, "[%zu]", i);
                    cf_err_where_prefix(err, seg);
                    cf_value_destroy(k);
                    cf_value_destroy(m);
                    return rc;
                }
                cf_value_map_put(m, k, v);
            }
        }
        *out = m;
        return CF_OK;
    }
    case CF_STRUCT: {
        if (n->type != JN_OBJECT) {
            cf_err_set(err, CF_ERR_SCHEMA, "Structs should be encoded as JSON objects, but found %s", json_type_name(n));
            return CF_ERR_SCHEMA;
        }
        cf_value *st = cf_value_struct(cf_schema_ref((cf_schema *)s));
        for (size_t i = 0; i < s->n_fields; i++) {
            const cf_field *f = &s->fields[i];
            const jnode *fv;
            /* fast path: members in schema order (as we and Kafka write them) */
            if (i < n->len && strcmp(n->members[i].key, f->name) == 0) fv = n->members[i].val;
            else fv = json_get(n, f->name);
            cf_value *v;
            cf_code rc = tc_value(jc, f->schema, fv, &v, err);
            if (rc) {
                cf_err_where_prefix(err, f->name);
                cf_value_destroy(st);
                return rc;
            }
            st->u.st.fields[i] = v;
        }
        *out = st;
        return CF_OK;
    }
    }
    return cf_err_set(err, CF_ERR_INTERNAL, "unknown schema type %d", (int)s->type);
}

/* asConnectSchema */
static cf_code tc_schema(json_conv *jc, const jnode *js, cf_schema **out, cf_err *err) {
    *out = NULL;
    if (!js || js->type == JN_NULL) return CF_OK;
    const jnode *tn = json_get(js, "type");
    if (!tn || tn->type != JN_STRING) {
        cf_err_set(err, CF_ERR_SCHEMA, "Schema must contain 'type' field");
        cf_err_hint(err, "Each schema is a JSON object such as {\"type\": \"int32\", \"optional\": false}.");
        return CF_ERR_SCHEMA;
    }
    cf_type t;
    if (!cf_type_parse(tn->str, &t)) {
        cf_err_set(err, CF_ERR_SCHEMA, "Unknown schema type: %s", tn->str);
        cf_err_hint(err, "Known types: boolean, int8, int16, int32, int64, float, double, bytes, string, array, map, struct.");
        return CF_ERR_SCHEMA;
    }
    cf_schema *s = NULL;
    cf_code rc = CF_OK;
    switch (t) {
    case CF_ARRAY: {
        const jnode *items = json_get(js, "items");
        if (!items || items->type == JN_NULL) {
            cf_err_set(err, CF_ERR_SCHEMA, "Array schema did not specify the element type");
            return CF_ERR_SCHEMA;
        }
        cf_schema *elem;
        if ((rc = tc_schema(jc, items, &elem, err))) {
            cf_err_where_prefix(err, "items");
            return rc;
        }
        s = cf_schema_new_array(elem);
        break;
    }
    case CF_MAP: {
        const jnode *kn = json_get(js, "keys"), *vn = json_get(js, "values");
        if (!kn || kn->type == JN_NULL) return cf_err_set(err, CF_ERR_SCHEMA, "Map schema did not specify the key type");
        if (!vn || vn->type == JN_NULL) return cf_err_set(err, CF_ERR_SCHEMA, "Map schema did not specify the value type");
        cf_schema *ks, *vs;
        if ((rc = tc_schema(jc, kn, &ks, err))) {
            cf_err_where_prefix(err, "keys");
            return rc;
        }
        if ((rc = tc_schema(jc, vn, &vs, err))) {
            cf_schema_unref(ks);
            cf_err_where_prefix(err, "values");
            return rc;
        }
        s = cf_schema_new_map(ks, vs);
        break;
    }
    case CF_STRUCT: {
        const jnode *fields = json_get(js, "fields");
        if (!fields || fields->type != JN_ARRAY) {
            cf_err_set(err, CF_ERR_SCHEMA, "Struct schema's \"fields\" argument is not an array.");
            return CF_ERR_SCHEMA;
        }
        s = cf_schema_new_struct();
        for (size_t i = 0; i < fields->len; i++) {
            const jnode *fn = json_get(fields->items[i], "field");
            char seg[32];
            snprintf(seg, sizeof seg, "fields[%zu]", i);
            if (!fn || fn->type != JN_STRING) {
                cf_schema_unref(s);
                cf_err_set(err, CF_ERR_SCHEMA, "Struct schema's field name not specified properly");
                cf_err_where(err, "%s", seg);
                return CF_ERR_SCHEMA;
            }
            cf_schema *fs;
            if ((rc = tc_schema(jc, fields->items[i], &fs, err)) ||
                (rc = cf_schema_add_field(s, fn->str, fs, err))) {
                cf_schema_unref(s);
                cf_err_where_prefix(err, fn->str);
                return rc;
            }
        }
        break;
    }
    default: s = cf_schema_new(t); break;
    }
    const jnode *x = json_get(js, "optional");
    s->optional = x && x->type == JN_TRUE;
    x = json_get(js, "name");
    if (x && x->type == JN_STRING) cf_schema_set_name(s, x->str);
    x = json_get(js, "version");
    if (x && x->type == JN_NUMBER && x->integral) {
        int64_t v;
        if (parse_int(x, INT32_MIN, INT32_MAX, &v) == 0) cf_schema_set_version(s, (int32_t)v);
    }
    x = json_get(js, "doc");
    if (x && x->type == JN_STRING) cf_schema_set_doc(s, x->str);
    x = json_get(js, "parameters");
    if (x && x->type == JN_OBJECT) {
        for (size_t i = 0; i < x->len; i++) {
            if (x->members[i].val->type != JN_STRING) {
                cf_schema_unref(s);
                cf_err_set(err, CF_ERR_SCHEMA, "Schema parameters must have string values.");
                cf_err_where(err, "parameters.%s", x->members[i].key);
                return CF_ERR_SCHEMA;
            }
            cf_schema_set_param(s, x->members[i].key, x->members[i].val->str);
        }
    }
    x = json_get(js, "default");
    if (x) {
        /* a struct default is typed by a copy of the schema: no ref cycle */
        cf_schema *typed = s->type == CF_STRUCT ? schema_copy_nodefault(s) : cf_schema_ref(s);
        cf_value *dv = NULL;
        rc = tc_value(jc, typed, x, &dv, err);
        cf_schema_unref(typed);
        if (rc) {
            cf_schema_unref(s);
            cf_err_where_prefix(err, "default");
            return rc;
        }
        /* Connect: a null default is no default */
        if (dv && (rc = cf_schema_set_default(s, dv, err))) {
            cf_schema_unref(s);
            cf_err_where_prefix(err, "default");
            return rc;
        }
    }
    *out = s;
    return CF_OK;
}

static cf_code json_to_connect(void *state, const char *topic, const char *data, size_t len, cf_schema **schema,
                               cf_value **value, cf_err *err) {
    (void)topic;
    json_conv *jc = state;
    *schema = NULL;
    *value = NULL;
    if (!data) return CF_OK; /* tombstone: SchemaAndValue.NULL */
    cf_arena_reset(jc->arena);
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) i++;
    jnode *root = NULL;
    bool hint_hit = false;
    if (i < len) {
        const cache_ent *last = jc->to_last >= 0 ? &jc->to_cache.ents[jc->to_last] : NULL;
        cf_code rc = json_parse_lazy_hint(jc->arena, data, len, jc->schemas_enable ? "schema" : NULL,
                                          last ? last->key : NULL, last ? last->klen : 0, &hint_hit, &root, err);
        if (rc) {
            if (err) {
                char msg[sizeof err->message];
                snprintf(msg, sizeof msg, "Converting byte[] to Kafka Connect data failed due to serialization error: %s",
                         err->message);
                memcpy(err->message, msg, sizeof msg);
            }
            return rc;
        }
    }
    const jnode *sn = NULL, *pn = root;
    if (jc->schemas_enable) {
        if (!root || root->type != JN_OBJECT || root->len != 2 || !(sn = json_get(root, "schema")) ||
            !(pn = json_get(root, "payload"))) {
            cf_err_set(err, CF_ERR_SCHEMA,
                       "JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields and may not "
                       "contain additional fields. If you are trying to deserialize plain JSON data, set "
                       "schemas.enable=false in your converter configuration.");
            if (!root) cf_err_detail(err, "the message is empty");
            else if (root->type != JN_OBJECT) cf_err_detail(err, "the message is a JSON %s, not an object", json_type_name(root));
            else {
                cf_buf keys = CF_BUF_INIT;
                for (size_t k = 0; k < root->len && k < 10; k++) cf_buf_printf(&keys, "%s\"%s\"", k ? ", " : "", root->members[k].key);
                cf_err_detail(err, "the object has %zu field(s): %s", root->len, keys.data ? keys.data : "");
                cf_buf_free(&keys);
            }
            cf_err_hint(err, "Set %s.converter.schemas.enable=false to read plain JSON.", jc->is_key ? "key" : "value");
            return CF_ERR_SCHEMA;
        }
    }
    cf_schema *s = NULL;
    if (sn && sn->type != JN_NULL && !(sn->type == JN_RAW && sn->str[0] == 'n')) {
        const char *key = data + sn->start;
        size_t klen = sn->end - sn->start;
        uint64_t h = hint_hit ? 0 : hash_bytes(key, klen);
        cache_ent *e = hint_hit ? &jc->to_cache.ents[jc->to_last] : cache_get(&jc->to_cache, key, klen, h);
        if (e) {
            s = cf_schema_ref(e->val);
            if (hint_hit) e->tick = ++jc->to_cache.tick;
            jc->to_last = (int)(e - jc->to_cache.ents);
        } else {
            jnode *tree = (jnode *)sn;
            cf_code rc = sn->type == JN_RAW ? json_parse(jc->arena, key, klen, &tree, err) : CF_OK;
            if (!rc) rc = tc_schema(jc, tree, &s, err);
            if (rc) {
                cf_err_where_prefix(err, "schema");
                return rc;
            }
            jc->to_last = cache_put(&jc->to_cache, key, klen, h, cf_schema_ref(s), 0);
        }
    }
    cf_value *v = NULL;
    cf_code rc = tc_value(jc, s, pn, &v, err);
    if (rc) {
        cf_schema_unref(s);
        return rc;
    }
    *schema = s;
    *value = v;
    return CF_OK;
}

/* ------------------------------------------------------- Connect -> JSON */

static cf_code fc_value(json_conv *jc, cf_buf *b, const cf_schema *s, const cf_value *v, cf_err *err);

static cf_code fc_type_err(cf_err *err, const cf_schema *s, const cf_value *v) {
    cf_err_set(err, CF_ERR_SCHEMA, "Invalid type for %s: %s value", s ? upper_type(s->type) : "unknown schema",
               cf_type_name(v->type));
    cf_err_hint(err, "The value does not match its schema.");
    return CF_ERR_SCHEMA;
}

static bool int_in_range(cf_type t, int64_t x) {
    switch (t) {
    case CF_INT8: return x >= INT8_MIN && x <= INT8_MAX;
    case CF_INT16: return x >= INT16_MIN && x <= INT16_MAX;
    case CF_INT32: return x >= INT32_MIN && x <= INT32_MAX;
    default: return true;
    }
}

/* As BigDecimal.toString() prints it (Jackson's output), unless that is
 * longer than a JSON number may be (JSON_MAX_NUMBER_LEN, Jackson's
 * StreamReadConstraints too): then the unscaled value's trailing zeros move
 * into the exponent (same value, e.g. 1.234E+6789 rather than 6,790 digits),
 * so that what we write can be read back, by us and by Kafka. A value with
 * more significant digits than that is an error, not a number nobody reads. */
static cf_code fc_decimal_numeric(cf_buf *b, const cf_value *v, int32_t scale, cf_err *err) {
    char *digits = cf_decimal_to_string((const uint8_t *)v->u.s.ptr, v->u.s.len, 0);
    size_t start = b->len;
    json_write_bigdecimal(b, digits, scale);
    if (b->len - start > JSON_MAX_NUMBER_LEN) {
        b->len = start;
        b->data[start] = '\0';
        size_t n = strlen(digits), zeros = 0;
        while (n - zeros > 1 && digits[n - 1 - zeros] == '0') zeros++;
        digits[n - zeros] = '\0';
        json_write_bigdecimal(b, digits, (int32_t)((int64_t)scale - (int64_t)zeros));
        /* 10000: the largest exponent shift cf_decimal_from_string reads */
        if (b->len - start > JSON_MAX_NUMBER_LEN || zeros > 10000) {
            b->len = start;
            b->data[start] = '\0';
            cf_err_set(err, CF_ERR_SCHEMA,
                       "Decimal value with %zu significant digits and %zu more zeros is too long for a JSON number",
                       n - zeros - (digits[0] == '-'), zeros);
            cf_err_detail(err, "a JSON number is at most %d characters (Jackson's limit too) and is read with an "
                               "exponent of at most 10000", JSON_MAX_NUMBER_LEN);
            cf_err_hint(err, "Use decimal.format=BASE64 for such values.");
            free(digits);
            return CF_ERR_SCHEMA;
        }
    }
    free(digits);
    return CF_OK;
}

/* asJsonSchema, with the cache */
static cf_code fc_schema_text(json_conv *jc, cf_buf *b, const cf_schema *s, cf_err *err);

static cf_code fc_schema(json_conv *jc, cf_buf *b, const cf_schema *s, cf_err *err) {
    cf_code rc;
    cf_buf_append_str(b, "{\"type\":");
    json_write_string(b, cf_type_name(s->type), strlen(cf_type_name(s->type)));
    switch (s->type) {
    case CF_ARRAY:
        cf_buf_append_str(b, ",\"items\":");
        if ((rc = fc_schema_text(jc, b, s->value_schema, err))) return rc;
        break;
    case CF_MAP:
        cf_buf_append_str(b, ",\"keys\":");
        if ((rc = fc_schema_text(jc, b, s->key_schema, err))) return rc;
        cf_buf_append_str(b, ",\"values\":");
        if ((rc = fc_schema_text(jc, b, s->value_schema, err))) return rc;
        break;
    case CF_STRUCT:
        cf_buf_append_str(b, ",\"fields\":[");
        for (size_t i = 0; i < s->n_fields; i++) {
            if (i) cf_buf_append_byte(b, ',');
            size_t mark = b->len;
            if ((rc = fc_schema_text(jc, b, s->fields[i].schema, err))) {
                cf_err_where_prefix(err, s->fields[i].name);
                return rc;
            }
            /* the field schema object gets "field" appended last */
            if (b->len > mark && b->data[b->len - 1] == '}') {
                b->len--;
                cf_buf_append_str(b, ",\"field\":");
                json_write_string(b, s->fields[i].name, strlen(s->fields[i].name));
                cf_buf_append_byte(b, '}');
            }
        }
        cf_buf_append_byte(b, ']');
        break;
    default: break;
    }
    cf_buf_append_str(b, s->optional ? ",\"optional\":true" : ",\"optional\":false");
    if (s->name) {
        cf_buf_append_str(b, ",\"name\":");
        json_write_string(b, s->name, strlen(s->name));
    }
    if (s->has_version) cf_buf_printf(b, ",\"version\":%d", s->version);
    if (s->doc) {
        cf_buf_append_str(b, ",\"doc\":");
        json_write_string(b, s->doc, strlen(s->doc));
    }
    if (s->n_params) {
        cf_buf_append_str(b, ",\"parameters\":{");
        for (size_t i = 0; i < s->n_params; i++) {
            if (i) cf_buf_append_byte(b, ',');
            json_write_string(b, s->params[i].key, strlen(s->params[i].key));
            cf_buf_append_byte(b, ':');
            json_write_string(b, s->params[i].value, strlen(s->params[i].value));
        }
        cf_buf_append_byte(b, '}');
    }
    if (s->has_default && s->default_value) {
        cf_buf_append_str(b, ",\"default\":");
        if ((rc = fc_value(jc, b, s, s->default_value, err))) {
            cf_err_where_prefix(err, "default");
            return rc;
        }
    }
    cf_buf_append_byte(b, '}');
    return CF_OK;
}

static cf_code fc_schema_text(json_conv *jc, cf_buf *b, const cf_schema *s, cf_err *err) {
    if (!s) {
        cf_err_set(err, CF_ERR_SCHEMA, "incomplete schema: an array, map or struct field has no schema");
        return CF_ERR_SCHEMA;
    }
    const void *key = &s;
    uint64_t h = hash_bytes(key, sizeof s);
    cache_ent *e = cache_get(&jc->from_cache, key, sizeof s, h);
    if (e) {
        cf_buf_append(b, e->val, e->vlen);
        return CF_OK;
    }
    size_t mark = b->len;
    cf_code rc = fc_schema(jc, b, s, err);
    if (rc) return rc;
    if (jc->from_cache.cap > 0) {
        cf_schema *ref = cf_schema_ref((cf_schema *)s);
        cache_put(&jc->from_cache, &ref, sizeof ref, h, cf_xmemdup(b->data + mark, b->len - mark), b->len - mark);
    }
    return CF_OK;
}

static void write_map_key_text(cf_buf *b, const cf_value *k) {
    json_write_string(b, k->u.s.ptr, k->u.s.len);
}

static cf_code fc_value(json_conv *jc, cf_buf *b, const cf_schema *s, const cf_value *v, cf_err *err) {
    if (!v) {
        if (!s) {
            cf_buf_append_str(b, "null");
            return CF_OK;
        }
        if (s->has_default && s->default_value && jc->replace_null) return fc_value(jc, b, s, s->default_value, err);
        if (s->optional) {
            cf_buf_append_str(b, "null");
            return CF_OK;
        }
        cf_err_set(err, CF_ERR_SCHEMA, "Conversion error: null value for field that is required and has no default value");
        cf_err_hint(err, "Make the field optional, give it a default, or set a value.");
        return CF_ERR_SCHEMA;
    }
    if (s && v->type != s->type) return fc_type_err(err, s, v);
    if (s && is_logical(s, CF_LOGICAL_DECIMAL, CF_BYTES)) {
        int32_t scale;
        if (!cf_schema_decimal_scale(s, &scale)) {
            cf_err_set(err, CF_ERR_SCHEMA, "Invalid Decimal schema: scale parameter not found.");
            return CF_ERR_SCHEMA;
        }
        if (jc->decimal_numeric) {
            return fc_decimal_numeric(b, v, scale, err);
        } else {
            size_t skip = 0, m = v->u.s.len ? minimal_twos((const uint8_t *)v->u.s.ptr, v->u.s.len, &skip) : 0;
            cf_buf_append_byte(b, '"');
            if (m) json_write_base64(b, (const uint8_t *)v->u.s.ptr + skip, m);
            else json_write_base64(b, (const uint8_t *)"", 1); /* zero */
            cf_buf_append_byte(b, '"');
        }
        return CF_OK;
    }
    switch (v->type) {
    case CF_INT8:
    case CF_INT16:
    case CF_INT32:
    case CF_INT64:
        if (!int_in_range(v->type, v->u.i)) {
            cf_err_set(err, CF_ERR_SCHEMA, "value %" PRId64 " is out of range for %s", v->u.i, cf_type_name(v->type));
            return CF_ERR_SCHEMA;
        }
        cf_buf_printf(b, "%" PRId64, v->u.i);
        return CF_OK;
    case CF_FLOAT32: json_write_float(b, (float)v->u.f, true); return CF_OK;
    case CF_FLOAT64: json_write_double(b, v->u.f, true); return CF_OK;
    case CF_BOOLEAN: cf_buf_append_str(b, v->u.b ? "true" : "false"); return CF_OK;
    case CF_STRING: json_write_string(b, v->u.s.ptr, v->u.s.len); return CF_OK;
    case CF_BYTES:
        cf_buf_append_byte(b, '"');
        json_write_base64(b, (const uint8_t *)v->u.s.ptr, v->u.s.len);
        cf_buf_append_byte(b, '"');
        return CF_OK;
    case CF_ARRAY:
        cf_buf_append_byte(b, '[');
        for (size_t i = 0; i < v->u.arr.len; i++) {
            if (i) cf_buf_append_byte(b, ',');
            cf_code rc = fc_value(jc, b, s ? s->value_schema : NULL, v->u.arr.items[i], err);
            if (rc) {
                char seg[32];
                snprintf(seg, sizeof seg, "[%zu]", i);
                cf_err_where_prefix(err, seg);
                return rc;
            }
        }
        cf_buf_append_byte(b, ']');
        return CF_OK;
    case CF_MAP: {
        bool object_mode;
        if (s && (!s->key_schema || !s->value_schema)) {
            cf_err_set(err, CF_ERR_SCHEMA, "incomplete schema: a map schema without key or value schema");
            return CF_ERR_SCHEMA;
        }
        if (s) {
            object_mode = s->key_schema->type == CF_STRING;
        } else {
            object_mode = true;
            for (size_t i = 0; i < v->u.map.len && object_mode; i++)
                if (!v->u.map.keys[i] || v->u.map.keys[i]->type != CF_STRING) object_mode = false;
        }
        cf_buf_append_byte(b, object_mode ? '{' : '[');
        for (size_t i = 0; i < v->u.map.len; i++) {
            if (i) cf_buf_append_byte(b, ',');
            const cf_value *k = v->u.map.keys[i];
            cf_code rc;
            if (object_mode) {
                if (!k) {
                    cf_err_set(err, CF_ERR_SCHEMA, "null key in a map with string keys");
                    rc = CF_ERR_SCHEMA;
                } else if (k->type != CF_STRING) {
                    rc = fc_type_err(err, s->key_schema, k);
                } else {
                    write_map_key_text(b, k);
                    cf_buf_append_byte(b, ':');
                    rc = fc_value(jc, b, s ? s->value_schema : NULL, v->u.map.vals[i], err);
                }
            } else {
                cf_buf_append_byte(b, '[');
                rc = fc_value(jc, b, s ? s->key_schema : NULL, k, err);
                cf_buf_append_byte(b, ',');
                if (!rc) rc = fc_value(jc, b, s ? s->value_schema : NULL, v->u.map.vals[i], err);
                cf_buf_append_byte(b, ']');
            }
            if (rc) {
                char seg[32];
                snprintf(seg, sizeof seg, "[%zu]", i);
                cf_err_where_prefix(err, seg);
                return rc;
            }
        }
        cf_buf_append_byte(b, object_mode ? '}' : ']');
        return CF_OK;
    }
    case CF_STRUCT: {
        const cf_schema *vs = v->u.st.schema;
        if (!s || (vs != s && !cf_schema_equal(vs, s))) {
            cf_err_set(err, CF_ERR_SCHEMA, "Mismatching schema.");
            cf_err_detail(err, s ? "the struct value's schema%s%s differs from the schema given for it"
                                 : "a struct value needs its schema (schemaless data cannot hold structs)%s%s",
                          vs->name ? " " : "", vs->name ? vs->name : "");
            return CF_ERR_SCHEMA;
        }
        cf_buf_append_byte(b, '{');
        for (size_t i = 0; i < s->n_fields; i++) {
            if (i) cf_buf_append_byte(b, ',');
            json_write_string(b, s->fields[i].name, strlen(s->fields[i].name));
            cf_buf_append_byte(b, ':');
            cf_code rc = fc_value(jc, b, s->fields[i].schema, v->u.st.fields[i], err);
            if (rc) {
                cf_err_where_prefix(err, s->fields[i].name);
                return rc;
            }
        }
        cf_buf_append_byte(b, '}');
        return CF_OK;
    }
    }
    return cf_err_set(err, CF_ERR_INTERNAL, "unknown value type %d", (int)v->type);
}

/* The JSON text of schema + value appended to b (*is_null: a tombstone). */
static cf_code json_from_connect_buf(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                     cf_buf *b, bool *is_null, cf_err *err) {
    (void)topic;
    json_conv *jc = state;
    *is_null = !schema && !value;
    if (*is_null) return CF_OK; /* tombstone */
    cf_code rc;
    if (jc->schemas_enable) {
        cf_buf_append_str(b, "{\"schema\":");
        if (schema) {
            if ((rc = fc_schema_text(jc, b, schema, err))) {
                cf_err_where_prefix(err, "schema");
                return rc;
            }
        } else {
            cf_buf_append_str(b, "null");
        }
        cf_buf_append_str(b, ",\"payload\":");
        if ((rc = fc_value(jc, b, schema, value, err))) return rc;
        cf_buf_append_byte(b, '}');
    } else if ((rc = fc_value(jc, b, schema, value, err))) {
        return rc;
    }
    return CF_OK;
}

static cf_code json_from_connect(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                 char **data, size_t *len, cf_err *err) {
    json_conv *jc = state;
    *data = NULL;
    *len = 0;
    cf_buf_reset(&jc->out);
    bool is_null = false;
    cf_code rc = json_from_connect_buf(state, topic, schema, value, &jc->out, &is_null, err);
    if (rc || is_null) return rc;
    *data = cf_xmemdup(jc->out.data, jc->out.len + 1);
    *len = jc->out.len;
    return CF_OK;
}

static const char *const json_aliases[] = {"org.apache.kafka.connect.json.JsonConverter", "JsonConverter", NULL};

const cf_converter_plugin cf_json_converter_plugin = {
    .name = "json",
    .aliases = json_aliases,
    .config = &cf_json_converter_table,
    .create = json_create,
    .from_connect = json_from_connect,
    .to_connect = json_to_connect,
    .destroy = json_destroy,
    .from_connect_buf = json_from_connect_buf,
};
