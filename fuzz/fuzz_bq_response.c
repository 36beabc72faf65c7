/*
 * fuzz_bq_response.c - the AppendRowsResponse decoder (bytes from the
 * network: src/sink/bigquery/bq_proto.c) on arbitrary input. Seeds are
 * responses made by Google's own AppendRowsResponse class
 * (tests/sink/bigquery/bq_responses.py). Any outcome but a crash, a
 * sanitizer report or a leak is fine.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cdcflow/bigquery.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cf_bq_append_resp r;
    cf_err e;
    if (cf_bq_append_resp_decode(data, size, &r, &e) == CF_OK) {
        for (size_t i = 0; i < r.n_row_errors; i++)
            if (r.row_errors[i].index < 0) abort(); /* the decoder refuses negative indexes */
    }
    cf_bq_append_resp_free(&r);
    return 0;
}
