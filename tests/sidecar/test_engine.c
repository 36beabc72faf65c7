/*
 * test_engine.c - the sidecar engine over real segments: the fixture
 * v8-lz4-rollover (four LZ4 segments of one Cassandra 5.0 node, the first
 * three COMPLETED, plus cdc_raw_live/: the same indexes copied while the
 * node ran) copied as three replicas' cdc_raw directories.
 *
 * Oracles: the changes are the node's writes, each published exactly once
 * whatever the consistency level when every replica has it (the count of
 * distinct partition updates, counted here independently of the engine);
 * the consistency levels as Cassandra defines them (ALL needs all three
 * copies, LOCAL_QUORUM two of three); Cassandra's cdc_raw protocol (a
 * segment appears, its _cdc.idx grows, then says COMPLETED).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>

#include "cdcflow/log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"
#include "sc_test_util.h"

#define ROLL FIX "/v8-lz4-rollover/cdc_raw"

typedef struct sink {
    size_t n;
    char **ids; /* "table|op|ts|key" per event, to compare runs */
    size_t cap;
} sink;

static cf_record *new_rec(void *arg) {
    (void)arg;
    return cf_record_new();
}

static void emit(void *arg, cf_record *r, cf_sc_op op) {
    sink *s = arg;
    char *k = cf_value_debug_string(r->key);
    char buf[1024];
    snprintf(buf, sizeof buf, "%s|%s|%lld|%s", r->topic, cf_sc_op_name(op),
             (long long)cf_value_struct_get(r->value, "timestampMicros")->u.i, k);
    free(k);
    if (s->n == s->cap) s->ids = realloc(s->ids, (s->cap = s->cap ? s->cap * 2 : 1024) * sizeof *s->ids);
    s->ids[s->n++] = strdup(buf);
    cf_record_destroy(r);
}

static void sink_free(sink *s) {
    for (size_t i = 0; i < s->n; i++) free(s->ids[i]);
    free(s->ids);
    memset(s, 0, sizeof *s);
}

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct fixture {
    char *tmp;
    char dirs[3][600];
    cf_cass_schema *schema;
    int64_t clock;
} fixture;

static int64_t fake_now(void *arg) { return ((fixture *)arg)->clock; }

static fixture *setup3(int missing_replica, int missing_seg) {
    fixture *f = calloc(1, sizeof *f);
    f->tmp = make_tmpdir("engine");
    for (int i = 0; i < 3; i++) {
        snprintf(f->dirs[i], sizeof f->dirs[i], "%s/node%d", f->tmp, i + 1);
        copy_dir(ROLL, f->dirs[i], i == missing_replica ? missing_seg : -1);
    }
    f->schema = fixture_schema("v8-lz4-rollover");
    f->clock = 1800000000000LL;
    return f;
}

static void teardown(fixture *f) {
    rm_rf(f->tmp);
    free(f->tmp);
    cf_cass_schema_destroy(f->schema);
    free(f);
}

static cf_sc_engine *engine(fixture *f, cf_sc_cl cl, int ndirs, bool once, cf_sc_cleanup cleanup, size_t max_pending) {
    const char *dirs[3] = {f->dirs[0], f->dirs[1], f->dirs[2]};
    const char *names[3] = {"node1", "node2", "node3"};
    cf_sc_engine_opts o = {.dirs = dirs, .names = names, .n_dirs = (size_t)ndirs, .schema = f->schema, .cl = cl,
                           .rf = 3, .timeout_ms = 10000, .max_pending = max_pending, .once = once,
                           .cleanup = cleanup, .poll_ms = 200, .now_ms = fake_now, .clock_arg = f};
    char arch[700];
    snprintf(arch, sizeof arch, "%s/archive", f->tmp);
    o.archive_dir = arch;
    cf_sc_engine *e;
    cf_err err;
    if (cf_sc_engine_new(&o, &e, &err)) fail_msg("engine: %s (%s)", err.message, err.detail);
    return e;
}

/* Run to EOF (once); returns the last code. */
static cf_code run(cf_sc_engine *e, sink *s, size_t max_events) {
    cf_sc_emitter em = {new_rec, emit, s};
    cf_err err;
    for (;;) {
        size_t n;
        cf_code rc = cf_sc_engine_step(e, &em, max_events, &n, &err);
        if (rc == CF_OK) continue;
        if (rc != CF_ERR_EOF) print_error("step: %s (%s) %s\n", err.message, err.detail, err.hint);
        return rc;
    }
}

/* The single node's events, each change once: ONE over one replica. */
static size_t reference(sink *ref) {
    fixture *f = setup3(-1, -1);
    cf_sc_engine *e = engine(f, CF_SC_ONE, 1, true, CF_SC_CLEANUP_NONE, 1000);
    assert_int_equal(run(e, ref, 500), CF_ERR_EOF);
    cf_sc_stats st;
    cf_sc_engine_stats(e, &st);
    cf_sc_engine_destroy(e);
    teardown(f);
    qsort(ref->ids, ref->n, sizeof *ref->ids, cmpstr);
    assert_true(ref->n > 3000);
    return (size_t)st.published;
}

static void assert_same_events(sink *a, sink *ref) {
    qsort(a->ids, a->n, sizeof *a->ids, cmpstr);
    assert_int_equal(a->n, ref->n);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->ids[i], ref->ids[i])) fail_msg("event %zu: %s vs %s", i, a->ids[i], ref->ids[i]);
}

static void test_three_replicas_once_each(void **state) {
    (void)state;
    sink ref = {0};
    size_t changes = reference(&ref);
    static const cf_sc_cl levels[] = {CF_SC_ONE, CF_SC_QUORUM, CF_SC_LOCAL_QUORUM, CF_SC_ALL, CF_SC_TWO, CF_SC_THREE};
    for (size_t l = 0; l < sizeof levels / sizeof *levels; l++) {
        fixture *f = setup3(-1, -1);
        cf_sc_engine *e = engine(f, levels[l], 3, true, CF_SC_CLEANUP_NONE, 100000);
        sink s = {0};
        assert_int_equal(run(e, &s, 500), CF_ERR_EOF);
        cf_sc_stats st;
        cf_sc_engine_stats(e, &st);
        assert_int_equal(st.published, changes);
        assert_int_equal(st.pending, 0); /* every digest saw its three copies */
        assert_int_equal(st.consistency_failures, 0);
        assert_int_equal(st.segments_done, 12);
        assert_int_equal(st.segments_total, 12);
        assert_int_equal(st.read_lag, 0);
        assert_int_equal(st.bytes_done, st.bytes_total);
        int req = cf_sc_cl_required(levels[l], 3);
        if (st.duplicates < (uint64_t)(3 - req) * changes)
            fail_msg("%s: %llu duplicates, %zu changes, %llu copies", cf_sc_cl_name(levels[l]),
                     (unsigned long long)st.duplicates, changes, (unsigned long long)st.copies);
        assert_same_events(&s, &ref);
        /* the replicas' copies are the same bytes: the second and third of
         * each entry come from the copy cache, not decoded again */
        if (st.copy_hits < st.entries / 2)
            fail_msg("%s: %llu copy cache hits of %llu entries", cf_sc_cl_name(levels[l]),
                     (unsigned long long)st.copy_hits, (unsigned long long)st.entries);
        sink_free(&s);
        cf_sc_engine_destroy(e);
        teardown(f);
    }
    sink_free(&ref);
}

static void test_missing_segment(void **state) {
    (void)state;
    sink ref = {0};
    size_t changes = reference(&ref);
    /* LOCAL_QUORUM: node3 lacks segment 2; two copies still make every change */
    fixture *f = setup3(2, 1);
    cf_sc_engine *e = engine(f, CF_SC_LOCAL_QUORUM, 3, true, CF_SC_CLEANUP_NONE, 100000);
    sink s = {0};
    assert_int_equal(run(e, &s, 500), CF_ERR_EOF);
    cf_sc_stats st;
    cf_sc_engine_stats(e, &st);
    assert_int_equal(st.published, changes);
    assert_same_events(&s, &ref);
    assert_true(st.pending > 100); /* segment 2's changes: published, their third copy never comes */
    assert_int_equal(st.unpublished, 0);
    f->clock += 10001;
    cf_sc_engine_expire(e);
    cf_sc_engine_stats(e, &st);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.consistency_failures, 0); /* published ones time out silently */
    sink_free(&s);
    cf_sc_engine_destroy(e);
    teardown(f);
    /* ALL: segment 2's changes never reach three copies: dropped after the timeout, counted */
    f = setup3(2, 1);
    e = engine(f, CF_SC_ALL, 3, true, CF_SC_CLEANUP_NONE, 100000);
    assert_int_equal(run(e, &s, 500), CF_ERR_EOF);
    cf_sc_engine_stats(e, &st);
    size_t missing = changes - st.published;
    assert_true(missing > 100);
    assert_int_equal(st.pending, missing);
    assert_int_equal(st.unpublished, missing);
    f->clock += 5000;
    cf_sc_engine_expire(e);
    cf_sc_engine_stats(e, &st);
    assert_int_equal(st.consistency_failures, 0); /* not yet: the timeout runs from the first read */
    f->clock += 5001;
    cf_sc_engine_expire(e);
    cf_sc_engine_stats(e, &st);
    assert_int_equal(st.consistency_failures, missing);
    assert_int_equal(st.dropped, missing);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.unpublished, 0);
    sink_free(&s);
    cf_sc_engine_destroy(e);
    teardown(f);
    /* a bound on pending digests: a clear error, not a silent drop */
    f = setup3(2, 1);
    e = engine(f, CF_SC_ALL, 3, true, CF_SC_CLEANUP_NONE, 50);
    cf_sc_emitter em = {new_rec, emit, &s};
    cf_err err;
    cf_code rc;
    size_t n;
    while ((rc = cf_sc_engine_step(e, &em, 500, &n, &err)) == CF_OK) {}
    assert_int_equal(rc, CF_ERR_STATE);
    assert_non_null(strstr(err.message, "pending digest cache is full"));
    assert_non_null(strstr(err.where, "replica node"));
    sink_free(&s);
    cf_sc_engine_destroy(e);
    teardown(f);
    sink_free(&ref);
}

/* Stop anywhere, restart from the snapshot: every change published once in
 * total, nothing lost (the snapshot is taken between steps, after the
 * events of every step were handed out, as the connector does). */
static void test_restart_from_snapshot(void **state) {
    (void)state;
    sink ref = {0};
    reference(&ref);
    for (int cut = 1; cut <= 40; cut += 13) {
        fixture *f = setup3(-1, -1);
        cf_sc_engine *e = engine(f, CF_SC_QUORUM, 3, true, CF_SC_CLEANUP_NONE, 100000);
        sink s = {0};
        cf_sc_emitter em = {new_rec, emit, &s};
        cf_err err;
        size_t n;
        for (int i = 0; i < cut; i++) assert_int_equal(cf_sc_engine_step(e, &em, 50, &n, &err), CF_OK);
        cf_value *snap = cf_sc_engine_snapshot(e);
        cf_sc_engine_destroy(e);
        /* a new process: replicas listed in another order */
        const char *dirs[3] = {f->dirs[2], f->dirs[0], f->dirs[1]};
        const char *names[3] = {"node3", "node1", "node2"};
        cf_sc_engine_opts o = {.dirs = dirs, .names = names, .n_dirs = 3, .schema = f->schema, .cl = CF_SC_QUORUM,
                               .rf = 3, .timeout_ms = 10000, .max_pending = 100000, .once = true, .now_ms = fake_now,
                               .clock_arg = f};
        assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_OK);
        assert_int_equal(cf_sc_engine_restore(e, snap, &err), CF_OK);
        cf_value_destroy(snap);
        assert_int_equal(run(e, &s, 500), CF_ERR_EOF);
        assert_same_events(&s, &ref);
        /* a third start from the final state publishes nothing */
        snap = cf_sc_engine_snapshot(e);
        cf_sc_engine_destroy(e);
        assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_OK);
        assert_int_equal(cf_sc_engine_restore(e, snap, &err), CF_OK);
        size_t before = s.n;
        assert_int_equal(run(e, &s, 500), CF_ERR_EOF);
        assert_int_equal(s.n, before);
        cf_value_destroy(snap);
        cf_sc_engine_destroy(e);
        sink_free(&s);
        teardown(f);
    }
    sink_free(&ref);
}


/* Takeover (the Cassandra state store's merge): sidecar A owns the lower
 * half of the ring, B the upper half, both stop part way; C owns the whole
 * ring and starts from the merge of their stored rows. Every change is
 * published exactly once by A, B and C together (the floors keep C from
 * publishing again what A had published while reading from B's earlier
 * markers); with B's state missing (it never stored one) nothing is lost and
 * A's changes are still not published twice. */
static cf_sc_engine *ranged(fixture *f, const char *ranges) {
    const char *dirs[3] = {f->dirs[0], f->dirs[1], f->dirs[2]};
    const char *names[3] = {"node1", "node2", "node3"};
    cf_sc_engine_opts o = {.dirs = dirs, .names = names, .n_dirs = 3, .schema = f->schema, .cl = CF_SC_QUORUM,
                           .rf = 3, .timeout_ms = 10000, .max_pending = 100000, .once = true, .ranges = ranges,
                           .now_ms = fake_now, .clock_arg = f};
    cf_sc_engine *e;
    cf_err err;
    if (cf_sc_engine_new(&o, &e, &err)) fail_msg("engine: %s (%s)", err.message, err.detail);
    return e;
}

static cf_value *run_part(cf_sc_engine *e, sink *s, int steps) {
    cf_sc_emitter em = {new_rec, emit, s};
    cf_err err;
    size_t n;
    for (int i = 0; i < steps; i++) {
        cf_code rc = cf_sc_engine_step(e, &em, 50, &n, &err);
        if (rc == CF_ERR_EOF) break;
        assert_int_equal(rc, CF_OK);
    }
    return cf_sc_engine_snapshot(e);
}

static void test_takeover_merge(void **state) {
    (void)state;
    sink ref = {0};
    reference(&ref);
    const cf_sc_range lower = {INT64_MIN, 0}, upper = {0, INT64_MIN};
    for (int variant = 0; variant < 3; variant++) {
        fixture *f = setup3(-1, -1);
        sink s = {0};
        cf_sc_engine *a = ranged(f, "(-9223372036854775808,0]");
        cf_sc_engine *b = ranged(f, "(0,-9223372036854775808]");
        /* A goes far, B a little (variant 1: the other way round) */
        cf_value *sa = run_part(a, &s, variant == 1 ? 3 : 40), *sb = run_part(b, &s, variant == 1 ? 40 : 3);
        cf_sc_engine_destroy(a);
        cf_sc_engine_destroy(b);
        cf_value *ra = cf_sc_state_restrict(sa, lower), *rb = cf_sc_state_restrict(sb, upper);
        cf_sc_state_row rows[2] = {{lower, 100, ra}, {upper, 101, rb}};
        size_t nrows = variant == 2 ? 1 : 2; /* 2: B stored nothing */
        if (variant == 2) { /* B's changes are not published: start the sink over with A's only */
            sink_free(&s);
            a = ranged(f, "(-9223372036854775808,0]");
            cf_value_destroy(sa);
            sa = run_part(a, &s, 40);
            cf_sc_engine_destroy(a);
            cf_value_destroy(ra);
            ra = cf_sc_state_restrict(sa, lower);
            rows[0].snapshot = ra;
        }
        cf_value *merged = NULL;
        cf_err err;
        assert_int_equal(cf_sc_state_merge(rows, nrows, NULL, &merged, &err), CF_OK);
        cf_sc_engine *c = ranged(f, NULL);
        assert_int_equal(cf_sc_engine_restore(c, merged, &err), CF_OK);
        /* C stops part way too, and starts again from its own state (the floors ride with it) */
        cf_value *sc = run_part(c, &s, 5);
        cf_sc_engine_destroy(c);
        c = ranged(f, NULL);
        assert_int_equal(cf_sc_engine_restore(c, sc, &err), CF_OK);
        assert_int_equal(run(c, &s, 500), CF_ERR_EOF);
        cf_value *end = cf_sc_engine_snapshot(c);
        assert_null(cf_value_map_get_str(end, "floors")); /* every reader passed them */
        assert_same_events(&s, &ref);
        cf_value_destroy(end);
        cf_value_destroy(sc);
        cf_sc_engine_destroy(c);
        cf_value_destroy(merged);
        cf_value_destroy(ra);
        cf_value_destroy(rb);
        cf_value_destroy(sa);
        cf_value_destroy(sb);
        sink_free(&s);
        teardown(f);
    }
    sink_free(&ref);
}

/* Finished segments leave cdc_raw only once a durable snapshot says so. */
static void test_cleanup(void **state) {
    (void)state;
    for (int mode = 0; mode < 2; mode++) {
        fixture *f = setup3(-1, -1);
        cf_sc_engine *e = engine(f, CF_SC_QUORUM, 3, true, mode ? CF_SC_CLEANUP_ARCHIVE : CF_SC_CLEANUP_DELETE, 100000);
        sink s = {0};
        cf_sc_emitter em = {new_rec, emit, &s};
        cf_err err;
        size_t n;
        /* part way: what an older snapshot marks finished is all that goes */
        for (int i = 0; i < 30; i++) assert_int_equal(cf_sc_engine_step(e, &em, 50, &n, &err), CF_OK);
        cf_value *early = cf_sc_engine_snapshot(e);
        assert_int_equal(run(e, &s, 500), CF_ERR_EOF);
        for (int i = 0; i < 3; i++) assert_int_equal(count_logs(f->dirs[i]), 4); /* nothing durable yet */
        cf_sc_engine_durable(e, early);
        int left = 0;
        for (int i = 0; i < 3; i++) left += count_logs(f->dirs[i]);
        assert_true(left < 12 && left > 0);
        cf_value *end = cf_sc_engine_snapshot(e);
        cf_sc_engine_durable(e, end);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(count_logs(f->dirs[i]), 0);
            char idx[800];
            snprintf(idx, sizeof idx, "%s/CommitLog-8-1795981246658_cdc.idx", f->dirs[i]);
            assert_int_not_equal(access(idx, F_OK), 0);
        }
        if (mode) {
            char a[800];
            snprintf(a, sizeof a, "%s/archive/node2", f->tmp);
            assert_int_equal(count_logs(a), 4);
        }
        cf_sc_stats st;
        cf_sc_engine_stats(e, &st);
        assert_int_equal(st.cleaned, 12);
        assert_int_equal(st.segments_done, 12);
        cf_value_destroy(early);
        cf_value_destroy(end);
        sink_free(&s);
        cf_sc_engine_destroy(e);
        teardown(f);
    }
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_file(const char *dir, const char *name, const char *from_dir) {
    char a[800], b[800];
    snprintf(a, sizeof a, "%s/%s", from_dir, name);
    snprintf(b, sizeof b, "%s/%s", dir, name);
    copy_file(a, b);
}

/* Wait (stepping) until the engine has published at least `want` changes;
 * returns the ms it took, or -1 after 5 s. */
static int64_t until_published(cf_sc_engine *e, sink *s, uint64_t want) {
    cf_sc_emitter em = {new_rec, emit, s};
    cf_err err;
    int64_t t0 = mono_ms();
    for (;;) {
        cf_sc_stats st;
        cf_sc_engine_stats(e, &st);
        if (st.published >= want) return mono_ms() - t0;
        if (mono_ms() - t0 > 5000) return -1;
        size_t n;
        cf_code rc = cf_sc_engine_step(e, &em, 500, &n, &err);
        if (rc == CF_ERR_AGAIN) cf_sc_engine_wait(e, 100);
        else if (rc) fail_msg("step: %s", err.message);
    }
}

/* Live: segments appear and their indexes grow while the engine runs; each
 * is picked up within a second (inotify). */
static void test_live(void **state) {
    (void)state;
    sink ref = {0};
    size_t changes = reference(&ref);
    fixture *f = calloc(1, sizeof *f);
    f->tmp = make_tmpdir("live");
    f->schema = fixture_schema("v8-lz4-rollover");
    f->clock = 1800000000000LL;
    for (int i = 0; i < 3; i++) {
        snprintf(f->dirs[i], sizeof f->dirs[i], "%s/node%d", f->tmp, i + 1);
        mkdir(f->dirs[i], 0755);
    }
    cf_sc_engine *e = engine(f, CF_SC_QUORUM, 3, false, CF_SC_CLEANUP_NONE, 100000);
    sink s = {0};
    cf_sc_emitter em = {new_rec, emit, &s};
    cf_err err;
    size_t n;
    assert_int_equal(cf_sc_engine_step(e, &em, 500, &n, &err), CF_ERR_AGAIN); /* empty directories */
    char **logs = fixture_logs(ROLL);
    const char *live = FIX "/v8-lz4-rollover/cdc_raw_live";
    uint64_t want = 0;
    cf_sc_stats st;
    for (int k = 0; k < 4; k++) {
        const char *seg = strrchr(logs[k], '/') + 1;
        char idx[200];
        snprintf(idx, sizeof idx, "%.*s_cdc.idx", (int)(strlen(seg) - 4), seg);
        /* Cassandra: the segment is linked at creation, the index written at the first sync */
        for (int i = 0; i < 3; i++) {
            put_file(f->dirs[i], seg, ROLL);
            put_file(f->dirs[i], idx, k < 3 ? ROLL : live);
        }
        cf_sc_engine_stats(e, &st);
        want = st.published + 1;
        int64_t ms = until_published(e, &s, want);
        assert_true(ms >= 0);
        assert_true(ms < 1000);
        /* drain what the segment holds */
        while (cf_sc_engine_step(e, &em, 500, &n, &err) == CF_OK) {}
    }
    cf_sc_engine_stats(e, &st);
    /* the last segment is read to its partial index only: not finished */
    assert_int_equal(st.segments_done, 9);
    assert_int_equal(st.read_lag, 3);
    /* the node syncs the rest and closes the segment: COMPLETED */
    const char *seg = strrchr(logs[3], '/') + 1;
    char idx[200];
    snprintf(idx, sizeof idx, "%.*s_cdc.idx", (int)(strlen(seg) - 4), seg);
    for (int i = 0; i < 3; i++) put_file(f->dirs[i], idx, ROLL);
    assert_true(until_published(e, &s, changes) >= 0);
    for (int i = 0; i < 20; i++) {
        if (cf_sc_engine_step(e, &em, 500, &n, &err) == CF_ERR_AGAIN) cf_sc_engine_wait(e, 50);
        cf_sc_engine_stats(e, &st);
        if (st.segments_done == 12) break;
    }
    assert_int_equal(st.segments_done, 12);
    assert_int_equal(st.published, changes);
    assert_same_events(&s, &ref);
    free_strv(logs);
    sink_free(&s);
    sink_free(&ref);
    cf_sc_engine_destroy(e);
    teardown(f);
}

static void test_config_errors(void **state) {
    (void)state;
    fixture *f = setup3(-1, -1);
    const char *dirs[3] = {f->dirs[0], f->dirs[1], f->dirs[2]};
    cf_sc_engine *e;
    cf_err err;
    /* THREE over two replica directories can never be met */
    cf_sc_engine_opts o = {.dirs = dirs, .n_dirs = 2, .schema = f->schema, .cl = CF_SC_THREE, .rf = 3, .once = true};
    assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "THREE cannot be met for keyspace cdcks"));
    /* from the keyspace's replication (RF 1): QUORUM is 1 */
    o.cl = CF_SC_QUORUM;
    o.rf = 0;
    assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_OK);
    cf_sc_engine_destroy(e);
    /* ALL with RF 3 from the configuration but two replicas */
    o.cl = CF_SC_ALL;
    o.rf = 3;
    assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_ERR_CONFIG);
    o.n_dirs = 0;
    assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_ERR_CONFIG);
    const char *same[2] = {f->dirs[0], f->dirs[0]};
    o.dirs = same;
    o.n_dirs = 2;
    o.cl = CF_SC_ONE;
    assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "two replicas named"));
    const char *nodir[1] = {"/nonexistent/cdc_raw"};
    o.dirs = nodir;
    o.n_dirs = 1;
    assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_ERR_IO);
    assert_non_null(strstr(err.message, "/nonexistent/cdc_raw"));
    teardown(f);
}

int main(void) {
    cf_log_set_level(CF_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_replicas_once_each),
        cmocka_unit_test(test_missing_segment),
        cmocka_unit_test(test_restart_from_snapshot),
        cmocka_unit_test(test_takeover_merge),
        cmocka_unit_test(test_cleanup),
        cmocka_unit_test(test_live),
        cmocka_unit_test(test_config_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
