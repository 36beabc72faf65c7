/*
 * kafka_embedded.c - librdkafka's mock cluster as an in-process, in-memory
 * "Kafka": real TCP listeners on 127.0.0.1 so that any client (ours, kcat,
 * Java) can connect, but nothing is durable and it is not a broker
 * implementation of record: for demos and unit tests. Also the shared config
 * helpers of the transport.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "kafka_internal.h" /* rdkafka.h first: rdkafka_mock.h needs it */
#include <librdkafka/rdkafka_mock.h>

struct cf_embedded_kafka {
    rd_kafka_t *rk; /* the handle that owns the mock cluster's thread */
    rd_kafka_mock_cluster_t *mc;
    char *bootstrap;
};

void cf_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk;
    /* syslog levels: 0..3 error, 4 warning, 5..6 info, 7 debug */
    cf_log_level l = level <= 3 ? CF_LOG_ERROR : level == 4 ? CF_LOG_WARN
                   : level <= 6 ? CF_LOG_INFO : CF_LOG_DEBUG;
    if (cf_log_enabled(l)) cf_log(l, "kafka", "%s: %s", fac, buf);
}

/* The mock cluster's owner handle connects to no broker by design, so
 * librdkafka's configuration warning about its missing bootstrap.servers
 * (CONFWARN) would only puzzle a user: it goes to debug. */
static void owner_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    if (fac && strcmp(fac, "CONFWARN") == 0) {
        if (cf_log_enabled(CF_LOG_DEBUG)) cf_log(CF_LOG_DEBUG, "kafka", "embedded cluster's owner: %s: %s", fac, buf);
        return;
    }
    cf_kafka_log_cb(rk, level, fac, buf);
}

cf_code cf_kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value,
                          const char *who, cf_err *err) {
    char errstr[512];
    if (!key || !value)
        return cf_err_set(err, CF_ERR_CONFIG, "%s: a librdkafka setting has a NULL key or value", who);
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        cf_err_set(err, CF_ERR_CONFIG, "%s: invalid librdkafka setting %s=%s", who, key, value);
        cf_err_detail(err, "%s", errstr);
        cf_err_hint(err, "see librdkafka's CONFIGURATION.md (version %s) for the properties and their values",
                    rd_kafka_version_str());
        cf_err_where(err, "%s", key);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

cf_code cf_kafka_conf_apply_kv(rd_kafka_conf_t *conf, const char *const *kv, size_t n_kv,
                               const char *who, cf_err *err) {
    if (n_kv && !kv)
        return cf_err_set(err, CF_ERR_INVALID, "%s: %zu settings announced but kv is NULL", who, n_kv);
    for (size_t i = 0; i < n_kv; i++) {
        cf_code rc = cf_kafka_conf_set(conf, kv[2 * i], kv[2 * i + 1], who, err);
        if (rc) return rc;
    }
    return CF_OK;
}

const char *cf_kafka_kv_get(const char *const *kv, size_t n_kv, const char *key) {
    const char *v = NULL;
    for (size_t i = 0; kv && i < n_kv; i++)
        if (kv[2 * i] && strcmp(kv[2 * i], key) == 0) v = kv[2 * i + 1];
    return v;
}

const char *cf_kafka_resolve_bootstrap(const char *bootstrap, cf_embedded_kafka **owned,
                                       const char *who, cf_err *err) {
    *owned = NULL;
    if (!bootstrap || !*bootstrap) {
        cf_err_set(err, CF_ERR_CONFIG, "%s: bootstrap.servers is empty", who);
        cf_err_hint(err, "give host:port[,host:port...] of the Kafka brokers, or \"embedded\" for an in-memory test cluster");
        return NULL;
    }
    if (strcmp(bootstrap, CF_EMBEDDED_BOOTSTRAP) != 0) return bootstrap;
    *owned = cf_embedded_kafka_new(1, err);
    if (!*owned) return NULL;
    CF_INFO("transport", "%s: bootstrap.servers=embedded: in-memory mock cluster at %s (not durable)",
            who, cf_embedded_kafka_bootstrap(*owned));
    return cf_embedded_kafka_bootstrap(*owned);
}

cf_embedded_kafka *cf_embedded_kafka_new(int brokers, cf_err *err) {
    char errstr[512];
    if (brokers < 1 || brokers > 16) {
        cf_err_set(err, CF_ERR_CONFIG, "embedded kafka: broker count %d out of range", brokers);
        cf_err_hint(err, "use 1 to 16 brokers");
        return NULL;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, owner_log_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        cf_err_set(err, CF_ERR_TRANSPORT, "embedded kafka: cannot create the owner handle");
        cf_err_detail(err, "%s", errstr);
        return NULL;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
    if (!mc) {
        rd_kafka_destroy(rk);
        cf_err_set(err, CF_ERR_TRANSPORT, "embedded kafka: librdkafka could not start the mock cluster");
        cf_err_hint(err, "the listeners bind 127.0.0.1 random ports: check that loopback works");
        return NULL;
    }
    cf_embedded_kafka *k = cf_xcalloc(1, sizeof *k);
    k->rk = rk;
    k->mc = mc;
    k->bootstrap = cf_xstrdup(rd_kafka_mock_cluster_bootstraps(mc));
    return k;
}

const char *cf_embedded_kafka_bootstrap(const cf_embedded_kafka *k) { return k->bootstrap; }

cf_code cf_embedded_kafka_create_topic(cf_embedded_kafka *k, const char *topic, int partitions,
                                       cf_err *err) {
    if (!topic || !*topic || partitions < 1)
        return cf_err_set(err, CF_ERR_INVALID, "embedded kafka: topic name empty or partitions < 1");
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(k->mc, topic, partitions, 1);
    if (e) {
        cf_err_set(err, CF_ERR_TRANSPORT, "embedded kafka: cannot create topic %s", topic);
        cf_err_detail(err, "%s", rd_kafka_err2str(e));
        return CF_ERR_TRANSPORT;
    }
    return CF_OK;
}

void cf_embedded_kafka_destroy(cf_embedded_kafka *k) {
    if (!k) return;
    rd_kafka_mock_cluster_destroy(k->mc);
    rd_kafka_destroy(k->rk);
    free(k->bootstrap);
    free(k);
}
