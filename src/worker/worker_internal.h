/*
 * worker_internal.h - what the worker's source files share (not public).
 *
 * The worker moves records through three kinds of transport, hidden behind
 * two small interfaces so that the task loops are written once:
 *   cf_msg_out  where a source task's converted messages go (Kafka
 *               producer, a record file) with an acknowledgement per message;
 *   cf_msg_in   where a sink task's messages come from (Kafka consumer
 *               group, a record file), with a commit of positions.
 * The direct mode needs neither: records go from the source task to the
 * sink task's queue (worker.c).
 */
#ifndef CDCFLOW_WORKER_INTERNAL_H
#define CDCFLOW_WORKER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cdcflow/record.h"
#include "cdcflow/worker.h"

/* ---- offsets store backends (offsets.c) ---- */
typedef struct cf_offset_backend {
    /* Write one key/value (value NULL = tombstone). */
    cf_code (*write)(void *state, const char *key, const char *value, cf_err *err);
    /* Return once everything written is durable (Kafka: acknowledged), or
     * fail after timeout_ms (-1: the backend's own timeout). */
    cf_code (*sync)(void *state, int timeout_ms, cf_err *err);
    void (*destroy)(void *state);
} cf_offset_backend;
cf_offset_store *cf_offset_store_new_backend(const cf_offset_backend *backend, void *state);
/* cf_offset_store_flush, done by deadline_us (cf_now_us() time; 0: no
 * deadline, the backend's own timeout): waiting for another flush in
 * progress and the backend's sync both end by then (CF_ERR_AGAIN). */
cf_code cf_offset_store_flush_until(cf_offset_store *s, int64_t deadline_us, cf_err *err);
/* Load one stored key/value (at start, from the backend's data). */
cf_code cf_offset_store_load_record(cf_offset_store *s, const char *key, size_t klen, const char *value, size_t vlen,
                                    cf_err *err);
/* Compact JSON of a value (map order kept). malloc'd. */
char *cf_worker_json_from_value(const cf_value *v);

/* ---- acknowledgements ---- */
/* One group of in-flight source records: a source task opens one per poll
 * batch, so that a record costs one counter increment, not an allocation.
 * `pending` counts the messages (or sink copies) sent and not yet
 * acknowledged, plus one while the batch is still being sent; `failed` is
 * set when one of them was not delivered. The source task stores offsets in
 * poll order, group by group, up to the first group with pending > 0. */
typedef struct cf_ack_off {
    cf_value *part, *off; /* owned; NULL part: the records have none */
} cf_ack_off;

typedef struct cf_ack {
    atomic_int pending;
    atomic_bool failed;
    /* a record of the group was not sent because its task stops: offsets
     * stop before the group without an error (it is read again next run) */
    atomic_bool withdrawn;
    /* The last source offset of each source partition of the group, in the
     * order the partitions first appear (taken from the records while they
     * are in the cache). recs (topic + source partition/offset) only when
     * the plugin has commit_record. Touched by the task thread only. */
    cf_ack_off *offs;
    size_t n_offs, cap_offs;
    cf_record **recs;
    size_t n_recs, cap_recs;
    size_t n_records; /* records polled into the group */
    struct cf_ack *next;
} cf_ack;
/* Called by transports when a message was acknowledged (ok) or failed for good. */
void cf_ack_done(cf_ack *a, bool ok);
void cf_ack_done_n(cf_ack *a, int n); /* n messages acknowledged (ok) at once */

/* ---- message transports ---- */
typedef struct cf_msg_out {
    void *state;
    /* Send m: copied or written before send returns; m stays the caller's.
     * CF_ERR_AGAIN: local queue full, nothing sent (back-pressure). */
    cf_code (*send)(void *state, cf_msg *m, cf_ack *ack, cf_err *err);
    /* Serve acknowledgements for up to timeout_ms. */
    void (*serve)(void *state, int timeout_ms);
    /* Wait until everything sent was acknowledged (or timeout). */
    cf_code (*flush)(void *state, int timeout_ms, cf_err *err);
    void (*destroy)(void *state);
    /* Optional: send m[0..n) in order, all for one ack, each copied before
     * the call returns (m stays the caller's; no headers, no timestamps).
     * CF_OK: all taken. CF_ERR_AGAIN: m[*sent] found the local queue full
     * and nothing from it on was taken (send them again later). Another
     * code: failed for good; every message not taken has already been
     * reported to ack as failed. */
    cf_code (*send_batch)(void *state, const cf_msg *m, size_t n, cf_ack *ack, size_t *sent, cf_err *err);
} cf_msg_out;

typedef struct cf_tp_pos {
    char *topic;
    int32_t partition;
    int64_t next_offset; /* offset of the next message to read (Kafka's commit value) */
} cf_tp_pos;

/* Records behind the end of one partition (the /metrics series per partition). */
typedef struct cf_tp_lag {
    char *topic;
    int32_t partition;
    int64_t lag;
} cf_tp_lag;
void cf_tp_lag_free(cf_tp_lag *v, size_t n);

typedef struct cf_msg_in cf_msg_in;
/* Called from within in->poll before partitions are revoked (all of them
 * with the eager protocol, those that move with the cooperative one): the
 * sink task flushes and commits, then forgets the revoked partitions'
 * positions (committing them later would wind their new owner back). */
typedef void (*cf_revoke_fn)(void *arg, const cf_tp_pos *revoked, size_t n);
/* Called from within in->poll when partitions are assigned, before reading
 * them starts: set next_offset (-1 on entry) where reading is to begin
 * instead of the committed offset (an exactly-once sink's stored position). */
typedef void (*cf_assign_fn)(void *arg, cf_tp_pos *assigned, size_t n);
struct cf_msg_in {
    void *state;
    /* Fill out with up to max messages (taken by the caller). CF_ERR_EOF: bounded input ended. */
    cf_code (*poll)(void *state, cf_msg **out, size_t max, size_t *n, int timeout_ms, cf_err *err);
    /* Commit positions and wait up to timeout_ms for the answer (cut to the
     * task's stop deadline, see `deadline`): CF_ERR_AGAIN when none came in
     * time (the commit may still be made: nothing is lost either way).
     * timeout_ms 0: sent, not waited for (a later commit covers it if it
     * fails; its failure is logged when the answer is read). */
    cf_code (*commit)(void *state, const cf_tp_pos *pos, size_t n, int timeout_ms, cf_err *err);
    /* Leave (the group) and free; waits at most until the stop deadline. */
    void (*destroy)(void *state);
    /* Optional (NULL: not supported): stop/restart fetching while the
     * connector is paused, staying in the group; records behind (lag),
     * summed, and per partition in *parts (malloc'd, cf_tp_lag_free) when
     * parts is not NULL. */
    void (*pause)(void *state, bool paused);
    int64_t (*lag)(void *state, cf_tp_lag **parts, size_t *nparts);
    cf_revoke_fn on_revoke; /* set by the worker */
    void *revoke_arg;
    /* The task's stop deadline (task.deadline_us: 0 while it runs), set by
     * the worker before cf_worker_kafka_in_bind: commits and the close end
     * by then. */
    const _Atomic int64_t *deadline;
    cf_assign_fn on_assign; /* set by the worker; revoke_arg is its argument too */
    /* Optional (NULL: every commit is known to be made): whether the last
     * commit sent without waiting (timeout_ms 0) was answered, and without
     * an error; answers that arrived are read now, nothing is waited for. */
    bool (*committed)(void *state);
    /* Set by poll when it fails because the consumer was fenced
     * (FENCED_INSTANCE_ID, a fatal error): the task may make a new one. */
    bool fenced;
};

/* ---- record files (files.c) ---- */
cf_code cf_worker_file_out_new(const char *path, cf_msg_out *out, cf_err *err);
cf_code cf_worker_file_in_new(const char *path, cf_msg_in *in, cf_err *err);
/* Skip the messages of the record file before these positions (what an
 * exactly-once sink already holds): per topic partition, offsets below
 * next_offset. */
void cf_worker_file_in_resume(cf_msg_in *in, const cf_tp_pos *pos, size_t n);

/* ---- Kafka (kafka.c) ---- */
/* A sink task consumer's prefetch queue (librdkafka queued.max.messages.kbytes)
 * unless the worker sets consumer.queued.max.messages.kbytes. */
#define CF_SINK_CONSUMER_QUEUE_KB "8192"
struct cf_worker;
/* conn (may be NULL): the connector's configuration, whose producer.override.*
 * / consumer.override.* keys go to this client over the worker's. */
cf_code cf_worker_kafka_out_new(struct cf_worker *w, const char *client_id, const cf_props *conn, cf_msg_out *out,
                                cf_err *err);
cf_code cf_worker_kafka_in_new(struct cf_worker *w, const char *group, const char *const *topics, size_t n_topics,
                               const char *topics_regex, const cf_props *conn, cf_msg_in *in, cf_err *err);
/* The worker's connector.client.config.override.policy against a connector's
 * producer/consumer/admin.override.* keys (Connect's rules: All allows
 * every one, None none, Principal only the SASL/security ones). */
cf_code cf_worker_check_overrides(struct cf_worker *w, const char *connector, const cf_props *conn, cf_err *err);
/* Create TOPIC (partitions, replication factor rf, -1: the broker's) unless
 * it exists, with the connector's admin.override.* (a real cluster; on the
 * embedded one, its own topic creation). `what` names it in the log ("dead
 * letter queue topic"). The wait for the broker's answer (up to 15 s) ends
 * when *stop is set (may be NULL), so a task's stop stays bounded. A failure
 * is logged, not returned: producing may still auto-create it. */
void cf_worker_kafka_ensure_topic(struct cf_worker *w, const char *what, const char *topic, int partitions, int rf,
                                  const cf_props *conn, const atomic_bool *stop);
cf_code cf_worker_kafka_offsets_open(struct cf_worker *w, const char *topic, cf_offset_store **out, cf_err *err);
void cf_worker_kafka_in_bind(cf_msg_in *in);
/* Worker settings the Kafka adapters read. */
const cf_config *cf_worker_config(const struct cf_worker *w);
/* bootstrap.servers resolved (the embedded cluster's address for "embedded"). */
const char *cf_worker_kafka_bootstrap(const struct cf_worker *w);
/* The committed offsets of consumer group `group` on every partition of
 * `topics` (an OffsetFetch, without joining the group), as the "offsets"
 * array of Connect's GET /connectors/{name}/offsets for a sink:
 * [{"partition":{"kafka_topic":t,"kafka_partition":p},"offset":{"kafka_offset":o}}],
 * partitions without a committed offset left out. *out is a jansson array. */
/* Change consumer group `group`'s committed offsets (the group must have no
 * members: a stopped sink's): the whole group deleted when delete_group,
 * else drop[] removed (DeleteConsumerGroupOffsets) and set[] committed
 * (AlterConsumerGroupOffsets). A group that does not exist is nothing to
 * delete. */
cf_code cf_worker_kafka_group_alter(struct cf_worker *w, const char *group, const cf_props *conn, bool delete_group,
                                    const cf_tp_pos *drop, size_t ndrop, const cf_tp_pos *set, size_t nset,
                                    cf_err *err);
cf_code cf_worker_kafka_group_offsets(struct cf_worker *w, const char *group, const char *const *topics,
                                      size_t n_topics, const cf_props *conn, void **out, cf_err *err);
typedef struct cf_kafka_env cf_kafka_env;
cf_code cf_kafka_env_new(const cf_config *cfg, cf_kafka_env **out, cf_err *err);
void cf_kafka_env_destroy(cf_kafka_env *e);
const char *cf_kafka_env_bootstrap(const cf_kafka_env *e);
cf_kafka_env *cf_worker_kafka_env(const struct cf_worker *w);
/* Create a topic on the embedded cluster; CF_ERR_UNSUPPORTED when the
 * cluster is a real one (use the admin API then). */
cf_code cf_kafka_env_create_topic(cf_kafka_env *e, const char *topic, int partitions, cf_err *err);

/* ---- errors and the dead letter queue (errors.c) ---- */
/* Connect's stage names. */
typedef enum cf_stage {
    CF_STAGE_KEY_CONVERTER = 0,
    CF_STAGE_VALUE_CONVERTER,
    CF_STAGE_HEADER_CONVERTER,
    CF_STAGE_TRANSFORMATION,
    CF_STAGE_TASK_PUT,
    CF_STAGE_TASK_POLL,
    CF_STAGE_KAFKA_PRODUCE,
    CF_STAGE_KAFKA_CONSUME
} cf_stage;
const char *cf_stage_name(cf_stage s);
/* The Java exception class Connect reports for an error of this code (DLQ header). */
const char *cf_exception_class(cf_code code);
/* Add Connect's __connect.errors.* context headers to a DLQ message. */
void cf_dlq_add_headers(cf_msg *m, const char *orig_topic, int32_t partition, int64_t offset, const char *connector,
                        int task_id, cf_stage stage, const char *class_name, const cf_err *problem);

/* ---- REST (rest.c) ---- */
/* the REST routes of cf_worker_opts (rest.c asks) */
const cf_worker_route *cf_worker_routes(const cf_worker *w, size_t *n);
typedef struct cf_rest cf_rest;
cf_code cf_rest_start(struct cf_worker *w, const cf_config *cfg, cf_rest **out, cf_err *err);
int cf_rest_port(const cf_rest *r);
void cf_rest_stop(cf_rest *r);

int64_t cf_now_us(void);

#endif
