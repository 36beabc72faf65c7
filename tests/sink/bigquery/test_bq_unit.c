/*
 * test_bq_unit.c - parts of the BigQuery target that need no server:
 * BigQuery's literal formats (DATE, TIMESTAMP as documented for the Storage
 * Write API), the Table resource parser (the REST API's documented JSON,
 * legacy type names as tables.get returns them), the writer schema's
 * refusals, and the service account JWT (RFC 7519 / 7515 RS256): its
 * signature is checked with OpenSSL's verifier and the key's public half,
 * its header and claims decoded as Google's token endpoint reads them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "cdcflow/bigquery.h"
#include "cdcflow/text.h"

static void test_literals(void **state) {
    (void)state;
    int32_t d;
    int64_t us;
    assert_true(cf_bq_parse_date("1970-01-01", 10, &d)), assert_int_equal(d, 0);
    assert_true(cf_bq_parse_date("2024-02-29", 10, &d)), assert_int_equal(d, 19782);
    assert_true(cf_bq_parse_date("0001-01-01", 10, &d)), assert_int_equal(d, -719162); /* BigQuery's DATE minimum */
    assert_true(cf_bq_parse_date("9999-12-31", 10, &d)), assert_int_equal(d, 2932896); /* and maximum */
    assert_false(cf_bq_parse_date("2023-02-29", 10, &d));
    assert_false(cf_bq_parse_date("2024-13-01", 10, &d));
    assert_false(cf_bq_parse_date("2024-1-01", 9, &d));
    assert_true(cf_bq_parse_timestamp("2024-04-30 11:19:44", 19, &us)), assert_int_equal(us, 1714475984000000LL);
    assert_true(cf_bq_parse_timestamp("2024-04-30T11:19:44.5Z", 22, &us)), assert_int_equal(us, 1714475984500000LL);
    assert_true(cf_bq_parse_timestamp("2024-04-30T13:19:44.123456+02:00", 32, &us));
    assert_int_equal(us, 1714475984123456LL);
    assert_true(cf_bq_parse_timestamp("1969-12-31 23:59:59.999", 23, &us)), assert_int_equal(us, -1000);
    assert_true(cf_bq_parse_timestamp("2024-04-30", 10, &us)), assert_int_equal(us, 1714435200000000LL);
    assert_false(cf_bq_parse_timestamp("2024-04-30 25:00:00", 19, &us));
    assert_false(cf_bq_parse_timestamp("2024-04-30 11:19:44.", 20, &us));
    assert_false(cf_bq_parse_timestamp("2024-04-30 11:19:44 junk", 24, &us));
}

static void test_table_parse(void **state) {
    (void)state;
    const char *j = "{\"kind\":\"bigquery#table\",\"etag\":\"abc==\",\"id\":\"p:d.t\",\"tableReference\":"
                    "{\"projectId\":\"p\",\"datasetId\":\"d\",\"tableId\":\"t\"},\"schema\":{\"fields\":["
                    "{\"name\":\"id\",\"type\":\"INTEGER\",\"mode\":\"REQUIRED\"},"
                    "{\"name\":\"f\",\"type\":\"FLOAT\"},{\"name\":\"b\",\"type\":\"BOOLEAN\",\"mode\":\"NULLABLE\"},"
                    "{\"name\":\"r\",\"type\":\"RECORD\",\"mode\":\"REPEATED\",\"fields\":[{\"name\":\"x\","
                    "\"type\":\"STRING\"}]}]},\"tableConstraints\":{\"primaryKey\":{\"columns\":[\"id\"]}},"
                    "\"labels\":{\"cdcflow_seq_sections\":\"2\"},\"maxStaleness\":\"0-0 0 0:0:15\"}";
    cf_bq_table t;
    cf_err e;
    assert_int_equal(cf_bq_table_parse(j, strlen(j), &t, &e), CF_OK);
    assert_int_equal(t.n_fields, 4);
    assert_int_equal(t.fields[0].type, CF_BQ_INT64);
    assert_int_equal(t.fields[0].mode, CF_BQ_REQUIRED);
    assert_int_equal(t.fields[1].type, CF_BQ_FLOAT64);
    assert_int_equal(t.fields[1].mode, CF_BQ_NULLABLE);
    assert_int_equal(t.fields[2].type, CF_BQ_BOOL);
    assert_int_equal(t.fields[3].type, CF_BQ_RECORD);
    assert_int_equal(t.fields[3].mode, CF_BQ_REPEATED);
    assert_int_equal(t.fields[3].n_fields, 1);
    assert_int_equal(t.n_pk, 1);
    assert_string_equal(t.pk[0], "id");
    assert_string_equal(t.etag, "abc==");
    assert_int_equal(t.seq_sections, 2);
    assert_string_equal(t.max_staleness, "0-0 0 0:0:15");
    cf_buf out = CF_BUF_INIT;
    cf_bq_fields_json(t.fields, t.n_fields, &out);
    assert_string_equal(out.data, "[{\"name\":\"id\",\"type\":\"INT64\",\"mode\":\"REQUIRED\"},{\"name\":\"f\",\"type\":"
                                  "\"FLOAT64\",\"mode\":\"NULLABLE\"},{\"name\":\"b\",\"type\":\"BOOL\",\"mode\":"
                                  "\"NULLABLE\"},{\"name\":\"r\",\"type\":\"RECORD\",\"mode\":\"REPEATED\","
                                  "\"fields\":[{\"name\":\"x\",\"type\":\"STRING\",\"mode\":\"NULLABLE\"}]}]");
    cf_buf_free(&out);
    cf_bq_table_free(&t);
    const char *bad[] = {"[]", "{\"schema\":{\"fields\":{}}}", "{\"schema\":{\"fields\":[{\"name\":1}]}}",
                         "{\"schema\":{\"fields\":[{\"name\":\"a\",\"type\":\"RANGE\"}]}}", "{"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_not_equal(cf_bq_table_parse(bad[i], strlen(bad[i]), &t, &e), CF_OK);
}

static void test_writer_refusals(void **state) {
    (void)state;
    cf_bq_field f[1] = {{(char *)"bad-name", CF_BQ_STRING, CF_BQ_NULLABLE, NULL, 0}};
    cf_buf d = CF_BUF_INIT;
    cf_err e;
    assert_int_equal(cf_bq_descriptor(f, 1, true, &d, &e), CF_ERR_SCHEMA);
    assert_non_null(strstr(e.hint, "sanitizeFieldNames"));
    f[0].name = (char *)"r";
    f[0].type = CF_BQ_RECORD;
    assert_int_equal(cf_bq_descriptor(f, 1, true, &d, &e), CF_ERR_SCHEMA);
    cf_buf_free(&d);
    cf_bq_rowenc *enc;
    f[0].name = (char *)"9x";
    assert_int_equal(cf_bq_rowenc_new(f, 1, true, &enc, &e), CF_ERR_SCHEMA);
    assert_true(cf_grpc_code_retryable(CF_GRPC_UNAVAILABLE));
    assert_true(cf_grpc_code_retryable(CF_GRPC_INTERNAL));
    assert_false(cf_grpc_code_retryable(CF_GRPC_INVALID_ARGUMENT));
    assert_false(cf_grpc_code_retryable(CF_GRPC_PERMISSION_DENIED));
}

static void b64url_dec(const char *s, size_t n, cf_buf *out) {
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int c = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
        int v = cf_base64_digit(c);
        assert_true(v >= 0);
        acc = acc << 6 | (uint32_t)v, bits += 6;
        if (bits >= 8) bits -= 8, cf_buf_append_byte(out, (uint8_t)(acc >> bits));
    }
}

static void test_jwt(void **state) {
    (void)state;
    EVP_PKEY *pk = EVP_RSA_gen(2048);
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, pk, NULL, NULL, 0, NULL, NULL);
    char *pem;
    long pn = BIO_get_mem_data(b, &pem);
    json_t *k = json_pack("{s:s,s:s,s:s#,s:s,s:s,s:s}", "type", "service_account", "private_key_id", "kid-1",
                          "private_key", pem, (int)pn, "client_email", "a@p.iam.gserviceaccount.com", "token_uri",
                          "https://oauth2.googleapis.com/token", "project_id", "p");
    char *key = json_dumps(k, 0);
    json_decref(k);
    BIO_free(b);
    cf_bq_auth_opts o = {0};
    o.source = CF_BQ_KEY_JSON;
    o.keyfile = key;
    cf_bq_auth *a;
    cf_err e;
    assert_int_equal(cf_bq_auth_new(&o, &a, &e), CF_OK);
    assert_string_equal(cf_bq_auth_project(a), "p");
    assert_null(strstr(cf_bq_auth_describe(a), "PRIVATE"));
    char *jwt;
    assert_int_equal(cf_bq_auth_jwt(a, 1700000000, &jwt, &e), CF_OK);
    char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    assert_non_null(d2);
    cf_buf h = CF_BUF_INIT, c = CF_BUF_INIT, sig = CF_BUF_INIT;
    b64url_dec(jwt, (size_t)(d1 - jwt), &h);
    b64url_dec(d1 + 1, (size_t)(d2 - d1 - 1), &c);
    b64url_dec(d2 + 1, strlen(d2 + 1), &sig);
    json_t *hj = json_loads(h.data, 0, NULL), *cj = json_loads(c.data, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(hj, "alg")), "RS256");
    assert_string_equal(json_string_value(json_object_get(hj, "kid")), "kid-1");
    assert_string_equal(json_string_value(json_object_get(cj, "iss")), "a@p.iam.gserviceaccount.com");
    assert_string_equal(json_string_value(json_object_get(cj, "aud")), "https://oauth2.googleapis.com/token");
    assert_string_equal(json_string_value(json_object_get(cj, "scope")), "https://www.googleapis.com/auth/bigquery");
    assert_int_equal(json_integer_value(json_object_get(cj, "iat")), 1700000000);
    assert_int_equal(json_integer_value(json_object_get(cj, "exp")), 1700003600);
    json_decref(hj), json_decref(cj);
    /* OpenSSL's verifier with the public key: RS256 = RSASSA-PKCS1-v1_5 over SHA-256 */
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pk), 1);
    assert_int_equal(EVP_DigestVerify(md, (const uint8_t *)sig.data, sig.len, (const uint8_t *)jwt, (size_t)(d2 - jwt)),
                     1);
    EVP_MD_CTX_free(md);
    cf_buf_free(&h), cf_buf_free(&c), cf_buf_free(&sig);
    free(jwt);
    cf_bq_auth_destroy(a);
    free(key);
    EVP_PKEY_free(pk);
    /* bad keys: named, the key never quoted */
    o.keyfile = "{\"type\":\"service_account\",\"client_email\":\"x@y\",\"private_key\":\"not a pem SECRET\"}";
    assert_int_equal(cf_bq_auth_new(&o, &a, &e), CF_OK);
    assert_int_equal(cf_bq_auth_jwt(a, 1, &jwt, &e), CF_ERR_CONFIG);
    assert_null(strstr(e.message, "SECRET"));
    cf_bq_auth_destroy(a);
    o.keyfile = "{\"type\":\"external_account\"}";
    assert_int_equal(cf_bq_auth_new(&o, &a, &e), CF_ERR_CONFIG);
    assert_non_null(strstr(e.message, "external_account"));
    o.keyfile = "{\"private_key\": \"SECRET";
    assert_int_equal(cf_bq_auth_new(&o, &a, &e), CF_ERR_CONFIG);
    assert_null(strstr(e.message, "SECRET")), assert_null(strstr(e.detail, "SECRET"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_table_parse),
        cmocka_unit_test(test_writer_refusals),
        cmocka_unit_test(test_jwt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
