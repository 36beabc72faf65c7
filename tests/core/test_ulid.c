/*
 * test_ulid.c - ULIDs against the spec (github.com/ulid/spec README):
 * layout, Crockford alphabet, the maximum value, monotonic increments,
 * overflow failure, and known encodings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/ulid.h"

/* The spec's maximum: all 128 bits set encodes as 7ZZZZZZZZZZZZZZZZZZZZZZZZZ. */
static void test_max_and_zero(void **state) {
    (void)state;
    cf_ulid u;
    memset(u.b, 0xff, 16);
    char s[27];
    cf_ulid_encode(&u, s);
    assert_string_equal(s, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
    memset(u.b, 0, 16);
    cf_ulid_encode(&u, s);
    assert_string_equal(s, "00000000000000000000000000");
    cf_err err;
    assert_int_equal(cf_ulid_decode("80000000000000000000000000", &u, &err), CF_ERR_INVALID);
    assert_int_equal(cf_ulid_decode("0000000000000000000000000U", &u, &err), CF_ERR_INVALID);
    assert_int_equal(cf_ulid_decode("short", &u, &err), CF_ERR_INVALID);
}

/* The spec's example 01ARYZ6S41TSV4RRFFQ69G5FAV (the ulid JavaScript
 * reference tests: decodeTime) is
 * 1469918176385 ms. */
static void test_known_time(void **state) {
    (void)state;
    cf_ulid u;
    assert_int_equal(cf_ulid_decode("01ARYZ6S41TSV4RRFFQ69G5FAV", &u, NULL), CF_OK);
    assert_int_equal(cf_ulid_time_ms(&u), 1469918176385LL);
    char s[27];
    cf_ulid_encode(&u, s);
    assert_string_equal(s, "01ARYZ6S41TSV4RRFFQ69G5FAV");
    /* case-insensitive */
    cf_ulid v;
    assert_int_equal(cf_ulid_decode("01aryz6s41tsv4rrffq69g5fav", &v, NULL), CF_OK);
    assert_int_equal(cf_ulid_compare(&u, &v), 0);
}

static void test_monotonic(void **state) {
    (void)state;
    cf_ulid_gen *g = cf_ulid_gen_new();
    cf_ulid prev, cur;
    assert_int_equal(cf_ulid_next(g, 1000, &prev, NULL), CF_OK);
    assert_int_equal(cf_ulid_time_ms(&prev), 1000);
    for (int i = 0; i < 10000; i++) {
        assert_int_equal(cf_ulid_next(g, 1000, &cur, NULL), CF_OK);
        assert_true(cf_ulid_compare(&prev, &cur) < 0);
        char a[27], b[27];
        cf_ulid_encode(&prev, a);
        cf_ulid_encode(&cur, b);
        assert_true(strcmp(a, b) < 0); /* text sorts like binary */
        prev = cur;
    }
    /* clock going backwards keeps order */
    assert_int_equal(cf_ulid_next(g, 999, &cur, NULL), CF_OK);
    assert_true(cf_ulid_compare(&prev, &cur) < 0);
    /* overflow of the random part within one ms fails */
    cf_ulid top;
    memset(top.b, 0xff, 16);
    top.b[0] = 0, top.b[1] = 0, top.b[2] = 0, top.b[3] = 0, top.b[4] = 0x07, top.b[5] = 0xd0; /* 2000 ms */
    cf_ulid_gen_seed_last(g, &top);
    cf_err err;
    assert_int_equal(cf_ulid_next(g, 2000, &cur, &err), CF_ERR_AGAIN);
    assert_int_equal(cf_ulid_next(g, 2001, &cur, &err), CF_OK);
    cf_ulid_gen_destroy(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_and_zero),
        cmocka_unit_test(test_known_time),
        cmocka_unit_test(test_monotonic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
