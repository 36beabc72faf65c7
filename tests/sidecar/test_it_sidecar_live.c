/*
 * test_it_sidecar_live.c - the sidecar engine following a live Cassandra 5.0
 * node's cdc_raw while it writes: the shared node of scripts/servers
 * ($CF_TEST_CASSANDRA, its cdc_raw in $CF_TEST_CASSANDRA_CDC_RAW; fails
 * without it). The schema is read over CQL, and again when a mutation names
 * a column the schema does not know.
 *
 * In a keyspace of this run (the node serves other tests too): a CDC table
 * and one without cdc written in the same batches; rows inserted, an
 * ALTER TABLE ... ADD while the engine runs, rows with the new column.
 * Oracles: the values and timestamps given in the statements (each change
 * once, the new column's values there: nothing lost across the ALTER), and
 * Cassandra's table options (no event of the table without cdc). The
 * segments of the shared node are never deleted (cleanup none).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cdcflow/log.h"
#include "sc_live_util.h"

static void test_live_node(void **state) {
    (void)state;
    live_setup("sclive");
    q("CREATE TABLE %s.plain (k int PRIMARY KEY, v text)", ks);

    cf_cass_schema *schema = cf_cass_schema_new();
    cf_sc_engine_opts eo = live_opts(schema);
    cf_sc_engine *e;
    cf_err err;
    if (cf_sc_engine_new(&eo, &e, &err)) fail_msg("engine: %s / %s", err.message, err.detail);
    got g;
    memset(&g, 0, sizeof g);
    catch_up(e, &g); /* what the node holds from before (other tests' keyspaces) */
    /* rows, each in a batch with the table without cdc */
    for (int k = 0; k < 20; k++)
        q("BEGIN UNLOGGED BATCH USING TIMESTAMP %d INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d); "
          "INSERT INTO %s.plain (k, v) VALUES (%d, 'x') APPLY BATCH",
          1000 + k, ks, k, k, k * 10, ks, k);
    int64_t ms = until(e, &g, 20);
    print_message("20 inserts published %lld ms after the last write\n", (long long)ms);
    assert_int_equal(g.n, 20);
    /* the schema changes while the engine runs */
    q("ALTER TABLE %s.t ADD added bigint", ks);
    for (int k = 20; k < 30; k++)
        q("INSERT INTO %s.t (k, v, n, added) VALUES (%d, 'w%d', %d, %d) USING TIMESTAMP %d", ks, k, k, k * 10, k + 7,
          2000 + k);
    until(e, &g, 30);
    assert_int_equal(g.n, 30);
    for (int k = 0; k < 30; k++) {
        if (g.by_k[k] != 1) fail_msg("key %d: %d events", k, g.by_k[k]);
        assert_int_equal(g.v_of[k], k * 10);
        assert_int_equal(g.ts_of[k], k < 20 ? 1000 + k : 2000 + k);
        if (k >= 20) assert_int_equal(g.added[k], k + 7); /* the column added during the run */
        else assert_int_equal(g.added[k], -1);
    }
    assert_int_equal(g.other_table, 0); /* the table without cdc: never published */
    cf_sc_stats st;
    cf_sc_engine_stats(e, &st);
    assert_true(st.schema_refreshes >= 2); /* at start, and for the new column (or its SCHEMA_CHANGE event) */
    cf_sc_engine_destroy(e);
    cf_cass_schema_destroy(schema);
    live_teardown();
}

int main(void) {
    cf_log_set_level(CF_LOG_WARN);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_live_node)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
