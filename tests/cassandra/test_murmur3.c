/*
 * test_murmur3.c - Murmur3Partitioner tokens. Expected tokens come from
 * Cassandra itself: Murmur3Partitioner.instance.getToken() of cassandra-all
 * 5.0.5 (scripts/cassandra-oracle/Oracle.java prints them), and from
 * `SELECT token(k)` on a live Cassandra 5.0 node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/cassandra_schema.h"

static int64_t tok_str(const char *s) { return cf_cass_murmur3_token((const uint8_t *)s, strlen(s)); }

static void test_text_keys(void **state) {
    (void)state;
    /* empty key: the partitioner's minimum token */
    assert_true(cf_cass_murmur3_token((const uint8_t *)"", 0) == INT64_MIN);
    assert_true(tok_str("a") == -8839064797231613815LL);
    assert_true(tok_str("abc") == -5434086359492102041LL);
    assert_true(tok_str("hello") == -3758069500696749310LL);
    /* 15, 16 and 17 bytes: tail only, one block, block + tail */
    assert_true(tok_str("123456789012345") == -8615384237594390570LL);
    assert_true(tok_str("1234567890123456") == 5746133278497385720LL);
    assert_true(tok_str("12345678901234567") == 8396424490441422718LL);
}

static void test_signed_tail_bytes(void **state) {
    (void)state;
    /* bytes >= 0x80 in the tail are sign-extended by Cassandra's variant */
    const uint8_t k[] = {0xff, 0xfe, 0x80};
    assert_true(cf_cass_murmur3_token(k, 3) == 7236304163770186844LL);
}

static void test_int_keys(void **state) {
    (void)state;
    struct { uint8_t b[4]; int64_t tok; } v[] = {
        {{0, 0, 0, 0}, -3485513579396041028LL},
        {{0, 0, 0, 1}, -4069959284402364209LL},
        {{0xff, 0xff, 0xff, 0xff}, 7297452126230313552LL},
        {{0, 0, 0, 0x2a}, -7160136740246525330LL},
        {{0x7f, 0xff, 0xff, 0xff}, -765994672030311617LL},
        {{0x80, 0, 0, 0}, -420533958509279465LL},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) assert_true(cf_cass_murmur3_token(v[i].b, 4) == v[i].tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_keys),
        cmocka_unit_test(test_signed_tail_bytes),
        cmocka_unit_test(test_int_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
