/*
 * registry.c - the table of connector plugins (sources and sinks).
 *
 * Adding a connector: declare its `const cf_connector_plugin` here and add
 * one line to the table. Lookup accepts the short name ("files") or any
 * alias (a Java class name such as
 * "io.debezium.connector.cassandra.CassandraConnector"), case-sensitively
 * for class names as Connect does, case-insensitively for short names.
 *
 * The table holds real connectors only; tests run their own plugins through
 * cf_worker_opts.plugins.
 *
 * LINKING: connectors live in modules after `worker` (source, sink...), so
 * the references below are weak (a module may not depend on later ones): a
 * plugin whose object file is not in the program is NULL and left out. The
 * `cdcflow` binary references every plugin strongly in src/cli/plugins.c,
 * which pulls them in. ADDING A CONNECTOR: one X(...) line below and one
 * line in src/cli/plugins.c.
 */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/connector.h"

#include <pthread.h>

/* X(symbol): one line per connector plugin. */
#define CF_CONNECTOR_PLUGINS(X) \
    X(cf_files_source_plugin)         \
    X(cf_stream_source_plugin)         \
    X(cf_cassandra_cdc_plugin)         \
    X(cf_connector_cdc_sink)

#define CF_DECLARE_WEAK(sym) extern const cf_connector_plugin sym __attribute__((weak));
CF_CONNECTOR_PLUGINS(CF_DECLARE_WEAK)
#undef CF_DECLARE_WEAK

#define CF_ADDRESS(sym) &sym,
static const cf_connector_plugin *const all_plugins[] = {CF_CONNECTOR_PLUGINS(CF_ADDRESS) NULL};
#undef CF_ADDRESS
#define N_PLUGINS (sizeof all_plugins / sizeof all_plugins[0])

/* The linked-in plugins, computed once at first use (a constant, not
 * mutable state). */
static const cf_connector_plugin *plugins[N_PLUGINS];
static pthread_once_t plugins_once = PTHREAD_ONCE_INIT;

static void fill_plugins(void) {
    size_t k = 0;
    for (size_t i = 0; i + 1 < N_PLUGINS; i++)
        if (all_plugins[i]) plugins[k++] = all_plugins[i];
    plugins[k] = NULL;
}

const cf_connector_plugin *const *cf_connector_plugins(void) {
    pthread_once(&plugins_once, fill_plugins);
    return plugins;
}

const cf_connector_plugin *cf_connector_find(const char *name_or_class) {
    if (!name_or_class || !*name_or_class) return NULL;
    for (const cf_connector_plugin *const *p = cf_connector_plugins(); *p; p++) {
        if (strcasecmp((*p)->name, name_or_class) == 0) return *p;
        for (const char *const *a = (*p)->aliases; a && *a; a++)
            if (strcmp(*a, name_or_class) == 0) return *p;
    }
    return NULL;
}
