/*
 * worker_state.h - the worker's own types (worker, connector, task, the
 * direct queue, a source task's state) and the functions its files share.
 * Private to src/worker/; the transports' interfaces are in
 * worker_internal.h. Which file does what:
 *   worker.c         worker settings, the worker's API: create, add, update,
 *                    pause, restart, delete connectors, run, stop
 *   connectors.c     a connector's lifetime: create from its config, refs,
 *                    start and join its task threads
 *   task.c           what every task has: the context connectors call,
 *                    converters and transforms around the plugin
 *   errors.c         errors.tolerance: failing a task, logging, the dead
 *                    letter queue and its Connect headers
 *   acks.c           acknowledgement groups (in-flight source records)
 *   source_commit.c  storing source offsets in poll order as groups are
 *                    acknowledged; flushing the offset store
 *   source_task.c    the source task loop
 *   sink_task.c      the sink task loop
 *   direct.c         transport=direct: a source hands records to sink queues
 *   status.c         the REST documents (connectors, status, health, plugins)
 *   metrics.c        Prometheus text
 */
#ifndef CDCFLOW_WORKER_STATE_H
#define CDCFLOW_WORKER_STATE_H

#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdatomic.h>

#include "cdcflow/convert.h"
#include "cdcflow/worker.h"
#include "worker_internal.h"

#define COMP "worker"
#define SOURCE_BATCH 500
#define SINK_BATCH 500
#define MAX_INFLIGHT 100000    /* source records not yet acknowledged */
#define DIRECT_QUEUE_MAX 10000 /* records waiting in a direct sink's queue */

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
    /* When the stop asked for (cf_task_request_stop) must be done, in
     * cf_now_us() time; 0 while none was asked for. Every wait of the stop
     * path ends by then (cf_task_wait_ms): task.shutdown.graceful.timeout.ms. */
    _Atomic int64_t deadline_us;
    /* The last stop could not commit everything (what was not is logged);
     * cf_worker_run's end counts these for the exit code. Under mu. */
    bool unclean;
    /* What the task read or sent and has not committed, as text ("t/0
     * offsets 10-99 (90 records)"), kept current by the task thread for the
     * report of a stop that does not end in time (cf_worker_log_uncommitted,
     * any thread). Empty: nothing. Under mu. */
    char pending[1024];
    /* records out at the last progress line (cf_worker_run's thread only) */
    uint64_t progress_out;
    /* a sink task has read its sink's stored positions (the offsets of direct
     * sources among them): sources may read theirs (cf_direct_wait_sinks) */
    atomic_bool sink_ready;
    pthread_mutex_t mu; /* trace */
    char trace[2048];
    cf_err fail_err;
    struct cf_source_ctx sctx;
    struct cf_sink_ctx kctx;
    metrics m;
    /* records behind per assigned partition (Kafka sinks), refreshed about
     * once a second by the task thread; under mu */
    cf_tp_lag *lag_parts;
    size_t nlag_parts;
    /* the batch being put, so cf_sink_ctx_report finds a record's original
     * message for the dead letter queue (task thread only) */
    cf_record **cur_recs;
    cf_msg **cur_raws;
    size_t cur_n;
    const cf_sink_position *cur_pos; /* where the input stands after each record put (cf_sink_ctx_positions) */
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
    /* the source plugin's own metrics (cf_source_ctx_set_metrics); under mu */
    cf_source_metrics_fn mfn;
    void *marg;
    /* cf_source_ctx_on_commit; task thread only */
    void (*cfn)(void *arg);
    void *carg;
    /* a sink plugin's own flush interval (cf_sink_ctx_flush_every); 0: the
     * worker's offset.flush.interval.ms. Task thread only. */
    int64_t flush_every_ms;
    /* the last topic this task noted in its connector's active topics, and
     * the connector's topics_gen then (cf_task_note_topic; task thread only) */
    char last_topic[256];
    unsigned topics_gen;
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
    /* KIP-875's target state STOPPED (PUT .../stop): the tasks are stopped and
     * not started again until a resume or pause; the config stays. Changed
     * under life. */
    atomic_bool stopped;
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
    /* Connect's active topics (GET .../topics): the topics its records were
     * produced to (source) or consumed from (sink) since its creation or the
     * last PUT .../topics/reset, which bumps topics_gen. Under mu. */
    char **active_topics;
    size_t n_active_topics, cap_active_topics;
    atomic_uint topics_gen;
    pthread_mutex_t mu;
    /* Held while the task threads are started or joined (cf_task_start,
     * cf_task_join), so that one thread at a time does it: two joins of one
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
    int (*validate)(const cf_props *config, cf_buf *out); /* cf_worker_opts.validate */
    const cf_worker_route *routes; /* cf_worker_opts.routes (borrowed) */
    size_t n_routes;
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
    atomic_uint_fast64_t unclean_stops; /* tasks whose stop at the run's end was not clean */
    _Atomic int64_t stop_deadline_us;   /* the run's end: when its stop must be done (0: not yet) */
    cf_rest *rest;
    bool started;
    int64_t flush_interval_ms, flush_timeout_ms, shutdown_timeout_ms;
    int64_t progress_interval_ms; /* progress.interval.ms; 0: no progress lines */
    bool topic_tracking;          /* topic.tracking.enable: tasks note their topics (cf_task_note_topic) */
};

/* A source task thread's state (source_task.c, source_commit.c). */
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
    /* The stop interrupted a conversion (a Schema Registry request): those
     * records were not sent and their group is withdrawn (read again at the
     * next start); the first such error, for the stop's log line. */
    size_t abandoned;
    cf_err abandon_err;
} srcstate;

/* ---- worker.c ---- */
void cf_sleep_ms(int ms);
conn **cf_conns_snapshot(cf_worker *w, size_t *n_out);

/* ---- acks.c ---- */
void cf_ack_withdraw(cf_ack *a);
cf_ack *cf_ack_new(void);
void cf_ack_clear(cf_ack *a);
void cf_ack_free(cf_ack *a);

/* ---- connectors.c ---- */
conn *cf_conn_find_locked(cf_worker *w, const char *name, size_t *idx);
conn *cf_conn_get(cf_worker *w, const char *name);
/* The plugin of a connector.class: a name or alias, opts' plugins first. */
const cf_connector_plugin *cf_conn_find_plugin(const cf_worker *w, const char *name);
void cf_conn_free(conn *c);
void cf_conn_unref(conn *c);
cf_code cf_conn_create(cf_worker *w, const char *name, const cf_props *config, conn **out, cf_err *err);
void cf_task_start(task *t);
void cf_task_join(task *t);
void cf_conn_stop(conn *c, bool retire);
void cf_conns_append_locked(cf_worker *w, conn *c);

/* ---- errors.c ---- */
void cf_task_fail(task *t, const cf_err *err);
cf_code cf_task_report_error(task *t, cf_stage stage, const char *class_name, const cf_msg *raw,
                             const cf_record *rec, const cf_err *problem, cf_err *err);

/* ---- task.c ---- */
extern const char *const cf_conv_roles[2]; /* "key", "value": a task's converters by index */
/* The least a wait of the stop path gets even after the deadline (a commit's
 * answer, a consumer leaving its group): a healthy broker answers in far less,
 * and the whole stop stays within the deadline + CF_WORKER_STOP_MARGIN_MS. */
#define CF_STOP_MIN_WAIT_MS 100
/* Ask t to stop, done by deadline_us (the earliest deadline asked for wins);
 * wakes a direct sink waiting on its queue. */
void cf_task_request_stop(task *t, int64_t deadline_us);
/* The default deadline of a stop that begins now: the run's end if it is
 * stopping, else now + task.shutdown.graceful.timeout.ms. */
int64_t cf_stop_deadline(cf_worker *w);
/* ms, cut to what is left of t's stop (at least CF_STOP_MIN_WAIT_MS once the
 * deadline passed); ms as it is while t is not stopping. */
int cf_task_wait_ms(task *t, int ms);
/* Sleep up to ms in short slices; false (at once) when t is to stop. */
bool cf_task_nap(task *t, int ms);
/* Publish what t has not committed (cf_worker_log_uncommitted reads it). */
void cf_task_set_pending(task *t, const char *text);
/* The stop of t could not commit everything: logged (WARN, "connector C
 * task N: stop not clean: ..."), and counted for the exit code when the run
 * ends. */
void cf_task_unclean(task *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The state a task that did not fail ends in: FINISHED at the end of a
 * bounded input, STOPPED after a clean stop, UNASSIGNED after a stop that
 * could not commit everything (cf_task_unclean). */
cf_state cf_task_end_state(task *t, bool eof);
cf_code cf_task_setup(task *t, bool need_converters, cf_err *err);
void cf_task_teardown(task *t);
bool cf_task_sr_status(task *t, int which, cf_sr_status *out);
cf_code cf_task_transform(task *t, cf_record *rec, cf_record **out, cf_err *err);
void cf_headers_to_msg(const cf_record *r, cf_msg *m);
void cf_headers_to_record(const cf_msg *m, cf_record *r);
const char *cf_conv_class(cf_converter *c);
void cf_task_count_commit(task *t, int64_t us);
/* Note the topic of a record t produced (source) or consumed (sink) in its
 * connector's active topics: a strcmp per record, the connector's lock only
 * for a topic new to this task (or after a reset). Task thread only. */
void cf_task_note_topic(task *t, const char *topic);

/* ---- direct.c ---- */
void cf_dq_init(dqueue *q);
void cf_dq_fail_all(dqueue *q);
void cf_dq_destroy(dqueue *q);
void cf_direct_withdraw(task *t);
size_t cf_dq_pop(dqueue *q, qitem *out, size_t max, int wait_ms);
size_t cf_dq_len(dqueue *q);
cf_code cf_direct_send(task *t, cf_record *rec, cf_ack *a, cf_err *err);
void cf_direct_wait_sinks(task *t);

/* ---- source_commit.c ---- */
void cf_src_group_open(srcstate *s);
void cf_src_group_close(srcstate *s);
void cf_src_spare_free(srcstate *s);
bool cf_src_head_withdrawn(srcstate *s);
cf_code cf_src_commit_acked(srcstate *s, cf_err *err);
void cf_src_group_note(srcstate *s, cf_record *rec, bool move);
cf_code cf_src_flush_offsets(srcstate *s, cf_err *err);
/* The same, done by deadline_us (0: none; see cf_offset_store_flush_until). */
cf_code cf_src_flush_offsets_until(srcstate *s, int64_t deadline_us, cf_err *err);
/* The records in flight and their source partitions, for a stop's log line. */
void cf_src_pending_text(srcstate *s, char *out, size_t size);

/* ---- source_task.c ---- */
void *cf_source_task_main(void *arg);

/* ---- sink_task.c ---- */
void *cf_sink_task_main(void *arg);

#endif
