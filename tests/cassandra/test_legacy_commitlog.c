/*
 * test_legacy_commitlog.c - decode the commit log segments that Apache
 * Cassandra's own CommitLogUpgradeTest ships (3.0.13, 3.4 encrypted, 4.0.11)
 * and reproduce `cells` and `hash` of each set's hash.txt exactly, with the
 * test's rule: every row of Keyspace1.Standard1 whose first clustering value
 * starts with "name", every cell, hash over the cell value bytes. Mutations
 * of other tables (system tables) must be skipped whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cass_test_util.h"

typedef struct tally {
    long cells;
    int32_t hash;
    long mutations, skipped, updates, sections, corrupt, segments;
} tally;

static void decode_set(const char *set, const uint8_t *key, size_t key_len, tally *t) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", LEGACY_DIR, set);
    hash_props hp;
    assert_int_equal(read_hash_props(dir, &hp), 0);
    cf_cass_schema *schema = cf_cass_schema_new();
    cf_err err;
    assert_int_equal(cf_cass_schema_add_table(schema, standard1_table(hp.cfid), &err), CF_OK);
    cf_cass_decoder *dec = cf_cass_decoder_new(schema);
    memset(t, 0, sizeof *t);
    char **logs = list_logs(dir);
    assert_non_null(logs);
    cf_cass_segment_opts opts = {.key = key, .key_len = key_len};
    for (char **lp = logs; *lp; lp++) {
        cf_cass_segment *seg;
        assert_int_equal(cf_cass_segment_open(*lp, &opts, &seg, &err), CF_OK);
        t->segments++;
        int mv = cf_cass_segment_get_info(seg)->messaging_version;
        cf_cass_entry e;
        cf_code rc;
        while ((rc = cf_cass_segment_next(seg, &e, &err)) != CF_ERR_EOF) {
            if (rc == CF_ERR_CORRUPT) {
                t->corrupt++;
                continue;
            }
            assert_int_equal(rc, CF_OK);
            t->mutations++;
            cf_cass_mutation *m;
            uint8_t unknown[16];
            rc = cf_cass_decode_mutation(dec, e.data, e.len, mv, &m, unknown, &err);
            if (rc == CF_ERR_NOT_FOUND) {
                t->skipped++;
                continue;
            }
            if (rc) fprintf(stderr, "%s: %s | %s | %s\n", *lp, err.message, err.detail, err.where);
            assert_int_equal(rc, CF_OK);
            for (size_t i = 0; i < m->n_updates; i++) {
                const cf_cass_update *u = &m->updates[i];
                t->updates++;
                for (size_t r = 0; r < u->n_rows; r++) {
                    const cf_cass_row *row = &u->rows[r];
                    if (row->kind != CF_CASS_ROW || row->n_clustering == 0 || !row->clustering[0].p) continue;
                    if (row->clustering[0].len < 4 || memcmp(row->clustering[0].p, "name", 4) != 0) continue;
                    for (size_t c = 0; c < row->n_columns; c++)
                        for (size_t k = 0; k < row->columns[c].n_cells; k++) {
                            const cf_cass_cell *cell = &row->columns[c].cells[k];
                            t->hash = upgrade_hash(t->hash, cell->value.p, cell->value.len);
                            t->cells++;
                        }
                }
            }
        }
        t->sections += (long)cf_cass_segment_get_stats(seg)->sections;
        cf_cass_segment_destroy(seg);
    }
    free_list(logs);
    cf_cass_decoder_destroy(dec);
    cf_cass_schema_destroy(schema);
    assert_int_equal(t->cells, hp.cells);
    assert_int_equal(t->hash, hp.hash);
    assert_int_equal(t->corrupt, 0);
}

static void test_30_plain(void **state) {
    (void)state;
    tally t;
    decode_set("3.0.13-encrypted", NULL, 0, &t);
    /* CommitLogUpgradeTest's counts, and the research prototype's: 1480 mutations,
     * 76 of other tables, 3 sections over 2 segments */
    assert_int_equal(t.mutations, 1480);
    assert_int_equal(t.skipped, 76);
    assert_int_equal(t.sections, 3);
}

static void test_40_plain(void **state) {
    (void)state;
    tally t;
    decode_set("4.0.11-encrypted", NULL, 0, &t);
    assert_int_equal(t.mutations, 358);
    assert_int_equal(t.skipped, 3);
}

static void test_34_encrypted(void **state) {
    (void)state;
    uint8_t key[32];
    size_t kl = read_key_hex(LEGACY_DIR "/3.4-encrypted/key.hex", key, sizeof key);
    assert_int_equal(kl, 16);
    tally t;
    decode_set("3.4-encrypted", key, kl, &t);
    assert_int_equal(t.mutations, 14562);
}

static void test_encrypted_needs_key(void **state) {
    (void)state;
    cf_cass_segment *seg;
    cf_err err;
    assert_int_equal(cf_cass_segment_open(LEGACY_DIR "/3.4-encrypted/CommitLog-6-1480001790338.log", NULL, &seg, &err),
                     CF_ERR_CONFIG);
    assert_non_null(strstr(err.hint, "testing:1"));
    /* a wrong key: every block fails its padding check, reported, never a crash */
    uint8_t bad[16] = {0};
    cf_cass_segment_opts o = {.key = bad, .key_len = 16};
    assert_int_equal(cf_cass_segment_open(LEGACY_DIR "/3.4-encrypted/CommitLog-6-1480001790338.log", &o, &seg, &err),
                     CF_OK);
    cf_cass_entry e;
    cf_code rc;
    int corrupt = 0, ok = 0;
    while ((rc = cf_cass_segment_next(seg, &e, &err)) != CF_ERR_EOF) {
        if (rc == CF_ERR_CORRUPT) {
            corrupt++;
            assert_non_null(strstr(err.where, "CommitLog-6-1480001790338.log@"));
        } else
            ok++;
    }
    assert_true(corrupt > 0);
    assert_int_equal(ok, 0);
    cf_cass_segment_destroy(seg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_30_plain),
        cmocka_unit_test(test_40_plain),
        cmocka_unit_test(test_34_encrypted),
        cmocka_unit_test(test_encrypted_needs_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
