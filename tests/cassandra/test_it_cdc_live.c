/*
 * test_it_cdc_live.c - the commit log reader following a live Cassandra 5.0
 * node's cdc_raw while it writes (commit log version 8, messaging 13).
 *
 * Starts a node with scripts/cassandra-node (fails, does not skip, when none
 * can be started), creates a CDC table through the CQL client, writes rows and
 * a batch of two overlapping range deletions with different timestamps (one
 * PartitionUpdate whose range tombstones meet: Cassandra serializes a
 * boundary marker), and reads the segment the way `cassandra dump --follow`
 * does: up to the offset in <segment>_cdc.idx, again as the index grows,
 * until Cassandra writes COMPLETED when the node drains at shutdown.
 * Oracles are Cassandra's: the schema read over CQL, the rows `SELECT` returns
 * after the deletes (replayed from our events must give the same), and the
 * timestamps given in the statements.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>
#include <unistd.h>

#include "cass_test_util.h"
#include "cdcflow/cassandra_cql.h"

static char node_dir[256];
static int port;
static cf_cql_conn *conn;
static cf_cass_schema *schema;

static int start_node(void **state) {
    (void)state;
    port = 19800 + (int)(getpid() % 150);
    snprintf(node_dir, sizeof node_dir, "/tmp/cf-it-cdc-%d", (int)getpid());
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/../scripts/cassandra-node start %s --port %d --commitlog-version 8 --heap 512m >&2",
             CF_TESTS_DIR, node_dir, port);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_it_cdc_live: could not start a Cassandra node (%s)\n", cmd);
        return -1;
    }
    return 0;
}

static void stop_node(void) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/../scripts/cassandra-node stop %s >&2", CF_TESTS_DIR, node_dir);
    if (system(cmd) != 0) fprintf(stderr, "test_it_cdc_live: stopping the node failed\n");
}

static int teardown(void **state) {
    (void)state;
    cf_cql_close(conn);
    cf_cass_schema_destroy(schema);
    if (node_dir[0]) {
        stop_node();
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf %s", node_dir);
        if (system(cmd) != 0) return -1;
    }
    return 0;
}

static void q(const char *cql) {
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err) != CF_OK) fail_msg("%s: %s / %s", cql, err.message, err.detail);
    cf_cql_result_free(r);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* the segment in cdc_raw that has an index */
static bool find_segment(char *seg, size_t n) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/cdc_raw", node_dir);
    char **logs = list_logs(dir);
    bool found = false;
    for (char **lp = logs; lp && *lp && !found; lp++) {
        char *idx = cf_cass_cdc_idx_path(*lp);
        if (access(idx, F_OK) == 0) {
            snprintf(seg, n, "%s", *lp);
            found = true;
        }
        free(idx);
    }
    free_list(logs);
    return found;
}

static uint32_t be32_of(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

typedef struct seen {
    int rows, bounds, boundaries, entries, again;
    int64_t boundary_end_ts, boundary_start_ts;
    int live_c[32]; /* replay of table t, partition p = 1: live rows by c */
    int64_t row_ts[32];
} seen;

static void apply(seen *s, const cf_cass_update *u, const cf_cass_table *t) {
    if (strcmp(t->name, "t") != 0) return;
    /* range deletions: collect [start, end] with their timestamps */
    int64_t open_ts = 0;
    int open_c = -1;
    bool open_incl = true;
    for (size_t i = 0; i < u->n_rows; i++) {
        const cf_cass_row *r = &u->rows[i];
        int c = r->n_clustering && r->clustering[0].p ? (int)be32_of(r->clustering[0].p) : -1;
        if (r->kind == CF_CASS_ROW) {
            s->rows++;
            if (c >= 0 && c < 32 && r->ts > s->row_ts[c]) {
                s->row_ts[c] = r->ts;
                s->live_c[c] = 1;
            }
            continue;
        }
        bool closes = r->kind == CF_CASS_RT_BOUNDARY || r->bound == CF_CASS_BK_EXCL_END_BOUND ||
                      r->bound == CF_CASS_BK_INCL_END_BOUND;
        if (r->kind == CF_CASS_RT_BOUNDARY) {
            s->boundaries++;
            s->boundary_end_ts = r->deletion.marked_at;
            s->boundary_start_ts = r->start_deletion.marked_at;
        } else {
            s->bounds++;
        }
        if (closes && open_c >= 0) {
            bool end_incl = r->bound == CF_CASS_BK_INCL_END_BOUND || r->bound == CF_CASS_BK_INCL_END_EXCL_START_BOUNDARY;
            for (int x = open_c; x <= c && x < 32; x++) {
                if ((x == open_c && !open_incl) || (x == c && !end_incl)) continue;
                if (s->row_ts[x] <= open_ts) s->live_c[x] = 0;
            }
        }
        if (r->kind == CF_CASS_RT_BOUNDARY || r->bound == CF_CASS_BK_INCL_START_BOUND ||
            r->bound == CF_CASS_BK_EXCL_START_BOUND) {
            open_c = c;
            open_ts = r->kind == CF_CASS_RT_BOUNDARY ? r->start_deletion.marked_at : r->deletion.marked_at;
            open_incl = r->bound == CF_CASS_BK_INCL_START_BOUND || r->bound == CF_CASS_BK_EXCL_END_INCL_START_BOUNDARY;
        }
    }
}

static void test_follow_live_segment(void **state) {
    (void)state;
    cf_cql_options o = {.host = "127.0.0.1", .port = port, .request_timeout_ms = 60000};
    cf_err err;
    assert_int_equal(cf_cql_connect(&o, &conn, &err), CF_OK);
    q("CREATE KEYSPACE livks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    q("CREATE TABLE livks.t (p int, c int, v text, PRIMARY KEY (p, c)) WITH cdc = true");
    schema = cf_cass_schema_new();
    const char *ks[] = {"livks", NULL};
    assert_int_equal(cf_cql_load_schema(conn, ks, schema, &err), CF_OK);
    assert_non_null(cf_cass_schema_table_by_name(schema, "livks", "t"));
    char cql[256];
    for (int c = 0; c < 10; c++) {
        snprintf(cql, sizeof cql, "INSERT INTO livks.t (p, c, v) VALUES (1, %d, 'v%d') USING TIMESTAMP %d", c, c, 5 + c);
        q(cql);
    }
    /* one PartitionUpdate, two range deletions that overlap: [1, 5) at 100 and [3, 8) at 200
     * -> bound [1 .. boundary at 3 .. bound 8) */
    q("BEGIN UNLOGGED BATCH "
      "DELETE FROM livks.t USING TIMESTAMP 100 WHERE p = 1 AND c >= 1 AND c < 5; "
      "DELETE FROM livks.t USING TIMESTAMP 200 WHERE p = 1 AND c >= 3 AND c < 8; "
      "APPLY BATCH");
    /* Cassandra's answer */
    int cass_live[10] = {0};
    cf_cql_result *r = NULL;
    assert_int_equal(cf_cql_query(conn, "SELECT c FROM livks.t WHERE p = 1", CF_CQL_ONE, &r, &err), CF_OK);
    for (size_t i = 0; i < r->n_rows; i++) {
        const cf_cql_value *v = cf_cql_result_value(r, i, 0);
        assert_int_equal(v->len, 4);
        int c = (int)be32_of(v->data);
        assert_true(c >= 0 && c < 10);
        cass_live[c] = 1;
    }
    cf_cql_result_free(r);

    /* follow the segment through its index while the node runs */
    char seg[512];
    int waited = 0;
    while (!find_segment(seg, sizeof seg) && waited < 60000) sleep_ms(200), waited += 200;
    assert_true(waited < 60000);
    cf_cass_segment *s;
    assert_int_equal(cf_cass_segment_open(seg, NULL, &s, &err), CF_OK);
    assert_int_equal(cf_cass_segment_get_info(s)->version, 8);
    char *idx = cf_cass_cdc_idx_path(seg);
    cf_cass_decoder *dec = cf_cass_decoder_new(schema);
    seen sn;
    memset(&sn, 0, sizeof sn);
    const cf_cass_table *t = cf_cass_schema_table_by_name(schema, "livks", "t");
    bool completed = false, stopped = false;
    int64_t last_off = -1;
    for (waited = 0; waited < 120000;) {
        int64_t off;
        bool done;
        cf_code rc = cf_cass_cdc_idx_read(idx, 5, 50, &off, &done, &err);
        if (rc == CF_OK) {
            assert_true(off >= last_off); /* the index only grows */
            last_off = off;
            completed = done;
            cf_cass_segment_set_limit(s, off);
        }
        cf_cass_entry e;
        while ((rc = cf_cass_segment_next(s, &e, &err)) == CF_OK) {
            sn.entries++;
            cf_cass_mutation *m;
            if (cf_cass_decode_mutation(dec, e.data, e.len, 13, &m, NULL, NULL) != CF_OK) continue;
            for (size_t i = 0; i < m->n_updates; i++)
                if (!memcmp(m->updates[i].table_id, t->id, 16)) apply(&sn, &m->updates[i], t);
        }
        if (rc == CF_ERR_CORRUPT) fail_msg("%s (%s)", err.message, err.where);
        if (rc == CF_ERR_AGAIN) sn.again++;
        if (completed && (rc == CF_ERR_AGAIN || rc == CF_ERR_EOF)) break;
        if (!stopped && sn.boundaries > 0) {
            /* everything seen while the node runs: now let it drain, which
             * closes the segment and writes COMPLETED */
            stop_node();
            stopped = true;
        }
        sleep_ms(200);
        waited += 200;
    }
    {
        /* diagnostics: the whole file without the index limit */
        cf_cass_segment *s2;
        cf_err e2;
        if (cf_cass_segment_open(seg, NULL, &s2, &e2) == CF_OK) {
            cf_cass_entry e;
            int all = 0, ours = 0, nf = 0, other = 0;
            cf_code rc;
            while ((rc = cf_cass_segment_next(s2, &e, &e2)) == CF_OK || rc == CF_ERR_CORRUPT) {
                if (rc) continue;
                all++;
                cf_cass_mutation *m;
                cf_code r2 = cf_cass_decode_mutation(dec, e.data, e.len, 13, &m, NULL, &e2);
                if (r2 == CF_ERR_NOT_FOUND) nf++;
                else if (r2) {
                    other++;
                    fprintf(stderr, "  decode: %s | %s | %s\n", e2.message, e2.detail, e2.where);
                }
                for (size_t i = 0; i < m->n_updates; i++) ours++;
            }
            fprintf(stderr, "whole file: %d entries, %d updates of known tables, %d unknown, %d errors, last rc %d\n",
                    all, ours, nf, other, rc);
            cf_cass_segment_destroy(s2);
        }
    }
    fprintf(stderr, "followed %s: index %lld%s, entries %d, waits %d, rows %d, bounds %d, boundaries %d, stopped %d\n",
            seg, (long long)last_off, completed ? " COMPLETED" : "", sn.entries, sn.again, sn.rows, sn.bounds,
            sn.boundaries, stopped);
    assert_true(completed);
    assert_true(sn.again > 0); /* the reader did wait for the index */
    assert_int_equal(sn.rows, 10);
    assert_int_equal(sn.boundaries, 1);
    assert_int_equal(sn.bounds, 2);
    assert_int_equal(sn.boundary_end_ts, 100);
    assert_int_equal(sn.boundary_start_ts, 200);
    /* our replay of the events must give the rows Cassandra returned (0, 8, 9) */
    for (int c = 0; c < 10; c++) assert_int_equal(sn.live_c[c], cass_live[c]);
    assert_int_equal(cass_live[0] + cass_live[8] + cass_live[9], 3);
    free(idx);
    cf_cass_decoder_destroy(dec);
    cf_cass_segment_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follow_live_segment),
    };
    return cmocka_run_group_tests(tests, start_node, teardown);
}
