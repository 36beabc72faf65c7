/*
 * test_crc32.c - the entry CRC of the commit log reader (src/cassandra/
 * crc32_fast.h) against zlib's crc32(), the function Cassandra's
 * java.util.zip.CRC32 matches: both ways (table, carry-less multiply where
 * the CPU has it), every length 0..3000, every alignment mod 16, chained
 * calls with a non-zero start, and the fold and reduction constants
 * recomputed (x^k mod P, floor(x^64 / P)).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <zlib.h>

#include "../../src/cassandra/crc32_fast.h"

static uint8_t *random_bytes(size_t n) {
    uint8_t *p = malloc(n);
    uint32_t x = 2463534242u; /* xorshift32: fixed, reproducible bytes */
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
    return p;
}

static void test_table_equals_zlib(void **state) {
    (void)state;
    uint8_t *buf = random_bytes(3000 + 16);
    for (size_t len = 0; len <= 3000; len++)
        for (size_t al = 0; al < 16; al++) {
            uint32_t start = (uint32_t)(len * 2654435761u + al);
            assert_int_equal(cf_cass_crc32_table(start, buf + al, len),
                             (uint32_t)crc32(start, buf + al, (uInt)len));
        }
    free(buf);
}

static void test_clmul_equals_zlib(void **state) {
    (void)state;
#ifdef CF_CASS_CRC32_HAVE_CLMUL
    if (!cf_cass_crc32_clmul_usable()) {
        print_message("no PCLMULQDQ on this CPU: the table path is the one used\n");
        return;
    }
    uint8_t *buf = random_bytes(3000 + 16);
    for (size_t len = 0; len <= 3000; len++)
        for (size_t al = 0; al < 16; al++) {
            uint32_t start = (uint32_t)(len * 2654435761u + al);
            assert_int_equal(cf_cass_crc32_clmul(start, buf + al, len),
                             (uint32_t)crc32(start, buf + al, (uInt)len));
        }
    /* chained as the reader does: the 4 size bytes, then the mutation */
    uint32_t c = cf_cass_crc32_clmul(0, buf, 4);
    c = cf_cass_crc32_clmul(c, buf + 8, 2000);
    uLong z = crc32(0L, buf, 4);
    z = crc32(z, buf + 8, 2000);
    assert_int_equal(c, (uint32_t)z);
    /* all-zero and all-one data (no help from random bits) */
    uint8_t zeros[1024] = {0}, ones[1024];
    memset(ones, 0xff, sizeof ones);
    assert_int_equal(cf_cass_crc32_clmul(0, zeros, sizeof zeros), (uint32_t)crc32(0L, zeros, sizeof zeros));
    assert_int_equal(cf_cass_crc32_clmul(0, ones, sizeof ones), (uint32_t)crc32(0L, ones, sizeof ones));
    free(buf);
#endif
}

/* x^k mod P, bit-reflected over 33 bits: the constants of the fold. */
static uint64_t xpow_reflected(unsigned k) {
    uint64_t r = 1;
    for (unsigned i = 0; i < k; i++) {
        r <<= 1;
        if (r >> 32 & 1) r ^= 0x104C11DB7ull;
    }
    uint64_t out = 0;
    for (int b = 0; b < 33; b++)
        if (r >> b & 1) out |= 1ull << (32 - b);
    return out;
}

static void test_fold_constants(void **state) {
    (void)state;
    assert_true(xpow_reflected(4 * 128 + 32) == CF_CASS_CRC32_K1);
    assert_true(xpow_reflected(4 * 128 - 32) == CF_CASS_CRC32_K2);
    assert_true(xpow_reflected(128 + 32) == CF_CASS_CRC32_K3);
    assert_true(xpow_reflected(128 - 32) == CF_CASS_CRC32_K4);
    /* the final reduction: 32-bit residues in the high half of a lane */
    assert_true(xpow_reflected(95) << 31 == CF_CASS_CRC32_KF1);
    assert_true(xpow_reflected(63) << 31 == CF_CASS_CRC32_KF2);
    /* P and mu = floor(x^64 / P), bit-reflected over 33 bits */
    uint64_t rem = 0, mu = 0; /* long division of x^64 by P, bit by bit */
    for (int i = 64; i >= 0; i--) {
        rem = rem << 1 | (i == 64);
        mu <<= 1;
        if (rem >> 32 & 1) {
            rem ^= 0x104C11DB7ull;
            mu |= 1;
        }
    }
    uint64_t mu_r = 0, p_r = 0;
    for (int b = 0; b < 33; b++) {
        if (mu >> b & 1) mu_r |= 1ull << (32 - b);
        if (0x104C11DB7ull >> b & 1) p_r |= 1ull << (32 - b);
    }
    assert_true(mu_r == CF_CASS_CRC32_MU);
    assert_true(p_r == CF_CASS_CRC32_P);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_equals_zlib),
        cmocka_unit_test(test_clmul_equals_zlib),
        cmocka_unit_test(test_fold_constants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
