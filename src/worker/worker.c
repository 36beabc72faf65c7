/*
 * worker.c - the connector runtime: connectors, one thread per task, the
 * source and sink task loops, the direct hand-off, offsets and error
 * tolerance. See include/cdcflow/worker.h for the guarantees.
 *
 * SOURCE TASK LOOP (Connect's WorkerSourceTask)
 *   poll -> transforms -> converters -> send (Kafka / record file) or hand
 *   to the sinks (direct). Every poll batch gets a cf_ack (a group), queued
 *   in poll order; each message sent adds one to its count. Acknowledgements
 *   arrive from other threads (delivery reports, sink flushes) as an atomic
 *   decrement; the task thread walks the queue from its head and stores the
 *   offsets of every fully acknowledged group, so an offset is never stored
 *   before a record polled earlier was acknowledged.
 *   The store is flushed every offset.flush.interval.ms and at stop.
 *   When the transport's queue is full the task stops polling (back-pressure)
 *   and retries with exponential backoff, logging one line per step.
 *
 * SINK TASK LOOP (Connect's WorkerSinkTask)
 *   read (Kafka consumer / record file / direct queue) -> converters ->
 *   transforms -> put. Every offset.flush.interval.ms, at the end of a
 *   bounded input, before a rebalance takes partitions away and at stop:
 *   flush, and only when it returned CF_OK commit the consumer positions (or
 *   acknowledge the direct records, which lets the sources store offsets).
 *
 * LIFETIME: connectors are reference counted; a source in direct mode
 * holds a reference to the sink connectors it hands records to while it
 * does so, so REST can delete or restart a sink at any time.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/convert.h"
#include "cdcflow/log.h"
#include "cdcflow/version.h"
#include "cdcflow/worker.h"
#include "worker_internal.h"

#define COMP "worker"
#define SOURCE_BATCH 500
#define SINK_BATCH 500
#define MAX_INFLIGHT 100000    /* source records not yet acknowledged */
#define DIRECT_QUEUE_MAX 10000 /* records waiting in a direct sink's queue */

/* ---------------- worker settings ---------------- */

static const char *const transport_values[] = {"kafka", "direct", NULL};

static const cf_cfg_def worker_defs[] = {
    {"bootstrap.servers", CF_CFG_LIST, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Kafka",
     "Kafka brokers (host:port, comma-separated), or `embedded` for the in-process mock cluster "
     "(tests, demos). Needed for transport=kafka, the offsets topic and dead letter queues."},
    {"transport", CF_CFG_STRING, NULL, true, transport_values, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Kafka",
     "`kafka`: sources produce to Kafka and sinks consume from it. `direct`: sources hand records to the "
     "sinks in the same process, no Kafka. Default: `kafka` when bootstrap.servers is set, else `direct`."},
    {"offset.storage.file.filename", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH,
     "Offsets",
     "Local file for source offsets (written atomically: temp file, fsync, rename). Default "
     "`cdcflow.offsets.json` in direct mode; in kafka mode the offsets topic is used unless this is set."},
    {"offset.storage.topic", CF_CFG_STRING, "connect-offsets", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH,
     "Offsets",
     "Compacted topic for source offsets in Kafka Connect's format (key `[\"<connector>\",{partition}]`, "
     "value `{offset}`, JSON), readable by Connect's tools."},
    {"offset.storage.partitions", CF_CFG_INT, "25", false, NULL, true, 1, 10000, NULL, CF_IMPORTANCE_LOW,
     "Offsets", "Partitions of the offsets topic when the worker creates it (Connect's default: 25)."},
    {"offset.storage.replication.factor", CF_CFG_INT, "-1", false, NULL, true, -1, 32767, NULL, CF_IMPORTANCE_LOW,
     "Offsets", "Replication factor of the offsets topic when the worker creates it; -1: the broker's default."},
    {"offset.flush.interval.ms", CF_CFG_LONG, "60000", false, NULL, true, 1, 86400000.0, NULL,
     CF_IMPORTANCE_MEDIUM, "Offsets",
     "How often source offsets are stored and sink consumer offsets committed (after a flush)."},
    {"offset.flush.timeout.ms", CF_CFG_LONG, "5000", false, NULL, true, 1, 86400000.0, NULL, CF_IMPORTANCE_LOW,
     "Offsets", "How long a commit waits for outstanding acknowledgements before giving up until the next one."},
    {"task.shutdown.graceful.timeout.ms", CF_CFG_LONG, "5000", false, NULL, true, 0, 86400000.0, NULL,
     CF_IMPORTANCE_LOW, "Tasks",
     "At stop, how long a source task waits for the acknowledgement of records already sent."},
    {"key.converter", CF_CFG_CLASS, "json", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Converters",
     "Default key converter of every connector (json, string, bytes, avro or the Connect class name); "
     "settings under `key.converter.`."},
    {"value.converter", CF_CFG_CLASS, "json", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Converters",
     "Default value converter of every connector; settings under `value.converter.`."},
    {"listeners", CF_CFG_LIST, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "REST",
     "REST listener as in Connect, e.g. `http://127.0.0.1:8083` or `https://127.0.0.1:8443` (one). "
     "Overrides rest.host.name and rest.port."},
    {"rest.host.name", CF_CFG_STRING, "127.0.0.1", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "REST",
     "Address the REST API binds to. The default keeps it local; set 0.0.0.0 deliberately (and a token)."},
    {"rest.port", CF_CFG_INT, "8083", false, NULL, true, 0, 65535, NULL, CF_IMPORTANCE_MEDIUM, "REST",
     "Port of the REST API (0: any free port, logged at start)."},
    {"rest.auth.token", CF_CFG_PASSWORD, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "REST",
     "When set, every REST request needs `Authorization: Bearer <token>` (401 otherwise)."},
    {"listeners.https.ssl.certificate.location", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL,
     CF_IMPORTANCE_LOW, "REST", "PEM certificate (chain) of the REST API; with the key, the API speaks HTTPS."},
    {"listeners.https.ssl.key.location", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
     "REST", "PEM private key of the REST API's certificate."},
    {"client.id", CF_CFG_STRING, "cdcflow", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Kafka",
     "Prefix of the Kafka client ids (`<client.id>-<connector>-<task>`)."},
    {"security.protocol", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "Kafka",
     "Passed to every Kafka client (plaintext, ssl, sasl_plaintext, sasl_ssl)."},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

static const char *const worker_prefixes[] = {"producer.", "consumer.", "admin.", "ssl.", "sasl.",
                                               "key.converter.", "value.converter.", NULL};

const cf_cfg_table cf_worker_config_table = {
    "worker",
    "Worker",
    "Settings of `cdcflow run --worker FILE` (a Java .properties file, as Kafka Connect's standalone "
    "worker). `producer.*`, `consumer.*` and `admin.*` go to the Kafka clients (librdkafka names); "
    "`ssl.*`, `sasl.*` and `security.protocol` to all of them.",
    worker_defs,
    worker_prefixes,
};

/* ---------------- types ---------------- */

typedef enum { MODE_KAFKA = 0, MODE_DIRECT } wmode;

typedef struct task task;
typedef struct conn conn;

struct cf_source_ctx {
    task *t;
    /* record shells the task thread made and was done with
     * (cf_source_ctx_record_new); set while the task thread runs */
    cf_record_pool *pool;
};
struct cf_sink_ctx {
    task *t;
};

typedef struct qitem {
    cf_record *rec;
    cf_ack *ack;
    const task *src; /* the source task that pushed it */
} qitem;

/* The queue of a direct-mode sink task. */
typedef struct dqueue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    qitem *items;
    size_t head, len, cap;
    /* set (with the queue emptied) when the sink task ends, under mu: a
     * source can then no longer push a record nobody would acknowledge */
    bool closed;
} dqueue;

typedef struct metrics {
    atomic_uint_fast64_t records_in, records_out, bytes_in, bytes_out, errors, dlq, skipped;
    atomic_uint_fast64_t commits, commit_failures, commit_us_sum, commit_us_last;
    atomic_uint_fast64_t lag; /* holds a non-negative count */
} metrics;

struct task {
    conn *c;
    int id;
    pthread_t th;
    bool started; /* th runs and is to be joined; under c->life */
    atomic_int state; /* cf_state */
    atomic_bool stop;
    pthread_mutex_t mu; /* trace */
    char trace[2048];
    cf_err fail_err;
    struct cf_source_ctx sctx;
    struct cf_sink_ctx kctx;
    metrics m;
    /* the batch being put, so cf_sink_ctx_report finds a record's original
     * message for the dead letter queue (task thread only) */
    cf_record **cur_recs;
    cf_msg **cur_raws;
    size_t cur_n;
    dqueue q;                /* direct sinks */
    int64_t direct_offset;   /* synthetic offsets of direct records */
    /* per-thread; the pointers are set and cleared under mu, so that the
     * REST thread can read the converters' registry status (sr_status) */
    cf_converter *kconv, *vconv;
    /* registry status of the converters as they were torn down (a failed or
     * stopped task keeps showing why), [0] key, [1] value; under mu */
    cf_sr_status sr_last[2];
    bool sr_last_set[2];
    void *chain;
    cf_msg_out dlq;
    bool has_dlq;
};

struct conn {
    cf_worker *w;
    atomic_int refs;
    char *name;
    cf_props *props;
    cf_config *cfg;
    const cf_connector_plugin *plugin;
    bool is_sink;
    atomic_bool paused;
    int ntasks;
    task **tasks;
    /* settings */
    bool tolerate_all, log_errors, log_messages, dlq_headers;
    char *dlq_topic;
    char **topics;
    size_t n_topics;
    regex_t topics_re;
    bool has_re;
    char *key_conv, *val_conv;
    cf_props *key_conv_props, *val_conv_props;
    pthread_mutex_t mu;
    /* Held while the task threads are started or joined (task_start,
     * task_join), so that one thread at a time does it: two joins of one
     * thread are undefined (seen: a hang). Taken before w->mu, never while
     * holding it. */
    pthread_mutex_t life;
    bool retired; /* stopped for good (deleted or replaced): no task starts again; under life */
};

struct cf_worker {
    cf_props *props;
    cf_config *cfg;
    wmode mode;
    const cf_connector_plugin *const *extra_plugins;
    char *input_file, *output_file;
    bool want_rest;
    const cf_worker_transforms *transforms;
    cf_offset_store *offsets;
    cf_kafka_env *kenv; /* when bootstrap.servers is set */
    cf_msg_out file_out; /* shared by the source tasks with --output */
    bool has_file_out;
    pthread_mutex_t mu;
    conn **conns;
    size_t n_conns, cap_conns;
    volatile sig_atomic_t stop_flag;
    atomic_bool draining; /* no source task runs any more: direct sinks end when empty */
    atomic_bool sealed;   /* cf_worker_run began: every connector of the run is added */
    int reconfiguring;    /* connector updates between removing the old and adding the new (under mu) */
    /* Set (under mu) when cf_worker_run ends or the worker is destroyed:
     * connectors are then no longer added, updated, restarted or deleted.
     * busy counts the updates, restarts and deletes in flight (under mu);
     * the stopping side waits on `idle` until none is left, then stops
     * what they started. */
    bool stopping;
    int busy;
    pthread_cond_t idle;
    atomic_uint_fast64_t errors;
    cf_rest *rest;
    bool started;
    int64_t flush_interval_ms, flush_timeout_ms, shutdown_timeout_ms;
};

const cf_config *cf_worker_config(const cf_worker *w) { return w->cfg; }
const char *cf_worker_kafka_bootstrap(const cf_worker *w) { return cf_kafka_env_bootstrap(w->kenv); }
cf_kafka_env *cf_worker_kafka_env(const cf_worker *w) { return w->kenv; }

static const char *const state_names[] = {"UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "FINISHED"};
const char *cf_state_name(cf_state s) { return (unsigned)s <= CF_STATE_FINISHED ? state_names[s] : "UNKNOWN"; }

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {}
}

/* ---------------- acknowledgements ---------------- */

void cf_ack_done(cf_ack *a, bool ok) {
    if (!ok) atomic_store(&a->failed, true);
    atomic_fetch_sub(&a->pending, 1);
}

void cf_ack_done_n(cf_ack *a, int n) { atomic_fetch_sub(&a->pending, n); }

/* One record of a's group not sent because the task stops (see withdrawn). */
static void ack_withdraw(cf_ack *a) {
    atomic_store(&a->withdrawn, true);
    atomic_fetch_sub(&a->pending, 1);
}

static cf_ack *ack_new(void) {
    cf_ack *a = cf_xcalloc(1, sizeof *a);
    atomic_init(&a->pending, 1);
    atomic_init(&a->failed, false);
    atomic_init(&a->withdrawn, false);
    return a;
}

/* Free what an ack holds; the ack and its arrays stay for reuse. */
static void ack_clear(cf_ack *a) {
    for (size_t i = 0; i < a->n_offs; i++) {
        cf_value_destroy(a->offs[i].part);
        cf_value_destroy(a->offs[i].off);
    }
    for (size_t i = 0; i < a->n_recs; i++) cf_record_destroy(a->recs[i]);
    a->n_offs = a->n_recs = a->n_records = 0;
}

static void ack_free(cf_ack *a) {
    ack_clear(a);
    free(a->offs);
    free(a->recs);
    free(a);
}

/* ---------------- connectors: refs, lookup ---------------- */

static void conn_unref(conn *c);
static conn **conns_snapshot(cf_worker *w, size_t *n_out);

static conn *find_conn_locked(cf_worker *w, const char *name, size_t *idx) {
    for (size_t i = 0; i < w->n_conns; i++)
        if (strcmp(w->conns[i]->name, name) == 0) {
            if (idx) *idx = i;
            return w->conns[i];
        }
    return NULL;
}

static conn *get_conn(cf_worker *w, const char *name) {
    pthread_mutex_lock(&w->mu);
    conn *c = find_conn_locked(w, name, NULL);
    if (c) atomic_fetch_add(&c->refs, 1);
    pthread_mutex_unlock(&w->mu);
    return c;
}

static const cf_connector_plugin *find_plugin(const cf_worker *w, const char *name) {
    for (const cf_connector_plugin *const *p = w->extra_plugins; p && *p; p++) {
        if (strcmp((*p)->name, name) == 0) return *p;
        for (const char *const *a = (*p)->aliases; a && *a; a++)
            if (strcmp(*a, name) == 0) return *p;
    }
    return cf_connector_find(name);
}

/* ---------------- task failure and error reporting ---------------- */

static void task_fail(task *t, const cf_err *err) {
    char buf[2048];
    cf_err_format(err, buf, sizeof buf);
    pthread_mutex_lock(&t->mu);
    snprintf(t->trace, sizeof t->trace, "%s", buf);
    t->fail_err = *err;
    pthread_mutex_unlock(&t->mu);
    atomic_store(&t->state, CF_STATE_FAILED);
    cf_log(CF_LOG_ERROR, COMP, "task %s-%d failed: %s%s%s", t->c->name, t->id, err->message,
           err->detail[0] ? ": " : "", err->detail);
    if (err->hint[0]) cf_log(CF_LOG_ERROR, COMP, "task %s-%d: HINT: %s", t->c->name, t->id, err->hint);
}

/* Apply errors.tolerance to one bad record. raw (may be NULL) is the
 * original message, sent to the DLQ with the context headers. Returns CF_OK
 * when the record is to be skipped, else the error that fails the task. */
static cf_code report_error(task *t, cf_stage stage, const char *class_name, const cf_msg *raw,
                            const cf_record *rec, const cf_err *problem, cf_err *err) {
    conn *c = t->c;
    atomic_fetch_add(&t->m.errors, 1);
    if (!c->tolerate_all) {
        if (err) {
            *err = *problem;
            char where[256];
            snprintf(where, sizeof where, "%s", problem->where);
            cf_err_where(err, "%s%sconnector %s task %d, stage %s%s%s@%lld", where, where[0] ? "; " : "",
                         c->name, t->id, cf_stage_name(stage), raw ? ", " : "", raw ? raw->topic : "",
                         raw ? (long long)raw->offset : -1LL);
            if (!err->hint[0])
                cf_err_hint(err, "Fix the record or set errors.tolerance=all (with errors.log.enable or "
                                 "errors.deadletterqueue.topic.name) to skip bad records.");
        }
        return problem->code ? problem->code : CF_ERR_INVALID;
    }
    atomic_fetch_add(&c->w->errors, 1);
    atomic_fetch_add(&t->m.skipped, 1);
    if (c->log_errors) {
        const char *topic = raw ? raw->topic : rec ? rec->topic : "";
        long long off = raw ? (long long)raw->offset : rec ? (long long)rec->offset : -1;
        int part = raw ? raw->partition : rec ? rec->partition : -1;
        if (c->log_messages) {
            char *k = NULL, *v = NULL;
            if (raw) {
                k = raw->key ? cf_xstrndup(raw->key, raw->key_len > 512 ? 512 : raw->key_len) : cf_xstrdup("null");
                v = raw->value ? cf_xstrndup(raw->value, raw->value_len > 1024 ? 1024 : raw->value_len)
                               : cf_xstrdup("null");
            } else if (rec) {
                k = cf_value_debug_string(rec->key);
                v = cf_value_debug_string(rec->value);
            }
            cf_log(CF_LOG_ERROR, COMP,
                   "error in stage %s (%s) of connector %s task %d, record %s-%d@%lld skipped "
                   "(errors.tolerance=all): %s%s%s; key=%s value=%s",
                   cf_stage_name(stage), class_name, c->name, t->id, topic, part, off, problem->message,
                   problem->detail[0] ? ": " : "", problem->detail, k ? k : "", v ? v : "");
            free(k), free(v);
        } else {
            cf_log(CF_LOG_ERROR, COMP,
                   "error in stage %s (%s) of connector %s task %d, record %s-%d@%lld skipped "
                   "(errors.tolerance=all): %s%s%s",
                   cf_stage_name(stage), class_name, c->name, t->id, topic, part, off, problem->message,
                   problem->detail[0] ? ": " : "", problem->detail);
        }
    }
    if (c->dlq_topic && t->has_dlq) {
        cf_msg *m = raw ? cf_msg_clone(raw) : cf_msg_new();
        if (!raw && rec) {
            /* direct mode: no bytes exist; write the record as JSON for people to read */
            char *k = cf_worker_json_from_value(rec->key), *v = cf_worker_json_from_value(rec->value);
            cf_msg_set_key(m, k, strlen(k));
            cf_msg_set_value(m, v, strlen(v));
            free(k), free(v);
        }
        const char *orig_topic = raw ? raw->topic : rec ? rec->topic : "";
        int32_t part = raw ? raw->partition : rec ? rec->partition : -1;
        int64_t off = raw ? raw->offset : rec ? rec->offset : -1;
        char *orig = cf_xstrdup(orig_topic ? orig_topic : "");
        cf_msg_set_topic(m, c->dlq_topic);
        m->partition = CF_PARTITION_ANY;
        m->offset = CF_OFFSET_NONE;
        if (c->dlq_headers) cf_dlq_add_headers(m, orig, part, off, c->name, t->id, stage, class_name, problem);
        free(orig);
        cf_ack *a = ack_new();
        cf_err e2;
        cf_code rc;
        int backoff = 100;
        while ((rc = t->dlq.send(t->dlq.state, m, a, &e2)) == CF_ERR_AGAIN && !atomic_load(&t->stop)) {
            t->dlq.serve(t->dlq.state, backoff);
            if (backoff < 10000) backoff *= 2;
        }
        cf_msg_destroy(m);
        if (rc) {
            ack_free(a);
            if (err) *err = e2;
            return rc;
        }
        /* Connect waits for the DLQ write before it commits; so do we (flush below). */
        rc = t->dlq.flush(t->dlq.state, (int)c->w->flush_timeout_ms, &e2);
        bool failed = atomic_load(&a->failed) || atomic_load(&a->pending) > 0;
        ack_free(a);
        if (rc || failed) {
            if (err) {
                if (rc) *err = e2;
                else cf_err_set(err, CF_ERR_TRANSPORT, "could not write to the dead letter queue \"%s\"",
                                c->dlq_topic);
            }
            return rc ? rc : CF_ERR_TRANSPORT;
        }
        atomic_fetch_add(&t->m.dlq, 1);
    }
    return CF_OK;
}

/* ---------------- what connectors may call ---------------- */

cf_value *cf_source_ctx_offset(cf_source_ctx *ctx, const cf_value *source_partition) {
    return cf_offset_store_get(ctx->t->c->w->offsets, ctx->t->c->name, source_partition);
}
const char *cf_source_ctx_connector_name(const cf_source_ctx *ctx) { return ctx->t->c->name; }
cf_record *cf_source_ctx_record_new(cf_source_ctx *ctx) { return cf_record_pool_get(ctx->pool); }
int cf_source_ctx_task_id(const cf_source_ctx *ctx) { return ctx->t->id; }
int cf_source_ctx_task_count(const cf_source_ctx *ctx) { return ctx->t->c->ntasks; }
bool cf_source_ctx_stopping(const cf_source_ctx *ctx) { return atomic_load(&ctx->t->stop); }

cf_code cf_source_ctx_report(cf_source_ctx *ctx, const char *raw, size_t raw_len, const cf_err *problem,
                             cf_err *err) {
    task *t = ctx->t;
    cf_msg *m = NULL;
    if (raw) {
        m = cf_msg_new();
        cf_msg_set_value(m, raw, raw_len);
    }
    cf_code rc = report_error(t, CF_STAGE_TASK_POLL, t->c->plugin->name, m, NULL, problem, err);
    cf_msg_destroy(m);
    return rc;
}

cf_code cf_sink_ctx_report(cf_sink_ctx *ctx, const cf_record *rec, const cf_err *problem, cf_err *err) {
    task *t = ctx->t;
    const cf_msg *raw = NULL;
    for (size_t i = 0; i < t->cur_n && !raw; i++)
        if (t->cur_recs[i] == rec) raw = t->cur_raws[i];
    return report_error(t, CF_STAGE_TASK_PUT, t->c->plugin->name, raw, raw ? NULL : rec, problem, err);
}
const char *cf_sink_ctx_connector_name(const cf_sink_ctx *ctx) { return ctx->t->c->name; }
int cf_sink_ctx_task_id(const cf_sink_ctx *ctx) { return ctx->t->id; }

/* ---------------- converters, transforms ---------------- */

static cf_code task_setup(task *t, bool need_converters, cf_err *err) {
    conn *c = t->c;
    cf_worker *w = c->w;
    if (need_converters) {
        cf_converter *kc = NULL, *vc = NULL;
        if (cf_converter_new(c->key_conv, c->key_conv_props, true, &kc, err)) return err ? err->code : 1;
        if (cf_converter_new(c->val_conv, c->val_conv_props, false, &vc, err)) {
            cf_converter_destroy(kc);
            return err ? err->code : 1;
        }
        pthread_mutex_lock(&t->mu);
        t->kconv = kc;
        t->vconv = vc;
        t->sr_last_set[0] = t->sr_last_set[1] = false;
        pthread_mutex_unlock(&t->mu);
    }
    if (w->transforms && cf_props_get(c->props, "transforms") && *cf_props_get(c->props, "transforms")) {
        if (w->transforms->create(c->props, &t->chain, err)) return err ? err->code : 1;
    }
    if (c->dlq_topic && c->tolerate_all) {
        char cid[300];
        snprintf(cid, sizeof cid, "%s-%s-%d-dlq", cf_config_string(w->cfg, "client.id"), c->name, t->id);
        if (cf_worker_kafka_out_new(w, cid, &t->dlq, err)) return err ? err->code : 1;
        t->has_dlq = true;
    }
    return CF_OK;
}

static void task_teardown(task *t) {
    pthread_mutex_lock(&t->mu);
    cf_converter *kc = t->kconv, *vc = t->vconv;
    t->sr_last_set[0] = cf_converter_sr_status(kc, &t->sr_last[0]);
    t->sr_last_set[1] = cf_converter_sr_status(vc, &t->sr_last[1]);
    t->kconv = t->vconv = NULL;
    pthread_mutex_unlock(&t->mu);
    cf_converter_destroy(kc);
    cf_converter_destroy(vc);
    if (t->chain && t->c->w->transforms) t->c->w->transforms->destroy(t->chain);
    t->chain = NULL;
    if (t->has_dlq) {
        t->dlq.flush(t->dlq.state, 5000, NULL);
        t->dlq.destroy(t->dlq.state);
        t->has_dlq = false;
    }
}

/* The Schema Registry status of a task's key (which 0) or value (1)
 * converter: live while the task runs, else as it was at teardown. False
 * when that converter has no registry (or never existed). Any thread. */
static bool task_sr_status(task *t, int which, cf_sr_status *out) {
    pthread_mutex_lock(&t->mu);
    cf_converter *cv = which ? t->vconv : t->kconv;
    bool ok = cv ? cf_converter_sr_status(cv, out) : t->sr_last_set[which];
    if (!cv && ok) *out = t->sr_last[which];
    pthread_mutex_unlock(&t->mu);
    return ok;
}

static const char *const conv_roles[2] = {"key", "value"};

/* Apply the transform chain: rec taken; *out NULL = filtered. */
static cf_code apply_transforms(task *t, cf_record *rec, cf_record **out, cf_err *err) {
    if (!t->chain) {
        *out = rec;
        return CF_OK;
    }
    return t->c->w->transforms->apply(t->chain, rec, out, err);
}

/* Headers of a record as message bytes: strings and bytes as they are,
 * other values as JSON (what Connect's SimpleHeaderConverter writes for them). */
static void headers_to_msg(const cf_record *r, cf_msg *m) {
    for (size_t i = 0; i < r->n_headers; i++) {
        const cf_header *h = &r->headers[i];
        if (!h->value) {
            cf_msg_add_header(m, h->key, NULL, 0);
        } else if (h->value->type == CF_STRING || h->value->type == CF_BYTES) {
            cf_msg_add_header(m, h->key, h->value->u.s.ptr, h->value->u.s.len);
        } else {
            char *j = cf_worker_json_from_value(h->value);
            cf_msg_add_header(m, h->key, j, strlen(j));
            free(j);
        }
    }
}

static void headers_to_record(const cf_msg *m, cf_record *r) {
    for (size_t i = 0; i < m->n_headers; i++) {
        const cf_msg_header *h = &m->headers[i];
        cf_record_add_header(r, h->key, cf_schema_primitive(CF_STRING, true),
                             h->value ? cf_value_string_n(h->value, h->value_len) : NULL);
    }
}

static const char *conv_class(cf_converter *c) {
    const cf_converter_plugin *p = cf_converter_get_plugin(c);
    return p ? (p->aliases && p->aliases[0] ? p->aliases[0] : p->name) : "converter";
}

/* ---------------- direct hand-off ---------------- */

static void dq_init(dqueue *q) {
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
}

/* Close the queue and fail what is in it (the sink task ends). */
static void dq_fail_all(dqueue *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    while (q->len) {
        qitem it = q->items[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
        cf_record_destroy(it.rec);
        cf_ack_done(it.ack, false);
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void dq_destroy(dqueue *q) {
    dq_fail_all(q);
    free(q->items);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
}

/* Push into a sink task's queue; blocks while full (back-pressure). Returns
 * false if the sink task is stopped or the source is asked to stop. */
static bool dq_push(task *sink, task *src, cf_record *rec, cf_ack *ack) {
    dqueue *q = &sink->q;
    pthread_mutex_lock(&q->mu);
    while (q->len >= DIRECT_QUEUE_MAX && !q->closed) {
        int st = atomic_load(&sink->state);
        if (atomic_load(&sink->stop) || st == CF_STATE_FAILED || st == CF_STATE_FINISHED ||
            atomic_load(&src->stop)) {
            pthread_mutex_unlock(&q->mu);
            return false;
        }
        timed_wait(&q->cv, &q->mu, 100);
    }
    int st = atomic_load(&sink->state);
    if (q->closed || atomic_load(&sink->stop) || st == CF_STATE_FAILED || st == CF_STATE_FINISHED) {
        pthread_mutex_unlock(&q->mu);
        return false;
    }
    if (q->len == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 256;
        qitem *n = cf_xmalloc(ncap * sizeof *n);
        for (size_t i = 0; i < q->len; i++) n[i] = q->items[(q->head + i) % q->cap];
        free(q->items);
        q->items = n;
        q->head = 0;
        q->cap = ncap;
    }
    q->items[(q->head + q->len) % q->cap] = (qitem){rec, ack, src};
    q->len++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return true;
}

/* Take back what src pushed and the sink did not take yet: not delivered
 * (its offsets are not stored). */
static void dq_withdraw(dqueue *q, const task *src) {
    pthread_mutex_lock(&q->mu);
    size_t kept = 0, n = q->len;
    for (size_t i = 0; i < n; i++) {
        qitem it = q->items[(q->head + i) % q->cap];
        if (it.src == src) {
            cf_record_destroy(it.rec);
            ack_withdraw(it.ack);
        } else {
            q->items[(q->head + kept++) % q->cap] = it;
        }
    }
    q->len = kept;
    if (kept != n) pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* A stopping source takes back what waits in direct sinks' queues: a sink
 * that does not take it (paused) would hold the source's stop forever. */
static void direct_withdraw(task *t) {
    size_t n;
    conn **cs = conns_snapshot(t->c->w, &n);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; cs[i]->is_sink && k < cs[i]->ntasks; k++) dq_withdraw(&cs[i]->tasks[k]->q, t);
        conn_unref(cs[i]);
    }
    free(cs);
}

static size_t dq_pop(dqueue *q, qitem *out, size_t max, int wait_ms) {
    pthread_mutex_lock(&q->mu);
    if (!q->len && wait_ms > 0) timed_wait(&q->cv, &q->mu, wait_ms);
    size_t n = 0;
    while (q->len && n < max) {
        out[n++] = q->items[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    if (n) pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return n;
}

static size_t dq_len(dqueue *q) {
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static bool sink_wants_topic(conn *c, const char *topic) {
    if (!topic) return false;
    for (size_t i = 0; i < c->n_topics; i++)
        if (strcmp(c->topics[i], topic) == 0) return true;
    return c->has_re && regexec(&c->topics_re, topic, 0, NULL, 0) == 0;
}

static uint32_t fnv1a(const char *s) {
    uint32_t h = 2166136261u;
    for (; s && *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* Hand one source record to every direct sink that subscribes to its topic.
 * `a` already counts one (the caller's guard).
 * A sink that is being reconfigured, restarted or deleted refuses the push
 * for a moment (its old tasks are stopping, the new ones not started yet):
 * the record then waits and goes to whatever subscribes to its topic by that
 * name afterwards, and only sinks that took it are not asked again. Only a
 * sink task that failed or finished while still registered fails the source
 * (the record cannot be delivered; its offset is not stored). */
static cf_code direct_send(task *t, cf_record *rec, cf_ack *a, cf_err *err) {
    cf_worker *w = t->c->w;
    conn *targets[64];
    char *done[64]; /* after a refused push: names of the sinks that took the record */
    size_t n_done = 0;
    bool warned = false;
    cf_code rc = CF_OK;
    for (;;) {
        size_t nt = 0;
        pthread_mutex_lock(&w->mu);
        bool updating = w->reconfiguring > 0; /* a sink may be missing for a moment */
        for (size_t i = 0; i < w->n_conns && nt < 64; i++) {
            conn *c = w->conns[i];
            if (!c->is_sink || c->ntasks == 0 || !sink_wants_topic(c, rec->topic)) continue;
            bool took = false;
            for (size_t j = 0; j < n_done && !took; j++) took = strcmp(done[j], c->name) == 0;
            if (took) continue;
            atomic_fetch_add(&c->refs, 1);
            targets[nt++] = c;
        }
        pthread_mutex_unlock(&w->mu);
        if (nt == 0 && n_done) break; /* every subscriber has it */
        if (nt == 0) {
            /* No sink for this topic. Never drop: while connectors may still
             * be added (REST, or the run not yet begun) wait; otherwise it is
             * a configuration error. */
            if (!w->want_rest && atomic_load(&w->sealed) && !updating) {
                cf_err_set(err, CF_ERR_CONFIG, "direct mode: no sink connector subscribes to topic \"%s\"",
                           rec->topic ? rec->topic : "");
                cf_err_detail(err, "connector %s produced a record for it", t->c->name);
                cf_err_hint(err, "Add the topic to a sink's \"topics\" (or \"topics.regex\"), or run with "
                                 "transport=kafka or --output FILE.");
                rc = CF_ERR_CONFIG;
                break;
            }
            if (atomic_load(&t->stop)) {
                atomic_store(&a->withdrawn, true); /* not delivered: the offset is not stored */
                break;
            }
            if (!warned)
                CF_WARN(COMP, "direct mode: no sink connector subscribes to topic \"%s\" yet; connector %s waits",
                        rec->topic ? rec->topic : "", t->c->name);
            warned = true;
            sleep_ms(50);
            continue;
        }
        bool again = false;
        conn *took[64];
        size_t n_took = 0;
        for (size_t i = 0; i < nt; i++) {
            conn *c = targets[i];
            int ti = 0;
            if (c->ntasks > 1) {
                char *k = cf_value_debug_string(rec->key);
                ti = (int)(fnv1a(k) % (uint32_t)c->ntasks);
                free(k);
            }
            atomic_fetch_add(&a->pending, 1);
            cf_record *copy = cf_record_clone(rec);
            if (dq_push(c->tasks[ti], t, copy, a)) {
                took[n_took++] = c;
            } else {
                cf_record_destroy(copy);
                int st = atomic_load(&c->tasks[ti]->state);
                bool registered = false;
                pthread_mutex_lock(&w->mu);
                for (size_t j = 0; j < w->n_conns && !registered; j++) registered = w->conns[j] == c;
                pthread_mutex_unlock(&w->mu);
                if (atomic_load(&t->stop)) {
                    ack_withdraw(a); /* not delivered: the offset is not stored */
                } else if (registered && (st == CF_STATE_FAILED || st == CF_STATE_FINISHED)) {
                    cf_ack_done(a, false);
                    if (!rc)
                        rc = cf_err_set(err, CF_ERR_STATE, "direct mode: sink connector %s task %d is not running",
                                        c->name, ti);
                } else {
                    cf_ack_done(a, true); /* not pushed, not failed: the guard keeps `a` open */
                    again = true;
                }
            }
        }
        bool retry = !rc && !atomic_load(&t->stop) && again;
        /* names copied only for a retry (rare): a conn may be gone by then */
        for (size_t i = 0; retry && i < n_took && n_done < 64; i++) done[n_done++] = cf_xstrdup(took[i]->name);
        for (size_t i = 0; i < nt; i++) conn_unref(targets[i]);
        if (!retry) break;
        sleep_ms(20);
    }
    for (size_t i = 0; i < n_done; i++) free(done[i]);
    return rc;
}

/* ---------------- source task ---------------- */

typedef struct srcstate {
    task *t;
    void *plugin_task;
    cf_msg_out *out;
    cf_ack *head, *tail; /* groups in poll order */
    cf_ack *open;        /* the group of the batch being sent */
    size_t inflight;     /* records in the queued groups */
    int64_t last_flush_us;
    cf_ack *spare; /* groups whose offsets were stored, for reuse */
    /* Messages of the poll batch not yet sent, when the transport sends
     * batches (send_batch): they borrow from their records (brec), or from
     * barena for bytes a converter made. */
    cf_msg *bmsg;
    cf_record **brec;
    size_t bn;
    cf_arena *barena;
} srcstate;

/* Open the group of a poll batch (queued at once: its guard count keeps it
 * pending until src_group_close). */
static void src_group_open(srcstate *s) {
    cf_ack *g = s->spare;
    if (g) {
        s->spare = g->next;
        atomic_store(&g->pending, 1);
        atomic_store(&g->failed, false);
        atomic_store(&g->withdrawn, false);
        g->next = NULL;
    } else {
        g = ack_new();
    }
    if (s->tail) s->tail->next = g;
    else s->head = g;
    s->tail = g;
    s->open = g;
}

static void src_group_close(srcstate *s) {
    if (!s->open) return;
    cf_ack_done(s->open, true); /* the guard */
    s->open = NULL;
}

static void src_group_release(srcstate *s, cf_ack *g) {
    ack_clear(g);
    g->next = s->spare;
    s->spare = g;
}

static void src_spare_free(srcstate *s) {
    while (s->spare) {
        cf_ack *a = s->spare;
        s->spare = a->next;
        ack_free(a);
    }
}

/* Same source partition for the offset store? Only an exact match counts
 * (maps compare as maps, as the store's canonical key does; floats by their
 * bits): a false "different" merely costs one more put, a false "same"
 * would lose an offset, so anything unusual is "different". */
static bool same_partition(const cf_value *a, const cf_value *b) {
    if (a == b) return true;
    if (!a || !b || a->type != b->type) return false;
    switch (a->type) {
    case CF_INT8: case CF_INT16: case CF_INT32: case CF_INT64: return a->u.i == b->u.i;
    case CF_BOOLEAN: return a->u.b == b->u.b;
    case CF_FLOAT32: case CF_FLOAT64: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
    case CF_STRING: case CF_BYTES:
        return a->u.s.len == b->u.s.len && memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len) == 0;
    case CF_MAP:
        if (a->u.map.len != b->u.map.len) return false;
        for (size_t i = 0; i < a->u.map.len; i++) {
            const cf_value *k = a->u.map.keys[i];
            if (!k || k->type != CF_STRING) return false;
            size_t hits = 0, j_hit = 0, own = 0;
            for (size_t j = 0; j < b->u.map.len; j++)
                if (same_partition(k, b->u.map.keys[j])) hits++, j_hit = j;
            for (size_t j = 0; j < a->u.map.len && hits == 1; j++) /* a key twice in a: "different" */
                if (same_partition(k, a->u.map.keys[j])) own++;
            if (hits != 1 || own != 1 || !same_partition(a->u.map.vals[i], b->u.map.vals[j_hit])) return false;
        }
        return true;
    case CF_ARRAY:
        if (a->u.arr.len != b->u.arr.len) return false;
        for (size_t i = 0; i < a->u.arr.len; i++)
            if (!same_partition(a->u.arr.items[i], b->u.arr.items[i])) return false;
        return true;
    default: return false;
    }
}

#define PUT_SLOTS 8

/* Store the offsets of the acknowledged groups at the head of the queue, in
 * poll order, up to the first one not yet acknowledged.
 *
 * The store keeps only the latest offset of each source partition, and
 * putting one costs a few JSON serialisations, so of a run of acknowledged
 * groups only the last offset per partition is put (the store ends in the
 * same state as if every one had been put, and nothing is flushed in
 * between). commit_record is called after the offsets were put. */
/* The oldest group is complete and has a record the stop withdrew: no
 * offset after it can be stored any more. */
static bool head_withdrawn(srcstate *s) {
    cf_ack *h = s->head;
    return h && h != s->open && atomic_load(&h->pending) == 0 && atomic_load(&h->withdrawn);
}

static cf_code src_commit_acked(srcstate *s, cf_err *err) {
    task *t = s->t;
    conn *c = t->c;
    /* 1. detach the acknowledged prefix */
    cf_ack *first = s->head, *last = NULL, *a = s->head;
    size_t n = 0;
    while (a && a != s->open && atomic_load(&a->pending) == 0 && !atomic_load(&a->failed) &&
           !atomic_load(&a->withdrawn)) {
        last = a;
        n += a->n_records;
        a = a->next;
    }
    bool undelivered = a && a != s->open && atomic_load(&a->pending) == 0 && atomic_load(&a->failed);
    if (last) {
        s->head = a;
        if (!a) s->tail = NULL;
        last->next = NULL;
        s->inflight -= n;
        /* 2. the last offset of each source partition */
        struct {
            const cf_value *part, *off;
        } slot[PUT_SLOTS];
        size_t ns = 0;
        for (cf_ack *x = first; x; x = x->next)
            for (size_t k = 0; k < x->n_offs; k++) {
                const cf_value *part = x->offs[k].part;
                size_t i = 0;
                while (i < ns && !same_partition(slot[i].part, part)) i++;
                if (i == ns && ns == PUT_SLOTS) { /* many partitions: put what we have, in order */
                    for (size_t j = 0; j < ns; j++)
                        cf_offset_store_put(c->w->offsets, c->name, slot[j].part, slot[j].off);
                    ns = i = 0;
                }
                if (i == ns) ns++;
                slot[i].part = part; /* the latest key form, as a put of each would leave it */
                slot[i].off = x->offs[k].off;
            }
        for (size_t j = 0; j < ns; j++) cf_offset_store_put(c->w->offsets, c->name, slot[j].part, slot[j].off);
        /* 3. tell the plugin, recycle */
        void (*commit_record)(void *, const cf_record *) = c->plugin->u.source.commit_record;
        while (first) {
            cf_ack *x = first;
            first = x->next;
            if (commit_record)
                for (size_t k = 0; k < x->n_recs; k++) commit_record(s->plugin_task, x->recs[k]);
            src_group_release(s, x);
        }
        atomic_fetch_add(&t->m.records_out, n);
    }
    atomic_store(&t->m.lag, (uint_fast64_t)s->inflight);
    if (undelivered)
        return cf_err_set(err, CF_ERR_TRANSPORT,
                          "a record of connector %s task %d was not delivered; offsets stop before it", c->name, t->id);
    return CF_OK;
}

/* Note a record's source partition and offset in the open group: the
 * offset replaces the one of the same partition (the last one counts).
 * move: take the record's values (it is freed after conversion and nothing
 * reads them); else copies (a transform chain takes the record). */
static void src_group_note(srcstate *s, cf_record *rec, bool move) {
    cf_ack *g = s->open;
    g->n_records++;
    s->inflight++;
    if (s->t->c->plugin->u.source.commit_record) {
        if (g->n_recs == g->cap_recs) {
            g->cap_recs = g->cap_recs ? g->cap_recs * 2 : 64;
            g->recs = cf_xrealloc(g->recs, g->cap_recs * sizeof *g->recs);
        }
        cf_record *r = cf_record_new();
        cf_record_set_source(r, cf_value_clone(rec->source_partition), cf_value_clone(rec->source_offset));
        cf_record_set_topic(r, rec->topic);
        g->recs[g->n_recs++] = r;
    }
    cf_value *part = rec->source_partition, *off = rec->source_offset;
    if (!part && !off) return;
    cf_ack_off *e = NULL;
    /* runs of one partition are the rule; look back a few entries only (a
     * partition seen again later gets a second entry, put after the first;
     * updating an earlier entry is safe: partitions are independent) */
    for (size_t k = g->n_offs; k > 0 && k + 8 > g->n_offs; k--)
        if (same_partition(g->offs[k - 1].part, part)) {
            e = &g->offs[k - 1];
            break;
        }
    if (!e) {
        if (g->n_offs == g->cap_offs) {
            g->cap_offs = g->cap_offs ? g->cap_offs * 2 : 4;
            g->offs = cf_xrealloc(g->offs, g->cap_offs * sizeof *g->offs);
        }
        e = &g->offs[g->n_offs++];
        e->part = move ? part : cf_value_clone(part);
        if (move) rec->source_partition = NULL;
        e->off = NULL;
    }
    cf_value_destroy(e->off);
    e->off = move ? off : cf_value_clone(off);
    if (move) rec->source_offset = NULL;
}

/* A successful commit that took us microseconds, in the task's metrics. */
static void count_commit(task *t, int64_t us) {
    atomic_fetch_add(&t->m.commits, 1);
    atomic_fetch_add(&t->m.commit_us_sum, (uint_fast64_t)us);
    atomic_store(&t->m.commit_us_last, (uint_fast64_t)us);
}

static cf_code src_flush_offsets(srcstate *s, cf_err *err) {
    task *t = s->t;
    int64_t t0 = cf_now_us();
    cf_code rc = cf_offset_store_flush(t->c->w->offsets, err);
    int64_t us = cf_now_us() - t0;
    if (rc) {
        atomic_fetch_add(&t->m.commit_failures, 1);
        return rc;
    }
    count_commit(t, us);
    s->last_flush_us = cf_now_us();
    return CF_OK;
}

/* Free what a message on the stack holds: its headers (topic, key and
 * value are borrowed). Per record: no more than that. */
static void msg_release(cf_msg *m) {
    if (!m->headers) return;
    m->topic = m->key = m->value = NULL;
    cf_msg_clear(m);
}

/* Retry a send that found the transport's queue full: serve acknowledgements
 * (they make room) for up to *backoff ms. Room before that is flow control
 * (the producer outpaces the broker): no log line, no step. A wait that ran
 * its full time is a stall (broker slow or unreachable): one log line per
 * such backoff step, and the next wait doubles (up to 30 s; an
 * acknowledgement still ends it at once). */
static void src_backoff(srcstate *s, int *backoff, int *step) {
    task *t = s->t;
    int64_t t0 = cf_now_us();
    s->out->serve(s->out->state, *backoff);
    src_commit_acked(s, NULL);
    if (cf_now_us() - t0 < (int64_t)*backoff * 900) return; /* room again */
    (*step)++;
    if (*backoff < 30000) *backoff *= 2;
    CF_WARN(COMP,
            "connector %s task %d: producer queue full (broker slow or unreachable); %zu records in flight, "
            "retrying in %d ms (step %d)",
            t->c->name, t->id, s->inflight, *backoff, *step);
}

/* Send the batched messages (in poll order, before any other message of the
 * task) and free their records, whatever the outcome. */
static cf_code src_send_batch(srcstate *s, cf_err *err) {
    if (!s->bn) return CF_OK;
    task *t = s->t;
    cf_ack *a = s->open;
    atomic_fetch_add(&a->pending, (int)s->bn); /* their acknowledgements */
    size_t done = 0, bytes = 0;
    int backoff = 100, step = 0;
    cf_code rc;
    for (;;) {
        size_t sent = 0;
        rc = s->out->send_batch(s->out->state, s->bmsg + done, s->bn - done, a, &sent, err);
        for (size_t i = done; i < done + sent; i++) bytes += s->bmsg[i].key_len + s->bmsg[i].value_len;
        done += sent;
        if (rc != CF_ERR_AGAIN || atomic_load(&t->stop)) break;
        src_backoff(s, &backoff, &step);
    }
    if (rc == CF_ERR_AGAIN) /* stopping: these records are polled again next run */
        for (size_t i = done; i < s->bn; i++) ack_withdraw(a);
    for (size_t i = 0; i < s->bn; i++) cf_record_pool_put(t->sctx.pool, s->brec[i]);
    s->bn = 0;
    cf_arena_reset(s->barena);
    if (rc == CF_ERR_AGAIN) return CF_OK;
    if (rc) return rc;
    if (step) CF_INFO(COMP, "connector %s task %d: producer accepts records again", t->c->name, t->id);
    atomic_fetch_add(&t->m.bytes_out, bytes);
    return CF_OK;
}

/* The bytes of a batched message must outlive the next conversion: a
 * converter's own output (not the value's bytes) is copied to the arena. */
static char *batch_keep(srcstate *s, const cf_value *v, const char *data, size_t len) {
    if (!data || (v && (v->type == CF_STRING || v->type == CF_BYTES) && data == v->u.s.ptr)) return (char *)data;
    return cf_arena_strndup(s->barena, data, len);
}

/* Convert and send one record (taken). */
static cf_code src_handle(srcstate *s, cf_record *rec, cf_err *err) {
    task *t = s->t;
    conn *c = t->c;
    cf_worker *w = c->w;
    /* offsets travel with the group even if a transform drops or rewrites
     * the record */
    cf_ack *a = s->open;
    src_group_note(s, rec, !t->chain);

    cf_record *r = NULL;
    cf_err pe;
    cf_err_clear(&pe);
    if (apply_transforms(t, rec, &r, &pe)) {
        return report_error(t, CF_STAGE_TRANSFORMATION, "transforms", NULL, NULL, &pe, err);
    }
    if (!r) return CF_OK; /* filtered out: counts as done */
    if (w->mode == MODE_DIRECT && !w->has_file_out) {
        cf_code rc = direct_send(t, r, a, err);
        cf_record_pool_put(t->sctx.pool, r);
        return rc;
    }
    /* the message borrows the record's topic and the converters' bytes
     * (often the record's own: no copy); the transport copies what it keeps */
    cf_msg msg = {.topic = r->topic, .offset = -1}, *m = &msg;
    m->partition = r->partition;
    m->timestamp = r->timestamp;
    m->ts_type = r->ts_type;
    const char *data = NULL;
    size_t len = 0;
    if (cf_converter_from_connect_view(t->kconv, r->topic, r->key_schema, r->key, &data, &len, &pe)) {
        cf_code rc = report_error(t, CF_STAGE_KEY_CONVERTER, conv_class(t->kconv), NULL, r, &pe, err);
        msg_release(m), cf_record_pool_put(t->sctx.pool, r);
        return rc;
    }
    m->key = (char *)data; /* not freed: msg_release */
    m->key_len = data ? len : 0;
    data = NULL;
    if (cf_converter_from_connect_view(t->vconv, r->topic, r->value_schema, r->value, &data, &len, &pe)) {
        cf_code rc = report_error(t, CF_STAGE_VALUE_CONVERTER, conv_class(t->vconv), NULL, r, &pe, err);
        msg_release(m), cf_record_pool_put(t->sctx.pool, r);
        return rc;
    }
    m->value = (char *)data;
    m->value_len = data ? len : 0;
    if (s->bmsg && !r->n_headers && m->ts_type == CF_TS_NONE) {
        /* sent with the rest of the poll batch (src_send_batch) */
        m->key = batch_keep(s, r->key, m->key, m->key_len);
        m->value = batch_keep(s, r->value, m->value, m->value_len);
        s->bmsg[s->bn] = *m;
        s->brec[s->bn++] = r;
        return CF_OK;
    }
    cf_code rc = src_send_batch(s, err); /* what came before goes first */
    if (rc) {
        cf_record_pool_put(t->sctx.pool, r);
        return rc;
    }
    headers_to_msg(r, m);
    size_t bytes = m->key_len + m->value_len;
    int backoff = 100, step = 0;
    atomic_fetch_add(&a->pending, 1); /* this message's acknowledgement */
    while ((rc = s->out->send(s->out->state, m, a, err)) == CF_ERR_AGAIN) {
        if (atomic_load(&t->stop)) break;
        src_backoff(s, &backoff, &step);
    }
    msg_release(m);
    cf_record_pool_put(t->sctx.pool, r);
    if (rc == CF_ERR_AGAIN) { /* stopping: the record is re-polled next run */
        ack_withdraw(a);
        return CF_OK;
    }
    if (rc) {
        cf_ack_done(a, false);
        return rc;
    }
    if (step) CF_INFO(COMP, "connector %s task %d: producer accepts records again", c->name, t->id);
    atomic_fetch_add(&t->m.bytes_out, bytes);
    return CF_OK;
}

static void *source_main(void *arg) {
    task *t = arg;
    conn *c = t->c;
    cf_worker *w = c->w;
    cf_err err;
    cf_err_clear(&err);
    srcstate s = {.t = t};
    cf_msg_out out = {0};
    bool has_out = false, eof = false, failed = false;
    bool direct = w->mode == MODE_DIRECT && !w->has_file_out;

    if (task_setup(t, !direct, &err)) {
        task_fail(t, &err);
        goto out;
    }
    if (w->has_file_out) {
        s.out = &w->file_out;
    } else if (!direct) {
        char cid[300];
        snprintf(cid, sizeof cid, "%s-%s-%d", cf_config_string(w->cfg, "client.id"), c->name, t->id);
        if (cf_worker_kafka_out_new(w, cid, &out, &err)) {
            task_fail(t, &err);
            goto out;
        }
        has_out = true;
        s.out = &out;
    }
    if (s.out && s.out->send_batch) {
        s.bmsg = cf_xcalloc(SOURCE_BATCH, sizeof *s.bmsg);
        s.brec = cf_xcalloc(SOURCE_BATCH, sizeof *s.brec);
        s.barena = cf_arena_new(0);
    }
    /* a poll batch's worth: every record of a batch comes back before the next poll */
    t->sctx.pool = cf_record_pool_new(SOURCE_BATCH);
    if (c->plugin->u.source.start(c->cfg, &t->sctx, &s.plugin_task, &err)) {
        task_fail(t, &err);
        goto out;
    }
    atomic_store(&t->state, atomic_load(&c->paused) ? CF_STATE_PAUSED : CF_STATE_RUNNING);
    CF_INFO(COMP, "connector %s task %d started (source)", c->name, t->id);
    s.last_flush_us = cf_now_us();
    cf_record *recs[SOURCE_BATCH];
    int idle_ms = 1, wait_step = 0, wait_log_s = 1, commit_log_s = 1;
    int64_t next_wait_log = 0, next_commit_log = 0, wait_start = 0;
    while (!atomic_load(&t->stop)) {
        if (atomic_load(&c->paused)) {
            atomic_store(&t->state, CF_STATE_PAUSED);
            if (s.out) s.out->serve(s.out->state, 100);
            else sleep_ms(100);
            if (src_commit_acked(&s, &err)) { failed = true; break; }
            continue;
        }
        atomic_store(&t->state, CF_STATE_RUNNING);
        if (s.inflight >= MAX_INFLIGHT) {
            /* back-pressure: wait for acknowledgements. Short waits are the
             * normal pace of a source faster than its transport: a line per
             * backoff step only once a wait lasts a second */
            int64_t now = cf_now_us();
            if (!wait_start) {
                wait_start = now;
                next_wait_log = now + 1000000;
            }
            if (now >= next_wait_log) {
                wait_step++;
                CF_WARN(COMP, "connector %s task %d: %zu records wait for acknowledgement since %lld ms (transport "
                              "slow or unreachable); polling paused, step %d, next report in %d s",
                        c->name, t->id, s.inflight, (long long)((now - wait_start) / 1000), wait_step, wait_log_s);
                next_wait_log = now + (int64_t)wait_log_s * 1000000;
                if (wait_log_s < 60) wait_log_s *= 2;
            }
            if (s.out) s.out->serve(s.out->state, 50);
            else sleep_ms(5);
            if (src_commit_acked(&s, &err)) { failed = true; break; }
            continue;
        }
        if (wait_start) {
            if (wait_step)
                CF_INFO(COMP, "connector %s task %d: acknowledgements flow again after %lld ms; polling resumed",
                        c->name, t->id, (long long)((cf_now_us() - wait_start) / 1000));
            wait_start = 0;
            wait_step = 0;
            wait_log_s = 1;
        }
        size_t n = 0;
        cf_code rc = c->plugin->u.source.poll(s.plugin_task, recs, SOURCE_BATCH, &n, &err);
        if (n) src_group_open(&s);
        for (size_t i = 0; i < n; i++) {
            if (!failed && src_handle(&s, recs[i], &err)) failed = true;
            else if (failed) cf_record_pool_put(t->sctx.pool, recs[i]);
        }
        if (src_send_batch(&s, failed ? NULL : &err)) failed = true;
        atomic_fetch_add(&t->m.records_in, n);
        src_group_close(&s);
        if (failed) break;
        if (rc == CF_ERR_EOF) {
            eof = true;
            break;
        }
        if (rc == CF_ERR_AGAIN) {
            CF_WARN(COMP, "connector %s task %d: poll: %s; retrying in %d ms", c->name, t->id, err.message,
                    idle_ms < 100 ? 100 : idle_ms);
            sleep_ms(idle_ms < 100 ? 100 : idle_ms);
            cf_err_clear(&err);
            continue;
        }
        if (rc) {
            cf_err_where(&err, "connector %s task %d, poll", c->name, t->id);
            failed = true;
            break;
        }
        if (s.out) s.out->serve(s.out->state, 0);
        if (src_commit_acked(&s, &err)) { failed = true; break; }
        if (n == 0) {
            if (s.out) s.out->serve(s.out->state, idle_ms);
            else sleep_ms(idle_ms);
            if (idle_ms < 100) idle_ms *= 2;
        } else {
            idle_ms = 1;
        }
        if (cf_now_us() - s.last_flush_us >= w->flush_interval_ms * 1000) {
            cf_err fe;
            if (src_flush_offsets(&s, &fe)) {
                /* retried at every interval; reported once per backoff step */
                s.last_flush_us = cf_now_us();
                if (cf_now_us() >= next_commit_log) {
                    CF_WARN(COMP, "connector %s task %d: %s: %s; retrying, next report in %d s", c->name, t->id,
                            fe.message, fe.detail, commit_log_s);
                    next_commit_log = cf_now_us() + (int64_t)commit_log_s * 1000000;
                    if (commit_log_s < 60) commit_log_s *= 2;
                }
            } else if (commit_log_s > 1) {
                CF_INFO(COMP, "connector %s task %d: offsets stored again", c->name, t->id);
                commit_log_s = 1;
                next_commit_log = 0;
            }
        }
    }
    /* Stop: wait (bounded) for what was sent, store what was acknowledged. */
    {
        int64_t deadline = eof ? INT64_MAX : cf_now_us() + w->shutdown_timeout_ms * 1000;
        bool bounded_stop = false;
        cf_err e2;
        while (s.head && cf_now_us() < deadline && !failed && !head_withdrawn(&s)) {
            if (s.out) s.out->flush(s.out->state, 100, NULL);
            else sleep_ms(5);
            if (src_commit_acked(&s, &e2)) {
                err = e2;
                failed = true;
            }
            if (!bounded_stop && atomic_load(&t->stop)) {
                /* asked to stop while draining a bounded input: the normal timeout applies */
                bounded_stop = true;
                int64_t d2 = cf_now_us() + w->shutdown_timeout_ms * 1000;
                if (d2 < deadline) deadline = d2;
            }
        }
        if (s.head && !failed)
            CF_WARN(COMP, "connector %s task %d: %zu records not acknowledged at stop; their offsets are not "
                          "stored (they will be read again)", c->name, t->id, s.inflight);
        if (src_flush_offsets(&s, &e2)) {
            if (!failed) {
                err = e2;
                failed = true;
            } else {
                cf_log_err(CF_LOG_ERROR, COMP, &e2);
            }
        }
    }
    c->plugin->u.source.stop(s.plugin_task);
    if (failed) task_fail(t, &err);
    else atomic_store(&t->state, eof ? CF_STATE_FINISHED : CF_STATE_UNASSIGNED);
    CF_INFO(COMP, "connector %s task %d stopped (%s)", c->name, t->id, cf_state_name(atomic_load(&t->state)));
out:
    /* The output first: destroying (or, for the shared record file, flushing)
     * it completes or reports as undelivered every ack it still holds.
     * Waiting on those acks with the output no longer served would wait
     * forever (seen: a source task failing with --output). */
    if (has_out) out.destroy(out.state);
    else if (s.out) s.out->flush(s.out->state, 1000, NULL); /* the shared record file: complete its acks */
    if (direct && s.head) direct_withdraw(t);
    while (s.head) {
        cf_ack *a = s.head;
        s.head = a->next;
        /* a direct sink may still hold it (put, to be flushed): wait until
         * nobody references it */
        while (atomic_load(&a->pending) > 0) sleep_ms(1);
        ack_free(a);
    }
    src_spare_free(&s);
    free(s.bmsg);
    free(s.brec);
    cf_arena_destroy(s.barena);
    cf_record_pool_destroy(t->sctx.pool);
    t->sctx.pool = NULL;
    task_teardown(t);
    return NULL;
}

/* ---------------- sink task ---------------- */

typedef struct sinkstate {
    task *t;
    void *plugin_task;
    cf_msg_in *in;
    cf_tp_pos *pos;
    size_t npos, cappos;
    bool uncommitted;
    cf_ack **acks; /* direct: acknowledged after the next flush */
    size_t nacks, capacks;
    int64_t last_commit_us;
    bool failed;
    cf_err err;
} sinkstate;

static void pos_update(sinkstate *s, const char *topic, int32_t part, int64_t next) {
    for (size_t i = 0; i < s->npos; i++)
        if (s->pos[i].partition == part && strcmp(s->pos[i].topic, topic) == 0) {
            s->pos[i].next_offset = next;
            s->uncommitted = true;
            return;
        }
    if (s->npos == s->cappos) {
        s->cappos = s->cappos ? s->cappos * 2 : 8;
        s->pos = cf_xrealloc(s->pos, s->cappos * sizeof *s->pos);
    }
    s->pos[s->npos++] = (cf_tp_pos){cf_xstrdup(topic), part, next};
    s->uncommitted = true;
}

/* flush, then commit positions / acknowledge direct records */
static cf_code sink_commit(sinkstate *s, cf_err *err) {
    task *t = s->t;
    if (!s->uncommitted && !s->nacks) return CF_OK;
    int64_t t0 = cf_now_us();
    cf_code rc = t->c->plugin->u.sink.flush(s->plugin_task, err);
    if (!rc && s->in && s->npos) {
        cf_err ce;
        if (s->in->commit(s->in->state, s->pos, s->npos, &ce)) {
            /* The data is flushed; only the positions are not stored. As
             * Connect, log it and commit again next time (a restart in
             * between reads some records twice, never loses one). */
            atomic_fetch_add(&t->m.commit_failures, 1);
            CF_WARN(COMP, "connector %s task %d: %s: %s; retried at the next commit", t->c->name, t->id, ce.message,
                    ce.detail);
            s->last_commit_us = cf_now_us();
            return CF_OK;
        }
    }
    int64_t us = cf_now_us() - t0;
    if (rc) {
        atomic_fetch_add(&t->m.commit_failures, 1);
        for (size_t i = 0; i < s->nacks; i++) cf_ack_done(s->acks[i], false);
        s->nacks = 0;
        return rc;
    }
    for (size_t i = 0; i < s->nacks; i++) cf_ack_done(s->acks[i], true);
    s->nacks = 0;
    s->uncommitted = false;
    count_commit(t, us);
    s->last_commit_us = cf_now_us();
    return CF_OK;
}

static void on_revoke(void *arg, const cf_tp_pos *revoked, size_t n) {
    sinkstate *s = arg;
    if (s->failed) return;
    cf_err e;
    if (sink_commit(s, &e)) {
        s->failed = true;
        s->err = e;
        return;
    }
    /* committed: the revoked partitions' positions are their new owner's now */
    size_t j = 0;
    for (size_t i = 0; i < s->npos; i++) {
        bool gone = false;
        for (size_t k = 0; k < n && !gone; k++)
            gone = s->pos[i].partition == revoked[k].partition && strcmp(s->pos[i].topic, revoked[k].topic) == 0;
        if (gone) free(s->pos[i].topic);
        else s->pos[j++] = s->pos[i];
    }
    s->npos = j;
}

/* put with retries of CF_ERR_AGAIN (Connect's RetriableException) */
static cf_code sink_put(sinkstate *s, cf_record **recs, size_t n, cf_err *err) {
    task *t = s->t;
    int backoff = 100;
    for (;;) {
        cf_code rc = t->c->plugin->u.sink.put(s->plugin_task, recs, n, err);
        if (rc != CF_ERR_AGAIN) return rc;
        if (atomic_load(&t->stop)) return rc;
        CF_WARN(COMP, "connector %s task %d: put: %s; retrying in %d ms", t->c->name, t->id, err ? err->message : "",
                backoff);
        sleep_ms(backoff);
        if (backoff < 30000) backoff *= 2;
    }
}

static void free_recs(cf_record **r, size_t n) {
    for (size_t i = 0; i < n; i++) cf_record_destroy(r[i]);
}

static void *sink_main(void *arg) {
    task *t = arg;
    conn *c = t->c;
    cf_worker *w = c->w;
    sinkstate s = {.t = t};
    cf_err_clear(&s.err);
    cf_msg_in in = {0};
    bool has_in = false, eof = false, in_pause = false;
    bool direct = w->mode == MODE_DIRECT && !w->input_file;
    cf_msg *msgs[SINK_BATCH], *raws[SINK_BATCH], *stash[SINK_BATCH];
    size_t nmsgs = 0, nstash = 0;
    cf_record *recs[SINK_BATCH];
    qitem items[SINK_BATCH];

    if (task_setup(t, !direct, &s.err)) {
        s.failed = true;
        goto out;
    }
    if (w->input_file) {
        if (t->id == 0) {
            if (cf_worker_file_in_new(w->input_file, &in, &s.err)) {
                s.failed = true;
                goto out;
            }
            has_in = true;
        } else {
            eof = true; /* one reader for a file */
        }
    } else if (!direct) {
        char group[512];
        snprintf(group, sizeof group, "connect-%s", c->name);
        if (cf_worker_kafka_in_new(w, group, (const char *const *)c->topics, c->n_topics,
                                   cf_config_string(c->cfg, "topics.regex"), &in, &s.err)) {
            s.failed = true;
            goto out;
        }
        has_in = true;
    }
    if (has_in) {
        s.in = &in;
        in.on_revoke = on_revoke;
        in.revoke_arg = &s;
        cf_worker_kafka_in_bind(&in);
    }
    if (c->plugin->u.sink.start(c->cfg, &t->kctx, &s.plugin_task, &s.err)) {
        s.failed = true;
        goto out;
    }
    atomic_store(&t->state, CF_STATE_RUNNING);
    CF_INFO(COMP, "connector %s task %d started (sink%s)", c->name, t->id,
            direct ? ", direct" : w->input_file ? ", record file" : "");
    s.last_commit_us = cf_now_us();
    while (!eof && !s.failed) {
        bool stopping = atomic_load(&t->stop);
        bool want_pause = atomic_load(&c->paused) && !stopping;
        if (want_pause != in_pause && has_in && in.pause) {
            /* stay in the group while paused: stop fetching, keep polling */
            in.pause(in.state, want_pause);
            in_pause = want_pause;
        }
        if (want_pause) {
            atomic_store(&t->state, CF_STATE_PAUSED);
            if (has_in && in.pause) {
                /* records fetched before the pause took effect are kept for after it */
                size_t n = 0;
                if (nstash < SINK_BATCH) in.poll(in.state, stash + nstash, SINK_BATCH - nstash, &n, 100, &s.err);
                else sleep_ms(100);
                nstash += n;
            } else {
                sleep_ms(100);
            }
            /* what was put before the pause is still flushed and committed
             * on the interval (as a paused Connect sink task does): its
             * sources wait for that */
            if (cf_now_us() - s.last_commit_us >= w->flush_interval_ms * 1000 && sink_commit(&s, &s.err)) {
                s.failed = true;
                break;
            }
            continue;
        }
        atomic_store(&t->state, CF_STATE_RUNNING);
        size_t nrec = 0;
        if (direct) {
            size_t n = dq_pop(&t->q, items, SINK_BATCH, stopping ? 0 : 100);
            if (n == 0 && (stopping || (atomic_load(&w->draining) && !w->want_rest))) {
                if (dq_len(&t->q) == 0) {
                    eof = !stopping;
                    break;
                }
            }
            for (size_t i = 0; i < n; i++) {
                cf_record *r = items[i].rec;
                if (r->partition < 0) r->partition = 0;
                r->offset = t->direct_offset++;
                cf_value_destroy(r->source_partition), cf_value_destroy(r->source_offset);
                r->source_partition = r->source_offset = NULL;
                atomic_fetch_add(&t->m.records_in, 1);
                if (s.nacks == s.capacks) {
                    s.capacks = s.capacks ? s.capacks * 2 : 1024;
                    s.acks = cf_xrealloc(s.acks, s.capacks * sizeof *s.acks);
                }
                s.acks[s.nacks++] = items[i].ack;
                cf_record *o = NULL;
                cf_err pe;
                if (apply_transforms(t, r, &o, &pe)) {
                    if (report_error(t, CF_STAGE_TRANSFORMATION, "transforms", NULL, NULL, &pe, &s.err)) {
                        s.failed = true;
                    }
                    continue;
                }
                if (o) recs[nrec++] = o;
            }
            if (s.failed) {
                free_recs(recs, nrec);
                break;
            }
        } else {
            if (stopping) break;
            size_t n = 0;
            cf_code rc = CF_OK;
            if (nstash) {
                memcpy(msgs, stash, nstash * sizeof *msgs);
                n = nstash;
                nstash = 0;
            } else {
                rc = in.poll(in.state, msgs, SINK_BATCH, &n, 100, &s.err);
            }
            if (s.failed) { /* a commit in a rebalance failed */
                for (size_t i = 0; i < n; i++) cf_msg_destroy(msgs[i]);
                break;
            }
            if (rc == CF_ERR_EOF) eof = true;
            else if (rc == CF_ERR_CORRUPT) {
                /* a damaged input unit (bad record-file line): errors.tolerance decides */
                cf_err pe = s.err;
                cf_err_clear(&s.err);
                if (report_error(t, CF_STAGE_KAFKA_CONSUME, "recordfile", NULL, NULL, &pe, &s.err)) s.failed = true;
            } else if (rc == CF_ERR_AGAIN || rc == CF_ERR_TRANSPORT) {
                CF_WARN(COMP, "connector %s task %d: reading: %s; retrying", c->name, t->id, s.err.message);
                sleep_ms(200);
            } else if (rc) {
                s.failed = true;
            }
            for (size_t i = 0; i < n && !s.failed; i++) {
                cf_msg *m = msgs[i];
                atomic_fetch_add(&t->m.records_in, 1);
                atomic_fetch_add(&t->m.bytes_in, m->key_len + m->value_len);
                cf_schema *ks = NULL, *vs = NULL;
                cf_value *kv = NULL, *vv = NULL;
                cf_err pe;
                cf_err_clear(&pe);
                if (cf_converter_to_connect(t->kconv, m->topic, m->key, m->key_len, &ks, &kv, &pe)) {
                    if (report_error(t, CF_STAGE_KEY_CONVERTER, conv_class(t->kconv), m, NULL, &pe, &s.err))
                        s.failed = true;
                } else if (cf_converter_to_connect(t->vconv, m->topic, m->value, m->value_len, &vs, &vv, &pe)) {
                    cf_schema_unref(ks), cf_value_destroy(kv);
                    if (report_error(t, CF_STAGE_VALUE_CONVERTER, conv_class(t->vconv), m, NULL, &pe, &s.err))
                        s.failed = true;
                } else {
                    cf_record *r = cf_record_new();
                    cf_record_set_topic(r, m->topic);
                    r->partition = m->partition;
                    r->offset = m->offset;
                    r->timestamp = m->timestamp;
                    r->ts_type = m->ts_type;
                    cf_record_set_key(r, ks, kv);
                    cf_record_set_value(r, vs, vv);
                    headers_to_record(m, r);
                    cf_record *o = NULL;
                    if (apply_transforms(t, r, &o, &pe)) {
                        if (report_error(t, CF_STAGE_TRANSFORMATION, "transforms", m, NULL, &pe, &s.err))
                            s.failed = true;
                    } else if (o) {
                        raws[nrec] = m;
                        recs[nrec++] = o;
                    }
                }
                if (!s.failed && m->topic && m->offset >= 0) pos_update(&s, m->topic, m->partition, m->offset + 1);
            }
            nmsgs = n;
            if (s.failed) {
                for (size_t i = 0; i < n; i++) cf_msg_destroy(msgs[i]);
                free_recs(recs, nrec);
                break;
            }
        }
        if (nrec) {
            t->cur_recs = recs;
            t->cur_raws = raws;
            t->cur_n = direct ? 0 : nrec;
            cf_code rc = sink_put(&s, recs, nrec, &s.err);
            t->cur_n = 0;
            free_recs(recs, nrec);
            for (size_t i = 0; i < nmsgs; i++) cf_msg_destroy(msgs[i]);
            nmsgs = 0;
            if (rc) {
                if (!s.err.where[0]) cf_err_where(&s.err, "connector %s task %d, put", c->name, t->id);
                s.failed = true;
                break;
            }
            atomic_fetch_add(&t->m.records_out, nrec);
            s.uncommitted = true; /* records put since the last flush */
        }
        for (size_t i = 0; i < nmsgs; i++) cf_msg_destroy(msgs[i]);
        nmsgs = 0;
        /* direct: flush when the queue ran dry or enough is waiting, so sources can commit soon */
        bool due = cf_now_us() - s.last_commit_us >= w->flush_interval_ms * 1000;
        if (direct && s.nacks && (dq_len(&t->q) == 0 || s.nacks >= 5000)) due = true;
        if (due && sink_commit(&s, &s.err)) {
            s.failed = true;
            break;
        }
        atomic_store(&t->m.lag, direct                  ? (uint_fast64_t)dq_len(&t->q)
                                : (has_in && in.lag) ? (uint_fast64_t)in.lag(in.state)
                                                     : 0);
    }
    if (!s.failed) {
        if (sink_commit(&s, &s.err)) s.failed = true;
    }
    /* leave the group before the task is stopped: closing the consumer
     * revokes, and there is nothing left to flush then */
    if (has_in) {
        in.on_revoke = NULL;
        in.destroy(in.state);
        has_in = false;
    }
    c->plugin->u.sink.stop(s.plugin_task);
out:
    for (size_t i = 0; i < nstash; i++) cf_msg_destroy(stash[i]); /* not put, not committed: read again */
    for (size_t i = 0; i < s.nacks; i++) cf_ack_done(s.acks[i], false);
    free(s.acks);
    if (direct) dq_fail_all(&t->q);
    if (s.failed) task_fail(t, &s.err);
    else atomic_store(&t->state, eof ? CF_STATE_FINISHED : CF_STATE_UNASSIGNED);
    CF_INFO(COMP, "connector %s task %d stopped (%s)", c->name, t->id, cf_state_name(atomic_load(&t->state)));
    if (has_in) in.destroy(in.state);
    for (size_t i = 0; i < s.npos; i++) free(s.pos[i].topic);
    free(s.pos);
    task_teardown(t);
    return NULL;
}

/* ---------------- connectors: create, start, stop ---------------- */

static void conn_free(conn *c) {
    for (int i = 0; i < c->ntasks; i++) {
        task *t = c->tasks[i];
        dq_destroy(&t->q);
        pthread_mutex_destroy(&t->mu);
        free(t);
    }
    free(c->tasks);
    for (size_t i = 0; i < c->n_topics; i++) free(c->topics[i]);
    free(c->topics);
    if (c->has_re) regfree(&c->topics_re);
    free(c->name);
    free(c->dlq_topic);
    free(c->key_conv);
    free(c->val_conv);
    cf_props_destroy(c->key_conv_props);
    cf_props_destroy(c->val_conv_props);
    cf_props_destroy(c->props);
    cf_config_destroy(c->cfg);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->life);
    free(c);
}

static void conn_unref(conn *c) {
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) conn_free(c);
}

/* Converter name and settings: the connector's own when it names one, else
 * the worker's (as Connect). */
static void pick_converter(cf_worker *w, conn *c, const char *key, char **name, cf_props **props) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s.", key);
    const char *cn = cf_props_get(c->props, key);
    if (cn && *cn) {
        *name = cf_xstrdup(cn);
        *props = cf_props_subset(c->props, prefix, true);
    } else {
        *name = cf_xstrdup(cf_config_string(w->cfg, key));
        *props = cf_props_subset(w->props, prefix, true);
    }
}

static cf_code conn_create(cf_worker *w, const char *name, const cf_props *config, conn **out, cf_err *err) {
    cf_props *p = cf_props_clone(config);
    if (name && *name) {
        const char *pn = cf_props_get(p, "name");
        if (pn && strcmp(pn, name) != 0) {
            cf_props_destroy(p);
            cf_err_set(err, CF_ERR_CONFIG, "connector name \"%s\" does not match the name \"%s\" in its config",
                       name, pn);
            cf_err_hint(err, "Use the same name in the URL and the configuration.");
            return CF_ERR_CONFIG;
        }
        cf_props_set(p, "name", name);
    }
    const char *nm = cf_props_get(p, "name");
    if (!nm || !*nm) {
        cf_props_destroy(p);
        cf_err_set(err, CF_ERR_CONFIG, "connector configuration has no \"name\"");
        cf_err_hint(err, "Add \"name\": \"<connector name>\".");
        return CF_ERR_CONFIG;
    }
    const char *cls = cf_props_get(p, "connector.class");
    if (!cls || !*cls) {
        cf_err_set(err, CF_ERR_CONFIG, "connector \"%s\" has no \"connector.class\"", nm);
        cf_err_hint(err, "Name the connector plugin, e.g. \"connector.class\": \"files\"; "
                         "GET /connector-plugins or `cdcflow run --help` lists them.");
        cf_props_destroy(p);
        return CF_ERR_CONFIG;
    }
    const cf_connector_plugin *pl = find_plugin(w, cls);
    if (!pl) {
        cf_err_set(err, CF_ERR_NOT_FOUND, "unknown connector.class \"%s\" in connector \"%s\"", cls, nm);
        cf_buf b = CF_BUF_INIT;
        for (const cf_connector_plugin *const *q = w->extra_plugins; q && *q; q++)
            cf_buf_printf(&b, "%s%s", b.len ? ", " : "", (*q)->name);
        for (const cf_connector_plugin *const *q = cf_connector_plugins(); *q; q++)
            cf_buf_printf(&b, "%s%s", b.len ? ", " : "", (*q)->name);
        cf_err_detail(err, "known connectors: %s", b.len ? b.data : "(none)");
        cf_buf_free(&b);
        cf_props_destroy(p);
        return CF_ERR_NOT_FOUND;
    }
    bool is_sink = pl->kind == CF_CONNECTOR_SINK;
    const cf_cfg_table *tables[3];
    size_t nt = 0;
    tables[nt++] = &cf_connector_common_table;
    if (is_sink) tables[nt++] = &cf_sink_common_table;
    if (pl->config) tables[nt++] = pl->config;
    cf_config *cfg = NULL;
    char *problems = NULL;
    if (cf_config_parse(tables, nt, p, &cfg, &problems, err) ||
        cf_connector_config_check(cfg, is_sink, &problems, err)) {
        if (err) {
            char first[512];
            snprintf(first, sizeof first, "%s", err->message);
            cf_err_set(err, CF_ERR_CONFIG, "invalid configuration of connector \"%s\"", nm);
            cf_err_detail(err, "%s", problems ? problems : first);
            cf_err_hint(err, "`cdcflow validate` checks a configuration without running it.");
        }
        free(problems);
        cf_config_destroy(cfg);
        cf_props_destroy(p);
        return CF_ERR_CONFIG;
    }
    free(problems);
    conn *c = cf_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->life, NULL);
    atomic_init(&c->refs, 1);
    c->w = w;
    c->name = cf_xstrdup(nm);
    c->props = p;
    c->cfg = cfg;
    c->plugin = pl;
    c->is_sink = is_sink;
    atomic_init(&c->paused, false);
    const char *tol = cf_props_get_or(p, "errors.tolerance", "none");
    c->tolerate_all = strcasecmp(tol, "all") == 0;
    c->log_errors = strcasecmp(cf_props_get_or(p, "errors.log.enable", "false"), "true") == 0;
    c->log_messages = strcasecmp(cf_props_get_or(p, "errors.log.include.messages", "false"), "true") == 0;
    c->dlq_headers =
        strcasecmp(cf_props_get_or(p, "errors.deadletterqueue.context.headers.enable", "false"), "true") == 0;
    const char *dlq = cf_props_get(p, "errors.deadletterqueue.topic.name");
    if (dlq && *dlq) c->dlq_topic = cf_xstrdup(dlq);
    cf_code rc = CF_OK;
    if (c->dlq_topic && c->tolerate_all && !cf_config_string(w->cfg, "bootstrap.servers")) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "connector \"%s\" has a dead letter queue but the worker has no Kafka",
                        nm);
        cf_err_detail(err, "errors.deadletterqueue.topic.name=%s needs bootstrap.servers in the worker config",
                      c->dlq_topic);
        cf_err_hint(err, "Set bootstrap.servers (a broker or `embedded`), or use errors.log.enable instead.");
    }
    const char *tr = cf_props_get(p, "transforms");
    if (!rc && tr && *tr && !w->transforms) {
        rc = cf_err_set(err, CF_ERR_UNSUPPORTED, "connector \"%s\" has transforms but this runtime has none", nm);
        cf_err_hint(err, "Run it with the cdcflow command line, which provides the transforms.");
    }
    if (!rc && is_sink) {
        const char *topics = cf_props_get(p, "topics");
        if (topics) {
            size_t n = 0;
            const char *const *list = cf_config_list(cfg, "topics", &n);
            c->topics = cf_xcalloc(n ? n : 1, sizeof(char *));
            for (size_t i = 0; i < n; i++) c->topics[i] = cf_xstrdup(list[i]);
            c->n_topics = n;
        }
        const char *re = cf_props_get(p, "topics.regex");
        if (re && *re) {
            /* Java's regex matches the whole topic name: anchor it */
            size_t l = strlen(re);
            char *anch = cf_xmalloc(l + 5);
            snprintf(anch, l + 5, "^(%s)$", re);
            int e = regcomp(&c->topics_re, anch, REG_EXTENDED | REG_NOSUB);
            free(anch);
            if (e) {
                rc = cf_err_set(err, CF_ERR_CONFIG, "invalid topics.regex \"%s\" in connector \"%s\"", re, nm);
                cf_err_hint(err, "Use a POSIX extended regular expression.");
            } else {
                c->has_re = true;
            }
        }
    }
    if (rc) {
        conn_free(c);
        return rc;
    }
    pick_converter(w, c, "key.converter", &c->key_conv, &c->key_conv_props);
    pick_converter(w, c, "value.converter", &c->val_conv, &c->val_conv_props);
    int ntasks = atoi(cf_props_get_or(p, "tasks.max", "1"));
    if (ntasks < 1) ntasks = 1;
    if (is_sink && w->input_file && ntasks > 1) {
        CF_INFO(COMP, "connector %s: reading a record file, so 1 task instead of tasks.max=%d", nm, ntasks);
        ntasks = 1;
    }
    c->ntasks = ntasks;
    c->tasks = cf_xcalloc((size_t)ntasks, sizeof(task *));
    for (int i = 0; i < ntasks; i++) {
        task *t = cf_xcalloc(1, sizeof *t);
        t->c = c;
        t->id = i;
        atomic_init(&t->state, CF_STATE_UNASSIGNED);
        atomic_init(&t->stop, false);
        pthread_mutex_init(&t->mu, NULL);
        dq_init(&t->q);
        t->sctx.t = t;
        t->kctx.t = t;
        c->tasks[i] = t;
    }
    *out = c;
    return CF_OK;
}

/* Start (task_start) and join (task_join) a task's thread: with t->c->life
 * held, so that only one thread starts or joins it at a time. */
static void task_start(task *t) {
    if (t->c->is_sink) { /* a restarted sink task takes records again */
        pthread_mutex_lock(&t->q.mu);
        t->q.closed = false;
        pthread_mutex_unlock(&t->q.mu);
    }
    atomic_store(&t->stop, false);
    atomic_store(&t->state, CF_STATE_UNASSIGNED);
    t->trace[0] = 0;
    pthread_create(&t->th, NULL, t->c->is_sink ? sink_main : source_main, t);
    t->started = true;
}

static void task_join(task *t) {
    if (!t->started) return;
    atomic_store(&t->stop, true);
    pthread_cond_broadcast(&t->q.cv);
    pthread_join(t->th, NULL);
    t->started = false;
}

/* Stop every task of c (all asked first, then joined). retire: for good,
 * no restart starts them again (c was deleted or replaced). Not with w->mu
 * held: the tasks take it. */
static void conn_stop(conn *c, bool retire) {
    pthread_mutex_lock(&c->life);
    if (retire) c->retired = true;
    for (int i = 0; i < c->ntasks; i++) atomic_store(&c->tasks[i]->stop, true);
    for (int i = 0; i < c->ntasks; i++) task_join(c->tasks[i]);
    pthread_mutex_unlock(&c->life);
}

/* Register c (under w->mu). */
static void conns_append_locked(cf_worker *w, conn *c) {
    if (w->n_conns == w->cap_conns) {
        w->cap_conns = w->cap_conns ? w->cap_conns * 2 : 8;
        w->conns = cf_xrealloc(w->conns, w->cap_conns * sizeof(conn *));
    }
    w->conns[w->n_conns++] = c;
}

/* The error of a connector operation asked for while the worker stops. */
static cf_code worker_stopping(cf_err *err, const char *name, const char *done) {
    cf_err_set(err, CF_ERR_STATE, "connector %s cannot be %s: the worker is stopping", name, done);
    cf_err_detail(err, "its run ended (a stop was requested, or every bounded source finished) and it stops "
                       "every connector");
    cf_err_hint(err, "Send the request to a running worker (start `cdcflow run` again).");
    return CF_ERR_STATE;
}

/* An update, restart or delete ends (counted in w->busy since it began). */
static void op_end(cf_worker *w) {
    pthread_mutex_lock(&w->mu);
    if (--w->busy == 0) pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->mu);
}

/* From now on connector operations are refused; wait for those in flight
 * (they may still start tasks, which the caller then stops). */
static void begin_stopping(cf_worker *w) {
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    while (w->busy > 0) pthread_cond_wait(&w->idle, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

/* ---------------- worker ---------------- */

cf_code cf_worker_new(const cf_props *worker_props, const cf_worker_opts *opts, cf_worker **out, cf_err *err) {
    cf_props *p = worker_props ? cf_props_clone(worker_props) : cf_props_new();
    const cf_cfg_table *tables[] = {&cf_worker_config_table};
    cf_config *cfg = NULL;
    char *problems = NULL;
    if (cf_config_parse(tables, 1, p, &cfg, &problems, err)) {
        if (err && problems) {
            cf_err_set(err, CF_ERR_CONFIG, "invalid worker configuration");
            cf_err_detail(err, "%s", problems);
        }
        free(problems);
        cf_props_destroy(p);
        return CF_ERR_CONFIG;
    }
    free(problems);
    cf_worker *w = cf_xcalloc(1, sizeof *w);
    w->props = p;
    w->cfg = cfg;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->idle, NULL);
    atomic_init(&w->draining, false);
    atomic_init(&w->sealed, false);
    atomic_init(&w->errors, 0);
    const char *bs = cf_config_string(cfg, "bootstrap.servers");
    const char *tr = cf_config_string(cfg, "transport");
    if (tr) w->mode = strcasecmp(tr, "direct") == 0 ? MODE_DIRECT : MODE_KAFKA;
    else w->mode = bs ? MODE_KAFKA : MODE_DIRECT;
    if (opts) {
        w->extra_plugins = opts->plugins;
        w->input_file = opts->input_file ? cf_xstrdup(opts->input_file) : NULL;
        w->output_file = opts->output_file ? cf_xstrdup(opts->output_file) : NULL;
        w->want_rest = opts->rest;
        w->transforms = opts->transforms;
    }
    w->flush_interval_ms = cf_config_long(cfg, "offset.flush.interval.ms");
    w->flush_timeout_ms = cf_config_long(cfg, "offset.flush.timeout.ms");
    w->shutdown_timeout_ms = cf_config_long(cfg, "task.shutdown.graceful.timeout.ms");
    if (w->mode == MODE_KAFKA && !bs && !w->output_file) {
        cf_err_set(err, CF_ERR_CONFIG, "transport=kafka needs bootstrap.servers");
        cf_err_hint(err, "Set bootstrap.servers=host:port (or `embedded`), or transport=direct.");
        cf_worker_destroy(w);
        return CF_ERR_CONFIG;
    }
    *out = w;
    return CF_OK;
}

cf_code cf_worker_start(cf_worker *w, cf_err *err) {
    if (w->started) return CF_OK;
    const char *file = cf_config_string(w->cfg, "offset.storage.file.filename");
    cf_code rc;
    if (cf_config_string(w->cfg, "bootstrap.servers") && !w->kenv &&
        (rc = cf_kafka_env_new(w->cfg, &w->kenv, err)))
        return rc;
    if (file || w->mode == MODE_DIRECT || !cf_config_string(w->cfg, "bootstrap.servers"))
        rc = cf_offset_store_open_file(file ? file : "cdcflow.offsets.json", &w->offsets, err);
    else
        rc = cf_worker_kafka_offsets_open(w, cf_config_string(w->cfg, "offset.storage.topic"), &w->offsets, err);
    if (rc) return rc;
    if (w->output_file) {
        if ((rc = cf_worker_file_out_new(w->output_file, &w->file_out, err))) return rc;
        w->has_file_out = true;
    }
    if (w->want_rest && (rc = cf_rest_start(w, w->cfg, &w->rest, err))) return rc;
    w->started = true;
    CF_INFO(COMP, "worker started: transport=%s, offsets in %s%s%s", w->mode == MODE_DIRECT ? "direct" : "kafka",
            (file || w->mode == MODE_DIRECT || !cf_config_string(w->cfg, "bootstrap.servers")) ? "file " : "topic ",
            (file || w->mode == MODE_DIRECT || !cf_config_string(w->cfg, "bootstrap.servers"))
                ? (file ? file : "cdcflow.offsets.json")
                : cf_config_string(w->cfg, "offset.storage.topic"),
            w->input_file ? ", sinks read the record file" : w->output_file ? ", sources write the record file" : "");
    return CF_OK;
}

cf_code cf_worker_add_connector(cf_worker *w, const char *name, const cf_props *config, cf_err *err) {
    if (!w->started) return cf_err_set(err, CF_ERR_STATE, "the worker is not started");
    conn *c = NULL;
    cf_code rc = conn_create(w, name, config, &c, err);
    if (rc) return rc;
    /* registered and started at once: whoever finds it (cf_worker_run's
     * end, a delete) waits for c->life and finds the tasks started */
    pthread_mutex_lock(&c->life);
    pthread_mutex_lock(&w->mu);
    if (w->stopping || find_conn_locked(w, c->name, NULL)) {
        bool stopping = w->stopping;
        pthread_mutex_unlock(&w->mu);
        pthread_mutex_unlock(&c->life);
        if (stopping) rc = worker_stopping(err, c->name, "created");
        else rc = cf_err_set(err, CF_ERR_STATE, "Connector %s already exists", c->name);
        conn_free(c);
        return rc;
    }
    conns_append_locked(w, c);
    if (!c->is_sink) atomic_store(&w->draining, false);
    for (int i = 0; i < c->ntasks; i++) task_start(c->tasks[i]);
    pthread_mutex_unlock(&w->mu);
    /* c->life still held: an update or delete of c cannot free it yet */
    CF_INFO(COMP, "connector %s (%s, %s) created with %d task%s", c->name, c->plugin->name,
            c->is_sink ? "sink" : "source", c->ntasks, c->ntasks == 1 ? "" : "s");
    pthread_mutex_unlock(&c->life);
    return CF_OK;
}

static cf_code not_found(cf_err *err, const char *name) {
    return cf_err_set(err, CF_ERR_NOT_FOUND, "Connector %s not found", name);
}

cf_code cf_worker_delete_connector(cf_worker *w, const char *name, cf_err *err) {
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        return worker_stopping(err, name, "deleted");
    }
    size_t idx;
    conn *c = find_conn_locked(w, name, &idx);
    if (!c) {
        pthread_mutex_unlock(&w->mu);
        return not_found(err, name);
    }
    memmove(w->conns + idx, w->conns + idx + 1, (w->n_conns - idx - 1) * sizeof(conn *));
    w->n_conns--;
    w->busy++;
    pthread_mutex_unlock(&w->mu);
    conn_stop(c, true);
    conn_unref(c);
    op_end(w);
    CF_INFO(COMP, "connector %s deleted", name);
    return CF_OK;
}

cf_code cf_worker_update_connector(cf_worker *w, const char *name, const cf_props *config, cf_err *err) {
    conn *nc = NULL;
    cf_code rc = conn_create(w, name, config, &nc, err);
    if (rc) return rc;
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        conn_free(nc);
        return worker_stopping(err, name, "reconfigured");
    }
    size_t idx;
    conn *old = find_conn_locked(w, name, &idx);
    if (!old) {
        pthread_mutex_unlock(&w->mu);
        conn_free(nc);
        return not_found(err, name);
    }
    atomic_store(&nc->paused, atomic_load(&old->paused));
    memmove(w->conns + idx, w->conns + idx + 1, (w->n_conns - idx - 1) * sizeof(conn *));
    w->n_conns--;
    w->reconfiguring++;
    w->busy++; /* the worker's end waits for the new tasks, then stops them */
    pthread_mutex_unlock(&w->mu);
    conn_stop(old, true);
    conn_unref(old);
    pthread_mutex_lock(&nc->life);
    pthread_mutex_lock(&w->mu);
    w->reconfiguring--;
    conns_append_locked(w, nc); /* not "the slot we freed": an add may have taken it meanwhile */
    for (int i = 0; i < nc->ntasks; i++) task_start(nc->tasks[i]);
    if (--w->busy == 0) pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&nc->life);
    CF_INFO(COMP, "connector %s reconfigured", name);
    return CF_OK;
}

/* Pause and resume only flip the flag the tasks poll. */
static cf_code set_paused(cf_worker *w, const char *name, bool paused, cf_err *err) {
    conn *c = get_conn(w, name);
    if (!c) return not_found(err, name);
    atomic_store(&c->paused, paused);
    CF_INFO(COMP, "connector %s %s", name, paused ? "paused" : "resumed");
    conn_unref(c);
    return CF_OK;
}

cf_code cf_worker_pause_connector(cf_worker *w, const char *name, cf_err *err) {
    return set_paused(w, name, true, err);
}

cf_code cf_worker_resume_connector(cf_worker *w, const char *name, cf_err *err) {
    return set_paused(w, name, false, err);
}

cf_code cf_worker_restart_connector(cf_worker *w, const char *name, bool only_failed, cf_err *err) {
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        return worker_stopping(err, name, "restarted");
    }
    conn *c = find_conn_locked(w, name, NULL);
    if (!c) {
        pthread_mutex_unlock(&w->mu);
        return not_found(err, name);
    }
    atomic_fetch_add(&c->refs, 1);
    w->busy++;
    pthread_mutex_unlock(&w->mu);
    cf_code rc = CF_OK;
    pthread_mutex_lock(&c->life);
    if (c->retired) {
        /* deleted or replaced since we found it: its tasks stay stopped */
        rc = cf_err_set(err, CF_ERR_STATE, "connector %s cannot be restarted: it was deleted or reconfigured "
                                           "meanwhile", name);
        cf_err_hint(err, "Restart it again: that restarts the connector of this name as it is now, if any.");
    } else {
        for (int i = 0; i < c->ntasks; i++) {
            task *t = c->tasks[i];
            if (only_failed && atomic_load(&t->state) != CF_STATE_FAILED) continue;
            task_join(t);
            task_start(t);
        }
        if (!c->is_sink) atomic_store(&w->draining, false);
    }
    pthread_mutex_unlock(&c->life);
    op_end(w);
    if (!rc) CF_INFO(COMP, "connector %s restarted%s", name, only_failed ? " (failed tasks)" : "");
    conn_unref(c);
    return rc;
}

static bool terminal(int st) { return st == CF_STATE_FINISHED || st == CF_STATE_FAILED; }

/* The connectors as they are now, each with a reference held (conn_unref
 * each, free the array): the caller walks them without the worker's lock. */
static conn **conns_snapshot(cf_worker *w, size_t *n_out) {
    pthread_mutex_lock(&w->mu);
    size_t n = w->n_conns;
    conn **cs = cf_xmalloc((n ? n : 1) * sizeof(conn *));
    for (size_t i = 0; i < n; i++) {
        cs[i] = w->conns[i];
        atomic_fetch_add(&cs[i]->refs, 1);
    }
    pthread_mutex_unlock(&w->mu);
    *n_out = n;
    return cs;
}

cf_code cf_worker_run(cf_worker *w, bool stop_on_failure, cf_err *err) {
    cf_code rc = CF_OK;
    atomic_store(&w->sealed, true);
    for (;;) {
        if (w->stop_flag) {
            CF_INFO(COMP, "stop requested: stopping the tasks (flush, commit)");
            break;
        }
        bool sources_live = false, all_done = true, any = false;
        task *failed = NULL;
        pthread_mutex_lock(&w->mu);
        for (size_t i = 0; i < w->n_conns; i++) {
            conn *c = w->conns[i];
            for (int j = 0; j < c->ntasks; j++) {
                int st = atomic_load(&c->tasks[j]->state);
                any = true;
                if (!terminal(st)) all_done = false;
                if (!c->is_sink && !terminal(st)) sources_live = true;
                if (st == CF_STATE_FAILED && !failed) failed = c->tasks[j];
            }
        }
        if (!sources_live) atomic_store(&w->draining, true);
        if (failed && stop_on_failure) {
            pthread_mutex_lock(&failed->mu);
            if (err) *err = failed->fail_err;
            rc = failed->fail_err.code ? failed->fail_err.code : CF_ERR_INTERNAL;
            pthread_mutex_unlock(&failed->mu);
        }
        pthread_mutex_unlock(&w->mu);
        if (rc) break;
        if (any && all_done && !w->want_rest) break;
        sleep_ms(20);
    }
    /* no connector changes from here on (those in flight end first): the
     * snapshot is every connector, and no task starts after it is stopped */
    begin_stopping(w);
    /* sources first (their pending records need the sinks in direct mode), then sinks */
    size_t n;
    conn **cs = conns_snapshot(w, &n);
    for (size_t i = 0; i < n; i++)
        if (!cs[i]->is_sink)
            for (int j = 0; j < cs[i]->ntasks; j++) atomic_store(&cs[i]->tasks[j]->stop, true);
    for (size_t i = 0; i < n; i++)
        if (!cs[i]->is_sink) conn_stop(cs[i], false);
    atomic_store(&w->draining, true);
    for (size_t i = 0; i < n; i++)
        if (cs[i]->is_sink) conn_stop(cs[i], false);
    /* report the first failure even when not stopping on it */
    if (!rc) {
        for (size_t i = 0; i < n && !rc; i++)
            for (int j = 0; j < cs[i]->ntasks && !rc; j++)
                if (atomic_load(&cs[i]->tasks[j]->state) == CF_STATE_FAILED) {
                    if (err) *err = cs[i]->tasks[j]->fail_err;
                    rc = cs[i]->tasks[j]->fail_err.code ? cs[i]->tasks[j]->fail_err.code : CF_ERR_INTERNAL;
                }
    }
    for (size_t i = 0; i < n; i++) conn_unref(cs[i]);
    free(cs);
    if (w->offsets) {
        cf_err fe;
        if (cf_offset_store_flush(w->offsets, &fe)) {
            cf_log_err(CF_LOG_ERROR, COMP, &fe);
            if (!rc) {
                if (err) *err = fe;
                rc = fe.code;
            }
        }
    }
    return rc;
}

void cf_worker_stop(cf_worker *w) {
    if (w) w->stop_flag = 1;
}

void cf_worker_destroy(cf_worker *w) {
    if (!w) return;
    if (w->rest) cf_rest_stop(w->rest);
    begin_stopping(w);
    pthread_mutex_lock(&w->mu);
    size_t n = w->n_conns;
    conn **cs = w->conns;
    w->conns = NULL;
    w->n_conns = w->cap_conns = 0;
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < n; i++)
        if (!cs[i]->is_sink) conn_stop(cs[i], true);
    atomic_store(&w->draining, true);
    for (size_t i = 0; i < n; i++)
        if (cs[i]->is_sink) conn_stop(cs[i], true);
    for (size_t i = 0; i < n; i++) conn_unref(cs[i]);
    free(cs);
    if (w->has_file_out) {
        w->file_out.flush(w->file_out.state, 30000, NULL);
        w->file_out.destroy(w->file_out.state);
    }
    if (w->offsets) {
        cf_offset_store_flush(w->offsets, NULL);
        cf_offset_store_destroy(w->offsets);
    }
    cf_kafka_env_destroy(w->kenv);
    cf_config_destroy(w->cfg);
    cf_props_destroy(w->props);
    free(w->input_file);
    free(w->output_file);
    pthread_cond_destroy(&w->idle);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

uint64_t cf_worker_error_count(const cf_worker *w) { return atomic_load(&((cf_worker *)w)->errors); }

int cf_worker_rest_port(const cf_worker *w) { return w->rest ? cf_rest_port(w->rest) : 0; }

cf_code cf_worker_connector_state(cf_worker *w, const char *name, cf_state *connector, cf_state *task0,
                                  cf_err *err) {
    conn *c = get_conn(w, name);
    if (!c) return not_found(err, name);
    bool all_fin = true;
    for (int i = 0; i < c->ntasks; i++)
        if (atomic_load(&c->tasks[i]->state) != CF_STATE_FINISHED) all_fin = false;
    if (connector)
        *connector = atomic_load(&c->paused) ? CF_STATE_PAUSED : all_fin ? CF_STATE_FINISHED : CF_STATE_RUNNING;
    if (task0) *task0 = c->ntasks ? (cf_state)atomic_load(&c->tasks[0]->state) : CF_STATE_UNASSIGNED;
    conn_unref(c);
    return CF_OK;
}

/* ---------------- REST documents ---------------- */

static char *dump(json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}

static bool is_password_key(conn *c, const char *key) {
    const cf_cfg_table *ts[3] = {&cf_connector_common_table, c->is_sink ? &cf_sink_common_table : NULL,
                                 c->plugin->config};
    for (int i = 0; i < 3; i++) {
        if (!ts[i]) continue;
        const cf_cfg_def *d = cf_cfg_table_find(ts[i], key);
        if (d) return d->type == CF_CFG_PASSWORD;
    }
    return false;
}

static json_t *config_obj(conn *c) {
    json_t *o = json_object();
    for (size_t i = 0; i < cf_props_count(c->props); i++) {
        const char *k = cf_props_key_at(c->props, i);
        /* passwords are never shown (Connect shows them unless a config provider hides them; we hide) */
        json_object_set_new(o, k, json_string(is_password_key(c, k) ? "[hidden]" : cf_props_value_at(c->props, i)));
    }
    return o;
}

static json_t *tasks_arr(conn *c) {
    json_t *a = json_array();
    for (int i = 0; i < c->ntasks; i++) json_array_append_new(a, json_pack("{s:s,s:i}", "connector", c->name, "task", i));
    return a;
}

char *cf_worker_connectors_json(cf_worker *w) {
    json_t *a = json_array();
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->n_conns; i++) json_array_append_new(a, json_string(w->conns[i]->name));
    pthread_mutex_unlock(&w->mu);
    return dump(a);
}

char *cf_worker_connector_json(cf_worker *w, const char *name) {
    conn *c = get_conn(w, name);
    if (!c) return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(c->name));
    json_object_set_new(o, "config", config_obj(c));
    json_object_set_new(o, "tasks", tasks_arr(c));
    json_object_set_new(o, "type", json_string(c->is_sink ? "sink" : "source"));
    conn_unref(c);
    return dump(o);
}

char *cf_worker_connector_config_json(cf_worker *w, const char *name) {
    conn *c = get_conn(w, name);
    if (!c) return NULL;
    json_t *o = config_obj(c);
    conn_unref(c);
    return dump(o);
}

static char *worker_id(cf_worker *w) {
    char buf[300];
    snprintf(buf, sizeof buf, "%s:%d", cf_config_string(w->cfg, "rest.host.name"),
             w->rest ? cf_rest_port(w->rest) : (int)cf_config_int(w->cfg, "rest.port"));
    return cf_xstrdup(buf);
}

/* {"key": {status}, "value": {status}} of the task's registry clients
 * (cf_sr_status_json), NULL when neither converter has a registry.
 * *unreachable (may be NULL) is set when one of them is unreachable. */
static json_t *task_sr_json(task *t, bool *unreachable) {
    json_t *o = NULL;
    for (int k = 0; k < 2; k++) {
        cf_sr_status st;
        if (!task_sr_status(t, k, &st)) continue;
        cf_buf b = CF_BUF_INIT;
        cf_sr_status_json(&st, &b);
        json_t *j = json_loadb(b.data ? b.data : "", b.len, 0, NULL);
        cf_buf_free(&b);
        if (!j) continue;
        if (!o) o = json_object();
        json_object_set_new(o, conv_roles[k], j);
        if (!st.reachable && unreachable) *unreachable = true;
    }
    return o;
}

char *cf_worker_connector_status_json(cf_worker *w, const char *name) {
    conn *c = get_conn(w, name);
    if (!c) return NULL;
    char *wid = worker_id(w);
    cf_state cs;
    cf_worker_connector_state(w, name, &cs, NULL, NULL);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(c->name));
    json_object_set_new(o, "connector", json_pack("{s:s,s:s}", "state", cf_state_name(cs), "worker_id", wid));
    json_t *ta = json_array();
    for (int i = 0; i < c->ntasks; i++) {
        task *t = c->tasks[i];
        int st = atomic_load(&t->state);
        json_t *to = json_pack("{s:i,s:s,s:s}", "id", i, "state", cf_state_name((cf_state)st), "worker_id", wid);
        if (st == CF_STATE_FAILED) {
            pthread_mutex_lock(&t->mu);
            json_object_set_new(to, "trace", json_string(t->trace));
            pthread_mutex_unlock(&t->mu);
        }
        json_t *sr = task_sr_json(t, NULL);
        if (sr) json_object_set_new(to, "schema_registry", sr);
        json_array_append_new(ta, to);
    }
    json_object_set_new(o, "tasks", ta);
    json_object_set_new(o, "type", json_string(c->is_sink ? "sink" : "source"));
    free(wid);
    conn_unref(c);
    return dump(o);
}

char *cf_worker_health_json(cf_worker *w, bool *healthy) {
    size_t n;
    conn **cs = conns_snapshot(w, &n);
    bool failed = false, unreachable = false;
    json_t *co = json_object();
    for (size_t i = 0; i < n; i++) {
        conn *c = cs[i];
        json_t *ta = json_array();
        for (int j = 0; j < c->ntasks; j++) {
            task *t = c->tasks[j];
            int st = atomic_load(&t->state);
            if (st == CF_STATE_FAILED) failed = true;
            json_t *to = json_pack("{s:i,s:s}", "id", j, "state", cf_state_name((cf_state)st));
            json_t *sr = task_sr_json(t, &unreachable);
            if (sr) json_object_set_new(to, "schema_registry", sr);
            json_array_append_new(ta, to);
        }
        json_object_set_new(co, c->name, json_pack("{s:s,s:o}", "type", c->is_sink ? "sink" : "source", "tasks", ta));
        conn_unref(c);
    }
    free(cs);
    bool ok = !failed && !unreachable;
    if (healthy) *healthy = ok;
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(ok ? "UP" : "DOWN"));
    json_t *why = json_array();
    if (failed) json_array_append_new(why, json_string("a task failed"));
    if (unreachable) json_array_append_new(why, json_string("a Schema Registry is unreachable"));
    json_object_set_new(o, "problems", why);
    json_object_set_new(o, "connectors", co);
    return dump(o);
}

static void plugin_json(json_t *a, const cf_connector_plugin *p) {
    const char *cls = p->aliases && p->aliases[0] ? p->aliases[0] : p->name;
    json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "class", cls, "type",
                                       p->kind == CF_CONNECTOR_SINK ? "sink" : "source", "version",
                                       p->version ? p->version : CF_VERSION_STRING));
}

char *cf_worker_plugins_json(cf_worker *w) {
    json_t *a = json_array();
    for (const cf_connector_plugin *const *p = w->extra_plugins; p && *p; p++) plugin_json(a, *p);
    for (const cf_connector_plugin *const *p = cf_connector_plugins(); *p; p++) plugin_json(a, *p);
    return dump(a);
}

/* ---------------- metrics (Prometheus text format 0.0.4) ---------------- */

static void escape_label(cf_buf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') cf_buf_append_byte(b, '\\'), cf_buf_append_byte(b, (uint8_t)*s);
        else if (*s == '\n') cf_buf_append_str(b, "\\n");
        else cf_buf_append_byte(b, (uint8_t)*s);
    }
}

typedef struct mdef {
    const char *name, *type, *help;
    size_t off; /* offset in metrics */
    bool is_seconds; /* microseconds -> seconds */
} mdef;

#define MOFF(f) offsetof(metrics, f)
static const mdef mdefs[] = {
    {"cdcflow_task_records_in_total", "counter", "Records polled from the source or read from the transport.",
     MOFF(records_in), false},
    {"cdcflow_task_records_out_total", "counter",
     "Records acknowledged by the transport (sources) or put into the sink (sinks).", MOFF(records_out), false},
    {"cdcflow_task_bytes_in_total", "counter", "Key and value bytes read (sinks).", MOFF(bytes_in), false},
    {"cdcflow_task_bytes_out_total", "counter", "Key and value bytes sent (sources).", MOFF(bytes_out), false},
    {"cdcflow_task_errors_total", "counter", "Records that failed in a stage (converter, transform, put).",
     MOFF(errors), false},
    {"cdcflow_task_records_skipped_total", "counter",
     "Records skipped by errors.tolerance=all.", MOFF(skipped), false},
    {"cdcflow_task_deadletterqueue_produce_total", "counter", "Records written to the dead letter queue.",
     MOFF(dlq), false},
    {"cdcflow_task_offset_commits_total", "counter", "Successful offset commits.", MOFF(commits), false},
    {"cdcflow_task_offset_commit_failures_total", "counter", "Failed offset commits.", MOFF(commit_failures),
     false},
    {"cdcflow_task_offset_commit_seconds_total", "counter", "Time spent committing offsets (flush included).",
     MOFF(commit_us_sum), true},
    {"cdcflow_task_offset_commit_last_seconds", "gauge", "Duration of the last offset commit.",
     MOFF(commit_us_last), true},
    {"cdcflow_task_lag_records", "gauge",
     "Sources: records sent but not yet acknowledged. Sinks: records behind the end of the assigned partitions "
     "(Kafka) or waiting in the queue (direct).", MOFF(lag),
     false},
};

/* Schema Registry clients of the converters (avro), one series per task
 * and converter (key/value); nothing at all when no converter has one. */
typedef struct srsample {
    conn *c;
    int task, role;
    cf_sr_status st;
} srsample;

static void sr_labels(cf_buf *out, const char *metric, const srsample *x) {
    cf_buf_printf(out, "%s{connector=\"", metric);
    escape_label(out, x->c->name);
    cf_buf_printf(out, "\",task=\"%d\",converter=\"%s\"} ", x->task, conv_roles[x->role]);
}

static void metrics_sr(cf_buf *out, conn **cs, size_t n) {
    size_t ns = 0, cap = 0;
    srsample *xs = NULL;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < cs[i]->ntasks; j++)
            for (int k = 0; k < 2; k++) {
                srsample x = {cs[i], j, k, {0}};
                if (!task_sr_status(cs[i]->tasks[j], k, &x.st)) continue;
                if (ns == cap) xs = cf_xrealloc(xs, (cap = cap ? cap * 2 : 8) * sizeof *xs);
                xs[ns++] = x;
            }
    if (!ns) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    static const struct {
        const char *name, *type, *help;
    } defs[] = {
        {"cdcflow_schema_registry_reachable", "gauge",
         "1 while the converter's Schema Registry client reaches the registry (its last attempt succeeded, or "
         "none was made yet), 0 while it is unreachable (calls that need the registry fail fast)."},
        {"cdcflow_schema_registry_requests_total", "counter", "HTTP requests made to the Schema Registry."},
        {"cdcflow_schema_registry_errors_total", "counter",
         "Failed attempts to reach the Schema Registry (transport errors and HTTP 5xx)."},
        {"cdcflow_schema_registry_cache_hits_total", "counter", "Schema lookups answered from the client's cache."},
        {"cdcflow_schema_registry_last_success_age_seconds", "gauge",
         "Seconds since the last successful registry request (absent: none yet)."},
        {"cdcflow_schema_registry_last_error_age_seconds", "gauge",
         "Seconds since the last failed registry attempt (absent: none yet)."},
    };
    for (size_t d = 0; d < sizeof defs / sizeof *defs; d++) {
        cf_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", defs[d].name, defs[d].help, defs[d].name, defs[d].type);
        for (size_t i = 0; i < ns; i++) {
            const cf_sr_status *st = &xs[i].st;
            int64_t at = d == 4 ? st->last_ok_ms : d == 5 ? st->last_error_ms : 0;
            if ((d == 4 || d == 5) && at <= 0) continue;
            sr_labels(out, defs[d].name, &xs[i]);
            switch (d) {
            case 0: cf_buf_printf(out, "%d\n", st->reachable ? 1 : 0); break;
            case 1: cf_buf_printf(out, "%llu\n", (unsigned long long)st->requests); break;
            case 2: cf_buf_printf(out, "%llu\n", (unsigned long long)st->errors); break;
            case 3: cf_buf_printf(out, "%llu\n", (unsigned long long)st->cache_hits); break;
            default: cf_buf_printf(out, "%.3f\n", now_ms > at ? (double)(now_ms - at) / 1e3 : 0.0); break;
            }
        }
    }
    free(xs);
}

void cf_worker_metrics_text(cf_worker *w, cf_buf *out) {
    size_t n;
    conn **cs = conns_snapshot(w, &n);
    for (size_t d = 0; d < sizeof mdefs / sizeof *mdefs; d++) {
        cf_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", mdefs[d].name, mdefs[d].help, mdefs[d].name,
                      mdefs[d].type);
        for (size_t i = 0; i < n; i++)
            for (int j = 0; j < cs[i]->ntasks; j++) {
                const char *base = (const char *)&cs[i]->tasks[j]->m;
                uint64_t v = atomic_load((atomic_uint_fast64_t *)(base + mdefs[d].off));
                cf_buf_printf(out, "%s{connector=\"", mdefs[d].name);
                escape_label(out, cs[i]->name);
                cf_buf_printf(out, "\",task=\"%d\",type=\"%s\"} ", j, cs[i]->is_sink ? "sink" : "source");
                if (mdefs[d].is_seconds) cf_buf_printf(out, "%.6f\n", (double)v / 1e6);
                else cf_buf_printf(out, "%llu\n", (unsigned long long)v);
            }
    }
    cf_buf_printf(out, "# HELP cdcflow_task_state Task state (1 for the current state).\n"
                       "# TYPE cdcflow_task_state gauge\n");
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < cs[i]->ntasks; j++) {
            cf_buf_append_str(out, "cdcflow_task_state{connector=\"");
            escape_label(out, cs[i]->name);
            cf_buf_printf(out, "\",task=\"%d\",state=\"%s\"} 1\n", j,
                          cf_state_name((cf_state)atomic_load(&cs[i]->tasks[j]->state)));
        }
    metrics_sr(out, cs, n);
    cf_buf_printf(out,
                  "# HELP cdcflow_worker_errors_total Records reported under errors.tolerance=all.\n"
                  "# TYPE cdcflow_worker_errors_total counter\ncdcflow_worker_errors_total %llu\n"
                  "# HELP cdcflow_worker_connectors Connectors in this worker.\n"
                  "# TYPE cdcflow_worker_connectors gauge\ncdcflow_worker_connectors %zu\n",
                  (unsigned long long)atomic_load(&w->errors), n);
    for (size_t i = 0; i < n; i++) conn_unref(cs[i]);
    free(cs);
}
