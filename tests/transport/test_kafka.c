/*
 * test_kafka.c - the Kafka transport against librdkafka's mock cluster
 * (cf_embedded_kafka; in this process, real TCP, a MOCK of a broker, not
 * Kafka itself). The same behaviour is checked against the real broker in
 * test_it_kafka.c. Expected behaviour: Kafka's record format (nullable key,
 * value and header values, distinct from empty; header order kept), the
 * idempotent producer's contract (every send gets exactly one delivery
 * report; nothing dropped under back-pressure) and librdkafka's
 * CONFIGURATION.md (unknown properties are refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/log.h"
#include "cdcflow/transport.h"
#include "kafka_test_util.h"

typedef struct dr_log {
    size_t n, n_ok;
    uint64_t max_seq;
    unsigned char *seen; /* per opaque index */
    size_t n_seen;
    int dup;
} dr_log;

static void on_delivery(const cf_delivery *d, void *ctx) {
    dr_log *l = ctx;
    l->n++;
    if (d->code == CF_OK) {
        l->n_ok++;
        assert_true(d->offset >= 0);
        assert_null(d->err);
    }
    if (d->seq > l->max_seq) l->max_seq = d->seq;
    size_t idx = (size_t)(uintptr_t)d->opaque;
    if (idx < l->n_seen) {
        if (l->seen[idx]) l->dup++;
        l->seen[idx] = 1;
    }
}

static void test_roundtrip_shapes(void **state) {
    (void)state;
    cf_err err;
    cf_embedded_kafka *k = cf_embedded_kafka_new(1, &err);
    assert_non_null(k);
    assert_int_equal(cf_embedded_kafka_create_topic(k, "shapes", 1, &err), CF_OK);
    cf_producer *p = cf_producer_new(cf_embedded_kafka_bootstrap(k), NULL, 0, &err);
    assert_non_null(p);
    cf_msg *want[N_SHAPES];
    for (int i = 0; i < N_SHAPES; i++) {
        want[i] = kt_shape("shapes", i);
        uint64_t seq = 0;
        assert_int_equal(cf_producer_send(p, want[i], NULL, &seq, &err), CF_OK);
        assert_int_equal(seq, (uint64_t)i + 1);
    }
    assert_int_equal(cf_producer_flush(p, 10000, &err), CF_OK);
    assert_int_equal(cf_producer_acked_seq(p), N_SHAPES);

    cf_consumer *c = cf_consumer_new(cf_embedded_kafka_bootstrap(k), "g-shapes", NULL, 0, &err);
    assert_non_null(c);
    const char *topics[] = {"shapes"};
    assert_int_equal(cf_consumer_subscribe(c, topics, 1, &err), CF_OK);
    cf_msg *got[N_SHAPES];
    assert_int_equal(kt_consume(c, got, N_SHAPES, 20000), N_SHAPES);
    for (int i = 0; i < N_SHAPES; i++) {
        kt_assert_same(got[i], want[i]);
        assert_int_equal(got[i]->partition, 0);
        assert_int_equal(got[i]->offset, i);
        cf_msg_destroy(got[i]);
        cf_msg_destroy(want[i]);
    }
    cf_consumer_destroy(c);
    cf_producer_destroy(p);
    cf_embedded_kafka_destroy(k);
}

static void test_delivery_reports_and_watermark(void **state) {
    (void)state;
    cf_err err;
    cf_embedded_kafka *k = cf_embedded_kafka_new(3, &err);
    assert_non_null(k);
    assert_int_equal(cf_embedded_kafka_create_topic(k, "dr", 4, &err), CF_OK);
    cf_producer *p = cf_producer_new(cf_embedded_kafka_bootstrap(k), NULL, 0, &err);
    assert_non_null(p);
    enum { N = 3000 };
    dr_log l = {0};
    l.seen = calloc(N, 1);
    l.n_seen = N;
    cf_producer_set_delivery_cb(p, on_delivery, &l);
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "dr");
    uint64_t prev_acked = 0;
    for (size_t i = 0; i < N; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "key-%zu", i);
        cf_msg_set_key(m, key, (size_t)n);
        cf_msg_set_value(m, "x", 1);
        assert_int_equal(cf_producer_send(p, m, (void *)(uintptr_t)i, NULL, &err), CF_OK);
        /* the watermark never moves back and never passes what was sent */
        uint64_t a = cf_producer_acked_seq(p);
        assert_true(a >= prev_acked && a <= cf_producer_last_seq(p));
        prev_acked = a;
    }
    assert_int_equal(cf_producer_flush(p, 20000, &err), CF_OK);
    assert_int_equal(l.n, N);
    assert_int_equal(l.n_ok, N);
    assert_int_equal(l.dup, 0);
    assert_int_equal(l.max_seq, N);
    for (size_t i = 0; i < N; i++) assert_int_equal(l.seen[i], 1);
    assert_int_equal(cf_producer_acked_seq(p), N);
    assert_int_equal(cf_producer_in_flight(p), 0);
    assert_int_equal(cf_producer_failed_count(p), 0);
    free(l.seen);
    cf_msg_destroy(m);
    cf_producer_destroy(p);
    cf_embedded_kafka_destroy(k);
}

/* A local queue of 10 messages and 5000 sends: send() must wait, not drop. */
static void test_backpressure_never_drops(void **state) {
    (void)state;
    cf_err err;
    cf_embedded_kafka *k = cf_embedded_kafka_new(1, &err);
    assert_non_null(k);
    assert_int_equal(cf_embedded_kafka_create_topic(k, "bp", 2, &err), CF_OK);
    const char *kv[] = {"queue.buffering.max.messages", "10", "linger.ms", "0"};
    cf_producer *p = cf_producer_new(cf_embedded_kafka_bootstrap(k), kv, 2, &err);
    assert_non_null(p);
    enum { N = 5000 };
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "bp");
    for (int i = 0; i < N; i++) {
        char v[16];
        int n = snprintf(v, sizeof v, "%d", i);
        cf_msg_set_value(m, v, (size_t)n);
        assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_OK);
        assert_true(cf_producer_in_flight(p) <= 10);
    }
    assert_int_equal(cf_producer_flush(p, 20000, &err), CF_OK);
    assert_int_equal(cf_producer_acked_seq(p), N);

    cf_consumer *c = cf_consumer_new(cf_embedded_kafka_bootstrap(k), "g-bp", NULL, 0, &err);
    assert_non_null(c);
    const char *topics[] = {"bp"};
    assert_int_equal(cf_consumer_subscribe(c, topics, 1, &err), CF_OK);
    cf_msg **got = calloc(N, sizeof *got);
    assert_int_equal(kt_consume(c, got, N, 30000), N);
    unsigned char *seen = calloc(N, 1);
    for (int i = 0; i < N; i++) {
        int v = atoi(got[i]->value);
        assert_true(v >= 0 && v < N);
        assert_int_equal(seen[v], 0);
        seen[v] = 1;
        cf_msg_destroy(got[i]);
    }
    free(seen);
    free(got);
    cf_msg_destroy(m);
    cf_consumer_destroy(c);
    cf_producer_destroy(p);
    cf_embedded_kafka_destroy(k);
}

/* Commit given offsets; a new member of the group resumes there. */
static void test_commit_and_resume(void **state) {
    (void)state;
    cf_err err;
    cf_embedded_kafka *k = cf_embedded_kafka_new(1, &err);
    assert_non_null(k);
    assert_int_equal(cf_embedded_kafka_create_topic(k, "cm", 1, &err), CF_OK);
    cf_producer *p = cf_producer_new(cf_embedded_kafka_bootstrap(k), NULL, 0, &err);
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "cm");
    for (int i = 0; i < 10; i++) {
        char v[8];
        snprintf(v, sizeof v, "%d", i);
        cf_msg_set_value(m, v, strlen(v));
        assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_OK);
    }
    assert_int_equal(cf_producer_flush(p, 10000, &err), CF_OK);
    const char *topics[] = {"cm"};
    /* the mock's group coordinator waits out the session of a member that
     * left before it rebalances, so keep sessions short here */
    const char *kv[] = {"session.timeout.ms", "3000", "heartbeat.interval.ms", "300"};
    cf_consumer *c = cf_consumer_new(cf_embedded_kafka_bootstrap(k), "g-cm", kv, 2, &err);
    assert_int_equal(cf_consumer_subscribe(c, topics, 1, &err), CF_OK);
    cf_msg *got[4];
    assert_int_equal(kt_consume(c, got, 4, 20000), 4);
    /* processed 0..3: commit 4, the next offset to read (Kafka's convention) */
    cf_topic_partition tp = {"cm", 0, got[3]->offset + 1};
    assert_int_equal(cf_consumer_commit(c, &tp, 1, false, &err), CF_OK);
    cf_topic_partition q = {"cm", 0, -1};
    assert_int_equal(cf_consumer_committed(c, &q, 1, 5000, &err), CF_OK);
    assert_int_equal(q.offset, 4);
    for (int i = 0; i < 4; i++) cf_msg_destroy(got[i]);
    assert_int_equal(cf_consumer_close(c, &err), CF_OK);
    cf_consumer_destroy(c);

    c = cf_consumer_new(cf_embedded_kafka_bootstrap(k), "g-cm", kv, 2, &err);
    assert_int_equal(cf_consumer_subscribe(c, topics, 1, &err), CF_OK);
    assert_int_equal(kt_consume(c, got, 1, 30000), 1);
    assert_int_equal(got[0]->offset, 4);
    assert_string_equal(got[0]->value, "4");
    cf_msg_destroy(got[0]);
    cf_consumer_destroy(c);
    cf_msg_destroy(m);
    cf_producer_destroy(p);
    cf_embedded_kafka_destroy(k);
}

static void test_bootstrap_embedded(void **state) {
    (void)state;
    cf_err err;
    cf_producer *p = cf_producer_new("embedded", NULL, 0, &err);
    assert_non_null(p);
    assert_true(strncmp(cf_producer_bootstrap(p), "127.0.0.1:", 10) == 0 ||
                strncmp(cf_producer_bootstrap(p), "localhost:", 10) == 0);
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "auto-created");
    cf_msg_set_value(m, "v", 1);
    assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_OK);
    assert_int_equal(cf_producer_flush(p, 10000, &err), CF_OK);
    assert_int_equal(cf_producer_acked_seq(p), 1);
    cf_msg_destroy(m);
    cf_producer_destroy(p);
}

static void test_config_errors(void **state) {
    (void)state;
    cf_err err;
    const char *bad[] = {"no.such.property", "1"};
    assert_null(cf_producer_new("127.0.0.1:1", bad, 1, &err));
    assert_int_equal(err.code, CF_ERR_CONFIG);
    assert_string_equal(err.where, "no.such.property");
    assert_non_null(strstr(err.detail, "No such configuration property"));

    const char *badval[] = {"acks", "maybe"};
    assert_null(cf_producer_new("127.0.0.1:1", badval, 1, &err));
    assert_int_equal(err.code, CF_ERR_CONFIG);
    assert_string_equal(err.where, "acks");

    const char *noidem[] = {"enable.idempotence", "false"};
    assert_null(cf_producer_new("127.0.0.1:1", noidem, 1, &err));
    assert_int_equal(err.code, CF_ERR_CONFIG);
    assert_string_equal(err.where, "enable.idempotence");

    assert_null(cf_producer_new("", NULL, 0, &err));
    assert_int_equal(err.code, CF_ERR_CONFIG);
    assert_null(cf_consumer_new("127.0.0.1:1", "", NULL, 0, &err));
    assert_int_equal(err.code, CF_ERR_CONFIG);
    assert_null(cf_consumer_new("127.0.0.1:1", "g", bad, 1, &err));
    assert_int_equal(err.code, CF_ERR_CONFIG);
    assert_null(cf_embedded_kafka_new(0, &err));
    assert_int_equal(err.code, CF_ERR_CONFIG);

    /* a message without a topic is refused, not crashed on */
    cf_producer *p = cf_producer_new("127.0.0.1:1", NULL, 0, &err);
    assert_non_null(p);
    cf_msg *m = cf_msg_new();
    assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_ERR_INVALID);
    /* flush against nothing times out with AGAIN, the record stays in flight */
    cf_msg_set_topic(m, "t");
    assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_OK);
    assert_int_equal(cf_producer_flush(p, 200, &err), CF_ERR_AGAIN);
    assert_int_equal(cf_producer_in_flight(p), 1);
    assert_int_equal(cf_producer_acked_seq(p), 0);
    cf_msg_destroy(m);
    cf_producer_destroy(p);
}

typedef struct fail_log {
    int n, n_fail;
    cf_code last_code;
    char where[256];
} fail_log;

static void on_fail_delivery(const cf_delivery *d, void *ctx) {
    fail_log *l = ctx;
    l->n++;
    if (d->code != CF_OK) {
        l->n_fail++;
        assert_non_null(d->err);
        assert_int_equal(d->offset, -1);
        snprintf(l->where, sizeof l->where, "%s", d->err->where);
    }
    l->last_code = d->code;
}

/* Records that cannot be delivered (no broker; message.timeout.ms passes)
 * get a failed report each; the watermark stays before them; flush says so. */
static void test_delivery_failure_stops_watermark(void **state) {
    (void)state;
    cf_err err;
    const char *kv[] = {"message.timeout.ms", "500"};
    cf_producer *p = cf_producer_new("127.0.0.1:1", kv, 1, &err);
    assert_non_null(p);
    fail_log l = {0};
    cf_producer_set_delivery_cb(p, on_fail_delivery, &l);
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "nowhere");
    cf_msg_set_value(m, "v", 1);
    for (int i = 0; i < 3; i++) assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_OK);
    assert_int_equal(cf_producer_flush(p, 10000, &err), CF_ERR_TRANSPORT);
    assert_non_null(strstr(err.message, "delivery failed"));
    assert_int_equal(l.n, 3);
    assert_int_equal(l.n_fail, 3);
    assert_int_equal(l.last_code, CF_ERR_TRANSPORT);
    assert_non_null(strstr(l.where, "nowhere/"));
    assert_int_equal(cf_producer_failed_count(p), 3);
    assert_int_equal(cf_producer_acked_seq(p), 0);
    assert_int_equal(cf_producer_in_flight(p), 0);

    /* too large for message.max.bytes: refused at send, nothing queued */
    size_t big = 2 * 1000 * 1000;
    char *buf = calloc(1, big);
    cf_msg_set_value(m, buf, big);
    assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_ERR_INVALID);
    assert_non_null(strstr(err.hint, "message.max.bytes"));
    assert_int_equal(cf_producer_last_seq(p), 3);
    free(buf);
    cf_msg_destroy(m);
    cf_producer_destroy(p);
}

int main(void) {
    cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL); /* connection-refused noise */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_shapes),
        cmocka_unit_test(test_delivery_reports_and_watermark),
        cmocka_unit_test(test_backpressure_never_drops),
        cmocka_unit_test(test_commit_and_resume),
        cmocka_unit_test(test_bootstrap_embedded),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_delivery_failure_stops_watermark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
