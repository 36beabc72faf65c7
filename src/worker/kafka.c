/*
 * kafka.c - the worker's Kafka transport on librdkafka: the idempotent
 * producer of source tasks (and of dead letter queues), the consumer group
 * of sink tasks, and the offsets-topic store.
 *
 * The producer and consumer are written on librdkafka directly rather than
 * on the transport module's cf_producer / cf_consumer: cf_producer_send
 * blocks while librdkafka's queue is full, so during a broker outage a
 * source task could not notice SIGTERM and stop; here a full queue returns
 * CF_ERR_AGAIN and the task loop owns the backoff, the log line per step and
 * the stop check. The offsets-topic reader needs assign-from-beginning and
 * watermarks, which cf_consumer does not offer. The embedded cluster is the
 * transport module's (cf_embedded_kafka).
 *
 * NOTHING IS DROPPED: the producer is idempotent (acks=all, in-order,
 * no duplicates on retry) with message.timeout.ms=0, i.e. librdkafka
 * retries a record until it is delivered; while the broker is unreachable
 * its queue fills, send() returns CF_ERR_AGAIN and the source task stops
 * polling (back-pressure). Records still queued when a task is stopped are
 * purged and reported as not delivered, so their offsets are not stored and
 * they are read again on the next start.
 *
 * LOGGING: librdkafka's own log goes to DEBUG; errors (broker down, ...) are
 * reported at WARN once per backoff step (1 s, 2 s, ... 60 s), and again
 * when a record is acknowledged after errors.
 *
 * CONSUMER: group "connect-<connector>", manual commits, auto.offset.reset=
 * earliest (as Connect's sink tasks). Eager rebalancing: before partitions
 * are revoked the worker's callback flushes the sink and commits.
 *
 * BOUNDED WAITS: librdkafka's synchronous commit and consumer close wait for
 * the group coordinator without a limit (seen: a stop hanging in
 * rd_kafka_commit for 45 s after the broker died). Commits are made
 * asynchronously onto a queue of our own and their answer waited for up to
 * offset.flush.timeout.ms, cut to the task's stop deadline; the close is
 * asynchronous too (rd_kafka_consumer_close_queue) and, when it has not
 * ended by the deadline, the handle is destroyed without it. A commit whose
 * answer came too late is not lost work: what it covered is read again.
 *
 * OFFSETS TOPIC: compacted, created if missing (offset.storage.partitions /
 * replication.factor), read from the beginning to the high watermarks at
 * start; writes use the murmur2 partitioner, as Java clients do, so a key
 * always lands in the partition Connect would put it in.
 *
 * `bootstrap.servers=embedded` starts librdkafka's mock cluster inside the
 * process (for tests and demos; nothing is persisted).
 */
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cdcflow/log.h"
#include "cdcflow/transport.h"
#include "worker_internal.h"

#define COMP "kafka"

/* ---------------- environment: bootstrap, embedded cluster ---------------- */

struct cf_kafka_env {
    char *bootstrap;
    cf_embedded_kafka *embedded; /* the transport module's in-process mock cluster */
};

cf_code cf_kafka_env_new(const cf_config *cfg, cf_kafka_env **out, cf_err *err) {
    size_t n = 0;
    const char *const *bs = cf_config_list(cfg, "bootstrap.servers", &n);
    cf_kafka_env *e = cf_xcalloc(1, sizeof *e);
    if (n == 1 && strcasecmp(bs[0], CF_EMBEDDED_BOOTSTRAP) == 0) {
        /* one cluster shared by every client of this worker */
        e->embedded = cf_embedded_kafka_new(1, err);
        if (!e->embedded) {
            free(e);
            return err ? err->code : CF_ERR_TRANSPORT;
        }
        e->bootstrap = cf_xstrdup(cf_embedded_kafka_bootstrap(e->embedded));
        CF_INFO(COMP, "embedded Kafka cluster (librdkafka mock, in memory) at %s", e->bootstrap);
    } else {
        cf_buf b = CF_BUF_INIT;
        for (size_t i = 0; i < n; i++) cf_buf_printf(&b, "%s%s", i ? "," : "", bs[i]);
        e->bootstrap = cf_buf_detach(&b, NULL);
    }
    *out = e;
    return CF_OK;
}

void cf_kafka_env_destroy(cf_kafka_env *e) {
    if (!e) return;
    cf_embedded_kafka_destroy(e->embedded);
    free(e->bootstrap);
    free(e);
}

const char *cf_kafka_env_bootstrap(const cf_kafka_env *e) { return e ? e->bootstrap : NULL; }

cf_code cf_kafka_env_create_topic(cf_kafka_env *e, const char *topic, int partitions, cf_err *err) {
    if (!e || !e->embedded) return CF_ERR_UNSUPPORTED;
    return cf_embedded_kafka_create_topic(e->embedded, topic, partitions, err);
}

/* ---------------- client configuration ---------------- */

typedef struct errlog {
    char name[256];
    int64_t next_us;
    int backoff_ms;
    atomic_bool in_trouble;
} errlog;

/* A static member's fence: the sink task joins again with a new consumer
 * (sink_task.c), so it is not an error of its own (the task says what it
 * does about it). The error callback has the code (rd_kafka_fatal_error);
 * the log callback has only librdkafka's text, so it goes by that. */
static bool is_fence(const char *text) { return text && strstr(text, "fenced by other consumer"); }

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk;
    if (level <= 2 && is_fence(buf)) cf_log(CF_LOG_WARN, COMP, "librdkafka %s: %s", fac, buf);
    else if (level <= 2) cf_log(CF_LOG_ERROR, COMP, "librdkafka %s: %s", fac, buf);
    else CF_DEBUG(COMP, "librdkafka %s: %s", fac, buf);
}

static void on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque) {
    (void)rk;
    errlog *l = opaque;
    if (!l) return;
    if (code == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[512];
        rd_kafka_resp_err_t fe = rd_kafka_fatal_error(rk, buf, sizeof buf);
        cf_log(fe == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID ? CF_LOG_WARN : CF_LOG_ERROR, COMP, "%s: fatal error: %s",
               l->name, buf);
        return;
    }
    atomic_store(&l->in_trouble, true);
    int64_t now = cf_now_us();
    if (now < l->next_us) return;
    if (!l->backoff_ms) l->backoff_ms = 1000;
    cf_log(CF_LOG_WARN, COMP, "%s: %s (%s); retrying, next report in %d s", l->name, reason,
           rd_kafka_err2name((rd_kafka_resp_err_t)code), l->backoff_ms / 1000);
    l->next_us = now + (int64_t)l->backoff_ms * 1000;
    if (l->backoff_ms < 60000) l->backoff_ms *= 2;
}

static void recovered(errlog *l) {
    /* called for every delivered message: a plain load first, the exchange
     * (a locked instruction) only after trouble */
    if (atomic_load_explicit(&l->in_trouble, memory_order_relaxed) && atomic_exchange(&l->in_trouble, false)) {
        cf_log(CF_LOG_INFO, COMP, "%s: Kafka reachable again", l->name);
        l->backoff_ms = 0;
        l->next_us = 0;
    }
}

static cf_code conf_set(rd_kafka_conf_t *c, const char *k, const char *v, cf_err *err) {
    char errstr[512];
    if (rd_kafka_conf_set(c, k, v, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        cf_err_set(err, CF_ERR_CONFIG, "invalid Kafka client setting \"%s\"", k);
        cf_err_detail(err, "%s", errstr);
        cf_err_hint(err, "producer.*, consumer.* and admin.* settings take librdkafka's names (CONFIGURATION.md).");
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

/* bootstrap + security from the worker + the "<kind>." pass-through, then
 * the connector's "<kind>override." keys (Connect's per-connector client
 * overrides: producer.override.*, consumer.override.*), which win. */
static rd_kafka_conf_t *base_conf_for(struct cf_worker *w, const char *kind, const char *client_id, errlog *l,
                                      const cf_props *conn, cf_err *err);
static rd_kafka_conf_t *base_conf(struct cf_worker *w, const char *kind, const char *client_id, errlog *l,
                                  cf_err *err) {
    return base_conf_for(w, kind, client_id, l, NULL, err);
}
static rd_kafka_conf_t *base_conf_for(struct cf_worker *w, const char *kind, const char *client_id, errlog *l,
                                      const cf_props *conn, cf_err *err) {
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    const cf_props *wp = cf_config_props(cf_worker_config(w));
    cf_code rc = conf_set(c, "bootstrap.servers", cf_worker_kafka_bootstrap(w), err);
    if (!rc && client_id) rc = conf_set(c, "client.id", client_id, err);
    for (size_t i = 0; !rc && i < cf_props_count(wp); i++) {
        const char *k = cf_props_key_at(wp, i);
        if (strncmp(k, "ssl.", 4) == 0 || strncmp(k, "sasl.", 5) == 0 || strcmp(k, "security.protocol") == 0)
            rc = conf_set(c, k, cf_props_value_at(wp, i), err);
    }
    size_t kl = strlen(kind);
    for (size_t i = 0; !rc && i < cf_props_count(wp); i++) {
        const char *k = cf_props_key_at(wp, i);
        if (strncmp(k, kind, kl) == 0) rc = conf_set(c, k + kl, cf_props_value_at(wp, i), err);
    }
    char ov[32];
    snprintf(ov, sizeof ov, "%soverride.", kind);
    size_t ol = strlen(ov);
    for (size_t i = 0; !rc && conn && i < cf_props_count(conn); i++) {
        const char *k = cf_props_key_at(conn, i);
        if (strncmp(k, ov, ol) == 0) {
            rc = conf_set(c, k + ol, cf_props_value_at(conn, i), err);
            if (rc) {
                cf_err_where(err, "%s", k);
                cf_err_hint(err, "%s* takes librdkafka's property names (CONFIGURATION.md of librdkafka); Java-only "
                                 "client settings have no equivalent", ov);
            }
        }
    }
    if (rc) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(c, on_log);
    rd_kafka_conf_set_error_cb(c, on_error);
    rd_kafka_conf_set_opaque(c, l);
    return c;
}

/* ---------------- producer (cf_msg_out) ---------------- */

#define TOPIC_CACHE 16

/* A topic the producer writes to, with its partitions that have a leader
 * for the sticky placement of null-key messages (prod_send_batch). */
typedef struct ptopic {
    rd_kafka_topic_t *rkt;
    /* the partitions with a leader (0 of them: not known, or none has one:
     * librdkafka's partitioner places each message) */
    int32_t *led;
    int32_t nled;
    int64_t learned_us; /* when they were asked for (0: never) */
    uint32_t next;      /* the index into led of the next null-key run (modulo nled) */
} ptopic;

typedef struct prod {
    rd_kafka_t *rk;
    errlog log;
    /* Topic handles by name: producing by name makes librdkafka look the
     * topic up under its handle-wide lock for every message. A task
     * produces to a few topics; beyond TOPIC_CACHE the oldest handle goes. */
    ptopic topics[TOPIC_CACHE];
    size_t nrkt, next_evict;
    rd_kafka_message_t *rkm; /* prod_send_batch's array */
    size_t cap_rkm;
    /* Delivery reports come in runs for one ack (a poll batch): counted
     * here and handed to the ack once per run (dr_settle), not one atomic
     * operation on a cold cache line per message. */
    cf_ack *dr_ack;
    int dr_ok;
} prod;

static void dr_settle(prod *p) {
    if (p->dr_ok) cf_ack_done_n(p->dr_ack, p->dr_ok);
    p->dr_ack = NULL;
    p->dr_ok = 0;
}

static ptopic *prod_ptopic(prod *p, const char *name) {
    for (size_t i = 0; i < p->nrkt; i++)
        if (strcmp(rd_kafka_topic_name(p->topics[i].rkt), name) == 0) return &p->topics[i];
    rd_kafka_topic_t *t = rd_kafka_topic_new(p->rk, name, NULL);
    if (!t) return NULL;
    ptopic *e;
    if (p->nrkt < TOPIC_CACHE) {
        e = &p->topics[p->nrkt++];
    } else {
        /* messages already queued keep their own reference to the topic */
        e = &p->topics[p->next_evict];
        rd_kafka_topic_destroy(e->rkt);
        free(e->led);
        p->next_evict = (p->next_evict + 1) % TOPIC_CACHE;
    }
    /* tasks start their rotation at different partitions */
    *e = (ptopic){.rkt = t, .next = (uint32_t)(cf_now_us() / 1000) ^ (uint32_t)(uintptr_t)p};
    return e;
}

static rd_kafka_topic_t *prod_topic(prod *p, const char *name) {
    ptopic *e = prod_ptopic(p, name);
    return e ? e->rkt : NULL;
}

#define NPARTS_REFRESH_US (60 * 1000000LL) /* partitions may be added to a topic */
#define NPARTS_RETRY_US (10 * 1000000LL)   /* after a failed lookup */

/* The topic's partitions that have a leader, asked of the cluster at first
 * use and once a minute (partitions may be added, leaders move); none while
 * not known (the lookup failed: the topic does not exist yet, or the broker
 * is away). A partition without a leader gets no run: it would wait there
 * (librdkafka's own partitioner, too, picks among available partitions). */
static int32_t topic_partitions(prod *p, ptopic *e) {
    int64_t now = cf_now_us();
    if (e->learned_us && now - e->learned_us < (e->nled ? NPARTS_REFRESH_US : NPARTS_RETRY_US)) return e->nled;
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata(p->rk, 0, e->rkt, &md, 1000) == RD_KAFKA_RESP_ERR_NO_ERROR && md) {
        if (md->topic_cnt == 1 && !md->topics[0].err) { /* a failed refresh keeps what was known */
            const rd_kafka_metadata_topic_t *mt = &md->topics[0];
            e->led = cf_xrealloc(e->led, (size_t)(mt->partition_cnt ? mt->partition_cnt : 1) * sizeof *e->led);
            e->nled = 0;
            for (int i = 0; i < mt->partition_cnt; i++)
                if (mt->partitions[i].leader >= 0) e->led[e->nled++] = mt->partitions[i].id;
        }
        rd_kafka_metadata_destroy(md);
    }
    e->learned_us = now;
    return e->nled;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    prod *p = opaque;
    cf_ack *a = m->_private;
    if (m->err) {
        cf_log(CF_LOG_ERROR, COMP, "%s: record for %s not delivered: %s", p->log.name,
               m->rkt ? rd_kafka_topic_name(m->rkt) : "?", rd_kafka_err2str(m->err));
    } else {
        recovered(&p->log);
    }
    if (!a) return;
    if (a != p->dr_ack || m->err) dr_settle(p);
    if (m->err) {
        cf_ack_done(a, false);
        return;
    }
    p->dr_ack = a;
    p->dr_ok++;
}

static cf_code prod_send(void *st, cf_msg *m, cf_ack *ack, cf_err *err) {
    prod *p = st;
    rd_kafka_topic_t *rkt = m->topic ? prod_topic(p, m->topic) : NULL;
    if (!rkt) {
        cf_err_set(err, CF_ERR_TRANSPORT, "cannot produce to topic \"%s\"", m->topic ? m->topic : "");
        cf_err_detail(err, "%s", m->topic ? rd_kafka_err2str(rd_kafka_last_error()) : "the record has no topic");
        return CF_ERR_TRANSPORT;
    }
    size_t nh = m->n_headers;
    rd_kafka_headers_t *hdrs = nh ? rd_kafka_headers_new(nh) : NULL;
    for (size_t i = 0; i < nh; i++)
        rd_kafka_header_add(hdrs, m->headers[i].key, -1, m->headers[i].value,
                            m->headers[i].value ? (ssize_t)m->headers[i].value_len : 0);
    int32_t part = m->partition >= 0 ? m->partition : RD_KAFKA_PARTITION_UA;
    int64_t ts = m->ts_type != CF_TS_NONE ? m->timestamp : 0;
    rd_kafka_resp_err_t e;
    if (hdrs)
        e = rd_kafka_producev(p->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(part),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(m->key, m->key ? m->key_len : 0),
                              RD_KAFKA_V_VALUE(m->value, m->value ? m->value_len : 0), RD_KAFKA_V_TIMESTAMP(ts),
                              RD_KAFKA_V_OPAQUE(ack), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_END);
    else
        e = rd_kafka_producev(p->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(part),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(m->key, m->key ? m->key_len : 0),
                              RD_KAFKA_V_VALUE(m->value, m->value ? m->value_len : 0), RD_KAFKA_V_TIMESTAMP(ts),
                              RD_KAFKA_V_OPAQUE(ack), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        if (hdrs) rd_kafka_headers_destroy(hdrs);
        return CF_ERR_AGAIN;
    }
    if (e) {
        if (hdrs) rd_kafka_headers_destroy(hdrs);
        cf_err_set(err, CF_ERR_TRANSPORT, "cannot produce to topic \"%s\"", m->topic ? m->topic : "");
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

/* Report m[from..n) as failed for good. */
static void refuse_rest(cf_ack *ack, size_t from, size_t n) {
    for (size_t k = from; k < n; k++) cf_ack_done(ack, false);
}

/* Null key, partition left to the producer: placed by the sticky rule. */
static bool sticky(const cf_msg *m) { return !m->key && m->partition < 0; }

/* One rd_kafka_produce_batch per run of messages to the same topic: the
 * topic is locked and the clocks are read once per run instead of once per
 * message (producev's cost beside the copy).
 *
 * A run of null-key messages goes to one partition, the next run to the
 * next partition: the sticky partitioning of Kafka's producer (KIP-480) and
 * of librdkafka's (sticky.partitioning.linger.ms), done per poll batch. Given
 * one partition, librdkafka appends the whole run to its queue under one
 * lock; left to its partitioner, it locks and signals per message, which
 * capped a source task near 1M records/s here. Keyed messages and those
 * with a partition still go through librdkafka's partitioner (a key keeps
 * its partition, as with any other librdkafka client). Runs go to
 * partitions that had a leader at the last lookup (topic_partitions); one
 * whose leader went away since waits there (retried without a time limit)
 * until the leader is back. */
static cf_code prod_send_batch(void *st, const cf_msg *m, size_t n, cf_ack *ack, size_t *sent, cf_err *err) {
    prod *p = st;
    *sent = 0;
    if (p->cap_rkm < n) {
        p->cap_rkm = n;
        p->rkm = cf_xrealloc(p->rkm, n * sizeof *p->rkm);
    }
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        ptopic *pt = m[i].topic ? prod_ptopic(p, m[i].topic) : NULL;
        rd_kafka_topic_t *rkt = pt ? pt->rkt : NULL;
        if (!rkt) {
            cf_err_set(err, CF_ERR_TRANSPORT, "cannot produce to topic \"%s\"", m[i].topic ? m[i].topic : "");
            cf_err_detail(err, "%s",
                          m[i].topic ? rd_kafka_err2str(rd_kafka_last_error()) : "the record has no topic");
            refuse_rest(ack, i, n);
            return CF_ERR_TRANSPORT;
        }
        bool st_run = sticky(&m[i]);
        while (j < n && m[j].topic && strcmp(m[j].topic, m[i].topic) == 0 && sticky(&m[j]) == st_run) j++;
        int32_t np = st_run ? topic_partitions(p, pt) : 0;
        int32_t part = np > 0 ? pt->led[pt->next++ % (uint32_t)np] : RD_KAFKA_PARTITION_UA;
        for (size_t k = i; k < j; k++)
            p->rkm[k - i] = (rd_kafka_message_t){
                .partition = m[k].partition >= 0 ? m[k].partition : RD_KAFKA_PARTITION_UA,
                .payload = m[k].value,
                .len = m[k].value ? m[k].value_len : 0,
                .key = m[k].key,
                .key_len = m[k].key ? m[k].key_len : 0,
                ._private = ack,
            };
        int good = np > 0 ? rd_kafka_produce_batch(rkt, part, RD_KAFKA_MSG_F_COPY, p->rkm, (int)(j - i))
                          : rd_kafka_produce_batch(rkt, RD_KAFKA_PARTITION_UA,
                                                   RD_KAFKA_MSG_F_COPY | RD_KAFKA_MSG_F_PARTITION, p->rkm, (int)(j - i));
        if ((size_t)good == j - i) {
            *sent = i = j;
            continue;
        }
        size_t f = i;
        while (!p->rkm[f - i].err) f++;
        rd_kafka_resp_err_t e = p->rkm[f - i].err;
        size_t taken_after = 0;
        for (size_t k = f; k < j; k++) taken_after += !p->rkm[k - i].err;
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL && !taken_after) {
            *sent = f; /* a clean cut: the rest again later, in order */
            return CF_ERR_AGAIN;
        }
        /* refused for good, or a message taken after a refused one (its
         * order is lost): a task failure, offsets stop before */
        for (size_t k = f; k < j; k++)
            if (p->rkm[k - i].err) cf_ack_done(ack, false);
        refuse_rest(ack, j, n);
        *sent = n;
        cf_err_set(err, CF_ERR_TRANSPORT, "cannot produce to topic \"%s\"", m[f].topic);
        cf_err_detail(err, "%s%s", rd_kafka_err2str(e), taken_after ? " (and later messages were taken)" : "");
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

static void prod_serve(void *st, int timeout_ms) {
    prod *p = st;
    rd_kafka_poll(p->rk, timeout_ms);
    dr_settle(p);
}

static cf_code prod_flush(void *st, int timeout_ms, cf_err *err) {
    prod *p = st;
    rd_kafka_resp_err_t e = rd_kafka_flush(p->rk, timeout_ms);
    dr_settle(p);
    if (e == RD_KAFKA_RESP_ERR__TIMED_OUT) {
        cf_err_set(err, CF_ERR_AGAIN, "%d records not yet acknowledged by Kafka", rd_kafka_outq_len(p->rk));
        return CF_ERR_AGAIN;
    }
    return CF_OK;
}

static void prod_destroy(void *st) {
    prod *p = st;
    /* what is still queued is reported as not delivered (offsets not stored) */
    rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(p->rk, 0);
    rd_kafka_flush(p->rk, 1000);
    rd_kafka_poll(p->rk, 0);
    dr_settle(p);
    for (size_t i = 0; i < p->nrkt; i++) {
        rd_kafka_topic_destroy(p->topics[i].rkt);
        free(p->topics[i].led);
    }
    rd_kafka_destroy(p->rk);
    free(p->rkm);
    free(p);
}

/* Callbacks share one opaque per client: for a producer it is the prod
 * (delivery reports need it), so its error callback finds the errlog there. */
static void prod_on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque) {
    on_error(rk, code, reason, &((prod *)opaque)->log);
}

cf_code cf_worker_kafka_out_new(struct cf_worker *w, const char *client_id, const cf_props *conn, cf_msg_out *out,
                                cf_err *err) {
    prod *p = cf_xcalloc(1, sizeof *p);
    snprintf(p->log.name, sizeof p->log.name, "producer %s", client_id);
    rd_kafka_conf_t *c = base_conf_for(w, "producer.", client_id, &p->log, conn, err);
    if (!c) {
        free(p);
        return CF_ERR_CONFIG;
    }
    if (conf_set(c, "enable.idempotence", "true", err) || conf_set(c, "acks", "all", err) ||
        conf_set(c, "message.timeout.ms", "0", err)) {
        rd_kafka_conf_destroy(c);
        free(p);
        return CF_ERR_CONFIG;
    }
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
    rd_kafka_conf_set_error_cb(c, prod_on_error);
    rd_kafka_conf_set_opaque(c, p);
    char errstr[512];
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
    if (!p->rk) {
        free(p);
        cf_err_set(err, CF_ERR_CONFIG, "cannot create the Kafka producer %s", client_id);
        cf_err_detail(err, "%s", errstr);
        return CF_ERR_CONFIG;
    }
    *out = (cf_msg_out){p, prod_send, prod_serve, prod_flush, prod_destroy, prod_send_batch};
    return CF_OK;
}

/* ---------------- consumer (cf_msg_in) ---------------- */

typedef struct cons {
    rd_kafka_t *rk;
    errlog log;
    cf_msg_in *self; /* for the revoke callback */
    const _Atomic int64_t *deadline; /* the task's stop deadline (cf_msg_in.deadline) */
    rd_kafka_queue_t *commit_q;      /* answers of our commits */
    uint64_t commit_seq;             /* the commit whose answer is awaited */
    uint64_t nowait_seq;             /* the last commit not waited for (0: none) */
    bool nowait_answered, nowait_ok; /* its answer */
    unsigned revokes; /* partitions taken away so far (see cons_poll) */
    /* the partitions revoked during the current cons_poll call */
    cf_tp_pos *revoked;
    size_t nrevoked, caprevoked;
    bool kicked;     /* a refill was asked for and no message came since (see refill) */
    unsigned kicks;  /* refills asked for (the bench and the tests read it in the log) */
    bool paused;     /* the task is paused (cons_pause): what is assigned is paused or resumed to match */
} cons;

static void revoked_clear(cons *c) {
    for (size_t i = 0; i < c->nrevoked; i++) free(c->revoked[i].topic);
    c->nrevoked = 0;
}

static bool was_revoked(const cons *c, const char *topic, int32_t partition) {
    for (size_t i = 0; i < c->nrevoked; i++)
        if (c->revoked[i].partition == partition && strcmp(c->revoked[i].topic, topic) == 0) return true;
    return false;
}

static void cons_on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque) {
    on_error(rk, code, reason, &((cons *)opaque)->log);
}

/* Both rebalance protocols: eager (range, roundrobin: every partition is
 * revoked, then the new assignment given) and cooperative
 * (cooperative-sticky, KIP-429: only the partitions that move are revoked,
 * the others are read on meanwhile), which need their own (un)assign calls. */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t e, rd_kafka_topic_partition_list_t *parts, void *opaque) {
    cons *c = opaque;
    const char *proto = rd_kafka_rebalance_protocol(rk);
    bool coop = proto && strcmp(proto, "COOPERATIVE") == 0;
    rd_kafka_error_t *ierr = NULL;
    rd_kafka_resp_err_t aerr = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (e == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        CF_INFO(COMP, "%s: %d partitions assigned%s", c->log.name, parts->cnt, coop ? " (incremental)" : "");
        if (c->self && c->self->on_assign && parts->cnt) { /* start where the sink's own positions say */
            cf_tp_pos *a = cf_xcalloc((size_t)parts->cnt, sizeof *a);
            for (int i = 0; i < parts->cnt; i++) a[i] = (cf_tp_pos){parts->elems[i].topic, parts->elems[i].partition, -1};
            c->self->on_assign(c->self->revoke_arg, a, (size_t)parts->cnt);
            for (int i = 0; i < parts->cnt; i++)
                if (a[i].next_offset >= 0) parts->elems[i].offset = a[i].next_offset;
            free(a);
        }
        if (coop) ierr = rd_kafka_incremental_assign(rk, parts);
        else aerr = rd_kafka_assign(rk, parts);
        /* What is given takes the task's pause state, as in a Connect task
         * (WorkerSinkTask pauses what it is given while paused). Both ways
         * matter: librdkafka fetches a partition new to this handle at once,
         * paused task or not; and it keeps the pause of a partition that was
         * paused when it was taken away, so a partition that comes back after
         * a pause, a rebalance and a resume was never read again. */
        if (!ierr && !aerr) {
            if (c->paused) rd_kafka_pause_partitions(rk, parts);
            else rd_kafka_resume_partitions(rk, parts);
        }
    } else {
        /* give nothing away before what was read from it is flushed and committed */
        CF_INFO(COMP, "%s: %d partitions revoked%s: flushing and committing first", c->log.name, parts->cnt,
                coop ? " (incremental)" : "");
        size_t base = c->nrevoked;
        if (c->nrevoked + (size_t)parts->cnt > c->caprevoked) {
            c->caprevoked = c->nrevoked + (size_t)parts->cnt + 8;
            c->revoked = cf_xrealloc(c->revoked, c->caprevoked * sizeof *c->revoked);
        }
        for (int i = 0; i < parts->cnt; i++)
            c->revoked[c->nrevoked++] = (cf_tp_pos){cf_xstrdup(parts->elems[i].topic), parts->elems[i].partition, -1};
        if (c->self && c->self->on_revoke) c->self->on_revoke(c->self->revoke_arg, c->revoked + base, (size_t)parts->cnt);
        if (coop) ierr = rd_kafka_incremental_unassign(rk, parts);
        else aerr = rd_kafka_assign(rk, NULL);
        c->revokes++;
    }
    if (ierr) {
        CF_ERROR(COMP, "%s: incremental (un)assign failed: %s", c->log.name, rd_kafka_error_string(ierr));
        rd_kafka_error_destroy(ierr);
    } else if (aerr) {
        CF_ERROR(COMP, "%s: (un)assign failed: %s", c->log.name, rd_kafka_err2str(aerr));
    }
}

static int64_t list_lag(cons *c, const rd_kafka_topic_partition_list_t *l, bool pos, cf_tp_lag **parts,
                        size_t *nparts);

/* THE REFILL STALL. librdkafka 2.0.2 (Debian 12's) stops fetching a
 * partition whose queue is over queued.max.messages.kbytes or
 * queued.min.messages and looks at it again only when its broker thread
 * wakes up: at the latest after a second (1.x/2.0 have no
 * fetch.queue.backoff.ms; 2.1 added it, default 1 s too). A sink that drains
 * the 32 MB queue in a quarter of a second then sat idle for the rest of
 * it: 40,000-60,000 events/s behind a broker that could give five times
 * that (issue 18). So when the queue is empty while the partitions have
 * records left (the high watermarks of the last fetches), the positions are
 * sought again where they are: a seek wakes the fetcher at once, and with
 * an empty queue nothing fetched is thrown away (a fetch in flight is asked
 * again). Once per message received, so a slow fetch (a remote broker) is
 * never cut off twice in a row. */
static void refill(cons *c) {
    if (c->kicked) return;
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(c->rk, &l) || !l) return;
    if (l->cnt && rd_kafka_position(c->rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR && list_lag(c, l, true, NULL, NULL) > 0) {
        /* only what has a position: the others have not started fetching */
        rd_kafka_topic_partition_list_t *go = rd_kafka_topic_partition_list_new(l->cnt);
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].offset >= 0)
                rd_kafka_topic_partition_list_add(go, l->elems[i].topic, l->elems[i].partition)->offset =
                    l->elems[i].offset;
        if (go->cnt) {
            rd_kafka_error_t *e = rd_kafka_seek_partitions(c->rk, go, 0); /* 0: asynchronous */
            if (e) rd_kafka_error_destroy(e);
            c->kicked = true;
            c->kicks++;
        }
        rd_kafka_topic_partition_list_destroy(go);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* A fatal error of the consumer (librdkafka's: the handle cannot go on)
 * ends this consumer: it used to be only logged, and the task stayed
 * RUNNING while reading nothing (seen in the kill schedules, issue 16).
 * FENCED_INSTANCE_ID (a static member, group.instance.id, replaced by one
 * with the same id; also seen after broker restarts with no other member)
 * sets `fenced`: the sink task makes a new consumer and joins again, and
 * fails only when fences repeat (sink_task.c rejoin). Any other fatal error
 * fails the task, as it fails a Connect task. */
static cf_code cons_fatal(cons *c, cf_err *err) {
    char why[512];
    rd_kafka_resp_err_t fe = rd_kafka_fatal_error(c->rk, why, sizeof why);
    if (!fe) return CF_OK;
    char iid[256];
    size_t iidlen = sizeof iid;
    const rd_kafka_conf_t *conf = rd_kafka_conf(c->rk);
    if (rd_kafka_conf_get(conf, "group.instance.id", iid, &iidlen) != RD_KAFKA_CONF_OK) iid[0] = 0;
    cf_err_set(err, CF_ERR_STATE, "the Kafka consumer stopped with a fatal error: %s (%s)", why, rd_kafka_err2name(fe));
    if (fe == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID && c->self) c->self->fenced = true;
    if (fe == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID)
        cf_err_detail(err, "another consumer joined the group with the same group.instance.id \"%s\"; this one may not "
                           "read any more", iid);
    else
        cf_err_detail(err, "librdkafka cannot go on with this consumer; nothing read after it is lost (the offsets "
                           "committed before it stay)");
    cf_err_hint(err, "restart the task (POST /connectors/<name>/tasks/<id>/restart) or the worker; when two workers "
                     "run with one group.instance.id, give each its own");
    cf_err_where(err, "%s", c->log.name);
    return CF_ERR_STATE;
}

static cf_code cons_poll(void *st, cf_msg **out, size_t max, size_t *n, int timeout_ms, cf_err *err) {
    cons *c = st;
    *n = 0;
    cf_code frc = cons_fatal(c, err);
    if (frc) return frc;
    unsigned revokes = c->revokes;
    revoked_clear(c);
    bool first = true;
    while (*n < max) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, 0);
        if (!m && first && timeout_ms > 0) {
            refill(c);
            m = rd_kafka_consumer_poll(c->rk, timeout_ms);
        }
        first = false;
        if (c->revokes != revokes) {
            /* Partitions were revoked inside that poll (the rebalance
             * callback runs there), after the messages collected so far in
             * this call were read but before they were put: the commit of
             * the revoke does not cover them and their partitions' new owner
             * reads them again from that commit. Putting them here too was a
             * duplicate (93 of 20,000 in test_it_worker's rebalance under
             * load): drop those of the revoked partitions (with the eager
             * protocol, all); whoever owns them now reads them. */
            size_t j = 0;
            for (size_t i = 0; i < *n; i++) {
                if (was_revoked(c, out[i]->topic, out[i]->partition)) cf_msg_destroy(out[i]);
                else out[j++] = out[i];
            }
            *n = j;
            revokes = c->revokes;
        }
        if (!m) break;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                on_error(c->rk, m->err, rd_kafka_message_errstr(m), &c->log);
            rd_kafka_message_destroy(m);
            continue;
        }
        recovered(&c->log);
        c->kicked = false;
        /* one allocation per message (topic, key and value in it) */
        cf_msg *x = cf_msg_new_packed(rd_kafka_topic_name(m->rkt), m->key, m->key_len, m->payload, m->len);
        x->partition = m->partition;
        x->offset = m->offset;
        rd_kafka_timestamp_type_t tt;
        x->timestamp = rd_kafka_message_timestamp(m, &tt);
        x->ts_type = (cf_ts_type)tt;
        rd_kafka_headers_t *h = NULL;
        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h) {
            const char *name;
            const void *val;
            size_t sz;
            for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &sz) == RD_KAFKA_RESP_ERR_NO_ERROR; i++)
                cf_msg_add_header(x, name, val, sz);
        }
        rd_kafka_message_destroy(m);
        out[(*n)++] = x;
    }
    return CF_OK;
}

/* When a wait that began at start_us and may last until until_us must end:
 * earlier if the task's stop deadline comes first, but not before
 * start_us + CF_STOP_MIN_WAIT_MS (100 ms: a healthy broker answers well
 * within it, so a stop past its deadline still commits). */
static int64_t wait_end(const cons *c, int64_t start_us, int64_t until_us) {
    int64_t d = c->deadline ? atomic_load(c->deadline) : 0;
    if (!d) return until_us;
    if (d < start_us + 100000) d = start_us + 100000;
    return d < until_us ? d : until_us;
}

/* A commit's answer, or 0 when the event was the answer of an older commit. */
static int commit_answer(cons *c, rd_kafka_event_t *ev, rd_kafka_resp_err_t *e) {
    if (rd_kafka_event_type(ev) != RD_KAFKA_EVENT_OFFSET_COMMIT) return 0;
    if ((uint64_t)(uintptr_t)rd_kafka_event_opaque(ev) != c->commit_seq) {
        /* an earlier commit answered after its wait gave up, or one not
         * waited for: logged (a later commit covers what it held) */
        rd_kafka_resp_err_t old = rd_kafka_event_error(ev);
        const rd_kafka_topic_partition_list_t *l = rd_kafka_event_topic_partition_list(ev);
        for (int i = 0; !old && l && i < l->cnt; i++)
            if (l->elems[i].err) old = l->elems[i].err;
        if (c->nowait_seq && (uint64_t)(uintptr_t)rd_kafka_event_opaque(ev) == c->nowait_seq) {
            c->nowait_answered = true;
            c->nowait_ok = !old || old == RD_KAFKA_RESP_ERR__NO_OFFSET;
        }
        if (old && old != RD_KAFKA_RESP_ERR__NO_OFFSET)
            CF_WARN(COMP, "%s: an earlier commit of consumer offsets failed: %s; the next commit covers its "
                    "positions (until then a restart reads them again)", c->log.name, rd_kafka_err2str(old));
        else
            CF_DEBUG(COMP, "%s: late answer of an earlier commit: ok", c->log.name);
        return 0;
    }
    *e = rd_kafka_event_error(ev);
    const rd_kafka_topic_partition_list_t *l = rd_kafka_event_topic_partition_list(ev);
    for (int i = 0; !*e && l && i < l->cnt; i++)
        if (l->elems[i].err) *e = l->elems[i].err;
    return 1;
}

/* Answers that arrived, read without waiting (commit_answer logs them). */
static void read_answers(cons *c) {
    for (rd_kafka_event_t *ev; (ev = rd_kafka_queue_poll(c->commit_q, 0));) {
        rd_kafka_resp_err_t ignored;
        commit_answer(c, ev, &ignored);
        rd_kafka_event_destroy(ev);
    }
}

static bool cons_committed(void *st) {
    cons *c = st;
    if (!c->nowait_seq) return true;
    read_answers(c);
    return c->nowait_answered && c->nowait_ok;
}

static cf_code cons_commit(void *st, const cf_tp_pos *pos, size_t n, int timeout_ms, cf_err *err) {
    cons *c = st;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n);
    for (size_t i = 0; i < n; i++) rd_kafka_topic_partition_list_add(l, pos[i].topic, pos[i].partition)->offset = pos[i].next_offset;
    uint64_t seq = ++c->commit_seq;
    read_answers(c); /* of earlier commits (not waited for, or after their wait ended): logged now */
    rd_kafka_resp_err_t e = rd_kafka_commit_queue(c->rk, l, c->commit_q, NULL, (void *)(uintptr_t)seq);
    rd_kafka_topic_partition_list_destroy(l);
    if (timeout_ms == 0 && !e) {
        c->commit_seq++; /* its answer is an earlier commit's when it comes */
        c->nowait_seq = seq;
        c->nowait_answered = c->nowait_ok = false;
        return CF_OK;
    }
    c->nowait_seq = 0; /* waited for: it covers what the last one not waited for held */
    bool answered = e != RD_KAFKA_RESP_ERR_NO_ERROR;
    int64_t start = cf_now_us(), until = start + (int64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000;
    while (!answered) {
        int64_t left = wait_end(c, start, until) - cf_now_us();
        if (left <= 0) break;
        rd_kafka_event_t *ev = rd_kafka_queue_poll(c->commit_q, left > 50000 ? 50 : (int)(left / 1000) + 1);
        if (!ev) continue;
        answered = commit_answer(c, ev, &e);
        rd_kafka_event_destroy(ev);
    }
    if (!answered) {
        cf_err_set(err, CF_ERR_AGAIN, "consumer offsets not committed (%s): no answer within %lld ms", c->log.name,
                   (long long)((cf_now_us() - start) / 1000));
        cf_err_detail(err, "the group coordinator is unreachable or slow");
        cf_err_hint(err, "What they cover is read again after a restart; check that the broker is reachable.");
        return CF_ERR_AGAIN;
    }
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
        cf_err_set(err, CF_ERR_TRANSPORT, "cannot commit consumer offsets (%s)", c->log.name);
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

static void cons_pause(void *st, bool paused) {
    cons *c = st;
    c->paused = paused;
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(c->rk, &l) || !l) return;
    if (paused) rd_kafka_pause_partitions(c->rk, l);
    else rd_kafka_resume_partitions(c->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
}

/* Records behind: high watermark (as last fetched, no request) minus the
 * position, summed over the assignment, and per partition when asked (a
 * partition with no position or no watermark yet is behind by 0, as
 * Connect's consumer records-lag is absent then). */
static int64_t list_lag(cons *c, const rd_kafka_topic_partition_list_t *l, bool pos, cf_tp_lag **parts,
                        size_t *nparts) {
    int64_t lag = 0;
    if (parts && l->cnt) *parts = cf_xcalloc((size_t)l->cnt, sizeof **parts);
    for (int i = 0; i < l->cnt; i++) {
        int64_t lo = -1, hi = -1, behind = 0;
        if (pos && !rd_kafka_get_watermark_offsets(c->rk, l->elems[i].topic, l->elems[i].partition, &lo, &hi) &&
            hi >= 0 && l->elems[i].offset >= 0 && hi > l->elems[i].offset)
            behind = hi - l->elems[i].offset;
        lag += behind;
        if (parts) (*parts)[(*nparts)++] = (cf_tp_lag){cf_xstrdup(l->elems[i].topic), l->elems[i].partition, behind};
    }
    return lag;
}

/* the assignment with its positions (l), behind by list_lag */
static int64_t cons_lag(void *st, cf_tp_lag **parts, size_t *nparts) {
    cons *c = st;
    if (parts) *parts = NULL, *nparts = 0;
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(c->rk, &l) || !l) return 0;
    bool pos = l->cnt && rd_kafka_position(c->rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR;
    int64_t lag = list_lag(c, l, pos, parts, nparts);
    rd_kafka_topic_partition_list_destroy(l);
    return lag;
}

void cf_tp_lag_free(cf_tp_lag *v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i].topic);
    free(v);
}

/* Leaving the group runs in a thread of its own: librdkafka's close and
 * destroy wait for the group coordinator (for session.timeout.ms, 45 s, when
 * it is gone and a commit or an offset query is pending: measured with
 * librdkafka 2.0.2), and nothing cancels that wait. The task waits for it
 * until its stop deadline (5 s when it is not stopping), then leaves it to
 * finish in the background: the handle is freed when librdkafka is done, or
 * with the process. Nothing is lost either way: the group only takes longer
 * to give the partitions to another member. */
typedef struct reaper {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done, abandoned;
    cons *c;
} reaper;

static void cons_free(cons *c) {
    rd_kafka_queue_destroy(c->commit_q);
    rd_kafka_destroy(c->rk);
    revoked_clear(c);
    free(c->revoked);
    free(c);
}

static void reaper_free(reaper *r) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

static void *reap(void *arg) {
    reaper *r = arg;
    cons *c = r->c;
    rd_kafka_consumer_close(c->rk); /* leaves the group (a revoke runs first) */
    pthread_mutex_lock(&r->mu);
    bool abandoned = r->abandoned;
    r->done = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (abandoned) {
        CF_INFO(COMP, "%s: left the group in the background", c->log.name);
        cons_free(c);
        reaper_free(r);
    }
    return NULL;
}

static void cons_destroy(void *st) {
    cons *c = st;
    if (c->kicks) CF_DEBUG(COMP, "%s: %u fetch refills asked for", c->log.name, c->kicks);
    c->self = NULL; /* the revoke of the close must not call back into the task */
    reaper *r = cf_xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->c = c;
    pthread_t th;
    if (pthread_create(&th, NULL, reap, r) != 0) {
        reap(r); /* no thread: close here */
        cons_free(c);
        reaper_free(r);
        return;
    }
    pthread_detach(th);
    int64_t start = cf_now_us(), end = wait_end(c, start, start + 5000000);
    pthread_mutex_lock(&r->mu);
    while (!r->done) {
        int64_t left = end - cf_now_us();
        if (left <= 0) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        left = left > 50000 ? 50000 : left;
        ts.tv_nsec += (long)left * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    bool done = r->done;
    if (!done) r->abandoned = true;
    pthread_mutex_unlock(&r->mu);
    if (done) {
        cons_free(c);
        reaper_free(r);
    } else {
        CF_WARN(COMP, "%s: did not leave the group within %lld ms (coordinator unreachable); it leaves in the "
                      "background",
                c->log.name, (long long)((cf_now_us() - start) / 1000));
    }
}

cf_code cf_worker_kafka_in_new(struct cf_worker *w, const char *group, const char *const *topics, size_t n_topics,
                               const char *topics_regex, const cf_props *conn, cf_msg_in *in, cf_err *err) {
    cons *c = cf_xcalloc(1, sizeof *c);
    snprintf(c->log.name, sizeof c->log.name, "consumer %s", group);
    rd_kafka_conf_t *conf = base_conf_for(w, "consumer.", NULL, &c->log, conn, err);
    if (!conf) {
        free(c);
        return CF_ERR_CONFIG;
    }
    if (conf_set(conf, "group.id", group, err) || conf_set(conf, "enable.auto.commit", "false", err) ||
        conf_set(conf, "enable.auto.offset.store", "false", err)) {
        rd_kafka_conf_destroy(conf);
        free(c);
        return CF_ERR_CONFIG;
    }
    const cf_props *wp = cf_config_props(cf_worker_config(w));
    /* our defaults yield to the worker's consumer.* and the connector's
     * consumer.override.* */
    if (!cf_props_has(wp, "consumer.auto.offset.reset") && !(conn && cf_props_has(conn, "consumer.override.auto.offset.reset")))
        conf_set(conf, "auto.offset.reset", "earliest", NULL);
    /* The memory a sink task's consumer prefetches: bounded by our default,
     * not librdkafka's 64 MB (the resident size stays under 128 MB);
     * consumer.queued.max.messages.kbytes changes it. With the refill of
     * cons_poll (see refill) the size no longer costs throughput: in
     * bench_sink_kafka 8, 16 and 64 MB ran at the same rate, so 8 MB it is. */
    if (!cf_props_has(wp, "consumer.queued.max.messages.kbytes") &&
        !(conn && cf_props_has(conn, "consumer.override.queued.max.messages.kbytes")))
        conf_set(conf, "queued.max.messages.kbytes", CF_SINK_CONSUMER_QUEUE_KB, NULL);
    rd_kafka_conf_set_error_cb(conf, cons_on_error);
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_opaque(conf, c);
    char errstr[512];
    c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!c->rk) {
        free(c);
        cf_err_set(err, CF_ERR_CONFIG, "cannot create the Kafka consumer for group %s", group);
        cf_err_detail(err, "%s", errstr);
        return CF_ERR_CONFIG;
    }
    rd_kafka_poll_set_consumer(c->rk);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new((int)n_topics + 1);
    for (size_t i = 0; i < n_topics; i++) rd_kafka_topic_partition_list_add(sub, topics[i], RD_KAFKA_PARTITION_UA);
    if (topics_regex && *topics_regex) {
        /* librdkafka takes a regex subscription when the name starts with ^ */
        size_t l = strlen(topics_regex);
        char *re = cf_xmalloc(l + 4);
        snprintf(re, l + 4, "^%s%s", topics_regex[0] == '^' ? topics_regex + 1 : topics_regex,
                 topics_regex[l - 1] == '$' ? "" : "$");
        rd_kafka_topic_partition_list_add(sub, re, RD_KAFKA_PARTITION_UA);
        free(re);
    }
    rd_kafka_resp_err_t e = rd_kafka_subscribe(c->rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (e) {
        rd_kafka_destroy(c->rk);
        free(c);
        cf_err_set(err, CF_ERR_TRANSPORT, "cannot subscribe group %s", group);
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    c->commit_q = rd_kafka_queue_new(c->rk);
    *in = (cf_msg_in){c, cons_poll, cons_commit, cons_destroy, cons_pause, cons_lag, NULL, NULL, NULL, NULL, cons_committed, false};
    return CF_OK;
}

/* The rebalance callback needs the cf_msg_in where the worker set
 * on_revoke (its own copy of *in), and the commits its deadline: the worker
 * binds it after setting them. */
void cf_worker_kafka_in_bind(cf_msg_in *in) {
    if (in->poll != cons_poll) return;
    ((cons *)in->state)->self = in;
    ((cons *)in->state)->deadline = in->deadline;
}

/* ---------------- offsets topic ---------------- */

typedef struct otopic {
    prod p;
    char *topic;
    int timeout_ms; /* offset.flush.timeout.ms */
    atomic_int failed;
    bool unsynced; /* the last sync did not end: writes may be queued for an unreachable broker */
} otopic;

static void ot_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    otopic *o = opaque;
    if (m->err) {
        atomic_fetch_add(&o->failed, 1);
        cf_log(CF_LOG_ERROR, COMP, "offsets topic %s: write failed: %s", o->topic, rd_kafka_err2str(m->err));
    } else {
        recovered(&o->p.log);
    }
}

static void ot_on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque) {
    on_error(rk, code, reason, &((otopic *)opaque)->p.log);
}

static cf_code ot_write(void *st, const char *key, const char *value, cf_err *err) {
    otopic *o = st;
    int64_t until = cf_now_us() + (int64_t)o->timeout_ms * 1000;
    for (int backoff = 100;; backoff = backoff < 1000 ? backoff * 2 : backoff) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            o->p.rk, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE((void *)value, value ? strlen(value) : 0), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            /* bounded: the flush that writes is retried at the next interval */
            if (cf_now_us() >= until) {
                cf_err_set(err, CF_ERR_AGAIN, "offsets not stored in topic %s: the writer's queue is full", o->topic);
                cf_err_detail(err, "Kafka did not take them within %d ms (offset.flush.timeout.ms)", o->timeout_ms);
                cf_err_hint(err, "They are written again at the next commit; check that the broker is reachable.");
                return CF_ERR_AGAIN;
            }
            rd_kafka_poll(o->p.rk, backoff);
            continue;
        }
        if (e) {
            cf_err_set(err, CF_ERR_TRANSPORT, "cannot write to the offsets topic %s", o->topic);
            cf_err_detail(err, "%s", rd_kafka_err2str(e));
            return CF_ERR_TRANSPORT;
        }
        return CF_OK;
    }
}

static cf_code ot_sync(void *st, int timeout_ms, cf_err *err) {
    otopic *o = st;
    /* bounded (offset.flush.timeout.ms, or what is left of a stop): a
     * commit that cannot finish now is retried at the next one */
    int wait = timeout_ms < 0 || timeout_ms > o->timeout_ms ? o->timeout_ms : timeout_ms;
    rd_kafka_resp_err_t e = rd_kafka_flush(o->p.rk, wait);
    int failed = atomic_exchange(&o->failed, 0);
    o->unsynced = e == RD_KAFKA_RESP_ERR__TIMED_OUT;
    if (e == RD_KAFKA_RESP_ERR__TIMED_OUT || failed) {
        cf_err_set(err, CF_ERR_TRANSPORT, "offsets not stored in topic %s", o->topic);
        if (e) cf_err_detail(err, "Kafka did not acknowledge them within %d ms", wait);
        else cf_err_detail(err, "%d writes failed", failed);
        cf_err_hint(err, "They are written again at the next commit; check that the broker is reachable.");
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

static void ot_destroy(void *st) {
    otopic *o = st;
    /* what the last sync could not deliver waits for an unreachable broker:
     * the stop already said so; do not wait for it again */
    if (o->unsynced) rd_kafka_purge(o->p.rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_flush(o->p.rk, o->unsynced ? 100 : 1000);
    rd_kafka_destroy(o->p.rk);
    free(o->topic);
    free(o);
}

static const cf_offset_backend ot_backend = {ot_write, ot_sync, ot_destroy};

/* An offsets topic that was there before us: Java Connect refuses one that is
 * not compacted (old offsets would be deleted by retention, and a restart
 * would replay from the beginning); we warn and go on, so that a user's
 * existing topic still works. Another partition count than
 * offset.storage.partitions is harmless to us (keys are placed by murmur2 on
 * the topic's real count, as Java's producer does) but usually means two
 * workers configured differently: say so. */
static void check_existing_topic(rd_kafka_t *rk, const char *topic, int partitions) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (rkt && rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt != partitions)
            CF_WARN(COMP,
                    "offsets topic %s has %d partitions, offset.storage.partitions says %d: workers that share "
                    "it should agree (set offset.storage.partitions=%d, or use another offset.storage.topic)",
                    topic, md->topics[0].partition_cnt, partitions, md->topics[0].partition_cnt);
        rd_kafka_metadata_destroy(md);
    }
    if (rkt) rd_kafka_topic_destroy(rkt);

    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 10000);
    const char *policy = NULL;
    if (ev && !rd_kafka_event_error(ev)) {
        const rd_kafka_DescribeConfigs_result_t *res = rd_kafka_event_DescribeConfigs_result(ev);
        size_t n = 0, nc = 0;
        const rd_kafka_ConfigResource_t **rs = res ? rd_kafka_DescribeConfigs_result_resources(res, &n) : NULL;
        const rd_kafka_ConfigEntry_t **ce = n == 1 ? rd_kafka_ConfigResource_configs(rs[0], &nc) : NULL;
        for (size_t i = 0; i < nc; i++)
            if (!strcmp(rd_kafka_ConfigEntry_name(ce[i]), "cleanup.policy")) policy = rd_kafka_ConfigEntry_value(ce[i]);
        if (policy && !strstr(policy, "compact"))
            CF_WARN(COMP,
                    "offsets topic %s has cleanup.policy=%s, not compact: retention will delete stored offsets and "
                    "sources will read again from the beginning (Kafka Connect refuses such a topic); set it with "
                    "kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact",
                    topic, policy, topic);
    }
    if (!policy)
        CF_DEBUG(COMP, "offsets topic %s: cleanup.policy not known (%s)", topic,
                 ev ? rd_kafka_event_error_string(ev) : "no answer within 10 s");
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy(cr);
}

/* Create a topic through the admin API unless it exists: `what` names it in
 * the log ("offsets topic", "dead letter queue topic"), compact asks for
 * cleanup.policy=compact. Returns true when it was there before. */
static bool create_topic(rd_kafka_t *rk, const char *bootstrap, const char *what, const char *topic, int partitions,
                         int rf, bool compact, const atomic_bool *stop) {
    char errstr[256];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, rf, errstr, sizeof errstr);
    if (!nt) {
        CF_WARN(COMP, "could not create the %s %s: %s", what, topic, errstr);
        return false;
    }
    if (compact) rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    CF_INFO(COMP, "connecting to %s: creating the %s %s unless it exists (waits up to 15 s for an answer)", bootstrap,
            what, topic);
    /* one-second slices, so that a broker that does not answer is said to
     * be waited for, not 15 s of silence */
    rd_kafka_event_t *ev = NULL;
    for (int waited = 0; !ev && waited < 15 && !(stop && atomic_load(stop)); waited++) {
        ev = rd_kafka_queue_poll(q, 1000);
        if (!ev && waited % 3 == 2 && waited < 14)
            CF_INFO(COMP, "still waiting for %s to answer (creating the %s %s: %d of 15 s)", bootstrap, what, topic,
                    waited + 1);
    }
    bool exists = false;
    if (ev) {
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        size_t n = 0;
        const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
        if (n == 1 && rd_kafka_topic_result_error(tr[0]) == RD_KAFKA_RESP_ERR_NO_ERROR)
            CF_INFO(COMP, "created the %s %s (%d partition%s%s)", what, topic, partitions, partitions == 1 ? "" : "s",
                    compact ? ", compacted" : "");
        else if (n == 1 && rd_kafka_topic_result_error(tr[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            CF_WARN(COMP, "could not create the %s %s: %s (it may be auto-created with the broker's defaults%s)", what,
                    topic, rd_kafka_topic_result_error_string(tr[0]), compact ? ", not compacted" : "");
        else if (n == 1)
            exists = true;
        rd_kafka_event_destroy(ev);
    } else {
        CF_WARN(COMP, "no answer to creating the %s %s within 15 s (it may be auto-created with the broker's defaults)",
                what, topic);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    return exists;
}

static void ensure_topic(rd_kafka_t *rk, const char *bootstrap, const char *topic, int partitions, int rf) {
    if (create_topic(rk, bootstrap, "offsets topic", topic, partitions, rf, true, NULL))
        check_existing_topic(rk, topic, partitions);
}

cf_code cf_worker_check_overrides(struct cf_worker *w, const char *connector, const cf_props *conn, cf_err *err) {
    const char *policy = cf_config_string(cf_worker_config(w), "connector.client.config.override.policy");
    if (!strcasecmp(policy, "All")) return CF_OK;
    static const char *const principal[] = {"sasl.jaas.config", "sasl.mechanism", "security.protocol", NULL};
    for (size_t i = 0; i < cf_props_count(conn); i++) {
        const char *k = cf_props_key_at(conn, i);
        const char *rest = !strncmp(k, "producer.override.", 18)   ? k + 18
                           : !strncmp(k, "consumer.override.", 18) ? k + 18
                           : !strncmp(k, "admin.override.", 15)    ? k + 15
                                                                   : NULL;
        if (!rest) continue;
        bool ok = false;
        for (int j = 0; !strcasecmp(policy, "Principal") && principal[j]; j++) ok = ok || !strcmp(rest, principal[j]);
        if (ok) continue;
        cf_err_set(err, CF_ERR_CONFIG, "connector \"%s\": %s may not be overridden", connector, k);
        cf_err_detail(err, "the worker's connector.client.config.override.policy is %s%s", policy,
                      !strcasecmp(policy, "Principal") ? " (only sasl.jaas.config, sasl.mechanism, security.protocol)" : "");
        cf_err_hint(err, "remove %s from the connector, or set connector.client.config.override.policy=All in the "
                         "worker file", k);
        cf_err_where(err, "%s", k);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

void cf_worker_kafka_ensure_topic(struct cf_worker *w, const char *what, const char *topic, int partitions, int rf,
                                  const cf_props *conn, const atomic_bool *stop) {
    cf_err te;
    cf_err_clear(&te);
    cf_code trc = cf_kafka_env_create_topic(cf_worker_kafka_env(w), topic, partitions, &te);
    if (trc != CF_ERR_UNSUPPORTED) return; /* the embedded cluster made it (or has it) */
    errlog l = {0};
    snprintf(l.name, sizeof l.name, "admin %s", topic);
    rd_kafka_conf_t *c = base_conf_for(w, "admin.", NULL, &l, conn, &te);
    if (!c) {
        CF_WARN(COMP, "could not create the %s %s: %s", what, topic, te.message);
        return;
    }
    char errstr[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
    if (!rk) {
        rd_kafka_conf_destroy(c);
        CF_WARN(COMP, "could not create the %s %s: %s", what, topic, errstr);
        return;
    }
    create_topic(rk, cf_worker_kafka_bootstrap(w), what, topic, partitions, rf, false, stop);
    rd_kafka_destroy(rk);
}

static rd_kafka_topic_partition_list_t *tp_list(const cf_tp_pos *v, size_t n) {
    rd_kafka_topic_partition_list_t *pl = rd_kafka_topic_partition_list_new((int)n);
    for (size_t i = 0; i < n; i++) rd_kafka_topic_partition_list_add(pl, v[i].topic, v[i].partition)->offset = v[i].next_offset;
    return pl;
}

/* One admin request's answer (ev NULL: none in time): the event's error,
 * else the group's, else the first partition's. */
static cf_code group_result(rd_kafka_event_t *ev, const rd_kafka_group_result_t **gs, size_t n, const char *what,
                            const char *group, bool missing_ok, cf_err *err) {
    if (!ev) return cf_err_set(err, CF_ERR_TRANSPORT, "no answer from Kafka within 20 s: cannot %s of consumer group %s",
                               what, group);
    rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
    const char *msg = e ? rd_kafka_event_error_string(ev) : NULL;
    const rd_kafka_topic_partition_t *bad = NULL;
    for (size_t i = 0; !e && i < n; i++) {
        const rd_kafka_error_t *ge = rd_kafka_group_result_error(gs[i]);
        if (ge) {
            e = rd_kafka_error_code(ge), msg = rd_kafka_error_string(ge);
            break;
        }
        const rd_kafka_topic_partition_list_t *l = rd_kafka_group_result_partitions(gs[i]);
        for (int k = 0; l && k < l->cnt && !e; k++)
            if (l->elems[k].err) e = l->elems[k].err, msg = rd_kafka_err2str(e), bad = &l->elems[k];
    }
    if (!e || (missing_ok && e == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND)) return CF_OK;
    cf_err_set(err, CF_ERR_TRANSPORT, "cannot %s of consumer group %s", what, group);
    if (bad) cf_err_detail(err, "%s partition %d: %s", bad->topic, (int)bad->partition, msg);
    else cf_err_detail(err, "%s", msg ? msg : rd_kafka_err2str(e));
    if (e == RD_KAFKA_RESP_ERR_NON_EMPTY_GROUP || e == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID)
        cf_err_hint(err, "The group still has members: another worker, or a consumer that has not left yet "
                         "(session.timeout.ms); retry once it has none.");
    return CF_ERR_TRANSPORT;
}

cf_code cf_worker_kafka_group_alter(struct cf_worker *w, const char *group, const cf_props *conn, bool delete_group,
                                    const cf_tp_pos *drop, size_t ndrop, const cf_tp_pos *set, size_t nset,
                                    cf_err *err) {
    errlog l = {0};
    snprintf(l.name, sizeof l.name, "admin group %s", group);
    rd_kafka_conf_t *c = base_conf_for(w, "admin.", NULL, &l, conn, err);
    if (!c) return CF_ERR_CONFIG;
    char errstr[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
    if (!rk) {
        rd_kafka_conf_destroy(c);
        cf_err_set(err, CF_ERR_CONFIG, "cannot create an admin client for consumer group %s", group);
        cf_err_detail(err, "%s", errstr);
        return CF_ERR_CONFIG;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ANY);
    rd_kafka_AdminOptions_set_request_timeout(opt, 15000, NULL, 0);
    cf_code rc = CF_OK;
    rd_kafka_event_t *ev = NULL;
    size_t n = 0;
    const rd_kafka_group_result_t **gs = NULL;
    if (delete_group) {
        rd_kafka_DeleteGroup_t *dg = rd_kafka_DeleteGroup_new(group);
        rd_kafka_DeleteGroups(rk, &dg, 1, opt, q);
        rd_kafka_DeleteGroup_destroy(dg);
        const rd_kafka_DeleteGroups_result_t *res =
            (ev = rd_kafka_queue_poll(q, 20000)) ? rd_kafka_event_DeleteGroups_result(ev) : NULL;
        gs = res ? rd_kafka_DeleteGroups_result_groups(res, &n) : NULL;
        rc = group_result(ev, gs, n, "delete the offsets", group, true, err);
        if (ev) rd_kafka_event_destroy(ev);
    }
    if (!rc && ndrop) {
        rd_kafka_topic_partition_list_t *pl = tp_list(drop, ndrop);
        rd_kafka_DeleteConsumerGroupOffsets_t *d = rd_kafka_DeleteConsumerGroupOffsets_new(group, pl);
        rd_kafka_DeleteConsumerGroupOffsets(rk, &d, 1, opt, q);
        rd_kafka_DeleteConsumerGroupOffsets_destroy(d);
        rd_kafka_topic_partition_list_destroy(pl);
        const rd_kafka_DeleteConsumerGroupOffsets_result_t *res =
            (ev = rd_kafka_queue_poll(q, 20000)) ? rd_kafka_event_DeleteConsumerGroupOffsets_result(ev) : NULL;
        gs = res ? rd_kafka_DeleteConsumerGroupOffsets_result_groups(res, &n) : NULL;
        /* removing offsets of a group that has none is nothing to do */
        rc = group_result(ev, gs, n, "remove offsets", group, true, err);
        if (ev) rd_kafka_event_destroy(ev);
    }
    if (!rc && nset) {
        rd_kafka_topic_partition_list_t *pl = tp_list(set, nset);
        rd_kafka_AlterConsumerGroupOffsets_t *al = rd_kafka_AlterConsumerGroupOffsets_new(group, pl);
        rd_kafka_AlterConsumerGroupOffsets(rk, &al, 1, opt, q);
        rd_kafka_AlterConsumerGroupOffsets_destroy(al);
        rd_kafka_topic_partition_list_destroy(pl);
        const rd_kafka_AlterConsumerGroupOffsets_result_t *res =
            (ev = rd_kafka_queue_poll(q, 20000)) ? rd_kafka_event_AlterConsumerGroupOffsets_result(ev) : NULL;
        gs = res ? rd_kafka_AlterConsumerGroupOffsets_result_groups(res, &n) : NULL;
        rc = group_result(ev, gs, n, "alter offsets", group, false, err);
        if (ev) rd_kafka_event_destroy(ev);
    }
    rd_kafka_AdminOptions_destroy(opt);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    return rc;
}

cf_code cf_worker_kafka_group_offsets(struct cf_worker *w, const char *group, const char *const *topics,
                                      size_t n_topics, const cf_props *conn, void **out, cf_err *err) {
    *out = NULL;
    errlog l = {0};
    snprintf(l.name, sizeof l.name, "offsets of group %s", group);
    rd_kafka_conf_t *conf = base_conf_for(w, "consumer.", NULL, &l, conn, err);
    if (!conf) return CF_ERR_CONFIG;
    if (conf_set(conf, "group.id", group, err) || conf_set(conf, "enable.auto.commit", "false", err)) {
        rd_kafka_conf_destroy(conf);
        return CF_ERR_CONFIG;
    }
    char errstr[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk) {
        cf_err_set(err, CF_ERR_CONFIG, "cannot create a consumer to read the offsets of group %s", group);
        cf_err_detail(err, "%s", errstr);
        return CF_ERR_CONFIG;
    }
    cf_code rc = CF_OK;
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(16);
    for (size_t i = 0; i < n_topics && !rc; i++) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topics[i], NULL);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
        if (e) {
            rc = cf_err_set(err, CF_ERR_TRANSPORT, "cannot read the partitions of topic %s", topics[i]);
            cf_err_detail(err, "%s (bootstrap.servers %s)", rd_kafka_err2str(e), cf_worker_kafka_bootstrap(w));
        } else if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            for (int p = 0; p < md->topics[0].partition_cnt; p++)
                rd_kafka_topic_partition_list_add(parts, topics[i], md->topics[0].partitions[p].id);
        } /* a topic that does not exist (yet) has no offsets */
        if (md) rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
    }
    if (!rc && parts->cnt) {
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, parts, 10000);
        if (e) {
            rc = cf_err_set(err, CF_ERR_TRANSPORT, "cannot read the committed offsets of consumer group %s", group);
            cf_err_detail(err, "%s (bootstrap.servers %s)", rd_kafka_err2str(e), cf_worker_kafka_bootstrap(w));
        }
    }
    json_t *arr = json_array();
    for (int i = 0; !rc && i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (tp->err || tp->offset < 0) continue;
        json_array_append_new(arr, json_pack("{s:{s:s,s:i},s:{s:I}}", "partition", "kafka_topic", tp->topic,
                                             "kafka_partition", (int)tp->partition, "offset", "kafka_offset",
                                             (json_int_t)tp->offset));
    }
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(rk);
    if (rc) json_decref(arr);
    else *out = arr;
    return rc;
}

/* Read the whole topic, from the beginning to the high watermarks. */
static cf_code load_topic(struct cf_worker *w, cf_offset_store *s, const char *topic, cf_err *err) {
    errlog l = {0};
    snprintf(l.name, sizeof l.name, "offsets reader %s", topic);
    rd_kafka_conf_t *conf = base_conf(w, "consumer.", NULL, &l, err);
    if (!conf) return CF_ERR_CONFIG;
    conf_set(conf, "group.id", "cdcflow-offsets-reader", NULL); /* never used to commit */
    conf_set(conf, "enable.auto.commit", "false", NULL);
    char errstr[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk) {
        cf_err_set(err, CF_ERR_CONFIG, "cannot create the offsets reader");
        cf_err_detail(err, "%s", errstr);
        return CF_ERR_CONFIG;
    }
    cf_code rc = CF_OK;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    /* wait for the broker (with backoff) rather than start without offsets */
    for (int backoff = 1000, tries = 0;; tries++) {
        /* 2 s per try: a line every few seconds says what is waited for */
        int64_t t0 = cf_now_us();
        e = rd_kafka_metadata(rk, 0, rkt, &md, 2000);
        if (!e && md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
            md->topics[0].partition_cnt > 0)
            break;
        if (md) rd_kafka_metadata_destroy(md);
        md = NULL;
        if (tries >= 6) {
            rc = cf_err_set(err, CF_ERR_TRANSPORT, "cannot read the offsets topic %s", topic);
            cf_err_detail(err, "%s", e ? rd_kafka_err2str(e) : "topic has no partitions");
            cf_err_hint(err, "Check bootstrap.servers and that the broker is up; or set "
                             "offset.storage.file.filename to keep offsets in a file.");
            goto out;
        }
        CF_WARN(COMP, "offsets topic %s not readable at %s after %.1f s (%s); retrying in %d s (try %d of 7)", topic,
                cf_worker_kafka_bootstrap(w), (double)(cf_now_us() - t0) / 1e6,
                e ? rd_kafka_err2str(e) : "no partitions", backoff / 1000, tries + 2);
        rd_kafka_poll(rk, backoff);
        backoff *= 2;
    }
    int np = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new(np);
    int64_t *hi = cf_xcalloc((size_t)np, sizeof(int64_t));
    int remaining = 0;
    for (int i = 0; i < np; i++) {
        int64_t lo = 0;
        /* a topic just created may not have a leader yet: retry a while */
        /* ... or a broker restarting under us: its partitions leave
         * librdkafka's metadata for a moment ("Local: Unknown partition");
         * a worker started then would exit (crash test with a restart) */
        for (int backoff = 200, tries = 0; tries < 12; tries++, backoff = backoff < 5000 ? backoff * 2 : backoff) {
            e = rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi[i], 10000);
            if (e != RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION && e != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE &&
                e != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && e != RD_KAFKA_RESP_ERR__TIMED_OUT &&
                e != RD_KAFKA_RESP_ERR__TRANSPORT && e != RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION &&
                e != RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC && e != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
                break;
            if (tries == 1)
                CF_WARN(COMP, "offsets topic %s partition %d: %s; retrying for up to a minute", topic, i,
                        rd_kafka_err2str(e));
            else CF_DEBUG(COMP, "offsets topic %s partition %d: %s; retrying", topic, i, rd_kafka_err2str(e));
            rd_kafka_poll(rk, backoff);
        }
        if (e) {
            rc = cf_err_set(err, CF_ERR_TRANSPORT, "cannot read the end of offsets topic %s partition %d", topic, i);
            cf_err_detail(err, "%s", rd_kafka_err2str(e));
            cf_err_hint(err, "Check that the broker is up and that the topic's partitions have a leader; the worker "
                             "stops rather than start without its offsets.");
            break;
        }
        if (hi[i] > lo) {
            rd_kafka_topic_partition_list_add(assign, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
            remaining++;
        }
    }
    size_t loaded = 0;
    if (!rc && remaining) {
        rd_kafka_assign(rk, assign);
        int64_t deadline = cf_now_us() + 120LL * 1000000;
        while (remaining && cf_now_us() < deadline) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
            if (!m) continue;
            if (!m->err && m->key) {
                cf_err pe;
                if (cf_offset_store_load_record(s, m->key, m->key_len, m->payload, m->payload ? m->len : 0, &pe))
                    CF_WARN(COMP, "offsets topic %s partition %d offset %lld: unreadable entry ignored: %s%s%s", topic,
                            (int)m->partition, (long long)m->offset, pe.message, pe.detail[0] ? ": " : "", pe.detail);
                else loaded++;
            }
            if (!m->err && m->offset + 1 >= hi[m->partition]) {
                remaining--;
                hi[m->partition] = -1; /* done */
            }
            rd_kafka_message_destroy(m);
        }
        if (remaining) rc = cf_err_set(err, CF_ERR_TRANSPORT, "timed out reading the offsets topic %s", topic);
    }
    if (!rc) CF_INFO(COMP, "read %zu offsets entries from topic %s (%d partitions)", loaded, topic, np);
    free(hi);
    rd_kafka_topic_partition_list_destroy(assign);
    rd_kafka_metadata_destroy(md);
out:
    rd_kafka_topic_destroy(rkt);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

cf_code cf_worker_kafka_offsets_open(struct cf_worker *w, const char *topic, cf_offset_store **out, cf_err *err) {
    otopic *o = cf_xcalloc(1, sizeof *o);
    o->topic = cf_xstrdup(topic);
    o->timeout_ms = (int)cf_config_long(cf_worker_config(w), "offset.flush.timeout.ms");
    snprintf(o->p.log.name, sizeof o->p.log.name, "offsets writer %s", topic);
    rd_kafka_conf_t *c = base_conf(w, "producer.", "cdcflow-offsets", &o->p.log, err);
    /* Not idempotent, but ordered (one request in flight, acks=all): a
     * rewritten offset record is harmless on a compacted topic as long as
     * order is kept, and librdkafka 2.0.2's idempotent producer could turn a
     * broker restart into a fatal "out of order sequence" error here, which
     * would fail every source task (seen in it_broker_restart_no_loss). */
    if (!c || conf_set(c, "enable.idempotence", "false", err) || conf_set(c, "acks", "all", err) ||
        conf_set(c, "max.in.flight.requests.per.connection", "1", err) ||
        conf_set(c, "partitioner", "murmur2_random", err)) {
        if (c) rd_kafka_conf_destroy(c);
        free(o->topic), free(o);
        return CF_ERR_CONFIG;
    }
    rd_kafka_conf_set_dr_msg_cb(c, ot_on_delivery);
    rd_kafka_conf_set_error_cb(c, ot_on_error);
    rd_kafka_conf_set_opaque(c, o);
    char errstr[512];
    o->p.rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
    if (!o->p.rk) {
        free(o->topic), free(o);
        cf_err_set(err, CF_ERR_CONFIG, "cannot create the offsets writer");
        cf_err_detail(err, "%s", errstr);
        return CF_ERR_CONFIG;
    }
    const cf_config *cfg = cf_worker_config(w);
    int parts = (int)cf_config_int(cfg, "offset.storage.partitions");
    cf_err te;
    cf_code trc = cf_kafka_env_create_topic(cf_worker_kafka_env(w), topic, parts, &te);
    if (trc == CF_ERR_UNSUPPORTED) /* a real cluster: the admin API */
        ensure_topic(o->p.rk, cf_worker_kafka_bootstrap(w), topic, parts,
                     (int)cf_config_int(cfg, "offset.storage.replication.factor"));
    else if (trc)
        CF_DEBUG(COMP, "embedded cluster: topic %s: %s", topic, te.message);
    {
        /* Learn the topic and its leader now: without this the first write
         * (the first offset commit, a second after the tasks start) waited
         * about a second for metadata while the source task blocked in it. */
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(o->p.rk, topic, NULL);
        if (rkt && rd_kafka_metadata(o->p.rk, 0, rkt, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_metadata_destroy(md);
        if (rkt) rd_kafka_topic_destroy(rkt);
    }
    cf_offset_store *s = cf_offset_store_new_backend(&ot_backend, o);
    cf_code rc = load_topic(w, s, topic, err);
    if (rc) {
        cf_offset_store_destroy(s);
        return rc;
    }
    *out = s;
    return CF_OK;
}
