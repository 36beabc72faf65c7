/*
 * fuzz_bq_table.c - a BigQuery Table resource (tables.get's JSON, from the
 * network) through the parser, then the writer schema and the row encoder
 * built from it, with every column given the same text cell (JSON for
 * RECORD / REPEATED columns, literals for the others).
 *
 * Input: "<table JSON>\n<cell text>". Any outcome but a crash, a sanitizer
 * report or a leak is fine.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/bigquery.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nl = memchr(data, '\n', size);
    size_t jl = nl ? (size_t)(nl - data) : size;
    cf_bq_table t;
    cf_err e;
    if (cf_bq_table_parse((const char *)data, jl, &t, &e) != CF_OK) return 0;
    cf_buf d = CF_BUF_INIT;
    (void)cf_bq_descriptor(t.fields, t.n_fields, true, &d, &e);
    cf_bq_rowenc *enc;
    if (cf_bq_rowenc_new(t.fields, t.n_fields, true, &enc, &e) == CF_OK) {
        size_t cl = nl ? size - jl - 1 : 0;
        cf_cell *cells = calloc(t.n_fields ? t.n_fields : 1, sizeof *cells);
        for (size_t i = 0; i < t.n_fields; i++) {
            cells[i].kind = CF_CELL_TEXT;
            cells[i].len = (uint32_t)cl;
            cells[i].u.p = nl ? (const char *)nl + 1 : "";
        }
        cf_buf row = CF_BUF_INIT;
        (void)cf_bq_encode_row(enc, cells, t.n_fields, "UPSERT", "1", &row, &e);
        cf_buf_free(&row);
        free(cells);
        cf_bq_rowenc_destroy(enc);
    }
    cf_buf_free(&d);
    cf_bq_table_free(&t);
    return 0;
}
