/*
 * test_it_kafka.c - the Kafka transport against the REAL broker that
 * scripts/servers starts (Apache Kafka 4.3 KRaft, CF_TEST_KAFKA):
 *   - N records produced and consumed back, every shape (null key, null
 *     value, empty vs null, headers with null values) preserved;
 *   - a consumer-group rebalance with two members: the first member is told
 *     which partitions are revoked BEFORE they go, commits there, and the
 *     second resumes from those commits (nothing lost, nothing read twice);
 *   - a broker stopped and started mid-stream with scripts/servers
 *     (`stop kafka` / `start kafka`, on a private instance so that tests
 *     running in parallel keep their broker): every record produced is acknowledged once the
 *     broker is back, consumed after the restart, and the log holds each
 *     record exactly once (idempotent producer);
 *   - kcat, an outside client, reads back what we produced (kcat -C -J -e).
 * Fails (does not skip) when CF_TEST_KAFKA or CF_TEST_SERVERS are
 * missing: run it through `make test` / scripts/run-tests, or source
 * $(scripts/servers envfile) after `scripts/servers start kafka`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "cdcflow/log.h"
#include "cdcflow/transport.h"
#include "../it_env.h"
#include "kafka_test_util.h"


static void make_topic(const char *bs, const char *topic, int partitions) {
    cf_err err;
    cf_code rc = cf_kafka_create_topic(bs, topic, partitions, 1, NULL, 0, 30000, &err);
    if (rc) fail_msg("create topic %s: %s: %s", topic, err.message, err.detail);
}

/* ------------------------------------------------------------ N records */

static void test_it_produce_consume_n(void **state) {
    (void)state;
    const char *bs = it_need_env("CF_TEST_KAFKA");
    char topic[128];
    kt_unique_topic(topic, sizeof topic, "it-n");
    make_topic(bs, topic, 3);
    cf_err err;
    cf_producer *p = cf_producer_new(bs, NULL, 0, &err);
    assert_non_null(p);
    enum { N = 20000 };
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, topic);
    for (int i = 0; i < N; i++) {
        char k[32], v[64];
        int kn = snprintf(k, sizeof k, "k%d", i % 97);
        int vn = snprintf(v, sizeof v, "%d", i);
        cf_msg_set_key(m, k, (size_t)kn);
        cf_msg_set_value(m, v, (size_t)vn);
        assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_OK);
    }
    /* plus one of every shape on partition 0 */
    cf_msg *want[N_SHAPES];
    for (int i = 0; i < N_SHAPES; i++) {
        want[i] = kt_shape(topic, i);
        assert_int_equal(cf_producer_send(p, want[i], NULL, NULL, &err), CF_OK);
    }
    assert_int_equal(cf_producer_flush(p, 60000, &err), CF_OK);
    assert_int_equal(cf_producer_acked_seq(p), N + N_SHAPES);

    cf_consumer *c = cf_consumer_new(bs, topic, NULL, 0, &err);
    assert_non_null(c);
    const char *topics[] = {topic};
    assert_int_equal(cf_consumer_subscribe(c, topics, 1, &err), CF_OK);
    cf_msg **got = calloc(N + N_SHAPES, sizeof *got);
    size_t n = kt_consume(c, got, N + N_SHAPES, 120000);
    assert_int_equal(n, N + N_SHAPES);
    unsigned char *seen = calloc(N, 1);
    int shape = 0;
    int64_t last_off[3] = {-1, -1, -1};
    for (size_t i = 0; i < n; i++) {
        /* offsets grow by one within each partition */
        assert_true(got[i]->partition >= 0 && got[i]->partition < 3);
        assert_int_equal(got[i]->offset, last_off[got[i]->partition] + 1);
        last_off[got[i]->partition] = got[i]->offset;
        if (got[i]->ts_type == CF_TS_CREATE && got[i]->timestamp >= SHAPE_TS &&
            got[i]->timestamp < SHAPE_TS + N_SHAPES) {
            kt_assert_same(got[i], want[shape]); /* in order: one partition */
            shape++;
        } else {
            int v = atoi(got[i]->value);
            assert_true(v >= 0 && v < N);
            assert_int_equal(seen[v], 0);
            seen[v] = 1;
        }
        cf_msg_destroy(got[i]);
    }
    assert_int_equal(shape, N_SHAPES);
    for (int i = 0; i < N_SHAPES; i++) cf_msg_destroy(want[i]);
    free(seen);
    free(got);
    cf_msg_destroy(m);
    cf_consumer_destroy(c);
    cf_producer_destroy(p);
}

/* ------------------------------------------------------------ rebalance */

enum { RB_PARTS = 4, RB_N = 800 };

typedef struct member {
    const char *name;
    cf_consumer *c;
    int assigned[RB_PARTS];      /* currently owned */
    int64_t next[RB_PARTS];      /* next offset to read = what to commit */
    int n_revoked_calls, n_revoked_parts, n_assigned_calls;
    int commit_failures;
} member;

static void on_rebalance(cf_rebalance_kind kind, const cf_topic_partition *parts, size_t n, void *ctx) {
    member *mb = ctx;
    if (kind == CF_REBALANCE_ASSIGNED) {
        mb->n_assigned_calls++;
        for (size_t i = 0; i < n; i++) mb->assigned[parts[i].partition] = 1;
        return;
    }
    mb->n_revoked_calls++;
    mb->n_revoked_parts += (int)n;
    /* the sink's flush + commit, while the partitions are still ours */
    cf_topic_partition commit[RB_PARTS];
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        int pt = parts[i].partition;
        mb->assigned[pt] = 0;
        if (mb->next[pt] >= 0) commit[nc++] = (cf_topic_partition){parts[i].topic, pt, mb->next[pt]};
        mb->next[pt] = -1;
    }
    cf_err err;
    if (nc && cf_consumer_commit(mb->c, commit, nc, false, &err) != CF_OK) {
        fprintf(stderr, "%s: commit in revoke failed: %s %s\n", mb->name, err.message, err.detail);
        mb->commit_failures++;
    }
}

static int count_assigned(const member *mb) {
    int n = 0;
    for (int i = 0; i < RB_PARTS; i++) n += mb->assigned[i];
    return n;
}

/* poll one message; record it; returns 1 if one arrived */
static int poll_one(member *mb, int *seen, int timeout_ms) {
    cf_msg *m = cf_msg_new();
    cf_err err;
    int got = 0;
    if (cf_consumer_poll(mb->c, timeout_ms, m, &err) == CF_OK) {
        int v = atoi(m->value);
        assert_true(v >= 0 && v < RB_N);
        seen[v]++;
        mb->next[m->partition] = m->offset + 1;
        got = 1;
    }
    cf_msg_destroy(m);
    return got;
}

static void test_it_rebalance_two_consumers(void **state) {
    (void)state;
    const char *bs = it_need_env("CF_TEST_KAFKA");
    char topic[128], group[160];
    kt_unique_topic(topic, sizeof topic, "it-rb");
    snprintf(group, sizeof group, "g-%s", topic);
    make_topic(bs, topic, RB_PARTS);
    cf_err err;
    cf_producer *p = cf_producer_new(bs, NULL, 0, &err);
    assert_non_null(p);
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, topic);
    for (int i = 0; i < RB_N; i++) {
        char v[16];
        int vn = snprintf(v, sizeof v, "%d", i);
        m->partition = i % RB_PARTS;
        cf_msg_set_value(m, v, (size_t)vn);
        assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_OK);
    }
    assert_int_equal(cf_producer_flush(p, 60000, &err), CF_OK);

    int *seen = calloc(RB_N, sizeof *seen);
    member a = {.name = "a"}, b = {.name = "b"};
    for (int i = 0; i < RB_PARTS; i++) a.next[i] = b.next[i] = -1;
    const char *topics[] = {topic};
    a.c = cf_consumer_new(bs, group, NULL, 0, &err);
    assert_non_null(a.c);
    cf_consumer_set_rebalance_cb(a.c, on_rebalance, &a);
    assert_int_equal(cf_consumer_subscribe(a.c, topics, 1, &err), CF_OK);
    /* a alone: all partitions, read about a quarter of the records */
    int total = 0;
    int64_t end = kt_now_ms() + 60000;
    while (total < RB_N / 4 && kt_now_ms() < end) total += poll_one(&a, seen, 200);
    assert_int_equal(count_assigned(&a), RB_PARTS);
    assert_true(total >= RB_N / 4);

    /* b joins: a must be told what it loses before it loses it */
    b.c = cf_consumer_new(bs, group, NULL, 0, &err);
    assert_non_null(b.c);
    cf_consumer_set_rebalance_cb(b.c, on_rebalance, &b);
    assert_int_equal(cf_consumer_subscribe(b.c, topics, 1, &err), CF_OK);
    end = kt_now_ms() + 120000;
    while (kt_now_ms() < end &&
           !(a.n_revoked_calls > 0 && count_assigned(&b) > 0 &&
             count_assigned(&a) + count_assigned(&b) == RB_PARTS)) {
        total += poll_one(&a, seen, 100);
        total += poll_one(&b, seen, 100);
    }
    assert_true(a.n_revoked_calls > 0);
    assert_true(a.n_revoked_parts > 0);
    assert_int_equal(a.commit_failures, 0);
    assert_true(count_assigned(&b) > 0);
    assert_true(count_assigned(&a) > 0);
    for (int i = 0; i < RB_PARTS; i++) assert_int_equal(a.assigned[i] + b.assigned[i], 1);

    /* the rest, from both: nothing lost, nothing twice (b resumed from a's commits) */
    end = kt_now_ms() + 120000;
    while (total < RB_N && kt_now_ms() < end) {
        total += poll_one(&a, seen, 100);
        total += poll_one(&b, seen, 100);
    }
    for (int i = 0; i < RB_N; i++)
        if (seen[i] != 1) fail_msg("record %d consumed %d times", i, seen[i]);
    assert_int_equal(total, RB_N);

    /* closing a hands its partitions over: the hook reports them revoked */
    int before = a.n_revoked_calls;
    assert_int_equal(cf_consumer_close(a.c, &err), CF_OK);
    assert_true(a.n_revoked_calls > before);
    cf_consumer_destroy(a.c);
    cf_consumer_destroy(b.c);
    free(seen);
    cf_msg_destroy(m);
    cf_producer_destroy(p);
}

/* ------------------------------------------------------------ broker restart */

static void run_cmd(const char *what, const char *cmd) {
    int64_t t0 = kt_now_ms();
    int rc = system(cmd);
    fprintf(stderr, "[%s] `%s` -> %d in %lld ms\n", what, cmd, rc, (long long)(kt_now_ms() - t0));
    if (rc != 0) fail_msg("%s failed: %s (exit %d)", what, cmd, rc);
}

/* The restart test stops a broker for tens of seconds. So that other tests
 * running in parallel on the shared broker (CF_TEST_KAFKA) are not hit, it
 * starts a PRIVATE broker with scripts/servers (CF_TEST_SERVERS): its own
 * run directory and ports (300 above the shared servers' offset,
 * CF_SERVERS_PORT_OFFSET: 127.0.0.1:19392 for the default instance, so a
 * second suite on the same machine gets its own), same jars and recipe,
 * and stops it with `stop kafka` / `start kafka` (data kept), the same
 * commands as CF_TEST_KAFKA_STOP/START. */
enum { PRIV_OFFSET = 300 };
static int priv_offset(void) {
    const char *o = getenv("CF_SERVERS_PORT_OFFSET");
    return PRIV_OFFSET + (o && *o ? atoi(o) : 0);
}
static char priv_prefix[1024], priv_bs[64], priv_dir[256];

static int teardown_private(void **state) {
    (void)state;
    if (priv_prefix[0]) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "%s stop >/dev/null 2>&1; rm -rf '%s'", priv_prefix, priv_dir);
        if (system(cmd) != 0) fprintf(stderr, "teardown of the private broker failed: %s\n", cmd);
        priv_prefix[0] = 0;
    }
    return 0;
}

static void test_it_broker_restart_no_loss(void **state) {
    (void)state;
    it_need_env("CF_TEST_KAFKA"); /* the shared servers must be up: same cache, same recipe */
    const char *servers = it_need_env("CF_TEST_SERVERS");
    snprintf(priv_dir, sizeof priv_dir, "/tmp/cf-it-kafka-restart-%d", (int)getpid());
    snprintf(priv_prefix, sizeof priv_prefix, "CF_SERVERS_DIR='%s' CF_SERVERS_PORT_OFFSET=%d '%s'",
             priv_dir, priv_offset(), servers);
    snprintf(priv_bs, sizeof priv_bs, "127.0.0.1:%d", 19092 + priv_offset());
    char cmd_start[1200], cmd_stop[1200];
    snprintf(cmd_start, sizeof cmd_start, "%s start kafka", priv_prefix);
    snprintf(cmd_stop, sizeof cmd_stop, "%s stop kafka", priv_prefix);
    run_cmd("start private broker", cmd_start);
    const char *bs = priv_bs;
    char topic[128];
    kt_unique_topic(topic, sizeof topic, "it-restart");
    make_topic(bs, topic, 2);
    cf_err err;
    /* retries must outlast the restart: message.timeout.ms well above it */
    const char *pkv[] = {"message.timeout.ms", "600000"};
    cf_producer *p = cf_producer_new(bs, pkv, 1, &err);
    assert_non_null(p);
    cf_consumer *c = cf_consumer_new(bs, topic, NULL, 0, &err);
    assert_non_null(c);
    const char *topics[] = {topic};
    assert_int_equal(cf_consumer_subscribe(c, topics, 1, &err), CF_OK);

    enum { N = 6000, STOP_AT = 2000, START_AT = 4000 };
    int *seen = calloc(N, sizeof *seen);
    cf_msg *m = cf_msg_new(), *in = cf_msg_new();
    cf_msg_set_topic(m, topic);
    int consumed = 0, consumed_after_restart = 0, consumed_before_stop = 0, distinct = 0;
    int64_t next[2] = {-1, -1};
    int restarted = 0;
    for (int i = 0; i < N; i++) {
        if (i == STOP_AT) {
            /* let some reach the consumer first */
            assert_int_equal(cf_producer_flush(p, 60000, &err), CF_OK);
            int64_t end0 = kt_now_ms() + 60000;
            while (consumed < STOP_AT / 2 && kt_now_ms() < end0)
                if (cf_consumer_poll(c, 200, in, &err) == CF_OK) {
                    if (seen[atoi(in->value)]++ == 0) distinct++;
                    consumed++;
                    next[in->partition] = in->offset + 1;
                }
            consumed_before_stop = consumed;
            /* a sink commits what it processed; without this the group
             * would re-read from the start after the restart (at least once) */
            cf_topic_partition tp[2];
            size_t ntp = 0;
            for (int pt = 0; pt < 2; pt++)
                if (next[pt] >= 0) tp[ntp++] = (cf_topic_partition){topic, pt, next[pt]};
            assert_int_equal(cf_consumer_commit(c, tp, ntp, false, &err), CF_OK);
            run_cmd("stop broker", cmd_stop);
        }
        if (i == START_AT) {
            run_cmd("start broker", cmd_start);
            restarted = 1;
        }
        char v[16];
        int vn = snprintf(v, sizeof v, "%d", i);
        cf_msg_set_value(m, v, (size_t)vn);
        cf_code src = cf_producer_send(p, m, NULL, NULL, &err);
        if (src) fail_msg("send %d: %s: %s (%s)", i, err.message, err.detail, err.where);
        if (i < STOP_AT && cf_consumer_poll(c, 0, in, &err) == CF_OK) {
            if (seen[atoi(in->value)]++ == 0) distinct++;
            consumed++;
            next[in->partition] = in->offset + 1;
        }
    }
    cf_code frc = cf_producer_flush(p, 180000, &err);
    if (frc) fail_msg("flush after restart: %s: %s (%s)", err.message, err.detail, err.hint);
    assert_int_equal(cf_producer_acked_seq(p), N);
    assert_int_equal(cf_producer_failed_count(p), 0);
    assert_true(restarted);

    int64_t end = kt_now_ms() + 180000;
    while (distinct < N && kt_now_ms() < end) {
        cf_code rc = cf_consumer_poll(c, 200, in, &err);
        if (rc == CF_OK) {
            int v = atoi(in->value);
            assert_true(v >= 0 && v < N);
            if (seen[v]++ == 0) distinct++;
            consumed++;
            consumed_after_restart++;
        }
    }
    int missing = 0;
    for (int i = 0; i < N; i++) missing += seen[i] == 0;
    int twice = 0;
    for (int i = 0; i < N; i++) twice += seen[i] > 1;
    fprintf(stderr, "restart: consumed %d (%d before the stop, %d after the restart), %d missing, "
            "%d read twice (at-least-once after the last commit)\n",
            consumed, consumed_before_stop, consumed_after_restart, missing, twice);
    assert_int_equal(missing, 0);
    assert_true(consumed_before_stop > 0);
    assert_true(consumed_after_restart > 0);

    /* the log itself: each record exactly once (idempotent producer) */
    char g[160];
    snprintf(g, sizeof g, "audit-%s", topic);
    cf_consumer *c2 = cf_consumer_new(bs, g, NULL, 0, &err);
    assert_non_null(c2);
    assert_int_equal(cf_consumer_subscribe(c2, topics, 1, &err), CF_OK);
    cf_msg **all = calloc(N + 100, sizeof *all);
    size_t n = kt_consume(c2, all, N + 100, 30000); /* waits the full time for extras */
    int *count = calloc(N, sizeof *count);
    for (size_t i = 0; i < n; i++) {
        count[atoi(all[i]->value)]++;
        cf_msg_destroy(all[i]);
    }
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++)
        if (count[i] != 1) fail_msg("record %d is %d times in the log", i, count[i]);
    free(count);
    free(all);
    cf_consumer_destroy(c2);
    free(seen);
    cf_msg_destroy(m);
    cf_msg_destroy(in);
    cf_consumer_destroy(c);
    cf_producer_destroy(p);
}

/* ------------------------------------------------------------ kcat */

static void test_it_kcat_reads_back(void **state) {
    (void)state;
    const char *bs = it_need_env("CF_TEST_KAFKA");
    char topic[128];
    kt_unique_topic(topic, sizeof topic, "it-kcat");
    make_topic(bs, topic, 1);
    cf_err err;
    cf_producer *p = cf_producer_new(bs, NULL, 0, &err);
    assert_non_null(p);
    /* the UTF-8 shapes: 0 headers, 1 null key, 2 tombstone, 3 empty, 5 both null */
    const int shapes[] = {0, 1, 2, 3, 5};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        cf_msg *m = kt_shape(topic, shapes[i]);
        assert_int_equal(cf_producer_send(p, m, NULL, NULL, &err), CF_OK);
        cf_msg_destroy(m);
    }
    assert_int_equal(cf_producer_flush(p, 30000, &err), CF_OK);
    cf_producer_destroy(p);

    char cmd[512];
    snprintf(cmd, sizeof cmd, "kcat -C -J -b '%s' -t '%s' -o beginning -e -q 2>&1", bs, topic);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[8192];
    json_t *rows[8];
    size_t n = 0;
    while (n < 8 && fgets(line, sizeof line, f)) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        if (!j) fail_msg("kcat printed a line that is not JSON: %s", line);
        rows[n++] = j;
    }
    assert_int_equal(pclose(f), 0);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        json_t *r = rows[i];
        cf_msg *w = kt_shape(topic, shapes[i]);
        assert_string_equal(json_string_value(json_object_get(r, "topic")), topic);
        assert_int_equal(json_integer_value(json_object_get(r, "offset")), (json_int_t)i);
        assert_string_equal(json_string_value(json_object_get(r, "tstype")), "create");
        assert_int_equal(json_integer_value(json_object_get(r, "ts")), w->timestamp);
        json_t *key = json_object_get(r, "key"), *val = json_object_get(r, "payload");
        if (w->key) assert_string_equal(json_string_value(key), w->key);
        else assert_true(json_is_null(key));
        if (w->value) assert_string_equal(json_string_value(val), w->value);
        else assert_true(json_is_null(val));
        if (w->n_headers) {
            /* kcat -J: "headers": [name, value, name, value, ...] in order */
            json_t *h = json_object_get(r, "headers");
            assert_true(json_is_array(h));
            assert_int_equal(json_array_size(h), 2 * w->n_headers);
            for (size_t k = 0; k < w->n_headers; k++) {
                assert_string_equal(json_string_value(json_array_get(h, 2 * k)), w->headers[k].key);
                json_t *hv = json_array_get(h, 2 * k + 1);
                if (w->headers[k].value) assert_string_equal(json_string_value(hv), w->headers[k].value);
                else assert_true(json_is_null(hv));
            }
        }
        cf_msg_destroy(w);
        json_decref(r);
    }
}

int main(void) {
    cf_log_setup(CF_LOG_ERROR, CF_LOG_TEXT, NULL);
    srand((unsigned)kt_now_ms());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_it_produce_consume_n),
        cmocka_unit_test(test_it_kcat_reads_back),
        cmocka_unit_test(test_it_rebalance_two_consumers),
        cmocka_unit_test_teardown(test_it_broker_restart_no_loss, teardown_private),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
