/*
 * cdcflow/schema.h - Kafka Connect's data model in C: schemas and values.
 *
 * Mirrors org.apache.kafka.connect.data so that every connector, converter
 * and transform speaks one language:
 *   - twelve schema types (INT8 .. STRUCT), each optional or required, with
 *     name, version, doc, parameters and a default value;
 *   - logical types carried by schema name, exactly as Connect names them:
 *       Decimal   "org.apache.kafka.connect.data.Decimal"   BYTES, parameter "scale"
 *       Date      "org.apache.kafka.connect.data.Date"      INT32 days since epoch
 *       Time      "org.apache.kafka.connect.data.Time"      INT32 millis of day
 *       Timestamp "org.apache.kafka.connect.data.Timestamp" INT64 millis since epoch
 *     A logical value is stored in its physical form (a Decimal is the
 *     big-endian two's-complement unscaled integer), like Avro does it, so no
 *     precision is ever lost; helpers below convert to and from text.
 *
 * OWNERSHIP
 *   cf_schema is reference counted and immutable once shared: build it with
 *   the cf_schema_* builders, then hand out references (cf_schema_ref). Every
 *   function that "takes" a schema takes over one reference.
 *   cf_value is a tree with exactly one owner: containers own their children
 *   and cf_value_destroy() frees the whole tree. A NULL cf_value* is the null
 *   value. A STRUCT value holds a reference to its schema.
 *   The exception is a shared value (cf_value_ref): several owners hold the
 *   same tree, each destroys it once, the last frees it. Sources use it for
 *   what repeats in every record (the source partition of the object being
 *   read, the key strings of offset maps), one allocation instead of one per
 *   record. A shared value, and everything in it, must not change any more.
 *
 * THREADS: schemas may be shared between threads once built (refcount is
 *   atomic); values are not synchronised, except the owner count of a shared
 *   value (its owners may be in different threads; it never changes).
 */
#ifndef CDCFLOW_SCHEMA_H
#define CDCFLOW_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_type {
    CF_INT8 = 0,
    CF_INT16,
    CF_INT32,
    CF_INT64,
    CF_FLOAT32,
    CF_FLOAT64,
    CF_BOOLEAN,
    CF_STRING,
    CF_BYTES,
    CF_ARRAY,
    CF_MAP,
    CF_STRUCT
} cf_type;
#define CF_TYPE_COUNT 12

#define CF_LOGICAL_DECIMAL "org.apache.kafka.connect.data.Decimal"
#define CF_LOGICAL_DATE "org.apache.kafka.connect.data.Date"
#define CF_LOGICAL_TIME "org.apache.kafka.connect.data.Time"
#define CF_LOGICAL_TIMESTAMP "org.apache.kafka.connect.data.Timestamp"
#define CF_DECIMAL_SCALE_PARAM "scale"

/* "int8", "int16", ... "struct": the names Connect's JSON schemas use. */
const char *cf_type_name(cf_type t);
/* Parse a JSON schema type name; returns false if unknown. */
bool cf_type_parse(const char *name, cf_type *out);
bool cf_type_is_primitive(cf_type t);

typedef struct cf_schema cf_schema;
typedef struct cf_value cf_value;

typedef struct cf_field {
    char *name;
    size_t index;
    cf_schema *schema; /* owned reference */
} cf_field;

typedef struct cf_param {
    char *key;
    char *value;
} cf_param;

struct cf_schema {
    cf_type type;
    bool optional;
    char *name;     /* NULL if unnamed */
    bool has_version;
    int32_t version;
    char *doc;               /* NULL if none */
    bool has_default;        /* distinguishes "no default" from "default null" */
    cf_value *default_value; /* owned; may be NULL (null) when has_default */
    cf_param *params;        /* insertion order kept */
    size_t n_params;
    cf_schema *key_schema;   /* MAP */
    cf_schema *value_schema; /* MAP values, ARRAY elements */
    cf_field *fields;        /* STRUCT, in declaration order */
    size_t n_fields;
    int refcount; /* atomic */
};

/* --- building schemas (refcount 1, caller owns) --- */
cf_schema *cf_schema_new(cf_type type);
cf_schema *cf_schema_new_array(cf_schema *elem);                /* takes elem */
cf_schema *cf_schema_new_map(cf_schema *key, cf_schema *value); /* takes both */
cf_schema *cf_schema_new_struct(void);
void cf_schema_set_optional(cf_schema *s, bool optional);
void cf_schema_set_name(cf_schema *s, const char *name);
void cf_schema_set_version(cf_schema *s, int32_t version);
void cf_schema_set_doc(cf_schema *s, const char *doc);
void cf_schema_set_param(cf_schema *s, const char *key, const char *value); /* replaces */
/* Set the default value (takes ownership of v; v may be NULL for a null
 * default). Fails with CF_ERR_SCHEMA if v does not match the schema. */
cf_code cf_schema_set_default(cf_schema *s, cf_value *v, cf_err *err);
/* Append a field (takes the field schema). Fails on duplicate names. */
cf_code cf_schema_add_field(cf_schema *s, const char *name, cf_schema *field_schema, cf_err *err);

/* Logical type constructors (required; set optional afterwards if wanted). */
cf_schema *cf_schema_decimal(int32_t scale);
cf_schema *cf_schema_date(void);
cf_schema *cf_schema_time(void);
cf_schema *cf_schema_timestamp(void);

/* Shorthand for a primitive schema, optional or not. */
cf_schema *cf_schema_primitive(cf_type type, bool optional);

cf_schema *cf_schema_ref(cf_schema *s); /* NULL-safe; returns s */
void cf_schema_unref(cf_schema *s);     /* NULL-safe */

/* --- reading schemas --- */
const char *cf_schema_param(const cf_schema *s, const char *key); /* NULL if absent */
const cf_field *cf_schema_field(const cf_schema *s, const char *name);
bool cf_schema_is_logical(const cf_schema *s, const char *logical_name);
/* Decimal scale from the "scale" parameter; false if not a valid Decimal. */
bool cf_schema_decimal_scale(const cf_schema *s, int32_t *scale);
/* Structural equality: type, optional, name, version, doc, params, default,
 * children (as Connect's ConnectSchema.equals). */
bool cf_schema_equal(const cf_schema *a, const cf_schema *b);

/* --- values --- */
struct cf_value {
    cf_type type;
    /* CF_VALUE_INLINE: the STRING/BYTES text, or a small MAP's key and
     * value slots, live in the same allocation as the value (one malloc
     * instead of two or three); STRUCT field slots always do. Never free or
     * replace u.s.ptr, u.map.keys/vals or u.st.fields yourself.
     * CF_VALUE_EMBEDDED: the value lives in the memory of the map that holds
     * it (cf_value_map_n); the map frees it, a reference to it is a copy.
     * CF_VALUE_LITERAL: the STRING text is a string literal (never freed). */
    uint8_t flags;
    /* Owners besides the first (cf_value_ref; 0 = one owner). Changed
     * atomically: a shared value may be destroyed in several threads. */
    uint16_t refs;
    union {
        int64_t i; /* INT8..INT64, Date/Time/Timestamp */
        double f;  /* FLOAT32 (rounded to float), FLOAT64 */
        bool b;
        struct {
            char *ptr; /* always NUL-terminated (also for BYTES) */
            size_t len;
        } s; /* STRING (UTF-8), BYTES */
        struct {
            cf_value **items; /* items[i] may be NULL (null element) */
            size_t len, cap;
        } arr;
        struct {
            cf_value **keys, **vals;
            size_t len, cap;
        } map;
        struct {
            cf_schema *schema;  /* owned reference */
            cf_value **fields;  /* n_fields entries, NULL = null/unset */
        } st;
    } u;
};

#define CF_VALUE_INLINE 0x01
#define CF_VALUE_EMBEDDED 0x02
#define CF_VALUE_LITERAL 0x04

cf_value *cf_value_int8(int8_t v);
cf_value *cf_value_int16(int16_t v);
cf_value *cf_value_int32(int32_t v);
cf_value *cf_value_int64(int64_t v);
cf_value *cf_value_float32(float v);
cf_value *cf_value_float64(double v);
cf_value *cf_value_bool(bool v);
cf_value *cf_value_string(const char *s);                 /* copies */
cf_value *cf_value_string_n(const char *s, size_t len);   /* copies */
cf_value *cf_value_string_take(char *s, size_t len);      /* takes malloc'd s */
cf_value *cf_value_bytes(const void *p, size_t len);      /* copies */
cf_value *cf_value_bytes_take(void *p, size_t len);       /* takes malloc'd p (len+1 bytes, NUL at end not required) */
cf_value *cf_value_array(void);
void cf_value_array_push(cf_value *arr, cf_value *item);  /* takes item */
cf_value *cf_value_map(void);
void cf_value_map_put(cf_value *map, cf_value *key, cf_value *val); /* takes both; appends */
cf_value *cf_value_map_get_str(const cf_value *map, const char *key); /* string-keyed lookup */
/* A map with room for n entries whose keys are string literals and whose
 * values are scalars, all in the map's own allocation: a source offset such
 * as {"position": 1234, "done": false} costs one malloc instead of one per
 * key and value (sources build one per record). Fill it with the _lit puts
 * below; any put works on any map, past the room entries are allocated. */
cf_value *cf_value_map_n(size_t n);
/* Append key -> value where key is a string literal or other text that
 * outlives the map (not copied, not freed). */
void cf_value_map_put_lit_long(cf_value *map, const char *key, int64_t x); /* INT64 */
void cf_value_map_put_lit_bool(cf_value *map, const char *key, bool x);
void cf_value_map_put_lit(cf_value *map, const char *key, cf_value *val); /* takes val */
cf_value *cf_value_struct(cf_schema *schema); /* takes a reference to schema */
/* Set a struct field by name (takes v; frees the old value). */
cf_code cf_value_struct_set(cf_value *st, const char *field, cf_value *v, cf_err *err);
void cf_value_struct_set_index(cf_value *st, size_t index, cf_value *v);
cf_value *cf_value_struct_get(const cf_value *st, const char *field); /* NULL if unset */

void cf_value_destroy(cf_value *v); /* NULL-safe, recursive; a shared value: one owner less */
/* A deep copy the caller owns and may change (also of a shared value). */
cf_value *cf_value_clone(const cf_value *v);
/* One more owner of v (NULL-safe): v itself, now shared (neither v nor
 * anything in it may change from here on, by any owner), or a deep copy
 * once v has 65535 further owners. Each owner destroys what it got. */
cf_value *cf_value_ref(cf_value *v);
bool cf_value_equal(const cf_value *a, const cf_value *b); /* deep; floats by value */

/* Validate a value (possibly NULL) against a schema, as Connect's
 * ConnectSchema.validateValue: null only if optional or defaulted, integer
 * ranges per type, struct values must carry an equal schema, logical values
 * in range. On failure the error's `where` names the field path, e.g.
 * "after.address.zip" or "tags[3]". */
cf_code cf_value_validate(const cf_schema *schema, const cf_value *v, cf_err *err);

/* --- logical type helpers --- */
/* Unscaled big-endian two's-complement bytes + scale -> "-12.345". The
 * result is malloc'd. Works for any length (arbitrary precision). */
char *cf_decimal_to_string(const uint8_t *unscaled, size_t len, int32_t scale);
/* Parse a decimal literal ("-12.345", "1e3", "0.10") at the given scale into
 * minimal-length unscaled bytes (malloc'd into *out). Fails if rounding
 * would be needed (more fractional digits than scale, unless they are zero). */
cf_code cf_decimal_from_string(const char *text, int32_t scale, uint8_t **out, size_t *out_len, cf_err *err);
/* Scale of a decimal literal ("12.345" -> 3, "1e3" -> 0, "1.5e-3" -> 4). */
int32_t cf_decimal_literal_scale(const char *text);

/* Render a value as compact JSON-ish text for logs and error messages. The
 * result is malloc'd. */
char *cf_value_debug_string(const cf_value *v);

#ifdef __cplusplus
}
#endif
#endif
