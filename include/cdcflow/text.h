/*
 * cdcflow/text.h - byte-level text rules shared by every module that reads or
 * writes a text format (config .properties and JSON, the JsonConverter, kcat
 * record files).
 *
 * Owns, in one place:
 *   - what "valid UTF-8" means: RFC 3629 strictly (no overlong forms, no
 *     UTF-16 surrogates U+D800..U+DFFF, nothing above U+10FFFF), and how a
 *     code point is written as UTF-8;
 *   - hex digits and the \uXXXX escape of JSON and java.util.Properties,
 *     including the rule that a high surrogate must be followed by a
 *     \uXXXX low surrogate (the pair is combined into one code point);
 *   - standard base64 (RFC 4648 alphabet, with '=' padding) for writing, and
 *     the alphabet's value table for readers (each reader keeps its own
 *     padding rules: record files are strict, the JsonConverter lenient);
 *   - the JSON string escape table: \" \\ \b \f \n \r \t, other bytes below
 *     0x20 as \u00XX with upper-case hex, everything else ('/', DEL, UTF-8)
 *     raw. Jackson and yajl (kcat) both write exactly this;
 *   - Java's number texts: Double.toString / Float.toString (the shortest
 *     digits that read back, "1.0E10" outside [1e-3, 1e7)) and
 *     BigDecimal.toString, which the JsonConverter writes and the Cast
 *     transform produces;
 *   - "did you mean": the edit distance between names and when a name is
 *     close enough to suggest (unknown settings, connector, transform and
 *     predicate class names).
 * Nothing here allocates except through the cf_buf it is given.
 */
#ifndef CDCFLOW_TEXT_H
#define CDCFLOW_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Length (1..4) of the valid UTF-8 sequence at p, of which `avail` bytes are
 * readable; 0 if the bytes there are not valid UTF-8. avail must be >= 1. */
size_t cf_utf8_seq_len(const unsigned char *p, size_t avail);
/* True if all n bytes at s are valid UTF-8 (n = 0 is valid). */
bool cf_utf8_valid(const void *s, size_t n);
/* Write code point cp (<= 0x10FFFF) as UTF-8 into out; returns 1..4 bytes written. */
size_t cf_utf8_encode(uint32_t cp, char out[4]);
/* Append code point cp (<= 0x10FFFF) as UTF-8. */
void cf_buf_append_utf8(cf_buf *b, uint32_t cp);

/* Value 0..15 of a hex digit (either case), -1 for any other byte. */
int cf_hex_digit(int c);

/* What cf_unicode_escape found. */
typedef enum cf_uescape {
    CF_UESC_OK = 0,
    CF_UESC_BAD_HEX,    /* fewer than four hex digits after \u */
    CF_UESC_NO_LOW,     /* a high surrogate not followed by a \uXXXX low surrogate */
    CF_UESC_LONE_LOW,   /* a low surrogate with no high surrogate before it */
} cf_uescape;

/* Decode a \uXXXX escape whose hex digits start at s[at] (just after the
 * "\u"), reading no byte at or beyond s[n]. A high surrogate must be followed
 * at once by "\u" and a low surrogate; the pair becomes one code point.
 * *end gets: on CF_UESC_OK the index just after the escape (at + 4, or
 * at + 10 for a pair); on CF_UESC_BAD_HEX the index of the first byte that is
 * not a hex digit (n if the input ended); on the surrogate errors at + 4.
 * *cp is set only on CF_UESC_OK (and may be 0: callers decide about NUL). */
cf_uescape cf_unicode_escape(const char *s, size_t n, size_t at, uint32_t *cp, size_t *end);

/* Append the base64 of n bytes (standard alphabet, '=' padding, no line breaks). */
void cf_base64_encode(cf_buf *b, const uint8_t *p, size_t n);
/* Value 0..63 of a standard base64 character, -1 for any other byte ('=' too). */
int cf_base64_digit(int c);

/* Bytes that are not valid UTF-8, for cf_json_write_string. */
typedef enum cf_json_bytes {
    CF_JSON_RAW_BYTES,     /* copied as they are (yajl/kcat: the reader must be lenient) */
    CF_JSON_REPLACE_BYTES, /* each invalid byte becomes U+FFFD (Java's decoder), so the text is valid JSON */
} cf_json_bytes;

/* Append s[0..n) as a JSON string literal, quotes included, with the escape
 * table above. */
void cf_json_write_string(cf_buf *b, const char *s, size_t n, cf_json_bytes invalid);

/* Civil dates (proleptic Gregorian, Howard Hinnant's algorithms): days
 * since 1970-01-01 from year, month 1..12, day 1..31, and back. */
int64_t cf_days_from_civil(int64_t y, unsigned m, unsigned d);
void cf_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* Java's Double.toString / Float.toString (JDK 19+ shortest digits). NaN
 * and infinities as "NaN", "Infinity", "-Infinity". */
void cf_java_double_text(cf_buf *b, double d);
void cf_java_float_text(cf_buf *b, float f);
/* Java's BigDecimal.toString of unscaled * 10^-scale, given the unscaled
 * decimal digits (with an optional leading '-'). */
void cf_java_bigdecimal_text(cf_buf *b, const char *unscaled_digits, int32_t scale);

/* Levenshtein distance, ASCII case-insensitive; (size_t)-1 for names longer
 * than 200 bytes. */
size_t cf_edit_distance(const char *a, const char *b);
/* Whether a name at distance d from `typed` is worth suggesting. */
bool cf_close_enough(const char *typed, size_t d);
/* The candidate closest to `typed` if it is close enough, else NULL. Also
 * compares the part after the last '.' (a class's simple name) of both, so
 * "org.example.ValueToKeys" suggests "...transforms.ValueToKey". */
const char *cf_did_you_mean(const char *typed, const char *const *candidates, size_t n);

/* ---- credentials in text (src/core/mask.c) ----
 * The one place that finds credentials inside free text, used by the log
 * (every line), cf_err (every field) and the configuration views (REST,
 * validate): the password of a URL's user info, scheme://user:PASSWORD@host
 * (RFC 3986 authority: it ends at '/', '?', '#', whitespace, a quote or ',';
 * the user stays, as in postgres://user:[hidden]@host/db), and the value of
 * password=, passwd=, pwd=, secret= and token= pairs (libpq conninfo, URL
 * queries, JDBC, JAAS: quoted values to their closing quote). Which
 * settings are secret as a whole is decided in src/config/secrets.c. */
#define CF_HIDDEN "[hidden]"
/* Append s with its credentials replaced by CF_HIDDEN to out; true when
 * something was hidden. */
bool cf_mask_credentials(const char *s, cf_buf *out);
/* The same in place in the NUL-terminated s, a buffer of size bytes (the
 * text is cut when the mask is longer than what it hides). No allocation. */
void cf_mask_credentials_inplace(char *s, size_t size);

#ifdef __cplusplus
}
#endif
#endif
