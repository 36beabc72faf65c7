/*
 * kafka_internal.h - shared helpers of the Kafka transport (producer,
 * consumer, embedded cluster); not a public header.
 */
#ifndef CF_TRANSPORT_KAFKA_INTERNAL_H
#define CF_TRANSPORT_KAFKA_INTERNAL_H

#include <librdkafka/rdkafka.h>

#include "cdcflow/transport.h"

/* Set one librdkafka property; CF_ERR_CONFIG naming the key on failure. */
cf_code cf_kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value,
                          const char *who, cf_err *err);

/* Apply the caller's pass-through settings (2*n_kv strings). */
cf_code cf_kafka_conf_apply_kv(rd_kafka_conf_t *conf, const char *const *kv, size_t n_kv,
                               const char *who, cf_err *err);

/* Value of key in kv (last wins), NULL if absent. */
const char *cf_kafka_kv_get(const char *const *kv, size_t n_kv, const char *key);

/* Resolve the bootstrap: "embedded" starts *owned (1 broker) and returns its
 * address; anything else is returned as is. */
const char *cf_kafka_resolve_bootstrap(const char *bootstrap, cf_embedded_kafka **owned,
                                       const char *who, cf_err *err);

/* Log sink for librdkafka's own log lines (component "kafka"). */
void cf_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

#endif
