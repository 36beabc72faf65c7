/*
 * bq_pb.h - protobuf wire format primitives for the BigQuery target (not a
 * public API): varints, tags, length-delimited fields, and a bounds-checked
 * reader for messages that come from the network.
 *
 * Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 (3 and 4,
 * groups, are refused by the reader: no message we read has them).
 */
#ifndef CF_BQ_PB_H
#define CF_BQ_PB_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cdcflow/buf.h"

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

static inline size_t pb_varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

/* Write a varint at p (room for 10 bytes); returns bytes written. */
static inline size_t pb_put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) p[n++] = (uint8_t)(v | 0x80), v >>= 7;
    p[n++] = (uint8_t)v;
    return n;
}

static inline void pb_varint(cf_buf *b, uint64_t v) {
    cf_buf_reserve(b, 10);
    b->len += pb_put_varint((uint8_t *)b->data + b->len, v);
    b->data[b->len] = 0;
}

static inline void pb_tag(cf_buf *b, uint32_t field, int wt) { pb_varint(b, (uint64_t)field << 3 | (unsigned)wt); }

static inline void pb_bytes(cf_buf *b, uint32_t field, const void *p, size_t n) {
    pb_tag(b, field, PB_LEN);
    pb_varint(b, n);
    cf_buf_append(b, p, n);
}

static inline void pb_string(cf_buf *b, uint32_t field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

static inline void pb_uint(cf_buf *b, uint32_t field, uint64_t v) {
    pb_tag(b, field, PB_VARINT);
    pb_varint(b, v);
}

/* A nested message written in place: pb_begin reserves a length of `room`
 * bytes (5 covers 4 GiB), pb_end writes the real length and moves the body
 * when fewer bytes were needed. */
static inline size_t pb_begin(cf_buf *b, uint32_t field) {
    pb_tag(b, field, PB_LEN);
    cf_buf_reserve(b, 5);
    size_t at = b->len;
    b->len += 5;
    return at;
}

static inline void pb_end(cf_buf *b, size_t at) {
    size_t body = b->len - at - 5;
    uint8_t tmp[10];
    size_t k = pb_put_varint(tmp, body);
    memcpy(b->data + at, tmp, k);
    if (k < 5) memmove(b->data + at + k, b->data + at + 5, body);
    b->len -= 5 - k;
    b->data[b->len] = 0;
}

/* ---------------- reading ---------------- */

typedef struct pb_reader {
    const uint8_t *p, *end, *start;
    bool bad;
} pb_reader;

static inline pb_reader pb_reader_of(const uint8_t *p, size_t n, const uint8_t *start) {
    pb_reader r = {p, p + n, start ? start : p, false};
    return r;
}

static inline bool pb_read_varint(pb_reader *r, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) return r->bad = true, false;
        uint8_t c = *r->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return true;
        }
    }
    return r->bad = true, false;
}

/* The next field: false at the end (r->bad says whether it was clean). */
static inline bool pb_next(pb_reader *r, uint32_t *field, int *wt) {
    if (r->bad || r->p >= r->end) return false;
    uint64_t t;
    if (!pb_read_varint(r, &t)) return false;
    *field = (uint32_t)(t >> 3);
    *wt = (int)(t & 7);
    if (*field == 0) return r->bad = true, false;
    return true;
}

static inline bool pb_read_len(pb_reader *r, const uint8_t **p, size_t *n) {
    uint64_t l;
    if (!pb_read_varint(r, &l)) return false;
    if (l > (uint64_t)(r->end - r->p)) return r->bad = true, false;
    *p = r->p;
    *n = (size_t)l;
    r->p += l;
    return true;
}

static inline bool pb_skip(pb_reader *r, int wt) {
    uint64_t v;
    const uint8_t *p;
    size_t n;
    switch (wt) {
    case PB_VARINT: return pb_read_varint(r, &v);
    case PB_I64:
        if (r->end - r->p < 8) return r->bad = true, false;
        r->p += 8;
        return true;
    case PB_LEN: return pb_read_len(r, &p, &n);
    case PB_I32:
        if (r->end - r->p < 4) return r->bad = true, false;
        r->p += 4;
        return true;
    default: return r->bad = true, false;
    }
}

#endif
