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
#include <microhttpd.h>
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

static int setup(void **state) {
    fake *f = calloc(1, sizeof *f);
    f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, f, MHD_OPTION_NOTIFY_COMPLETED,
                            completed, f, MHD_OPTION_END);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_auth),
        cmocka_unit_test(test_register_request_shape_and_cache),
        cmocka_unit_test(test_retries_and_answers),
        cmocka_unit_test(test_failover),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
