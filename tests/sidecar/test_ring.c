/*
 * test_ring.c - token ranges computed from the ring (token.ranges=ring):
 * a node's primary ranges, cf_sc_ranges_primary.
 *
 * Oracles, none of them the code under test:
 *  - the ring of the real three-node Cassandra 5.0 cluster of the RF=3
 *    fixtures (tests/data/cassandra/rf3-all-up/ring.json: one token each,
 *    node1's is -2^63) and the tokens Cassandra computed for its partitions
 *    (tokens.jsonl): each is in exactly one node's ranges;
 *  - Cassandra's rule for the primary replica of a token, written here the
 *    way TokenMetadata does it and not the way ranges.c does: the node of
 *    the first ring token >= the token, or of the smallest ring token when
 *    none is (the wrap). Random rings (single tokens and vnodes, boundary
 *    tokens INT64_MIN and INT64_MAX included) are checked against it on
 *    random samples of [-2^63+1, 2^63-1], the ring tokens and their
 *    neighbours, and INT64_MIN (the token of an empty key);
 *  - the engine's errors: "ring" without a CQL connection, and a CQL node
 *    that cannot be reached (a port nobody listens on), name what to do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cdcflow/cassandra_cql.h"
#include "cdcflow/log.h"
#include "cdcflow/sidecar.h"
#include "sc_test_util.h"

/* splitmix64: a reproducible PRNG (the seed is printed on failure) */
static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Cassandra's primary replica of token t: the first ring token >= t, else
 * the smallest (a linear scan: no sorting, no ranges). */
static size_t oracle_owner(const cf_sc_ring *ring, int64_t t) {
    bool have_ceil = false, have_min = false;
    int64_t ceil_tok = 0, min_tok = 0;
    size_t ceil_node = 0, min_node = 0;
    for (size_t i = 0; i < ring->n; i++)
        for (size_t j = 0; j < ring->nodes[i].n_tokens; j++) {
            int64_t x = ring->nodes[i].tokens[j];
            if (x >= t && (!have_ceil || x < ceil_tok)) have_ceil = true, ceil_tok = x, ceil_node = i;
            if (!have_min || x < min_tok) have_min = true, min_tok = x, min_node = i;
        }
    return have_ceil ? ceil_node : min_node;
}

static char *fmt(const cf_sc_ranges *r) {
    cf_buf b = CF_BUF_INIT;
    cf_sc_ranges_format(r, &b);
    return cf_buf_detach(&b, NULL);
}

static void check_against_oracle(const cf_sc_ring *ring, const int64_t *probes, size_t n_probes) {
    cf_sc_ranges *own = calloc(ring->n, sizeof *own);
    cf_err err;
    for (size_t i = 0; i < ring->n; i++) {
        if (cf_sc_ranges_primary(ring, ring->nodes[i].address, &own[i], &err) != CF_OK)
            fail_msg("seed %llx node %s: %s", (unsigned long long)rng_state, ring->nodes[i].address, err.message);
        /* at most one range per token of the node (adjacent ones merged), sorted */
        assert_true(own[i].n <= ring->nodes[i].n_tokens);
        for (size_t k = 1; k < own[i].n; k++) assert_true(own[i].r[k - 1].start < own[i].r[k].start);
    }
    for (size_t p = 0; p < n_probes; p++) {
        int64_t t = probes[p];
        size_t owners = 0, who = 0;
        for (size_t i = 0; i < ring->n; i++)
            if (cf_sc_ranges_contain(&own[i], t)) owners++, who = i;
        if (owners != 1)
            fail_msg("seed %llx: token %lld owned by %zu nodes", (unsigned long long)rng_state, (long long)t, owners);
        size_t want = oracle_owner(ring, t);
        if (who != want)
            fail_msg("seed %llx: token %lld owned by %s, Cassandra's primary replica is %s",
                     (unsigned long long)rng_state, (long long)t, ring->nodes[who].address,
                     ring->nodes[want].address);
    }
    for (size_t i = 0; i < ring->n; i++) cf_sc_ranges_free(&own[i]);
    free(own);
}

/* The probes of a ring: every ring token, its neighbours, the extremes,
 * INT64_MIN (empty key) and `random` samples of [-2^63+1, 2^63-1]. */
static int64_t *probes_of(const cf_sc_ring *ring, size_t random, size_t *n) {
    size_t cap = random + 8;
    for (size_t i = 0; i < ring->n; i++) cap += 3 * ring->nodes[i].n_tokens;
    int64_t *p = malloc(cap * sizeof *p);
    size_t k = 0;
    p[k++] = INT64_MIN;
    p[k++] = INT64_MIN + 1;
    p[k++] = INT64_MAX;
    p[k++] = INT64_MAX - 1;
    p[k++] = 0;
    for (size_t i = 0; i < ring->n; i++)
        for (size_t j = 0; j < ring->nodes[i].n_tokens; j++) {
            int64_t t = ring->nodes[i].tokens[j];
            p[k++] = t;
            if (t > INT64_MIN) p[k++] = t - 1;
            if (t < INT64_MAX) p[k++] = t + 1;
        }
    for (size_t i = 0; i < random; i++) {
        int64_t t = (int64_t)rnd();
        p[k++] = t == INT64_MIN ? INT64_MIN + 1 : t;
    }
    *n = k;
    return p;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    cf_buf b = CF_BUF_INIT;
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) cf_buf_append(&b, tmp, n);
    fclose(f);
    cf_buf_append(&b, "", 1);
    return cf_buf_detach(&b, NULL);
}

static void add1(cf_sc_ring *ring, const char *addr, int64_t t) { cf_sc_ring_add(ring, addr, NULL, &t, 1); }

/* ---- the real cluster's ring ---- */

static void test_three_nodes_of_the_fixture(void **state) {
    (void)state;
    /* ring.json of rf3-all-up, as Cassandra listed it */
    cf_sc_ring ring = {0};
    add1(&ring, "127.0.0.2", INT64_MIN);
    add1(&ring, "127.0.0.3", -3074457345618258603LL);
    add1(&ring, "127.0.0.4", 3074457345618258602LL);
    /* the file says so too */
    char *json = slurp(FIX "/rf3-all-up/ring.json");
    assert_non_null(strstr(json, "\"-9223372036854775808\""));
    assert_non_null(strstr(json, "\"-3074457345618258603\""));
    assert_non_null(strstr(json, "\"3074457345618258602\""));
    free(json);
    cf_sc_ranges r[3];
    cf_err err;
    const char *want[3] = {"(3074457345618258602,-9223372036854775808]", "(-9223372036854775808,-3074457345618258603]",
                           "(-3074457345618258603,3074457345618258602]"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cf_sc_ranges_primary(&ring, ring.nodes[i].address, &r[i], &err), CF_OK);
        char *s = fmt(&r[i]);
        assert_string_equal(s, want[i]);
        free(s);
    }
    /* the default node: the one that answered (system.local) */
    ring.local = 1;
    cf_sc_ranges d;
    assert_int_equal(cf_sc_ranges_primary(&ring, NULL, &d, &err), CF_OK);
    char *s = fmt(&d);
    assert_string_equal(s, want[1]);
    free(s);
    cf_sc_ranges_free(&d);
    /* the boundaries: INT64_MIN is node1's own token, INT64_MIN + 1 the first of node2's range */
    assert_true(cf_sc_ranges_contain(&r[0], INT64_MIN));
    assert_true(cf_sc_ranges_contain(&r[0], INT64_MAX));
    assert_true(cf_sc_ranges_contain(&r[1], INT64_MIN + 1));
    assert_true(cf_sc_ranges_contain(&r[2], 3074457345618258602LL));
    assert_true(cf_sc_ranges_contain(&r[0], 3074457345618258603LL));
    /* every partition of the workload, by the token Cassandra computed: one owner each */
    FILE *f = fopen(FIX "/rf3-all-up/tokens.jsonl", "r");
    assert_non_null(f);
    char line[1024];
    int n = 0, per[3] = {0, 0, 0};
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"token\": ");
        if (!p) continue;
        int64_t t = strtoll(p + 9, NULL, 10);
        int owners = 0;
        for (int i = 0; i < 3; i++)
            if (cf_sc_ranges_contain(&r[i], t)) owners++, per[i]++;
        assert_int_equal(owners, 1);
        assert_int_equal(cf_sc_ranges_contain(&r[oracle_owner(&ring, t)], t), 1);
        n++;
    }
    fclose(f);
    assert_int_equal(n, 48); /* the fixture's 48 partitions */
    assert_true(per[0] > 0 && per[1] > 0 && per[2] > 0);
    for (int i = 0; i < 3; i++) cf_sc_ranges_free(&r[i]);
    size_t np;
    int64_t *probes = probes_of(&ring, 10000, &np);
    check_against_oracle(&ring, probes, np);
    free(probes);
    cf_sc_ring_free(&ring);
}

/* ---- vnodes ---- */

static void test_vnodes(void **state) {
    (void)state;
    rng_state = 0x5eed0001;
    cf_sc_ring ring = {0};
    for (int i = 0; i < 3; i++) {
        int64_t t[16];
        for (int j = 0; j < 16; j++) t[j] = (int64_t)rnd();
        char a[32];
        snprintf(a, sizeof a, "10.0.0.%d", i + 1);
        cf_sc_ring_add(&ring, a, NULL, t, 16);
    }
    size_t np;
    int64_t *probes = probes_of(&ring, 20000, &np);
    check_against_oracle(&ring, probes, np);
    free(probes);
    /* adjacent tokens of one node make one range: node 10.0.0.1 with all of
     * 10.0.0.2's tokens too owns what both did, in fewer or as many ranges */
    cf_sc_ring two = {0};
    int64_t both[32];
    memcpy(both, ring.nodes[0].tokens, 16 * sizeof *both);
    memcpy(both + 16, ring.nodes[1].tokens, 16 * sizeof *both);
    cf_sc_ring_add(&two, "10.0.0.1", NULL, both, 32);
    cf_sc_ring_add(&two, "10.0.0.3", NULL, ring.nodes[2].tokens, 16);
    cf_sc_ranges r1, r2, m;
    cf_err err;
    assert_int_equal(cf_sc_ranges_primary(&ring, "10.0.0.1", &r1, &err), CF_OK);
    assert_int_equal(cf_sc_ranges_primary(&ring, "10.0.0.2", &r2, &err), CF_OK);
    assert_int_equal(cf_sc_ranges_primary(&two, "10.0.0.1", &m, &err), CF_OK);
    assert_true(m.n <= r1.n + r2.n && m.n <= 16);
    probes = probes_of(&ring, 5000, &np);
    for (size_t i = 0; i < np; i++)
        assert_int_equal(cf_sc_ranges_contain(&m, probes[i]),
                         cf_sc_ranges_contain(&r1, probes[i]) || cf_sc_ranges_contain(&r2, probes[i]));
    free(probes);
    cf_sc_ranges_free(&r1);
    cf_sc_ranges_free(&r2);
    cf_sc_ranges_free(&m);
    cf_sc_ring_free(&two);
    cf_sc_ring_free(&ring);
}

/* ---- INT64_MIN and INT64_MAX as ring tokens ---- */

static void test_boundary_tokens(void **state) {
    (void)state;
    cf_err err;
    cf_sc_ranges a, b;
    /* INT64_MAX: the node before it owns up to the end of the ring; the
     * wrap range (MAX, 0] holds MIN .. 0 */
    cf_sc_ring ring = {0};
    add1(&ring, "a", INT64_MAX);
    add1(&ring, "b", 0);
    assert_int_equal(cf_sc_ranges_primary(&ring, "a", &a, &err), CF_OK);
    assert_int_equal(cf_sc_ranges_primary(&ring, "b", &b, &err), CF_OK);
    char *s = fmt(&a);
    assert_string_equal(s, "(0,9223372036854775807]");
    free(s);
    s = fmt(&b);
    assert_string_equal(s, "(9223372036854775807,0]");
    free(s);
    assert_true(cf_sc_ranges_contain(&a, INT64_MAX) && !cf_sc_ranges_contain(&b, INT64_MAX));
    assert_true(cf_sc_ranges_contain(&b, INT64_MIN) && !cf_sc_ranges_contain(&a, INT64_MIN));
    assert_true(cf_sc_ranges_contain(&b, INT64_MIN + 1) && cf_sc_ranges_contain(&b, 0));
    assert_true(cf_sc_ranges_contain(&a, 1));
    cf_sc_ranges_free(&a);
    cf_sc_ranges_free(&b);
    cf_sc_ring_free(&ring);
    /* both extremes and nothing else */
    add1(&ring, "a", INT64_MIN);
    add1(&ring, "b", INT64_MAX);
    assert_int_equal(cf_sc_ranges_primary(&ring, "a", &a, &err), CF_OK);
    assert_int_equal(cf_sc_ranges_primary(&ring, "b", &b, &err), CF_OK);
    s = fmt(&a);
    assert_string_equal(s, "(9223372036854775807,-9223372036854775808]"); /* MIN alone */
    free(s);
    assert_true(cf_sc_ranges_contain(&a, INT64_MIN) && !cf_sc_ranges_contain(&a, INT64_MIN + 1));
    assert_true(!cf_sc_ranges_contain(&a, INT64_MAX) && !cf_sc_ranges_contain(&a, 0));
    assert_true(cf_sc_ranges_contain(&b, INT64_MIN + 1) && cf_sc_ranges_contain(&b, INT64_MAX));
    size_t np;
    int64_t *probes = probes_of(&ring, 1000, &np);
    check_against_oracle(&ring, probes, np);
    free(probes);
    cf_sc_ranges_free(&a);
    cf_sc_ranges_free(&b);
    cf_sc_ring_free(&ring);
}

/* ---- a node holding the whole ring ---- */

static void test_one_node(void **state) {
    (void)state;
    cf_err err;
    cf_sc_ranges r;
    cf_sc_ring ring = {0};
    add1(&ring, "127.0.0.1", 42);
    assert_int_equal(cf_sc_ranges_primary(&ring, NULL, &r, &err), CF_OK);
    assert_int_equal(r.n, 0); /* the whole ring */
    char *s = fmt(&r);
    assert_string_equal(s, "all");
    free(s);
    assert_true(cf_sc_ranges_contain(&r, INT64_MIN) && cf_sc_ranges_contain(&r, 42) &&
                cf_sc_ranges_contain(&r, INT64_MAX));
    cf_sc_ring_free(&ring);
    /* vnodes: 16 tokens, one node (Cassandra 5.0's default num_tokens) */
    rng_state = 0x5eed0002;
    int64_t t[16];
    for (int j = 0; j < 16; j++) t[j] = (int64_t)rnd();
    cf_sc_ring_add(&ring, "127.0.0.1", "192.168.1.1", t, 16);
    assert_int_equal(cf_sc_ranges_primary(&ring, "192.168.1.1", &r, &err), CF_OK);
    assert_int_equal(r.n, 0);
    cf_sc_ring_free(&ring);
}

/* ---- addresses and errors ---- */

static void test_addresses_and_errors(void **state) {
    (void)state;
    cf_err err;
    cf_sc_ranges r;
    cf_sc_ring ring = {0};
    add1(&ring, "127.0.0.2", -100);
    cf_sc_ring_add(&ring, "::1", "10.1.0.3", (int64_t[]){100}, 1);
    /* by broadcast address, by CQL address, in another spelling of the same IPv6 address */
    assert_int_equal(cf_sc_ranges_primary(&ring, "127.0.0.2", &r, &err), CF_OK);
    assert_true(cf_sc_ranges_contain(&r, -100) && !cf_sc_ranges_contain(&r, 100));
    cf_sc_ranges_free(&r);
    assert_int_equal(cf_sc_ranges_primary(&ring, "10.1.0.3", &r, &err), CF_OK);
    assert_true(cf_sc_ranges_contain(&r, 100) && !cf_sc_ranges_contain(&r, -100));
    cf_sc_ranges_free(&r);
    assert_int_equal(cf_sc_ranges_primary(&ring, "0:0::1", &r, &err), CF_OK);
    assert_true(cf_sc_ranges_contain(&r, 100));
    cf_sc_ranges_free(&r);
    assert_int_equal(cf_sc_ranges_primary(&ring, "[::1]", &r, &err), CF_OK);
    cf_sc_ranges_free(&r);
    /* unknown: the error lists the addresses known */
    assert_int_equal(cf_sc_ranges_primary(&ring, "127.0.0.9", &r, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "127.0.0.9"));
    assert_non_null(strstr(err.detail, "127.0.0.2"));
    assert_non_null(strstr(err.detail, "::1 (CQL 10.1.0.3)"));
    assert_non_null(strstr(err.hint, "token.ranges.node"));
    assert_null(r.r);
    /* a token claimed twice */
    add1(&ring, "127.0.0.4", 100);
    assert_int_equal(cf_sc_ranges_primary(&ring, "127.0.0.2", &r, &err), CF_ERR_STATE);
    assert_non_null(strstr(err.message, "token 100"));
    cf_sc_ring_free(&ring);
    /* a node without tokens */
    add1(&ring, "127.0.0.2", 5);
    cf_sc_ring_add(&ring, "127.0.0.3", NULL, NULL, 0);
    assert_int_equal(cf_sc_ranges_primary(&ring, "127.0.0.3", &r, &err), CF_ERR_STATE);
    assert_non_null(strstr(err.message, "127.0.0.3 has no tokens"));
    cf_sc_ring_free(&ring);
    /* an empty ring */
    assert_int_equal(cf_sc_ranges_primary(&ring, NULL, &r, &err), CF_ERR_STATE);
}

/* ---- the property: random rings ---- */

static void test_random_rings(void **state) {
    (void)state;
    for (int round = 0; round < 300; round++) {
        rng_state = 0xabc00000ULL + (uint64_t)round;
        uint64_t seed = rng_state;
        cf_sc_ring ring = {0};
        size_t nodes = 1 + rnd() % 8;
        bool vnodes = rnd() % 2;
        for (size_t i = 0; i < nodes; i++) {
            size_t nt = vnodes ? 1 + rnd() % 32 : 1;
            int64_t t[32];
            for (size_t j = 0; j < nt; j++) {
                uint64_t pick = rnd() % 50;
                t[j] = pick == 0 ? INT64_MIN : pick == 1 ? INT64_MAX : (int64_t)rnd();
                /* keep the tokens distinct across the ring, as Cassandra does */
                bool dup = false;
                for (size_t a = 0; a < ring.n; a++)
                    for (size_t b = 0; b < ring.nodes[a].n_tokens; b++) dup |= ring.nodes[a].tokens[b] == t[j];
                for (size_t b = 0; b < j; b++) dup |= t[b] == t[j];
                if (dup) j--;
            }
            char a[32];
            snprintf(a, sizeof a, "10.9.%zu.%zu", i / 256, i % 256);
            cf_sc_ring_add(&ring, a, NULL, t, nt);
        }
        size_t np;
        int64_t *probes = probes_of(&ring, 2000, &np);
        rng_state = seed; /* printed by a failure: the round's seed */
        check_against_oracle(&ring, probes, np);
        free(probes);
        cf_sc_ring_free(&ring);
    }
}

/* ---- the engine ---- */

static void test_engine_errors(void **state) {
    (void)state;
    char *dir = make_tmpdir("ring");
    const char *dirs[] = {dir};
    cf_cass_schema *schema = cf_cass_schema_new();
    cf_sc_engine *e = NULL;
    cf_err err;
    /* "ring" without CQL */
    cf_sc_engine_opts o = {.dirs = dirs, .n_dirs = 1, .schema = schema, .cl = CF_SC_ONE, .ranges = "ring"};
    assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "ring"));
    assert_non_null(strstr(err.hint, "cql.host"));
    /* a CQL node nobody listens on: a port bound, never listened to */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t sl = sizeof sa;
    getsockname(s, (struct sockaddr *)&sa, &sl);
    cf_cql_options cq = {.host = "127.0.0.1", .port = ntohs(sa.sin_port), .connect_timeout_ms = 2000};
    o.cql = &cq;
    o.ranges = " RING ";
    assert_int_equal(cf_sc_engine_new(&o, &e, &err), CF_ERR_TRANSPORT);
    char where[64];
    snprintf(where, sizeof where, "127.0.0.1:%d", cq.port);
    assert_non_null(strstr(err.message, where));
    assert_non_null(strstr(err.message, "token ring"));
    assert_true(err.detail[0] != 0); /* why: the connect's own error */
    assert_non_null(strstr(err.hint, "token.ranges"));
    close(s);
    cf_cass_schema_destroy(schema);
    rm_rf(dir);
    free(dir);
}

int main(void) {
    cf_log_set_level(CF_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_nodes_of_the_fixture),
        cmocka_unit_test(test_vnodes),
        cmocka_unit_test(test_boundary_tokens),
        cmocka_unit_test(test_one_node),
        cmocka_unit_test(test_addresses_and_errors),
        cmocka_unit_test(test_random_rings),
        cmocka_unit_test(test_engine_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
