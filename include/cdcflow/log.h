/*
 * cdcflow/log.h - leveled logging to stderr, as text or JSON lines.
 *
 * The log sink is process-wide configuration set once at startup (by the CLI,
 * before any thread starts) and read-only afterwards; the level is an atomic
 * so it can be changed at run time (REST API), as can the level of each
 * component's logger (PUT /admin/loggers/{name}). That is the only
 * process-wide state in cdcflow, and it holds no data, only where to write
 * and how much.
 *
 * Text format:  2026-11-29T18:48:14.123Z INFO  [worker] message
 * JSON format:  {"ts":"2026-11-29T18:48:14.123Z","level":"INFO","component":"worker","msg":"message"}
 */
#ifndef CDCFLOW_LOG_H
#define CDCFLOW_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
/* Could any logger write at this level (the root's or a component's own level)? */
bool cf_log_enabled(cf_log_level level);
/* Does this component's logger write at this level: its own level when one
 * was set (cf_log_logger_set), else the root level. */
bool cf_log_enabled_for(const char *component, cf_log_level level);

/* Named loggers, for Connect's /admin/loggers API. A component's logger
 * is known once it wrote a line or had its level set. CF_LOG_ROOT names
 * the root level (cf_log_set_level). */
#define CF_LOG_ROOT "root"
/* Set the level of a logger and its children ("a" sets "a" and "a.b"; the
 * root sets every logger): *changed gets their names, sorted (malloc'd
 * array of malloc'd strings); returns how many. */
size_t cf_log_logger_set(const char *name, cf_log_level level, char ***changed);
/* Effective level and last change (ms since the epoch, 0 never); false
 * when no such logger is known. */
bool cf_log_logger_get(const char *name, cf_log_level *level, int64_t *modified_ms);
/* {"level":"INFO","last_modified":ms|null} (NULL: unknown), and the map of
 * the loggers with a level of their own plus "root" (malloc'd JSON). */
char *cf_log_logger_json(const char *name);
char *cf_log_loggers_json(void);

/* Parse "trace|debug|info|warn|error|off" (case-insensitive). */
cf_code cf_log_level_parse(const char *s, cf_log_level *out, cf_err *err);
const char *cf_log_level_name(cf_log_level level);

void cf_log(cf_log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Log a cf_err at ERROR (or the given level) with its detail, hint and where. */
void cf_log_err(cf_log_level level, const char *component, const cf_err *err);

#define CF_TRACE(comp, ...) do { if (cf_log_enabled_for(comp, CF_LOG_TRACE)) cf_log(CF_LOG_TRACE, comp, __VA_ARGS__); } while (0)
#define CF_DEBUG(comp, ...) do { if (cf_log_enabled_for(comp, CF_LOG_DEBUG)) cf_log(CF_LOG_DEBUG, comp, __VA_ARGS__); } while (0)
#define CF_INFO(comp, ...) cf_log(CF_LOG_INFO, comp, __VA_ARGS__)
#define CF_WARN(comp, ...) cf_log(CF_LOG_WARN, comp, __VA_ARGS__)
#define CF_ERROR(comp, ...) cf_log(CF_LOG_ERROR, comp, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
