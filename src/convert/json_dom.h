/*
 * json_dom.h - private to the convert module: a small JSON reader and the
 * JSON text helpers the JsonConverter needs.
 *
 * Why not jansson: Kafka's JsonConverter reads numbers as exact decimals
 * (Jackson's USE_BIG_DECIMAL_FOR_FLOATS), so a Decimal payload like
 * 1.23456789123456789 must reach us as text, not as a double. jansson turns
 * every number into a double or a long long. This reader keeps number tokens
 * as text, keeps object member order, and builds its tree in a cf_arena so a
 * converter reuses the memory from one message to the next.
 *
 * Semantics follow Jackson's defaults as Kafka configures them: strict JSON
 * (no comments, NaN literals, single quotes or leading zeros), duplicate
 * object keys collapse to the last value at the position of the first
 * (Jackson's ObjectNode.replace over a LinkedHashMap), nesting at most 1000
 * levels and number tokens at most 1000 characters (Jackson's
 * StreamReadConstraints). Stricter than Jackson where Jackson is lenient:
 * trailing non-blank bytes after the value and invalid UTF-8 are errors.
 */
#ifndef CF_CONVERT_JSON_DOM_H
#define CF_CONVERT_JSON_DOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/error.h"

/* JN_RAW: a value only checked for syntax (json_parse_lazy); str/len is its
 * text inside the input, not NUL-terminated. */
typedef enum jn_type { JN_NULL = 0, JN_FALSE, JN_TRUE, JN_NUMBER, JN_STRING, JN_ARRAY, JN_OBJECT, JN_RAW } jn_type;

typedef struct jnode jnode;
typedef struct jmember {
    const char *key; /* unescaped, NUL-terminated (arena) */
    size_t klen;
    jnode *val;
} jmember;

struct jnode {
    jn_type type;
    bool integral;   /* JN_NUMBER: no fraction and no exponent */
    const char *str; /* JN_STRING: unescaped UTF-8, NUL-terminated; JN_NUMBER: token text, NUL-terminated */
    size_t len;      /* string / token length, or number of items / members */
    jnode **items;   /* JN_ARRAY */
    jmember *members; /* JN_OBJECT, unique keys, document order */
    size_t start, end; /* byte span of the value in the input */
};

#define JSON_MAX_DEPTH 1000
#define JSON_MAX_NUMBER_LEN 1000

/* Parse `len` bytes into a tree allocated in `arena`. On a syntax error the
 * cf_err names the byte offset, line and column. */
cf_code json_parse(cf_arena *arena, const char *data, size_t len, jnode **out, cf_err *err);

/* As json_parse, but when the top-level value is an object, its member
 * `lazy_key` (if present) is syntax-checked without building a tree and
 * left as a JN_RAW node. The JsonConverter uses it for "schema": a cached
 * schema is found by its text, so its tree is never needed. */
cf_code json_parse_lazy(cf_arena *arena, const char *data, size_t len, const char *lazy_key, jnode **out,
                        cf_err *err);

/* As json_parse_lazy, with a hint: the text of an object seen before as the
 * lazy member. When the member's bytes start with it, the member is that
 * object (its closing brace ends it) and is taken without a scan;
 * *hint_hit tells. Saves the scan of an unchanged schema in every message. */
cf_code json_parse_lazy_hint(cf_arena *arena, const char *data, size_t len, const char *lazy_key, const char *hint,
                             size_t hint_len, bool *hint_hit, jnode **out, cf_err *err);

/* Member lookup (NULL if absent). */
const jnode *json_get(const jnode *obj, const char *key);

/* JSON node type as Jackson names it in messages: "OBJECT", "ARRAY", ... */
const char *json_type_name(const jnode *n);

/* ---- writing ---- */
/* A JSON string literal with Jackson's escaping (\" \\ \b \t \n \f \r, other
 * control characters as \u00XX with upper-case hex, everything else raw;
 * bytes that are not valid UTF-8 are written as U+FFFD, so the output is
 * always valid JSON text). */
void json_write_string(cf_buf *b, const char *s, size_t len);
/* Java's Double.toString / Float.toString (what Jackson writes): shortest
 * digits that read back to the same value, "1.0E10" form outside
 * [1e-3, 1e7). NaN and infinities are written as Jackson does by default
 * (QUOTE_NON_NUMERIC_NUMBERS): "NaN", "Infinity", "-Infinity" in quotes when
 * `quote_non_finite`. */
void json_write_double(cf_buf *b, double d, bool quote_non_finite);
void json_write_float(cf_buf *b, float f, bool quote_non_finite);
/* Java's BigDecimal.toString of unscaled * 10^-scale given the unscaled
 * decimal digits (with optional leading '-'). */
void json_write_bigdecimal(cf_buf *b, const char *unscaled_digits, int32_t scale);
/* Base64 with padding, standard alphabet (Jackson's MIME-NO-LINEFEEDS). */
void json_write_base64(cf_buf *b, const uint8_t *p, size_t n);
/* Decode base64 (padding optional, no whitespace); false if invalid. The
 * result is malloc'd with a NUL after the last byte. */
bool json_base64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len);

#endif
