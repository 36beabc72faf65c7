/*
 * test_recordfile_kcat.c - the real kcat is the oracle for record files.
 *
 * Messages with every shape (headers with null values, null key, tombstone,
 * empty key/value, control characters, non-ASCII, bytes that are not UTF-8,
 * both timestamp types are not producible, so CreateTime) are produced with
 * librdkafka to a broker, consumed with `kcat -C -J -e`, and then:
 *   - our reader must read kcat's lines back to exactly the produced
 *     messages (kcat's raw non-UTF-8 bytes included);
 *   - for UTF-8 messages our writer must produce kcat's line byte for byte
 *     (with "broker" normalised: kcat prints the real broker id, we -1).
 * The broker is librdkafka's mock cluster (in this process, real TCP
 * listeners kcat connects to); test_it_recordfile_kcat.c runs the same
 * against the real Kafka of scripts/servers (CF_TEST_KAFKA).
 * kcat is installed by scripts/bootstrap; without it this test fails.
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

#include "cdcflow/recordfile.h"

typedef struct tmsg {
    const char *key;
    size_t key_len;
    const char *val;
    size_t val_len;
    int n_hdr;
    const char *hk[2], *hv[2];
    size_t hv_len[2];
    bool utf8; /* our writer's line must equal kcat's */
} tmsg;

#define S(x) x, sizeof(x) - 1
static const tmsg msgs[] = {
    {S("k0"), S("hello"), 2, {"h1", "h2"}, {"v1", NULL}, {2, 0}, true},
    {NULL, 0, S("no key"), 0, {0}, {0}, {0}, true},
    {S("k2"), NULL, 0, 0, {0}, {0}, {0}, true},
    {S(""), S(""), 1, {"empty"}, {""}, {0}, true},
    {S("esc"), S("a\"b\\c/d\te\nf\r\b\f\x01\x1f\x7f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), 0, {0}, {0}, {0}, true},
    {S("nul"), S("x\0y"), 0, {0}, {0}, {0}, true},
    {S("\xc3\x28"), S("\xff\xfe\x00\x01"), 1, {"bin"}, {"\x80"}, {1}, false},
};
#define N_MSGS (sizeof msgs / sizeof msgs[0])

#ifndef CF_KCAT_REAL_BROKER
#define CF_KCAT_REAL_BROKER 0
#endif

static void produce(const char *bootstrap, const char *topic, int64_t ts) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_conf_set(conf, "linger.ms", "0", errstr, sizeof errstr);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    assert_non_null(p);
    for (size_t i = 0; i < N_MSGS; i++) {
        const tmsg *t = &msgs[i];
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        for (int k = 0; k < t->n_hdr; k++)
            rd_kafka_header_add(h, t->hk[k], -1, t->hv[k], t->hv[k] ? (ssize_t)t->hv_len[k] : 0);
        rd_kafka_resp_err_t e = rd_kafka_producev(
            p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY((void *)t->key, t->key_len),
            RD_KAFKA_V_VALUE((void *)t->val, t->val_len), RD_KAFKA_V_TIMESTAMP(ts + (int64_t)i),
            RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (e) fail_msg("produce: %s", rd_kafka_err2str(e));
    }
    if (rd_kafka_flush(p, 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) fail_msg("flush timed out");
    rd_kafka_destroy(p);
}

/* Replace "broker":<n> with "broker":-1 in place (kcat prints the real id). */
static void normalise_broker(char *line) {
    char *b = strstr(line, ",\"broker\":");
    if (!b) return;
    char *num = b + 10, *end = num;
    if (*end == '-') end++;
    while (*end >= '0' && *end <= '9') end++;
    char rest[1 << 16];
    snprintf(rest, sizeof rest, "%s", end);
    sprintf(num, "-1%s", rest);
}

static void run_against(const char *bootstrap) {
    char topic[64];
    snprintf(topic, sizeof topic, "cf_kcat_%d_%ld", (int)getpid(), (long)time(NULL));
    int64_t ts = 1700000000000;
    produce(bootstrap, topic, ts);

    char out[256], cmd[1024];
    snprintf(out, sizeof out, "%s/cf_kcat_%d.jsonl", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    snprintf(cmd, sizeof cmd, "timeout 120 kcat -b '%s' -C -t '%s' -p 0 -o beginning -e -q -J > '%s'", bootstrap,
             topic, out);
    int rc = system(cmd);
    if (rc != 0) fail_msg("kcat failed (exit %d): %s  -- is kcat installed (scripts/bootstrap)?", rc, cmd);

    cf_recordfile_reader *r;
    cf_err err;
    assert_int_equal(cf_recordfile_reader_open(out, &r, &err), CF_OK);
    FILE *raw = fopen(out, "rb");
    assert_non_null(raw);
    cf_msg *m = cf_msg_new();
    char *line = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < N_MSGS; i++) {
        const tmsg *t = &msgs[i];
        if (cf_recordfile_read(r, m, &err) != CF_OK) fail_msg("reading kcat line %zu: %s %s %s", i + 1, err.message, err.detail, err.where);
        ssize_t n = getline(&line, &cap, raw);
        assert_true(n > 0);
        assert_string_equal(m->topic, topic);
        assert_int_equal(m->partition, 0);
        assert_int_equal(m->offset, (int64_t)i);
        assert_int_equal(m->ts_type, CF_TS_CREATE);
        assert_int_equal(m->timestamp, ts + (int64_t)i);
        assert_int_equal(m->key == NULL, t->key == NULL);
        if (t->key) {
            assert_int_equal(m->key_len, t->key_len);
            assert_memory_equal(m->key, t->key, t->key_len);
        }
        assert_int_equal(m->value == NULL, t->val == NULL);
        if (t->val) {
            assert_int_equal(m->value_len, t->val_len);
            assert_memory_equal(m->value, t->val, t->val_len);
        }
        assert_int_equal(m->n_headers, (size_t)t->n_hdr);
        for (int k = 0; k < t->n_hdr; k++) {
            assert_string_equal(m->headers[k].key, t->hk[k]);
            assert_int_equal(m->headers[k].value == NULL, t->hv[k] == NULL);
            if (t->hv[k]) assert_memory_equal(m->headers[k].value, t->hv[k], t->hv_len[k]);
        }
        if (t->utf8) {
            cf_buf b = CF_BUF_INIT;
            cf_recordfile_format(m, &b);
            normalise_broker(line);
            if (strcmp(b.data, line) != 0) fail_msg("line %zu differs:\nkcat: %sours: %s", i + 1, line, b.data);
            cf_buf_free(&b);
        }
    }
    assert_int_equal(cf_recordfile_read(r, m, &err), CF_ERR_EOF);
    free(line);
    fclose(raw);
    cf_recordfile_reader_close(r);
    cf_msg_destroy(m);
    if (!getenv("CFKEEP")) unlink(out);
}

static void test_kcat_round_trip(void **state) {
    (void)state;
#if CF_KCAT_REAL_BROKER
    const char *bootstrap = getenv("CF_TEST_KAFKA");
    if (!bootstrap || !*bootstrap) fail_msg("CF_TEST_KAFKA is not set: start the servers (scripts/servers start kafka)");
    run_against(bootstrap);
#else
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    assert_non_null(owner);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(owner, 1);
    assert_non_null(mc);
    run_against(rd_kafka_mock_cluster_bootstraps(mc));
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(owner);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kcat_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
