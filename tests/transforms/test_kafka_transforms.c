/*
 * test_kafka_transforms.c - ReplaceField, RegexRouter, TimestampConverter and
 * the transform chain. Test names and vectors come from Kafka's
 * ReplaceFieldTest, RegexRouterTest and TimestampConverterTest
 * (connect/transforms/src/test/java/org/apache/kafka/connect/transforms/);
 * DATE_PLUS_TIME = 1970-01-02T00:00:01.234Z = 86401234 ms, formatted with
 * "yyyy MM dd HH mm ss SSS z" as "1970 01 02 00 00 01 234 UTC". Tests not in
 * Kafka (unix.precision, pattern letters, regex conversion limits, chain
 * syntax) are marked as ours and follow the documented Java semantics.
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

/* ------------------------------------------------------------ ReplaceField */

static void schemaless(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.ReplaceField$Value", "blacklist", "dont", "renames",
                         "abc:xyz,foo:bar", NULL);
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("dont"), cf_value_string("whatever"));
    cf_value_map_put(m, cf_value_string("abc"), cf_value_int32(42));
    cf_value_map_put(m, cf_value_string("foo"), cf_value_bool(true));
    cf_value_map_put(m, cf_value_string("etc"), cf_value_string("etc"));
    cf_record *out = run(t, value_rec(NULL, m));
    assert_int_equal(out->value->u.map.len, 3);
    assert_int_equal(cf_value_map_get_str(out->value, "xyz")->u.i, 42);
    assert_true(cf_value_map_get_str(out->value, "bar")->u.b);
    assert_string_equal(cf_value_map_get_str(out->value, "etc")->u.s.ptr, "etc");
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static cf_schema *rf_schema(void) {
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, "some.Value");
    cf_schema_add_field(s, "dont", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(s, "abc", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "foo", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema_add_field(s, "etc", cf_schema_primitive(CF_STRING, false), NULL);
    return s;
}

static cf_value *rf_value(cf_schema *s) {
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "dont", cf_value_string("whatever"), NULL);
    cf_value_struct_set(v, "abc", cf_value_int32(42), NULL);
    cf_value_struct_set(v, "foo", cf_value_bool(true), NULL);
    cf_value_struct_set(v, "etc", cf_value_string("etc"), NULL);
    return v;
}

static void withSchema(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.ReplaceField$Value", "whitelist", "abc,foo", "renames",
                         "abc:xyz,foo:bar", NULL);
    cf_schema *s = rf_schema();
    cf_record *out = run(t, value_rec(s, rf_value(s)));
    assert_int_equal(out->value_schema->n_fields, 2);
    assert_int_equal(cf_value_struct_get(out->value, "xyz")->u.i, 42);
    assert_true(cf_value_struct_get(out->value, "bar")->u.b);
    assert_string_equal(out->value_schema->name, "some.Value"); /* copySchemaBasics keeps the name */
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void withSchemaExcludeIncludeCurrentNames(void **st) {
    (void)st; /* ours: the current option names; exclude wins over include */
    cf_transform *t = mk("ReplaceField$Value", "include", "abc,foo,dont", "exclude", "dont", NULL);
    cf_schema *s = rf_schema();
    cf_record *out = run(t, value_rec(s, rf_value(s)));
    assert_int_equal(out->value_schema->n_fields, 2);
    assert_string_equal(out->value_schema->fields[0].name, "abc");
    assert_string_equal(out->value_schema->fields[1].name, "foo");
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void tombstoneWithSchema(void **st) {
    (void)st;
    cf_transform *t = mk("ReplaceField$Value", "exclude", "dont", NULL);
    cf_schema *s = rf_schema();
    cf_record *in = value_rec(s, NULL);
    cf_record *out = run(t, in);
    assert_ptr_equal(out, in);
    assert_null(out->value);
    assert_ptr_equal(out->value_schema, s);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void keyVariant(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.ReplaceField$Key", "renames", "abc:id", "include", "abc",
                         NULL);
    cf_schema *s = rf_schema();
    cf_record *r = cf_record_new();
    cf_record_set_key(r, s, rf_value(s));
    cf_record *out = run(t, r);
    assert_int_equal(out->key_schema->n_fields, 1);
    assert_int_equal(cf_value_struct_get(out->key, "id")->u.i, 42);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void replaceFieldErrors(void **st) {
    (void)st;
    cf_err err;
    assert_int_equal(mk_err("ReplaceField$Value", &err, "renames", "abc", NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "Invalid rename mapping"));
    /* a non-struct value with a schema: requireStruct's message */
    cf_transform *t = mk("ReplaceField$Value", "exclude", "x", NULL);
    cf_record *r = value_rec(cf_schema_primitive(CF_STRING, false), cf_value_string("s"));
    cf_record *out = (cf_record *)1;
    assert_int_equal(cf_transform_apply(t, r, &out, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Only Struct objects supported for [field replacement], found: String");
    assert_string_equal(r->value->u.s.ptr, "s"); /* unchanged, still ours */
    cf_record_destroy(r);
    cf_transform_destroy(t);
}

/* ------------------------------------------------------------ RegexRouter */

static char *route(const char *regex, const char *replacement, const char *topic) {
    cf_transform *t = mk("org.apache.kafka.connect.transforms.RegexRouter", "regex", regex, "replacement", replacement, NULL);
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, topic);
    cf_record *out = run(t, r);
    char *res = strdup(out->topic);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    return res;
}

#define ASSERT_ROUTE(want, regex, repl, topic)        \
    do {                                              \
        char *got_ = route(regex, repl, topic);       \
        assert_string_equal(got_, want);              \
        free(got_);                                   \
    } while (0)

static void staticReplacement(void **st) { (void)st; ASSERT_ROUTE("bar", "foo", "bar", "foo"); }
static void doesntMatch(void **st) { (void)st; ASSERT_ROUTE("orig", "foo", "bar", "orig"); }
static void identity(void **st) { (void)st; ASSERT_ROUTE("orig", "(.*)", "$1", "orig"); }
static void addPrefix(void **st) { (void)st; ASSERT_ROUTE("prefix-orig", "(.*)", "prefix-$1", "orig"); }
static void addSuffix(void **st) { (void)st; ASSERT_ROUTE("orig-suffix", "(.*)", "$1-suffix", "orig"); }
static void slice(void **st) {
    (void)st;
    ASSERT_ROUTE("index", "(.*)-(\\d\\d\\d\\d\\d\\d\\d\\d)", "$1", "index-20160117");
}

static void regexConversion(void **st) {
    (void)st; /* ours */
    ASSERT_ROUTE("customers", "dbserver1\\.public\\.(.*)", "$1", "dbserver1.public.customers");
    ASSERT_ROUTE("dbserver1Xpublic.customers", "dbserver1\\.public\\.(.*)", "$1", "dbserver1Xpublic.customers");
    ASSERT_ROUTE("a_b", "([\\w]+)-([a-z]+)", "$1_$2", "a-b");
    ASSERT_ROUTE("$x", "(x)", "\\$$1", "x");
    ASSERT_ROUTE("pre.x", "\\Qa.b\\E|(x)", "pre.$1", "x");
    ASSERT_ROUTE("pre.", "\\Qa.b\\E|(x)", "pre.$1", "a.b"); /* unmatched group: empty */
    ASSERT_ROUTE("axb", "\\Qa.b\\E|(x)", "pre$1", "axb");    /* \Q..\E is literal: no match */
    ASSERT_ROUTE("foo", "fo", "bar", "foo"); /* full match only */
    /* $12 with only one group: group 1 then the text "2" (Java) */
    ASSERT_ROUTE("t2", "(t)", "$12", "t");
    cf_err err;
    assert_int_equal(mk_err("RegexRouter", &err, "regex", "(?:a)", "replacement", "x", NULL), CF_ERR_CONFIG);
    assert_int_equal(mk_err("RegexRouter", &err, "regex", "a*?", "replacement", "x", NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "lazy"));
    assert_int_equal(mk_err("RegexRouter", &err, "regex", "(a)", "replacement", "$2", NULL), CF_ERR_CONFIG);
    assert_int_equal(mk_err("RegexRouter", &err, "regex", "(a)", "replacement", "${name}", NULL), CF_ERR_CONFIG);
    assert_int_equal(mk_err("RegexRouter", &err, "regex", "[a", "replacement", "x", NULL), CF_ERR_CONFIG);
    assert_int_equal(mk_err("RegexRouter", &err, "regex", "a", NULL), CF_ERR_CONFIG); /* replacement required */
}

/* ------------------------------------------------------------ TimestampConverter */

#define DATE_PLUS_TIME_UNIX 86401234LL
#define DATE_DAYS 1
#define TIME_MS 1234
#define STRING_DATE_FMT "yyyy MM dd HH mm ss SSS z"
#define DATE_PLUS_TIME_STRING "1970 01 02 00 00 01 234 UTC"
#define TSV "org.apache.kafka.connect.transforms.TimestampConverter$Value"

static void testConfigNoTargetType(void **st) {
    (void)st;
    cf_err err;
    assert_int_equal(mk_err(TSV, &err, NULL), CF_ERR_CONFIG);
}
static void testConfigInvalidTargetType(void **st) {
    (void)st;
    cf_err err;
    assert_int_equal(mk_err(TSV, &err, "target.type", "invalid", NULL), CF_ERR_CONFIG);
}
static void testConfigMissingFormat(void **st) {
    (void)st;
    cf_err err;
    assert_int_equal(mk_err(TSV, &err, "target.type", "string", NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "requires format option"));
}
static void testConfigInvalidFormat(void **st) {
    (void)st;
    cf_err err;
    assert_int_equal(mk_err(TSV, &err, "target.type", "string", "format", "bad-format", NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail, "Illegal pattern character 'b'"));
}

static cf_record *ts_apply(cf_transform *t, cf_schema *s, cf_value *v) { return run(t, value_rec(s, v)); }

static void testSchemalessTimestampConversions(void **st) {
    (void)st;
    /* schemaless Timestamp has no form of its own here: an int64 is a unix time
     * (testSchemalessUnixToTimestamp); results are physical values */
    cf_transform *t = mk(TSV, "target.type", "Timestamp", NULL);
    cf_record *out = ts_apply(t, NULL, cf_value_int64(DATE_PLUS_TIME_UNIX));
    assert_null(out->value_schema);
    assert_int_equal(out->value->u.i, DATE_PLUS_TIME_UNIX);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = mk(TSV, "target.type", "Date", NULL); /* testSchemalessTimestampToDate */
    out = ts_apply(t, NULL, cf_value_int64(DATE_PLUS_TIME_UNIX));
    assert_int_equal(out->value->type, CF_INT32);
    assert_int_equal(out->value->u.i, DATE_DAYS);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = mk(TSV, "target.type", "Time", NULL); /* testSchemalessTimestampToTime */
    out = ts_apply(t, NULL, cf_value_int64(DATE_PLUS_TIME_UNIX));
    assert_int_equal(out->value->u.i, TIME_MS);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = mk(TSV, "target.type", "string", "format", STRING_DATE_FMT, NULL); /* testSchemalessTimestampToString */
    out = ts_apply(t, NULL, cf_value_int64(DATE_PLUS_TIME_UNIX));
    assert_string_equal(out->value->u.s.ptr, DATE_PLUS_TIME_STRING);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = mk(TSV, "target.type", "Timestamp", "format", STRING_DATE_FMT, NULL); /* testSchemalessStringToTimestamp */
    out = ts_apply(t, NULL, cf_value_string(DATE_PLUS_TIME_STRING));
    assert_int_equal(out->value->u.i, DATE_PLUS_TIME_UNIX);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void testWithSchemaConversions(void **st) {
    (void)st;
    struct {
        const char *target;
        cf_schema *(*in_schema)(void);
        int64_t in;
        cf_schema *(*want_schema)(void);
        int64_t want;
    } cases[] = {
        {"Timestamp", cf_schema_timestamp, DATE_PLUS_TIME_UNIX, cf_schema_timestamp, DATE_PLUS_TIME_UNIX}, /* testWithSchemaIdentity */
        {"Date", cf_schema_timestamp, DATE_PLUS_TIME_UNIX, cf_schema_date, DATE_DAYS},     /* testWithSchemaTimestampToDate */
        {"Time", cf_schema_timestamp, DATE_PLUS_TIME_UNIX, cf_schema_time, TIME_MS},       /* testWithSchemaTimestampToTime */
        {"Timestamp", cf_schema_date, DATE_DAYS, cf_schema_timestamp, 86400000LL},         /* testWithSchemaDateToTimestamp */
        {"Timestamp", cf_schema_time, TIME_MS, cf_schema_timestamp, TIME_MS},              /* testWithSchemaTimeToTimestamp */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cf_transform *t = mk(TSV, "target.type", cases[i].target, NULL);
        cf_schema *in_s = cases[i].in_schema();
        cf_value *v = in_s->type == CF_INT32 ? cf_value_int32((int32_t)cases[i].in) : cf_value_int64(cases[i].in);
        cf_record *out = ts_apply(t, in_s, v);
        cf_schema *ws = cases[i].want_schema();
        assert_true(cf_schema_equal(out->value_schema, ws));
        assert_int_equal(out->value->u.i, cases[i].want);
        cf_schema_unref(ws);
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
    /* testWithSchemaTimestampToUnix */
    cf_transform *t = mk(TSV, "target.type", "unix", NULL);
    cf_record *out = ts_apply(t, cf_schema_timestamp(), cf_value_int64(DATE_PLUS_TIME_UNIX));
    assert_int_equal(out->value_schema->type, CF_INT64);
    assert_null(out->value_schema->name);
    assert_int_equal(out->value->u.i, DATE_PLUS_TIME_UNIX);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* testWithSchemaTimestampToString */
    t = mk(TSV, "target.type", "string", "format", STRING_DATE_FMT, NULL);
    out = ts_apply(t, cf_schema_timestamp(), cf_value_int64(DATE_PLUS_TIME_UNIX));
    assert_int_equal(out->value_schema->type, CF_STRING);
    assert_string_equal(out->value->u.s.ptr, DATE_PLUS_TIME_STRING);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* testWithSchemaUnixToTimestamp */
    t = mk(TSV, "target.type", "Timestamp", NULL);
    out = ts_apply(t, cf_schema_primitive(CF_INT64, false), cf_value_int64(DATE_PLUS_TIME_UNIX));
    assert_true(cf_schema_is_logical(out->value_schema, CF_LOGICAL_TIMESTAMP));
    assert_int_equal(out->value->u.i, DATE_PLUS_TIME_UNIX);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* testWithSchemaStringToTimestamp */
    t = mk(TSV, "target.type", "Timestamp", "format", STRING_DATE_FMT, NULL);
    out = ts_apply(t, cf_schema_primitive(CF_STRING, false), cf_value_string(DATE_PLUS_TIME_STRING));
    assert_int_equal(out->value->u.i, DATE_PLUS_TIME_UNIX);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void testSchemalessFieldConversion(void **st) {
    (void)st;
    cf_transform *t = mk(TSV, "target.type", "Date", "field", "ts", NULL);
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("ts"), cf_value_int64(DATE_PLUS_TIME_UNIX));
    cf_record *out = ts_apply(t, NULL, m);
    assert_int_equal(cf_value_map_get_str(out->value, "ts")->u.i, DATE_DAYS);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void testWithSchemaFieldConversion(void **st) {
    (void)st;
    cf_transform *t = mk(TSV, "target.type", "Timestamp", "field", "ts", NULL);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "ts", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(s, "other", cf_schema_primitive(CF_STRING, false), NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "ts", cf_value_int64(DATE_PLUS_TIME_UNIX), NULL);
    cf_value_struct_set(v, "other", cf_value_string("test"), NULL);
    cf_record *out = ts_apply(t, s, v);
    cf_schema *want = cf_schema_new_struct();
    cf_schema_add_field(want, "ts", cf_schema_timestamp(), NULL);
    cf_schema_add_field(want, "other", cf_schema_primitive(CF_STRING, false), NULL);
    assert_true(cf_schema_equal(out->value_schema, want));
    assert_int_equal(cf_value_struct_get(out->value, "ts")->u.i, DATE_PLUS_TIME_UNIX);
    assert_string_equal(cf_value_struct_get(out->value, "other")->u.s.ptr, "test");
    cf_schema_unref(want);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void testKey(void **st) {
    (void)st;
    cf_transform *t = mk("org.apache.kafka.connect.transforms.TimestampConverter$Key", "target.type", "Timestamp", NULL);
    cf_record *r = cf_record_new();
    cf_record_set_key(r, NULL, cf_value_int64(DATE_PLUS_TIME_UNIX));
    cf_record *out = run(t, r);
    assert_null(out->key_schema);
    assert_int_equal(out->key->u.i, DATE_PLUS_TIME_UNIX);
    cf_record_destroy(out);
    cf_transform_destroy(t);
}

static void unixPrecisionAndPatterns(void **st) {
    (void)st; /* ours: Java TimeUnit conversions and SimpleDateFormat letters */
    struct { const char *prec; int64_t unix_in; int64_t ms; } p[] = {
        {"seconds", 86401, 86401000}, {"microseconds", 86401234567LL, 86401234}, {"nanoseconds", 86401234567891LL, 86401234},
    };
    for (size_t i = 0; i < 3; i++) {
        cf_transform *t = mk(TSV, "target.type", "Timestamp", "unix.precision", p[i].prec, NULL);
        cf_record *out = ts_apply(t, cf_schema_primitive(CF_INT64, false), cf_value_int64(p[i].unix_in));
        assert_int_equal(out->value->u.i, p[i].ms);
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
    cf_transform *t = mk(TSV, "target.type", "unix", "unix.precision", "microseconds", NULL);
    cf_record *out = ts_apply(t, cf_schema_timestamp(), cf_value_int64(DATE_PLUS_TIME_UNIX));
    assert_int_equal(out->value->u.i, DATE_PLUS_TIME_UNIX * 1000);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* 2024-02-29T13:05:09.007Z = 1709211909007 ms */
    struct { const char *fmt; const char *want; } f[] = {
        {"yyyy-MM-dd'T'HH:mm:ss.SSSX", "2024-02-29T13:05:09.007Z"},
        {"EEE, d MMM yyyy hh:mm a", "Thu, 29 Feb 2024 01:05 PM"},
        {"EEEE MMMM dd yy D", "Thursday February 29 24 60"},
        {"yyyyMMddHHmmss Z", "20240229130509 +0000"},
        {"'quoted ''text''' k K", "quoted 'text' 13 1"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        t = mk(TSV, "target.type", "string", "format", f[i].fmt, NULL);
        out = ts_apply(t, cf_schema_timestamp(), cf_value_int64(1709211909007LL));
        assert_string_equal(out->value->u.s.ptr, f[i].want);
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
    /* parsing: abutting fields, names, offsets, lenient overflow */
    struct { const char *fmt; const char *in; int64_t want; } q[] = {
        {"yyyyMMddHHmmss", "20240229130509", 1709211909000LL},
        {"yyyy-MM-dd'T'HH:mm:ss.SSSX", "2024-02-29T13:05:09.007Z", 1709211909007LL},
        {"yyyy-MM-dd'T'HH:mm:ssXXX", "2024-02-29T15:05:09+02:00", 1709211909000LL},
        {"dd MMM yyyy hh:mm a", "29 feb 2024 01:05 PM", 1709211900000LL},
        {"yyyy-MM-dd", "2024-13-01", 1735689600000LL}, /* month 13 = January 2025 */
        {"yyyy-MM-dd", "1969-12-31", -86400000LL},
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        t = mk(TSV, "target.type", "Timestamp", "format", q[i].fmt, NULL);
        out = ts_apply(t, cf_schema_primitive(CF_STRING, false), cf_value_string(q[i].in));
        assert_int_equal(out->value->u.i, q[i].want);
        cf_record_destroy(out);
        cf_transform_destroy(t);
    }
    /* negative times: Date floors to the previous midnight, Time is the ms of that day */
    t = mk(TSV, "target.type", "Date", NULL);
    out = ts_apply(t, cf_schema_timestamp(), cf_value_int64(-1));
    assert_int_equal(out->value->u.i, -1);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    t = mk(TSV, "target.type", "Time", NULL);
    out = ts_apply(t, cf_schema_timestamp(), cf_value_int64(-1));
    assert_int_equal(out->value->u.i, 86399999);
    cf_record_destroy(out);
    cf_transform_destroy(t);
    /* errors: a string that does not match, an unsupported letter, a wrong input type */
    t = mk(TSV, "target.type", "Timestamp", "format", "yyyy-MM-dd", NULL);
    cf_record *r = value_rec(cf_schema_primitive(CF_STRING, false), cf_value_string("hello"));
    cf_err err;
    assert_int_equal(cf_transform_apply(t, r, &out, &err), CF_ERR_SCHEMA);
    assert_string_equal(err.message, "Could not parse timestamp: value (hello) does not match pattern (yyyy-MM-dd)");
    cf_record_destroy(r);
    r = value_rec(cf_schema_primitive(CF_BOOLEAN, false), cf_value_bool(true));
    assert_int_equal(cf_transform_apply(t, r, &out, &err), CF_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "does not correspond to a known timestamp type format"));
    cf_record_destroy(r);
    cf_transform_destroy(t);
    assert_int_equal(mk_err(TSV, &err, "target.type", "string", "format", "YYYY", NULL), CF_ERR_CONFIG);
}

/* ------------------------------------------------------------ chain */

static void chainSyntax(void **st) {
    (void)st; /* ours: Connect's transforms=... syntax */
    cf_props *cc = cf_props_new();
    cf_transform_chain *c = (cf_transform_chain *)1;
    cf_err err;
    assert_int_equal(cf_transform_chain_new(cc, &c, &err), CF_OK);
    assert_null(c); /* no transforms */
    cf_props_set(cc, "transforms", " route , drop ");
    cf_props_set(cc, "transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter");
    cf_props_set(cc, "transforms.route.regex", "dbserver1\\.public\\.(.*)");
    cf_props_set(cc, "transforms.route.replacement", "pg_$1");
    cf_props_set(cc, "transforms.drop.type", "org.apache.kafka.connect.transforms.ReplaceField$Value");
    cf_props_set(cc, "transforms.drop.exclude", "secret");
    cf_props_set(cc, "connector.class", "ignored");
    assert_int_equal(cf_transform_chain_new(cc, &c, &err), CF_OK);
    assert_int_equal(cf_transform_chain_len(c), 2);
    assert_string_equal(cf_transform_chain_alias(c, 0), "route");
    cf_schema *s = cf_schema_new_struct();
    cf_schema_add_field(s, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "secret", cf_schema_primitive(CF_STRING, true), NULL);
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "id", cf_value_int32(7), NULL);
    cf_record *r = value_rec(s, v);
    cf_record_set_topic(r, "dbserver1.public.customers");
    cf_record *out = NULL;
    assert_int_equal(cf_transform_chain_apply(c, r, &out, &err), CF_OK);
    assert_string_equal(out->topic, "pg_customers");
    assert_int_equal(out->value_schema->n_fields, 1);
    cf_record_destroy(out);
    /* an error inside the chain names the alias; the record is freed */
    r = value_rec(cf_schema_primitive(CF_STRING, false), cf_value_string("x"));
    assert_int_equal(cf_transform_chain_apply(c, r, &out, &err), CF_ERR_SCHEMA);
    assert_null(out);
    assert_string_equal(err.where, "transforms.drop");
    cf_transform_chain_destroy(c);

    /* configuration errors name the key */
    cf_props_set(cc, "transforms.drop.type", "com.example.Nope");
    assert_int_equal(cf_transform_chain_new(cc, &c, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "transforms.drop"));
    cf_props_set(cc, "transforms.drop.type", "ReplaceField$Value");
    cf_props_set(cc, "transforms.drop.bogus", "1");
    assert_int_equal(cf_transform_chain_new(cc, &c, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "transforms.drop"));
    cf_props_set(cc, "transforms.drop.bogus", NULL);
    /* a predicate alias that `predicates` does not list (test_connect_smts.c has the rest) */
    cf_props_set(cc, "transforms.drop.predicate", "isTombstone");
    assert_int_equal(cf_transform_chain_new(cc, &c, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "is not a predicate of this connector"));
    cf_props_set(cc, "transforms.drop.predicate", NULL);
    cf_props_set(cc, "transforms", "route,missing");
    assert_int_equal(cf_transform_chain_new(cc, &c, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "transforms.missing.type"));
    cf_props_destroy(cc);
    /* every plugin: a class name, and a table that passes the config self-check */
    for (const cf_transform_plugin *const *pl = cf_transform_plugins(); *pl; pl++) {
        assert_ptr_equal(cf_transform_find((*pl)->aliases[0]), *pl);
        assert_int_equal(cf_cfg_table_check((*pl)->config, NULL), CF_OK);
    }
    /* a NULL chain passes records through */
    r = cf_record_new();
    assert_int_equal(cf_transform_chain_apply(NULL, r, &out, &err), CF_OK);
    assert_ptr_equal(out, r);
    cf_record_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(schemaless),
        cmocka_unit_test(withSchema),
        cmocka_unit_test(withSchemaExcludeIncludeCurrentNames),
        cmocka_unit_test(tombstoneWithSchema),
        cmocka_unit_test(keyVariant),
        cmocka_unit_test(replaceFieldErrors),
        cmocka_unit_test(staticReplacement),
        cmocka_unit_test(doesntMatch),
        cmocka_unit_test(identity),
        cmocka_unit_test(addPrefix),
        cmocka_unit_test(addSuffix),
        cmocka_unit_test(slice),
        cmocka_unit_test(regexConversion),
        cmocka_unit_test(testConfigNoTargetType),
        cmocka_unit_test(testConfigInvalidTargetType),
        cmocka_unit_test(testConfigMissingFormat),
        cmocka_unit_test(testConfigInvalidFormat),
        cmocka_unit_test(testSchemalessTimestampConversions),
        cmocka_unit_test(testWithSchemaConversions),
        cmocka_unit_test(testSchemalessFieldConversion),
        cmocka_unit_test(testWithSchemaFieldConversion),
        cmocka_unit_test(testKey),
        cmocka_unit_test(unixPrecisionAndPatterns),
        cmocka_unit_test(chainSyntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
