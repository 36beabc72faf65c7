/*
 * test_sink_sqlite.c - the CDC sink engine on its SQLite target.
 *
 * Oracles: BigQuery's documented sequence-number examples and CDC rules
 * (shared/specs/bigquery-cdc.md §1), Debezium's documented event shapes
 * (§3 test vectors V1..V7), kcbq's FieldNameSanitizer rules, and for the
 * end-to-end proof the generator's model of the SOURCE table (cdc_gen.h),
 * never the sink's own output.
 *
 * Lives in tests/sink/<target>/ (not a module folder name), so it links
 * every module library, the target's included.
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

#include "../cdc_concurrent.h"
#include "../cdc_drive.h"
#include "../cdc_gen.h"
#include "../cdc_pipeline.h"
#include "../cdc_rows.h"
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
static char **read_rows(const char *table, size_t *n) { return rows_sqlite(g_path, table, n); }

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
    assert_int_equal(rows_diff(&g, rows, n, 0), 0);
    assert_int_equal(n, 2); /* keys 2 and 4 remain (1, 3, 5 deleted; 6 moved to 4) */
    rows_free(rows, n);
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

/* The engine's batch bound (batch_max_records) for run_gen_pl; 0: 5000.
 * Small, the bound begins writes of its own inside put, which a background
 * write's flush_begin then meets (CF_ERR_AGAIN). */
static size_t g_batch_max;

static void run_gen_pl(gen_shape shape, const char *seq_field, int n_ops, int32_t n_keys, int chaos, uint64_t seed,
                       int64_t staleness, const cf_props *pipeline, bool async) {
    gen g;
    gen_init(&g, seed, shape, n_keys, 4, TOPIC);
    for (int i = 0; i < n_ops; i++) gen_step(&g);
    if (pipeline) {
        size_t dropped;
        cf_err pe;
        cf_err_clear(&pe);
        int prc = pipeline_apply(&g, pipeline, &dropped, &pe);
        if (prc) {
            char buf[2048];
            fprintf(stderr, "pipeline: %s\n", cf_err_format(&pe, buf, sizeof buf));
        }
        assert_int_equal(prc, CF_OK);
        fprintf(stderr, "# JsonConverter + transforms: %zu records dropped by the transforms\n", dropped);
    }
    fresh_db("gen");
    cf_sink_options o;
    opts_for(&o);
    o.seq_field = seq_field;
    o.batch_max_records = g_batch_max ? g_batch_max : 5000;
    o.max_staleness_s = staleness;
    o.async_apply = async;
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
    size_t d = rows_diff(&g, rows, n, 0);
    fprintf(stderr, "# shape %d seq %s%s: %d ops, %zu records, delivered %" PRIu64 ", crashes %" PRIu64
            ", rebalances %" PRIu64 ", rewinds %" PRIu64 ", refused %" PRIu64 ", rows %zu, differences %zu\n",
            shape, seq_field ? seq_field : "offset", async ? " (background writes)" : "", n_ops, g.total, ds.delivered, ds.crashes, ds.rebalances,
            ds.rewinds, ds.refused, n, d);
    assert_int_equal(d, 0);
    if (g_batch_max && async) assert_true(ds.refused > 0); /* the engine's own writes were met */
    rows_free(rows, n);
    gen_free(&g);
}

static void run_gen_st(gen_shape shape, const char *seq_field, int n_ops, int32_t n_keys, int chaos, uint64_t seed,
                       int64_t staleness) {
    run_gen_pl(shape, seq_field, n_ops, n_keys, chaos, seed, staleness, NULL, false);
}

static void run_gen(gen_shape shape, const char *seq_field, int n_ops, int32_t n_keys, int chaos, uint64_t seed) {
    run_gen_st(shape, seq_field, n_ops, n_keys, chaos, seed, 0);
}

/* Raw Debezium envelopes -> JsonConverter bytes -> records ->
 * ExtractNewRecordState in each delete mode -> the sink. */
static void test_gen_json_unwrap(void **state) {
    (void)state;
    cf_props *legacy = unwrap_conf("transforms.unwrap.delete.handling.mode", "rewrite",
                                   "transforms.unwrap.drop.tombstones", "false");
    cf_props *rwt = unwrap_conf("transforms.unwrap.delete.tombstone.handling.mode", "rewrite-with-tombstone",
                                "transforms.unwrap.add.fields", "op,source.lsn");
    cf_props *rewrite = unwrap_conf("transforms.unwrap.delete.tombstone.handling.mode", "rewrite", NULL, NULL);
    cf_props *dflt = unwrap_conf(NULL, NULL, NULL, NULL);
    cf_props *d2t = unwrap_conf("transforms.unwrap.delete.tombstone.handling.mode", "delete-to-tombstone", NULL, NULL);
    run_gen_pl(GEN_ENVELOPE, "version", 5000, 400, 1, 21, 0, legacy, false); /* the seed's configuration */
    run_gen_pl(GEN_ENVELOPE, "version", 5000, 400, 1, 22, 0, rwt, false);
    run_gen_pl(GEN_ENVELOPE, "version", 5000, 400, 1, 23, 0, rewrite, false);
    run_gen_pl(GEN_ENVELOPE, NULL, 5000, 400, 1, 24, 0, dflt, false);
    run_gen_pl(GEN_ENVELOPE, NULL, 5000, 400, 1, 25, 0, d2t, false);
    run_gen_pl(GEN_ENVELOPE, NULL, 5000, 400, 1, 26, 0, legacy, false);
    cf_props_destroy(legacy), cf_props_destroy(rwt), cf_props_destroy(rewrite), cf_props_destroy(dflt);
    cf_props_destroy(d2t);
}

static void test_gen_staleness(void **state) {
    (void)state;
    run_gen_st(GEN_REWRITE, "version", 3000, 300, 1, 5, 1);
    run_gen_st(GEN_ENVELOPE, NULL, 3000, 300, 1, 6, 1);
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

/* Background writes (async_apply): half of the flushes begin a write in
 * the writer thread while the next records are routed, committed when it
 * ended; with crashes (a destroy while a write is up), rebalances and
 * rewinds. Every shape ends equal to the model. */
static void test_gen_background_writes(void **state) {
    (void)state;
    for (uint64_t seed = 11; seed <= 13; seed++) {
        run_gen_pl(GEN_REWRITE, NULL, 3000, 300, 1, seed, 0, NULL, true);
        run_gen_pl(GEN_REWRITE, "version", 3000, 300, 1, seed, 0, NULL, true);
        run_gen_pl(GEN_TOMBSTONE, NULL, 3000, 300, 1, seed, 0, NULL, true);
        run_gen_pl(GEN_ENVELOPE, NULL, 3000, 300, 1, seed, 0, NULL, true);
        run_gen_pl(GEN_ENVELOPE, "version", 3000, 300, 1, seed, 0, NULL, true);
    }
    cf_props *legacy = unwrap_conf("transforms.unwrap.delete.handling.mode", "rewrite",
                                   "transforms.unwrap.drop.tombstones", "false");
    run_gen_pl(GEN_ENVELOPE, "version", 20000, 2000, 1, 44, 0, legacy, true);
    /* writes the buffer's bound begins inside put, met by the next background
     * write (refused, begun later: nothing lost, nothing committed early) */
    g_batch_max = 40;
    run_gen_pl(GEN_REWRITE, "version", 3000, 300, 1, 45, 0, NULL, true);
    run_gen_pl(GEN_ENVELOPE, NULL, 3000, 300, 1, 46, 0, NULL, true);
    run_gen_pl(GEN_ENVELOPE, "version", 20000, 2000, 1, 47, 0, legacy, true);
    g_batch_max = 0;
    cf_props_destroy(legacy);
}

/* The proof run: 100,000 operations as Debezium envelopes through the
 * JsonConverter and ExtractNewRecordState (the seed's legacy rewrite mode),
 * with redelivery, crashes and rebalances; and one by offset order. */
static void test_gen_100k(void **state) {
    (void)state;
    cf_props *legacy = unwrap_conf("transforms.unwrap.delete.handling.mode", "rewrite",
                                   "transforms.unwrap.drop.tombstones", "false");
    run_gen_pl(GEN_ENVELOPE, "version", 100000, 5000, 1, 42, 0, legacy, false);
    run_gen(GEN_REWRITE, NULL, 100000, 5000, 1, 43);
    cf_props_destroy(legacy);
}


/* ---------------- tables, schema changes, errors ---------------- */

static int sq_exec(const char *sql, char *out, size_t outsz) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(g_path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (out) out[0] = 0;
    if (rc == SQLITE_OK) {
        size_t k = 0;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(st); i++) {
                const char *t = (const char *)sqlite3_column_text(st, i);
                if (out) k += (size_t)snprintf(out + k, outsz - k, "%s%s", i ? "|" : (k ? ";" : ""), t ? t : "NULL");
            }
        }
        rc = rc == SQLITE_DONE ? 0 : rc;
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return rc;
}

static cf_record *mk(cf_schema *ks, cf_schema *vs, int32_t id, int64_t off, const char *field, cf_value *fv) {
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "shop.orders");
    cf_value *k = cf_value_struct(cf_schema_ref(ks));
    cf_value_struct_set(k, "id", cf_value_int32(id), NULL);
    cf_record_set_key(r, cf_schema_ref(ks), k);
    if (vs) {
        cf_value *v = cf_value_struct(cf_schema_ref(vs));
        cf_value_struct_set(v, "id", cf_value_int32(id), NULL);
        if (field) cf_value_struct_set(v, field, fv, NULL);
        cf_record_set_value(r, cf_schema_ref(vs), v);
    }
    r->partition = 0, r->offset = off;
    return r;
}

static cf_schema *key_schema(void) {
    cf_schema *k = cf_schema_new_struct();
    cf_schema_add_field(k, "id", cf_schema_primitive(CF_INT32, false), NULL);
    return k;
}

static void test_schema_evolution(void **state) {
    (void)state;
    fresh_db("evo");
    cf_sink_options o;
    opts_for(&o);
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    cf_schema *ks = key_schema();
    cf_schema *v1 = cf_schema_new_struct();
    cf_schema_add_field(v1, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(v1, "qty", cf_schema_primitive(CF_INT16, false), NULL);
    cf_schema_add_field(v1, "__op", cf_schema_primitive(CF_STRING, true), NULL); /* add.fields: dropped */
    cf_record *r1 = mk(ks, v1, 1, 0, "qty", cf_value_int16(5));
    assert_int_equal(cf_sink_put(s, &r1, 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    /* v2: qty widened to int32, a new field price (decimal), a date */
    cf_schema *v2 = cf_schema_new_struct();
    cf_schema_add_field(v2, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(v2, "qty", cf_schema_primitive(CF_INT16, false), NULL);
    cf_schema *dec = cf_schema_decimal(2);
    cf_schema_set_optional(dec, true);
    cf_schema_add_field(v2, "price", dec, NULL);
    cf_schema *day = cf_schema_date();
    cf_schema_set_optional(day, true);
    cf_schema_add_field(v2, "day", day, NULL);
    uint8_t *ub;
    size_t ul;
    assert_int_equal(cf_decimal_from_string("-12.30", 2, &ub, &ul, NULL), CF_OK);
    cf_record *r2 = mk(ks, v2, 2, 1, "price", cf_value_bytes_take(ub, ul));
    cf_value_struct_set(r2->value, "qty", cf_value_int16(7), NULL);
    cf_value_struct_set(r2->value, "day", cf_value_int32(19844), NULL); /* 2024-05-01 (Python: (date(2024,5,1) - date(1970,1,1)).days) */
    assert_int_equal(cf_sink_put(s, &r2, 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    char out[512];
    assert_int_equal(sq_exec("SELECT group_concat(name || ':' || type, ',') FROM pragma_table_info('shop_orders')", out,
                             sizeof out), 0);
    assert_string_equal(out, "id:INTEGER,qty:INTEGER,_change_sequence_number:TEXT,price:TEXT,day:DATE");
    assert_int_equal(sq_exec("SELECT id, qty, coalesce(price, 'NULL'), coalesce(day, 'NULL') FROM shop_orders ORDER BY id",
                             out, sizeof out), 0);
    assert_string_equal(out, "1|5|NULL|NULL;2|7|-12.30|2024-05-01");
    /* v3: qty becomes a string: refused, clearly */
    cf_schema *v3 = cf_schema_new_struct();
    cf_schema_add_field(v3, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(v3, "qty", cf_schema_primitive(CF_STRING, false), NULL);
    cf_record *r3 = mk(ks, v3, 3, 2, "qty", cf_value_string("many"));
    assert_int_equal(cf_sink_put(s, &r3, 1, &e), CF_ERR_SCHEMA);
    assert_non_null(strstr(e.message, "incompatible schema change"));
    assert_string_equal(e.where, "shop.orders/0@2: qty");
    /* a different key: refused */
    cf_schema *k2 = cf_schema_new_struct();
    cf_schema_add_field(k2, "order_no", cf_schema_primitive(CF_INT64, false), NULL);
    cf_record *r4 = cf_record_new();
    cf_record_set_topic(r4, "shop.orders");
    cf_value *kv = cf_value_struct(cf_schema_ref(k2));
    cf_value_struct_set(kv, "order_no", cf_value_int64(1), NULL);
    cf_record_set_key(r4, cf_schema_ref(k2), kv);
    r4->offset = 3;
    assert_int_equal(cf_sink_put(s, &r4, 1, &e), CF_ERR_SCHEMA);
    assert_non_null(strstr(e.message, "do not match the primary key"));
    /* a null key: refused with a hint */
    cf_record *r5 = cf_record_clone(r1);
    cf_record_set_key(r5, NULL, NULL);
    assert_int_equal(cf_sink_put(s, &r5, 1, &e), CF_ERR_SCHEMA);
    assert_non_null(strstr(e.hint, "primary key"));
    cf_sink_destroy(s);
    cf_record_destroy(r1), cf_record_destroy(r2), cf_record_destroy(r3), cf_record_destroy(r4), cf_record_destroy(r5);
    cf_schema_unref(ks), cf_schema_unref(k2), cf_schema_unref(v1), cf_schema_unref(v2), cf_schema_unref(v3);
}

static void test_existing_table_without_key(void **state) {
    (void)state;
    fresh_db("nokey");
    assert_int_equal(sq_exec("CREATE TABLE shop_orders (id INTEGER, qty INTEGER)", NULL, 0), 0);
    cf_sink_options o;
    opts_for(&o);
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    cf_schema *ks = key_schema();
    cf_schema *v = cf_schema_new_struct();
    cf_schema_add_field(v, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(v, "qty", cf_schema_primitive(CF_INT32, true), NULL);
    cf_record *r = mk(ks, v, 1, 0, "qty", cf_value_int32(1));
    assert_int_equal(cf_sink_put(s, &r, 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_ERR_TARGET);
    assert_string_equal(e.hint, "run: CREATE UNIQUE INDEX \"shop_orders_pkey\" ON \"shop_orders\" (\"id\");");
    cf_sink_destroy(s);
    /* the statement from the hint fixes it */
    assert_int_equal(sq_exec("CREATE UNIQUE INDEX \"shop_orders_pkey\" ON \"shop_orders\" (\"id\")", NULL, 0), 0);
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, &r, 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    cf_sink_destroy(s);
    /* the table's sequence format is fixed: switching to a field is refused */
    o.seq_field = "qty";
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, &r, 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_ERR_CONFIG);
    assert_non_null(strstr(e.message, "1 section(s); this connector writes 2"));
    cf_sink_destroy(s);
    cf_record_destroy(r);
    cf_schema_unref(ks), cf_schema_unref(v);
}

typedef struct rep_state {
    int n;
    char last[256];
} rep_state;

static cf_code tolerate(void *ud, const cf_record *rec, const cf_err *problem, cf_err *err) {
    (void)rec, (void)err;
    rep_state *r = ud;
    r->n++;
    snprintf(r->last, sizeof r->last, "%s @ %s", problem->message, problem->where);
    return CF_OK;
}

/* batch_max_bytes bounds the buffer in bytes: with a bound of 64 KiB and no
 * record bound to speak of, 2,000 inserts apply inside the puts (several
 * flushes before the explicit one), and the rows are all there. */
static void test_batch_max_bytes(void **state) {
    (void)state;
    gen g;
    gen_init(&g, 11, GEN_REWRITE, 2000, 1, TOPIC);
    for (int32_t k = 0; k < 2000; k++) gen_insert(&g, k, 0);
    fresh_db("bytes");
    cf_sink_options o;
    opts_for(&o);
    o.batch_max_records = 1000000;
    o.batch_max_bytes = 65536;
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], g.n_recs[0], &e), CF_OK);
    cf_sink_stats st;
    cf_sink_get_stats(s, &st);
    assert_true(st.flushes >= 2); /* applied inside the put, by bytes */
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    size_t n;
    char **rows = read_rows(TABLE, &n);
    assert_int_equal(n, 2000);
    rows_free(rows, n);
    cf_sink_destroy(s);
    gen_free(&g);
}

/* seq field mode: tombstones skipped and counted; a delete without the field
 * (tombstone-mode null value: the key only, as with REPLICA IDENTITY DEFAULT)
 * deletes the row it follows (issue 18: it used to go to the reporter and
 * leave the row), and one of a key nothing knows goes to the reporter;
 * replayed old tombstones never delete a re-inserted row. */
static void test_seq_field_mode(void **state) {
    (void)state;
    gen g;
    gen_init(&g, 9, GEN_TOMBSTONE, 10, 1, TOPIC);
    gen_insert(&g, 1, 0);
    gen_delete(&g, 1); /* null value with schema + tombstone */
    fresh_db("seqf");
    cf_sink_options o;
    opts_for(&o);
    o.seq_field = "version";
    cf_sink *s;
    cf_err e;
    rep_state rs = {0, ""};
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    cf_sink_set_reporter(s, tolerate, &rs);
    assert_int_equal(cf_sink_put(s, g.recs[0], g.n_recs[0], &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    assert_int_equal(rs.n, 0);
    cf_sink_stats st;
    cf_sink_get_stats(s, &st);
    assert_int_equal(st.skipped_tombstones, 1);
    assert_int_equal(st.bad_records, 0);
    size_t n0;
    char **rows0 = read_rows(TABLE, &n0);
    assert_int_equal(n0, 0); /* deleted */
    rows_free(rows0, n0);
    gen_delete(&g, 2); /* key 2 was never inserted: the delete cannot be ordered */
    assert_int_equal(cf_sink_put(s, g.recs[0] + 3, 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    assert_int_equal(rs.n, 1);
    assert_non_null(strstr(rs.last, "no usable value in the sequence field \"version\" @ dbserver1.public.customers/0@3"));
    cf_sink_get_stats(s, &st);
    assert_int_equal(st.bad_records, 1);
    cf_sink_destroy(s);
    gen_free(&g);

    /* rewrite mode: delete, re-insert with the same version, then a replay
     * of the old delete and tombstone: the row stays */
    gen_init(&g, 10, GEN_REWRITE, 10, 1, TOPIC);
    gen_insert(&g, 1, 0);
    gen_delete(&g, 1);
    gen_insert(&g, 1, 1);
    fresh_db("seqf");
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], g.n_recs[0], &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0] + 1, 2, &e), CF_OK); /* old delete + tombstone again */
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    cf_sink_destroy(s);
    size_t n;
    char **rows = read_rows(TABLE, &n);
    assert_int_equal(n, 1);
    assert_int_equal(rows_diff(&g, rows, n, 0), 0);
    rows_free(rows, n);
    gen_free(&g);
}

/* Deletes: a late older upsert after a delete does not resurrect the row
 * while the tombstone is kept; after the retention it is purged. */
static void test_tombstone_retention(void **state) {
    (void)state;
    gen g;
    gen_init(&g, 11, GEN_REWRITE, 10, 1, TOPIC);
    gen_insert(&g, 1, 0);   /* offset 0 */
    gen_update(&g, 1, 0, 0); /* 1 */
    gen_delete(&g, 1);       /* 2, 3 */
    fresh_db("tomb");
    cf_sink_options o;
    opts_for(&o);
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0] + 2, 2, &e), CF_OK); /* the delete arrives first */
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], 2, &e), CF_OK); /* then the older upserts */
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    cf_sink_destroy(s);
    char out[256];
    assert_int_equal(sq_exec("SELECT count(*) FROM " TABLE, out, sizeof out), 0);
    assert_string_equal(out, "0");
    assert_int_equal(sq_exec("SELECT id, _change_sequence_number FROM _cdc_tombstones_" TABLE, out, sizeof out), 0);
    assert_string_equal(out, "1|0000000000000003");
    /* retention 0: the next flush purges it (purges run at most once a minute
     * per table and engine; a new engine purges at its first flush) */
    o.delete_retention_s = -1;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0] + 3, 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    cf_sink_destroy(s);
    assert_int_equal(sq_exec("SELECT count(*) FROM _cdc_tombstones_" TABLE, out, sizeof out), 0);
    assert_string_equal(out, "0");
    gen_free(&g);
}

/* tableMaxStaleness: a flush stages; the table is unchanged until the
 * background apply; the _fresh view shows the merged state at once. */
static void test_staleness(void **state) {
    (void)state;
    gen g;
    gen_init(&g, 12, GEN_REWRITE, 50, 1, TOPIC);
    for (int i = 0; i < 400; i++) gen_step(&g);
    fresh_db("stale");
    cf_sink_options o;
    opts_for(&o);
    o.max_staleness_s = 1;
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &e), CF_OK);
    size_t half = g.n_recs[0] / 2;
    assert_int_equal(cf_sink_put(s, g.recs[0], half, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0] + half, g.n_recs[0] - half, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    /* fresh view == source model, table not yet (nothing applied within 1 s
     * of the first flush is allowed, so only the view is checked now) */
    size_t n;
    char **rows = read_rows(TABLE "_fresh", &n);
    assert_non_null(rows);
    assert_int_equal(rows_diff(&g, rows, n, 0), 0);
    rows_free(rows, n);
    char out[64];
    /* the background apply runs at least every second */
    for (int i = 0; i < 50; i++) {
        usleep(100000);
        sq_exec("SELECT count(*) FROM _cdc_staged_" TABLE, out, sizeof out);
        if (strcmp(out, "0") == 0) break;
    }
    assert_string_equal(out, "0");
    cf_sink_stats st;
    cf_sink_get_stats(s, &st);
    assert_true(st.background_applies >= 1);
    rows = read_rows(TABLE, &n);
    assert_int_equal(rows_diff(&g, rows, n, 0), 0);
    rows_free(rows, n);
    cf_sink_destroy(s);
    gen_free(&g);
}

/* Two tasks adding the same new column at the same time (mediated). */
static void test_concurrent_schema_updates(void **state) {
    (void)state;
    fresh_db("conc");
    cf_sink_options o;
    opts_for(&o);
    cf_sink *a, *b;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &a, &e), CF_OK);
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &b, &e), CF_OK);
    cf_schema *ks = key_schema();
    cf_schema *v = cf_schema_new_struct();
    cf_schema_add_field(v, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(v, "extra", cf_schema_primitive(CF_STRING, true), NULL);
    cf_record *r1 = mk(ks, v, 1, 0, "extra", cf_value_string("a"));
    cf_record *r2 = mk(ks, v, 2, 0, "extra", cf_value_string("b"));
    r2->partition = 1;
    assert_int_equal(cf_sink_put(a, &r1, 1, &e), CF_OK);
    assert_int_equal(cf_sink_put(b, &r2, 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(a, &e), CF_OK);
    assert_int_equal(cf_sink_flush(b, &e), CF_OK);
    char out[128];
    assert_int_equal(sq_exec("SELECT id, extra FROM shop_orders ORDER BY id", out, sizeof out), 0);
    assert_string_equal(out, "1|a;2|b");
    cf_sink_destroy(a), cf_sink_destroy(b);
    cf_record_destroy(r1), cf_record_destroy(r2);
    cf_schema_unref(ks), cf_schema_unref(v);
}

/* Three tasks adding the same columns at the same moment, 12 rounds. */
static void test_concurrent_tasks(void **state) {
    (void)state;
    fresh_db("conc");
    cf_sink_options o;
    opts_for(&o);
    assert_int_equal(cc_run(&o, &cf_sink_target_sqlite), 0);
    char out[512];
    assert_int_equal(sq_exec("SELECT count(*), count(f11) FROM shop_evolving", out, sizeof out), 0);
    assert_string_equal(out, "36|3");
    assert_int_equal(sq_exec("SELECT count(*) FROM pragma_table_info('shop_evolving')", out, sizeof out), 0);
    assert_string_equal(out, "14"); /* id, f0..f11, _change_sequence_number */
}

/* Two tasks racing on the same keys (the same history at different paces). */
static void test_race_same_keys(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        gen g;
        gen_init(&g, 300 + seed, GEN_REWRITE, 60, 1, TOPIC);
        for (int i = 0; i < 1500; i++) gen_step(&g);
        fresh_db("race");
        cf_sink_options o;
        opts_for(&o);
        o.seq_field = seed == 2 ? "version" : NULL;
        assert_int_equal(race_run(&o, &cf_sink_target_sqlite, g.recs[0], g.n_recs[0]), 0);
        size_t n;
        char **rows = read_rows(TABLE, &n);
        assert_int_equal(rows_diff(&g, rows, n, 0), 0);
        rows_free(rows, n);
        gen_free(&g);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_bigquery_examples),
        cmocka_unit_test(test_seq_rejects),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_route_shapes),
        cmocka_unit_test(test_seed32),
        cmocka_unit_test(test_schema_evolution),
        cmocka_unit_test(test_existing_table_without_key),
        cmocka_unit_test(test_seq_field_mode),
        cmocka_unit_test(test_batch_max_bytes),
        cmocka_unit_test(test_tombstone_retention),
        cmocka_unit_test(test_staleness),
        cmocka_unit_test(test_concurrent_schema_updates),
        cmocka_unit_test(test_concurrent_tasks),
        cmocka_unit_test(test_race_same_keys),
        cmocka_unit_test(test_gen_small_all_shapes),
        cmocka_unit_test(test_gen_staleness),
        cmocka_unit_test(test_gen_background_writes),
        cmocka_unit_test(test_gen_json_unwrap),
        cmocka_unit_test(test_gen_100k),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    const char *tags[] = {"seed32", "gen", "evo", "nokey", "seqf", "tomb", "stale", "conc", "race"};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) fresh_db(tags[i]);
    return r;
}
