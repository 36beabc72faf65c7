/*
 * test_config.c - typed definitions and validation (ConfigDef semantics),
 * Kafka Connect JSON, file loading, the registry and the generated docs.
 * Expected messages and rules are Kafka's ConfigDef ones ("Not a number of
 * type INT", "Value must be at least 1", "String must be one of",
 * "Missing required configuration ... which has no default value") and
 * Connect's SinkConnectorConfig.validate rules for topics/topics.regex.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cdcflow/config.h"

static cf_code no_x_validator(const char *key, const char *value, cf_err *err) {
    if (strchr(value, 'x')) {
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\"", key);
        cf_err_detail(err, "must not contain x");
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

static const char *const modes[] = {"fast", "safe", NULL};
static const cf_cfg_def test_defs[] = {
    {"s", CF_CFG_STRING, "dflt", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, NULL, "A string."},
    {"i", CF_CFG_INT, "5", false, NULL, true, 1, 10, NULL, CF_IMPORTANCE_MEDIUM, "G", "An int in [1,10]."},
    {"l", CF_CFG_LONG, "-3", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "G", "A long."},
    {"d", CF_CFG_DOUBLE, "0.5", false, NULL, true, 0, 1, NULL, CF_IMPORTANCE_LOW, NULL, "A double."},
    {"b", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, NULL, "A boolean."},
    {"list", CF_CFG_LIST, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, NULL, "A list."},
    {"mode", CF_CFG_STRING, "fast", false, modes, false, 0, 0, NULL, CF_IMPORTANCE_LOW, NULL, "An enum."},
    {"pw", CF_CFG_PASSWORD, "s3cret", false, NULL, false, 0, 0, no_x_validator, CF_IMPORTANCE_LOW, NULL, "Secret."},
    {"req", CF_CFG_STRING, CF_CFG_REQUIRED, false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, NULL, "Required."},
    {"opt", CF_CFG_CLASS, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, NULL, "Nullable."},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};
static const char *const test_prefixes[] = {"producer.", NULL};
static const cf_cfg_table test_table = {"test", "Test table", "For tests.", test_defs, test_prefixes};

static cf_config *parse_ok(cf_props *p) {
    const cf_cfg_table *t[] = {&test_table};
    cf_config *c = NULL;
    char *problems = NULL;
    cf_err err;
    if (cf_config_parse(t, 1, p, &c, &problems, &err) != CF_OK) fail_msg("unexpected problems:\n%s", problems);
    return c;
}

/* parse expecting failure; returns the problems text (caller frees) */
static char *parse_bad(cf_props *p, cf_err *err) {
    const cf_cfg_table *t[] = {&test_table};
    cf_config *c = NULL;
    char *problems = NULL;
    assert_int_equal(cf_config_parse(t, 1, p, &c, &problems, err), CF_ERR_CONFIG);
    assert_null(c);
    assert_non_null(problems);
    return problems;
}

static void test_defaults_and_getters(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_props_set(p, "req", "  here  ");
    cf_props_set(p, "list", " a , ,b,, c ");
    cf_props_set(p, "producer.linger.ms", "5");
    cf_config *c = parse_ok(p);
    assert_string_equal(cf_config_string(c, "s"), "dflt");
    assert_string_equal(cf_config_string(c, "req"), "here"); /* trimmed, as ConfigDef */
    assert_int_equal(cf_config_int(c, "i"), 5);
    assert_int_equal(cf_config_long(c, "l"), -3);
    assert_true(cf_config_double(c, "d") == 0.5);
    assert_false(cf_config_bool(c, "b"));
    assert_null(cf_config_string(c, "opt"));
    size_t n;
    const char *const *items = cf_config_list(c, "list", &n);
    assert_int_equal(n, 3);
    assert_string_equal(items[0], "a");
    assert_string_equal(items[1], "b");
    assert_string_equal(items[2], "c");
    assert_string_equal(cf_props_get(cf_config_props(c), "producer.linger.ms"), "5");
    cf_config_destroy(c);
    cf_props_destroy(p);
}

static void test_type_parsing(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_props_set(p, "req", "x");
    cf_props_set(p, "i", " +7 ");
    cf_props_set(p, "l", "-9223372036854775808");
    cf_props_set(p, "d", "1e-1");
    cf_props_set(p, "b", "TRUE");
    cf_props_set(p, "mode", "SAFE"); /* enums are case-insensitive */
    cf_props_set(p, "opt", "json");
    cf_config *c = parse_ok(p);
    assert_int_equal(cf_config_int(c, "i"), 7);
    assert_true(cf_config_long(c, "l") == INT64_MIN);
    assert_true(cf_config_double(c, "d") == 0.1);
    assert_true(cf_config_bool(c, "b"));
    assert_string_equal(cf_config_string(c, "mode"), "SAFE");
    assert_string_equal(cf_config_string(c, "opt"), "json");
    cf_config_destroy(c);
    cf_props_destroy(p);
}

static void test_every_problem_reported(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_props_set(p, "i", "abc");
    cf_props_set(p, "l", "1.5");
    cf_props_set(p, "b", "yes");
    cf_props_set(p, "mode", "quick");
    cf_props_set(p, "d", "2");
    cf_props_set(p, "sx", "1"); /* unknown, close to "s" */
    cf_err err;
    char *problems = parse_bad(p, &err);
    /* unknown key first, then every definition in table order */
    assert_non_null(strstr(problems, "sx: unknown configuration \"sx\""));
    assert_non_null(strstr(problems, "did you mean \"s\""));
    assert_non_null(strstr(problems, "Invalid value abc for configuration i: Not a number of type INT"));
    assert_non_null(strstr(problems, "Not a number of type LONG"));
    assert_non_null(strstr(problems, "Value must be no more than 1"));
    assert_non_null(strstr(problems, "Expected value to be either true or false"));
    assert_non_null(strstr(problems, "String must be one of (case insensitive): fast, safe"));
    assert_non_null(strstr(problems, "req: missing required configuration \"req\" which has no default value"));
    size_t lines = 0;
    for (const char *q = problems; *q; q++) lines += *q == '\n';
    assert_int_equal(lines, 7);
    /* err holds the first, and says how many more there are */
    assert_string_equal(err.where, "sx");
    assert_non_null(strstr(err.message, "and 6 more problems"));
    free(problems);
    cf_props_destroy(p);
}

static void test_ranges_and_int_limits(void **state) {
    (void)state;
    const cf_cfg_def *i = cf_cfg_table_find(&test_table, "i");
    cf_err err;
    assert_int_equal(cf_cfg_check_value(i, "0", &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail, "Value must be at least 1"));
    assert_non_null(strstr(err.hint, "[1, 10]"));
    assert_int_equal(cf_cfg_check_value(i, "10", &err), CF_OK);
    assert_int_equal(cf_cfg_check_value(i, "2147483648", &err), CF_ERR_CONFIG); /* Integer.parseInt overflow */
    assert_int_equal(cf_cfg_check_value(i, "", &err), CF_ERR_CONFIG);
    assert_int_equal(cf_cfg_check_value(i, "0x5", &err), CF_ERR_CONFIG);
    const cf_cfg_def *d = cf_cfg_table_find(&test_table, "d");
    assert_int_equal(cf_cfg_check_value(d, "NaN", &err), CF_ERR_CONFIG); /* NaN is not in [0, 1] */
    assert_int_equal(cf_cfg_check_value(d, "nan", &err), CF_ERR_CONFIG); /* Java: not a number */
    assert_int_equal(cf_cfg_check_value(d, "0.25d", &err), CF_OK);       /* Double.parseDouble suffix */
}

static void test_password_hidden(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_props_set(p, "req", "x");
    cf_props_set(p, "pw", "topxsecret");
    cf_err err;
    char *problems = parse_bad(p, &err);
    assert_null(strstr(problems, "topxsecret"));
    assert_non_null(strstr(problems, "must not contain x"));
    free(problems);
    /* an unknown key that looks like a password does not echo its value */
    cf_props_set(p, "pw", "fine");
    cf_props_set(p, "passwrd", "hunter2");
    problems = parse_bad(p, &err);
    assert_null(strstr(problems, "hunter2"));
    free(problems);
    /* docs never print a password default */
    const cf_cfg_table *t[] = {&test_table};
    char *md = cf_config_docs_markdown(t, 1);
    assert_null(strstr(md, "s3cret"));
    assert_non_null(strstr(md, "[hidden]"));
    free(md);
    cf_props_destroy(p);
}

static void test_unknown_key_lists_allowed(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_props_set(p, "req", "x");
    cf_props_set(p, "totally.different", "v");
    cf_err err;
    char *problems = parse_bad(p, &err);
    assert_non_null(strstr(err.detail, "\"totally.different\" = \"v\""));
    assert_null(strstr(err.hint, "did you mean"));
    assert_non_null(strstr(err.hint, "allowed: s, i, l, d, b, list, mode, pw, req, opt, producer.*"));
    free(problems);
    cf_props_destroy(p);
}

static void test_table_checks(void **state) {
    (void)state;
    cf_err err;
    assert_int_equal(cf_cfg_table_check(&test_table, &err), CF_OK);
    static const cf_cfg_def bad_default[] = {
        {"x", CF_CFG_INT, "zero", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, NULL, "doc"},
        {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL}};
    static const cf_cfg_table bt = {"bad", "Bad", "", bad_default, NULL};
    assert_int_equal(cf_cfg_table_check(&bt, &err), CF_ERR_INTERNAL);
    static const cf_cfg_def dup[] = {
        {"x", CF_CFG_INT, "1", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, NULL, "doc"},
        {"x", CF_CFG_INT, "1", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, NULL, "doc"},
        {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL}};
    static const cf_cfg_table dt = {"dup", "Dup", "", dup, NULL};
    assert_int_equal(cf_cfg_table_check(&dt, &err), CF_ERR_INTERNAL);
    /* every registered table is consistent (what ConfigDef.define checks) */
    size_t n = 0;
    for (const cf_cfg_table *const *t = cf_config_tables(); *t; t++, n++)
        if (cf_cfg_table_check(*t, &err) != CF_OK) fail_msg("table %s: %s %s", (*t)->name, err.message, err.detail);
    assert_true(n >= 2);
}

static cf_config *connector_cfg(cf_props *p, bool sink, char **problems) {
    const cf_cfg_table *t[] = {&cf_connector_common_table, &cf_sink_common_table};
    cf_config *c = NULL;
    cf_err err;
    cf_code rc = cf_config_parse(t, sink ? 2 : 1, p, &c, problems, &err);
    return rc == CF_OK ? c : NULL;
}

static void test_connector_common(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_props_set(p, "name", "c1");
    cf_props_set(p, "connector.class", "files");
    cf_props_set(p, "errors.tolerance", "ALL");
    cf_props_set(p, "transforms", "unwrap");
    cf_props_set(p, "transforms.unwrap.type", "ExtractNewRecordState");
    cf_props_set(p, "value.converter.schemas.enable", "false");
    char *problems = NULL;
    cf_config *c = connector_cfg(p, false, &problems);
    assert_non_null(c);
    assert_int_equal(cf_config_int(c, "tasks.max"), 1);
    assert_string_equal(cf_config_string(c, "errors.tolerance"), "ALL");
    assert_true(cf_config_long(c, "errors.retry.delay.max.ms") == 60000);
    assert_null(cf_config_string(c, "key.converter"));
    assert_int_equal(cf_connector_config_check(c, false, &problems, NULL), CF_OK);
    cf_config_destroy(c);

    /* tasks.max=0, tolerance "some", a control char in the name */
    cf_props_set(p, "tasks.max", "0");
    cf_props_set(p, "errors.tolerance", "some");
    cf_props_set(p, "name", "a\tb");
    c = connector_cfg(p, false, &problems);
    assert_null(c);
    assert_non_null(strstr(problems, "tasks.max: "));
    assert_non_null(strstr(problems, "Value must be at least 1"));
    assert_non_null(strstr(problems, "String must be one of (case insensitive): none, all"));
    assert_non_null(strstr(problems, "control characters"));
    free(problems);

    /* transforms alias without its type; duplicate alias */
    cf_props_set(p, "tasks.max", "2");
    cf_props_set(p, "errors.tolerance", "none");
    cf_props_set(p, "name", "c1");
    cf_props_set(p, "transforms", "unwrap,route");
    c = connector_cfg(p, false, &problems);
    assert_non_null(c);
    assert_int_equal(cf_connector_config_check(c, false, &problems, NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(problems, "transforms.route.type"));
    free(problems);
    cf_config_destroy(c);
    cf_props_set(p, "transforms", "unwrap,unwrap");
    c = connector_cfg(p, false, &problems);
    assert_null(c);
    assert_non_null(strstr(problems, "Duplicate alias"));
    free(problems);
    cf_props_destroy(p);
}

static void test_sink_topics_rules(void **state) {
    (void)state;
    cf_props *p = cf_props_new();
    cf_props_set(p, "name", "s");
    cf_props_set(p, "connector.class", "x");
    char *problems = NULL;
    cf_config *c = connector_cfg(p, true, &problems);
    assert_non_null(c);
    assert_int_equal(cf_connector_config_check(c, true, &problems, NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(problems, "must configure one of topics or topics.regex"));
    free(problems);
    cf_config_destroy(c);
    cf_props_set(p, "topics", "a,b");
    cf_props_set(p, "topics.regex", "a.*");
    c = connector_cfg(p, true, &problems);
    assert_int_equal(cf_connector_config_check(c, true, &problems, NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(problems, "mutually exclusive"));
    free(problems);
    cf_config_destroy(c);
    cf_props_set(p, "topics.regex", NULL);
    cf_props_set(p, "errors.deadletterqueue.topic.name", "b");
    c = connector_cfg(p, true, &problems);
    assert_int_equal(cf_connector_config_check(c, true, &problems, NULL), CF_ERR_CONFIG);
    assert_non_null(strstr(problems, "dead letter queue"));
    free(problems);
    cf_config_destroy(c);
    cf_props_set(p, "errors.deadletterqueue.topic.name", "dlq");
    c = connector_cfg(p, true, &problems);
    assert_int_equal(cf_connector_config_check(c, true, &problems, NULL), CF_OK);
    cf_config_destroy(c);
    /* an invalid regex */
    cf_props_set(p, "topics", NULL);
    cf_props_set(p, "topics.regex", "a(");
    c = connector_cfg(p, true, &problems);
    assert_null(c);
    assert_non_null(strstr(problems, "topics.regex"));
    free(problems);
    cf_props_destroy(p);
}

static void test_json_forms(void **state) {
    (void)state;
    cf_props *p = NULL;
    char *name = NULL;
    cf_err err;
    const char *nested = "{\"name\": \"c1\", \"config\": {\"connector.class\": \"files\", \"tasks.max\": 3, "
                         "\"errors.log.enable\": true, \"x.ratio\": 0.1, \"big\": 12345678901234}}";
    assert_int_equal(cf_props_from_json(nested, strlen(nested), &p, &name, &err), CF_OK);
    assert_string_equal(name, "c1");
    assert_string_equal(cf_props_get(p, "name"), "c1"); /* as Connect's REST layer */
    assert_string_equal(cf_props_get(p, "tasks.max"), "3");
    assert_string_equal(cf_props_get(p, "errors.log.enable"), "true");
    assert_string_equal(cf_props_get(p, "x.ratio"), "0.1");
    assert_string_equal(cf_props_get(p, "big"), "12345678901234");
    free(name);
    cf_props_destroy(p);

    const char *flat = "{\"name\": \"c2\", \"connector.class\": \"files\"}";
    assert_int_equal(cf_props_from_json(flat, strlen(flat), &p, &name, &err), CF_OK);
    assert_string_equal(name, "c2");
    assert_int_equal(cf_props_count(p), 2);
    free(name);
    cf_props_destroy(p);

    const char *bad[] = {
        "{\"name\": \"a\", \"config\": {\"name\": \"b\"}}", /* mismatch */
        "{\"a\": \"1\", \"a\": \"2\"}",                    /* duplicate */
        "{\"a\": null}",
        "{\"a\": [1, 2]}",
        "[1]",
        "{\"config\": {}, \"other\": 1}",
        "{\"a\": \"1\",\n \"b\": }",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(cf_props_from_json(bad[i], strlen(bad[i]), &p, &name, &err), CF_ERR_CONFIG);
        assert_null(p);
    }
    assert_string_equal(err.where, "line 2, column 7");
}

static char *write_tmp(const char *suffix, const char *text) {
    char *path = malloc(256);
    snprintf(path, 256, "%s/cf_test_config_%d%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(),
             suffix);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_load_file(void **state) {
    (void)state;
    cf_props *p = NULL, *lines = NULL;
    char *name = NULL;
    cf_err err;
    /* JSON is recognised by content, whatever the name; BOM and blanks skipped */
    char *path = write_tmp(".properties", "\xEF\xBB\xBF\n  {\"name\": \"j\", \"connector.class\": \"files\"}\n");
    assert_int_equal(cf_props_load_file(path, &p, &name, &err), CF_OK);
    assert_string_equal(name, "j");
    free(name);
    cf_props_destroy(p);
    unlink(path);
    free(path);

    /* JSON keys get their line by their text */
    path = write_tmp(".txt", "{\"name\": \"j\",\n \"config\": {\n  \"tasks.max\": 2,\n  \"name\": \"j\"}}\n");
    assert_int_equal(cf_props_load_file_lines(path, &p, &name, &lines, &err), CF_OK);
    assert_string_equal(cf_props_get(lines, "tasks.max"), "3");
    assert_string_equal(cf_props_get(lines, "name"), "4");
    free(name);
    cf_props_destroy(p);
    cf_props_destroy(lines);
    unlink(path);
    free(path);

    path = write_tmp(".json", "# c\nname=p\n\nconnector.class = files\n");
    assert_int_equal(cf_props_load_file_lines(path, &p, &name, &lines, &err), CF_OK);
    assert_string_equal(name, "p");
    assert_string_equal(cf_props_get(lines, "connector.class"), "4");
    free(name);
    cf_props_destroy(p);
    cf_props_destroy(lines);
    unlink(path);
    free(path);

    /* errors name file and line */
    path = write_tmp(".properties", "a=1\nb=\\uXYZW\n");
    assert_int_equal(cf_props_load_file(path, &p, &name, &err), CF_ERR_CONFIG);
    char expect[300];
    snprintf(expect, sizeof expect, "%s:2", path);
    assert_string_equal(err.where, expect);
    unlink(path);
    free(path);
    path = write_tmp(".json", "{\n  \"a\": 1,\n  \"a\": 2\n}\n");
    assert_int_equal(cf_props_load_file(path, &p, &name, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.where, path));
    assert_non_null(strstr(err.detail, "duplicate"));
    unlink(path);
    free(path);
    assert_int_equal(cf_props_load_file("/nonexistent/x.properties", &p, &name, &err), CF_ERR_IO);
    assert_non_null(strstr(err.where, "/nonexistent/x.properties"));
}

static void test_docs_markdown(void **state) {
    (void)state;
    const cf_cfg_table *t[] = {&test_table, &cf_connector_common_table};
    char *md = cf_config_docs_markdown(t, 2);
    assert_non_null(strstr(md, "## Test table\n\nFor tests.\n"));
    assert_non_null(strstr(md, "Keys starting with `producer.` are passed through"));
    assert_non_null(strstr(md, "#### `i`\n\nAn int in [1,10].\n\n- Type: int\n- Default: `5`\n- Valid values: [1, 10]\n"
                               "- Importance: medium\n"));
    assert_non_null(strstr(md, "### G\n"));
    assert_non_null(strstr(md, "- Default: none (required)"));
    assert_non_null(strstr(md, "one of `none`, `all` (case insensitive)"));
    assert_non_null(strstr(md, "#### `errors.retry.timeout`"));
    free(md);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_getters),
        cmocka_unit_test(test_type_parsing),
        cmocka_unit_test(test_every_problem_reported),
        cmocka_unit_test(test_ranges_and_int_limits),
        cmocka_unit_test(test_password_hidden),
        cmocka_unit_test(test_unknown_key_lists_allowed),
        cmocka_unit_test(test_table_checks),
        cmocka_unit_test(test_connector_common),
        cmocka_unit_test(test_sink_topics_rules),
        cmocka_unit_test(test_json_forms),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_docs_markdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
