/*
 * test_registry_health.c - the Schema Registry state of the converters, as
 * the worker shows it: GET /metrics (cdcflow_schema_registry_*), GET /health
 * and the connector status, with an unreachable registry URL.
 *
 * Outside facts used as the oracle: nothing listens on 127.0.0.1 port 1 (a
 * privileged port no test server uses), so every request there fails with
 * "connection refused"; only the avro converter talks to a registry
 * (json, string and bytes do not).
 *
 * The source ("test-source" of plugins.h) runs with a record file as output,
 * so the source task converts (key: string, value: avro) without Kafka.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "cdcflow/buf.h"
#include "cdcflow/convert.h"
#include "cdcflow/log.h"
#include "cdcflow/worker.h"

#include "plugins.h"
#include "helpers.h"

#define DEAD_REGISTRY "http://127.0.0.1:1/apis/ccompat/v7"

static int setup(void **state) {
    (void)state;
    tmpdir_make("srhealth");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tmpdir_remove();
    return 0;
}

/* ---------------- the accessor ---------------- */

static void test_converter_sr_status(void **state) {
    (void)state;
    cf_sr_status st;
    memset(&st, 0x5a, sizeof st);
    const char *plain[] = {"json", "string", "bytes", "org.apache.kafka.connect.converters.ByteArrayConverter"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
        cf_converter *c = NULL;
        assert_int_equal(cf_converter_new(plain[i], NULL, false, &c, NULL), CF_OK);
        assert_false(cf_converter_sr_status(c, &st));
        assert_int_equal(((unsigned char *)&st)[0], 0x5a); /* untouched */
        cf_converter_destroy(c);
    }
    assert_false(cf_converter_sr_status(NULL, &st));

    cf_props *p = cf_props_new();
    cf_props_set(p, "schema.registry.url", DEAD_REGISTRY);
    cf_props_set(p, "schema.registry.retries", "0");
    cf_converter *c = NULL;
    assert_int_equal(cf_converter_new("io.confluent.connect.avro.AvroConverter", p, false, &c, NULL), CF_OK);
    cf_props_destroy(p);
    assert_true(cf_converter_sr_status(c, &st));
    assert_true(st.reachable); /* no attempt yet */
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.requests, 0);

    /* one conversion needs the registry (register the schema): refused */
    cf_schema *s = cf_schema_primitive(CF_STRING, false);
    cf_value *v = cf_value_string("x");
    char *data = NULL;
    size_t len = 0;
    cf_err err;
    cf_code rc = cf_converter_from_connect(c, "t", s, v, &data, &len, &err);
    assert_int_not_equal(rc, CF_OK);
    assert_null(data);
    assert_true(cf_converter_sr_status(c, &st));
    assert_false(st.reachable);
    assert_true(st.errors >= 1);
    assert_true(st.last_error_ms > 0);
    assert_int_equal(st.last_ok_ms, 0);
    assert_true(st.last_error[0] != 0);
    cf_value_destroy(v);
    cf_schema_unref(s);
    cf_converter_destroy(c);
}

/* ---------------- the worker ---------------- */

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
    cf_buf_append(ud, p, sz * n);
    return sz * n;
}

/* GET http://127.0.0.1:port/path; body in *out (caller frees), status returned */
static long http_get(int port, const char *path, cf_buf *out) {
    CURL *c = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    cf_buf_append_str(out, "");
    return status;
}

/* The value of the sample `series` (full name with labels) in a metrics text, or -1. */
static double sample(const char *text, const char *series) {
    size_t l = strlen(series);
    for (const char *p = text; (p = strstr(p, series)); p += l)
        if ((p == text || p[-1] == '\n') && p[l] == ' ') return atof(p + l + 1);
    return -1;
}

static const json_t *task0(const json_t *doc, const char *connector) {
    const json_t *tasks = json_object_get(json_object_get(json_object_get(doc, "connectors"), connector), "tasks");
    return json_array_get(tasks, 0);
}

static void test_worker_shows_unreachable_registry(void **state) {
    (void)state;
    char out[512], offs[512];
    snprintf(out, sizeof out, "%s/out.jsonl", tmpdir);
    snprintf(offs, sizeof offs, "%s/offsets.json", tmpdir);
    cf_props *wp = cf_props_new();
    cf_props_set(wp, "offset.storage.file.filename", offs);
    cf_props_set(wp, "key.converter", "string");
    cf_props_set(wp, "value.converter", "string");
    cf_props_set(wp, "rest.port", "0");
    cf_worker_opts o = {.plugins = test_plugins, .output_file = out, .rest = true};
    cf_worker *w = NULL;
    cf_err err;
    assert_int_equal(cf_worker_new(wp, &o, &w, &err), CF_OK);
    cf_props_destroy(wp);
    assert_int_equal(cf_worker_start(w, &err), CF_OK);
    int port = cf_worker_rest_port(w);
    assert_true(port > 0);

    /* before any connector: healthy, no registry series at all */
    cf_buf b = CF_BUF_INIT;
    assert_int_equal(http_get(port, "/health", &b), 200);
    json_t *h = json_loads(b.data, 0, NULL);
    assert_non_null(h);
    assert_string_equal(json_string_value(json_object_get(h, "status")), "UP");
    json_decref(h);
    cf_buf_free(&b);

    /* "plain": worker converters (string); "avro-src": avro values, registry down */
    cf_props *cp = cf_props_new();
    cf_props_set(cp, "name", "plain");
    cf_props_set(cp, "connector.class", "test-source");
    cf_props_set(cp, "test.endless", "true");
    cf_props_set(cp, "test.topic", "plain");
    cf_props_set(cp, "test.poll.delay.ms", "20");
    assert_int_equal(cf_worker_add_connector(w, NULL, cp, &err), CF_OK);
    cf_props_destroy(cp);
    cp = cf_props_new();
    cf_props_set(cp, "name", "avro-src");
    cf_props_set(cp, "connector.class", "test-source");
    cf_props_set(cp, "test.endless", "true");
    cf_props_set(cp, "test.topic", "orders");
    cf_props_set(cp, "test.poll.delay.ms", "20");
    cf_props_set(cp, "errors.tolerance", "all"); /* keep running while the registry is down */
    cf_props_set(cp, "value.converter", "avro");
    cf_props_set(cp, "value.converter.schema.registry.url", DEAD_REGISTRY);
    cf_props_set(cp, "value.converter.schema.registry.retries", "0");
    cf_props_set(cp, "value.converter.schema.registry.retry.backoff.ms", "10");
    cf_props_set(cp, "value.converter.schema.registry.retry.backoff.max.ms", "20");
    assert_int_equal(cf_worker_add_connector(w, NULL, cp, &err), CF_OK);
    cf_props_destroy(cp);
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);

    const char *reach = "cdcflow_schema_registry_reachable{connector=\"avro-src\",task=\"0\",converter=\"value\"}";
    const char *errs = "cdcflow_schema_registry_errors_total{connector=\"avro-src\",task=\"0\",converter=\"value\"}";
    double e = -1;
    for (int i = 0; i < 300 && e < 2; i++) { /* two failed attempts: the count grows */
        cf_buf m = CF_BUF_INIT;
        cf_worker_metrics_text(w, &m);
        e = sample(m.data, errs);
        cf_buf_free(&m);
        if (e < 2) usleep(20 * 1000);
    }
    assert_true(e >= 2);

    /* GET /metrics */
    assert_int_equal(http_get(port, "/metrics", &b), 200);
    assert_true(sample(b.data, reach) == 0);
    assert_true(sample(b.data, errs) >= 2);
    assert_true(sample(b.data, "cdcflow_schema_registry_last_error_age_seconds{connector=\"avro-src\",task=\"0\","
                               "converter=\"value\"}") >= 0);
    assert_non_null(strstr(b.data, "# TYPE cdcflow_schema_registry_reachable gauge\n"));
    assert_non_null(strstr(b.data, "# TYPE cdcflow_schema_registry_errors_total counter\n"));
    /* never succeeded: no success age; the string key converter and the plain connector have no registry */
    assert_null(strstr(b.data, "cdcflow_schema_registry_last_success_age_seconds{"));
    assert_null(strstr(b.data, "converter=\"key\""));
    assert_null(strstr(b.data, "cdcflow_schema_registry_reachable{connector=\"plain\""));
    /* the records were reported (errors.tolerance=all), the task still runs */
    assert_true(sample(b.data, "cdcflow_task_errors_total{connector=\"avro-src\",task=\"0\",type=\"source\"}") >= 2);
    assert_non_null(strstr(b.data, "cdcflow_task_state{connector=\"avro-src\",task=\"0\",state=\"RUNNING\"} 1\n"));
    cf_buf_free(&b);

    /* GET /health: 503, DOWN, the registry's state per task and converter */
    assert_int_equal(http_get(port, "/health", &b), 503);
    h = json_loads(b.data, 0, NULL);
    assert_non_null(h);
    assert_string_equal(json_string_value(json_object_get(h, "status")), "DOWN");
    assert_int_equal(json_array_size(json_object_get(h, "problems")), 1);
    const json_t *sr = json_object_get(json_object_get(task0(h, "avro-src"), "schema_registry"), "value");
    assert_non_null(sr);
    assert_true(json_is_false(json_object_get(sr, "reachable")));
    assert_true(json_integer_value(json_object_get(sr, "errors")) >= 2);
    assert_true(strlen(json_string_value(json_object_get(sr, "last_error"))) > 0);
    assert_null(json_object_get(json_object_get(task0(h, "avro-src"), "schema_registry"), "key"));
    assert_null(json_object_get(task0(h, "plain"), "schema_registry"));
    assert_string_equal(json_string_value(json_object_get(task0(h, "plain"), "state")), "RUNNING");
    json_decref(h);
    cf_buf_free(&b);

    /* the connector status carries it too */
    assert_int_equal(http_get(port, "/connectors/avro-src/status", &b), 200);
    h = json_loads(b.data, 0, NULL);
    assert_non_null(h);
    sr = json_object_get(json_object_get(json_array_get(json_object_get(h, "tasks"), 0), "schema_registry"), "value");
    assert_true(json_is_false(json_object_get(sr, "reachable")));
    json_decref(h);
    cf_buf_free(&b);

    /* stopped: the last state stays visible */
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    cf_buf m = CF_BUF_INIT;
    cf_worker_metrics_text(w, &m);
    assert_true(sample(m.data, reach) == 0);
    assert_true(sample(m.data, errs) >= 2);
    cf_buf_free(&m);
    bool healthy = true;
    char *hs = cf_worker_health_json(w, &healthy);
    assert_false(healthy);
    free(hs);
    cf_worker_destroy(w);
}

int main(void) {
    cf_log_setup(CF_LOG_ERROR, CF_LOG_TEXT, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_converter_sr_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_shows_unreachable_registry, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
