/*
 * test_it_sink_bigquery.c - the CDC sink's BigQuery target against the
 * BigQuery TEST DOUBLE (tests/bigquery/bq_test_server.py, started here on
 * free loopback ports with the test venv's python, CF_TEST_PYTHON).
 *
 * Oracles: the generator's model of the SOURCE table (cdc_gen.h) compared
 * with the rows the double holds after applying BigQuery's CDC rules to
 * what we sent (decoded with Google's protobuf from our descriptor), the
 * same comparison as the SQLite and PostgreSQL targets (cdc_rows.h); and
 * BigQuery's documented behaviour for tables, errors and credentials.
 *
 * The histories have no unchanged-TOAST updates (gen.no_toast): BigQuery's
 * UPSERT replaces the whole row, so a placeholder the batch cannot fill is
 * a bad record here (test_toast_placeholder_reported), not a kept value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../cdc_drive.h"
#include "../cdc_gen.h"
#include "../cdc_rows.h"
#include "bq_double.h"
#include "cdcflow/buf.h"
#include "cdcflow/sink.h"

#define TABLE "dbserver1_public_customers"
#define TOPIC "dbserver1.public.customers"

static bq_double g_d;

/* The double's rows of a table in gen_row_text's form, sorted by id. */
static int by_id(const void *a, const void *b) {
    long x = atol(*(char *const *)a), y = atol(*(char *const *)b);
    return x < y ? -1 : x > y;
}

static char **read_rows(const char *table, size_t *n) {
    json_t *o = bqd_rows(&g_d, table);
    json_t *rows = json_object_get(o, "rows");
    *n = json_array_size(rows);
    char **out = calloc(*n + 1, sizeof *out);
    static const char *const cols[10] = {"id", "email", "name", "version", "score", "active", "note", "qty",
                                         "created", "tag"};
    cf_buf b = CF_BUF_INIT;
    for (size_t i = 0; i < *n; i++) {
        json_t *r = json_array_get(rows, i);
        cf_buf_reset(&b);
        for (int c = 0; c < 10; c++) {
            json_t *v = json_object_get(r, cols[c]);
            if (c) cf_buf_append_byte(&b, '|');
            if (!v || json_is_null(v)) cf_buf_append_str(&b, "\\N");
            else if (json_is_integer(v)) cf_buf_printf(&b, "%lld", (long long)json_integer_value(v));
            else if (json_is_real(v)) cf_buf_printf(&b, "%.17g", json_real_value(v));
            else if (json_is_boolean(v)) cf_buf_append_str(&b, json_is_true(v) ? "1" : "0");
            else if (json_is_string(v)) cf_buf_append_str(&b, json_string_value(v));
            else cf_buf_append_str(&b, "?");
        }
        out[i] = cf_xstrdup(b.data);
    }
    cf_buf_free(&b);
    json_decref(o);
    qsort(out, *n, sizeof *out, by_id);
    return out;
}

static size_t diff_table(const gen *g, const char *table, size_t *n_rows) {
    size_t n;
    char **rows = read_rows(table, &n);
    size_t d = rows_diff(g, rows, n, 0);
    rows_free(rows, n);
    if (n_rows) *n_rows = n;
    return d;
}

static void report_fail(int rc, const cf_err *e) {
    if (!rc) return;
    char buf[2048];
    fprintf(stderr, "%s\n", cf_err_format(e, buf, sizeof buf));
}

/* A history of n_ops random operations on n_keys keys (no TOAST updates)
 * over n_part partitions, on a fresh double. */
static void history(gen *g, uint64_t seed, gen_shape shape, int32_t n_keys, int n_part, int n_ops) {
    bqd_reset(&g_d);
    gen_init(g, seed, shape, n_keys, n_part, TOPIC);
    g->no_toast = 1;
    for (int i = 0; i < n_ops; i++) gen_step(g);
}

/* One engine: put records, flush, destroy; returns the flush's code. */
static int put_flush(const cf_sink_options *o, cf_record *const *recs, size_t n, cf_sink_report_fn rep, void *ud,
                     cf_err *e) {
    cf_sink *s;
    assert_int_equal(cf_sink_new(o, &cf_sink_target_bigquery, &s, e), CF_OK);
    if (rep) cf_sink_set_reporter(s, rep, ud);
    assert_int_equal(cf_sink_put(s, recs, n, e), CF_OK);
    int rc = cf_sink_flush(s, e);
    cf_sink_destroy(s);
    return rc;
}

/* A random history through two tasks with crashes, rebalances and
 * rewinds; the double's table must equal the source table. */
static void run_gen(gen_shape shape, const char *seq_field, int n_ops, int32_t n_keys, uint64_t seed,
                    const cf_sink_options *base) {
    gen g;
    history(&g, seed, shape, n_keys, 4, n_ops);
    cf_sink_options o;
    if (base) o = *base;
    else bqd_options(&g_d, &o);
    o.seq_field = seq_field;
    o.batch_max_records = 2000;
    drive_stats ds;
    cf_err e;
    cf_err_clear(&e);
    int rc = drive(&g, &o, &cf_sink_target_bigquery, seed * 7 + 1, 1, &ds, &e);
    report_fail(rc, &e);
    assert_int_equal(rc, CF_OK);
    size_t n;
    size_t d = diff_table(&g, TABLE, &n);
    fprintf(stderr, "# bigquery shape %d seq %s: %d ops, %zu records, delivered %" PRIu64 ", crashes %" PRIu64
            ", rebalances %" PRIu64 ", rewinds %" PRIu64 ", rows %zu, differences %zu\n",
            shape, seq_field ? seq_field : "offset", n_ops, g.total, ds.delivered, ds.crashes, ds.rebalances,
            ds.rewinds, n, d);
    assert_int_equal(d, 0);
    gen_free(&g);
}

static void test_gen_history(void **state) {
    (void)state;
    run_gen(GEN_REWRITE, NULL, 3000, 300, 1, NULL);
    run_gen(GEN_REWRITE, "version", 3000, 300, 2, NULL);
    run_gen(GEN_TOMBSTONE, NULL, 3000, 300, 3, NULL);
    run_gen(GEN_ENVELOPE, "version", 3000, 300, 4, NULL);
}

/* Small requests, several in flight: many requests per flush, answers
 * matched in order. */
static void test_many_requests(void **state) {
    (void)state;
    cf_sink_options o;
    bqd_options(&g_d, &o);
    o.bq.request_max_bytes = 65536;
    o.bq.inflight = 8;
    run_gen(GEN_REWRITE, "version", 8000, 3000, 5, &o);
    long st;
    json_t *s = bqd_call(&g_d, "GET", "/_test/stats", NULL, &st);
    json_t *appends = json_object_get(json_object_get(s, "counts"), "AppendRows");
    assert_non_null(appends);
    assert_true(json_integer_value(appends) > 20);
    json_decref(s);
}

static json_int_t fired(const char *rpc_or_action) {
    long st;
    json_t *o = bqd_call(&g_d, "GET", "/_test/faults", NULL, &st);
    json_t *fs = json_object_get(o, "faults");
    json_int_t n = 0;
    size_t i;
    json_t *f;
    json_array_foreach(fs, i, f) {
        const char *c = json_string_value(json_object_get(f, "code"));
        const char *a = json_string_value(json_object_get(f, "action"));
        if ((c && strcmp(c, rpc_or_action) == 0) || (a && strcmp(a, rpc_or_action) == 0))
            n += json_integer_value(json_object_get(f, "fired"));
    }
    json_decref(o);
    return n;
}

/* Injected INTERNAL / UNAVAILABLE / ABORTED / RESOURCE_EXHAUSTED /
 * CANCELLED, in answers and as broken streams: retried, nothing lost. */
static void test_retries(void **state) {
    (void)state;
    gen g;
    history(&g, 11, GEN_REWRITE, 300, 4, 3000);
    bqd_fault(&g_d, "[{\"rpc\":\"AppendRows\",\"action\":\"status\",\"code\":\"INTERNAL\",\"nth\":2,\"times\":3},"
                    "{\"rpc\":\"AppendRows\",\"action\":\"status\",\"code\":\"UNAVAILABLE\",\"how\":\"stream\","
                    "\"nth\":7,\"times\":2},"
                    "{\"rpc\":\"AppendRows\",\"action\":\"status\",\"code\":\"ABORTED\",\"nth\":12,\"times\":1},"
                    "{\"rpc\":\"AppendRows\",\"action\":\"status\",\"code\":\"RESOURCE_EXHAUSTED\",\"nth\":15,"
                    "\"times\":1},"
                    "{\"rpc\":\"AppendRows\",\"action\":\"status\",\"code\":\"CANCELLED\",\"how\":\"stream\","
                    "\"nth\":18,\"times\":1}]");
    cf_sink_options o;
    bqd_options(&g_d, &o);
    o.seq_field = "version";
    o.batch_max_records = 500;
    o.bq.request_max_bytes = 65536;
    drive_stats ds;
    cf_err e;
    int rc = drive(&g, &o, &cf_sink_target_bigquery, 99, 1, &ds, &e);
    report_fail(rc, &e);
    assert_int_equal(rc, CF_OK);
    assert_int_equal(fired("INTERNAL"), 3);
    assert_int_equal(fired("UNAVAILABLE"), 2);
    assert_int_equal(fired("ABORTED"), 1);
    assert_int_equal(fired("RESOURCE_EXHAUSTED"), 1);
    assert_int_equal(fired("CANCELLED"), 1);
    assert_int_equal(diff_table(&g, TABLE, NULL), 0);
    gen_free(&g);
}

/* INVALID_ARGUMENT without row errors is permanent: the flush fails. */
static void test_invalid_argument_fails(void **state) {
    (void)state;
    gen g;
    history(&g, 12, GEN_REWRITE, 20, 1, 50);
    bqd_fault(&g_d, "{\"rpc\":\"AppendRows\",\"action\":\"status\",\"code\":\"INVALID_ARGUMENT\"}");
    cf_sink_options o;
    bqd_options(&g_d, &o);
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], g.n_recs[0], &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_ERR_TARGET);
    assert_non_null(strstr(e.message, "INVALID_ARGUMENT"));
    assert_int_equal(cf_sink_flush(s, &e), CF_OK); /* the buffer was kept; the fault fired once */
    assert_int_equal(diff_table(&g, TABLE, NULL), 0);
    cf_sink_destroy(s);
    gen_free(&g);
}

/* row_errors: the named rows go to the reporter (the dead letter queue),
 * the rest of the request is sent again. Replaying what was reported, as
 * an operator does from the DLQ, gives the source table exactly. */
typedef struct rejects {
    int32_t part[4096];
    int64_t off[4096];
    size_t n;
    char msg[512];
} rejects;

static cf_code collect(void *ud, const cf_record *rec, const cf_err *problem, cf_err *err) {
    (void)err;
    rejects *r = ud;
    if (r->n < 4096) r->part[r->n] = rec->partition, r->off[r->n] = rec->offset, r->n++;
    snprintf(r->msg, sizeof r->msg, "%s", problem->message);
    return CF_OK;
}

static void test_row_errors(void **state) {
    (void)state;
    gen g;
    history(&g, 21, GEN_REWRITE, 200, 1, 2000);
    bqd_fault(&g_d, "{\"rpc\":\"AppendRows\",\"action\":\"row_error\",\"match\":{\"column\":\"id\","
                    "\"values\":[3,17,42,99,150]}}");
    cf_sink_options o;
    bqd_options(&g_d, &o);
    o.seq_field = "version";
    cf_sink *s;
    cf_err e;
    static rejects rj;
    memset(&rj, 0, sizeof rj);
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    cf_sink_set_reporter(s, collect, &rj);
    for (size_t i = 0; i < g.n_recs[0]; i += 300) {
        size_t k = g.n_recs[0] - i < 300 ? g.n_recs[0] - i : 300;
        assert_int_equal(cf_sink_put(s, g.recs[0] + i, k, &e), CF_OK);
        int rc = cf_sink_flush(s, &e);
        report_fail(rc, &e);
        assert_int_equal(rc, CF_OK);
    }
    cf_sink_stats st;
    cf_sink_get_stats(s, &st);
    cf_sink_destroy(s);
    assert_true(rj.n > 5);
    assert_int_equal(st.bad_records, rj.n);
    assert_non_null(strstr(rj.msg, "BigQuery refused the row"));
    /* the other keys are all there */
    size_t n;
    char **rows = read_rows(TABLE, &n);
    for (size_t i = 0; i < n; i++) {
        int id = atoi(rows[i]);
        assert_true(id != 3 && id != 17 && id != 42 && id != 99 && id != 150);
    }
    rows_free(rows, n);
    /* replay the reported records without the fault: the table converges */
    long hs;
    json_decref(bqd_call(&g_d, "DELETE", "/_test/faults", NULL, &hs));
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    for (size_t i = 0; i < rj.n; i++) {
        cf_record *r = g.recs[rj.part[i]][rj.off[i]];
        assert_int_equal(cf_sink_put(s, &r, 1, &e), CF_OK);
    }
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    cf_sink_destroy(s);
    assert_int_equal(diff_table(&g, TABLE, NULL), 0);
    gen_free(&g);
}

/* An existing table without a primary key: fail fast with the statement;
 * after running it, the sink works. */
static void test_no_primary_key(void **state) {
    (void)state;
    bqd_reset(&g_d);
    long st;
    json_decref(bqd_call(&g_d, "POST", "/bigquery/v2/projects/" BQD_PROJECT "/datasets/" BQD_DATASET "/tables",
                         "{\"tableReference\":{\"projectId\":\"" BQD_PROJECT "\",\"datasetId\":\"" BQD_DATASET
                         "\",\"tableId\":\"" TABLE "\"},\"schema\":{\"fields\":[{\"name\":\"id\",\"type\":\"INTEGER\","
                         "\"mode\":\"REQUIRED\"},{\"name\":\"email\",\"type\":\"STRING\",\"mode\":\"REQUIRED\"}]}}",
                         &st));
    assert_int_equal(st, 200);
    gen g;
    gen_init(&g, 5, GEN_REWRITE, 10, 1, TOPIC);
    gen_insert(&g, 1, 0);
    cf_sink_options o;
    bqd_options(&g_d, &o);
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_ERR_TARGET);
    assert_string_equal(e.hint, "run: ALTER TABLE `" BQD_PROJECT "." BQD_DATASET "." TABLE
                                "` ADD PRIMARY KEY (id) NOT ENFORCED;");
    cf_sink_destroy(s);
    /* the statement, as a user would run it (jobs.query) */
    json_decref(bqd_call(&g_d, "POST", "/bigquery/v2/projects/" BQD_PROJECT "/queries",
                         "{\"query\":\"ALTER TABLE `" BQD_PROJECT "." BQD_DATASET "." TABLE
                         "` ADD PRIMARY KEY (id) NOT ENFORCED\",\"useLegacySql\":false}",
                         &st));
    assert_int_equal(st, 200);
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], 1, &e), CF_OK);
    int rc = cf_sink_flush(s, &e);
    report_fail(rc, &e);
    assert_int_equal(rc, CF_OK);
    cf_sink_destroy(s);
    /* email was REQUIRED: relaxed (a DELETE row carries the key only); the
     * other fields were added as NULLABLE columns */
    json_t *t = bqd_call(&g_d, "GET", "/bigquery/v2/projects/" BQD_PROJECT "/datasets/" BQD_DATASET "/tables/" TABLE,
                         NULL, &st);
    assert_int_equal(st, 200);
    json_t *fields = json_object_get(json_object_get(t, "schema"), "fields");
    assert_int_equal(json_array_size(fields), 10);
    size_t i;
    json_t *f;
    json_array_foreach(fields, i, f) {
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *mode = json_string_value(json_object_get(f, "mode"));
        assert_string_equal(mode, strcmp(name, "id") == 0 ? "REQUIRED" : "NULLABLE");
    }
    json_decref(t);
    assert_int_equal(diff_table(&g, TABLE, NULL), 0);
    gen_free(&g);
}

/* A created table: primary key, clustering, modes, labels, maxStaleness;
 * and an existing table's staleness set through the DDL. */
static void test_created_table(void **state) {
    (void)state;
    bqd_reset(&g_d);
    gen g;
    gen_init(&g, 6, GEN_REWRITE, 10, 1, TOPIC);
    gen_insert(&g, 1, 0);
    cf_sink_options o;
    bqd_options(&g_d, &o);
    o.max_staleness_s = 15;
    o.seq_field = "version";
    cf_sink *s;
    cf_err e;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    cf_sink_destroy(s);
    long st;
    json_t *t = bqd_call(&g_d, "GET", "/bigquery/v2/projects/" BQD_PROJECT "/datasets/" BQD_DATASET "/tables/" TABLE,
                         NULL, &st);
    assert_int_equal(st, 200);
    json_t *pk = json_object_get(json_object_get(json_object_get(t, "tableConstraints"), "primaryKey"), "columns");
    assert_int_equal(json_array_size(pk), 1);
    assert_string_equal(json_string_value(json_array_get(pk, 0)), "id");
    json_t *cl = json_object_get(json_object_get(t, "clustering"), "fields");
    assert_string_equal(json_string_value(json_array_get(cl, 0)), "id");
    assert_string_equal(json_string_value(json_object_get(json_object_get(t, "labels"), "cdcflow_seq_sections")), "2");
    assert_string_equal(json_string_value(json_object_get(t, "maxStaleness")), "0-0 0 0:0:15");
    json_decref(t);
    /* another staleness on the existing table: ALTER TABLE SET OPTIONS */
    o.max_staleness_s = 3600;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], 1, &e), CF_OK);
    int rc = cf_sink_flush(s, &e);
    report_fail(rc, &e);
    assert_int_equal(rc, CF_OK);
    cf_sink_destroy(s);
    t = bqd_call(&g_d, "GET", "/bigquery/v2/projects/" BQD_PROJECT "/datasets/" BQD_DATASET "/tables/" TABLE, NULL,
                 &st);
    assert_string_equal(json_string_value(json_object_get(t, "maxStaleness")), "0-0 0 1:0:0");
    json_decref(t);
    /* another sequence format on the same table is refused */
    o.seq_field = NULL;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0], 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_ERR_CONFIG);
    assert_non_null(strstr(e.message, "2 section(s)"));
    cf_sink_destroy(s);
    gen_free(&g);
}

/* Two tasks changing one table's schema: a tables.patch refused with 412
 * (the etag changed) is read again and redone. */
static void test_schema_update_conflict(void **state) {
    (void)state;
    bqd_reset(&g_d);
    gen g;
    gen_init(&g, 7, GEN_REWRITE, 10, 1, TOPIC);
    gen_insert(&g, 1, 0);
    long st;
    /* the table exists with the key only, so the sink must patch it */
    json_decref(bqd_call(&g_d, "POST", "/bigquery/v2/projects/" BQD_PROJECT "/datasets/" BQD_DATASET "/tables",
                         "{\"tableReference\":{\"projectId\":\"" BQD_PROJECT "\",\"datasetId\":\"" BQD_DATASET
                         "\",\"tableId\":\"" TABLE "\"},\"schema\":{\"fields\":[{\"name\":\"id\",\"type\":\"INTEGER\","
                         "\"mode\":\"REQUIRED\"}]},\"tableConstraints\":{\"primaryKey\":{\"columns\":[\"id\"]}}}",
                         &st));
    assert_int_equal(st, 200);
    bqd_fault(&g_d, "{\"rpc\":\"rest\",\"method\":\"tables.patch\",\"action\":\"status\",\"code\":412,\"times\":2}");
    cf_sink_options o;
    bqd_options(&g_d, &o);
    cf_err e;
    int rc = put_flush(&o, g.recs[0], 1, NULL, NULL, &e);
    report_fail(rc, &e);
    assert_int_equal(rc, CF_OK);
    json_t *fl = bqd_call(&g_d, "GET", "/_test/faults", NULL, &st);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(fl, "faults"), 0), "fired")), 2);
    json_decref(fl);
    assert_int_equal(diff_table(&g, TABLE, NULL), 0);
    gen_free(&g);
}

/* A TOAST placeholder the batch cannot fill is a bad record (reported),
 * never a NULL written over the stored value. */
static void test_toast_placeholder_reported(void **state) {
    (void)state;
    bqd_reset(&g_d);
    gen g;
    gen_init(&g, 8, GEN_REWRITE, 10, 1, TOPIC);
    gen_insert(&g, 1, 0);
    g.rows[1].has_note = 1;
    gen_toast(&g, 1);
    cf_sink_options o;
    bqd_options(&g_d, &o);
    cf_sink *s;
    cf_err e;
    static rejects rj;
    memset(&rj, 0, sizeof rj);
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    cf_sink_set_reporter(s, collect, &rj);
    assert_int_equal(cf_sink_put(s, g.recs[0], 1, &e), CF_OK);
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    assert_int_equal(cf_sink_put(s, g.recs[0] + 1, 1, &e), CF_OK); /* a new batch: nothing to fill it from */
    assert_int_equal(cf_sink_flush(s, &e), CF_OK);
    cf_sink_destroy(s);
    assert_int_equal(rj.n, 1);
    assert_int_equal(rj.off[0], 1);
    assert_non_null(strstr(rj.msg, "placeholder"));
    size_t n;
    char **rows = read_rows(TABLE, &n);
    assert_int_equal(n, 1);
    assert_non_null(strstr(rows[0], "long note")); /* the insert's note stays */
    rows_free(rows, n);
    gen_free(&g);
}

/* Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, then
 * the metadata server. */
static void test_adc(void **state) {
    (void)state;
    cf_sink_options o;
    bqd_options(&g_d, &o);
    o.bq.keyfile = NULL;
    o.bq.key_source = "APPLICATION_DEFAULT";
    setenv("GOOGLE_APPLICATION_CREDENTIALS", g_d.keyfile, 1);
    run_gen(GEN_TOMBSTONE, NULL, 500, 50, 31, &o);
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    char home[300];
    snprintf(home, sizeof home, "%s/home", g_d.dir);
    assert_int_equal(mkdir(home, 0700), 0);
    const char *old_home = getenv("HOME");
    char *keep = old_home ? cf_xstrdup(old_home) : NULL;
    setenv("HOME", home, 1);
    o.bq.metadata_url = g_d.metadata;
    o.bq.project = NULL; /* the metadata server names it */
    run_gen(GEN_TOMBSTONE, NULL, 500, 50, 32, &o);
    if (keep) setenv("HOME", keep, 1), free(keep);
    long st;
    json_t *s = bqd_call(&g_d, "GET", "/_test/stats", NULL, &st);
    char *txt = json_dumps(json_object_get(s, "tokens_issued"), JSON_COMPACT);
    assert_non_null(strstr(txt, "metadata"));
    free(txt);
    json_decref(s);
}

/* ---- GetWriteStream ---- */

#define ORDERS "shop_orders"
#define ORDERS_WS "projects/" BQD_PROJECT "/datasets/" BQD_DATASET "/tables/" ORDERS "/streams/_default"

/* A record of topic shop.orders: key {id}, value {id, field?}. */
static cf_record *order(cf_schema *ks, cf_schema *vs, int32_t id, const char *field, const char *text) {
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "shop.orders");
    cf_value *k = cf_value_struct(cf_schema_ref(ks));
    cf_value_struct_set(k, "id", cf_value_int32(id), NULL);
    cf_record_set_key(r, cf_schema_ref(ks), k);
    cf_value *v = cf_value_struct(cf_schema_ref(vs));
    cf_value_struct_set(v, "id", cf_value_int32(id), NULL);
    if (field) cf_value_struct_set(v, field, cf_value_string(text), NULL);
    cf_record_set_value(r, cf_schema_ref(vs), v);
    r->partition = 0, r->offset = id;
    return r;
}

/* What the double saw after call number `since`: GetWriteStream calls on
 * shop_orders' default stream (with view FULL), AppendRows requests to the
 * table, and whether the first GetWriteStream came before the first
 * AppendRows. Returns the last call number. */
typedef struct ws_seen {
    size_t gets, gets_full, appends;
    bool get_first;
} ws_seen;

static json_int_t seen_since(json_int_t since, ws_seen *w) {
    memset(w, 0, sizeof *w);
    long st;
    json_t *o = bqd_call(&g_d, "GET", "/_test/stats?appends=true", NULL, &st);
    assert_int_equal(st, 200);
    json_int_t last = since, first_get = 0, first_append = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(o, "get_write_streams"), i, r) {
        json_int_t q = json_integer_value(json_object_get(r, "seq"));
        if (q > last) last = q;
        if (q <= since || strcmp(json_string_value(json_object_get(r, "name")), ORDERS_WS) != 0) continue;
        w->gets++;
        if (strcmp(json_string_value(json_object_get(r, "view")), "FULL") == 0) w->gets_full++;
        if (!first_get || q < first_get) first_get = q;
    }
    json_array_foreach(json_object_get(o, "appends"), i, r) {
        json_int_t q = json_integer_value(json_object_get(r, "seq"));
        if (q > last) last = q;
        const char *t = json_string_value(json_object_get(r, "table"));
        if (q <= since || !t || strcmp(t, BQD_PROJECT "." BQD_DATASET "." ORDERS) != 0) continue;
        w->appends++;
        if (!first_append || q < first_append) first_append = q;
    }
    w->get_first = first_get && (!first_append || first_get < first_append);
    json_decref(o);
    return last;
}

static int put_one(cf_sink *s, cf_record *r, cf_err *e) {
    assert_int_equal(cf_sink_put(s, &r, 1, e), CF_OK);
    int rc = cf_sink_flush(s, e);
    cf_record_destroy(r);
    return rc;
}

/* GetWriteStream on the default stream (view FULL) before a table's first
 * AppendRows of a task, once per task, again after the table's schema
 * changed; transient codes retried; NOT_FOUND and PERMISSION_DENIED fail
 * the flush with a hint, before any row is sent. */
static void test_get_write_stream(void **state) {
    (void)state;
    bqd_reset(&g_d);
    cf_schema *ks = cf_schema_new_struct(), *v1 = cf_schema_new_struct(), *v2 = cf_schema_new_struct();
    cf_schema_add_field(ks, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(v1, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(v1, "a", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema_add_field(v2, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(v2, "a", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema_add_field(v2, "b", cf_schema_primitive(CF_STRING, true), NULL);
    cf_sink_options o;
    bqd_options(&g_d, &o);
    ws_seen w;
    json_int_t since = seen_since(0, &w);
    cf_sink *s;
    cf_err e;
    cf_err_clear(&e);
    /* one task, two flushes: one GetWriteStream, before the first AppendRows */
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    assert_int_equal(put_one(s, order(ks, v1, 1, "a", "x"), &e), CF_OK);
    assert_int_equal(put_one(s, order(ks, v1, 2, "a", "y"), &e), CF_OK);
    since = seen_since(since, &w);
    assert_int_equal(w.gets, 1);
    assert_int_equal(w.gets_full, 1);
    assert_int_equal(w.appends, 2);
    assert_true(w.get_first);
    /* a new field: the table is patched, GetWriteStream again, then the row */
    int rc = put_one(s, order(ks, v2, 3, "b", "z"), &e);
    report_fail(rc, &e);
    assert_int_equal(rc, CF_OK);
    since = seen_since(since, &w);
    assert_int_equal(w.gets, 1);
    assert_int_equal(w.appends, 1);
    assert_true(w.get_first);
    cf_sink_destroy(s);
    /* another task: GetWriteStream again; UNAVAILABLE twice is retried */
    bqd_fault(&g_d, "{\"rpc\":\"GetWriteStream\",\"action\":\"status\",\"code\":\"UNAVAILABLE\",\"times\":2}");
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
    rc = put_one(s, order(ks, v2, 4, "b", "w"), &e);
    report_fail(rc, &e);
    assert_int_equal(rc, CF_OK);
    cf_sink_destroy(s);
    assert_int_equal(fired("UNAVAILABLE"), 2);
    since = seen_since(since, &w);
    assert_int_equal(w.gets, 3);
    assert_int_equal(w.appends, 1);
    /* NOT_FOUND and PERMISSION_DENIED: the flush fails, nothing is sent */
    static const struct {
        const char *code, *hint;
    } perm[] = {{"NOT_FOUND", "deleted"}, {"PERMISSION_DENIED", "bigquery.tables.updateData"}};
    for (size_t i = 0; i < 2; i++) {
        long hs;
        json_decref(bqd_call(&g_d, "DELETE", "/_test/faults", NULL, &hs));
        char rule[200];
        snprintf(rule, sizeof rule, "{\"rpc\":\"GetWriteStream\",\"action\":\"status\",\"code\":\"%s\"}",
                 perm[i].code);
        bqd_fault(&g_d, rule);
        assert_int_equal(cf_sink_new(&o, &cf_sink_target_bigquery, &s, &e), CF_OK);
        cf_err_clear(&e);
        assert_int_equal(put_one(s, order(ks, v2, 5, "b", "v"), &e), CF_ERR_TARGET);
        cf_sink_destroy(s);
        assert_non_null(strstr(e.message, "GetWriteStream"));
        assert_non_null(strstr(e.message, perm[i].code));
        assert_non_null(strstr(e.hint, perm[i].hint));
        since = seen_since(since, &w);
        assert_int_equal(w.gets, 1); /* not retried */
        assert_int_equal(w.appends, 0);
    }
    long hs;
    json_decref(bqd_call(&g_d, "DELETE", "/_test/faults", NULL, &hs));
    json_t *rows = bqd_rows(&g_d, ORDERS);
    assert_int_equal(json_array_size(json_object_get(rows, "rows")), 4);
    json_decref(rows);
    cf_schema_unref(ks), cf_schema_unref(v1), cf_schema_unref(v2);
}

static int setup(void **state) {
    (void)state;
    bqd_start(&g_d, NULL);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    bqd_stop(&g_d);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gen_history),
        cmocka_unit_test(test_many_requests),
        cmocka_unit_test(test_retries),
        cmocka_unit_test(test_invalid_argument_fails),
        cmocka_unit_test(test_row_errors),
        cmocka_unit_test(test_no_primary_key),
        cmocka_unit_test(test_created_table),
        cmocka_unit_test(test_schema_update_conflict),
        cmocka_unit_test(test_toast_placeholder_reported),
        cmocka_unit_test(test_adc),
        cmocka_unit_test(test_get_write_stream),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
