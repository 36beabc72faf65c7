/*
 * cdcflow/error.h - errors that say what failed, where, and what to do.
 *
 * Every function that can fail returns a cf_code (CF_OK == 0) and, when the
 * caller passes a cf_err, fills it in. The shape follows PostgreSQL's error
 * reports: a primary message (what failed), a detail (why / the offending
 * value), a hint (what to do), plus a location ("where": file and byte
 * offset, topic/partition/offset, or a field path).
 *
 * A cf_err is a plain value with fixed-size buffers: no allocation, safe to
 * put on the stack, safe to copy. Passing NULL for the cf_err is allowed
 * everywhere; the code alone is returned then.
 */
#ifndef CDCFLOW_ERROR_H
#define CDCFLOW_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_code {
    CF_OK = 0,
    CF_ERR_INVALID = 1,     /* invalid argument or input data */
    CF_ERR_CONFIG = 2,      /* invalid configuration */
    CF_ERR_IO = 3,          /* file or socket I/O failed */
    CF_ERR_NOMEM = 4,       /* out of memory */
    CF_ERR_NOT_FOUND = 5,   /* a named thing does not exist */
    CF_ERR_CORRUPT = 6,     /* input bytes are damaged (CRC, impossible length) */
    CF_ERR_UNSUPPORTED = 7, /* valid but not supported (format version, type) */
    CF_ERR_SCHEMA = 8,      /* a value does not match its schema */
    CF_ERR_TRANSPORT = 9,   /* Kafka / network peer failure */
    CF_ERR_STATE = 10,      /* operation not allowed in the current state */
    CF_ERR_EOF = 11,        /* end of input (not an error for iterators) */
    CF_ERR_AGAIN = 12,      /* retriable: try again later */
    CF_ERR_TARGET = 13,     /* a sink target (database) refused the write */
    CF_ERR_INTERNAL = 14    /* a bug: an invariant did not hold */
} cf_code;

typedef struct cf_err {
    cf_code code;
    char message[512]; /* what failed, one line, no trailing period */
    char detail[512];  /* why: the offending value, the rule it broke */
    char hint[256];    /* what to do about it */
    char where[256];   /* file:offset, topic/partition@offset, field path */
} cf_err;

/* Reset to CF_OK with empty strings. */
void cf_err_clear(cf_err *err);

/* Set code and message (printf format); clears detail, hint and where.
 * Returns code so callers can write `return cf_err_set(err, CF_ERR_X, ...)`. */
cf_code cf_err_set(cf_err *err, cf_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cf_code cf_err_setv(cf_err *err, cf_code code, const char *fmt, va_list ap);

/* Add detail / hint / location to an error already set. No-ops on NULL. */
void cf_err_detail(cf_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cf_err_hint(cf_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cf_err_where(cf_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefix the location with an outer context, e.g. a field path segment:
 * where "b.c" + prefix "a" -> "a.b.c". Used while unwinding nested values. */
void cf_err_where_prefix(cf_err *err, const char *prefix);

/* Name of a code ("CF_ERR_CORRUPT") and a short description. Static strings. */
const char *cf_code_name(cf_code code);
const char *cf_code_desc(cf_code code);

/* Format the whole error as PostgreSQL does, several lines:
 *   ERROR:  message
 *   DETAIL:  detail
 *   HINT:  hint
 *   WHERE:  where
 * Lines for empty parts are left out. Writes at most `size` bytes (always
 * NUL-terminated) and returns buf. */
char *cf_err_format(const cf_err *err, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
