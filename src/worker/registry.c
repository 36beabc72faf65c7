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
 * LINKING NOTE: connectors live in modules after `worker` (source, sink...).
 * When the first one is added here, the link line must let libcf_worker.a
 * see them (CMake: link cf_worker to those libraries or use a link group).
 */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/connector.h"

static const cf_connector_plugin *const plugins[] = {
    NULL,
};

const cf_connector_plugin *const *cf_connector_plugins(void) { return plugins; }

const cf_connector_plugin *cf_connector_find(const char *name_or_class) {
    if (!name_or_class || !*name_or_class) return NULL;
    for (const cf_connector_plugin *const *p = plugins; *p; p++) {
        if (strcasecmp((*p)->name, name_or_class) == 0) return *p;
        for (const char *const *a = (*p)->aliases; a && *a; a++)
            if (strcmp(*a, name_or_class) == 0) return *p;
    }
    return NULL;
}
