/*
 * test_digest.c - the canonical partition-update digest over real data:
 * the Cassandra 5.0 fixtures (tests/data/cassandra/<case>, written by real
 * nodes).
 *
 * Oracles:
 *   - a copy of one node's cdc_raw, read as a second replica, gives the same
 *     digests in the same order;
 *   - the eleven fixture cases are eleven separate nodes that ran the same
 *     workload with the same USING TIMESTAMPs, writing commit log version 7
 *     (messaging 12) and 8 (messaging 13), plain and with every compressor:
 *     the same writes, serialized by different nodes in different formats.
 *     Every update without a deletion time or TTL expiry (those hold the
 *     node's clock) and without list elements (keyed by timeuuids the node
 *     makes) must give the same digest on every node once the table ids
 *     (chosen per node) are mapped by table name, and the others must differ
 *     (they are different writes: other deletion times, other element ids);
 *   - every field of an update the digest claims to cover changes it when
 *     changed (value, timestamp, TTL, deletion times, cell path, clustering,
 *     partition key, column name, row liveness).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "cdcflow/sidecar.h"
#include "sc_test_util.h"

typedef struct dlist {
    uint8_t (*d)[16];
    size_t n, cap;
    size_t with_times; /* updates holding a node-clock deletion time or expiry */
    cf_sc_digester *dg;
    bool normalize;    /* map table ids by name */
    bool only_timeless;
} dlist;

static bool has_node_times(const cf_cass_update *u) {
    if (!cf_cass_deletion_is_live(&u->partition_deletion)) return true;
    for (size_t r = 0; r < u->n_rows + (u->static_row ? 1 : 0); r++) {
        const cf_cass_row *row = r < u->n_rows ? &u->rows[r] : u->static_row;
        if (row->kind != CF_CASS_ROW && row->kind != CF_CASS_STATIC_ROW) return true;
        if (!cf_cass_deletion_is_live(&row->deletion) || (row->has_liveness && row->ttl)) return true;
        for (size_t c = 0; c < row->n_columns; c++) {
            if (row->columns[c].has_complex_deletion) return true;
            /* list elements are keyed by a timeuuid the coordinator makes */
            if (row->columns[c].complex && row->columns[c].type->kind == CF_CQL_LIST && row->columns[c].n_cells)
                return true;
            for (size_t k = 0; k < row->columns[c].n_cells; k++)
                if (row->columns[c].cells[k].deleted || row->columns[c].cells[k].expiring) return true;
        }
    }
    return false;
}

static void collect(void *arg, cf_cass_update *u, const char *seg, int64_t pos) {
    (void)seg, (void)pos;
    dlist *l = arg;
    if (!u->table->cdc || u->table->counter) return;
    if (l->normalize) { /* the same table on every node: its name */
        char name[512];
        snprintf(name, sizeof name, "%s.%s", u->table->keyspace, u->table->name);
        unsigned n = 16;
        EVP_Digest(name, strlen(name), u->table_id, &n, EVP_md5(), NULL);
    }
    bool timed = has_node_times(u);
    if (timed) l->with_times++;
    if (l->only_timeless && timed) return;
    if (l->n == l->cap) l->d = realloc(l->d, (l->cap = l->cap ? l->cap * 2 : 256) * sizeof *l->d);
    cf_sc_digest(l->dg, u, l->d[l->n++], NULL);
}

static int cmp16(const void *a, const void *b) { return memcmp(a, b, 16); }

static void read_case(const char *c, const char *sub, dlist *l) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s/%s", FIX, c, sub);
    cf_cass_schema *s = fixture_schema(c);
    each_update(dir, s, collect, l);
    cf_cass_schema_destroy(s);
}

static void test_copy_is_equal(void **state) {
    (void)state;
    char *tmp = make_tmpdir("digest");
    char to[600];
    snprintf(to, sizeof to, "%s/replica2", tmp);
    char from[512];
    snprintf(from, sizeof from, "%s/v8-lz4/cdc_raw", FIX);
    assert_true(copy_dir(from, to, -1) >= 2);
    dlist a = {.dg = cf_sc_digester_new()}, b = {.dg = cf_sc_digester_new()};
    read_case("v8-lz4", "cdc_raw", &a);
    cf_cass_schema *s = fixture_schema("v8-lz4");
    each_update(to, s, collect, &b);
    cf_cass_schema_destroy(s);
    assert_true(a.n >= 40);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.d, b.d, a.n * 16);
    free(a.d), free(b.d);
    cf_sc_digester_destroy(a.dg), cf_sc_digester_destroy(b.dg);
    rm_rf(tmp);
    free(tmp);
}

static const char *const cases[] = {"v7-plain", "v7-lz4", "v7-snappy", "v7-deflate", "v7-zstd", "v8-plain",
                                    "v8-lz4",   "v8-snappy", "v8-deflate", "v8-zstd", NULL};

static void test_same_writes_other_nodes(void **state) {
    (void)state;
    dlist ref = {.dg = cf_sc_digester_new(), .normalize = true, .only_timeless = true};
    read_case("v8-plain", "cdc_raw", &ref);
    assert_true(ref.n >= 20);
    assert_true(ref.with_times >= 10);
    print_message("%zu updates comparable across nodes, %zu with node clocks or element ids\n", ref.n, ref.with_times);
    qsort(ref.d, ref.n, 16, cmp16);
    for (const char *const *c = cases; *c; c++) {
        dlist o = {.dg = ref.dg, .normalize = true, .only_timeless = true};
        read_case(*c, "cdc_raw", &o);
        qsort(o.d, o.n, 16, cmp16);
        if (o.n != ref.n || memcmp(o.d, ref.d, o.n * 16) != 0) fail_msg("%s: digests differ from v8-plain's", *c);
        assert_int_equal(o.with_times, ref.with_times);
        free(o.d);
    }
    /* updates that carry the node's clock: different writes, different digests */
    dlist all_a = {.dg = ref.dg, .normalize = true}, all_b = {.dg = ref.dg, .normalize = true};
    read_case("v8-plain", "cdc_raw", &all_a);
    read_case("v7-zstd", "cdc_raw", &all_b);
    qsort(all_a.d, all_a.n, 16, cmp16);
    qsort(all_b.d, all_b.n, 16, cmp16);
    size_t common = 0;
    for (size_t i = 0, j = 0; i < all_a.n && j < all_b.n;) {
        int c = memcmp(all_a.d[i], all_b.d[j], 16);
        if (c == 0) common++, i++, j++;
        else if (c < 0) i++;
        else j++;
    }
    assert_int_equal(common, ref.n);
    /* and no two different updates of one node collide */
    for (size_t i = 1; i < all_a.n; i++) assert_true(memcmp(all_a.d[i - 1], all_a.d[i], 16) != 0);
    free(all_a.d), free(all_b.d), free(ref.d);
    cf_sc_digester_destroy(ref.dg);
}

/* ---- sensitivity: every covered field changes the digest ---- */

typedef struct pick {
    uint8_t *bytes; /* our copy of the entry the update was decoded from */
    size_t len;
    int mv;
    bool found;
} pick;

static void test_every_field_counts(void **state) {
    (void)state;
    /* the first all_types entry with a complex column, an expiring or deleted cell is not needed */
    cf_cass_schema *s = fixture_schema("v8-plain");
    char **logs = fixture_logs(FIX "/v8-plain/cdc_raw");
    assert_non_null(logs);
    cf_cass_decoder *dec = cf_cass_decoder_new(s);
    cf_err err;
    cf_cass_segment *seg;
    assert_int_equal(cf_cass_segment_open(logs[0], NULL, &seg, &err), CF_OK);
    int mv = cf_cass_segment_get_info(seg)->messaging_version;
    cf_cass_entry e;
    uint8_t *copy = NULL;
    cf_cass_mutation *m = NULL;
    cf_cass_update *u = NULL;
    while (!u && cf_cass_segment_next(seg, &e, &err) == CF_OK) {
        free(copy);
        copy = malloc(e.len);
        memcpy(copy, e.data, e.len);
        if (cf_cass_decode_mutation(dec, copy, e.len, mv, &m, NULL, &err) != CF_OK) continue;
        for (size_t i = 0; i < m->n_updates && !u; i++) {
            cf_cass_update *x = &m->updates[i];
            if (strcmp(x->table->name, "all_types") || x->n_rows == 0 || x->rows[0].n_columns < 10) continue;
            bool complex = false;
            for (size_t c = 0; c < x->rows[0].n_columns; c++)
                if (x->rows[0].columns[c].complex && x->rows[0].columns[c].n_cells) complex = true;
            if (complex && x->rows[0].has_liveness) u = x;
        }
    }
    assert_non_null(u);
    cf_sc_digester *dg = cf_sc_digester_new();
    uint8_t base[16], now[16];
    int64_t max_ts;
    cf_sc_digest(dg, u, base, &max_ts);
    assert_true(max_ts >= 1700000000000000LL);
    cf_sc_digest(dg, u, now, NULL);
    assert_memory_equal(base, now, 16); /* deterministic */
#define CHANGED(what)                                             \
    do {                                                          \
        cf_sc_digest(dg, u, now, NULL);                           \
        if (memcmp(base, now, 16) == 0) fail_msg("%s: digest unchanged", what); \
    } while (0)
#define SAME()                                                    \
    do {                                                          \
        cf_sc_digest(dg, u, now, NULL);                           \
        assert_memory_equal(base, now, 16);                       \
    } while (0)
    cf_cass_row *row = &u->rows[0];
    cf_cass_column_data *simple = NULL, *cplx = NULL;
    for (size_t c = 0; c < row->n_columns; c++) {
        cf_cass_column_data *cd = &row->columns[c];
        if (!cd->complex && cd->n_cells && cd->cells[0].value.len && !simple) simple = cd;
        if (cd->complex && cd->n_cells && cd->cells[0].path.len && !cplx) cplx = cd;
    }
    assert_non_null(simple);
    assert_non_null(cplx);
    cf_cass_cell *cell = &simple->cells[0];
    /* value byte */
    uint8_t *vp = (uint8_t *)cell->value.p;
    vp[0] ^= 1;
    CHANGED("cell value");
    vp[0] ^= 1;
    SAME();
    cell->ts++;
    CHANGED("cell timestamp");
    cell->ts--;
    cell->expiring = true;
    cell->ttl = 100;
    cell->local_deletion_time = 1800000000;
    CHANGED("cell becomes expiring");
    uint8_t exp[16];
    memcpy(exp, now, 16);
    cell->ttl = 101;
    cf_sc_digest(dg, u, now, NULL);
    assert_true(memcmp(exp, now, 16) != 0); /* TTL */
    cell->ttl = 100;
    cell->local_deletion_time++;
    cf_sc_digest(dg, u, now, NULL);
    assert_true(memcmp(exp, now, 16) != 0); /* local expiration time */
    cell->expiring = false;
    cell->ttl = 0;
    cell->local_deletion_time = CF_CASS_NO_DELETION_TIME;
    SAME();
    cell->deleted = true;
    CHANGED("cell tombstone flag");
    cell->deleted = false;
    /* cell path of a collection element */
    uint8_t *pp = (uint8_t *)cplx->cells[0].path.p;
    pp[cplx->cells[0].path.len - 1] ^= 0x10;
    CHANGED("cell path");
    pp[cplx->cells[0].path.len - 1] ^= 0x10;
    cplx->has_complex_deletion = !cplx->has_complex_deletion;
    cplx->complex_deletion.marked_at = 1700000000000999LL;
    CHANGED("complex deletion");
    cplx->has_complex_deletion = !cplx->has_complex_deletion;
    SAME();
    /* a null value vs an empty one */
    cf_cass_bytes saved = cell->value;
    cell->value.len = 0;
    CHANGED("value length");
    uint8_t empty_d[16];
    memcpy(empty_d, now, 16);
    cell->value.p = NULL;
    cf_sc_digest(dg, u, now, NULL);
    assert_true(memcmp(empty_d, now, 16) != 0);
    cell->value = saved;
    /* clustering */
    uint8_t *cp = (uint8_t *)row->clustering[1].p;
    cp[0] ^= 1;
    CHANGED("clustering value");
    cp[0] ^= 1;
    /* partition key */
    uint8_t *kp = (uint8_t *)u->key.p;
    kp[u->key.len - 2] ^= 1;
    CHANGED("partition key");
    kp[u->key.len - 2] ^= 1;
    /* row liveness */
    row->ts++;
    CHANGED("row timestamp");
    row->ts--;
    row->has_liveness = false;
    CHANGED("row liveness");
    row->has_liveness = true;
    /* row deletion */
    row->deletion.marked_at = 1700000000000500LL;
    row->deletion.local_deletion_time = 1800000000;
    CHANGED("row deletion");
    row->deletion.marked_at = CF_CASS_LIVE_TS;
    row->deletion.local_deletion_time = CF_CASS_NO_DELETION_TIME;
    /* partition deletion */
    u->partition_deletion.marked_at = 1700000000000500LL;
    u->partition_deletion.local_deletion_time = 1800000000;
    CHANGED("partition deletion");
    u->partition_deletion.marked_at = CF_CASS_LIVE_TS;
    u->partition_deletion.local_deletion_time = CF_CASS_NO_DELETION_TIME;
    /* column name: a cell under another column */
    const char *nm = simple->name;
    simple->name = "c_other";
    CHANGED("column name");
    simple->name = nm;
    /* table id */
    u->table_id[15] ^= 1;
    CHANGED("table id");
    u->table_id[15] ^= 1;
    /* what the digest does NOT cover: the serialization's EncodingStats */
    u->min_timestamp -= 12345;
    SAME();
    cf_sc_digester_destroy(dg);
    free(copy);
    cf_cass_segment_destroy(seg);
    cf_cass_decoder_destroy(dec);
    free_strv(logs);
    cf_cass_schema_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_is_equal),
        cmocka_unit_test(test_same_writes_other_nodes),
        cmocka_unit_test(test_every_field_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
