/*
 * seg_bytes.h - helpers of the tests that read segment files whole and
 * write changed copies (test_segment_errors, test_read_ahead): whole files
 * in and out, big-endian integers, the CRC32 of an int as Cassandra's
 * updateChecksumInt computes it. Include after cmocka.h and zlib.h.
 */
#ifndef CASS_SEG_BYTES_H
#define CASS_SEG_BYTES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)n + 1);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void spit(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}
static uint32_t crc_int(uint32_t c, uint32_t v) {
    uint8_t b[4];
    put32(b, v);
    return (uint32_t)crc32(c, b, 4);
}

#endif
