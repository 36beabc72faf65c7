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

typedef struct cf_worker_opts {
    /* Extra plugins searched before the registry (NULL-terminated, may be
     * NULL). Tests use it to run plugins defined in the test program. */
    const cf_connector_plugin *const *plugins;
    const char *input_file;  /* sinks read this record file (run to its end) */
    const char *output_file; /* sources write this record file */
    bool rest;               /* start the REST server (listeners / rest.port) */
    const cf_worker_transforms *transforms; /* NULL: "transforms" must be empty */
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
/* Update, delete and restart: CF_ERR_STATE (REST 409) once the worker is
 * stopping (cf_worker_run ended its loop, or cf_worker_destroy), and a
 * restart of a connector deleted or replaced meanwhile; CF_ERR_NOT_FOUND
 * for an unknown name. Concurrent calls on one connector take turns. */
/* Replace the configuration (stop tasks, start with the new one). */
cf_code cf_worker_update_connector(cf_worker *w, const char *name, const cf_props *config, cf_err *err);
/* Stop the tasks (flush, commit) and forget the connector. */
cf_code cf_worker_delete_connector(cf_worker *w, const char *name, cf_err *err);
cf_code cf_worker_pause_connector(cf_worker *w, const char *name, cf_err *err);
cf_code cf_worker_resume_connector(cf_worker *w, const char *name, cf_err *err);
/* Stop and start the tasks (failed ones only with only_failed). */
cf_code cf_worker_restart_connector(cf_worker *w, const char *name, bool only_failed, cf_err *err);

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
/* The REST port actually bound (useful with rest.port=0), or 0. */
int cf_worker_rest_port(const cf_worker *w);

/* ---- state, as the REST API shows it ---- */
typedef enum cf_state {
    CF_STATE_UNASSIGNED = 0,
    CF_STATE_RUNNING,
    CF_STATE_PAUSED,
    CF_STATE_FAILED,
    CF_STATE_FINISHED /* bounded input done (ours; Connect has no such state) */
} cf_state;
const char *cf_state_name(cf_state s); /* "RUNNING", ... */

/* JSON documents of the REST API (malloc'd text), or NULL if unknown. */
char *cf_worker_connectors_json(cf_worker *w);              /* ["a","b"] */
char *cf_worker_connector_json(cf_worker *w, const char *name);        /* {name, config, tasks, type} */
char *cf_worker_connector_config_json(cf_worker *w, const char *name); /* {config} */
char *cf_worker_connector_status_json(cf_worker *w, const char *name); /* {name, connector, tasks, type} */
char *cf_worker_plugins_json(cf_worker *w);                 /* [{class,type,version}] */
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
void cf_offset_store_destroy(cf_offset_store *s);

#ifdef __cplusplus
}
#endif
#endif
