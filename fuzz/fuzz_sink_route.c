/*
 * fuzz_sink_route.c - the CDC sink on arbitrary converted records: routing,
 * table creation and evolution, cells and the SQLite target (in memory).
 *
 * Input: "<key JSON>\n<value JSON>" (JsonConverter with schemas.enable=true;
 * an empty value line is a tombstone). Each input runs twice through a fresh
 * engine on ":memory:" (offset order and `version` order) as records at
 * offsets 0 and 1, then flushes. Any outcome but a crash, a sanitizer report
 * or a leak is fine: bad records must come back as errors.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/convert.h"
#include "cdcflow/log.h"
#include "cdcflow/props.h"
#include "cdcflow/sink.h"

static cf_code tolerate(void *ud, const cf_record *rec, const cf_err *problem, cf_err *err) {
    (void)ud, (void)rec, (void)problem, (void)err;
    return CF_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int init;
    if (!init) cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL), init = 1;
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl) return 0;
    size_t kl = (size_t)(nl - data), vl = size - kl - 1;
    cf_props *pp = cf_props_new();
    cf_props_set(pp, "schemas.enable", "true");
    cf_converter *kc = NULL, *vc = NULL;
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "fuzz.public.t");
    if (cf_converter_new("json", pp, true, &kc, NULL) || cf_converter_new("json", pp, false, &vc, NULL)) goto out;
    cf_schema *ks = NULL, *vs = NULL;
    cf_value *k = NULL, *v = NULL;
    if (cf_converter_to_connect(kc, r->topic, (const char *)data, kl, &ks, &k, NULL)) goto out;
    cf_record_set_key(r, ks, k);
    if (vl && cf_converter_to_connect(vc, r->topic, (const char *)nl + 1, vl, &vs, &v, NULL)) goto out;
    cf_record_set_value(r, vs, v);
    r->partition = 0;
    for (int mode = 0; mode < 2; mode++) {
        cf_sink_options o;
        cf_sink_options_default(&o);
        o.sqlite_path = ":memory:";
        o.seq_field = mode ? "version" : NULL;
        o.sanitize_field_names = mode;
        cf_sink *s;
        if (cf_sink_new(&o, &cf_sink_target_sqlite, &s, NULL)) continue;
        cf_sink_set_reporter(s, tolerate, NULL);
        cf_route_info ri;
        (void)cf_sink_route_one(&o, r, &ri, NULL);
        r->offset = 0;
        cf_record *one[1] = {r};
        (void)cf_sink_put(s, one, 1, NULL);
        r->offset = 1;
        (void)cf_sink_put(s, one, 1, NULL);
        (void)cf_sink_flush(s, NULL);
        cf_sink_destroy(s);
    }
out:
    cf_record_destroy(r);
    cf_converter_destroy(kc);
    cf_converter_destroy(vc);
    cf_props_destroy(pp);
    return 0;
}
