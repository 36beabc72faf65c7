/*
 * kafka_consumer.c - the consumer-group wrapper: subscribe, poll into
 * cf_msg, commit given offsets only (never auto-commit: a sink commits what
 * it flushed), and a rebalance hook that runs BEFORE revoked partitions are
 * given up, so the sink can flush and commit while it still owns them.
 */
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "kafka_internal.h"

struct cf_consumer {
    rd_kafka_t *rk;
    cf_embedded_kafka *owned;
    char *bootstrap;
    char *group;
    cf_rebalance_cb cb;
    void *cb_ctx;
    bool closed;
    bool fatal;
};

static cf_topic_partition *to_parts(const rd_kafka_topic_partition_list_t *l, size_t *n) {
    *n = l ? (size_t)l->cnt : 0;
    cf_topic_partition *v = cf_xcalloc(*n ? *n : 1, sizeof *v);
    for (size_t i = 0; i < *n; i++) {
        v[i].topic = cf_xstrdup(l->elems[i].topic);
        v[i].partition = l->elems[i].partition;
        v[i].offset = l->elems[i].offset;
    }
    return v;
}

void cf_topic_partitions_free(cf_topic_partition *parts, size_t n) {
    if (!parts) return;
    for (size_t i = 0; i < n; i++) free(parts[i].topic);
    free(parts);
}

static void call_cb(cf_consumer *c, cf_rebalance_kind kind,
                    const rd_kafka_topic_partition_list_t *l) {
    if (!c->cb) return;
    size_t n;
    cf_topic_partition *v = to_parts(l, &n);
    c->cb(kind, v, n, c->cb_ctx);
    cf_topic_partitions_free(v, n);
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t e,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
    cf_consumer *c = opaque;
    bool coop = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    rd_kafka_error_t *ierr = NULL;
    rd_kafka_resp_err_t aerr = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (e == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (coop) ierr = rd_kafka_incremental_assign(rk, parts);
        else aerr = rd_kafka_assign(rk, parts);
        CF_INFO("transport", "consumer group %s: %d partition(s) assigned", c->group, parts->cnt);
        call_cb(c, CF_REBALANCE_ASSIGNED, parts);
    } else if (e == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        bool lost = rd_kafka_assignment_lost(rk);
        CF_INFO("transport", "consumer group %s: %d partition(s) %s", c->group, parts->cnt,
                lost ? "lost" : "revoked");
        /* before giving them up: the sink flushes and commits here */
        call_cb(c, lost ? CF_REBALANCE_LOST : CF_REBALANCE_REVOKED, parts);
        if (coop) ierr = rd_kafka_incremental_unassign(rk, parts);
        else aerr = rd_kafka_assign(rk, NULL);
    } else {
        CF_ERROR("transport", "consumer group %s: rebalance error %s", c->group, rd_kafka_err2str(e));
        if (coop) ierr = rd_kafka_incremental_unassign(rk, parts);
        else aerr = rd_kafka_assign(rk, NULL);
    }
    if (ierr) {
        CF_ERROR("transport", "consumer group %s: (un)assign failed: %s", c->group,
                 rd_kafka_error_string(ierr));
        rd_kafka_error_destroy(ierr);
    }
    if (aerr)
        CF_ERROR("transport", "consumer group %s: assign failed: %s", c->group, rd_kafka_err2str(aerr));
}

static void error_cb(rd_kafka_t *rk, int e, const char *reason, void *opaque) {
    (void)rk;
    cf_consumer *c = opaque;
    if (e == RD_KAFKA_RESP_ERR__FATAL) c->fatal = true;
    CF_WARN("transport", "consumer group %s: %s: %s", c->group,
            rd_kafka_err2name((rd_kafka_resp_err_t)e), reason);
}

static void commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t e, rd_kafka_topic_partition_list_t *o,
                      void *opaque) {
    (void)rk, (void)o;
    cf_consumer *c = opaque;
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
        CF_WARN("transport", "consumer group %s: commit failed: %s", c->group, rd_kafka_err2str(e));
}

cf_consumer *cf_consumer_new(const char *bootstrap, const char *group_id, const char *const *kv,
                             size_t n_kv, cf_err *err) {
    const char *who = "kafka consumer";
    if (!group_id || !*group_id) {
        cf_err_set(err, CF_ERR_CONFIG, "%s: group id is empty", who);
        cf_err_hint(err, "give the consumer group name (sinks use connect-<connector name>)");
        return NULL;
    }
    cf_embedded_kafka *owned = NULL;
    const char *bs = cf_kafka_resolve_bootstrap(bootstrap, &owned, who, err);
    if (!bs) return NULL;
    cf_consumer *c = cf_xcalloc(1, sizeof *c);
    c->owned = owned;
    c->bootstrap = cf_xstrdup(bs);
    c->group = cf_xstrdup(group_id);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    if (cf_kafka_conf_set(conf, "bootstrap.servers", bs, who, err) ||
        cf_kafka_conf_set(conf, "group.id", group_id, who, err) ||
        cf_kafka_conf_set(conf, "enable.auto.commit", "false", who, err) ||
        cf_kafka_conf_set(conf, "enable.auto.offset.store", "false", who, err) ||
        cf_kafka_conf_set(conf, "auto.offset.reset", "earliest", who, err) ||
        cf_kafka_conf_set(conf, "enable.partition.eof", "false", who, err) ||
        cf_kafka_conf_apply_kv(conf, kv, n_kv, who, err))
        goto fail_conf;
    rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_offset_commit_cb(conf, commit_cb);
    rd_kafka_conf_set_log_cb(conf, cf_kafka_log_cb);
    rd_kafka_conf_set_opaque(conf, c);
    c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!c->rk) {
        cf_err_set(err, CF_ERR_CONFIG, "%s: librdkafka refused the configuration", who);
        cf_err_detail(err, "%s", errstr);
        goto fail_conf;
    }
    /* all events (rebalance, errors, messages) through consumer_poll */
    rd_kafka_poll_set_consumer(c->rk);
    return c;
fail_conf:
    rd_kafka_conf_destroy(conf);
    c->closed = true;
    cf_consumer_destroy(c);
    return NULL;
}

void cf_consumer_set_rebalance_cb(cf_consumer *c, cf_rebalance_cb cb, void *ctx) {
    c->cb = cb;
    c->cb_ctx = ctx;
}

cf_code cf_consumer_subscribe(cf_consumer *c, const char *const *topics, size_t n_topics,
                              cf_err *err) {
    if (!n_topics) return cf_err_set(err, CF_ERR_CONFIG, "kafka consumer: no topics to subscribe to");
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n_topics);
    for (size_t i = 0; i < n_topics; i++) {
        if (!topics[i] || !*topics[i]) {
            rd_kafka_topic_partition_list_destroy(l);
            return cf_err_set(err, CF_ERR_CONFIG, "kafka consumer: topic %zu of the subscription is empty", i);
        }
        rd_kafka_topic_partition_list_add(l, topics[i], RD_KAFKA_PARTITION_UA);
    }
    rd_kafka_resp_err_t e = rd_kafka_subscribe(c->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        cf_err_set(err, CF_ERR_TRANSPORT, "kafka consumer: subscribe failed");
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

static void fill_msg(cf_msg *out, const rd_kafka_message_t *m) {
    cf_msg_clear(out);
    cf_msg_set_topic(out, rd_kafka_topic_name(m->rkt));
    out->partition = m->partition;
    out->offset = m->offset;
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);
    out->ts_type = tt == RD_KAFKA_TIMESTAMP_CREATE_TIME    ? CF_TS_CREATE
                   : tt == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME ? CF_TS_LOG_APPEND : CF_TS_NONE;
    out->timestamp = out->ts_type == CF_TS_NONE ? -1 : ts;
    /* NULL pointer = Kafka null; a zero-length non-NULL = empty bytes */
    cf_msg_set_key(out, m->key, m->key_len);
    cf_msg_set_value(out, m->payload, m->len);
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h) {
        const char *name;
        const void *val;
        size_t len;
        for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &len) == RD_KAFKA_RESP_ERR_NO_ERROR; i++)
            cf_msg_add_header(out, name, val, len);
    }
}

cf_code cf_consumer_poll(cf_consumer *c, int timeout_ms, cf_msg *out, cf_err *err) {
    if (c->closed) return cf_err_set(err, CF_ERR_STATE, "kafka consumer: poll after close");
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, timeout_ms);
    if (!m) return CF_ERR_AGAIN;
    cf_code rc = CF_OK;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        cf_msg_clear(out);
        cf_msg_set_topic(out, rd_kafka_topic_name(m->rkt));
        out->partition = m->partition;
        out->offset = m->offset;
        rc = CF_ERR_EOF;
    } else if (m->err) {
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) c->fatal = true;
        cf_err_set(err, CF_ERR_TRANSPORT, "kafka consumer error");
        cf_err_detail(err, "%s (%s)", rd_kafka_message_errstr(m), rd_kafka_err2name(m->err));
        if (m->rkt) cf_err_where(err, "%s/%d@%lld", rd_kafka_topic_name(m->rkt), (int)m->partition,
                                 (long long)m->offset);
        rc = CF_ERR_TRANSPORT;
    } else {
        fill_msg(out, m);
    }
    rd_kafka_message_destroy(m);
    return rc;
}

bool cf_consumer_fatal(const cf_consumer *c) { return c->fatal; }

static rd_kafka_topic_partition_list_t *to_list(const cf_topic_partition *v, size_t n) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)(n ? n : 1));
    for (size_t i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(l, v[i].topic, v[i].partition)->offset = v[i].offset;
    return l;
}

cf_code cf_consumer_commit(cf_consumer *c, const cf_topic_partition *offsets, size_t n, bool async,
                           cf_err *err) {
    if (!n) return CF_OK;
    rd_kafka_topic_partition_list_t *l = to_list(offsets, n);
    rd_kafka_resp_err_t e = rd_kafka_commit(c->rk, l, async ? 1 : 0);
    cf_code rc = CF_OK;
    if (!e && !async)
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].err) {
                e = l->elems[i].err;
                cf_err_where(err, "%s/%d@%lld", l->elems[i].topic, (int)l->elems[i].partition,
                             (long long)l->elems[i].offset);
                break;
            }
    if (e) {
        char where[256];
        snprintf(where, sizeof where, "%s", err ? err->where : "");
        cf_err_set(err, CF_ERR_TRANSPORT, "kafka consumer: commit failed (group %s)", c->group);
        cf_err_detail(err, "%s (%s)", rd_kafka_err2str(e), rd_kafka_err2name(e));
        if (*where) cf_err_where(err, "%s", where);
        if (e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS || e == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
            e == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID)
            cf_err_hint(err, "the partitions were reassigned; the new owner re-reads from the last committed offset");
        rc = CF_ERR_TRANSPORT;
    }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

cf_code cf_consumer_committed(cf_consumer *c, cf_topic_partition *parts, size_t n, int timeout_ms,
                              cf_err *err) {
    rd_kafka_topic_partition_list_t *l = to_list(parts, n);
    rd_kafka_resp_err_t e = rd_kafka_committed(c->rk, l, timeout_ms);
    if (e) {
        rd_kafka_topic_partition_list_destroy(l);
        cf_err_set(err, CF_ERR_TRANSPORT, "kafka consumer: cannot read committed offsets (group %s)", c->group);
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    for (size_t i = 0; i < n; i++) parts[i].offset = l->elems[i].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return CF_OK;
}

cf_code cf_consumer_assignment(cf_consumer *c, cf_topic_partition **parts, size_t *n, cf_err *err) {
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_resp_err_t e = rd_kafka_assignment(c->rk, &l);
    if (e) {
        cf_err_set(err, CF_ERR_TRANSPORT, "kafka consumer: cannot read the assignment");
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    *parts = to_parts(l, n);
    rd_kafka_topic_partition_list_destroy(l);
    return CF_OK;
}

cf_code cf_consumer_close(cf_consumer *c, cf_err *err) {
    if (c->closed) return CF_OK;
    c->closed = true;
    rd_kafka_resp_err_t e = rd_kafka_consumer_close(c->rk);
    if (e) {
        cf_err_set(err, CF_ERR_TRANSPORT, "kafka consumer: close failed (group %s)", c->group);
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

const char *cf_consumer_bootstrap(const cf_consumer *c) { return c->bootstrap; }

void cf_consumer_destroy(cf_consumer *c) {
    if (!c) return;
    if (c->rk) {
        if (!c->closed) cf_consumer_close(c, NULL);
        rd_kafka_destroy(c->rk);
    }
    free(c->bootstrap);
    free(c->group);
    cf_embedded_kafka_destroy(c->owned);
    free(c);
}
