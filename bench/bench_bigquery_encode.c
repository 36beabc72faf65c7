/*
 * bench_bigquery_encode.c - the BigQuery target's hot path: 10-column rows
 * (tests/sink/cdc_gen.h's customers: 4 INT64, 1 FLOAT64, 1 BOOL, 4 STRING
 * of which up to 3 NULL) encoded to the writer format (protobuf rows with
 * _CHANGE_TYPE and _CHANGE_SEQUENCE_NUMBER, wrapped as ProtoRows entries),
 * on one core.
 *
 *   encode     cf_bq_encode_row + cf_bq_rows_add over the cells, as apply
 *              does, rows/s and MB/s of protobuf written
 *   baseline   copying the same cells' bytes (text as is, numbers as 8
 *              bytes) into one buffer: the least any encoder must do; the
 *              ratio encode/copy says what the wire format costs on top
 *
 * With BQ_DOUBLE=1 (needs CF_TEST_PYTHON, the test venv): the whole sink
 * (routing, compaction, encoding, AppendRows over gRPC) against the
 * BigQuery TEST DOUBLE (tests/bigquery/bq_test_server.py, Python: its row
 * decoding bounds the figure) in rows/s and MB/s, with the share of time in
 * routing, encoding (measured rate times rows) and the rest (network and
 * the double), against the same records through the SQLite target in the
 * same run. Records are built in memory (no converter).
 *
 *   build/bench/bench_bigquery_encode [N]     (default 1,000,000 rows)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../tests/sink/cdc_gen.h"
#include "cdcflow/bigquery.h"
#include "cdcflow/log.h"
#include "cdcflow/sink.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

#define NCOL 10

static cf_bq_field cols[NCOL] = {
    {"id", CF_BQ_INT64, CF_BQ_REQUIRED, NULL, 0},      {"email", CF_BQ_STRING, CF_BQ_NULLABLE, NULL, 0},
    {"name", CF_BQ_STRING, CF_BQ_NULLABLE, NULL, 0},   {"version", CF_BQ_INT64, CF_BQ_NULLABLE, NULL, 0},
    {"score", CF_BQ_FLOAT64, CF_BQ_NULLABLE, NULL, 0}, {"active", CF_BQ_BOOL, CF_BQ_NULLABLE, NULL, 0},
    {"note", CF_BQ_STRING, CF_BQ_NULLABLE, NULL, 0},   {"qty", CF_BQ_INT64, CF_BQ_NULLABLE, NULL, 0},
    {"created", CF_BQ_INT64, CF_BQ_NULLABLE, NULL, 0}, {"tag", CF_BQ_STRING, CF_BQ_NULLABLE, NULL, 0},
};

static void fill_cells(const gen_row *w, cf_cell *c) {
    memset(c, 0, NCOL * sizeof *c);
    c[0] = (cf_cell){CF_CELL_INT, 0, {.i = w->id}};
    c[1] = (cf_cell){CF_CELL_TEXT, (uint32_t)strlen(w->email), {.p = w->email}};
    if (w->has_name) c[2] = (cf_cell){CF_CELL_TEXT, (uint32_t)strlen(w->name), {.p = w->name}};
    c[3] = (cf_cell){CF_CELL_INT, 0, {.i = w->version}};
    if (w->has_score) c[4] = (cf_cell){CF_CELL_REAL, 0, {.f = w->score}};
    c[5] = (cf_cell){CF_CELL_INT, 0, {.i = w->active}};
    if (w->has_note) c[6] = (cf_cell){CF_CELL_TEXT, (uint32_t)strlen(w->note), {.p = w->note}};
    if (w->has_qty) c[7] = (cf_cell){CF_CELL_INT, 0, {.i = w->qty}};
    c[8] = (cf_cell){CF_CELL_INT, 0, {.i = w->created}};
    if (w->has_tag) c[9] = (cf_cell){CF_CELL_TEXT, (uint32_t)strlen(w->tag), {.p = w->tag}};
}

static double run_encode(long n, const cf_cell *cells, size_t nrows, const char (*seqs)[CF_SEQ_TEXT_MAX],
                         size_t *bytes) {
    cf_bq_rowenc *enc;
    cf_err e;
    if (cf_bq_rowenc_new(cols, NCOL, true, &enc, &e)) exit(1);
    cf_buf rows = CF_BUF_INIT, row = CF_BUF_INIT;
    size_t total = 0;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        size_t k = (size_t)i % nrows;
        cf_buf_reset(&row);
        if (cf_bq_encode_row(enc, cells + k * NCOL, NCOL, (i & 7) ? "UPSERT" : "DELETE", seqs[k], &row, &e)) {
            fprintf(stderr, "encode: %s\n", e.message);
            exit(1);
        }
        cf_bq_rows_add(&rows, row.data, row.len);
        if (rows.len > (9u << 20)) total += rows.len, cf_buf_reset(&rows); /* one request's worth */
    }
    double t = now() - t0;
    *bytes = total + rows.len;
    cf_buf_free(&rows), cf_buf_free(&row);
    cf_bq_rowenc_destroy(enc);
    return t;
}

static double run_copy(long n, const cf_cell *cells, size_t nrows, const char (*seqs)[CF_SEQ_TEXT_MAX]) {
    cf_buf out = CF_BUF_INIT;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        const cf_cell *c = cells + ((size_t)i % nrows) * NCOL;
        for (int j = 0; j < NCOL; j++) {
            if (c[j].kind == CF_CELL_TEXT) cf_buf_append(&out, c[j].u.p, c[j].len);
            else if (c[j].kind != CF_CELL_NULL) cf_buf_append(&out, &c[j].u.i, 8);
        }
        cf_buf_append(&out, seqs[(size_t)i % nrows], 16);
        if (out.len > (9u << 20)) cf_buf_reset(&out);
    }
    double t = now() - t0;
    cf_buf_free(&out);
    return t;
}

/* ---------------- against the test double ---------------- */

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h> /* bq_double.h asserts with cmocka's macros */

#include "../tests/sink/bigquery/bq_double.h"

static void sink_run(const cf_sink_options *o, const cf_sink_target *tg, gen *g, double *secs, cf_sink_stats *st) {
    cf_sink *s;
    cf_err e;
    if (cf_sink_new(o, tg, &s, &e)) {
        fprintf(stderr, "sink: %s\n", e.message);
        exit(1);
    }
    double t0 = now();
    for (size_t i = 0; i < g->n_recs[0]; i += 20000) {
        size_t k = g->n_recs[0] - i < 20000 ? g->n_recs[0] - i : 20000;
        if (cf_sink_put(s, g->recs[0] + i, k, &e) || cf_sink_flush(s, &e)) {
            char b[2048];
            fprintf(stderr, "%s\n", cf_err_format(&e, b, sizeof b));
            exit(1);
        }
    }
    *secs = now() - t0;
    cf_sink_get_stats(s, st);
    cf_sink_destroy(s);
}

static void bench_double(long n, double enc_s_per_row, double bytes_per_row) {
    bq_double d;
    bqd_start(&d, NULL);
    gen g;
    gen_init(&g, 7, GEN_REWRITE, (int32_t)(n > 100000 ? n : 100000), 1, "bench.public.customers");
    g.no_toast = 1;
    while (g.total < (size_t)n) gen_step(&g);
    cf_sink_options o;
    bqd_options(&d, &o);
    o.batch_max_records = 20000;
    double t;
    cf_sink_stats st;
    sink_run(&o, &cf_sink_target_bigquery, &g, &t, &st);
    double enc = enc_s_per_row * (double)st.written;
    printf("bigquery sink vs test double: %zu records, %" PRIu64 " rows written in %.2f s: %.0f rows/s, %.1f MB/s "
           "(protobuf)\n",
           g.total, st.written, t, st.written / t, st.written * bytes_per_row / t / 1e6);
    printf("  share: routing %.1f%%, encoding %.1f%% (derived), network and the double %.1f%%\n",
           100 * st.t_route_s / t, 100 * enc / t, 100 * (st.t_db_s - enc) / t);
    bqd_stop(&d);
    /* baseline: the same records into the SQLite target (tmpfs) */
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/cf-bench-bq-%d.db", (int)getpid());
    cf_sink_options so;
    cf_sink_options_default(&so);
    so.sqlite_path = path;
    so.batch_max_records = 20000;
    double ts;
    cf_sink_stats sst;
    sink_run(&so, &cf_sink_target_sqlite, &g, &ts, &sst);
    unlink(path);
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", path), unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path), unlink(wal);
    printf("  baseline sqlite target (tmpfs): %.2f s, %.0f rows/s; bigquery/sqlite time ratio %.2f\n", ts,
           sst.written / ts, t / ts);
    gen_free(&g);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    cf_log_setup(CF_LOG_WARN, CF_LOG_TEXT, NULL);
    /* rows: the generator's model rows, varied */
    size_t nrows = 65536;
    gen g;
    gen_init(&g, 1, GEN_REWRITE, (int32_t)nrows, 1, "t");
    cf_cell *cells = malloc(nrows * NCOL * sizeof *cells);
    char (*seqs)[CF_SEQ_TEXT_MAX] = malloc(nrows * sizeof *seqs);
    for (size_t i = 0; i < nrows; i++) {
        gen_fill(&g, &g.rows[i], (int32_t)i, (int64_t)i * 3);
        fill_cells(&g.rows[i], cells + i * NCOL);
        cf_seq s = {{(uint64_t)i * 3, (uint64_t)i * 7}, 2};
        cf_seq_format(&s, seqs[i]);
    }
    size_t bytes;
    run_encode(n / 10, cells, nrows, seqs, &bytes); /* warm up */
    double te = 1e9, tc = 1e9;
    for (int r = 0; r < 3; r++) { /* best of three: the machine is shared */
        double a = run_encode(n, cells, nrows, seqs, &bytes), b = run_copy(n, cells, nrows, seqs);
        if (a < te) te = a;
        if (b < tc) tc = b;
    }
    printf("encode 10-column rows to the writer format (1 core): %ld rows in %.3f s: %.2f M rows/s, %.0f MB/s, "
           "%.1f bytes/row\n",
           n, te, n / te / 1e6, bytes / te / 1e6, (double)bytes / n);
    printf("  baseline copy of the cells' bytes: %.3f s, %.2f M rows/s; encode/copy time ratio %.2f\n", tc,
           n / tc / 1e6, te / tc);
    if (getenv("BQ_DOUBLE") && *getenv("BQ_DOUBLE") == '1') {
        long nd = argc > 2 ? atol(argv[2]) : 100000;
        bench_double(nd, te / n, (double)bytes / n);
    }
    free(cells), free(seqs);
    gen_free(&g);
    return 0;
}
