/*
 * cdcflow/connector.h - the plugin interface of connectors (sources, sinks).
 *
 * The shape of Kafka Connect's SourceTask / SinkTask, in C. A connector is a
 * struct of function pointers plus its configuration definitions, registered
 * in one table (src/worker/registry.c). The worker owns everything around
 * it: threads, converters, transforms, offsets, errors.tolerance and the
 * dead letter queue, the transport (Kafka, record files, direct hand-off),
 * REST and metrics. A connector owns only its domain.
 *
 * SOURCE TASK LIFECYCLE
 *   start(config, ctx)   read stored offsets through ctx (cf_source_ctx_offset)
 *   poll(...)            repeatedly, from the task thread; returns records
 *                        whose source_partition/source_offset are set
 *   commit_record(rec)   optional: rec (and everything before it) was
 *                        acknowledged by the transport (Kafka acked it / the
 *                        sink flushed it); the worker stores the offsets
 *   on commit            optional (cf_source_ctx_on_commit): the offsets of
 *                        every record given to commit_record so far are
 *                        durable in the offset store (Connect's
 *                        SourceTask.commit): what only they refer to may go
 *                        (e.g. files already read)
 *   stop()
 * SINK TASK LIFECYCLE
 *   start(config, ctx)
 *   put(records)         converted and transformed records, in order per
 *                        partition; the sink may buffer
 *   flush()              make every record put so far durable; only after
 *                        it returns CF_OK does the worker commit the
 *                        consumer offsets (or the upstream source offsets in
 *                        direct mode)
 *   stop()
 *   positions()          optional: exactly-once sinks (see cf_sink_position)
 * A bad record (not a failure of the target) is reported with
 * cf_sink_ctx_report(), which applies errors.tolerance: with "none" it
 * returns the error and the task fails; with "all" it logs it and/or sends
 * the record to the dead letter queue and returns CF_OK.
 */
#ifndef CDCFLOW_CONNECTOR_H
#define CDCFLOW_CONNECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "cdcflow/buf.h"
#include "cdcflow/config.h"
#include "cdcflow/error.h"
#include "cdcflow/record.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_source_ctx cf_source_ctx;
typedef struct cf_sink_ctx cf_sink_ctx;

typedef enum cf_connector_kind { CF_CONNECTOR_SOURCE = 0, CF_CONNECTOR_SINK = 1 } cf_connector_kind;

/* ---- where a sink task's input stands (exactly-once sinks) ----
 * The position after a record, as the worker read it (before converters and
 * transforms): a Kafka topic partition (or a record file's topic, partition
 * and offset, as the file has them) and the offset of the next message; in
 * direct mode also the record's source position (its source connector, source
 * partition and source offset: what the source resumes from). A sink that
 * stores the positions of what it wrote in the same transaction as its rows,
 * and hands them back through the plugin's `positions`, has the worker resume
 * its input exactly there: nothing lost, nothing applied twice, however the
 * worker or the machine stopped. */
typedef struct cf_sink_position {
    const char *topic;     /* NULL: no topic position */
    int32_t partition;
    int64_t next_offset;
    const char *source;    /* direct mode: the source connector's name; NULL otherwise */
    const cf_value *source_partition, *source_offset;
} cf_sink_position;

/* What a sink stored (the plugin's `positions`): a topic's next offset, or a
 * source's offset in Kafka Connect's offsets format (stream = the key
 * ["<connector>",{partition}], source_offset = the value). */
typedef struct cf_sink_stored_position {
    char *stream;        /* a topic, or a source's offset key (JSON) */
    int32_t partition;   /* -1 for a source's */
    int64_t next_offset; /* -1 for a source's */
    char *source_offset; /* a source's offset (JSON); NULL for a topic's */
} cf_sink_stored_position;
void cf_sink_stored_positions_free(cf_sink_stored_position *p, size_t n); /* NULL-safe */

typedef struct cf_source_plugin {
    cf_code (*start)(const cf_config *config, cf_source_ctx *ctx, void **task, cf_err *err);
    /* Fill out[0..max) with new records (the worker takes ownership) and set
     * *n. *n == 0 with CF_OK means "nothing now": the worker waits (backoff)
     * before the next poll, so a poll must not block for long. CF_ERR_EOF
     * means a bounded input is finished (e.g. a file given with --input). */
    cf_code (*poll)(void *task, cf_record **out, size_t max, size_t *n, cf_err *err);
    void (*commit_record)(void *task, const cf_record *rec); /* may be NULL */
    void (*stop)(void *task);
    /* Its input cannot be read again (stdin, a FIFO, a socket): what was
     * not acknowledged at a stop or a crash is lost, not read again; the
     * worker's log says so. */
    bool no_replay;
} cf_source_plugin;

typedef struct cf_sink_plugin {
    cf_code (*start)(const cf_config *config, cf_sink_ctx *ctx, void **task, cf_err *err);
    /* Records stay owned by the worker; copy what must outlive the call. */
    cf_code (*put)(void *task, cf_record *const *records, size_t n, cf_err *err);
    cf_code (*flush)(void *task, cf_err *err);
    void (*stop)(void *task);
    /* Optional (Connect's preCommit, in two calls): begin writing what was
     * put so far and return while it is written, so the worker reads and
     * puts the next records meanwhile; *ticket names the write. flush_wait
     * says whether it has ended (waiting for it when `wait`); only then are
     * the positions read before flush_begin committed. flush still writes
     * everything put, one begun before included. An error of a begun write
     * is returned by every later call. flush_begin returns CF_ERR_AGAIN
     * without beginning anything while a write the sink began by itself
     * still runs: the worker reads on and asks again. */
    cf_code (*flush_begin)(void *task, uint64_t *ticket, cf_err *err);
    cf_code (*flush_wait)(void *task, uint64_t ticket, bool wait, bool *done, cf_err *err);
    /* Optional (NULL: the sink keeps no positions): the positions stored with
     * the data (cf_sink_ctx_positions), read now. The worker calls it after
     * start and whenever it is assigned partitions, and resumes its input from
     * them (they win over committed Kafka offsets and stored source offsets).
     * *out is freed with cf_sink_stored_positions_free. */
    cf_code (*positions)(void *task, cf_sink_stored_position **out, size_t *n, cf_err *err);
    /* Optional, with positions: change the positions a sink of this config
     * stores under `connector` while none of its tasks runs (REST's PATCH
     * and DELETE of a stopped connector's offsets): all removed first when
     * `all`, then drop[] removed, then set[] stored, in one transaction. */
    cf_code (*alter_positions)(const cf_config *config, const char *connector, bool all,
                               const cf_sink_stored_position *drop, size_t ndrop, const cf_sink_stored_position *set,
                               size_t nset, cf_err *err);
} cf_sink_plugin;

typedef struct cf_connector_plugin {
    const char *name;            /* "files", "stream", "cassandra", "cdc-sink" */
    const char *const *aliases;  /* NULL-terminated; e.g. Java class names */
    cf_connector_kind kind;
    const char *description;     /* one line, for GET /connector-plugins and docs */
    const char *version;
    const cf_cfg_table *config;  /* the connector's own settings */
    union {
        cf_source_plugin source;
        cf_sink_plugin sink;
    } u;
} cf_connector_plugin;

/* ---- what the worker offers a source task ---- */
/* The stored source offset for a source partition map (OffsetStorageReader),
 * or NULL if none. Returned value is a new copy the caller destroys. */
cf_value *cf_source_ctx_offset(cf_source_ctx *ctx, const cf_value *source_partition);
const char *cf_source_ctx_connector_name(const cf_source_ctx *ctx);
/* A new record for poll to fill and return: cf_record_new()'s, but drawn from
 * the shells of records the worker was done with (with the memory of their
 * values: cf_record_set_value_bytes/_string reuse it), which spares the
 * allocator two slow paths per record. Call it in the task's thread only
 * (start, poll, stop). */
cf_record *cf_source_ctx_record_new(cf_source_ctx *ctx);
int cf_source_ctx_task_id(const cf_source_ctx *ctx);
int cf_source_ctx_task_count(const cf_source_ctx *ctx);
/* Report a bad input unit (e.g. an unparsable line); applies errors.tolerance
 * as cf_sink_ctx_report does. raw may be NULL. */
cf_code cf_source_ctx_report(cf_source_ctx *ctx, const char *raw, size_t raw_len, const cf_err *problem, cf_err *err);
/* True once the worker asked the task to stop (poll should return soon). */
bool cf_source_ctx_stopping(const cf_source_ctx *ctx);
/* While the task stops: the milliseconds left of its stop
 * (task.shutdown.graceful.timeout.ms), at least 100; -1 while it is not
 * stopping. A plugin that waits on the network in poll or stop (a database
 * client, a remote listing) cuts its waits to this, so that the stop stays
 * bounded whatever the remote side does. */
int cf_source_ctx_stop_remaining_ms(cf_source_ctx *ctx);
/* A source task's own metrics in the worker's Prometheus text (GET
 * /metrics). fn appends metric family number `family` (0, 1, ...; false
 * past the last) with `labels` (connector="..",task="N", the inside of the
 * braces) on every sample, and its "# HELP"/"# TYPE" lines when with_help
 * (the first task of the plugin in the output). It is called from the REST
 * thread while the task runs: read only atomics. Set it in start; the worker
 * stops calling it before stop() (and when start fails). fn NULL unsets. */
typedef bool (*cf_source_metrics_fn)(void *arg, int family, const char *labels, bool with_help, cf_buf *out);
void cf_source_ctx_set_metrics(cf_source_ctx *ctx, cf_source_metrics_fn fn, void *arg);
/* fn(arg) is called in the task thread after each successful flush of the
 * offset store (every offset.flush.interval.ms and at stop, before stop()):
 * the offsets of every record given to commit_record so far are durable.
 * Set it in start; fn NULL unsets. */
void cf_source_ctx_on_commit(cf_source_ctx *ctx, void (*fn)(void *arg), void *arg);

/* ---- what the worker offers a sink task ---- */
/* The positions after each record of the put in progress (valid until put
 * returns; pos[i] belongs to records[i]), or NULL when the worker has none. */
const cf_sink_position *cf_sink_ctx_positions(const cf_sink_ctx *ctx);
cf_code cf_sink_ctx_report(cf_sink_ctx *ctx, const cf_record *rec, const cf_err *problem, cf_err *err);
const char *cf_sink_ctx_connector_name(const cf_sink_ctx *ctx);
int cf_sink_ctx_task_id(const cf_sink_ctx *ctx);
/* Ask to be flushed (and the consumer offsets committed after the flush)
 * every ms milliseconds after a put, independent of offset.flush.interval.ms
 * (which then only bounds the commits of a sink that got nothing new): a
 * sink that writes as records arrive. 0 (the default): on the worker's
 * interval only. Call it in start. */
void cf_sink_ctx_flush_every(cf_sink_ctx *ctx, int64_t ms);
/* A sink task's own metrics in GET /metrics, as cf_source_ctx_set_metrics
 * (same function type and rules: read only atomics; the worker stops
 * calling it before stop()). */
void cf_sink_ctx_set_metrics(cf_sink_ctx *ctx, cf_source_metrics_fn fn, void *arg);
/* As cf_source_ctx_stopping / cf_source_ctx_stop_remaining_ms: a put or
 * flush that waits on the target may cut its waits to the stop's time. */
bool cf_sink_ctx_stopping(const cf_sink_ctx *ctx);
int cf_sink_ctx_stop_remaining_ms(cf_sink_ctx *ctx);

/* ---- the registry (src/worker/registry.c) ---- */
const cf_connector_plugin *const *cf_connector_plugins(void); /* NULL-terminated */
const cf_connector_plugin *cf_connector_find(const char *name_or_class);

#ifdef __cplusplus
}
#endif
#endif
