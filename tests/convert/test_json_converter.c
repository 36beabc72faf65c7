/*
 * test_json_converter.c - JsonConverter against Kafka's own test vectors.
 *
 * Each test is named after the test method of
 * connect/json/src/test/java/org/apache/kafka/connect/json/JsonConverterTest.java
 * (apache/kafka) it ports; the input bytes and expected records are the ones
 * used there. Kafka's tests compare parsed JSON trees; where Kafka's output
 * order is determined (schema fields, struct fields) we compare the exact
 * bytes Jackson writes. Extra cases cover the Debezium envelope of
 * ../shared/specs/bigquery-cdc.md section 3 and our error reporting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/buf.h"
#include "cdcflow/convert.h"
#include "cdcflow/props.h"
#include "cdcflow/schema.h"

#define TOPIC "topic"

/* converter with key=value pairs, NULL-terminated. is_key is an int: a
 * bool before the "..." undergoes promotion, which makes va_start undefined. */
static cf_converter *conv(int is_key, ...) {
    cf_props *p = cf_props_new();
    va_list ap;
    va_start(ap, is_key);
    const char *k;
    while ((k = va_arg(ap, const char *))) cf_props_set(p, k, va_arg(ap, const char *));
    va_end(ap);
    cf_converter *c = NULL;
    cf_err err;
    cf_code rc = cf_converter_new("json", p, is_key != 0, &c, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, CF_OK);
    cf_props_destroy(p);
    return c;
}

typedef struct sv {
    cf_schema *schema;
    cf_value *value;
} sv;

static sv to_connect(cf_converter *c, const char *json) {
    sv r = {0};
    cf_err err;
    cf_code rc = cf_converter_to_connect(c, TOPIC, json, json ? strlen(json) : 0, &r.schema, &r.value, &err);
    if (rc) fprintf(stderr, "to_connect(%s): %s / %s / %s\n", json, err.message, err.detail, err.where);
    assert_int_equal(rc, CF_OK);
    return r;
}

static cf_code to_connect_err(cf_converter *c, const char *json, cf_err *err) {
    cf_schema *s = NULL;
    cf_value *v = NULL;
    cf_code rc = cf_converter_to_connect(c, TOPIC, json, strlen(json), &s, &v, err);
    assert_null(s);
    assert_null(v);
    return rc;
}

static void sv_free(sv *r) {
    cf_schema_unref(r->schema);
    cf_value_destroy(r->value);
}

/* from_connect must give exactly `expect` (NULL = null bytes), and so must
 * the borrowed view (what a producer uses), also right after another
 * conversion by the same converter */
static void expect_json(cf_converter *c, const cf_schema *s, const cf_value *v, const char *expect) {
    char *data = (char *)1;
    size_t len = 99;
    cf_err err;
    cf_code rc = cf_converter_from_connect(c, TOPIC, s, v, &data, &len, &err);
    if (rc) fprintf(stderr, "from_connect: %s / %s\n", err.message, err.where);
    assert_int_equal(rc, CF_OK);
    if (!expect) {
        assert_null(data);
    } else {
        assert_non_null(data);
        assert_int_equal(len, strlen(data));
        assert_string_equal(data, expect);
    }
    free(data);
    for (int round = 0; round < 2; round++) {
        const char *view = (const char *)1;
        len = 99;
        assert_int_equal(cf_converter_from_connect_view(c, TOPIC, s, v, &view, &len, &err), CF_OK);
        if (!expect) {
            assert_null(view);
            assert_int_equal(len, 0);
        } else {
            assert_non_null(view);
            assert_int_equal(len, strlen(expect));
            assert_memory_equal(view, expect, len);
        }
    }
}

static void assert_sv(sv r, const cf_schema *s, const cf_value *v) {
    assert_true(cf_schema_equal(r.schema, s));
    if (!cf_value_equal(r.value, v)) {
        char *a = cf_value_debug_string(r.value), *b = cf_value_debug_string(v);
        fprintf(stderr, "got %s, want %s\n", a, b);
        free(a), free(b);
        fail();
    }
}

static cf_schema *with_default(cf_schema *s, cf_value *d) {
    assert_int_equal(cf_schema_set_default(s, d, NULL), CF_OK);
    return s;
}

static cf_schema *opt(cf_schema *s) {
    cf_schema_set_optional(s, true);
    return s;
}

/* ----------------------------------------------------------- to connect */

static void testConnectSchemaMetadataTranslation(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *b = cf_schema_primitive(CF_BOOLEAN, false);
    cf_value *t = cf_value_bool(true);
    sv r = to_connect(c, "{ \"schema\": { \"type\": \"boolean\" }, \"payload\": true }");
    assert_sv(r, b, t);
    sv_free(&r);
    cf_schema *ob = cf_schema_primitive(CF_BOOLEAN, true);
    r = to_connect(c, "{ \"schema\": { \"type\": \"boolean\", \"optional\": true }, \"payload\": null }");
    assert_sv(r, ob, NULL);
    sv_free(&r);
    cf_schema *db = with_default(cf_schema_primitive(CF_BOOLEAN, false), cf_value_bool(true));
    r = to_connect(c, "{ \"schema\": { \"type\": \"boolean\", \"default\": true }, \"payload\": null }");
    assert_sv(r, db, t);
    sv_free(&r);
    cf_schema *full = cf_schema_primitive(CF_BOOLEAN, false);
    cf_schema_set_name(full, "bool");
    cf_schema_set_version(full, 2);
    cf_schema_set_doc(full, "the documentation");
    cf_schema_set_param(full, "foo", "bar");
    r = to_connect(c, "{ \"schema\": { \"type\": \"boolean\", \"optional\": false, \"name\": \"bool\", \"version\": 2, "
                      "\"doc\": \"the documentation\", \"parameters\": { \"foo\": \"bar\" }}, \"payload\": true }");
    assert_sv(r, full, t);
    sv_free(&r);
    cf_schema_unref(b), cf_schema_unref(ob), cf_schema_unref(db), cf_schema_unref(full);
    cf_value_destroy(t);
    cf_converter_destroy(c);
}

static void prim_to_connect(const char *json, cf_type t, cf_value *expect) {
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_primitive(t, false);
    sv r = to_connect(c, json);
    assert_sv(r, s, expect);
    sv_free(&r);
    cf_schema_unref(s);
    cf_value_destroy(expect);
    cf_converter_destroy(c);
}

static void booleanToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"boolean\" }, \"payload\": true }", CF_BOOLEAN, cf_value_bool(true));
    prim_to_connect("{ \"schema\": { \"type\": \"boolean\" }, \"payload\": false }", CF_BOOLEAN, cf_value_bool(false));
}
static void byteToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"int8\" }, \"payload\": 12 }", CF_INT8, cf_value_int8(12));
}
static void shortToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"int16\" }, \"payload\": 12 }", CF_INT16, cf_value_int16(12));
}
static void intToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"int32\" }, \"payload\": 12 }", CF_INT32, cf_value_int32(12));
}
static void longToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"int64\" }, \"payload\": 12 }", CF_INT64, cf_value_int64(12));
    prim_to_connect("{ \"schema\": { \"type\": \"int64\" }, \"payload\": 4398046511104 }", CF_INT64,
                    cf_value_int64(4398046511104LL));
}
static void floatToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"float\" }, \"payload\": 12.34 }", CF_FLOAT32, cf_value_float32(12.34f));
}
static void doubleToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"double\" }, \"payload\": 12.34 }", CF_FLOAT64, cf_value_float64(12.34));
}
static void bytesToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"bytes\" }, \"payload\": \"dGVzdC1zdHJpbmc=\" }", CF_BYTES,
                    cf_value_bytes("test-string", 11));
}
static void stringToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"string\" }, \"payload\": \"foo-bar-baz\" }", CF_STRING,
                    cf_value_string("foo-bar-baz"));
}

static void arrayToConnect(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_new_array(cf_schema_primitive(CF_INT32, false));
    cf_value *a = cf_value_array();
    for (int i = 1; i <= 3; i++) cf_value_array_push(a, cf_value_int32(i));
    sv r = to_connect(c, "{ \"schema\": { \"type\": \"array\", \"items\": { \"type\" : \"int32\" } }, \"payload\": [1, 2, 3] }");
    assert_sv(r, s, a);
    sv_free(&r);
    cf_schema_unref(s);
    cf_value_destroy(a);
    cf_converter_destroy(c);
}

static void mapToConnectStringKeys(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_new_map(cf_schema_primitive(CF_STRING, false), cf_schema_primitive(CF_INT32, false));
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("key1"), cf_value_int32(12));
    cf_value_map_put(m, cf_value_string("key2"), cf_value_int32(15));
    sv r = to_connect(c, "{ \"schema\": { \"type\": \"map\", \"keys\": { \"type\" : \"string\" }, \"values\": { \"type\" : "
                         "\"int32\" } }, \"payload\": { \"key1\": 12, \"key2\": 15} }");
    assert_sv(r, s, m);
    sv_free(&r);
    cf_schema_unref(s);
    cf_value_destroy(m);
    cf_converter_destroy(c);
}

static void mapToConnectNonStringKeys(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_new_map(cf_schema_primitive(CF_INT32, false), cf_schema_primitive(CF_INT32, false));
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_int32(1), cf_value_int32(12));
    cf_value_map_put(m, cf_value_int32(2), cf_value_int32(15));
    sv r = to_connect(c, "{ \"schema\": { \"type\": \"map\", \"keys\": { \"type\" : \"int32\" }, \"values\": { \"type\" : "
                         "\"int32\" } }, \"payload\": [ [1, 12], [2, 15] ] }");
    assert_sv(r, s, m);
    sv_free(&r);
    cf_schema_unref(s);
    cf_value_destroy(m);
    cf_converter_destroy(c);
}

static void structToConnect(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "field1", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema_add_field(s, "field2", cf_schema_primitive(CF_STRING, false), NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "field1", cf_value_bool(true), NULL);
    cf_value_struct_set(v, "field2", cf_value_string("string"), NULL);
    sv r = to_connect(c, "{ \"schema\": { \"type\": \"struct\", \"fields\": [{ \"field\": \"field1\", \"type\": \"boolean\" "
                         "}, { \"field\": \"field2\", \"type\": \"string\" }] }, \"payload\": { \"field1\": true, "
                         "\"field2\": \"string\" } }");
    assert_sv(r, s, v);
    sv_free(&r);
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void structWithOptionalFieldToConnect(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "optional", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema_add_field(s, "required", cf_schema_primitive(CF_STRING, false), NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "required", cf_value_string("required"), NULL);
    sv r = to_connect(c, "{ \"schema\": { \"type\": \"struct\", \"fields\": [{ \"field\":\"optional\", \"type\": \"string\", "
                         "\"optional\": true }, {  \"field\": \"required\", \"type\": \"string\" }] }, \"payload\": { "
                         "\"required\": \"required\" } }");
    assert_sv(r, s, v);
    sv_free(&r);
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void nullToConnect(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    sv r = {(cf_schema *)1, (cf_value *)1};
    assert_int_equal(cf_converter_to_connect(c, TOPIC, NULL, 0, &r.schema, &r.value, NULL), CF_OK);
    assert_null(r.schema);
    assert_null(r.value);
    cf_converter_destroy(c);
}

static void emptyBytesToConnect(void **st) {
    (void)st;
    cf_converter *c = conv(true, "schemas.enable", "false", NULL);
    sv r = to_connect(c, "");
    assert_null(r.schema);
    assert_null(r.value);
    cf_converter_destroy(c);
}

static void schemalessWithEmptyFieldValueToConnect(void **st) {
    (void)st;
    cf_converter *c = conv(true, "schemas.enable", "false", NULL);
    sv r = to_connect(c, "{ \"a\": \"\", \"b\": null}");
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("a"), cf_value_string(""));
    cf_value_map_put(m, cf_value_string("b"), NULL);
    assert_null(r.schema);
    assert_true(cf_value_equal(r.value, m));
    cf_value_destroy(m);
    sv_free(&r);
    cf_converter_destroy(c);
}

static void nullSchemaPrimitiveToConnect(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    sv r = to_connect(c, "{ \"schema\": null, \"payload\": null }");
    assert_null(r.schema);
    assert_null(r.value);
    struct { const char *json; cf_value *want; } cases[] = {
        {"{ \"schema\": null, \"payload\": true }", cf_value_bool(true)},
        {"{ \"schema\": null, \"payload\": 12 }", cf_value_int64(12)},
        {"{ \"schema\": null, \"payload\": 12.24 }", cf_value_float64(12.24)},
        {"{ \"schema\": null, \"payload\": \"a string\" }", cf_value_string("a string")},
        {"{ \"schema\": null, \"payload\": [1, \"2\", 3] }", cf_value_array()},
        {"{ \"schema\": null, \"payload\": { \"field1\": 1, \"field2\": 2} }", cf_value_map()},
    };
    cf_value_array_push(cases[4].want, cf_value_int64(1));
    cf_value_array_push(cases[4].want, cf_value_string("2"));
    cf_value_array_push(cases[4].want, cf_value_int64(3));
    cf_value_map_put(cases[5].want, cf_value_string("field1"), cf_value_int64(1));
    cf_value_map_put(cases[5].want, cf_value_string("field2"), cf_value_int64(2));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        r = to_connect(c, cases[i].json);
        assert_null(r.schema);
        assert_true(cf_value_equal(r.value, cases[i].want));
        sv_free(&r);
        cf_value_destroy(cases[i].want);
    }
    cf_converter_destroy(c);
}

static cf_value *dec(const char *text, int32_t scale) {
    uint8_t *b;
    size_t n;
    assert_int_equal(cf_decimal_from_string(text, scale, &b, &n, NULL), CF_OK);
    cf_value *v = cf_value_bytes(b, n);
    free(b);
    return v;
}

static void decimal_case(const char *json, cf_schema *s, cf_value *want) {
    cf_converter *c = conv(false, NULL);
    sv r = to_connect(c, json);
    assert_sv(r, s, want);
    sv_free(&r);
    cf_schema_unref(s);
    cf_value_destroy(want);
    cf_converter_destroy(c);
}

static void decimalToConnect(void **st) {
    (void)st;
    /* "AJw=" is byte[]{0, -100}: 156 unscaled, scale 2 */
    decimal_case("{ \"schema\": { \"type\": \"bytes\", \"name\": \"org.apache.kafka.connect.data.Decimal\", \"version\": 1, "
                 "\"parameters\": { \"scale\": \"2\" } }, \"payload\": \"AJw=\" }",
                 cf_schema_decimal(2), dec("1.56", 2));
}
static void decimalToConnectOptional(void **st) {
    (void)st;
    decimal_case("{ \"schema\": { \"type\": \"bytes\", \"name\": \"org.apache.kafka.connect.data.Decimal\", \"version\": 1, "
                 "\"optional\": true, \"parameters\": { \"scale\": \"2\" } }, \"payload\": null }",
                 opt(cf_schema_decimal(2)), NULL);
}
static void decimalToConnectWithDefaultValue(void **st) {
    (void)st;
    decimal_case("{ \"schema\": { \"type\": \"bytes\", \"name\": \"org.apache.kafka.connect.data.Decimal\", \"version\": 1, "
                 "\"default\": \"AJw=\", \"parameters\": { \"scale\": \"2\" } }, \"payload\": null }",
                 with_default(cf_schema_decimal(2), dec("1.56", 2)), dec("1.56", 2));
}
static void decimalToConnectOptionalWithDefaultValue(void **st) {
    (void)st;
    decimal_case("{ \"schema\": { \"type\": \"bytes\", \"name\": \"org.apache.kafka.connect.data.Decimal\", \"version\": 1, "
                 "\"optional\": true, \"default\": \"AJw=\", \"parameters\": { \"scale\": \"2\" } }, \"payload\": null }",
                 with_default(opt(cf_schema_decimal(2)), dec("1.56", 2)), dec("1.56", 2));
}
static void numericDecimalToConnect(void **st) {
    (void)st;
    decimal_case("{ \"schema\": { \"type\": \"bytes\", \"name\": \"org.apache.kafka.connect.data.Decimal\", \"version\": 1, "
                 "\"parameters\": { \"scale\": \"2\" } }, \"payload\": 1.56 }",
                 cf_schema_decimal(2), dec("1.56", 2));
}
static void numericDecimalWithTrailingZerosToConnect(void **st) {
    (void)st;
    decimal_case("{ \"schema\": { \"type\": \"bytes\", \"name\": \"org.apache.kafka.connect.data.Decimal\", \"version\": 1, "
                 "\"parameters\": { \"scale\": \"4\" } }, \"payload\": 1.5600 }",
                 cf_schema_decimal(4), dec("1.5600", 4));
}
static void highPrecisionNumericDecimalToConnect(void **st) {
    (void)st;
    decimal_case("{ \"schema\": { \"type\": \"bytes\", \"name\": \"org.apache.kafka.connect.data.Decimal\", \"version\": 1, "
                 "\"parameters\": { \"scale\": \"17\" } }, \"payload\": 1.23456789123456789 }",
                 cf_schema_decimal(17), dec("1.23456789123456789", 17));
}

static void logical_case(const char *json, cf_schema *s, cf_value *want) { decimal_case(json, s, want); }

static void dateToConnect(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int32\", \"name\": \"org.apache.kafka.connect.data.Date\", \"version\": 1 }, "
                 "\"payload\": 10000 }",
                 cf_schema_date(), cf_value_int32(10000));
}
static void dateToConnectOptional(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int32\", \"name\": \"org.apache.kafka.connect.data.Date\", \"version\": 1, "
                 "\"optional\": true }, \"payload\": null }",
                 opt(cf_schema_date()), NULL);
}
static void dateToConnectWithDefaultValue(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int32\", \"name\": \"org.apache.kafka.connect.data.Date\", \"version\": 1, "
                 "\"default\": 0 }, \"payload\": null }",
                 with_default(cf_schema_date(), cf_value_int32(0)), cf_value_int32(0));
}
static void dateToConnectOptionalWithDefaultValue(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int32\", \"name\": \"org.apache.kafka.connect.data.Date\", \"version\": 1, "
                 "\"optional\": true, \"default\": 0 }, \"payload\": null }",
                 with_default(opt(cf_schema_date()), cf_value_int32(0)), cf_value_int32(0));
}
static void timeToConnect(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int32\", \"name\": \"org.apache.kafka.connect.data.Time\", \"version\": 1 }, "
                 "\"payload\": 14400000 }",
                 cf_schema_time(), cf_value_int32(14400000));
}
static void timeToConnectOptional(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int32\", \"name\": \"org.apache.kafka.connect.data.Time\", \"version\": 1, "
                 "\"optional\": true }, \"payload\": null }",
                 opt(cf_schema_time()), NULL);
}
static void timeToConnectWithDefaultValue(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int32\", \"name\": \"org.apache.kafka.connect.data.Time\", \"version\": 1, "
                 "\"default\": 0 }, \"payload\": null }",
                 with_default(cf_schema_time(), cf_value_int32(0)), cf_value_int32(0));
}
static void timeToConnectOptionalWithDefaultValue(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int32\", \"name\": \"org.apache.kafka.connect.data.Time\", \"version\": 1, "
                 "\"optional\": true, \"default\": 0 }, \"payload\": null }",
                 with_default(opt(cf_schema_time()), cf_value_int32(0)), cf_value_int32(0));
}
static void timestampToConnect(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int64\", \"name\": \"org.apache.kafka.connect.data.Timestamp\", \"version\": 1 "
                 "}, \"payload\": 4000000000 }",
                 cf_schema_timestamp(), cf_value_int64(4000000000LL));
}
static void timestampToConnectOptional(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int64\", \"name\": \"org.apache.kafka.connect.data.Timestamp\", \"version\": 1, "
                 "\"optional\": true }, \"payload\": null }",
                 opt(cf_schema_timestamp()), NULL);
}
static void timestampToConnectWithDefaultValue(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int64\", \"name\": \"org.apache.kafka.connect.data.Timestamp\", \"version\": 1, "
                 "\"default\": 42 }, \"payload\": null }",
                 with_default(cf_schema_timestamp(), cf_value_int64(42)), cf_value_int64(42));
}
static void timestampToConnectOptionalWithDefaultValue(void **st) {
    (void)st;
    logical_case("{ \"schema\": { \"type\": \"int64\", \"name\": \"org.apache.kafka.connect.data.Timestamp\", \"version\": 1,  "
                 "\"optional\": true, \"default\": 42 }, \"payload\": null }",
                 with_default(opt(cf_schema_timestamp()), cf_value_int64(42)), cf_value_int64(42));
}

/* ----------------------------------------------------------- to JSON */

static void testJsonSchemaMetadataTranslation(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_value *t = cf_value_bool(true);
    cf_schema *b = cf_schema_primitive(CF_BOOLEAN, false);
    expect_json(c, b, t, "{\"schema\":{\"type\":\"boolean\",\"optional\":false},\"payload\":true}");
    cf_schema *ob = cf_schema_primitive(CF_BOOLEAN, true);
    expect_json(c, ob, NULL, "{\"schema\":{\"type\":\"boolean\",\"optional\":true},\"payload\":null}");
    cf_schema *db = with_default(cf_schema_primitive(CF_BOOLEAN, false), cf_value_bool(true));
    expect_json(c, db, t, "{\"schema\":{\"type\":\"boolean\",\"optional\":false,\"default\":true},\"payload\":true}");
    cf_schema *full = cf_schema_primitive(CF_BOOLEAN, false);
    cf_schema_set_name(full, "bool");
    cf_schema_set_version(full, 3);
    cf_schema_set_doc(full, "the documentation");
    cf_schema_set_param(full, "foo", "bar");
    expect_json(c, full, t,
                "{\"schema\":{\"type\":\"boolean\",\"optional\":false,\"name\":\"bool\",\"version\":3,\"doc\":\"the "
                "documentation\",\"parameters\":{\"foo\":\"bar\"}},\"payload\":true}");
    cf_schema_unref(b), cf_schema_unref(ob), cf_schema_unref(db), cf_schema_unref(full);
    cf_value_destroy(t);
    cf_converter_destroy(c);
}

static void prim_to_json(cf_type t, cf_value *v, const char *tname, const char *payload) {
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_primitive(t, false);
    char want[256];
    snprintf(want, sizeof want, "{\"schema\":{\"type\":\"%s\",\"optional\":false},\"payload\":%s}", tname, payload);
    expect_json(c, s, v, want);
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void booleanToJson(void **st) { (void)st; prim_to_json(CF_BOOLEAN, cf_value_bool(true), "boolean", "true"); }
static void byteToJson(void **st) { (void)st; prim_to_json(CF_INT8, cf_value_int8(12), "int8", "12"); }
static void shortToJson(void **st) { (void)st; prim_to_json(CF_INT16, cf_value_int16(12), "int16", "12"); }
static void intToJson(void **st) { (void)st; prim_to_json(CF_INT32, cf_value_int32(12), "int32", "12"); }
static void longToJson(void **st) {
    (void)st;
    prim_to_json(CF_INT64, cf_value_int64(4398046511104LL), "int64", "4398046511104");
}
static void floatToJson(void **st) { (void)st; prim_to_json(CF_FLOAT32, cf_value_float32(12.34f), "float", "12.34"); }
static void doubleToJson(void **st) { (void)st; prim_to_json(CF_FLOAT64, cf_value_float64(12.34), "double", "12.34"); }
static void bytesToJson(void **st) {
    (void)st;
    prim_to_json(CF_BYTES, cf_value_bytes("test-string", 11), "bytes", "\"dGVzdC1zdHJpbmc=\"");
}
static void stringToJson(void **st) {
    (void)st;
    prim_to_json(CF_STRING, cf_value_string("test-string"), "string", "\"test-string\"");
}

static void arrayToJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_new_array(cf_schema_primitive(CF_INT32, false));
    cf_value *a = cf_value_array();
    for (int i = 1; i <= 3; i++) cf_value_array_push(a, cf_value_int32(i));
    expect_json(c, s, a,
                "{\"schema\":{\"type\":\"array\",\"items\":{\"type\":\"int32\",\"optional\":false},\"optional\":false},"
                "\"payload\":[1,2,3]}");
    cf_schema_unref(s);
    cf_value_destroy(a);
    cf_converter_destroy(c);
}

static void mapToJsonStringKeys(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_new_map(cf_schema_primitive(CF_STRING, false), cf_schema_primitive(CF_INT32, false));
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("key1"), cf_value_int32(12));
    cf_value_map_put(m, cf_value_string("key2"), cf_value_int32(15));
    expect_json(c, s, m,
                "{\"schema\":{\"type\":\"map\",\"keys\":{\"type\":\"string\",\"optional\":false},\"values\":{\"type\":"
                "\"int32\",\"optional\":false},\"optional\":false},\"payload\":{\"key1\":12,\"key2\":15}}");
    cf_schema_unref(s);
    cf_value_destroy(m);
    cf_converter_destroy(c);
}

static void mapToJsonNonStringKeys(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_new_map(cf_schema_primitive(CF_INT32, false), cf_schema_primitive(CF_INT32, false));
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_int32(1), cf_value_int32(12));
    cf_value_map_put(m, cf_value_int32(2), cf_value_int32(15));
    expect_json(c, s, m,
                "{\"schema\":{\"type\":\"map\",\"keys\":{\"type\":\"int32\",\"optional\":false},\"values\":{\"type\":"
                "\"int32\",\"optional\":false},\"optional\":false},\"payload\":[[1,12],[2,15]]}");
    cf_schema_unref(s);
    cf_value_destroy(m);
    cf_converter_destroy(c);
}

static cf_schema *struct4(void) {
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "field1", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema_add_field(s, "field2", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(s, "field3", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(s, "field4", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    return s;
}

static void structToJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = struct4();
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "field1", cf_value_bool(true), NULL);
    cf_value_struct_set(v, "field2", cf_value_string("string2"), NULL);
    cf_value_struct_set(v, "field3", cf_value_string("string3"), NULL);
    cf_value_struct_set(v, "field4", cf_value_bool(false), NULL);
    expect_json(c, s, v,
                "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"boolean\",\"optional\":false,\"field\":\"field1\"},"
                "{\"type\":\"string\",\"optional\":false,\"field\":\"field2\"},{\"type\":\"string\",\"optional\":false,"
                "\"field\":\"field3\"},{\"type\":\"boolean\",\"optional\":false,\"field\":\"field4\"}],\"optional\":false},"
                "\"payload\":{\"field1\":true,\"field2\":\"string2\",\"field3\":\"string3\",\"field4\":false}}");
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void structSchemaIdentical(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = struct4(), *input_schema = struct4(); /* equal, not the same object */
    cf_value *v = cf_value_struct(cf_schema_ref(input_schema));
    cf_value_struct_set(v, "field1", cf_value_bool(true), NULL);
    cf_value_struct_set(v, "field2", cf_value_string("string2"), NULL);
    cf_value_struct_set(v, "field3", cf_value_string("string3"), NULL);
    cf_value_struct_set(v, "field4", cf_value_bool(false), NULL);
    char *data;
    size_t len;
    assert_int_equal(cf_converter_from_connect(c, TOPIC, s, v, &data, &len, NULL), CF_OK);
    free(data);
    cf_schema_unref(s), cf_schema_unref(input_schema);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void decimalToJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_decimal(2);
    cf_value *v = dec("1.56", 2);
    expect_json(c, s, v,
                "{\"schema\":{\"type\":\"bytes\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data.Decimal\","
                "\"version\":1,\"parameters\":{\"scale\":\"2\"}},\"payload\":\"AJw=\"}");
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void decimalToNumericJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, "decimal.format", "NUMERIC", NULL);
    cf_schema *s = cf_schema_decimal(2);
    cf_value *v = dec("1.56", 2);
    expect_json(c, s, v,
                "{\"schema\":{\"type\":\"bytes\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data.Decimal\","
                "\"version\":1,\"parameters\":{\"scale\":\"2\"}},\"payload\":1.56}");
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

/* Found by fuzz_json_converter: a decimal read from 1.234567891234e6789 at
 * scale 18 printed as BigDecimal.toString() prints it is 6,808 digits, a
 * JSON number longer than we (and Jackson) read. Such a value is written
 * with its trailing zeros in the exponent, and reads back equal; one with
 * more significant digits than a JSON number holds is a clear error. */
static void decimalTooLongForPlainNumericJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, "decimal.format", "NUMERIC", NULL);
    cf_schema *s = cf_schema_decimal(18);
    cf_value *v = dec("1.234567891234e6789", 18);
    expect_json(c, s, v,
                "{\"schema\":{\"type\":\"bytes\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data.Decimal\","
                "\"version\":1,\"parameters\":{\"scale\":\"18\"}},\"payload\":1.234567891234E+6789}");
    sv r = to_connect(c, "{\"schema\":{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
                         "\"version\":1,\"parameters\":{\"scale\":\"18\"}},\"payload\":1.234567891234E+6789}");
    assert_true(cf_value_equal(r.value, v));
    sv_free(&r);
    cf_value_destroy(v);
    /* 1,200 significant digits (read as BASE64, which has no length limit) */
    uint8_t big[500];
    big[0] = 0x7f;
    for (size_t i = 1; i < sizeof big; i++) big[i] = (uint8_t)(0x35 + i);
    v = cf_value_bytes(big, sizeof big);
    char *data = NULL;
    size_t len = 0;
    cf_err err;
    assert_int_equal(cf_converter_from_connect(c, "t", s, v, &data, &len, &err), CF_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "too long for a JSON number"));
    assert_non_null(strstr(err.hint, "BASE64"));
    assert_null(data);
    const char *view = NULL; /* the view reports the same error */
    cf_err verr;
    assert_int_equal(cf_converter_from_connect_view(c, "t", s, v, &view, &len, &verr), CF_ERR_SCHEMA);
    assert_string_equal(verr.message, err.message);
    assert_string_equal(verr.hint, err.hint);
    assert_null(view);
    cf_value_destroy(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void decimalWithTrailingZerosToNumericJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, "decimal.format", "numeric", NULL); /* case insensitive */
    cf_schema *s = cf_schema_decimal(4);
    cf_value *v = dec("1.5600", 4);
    expect_json(c, s, v,
                "{\"schema\":{\"type\":\"bytes\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data.Decimal\","
                "\"version\":1,\"parameters\":{\"scale\":\"4\"}},\"payload\":1.5600}");
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void logical_to_json(cf_schema *s, cf_value *v, const char *want) {
    cf_converter *c = conv(false, NULL);
    expect_json(c, s, v, want);
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void dateToJson(void **st) {
    (void)st;
    logical_to_json(cf_schema_date(), cf_value_int32(10000),
                    "{\"schema\":{\"type\":\"int32\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data.Date\","
                    "\"version\":1},\"payload\":10000}");
}
static void timeToJson(void **st) {
    (void)st;
    logical_to_json(cf_schema_time(), cf_value_int32(14400000),
                    "{\"schema\":{\"type\":\"int32\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data.Time\","
                    "\"version\":1},\"payload\":14400000}");
}
static void timestampToJson(void **st) {
    (void)st;
    logical_to_json(cf_schema_timestamp(), cf_value_int64(4000000000LL),
                    "{\"schema\":{\"type\":\"int64\",\"optional\":false,\"name\":\"org.apache.kafka.connect.data."
                    "Timestamp\",\"version\":1},\"payload\":4000000000}");
}

static void nullSchemaAndPrimitiveToJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_value *t = cf_value_bool(true);
    expect_json(c, NULL, t, "{\"schema\":null,\"payload\":true}");
    cf_value_destroy(t);
    cf_converter_destroy(c);
}

static void nullSchemaAndArrayToJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_value *a = cf_value_array();
    cf_value_array_push(a, cf_value_int32(1));
    cf_value_array_push(a, cf_value_string("string"));
    cf_value_array_push(a, cf_value_bool(true));
    expect_json(c, NULL, a, "{\"schema\":null,\"payload\":[1,\"string\",true]}");
    cf_value_destroy(a);
    cf_converter_destroy(c);
}

static void nullSchemaAndMapToJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("key1"), cf_value_int32(12));
    cf_value_map_put(m, cf_value_string("key2"), cf_value_string("string"));
    cf_value_map_put(m, cf_value_string("key3"), cf_value_bool(true));
    expect_json(c, NULL, m, "{\"schema\":null,\"payload\":{\"key1\":12,\"key2\":\"string\",\"key3\":true}}");
    cf_value_destroy(m);
    cf_converter_destroy(c);
}

static void nullSchemaAndMapNonStringKeysToJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("string"), cf_value_int32(12));
    cf_value_map_put(m, cf_value_int32(52), cf_value_string("string"));
    cf_value_map_put(m, cf_value_bool(false), cf_value_bool(true));
    expect_json(c, NULL, m, "{\"schema\":null,\"payload\":[[\"string\",12],[52,\"string\"],[false,true]]}");
    cf_value_destroy(m);
    cf_converter_destroy(c);
}

static void nullSchemaAndNullValueToJson(void **st) {
    (void)st;
    cf_converter *c = conv(true, "schemas.enable", "true", NULL);
    expect_json(c, NULL, NULL, NULL);
    cf_converter_destroy(c);
}

static void nullValueToJson(void **st) {
    (void)st;
    cf_converter *c = conv(true, "schemas.enable", "false", NULL);
    expect_json(c, NULL, NULL, NULL);
    cf_converter_destroy(c);
}

static void mismatchSchemaJson(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_schema *s = cf_schema_primitive(CF_FLOAT64, false);
    cf_value *t = cf_value_bool(true);
    char *data = NULL;
    size_t len;
    cf_err err;
    assert_int_equal(cf_converter_from_connect(c, TOPIC, s, t, &data, &len, &err), CF_ERR_SCHEMA);
    assert_null(data);
    cf_schema_unref(s);
    cf_value_destroy(t);
    cf_converter_destroy(c);
}

static void decimalToJsonWithoutSchema(void **st) {
    (void)st;
    /* Kafka: a BigDecimal without schema is an error. Our closest case: a
     * struct without schema (schemaless data cannot hold structs). */
    cf_converter *c = conv(false, NULL);
    cf_schema *s = struct4();
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    char *data = NULL;
    size_t len;
    cf_err err;
    assert_int_equal(cf_converter_from_connect(c, TOPIC, NULL, v, &data, &len, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Mismatching schema.");
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void noSchemaToConnect(void **st) {
    (void)st;
    cf_converter *c = conv(true, "schemas.enable", "false", NULL);
    sv r = to_connect(c, "true");
    cf_value *t = cf_value_bool(true);
    assert_null(r.schema);
    assert_true(cf_value_equal(r.value, t));
    cf_value_destroy(t);
    sv_free(&r);
    cf_converter_destroy(c);
}

static void noSchemaToJson(void **st) {
    (void)st;
    cf_converter *c = conv(true, "schemas.enable", "false", NULL);
    cf_value *t = cf_value_bool(true);
    expect_json(c, NULL, t, "true");
    cf_value_destroy(t);
    cf_converter_destroy(c);
}

static void testCacheSchemaToConnectConversion(void **st) {
    /* the cache is internal; we check that repeated and differently spelled
     * schemas give equal, correct results (cache hits must not change them) */
    (void)st;
    cf_converter *c = conv(false, "schemas.cache.size", "2", NULL);
    const char *in[] = {"{ \"schema\": { \"type\": \"boolean\" }, \"payload\": true }",
                        "{ \"schema\": { \"type\": \"boolean\" }, \"payload\": true }",
                        "{ \"schema\": { \"type\": \"boolean\", \"optional\": true }, \"payload\": true }",
                        "{ \"schema\": { \"type\": \"boolean\", \"optional\": false }, \"payload\": true }",
                        "{ \"schema\": { \"type\": \"boolean\" }, \"payload\": true }"};
    bool optional[] = {false, false, true, false, false};
    for (int i = 0; i < 5; i++) {
        sv r = to_connect(c, in[i]);
        assert_int_equal(r.schema->optional, optional[i]);
        sv_free(&r);
    }
    cf_converter_destroy(c);
}

/* The converter takes the bytes of the last message's schema as a hint and
 * skips the scan when they repeat; a message whose schema starts with those
 * bytes but is not that object must still be read (or refused) in full. */
static void lastSchemaHint(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    sv r = to_connect(c, "{\"schema\":{\"type\":\"int32\"},\"payload\":7}");
    assert_int_equal(r.schema->type, CF_INT32);
    sv_free(&r);
    r = to_connect(c, "{\"schema\":{\"type\":\"int32\"},\"payload\":8}");
    assert_int_equal(r.schema->type, CF_INT32);
    assert_int_equal(r.value->u.i, 8);
    sv_free(&r);
    cf_err e;
    /* the hint's bytes followed by garbage: the parser goes on after them */
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"int32\"}x,\"payload\":8}", &e), CF_ERR_INVALID);
    assert_non_null(strstr(e.message, "invalid JSON"));
    /* the hint's bytes then the end of the input */
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"int32\"}", &e), CF_ERR_INVALID);
    /* a different schema after the hinted one, then the hinted one again */
    r = to_connect(c, "{\"schema\":{\"type\":\"int32\",\"optional\":true},\"payload\":null}");
    assert_true(r.schema->optional);
    assert_null(r.value);
    sv_free(&r);
    r = to_connect(c, "{\"schema\":{\"type\":\"int32\"},\"payload\":9}");
    assert_false(r.schema->optional);
    assert_int_equal(r.value->u.i, 9);
    sv_free(&r);
    /* payload first, then the schema */
    r = to_connect(c, "{\"payload\":10,\"schema\":{\"type\":\"int32\"}}");
    assert_int_equal(r.value->u.i, 10);
    sv_free(&r);
    /* a bad payload under a hinted schema is still an error */
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"int32\"},\"payload\":\"x\"}", &e), CF_ERR_SCHEMA);
    cf_converter_destroy(c);
    /* with the cache off there is no hint */
    c = conv(false, "schemas.cache.size", "0", NULL);
    for (int i = 0; i < 2; i++) {
        r = to_connect(c, "{\"schema\":{\"type\":\"int32\"},\"payload\":8}");
        assert_int_equal(r.value->u.i, 8);
        sv_free(&r);
    }
    cf_converter_destroy(c);
}

static void testCacheSchemaToJsonConversion(void **st) {
    (void)st;
    cf_converter *c = conv(false, "schemas.cache.size", "1", NULL);
    cf_value *t = cf_value_bool(true);
    for (int i = 0; i < 3; i++) {
        cf_schema *s = cf_schema_primitive(CF_BOOLEAN, i == 2);
        expect_json(c, s, t, i == 2 ? "{\"schema\":{\"type\":\"boolean\",\"optional\":true},\"payload\":true}"
                                    : "{\"schema\":{\"type\":\"boolean\",\"optional\":false},\"payload\":true}");
        cf_schema_unref(s);
    }
    cf_value_destroy(t);
    cf_converter_destroy(c);
}

static void testStringHeaderToJson(void **st) {
    (void)st;
    prim_to_json(CF_STRING, cf_value_string("test-string"), "string", "\"test-string\"");
}

static void stringHeaderToConnect(void **st) {
    (void)st;
    prim_to_connect("{ \"schema\": { \"type\": \"string\" }, \"payload\": \"foo-bar-baz\" }", CF_STRING,
                    cf_value_string("foo-bar-baz"));
}

/* ------------------------------------------- replace.null.with.default */

static void replaceNullWithDefault(void **st) {
    (void)st;
    const char *in = "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":true,"
                     "\"default\":42,\"field\":\"a\"}],\"optional\":false},\"payload\":{\"a\":null}}";
    cf_converter *c = conv(false, NULL);
    sv r = to_connect(c, in);
    cf_value *a = cf_value_struct_get(r.value, "a");
    assert_non_null(a);
    assert_int_equal(a->u.i, 42);
    /* writing: a null field with a default is written as the default */
    cf_value_struct_set(r.value, "a", NULL, NULL);
    expect_json(c, r.schema, r.value,
                "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":true,\"default\":42,"
                "\"field\":\"a\"}],\"optional\":false},\"payload\":{\"a\":42}}");
    sv_free(&r);
    cf_converter_destroy(c);

    c = conv(false, "replace.null.with.default", "false", NULL);
    r = to_connect(c, in);
    assert_null(cf_value_struct_get(r.value, "a"));
    expect_json(c, r.schema, r.value,
                "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":true,\"default\":42,"
                "\"field\":\"a\"}],\"optional\":false},\"payload\":{\"a\":null}}");
    sv_free(&r);
    cf_converter_destroy(c);
}

/* Kafka 3.7 JsonConverterTest: serializeNullToDefault / serializeNullToNull /
 * deserializeNullToDefault / deserializeNullToNull (an optional int32 with
 * default 42 and a null value) */
static void nullToDefaultTopLevel(void **st) {
    (void)st;
    cf_schema *s = with_default(cf_schema_primitive(CF_INT32, true), cf_value_int32(42));
    const char *in = "{\"schema\":{\"type\":\"int32\",\"optional\":true,\"default\":42},\"payload\":null}";
    cf_converter *c = conv(false, NULL);
    expect_json(c, s, NULL, "{\"schema\":{\"type\":\"int32\",\"optional\":true,\"default\":42},\"payload\":42}");
    sv r = to_connect(c, in);
    assert_int_equal(r.value->u.i, 42);
    sv_free(&r);
    cf_converter_destroy(c);
    c = conv(false, "replace.null.with.default", "false", NULL);
    expect_json(c, s, NULL, in);
    r = to_connect(c, in);
    assert_null(r.value);
    assert_true(cf_schema_equal(r.schema, s));
    sv_free(&r);
    cf_converter_destroy(c);
    cf_schema_unref(s);
}

/* ------------------------------------------------------ our additions */

/* The Debezium Postgres key and flattened value of bigquery-cdc.md section 3. */
static void debeziumKeyAndFlattenedValue(void **st) {
    (void)st;
    cf_converter *k = conv(true, NULL), *v = conv(false, NULL);
    const char *key = "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"}],"
                      "\"optional\":false,\"name\":\"dbserver1.public.customers.Key\"},\"payload\":{\"id\":1}}";
    sv r = to_connect(k, key);
    assert_string_equal(r.schema->name, "dbserver1.public.customers.Key");
    assert_int_equal(cf_value_struct_get(r.value, "id")->u.i, 1);
    expect_json(k, r.schema, r.value, key); /* same bytes back */
    sv_free(&r);
    const char *val =
        "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"},{\"type\":"
        "\"string\",\"optional\":false,\"field\":\"email\"},{\"type\":\"string\",\"optional\":true,\"field\":\"name\"},"
        "{\"type\":\"string\",\"optional\":true,\"field\":\"__deleted\"}],\"optional\":false,\"name\":\"dbserver1.public."
        "customers.Value\"},\"payload\":{\"id\":1,\"email\":\"b@x\",\"name\":null,\"__deleted\":\"false\"}}";
    r = to_connect(v, val);
    assert_null(cf_value_struct_get(r.value, "name"));
    assert_string_equal(cf_value_struct_get(r.value, "__deleted")->u.s.ptr, "false");
    expect_json(v, r.schema, r.value, val);
    sv_free(&r);
    /* payload null with a schema: a null value that keeps its schema */
    r = to_connect(v, "{\"schema\":{\"type\":\"struct\",\"fields\":[],\"optional\":true},\"payload\":null}");
    assert_non_null(r.schema);
    assert_null(r.value);
    sv_free(&r);
    cf_converter_destroy(k);
    cf_converter_destroy(v);
}

static void envelopeRequired(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_err err;
    assert_int_equal(to_connect_err(c, "{\"id\":1}", &err), CF_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "schemas.enable=false"));
    assert_int_equal(to_connect_err(c, "{\"schema\":null,\"payload\":1,\"x\":2}", &err), CF_ERR_SCHEMA);
    assert_int_equal(to_connect_err(c, "[1]", &err), CF_ERR_SCHEMA);
    assert_int_equal(to_connect_err(c, "", &err), CF_ERR_SCHEMA);
    /* duplicate keys collapse as in Jackson: still an envelope, last payload wins */
    sv r = to_connect(c, "{\"schema\":null,\"payload\":1,\"payload\":2}");
    assert_int_equal(r.value->u.i, 2);
    sv_free(&r);
    cf_converter_destroy(c);
}

static void errorsNameTheField(void **st) {
    (void)st;
    cf_converter *c = conv(false, NULL);
    cf_err err;
    const char *schema = "{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":[{\"type\":\"array\",\"items\":"
                         "{\"type\":\"int8\"},\"field\":\"tags\"}],\"field\":\"after\"}]}";
    char buf[512];
    snprintf(buf, sizeof buf, "{\"schema\":%s,\"payload\":{\"after\":{\"tags\":[1,300]}}}", schema);
    assert_int_equal(to_connect_err(c, buf, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.where, "after.tags[1]");
    snprintf(buf, sizeof buf, "{\"schema\":%s,\"payload\":{\"after\":{\"tags\":[1,\"x\"]}}}", schema);
    assert_int_equal(to_connect_err(c, buf, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.where, "after.tags[1]");
    snprintf(buf, sizeof buf, "{\"schema\":%s,\"payload\":{\"after\":{}}}", schema);
    assert_int_equal(to_connect_err(c, buf, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Invalid null value for required ARRAY field");
    assert_string_equal(err.where, "after.tags");
    /* syntax errors give the byte offset */
    assert_int_equal(to_connect_err(c, "{\"schema\":null,\"payload\":[1,]}", &err), CF_ERR_INVALID);
    assert_non_null(strstr(err.where, "byte 28"));
    /* schema errors */
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"int33\"},\"payload\":1}", &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Unknown schema type: int33");
    assert_int_equal(to_connect_err(c, "{\"schema\":{},\"payload\":1}", &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Schema must contain 'type' field");
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"array\"},\"payload\":[]}", &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Array schema did not specify the element type");
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int8\",\"field\":\"a\"},"
                                       "{\"type\":\"int8\",\"field\":\"a\"}]},\"payload\":{}}", &err),
                     CF_ERR_SCHEMA);
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"int8\",\"parameters\":{\"a\":1}},\"payload\":1}", &err),
                     CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Schema parameters must have string values.");
    /* time out of range */
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"int32\",\"name\":\"org.apache.kafka.connect.data.Time\"},"
                                       "\"payload\":86400000}", &err),
                     CF_ERR_SCHEMA);
    /* decimal with more digits than its scale */
    assert_int_equal(to_connect_err(c, "{\"schema\":{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
                                       "\"parameters\":{\"scale\":\"1\"}},\"payload\":1.25}", &err),
                     CF_ERR_SCHEMA);
    cf_converter_destroy(c);
}

static void javaNumberFormats(void **st) {
    (void)st;
    cf_converter *c = conv(false, "schemas.enable", "false", NULL);
    struct { double d; const char *want; } dv[] = {
        {1.0, "1.0"}, {100.0, "100.0"}, {1e7, "1.0E7"}, {1234567.0, "1234567.0"}, {0.001, "0.001"}, {1e-4, "1.0E-4"},
        {-2.5, "-2.5"}, {0.1 + 0.2, "0.30000000000000004"}, {1e21, "1.0E21"}, {123456789.125, "1.23456789125E8"},
        {-0.0, "-0.0"},
    };
    cf_schema *d = cf_schema_primitive(CF_FLOAT64, false);
    for (size_t i = 0; i < sizeof dv / sizeof dv[0]; i++) {
        cf_value *v = cf_value_float64(dv[i].d);
        expect_json(c, d, v, dv[i].want);
        cf_value_destroy(v);
    }
    cf_value *nan = cf_value_float64(NAN);
    expect_json(c, d, nan, "\"NaN\"");
    sv r = to_connect(c, "\"NaN\"");
    assert_int_equal(r.value->type, CF_STRING); /* schemaless: a string */
    sv_free(&r);
    cf_value_destroy(nan);
    cf_schema_unref(d);
    cf_schema *f = cf_schema_primitive(CF_FLOAT32, false);
    struct { float f; const char *want; } fv[] = {{12.34f, "12.34"}, {0.1f, "0.1"}, {1e10f, "1.0E10"}, {3.4028235e38f, "3.4028235E38"}};
    for (size_t i = 0; i < sizeof fv / sizeof fv[0]; i++) {
        cf_value *v = cf_value_float32(fv[i].f);
        expect_json(c, f, v, fv[i].want);
        cf_value_destroy(v);
    }
    cf_schema_unref(f);
    /* BigDecimal.toString for NUMERIC decimals */
    cf_converter *n = conv(false, "schemas.enable", "false", "decimal.format", "NUMERIC", NULL);
    struct { const char *text; int32_t scale; const char *want; } bv[] = {
        {"1.56", 2, "1.56"}, {"0.0000001", 7, "1E-7"}, {"0.000001", 6, "0.000001"}, {"-12300", -2, "-1.23E+4"},
        {"0", 3, "0.000"}, {"123", 0, "123"},
    };
    for (size_t i = 0; i < sizeof bv / sizeof bv[0]; i++) {
        cf_schema *ds = cf_schema_decimal(bv[i].scale);
        cf_value *v = dec(bv[i].text, bv[i].scale);
        expect_json(n, ds, v, bv[i].want);
        cf_value_destroy(v);
        cf_schema_unref(ds);
    }
    cf_converter_destroy(n);
    cf_converter_destroy(c);
}

static void stringEscapes(void **st) {
    (void)st;
    cf_converter *c = conv(false, "schemas.enable", "false", NULL);
    cf_schema *s = cf_schema_primitive(CF_STRING, false);
    cf_value *v = cf_value_string_n("a\"b\\c\n\x01/\xc3\xa9\x7f", 11);
    expect_json(c, s, v, "\"a\\\"b\\\\c\\n\\u0001/\xc3\xa9\x7f\"");
    sv r = to_connect(c, "\"a\\\"b\\\\c\\n\\u0001\\/\\u00e9\\ud83d\\ude00\"");
    assert_string_equal(r.value->u.s.ptr, "a\"b\\c\n\x01/\xc3\xa9\xf0\x9f\x98\x80");
    sv_free(&r);
    cf_value *bad = cf_value_string_n("a\xff\xc3", 3); /* invalid UTF-8 in a value: U+FFFD, valid output */
    expect_json(c, s, bad, "\"a\xef\xbf\xbd\xef\xbf\xbd\"");
    cf_value_destroy(bad);
    cf_err err;
    assert_int_equal(to_connect_err(c, "\"\\ud83d\"", &err), CF_ERR_INVALID);
    assert_int_equal(to_connect_err(c, "\"\xff\"", &err), CF_ERR_INVALID);
    assert_int_equal(to_connect_err(c, "01", &err), CF_ERR_INVALID);
    assert_int_equal(to_connect_err(c, "NaN", &err), CF_ERR_INVALID);
    assert_int_equal(to_connect_err(c, "{} x", &err), CF_ERR_INVALID);
    cf_value_destroy(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

/* The string scan tests 16 or 8 bytes at once for a quote, backslash,
 * control character or non-ASCII byte: each of them, at every position of
 * strings long enough for several words, must still be found there. */
static void stringScanEveryPosition(void **st) {
    (void)st;
    cf_converter *c = conv(false, "schemas.enable", "false", NULL);
    static const struct {
        const char *json;  /* what is put at the position, in the JSON text */
        const char *value; /* what it reads as (NULL: an error) */
    } cases[] = {
        {"\\\"", "\""}, {"\\\\", "\\"}, {"\\n", "\n"}, {"\\u00e9", "\xc3\xa9"}, {"\xc3\xa9", "\xc3\xa9"},
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"}, {"\x01", NULL}, {"\x1f", NULL}, {"\xff", NULL}, {"\xc3", NULL},
        {"\x7f", "\x7f"}, {" ", " "},
    };
    char json[128], want[128];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int len = 0; len <= 40; len++) {
            for (int at = 0; at <= len; at++) {
                int n = snprintf(json, sizeof json, "\"%.*s%s%.*s\"", at, "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
                                 cases[k].json, len - at, "ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210zyxwvu");
                cf_schema *sch = NULL;
                cf_value *v = NULL;
                cf_err err;
                cf_code rc = cf_converter_to_connect(c, TOPIC, json, (size_t)n, &sch, &v, &err);
                if (!cases[k].value) {
                    if (rc != CF_ERR_INVALID) fail_msg("case %zu len %d at %d: %s accepted", k, len, at, json);
                    continue;
                }
                if (rc) fail_msg("case %zu len %d at %d: %s: %s", k, len, at, json, err.message);
                snprintf(want, sizeof want, "%.*s%s%.*s", at, "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
                         cases[k].value, len - at, "ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210zyxwvu");
                assert_non_null(v);
                assert_string_equal(v->u.s.ptr, want);
                cf_value_destroy(v);
                cf_schema_unref(sch);
            }
        }
    }
    /* an unterminated string whose last word is plain */
    cf_err err;
    assert_int_equal(to_connect_err(c, "\"abcdefghijklmnopqrstuvwxyz0123456789", &err), CF_ERR_INVALID);
    cf_converter_destroy(c);
}

static void registryAndConfig(void **st) {
    (void)st;
    assert_ptr_equal(cf_converter_find("json"), cf_converter_find("org.apache.kafka.connect.json.JsonConverter"));
    assert_non_null(cf_converter_find("org.apache.kafka.connect.storage.StringConverter"));
    assert_non_null(cf_converter_find("org.apache.kafka.connect.converters.ByteArrayConverter"));
    assert_null(cf_converter_find("nope"));
    cf_converter *c = NULL;
    cf_err err;
    assert_int_equal(cf_converter_new("nope", NULL, false, &c, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.hint, "json"));
    cf_props *p = cf_props_new();
    cf_props_set(p, "decimal.format", "HEX");
    assert_int_not_equal(cf_converter_new("json", p, false, &c, &err), CF_OK);
    assert_null(c);
    cf_props_destroy(p);
    assert_int_equal(cf_converter_new("org.apache.kafka.connect.json.JsonConverter", NULL, false, &c, &err), CF_OK);
    assert_string_equal(cf_converter_get_plugin(c)->name, "json");
    cf_converter_destroy(c);
    /* every plugin's table passes the config module's self-check */
    for (const cf_converter_plugin *const *pl = cf_converter_plugins(); *pl; pl++) {
        cf_err e;
        if (cf_cfg_table_check((*pl)->config, &e) != CF_OK) fprintf(stderr, "%s: %s\n", (*pl)->name, e.message);
        assert_int_equal(cf_cfg_table_check((*pl)->config, NULL), CF_OK);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(testConnectSchemaMetadataTranslation),
        cmocka_unit_test(booleanToConnect),
        cmocka_unit_test(byteToConnect),
        cmocka_unit_test(shortToConnect),
        cmocka_unit_test(intToConnect),
        cmocka_unit_test(longToConnect),
        cmocka_unit_test(floatToConnect),
        cmocka_unit_test(doubleToConnect),
        cmocka_unit_test(bytesToConnect),
        cmocka_unit_test(stringToConnect),
        cmocka_unit_test(arrayToConnect),
        cmocka_unit_test(mapToConnectStringKeys),
        cmocka_unit_test(mapToConnectNonStringKeys),
        cmocka_unit_test(structToConnect),
        cmocka_unit_test(structWithOptionalFieldToConnect),
        cmocka_unit_test(nullToConnect),
        cmocka_unit_test(emptyBytesToConnect),
        cmocka_unit_test(schemalessWithEmptyFieldValueToConnect),
        cmocka_unit_test(nullSchemaPrimitiveToConnect),
        cmocka_unit_test(decimalToConnect),
        cmocka_unit_test(decimalToConnectOptional),
        cmocka_unit_test(decimalToConnectWithDefaultValue),
        cmocka_unit_test(decimalToConnectOptionalWithDefaultValue),
        cmocka_unit_test(numericDecimalToConnect),
        cmocka_unit_test(numericDecimalWithTrailingZerosToConnect),
        cmocka_unit_test(highPrecisionNumericDecimalToConnect),
        cmocka_unit_test(dateToConnect),
        cmocka_unit_test(dateToConnectOptional),
        cmocka_unit_test(dateToConnectWithDefaultValue),
        cmocka_unit_test(dateToConnectOptionalWithDefaultValue),
        cmocka_unit_test(timeToConnect),
        cmocka_unit_test(timeToConnectOptional),
        cmocka_unit_test(timeToConnectWithDefaultValue),
        cmocka_unit_test(timeToConnectOptionalWithDefaultValue),
        cmocka_unit_test(timestampToConnect),
        cmocka_unit_test(timestampToConnectOptional),
        cmocka_unit_test(timestampToConnectWithDefaultValue),
        cmocka_unit_test(timestampToConnectOptionalWithDefaultValue),
        cmocka_unit_test(testJsonSchemaMetadataTranslation),
        cmocka_unit_test(testCacheSchemaToConnectConversion),
        cmocka_unit_test(booleanToJson),
        cmocka_unit_test(byteToJson),
        cmocka_unit_test(shortToJson),
        cmocka_unit_test(intToJson),
        cmocka_unit_test(longToJson),
        cmocka_unit_test(floatToJson),
        cmocka_unit_test(doubleToJson),
        cmocka_unit_test(bytesToJson),
        cmocka_unit_test(stringToJson),
        cmocka_unit_test(arrayToJson),
        cmocka_unit_test(mapToJsonStringKeys),
        cmocka_unit_test(mapToJsonNonStringKeys),
        cmocka_unit_test(structToJson),
        cmocka_unit_test(structSchemaIdentical),
        cmocka_unit_test(decimalToJson),
        cmocka_unit_test(decimalToNumericJson),
        cmocka_unit_test(decimalTooLongForPlainNumericJson),
        cmocka_unit_test(decimalWithTrailingZerosToNumericJson),
        cmocka_unit_test(decimalToJsonWithoutSchema),
        cmocka_unit_test(dateToJson),
        cmocka_unit_test(timeToJson),
        cmocka_unit_test(timestampToJson),
        cmocka_unit_test(nullSchemaAndPrimitiveToJson),
        cmocka_unit_test(nullSchemaAndArrayToJson),
        cmocka_unit_test(nullSchemaAndMapToJson),
        cmocka_unit_test(nullSchemaAndMapNonStringKeysToJson),
        cmocka_unit_test(nullSchemaAndNullValueToJson),
        cmocka_unit_test(nullValueToJson),
        cmocka_unit_test(mismatchSchemaJson),
        cmocka_unit_test(noSchemaToConnect),
        cmocka_unit_test(noSchemaToJson),
        cmocka_unit_test(testCacheSchemaToJsonConversion),
        cmocka_unit_test(lastSchemaHint),
        cmocka_unit_test(testStringHeaderToJson),
        cmocka_unit_test(stringHeaderToConnect),
        cmocka_unit_test(replaceNullWithDefault),
        cmocka_unit_test(nullToDefaultTopLevel),
        cmocka_unit_test(debeziumKeyAndFlattenedValue),
        cmocka_unit_test(envelopeRequired),
        cmocka_unit_test(errorsNameTheField),
        cmocka_unit_test(javaNumberFormats),
        cmocka_unit_test(stringEscapes),
        cmocka_unit_test(stringScanEveryPosition),
        cmocka_unit_test(registryAndConfig),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
