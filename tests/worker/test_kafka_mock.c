/*
 * test_kafka_mock.c - the worker's Kafka transport against librdkafka's
 * MOCK cluster (bootstrap.servers=embedded: an in-process stand-in for a
 * broker, not a real one; the same paths run against the real broker in
 * test_it_worker.c).
 *
 *  - source -> Kafka -> sink: every record arrives; the source offset is
 *    stored in the offsets topic in Kafka Connect's format (key
 *    ["<connector>",{partition}], value {offset}), read back with a plain
 *    consumer as Connect's tools would;
 *  - errors.tolerance=all with a dead letter queue: the original bytes go to
 *    the DLQ with Connect's __connect.errors.* headers (a value that is not
 *    JSON fails in VALUE_CONVERTER, as in Connect's documented example; a
 *    record the sink refuses fails in TASK_PUT).
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
#include <librdkafka/rdkafka_mock.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/worker.h"
#include "../../src/worker/worker_internal.h"
#include "plugins.h"
#include "helpers.h"

static int setup(void **state) {
    (void)state;
    tmpdir_make("kmock");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tmpdir_remove();
    return 0;
}

/* Read every message of a topic from the beginning (a plain consumer). */
typedef struct got {
    int32_t partition;
    char *key, *value;
    rd_kafka_headers_t *hdrs;
} got;

static size_t read_topic(const char *bootstrap, const char *topic, got *out, size_t max, size_t want) {
    char errstr[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
    rd_kafka_conf_set(c, "group.id", "test-reader", errstr, sizeof errstr);
    rd_kafka_conf_set(c, "auto.offset.reset", "earliest", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
    assert_non_null(rk);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    size_t n = 0;
    int idle = 0;
    for (int i = 0; i < 300 && n < want && n < max; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m) {
            if (n && ++idle >= 20) break; /* 2 s without news after the first: that is all */
            continue;
        }
        idle = 0;
        if (!m->err) {
            out[n].partition = m->partition;
            out[n].key = m->key ? strndup(m->key, m->key_len) : NULL;
            out[n].value = m->payload ? strndup(m->payload, m->len) : NULL;
            rd_kafka_headers_t *h = NULL;
            out[n].hdrs = rd_kafka_message_detach_headers(m, &h) == 0 ? h : NULL;
            n++;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return n;
}

static const char *hdr(got *g, const char *name) {
    const void *v;
    size_t sz;
    static char buf[4096];
    if (!g->hdrs || rd_kafka_header_get_last(g->hdrs, name, &v, &sz)) return NULL;
    snprintf(buf, sizeof buf, "%.*s", (int)sz, (const char *)v);
    return buf;
}

static void free_got(got *g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(g[i].key), free(g[i].value);
        if (g[i].hdrs) rd_kafka_headers_destroy(g[i].hdrs);
    }
}

/* A started worker with the test plugins from worker properties (taken). */
static cf_worker *start_worker_props(cf_props *wp) {
    cf_worker_opts o = {.plugins = test_plugins};
    cf_worker *w = NULL;
    cf_err err;
    cf_code rc = cf_worker_new(wp, &o, &w, &err);
    cf_props_destroy(wp);
    assert_cf_ok(rc, &err);
    rc = cf_worker_start(w, &err);
    assert_cf_ok(rc, &err);
    return w;
}

/* Worker properties of these tests: string converters, the offsets topic
 * with `offset_parts` partitions. */
static cf_props *base_props(const char *bootstrap, const char *offset_parts) {
    cf_props *wp = cf_props_new();
    cf_props_set(wp, "bootstrap.servers", bootstrap);
    cf_props_set(wp, "key.converter", "string");
    cf_props_set(wp, "value.converter", "string");
    cf_props_set(wp, "offset.storage.partitions", offset_parts);
    return wp;
}

static cf_worker *start_worker(void) {
    cf_props *wp = base_props("embedded", "3");
    cf_props_set(wp, "offset.flush.interval.ms", "100");
    return start_worker_props(wp);
}

static void test_source_kafka_sink_and_offsets_topic(void **state) {
    (void)state;
    cf_worker *w = start_worker();
    add_kv(w, (const char *const[]){"name", "snk", "connector.class", "test-sink", "topics", "orders", NULL});
    add_kv(w, (const char *const[]){"name", "file-source", "connector.class", "test-source", "test.count", "300",
                                    "test.topic", "orders", NULL});
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    assert_true(wait_durable(300, 60));
    usleep(500 * 1000); /* an offsets flush interval or five */
    /* the offsets topic, read as Connect's tools read it */
    got g[64];
    size_t n = read_topic(cf_worker_kafka_bootstrap(w), "connect-offsets", g, 64, 64);
    assert_true(n >= 1);
    assert_string_equal(g[n - 1].key, "[\"file-source\",{\"src\":\"test\"}]");
    assert_string_equal(g[n - 1].value, "{\"pos\":299}");
    free_got(g, n);
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    cf_worker_destroy(w);
    /* every record once (order holds per partition only) */
    bool have[300] = {false};
    assert_int_equal(seen.ndurable, 300);
    for (size_t i = 0; i < seen.ndurable; i++) {
        int k = atoi(seen.durable[i] + 1);
        assert_true(k >= 0 && k < 300 && !have[k]);
        have[k] = true;
    }
}

/* A source task sends each poll batch in one go (rd_kafka_produce_batch):
 * with a producer queue of 10 messages every batch of up to 37 finds it
 * full part way; the rest is sent again after the backoff, so the topic
 * holds every record once, in order within each partition, and the offsets
 * of all are stored. */
static void test_source_batches_when_queue_full(void **state) {
    (void)state;
    cf_props *wp = base_props("embedded", "3");
    cf_props_set(wp, "producer.queue.buffering.max.messages", "10");
    cf_worker *w = start_worker_props(wp);
    cf_err err;
    add_kv(w, (const char *const[]){"name", "src", "connector.class", "test-source", "test.count", "120",
                                    "test.topic", "small", NULL});
    assert_cf_ok(cf_worker_run(w, true, &err), &err);
    got g[121];
    size_t n = read_topic(cf_worker_kafka_bootstrap(w), "small", g, 121, 120);
    assert_int_equal(n, 120);
    bool have[120] = {false};
    int last[64];
    for (size_t p = 0; p < 64; p++) last[p] = -1;
    for (size_t i = 0; i < n; i++) {
        int k = atoi(g[i].value + 1);
        assert_true(k >= 0 && k < 120 && !have[k]);
        have[k] = true;
        assert_true(g[i].partition >= 0 && g[i].partition < 64);
        assert_true(k > last[g[i].partition]);
        last[g[i].partition] = k;
    }
    free_got(g, n);
    cf_buf m = CF_BUF_INIT; /* offsets stored for every record */
    cf_worker_metrics_text(w, &m);
    assert_non_null(strstr(m.data, "\ncdcflow_task_records_out_total{connector=\"src\",task=\"0\",type=\"source\"} 120\n"));
    cf_buf_free(&m);
    cf_worker_destroy(w);
}

static void test_dead_letter_queue(void **state) {
    (void)state;
    cf_worker *w = start_worker();
    add_kv(w, (const char *const[]){"name", "snk", "connector.class", "test-sink", "topics", "orders",
                                    "value.converter", "json", "value.converter.schemas.enable", "false",
                                    "key.converter", "string", "test.bad.value", "refuse me",
                                    "errors.tolerance", "all", "errors.deadletterqueue.topic.name", "dlq",
                                    "errors.deadletterqueue.context.headers.enable", "true", NULL});
    /* produce three raw messages: valid JSON, not JSON, and one the sink refuses */
    char errstr[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", cf_worker_kafka_bootstrap(w), errstr, sizeof errstr);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
    const char *vals[] = {"\"fine\"", "this is not json", "\"refuse me\""};
    for (int i = 0; i < 3; i++)
        rd_kafka_producev(p, RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY("k", 1),
                          RD_KAFKA_V_VALUE((void *)vals[i], strlen(vals[i])), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_END);
    assert_int_equal(rd_kafka_flush(p, 10000), 0);
    rd_kafka_destroy(p);
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    assert_true(wait_durable(1, 60));
    got g[4];
    size_t n = read_topic(cf_worker_kafka_bootstrap(w), "dlq", g, 4, 2);
    assert_int_equal(n, 2);
    /* the original bytes, Connect's headers */
    assert_string_equal(g[0].value, "this is not json");
    assert_string_equal(hdr(&g[0], "__connect.errors.topic"), "orders");
    assert_string_equal(hdr(&g[0], "__connect.errors.partition"), "0");
    assert_string_equal(hdr(&g[0], "__connect.errors.offset"), "1");
    assert_string_equal(hdr(&g[0], "__connect.errors.connector.name"), "snk");
    assert_string_equal(hdr(&g[0], "__connect.errors.task.id"), "0");
    assert_string_equal(hdr(&g[0], "__connect.errors.stage"), "VALUE_CONVERTER");
    assert_string_equal(hdr(&g[0], "__connect.errors.class.name"), "org.apache.kafka.connect.json.JsonConverter");
    assert_non_null(hdr(&g[0], "__connect.errors.exception.class.name"));
    assert_non_null(hdr(&g[0], "__connect.errors.exception.message"));
    assert_non_null(hdr(&g[0], "__connect.errors.exception.stacktrace"));
    assert_string_equal(g[1].value, "\"refuse me\"");
    assert_string_equal(hdr(&g[1], "__connect.errors.stage"), "TASK_PUT");
    assert_string_equal(hdr(&g[1], "__connect.errors.offset"), "2");
    free_got(g, n);
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    assert_int_equal(cf_worker_error_count(w), 2);
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 1);
    assert_string_equal(seen.durable[0], "fine");
}

/* pause keeps the sink in its group without reading; resume goes on
 * where it stopped; lag shows what waits */
static void test_pause_resume_sink(void **state) {
    (void)state;
    cf_worker *w = start_worker();
    add_kv(w, (const char *const[]){"name", "snk", "connector.class", "test-sink", "topics", "orders", NULL});
    add_kv(w, (const char *const[]){"name", "src1", "connector.class", "test-source", "test.count", "100",
                                    "test.topic", "orders", NULL});
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    assert_true(wait_durable(100, 60));
    assert_int_equal(cf_worker_pause_connector(w, "snk", NULL), CF_OK);
    usleep(300 * 1000);
    cf_state cs, ts;
    assert_int_equal(cf_worker_connector_state(w, "snk", &cs, &ts, NULL), CF_OK);
    assert_int_equal(cs, CF_STATE_PAUSED);
    assert_int_equal(ts, CF_STATE_PAUSED);
    /* more records while paused: source partition "src":"test" resumes at 100 */
    assert_int_equal(cf_worker_delete_connector(w, "src1", NULL), CF_OK);
    add_kv(w, (const char *const[]){"name", "src1", "connector.class", "test-source", "test.count", "250",
                                    "test.topic", "orders", NULL});
    usleep(1500 * 1000);
    assert_int_equal(durable_count(), 100);
    assert_int_equal(cf_worker_resume_connector(w, "snk", NULL), CF_OK);
    assert_true(wait_durable(250, 60));
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 250);
}

/* A mock cluster of this test's own (its broker can be taken down). */
typedef struct mock {
    rd_kafka_t *rk;
    rd_kafka_mock_cluster_t *mc;
} mock;

static mock mock_new(void) {
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr); /* no bootstrap: it only hosts the cluster */
    mock m = {rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr), NULL};
    assert_non_null(m.rk);
    m.mc = rd_kafka_mock_cluster_new(m.rk, 1);
    assert_non_null(m.mc);
    return m;
}

static void mock_destroy(mock m) {
    rd_kafka_mock_cluster_destroy(m.mc);
    rd_kafka_destroy(m.rk);
}

/* kcat reading a whole topic, one line per message in FORMAT (kcat_close
 * it; what it read is checked, not how it ended: under ASan with other tests
 * beside it, it was once seen ending by a signal after its last line). */
static FILE *kcat_read(const char *bs, const char *topic, const char *format) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "timeout 60 kcat -C -b '%s' -t '%s' -e -q -f '%s'", bs, topic, format);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    return f;
}

/* The broker becomes unreachable while a source task produces: the task
 * backs off with doubling waits and says so once per step ("producer queue
 * full ... retrying in N ms (step K)"), polls nothing meanwhile, and once
 * the broker is back every record is in the topic (nothing dropped; the
 * idempotent producer writes none twice) and a line says it flows again.
 * The cluster is librdkafka's mock cluster made here, so that the test can
 * take its broker down (rd_kafka_mock_broker_set_down). */
static int kcat_close(FILE *f) {
    int st = pclose(f);
    if (st != 0) fprintf(stderr, "kcat ended with status 0x%x\n", (unsigned)st);
    return st;
}

static void test_broker_down_backoff(void **state) {
    (void)state;
    mock m = mock_new();
    rd_kafka_mock_cluster_t *mc = m.mc;
    const char *bs = rd_kafka_mock_cluster_bootstraps(mc);
    assert_int_equal(rd_kafka_mock_topic_create(mc, "down", 1, 1), 0);
    char logpath[512];
    snprintf(logpath, sizeof logpath, "%s/worker.log", tmpdir);
    FILE *log = fopen(logpath, "w+");
    assert_non_null(log);
    cf_log_setup(CF_LOG_INFO, CF_LOG_TEXT, log);

    cf_props *wp = base_props(bs, "1");
    cf_props_set(wp, "producer.queue.buffering.max.messages", "10");
    cf_worker *w = start_worker_props(wp);
    add_kv(w, (const char *const[]){"name", "src", "connector.class", "test-source", "test.count", "3000",
                                    "test.topic", "down", "test.poll.delay.ms", "1", NULL});
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    /* some records are through; then the broker goes away for 4 s */
    for (int i = 0; i < 600; i++) {
        cf_buf m = CF_BUF_INIT;
        cf_worker_metrics_text(w, &m);
        const char *k = "\ncdcflow_task_records_out_total{connector=\"src\",task=\"0\",type=\"source\"} ";
        const char *p = strstr(m.data, k);
        long out = p ? atol(p + strlen(k)) : 0;
        cf_buf_free(&m);
        if (out > 0) break;
        usleep(10 * 1000);
    }
    assert_int_equal(rd_kafka_mock_broker_set_down(mc, 1), 0);
    usleep(4000 * 1000);
    assert_int_equal(rd_kafka_mock_broker_set_up(mc, 1), 0);
    pthread_join(r.th, NULL); /* bounded source: returns once all are acknowledged */
    assert_int_equal(r.rc, CF_OK);
    cf_worker_destroy(w);
    fflush(log);
    cf_log_setup(getenv("CF_TEST_VERBOSE") ? CF_LOG_DEBUG : CF_LOG_WARN, CF_LOG_TEXT, stderr);
    fseek(log, 0, SEEK_END);
    long size = ftell(log);
    rewind(log);
    char *text = calloc(1, (size_t)size + 1);
    assert_int_equal(fread(text, 1, (size_t)size, log), (size_t)size);
    fclose(log);
    /* one line per backoff step (a wait of 100 ms that ran out, then 200,
     * 400, ...), the waits doubling */
    int steps = 0;
    for (int k = 1; k <= 4; k++) {
        char want[96];
        snprintf(want, sizeof want, "retrying in %d ms (step %d)", 200 << (k - 1), k);
        if (strstr(text, want)) steps++;
        else if (k <= 3) fail_msg("no log line \"%s\" in:\n%s", want, text);
    }
    assert_true(steps >= 3);
    assert_non_null(strstr(text, "producer queue full (broker slow or unreachable)"));
    assert_non_null(strstr(text, "producer accepts records again"));
    /* a step is one line: not one per record or per retry */
    size_t lines = 0;
    for (const char *p = text; (p = strstr(p, "producer queue full")); p++) lines++;
    if (lines > 8) fail_msg("%zu \"producer queue full\" lines for one outage:\n%s", lines, text);
    free(text);

    /* every message of the topic, read by kcat (an outside client; a
     * librdkafka group consumer of the mock cluster stalled at the outage's
     * boundary, while the partition's high watermark and kcat say 3000) */
    FILE *kc = kcat_read(bs, "down", "%s\\n");
    bool *have = calloc(3000, 1);
    size_t dups = 0, n = 0;
    char line[64];
    while (fgets(line, sizeof line, kc)) {
        int k = atoi(line + 1);
        assert_true(line[0] == 'v' && k >= 0 && k < 3000);
        if (have[k]) dups++;
        have[k] = true;
        n++;
    }
    kcat_close(kc);
    size_t missing = 0;
    int first_missing = -1;
    for (int k = 0; k < 3000; k++)
        if (!have[k] && missing++ == 0) first_missing = k;
    if (missing) fail_msg("%zu records were dropped while the broker was down (of %zu read), the first v%d", missing, n, first_missing);
    assert_int_equal(dups, 0);
    free(have);
    mock_destroy(m);
}

/* Where records land. Null-key records of one poll batch (the test source
 * polls 37 at a time) go to one partition and the next batch to the next
 * (sticky partitioning, as Kafka's producer and librdkafka do it); keyed
 * records land where librdkafka's default partitioner (consistent_random:
 * CRC32 of the key) puts them, whatever the producer does with null keys. */
static void test_partition_placement(void **state) {
    (void)state;
    mock m = mock_new();
    const char *bs = rd_kafka_mock_cluster_bootstraps(m.mc);
    assert_int_equal(rd_kafka_mock_topic_create(m.mc, "keyed", 3, 1), 0);
    assert_int_equal(rd_kafka_mock_topic_create(m.mc, "nokey", 3, 1), 0);
    cf_worker *w = start_worker_props(base_props(bs, "1"));
    add_kv(w, (const char *const[]){"name", "k", "connector.class", "test-source", "test.count", "1500", "test.topic",
                                    "keyed", NULL});
    add_kv(w, (const char *const[]){"name", "n", "connector.class", "test-source", "test.count", "1500", "test.topic",
                                    "nokey", "test.null.key", "true", NULL});
    cf_err err;
    assert_cf_ok(cf_worker_run(w, true, &err), &err);
    cf_worker_destroy(w);

    FILE *kc = kcat_read(bs, "keyed", "%p %k %s\\n");
    char line[128], key[64], val[64];
    int part;
    size_t n = 0;
    while (fgets(line, sizeof line, kc)) {
        assert_int_equal(sscanf(line, "%d %63s %63s", &part, key, val), 3);
        assert_int_equal(part, rd_kafka_msg_partitioner_consistent(NULL, key, strlen(key), 3, NULL, NULL));
        n++;
    }
    kcat_close(kc);
    assert_int_equal(n, 1500);

    int batch_part[1500 / 37 + 1];
    for (size_t b = 0; b < sizeof batch_part / sizeof *batch_part; b++) batch_part[b] = -1;
    bool used[3] = {false, false, false};
    kc = kcat_read(bs, "nokey", "%p %s\\n");
    n = 0;
    while (fgets(line, sizeof line, kc)) {
        assert_int_equal(sscanf(line, "%d %63s", &part, val), 2);
        int v = atoi(val + 1);
        assert_true(v >= 0 && v < 1500 && part >= 0 && part < 3);
        int b = v / 37;
        if (batch_part[b] < 0) batch_part[b] = part;
        else if (batch_part[b] != part) fail_msg("poll batch %d split over partitions %d and %d", b, batch_part[b], part);
        used[part] = true;
        n++;
    }
    kcat_close(kc);
    assert_int_equal(n, 1500);
    assert_true(used[0] && used[1] && used[2]);
    mock_destroy(m);
}

/* A partition without a leader gets no null-key batch (librdkafka's own
 * partitioner also picks among available partitions only): the records go
 * to the other partitions and the run ends; a batch placed there would wait
 * until a leader came back. */
static void test_sticky_skips_leaderless(void **state) {
    (void)state;
    mock m = mock_new();
    const char *bs = rd_kafka_mock_cluster_bootstraps(m.mc);
    assert_int_equal(rd_kafka_mock_topic_create(m.mc, "gap", 3, 1), 0);
    assert_int_equal(rd_kafka_mock_partition_set_leader(m.mc, "gap", 1, -1), 0);
    cf_worker *w = start_worker_props(base_props(bs, "1"));
    add_kv(w, (const char *const[]){"name", "n", "connector.class", "test-source", "test.count", "1500", "test.topic",
                                    "gap", "test.null.key", "true", NULL});
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 60;
    if (pthread_timedjoin_np(r.th, NULL, &ts) != 0) fail_msg("records waited for a partition without a leader");
    assert_cf_ok(r.rc, &r.err);
    cf_worker_destroy(w);
    FILE *kc = kcat_read(bs, "gap", "%p %s\\n");
    char line[128], val[64];
    int part;
    size_t n = 0;
    while (fgets(line, sizeof line, kc)) {
        assert_int_equal(sscanf(line, "%d %63s", &part, val), 2);
        assert_true(part == 0 || part == 2);
        n++;
    }
    kcat_close(kc);
    assert_int_equal(n, 1500);
    mock_destroy(m);
}

/* ---- a paused sink's consumer stays paused through a rebalance ----
 * Connect's WorkerSinkTask pauses the partitions it is given while the task
 * is paused; librdkafka starts fetching a newly assigned partition at once,
 * paused or not. Consumer B reads the topic first; A joins and takes one
 * partition, then pauses; B leaves, so A is given a partition it never had:
 * A's polls must return nothing until it resumes (then everything comes). */
static void produce_to(const char *bs, const char *topic, int32_t part, int n) {
    char errstr[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", bs, errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
    assert_non_null(rk);
    for (int i = 0; i < n; i++)
        assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
                                           RD_KAFKA_V_VALUE("v", 1), RD_KAFKA_V_END),
                         0);
    assert_int_equal(rd_kafka_flush(rk, 10000), 0);
    rd_kafka_destroy(rk);
}

/* per: NULL or counts per partition (0 and 1) */
static size_t poll_count_per(cf_msg_in *in, int ms, size_t *per) {
    size_t got = 0;
    cf_msg *m[64];
    for (int64_t end = cf_now_us() + (int64_t)ms * 1000; cf_now_us() < end;) {
        size_t n = 0;
        cf_err err;
        assert_cf_ok(in->poll(in->state, m, 64, &n, 50, &err), &err);
        for (size_t i = 0; i < n; i++) {
            if (per && m[i]->partition >= 0 && m[i]->partition < 2) per[m[i]->partition]++;
            cf_msg_destroy(m[i]);
        }
        got += n;
    }
    return got;
}

static size_t poll_count(cf_msg_in *in, int ms) { return poll_count_per(in, ms, NULL); }

static size_t assigned(cf_msg_in *in) {
    cf_tp_lag *parts = NULL;
    size_t n = 0;
    in->lag(in->state, &parts, &n);
    cf_tp_lag_free(parts, n);
    return n;
}

static void test_paused_through_rebalance(void **state) {
    (void)state;
    mock m = mock_new();
    const char *bs = rd_kafka_mock_cluster_bootstraps(m.mc);
    assert_int_equal(rd_kafka_mock_topic_create(m.mc, "pz", 2, 1), 0);
    produce_to(bs, "pz", 0, 10);
    produce_to(bs, "pz", 1, 10);
    /* the mock coordinator waits a session timeout for members to rejoin */
    cf_props *wp = base_props(bs, "1");
    cf_props_set(wp, "consumer.session.timeout.ms", "6000");
    cf_props_set(wp, "consumer.heartbeat.interval.ms", "300");
    cf_worker *w = start_worker_props(wp);
    const char *const topics[] = {"pz"};
    cf_msg_in a = {0}, b = {0};
    cf_err err;
    assert_cf_ok(cf_worker_kafka_in_new(w, "connect-pz", topics, 1, NULL, NULL, &b, &err), &err);
    cf_worker_kafka_in_bind(&b);
    size_t nb = 0;
    for (int i = 0; i < 300 && nb < 20; i++) nb += poll_count(&b, 100);
    assert_int_equal(nb, 20);
    /* A joins: the group is split, A reads its partition */
    assert_cf_ok(cf_worker_kafka_in_new(w, "connect-pz", topics, 1, NULL, NULL, &a, &err), &err);
    cf_worker_kafka_in_bind(&a);
    size_t na = 0;
    int64_t t0 = cf_now_us();
    for (int i = 0; i < 1200 && (assigned(&a) != 1 || assigned(&b) != 1 || na == 0); i++)
        na += poll_count(&a, 50), poll_count(&b, 50);
    fprintf(stderr, "split after %.1f s\n", (cf_now_us() - t0) / 1e6);
    assert_int_equal(assigned(&a), 1);
    assert_int_equal(na, 10); /* nothing was committed: A read its partition from the start */
    a.pause(a.state, true);
    /* B leaves: A is given the other partition while paused */
    b.destroy(b.state);
    produce_to(bs, "pz", 0, 5);
    produce_to(bs, "pz", 1, 5);
    size_t paused_got = 0;
    t0 = cf_now_us();
    for (int i = 0; i < 1200 && assigned(&a) != 2; i++) paused_got += poll_count(&a, 100);
    fprintf(stderr, "A has both after %.1f s\n", (cf_now_us() - t0) / 1e6);
    assert_int_equal(assigned(&a), 2);
    paused_got += poll_count(&a, 2000);
    assert_int_equal(paused_got, 0);
    a.pause(a.state, false);
    na = 0;
    for (int i = 0; i < 300 && na < 30; i++) na += poll_count(&a, 100);
    assert_int_equal(na, 30); /* both partitions from the start (nothing committed) */
    /* A pauses with both; C joins and takes one; A resumes; C leaves: the
     * partition that comes back to A was paused when it was taken away, and
     * must be read now */
    a.pause(a.state, true);
    cf_msg_in c = {0};
    assert_cf_ok(cf_worker_kafka_in_new(w, "connect-pz", topics, 1, NULL, NULL, &c, &err), &err);
    cf_worker_kafka_in_bind(&c);
    for (int i = 0; i < 1200 && (assigned(&a) != 1 || assigned(&c) != 1); i++)
        paused_got += poll_count(&a, 50), poll_count(&c, 50);
    assert_int_equal(assigned(&a), 1);
    assert_int_equal(paused_got, 0);
    a.pause(a.state, false);
    c.destroy(c.state);
    produce_to(bs, "pz", 0, 5);
    produce_to(bs, "pz", 1, 5);
    size_t per[2] = {0, 0};
    for (int i = 0; i < 1200 && (assigned(&a) != 2 || per[0] < 20 || per[1] < 20); i++) poll_count_per(&a, 100, per);
    fprintf(stderr, "after the second rebalance A read %zu + %zu\n", per[0], per[1]);
    assert_true(per[0] >= 20 && per[1] >= 20); /* nothing committed: each partition's 20 from the start */
    a.destroy(a.state);
    cf_worker_destroy(w);
    mock_destroy(m);
}

int main(void) {
    cf_log_setup(getenv("CF_TEST_VERBOSE") ? CF_LOG_DEBUG : CF_LOG_WARN, CF_LOG_TEXT, stderr);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_source_kafka_sink_and_offsets_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_batches_when_queue_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pause_resume_sink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paused_through_rebalance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_down_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partition_placement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sticky_skips_leaderless, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
