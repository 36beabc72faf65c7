/*
 * test_rest.c - the worker's REST API over real HTTP (libcurl against the
 * running libmicrohttpd server): Kafka Connect's paths, status codes and
 * error bodies ({"error_code": N, "message": "..."}) as documented in
 * Connect's REST API reference: 201 on create, 409 on a duplicate name,
 * 404 for an unknown connector, 400 for bad JSON, 202 for pause/resume,
 * 204 for restart and delete; plus the bearer token (401) and /metrics.
 *
 * The plugins are defined here (a source that never ends, a sink that keeps
 * nothing).
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
#include <curl/curl.h>
#include <jansson.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/worker.h"

static cf_code src_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    (void)cfg, (void)ctx, (void)err;
    *task = calloc(1, sizeof(int64_t));
    return CF_OK;
}
static cf_code src_poll(void *task, cf_record **out, size_t max, size_t *n, cf_err *err) {
    (void)err;
    int64_t *i = task;
    *n = 0;
    if (max < 1) return CF_OK;
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "ticks");
    cf_record_set_value(r, cf_schema_primitive(CF_INT64, false), cf_value_int64(*i));
    cf_value *p = cf_value_map(), *o = cf_value_map();
    cf_value_map_put(p, cf_value_string("clock"), cf_value_string("c"));
    cf_value_map_put(o, cf_value_string("tick"), cf_value_int64((*i)++));
    cf_record_set_source(r, p, o);
    out[(*n)++] = r;
    usleep(2000);
    return CF_OK;
}
static void src_stop(void *task) { free(task); }

static const char *const ticker_aliases[] = {"org.example.Ticker", NULL};
static const cf_connector_plugin ticker = {
    "ticker", ticker_aliases, CF_CONNECTOR_SOURCE, "ticks", "2.0", NULL, {.source = {.start = src_start, .poll = src_poll, .stop = src_stop}},
};

static cf_code sink_start(const cf_config *cfg, cf_sink_ctx *ctx, void **task, cf_err *err) {
    (void)cfg, (void)ctx, (void)err;
    *task = NULL;
    return CF_OK;
}
static cf_code sink_put(void *task, cf_record *const *r, size_t n, cf_err *err) {
    (void)task, (void)r, (void)n, (void)err;
    return CF_OK;
}
static cf_code sink_flush(void *task, cf_err *err) {
    (void)task, (void)err;
    return CF_OK;
}
static void sink_stop(void *task) { (void)task; }
static const cf_connector_plugin nullsink = {
    "null-sink", NULL, CF_CONNECTOR_SINK, "drops", "1.0", NULL, {.sink = {.start = sink_start, .put = sink_put, .flush = sink_flush, .stop = sink_stop}},
};

static const cf_connector_plugin *const plugins[] = {&ticker, &nullsink, NULL};

static char tmpdir[256];
static cf_worker *w;
static int port;
static const char *token = "s3cret-token";

typedef struct resp {
    long status;
    cf_buf body;
    json_t *json;
} resp;

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
    cf_buf_append(ud, p, sz * n);
    return sz * n;
}

static resp http(const char *method, const char *path, const char *body, bool auth) {
    resp r = {0, CF_BUF_INIT, NULL};
    CURL *c = curl_easy_init();
    char url[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char ah[128];
    snprintf(ah, sizeof ah, "Authorization: Bearer %s", token);
    if (auth) h = curl_slist_append(h, ah);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    CURLcode cc = curl_easy_perform(c);
    assert_int_equal(cc, CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (r.body.len) r.json = json_loadb(r.body.data, r.body.len, JSON_DECODE_ANY, NULL);
    return r;
}

static void resp_free(resp *r) {
    cf_buf_free(&r->body);
    json_decref(r->json);
}

static void assert_error_body(resp *r, long code) {
    assert_int_equal(r->status, code);
    assert_non_null(r->json);
    assert_int_equal(json_integer_value(json_object_get(r->json, "error_code")), code);
    assert_true(json_is_string(json_object_get(r->json, "message")));
}

/* a module's extra path (cf_worker_opts.routes) */
static int extra_route(void *arg, cf_worker *wk, const char *method, const char *path, const char *body,
                       size_t body_len, const char **ctype, cf_buf *out) {
    (void)arg, (void)wk, (void)ctype;
    if (strcmp(path, "/extra/none") == 0) return 0; /* not mine: 404 */
    cf_buf_printf(out, "{\"method\":\"%s\",\"path\":\"%s\",\"body\":%zu}", method, path, body_len);
    (void)body;
    return strcmp(method, "PUT") == 0 ? 201 : 200;
}
static const cf_worker_route routes[] = {{"/extra/", extra_route, NULL}};

static int setup(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cf_test_rest_XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char off[300];
    snprintf(off, sizeof off, "%s/offsets.json", tmpdir);
    cf_props *wp = cf_props_new();
    cf_props_set(wp, "offset.storage.file.filename", off);
    cf_props_set(wp, "rest.port", "0");
    cf_props_set(wp, "rest.auth.token", token);
    cf_props_set(wp, "offset.flush.interval.ms", "100");
    cf_worker_opts o = {.plugins = plugins, .rest = true, .routes = routes, .n_routes = 1};
    cf_err err;
    assert_int_equal(cf_worker_new(wp, &o, &w, &err), CF_OK);
    cf_props_destroy(wp);
    assert_int_equal(cf_worker_start(w, &err), CF_OK);
    port = cf_worker_rest_port(w);
    assert_true(port > 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    cf_worker_stop(w);
    cf_worker_run(w, false, NULL);
    cf_worker_destroy(w);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static void test_auth(void **state) {
    (void)state;
    resp r = http("GET", "/connectors", NULL, false);
    assert_error_body(&r, 401);
    resp_free(&r);
    r = http("GET", "/", NULL, true);
    assert_int_equal(r.status, 200);
    assert_true(json_is_string(json_object_get(r.json, "version")));
    resp_free(&r);
}

/* a module's extra paths: behind the token, answered by its handler, 404 when it declines */
static void test_extra_routes(void **state) {
    (void)state;
    resp r = http("GET", "/extra/thing", NULL, false);
    assert_error_body(&r, 401);
    resp_free(&r);
    r = http("PUT", "/extra/thing", "{\"a\":1}", true);
    assert_int_equal(r.status, 201);
    assert_string_equal(json_string_value(json_object_get(r.json, "method")), "PUT");
    assert_string_equal(json_string_value(json_object_get(r.json, "path")), "/extra/thing");
    assert_int_equal(json_integer_value(json_object_get(r.json, "body")), 7);
    resp_free(&r);
    r = http("GET", "/extra/none", NULL, true);
    assert_error_body(&r, 404);
    resp_free(&r);
}

static void test_lifecycle(void **state) {
    (void)state;
    resp r = http("GET", "/connectors", NULL, true);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.data, "[]");
    resp_free(&r);

    /* bad JSON -> 400 */
    r = http("POST", "/connectors", "{\"name\": \"x\", \"config\": {", true);
    assert_error_body(&r, 400);
    resp_free(&r);
    /* invalid config (unknown class) -> 400 */
    r = http("POST", "/connectors", "{\"name\":\"x\",\"config\":{\"connector.class\":\"nope\"}}", true);
    assert_error_body(&r, 400);
    resp_free(&r);

    const char *create = "{\"name\":\"clock\",\"config\":{\"connector.class\":\"org.example.Ticker\",\"tasks.max\":\"2\"}}";
    r = http("POST", "/connectors", create, true);
    assert_int_equal(r.status, 201);
    assert_string_equal(json_string_value(json_object_get(r.json, "name")), "clock");
    assert_string_equal(json_string_value(json_object_get(r.json, "type")), "source");
    assert_int_equal(json_array_size(json_object_get(r.json, "tasks")), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(r.json, "tasks"), 1), "connector")), "clock");
    resp_free(&r);
    /* duplicate -> 409 */
    r = http("POST", "/connectors", create, true);
    assert_error_body(&r, 409);
    resp_free(&r);

    r = http("PUT", "/connectors/sink1/config", "{\"connector.class\":\"null-sink\",\"topics\":\"ticks\"}", true);
    assert_int_equal(r.status, 201);
    resp_free(&r);
    r = http("PUT", "/connectors/sink1/config", "{\"connector.class\":\"null-sink\",\"topics\":\"ticks,other\"}", true);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    r = http("GET", "/connectors/sink1/config", NULL, true);
    assert_int_equal(r.status, 200);
    assert_string_equal(json_string_value(json_object_get(r.json, "topics")), "ticks,other");
    assert_string_equal(json_string_value(json_object_get(r.json, "name")), "sink1");
    resp_free(&r);

    usleep(300 * 1000);
    r = http("GET", "/connectors/clock/status", NULL, true);
    assert_int_equal(r.status, 200);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "connector"), "state")), "RUNNING");
    json_t *t0 = json_array_get(json_object_get(r.json, "tasks"), 0);
    assert_int_equal(json_integer_value(json_object_get(t0, "id")), 0);
    assert_string_equal(json_string_value(json_object_get(t0, "state")), "RUNNING");
    assert_non_null(strstr(json_string_value(json_object_get(t0, "worker_id")), "127.0.0.1:"));
    resp_free(&r);

    r = http("PUT", "/connectors/clock/pause", NULL, true);
    assert_int_equal(r.status, 202);
    resp_free(&r);
    usleep(300 * 1000);
    r = http("GET", "/connectors/clock/status", NULL, true);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "connector"), "state")), "PAUSED");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r.json, "tasks"), 0), "state")),
                        "PAUSED");
    resp_free(&r);
    r = http("PUT", "/connectors/clock/resume", NULL, true);
    assert_int_equal(r.status, 202);
    resp_free(&r);
    r = http("POST", "/connectors/clock/restart", NULL, true);
    assert_int_equal(r.status, 204);
    resp_free(&r);
    r = http("POST", "/connectors/clock/restart?includeTasks=true", NULL, true);
    assert_int_equal(r.status, 202);
    assert_string_equal(json_string_value(json_object_get(r.json, "name")), "clock");
    resp_free(&r);

    r = http("GET", "/connectors?expand=status", NULL, true);
    assert_int_equal(r.status, 200);
    assert_non_null(json_object_get(json_object_get(r.json, "clock"), "status"));
    resp_free(&r);

    r = http("GET", "/connector-plugins", NULL, true);
    assert_int_equal(r.status, 200);
    assert_true(json_array_size(r.json) >= 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r.json, 0), "class")), "org.example.Ticker");
    assert_string_equal(json_string_value(json_object_get(json_array_get(r.json, 0), "type")), "source");
    resp_free(&r);

    /* 404s */
    r = http("GET", "/connectors/ghost/status", NULL, true);
    assert_error_body(&r, 404);
    assert_string_equal(json_string_value(json_object_get(r.json, "message")), "Connector ghost not found");
    resp_free(&r);
    r = http("DELETE", "/connectors/ghost", NULL, true);
    assert_error_body(&r, 404);
    resp_free(&r);
    r = http("PUT", "/connectors/ghost/pause", NULL, true);
    assert_error_body(&r, 404);
    resp_free(&r);
    r = http("GET", "/nowhere", NULL, true);
    assert_error_body(&r, 404);
    resp_free(&r);

    /* metrics: Prometheus text with per-task series */
    r = http("GET", "/metrics", NULL, true);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body.data, "# TYPE cdcflow_task_records_in_total counter\n"));
    assert_non_null(strstr(r.body.data, "cdcflow_task_records_in_total{connector=\"clock\",task=\"1\",type=\"source\"} "));
    assert_non_null(strstr(r.body.data, "cdcflow_task_offset_commit_last_seconds{connector=\"clock\""));
    assert_non_null(strstr(r.body.data, "cdcflow_task_state{connector=\"clock\",task=\"0\",state=\"RUNNING\"} 1\n"));
    /* every sample line is "name{labels} number" */
    for (char *line = strtok(r.body.data, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char *sp = strrchr(line, ' ');
        assert_non_null(sp);
        char *end;
        strtod(sp + 1, &end);
        assert_true(*end == 0);
    }
    resp_free(&r);

    r = http("DELETE", "/connectors/clock", NULL, true);
    assert_int_equal(r.status, 204);
    resp_free(&r);
    r = http("GET", "/connectors", NULL, true);
    assert_string_equal(r.body.data, "[\"sink1\"]");
    resp_free(&r);
}

/* HTTPS with a certificate and key (PEM), checked by curl against the certificate */
static void test_https(void **state) {
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s/key.pem -out %s/cert.pem -days 1 "
             "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
             tmpdir, tmpdir);
    assert_int_equal(system(cmd), 0);
    char cert[300], key[300], off[300];
    snprintf(cert, sizeof cert, "%s/cert.pem", tmpdir);
    snprintf(key, sizeof key, "%s/key.pem", tmpdir);
    snprintf(off, sizeof off, "%s/offsets2.json", tmpdir);
    cf_props *wp = cf_props_new();
    cf_props_set(wp, "offset.storage.file.filename", off);
    cf_props_set(wp, "listeners", "https://127.0.0.1:0");
    cf_props_set(wp, "listeners.https.ssl.certificate.location", cert);
    cf_props_set(wp, "listeners.https.ssl.key.location", key);
    cf_worker_opts o = {.plugins = plugins, .rest = true};
    cf_worker *w2 = NULL;
    cf_err err;
    assert_int_equal(cf_worker_new(wp, &o, &w2, &err), CF_OK);
    cf_props_destroy(wp);
    assert_int_equal(cf_worker_start(w2, &err), CF_OK);
    CURL *c = curl_easy_init();
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d/connector-plugins", cf_worker_rest_port(w2));
    cf_buf body = CF_BUF_INIT;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, cert);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body.data, "org.example.Ticker"));
    curl_easy_cleanup(c);
    cf_buf_free(&body);
    cf_worker_destroy(w2);
}

int main(void) {
    cf_log_setup(getenv("CF_TEST_VERBOSE") ? CF_LOG_DEBUG : CF_LOG_WARN, CF_LOG_TEXT, stderr);
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_extra_routes),
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_https),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
