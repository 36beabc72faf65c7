/*
 * error.c - the cf_err value (see include/cdcflow/error.h).
 *
 * Errors are plain structs with fixed buffers on purpose: reporting an error
 * must never itself fail for lack of memory, and a cf_err can travel across
 * threads by copy.
 */
#include "cdcflow/error.h"

#include <stdio.h>
#include <string.h>

#include "cdcflow/text.h"

void cf_err_clear(cf_err *err) {
    if (!err) return;
    err->code = CF_OK;
    err->message[0] = err->detail[0] = err->hint[0] = err->where[0] = '\0';
}

cf_code cf_err_setv(cf_err *err, cf_code code, const char *fmt, va_list ap) {
    if (!err) return code;
    cf_err_clear(err);
    err->code = code;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    /* a message may quote a URL or conninfo with its password: never kept */
    cf_mask_credentials_inplace(err->message, sizeof err->message);
    return code;
}

cf_code cf_err_set(cf_err *err, cf_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cf_err_setv(err, code, fmt, ap);
    va_end(ap);
    return code;
}

#define CF_ERR_FIELD_SETTER(fn, field)                      \
    void fn(cf_err *err, const char *fmt, ...) {            \
        if (!err) return;                                   \
        va_list ap;                                         \
        va_start(ap, fmt);                                  \
        vsnprintf(err->field, sizeof err->field, fmt, ap);  \
        va_end(ap);                                         \
        cf_mask_credentials_inplace(err->field, sizeof err->field); \
    }
CF_ERR_FIELD_SETTER(cf_err_detail, detail)
CF_ERR_FIELD_SETTER(cf_err_hint, hint)
CF_ERR_FIELD_SETTER(cf_err_where, where)

void cf_err_where_prefix(cf_err *err, const char *prefix) {
    if (!err || !prefix || !*prefix) return;
    char tmp[sizeof err->where];
    if (err->where[0] == '\0')
        snprintf(tmp, sizeof tmp, "%s", prefix);
    else if (err->where[0] == '[')
        snprintf(tmp, sizeof tmp, "%s%s", prefix, err->where);
    else
        snprintf(tmp, sizeof tmp, "%s.%s", prefix, err->where);
    memcpy(err->where, tmp, sizeof tmp);
}

static const struct { const char *name, *desc; } code_info[] = {
    [CF_OK] = {"CF_OK", "success"},
    [CF_ERR_INVALID] = {"CF_ERR_INVALID", "invalid argument or input"},
    [CF_ERR_CONFIG] = {"CF_ERR_CONFIG", "invalid configuration"},
    [CF_ERR_IO] = {"CF_ERR_IO", "I/O error"},
    [CF_ERR_NOMEM] = {"CF_ERR_NOMEM", "out of memory"},
    [CF_ERR_NOT_FOUND] = {"CF_ERR_NOT_FOUND", "not found"},
    [CF_ERR_CORRUPT] = {"CF_ERR_CORRUPT", "corrupt input"},
    [CF_ERR_UNSUPPORTED] = {"CF_ERR_UNSUPPORTED", "not supported"},
    [CF_ERR_SCHEMA] = {"CF_ERR_SCHEMA", "value does not match schema"},
    [CF_ERR_TRANSPORT] = {"CF_ERR_TRANSPORT", "transport error"},
    [CF_ERR_STATE] = {"CF_ERR_STATE", "invalid state"},
    [CF_ERR_EOF] = {"CF_ERR_EOF", "end of input"},
    [CF_ERR_AGAIN] = {"CF_ERR_AGAIN", "try again"},
    [CF_ERR_TARGET] = {"CF_ERR_TARGET", "target refused the write"},
    [CF_ERR_INTERNAL] = {"CF_ERR_INTERNAL", "internal error"},
};

const char *cf_code_name(cf_code code) {
    if ((unsigned)code >= sizeof code_info / sizeof code_info[0]) return "CF_ERR_UNKNOWN";
    return code_info[code].name;
}

const char *cf_code_desc(cf_code code) {
    if ((unsigned)code >= sizeof code_info / sizeof code_info[0]) return "unknown error";
    return code_info[code].desc;
}

char *cf_err_format(const cf_err *err, char *buf, size_t size) {
    if (!buf || size == 0) return buf;
    buf[0] = '\0';
    if (!err) return buf;
    size_t n = 0;
#define APPEND(...)                                                   \
    do {                                                              \
        if (n < size) {                                               \
            int w = snprintf(buf + n, size - n, __VA_ARGS__);         \
            if (w > 0) n += (size_t)w;                                \
        }                                                             \
    } while (0)
    APPEND("ERROR:  %s", err->message[0] ? err->message : cf_code_desc(err->code));
    if (err->detail[0]) APPEND("\nDETAIL:  %s", err->detail);
    if (err->hint[0]) APPEND("\nHINT:  %s", err->hint);
    if (err->where[0]) APPEND("\nWHERE:  %s", err->where);
#undef APPEND
    return buf;
}
