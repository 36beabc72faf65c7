/*
 * test_it_cql.c - the CQL client against a real Cassandra 5.0 node.
 *
 * Uses the node at $CF_TEST_CASSANDRA (host:port) if set, the one
 * `scripts/servers start` runs for the whole suite; otherwise starts its own
 * with scripts/cassandra-node (15-70 s once the jars are cached in
 * ~/.cache/cdcflow; the first run downloads them from Maven Central) and
 * stops it at the end. Fails (does not skip) when no node can be had.
 *
 * The shared node also serves the other tests and both builds of the suite
 * (plain, then ASan): everything here lives in a keyspace of this run,
 * itks_<random>, dropped at the end. Only when recording (CF_CQL_RECORD_DIR)
 * is it "itks", the name test_cql_replay's frames carry.
 *
 * Oracles are Cassandra's own answers: DESCRIBE ... WITH INTERNALS (parsed by
 * the DDL parser) must give the same model as system_schema read by the
 * client; SELECT token(k) must equal cf_cass_murmur3_token; SCHEMA_CHANGE
 * events must arrive for an ALTER made on another connection.
 *
 * With CF_CQL_RECORD_DIR set, the frames the server sends are recorded there
 * (tests/data/cassandra/cql-replay/ was made that way for test_cql_replay).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_cql.h"
#include "cdcflow/cassandra_schema.h"

static char host[128] = "127.0.0.1";
static int port;
static char node_dir[256];
static char ks[49] = "itks"; /* this run's keyspace */

/* `tmpl` with every "itks" replaced by this run's keyspace; the result lives
 * until 8 more calls */
static const char *K(const char *tmpl) {
    static char bufs[8][2048];
    static int next;
    char *out = bufs[next++ % 8];
    size_t o = 0;
    for (const char *p = tmpl; *p && o + sizeof ks < sizeof bufs[0];) {
        if (strncmp(p, "itks", 4) == 0) {
            o += (size_t)snprintf(out + o, sizeof bufs[0] - o, "%s", ks);
            p += 4;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    return out;
}

static void pick_keyspace(void) {
    if (getenv("CF_CQL_RECORD_DIR")) return; /* the recorded frames name "itks" */
    unsigned r = (unsigned)getpid() * 2654435761u;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&r, sizeof r, 1, f) != 1) r ^= (unsigned)time(NULL);
        fclose(f);
    }
    snprintf(ks, sizeof ks, "itks_%d_%08x", (int)getpid(), r);
}

static int start_node(void **state) {
    (void)state;
    pick_keyspace();
    const char *env = getenv("CF_TEST_CASSANDRA");
    if (env && *env) {
        const char *colon = strrchr(env, ':');
        if (!colon) {
            fprintf(stderr, "test_it_cql: CF_TEST_CASSANDRA=%s is not host:port\n", env);
            return -1;
        }
        snprintf(host, sizeof host, "%.*s", (int)(colon - env), env);
        port = atoi(colon + 1);
        fprintf(stderr, "test_it_cql: the shared node at %s, keyspace %s\n", env, ks);
        return 0;
    }
    port = 19300 + (int)(getpid() % 500);
    snprintf(node_dir, sizeof node_dir, "/tmp/cf-it-cql-%d", (int)getpid());
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/../scripts/cassandra-node start %s --port %d --heap 512m --ttl 900 >&2", CF_TESTS_DIR, node_dir,
             port);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_it_cql: could not start a Cassandra node (%s)\n", cmd);
        node_dir[0] = '\0';
        return -1;
    }
    return 0;
}

static int stop_node(void **state) {
    (void)state;
    if (!node_dir[0] && strcmp(ks, "itks") != 0) {
        /* the shared node: leave nothing behind */
        cf_cql_options o = {.host = host, .port = port, .request_timeout_ms = 60000};
        cf_cql_conn *c = NULL;
        cf_err err;
        cf_cql_result *r = NULL;
        char cql[128];
        snprintf(cql, sizeof cql, "DROP KEYSPACE IF EXISTS %s", ks);
        if (cf_cql_connect(&o, &c, &err) != CF_OK || cf_cql_query(c, cql, CF_CQL_ONE, &r, &err) != CF_OK)
            fprintf(stderr, "test_it_cql: %s: %s / %s\n", cql, err.message, err.detail);
        cf_cql_result_free(r);
        cf_cql_close(c);
    }
    if (node_dir[0]) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s/../scripts/cassandra-node stop %s >&2; rm -rf %s", CF_TESTS_DIR, node_dir,
                 node_dir);
        if (system(cmd) != 0) fprintf(stderr, "test_it_cql: stopping the node failed\n");
    }
    return 0;
}

static cf_cql_conn *connect_or_fail(const char *record_name) {
    cf_cql_options o = {.host = host, .port = port, .request_timeout_ms = 60000, .page_size = 100};
    char rec[512];
    const char *dir = getenv("CF_CQL_RECORD_DIR");
    if (dir && record_name) {
        snprintf(rec, sizeof rec, "%s/%s.frames", dir, record_name);
        unlink(rec);
        o.record_path = rec;
    }
    cf_cql_conn *c = NULL;
    cf_err err;
    if (cf_cql_connect(&o, &c, &err) != CF_OK) fail_msg("connect %s:%d: %s / %s", host, port, err.message, err.detail);
    return c;
}

/* runs K(cql): write "itks" for the keyspace */
static void exec_ok(cf_cql_conn *c, const char *cql) {
    cf_cql_result *r = NULL;
    cf_err err;
    cql = K(cql);
    if (cf_cql_query(c, cql, CF_CQL_ONE, &r, &err) != CF_OK) fail_msg("%s: %s / %s", cql, err.message, err.detail);
    cf_cql_result_free(r);
}

static const char *schema_ddl[] = {
    "CREATE KEYSPACE IF NOT EXISTS itks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TYPE IF NOT EXISTS itks.\"Addr\" (street text, zip int, tags frozen<set<text>>)",
    "CREATE TABLE IF NOT EXISTS itks.t (a int, b text, c timeuuid, d bigint, s text static, v map<text, frozen<list<int>>>,"
    " u \"Addr\", fu frozen<\"Addr\">, tu tuple<int, text>, vec vector<float, 4>, \"Mixed Case\" varint,"
    " PRIMARY KEY ((a, b), c, d)) WITH CLUSTERING ORDER BY (c DESC, d ASC) AND cdc = true",
    "CREATE TABLE IF NOT EXISTS itks.k (k text PRIMARY KEY, n int)",
    "CREATE TABLE IF NOT EXISTS itks.big (k text PRIMARY KEY, n int)",
    NULL};

static void test_schema_matches_describe(void **state) {
    (void)state;
    cf_cql_conn *c = connect_or_fail("schema");
    for (size_t i = 0; schema_ddl[i]; i++) exec_ok(c, schema_ddl[i]);
    cf_cql_result *r = NULL;
    cf_err err;
    assert_int_equal(cf_cql_query(c, "SELECT release_version FROM system.local", CF_CQL_ONE, &r, &err), CF_OK);
    assert_int_equal(r->n_rows, 1);
    char *ver = cf_cql_result_text(r, 0, 0);
    assert_true(strncmp(ver, "5.0", 3) == 0);
    free(ver);
    cf_cql_result_free(r);

    const char *const kss[] = {ks, NULL};
    cf_cass_schema *s = cf_cass_schema_new();
    if (cf_cql_load_schema(c, kss, s, &err) != CF_OK) fail_msg("load: %s / %s / %s", err.message, err.detail, err.where);

    assert_int_equal(cf_cql_query(c, K("DESCRIBE KEYSPACE itks WITH INTERNALS"), CF_CQL_ONE, &r, &err), CF_OK);
    size_t col = SIZE_MAX;
    for (size_t i = 0; i < r->n_columns; i++)
        if (strcmp(r->column_names[i], "create_statement") == 0) col = i;
    assert_true(col != SIZE_MAX);
    cf_buf ddl = CF_BUF_INIT;
    for (size_t i = 0; i < r->n_rows; i++) {
        char *st = cf_cql_result_text(r, i, col);
        cf_buf_printf(&ddl, "%s\n", st);
        free(st);
    }
    cf_cql_result_free(r);
    cf_cass_schema *d = cf_cass_schema_new();
    if (cf_cass_ddl_parse(d, ddl.data, ddl.len, "describe", &err) != CF_OK)
        fail_msg("describe: %s / %s / %s", err.message, err.detail, err.where);
    cf_buf_free(&ddl);

    const cf_cass_table *ts = cf_cass_schema_table_by_name(s, ks, "t");
    const cf_cass_table *td = cf_cass_schema_table_by_name(d, ks, "t");
    assert_non_null(ts);
    assert_non_null(td);
    assert_memory_equal(ts->id, td->id, 16);
    assert_true(ts->cdc && td->cdc);
    assert_int_equal(ts->n_partition_key, 2);
    assert_int_equal(ts->n_clustering, 2);
    assert_true(ts->clustering[0].reversed);
    assert_int_equal(cf_cass_table_column_count(ts), cf_cass_table_column_count(td));
    for (size_t i = 0; i < ts->n_regular; i++) {
        const cf_cass_column *x = cf_cass_table_column(td, ts->regular[i].name);
        assert_non_null(x);
        assert_true(cf_cql_type_equal(x->type, ts->regular[i].type));
    }
    const cf_cass_column *u = cf_cass_table_column(ts, "u");
    assert_true(cf_cql_type_is_multicell(u->type));
    assert_string_equal(u->type->name, "Addr");
    assert_int_equal(cf_cql_type_fixed_length(cf_cass_table_column(ts, "vec")->type), 16);
    assert_non_null(cf_cass_table_column(ts, "Mixed Case"));
    cf_cass_schema_destroy(d);
    cf_cass_schema_destroy(s);
    cf_cql_close(c);
}

static void test_tokens_and_paging(void **state) {
    (void)state;
    cf_cql_conn *c = connect_or_fail(NULL);
    for (size_t i = 0; schema_ddl[i]; i++) exec_ok(c, schema_ddl[i]);
    exec_ok(c, "TRUNCATE itks.k"); /* when recording, "itks" of an earlier run may hold rows */
    char q[256];
    for (int i = 0; i < 350; i++) {
        snprintf(q, sizeof q, "INSERT INTO itks.k (k, n) VALUES ('key-%d-\xc3\xa9', %d)", i, i);
        exec_ok(c, q);
    }
    cf_cql_result *r = NULL;
    cf_err err;
    assert_int_equal(cf_cql_query(c, K("SELECT k, n, token(k) FROM itks.k"), CF_CQL_ONE, &r, &err), CF_OK);
    assert_int_equal(r->n_rows, 350); /* four pages of 100 */
    assert_true(r->n_pages >= 4);
    assert_int_equal(r->column_type_ids[2], 0x0002); /* bigint */
    for (size_t i = 0; i < r->n_rows; i++) {
        const cf_cql_value *k = cf_cql_result_value(r, i, 0), *t = cf_cql_result_value(r, i, 2);
        assert_int_equal(t->len, 8);
        int64_t tok = 0;
        for (int j = 0; j < 8; j++) tok = (int64_t)((uint64_t)tok << 8 | t->data[j]);
        assert_true(cf_cass_murmur3_token(k->data, (size_t)k->len) == tok);
    }
    cf_cql_result_free(r);
    /* a server error is a clear cf_err */
    assert_int_equal(cf_cql_query(c, K("SELECT nope FROM itks.k"), CF_CQL_ONE, &r, &err), CF_ERR_TARGET);
    assert_non_null(strstr(err.detail, "nope"));
    assert_null(r);
    /* the connection is still usable */
    exec_ok(c, "SELECT k FROM itks.k LIMIT 1");
    cf_cql_close(c);
}

static void test_schema_events(void **state) {
    (void)state;
    cf_cql_conn *w = connect_or_fail(NULL), *c = connect_or_fail("events");
    for (size_t i = 0; schema_ddl[i]; i++) exec_ok(w, schema_ddl[i]);
    const char *const kss[] = {ks, NULL};
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    assert_int_equal(cf_cql_load_schema(c, kss, s, &err), CF_OK);
    assert_int_equal(cf_cql_register_schema_events(c, &err), CF_OK);
    cf_cql_event ev;
    /* nothing about our keyspace yet (tests sharing the node may change theirs) */
    cf_code rc0;
    while ((rc0 = cf_cql_next_event(c, 200, &ev, &err)) == CF_OK) assert_string_not_equal(ev.keyspace, ks);
    assert_int_equal(rc0, CF_ERR_AGAIN);
    exec_ok(w, "ALTER TABLE itks.k ADD added_col text");
    bool seen = false;
    for (int i = 0; i < 20 && !seen; i++) {
        cf_code rc = cf_cql_next_event(c, 1000, &ev, &err);
        if (rc == CF_ERR_AGAIN) continue;
        assert_int_equal(rc, CF_OK);
        if (strcmp(ev.target, "TABLE") == 0 && strcmp(ev.name, "k") == 0 && strcmp(ev.keyspace, ks) == 0) {
            assert_string_equal(ev.change, "UPDATED");
            seen = true;
        }
    }
    assert_true(seen);
    /* refresh: the table id keeps its old definition as history */
    assert_int_equal(cf_cql_load_schema(c, kss, s, &err), CF_OK);
    const cf_cass_table *t = cf_cass_schema_table_by_name(s, ks, "k");
    assert_non_null(cf_cass_table_column(t, "added_col"));
    cf_cass_table *const *vs;
    assert_int_equal(cf_cass_schema_table_versions(s, t->id, &vs), 2);
    assert_null(cf_cass_table_column(vs[0], "added_col"));
    exec_ok(w, "ALTER TABLE itks.k DROP added_col");
    cf_cass_schema_destroy(s);
    cf_cql_close(c);
    cf_cql_close(w);
}

/* The same answers over protocol v4 and v5 (v5: segments with CRC24/CRC32;
 * a result larger than one 128 KiB segment is split across several). */
static void test_v4_and_v5(void **state) {
    (void)state;
    cf_cql_conn *def = connect_or_fail(NULL);
    assert_int_equal(cf_cql_protocol_version(def), 5); /* Cassandra 5.0 speaks v5 */
    for (size_t i = 0; schema_ddl[i]; i++) exec_ok(def, schema_ddl[i]);
    exec_ok(def, "TRUNCATE itks.big");
    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 600; i++) {
        char q[512];
        snprintf(q, sizeof q, "INSERT INTO itks.big (k, n) VALUES ('big-%d-%s', %d)", i, big, i);
        exec_ok(def, q);
    }
    cf_cql_close(def);
    char *json[2] = {NULL, NULL};
    size_t rows[2] = {0, 0};
    for (int v = 4; v <= 5; v++) {
        cf_cql_options o = {.host = host, .port = port, .protocol_version = v, .page_size = 5000};
        cf_cql_conn *c = NULL;
        cf_err err;
        if (cf_cql_connect(&o, &c, &err) != CF_OK) fail_msg("v%d: %s / %s", v, err.message, err.detail);
        assert_int_equal(cf_cql_protocol_version(c), v);
        const char *const kss[] = {ks, NULL};
        assert_int_equal(cf_cql_fetch_schema_json(c, kss, &json[v - 4], &err), CF_OK);
        cf_cql_result *r = NULL;
        /* ~200 KiB in one page: more than one v5 segment */
        assert_int_equal(cf_cql_query(c, K("SELECT k, n FROM itks.big"), CF_CQL_ONE, &r, &err), CF_OK);
        assert_int_equal(r->n_pages, 1);
        rows[v - 4] = r->n_rows;
        cf_cql_result_free(r);
        cf_cql_close(c);
    }
    assert_string_equal(json[0], json[1]);
    /* a 400 KiB value over v5: the request and the response each span several
     * segments that are not self-contained */
    {
        cf_cql_options o = {.host = host, .port = port, .protocol_version = 5};
        cf_cql_conn *c = NULL;
        cf_err err;
        assert_int_equal(cf_cql_connect(&o, &c, &err), CF_OK);
        size_t big_n = 400 * 1024; /* < max mutation size (half of the 1 MiB segment), > 3 segments */
        exec_ok(c, "CREATE TABLE IF NOT EXISTS itks.huge (k int PRIMARY KEY, v text)");
        char *q = malloc(big_n + 128);
        int off = snprintf(q, 128, "INSERT INTO %s.huge (k, v) VALUES (1, 'huge-", ks);
        memset(q + off, 'h', big_n);
        snprintf(q + off + big_n, 64, "')");
        cf_cql_result *ir = NULL;
        if (cf_cql_query(c, q, CF_CQL_ONE, &ir, &err) != CF_OK) fail_msg("400 KiB insert: %s / %s", err.message, err.detail);
        cf_cql_result_free(ir);
        free(q);
        cf_cql_result *r = NULL;
        assert_int_equal(cf_cql_query(c, K("SELECT v FROM itks.huge WHERE k = 1"), CF_CQL_ONE, &r, &err), CF_OK);
        assert_int_equal(r->n_rows, 1);
        const cf_cql_value *v = cf_cql_result_value(r, 0, 0);
        assert_int_equal(v->len, (int32_t)(big_n + 5));
        assert_memory_equal(v->data, "huge-h", 6);
        assert_int_equal(v->data[big_n + 4], 'h');
        cf_cql_result_free(r);
        cf_cql_close(c);
    }
    assert_int_equal(rows[0], 600);
    assert_int_equal(rows[0], rows[1]);
    free(json[0]);
    free(json[1]);
}

static void test_connect_errors(void **state) {
    (void)state;
    cf_cql_options o = {.host = "127.0.0.1", .port = 1, .connect_timeout_ms = 2000};
    cf_cql_conn *c = NULL;
    cf_err err;
    assert_int_equal(cf_cql_connect(&o, &c, &err), CF_ERR_TRANSPORT);
    assert_null(c);
    assert_non_null(strstr(err.message, "127.0.0.1:1"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_matches_describe),
        cmocka_unit_test(test_tokens_and_paging),
        cmocka_unit_test(test_schema_events),
        cmocka_unit_test(test_v4_and_v5),
        cmocka_unit_test(test_connect_errors),
    };
    return cmocka_run_group_tests(tests, start_node, stop_node);
}
