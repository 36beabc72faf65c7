/*
 * test_sink_positions.c - exactly once into SQLite: the sink engine stores
 * where its input stands (cf_sink_put_at) in the same transaction as the
 * rows, and a restarted engine resumes from there.
 *
 * Oracles: the generator's model of the SOURCE table (cdc_gen.h: what the
 * source database holds after the history), and SQLite's own triggers,
 * which log every row the target really changed (in the applying
 * transaction, so a lost transaction loses its log lines too): no (key,
 * sequence number) may be applied twice.
 *
 *   - positions round trip; an apply forced inside a put (batchMaxRecords)
 *     stores exactly the positions of the rows it wrote; bad and skipped
 *     records move the position; source positions (direct mode) are stored
 *     in Kafka Connect's offsets format;
 *   - kill -9: a child process delivers the history and is killed at 20
 *     random moments, each restart resuming from the stored positions;
 *   - power loss: a VFS shim keeps, for the database and its WAL, the bytes
 *     as of their last xSync; 20 times at a random moment the files are
 *     replaced by those durable images (every write not synced is lost, as
 *     in a power cut) and a new engine resumes. Every flush that returned
 *     CF_OK must have survived (it did not with synchronous=NORMAL: the WAL
 *     is synced only at checkpoints then).
 * In the end the table equals the model and the apply log has no duplicate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cdc_gen.h"
#include "../cdc_resume.h"
#include "../cdc_rows.h"
#include "cdcflow/buf.h"
#include "cdcflow/sink.h"

#define TABLE "dbserver1_public_customers"
#define TOPIC "dbserver1.public.customers"
#define CONSUMER "cdc"

static char g_dir[256];

static void db_path(char *out, size_t cap, const char *tag, int round) {
    snprintf(out, cap, "%s/%s_%d.db", g_dir, tag, round);
}

static void opts_for(cf_sink_options *o, const char *path) {
    cf_sink_options_default(o);
    o->sqlite_path = path;
    o->consumer = CONSUMER;
}

static void exec_sql(const char *path, const char *sql) {
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) fail_msg("cannot open %s: %s", path, sqlite3_errmsg(db));
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

static long long query_int(const char *path, const char *sql) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s: %s", path, sql, sqlite3_errmsg(db));
    long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* The target table made beforehand (what the engine would create), with
 * triggers logging every change SQLite really makes to it. */
static void prepare_db(const char *path) {
    exec_sql(path, "PRAGMA journal_mode=WAL;"
                   "CREATE TABLE \"" TABLE "\" (id INTEGER NOT NULL PRIMARY KEY, email TEXT, name TEXT, version INTEGER,"
                   " score REAL, active BOOLEAN, note TEXT, qty INTEGER, created INTEGER, tag TEXT,"
                   " \"_change_sequence_number\" TEXT);"
                   "CREATE TABLE apply_log (id INTEGER, seq TEXT, op TEXT);"
                   "CREATE TRIGGER log_i AFTER INSERT ON \"" TABLE "\" BEGIN INSERT INTO apply_log VALUES"
                   " (new.id, new.\"_change_sequence_number\", 'i'); END;"
                   "CREATE TRIGGER log_u AFTER UPDATE ON \"" TABLE "\" BEGIN INSERT INTO apply_log VALUES"
                   " (new.id, new.\"_change_sequence_number\", 'u'); END;");
}

static void check_final(const gen *g, const char *path) {
    size_t n;
    char **rows = rows_sqlite(path, TABLE, &n);
    assert_int_equal(rows_diff(g, rows, n, 0), 0);
    rows_free(rows, n);
    long long dups = query_int(path, "SELECT count(*) FROM (SELECT id, seq FROM apply_log GROUP BY id, seq "
                                     "HAVING count(*) > 1)");
    if (dups) fprintf(stderr, "%lld (key, sequence) pairs applied more than once\n", dups);
    assert_int_equal(dups, 0);
}

static int deliver(const gen *g, const char *path, uint64_t *rng, int max_ops, snap_fn snap, size_t *acked) {
    cf_sink_options o;
    opts_for(&o, path);
    return resume_deliver(g, &o, &cf_sink_target_sqlite, rng, max_ops, snap, acked, 100);
}

static void make_history(gen *g, uint64_t seed, int n_ops) {
    gen_init(g, seed, GEN_REWRITE, 400, 3, TOPIC);
    for (int i = 0; i < n_ops; i++) gen_step(g);
}

/* ---------------- the API ---------------- */

static void test_round_trip(void **state) {
    (void)state;
    char path[300];
    db_path(path, sizeof path, "rt", 0);
    gen g;
    make_history(&g, 3, 300);
    cf_sink_options o;
    opts_for(&o, path);
    cf_sink *s;
    cf_err err;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &err), CF_OK);
    size_t n0;
    cf_sink_stored_position *sp;
    assert_int_equal(cf_sink_read_positions(s, &sp, &n0, &err), CF_OK);
    assert_int_equal(n0, 0);
    cf_sink_stored_positions_free(sp, n0);
    cf_sink_position pos[2000];
    for (int p = 0; p < g.n_part; p++) {
        pos_of(&g, p, 0, g.n_recs[p], pos);
        assert_int_equal(cf_sink_put_at(s, g.recs[p], pos, g.n_recs[p], &err), CF_OK);
    }
    /* nothing stored before the flush */
    assert_int_equal(query_int(path, "SELECT count(*) FROM _cdcflow_positions"), 0);
    assert_int_equal(cf_sink_flush(s, &err), CF_OK);
    size_t n;
    assert_int_equal(cf_sink_read_positions(s, &sp, &n, &err), CF_OK);
    assert_int_equal(n, (size_t)g.n_part);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(sp[i].stream, TOPIC);
        assert_int_equal(sp[i].partition, (int)i);
        assert_int_equal(sp[i].next_offset, (int64_t)g.n_recs[i]);
        assert_null(sp[i].source_offset);
    }
    cf_sink_stored_positions_free(sp, n);
    cf_sink_destroy(s);
    /* another consumer of the same database sees none of them */
    o.consumer = "other";
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &err), CF_OK);
    assert_int_equal(cf_sink_read_positions(s, &sp, &n, &err), CF_OK);
    assert_int_equal(n, 0);
    cf_sink_stored_positions_free(sp, n);
    cf_sink_destroy(s);
    /* without a consumer nothing is stored */
    o.consumer = NULL;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &err), CF_OK);
    assert_int_equal(cf_sink_read_positions(s, &sp, &n, &err), CF_OK);
    assert_int_equal(n, 0);
    cf_sink_destroy(s);
    gen_free(&g);
}

/* Applies forced inside a put store the positions of exactly what they
 * wrote: after a crash (no flush) the rows and the positions agree. */
static void test_alter_positions(void **state) {
    (void)state;
    char path[300];
    db_path(path, sizeof path, "alter", 0);
    cf_sink_options o;
    opts_for(&o, path);
    alter_positions_check(&o, &cf_sink_target_sqlite);
}

static void test_applies_inside_a_put(void **state) {
    (void)state;
    char path[300];
    db_path(path, sizeof path, "inside", 0);
    gen g;
    gen_init(&g, 5, GEN_REWRITE, 1000, 1, TOPIC);
    for (int i = 0; i < 1000; i++) gen_insert(&g, i, 0); /* one insert per key: rows = records applied */
    cf_sink_options o;
    opts_for(&o, path);
    o.batch_max_records = 64;
    cf_sink *s;
    cf_err err;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &err), CF_OK);
    cf_sink_position pos[1000];
    pos_of(&g, 0, 0, 1000, pos);
    assert_int_equal(cf_sink_put_at(s, g.recs[0], pos, 1000, &err), CF_OK);
    cf_sink_destroy(s); /* a crash: the last 1000 % 64 records were only buffered */
    long long rows = query_int(path, "SELECT count(*) FROM \"" TABLE "\"");
    long long next = query_int(path, "SELECT next_offset FROM _cdcflow_positions WHERE consumer = 'cdc'");
    assert_int_equal(rows, 1000 / 64 * 64);
    assert_int_equal(next, rows);
    gen_free(&g);
}

static cf_code tolerate(void *ud, const cf_record *rec, const cf_err *problem, cf_err *err) {
    (void)rec, (void)problem, (void)err;
    (*(int *)ud)++;
    return CF_OK;
}

/* A bad record (reported and dropped) and a skipped one move the position. */
static void test_bad_records_move_the_position(void **state) {
    (void)state;
    char path[300];
    db_path(path, sizeof path, "bad", 0);
    cf_schema *ks = cf_schema_new_struct();
    cf_schema_add_field(ks, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_record *r[2];
    for (int i = 0; i < 2; i++) {
        r[i] = cf_record_new();
        cf_record_set_topic(r[i], TOPIC);
        r[i]->partition = 0;
        r[i]->offset = 10 + i;
    }
    /* a null key: bad record; then a tombstone of a key: a delete */
    cf_value *kv = cf_value_struct(cf_schema_ref(ks));
    assert_int_equal(cf_value_struct_set(kv, "id", cf_value_int32(1), NULL), CF_OK);
    cf_record_set_key(r[1], cf_schema_ref(ks), kv);
    cf_sink_options o;
    opts_for(&o, path);
    cf_sink *s;
    cf_err err;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &err), CF_OK);
    int reported = 0;
    cf_sink_set_reporter(s, tolerate, &reported);
    cf_sink_position pos[2] = {{TOPIC, 0, 11, NULL, NULL, NULL}, {TOPIC, 0, 12, NULL, NULL, NULL}};
    assert_int_equal(cf_sink_put_at(s, r, pos, 1, &err), CF_OK);
    assert_int_equal(reported, 1);
    assert_int_equal(cf_sink_flush(s, &err), CF_OK); /* no row, the position still */
    assert_int_equal(query_int(path, "SELECT next_offset FROM _cdcflow_positions"), 11);
    assert_int_equal(cf_sink_put_at(s, r + 1, pos + 1, 1, &err), CF_OK);
    assert_int_equal(cf_sink_flush(s, &err), CF_OK);
    assert_int_equal(query_int(path, "SELECT next_offset FROM _cdcflow_positions"), 12);
    cf_sink_destroy(s);
    for (int i = 0; i < 2; i++) cf_record_destroy(r[i]);
    cf_schema_unref(ks);
}

/* Direct mode: the source position of the last record applied per source
 * partition, in Kafka Connect's offsets format. */
static void test_source_positions(void **state) {
    (void)state;
    char path[300];
    db_path(path, sizeof path, "src", 0);
    gen g;
    make_history(&g, 9, 200);
    cf_sink_options o;
    opts_for(&o, path);
    cf_sink *s;
    cf_err err;
    assert_int_equal(cf_sink_new(&o, &cf_sink_target_sqlite, &s, &err), CF_OK);
    cf_value *part[2];
    for (int f = 0; f < 2; f++) {
        part[f] = cf_value_map();
        cf_value_map_put_lit(part[f], f ? "b.csv" : "a.csv", cf_value_string(f ? "1" : "0"));
    }
    size_t n = g.n_recs[0];
    cf_sink_position *pos = calloc(n, sizeof *pos);
    cf_value **offs = calloc(n, sizeof *offs);
    for (size_t i = 0; i < n; i++) {
        offs[i] = cf_value_map();
        cf_value_map_put_lit_long(offs[i], "line", (int64_t)i + 1);
        pos[i] = (cf_sink_position){TOPIC, 0, (int64_t)i + 1, "files-src", part[i % 2], offs[i]};
    }
    assert_int_equal(cf_sink_put_at(s, g.recs[0], pos, n, &err), CF_OK);
    assert_int_equal(cf_sink_flush(s, &err), CF_OK);
    cf_sink_stored_position *sp;
    size_t k;
    assert_int_equal(cf_sink_read_positions(s, &sp, &k, &err), CF_OK);
    assert_int_equal(k, 3); /* the topic partition and the two source partitions */
    int seen = 0;
    for (size_t i = 0; i < k; i++) {
        if (!sp[i].source_offset) {
            assert_string_equal(sp[i].stream, TOPIC);
            assert_int_equal(sp[i].next_offset, (int64_t)n);
            continue;
        }
        int f = strstr(sp[i].stream, "b.csv") != NULL;
        char want[64];
        snprintf(want, sizeof want, "[\"files-src\",{\"%s\":\"%d\"}]", f ? "b.csv" : "a.csv", f);
        assert_string_equal(sp[i].stream, want);
        assert_int_equal(sp[i].partition, -1);
        /* the last record of each source partition: n-1 or n-2 by parity */
        size_t last = (n - 1) % 2 == (size_t)f ? n - 1 : n - 2;
        snprintf(want, sizeof want, "{\"line\":%zu}", last + 1);
        assert_string_equal(sp[i].source_offset, want);
        seen++;
    }
    assert_int_equal(seen, 2);
    cf_sink_stored_positions_free(sp, k);
    cf_sink_destroy(s);
    for (size_t i = 0; i < n; i++) cf_value_destroy(offs[i]);
    for (int f = 0; f < 2; f++) cf_value_destroy(part[f]);
    free(offs), free(pos);
    gen_free(&g);
}

/* ---------------- kill -9 ---------------- */

static void test_kill9_resume(void **state) {
    (void)state;
    char path[300];
    db_path(path, sizeof path, "kill", 0);
    gen g;
    make_history(&g, 11, 30000);
    prepare_db(path);
    uint64_t seed = (uint64_t)time(NULL);
    fprintf(stderr, "kill -9 test: seed %llu, %zu records\n", (unsigned long long)seed, g.total);
    cf_sink_options o;
    opts_for(&o, path);
    resume_kill9(&g, &o, &cf_sink_target_sqlite, seed, 20);
    check_final(&g, path);
    gen_free(&g);
}

/* ---------------- power loss: a VFS that forgets what was not synced ---------------- */

/* Every file of the main database or its WAL gets a twin "<path>.durable"
 * holding its bytes as of its last xSync (made at open from what is there).
 * A power loss is: copy the twins to a new place, as the files. */
typedef struct pl_file {
    sqlite3_file base;
    sqlite3_file *real;
    char *durable; /* NULL: not tracked */
    char *path;
} pl_file;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs pl_vfs;
static sqlite3_io_methods pl_io;

static void copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(out >= 0);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && (n = read(in, buf, sizeof buf)) > 0) assert_true(write(out, buf, (size_t)n) == n);
    if (in >= 0) close(in);
    close(out);
}

static int pl_close(sqlite3_file *f) {
    pl_file *p = (pl_file *)f;
    int rc = p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;
    free(p->real), free(p->durable), free(p->path);
    return rc;
}
static int pl_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o) {
    return ((pl_file *)f)->real->pMethods->xRead(((pl_file *)f)->real, b, n, o);
}
static int pl_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o) {
    return ((pl_file *)f)->real->pMethods->xWrite(((pl_file *)f)->real, b, n, o);
}
static int pl_truncate(sqlite3_file *f, sqlite3_int64 s) {
    return ((pl_file *)f)->real->pMethods->xTruncate(((pl_file *)f)->real, s);
}
static int pl_sync(sqlite3_file *f, int flags) {
    pl_file *p = (pl_file *)f;
    int rc = p->real->pMethods->xSync(p->real, flags);
    if (rc == SQLITE_OK && p->durable) copy_file(p->path, p->durable); /* now it is on disk */
    return rc;
}
static int pl_size(sqlite3_file *f, sqlite3_int64 *s) {
    return ((pl_file *)f)->real->pMethods->xFileSize(((pl_file *)f)->real, s);
}
static int pl_lock(sqlite3_file *f, int l) { return ((pl_file *)f)->real->pMethods->xLock(((pl_file *)f)->real, l); }
static int pl_unlock(sqlite3_file *f, int l) {
    return ((pl_file *)f)->real->pMethods->xUnlock(((pl_file *)f)->real, l);
}
static int pl_check(sqlite3_file *f, int *o) {
    return ((pl_file *)f)->real->pMethods->xCheckReservedLock(((pl_file *)f)->real, o);
}
static int pl_fcntl(sqlite3_file *f, int op, void *a) {
    return ((pl_file *)f)->real->pMethods->xFileControl(((pl_file *)f)->real, op, a);
}
static int pl_sector(sqlite3_file *f) { return ((pl_file *)f)->real->pMethods->xSectorSize(((pl_file *)f)->real); }
static int pl_dev(sqlite3_file *f) {
    return ((pl_file *)f)->real->pMethods->xDeviceCharacteristics(((pl_file *)f)->real);
}
static int pl_shm_map(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp) {
    return ((pl_file *)f)->real->pMethods->xShmMap(((pl_file *)f)->real, pg, sz, ext, pp);
}
static int pl_shm_lock(sqlite3_file *f, int off, int n, int fl) {
    return ((pl_file *)f)->real->pMethods->xShmLock(((pl_file *)f)->real, off, n, fl);
}
static void pl_shm_barrier(sqlite3_file *f) { ((pl_file *)f)->real->pMethods->xShmBarrier(((pl_file *)f)->real); }
static int pl_shm_unmap(sqlite3_file *f, int del) {
    return ((pl_file *)f)->real->pMethods->xShmUnmap(((pl_file *)f)->real, del);
}

static int pl_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out) {
    (void)v;
    pl_file *p = (pl_file *)f;
    memset(p, 0, sizeof *p);
    p->real = calloc(1, (size_t)real_vfs->szOsFile);
    int rc = real_vfs->xOpen(real_vfs, name, p->real, flags, out);
    if (rc != SQLITE_OK) {
        free(p->real);
        p->real = NULL;
        return rc;
    }
    if (name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL))) {
        p->path = cf_xstrdup(name);
        size_t l = strlen(name);
        p->durable = malloc(l + 9);
        sprintf(p->durable, "%s.durable", name);
        if (access(p->durable, F_OK) != 0) copy_file(name, p->durable);
    }
    p->base.pMethods = &pl_io;
    return SQLITE_OK;
}

static int pl_delete(sqlite3_vfs *v, const char *name, int sync) {
    (void)v;
    char d[600];
    snprintf(d, sizeof d, "%s.durable", name);
    unlink(d); /* a delete is taken as durable at once */
    return real_vfs->xDelete(real_vfs, name, sync);
}

static void pl_install(void) {
    if (real_vfs) return;
    real_vfs = sqlite3_vfs_find(NULL);
    pl_vfs = *real_vfs;
    pl_vfs.zName = "powerloss";
    pl_vfs.szOsFile = (int)sizeof(pl_file);
    pl_vfs.xOpen = pl_open;
    pl_vfs.xDelete = pl_delete;
    pl_io = (sqlite3_io_methods){3,        pl_close,   pl_read,     pl_write,       pl_truncate,  pl_sync,
                                 pl_size,  pl_lock,    pl_unlock,   pl_check,       pl_fcntl,     pl_sector,
                                 pl_dev,   pl_shm_map, pl_shm_lock, pl_shm_barrier, pl_shm_unmap, NULL,
                                 NULL};
    assert_int_equal(sqlite3_vfs_register(&pl_vfs, 1), SQLITE_OK);
}

static char cur_path[300], next_path[300];

/* The power cut: the next round's files are the durable twins of this one's. */
static void power_cut(void) {
    char from[700], to[700];
    const char *sfx[] = {"", "-wal"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s%s.durable", cur_path, sfx[i]);
        snprintf(to, sizeof to, "%s%s", next_path, sfx[i]);
        if (access(from, F_OK) == 0) copy_file(from, to);
    }
}

static void test_power_loss_resume(void **state) {
    (void)state;
    pl_install();
    gen g;
    make_history(&g, 13, 30000);
    uint64_t seed = (uint64_t)time(NULL) ^ 0x5eed;
    fprintf(stderr, "power loss test: seed %llu, %zu records\n", (unsigned long long)seed, g.total);
    db_path(cur_path, sizeof cur_path, "power", 0);
    prepare_db(cur_path);
    uint64_t rng = seed;
    int cuts = 0;
    for (int k = 0; k <= 20; k++) {
        size_t acked[16] = {0};
        db_path(next_path, sizeof next_path, "power", k + 1);
        if (k == 20) {
            assert_int_equal(deliver(&g, cur_path, &rng, -1, NULL, acked), 0);
            break;
        }
        int ops = (int)(rnd(&rng) % 40);
        if (deliver(&g, cur_path, &rng, ops, power_cut, acked) == 0) break; /* delivered to the end first */
        cuts++;
        /* what a flush acknowledged survived the cut */
        for (int p = 0; p < g.n_part; p++) {
            char sql[200];
            snprintf(sql, sizeof sql, "SELECT coalesce(max(next_offset), 0) FROM _cdcflow_positions WHERE partition = %d",
                     p);
            long long stored =
                query_int(next_path, "SELECT count(*) FROM sqlite_master WHERE name = '_cdcflow_positions'")
                    ? query_int(next_path, sql)
                    : 0;
            if (stored < (long long)acked[p])
                fail_msg("power loss %d: partition %d acknowledged up to %zu, the database kept %lld", k, p, acked[p],
                         stored);
        }
        snprintf(cur_path, sizeof cur_path, "%s", next_path);
    }
    fprintf(stderr, "power loss test: %d power cuts\n", cuts);
    assert_true(cuts >= 15);
    check_final(&g, cur_path);
    gen_free(&g);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/cf_sink_pos_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(g_dir));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_alter_positions),
        cmocka_unit_test(test_applies_inside_a_put),
        cmocka_unit_test(test_bad_records_move_the_position),
        cmocka_unit_test(test_source_positions),
        cmocka_unit_test(test_kill9_resume),
        cmocka_unit_test(test_power_loss_resume),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
