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
 * A bad record (not a failure of the target) is reported with
 * cf_sink_ctx_report(), which applies errors.tolerance: with "none" it
 * returns the error and the task fails; with "all" it logs it and/or sends
 * the record to the dead letter queue and returns CF_OK.
 */
#ifndef CDCFLOW_CONNECTOR_H
#define CDCFLOW_CONNECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "cdcflow/config.h"
#include "cdcflow/error.h"
#include "cdcflow/record.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_source_ctx cf_source_ctx;
typedef struct cf_sink_ctx cf_sink_ctx;

typedef enum cf_connector_kind { CF_CONNECTOR_SOURCE = 0, CF_CONNECTOR_SINK = 1 } cf_connector_kind;

typedef struct cf_source_plugin {
    cf_code (*start)(const cf_config *config, cf_source_ctx *ctx, void **task, cf_err *err);
    /* Fill out[0..max) with new records (the worker takes ownership) and set
     * *n. *n == 0 with CF_OK means "nothing now": the worker waits (backoff)
     * before the next poll, so a poll must not block for long. CF_ERR_EOF
     * means a bounded input is finished (e.g. a file given with --input). */
    cf_code (*poll)(void *task, cf_record **out, size_t max, size_t *n, cf_err *err);
    void (*commit_record)(void *task, const cf_record *rec); /* may be NULL */
    void (*stop)(void *task);
} cf_source_plugin;

typedef struct cf_sink_plugin {
    cf_code (*start)(const cf_config *config, cf_sink_ctx *ctx, void **task, cf_err *err);
    /* Records stay owned by the worker; copy what must outlive the call. */
    cf_code (*put)(void *task, cf_record *const *records, size_t n, cf_err *err);
    cf_code (*flush)(void *task, cf_err *err);
    void (*stop)(void *task);
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

/* ---- what the worker offers a sink task ---- */
cf_code cf_sink_ctx_report(cf_sink_ctx *ctx, const cf_record *rec, const cf_err *problem, cf_err *err);
const char *cf_sink_ctx_connector_name(const cf_sink_ctx *ctx);
int cf_sink_ctx_task_id(const cf_sink_ctx *ctx);

/* ---- the registry (src/worker/registry.c) ---- */
const cf_connector_plugin *const *cf_connector_plugins(void); /* NULL-terminated */
const cf_connector_plugin *cf_connector_find(const char *name_or_class);

#ifdef __cplusplus
}
#endif
#endif
