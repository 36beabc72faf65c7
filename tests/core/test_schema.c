/*
 * test_schema.c - Connect data model: schemas, values, validation, decimals.
 * Expected behaviour from org.apache.kafka.connect.data (ConnectSchemaTest,
 * DecimalTest): validation rules, logical type names, decimal encodings.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/buf.h"
#include "cdcflow/record.h"
#include "cdcflow/schema.h"

static cf_schema *person_schema(void) {
    cf_schema *addr = cf_schema_new_struct();
    cf_schema_set_name(addr, "Address");
    cf_schema_add_field(addr, "zip", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_set_optional(addr, true);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, "Person");
    cf_schema_add_field(s, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "tags", cf_schema_new_array(cf_schema_primitive(CF_STRING, false)), NULL);
    cf_schema_add_field(s, "address", addr, NULL);
    return s;
}

static void test_validate_ok_and_paths(void **state) {
    (void)state;
    cf_schema *s = person_schema();
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "id", cf_value_int32(7), NULL);
    cf_value *tags = cf_value_array();
    cf_value_array_push(tags, cf_value_string("a"));
    cf_value_struct_set(v, "tags", tags, NULL);
    cf_err err;
    assert_int_equal(cf_value_validate(s, v, &err), CF_OK);

    /* a null element in a required-element array names its index */
    cf_value_array_push(tags, NULL);
    assert_int_equal(cf_value_validate(s, v, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.where, "tags[1]");

    /* nested struct: the path is dotted */
    tags->u.arr.len = 1;
    const cf_field *af = cf_schema_field(s, "address");
    cf_value *addr = cf_value_struct(cf_schema_ref(af->schema));
    cf_value_struct_set(v, "address", addr, NULL);
    assert_int_equal(cf_value_validate(s, v, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.where, "address.zip");
    cf_value_struct_set(addr, "zip", cf_value_string("1000"), NULL);
    assert_int_equal(cf_value_validate(s, v, &err), CF_OK);

    /* unknown field */
    assert_int_equal(cf_value_struct_set(v, "nope", cf_value_int32(1), &err), CF_ERR_SCHEMA);

    cf_value *c = cf_value_clone(v);
    assert_true(cf_value_equal(c, v));
    cf_value_destroy(c);
    cf_value_destroy(v);
    cf_schema_unref(s);
}

static void test_ranges(void **state) {
    (void)state;
    cf_schema *s8 = cf_schema_primitive(CF_INT8, false);
    cf_value *v = cf_value_int64(0);
    v->type = CF_INT8;
    v->u.i = 128;
    assert_int_equal(cf_value_validate(s8, v, NULL), CF_ERR_SCHEMA);
    v->u.i = -128;
    assert_int_equal(cf_value_validate(s8, v, NULL), CF_OK);
    /* wrong type */
    cf_value *str = cf_value_string("x");
    assert_int_equal(cf_value_validate(s8, str, NULL), CF_ERR_SCHEMA);
    /* null: required fails, optional ok, defaulted ok */
    assert_int_equal(cf_value_validate(s8, NULL, NULL), CF_ERR_SCHEMA);
    cf_schema_set_optional(s8, true);
    assert_int_equal(cf_value_validate(s8, NULL, NULL), CF_OK);
    cf_schema *d = cf_schema_primitive(CF_INT32, false);
    assert_int_equal(cf_schema_set_default(d, cf_value_int32(5), NULL), CF_OK);
    assert_int_equal(cf_value_validate(d, NULL, NULL), CF_OK);
    /* a default of the wrong type is refused */
    assert_int_equal(cf_schema_set_default(d, cf_value_string("x"), NULL), CF_ERR_SCHEMA);
    /* Time must be within a day */
    cf_schema *t = cf_schema_time();
    cf_value *tv = cf_value_int32(86400000);
    assert_int_equal(cf_value_validate(t, tv, NULL), CF_ERR_SCHEMA);
    cf_value_destroy(tv);
    cf_schema_unref(t);
    cf_schema_unref(d);
    cf_value_destroy(str);
    cf_value_destroy(v);
    cf_schema_unref(s8);
}

static void test_logical_names(void **state) {
    (void)state;
    cf_schema *d = cf_schema_decimal(2);
    assert_string_equal(d->name, "org.apache.kafka.connect.data.Decimal");
    assert_string_equal(cf_schema_param(d, "scale"), "2");
    int32_t scale = -1;
    assert_true(cf_schema_decimal_scale(d, &scale));
    assert_int_equal(scale, 2);
    assert_int_equal(d->type, CF_BYTES);
    cf_schema *ts = cf_schema_timestamp();
    assert_string_equal(ts->name, "org.apache.kafka.connect.data.Timestamp");
    assert_int_equal(ts->type, CF_INT64);
    cf_schema *ts2 = cf_schema_timestamp();
    assert_true(cf_schema_equal(ts, ts2));
    cf_schema_set_optional(ts2, true);
    assert_false(cf_schema_equal(ts, ts2));
    cf_schema_unref(ts);
    cf_schema_unref(ts2);
    cf_schema_unref(d);
}

/* Connect's DecimalTest: 156 at scale 2 ("1.56") is the unscaled bytes 0x009c;
 * -1.56 is 0xff64. */
static void test_decimal_text(void **state) {
    (void)state;
    uint8_t *b;
    size_t n;
    assert_int_equal(cf_decimal_from_string("1.56", 2, &b, &n, NULL), CF_OK);
    assert_int_equal(n, 2);
    assert_int_equal(b[0], 0x00);
    assert_int_equal(b[1], 0x9c);
    char *s = cf_decimal_to_string(b, n, 2);
    assert_string_equal(s, "1.56");
    free(s), free(b);
    assert_int_equal(cf_decimal_from_string("-1.56", 2, &b, &n, NULL), CF_OK);
    assert_int_equal(n, 2);
    assert_int_equal(b[0], 0xff);
    assert_int_equal(b[1], 0x64);
    s = cf_decimal_to_string(b, n, 2);
    assert_string_equal(s, "-1.56");
    free(s), free(b);
    /* exponent forms and trailing zeros */
    assert_int_equal(cf_decimal_from_string("1e2", 0, &b, &n, NULL), CF_OK);
    s = cf_decimal_to_string(b, n, 0);
    assert_string_equal(s, "100");
    free(s), free(b);
    assert_int_equal(cf_decimal_from_string("0.50", 1, &b, &n, NULL), CF_OK);
    s = cf_decimal_to_string(b, n, 1);
    assert_string_equal(s, "0.5");
    free(s), free(b);
    /* rounding is refused */
    assert_int_equal(cf_decimal_from_string("0.55", 1, &b, &n, NULL), CF_ERR_INVALID);
    assert_int_equal(cf_decimal_from_string("abc", 1, &b, &n, NULL), CF_ERR_INVALID);
    /* big numbers beyond 64 bits round-trip */
    const char *big = "-123456789012345678901234567890.123456789";
    assert_int_equal(cf_decimal_from_string(big, 9, &b, &n, NULL), CF_OK);
    s = cf_decimal_to_string(b, n, 9);
    assert_string_equal(s, big);
    free(s), free(b);
    assert_int_equal(cf_decimal_literal_scale("12.345"), 3);
    assert_int_equal(cf_decimal_literal_scale("1.5e-3"), 4);
    assert_int_equal(cf_decimal_literal_scale("10"), 0);
    uint8_t small[] = {0x05};
    s = cf_decimal_to_string(small, 1, 3);
    assert_string_equal(s, "0.005");
    free(s);
    uint8_t zero[] = {0x00};
    s = cf_decimal_to_string(zero, 1, 0);
    assert_string_equal(s, "0");
    free(s);
}

static void test_record_and_msg(void **state) {
    (void)state;
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "t");
    cf_record_set_key(r, cf_schema_primitive(CF_STRING, false), cf_value_string("k"));
    cf_record_set_value(r, NULL, NULL);
    cf_record_add_header(r, "h", NULL, cf_value_string("1"));
    cf_record_add_header(r, "h", NULL, cf_value_string("2"));
    assert_string_equal(cf_record_header_last(r, "h")->value->u.s.ptr, "2");
    cf_value *sp = cf_value_map();
    cf_value_map_put(sp, cf_value_string("file"), cf_value_string("a.csv"));
    cf_value *so = cf_value_map();
    cf_value_map_put(so, cf_value_string("pos"), cf_value_int64(10));
    cf_record_set_source(r, sp, so);
    cf_record *c = cf_record_clone(r);
    assert_int_equal(cf_value_map_get_str(c->source_offset, "pos")->u.i, 10);
    cf_record_remove_headers(c, "h");
    assert_int_equal(c->n_headers, 0);
    cf_record_destroy(c);
    cf_record_destroy(r);

    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "t");
    cf_msg_set_key(m, "k\0x", 3);
    cf_msg_set_value(m, NULL, 0);
    cf_msg_add_header(m, "a", NULL, 0);
    cf_msg *mc = cf_msg_clone(m);
    assert_int_equal(mc->key_len, 3);
    assert_memory_equal(mc->key, "k\0x", 3);
    assert_null(mc->value);
    assert_null(mc->headers[0].value);
    cf_msg_destroy(mc);
    cf_msg_destroy(m);
}

/* A topic short enough lives in the record, a long one on the heap; either
 * may be replaced by any other, also by a part of itself. */
static void test_record_topic(void **state) {
    (void)state;
    char lng[200];
    memset(lng, 'x', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "short");
    assert_string_equal(r->topic, "short");
    cf_record_set_topic(r, lng);
    assert_string_equal(r->topic, lng);
    cf_record_set_topic(r, r->topic + 190); /* a part of the heap copy */
    assert_string_equal(r->topic, "xxxxxxxxx");
    cf_record_set_topic(r, r->topic + 5); /* a part of the inline copy */
    assert_string_equal(r->topic, "xxxx");
    cf_record_set_topic(r, r->topic);
    assert_string_equal(r->topic, "xxxx");
    cf_record *c = cf_record_clone(r);
    assert_string_equal(c->topic, "xxxx");
    assert_ptr_not_equal(c->topic, r->topic);
    cf_record_set_topic(r, NULL);
    assert_null(r->topic);
    cf_record_set_topic(c, lng);
    cf_record_destroy(c);
    cf_record_destroy(r);
}

static void *drop_refs(void *arg) {
    cf_value **vs = arg;
    for (size_t i = 0; i < 1000; i++) cf_value_destroy(vs[i]);
    return NULL;
}

/* A shared value: every owner destroys it once, the last one frees it (ASan
 * reports a leak or a double free otherwise), also when owners in several
 * threads let go at once; past the count's limit a reference is a copy. */
static void test_value_ref(void **state) {
    (void)state;
    assert_null(cf_value_ref(NULL));
    cf_value *part = cf_value_map();
    cf_value_map_put(part, cf_value_string("path"), cf_value_string("a.csv"));
    cf_value *r1 = cf_value_ref(part);
    assert_ptr_equal(r1, part);
    cf_record *rec = cf_record_new();
    cf_value *off = cf_value_map();
    cf_value *key = cf_value_string("position");
    cf_value_map_put(off, cf_value_ref(key), cf_value_int64(7));
    cf_record_set_source(rec, cf_value_ref(part), off);
    cf_record *c = cf_record_clone(rec); /* a deep copy: its own values */
    assert_ptr_not_equal(c->source_partition, part);
    assert_true(cf_value_equal(c->source_partition, part));
    cf_record_destroy(rec);
    cf_record_destroy(c);
    cf_value_destroy(key);
    assert_string_equal(cf_value_map_get_str(r1, "path")->u.s.ptr, "a.csv");
    cf_value_destroy(r1);
    cf_value_destroy(part);

    enum { THREADS = 4, PER = 1000 };
    static cf_value *owned[THREADS][PER];
    cf_value *s = cf_value_string("shared");
    for (size_t t = 0; t < THREADS; t++)
        for (size_t i = 0; i < PER; i++) owned[t][i] = cf_value_ref(s);
    pthread_t th[THREADS];
    for (size_t t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&th[t], NULL, drop_refs, owned[t]), 0);
    for (size_t t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    assert_int_equal(s->refs, 0);
    cf_value_destroy(s);

    cf_value *full = cf_value_int64(1);
    full->refs = UINT16_MAX; /* as after 65535 references */
    cf_value *copy = cf_value_ref(full);
    assert_ptr_not_equal(copy, full);
    assert_true(cf_value_equal(copy, full));
    cf_value_destroy(copy);
    full->refs = 0;
    cf_value_destroy(full);
}

/* A small map built in one allocation (cf_value_map_n: literal keys and
 * scalar values in the map's own memory) equals the same map built value by
 * value, in every operation that reads, copies, shares or compares it; puts
 * past its room fall back to allocated entries; ASan checks that nothing is
 * freed twice or leaked (the embedded entries are freed with the map). */
static void test_value_map_n(void **state) {
    (void)state;
    cf_value *old = cf_value_map();
    cf_value_map_put(old, cf_value_string("recordCount"), cf_value_int64(3));
    cf_value_map_put(old, cf_value_string("position"), cf_value_int64(-1234567890123));
    cf_value_map_put(old, cf_value_string("done"), cf_value_bool(true));
    cf_value_map_put(old, cf_value_string("etag"), cf_value_string("\"abc\""));
    cf_value_map_put(old, cf_value_string("extra"), cf_value_int64(INT64_MIN));
    cf_value *m = cf_value_map_n(3); /* room for 3: the 4th and 5th entries are allocated */
    cf_value_map_put_lit_long(m, "recordCount", 3);
    cf_value_map_put_lit_long(m, "position", -1234567890123);
    cf_value_map_put_lit_bool(m, "done", true);
    cf_value_map_put_lit(m, "etag", cf_value_string("\"abc\""));
    cf_value_map_put_lit_long(m, "extra", INT64_MIN);
    assert_int_equal(m->type, CF_MAP);
    assert_int_equal(m->u.map.len, 5);
    assert_true(cf_value_equal(m, old));
    assert_true(cf_value_equal(old, m));
    assert_int_equal(cf_value_map_get_str(m, "position")->type, CF_INT64);
    assert_int_equal(cf_value_map_get_str(m, "position")->u.i, -1234567890123);
    assert_string_equal(cf_value_map_get_str(m, "etag")->u.s.ptr, "\"abc\"");
    assert_true(cf_value_map_get_str(m, "done")->u.b);
    /* a copy is an ordinary map of its own */
    cf_value *c = cf_value_clone(m);
    assert_true(cf_value_equal(c, old));
    cf_value_destroy(c);
    /* a reference to an entry is a copy (the entry lives in the map's memory) */
    cf_value *e = cf_value_ref(cf_value_map_get_str(m, "recordCount"));
    cf_value *k = cf_value_ref(m->u.map.keys[0]);
    cf_value *shared = cf_value_ref(m);
    assert_ptr_equal(shared, m);
    cf_value_destroy(m); /* one owner less: still there */
    cf_value_map_put_lit_long(old, "position", 5); /* an ordinary map takes literal puts too */
    assert_int_equal(cf_value_map_get_str(old, "position")->u.i, 5);
    assert_int_equal(e->u.i, 3);
    assert_string_equal(k->u.s.ptr, "recordCount");
    cf_value_destroy(shared); /* the last owner: frees the map and its entries */
    assert_int_equal(e->u.i, 3);
    assert_string_equal(k->u.s.ptr, "recordCount");
    cf_value_destroy(e);
    cf_value_destroy(k);
    cf_value_destroy(old);
    /* an empty one, and one grown far past its room */
    cf_value *z = cf_value_map_n(0);
    cf_value_destroy(z);
    cf_value *g = cf_value_map_n(2);
    char key[32];
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "k%d", i);
        if (i % 2) cf_value_map_put_lit_long(g, "lit", i);
        else cf_value_map_put(g, cf_value_string(key), cf_value_int64(i));
    }
    assert_int_equal(g->u.map.len, 40);
    assert_int_equal(cf_value_map_get_str(g, "lit")->u.i, 39);
    assert_int_equal(cf_value_map_get_str(g, "k38")->u.i, 38);
    cf_value_destroy(g);
}

/* Records drawn from a pool and given back are as new (every field of
 * cf_record_new's), whatever the record held; a value set with
 * cf_record_set_value_bytes reuses the memory of the value the shell had. A
 * NULL pool is plain cf_record_new / cf_record_destroy; a pool that never
 * handed out a record keeps nothing (a source that does not use it pays no
 * memory). */
static void test_record_pool(void **state) {
    (void)state;
    cf_record_pool *p = cf_record_pool_new(4);
    cf_record *r = cf_record_pool_get(p);
    cf_record_set_topic(r, "a-topic");
    r->partition = 3;
    r->timestamp = 99;
    r->ts_type = CF_TS_CREATE;
    cf_record_set_key(r, cf_schema_primitive(CF_STRING, true), cf_value_string("k"));
    cf_record_set_value_bytes(r, cf_schema_primitive(CF_BYTES, false), "0123456789", 10);
    assert_int_equal(r->value->type, CF_BYTES);
    assert_int_equal(r->value->u.s.len, 10);
    assert_memory_equal(r->value->u.s.ptr, "0123456789", 11); /* NUL-terminated */
    cf_record_add_header(r, "h", NULL, cf_value_string("x"));
    cf_value *off = cf_value_map_n(1);
    cf_value_map_put_lit_long(off, "seq", 1);
    cf_record_set_source(r, cf_value_string("p"), off);
    const cf_value *old_value = r->value;
    cf_record_pool_put(p, r);
    cf_record *r2 = cf_record_pool_get(p);
    assert_ptr_equal(r2, r); /* the same shell */
    cf_record *fresh = cf_record_new();
    assert_null(r2->topic);
    assert_int_equal(r2->partition, fresh->partition);
    assert_int_equal(r2->offset, fresh->offset);
    assert_int_equal(r2->timestamp, 0);
    assert_int_equal(r2->ts_type, CF_TS_NONE);
    assert_null(r2->key), assert_null(r2->key_schema), assert_null(r2->value), assert_null(r2->value_schema);
    assert_int_equal(r2->n_headers, 0);
    assert_null(r2->source_partition), assert_null(r2->source_offset);
    cf_record_destroy(fresh);
    cf_record_set_value_bytes(r2, NULL, "abc", 3); /* fits: the old value's memory */
    assert_ptr_equal(r2->value, old_value);
    assert_string_equal(r2->value->u.s.ptr, "abc");
    cf_record_set_value_string(r2, NULL, "a longer text than the ten bytes before, to need more room", 59);
    assert_int_equal(r2->value->type, CF_STRING);
    assert_string_equal(r2->value->u.s.ptr, "a longer text than the ten bytes before, to need more room");
    cf_record_set_value_bytes(r2, NULL, NULL, 0); /* the null value */
    assert_null(r2->value);
    /* a shared value is never reused: its other owner still reads it */
    cf_value *sv = cf_value_bytes("shared", 6);
    cf_record_set_value(r2, NULL, cf_value_ref(sv));
    cf_record_pool_put(p, r2);
    r2 = cf_record_pool_get(p);
    cf_record_set_value_bytes(r2, NULL, "zz", 2);
    assert_ptr_not_equal(r2->value, sv);
    assert_string_equal(sv->u.s.ptr, "shared");
    cf_value_destroy(sv);
    /* more given back than the pool keeps: the rest is freed (ASan: no leak) */
    cf_record *many[10];
    for (int i = 0; i < 10; i++) {
        many[i] = cf_record_pool_get(p);
        cf_record_set_value_bytes(many[i], NULL, "v", 1);
    }
    for (int i = 0; i < 10; i++) cf_record_pool_put(p, many[i]);
    cf_record_pool_put(p, r2);
    cf_record_pool_put(p, NULL);
    cf_record_pool_destroy(p);
    /* no pool */
    cf_record *n = cf_record_pool_get(NULL);
    cf_record_set_value_bytes(n, NULL, "x", 1);
    cf_record_pool_put(NULL, n);
    /* a pool that never handed out a record keeps none */
    cf_record_pool *q = cf_record_pool_new(4);
    cf_record *o = cf_record_new();
    cf_record_pool_put(q, o);
    assert_int_equal(cf_record_pool_size(q), 0);
    cf_record_pool_destroy(q);
}

static void test_buf_arena(void **state) {
    (void)state;
    cf_buf b = CF_BUF_INIT;
    for (int i = 0; i < 1000; i++) cf_buf_printf(&b, "%d,", i);
    assert_true(b.len > 1000);
    assert_int_equal(strncmp(b.data, "0,1,2,", 6), 0);
    cf_buf_free(&b);
    cf_arena *a = cf_arena_new(128);
    for (int i = 0; i < 100; i++) {
        char *p = cf_arena_alloc(a, 100);
        memset(p, 1, 100);
    }
    assert_true(cf_arena_used(a) >= 10000);
    cf_arena_reset(a);
    assert_int_equal(cf_arena_used(a), 0);
    assert_string_equal(cf_arena_strndup(a, "hello", 3), "hel");
    /* kept blocks come back after a reset: rounds of the same size reuse
     * them (each round's memory intact, ASan sees no overlap), an
     * oversized allocation gets a block of its own */
    for (int round = 0; round < 3; round++) {
        char *ps[40];
        for (int i = 0; i < 40; i++) {
            ps[i] = cf_arena_alloc(a, 100);
            memset(ps[i], 'a' + i % 26, 100);
        }
        char *big = cf_arena_alloc(a, 1000);
        memset(big, 'z', 1000);
        for (int i = 0; i < 40; i++) assert_int_equal(ps[i][99], 'a' + i % 26);
        assert_int_equal(big[999], 'z');
        cf_arena_reset(a);
        assert_int_equal(cf_arena_used(a), 0);
    }
    cf_arena_destroy(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate_ok_and_paths), cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_logical_names),         cmocka_unit_test(test_decimal_text),
        cmocka_unit_test(test_record_and_msg),        cmocka_unit_test(test_buf_arena),
        cmocka_unit_test(test_record_topic),          cmocka_unit_test(test_value_ref),
        cmocka_unit_test(test_value_map_n),           cmocka_unit_test(test_record_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
