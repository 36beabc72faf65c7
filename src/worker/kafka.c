/*
 * kafka.c - the worker's Kafka transport: idempotent producer for source
 * tasks and dead letter queues, consumer group for sink tasks, and the
 * offsets topic store.
 *
 * PLACEHOLDER until the transport module's producer/consumer wrappers
 * (include/cdcflow/transport.h) land: every function reports that Kafka
 * is not available yet, so `transport=kafka` fails clearly at start.
 */
#include "worker_internal.h"

static cf_code missing(cf_err *err, const char *what) {
    cf_err_set(err, CF_ERR_UNSUPPORTED, "the Kafka %s of the worker is not implemented yet", what);
    cf_err_hint(err, "Use transport=direct (the default without a worker file) or --input/--output record files.");
    return CF_ERR_UNSUPPORTED;
}

cf_code cf_worker_kafka_out_new(struct cf_worker *w, const char *client_id, cf_msg_out *out, cf_err *err) {
    (void)w, (void)client_id, (void)out;
    return missing(err, "producer");
}

cf_code cf_worker_kafka_in_new(struct cf_worker *w, const char *group, const char *const *topics, size_t n_topics,
                               const char *topics_regex, cf_msg_in *in, cf_err *err) {
    (void)w, (void)group, (void)topics, (void)n_topics, (void)topics_regex, (void)in;
    return missing(err, "consumer");
}

cf_code cf_worker_kafka_offsets_open(struct cf_worker *w, const char *topic, cf_offset_store **out, cf_err *err) {
    (void)w, (void)topic, (void)out;
    return missing(err, "offsets topic store");
}
