/*
 * avro_extract.c - the input.format=avro extractor: Avro object container
 * files (see include/cdcflow/source_extract.h for positions and errors).
 *
 * The container framing is parsed here over the cf_reader, not with avro-c's
 * file reader, because avro-c's reader wants a FILE*, cannot report byte
 * positions, cannot resume at a block and aborts or misreads on damaged
 * framing. The format (Avro specification, "Object Container Files"):
 *   header: "Obj" 0x01, a map<bytes> of metadata (avro.schema, avro.codec),
 *           a 16-byte sync marker;
 *   blocks: long count, long size, size bytes of (compressed) datums, the
 *           sync marker again.
 * Each datum is decoded with the Avro <-> Connect mapping of the convert
 * module (cf_avro_codec_decode_next, the writer schema mapped once).
 *
 * Memory: one window that holds the current block (compressed) and one
 * buffer with it decompressed; a block above CF_AVRO_MAX_BLOCK (either way)
 * is refused. A damaged block is reported and reading continues after the
 * next sync marker; the scan for it keeps the window at its size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "cdcflow/avro.h"
#include "cdcflow/buf.h"
#include "cdcflow/source_extract.h"

#define CF_AVRO_MAX_BLOCK (64u * 1024 * 1024) /* compressed or decompressed block */
#define CF_AVRO_MAX_META (16u * 1024 * 1024)  /* one header metadata entry */
#define CF_AVRO_MAX_EMPTY_DATUMS (1u << 20)    /* datums of zero bytes in one block */
#define WIN_INIT (64 * 1024)
#define SYNC_LEN 16

enum { CODEC_NULL, CODEC_DEFLATE, CODEC_SNAPPY, CODEC_ZSTD };

typedef struct cf_avro_extract {
    cf_reader *r; /* borrowed from the extractor */
    /* window: buf[off..len) is unparsed data at stream offset base+off */
    uint8_t *buf;
    size_t cap, off, len;
    uint64_t base;
    bool eof;
    /* header */
    bool started, finished;
    uint64_t start, start_index, start_line; /* resume request */
    cf_avro_codec *codec;
    cf_schema *schema;
    int codec_kind;
    char codec_name[32];
    uint8_t sync[SYNC_LEN];
    uint64_t header_end;
    /* current block */
    bool in_block;
    uint64_t blk_start, blk_next; /* its first byte; the byte after its sync marker */
    uint64_t blk_no;              /* 0-based block number since the start (or the resume point) */
    int64_t blk_count, blk_done;
    const uint8_t *data;
    size_t data_len, data_off;
    uint8_t *dbuf;
    size_t dcap;
    z_stream z;
    bool z_init;
    ZSTD_DCtx *zs;
    uint64_t index;
} cf_avro_extract;

cf_code cf_avro_extract_new(cf_reader *r, uint64_t start, uint64_t start_index, uint64_t start_line,
                            cf_avro_extract **out, cf_err *err);
cf_code cf_avro_extract_next(cf_avro_extract *a, cf_schema **schema, cf_value **value, cf_extract_pos *pos,
                             cf_err *err);
void cf_avro_extract_destroy(cf_avro_extract *a);

static const char *NAME(const cf_avro_extract *a) { return cf_reader_name(a->r); }
static uint64_t here(const cf_avro_extract *a) { return a->base + a->off; }
static size_t avail(const cf_avro_extract *a) { return a->len - a->off; }

/* Make at least n bytes available at off unless the stream ends first
 * (callers check avail()). n is at most CF_AVRO_MAX_BLOCK + 64. */
static cf_code ensure(cf_avro_extract *a, size_t n, cf_err *err) {
    while (avail(a) < n && !a->eof) {
        if (a->off > 0) {
            memmove(a->buf, a->buf + a->off, a->len - a->off);
            a->base += a->off;
            a->len -= a->off;
            a->off = 0;
        }
        if (n > a->cap) {
            size_t c = a->cap;
            while (c < n) c *= 2;
            a->buf = cf_xrealloc(a->buf, c);
            a->cap = c;
        }
        size_t got;
        cf_code rc = cf_reader_read(a->r, a->buf + a->len, a->cap - a->len, &got, err);
        if (rc) return rc;
        if (got == 0) a->eof = true;
        a->len += got;
    }
    return CF_OK;
}

/* Zig-zag varint at p[0..n): 0 ok, 1 runs past n, 2 longer than 64 bits. */
static int parse_long(const uint8_t *p, size_t n, size_t *used, int64_t *v) {
    uint64_t x = 0;
    for (size_t i = 0; i < 10; i++) {
        if (i >= n) return 1;
        uint8_t b = p[i];
        if (i == 9 && (b & 0x7e)) return 2;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *used = i + 1;
            *v = (int64_t)((x >> 1) ^ -(x & 1));
            return 0;
        }
    }
    return 2;
}

/* "block 3", or after a resume (earlier blocks were not counted) "block 2
 * after the resume point". Errors also give the block's byte offset, which
 * is absolute either way. */
static const char *blk_label(const cf_avro_extract *a, uint64_t no, char *buf, size_t n) {
    if (a->start > 0)
        snprintf(buf, n, "block %llu after the resume point", (unsigned long long)no);
    else
        snprintf(buf, n, "block %llu", (unsigned long long)no);
    return buf;
}

/* An error that ends the object: reading stops, the next call says EOF. */
static cf_code fatal(cf_avro_extract *a, cf_extract_pos *pos, cf_err *err) {
    (void)err; /* already set by the caller */
    a->finished = true;
    pos->index = a->index++;
    pos->line = pos->end_line = 1;
    pos->start = pos->end = here(a);
    return CF_ERR_INVALID;
}

/* ---------------- header ---------------- */

static cf_code header_fail(cf_avro_extract *a, cf_extract_pos *pos, cf_err *err, const char *what, const char *detail) {
    cf_err_set(err, CF_ERR_INVALID, "\"%s\" is not a valid Avro object container file: %s", NAME(a), what);
    if (detail) cf_err_detail(err, "%s", detail);
    cf_err_where(err, "%s: header, byte %llu", NAME(a), (unsigned long long)here(a));
    cf_err_hint(err, "input.format=avro reads Avro object container files (.avro, magic \"Obj\\x01\"); check "
                     "input.format, file.name.template and file.compression.type.");
    return fatal(a, pos, err);
}

/* One varint of the header, advancing. */
static cf_code hdr_long(cf_avro_extract *a, cf_extract_pos *pos, int64_t *v, cf_err *err) {
    cf_code rc = ensure(a, 10, err);
    if (rc) return rc;
    size_t used;
    int st = parse_long(a->buf + a->off, avail(a), &used, v);
    if (st == 1) return header_fail(a, pos, err, "the object ends inside the header", NULL);
    if (st == 2) return header_fail(a, pos, err, "a length in the header is longer than 64 bits", NULL);
    a->off += used;
    return CF_OK;
}

/* Length-prefixed bytes of the header: *p valid until the next ensure. */
static cf_code hdr_bytes(cf_avro_extract *a, cf_extract_pos *pos, const uint8_t **p, size_t *n, cf_err *err) {
    int64_t len;
    cf_code rc = hdr_long(a, pos, &len, err);
    if (rc) return rc;
    if (len < 0 || (uint64_t)len > CF_AVRO_MAX_META) {
        char d[96];
        snprintf(d, sizeof d, "metadata length %lld (at most %u bytes)", (long long)len, CF_AVRO_MAX_META);
        return header_fail(a, pos, err, "invalid metadata length", d);
    }
    if ((rc = ensure(a, (size_t)len, err))) return rc;
    if (avail(a) < (size_t)len) return header_fail(a, pos, err, "the object ends inside the header", NULL);
    *p = a->buf + a->off;
    *n = (size_t)len;
    a->off += (size_t)len;
    return CF_OK;
}

static cf_code read_header(cf_avro_extract *a, cf_extract_pos *pos, cf_err *err) {
    cf_code rc = ensure(a, 4, err);
    if (rc) return rc;
    if (avail(a) < 4 || memcmp(a->buf + a->off, "Obj\x01", 4) != 0) {
        char d[96] = "the object is empty";
        if (avail(a) > 0) {
            size_t k = avail(a) < 4 ? avail(a) : 4;
            int w = snprintf(d, sizeof d, "the first bytes are");
            for (size_t i = 0; i < k; i++) w += snprintf(d + w, sizeof d - (size_t)w, " %02x", a->buf[a->off + i]);
            snprintf(d + w, sizeof d - (size_t)w, ", not 4f 62 6a 01 (\"Obj\" 1)");
        }
        return header_fail(a, pos, err, "no Avro magic", d);
    }
    a->off += 4;
    char *schema_json = NULL;
    size_t schema_len = 0;
    bool have_codec = false;
    for (;;) {
        int64_t count;
        if ((rc = hdr_long(a, pos, &count, err))) goto out;
        if (count == 0) break;
        if (count < 0) {
            int64_t bytes;
            if (count == INT64_MIN) {
                rc = header_fail(a, pos, err, "invalid metadata block count", NULL);
                goto out;
            }
            count = -count;
            if ((rc = hdr_long(a, pos, &bytes, err))) goto out;
        }
        for (int64_t i = 0; i < count; i++) {
            const uint8_t *k, *v;
            size_t kn, vn;
            if ((rc = hdr_bytes(a, pos, &k, &kn, err))) goto out;
            bool is_schema = kn == 11 && memcmp(k, "avro.schema", 11) == 0;
            bool is_codec = kn == 10 && memcmp(k, "avro.codec", 10) == 0;
            if ((rc = hdr_bytes(a, pos, &v, &vn, err))) goto out;
            if (is_schema) {
                free(schema_json);
                schema_json = cf_xmalloc(vn + 1);
                memcpy(schema_json, v, vn);
                schema_json[vn] = '\0';
                schema_len = vn;
            } else if (is_codec) {
                have_codec = true;
                snprintf(a->codec_name, sizeof a->codec_name, "%.*s", (int)(vn < 31 ? vn : 31), (const char *)v);
                if (vn == 4 && memcmp(v, "null", 4) == 0) a->codec_kind = CODEC_NULL;
                else if (vn == 7 && memcmp(v, "deflate", 7) == 0) a->codec_kind = CODEC_DEFLATE;
                else if (vn == 6 && memcmp(v, "snappy", 6) == 0) a->codec_kind = CODEC_SNAPPY;
                else if (vn == 9 && memcmp(v, "zstandard", 9) == 0) a->codec_kind = CODEC_ZSTD;
                else {
                    cf_err_set(err, CF_ERR_INVALID, "Avro object \"%s\" uses codec \"%.*s\", which is not supported",
                               NAME(a), (int)(vn < 64 ? vn : 64), (const char *)v);
                    cf_err_where(err, "%s: header", NAME(a));
                    cf_err_hint(err, "Supported codecs: null, deflate, snappy, zstandard; rewrite the file with one of them.");
                    rc = fatal(a, pos, err);
                    goto out;
                }
            }
        }
    }
    if (!have_codec) snprintf(a->codec_name, sizeof a->codec_name, "null");
    if ((rc = ensure(a, SYNC_LEN, err))) goto out;
    if (avail(a) < SYNC_LEN) {
        rc = header_fail(a, pos, err, "the object ends before the sync marker", NULL);
        goto out;
    }
    memcpy(a->sync, a->buf + a->off, SYNC_LEN);
    a->off += SYNC_LEN;
    a->header_end = here(a);
    if (!schema_json) {
        rc = header_fail(a, pos, err, "the header has no avro.schema", NULL);
        goto out;
    }
    cf_err e2;
    if (cf_avro_codec_from_json(schema_json, schema_len, &a->codec, &e2)) {
        cf_err_set(err, CF_ERR_INVALID, "the writer schema of Avro object \"%s\" cannot be read: %s", NAME(a),
                   e2.message);
        cf_err_detail(err, "%s", e2.detail);
        cf_err_where(err, "%s: header avro.schema%s%s", NAME(a), e2.where[0] ? ", at " : "", e2.where);
        cf_err_hint(err, "%s", e2.hint[0] ? e2.hint : "The schema must be a valid Avro schema that Connect can represent.");
        rc = fatal(a, pos, err);
        goto out;
    }
    a->schema = cf_schema_ref(cf_avro_codec_schema(a->codec));
    if (a->codec_kind == CODEC_DEFLATE) {
        if (inflateInit2(&a->z, -MAX_WBITS) != Z_OK) {
            rc = cf_err_set(err, CF_ERR_INTERNAL, "zlib inflateInit2 failed");
            goto out;
        }
        a->z_init = true;
    } else if (a->codec_kind == CODEC_ZSTD) {
        a->zs = ZSTD_createDCtx();
    }
out:
    free(schema_json);
    return rc;
}

/* ---------------- blocks ---------------- */

static void dgrow(cf_avro_extract *a, size_t n) {
    if (n <= a->dcap) return;
    size_t c = a->dcap ? a->dcap : 64 * 1024;
    while (c < n) c *= 2;
    if (c > CF_AVRO_MAX_BLOCK) c = CF_AVRO_MAX_BLOCK;
    a->dbuf = cf_xrealloc(a->dbuf, c);
    a->dcap = c;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Decompress one block's data; on failure *why says what is wrong. */
static bool decompress(cf_avro_extract *a, const uint8_t *in, size_t n, char *why, size_t whylen) {
    switch (a->codec_kind) {
    case CODEC_NULL:
        a->data = in;
        a->data_len = n;
        return true;
    case CODEC_DEFLATE: {
        inflateReset(&a->z);
        a->z.next_in = (Bytef *)in;
        a->z.avail_in = (uInt)n;
        size_t outn = 0;
        for (;;) {
            if (outn == a->dcap) {
                if (a->dcap >= CF_AVRO_MAX_BLOCK) {
                    snprintf(why, whylen, "the block inflates to more than %u bytes", CF_AVRO_MAX_BLOCK);
                    return false;
                }
                dgrow(a, outn + 1);
            }
            a->z.next_out = a->dbuf + outn;
            a->z.avail_out = (uInt)(a->dcap - outn);
            int zr = inflate(&a->z, Z_NO_FLUSH);
            outn = a->dcap - a->z.avail_out;
            if (zr == Z_STREAM_END) break;
            if (zr == Z_BUF_ERROR && a->z.avail_out > 0) {
                snprintf(why, whylen, "the deflate data ends before its end mark");
                return false;
            }
            if (zr != Z_OK && zr != Z_BUF_ERROR) {
                snprintf(why, whylen, "deflate data is damaged (zlib: %s)", a->z.msg ? a->z.msg : zError(zr));
                return false;
            }
        }
        a->data = a->dbuf;
        a->data_len = outn;
        return true;
    }
    case CODEC_SNAPPY: {
        /* the compressed data, then the big-endian CRC32 of the uncompressed data */
        if (n < 4) {
            snprintf(why, whylen, "a snappy block of %zu bytes has no room for its CRC32", n);
            return false;
        }
        size_t ulen;
        if (snappy_uncompressed_length((const char *)in, n - 4, &ulen) != SNAPPY_OK) {
            snprintf(why, whylen, "snappy data is damaged (no valid length)");
            return false;
        }
        if (ulen > CF_AVRO_MAX_BLOCK) {
            snprintf(why, whylen, "the block uncompresses to %zu bytes, more than %u", ulen, CF_AVRO_MAX_BLOCK);
            return false;
        }
        dgrow(a, ulen ? ulen : 1);
        size_t got = a->dcap;
        if (snappy_uncompress((const char *)in, n - 4, (char *)a->dbuf, &got) != SNAPPY_OK || got != ulen) {
            snprintf(why, whylen, "snappy data is damaged");
            return false;
        }
        uint32_t want = be32(in + n - 4), crc = (uint32_t)crc32(0L, a->dbuf, (uInt)ulen);
        if (crc != want) {
            snprintf(why, whylen, "CRC32 of the uncompressed data is %08x, the block says %08x", crc, want);
            return false;
        }
        a->data = a->dbuf;
        a->data_len = ulen;
        return true;
    }
    case CODEC_ZSTD: {
        ZSTD_DCtx_reset(a->zs, ZSTD_reset_session_only);
        ZSTD_inBuffer ib = {in, n, 0};
        size_t outn = 0, zr = 0;
        for (;;) {
            if (outn == a->dcap) {
                if (a->dcap >= CF_AVRO_MAX_BLOCK) {
                    snprintf(why, whylen, "the block decompresses to more than %u bytes", CF_AVRO_MAX_BLOCK);
                    return false;
                }
                dgrow(a, outn + 1);
            }
            ZSTD_outBuffer ob = {a->dbuf, a->dcap, outn};
            zr = ZSTD_decompressStream(a->zs, &ob, &ib);
            outn = ob.pos;
            if (ZSTD_isError(zr)) {
                snprintf(why, whylen, "zstandard data is damaged (zstd: %s)", ZSTD_getErrorName(zr));
                return false;
            }
            if (ib.pos == ib.size && ob.pos < ob.size) break; /* all input used, output not full */
        }
        if (zr != 0) {
            snprintf(why, whylen, "the zstandard frame is incomplete");
            return false;
        }
        a->data = a->dbuf;
        a->data_len = outn;
        return true;
    }
    }
    return false;
}

/* A damaged block at stream offset b (still in the window): report it and
 * continue right after the next sync marker, or end the object. */
static cf_code bad_block(cf_avro_extract *a, uint64_t b, bool framing_ok, uint64_t next, const char *why,
                         cf_extract_pos *pos, cf_err *err) {
    uint64_t resume;
    bool found = true;
    if (framing_ok) {
        /* the sync marker after the data matched: only the data is bad */
        resume = next;
        cf_code rc = ensure(a, (size_t)(next - here(a)), err);
        if (rc) return rc;
        a->off += (size_t)(next - here(a));
    } else {
        a->off = (size_t)(b + 1 - a->base);
        found = false;
        for (;;) {
            uint8_t *p = avail(a) >= SYNC_LEN ? memmem(a->buf + a->off, avail(a), a->sync, SYNC_LEN) : NULL;
            if (p) {
                a->off = (size_t)(p - a->buf) + SYNC_LEN;
                found = true;
                break;
            }
            if (a->eof) {
                a->off = a->len;
                break;
            }
            /* keep the last 15 bytes (a marker may straddle the refill) */
            if (avail(a) > SYNC_LEN - 1) a->off = a->len - (SYNC_LEN - 1);
            cf_code rc = ensure(a, avail(a) + 1, err);
            if (rc) return rc;
        }
        resume = here(a);
    }
    char bl[64];
    blk_label(a, a->blk_no, bl, sizeof bl);
    cf_err_set(err, CF_ERR_INVALID, "damaged block in Avro object \"%s\": %s", NAME(a), why);
    if (found)
        cf_err_detail(err, "%s at byte %llu; its datums are skipped and reading continues with the block at "
                           "byte %llu (%llu bytes skipped)",
                      bl, (unsigned long long)b, (unsigned long long)resume, (unsigned long long)(resume - b));
    else
        cf_err_detail(err, "%s at byte %llu; no sync marker follows, so the rest of the object (%llu bytes) "
                           "is skipped",
                      bl, (unsigned long long)b, (unsigned long long)(resume - b));
    cf_err_where(err, "%s: %s, byte %llu", NAME(a), bl, (unsigned long long)b);
    cf_err_hint(err, "The file is damaged or was cut short (still being written?); rewrite it, or let "
                     "errors.tolerance=all skip the block.");
    a->blk_no++;
    a->in_block = false;
    if (!found) a->finished = true;
    pos->index = a->index++;
    pos->line = 1;
    pos->start = b;
    pos->end = resume;
    pos->end_line = 1;
    return CF_ERR_INVALID;
}

/* Read the block at the current position: CF_OK (loaded), CF_ERR_EOF,
 * CF_ERR_INVALID (damaged, reported, positioned after it), other = I/O. */
static cf_code read_block(cf_avro_extract *a, cf_extract_pos *pos, cf_err *err) {
    cf_code rc = ensure(a, 20, err);
    if (rc) return rc;
    uint64_t b = here(a);
    if (avail(a) == 0) return CF_ERR_EOF;
    const uint8_t *p = a->buf + a->off;
    size_t u1, u2;
    int64_t count, size;
    char why[200];
    int st = parse_long(p, avail(a), &u1, &count);
    if (st == 0) st = parse_long(p + u1, avail(a) - u1, &u2, &size);
    if (st == 1) return bad_block(a, b, false, 0, "the object ends inside a block header", pos, err);
    if (st == 2) return bad_block(a, b, false, 0, "a block header varint is longer than 64 bits", pos, err);
    if (count < 0 || size < 0) {
        snprintf(why, sizeof why, "negative datum count or size (count %lld, size %lld)", (long long)count,
                 (long long)size);
        return bad_block(a, b, false, 0, why, pos, err);
    }
    if ((uint64_t)size > CF_AVRO_MAX_BLOCK) {
        snprintf(why, sizeof why, "block size %lld is above the limit of %u bytes", (long long)size, CF_AVRO_MAX_BLOCK);
        return bad_block(a, b, false, 0, why, pos, err);
    }
    size_t need = u1 + u2 + (size_t)size + SYNC_LEN;
    if ((rc = ensure(a, need, err))) return rc;
    if (avail(a) < need) {
        snprintf(why, sizeof why, "the object ends inside the block (%zu of %zu bytes present)", avail(a), need);
        return bad_block(a, b, false, 0, why, pos, err);
    }
    p = a->buf + a->off; /* the window may have moved */
    if (memcmp(p + need - SYNC_LEN, a->sync, SYNC_LEN) != 0) {
        snprintf(why, sizeof why, "no sync marker after the %lld data bytes (wrong size or damaged data)",
                 (long long)size);
        return bad_block(a, b, false, 0, why, pos, err);
    }
    if (!decompress(a, p + u1 + u2, (size_t)size, why, sizeof why)) {
        char w2[240];
        snprintf(w2, sizeof w2, "%s codec: %s", a->codec_name, why);
        return bad_block(a, b, true, b + need, w2, pos, err);
    }
    if ((uint64_t)count > a->data_len && (uint64_t)count > CF_AVRO_MAX_EMPTY_DATUMS) {
        /* every datum takes at least one byte unless the schema encodes to
         * nothing (an empty record); then a tiny file could claim 2^62 records */
        snprintf(why, sizeof why, "%lld datums cannot be in %zu bytes", (long long)count, a->data_len);
        return bad_block(a, b, true, b + need, why, pos, err);
    }
    a->off += need;
    a->in_block = true;
    a->blk_start = b;
    a->blk_next = b + need;
    a->blk_count = count;
    a->blk_done = 0;
    a->data_off = 0;
    return CF_OK;
}

/* Decode the next datum of the current block. */
static cf_code next_datum(cf_avro_extract *a, cf_value **value, cf_extract_pos *pos, cf_err *err) {
    size_t used;
    pos->index = a->index++;
    pos->start = a->blk_start;
    pos->line = (uint64_t)a->blk_done + 1;
    cf_code rc = cf_avro_codec_decode_next(a->codec, a->data + a->data_off, a->data_len - a->data_off, true, &used,
                                           value, err);
    if (rc) {
        if (err) {
            cf_err inner = *err;
            size_t at = 0, of = 0;
            char where_in[300];
            /* the codec's offsets are the datum's; say where in the block */
            if (sscanf(inner.detail, "at byte %zu of %zu", &at, &of) == 2)
                snprintf(where_in, sizeof where_in, "byte %zu of the block's %zu %sdata bytes (the datum starts at %zu)",
                         a->data_off + at, a->data_len, a->codec_kind == CODEC_NULL ? "" : "decompressed ",
                         a->data_off);
            else
                snprintf(where_in, sizeof where_in, "%s", inner.detail);
            if (a->data_off == a->data_len)
                cf_err_set(err, CF_ERR_INVALID, "bad block in Avro object \"%s\": no bytes left for datum %lld of %lld",
                           NAME(a), (long long)a->blk_done + 1, (long long)a->blk_count);
            else
                cf_err_set(err, CF_ERR_INVALID, "bad datum in Avro object \"%s\": %s", NAME(a), inner.message);
            char bl[64];
            blk_label(a, a->blk_no, bl, sizeof bl);
            cf_err_detail(err, "%s; %s at byte %llu; the block's remaining %lld datums are skipped (their "
                               "boundaries are unknown)",
                          where_in, bl, (unsigned long long)a->blk_start, (long long)(a->blk_count - a->blk_done - 1));
            cf_err_where(err, "%s: %s, byte %llu, datum %lld%s%s", NAME(a), bl, (unsigned long long)a->blk_start,
                         (long long)a->blk_done + 1, inner.where[0] ? ", field " : "", inner.where);
            cf_err_hint(err, "%s", a->data_off == a->data_len
                                       ? "The block's datum count is larger than the datums it holds; the file is damaged."
                                       : "The data does not follow the writer schema in the file header; the file is damaged.");
        }
        a->in_block = false;
        a->blk_no++;
        pos->end = a->blk_next;
        pos->end_line = 1;
        return CF_ERR_INVALID;
    }
    a->data_off += used;
    a->blk_done++;
    if (a->blk_done == a->blk_count && a->data_off == a->data_len) {
        pos->end = a->blk_next;
        pos->end_line = 1;
    } else {
        /* datums left, or bytes left after the last one: the next result
         * (a record, or the error about those bytes) is in this block, so
         * a resume comes back here and reports the same */
        pos->end = a->blk_start;
        pos->end_line = (uint64_t)a->blk_done + 1;
    }
    return CF_OK;
}

/* Header, then the resume position (block start + datums of it to skip). */
static cf_code start(cf_avro_extract *a, cf_extract_pos *pos, cf_err *err) {
    a->started = true;
    cf_code rc = read_header(a, pos, err);
    if (rc) return rc;
    a->index = a->start_index;
    if (a->start == 0) return CF_OK;
    if (a->start < a->header_end) {
        cf_err_set(err, CF_ERR_INVALID, "resume position %llu of Avro object \"%s\" is inside its header",
                   (unsigned long long)a->start, NAME(a));
        cf_err_detail(err, "the header ends at byte %llu", (unsigned long long)a->header_end);
        cf_err_where(err, "%s: byte %llu", NAME(a), (unsigned long long)a->start);
        cf_err_hint(err, "The stored offset does not belong to this file; delete the offset to read it again.");
        return fatal(a, pos, err);
    }
    if (a->start <= a->base + a->len) {
        a->off = (size_t)(a->start - a->base);
    } else {
        if ((rc = cf_reader_skip_to(a->r, a->start, err))) return rc;
        a->base = a->start;
        a->off = a->len = 0;
        a->eof = false;
    }
    uint64_t skip = a->start_line > 1 ? a->start_line - 1 : 0;
    if (skip == 0) return CF_OK;
    rc = read_block(a, pos, err);
    if (rc == CF_ERR_EOF || (rc == CF_OK && (uint64_t)a->blk_count < skip)) {
        cf_err_set(err, CF_ERR_INVALID, "resume position of Avro object \"%s\" does not exist", NAME(a));
        cf_err_detail(err, "the offset says %llu datums of the block at byte %llu were read; the block has %lld",
                      (unsigned long long)skip, (unsigned long long)a->start,
                      rc == CF_OK ? (long long)a->blk_count : 0LL);
        cf_err_where(err, "%s: byte %llu", NAME(a), (unsigned long long)a->start);
        cf_err_hint(err, "The stored offset does not belong to this file; delete the offset to read it again.");
        return fatal(a, pos, err);
    }
    if (rc) return rc; /* a damaged block there: reported, reading continues after it */
    for (uint64_t i = 0; i < skip; i++) {
        cf_value *v = NULL;
        uint64_t keep = a->index;
        rc = next_datum(a, &v, pos, err);
        a->index = keep;
        cf_value_destroy(v);
        if (rc) {
            pos->index = a->index++;
            return rc;
        }
    }
    return CF_OK;
}

cf_code cf_avro_extract_new(cf_reader *r, uint64_t start_pos, uint64_t start_index, uint64_t start_line,
                            cf_avro_extract **out, cf_err *err) {
    (void)err;
    cf_avro_extract *a = cf_xcalloc(1, sizeof *a);
    a->r = r;
    a->cap = WIN_INIT;
    a->buf = cf_xmalloc(a->cap);
    a->start = start_pos;
    a->start_index = start_index;
    a->start_line = start_line;
    *out = a;
    return CF_OK;
}

cf_code cf_avro_extract_next(cf_avro_extract *a, cf_schema **schema, cf_value **value, cf_extract_pos *pos,
                             cf_err *err) {
    if (a->finished) return CF_ERR_EOF;
    cf_code rc;
    if (!a->started && (rc = start(a, pos, err))) {
        if (rc != CF_ERR_INVALID) a->finished = true; /* the stream failed: never go on from half a header */
        return rc;
    }
    for (;;) {
        if (a->in_block && a->blk_done < a->blk_count) {
            rc = next_datum(a, value, pos, err);
            if (rc == CF_OK) *schema = cf_schema_ref(a->schema);
            return rc;
        }
        if (a->in_block) {
            a->in_block = false;
            a->blk_no++;
            if (a->data_off != a->data_len) {
                cf_err_set(err, CF_ERR_INVALID, "damaged block in Avro object \"%s\": %zu bytes after its %lld datums",
                           NAME(a), a->data_len - a->data_off, (long long)a->blk_count);
                cf_err_detail(err, "the block's %lld datums were read; the bytes after them are ignored",
                              (long long)a->blk_count);
                char bl[64];
                cf_err_where(err, "%s: %s, byte %llu", NAME(a), blk_label(a, a->blk_no - 1, bl, sizeof bl),
                             (unsigned long long)a->blk_start);
                cf_err_hint(err, "The block's datum count is wrong or the file is damaged.");
                pos->index = a->index++;
                pos->start = a->blk_start;
                pos->line = (uint64_t)a->blk_count + 1;
                pos->end = a->blk_next;
                pos->end_line = 1;
                return CF_ERR_INVALID;
            }
        }
        rc = read_block(a, pos, err);
        if (rc) return rc;
    }
}

void cf_avro_extract_destroy(cf_avro_extract *a) {
    if (!a) return;
    free(a->buf);
    free(a->dbuf);
    if (a->z_init) inflateEnd(&a->z);
    if (a->zs) ZSTD_freeDCtx(a->zs);
    cf_avro_codec_destroy(a->codec);
    cf_schema_unref(a->schema);
    free(a);
}
