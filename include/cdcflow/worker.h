/*
 * cdcflow/worker.h - the connector runtime: what Kafka Connect's standalone
 * worker does, in one C process.
 *
 * The worker owns everything around a connector (see connector.h): one
 * thread per task, converters, the transport (Kafka, record files, or a
 * direct in-process hand-off), source offsets, consumer offsets,
 * errors.tolerance and the dead letter queue, the REST API and metrics.
 *
 * MODES
 *   transport=kafka    sources produce to Kafka (idempotent producer), sinks
 *                      consume in a consumer group "connect-<name>" (as
 *                      Connect names it). Source offsets go to the offsets
 *                      topic (offset.storage.topic) in Connect's format, or
 *                      to offset.storage.file.filename when that is set.
 *   transport=direct   sources hand records to the sinks in the same process
 *                      (matched by the sinks' "topics"); a source offset is
 *                      stored only after every sink that got the record
 *                      flushed it. Offsets live in a local file. This is the
 *                      default when no worker file is given.
 *   input file         (cf_worker_opts.input_file) sink connectors read the
 *                      kcat-JSON record file instead of Kafka, run to its end
 *   output file        (cf_worker_opts.output_file) source connectors write
 *                      a record file instead of producing; a bounded source
 *                      (poll returns CF_ERR_EOF) ends the run.
 *
 * GUARANTEES
 *   - A source offset is stored only after the transport acknowledged the
 *     record and every record polled before it from the same task.
 *   - Sink consumer offsets are committed only after the sink's flush
 *     returned CF_OK (and before partitions are given away in a rebalance).
 *   - Nothing is dropped silently: a record that cannot be converted,
 *     transformed or put is either a task failure (errors.tolerance=none) or
 *     logged and/or sent to the dead letter queue (errors.tolerance=all).
 *
 * THREADS: cf_worker_* functions may be called from any thread (the REST
 * server calls them); cf_worker_stop is async-signal-safe.
 *
 * OWNERSHIP: the worker copies every props it is given.
 */
#ifndef CDCFLOW_WORKER_H
#define CDCFLOW_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/config.h"
#include "cdcflow/connector.h"
#include "cdcflow/error.h"
#include "cdcflow/props.h"
#include "cdcflow/record.h"
#include "cdcflow/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Settings of the worker (.properties as Connect's standalone worker):
 * bootstrap.servers, transport, offset.storage.*, converters, listeners,
 * rest.*, producer.* / consumer.* pass-through. */
extern const cf_cfg_table cf_worker_config_table;
/* A connector's configuration is checked against cf_connector_common_table
 * (+ cf_sink_common_table for sinks, both in config.h) and the plugin's
 * own table, then cf_connector_config_check. */

typedef struct cf_worker cf_worker;

/* Single message transforms live in a module after the worker, so the
 * caller (the CLI) hands the worker the chain's three functions. */
typedef struct cf_worker_transforms {
    /* Build the chain from a connector config ("transforms", "transforms.*").
     * *chain NULL means no transforms. */
    cf_code (*create)(const cf_props *connector_config, void **chain, cf_err *err);
    /* Apply the chain to rec (taken, also on error). *out is the result
     * (the worker's), NULL when a transform filtered the record out. */
    cf_code (*apply)(void *chain, cf_record *rec, cf_record **out, cf_err *err);
    void (*destroy)(void *chain);
} cf_worker_transforms;

/* More REST paths (the worker's listener, token and TLS): a request whose
 * path starts with prefix goes to handle, in the REST thread. handle sets
 * *content_type (NULL: application/json), appends the body to out and
 * returns the HTTP status; 0 means "not mine" (the next route, then 404). */
typedef struct cf_worker_route {
    const char *prefix; /* e.g. "/api/v1/services/cdc/" */
    int (*handle)(void *arg, cf_worker *w, const char *method, const char *path, const char *body, size_t body_len,
                  const char **content_type, cf_buf *out);
    void *arg;
} cf_worker_route;

typedef struct cf_worker_opts {
    /* Extra plugins searched before the registry (NULL-terminated, may be
     * NULL). Tests use it to run plugins defined in the test program. */
    const cf_connector_plugin *const *plugins;
    const char *input_file;  /* sinks read this record file (run to its end) */
    const char *output_file; /* sources write this record file */
    bool rest;               /* start the REST server (listeners / rest.port) */
    const cf_worker_transforms *transforms; /* NULL: "transforms" must be empty */
    const cf_worker_route *routes;           /* n_routes more REST paths (borrowed: outlive the worker) */
    size_t n_routes;
    /* Every problem of a connector config, one "key: message" line each
     * appended to out, how many returned: the checks of `cdcflow validate`
     * (the CLI's cf_cli_validate_props), for PUT /connector-plugins/{plugin}/
     * config/validate. NULL: the worker checks its tables only. */
    int (*validate)(const cf_props *config, cf_buf *out);
} cf_worker_opts;

/* Validate the worker settings and create the worker (no threads yet).
 * worker_props may be NULL: direct mode, offsets in
 * "cdcflow.offsets.json" (offset.storage.file.filename default).
 * Errors: CF_ERR_CONFIG naming the key. */
cf_code cf_worker_new(const cf_props *worker_props, const cf_worker_opts *opts, cf_worker **out, cf_err *err);

/* Start the worker: offsets store, transport, REST server. */
cf_code cf_worker_start(cf_worker *w, cf_err *err);

/* Add a connector and start its tasks (the worker must be started).
 * config holds "name" (or `name` is given) and "connector.class".
 * CF_ERR_CONFIG: invalid configuration (problems listed in err->detail);
 * CF_ERR_STATE: a connector of that name exists, or the worker is
 * stopping (REST 409);
 * CF_ERR_NOT_FOUND: unknown connector.class. */
cf_code cf_worker_add_connector(cf_worker *w, const char *name, const cf_props *config, cf_err *err);
/* Update, delete, restart, pause, resume, stop and the offsets' changes:
 * CF_ERR_STATE (REST 409) once the worker is stopping (cf_worker_run ended
 * its loop, or cf_worker_destroy), and an operation on a connector deleted
 * or replaced meanwhile; CF_ERR_NOT_FOUND for an unknown name. Concurrent
 * calls on one connector take turns. */
/* Replace the configuration (stop tasks, start with the new one). */
cf_code cf_worker_update_connector(cf_worker *w, const char *name, const cf_props *config, cf_err *err);
/* Stop the tasks (flush, commit) and forget the connector. */
cf_code cf_worker_delete_connector(cf_worker *w, const char *name, cf_err *err);
/* Pause and resume; of a STOPPED connector both start its tasks again
 * (paused for a pause), as Connect's target states. */
cf_code cf_worker_pause_connector(cf_worker *w, const char *name, cf_err *err);
cf_code cf_worker_resume_connector(cf_worker *w, const char *name, cf_err *err);
/* KIP-875's stop: stop the tasks (flush, commit, as a delete) and keep the
 * connector STOPPED, its config kept, without tasks, until a resume or a
 * pause. Idempotent. */
cf_code cf_worker_stop_connector(cf_worker *w, const char *name, cf_err *err);
/* KIP-875's PATCH /connectors/{name}/offsets of a STOPPED source connector:
 * body {"offsets": [{"partition": {...}, "offset": {...} | null}]} (null
 * removes that partition's offset), every entry checked before any is
 * stored; and DELETE (reset: every offset of the connector removed). Stored
 * and flushed at once; the tasks read them when resumed. *message: Connect's
 * answer (malloc'd). Errors: CF_ERR_NOT_FOUND; CF_ERR_INVALID (REST 400) for
 * a connector not STOPPED (Connect's message) or a bad body;
 * CF_ERR_UNSUPPORTED (REST 501) for a sink; the store's flush error. */
cf_code cf_worker_alter_connector_offsets(cf_worker *w, const char *name, const char *body, size_t body_len,
                                          char **message, cf_err *err);
cf_code cf_worker_reset_connector_offsets(cf_worker *w, const char *name, char **message, cf_err *err);
/* Stop and start the tasks (failed ones only with only_failed). */
cf_code cf_worker_restart_connector(cf_worker *w, const char *name, bool only_failed, cf_err *err);
/* Restart one task (Connect's POST /connectors/{name}/tasks/{id}/restart): CF_ERR_NOT_FOUND for an
 * unknown connector or task number. */
cf_code cf_worker_restart_task(cf_worker *w, const char *name, int task_id, cf_err *err);

/* Block until every connector finished (bounded inputs), one failed and
 * the worker stops on failure (stop_on_failure), or cf_worker_stop was
 * called. Then stops every task (stop polling, flush, commit): connector
 * operations in flight end first, later ones are refused (the worker is
 * stopping), so no task runs once this returns. Returns CF_OK, or the
 * error of the first failed task. */
cf_code cf_worker_run(cf_worker *w, bool stop_on_failure, cf_err *err);
/* Ask the worker to stop; async-signal-safe (SIGINT/SIGTERM handlers). */
void cf_worker_stop(cf_worker *w);
/* Stop what still runs and free everything. NULL-safe. */
void cf_worker_destroy(cf_worker *w);

/* Count of records reported as errors (errors.tolerance=all) since start:
 * the CLI exits 3 when it is not zero. */
uint64_t cf_worker_error_count(const cf_worker *w);

/* THE STOP IS BOUNDED. A stop (cf_worker_run's end, a REST delete, update or
 * restart) takes at most task.shutdown.graceful.timeout.ms, plus
 * CF_WORKER_STOP_MARGIN_MS for the clients' own teardown: sources wait for
 * acknowledgements, sinks flush, commits and the consumer leaving its group
 * are waited for until then, Schema Registry requests are abandoned. What
 * could not be committed by then is logged (connector, task, partitions and
 * offsets) and is read again at the next start. The only waits the worker
 * cannot cut are inside a plugin (a database statement on a server that
 * does not answer): the CLI ends the process at the bound in that case. */
#define CF_WORKER_STOP_MARGIN_MS 1000
/* Tasks whose stop at the end of cf_worker_run could not commit everything
 * (the CLI exits 4 when it is not zero). */
uint64_t cf_worker_unclean_stops(const cf_worker *w);
/* task.shutdown.graceful.timeout.ms + CF_WORKER_STOP_MARGIN_MS. */
int64_t cf_worker_stop_bound_ms(const cf_worker *w);
/* Log (WARN) what each task has read or sent and not committed, as the
 * tasks last published it: for a process that ends before its stop did (a
 * second signal, the stop bound). Any thread; waits at most a second for
 * the worker's lock. */
void cf_worker_log_uncommitted(cf_worker *w);
/* The REST port actually bound (useful with rest.port=0), or 0. */
int cf_worker_rest_port(const cf_worker *w);

/* ---- state, as the REST API shows it ---- */
typedef enum cf_state {
    CF_STATE_UNASSIGNED = 0,
    CF_STATE_RUNNING,
    CF_STATE_PAUSED,
    CF_STATE_FAILED,
    CF_STATE_FINISHED, /* bounded input done (ours; Connect has no such state) */
    CF_STATE_STOPPED   /* a task: stopped cleanly (signal, REST delete/restart/stop): all it read or sent
                        * committed (KIP-875's name); a stop that could not commit everything ends
                        * UNASSIGNED. A connector: stopped by PUT .../stop (KIP-875) */
} cf_state;
const char *cf_state_name(cf_state s); /* "RUNNING", ... */

/* JSON documents of the REST API (malloc'd text), or NULL if unknown. */
char *cf_worker_connectors_json(cf_worker *w);              /* ["a","b"] */
char *cf_worker_connector_json(cf_worker *w, const char *name);        /* {name, config, tasks, type} */
char *cf_worker_connector_config_json(cf_worker *w, const char *name); /* {config} */
char *cf_worker_connector_status_json(cf_worker *w, const char *name); /* {name, connector, tasks, type} */
char *cf_worker_task_status_json(cf_worker *w, const char *name, int task_id); /* {id,state,worker_id[,trace]}; NULL: none */
char *cf_worker_plugins_json(cf_worker *w);                 /* [{class,type,version}] */
/* Connect's active topics {"<name>": {"topics": [...]}}: the topics the
 * connector's records were produced to (source) or consumed from (sink) since
 * it was created or the last reset; NULL if unknown. Reset empties them
 * (CF_ERR_NOT_FOUND if unknown). */
char *cf_worker_connector_topics_json(cf_worker *w, const char *name);
cf_code cf_worker_reset_connector_topics(cf_worker *w, const char *name, cf_err *err);
/* KIP-875's {"offsets": [{"partition","offset"}]} of a source connector;
 * NULL with err: CF_ERR_NOT_FOUND (unknown), CF_ERR_UNSUPPORTED (a sink). */
char *cf_worker_connector_offsets_json(cf_worker *w, const char *name, cf_err *err);
/* Connect's ConfigInfos for PUT /connector-plugins/{plugin}/config/validate:
 * {name, error_count, groups, configs:[{definition, value}]}, every problem
 * listed. NULL with err (CF_ERR_CONFIG: 400) when config names no connector
 * class or another plugin than `plugin`. */
char *cf_worker_validate_json(cf_worker *w, const char *plugin, const cf_props *config, cf_err *err);
/* Every problem of a connector config, one "key: message" line each, appended
 * to out; returns how many (cf_worker_opts.validate, else the tables). */
int cf_worker_config_problems(cf_worker *w, const cf_props *config, cf_buf *out);
/* Prometheus text exposition of the metrics (appended to out). Tasks whose
 * key or value converter uses a Schema Registry (avro) add, per task and
 * converter (labels connector, task, converter="key"|"value"):
 * cdcflow_schema_registry_reachable (1/0), _requests_total, _errors_total,
 * _cache_hits_total, _last_success_age_seconds, _last_error_age_seconds. */
void cf_worker_metrics_text(cf_worker *w, cf_buf *out);
/* Health of the worker as JSON (malloc'd), for GET /health:
 * {"status":"UP"|"DOWN","problems":[...],"connectors":{"<name>":{"type",
 *  "tasks":[{"id","state","schema_registry":{"key"|"value":{cf_sr_status_json}}}]}}}
 * DOWN (and *healthy false; healthy may be NULL) when a task FAILED or a
 * converter's Schema Registry is unreachable. The connector status
 * (cf_worker_connector_status_json) carries the same "schema_registry"
 * object in each task that has one. */
char *cf_worker_health_json(cf_worker *w, bool *healthy);
/* State of a connector / one of its tasks (CF_ERR_NOT_FOUND if unknown). */
cf_code cf_worker_connector_state(cf_worker *w, const char *name, cf_state *connector, cf_state *task0, cf_err *err);

/* ---- source offsets (Connect's offsets topic format) ---- */

/* Connect's offsets-topic key and value, as the JsonConverter with
 * schemas.enable=false writes them: key ["<connector>",{partition}], value
 * {offset} (compact, keys in map order). malloc'd. */
char *cf_offset_key_json(const char *connector, const cf_value *source_partition);
char *cf_offset_value_json(const cf_value *source_offset); /* NULL offset: NULL */
/* Parse such a key back (connector name malloc'd, partition map). */
cf_code cf_offset_key_parse(const char *json, size_t len, char **connector, cf_value **partition, cf_err *err);
/* Parse an offset value: a JSON object of string/integer/boolean/double. */
cf_code cf_offset_value_parse(const char *json, size_t len, cf_value **offset, cf_err *err);

/* The store behind cf_source_ctx_offset. Thread-safe. */
typedef struct cf_offset_store cf_offset_store;
/* A local file (JSON, written atomically: temp file, fsync, rename, fsync of
 * the directory). A missing file is an empty store. */
cf_code cf_offset_store_open_file(const char *path, cf_offset_store **out, cf_err *err);
/* A copy of the stored offset, or NULL. */
cf_value *cf_offset_store_get(cf_offset_store *s, const char *connector, const cf_value *partition);
/* Remember an offset in memory (copies); NULL offset deletes (tombstone). */
void cf_offset_store_put(cf_offset_store *s, const char *connector, const cf_value *partition,
                         const cf_value *offset);
/* Persist what was put (no-op when nothing changed). */
cf_code cf_offset_store_flush(cf_offset_store *s, cf_err *err);
/* Number of keys (for tests and metrics). */
size_t cf_offset_store_count(cf_offset_store *s);
/* The stored offsets of one connector, as KIP-875's GET /connectors/{name}/offsets
 * lists them: [{"partition": {...}, "offset": {...}}, ...] (malloc'd JSON). */
char *cf_offset_store_connector_json(cf_offset_store *s, const char *connector);
void cf_offset_store_destroy(cf_offset_store *s);

#ifdef __cplusplus
}
#endif
#endif
