/*
 * segment.c - Cassandra commit log segments: header, sync sections, entries
 * (see include/cdcflow/cassandra_log.h for the format and the error rules).
 *
 * Format sources (apache/cassandra): CommitLogDescriptor (header),
 * CommitLogSegment / CommitLogSegmentReader (sync markers, segmenters),
 * CommitLogReader.readSection (entries), CompressedSegment, EncryptedSegment
 * and security/EncryptionUtils (section bodies), the io/compress compressor classes
 * (block formats).
 *
 * A live segment (one Cassandra may still write: cdc_raw followed through its
 * index) is read one sync section at a time with pread() into a buffer the
 * reader reuses, its length measured again before each section, so memory is
 * one section however large the file is. A complete segment (its index says
 * COMPLETED, or the caller says so: an offline read) does not change: it is
 * read ahead in blocks of READ_AHEAD_BYTES into one window, its length
 * measured once, so a section costs no system call unless it crosses the
 * window's end (see window()). Memory then: the window, max(1 MiB, the
 * largest section).
 */
#include "cdcflow/cassandra_log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <lz4.h>
#include <openssl/evp.h>
#include <snappy-c.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "cdcflow/buf.h"
#include "cdcflow/text.h"
#include "crc32_fast.h"

#define SYNC_MARKER_SIZE 8
#define ENTRY_OVERHEAD 12
#define CRC_AHEAD 32
/* Largest uncompressed section we accept. Cassandra's sections are at most one
 * segment (commitlog_segment_size, 32 MiB by default, must be < 2 GiB); the
 * cap keeps a damaged length field from making us allocate gigabytes. */
#define MAX_SECTION_BYTES (512u * 1024u * 1024u)
/* Read-ahead block of a complete segment (cf_cass_segment_opts.read_ahead) */
#define READ_AHEAD_BYTES ((size_t)1 << 20)

struct cf_cass_segment {
    char *path;  /* NULL for memory segments */
    char *name;  /* the file name without directories */
    char *label; /* what errors name: the path as opened (the name for memory segments) */
    int fd;
    const uint8_t *mem;
    size_t mem_len;
    cf_cass_segment_info info;
    uint8_t key[32];
    size_t key_len;
    int64_t limit;
    cf_cass_segment_stats stats;
    /* a complete file: raw is a read-ahead window of file bytes
     * [win_off, win_off + win_len), the length measured once */
    bool complete;
    int64_t complete_len;
    int64_t win_off;
    size_t win_len;
    size_t read_ahead;
    uint32_t id_crc; /* CRC state after the id's two ints: markers add their offset */
    bool clmul;      /* entry CRCs with PCLMULQDQ */

    /* position of the next sync marker (file offset), logical start for compressed */
    int64_t next_marker;
    int64_t next_logical;
    bool done;
    /* limit is the offset of the segment's _cdc.idx (cf_cass_segment_set_cdc_index) */
    bool cdc, cdc_completed;

    /* current section */
    bool in_section;
    bool section_truncated;
    bool sec_reported;      /* an error was reported since the section was loaded */
    int64_t sec_marker_end; /* where the section's marker says it ends (the file may end before) */
    uint8_t *raw;     /* file bytes of the section (reused), the window of a complete file */
    size_t raw_cap;
    uint8_t *plain;   /* uncompressed bytes (reused; == raw for plain segments) */
    size_t plain_cap;
    const uint8_t *sec;
    size_t sec_len;
    size_t sec_pos;
    int64_t sec_logical; /* logical position of sec[0] */
    int64_t sec_file;    /* file offset of the section's marker */

    /* data CRCs of the next entries of the section, computed in one loop
     * ahead of their use (see crc_ahead) */
    size_t ahead_pos[CRC_AHEAD]; /* sec_pos of the entry */
    uint32_t ahead_crc[CRC_AHEAD];
    unsigned ahead_n, ahead_i;
};

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* CRC-32 as java.util.zip.CRC32 / zlib crc32() (see crc32_fast.h for why
 * not zlib's own): carry-less multiply where the CPU has it, chosen once per
 * segment, otherwise slicing-by-8. */
static uint32_t crc_update_s(const cf_cass_segment *s, uint32_t crc, const uint8_t *p, size_t n) {
#ifdef CF_CASS_CRC32_HAVE_CLMUL
    if (s->clmul) return cf_cass_crc32_clmul(crc, p, n);
#endif
    (void)s;
    return cf_cass_crc32_table(crc, p, n);
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n) { return cf_cass_crc32_table(crc, p, n); }

static uint32_t crc_int(uint32_t crc, uint32_t v) {
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    return crc_update(crc, b, 4);
}

const char *cf_cass_compression_name(cf_cass_compression c) {
    switch (c) {
    case CF_CASS_COMP_NONE: return "none";
    case CF_CASS_COMP_LZ4: return "lz4";
    case CF_CASS_COMP_SNAPPY: return "snappy";
    case CF_CASS_COMP_DEFLATE: return "deflate";
    case CF_CASS_COMP_ZSTD: return "zstd";
    }
    return "?";
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

bool cf_cass_segment_name_parse(const char *path, int32_t *version, int64_t *id) {
    const char *b = base_name(path);
    if (strncmp(b, "CommitLog-", 10) != 0) return false;
    const char *p = b + 10;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || *end != '-' || errno) return false;
    p = end + 1;
    long long i = strtoll(p, &end, 10);
    if (end == p || strcmp(end, ".log") != 0 || errno) return false;
    if (version) *version = (int32_t)v;
    if (id) *id = (int64_t)i;
    return true;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static cf_code parse_params(cf_cass_segment_info *out, const char *name, cf_err *err) {
    json_error_t jerr;
    json_t *root = json_loads(out->params, 0, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        cf_err_set(err, CF_ERR_CORRUPT, "commit log segment %s: header parameters are not a JSON object", name);
        cf_err_detail(err, "%s: %.200s", jerr.text, out->params);
        cf_err_where(err, "%s@14", name);
        return CF_ERR_CORRUPT;
    }
    cf_code rc = CF_OK;
    const char *cls = json_string_value(json_object_get(root, "compressionClass"));
    if (cls) {
        const char *short_name = strrchr(cls, '.');
        short_name = short_name ? short_name + 1 : cls;
        if (strcmp(short_name, "LZ4Compressor") == 0)
            out->compression = CF_CASS_COMP_LZ4;
        else if (strcmp(short_name, "SnappyCompressor") == 0)
            out->compression = CF_CASS_COMP_SNAPPY;
        else if (strcmp(short_name, "DeflateCompressor") == 0)
            out->compression = CF_CASS_COMP_DEFLATE;
        else if (strcmp(short_name, "ZstdCompressor") == 0)
            out->compression = CF_CASS_COMP_ZSTD;
        else {
            rc = cf_err_set(err, CF_ERR_UNSUPPORTED, "commit log segment %s: unsupported compression class", name);
            cf_err_detail(err, "compressionClass is \"%s\"", cls);
            cf_err_hint(err, "Supported: LZ4Compressor, SnappyCompressor, DeflateCompressor, ZstdCompressor.");
            cf_err_where(err, "%s@14", name);
        }
    }
    const char *cipher = json_string_value(json_object_get(root, "encCipher"));
    if (rc == CF_OK && cipher) {
        out->encrypted = true;
        snprintf(out->cipher, sizeof out->cipher, "%s", cipher);
        const char *alias = json_string_value(json_object_get(root, "encKeyAlias"));
        snprintf(out->key_alias, sizeof out->key_alias, "%s", alias ? alias : "");
        const char *iv = json_string_value(json_object_get(root, "encIV"));
        size_t n = iv ? strlen(iv) : 0;
        if (strcmp(cipher, "AES/CBC/PKCS5Padding") != 0) {
            rc = cf_err_set(err, CF_ERR_UNSUPPORTED, "commit log segment %s: unsupported cipher", name);
            cf_err_detail(err, "encCipher is \"%s\"", cipher);
            cf_err_hint(err, "Cassandra's transparent data encryption writes AES/CBC/PKCS5Padding; only that is supported.");
            cf_err_where(err, "%s@14", name);
        } else if (n != 32) {
            rc = cf_err_set(err, CF_ERR_CORRUPT, "commit log segment %s: encIV is not 16 bytes of hex", name);
            cf_err_detail(err, "encIV is \"%s\"", iv ? iv : "(absent)");
            cf_err_where(err, "%s@14", name);
        } else {
            for (size_t i = 0; i < 16; i++) {
                int hi = hexval(iv[2 * i]), lo = hexval(iv[2 * i + 1]);
                if (hi < 0 || lo < 0) {
                    rc = cf_err_set(err, CF_ERR_CORRUPT, "commit log segment %s: encIV is not hex", name);
                    cf_err_detail(err, "encIV is \"%s\"", iv);
                    cf_err_where(err, "%s@14", name);
                    break;
                }
                out->iv[i] = (uint8_t)(hi << 4 | lo);
            }
            out->iv_len = 16;
        }
    }
    json_decref(root);
    return rc;
}

cf_code cf_cass_header_parse(const uint8_t *p, size_t len, const char *name, cf_cass_segment_info *out,
                             cf_err *err) {
    memset(out, 0, offsetof(cf_cass_segment_info, params)); /* params is 64 KiB: set below */
    out->params[0] = 0;
    memset(&out->compression, 0, sizeof *out - offsetof(cf_cass_segment_info, compression));
    if (len < 4) return cf_err_set(err, CF_ERR_EOF, "commit log segment %s: header not complete yet", name);
    int32_t version = (int32_t)be32(p);
    if (version < CF_CASS_LOG_VERSION_30) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "commit log segment %s: version %d is too old", name, version);
        cf_err_detail(err, "versions below 6 were written by Cassandra 2.x with the pre-3.0 storage engine");
        cf_err_hint(err, "Only commit logs of Cassandra 3.0 and later (versions 6, 7, 8) can be read; "
                         "replay old segments with the Cassandra version that wrote them.");
        cf_err_where(err, "%s@0", name);
        return CF_ERR_UNSUPPORTED;
    }
    if (version > CF_CASS_LOG_VERSION_50) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "commit log segment %s: version %d is not supported", name, version);
        cf_err_detail(err, "supported versions are 6 (3.0/3.11), 7 (4.0/4.1/5.0) and 8 (5.0 without storage compatibility)");
        cf_err_hint(err, "Version 9 is written by Cassandra 5.1/trunk with transactional metadata; it is not supported yet.");
        cf_err_where(err, "%s@0", name);
        return CF_ERR_UNSUPPORTED;
    }
    if (len < 14) return cf_err_set(err, CF_ERR_EOF, "commit log segment %s: header not complete yet", name);
    int64_t id = (int64_t)((uint64_t)be32(p + 4) << 32 | be32(p + 8));
    size_t plen = (size_t)p[12] << 8 | p[13];
    if (len < 14 + plen + 4) return cf_err_set(err, CF_ERR_EOF, "commit log segment %s: header not complete yet", name);
    uint32_t crc = 0;
    crc = crc_int(crc, (uint32_t)version);
    crc = crc_int(crc, (uint32_t)((uint64_t)id & 0xffffffffu));
    crc = crc_int(crc, (uint32_t)((uint64_t)id >> 32));
    crc = crc_int(crc, (uint32_t)plen);
    crc = (uint32_t)crc32(crc, p + 14, (uInt)plen);
    uint32_t stored = be32(p + 14 + plen);
    if (crc != stored) {
        cf_err_set(err, CF_ERR_CORRUPT, "commit log segment %s: header checksum mismatch", name);
        cf_err_detail(err, "stored CRC32 0x%08x, computed 0x%08x over version %d, id %lld and %zu parameter bytes",
                      stored, crc, version, (long long)id, plen);
        cf_err_hint(err, "The segment header is damaged, so nothing in this file can be trusted; Cassandra refuses it too.");
        cf_err_where(err, "%s@%zu", name, 14 + plen);
        return CF_ERR_CORRUPT;
    }
    out->version = version;
    out->messaging_version = version == 6 ? 10 : version == 7 ? 12 : 13;
    out->id = id;
    memcpy(out->params, p + 14, plen);
    out->params[plen] = 0;
    out->header_size = 14 + plen + 4;
    return parse_params(out, name, err);
}

/* ---------------- reading bytes ---------------- */

static int64_t file_len(cf_cass_segment *s) {
    if (!s->path) return (int64_t)s->mem_len;
    if (s->complete) return s->complete_len;
    struct stat st;
    if (fstat(s->fd, &st) != 0) return -1;
    return (int64_t)st.st_size;
}

static ssize_t pread_full(int fd, int64_t off, uint8_t *dst, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, dst + got, n - got, (off_t)(off + (int64_t)got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* The n file bytes at off of a complete file, in the window: *got of them
 * (fewer at the end of the file). When they are not all in the window, the
 * window moves to off: the bytes from off on it already holds are kept, the
 * rest read in one pread() of max(n, read_ahead) bytes in all (up to the end
 * of the file), the buffer grown (only) when n is larger. So a section costs
 * a system call only when it crosses the window's end, and then it is read
 * whole: a section that straddles two blocks is never split. NULL: a read
 * error (errno set; the window is emptied). */
static const uint8_t *window(cf_cass_segment *s, int64_t off, size_t n, size_t *got) {
    *got = 0;
    if (off < 0 || off >= s->complete_len) return (const uint8_t *)"";
    if ((uint64_t)n > (uint64_t)(s->complete_len - off)) n = (size_t)(s->complete_len - off);
    int64_t wend = s->win_off + (int64_t)s->win_len;
    if (off >= s->win_off && off + (int64_t)n <= wend) {
        *got = n;
        return s->raw + (off - s->win_off);
    }
    size_t want = n > s->read_ahead ? n : s->read_ahead;
    if ((uint64_t)want > (uint64_t)(s->complete_len - off)) want = (size_t)(s->complete_len - off);
    size_t keep = off >= s->win_off && off < wend ? (size_t)(wend - off) : 0;
    if (keep && off != s->win_off) memmove(s->raw, s->raw + (off - s->win_off), keep);
    if (want > s->raw_cap) { /* realloc: a large block grows in place (mremap), no second copy held */
        s->raw = cf_xrealloc(s->raw, want);
        s->raw_cap = want;
    }
    ssize_t r = pread_full(s->fd, off + (int64_t)keep, s->raw + keep, want - keep);
    if (r < 0) {
        s->win_len = 0;
        return NULL;
    }
    s->win_off = off;
    s->win_len = keep + (size_t)r;
    *got = s->win_len < n ? s->win_len : n;
    return s->raw;
}

/* Read exactly n bytes at off; returns bytes read (less at EOF), -1 on error. */
static ssize_t read_at(cf_cass_segment *s, int64_t off, void *dst, size_t n) {
    if (s->complete) {
        size_t got;
        const uint8_t *p = window(s, off, n, &got);
        if (!p) return -1;
        memcpy(dst, p, got);
        return (ssize_t)got;
    }
    if (!s->path) {
        if (off < 0 || (uint64_t)off >= s->mem_len) return 0;
        size_t avail = s->mem_len - (size_t)off;
        if (n > avail) n = avail;
        memcpy(dst, s->mem + off, n);
        return (ssize_t)n;
    }
    return pread_full(s->fd, off, dst, n);
}

static uint8_t *ensure(uint8_t **buf, size_t *cap, size_t n) {
    if (n > *cap) {
        size_t c = *cap ? *cap : 65536;
        while (c < n) c *= 2;
        free(*buf);
        *buf = cf_xmalloc(c);
        *cap = c;
    }
    return *buf;
}

static cf_code io_error(cf_cass_segment *s, int64_t off, cf_err *err) {
    int e = errno;
    cf_err_set(err, CF_ERR_IO, "cannot read commit log segment %s", s->label);
    cf_err_detail(err, "%s", strerror(e));
    cf_err_where(err, "%s@%lld", s->label, (long long)off);
    return CF_ERR_IO;
}

/* ---------------- open / close ---------------- */

static cf_code open_common(cf_cass_segment *s, const cf_cass_segment_opts *opts, cf_err *err) {
    uint8_t head[14 + 65535 + 4];
    /* read the fixed part first, then only as many parameter bytes as announced */
    ssize_t n = read_at(s, 0, head, 14);
    if (n == 14) {
        size_t want = 14 + ((size_t)head[12] << 8 | head[13]) + 4;
        ssize_t m = read_at(s, 14, head + 14, want - 14);
        n = m < 0 ? m : 14 + m;
    }
    if (n < 0) return io_error(s, 0, err);
    cf_code rc = cf_cass_header_parse(head, (size_t)n, s->label, &s->info, err);
    if (rc == CF_ERR_EOF) {
        cf_err_set(err, CF_ERR_CORRUPT, "commit log segment %s: file too short for a segment header", s->label);
        cf_err_detail(err, "%zd bytes", n);
        cf_err_hint(err, "The file is truncated, or Cassandra is still creating it: retry later.");
        cf_err_where(err, "%s@%zd", s->label, n);
        return CF_ERR_CORRUPT;
    }
    if (rc) return rc;
    int32_t fv;
    int64_t fid;
    if (s->path && cf_cass_segment_name_parse(s->name, &fv, &fid) && (fv != s->info.version || fid != s->info.id)) {
        cf_err_set(err, CF_ERR_CORRUPT, "commit log segment %s: header does not match the file name", s->label);
        cf_err_detail(err, "header says version %d id %lld", s->info.version, (long long)s->info.id);
        cf_err_hint(err, "The file was renamed or its header belongs to another segment.");
        cf_err_where(err, "%s@0", s->label);
        return CF_ERR_CORRUPT;
    }
    if (s->info.encrypted) {
        if (!opts || !opts->key || !(opts->key_len == 16 || opts->key_len == 24 || opts->key_len == 32)) {
            cf_err_set(err, CF_ERR_CONFIG, "commit log segment %s is encrypted and no usable key was given", s->label);
            cf_err_detail(err, "cipher %s, key alias \"%s\"%s", s->info.cipher, s->info.key_alias,
                          opts && opts->key ? ", the key given is not 16, 24 or 32 bytes" : "");
            cf_err_hint(err, "Pass the AES key of alias \"%s\" as hex in a file (--key-file).", s->info.key_alias);
            cf_err_where(err, "%s@0", s->label);
            return CF_ERR_CONFIG;
        }
        memcpy(s->key, opts->key, opts->key_len);
        s->key_len = opts->key_len;
    }
    s->read_ahead = opts && opts->read_ahead ? opts->read_ahead : READ_AHEAD_BYTES;
    uint32_t c = 0;
    c = crc_int(c, (uint32_t)((uint64_t)s->info.id & 0xffffffffu));
    c = crc_int(c, (uint32_t)((uint64_t)s->info.id >> 32));
    s->id_crc = c;
#ifdef CF_CASS_CRC32_HAVE_CLMUL
    s->clmul = cf_cass_crc32_clmul_usable();
#endif
    s->next_marker = (int64_t)s->info.header_size;
    s->next_logical = (int64_t)s->info.header_size;
    s->limit = -1;
    return CF_OK;
}

cf_code cf_cass_key_file_read(const char *path, uint8_t key[32], size_t *len, cf_err *err) {
    FILE *f = fopen(path, "r");
    if (!f) {
        cf_err_set(err, CF_ERR_CONFIG, "cannot open key file %s", path);
        cf_err_detail(err, "%s", strerror(errno));
        return CF_ERR_CONFIG;
    }
    char buf[512];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t k = 0;
    int hi = -1;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t') continue;
        int v = cf_hex_digit((unsigned char)buf[i]);
        if (v < 0 || k >= 32) {
            cf_err_set(err, CF_ERR_CONFIG, "key file %s is not 16, 24 or 32 bytes of hex", path);
            cf_err_hint(err, "Write the raw AES key as hex, e.g. b7d96fb9b11d829179aeeb0b4e81f97a.");
            return CF_ERR_CONFIG;
        }
        if (hi < 0) {
            hi = v;
        } else {
            key[k++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    if (hi >= 0 || !(k == 16 || k == 24 || k == 32)) {
        cf_err_set(err, CF_ERR_CONFIG, "key file %s holds %zu bytes; AES keys are 16, 24 or 32 bytes of hex", path, k);
        return CF_ERR_CONFIG;
    }
    *len = k;
    return CF_OK;
}

static const char *file_kind(unsigned mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

/* Open a file the reader reads (a segment, an index) without blocking on a
 * FIFO (O_NONBLOCK: a FIFO named like a segment would wait for a writer
 * forever) and refuse anything but a regular file, saying what it is. */
static int open_regular(const char *path, const char *what, cf_err *err, cf_code *rc) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        *rc = cf_err_set(err, e == ENOENT ? CF_ERR_NOT_FOUND : CF_ERR_IO, "cannot open %s %s", what, path);
        cf_err_detail(err, "%s", strerror(e));
        cf_err_where(err, "%s", path);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        *rc = cf_err_set(err, CF_ERR_IO, "cannot inspect %s %s", what, path);
        cf_err_detail(err, "%s", strerror(e));
        cf_err_where(err, "%s", path);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        *rc = cf_err_set(err, CF_ERR_INVALID, "%s %s is not a regular file", what, path);
        cf_err_detail(err, "found %s", file_kind((unsigned)st.st_mode));
        cf_err_hint(err, "Cassandra writes commit log segments and their indexes as regular files; remove or "
                         "rename what is in this one's place.");
        cf_err_where(err, "%s", path);
        return -1;
    }
    return fd;
}

cf_code cf_cass_segment_open(const char *path, const cf_cass_segment_opts *opts, cf_cass_segment **out,
                             cf_err *err) {
    *out = NULL;
    cf_code orc = CF_OK;
    int fd = open_regular(path, "commit log segment", err, &orc);
    if (fd < 0) return orc;
    cf_cass_segment *s = cf_xcalloc(1, sizeof *s);
    s->fd = fd;
    s->path = cf_xstrdup(path);
    s->name = cf_xstrdup(base_name(path));
    s->label = cf_xstrdup(path);
    cf_code rc = open_common(s, opts, err);
    if (rc) {
        cf_cass_segment_destroy(s);
        return rc;
    }
    *out = s;
    return CF_OK;
}

cf_code cf_cass_segment_open_mem(const uint8_t *data, size_t len, const char *name,
                                 const cf_cass_segment_opts *opts, cf_cass_segment **out, cf_err *err) {
    cf_cass_segment *s = cf_xcalloc(1, sizeof *s);
    s->fd = -1;
    s->mem = data;
    s->mem_len = len;
    s->name = cf_xstrdup(name ? name : "(memory)");
    s->label = cf_xstrdup(s->name);
    cf_code rc = open_common(s, opts, err);
    if (rc) {
        cf_cass_segment_destroy(s);
        *out = NULL;
        return rc;
    }
    *out = s;
    return CF_OK;
}

void cf_cass_segment_destroy(cf_cass_segment *s) {
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    if (s->plain != s->raw) free(s->plain);
    free(s->raw);
    free(s->path);
    free(s->name);
    free(s->label);
    free(s);
}

const cf_cass_segment_info *cf_cass_segment_get_info(const cf_cass_segment *s) { return &s->info; }
const char *cf_cass_segment_name(const cf_cass_segment *s) { return s->name; }
const char *cf_cass_segment_path(const cf_cass_segment *s) { return s->label; }
const cf_cass_segment_stats *cf_cass_segment_get_stats(const cf_cass_segment *s) { return &s->stats; }
void cf_cass_segment_set_limit(cf_cass_segment *s, int64_t logical_limit) { s->limit = logical_limit; }
void cf_cass_segment_set_cdc_index(cf_cass_segment *s, int64_t offset, bool completed) {
    s->cdc = true;
    s->cdc_completed = completed;
    s->limit = offset < 0 ? 0 : offset;
    if (completed) cf_cass_segment_set_complete(s);
}
void cf_cass_segment_set_complete(cf_cass_segment *s) {
    if (!s->path || s->complete) return;
    struct stat st;
    if (fstat(s->fd, &st) != 0) return; /* stays live: the next read reports the error */
    /* the section being read (if any) stays in raw until the next is loaded */
    s->complete = true;
    s->complete_len = (int64_t)st.st_size;
    s->win_off = 0;
    s->win_len = 0;
}

/* ---------------- sections ---------------- */

static bool marker_valid(const cf_cass_segment *s, int64_t off, const uint8_t m[8], int64_t flen) {
    uint32_t end = be32(m);
    return crc_int(s->id_crc, (uint32_t)off) == be32(m + 4) && (int64_t)end >= off + SYNC_MARKER_SIZE &&
           (int64_t)end <= flen;
}

/* After damage: find the next offset > from whose 8 bytes are a sync marker
 * with a valid CRC (the CRC covers the segment id and the marker's own
 * offset, so a match by chance is a 1 in 2^32 event per position). */
static int64_t resync(cf_cass_segment *s, int64_t from, int64_t flen) {
    uint8_t buf[65536 + 8];
    for (int64_t off = from; off + SYNC_MARKER_SIZE <= flen;) {
        ssize_t n = read_at(s, off, buf, sizeof buf);
        if (n < SYNC_MARKER_SIZE) break;
        for (ssize_t i = 0; i + SYNC_MARKER_SIZE <= n; i++)
            if (marker_valid(s, off + i, buf + i, flen)) return off + i;
        off += n - (SYNC_MARKER_SIZE - 1);
    }
    return -1;
}

static cf_code corrupt(cf_cass_segment *s, int64_t off, cf_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static cf_code corrupt(cf_cass_segment *s, int64_t off, cf_err *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char msg[400];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cf_err_set(err, CF_ERR_CORRUPT, "commit log segment %s: %s", s->label, msg);
    cf_err_where(err, "%s@%lld", s->label, (long long)off);
    s->stats.corrupt++;
    s->sec_reported = true;
    return CF_ERR_CORRUPT;
}

/* Skip to the next valid marker after damage at `off` and complete err. */
static void skip_damage(cf_cass_segment *s, int64_t off, int64_t flen, cf_err *err) {
    int64_t next = resync(s, off + 1, flen);
    if (next < 0) {
        s->done = true;
        cf_err_hint(err, "No valid sync marker follows; the rest of the segment (%lld bytes) is skipped.",
                    (long long)(flen - off));
    } else {
        cf_err_hint(err, "Reading continues at the next valid sync section, file offset %lld (%lld bytes skipped)%s.",
                    (long long)next, (long long)(next - off),
                    s->info.compression || s->info.encrypted
                        ? "; logical positions of later entries in this compressed segment are approximate"
                        : "");
        s->next_marker = next;
        if (!(s->info.compression || s->info.encrypted)) s->next_logical = next;
    }
}

static cf_code decompress(cf_cass_segment *s, const uint8_t *src, size_t n, uint8_t *dst, size_t ulen,
                          int64_t off, cf_err *err) {
    /* An empty section: DeflateCompressor writes no bytes at all for empty
     * input (Deflater.needsInput()), and its uncompress returns 0 for them. */
    if (ulen == 0 && (n == 0 || s->info.compression == CF_CASS_COMP_DEFLATE)) return CF_OK;
    switch (s->info.compression) {
    case CF_CASS_COMP_LZ4: {
        if (n < 4) return corrupt(s, off, err, "LZ4 block shorter than its 4-byte length");
        uint32_t declared = (uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
        if (declared != ulen) {
            corrupt(s, off, err, "LZ4 block length does not match the section");
            cf_err_detail(err, "block says %u bytes, section header says %zu", declared, ulen);
            return CF_ERR_CORRUPT;
        }
        int r = LZ4_decompress_safe((const char *)src + 4, (char *)dst, (int)(n - 4), (int)ulen);
        if (r < 0 || (size_t)r != ulen) {
            corrupt(s, off, err, "LZ4 block does not decompress");
            cf_err_detail(err, "LZ4_decompress_safe returned %d, expected %zu bytes", r, ulen);
            return CF_ERR_CORRUPT;
        }
        return CF_OK;
    }
    case CF_CASS_COMP_SNAPPY: {
        size_t out_len = 0;
        if (snappy_uncompressed_length((const char *)src, n, &out_len) != SNAPPY_OK || out_len != ulen) {
            corrupt(s, off, err, "Snappy block length does not match the section");
            cf_err_detail(err, "block says %zu bytes, section header says %zu", out_len, ulen);
            return CF_ERR_CORRUPT;
        }
        if (snappy_uncompress((const char *)src, n, (char *)dst, &out_len) != SNAPPY_OK || out_len != ulen) {
            corrupt(s, off, err, "Snappy block does not decompress");
            return CF_ERR_CORRUPT;
        }
        return CF_OK;
    }
    case CF_CASS_COMP_DEFLATE: {
        /* java.util.zip.Deflater() default: zlib wrapper (RFC 1950) */
        uLongf out_len = (uLongf)ulen;
        int r = uncompress(dst, &out_len, src, (uLong)n);
        if (r != Z_OK || out_len != ulen) {
            corrupt(s, off, err, "Deflate block does not decompress");
            cf_err_detail(err, "zlib uncompress returned %d with %lu of %zu bytes", r, (unsigned long)out_len, ulen);
            return CF_ERR_CORRUPT;
        }
        return CF_OK;
    }
    case CF_CASS_COMP_ZSTD: {
        size_t r = ZSTD_decompress(dst, ulen, src, n);
        if (ZSTD_isError(r) || r != ulen) {
            corrupt(s, off, err, "Zstd frame does not decompress");
            cf_err_detail(err, "%s", ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong length");
            return CF_ERR_CORRUPT;
        }
        return CF_OK;
    }
    case CF_CASS_COMP_NONE: break;
    }
    return cf_err_set(err, CF_ERR_INTERNAL, "decompress called for an uncompressed segment");
}

/* Encrypted section body: blocks of int32 encryptedLength, int32 plainLength,
 * ciphertext; each block decrypts (AES/CBC/PKCS5, the header IV, a fresh
 * cipher per block as Java's doFinal resets it) to int32 uncompressedLength
 * followed by LZ4Compressor output. */
static cf_code decrypt_section(cf_cass_segment *s, const uint8_t *src, size_t n, uint8_t *dst, size_t total,
                               int64_t base_off, cf_err *err) {
    const EVP_CIPHER *cipher = s->key_len == 16 ? EVP_aes_128_cbc() : s->key_len == 24 ? EVP_aes_192_cbc()
                                                                                          : EVP_aes_256_cbc();
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx) return cf_err_set(err, CF_ERR_NOMEM, "cannot create a cipher context");
    uint8_t *tmp = NULL;
    size_t tmp_cap = 0;
    size_t pos = 0, outp = 0;
    cf_code rc = CF_OK;
    /* Cassandra reads blocks until the file pointer reaches the section end - 1 */
    while (pos + 1 < n && outp < total) {
        int64_t boff = base_off + (int64_t)pos;
        if (n - pos < 8) {
            rc = corrupt(s, boff, err, "encrypted block header cut short");
            break;
        }
        uint32_t enc_len = be32(src + pos), plain_len = be32(src + pos + 4);
        if (enc_len > n - pos - 8 || enc_len == 0 || enc_len % 16 || plain_len > enc_len) {
            rc = corrupt(s, boff, err, "impossible encrypted block length");
            cf_err_detail(err, "encrypted length %u, plain length %u, %zu bytes left in the section", enc_len, plain_len,
                          n - pos - 8);
            break;
        }
        ensure(&tmp, &tmp_cap, (size_t)enc_len + 32);
        int l1 = 0, l2 = 0;
        if (EVP_DecryptInit_ex(ctx, cipher, NULL, s->key, s->info.iv) != 1 ||
            EVP_DecryptUpdate(ctx, tmp, &l1, src + pos + 8, (int)enc_len) != 1 ||
            EVP_DecryptFinal_ex(ctx, tmp + l1, &l2) != 1) {
            rc = corrupt(s, boff, err, "encrypted block does not decrypt");
            cf_err_detail(err, "AES/CBC/PKCS5 padding check failed on %u bytes", enc_len);
            cf_err_hint(err, "Check that the key belongs to alias \"%s\"; otherwise the block is damaged.",
                        s->info.key_alias);
            break;
        }
        size_t plen = (size_t)(l1 + l2);
        if (plen != plain_len || plen < 8) {
            rc = corrupt(s, boff, err, "decrypted block length mismatch");
            cf_err_detail(err, "decrypted %zu bytes, block header says %u", plen, plain_len);
            break;
        }
        uint32_t ulen = be32(tmp);
        uint32_t lz_len = (uint32_t)tmp[4] | (uint32_t)tmp[5] << 8 | (uint32_t)tmp[6] << 16 | (uint32_t)tmp[7] << 24;
        if (ulen != lz_len || ulen > total - outp) {
            rc = corrupt(s, boff, err, "impossible uncompressed block length");
            cf_err_detail(err, "block says %u (LZ4 header %u), %zu bytes left of the section's %zu", ulen, lz_len,
                          total - outp, total);
            break;
        }
        int r = LZ4_decompress_safe((const char *)tmp + 8, (char *)dst + outp, (int)(plen - 8), (int)ulen);
        if (r < 0 || (uint32_t)r != ulen) {
            rc = corrupt(s, boff, err, "LZ4 block inside an encrypted block does not decompress");
            break;
        }
        outp += ulen;
        pos += 8 + enc_len;
    }
    if (rc == CF_OK && outp != total) {
        rc = corrupt(s, base_off + (int64_t)pos, err, "encrypted section shorter than announced");
        cf_err_detail(err, "%zu of %zu plain bytes present", outp, total);
    }
    free(tmp);
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

/* The index's promise is broken at file offset `at`: the sections end at
 * logical next_logical, before the index's offset. Reported once; reading
 * of this segment ends (there is nothing more to read). */
static cf_code promise_broken(cf_cass_segment *s, int64_t at, cf_err *err, const char *what) {
    corrupt(s, at, err, "%s", what);
    cf_err_detail(err, "its cdc index says %lld%s; the sync sections end at logical offset %lld, file offset %lld",
                  (long long)s->limit, s->cdc_completed ? " COMPLETED" : " synced", (long long)s->next_logical,
                  (long long)at);
    cf_err_hint(err, "Cassandra writes the index only after syncing the segment up to its offset: this copy was "
                     "truncated or zeroed since, and the mutations after file offset %lld are missing from it.",
                (long long)at);
    s->done = true;
    return CF_ERR_CORRUPT;
}

/* Everything up to the offset of a COMPLETED index is read: the segment is
 * done, unless a valid sync section follows (the index is older than the
 * segment, or damaged): that is reported and read too. */
static cf_code completed_end(cf_cass_segment *s, int64_t off, int64_t flen, cf_err *err) {
    uint8_t m[SYNC_MARKER_SIZE];
    if (off <= flen - SYNC_MARKER_SIZE && read_at(s, off, m, sizeof m) == SYNC_MARKER_SIZE &&
        marker_valid(s, off, m, flen)) {
        corrupt(s, off, err, "sync section after the offset of the segment's COMPLETED cdc index");
        cf_err_detail(err, "the index says %lld COMPLETED; a valid sync marker follows at file offset %lld",
                      (long long)s->limit, (long long)off);
        cf_err_hint(err, "The index does not describe this segment (older or damaged); the sections after it "
                         "are read as well.");
        s->cdc = false;
        s->limit = -1;
        return CF_ERR_CORRUPT;
    }
    s->done = true;
    return CF_ERR_EOF;
}

/* Load the next sync section. CF_OK: a section is loaded. */
static cf_code load_section(cf_cass_segment *s, cf_err *err) {
    int64_t off = s->next_marker;
    int64_t flen = file_len(s);
    if (flen < 0) return io_error(s, off, err);
    if (s->limit >= 0 && s->next_logical >= s->limit)
        return s->cdc && s->cdc_completed ? completed_end(s, off, flen, err) : CF_ERR_AGAIN;
    if (off > flen - SYNC_MARKER_SIZE) {
        if (s->cdc)
            return promise_broken(s, off < flen ? off : flen, err, "segment ends before the offset its cdc index names");
        if (s->limit >= 0) return CF_ERR_AGAIN; /* set_limit alone: not visible yet */
        s->done = true;
        return CF_ERR_EOF;
    }
    uint8_t m[12];
    ssize_t got = read_at(s, off, m, sizeof m);
    if (got < SYNC_MARKER_SIZE) return got < 0 ? io_error(s, off, err) : CF_ERR_EOF;
    uint32_t end32 = be32(m), crc = be32(m + 4);
    int64_t end = (int64_t)end32;
    if (crc_int(s->id_crc, (uint32_t)off) != crc) {
        if (end32 == 0 && crc == 0) { /* zero padding of a preallocated segment */
            if (s->cdc) return promise_broken(s, off, err, "zeros where the cdc index promises a sync section");
            if (s->limit >= 0 && s->next_logical < s->limit) return CF_ERR_AGAIN;
            s->done = true;
            return CF_ERR_EOF;
        }
        corrupt(s, off, err, "sync marker checksum mismatch");
        cf_err_detail(err, "marker says next section at %u with CRC 0x%08x, expected CRC 0x%08x", end32, crc,
                      crc_int(s->id_crc, (uint32_t)off));
        skip_damage(s, off, flen, err);
        return CF_ERR_CORRUPT;
    }
    s->section_truncated = false;
    s->sec_reported = false;
    s->sec_marker_end = end;
    if (end < off + SYNC_MARKER_SIZE) {
        corrupt(s, off, err, "sync marker with a valid checksum points backwards");
        cf_err_detail(err, "next section at %lld, marker at %lld", (long long)end, (long long)off);
        skip_damage(s, off, flen, err);
        return CF_ERR_CORRUPT;
    }
    if (end > flen) {
        /* set_limit alone: not all written yet. With an index, what it
         * covers was synced before it was written: a truncated copy */
        if (!s->cdc && s->limit >= 0 && end <= s->limit) return CF_ERR_AGAIN;
        /* truncated file: use what is there (Cassandra does the same) */
        s->section_truncated = true;
        end = flen;
    }
    /* An index's offset is always where a sync section ends (Cassandra writes
     * it after syncing a section): one inside a section does not describe
     * this segment. Reported once the section is loaded; the index is then
     * ignored and the segment read to its end. */
    bool inside = false;
    if (s->limit >= 0 && !s->info.compression && !s->info.encrypted && end > s->limit) {
        if (!s->cdc) return CF_ERR_AGAIN;
        inside = !s->section_truncated;
    }
    size_t raw_len = (size_t)(end - off);
    const uint8_t *raw;
    if (!s->path) { /* a segment in memory: no copy (end <= flen was checked above) */
        raw = s->mem + off;
    } else if (s->complete) { /* in the window: no copy unless it crosses its end */
        size_t have;
        raw = window(s, off, raw_len, &have);
        if (!raw) return io_error(s, off, err);
        if (have < raw_len) { /* cannot happen: end <= flen, the length measured once */
            s->section_truncated = true;
            raw_len = have;
        }
    } else {
        uint8_t *buf = ensure(&s->raw, &s->raw_cap, raw_len);
        got = read_at(s, off, buf, raw_len);
        if (got < 0) return io_error(s, off, err);
        if ((size_t)got < raw_len) { /* shrank under us */
            s->section_truncated = true;
            raw_len = (size_t)got;
        }
        raw = buf;
    }
    s->stats.bytes += raw_len;
    s->sec_file = off;
    int64_t logical_start = s->next_logical;
    if (!s->info.compression && !s->info.encrypted) {
        s->sec = raw + SYNC_MARKER_SIZE;
        s->sec_len = raw_len - SYNC_MARKER_SIZE;
        s->sec_logical = off + SYNC_MARKER_SIZE;
        s->next_logical = end;
    } else {
        if (raw_len < 12) {
            s->next_marker = end;
            corrupt(s, off, err, "compressed section too short for its length field");
            return CF_ERR_CORRUPT;
        }
        uint32_t ulen = be32(raw + 8);
        int64_t logical_end = s->next_logical + SYNC_MARKER_SIZE + (int64_t)ulen;
        if (s->limit >= 0 && logical_end > s->limit && !s->section_truncated) {
            if (!s->cdc) return CF_ERR_AGAIN;
            inside = true;
        }
        s->next_marker = end;
        if (ulen > MAX_SECTION_BYTES) {
            corrupt(s, off + 8, err, "impossible uncompressed section length");
            cf_err_detail(err, "%u bytes, more than the %u accepted", ulen, MAX_SECTION_BYTES);
            s->next_logical = logical_end;
            return CF_ERR_CORRUPT;
        }
        uint8_t *plain = ensure(&s->plain, &s->plain_cap, ulen ? ulen : 1);
        cf_code rc = s->info.encrypted
                         ? decrypt_section(s, raw + 12, raw_len - 12, plain, ulen, off + 12, err)
                         : decompress(s, raw + 12, raw_len - 12, plain, ulen, off + 12, err);
        s->sec_logical = s->next_logical + SYNC_MARKER_SIZE;
        s->next_logical = logical_end;
        if (rc) {
            if (s->section_truncated) cf_err_detail(err, "the file ends inside this section (truncated)");
            return rc;
        }
        s->sec = plain;
        s->sec_len = ulen;
    }
    s->next_marker = end;
    s->sec_pos = 0;
    s->ahead_n = s->ahead_i = 0;
    s->in_section = true;
    s->stats.sections++;
    if (inside) { /* the section is loaded: the next call reads it */
        corrupt(s, off, err, "the offset of the segment's cdc index falls inside a sync section");
        cf_err_detail(err, "the index says %lld%s; the section at file offset %lld spans logical offsets %lld to %lld",
                      (long long)s->limit, s->cdc_completed ? " COMPLETED" : "", (long long)off,
                      (long long)logical_start, (long long)s->next_logical);
        cf_err_hint(err, "Cassandra writes the index at the end of a synced section: this index does not describe "
                         "the segment (damaged?); it is ignored and the segment read to its end.");
        s->cdc = false;
        s->limit = -1;
        return CF_ERR_CORRUPT;
    }
    return CF_OK;
}

static int64_t entry_where(const cf_cass_segment *s) {
    if (!s->info.compression && !s->info.encrypted) return s->sec_logical + (int64_t)s->sec_pos;
    return s->sec_file;
}

/* Whether the entry at p, with left (>= 4) bytes of its section from p on,
 * is sound, and if not, which condition fails first. The one place that
 * decides: crc_ahead only asks "sound?", cf_cass_segment_next asks which
 * condition failed to report it, so the two cannot disagree on an entry. The
 * order of the checks is the order of the reports (a size of 0 is the end of
 * the segment even with fewer than 8 bytes left). *size_crc is set once the
 * size field's CRC is computed (ENTRY_SIZE_CRC, ENTRY_TOO_LONG, ENTRY_SOUND):
 * the report shows it, and it seeds the data CRC. */
typedef enum {
    ENTRY_SOUND,
    ENTRY_END,       /* size 0: end-of-segment marker or zero padding */
    ENTRY_CUT_SHORT, /* fewer than 8 bytes left: no room for the size CRC */
    ENTRY_TOO_SMALL, /* size below 10, the least a mutation takes */
    ENTRY_SIZE_CRC,  /* the size's CRC does not match */
    ENTRY_TOO_LONG,  /* size + framing runs past the section */
} entry_state;

static inline entry_state entry_check(const uint8_t *p, size_t left, uint32_t *size_crc) {
    uint32_t size = be32(p);
    if (size == 0) return ENTRY_END;
    if (left < 8) return ENTRY_CUT_SHORT;
    if (size < 10) return ENTRY_TOO_SMALL;
    uint32_t crc = cf_cass_crc32_table(0, p, 4); /* = crc_int(0, size): p holds size big-endian */
    *size_crc = crc;
    if (crc != be32(p + 4)) return ENTRY_SIZE_CRC;
    if ((uint64_t)size + ENTRY_OVERHEAD > left) return ENTRY_TOO_LONG;
    return ENTRY_SOUND;
}

/* Compute the data CRCs of up to CRC_AHEAD entries from sec_pos on, stopping
 * at the first entry entry_check refuses (cf_cass_segment_next reports it
 * when it gets there). Why ahead: an entry's CRC is a chain of dependent
 * steps (folds, reduction, table lookups) of a few hundred bytes. Computed
 * between the decoding of two mutations it runs alone, latency-bound;
 * computed for many entries in one loop, the CPU overlaps the chain of one
 * entry with that of the next (this took a third off the CRC time of the
 * decode benchmark). Only CRCs are computed here; every report stays in
 * cf_cass_segment_next. */
static void crc_ahead(cf_cass_segment *s) {
    unsigned n = 0;
    size_t pos = s->sec_pos;
    while (n < CRC_AHEAD && s->sec_len - pos >= 4) { /* entry_check reads the size */
        const uint8_t *p = s->sec + pos;
        uint32_t crc;
        if (entry_check(p, s->sec_len - pos, &crc) != ENTRY_SOUND) break;
        uint32_t size = be32(p);
        s->ahead_pos[n] = pos;
        s->ahead_crc[n] = crc_update_s(s, crc, p + 8, size);
        n++;
        pos += ENTRY_OVERHEAD + size;
    }
    s->ahead_n = n;
    s->ahead_i = 0;
}

cf_code cf_cass_segment_next(cf_cass_segment *s, cf_cass_entry *e, cf_err *err) {
    for (;;) {
        if (!s->in_section) {
            if (s->done) return CF_ERR_EOF;
            cf_code rc = load_section(s, err);
            if (rc) return rc;
        }
        size_t left = s->sec_len - s->sec_pos;
        const uint8_t *p = s->sec + s->sec_pos;
        int64_t pos = s->sec_logical + (int64_t)s->sec_pos;
        if (left < 4) { /* not enough for another entry: section done */
            s->in_section = false;
            if (s->section_truncated && !s->sec_reported) {
                /* the file ends inside the section, but at an entry's end (or
                 * inside an empty section): nothing else said it */
                int64_t flen = file_len(s);
                corrupt(s, flen, err, "the file ends inside the sync section at file offset %lld (truncated)",
                        (long long)s->sec_file);
                cf_err_detail(err, "its sync marker says the section ends at %lld; the file ends at %lld",
                              (long long)s->sec_marker_end, (long long)flen);
                cf_err_hint(err, "The entries of the section that are in the file were read; what followed them is "
                                 "missing from this copy.");
                return CF_ERR_CORRUPT;
            }
            continue;
        }
        uint32_t size = be32(p), crc;
        if (s->ahead_i == s->ahead_n) crc_ahead(s);
        if (s->ahead_i < s->ahead_n && s->ahead_pos[s->ahead_i] == s->sec_pos) {
            crc = s->ahead_crc[s->ahead_i++]; /* entry_check passed, data CRC computed by crc_ahead */
        } else { /* the entry crc_ahead stopped at: say which check it fails */
            s->in_section = false;
            switch (entry_check(p, left, &crc)) {
            case ENTRY_END: {
                /* Cassandra fills a sync section with whole entries (the
                 * marker is written once they are): a size of 0 inside one
                 * is bytes zeroed or never written, not an end. (The zero
                 * padding of a preallocated segment comes after its last
                 * section, where the next marker would be.) */
                size_t nonzero = 0;
                for (size_t q = 0; q < left; q++) nonzero += p[q] != 0;
                corrupt(s, entry_where(s), err, "entry of size 0 inside a sync section at logical position %lld",
                        (long long)pos);
                if (nonzero)
                    cf_err_detail(err, "%zu bytes left in the section, %zu of them not zero", left, nonzero);
                else
                    cf_err_detail(err, "the %zu bytes left in the section are all zero", left);
                cf_err_hint(err, "Those entries were zeroed or never written; the rest of this sync section is skipped "
                                 "and reading continues with the next section.");
                return CF_ERR_CORRUPT;
            }
            case ENTRY_CUT_SHORT:
                corrupt(s, entry_where(s), err, "entry header cut short at logical position %lld", (long long)pos);
                cf_err_detail(err, "%zu bytes left in the section%s", left,
                              s->section_truncated ? "; the file ends inside this section (truncated)" : "");
                return CF_ERR_CORRUPT;
            case ENTRY_TOO_SMALL:
                corrupt(s, entry_where(s), err, "invalid entry size %u at logical position %lld", size, (long long)pos);
                cf_err_detail(err, "a mutation has at least 10 bytes");
                cf_err_hint(err, "The rest of this sync section is skipped; reading continues with the next section.");
                return CF_ERR_CORRUPT;
            case ENTRY_SIZE_CRC:
                corrupt(s, entry_where(s), err, "entry size checksum mismatch at logical position %lld", (long long)pos);
                cf_err_detail(err, "size %u, stored CRC 0x%08x, computed 0x%08x", size, be32(p + 4), crc);
                cf_err_hint(err, "The rest of this sync section is skipped; reading continues with the next section.");
                return CF_ERR_CORRUPT;
            case ENTRY_TOO_LONG:
                corrupt(s, entry_where(s), err, "entry at logical position %lld is longer than its section", (long long)pos);
                cf_err_detail(err, "size %u + 12 bytes of framing, %zu bytes left in the section%s", size, left,
                              s->section_truncated ? "; the file ends inside this section (truncated)" : "");
                cf_err_hint(err, "The rest of this sync section is skipped; reading continues with the next section.");
                return CF_ERR_CORRUPT;
            case ENTRY_SOUND:
                break;
            }
            /* a sound entry is one crc_ahead took (it asks entry_check too,
             * from sec_pos on), so this is a bug in the bookkeeping of
             * ahead_pos/ahead_i, not damage in the file */
            cf_err_set(err, CF_ERR_INTERNAL,
                       "commit log segment %s: sound entry at logical position %lld has no CRC computed ahead",
                       s->label, (long long)pos);
            cf_err_where(err, "%s@%lld", s->label, (long long)entry_where(s));
            return CF_ERR_INTERNAL;
        }
        uint32_t stored = be32(p + 8 + size);
        s->sec_pos += ENTRY_OVERHEAD + size;
        if (crc != stored) {
            corrupt(s, entry_where(s) - (s->info.compression || s->info.encrypted ? 0 : ENTRY_OVERHEAD + size), err,
                    "entry checksum mismatch at logical position %lld", (long long)pos);
            cf_err_detail(err, "%u bytes, stored CRC 0x%08x, computed 0x%08x", size, stored, crc);
            cf_err_hint(err, "This mutation is skipped; reading continues with the next entry.");
            return CF_ERR_CORRUPT;
        }
        e->data = p + 8;
        e->len = size;
        e->position = pos;
        e->end_position = pos + ENTRY_OVERHEAD + size;
        e->file_offset = s->info.compression || s->info.encrypted ? s->sec_file : pos;
        e->crc = crc;
        s->stats.entries++;
        return CF_OK;
    }
}

/* ---------------- cdc index ---------------- */

char *cf_cass_cdc_idx_path(const char *segment_path) {
    size_t n = strlen(segment_path);
    cf_buf b = CF_BUF_INIT;
    if (n > 4 && strcmp(segment_path + n - 4, ".log") == 0) n -= 4;
    cf_buf_append(&b, segment_path, n);
    cf_buf_append_str(&b, "_cdc.idx");
    return cf_buf_detach(&b, NULL);
}

cf_code cf_cass_cdc_idx_parse(const char *text, size_t len, int64_t *offset, bool *completed, cf_err *err) {
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
    if (i == len) return cf_err_set(err, CF_ERR_AGAIN, "cdc index file is empty (being rewritten)");
    int64_t v = 0;
    size_t digits = 0;
    while (i < len && text[i] >= '0' && text[i] <= '9') {
        if (v > (INT64_MAX - 9) / 10) break;
        v = v * 10 + (text[i] - '0');
        i++, digits++;
    }
    if (!digits || (i < len && text[i] >= '0' && text[i] <= '9')) {
        cf_err_set(err, CF_ERR_CORRUPT, "cdc index file does not start with an offset");
        cf_err_detail(err, "content \"%.*s\"", (int)(len > 60 ? 60 : len), text);
        return CF_ERR_CORRUPT;
    }
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
    bool done = false;
    if (i < len) {
        size_t rest = len - i;
        while (rest && (text[i + rest - 1] == '\n' || text[i + rest - 1] == '\r' || text[i + rest - 1] == ' ')) rest--;
        if (rest == 9 && memcmp(text + i, "COMPLETED", 9) == 0)
            done = true;
        else if (!(rest < 9 && memcmp(text + i, "COMPLETED", rest) == 0)) {
            /* a partial "COMPLE" is a rewrite in progress; anything else is wrong */
            cf_err_set(err, CF_ERR_CORRUPT, "cdc index file has unexpected content after the offset");
            cf_err_detail(err, "\"%.*s\"", (int)(rest > 60 ? 60 : rest), text + i);
            return CF_ERR_CORRUPT;
        }
    }
    *offset = v;
    *completed = done;
    return CF_OK;
}

cf_code cf_cass_cdc_idx_read(const char *idx_path, int retries, int retry_ms, int64_t *offset, bool *completed,
                             cf_err *err) {
    for (int attempt = 0;; attempt++) {
        cf_code orc = CF_OK;
        int fd = open_regular(idx_path, "cdc index file", err, &orc);
        if (fd < 0) return orc;
        char buf[256];
        ssize_t got;
        size_t n = 0;
        while (n < sizeof buf - 1 && ((got = read(fd, buf + n, sizeof buf - 1 - n)) > 0 || (got < 0 && errno == EINTR)))
            if (got > 0) n += (size_t)got;
        close(fd);
        buf[n] = 0;
        cf_code rc = cf_cass_cdc_idx_parse(buf, n, offset, completed, err);
        if (rc != CF_ERR_AGAIN || attempt >= retries) {
            if (rc) cf_err_where(err, "%s@0", idx_path);
            if (rc == CF_ERR_AGAIN)
                cf_err_hint(err, "Cassandra rewrites the index on every sync; it stayed empty over %d reads.", attempt + 1);
            return rc;
        }
        struct timespec ts = {retry_ms / 1000, (long)(retry_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* ---------------- directories (commitlog, cdc_raw) ---------------- */

void cf_cass_dir_entries_free(cf_cass_dir_entry *e, size_t n) {
    for (size_t i = 0; e && i < n; i++) free(e[i].path);
    free(e);
}

static int cmp_entry(const void *a, const void *b) {
    const cf_cass_dir_entry *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : strcmp(x->path, y->path);
}

cf_code cf_cass_dir_list(const char *dir, cf_cass_dir_entry **out, size_t *n_out, cf_err *err) {
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        cf_code rc = e == ENOENT ? CF_ERR_NOT_FOUND : e == ENOTDIR ? CF_ERR_INVALID : CF_ERR_IO;
        cf_err_set(err, rc, "cannot list commit log directory %s", dir);
        cf_err_detail(err, "%s", strerror(e));
        cf_err_where(err, "%s", dir);
        return rc;
    }
    cf_cass_dir_entry *v = NULL;
    size_t k = 0, cap = 0, others = 0;
    char other[2][64] = {"", ""};
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        int32_t ver;
        int64_t id;
        if (!cf_cass_segment_name_parse(de->d_name, &ver, &id)) {
            size_t l = strlen(de->d_name);
            bool is_idx = l > 8 && strcmp(de->d_name + l - 8, "_cdc.idx") == 0;
            if (!is_idx && others < 2) snprintf(other[others], sizeof other[0], "%s", de->d_name);
            if (!is_idx) others++;
            continue;
        }
        if (k == cap) v = cf_xrealloc(v, (cap = cap ? cap * 2 : 16) * sizeof *v);
        cf_cass_dir_entry *e = &v[k++];
        memset(e, 0, sizeof *e);
        cf_buf b = CF_BUF_INIT;
        cf_buf_printf(&b, "%s/%s", dir, de->d_name);
        e->path = cf_buf_detach(&b, NULL);
        e->version = ver;
        e->id = id;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, 0) != 0) {
            int en = errno;
            e->problem = cf_err_set(&e->err, CF_ERR_IO, "cannot inspect commit log segment %s", e->path);
            cf_err_detail(&e->err, "%s", strerror(en));
            cf_err_where(&e->err, "%s", e->path);
        } else if (!S_ISREG(st.st_mode)) {
            e->problem = cf_err_set(&e->err, CF_ERR_INVALID, "commit log segment %s is not a regular file", e->path);
            cf_err_detail(&e->err, "found %s", file_kind((unsigned)st.st_mode));
            cf_err_hint(&e->err, "Cassandra writes commit log segments as regular files; remove or rename what is "
                                 "in this one's place.");
            cf_err_where(&e->err, "%s", e->path);
        }
        char *ip = cf_cass_cdc_idx_path(e->path);
        e->has_idx = faccessat(dirfd(d), ip + strlen(dir) + 1, F_OK, 0) == 0;
        free(ip);
    }
    closedir(d);
    if (k == 0) {
        cf_err_set(err, CF_ERR_NOT_FOUND, "directory %s holds no commit log segments", dir);
        if (others)
            cf_err_detail(err, "it holds %zu other entr%s (\"%s\"%s%s%s), none named CommitLog-<version>-<id>.log",
                          others, others == 1 ? "y" : "ies", other[0], others > 1 ? ", \"" : "", others > 1 ? other[1] : "",
                          others > 2 ? "\", ..." : others > 1 ? "\"" : "");
        else
            cf_err_detail(err, "it is empty");
        cf_err_hint(err, "Name a commitlog or cdc_raw directory, or segment files (CommitLog-*.log).");
        cf_err_where(err, "%s", dir);
        free(v);
        return CF_ERR_NOT_FOUND;
    }
    qsort(v, k, sizeof *v, cmp_entry);
    *out = v;
    *n_out = k;
    return CF_OK;
}
