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
 *     raw. Jackson and yajl (kcat) both write exactly this.
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

#ifdef __cplusplus
}
#endif
#endif
