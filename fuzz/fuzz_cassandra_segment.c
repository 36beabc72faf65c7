/*
 * fuzz_cassandra_segment.c - libFuzzer target: arbitrary bytes as a whole
 * commit log segment file (header, sync sections, plain / compressed /
 * encrypted bodies, entries), read to the end with a fixed AES key (and again
 * with a cdc index drawn from the input), every
 * entry decoded against the CommitLogUpgradeTest table and rendered.
 * Must never crash, hang, leak or read out of bounds; corruption reports are
 * expected. Seeds: fuzz/corpus/fuzz_cassandra_segment/ (cut-down real
 * segments: plain v6/v7, LZ4, Snappy, Deflate, Zstd, AES).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_log.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"

static const char SCHEMA[] =
    "CREATE KEYSPACE \"Keyspace1\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'};\n"
    "CREATE TABLE \"Keyspace1\".\"Standard1\" (key ascii, col ascii, val blob, val0 blob, PRIMARY KEY (key, col))\n"
    "  WITH ID = 657e5210-7cbb-11ee-9858-c9aa1eb53e69;\n";

/* the key of alias testing:1 of Cassandra's test keystore (3.4-encrypted/key.hex) */
static const uint8_t KEY[16] = {0xb7, 0xd9, 0x6f, 0xb9, 0xb1, 0x1d, 0x82, 0x91,
                                0x79, 0xae, 0xeb, 0x0b, 0x4e, 0x81, 0xf9, 0x7a};

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

/* Read once as it is, and once with a cdc index (what an _cdc.idx says)
 * whose offset and COMPLETED flag come from the input's last bytes, so the
 * checks of the index's promise meet every shape of segment. */
static void read_once(const uint8_t *data, size_t size, bool with_index);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    read_once(data, size, false);
    read_once(data, size, true);
    return 0;
}

static void read_once(const uint8_t *data, size_t size, bool with_index) {
    cf_cass_segment_opts opts = {.key = KEY, .key_len = sizeof KEY};
    cf_cass_segment *seg;
    cf_err err;
    if (cf_cass_segment_open_mem(data, size, "CommitLog-7-1.log", &opts, &seg, &err) != CF_OK) return;
    if (with_index && size >= 4) {
        uint32_t v = (uint32_t)data[size - 4] << 24 | (uint32_t)data[size - 3] << 16 | (uint32_t)data[size - 2] << 8 |
                     data[size - 1];
        cf_cass_segment_set_cdc_index(seg, (int64_t)(v % (4 * (uint64_t)size + 1)), v & 1);
    }
    int mv = cf_cass_segment_get_info(seg)->messaging_version;
    cf_cass_entry e;
    cf_code rc;
    cf_buf out = CF_BUF_INIT;
    /* every call makes progress; the bound only guards against a bug */
    for (int guard = 0; guard < 1000000 && (rc = cf_cass_segment_next(seg, &e, &err)) != CF_ERR_EOF; guard++) {
        if (rc == CF_ERR_AGAIN || rc == CF_ERR_IO) break;
        if (rc != CF_OK) continue;
        cf_cass_mutation *m;
        cf_cass_decode_mutation(dec, e.data, e.len, mv, &m, NULL, &err);
        for (size_t i = 0; i < m->n_updates; i++) cf_cass_update_to_json(&m->updates[i], "f", e.position, &out);
        cf_buf_reset(&out);
    }
    cf_buf_free(&out);
    cf_cass_segment_destroy(seg);
}
