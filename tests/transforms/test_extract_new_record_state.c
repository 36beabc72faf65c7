/*
 * test_extract_new_record_state.c - io.debezium.transforms.ExtractNewRecordState.
 *
 * Cases and names from Debezium's NewExtractNewRecordStateTest (current
 * delete.tombstone.handling.mode) and LegacyExtractNewRecordStateTest
 * (delete.handling.mode / drop.tombstones), with records built like
 * AbstractExtractStateTest builds them (dummy.Envelope, row {id int8, name
 * string}, source {lsn int32, ts_ms, db, table}, transaction {id,
 * total_order, data_collection_order}). The end-to-end cases decode the
 * Debezium Postgres events of ../shared/specs/bigquery-cdc.md section 3 with
 * the JsonConverter, flatten them and compare the JSON the converter writes
 * with the flattened value schema and payloads given there, and the create
 * event example of Debezium's postgresql.adoc (data/debezium_postgresql_create.json).
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
#include "cdcflow/record.h"
#include "cdcflow/schema.h"
#include "cdcflow/transforms.h"

/* ------------------------------------------------------------ fixtures */

typedef struct fx {
    cf_schema *row, *source, *txn, *env;
} fx;

static fx make_fx(void) {
    fx f;
    f.row = cf_schema_new_struct();
    cf_schema *id = cf_schema_primitive(CF_INT8, false);
    cf_schema_set_param(id, "__debezium.source.column.name", "id");
    cf_schema_add_field(f.row, "id", id, NULL);
    cf_schema_add_field(f.row, "name", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema_set_optional(f.row, true);
    f.source = cf_schema_new_struct();
    cf_schema_add_field(f.source, "lsn", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(f.source, "ts_ms", cf_schema_primitive(CF_INT64, true), NULL);
    cf_schema_add_field(f.source, "db", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema_add_field(f.source, "table", cf_schema_primitive(CF_STRING, true), NULL);
    f.txn = cf_schema_new_struct();
    cf_schema_set_name(f.txn, "event.block");
    cf_schema_add_field(f.txn, "id", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(f.txn, "total_order", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(f.txn, "data_collection_order", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_set_optional(f.txn, true);
    f.env = cf_schema_new_struct();
    cf_schema_set_name(f.env, "dummy.Envelope");
    cf_schema_add_field(f.env, "before", cf_schema_ref(f.row), NULL);
    cf_schema_add_field(f.env, "after", cf_schema_ref(f.row), NULL);
    cf_schema_add_field(f.env, "source", cf_schema_ref(f.source), NULL);
    cf_schema_add_field(f.env, "transaction", cf_schema_ref(f.txn), NULL);
    cf_schema_add_field(f.env, "op", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(f.env, "ts_ms", cf_schema_primitive(CF_INT64, true), NULL);
    return f;
}

static void free_fx(fx *f) {
    cf_schema_unref(f->row), cf_schema_unref(f->source), cf_schema_unref(f->txn), cf_schema_unref(f->env);
}

static cf_value *row(fx *f, int id, const char *name) {
    cf_value *r = cf_value_struct(cf_schema_ref(f->row));
    cf_value_struct_set(r, "id", cf_value_int8((int8_t)id), NULL);
    if (name) cf_value_struct_set(r, "name", cf_value_string(name), NULL);
    return r;
}

static cf_record *event(fx *f, const char *op, cf_value *before, cf_value *after, bool with_txn) {
    cf_value *src = cf_value_struct(cf_schema_ref(f->source));
    cf_value_struct_set(src, "lsn", cf_value_int32(1234), NULL);
    cf_value_struct_set(src, "ts_ms", cf_value_int64(1559033904863LL), NULL);
    cf_value_struct_set(src, "db", cf_value_string("test_db"), NULL);
    cf_value_struct_set(src, "table", cf_value_string("test_table"), NULL);
    cf_value *e = cf_value_struct(cf_schema_ref(f->env));
    cf_value_struct_set(e, "before", before, NULL);
    cf_value_struct_set(e, "after", after, NULL);
    cf_value_struct_set(e, "source", src, NULL);
    if (with_txn) {
        cf_value *t = cf_value_struct(cf_schema_ref(f->txn));
        cf_value_struct_set(t, "id", cf_value_string("571"), NULL);
        cf_value_struct_set(t, "total_order", cf_value_int64(42), NULL);
        cf_value_struct_set(t, "data_collection_order", cf_value_int64(42), NULL);
        cf_value_struct_set(e, "transaction", t, NULL);
    }
    cf_value_struct_set(e, "op", cf_value_string(op), NULL);
    cf_value_struct_set(e, "ts_ms", cf_value_int64(1559033904999LL), NULL);
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "dummy");
    cf_record_set_value(r, cf_schema_ref(f->env), e);
    return r;
}

static cf_record *create_rec(fx *f) { return event(f, "c", NULL, row(f, 1, "myRecord"), false); }
static cf_record *update_rec(fx *f) { return event(f, "u", row(f, 1, "myRecord"), row(f, 1, "updatedRecord"), true); }
static cf_record *delete_rec(fx *f) { return event(f, "d", row(f, 1, "myRecord"), NULL, false); }
static cf_record *truncate_rec(fx *f) { return event(f, "t", NULL, NULL, false); }
static cf_record *tombstone_rec(void) {
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "dummy");
    return r;
}

static cf_transform *xf(const char *first_key, ...) {
    cf_props *p = cf_props_new();
    va_list ap;
    va_start(ap, first_key);
    for (const char *k = first_key; k; k = va_arg(ap, const char *)) cf_props_set(p, k, va_arg(ap, const char *));
    va_end(ap);
    cf_transform *t = NULL;
    cf_err err;
    cf_code rc = cf_transform_new("io.debezium.transforms.ExtractNewRecordState", p, &t, &err);
    if (rc) fprintf(stderr, "%s / %s\n", err.message, err.detail);
    assert_int_equal(rc, CF_OK);
    cf_props_destroy(p);
    return t;
}

static cf_record *run(cf_transform *t, cf_record *in) {
    cf_record *out = NULL;
    cf_err err;
    cf_code rc = cf_transform_apply(t, in, &out, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, CF_OK);
    return out;
}

static const char *str_field(const cf_record *r, const char *f) {
    const cf_value *v = cf_value_struct_get(r->value, f);
    return v && v->type == CF_STRING ? v->u.s.ptr : NULL;
}

static const char *header_str(const cf_record *r, const char *k) {
    const cf_header *h = cf_record_header_last(r, k);
    if (!h || !h->value) return NULL;
    static char buf[64];
    if (h->value->type == CF_STRING) return h->value->u.s.ptr;
    snprintf(buf, sizeof buf, "%lld", (long long)h->value->u.i);
    return buf;
}

/* ------------------------------------------------------------ New* tests */

static void testTombstoneDroppedByDefault(void **st) {
    (void)st;
    cf_transform *t = xf("delete.tombstone.handling.mode", "drop", NULL);
    assert_null(run(t, tombstone_rec()));
    cf_transform_destroy(t);
    t = xf(NULL, NULL); /* no option at all: tombstone mode, tombstones dropped */
    assert_null(run(t, tombstone_rec()));
    cf_transform_destroy(t);
}

static void testTombstoneForwardConfigured(void **st) {
    (void)st;
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", NULL);
    assert_null(run(t, tombstone_rec()));
    cf_transform_destroy(t);
}

static void testTombstoneRewriteWithTombstone(void **st) {
    (void)st;
    cf_transform *t = xf("delete.tombstone.handling.mode", "rewrite-with-tombstone", NULL);
    cf_record *in = tombstone_rec();
    cf_record *out = run(t, in);
    assert_ptr_equal(out, in);
    assert_null(out->value);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void testTruncateDroppedByDefault(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", NULL);
    assert_null(run(t, truncate_rec(&f)));
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testHandleDeleteDrop(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "drop", NULL);
    assert_null(run(t, delete_rec(&f)));
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testHandleDeleteNone(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", NULL);
    cf_record *out = run(t, delete_rec(&f));
    assert_non_null(out);
    assert_null(out->value);
    assert_true(cf_schema_equal(out->value_schema, f.row)); /* the row schema is kept */
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testHandleDeleteToTombstone(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "delete-to-tombstone", NULL);
    cf_record *out = run(t, delete_rec(&f));
    assert_non_null(out);
    assert_null(out->value);
    assert_null(out->value_schema);
    cf_record_destroy(out);
    assert_null(run(t, tombstone_rec()));
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testHandleDeleteRewrite(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "rewrite", NULL);
    cf_record *out = run(t, delete_rec(&f));
    assert_string_equal(str_field(out, "__deleted"), "true");
    assert_string_equal(str_field(out, "name"), "myRecord");
    /* __deleted is the last field, an optional string; the struct is required */
    const cf_schema *s = out->value_schema;
    assert_int_equal(s->n_fields, 3);
    assert_string_equal(s->fields[2].name, "__deleted");
    assert_int_equal(s->fields[2].schema->type, CF_STRING);
    assert_true(s->fields[2].schema->optional);
    assert_false(s->optional);
    assert_string_equal(cf_schema_param(s->fields[0].schema, "__debezium.source.column.name"), "id");
    cf_record_destroy(out);
    assert_null(run(t, tombstone_rec()));
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testHandleCreateRewrite(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "rewrite", "add.headers", "op", NULL);
    cf_record *out = run(t, create_rec(&f));
    assert_string_equal(str_field(out, "__deleted"), "false");
    assert_int_equal(out->n_headers, 1);
    assert_string_equal(header_str(out, "__op"), "c");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testUnwrapCreateRecord(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", NULL);
    cf_record *out = run(t, create_rec(&f));
    assert_int_equal(cf_value_struct_get(out->value, "id")->u.i, 1);
    assert_string_equal(str_field(out, "name"), "myRecord");
    assert_ptr_equal(out->value_schema, cf_schema_field(f.env, "after")->schema);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testUnwrapCreateRecordWithOptionalDefaultValue(void **st) {
    (void)st;
    /* name optional with default "default_str", value null: stays null */
    cf_schema *rs = cf_schema_new_struct();
    cf_schema_add_field(rs, "id", cf_schema_primitive(CF_INT8, false), NULL);
    cf_schema *ns = cf_schema_primitive(CF_STRING, true);
    cf_schema_set_default(ns, cf_value_string("default_str"), NULL);
    cf_schema_add_field(rs, "name", ns, NULL);
    cf_schema_set_optional(rs, true);
    cf_schema *env = cf_schema_new_struct();
    cf_schema_set_name(env, "dummy.Envelope");
    cf_schema_add_field(env, "before", cf_schema_ref(rs), NULL);
    cf_schema_add_field(env, "after", cf_schema_ref(rs), NULL);
    cf_schema_add_field(env, "op", cf_schema_primitive(CF_STRING, false), NULL);
    cf_value *after = cf_value_struct(cf_schema_ref(rs));
    cf_value_struct_set(after, "id", cf_value_int8(1), NULL);
    cf_value *e = cf_value_struct(cf_schema_ref(env));
    cf_value_struct_set(e, "after", after, NULL);
    cf_value_struct_set(e, "op", cf_value_string("c"), NULL);
    cf_record *r = cf_record_new();
    cf_record_set_value(r, cf_schema_ref(env), cf_value_clone(e));
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", NULL);
    cf_record *out = run(t, r);
    assert_null(cf_value_struct_get(out->value, "name"));
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* rewrite mode: InsertField with replace.null.with.default=true takes the default */
    t = xf("delete.tombstone.handling.mode", "rewrite", NULL);
    r = cf_record_new();
    cf_record_set_value(r, cf_schema_ref(env), cf_value_clone(e));
    out = run(t, r);
    assert_string_equal(str_field(out, "name"), "default_str");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = xf("delete.tombstone.handling.mode", "rewrite", "replace.null.with.default", "false", NULL);
    r = cf_record_new();
    cf_record_set_value(r, cf_schema_ref(env), cf_value_clone(e));
    out = run(t, r);
    assert_null(str_field(out, "name"));
    cf_record_destroy(out);
    cf_transform_destroy(t);
    cf_value_destroy(e);
    cf_schema_unref(env);
    cf_schema_unref(rs);
}

static void testIgnoreUnknownRecord(void **st) {
    (void)st;
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "add.headers", "op", NULL);
    /* named "unknown" and unnamed struct values, and a heartbeat: unchanged */
    const char *names[] = {"unknown", NULL, "io.debezium.connector.common.Heartbeat"};
    for (int i = 0; i < 3; i++) {
        cf_schema *s = cf_schema_new_struct();
        if (names[i]) cf_schema_set_name(s, names[i]);
        cf_schema_add_field(s, "id", cf_schema_primitive(CF_INT8, false), NULL);
        cf_value *v = cf_value_struct(cf_schema_ref(s));
        cf_value_struct_set(v, "id", cf_value_int8(1), NULL);
        cf_record *r = cf_record_new();
        cf_record_set_value(r, s, v);
        cf_record *copy = cf_record_clone(r);
        cf_record *out = run(t, r);
        assert_ptr_equal(out, r);
        assert_true(cf_value_equal(out->value, copy->value));
        assert_int_equal(out->n_headers, 0);
        cf_record_destroy(out);
        cf_record_destroy(copy);
    }
    /* schemaless values pass too */
    cf_record *r = cf_record_new();
    cf_record_set_value(r, NULL, cf_value_map());
    assert_ptr_equal(run(t, r), r);
    cf_record_destroy(r);
    cf_transform_destroy(t);
}

static void testUnwrapPropagatesRecordHeaders(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", NULL);
    cf_record *r = create_rec(&f);
    cf_record_add_header(r, "application/debezium-test-header", cf_schema_primitive(CF_STRING, false),
                         cf_value_string("shouldPropagatePreviousRecordHeaders"));
    cf_record *out = run(t, r);
    assert_int_equal(out->n_headers, 1);
    assert_string_equal(header_str(out, "application/debezium-test-header"), "shouldPropagatePreviousRecordHeaders");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddField(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "add.fields", "op", NULL);
    cf_record *out = run(t, create_rec(&f));
    assert_string_equal(str_field(out, "__op"), "c");
    const cf_field *of = cf_schema_field(out->value_schema, "__op");
    assert_true(of->schema->optional); /* the source field schema made optional */
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddTimestamp(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "add.fields", "ts_ms", NULL);
    cf_record *out = run(t, create_rec(&f));
    assert_int_equal(cf_value_struct_get(out->value, "__ts_ms")->u.i, 1559033904999LL);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = xf("add.fields", "source.ts_ms", NULL);
    out = run(t, create_rec(&f));
    assert_int_equal(cf_value_struct_get(out->value, "__source_ts_ms")->u.i, 1559033904863LL);
    assert_int_equal(cf_schema_field(out->value_schema, "__source_ts_ms")->schema->type, CF_INT64);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddFields(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "add.fields", "op , lsn,id", "add.fields.prefix",
                         "prefix.", NULL);
    cf_record *out = run(t, update_rec(&f));
    assert_string_equal(str_field(out, "prefix.op"), "u");
    assert_int_equal(cf_value_struct_get(out->value, "prefix.lsn")->u.i, 1234);
    assert_string_equal(str_field(out, "prefix.id"), "571");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testNewFieldAndHeaderMapping(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "add.fields",
                         "op:OP, lsn:LSN, id:ID, source.lsn:source_lsn, transaction.total_order:TOTAL_ORDER",
                         "add.fields.prefix", "", "add.headers",
                         "op, source.lsn:source_lsn, transaction.id:TXN_ID, transaction.total_order:TOTAL_ORDER",
                         "add.headers.prefix", "prefix.", NULL);
    cf_record *out = run(t, update_rec(&f));
    assert_string_equal(str_field(out, "OP"), "u");
    assert_int_equal(cf_value_struct_get(out->value, "LSN")->u.i, 1234);
    assert_string_equal(str_field(out, "ID"), "571");
    assert_int_equal(cf_value_struct_get(out->value, "source_lsn")->u.i, 1234);
    assert_int_equal(cf_value_struct_get(out->value, "TOTAL_ORDER")->u.i, 42);
    assert_int_equal(out->n_headers, 4);
    assert_string_equal(header_str(out, "prefix.op"), "u");
    assert_string_equal(header_str(out, "prefix.source_lsn"), "1234");
    assert_string_equal(header_str(out, "prefix.TXN_ID"), "571");
    assert_string_equal(header_str(out, "prefix.TOTAL_ORDER"), "42");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddFieldsForMissingOptionalField(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "add.fields", "op,lsn,id", NULL);
    cf_record *out = run(t, create_rec(&f)); /* no transaction block */
    assert_string_equal(str_field(out, "__op"), "c");
    assert_int_equal(cf_value_struct_get(out->value, "__lsn")->u.i, 1234);
    assert_non_null(cf_schema_field(out->value_schema, "__id"));
    assert_null(cf_value_struct_get(out->value, "__id"));
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddFieldsSpecifyStruct(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "add.fields",
                         "op,source.lsn,transaction.id,transaction.total_order", NULL);
    cf_record *out = run(t, update_rec(&f));
    assert_string_equal(str_field(out, "__op"), "u");
    assert_int_equal(cf_value_struct_get(out->value, "__source_lsn")->u.i, 1234);
    assert_string_equal(str_field(out, "__transaction_id"), "571");
    assert_int_equal(cf_value_struct_get(out->value, "__transaction_total_order")->u.i, 42);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddHeaders(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "add.headers", "op , lsn,id", NULL);
    cf_record *out = run(t, update_rec(&f));
    assert_int_equal(out->n_headers, 3);
    assert_string_equal(header_str(out, "__op"), "u");
    assert_string_equal(header_str(out, "__lsn"), "1234");
    assert_string_equal(header_str(out, "__id"), "571");
    cf_record_destroy(out);
    out = run(t, create_rec(&f)); /* testAddHeadersForMissingOptionalField */
    assert_int_equal(out->n_headers, 3);
    assert_null(header_str(out, "__id"));
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddTopicRoutingField(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "tombstone", "route.by.field", "name", NULL);
    cf_record *out = run(t, create_rec(&f));
    assert_string_equal(out->topic, "myRecord");
    cf_record_destroy(out);
    out = run(t, update_rec(&f)); /* testUpdateTopicRoutingField */
    assert_string_equal(out->topic, "updatedRecord");
    cf_record_destroy(out);
    out = run(t, delete_rec(&f)); /* testDeleteTopicRoutingField: from before */
    assert_string_equal(out->topic, "myRecord");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddHeadersHandleDeleteRewriteAndTombstone(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "rewrite-with-tombstone", "add.headers", "op,source.lsn", NULL);
    cf_record *out = run(t, delete_rec(&f));
    assert_string_equal(str_field(out, "__deleted"), "true");
    assert_string_equal(header_str(out, "__op"), "d");
    assert_string_equal(header_str(out, "__source_lsn"), "1234");
    cf_record_destroy(out);
    out = run(t, tombstone_rec());
    assert_non_null(out);
    assert_null(out->value);
    assert_string_equal(header_str(out, "__op"), "d");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testAddFieldsHandleDeleteRewrite(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "rewrite", "add.fields", "op,lsn", NULL);
    cf_record *out = run(t, delete_rec(&f));
    assert_string_equal(str_field(out, "__deleted"), "true");
    assert_string_equal(str_field(out, "__op"), "d");
    assert_int_equal(cf_value_struct_get(out->value, "__lsn")->u.i, 1234);
    /* added fields come before __deleted, which stays last */
    const cf_schema *s = out->value_schema;
    assert_string_equal(s->fields[s->n_fields - 1].name, "__deleted");
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void testSchemaCacheReusesSchemas(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "rewrite", "add.fields", "op", NULL);
    cf_record *a = run(t, create_rec(&f)), *b = run(t, update_rec(&f));
    assert_ptr_equal(a->value_schema, b->value_schema); /* same row schema -> same output schema */
    cf_record_destroy(a);
    cf_record_destroy(b);
    cf_transform_destroy(t);
    free_fx(&f);
}

static void dropFieldsFromValueWithSchemaCompatibility(void **st) {
    (void)st;
    fx f = make_fx();
    cf_transform *t = xf("delete.tombstone.handling.mode", "drop", "drop.fields.header.name", "drop-fields", NULL);
    cf_record *r = create_rec(&f);
    cf_value *names = cf_value_array();
    cf_value_array_push(names, cf_value_string("id"));
    cf_value_array_push(names, cf_value_string("name"));
    cf_record_add_header(r, "drop-fields", cf_schema_new_array(cf_schema_primitive(CF_STRING, false)), names);
    cf_record *out = run(t, r);
    /* id is required: kept; name is optional: dropped */
    assert_non_null(cf_schema_field(out->value_schema, "id"));
    assert_null(cf_schema_field(out->value_schema, "name"));
    assert_int_equal(cf_value_struct_get(out->value, "id")->u.i, 1);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    free_fx(&f);
}

/* ------------------------------------------------------------ Legacy* tests */

static void legacyTombstoneAndDeleteModes(void **st) {
    (void)st;
    fx f = make_fx();
    /* drop.tombstones default true, delete.handling.mode default drop */
    cf_transform *t = xf("drop.tombstones", "true", NULL);
    assert_null(run(t, tombstone_rec()));
    assert_null(run(t, delete_rec(&f)));
    cf_transform_destroy(t);
    t = xf("drop.tombstones", "false", NULL); /* testTombstoneForwardConfigured (legacy) */
    cf_record *in = tombstone_rec();
    assert_ptr_equal(run(t, in), in);
    cf_record_destroy(in);
    cf_transform_destroy(t);
    t = xf("delete.handling.mode", "none", NULL); /* testHandleDeleteNone */
    cf_record *out = run(t, delete_rec(&f));
    assert_null(out->value);
    assert_non_null(out->value_schema);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = xf("delete.handling.mode", "rewrite", NULL); /* testHandleDeleteRewrite, testHandleCreateRewrite */
    out = run(t, delete_rec(&f));
    assert_string_equal(str_field(out, "__deleted"), "true");
    cf_record_destroy(out);
    out = run(t, create_rec(&f));
    assert_string_equal(str_field(out, "__deleted"), "false");
    cf_record_destroy(out);
    assert_null(run(t, tombstone_rec())); /* drop.tombstones default true */
    cf_transform_destroy(t);
    /* the current option wins over the legacy ones */
    t = xf("delete.handling.mode", "rewrite", "delete.tombstone.handling.mode", "drop", NULL);
    assert_null(run(t, delete_rec(&f)));
    cf_transform_destroy(t);
    free_fx(&f);
}

static void configErrors(void **st) {
    (void)st;
    cf_props *p = cf_props_new();
    cf_props_set(p, "delete.tombstone.handling.mode", "rewrite-all");
    cf_transform *t = NULL;
    cf_err err;
    assert_int_equal(cf_transform_new("io.debezium.transforms.ExtractNewRecordState", p, &t, &err), CF_ERR_CONFIG);
    assert_null(t);
    cf_props_set(p, "delete.tombstone.handling.mode", "rewrite");
    cf_props_set(p, "add.fields", "a:b:c");
    assert_int_equal(cf_transform_new("io.debezium.transforms.ExtractNewRecordState", p, &t, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "Unexpected field name"));
    cf_props_destroy(p);
}

/* ------------------------------------------------------------ end to end */

#define ROW_FIELDS                                                                                                     \
    "[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"},{\"type\":\"string\",\"optional\":false,\"field\":"  \
    "\"email\"},{\"type\":\"string\",\"optional\":true,\"field\":\"name\"}]"

static char *pg_event(const char *before, const char *after, const char *op) {
    char *buf = malloc(8192);
    snprintf(buf, 8192,
             "{\"schema\":{\"type\":\"struct\",\"fields\":["
             "{\"type\":\"struct\",\"fields\":" ROW_FIELDS ",\"optional\":true,\"name\":\"dbserver1.public.customers.Value\",\"field\":\"before\"},"
             "{\"type\":\"struct\",\"fields\":" ROW_FIELDS ",\"optional\":true,\"name\":\"dbserver1.public.customers.Value\",\"field\":\"after\"},"
             "{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,\"field\":\"version\"},"
             "{\"type\":\"string\",\"optional\":false,\"field\":\"connector\"},{\"type\":\"string\",\"optional\":false,\"field\":\"name\"},"
             "{\"type\":\"int64\",\"optional\":false,\"field\":\"ts_ms\"},{\"type\":\"string\",\"optional\":false,\"field\":\"db\"},"
             "{\"type\":\"string\",\"optional\":true,\"field\":\"sequence\"},{\"type\":\"string\",\"optional\":false,\"field\":\"schema\"},"
             "{\"type\":\"string\",\"optional\":false,\"field\":\"table\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"txId\"},"
             "{\"type\":\"int64\",\"optional\":true,\"field\":\"lsn\"}],"
             "\"optional\":false,\"name\":\"io.debezium.connector.postgresql.Source\",\"field\":\"source\"},"
             "{\"type\":\"string\",\"optional\":false,\"field\":\"op\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_ms\"}],"
             "\"optional\":false,\"name\":\"dbserver1.public.customers.Envelope\",\"version\":1},"
             "\"payload\":{\"before\":%s,\"after\":%s,\"source\":{\"version\":\"2.7.0.Final\",\"connector\":\"postgresql\","
             "\"name\":\"dbserver1\",\"ts_ms\":1559033904863,\"db\":\"postgres\",\"sequence\":\"[\\\"24023119\\\",\\\"24023128\\\"]\","
             "\"schema\":\"public\",\"table\":\"customers\",\"txId\":556,\"lsn\":24023128},\"op\":\"%s\",\"ts_ms\":1559033904999}}",
             before, after, op);
    return buf;
}

static const char *FLAT_SCHEMA =
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"},{\"type\":\"string\","
    "\"optional\":false,\"field\":\"email\"},{\"type\":\"string\",\"optional\":true,\"field\":\"name\"},{\"type\":"
    "\"string\",\"optional\":true,\"field\":\"__deleted\"}],\"optional\":false,\"name\":\"dbserver1.public.customers.Value\"}";

/* decode -> chain -> encode; returns the JSON (malloc'd) or NULL if dropped */
static char *pipeline(cf_converter *c, cf_transform_chain *chain, const char *json) {
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "dbserver1.public.customers");
    cf_schema *s = NULL;
    cf_value *v = NULL;
    cf_err err;
    assert_int_equal(cf_converter_to_connect(c, r->topic, json, json ? strlen(json) : 0, &s, &v, &err), CF_OK);
    cf_record_set_value(r, s, v);
    cf_record *out = NULL;
    cf_code rc = cf_transform_chain_apply(chain, r, &out, &err);
    if (rc) fprintf(stderr, "%s (%s)\n", err.message, err.where);
    assert_int_equal(rc, CF_OK);
    if (!out) return NULL;
    char *data = NULL;
    size_t len;
    assert_int_equal(cf_converter_from_connect(c, out->topic, out->value_schema, out->value, &data, &len, &err), CF_OK);
    cf_record_destroy(out);
    return data ? data : strdup("<null bytes>");
}

static void specPostgresEventsRewrite(void **st) {
    (void)st;
    cf_converter *c = NULL;
    assert_int_equal(cf_converter_new("json", NULL, false, &c, NULL), CF_OK);
    cf_props *cc = cf_props_new();
    cf_props_set(cc, "transforms", "unwrap");
    cf_props_set(cc, "transforms.unwrap.type", "io.debezium.transforms.ExtractNewRecordState");
    cf_props_set(cc, "transforms.unwrap.delete.tombstone.handling.mode", "rewrite");
    cf_transform_chain *chain = NULL;
    cf_err err;
    assert_int_equal(cf_transform_chain_new(cc, &chain, &err), CF_OK);
    assert_int_equal(cf_transform_chain_len(chain), 1);
    char want[2048];

    /* V1: create */
    char *ev = pg_event("null", "{\"id\":1,\"email\":\"a@x\",\"name\":\"A\"}", "c");
    char *got = pipeline(c, chain, ev);
    snprintf(want, sizeof want, "{\"schema\":%s,\"payload\":{\"id\":1,\"email\":\"a@x\",\"name\":\"A\",\"__deleted\":\"false\"}}", FLAT_SCHEMA);
    assert_string_equal(got, want);
    free(got), free(ev);
    /* V2: update */
    ev = pg_event("{\"id\":1,\"email\":\"\",\"name\":null}", "{\"id\":1,\"email\":\"b@x\",\"name\":null}", "u");
    got = pipeline(c, chain, ev);
    snprintf(want, sizeof want, "{\"schema\":%s,\"payload\":{\"id\":1,\"email\":\"b@x\",\"name\":null,\"__deleted\":\"false\"}}", FLAT_SCHEMA);
    assert_string_equal(got, want);
    free(got), free(ev);
    /* V3: delete under REPLICA IDENTITY DEFAULT (email filled with the fallback "") */
    ev = pg_event("{\"id\":1,\"email\":\"\",\"name\":null}", "null", "d");
    got = pipeline(c, chain, ev);
    snprintf(want, sizeof want, "{\"schema\":%s,\"payload\":{\"id\":1,\"email\":\"\",\"name\":null,\"__deleted\":\"true\"}}", FLAT_SCHEMA);
    assert_string_equal(got, want);
    free(got), free(ev);
    /* the tombstone after the delete: dropped in rewrite mode */
    assert_null(pipeline(c, chain, NULL));
    /* truncate: dropped */
    ev = pg_event("null", "null", "t");
    assert_null(pipeline(c, chain, ev));
    free(ev);
    cf_transform_chain_destroy(chain);

    /* V5: tombstone mode: {"schema": <row schema>, "payload": null} */
    cf_props_set(cc, "transforms.unwrap.delete.tombstone.handling.mode", "tombstone");
    assert_int_equal(cf_transform_chain_new(cc, &chain, &err), CF_OK);
    ev = pg_event("{\"id\":1,\"email\":\"\",\"name\":null}", "null", "d");
    got = pipeline(c, chain, ev);
    assert_string_equal(got, "{\"schema\":{\"type\":\"struct\",\"fields\":" ROW_FIELDS
                             ",\"optional\":true,\"name\":\"dbserver1.public.customers.Value\"},\"payload\":null}");
    free(got), free(ev);
    cf_transform_chain_destroy(chain);

    /* V4: rewrite-with-tombstone keeps the tombstone (null bytes) */
    cf_props_set(cc, "transforms.unwrap.delete.tombstone.handling.mode", "rewrite-with-tombstone");
    assert_int_equal(cf_transform_chain_new(cc, &chain, &err), CF_OK);
    got = pipeline(c, chain, NULL);
    assert_string_equal(got, "<null bytes>");
    free(got);
    cf_transform_chain_destroy(chain);
    cf_props_destroy(cc);
    cf_converter_destroy(c);
}

/* The create event value of Debezium's postgresql.adoc ("create events"),
 * stored in data/debezium_postgresql_create.json with the callout comments
 * removed and {debezium-version} = 3.0.0.Final. */
static char *compact_json(const char *s) {
    char *o = malloc(strlen(s) + 1), *q = o;
    bool in = false;
    for (; *s; s++) {
        if (in) {
            *q++ = *s;
            if (*s == '\\') *q++ = *++s;
            else if (*s == '"') in = false;
        } else if (*s == '"') {
            in = true;
            *q++ = *s;
        } else if (*s != ' ' && *s != '\n' && *s != '\t' && *s != '\r') {
            *q++ = *s;
        }
    }
    *q = '\0';
    return o;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void debeziumDocCreateEvent(void **st) {
    (void)st;
    char *doc = read_file(CF_TESTS_DIR "/transforms/data/debezium_postgresql_create.json");
    char *compact = compact_json(doc);
    cf_converter *c = NULL;
    assert_int_equal(cf_converter_new("org.apache.kafka.connect.json.JsonConverter", NULL, false, &c, NULL), CF_OK);
    cf_schema *s = NULL;
    cf_value *v = NULL;
    cf_err err;
    assert_int_equal(cf_converter_to_connect(c, "PostgreSQL_server.inventory.customers", doc, strlen(doc), &s, &v, &err), CF_OK);
    assert_string_equal(s->name, "PostgreSQL_server.inventory.customers.Envelope");
    const cf_value *src = cf_value_struct_get(v, "source");
    assert_true(cf_value_struct_get(src, "snapshot")->u.b);
    assert_int_equal(cf_value_struct_get(v, "ts_ns")->u.i, 1559033904863841257LL);
    /* writing it back gives the document's bytes, minus "sequence", which the
     * example's payload has but its schema does not */
    char *data = NULL;
    size_t len;
    assert_int_equal(cf_converter_from_connect(c, "t", s, v, &data, &len, &err), CF_OK);
    const char *seq = "\"sequence\":\"[\\\"24023119\\\",\\\"24023128\\\"]\",";
    char *at = strstr(compact, seq);
    assert_non_null(at);
    memmove(at, at + strlen(seq), strlen(at + strlen(seq)) + 1);
    assert_string_equal(data, compact);
    free(data);
    /* flattened (default tombstone mode): the after row with its schema */
    cf_record *r = cf_record_new();
    cf_record_set_value(r, s, v);
    cf_transform *t = xf(NULL, NULL);
    cf_record *out = run(t, r);
    assert_int_equal(cf_converter_from_connect(c, "t", out->value_schema, out->value, &data, &len, &err), CF_OK);
    assert_string_equal(data, "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"},"
                              "{\"type\":\"string\",\"optional\":false,\"field\":\"first_name\"},{\"type\":\"string\",\"optional\":"
                              "false,\"field\":\"last_name\"},{\"type\":\"string\",\"optional\":false,\"field\":\"email\"}],\"optional\""
                              ":true,\"name\":\"PostgreSQL_server.inventory.customers.Value\"},\"payload\":{\"id\":1,\"first_name\":"
                              "\"Anne\",\"last_name\":\"Kretchmar\",\"email\":\"annek@noanswer.org\"}}");
    free(data);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* with add.fields=op,source.ts_ms,source.snapshot in rewrite mode */
    assert_int_equal(cf_converter_to_connect(c, "t", doc, strlen(doc), &s, &v, &err), CF_OK);
    r = cf_record_new();
    cf_record_set_value(r, s, v);
    t = xf("delete.tombstone.handling.mode", "rewrite", "add.fields", "op,source.ts_ms,source.snapshot", NULL);
    out = run(t, r);
    cf_converter *nc = NULL;
    cf_props *np = cf_props_new();
    cf_props_set(np, "schemas.enable", "false");
    assert_int_equal(cf_converter_new("json", np, false, &nc, NULL), CF_OK);
    assert_int_equal(cf_converter_from_connect(nc, "t", out->value_schema, out->value, &data, &len, &err), CF_OK);
    assert_string_equal(data, "{\"id\":1,\"first_name\":\"Anne\",\"last_name\":\"Kretchmar\",\"email\":\"annek@noanswer.org\","
                              "\"__op\":\"c\",\"__source_ts_ms\":1559033904863,\"__source_snapshot\":true,\"__deleted\":\"false\"}");
    /* the added snapshot field copies the source schema without its default, optional */
    const cf_field *sf = cf_schema_field(out->value_schema, "__source_snapshot");
    assert_true(sf->schema->optional);
    assert_false(sf->schema->has_default);
    free(data);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    cf_props_destroy(np);
    cf_converter_destroy(nc);
    cf_converter_destroy(c);
    free(compact);
    free(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(testTombstoneDroppedByDefault),
        cmocka_unit_test(testTombstoneForwardConfigured),
        cmocka_unit_test(testTombstoneRewriteWithTombstone),
        cmocka_unit_test(testTruncateDroppedByDefault),
        cmocka_unit_test(testHandleDeleteDrop),
        cmocka_unit_test(testHandleDeleteNone),
        cmocka_unit_test(testHandleDeleteToTombstone),
        cmocka_unit_test(testHandleDeleteRewrite),
        cmocka_unit_test(testHandleCreateRewrite),
        cmocka_unit_test(testUnwrapCreateRecord),
        cmocka_unit_test(testUnwrapCreateRecordWithOptionalDefaultValue),
        cmocka_unit_test(testIgnoreUnknownRecord),
        cmocka_unit_test(testUnwrapPropagatesRecordHeaders),
        cmocka_unit_test(testAddField),
        cmocka_unit_test(testAddTimestamp),
        cmocka_unit_test(testAddFields),
        cmocka_unit_test(testNewFieldAndHeaderMapping),
        cmocka_unit_test(testAddFieldsForMissingOptionalField),
        cmocka_unit_test(testAddFieldsSpecifyStruct),
        cmocka_unit_test(testAddHeaders),
        cmocka_unit_test(testAddTopicRoutingField),
        cmocka_unit_test(testAddHeadersHandleDeleteRewriteAndTombstone),
        cmocka_unit_test(testAddFieldsHandleDeleteRewrite),
        cmocka_unit_test(testSchemaCacheReusesSchemas),
        cmocka_unit_test(dropFieldsFromValueWithSchemaCompatibility),
        cmocka_unit_test(legacyTombstoneAndDeleteModes),
        cmocka_unit_test(configErrors),
        cmocka_unit_test(specPostgresEventsRewrite),
        cmocka_unit_test(debeziumDocCreateEvent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
