/*
 * kafka_test_util.h - helpers shared by the Kafka transport tests (the unit
 * tests on the embedded mock cluster and the integration tests on the real
 * broker): messages of every shape Kafka allows and their expected round
 * trip, and a bounded consume loop. Include after cmocka.h.
 *
 * Expected shapes come from Kafka's record format (KIP-82 headers, the
 * record v2 spec): key and value are nullable byte arrays, distinct from
 * empty ones; header values are nullable; header order and duplicate keys
 * are kept; CreateTime timestamps are stored as given.
 */
#ifndef CF_KAFKA_TEST_UTIL_H
#define CF_KAFKA_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcflow/record.h"
#include "cdcflow/transport.h"

#define N_SHAPES 6
#define SHAPE_TS 1700000000123LL

static inline int64_t kt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void kt_unique_topic(char *buf, size_t n, const char *prefix) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, n, "%s-%ld-%ld-%d", prefix, (long)ts.tv_sec, ts.tv_nsec / 1000, rand() % 100000);
}

/* The i-th shape (0..N_SHAPES-1), on partition 0 of topic. */
static inline cf_msg *kt_shape(const char *topic, int i) {
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, topic);
    m->partition = 0;
    m->ts_type = CF_TS_CREATE;
    m->timestamp = SHAPE_TS + i;
    switch (i) {
    case 0: /* plain, with headers: repeated key, null value, empty value */
        cf_msg_set_key(m, "k0", 2);
        cf_msg_set_value(m, "v0", 2);
        cf_msg_add_header(m, "h", "a", 1);
        cf_msg_add_header(m, "hnull", NULL, 0);
        cf_msg_add_header(m, "h", "b", 1);
        cf_msg_add_header(m, "hempty", "", 0);
        break;
    case 1: /* null key */
        cf_msg_set_value(m, "v1", 2);
        break;
    case 2: /* tombstone: key, null value */
        cf_msg_set_key(m, "k2", 2);
        break;
    case 3: /* empty key and empty value: not null */
        cf_msg_set_key(m, "", 0);
        cf_msg_set_value(m, "", 0);
        break;
    case 4: /* binary with NUL and high bytes */
        cf_msg_set_key(m, "\x00\x01\xff", 3);
        cf_msg_set_value(m, "a\x00" "b\xc3\x28", 5);
        cf_msg_add_header(m, "bin", "\x00\xfe", 2);
        break;
    default: /* null key and null value together */
        break;
    }
    return m;
}

static inline void kt_assert_bytes(const char *got, size_t got_len, const char *want, size_t want_len) {
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len ? want_len : 1 /* both "" */);
}

/* got: as consumed; want: as produced. */
static inline void kt_assert_same(const cf_msg *got, const cf_msg *want) {
    assert_string_equal(got->topic, want->topic);
    kt_assert_bytes(got->key, got->key_len, want->key, want->key_len);
    kt_assert_bytes(got->value, got->value_len, want->value, want->value_len);
    assert_int_equal(got->ts_type, CF_TS_CREATE);
    assert_int_equal(got->timestamp, want->timestamp);
    assert_int_equal(got->n_headers, want->n_headers);
    for (size_t i = 0; i < want->n_headers; i++) {
        assert_string_equal(got->headers[i].key, want->headers[i].key);
        kt_assert_bytes(got->headers[i].value, got->headers[i].value_len, want->headers[i].value,
                        want->headers[i].value_len);
    }
}

/* Poll until n messages arrived (stored in out[0..n-1], caller destroys) or
 * timeout_ms passed; returns how many arrived. Extra ones fail the test. */
static inline size_t kt_consume(cf_consumer *c, cf_msg **out, size_t n, int timeout_ms) {
    size_t got = 0;
    int64_t end = kt_now_ms() + timeout_ms;
    cf_msg *m = cf_msg_new();
    while (got < n && kt_now_ms() < end) {
        cf_err err;
        cf_code rc = cf_consumer_poll(c, 200, m, &err);
        if (rc == CF_OK) {
            out[got++] = m;
            m = cf_msg_new();
        } else if (rc == CF_ERR_TRANSPORT) {
            fprintf(stderr, "consumer (retrying): %s %s\n", err.message, err.detail);
        }
    }
    cf_msg_destroy(m);
    return got;
}

#endif
