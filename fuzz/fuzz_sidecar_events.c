/*
 * fuzz_sidecar_events.c - libFuzzer target: arbitrary bytes as one commit log
 * mutation (first byte: messaging version 10, 12 or 13), decoded against the
 * schema of the Cassandra 5.0 fixtures, then every partition update through
 * the sidecar: its canonical digest and its change events (Connect values
 * from the cell bytes: frozen collections, tuples, UDTs, decimals, vectors).
 * Must never crash, leak or read out of bounds; errors are fine.
 * Seeds: fuzz/corpus/fuzz_sidecar_events/ (entries of the real segments).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"

#include "cass_fuzz_schema.h"

static cf_cass_schema *schema;
static cf_cass_decoder *dec;
static cf_sc_digester *dg;
static cf_sc_events *ev;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL);
    schema = cf_cass_schema_new();
    cf_err err;
    if (cf_cass_ddl_parse(schema, SCHEMA, strlen(SCHEMA), "fuzz-schema.cql", &err) != CF_OK) abort();
    dec = cf_cass_decoder_new(schema);
    dg = cf_sc_digester_new();
    ev = cf_sc_events_new(NULL);
    return 0;
}

static cf_record *new_rec(void *arg) {
    (void)arg;
    return cf_record_new();
}

static void emit(void *arg, cf_record *r, cf_sc_op op) {
    (void)arg, (void)op;
    cf_record_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int versions[3] = {10, 12, 13};
    cf_cass_mutation *m;
    cf_err err;
    cf_cass_decode_mutation(dec, data + 1, size - 1, versions[data[0] % 3], &m, NULL, &err);
    cf_sc_emitter em = {new_rec, emit, NULL};
    for (size_t i = 0; i < m->n_updates; i++) {
        uint8_t d[CF_SC_DIGEST_LEN];
        int64_t ts;
        cf_sc_digest(dg, &m->updates[i], d, &ts);
        cf_sc_events_build(ev, &m->updates[i], &em, NULL, &err);
    }
    return 0;
}
