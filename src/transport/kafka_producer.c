/*
 * kafka_producer.c - the idempotent producer wrapper.
 *
 * Why a sequence window: delivery reports of different partitions come back
 * in any order, but a source may commit its offset only when EVERY earlier
 * record is safe. Each send gets the next sequence number; the report marks
 * it done in a ring indexed by seq; the watermark (acked_seq) advances over
 * the done prefix. The ring lives in the handle, so a send costs no extra
 * allocation: librdkafka's per-message opaque carries the seq, and the
 * caller's opaque sits in the ring slot.
 */
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "kafka_internal.h"

enum { SLOT_FREE = 0, SLOT_PENDING = 1, SLOT_DONE = 2, SLOT_FAILED = 3 };

typedef struct slot {
    void *opaque;
    uint8_t state;
} slot;

typedef struct topic_ref {
    char *name;
    rd_kafka_topic_t *rkt;
} topic_ref;

struct cf_producer {
    rd_kafka_t *rk;
    cf_embedded_kafka *owned; /* "embedded" */
    char *bootstrap;
    cf_delivery_cb cb;
    void *cb_ctx;
    slot *ring;        /* cap slots, seq s at ring[s & (cap-1)] */
    size_t cap;
    uint64_t acked;    /* watermark: all seq <= acked are DONE */
    uint64_t last;     /* last seq handed out */
    uint64_t in_flight;
    uint64_t failed;
    bool watermark_stuck; /* a failed seq: the watermark never passes it */
    cf_err first_failure;
    bool fatal;
    topic_ref *topics; /* handles cached by name: producev by name would look up each time */
    size_t n_topics, cap_topics;
    size_t last_topic;
};

static void advance_watermark(cf_producer *p) {
    while (!p->watermark_stuck && p->acked < p->last) {
        slot *s = &p->ring[(p->acked + 1) & (p->cap - 1)];
        if (s->state == SLOT_DONE) {
            s->state = SLOT_FREE;
            p->acked++;
        } else {
            if (s->state == SLOT_FAILED) p->watermark_stuck = true;
            break;
        }
    }
}

/* The window [acked+1, last+1] must fit the ring; double it when not. */
static void ring_reserve(cf_producer *p) {
    if (p->last + 1 - p->acked < p->cap) return;
    size_t ncap = p->cap * 2;
    slot *n = cf_xcalloc(ncap, sizeof *n);
    for (uint64_t s = p->acked + 1; s <= p->last; s++) n[s & (ncap - 1)] = p->ring[s & (p->cap - 1)];
    free(p->ring);
    p->ring = n;
    p->cap = ncap;
}

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque) {
    (void)rk;
    cf_producer *p = opaque;
    uint64_t seq = (uint64_t)(uintptr_t)rkm->_private;
    slot *s = &p->ring[seq & (p->cap - 1)];
    cf_delivery d = {0};
    cf_err e;
    d.opaque = s->opaque;
    d.seq = seq;
    d.topic = rd_kafka_topic_name(rkm->rkt);
    d.partition = rkm->partition;
    d.offset = rkm->offset;
    d.timestamp = rd_kafka_message_timestamp(rkm, NULL);
    p->in_flight--;
    if (rkm->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        d.code = CF_OK;
        s->state = SLOT_DONE;
    } else {
        d.code = CF_ERR_TRANSPORT;
        d.offset = -1;
        cf_err_set(&e, CF_ERR_TRANSPORT, "kafka delivery failed for record %llu",
                   (unsigned long long)seq);
        cf_err_detail(&e, "%s (%s)", rd_kafka_err2str(rkm->err), rd_kafka_err2name(rkm->err));
        cf_err_where(&e, "%s/%d", d.topic, (int)rkm->partition);
        cf_err_hint(&e, "the record was not written; source offsets past it must not be committed");
        d.err = &e;
        s->state = SLOT_FAILED;
        if (p->failed++ == 0) p->first_failure = e;
    }
    if (p->cb) p->cb(&d, p->cb_ctx);
    s->opaque = NULL;
    advance_watermark(p);
}

static void error_cb(rd_kafka_t *rk, int e, const char *reason, void *opaque) {
    cf_producer *p = opaque;
    if (e == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[512];
        rd_kafka_resp_err_t fe = rd_kafka_fatal_error(rk, buf, sizeof buf);
        p->fatal = true;
        CF_ERROR("transport", "producer fatal error %s: %s", rd_kafka_err2name(fe), buf);
    } else {
        /* transient (broker down, all brokers down): librdkafka retries */
        CF_WARN("transport", "producer: %s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)e), reason);
    }
}

cf_producer *cf_producer_new(const char *bootstrap, const char *const *kv, size_t n_kv,
                             cf_err *err) {
    const char *who = "kafka producer";
    const char *idem = cf_kafka_kv_get(kv, n_kv, "enable.idempotence");
    if (idem && strcmp(idem, "true") != 0) {
        cf_err_set(err, CF_ERR_CONFIG, "%s: enable.idempotence=%s is not allowed", who, idem);
        cf_err_detail(err, "without idempotence a retried batch can be duplicated or reordered");
        cf_err_hint(err, "remove the setting; cdcflow always produces idempotently");
        cf_err_where(err, "enable.idempotence");
        return NULL;
    }
    cf_embedded_kafka *owned = NULL;
    const char *bs = cf_kafka_resolve_bootstrap(bootstrap, &owned, who, err);
    if (!bs) return NULL;

    cf_producer *p = cf_xcalloc(1, sizeof *p);
    p->owned = owned;
    p->bootstrap = cf_xstrdup(bs);
    p->cap = 1024;
    p->ring = cf_xcalloc(p->cap, sizeof *p->ring);

    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    if (cf_kafka_conf_set(conf, "bootstrap.servers", bs, who, err) ||
        cf_kafka_conf_set(conf, "enable.idempotence", "true", who, err) ||
        cf_kafka_conf_set(conf, "acks", "all", who, err) ||
        cf_kafka_conf_set(conf, "linger.ms", "5", who, err) ||
        cf_kafka_conf_apply_kv(conf, kv, n_kv, who, err))
        goto fail_conf;
    rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_log_cb(conf, cf_kafka_log_cb);
    rd_kafka_conf_set_opaque(conf, p);
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!p->rk) {
        cf_err_set(err, CF_ERR_CONFIG, "%s: librdkafka refused the configuration", who);
        cf_err_detail(err, "%s", errstr);
        goto fail_conf;
    }
    return p;
fail_conf:
    rd_kafka_conf_destroy(conf);
    cf_producer_destroy(p);
    return NULL;
}

void cf_producer_set_delivery_cb(cf_producer *p, cf_delivery_cb cb, void *ctx) {
    p->cb = cb;
    p->cb_ctx = ctx;
}

static rd_kafka_topic_t *topic_handle(cf_producer *p, const char *name) {
    if (p->n_topics && strcmp(p->topics[p->last_topic].name, name) == 0)
        return p->topics[p->last_topic].rkt;
    for (size_t i = 0; i < p->n_topics; i++)
        if (strcmp(p->topics[i].name, name) == 0) {
            p->last_topic = i;
            return p->topics[i].rkt;
        }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(p->rk, name, NULL);
    if (!rkt) return NULL;
    if (p->n_topics == p->cap_topics) {
        p->cap_topics = p->cap_topics ? p->cap_topics * 2 : 8;
        p->topics = cf_xrealloc(p->topics, p->cap_topics * sizeof *p->topics);
    }
    p->topics[p->n_topics] = (topic_ref){cf_xstrdup(name), rkt};
    p->last_topic = p->n_topics++;
    return rkt;
}

static cf_code fatal_err(cf_producer *p, cf_err *err) {
    char buf[512];
    rd_kafka_resp_err_t fe = rd_kafka_fatal_error(p->rk, buf, sizeof buf);
    cf_err_set(err, CF_ERR_TRANSPORT, "kafka producer hit a fatal error");
    cf_err_detail(err, "%s: %s", rd_kafka_err2name(fe), buf);
    cf_err_hint(err, "the idempotent producer cannot go on; destroy it and restart from the last committed source offsets");
    return CF_ERR_TRANSPORT;
}

cf_code cf_producer_send(cf_producer *p, const cf_msg *m, void *opaque, uint64_t *seq_out,
                         cf_err *err) {
    if (!m || !m->topic || !*m->topic)
        return cf_err_set(err, CF_ERR_INVALID, "kafka producer: message has no topic");
    if (p->fatal) return fatal_err(p, err);
    rd_kafka_topic_t *rkt = topic_handle(p, m->topic);
    if (!rkt) {
        cf_err_set(err, CF_ERR_INVALID, "kafka producer: invalid topic name");
        cf_err_detail(err, "%s", rd_kafka_err2str(rd_kafka_last_error()));
        cf_err_where(err, "%s", m->topic);
        return CF_ERR_INVALID;
    }
    rd_kafka_headers_t *hdrs = NULL;
    if (m->n_headers) {
        hdrs = rd_kafka_headers_new(m->n_headers);
        for (size_t i = 0; i < m->n_headers; i++)
            rd_kafka_header_add(hdrs, m->headers[i].key, -1, m->headers[i].value,
                                m->headers[i].value ? (ssize_t)m->headers[i].value_len : 0);
    }
    ring_reserve(p);
    uint64_t seq = p->last + 1;
    slot *s = &p->ring[seq & (p->cap - 1)];
    s->opaque = opaque;
    s->state = SLOT_PENDING;
    int64_t ts = m->ts_type == CF_TS_CREATE ? m->timestamp : 0;
    /* librdkafka keeps "no payload" (NULL) apart from an empty payload, which
     * is how Kafka's null value (tombstone) and null key reach the wire. */
    rd_kafka_resp_err_t e;
    for (;;) {
        e = rd_kafka_producev(p->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(m->partition),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_VALUE(m->value, m->value ? m->value_len : 0),
                              RD_KAFKA_V_KEY(m->key, m->key ? m->key_len : 0),
                              RD_KAFKA_V_TIMESTAMP(ts), RD_KAFKA_V_HEADERS(hdrs),
                              RD_KAFKA_V_OPAQUE((void *)(uintptr_t)seq), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) break;
        /* back-pressure: serve delivery reports until there is room */
        rd_kafka_poll(p->rk, 100);
        if (p->fatal) break;
    }
    if (e) {
        s->state = SLOT_FREE;
        s->opaque = NULL;
        if (hdrs) rd_kafka_headers_destroy(hdrs); /* not taken over on failure */
        if (p->fatal || e == RD_KAFKA_RESP_ERR__FATAL) return fatal_err(p, err);
        cf_code code = (e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE || e == RD_KAFKA_RESP_ERR__INVALID_ARG)
                           ? CF_ERR_INVALID : CF_ERR_TRANSPORT;
        cf_err_set(err, code, "kafka producer: cannot queue the record");
        cf_err_detail(err, "%s (%s)", rd_kafka_err2str(e), rd_kafka_err2name(e));
        cf_err_where(err, "%s/%d", m->topic, (int)m->partition);
        if (e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
            cf_err_hint(err, "the record is larger than message.max.bytes; raise it (producer and broker) or make the record smaller");
        return code;
    }
    p->last = seq;
    p->in_flight++;
    if (seq_out) *seq_out = seq;
    /* serve reports that are ready without blocking, so the ring stays short */
    rd_kafka_poll(p->rk, 0);
    return CF_OK;
}

cf_code cf_producer_poll(cf_producer *p, int timeout_ms, cf_err *err) {
    rd_kafka_poll(p->rk, timeout_ms);
    if (p->fatal) return fatal_err(p, err);
    return CF_OK;
}

cf_code cf_producer_flush(cf_producer *p, int timeout_ms, cf_err *err) {
    rd_kafka_resp_err_t e = rd_kafka_flush(p->rk, timeout_ms);
    if (p->fatal) return fatal_err(p, err);
    if (p->failed) {
        if (err) *err = p->first_failure;
        cf_err_hint(err, "%llu record(s) failed delivery; the first is above",
                    (unsigned long long)p->failed);
        return CF_ERR_TRANSPORT;
    }
    if (e == RD_KAFKA_RESP_ERR__TIMED_OUT || p->in_flight) {
        cf_err_set(err, CF_ERR_AGAIN, "kafka producer: flush timed out after %d ms", timeout_ms);
        cf_err_detail(err, "%llu record(s) still without a delivery report",
                      (unsigned long long)p->in_flight);
        cf_err_hint(err, "the brokers at %s are slow or unreachable; flush again", p->bootstrap);
        return CF_ERR_AGAIN;
    }
    return CF_OK;
}

uint64_t cf_producer_acked_seq(const cf_producer *p) { return p->acked; }
uint64_t cf_producer_last_seq(const cf_producer *p) { return p->last; }
size_t cf_producer_in_flight(const cf_producer *p) { return (size_t)p->in_flight; }
uint64_t cf_producer_failed_count(const cf_producer *p) { return p->failed; }
const char *cf_producer_bootstrap(const cf_producer *p) { return p->bootstrap; }

void cf_producer_destroy(cf_producer *p) {
    if (!p) return;
    if (p->rk) {
        /* purge what is left so destroy does not block; their reports are
         * dropped (cb cleared), as documented */
        p->cb = NULL;
        rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(p->rk, 0);
        for (size_t i = 0; i < p->n_topics; i++) rd_kafka_topic_destroy(p->topics[i].rkt);
        rd_kafka_destroy(p->rk);
    }
    for (size_t i = 0; i < p->n_topics; i++) free(p->topics[i].name);
    free(p->topics);
    free(p->ring);
    free(p->bootstrap);
    cf_embedded_kafka_destroy(p->owned);
    free(p);
}
