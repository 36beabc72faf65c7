/*
 * kafka_admin.c - the few admin operations cdcflow needs (topic creation for
 * tests and internal topics), through librdkafka's Admin API.
 */
#include <string.h>

#include "cdcflow/log.h"
#include "kafka_internal.h"

cf_code cf_kafka_create_topic(const char *bootstrap, const char *topic, int partitions,
                              int replication, const char *const *kv, size_t n_kv, int timeout_ms,
                              cf_err *err) {
    const char *who = "kafka admin";
    if (!topic || !*topic || partitions < 1)
        return cf_err_set(err, CF_ERR_INVALID, "%s: topic name empty or partitions < 1", who);
    if (!bootstrap || !*bootstrap || strcmp(bootstrap, CF_EMBEDDED_BOOTSTRAP) == 0)
        return cf_err_set(err, CF_ERR_CONFIG, "%s: needs the address of a running cluster, not \"%s\"", who,
                          bootstrap ? bootstrap : "");
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (cf_kafka_conf_set(conf, "bootstrap.servers", bootstrap, who, err) ||
        cf_kafka_conf_apply_kv(conf, kv, n_kv, who, err)) {
        rd_kafka_conf_destroy(conf);
        return err ? err->code : CF_ERR_CONFIG;
    }
    rd_kafka_conf_set_log_cb(conf, cf_kafka_log_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        cf_err_set(err, CF_ERR_CONFIG, "%s: librdkafka refused the configuration", who);
        cf_err_detail(err, "%s", errstr);
        return CF_ERR_CONFIG;
    }
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, replication, errstr, sizeof errstr);
    if (!nt) {
        rd_kafka_destroy(rk);
        cf_err_set(err, CF_ERR_INVALID, "%s: invalid topic request", who);
        cf_err_detail(err, "%s", errstr);
        cf_err_where(err, "%s", topic);
        return CF_ERR_INVALID;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(opt, timeout_ms, NULL, 0);
    rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, NULL, 0);
    rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 2000);
    cf_code rc = CF_OK;
    if (!ev) {
        rc = cf_err_set(err, CF_ERR_TRANSPORT, "%s: no answer to CreateTopics within %d ms", who, timeout_ms);
        cf_err_where(err, "%s", topic);
    } else if (rd_kafka_event_error(ev)) {
        rc = cf_err_set(err, CF_ERR_TRANSPORT, "%s: CreateTopics failed", who);
        cf_err_detail(err, "%s", rd_kafka_event_error_string(ev));
        cf_err_where(err, "%s", topic);
    } else {
        size_t n = 0;
        const rd_kafka_topic_result_t **res =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
        for (size_t i = 0; i < n; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
            if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                rc = cf_err_set(err, CF_ERR_TRANSPORT, "%s: cannot create topic %s", who, topic);
                cf_err_detail(err, "%s: %s", rd_kafka_err2name(e),
                              rd_kafka_topic_result_error_string(res[i]) ? rd_kafka_topic_result_error_string(res[i]) : "");
                cf_err_where(err, "%s", topic);
            }
        }
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opt);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    return rc;
}
