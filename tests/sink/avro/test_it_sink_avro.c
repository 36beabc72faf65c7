/*
 * test_it_sink_avro.c - issue #6's proof in Avro: the generator's random
 * history of a source table (cdc_gen.h) rendered as Debezium PostgreSQL
 * events in Confluent's wire format by our AvroConverter against the real
 * Schema Registry (Apicurio's ccompat API, CF_TEST_REGISTRY), decoded back by
 * other AvroConverter instances as the worker does (schemas fetched by id),
 * unwrapped by ExtractNewRecordState where the shape needs it, and delivered
 * at least once (crashes, rebalances, rewinds: cdc_drive.h) to the cdc-sink
 * engine on SQLite and on PostgreSQL (CF_TEST_PG). The oracle is the
 * generator's model of the SOURCE table; zero differences.
 *
 * Fails (never skips) without CF_TEST_REGISTRY or CF_TEST_PG.
 *
 * Sizes: the proof run is 100,000 operations in every build (about 20 s
 * plain, 40 s under ASan+UBSan, both targets included).
 *
 * Lives in tests/sink/avro/ (not a module folder name), so it links every
 * module library, the targets included.
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

#include "../../it_env.h"
#include "../cdc_drive.h"
#include "../cdc_gen.h"
#include "../cdc_pipeline.h"
#include "../cdc_rows.h"
#include "cdcflow/buf.h"
#include "cdcflow/schema_registry.h"
#include "cdcflow/sink.h"

static const char *REGISTRY, *PG;
static char RUN_ID[64];
static char g_path[256], g_schema[64];
static PGconn *g_c;

static void check(int rc, const cf_err *err, const char *what) {
    if (rc != CF_OK) {
        char buf[2048];
        fail_msg("%s failed (%s):\n%s", what, cf_code_name((cf_code)rc), cf_err_format(err, buf, sizeof buf));
    }
}

static void fresh_sqlite(void) {
    char p[300];
    unlink(g_path);
    snprintf(p, sizeof p, "%s-wal", g_path), unlink(p);
    snprintf(p, sizeof p, "%s-shm", g_path), unlink(p);
}

static void pg_exec(const char *s) {
    PGresult *r = PQexec(g_c, s);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) fail_msg("SQL failed: %s: %s", s, PQerrorMessage(g_c));
    PQclear(r);
}

static void fresh_pg(void) {
    char b[256];
    snprintf(b, sizeof b, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", g_schema, g_schema);
    pg_exec(b);
}

/* The records through the sink engine on one target with at-least-once
 * delivery; returns the number of differences with the source model. */
static size_t apply_and_diff(gen *g, const cf_sink_target *tg, const char *seq_field, uint64_t seed,
                             const char *table) {
    cf_sink_options o;
    cf_sink_options_default(&o);
    o.seq_field = seq_field;
    if (tg == &cf_sink_target_postgres) {
        fresh_pg();
        o.target = "postgres";
        o.pg_conninfo = PG;
        o.pg_schema = g_schema;
        o.batch_max_records = 20000;
    } else {
        fresh_sqlite();
        o.sqlite_path = g_path;
        o.batch_max_records = 5000;
    }
    drive_stats ds;
    cf_err e;
    cf_err_clear(&e);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    check(drive(g, &o, tg, seed, 1, &ds, &e), &e, "the sink");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    size_t n;
    char **rows = tg == &cf_sink_target_postgres ? rows_pg(g_c, g_schema, table, &n) : rows_sqlite(g_path, table, &n);
    size_t d = rows_diff(g, rows, n, 0);
    fprintf(stderr, "#   %s: delivered %" PRIu64 " (crashes %" PRIu64 ", rebalances %" PRIu64 ", rewinds %" PRIu64
            "), rows %zu, differences %zu, %.1f s\n",
            tg == &cf_sink_target_postgres ? "postgres" : "sqlite", ds.delivered, ds.crashes, ds.rebalances,
            ds.rewinds, n, d, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    rows_free(rows, n);
    return d;
}

/* One history: generated, rendered as Avro through the registry and decoded
 * back, transformed by unwrap (NULL: none), applied to SQLite and, when
 * with_pg, to PostgreSQL. */
static void run_avro(const char *tag, gen_shape shape, const char *seq_field, int n_ops, int32_t n_keys, uint64_t seed,
                     const cf_props *unwrap, int with_pg) {
    /* a topic (so subjects and tables) of this run only */
    char topic[128];
    snprintf(topic, sizeof topic, "cfit_%s_%s.public.customers", RUN_ID, tag);
    char *table = cf_sink_sanitize_name(topic);
    gen g;
    gen_init(&g, seed, shape, n_keys, 4, topic);
    for (int i = 0; i < n_ops; i++) gen_step(&g);
    size_t generated = g.total;

    cf_props *cp = cf_props_new();
    cf_props_set(cp, "schema.registry.url", REGISTRY);
    pipeline_stats ps;
    cf_err e;
    cf_err_clear(&e);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    check(pipeline_apply_conv(&g, "avro", cp, unwrap, &ps, &e), &e, "AvroConverter + transforms");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cf_props_destroy(cp);
    fprintf(stderr, "# avro %s: %d ops, %zu records (%" PRIu64 " key + %" PRIu64 " value bytes in Confluent's wire "
            "format), %zu dropped by the transforms, %.1f s\n",
            tag, n_ops, generated, ps.key_bytes, ps.value_bytes, ps.dropped,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);

    /* the bytes went through the registry: <topic>-key and <topic>-value
     * (TopicNameStrategy) are there, and the decoded records carry the
     * Connect names our encoder wrote (connect.meta.data) */
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    cfg.urls = REGISTRY;
    cf_sr_client *sr;
    check(cf_sr_client_new(&cfg, &sr, &e), &e, "registry client");
    const char *suffix[2] = {"-key", "-value"};
    for (int i = 0; i < 2; i++) {
        char subject[200], *text = NULL;
        int32_t id, ver;
        snprintf(subject, sizeof subject, "%s%s", topic, suffix[i]);
        check(cf_sr_get_latest(sr, subject, &id, &ver, &text, &e), &e, subject);
        assert_int_equal(ver, 1); /* one schema per subject over the whole history */
        free(text);
    }
    cf_sr_client_destroy(sr);
    const cf_record *r0 = g.recs[0][0];
    assert_true(r0->key_schema && r0->key_schema->name);
    assert_string_equal(r0->key_schema->name, "dbserver1.public.customers.Key");

    assert_int_equal(apply_and_diff(&g, &cf_sink_target_sqlite, seq_field, seed * 7 + 1, table), 0);
    if (with_pg) assert_int_equal(apply_and_diff(&g, &cf_sink_target_postgres, seq_field, seed * 7 + 1, table), 0);
    gen_free(&g);
    free(table);
}

/* The proof run: raw Debezium envelopes as Avro, ExtractNewRecordState in
 * the seed's legacy rewrite mode (tombstones kept), ordered by the version
 * field, on both targets. */
static void test_avro_proof(void **state) {
    (void)state;
    cf_props *legacy = unwrap_conf("transforms.unwrap.delete.handling.mode", "rewrite",
                                   "transforms.unwrap.drop.tombstones", "false");
    run_avro("proof", GEN_ENVELOPE, "version", 100000, 5000, 42, legacy, 1);
    cf_props_destroy(legacy);
}

/* The other shapes, smaller: envelopes unwrapped in Debezium's default
 * tombstone mode by offset order; records already flat (rewrite with
 * __deleted, and deletes as a null value with the value schema, which the
 * Avro converter writes as a tombstone). */
static void test_avro_shapes(void **state) {
    (void)state;
    cf_props *dflt = unwrap_conf(NULL, NULL, NULL, NULL);
    run_avro("env_default", GEN_ENVELOPE, NULL, 5000, 400, 44, dflt, 1);
    cf_props_destroy(dflt);
    run_avro("rewrite", GEN_REWRITE, "version", 5000, 400, 45, NULL, 0);
    run_avro("tombstone", GEN_TOMBSTONE, NULL, 5000, 400, 46, NULL, 0);
}

static int setup(void **state) {
    (void)state;
    g_c = PQconnectdb(PG);
    if (PQstatus(g_c) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to CF_TEST_PG: %s\n", PQerrorMessage(g_c));
        return -1;
    }
    PQclear(PQexec(g_c, "SET client_min_messages = warning"));
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
    fresh_sqlite();
    return 0;
}

int main(void) {
    REGISTRY = it_need_env("CF_TEST_REGISTRY");
    PG = it_need_env("CF_TEST_PG");
    snprintf(RUN_ID, sizeof RUN_ID, "%ld_%d", (long)time(NULL), (int)getpid());
    snprintf(g_path, sizeof g_path, "%s/cf_sink_avro_%d.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    snprintf(g_schema, sizeof g_schema, "cf_sink_avro_%d", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avro_shapes),
        cmocka_unit_test(test_avro_proof),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
