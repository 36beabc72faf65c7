/*
 * digest.c - the canonical digest of a partition update (see cdcflow/sidecar.h).
 *
 * Why a canonical form and not the serialized bytes: each replica writes its
 * own commit log entry of a write. The content is the same, but the bytes
 * need not be: timestamps, TTLs and deletion times are serialized as deltas
 * to the update's EncodingStats, which a node may compute anew (hints,
 * another messaging version after an upgrade). The decoded values are what
 * Cassandra itself compares (UnfilteredRowIterators.digest feeds them to MD5
 * too), so the digest is taken over them.
 *
 * The form: a tag byte per element, unsigned varints for lengths and
 * counts, zigzag varints for timestamps relative to the first timestamp of
 * the update (absolute micros would cost 7-8 bytes each and MD5 costs per
 * byte). The bytes are built in one buffer and hashed with one call: MD5's
 * cost per call is a block, so many small updates would cost more than the
 * bytes themselves.
 *
 * MD5() and not EVP: OpenSSL 3's EVP_DigestInit_ex frees and makes the
 * provider's context anew in every call (five allocations), which cost a
 * third as much as hashing a 300-byte form. MD5() is deprecated in 3.0, not
 * removed; the API level below keeps its declaration free of the warning.
 */
#define OPENSSL_API_COMPAT 0x10100000L
#include <openssl/md5.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/sidecar.h"

struct cf_sc_digester {
    uint8_t *buf;
    size_t len, cap;
    int64_t base; /* first timestamp written */
    bool have_base;
    int64_t max_ts;
};

cf_sc_digester *cf_sc_digester_new(void) {
    cf_sc_digester *d = cf_xcalloc(1, sizeof *d);
    d->cap = 4096;
    d->buf = cf_xmalloc(d->cap);
    return d;
}

void cf_sc_digester_destroy(cf_sc_digester *d) {
    if (!d) return;
    free(d->buf);
    free(d);
}

static inline void room(cf_sc_digester *d, size_t n) {
    if (d->len + n > d->cap) {
        while (d->len + n > d->cap) d->cap *= 2;
        d->buf = cf_xrealloc(d->buf, d->cap);
    }
}

static inline void put_u8(cf_sc_digester *d, uint8_t v) {
    room(d, 1);
    d->buf[d->len++] = v;
}

static inline void put_uv(cf_sc_digester *d, uint64_t v) {
    room(d, 10);
    uint8_t *p = d->buf + d->len;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    d->len = (size_t)(p - d->buf);
}

static inline void put_sv(cf_sc_digester *d, int64_t v) { put_uv(d, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

static inline void put_bytes(cf_sc_digester *d, const uint8_t *p, size_t n) {
    put_uv(d, n);
    room(d, n);
    if (n) memcpy(d->buf + d->len, p, n);
    d->len += n;
}

/* A value that may be null: 0 = null, else 1 + length. */
static inline void put_nbytes(cf_sc_digester *d, const cf_cass_bytes *b) {
    if (!b->p) {
        put_uv(d, 0);
        return;
    }
    put_uv(d, (uint64_t)b->len + 1);
    room(d, b->len);
    memcpy(d->buf + d->len, b->p, b->len);
    d->len += b->len;
}

static inline void put_ts(cf_sc_digester *d, int64_t ts) {
    if (ts != CF_CASS_LIVE_TS && ts > d->max_ts) d->max_ts = ts;
    if (!d->have_base) {
        d->base = ts;
        d->have_base = true;
        put_sv(d, ts);
        return;
    }
    put_sv(d, (int64_t)((uint64_t)ts - (uint64_t)d->base)); /* wraps for LIVE_TS; still one value per ts */
}

static void put_deletion(cf_sc_digester *d, uint8_t tag, const cf_cass_deletion *del) {
    put_u8(d, tag);
    put_ts(d, del->marked_at);
    put_sv(d, del->local_deletion_time);
}

static void put_cell(cf_sc_digester *d, const cf_cass_cell *c, bool complex) {
    uint8_t flags = (uint8_t)((c->deleted ? 1 : 0) | (c->expiring ? 2 : 0));
    put_u8(d, flags);
    put_ts(d, c->ts);
    if (c->deleted || c->expiring) {
        put_sv(d, c->ttl);
        put_sv(d, c->local_deletion_time);
    }
    if (complex) put_nbytes(d, &c->path);
    put_nbytes(d, &c->value);
}

static void put_row(cf_sc_digester *d, const cf_cass_row *r) {
    put_u8(d, 'R');
    put_u8(d, (uint8_t)r->kind);
    put_u8(d, (uint8_t)r->bound);
    put_uv(d, r->n_clustering);
    for (size_t i = 0; i < r->n_clustering; i++) put_nbytes(d, &r->clustering[i]);
    if (r->has_liveness) {
        put_u8(d, 'L');
        put_ts(d, r->ts);
        put_sv(d, r->ttl);
        put_sv(d, r->local_expiration_time);
    }
    if (!cf_cass_deletion_is_live(&r->deletion)) put_deletion(d, r->shadowable ? 'd' : 'D', &r->deletion);
    if (r->kind == CF_CASS_RT_BOUNDARY) put_deletion(d, 'B', &r->start_deletion);
    put_uv(d, r->n_columns);
    for (size_t i = 0; i < r->n_columns; i++) {
        const cf_cass_column_data *cd = &r->columns[i];
        put_u8(d, cd->complex ? 'X' : 'C');
        put_bytes(d, (const uint8_t *)cd->name, strlen(cd->name));
        if (cd->complex) {
            if (cd->has_complex_deletion) put_deletion(d, 'K', &cd->complex_deletion);
            else put_u8(d, 0);
            put_uv(d, cd->n_cells);
        }
        for (size_t k = 0; k < cd->n_cells; k++) put_cell(d, &cd->cells[k], cd->complex);
    }
}

void cf_sc_digest(cf_sc_digester *d, const cf_cass_update *u, uint8_t out[CF_SC_DIGEST_LEN], int64_t *max_ts) {
    d->len = 0;
    d->have_base = false;
    d->max_ts = CF_CASS_LIVE_TS;
    room(d, 32 + u->key.len);
    put_u8(d, 'U');
    memcpy(d->buf + d->len, u->table_id, 16);
    d->len += 16;
    put_bytes(d, u->key.p, u->key.len);
    if (!cf_cass_deletion_is_live(&u->partition_deletion)) put_deletion(d, 'P', &u->partition_deletion);
    if (u->static_row) {
        put_u8(d, 'S');
        put_row(d, u->static_row);
    }
    put_uv(d, u->n_rows);
    for (size_t i = 0; i < u->n_rows; i++) put_row(d, &u->rows[i]);
    put_u8(d, 'E');
    MD5(d->buf, d->len, out);
    if (max_ts) *max_ts = d->max_ts;
}

const uint8_t *cf_sc_digest_input(const cf_sc_digester *d, size_t *len) {
    *len = d->len;
    return d->buf;
}
