/*
 * test_state.c - the merge of stored states (the Cassandra state store,
 * cf_sc_state_merge) and the part of a state one range stores
 * (cf_sc_state_restrict), without a server.
 *
 * Oracles: the rules the CEP-44 code merges states of overlapping ranges by
 * (docs: per replica the minimum marker, replica counts merged with max, so
 * a token-range move takes the old ranges' states over), with our stricter
 * reading: a token belongs to the newest state covering it. The snapshots
 * here are written by hand in the format state.c documents (the pending
 * digests' "CFP1" blob encoded by this file, not by the code under test).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/text.h"

#define MIN INT64_MIN
#define MAX INT64_MAX

typedef struct pend {
    uint8_t d;         /* the digest: 16 times this byte */
    uint64_t mask;     /* bits of the snapshot's replica list */
    uint32_t copies;
    int64_t token;
    bool published;
} pend;

static void uv(cf_buf *b, uint64_t v) {
    while (v >= 0x80) {
        cf_buf_append_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    cf_buf_append_byte(b, (uint8_t)v);
}

static void le(cf_buf *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) cf_buf_append_byte(b, (uint8_t)(v >> (8 * i)));
}

/* A snapshot: replicas "name=seg:pos:done" (seg -1: none), one table ks.t. */
static cf_value *snap(const char *const *reps, size_t nrep, const pend *p, size_t np) {
    cf_value *m = cf_value_map();
    cf_value_map_put_lit_long(m, "version", 1);
    cf_value_map_put_lit_long(m, "replicas", (int64_t)nrep);
    char k[64];
    for (size_t i = 0; i < nrep; i++) {
        char name[64];
        long long seg, pos;
        int done;
        assert_int_equal(sscanf(reps[i], "%63[^=]=%lld:%lld:%d", name, &seg, &pos, &done), 4);
        snprintf(k, sizeof k, "r%zu.name", i);
        cf_value_map_put_lit(m, k, cf_value_string(name));
        snprintf(k, sizeof k, "r%zu.segment", i);
        cf_value_map_put_lit_long(m, k, seg);
        snprintf(k, sizeof k, "r%zu.position", i);
        cf_value_map_put_lit_long(m, k, pos);
        snprintf(k, sizeof k, "r%zu.done", i);
        cf_value_map_put_lit_long(m, k, done);
    }
    cf_value_map_put_lit(m, "ranges", cf_value_string("all"));
    cf_buf b = CF_BUF_INIT;
    cf_buf_append(&b, "CFP1", 4);
    uv(&b, 1);
    uv(&b, 2);
    cf_buf_append(&b, "ks", 2);
    uv(&b, 1);
    cf_buf_append(&b, "t", 1);
    uv(&b, np);
    for (size_t i = 0; i < np; i++) {
        for (int j = 0; j < 16; j++) cf_buf_append_byte(&b, p[i].d);
        le(&b, p[i].mask, 8);
        le(&b, p[i].copies, 4);
        uv(&b, 0);
        le(&b, (uint64_t)p[i].token, 8);
        le(&b, 1000 + p[i].d, 8);
        cf_buf_append_byte(&b, p[i].published ? 1 : 0);
    }
    cf_buf b64 = CF_BUF_INIT;
    cf_base64_encode(&b64, (const uint8_t *)b.data, b.len);
    cf_value_map_put_lit_long(m, "pending.count", (int64_t)np);
    cf_value_map_put_lit(m, "pending", cf_value_string(b64.data ? b64.data : ""));
    cf_value_map_put_lit_long(m, "published", 7);
    cf_buf_free(&b);
    cf_buf_free(&b64);
    return m;
}

static int64_t lget(const cf_value *m, const char *k) {
    const cf_value *v = cf_value_map_get_str(m, k);
    if (!v) fail_msg("no key %s", k);
    return v->u.i;
}

static const char *sget(const cf_value *m, const char *k) {
    const cf_value *v = cf_value_map_get_str(m, k);
    return v && v->type == CF_STRING ? v->u.s.ptr : NULL;
}

/* The marker of replica `name` in m as "seg:pos:done" ("none" when absent or seg < 0). */
static const char *marker(const cf_value *m, const char *name) {
    static char out[96];
    char k[64];
    for (int64_t i = 0; i < lget(m, "replicas"); i++) {
        snprintf(k, sizeof k, "r%lld.name", (long long)i);
        if (strcmp(sget(m, k), name) != 0) continue;
        snprintf(k, sizeof k, "r%lld.segment", (long long)i);
        int64_t seg = lget(m, k);
        snprintf(k, sizeof k, "r%lld.position", (long long)i);
        int64_t pos = lget(m, k);
        snprintf(k, sizeof k, "r%lld.done", (long long)i);
        if (seg < 0) return "none";
        snprintf(out, sizeof out, "%lld:%lld:%lld", (long long)seg, (long long)pos, (long long)lget(m, k));
        return out;
    }
    return "none";
}

static int rep_index(const cf_value *m, const char *name) {
    char k[64];
    for (int64_t i = 0; i < lget(m, "replicas"); i++) {
        snprintf(k, sizeof k, "r%lld.name", (long long)i);
        if (strcmp(sget(m, k), name) == 0) return (int)i;
    }
    return -1;
}

/* The pending digests of m (decoded here from the documented format). */
static size_t pendings(const cf_value *m, pend *out, size_t max) {
    const char *s = sget(m, "pending");
    assert_non_null(s);
    size_t n = strlen(s), k = 0;
    uint8_t *b = malloc(n + 4);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        acc = acc << 6 | (uint32_t)cf_base64_digit((unsigned char)s[i]);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            b[k++] = (uint8_t)(acc >> bits);
        }
    }
    const uint8_t *p = b + 4;
#define UV(v)                                                                                                          \
    do {                                                                                                               \
        v = 0;                                                                                                         \
        for (int sh = 0;; sh += 7) {                                                                                   \
            uint8_t c = *p++;                                                                                          \
            v |= (uint64_t)(c & 0x7f) << sh;                                                                           \
            if (!(c & 0x80)) break;                                                                                    \
        }                                                                                                              \
    } while (0)
#define LE(v, nb)                                                                                                      \
    do {                                                                                                               \
        v = 0;                                                                                                         \
        for (int q = 0; q < nb; q++) v |= (uint64_t)p[q] << (8 * q);                                                   \
        p += nb;                                                                                                       \
    } while (0)
    assert_memory_equal(b, "CFP1", 4);
    uint64_t nt, ne, l, x;
    UV(nt);
    for (uint64_t i = 0; i < nt * 2; i++) {
        UV(l);
        p += l;
    }
    UV(ne);
    assert_true(ne <= max);
    for (uint64_t i = 0; i < ne; i++) {
        out[i].d = p[0];
        p += 16;
        LE(out[i].mask, 8);
        LE(x, 4);
        out[i].copies = (uint32_t)x;
        UV(x);
        LE(x, 8);
        out[i].token = (int64_t)x;
        LE(x, 8);
        out[i].published = *p++ & 1;
    }
    assert_true(p == b + k);
    free(b);
    return (size_t)ne;
}

static const pend *find(const pend *p, size_t n, uint8_t d) {
    for (size_t i = 0; i < n; i++)
        if (p[i].d == d) return &p[i];
    return NULL;
}

/* The floor of token t for replica name: "seg:pos:done", "none", or NULL when no floor covers t. */
static const char *floor_of(const cf_value *m, int64_t t, const char *name) {
    static char out[96];
    const cf_value *nf = cf_value_map_get_str(m, "floors");
    if (!nf) return NULL;
    char k[64];
    for (int64_t i = 0; i < nf->u.i; i++) {
        snprintf(k, sizeof k, "f%lld.lo", (long long)i);
        int64_t lo = lget(m, k);
        snprintf(k, sizeof k, "f%lld.hi", (long long)i);
        int64_t hi = lget(m, k);
        if (t <= lo || t > hi) continue;
        snprintf(k, sizeof k, "f%lld.r%d", (long long)i, rep_index(m, name));
        const char *v = sget(m, k);
        snprintf(out, sizeof out, "%s", v ? v : "none");
        return out;
    }
    return NULL;
}

static cf_value *merge(const cf_sc_state_row *rows, size_t n, const char *owned) {
    cf_sc_ranges r;
    cf_err err;
    assert_int_equal(cf_sc_ranges_parse(owned, &r, &err), CF_OK);
    cf_value *out = NULL;
    cf_code rc = cf_sc_state_merge(rows, n, &r, &out, &err);
    cf_sc_ranges_free(&r);
    if (rc) fail_msg("merge: %s", err.message);
    return out;
}

/* Two sidecars, lower and upper half of the ring; a third owns the whole ring. */
static void test_takeover_two_halves(void **state) {
    (void)state;
    const char *ra[] = {"n1=5:100:0", "n2=4:0:1"};
    const char *rb[] = {"n2=3:10:0", "n1=3:50:0"}; /* B lists the replicas in another order */
    pend pa[] = {{0xa1, 1, 1, -5, false}, {0xa2, 3, 2, -6, true}};
    pend pb[] = {{0xb1, 1, 1, 7, false}, {0xb2, 2, 1, 8, false}};
    cf_value *a = snap(ra, 2, pa, 2), *b = snap(rb, 2, pb, 2);
    cf_sc_state_row rows[] = {{{MIN, 0}, 10, a}, {{0, MIN}, 20, b}};
    cf_value *m = merge(rows, 2, "all");
    /* reading resumes at the earliest owner's position, per replica */
    assert_string_equal(marker(m, "n1"), "3:50:0");
    assert_string_equal(marker(m, "n2"), "3:10:0");
    /* each half keeps its owner's own positions */
    assert_string_equal(floor_of(m, -5, "n1"), "5:100:0");
    assert_string_equal(floor_of(m, -5, "n2"), "4:0:1");
    assert_string_equal(floor_of(m, 7, "n1"), "3:50:0");
    assert_string_equal(floor_of(m, 7, "n2"), "3:10:0");
    assert_string_equal(floor_of(m, MAX, "n1"), "3:50:0");
    assert_string_equal(floor_of(m, MIN + 1, "n1"), "5:100:0");
    /* every pending digest, its replicas by name */
    pend got[8];
    assert_int_equal(pendings(m, got, 8), 4);
    int n1 = rep_index(m, "n1"), n2 = rep_index(m, "n2");
    assert_int_equal(find(got, 4, 0xa1)->mask, 1ULL << n1);
    assert_int_equal(find(got, 4, 0xa2)->mask, (1ULL << n1) | (1ULL << n2));
    assert_true(find(got, 4, 0xa2)->published);
    assert_int_equal(find(got, 4, 0xb1)->mask, 1ULL << n2); /* bit 0 of B is n2 */
    assert_int_equal(find(got, 4, 0xb2)->mask, 1ULL << n1);
    assert_int_equal(find(got, 4, 0xb2)->token, 8);
    assert_string_equal(sget(m, "ranges"), "all");
    cf_value_destroy(m);
    /* taking over only the upper half: the lower half's state is not read */
    m = merge(rows, 2, "(0,9223372036854775807]");
    assert_string_equal(marker(m, "n1"), "3:50:0");
    assert_int_equal(pendings(m, got, 8), 2);
    assert_non_null(find(got, 2, 0xb1));
    assert_null(cf_value_map_get_str(m, "floors")); /* one owner: its markers are the floor */
    cf_value_destroy(m);
    cf_value_destroy(a);
    cf_value_destroy(b);
}

/* A row all of whose tokens newer rows cover is left out: its markers and
 * pending digests are history (e.g. a sidecar's rows from before it took
 * over the whole ring). */
static void test_newest_owner_wins(void **state) {
    (void)state;
    const char *rold[] = {"n1=2:0:0"}, *rnew[] = {"n1=9:900:0"};
    pend pold[] = {{0x01, 1, 1, 5, false}}, pnew[] = {{0x02, 1, 1, 6, false}};
    cf_value *o = snap(rold, 1, pold, 1), *n = snap(rnew, 1, pnew, 1);
    cf_sc_state_row rows[] = {{{0, 100}, 5, o}, {{MIN, MIN}, 9, n}};
    cf_value *m = merge(rows, 2, "all");
    assert_string_equal(marker(m, "n1"), "9:900:0");
    pend got[4];
    assert_int_equal(pendings(m, got, 4), 1);
    assert_int_equal(got[0].d, 0x02);
    assert_null(cf_value_map_get_str(m, "floors"));
    cf_value_destroy(m);
    /* the other way round: the newer row covers part, the old one still owns the rest */
    cf_sc_state_row rows2[] = {{{0, 100}, 9, n}, {{MIN, MIN}, 5, o}};
    m = merge(rows2, 2, "all");
    assert_string_equal(marker(m, "n1"), "2:0:0");
    assert_string_equal(floor_of(m, 50, "n1"), "9:900:0");
    assert_string_equal(floor_of(m, 101, "n1"), "2:0:0");
    assert_int_equal(pendings(m, got, 4), 1); /* 0x01 (token 5) is the newer row's to say: not taken */
    assert_int_equal(got[0].d, 0x02);
    cf_value_destroy(m);
    cf_value_destroy(o);
    cf_value_destroy(n);
}

/* Owned tokens no row covers were never processed: every replica reads from
 * its oldest segment (nothing lost), the covered ones keep their floors. */
static void test_uncovered_reads_from_start(void **state) {
    (void)state;
    const char *ra[] = {"n1=5:100:0"};
    pend pa[] = {{0xa1, 1, 1, -5, false}};
    cf_value *a = snap(ra, 1, pa, 1);
    cf_sc_state_row rows[] = {{{MIN, 0}, 10, a}};
    cf_value *m = merge(rows, 1, "all");
    assert_string_equal(marker(m, "n1"), "none");
    assert_string_equal(floor_of(m, -5, "n1"), "5:100:0");
    assert_null(floor_of(m, 5, "n1"));
    pend got[4];
    assert_int_equal(pendings(m, got, 4), 1);
    cf_value_destroy(m);
    /* no rows at all */
    m = merge(NULL, 0, "all");
    assert_int_equal(lget(m, "replicas"), 0);
    assert_null(cf_value_map_get_str(m, "floors"));
    cf_value_destroy(m);
    /* a replica one owner never read: it reads from its start */
    const char *rb[] = {"n1=1:0:0", "n2=1:0:0"};
    cf_value *b = snap(rb, 2, NULL, 0);
    cf_sc_state_row rows2[] = {{{MIN, 0}, 10, a}, {{0, MIN}, 11, b}};
    m = merge(rows2, 2, "all");
    assert_string_equal(marker(m, "n1"), "1:0:0");
    assert_string_equal(marker(m, "n2"), "none");
    assert_string_equal(floor_of(m, -1, "n2"), "none");
    cf_value_destroy(m);
    cf_value_destroy(a);
    cf_value_destroy(b);
}

/* Rows of one epoch over the same tokens (two writers): the earlier markers,
 * the same digest merged (replicas united, copies max, published if either). */
static void test_same_epoch_union(void **state) {
    (void)state;
    const char *ra[] = {"n1=5:0:0", "n2=6:0:0"}, *rb[] = {"n2=4:0:1", "n1=7:0:0"};
    pend pa[] = {{0x11, 1, 1, 3, false}, {0x12, 1, 2, 4, false}};
    pend pb[] = {{0x11, 1, 3, 3, true}}; /* bit 0 of B: n2 */
    cf_value *a = snap(ra, 2, pa, 2), *b = snap(rb, 2, pb, 1);
    cf_sc_state_row rows[] = {{{MIN, MIN}, 10, a}, {{MIN, MIN}, 10, b}};
    cf_value *m = merge(rows, 2, "all");
    assert_string_equal(marker(m, "n1"), "5:0:0");
    assert_string_equal(marker(m, "n2"), "4:0:1");
    pend got[4];
    assert_int_equal(pendings(m, got, 4), 2);
    const pend *x = find(got, 2, 0x11);
    assert_int_equal(x->mask, (1ULL << rep_index(m, "n1")) | (1ULL << rep_index(m, "n2")));
    assert_int_equal(x->copies, 3);
    assert_true(x->published);
    cf_value_destroy(m);
    cf_value_destroy(a);
    cf_value_destroy(b);
}

/* A digest outside its row's range, or outside the owned ranges, is not taken. */
static void test_out_of_range_dropped(void **state) {
    (void)state;
    const char *ra[] = {"n1=5:0:0"};
    pend pa[] = {{0x21, 1, 1, 50, false}, {0x22, 1, 1, 500, false}, {0x23, 1, 1, -500, false}};
    cf_value *a = snap(ra, 1, pa, 3);
    cf_sc_state_row rows[] = {{{-1000, 100}, 10, a}};
    cf_value *m = merge(rows, 1, "(-1000,0];(0,100]");
    pend got[4];
    assert_int_equal(pendings(m, got, 4), 2);
    assert_non_null(find(got, 2, 0x21));
    assert_non_null(find(got, 2, 0x23));
    assert_string_equal(sget(m, "ranges"), "(-1000,0];(0,100]");
    cf_value_destroy(m);
    m = merge(rows, 1, "(0,100]");
    assert_int_equal(pendings(m, got, 4), 1);
    assert_int_equal(got[0].d, 0x21);
    cf_value_destroy(m);
    cf_value_destroy(a);
}

static void test_corrupt_row(void **state) {
    (void)state;
    cf_value *bad = cf_value_map();
    cf_value_map_put_lit_long(bad, "version", 99);
    cf_sc_state_row rows[] = {{{MIN, MIN}, 1, bad}};
    cf_value *out = NULL;
    cf_err err;
    assert_int_equal(cf_sc_state_merge(rows, 1, NULL, &out, &err), CF_ERR_CORRUPT);
    assert_null(out);
    assert_non_null(strstr(err.message, "unknown version"));
    cf_value_destroy(bad);
}

/* What one range stores: its digests, its floors cut to it; merging the
 * parts of one snapshot gives the snapshot's digests back. */
static void test_restrict_and_back(void **state) {
    (void)state;
    const char *ra[] = {"n1=5:100:0", "n2=5:80:0"};
    pend pa[] = {{0x31, 1, 1, -5, false}, {0x32, 2, 1, 5, false}, {0x33, 3, 2, MAX, true}};
    cf_value *a = snap(ra, 2, pa, 3);
    cf_sc_range lo = {MIN, 0}, hi = {0, MIN};
    cf_value *pl = cf_sc_state_restrict(a, lo), *ph = cf_sc_state_restrict(a, hi);
    assert_string_equal(sget(pl, "ranges"), "(-9223372036854775808,0]");
    pend got[4];
    assert_int_equal(pendings(pl, got, 4), 1);
    assert_int_equal(got[0].d, 0x31);
    assert_int_equal(pendings(ph, got, 4), 2);
    assert_string_equal(marker(ph, "n2"), "5:80:0");
    cf_sc_state_row rows[] = {{lo, 3, pl}, {hi, 3, ph}};
    cf_value *m = merge(rows, 2, "all");
    assert_int_equal(pendings(m, got, 4), 3);
    assert_string_equal(marker(m, "n1"), "5:100:0");
    assert_null(cf_value_map_get_str(m, "floors"));
    /* floors survive a restrict and a merge */
    cf_sc_state_row rows2[] = {{lo, 3, pl}, {hi, 4, snap((const char *[]){"n1=1:0:0", "n2=1:0:0"}, 2, NULL, 0)}};
    cf_value *f = merge(rows2, 2, "all");
    cf_value *fl = cf_sc_state_restrict(f, lo);
    assert_string_equal(floor_of(fl, -5, "n1"), "5:100:0");
    assert_null(floor_of(fl, 5, "n1"));
    cf_sc_state_row rows3[] = {{lo, 9, fl}};
    cf_value *g = merge(rows3, 1, "(-9223372036854775808,0]");
    /* within its range the floor is the row's real position: reading starts there */
    assert_string_equal(marker(g, "n1"), "5:100:0");
    assert_null(cf_value_map_get_str(g, "floors"));
    cf_value_destroy(g);
    cf_value_destroy(fl);
    cf_value_destroy(f);
    cf_value_destroy((cf_value *)rows2[1].snapshot);
    cf_value_destroy(m);
    cf_value_destroy(pl);
    cf_value_destroy(ph);
    cf_value_destroy(a);
}

/* ---------------- the cleanup rule over the rows of every sidecar ---------------- */

/* The cleanup marks of rows, NULL when nothing may be cleaned. */
static cf_value *marks(const cf_sc_state_row *rows, size_t n) {
    cf_err err;
    cf_value *out = (cf_value *)1;
    if (cf_sc_state_cleanup_marks(rows, n, &out, &err)) fail_msg("marks: %s", err.message);
    return out;
}

/* Two sidecars, each half of the ring: per replica the earlier of their markers. */
static void test_cleanup_min_over_rows(void **state) {
    (void)state;
    const char *ra[] = {"n1=10:0:1", "n2=12:0:1"};
    const char *rb[] = {"n2=12:0:1", "n1=8:500:0"};
    cf_value *a = snap(ra, 2, NULL, 0), *b = snap(rb, 2, NULL, 0);
    cf_sc_state_row rows[] = {{{MIN, 0}, 10, a}, {{0, MIN}, 20, b}};
    cf_value *m = marks(rows, 2);
    assert_non_null(m);
    assert_string_equal(marker(m, "n1"), "8:500:0"); /* B has not finished segment 8 */
    assert_string_equal(marker(m, "n2"), "12:0:1");
    cf_value_destroy(m);
    /* B catches up: A's markers now */
    cf_value_destroy(b);
    const char *rb2[] = {"n2=13:0:0", "n1=11:0:1"};
    b = snap(rb2, 2, NULL, 0);
    rows[1].snapshot = b;
    m = marks(rows, 2);
    assert_string_equal(marker(m, "n1"), "10:0:1");
    assert_string_equal(marker(m, "n2"), "12:0:1");
    cf_value_destroy(m);
    cf_value_destroy(a);
    cf_value_destroy(b);
}

/* A range no row covers (a sidecar that has stored no state yet, or whose rows expired): nothing is cleaned. */
static void test_cleanup_uncovered_nothing(void **state) {
    (void)state;
    const char *ra[] = {"n1=10:0:1"};
    cf_value *a = snap(ra, 1, NULL, 0);
    cf_sc_state_row rows[] = {{{MIN, 0}, 10, a}, {{100, MIN}, 20, a}};
    assert_null(marks(rows, 1));
    assert_null(marks(rows, 2)); /* (0, 100] uncovered */
    assert_null(marks(rows, 0));
    rows[1].range = (cf_sc_range){0, MIN};
    cf_value *m = marks(rows, 2);
    assert_string_equal(marker(m, "n1"), "10:0:1");
    cf_value_destroy(m);
    /* wrapping ranges that together cover the ring */
    cf_sc_state_row w[] = {{{500, -500}, 10, a}, {{-500, 500}, 10, a}};
    m = marks(w, 2);
    assert_string_equal(marker(m, "n1"), "10:0:1");
    cf_value_destroy(m);
    cf_value_destroy(a);
}

/* The row of a dead sidecar whose ranges were taken over (every token of it in newer rows) does not hold the
 * cleanup back; a row that still owns a token does. */
static void test_cleanup_stale_row_left_out(void **state) {
    (void)state;
    const char *rold[] = {"n1=3:0:0"}, *rnew[] = {"n1=9:0:1"};
    cf_value *old = snap(rold, 1, NULL, 0), *nw = snap(rnew, 1, NULL, 0);
    cf_sc_state_row rows[] = {{{0, MIN}, 5, old}, {{MIN, MIN}, 50, nw}}; /* the whole ring, newer */
    cf_value *m = marks(rows, 2);
    assert_string_equal(marker(m, "n1"), "9:0:1");
    cf_value_destroy(m);
    /* the newer row covers only part of the old one: the old one still owns tokens */
    cf_sc_state_row part[] = {{{MIN, 0}, 50, nw}, {{0, MIN}, 5, old}, {{0, 1000}, 60, nw}};
    m = marks(part, 3);
    assert_string_equal(marker(m, "n1"), "3:0:0");
    cf_value_destroy(m);
    /* an older row over the same tokens as a newer one (same epoch: both count) */
    cf_sc_state_row same[] = {{{MIN, 0}, 50, nw}, {{0, MIN}, 50, nw}, {{0, MIN}, 50, old}};
    m = marks(same, 3);
    assert_string_equal(marker(m, "n1"), "3:0:0");
    cf_value_destroy(m);
    cf_value_destroy(old);
    cf_value_destroy(nw);
}

/* A replica a counted row does not name, or names with no segment read yet: none of its segments is cleaned. */
static void test_cleanup_replica_unknown_to_a_row(void **state) {
    (void)state;
    const char *ra[] = {"n1=10:0:1", "n2=10:0:1"}, *rb[] = {"n1=10:0:1", "n2=-1:0:0"}, *rc[] = {"n1=10:0:1"};
    cf_value *a = snap(ra, 2, NULL, 0), *b = snap(rb, 2, NULL, 0), *c = snap(rc, 1, NULL, 0);
    cf_sc_state_row rows[] = {{{MIN, 0}, 10, a}, {{0, MIN}, 20, b}};
    cf_value *m = marks(rows, 2);
    assert_string_equal(marker(m, "n1"), "10:0:1");
    assert_string_equal(marker(m, "n2"), "none");
    cf_value_destroy(m);
    rows[1].snapshot = c;
    m = marks(rows, 2);
    assert_string_equal(marker(m, "n1"), "10:0:1");
    assert_string_equal(marker(m, "n2"), "none");
    cf_value_destroy(m);
    cf_value_destroy(a);
    cf_value_destroy(b);
    cf_value_destroy(c);
}

/* A row that is not a snapshot: an error, not a guess. */
static void test_cleanup_corrupt_row(void **state) {
    (void)state;
    cf_value *bad = cf_value_map();
    cf_sc_state_row rows[] = {{{MIN, MIN}, 10, bad}};
    cf_value *out = NULL;
    cf_err err;
    assert_int_equal(cf_sc_state_cleanup_marks(rows, 1, &out, &err), CF_ERR_CORRUPT);
    assert_null(out);
    cf_value_destroy(bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_takeover_two_halves), cmocka_unit_test(test_newest_owner_wins),
        cmocka_unit_test(test_uncovered_reads_from_start), cmocka_unit_test(test_same_epoch_union),
        cmocka_unit_test(test_out_of_range_dropped), cmocka_unit_test(test_corrupt_row),
        cmocka_unit_test(test_restrict_and_back),
        cmocka_unit_test(test_cleanup_min_over_rows), cmocka_unit_test(test_cleanup_uncovered_nothing),
        cmocka_unit_test(test_cleanup_stale_row_left_out), cmocka_unit_test(test_cleanup_replica_unknown_to_a_row),
        cmocka_unit_test(test_cleanup_corrupt_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
