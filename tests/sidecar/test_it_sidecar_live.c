/*
 * test_it_sidecar_live.c - the sidecar engine following a live Cassandra 5.0
 * node's cdc_raw while it writes: the shared node of scripts/servers
 * ($CF_TEST_CASSANDRA, its cdc_raw in $CF_TEST_CASSANDRA_CDC_RAW; fails
 * without it). The schema is read over CQL, and again when a mutation names
 * a column the schema does not know.
 *
 * In a keyspace of this run (the node serves other tests too): a CDC table
 * and one without cdc written in the same batches; rows inserted, an
 * ALTER TABLE ... ADD while the engine runs, rows with the new column.
 * Oracles: the values and timestamps given in the statements (each change
 * once, the new column's values there: nothing lost across the ALTER), and
 * Cassandra's table options (no event of the table without cdc). The
 * segments of the shared node are never deleted (cleanup none).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../it_env.h"
#include "cdcflow/cassandra_cql.h"
#include "cdcflow/log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"

static char host[128], ks[64];
static int port;
static cf_cql_conn *conn;

static void q(const char *fmt, ...) {
    char cql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cql, sizeof cql, fmt, ap);
    va_end(ap);
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err) != CF_OK) fail_msg("%s: %s / %s", cql, err.message, err.detail);
    cf_cql_result_free(r);
}

typedef struct got {
    int n;
    int by_k[64];     /* events per key of our table */
    int64_t v_of[64]; /* "n" value seen per key (-1: none) */
    int64_t added[64];
    int other_table;
    int64_t ts_of[64];
} got;

static cf_record *new_rec(void *arg) {
    (void)arg;
    return cf_record_new();
}

static void emit(void *arg, cf_record *r, cf_sc_op op) {
    got *g = arg;
    const cf_value *ksv = cf_value_struct_get(r->value, "sourceKeyspace");
    const cf_value *tb = cf_value_struct_get(r->value, "sourceTable");
    if (strcmp(ksv->u.s.ptr, ks) != 0) { /* another test's keyspace on the shared node */
        cf_record_destroy(r);
        return;
    }
    if (strcmp(tb->u.s.ptr, "t") != 0) g->other_table++;
    else if (op == CF_SC_OP_INSERT) {
        const cf_value *p = cf_value_struct_get(r->value, "payload");
        int k = (int)cf_value_struct_get(p, "k")->u.i;
        if (k >= 0 && k < 64) {
            g->by_k[k]++;
            const cf_value *n = cf_value_struct_get(p, "n");
            g->v_of[k] = n ? n->u.i : -1;
            const cf_value *a = cf_value_struct_get(p, "added");
            g->added[k] = a ? a->u.i : -1;
            g->ts_of[k] = cf_value_struct_get(r->value, "timestampMicros")->u.i;
        }
    }
    g->n++;
    cf_record_destroy(r);
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Step until `want` events of our table came (or 30 s). */
static int64_t until(cf_sc_engine *e, got *g, int want) {
    cf_sc_emitter em = {new_rec, emit, g};
    cf_err err;
    int64_t t0 = mono_ms();
    while (g->n < want && mono_ms() - t0 < 30000) {
        size_t n;
        cf_code rc = cf_sc_engine_step(e, &em, 500, &n, &err);
        if (rc == CF_ERR_AGAIN) cf_sc_engine_wait(e, 100);
        else if (rc) fail_msg("step: %s / %s / %s", err.message, err.detail, err.where);
    }
    return mono_ms() - t0;
}

static void test_live_node(void **state) {
    (void)state;
    const char *env = it_need_env("CF_TEST_CASSANDRA"), *raw = it_need_env("CF_TEST_CASSANDRA_CDC_RAW");
    const char *colon = strrchr(env, ':');
    assert_non_null(colon);
    snprintf(host, sizeof host, "%.*s", (int)(colon - env), env);
    port = atoi(colon + 1);
    snprintf(ks, sizeof ks, "sclive_%d_%u", (int)getpid(), (unsigned)time(NULL) % 100000);
    cf_cql_options o = {.host = host, .port = port, .request_timeout_ms = 60000};
    cf_err err;
    if (cf_cql_connect(&o, &conn, &err) != CF_OK) fail_msg("connect %s:%d: %s / %s", host, port, err.message, err.detail);
    q("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ks);
    q("CREATE TABLE %s.t (k int PRIMARY KEY, v text, n bigint) WITH cdc = true", ks);
    q("CREATE TABLE %s.plain (k int PRIMARY KEY, v text)", ks);

    cf_cass_schema *schema = cf_cass_schema_new();
    const char *dirs[] = {raw};
    cf_sc_engine_opts eo = {.dirs = dirs, .n_dirs = 1, .schema = schema, .cql = &o, .cl = CF_SC_ONE,
                            .timeout_ms = 60000, .max_pending = 100000, .cleanup = CF_SC_CLEANUP_NONE,
                            .poll_ms = 500};
    cf_sc_engine *e;
    if (cf_sc_engine_new(&eo, &e, &err)) fail_msg("engine: %s / %s", err.message, err.detail);
    got g;
    memset(&g, 0, sizeof g);
    /* catch up with what the node holds from before (other tests' keyspaces) */
    cf_sc_emitter em = {new_rec, emit, &g};
    size_t nev;
    for (cf_code rc; (rc = cf_sc_engine_step(e, &em, 500, &nev, &err)) != CF_ERR_AGAIN;)
        if (rc) fail_msg("catching up: %s / %s", err.message, err.detail);
    /* rows, each in a batch with the table without cdc */
    for (int k = 0; k < 20; k++)
        q("BEGIN UNLOGGED BATCH USING TIMESTAMP %d INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d); "
          "INSERT INTO %s.plain (k, v) VALUES (%d, 'x') APPLY BATCH",
          1000 + k, ks, k, k, k * 10, ks, k);
    int64_t ms = until(e, &g, 20);
    print_message("20 inserts published %lld ms after the last write\n", (long long)ms);
    assert_int_equal(g.n, 20);
    /* the schema changes while the engine runs */
    q("ALTER TABLE %s.t ADD added bigint", ks);
    for (int k = 20; k < 30; k++)
        q("INSERT INTO %s.t (k, v, n, added) VALUES (%d, 'w%d', %d, %d) USING TIMESTAMP %d", ks, k, k, k * 10, k + 7,
          2000 + k);
    until(e, &g, 30);
    assert_int_equal(g.n, 30);
    for (int k = 0; k < 30; k++) {
        if (g.by_k[k] != 1) fail_msg("key %d: %d events", k, g.by_k[k]);
        assert_int_equal(g.v_of[k], k * 10);
        assert_int_equal(g.ts_of[k], k < 20 ? 1000 + k : 2000 + k);
        if (k >= 20) assert_int_equal(g.added[k], k + 7); /* the column added during the run */
        else assert_int_equal(g.added[k], -1);
    }
    assert_int_equal(g.other_table, 0); /* the table without cdc: never published */
    cf_sc_stats st;
    cf_sc_engine_stats(e, &st);
    assert_true(st.schema_refreshes >= 2); /* at start, and for the new column (or its SCHEMA_CHANGE event) */
    cf_sc_engine_destroy(e);
    cf_cass_schema_destroy(schema);
    q("DROP KEYSPACE IF EXISTS %s", ks);
    cf_cql_close(conn);
}

int main(void) {
    cf_log_set_level(CF_LOG_WARN);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_live_node)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
