/*
 * fuzz_cassandra_mutation.c - libFuzzer target: arbitrary bytes as one
 * commit log mutation, decoded against the schema of the Cassandra 5.0
 * fixtures (every CQL type, statics, collections, UDTs, counters, a dropped
 * column) and rendered as JSON. The first byte picks the messaging version
 * (10, 12 or 13). Must never crash, leak or read out of bounds; errors are fine.
 * Seeds: fuzz/corpus/fuzz_cassandra_mutation/ (entries of the real segments).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"

#include "cass_fuzz_schema.h"

static cf_cass_schema *schema;
static cf_cass_decoder *dec;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL);
    schema = cf_cass_schema_new();
    cf_err err;
    if (cf_cass_ddl_parse(schema, SCHEMA, strlen(SCHEMA), "fuzz-schema.cql", &err) != CF_OK) abort();
    dec = cf_cass_decoder_new(schema);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int versions[3] = {10, 12, 13};
    int mv = versions[data[0] % 3];
    cf_cass_mutation *m;
    uint8_t unknown[16];
    cf_err err;
    cf_cass_decode_mutation(dec, data + 1, size - 1, mv, &m, unknown, &err);
    cf_buf out = CF_BUF_INIT;
    for (size_t i = 0; i < m->n_updates; i++) cf_cass_update_to_json(&m->updates[i], "fuzz.log", 0, &out);
    cf_buf_free(&out);
    return 0;
}
