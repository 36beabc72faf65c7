/*
 * test_it_cdc_live.c - the commit log reader following a live Cassandra 5.0
 * node's cdc_raw while it writes (commit log version 8, messaging 13).
 *
 * The node: the one `scripts/servers start` runs for the whole suite
 * ($CF_TEST_CASSANDRA, its cdc_raw in $CF_TEST_CASSANDRA_CDC_RAW) when it
 * writes commit log version 8 without compression
 * ($CF_TEST_CASSANDRA_COMMITLOG_VERSION / _COMPRESSION); otherwise (no shared
 * node, or one with other settings: this test is about version 8 segments)
 * its own, started with scripts/cassandra-node. Fails, does not skip, when no
 * node can be had.
 *
 * It creates a CDC table through the CQL client in a keyspace of this run
 * (livks_<pid>_<random>: the shared node serves the plain and the ASan run
 * and other tests), writes rows and a batch of two overlapping range
 * deletions with different timestamps (one PartitionUpdate whose range
 * tombstones meet: Cassandra serializes a boundary marker), and reads the
 * segments the way `cassandra dump --follow` does: up to the offset in
 * <segment>_cdc.idx, again as the index grows, until Cassandra writes
 * COMPLETED. On its own node that happens when the node drains at shutdown;
 * on the shared node, which must keep running, when the segment is full and
 * Cassandra moves on to the next one: the test fills it with writes to a
 * table without cdc. Segments that were COMPLETED before the first write
 * cannot hold this run's mutations and are not read; the others are, and
 * mutations of other keyspaces (other tests, earlier runs) are skipped as
 * unknown tables.
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

static char host[128] = "127.0.0.1";
static char node_dir[256]; /* our own node, "" on the shared one */
static char cdc_raw[512];
static int port;
static char ks[49];
static cf_cql_conn *conn;
static cf_cass_schema *schema;

static int start_own_node(void) {
    port = 19800 + (int)(getpid() % 150);
    snprintf(node_dir, sizeof node_dir, "/tmp/cf-it-cdc-%d", (int)getpid());
    snprintf(cdc_raw, sizeof cdc_raw, "%s/cdc_raw", node_dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/../scripts/cassandra-node start %s --port %d --commitlog-version 8 --heap 512m --ttl 900 >&2",
             CF_TESTS_DIR, node_dir, port);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_it_cdc_live: could not start a Cassandra node (%s)\n", cmd);
        node_dir[0] = '\0';
        return -1;
    }
    return 0;
}

static int start_node(void **state) {
    (void)state;
    unsigned r = (unsigned)getpid() * 2654435761u;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&r, sizeof r, 1, f) != 1) r ^= (unsigned)time(NULL);
        fclose(f);
    }
    snprintf(ks, sizeof ks, "livks_%d_%08x", (int)getpid(), r);
    const char *env = getenv("CF_TEST_CASSANDRA"), *raw = getenv("CF_TEST_CASSANDRA_CDC_RAW"),
               *clv = getenv("CF_TEST_CASSANDRA_COMMITLOG_VERSION"), *comp = getenv("CF_TEST_CASSANDRA_COMPRESSION");
    if (!env || !*env) return start_own_node();
    const char *why = NULL;
    if (!raw || !*raw) why = "CF_TEST_CASSANDRA_CDC_RAW is not set (its cdc_raw is out of reach)";
    else if (!clv || strcmp(clv, "8") != 0) why = "its commit log version is not 8 (CF_TEST_CASSANDRA_COMMITLOG_VERSION)";
    else if (comp && *comp && strcmp(comp, "none") != 0) why = "it compresses its commit log (CF_TEST_CASSANDRA_COMPRESSION)";
    if (why) {
        fprintf(stderr, "test_it_cdc_live: not the shared node at %s: %s; this test reads uncompressed version 8 "
                        "segments, starting its own node\n", env, why);
        return start_own_node();
    }
    const char *colon = strrchr(env, ':');
    if (!colon) {
        fprintf(stderr, "test_it_cdc_live: CF_TEST_CASSANDRA=%s is not host:port\n", env);
        return -1;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - env), env);
    port = atoi(colon + 1);
    snprintf(cdc_raw, sizeof cdc_raw, "%s", raw);
    fprintf(stderr, "test_it_cdc_live: the shared node at %s (cdc_raw %s), keyspace %s\n", env, cdc_raw, ks);
    return 0;
}

static void stop_node(void) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/../scripts/cassandra-node stop %s >&2", CF_TESTS_DIR, node_dir);
    if (system(cmd) != 0) fprintf(stderr, "test_it_cdc_live: stopping the node failed\n");
}

static int teardown(void **state) {
    (void)state;
    if (!node_dir[0] && conn) {
        /* the shared node: leave nothing behind */
        char cql[128];
        cf_cql_result *r = NULL;
        cf_err err;
        snprintf(cql, sizeof cql, "DROP KEYSPACE IF EXISTS %s", ks);
        if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err) != CF_OK)
            fprintf(stderr, "test_it_cdc_live: %s: %s / %s\n", cql, err.message, err.detail);
        cf_cql_result_free(r);
    }
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

/* runs cql with every "livks" replaced by this run's keyspace */
static void q(const char *tmpl) {
    char cql[1024];
    size_t o = 0;
    for (const char *p = tmpl; *p && o + sizeof ks < sizeof cql;) {
        if (strncmp(p, "livks", 5) == 0) {
            o += (size_t)snprintf(cql + o, sizeof cql - o, "%s", ks);
            p += 5;
        } else {
            cql[o++] = *p++;
        }
    }
    cql[o] = '\0';
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err) != CF_OK) fail_msg("%s: %s / %s", cql, err.message, err.detail);
    cf_cql_result_free(r);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
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

/* a segment in cdc_raw being followed through its index */
typedef struct followed {
    char *path, *idx;
    cf_cass_segment *seg;
    int64_t last_off;
    bool completed, done;
    int ours; /* updates of our table read from it */
} followed;

#define MAX_FOLLOWED 256

static bool known(char **names, size_t n, const char *path) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], path) == 0) return true;
    return false;
}

/* a 200 KiB row in a table without cdc: fills the active segment */
static void fill(void) {
    size_t n = 200 * 1024;
    char *cql = malloc(n + 256);
    int off = snprintf(cql, 256, "INSERT INTO %s.filler (k, v) VALUES (%d, '", ks, rand());
    memset(cql + off, 'f', n);
    snprintf(cql + off + n, 16, "')");
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err) != CF_OK) fail_msg("filler insert: %s / %s", err.message, err.detail);
    cf_cql_result_free(r);
    free(cql);
}

static void test_follow_live_segment(void **state) {
    (void)state;
    cf_cql_options o = {.host = host, .port = port, .request_timeout_ms = 60000};
    cf_err err;
    if (cf_cql_connect(&o, &conn, &err) != CF_OK) fail_msg("connect %s:%d: %s / %s", host, port, err.message, err.detail);
    q("CREATE KEYSPACE livks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    q("CREATE TABLE livks.t (p int, c int, v text, PRIMARY KEY (p, c)) WITH cdc = true");
    q("CREATE TABLE livks.filler (k int PRIMARY KEY, v text)");
    schema = cf_cass_schema_new();
    const char *kss[] = {ks, NULL};
    assert_int_equal(cf_cql_load_schema(conn, kss, schema, &err), CF_OK);
    const cf_cass_table *t = cf_cass_schema_table_by_name(schema, ks, "t");
    assert_non_null(t);

    /* segments COMPLETED before our first write cannot hold it */
    char *skip[MAX_FOLLOWED];
    size_t n_skip = 0;
    char **logs = list_logs(cdc_raw);
    assert_non_null(logs);
    for (char **lp = logs; *lp && n_skip < MAX_FOLLOWED; lp++) {
        char *idx = cf_cass_cdc_idx_path(*lp);
        int64_t off;
        bool done = false;
        if (cf_cass_cdc_idx_read(idx, 5, 50, &off, &done, &err) == CF_OK && done) skip[n_skip++] = strdup(*lp);
        free(idx);
    }
    free_list(logs);

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
    snprintf(cql, sizeof cql, "SELECT c FROM %s.t WHERE p = 1", ks);
    assert_int_equal(cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err), CF_OK);
    for (size_t i = 0; i < r->n_rows; i++) {
        const cf_cql_value *v = cf_cql_result_value(r, i, 0);
        assert_int_equal(v->len, 4);
        int c = (int)be32_of(v->data);
        assert_true(c >= 0 && c < 10);
        cass_live[c] = 1;
    }
    cf_cql_result_free(r);

    /* follow the segments through their indexes while the node runs */
    followed fl[MAX_FOLLOWED];
    size_t n_fl = 0;
    cf_cass_decoder *dec = cf_cass_decoder_new(schema);
    seen sn;
    memset(&sn, 0, sizeof sn);
    bool stopped = false, finished = false;
    int fills = 0;
    for (int waited = 0; waited < 180000 && !finished;) {
        /* segments that got an index since the last look */
        logs = list_logs(cdc_raw);
        for (char **lp = logs; lp && *lp && n_fl < MAX_FOLLOWED; lp++) {
            if (known(skip, n_skip, *lp)) continue;
            bool have = false;
            for (size_t i = 0; i < n_fl && !have; i++) have = strcmp(fl[i].path, *lp) == 0;
            char *idx = cf_cass_cdc_idx_path(*lp);
            cf_cass_segment *sg = NULL;
            if (have || access(idx, F_OK) != 0 || cf_cass_segment_open(*lp, NULL, &sg, &err) != CF_OK) {
                free(idx);
                continue;
            }
            fl[n_fl++] = (followed){.path = strdup(*lp), .idx = idx, .seg = sg, .last_off = -1};
        }
        free_list(logs);
        for (size_t i = 0; i < n_fl; i++) {
            followed *f = &fl[i];
            if (f->done) continue;
            int64_t off;
            bool done;
            cf_code rc = cf_cass_cdc_idx_read(f->idx, 5, 50, &off, &done, &err);
            if (rc == CF_OK) {
                assert_true(off >= f->last_off); /* the index only grows */
                f->last_off = off;
                f->completed = done;
                cf_cass_segment_set_cdc_index(f->seg, off, done); /* a live node keeps its promises */
            }
            int mv = cf_cass_segment_get_info(f->seg)->messaging_version;
            cf_cass_entry e;
            while ((rc = cf_cass_segment_next(f->seg, &e, &err)) == CF_OK) {
                sn.entries++;
                cf_cass_mutation *m;
                if (cf_cass_decode_mutation(dec, e.data, e.len, mv, &m, NULL, NULL) != CF_OK) continue;
                for (size_t j = 0; j < m->n_updates; j++)
                    if (!memcmp(m->updates[j].table_id, t->id, 16)) {
                        f->ours++;
                        apply(&sn, &m->updates[j], t);
                    }
            }
            if (rc == CF_ERR_CORRUPT) fail_msg("%s (%s)", err.message, err.where);
            if (rc == CF_ERR_AGAIN) sn.again++;
            if (f->completed && (rc == CF_ERR_AGAIN || rc == CF_ERR_EOF)) f->done = true;
        }
        bool all_seen = sn.rows >= 10 && sn.boundaries >= 1 && sn.bounds >= 2;
        finished = all_seen;
        for (size_t i = 0; i < n_fl; i++)
            if (fl[i].ours && !fl[i].done) finished = false;
        if (finished) break;
        if (all_seen) {
            /* everything seen while the node runs: now have Cassandra close the
             * segment, which writes COMPLETED */
            if (node_dir[0] && !stopped) {
                stop_node(); /* our own node drains */
                stopped = true;
            } else if (!node_dir[0]) {
                if (++fills > 320) fail_msg("64 MiB written and the segment is not COMPLETED");
                fill(); /* the shared node moves on once the segment is full */
                continue;
            }
        }
        sleep_ms(200);
        waited += 200;
    }
    int with_ours = 0;
    for (size_t i = 0; i < n_fl; i++) {
        followed *f = &fl[i];
        if (f->ours) {
            with_ours++;
            const cf_cass_segment_info *in = cf_cass_segment_get_info(f->seg);
            fprintf(stderr, "followed %s: version %d, messaging %d, index %lld%s, %d updates of %s.t\n", f->path,
                    (int)in->version, (int)in->messaging_version, (long long)f->last_off,
                    f->completed ? " COMPLETED" : "", f->ours, ks);
            assert_int_equal(in->version, 8);
            assert_int_equal(in->messaging_version, 13);
            assert_true(f->completed);
        }
    }
    fprintf(stderr, "followed %zu segments (%zu skipped as COMPLETED before): entries %d, waits %d, rows %d, bounds %d, "
                    "boundaries %d, %s\n",
            n_fl, n_skip, sn.entries, sn.again, sn.rows, sn.bounds, sn.boundaries,
            node_dir[0] ? (stopped ? "node drained" : "node not stopped") : "shared node");
    if (!node_dir[0]) fprintf(stderr, "  %d filler rows of 200 KiB to close the segment\n", fills);
    assert_true(finished);
    assert_true(with_ours >= 1);
    assert_true(sn.again > 0); /* the reader did wait for the index */
    assert_int_equal(sn.rows, 10);
    assert_int_equal(sn.boundaries, 1);
    assert_int_equal(sn.bounds, 2);
    assert_int_equal(sn.boundary_end_ts, 100);
    assert_int_equal(sn.boundary_start_ts, 200);
    /* our replay of the events must give the rows Cassandra returned (0, 8, 9) */
    for (int c = 0; c < 10; c++) assert_int_equal(sn.live_c[c], cass_live[c]);
    assert_int_equal(cass_live[0] + cass_live[8] + cass_live[9], 3);
    for (size_t i = 0; i < n_fl; i++) {
        free(fl[i].path);
        free(fl[i].idx);
        cf_cass_segment_destroy(fl[i].seg);
    }
    for (size_t i = 0; i < n_skip; i++) free(skip[i]);
    cf_cass_decoder_destroy(dec);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follow_live_segment),
    };
    return cmocka_run_group_tests(tests, start_node, teardown);
}
