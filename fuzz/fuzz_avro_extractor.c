/*
 * fuzz_avro_extractor.c - the Avro object container extractor on arbitrary
 * bytes. Input: one option byte, then the object. Option bits 0-1 pick the
 * object's compression (file.compression.type; mostly 0 = none in the seeds).
 *
 * What must hold: the extractor only ever returns records, CF_ERR_INVALID
 * (a reported bad block/datum, then it continues) or CF_ERR_EOF; it never
 * crashes, never loops, never grows memory past one block; and resuming at
 * any record's end position (block + datum, see source_extract.h) gives
 * exactly the records, errors and positions the first pass gave after it.
 * A difference aborts (a resume bug, not just a crash, is a finding).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/source_extract.h"

#define MAX_STEPS 20000

typedef struct step {
    cf_code rc;
    cf_extract_pos pos;
} step;

/* Read up to MAX_STEPS results; returns how many. */
static size_t pass(const uint8_t *data, size_t size, cf_compression c, uint64_t start, uint64_t idx, uint64_t line,
                   step *out) {
    cf_reader *r;
    cf_reader_open_mem(data, size, "fuzz.avro", c, &r, NULL);
    cf_extractor *x;
    if (cf_extractor_new(CF_FORMAT_AVRO, NULL, r, start, idx, line, &x, NULL) != CF_OK) abort();
    size_t n = 0;
    while (n < MAX_STEPS) {
        cf_schema *s;
        cf_value *v;
        cf_extract_pos pos;
        memset(&pos, 0, sizeof pos);
        cf_code rc = cf_extractor_next(x, &s, &v, &pos, NULL);
        if (rc == CF_OK) {
            cf_value_destroy(v);
            cf_schema_unref(s);
        }
        if (rc != CF_OK && rc != CF_ERR_INVALID) {
            if (rc != CF_ERR_EOF && c == CF_COMPRESSION_NONE) abort(); /* only a reader failure may end otherwise */
            break;
        }
        out[n].rc = rc;
        out[n].pos = pos;
        n++;
    }
    cf_extractor_destroy(x);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    cf_compression c = (cf_compression)(data[0] & 3);
    static step first[MAX_STEPS], again[MAX_STEPS];
    size_t n = pass(data + 1, size - 1, c, 0, 0, 0, first);
    if (n == MAX_STEPS || c != CF_COMPRESSION_NONE) return 0;
    /* resume after a few records (all of them would make small inputs slow) */
    for (size_t i = 0; i < n; i += 1 + n / 8) {
        if (first[i].rc != CF_OK) continue;
        const cf_extract_pos *p = &first[i].pos;
        size_t m = pass(data + 1, size - 1, c, p->end, p->index + 1, p->end_line, again);
        if (m != n - i - 1) {
            fprintf(stderr, "resume after record %zu: %zu results, the first pass had %zu\n", i, m, n - i - 1);
            abort();
        }
        for (size_t j = 0; j < m; j++)
            if (again[j].rc != first[i + 1 + j].rc ||
                memcmp(&again[j].pos, &first[i + 1 + j].pos, sizeof(cf_extract_pos)) != 0) {
                fprintf(stderr, "resume after record %zu: result %zu differs\n", i, j);
                abort();
            }
    }
    return 0;
}
