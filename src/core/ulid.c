/*
 * ulid.c - monotonic ULIDs (see include/cdcflow/ulid.h).
 *
 * Randomness comes from getrandom(2), the kernel CSPRNG, as the spec asks
 * for a cryptographically secure source where possible.
 */
#include "cdcflow/ulid.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cdcflow/buf.h"

struct cf_ulid_gen {
    int64_t last_ms;
    cf_ulid last;
    int have_last;
};

static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

cf_ulid_gen *cf_ulid_gen_new(void) { return cf_xcalloc(1, sizeof(cf_ulid_gen)); }
void cf_ulid_gen_destroy(cf_ulid_gen *g) { free(g); }

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cf_ulid_time_ms(const cf_ulid *u) {
    int64_t t = 0;
    for (int i = 0; i < 6; i++) t = (t << 8) | u->b[i];
    return t;
}

static void fill_random(uint8_t *p, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r > 0) got += (size_t)r;
    }
}

cf_code cf_ulid_next(cf_ulid_gen *g, int64_t ms, cf_ulid *out, cf_err *err) {
    if (ms < 0) ms = now_ms();
    if (ms > 0xFFFFFFFFFFFFLL) return cf_err_set(err, CF_ERR_INVALID, "ULID time %lld ms does not fit 48 bits", (long long)ms);
    if (g->have_last && ms <= g->last_ms) {
        /* same (or earlier) millisecond: increment the 80-bit random part */
        cf_ulid next = g->last;
        int i = 15;
        for (; i >= 6; i--)
            if (++next.b[i] != 0) break;
        if (i < 6) {
            cf_err_set(err, CF_ERR_AGAIN, "ULID random part overflowed within millisecond %lld", (long long)g->last_ms);
            cf_err_hint(err, "Wait for the next millisecond; the ULID spec forbids wrapping around.");
            return CF_ERR_AGAIN;
        }
        g->last = next;
    } else {
        for (int j = 0; j < 6; j++) g->last.b[j] = (uint8_t)(ms >> (8 * (5 - j)));
        fill_random(g->last.b + 6, 10);
        g->last_ms = ms;
        g->have_last = 1;
    }
    *out = g->last;
    return CF_OK;
}

void cf_ulid_gen_seed_last(cf_ulid_gen *g, const cf_ulid *last) {
    g->last = *last;
    g->last_ms = cf_ulid_time_ms(last);
    g->have_last = 1;
}

void cf_ulid_encode(const cf_ulid *u, char out[CF_ULID_TEXT_LEN + 1]) {
    /* 130 bits of text for 128 bits of value: the first character holds
     * only the top 3 bits. Process as a big number, 5 bits at a time from
     * the least significant end. */
    uint8_t b[16];
    memcpy(b, u->b, 16);
    for (int c = CF_ULID_TEXT_LEN - 1; c >= 0; c--) {
        int bit = (CF_ULID_TEXT_LEN - 1 - c) * 5; /* position of the lowest bit of this char */
        unsigned v = 0;
        for (int k = 0; k < 5; k++) {
            int pos = bit + k;
            if (pos >= 128) break;
            int byte = 15 - pos / 8;
            v |= (unsigned)((b[byte] >> (pos % 8)) & 1) << k;
        }
        out[c] = alphabet[v];
    }
    out[CF_ULID_TEXT_LEN] = '\0';
}

static int decode_char(char c) {
    if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    /* Crockford aliases: I, L -> 1, O -> 0 */
    if (c == 'I' || c == 'L') c = '1';
    if (c == 'O') c = '0';
    const char *p = strchr(alphabet, c);
    return (c && p) ? (int)(p - alphabet) : -1;
}

cf_code cf_ulid_decode(const char *text, cf_ulid *out, cf_err *err) {
    if (!text || strlen(text) != CF_ULID_TEXT_LEN) {
        cf_err_set(err, CF_ERR_INVALID, "invalid ULID \"%s\": expected 26 characters", text ? text : "(null)");
        return CF_ERR_INVALID;
    }
    int first = decode_char(text[0]);
    if (first < 0 || first > 7) {
        cf_err_set(err, CF_ERR_INVALID, "invalid ULID \"%s\": larger than 7ZZZZZZZZZZZZZZZZZZZZZZZZZ", text);
        return CF_ERR_INVALID;
    }
    memset(out->b, 0, 16);
    for (int c = 0; c < CF_ULID_TEXT_LEN; c++) {
        int v = decode_char(text[c]);
        if (v < 0) {
            cf_err_set(err, CF_ERR_INVALID, "invalid ULID \"%s\": character '%c' at %d is not Crockford base32", text,
                       text[c], c);
            return CF_ERR_INVALID;
        }
        int bit = (CF_ULID_TEXT_LEN - 1 - c) * 5;
        for (int k = 0; k < 5; k++) {
            int pos = bit + k;
            if (pos >= 128) break;
            if ((v >> k) & 1) out->b[15 - pos / 8] |= (uint8_t)(1u << (pos % 8));
        }
    }
    return CF_OK;
}

int cf_ulid_compare(const cf_ulid *a, const cf_ulid *b) { return memcmp(a->b, b->b, 16); }
