/*
 * targets.c - the table of sink targets, and finding one by name.
 *
 * A target (SQLite, PostgreSQL, BigQuery) lives in its own module after
 * `sink` (src/sink/<name>/), so the references below are weak, as the
 * worker's registry refers to connector plugins (src/worker/registry.c): a
 * target whose object file is not in the program is NULL, and asking for it
 * says so ("not available in this build") instead of "unknown". The
 * `cdcflow` binary references every target strongly in src/cli/plugins.c,
 * which pulls them in. ADDING A TARGET: a file in src/sink/<name>/ defining
 * `const cf_sink_target cf_sink_target_<name>`, one X(...) line below and
 * one line in src/cli/plugins.c.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/sink.h"

/* X(symbol, name, alias-or-NULL): one line per target, in the order the
 * documentation lists them; the first is the default. */
#define CF_SINK_TARGETS(X)                              \
    X(cf_sink_target_sqlite, "sqlite", NULL)            \
    X(cf_sink_target_postgres, "postgres", "postgresql") \
    X(cf_sink_target_bigquery, "bigquery", NULL)

#define CF_DECLARE_WEAK(sym, name, alias) extern const cf_sink_target sym __attribute__((weak));
CF_SINK_TARGETS(CF_DECLARE_WEAK)
#undef CF_DECLARE_WEAK

typedef struct target_entry {
    const cf_sink_target *target; /* NULL: not linked into this program */
    const char *name, *alias;
} target_entry;

#define CF_ENTRY(sym, name, alias) {&sym, name, alias},
static const target_entry all_targets[] = {CF_SINK_TARGETS(CF_ENTRY)};
#undef CF_ENTRY
#define N_TARGETS (sizeof all_targets / sizeof all_targets[0])

const char *cf_sink_target_names(char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < N_TARGETS; i++) {
        if (!all_targets[i].target) continue;
        int n = snprintf(buf + len, len < cap ? cap - len : 0, "%s%s", len ? ", " : "", all_targets[i].name);
        if (n > 0) len += (size_t)n;
    }
    return buf;
}

cf_code cf_sink_target_find(const char *name, const cf_sink_target **out, cf_err *err) {
    const char *n = name && *name ? name : all_targets[0].name;
    *out = NULL;
    char names[128];
    for (size_t i = 0; i < N_TARGETS; i++) {
        const target_entry *e = &all_targets[i];
        if (strcasecmp(n, e->name) != 0 && !(e->alias && strcasecmp(n, e->alias) == 0)) continue;
        if (e->target) {
            *out = e->target;
            return CF_OK;
        }
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"target\": %s is not available in this build",
                   e->name);
        cf_err_detail(err, "the %s target is not built yet, or not linked into this program", e->name);
        cf_err_hint(err, "use one of the targets this build has: %s", cf_sink_target_names(names, sizeof names));
        return CF_ERR_CONFIG;
    }
    cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"target\": \"%s\"", n);
    cf_err_hint(err, "target is one of %s", cf_sink_target_names(names, sizeof names));
    return CF_ERR_CONFIG;
}
