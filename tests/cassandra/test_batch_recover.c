/*
 * test_batch_recover.c - a mutation (batch) whose first update belongs to a
 * table missing from the schema: the updates after it are found again by
 * their table id (the scan in mutation.c's recover) and decode exactly as
 * they do alone. Built from real entries of the Cassandra 5.0 fixture
 * v7-plain: an update of a system table (not in schema.cql) followed by an
 * update of a user table. The decoder's quiet mode (cf_cass_decoder_set_quiet_unknown).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/cassandra_log.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"

#define DIR CF_TESTS_DIR "/data/cassandra/v7-plain"

static void test_unknown_then_known(void **state) {
    (void)state;
    cf_err err;
    cf_cass_schema *schema = cf_cass_schema_new();
    assert_int_equal(cf_cass_ddl_parse_file(schema, DIR "/schema.cql", &err), CF_OK);
    cf_cass_decoder *dec = cf_cass_decoder_new(schema);
    cf_cass_segment *seg;
    assert_int_equal(cf_cass_segment_open(DIR "/cdc_raw/CommitLog-7-1795978902474.log", NULL, &seg, &err), CF_OK);
    int mv = cf_cass_segment_get_info(seg)->messaging_version;
    uint8_t *known = NULL, *unknown = NULL;
    size_t known_len = 0, unknown_len = 0;
    cf_cass_entry e;
    while (cf_cass_segment_next(seg, &e, &err) == CF_OK && (!known || !unknown)) {
        if (e.data[0] != 0x01) continue; /* single-update mutations only */
        cf_cass_mutation *m;
        cf_code rc = cf_cass_decode_mutation(dec, e.data, e.len, mv, &m, NULL, NULL);
        if (rc == CF_OK && !known && m->n_updates == 1 && m->updates[0].n_rows > 0) {
            known = malloc(e.len);
            memcpy(known, e.data, e.len);
            known_len = e.len;
        } else if (rc == CF_ERR_NOT_FOUND && !unknown) {
            unknown = malloc(e.len);
            memcpy(unknown, e.data, e.len);
            unknown_len = e.len;
        }
    }
    cf_cass_segment_destroy(seg);
    assert_non_null(known);
    assert_non_null(unknown);
    /* alone */
    cf_cass_mutation *m;
    assert_int_equal(cf_cass_decode_mutation(dec, known, known_len, mv, &m, NULL, NULL), CF_OK);
    int64_t token = m->updates[0].token;
    size_t rows = m->updates[0].n_rows, key_len = m->updates[0].key.len;
    /* batch: count 2, the unknown table's update, the known one */
    size_t blen = 1 + (unknown_len - 1) + (known_len - 1);
    uint8_t *batch = malloc(blen);
    batch[0] = 0x02;
    memcpy(batch + 1, unknown + 1, unknown_len - 1);
    memcpy(batch + unknown_len, known + 1, known_len - 1);
    uint8_t uid[16];
    cf_code rc = cf_cass_decode_mutation(dec, batch, blen, mv, &m, uid, &err);
    assert_int_equal(rc, CF_ERR_SCHEMA);
    assert_non_null(strstr(err.detail, "1 recovered"));
    assert_int_equal(m->n_updates, 1);
    assert_int_equal(m->updates[0].token, token);
    assert_int_equal(m->updates[0].n_rows, rows);
    assert_int_equal(m->updates[0].key.len, key_len);
    assert_int_equal(m->updates[0].byte_offset, unknown_len);
    /* the other order: the known update is decoded, the unknown one reported */
    memcpy(batch + 1, known + 1, known_len - 1);
    memcpy(batch + known_len, unknown + 1, unknown_len - 1);
    rc = cf_cass_decode_mutation(dec, batch, blen, mv, &m, uid, &err);
    assert_int_equal(rc, CF_ERR_SCHEMA);
    assert_int_equal(m->n_updates, 1);
    assert_int_equal(m->updates[0].token, token);
    /* quiet (the sidecar): the unknown table alone is the code and the id,
     * err untouched; a batch that mixes tables is still reported in full */
    uint8_t uid2[16];
    assert_int_equal(cf_cass_decode_mutation(dec, unknown, unknown_len, mv, &m, uid, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "unknown table id"));
    cf_cass_decoder_set_quiet_unknown(dec, true);
    memset(&err, 0, sizeof err);
    snprintf(err.message, sizeof err.message, "untouched");
    assert_int_equal(cf_cass_decode_mutation(dec, unknown, unknown_len, mv, &m, uid2, &err), CF_ERR_NOT_FOUND);
    assert_string_equal(err.message, "untouched");
    assert_memory_equal(uid, uid2, 16);
    rc = cf_cass_decode_mutation(dec, batch, blen, mv, &m, uid2, &err);
    assert_int_equal(rc, CF_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "mixes known tables and unknown table id"));
    assert_null(strstr(err.message, "table id  ")); /* the id is named */
    assert_int_equal(m->n_updates, 1);
    free(batch);
    free(known);
    free(unknown);
    cf_cass_decoder_destroy(dec);
    cf_cass_schema_destroy(schema);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_then_known),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
