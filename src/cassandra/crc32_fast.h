/*
 * crc32_fast.h - the CRC-32 of java.util.zip.CRC32 and zlib's crc32()
 * (IEEE 802.3, reflected polynomial 0xEDB88320) for commit log entries.
 *
 * Two ways, same result:
 *   - cf_cass_crc32_table: slicing-by-8 over crc32_slice8.h, any CPU;
 *   - cf_cass_crc32_clmul: x86-64 with PCLMULQDQ, folding 4 x 128 bits per
 *     64 bytes by carry-less multiplication (Intel's "Fast CRC Computation for
 *     Generic Polynomials Using PCLMULQDQ Instruction", 2009), the tail
 *     folded in with byte shuffles, and a Barrett reduction to 32 bits.
 * Why not zlib's crc32(): Debian's zlib (1.2.13) has no carry-less multiply
 * path and pays a setup cost per call that dominates on entries of a few
 * hundred bytes (about 0.95 GB/s on 230 bytes, 3.2 GB/s on 64 KiB, against
 * 5.7 and 10.5 GB/s here on the same machine, 2026-11-30). Both functions are checked
 * against zlib for every length up to 3000 and every alignment in
 * tests/cassandra/test_crc32.c.
 *
 * Included by segment.c and that test only.
 */
#ifndef CF_CASS_CRC32_FAST_H
#define CF_CASS_CRC32_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crc32_slice8.h"

/* The raw register (no pre/post inversion) advanced over n bytes. */
static inline uint32_t cf_cass_crc32_raw(uint32_t c, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4); /* little-endian loads: this file is for x86-64 and */
        memcpy(&hi, p + 4, 4); /* other little-endian CPUs, see the check below */
        lo ^= c;
        c = cf_cass_crc_tab[7][lo & 0xff] ^ cf_cass_crc_tab[6][(lo >> 8) & 0xff] ^
            cf_cass_crc_tab[5][(lo >> 16) & 0xff] ^ cf_cass_crc_tab[4][lo >> 24] ^
            cf_cass_crc_tab[3][hi & 0xff] ^ cf_cass_crc_tab[2][(hi >> 8) & 0xff] ^
            cf_cass_crc_tab[1][(hi >> 16) & 0xff] ^ cf_cass_crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    /* the last 0-7 bytes: four at once, then the rest at once (table k is
     * "this byte, then k zero bytes"), instead of a dependent step per byte,
     * which was a sixth of the time of a commit log entry's CRC */
    if (n >= 4) {
        uint32_t x;
        memcpy(&x, p, 4);
        x ^= c;
        c = cf_cass_crc_tab[3][x & 0xff] ^ cf_cass_crc_tab[2][(x >> 8) & 0xff] ^
            cf_cass_crc_tab[1][(x >> 16) & 0xff] ^ cf_cass_crc_tab[0][x >> 24];
        p += 4;
        n -= 4;
    }
    switch (n) {
    case 3: {
        uint32_t x = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16);
        c = (c >> 24) ^ cf_cass_crc_tab[2][x & 0xff] ^ cf_cass_crc_tab[1][(x >> 8) & 0xff] ^
            cf_cass_crc_tab[0][(x >> 16) & 0xff];
        break;
    }
    case 2: {
        uint32_t x = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8);
        c = (c >> 16) ^ cf_cass_crc_tab[1][x & 0xff] ^ cf_cass_crc_tab[0][(x >> 8) & 0xff];
        break;
    }
    case 1: c = (c >> 8) ^ cf_cass_crc_tab[0][(c ^ p[0]) & 0xff]; break;
    default: break;
    }
    return c;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "crc32_fast.h: the slicing-by-8 loop assumes a little-endian CPU"
#endif

/* crc32(crc, p, n) as zlib computes it, any CPU. */
static inline uint32_t cf_cass_crc32_table(uint32_t crc, const uint8_t *p, size_t n) {
    return ~cf_cass_crc32_raw(~crc, p, n);
}

/* Fold constants: x^k mod P, bit-reflected over 33 bits (recomputed in the
 * test), for the distances of the paper: fold by 512 bits (four lanes) and
 * by 128 bits (one lane). */
#define CF_CASS_CRC32_K1 0x154442bd4ULL /* x^(4*128+32) */
#define CF_CASS_CRC32_K2 0x1c6e41596ULL /* x^(4*128-32) */
#define CF_CASS_CRC32_K3 0x1751997d0ULL /* x^(128+32) */
#define CF_CASS_CRC32_K4 0x0ccaa009eULL /* x^(128-32) */

/* The final reduction of a folded 16-byte block B to the CRC register, with
 * carry-less multiplications instead of a table pass (derived in the
 * bit-reflected representation, where a 64-bit lane a stands for
 * sum a_i x^(63-i) and clmul(a, b) for x * a(x) * b(x)):
 *   S = B.lo * (x^95 mod P) + B.hi * x^32          (96 bits)
 *   A = S.hi + S.lo * (x^63 mod P)                  (64 bits, same residue)
 *   q = floor(floor(A / x^32) * mu / x^32), mu = floor(x^64 / P)   (Barrett)
 *   register = A + q * P, its low 32 coefficients.
 * KF1/KF2 are the 32-bit residues placed in the high half of a lane; MU and
 * P are 33 bits, bit-reflected (all recomputed in tests/cassandra/test_crc32.c). */
#define CF_CASS_CRC32_KF1 0xccaa009e00000000ULL /* x^95 mod P */
#define CF_CASS_CRC32_KF2 0xb8bc676500000000ULL /* x^63 mod P */
#define CF_CASS_CRC32_MU 0x1f7011641ULL        /* floor(x^64 / P) */
#define CF_CASS_CRC32_P 0x1db710641ULL         /* P */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CF_CASS_CRC32_HAVE_CLMUL 1

/* Whether this CPU has PCLMULQDQ and SSSE3 (a load and a bit test). */
static inline bool cf_cass_crc32_clmul_usable(void) {
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("ssse3");
}

/* pshufb controls for byte shifts by n (0..16): at +n, "move byte i to
 * i + 16 - n" (a shift toward the end); at +16+n, "move byte i + n to i". */
static const uint8_t cf_cass_crc_shuf[48] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};

/* crc32(crc, p, n) as zlib computes it; only where cf_cass_crc32_clmul_usable().
 * Each 128-bit lane x becomes lo(x)*K1 ^ hi(x)*K2 ^ (the lane 64 bytes
 * further). Folding keeps the message's residue mod P, so the folded 16
 * bytes followed by the tail have the CRC of the whole message from a zero
 * register; the initial register is XORed into the first four bytes.
 * The last 1-15 bytes are folded in too: the 16 folded bytes B and the tail
 * T are the message zeros || B || T; its last 16 bytes B[n..15] || T get the
 * first n bytes of B, placed as a block before them, folded in (a table step
 * per tail byte was most of the cost on commit log entries of ~200 bytes). */
__attribute__((target("pclmul,ssse3"))) static inline uint32_t cf_cass_crc32_clmul(uint32_t crc, const uint8_t *p,
                                                                                    size_t n) {
    if (n < 16) return cf_cass_crc32_table(crc, p, n);
    const uint8_t *end = p + n;
    const __m128i k34 = _mm_set_epi64x((long long)CF_CASS_CRC32_K4, (long long)CF_CASS_CRC32_K3);
#define CF_CASS_FOLD(x, k, y) \
    _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), y)
    __m128i x;
    if (n >= 64) {
        const __m128i k12 = _mm_set_epi64x((long long)CF_CASS_CRC32_K2, (long long)CF_CASS_CRC32_K1);
        __m128i x0 = _mm_loadu_si128((const __m128i *)p), x1 = _mm_loadu_si128((const __m128i *)(p + 16)),
                x2 = _mm_loadu_si128((const __m128i *)(p + 32)), x3 = _mm_loadu_si128((const __m128i *)(p + 48));
        x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)~crc));
        p += 64;
        n -= 64;
        while (n >= 64) {
            x0 = CF_CASS_FOLD(x0, k12, _mm_loadu_si128((const __m128i *)p));
            x1 = CF_CASS_FOLD(x1, k12, _mm_loadu_si128((const __m128i *)(p + 16)));
            x2 = CF_CASS_FOLD(x2, k12, _mm_loadu_si128((const __m128i *)(p + 32)));
            x3 = CF_CASS_FOLD(x3, k12, _mm_loadu_si128((const __m128i *)(p + 48)));
            p += 64;
            n -= 64;
        }
        x = CF_CASS_FOLD(x0, k34, x1);
        x = CF_CASS_FOLD(x, k34, x2);
        x = CF_CASS_FOLD(x, k34, x3);
    } else {
        x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)~crc));
        p += 16;
        n -= 16;
    }
    while (n >= 16) {
        x = CF_CASS_FOLD(x, k34, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    if (n) { /* 1..15 bytes left; at least 16 were read, so end - 16 is in the buffer */
        __m128i to_end = _mm_loadu_si128((const __m128i *)(cf_cass_crc_shuf + n));
        __m128i to_start = _mm_loadu_si128((const __m128i *)(cf_cass_crc_shuf + 16 + n));
        __m128i last = _mm_loadu_si128((const __m128i *)(end - 16));
        __m128i tail = _mm_and_si128(last, _mm_cmpgt_epi8(to_end, _mm_set1_epi8(-1))); /* T at 16-n.. */
        x = CF_CASS_FOLD(_mm_shuffle_epi8(x, to_end), k34, _mm_or_si128(_mm_shuffle_epi8(x, to_start), tail));
    }
#undef CF_CASS_FOLD
    const __m128i kf = _mm_set_epi64x((long long)CF_CASS_CRC32_KF2, (long long)CF_CASS_CRC32_KF1);
    const __m128i mp = _mm_set_epi64x((long long)CF_CASS_CRC32_P, (long long)CF_CASS_CRC32_MU);
    const __m128i lo32 = _mm_set_epi64x(0, 0xffffffffLL);
    __m128i s = _mm_xor_si128(_mm_clmulepi64_si128(x, kf, 0x00), _mm_slli_si128(_mm_srli_si128(x, 8), 4));
    __m128i a = _mm_xor_si128(_mm_srli_si128(s, 8), _mm_srli_si128(_mm_clmulepi64_si128(s, kf, 0x10), 8));
    __m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(a, lo32), mp, 0x00), lo32);
    __m128i r = _mm_xor_si128(a, _mm_clmulepi64_si128(q, mp, 0x10));
    return ~(uint32_t)((uint64_t)_mm_cvtsi128_si64(r) >> 32);
}
#endif

#endif
