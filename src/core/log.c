/*
 * log.c - leveled logging (see include/cdcflow/log.h).
 *
 * One line per call, written with a single fwrite so lines from different
 * threads never interleave (stdio locks the stream per call).
 */
#include "cdcflow/log.h"
#include "cdcflow/buf.h"
#include "cdcflow/text.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static _Atomic int log_level = CF_LOG_INFO; /* the root logger's */
static cf_log_format log_format = CF_LOG_TEXT;
static FILE *log_stream = NULL;

static const char *level_names[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"};

/* Named loggers: the components (the [name] of a line), as Connect's log4j
 * loggers for its /admin/loggers API. A logger is known once it wrote a
 * line or had its level set; its own level (set over REST) wins over the
 * root level. The table only grows (as log4j's logger repository), so
 * readers scan it without a lock: an entry is filled before n_loggers
 * counts it. Part of the log sink's process-wide state (log.h). */
#define MAX_LOGGERS 256
typedef struct named_logger {
    char name[64];
    _Atomic int level;           /* -1: none of its own (the root level applies) */
    _Atomic int64_t modified_ms; /* last set over the API (0: never) */
} named_logger;
static named_logger loggers[MAX_LOGGERS];
static _Atomic size_t n_loggers;
static pthread_mutex_t loggers_mu = PTHREAD_MUTEX_INITIALIZER; /* writers of the table and levels */
static _Atomic int min_level = CF_LOG_INFO;  /* lowest of root and every logger's: cheap "could anyone log" */
static _Atomic int64_t root_modified_ms;
static _Atomic bool any_own_level; /* a logger got a level of its own: its name must be looked up */

static void recompute_min(void) {
    int m = atomic_load(&log_level);
    size_t n = atomic_load_explicit(&n_loggers, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        int l = atomic_load(&loggers[i].level);
        if (l >= 0 && l < m) m = l;
    }
    atomic_store(&min_level, m);
}

static named_logger *find_logger(const char *name) {
    size_t n = atomic_load_explicit(&n_loggers, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (strcmp(loggers[i].name, name) == 0) return &loggers[i];
    return NULL;
}

/* Find or add (NULL when the table is full or the name too long: such a
 * logger follows the root level). */
static named_logger *add_logger(const char *name) {
    named_logger *l = find_logger(name);
    if (l || strlen(name) >= sizeof l->name || !*name) return l;
    pthread_mutex_lock(&loggers_mu);
    l = find_logger(name);
    size_t n = atomic_load(&n_loggers);
    if (!l && n < MAX_LOGGERS) {
        l = &loggers[n];
        snprintf(l->name, sizeof l->name, "%s", name);
        atomic_store(&l->level, -1);
        atomic_store(&l->modified_ms, 0);
        atomic_store_explicit(&n_loggers, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&loggers_mu);
    return l;
}

void cf_log_setup(cf_log_level level, cf_log_format format, FILE *stream) {
    atomic_store(&log_level, (int)level);
    log_format = format;
    log_stream = stream;
    recompute_min();
}

void cf_log_set_level(cf_log_level level) {
    atomic_store(&log_level, (int)level);
    recompute_min();
}
cf_log_level cf_log_get_level(void) { return (cf_log_level)atomic_load(&log_level); }
cf_log_format cf_log_get_format(void) { return log_format; }
bool cf_log_enabled(cf_log_level level) { return (int)level >= atomic_load(&min_level) && level < CF_LOG_OFF; }

bool cf_log_enabled_for(const char *component, cf_log_level level) {
    if (level >= CF_LOG_OFF || (int)level < atomic_load(&min_level)) return false;
    int root = atomic_load(&log_level);
    if (!atomic_load(&any_own_level)) return (int)level >= root; /* no lookup while only the root has a level */
    named_logger *l = component ? find_logger(component) : NULL;
    int own = l ? atomic_load(&l->level) : -1;
    return (int)level >= (own >= 0 ? own : root);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

size_t cf_log_logger_set(const char *name, cf_log_level level, char ***changed) {
    bool root = strcmp(name, CF_LOG_ROOT) == 0;
    if (!root) add_logger(name);
    size_t plen = strlen(name);
    int64_t now = now_ms();
    pthread_mutex_lock(&loggers_mu);
    size_t n = atomic_load(&n_loggers), k = 0;
    char **out = cf_xcalloc(n + 2, sizeof *out);
    if (root) {
        atomic_store(&log_level, (int)level);
        atomic_store(&root_modified_ms, now);
        out[k++] = cf_xstrdup(CF_LOG_ROOT);
    }
    for (size_t i = 0; i < n; i++) {
        named_logger *l = &loggers[i];
        /* the root sets every logger, a name itself and its children
         * ("a" sets "a" and "a.b"), as Connect's Loggers.setLevel */
        bool hit = root || strcmp(l->name, name) == 0 || (strncmp(l->name, name, plen) == 0 && l->name[plen] == '.');
        if (!hit) continue;
        atomic_store(&l->level, (int)level);
        atomic_store(&l->modified_ms, now);
        atomic_store(&any_own_level, true);
        out[k++] = cf_xstrdup(l->name);
    }
    pthread_mutex_unlock(&loggers_mu);
    recompute_min();
    qsort(out, k, sizeof *out, cmp_str);
    *changed = out;
    return k;
}

bool cf_log_logger_get(const char *name, cf_log_level *level, int64_t *modified_ms) {
    if (strcmp(name, CF_LOG_ROOT) == 0) {
        *level = (cf_log_level)atomic_load(&log_level);
        *modified_ms = atomic_load(&root_modified_ms);
        return true;
    }
    named_logger *l = find_logger(name);
    if (!l) return false;
    int own = atomic_load(&l->level);
    *level = (cf_log_level)(own >= 0 ? own : atomic_load(&log_level));
    *modified_ms = atomic_load(&l->modified_ms);
    return true;
}

static json_t *level_json(cf_log_level level, int64_t modified_ms) {
    json_t *o = json_object();
    json_object_set_new(o, "level", json_string(level_names[level]));
    json_object_set_new(o, "last_modified", modified_ms ? json_integer(modified_ms) : json_null());
    return o;
}

char *cf_log_logger_json(const char *name) {
    cf_log_level lv;
    int64_t ms;
    if (!cf_log_logger_get(name, &lv, &ms)) return NULL;
    json_t *o = level_json(lv, ms);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

char *cf_log_loggers_json(void) {
    size_t n = atomic_load_explicit(&n_loggers, memory_order_acquire);
    char **names = cf_xcalloc(n + 1, sizeof *names);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&loggers[i].level) >= 0) names[k++] = loggers[i].name;
    qsort(names, k, sizeof *names, cmp_str);
    json_t *o = json_object();
    for (size_t i = 0; i < k; i++) {
        named_logger *l = find_logger(names[i]);
        json_object_set_new(o, l->name, level_json((cf_log_level)atomic_load(&l->level), atomic_load(&l->modified_ms)));
    }
    json_object_set_new(o, CF_LOG_ROOT,
                        level_json((cf_log_level)atomic_load(&log_level), atomic_load(&root_modified_ms)));
    free(names);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

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
    if (!cf_log_enabled_for(component, level)) return;
    if (component) add_logger(component); /* known from its first line on (GET /admin/loggers/{name}) */
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cf_mask_credentials_inplace(msg, sizeof msg); /* a URL's password is never logged */
    emit(level, component, msg);
}

void cf_log_err(cf_log_level level, const char *component, const cf_err *err) {
    if (!err || !cf_log_enabled_for(component, level)) return;
    if (component) add_logger(component);
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "%s", err->message[0] ? err->message : cf_code_desc(err->code));
    if (err->detail[0] && n < (int)sizeof msg) n += snprintf(msg + n, sizeof msg - (size_t)n, "; detail: %s", err->detail);
    if (err->where[0] && n < (int)sizeof msg) n += snprintf(msg + n, sizeof msg - (size_t)n, "; where: %s", err->where);
    if (err->hint[0] && n < (int)sizeof msg) snprintf(msg + n, sizeof msg - (size_t)n, "; hint: %s", err->hint);
    cf_mask_credentials_inplace(msg, sizeof msg); /* err may have been filled by hand */
    emit(level, component, msg);
}
