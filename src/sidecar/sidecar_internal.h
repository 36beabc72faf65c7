/*
 * sidecar_internal.h - what the sidecar's source files share (not public).
 */
#ifndef CDCFLOW_SIDECAR_INTERNAL_H
#define CDCFLOW_SIDECAR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/schema.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"

typedef struct cf_sc_cstore cf_sc_cstore;

/* A CQL identifier as a valid Avro name (appended): characters outside
 * [A-Za-z0-9_] become '_', a leading digit (or nothing) gets a '_' before. */
void cf_sc_avro_name(const char *in, cf_buf *out);
/* Add a field named after a CQL identifier to st (takes fs): its Avro-valid
 * name, "_2", "_3"... on a clash, the real name in fs's "cassandra.column"
 * parameter when it differs. */
void cf_sc_add_named_field(cf_schema *st, const char *cql_name, cf_schema *fs, cf_buf *scratch);

/* Settings of an events object (events.c) that cqlvalue.c reads. */
const char *cf_sc_events_ns(const cf_sc_events *ev);
bool cf_sc_events_decimal_string(const cf_sc_events *ev);
int32_t cf_sc_events_decimal_scale(const cf_sc_events *ev);

/* Wall clock in ms and monotonic clock in us. */
int64_t cf_sc_wall_ms(void);
int64_t cf_sc_mono_us(void);

/* The service (rest.c, statements.c): what the connector's configuration is
 * made of. The REST threads share it: every use holds mu. */
typedef struct cf_sc_sink { /* a CREATE DATA_SINK */
    char *name, *uri, *servers, *topic;
    cf_props *options;
} cf_sc_sink;

typedef struct cf_sc_source { /* a CREATE DATA_SOURCE */
    char *keyspace, *table, *sink;
    cf_props *options;
} cf_sc_source;

struct cf_sc_service {
    char *name;
    cf_props *base, *worker;
    cf_props *settings; /* the service configuration (the design's keys): the last PUT's, or the start's */
    cf_sc_sink *sinks;
    size_t n_sinks;
    cf_sc_source *sources;
    size_t n_sources;
    pthread_mutex_t mu;
    /* the shared configuration (shared.c): with state.store=cassandra */
    cf_sc_cstore *store;       /* the writes, under mu (a change made here is written before it is answered) */
    cf_sc_cstore *rstore;      /* the refresh's reads, its own connection, used outside mu */
    uint64_t shared_gen;       /* counts the changes made here: a refresh read across one is not applied */
    cf_worker *w;              /* while attached */
    bool store_failing;
    cf_props *shared;          /* the configs row applied or written last (NULL: none) */
    int64_t refresh_ms;
    pthread_t th;
    bool th_running, th_stop;
    pthread_cond_t cv;
};

/* The service configuration the connector gets (new props, the design's
 * keys, as a PUT body): settings with, when there are data sources, their
 * sink (its servers as kafka.bootstrap.servers, its topic as topic.format,
 * its options), their options and their tables. */
cf_props *cf_sc_service_compose(const cf_sc_service *s, const cf_props *settings);
/* Make the connector what settings (composed) say: mapped as
 * cf_sc_service_config maps the design's keys, onto the base, the worker's
 * Kafka checked, created or updated. Returns the HTTP status: 201/200 with
 * {"config": ...} in out, else the error JSON. */
int cf_sc_service_apply(cf_sc_service *s, cf_worker *w, const cf_props *settings, cf_buf *out);
/* The error JSON ({"error_code", "message"}) for err; returns the status
 * (CONFIG 400, NOT_FOUND 404, STATE 409, else 500). */
int cf_sc_service_error(cf_buf *out, const cf_err *err);
/* POST /api/v1/services/cdc/statements (statements.c). */
int cf_sc_service_statements(cf_sc_service *s, cf_worker *w, const char *body, size_t len, cf_buf *out);
/* The flat service configuration of a PUT body (JSON or .properties),
 * before the mapping (service.c). */
cf_code cf_sc_service_settings(const char *text, size_t len, const char *name, cf_props *settings, cf_err *err);
/* One design key onto the connector and worker settings (service.c). */
void cf_sc_service_put(const char *key, const char *value, cf_props *connector, cf_props *worker);

/* The data sources go (rest.c). */
void cf_sc_service_clear_sources(cf_sc_service *s);
/* After a change of the service configuration (PUT, DELETE, statements;
 * holding mu): with state.store=cassandra it is written to <ks>.configs
 * (shared.c). */
void cf_sc_service_share(cf_sc_service *s, cf_worker *w);
/* After a DELETE (holding mu): the settings go; with the shared
 * configuration this sidecar's own keys (cdc_raw.dirs...) stay, so that the
 * next configuration another sidecar shares applies here. */
void cf_sc_service_unconfigured(cf_sc_service *s);

/* The Cassandra state store (cstore.c): the state table and the configs
 * table of a keyspace (created if missing). */
typedef struct cf_cql_options cf_cql_options;
typedef struct cf_sc_cstore_opts {
    const cf_cql_options *cql; /* the node (copied; its interrupt is not used) */
    const char *keyspace;      /* NULL: sidecar_internal */
    const char *replication;   /* a CQL replication map; NULL: SimpleStrategy, replication_factor 1 */
} cf_sc_cstore_opts;
/* Connect and create the keyspace and tables if missing. */
cf_code cf_sc_cstore_open(const cf_sc_cstore_opts *o, cf_sc_cstore **out, cf_err *err);
void cf_sc_cstore_close(cf_sc_cstore *s); /* NULL-safe */
const char *cf_sc_cstore_keyspace(const cf_sc_cstore *s);
/* The rows of job whose ranges overlap owned, merged (cf_sc_state_merge)
 * into *merged (NULL when there are none; *nrows says how many). */
cf_code cf_sc_cstore_load(cf_sc_cstore *s, const char *job, const cf_sc_ranges *owned, cf_value **merged,
                          size_t *nrows, cf_err *err);
/* Every row of job, of every sidecar, as the cleanup rule takes them
 * (cf_sc_state_cleanup_marks): *marks NULL when nothing may be cleaned. */
cf_code cf_sc_cstore_cleanup_marks(cf_sc_cstore *s, const char *job, cf_value **marks, size_t *nrows, cf_err *err);
/* One row per owned range (the whole ring: one), the snapshot restricted to
 * it, USING TTL (30 days) AND TIMESTAMP (monotonic). */
cf_code cf_sc_cstore_save(cf_sc_cstore *s, const char *job, const cf_sc_ranges *owned, const cf_value *snapshot,
                          cf_err *err);
/* The configuration of a service (NULL if none; *written is 0: Cassandra
 * before 5.0 has no WRITETIME of a map), and its replacement (config NULL:
 * deleted; *written the write time used). */
cf_code cf_sc_cstore_config_get(cf_sc_cstore *s, const char *service, cf_props **out, int64_t *written, cf_err *err);
cf_code cf_sc_cstore_config_put(cf_sc_cstore *s, const char *service, const cf_props *config, int64_t *written,
                                cf_err *err);

/* ---- copy cache (copies.c): the results of recent entries, by their bytes ----
 * A later copy of an entry with equal bytes (CRC, length and memcmp; the same
 * messaging version) takes the first one's results instead of being decoded
 * and digested again. Bounded (entries and bytes, oldest out first); clear it
 * when the schema changes, since results depend on it. */
typedef struct cf_sc_copy_update { /* one partition update of the entry */
    uint8_t dg[16];      /* digest (valid when digested) */
    int64_t max_ts;      /* newest timestamp in it */
    int64_t token;
    uint32_t tc;         /* the engine's table cache index */
    bool digested;       /* dg and max_ts are set (false: the update was not published here) */
} cf_sc_copy_update;
typedef struct cf_sc_copies cf_sc_copies;
cf_sc_copies *cf_sc_copies_new(void);
void cf_sc_copies_destroy(cf_sc_copies *c); /* NULL-safe */
void cf_sc_copies_clear(cf_sc_copies *c);   /* NULL-safe */
/* clear, and free every buffer: an idle engine holds none (NULL-safe) */
void cf_sc_copies_release(cf_sc_copies *c);
/* The updates an entry with these bytes gave (*nu of them), or NULL. */
const cf_sc_copy_update *cf_sc_copies_find(cf_sc_copies *c, uint32_t crc, int mv, const uint8_t *p, size_t len,
                                           size_t *nu);
void cf_sc_copies_put(cf_sc_copies *c, uint32_t crc, int mv, const uint8_t *p, size_t len,
                      const cf_sc_copy_update *u, size_t nu);
size_t cf_sc_copies_bytes(const cf_sc_copies *c); /* entry bytes held */

#endif
