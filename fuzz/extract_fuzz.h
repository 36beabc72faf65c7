/*
 * extract_fuzz.h - the body shared by the CSV and JSON lines (and record
 * file envelope) extractor fuzz targets: run one extractor over arbitrary
 * bytes. The first input byte picks the options and the compression.
 *
 * What must hold:
 *   - the extractor only ever returns records, CF_ERR_INVALID for a bad
 *     record (reported with object, line and byte, and then it continues),
 *     CF_ERR_EOF, or, for a compressed object, a reader error that ends it;
 *     never a crash, never a loop;
 *   - positions move forward: each result starts where the one before ended
 *     or later (blank lines are skipped), ends after it starts, and the
 *     record numbers count up by one;
 *   - resuming at any record's end (byte position, record number, line: what
 *     the offset entry stores) gives exactly the results, values and
 *     positions the first pass gave after that record. This is how a
 *     half-read object restarts; a difference aborts (a resume bug, not
 *     only a crash, is a finding). Checked when the first pass reached the
 *     end of the object (not after a decompression failure).
 */
#ifndef CF_EXTRACT_FUZZ_H
#define CF_EXTRACT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/source_extract.h"

#define CF_FUZZ_MAX_STEPS 4000

typedef struct cf_fuzz_step {
    cf_code rc;
    cf_extract_pos pos;
    cf_value *value; /* CF_OK only (may be NULL: a JSON null line, a tombstone) */
} cf_fuzz_step;

/* One pass from `start`; fills out[] (values owned by the caller), returns
 * the number of results and in *end_rc the code that ended the pass. */
static size_t cf_fuzz_pass(cf_input_format fmt, const cf_props *o, const uint8_t *data, size_t size, cf_compression c,
                           uint64_t start, uint64_t idx, uint64_t line, cf_fuzz_step *out, cf_code *end_rc) {
    cf_reader *r;
    cf_reader_open_mem(data, size, "fuzz", c, &r, NULL);
    cf_extractor *x;
    size_t n = 0;
    *end_rc = CF_ERR_EOF;
    cf_err err;
    if ((*end_rc = cf_extractor_new(fmt, o, r, start, idx, line, &x, &err)) != CF_OK) return 0;
    *end_rc = CF_ERR_EOF;
    while (n < CF_FUZZ_MAX_STEPS) {
        cf_schema *s;
        cf_value *v;
        cf_extract_pos pos;
        memset(&pos, 0, sizeof pos);
        cf_code rc = cf_extractor_next(x, &s, &v, &pos, &err);
        if (rc != CF_OK && rc != CF_ERR_INVALID) {
            if (rc != CF_ERR_EOF && c == CF_COMPRESSION_NONE) {
                fprintf(stderr, "uncompressed object ended with code %d: %s\n", (int)rc, err.message);
                abort();
            }
            *end_rc = rc;
            break;
        }
        if (rc == CF_ERR_INVALID && (!err.message[0] || !strstr(err.where, "line "))) {
            fprintf(stderr, "a bad record's error must say what and where: \"%s\" at \"%s\"\n", err.message, err.where);
            abort();
        }
        cf_schema_unref(s);
        out[n].rc = rc;
        out[n].pos = pos;
        out[n].value = rc == CF_OK ? v : NULL;
        n++;
    }
    if (n == CF_FUZZ_MAX_STEPS) *end_rc = CF_ERR_INTERNAL; /* not the whole object */
    cf_extractor_destroy(x);
    return n;
}

static void cf_fuzz_free_steps(cf_fuzz_step *s, size_t n) {
    for (size_t i = 0; i < n; i++) cf_value_destroy(s[i].value);
}

static inline int cf_fuzz_extract(cf_input_format fmt, const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    cf_props *o = cf_props_new();
    if (data[0] & 1) cf_props_set(o, "extractor.csv.headers.enabled", "false");
    if (data[0] & 2) cf_props_set(o, "extractor.csv.headers", "a,b,,a");
    cf_compression c = (cf_compression)((data[0] >> 2) % 4);
    static cf_fuzz_step first[CF_FUZZ_MAX_STEPS], again[CF_FUZZ_MAX_STEPS];
    cf_code end_rc, end2;
    size_t n = cf_fuzz_pass(fmt, o, data + 1, size - 1, c, 0, 0, 0, first, &end_rc);
    for (size_t i = 0; i < n; i++) {
        const cf_extract_pos *p = &first[i].pos;
        if (p->end <= p->start || (i > 0 && (p->start < first[i - 1].pos.end || p->index != first[i - 1].pos.index + 1))) {
            fprintf(stderr, "result %zu: positions do not move forward (start %llu, end %llu, index %llu)\n", i,
                    (unsigned long long)p->start, (unsigned long long)p->end, (unsigned long long)p->index);
            abort();
        }
    }
    if (end_rc == CF_ERR_EOF) {
        /* resume after a few records (all of them would make large inputs slow) */
        for (size_t i = 0; i < n; i += 1 + n / 8) {
            if (first[i].rc != CF_OK) continue;
            const cf_extract_pos *p = &first[i].pos;
            size_t m = cf_fuzz_pass(fmt, o, data + 1, size - 1, c, p->end, p->index + 1, p->end_line, again, &end2);
            if (m != n - i - 1 || end2 != CF_ERR_EOF) {
                fprintf(stderr, "resume after record %zu: %zu results ending with %d, the first pass had %zu\n", i, m,
                        (int)end2, n - i - 1);
                abort();
            }
            for (size_t j = 0; j < m; j++) {
                const cf_fuzz_step *a = &again[j], *b = &first[i + 1 + j];
                if (a->rc != b->rc || memcmp(&a->pos, &b->pos, sizeof a->pos) != 0 || !a->value != !b->value ||
                    (a->value && !cf_value_equal(a->value, b->value))) {
                    fprintf(stderr, "resume after record %zu: result %zu differs (byte %llu vs %llu)\n", i, j,
                            (unsigned long long)a->pos.start, (unsigned long long)b->pos.start);
                    abort();
                }
            }
            cf_fuzz_free_steps(again, m);
        }
    }
    cf_fuzz_free_steps(first, n);
    cf_props_destroy(o);
    return 0;
}

#endif
