/*
 * cdcflow/log.h - leveled logging to stderr, as text or JSON lines.
 *
 * The log sink is process-wide configuration set once at startup (by the CLI,
 * before any thread starts) and read-only afterwards; the level is an atomic
 * so it can be changed at run time (REST API). That is the only process-wide
 * state in cdcflow, and it holds no data, only where to write.
 *
 * Text format:  2026-11-29T18:48:14.123Z INFO  [worker] message
 * JSON format:  {"ts":"2026-11-29T18:48:14.123Z","level":"INFO","component":"worker","msg":"message"}
 */
#ifndef CDCFLOW_LOG_H
#define CDCFLOW_LOG_H

#include <stdbool.h>
#include <stdio.h>

#include "cdcflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_log_level {
    CF_LOG_TRACE = 0,
    CF_LOG_DEBUG = 1,
    CF_LOG_INFO = 2,
    CF_LOG_WARN = 3,
    CF_LOG_ERROR = 4,
    CF_LOG_OFF = 5
} cf_log_level;

typedef enum cf_log_format { CF_LOG_TEXT = 0, CF_LOG_JSON = 1 } cf_log_format;

/* Configure once at startup. stream NULL means stderr. */
void cf_log_setup(cf_log_level level, cf_log_format format, FILE *stream);
void cf_log_set_level(cf_log_level level);
cf_log_level cf_log_get_level(void);
/* The format given to cf_log_setup: with JSON, the CLI writes a failed
 * command's final error as a log line instead of PostgreSQL-style text. */
cf_log_format cf_log_get_format(void);
bool cf_log_enabled(cf_log_level level);

/* Parse "trace|debug|info|warn|error|off" (case-insensitive). */
cf_code cf_log_level_parse(const char *s, cf_log_level *out, cf_err *err);
const char *cf_log_level_name(cf_log_level level);

void cf_log(cf_log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Log a cf_err at ERROR (or the given level) with its detail, hint and where. */
void cf_log_err(cf_log_level level, const char *component, const cf_err *err);

#define CF_TRACE(comp, ...) do { if (cf_log_enabled(CF_LOG_TRACE)) cf_log(CF_LOG_TRACE, comp, __VA_ARGS__); } while (0)
#define CF_DEBUG(comp, ...) do { if (cf_log_enabled(CF_LOG_DEBUG)) cf_log(CF_LOG_DEBUG, comp, __VA_ARGS__); } while (0)
#define CF_INFO(comp, ...) cf_log(CF_LOG_INFO, comp, __VA_ARGS__)
#define CF_WARN(comp, ...) cf_log(CF_LOG_WARN, comp, __VA_ARGS__)
#define CF_ERROR(comp, ...) cf_log(CF_LOG_ERROR, comp, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
