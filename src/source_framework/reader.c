/*
 * reader.c - byte streams with optional decompression (see
 * include/cdcflow/source_extract.h).
 *
 * All positions are decompressed bytes. A plain file can seek; a compressed
 * stream can only move forward by decompressing and discarding, which is
 * still far cheaper than re-parsing records. Memory is bounded by one input
 * buffer plus, for snappy, one block (xerial blocks are at most a few MB;
 * framed chunks at most 64 KiB of output).
 */
#include <errno.h>
#include <fcntl.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "cdcflow/buf.h"
#include "cdcflow/source_extract.h"

#define IN_CAP (256 * 1024)
#define SNAPPY_MAX_BLOCK (64u * 1024 * 1024) /* refuse absurd block lengths */

struct cf_reader {
    char *name;
    cf_compression comp;
    int fd;                 /* -1 for memory */
    const uint8_t *mem;     /* memory source */
    size_t mem_len, mem_pos;
    uint64_t raw_pos;       /* compressed bytes consumed from the source */
    uint64_t pos;           /* decompressed position */
    bool eof;
    /* compressed input buffer */
    uint8_t *in;
    size_t in_len, in_off;
    bool src_eof;
    /* decompressors */
    z_stream z;
    bool z_init;
    ZSTD_DStream *zs;
    size_t zs_hint; /* ZSTD_decompressStream's last return: 0 = frame complete */
    /* snappy: decoded block waiting to be handed out */
    uint8_t *blk;
    size_t blk_len, blk_off, blk_cap;
    int snappy_kind; /* 0 unknown yet, 1 xerial, 2 framing */
};

cf_code cf_compression_parse(const char *s, cf_compression *out, cf_err *err) {
    static const char *names[] = {"none", "gzip", "snappy", "zstd"};
    for (int i = 0; i < 4; i++)
        if (s && strcasecmp(s, names[i]) == 0) return *out = (cf_compression)i, CF_OK;
    cf_err_set(err, CF_ERR_CONFIG, "invalid compression type \"%s\"", s ? s : "");
    cf_err_hint(err, "Use one of: none, gzip, snappy, zstd.");
    return CF_ERR_CONFIG;
}

static cf_reader *reader_new(const char *name, cf_compression c) {
    cf_reader *r = cf_xcalloc(1, sizeof *r);
    r->name = cf_xstrdup(name);
    r->comp = c;
    r->fd = -1;
    if (c != CF_COMPRESSION_NONE) r->in = cf_xmalloc(IN_CAP);
    if (c == CF_COMPRESSION_GZIP) {
        /* 16 + MAX_WBITS: gzip wrapper; members are concatenated (see refill) */
        if (inflateInit2(&r->z, 16 + MAX_WBITS) == Z_OK) r->z_init = true;
    } else if (c == CF_COMPRESSION_ZSTD) {
        r->zs = ZSTD_createDStream();
        ZSTD_initDStream(r->zs);
    }
    return r;
}

cf_code cf_reader_open_file(const char *path, cf_compression c, cf_reader **out, cf_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cf_err_set(err, CF_ERR_IO, "could not open \"%s\": %s", path, strerror(errno));
        return CF_ERR_IO;
    }
    cf_reader *r = reader_new(path, c);
    r->fd = fd;
    *out = r;
    return CF_OK;
}

cf_code cf_reader_open_mem(const void *data, size_t len, const char *name, cf_compression c, cf_reader **out,
                           cf_err *err) {
    (void)err;
    cf_reader *r = reader_new(name ? name : "(memory)", c);
    r->mem = data;
    r->mem_len = len;
    *out = r;
    return CF_OK;
}

const char *cf_reader_name(const cf_reader *r) { return r->name; }
uint64_t cf_reader_position(const cf_reader *r) { return r->pos; }

void cf_reader_close(cf_reader *r) {
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    if (r->z_init) inflateEnd(&r->z);
    if (r->zs) ZSTD_freeDStream(r->zs);
    free(r->in);
    free(r->blk);
    free(r->name);
    free(r);
}

/* Raw (source) read. */
static cf_code src_read(cf_reader *r, void *buf, size_t cap, size_t *n, cf_err *err) {
    if (r->fd < 0) {
        size_t k = r->mem_len - r->mem_pos;
        if (k > cap) k = cap;
        memcpy(buf, r->mem + r->mem_pos, k);
        r->mem_pos += k;
        *n = k;
    } else {
        ssize_t k;
        do k = read(r->fd, buf, cap);
        while (k < 0 && errno == EINTR);
        if (k < 0) {
            cf_err_set(err, CF_ERR_IO, "could not read \"%s\": %s", r->name, strerror(errno));
            cf_err_where(err, "%s:%llu", r->name, (unsigned long long)r->raw_pos);
            return CF_ERR_IO;
        }
        *n = (size_t)k;
    }
    r->raw_pos += *n;
    return CF_OK;
}

/* Make sure at least `need` compressed bytes are buffered (fewer at EOF). */
static cf_code fill(cf_reader *r, size_t need, cf_err *err) {
    if (r->in_len - r->in_off >= need || r->src_eof) return CF_OK;
    memmove(r->in, r->in + r->in_off, r->in_len - r->in_off);
    r->in_len -= r->in_off;
    r->in_off = 0;
    while (r->in_len < need && !r->src_eof) {
        size_t n;
        cf_code rc = src_read(r, r->in + r->in_len, IN_CAP - r->in_len, &n, err);
        if (rc) return rc;
        if (n == 0) r->src_eof = true;
        r->in_len += n;
    }
    return CF_OK;
}

static cf_code corrupt(cf_reader *r, cf_err *err, const char *what) {
    cf_err_set(err, CF_ERR_CORRUPT, "corrupt %s data in \"%s\": %s",
               r->comp == CF_COMPRESSION_GZIP ? "gzip" : r->comp == CF_COMPRESSION_ZSTD ? "zstd" : "snappy", r->name,
               what);
    cf_err_where(err, "%s: compressed byte %llu", r->name, (unsigned long long)(r->raw_pos - (r->in_len - r->in_off)));
    cf_err_hint(err, "Check file.compression.type matches how the object was written.");
    return CF_ERR_CORRUPT;
}

static cf_code read_gzip(cf_reader *r, uint8_t *buf, size_t cap, size_t *n, cf_err *err) {
    *n = 0;
    while (*n == 0) {
        cf_code rc = fill(r, 1, err);
        if (rc) return rc;
        if (r->in_off == r->in_len) {
            if (r->z.total_in != 0 && r->z_init) return corrupt(r, err, "the stream ends in the middle of a member");
            r->eof = true;
            return CF_OK;
        }
        r->z.next_in = r->in + r->in_off;
        r->z.avail_in = (uInt)(r->in_len - r->in_off);
        r->z.next_out = buf;
        r->z.avail_out = (uInt)cap;
        int zr = inflate(&r->z, Z_NO_FLUSH);
        r->in_off = r->in_len - r->z.avail_in;
        *n = cap - r->z.avail_out;
        if (zr == Z_STREAM_END) {
            /* concatenated gzip members (as `cat a.gz b.gz`) continue */
            inflateReset(&r->z);
            r->z.total_in = 0;
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            return corrupt(r, err, r->z.msg ? r->z.msg : "inflate failed");
        } else if (zr == Z_BUF_ERROR && *n == 0 && r->src_eof && r->in_off == r->in_len) {
            return corrupt(r, err, "the stream is truncated");
        }
    }
    return CF_OK;
}

static cf_code read_zstd(cf_reader *r, uint8_t *buf, size_t cap, size_t *n, cf_err *err) {
    *n = 0;
    while (*n == 0) {
        cf_code rc = fill(r, 1, err);
        if (rc) return rc;
        if (r->in_off == r->in_len) {
            if (r->zs_hint != 0) return corrupt(r, err, "the stream is truncated");
            r->eof = true;
            return CF_OK;
        }
        ZSTD_inBuffer in = {r->in + r->in_off, r->in_len - r->in_off, 0};
        ZSTD_outBuffer out = {buf, cap, 0};
        size_t last = ZSTD_decompressStream(r->zs, &out, &in);
        if (ZSTD_isError(last)) return corrupt(r, err, ZSTD_getErrorName(last));
        r->zs_hint = last;
        r->in_off += in.pos;
        *n = out.pos;
    }
    return CF_OK;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Decode the next snappy block into r->blk. Formats:
 *  xerial (snappy-java SnappyOutputStream, what Kafka Connect sinks write):
 *    magic 82 53 4e 41 50 50 59 00, int32 version, int32 compatible version,
 *    then blocks of int32 BE length + raw snappy block;
 *  framing format (google/snappy framing_format.txt): chunks of
 *    type(1) + length(3, LE); ff = stream identifier "sNaPpY", 00 = compressed
 *    (4-byte masked CRC32C + raw block), 01 = uncompressed (CRC + bytes),
 *    02-7f reserved unskippable, 80-fe skippable. CRCs are not verified. */
static cf_code snappy_next_block(cf_reader *r, cf_err *err) {
    static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
    for (;;) {
        cf_code rc = fill(r, 16, err);
        if (rc) return rc;
        size_t avail = r->in_len - r->in_off;
        const uint8_t *p = r->in + r->in_off;
        if (avail == 0) {
            r->eof = true;
            return CF_OK;
        }
        if (r->snappy_kind == 0) {
            if (avail >= 16 && memcmp(p, xerial_magic, 8) == 0) {
                r->snappy_kind = 1;
                r->in_off += 16;
                continue;
            }
            if (avail >= 10 && p[0] == 0xff && memcmp(p + 4, "sNaPpY", 6) == 0) {
                r->snappy_kind = 2;
                continue;
            }
            return corrupt(r, err, "neither the snappy-java stream header nor the snappy framing format header");
        }
        if (r->snappy_kind == 1 && avail >= 8 && memcmp(p, xerial_magic, 8) == 0) {
            r->in_off += 16; /* concatenated xerial streams */
            continue;
        }
        size_t hdr = r->snappy_kind == 1 ? 4 : 4;
        if (avail < hdr) return corrupt(r, err, "truncated block header");
        size_t len;
        int type = 0;
        if (r->snappy_kind == 1) {
            len = be32(p);
        } else {
            type = p[0];
            len = (size_t)p[1] | (size_t)p[2] << 8 | (size_t)p[3] << 16;
        }
        if (len > SNAPPY_MAX_BLOCK) return corrupt(r, err, "impossible block length");
        rc = fill(r, hdr + len, err);
        if (rc) return rc;
        if (r->in_len - r->in_off < hdr + len) {
            /* block larger than the buffer: grow it once (bounded above) */
            if (hdr + len > IN_CAP) {
                uint8_t *big = cf_xmalloc(hdr + len);
                size_t have = r->in_len - r->in_off;
                memcpy(big, r->in + r->in_off, have);
                while (have < hdr + len) {
                    size_t n;
                    rc = src_read(r, big + have, hdr + len - have, &n, err);
                    if (rc) return free(big), rc;
                    if (n == 0) return free(big), corrupt(r, err, "truncated block");
                    have += n;
                }
                r->in_off = r->in_len = 0;
                const uint8_t *body = big + hdr;
                size_t ulen;
                if (snappy_uncompressed_length((const char *)body, len, &ulen) != SNAPPY_OK || ulen > SNAPPY_MAX_BLOCK) {
                    free(big);
                    return corrupt(r, err, "bad block");
                }
                if (ulen > r->blk_cap) r->blk = cf_xrealloc(r->blk, r->blk_cap = ulen);
                if (snappy_uncompress((const char *)body, len, (char *)r->blk, &ulen) != SNAPPY_OK) {
                    free(big);
                    return corrupt(r, err, "bad block");
                }
                free(big);
                r->blk_len = ulen, r->blk_off = 0;
                return CF_OK;
            }
            return corrupt(r, err, "truncated block");
        }
        const uint8_t *body = p + hdr;
        r->in_off += hdr + len;
        if (r->snappy_kind == 2) {
            if (type == 0xff) continue;                /* stream identifier again */
            if (type >= 0x80) continue;                /* skippable */
            if (type != 0x00 && type != 0x01) return corrupt(r, err, "reserved unskippable chunk type");
            if (len < 4) return corrupt(r, err, "chunk shorter than its checksum");
            body += 4, len -= 4;
            if (type == 0x01) {
                if (len > r->blk_cap) r->blk = cf_xrealloc(r->blk, r->blk_cap = len);
                memcpy(r->blk, body, len);
                r->blk_len = len, r->blk_off = 0;
                return CF_OK;
            }
        }
        size_t ulen;
        if (snappy_uncompressed_length((const char *)body, len, &ulen) != SNAPPY_OK || ulen > SNAPPY_MAX_BLOCK)
            return corrupt(r, err, "bad block length");
        if (ulen > r->blk_cap) r->blk = cf_xrealloc(r->blk, r->blk_cap = ulen ? ulen : 1);
        if (snappy_uncompress((const char *)body, len, (char *)r->blk, &ulen) != SNAPPY_OK)
            return corrupt(r, err, "bad block");
        r->blk_len = ulen, r->blk_off = 0;
        return CF_OK;
    }
}

static cf_code read_snappy(cf_reader *r, uint8_t *buf, size_t cap, size_t *n, cf_err *err) {
    *n = 0;
    while (r->blk_off == r->blk_len) {
        cf_code rc = snappy_next_block(r, err);
        if (rc) return rc;
        if (r->eof) return CF_OK;
    }
    size_t k = r->blk_len - r->blk_off;
    if (k > cap) k = cap;
    memcpy(buf, r->blk + r->blk_off, k);
    r->blk_off += k;
    *n = k;
    return CF_OK;
}

cf_code cf_reader_read(cf_reader *r, void *buf, size_t cap, size_t *n, cf_err *err) {
    *n = 0;
    if (r->eof || cap == 0) return CF_OK;
    cf_code rc;
    switch (r->comp) {
    case CF_COMPRESSION_GZIP:
        if (!r->z_init) return cf_err_set(err, CF_ERR_NOMEM, "could not initialise zlib");
        rc = read_gzip(r, buf, cap, n, err);
        break;
    case CF_COMPRESSION_ZSTD: rc = read_zstd(r, buf, cap, n, err); break;
    case CF_COMPRESSION_SNAPPY: rc = read_snappy(r, buf, cap, n, err); break;
    default:
        rc = src_read(r, buf, cap, n, err);
        if (!rc && *n == 0) r->eof = true;
        break;
    }
    r->pos += *n;
    return rc;
}

cf_code cf_reader_skip_to(cf_reader *r, uint64_t pos, cf_err *err) {
    if (pos < r->pos) {
        cf_err_set(err, CF_ERR_INVALID, "cannot move back in \"%s\" from byte %llu to %llu", r->name,
                   (unsigned long long)r->pos, (unsigned long long)pos);
        return CF_ERR_INVALID;
    }
    if (r->comp == CF_COMPRESSION_NONE) {
        if (r->fd >= 0) {
            if (lseek(r->fd, (off_t)pos, SEEK_SET) < 0) {
                cf_err_set(err, CF_ERR_IO, "could not seek in \"%s\": %s", r->name, strerror(errno));
                return CF_ERR_IO;
            }
        } else {
            r->mem_pos = pos > r->mem_len ? r->mem_len : (size_t)pos;
        }
        r->pos = r->raw_pos = pos;
        return CF_OK;
    }
    uint8_t tmp[65536];
    while (r->pos < pos) {
        size_t want = pos - r->pos > sizeof tmp ? sizeof tmp : (size_t)(pos - r->pos), n;
        cf_code rc = cf_reader_read(r, tmp, want, &n, err);
        if (rc) return rc;
        if (n == 0) {
            cf_err_set(err, CF_ERR_INVALID, "\"%s\" ends at byte %llu, before the resume position %llu", r->name,
                       (unsigned long long)r->pos, (unsigned long long)pos);
            cf_err_hint(err, "The object was replaced by a shorter one; it will be read again from the start.");
            return CF_ERR_INVALID;
        }
    }
    return CF_OK;
}
