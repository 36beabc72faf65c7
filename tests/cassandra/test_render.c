/*
 * test_render.c - values rendered as Cassandra's SELECT JSON / toJson()
 * renders them. Expected strings are the ones of Cassandra's own
 * JsonTest.testToJsonFct, testInsertJsonSyntaxWithNonNativeMapKeys and
 * testCaseSensitivity (cql3/validation/entities/JsonTest.java, 4.0+, where
 * timestamps end in "Z"), plus DoubleType.toJSONString (NaN -> null),
 * Int32Type.toJSONString (empty -> ""), cql3.Duration.toString.
 * The input bytes are the CQL serialization of the same values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cass_test_util.h"

static cf_cass_schema *g_schema;

static cf_cql_type *ty(const char *s) {
    cf_cql_type *t = NULL;
    cf_err err;
    if (cf_cql_type_parse(s, "ks", g_schema, &t, &err) != CF_OK) fail_msg("type %s: %s", s, err.message);
    return t;
}

static size_t unhex(const char *h, uint8_t *out) {
    size_t n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v;
        sscanf(h, "%2x", &v);
        out[n++] = (uint8_t)v;
    }
    return n;
}

static void check(const char *type, const char *hex, const char *want) {
    cf_cql_type *t = ty(type);
    uint8_t b[512];
    size_t n = unhex(hex, b);
    cf_buf out = CF_BUF_INIT;
    cf_code rc = cf_cass_value_to_json(t, b, n, &out);
    if (rc != CF_OK || strcmp(out.data ? out.data : "", want) != 0)
        fail_msg("%s %s: got %s (rc %d), want %s", type, hex, out.data ? out.data : "", rc, want);
    cf_buf_free(&out);
    cf_cql_type_destroy(t);
}

static void test_native(void **state) {
    (void)state;
    check("ascii", "61736369692074657874", "\"ascii text\"");
    check("ascii", "", "\"\"");
    check("bigint", "0000001caab5c3b3", "123123123123");
    check("bigint", "0000000000000000", "0");
    check("bigint", "ffffffe3554a3c4d", "-123123123123");
    check("blob", "00000001", "\"0x00000001\"");
    check("blob", "", "\"0x\"");
    check("boolean", "01", "true");
    check("boolean", "00", "false");
    check("date", "80001892", "\"1987-03-23\""); /* 2^31 + 6290 days */
    check("decimal", "000000060000001caab5c3b3", "123123.123123");
    check("decimal", "0000000eff85", "-1.23E-12");
    check("double", "40fe0f31f84fd2a6", "123123.123123");
    check("double", "40fe0f3000000000", "123123.0");
    check("double", "7ff8000000000000", "null");
    check("float", "42f63efa", "123.123");
    check("float", "47f07980", "123123.0");
    check("inet", "7f000001", "\"127.0.0.1\"");
    check("inet", "00000000000000000000000000000001", "\"0:0:0:0:0:0:0:1\"");
    check("int", "0001e0f3", "123123");
    check("int", "00000000", "0");
    check("int", "fffe1f0d", "-123123");
    check("int", "", "\"\"");
    check("text", "", "\"\"");
    check("text", "61626364", "\"abcd\"");
    check("text", "e890a2", "\"\xe8\x90\xa2\"");
    check("text", "00", "\"\\u0000\"");
    check("time", "000000000000007b", "\"00:00:00.000000123\"");
    check("timestamp", "000001434b198400", "\"2014-01-01 00:00:00.000Z\"");
    check("timeuuid", "6bddc89a564411e497fc56847afe9799", "\"6bddc89a-5644-11e4-97fc-56847afe9799\"");
    check("uuid", "6bddc89a564411e497fc56847afe9799", "\"6bddc89a-5644-11e4-97fc-56847afe9799\"");
    check("varint", "06acad34256e6ff3b3", "123123123123123123123");
    /* 14 months, 3 days, 4h 5m 6s 7ms 8us 9ns: zigzag vints */
    check("duration", "1c06fc1ac004a5c612", "\"1y2mo3d4h5m6s7ms8us9ns\"");
}

static void test_collections(void **state) {
    (void)state;
    check("frozen<list<int>>", "00000003" "0000000400000001" "0000000400000002" "0000000400000003", "[1, 2, 3]");
    check("frozen<set<uuid>>",
          "00000002" "000000106bddc89a564411e497fc56847afe9798" "000000106bddc89a564411e497fc56847afe9799",
          "[\"6bddc89a-5644-11e4-97fc-56847afe9798\", \"6bddc89a-5644-11e4-97fc-56847afe9799\"]");
    check("frozen<map<ascii, int>>", "00000002" "0000000161" "0000000400000001" "0000000162" "0000000400000002",
          "{\"a\": 1, \"b\": 2}");
    check("frozen<map<int, boolean>>", "00000002" "0000000400000000" "0000000101" "0000000400000001" "0000000100",
          "{\"0\": true, \"1\": false}");
    check("frozen<map<frozen<tuple<int, text>>, boolean>>",
          "00000002" "0000000d" "0000000400000000" "0000000161" "0000000101"
          "0000000d" "0000000400000001" "0000000162" "0000000100",
          "{\"[0, \\\"a\\\"]\": true, \"[1, \\\"b\\\"]\": false}");
    check("frozen<tuple<int, ascii, uuid>>",
          "0000000400000001" "00000006666f6f626172" "000000106bddc89a564411e497fc56847afe9799",
          "[1, \"foobar\", \"6bddc89a-5644-11e4-97fc-56847afe9799\"]");
    check("frozen<tuple<int, ascii, uuid>>", "0000000400000001" "00000006666f6f626172" "ffffffff",
          "[1, \"foobar\", null]");
    check("frozen<udt1>",
          "0000000400000001" "000000106bddc89a564411e497fc56847afe9799"
          "00000012" "00000002" "00000003626172" "00000003666f6f",
          "{\"a\": 1, \"b\": \"6bddc89a-5644-11e4-97fc-56847afe9799\", \"c\": [\"bar\", \"foo\"]}");
    check("frozen<udt1>", "0000000400000001" "000000106bddc89a564411e497fc56847afe9799" "ffffffff",
          "{\"a\": 1, \"b\": \"6bddc89a-5644-11e4-97fc-56847afe9799\", \"c\": null}");
    /* fields added by ALTER TYPE after the value was written are null */
    check("frozen<udt1>", "0000000400000001",
          "{\"a\": 1, \"b\": null, \"c\": null}");
    check("frozen<udt2>", "0000000400000000" "0000000400000000", "{\"a\": 0, \"\\\"Foo\\\"\": 0}");
    check("vector<float, 2>", "3f80000040000000", "[1.0, 2.0]");
    check("vector<text, 2>", "0161" "026263", "[\"a\", \"bc\"]");
}

static void test_bad_values_are_blobs(void **state) {
    (void)state;
    cf_cql_type *t = ty("int");
    uint8_t b[3] = {1, 2, 3};
    cf_buf out = CF_BUF_INIT;
    assert_int_equal(cf_cass_value_to_json(t, b, 3, &out), CF_ERR_SCHEMA);
    assert_string_equal(out.data, "\"0x010203\"");
    cf_buf_free(&out);
    cf_cql_type_destroy(t);
    t = ty("frozen<list<int>>");
    uint8_t l[8] = {0, 0, 0, 9, 0, 0, 0, 4}; /* 9 elements announced, none there */
    assert_int_equal(cf_cass_value_to_json(t, l, 8, &out), CF_ERR_SCHEMA);
    assert_string_equal(out.data, "\"0x0000000900000004\"");
    cf_buf_free(&out);
    cf_cql_type_destroy(t);
    /* invalid UTF-8 in text still gives valid JSON */
    t = ty("text");
    uint8_t s[3] = {'a', 0xff, 'b'};
    assert_int_equal(cf_cass_value_to_json(t, s, 3, &out), CF_OK);
    assert_string_equal(out.data, "\"a\xef\xbf\xbd" "b\"");
    cf_buf_free(&out);
    cf_cql_type_destroy(t);
}

static int setup(void **state) {
    (void)state;
    g_schema = cf_cass_schema_new();
    const char *f1[] = {"a", "b", "c"};
    cf_cql_type *t1[3];
    cf_err err;
    t1[0] = cf_cql_type_new(CF_CQL_INT);
    t1[1] = cf_cql_type_new(CF_CQL_UUID);
    if (cf_cql_type_parse("frozen<set<text>>", "ks", NULL, &t1[2], &err)) return -1;
    if (cf_cass_schema_put_udt(g_schema, "ks", "udt1", f1, t1, 3, &err)) return -1;
    const char *f2[] = {"a", "Foo"};
    cf_cql_type *t2[2] = {cf_cql_type_new(CF_CQL_INT), cf_cql_type_new(CF_CQL_INT)};
    if (cf_cass_schema_put_udt(g_schema, "ks", "udt2", f2, t2, 2, &err)) return -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    cf_cass_schema_destroy(g_schema);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native),
        cmocka_unit_test(test_collections),
        cmocka_unit_test(test_bad_values_are_blobs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
