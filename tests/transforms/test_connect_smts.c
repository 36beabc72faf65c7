/*
 * test_connect_smts.c - ValueToKey, InsertField, Cast, Filter, ExtractField,
 * HoistField, Flatten, MaskField, TimestampRouter, SetSchemaMetadata and the
 * predicates TopicNameMatches, HasHeaderKey, RecordIsTombstone with
 * predicates= / transforms.X.predicate / negate. Test names and vectors come
 * from Kafka's own tests (connect/transforms/src/test/java/org/apache/kafka/
 * connect/transforms/<Name>Test.java and predicates/<Name>Test.java); the chain
 * semantics of predicates from Connect's TransformationStage (apply when
 * negate XOR test). Tests marked "ours" follow the documented Java behaviour
 * where Kafka has no test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/props.h"
#include "cdcflow/record.h"
#include "cdcflow/schema.h"
#include "cdcflow/transforms.h"

#include "xf_test_util.h"

#define MILLIS_PER_DAY 86400000LL
#define MILLIS_PER_HOUR 3600000LL

static cf_record *key_rec(cf_schema *ks, cf_value *k) {
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "test");
    r->partition = 0;
    r->offset = 0;
    cf_record_set_key(r, ks, k);
    return r;
}

static cf_code run_err(cf_transform *t, cf_record *in, cf_err *err) {
    cf_record *out = NULL;
    cf_code rc = cf_transform_apply(t, in, &out, err);
    assert_null(out);
    cf_record_destroy(in);
    return rc;
}

static cf_value *map1(const char *k, cf_value *v) {
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string(k), v);
    return m;
}

/* ------------------------------------------------------------ ValueToKey */

static void vtk_schemaless(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.ValueToKey", "fields", "a,b", NULL);
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("a"), cf_value_int32(1));
    cf_value_map_put(m, cf_value_string("b"), cf_value_int32(2));
    cf_value_map_put(m, cf_value_string("c"), cf_value_int32(3));
    cf_record *out = run(t, value_rec(NULL, m));
    assert_null(out->key_schema);
    assert_int_equal(out->key->u.map.len, 2);
    assert_int_equal(cf_value_map_get_str(out->key, "a")->u.i, 1);
    assert_int_equal(cf_value_map_get_str(out->key, "b")->u.i, 2);
    assert_int_equal(out->value->u.map.len, 3); /* the value is kept */
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static cf_schema *abc_schema(void) {
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "a", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "b", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "c", cf_schema_primitive(CF_INT32, false), NULL);
    return s;
}

static void vtk_withSchema(void **st) {
    (void)st;
    cf_transform *t = mk("ValueToKey", "fields", "a,b", NULL);
    cf_schema *s = abc_schema();
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "a", cf_value_int32(1), NULL);
    cf_value_struct_set(v, "b", cf_value_int32(2), NULL);
    cf_value_struct_set(v, "c", cf_value_int32(3), NULL);
    cf_record *out = run(t, value_rec(s, v));
    cf_schema *want = cf_schema_new_struct();
    cf_schema_add_field(want, "a", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(want, "b", cf_schema_primitive(CF_INT32, false), NULL);
    assert_true(cf_schema_equal(out->key_schema, want));
    assert_int_equal(cf_value_struct_get(out->key, "a")->u.i, 1);
    assert_int_equal(cf_value_struct_get(out->key, "b")->u.i, 2);
    assert_int_equal(cf_value_validate(out->key_schema, out->key, NULL), CF_OK);
    cf_schema_unref(want);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void vtk_nonExistingField(void **st) {
    (void)st;
    cf_transform *t = mk("ValueToKey", "fields", "not_exist", NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "a", cf_schema_primitive(CF_INT32, false), NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "a", cf_value_int32(1), NULL);
    cf_err err;
    assert_int_equal(run_err(t, value_rec(s, v), &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Field does not exist: not_exist");
    cf_transform_destroy(t);
    /* ours: the list may not be empty (NonEmptyListValidator) */
    assert_int_equal(mk_err("ValueToKey", &err, "fields", "", NULL), CF_ERR_CONFIG);
}

/* a field optional with default 42, set to null (the replace.null.with.default tests) */
static cf_schema *default42(cf_type type, const char *name) {
    cf_schema *f = cf_schema_primitive(type, true);
    cf_schema_set_default(f, type == CF_INT64 ? cf_value_int64(42) : cf_value_int32(42), NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, "name");
    cf_schema_set_version(s, 1);
    cf_schema_set_doc(s, "doc");
    cf_schema_add_field(s, name, f, NULL);
    return s;
}

static void vtk_testReplaceNullWithDefaultConfig(void **st) {
    (void)st;
    for (int replace = 0; replace < 2; replace++) {
        cf_transform *t = mk("ValueToKey", "fields", "optional_with_default", "replace.null.with.default",
                             replace ? "true" : "false", NULL);
        cf_schema *s = default42(CF_INT32, "optional_with_default");
        cf_record *out = run(t, value_rec(s, cf_value_struct(cf_schema_ref(s))));
        const cf_value *k = out->key->u.st.fields[0];
        if (replace) assert_int_equal(k->u.i, 42);
        else assert_null(k);
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
}

/* ------------------------------------------------------------ InsertField */

#define IF_PROPS "topic.field", "topic_field!", "partition.field", "partition_field", "timestamp.field", \
                 "timestamp_field?", "static.field", "instance_id", "static.value", "my-instance-id"

static void if_topLevelStructRequired(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.InsertField$Value", "topic.field", "topic_field", NULL);
    cf_err err;
    assert_int_equal(run_err(t, value_rec(cf_schema_primitive(CF_INT32, false), cf_value_int32(42)), &err),
                     CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Only Struct objects supported for [field insertion], found: Integer");
    cf_transform_destroy(t);
}

static void if_copySchemaAndInsertConfiguredFields(void **st) {
    (void)st;
    cf_transform *t = mk("InsertField$Value", IF_PROPS, NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, "name");
    cf_schema_set_version(s, 1);
    cf_schema_set_doc(s, "doc");
    cf_schema_add_field(s, "magic", cf_schema_primitive(CF_INT64, true), NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "magic", cf_value_int64(42), NULL);
    cf_record *r = value_rec(s, v);
    r->partition = 0;
    r->timestamp = 789;
    r->ts_type = CF_TS_CREATE;
    cf_record *out = run(t, r);
    const cf_schema *os = out->value_schema;
    assert_string_equal(os->name, "name");
    assert_int_equal(os->version, 1);
    assert_string_equal(os->doc, "doc");
    assert_true(cf_schema_field(os, "magic")->schema->optional);
    assert_int_equal(cf_value_struct_get(out->value, "magic")->u.i, 42);
    const cf_schema *tf = cf_schema_field(os, "topic_field")->schema;
    assert_int_equal(tf->type, CF_STRING);
    assert_false(tf->optional);
    assert_string_equal(cf_value_struct_get(out->value, "topic_field")->u.s.ptr, "test");
    const cf_schema *pf = cf_schema_field(os, "partition_field")->schema;
    assert_true(pf->type == CF_INT32 && pf->optional);
    assert_int_equal(cf_value_struct_get(out->value, "partition_field")->u.i, 0);
    const cf_schema *tsf = cf_schema_field(os, "timestamp_field")->schema;
    assert_true(cf_schema_is_logical(tsf, CF_LOGICAL_TIMESTAMP) && tsf->optional);
    assert_int_equal(cf_value_struct_get(out->value, "timestamp_field")->u.i, 789);
    const cf_schema *sf = cf_schema_field(os, "instance_id")->schema;
    assert_true(sf->type == CF_STRING && sf->optional);
    assert_string_equal(cf_value_struct_get(out->value, "instance_id")->u.s.ptr, "my-instance-id");
    assert_int_equal(cf_value_validate(os, out->value, NULL), CF_OK);
    /* exercise caching: the same output schema for the same input schema */
    cf_record *r2 = value_rec(cf_schema_ref(s), cf_value_struct(cf_schema_ref(s)));
    r2->partition = 1;
    cf_record *out2 = run(t, r2);
    assert_ptr_equal(out2->value_schema, out->value_schema);
    cf_record_destroy(out2);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void if_schemalessInsertConfiguredFields(void **st) {
    (void)st;
    cf_transform *t = mk("InsertField$Value", IF_PROPS, NULL);
    cf_record *r = value_rec(NULL, map1("magic", cf_value_int64(42)));
    r->partition = 0;
    r->timestamp = 123;
    r->ts_type = CF_TS_CREATE;
    cf_record *out = run(t, r);
    assert_int_equal(cf_value_map_get_str(out->value, "magic")->u.i, 42);
    assert_string_equal(cf_value_map_get_str(out->value, "topic_field")->u.s.ptr, "test");
    assert_int_equal(cf_value_map_get_str(out->value, "partition_field")->u.i, 0);
    const cf_value *ts = cf_value_map_get_str(out->value, "timestamp_field");
    assert_int_equal(ts->type, CF_INT64);
    assert_int_equal(ts->u.i, 123);
    assert_string_equal(cf_value_map_get_str(out->value, "instance_id")->u.s.ptr, "my-instance-id");
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void if_tombstonesAndNullKeys(void **st) {
    (void)st; /* insertConfiguredFieldsIntoTombstoneEvent*, insertKeyFieldsIntoTombstoneEvent, insertIntoNullKey... */
    cf_transform *t = mk("InsertField$Value", IF_PROPS, NULL);
    cf_record *in = value_rec(NULL, NULL);
    cf_record *out = run(t, in);
    assert_ptr_equal(out, in);
    assert_null(out->value);
    assert_null(out->value_schema);
    cf_record_destroy(out);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "magic", cf_schema_primitive(CF_INT64, true), NULL);
    in = value_rec(s, NULL);
    out = run(t, in);
    assert_ptr_equal(out->value_schema, s);
    assert_null(out->value);
    cf_record_destroy(out);
    cf_transform_destroy(t);

    t = mk("InsertField$Key", IF_PROPS, NULL);
    in = key_rec(NULL, map1("magic", cf_value_int64(42)));
    out = run(t, in);
    assert_int_equal(cf_value_map_get_str(out->key, "magic")->u.i, 42);
    assert_string_equal(cf_value_map_get_str(out->key, "topic_field")->u.s.ptr, "test");
    assert_int_equal(cf_value_map_get_str(out->key, "partition_field")->u.i, 0);
    assert_null(cf_value_map_get_str(out->key, "timestamp_field")); /* the record has no timestamp */
    assert_string_equal(cf_value_map_get_str(out->key, "instance_id")->u.s.ptr, "my-instance-id");
    assert_null(out->value);
    cf_record_destroy(out);
    in = value_rec(NULL, map1("magic", cf_value_int64(42))); /* null key */
    out = run(t, in);
    assert_ptr_equal(out, in);
    assert_null(out->key);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void if_testUnsetOptionalField(void **st) {
    (void)st;
    for (int replace = 0; replace < 2; replace++) {
        cf_transform *t = mk("InsertField$Value", IF_PROPS, "replace.null.with.default", replace ? "true" : "false",
                             NULL);
        cf_schema *s = default42(CF_INT64, "magic_with_default");
        cf_record *out = run(t, value_rec(s, cf_value_struct(cf_schema_ref(s))));
        assert_true(cf_schema_equal(cf_schema_field(out->value_schema, "magic_with_default")->schema,
                                    s->fields[0].schema));
        const cf_value *v = out->value->u.st.fields[0];
        if (replace) assert_int_equal(v->u.i, 42);
        else assert_null(v);
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
}

static void if_configErrors(void **st) {
    (void)st; /* ours: InsertField.configure's ConfigExceptions, and offset.field on a source record */
    cf_err err;
    assert_int_equal(mk_err("InsertField$Value", &err, NULL), CF_ERR_CONFIG);
    assert_string_equal(err.message, "No field insertion configured");
    assert_int_equal(mk_err("InsertField$Value", &err, "static.field", "x", NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "No value specified for static field: x"));
    cf_transform *t = mk("InsertField$Value", "offset.field", "off", NULL);
    cf_record *r = value_rec(NULL, map1("a", cf_value_int32(1)));
    r->offset = -1;
    cf_record_set_source(r, map1("file", cf_value_string("a.csv")), map1("pos", cf_value_int64(1)));
    assert_int_equal(run_err(t, r, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Only SinkRecord supported for [field insertion], found: SourceRecord");
    r = value_rec(NULL, map1("a", cf_value_int32(1)));
    r->offset = 17;
    cf_record *out = run(t, r);
    assert_int_equal(cf_value_map_get_str(out->value, "off")->u.i, 17);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

/* ------------------------------------------------------------ Cast */

static cf_code cast_cfg(const char *spec) {
    cf_err err;
    return mk_err("org.apache.kafka.connect.transforms.Cast$Key", &err, "spec", spec, NULL);
}

static void cast_testConfigs(void **st) {
    (void)st; /* testConfigEmpty, InvalidSchemaType, InvalidTargetType, UnsupportedTargetType, InvalidMap, MixWhole... */
    assert_int_equal(cast_cfg(""), CF_ERR_CONFIG);
    assert_int_equal(cast_cfg("foo:faketype"), CF_ERR_CONFIG);
    assert_int_equal(cast_cfg("foo:array"), CF_ERR_CONFIG);
    assert_int_equal(cast_cfg("array"), CF_ERR_CONFIG);
    assert_int_equal(cast_cfg("foo:bytes"), CF_ERR_CONFIG);
    assert_int_equal(cast_cfg("foo:int8:extra"), CF_ERR_CONFIG);
    assert_int_equal(cast_cfg("foo:int8,int32"), CF_ERR_CONFIG);
    cf_err err;
    assert_int_equal(mk_err("Cast$Value", &err, "spec", "foo:faketype", NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail[0] ? err.detail : err.message, "Invalid type found in casting spec: faketype"));
    assert_int_equal(mk_err("Cast$Value", &err, "spec", "foo:bytes", NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail[0] ? err.detail : err.message, "does not support casting to BYTES"));
}

static void cast_nullRecords(void **st) {
    (void)st; /* castNullValueRecordWithSchema / Schemaless, castNullKeyRecordWithSchema / Schemaless */
    cf_transform *t = mk("Cast$Value", "spec", "foo:int64", NULL);
    cf_record *in = value_rec(cf_schema_primitive(CF_STRING, false), NULL);
    cf_record *out = run(t, in);
    assert_ptr_equal(out, in);
    assert_null(out->value);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = mk("Cast$Key", "spec", "foo:int64", NULL);
    in = key_rec(cf_schema_primitive(CF_STRING, false), NULL);
    out = run(t, in);
    assert_ptr_equal(out, in);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void cast_castFieldWithDefaultValueRecordWithSchema(void **st) {
    (void)st;
    for (int replace = 0; replace < 2; replace++) {
        cf_transform *t = mk("Cast$Value", "spec", "magic:string", "replace.null.with.default",
                             replace ? "true" : "false", NULL);
        cf_schema *f = cf_schema_primitive(CF_INT32, true);
        cf_schema_set_default(f, cf_value_int32(10), NULL);
        cf_schema *s = cf_schema_new_struct();
        cf_schema_add_field(s, "magic", f, NULL);
        cf_record *out = run(t, value_rec(s, cf_value_struct(cf_schema_ref(s))));
        assert_int_equal(cf_schema_field(out->value_schema, "magic")->schema->type, CF_STRING);
        const cf_value *v = out->value->u.st.fields[0];
        if (replace) assert_string_equal(v->u.s.ptr, "10");
        else assert_null(v);
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
}

/* castWholeRecordValueWithSchema<Type> and castWholeRecordValueSchemaless<Type>: 42 (int32) to each type */
static void cast_wholeRecordValue(void **st) {
    (void)st;
    static const struct {
        const char *spec;
        cf_type type;
    } to[] = {{"int8", CF_INT8},       {"int16", CF_INT16},     {"int32", CF_INT32},     {"int64", CF_INT64},
              {"float32", CF_FLOAT32}, {"float64", CF_FLOAT64}, {"boolean", CF_BOOLEAN}, {"string", CF_STRING}};
    for (int schemaless = 0; schemaless < 2; schemaless++)
        for (size_t i = 0; i < sizeof to / sizeof to[0]; i++) {
            cf_transform *t = mk("Cast$Value", "spec", to[i].spec, NULL);
            cf_record *out = run(t, value_rec(schemaless ? NULL : cf_schema_primitive(CF_INT32, false),
                                              cf_value_int32(42)));
            if (schemaless) assert_null(out->value_schema);
            else assert_int_equal(out->value_schema->type, to[i].type);
            assert_int_equal(out->value->type, to[i].type);
            if (to[i].type == CF_STRING) assert_string_equal(out->value->u.s.ptr, "42");
            else if (to[i].type == CF_BOOLEAN) assert_true(out->value->u.b);
            else if (to[i].type >= CF_FLOAT32) assert_true(out->value->u.f == 42.0);
            else assert_int_equal(out->value->u.i, 42);
            cf_record_destroy(out);
            cf_transform_destroy(t);
        }
    /* castWholeRecordValueWithSchemaBooleanFalse / SchemalessBooleanFalse */
    cf_transform *t = mk("Cast$Value", "spec", "boolean", NULL);
    cf_record *out = run(t, value_rec(cf_schema_primitive(CF_INT32, false), cf_value_int32(0)));
    assert_false(out->value->u.b);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* castWholeRecordKeyWithSchema: int32 42 -> int8 */
    t = mk("Cast$Key", "spec", "int8", NULL);
    out = run(t, key_rec(cf_schema_primitive(CF_INT32, false), cf_value_int32(42)));
    assert_int_equal(out->key_schema->type, CF_INT8);
    assert_int_equal(out->key->u.i, 42);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void cast_castWholeBigDecimalAndDateToString(void **st) {
    (void)st; /* castWholeBigDecimalRecordValueWithSchemaString, castWholeDateRecordValueWithSchemaString */
    cf_transform *t = mk("Cast$Value", "spec", "string", NULL);
    cf_record *out = run(t, value_rec(cf_schema_decimal(0), cf_value_bytes("\x2a", 1)));
    assert_int_equal(out->value_schema->type, CF_STRING);
    assert_string_equal(out->value->u.s.ptr, "42");
    assert_null(out->value_schema->name); /* ours: the logical name does not follow the cast */
    cf_record_destroy(out);
    out = run(t, value_rec(cf_schema_timestamp(), cf_value_int64(MILLIS_PER_DAY + 1)));
    assert_string_equal(out->value->u.s.ptr, "1970-01-02T00:00:00.001Z");
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void cast_castWholeRecordDefaultValue(void **st) {
    (void)st;
    cf_transform *t = mk("Cast$Value", "spec", "int32", NULL);
    cf_schema *s = cf_schema_primitive(CF_FLOAT32, false);
    cf_schema_set_default(s, cf_value_float32(-42.125f), NULL);
    cf_record *out = run(t, value_rec(s, cf_value_float32(42.125f)));
    assert_int_equal(out->value_schema->type, CF_INT32);
    assert_int_equal(out->value->u.i, 42);
    assert_int_equal(out->value_schema->default_value->u.i, -42);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void cast_castWholeRecordValueSchemalessUnsupportedType(void **st) {
    (void)st;
    cf_transform *t = mk("Cast$Value", "spec", "int8", NULL);
    cf_value *arr = cf_value_array();
    cf_value_array_push(arr, cf_value_string("foo"));
    cf_err err;
    assert_int_equal(run_err(t, value_rec(NULL, arr), &err), CF_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "does not support casting from ARRAY"));
    cf_transform_destroy(t);
}

static void cast_castLogicalToPrimitive(void **st) {
    (void)st;
    cf_transform *t = mk("Cast$Value", "spec",
                         "date_to_int32:int32,timestamp_to_int64:int64,time_to_int64:int64,decimal_to_int32:int32,"
                         "timestamp_to_float64:float64,null_timestamp_to_int32:int32", NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "date_to_int32", cf_schema_date(), NULL);
    cf_schema_add_field(s, "timestamp_to_int64", cf_schema_timestamp(), NULL);
    cf_schema_add_field(s, "time_to_int64", cf_schema_time(), NULL);
    cf_schema_add_field(s, "decimal_to_int32", cf_schema_decimal(0), NULL);
    cf_schema_add_field(s, "timestamp_to_float64", cf_schema_timestamp(), NULL);
    cf_schema *ot = cf_schema_timestamp();
    cf_schema_set_optional(ot, true);
    cf_schema_add_field(s, "null_timestamp_to_int32", ot, NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "date_to_int32", cf_value_int32(1), NULL); /* new Date(MILLIS_PER_DAY) */
    cf_value_struct_set(v, "timestamp_to_int64", cf_value_int64(0), NULL);
    cf_value_struct_set(v, "time_to_int64", cf_value_int32(1), NULL);
    cf_value_struct_set(v, "decimal_to_int32", cf_value_bytes("\x00\x80\x00\x00\x00", 5), NULL); /* 2^31 */
    cf_value_struct_set(v, "timestamp_to_float64", cf_value_int64(INT64_MAX), NULL);
    cf_record *out = run(t, value_rec(s, v));
    const cf_value *o = out->value;
    assert_int_equal(cf_value_struct_get(o, "date_to_int32")->u.i, 1);
    assert_int_equal(cf_value_struct_get(o, "timestamp_to_int64")->u.i, 0);
    assert_int_equal(cf_value_struct_get(o, "time_to_int64")->u.i, 1);
    assert_int_equal(cf_value_struct_get(o, "decimal_to_int32")->u.i, INT32_MIN);
    assert_true(cf_value_struct_get(o, "timestamp_to_float64")->u.f == 9.223372036854776E18);
    assert_null(cf_value_struct_get(o, "null_timestamp_to_int32"));
    const cf_schema *os = out->value_schema;
    assert_int_equal(cf_schema_field(os, "date_to_int32")->schema->type, CF_INT32);
    assert_null(cf_schema_field(os, "date_to_int32")->schema->name);
    assert_int_equal(cf_schema_field(os, "time_to_int64")->schema->type, CF_INT64);
    assert_int_equal(cf_schema_field(os, "timestamp_to_float64")->schema->type, CF_FLOAT64);
    assert_int_equal(cf_schema_field(os, "null_timestamp_to_int32")->schema->type, CF_INT32);
    assert_int_equal(cf_value_validate(os, o, NULL), CF_OK);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void cast_castLogicalToString(void **st) {
    (void)st; /* the formats of Values.dateFormatFor; `timestamp` is a fixed time here (Kafka uses now) */
    cf_transform *t = mk("Cast$Value", "spec", "date:string,decimal:string,time:string,timestamp:string", NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "date", cf_schema_date(), NULL);
    cf_schema_add_field(s, "decimal", cf_schema_decimal(0), NULL);
    cf_schema_add_field(s, "time", cf_schema_time(), NULL);
    cf_schema_add_field(s, "timestamp", cf_schema_timestamp(), NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "date", cf_value_int32(1), NULL);
    cf_value_struct_set(v, "decimal", cf_value_bytes("\x07\xbe", 2), NULL); /* 1982 */
    cf_value_struct_set(v, "time", cf_value_int32((int32_t)MILLIS_PER_HOUR), NULL);
    cf_value_struct_set(v, "timestamp", cf_value_int64(1483425001864LL), NULL);
    cf_record *out = run(t, value_rec(s, v));
    assert_string_equal(cf_value_struct_get(out->value, "date")->u.s.ptr, "1970-01-02");
    assert_string_equal(cf_value_struct_get(out->value, "decimal")->u.s.ptr, "1982");
    assert_string_equal(cf_value_struct_get(out->value, "time")->u.s.ptr, "01:00:00.000Z");
    assert_string_equal(cf_value_struct_get(out->value, "timestamp")->u.s.ptr, "2017-01-03T06:30:01.864Z");
    for (size_t i = 0; i < 4; i++) assert_int_equal(out->value_schema->fields[i].schema->type, CF_STRING);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static cf_schema *cast_types_schema(void) {
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "int8", cf_schema_primitive(CF_INT8, false), NULL);
    cf_schema_add_field(s, "int16", cf_schema_primitive(CF_INT16, true), NULL);
    cf_schema *i32 = cf_schema_primitive(CF_INT32, false);
    cf_schema_set_default(i32, cf_value_int32(2), NULL);
    cf_schema_add_field(s, "int32", i32, NULL);
    cf_schema_add_field(s, "int64", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(s, "float32", cf_schema_primitive(CF_FLOAT32, false), NULL);
    cf_schema *f64 = cf_schema_primitive(CF_FLOAT64, false);
    cf_schema_set_default(f64, cf_value_float64(-1.125), NULL);
    cf_schema_add_field(s, "float64", f64, NULL);
    cf_schema_add_field(s, "boolean", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema_add_field(s, "string", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(s, "bigdecimal", cf_schema_decimal(0), NULL);
    cf_schema_add_field(s, "date", cf_schema_date(), NULL);
    cf_schema_add_field(s, "optional", cf_schema_primitive(CF_FLOAT32, true), NULL);
    cf_schema_add_field(s, "timestamp", cf_schema_timestamp(), NULL);
    cf_schema_add_field(s, "bytes", cf_schema_primitive(CF_BYTES, false), NULL);
    return s;
}

static void cast_castFieldsWithSchema(void **st) {
    (void)st;
    cf_transform *t = mk("Cast$Value", "spec",
                         "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,"
                         "boolean:int8,string:int32,bigdecimal:string,date:string,optional:int32,bytes:string", NULL);
    cf_schema *s = cast_types_schema();
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "int8", cf_value_int8(8), NULL);
    cf_value_struct_set(v, "int16", cf_value_int16(16), NULL);
    cf_value_struct_set(v, "int32", cf_value_int32(32), NULL);
    cf_value_struct_set(v, "int64", cf_value_int64(64), NULL);
    cf_value_struct_set(v, "float32", cf_value_float32(32.f), NULL);
    cf_value_struct_set(v, "float64", cf_value_float64(-64.), NULL);
    cf_value_struct_set(v, "boolean", cf_value_bool(true), NULL);
    cf_value_struct_set(v, "bigdecimal", cf_value_bytes("\x2a", 1), NULL);
    cf_value_struct_set(v, "date", cf_value_int32(1), NULL);
    cf_value_struct_set(v, "string", cf_value_string("42"), NULL);
    cf_value_struct_set(v, "timestamp", cf_value_int64(0), NULL);
    cf_value_struct_set(v, "bytes", cf_value_bytes("\xFE\xDC\xBA\x98\x76\x54\x32\x10", 8), NULL);
    cf_record *out = run(t, value_rec(s, v));
    const cf_value *o = out->value;
    const cf_schema *os = out->value_schema;
    assert_int_equal(cf_value_struct_get(o, "int8")->type, CF_INT16);
    assert_int_equal(cf_value_struct_get(o, "int8")->u.i, 8);
    assert_true(cf_schema_field(os, "int16")->schema->optional);
    assert_int_equal(cf_value_struct_get(o, "int16")->u.i, 16);
    assert_int_equal(cf_value_struct_get(o, "int32")->u.i, 32);
    assert_int_equal(cf_schema_field(os, "int32")->schema->default_value->u.i, 2);
    assert_int_equal(cf_schema_field(os, "int32")->schema->default_value->type, CF_INT64);
    assert_true(cf_value_struct_get(o, "int64")->u.b);
    assert_true(cf_value_struct_get(o, "float32")->u.f == 32.);
    assert_true(cf_value_struct_get(o, "float64")->u.b);
    assert_true(cf_schema_field(os, "float64")->schema->default_value->u.b);
    assert_int_equal(cf_value_struct_get(o, "boolean")->u.i, 1);
    assert_int_equal(cf_value_struct_get(o, "string")->u.i, 42);
    assert_string_equal(cf_value_struct_get(o, "bigdecimal")->u.s.ptr, "42");
    assert_string_equal(cf_value_struct_get(o, "date")->u.s.ptr, "1970-01-02");
    assert_int_equal(cf_value_struct_get(o, "timestamp")->u.i, 0);
    assert_string_equal(cf_value_struct_get(o, "bytes")->u.s.ptr, "/ty6mHZUMhA=");
    assert_null(cf_value_struct_get(o, "optional"));
    assert_int_equal(cf_schema_field(os, "optional")->schema->type, CF_INT32);
    assert_true(cf_schema_is_logical(cf_schema_field(os, "timestamp")->schema, CF_LOGICAL_TIMESTAMP));
    assert_int_equal(cf_value_validate(os, o, NULL), CF_OK);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void cast_castFieldsSchemaless(void **st) {
    (void)st;
    cf_transform *t = mk("Cast$Value", "spec",
                         "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,"
                         "boolean:int8,string:int32", NULL);
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("int8"), cf_value_int8(8));
    cf_value_map_put(m, cf_value_string("int16"), cf_value_int16(16));
    cf_value_map_put(m, cf_value_string("int32"), cf_value_int32(32));
    cf_value_map_put(m, cf_value_string("int64"), cf_value_int64(64));
    cf_value_map_put(m, cf_value_string("float32"), cf_value_float32(32.f));
    cf_value_map_put(m, cf_value_string("float64"), cf_value_float64(-64.));
    cf_value_map_put(m, cf_value_string("boolean"), cf_value_bool(true));
    cf_value_map_put(m, cf_value_string("string"), cf_value_string("42"));
    cf_record *out = run(t, value_rec(NULL, m));
    assert_null(out->value_schema);
    const cf_value *o = out->value;
    assert_int_equal(cf_value_map_get_str(o, "int8")->type, CF_INT16);
    assert_int_equal(cf_value_map_get_str(o, "int16")->u.i, 16);
    assert_int_equal(cf_value_map_get_str(o, "int32")->type, CF_INT64);
    assert_true(cf_value_map_get_str(o, "int64")->u.b);
    assert_int_equal(cf_value_map_get_str(o, "float32")->type, CF_FLOAT64);
    assert_true(cf_value_map_get_str(o, "float64")->u.b);
    assert_int_equal(cf_value_map_get_str(o, "boolean")->u.i, 1);
    assert_int_equal(cf_value_map_get_str(o, "string")->u.i, 42);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void cast_javaConversions(void **st) {
    (void)st; /* ours: Java's narrowing, parsing and toString */
    struct {
        const char *spec;
        cf_value *in;
        const char *want; /* as text */
    } c[] = {
        {"int8", cf_value_int32(300), "44"},              /* (byte)300 */
        {"int16", cf_value_int64(70000), "4464"},         /* (short)70000 */
        {"int32", cf_value_float64(3e10), "2147483647"},  /* (int) saturates */
        {"int8", cf_value_float64(3e10), "-1"},           /* (byte)(int)3e10 = (byte)0x7fffffff */
        {"int64", cf_value_float64(-1.9), "-1"},          /* truncates */
        {"boolean", cf_value_float64(0.5), "false"},      /* longValue() != 0 */
        {"string", cf_value_float64(1e10), "1.0E10"},     /* Double.toString */
        {"string", cf_value_float32(0.1f), "0.1"},        /* Float.toString */
        {"string", cf_value_bool(false), "false"},
        {"boolean", cf_value_string("TRUE"), "true"},     /* Boolean.parseBoolean */
        {"boolean", cf_value_string("yes"), "false"},
        {"float64", cf_value_string(" 1.5d "), "1.5"},    /* Double.parseDouble trims, takes a suffix */
        {"int32", cf_value_string("+7"), "7"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cf_transform *t = mk("Cast$Value", "spec", "string", NULL);
        cf_transform *t1 = mk("Cast$Value", "spec", c[i].spec, NULL);
        cf_record *o1 = run(t1, value_rec(NULL, c[i].in));
        cf_record *o2 = run(t, o1);
        if (strcmp(o2->value->u.s.ptr, c[i].want)) fprintf(stderr, "case %zu: %s\n", i, o2->value->u.s.ptr);
        assert_string_equal(o2->value->u.s.ptr, c[i].want);
        cf_record_destroy(o2);
        cf_transform_destroy(t);
        cf_transform_destroy(t1);
    }
    cf_err err;
    const char *bad[] = {"128", "1.5", " 1", "", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_transform *t = mk("Cast$Value", "spec", "int8", NULL);
        assert_int_equal(run_err(t, value_rec(NULL, cf_value_string(bad[i])), &err), CF_ERR_SCHEMA);
        assert_non_null(strstr(err.message, "was out of range for requested data type"));
        cf_transform_destroy(t);
    }
    cf_transform *t = mk("Cast$Value", "spec", "int32", NULL);
    assert_int_equal(run_err(t, value_rec(NULL, cf_value_bytes("ab", 2)), &err), CF_ERR_SCHEMA);
    cf_transform_destroy(t);
}

/* ------------------------------------------------------------ Filter */

static void filter_dropsEverything(void **st) {
    (void)st; /* Filter.apply returns null */
    cf_transform *t = mk("org.apache.kafka.connect.transforms.Filter", NULL);
    cf_record *out = (cf_record *)1;
    cf_err err;
    assert_int_equal(cf_transform_apply(t, value_rec(NULL, cf_value_int32(1)), &out, &err), CF_OK);
    assert_null(out);
    cf_transform_destroy(t);
    assert_int_equal(mk_err("Filter", &err, "bogus", "x", NULL), CF_ERR_CONFIG);
}

/* ------------------------------------------------------------ ExtractField */

static void ef_schemaless(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.ExtractField$Key", "field", "magic", NULL);
    cf_record *out = run(t, key_rec(NULL, map1("magic", cf_value_int32(42))));
    assert_null(out->key_schema);
    assert_int_equal(out->key->u.i, 42);
    cf_record_destroy(out);
    /* nullSchemaless */
    out = run(t, key_rec(NULL, NULL));
    assert_null(out->key);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* nonExistentFieldSchemalessShouldReturnNull */
    t = mk("ExtractField$Key", "field", "nonexistent", NULL);
    out = run(t, key_rec(NULL, map1("magic", cf_value_int32(42))));
    assert_null(out->key);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void ef_schemalessAndNestedPath(void **st) {
    (void)st;
    cf_transform *t = mk("ExtractField$Key", "field.syntax.version", "V2", "field", "magic.foo", NULL);
    cf_record *out = run(t, key_rec(NULL, map1("magic", map1("foo", cf_value_int32(42)))));
    assert_int_equal(out->key->u.i, 42);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* nonExistentNestedFieldSchemalessShouldReturnNull */
    t = mk("ExtractField$Key", "field.syntax.version", "V2", "field", "magic.nonexistent", NULL);
    out = run(t, key_rec(NULL, map1("magic", map1("foo", cf_value_int32(42)))));
    assert_null(out->key);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* V1 (the default) takes the dotted name as it is */
    t = mk("ExtractField$Key", "field", "magic.foo", NULL);
    out = run(t, key_rec(NULL, map1("magic.foo", cf_value_int32(7))));
    assert_int_equal(out->key->u.i, 7);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* FieldPathNotationTest: backticks quote a name with dots */
    t = mk("ExtractField$Key", "field.syntax.version", "V2", "field", "`foo.bar`.baz", NULL);
    out = run(t, key_rec(NULL, map1("foo.bar", map1("baz", cf_value_int32(9)))));
    assert_int_equal(out->key->u.i, 9);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    cf_err err;
    assert_int_equal(mk_err("ExtractField$Key", &err, "field.syntax.version", "V2", "field", "`foo", NULL),
                     CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "Incomplete backtick pair in path: [`foo]"));
}

static void ef_withSchema(void **st) {
    (void)st;
    cf_transform *t = mk("ExtractField$Key", "field", "magic", NULL);
    cf_schema *ks = cf_schema_new_struct();
    cf_schema_add_field(ks, "magic", cf_schema_primitive(CF_INT32, false), NULL);
    cf_value *k = cf_value_struct(cf_schema_ref(ks));
    cf_value_struct_set(k, "magic", cf_value_int32(42), NULL);
    cf_record *out = run(t, key_rec(ks, k));
    assert_int_equal(out->key_schema->type, CF_INT32);
    assert_false(out->key_schema->optional);
    assert_int_equal(out->key->u.i, 42);
    cf_record_destroy(out);
    /* testNullWithSchema */
    ks = cf_schema_new_struct();
    cf_schema_add_field(ks, "magic", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_set_optional(ks, true);
    out = run(t, key_rec(ks, NULL));
    assert_int_equal(out->key_schema->type, CF_INT32);
    assert_null(out->key);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* nonExistentFieldWithSchemaShouldFail */
    t = mk("ExtractField$Key", "field", "nonexistent", NULL);
    ks = cf_schema_new_struct();
    cf_schema_add_field(ks, "magic", cf_schema_primitive(CF_INT32, false), NULL);
    k = cf_value_struct(cf_schema_ref(ks));
    cf_value_struct_set(k, "magic", cf_value_int32(42), NULL);
    cf_err err;
    assert_int_equal(run_err(t, key_rec(ks, k), &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Unknown field: nonexistent");
    cf_transform_destroy(t);
}

static void ef_withSchemaAndNestedPath(void **st) {
    (void)st;
    for (int bad = 0; bad < 2; bad++) {
        cf_transform *t = mk("ExtractField$Key", "field.syntax.version", "V2", "field",
                             bad ? "magic.nonexistent" : "magic.foo", NULL);
        cf_schema *foo = cf_schema_new_struct();
        cf_schema_add_field(foo, "foo", cf_schema_primitive(CF_INT32, false), NULL);
        cf_schema *ks = cf_schema_new_struct();
        cf_schema_add_field(ks, "magic", cf_schema_ref(foo), NULL);
        cf_value *fv = cf_value_struct(foo);
        cf_value_struct_set(fv, "foo", cf_value_int32(42), NULL);
        cf_value *k = cf_value_struct(cf_schema_ref(ks));
        cf_value_struct_set(k, "magic", fv, NULL);
        if (bad) {
            cf_err err;
            assert_int_equal(run_err(t, key_rec(ks, k), &err), CF_ERR_SCHEMA);
            assert_string_equal(err.message, "Unknown field: magic.nonexistent");
        } else {
            cf_record *out = run(t, key_rec(ks, k));
            assert_int_equal(out->key_schema->type, CF_INT32);
            assert_int_equal(out->key->u.i, 42);
            cf_record_destroy(out);
        }
        cf_transform_destroy(t);
    }
}

static void ef_testUnsetOptional(void **st) {
    (void)st; /* testUnsetOptionalKey, testUnsetOptionalField */
    for (int key = 0; key < 2; key++)
        for (int replace = 0; replace < 2; replace++) {
            cf_transform *t = mk(key ? "ExtractField$Key" : "ExtractField$Value", "field", "optional_with_default",
                                 "replace.null.with.default", replace ? "true" : "false", NULL);
            cf_schema *s = default42(CF_INT32, "optional_with_default");
            cf_value *v = cf_value_struct(cf_schema_ref(s));
            cf_record *out = run(t, key ? key_rec(s, v) : value_rec(s, v));
            const cf_value *got = key ? out->key : out->value;
            if (replace) assert_int_equal(got->u.i, 42);
            else assert_null(got);
            cf_record_destroy(out);
            cf_transform_destroy(t);
        }
}

/* ------------------------------------------------------------ HoistField */

static void hf_schemaless(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.HoistField$Key", "field", "magic", NULL);
    cf_record *out = run(t, key_rec(NULL, cf_value_int32(42)));
    assert_null(out->key_schema);
    assert_int_equal(out->key->u.map.len, 1);
    assert_int_equal(cf_value_map_get_str(out->key, "magic")->u.i, 42);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void hf_withSchema(void **st) {
    (void)st;
    cf_transform *t = mk("HoistField$Key", "field", "magic", NULL);
    cf_schema *ks = cf_schema_primitive(CF_INT32, false);
    cf_record *out = run(t, key_rec(ks, cf_value_int32(42)));
    assert_int_equal(out->key_schema->type, CF_STRUCT);
    assert_ptr_equal(cf_schema_field(out->key_schema, "magic")->schema, ks);
    assert_int_equal(cf_value_struct_get(out->key, "magic")->u.i, 42);
    assert_int_equal(cf_value_validate(out->key_schema, out->key, NULL), CF_OK);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

/* ------------------------------------------------------------ Flatten */

static void fl_topLevelRequired(void **st) {
    (void)st; /* topLevelStructRequired, topLevelMapRequired */
    cf_transform *t = mk("org.apache.kafka.connect.transforms.Flatten$Value", NULL);
    cf_err err;
    assert_int_equal(run_err(t, value_rec(cf_schema_primitive(CF_INT32, false), cf_value_int32(42)), &err),
                     CF_ERR_SCHEMA);
    assert_int_equal(run_err(t, value_rec(NULL, cf_value_int32(42)), &err), CF_ERR_SCHEMA);
    cf_transform_destroy(t);
}

static void fl_testNestedStruct(void **st) {
    (void)st;
    cf_transform *t = mk("Flatten$Value", NULL);
    static const cf_type types[] = {CF_INT8, CF_INT16, CF_INT32, CF_INT64, CF_FLOAT32,
                                    CF_FLOAT64, CF_BOOLEAN, CF_STRING, CF_BYTES};
    static const char *const names[] = {"int8",    "int16",   "int32",  "int64", "float32",
                                        "float64", "boolean", "string", "bytes"};
    cf_schema *sup = cf_schema_new_struct();
    for (size_t i = 0; i < 9; i++) cf_schema_add_field(sup, names[i], cf_schema_primitive(types[i], false), NULL);
    cf_schema *one = cf_schema_new_struct();
    cf_schema_add_field(one, "B", cf_schema_ref(sup), NULL);
    cf_schema *two = cf_schema_new_struct();
    cf_schema_add_field(two, "A", cf_schema_ref(one), NULL);
    cf_value *sv = cf_value_struct(sup);
    cf_value_struct_set(sv, "int8", cf_value_int8(8), NULL);
    cf_value_struct_set(sv, "int16", cf_value_int16(16), NULL);
    cf_value_struct_set(sv, "int32", cf_value_int32(32), NULL);
    cf_value_struct_set(sv, "int64", cf_value_int64(64), NULL);
    cf_value_struct_set(sv, "float32", cf_value_float32(32.f), NULL);
    cf_value_struct_set(sv, "float64", cf_value_float64(64.), NULL);
    cf_value_struct_set(sv, "boolean", cf_value_bool(true), NULL);
    cf_value_struct_set(sv, "string", cf_value_string("stringy"), NULL);
    cf_value_struct_set(sv, "bytes", cf_value_bytes("bytes", 5), NULL);
    cf_value *ov = cf_value_struct(one);
    cf_value_struct_set(ov, "B", sv, NULL);
    cf_value *tv = cf_value_struct(cf_schema_ref(two));
    cf_value_struct_set(tv, "A", ov, NULL);
    cf_record *out = run(t, value_rec(two, tv));
    assert_int_equal(out->value_schema->type, CF_STRUCT);
    assert_int_equal(out->value_schema->n_fields, 9);
    const cf_value *o = out->value;
    assert_int_equal(cf_value_struct_get(o, "A.B.int8")->u.i, 8);
    assert_int_equal(cf_value_struct_get(o, "A.B.int64")->u.i, 64);
    assert_true(cf_value_struct_get(o, "A.B.float64")->u.f == 64.);
    assert_true(cf_value_struct_get(o, "A.B.boolean")->u.b);
    assert_string_equal(cf_value_struct_get(o, "A.B.string")->u.s.ptr, "stringy");
    assert_memory_equal(cf_value_struct_get(o, "A.B.bytes")->u.s.ptr, "bytes", 5);
    assert_int_equal(cf_value_validate(out->value_schema, o, NULL), CF_OK);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void fl_testNestedMapWithDelimiter(void **st) {
    (void)st;
    cf_transform *t = mk("Flatten$Value", "delimiter", "#", NULL);
    cf_value *sup = cf_value_map();
    cf_value_map_put(sup, cf_value_string("int32"), cf_value_int32(32));
    cf_value_map_put(sup, cf_value_string("string"), cf_value_string("stringy"));
    cf_value_map_put(sup, cf_value_string("opt"), NULL); /* testOptionalFieldMap / testMapWithNullFields */
    cf_record *out = run(t, value_rec(NULL, map1("A", map1("B", sup))));
    assert_null(out->value_schema);
    assert_int_equal(out->value->u.map.len, 3);
    assert_int_equal(cf_value_map_get_str(out->value, "A#B#int32")->u.i, 32);
    assert_string_equal(cf_value_map_get_str(out->value, "A#B#string")->u.s.ptr, "stringy");
    assert_null(cf_value_map_get_str(out->value, "A#B#opt"));
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* testKey */
    t = mk("Flatten$Key", NULL);
    out = run(t, key_rec(NULL, map1("A", map1("B", cf_value_int32(12)))));
    assert_int_equal(cf_value_map_get_str(out->key, "A.B")->u.i, 12);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void fl_testOptionalStructs(void **st) {
    (void)st; /* testOptionalFieldStruct, testOptionalStruct, testOptionalNestedStruct */
    cf_transform *t = mk("Flatten$Value", NULL);
    cf_schema *sup = cf_schema_new_struct();
    cf_schema_set_optional(sup, true);
    cf_schema_add_field(sup, "opt_int32", cf_schema_primitive(CF_INT32, true), NULL);
    cf_schema *one = cf_schema_new_struct();
    cf_schema_add_field(one, "B", cf_schema_ref(sup), NULL);
    cf_value *ov = cf_value_struct(cf_schema_ref(one));
    cf_record *out = run(t, value_rec(one, ov));
    assert_null(cf_value_struct_get(out->value, "B.opt_int32"));
    assert_true(cf_schema_field(out->value_schema, "B.opt_int32")->schema->optional);
    cf_record_destroy(out);
    cf_record *in = value_rec(sup, NULL);
    out = run(t, in);
    assert_int_equal(out->value_schema->type, CF_STRUCT);
    assert_null(out->value);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void fl_testArrayWithSchema(void **st) {
    (void)st;
    cf_transform *t = mk("Flatten$Value", NULL);
    cf_schema *nested = cf_schema_new_struct();
    cf_schema_add_field(nested, "lfg", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema *inner = cf_schema_new_struct();
    cf_schema_add_field(inner, "baz", nested, NULL);
    cf_schema *arr = cf_schema_new_array(inner);
    cf_schema_set_doc(arr, "durk");
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "foo", arr, NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "foo", cf_value_array(), NULL);
    cf_record *out = run(t, value_rec(cf_schema_ref(s), v));
    assert_true(cf_schema_equal(out->value_schema, s));
    cf_record_destroy(out);
    cf_schema_unref(s);
    cf_transform_destroy(t);
}

static void fl_testOptionalAndDefaultValuesNested(void **st) {
    (void)st;
    cf_transform *t = mk("Flatten$Value", NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "req_field", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema *opt = cf_schema_primitive(CF_STRING, true);
    cf_schema_set_default(opt, cf_value_string("child_default"), NULL);
    cf_schema_add_field(s, "opt_field", opt, NULL);
    cf_schema_set_optional(s, true);
    cf_schema *dschema = cf_schema_new_struct();
    cf_schema_add_field(dschema, "req_field", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema *opt2 = cf_schema_primitive(CF_STRING, true);
    cf_schema_set_default(opt2, cf_value_string("child_default"), NULL);
    cf_schema_add_field(dschema, "opt_field", opt2, NULL);
    cf_value *def = cf_value_struct(dschema);
    cf_value_struct_set(def, "req_field", cf_value_string("req_default"), NULL);
    s->has_default = true; /* a struct default built as Java's Struct(builder) */
    s->default_value = def;
    cf_record *out = run(t, value_rec(cf_schema_ref(s), cf_value_struct(cf_schema_ref(s))));
    const cf_schema *os = out->value_schema;
    assert_int_equal(os->n_fields, 2);
    const cf_schema *rf = cf_schema_field(os, "req_field")->schema;
    assert_true(rf->optional);
    assert_string_equal(rf->default_value->u.s.ptr, "req_default");
    const cf_schema *of = cf_schema_field(os, "opt_field")->schema;
    assert_true(of->optional);
    assert_string_equal(of->default_value->u.s.ptr, "child_default");
    cf_record_destroy(out);
    cf_schema_unref(s);
    cf_transform_destroy(t);
}

static void fl_tombstonesAndErrors(void **st) {
    (void)st; /* tombstoneEventWith(out)SchemaShouldPassThrough; ours: MAP in a struct schema, name clashes */
    cf_transform *t = mk("Flatten$Value", NULL);
    cf_record *in = value_rec(NULL, NULL);
    cf_record *out = run(t, in);
    assert_ptr_equal(out, in);
    cf_record_destroy(out);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "m", cf_schema_new_map(cf_schema_primitive(CF_STRING, false),
                                                  cf_schema_primitive(CF_STRING, false)), NULL);
    cf_err err;
    assert_int_equal(run_err(t, value_rec(cf_schema_ref(s), cf_value_struct(cf_schema_ref(s))), &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Flatten transformation does not support MAP for record with schemas (for field m).");
    cf_schema_unref(s);
    s = cf_schema_new_struct();
    cf_schema *ab = cf_schema_new_struct();
    cf_schema_add_field(ab, "b", cf_schema_primitive(CF_INT32, true), NULL);
    cf_schema_add_field(s, "a", ab, NULL);
    cf_schema_add_field(s, "a.b", cf_schema_primitive(CF_INT32, true), NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    assert_int_equal(run_err(t, value_rec(s, v), &err), CF_ERR_SCHEMA);
    cf_transform_destroy(t);
}

/* ------------------------------------------------------------ MaskField */

static cf_schema *mask_schema(void) {
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "magic", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "bool", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema_add_field(s, "byte", cf_schema_primitive(CF_INT8, false), NULL);
    cf_schema_add_field(s, "short", cf_schema_primitive(CF_INT16, false), NULL);
    cf_schema_add_field(s, "int", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "long", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(s, "float", cf_schema_primitive(CF_FLOAT32, false), NULL);
    cf_schema_add_field(s, "double", cf_schema_primitive(CF_FLOAT64, false), NULL);
    cf_schema_add_field(s, "string", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(s, "date", cf_schema_date(), NULL);
    cf_schema_add_field(s, "time", cf_schema_time(), NULL);
    cf_schema_add_field(s, "timestamp", cf_schema_timestamp(), NULL);
    cf_schema_add_field(s, "decimal", cf_schema_decimal(0), NULL);
    cf_schema_add_field(s, "array", cf_schema_new_array(cf_schema_primitive(CF_INT32, false)), NULL);
    cf_schema_add_field(s, "map", cf_schema_new_map(cf_schema_primitive(CF_STRING, false),
                                                    cf_schema_primitive(CF_STRING, false)), NULL);
    cf_schema *wd = cf_schema_primitive(CF_STRING, true);
    cf_schema_set_default(wd, cf_value_string("default"), NULL);
    cf_schema_add_field(s, "withDefault", wd, NULL);
    return s;
}

static cf_value *mask_values(cf_schema *s) {
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "magic", cf_value_int32(42), NULL);
    cf_value_struct_set(v, "bool", cf_value_bool(true), NULL);
    cf_value_struct_set(v, "byte", cf_value_int8(42), NULL);
    cf_value_struct_set(v, "short", cf_value_int16(42), NULL);
    cf_value_struct_set(v, "int", cf_value_int32(42), NULL);
    cf_value_struct_set(v, "long", cf_value_int64(42), NULL);
    cf_value_struct_set(v, "float", cf_value_float32(42), NULL);
    cf_value_struct_set(v, "double", cf_value_float64(42), NULL);
    cf_value_struct_set(v, "string", cf_value_string("hmm"), NULL);
    cf_value_struct_set(v, "date", cf_value_int32(20000), NULL);
    cf_value_struct_set(v, "time", cf_value_int32(1000), NULL);
    cf_value_struct_set(v, "timestamp", cf_value_int64(1483425001864LL), NULL);
    cf_value_struct_set(v, "decimal", cf_value_bytes("\x2a", 1), NULL);
    cf_value *arr = cf_value_array();
    cf_value_array_push(arr, cf_value_int32(1));
    cf_value_struct_set(v, "array", arr, NULL);
    cf_value_struct_set(v, "map", map1("what", cf_value_string("what")), NULL);
    return v;
}

static void mf_testWithSchema(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.MaskField$Value", "fields",
                         "bool,byte,short,int,long,float,double,string,date,time,timestamp,decimal,array,map,withDefault",
                         "replace.null.with.default", "false", NULL);
    cf_schema *s = mask_schema();
    cf_record *out = run(t, value_rec(s, mask_values(s)));
    const cf_value *o = out->value;
    assert_int_equal(cf_value_struct_get(o, "magic")->u.i, 42);
    assert_false(cf_value_struct_get(o, "bool")->u.b);
    assert_int_equal(cf_value_struct_get(o, "byte")->u.i, 0);
    assert_int_equal(cf_value_struct_get(o, "long")->u.i, 0);
    assert_true(cf_value_struct_get(o, "double")->u.f == 0);
    assert_string_equal(cf_value_struct_get(o, "string")->u.s.ptr, "");
    assert_int_equal(cf_value_struct_get(o, "date")->u.i, 0);
    assert_int_equal(cf_value_struct_get(o, "time")->u.i, 0);
    assert_int_equal(cf_value_struct_get(o, "timestamp")->u.i, 0);
    char *dec = cf_decimal_to_string((const uint8_t *)cf_value_struct_get(o, "decimal")->u.s.ptr,
                                     cf_value_struct_get(o, "decimal")->u.s.len, 0);
    assert_string_equal(dec, "0");
    free(dec);
    assert_int_equal(cf_value_struct_get(o, "array")->u.arr.len, 0);
    assert_int_equal(cf_value_struct_get(o, "map")->u.map.len, 0);
    assert_null(cf_value_struct_get(o, "withDefault"));
    assert_ptr_equal(out->value_schema, s);
    assert_int_equal(cf_value_validate(out->value_schema, o, NULL), CF_OK);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void mf_testSchemaless(void **st) {
    (void)st;
    cf_transform *t = mk("MaskField$Value", "fields", "bool,byte,int,long,double,string,list,map,absent", NULL);
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("magic"), cf_value_int32(42));
    cf_value_map_put(m, cf_value_string("bool"), cf_value_bool(true));
    cf_value_map_put(m, cf_value_string("byte"), cf_value_int8(42));
    cf_value_map_put(m, cf_value_string("int"), cf_value_int32(42));
    cf_value_map_put(m, cf_value_string("long"), cf_value_int64(42));
    cf_value_map_put(m, cf_value_string("double"), cf_value_float64(42));
    cf_value_map_put(m, cf_value_string("string"), cf_value_string("55.121.20.20"));
    cf_value *l = cf_value_array();
    cf_value_array_push(l, cf_value_int32(42));
    cf_value_map_put(m, cf_value_string("list"), l);
    cf_value_map_put(m, cf_value_string("map"), map1("key", cf_value_string("value")));
    cf_record *out = run(t, value_rec(NULL, m));
    const cf_value *o = out->value;
    assert_int_equal(cf_value_map_get_str(o, "magic")->u.i, 42);
    assert_false(cf_value_map_get_str(o, "bool")->u.b);
    assert_int_equal(cf_value_map_get_str(o, "byte")->type, CF_INT8);
    assert_int_equal(cf_value_map_get_str(o, "int")->u.i, 0);
    assert_true(cf_value_map_get_str(o, "double")->u.f == 0);
    assert_string_equal(cf_value_map_get_str(o, "string")->u.s.ptr, "");
    assert_int_equal(cf_value_map_get_str(o, "list")->u.arr.len, 0);
    assert_int_equal(cf_value_map_get_str(o, "map")->u.map.len, 0);
    assert_int_equal(o->u.map.len, 10); /* HashMap.put("absent", null) */
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void mf_replacements(void **st) {
    (void)st; /* testWithSchemaAndReplacement, testWithSchemaUnsupportedReplacementType, testReplacementTypeMismatch,
                 testEmptyStringReplacementValue */
    static const struct {
        const char *field, *repl;
        const char *want; /* NULL: an error */
    } c[] = {{"short", "123", "123"},    {"byte", "123", "123"},     {"int", "123", "123"},
             {"long", "123", "123"},     {"float", "123.0", "123.0"}, {"double", "123.0", "123.0"},
             {"string", "123", "123"},   {"decimal", "123.0", "123"}, {"time", "123", NULL},
             {"timestamp", "123", NULL}, {"array", "123", NULL},      {"bool", "false", NULL},
             {"byte", "foo", NULL},      {"int", "foo", NULL},        {"double", "foo", NULL},
             {"decimal", "foo", NULL}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cf_transform *t = mk("MaskField$Value", "fields", c[i].field, "replacement", c[i].repl, NULL);
        cf_schema *s = mask_schema();
        cf_record *in = value_rec(s, mask_values(s));
        if (!c[i].want) {
            cf_err err;
            assert_int_equal(run_err(t, in, &err), CF_ERR_SCHEMA);
            assert_true(strstr(err.message, "Cannot mask value of type") || strstr(err.message, "Unable to convert"));
        } else {
            cf_record *out = run(t, in);
            cf_transform *ts = mk("Cast$Value", "spec", "x:string", NULL);
            const cf_value *v = cf_value_struct_get(out->value, c[i].field);
            char *txt = NULL;
            if (strcmp(c[i].field, "decimal") == 0) {
                txt = cf_decimal_to_string((const uint8_t *)v->u.s.ptr, v->u.s.len, 0);
            } else if (v->type == CF_STRING) {
                txt = strdup(v->u.s.ptr);
            } else if (v->type >= CF_FLOAT32) {
                txt = malloc(32);
                snprintf(txt, 32, "%.1f", v->u.f);
            } else {
                txt = malloc(32);
                snprintf(txt, 32, "%lld", (long long)v->u.i);
            }
            assert_string_equal(txt, c[i].want);
            free(txt);
            cf_transform_destroy(ts);
            cf_record_destroy(out);
        }
        cf_transform_destroy(t);
    }
    cf_err err;
    assert_int_equal(mk_err("MaskField$Value", &err, "fields", "short", "replacement", "", NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail[0] ? err.detail : err.message, "String must be non-empty"));
}

/* ------------------------------------------------------------ TimestampRouter */

static void tr_defaultConfiguration(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.TimestampRouter", NULL);
    cf_record *r = value_rec(NULL, NULL);
    r->timestamp = 1483425001864LL;
    r->ts_type = CF_TS_CREATE;
    cf_record *out = run(t, r);
    assert_string_equal(out->topic, "test-20170103");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* ours: the formats, and a record without a timestamp */
    t = mk("TimestampRouter", "topic.format", "${timestamp}_${topic}", "timestamp.format", "yyyy-MM", NULL);
    r = value_rec(NULL, NULL);
    r->timestamp = 1483425001864LL;
    r->ts_type = CF_TS_LOG_APPEND;
    out = run(t, r);
    assert_string_equal(out->topic, "2017-01_test");
    cf_record_destroy(out);
    cf_err err;
    assert_int_equal(run_err(t, value_rec(NULL, NULL), &err), CF_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "Timestamp missing on record"));
    cf_transform_destroy(t);
    assert_int_equal(mk_err("TimestampRouter", &err, "timestamp.format", "yyyyq", NULL), CF_ERR_CONFIG);
}

/* ------------------------------------------------------------ SetSchemaMetadata */

static void ssm_updates(void **st) {
    (void)st; /* schemaNameUpdate, schemaVersionUpdate, schemaNameAndVersionUpdate */
    for (int which = 0; which < 3; which++) {
        cf_transform *t = which == 0   ? mk("SetSchemaMetadata$Value", "schema.name", "foo", NULL)
                          : which == 1 ? mk("SetSchemaMetadata$Value", "schema.version", "42", NULL)
                                       : mk("org.apache.kafka.connect.transforms.SetSchemaMetadata$Value",
                                            "schema.name", "foo", "schema.version", "42", NULL);
        cf_record *out = run(t, value_rec(cf_schema_new_struct(), NULL));
        if (which != 1) assert_string_equal(out->value_schema->name, "foo");
        if (which != 0) {
            assert_true(out->value_schema->has_version);
            assert_int_equal(out->value_schema->version, 42);
        }
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
}

static void ssm_schemaNameAndVersionUpdateWithStruct(void **st) {
    (void)st; /* ...WithStruct and ...WithStructAndNullField */
    for (int replace = 0; replace < 2; replace++) {
        cf_transform *t = mk("SetSchemaMetadata$Value", "schema.name", "foo", "schema.version", "42",
                             "replace.null.with.default", replace ? "true" : "false", NULL);
        cf_schema *s = cf_schema_new_struct();
        cf_schema_set_name(s, "my.orig.SchemaDefn");
        cf_schema *f1 = cf_schema_primitive(CF_STRING, true);
        cf_schema_set_default(f1, cf_value_string("default"), NULL);
        cf_schema_add_field(s, "f1", f1, NULL);
        cf_schema_add_field(s, "f2", cf_schema_primitive(CF_INT32, false), NULL);
        cf_value *v = cf_value_struct(cf_schema_ref(s));
        cf_value_struct_set(v, "f2", cf_value_int32(1), NULL);
        cf_record *out = run(t, value_rec(s, v));
        assert_string_equal(out->value_schema->name, "foo");
        assert_int_equal(out->value_schema->version, 42);
        assert_ptr_equal(out->value->u.st.schema, out->value_schema); /* assertMatchingSchema */
        assert_ptr_equal(out->value_schema->fields[0].schema, s->fields[0].schema);
        if (replace) assert_string_equal(out->value->u.st.fields[0]->u.s.ptr, "default");
        else assert_null(out->value->u.st.fields[0]);
        assert_int_equal(out->value->u.st.fields[1]->u.i, 1);
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
}

static void ssm_requiredAndIgnored(void **st) {
    (void)st; /* valueSchemaRequired, ignoreRecordWithNullValue; ours: the config check */
    cf_transform *t = mk("SetSchemaMetadata$Value", "schema.name", "foo", NULL);
    cf_err err;
    assert_int_equal(run_err(t, value_rec(NULL, cf_value_int32(42)), &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Schema required for [updating schema metadata]");
    cf_record *in = value_rec(NULL, NULL);
    cf_record *out = run(t, in);
    assert_ptr_equal(out, in);
    assert_null(out->value_schema);
    cf_record_destroy(out);
    /* updateSchemaOfNonStruct: a primitive value is kept as it is */
    out = run(t, value_rec(cf_schema_primitive(CF_INT32, false), cf_value_int32(1)));
    assert_int_equal(out->value->u.i, 1);
    assert_string_equal(out->value_schema->name, "foo");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    assert_int_equal(mk_err("SetSchemaMetadata$Value", &err, NULL), CF_ERR_CONFIG);
    assert_string_equal(err.message, "Neither schema name nor version configured");
}

/* ------------------------------------------------------------ predicates */

static cf_transform_chain *chain(cf_err *err, cf_code want, ...) {
    cf_props *p = cf_props_new();
    va_list ap;
    va_start(ap, want);
    const char *k;
    while ((k = va_arg(ap, const char *))) cf_props_set(p, k, va_arg(ap, const char *));
    va_end(ap);
    cf_transform_chain *c = NULL;
    cf_code rc = cf_transform_chain_new(p, &c, err);
    if (rc != want) fprintf(stderr, "%s / %s / %s\n", err->message, err->detail, err->hint);
    assert_int_equal(rc, want);
    cf_props_destroy(p);
    return c;
}

static bool passes(cf_transform_chain *c, cf_record *r) {
    cf_record *out = NULL;
    cf_err err;
    assert_int_equal(cf_transform_chain_apply(c, r, &out, &err), CF_OK);
    bool kept = out != NULL;
    cf_record_destroy(out);
    return kept;
}

static cf_record *topic_rec(const char *topic) {
    cf_record *r = cf_record_new();
    if (topic) cf_record_set_topic(r, topic);
    cf_record_set_value(r, NULL, cf_value_int32(1));
    return r;
}

static void pred_TopicNameMatches_testTest(void **st) {
    (void)st; /* TopicNameMatchesTest.testTest, through Filter (a record passes when the predicate is false) */
    cf_err err;
    cf_transform_chain *c = chain(&err, CF_OK, "transforms", "drop", "transforms.drop.type",
                                  "org.apache.kafka.connect.transforms.Filter", "transforms.drop.predicate", "p",
                                  "predicates", "p", "predicates.p.type",
                                  "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                                  "predicates.p.pattern", "my-prefix-.*", NULL);
    assert_false(passes(c, topic_rec("my-prefix-")));
    assert_false(passes(c, topic_rec("my-prefix-foo")));
    assert_true(passes(c, topic_rec("x-my-prefix-")));
    assert_true(passes(c, topic_rec("x-my-prefix-foo")));
    assert_true(passes(c, topic_rec("your-prefix-")));
    assert_true(passes(c, topic_rec("your-prefix-foo")));
    assert_true(passes(c, topic_rec(NULL)));
    cf_transform_chain_destroy(c);
    /* negate=true: apply where the predicate is false */
    c = chain(&err, CF_OK, "transforms", "drop", "transforms.drop.type", "Filter", "transforms.drop.predicate", "p",
              "transforms.drop.negate", "true", "predicates", "p", "predicates.p.type", "TopicNameMatches",
              "predicates.p.pattern", "my-prefix-.*", NULL);
    assert_true(passes(c, topic_rec("my-prefix-foo")));
    assert_false(passes(c, topic_rec("your-prefix-foo")));
    cf_transform_chain_destroy(c);
}

static void pred_TopicNameMatches_config(void **st) {
    (void)st; /* testPatternRequiredInConfig, testPatternMayNotBeEmptyInConfig, testPatternIsValidRegexInConfig */
    cf_err err;
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "p",
          "predicates", "p", "predicates.p.type", "TopicNameMatches", NULL);
    assert_non_null(strstr(err.message, "missing required configuration \"pattern\""));
    assert_non_null(strstr(err.where, "predicates.p"));
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "p",
          "predicates", "p", "predicates.p.type", "TopicNameMatches", "predicates.p.pattern", "", NULL);
    assert_non_null(strstr(err.detail[0] ? err.detail : err.message, "String must be non-empty"));
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "p",
          "predicates", "p", "predicates.p.type", "TopicNameMatches", "predicates.p.pattern", "[", NULL);
    assert_non_null(strstr(err.message, "Invalid regex"));
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "p",
          "predicates", "p", "predicates.p.type", "TopicNameMatches", "predicates.p.pattern", "*", NULL);
    assert_non_null(strstr(err.message, "Invalid regex"));
}

static cf_record *headers_rec(const char *const *names, size_t n) {
    cf_record *r = topic_rec("t");
    for (size_t i = 0; i < n; i++) cf_record_add_header(r, names[i], NULL, NULL);
    return r;
}

static void pred_HasHeaderKey(void **st) {
    (void)st; /* HasHeaderKeyTest.testTest, testNameRequiredInConfig, testNameMayNotBeEmptyInConfig */
    cf_err err;
    cf_transform_chain *c = chain(&err, CF_OK, "transforms", "f", "transforms.f.type", "Filter",
                                  "transforms.f.predicate", "h", "predicates", "h", "predicates.h.type",
                                  "org.apache.kafka.connect.transforms.predicates.HasHeaderKey", "predicates.h.name",
                                  "foo", NULL);
    const char *a[] = {"foo"}, *b[] = {"foo", "bar"}, *d[] = {"bar", "foo", "bar", "foo"}, *e[] = {"bar"},
               *f[] = {"bar", "bar"};
    assert_false(passes(c, headers_rec(a, 1)));
    assert_false(passes(c, headers_rec(b, 2)));
    assert_false(passes(c, headers_rec(d, 4)));
    assert_true(passes(c, headers_rec(e, 1)));
    assert_true(passes(c, headers_rec(f, 2)));
    assert_true(passes(c, headers_rec(NULL, 0)));
    cf_transform_chain_destroy(c);
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "h",
          "predicates", "h", "predicates.h.type", "HasHeaderKey", NULL);
    assert_non_null(strstr(err.message, "missing required configuration \"name\""));
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "h",
          "predicates", "h", "predicates.h.type", "HasHeaderKey", "predicates.h.name", "", NULL);
    assert_non_null(strstr(err.detail[0] ? err.detail : err.message,
                           "Invalid value  for configuration name: String must be non-empty"));
}

static void pred_RecordIsTombstone_andChainRules(void **st) {
    (void)st; /* ours: RecordIsTombstone (value == null), and ConnectorConfig's rules for predicate/negate */
    cf_err err;
    cf_transform_chain *c = chain(&err, CF_OK, "transforms", "dropTombstones,route", "transforms.dropTombstones.type",
                                  "org.apache.kafka.connect.transforms.Filter", "transforms.dropTombstones.predicate",
                                  "isTombstone", "transforms.route.type", "RegexRouter", "transforms.route.regex",
                                  "(.*)", "transforms.route.replacement", "x_$1", "transforms.route.predicate",
                                  "isTombstone", "transforms.route.negate", "true", "predicates", "isTombstone",
                                  "predicates.isTombstone.type",
                                  "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone", NULL);
    cf_record *r = topic_rec("t");
    cf_record *out = NULL;
    assert_int_equal(cf_transform_chain_apply(c, r, &out, &err), CF_OK);
    assert_string_equal(out->topic, "x_t");
    cf_record_destroy(out);
    r = topic_rec("t");
    cf_record_set_value(r, NULL, NULL);
    assert_int_equal(cf_transform_chain_apply(c, r, &out, &err), CF_OK);
    assert_null(out);
    cf_transform_chain_destroy(c);
    /* negate without predicate; a predicate not listed; an unknown predicate class suggests the closest */
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.negate", "true", NULL);
    assert_non_null(strstr(err.message, "Config 'transforms.f.negate' was provided but there is no config "
                                        "'transforms.f.predicate' defining a predicate to be negated."));
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "p", NULL);
    assert_non_null(strstr(err.message, "\"p\" is not a predicate of this connector"));
    chain(&err, CF_ERR_NOT_FOUND, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "p",
          "predicates", "p", "predicates.p.type", "org.apache.kafka.connect.transforms.predicates.RecordIsTombstón",
          NULL);
    assert_non_null(strstr(err.hint, "Did you mean org.apache.kafka.connect.transforms.predicates.RecordIsTombstone?"));
    chain(&err, CF_ERR_CONFIG, "transforms", "f", "transforms.f.type", "Filter", "transforms.f.predicate", "p",
          "transforms.f.negate", "maybe", "predicates", "p", "predicates.p.type", "RecordIsTombstone", NULL);
}

static void didYouMean(void **st) {
    (void)st; /* ours: unknown transform class names suggest the closest known one */
    cf_err err;
    chain(&err, CF_ERR_NOT_FOUND, "transforms", "k", "transforms.k.type", "org.apache.kafka.connect.transforms.ValueToKeys",
          "transforms.k.fields", "id", NULL);
    assert_non_null(strstr(err.hint, "Did you mean org.apache.kafka.connect.transforms.ValueToKey?"));
    chain(&err, CF_ERR_NOT_FOUND, "transforms", "k", "transforms.k.type", "org.apache.kafka.connect.transform.InsertField$Value",
          NULL);
    assert_non_null(strstr(err.hint, "Did you mean org.apache.kafka.connect.transforms.InsertField$Value?"));
    chain(&err, CF_ERR_NOT_FOUND, "transforms", "k", "transforms.k.type", "com.example.SomethingElse", NULL);
    assert_null(strstr(err.hint, "Did you mean"));
    /* every predicate plugin: a class name, a table that passes the self-check */
    for (const cf_predicate_plugin *const *pl = cf_predicate_plugins(); *pl; pl++) {
        assert_ptr_equal(cf_predicate_find((*pl)->aliases[0]), *pl);
        assert_int_equal(cf_cfg_table_check((*pl)->config, NULL), CF_OK);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vtk_schemaless),
        cmocka_unit_test(vtk_withSchema),
        cmocka_unit_test(vtk_nonExistingField),
        cmocka_unit_test(vtk_testReplaceNullWithDefaultConfig),
        cmocka_unit_test(if_topLevelStructRequired),
        cmocka_unit_test(if_copySchemaAndInsertConfiguredFields),
        cmocka_unit_test(if_schemalessInsertConfiguredFields),
        cmocka_unit_test(if_tombstonesAndNullKeys),
        cmocka_unit_test(if_testUnsetOptionalField),
        cmocka_unit_test(if_configErrors),
        cmocka_unit_test(cast_testConfigs),
        cmocka_unit_test(cast_nullRecords),
        cmocka_unit_test(cast_castFieldWithDefaultValueRecordWithSchema),
        cmocka_unit_test(cast_wholeRecordValue),
        cmocka_unit_test(cast_castWholeBigDecimalAndDateToString),
        cmocka_unit_test(cast_castWholeRecordDefaultValue),
        cmocka_unit_test(cast_castWholeRecordValueSchemalessUnsupportedType),
        cmocka_unit_test(cast_castLogicalToPrimitive),
        cmocka_unit_test(cast_castLogicalToString),
        cmocka_unit_test(cast_castFieldsWithSchema),
        cmocka_unit_test(cast_castFieldsSchemaless),
        cmocka_unit_test(cast_javaConversions),
        cmocka_unit_test(filter_dropsEverything),
        cmocka_unit_test(ef_schemaless),
        cmocka_unit_test(ef_schemalessAndNestedPath),
        cmocka_unit_test(ef_withSchema),
        cmocka_unit_test(ef_withSchemaAndNestedPath),
        cmocka_unit_test(ef_testUnsetOptional),
        cmocka_unit_test(hf_schemaless),
        cmocka_unit_test(hf_withSchema),
        cmocka_unit_test(fl_topLevelRequired),
        cmocka_unit_test(fl_testNestedStruct),
        cmocka_unit_test(fl_testNestedMapWithDelimiter),
        cmocka_unit_test(fl_testOptionalStructs),
        cmocka_unit_test(fl_testArrayWithSchema),
        cmocka_unit_test(fl_testOptionalAndDefaultValuesNested),
        cmocka_unit_test(fl_tombstonesAndErrors),
        cmocka_unit_test(mf_testWithSchema),
        cmocka_unit_test(mf_testSchemaless),
        cmocka_unit_test(mf_replacements),
        cmocka_unit_test(tr_defaultConfiguration),
        cmocka_unit_test(ssm_updates),
        cmocka_unit_test(ssm_schemaNameAndVersionUpdateWithStruct),
        cmocka_unit_test(ssm_requiredAndIgnored),
        cmocka_unit_test(pred_TopicNameMatches_testTest),
        cmocka_unit_test(pred_TopicNameMatches_config),
        cmocka_unit_test(pred_HasHeaderKey),
        cmocka_unit_test(pred_RecordIsTombstone_andChainRules),
        cmocka_unit_test(didYouMean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
