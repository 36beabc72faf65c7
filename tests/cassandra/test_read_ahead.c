/*
 * test_read_ahead.c - the read-ahead of complete segments
 * (cf_cass_segment_set_complete) against the reader over the same bytes in
 * memory (cf_cass_segment_open_mem: no file, no read-ahead), and a live
 * segment written in place as Cassandra writes it.
 *
 * Oracle: the memory reader over the file's bytes, and Cassandra's own
 * segments (tests/data/cassandra, the legacy sets of CommitLogUpgradeTest):
 * every result of cf_cass_segment_next (code, entry bytes and positions,
 * error message and location) must be the same whatever the read-ahead
 * block: 1 byte (every section crosses the window's end), odd sizes (the
 * sections straddle the blocks at every offset), the 1 MiB default over a
 * segment of several MiB made of the fixture's sections (re-framed: markers
 * and their CRCs computed as Cassandra's CommitLogSegment.writeSyncMarker),
 * damaged copies (resync reads through the window).
 *
 * Live: a preallocated segment (zeros), sections written into it in place
 * one at a time and the index raised each time, read as it grows; then its
 * index says COMPLETED (the reader switches to read-ahead mid-segment). It
 * must read every entry: none of the zeros it saw before may stick.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cass_test_util.h"
#include "seg_bytes.h"

#define DATA CF_TESTS_DIR "/data/cassandra"

static char tmpdir[256];

static int setup(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cf_cass_raXXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Everything one read returned, as a running digest of every result, and counts. */
typedef struct trace {
    uint32_t digest;
    int entries, corrupt, again, io;
    cf_code last;
} trace;

static void mix(trace *t, const void *p, size_t n) { t->digest = (uint32_t)crc32(t->digest, p, (uInt)n); }

static void run(cf_cass_segment *seg, trace *t) {
    memset(t, 0, sizeof *t);
    cf_cass_entry e;
    cf_err err;
    for (int guard = 0; guard < 1000000; guard++) {
        memset(&err, 0, sizeof err);
        cf_code rc = cf_cass_segment_next(seg, &e, &err);
        mix(t, &rc, sizeof rc);
        if (rc == CF_OK) {
            t->entries++;
            mix(t, e.data, e.len);
            int64_t v[4] = {(int64_t)e.len, e.position, e.end_position, e.file_offset};
            mix(t, v, sizeof v);
            continue;
        }
        t->last = rc;
        if (rc == CF_ERR_CORRUPT) {
            t->corrupt++;
            /* the message names the path (file) or the name (memory): what follows it */
            const char *m = strstr(err.message, ".log: ");
            m = m ? m + 6 : err.message;
            mix(t, m, strlen(m));
            if (getenv("CF_TEST_VERBOSE")) fprintf(stderr, "%s | %s | %s\n", err.message, err.detail, err.where);
            mix(t, err.detail, strlen(err.detail));
            /* where names the path (file) or the name (memory): compare the offset */
            const char *at = strrchr(err.where, '@');
            if (at) mix(t, at, strlen(at));
            continue;
        }
        if (rc == CF_ERR_AGAIN) t->again++;
        if (rc == CF_ERR_IO) t->io++;
        return;
    }
    fail_msg("the reader does not end");
}

/* Index: offset < -1: none; -1: set_limit none; else set_cdc_index. */
static void read_mem(const uint8_t *p, size_t n, const char *name, const cf_cass_segment_opts *o, int64_t off,
                     bool done, trace *t) {
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open_mem(p, n, name, o, &seg, &err), CF_OK);
    if (off >= 0) cf_cass_segment_set_cdc_index(seg, off, done);
    run(seg, t);
    cf_cass_segment_destroy(seg);
}

static void read_file(const char *path, const cf_cass_segment_opts *o, int64_t off, bool done, trace *t) {
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open(path, o, &seg, &err), CF_OK);
    if (off >= 0) cf_cass_segment_set_cdc_index(seg, off, done);
    cf_cass_segment_set_complete(seg); /* (again, if the index said COMPLETED: a no-op) */
    run(seg, t);
    cf_cass_segment_destroy(seg);
}

static const size_t blocks[] = {1, 7, 8, 12, 13, 100, 509, 4096, 65521, 0 /* the default, 1 MiB */};

/* The file at path, read ahead with every block size, returns what the memory reader returns. */
static void check_same(const char *path, const cf_cass_segment_opts *key, int64_t off, bool done, int *entries) {
    size_t n;
    uint8_t *p = slurp(path, &n);
    const char *name = strrchr(path, '/') + 1;
    trace want, got;
    read_mem(p, n, name, key, off, done, &want);
    assert_true(want.last == CF_ERR_EOF || want.last == CF_ERR_AGAIN);
    for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++) {
        cf_cass_segment_opts o = {.read_ahead = blocks[b]};
        if (key) o.key = key->key, o.key_len = key->key_len;
        read_file(path, &o, off, done, &got);
        if (got.digest != want.digest || got.entries != want.entries || got.corrupt != want.corrupt)
            fail_msg("%s, read-ahead %zu: %d entries %d corrupt, the memory reader %d entries %d corrupt", path,
                     blocks[b], got.entries, got.corrupt, want.entries, want.corrupt);
        assert_int_equal(got.last, want.last);
    }
    if (entries) *entries += want.entries;
    free(p);
}

/* Every segment of the fixtures Cassandra 5.0 wrote (plain and the four
 * compressions, versions 7 and 8, the RF=3 nodes), with and without its index. */
static void test_fixtures_every_block(void **state) {
    (void)state;
    const char *dirs[] = {"v7-plain", "v8-plain", "v7-lz4", "v8-lz4", "v8-lz4-rollover", "v7-snappy", "v8-snappy",
                          "v7-deflate", "v8-deflate", "v7-zstd", "v8-zstd", "rf3-all-up/node1", "rf3-all-up/node2",
                          "rf3-all-up/node3", "rf3-one-down/node1", "rf3-one-down/node3"};
    int segs = 0, entries = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s/cdc_raw", DATA, dirs[d]);
        char **logs = list_logs(dir);
        assert_non_null(logs);
        for (char **lp = logs; *lp; lp++) {
            char *idx = cf_cass_cdc_idx_path(*lp);
            int64_t off = -1;
            bool done = false;
            cf_err err;
            if (access(idx, F_OK) == 0) assert_int_equal(cf_cass_cdc_idx_read(idx, 1, 1, &off, &done, &err), CF_OK);
            free(idx);
            check_same(*lp, NULL, -1, false, &entries);
            if (off >= 0) check_same(*lp, NULL, off, done, NULL);
            segs++;
        }
        free_list(logs);
    }
    assert_true(segs >= 20);
    assert_true(entries > 1000);
}

/* The legacy sets: 3.0 and 4.0 encrypted segments (sections of their own framing). */
static void test_legacy_every_block(void **state) {
    (void)state;
    const char *sets[] = {"3.4-encrypted", "3.0.13-encrypted", "4.0.11-encrypted"};
    for (size_t k = 0; k < 3; k++) {
        char dir[512], kp[600];
        snprintf(dir, sizeof dir, "%s/%s", LEGACY_DIR, sets[k]);
        snprintf(kp, sizeof kp, "%s/key.hex", dir);
        uint8_t key[32];
        cf_cass_segment_opts o = {.key = key, .key_len = read_key_hex(kp, key, sizeof key)};
        char **logs = list_logs(dir);
        assert_non_null(logs);
        int entries = 0;
        for (char **lp = logs; *lp; lp++) check_same(*lp, o.key_len ? &o : NULL, -1, false, &entries);
        assert_true(entries > 0);
        free_list(logs);
    }
}

/* A plain segment of ~3 MiB made of the sections of a fixture (v8-plain),
 * repeated: so the 1 MiB default block is crossed by sections too. Returns
 * the bytes and, in *end, the end of the last section (its index offset). */
static size_t big_header; /* its header's size: where its first marker is */

static uint8_t *big_segment(size_t *len, int64_t *end, int *sections) {
    size_t n;
    uint8_t *src = slurp(DATA "/v8-plain/cdc_raw/CommitLog-8-1795978873595.log", &n);
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open_mem(src, n, "x.log", NULL, &seg, &err), CF_OK);
    const cf_cass_segment_info *info = cf_cass_segment_get_info(seg);
    size_t hdr = info->header_size;
    big_header = hdr;
    uint64_t id = (uint64_t)info->id;
    cf_cass_segment_destroy(seg);
    uint32_t idc = crc_int(crc_int(0, (uint32_t)(id & 0xffffffffu)), (uint32_t)(id >> 32));
    size_t cap = 3u << 20 | 4096, out = hdr;
    uint8_t *p = calloc(1, cap + (1u << 20));
    memcpy(p, src, hdr);
    int k = 0;
    while (out < cap) {
        for (size_t off = hdr; off + 8 <= n && out < cap;) {
            uint32_t next = be32(src + off);
            if (next == 0 || next <= off + 8 || next > n) break;
            size_t body = next - off - 8;
            put32(p + out, (uint32_t)(out + 8 + body));
            put32(p + out + 4, crc_int(idc, (uint32_t)out));
            memcpy(p + out + 8, src + off + 8, body);
            out += 8 + body;
            off = next;
            k++;
        }
    }
    *end = (int64_t)out;
    *len = out + 8; /* zeros end it */
    *sections = k;
    free(src);
    return p;
}

static void test_big_segment_default_block(void **state) {
    (void)state;
    size_t n;
    int64_t end;
    int sections;
    uint8_t *p = big_segment(&n, &end, &sections);
    assert_true(n > (3u << 20));
    assert_true(sections > 1000);
    char path[512];
    snprintf(path, sizeof path, "%s/CommitLog-8-1795978873595.log", tmpdir);
    spit(path, p, n);
    int entries = 0;
    check_same(path, NULL, -1, false, &entries);
    assert_true(entries > 3000);
    check_same(path, NULL, end, true, NULL);
    /* damaged: a marker's CRC in the second MiB flipped (resync through the
     * window), an entry's data in the third */
    size_t off = big_header;
    while (off < (3u << 19)) off = be32(p + off); /* the first marker after 1.5 MiB */
    p[off + 5] ^= 0x40;
    p[5u << 19] ^= 0x01; /* in some entry (or marker) at 2.5 MiB */
    spit(path, p, n);
    trace t;
    read_file(path, NULL, -1, false, &t);
    assert_true(t.corrupt >= 2);
    check_same(path, NULL, -1, false, NULL);
    check_same(path, NULL, end, true, NULL);
    free(p);
}

/* The live case: a preallocated segment Cassandra writes in place. */
static void test_live_in_place(void **state) {
    (void)state;
    size_t n;
    int64_t end;
    int sections;
    uint8_t *p = big_segment(&n, &end, &sections);
    size_t mk[64];
    int nm = 0;
    /* about eight stops in the file, each at a section's end */
    cf_err err;
    size_t first = big_header;
    for (size_t off = first, i = 0; off < (size_t)end; off = be32(p + off), i++)
        if (i % (size_t)(sections / 8 + 1) == 0 && nm < 63) mk[nm++] = off;
    mk[nm++] = (size_t)end;
    trace want;
    read_mem(p, n, "x.log", NULL, end, true, &want);

    char path[512];
    snprintf(path, sizeof path, "%s/CommitLog-8-1795978873595.log", tmpdir);
    uint8_t *z = calloc(1, n);
    spit(path, z, n); /* preallocated: the full length, zeros */
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, p, first, 0), (ssize_t)first); /* the header */
    cf_cass_segment *seg;
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_OK);
    cf_cass_entry e;
    cf_code rc;
    int got = 0;
    size_t written = first;
    for (int s = 1; s < nm; s++) {
        /* Cassandra: the entries first, then the marker, then the index */
        assert_int_equal(pwrite(fd, p + written + 8, mk[s] - written - 8, (off_t)written + 8),
                         (ssize_t)(mk[s] - written - 8));
        cf_cass_segment_set_cdc_index(seg, (int64_t)written, false); /* the index still at the old end */
        while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK) got++;
        assert_int_equal(rc, CF_ERR_AGAIN);
        assert_int_equal(pwrite(fd, p + written, 8, (off_t)written), 8);
        /* the sections between two stops: their markers too */
        for (size_t off = written; off < mk[s]; off = be32(p + off))
            assert_int_equal(pwrite(fd, p + off, 8, (off_t)off), 8);
        written = mk[s];
        cf_cass_segment_set_cdc_index(seg, (int64_t)written, false);
        while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK) got++;
        assert_int_equal(rc, CF_ERR_AGAIN);
    }
    assert_int_equal(got, want.entries);
    cf_cass_segment_destroy(seg);

    /* the same, the index saying COMPLETED halfway (the rest of the file
     * written before: Cassandra syncs before it writes COMPLETED) */
    spit(path, z, n);
    assert_int_equal(pwrite(fd, p, first, 0), (ssize_t)first);
    assert_int_equal(cf_cass_segment_open(path, NULL, &seg, &err), CF_OK);
    got = 0;
    written = first;
    for (int s = 1; s < nm; s++) {
        if (s == nm / 2) { /* all of it on disk, COMPLETED */
            assert_int_equal(pwrite(fd, p + written, (size_t)end - written, (off_t)written),
                             (ssize_t)((size_t)end - written));
            cf_cass_segment_set_cdc_index(seg, end, true);
            while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK) got++;
            assert_int_equal(rc, CF_ERR_EOF);
            break;
        }
        assert_int_equal(pwrite(fd, p + written, mk[s] - written, (off_t)written), (ssize_t)(mk[s] - written));
        written = mk[s];
        cf_cass_segment_set_cdc_index(seg, (int64_t)written, false);
        while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK) got++;
        assert_int_equal(rc, CF_ERR_AGAIN);
    }
    assert_int_equal(got, want.entries);
    assert_int_equal((int)cf_cass_segment_get_stats(seg)->corrupt, 0);
    cf_cass_segment_destroy(seg);
    close(fd);
    free(z);
    free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_every_block),
        cmocka_unit_test(test_legacy_every_block),
        cmocka_unit_test(test_big_segment_default_block),
        cmocka_unit_test(test_live_in_place),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
