/*
 * test_string_bytes.c - StringConverter and ByteArrayConverter, with the
 * cases of Kafka's StringConverterTest (connect/runtime .../storage) and
 * ByteArrayConverterTest (connect/runtime .../converters), named after them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/convert.h"
#include "cdcflow/props.h"
#include "cdcflow/schema.h"

#define TOPIC "topic"
#define SAMPLE_STRING "a string"
#define SAMPLE_BYTES "sample string"

static cf_converter *mk(const char *name, const char *enc) {
    cf_props *p = cf_props_new();
    if (enc) cf_props_set(p, "converter.encoding", enc);
    cf_converter *c = NULL;
    cf_err err;
    cf_code rc = cf_converter_new(name, p, false, &c, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, CF_OK);
    cf_props_destroy(p);
    return c;
}

/* Both ways of converting (a copy, and the borrowed view) give want. */
static void expect_bytes(cf_converter *c, const cf_schema *s, const cf_value *v, const char *want, size_t want_len) {
    char *d = NULL;
    size_t n = 0;
    assert_int_equal(cf_converter_from_connect(c, TOPIC, s, v, &d, &n, NULL), CF_OK);
    const char *view = NULL;
    size_t vn = 0;
    assert_int_equal(cf_converter_from_connect_view(c, TOPIC, s, v, &view, &vn, NULL), CF_OK);
    if (!want) {
        assert_null(d);
        assert_null(view);
    } else {
        assert_int_equal(n, want_len);
        assert_memory_equal(d, want, n);
        assert_int_equal(vn, want_len);
        assert_memory_equal(view, want, vn);
    }
    free(d);
}

static void testStringToBytes(void **st) {
    (void)st;
    cf_converter *c = mk("string", NULL);
    cf_schema *s = cf_schema_primitive(CF_STRING, false);
    cf_value *v = cf_value_string(SAMPLE_STRING);
    expect_bytes(c, s, v, SAMPLE_STRING, strlen(SAMPLE_STRING));
    cf_value_destroy(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void testNonStringToBytes(void **st) {
    (void)st;
    cf_converter *c = mk("org.apache.kafka.connect.storage.StringConverter", NULL);
    cf_schema *s = cf_schema_primitive(CF_BOOLEAN, false);
    cf_value *v = cf_value_bool(true);
    expect_bytes(c, s, v, "true", 4);
    cf_value_destroy(v);
    /* Java toString of other types */
    cf_value *d = cf_value_float64(12.5), *l = cf_value_int64(-7), *a = cf_value_array();
    cf_value_array_push(a, cf_value_int32(1));
    cf_value_array_push(a, cf_value_string("x"));
    expect_bytes(c, NULL, d, "12.5", 4);
    expect_bytes(c, NULL, l, "-7", 2);
    expect_bytes(c, NULL, a, "[1, x]", 6);
    cf_value_destroy(d), cf_value_destroy(l), cf_value_destroy(a);
    cf_schema *ss = cf_schema_new_struct();
    cf_schema_add_field(ss, "a", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(ss, "b", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema_add_field(ss, "c", cf_schema_primitive(CF_STRING, true), NULL);
    cf_value *sv = cf_value_struct(cf_schema_ref(ss));
    cf_value_struct_set(sv, "a", cf_value_int32(1), NULL);
    cf_value_struct_set(sv, "c", cf_value_string("x"), NULL);
    expect_bytes(c, ss, sv, "Struct{a=1,c=x}", 15);
    cf_value_destroy(sv);
    cf_schema_unref(ss);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void testNullToBytes(void **st) {
    (void)st;
    cf_converter *c = mk("string", NULL);
    cf_schema *s = cf_schema_primitive(CF_STRING, true);
    expect_bytes(c, s, NULL, NULL, 0);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void testToBytesIgnoresSchema(void **st) {
    (void)st;
    cf_converter *c = mk("string", NULL);
    cf_value *v = cf_value_bool(true);
    expect_bytes(c, NULL, v, "true", 4);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void testToBytesNonUtf8Encoding(void **st) {
    (void)st;
    /* Kafka's test uses UTF-16, which we do not support: a clear config error */
    cf_props *p = cf_props_new();
    cf_props_set(p, "converter.encoding", "UTF-16");
    cf_converter *c = NULL;
    cf_err err;
    assert_int_not_equal(cf_converter_new("string", p, false, &c, &err), CF_OK);
    assert_null(c);
    cf_props_destroy(p);
    /* ISO-8859-1: one byte per character, '?' for what it cannot encode */
    c = mk("string", "ISO-8859-1");
    cf_value *v = cf_value_string("caf\xc3\xa9 \xe2\x82\xac");
    expect_bytes(c, NULL, v, "caf\xe9 ?", 6);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void testBytesToString(void **st) {
    (void)st;
    cf_converter *c = mk("string", NULL);
    cf_schema *s;
    cf_value *v;
    assert_int_equal(cf_converter_to_connect(c, TOPIC, SAMPLE_STRING, strlen(SAMPLE_STRING), &s, &v, NULL), CF_OK);
    assert_int_equal(s->type, CF_STRING);
    assert_true(s->optional);
    assert_string_equal(v->u.s.ptr, SAMPLE_STRING);
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void testBytesNullToString(void **st) {
    (void)st;
    cf_converter *c = mk("string", NULL);
    cf_schema *s;
    cf_value *v;
    assert_int_equal(cf_converter_to_connect(c, TOPIC, NULL, 0, &s, &v, NULL), CF_OK);
    assert_int_equal(s->type, CF_STRING);
    assert_true(s->optional);
    assert_null(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void testBytesToStringNonUtf8Encoding(void **st) {
    (void)st;
    cf_converter *c = mk("string", "latin1");
    cf_schema *s;
    cf_value *v;
    assert_int_equal(cf_converter_to_connect(c, TOPIC, "caf\xe9", 4, &s, &v, NULL), CF_OK);
    assert_string_equal(v->u.s.ptr, "caf\xc3\xa9");
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
    /* malformed UTF-8 becomes U+FFFD, as Java's decoder does */
    c = mk("string", NULL);
    assert_int_equal(cf_converter_to_connect(c, TOPIC, "a\xffz", 3, &s, &v, NULL), CF_OK);
    assert_string_equal(v->u.s.ptr, "a\xef\xbf\xbdz");
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

/* ByteArrayConverterTest */

static void testFromConnect(void **st) {
    (void)st;
    cf_converter *c = mk("bytes", NULL);
    cf_schema *s = cf_schema_primitive(CF_BYTES, false);
    cf_value *v = cf_value_bytes(SAMPLE_BYTES, strlen(SAMPLE_BYTES));
    expect_bytes(c, s, v, SAMPLE_BYTES, strlen(SAMPLE_BYTES));
    cf_value_destroy(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void testFromConnectSchemaless(void **st) {
    (void)st;
    cf_converter *c = mk("org.apache.kafka.connect.converters.ByteArrayConverter", NULL);
    cf_value *v = cf_value_bytes(SAMPLE_BYTES, strlen(SAMPLE_BYTES));
    expect_bytes(c, NULL, v, SAMPLE_BYTES, strlen(SAMPLE_BYTES));
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void testFromConnectBadSchema(void **st) {
    (void)st;
    cf_converter *c = mk("bytes", NULL);
    cf_schema *s = cf_schema_primitive(CF_INT32, false);
    cf_value *v = cf_value_int32(12);
    char *d = NULL;
    size_t n;
    cf_err err;
    assert_int_equal(cf_converter_from_connect(c, TOPIC, s, v, &d, &n, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Invalid schema type for ByteArrayConverter: int32");
    const char *view = "x";
    cf_err_clear(&err);
    assert_int_equal(cf_converter_from_connect_view(c, TOPIC, s, v, &view, &n, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Invalid schema type for ByteArrayConverter: int32");
    assert_null(view);
    cf_value_destroy(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void testFromConnectInvalidValue(void **st) {
    (void)st;
    cf_converter *c = mk("bytes", NULL);
    cf_schema *s = cf_schema_primitive(CF_BYTES, false);
    cf_value *v = cf_value_int32(12);
    char *d = NULL;
    size_t n;
    assert_int_equal(cf_converter_from_connect(c, TOPIC, s, v, &d, &n, NULL), CF_ERR_SCHEMA);
    assert_null(d);
    const char *view = "x";
    assert_int_equal(cf_converter_from_connect_view(c, TOPIC, s, v, &view, &n, NULL), CF_ERR_SCHEMA);
    assert_null(view);
    cf_value_destroy(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void testFromConnectNull(void **st) {
    (void)st;
    cf_converter *c = mk("bytes", NULL);
    cf_schema *s = cf_schema_primitive(CF_BYTES, false);
    expect_bytes(c, s, NULL, NULL, 0);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

static void testToConnect(void **st) {
    (void)st;
    cf_converter *c = mk("bytes", NULL);
    cf_schema *s;
    cf_value *v;
    assert_int_equal(cf_converter_to_connect(c, TOPIC, SAMPLE_BYTES, strlen(SAMPLE_BYTES), &s, &v, NULL), CF_OK);
    assert_int_equal(s->type, CF_BYTES);
    assert_true(s->optional);
    assert_int_equal(v->u.s.len, strlen(SAMPLE_BYTES));
    assert_memory_equal(v->u.s.ptr, SAMPLE_BYTES, v->u.s.len);
    cf_schema_unref(s);
    cf_value_destroy(v);
    cf_converter_destroy(c);
}

static void testToConnectNull(void **st) {
    (void)st;
    cf_converter *c = mk("bytes", NULL);
    cf_schema *s;
    cf_value *v;
    assert_int_equal(cf_converter_to_connect(c, TOPIC, NULL, 0, &s, &v, NULL), CF_OK);
    assert_int_equal(s->type, CF_BYTES);
    assert_true(s->optional);
    assert_null(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(testStringToBytes),        cmocka_unit_test(testNonStringToBytes),
        cmocka_unit_test(testNullToBytes),          cmocka_unit_test(testToBytesIgnoresSchema),
        cmocka_unit_test(testToBytesNonUtf8Encoding), cmocka_unit_test(testBytesToString),
        cmocka_unit_test(testBytesNullToString),    cmocka_unit_test(testBytesToStringNonUtf8Encoding),
        cmocka_unit_test(testFromConnect),          cmocka_unit_test(testFromConnectSchemaless),
        cmocka_unit_test(testFromConnectBadSchema), cmocka_unit_test(testFromConnectInvalidValue),
        cmocka_unit_test(testFromConnectNull),      cmocka_unit_test(testToConnect),
        cmocka_unit_test(testToConnectNull),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
