/*
 * fuzz_sidecar_state.c - libFuzzer target for the sidecar's parsers of text
 * and bytes that come from files and requests: the stored state (its
 * pending-digest blob, as base64 in a source offset), token ranges, the
 * service configuration (JSON or .properties), and single CQL values of
 * every type as cells hold them. The first byte picks the parser (and for
 * values the type). Must never crash, leak or read out of bounds.
 * Seeds: fuzz/corpus/fuzz_sidecar_state/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/props.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"
#include "cdcflow/text.h"

static const char *const TYPES[] = {
    "int", "bigint", "text", "blob", "boolean", "date", "decimal", "double", "duration", "float", "inet",
    "smallint", "time", "timestamp", "timeuuid", "tinyint", "uuid", "varint", "frozen<list<int>>",
    "frozen<set<text>>", "frozen<map<int, text>>", "frozen<tuple<int, text, frozen<list<int>>>>",
    "vector<float, 3>", "vector<text, 2>", "frozen<map<text, frozen<list<decimal>>>>", "frozen<list<varint>>",
};
#define N_TYPES (sizeof TYPES / sizeof *TYPES)

static cf_sc_events *ev;
static cf_cql_type *types[N_TYPES];
static cf_schema *schemas[N_TYPES];
static cf_sc_engine *engine;
static char dir[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL);
    cf_sc_events_opts o = {.decimal_scale = 4, .decimal_scale_set = true};
    ev = cf_sc_events_new(&o);
    for (size_t i = 0; i < N_TYPES; i++) {
        cf_err err;
        if (cf_cql_type_parse(TYPES[i], "ks", NULL, &types[i], &err)) abort();
        schemas[i] = cf_sc_cql_schema(ev, types[i], true);
    }
    snprintf(dir, sizeof dir, "/tmp/cf-fuzz-sidecar-%d", (int)getpid());
    mkdir(dir, 0755);
    static cf_cass_schema *s;
    s = cf_cass_schema_new();
    const char *dirs[1] = {dir};
    cf_sc_engine_opts eo = {.dirs = dirs, .n_dirs = 1, .schema = s, .cl = CF_SC_ONE, .rf = 3, .max_pending = 1000,
                            .once = true};
    cf_err err;
    if (cf_sc_engine_new(&eo, &engine, &err)) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    cf_err err;
    switch (data[0] % 4) {
    case 0: { /* a stored state whose pending blob is these bytes */
        cf_buf b64 = CF_BUF_INIT;
        cf_base64_encode(&b64, p, n);
        cf_value *m = cf_value_map();
        cf_value_map_put(m, cf_value_string("version"), cf_value_int64(1));
        cf_value_map_put(m, cf_value_string("replicas"), cf_value_int64(1));
        cf_value_map_put(m, cf_value_string("r0.name"), cf_value_string(dir));
        cf_value_map_put(m, cf_value_string("r0.segment"), cf_value_int64(5));
        cf_value_map_put(m, cf_value_string("r0.position"), cf_value_int64(0));
        cf_value_map_put(m, cf_value_string("r0.done"), cf_value_int64(0));
        cf_value_map_put(m, cf_value_string("pending"), cf_value_string(b64.data ? b64.data : ""));
        cf_sc_engine_restore(engine, m, &err);
        cf_value_destroy(m);
        cf_buf_free(&b64);
        break;
    }
    case 1: { /* token ranges */
        char *t = cf_xstrndup((const char *)p, n);
        cf_sc_ranges r;
        if (cf_sc_ranges_parse(t, &r, &err) == CF_OK) cf_sc_ranges_free(&r);
        free(t);
        break;
    }
    case 2: { /* the service configuration */
        cf_props *c = cf_props_new(), *w = cf_props_new();
        cf_sc_service_config((const char *)p, n, "fuzz", c, w, &err);
        cf_props_destroy(c);
        cf_props_destroy(w);
        break;
    }
    default: { /* one value of a type */
        if (n < 1) return 0;
        size_t t = p[0] % N_TYPES;
        cf_value *v = NULL;
        if (cf_sc_cql_to_value(ev, types[t], schemas[t], p + 1, n - 1, &v, &err) == CF_OK) cf_value_destroy(v);
        break;
    }
    }
    return 0;
}
