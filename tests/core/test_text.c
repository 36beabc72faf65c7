/*
 * test_text.c - base64 (src/core/text.c) against RFC 4648's test vectors
 * (section 10) and, for every byte value in every position of a 3-byte
 * group, against a decode by the alphabet of section 4.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/buf.h"
#include "cdcflow/text.h"

static void test_rfc4648_vectors(void **state) {
    (void)state;
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        cf_buf b = CF_BUF_INIT;
        cf_buf_append_str(&b, "x"); /* appends after what the buffer holds */
        cf_base64_encode(&b, (const uint8_t *)in[i], strlen(in[i]));
        assert_int_equal(b.len, 1 + strlen(out[i]));
        assert_string_equal(b.data + 1, out[i]);
        cf_buf_free(&b);
    }
}

static void test_every_byte(void **state) {
    (void)state;
    uint8_t raw[3 * 256 * 3];
    size_t n = 0;
    for (int pos = 0; pos < 3; pos++)
        for (int v = 0; v < 256; v++)
            for (int k = 0; k < 3; k++) raw[n++] = (uint8_t)(k == pos ? v : (v * 7 + k) & 0xff);
    cf_buf b = CF_BUF_INIT;
    cf_base64_encode(&b, raw, n);
    assert_int_equal(b.len, n / 3 * 4);
    for (size_t g = 0; g < n / 3; g++) {
        uint32_t v = 0;
        for (int c = 0; c < 4; c++) {
            int d = cf_base64_digit((unsigned char)b.data[4 * g + c]);
            assert_true(d >= 0);
            v = v << 6 | (uint32_t)d;
        }
        assert_int_equal(v >> 16, raw[3 * g]);
        assert_int_equal((v >> 8) & 255, raw[3 * g + 1]);
        assert_int_equal(v & 255, raw[3 * g + 2]);
    }
    cf_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_vectors),
        cmocka_unit_test(test_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
