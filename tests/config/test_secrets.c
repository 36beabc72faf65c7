/*
 * test_secrets.c - cf_config_key_is_secret / cf_config_shown_value
 * (src/config/secrets.c): definitions first (PASSWORD-type, also by the
 * key's dotted suffix), Connect's password names for keys no table defines
 * (ConfigDef.Type.PASSWORD settings of Kafka and Connect: ssl.key.password,
 * ssl.keystore.password, ssl.truststore.password, sasl.jaas.config,
 * basic.auth.user.info), misspelt password keys, and values masked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/config.h"

static const cf_cfg_def defs[] = {
    {.name = "connection.password", .type = CF_CFG_PASSWORD, .nullable = true, .doc = "p"},
    {.name = "basic.auth.user.info", .type = CF_CFG_PASSWORD, .nullable = true, .doc = "u"},
    {.name = "basic.auth.credentials.source", .type = CF_CFG_STRING, .default_value = "URL", .doc = "s"},
    {.name = "token.ranges", .type = CF_CFG_STRING, .nullable = true, .doc = "r"},
    {.name = "connection.url", .type = CF_CFG_STRING, .nullable = true, .doc = "u"},
    {.name = NULL},
};
static const cf_cfg_table table = {.name = "t", .title = "t", .intro = "t", .defs = defs};

static void test_secret_keys(void **state) {
    (void)state;
    const cf_cfg_table *ts[1] = {&table};
#define SECRET(k) assert_true(cf_config_key_is_secret(ts, 1, k))
#define PLAIN(k) assert_false(cf_config_key_is_secret(ts, 1, k))
    SECRET("connection.password");
    SECRET("key.converter.basic.auth.user.info"); /* a defined PASSWORD by suffix */
    PLAIN("basic.auth.credentials.source");       /* defined, not a password, though "credentials" */
    PLAIN("key.converter.basic.auth.credentials.source");
    PLAIN("token.ranges");
    PLAIN("connection.url");
    /* no definition: Connect's names */
    SECRET("producer.ssl.key.password");
    SECRET("consumer.ssl.keystore.password");
    SECRET("admin.ssl.truststore.password");
    SECRET("producer.override.sasl.jaas.config");
    SECRET("value.converter.schema.registry.basic.auth.user.info");
    SECRET("sasl.oauthbearer.client.secret");
    SECRET("key.converter.bearer.auth.token");
    SECRET("ssl.keystore.key");
    SECRET("cloud.api_key.pwd");
    SECRET("aws.credentials");
    /* misspelt password keys */
    SECRET("connection.pasword");
    SECRET("key.converter.basic.auth.user.inf");
    PLAIN("topics");
    PLAIN("tasks.max");
    PLAIN("key.converter.schema.registry.url");
    PLAIN("transforms.unwrap.type");
    PLAIN(NULL);
#undef SECRET
#undef PLAIN
}

static void test_shown(void **state) {
    (void)state;
    const cf_cfg_table *ts[1] = {&table};
    cf_buf b = CF_BUF_INIT;
    assert_true(cf_config_shown_value(ts, 1, "connection.password", "pw", &b));
    assert_string_equal(b.data, "[hidden]");
    b.len = 0;
    assert_true(cf_config_shown_value(ts, 1, "connection.url", "postgres://al:pw@h/db", &b));
    assert_string_equal(b.data, "postgres://al:[hidden]@h/db");
    b.len = 0;
    assert_false(cf_config_shown_value(ts, 1, "topics", "a,b", &b));
    assert_string_equal(b.data, "a,b");
    cf_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_keys),
        cmocka_unit_test(test_shown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
