/*
 * test_avro_registry_http.c - the Schema Registry client's HTTP behaviour against a scripted
 * HTTP server (libmicrohttpd, in this process, 127.0.0.1, ephemeral port): HTTP basic
 * authentication, the request shapes (method, path, content type, body), retries of 5xx with
 * backoff, fail-over between URLs, and how answers map to error codes.
 *
 * The answers follow the Confluent Schema Registry REST API reference (error bodies
 * {"error_code": 40101, "message": ...}; 40403 schema not found; 42201 invalid schema;
 * "schemaType" absent for Avro). The real registry is exercised by test_it_avro_registry.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/buf.h"
#include "cdcflow/schema_registry.h"

typedef struct fake {
    struct MHD_Daemon *d;
    int port;
    int hits_503;      /* /schemas/ids/2 answers 503 this many times first */
    int requests;
    char last_body[1024];
    char last_ctype[128];
    char last_method[16];
    char last_url[256];
} fake;

typedef struct upload {
    cf_buf body;
} upload;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body) {
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/vnd.schemaregistry.v1+json");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_data_size,
                               void **con_cls) {
    (void)version;
    fake *f = cls;
    if (!*con_cls) {
        upload *u = calloc(1, sizeof *u);
        *con_cls = u;
        return MHD_YES;
    }
    upload *u = *con_cls;
    if (*upload_data_size) {
        cf_buf_append(&u->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    f->requests++;
    snprintf(f->last_body, sizeof f->last_body, "%s", u->body.data ? u->body.data : "");
    snprintf(f->last_method, sizeof f->last_method, "%s", method);
    snprintf(f->last_url, sizeof f->last_url, "%s", url);
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    snprintf(f->last_ctype, sizeof f->last_ctype, "%s", ct ? ct : "");
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");

    if (strcmp(url, "/schemas/ids/1") == 0) {
        /* base64("user:pa:ss") = dXNlcjpwYTpzcw== */
        if (!auth || strcmp(auth, "Basic dXNlcjpwYTpzcw==") != 0)
            return reply(c, 401, "{\"error_code\":40101,\"message\":\"Unauthorized\"}");
        return reply(c, 200, "{\"schema\":\"\\\"string\\\"\"}");
    }
    if (strcmp(url, "/schemas/ids/2") == 0) {
        if (f->hits_503 > 0) {
            f->hits_503--;
            return reply(c, 503, "{\"error_code\":50003,\"message\":\"busy\"}");
        }
        return reply(c, 200, "{\"schema\":\"\\\"long\\\"\"}");
    }
    if (strcmp(url, "/schemas/ids/3") == 0)
        return reply(c, 200, "{\"schema\":\"syntax = \\\"proto3\\\";\",\"schemaType\":\"PROTOBUF\"}");
    if (strcmp(url, "/schemas/ids/4") == 0) return reply(c, 200, "<html>not json</html>");
    if (strcmp(url, "/schemas/ids/5") == 0) return reply(c, 500, "{\"error_code\":50001,\"message\":\"store down\"}");
    if (strcmp(url, "/subjects/orders-value/versions") == 0 && strcmp(method, "POST") == 0)
        return reply(c, 200, "{\"id\":7}");
    if (strcmp(url, "/subjects/invalid-value/versions") == 0)
        return reply(c, 422, "{\"error_code\":42201,\"message\":\"Invalid schema\"}");
    if (strcmp(url, "/subjects/orders-value") == 0 && strcmp(method, "POST") == 0)
        return reply(c, 404, "{\"error_code\":40403,\"message\":\"Schema not found\"}");
    if (strcmp(url, "/subjects/orders-value/versions/latest") == 0)
        return reply(c, 200, "{\"subject\":\"orders-value\",\"id\":9,\"version\":3,\"schema\":\"\\\"int\\\"\"}");
    return reply(c, 404, "{\"error_code\":40401,\"message\":\"Subject not found\"}");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)c;
    (void)toe;
    upload *u = *con_cls;
    if (u) {
        cf_buf_free(&u->body);
        free(u);
        *con_cls = NULL;
    }
}

static struct sockaddr_in loopback(void) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    return sa;
}

static int setup(void **state) {
    fake *f = calloc(1, sizeof *f);
    struct sockaddr_in sa = loopback();
    f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, f, MHD_OPTION_NOTIFY_COMPLETED,
                            completed, f, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
    if (!f->d) return -1;
    f->port = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT)->port;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fake *f = *state;
    MHD_stop_daemon(f->d);
    free(f);
    return 0;
}

static cf_sr_client *client(fake *f, const char *user_info, int retries) {
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    cfg.urls = url;
    cfg.max_retries = retries;
    cfg.backoff_ms = 10;
    cfg.backoff_max_ms = 40;
    if (user_info) {
        cfg.basic_auth_source = "USER_INFO";
        cfg.basic_auth_user_info = user_info;
    }
    cf_sr_client *c;
    cf_err err;
    assert_int_equal(cf_sr_client_new(&cfg, &c, &err), CF_OK);
    return c;
}

static void test_basic_auth(void **state) {
    fake *f = *state;
    cf_err err;
    char *s = NULL;
    cf_sr_client *c = client(f, "user:pa:ss", 0); /* the password may contain ':' */
    assert_int_equal(cf_sr_get_by_id(c, 1, &s, &err), CF_OK);
    assert_string_equal(s, "\"string\"");
    assert_string_equal(f->last_method, "GET");
    free(s);
    cf_sr_client_destroy(c);

    c = client(f, NULL, 0);
    assert_int_equal(cf_sr_get_by_id(c, 1, &s, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "401"));
    assert_non_null(strstr(err.detail, "40101"));
    assert_non_null(strstr(err.hint, "basic.auth"));
    cf_sr_status st;
    cf_sr_client_status(c, &st);
    assert_true(st.reachable); /* a 401 is an answer: the registry is reachable */
    cf_sr_client_destroy(c);

    c = client(f, "user:wrong", 0);
    assert_int_equal(cf_sr_get_by_id(c, 1, &s, &err), CF_ERR_CONFIG);
    cf_sr_client_destroy(c);

    /* basic.auth.credentials.source=URL: credentials in the URL, never in messages */
    char url[128];
    snprintf(url, sizeof url, "http://user:pa%%3Ass@127.0.0.1:%d", f->port);
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    cfg.urls = url;
    cfg.basic_auth_source = "URL";
    assert_int_equal(cf_sr_client_new(&cfg, &c, &err), CF_OK);
    assert_int_equal(cf_sr_get_by_id(c, 1, &s, &err), CF_OK);
    free(s);
    assert_int_equal(cf_sr_get_by_id(c, 987, &s, &err), CF_ERR_NOT_FOUND);
    assert_null(strstr(err.where, "pa%3Ass"));
    assert_non_null(strstr(err.where, "http://127.0.0.1:"));
    cf_sr_client_destroy(c);
}

static void test_register_request_shape_and_cache(void **state) {
    fake *f = *state;
    cf_err err;
    cf_sr_client *c = client(f, NULL, 0);
    int32_t id;
    const char *schema = "{\"type\":\"record\",\"name\":\"O\",\"fields\":[]}";
    int before = f->requests;
    assert_int_equal(cf_sr_register(c, "orders-value", schema, &id, &err), CF_OK);
    assert_int_equal(id, 7);
    assert_string_equal(f->last_method, "POST");
    assert_string_equal(f->last_url, "/subjects/orders-value/versions");
    assert_string_equal(f->last_ctype, "application/vnd.schemaregistry.v1+json");
    assert_string_equal(f->last_body, "{\"schema\":\"{\\\"type\\\":\\\"record\\\",\\\"name\\\":\\\"O\\\",\\\"fields\\\":[]}\"}");
    assert_int_equal(cf_sr_register(c, "orders-value", schema, &id, &err), CF_OK);
    assert_int_equal(f->requests, before + 1); /* second time from the cache */
    /* the registered schema is now known by id without a request */
    char *s;
    assert_int_equal(cf_sr_get_by_id(c, 7, &s, &err), CF_OK);
    assert_string_equal(s, schema);
    free(s);
    assert_int_equal(f->requests, before + 1);
    /* lookup: 40403 -> not found, with a hint about auto.register.schemas */
    assert_int_equal(cf_sr_lookup(c, "orders-value", schema, &id, NULL, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.detail, "40403"));
    assert_non_null(strstr(err.hint, "auto.register.schemas"));
    /* latest */
    int32_t ver;
    assert_int_equal(cf_sr_get_latest(c, "orders-value", &id, &ver, &s, &err), CF_OK);
    assert_int_equal(id, 9);
    assert_int_equal(ver, 3);
    assert_string_equal(s, "\"int\"");
    free(s);
    /* 422 -> invalid */
    assert_int_equal(cf_sr_register(c, "invalid-value", schema, &id, &err), CF_ERR_INVALID);
    assert_non_null(strstr(err.detail, "42201"));
    cf_sr_client_destroy(c);
}

static void test_retries_and_answers(void **state) {
    fake *f = *state;
    cf_err err;
    char *s = NULL;
    /* two 503s, then an answer: two retries are enough */
    f->hits_503 = 2;
    cf_sr_client *c = client(f, NULL, 2);
    int before = f->requests;
    assert_int_equal(cf_sr_get_by_id(c, 2, &s, &err), CF_OK);
    assert_string_equal(s, "\"long\"");
    free(s);
    assert_int_equal(f->requests, before + 3);
    cf_sr_status st;
    cf_sr_client_status(c, &st);
    assert_true(st.reachable);
    assert_int_equal(st.errors, 2);
    assert_non_null(strstr(st.last_error, "503"));
    cf_sr_client_destroy(c);

    /* persistent 500: CF_ERR_AGAIN after the retries */
    c = client(f, NULL, 1);
    assert_int_equal(cf_sr_get_by_id(c, 5, &s, &err), CF_ERR_AGAIN);
    cf_sr_client_status(c, &st);
    assert_false(st.reachable);
    assert_int_equal(st.errors, 2);
    cf_sr_client_destroy(c);

    /* not Avro, not JSON */
    c = client(f, NULL, 0);
    assert_int_equal(cf_sr_get_by_id(c, 3, &s, &err), CF_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "PROTOBUF"));
    assert_int_equal(cf_sr_get_by_id(c, 4, &s, &err), CF_ERR_INVALID);
    assert_non_null(strstr(err.detail, "not json"));
    cf_sr_client_destroy(c);
}

static void test_failover(void **state) {
    fake *f = *state;
    char urls[256];
    snprintf(urls, sizeof urls, "http://127.0.0.1:1/, http://127.0.0.1:%d/", f->port);
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    cfg.urls = urls;
    cfg.max_retries = 0;
    cf_sr_client *c;
    cf_err err;
    assert_int_equal(cf_sr_client_new(&cfg, &c, &err), CF_OK);
    char *s;
    assert_int_equal(cf_sr_get_by_id(c, 2, &s, &err), CF_OK);
    free(s);
    cf_sr_status st;
    cf_sr_client_status(c, &st);
    assert_true(st.reachable);
    assert_int_equal(st.errors, 1); /* the dead first URL */
    /* the URL that answered is tried first next time */
    uint64_t errs = st.errors;
    assert_int_equal(cf_sr_get_latest(c, "orders-value", &(int32_t){0}, NULL, &s, &err), CF_OK);
    free(s);
    cf_sr_client_status(c, &st);
    assert_int_equal(st.errors, errs);
    cf_sr_client_destroy(c);
}

/* ---------------- TLS ---------------- */

static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    cf_buf b = CF_BUF_INIT;
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, fp)) > 0) cf_buf_append(&b, tmp, n);
    fclose(fp);
    return cf_buf_detach(&b, NULL);
}

/* A CA, a server certificate for 127.0.0.1/localhost and a client certificate, made with
 * Debian's openssl command for this run. */
static void test_tls(void **state) {
    (void)state;
    char dir[] = "/tmp/cf-avro-tls-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && exec >openssl.log 2>&1 && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=cdcflow-test-ca && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 && "
             "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > ext && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout cli.key -out cli.csr -subj /CN=client && "
             "openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cli.pem -days 2",
             dir);
    assert_int_equal(system(cmd), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/srv.key", dir);
    char *key = slurp(path);
    snprintf(path, sizeof path, "%s/srv.pem", dir);
    char *cert = slurp(path);
    assert_non_null(key);
    assert_non_null(cert);
    fake f = {0};
    struct sockaddr_in sa = loopback();
    f.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS, 0, NULL, NULL, handler, &f,
                           MHD_OPTION_NOTIFY_COMPLETED, completed, &f, MHD_OPTION_SOCK_ADDR, &sa,
                           MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_END);
    assert_non_null(f.d);
    f.port = MHD_get_daemon_info(f.d, MHD_DAEMON_INFO_BIND_PORT)->port;

    char url[128], ca[512], ccert[512], ckey[512];
    snprintf(url, sizeof url, "https://127.0.0.1:%d", f.port);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    snprintf(ccert, sizeof ccert, "%s/cli.pem", dir);
    snprintf(ckey, sizeof ckey, "%s/cli.key", dir);
    cf_props *p = cf_props_new();
    cf_props_set(p, "schema.registry.url", url);
    cf_props_set(p, "schema.registry.retries", "0");
    cf_props_set(p, "schema.registry.request.timeout.ms", "120000"); /* TLS under valgrind is slow */
    cf_sr_config cfg;
    cf_sr_client *c;
    cf_err err;
    char *s;

    /* not trusted: a configuration error, not retried, registry not marked unreachable */
    cf_sr_config_init(&cfg);
    assert_int_equal(cf_sr_config_from_props(&cfg, p, &err), CF_OK);
    assert_int_equal(cf_sr_client_new(&cfg, &c, &err), CF_OK);
    cf_code rc = cf_sr_get_by_id(c, 2, &s, &err);
    if (rc != CF_ERR_CONFIG) fail_msg("untrusted server: expected CF_ERR_CONFIG, got %s: %s (%s)", cf_code_name(rc), err.message, err.detail);
    assert_non_null(strstr(err.hint, "schema.registry.ssl"));
    cf_sr_status st;
    cf_sr_client_status(c, &st);
    assert_true(st.reachable);
    assert_int_equal(st.errors, 1);
    cf_sr_client_destroy(c);

    /* trusted through schema.registry.ssl.ca.location, with a client certificate */
    cf_props_set(p, "schema.registry.ssl.ca.location", ca);
    cf_props_set(p, "schema.registry.ssl.certificate.location", ccert);
    cf_props_set(p, "schema.registry.ssl.key.location", ckey);
    cf_sr_config_init(&cfg);
    assert_int_equal(cf_sr_config_from_props(&cfg, p, &err), CF_OK);
    assert_int_equal(cf_sr_client_new(&cfg, &c, &err), CF_OK);
    rc = cf_sr_get_by_id(c, 2, &s, &err);
    if (rc) fail_msg("%s: %s", err.message, err.detail);
    assert_string_equal(s, "\"long\"");
    free(s);
    cf_sr_client_destroy(c);

    /* a client certificate that does not exist */
    cf_props_set(p, "schema.registry.ssl.certificate.location", "/nonexistent/cli.pem");
    cf_sr_config_init(&cfg);
    assert_int_equal(cf_sr_config_from_props(&cfg, p, &err), CF_OK);
    assert_int_equal(cf_sr_client_new(&cfg, &c, &err), CF_OK);
    assert_int_equal(cf_sr_get_by_id(c, 2, &s, &err), CF_ERR_CONFIG);
    cf_sr_client_destroy(c);

    /* host name checks off (ssl.endpoint.identification.algorithm empty) still verifies the CA */
    cf_props_remove(p, "schema.registry.ssl.certificate.location");
    cf_props_remove(p, "schema.registry.ssl.key.location");
    cf_props_set(p, "schema.registry.ssl.endpoint.identification.algorithm", "");
    snprintf(url, sizeof url, "https://localhost:%d", f.port);
    cf_props_set(p, "schema.registry.url", url);
    cf_sr_config_init(&cfg);
    assert_int_equal(cf_sr_config_from_props(&cfg, p, &err), CF_OK);
    assert_false(cfg.ssl_verify_host);
    assert_int_equal(cf_sr_client_new(&cfg, &c, &err), CF_OK);
    rc = cf_sr_get_by_id(c, 2, &s, &err);
    if (rc) fail_msg("%s: %s", err.message, err.detail);
    free(s);
    cf_sr_client_destroy(c);

    cf_props_destroy(p);
    MHD_stop_daemon(f.d);
    free(key);
    free(cert);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_auth),
        cmocka_unit_test(test_register_request_shape_and_cache),
        cmocka_unit_test(test_retries_and_answers),
        cmocka_unit_test(test_failover),
    };
    const struct CMUnitTest tls_tests[] = {
        cmocka_unit_test(test_tls),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    failed += cmocka_run_group_tests(tls_tests, NULL, NULL);
    return failed;
}
