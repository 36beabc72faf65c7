/*
 * extract_fuzz.h - the body shared by the extractor fuzz targets: run one
 * extractor over arbitrary bytes. It may only ever return records,
 * CF_ERR_INVALID for a bad record (and then continue) or another code that
 * ends the object; never crash, never loop. The first input byte picks the
 * options and the compression.
 */
#ifndef CF_EXTRACT_FUZZ_H
#define CF_EXTRACT_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "cdcflow/source_extract.h"

static inline int cf_fuzz_extract(cf_input_format fmt, const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    cf_props *o = cf_props_new();
    if (data[0] & 1) cf_props_set(o, "extractor.csv.headers.enabled", "false");
    if (data[0] & 2) cf_props_set(o, "extractor.csv.headers", "a,b,,a");
    cf_compression c = (cf_compression)((data[0] >> 2) % 4);
    cf_reader *r;
    cf_reader_open_mem(data + 1, size - 1, "fuzz", c, &r, NULL);
    cf_extractor *x;
    if (cf_extractor_new(fmt, o, r, 0, 0, 0, &x, NULL) == CF_OK) {
        for (int i = 0; i < 100000; i++) {
            cf_schema *s;
            cf_value *v;
            cf_code rc = cf_extractor_next(x, &s, &v, NULL, NULL);
            if (rc == CF_OK) {
                cf_value_destroy(v);
                cf_schema_unref(s);
            } else if (rc != CF_ERR_INVALID) {
                break;
            }
        }
        cf_extractor_destroy(x);
    }
    cf_props_destroy(o);
    return 0;
}

#endif
