/*
 * test_it_sidecar_ring.c - token.ranges=ring against the live Cassandra 5.0
 * node of scripts/servers ($CF_TEST_CASSANDRA, its cdc_raw in
 * $CF_TEST_CASSANDRA_CDC_RAW; fails without it).
 *
 * Oracles: what Cassandra says of its ring (system.local's tokens, read
 * here with the plain CQL client: one node, no peers), the statements of
 * this test (each row written once), and an engine over the same cdc_raw
 * with token.ranges=all.
 *  - the ring read (cf_sc_ring_read) is that one node with system.local's
 *    tokens, and its primary ranges are the whole ring;
 *  - an engine with ranges "ring" owns the whole ring and publishes the
 *    workload exactly as an engine with "all": every row once, the same
 *    values;
 *  - a node address the ring does not have: the engine does not start, the
 *    error lists the node's address.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cdcflow/log.h"
#include "sc_live_util.h"

/* system.local's tokens as Cassandra lists them, parsed here on their own */
static size_t local_tokens(void) {
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, "SELECT JSON tokens FROM system.local", CF_CQL_ONE, &r, &err))
        fail_msg("system.local: %s", err.message);
    char *json = cf_cql_result_text(r, 0, 0);
    size_t n = 0;
    for (const char *p = json; (p = strchr(p, '"')); p++) n++;
    free(json);
    cf_cql_result_free(r);
    return (n - 2) / 2; /* {"tokens": ["a", "b", ...]}: two quotes a token, two for the key */
}

static void test_ring_live(void **state) {
    (void)state;
    live_setup("scring");
    cf_err err;
    /* the ring: one node, system.local's tokens */
    cf_sc_ring ring;
    if (cf_sc_ring_read(conn, &ring, &err)) fail_msg("ring: %s / %s", err.message, err.detail);
    assert_int_equal(ring.n, 1);
    assert_int_equal(ring.local, 0);
    assert_true(ring.nodes[0].address[0] != 0);
    size_t nt = local_tokens();
    print_message("ring: node %s (CQL %s), %zu token(s)\n", ring.nodes[0].address, ring.nodes[0].native_address,
                  ring.nodes[0].n_tokens);
    assert_int_equal(ring.nodes[0].n_tokens, nt);
    cf_sc_ranges r;
    assert_int_equal(cf_sc_ranges_primary(&ring, NULL, &r, &err), CF_OK);
    assert_int_equal(r.n, 0); /* the whole ring */
    assert_int_equal(cf_sc_ranges_primary(&ring, ring.nodes[0].address, &r, &err), CF_OK);
    assert_int_equal(r.n, 0);
    char known[64];
    snprintf(known, sizeof known, "%s", ring.nodes[0].address);
    cf_sc_ring_free(&ring);

    cf_cass_schema *s_ring = cf_cass_schema_new(), *s_all = cf_cass_schema_new(), *s_bad = cf_cass_schema_new();
    cf_sc_engine_opts eo = live_opts(s_ring);
    eo.ranges = "ring";
    /* an address the ring does not have */
    cf_sc_engine *bad = NULL;
    eo.schema = s_bad;
    eo.ring_node = "127.0.0.199";
    assert_int_equal(cf_sc_engine_new(&eo, &bad, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "127.0.0.199"));
    assert_non_null(strstr(err.detail, known));
    assert_null(bad);
    /* ring (its own node) and all, side by side */
    cf_sc_engine *e_ring, *e_all;
    eo.schema = s_ring;
    eo.ring_node = NULL;
    if (cf_sc_engine_new(&eo, &e_ring, &err)) fail_msg("engine ring: %s / %s", err.message, err.detail);
    assert_int_equal(cf_sc_engine_ranges(e_ring)->n, 0);
    eo.schema = s_all;
    eo.ranges = "all";
    if (cf_sc_engine_new(&eo, &e_all, &err)) fail_msg("engine all: %s / %s", err.message, err.detail);
    got g_ring, g_all;
    memset(&g_ring, 0, sizeof g_ring);
    memset(&g_all, 0, sizeof g_all);
    catch_up(e_ring, &g_ring);
    catch_up(e_all, &g_all);
    for (int k = 0; k < 40; k++)
        q("INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d) USING TIMESTAMP %d", ks, k, k, k * 10, 1000 + k);
    until(e_ring, &g_ring, 40);
    until(e_all, &g_all, 40);
    assert_int_equal(g_ring.n, 40);
    assert_int_equal(g_all.n, 40);
    for (int k = 0; k < 40; k++) {
        if (g_ring.by_k[k] != 1) fail_msg("ring: key %d: %d events", k, g_ring.by_k[k]);
        assert_int_equal(g_all.by_k[k], 1);
        assert_int_equal(g_ring.v_of[k], k * 10);
        assert_int_equal(g_all.v_of[k], k * 10);
    }
    cf_sc_stats st;
    cf_sc_engine_stats(e_ring, &st);
    assert_int_equal(st.not_owned, 0);
    cf_sc_engine_destroy(e_ring);
    cf_sc_engine_destroy(e_all);
    cf_cass_schema_destroy(s_ring);
    cf_cass_schema_destroy(s_all);
    cf_cass_schema_destroy(s_bad);
    live_teardown();
}

int main(void) {
    cf_log_set_level(CF_LOG_WARN);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ring_live)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
