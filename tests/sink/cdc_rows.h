/*
 * cdc_rows.h - a sink's target table read back as text rows in
 * gen_row_text's format (sorted by id), and compared with the generator's
 * model of the SOURCE table. Shared by the SQLite, PostgreSQL and Avro sink
 * tests so that every target is judged by the same comparison.
 *
 * Include after <cmocka.h> (the readers assert on their queries).
 */
#ifndef CDC_ROWS_H
#define CDC_ROWS_H

#include <libpq-fe.h>
#include <sqlite3.h>

#include "cdc_gen.h"

/* The rows of `table` in the SQLite database at path; NULL (n = 0) when
 * the table does not exist. Free with rows_free. */
static inline char **rows_sqlite(const char *path, const char *table, size_t *n) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT id, email, name, version, score, active, note, qty, created, tag FROM \"%s\" ORDER BY id", table);
    sqlite3_stmt *st;
    char **rows = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    cf_buf b = CF_BUF_INIT;
    while (sqlite3_step(st) == SQLITE_ROW) {
        cf_buf_reset(&b);
        for (int i = 0; i < 10; i++) {
            if (i) cf_buf_append_byte(&b, '|');
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_NULL: cf_buf_append_str(&b, "\\N"); break;
            case SQLITE_INTEGER: cf_buf_printf(&b, "%lld", (long long)sqlite3_column_int64(st, i)); break;
            case SQLITE_FLOAT: cf_buf_printf(&b, "%.17g", sqlite3_column_double(st, i)); break;
            default: cf_buf_append_str(&b, (const char *)sqlite3_column_text(st, i)); break;
            }
        }
        rows = realloc(rows, (*n + 1) * sizeof *rows);
        rows[(*n)++] = cf_xstrdup(b.data ? b.data : "");
    }
    cf_buf_free(&b);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

/* The rows of schema.rel on the PostgreSQL connection c (booleans as 0/1,
 * float8 re-rendered %.17g). Free with rows_free. */
static inline char **rows_pg(PGconn *c, const char *schema, const char *rel, size_t *n) {
    char q[512];
    snprintf(q, sizeof q,
             "SELECT id, email, name, version, score, active::int, note, qty, created, tag FROM %s.\"%s\" ORDER BY id",
             schema, rel);
    PGresult *r = PQexec(c, q);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) fprintf(stderr, "%s: %s\n", q, PQerrorMessage(c));
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    *n = (size_t)PQntuples(r);
    char **rows = calloc(*n + 1, sizeof *rows);
    cf_buf b = CF_BUF_INIT;
    for (size_t i = 0; i < *n; i++) {
        cf_buf_reset(&b);
        for (int col = 0; col < 10; col++) {
            if (col) cf_buf_append_byte(&b, '|');
            if (PQgetisnull(r, (int)i, col)) cf_buf_append_str(&b, "\\N");
            else if (col == 4) cf_buf_printf(&b, "%.17g", strtod(PQgetvalue(r, (int)i, col), NULL));
            else cf_buf_append_str(&b, PQgetvalue(r, (int)i, col));
        }
        rows[i] = cf_xstrdup(b.data);
    }
    cf_buf_free(&b);
    PQclear(r);
    return rows;
}

static inline void rows_free(char **r, size_t n) {
    for (size_t i = 0; i < n; i++) free(r[i]);
    free(r);
}

/* The number of differences between the target rows and the model: rows
 * missing, differing or extra. Prints the first few unless quiet. */
static inline size_t rows_diff(const gen *g, char **rows, size_t n, int quiet) {
    size_t diffs = 0, j = 0;
    cf_buf b = CF_BUF_INIT;
    for (int32_t id = 0; id < g->n_keys; id++) {
        if (!g->rows[id].present) continue;
        gen_row_text(&g->rows[id], &b);
        if (j >= n || strcmp(rows[j], b.data) != 0) {
            if (diffs++ < 5 && !quiet)
                fprintf(stderr, "DIFF id %d\n  source: %s\n  target: %s\n", id, b.data, j < n ? rows[j] : "(none)");
            if (j < n && atoi(rows[j]) == id) j++; /* resync on id */
            continue;
        }
        j++;
    }
    if (j < n) {
        diffs += n - j;
        if (!quiet) fprintf(stderr, "%zu extra target rows, first: %s\n", n - j, rows[j]);
    }
    cf_buf_free(&b);
    return diffs;
}

#endif
