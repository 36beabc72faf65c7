/*
 * test_avro_converter.c - the AvroConverter's wire format and the Schema Registry client's
 * behaviour that needs no server: caches, subject names, an unreachable registry (a closed
 * port on 127.0.0.1), the plugin registration and its configuration errors.
 *
 * Oracles: Confluent's wire format as documented (magic byte 0, 4-byte big-endian schema id,
 * Avro binary; "Wire format" in the Schema Registry docs), Confluent's subject name strategies
 * (TopicNameStrategy "<topic>-key"/"<topic>-value", RecordNameStrategy "<full name>",
 * TopicRecordNameStrategy "<topic>-<full name>"). The Avro bytes are written from the spec.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/avro.h"
#include "cdcflow/convert.h"
#include "cdcflow/schema_registry.h"

static const char *PERSON = "{\"type\":\"record\",\"name\":\"Person\",\"namespace\":\"com.example\",\"fields\":["
                            "{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"name\",\"type\":[\"null\",\"string\"],"
                            "\"default\":null}]}";

static cf_sr_client *cache_only(void) {
    cf_sr_client *c = NULL;
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    assert_int_equal(cf_sr_client_new(&cfg, &c, NULL), CF_OK);
    return c;
}

static void test_decode_wire_format_from_cache(void **state) {
    (void)state;
    cf_sr_client *sr = cache_only();
    cf_sr_cache_put(sr, 0x01020304, PERSON);
    cf_avro_converter *conv;
    cf_err err;
    assert_int_equal(cf_avro_converter_new_with_client(NULL, false, sr, &conv, &err), CF_OK);
    /* id 0x01020304, then id=3 (zig-zag 6), union branch 1, "Al" */
    const char msg[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x06, 0x02, 0x04, 'A', 'l'};
    cf_schema *s;
    cf_value *v;
    assert_int_equal(cf_avro_converter_to_connect(conv, "people", msg, sizeof msg, &s, &v, &err), CF_OK);
    assert_string_equal(s->name, "com.example.Person");
    assert_int_equal(cf_value_struct_get(v, "id")->u.i, 3);
    assert_string_equal(cf_value_struct_get(v, "name")->u.s.ptr, "Al");
    cf_value_destroy(v);
    cf_schema_unref(s);

    /* null in, null out */
    assert_int_equal(cf_avro_converter_to_connect(conv, "people", NULL, 0, &s, &v, &err), CF_OK);
    assert_null(s);
    assert_null(v);

    /* too short, bad magic byte, damaged body: CF_ERR_CORRUPT naming the topic */
    assert_int_equal(cf_avro_converter_to_connect(conv, "people", msg, 4, &s, &v, &err), CF_ERR_CORRUPT);
    assert_string_equal(err.where, "topic people");
    const char bad_magic[] = {0x01, 0, 0, 0, 1, 0};
    assert_int_equal(cf_avro_converter_to_connect(conv, "people", bad_magic, sizeof bad_magic, &s, &v, &err),
                     CF_ERR_CORRUPT);
    assert_non_null(strstr(err.detail, "0x01"));
    assert_int_equal(cf_avro_converter_to_connect(conv, "people", msg, sizeof msg - 1, &s, &v, &err), CF_ERR_CORRUPT);
    assert_non_null(strstr(err.where, "topic people, schema id 16909060"));
    assert_non_null(strstr(err.where, "name"));
    /* an id nobody knows, and no registry to ask */
    const char unknown[] = {0x00, 0, 0, 0, 9, 0x02};
    assert_int_equal(cf_avro_converter_to_connect(conv, "people", unknown, sizeof unknown, &s, &v, &err),
                     CF_ERR_CONFIG);
    assert_non_null(strstr(err.where, "schema id 9"));

    /* encoding needs the registry (auto.register.schemas): a clear config error */
    cf_schema *ks = cf_schema_primitive(CF_STRING, false);
    cf_value *kv = cf_value_string("k");
    char *data;
    size_t len;
    assert_int_equal(cf_avro_converter_from_connect(conv, "people", ks, kv, &data, &len, &err), CF_ERR_CONFIG);
    assert_null(data);
    /* null value: tombstone, no registry needed */
    assert_int_equal(cf_avro_converter_from_connect(conv, "people", ks, NULL, &data, &len, &err), CF_OK);
    assert_null(data);
    /* schemaless is refused */
    assert_int_equal(cf_avro_converter_from_connect(conv, "people", NULL, kv, &data, &len, &err), CF_ERR_UNSUPPORTED);
    /* the buffer form: the same answers */
    cf_buf b = CF_BUF_INIT;
    bool is_null = false;
    assert_int_equal(cf_avro_converter_write(conv, "people", ks, kv, &b, &is_null, &err), CF_ERR_CONFIG);
    assert_int_equal(cf_avro_converter_write(conv, "people", ks, NULL, &b, &is_null, &err), CF_OK);
    assert_true(is_null);
    assert_int_equal(cf_avro_converter_write(conv, "people", NULL, kv, &b, &is_null, &err), CF_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.where, "people"));
    cf_buf_free(&b);
    cf_value_destroy(kv);
    cf_schema_unref(ks);
    cf_avro_converter_destroy(conv);
    cf_sr_client_destroy(sr);
}

static void test_subject_names(void **state) {
    (void)state;
    cf_sr_strategy s;
    cf_err err;
    assert_int_equal(cf_sr_strategy_parse(NULL, &s, &err), CF_OK);
    assert_int_equal(s, CF_SR_TOPIC_NAME);
    assert_int_equal(cf_sr_strategy_parse("io.confluent.kafka.serializers.subject.RecordNameStrategy", &s, &err), CF_OK);
    assert_int_equal(s, CF_SR_RECORD_NAME);
    assert_int_equal(cf_sr_strategy_parse("TopicRecordNameStrategy", &s, &err), CF_OK);
    assert_int_equal(s, CF_SR_TOPIC_RECORD_NAME);
    assert_int_equal(cf_sr_strategy_parse("NoSuchStrategy", &s, &err), CF_ERR_CONFIG);

    char *n = cf_sr_subject_name(CF_SR_TOPIC_NAME, "orders", true, "x.Y");
    assert_string_equal(n, "orders-key");
    free(n);
    n = cf_sr_subject_name(CF_SR_TOPIC_NAME, "orders", false, "x.Y");
    assert_string_equal(n, "orders-value");
    free(n);
    n = cf_sr_subject_name(CF_SR_RECORD_NAME, "orders", false, "com.example.Order");
    assert_string_equal(n, "com.example.Order");
    free(n);
    n = cf_sr_subject_name(CF_SR_TOPIC_RECORD_NAME, "orders", false, "com.example.Order");
    assert_string_equal(n, "orders-com.example.Order");
    free(n);

    /* the record name a codec reports (what RecordNameStrategy uses) */
    cf_avro_codec *c;
    assert_int_equal(cf_avro_codec_from_json(PERSON, strlen(PERSON), &c, NULL), CF_OK);
    assert_string_equal(cf_avro_codec_record_name(c), "com.example.Person");
    cf_avro_codec_destroy(c);
    const char *opt = "[\"null\",\"string\"]";
    assert_int_equal(cf_avro_codec_from_json(opt, strlen(opt), &c, NULL), CF_OK);
    assert_string_equal(cf_avro_codec_record_name(c), "string");
    cf_avro_codec_destroy(c);
}

/* A registry that refuses connections: CF_ERR_AGAIN after the in-call retries, status
 * unreachable, then fail-fast without new requests; cached schemas keep working. */
static void test_unreachable_registry(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_props_set(p, "schema.registry.url", "http://127.0.0.1:1");
    cf_props_set(p, "schema.registry.retries", "1");
    cf_props_set(p, "schema.registry.retry.backoff.ms", "2000"); /* long enough for valgrind */
    cf_props_set(p, "schema.registry.retry.backoff.max.ms", "60000");
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    cf_err err;
    assert_int_equal(cf_sr_config_from_props(&cfg, p, &err), CF_OK);
    cf_sr_client *sr;
    assert_int_equal(cf_sr_client_new(&cfg, &sr, &err), CF_OK);
    cf_sr_status st;
    cf_sr_client_status(sr, &st);
    assert_true(st.reachable);

    char *schema = NULL;
    assert_int_equal(cf_sr_get_by_id(sr, 1, &schema, &err), CF_ERR_AGAIN);
    assert_non_null(strstr(err.message, "unreachable"));
    assert_true(strlen(err.hint) > 0);
    cf_sr_client_status(sr, &st);
    assert_false(st.reachable);
    assert_int_equal(st.requests, 2);
    assert_int_equal(st.errors, 2);
    assert_true(st.next_retry_ms > st.last_error_ms);
    assert_non_null(strstr(st.last_error, "127.0.0.1:1"));

    /* within the window: fails fast, no request */
    int32_t id;
    assert_int_equal(cf_sr_register(sr, "t-value", "\"string\"", &id, &err), CF_ERR_AGAIN);
    assert_non_null(strstr(err.message, "not attempted"));
    cf_sr_client_status(sr, &st);
    assert_int_equal(st.requests, 2);

    /* cached entries are served regardless */
    cf_sr_cache_put(sr, 5, PERSON);
    assert_int_equal(cf_sr_get_by_id(sr, 5, &schema, &err), CF_OK);
    assert_string_equal(schema, PERSON);
    free(schema);
    cf_sr_client_status(sr, &st);
    assert_int_equal(st.cache_hits, 1);
    cf_buf js = CF_BUF_INIT;
    cf_sr_status_json(&st, &js);
    assert_non_null(strstr(js.data, "\"reachable\":false"));
    assert_non_null(strstr(js.data, "\"requests\":2"));
    assert_non_null(strstr(js.data, "\"errors\":2"));
    assert_non_null(strstr(js.data, "127.0.0.1:1"));
    cf_buf_free(&js);

    cf_sr_client_destroy(sr);
    cf_props_destroy(p);
}

/* The caches are bounded (schemas.cache.config); the oldest entry goes first. */
static void test_cache_bounds(void **state) {
    (void)state;
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    cfg.cache_capacity = 2;
    cf_sr_client *sr;
    cf_err err;
    assert_int_equal(cf_sr_client_new(&cfg, &sr, &err), CF_OK);
    cf_sr_cache_put(sr, 1, "\"int\"");
    cf_sr_cache_put(sr, 2, "\"long\"");
    cf_sr_cache_put(sr, 3, "\"string\"");
    char *s = NULL;
    assert_int_equal(cf_sr_get_by_id(sr, 1, &s, &err), CF_ERR_CONFIG); /* evicted; no registry to ask */
    assert_int_equal(cf_sr_get_by_id(sr, 2, &s, &err), CF_OK);
    free(s);
    assert_int_equal(cf_sr_get_by_id(sr, 3, &s, &err), CF_OK);
    assert_string_equal(s, "\"string\"");
    free(s);
    /* the converter's own id -> codec cache with one entry: alternating ids 2 and 3 evict
     * each other and are rebuilt from the client's cache */
    cf_props *p = cf_props_new();
    cf_props_set(p, "schemas.cache.config", "1");
    cf_avro_converter *c;
    assert_int_equal(cf_avro_converter_new_with_client(p, false, sr, &c, &err), CF_OK);
    const char m2[] = {0, 0, 0, 0, 2, 0x02}, m3[] = {0, 0, 0, 0, 3, 0x02, 'x'};
    cf_schema *sc;
    cf_value *v;
    for (int round = 0; round < 2; round++) {
        assert_int_equal(cf_avro_converter_to_connect(c, "t", m2, sizeof m2, &sc, &v, &err), CF_OK);
        assert_int_equal(v->u.i, 1);
        cf_value_destroy(v);
        cf_schema_unref(sc);
        assert_int_equal(cf_avro_converter_to_connect(c, "t", m3, sizeof m3, &sc, &v, &err), CF_OK);
        assert_string_equal(v->u.s.ptr, "x");
        cf_value_destroy(v);
        cf_schema_unref(sc);
    }
    cf_avro_converter_destroy(c);
    cf_props_destroy(p);
    cf_sr_client_destroy(sr);
}

static void test_config_errors(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_sr_config cfg;
    cf_err err;
    cf_props_set(p, "schema.registry.retries", "many");
    cf_sr_config_init(&cfg);
    assert_int_equal(cf_sr_config_from_props(&cfg, p, &err), CF_ERR_CONFIG);
    assert_string_equal(err.where, "schema.registry.retries");
    cf_props_remove(p, "schema.registry.retries");
    cf_props_set(p, "basic.auth.credentials.source", "USER_INFO");
    cf_sr_config_init(&cfg);
    assert_int_equal(cf_sr_config_from_props(&cfg, p, &err), CF_OK);
    cf_sr_client *sr = NULL;
    assert_int_equal(cf_sr_client_new(&cfg, &sr, &err), CF_ERR_CONFIG);
    assert_string_equal(err.where, "basic.auth.user.info");
    cf_props_destroy(p);

    /* the converter needs a URL */
    cf_avro_converter *c = NULL;
    p = cf_props_new();
    assert_int_equal(cf_avro_converter_new(p, false, &c, &err), CF_ERR_CONFIG);
    assert_string_equal(err.where, "schema.registry.url");
    cf_props_set(p, "schema.registry.url", "http://127.0.0.1:1");
    cf_props_set(p, "value.subject.name.strategy", "Bogus");
    assert_int_equal(cf_avro_converter_new(p, false, &c, &err), CF_ERR_CONFIG);
    assert_string_equal(err.where, "value.subject.name.strategy");
    cf_props_destroy(p);
}

extern const cf_cfg_table cf_avro_converter_table;

/* The settings table is consistent (cf_cfg_table_check: what Kafka's ConfigDef.define checks)
 * and is the plugin's. */
static void test_config_table(void **state) {
    (void)state;
    cf_err err;
    cf_code rc = cf_cfg_table_check(&cf_avro_converter_table, &err);
    if (rc) fail_msg("%s: %s", err.message, err.detail);
    assert_ptr_equal(cf_converter_find("avro")->config, &cf_avro_converter_table);
    assert_non_null(cf_cfg_table_find(&cf_avro_converter_table, "schema.registry.url"));
    /* a full Confluent-style configuration validates */
    cf_props *p = cf_props_new();
    cf_props_set(p, "schema.registry.url", "https://a:8081,https://b:8081");
    cf_props_set(p, "basic.auth.credentials.source", "USER_INFO");
    cf_props_set(p, "basic.auth.user.info", "u:p");
    cf_props_set(p, "value.subject.name.strategy", "io.confluent.kafka.serializers.subject.RecordNameStrategy");
    cf_props_set(p, "auto.register.schemas", "false");
    cf_props_set(p, "use.latest.version", "true");
    cf_props_set(p, "schema.registry.ssl.ca.location", "/etc/ssl/certs/ca-certificates.crt");
    const cf_cfg_table *t[] = {&cf_avro_converter_table};
    cf_config *cfg = NULL;
    char *problems = NULL;
    rc = cf_config_parse(t, 1, p, &cfg, &problems, &err);
    if (rc) fail_msg("%s: %s", err.message, problems ? problems : "");
    cf_config_destroy(cfg);
    free(problems);
    /* a typo is reported */
    cf_props_set(p, "auto.register.schema", "true");
    assert_int_not_equal(cf_config_parse(t, 1, p, &cfg, &problems, &err), CF_OK);
    free(problems);
    cf_props_destroy(p);
}

/* Registered as a plugin under both names. */
static void test_plugin(void **state) {
    (void)state;
    const cf_converter_plugin *pl = cf_converter_find("io.confluent.connect.avro.AvroConverter");
    assert_non_null(pl);
    assert_string_equal(pl->name, "avro");
    assert_ptr_equal(cf_converter_find("avro"), pl);
    cf_props *p = cf_props_new();
    cf_converter *c = NULL;
    cf_err err;
    assert_int_not_equal(cf_converter_new("avro", p, false, &c, &err), CF_OK);
    assert_non_null(strstr(err.message, "schema.registry.url"));
    cf_props_set(p, "schema.registry.url", "http://127.0.0.1:1/apis/ccompat/v7");
    cf_props_set(p, "auto.register.schemas", "false");
    assert_int_equal(cf_converter_new("avro", p, true, &c, &err), CF_OK);
    cf_converter_destroy(c);
    cf_props_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_wire_format_from_cache),
        cmocka_unit_test(test_subject_names),
        cmocka_unit_test(test_unreachable_registry),
        cmocka_unit_test(test_cache_bounds),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_plugin),
        cmocka_unit_test(test_config_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
