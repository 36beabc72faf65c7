/*
 * cdcflow/transport.h - Kafka transport: an idempotent producer, a
 * consumer-group consumer, and an embedded (in-memory) cluster, all over
 * librdkafka (Debian's 2.0.2).
 *
 * What the module owns:
 *   cf_producer         produce cf_msg with a per-message opaque; delivery
 *                       reports come back through a callback, in the calling
 *                       thread, from cf_producer_poll/flush/send; a sequence
 *                       "watermark" tells which prefix of everything sent is
 *                       acknowledged, so a source commits its offsets only
 *                       after every earlier record was acknowledged.
 *                       enable.idempotence=true always (no loss, no
 *                       duplicates, order kept per partition across retries).
 *                       A full local queue is back-pressure: send() polls
 *                       and retries, it never drops.
 *   cf_consumer         subscribe in a group, poll into cf_msg (null key and
 *                       null value preserved, headers with null values
 *                       preserved), manual commits of given offsets only
 *                       (enable.auto.commit=false), a rebalance hook called
 *                       with the partition lists BEFORE partitions are taken
 *                       away (so a sink can flush and commit) and after they
 *                       are assigned. Eager and cooperative protocols both work.
 *   cf_embedded_kafka   librdkafka's mock cluster (rdkafka_mock.h) in this
 *                       process: real TCP listeners on 127.0.0.1, any Kafka
 *                       client can connect, IN MEMORY ONLY, gone on destroy.
 *                       Not a Kafka broker: for demos and unit tests.
 *
 * Extra librdkafka settings: `kv` is an array of 2*n_kv strings, key then
 * value ("linger.ms", "5", "compression.type", "lz4"), passed through as is
 * after our defaults, so they win. An unknown key or bad value is a
 * CF_ERR_CONFIG naming the key.
 *
 * bootstrap "embedded": cf_producer_new / cf_consumer_new start a private
 * embedded cluster (1 broker) owned by that handle; cf_producer_bootstrap()
 * / cf_consumer_bootstrap() tell its address. To share one embedded cluster
 * between several clients, create a cf_embedded_kafka and pass
 * cf_embedded_kafka_bootstrap() as the bootstrap of each.
 *
 * Threads: a handle is used from one thread at a time. Callbacks run in the
 * thread that calls the function that serves them (documented per function).
 */
#ifndef CDCFLOW_TRANSPORT_H
#define CDCFLOW_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/error.h"
#include "cdcflow/record.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CF_EMBEDDED_BOOTSTRAP "embedded"

/* ================================================================ producer */

typedef struct cf_producer cf_producer;

/* One delivery report. Valid only during the callback. */
typedef struct cf_delivery {
    void *opaque;        /* the opaque given to cf_producer_send */
    uint64_t seq;        /* the sequence number send() returned (1, 2, ...) */
    const char *topic;
    int32_t partition;
    int64_t offset;      /* broker offset; -1 if unknown or failed */
    int64_t timestamp;   /* as stored by the broker when known, else -1 */
    cf_code code;        /* CF_OK: acknowledged by the broker(s) */
    const cf_err *err;   /* NULL when code == CF_OK */
} cf_delivery;

typedef void (*cf_delivery_cb)(const cf_delivery *d, void *ctx);

/* Create a producer. Defaults: enable.idempotence=true, acks=all,
 * linger.ms=5; kv entries override them (but enable.idempotence=false is
 * refused: CF_ERR_CONFIG). bootstrap "embedded" starts a private embedded
 * cluster. Returns NULL and fills err on failure. Caller destroys. */
cf_producer *cf_producer_new(const char *bootstrap, const char *const *kv, size_t n_kv,
                             cf_err *err);

/* Set the delivery callback (before the first send). Without one, reports
 * still advance the watermark and count failures. */
void cf_producer_set_delivery_cb(cf_producer *p, cf_delivery_cb cb, void *ctx);

/* Queue one message (copied; m stays the caller's). Topic from m->topic,
 * partition m->partition (CF_PARTITION_ANY: partitioner on the key),
 * timestamp m->timestamp when ts_type is CF_TS_CREATE (else now), key,
 * value (NULL = null), headers (NULL value = null header). When the local
 * queue is full this serves delivery reports (the callback runs here) and
 * retries until there is room: never drops. *seq_out (may be NULL) gets the
 * message's sequence number. Errors: CF_ERR_INVALID (no topic, too large),
 * CF_ERR_TRANSPORT (fatal producer error, unknown topic/partition). */
cf_code cf_producer_send(cf_producer *p, const cf_msg *m, void *opaque, uint64_t *seq_out,
                         cf_err *err);

/* Serve delivery reports (the callback runs here), waiting up to timeout_ms
 * for the first. CF_ERR_TRANSPORT after a fatal producer error (the
 * idempotence guarantee is broken: destroy the producer). */
cf_code cf_producer_poll(cf_producer *p, int timeout_ms, cf_err *err);

/* Wait until every sent message has a delivery report (callbacks run here).
 * CF_ERR_AGAIN if timeout_ms passed first; CF_ERR_TRANSPORT if any delivery
 * failed since the producer was created (err says the first). */
cf_code cf_producer_flush(cf_producer *p, int timeout_ms, cf_err *err);

/* The highest seq such that every message with seq <= it was acknowledged
 * successfully (0 = none yet). A failed delivery stops it for good: the
 * caller should stop sending, destroy the producer and restart from its last
 * committed source offset (later reports are still tracked, in memory that
 * grows with every further send). */
uint64_t cf_producer_acked_seq(const cf_producer *p);
uint64_t cf_producer_last_seq(const cf_producer *p);  /* last seq handed out */
size_t cf_producer_in_flight(const cf_producer *p);  /* sent, no report yet */
uint64_t cf_producer_failed_count(const cf_producer *p);

/* The bootstrap servers actually used (the embedded cluster's address for
 * "embedded"). Valid while p lives. */
const char *cf_producer_bootstrap(const cf_producer *p);

/* Destroy without waiting: call cf_producer_flush first; messages still
 * queued are purged and get no report. NULL-safe. */
void cf_producer_destroy(cf_producer *p);

/* ================================================================ consumer */

typedef struct cf_consumer cf_consumer;

typedef struct cf_topic_partition {
    char *topic;
    int32_t partition;
    int64_t offset; /* commits: the NEXT offset to read (last processed + 1) */
} cf_topic_partition;

typedef enum cf_rebalance_kind {
    CF_REBALANCE_ASSIGNED = 1, /* called after the partitions were assigned */
    CF_REBALANCE_REVOKED = 2,  /* called before they are taken away: flush + commit now */
    CF_REBALANCE_LOST = 3      /* taken away already (session lost): commits will fail */
} cf_rebalance_kind;

/* parts[i].offset is -1001 (invalid) in rebalance lists. The list is valid
 * only during the call. Called from cf_consumer_poll / cf_consumer_close. */
typedef void (*cf_rebalance_cb)(cf_rebalance_kind kind, const cf_topic_partition *parts, size_t n,
                                void *ctx);

/* Create a consumer in group group_id. Defaults: enable.auto.commit=false,
 * enable.auto.offset.store=false, auto.offset.reset=earliest,
 * enable.partition.eof=false; kv entries override them. Caller destroys. */
cf_consumer *cf_consumer_new(const char *bootstrap, const char *group_id, const char *const *kv,
                             size_t n_kv, cf_err *err);

void cf_consumer_set_rebalance_cb(cf_consumer *c, cf_rebalance_cb cb, void *ctx);

cf_code cf_consumer_subscribe(cf_consumer *c, const char *const *topics, size_t n_topics,
                              cf_err *err);

/* Wait up to timeout_ms for one message and fill *out (cleared first; out
 * owns copies). CF_OK: a message; CF_ERR_AGAIN: none in time; CF_ERR_EOF:
 * end of a partition (only with enable.partition.eof=true; out has topic,
 * partition and offset); CF_ERR_TRANSPORT: a consumer error (err says which;
 * most are retriable by polling again, see cf_consumer_fatal). The rebalance
 * callback runs here. */
cf_code cf_consumer_poll(cf_consumer *c, int timeout_ms, cf_msg *out, cf_err *err);

/* True once the consumer hit a fatal error (e.g. fenced): recreate it. */
bool cf_consumer_fatal(const cf_consumer *c);

/* Commit the given offsets (NEXT offset to read) synchronously, or
 * asynchronously with async (result logged). */
cf_code cf_consumer_commit(cf_consumer *c, const cf_topic_partition *offsets, size_t n,
                           bool async, cf_err *err);

/* Committed offsets of the group for the given partitions (offset fields
 * are filled; -1001 = none). */
cf_code cf_consumer_committed(cf_consumer *c, cf_topic_partition *parts, size_t n, int timeout_ms,
                              cf_err *err);

/* The current assignment; caller frees with cf_topic_partitions_free. */
cf_code cf_consumer_assignment(cf_consumer *c, cf_topic_partition **parts, size_t *n, cf_err *err);
void cf_topic_partitions_free(cf_topic_partition *parts, size_t n);

/* Leave the group (the rebalance callback gets REVOKED here). Idempotent. */
cf_code cf_consumer_close(cf_consumer *c, cf_err *err);

const char *cf_consumer_bootstrap(const cf_consumer *c);

/* Closes if not closed, then frees. NULL-safe. */
void cf_consumer_destroy(cf_consumer *c);

/* ================================================================ admin */

/* Create a topic with the admin API (idempotent: an existing topic is
 * CF_OK, whatever its partition count). replication -1 = broker default.
 * kv: extra librdkafka client settings. */
cf_code cf_kafka_create_topic(const char *bootstrap, const char *topic, int partitions,
                              int replication, const char *const *kv, size_t n_kv, int timeout_ms,
                              cf_err *err);

/* ================================================================ embedded */

typedef struct cf_embedded_kafka cf_embedded_kafka;

/* Start an in-memory cluster of `brokers` (1..16) mock brokers listening on
 * 127.0.0.1 (random ports). Topics are created on first use (or with
 * cf_embedded_kafka_create_topic). */
cf_embedded_kafka *cf_embedded_kafka_new(int brokers, cf_err *err);
/* "127.0.0.1:port,..." valid while k lives. */
const char *cf_embedded_kafka_bootstrap(const cf_embedded_kafka *k);
cf_code cf_embedded_kafka_create_topic(cf_embedded_kafka *k, const char *topic, int partitions,
                                       cf_err *err);
void cf_embedded_kafka_destroy(cf_embedded_kafka *k); /* NULL-safe; all data is gone */

#ifdef __cplusplus
}
#endif
#endif
