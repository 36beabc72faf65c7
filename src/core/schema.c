/*
 * schema.c - Connect schemas and values (see include/cdcflow/schema.h).
 *
 * The rules follow org.apache.kafka.connect.data.ConnectSchema: a null value
 * is valid only for an optional schema or one with a default; struct values
 * must carry a schema equal to the expected one; logical types are checked
 * on their physical representation.
 */
#include "cdcflow/schema.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"

static const char *type_names[CF_TYPE_COUNT] = {"int8",    "int16",   "int32",  "int64",
                                                "float",   "double",  "boolean", "string",
                                                "bytes",   "array",   "map",    "struct"};

const char *cf_type_name(cf_type t) {
    if ((unsigned)t >= CF_TYPE_COUNT) return "?";
    return type_names[t];
}

bool cf_type_parse(const char *name, cf_type *out) {
    if (!name) return false;
    for (int i = 0; i < CF_TYPE_COUNT; i++) {
        if (strcmp(name, type_names[i]) == 0) {
            *out = (cf_type)i;
            return true;
        }
    }
    return false;
}

bool cf_type_is_primitive(cf_type t) { return t < CF_ARRAY; }

/* ---------------- schemas ---------------- */

cf_schema *cf_schema_new(cf_type type) {
    cf_schema *s = cf_xcalloc(1, sizeof *s);
    s->type = type;
    s->refcount = 1;
    return s;
}

cf_schema *cf_schema_primitive(cf_type type, bool optional) {
    cf_schema *s = cf_schema_new(type);
    s->optional = optional;
    return s;
}

cf_schema *cf_schema_new_array(cf_schema *elem) {
    cf_schema *s = cf_schema_new(CF_ARRAY);
    s->value_schema = elem;
    return s;
}

cf_schema *cf_schema_new_map(cf_schema *key, cf_schema *value) {
    cf_schema *s = cf_schema_new(CF_MAP);
    s->key_schema = key;
    s->value_schema = value;
    return s;
}

cf_schema *cf_schema_new_struct(void) { return cf_schema_new(CF_STRUCT); }

void cf_schema_set_optional(cf_schema *s, bool optional) { s->optional = optional; }

static void replace_str(char **dst, const char *src) {
    free(*dst);
    *dst = src ? cf_xstrdup(src) : NULL;
}

void cf_schema_set_name(cf_schema *s, const char *name) { replace_str(&s->name, name); }
void cf_schema_set_doc(cf_schema *s, const char *doc) { replace_str(&s->doc, doc); }
void cf_schema_set_version(cf_schema *s, int32_t version) {
    s->has_version = true;
    s->version = version;
}

void cf_schema_set_param(cf_schema *s, const char *key, const char *value) {
    for (size_t i = 0; i < s->n_params; i++) {
        if (strcmp(s->params[i].key, key) == 0) {
            replace_str(&s->params[i].value, value);
            return;
        }
    }
    s->params = cf_xrealloc(s->params, (s->n_params + 1) * sizeof *s->params);
    s->params[s->n_params].key = cf_xstrdup(key);
    s->params[s->n_params].value = cf_xstrdup(value ? value : "");
    s->n_params++;
}

cf_code cf_schema_set_default(cf_schema *s, cf_value *v, cf_err *err) {
    /* Validate as if optional-with-default did not exist yet: a null default
     * is only allowed on an optional schema. */
    bool had = s->has_default;
    s->has_default = false;
    cf_code rc = cf_value_validate(s, v, err);
    if (rc != CF_OK) {
        s->has_default = had;
        cf_value_destroy(v);
        if (err) cf_err_set(err, rc, "invalid default value for schema: %s", err->message);
        return rc;
    }
    cf_value_destroy(s->default_value);
    s->default_value = v;
    s->has_default = true;
    return CF_OK;
}

cf_code cf_schema_add_field(cf_schema *s, const char *name, cf_schema *field_schema, cf_err *err) {
    if (s->type != CF_STRUCT) {
        cf_schema_unref(field_schema);
        return cf_err_set(err, CF_ERR_INVALID, "cannot add field \"%s\" to a %s schema", name,
                          cf_type_name(s->type));
    }
    for (size_t i = 0; i < s->n_fields; i++) {
        if (strcmp(s->fields[i].name, name) == 0) {
            cf_schema_unref(field_schema);
            cf_err_set(err, CF_ERR_SCHEMA, "duplicate field name \"%s\" in struct schema", name);
            cf_err_hint(err, "Field names in a struct must be unique.");
            return CF_ERR_SCHEMA;
        }
    }
    s->fields = cf_xrealloc(s->fields, (s->n_fields + 1) * sizeof *s->fields);
    s->fields[s->n_fields].name = cf_xstrdup(name);
    s->fields[s->n_fields].index = s->n_fields;
    s->fields[s->n_fields].schema = field_schema;
    s->n_fields++;
    return CF_OK;
}

cf_schema *cf_schema_decimal(int32_t scale) {
    cf_schema *s = cf_schema_new(CF_BYTES);
    cf_schema_set_name(s, CF_LOGICAL_DECIMAL);
    cf_schema_set_version(s, 1);
    char buf[16];
    snprintf(buf, sizeof buf, "%d", scale);
    cf_schema_set_param(s, CF_DECIMAL_SCALE_PARAM, buf);
    return s;
}

static cf_schema *logical(cf_type t, const char *name) {
    cf_schema *s = cf_schema_new(t);
    cf_schema_set_name(s, name);
    cf_schema_set_version(s, 1);
    return s;
}

cf_schema *cf_schema_date(void) { return logical(CF_INT32, CF_LOGICAL_DATE); }
cf_schema *cf_schema_time(void) { return logical(CF_INT32, CF_LOGICAL_TIME); }
cf_schema *cf_schema_timestamp(void) { return logical(CF_INT64, CF_LOGICAL_TIMESTAMP); }

cf_schema *cf_schema_ref(cf_schema *s) {
    if (s) atomic_fetch_add_explicit((_Atomic int *)&s->refcount, 1, memory_order_relaxed);
    return s;
}

void cf_schema_unref(cf_schema *s) {
    if (!s) return;
    if (atomic_fetch_sub_explicit((_Atomic int *)&s->refcount, 1, memory_order_acq_rel) != 1) return;
    free(s->name);
    free(s->doc);
    cf_value_destroy(s->default_value);
    for (size_t i = 0; i < s->n_params; i++) {
        free(s->params[i].key);
        free(s->params[i].value);
    }
    free(s->params);
    cf_schema_unref(s->key_schema);
    cf_schema_unref(s->value_schema);
    for (size_t i = 0; i < s->n_fields; i++) {
        free(s->fields[i].name);
        cf_schema_unref(s->fields[i].schema);
    }
    free(s->fields);
    free(s);
}

const char *cf_schema_param(const cf_schema *s, const char *key) {
    if (!s) return NULL;
    for (size_t i = 0; i < s->n_params; i++)
        if (strcmp(s->params[i].key, key) == 0) return s->params[i].value;
    return NULL;
}

const cf_field *cf_schema_field(const cf_schema *s, const char *name) {
    if (!s || s->type != CF_STRUCT) return NULL;
    for (size_t i = 0; i < s->n_fields; i++)
        if (strcmp(s->fields[i].name, name) == 0) return &s->fields[i];
    return NULL;
}

bool cf_schema_is_logical(const cf_schema *s, const char *logical_name) {
    return s && s->name && strcmp(s->name, logical_name) == 0;
}

bool cf_schema_decimal_scale(const cf_schema *s, int32_t *scale) {
    if (!s || s->type != CF_BYTES || !cf_schema_is_logical(s, CF_LOGICAL_DECIMAL)) return false;
    const char *p = cf_schema_param(s, CF_DECIMAL_SCALE_PARAM);
    if (!p || !*p) return false;
    char *end;
    long v = strtol(p, &end, 10);
    if (*end || v < INT32_MIN || v > INT32_MAX) return false;
    *scale = (int32_t)v;
    return true;
}

static bool str_eq(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

bool cf_schema_equal(const cf_schema *a, const cf_schema *b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (a->type != b->type || a->optional != b->optional) return false;
    if (!str_eq(a->name, b->name) || !str_eq(a->doc, b->doc)) return false;
    if (a->has_version != b->has_version || (a->has_version && a->version != b->version)) return false;
    if (a->has_default != b->has_default) return false;
    if (a->has_default && !cf_value_equal(a->default_value, b->default_value)) return false;
    if (a->n_params != b->n_params) return false;
    for (size_t i = 0; i < a->n_params; i++) /* Connect compares params as a map */
        if (!str_eq(a->params[i].value, cf_schema_param(b, a->params[i].key))) return false;
    if (!cf_schema_equal(a->key_schema, b->key_schema)) return false;
    if (!cf_schema_equal(a->value_schema, b->value_schema)) return false;
    if (a->n_fields != b->n_fields) return false;
    for (size_t i = 0; i < a->n_fields; i++) {
        if (strcmp(a->fields[i].name, b->fields[i].name) != 0) return false;
        if (!cf_schema_equal(a->fields[i].schema, b->fields[i].schema)) return false;
    }
    return true;
}

/* ---------------- values ---------------- */

static cf_value *value_new(cf_type t) {
    cf_value *v = cf_xcalloc(1, sizeof *v);
    v->type = t;
    return v;
}

#define INT_CTOR(fn, T, CT)            \
    cf_value *fn(CT x) {               \
        cf_value *v = value_new(T);    \
        v->u.i = x;                    \
        return v;                      \
    }
INT_CTOR(cf_value_int8, CF_INT8, int8_t)
INT_CTOR(cf_value_int16, CF_INT16, int16_t)
INT_CTOR(cf_value_int32, CF_INT32, int32_t)
INT_CTOR(cf_value_int64, CF_INT64, int64_t)

cf_value *cf_value_float32(float x) {
    cf_value *v = value_new(CF_FLOAT32);
    v->u.f = x;
    return v;
}

cf_value *cf_value_float64(double x) {
    cf_value *v = value_new(CF_FLOAT64);
    v->u.f = x;
    return v;
}

cf_value *cf_value_bool(bool x) {
    cf_value *v = value_new(CF_BOOLEAN);
    v->u.b = x;
    return v;
}

/* One allocation for the value and its text: strings and byte strings are
 * the most common values (every CSV field, every JSON string). */
static cf_value *inline_text(cf_type t, const void *p, size_t len) {
    cf_value *v = cf_xmalloc(sizeof *v + len + 1);
    memset(v, 0, sizeof *v);
    v->type = t;
    v->flags = CF_VALUE_INLINE;
    v->u.s.ptr = (char *)(v + 1);
    if (len) memcpy(v->u.s.ptr, p, len);
    v->u.s.ptr[len] = '\0';
    v->u.s.len = len;
    return v;
}

cf_value *cf_value_string_n(const char *s, size_t len) { return inline_text(CF_STRING, s, len); }

cf_value *cf_value_string(const char *s) { return cf_value_string_n(s, strlen(s)); }

cf_value *cf_value_string_take(char *s, size_t len) {
    cf_value *v = value_new(CF_STRING);
    v->u.s.ptr = s;
    v->u.s.len = len;
    return v;
}

cf_value *cf_value_bytes(const void *p, size_t len) { return inline_text(CF_BYTES, p, len); }

cf_value *cf_value_bytes_take(void *p, size_t len) {
    cf_value *v = value_new(CF_BYTES);
    v->u.s.ptr = p;
    v->u.s.len = len;
    return v;
}

cf_value *cf_value_array(void) { return value_new(CF_ARRAY); }

void cf_value_array_push(cf_value *arr, cf_value *item) {
    if (arr->u.arr.len == arr->u.arr.cap) {
        arr->u.arr.cap = arr->u.arr.cap ? arr->u.arr.cap * 2 : 4;
        arr->u.arr.items = cf_xrealloc(arr->u.arr.items, arr->u.arr.cap * sizeof(cf_value *));
    }
    arr->u.arr.items[arr->u.arr.len++] = item;
}

/* A map starts with MAP_INLINE entries in the value's own allocation (keys
 * then values), one malloc for the small maps that source partitions and
 * offsets are; it grows into one separate block (keys, then values). */
#define MAP_INLINE 4

cf_value *cf_value_map(void) {
    cf_value *v = cf_xmalloc(sizeof *v + 2 * MAP_INLINE * sizeof(cf_value *));
    memset(v, 0, sizeof *v);
    v->type = CF_MAP;
    v->flags = CF_VALUE_INLINE;
    v->u.map.keys = (cf_value **)(v + 1);
    v->u.map.vals = v->u.map.keys + MAP_INLINE;
    v->u.map.cap = MAP_INLINE;
    return v;
}

void cf_value_map_put(cf_value *map, cf_value *key, cf_value *val) {
    if (map->u.map.len == map->u.map.cap) {
        size_t cap = map->u.map.cap * 2, len = map->u.map.len;
        cf_value **block = cf_xmalloc(2 * cap * sizeof(cf_value *));
        memcpy(block, map->u.map.keys, len * sizeof(cf_value *));
        memcpy(block + cap, map->u.map.vals, len * sizeof(cf_value *));
        if (!(map->flags & CF_VALUE_INLINE)) free(map->u.map.keys);
        map->flags &= (uint8_t)~CF_VALUE_INLINE;
        map->u.map.keys = block;
        map->u.map.vals = block + cap;
        map->u.map.cap = cap;
    }
    map->u.map.keys[map->u.map.len] = key;
    map->u.map.vals[map->u.map.len] = val;
    map->u.map.len++;
}

/* A map of cf_value_map_n: the map, then its key and value slots, then
 * room for `room` entries' keys and values as values of their own
 * (CF_VALUE_EMBEDDED, freed with the map). */
typedef struct slot_map {
    cf_value v; /* first: a slot_map is a cf_value */
    uint32_t room, used;
} slot_map;
#define VALUE_SLOTS 0x80 /* a slot_map (internal flag) */

cf_value *cf_value_map_n(size_t n) {
    size_t ptrs = n ? n : 1;
    slot_map *m = cf_xmalloc(sizeof *m + 2 * ptrs * sizeof(cf_value *) + 2 * n * sizeof(cf_value));
    memset(m, 0, sizeof *m);
    m->room = (uint32_t)n;
    cf_value *v = &m->v;
    v->type = CF_MAP;
    v->flags = CF_VALUE_INLINE | VALUE_SLOTS;
    v->u.map.keys = (cf_value **)(m + 1);
    v->u.map.vals = v->u.map.keys + ptrs;
    v->u.map.cap = ptrs;
    return v;
}

/* The next free entry's key and value slots of a slot map, or false. */
static bool take_slots(cf_value *map, cf_value **k, cf_value **val) {
    if (!(map->flags & VALUE_SLOTS)) return false;
    slot_map *m = (slot_map *)map;
    if (m->used == m->room) return false;
    /* the slots follow the inline key/value pointers (room of each) */
    cf_value *slots = (cf_value *)((cf_value **)(m + 1) + 2 * (m->room ? m->room : 1));
    *k = &slots[2 * m->used];
    *val = &slots[2 * m->used + 1];
    m->used++;
    memset(*k, 0, 2 * sizeof(cf_value));
    return true;
}

/* A key slot holding the literal key (not copied; never written through). */
static void lit_key(cf_value *k, const char *key) {
    k->type = CF_STRING;
    k->flags = CF_VALUE_EMBEDDED | CF_VALUE_LITERAL;
    k->u.s.ptr = (char *)key;
    k->u.s.len = strlen(key);
}

static void put_lit_scalar(cf_value *map, const char *key, cf_value x) {
    cf_value *k, *val;
    if (!take_slots(map, &k, &val)) {
        cf_value *c = value_new(x.type);
        c->u = x.u;
        cf_value_map_put(map, cf_value_string(key), c);
        return;
    }
    lit_key(k, key);
    val->type = x.type;
    val->flags = CF_VALUE_EMBEDDED;
    val->u = x.u;
    cf_value_map_put(map, k, val);
}

void cf_value_map_put_lit_long(cf_value *map, const char *key, int64_t x) {
    put_lit_scalar(map, key, (cf_value){.type = CF_INT64, .u.i = x});
}

void cf_value_map_put_lit_bool(cf_value *map, const char *key, bool x) {
    put_lit_scalar(map, key, (cf_value){.type = CF_BOOLEAN, .u.b = x});
}

void cf_value_map_put_lit(cf_value *map, const char *key, cf_value *val) {
    cf_value *k, *unused;
    if (!take_slots(map, &k, &unused)) {
        cf_value_map_put(map, cf_value_string(key), val);
        return;
    }
    lit_key(k, key);
    cf_value_map_put(map, k, val);
}

cf_value *cf_value_map_get_str(const cf_value *map, const char *key) {
    if (!map || map->type != CF_MAP) return NULL;
    for (size_t i = map->u.map.len; i-- > 0;) { /* last put wins */
        const cf_value *k = map->u.map.keys[i];
        if (k && k->type == CF_STRING && strcmp(k->u.s.ptr, key) == 0) return map->u.map.vals[i];
    }
    return NULL;
}

/* The field slots follow the value in one allocation (the field count of a
 * struct never changes). */
cf_value *cf_value_struct(cf_schema *schema) {
    size_t n = schema->n_fields;
    cf_value *v = cf_xcalloc(1, sizeof *v + n * sizeof(cf_value *));
    v->type = CF_STRUCT;
    v->u.st.schema = schema;
    v->u.st.fields = (cf_value **)(v + 1);
    return v;
}

cf_code cf_value_struct_set(cf_value *st, const char *field, cf_value *v, cf_err *err) {
    const cf_field *f = cf_schema_field(st->u.st.schema, field);
    if (!f) {
        cf_value_destroy(v);
        cf_err_set(err, CF_ERR_SCHEMA, "struct has no field \"%s\"", field);
        cf_err_where(err, "%s", field);
        return CF_ERR_SCHEMA;
    }
    cf_value_struct_set_index(st, f->index, v);
    return CF_OK;
}

void cf_value_struct_set_index(cf_value *st, size_t index, cf_value *v) {
    cf_value_destroy(st->u.st.fields[index]);
    st->u.st.fields[index] = v;
}

cf_value *cf_value_struct_get(const cf_value *st, const char *field) {
    if (!st || st->type != CF_STRUCT) return NULL;
    const cf_field *f = cf_schema_field(st->u.st.schema, field);
    return f ? st->u.st.fields[f->index] : NULL;
}

cf_value *cf_value_ref(cf_value *v) {
    if (!v) return NULL;
    if (v->flags & CF_VALUE_EMBEDDED) return cf_value_clone(v); /* its memory is its map's */
    _Atomic uint16_t *refs = (_Atomic uint16_t *)&v->refs;
    uint16_t r = atomic_load_explicit(refs, memory_order_relaxed);
    do {
        if (r == UINT16_MAX) return cf_value_clone(v); /* the count is full: a copy is as good */
    } while (!atomic_compare_exchange_weak_explicit(refs, &r, (uint16_t)(r + 1), memory_order_relaxed,
                                                    memory_order_relaxed));
    return v;
}

void cf_value_destroy(cf_value *v) {
    if (!v || (v->flags & CF_VALUE_EMBEDDED)) return; /* its map frees it */
    /* shared: drop one owner unless we are the last (a plain decrement
     * could not tell the last one from a race between two) */
    _Atomic uint16_t *refs = (_Atomic uint16_t *)&v->refs;
    uint16_t r = atomic_load_explicit(refs, memory_order_acquire);
    while (r)
        if (atomic_compare_exchange_weak_explicit(refs, &r, (uint16_t)(r - 1), memory_order_acq_rel,
                                                  memory_order_acquire))
            return;
    switch (v->type) {
    case CF_STRING:
    case CF_BYTES:
        if (!(v->flags & (CF_VALUE_INLINE | CF_VALUE_LITERAL))) free(v->u.s.ptr);
        break;
    case CF_ARRAY:
        for (size_t i = 0; i < v->u.arr.len; i++) cf_value_destroy(v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case CF_MAP:
        for (size_t i = 0; i < v->u.map.len; i++) {
            cf_value_destroy(v->u.map.keys[i]);
            cf_value_destroy(v->u.map.vals[i]);
        }
        if (!(v->flags & CF_VALUE_INLINE)) free(v->u.map.keys);
        break;
    case CF_STRUCT:
        for (size_t i = 0; i < v->u.st.schema->n_fields; i++) cf_value_destroy(v->u.st.fields[i]);
        cf_schema_unref(v->u.st.schema); /* fields live in the value's allocation */
        break;
    default: break;
    }
    free(v);
}

cf_value *cf_value_clone(const cf_value *v) {
    if (!v) return NULL;
    switch (v->type) {
    case CF_STRING: return cf_value_string_n(v->u.s.ptr, v->u.s.len);
    case CF_BYTES: return cf_value_bytes(v->u.s.ptr, v->u.s.len);
    case CF_ARRAY: {
        cf_value *c = cf_value_array();
        for (size_t i = 0; i < v->u.arr.len; i++) cf_value_array_push(c, cf_value_clone(v->u.arr.items[i]));
        return c;
    }
    case CF_MAP: {
        cf_value *c = cf_value_map();
        for (size_t i = 0; i < v->u.map.len; i++)
            cf_value_map_put(c, cf_value_clone(v->u.map.keys[i]), cf_value_clone(v->u.map.vals[i]));
        return c;
    }
    case CF_STRUCT: {
        cf_value *c = cf_value_struct(cf_schema_ref(v->u.st.schema));
        for (size_t i = 0; i < v->u.st.schema->n_fields; i++) c->u.st.fields[i] = cf_value_clone(v->u.st.fields[i]);
        return c;
    }
    default: {
        cf_value *c = value_new(v->type);
        c->u = v->u;
        return c;
    }
    }
}

bool cf_value_equal(const cf_value *a, const cf_value *b) {
    if (a == b) return true;
    if (!a || !b || a->type != b->type) return false;
    switch (a->type) {
    case CF_INT8:
    case CF_INT16:
    case CF_INT32:
    case CF_INT64: return a->u.i == b->u.i;
    case CF_FLOAT32:
    case CF_FLOAT64: return a->u.f == b->u.f || (isnan(a->u.f) && isnan(b->u.f));
    case CF_BOOLEAN: return a->u.b == b->u.b;
    case CF_STRING:
    case CF_BYTES: return a->u.s.len == b->u.s.len && memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len) == 0;
    case CF_ARRAY:
        if (a->u.arr.len != b->u.arr.len) return false;
        for (size_t i = 0; i < a->u.arr.len; i++)
            if (!cf_value_equal(a->u.arr.items[i], b->u.arr.items[i])) return false;
        return true;
    case CF_MAP:
        if (a->u.map.len != b->u.map.len) return false;
        /* maps compare as maps: every key of a has an equal value in b */
        for (size_t i = 0; i < a->u.map.len; i++) {
            bool found = false;
            for (size_t j = 0; j < b->u.map.len && !found; j++)
                if (cf_value_equal(a->u.map.keys[i], b->u.map.keys[j]))
                    found = cf_value_equal(a->u.map.vals[i], b->u.map.vals[j]) ? true : false;
            if (!found) return false;
        }
        return true;
    case CF_STRUCT:
        if (!cf_schema_equal(a->u.st.schema, b->u.st.schema)) return false;
        for (size_t i = 0; i < a->u.st.schema->n_fields; i++)
            if (!cf_value_equal(a->u.st.fields[i], b->u.st.fields[i])) return false;
        return true;
    }
    return false;
}

/* ---------------- validation ---------------- */

static cf_code mismatch(cf_err *err, const cf_schema *s, const cf_value *v) {
    cf_err_set(err, CF_ERR_SCHEMA, "invalid %s value: expected %s%s%s", v ? cf_type_name(v->type) : "null",
               cf_type_name(s->type), s->name ? " " : "", s->name ? s->name : "");
    return CF_ERR_SCHEMA;
}

cf_code cf_value_validate(const cf_schema *s, const cf_value *v, cf_err *err) {
    if (!s) return cf_err_set(err, CF_ERR_SCHEMA, "no schema to validate against");
    if (!v) {
        if (s->optional || s->has_default) return CF_OK;
        cf_err_set(err, CF_ERR_SCHEMA, "invalid null value for a required %s field", cf_type_name(s->type));
        cf_err_hint(err, "Make the field optional, give it a default, or send a value.");
        return CF_ERR_SCHEMA;
    }
    if (v->type != s->type) return mismatch(err, s, v);
    switch (s->type) {
    case CF_INT8:
        if (v->u.i < INT8_MIN || v->u.i > INT8_MAX) goto range;
        break;
    case CF_INT16:
        if (v->u.i < INT16_MIN || v->u.i > INT16_MAX) goto range;
        break;
    case CF_INT32:
        if (v->u.i < INT32_MIN || v->u.i > INT32_MAX) goto range;
        if (cf_schema_is_logical(s, CF_LOGICAL_TIME) && (v->u.i < 0 || v->u.i >= 86400000)) {
            cf_err_set(err, CF_ERR_SCHEMA, "Time value %lld ms is outside one day", (long long)v->u.i);
            return CF_ERR_SCHEMA;
        }
        break;
    case CF_BYTES: {
        int32_t scale;
        if (cf_schema_is_logical(s, CF_LOGICAL_DECIMAL) && !cf_schema_decimal_scale(s, &scale)) {
            cf_err_set(err, CF_ERR_SCHEMA, "Decimal schema without a valid \"scale\" parameter");
            return CF_ERR_SCHEMA;
        }
        break;
    }
    case CF_ARRAY:
        for (size_t i = 0; i < v->u.arr.len; i++) {
            cf_code rc = cf_value_validate(s->value_schema, v->u.arr.items[i], err);
            if (rc) {
                char seg[32];
                snprintf(seg, sizeof seg, "[%zu]", i);
                cf_err_where_prefix(err, seg);
                return rc;
            }
        }
        break;
    case CF_MAP:
        for (size_t i = 0; i < v->u.map.len; i++) {
            cf_code rc = cf_value_validate(s->key_schema, v->u.map.keys[i], err);
            if (!rc) rc = cf_value_validate(s->value_schema, v->u.map.vals[i], err);
            if (rc) {
                char seg[32];
                snprintf(seg, sizeof seg, "[%zu]", i);
                cf_err_where_prefix(err, seg);
                return rc;
            }
        }
        break;
    case CF_STRUCT: {
        const cf_schema *vs = v->u.st.schema;
        if (vs != s && !cf_schema_equal(vs, s)) {
            cf_err_set(err, CF_ERR_SCHEMA, "struct value's schema does not match the expected schema%s%s",
                       s->name ? " " : "", s->name ? s->name : "");
            return CF_ERR_SCHEMA;
        }
        for (size_t i = 0; i < s->n_fields; i++) {
            cf_code rc = cf_value_validate(s->fields[i].schema, v->u.st.fields[i], err);
            if (rc) {
                /* prefix the field name: "a" then "b" -> "a.b", arrays "a[3]" */
                cf_err_where_prefix(err, s->fields[i].name);
                return rc;
            }
        }
        break;
    }
    default: break;
    }
    return CF_OK;
range:
    cf_err_set(err, CF_ERR_SCHEMA, "value %lld is out of range for %s", (long long)v->u.i, cf_type_name(s->type));
    return CF_ERR_SCHEMA;
}

/* ---------------- decimals ----------------
 * Arbitrary precision via repeated division of the magnitude (base 256) by
 * 10. Decimal columns are short (Postgres numeric, Cassandra decimal), so the
 * quadratic cost does not matter. */

char *cf_decimal_to_string(const uint8_t *unscaled, size_t len, int32_t scale) {
    bool neg = len > 0 && (unscaled[0] & 0x80);
    uint8_t *mag = cf_xmalloc(len ? len : 1);
    /* two's complement magnitude */
    if (neg) {
        int carry = 1;
        for (size_t i = len; i-- > 0;) {
            int b = (uint8_t)~unscaled[i] + carry;
            mag[i] = (uint8_t)b;
            carry = b >> 8;
        }
    } else if (len) {
        memcpy(mag, unscaled, len);
    }
    cf_buf digits = CF_BUF_INIT; /* reversed */
    size_t start = 0;
    while (start < len && mag[start] == 0) start++;
    while (start < len) {
        unsigned rem = 0;
        for (size_t i = start; i < len; i++) {
            unsigned cur = (rem << 8) | mag[i];
            mag[i] = (uint8_t)(cur / 10);
            rem = cur % 10;
        }
        cf_buf_append_byte(&digits, (uint8_t)('0' + rem));
        while (start < len && mag[start] == 0) start++;
    }
    free(mag);
    if (digits.len == 0) cf_buf_append_byte(&digits, '0');
    cf_buf out = CF_BUF_INIT;
    if (neg) cf_buf_append_byte(&out, '-');
    size_t nd = digits.len;
    if (scale <= 0) {
        for (size_t i = nd; i-- > 0;) cf_buf_append_byte(&out, (uint8_t)digits.data[i]);
        if (!(nd == 1 && digits.data[0] == '0'))
            for (int32_t i = 0; i < -scale; i++) cf_buf_append_byte(&out, '0');
    } else {
        size_t sc = (size_t)scale;
        if (nd <= sc) {
            cf_buf_append_str(&out, "0.");
            for (size_t i = nd; i < sc; i++) cf_buf_append_byte(&out, '0');
            for (size_t i = nd; i-- > 0;) cf_buf_append_byte(&out, (uint8_t)digits.data[i]);
        } else {
            for (size_t i = nd; i-- > 0;) {
                cf_buf_append_byte(&out, (uint8_t)digits.data[i]);
                if (i == sc) cf_buf_append_byte(&out, '.');
            }
        }
    }
    cf_buf_free(&digits);
    return cf_buf_detach(&out, NULL);
}

int32_t cf_decimal_literal_scale(const char *text) {
    const char *p = text;
    if (*p == '-' || *p == '+') p++;
    int32_t frac = 0;
    while (*p >= '0' && *p <= '9') p++;
    if (*p == '.') {
        p++;
        while (p[frac] >= '0' && p[frac] <= '9') frac++;
        p += frac;
    }
    long exp = 0;
    if (*p == 'e' || *p == 'E') exp = strtol(p + 1, NULL, 10);
    long sc = (long)frac - exp;
    if (sc < INT32_MIN) sc = INT32_MIN;
    if (sc > INT32_MAX) sc = INT32_MAX;
    return (int32_t)sc;
}

cf_code cf_decimal_from_string(const char *text, int32_t scale, uint8_t **out, size_t *out_len, cf_err *err) {
    const char *p = text;
    bool neg = false;
    if (*p == '-' || *p == '+') neg = (*p++ == '-');
    cf_buf digits = CF_BUF_INIT;
    int32_t frac = 0;
    bool any = false;
    while (*p >= '0' && *p <= '9') cf_buf_append_byte(&digits, (uint8_t)*p++), any = true;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') cf_buf_append_byte(&digits, (uint8_t)*p++), frac++, any = true;
    }
    long exp = 0;
    if (any && (*p == 'e' || *p == 'E')) {
        char *end;
        exp = strtol(p + 1, &end, 10);
        if (end == p + 1) any = false;
        p = end;
    }
    if (!any || *p) {
        cf_buf_free(&digits);
        cf_err_set(err, CF_ERR_INVALID, "invalid decimal number \"%s\"", text);
        return CF_ERR_INVALID;
    }
    /* value = digits * 10^(exp - frac); we need digits * 10^(exp - frac + scale) */
    long shift = exp - frac + scale;
    if (shift > 10000 || shift < -10000) {
        cf_buf_free(&digits);
        cf_err_set(err, CF_ERR_INVALID, "decimal exponent out of range in \"%s\"", text);
        return CF_ERR_INVALID;
    }
    if (shift > 0) {
        for (long i = 0; i < shift; i++) cf_buf_append_byte(&digits, '0');
    } else if (shift < 0) {
        size_t drop = (size_t)-shift;
        if (drop > digits.len) drop = digits.len;
        for (size_t i = digits.len - drop; i < digits.len; i++) {
            if (digits.data[i] != '0') {
                cf_buf_free(&digits);
                cf_err_set(err, CF_ERR_INVALID, "decimal \"%s\" has more fractional digits than scale %d", text, scale);
                cf_err_hint(err, "Rounding is never done silently; use a schema with a larger scale.");
                return CF_ERR_INVALID;
            }
        }
        digits.len -= drop;
    }
    /* decimal digits -> big-endian magnitude */
    size_t cap = digits.len / 2 + 2;
    uint8_t *mag = cf_xcalloc(cap, 1); /* little-endian while building */
    size_t mlen = 0;
    for (size_t i = 0; i < digits.len; i++) {
        unsigned carry = (unsigned)(digits.data[i] - '0');
        for (size_t j = 0; j < mlen; j++) {
            unsigned cur = mag[j] * 10u + carry;
            mag[j] = (uint8_t)cur;
            carry = cur >> 8;
        }
        while (carry) {
            mag[mlen++] = (uint8_t)carry;
            carry >>= 8;
        }
    }
    cf_buf_free(&digits);
    /* two's complement, minimal length, big-endian */
    size_t n = mlen + 1;
    uint8_t *be = cf_xmalloc(n);
    for (size_t i = 0; i < n; i++) be[i] = i == 0 ? 0 : mag[mlen - i];
    free(mag);
    if (neg) {
        int carry = 1;
        for (size_t i = n; i-- > 0;) {
            int b = (uint8_t)~be[i] + carry;
            be[i] = (uint8_t)b;
            carry = b >> 8;
        }
    }
    size_t skip = 0;
    while (skip + 1 < n && ((be[skip] == 0x00 && !(be[skip + 1] & 0x80)) || (be[skip] == 0xff && (be[skip + 1] & 0x80))))
        skip++;
    *out_len = n - skip;
    *out = cf_xmalloc(*out_len);
    memcpy(*out, be + skip, *out_len);
    free(be);
    return CF_OK;
}

/* ---------------- debug text ---------------- */

static void debug_append(cf_buf *b, const cf_value *v) {
    if (!v) {
        cf_buf_append_str(b, "null");
        return;
    }
    switch (v->type) {
    case CF_INT8:
    case CF_INT16:
    case CF_INT32:
    case CF_INT64: cf_buf_printf(b, "%lld", (long long)v->u.i); break;
    case CF_FLOAT32:
    case CF_FLOAT64: cf_buf_printf(b, "%.17g", v->u.f); break;
    case CF_BOOLEAN: cf_buf_append_str(b, v->u.b ? "true" : "false"); break;
    case CF_STRING: cf_buf_printf(b, "\"%.*s\"", (int)(v->u.s.len > 200 ? 200 : v->u.s.len), v->u.s.ptr); break;
    case CF_BYTES:
        cf_buf_append_str(b, "0x");
        for (size_t i = 0; i < v->u.s.len && i < 100; i++) cf_buf_printf(b, "%02x", (uint8_t)v->u.s.ptr[i]);
        break;
    case CF_ARRAY:
        cf_buf_append_byte(b, '[');
        for (size_t i = 0; i < v->u.arr.len; i++) {
            if (i) cf_buf_append_byte(b, ',');
            debug_append(b, v->u.arr.items[i]);
        }
        cf_buf_append_byte(b, ']');
        break;
    case CF_MAP:
        cf_buf_append_byte(b, '{');
        for (size_t i = 0; i < v->u.map.len; i++) {
            if (i) cf_buf_append_byte(b, ',');
            debug_append(b, v->u.map.keys[i]);
            cf_buf_append_byte(b, ':');
            debug_append(b, v->u.map.vals[i]);
        }
        cf_buf_append_byte(b, '}');
        break;
    case CF_STRUCT:
        cf_buf_append_str(b, "Struct{");
        for (size_t i = 0; i < v->u.st.schema->n_fields; i++) {
            if (i) cf_buf_append_byte(b, ',');
            cf_buf_printf(b, "%s=", v->u.st.schema->fields[i].name);
            debug_append(b, v->u.st.fields[i]);
        }
        cf_buf_append_byte(b, '}');
        break;
    }
}

char *cf_value_debug_string(const cf_value *v) {
    cf_buf b = CF_BUF_INIT;
    debug_append(&b, v);
    return cf_buf_detach(&b, NULL);
}
