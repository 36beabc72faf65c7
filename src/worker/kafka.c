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
 * OFFSETS TOPIC: compacted, created if missing (offset.storage.partitions /
 * replication.factor), read from the beginning to the high watermarks at
 * start; writes use the murmur2 partitioner, as Java clients do, so a key
 * always lands in the partition Connect would put it in.
 *
 * `bootstrap.servers=embedded` starts librdkafka's mock cluster inside the
 * process (for tests and demos; nothing is persisted).
 */
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk;
    if (level <= 2) cf_log(CF_LOG_ERROR, COMP, "librdkafka %s: %s", fac, buf);
    else CF_DEBUG(COMP, "librdkafka %s: %s", fac, buf);
}

static void on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque) {
    (void)rk;
    errlog *l = opaque;
    if (!l) return;
    if (code == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[512];
        rd_kafka_fatal_error(rk, buf, sizeof buf);
        cf_log(CF_LOG_ERROR, COMP, "%s: fatal error: %s", l->name, buf);
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

/* bootstrap + security from the worker + the "<kind>." pass-through */
static rd_kafka_conf_t *base_conf(struct cf_worker *w, const char *kind, const char *client_id, errlog *l,
                                  cf_err *err) {
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

cf_code cf_worker_kafka_out_new(struct cf_worker *w, const char *client_id, cf_msg_out *out, cf_err *err) {
    prod *p = cf_xcalloc(1, sizeof *p);
    snprintf(p->log.name, sizeof p->log.name, "producer %s", client_id);
    rd_kafka_conf_t *c = base_conf(w, "producer.", client_id, &p->log, err);
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
    unsigned revokes; /* partitions taken away so far (see cons_poll) */
    /* the partitions revoked during the current cons_poll call */
    cf_tp_pos *revoked;
    size_t nrevoked, caprevoked;
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
        if (coop) ierr = rd_kafka_incremental_assign(rk, parts);
        else aerr = rd_kafka_assign(rk, parts);
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

static cf_code cons_poll(void *st, cf_msg **out, size_t max, size_t *n, int timeout_ms, cf_err *err) {
    cons *c = st;
    *n = 0;
    (void)err;
    unsigned revokes = c->revokes;
    revoked_clear(c);
    while (*n < max) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, *n ? 0 : timeout_ms);
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
        cf_msg *x = cf_msg_new();
        cf_msg_set_topic(x, rd_kafka_topic_name(m->rkt));
        x->partition = m->partition;
        x->offset = m->offset;
        rd_kafka_timestamp_type_t tt;
        x->timestamp = rd_kafka_message_timestamp(m, &tt);
        x->ts_type = (cf_ts_type)tt;
        if (m->key) cf_msg_set_key(x, m->key, m->key_len);
        if (m->payload) cf_msg_set_value(x, m->payload, m->len);
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

static cf_code cons_commit(void *st, const cf_tp_pos *pos, size_t n, cf_err *err) {
    cons *c = st;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n);
    for (size_t i = 0; i < n; i++) rd_kafka_topic_partition_list_add(l, pos[i].topic, pos[i].partition)->offset = pos[i].next_offset;
    rd_kafka_resp_err_t e = rd_kafka_commit(c->rk, l, 0);
    rd_kafka_topic_partition_list_destroy(l);
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
        cf_err_set(err, CF_ERR_TRANSPORT, "cannot commit consumer offsets (%s)", c->log.name);
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

static void cons_pause(void *st, bool paused) {
    cons *c = st;
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(c->rk, &l) || !l) return;
    if (paused) rd_kafka_pause_partitions(c->rk, l);
    else rd_kafka_resume_partitions(c->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
}

/* Records behind: high watermark (as last fetched, no request) minus the
 * position, summed over the assignment. */
static int64_t cons_lag(void *st) {
    cons *c = st;
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(c->rk, &l) || !l) return 0;
    int64_t lag = 0;
    if (l->cnt && rd_kafka_position(c->rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < l->cnt; i++) {
            int64_t lo = -1, hi = -1;
            if (rd_kafka_get_watermark_offsets(c->rk, l->elems[i].topic, l->elems[i].partition, &lo, &hi)) continue;
            if (hi >= 0 && l->elems[i].offset >= 0 && hi > l->elems[i].offset) lag += hi - l->elems[i].offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return lag;
}

static void cons_destroy(void *st) {
    cons *c = st;
    rd_kafka_consumer_close(c->rk); /* leaves the group (a revoke runs first) */
    rd_kafka_destroy(c->rk);
    revoked_clear(c);
    free(c->revoked);
    free(c);
}

cf_code cf_worker_kafka_in_new(struct cf_worker *w, const char *group, const char *const *topics, size_t n_topics,
                               const char *topics_regex, cf_msg_in *in, cf_err *err) {
    cons *c = cf_xcalloc(1, sizeof *c);
    snprintf(c->log.name, sizeof c->log.name, "consumer %s", group);
    rd_kafka_conf_t *conf = base_conf(w, "consumer.", NULL, &c->log, err);
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
    if (!cf_props_has(wp, "consumer.auto.offset.reset")) conf_set(conf, "auto.offset.reset", "earliest", NULL);
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
    *in = (cf_msg_in){c, cons_poll, cons_commit, cons_destroy, cons_pause, cons_lag, NULL, NULL};
    return CF_OK;
}

/* The rebalance callback needs the cf_msg_in where the worker set
 * on_revoke (its own copy of *in): the worker binds it after setting it. */
void cf_worker_kafka_in_bind(cf_msg_in *in) {
    if (in->poll == cons_poll) ((cons *)in->state)->self = in;
}

/* ---------------- offsets topic ---------------- */

typedef struct otopic {
    prod p;
    char *topic;
    int timeout_ms; /* offset.flush.timeout.ms */
    atomic_int failed;
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
    for (int backoff = 100;; backoff = backoff < 5000 ? backoff * 2 : backoff) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            o->p.rk, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE((void *)value, value ? strlen(value) : 0), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
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

static cf_code ot_sync(void *st, cf_err *err) {
    otopic *o = st;
    /* bounded (offset.flush.timeout.ms): a commit that cannot finish now is
     * retried at the next one */
    rd_kafka_resp_err_t e = rd_kafka_flush(o->p.rk, o->timeout_ms);
    int failed = atomic_exchange(&o->failed, 0);
    if (e == RD_KAFKA_RESP_ERR__TIMED_OUT || failed) {
        cf_err_set(err, CF_ERR_TRANSPORT, "offsets not stored in topic %s", o->topic);
        if (e) cf_err_detail(err, "Kafka did not acknowledge them within %d ms (offset.flush.timeout.ms)", o->timeout_ms);
        else cf_err_detail(err, "%d writes failed", failed);
        cf_err_hint(err, "They are written again at the next commit; check that the broker is reachable.");
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

static void ot_destroy(void *st) {
    otopic *o = st;
    rd_kafka_flush(o->p.rk, 5000);
    rd_kafka_destroy(o->p.rk);
    free(o->topic);
    free(o);
}

static const cf_offset_backend ot_backend = {ot_write, ot_sync, ot_destroy};

static void ensure_topic(rd_kafka_t *rk, const char *topic, int partitions, int rf) {
    char errstr[256];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, rf, errstr, sizeof errstr);
    if (!nt) return;
    rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
    if (ev) {
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        size_t n = 0;
        const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
        if (n == 1 && rd_kafka_topic_result_error(tr[0]) == RD_KAFKA_RESP_ERR_NO_ERROR)
            CF_INFO(COMP, "created the offsets topic %s (%d partitions, compacted)", topic, partitions);
        else if (n == 1 && rd_kafka_topic_result_error(tr[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            CF_WARN(COMP, "could not create the offsets topic %s: %s (it may be auto-created, not compacted)", topic,
                    rd_kafka_topic_result_error_string(tr[0]));
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
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
        e = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
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
        CF_WARN(COMP, "offsets topic %s not readable yet (%s); retrying in %d s", topic,
                e ? rd_kafka_err2str(e) : "no partitions", backoff / 1000);
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
        for (int backoff = 200, tries = 0; tries < 12; tries++, backoff = backoff < 5000 ? backoff * 2 : backoff) {
            e = rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi[i], 10000);
            if (e != RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION && e != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE &&
                e != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && e != RD_KAFKA_RESP_ERR__TIMED_OUT &&
                e != RD_KAFKA_RESP_ERR__TRANSPORT)
                break;
            CF_DEBUG(COMP, "offsets topic %s partition %d: %s; retrying", topic, i, rd_kafka_err2str(e));
            rd_kafka_poll(rk, backoff);
        }
        if (e) {
            rc = cf_err_set(err, CF_ERR_TRANSPORT, "cannot read the end of offsets topic %s partition %d", topic, i);
            cf_err_detail(err, "%s", rd_kafka_err2str(e));
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
    CF_INFO(COMP, "read %zu offsets entries from topic %s (%d partitions)", loaded, topic, np);
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
        ensure_topic(o->p.rk, topic, parts, (int)cf_config_int(cfg, "offset.storage.replication.factor"));
    else if (trc)
        CF_DEBUG(COMP, "embedded cluster: topic %s: %s", topic, te.message);
    {
        /* Learn the topic and its leader now: without this the first write
         * (the first offset commit, a second after the tasks start) waited
         * about a second for metadata while the source task blocked in it. */
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(o->p.rk, topic, NULL);
        if (rkt && rd_kafka_metadata(o->p.rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_metadata_destroy(md);
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
