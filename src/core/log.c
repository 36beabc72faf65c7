/*
 * log.c - leveled logging (see include/cdcflow/log.h).
 *
 * One line per call, written with a single fwrite so lines from different
 * threads never interleave (stdio locks the stream per call).
 */
#include "cdcflow/log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static _Atomic int log_level = CF_LOG_INFO;
static cf_log_format log_format = CF_LOG_TEXT;
static FILE *log_stream = NULL;

static const char *level_names[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"};

void cf_log_setup(cf_log_level level, cf_log_format format, FILE *stream) {
    atomic_store(&log_level, (int)level);
    log_format = format;
    log_stream = stream;
}

void cf_log_set_level(cf_log_level level) { atomic_store(&log_level, (int)level); }
cf_log_level cf_log_get_level(void) { return (cf_log_level)atomic_load(&log_level); }
cf_log_format cf_log_get_format(void) { return log_format; }
bool cf_log_enabled(cf_log_level level) { return (int)level >= atomic_load(&log_level) && level < CF_LOG_OFF; }

const char *cf_log_level_name(cf_log_level level) {
    if ((unsigned)level > CF_LOG_OFF) return "?";
    return level_names[level];
}

cf_code cf_log_level_parse(const char *s, cf_log_level *out, cf_err *err) {
    static const char *names[] = {"trace", "debug", "info", "warn", "error", "off"};
    for (int i = 0; i <= CF_LOG_OFF; i++) {
        if (s && strcasecmp(s, names[i]) == 0) {
            *out = (cf_log_level)i;
            return CF_OK;
        }
    }
    if (s && strcasecmp(s, "warning") == 0) {
        *out = CF_LOG_WARN;
        return CF_OK;
    }
    cf_err_set(err, CF_ERR_CONFIG, "invalid log level \"%s\"", s ? s : "(null)");
    cf_err_hint(err, "Use one of: trace, debug, info, warn, error, off.");
    return CF_ERR_CONFIG;
}

static void timestamp(char *buf, size_t size) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

static void emit(cf_log_level level, const char *component, const char *msg) {
    FILE *out = log_stream ? log_stream : stderr;
    char ts[40];
    timestamp(ts, sizeof ts);
    if (log_format == CF_LOG_JSON) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "ts", ts, "level", cf_log_level_name(level),
                              "component", component ? component : "", "msg", msg);
        char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII) : NULL;
        if (line) {
            fprintf(out, "%s\n", line);
            free(line);
        }
        json_decref(o);
    } else {
        fprintf(out, "%s %-5s [%s] %s\n", ts, cf_log_level_name(level), component ? component : "-", msg);
    }
    fflush(out);
}

void cf_log(cf_log_level level, const char *component, const char *fmt, ...) {
    if (!cf_log_enabled(level)) return;
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(level, component, msg);
}

void cf_log_err(cf_log_level level, const char *component, const cf_err *err) {
    if (!err || !cf_log_enabled(level)) return;
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "%s", err->message[0] ? err->message : cf_code_desc(err->code));
    if (err->detail[0] && n < (int)sizeof msg) n += snprintf(msg + n, sizeof msg - (size_t)n, "; detail: %s", err->detail);
    if (err->where[0] && n < (int)sizeof msg) n += snprintf(msg + n, sizeof msg - (size_t)n, "; where: %s", err->where);
    if (err->hint[0] && n < (int)sizeof msg) snprintf(msg + n, sizeof msg - (size_t)n, "; hint: %s", err->hint);
    emit(level, component, msg);
}
