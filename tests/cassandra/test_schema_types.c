/*
 * test_schema_types.c - CQL type strings and their properties.
 * Oracles: the type strings are those Cassandra 5.0 prints in DESCRIBE and
 * system_schema.columns.type; fixed lengths are AbstractType
 * .valueLengthIfFixed() of cassandra-all 5.0.5 as printed by
 * scripts/cassandra-oracle/Oracle.java (e.g. "date SimpleDateType -1",
 * "vector<float, 3> fixed=12", "tuple<int, int> -> frozen<tuple<int, int>>").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/cassandra_schema.h"

static cf_cql_type *parse_ok(const char *s, const cf_cass_schema *sch) {
    cf_cql_type *t = NULL;
    cf_err err;
    cf_code rc = cf_cql_type_parse(s, "ks", sch, &t, &err);
    if (rc) fail_msg("parse %s: %s (%s) at %s", s, err.message, err.detail, err.where);
    return t;
}

static void roundtrip(const char *in, const char *out) {
    cf_cql_type *t = parse_ok(in, NULL);
    char *s = cf_cql_type_to_string(t);
    assert_string_equal(s, out);
    free(s);
    cf_cql_type_destroy(t);
}

static void test_native_fixed_lengths(void **state) {
    (void)state;
    struct { const char *name; int32_t len; } v[] = {
        {"ascii", -1}, {"bigint", 8}, {"blob", -1}, {"boolean", 1}, {"counter", -1}, {"date", -1},
        {"decimal", -1}, {"double", 8}, {"duration", -1}, {"float", 4}, {"inet", -1}, {"int", 4},
        {"smallint", -1}, {"text", -1}, {"time", -1}, {"timestamp", 8}, {"timeuuid", 16},
        {"tinyint", -1}, {"uuid", 16}, {"varint", -1}, {"varchar", -1}, {"empty", 0},
        {"vector<float, 3>", 12}, {"vector<int, 2>", 8}, {"vector<text, 2>", -1}, {"vector<bigint, 4>", 32},
        {"tuple<int, int>", -1}, {"frozen<list<int>>", -1}, {"vector<vector<int,2>,3>", 24},
        {"vector<tinyint, 3>", -1}, {"'org.apache.cassandra.db.marshal.LexicalUUIDType'", 16},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        cf_cql_type *t = parse_ok(v[i].name, NULL);
        if (cf_cql_type_fixed_length(t) != v[i].len)
            fail_msg("%s: fixed length %d, expected %d", v[i].name, cf_cql_type_fixed_length(t), v[i].len);
        cf_cql_type_destroy(t);
    }
}

static void test_print_like_cassandra(void **state) {
    (void)state;
    roundtrip("int", "int");
    roundtrip("VARCHAR", "text");
    roundtrip("frozen<map<text, int>>", "frozen<map<text, int>>");
    roundtrip("list<frozen<tuple<int, text>>>", "list<frozen<tuple<int, text>>>");
    /* Cassandra 5.0 prints a bare tuple as frozen<tuple<..>> */
    roundtrip("tuple<int, int>", "frozen<tuple<int, int>>");
    roundtrip("vector<vector<int,2>,3>", "vector<vector<int, 2>, 3>");
    /* nested collections are frozen implicitly */
    roundtrip("map<text,list<int>>", "map<text, frozen<list<int>>>");
    roundtrip("set < frozen < set < uuid > > >", "set<frozen<set<uuid>>>");
    roundtrip("'org.apache.cassandra.db.marshal.DynamicCompositeType(s=>UTF8Type)'",
              "'org.apache.cassandra.db.marshal.DynamicCompositeType(s=>UTF8Type)'");
}

static void test_multicell(void **state) {
    (void)state;
    cf_cql_type *t = parse_ok("map<text, frozen<list<int>>>", NULL);
    assert_true(cf_cql_type_is_multicell(t));
    assert_int_equal(cf_cql_type_key(t)->kind, CF_CQL_TEXT);
    const cf_cql_type *v = cf_cql_type_value(t);
    assert_int_equal(v->kind, CF_CQL_LIST);
    assert_false(cf_cql_type_is_multicell(v));
    assert_int_equal(cf_cql_type_element(v)->kind, CF_CQL_INT);
    cf_cql_type_destroy(t);
    t = parse_ok("frozen<set<int>>", NULL);
    assert_false(cf_cql_type_is_multicell(t));
    cf_cql_type_destroy(t);
    t = parse_ok("tuple<int, text, frozen<list<int>>>", NULL);
    assert_false(cf_cql_type_is_multicell(t));
    assert_int_equal(cf_cql_type_field_count(t), 3);
    assert_int_equal(cf_cql_type_field(t, 1)->kind, CF_CQL_TEXT);
    cf_cql_type_destroy(t);
    t = parse_ok("vector<float, 3>", NULL);
    assert_false(cf_cql_type_is_multicell(t));
    assert_int_equal(t->dimension, 3);
    cf_cql_type_destroy(t);
    t = parse_ok("counter", NULL);
    assert_true(cf_cql_type_is_counter(t));
    cf_cql_type_destroy(t);
}

static void test_udt(void **state) {
    (void)state;
    cf_cass_schema *s = cf_cass_schema_new();
    const char *names[] = {"street", "Zip"};
    cf_cql_type *types[] = {parse_ok("text", NULL), parse_ok("int", NULL)};
    assert_int_equal(cf_cass_schema_put_udt(s, "ks", "address", names, types, 2, NULL), CF_OK);
    const char *n2[] = {"home", "tags"};
    cf_cql_type *t2[] = {parse_ok("address", s), parse_ok("set<text>", NULL)};
    assert_int_equal(cf_cass_schema_put_udt(s, "ks", "My Person", n2, t2, 2, NULL), CF_OK);

    cf_cql_type *t = parse_ok("address", s);
    assert_int_equal(t->kind, CF_CQL_UDT);
    assert_true(cf_cql_type_is_multicell(t));
    assert_string_equal(cf_cql_type_field_name(t, 1), "Zip");
    assert_int_equal(cf_cql_type_field(t, 1)->kind, CF_CQL_INT);
    cf_cql_type_destroy(t);

    t = parse_ok("frozen<\"My Person\">", s);
    assert_false(cf_cql_type_is_multicell(t));
    /* fields of a UDT are frozen: the nested UDT and the set */
    assert_true(cf_cql_type_field(t, 0)->frozen);
    assert_true(cf_cql_type_field(t, 1)->frozen);
    char *str = cf_cql_type_to_string(t);
    assert_string_equal(str, "frozen<\"My Person\">");
    free(str);
    cf_cql_type_destroy(t);

    t = parse_ok("list<frozen<ks.address>>", s);
    assert_int_equal(cf_cql_type_element(t)->kind, CF_CQL_UDT);
    cf_cql_type_destroy(t);

    cf_err err;
    assert_int_equal(cf_cql_type_parse("frozen<nope>", "ks", s, &t, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "nope"));
    assert_null(t);
    cf_cass_schema_destroy(s);
}

static void test_errors(void **state) {
    (void)state;
    const char *bad[] = {"", "map<int>", "list<int", "frozen<int>", "vector<float>", "vector<float, 0>",
                         "list<int>>", "tuple<>", "\"unterminated", "'x", "map<int, int, int>", "list<,>"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_cql_type *t = (cf_cql_type *)1;
        cf_err err;
        cf_code rc = cf_cql_type_parse(bad[i], "ks", NULL, &t, &err);
        if (rc == CF_OK) fail_msg("\"%s\" parsed", bad[i]);
        assert_null(t);
        assert_true(err.message[0] != '\0');
        assert_true(strncmp(err.where, "type:1:", 7) == 0 || err.where[0] == '\0');
    }
    /* deep nesting is refused, not a stack overflow */
    char deep[2000] = "";
    for (int i = 0; i < 300; i++) strcat(deep, "list<");
    cf_cql_type *t = NULL;
    assert_int_equal(cf_cql_type_parse(deep, "ks", NULL, &t, NULL), CF_ERR_INVALID);
}

static void test_identifiers(void **state) {
    (void)state;
    cf_buf b = CF_BUF_INIT;
    cf_cql_append_identifier("abc_1", &b);
    cf_buf_append_byte(&b, ' ');
    cf_cql_append_identifier("Abc", &b);
    cf_buf_append_byte(&b, ' ');
    cf_cql_append_identifier("select", &b);
    cf_buf_append_byte(&b, ' ');
    cf_cql_append_identifier("a\"b", &b);
    cf_buf_append_byte(&b, ' ');
    cf_cql_append_identifier("1a", &b);
    assert_string_equal(b.data, "abc_1 \"Abc\" \"select\" \"a\"\"b\" \"1a\"");
    cf_buf_free(&b);
    uint8_t id[16];
    assert_true(cf_cass_uuid_parse("26BE1710-7cb9-11ee-9fce-59fe9713701b", 36, id));
    char u[37];
    cf_cass_uuid_format(id, u);
    assert_string_equal(u, "26be1710-7cb9-11ee-9fce-59fe9713701b");
    assert_false(cf_cass_uuid_parse("26be1710x7cb9-11ee-9fce-59fe9713701b", 36, id));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_fixed_lengths), cmocka_unit_test(test_print_like_cassandra),
        cmocka_unit_test(test_multicell),            cmocka_unit_test(test_udt),
        cmocka_unit_test(test_errors),               cmocka_unit_test(test_identifiers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
