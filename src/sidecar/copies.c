/*
 * copies.c - the results of recently read commit log entries, by their bytes
 * (see sidecar_internal.h, "copy cache").
 *
 * Why: with RF=3 every write is read three times, once from each replica's
 * cdc_raw, and replicas write the coordinator's mutation as they received
 * it, so the copies are nearly always the same bytes. Decoding a copy and
 * taking the MD5 of its canonical form cost about as much as MD5 over the
 * entry itself (bench_sidecar); for the second and third copies that work
 * gives what the first one gave. Here the first copy's results (per
 * partition update: digest, newest timestamp, token, table) are kept with
 * its bytes; a later entry with the same CRC and length whose bytes are equal
 * (memcmp: a hit is never a guess) takes them. Copies that differ (another
 * serialization version, another local deletion time) miss and are decoded
 * and digested as before, so the digests, and what is published, are the
 * same with or without the cache.
 *
 * Bounds: at most CAP entries and MAX_BYTES of entry bytes; the oldest go
 * first (the engine reads the replicas in timestamp order, so the copies of
 * one write come close together; a replica far behind the others misses,
 * which costs time, never a change). Each slot keeps a buffer of up to
 * KEEP_CAP bytes for the next entry, so a steady stream of small entries
 * allocates nothing, and what stays allocated is at most CAP x KEEP_CAP;
 * an engine with nothing to read releases all of it (cf_sc_copies_release).
 */
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "sidecar_internal.h"

#define CAP 2048                  /* entries; a power of two */
#define MAX_BYTES (4u << 20)      /* entry bytes kept */
#define KEEP_CAP 1024             /* a slot keeps a buffer up to this size for the next entry */
#define NBUCKETS (CAP * 2)
#define NONE UINT32_MAX

typedef struct slot {
    uint32_t crc, len, next; /* next: the bucket chain */
    int mv;
    bool used;
    uint8_t *bytes;
    size_t cap;
    cf_sc_copy_update *u;
    size_t nu, capu;
} slot;

struct cf_sc_copies {
    slot s[CAP];
    uint32_t bucket[NBUCKETS];
    uint32_t head;   /* the next slot to fill: the oldest when the ring is full */
    size_t bytes;    /* entry bytes held */
    bool held;       /* something allocated since the last release */
};

static uint32_t bucket_of(uint32_t crc, uint32_t len) { return (crc ^ (len * 0x9e3779b1u)) & (NBUCKETS - 1); }

cf_sc_copies *cf_sc_copies_new(void) {
    cf_sc_copies *c = cf_xcalloc(1, sizeof *c);
    for (size_t i = 0; i < NBUCKETS; i++) c->bucket[i] = NONE;
    return c;
}

static void unlink_slot(cf_sc_copies *c, uint32_t i) {
    slot *x = &c->s[i];
    uint32_t *p = &c->bucket[bucket_of(x->crc, x->len)];
    while (*p != NONE && *p != i) p = &c->s[*p].next;
    if (*p == i) *p = x->next;
    x->used = false;
    c->bytes -= x->len;
    if (x->cap > KEEP_CAP) { /* what stays allocated is bounded by CAP x KEEP_CAP */
        free(x->bytes);
        x->bytes = NULL;
        x->cap = 0;
    }
}

void cf_sc_copies_clear(cf_sc_copies *c) {
    if (!c) return;
    for (uint32_t i = 0; i < CAP; i++)
        if (c->s[i].used) unlink_slot(c, i);
}

void cf_sc_copies_release(cf_sc_copies *c) {
    if (!c || !c->held) return;
    for (uint32_t i = 0; i < CAP; i++) {
        if (c->s[i].used) unlink_slot(c, i);
        free(c->s[i].bytes);
        free(c->s[i].u);
        c->s[i].bytes = NULL;
        c->s[i].u = NULL;
        c->s[i].cap = c->s[i].capu = 0;
    }
    c->held = false;
}

void cf_sc_copies_destroy(cf_sc_copies *c) {
    cf_sc_copies_release(c); /* every buffer: none is allocated without held set */
    free(c);
}

const cf_sc_copy_update *cf_sc_copies_find(cf_sc_copies *c, uint32_t crc, int mv, const uint8_t *p, size_t len,
                                           size_t *nu) {
    if (len > UINT32_MAX) return NULL;
    for (uint32_t i = c->bucket[bucket_of(crc, (uint32_t)len)]; i != NONE; i = c->s[i].next) {
        const slot *x = &c->s[i];
        if (x->crc == crc && x->len == len && x->mv == mv && memcmp(x->bytes, p, len) == 0) {
            *nu = x->nu;
            return x->u;
        }
    }
    return NULL;
}

void cf_sc_copies_put(cf_sc_copies *c, uint32_t crc, int mv, const uint8_t *p, size_t len,
                      const cf_sc_copy_update *u, size_t nu) {
    if (len > MAX_BYTES / 8) return; /* a big entry would push out many small ones */
    while (c->bytes + len > MAX_BYTES || c->s[c->head].used) { /* free the oldest until it fits */
        uint32_t i = c->head;
        while (!c->s[i].used) i = (i + 1) & (CAP - 1);
        unlink_slot(c, i);
    }
    uint32_t i = c->head;
    c->head = (i + 1) & (CAP - 1);
    c->held = true;
    slot *x = &c->s[i];
    if (x->cap < len) {
        free(x->bytes);
        x->bytes = cf_xmalloc(x->cap = len);
    }
    if (x->capu < nu) {
        free(x->u);
        x->u = cf_xmalloc((x->capu = nu) * sizeof *x->u);
    }
    memcpy(x->bytes, p, len);
    memcpy(x->u, u, nu * sizeof *u);
    x->nu = nu;
    x->crc = crc;
    x->len = (uint32_t)len;
    x->mv = mv;
    x->used = true;
    c->bytes += len;
    uint32_t b = bucket_of(crc, (uint32_t)len);
    x->next = c->bucket[b];
    c->bucket[b] = i;
}

size_t cf_sc_copies_bytes(const cf_sc_copies *c) { return c->bytes; }
