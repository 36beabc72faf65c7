/*
 * bench_sink.c - the CDC sink end to end (JsonConverter bytes -> records ->
 * routing/compaction -> database) against bare loops in the same run.
 *
 * Workload: N change events (default 1,000,000) on a 10-column table
 * (tests/sink/cdc_gen.h's customers), 200,000 keys, about 20% deletes,
 * shaped as ExtractNewRecordState rewrite output (flat row + __deleted,
 * deletes with their before image) and serialized by the JsonConverter with
 * schemas. Conversion (bytes -> cf_record), routing (record -> cells,
 * compaction) and database time are measured separately; producing the bytes
 * is not measured.
 *
 * Baselines (same operations, same final rows, checked equal):
 *   SQLite     a bare loop of prepared upserts (INSERT .. ON CONFLICT DO
 *              UPDATE) and deletes, one per event, committed every batch
 *              (the sink's batch size), values bound straight from C; and,
 *              for reference, inserting only the final rows.
 *   PostgreSQL batched single-row prepared upserts/deletes (PQexecPrepared
 *              per event, a transaction per 10,000 events).
 *
 * End to end from a record file (the figure, SQLite): the same
 * events written as a record file (kcat's envelope, JsonConverter bytes;
 * not measured), then `cdcflow run SINK.json --input FILE` timed as a whole
 * process (read the file, convert, route, apply, commit offsets), against
 * the bare loop above; final rows checked equal.
 *
 *   build/bench/bench_sink [N] [sqlite|postgres|all]   (postgres needs CF_TEST_PG)
 *   BENCH_DIR=/dev/shm puts the SQLite files on tmpfs (CPU cost without the disk)
 *   CF_CLI=path/to/cdcflow (default: ../cdcflow beside this program)
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tests/sink/cdc_gen.h"
#include "cdcflow/convert.h"
#include "cdcflow/log.h"
#include "cdcflow/props.h"
#include "cdcflow/recordfile.h"
#include "cdcflow/sink.h"

#include "bench_util.h"
#include "sink_events.h"

/* ---------------- end to end: cdcflow run --input ---------------- */

/* The events as a record file (what `kcat -C -J` prints of the topic). */
static int write_recordfile(const char *path, size_t n) {
    ops o;
    ops_init(&o);
    cf_props *pp;
    cf_converter *kc, *vc;
    cf_err e;
    if (json_converters(&pp, &kc, &vc)) return 1;
    cf_recordfile_writer *w;
    if (cf_recordfile_writer_open(path, false, &w, &e)) {
        fprintf(stderr, "%s: %s\n", path, e.message);
        return 1;
    }
    cf_msg *m = cf_msg_new();
    for (size_t i = 0; i < n; i++) {
        char *kb, *vb;
        size_t kl, vl;
        event_bytes(&o, kc, vc, &kb, &kl, &vb, &vl);
        cf_msg_clear(m);
        cf_msg_set_topic(m, o.g.topic);
        m->partition = 0;
        m->offset = (int64_t)i;
        cf_msg_set_key(m, kb, kl);
        cf_msg_set_value(m, vb, vl);
        free(kb), free(vb);
        if (cf_recordfile_write(w, m, &e)) return 1;
    }
    cf_msg_destroy(m);
    int rc = cf_recordfile_writer_close(w, &e) != CF_OK;
    cf_converter_destroy(kc), cf_converter_destroy(vc);
    cf_props_destroy(pp);
    gen_free(&o.g);
    return rc;
}

/* Runs `cdcflow run` in dir on the record file; returns the wall time or -1.
 * Its peak resident size is its own VmHWM, read every 10 ms while it runs
 * (after its exec: before it, the child is a copy of this bench). */
static double run_cli(const char *cli, const char *dir, const char *input, const char *db) {
    char conf[512], log[512];
    snprintf(conf, sizeof conf, "%s/bench_sink_%d.json", dir, (int)getpid());
    snprintf(log, sizeof log, "%s/bench_sink_cli_%d.log", dir, (int)getpid());
    FILE *f = fopen(conf, "w");
    if (!f) return -1;
    fprintf(f,
            "{\"name\":\"bench\",\"config\":{\"connector.class\":\"cdc-sink\",\"topics\":\"bench.public.customers\","
            "\"sqlite.path\":\"%s\",\"key.converter\":\"org.apache.kafka.connect.json.JsonConverter\","
            "\"value.converter\":\"org.apache.kafka.connect.json.JsonConverter\"}}\n",
            db);
    fclose(f);
    char *exe = realpath(cli, NULL);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(dir) != 0 || !freopen(log, "w", stderr)) _exit(127);
        execl(cli, cli, "run", conf, "--input", input, "--worker", "/dev/null", (char *)NULL);
        _exit(127);
    }
    long peak = -1;
    int status = -1;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || r < 0) break;
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k > 0 && exe) {
            target[k] = 0;
            long kb = strcmp(target, exe) == 0 ? bench_peak_rss_kb(pid) : -1;
            if (kb > peak) peak = kb;
        }
        usleep(10000);
    }
    double t = now() - t0;
    free(exe);
    unlink(conf);
    int rc = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    if (rc) {
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", log);
        if (system(cmd) != 0) fprintf(stderr, "see %s\n", log);
    } else if (peak > 0) {
        printf("  `cdcflow run --input`: peak resident memory %.1f MB (its VmHWM)\n", (double)peak / 1024.0);
    }
    return rc == 0 ? t : -1;
}

/* The SQLite bare loop (sqlite_baseline, COLS) is in sink_events.h: bench_sink_kafka measures it too. */

/* Same final rows in both tables? (content hash over the sorted rows) */
static uint64_t sq_digest(const char *path, const char *table) {
    sqlite3 *db;
    sqlite3_open(path, &db);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM \"%s\" ORDER BY id", COLS, table);
    sqlite3_stmt *st;
    uint64_t h = 1469598103934665603ULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int i = 0; i < 10; i++) {
                const unsigned char *t = sqlite3_column_text(st, i);
                for (const unsigned char *p = t ? t : (const unsigned char *)"\x01"; *p; p++)
                    h = (h ^ *p) * 1099511628211ULL;
                h = (h ^ 0xff) * 1099511628211ULL;
            }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return h;
}

/* ---------------- PostgreSQL baseline ---------------- */

static double pg_baseline(PGconn *c, const char *schema, size_t n, size_t *rows) {
    char sql[1024];
    snprintf(sql, sizeof sql,
             "DROP TABLE IF EXISTS %s.t; CREATE TABLE %s.t (id integer NOT NULL PRIMARY KEY, email text, name text, "
             "version bigint, score double precision, active boolean, note text, qty integer, created bigint, tag text)",
             schema, schema);
    PQclear(PQexec(c, sql));
    snprintf(sql, sizeof sql,
             "INSERT INTO %s.t (%s) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT (id) DO UPDATE SET "
             "email=EXCLUDED.email, name=EXCLUDED.name, version=EXCLUDED.version, score=EXCLUDED.score, "
             "active=EXCLUDED.active, note=EXCLUDED.note, qty=EXCLUDED.qty, created=EXCLUDED.created, tag=EXCLUDED.tag",
             schema, COLS);
    PQclear(PQprepare(c, "up", sql, 10, NULL));
    snprintf(sql, sizeof sql, "DELETE FROM %s.t WHERE id = $1", schema);
    PQclear(PQprepare(c, "del", sql, 1, NULL));
    ops o;
    ops_init(&o);
    double t0 = now();
    PQclear(PQexec(c, "BEGIN"));
    for (size_t i = 0; i < n; i++) {
        int d;
        gen_row r;
        int32_t id = ops_next(&o, &d, &r);
        char a[10][64];
        const char *p[10];
        snprintf(a[0], 64, "%d", id);
        p[0] = a[0];
        if (d) {
            PQclear(PQexecPrepared(c, "del", 1, p, NULL, NULL, 0));
        } else {
            p[1] = r.email;
            p[2] = r.has_name ? r.name : NULL;
            snprintf(a[3], 64, "%" PRId64, r.version), p[3] = a[3];
            snprintf(a[4], 64, "%.17g", r.score), p[4] = r.has_score ? a[4] : NULL;
            p[5] = r.active ? "t" : "f";
            p[6] = r.has_note ? r.note : NULL;
            snprintf(a[7], 64, "%d", r.qty), p[7] = r.has_qty ? a[7] : NULL;
            snprintf(a[8], 64, "%" PRId64, r.created), p[8] = a[8];
            p[9] = r.has_tag ? r.tag : NULL;
            PQclear(PQexecPrepared(c, "up", 10, p, NULL, NULL, 0));
        }
        if ((i + 1) % 10000 == 0) PQclear(PQexec(c, "COMMIT; BEGIN"));
    }
    PQclear(PQexec(c, "COMMIT"));
    double t = now() - t0;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.t", schema);
    PGresult *res = PQexec(c, sql);
    *rows = (size_t)atol(PQgetvalue(res, 0, 0));
    PQclear(res);
    PQclear(PQexec(c, "DEALLOCATE ALL"));
    gen_free(&o.g);
    return t;
}

static uint64_t pg_digest(PGconn *c, const char *schema, const char *table) {
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM (SELECT %s FROM %s.\"%s\") t",
             COLS, schema, table);
    PGresult *r = PQexec(c, sql);
    uint64_t h = 0;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && !PQgetisnull(r, 0, 0)) h = strtoull(PQgetvalue(r, 0, 0) + 16, NULL, 16);
    PQclear(r);
    return h;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 1000000;
    const char *which = argc > 2 ? argv[2] : "all";
    cf_log_setup(CF_LOG_WARN, CF_LOG_TEXT, NULL);
    int rc = 0;
    printf("bench_sink: %zu change events, %d keys, 10 columns, JsonConverter with schemas\n", n, KEYS);
    if (!strcmp(which, "all") || !strcmp(which, "sqlite")) {
        char path[256], base[256];
        const char *dir = getenv("BENCH_DIR") ? getenv("BENCH_DIR") : "/tmp";
        snprintf(path, sizeof path, "%s/bench_sink_%d.db", dir, (int)getpid());
        snprintf(base, sizeof base, "%s/bench_sink_base_%d.db", dir, (int)getpid());
        unlink(path);
        cf_sink_options so;
        cf_sink_options_default(&so);
        so.sqlite_path = path;
        so.batch_max_records = BATCH;
        printf("SQLite (WAL, synchronous=NORMAL):\n");
        run_result r;
        if (run_sink(&so, &cf_sink_target_sqlite, n, &r)) return 1;
        print_run("cdc-sink", &r);
        size_t brows, frows;
        double tb = sqlite_baseline(base, n, 0, &brows);
        uint64_t d1 = sq_digest(path, "bench_public_customers"), d2 = sq_digest(base, "t");
        printf("  baseline, bare prepared upserts/deletes of every event: %.2f s = %.0f events/s, %zu rows\n", tb,
               n / tb, brows);
        double tf = sqlite_baseline(base, n, 1, &frows);
        printf("  reference, inserting only the %zu final rows: %.2f s\n", frows, tf);
        printf("  same final rows: %s\n", d1 == d2 && r.rows == brows ? "yes" : "NO");
        printf("  ratio (baseline time / cdc-sink database time) = %.2f; (baseline / routing+database) = %.2f; "
               "(baseline / conversion+routing+database) = %.2f  [target >= 0.80]\n",
               tb / r.db, tb / (r.route + r.db), tb / r.total);
        if (d1 != d2) rc = 1;
        char p2[300];
        /* end to end from a record file, with the cdcflow binary */
        char cli[512], rf[300];
        if (getenv("CF_CLI")) snprintf(cli, sizeof cli, "%s", getenv("CF_CLI"));
        else {
            snprintf(cli, sizeof cli, "%s", argv[0]);
            char *slash = strrchr(cli, '/');
            snprintf(slash ? slash + 1 : cli, sizeof cli - (size_t)(slash ? slash + 1 - cli : 0), "../cdcflow");
            char *abs = realpath(cli, NULL); /* the command runs in dir */
            if (abs) snprintf(cli, sizeof cli, "%s", abs);
            free(abs);
        }
        snprintf(rf, sizeof rf, "%s/bench_sink_%d.jsonl", dir, (int)getpid());
        unlink(path);
        if (write_recordfile(rf, n)) return 1;
        double te = run_cli(cli, dir, rf, path);
        double tb2 = sqlite_baseline(base, n, 0, &brows);
        if (te < 0) {
            fprintf(stderr, "cdcflow run failed (CF_CLI=%s)\n", cli);
            return 1;
        }
        uint64_t d3 = sq_digest(path, "bench_public_customers");
        struct stat stt;
        double mb = stat(rf, &stt) == 0 ? stt.st_size / 1e6 : 0;
        printf("  end to end, `cdcflow run --input` on a %.0f MB record file: %.2f s = %.0f events/s; baseline again "
               "%.2f s; same final rows: %s\n",
               mb, te, n / te, tb2, d3 == d2 ? "yes" : "NO");
        printf("  ratio (baseline time / cdcflow run time) = %.2f  [target >= 0.80]\n", (tb + tb2) / 2 / te);
        if (d3 != d2) rc = 1;
        unlink(rf);
        snprintf(p2, sizeof p2, "%s/cdcflow.offsets.json", dir), unlink(p2);
        snprintf(p2, sizeof p2, "%s/bench_sink_cli_%d.log", dir, (int)getpid()), unlink(p2);
        unlink(path), unlink(base);
        snprintf(p2, sizeof p2, "%s-wal", path), unlink(p2);
        snprintf(p2, sizeof p2, "%s-shm", path), unlink(p2);
        snprintf(p2, sizeof p2, "%s-wal", base), unlink(p2);
        snprintf(p2, sizeof p2, "%s-shm", base), unlink(p2);
    }
    if (!strcmp(which, "all") || !strcmp(which, "postgres")) {
        const char *ci = getenv("CF_TEST_PG");
        if (!ci) {
            printf("PostgreSQL: CF_TEST_PG not set, skipped\n");
            return rc;
        }
        PGconn *c = PQconnectdb(ci);
        if (PQstatus(c) != CONNECTION_OK) {
            fprintf(stderr, "PostgreSQL: %s\n", PQerrorMessage(c));
            return 1;
        }
        char schema[64], sql[256];
        snprintf(schema, sizeof schema, "bench_sink_%d", (int)getpid());
        snprintf(sql, sizeof sql, "SET client_min_messages=warning; DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s",
                 schema, schema);
        PQclear(PQexec(c, sql));
        cf_sink_options so;
        cf_sink_options_default(&so);
        so.pg_conninfo = ci;
        so.pg_schema = schema;
        so.batch_max_records = BATCH;
        printf("PostgreSQL:\n");
        run_result r;
        if (run_sink(&so, &cf_sink_target_postgres, n, &r)) return 1;
        print_run("cdc-sink", &r);
        size_t brows;
        double tb = pg_baseline(c, schema, n, &brows);
        uint64_t d1 = pg_digest(c, schema, "bench_public_customers"), d2 = pg_digest(c, schema, "t");
        printf("  baseline, batched single-row prepared upserts/deletes: %.2f s = %.0f events/s, %zu rows\n", tb,
               n / tb, brows);
        printf("  same final rows: %s\n", d1 == d2 && d1 && r.rows == brows ? "yes" : "NO");
        printf("  ratio (baseline time / cdc-sink database time) = %.2f; (baseline / routing+database) = %.2f; "
               "(baseline / conversion+routing+database) = %.2f  [target >= 3]\n",
               tb / r.db, tb / (r.route + r.db), tb / r.total);
        if (d1 != d2) rc = 1;
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
        PQclear(PQexec(c, sql));
        PQfinish(c);
    }
    return rc;
}
