/*
 * fuzz_bq_write_stream.c - the WriteStream decoder (GetWriteStream's
 * answer, bytes from the network: src/sink/bigquery/bq_proto.c) on
 * arbitrary input. Seeds are WriteStream messages made by Google's own
 * class (tests/sink/bigquery/bq_responses.py). Any outcome but a crash, a
 * sanitizer report or a leak is fine.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/bigquery.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cf_bq_write_stream w;
    cf_err e;
    if (cf_bq_write_stream_decode(data, size, &w, &e) == CF_OK) {
        for (size_t i = 0; i < w.n_columns; i++)
            if (!w.columns[i]) abort(); /* every column has a name */
        if (w.n_columns && !w.has_schema) abort();
    }
    cf_bq_write_stream_free(&w);
    return 0;
}
