/*
 * test_fixtures.c - the Cassandra 5.0 fixtures (tests/data/cassandra/v7-*,
 * v8-*: written by a real 5.0.5 node, plain and every commit log compressor)
 * read through the library: each segment up to the offset of its _cdc.idx,
 * no corruption, no schema error, and the decoded events cover what the
 * workload did (static rows, range tombstone bounds, partition/row/cell/
 * collection deletions, TTLs, counters, collection cells with paths) while
 * the cells of the dropped column (written before the drop) are left out as
 * Cassandra leaves them out. Whether the values are right is checked against
 * Cassandra's SELECT JSON by test_dump.sh / replay_check.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cass_test_util.h"

#define FIX CF_TESTS_DIR "/data/cassandra"

typedef struct counts {
    long entries, corrupt, schema_errors, skipped, updates, statics, rt_bounds, rt_boundaries, pdel, rowdel, celldel,
        complexdel, expiring, counters, paths, dropme, rows;
} counts;

static void read_case(const char *c, counts *k, int expect_version) {
    memset(k, 0, sizeof *k);
    char dir[512], path[512];
    snprintf(path, sizeof path, "%s/%s/schema.cql", FIX, c);
    cf_cass_schema *schema = cf_cass_schema_new();
    cf_err err;
    assert_int_equal(cf_cass_ddl_parse_file(schema, path, &err), CF_OK);
    cf_cass_decoder *dec = cf_cass_decoder_new(schema);
    snprintf(dir, sizeof dir, "%s/%s/cdc_raw", FIX, c);
    char **logs = list_logs(dir);
    assert_non_null(logs);
    int with_idx = 0;
    for (char **lp = logs; *lp; lp++) {
        char *idx = cf_cass_cdc_idx_path(*lp);
        int64_t off;
        bool done;
        cf_code rc = cf_cass_cdc_idx_read(idx, 3, 10, &off, &done, &err);
        free(idx);
        if (rc == CF_ERR_NOT_FOUND) continue; /* no CDC data in it */
        assert_int_equal(rc, CF_OK);
        assert_true(done);
        with_idx++;
        cf_cass_segment *seg;
        assert_int_equal(cf_cass_segment_open(*lp, NULL, &seg, &err), CF_OK);
        assert_int_equal(cf_cass_segment_get_info(seg)->version, expect_version);
        assert_int_equal(cf_cass_segment_get_info(seg)->messaging_version, expect_version == 8 ? 13 : 12);
        cf_cass_segment_set_cdc_index(seg, off, done); /* the index is a promise: no corruption may be reported */
        cf_cass_entry e;
        while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK || rc == CF_ERR_CORRUPT) {
            if (rc == CF_ERR_CORRUPT) {
                fprintf(stderr, "%s: %s (%s)\n", c, err.message, err.where);
                k->corrupt++;
                continue;
            }
            assert_true(e.end_position <= off);
            k->entries++;
            cf_cass_mutation *m;
            rc = cf_cass_decode_mutation(dec, e.data, e.len, cf_cass_segment_get_info(seg)->messaging_version, &m, NULL,
                                         &err);
            if (rc == CF_ERR_NOT_FOUND) {
                k->skipped++;
                continue;
            }
            if (rc) {
                fprintf(stderr, "%s: %s | %s | %s\n", c, err.message, err.detail, err.where);
                k->schema_errors++;
            }
            for (size_t i = 0; i < m->n_updates; i++) {
                const cf_cass_update *u = &m->updates[i];
                k->updates++;
                if (!cf_cass_deletion_is_live(&u->partition_deletion)) k->pdel++;
                if (u->static_row) k->statics++;
                for (size_t r = 0; r < u->n_rows + (u->static_row ? 1 : 0); r++) {
                    const cf_cass_row *row = r < u->n_rows ? &u->rows[r] : u->static_row;
                    if (row->kind == CF_CASS_RT_BOUND) k->rt_bounds++;
                    if (row->kind == CF_CASS_RT_BOUNDARY) k->rt_boundaries++;
                    if (row->kind == CF_CASS_ROW) k->rows++;
                    if ((row->kind == CF_CASS_ROW || row->kind == CF_CASS_STATIC_ROW) &&
                        !cf_cass_deletion_is_live(&row->deletion))
                        k->rowdel++;
                    for (size_t ci = 0; ci < row->n_columns; ci++) {
                        const cf_cass_column_data *cd = &row->columns[ci];
                        if (strcmp(cd->name, "dropme") == 0) k->dropme++;
                        if (cd->has_complex_deletion) k->complexdel++;
                        if (cd->type->kind == CF_CQL_COUNTER) k->counters++;
                        for (size_t j = 0; j < cd->n_cells; j++) {
                            if (cd->cells[j].deleted) k->celldel++;
                            if (cd->cells[j].expiring) k->expiring++;
                            if (cd->complex && cd->cells[j].path.p) k->paths++;
                        }
                    }
                }
            }
        }
        assert_int_equal(rc, CF_ERR_EOF); /* COMPLETED: the end, at the index offset */
        cf_cass_segment_destroy(seg);
    }
    assert_true(with_idx >= 1);
    free_list(logs);
    cf_cass_decoder_destroy(dec);
    cf_cass_schema_destroy(schema);
    assert_int_equal(k->corrupt, 0);
    assert_int_equal(k->schema_errors, 0);
    /* the workload (scripts/cassandra-fixtures/workload.py) did all of these */
    assert_true(k->updates >= 50);
    assert_true(k->statics > 0);
    assert_true(k->rt_bounds >= 8); /* 4 range deletes on events = 4 open/close pairs */
    assert_true(k->pdel >= 2);      /* all_types id 3, events p 2 */
    assert_true(k->rowdel >= 1);
    assert_true(k->celldel > 0);
    assert_true(k->complexdel > 0); /* collection overwrite */
    assert_true(k->expiring > 0);
    assert_true(k->counters > 0);
    assert_true(k->paths > 0);
    /* dropme was only written before ALTER TABLE ... DROP: Cassandra filters those cells */
    assert_int_equal(k->dropme, 0);
}

#define CASE(fn, dir, ver) \
    static void fn(void **s) { \
        (void)s; \
        counts k; \
        read_case(dir, &k, ver); \
    }
CASE(test_v7_plain, "v7-plain", 7)
CASE(test_v7_lz4, "v7-lz4", 7)
CASE(test_v7_snappy, "v7-snappy", 7)
CASE(test_v7_deflate, "v7-deflate", 7)
CASE(test_v7_zstd, "v7-zstd", 7)
CASE(test_v8_plain, "v8-plain", 8)
CASE(test_v8_lz4, "v8-lz4", 8)
CASE(test_v8_snappy, "v8-snappy", 8)
CASE(test_v8_deflate, "v8-deflate", 8)
CASE(test_v8_zstd, "v8-zstd", 8)

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v7_plain),   cmocka_unit_test(test_v7_lz4),     cmocka_unit_test(test_v7_snappy),
        cmocka_unit_test(test_v7_deflate), cmocka_unit_test(test_v7_zstd),    cmocka_unit_test(test_v8_plain),
        cmocka_unit_test(test_v8_lz4),     cmocka_unit_test(test_v8_snappy),  cmocka_unit_test(test_v8_deflate),
        cmocka_unit_test(test_v8_zstd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
