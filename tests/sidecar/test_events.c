/*
 * test_events.c - change events built from real partition updates (the
 * Cassandra 5.0 fixture v8-plain, whose workload.cql says what each write
 * did), checked against the statements that made them, and passed through
 * the worker's converters: Avro (the codec of the AvroConverter) and the
 * JsonConverter, each round trip giving the value back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cdcflow/avro.h"
#include "cdcflow/convert.h"
#include "cdcflow/sidecar_events.h"
#include "sc_test_util.h"

typedef struct got {
    cf_record **r;
    cf_sc_op *op;
    size_t n, cap;
} got;

static cf_record *new_rec(void *arg) {
    (void)arg;
    return cf_record_new();
}

static void emit(void *arg, cf_record *rec, cf_sc_op op) {
    got *g = arg;
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 256;
        g->r = realloc(g->r, g->cap * sizeof *g->r);
        g->op = realloc(g->op, g->cap * sizeof *g->op);
    }
    g->r[g->n] = rec;
    g->op[g->n++] = op;
}

typedef struct bctx {
    cf_sc_events *ev;
    cf_cass_schema *s; /* outlives the events' table references */
    got g;
    long errors;
} bctx;

static void build(void *arg, cf_cass_update *u, const char *seg, int64_t pos) {
    (void)seg, (void)pos;
    bctx *b = arg;
    if (!u->table->cdc) return;
    cf_sc_emitter em = {new_rec, emit, &b->g};
    cf_err err;
    if (cf_sc_events_build(b->ev, u, &em, NULL, &err) != CF_OK) {
        fprintf(stderr, "%s: %s (%s) %s\n", u->table->name, err.message, err.detail, err.where);
        b->errors++;
    }
}

static bctx *events_of(const char *c) {
    bctx *b = calloc(1, sizeof *b);
    cf_sc_events_opts o = {.topic_format = "cdc.{keyspace}.{table}"};
    b->ev = cf_sc_events_new(&o);
    b->s = fixture_schema(c);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s/cdc_raw", FIX, c);
    each_update(dir, b->s, build, b);
    return b;
}

static void bctx_free(bctx *b) {
    for (size_t i = 0; i < b->g.n; i++) cf_record_destroy(b->g.r[i]);
    free(b->g.r), free(b->g.op);
    cf_sc_events_destroy(b->ev);
    cf_cass_schema_destroy(b->s);
    free(b);
}

static const cf_value *field(const cf_value *st, const char *name) { return cf_value_struct_get(st, name); }

static int64_t ts_of(const cf_record *r) { return field(r->value, "timestampMicros")->u.i; }

static const char *str_of(const cf_value *v) { return v && v->type == CF_STRING ? v->u.s.ptr : NULL; }

/* The event of table `t`, operation op and timestamp ts (the n-th such). */
static const cf_record *find(const bctx *b, const char *t, cf_sc_op op, int64_t ts, int nth) {
    for (size_t i = 0; i < b->g.n; i++) {
        const cf_record *r = b->g.r[i];
        if (b->g.op[i] == op && ts_of(r) == ts && strcmp(str_of(field(r->value, "sourceTable")), t) == 0 && nth-- == 0)
            return r;
    }
    fail_msg("no %s event on %s at %lld", cf_sc_op_name(op), t, (long long)ts);
    return NULL;
}

/* A range event's predicates as "field OP value,..." appended to t. */
static void preds_text(const cf_record *r, cf_buf *t) {
    const cf_value *arr = field(r->value, "range");
    for (size_t k = 0; k < arr->u.arr.len; k++) {
        const cf_value *pr = arr->u.arr.items[k];
        const char *f = str_of(field(pr, "field"));
        const cf_value *v = field(field(pr, "value"), f);
        if (v->type == CF_STRING) cf_buf_printf(t, "%s%s %s %s", k ? "," : "", f, str_of(field(pr, "rangePredicateType")), v->u.s.ptr);
        else cf_buf_printf(t, "%s%s %s %lld", k ? "," : "", f, str_of(field(pr, "rangePredicateType")), (long long)v->u.i);
    }
}

static char *fields_text(const cf_value *arr) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "");
    for (size_t i = 0; arr && i < arr->u.arr.len; i++) cf_buf_printf(&b, "%s%s", i ? "," : "", arr->u.arr.items[i]->u.s.ptr);
    return cf_buf_detach(&b, NULL);
}

#define T0 1700000000000000LL

static void assert_fields(const cf_record *r, const char *which, const char *want) {
    char *f = fields_text(field(r->value, which));
    if (strcmp(f, want) != 0) fail_msg("%s: \"%s\", want \"%s\"", which, f, want);
    free(f);
}

static void test_statements(void **state) {
    (void)state;
    bctx *b = events_of("v8-plain");
    assert_int_equal(b->errors, 0);
    print_message("%zu events\n", b->g.n);
    assert_true(b->g.n >= 50);
    const cf_record *r;
    /* UPDATE ... SET c_bigint = 9223372036854775807, c_boolean = false */
    r = find(b, "all_types", CF_SC_OP_UPDATE, T0 + 4000, 0);
    assert_string_equal(r->topic, "cdc.cdcks.all_types");
    assert_fields(r, "updateFields", "id,bucket,ck1,ck2,c_bigint,c_boolean");
    const cf_value *p = field(r->value, "payload");
    assert_int_equal(field(p, "c_bigint")->u.i, INT64_MAX);
    assert_false(field(p, "c_boolean")->u.b);
    assert_null(field(p, "c_int")); /* absent: not written */
    assert_string_equal(str_of(field(p, "ck2")), "x");
    assert_string_equal(str_of(field(p, "ck1")), "50554d6e-29bb-11e5-b345-feff819cdc9f");
    assert_true(field(r->value, "isPartial")->u.b);
    assert_null(field(r->value, "ttl"));
    assert_string_equal(str_of(field(r->value, "operationType")), "UPDATE");
    /* the Kafka key: the partition key */
    assert_int_equal(r->key->u.st.schema->n_fields, 2);
    assert_int_equal(field(r->key, "id")->u.i, 1);
    assert_string_equal(str_of(field(r->key, "bucket")), "a");
    /* DELETE c_text, c_blob: cells set to null, nothing written */
    r = find(b, "all_types", CF_SC_OP_DELETE, T0 + 14000, 0);
    assert_fields(r, "updateFields", "id,bucket,ck1,ck2,c_blob,c_text");
    assert_null(field(field(r->value, "payload"), "c_text"));
    /* INSERT ... (c_int, c_text) VALUES (1, null): c_text set to null, listed */
    r = find(b, "all_types", CF_SC_OP_INSERT, T0 + 15000, 0);
    assert_fields(r, "updateFields", "id,bucket,ck1,ck2,c_int,c_text");
    assert_int_equal(field(field(r->value, "payload"), "c_int")->u.i, 1);
    assert_null(field(field(r->value, "payload"), "c_text"));
    /* DELETE FROM ... WHERE <full primary key>: a row deletion */
    r = find(b, "all_types", CF_SC_OP_DELETE, T0 + 16000, 0);
    assert_fields(r, "updateFields", "id,bucket,ck1,ck2");
    /* DELETE FROM ... WHERE id = 3 AND bucket = 'c': the partition */
    r = find(b, "all_types", CF_SC_OP_DELETE_PARTITION, T0 + 18000, 0);
    assert_fields(r, "updateFields", "id,bucket");
    assert_int_equal(field(field(r->value, "payload"), "id")->u.i, 3);
    /* DELETE c_map['a']: an element removed */
    r = find(b, "all_types", CF_SC_OP_COMPLEX_ELEMENT_DELETE, T0 + 8000, 0);
    assert_fields(r, "elementFields", "c_map");
    const cf_value *m = field(field(r->value, "payload"), "c_map");
    assert_non_null(m);
    assert_int_equal(m->u.map.len, 1);
    assert_string_equal(m->u.map.keys[0]->u.s.ptr, "a");
    assert_null(m->u.map.vals[0]);
    /* c_set = c_set - {1} (with c_list = ['l0'] + c_list in the same statement) */
    r = find(b, "all_types", CF_SC_OP_COMPLEX_ELEMENT_DELETE, T0 + 7000, 0);
    const cf_value *set = field(field(r->value, "payload"), "c_set");
    assert_int_equal(set->u.arr.len, 1);
    assert_int_equal(set->u.arr.items[0]->u.i, 1);
    r = find(b, "all_types", CF_SC_OP_UPDATE, T0 + 7000, 0);
    assert_fields(r, "elementFields", "c_list");
    const cf_value *lst = field(field(r->value, "payload"), "c_list");
    assert_int_equal(lst->u.arr.len, 1);
    assert_string_equal(lst->u.arr.items[0]->u.s.ptr, "l0");
    /* c_list = c_list - ['l2']: a list element removed (no value: its timeuuid only) */
    r = find(b, "all_types", CF_SC_OP_COMPLEX_ELEMENT_DELETE, T0 + 9000, 0);
    assert_fields(r, "elementFields", "c_list");
    /* SET c_udt.street = 'Main St 2': one field of a non-frozen UDT */
    r = find(b, "all_types", CF_SC_OP_UPDATE, T0 + 11000, 0);
    assert_fields(r, "elementFields", "c_udt");
    const cf_value *udt = field(field(r->value, "payload"), "c_udt");
    assert_string_equal(str_of(field(udt, "street")), "Main St 2");
    assert_null(field(udt, "Zip_Code"));
    /* SET c_udt = {...}: the whole value, not an element update */
    r = find(b, "all_types", CF_SC_OP_UPDATE, T0 + 12000, 0);
    assert_null(field(r->value, "elementFields"));
    udt = field(field(r->value, "payload"), "c_udt");
    assert_int_equal(field(udt, "Zip_Code")->u.i, 99);
    /* the static columns: an UPDATE without clustering */
    r = find(b, "all_types", CF_SC_OP_UPDATE, T0 + 13000, 0);
    assert_fields(r, "updateFields", "id,bucket,s_count,s_note");
    assert_null(field(field(r->value, "payload"), "ck1"));
    /* UPDATE ... USING TTL 3600 SET c_varchar = 'expiring' */
    r = find(b, "all_types", CF_SC_OP_UPDATE, T0 + 5000, 0);
    const cf_value *ttl = field(r->value, "ttl");
    assert_non_null(ttl);
    assert_int_equal(field(ttl, "ttl")->u.i, 3600);
    assert_true(field(ttl, "deletedAt")->u.i > 1700000000);
    /* INSERT ... USING TTL 100000 on simple: the row's TTL */
    r = find(b, "simple", CF_SC_OP_INSERT, T0 + 201000, 0);
    assert_int_equal(field(field(r->value, "ttl"), "ttl")->u.i, 100000);
    /* the first INSERT: every type, and the quoted column */
    r = find(b, "all_types", CF_SC_OP_INSERT, T0 + 1000, 0);
    p = field(r->value, "payload");
    assert_string_equal(str_of(field(p, "Quoted_Col")), "quoted value");
    assert_string_equal(cf_schema_param(cf_schema_field(p->u.st.schema, "Quoted_Col")->schema, "cassandra.column"),
                        "Quoted Col");
    /* each payload column's CQL type (and static), so that a sink whose schema file predates an
     * ALTER TABLE ADD still tells a set from a list (both arrays) */
    assert_string_equal(cf_schema_param(cf_schema_field(p->u.st.schema, "c_set")->schema, "cassandra.type"),
                        "set<int>");
    assert_string_equal(cf_schema_param(cf_schema_field(p->u.st.schema, "c_list")->schema, "cassandra.type"),
                        "list<text>");
    /* not on a UDT (a named record, one definition for every use of the type) */
    assert_null(cf_schema_param(cf_schema_field(p->u.st.schema, "c_udt")->schema, "cassandra.type"));
    assert_string_equal(cf_schema_param(cf_schema_field(p->u.st.schema, "s_note")->schema, "cassandra.kind"),
                        "static");
    assert_null(cf_schema_param(cf_schema_field(p->u.st.schema, "c_set")->schema, "cassandra.kind"));
    assert_int_equal(field(p, "c_date")->u.i, 19782);             /* 2024-02-29 */
    assert_int_equal(field(p, "c_timestamp")->u.i, 1709210096789); /* 2024-02-29 12:34:56.789Z */
    assert_int_equal(field(p, "c_time")->u.i, 47655123456789LL);   /* 13:14:15.123456789 */
    assert_string_equal(str_of(field(p, "c_inet")), "2001:db8:0:0:0:ff00:42:8329");
    assert_int_equal(field(p, "c_tinyint")->u.i, -128);
    assert_int_equal(field(p, "c_smallint")->u.i, -32768);
    const cf_value *dec = field(p, "c_decimal"); /* -12345.6789 at scale 18 */
    char *dt = cf_decimal_to_string((const uint8_t *)dec->u.s.ptr, dec->u.s.len, 18);
    assert_string_equal(dt, "-12345.678900000000000000");
    free(dt);
    const cf_value *vi = field(p, "c_varint");
    dt = cf_decimal_to_string((const uint8_t *)vi->u.s.ptr, vi->u.s.len, 0);
    assert_string_equal(dt, "123456789012345678901234567890");
    free(dt);
    const cf_value *tup = field(p, "c_tuple");
    assert_int_equal(field(tup, "f0")->u.i, 42);
    assert_int_equal(field(tup, "f2")->u.arr.len, 2);
    const cf_value *fu = field(p, "c_frozen_udt");
    assert_string_equal(str_of(field(field(fu, "home"), "street")), "Elm");
    assert_int_equal(field(p, "c_vector")->u.arr.len, 3);
    assert_true(field(p, "c_vector")->u.arr.items[1]->u.f == -2.5);
    assert_int_equal(field(p, "c_frozen_map")->u.map.len, 2);
    /* every column written but the two static ones, which are the static row's event */
    assert_int_equal(field(r->value, "updateFields")->u.arr.len, p->u.st.schema->n_fields - 2);
    assert_true(field(r->value, "isPartial")->u.b);
    /* range deletions: predicates ANDed on clustering columns */
    static const struct {
        int64_t ts;
        const char *preds;
    } rd[] = {
        {T0 + 120000, "seq GTE 3,seq LT 5"},
        {T0 + 121000, "seq EQ 7"},
        {T0 + 122000, "seq EQ 8,sub GT a"},
        {T0 + 123000, "seq GT 8"},
    };
    for (size_t i = 0; i < sizeof rd / sizeof *rd; i++) {
        r = find(b, "events", CF_SC_OP_DELETE_RANGE, rd[i].ts, 0);
        cf_buf t = CF_BUF_INIT;
        cf_buf_append_str(&t, "");
        preds_text(r, &t);
        if (strcmp(t.data, rd[i].preds)) fail_msg("range at %lld: \"%s\", want \"%s\"", (long long)rd[i].ts, t.data, rd[i].preds);
        cf_buf_free(&t);
    }
    r = find(b, "events", CF_SC_OP_DELETE_PARTITION, T0 + 125000, 0);
    /* a batch over a CDC and a non-CDC table: only the CDC one has events */
    r = find(b, "simple", CF_SC_OP_INSERT, T0 + 203000, 0);
    for (size_t i = 0; i < b->g.n; i++) assert_string_not_equal(str_of(field(b->g.r[i]->value, "sourceTable")), "plain");
    /* counters: the table says it is not supported */
    const cf_sc_table_schemas *ts;
    cf_cass_schema *s = fixture_schema("v8-plain");
    assert_int_equal(cf_sc_events_table(b->ev, cf_cass_schema_table_by_name(s, "cdcks", "counters"), &ts, NULL), CF_OK);
    assert_false(ts->supported);
    assert_non_null(strstr(ts->notes, "counter table"));
    assert_int_equal(cf_sc_events_table(b->ev, cf_cass_schema_table_by_name(s, "cdcks", "all_types"), &ts, NULL), CF_OK);
    assert_true(ts->supported);
    assert_non_null(strstr(ts->notes, "column c_list (list<text>)"));
    assert_non_null(strstr(ts->notes, "column c_set (set<int>)"));
    cf_cass_schema_destroy(s);
    bctx_free(b);
}

/* The same table written by another node: the same schema id (the id does
 * not depend on the table id Cassandra chose). */
static void test_schema_ids(void **state) {
    (void)state;
    cf_sc_events *ev = cf_sc_events_new(NULL);
    cf_cass_schema *a = fixture_schema("v8-plain"), *c = fixture_schema("v7-zstd"), *r = fixture_schema("v8-lz4-rollover");
    const char *names[] = {"all_types", "events", "simple", NULL};
    char seen[3][37];
    for (int i = 0; names[i]; i++) {
        const cf_sc_table_schemas *x, *y;
        assert_int_equal(cf_sc_events_table(ev, cf_cass_schema_table_by_name(a, "cdcks", names[i]), &x, NULL), CF_OK);
        assert_int_equal(cf_sc_events_table(ev, cf_cass_schema_table_by_name(c, "cdcks", names[i]), &y, NULL), CF_OK);
        assert_true(x != y);
        assert_string_equal(x->uuid, y->uuid);
        assert_int_equal(x->id, y->id);
        assert_true(x->id >= 0);
        assert_int_equal(x->uuid[14], '3'); /* version 3: name-based MD5 */
        memcpy(seen[i], x->uuid, 37);
        char topic[64];
        snprintf(topic, sizeof topic, "cdcks.%s", names[i]);
        assert_string_equal(x->topic, topic);
    }
    assert_string_not_equal(seen[0], seen[1]);
    assert_string_not_equal(seen[1], seen[2]);
    cf_cass_schema_destroy(a);
    cf_cass_schema_destroy(c);
    cf_cass_schema_destroy(r);
    cf_sc_events_destroy(ev);
}

/* Every event through the converters: Avro (schema derived, encoded,
 * decoded back equal) and the JsonConverter (schemas on, back equal). */
static void test_converters(void **state) {
    (void)state;
    bctx *b = events_of("v8-plain");
    cf_props *jp = cf_props_new();
    cf_props_set(jp, "schemas.enable", "true");
    cf_converter *jv, *jk;
    cf_err err;
    assert_int_equal(cf_converter_new("json", jp, false, &jv, &err), CF_OK);
    assert_int_equal(cf_converter_new("json", jp, true, &jk, &err), CF_OK);
    cf_buf out = CF_BUF_INIT;
    size_t avro_ok = 0;
    for (size_t i = 0; i < b->g.n; i++) {
        const cf_record *r = b->g.r[i];
        if (cf_value_validate(r->value_schema, r->value, &err)) fail_msg("event %zu invalid: %s at %s", i, err.message, err.where);
        if (cf_value_validate(r->key_schema, r->key, &err)) fail_msg("key %zu invalid: %s at %s", i, err.message, err.where);
        for (int k = 0; k < 2; k++) {
            const cf_schema *s = k ? r->key_schema : r->value_schema;
            const cf_value *v = k ? r->key : r->value;
            cf_avro_codec *c;
            if (cf_avro_codec_from_connect(s, NULL, &c, &err)) fail_msg("event %zu: avro schema: %s at %s", i, err.message, err.where);
            cf_buf_reset(&out);
            if (cf_avro_codec_encode(c, v, &out, &err)) fail_msg("event %zu: avro encode: %s at %s", i, err.message, err.where);
            cf_value *back = NULL;
            assert_int_equal(cf_avro_codec_decode(c, out.data, out.len, &back, &err), CF_OK);
            if (!cf_value_equal(back, v)) {
                char *a = cf_value_debug_string(v), *z = cf_value_debug_string(back);
                fail_msg("event %zu: avro round trip differs:\n%s\n%s", i, a, z);
            }
            cf_value_destroy(back);
            cf_avro_codec_destroy(c);
            avro_ok++;
            char *data;
            size_t len;
            cf_converter *jc = k ? jk : jv;
            if (cf_converter_from_connect(jc, r->topic, s, v, &data, &len, &err)) fail_msg("event %zu: json: %s", i, err.message);
            cf_schema *js = NULL;
            cf_value *jvv = NULL;
            if (cf_converter_to_connect(jc, r->topic, data, len, &js, &jvv, &err))
                fail_msg("event %zu: json back: %s (%.300s)", i, err.message, data);
            if (!cf_value_equal(jvv, v)) {
                char *a = cf_value_debug_string(v), *z = cf_value_debug_string(jvv);
                fail_msg("event %zu: json round trip differs:\n%s\n%s", i, a, z);
            }
            cf_value_destroy(jvv);
            cf_schema_unref(js);
            free(data);
        }
    }
    assert_int_equal(avro_ok, 2 * b->g.n);
    cf_buf_free(&out);
    cf_converter_destroy(jv);
    cf_converter_destroy(jk);
    cf_props_destroy(jp);
    bctx_free(b);
}

/* Values that do not fit their type are errors naming the type, never a
 * read past the end; decimals that would need rounding are refused. */
static void test_bad_values(void **state) {
    (void)state;
    cf_sc_events_opts o = {.decimal_scale = 2};
    cf_sc_events *ev = cf_sc_events_new(&o);
    cf_err err;
    cf_value *v = NULL;
    cf_cql_type *t;
    assert_int_equal(cf_cql_type_parse("frozen<list<int>>", "ks", NULL, &t, &err), CF_OK);
    cf_schema *s = cf_sc_cql_schema(ev, t, true);
    const uint8_t bad_count[] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 4, 0, 0, 0, 1};
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, bad_count, sizeof bad_count, &v, &err), CF_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "frozen<list<int>>"));
    const uint8_t good[] = {0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7};
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, good, sizeof good, &v, &err), CF_OK);
    assert_int_equal(v->u.arr.items[0]->u.i, 7);
    cf_value_destroy(v);
    const uint8_t long_elem[] = {0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 7};
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, long_elem, sizeof long_elem, &v, &err), CF_ERR_SCHEMA);
    cf_schema_unref(s);
    cf_cql_type_destroy(t);
    /* decimal 1.234 (scale 3) at scale 2: would round */
    t = cf_cql_type_new(CF_CQL_DECIMAL);
    s = cf_sc_cql_schema(ev, t, true);
    const uint8_t d1[] = {0, 0, 0, 3, 0x04, 0xd2};
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, d1, sizeof d1, &v, &err), CF_ERR_SCHEMA);
    assert_non_null(strstr(err.hint, "decimal.scale"));
    /* 1.230 (scale 3) is 1.23 exactly; -5 (scale 0) is -5.00 */
    const uint8_t d2[] = {0, 0, 0, 3, 0x04, 0xce};
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, d2, sizeof d2, &v, &err), CF_OK);
    char *txt = cf_decimal_to_string((const uint8_t *)v->u.s.ptr, v->u.s.len, 2);
    assert_string_equal(txt, "1.23");
    free(txt);
    cf_value_destroy(v);
    const uint8_t d3[] = {0, 0, 0, 0, 0xfb};
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, d3, sizeof d3, &v, &err), CF_OK);
    txt = cf_decimal_to_string((const uint8_t *)v->u.s.ptr, v->u.s.len, 2);
    assert_string_equal(txt, "-5.00");
    free(txt);
    cf_value_destroy(v);
    /* -128 at scale 0 to scale 2: -12800 needs two bytes (0xce00) */
    const uint8_t d4[] = {0, 0, 0, 0, 0x80};
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, d4, sizeof d4, &v, &err), CF_OK);
    assert_int_equal(v->u.s.len, 2);
    assert_int_equal((uint8_t)v->u.s.ptr[0], 0xce);
    cf_value_destroy(v);
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, d4, 3, &v, &err), CF_ERR_SCHEMA); /* shorter than its scale */
    cf_schema_unref(s);
    cf_cql_type_destroy(t);
    /* an empty int is null, as Cassandra reads it */
    t = cf_cql_type_new(CF_CQL_INT);
    s = cf_sc_cql_schema(ev, t, true);
    v = (cf_value *)1;
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, (const uint8_t *)"", 0, &v, &err), CF_OK);
    assert_null(v);
    assert_int_equal(cf_sc_cql_to_value(ev, t, s, (const uint8_t *)"abc", 3, &v, &err), CF_ERR_SCHEMA);
    cf_schema_unref(s);
    cf_cql_type_destroy(t);
    cf_sc_events_destroy(ev);
}

/* A range tombstone whose bounds differ in more than one clustering column:
 * what Cassandra writes for a multi-column slice ((c1, c2) >= (2, 'x')) and
 * for the pieces of overlapping range deletions merged in one batch (the
 * live test's workload made [(2), (3, 'b')) on a table whose c2 is DESC).
 * The events must together delete exactly the range, as single-column
 * predicates (Cassandra's clustering order: c1 ASC, c2 DESC). */
static void test_multi_column_range(void **state) {
    (void)state;
    static const char ddl[] = "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'};\n"
                              "CREATE TABLE k.w (p int, c1 int, c2 text, v text, PRIMARY KEY (p, c1, c2))"
                              " WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC) AND cdc = true;\n";
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    assert_int_equal(cf_cass_ddl_parse(s, ddl, sizeof ddl - 1, "ddl", &err), CF_OK);
    const cf_cass_table *tb = cf_cass_schema_table_by_name(s, "k", "w");
    assert_non_null(tb);
    static const uint8_t pk[4] = {0, 0, 0, 7}, two[4] = {0, 0, 0, 2}, three[4] = {0, 0, 0, 3};
    static const struct {
        int sb, eb;                      /* bound kinds */
        const uint8_t *s1, *e1;          /* c1 of each bound */
        const char *s2, *e2;             /* c2 of each bound, NULL = a one-value prefix */
        const char *want;
    } cases[] = {
        /* [(2), (3, 'b')): c1 = 2 .. c1 = 3 before 'b' in DESC order (values above 'b') */
        {CF_CASS_BK_INCL_START_BOUND, CF_CASS_BK_EXCL_END_BOUND, two, three, NULL, "b",
         "c1 GTE 2,c1 LT 3|c1 EQ 3,c2 GT b"},
        /* [(2, 'x'), (3)]: the start's tail is c2 at or after 'x' in DESC order (at or below) */
        {CF_CASS_BK_INCL_START_BOUND, CF_CASS_BK_INCL_END_BOUND, two, three, "x", NULL,
         "c1 EQ 2,c2 LTE x|c1 GT 2,c1 LTE 3"},
        /* ((2, 'x'), (3, 'b')] */
        {CF_CASS_BK_EXCL_START_BOUND, CF_CASS_BK_INCL_END_BOUND, two, three, "x", "b",
         "c1 EQ 2,c2 LT x|c1 GT 2,c1 LT 3|c1 EQ 3,c2 GTE b"},
        /* one column differs: one event, as before */
        {CF_CASS_BK_INCL_START_BOUND, CF_CASS_BK_EXCL_END_BOUND, two, two, "x", "b", "c1 EQ 2,c2 LTE x,c2 GT b"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        cf_cass_bytes sv[2] = {{cases[k].s1, 4}, {(const uint8_t *)cases[k].s2, cases[k].s2 ? strlen(cases[k].s2) : 0}};
        cf_cass_bytes evv[2] = {{cases[k].e1, 4}, {(const uint8_t *)cases[k].e2, cases[k].e2 ? strlen(cases[k].e2) : 0}};
        cf_cass_row rows[2] = {{.kind = CF_CASS_RT_BOUND, .bound = cases[k].sb, .clustering = sv, .n_clustering = cases[k].s2 ? 2 : 1},
                               {.kind = CF_CASS_RT_BOUND, .bound = cases[k].eb, .clustering = evv, .n_clustering = cases[k].e2 ? 2 : 1}};
        rows[0].deletion = rows[1].deletion = (cf_cass_deletion){1000, 1};
        cf_cass_update u = {.table = tb, .key = {pk, 4}, .partition_deletion = {CF_CASS_LIVE_TS, 0},
                            .rows = rows, .n_rows = 2};
        cf_sc_events_opts o = {.topic_format = "cdc.{keyspace}.{table}"};
        cf_sc_events *ev = cf_sc_events_new(&o);
        got g = {0};
        cf_sc_emitter em = {new_rec, emit, &g};
        if (cf_sc_events_build(ev, &u, &em, NULL, &err) != CF_OK) fail_msg("case %zu: %s (%s)", k, err.message, err.detail);
        cf_buf t = CF_BUF_INIT;
        cf_buf_append_str(&t, "");
        for (size_t i = 0; i < g.n; i++) {
            assert_int_equal(g.op[i], CF_SC_OP_DELETE_RANGE);
            assert_int_equal(ts_of(g.r[i]), 1000);
            if (i) cf_buf_append_str(&t, "|");
            preds_text(g.r[i], &t);
            cf_record_destroy(g.r[i]);
        }
        if (strcmp(t.data, cases[k].want)) fail_msg("case %zu: \"%s\", want \"%s\"", k, t.data, cases[k].want);
        cf_buf_free(&t);
        free(g.r), free(g.op);
        cf_sc_events_destroy(ev);
    }
    cf_cass_schema_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statements),
        cmocka_unit_test(test_schema_ids),
        cmocka_unit_test(test_converters),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_multi_column_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
