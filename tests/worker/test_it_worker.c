/*
 * test_it_worker.c - the worker against the REAL Kafka broker that
 * scripts/servers starts (CF_TEST_KAFKA). Fails, never skips, when the
 * broker is missing.
 *
 *  1. source -> Kafka -> sink: every record arrives; the offsets topic is
 *     read by Kafka Connect's own code (tests/worker/java/
 *     ConnectOffsetsReader.java: KafkaConsumer + connect-json's
 *     JsonConverter, schemas.enable=false), the outside oracle that Connect
 *     tooling reads our offsets.
 *  2. two workers, one sink connector name (one consumer group
 *     "connect-<name>"), a 4-partition topic: the second worker joins, the
 *     partitions are rebalanced, every record is put exactly once (the
 *     revoked partitions were flushed and committed before being given
 *     away) and both workers did work; also when B leaves again and A takes
 *     its partitions back, and with the cooperative (incremental) protocol.
 *  3. broker restart mid-stream: nothing is lost. On the spare broker
 *     (CF_TEST_SPARE_KAFKA, CF_TEST_SPARE_KAFKA_RESTART: scripts/run-tests
 *     starts it), so that the tests beside this one on the shared broker are
 *     not hit by the restart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "cdcflow/log.h"
#include "cdcflow/worker.h"
#include "plugins.h"
#include "helpers.h"

static const char *kafka;
static char prefix[64];

/* extra: NULL or NULL-terminated key/value pairs of further worker settings */
static cf_worker *start_worker_with(const char *offsets_topic, const char *const *extra) {
    cf_props *wp = cf_props_new();
    for (size_t i = 0; extra && extra[i]; i += 2) cf_props_set(wp, extra[i], extra[i + 1]);
    cf_props_set(wp, "bootstrap.servers", kafka);
    cf_props_set(wp, "offset.flush.interval.ms", "200");
    cf_props_set(wp, "offset.storage.topic", offsets_topic);
    cf_props_set(wp, "offset.storage.replication.factor", "1");
    cf_props_set(wp, "key.converter", "string");
    cf_props_set(wp, "value.converter", "string");
    cf_worker_opts o = {.plugins = test_plugins};
    cf_worker *w = NULL;
    cf_err err;
    assert_int_equal(cf_worker_new(wp, &o, &w, &err), CF_OK);
    cf_props_destroy(wp);
    cf_code rc = cf_worker_start(w, &err);
    assert_cf_ok(rc, &err);
    return w;
}

static cf_worker *start_worker(const char *offsets_topic) { return start_worker_with(offsets_topic, NULL); }

/* every v0..v(n-1) exactly once (allow_dups: at least once; returns the
 * count of records put twice). The counts are taken under seen.mu and the
 * verdict after it is released: a failing assertion leaves the test by a
 * long jump, and a lock still held then hung every later test (seen_reset). */
static size_t assert_put_once(size_t n, bool allow_dups) {
    pthread_mutex_lock(&seen.mu);
    unsigned char *have = calloc(n, 1);
    size_t dups = 0, bad = 0;
    for (size_t i = 0; i < seen.ndurable; i++) {
        long k = atol(seen.durable[i] + 1);
        if (k < 0 || (size_t)k >= n) {
            bad++;
            continue;
        }
        if (have[k]) dups++;
        have[k] = 1;
    }
    pthread_mutex_unlock(&seen.mu);
    size_t lost = n;
    for (size_t i = 0; i < n; i++)
        if (!have[i]) {
            lost = i;
            break;
        }
    free(have);
    if (bad) fail_msg("%zu records put that the source never wrote", bad);
    if (lost < n) fail_msg("record v%zu was lost", lost);
    if (dups && !allow_dups) fail_msg("%zu records were put twice", dups);
    return dups;
}

static void assert_exactly_once(size_t n) { assert_put_once(n, false); }

static void create_topic(const char *topic, int partitions) {
    char errstr[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", kafka, errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1, errstr, sizeof errstr);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    assert_non_null(ev);
    size_t n;
    const rd_kafka_topic_result_t **tr =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    assert_int_equal(n, 1);
    assert_int_equal(rd_kafka_topic_result_error(tr[0]), 0);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_destroy(rk);
}

static char *run_capture(const char *cmd) {
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    cf_buf b = CF_BUF_INIT;
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) cf_buf_append(&b, tmp, n);
    int st = pclose(f);
    if (st != 0) fail_msg("command failed (%d): %s\n%s", st, cmd, b.data ? b.data : "");
    if (!b.data) cf_buf_append_str(&b, "");
    return cf_buf_detach(&b, NULL);
}

/* ---- 1 ---- */
static void it_source_kafka_sink_offsets_read_by_connect(void **state) {
    (void)state;
    seen_reset();
    char topic[128], otopic[128], conn[128];
    snprintf(topic, sizeof topic, "%s-orders", prefix);
    snprintf(otopic, sizeof otopic, "%s-offsets", prefix);
    snprintf(conn, sizeof conn, "%s-source", prefix);
    cf_worker *w = start_worker(otopic);
    add_kv(w, (const char *const[]){"name", "it-sink", "connector.class", "test-sink", "topics", topic, NULL});
    add_kv(w, (const char *const[]){"name", conn, "connector.class", "test-source", "test.count", "2000", "test.topic",
                                    topic, NULL});
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    assert_true(wait_durable(2000, 120));
    usleep(1000 * 1000);
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    cf_worker_destroy(w);
    assert_exactly_once(2000);

    /* Connect's own code reads the offsets topic */
    const char *java = getenv("CF_TEST_JAVA"), *lib = getenv("CF_TEST_KAFKA_LIB");
    if (!java || !lib) fail_msg("CF_TEST_JAVA / CF_TEST_KAFKA_LIB not set: start the servers with scripts/servers");
    const char *home = getenv("HOME");
    char cache[512];
    snprintf(cache, sizeof cache, "%s", getenv("CF_SERVERS_CACHE") ? getenv("CF_SERVERS_CACHE") : "");
    if (!cache[0]) snprintf(cache, sizeof cache, "%s/.cache/cdcflow", home ? home : "/root");
    /* the connect-json/connect-api jars of the broker's version, from Maven Central (cached) */
    const char *ver = strstr(lib, "kafka-");
    char version[32] = "4.3.1";
    if (ver) sscanf(ver + 6, "%31[0-9.]", version);
    char cmd[4096];
    /* connect-json + connect-api of the broker's version and the Jackson
     * module JsonConverter needs, from Maven Central (cached in the m2 dir
     * scripts/servers uses) */
    snprintf(cmd, sizeof cmd,
             "set -e; M2=%s/m2; LIB='%s'; V=%s; "
             "JV=$(ls \"$LIB\" | sed -n 's/^jackson-databind-\\(.*\\)\\.jar$/\\1/p' | head -1); "
             "get() { [ -f \"$M2/$1\" ] || mvn -B -q -Dmaven.repo.local=$M2 dependency:get -Dartifact=$2 >&2; }; "
             "get org/apache/kafka/connect-json/$V/connect-json-$V.jar org.apache.kafka:connect-json:$V; "
             "get org/apache/kafka/connect-api/$V/connect-api-$V.jar org.apache.kafka:connect-api:$V; "
             "get com/fasterxml/jackson/module/jackson-module-blackbird/$JV/jackson-module-blackbird-$JV.jar "
             "com.fasterxml.jackson.module:jackson-module-blackbird:$JV; "
             "%s -cp \"$LIB/*:$M2/org/apache/kafka/connect-json/$V/connect-json-$V.jar:"
             "$M2/org/apache/kafka/connect-api/$V/connect-api-$V.jar:"
             "$M2/com/fasterxml/jackson/module/jackson-module-blackbird/$JV/jackson-module-blackbird-$JV.jar\" "
             "%s/worker/java/ConnectOffsetsReader.java %s %s 2>/dev/null",
             cache, lib, version, java, CF_TESTS_DIR, kafka, otopic);
    char *out = run_capture(cmd);
    char expect[256];
    snprintf(expect, sizeof expect, "%s\t{src=test}\t{pos=1999}\n", conn);
    if (!strstr(out, expect)) fail_msg("Connect's reader printed:\n%s\nexpected a line: %s", out, expect);
    free(out);
}

/* ---- 2 ---- */
static uint64_t records_out(cf_worker *w, const char *conn) {
    cf_buf b = CF_BUF_INIT;
    cf_worker_metrics_text(w, &b);
    char key[256];
    snprintf(key, sizeof key, "cdcflow_task_records_out_total{connector=\"%s\",task=\"0\",type=\"sink\"} ", conn);
    const char *p = strstr(b.data, key);
    uint64_t v = p ? strtoull(p + strlen(key), NULL, 10) : 0;
    cf_buf_free(&b);
    return v;
}

/* Two workers share one sink connector's group on a 4-partition topic: A
 * alone has done part of the work when B joins (A gives partitions away in
 * the middle of the stream); with b_leaves, B stops again before the end
 * and A takes its partitions back, from the offsets committed for them. A
 * worker must not commit the positions of partitions it gave away later
 * (with its own partitions' progress): that winds their committed offsets
 * back. strategy: the consumers' partition.assignment.strategy (NULL:
 * librdkafka's default, eager). exact: every record put exactly once (else
 * at least once, duplicates counted). */
static void two_workers_rebalance(const char *tag, const char *strategy, bool b_leaves, bool exact) {
    seen_reset();
    char topic[128], otopic[128], conn[128];
    snprintf(topic, sizeof topic, "%s-rebalance-%s", prefix, tag);
    snprintf(otopic, sizeof otopic, "%s-offsets-%s", prefix, tag);
    snprintf(conn, sizeof conn, "%s-shared-%s", prefix, tag);
    create_topic(topic, 4);
    const size_t N = 20000;
    /* the records are there before the sinks start */
    cf_worker *src = start_worker(otopic);
    char count[32];
    snprintf(count, sizeof count, "%zu", N);
    add_kv(src, (const char *const[]){"name", "feeder", "connector.class", "test-source", "test.count", count,
                                      "test.topic", topic, NULL});
    assert_int_equal(cf_worker_run(src, true, NULL), CF_OK); /* bounded: returns when acknowledged */
    cf_worker_destroy(src);

    const char *const extra[] = {"consumer.partition.assignment.strategy", strategy, NULL};
    /* slower puts when B is to leave before the end */
    const char *const sink_cfg[] = {"name", conn, "connector.class", "test-sink", "topics", topic,
                                    "test.put.delay.ms", b_leaves ? "300" : "150", NULL};
    cf_worker *a = start_worker_with(otopic, strategy ? extra : NULL);
    add_kv(a, sink_cfg);
    runner ra = {.w = a};
    pthread_create(&ra.th, NULL, run_thread, &ra);
    /* worker A has the whole group and did part of the work: B joins now,
     * so A must give partitions away in the middle of the stream. A is
     * paused until B has put records: else A could finish the stream
     * before B is given anything (B's start and the group's rebalance take
     * 4-5 s, about what A needs for the rest: a CI run saw "worker B put
     * 0"). A paused sink stays in the group, so the rebalance runs; its
     * partitions are given back paused (test_kafka_mock). */
    assert_true(wait_durable(3000, 120));
    assert_true(durable_count() < N);
    assert_int_equal(cf_worker_pause_connector(a, conn, NULL), CF_OK);
    cf_worker *b = start_worker_with(otopic, strategy ? extra : NULL);
    add_kv(b, sink_cfg);
    runner rb = {.w = b};
    pthread_create(&rb.th, NULL, run_thread, &rb);
    for (int i = 0; i < 1200 && records_out(b, conn) == 0; i++) usleep(100 * 1000);
    assert_true(records_out(b, conn) > 0);
    assert_true(durable_count() < N);
    assert_int_equal(cf_worker_resume_connector(a, conn, NULL), CF_OK);
    uint64_t nb = 0;
    if (b_leaves) {
        /* B works a while next to A (A commits its own progress meanwhile), then leaves */
        for (int i = 0; i < 1200 && records_out(b, conn) < 1000; i++) usleep(100 * 1000);
        assert_true(durable_count() < N);
        nb = records_out(b, conn);
        cf_worker_stop(b);
        pthread_join(rb.th, NULL);
        assert_int_equal(rb.rc, CF_OK);
        cf_worker_destroy(b);
        b = NULL;
    }
    assert_true(wait_durable(N, 240));
    usleep(500 * 1000);
    uint64_t na = records_out(a, conn);
    if (b) nb = records_out(b, conn);
    cf_worker_stop(a);
    pthread_join(ra.th, NULL);
    assert_int_equal(ra.rc, CF_OK);
    cf_worker_destroy(a);
    if (b) {
        cf_worker_stop(b);
        pthread_join(rb.th, NULL);
        assert_int_equal(rb.rc, CF_OK);
        cf_worker_destroy(b);
    }
    fprintf(stderr, "rebalance (%s): worker A put %llu, worker B put %llu\n", tag, (unsigned long long)na,
            (unsigned long long)nb);
    assert_true(na > 0 && nb > 0);
    size_t dups = assert_put_once(N, !exact);
    if (!exact) fprintf(stderr, "rebalance (%s): %zu of %zu records put twice\n", tag, dups, N);
}

static void it_two_workers_rebalance(void **state) {
    (void)state;
    two_workers_rebalance("eager", NULL, false, true);
}

static void it_rebalance_partitions_come_back(void **state) {
    (void)state;
    two_workers_rebalance("back", NULL, true, true);
}

/* The incremental protocol (KIP-429): only the partitions that move are
 * revoked; the others keep being read and put meanwhile. At least once, not
 * exactly: librdkafka before 2.10 (Debian 12 has 2.0.2) fails the commit
 * made in the revoke callback of an incremental rebalance with
 * ILLEGAL_GENERATION (librdkafka#4059, fixed by #4908), so what was put
 * since the last commit of a moved partition is put again by its new owner. */
static void it_rebalance_cooperative(void **state) {
    (void)state;
    two_workers_rebalance("coop", "cooperative-sticky", true, false);
}

/* ---- 3 ---- */
static void it_broker_restart_no_loss(void **state) {
    (void)state;
    seen_reset();
    const char *restart = getenv("CF_TEST_SPARE_KAFKA_RESTART");
    const char *spare = getenv("CF_TEST_SPARE_KAFKA");
    if (!restart || !spare)
        fail_msg("CF_TEST_SPARE_KAFKA(_RESTART) not set: scripts/run-tests starts the spare servers (scripts/servers)");
    const char *shared = kafka;
    kafka = spare;
    char topic[128], otopic[128];
    snprintf(topic, sizeof topic, "%s-restart", prefix);
    snprintf(otopic, sizeof otopic, "%s-offsets3", prefix);
    cf_worker *w = start_worker(otopic);
    add_kv(w, (const char *const[]){"name", "restart-sink", "connector.class", "test-sink", "topics", topic, NULL});
    add_kv(w, (const char *const[]){"name", "restart-source", "connector.class", "test-source", "test.count", "6000",
                                    "test.topic", topic, "test.poll.delay.ms", "25", NULL});
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    assert_true(wait_durable(300, 120));
    size_t before = durable_count();
    fprintf(stderr, "restarting the broker after %zu records: %s\n", before, restart);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s >&2", restart);
    assert_int_equal(system(cmd), 0);
    assert_true(wait_durable(6000, 300));
    usleep(500 * 1000);
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    cf_worker_destroy(w);
    /* no loss; a restart may legitimately redeliver (at-least-once), count it */
    pthread_mutex_lock(&seen.mu);
    unsigned char *have = calloc(6000, 1);
    for (size_t i = 0; i < seen.ndurable; i++) have[atol(seen.durable[i] + 1)] = 1;
    size_t total = seen.ndurable;
    pthread_mutex_unlock(&seen.mu);
    for (size_t i = 0; i < 6000; i++)
        if (!have[i]) fail_msg("record v%zu was lost across the broker restart", i);
    fprintf(stderr, "broker restart: 6000 records, %zu puts (%zu redelivered)\n", total, total - 6000);
    free(have);
    kafka = shared;
}

int main(void) {
    cf_log_setup(getenv("CF_TEST_VERBOSE") ? CF_LOG_DEBUG : CF_LOG_WARN, CF_LOG_TEXT, stderr);
    kafka = getenv("CF_TEST_KAFKA");
    if (!kafka || !*kafka) {
        fprintf(stderr, "FAIL: CF_TEST_KAFKA is not set; start the broker with `scripts/servers start kafka` and "
                        "source its environment file (scripts/servers envfile)\n");
        return 1;
    }
    snprintf(prefix, sizeof prefix, "cfit-%d-%ld", (int)getpid(), (long)time(NULL));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(it_source_kafka_sink_offsets_read_by_connect),
        cmocka_unit_test(it_two_workers_rebalance),
        cmocka_unit_test(it_rebalance_partitions_come_back),
        cmocka_unit_test(it_rebalance_cooperative),
        cmocka_unit_test(it_broker_restart_no_loss),
    };
    /* CF_TEST_FILTER=it_two* runs only the matching tests (while developing) */
    if (getenv("CF_TEST_FILTER")) cmocka_set_test_filter(getenv("CF_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
