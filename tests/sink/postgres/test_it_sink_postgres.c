/*
 * test_it_sink_postgres.c - the CDC sink engine on a real PostgreSQL
 * (scripts/servers start postgres; CF_TEST_PG). Fails without it.
 *
 * Same oracles as test_sink_sqlite.c: the generator's model of the source
 * table, BigQuery's apply rules, Debezium's shapes. Each run uses its own
 * schema, dropped at the end.
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <libpq-fe.h>

#include "../cdc_concurrent.h"
#include "../cdc_drive.h"
#include "../cdc_gen.h"
#include "../cdc_pipeline.h"
#include "../cdc_resume.h"
#include "../cdc_rows.h"
#include "cdcflow/buf.h"
#include "cdcflow/sink.h"

#define TABLE "dbserver1_public_customers"
#define TOPIC "dbserver1.public.customers"

static const char *g_conninfo;
static char g_schema[64];
static PGconn *g_c;

static void sql(const char *s) {
    PGresult *r = PQexec(g_c, s);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "SQL failed: %s: %s\n", s, PQerrorMessage(g_c));
        fail();
    }
    PQclear(r);
}

static void fresh_schema(void) {
    char b[256];
    snprintf(b, sizeof b, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", g_schema, g_schema);
    sql(b);
}

static void opts_for(cf_sink_options *o) {
    cf_sink_options_default(o);
    o->target = "postgres";
    o->pg_conninfo = g_conninfo;
    o->pg_schema = g_schema;
}

static char **read_rows(const char *rel, size_t *n) { return rows_pg(g_c, g_schema, rel, n); }

static int g_quiet;

static void run_gen_pl(gen_shape shape, const char *seq_field, int n_ops, int32_t n_keys, int chaos, uint64_t seed,
                       int64_t staleness, const cf_props *pipeline) {
    gen g;
    gen_init(&g, seed, shape, n_keys, 4, TOPIC);
    for (int i = 0; i < n_ops; i++) gen_step(&g);
    if (pipeline) { /* JsonConverter bytes and back, then the transforms */
        size_t dropped;
        cf_err pe;
        cf_err_clear(&pe);
        int prc = pipeline_apply(&g, pipeline, &dropped, &pe);
        if (prc) {
            char buf[2048];
            fprintf(stderr, "pipeline: %s\n", cf_err_format(&pe, buf, sizeof buf));
        }
        assert_int_equal(prc, CF_OK);
    }
    fresh_schema();
    cf_sink_options o;
    opts_for(&o);
    o.seq_field = seq_field;
    o.batch_max_records = 20000;
    o.max_staleness_s = staleness;
    drive_stats ds;
    cf_err e;
    cf_err_clear(&e);
    int rc = drive(&g, &o, &cf_sink_target_postgres, seed * 7 + 1, chaos, &ds, &e);
    if (rc) {
        char buf[2048];
        fprintf(stderr, "%s\n", cf_err_format(&e, buf, sizeof buf));
    }
    assert_int_equal(rc, CF_OK);
    size_t n;
    char **rows = read_rows(TABLE, &n);
    size_t d = rows_diff(&g, rows, n, g_quiet);
    fprintf(stderr, "# postgres shape %d seq %s staleness %" PRId64 ": %d ops, %zu records, delivered %" PRIu64
            ", crashes %" PRIu64 ", rebalances %" PRIu64 ", rewinds %" PRIu64 ", rows %zu, differences %zu\n",
            shape, seq_field ? seq_field : "offset", staleness, n_ops, g.total, ds.delivered, ds.crashes,
            ds.rebalances, ds.rewinds, n, d);
    assert_int_equal(d, 0);
    rows_free(rows, n);
    gen_free(&g);
}

static void run_gen(gen_shape shape, const char *seq_field, int n_ops, int32_t n_keys, int chaos, uint64_t seed,
                    int64_t staleness) {
    run_gen_pl(shape, seq_field, n_ops, n_keys, chaos, seed, staleness, NULL);
}

static void test_gen_small(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 2; seed++) {
        run_gen(GEN_REWRITE, NULL, 3000, 300, 1, seed, 0);
        run_gen(GEN_REWRITE, "version", 3000, 300, 1, seed, 0);
        run_gen(GEN_TOMBSTONE, NULL, 3000, 300, 1, seed, 0);
        run_gen(GEN_ENVELOPE, "version", 3000, 300, 1, seed, 0);
    }
}

/* tableMaxStaleness on PostgreSQL: staged, applied in the background and at
 * shutdown; the result is the same source state. */
static void test_gen_staleness(void **state) {
    (void)state;
    run_gen(GEN_REWRITE, "version", 3000, 300, 1, 7, 1);
    run_gen(GEN_ENVELOPE, NULL, 3000, 300, 1, 8, 1);
}

/* The <table>_fresh view merges staged changes: equal to the source state
 * at any moment, before or after the background apply. */
static void test_fresh_view(void **state) {
    (void)state;
    gen g;
    gen_init(&g, 13, GEN_REWRITE, 50, 1, TOPIC);
    for (int i = 0; i < 400; i++) gen_step(&g);
    fresh_schema();
    cf_sink_options o;
    opts_for(&o);
    o.max_staleness_s = 3600; /* no background apply during the test */
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_postgres, &s, &e), CF_OK);
    size_t half = g.n_recs[0] / 2;
    assert_int_equal(cf_sink_put(s, g.recs[0], half, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    assert_int_equal(cf_sink_apply_staged(s, &e), CF_OK); /* half applied, half staged */
    assert_int_equal(cf_sink_put(s, g.recs[0] + half, g.n_recs[0] - half, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    size_t n;
    char **rows = read_rows(TABLE "_fresh", &n);
    assert_int_equal(rows_diff(&g, rows, n, g_quiet), 0);
    rows_free(rows, n);
    rows = read_rows(TABLE, &n); /* the table itself is stale */
    g_quiet = 1;
    assert_true(rows_diff(&g, rows, n, g_quiet) > 0);
    g_quiet = 0;
    rows_free(rows, n);
    cf_sink_destroy(s); /* applies what is staged */
    rows = read_rows(TABLE, &n);
    assert_int_equal(rows_diff(&g, rows, n, g_quiet), 0);
    rows_free(rows, n);
    gen_free(&g);
}

/* The proof run: 100,000 operations as Debezium envelopes through the
 * JsonConverter and ExtractNewRecordState (the seed's legacy rewrite mode),
 * with redelivery, crashes and rebalances, ordered by the version field; and
 * a smaller one in the default tombstone mode, ordered by offset. */
static void test_gen_100k(void **state) {
    (void)state;
    cf_props *legacy = unwrap_conf("transforms.unwrap.delete.handling.mode", "rewrite",
                                   "transforms.unwrap.drop.tombstones", "false");
    cf_props *dflt = unwrap_conf(NULL, NULL, NULL, NULL);
    run_gen_pl(GEN_ENVELOPE, "version", 100000, 5000, 1, 42, 0, legacy);
    run_gen_pl(GEN_ENVELOPE, NULL, 5000, 400, 1, 44, 0, dflt);
    cf_props_destroy(legacy), cf_props_destroy(dflt);
}

/* An existing table without a primary key: fail fast with the statement. */
static void test_no_primary_key(void **state) {
    (void)state;
    fresh_schema();
    char b[512];
    snprintf(b, sizeof b, "CREATE TABLE %s.%s (id integer, email text)", g_schema, TABLE);
    sql(b);
    gen g;
    gen_init(&g, 5, GEN_REWRITE, 10, 1, TOPIC);
    gen_insert(&g, 1, 0);
    cf_sink_options o;
    opts_for(&o);
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_postgres, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_ERR_TARGET);
    char want[256];
    snprintf(want, sizeof want, "run: ALTER TABLE \"%s\".\"%s\" ADD PRIMARY KEY (\"id\");", g_schema, TABLE);
    assert_string_equal(e.hint, want);
    cf_sink_destroy(s);
    gen_free(&g);
}

/* Three tasks adding the same columns at the same moment, 12 rounds, with
 * mediateConcurrentSchemaUpdates (an advisory lock around the DDL). */
static void test_concurrent_tasks(void **state) {
    (void)state;
    fresh_schema();
    cf_sink_options o;
    opts_for(&o);
    assert_int_equal(cc_run(&o, &cf_sink_target_postgres), 0);
    char q[256];
    snprintf(q, sizeof q, "SELECT count(*), count(f11) FROM %s.shop_evolving", g_schema);
    PGresult *r = PQexec(g_c, q);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "36");
    assert_string_equal(PQgetvalue(r, 0, 1), "3");
    PQclear(r);
}

/* Two tasks racing on the same keys (the same history at different paces). */
static void test_race_same_keys(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        gen g;
        gen_init(&g, 300 + seed, GEN_REWRITE, 60, 1, TOPIC);
        for (int i = 0; i < 1500; i++) gen_step(&g);
        fresh_schema();
        cf_sink_options o;
        opts_for(&o);
        o.seq_field = seed == 2 ? "version" : NULL;
        assert_int_equal(race_run(&o, &cf_sink_target_postgres, g.recs[0], g.n_recs[0]), 0);
        size_t n;
        char **rows = read_rows(TABLE, &n);
        assert_int_equal(rows_diff(&g, rows, n, g_quiet), 0);
        rows_free(rows, n);
        gen_free(&g);
    }
}

/* Exactly once into PostgreSQL: positions stored with the rows, read back
 * by a new engine; kill -9 at 20 random moments of a child delivering from
 * the stored positions. The table ends equal to the model, and a trigger
 * (which logs in the applying transaction) saw no (key, sequence) twice. */
static long long pg_int(const char *q) {
    PGresult *r = PQexec(g_c, q);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) fail_msg("%s: %s", q, PQerrorMessage(g_c));
    long long v = PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return v;
}

static void test_alter_positions(void **state) {
    (void)state;
    fresh_schema();
    cf_sink_options o;
    opts_for(&o);
    alter_positions_check(&o, &cf_sink_target_postgres);
}

static void test_positions_kill9(void **state) {
    (void)state;
    fresh_schema();
    char b[2048];
    snprintf(b, sizeof b,
             "CREATE TABLE %1$s.\"" TABLE "\" (id integer NOT NULL PRIMARY KEY, email text, name text, version bigint,"
             " score double precision, active boolean, note text, qty integer, created bigint, tag text,"
             " \"_change_sequence_number\" text COLLATE \"C\");"
             "CREATE TABLE %1$s.apply_log (id integer, seq text);"
             "CREATE FUNCTION %1$s.log_apply() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
             " INSERT INTO %1$s.apply_log VALUES (NEW.id, NEW.\"_change_sequence_number\"); RETURN NEW; END $$;"
             "CREATE TRIGGER log_apply AFTER INSERT OR UPDATE ON %1$s.\"" TABLE "\" FOR EACH ROW EXECUTE FUNCTION"
             " %1$s.log_apply()",
             g_schema);
    sql(b);
    gen g;
    gen_init(&g, 21, GEN_REWRITE, 400, 3, TOPIC);
    for (int i = 0; i < 20000; i++) gen_step(&g);
    cf_sink_options o;
    opts_for(&o);
    o.consumer = "cdc";
    uint64_t seed = (uint64_t)time(NULL);
    fprintf(stderr, "# postgres kill -9 with positions: seed %llu, %zu records\n", (unsigned long long)seed, g.total);
    resume_kill9(&g, &o, &cf_sink_target_postgres, seed, 20);
    size_t n;
    char **rows = read_rows(TABLE, &n);
    assert_int_equal(rows_diff(&g, rows, n, 0), 0);
    rows_free(rows, n);
    snprintf(b, sizeof b, "SELECT count(*) FROM (SELECT id, seq FROM %s.apply_log GROUP BY id, seq HAVING count(*) > 1) d",
             g_schema);
    assert_int_equal(pg_int(b), 0);
    /* the positions: one row per partition, at its end */
    snprintf(b, sizeof b, "SELECT sum(next_offset) FROM %s._cdcflow_positions WHERE consumer = 'cdc' AND stream = '%s'",
             g_schema, TOPIC);
    assert_int_equal(pg_int(b), (long long)g.total);
    gen_free(&g);
}

static int setup(void **state) {
    (void)state;
    g_conninfo = getenv("CF_TEST_PG");
    if (!g_conninfo || !*g_conninfo) {
        fprintf(stderr, "CF_TEST_PG is not set: start PostgreSQL with scripts/servers start postgres and source "
                        "the env file (scripts/servers envfile)\n");
        return -1;
    }
    g_c = PQconnectdb(g_conninfo);
    if (PQstatus(g_c) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to CF_TEST_PG: %s\n", PQerrorMessage(g_c));
        return -1;
    }
    PQclear(PQexec(g_c, "SET client_min_messages = warning"));
    snprintf(g_schema, sizeof g_schema, "cf_sink_it_%d", (int)getpid());
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (g_c) {
        char b[128];
        snprintf(b, sizeof b, "DROP SCHEMA IF EXISTS %s CASCADE", g_schema);
        PQclear(PQexec(g_c, b));
        PQfinish(g_c);
    }
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_primary_key),
        cmocka_unit_test(test_concurrent_tasks),
        cmocka_unit_test(test_race_same_keys),
        cmocka_unit_test(test_gen_small),
        cmocka_unit_test(test_gen_staleness),
        cmocka_unit_test(test_fresh_view),
        cmocka_unit_test(test_gen_100k),
        cmocka_unit_test(test_alter_positions),
        cmocka_unit_test(test_positions_kill9),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
