/*
 * test_statements.c - the design's CQL-style management statements (CREATE
 * / DROP DATA_SINK, CREATE / DROP DATA_SOURCE): every form, IF [NOT]
 * EXISTS, quoting, several statements in one input, and where a bad input
 * is reported.
 *
 * Oracles: the statements of the Sidecar CDC design as written in its text
 * (../shared/seeds/002: CREATE DATA_SINK order_events_sink WITH uri =
 * 'kafka://kafka:9092/order-events' AND options = {...}; CREATE DATA_SOURCE
 * cdc ON TABLE keyspace.orders WITH sink = ... ; DROP DATA_SOURCE ...), and
 * CQL's lexical rules (Cassandra's Lexer.g and the CQL reference): keywords
 * in any case, unquoted identifiers folded to lower case, "quoted" ones kept
 * with "" for a quote, string literals with '' for a quote, comments --, //
 * and block comments. The mapping of a sink and data sources to the
 * connector's settings is ours (docs/operations.md): checked against what
 * the same keys give through the PUT body's mapping.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/sidecar.h"
#include "../../src/sidecar/sidecar_internal.h"

static void parse_ok(const char *text, cf_sc_stmts *s) {
    cf_err err;
    cf_err_clear(&err);
    if (cf_sc_stmts_parse(text, strlen(text), s, &err) != CF_OK) fail_msg("%s: %s", text, err.message);
}

/* The seed's own statements, as the design writes them. */
static void test_design_statements(void **state) {
    (void)state;
    const char *text = "-- Create a Kafka sink\n"
                       "CREATE DATA_SINK order_events_sink\n"
                       "WITH uri = 'kafka://kafka:9092/order-events'\n"
                       "AND options = {\n"
                       "    'schema.registry.url': 'http://schema-registry:8081',\n"
                       "    'value.serializer': 'avro'\n"
                       "};\n"
                       "\n"
                       "-- Enable CDC streaming for a table\n"
                       "CREATE DATA_SOURCE cdc ON TABLE keyspace.orders\n"
                       "WITH sink = order_events_sink\n"
                       "AND options = {\n"
                       "    'consistency.level': 'LOCAL_QUORUM'\n"
                       "};\n"
                       "\n"
                       "-- Disable CDC streaming\n"
                       "DROP DATA_SOURCE cdc ON TABLE keyspace.orders;\n";
    cf_sc_stmts s;
    parse_ok(text, &s);
    assert_int_equal(s.n, 3);
    cf_sc_stmt *a = &s.v[0], *b = &s.v[1], *c = &s.v[2];
    assert_int_equal(a->kind, CF_SC_CREATE_SINK);
    assert_false(a->if_exists);
    assert_string_equal(a->name, "order_events_sink");
    assert_string_equal(a->uri, "kafka://kafka:9092/order-events");
    assert_string_equal(a->servers, "kafka:9092");
    assert_string_equal(a->topic, "order-events");
    assert_int_equal(cf_props_count(a->options), 2);
    assert_string_equal(cf_props_key_at(a->options, 0), "schema.registry.url");
    assert_string_equal(cf_props_value_at(a->options, 0), "http://schema-registry:8081");
    assert_string_equal(cf_props_get(a->options, "value.serializer"), "avro");
    assert_int_equal(a->line, 2);
    assert_int_equal(a->column, 1);
    assert_int_equal(b->kind, CF_SC_CREATE_SOURCE);
    assert_string_equal(b->keyspace, "keyspace");
    assert_string_equal(b->table, "orders");
    assert_string_equal(b->sink, "order_events_sink");
    assert_string_equal(cf_props_get(b->options, "consistency.level"), "LOCAL_QUORUM");
    assert_null(b->name);
    assert_int_equal(b->line, 10);
    assert_int_equal(c->kind, CF_SC_DROP_SOURCE);
    assert_string_equal(c->keyspace, "keyspace");
    assert_string_equal(c->table, "orders");
    assert_null(c->options);
    assert_int_equal(c->line, 17);
    cf_sc_stmts_free(&s);
}

static void test_every_form(void **state) {
    (void)state;
    cf_sc_stmts s;
    parse_ok("create data_sink IF NOT EXISTS s1 with URI = 'kafka://k1:9092,k2:9093'", &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.v[0].kind, CF_SC_CREATE_SINK);
    assert_true(s.v[0].if_exists);
    assert_string_equal(s.v[0].servers, "k1:9092,k2:9093");
    assert_string_equal(s.v[0].topic, "");
    assert_int_equal(cf_props_count(s.v[0].options), 0);
    cf_sc_stmts_free(&s);

    parse_ok("Create Data_Source If Not Exists CDC on table ks.t with options = {'a': 1, 'b': -2.5e3, 'c': TRUE, "
             "'d': false} and SINK = s1;",
             &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.v[0].kind, CF_SC_CREATE_SOURCE);
    assert_true(s.v[0].if_exists);
    assert_string_equal(s.v[0].sink, "s1");
    assert_string_equal(cf_props_get(s.v[0].options, "a"), "1");
    assert_string_equal(cf_props_get(s.v[0].options, "b"), "-2.5e3");
    assert_string_equal(cf_props_get(s.v[0].options, "c"), "true");
    assert_string_equal(cf_props_get(s.v[0].options, "d"), "false");
    cf_sc_stmts_free(&s);

    parse_ok("DROP DATA_SOURCE IF EXISTS cdc ON TABLE ks.t", &s);
    assert_int_equal(s.v[0].kind, CF_SC_DROP_SOURCE);
    assert_true(s.v[0].if_exists);
    cf_sc_stmts_free(&s);
    parse_ok("drop data_source cdc on table ks.t", &s);
    assert_false(s.v[0].if_exists);
    cf_sc_stmts_free(&s);

    parse_ok("DROP DATA_SINK IF EXISTS s1;", &s);
    assert_int_equal(s.v[0].kind, CF_SC_DROP_SINK);
    assert_true(s.v[0].if_exists);
    assert_string_equal(s.v[0].name, "s1");
    assert_null(s.v[0].options);
    cf_sc_stmts_free(&s);
    parse_ok("DROP DATA_SINK s1", &s);
    assert_false(s.v[0].if_exists);
    cf_sc_stmts_free(&s);

    /* empty options, the placeholders of topic.format, embedded */
    parse_ok("CREATE DATA_SINK e WITH uri = 'kafka://embedded/cdc.{keyspace}.{table}' AND options = {}", &s);
    assert_string_equal(s.v[0].servers, "embedded");
    assert_string_equal(s.v[0].topic, "cdc.{keyspace}.{table}");
    assert_int_equal(cf_props_count(s.v[0].options), 0);
    cf_sc_stmts_free(&s);
}

static void test_quoting(void **state) {
    (void)state;
    cf_sc_stmts s;
    /* unquoted identifiers are folded, quoted ones kept ("" is a quote);
     * '' in a string is a quote */
    parse_ok("CREATE DATA_SINK \"My\"\"Sink\" WITH uri = 'kafka://h:1/t' AND options = {'it''s': 'a ''b'' c', "
             "'ünï': 'çødé'}; CREATE DATA_SOURCE cdc ON TABLE \"KS\".\"Tab le\" WITH sink = \"My\"\"Sink\"; "
             "DROP DATA_SOURCE cdc ON TABLE Ks.Tab",
             &s);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.v[0].name, "My\"Sink");
    assert_string_equal(cf_props_get(s.v[0].options, "it's"), "a 'b' c");
    assert_string_equal(cf_props_get(s.v[0].options, "ünï"), "çødé");
    assert_string_equal(s.v[1].keyspace, "KS");
    assert_string_equal(s.v[1].table, "Tab le");
    assert_string_equal(s.v[1].sink, "My\"Sink");
    assert_string_equal(s.v[2].keyspace, "ks");
    assert_string_equal(s.v[2].table, "tab");
    /* the JSON form keeps everything */
    cf_buf b = CF_BUF_INIT;
    cf_sc_stmts_json(&s, &b);
    assert_non_null(strstr(b.data, "{\"statement\":\"CREATE DATA_SINK\",\"if_not_exists\":false,\"name\":\"My\\\"Sink\","
                                   "\"uri\":\"kafka://h:1/t\",\"servers\":\"h:1\",\"topic\":\"t\",\"options\":{\"it's\":"
                                   "\"a 'b' c\",\"ünï\":\"çødé\"},\"line\":1,\"column\":1}"));
    assert_non_null(strstr(b.data, "\"statement\":\"DROP DATA_SOURCE\",\"if_exists\":false,\"type\":\"cdc\","
                                   "\"keyspace\":\"ks\",\"table\":\"tab\""));
    cf_buf_free(&b);
    cf_sc_stmts_free(&s);
}

static void test_several_and_comments(void **state) {
    (void)state;
    cf_sc_stmts s;
    parse_ok(";; /* a block\n comment */ DROP DATA_SINK a; // one\n DROP DATA_SINK b ;\n\t-- two\n DROP DATA_SINK c;;",
             &s);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.v[0].name, "a");
    assert_string_equal(s.v[1].name, "b");
    assert_string_equal(s.v[2].name, "c");
    assert_int_equal(s.v[0].line, 2);
    assert_int_equal(s.v[0].column, 13);
    assert_int_equal(s.v[1].line, 3);
    assert_int_equal(s.v[1].column, 2);
    assert_int_equal(s.v[2].line, 5);
    assert_int_equal(s.v[2].column, 2);
    cf_sc_stmts_free(&s);
    /* a comment at the very end, no newline */
    parse_ok("DROP DATA_SINK a -- done", &s);
    assert_int_equal(s.n, 1);
    cf_sc_stmts_free(&s);
}

/* Bad inputs: the line, the column (in characters) and the token. */
static void test_error_positions(void **state) {
    (void)state;
    static const struct {
        const char *text;
        int line, col;
        const char *msg; /* in the message */
    } t[] = {
        {"CREATE DATA_SINK s1 uri = 'kafka://h:1/t' AND options = {}", 1, 21, "expected WITH, found \"uri\""},
        {"CREATE DATA_SINK s1 WITH uri = 'kafka://h:1/t' options = {}", 1, 48,
         "expected \";\" or the end of the input, found \"options\""},
        {"CREATE DATA_SINK s1 WITH uri = 'kafka://h:1/t' AND AND", 1, 52, "expected uri or options, found \"AND\""},
        {"CREATE DATA_SINKS s1", 1, 8, "expected DATA_SINK or DATA_SOURCE, found \"DATA_SINKS\""},
        {"SELECT * FROM t", 1, 1, "expected CREATE or DROP, found \"SELECT\""},
        {"", 1, 1, "expected a statement (CREATE or DROP), found end of input"},
        {" ;\n  ;", 2, 4, "expected a statement (CREATE or DROP), found end of input"},
        {"DROP DATA_SOURCE cdc ON TABLE orders", 1, 37, "expected \".\" (the table as keyspace.table), found end of input"},
        {"DROP DATA_SOURCE kafka ON TABLE ks.t", 1, 18, "unknown data source type \"kafka\""},
        {"DROP DATA_SOURCE IF NOT EXISTS cdc ON TABLE ks.t", 1, 21, "expected EXISTS, found \"NOT\""},
        {"CREATE DATA_SINK IF EXISTS s WITH uri = 'kafka://h/t'", 1, 21, "expected NOT, found \"EXISTS\""},
        {"CREATE DATA_SOURCE cdc ON TABLE ks.t WITH options = {'a': 'b'}", 1, 63, "the data source has no sink"},
        {"CREATE DATA_SINK s WITH options = {'a': 'b'}", 1, 45, "the sink has no uri"},
        {"CREATE DATA_SINK s WITH uri = 'http://h:1/t'", 1, 31, "invalid uri \"'http://h:1/t'\": it does not start with kafka://"},
        {"CREATE DATA_SINK s WITH uri = 'kafka:///t'", 1, 31, "it names no Kafka server"},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/a b'", 1, 31, "a topic has only letters"},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:,x:2/t'", 1, 31, "a server ends with ':' and no port"},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND uri = 'kafka://h:2/t'", 1, 51, "property uri given twice"},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND options = {'a': 'b', 'a': 'c'}", 1, 72,
         "option 'a' given twice"},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND options = {'a' 'b'}", 1, 66,
         "expected \":\" (between an option's name and value), found \"'b'\""},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND options = {'a': 'b',}", 1, 71,
         "expected an option name as a string literal ('key'), found \"}\""},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND options = {a: 'b'}", 1, 62, "found \"a\""},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND options = {'a': b}", 1, 67,
         "expected an option value (a string literal, a number, true or false), found \"b\""},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND options = 'x'", 1, 61, "expected \"{\""},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t\n", 1, 31, "unterminated string literal"},
        {"DROP DATA_SINK \"ab", 1, 16, "unterminated quoted identifier"},
        {"DROP DATA_SINK \"\"", 1, 16, "an empty quoted identifier"},
        {"DROP DATA_SINK a /* never closed", 1, 18, "unterminated comment"},
        {"DROP DATA_SINK a;\nDROP DATA_SINK b\nDROP DATA_SINK c", 3, 1,
         "expected \";\" or the end of the input, found \"DROP\""},
        {"CREATE DATA_SOURCE cdc ON TABLE ks.t WITH sink = 'quoted'", 1, 50, "expected the sink's name, found \"'quoted'\""},
        {"DROP DATA_SINK s ^", 1, 18, "unexpected character \"^\""},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND options = {'é': 'ü', 'x' = 1}", 1, 76, "expected \":\""},
        {"CREATE DATA_SINK s WITH uri = 'kafka://h:1/t' AND options = {'a': '\xff'}", 1, 68, "invalid UTF-8"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        cf_sc_stmts s;
        cf_err err;
        cf_err_clear(&err);
        cf_code rc = cf_sc_stmts_parse(t[i].text, strlen(t[i].text), &s, &err);
        if (rc != CF_ERR_CONFIG) fail_msg("%zu: %s: accepted", i, t[i].text);
        char pre[64];
        snprintf(pre, sizeof pre, "line %d, column %d: ", t[i].line, t[i].col);
        if (strncmp(err.message, pre, strlen(pre)) != 0 || !strstr(err.message, t[i].msg) ||
            s.err_line != t[i].line || s.err_column != t[i].col)
            fail_msg("%zu: %s\n  got  %s (%d:%d)\n  want %s%s", i, t[i].text, err.message, s.err_line, s.err_column,
                     pre, t[i].msg);
        assert_true(err.hint[0] != 0);
        cf_sc_stmts_free(&s);
    }
}

/* The hint is the syntax of the statement being read. */
static void test_error_hint(void **state) {
    (void)state;
    cf_sc_stmts s;
    cf_err err;
    const char *text = "CREATE DATA_SINK s1 AND uri = 'kafka://h:1/t'";
    assert_int_equal(cf_sc_stmts_parse(text, strlen(text), &s, &err), CF_ERR_CONFIG);
    assert_string_equal(err.message, "line 1, column 21: expected WITH, found \"AND\"");
    assert_non_null(strstr(err.hint, "CREATE DATA_SINK [IF NOT EXISTS] name WITH uri = 'kafka://host:port/topic'"));
    assert_string_equal(err.where, "line 1, column 21");
    cf_sc_stmts_free(&s);
    text = "DROP DATA_SOURCE cdc ON ks.t";
    assert_int_equal(cf_sc_stmts_parse(text, strlen(text), &s, &err), CF_ERR_CONFIG);
    assert_string_equal(err.message, "line 1, column 25: expected TABLE, found \"ks\"");
    assert_string_equal(err.hint, "DROP DATA_SOURCE [IF EXISTS] cdc ON TABLE keyspace.table");
    cf_sc_stmts_free(&s);
    /* a long token is shortened, a NUL byte is an error at its place */
    char big[300];
    memset(big, 'x', sizeof big);
    memcpy(big, "DROP DATA_SINK a ", 17);
    big[sizeof big - 1] = 0;
    assert_int_equal(cf_sc_stmts_parse(big, strlen(big), &s, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "found \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\""));
    cf_sc_stmts_free(&s);
    /* a map is bounded (1000 options) */
    cf_buf m = CF_BUF_INIT;
    cf_buf_append_str(&m, "CREATE DATA_SINK s WITH uri = 'kafka://h/t' AND options = {");
    for (int i = 0; i < 1001; i++) cf_buf_printf(&m, "%s'k%d': %d", i ? ", " : "", i, i);
    cf_buf_append_str(&m, "}");
    assert_int_equal(cf_sc_stmts_parse(m.data, m.len, &s, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "more than 1000 options in one map"));
    cf_sc_stmts_free(&s);
    m.len -= strlen(", 'k1000': 1000}");
    cf_buf_append_str(&m, "}");
    assert_int_equal(cf_sc_stmts_parse(m.data, m.len, &s, &err), CF_OK);
    assert_int_equal(cf_props_count(s.v[0].options), 1000);
    cf_sc_stmts_free(&s);
    cf_buf_free(&m);
    const char nul[] = "DROP DATA_SINK 'a\0b'";
    assert_int_equal(cf_sc_stmts_parse(nul, sizeof nul - 1, &s, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "line 1, column 18: a NUL byte"));
    cf_sc_stmts_free(&s);
    cf_sc_stmts_free(NULL);
}

/* A sink and two data sources as the connector's settings: the same keys a
 * PUT body would carry, mapped by the PUT body's mapping. */
static void test_compose(void **state) {
    (void)state;
    cf_props *start = cf_props_new();
    cf_props_set(start, "cdc_raw.dirs", "/n1,/n2");
    cf_props_set(start, "tables", "ks.ignored");
    cf_sc_service *svc = cf_sc_service_new("cdc", NULL, start, NULL);
    cf_props *c = cf_sc_service_compose(svc, svc->settings);
    assert_int_equal(cf_props_count(c), 2); /* no data source: the settings as they are */
    assert_string_equal(cf_props_get(c, "tables"), "ks.ignored");
    cf_props_destroy(c);

    cf_sc_stmts st;
    parse_ok("CREATE DATA_SINK k WITH uri = 'kafka://b1:9092,b2:9092/cdc.{table}' AND options = {"
             "'value.serializer': 'json', 'schema.registry.url': 'http://r:8081', 'acks': 'all', "
             "'producer.override.linger.ms': 5, 'key.converter.schemas.enable': false}",
             &st);
    svc->sinks = cf_xcalloc(1, sizeof *svc->sinks);
    svc->n_sinks = 1;
    svc->sinks[0] = (cf_sc_sink){cf_xstrdup("k"), cf_xstrdup(st.v[0].uri), cf_xstrdup(st.v[0].servers),
                                 cf_xstrdup(st.v[0].topic), cf_props_clone(st.v[0].options)};
    cf_sc_stmts_free(&st);
    parse_ok("CREATE DATA_SOURCE cdc ON TABLE ks.a WITH sink = k AND options = {'consistency.level': 'ALL'};"
             "CREATE DATA_SOURCE cdc ON TABLE \"Ks\".b WITH sink = k AND options = {'replication.factor': 3}",
             &st);
    svc->sources = cf_xcalloc(2, sizeof *svc->sources);
    svc->n_sources = 2;
    for (size_t i = 0; i < 2; i++)
        svc->sources[i] = (cf_sc_source){cf_xstrdup(st.v[i].keyspace), cf_xstrdup(st.v[i].table),
                                         cf_xstrdup(st.v[i].sink), cf_props_clone(st.v[i].options)};
    cf_sc_stmts_free(&st);
    c = cf_sc_service_compose(svc, svc->settings);
    assert_string_equal(cf_props_get(c, "kafka.bootstrap.servers"), "b1:9092,b2:9092");
    assert_string_equal(cf_props_get(c, "topic.format"), "cdc.{table}");
    assert_string_equal(cf_props_get(c, "tables"), "ks.a,Ks.b");
    assert_string_equal(cf_props_get(c, "cdc_raw.dirs"), "/n1,/n2");
    /* through the PUT body's mapping */
    cf_props *conn = cf_props_new(), *wk = cf_props_new();
    for (size_t i = 0; i < cf_props_count(c); i++)
        cf_sc_service_put(cf_props_key_at(c, i), cf_props_value_at(c, i), conn, wk);
    assert_string_equal(cf_props_get(wk, "bootstrap.servers"), "b1:9092,b2:9092");
    assert_string_equal(cf_props_get(conn, "table.include.list"), "ks.a,Ks.b");
    assert_string_equal(cf_props_get(conn, "value.converter.schema.registry.url"), "http://r:8081");
    assert_string_equal(cf_props_get(conn, "key.converter"), "avro"); /* the registry's */
    assert_string_equal(cf_props_get(conn, "value.converter"), "json"); /* value.serializer, in any order */
    assert_string_equal(cf_props_get(conn, "producer.override.acks"), "all");
    assert_string_equal(cf_props_get(conn, "producer.override.linger.ms"), "5");
    assert_string_equal(cf_props_get(conn, "key.converter.schemas.enable"), "false");
    assert_string_equal(cf_props_get(conn, "consistency.level"), "ALL");
    assert_string_equal(cf_props_get(conn, "replication.factor"), "3");
    assert_string_equal(cf_props_get(conn, "topic.format"), "cdc.{table}");
    assert_null(cf_props_get(conn, "kafka.bootstrap.servers"));
    cf_props_destroy(conn);
    cf_props_destroy(wk);
    cf_props_destroy(c);
    /* a sink without a topic leaves topic.format alone */
    free(svc->sinks[0].topic);
    svc->sinks[0].topic = cf_xstrdup("");
    c = cf_sc_service_compose(svc, svc->settings);
    assert_null(cf_props_get(c, "topic.format"));
    cf_props_destroy(c);
    cf_props_destroy(start);
    cf_sc_service_destroy(svc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_design_statements), cmocka_unit_test(test_every_form),
        cmocka_unit_test(test_quoting),           cmocka_unit_test(test_several_and_comments),
        cmocka_unit_test(test_error_positions),   cmocka_unit_test(test_error_hint),
        cmocka_unit_test(test_compose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
