/*
 * test_segment_errors.c - damaged, truncated, compressed and followed copies
 * of the real commit log segments of Cassandra's CommitLogUpgradeTest.
 *
 * Corruption: bytes are flipped in a temp copy and the test checks that the
 * error names the segment file and the byte offset of the damage, and that
 * reading continues with everything that is not damaged (counted against the
 * clean read of the same file). Compression: the plain sections are packed
 * the way CompressedSegment writes them (marker, int32 uncompressed length,
 * compressor output - LZ4Compressor's 4-byte little-endian length + block,
 * raw Snappy, zlib-wrapped Deflate, a Zstd frame) and the decoded cells must
 * still reproduce hash.txt. cdc_raw: an index file that grows section by
 * section, then says COMPLETED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <lz4.h>
#include <snappy-c.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "cass_test_util.h"
#include "seg_bytes.h"

#define SEG40 LEGACY_DIR "/4.0.11-encrypted/CommitLog-7-1699285478684.log"
#define SEG40_NAME "CommitLog-7-1699285478684.log"

static char tmpdir[256];

static int setup(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cf_cass_errXXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* What a read produced. */
typedef struct readout {
    int entries, corrupt, again;
    int64_t positions[20000];
    char first_where[256], first_msg[512], first_hint[256];
    long cells;
    int32_t hash;
} readout;

static cf_cass_table *g_table;

static void read_all(const char *path, int64_t limit, readout *r) {
    memset(r, 0, sizeof *r);
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_OK);
    if (limit >= 0) cf_cass_segment_set_limit(seg, limit);
    cf_cass_schema *schema = cf_cass_schema_new();
    hash_props hp;
    read_hash_props(LEGACY_DIR "/4.0.11-encrypted", &hp);
    cf_cass_schema_add_table(schema, standard1_table(hp.cfid), NULL);
    cf_cass_decoder *dec = cf_cass_decoder_new(schema);
    cf_cass_entry e;
    cf_code rc;
    while ((rc = cf_cass_segment_next(seg, &e, &err)) != CF_ERR_EOF) {
        if (rc == CF_ERR_AGAIN) {
            r->again++;
            break;
        }
        if (rc == CF_ERR_CORRUPT) {
            if (!r->corrupt++) {
                snprintf(r->first_where, sizeof r->first_where, "%s", err.where);
                snprintf(r->first_msg, sizeof r->first_msg, "%s", err.message);
                snprintf(r->first_hint, sizeof r->first_hint, "%s", err.hint);
            }
            continue;
        }
        assert_int_equal(rc, CF_OK);
        r->positions[r->entries++] = e.position;
        cf_cass_mutation *m;
        if (cf_cass_decode_mutation(dec, e.data, e.len, 12, &m, NULL, NULL) != CF_OK) continue;
        for (size_t i = 0; i < m->n_updates; i++)
            for (size_t k = 0; k < m->updates[i].n_rows; k++) {
                const cf_cass_row *row = &m->updates[i].rows[k];
                if (row->n_clustering && row->clustering[0].p && row->clustering[0].len >= 4 &&
                    !memcmp(row->clustering[0].p, "name", 4))
                    for (size_t c = 0; c < row->n_columns; c++)
                        for (size_t j = 0; j < row->columns[c].n_cells; j++) {
                            r->hash = upgrade_hash(r->hash, row->columns[c].cells[j].value.p,
                                                   row->columns[c].cells[j].value.len);
                            r->cells++;
                        }
            }
    }
    cf_cass_decoder_destroy(dec);
    cf_cass_schema_destroy(schema);
    cf_cass_segment_destroy(seg);
}

/* Sync markers of a plain segment, from the format (marker = next offset + CRC). */
static int markers(const uint8_t *p, size_t n, size_t hdr, size_t *out, int max) {
    int k = 0;
    size_t off = hdr;
    while (off + 8 <= n && k < max) {
        uint32_t end = be32(p + off);
        if (end == 0) break;
        out[k++] = off;
        off = end;
    }
    return k;
}

/* SEG40's bytes (the caller frees them) and the offsets of its sync markers
 * into MK (room for 16): the real file has 4 sections. */
static uint8_t *slurp_sections(size_t *n, size_t *mk) {
    uint8_t *p = slurp(SEG40, n);
    assert_int_equal(markers(p, *n, 20, mk, 16), 4);
    return p;
}

static readout clean, r;

static void test_clean_baseline(void **state) {
    (void)state;
    read_all(SEG40, -1, &clean);
    assert_int_equal(clean.entries, 358);
    assert_int_equal(clean.corrupt, 0);
    assert_int_equal(clean.cells, 355);
    assert_int_equal(clean.hash, -918027651);
}

/* The temp copy's path: the segment's own name in tmpdir (errors name the file). */
static const char *copy_path(void) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, SEG40_NAME);
    return path;
}

/* Write P (N bytes, a damaged copy of SEG40) to copy_path(), read it into r and
 * check that exactly one error was reported, at byte WHERE of the file (unless
 * WHERE < 0) with a message containing MSG (unless NULL). Returns the path. */
static const char *read_damaged(const uint8_t *p, size_t n, int64_t where, const char *msg) {
    const char *path = copy_path();
    spit(path, p, n);
    read_all(path, -1, &r);
    assert_int_equal(r.corrupt, 1);
    if (where >= 0) {
        char want[640];
        snprintf(want, sizeof want, "%s@%lld", path, (long long)where); /* the path, not only the name */
        assert_string_equal(r.first_where, want);
    }
    if (msg) assert_non_null(strstr(r.first_msg, msg));
    return path;
}

static int index_of(const readout *x, int64_t pos) {
    for (int i = 0; i < x->entries; i++)
        if (x->positions[i] == pos) return i;
    return -1;
}

static void test_entry_crc_skips_one_entry(void **state) {
    (void)state;
    size_t n;
    uint8_t *p = slurp(SEG40, &n);
    int64_t pos = clean.positions[10]; /* flip a byte inside the 11th mutation */
    p[pos + 8 + 3] ^= 0x5a;
    read_damaged(p, n, pos, "entry checksum mismatch");
    assert_int_equal(r.entries, clean.entries - 1);
    assert_int_equal(index_of(&r, pos), -1);
    assert_int_equal(index_of(&r, clean.positions[11]), 10);
    free(p);
}

static void test_size_crc_skips_rest_of_section(void **state) {
    (void)state;
    size_t n, mk[16];
    uint8_t *p = slurp_sections(&n, mk);
    /* the real file: sections of 2, 1, 355 and 0 entries. Damage the size CRC
     * of the first entry of section 1: its 2 entries are lost, the others read */
    int64_t pos = clean.positions[0];
    assert_int_equal(pos, (int64_t)mk[0] + 8);
    p[pos + 5] ^= 0x01;
    read_damaged(p, n, pos, "size checksum");
    int lost = 0;
    for (int i = 0; i < clean.entries && (size_t)clean.positions[i] < mk[1]; i++) lost++;
    assert_int_equal(lost, 2);
    assert_int_equal(r.entries, clean.entries - lost);
    for (int i = lost; i < clean.entries; i++) assert_int_equal(index_of(&r, clean.positions[i]), i - lost);
    assert_int_equal(r.cells, clean.cells);
    free(p);
}

static void test_bad_marker_resyncs(void **state) {
    (void)state;
    size_t n, mk[16];
    uint8_t *p = slurp_sections(&n, mk);
    p[mk[1] + 6] ^= 0xff; /* the CRC of section 2's marker */
    read_damaged(p, n, (int64_t)mk[1], "sync marker checksum");
    char hint[128];
    snprintf(hint, sizeof hint, "file offset %zu", mk[2]);
    assert_non_null(strstr(r.first_hint, hint));
    int expect = 0;
    for (int i = 0; i < clean.entries; i++)
        if ((size_t)clean.positions[i] < mk[1] || (size_t)clean.positions[i] > mk[2]) expect++;
    assert_int_equal(r.entries, expect);
    free(p);
}

static void test_impossible_length(void **state) {
    (void)state;
    size_t n;
    uint8_t *p = slurp(SEG40, &n);
    int64_t pos = clean.positions[10];
    put32(p + pos, 0x7ffffff0u); /* a size with a valid size CRC, longer than anything */
    put32(p + pos + 4, crc_int(0, 0x7ffffff0u));
    read_damaged(p, n, pos, "longer than its section");
    assert_int_equal(r.entries, 10); /* the rest of the section is skipped */
    /* a size below 10 */
    put32(p + pos, 5);
    put32(p + pos + 4, crc_int(0, 5));
    read_damaged(p, n, -1, "invalid entry size 5");
    free(p);
}

static void test_truncated(void **state) {
    (void)state;
    size_t n;
    uint8_t *p = slurp(SEG40, &n);
    int64_t cut = clean.positions[200] + 30; /* inside entry 201 */
    const char *path = read_damaged(p, (size_t)cut, clean.positions[200], NULL);
    assert_int_equal(r.entries, 200);
    /* a file cut inside the header */
    spit(path, p, 10);
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_ERR_CORRUPT);
    assert_non_null(strstr(err.where, SEG40_NAME "@"));
    /* empty file */
    spit(path, p, 0);
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_ERR_CORRUPT);
    free(p);
}

static void test_header_errors(void **state) {
    (void)state;
    size_t n;
    uint8_t *p = slurp(SEG40, &n);
    const char *path = copy_path();
    cf_cass_segment *seg;
    cf_err err;
    p[17] ^= 1; /* header CRC */
    spit(path, p, n);
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_ERR_CORRUPT);
    assert_non_null(strstr(err.message, "header checksum"));
    char want16[640];
    snprintf(want16, sizeof want16, "%s@16", path);
    assert_string_equal(err.where, want16);
    p[17] ^= 1;
    /* version 5 (Cassandra 2.2): refused with a clear message */
    put32(p, 5);
    spit(path, p, n);
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "version 5 is too old"));
    assert_non_null(strstr(err.hint, "3.0"));
    put32(p, 9);
    spit(path, p, n);
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_ERR_UNSUPPORTED);
    free(p);
}

/* ---- compressed copies ---- */

static size_t compress_block(cf_cass_compression c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
    switch (c) {
    case CF_CASS_COMP_LZ4: {
        dst[0] = (uint8_t)n, dst[1] = (uint8_t)(n >> 8), dst[2] = (uint8_t)(n >> 16), dst[3] = (uint8_t)(n >> 24);
        int r = LZ4_compress_default((const char *)src, (char *)dst + 4, (int)n, (int)cap - 4);
        assert_true(r > 0);
        return (size_t)r + 4;
    }
    case CF_CASS_COMP_SNAPPY: {
        size_t out = cap;
        assert_int_equal(snappy_compress((const char *)src, n, (char *)dst, &out), SNAPPY_OK);
        return out;
    }
    case CF_CASS_COMP_DEFLATE: {
        uLongf out = cap;
        assert_int_equal(compress2(dst, &out, src, n, Z_DEFAULT_COMPRESSION), Z_OK);
        return out;
    }
    case CF_CASS_COMP_ZSTD: {
        size_t r = ZSTD_compress(dst, cap, src, n, 3);
        assert_false(ZSTD_isError(r));
        return r;
    }
    default: fail();
    }
    return 0;
}

static const char *class_of(cf_cass_compression c) {
    switch (c) {
    case CF_CASS_COMP_LZ4: return "org.apache.cassandra.io.compress.LZ4Compressor";
    case CF_CASS_COMP_SNAPPY: return "org.apache.cassandra.io.compress.SnappyCompressor";
    case CF_CASS_COMP_DEFLATE: return "org.apache.cassandra.io.compress.DeflateCompressor";
    default: return "org.apache.cassandra.io.compress.ZstdCompressor";
    }
}

/* Re-pack a plain segment's sections as CompressedSegment writes them. */
static uint8_t *make_compressed(const uint8_t *p, size_t n, cf_cass_compression c, size_t *out_len, size_t *hdr_len,
                                size_t *sec_off, int *n_sec) {
    int64_t id = (int64_t)((uint64_t)be32(p + 4) << 32 | be32(p + 8));
    char params[256];
    snprintf(params, sizeof params, "{\"compressionClass\":\"%s\",\"compressionParameters\":{}}", class_of(c));
    size_t plen = strlen(params);
    size_t cap = n * 2 + 65536;
    uint8_t *o = calloc(1, cap);
    put32(o, be32(p));
    memcpy(o + 4, p + 4, 8);
    o[12] = (uint8_t)(plen >> 8), o[13] = (uint8_t)plen;
    memcpy(o + 14, params, plen);
    uint32_t crc = crc_int(crc_int(crc_int(crc_int(0, be32(p)), (uint32_t)id), (uint32_t)((uint64_t)id >> 32)),
                           (uint32_t)plen);
    crc = (uint32_t)crc32(crc, (const uint8_t *)params, (uInt)plen);
    put32(o + 14 + plen, crc);
    size_t w = 14 + plen + 4;
    *hdr_len = w;
    size_t mk[16];
    int nm = markers(p, n, 20, mk, 16);
    uint32_t idc = crc_int(crc_int(0, (uint32_t)id), (uint32_t)((uint64_t)id >> 32));
    for (int i = 0; i < nm; i++) {
        size_t start = mk[i] + 8, end = be32(p + mk[i]);
        /* the last section of a preallocated segment runs into zeros: keep the
         * data up to the zero size that ends it */
        size_t ulen = end - start;
        sec_off[i] = w;
        size_t clen = compress_block(c, p + start, ulen, o + w + 12, cap - w - 12);
        put32(o + w, (uint32_t)(w + 12 + clen));
        put32(o + w + 4, crc_int(idc, (uint32_t)w));
        put32(o + w + 8, (uint32_t)ulen);
        w += 12 + clen;
    }
    *n_sec = nm;
    *out_len = w;
    return o;
}

static void check_compressed(cf_cass_compression c) {
    size_t n, clen, hdr;
    uint8_t *p = slurp(SEG40, &n);
    size_t so[16];
    int ns;
    uint8_t *cp = make_compressed(p, n, c, &clen, &hdr, so, &ns);
    const char *path = copy_path();
    spit(path, cp, clen);
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_OK);
    assert_int_equal(cf_cass_segment_get_info(seg)->compression, c);
    cf_cass_segment_destroy(seg);
    read_all(path, -1, &r);
    assert_int_equal(r.corrupt, 0);
    assert_int_equal(r.entries, clean.entries);
    assert_int_equal(r.cells, 355);
    assert_int_equal(r.hash, -918027651);
    /* logical positions: the plain ones shifted by the longer header */
    for (int i = 0; i < r.entries; i++) assert_int_equal(r.positions[i], clean.positions[i] + (int64_t)(hdr - 20));
    /* damage inside the compressed bytes of section 2: reported at that
     * section's file offset, sections 1, 3, 4 still read */
    cp[so[1] + 40] ^= 0xff;
    cp[so[1] + 41] ^= 0xff;
    cp[so[1] + 42] ^= 0xff;
    spit(path, cp, clen);
    read_all(path, -1, &r);
    if (r.corrupt) {
        char want[128];
        snprintf(want, sizeof want, "%s@", SEG40_NAME);
        assert_non_null(strstr(r.first_where, want));
        assert_true(r.entries < clean.entries);
        assert_true(r.entries > 0);
    } else {
        /* some codecs (LZ4 literals) decode damaged bytes without noticing:
         * then the entry CRC must catch it */
        fail_msg("damage in a %s section went unnoticed", cf_cass_compression_name(c));
    }
    free(cp);
    free(p);
}

static void test_lz4(void **s) { (void)s; check_compressed(CF_CASS_COMP_LZ4); }
static void test_snappy(void **s) { (void)s; check_compressed(CF_CASS_COMP_SNAPPY); }
static void test_deflate(void **s) { (void)s; check_compressed(CF_CASS_COMP_DEFLATE); }
static void test_zstd(void **s) { (void)s; check_compressed(CF_CASS_COMP_ZSTD); }

/* ---- cdc_raw index ---- */

static void test_idx_parse(void **state) {
    (void)state;
    int64_t off;
    bool done;
    assert_int_equal(cf_cass_cdc_idx_parse("1234", 4, &off, &done, NULL), CF_OK);
    assert_int_equal(off, 1234);
    assert_false(done);
    assert_int_equal(cf_cass_cdc_idx_parse("1234\nCOMPLETED", 14, &off, &done, NULL), CF_OK);
    assert_true(done);
    assert_int_equal(cf_cass_cdc_idx_parse("99\nCOMPLETED\n", 13, &off, &done, NULL), CF_OK);
    assert_int_equal(off, 99);
    assert_true(done);
    assert_int_equal(cf_cass_cdc_idx_parse("", 0, &off, &done, NULL), CF_ERR_AGAIN);
    assert_int_equal(cf_cass_cdc_idx_parse("12\nCOMPL", 8, &off, &done, NULL), CF_OK); /* being rewritten */
    assert_false(done);
    assert_int_equal(cf_cass_cdc_idx_parse("x12", 3, &off, &done, NULL), CF_ERR_CORRUPT);
    assert_int_equal(cf_cass_cdc_idx_parse("12\nDONE", 7, &off, &done, NULL), CF_ERR_CORRUPT);
    assert_int_equal(cf_cass_cdc_idx_parse("99999999999999999999999", 23, &off, &done, NULL), CF_ERR_CORRUPT);
    char *ip = cf_cass_cdc_idx_path("/a/b/CommitLog-7-12.log");
    assert_string_equal(ip, "/a/b/CommitLog-7-12_cdc.idx");
    free(ip);
    cf_err err;
    assert_int_equal(cf_cass_cdc_idx_read("/nonexistent/x_cdc.idx", 0, 0, &off, &done, &err), CF_ERR_NOT_FOUND);
    /* an empty file stays empty over the retries */
    char path[512];
    snprintf(path, sizeof path, "%s/e_cdc.idx", tmpdir);
    spit(path, "", 0);
    assert_int_equal(cf_cass_cdc_idx_read(path, 2, 1, &off, &done, &err), CF_ERR_AGAIN);
}

static void test_cdc_follow(void **state) {
    (void)state;
    size_t n, mk[16];
    uint8_t *p = slurp_sections(&n, mk);
    const char *path = copy_path();
    spit(path, p, n);
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_OK);
    char *idx = cf_cass_cdc_idx_path(path);
    int got = 0;
    cf_cass_entry e;
    for (int s = 1; s <= 4; s++) {
        char text[64];
        /* Cassandra writes the end of the last synced section */
        size_t end = s < 4 ? mk[s] : n;
        int len = snprintf(text, sizeof text, "%zu%s", end, s == 4 ? "\nCOMPLETED" : "");
        spit(idx, text, (size_t)len);
        int64_t off;
        bool done;
        assert_int_equal(cf_cass_cdc_idx_read(idx, 5, 1, &off, &done, &err), CF_OK);
        assert_int_equal(off, (int64_t)end);
        assert_int_equal(done, s == 4);
        cf_cass_segment_set_limit(seg, off);
        cf_code rc;
        while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK) {
            assert_true(e.end_position <= off);
            got++;
        }
        int expect = 0;
        for (int i = 0; i < clean.entries; i++)
            if (clean.positions[i] < (int64_t)end) expect++;
        assert_int_equal(got, expect);
        if (s < 4)
            assert_int_equal(rc, CF_ERR_AGAIN);
        else
            assert_true(rc == CF_ERR_EOF || rc == CF_ERR_AGAIN);
    }
    assert_int_equal(got, clean.entries);
    free(idx);
    cf_cass_segment_destroy(seg);
    free(p);
}

/* A segment that is still being written: the index is ahead of the file. */
static void test_cdc_file_behind_index(void **state) {
    (void)state;
    size_t n, mk[16];
    uint8_t *p = slurp_sections(&n, mk);
    const char *path = copy_path();
    spit(path, p, mk[1] + 100); /* section 2 only partly on disk */
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_OK);
    cf_cass_segment_set_limit(seg, (int64_t)mk[2]);
    cf_cass_entry e;
    cf_code rc;
    int got = 0;
    while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK) got++;
    assert_int_equal(rc, CF_ERR_AGAIN); /* not corrupt: wait for the bytes */
    spit(path, p, n);                    /* the rest arrives */
    while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK) got++;
    assert_int_equal(rc, CF_ERR_AGAIN);
    int expect = 0;
    for (int i = 0; i < clean.entries; i++)
        if (clean.positions[i] < (int64_t)mk[2]) expect++;
    assert_int_equal(got, expect);
    cf_cass_segment_destroy(seg);
    free(p);
}

/* ---- what a segment's _cdc.idx promises (cf_cass_segment_set_cdc_index) ---- */

/* Read path with its index given as (off, completed); counts into rr, and
 * the code that ended the read. */
static cf_code read_cdc(const char *path, int64_t off, bool completed, readout *rr) {
    memset(rr, 0, sizeof *rr);
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_OK);
    cf_cass_segment_set_cdc_index(seg, off, completed);
    cf_cass_entry e;
    cf_code rc;
    while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK || rc == CF_ERR_CORRUPT) {
        if (rc == CF_OK) {
            rr->positions[rr->entries++] = e.position;
            continue;
        }
        if (!rr->corrupt++) {
            snprintf(rr->first_where, sizeof rr->first_where, "%s", err.where);
            snprintf(rr->first_msg, sizeof rr->first_msg, "%s", err.message);
        }
    }
    assert_int_equal(cf_cass_segment_get_stats(seg)->corrupt, (uint64_t)rr->corrupt);
    cf_cass_segment_destroy(seg);
    return rc;
}

static int entries_below(int64_t off) {
    int k = 0;
    for (int i = 0; i < clean.entries; i++) k += clean.positions[i] < off;
    return k;
}

static void expect_where(const readout *rr, const char *path, int64_t off) {
    char want[640];
    snprintf(want, sizeof want, "%s@%lld", path, (long long)off);
    assert_string_equal(rr->first_where, want);
}

/* The plain segment has 4 sections, the last one empty (Cassandra ends a
 * segment it closes with an empty section); its index (as Cassandra writes
 * it when the segment is done) names the end of that one. */
static void test_cdc_index_promise_plain(void **state) {
    (void)state;
    size_t n, mk[16];
    uint8_t *p = slurp_sections(&n, mk);
    int64_t last_end = (int64_t)be32(p + mk[3]);
    const char *path = copy_path();
    readout rr;
    /* the whole segment: every entry, a clean end */
    spit(path, p, n);
    assert_int_equal(read_cdc(path, last_end, true, &rr), CF_ERR_EOF);
    assert_int_equal(rr.entries, clean.entries);
    assert_int_equal(rr.corrupt, 0);
    /* not COMPLETED, up to section 3: stops there without an error */
    assert_int_equal(read_cdc(path, (int64_t)mk[2], false, &rr), CF_ERR_AGAIN);
    assert_int_equal(rr.entries, entries_below((int64_t)mk[2]));
    assert_int_equal(rr.corrupt, 0);
    /* cut exactly where section 3 begins: without the index that is a clean
     * end, with it a data error (it was read as complete: entries missing) */
    spit(path, p, mk[2]);
    assert_int_equal(read_cdc(path, last_end, true, &rr), CF_ERR_EOF);
    assert_int_equal(rr.corrupt, 1);
    assert_non_null(strstr(rr.first_msg, "ends before the offset its cdc index names"));
    expect_where(&rr, path, (int64_t)mk[2]);
    assert_int_equal(rr.entries, entries_below((int64_t)mk[2]));
    /* the same for a live index (not COMPLETED): synced data is missing */
    assert_int_equal(read_cdc(path, last_end, false, &rr), CF_ERR_EOF);
    assert_int_equal(rr.corrupt, 1);
    /* cut where the empty last section begins: reported too */
    spit(path, p, mk[3]);
    assert_int_equal(read_cdc(path, last_end, true, &rr), CF_ERR_EOF);
    assert_int_equal(rr.corrupt, 1);
    assert_int_equal(rr.entries, clean.entries);
    /* cut inside section 3: reported, not "wait for the bytes" */
    spit(path, p, mk[2] + 500);
    assert_int_equal(read_cdc(path, last_end, true, &rr), CF_ERR_EOF);
    assert_true(rr.corrupt >= 1);
    /* sections 3 and 4 zeroed (a preallocated segment's zeros where data was) */
    uint8_t *z = malloc(n);
    memcpy(z, p, n);
    memset(z + mk[2], 0, (size_t)(last_end - (int64_t)mk[2]));
    spit(path, z, n);
    assert_int_equal(read_cdc(path, last_end, true, &rr), CF_ERR_EOF);
    assert_int_equal(rr.corrupt, 1);
    assert_non_null(strstr(rr.first_msg, "zeros where the cdc index promises a sync section"));
    expect_where(&rr, path, (int64_t)mk[2]);
    /* an index that promises more than the segment holds */
    spit(path, p, n);
    assert_int_equal(read_cdc(path, last_end + 4096, true, &rr), CF_ERR_EOF);
    assert_int_equal(rr.corrupt, 1);
    assert_int_equal(rr.entries, clean.entries);
    expect_where(&rr, path, last_end);
    /* an offset inside a section: the index is not this segment's; reported,
     * and everything read */
    assert_int_equal(read_cdc(path, (int64_t)mk[2] + 100, true, &rr), CF_ERR_EOF);
    assert_int_equal(rr.corrupt, 1);
    assert_non_null(strstr(rr.first_msg, "falls inside a sync section"));
    expect_where(&rr, path, (int64_t)mk[2]);
    assert_int_equal(rr.entries, clean.entries);
    /* COMPLETED at the end of section 2 while more sections follow: reported, read */
    assert_int_equal(read_cdc(path, (int64_t)mk[2], true, &rr), CF_ERR_EOF);
    assert_int_equal(rr.corrupt, 1);
    assert_non_null(strstr(rr.first_msg, "sync section after the offset"));
    assert_int_equal(rr.entries, clean.entries);
    free(z);
    free(p);
}

/* Entries zeroed inside a section (with or without an index): reported, the
 * section's rest skipped, the next sections read. It read as a clean end. */
static void test_zeroed_entries(void **state) {
    (void)state;
    size_t n, mk[16];
    uint8_t *p = slurp_sections(&n, mk);
    int k = entries_below((int64_t)mk[3]) - 3; /* the last three entries of section 3 */
    int64_t from = clean.positions[k];
    memset(p + from, 0, mk[3] - (size_t)from);
    read_damaged(p, n, from, "entry of size 0 inside a sync section");
    assert_int_equal(r.entries, clean.entries - 3);
    /* only the first entry of section 3 zeroed: the section's rest is skipped */
    free(p);
    p = slurp_sections(&n, mk);
    k = entries_below((int64_t)mk[2]);
    memset(p + clean.positions[k], 0, 4);
    read_damaged(p, n, clean.positions[k], "entry of size 0 inside a sync section");
    assert_int_equal(r.entries, entries_below((int64_t)mk[2]) + (clean.entries - entries_below((int64_t)mk[3])));
    free(p);
}

/* A compressed fixture of Cassandra 5.0 (tests/data/cassandra/v7-zstd):
 * cut where its last section begins, with the COMPLETED index beside it. */
#define ZSTD_DIR CF_TESTS_DIR "/data/cassandra/v7-zstd/cdc_raw"
static void test_cdc_index_promise_compressed(void **state) {
    (void)state;
    char **logs = list_logs(ZSTD_DIR);
    assert_non_null(logs);
    assert_non_null(logs[0]);
    size_t n;
    uint8_t *p = slurp(logs[0], &n);
    char *idx = cf_cass_cdc_idx_path(logs[0]);
    int64_t off;
    bool done;
    cf_err err;
    assert_int_equal(cf_cass_cdc_idx_read(idx, 0, 0, &off, &done, &err), CF_OK);
    assert_true(done);
    size_t hdr = 14 + ((size_t)p[12] << 8 | p[13]) + 4, mk[64];
    int ns = markers(p, n, hdr, mk, 64);
    assert_true(ns >= 2);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, strrchr(logs[0], '/') + 1);
    readout whole, rr;
    spit(path, p, n);
    assert_int_equal(read_cdc(path, off, true, &whole), CF_ERR_EOF);
    assert_int_equal(whole.corrupt, 0);
    assert_true(whole.entries > 0);
    /* the last section is the empty one Cassandra ends a segment with: cut
     * where the last one with data begins */
    spit(path, p, mk[ns - 2]);
    assert_int_equal(read_cdc(path, off, true, &rr), CF_ERR_EOF);
    assert_int_equal(rr.corrupt, 1);
    expect_where(&rr, path, (int64_t)mk[ns - 2]);
    assert_true(rr.entries < whole.entries);
    /* cut inside that section: it does not decompress, reported */
    spit(path, p, mk[ns - 2] + (mk[ns - 1] - mk[ns - 2]) / 2);
    assert_int_equal(read_cdc(path, off, true, &rr), CF_ERR_EOF);
    assert_true(rr.corrupt >= 1);
    free(idx);
    free(p);
    for (char **l = logs; *l; l++) free(*l);
    free(logs);
}

/* A FIFO named like a segment or an index does not block the reader; a
 * directory in a segment's place and an empty folder are refused saying what
 * was found. */
static void test_non_regular_files(void **state) {
    (void)state;
    alarm(20); /* a blocking open would hang here */
    char d[600], path[700];
    snprintf(d, sizeof d, "%s/nonreg", tmpdir);
    assert_int_equal(mkdir(d, 0755), 0);
    cf_cass_dir_entry *de;
    size_t nd;
    cf_err err;
    assert_int_equal(cf_cass_dir_list(d, &de, &nd, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "holds no commit log segments"));
    assert_non_null(strstr(err.detail, "empty"));
    snprintf(path, sizeof path, "%s/notes.txt", d);
    spit(path, "x", 1);
    assert_int_equal(cf_cass_dir_list(d, &de, &nd, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.detail, "notes.txt"));
    snprintf(path, sizeof path, "%s/CommitLog-7-5.log", d);
    assert_int_equal(mkfifo(path, 0644), 0);
    cf_cass_segment *seg;
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_ERR_INVALID);
    assert_non_null(strstr(err.detail, "FIFO"));
    assert_string_equal(err.where, path);
    char *ip = cf_cass_cdc_idx_path(path);
    assert_int_equal(mkfifo(ip, 0644), 0);
    int64_t off;
    bool done;
    assert_int_equal(cf_cass_cdc_idx_read(ip, 0, 0, &off, &done, &err), CF_ERR_INVALID);
    assert_non_null(strstr(err.detail, "FIFO"));
    free(ip);
    snprintf(path, sizeof path, "%s/CommitLog-7-4.log", d);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(cf_cass_dir_list(d, &de, &nd, &err), CF_OK);
    assert_int_equal(nd, 2);
    assert_int_equal(de[0].id, 4);
    assert_int_equal(de[0].problem, CF_ERR_INVALID);
    assert_non_null(strstr(de[0].err.detail, "a directory"));
    assert_string_equal(de[0].err.where, path);
    assert_int_equal(de[1].id, 5);
    assert_int_equal(de[1].problem, CF_ERR_INVALID);
    assert_non_null(strstr(de[1].err.detail, "FIFO"));
    assert_true(de[1].has_idx);
    cf_cass_dir_entries_free(de, nd);
    alarm(0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_baseline),
        cmocka_unit_test(test_entry_crc_skips_one_entry),
        cmocka_unit_test(test_size_crc_skips_rest_of_section),
        cmocka_unit_test(test_bad_marker_resyncs),
        cmocka_unit_test(test_impossible_length),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_header_errors),
        cmocka_unit_test(test_lz4),
        cmocka_unit_test(test_snappy),
        cmocka_unit_test(test_deflate),
        cmocka_unit_test(test_zstd),
        cmocka_unit_test(test_idx_parse),
        cmocka_unit_test(test_cdc_follow),
        cmocka_unit_test(test_cdc_file_behind_index),
        cmocka_unit_test(test_cdc_index_promise_plain),
        cmocka_unit_test(test_zeroed_entries),
        cmocka_unit_test(test_cdc_index_promise_compressed),
        cmocka_unit_test(test_non_regular_files),
    };
    (void)g_table;
    return cmocka_run_group_tests(tests, setup, teardown);
}
