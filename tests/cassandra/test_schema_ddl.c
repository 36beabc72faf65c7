/*
 * test_schema_ddl.c - the DDL parser and the system_schema loader.
 * Oracles, both written by Cassandra 5.0.5 (tests/data/cassandra/<case>/):
 * schema.cql is DESCRIBE KEYSPACE ... WITH INTERNALS, system_schema.json is
 * SELECT JSON of the system_schema tables for the same keyspace. The model
 * parsed from the one must equal the model loaded from the other, and both
 * must say what the workload created (scripts/cassandra-fixtures/workload.py).
 * 3.x-style DDL (COMPACT STORAGE, tab-indented, ID after columns) follows the
 * schema.cql that Cassandra 3.11 snapshots write (TableCQLHelper).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_schema.h"

#define DATA CF_TESTS_DIR "/data/cassandra"

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    cf_buf b = CF_BUF_INIT;
    char tmp[8192];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) cf_buf_append(&b, tmp, n);
    fclose(f);
    return cf_buf_detach(&b, len);
}

static cf_cass_schema *from_ddl(const char *kase) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/schema.cql", DATA, kase);
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    if (cf_cass_ddl_parse_file(s, path, &err) != CF_OK)
        fail_msg("%s: %s / %s / %s", path, err.message, err.detail, err.where);
    return s;
}

static cf_cass_schema *from_system(const char *kase) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/system_schema.json", DATA, kase);
    size_t len;
    char *txt = slurp(path, &len);
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    if (cf_cass_schema_load_system_json(s, txt, len, &err) != CF_OK)
        fail_msg("%s: %s / %s / %s", path, err.message, err.detail, err.where);
    free(txt);
    return s;
}

static void assert_same_columns(const cf_cass_column *a, size_t na, const cf_cass_column *b, size_t nb,
                                const char *what) {
    if (na != nb) fail_msg("%s: %zu vs %zu columns", what, na, nb);
    for (size_t i = 0; i < na; i++) {
        /* regular/static order differs (declaration vs system_schema's name
         * order): look up by name */
        const cf_cass_column *m = NULL;
        for (size_t j = 0; j < nb; j++)
            if (strcmp(a[i].name, b[j].name) == 0) m = &b[j];
        if (!m) fail_msg("%s: column %s missing", what, a[i].name);
        assert_int_equal(a[i].kind, m->kind);
        assert_int_equal(a[i].position, m->position);
        assert_int_equal(a[i].reversed, m->reversed);
        if (!cf_cql_type_equal(a[i].type, m->type)) {
            char *x = cf_cql_type_to_string(a[i].type), *y = cf_cql_type_to_string(m->type);
            fail_msg("%s.%s: type %s vs %s", what, a[i].name, x, y);
        }
    }
}

static void compare_case(const char *kase, size_t n_tables) {
    cf_cass_schema *d = from_ddl(kase), *y = from_system(kase);
    assert_int_equal(cf_cass_schema_table_count(d), cf_cass_schema_table_count(y));
    assert_int_equal(cf_cass_schema_table_count(d), n_tables);
    for (size_t i = 0; i < cf_cass_schema_table_count(y); i++) {
        const cf_cass_table *ty = cf_cass_schema_table_at(y, i);
        const cf_cass_table *td = cf_cass_schema_table_by_id(d, ty->id);
        if (!td) fail_msg("%s: table %s.%s (id from system_schema) not in DDL", kase, ty->keyspace, ty->name);
        assert_string_equal(td->name, ty->name);
        assert_int_equal(td->cdc, ty->cdc);
        assert_int_equal(td->counter, ty->counter);
        assert_int_equal(td->compact_storage, ty->compact_storage);
        assert_int_equal(td->is_view, ty->is_view);
        assert_same_columns(td->partition_key, td->n_partition_key, ty->partition_key, ty->n_partition_key, ty->name);
        /* key columns in the same order */
        for (size_t k = 0; k < td->n_partition_key; k++)
            assert_string_equal(td->partition_key[k].name, ty->partition_key[k].name);
        for (size_t k = 0; k < td->n_clustering; k++)
            assert_string_equal(td->clustering[k].name, ty->clustering[k].name);
        assert_same_columns(td->clustering, td->n_clustering, ty->clustering, ty->n_clustering, ty->name);
        assert_same_columns(td->regular, td->n_regular, ty->regular, ty->n_regular, ty->name);
        assert_same_columns(td->statics, td->n_static, ty->statics, ty->n_static, ty->name);
        assert_int_equal(td->n_dropped, ty->n_dropped);
        for (size_t k = 0; k < td->n_dropped; k++) {
            assert_string_equal(td->dropped[k].name, ty->dropped[k].name);
            /* DESCRIBE prints micros, system_schema millis (Cassandra reads it
             * back as millis * 1000, SchemaKeyspace.createDroppedColumnFromRow);
             * system.local's thrift_version is dropped at Long.MAX_VALUE */
            assert_true(td->dropped[k].dropped_time / 1000 == ty->dropped[k].dropped_time / 1000);
            assert_true(cf_cql_type_equal(td->dropped[k].type, ty->dropped[k].type));
        }
    }
    cf_cass_schema_destroy(d);
    cf_cass_schema_destroy(y);
}

static void test_ddl_equals_system_schema(void **state) {
    (void)state;
    const char *cases[] = {"v7-plain",  "v8-plain",   "v7-lz4",     "v8-lz4",  "v7-snappy",
                           "v8-snappy", "v7-deflate", "v8-deflate", "v7-zstd", "v8-zstd"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) compare_case(cases[i], 5);
    /* DESCRIBE FULL SCHEMA WITH INTERNALS: every system keyspace of 5.0.5
     * (custom types, composite keys, virtual keyspaces in comments) */
    compare_case("full-schema", 51);
    compare_case("v8-lz4-rollover", 6); /* + cdcks.bulk */
    /* 5.0 dynamic data masking: columns printed with MASKED WITH ... */
    compare_case("masked", 1);
}

static void expect_error_fn(const char *ddl, cf_code code, const char *msg_part);

/* Materialized views (DESCRIBE and system_schema.views of a 5.0.5 node with
 * materialized_views_enabled): a view's id and columns, typed from its base. */
static void test_views(void **state) {
    (void)state;
    compare_case("mv", 3);
    cf_cass_schema *s = from_ddl("mv");
    const cf_cass_table *v = cf_cass_schema_table_by_name(s, "ex", "mv");
    assert_non_null(v);
    assert_true(v->is_view && v->has_id);
    assert_string_equal(v->partition_key[0].name, "v");
    assert_int_equal(v->partition_key[0].type->kind, CF_CQL_TEXT);
    assert_true(v->clustering[0].reversed);
    const cf_cass_table *all = cf_cass_schema_table_by_name(s, "ex", "MvAll");
    assert_int_equal(all->n_partition_key, 2);
    assert_int_equal(all->n_regular, 1);
    assert_string_equal(all->regular[0].name, "v");
    cf_cass_schema_destroy(s);
    expect_error_fn("CREATE MATERIALIZED VIEW ks.v AS SELECT * FROM ks.nope WHERE a IS NOT NULL PRIMARY KEY (a);",
                    CF_ERR_NOT_FOUND, "base table");
}

static void test_fixture_model(void **state) {
    (void)state;
    cf_cass_schema *s = from_ddl("v8-plain");
    const cf_cass_table *t = cf_cass_schema_table_by_name(s, "cdcks", "all_types");
    assert_non_null(t);
    assert_true(t->has_id && t->cdc);
    assert_int_equal(t->n_partition_key, 2);
    assert_string_equal(t->partition_key[0].name, "id");
    assert_string_equal(t->partition_key[1].name, "bucket");
    assert_int_equal(t->n_clustering, 2);
    assert_string_equal(t->clustering[0].name, "ck1");
    assert_true(t->clustering[0].reversed);
    assert_int_equal(cf_cql_type_fixed_length(t->clustering[0].type), 16);
    assert_false(t->clustering[1].reversed);
    assert_int_equal(t->n_static, 2);
    assert_non_null(cf_cass_table_column(t, "Quoted Col"));
    const cf_cass_column *c = cf_cass_table_column(t, "c_udt");
    assert_true(cf_cql_type_is_multicell(c->type));
    assert_string_equal(cf_cql_type_field_name(c->type, 1), "Zip Code");
    c = cf_cass_table_column(t, "c_frozen_udt");
    assert_false(cf_cql_type_is_multicell(c->type));
    const cf_cql_type *home = cf_cql_type_field(c->type, 1);
    assert_int_equal(home->kind, CF_CQL_UDT);
    assert_string_equal(home->name, "address");
    c = cf_cass_table_column(t, "c_varchar");
    assert_int_equal(c->type->kind, CF_CQL_TEXT);
    c = cf_cass_table_column(t, "c_vector");
    assert_int_equal(cf_cql_type_fixed_length(c->type), 12);
    c = cf_cass_table_column(t, "c_tuple");
    assert_int_equal(c->type->kind, CF_CQL_TUPLE);
    assert_int_equal(cf_cql_type_field_count(c->type), 3);

    /* the dropped column: the ALTER made a second version of the same id */
    const cf_cass_table *simple = cf_cass_schema_table_by_name(s, "cdcks", "simple");
    assert_null(cf_cass_table_column(simple, "dropme"));
    const cf_cass_dropped_column *dc = cf_cass_table_dropped_n(simple, "dropme", 6);
    assert_non_null(dc);
    assert_int_equal(dc->type->kind, CF_CQL_TEXT);
    assert_true(dc->dropped_time > 1700000000000000LL);
    cf_cass_table *const *versions;
    assert_int_equal(cf_cass_schema_table_versions(s, simple->id, &versions), 2);
    assert_non_null(cf_cass_table_column(versions[0], "dropme"));
    assert_ptr_equal(versions[1], simple);

    const cf_cass_table *plain = cf_cass_schema_table_by_name(s, "cdcks", "plain");
    assert_false(plain->cdc);
    const cf_cass_table *ctr = cf_cass_schema_table_by_name(s, "cdcks", "counters");
    assert_true(ctr->counter);
    assert_non_null(cf_cass_schema_keyspace(s, "cdcks"));
    cf_cass_schema_destroy(s);
}

/* The partition key tokens Cassandra reported for the fixture rows. */
static void test_fixture_tokens(void **state) {
    (void)state;
    size_t len;
    char *txt = slurp(DATA "/v8-plain/tokens.jsonl", &len);
    int checked = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        long long tok;
        char *tp = strstr(line, "\"token\": ");
        assert_non_null(tp);
        tok = strtoll(tp + 9, NULL, 10);
        char *kp = strstr(line, "\"k\": \"");
        if (kp && strstr(line, "\"table\": \"simple\"")) {
            kp += 6;
            char *e = strchr(kp, '"');
            assert_true(cf_cass_murmur3_token((const uint8_t *)kp, (size_t)(e - kp)) == tok);
            checked++;
        }
        char *pp = strstr(line, "\"p\": ");
        if (pp) {
            int p = atoi(pp + 5);
            uint8_t b[4] = {(uint8_t)(p >> 24), (uint8_t)(p >> 16), (uint8_t)(p >> 8), (uint8_t)p};
            assert_true(cf_cass_murmur3_token(b, 4) == tok);
            checked++;
        }
        char *ip = strstr(line, "\"id\": ");
        char *bp = strstr(line, "\"bucket\": \"");
        if (ip && bp) {
            /* composite key: per component u16 length, bytes, 0 end byte */
            int id = atoi(ip + 6);
            bp += 11;
            char *e = strchr(bp, '"');
            size_t bl = (size_t)(e - bp);
            uint8_t key[64];
            size_t n = 0;
            key[n++] = 0, key[n++] = 4;
            key[n++] = (uint8_t)(id >> 24), key[n++] = (uint8_t)(id >> 16), key[n++] = (uint8_t)(id >> 8),
            key[n++] = (uint8_t)id;
            key[n++] = 0;
            key[n++] = (uint8_t)(bl >> 8), key[n++] = (uint8_t)bl;
            memcpy(key + n, bp, bl);
            n += bl;
            key[n++] = 0;
            assert_true(cf_cass_murmur3_token(key, n) == tok);
            checked++;
        }
    }
    assert_true(checked >= 8);
    free(txt);
}

static void expect_error_fn(const char *ddl, cf_code code, const char *msg_part) {
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    cf_code rc = cf_cass_ddl_parse(s, ddl, strlen(ddl), "bad.cql", &err);
    if (rc != code) fail_msg("%s: got %d (%s), expected %d", ddl, rc, err.message, code);
    if (msg_part && !strstr(err.message, msg_part)) fail_msg("%s: message \"%s\" lacks \"%s\"", ddl, err.message, msg_part);
    cf_cass_schema_destroy(s);
}

static const char *ddl3x =
    "-- a Cassandra 3.11 snapshot schema.cql and cqlsh DESCRIBE output\n"
    "CREATE KEYSPACE \"Keyspace1\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}  AND durable_writes = true;\n"
    "USE \"Keyspace1\";\n"
    "CREATE TABLE IF NOT EXISTS \"Keyspace1\".\"Standard1\" (\n"
    "\tkey ascii,\n\tcol ascii,\n\tval blob,\n\tPRIMARY KEY (key, col))\n"
    "\tWITH ID = 26be1710-7cb9-11ee-9fce-59fe9713701b\n"
    "\tAND COMPACT STORAGE\n"
    "\tAND CLUSTERING ORDER BY (col ASC)\n"
    "\tAND bloom_filter_fp_chance = 0.01\n"
    "\tAND dclocal_read_repair_chance = 0.1\n"
    "\tAND crc_check_chance = 1.0\n"
    "\tAND default_time_to_live = 0\n"
    "\tAND caching = { 'keys': 'ALL', 'rows_per_partition': 'NONE' }\n"
    "\tAND compaction = { 'max_threshold': '32', 'min_threshold': '4', 'class': 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy' }\n"
    "\tAND cdc = false\n"
    "\tAND extensions = {  };\n"
    "/* static compact: columns become static under a hidden clustering column */\n"
    "CREATE TABLE sc (k int PRIMARY KEY, v1 text, v2 bigint) WITH COMPACT STORAGE;\n"
    "// dense with no regular column gets the hidden value column\n"
    "CREATE TABLE d (k int, c1 int, c2 text, PRIMARY KEY ((k), c1, c2)) WITH COMPACT STORAGE AND CLUSTERING ORDER BY (c1 DESC, c2 ASC);\n"
    "CREATE INDEX idx ON \"Keyspace1\".sc (v1);\n"
    "CREATE FUNCTION f(a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS $$ return a; /* ; */ $$;\n"
    "CREATE TABLE ks2.x (\"Weird \"\"Name\" int PRIMARY KEY, \"select\" text) WITH cdc = true AND ID = 00000000-0000-0000-0000-000000000001;\n";

static void test_ddl_3x(void **state) {
    (void)state;
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    if (cf_cass_ddl_parse(s, ddl3x, strlen(ddl3x), "3x.cql", &err) != CF_OK)
        fail_msg("%s / %s / %s", err.message, err.detail, err.where);
    const cf_cass_table *t = cf_cass_schema_table_by_name(s, "Keyspace1", "Standard1");
    assert_non_null(t);
    assert_true(t->compact_storage && t->dense && !t->compound);
    assert_int_equal(t->n_regular, 1);
    assert_string_equal(t->regular[0].name, "val");
    char u[37];
    cf_cass_uuid_format(t->id, u);
    assert_string_equal(u, "26be1710-7cb9-11ee-9fce-59fe9713701b");
    t = cf_cass_schema_table_by_name(s, "Keyspace1", "sc");
    assert_int_equal(t->n_static, 2);
    assert_int_equal(t->n_clustering, 1);
    assert_string_equal(t->clustering[0].name, "column1");
    assert_int_equal(t->regular[0].type->kind, CF_CQL_EMPTY);
    assert_false(t->dense);
    t = cf_cass_schema_table_by_name(s, "Keyspace1", "d");
    assert_true(t->dense && t->compound);
    assert_true(t->clustering[0].reversed);
    assert_string_equal(t->regular[0].name, "value");
    t = cf_cass_schema_table_by_name(s, "ks2", "x");
    assert_non_null(cf_cass_table_column(t, "Weird \"Name"));
    assert_non_null(cf_cass_table_column(t, "select"));
    assert_true(t->cdc);
    cf_buf b = CF_BUF_INIT;
    cf_cass_table_append_cql(t, &b);
    assert_non_null(strstr(b.data, "\"Weird \"\"Name\" int PRIMARY KEY"));
    assert_non_null(strstr(b.data, "\"select\" text"));
    /* what we print parses back to the same table */
    cf_cass_schema *s2 = cf_cass_schema_new();
    assert_int_equal(cf_cass_ddl_parse(s2, b.data, b.len, "printed", &err), CF_OK);
    const cf_cass_table *t2 = cf_cass_schema_table_by_name(s2, "ks2", "x");
    assert_non_null(t2);
    assert_memory_equal(t2->id, t->id, 16);
    cf_buf_free(&b);
    cf_cass_schema_destroy(s2);
    cf_cass_schema_destroy(s);
}


/* Cassandra 3.11's schema.cql format (ColumnFamilyStoreCQLHelper), the
 * exact strings its own ColumnFamilyStoreCQLHelperTest expects (only the
 * random cfId is fixed here and the statements closed with ';'): types
 * without a space before '(', tab indentation, IF NOT EXISTS, re-added
 * columns reported as CREATE + DROP USING TIMESTAMP + ADD [static]. */
static const char *helper311 =
    "CREATE TYPE cql_test_keyspace_user_types.a(a1 varint, a2 varint, a3 varint);\n"
    "CREATE TYPE cql_test_keyspace_user_types.b(b1 frozen<a>, b2 frozen<a>, b3 frozen<a>);\n"
    "CREATE TYPE cql_test_keyspace_user_types.c(c1 frozen<b>, c2 frozen<b>, c3 frozen<b>);\n"
    "CREATE TABLE IF NOT EXISTS cql_test_keyspace_user_types.t (pk1 varint, c frozen<c>, PRIMARY KEY (pk1));\n"
    "CREATE TABLE IF NOT EXISTS cql_test_keyspace_readded_columns.test_table_readded_columns (\n"
    "\tpk1 varint,\n\tck1 varint,\n\treg2 varint static,\n\treg1 varint,\n\treg3 varint,\n\tPRIMARY KEY (pk1, ck1))\n"
    "\tWITH ID = 00000000-0000-0000-0000-0000000000aa;\n"
    "ALTER TABLE cql_test_keyspace_readded_columns.test_table_readded_columns DROP reg1 USING TIMESTAMP 10000;\n"
    "ALTER TABLE cql_test_keyspace_readded_columns.test_table_readded_columns ADD reg1 varint;\n"
    "ALTER TABLE cql_test_keyspace_readded_columns.test_table_readded_columns DROP reg2 USING TIMESTAMP 20000;\n"
    "ALTER TABLE cql_test_keyspace_readded_columns.test_table_readded_columns ADD reg2 varint static;\n"
    "CREATE TABLE IF NOT EXISTS cql_test_keyspace_create_table.test_table_create_table (\n"
    "\tpk1 varint,\n\tpk2 ascii,\n\tck1 varint,\n\tck2 varint,\n\tst1 ascii static,\n\treg1 ascii,\n"
    "\treg2 frozen<list<varint>>,\n\treg3 map<ascii, varint>,\n\tPRIMARY KEY ((pk1, pk2), ck1, ck2))\n"
    "\tWITH ID = 00000000-0000-0000-0000-0000000000bb\n\tAND CLUSTERING ORDER BY (ck1 DESC, ck2 ASC);\n"
    "CREATE TABLE IF NOT EXISTS cql_test_keyspace_compact.test_table_compact (\n"
    "\tpk1 varint,\n\tpk2 ascii,\n\tck1 varint,\n\tck2 varint,\n\treg varint,\n\tPRIMARY KEY ((pk1, pk2), ck1, ck2))\n"
    "\tWITH ID = 00000000-0000-0000-0000-0000000000cc\n\tAND COMPACT STORAGE\n\tAND CLUSTERING ORDER BY (ck1 DESC, ck2 ASC);\n"
    "CREATE TABLE IF NOT EXISTS cql_test_keyspace_counter.test_table_counter (\n"
    "\tpk1 varint,\n\tpk2 ascii,\n\tck1 varint,\n\tck2 varint,\n\tcnt counter,\n\tPRIMARY KEY ((pk1, pk2), ck1, ck2))\n"
    "\tWITH ID = 00000000-0000-0000-0000-0000000000dd\n\tAND COMPACT STORAGE\n\tAND CLUSTERING ORDER BY (ck1 DESC, ck2 ASC);\n";

static void test_ddl_311_helper(void **state) {
    (void)state;
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    if (cf_cass_ddl_parse(s, helper311, strlen(helper311), "schema.cql", &err) != CF_OK)
        fail_msg("%s / %s / %s", err.message, err.detail, err.where);
    const cf_cass_table *t = cf_cass_schema_table_by_name(s, "cql_test_keyspace_user_types", "t");
    const cf_cql_type *c = cf_cass_table_column(t, "c")->type;
    assert_string_equal(c->name, "c");
    const cf_cql_type *b = cf_cql_type_field(c, 2);
    assert_string_equal(b->name, "b");
    assert_string_equal(cf_cql_type_field(b, 0)->name, "a");
    assert_int_equal(cf_cql_type_field(cf_cql_type_field(b, 0), 2)->kind, CF_CQL_VARINT);

    t = cf_cass_schema_table_by_name(s, "cql_test_keyspace_readded_columns", "test_table_readded_columns");
    assert_int_equal(t->n_regular, 2); /* reg3, reg1 re-added */
    assert_int_equal(t->n_static, 1);
    assert_string_equal(t->statics[0].name, "reg2");
    assert_int_equal(t->n_dropped, 2);
    const cf_cass_dropped_column *d1 = cf_cass_table_dropped_n(t, "reg1", 4), *d2 = cf_cass_table_dropped_n(t, "reg2", 4);
    assert_true(d1->dropped_time == 10000 && d1->kind == CF_CASS_REGULAR);
    assert_true(d2->dropped_time == 20000 && d2->kind == CF_CASS_STATIC);
    cf_cass_table *const *vs;
    assert_int_equal(cf_cass_schema_table_versions(s, t->id, &vs), 5); /* CREATE + 4 ALTERs */

    t = cf_cass_schema_table_by_name(s, "cql_test_keyspace_create_table", "test_table_create_table");
    assert_true(t->clustering[0].reversed && !t->clustering[1].reversed);
    assert_false(cf_cql_type_is_multicell(cf_cass_table_column(t, "reg2")->type));
    assert_true(cf_cql_type_is_multicell(cf_cass_table_column(t, "reg3")->type));
    assert_false(t->compact_storage);

    t = cf_cass_schema_table_by_name(s, "cql_test_keyspace_compact", "test_table_compact");
    assert_true(t->compact_storage && t->dense && t->compound);
    assert_int_equal(t->n_regular, 1);
    t = cf_cass_schema_table_by_name(s, "cql_test_keyspace_counter", "test_table_counter");
    assert_true(t->counter && t->compact_storage);
    cf_cass_schema_destroy(s);
}

static void expect_error(const char *ddl, cf_code code, const char *where, const char *msg_part) {
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    cf_code rc = cf_cass_ddl_parse(s, ddl, strlen(ddl), "bad.cql", &err);
    if (rc != code) fail_msg("%s: got %d (%s), expected %d", ddl, rc, err.message, code);
    if (where && strcmp(err.where, where) != 0) fail_msg("%s: where %s, expected %s (%s)", ddl, err.where, where, err.message);
    if (msg_part && !strstr(err.message, msg_part)) fail_msg("%s: message \"%s\" lacks \"%s\"", ddl, err.message, msg_part);
    cf_cass_schema_destroy(s);
}

static void test_ddl_errors(void **state) {
    (void)state;
    expect_error("CREATE TABLE t (k int PRIMARY KEY);", CF_ERR_INVALID, "bad.cql:1:14", "no keyspace");
    expect_error("CREATE TABLE ks.t (k int, v text);", CF_ERR_INVALID, NULL, "no PRIMARY KEY");
    expect_error("CREATE TABLE ks.t (k int, v text, PRIMARY KEY (x));", CF_ERR_SCHEMA, NULL, "\"x\"");
    expect_error("CREATE TABLE ks.t (\n  k int PRIMARY KEY,\n  v nosuchtype\n);", CF_ERR_NOT_FOUND, "bad.cql:3:5",
                 "nosuchtype");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY, k text);", CF_ERR_SCHEMA, NULL, "twice");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY) WITH ID = 'nope';", CF_ERR_INVALID, NULL, "UUID");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY) WITH cdc = maybe;", CF_ERR_INVALID, NULL, "cdc");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY, v int static);", CF_ERR_SCHEMA, NULL, "static");
    expect_error("CREATE TABLE ks.t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (k DESC);",
                 CF_ERR_SCHEMA, NULL, "clustering");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY", CF_ERR_INVALID, NULL, "end of input");
    expect_error("SELECT * FROM ks.t;", CF_ERR_INVALID, "bad.cql:1:1", "expected a CREATE");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY) WITH comment = 'unterminated;", CF_ERR_INVALID, NULL,
                 "unterminated");
    expect_error("/* never closed", CF_ERR_INVALID, NULL, "comment");
    expect_error("ALTER TABLE ks.nope ADD x int;", CF_ERR_NOT_FOUND, NULL, "unknown table");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY); ALTER TABLE ks.t DROP k;", CF_ERR_SCHEMA, NULL, "primary key");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY); ALTER TABLE ks.t RENAME k TO j;", CF_ERR_UNSUPPORTED, NULL,
                 "ALTER TABLE");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY, v text MASKED WITH system.mask_inner 1);", CF_ERR_INVALID, NULL,
                 "masking function");
    expect_error("CREATE TABLE ks.t (k int PRIMARY KEY, v text); ALTER TABLE ks.t ALTER v TYPE blob;", CF_ERR_UNSUPPORTED,
                 NULL, "ALTER column");
    {
        const char *ok = "CREATE TABLE ks.t (k int PRIMARY KEY, v text MASKED WITH DEFAULT);\n"
                         "ALTER TABLE ks.t ALTER v MASKED WITH mask_replace('x');\nALTER TABLE ks.t ALTER v DROP MASKED;\n"
                         "ALTER TABLE ks.t ADD w int MASKED WITH system.mask_null();";
        cf_cass_schema *s = cf_cass_schema_new();
        cf_err err;
        if (cf_cass_ddl_parse(s, ok, strlen(ok), "masks.cql", &err) != CF_OK) fail_msg("%s / %s", err.message, err.where);
        assert_non_null(cf_cass_table_column(cf_cass_schema_table_by_name(s, "ks", "t"), "w"));
        cf_cass_schema_destroy(s);
    }
    expect_error("CREATE TABLE ks.a (k int PRIMARY KEY) WITH ID = 00000000-0000-0000-0000-000000000001;\n"
                 "CREATE TABLE ks.b (k int PRIMARY KEY) WITH ID = 00000000-0000-0000-0000-000000000001;",
                 CF_ERR_SCHEMA, "bad.cql:2:14", "table id");
}

/* Every prefix of a real DESCRIBE output either parses or fails cleanly. */
static void test_truncated_inputs(void **state) {
    (void)state;
    size_t len;
    char *txt = slurp(DATA "/v8-plain/schema.cql", &len);
    for (size_t n = 0; n < len; n += 7) {
        cf_cass_schema *s = cf_cass_schema_new();
        cf_err err;
        cf_code rc = cf_cass_ddl_parse(s, txt, n, "cut.cql", &err);
        if (rc) assert_true(err.message[0] && err.where[0]);
        cf_cass_schema_destroy(s);
    }
    free(txt);
}

static void test_history(void **state) {
    (void)state;
    cf_cass_schema *s = cf_cass_schema_new();
    const char *v1 = "CREATE TABLE ks.t (k int PRIMARY KEY, a int) WITH ID = 5a1c3a3e-0000-11ee-8000-000000000001;";
    const char *v2 = "CREATE TABLE ks.t (k int PRIMARY KEY, a int, b text) WITH ID = 5a1c3a3e-0000-11ee-8000-000000000001;";
    assert_int_equal(cf_cass_ddl_parse(s, v1, strlen(v1), "v1", NULL), CF_OK);
    assert_int_equal(cf_cass_ddl_parse(s, v1, strlen(v1), "v1", NULL), CF_OK); /* same: no new version */
    assert_int_equal(cf_cass_ddl_parse(s, v2, strlen(v2), "v2", NULL), CF_OK);
    const cf_cass_table *t = cf_cass_schema_table_by_name(s, "ks", "t");
    cf_cass_table *const *vs;
    assert_int_equal(cf_cass_schema_table_versions(s, t->id, &vs), 2);
    assert_null(cf_cass_table_column(vs[0], "b"));
    assert_non_null(cf_cass_table_column(vs[1], "b"));
    assert_ptr_equal(cf_cass_schema_table_by_id(s, t->id), t);
    /* a reference outlives the schema */
    cf_cass_table *keep = cf_cass_table_ref(vs[0]);
    cf_cass_schema_remove_table(s, "ks", "t");
    assert_null(cf_cass_schema_table_by_name(s, "ks", "t"));
    assert_non_null(cf_cass_schema_table_by_id(s, keep->id));
    cf_cass_schema_destroy(s);
    assert_non_null(cf_cass_table_column(keep, "a"));
    cf_cass_table_unref(keep);
}

static void test_split_partition_key(void **state) {
    (void)state;
    cf_cass_schema *s = from_ddl("v8-plain");
    const cf_cass_table *t = cf_cass_schema_table_by_name(s, "cdcks", "all_types");
    const uint8_t key[] = {0, 4, 0, 0, 0, 1, 0, 0, 1, 'a', 0};
    const uint8_t *comp[2];
    size_t cl[2];
    assert_int_equal(cf_cass_table_split_partition_key(t, key, sizeof key, comp, cl, NULL), CF_OK);
    assert_int_equal(cl[0], 4);
    assert_int_equal(comp[0][3], 1);
    assert_int_equal(cl[1], 1);
    assert_int_equal(comp[1][0], 'a');
    cf_err err;
    for (size_t n = 0; n < sizeof key; n++)
        assert_int_equal(cf_cass_table_split_partition_key(t, key, n, comp, cl, &err), CF_ERR_CORRUPT);
    const cf_cass_table *ev = cf_cass_schema_table_by_name(s, "cdcks", "events");
    assert_int_equal(cf_cass_table_split_partition_key(ev, key, 3, comp, cl, &err), CF_ERR_CORRUPT);
    assert_int_equal(cf_cass_table_split_partition_key(ev, key + 2, 4, comp, cl, &err), CF_OK);
    cf_cass_schema_destroy(s);
}

static void test_system_json_errors(void **state) {
    (void)state;
    const char *bad[] = {
        "not json",
        "{}",
        "{\"tables\": [{\"keyspace_name\": \"k\", \"table_name\": \"t\", \"id\": \"zz\"}], \"columns\": []}",
        "{\"tables\": [{\"keyspace_name\": \"k\", \"table_name\": \"t\", \"id\": \"00000000-0000-0000-0000-000000000001\"}], \"columns\": []}",
        "{\"tables\": [{\"keyspace_name\": \"k\", \"table_name\": \"t\", \"id\": \"00000000-0000-0000-0000-000000000001\"}],"
        " \"columns\": [{\"keyspace_name\": \"k\", \"table_name\": \"t\", \"column_name\": \"a\", \"kind\": \"partition_key\", \"position\": 0, \"type\": \"nope\"}]}",
        "{\"tables\": [], \"columns\": [], \"types\": [{\"keyspace_name\": \"k\", \"type_name\": \"a\", \"field_names\": [\"x\"], \"field_types\": [\"frozen<b>\"]},"
        " {\"keyspace_name\": \"k\", \"type_name\": \"b\", \"field_names\": [\"y\"], \"field_types\": [\"frozen<a>\"]}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_cass_schema *s = cf_cass_schema_new();
        cf_err err;
        if (cf_cass_schema_load_system_json(s, bad[i], strlen(bad[i]), &err) == CF_OK) fail_msg("accepted: %s", bad[i]);
        assert_true(err.message[0] != '\0');
        cf_cass_schema_destroy(s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ddl_equals_system_schema), cmocka_unit_test(test_fixture_model),
        cmocka_unit_test(test_fixture_tokens),           cmocka_unit_test(test_ddl_3x),
        cmocka_unit_test(test_ddl_errors),               cmocka_unit_test(test_truncated_inputs),
        cmocka_unit_test(test_history),                  cmocka_unit_test(test_split_partition_key),
        cmocka_unit_test(test_system_json_errors),       cmocka_unit_test(test_views),
        cmocka_unit_test(test_ddl_311_helper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
