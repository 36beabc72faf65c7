/*
 * test_dedup.c - consistency levels, the pending-digest cache and token
 * ranges.
 *
 * Oracles: Cassandra's ConsistencyLevel.blockFor (ONE 1, TWO 2, THREE 3,
 * QUORUM rf/2+1, ALL rf; LOCAL_QUORUM/EACH_QUORUM the quorum of the data
 * center); replication maps as Cassandra 5.0 prints them (the fixtures'
 * schema.cql and system_schema rows); Cassandra's Range semantics
 * (start, end]. The digests come from the real fixture segments
 * (v8-lz4-rollover: four segments of one node), read as three replicas that
 * hold the same writes, and as three where one replica lacks a segment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cdcflow/sidecar.h"
#include "sc_test_util.h"

static void test_levels(void **state) {
    (void)state;
    static const struct {
        cf_sc_cl cl;
        int rf, want;
    } t[] = {
        {CF_SC_ONE, 1, 1},          {CF_SC_ONE, 3, 1},          {CF_SC_TWO, 1, 0},          {CF_SC_TWO, 3, 2},
        {CF_SC_THREE, 2, 0},        {CF_SC_THREE, 3, 3},        {CF_SC_QUORUM, 1, 1},       {CF_SC_QUORUM, 2, 2},
        {CF_SC_QUORUM, 3, 2},       {CF_SC_QUORUM, 4, 3},       {CF_SC_QUORUM, 5, 3},       {CF_SC_LOCAL_QUORUM, 3, 2},
        {CF_SC_LOCAL_QUORUM, 6, 4}, {CF_SC_EACH_QUORUM, 3, 2},  {CF_SC_ALL, 3, 3},          {CF_SC_ALL, 1, 1},
        {CF_SC_LOCAL_ONE, 3, 1},    {CF_SC_ALL, 0, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (cf_sc_cl_required(t[i].cl, t[i].rf) != t[i].want)
            fail_msg("%s rf %d: %d, want %d", cf_sc_cl_name(t[i].cl), t[i].rf, cf_sc_cl_required(t[i].cl, t[i].rf),
                     t[i].want);
    cf_sc_cl cl;
    cf_err err;
    assert_int_equal(cf_sc_cl_parse("local_quorum", &cl, &err), CF_OK);
    assert_int_equal(cl, CF_SC_LOCAL_QUORUM);
    assert_string_equal(cf_sc_cl_name(cl), "LOCAL_QUORUM");
    assert_int_equal(cf_sc_cl_parse("ANY", &cl, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail, "EACH_QUORUM"));
}

static void test_keyspace_rf(void **state) {
    (void)state;
    int rf = 0;
    cf_err err;
    /* the fixture's DESCRIBE and system_schema forms */
    assert_int_equal(cf_sc_keyspace_rf("{'class': 'SimpleStrategy', 'replication_factor': '1'}", NULL, &rf, &err), CF_OK);
    assert_int_equal(rf, 1);
    assert_int_equal(cf_sc_keyspace_rf("{'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '3'}",
                                       NULL, &rf, &err),
                     CF_OK);
    assert_int_equal(rf, 3);
    assert_int_equal(cf_sc_keyspace_rf("{'class': 'NetworkTopologyStrategy', 'datacenter1': '3'}", NULL, &rf, &err), CF_OK);
    assert_int_equal(rf, 3);
    const char *two = "{'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'dc1': '3', 'dc2': '5'}";
    assert_int_equal(cf_sc_keyspace_rf(two, NULL, &rf, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.hint, "datacenter"));
    assert_int_equal(cf_sc_keyspace_rf(two, "dc2", &rf, &err), CF_OK);
    assert_int_equal(rf, 5);
    assert_int_equal(cf_sc_keyspace_rf(two, "dc9", &rf, &err), CF_ERR_CONFIG);
    assert_int_equal(cf_sc_keyspace_rf("{'class': 'NetworkTopologyStrategy', 'dc1': '3/1'}", NULL, &rf, &err), CF_OK);
    assert_int_equal(rf, 2); /* transient replicas hold no full copy */
    assert_int_equal(cf_sc_keyspace_rf("{'class': 'LocalStrategy'}", NULL, &rf, &err), CF_ERR_CONFIG);
    /* what the fixtures' schema holds, through the DDL parser */
    cf_cass_schema *s = fixture_schema("v8-plain");
    const cf_cass_keyspace *ks = cf_cass_schema_keyspace(s, "cdcks");
    assert_non_null(ks);
    assert_int_equal(cf_sc_keyspace_rf(ks->replication, NULL, &rf, &err), CF_OK);
    assert_int_equal(rf, 1);
    cf_cass_schema_destroy(s);
    /* and as the CQL client keeps it: the system_schema rows' JSON */
    s = cf_cass_schema_new();
    FILE *f = fopen(FIX "/v8-plain/system_schema.json", "rb");
    assert_non_null(f);
    char *json = malloc(1 << 20);
    size_t n = fread(json, 1, (1 << 20) - 1, f);
    fclose(f);
    assert_int_equal(cf_cass_schema_load_system_json(s, json, n, &err), CF_OK);
    free(json);
    ks = cf_cass_schema_keyspace(s, "cdcks");
    assert_non_null(ks);
    rf = 0;
    if (cf_sc_keyspace_rf(ks->replication, NULL, &rf, &err)) fail_msg("%s: %s", ks->replication, err.message);
    assert_int_equal(rf, 1);
    cf_cass_schema_destroy(s);
}

/* ---- digests of real updates, per segment ---- */

typedef struct copy {
    uint8_t d[16];
    int64_t token;
    int seg; /* index of its segment */
} copy;

typedef struct clist {
    copy *c;
    size_t n, cap;
    cf_sc_digester *dg;
    char last_seg[128];
    int seg;
} clist;

static void collect(void *arg, cf_cass_update *u, const char *segname, int64_t pos) {
    (void)pos;
    clist *l = arg;
    if (strcmp(segname, l->last_seg) != 0) {
        if (l->last_seg[0]) l->seg++;
        snprintf(l->last_seg, sizeof l->last_seg, "%s", segname);
    }
    if (!u->table->cdc || u->table->counter) return;
    if (l->n == l->cap) l->c = realloc(l->c, (l->cap = l->cap ? l->cap * 2 : 1024) * sizeof *l->c);
    copy *x = &l->c[l->n++];
    cf_sc_digest(l->dg, u, x->d, NULL);
    x->token = u->token;
    x->seg = l->seg;
}

static clist *rollover(void) {
    clist *l = calloc(1, sizeof *l);
    l->dg = cf_sc_digester_new();
    cf_cass_schema *s = fixture_schema("v8-lz4-rollover");
    each_update(FIX "/v8-lz4-rollover/cdc_raw", s, collect, l);
    cf_cass_schema_destroy(s);
    assert_true(l->n > 3000);
    assert_int_equal(l->seg, 3); /* four segments */
    return l;
}

static void clist_free(clist *l) {
    cf_sc_digester_destroy(l->dg);
    free(l->c);
    free(l);
}

typedef struct tally {
    size_t publish, wait, dup, dropped;
} tally;

static void on_drop(void *arg, const cf_sc_pending *p) {
    tally *t = arg;
    assert_false(p->published);
    t->dropped++;
}

/* Three replicas read in turns of `chunk` copies; replica `missing` (or -1)
 * lacks segment `missing_seg`. Returns the counts; the cache ends empty
 * unless something could not complete. */
static void run3(const clist *l, int required, int chunk, int missing, int missing_seg, size_t max, tally *t,
                 cf_sc_dedup **keep) {
    memset(t, 0, sizeof *t);
    cf_sc_dedup *d = cf_sc_dedup_new(max);
    size_t pos[3] = {0, 0, 0};
    cf_err err;
    bool any = true;
    while (any) {
        any = false;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < chunk && pos[r] < l->n; k++, pos[r]++) {
                any = true;
                const copy *c = &l->c[pos[r]];
                if (r == missing && c->seg == missing_seg) continue;
                cf_sc_verdict v;
                assert_int_equal(cf_sc_dedup_add(d, c->d, r, required, 3, 1000, 7, c->token, &v, &err), CF_OK);
                if (v == CF_SC_PUBLISH) t->publish++;
                else if (v == CF_SC_WAIT) t->wait++;
                else t->dup++;
            }
    }
    if (keep) *keep = d;
    else cf_sc_dedup_destroy(d);
}

static size_t distinct(const clist *l, int skip_seg) {
    /* copies of one replica can repeat a digest (same write twice): count digests once */
    cf_sc_dedup *d = cf_sc_dedup_new(l->n + 1);
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->c[i].seg == skip_seg) continue;
        cf_sc_verdict v;
        cf_sc_dedup_add(d, l->c[i].d, 0, 2, 2, 0, 0, 0, &v, NULL);
        if (cf_sc_dedup_find(d, l->c[i].d)->copies == 1) n++;
    }
    cf_sc_dedup_destroy(d);
    return n;
}

static void test_levels_over_three_replicas(void **state) {
    (void)state;
    clist *l = rollover();
    size_t u = distinct(l, -1);
    assert_true(u > 3000);
    tally t;
    cf_sc_dedup *d;
    /* QUORUM of 3: each digest once, at the second replica's copy */
    run3(l, 2, 64, -1, -1, 100000, &t, &d);
    assert_int_equal(t.publish, u);
    assert_int_equal(t.publish + t.wait + t.dup, 3 * l->n);
    assert_int_equal(cf_sc_dedup_count(d), 0); /* every digest saw its three replicas */
    cf_sc_dedup_destroy(d);
    /* ONE: at the first copy; ALL: at the third */
    run3(l, 1, 7, -1, -1, 100000, &t, NULL);
    assert_int_equal(t.publish, u);
    assert_int_equal(t.wait, 0);
    run3(l, 3, 1000, -1, -1, 100000, &t, &d);
    assert_int_equal(t.publish, u);
    assert_int_equal(t.dup, 3 * l->n - 3 * u); /* only repeats within a replica */
    assert_int_equal(cf_sc_dedup_count(d), 0);
    cf_sc_dedup_destroy(d);
    clist_free(l);
}

static void test_missing_replica_segment(void **state) {
    (void)state;
    clist *l = rollover();
    size_t u = distinct(l, -1), in_seg1 = u - distinct(l, 1);
    assert_true(in_seg1 > 100);
    tally t;
    cf_sc_dedup *d;
    /* LOCAL_QUORUM: two replicas suffice, everything is published */
    run3(l, 2, 64, 2, 1, 100000, &t, &d);
    assert_int_equal(t.publish, u);
    /* the digests of segment 1 wait for replica 2's copy: published, kept until they expire */
    assert_int_equal(cf_sc_dedup_count(d), in_seg1);
    assert_int_equal(cf_sc_dedup_unpublished(d), 0);
    tally x = {0};
    assert_int_equal(cf_sc_dedup_expire(d, 1000 + 5000, 10000, on_drop, &x), 0);
    assert_int_equal(cf_sc_dedup_count(d), in_seg1); /* not yet */
    assert_int_equal(cf_sc_dedup_expire(d, 1000 + 10001, 10000, on_drop, &x), 0);
    assert_int_equal(cf_sc_dedup_count(d), 0); /* published ones go without a drop */
    assert_int_equal(x.dropped, 0);
    cf_sc_dedup_destroy(d);
    /* ALL: segment 1's changes never reach three replicas: dropped after the timeout, counted */
    run3(l, 3, 64, 2, 1, 100000, &t, &d);
    assert_int_equal(t.publish, u - in_seg1);
    assert_int_equal(cf_sc_dedup_unpublished(d), in_seg1);
    assert_int_equal(cf_sc_dedup_expire(d, 1000 + 10001, 10000, on_drop, &x), in_seg1);
    assert_int_equal(x.dropped, in_seg1);
    assert_int_equal(cf_sc_dedup_count(d), 0);
    cf_sc_dedup_destroy(d);
    clist_free(l);
}

static void restore_into(void *arg, const cf_sc_pending *p) {
    assert_int_equal(cf_sc_dedup_restore(arg, p, NULL), CF_OK);
}

static void test_bound_and_counts(void **state) {
    (void)state;
    cf_sc_dedup *d = cf_sc_dedup_new(10);
    uint8_t dg[16] = {0};
    cf_err err;
    cf_sc_verdict v;
    for (int i = 0; i < 10; i++) {
        dg[0] = (uint8_t)i;
        assert_int_equal(cf_sc_dedup_add(d, dg, 0, 2, 3, 5, 1, i, &v, &err), CF_OK);
        assert_int_equal(v, CF_SC_WAIT);
    }
    dg[0] = 10;
    assert_int_equal(cf_sc_dedup_add(d, dg, 0, 2, 3, 5, 1, 10, &v, &err), CF_ERR_STATE);
    assert_non_null(strstr(err.message, "pending digest cache is full"));
    assert_non_null(strstr(err.detail, "10"));
    assert_non_null(strstr(err.hint, "max.pending.digests"));
    /* a known digest still counts when the cache is full */
    dg[0] = 3;
    assert_int_equal(cf_sc_dedup_add(d, dg, 1, 2, 3, 5, 1, 3, &v, &err), CF_OK);
    assert_int_equal(v, CF_SC_PUBLISH);
    /* one replica's copies are copies, not replicas: 70000 of them (past 16 bits) */
    dg[0] = 4;
    for (int i = 0; i < 70000; i++) {
        assert_int_equal(cf_sc_dedup_add(d, dg, 0, 2, 3, 5, 1, 4, &v, &err), CF_OK);
        assert_int_equal(v, CF_SC_WAIT);
    }
    const cf_sc_pending *p = cf_sc_dedup_find(d, dg);
    assert_int_equal(p->copies, 70001);
    assert_int_equal(p->replicas, 1);
    assert_int_equal(cf_sc_dedup_add(d, dg, 5, 2, 3, 5, 1, 4, &v, &err), CF_OK);
    assert_int_equal(v, CF_SC_PUBLISH);
    assert_int_equal(cf_sc_dedup_add(d, dg, 5, 2, 3, 5, 1, 4, &v, &err), CF_OK);
    assert_int_equal(v, CF_SC_DUPLICATE);
    assert_int_equal(cf_sc_dedup_find(d, dg)->copies, 70003);
    /* restore: a snapshot's entries come back as they were */
    cf_sc_dedup *e = cf_sc_dedup_new(10);
    cf_sc_dedup_foreach(d, restore_into, e);
    assert_int_equal(cf_sc_dedup_count(e), 10);
    assert_int_equal(cf_sc_dedup_unpublished(e), cf_sc_dedup_unpublished(d));
    dg[0] = 4;
    assert_int_equal(cf_sc_dedup_find(e, dg)->copies, 70003);
    cf_sc_dedup_destroy(e);
    cf_sc_dedup_destroy(d);
    /* nothing stored for ONE over one replica */
    d = cf_sc_dedup_new(1);
    for (int i = 0; i < 100; i++) {
        dg[1] = (uint8_t)i;
        assert_int_equal(cf_sc_dedup_add(d, dg, 0, 1, 1, 5, 1, 0, &v, &err), CF_OK);
        assert_int_equal(v, CF_SC_PUBLISH);
    }
    assert_int_equal(cf_sc_dedup_count(d), 0);
    cf_sc_dedup_destroy(d);
}

/* Many digests in, most removed again in random order: every lookup stays
 * right (backward-shift deletion keeps the probe runs intact). */
static void test_table_churn(void **state) {
    (void)state;
    cf_sc_dedup *d = cf_sc_dedup_new(1000000);
    uint64_t x = 88172645463325252ULL;
    enum { N = 200000 };
    uint8_t (*keys)[16] = malloc(N * 16);
    cf_sc_verdict v;
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 2; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            memcpy(keys[i] + 8 * k, &x, 8);
        }
        keys[i][0] &= 0x0f; /* crowd the table: long probe runs */
        assert_int_equal(cf_sc_dedup_add(d, keys[i], 0, 2, 2, i, 0, 0, &v, NULL), CF_OK);
    }
    assert_int_equal(cf_sc_dedup_count(d), N);
    for (int i = 0; i < N; i += 3) { /* completes and removes a third */
        assert_int_equal(cf_sc_dedup_add(d, keys[i], 1, 2, 2, i, 0, 0, &v, NULL), CF_OK);
        assert_int_equal(v, CF_SC_PUBLISH);
    }
    for (int i = 0; i < N; i++) {
        const cf_sc_pending *p = cf_sc_dedup_find(d, keys[i]);
        if (i % 3 == 0) assert_null(p);
        else assert_non_null(p);
    }
    /* expire the first half by time */
    tally t = {0};
    size_t dropped = cf_sc_dedup_expire(d, N / 2 + 10, 10, on_drop, &t);
    assert_int_equal(dropped, t.dropped);
    assert_true(dropped > N / 4);
    for (int i = 0; i < N; i++) {
        const cf_sc_pending *p = cf_sc_dedup_find(d, keys[i]);
        bool want = i % 3 != 0 && i >= N / 2;
        if (want != (p != NULL)) fail_msg("digest %d: %s", i, p ? "still there" : "lost");
    }
    free(keys);
    cf_sc_dedup_destroy(d);
}

static void test_ranges(void **state) {
    (void)state;
    cf_sc_ranges r;
    cf_err err;
    assert_int_equal(cf_sc_ranges_parse("(0,100]", &r, &err), CF_OK);
    assert_false(cf_sc_ranges_contain(&r, 0));
    assert_true(cf_sc_ranges_contain(&r, 1));
    assert_true(cf_sc_ranges_contain(&r, 100));
    assert_false(cf_sc_ranges_contain(&r, 101));
    cf_sc_ranges_free(&r);
    /* wrapping */
    assert_int_equal(cf_sc_ranges_parse("(100, -100]", &r, &err), CF_OK);
    assert_true(cf_sc_ranges_contain(&r, INT64_MAX));
    assert_true(cf_sc_ranges_contain(&r, INT64_MIN));
    assert_true(cf_sc_ranges_contain(&r, -100));
    assert_false(cf_sc_ranges_contain(&r, 0));
    assert_false(cf_sc_ranges_contain(&r, 100));
    cf_sc_ranges_free(&r);
    /* two sidecars splitting the ring own every token exactly once */
    cf_sc_ranges a, b;
    assert_int_equal(cf_sc_ranges_parse("(-9223372036854775808,0]", &a, &err), CF_OK);
    assert_int_equal(cf_sc_ranges_parse("(0,-9223372036854775808]", &b, &err), CF_OK);
    int64_t probes[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX};
    for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
        assert_int_equal(cf_sc_ranges_contain(&a, probes[i]) + cf_sc_ranges_contain(&b, probes[i]), 1);
    cf_buf f = CF_BUF_INIT;
    cf_sc_ranges_format(&a, &f);
    assert_string_equal(f.data, "(-9223372036854775808,0]");
    cf_sc_ranges_free(&a);
    cf_sc_ranges_free(&b);
    /* the whole ring */
    assert_int_equal(cf_sc_ranges_parse("all", &r, &err), CF_OK);
    assert_true(cf_sc_ranges_contain(&r, 42));
    cf_buf_reset(&f);
    cf_sc_ranges_format(&r, &f);
    assert_string_equal(f.data, "all");
    assert_int_equal(cf_sc_ranges_parse("(5,5]", &r, &err), CF_OK);
    assert_true(cf_sc_ranges_contain(&r, 5) && cf_sc_ranges_contain(&r, -7));
    cf_sc_ranges_free(&r);
    assert_int_equal(cf_sc_ranges_parse("(0,100];(200,300]", &r, &err), CF_OK);
    assert_int_equal(r.n, 2);
    assert_true(cf_sc_ranges_contain(&r, 250));
    assert_false(cf_sc_ranges_contain(&r, 150));
    cf_sc_ranges_free(&r);
    /* errors name the place */
    assert_int_equal(cf_sc_ranges_parse("(0,100];[1,2]", &r, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "[1,2]"));
    assert_int_equal(cf_sc_ranges_parse("(0,99999999999999999999]", &r, &err), CF_ERR_CONFIG);
    cf_buf_free(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_keyspace_rf),
        cmocka_unit_test(test_levels_over_three_replicas),
        cmocka_unit_test(test_missing_replica_segment),
        cmocka_unit_test(test_bound_and_counts),
        cmocka_unit_test(test_table_churn),
        cmocka_unit_test(test_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
