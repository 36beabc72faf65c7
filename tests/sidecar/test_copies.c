/*
 * test_copies.c - the copy cache (src/sidecar/copies.c): a later entry takes
 * an earlier one's results only when its bytes are the same (same CRC, length
 * and messaging version, and memcmp), never on a CRC match alone; the oldest
 * entries leave first when the entry or byte bound is reached; clear forgets
 * all. The engine's use of it is checked in test_engine.c (the events of three
 * replicas equal one replica's, with two of three copies taken from the cache).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/sidecar.h"
#include "../../src/sidecar/sidecar_internal.h"

static cf_sc_copy_update upd(int64_t token) {
    cf_sc_copy_update u = {.max_ts = token * 10, .token = token, .tc = 1, .digested = true};
    memset(u.dg, (int)(token & 0xff), sizeof u.dg);
    return u;
}

static void test_equal_bytes_only(void **state) {
    (void)state;
    cf_sc_copies *c = cf_sc_copies_new();
    uint8_t a[200], b[200];
    for (int i = 0; i < 200; i++) a[i] = b[i] = (uint8_t)i;
    b[199] ^= 1; /* same length, same CRC given on purpose: only memcmp tells */
    cf_sc_copy_update u[2] = {upd(7), upd(8)};
    cf_sc_copies_put(c, 0x1234, 12, a, sizeof a, u, 2);
    size_t n = 0;
    const cf_sc_copy_update *got = cf_sc_copies_find(c, 0x1234, 12, a, sizeof a, &n);
    assert_non_null(got);
    assert_int_equal(n, 2);
    assert_int_equal(got[0].token, 7);
    assert_int_equal(got[1].max_ts, 80);
    assert_memory_equal(got[1].dg, u[1].dg, 16);
    assert_null(cf_sc_copies_find(c, 0x1234, 12, b, sizeof b, &n));   /* other bytes */
    assert_null(cf_sc_copies_find(c, 0x1234, 11, a, sizeof a, &n));   /* other messaging version */
    assert_null(cf_sc_copies_find(c, 0x1235, 12, a, sizeof a, &n));   /* other CRC */
    assert_null(cf_sc_copies_find(c, 0x1234, 12, a, sizeof a - 1, &n)); /* other length */
    cf_sc_copies_clear(c);
    assert_null(cf_sc_copies_find(c, 0x1234, 12, a, sizeof a, &n));
    assert_int_equal(cf_sc_copies_bytes(c), 0);
    /* release (an idle engine): nothing found, and it works again after */
    cf_sc_copies_put(c, 0x1234, 12, a, sizeof a, u, 2);
    cf_sc_copies_release(c);
    assert_null(cf_sc_copies_find(c, 0x1234, 12, a, sizeof a, &n));
    assert_int_equal(cf_sc_copies_bytes(c), 0);
    cf_sc_copies_put(c, 0x1234, 12, a, sizeof a, u, 1);
    assert_non_null(cf_sc_copies_find(c, 0x1234, 12, a, sizeof a, &n));
    assert_int_equal(n, 1);
    cf_sc_copies_destroy(c);
}

/* More entries than the cache holds: the newest are found, the oldest not,
 * and what it holds stays within its byte bound. */
static void test_bounds(void **state) {
    (void)state;
    cf_sc_copies *c = cf_sc_copies_new();
    enum { N = 20000 };
    uint8_t e[64];
    for (uint32_t i = 0; i < N; i++) {
        memset(e, 0, sizeof e);
        memcpy(e, &i, sizeof i);
        cf_sc_copy_update u = upd(i);
        cf_sc_copies_put(c, i * 2654435761u, 12, e, sizeof e, &u, 1);
    }
    size_t n;
    uint32_t i = N - 1;
    memset(e, 0, sizeof e);
    memcpy(e, &i, sizeof i);
    const cf_sc_copy_update *got = cf_sc_copies_find(c, i * 2654435761u, 12, e, sizeof e, &n);
    assert_non_null(got);
    assert_int_equal(got->token, N - 1);
    i = 0;
    memset(e, 0, sizeof e);
    memcpy(e, &i, sizeof i);
    assert_null(cf_sc_copies_find(c, 0, 12, e, sizeof e, &n));
    /* big entries: the byte bound pushes the old ones out */
    size_t big = 400000;
    uint8_t *p = calloc(1, big);
    for (uint32_t k = 0; k < 40; k++) {
        memcpy(p, &k, sizeof k);
        cf_sc_copy_update u = upd(k);
        cf_sc_copies_put(c, k, 12, p, big, &u, 1);
        assert_true(cf_sc_copies_bytes(c) <= (4u << 20));
    }
    uint32_t k = 39;
    memcpy(p, &k, sizeof k);
    assert_non_null(cf_sc_copies_find(c, 39, 12, p, big, &n));
    k = 0;
    memcpy(p, &k, sizeof k);
    assert_null(cf_sc_copies_find(c, 0, 12, p, big, &n));
    free(p);
    cf_sc_copies_destroy(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_bytes_only),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
