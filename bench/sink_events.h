/*
 * sink_events.h - the CDC sink benchmarks' workload and in-process run,
 * shared by bench_sink.c and bench_sink_kafka.c: N change events on a
 * 10-column table (tests/sink/cdc_gen.h's customers), 200,000 keys, about
 * 20% deletes, as ExtractNewRecordState rewrite output serialized by the
 * JsonConverter with schemas; and run_sink, which converts, routes and
 * applies them in this process (the in-process rate both compare against).
 */
#ifndef CF_BENCH_SINK_EVENTS_H
#define CF_BENCH_SINK_EVENTS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../tests/sink/cdc_gen.h"
#include "cdcflow/convert.h"
#include "cdcflow/props.h"
#include "cdcflow/sink.h"

#define KEYS 200000
#define BATCH 100000

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The operation stream: op i on key k, delete or upsert with row values. */
typedef struct ops {
    gen g; /* rows model + value generator (its record lists stay unused) */
    uint64_t rng;
    size_t deletes, upserts;
} ops;

static void ops_init(ops *o) {
    gen_init(&o->g, 77, GEN_REWRITE, KEYS, 1, "bench.public.customers");
    o->rng = 1234567;
    o->deletes = o->upserts = 0;
}

/* Next op: returns the id; *del set for a delete; the row (after or before
 * image) in *row. */
static int32_t ops_next(ops *o, int *del, gen_row *row) {
    o->rng = o->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    int32_t id = (int32_t)((o->rng >> 33) % KEYS);
    unsigned dice = (unsigned)((o->rng >> 20) % 100);
    gen_row *w = &o->g.rows[id];
    o->g.clock++;
    if (w->present && dice < 25) { /* ~20% of all events once the table fills */
        *del = 1;
        *row = *w;
        w->present = 0;
        o->deletes++;
    } else {
        *del = 0;
        gen_fill(&o->g, w, id, gen_next_ver(&o->g, id, 0));
        *row = *w;
        o->upserts++;
    }
    return id;
}

/* The next event as JsonConverter bytes (key, value), as Debezium +
 * ExtractNewRecordState would have put them on the topic. */
static void event_bytes(ops *o, cf_converter *kc, cf_converter *vc, char **kb, size_t *kl, char **vb, size_t *vl) {
    int del;
    gen_row row;
    int32_t id = ops_next(o, &del, &row);
    cf_value *kv = cf_value_struct(cf_schema_ref(o->g.key_s));
    cf_value_struct_set(kv, "id", cf_value_int32(id), NULL);
    cf_value *vv = gen_row_value(&row, o->g.val_s, del ? "true" : "false", 0);
    cf_err e;
    cf_converter_from_connect(kc, o->g.topic, o->g.key_s, kv, kb, kl, &e);
    cf_converter_from_connect(vc, o->g.topic, o->g.val_s, vv, vb, vl, &e);
    cf_value_destroy(kv);
    cf_value_destroy(vv);
}

/* ---------------- the sink side ---------------- */

/* The JsonConverter (schemas.enable) for keys and values, as Connect's
 * workers have it for Debezium topics; 1 (reported) when it cannot be made. */
static int json_converters(cf_props **pp, cf_converter **kc, cf_converter **vc) {
    cf_err e;
    *pp = cf_props_new();
    cf_props_set(*pp, "schemas.enable", "true");
    if (cf_converter_new("json", *pp, true, kc, &e) || cf_converter_new("json", *pp, false, vc, &e)) {
        fprintf(stderr, "converter: %s\n", e.message);
        return 1;
    }
    return 0;
}

typedef struct run_result {
    double conv, route, db, total;
    size_t events, rows;
    uint64_t applies;
} run_result;

static int run_sink(const cf_sink_options *so, const cf_sink_target *tg, size_t n, run_result *res) {
    ops o;
    ops_init(&o);
    cf_props *pp;
    cf_converter *kc, *vc;
    cf_err e;
    if (json_converters(&pp, &kc, &vc)) return 1;
    cf_sink *s;
    if (cf_sink_new(so, tg, &s, &e)) {
        char b[2048];
        fprintf(stderr, "%s\n", cf_err_format(&e, b, sizeof b));
        return 1;
    }
    enum { CHUNK = 1000 };
    cf_record *recs[CHUNK];
    size_t nr = 0;
    double conv = 0, t_start = now();
    for (size_t i = 0; i < n; i++) {
        char *kb, *vb;
        size_t kl, vl;
        event_bytes(&o, kc, vc, &kb, &kl, &vb, &vl); /* not measured */
        /* conversion */
        double t0 = now();
        cf_record *r = cf_record_new();
        cf_record_set_topic(r, o.g.topic);
        cf_schema *ks, *vs;
        cf_value *k, *v;
        if (cf_converter_to_connect(kc, o.g.topic, kb, kl, &ks, &k, &e) ||
            cf_converter_to_connect(vc, o.g.topic, vb, vl, &vs, &v, &e)) {
            fprintf(stderr, "to_connect: %s\n", e.message);
            return 1;
        }
        cf_record_set_key(r, ks, k);
        cf_record_set_value(r, vs, v);
        r->partition = 0;
        r->offset = (int64_t)i;
        conv += now() - t0;
        free(kb), free(vb);
        recs[nr++] = r;
        if (nr == CHUNK || i + 1 == n) {
            if (cf_sink_put(s, recs, nr, &e)) {
                char b[2048];
                fprintf(stderr, "%s\n", cf_err_format(&e, b, sizeof b));
                return 1;
            }
            for (size_t j = 0; j < nr; j++) cf_record_destroy(recs[j]);
            nr = 0;
        }
    }
    if (cf_sink_flush(s, &e)) {
        char b[2048];
        fprintf(stderr, "%s\n", cf_err_format(&e, b, sizeof b));
        return 1;
    }
    double total = now() - t_start;
    cf_sink_stats st;
    cf_sink_get_stats(s, &st);
    cf_sink_destroy(s);
    res->conv = conv;
    res->route = st.t_route_s;
    res->db = st.t_db_s;
    res->total = conv + st.t_route_s + st.t_db_s;
    (void)total;
    res->events = n;
    res->applies = st.flushes;
    res->rows = 0;
    for (int32_t id = 0; id < KEYS; id++) res->rows += o.g.rows[id].present;
    printf("  routed: %" PRIu64 " upserts, %" PRIu64 " deletes; compacted away %" PRIu64 "; written %" PRIu64
           " in %" PRIu64 " flushes\n",
           st.upserts, st.deletes, st.compacted, st.written, st.flushes);
    cf_converter_destroy(kc), cf_converter_destroy(vc);
    cf_props_destroy(pp);
    gen_free(&o.g);
    return 0;
}

static void print_run(const char *what, const run_result *r) {
    printf("  %s: %zu events in %.2f s = %.0f events/s (conversion %.2f s, routing %.2f s, database %.2f s); "
           "%zu final rows\n",
           what, r->events, r->total, r->events / r->total, r->conv, r->route, r->db, r->rows);
}

/* ---------------- the SQLite bare loop ----------------
 * The baseline both benches compare the sink against: every event as a
 * prepared upsert (INSERT .. ON CONFLICT DO UPDATE) or delete, BATCH per
 * transaction, WAL, synchronous=NORMAL (final_only: only the final rows, as
 * perfect compaction would leave them). Returns the seconds; *rows the
 * table's rows at the end. */

static const char *COLS = "id, email, name, version, score, active, note, qty, created, tag";

static inline void bind_row_sq(sqlite3_stmt *st, const gen_row *w) {
    sqlite3_bind_int(st, 1, w->id);
    sqlite3_bind_text(st, 2, w->email, -1, SQLITE_STATIC);
    w->has_name ? sqlite3_bind_text(st, 3, w->name, -1, SQLITE_STATIC) : sqlite3_bind_null(st, 3);
    sqlite3_bind_int64(st, 4, w->version);
    w->has_score ? sqlite3_bind_double(st, 5, w->score) : sqlite3_bind_null(st, 5);
    sqlite3_bind_int(st, 6, w->active);
    w->has_note ? sqlite3_bind_text(st, 7, w->note, -1, SQLITE_STATIC) : sqlite3_bind_null(st, 7);
    w->has_qty ? sqlite3_bind_int(st, 8, w->qty) : sqlite3_bind_null(st, 8);
    sqlite3_bind_int64(st, 9, w->created);
    w->has_tag ? sqlite3_bind_text(st, 10, w->tag, -1, SQLITE_STATIC) : sqlite3_bind_null(st, 10);
}

static inline double sqlite_baseline(const char *path, size_t n, int final_only, size_t *rows) {
    unlink(path);
    sqlite3 *db;
    sqlite3_open(path, &db);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, NULL);
    sqlite3_exec(db,
                 "CREATE TABLE t (id INTEGER NOT NULL, email TEXT, name TEXT, version INTEGER, score REAL, "
                 "active BOOLEAN, note TEXT, qty INTEGER, created INTEGER, tag TEXT, PRIMARY KEY (id))",
                 NULL, NULL, NULL);
    sqlite3_stmt *up, *del;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO t (%s) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10) ON CONFLICT (id) DO UPDATE SET "
             "email=excluded.email, name=excluded.name, version=excluded.version, score=excluded.score, "
             "active=excluded.active, note=excluded.note, qty=excluded.qty, created=excluded.created, "
             "tag=excluded.tag",
             COLS);
    sqlite3_prepare_v2(db, sql, -1, &up, NULL);
    sqlite3_prepare_v2(db, "DELETE FROM t WHERE id = ?1", -1, &del, NULL);
    ops o;
    ops_init(&o);
    gen_row *rowsv = NULL;
    if (final_only) { /* compute the final rows first (not measured) */
        for (size_t i = 0; i < n; i++) {
            int d;
            gen_row r;
            ops_next(&o, &d, &r);
        }
    }
    double t0 = now();
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    if (final_only) {
        for (int32_t id = 0; id < KEYS; id++) {
            if (!o.g.rows[id].present) continue;
            bind_row_sq(up, &o.g.rows[id]);
            sqlite3_step(up);
            sqlite3_reset(up);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            int d;
            gen_row r;
            int32_t id = ops_next(&o, &d, &r);
            if (d) {
                sqlite3_bind_int(del, 1, id);
                sqlite3_step(del);
                sqlite3_reset(del);
            } else {
                bind_row_sq(up, &r);
                sqlite3_step(up);
                sqlite3_reset(up);
            }
            if ((i + 1) % BATCH == 0) sqlite3_exec(db, "COMMIT; BEGIN", NULL, NULL, NULL);
        }
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    double t = now() - t0;
    sqlite3_finalize(up), sqlite3_finalize(del);
    sqlite3_stmt *c;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &c, NULL);
    sqlite3_step(c);
    *rows = (size_t)sqlite3_column_int64(c, 0);
    sqlite3_finalize(c);
    sqlite3_close(db);
    free(rowsv);
    gen_free(&o.g);
    return t;
}

#endif
