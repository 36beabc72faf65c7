/*
 * test_avro_data.c - the Connect <-> Avro mapping and the avro-c codec.
 *
 * Oracles from outside:
 *   - Confluent's AvroDataTest (schema-registry, avro-converter module): the expected Avro
 *     schemas of testFromConnect{Boolean,Byte,Short,...,Complex,OptionalPrimitiveWithMetadata,
 *     RecordWithMetadata,LogicalDecimalNew,LogicalDateNew,...} are transcribed below as JSON and
 *     compared structurally (key order ignored), and the toConnect tests' expected Connect
 *     schemas are built with our builders.
 *   - The Avro 1.11 specification's binary encoding (zig-zag varints, length-prefixed strings
 *     and bytes, little-endian IEEE floats, block-counted arrays and maps, union index first):
 *     expected bytes are written out by hand from the spec, not produced by our encoder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "cdcflow/avro.h"
#include "cdcflow/buf.h"
#include "cdcflow/schema.h"

/* Our JSON for a Connect schema must equal `expected` (JSON text) structurally. */
static void assert_avro_json(const cf_schema *s, const char *expected) {
    char *got = NULL;
    cf_err err;
    cf_code rc = cf_avro_schema_from_connect(s, NULL, &got, &err);
    if (rc) fail_msg("from_connect failed: %s (%s) at %s", err.message, err.detail, err.where);
    json_t *a = json_loads(got, JSON_DECODE_ANY, NULL);
    json_t *b = json_loads(expected, JSON_DECODE_ANY, NULL);
    assert_non_null(a);
    assert_non_null(b);
    if (!json_equal(a, b)) fail_msg("Avro schema differs\n  got:      %s\n  expected: %s", got, expected);
    json_decref(a);
    json_decref(b);
    free(got);
}

static cf_schema *to_connect(const char *json) {
    cf_schema *s = NULL;
    cf_err err;
    cf_code rc = cf_avro_schema_to_connect(json, strlen(json), &s, &err);
    if (rc) fail_msg("to_connect failed: %s (%s) at %s", err.message, err.detail, err.where);
    return s;
}

/* Encode v with a codec made from s; compare with the expected bytes; decode and compare. */
static void assert_encodes(cf_schema *s, const cf_value *v, const uint8_t *expected, size_t n) {
    cf_avro_codec *c = NULL;
    cf_err err;
    assert_int_equal(cf_avro_codec_from_connect(s, NULL, &c, &err), CF_OK);
    cf_buf b = CF_BUF_INIT;
    cf_code rc = cf_avro_codec_encode(c, v, &b, &err);
    if (rc) fail_msg("encode failed: %s (%s) at %s", err.message, err.detail, err.where);
    assert_int_equal(b.len, n);
    assert_memory_equal(b.data, expected, n);
    /* decode with a codec built from the JSON only, as a reader with the writer schema */
    cf_avro_codec *r = NULL;
    assert_int_equal(cf_avro_codec_from_json(cf_avro_codec_json(c), strlen(cf_avro_codec_json(c)), &r, &err), CF_OK);
    cf_value *back = NULL;
    rc = cf_avro_codec_decode(r, b.data, b.len, &back, &err);
    if (rc) fail_msg("decode failed: %s (%s) at %s", err.message, err.detail, err.where);
    if (!cf_value_equal(back, v)) {
        char *x = cf_value_debug_string(back), *y = cf_value_debug_string(v);
        fail_msg("round trip differs: %s vs %s", x, y);
    }
    /* the reader's Connect schema equals the writer's (AvroData round trip) */
    if (!cf_schema_equal(cf_avro_codec_schema(r), s)) fail_msg("schema round trip differs for %s", cf_avro_codec_json(c));
    cf_value_destroy(back);
    cf_buf_free(&b);
    cf_avro_codec_destroy(c);
    cf_avro_codec_destroy(r);
}

/* ---------------- Connect -> Avro: primitives ---------------- */

static void test_from_connect_primitives(void **state) {
    (void)state;
    struct {
        cf_type t;
        const char *req, *opt;
    } cases[] = {
        {CF_BOOLEAN, "\"boolean\"", "[\"null\",\"boolean\"]"},
        {CF_INT8, "{\"type\":\"int\",\"connect.type\":\"int8\"}", "[\"null\",{\"type\":\"int\",\"connect.type\":\"int8\"}]"},
        {CF_INT16, "{\"type\":\"int\",\"connect.type\":\"int16\"}",
         "[\"null\",{\"type\":\"int\",\"connect.type\":\"int16\"}]"},
        {CF_INT32, "\"int\"", "[\"null\",\"int\"]"},
        {CF_INT64, "\"long\"", "[\"null\",\"long\"]"},
        {CF_FLOAT32, "\"float\"", "[\"null\",\"float\"]"},
        {CF_FLOAT64, "\"double\"", "[\"null\",\"double\"]"},
        {CF_BYTES, "\"bytes\"", "[\"null\",\"bytes\"]"},
        {CF_STRING, "\"string\"", "[\"null\",\"string\"]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cf_schema *r = cf_schema_primitive(cases[i].t, false);
        cf_schema *o = cf_schema_primitive(cases[i].t, true);
        assert_avro_json(r, cases[i].req);
        assert_avro_json(o, cases[i].opt);
        cf_schema_unref(r);
        cf_schema_unref(o);
    }
}

/* Avro spec: int/long zig-zag varint; 12 -> 0x18. float 12.2f LE = 0x41433333 -> 33 33 43 41. */
static void test_primitive_values(void **state) {
    (void)state;
    cf_schema *s8 = cf_schema_primitive(CF_INT8, false);
    cf_value *v = cf_value_int8(12);
    const uint8_t e12[] = {0x18};
    assert_encodes(s8, v, e12, 1);
    cf_value_destroy(v);
    v = cf_value_int8(-1);
    const uint8_t em1[] = {0x01};
    assert_encodes(s8, v, em1, 1);
    cf_value_destroy(v);
    cf_schema_unref(s8);

    cf_schema *sf = cf_schema_primitive(CF_FLOAT32, false);
    v = cf_value_float32(12.2f);
    const uint8_t ef[] = {0x33, 0x33, 0x43, 0x41};
    assert_encodes(sf, v, ef, 4);
    cf_value_destroy(v);
    cf_schema_unref(sf);

    /* optional: union index 1 (zig-zag 0x02) then the value; null = index 0 */
    cf_schema *os = cf_schema_primitive(CF_STRING, true);
    v = cf_value_string("foo");
    const uint8_t eos[] = {0x02, 0x06, 'f', 'o', 'o'};
    assert_encodes(os, v, eos, sizeof eos);
    cf_value_destroy(v);
    cf_schema_unref(os);

    cf_schema *sl = cf_schema_primitive(CF_INT64, false);
    v = cf_value_int64(-64); /* zig-zag 127 -> 0x7f */
    const uint8_t el[] = {0x7f};
    assert_encodes(sl, v, el, 1);
    cf_value_destroy(v);
    v = cf_value_int64(64); /* zig-zag 128 -> 0x80 0x01 */
    const uint8_t el2[] = {0x80, 0x01};
    assert_encodes(sl, v, el2, 2);
    cf_value_destroy(v);
    cf_schema_unref(sl);
}

/* AvroDataTest.testFromConnectComplex */
static cf_schema *complex_schema(void) {
    cf_schema *s = cf_schema_new_struct();
    cf_schema *i8 = cf_schema_primitive(CF_INT8, false);
    cf_schema_set_default(i8, cf_value_int8(2), NULL);
    cf_schema_set_doc(i8, "int8 field");
    cf_schema_add_field(s, "int8", i8, NULL);
    cf_schema_add_field(s, "int16", cf_schema_primitive(CF_INT16, false), NULL);
    cf_schema_add_field(s, "int32", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "int64", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(s, "float32", cf_schema_primitive(CF_FLOAT32, false), NULL);
    cf_schema_add_field(s, "float64", cf_schema_primitive(CF_FLOAT64, false), NULL);
    cf_schema_add_field(s, "boolean", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema_add_field(s, "string", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(s, "bytes", cf_schema_primitive(CF_BYTES, false), NULL);
    cf_schema_add_field(s, "array", cf_schema_new_array(cf_schema_primitive(CF_STRING, false)), NULL);
    cf_schema_add_field(s, "map",
                        cf_schema_new_map(cf_schema_primitive(CF_STRING, false), cf_schema_primitive(CF_INT32, false)),
                        NULL);
    cf_schema_add_field(s, "mapNonStringKeys",
                        cf_schema_new_map(cf_schema_primitive(CF_INT32, false), cf_schema_primitive(CF_INT32, false)),
                        NULL);
    return s;
}

static void test_from_connect_complex(void **state) {
    (void)state;
    cf_schema *s = complex_schema();
    assert_avro_json(
        s,
        "{\"type\":\"record\",\"name\":\"ConnectDefault\",\"namespace\":\"io.confluent.connect.avro\",\"fields\":["
        "{\"name\":\"int8\",\"type\":{\"type\":\"int\",\"connect.doc\":\"int8 field\",\"connect.default\":2,"
        "\"connect.type\":\"int8\"},\"default\":2},"
        "{\"name\":\"int16\",\"type\":{\"type\":\"int\",\"connect.type\":\"int16\"}},"
        "{\"name\":\"int32\",\"type\":\"int\"},{\"name\":\"int64\",\"type\":\"long\"},"
        "{\"name\":\"float32\",\"type\":\"float\"},{\"name\":\"float64\",\"type\":\"double\"},"
        "{\"name\":\"boolean\",\"type\":\"boolean\"},{\"name\":\"string\",\"type\":\"string\"},"
        "{\"name\":\"bytes\",\"type\":\"bytes\"},"
        "{\"name\":\"array\",\"type\":{\"type\":\"array\",\"items\":\"string\"}},"
        "{\"name\":\"map\",\"type\":{\"type\":\"map\",\"values\":\"int\"}},"
        "{\"name\":\"mapNonStringKeys\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":"
        "\"MapEntry\",\"namespace\":\"io.confluent.connect.avro\",\"fields\":[{\"name\":\"key\",\"type\":\"int\"},"
        "{\"name\":\"value\",\"type\":\"int\"}]}}}]}");

    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "int8", cf_value_int8(12), NULL);
    cf_value_struct_set(v, "int16", cf_value_int16(12), NULL);
    cf_value_struct_set(v, "int32", cf_value_int32(12), NULL);
    cf_value_struct_set(v, "int64", cf_value_int64(12), NULL);
    cf_value_struct_set(v, "float32", cf_value_float32(12.2f), NULL);
    cf_value_struct_set(v, "float64", cf_value_float64(12.2), NULL);
    cf_value_struct_set(v, "boolean", cf_value_bool(true), NULL);
    cf_value_struct_set(v, "string", cf_value_string("foo"), NULL);
    cf_value_struct_set(v, "bytes", cf_value_bytes("foo", 3), NULL);
    cf_value *arr = cf_value_array();
    cf_value_array_push(arr, cf_value_string("a"));
    cf_value_array_push(arr, cf_value_string("b"));
    cf_value_array_push(arr, cf_value_string("c"));
    cf_value_struct_set(v, "array", arr, NULL);
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("field"), cf_value_int32(1));
    cf_value_struct_set(v, "map", m, NULL);
    cf_value *m2 = cf_value_map();
    cf_value_map_put(m2, cf_value_int32(1), cf_value_int32(1));
    cf_value_struct_set(v, "mapNonStringKeys", m2, NULL);

    /* 12.2 as double = 0x4028666666666666 */
    const uint8_t expected[] = {0x18, 0x18, 0x18, 0x18,                                     /* ints */
                                0x33, 0x33, 0x43, 0x41,                                     /* float */
                                0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x28, 0x40,             /* double */
                                0x01,                                                       /* true */
                                0x06, 'f', 'o', 'o', 0x06, 'f', 'o', 'o',                   /* string, bytes */
                                0x06, 0x02, 'a', 0x02, 'b', 0x02, 'c', 0x00,                /* array */
                                0x02, 0x0a, 'f', 'i', 'e', 'l', 'd', 0x02, 0x00,            /* map */
                                0x02, 0x02, 0x02, 0x00};                                    /* MapEntry array */
    assert_encodes(s, v, expected, sizeof expected);

    /* an unset int8 field takes its default (Connect's Struct.get) */
    cf_value_struct_set(v, "int8", NULL, NULL);
    cf_avro_codec *c;
    cf_err err;
    assert_int_equal(cf_avro_codec_from_connect(s, NULL, &c, &err), CF_OK);
    cf_buf b = CF_BUF_INIT;
    assert_int_equal(cf_avro_codec_encode(c, v, &b, &err), CF_OK);
    assert_int_equal((uint8_t)b.data[0], 0x04);
    cf_buf_free(&b);
    cf_avro_codec_destroy(c);
    cf_value_destroy(v);
    cf_schema_unref(s);
}

/* AvroDataTest.testFromConnectOptionalPrimitiveWithMetadata */
static void test_from_connect_optional_with_metadata(void **state) {
    (void)state;
    cf_schema *s = cf_schema_new(CF_STRING);
    cf_schema_set_doc(s, "doc");
    cf_schema_set_default(s, cf_value_string("foo"), NULL);
    cf_schema_set_name(s, "io.confluent.stringtype");
    cf_schema_set_version(s, 2);
    cf_schema_set_optional(s, true);
    cf_schema_set_param(s, "foo", "bar");
    cf_schema_set_param(s, "baz", "baz");
    assert_avro_json(s, "[{\"type\":\"string\",\"connect.doc\":\"doc\",\"connect.version\":2,"
                        "\"connect.parameters\":{\"foo\":\"bar\",\"baz\":\"baz\"},\"connect.default\":\"foo\","
                        "\"connect.name\":\"io.confluent.stringtype\"},\"null\"]");
    /* with a non-null default the value branch is first: index 0 */
    cf_value *v = cf_value_string("string");
    const uint8_t e[] = {0x00, 0x0c, 's', 't', 'r', 'i', 'n', 'g'};
    assert_encodes(s, v, e, sizeof e);
    cf_value_destroy(v);
    cf_schema_unref(s);
}

/* AvroDataTest.testFromConnectRecordWithMetadata */
static void test_from_connect_record_with_metadata(void **state) {
    (void)state;
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, "io.confluent.test.TestSchema");
    cf_schema_set_version(s, 12);
    cf_schema_set_doc(s, "doc");
    cf_schema_add_field(s, "int32", cf_schema_primitive(CF_INT32, false), NULL);
    assert_avro_json(s, "{\"type\":\"record\",\"name\":\"TestSchema\",\"namespace\":\"io.confluent.test\","
                        "\"fields\":[{\"name\":\"int32\",\"type\":\"int\"}],\"connect.doc\":\"doc\","
                        "\"connect.version\":12,\"connect.name\":\"io.confluent.test.TestSchema\"}");
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "int32", cf_value_int32(12), NULL);
    const uint8_t e[] = {0x18};
    assert_encodes(s, v, e, 1);
    cf_value_destroy(v);
    cf_schema_unref(s);
}

/* AvroDataTest.testFromConnectLogicalDecimalNew / Date / Time / Timestamp */
static void test_from_connect_logical(void **state) {
    (void)state;
    cf_schema *d = cf_schema_decimal(2);
    cf_schema_set_param(d, CF_AVRO_DECIMAL_PRECISION_PARAM, "64");
    assert_avro_json(d, "{\"type\":\"bytes\",\"scale\":2,\"precision\":64,\"connect.version\":1,"
                        "\"connect.parameters\":{\"scale\":\"2\",\"connect.decimal.precision\":\"64\"},"
                        "\"connect.name\":\"org.apache.kafka.connect.data.Decimal\",\"logicalType\":\"decimal\"}");
    /* TEST_DECIMAL = 1.56 -> TEST_DECIMAL_BYTES {0, -100}; bytes: length 2 (0x04) then the bytes */
    uint8_t *unscaled;
    size_t ulen;
    assert_int_equal(cf_decimal_from_string("1.56", 2, &unscaled, &ulen, NULL), CF_OK);
    cf_value *dv = cf_value_bytes_take(unscaled, ulen);
    const uint8_t ed[] = {0x04, 0x00, 0x9c};
    assert_encodes(d, dv, ed, sizeof ed);
    cf_value_destroy(dv);
    cf_schema_unref(d);

    /* optional decimal without an explicit precision: precision 64 is written */
    cf_schema *od = cf_schema_decimal(2);
    cf_schema_set_optional(od, true);
    assert_avro_json(od, "[\"null\",{\"type\":\"bytes\",\"scale\":2,\"precision\":64,\"connect.version\":1,"
                         "\"connect.parameters\":{\"scale\":\"2\"},"
                         "\"connect.name\":\"org.apache.kafka.connect.data.Decimal\",\"logicalType\":\"decimal\"}]");
    cf_schema_unref(od);

    cf_schema *date = cf_schema_date();
    assert_avro_json(date, "{\"type\":\"int\",\"connect.version\":1,\"connect.name\":"
                           "\"org.apache.kafka.connect.data.Date\",\"logicalType\":\"date\"}");
    cf_value *v = cf_value_int32(10000); /* EPOCH_PLUS_TEN_THOUSAND_DAYS; zig-zag 20000 = a0 9c 01 */
    const uint8_t edate[] = {0xa0, 0x9c, 0x01};
    assert_encodes(date, v, edate, sizeof edate);
    cf_value_destroy(v);
    cf_schema_unref(date);

    cf_schema *t = cf_schema_time();
    assert_avro_json(t, "{\"type\":\"int\",\"connect.version\":1,\"connect.name\":"
                        "\"org.apache.kafka.connect.data.Time\",\"logicalType\":\"time-millis\"}");
    cf_schema_unref(t);
    cf_schema *ts = cf_schema_timestamp();
    assert_avro_json(ts, "{\"type\":\"long\",\"connect.version\":1,\"connect.name\":"
                         "\"org.apache.kafka.connect.data.Timestamp\",\"logicalType\":\"timestamp-millis\"}");
    v = cf_value_int64(1700000000123LL);
    cf_avro_codec *c;
    assert_int_equal(cf_avro_codec_from_connect(ts, NULL, &c, NULL), CF_OK);
    cf_buf b = CF_BUF_INIT;
    assert_int_equal(cf_avro_codec_encode(c, v, &b, NULL), CF_OK);
    cf_value *back;
    assert_int_equal(cf_avro_codec_decode(c, b.data, b.len, &back, NULL), CF_OK);
    assert_true(cf_value_equal(v, back));
    cf_value_destroy(back);
    cf_buf_free(&b);
    cf_avro_codec_destroy(c);
    cf_value_destroy(v);
    cf_schema_unref(ts);
}

/* Optional nested struct; two different unnamed structs get ConnectDefault and ConnectDefault2;
 * an equal struct used twice is defined once and then referenced by name. */
static void test_names_and_reuse(void **state) {
    (void)state;
    cf_schema *a = cf_schema_new_struct();
    cf_schema_add_field(a, "x", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema *b = cf_schema_new_struct();
    cf_schema_add_field(b, "y", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_set_optional(b, true);
    cf_schema *top = cf_schema_new_struct();
    cf_schema_set_name(top, "ns.Top");
    cf_schema_add_field(top, "a", a, NULL);
    cf_schema_add_field(top, "b", b, NULL);
    cf_schema_add_field(top, "a2", cf_schema_ref(a), NULL);
    assert_avro_json(
        top, "{\"type\":\"record\",\"name\":\"Top\",\"namespace\":\"ns\",\"fields\":["
             "{\"name\":\"a\",\"type\":{\"type\":\"record\",\"name\":\"ConnectDefault\",\"namespace\":"
             "\"io.confluent.connect.avro\",\"fields\":[{\"name\":\"x\",\"type\":\"int\"}]}},"
             "{\"name\":\"b\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"ConnectDefault2\",\"namespace\":"
             "\"io.confluent.connect.avro\",\"fields\":[{\"name\":\"y\",\"type\":\"string\"}]}],\"default\":null},"
             "{\"name\":\"a2\",\"type\":\"io.confluent.connect.avro.ConnectDefault\"}],"
             "\"connect.name\":\"ns.Top\"}");
    /* encode/decode through the reference */
    cf_value *v = cf_value_struct(cf_schema_ref(top));
    cf_value *va = cf_value_struct(cf_schema_ref(a));
    cf_value_struct_set(va, "x", cf_value_int32(1), NULL);
    cf_value *va2 = cf_value_struct(cf_schema_ref(a));
    cf_value_struct_set(va2, "x", cf_value_int32(-1), NULL);
    cf_value_struct_set(v, "a", va, NULL);
    cf_value_struct_set(v, "a2", va2, NULL);
    const uint8_t e[] = {0x02, 0x00, 0x01};
    assert_encodes(top, v, e, sizeof e);
    cf_value_destroy(v);

    /* two different structs with one name: Avro cannot express it */
    cf_schema *c1 = cf_schema_new_struct();
    cf_schema_set_name(c1, "x.Same");
    cf_schema_add_field(c1, "f", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema *c2 = cf_schema_new_struct();
    cf_schema_set_name(c2, "x.Same");
    cf_schema_add_field(c2, "g", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema *t2 = cf_schema_new_struct();
    cf_schema_add_field(t2, "one", c1, NULL);
    cf_schema_add_field(t2, "two", c2, NULL);
    char *json = NULL;
    cf_err err;
    assert_int_equal(cf_avro_schema_from_connect(t2, NULL, &json, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.where, "two");
    assert_null(json);
    cf_schema_unref(t2);
    cf_schema_unref(top);

    /* the same non-string-key map twice, its values a named struct: one MapEntry definition,
     * then a reference (the nested struct inside is itself a reference the second time) */
    cf_schema *item = cf_schema_new_struct();
    cf_schema_set_name(item, "x.Item");
    cf_schema_add_field(item, "q", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema *t3 = cf_schema_new_struct();
    cf_schema_set_name(t3, "x.T3");
    cf_schema_add_field(t3, "m1", cf_schema_new_map(cf_schema_primitive(CF_INT64, false), cf_schema_ref(item)), NULL);
    cf_schema_add_field(t3, "m2", cf_schema_new_map(cf_schema_primitive(CF_INT64, false), item), NULL);
    assert_avro_json(
        t3, "{\"type\":\"record\",\"name\":\"T3\",\"namespace\":\"x\",\"fields\":["
            "{\"name\":\"m1\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"MapEntry\","
            "\"namespace\":\"io.confluent.connect.avro\",\"fields\":[{\"name\":\"key\",\"type\":\"long\"},"
            "{\"name\":\"value\",\"type\":{\"type\":\"record\",\"name\":\"Item\",\"namespace\":\"x\",\"fields\":["
            "{\"name\":\"q\",\"type\":\"int\"}],\"connect.name\":\"x.Item\"}}]}}},"
            "{\"name\":\"m2\",\"type\":{\"type\":\"array\",\"items\":\"io.confluent.connect.avro.MapEntry\"}}],"
            "\"connect.name\":\"x.T3\"}");
    cf_avro_codec *c3;
    assert_int_equal(cf_avro_codec_from_connect(t3, NULL, &c3, NULL), CF_OK);
    cf_schema *back = to_connect(cf_avro_codec_json(c3));
    assert_true(cf_schema_equal(back, t3));
    cf_schema_unref(back);
    cf_avro_codec_destroy(c3);
    cf_schema_unref(t3);
}

/* ---------------- Avro -> Connect (AvroDataTest.testToConnect*) ---------------- */

static void test_to_connect(void **state) {
    (void)state;
    cf_schema *s = to_connect("{\"type\":\"int\",\"connect.type\":\"int8\"}");
    cf_schema *e = cf_schema_primitive(CF_INT8, false);
    assert_true(cf_schema_equal(s, e));
    cf_schema_unref(s);
    cf_schema_unref(e);

    s = to_connect("[\"null\",\"string\"]");
    e = cf_schema_primitive(CF_STRING, true);
    assert_true(cf_schema_equal(s, e));
    cf_schema_unref(s);
    cf_schema_unref(e);

    /* a plain Avro record: name from the full name, field default and doc carried over */
    s = to_connect("{\"type\":\"record\",\"name\":\"Rec\",\"namespace\":\"a.b\",\"fields\":["
                   "{\"name\":\"n\",\"type\":\"int\",\"default\":5,\"doc\":\"a number\"},"
                   "{\"name\":\"o\",\"type\":[\"null\",\"long\"],\"default\":null}]}");
    e = cf_schema_new_struct();
    cf_schema_set_name(e, "a.b.Rec");
    cf_schema *n = cf_schema_primitive(CF_INT32, false);
    cf_schema_set_doc(n, "a number");
    cf_schema_set_default(n, cf_value_int32(5), NULL);
    cf_schema_add_field(e, "n", n, NULL);
    cf_schema_add_field(e, "o", cf_schema_primitive(CF_INT64, true), NULL);
    assert_true(cf_schema_equal(s, e));
    cf_schema_unref(s);
    cf_schema_unref(e);

    /* enum -> string with io.confluent.connect.avro.Enum parameters (testToConnectEnum) */
    s = to_connect("{\"type\":\"enum\",\"name\":\"TestEnum\",\"symbols\":[\"foo\",\"bar\",\"baz\"]}");
    e = cf_schema_new(CF_STRING);
    cf_schema_set_name(e, "TestEnum");
    cf_schema_set_param(e, "io.confluent.connect.avro.Enum", "TestEnum");
    cf_schema_set_param(e, "io.confluent.connect.avro.Enum.foo", "foo");
    cf_schema_set_param(e, "io.confluent.connect.avro.Enum.bar", "bar");
    cf_schema_set_param(e, "io.confluent.connect.avro.Enum.baz", "baz");
    assert_true(cf_schema_equal(s, e));
    cf_schema_unref(s);
    cf_schema_unref(e);

    /* general union -> io.confluent.connect.avro.Union struct (testToConnectUnion) */
    s = to_connect("[\"int\",\"string\",{\"type\":\"record\",\"name\":\"Rec\",\"fields\":[{\"name\":\"f\","
                   "\"type\":\"int\"}]}]");
    e = cf_schema_new_struct();
    cf_schema_set_name(e, CF_AVRO_UNION);
    cf_schema_add_field(e, "int", cf_schema_primitive(CF_INT32, true), NULL);
    cf_schema_add_field(e, "string", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema *rec = cf_schema_new_struct();
    cf_schema_set_name(rec, "Rec");
    cf_schema_add_field(rec, "f", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_set_optional(rec, true);
    cf_schema_add_field(e, "Rec", rec, NULL);
    assert_true(cf_schema_equal(s, e));
    cf_schema_unref(e);
    /* decode a union value: branch 1 (string) */
    cf_avro_codec *c;
    const char *uj = "[\"int\",\"string\"]";
    assert_int_equal(cf_avro_codec_from_json(uj, strlen(uj), &c, NULL), CF_OK);
    const uint8_t data[] = {0x02, 0x04, 'h', 'i'};
    cf_value *v;
    assert_int_equal(cf_avro_codec_decode(c, data, sizeof data, &v, NULL), CF_OK);
    assert_int_equal(v->type, CF_STRUCT);
    assert_string_equal(cf_value_struct_get(v, "string")->u.s.ptr, "hi");
    assert_null(cf_value_struct_get(v, "int"));
    /* and back */
    cf_buf b = CF_BUF_INIT;
    assert_int_equal(cf_avro_codec_encode(c, v, &b, NULL), CF_OK);
    assert_int_equal(b.len, sizeof data);
    assert_memory_equal(b.data, data, sizeof data);
    cf_buf_free(&b);
    cf_value_destroy(v);
    cf_avro_codec_destroy(c);
    cf_schema_unref(s);

    /* decimal without precision gets connect.decimal.precision = 64 */
    s = to_connect("{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"scale\":3}");
    assert_string_equal(cf_schema_param(s, CF_AVRO_DECIMAL_PRECISION_PARAM), "64");
    int32_t scale;
    assert_true(cf_schema_decimal_scale(s, &scale));
    assert_int_equal(scale, 3);
    cf_schema_unref(s);

    /* Avro logical types written by others map to Connect's */
    s = to_connect("{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}");
    assert_true(cf_schema_is_logical(s, CF_LOGICAL_TIMESTAMP));
    cf_schema_unref(s);
    s = to_connect("{\"type\":\"int\",\"logicalType\":\"date\"}");
    assert_true(cf_schema_is_logical(s, CF_LOGICAL_DATE));
    cf_schema_unref(s);
}

static void test_to_connect_errors(void **state) {
    (void)state;
    struct {
        const char *json;
        const char *where;
    } bad[] = {
        {"\"null\"", "(top level)"},
        {"{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"next\",\"type\":[\"null\",\"L\"]}]}", "next"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"x\",\"type\":\"Nope\"}]}", "x"},
        {"{\"type\":\"bytes\",\"logicalType\":\"decimal\"}", "(top level)"},
        {"{\"type\":\"int\",\"connect.type\":\"int128\"}", "(top level)"},
        {"[1,2", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_schema *s = NULL;
        cf_err err;
        cf_code rc = cf_avro_schema_to_connect(bad[i].json, strlen(bad[i].json), &s, &err);
        if (rc != CF_ERR_SCHEMA) fail_msg("case %zu: expected CF_ERR_SCHEMA, got %d", i, rc);
        assert_null(s);
        if (bad[i].where) assert_string_equal(err.where, bad[i].where);
    }
}

/* Round trip Connect -> Avro -> Connect of a schema with most features. */
static void test_schema_round_trip(void **state) {
    (void)state;
    cf_schema *inner = cf_schema_new_struct();
    cf_schema_set_name(inner, "com.example.Address");
    cf_schema_set_doc(inner, "where");
    cf_schema_add_field(inner, "zip", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_set_optional(inner, true);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, "com.example.Person");
    cf_schema_set_version(s, 3);
    cf_schema_add_field(s, "id", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema *name = cf_schema_primitive(CF_STRING, true);
    cf_schema_set_default(name, cf_value_string("anon"), NULL);
    cf_schema_add_field(s, "name", name, NULL);
    cf_schema_add_field(s, "address", inner, NULL);
    cf_schema *dec = cf_schema_decimal(4);
    cf_schema_set_param(dec, CF_AVRO_DECIMAL_PRECISION_PARAM, "20");
    cf_schema_set_optional(dec, true);
    cf_schema_add_field(s, "balance", dec, NULL);
    cf_schema_add_field(s, "born", cf_schema_date(), NULL);
    cf_schema_add_field(s, "wake", cf_schema_time(), NULL);
    cf_schema_add_field(s, "seen", cf_schema_timestamp(), NULL);
    cf_schema *i16 = cf_schema_primitive(CF_INT16, false);
    cf_schema_set_default(i16, cf_value_int16(-7), NULL);
    cf_schema_add_field(s, "small", i16, NULL);
    cf_schema_add_field(s, "tags", cf_schema_new_array(cf_schema_primitive(CF_STRING, true)), NULL);
    cf_schema_add_field(s, "scores",
                        cf_schema_new_map(cf_schema_primitive(CF_INT64, false), cf_schema_primitive(CF_FLOAT64, true)),
                        NULL);
    cf_schema *bytes_def = cf_schema_primitive(CF_BYTES, false);
    cf_schema_set_default(bytes_def, cf_value_bytes("\x00\xff\x80", 3), NULL);
    cf_schema_add_field(s, "blob", bytes_def, NULL);

    char *json;
    cf_err err;
    assert_int_equal(cf_avro_schema_from_connect(s, NULL, &json, &err), CF_OK);
    cf_schema *back = to_connect(json);
    if (!cf_schema_equal(back, s)) fail_msg("round trip differs: %s", json);

    /* a value with every field set, and one with the nulls */
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "id", cf_value_int64(42), NULL);
    cf_value_struct_set(v, "name", cf_value_string("Zoë"), NULL);
    cf_value *addr = cf_value_struct(cf_schema_ref(cf_schema_field(s, "address")->schema));
    cf_value_struct_set(addr, "zip", cf_value_string("1000"), NULL);
    cf_value_struct_set(v, "address", addr, NULL);
    uint8_t *u;
    size_t ul;
    cf_decimal_from_string("-12345678901234.5678", 4, &u, &ul, NULL);
    cf_value_struct_set(v, "balance", cf_value_bytes_take(u, ul), NULL);
    cf_value_struct_set(v, "born", cf_value_int32(-1), NULL);
    cf_value_struct_set(v, "wake", cf_value_int32(86399999), NULL);
    cf_value_struct_set(v, "seen", cf_value_int64(-5), NULL);
    cf_value_struct_set(v, "small", cf_value_int16(-32768), NULL);
    cf_value *tags = cf_value_array();
    cf_value_array_push(tags, cf_value_string("x"));
    cf_value_array_push(tags, NULL);
    cf_value_struct_set(v, "tags", tags, NULL);
    cf_value *sc = cf_value_map();
    cf_value_map_put(sc, cf_value_int64(1), cf_value_float64(0.5));
    cf_value_map_put(sc, cf_value_int64(-2), NULL);
    cf_value_struct_set(v, "scores", sc, NULL);
    cf_value_struct_set(v, "blob", cf_value_bytes("\x01\x02", 2), NULL);

    cf_avro_codec *c;
    assert_int_equal(cf_avro_codec_from_connect(s, NULL, &c, &err), CF_OK);
    cf_avro_codec *r;
    assert_int_equal(cf_avro_codec_from_json(json, strlen(json), &r, &err), CF_OK);
    cf_buf b = CF_BUF_INIT;
    assert_int_equal(cf_avro_codec_encode(c, v, &b, &err), CF_OK);
    cf_value *out;
    assert_int_equal(cf_avro_codec_decode(r, b.data, b.len, &out, &err), CF_OK);
    if (!cf_value_equal(out, v)) {
        fail_msg("value round trip differs:\n%s\n%s", cf_value_debug_string(out), cf_value_debug_string(v));
    }
    cf_value_destroy(out);

    /* every truncation of the encoding is rejected as damaged, never crashes */
    for (size_t cut = 0; cut < b.len; cut++) {
        cf_value *x = NULL;
        cf_code rc = cf_avro_codec_decode(r, b.data, cut, &x, &err);
        assert_int_equal(rc, CF_ERR_CORRUPT);
        assert_null(x);
    }
    /* trailing garbage too */
    cf_buf_append_byte(&b, 0);
    cf_value *x = NULL;
    assert_int_equal(cf_avro_codec_decode(r, b.data, b.len, &x, &err), CF_ERR_CORRUPT);

    cf_buf_free(&b);
    cf_avro_codec_destroy(c);
    cf_avro_codec_destroy(r);
    cf_value_destroy(v);
    free(json);
    cf_schema_unref(back);
    cf_schema_unref(s);
}

static void test_encode_errors_name_the_field(void **state) {
    (void)state;
    cf_schema *inner = cf_schema_new_struct();
    cf_schema_add_field(inner, "list", cf_schema_new_array(cf_schema_primitive(CF_INT32, false)), NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "inner", inner, NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value *iv = cf_value_struct(cf_schema_ref(inner));
    cf_value *l = cf_value_array();
    cf_value_array_push(l, cf_value_int32(1));
    cf_value_array_push(l, cf_value_string("two"));
    cf_value_struct_set(iv, "list", l, NULL);
    cf_value_struct_set(v, "inner", iv, NULL);
    cf_avro_codec *c;
    cf_err err;
    assert_int_equal(cf_avro_codec_from_connect(s, NULL, &c, &err), CF_OK);
    cf_buf b = CF_BUF_INIT;
    assert_int_equal(cf_avro_codec_encode(c, v, &b, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.where, "inner.list[1]");
    /* null for a required field */
    cf_value_destroy(l->u.arr.items[1]);
    l->u.arr.items[1] = NULL;
    assert_int_equal(cf_avro_codec_encode(c, v, &b, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.where, "inner.list[1]");
    cf_buf_free(&b);
    cf_avro_codec_destroy(c);
    cf_value_destroy(v);
    cf_schema_unref(s);
    /* schemaless is refused with a hint */
    char *json = NULL;
    assert_int_equal(cf_avro_schema_from_connect(NULL, NULL, &json, &err), CF_ERR_UNSUPPORTED);
    assert_true(strlen(err.hint) > 0);
}

static void test_damaged_input(void **state) {
    (void)state;
    const char *j = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"s\",\"type\":\"string\"},"
                    "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},"
                    "{\"name\":\"u\",\"type\":[\"null\",\"int\"]}]}";
    cf_avro_codec *c;
    cf_err err;
    assert_int_equal(cf_avro_codec_from_json(j, strlen(j), &c, &err), CF_OK);
    /* a string length far past the end */
    const uint8_t big[] = {0xfe, 0xff, 0xff, 0xff, 0x0f};
    cf_value *v = NULL;
    assert_int_equal(cf_avro_codec_decode(c, big, sizeof big, &v, &err), CF_ERR_CORRUPT);
    assert_string_equal(err.where, "s");
    /* an array block count larger than the data can hold */
    const uint8_t cnt[] = {0x00, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x02};
    assert_int_equal(cf_avro_codec_decode(c, cnt, sizeof cnt, &v, &err), CF_ERR_CORRUPT);
    assert_string_equal(err.where, "a");
    /* union index out of range */
    const uint8_t un[] = {0x00, 0x00, 0x04};
    assert_int_equal(cf_avro_codec_decode(c, un, sizeof un, &v, &err), CF_ERR_CORRUPT);
    assert_string_equal(err.where, "u");
    /* an over-long varint */
    const uint8_t vl[] = {0x00, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00};
    assert_int_equal(cf_avro_codec_decode(c, vl, sizeof vl, &v, &err), CF_ERR_CORRUPT);
    assert_string_equal(err.where, "a[0]");
    /* the good one */
    const uint8_t ok[] = {0x02, 'x', 0x02, 0x7f, 0x00, 0x02, 0x54};
    assert_int_equal(cf_avro_codec_decode(c, ok, sizeof ok, &v, &err), CF_OK);
    assert_int_equal(cf_value_struct_get(v, "a")->u.arr.items[0]->u.i, -64);
    assert_int_equal(cf_value_struct_get(v, "u")->u.i, 42);
    cf_value_destroy(v);
    cf_avro_codec_destroy(c);
}

/* connect.meta.data=false (AvroDataConfig.CONNECT_META_DATA_CONFIG): no connect.* annotations,
 * but Avro's own logical types stay. */
static void test_without_connect_meta_data(void **state) {
    (void)state;
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, "ns.R");
    cf_schema_set_version(s, 3);
    cf_schema_set_doc(s, "d");
    cf_schema_add_field(s, "b", cf_schema_primitive(CF_INT8, false), NULL);
    cf_schema_add_field(s, "day", cf_schema_date(), NULL);
    cf_avro_opts o = {.connect_meta_data = false};
    char *json;
    cf_err err;
    assert_int_equal(cf_avro_schema_from_connect(s, &o, &json, &err), CF_OK);
    json_t *got = json_loads(json, 0, NULL);
    json_t *exp = json_loads("{\"type\":\"record\",\"name\":\"R\",\"namespace\":\"ns\",\"fields\":["
                             "{\"name\":\"b\",\"type\":\"int\"},"
                             "{\"name\":\"day\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}}]}",
                             0, NULL);
    if (!json_equal(got, exp)) fail_msg("got %s", json);
    json_decref(got);
    json_decref(exp);
    /* read back: the record name survives (it is the Avro name), int8 becomes int32 */
    cf_schema *back = to_connect(json);
    assert_string_equal(back->name, "ns.R");
    assert_int_equal(cf_schema_field(back, "b")->schema->type, CF_INT32);
    assert_true(cf_schema_is_logical(cf_schema_field(back, "day")->schema, CF_LOGICAL_DATE));
    cf_schema_unref(back);
    free(json);
    cf_schema_unref(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_connect_primitives),
        cmocka_unit_test(test_primitive_values),
        cmocka_unit_test(test_from_connect_complex),
        cmocka_unit_test(test_from_connect_optional_with_metadata),
        cmocka_unit_test(test_from_connect_record_with_metadata),
        cmocka_unit_test(test_from_connect_logical),
        cmocka_unit_test(test_names_and_reuse),
        cmocka_unit_test(test_to_connect),
        cmocka_unit_test(test_to_connect_errors),
        cmocka_unit_test(test_schema_round_trip),
        cmocka_unit_test(test_encode_errors_name_the_field),
        cmocka_unit_test(test_damaged_input),
        cmocka_unit_test(test_without_connect_meta_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
