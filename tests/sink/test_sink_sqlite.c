/*
 * test_sink_sqlite.c - the CDC sink engine on its SQLite target.
 *
 * Oracles: BigQuery's documented sequence-number examples and CDC rules
 * (shared/specs/bigquery-cdc.md §1), Debezium's documented event shapes
 * (§3 test vectors V1..V7), kcbq's FieldNameSanitizer rules, and for the
 * end-to-end proof the generator's model of the SOURCE table (cdc_gen.h),
 * never the sink's own output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "cdc_drive.h"
#include "cdc_gen.h"
#include "cdcflow/buf.h"
#include "cdcflow/sink.h"

#define TABLE "dbserver1_public_customers"
#define TOPIC "dbserver1.public.customers"

static char g_path[256];

static void fresh_db(const char *tag) {
    snprintf(g_path, sizeof g_path, "%s/cf_sink_%s_%d.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag,
             (int)getpid());
    char p[300];
    unlink(g_path);
    snprintf(p, sizeof p, "%s-wal", g_path), unlink(p);
    snprintf(p, sizeof p, "%s-shm", g_path), unlink(p);
}

static void opts_for(cf_sink_options *o) {
    cf_sink_options_default(o);
    o->sqlite_path = g_path;
}

/* Every row of the table in gen_row_text's format, sorted by id. */
static char **read_rows(const char *table, size_t *n) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(g_path, &db), SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT id, email, name, version, score, active, note, qty, created, tag FROM \"%s\" ORDER BY id", table);
    sqlite3_stmt *st;
    char **rows = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    cf_buf b = CF_BUF_INIT;
    while (sqlite3_step(st) == SQLITE_ROW) {
        cf_buf_reset(&b);
        for (int i = 0; i < 10; i++) {
            if (i) cf_buf_append_byte(&b, '|');
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_NULL: cf_buf_append_str(&b, "\\N"); break;
            case SQLITE_INTEGER: cf_buf_printf(&b, "%lld", (long long)sqlite3_column_int64(st, i)); break;
            case SQLITE_FLOAT: cf_buf_printf(&b, "%.17g", sqlite3_column_double(st, i)); break;
            default: cf_buf_append_str(&b, (const char *)sqlite3_column_text(st, i)); break;
            }
        }
        rows = realloc(rows, (*n + 1) * sizeof *rows);
        rows[(*n)++] = cf_xstrdup(b.data ? b.data : "");
    }
    cf_buf_free(&b);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

static void free_rows(char **r, size_t n) {
    for (size_t i = 0; i < n; i++) free(r[i]);
    free(r);
}

/* Compare the target with the model; returns the number of differences
 * (printing the first few). */
static size_t diff_model(const gen *g, char **rows, size_t n) {
    size_t diffs = 0, j = 0;
    cf_buf b = CF_BUF_INIT;
    for (int32_t id = 0; id < g->n_keys; id++) {
        if (!g->rows[id].present) continue;
        gen_row_text(&g->rows[id], &b);
        if (j >= n || strcmp(rows[j], b.data) != 0) {
            if (diffs++ < 5) fprintf(stderr, "DIFF id %d\n  source: %s\n  target: %s\n", id, b.data, j < n ? rows[j] : "(none)");
            /* resync on id */
            if (j < n && atoi(rows[j]) == id) j++;
            continue;
        }
        j++;
    }
    if (j < n) {
        diffs += n - j;
        fprintf(stderr, "%zu extra target rows, first: %s\n", n - j, rows[j]);
    }
    cf_buf_free(&b);
    return diffs;
}

/* ---------------- sequence numbers ---------------- */

static int cmp_text(const char *a, const char *b) {
    cf_seq x, y;
    assert_int_equal(cf_seq_parse(a, &x, NULL), CF_OK);
    assert_int_equal(cf_seq_parse(b, &y, NULL), CF_OK);
    return cf_seq_compare(&x, &y);
}

static void test_seq_bigquery_examples(void **state) {
    (void)state;
    /* BigQuery's change-data-capture doc: the larger value wins */
    assert_true(cmp_text("7B", "77") > 0);
    assert_true(cmp_text("FFF/ABC", "FFF/B") > 0);
    assert_true(cmp_text("ABC", "BA/FFFFFFFF") > 0);
    assert_true(cmp_text("FFF/ABC", "ABC") > 0);
    assert_int_equal(cmp_text("00ff", "FF"), 0); /* numeric: case and leading zeros do not matter */
    assert_true(cmp_text("FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF", "0/0/0/0") > 0);
    /* our text form: fixed width, so byte order == BigQuery order */
    cf_seq s = {{0x7b, 0x2a}, 2};
    char t[CF_SEQ_TEXT_MAX];
    assert_string_equal(cf_seq_format(&s, t), "000000000000007b/000000000000002a");
    cf_seq a = {{UINT64_MAX, 1}, 2}, b2 = {{5, UINT64_MAX}, 2};
    char ta[CF_SEQ_TEXT_MAX], tb[CF_SEQ_TEXT_MAX];
    cf_seq_format(&a, ta), cf_seq_format(&b2, tb);
    assert_true(strcmp(ta, tb) > 0 && cf_seq_compare(&a, &b2) > 0);
    assert_int_equal(strlen(ta), 33);
}

static void test_seq_rejects(void **state) {
    (void)state;
    cf_seq s;
    cf_err e;
    /* the seed's %016x%016x: one 32-digit section, invalid in BigQuery */
    assert_int_equal(cf_seq_parse("00000000000000050000000000000009", &s, &e), CF_ERR_INVALID);
    assert_non_null(strstr(e.message, "32 hex digits"));
    assert_int_equal(cf_seq_parse("1/2/3/4/5", &s, &e), CF_ERR_INVALID);
    assert_int_equal(cf_seq_parse("", &s, &e), CF_ERR_INVALID);
    assert_int_equal(cf_seq_parse("12/", &s, &e), CF_ERR_INVALID);
    assert_int_equal(cf_seq_parse("x1", &s, &e), CF_ERR_INVALID);
    assert_int_equal(cf_seq_parse("16/B374D848", &s, &e), CF_OK); /* a PostgreSQL LSN is valid */
    assert_int_equal(s.n, 2);
    assert_true(s.s[1] == 0xB374D848ULL);
}

static void test_sanitize(void **state) {
    (void)state;
    /* kcbq FieldNameSanitizer: [^a-zA-Z0-9_] -> '_', leading digit gets '_' */
    const char *cases[][2] = {{"dbserver1.public.customers", "dbserver1_public_customers"},
                              {"1abc", "_1abc"},
                              {"a-b c", "a_b_c"},
                              {"_ok", "_ok"},
                              {"caf\xc3\xa9", "caf_"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = cf_sink_sanitize_name(cases[i][0]);
        assert_string_equal(s, cases[i][1]);
        free(s);
    }
}

/* ---------------- routing: Debezium's shapes ---------------- */

static void test_route_shapes(void **state) {
    (void)state;
    gen g;
    gen_init(&g, 1, GEN_REWRITE, 10, 1, TOPIC);
    cf_sink_options o;
    cf_sink_options_default(&o);
    cf_route_info ri;
    cf_err e;
    gen_insert(&g, 1, 0); /* V1 */
    gen_delete(&g, 1);    /* V3 (__deleted "true") + V4 (tombstone) */
    cf_record **r = g.recs[0];
    r[0]->offset = 10, r[1]->offset = 12, r[2]->offset = 13;
    assert_int_equal(cf_sink_route_one(&o, r[0], &ri, &e), CF_OK);
    assert_int_equal(ri.op, CF_CHANGE_UPSERT);
    char t[CF_SEQ_TEXT_MAX];
    assert_string_equal(cf_seq_format(&ri.seq, t), "000000000000000a");
    assert_int_equal(cf_sink_route_one(&o, r[1], &ri, &e), CF_OK);
    assert_int_equal(ri.op, CF_CHANGE_DELETE);
    assert_string_equal(ri.why, "__deleted");
    assert_int_equal(cf_sink_route_one(&o, r[2], &ri, &e), CF_OK);
    assert_int_equal(ri.op, CF_CHANGE_DELETE);
    assert_string_equal(ri.why, "tombstone");
    /* V5: {"schema":..., "payload": null} */
    cf_record *p = cf_record_clone(r[2]);
    cf_record_set_value(p, cf_schema_ref(g.val_s), NULL);
    assert_int_equal(cf_sink_route_one(&o, p, &ri, &e), CF_OK);
    assert_int_equal(ri.op, CF_CHANGE_DELETE);
    assert_string_equal(ri.why, "payload null");
    /* V6: __deleted must be "true"/"false" (or boolean) */
    cf_record *bad = cf_record_clone(r[0]);
    cf_value_struct_set(bad->value, "__deleted", cf_value_string("TRUE"), NULL);
    assert_int_equal(cf_sink_route_one(&o, bad, &ri, &e), CF_ERR_SCHEMA);
    assert_string_equal(e.where, "__deleted");
    /* seq field mode: field/offset; the tombstone is skipped; payload null is an error */
    o.seq_field = "version";
    assert_int_equal(cf_sink_route_one(&o, r[1], &ri, &e), CF_OK);
    assert_int_equal(ri.seq.n, 2);
    assert_true(ri.seq.s[0] == (uint64_t)g.rows[1].version && ri.seq.s[1] == 12);
    assert_int_equal(cf_sink_route_one(&o, r[2], &ri, &e), CF_OK);
    assert_true(ri.skip);
    assert_int_equal(cf_sink_route_one(&o, p, &ri, &e), CF_ERR_INVALID);
    assert_non_null(strstr(e.hint, "rewrite"));
    cf_record_destroy(p);
    cf_record_destroy(bad);
    gen_free(&g);

    /* V7: raw envelopes */
    gen_init(&g, 2, GEN_ENVELOPE, 10, 1, TOPIC);
    cf_sink_options_default(&o);
    gen_insert(&g, 3, 0);
    gen_update(&g, 3, 0, 0);
    gen_delete(&g, 3);
    const char *why[] = {"op c", "op u", "op d", "tombstone"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(cf_sink_route_one(&o, g.recs[0][i], &ri, &e), CF_OK);
        assert_string_equal(ri.why, why[i]);
        assert_int_equal(ri.op, i < 2 ? CF_CHANGE_UPSERT : CF_CHANGE_DELETE);
    }
    cf_record *tr = cf_record_clone(g.recs[0][1]);
    cf_value_struct_set(tr->value, "op", cf_value_string("t"), NULL);
    assert_int_equal(cf_sink_route_one(&o, tr, &ri, &e), CF_OK);
    assert_true(ri.skip);
    cf_value_struct_set(tr->value, "op", cf_value_string("x"), NULL);
    assert_int_equal(cf_sink_route_one(&o, tr, &ri, &e), CF_ERR_SCHEMA);
    cf_record_destroy(tr);
    /* no offset: an error, not a silent 0 */
    cf_record *no = cf_record_clone(g.recs[0][0]);
    no->offset = -1;
    assert_int_equal(cf_sink_route_one(&o, no, &ri, &e), CF_ERR_INVALID);
    cf_record_destroy(no);
    gen_free(&g);
}

/* ---------------- the seed's 32-operation sequence ---------------- */

/* INSERT, UPDATE, DELETE, RE-INSERT and deletes that repeat the version
 * (the seed's "duplicate version delete collisions"), on four keys. */
static void seed32(gen *g) {
    gen_insert(g, 1, 0);          /* 1 */
    gen_insert(g, 2, 0);          /* 2 */
    gen_update(g, 1, 0, 0);       /* 3 */
    gen_update(g, 1, 1, 1);       /* 4 same version */
    gen_delete(g, 2);             /* 5 delete repeats v */
    gen_insert(g, 2, 1);          /* 6 re-insert with the same version */
    gen_update(g, 2, 0, 0);       /* 7 */
    gen_delete(g, 1);             /* 8 */
    gen_insert(g, 1, 1);          /* 9 re-insert, same version as the delete */
    gen_update(g, 1, 1, 0);       /* 10 */
    gen_insert(g, 3, 0);          /* 11 */
    gen_delete(g, 3);             /* 12 */
    gen_insert(g, 3, 0);          /* 13 */
    gen_update(g, 3, 1, 0);       /* 14 */
    gen_update(g, 3, 1, 1);       /* 15 */
    gen_delete(g, 3);             /* 16 */
    gen_insert(g, 4, 0);          /* 17 */
    gen_toast(g, 4);              /* 18 TOAST unchanged */
    gen_keychange(g, 4, 5);       /* 19 key change 4 -> 5 */
    gen_update(g, 5, 0, 0);       /* 20 */
    gen_delete(g, 2);             /* 21 */
    gen_insert(g, 2, 0);          /* 22 */
    gen_delete(g, 2);             /* 23 */
    gen_insert(g, 2, 1);          /* 24 */
    gen_update(g, 1, 0, 1);       /* 25 */
    gen_delete(g, 1);             /* 26 final: 1 gone */
    gen_insert(g, 6, 0);          /* 27 */
    gen_update(g, 6, 1, 0);       /* 28 */
    gen_keychange(g, 6, 4);       /* 29 key change back onto a freed key */
    gen_toast(g, 4);              /* 30 */
    gen_update(g, 2, 1, 1);       /* 31 */
    gen_delete(g, 5);             /* 32 */
}

static void run_seed32(gen_shape shape, const char *seq_field, int reversed_replay) {
    gen g;
    gen_init(&g, 32, shape, 8, 1, TOPIC);
    seed32(&g);
    fresh_db("seed32");
    cf_sink_options o;
    opts_for(&o);
    o.seq_field = seq_field;
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    /* in order, one record per flush (no compaction help) */
    for (size_t i = 0; i < g.n_recs[0]; i++) {
        assert_int_equal(cf_sink_put(s, &g.recs[0][i], 1, &e), CF_OK);
        assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    }
    /* then everything again: a redelivery, oldest first or newest first */
    for (size_t j = 0; j < g.n_recs[0]; j++) {
        size_t i = reversed_replay ? g.n_recs[0] - 1 - j : j;
        assert_int_equal(cf_sink_put(s, &g.recs[0][i], 1, &e), CF_OK);
        assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    }
    cf_sink_destroy(s);
    size_t n;
    char **rows = read_rows(TABLE, &n);
    assert_int_equal(diff_model(&g, rows, n), 0);
    assert_int_equal(n, 2); /* keys 2 and 4 remain (1, 3, 5 deleted; 6 moved to 4) */
    free_rows(rows, n);
    gen_free(&g);
}

static void test_seed32(void **state) {
    (void)state;
    run_seed32(GEN_REWRITE, NULL, 0);
    run_seed32(GEN_REWRITE, NULL, 1);
    run_seed32(GEN_REWRITE, "version", 0);
    run_seed32(GEN_REWRITE, "version", 1);
    run_seed32(GEN_TOMBSTONE, NULL, 1);
    run_seed32(GEN_ENVELOPE, NULL, 1);
    run_seed32(GEN_ENVELOPE, "version", 1);
}

/* ---------------- generator runs ---------------- */

static void run_gen(gen_shape shape, const char *seq_field, int n_ops, int32_t n_keys, int chaos, uint64_t seed) {
    gen g;
    gen_init(&g, seed, shape, n_keys, 4, TOPIC);
    for (int i = 0; i < n_ops; i++) gen_step(&g);
    fresh_db("gen");
    cf_sink_options o;
    opts_for(&o);
    o.seq_field = seq_field;
    o.batch_max_records = 5000;
    drive_stats ds;
    cf_err e;
    cf_err_clear(&e);
    int rc = drive(&g, &o, &cf_sink_target_sqlite, seed * 7 + 1, chaos, &ds, &e);
    if (rc) {
        char buf[2048];
        fprintf(stderr, "%s\n", cf_err_format(&e, buf, sizeof buf));
    }
    assert_int_equal(rc, CF_OK);
    size_t n;
    char **rows = read_rows(TABLE, &n);
    size_t d = diff_model(&g, rows, n);
    fprintf(stderr, "# shape %d seq %s: %d ops, %zu records, delivered %" PRIu64 ", crashes %" PRIu64
            ", rebalances %" PRIu64 ", rewinds %" PRIu64 ", rows %zu, differences %zu\n",
            shape, seq_field ? seq_field : "offset", n_ops, g.total, ds.delivered, ds.crashes, ds.rebalances,
            ds.rewinds, n, d);
    assert_int_equal(d, 0);
    free_rows(rows, n);
    gen_free(&g);
}

static void test_gen_small_all_shapes(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        run_gen(GEN_REWRITE, NULL, 3000, 300, 1, seed);
        run_gen(GEN_REWRITE, "version", 3000, 300, 1, seed);
        run_gen(GEN_TOMBSTONE, NULL, 3000, 300, 1, seed);
        run_gen(GEN_ENVELOPE, NULL, 3000, 300, 1, seed);
        run_gen(GEN_ENVELOPE, "version", 3000, 300, 1, seed);
    }
}

static void test_gen_100k(void **state) {
    (void)state;
    run_gen(GEN_REWRITE, "version", 100000, 5000, 1, 42);
    run_gen(GEN_REWRITE, NULL, 100000, 5000, 1, 43);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_bigquery_examples),
        cmocka_unit_test(test_seq_rejects),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_route_shapes),
        cmocka_unit_test(test_seed32),
        cmocka_unit_test(test_gen_small_all_shapes),
        cmocka_unit_test(test_gen_100k),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    fresh_db("seed32");
    fresh_db("gen");
    return r;
}
