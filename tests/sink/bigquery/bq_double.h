/*
 * bq_double.h - runs the BigQuery TEST DOUBLE (tests/bigquery/
 * bq_test_server.py: Google's own BigQueryWrite messages over gRPC, the
 * REST v2 tables, an OAuth token endpoint and a metadata server, with
 * BigQuery's CDC rules) for one test program, and talks to its control API
 * (/_test/: faults, row dumps, statistics). The double is a child process
 * of the test on free loopback ports; the test stops it at the end.
 *
 * Also makes a service account JSON key with a fresh RSA key (OpenSSL),
 * which the double's token endpoint checks JWTs against.
 *
 * Include after <cmocka.h>.
 */
#ifndef BQ_DOUBLE_H
#define BQ_DOUBLE_H

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../it_env.h"
#include "cdcflow/bigquery.h"

#define BQD_PROJECT "cdcflow-test"
#define BQD_DATASET "ds"
#define BQD_TOKEN "control-token"

typedef struct bq_double {
    pid_t pid;
    char dir[256];
    char grpc[128];      /* "http://127.0.0.1:port" for the sink (plaintext) */
    char http[128];      /* "http://127.0.0.1:port" */
    char token_uri[160];
    char metadata[160];  /* "http://127.0.0.1:port" */
    char keyfile[300];   /* a service account key the double accepts */
} bq_double;

static inline void bqd_write(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A service account key: a new RSA key in PKCS#8 PEM, as Google issues. */
static inline char *bqd_make_key(const char *email, const char *token_uri) {
    EVP_PKEY *pk = EVP_RSA_gen(2048);
    assert_non_null(pk);
    BIO *b = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_PrivateKey(b, pk, NULL, NULL, 0, NULL, NULL), 1);
    char *pem;
    long n = BIO_get_mem_data(b, &pem);
    json_t *o = json_pack("{s:s,s:s,s:s,s:s#,s:s,s:s,s:s}", "type", "service_account", "project_id", BQD_PROJECT,
                          "private_key_id", "k1", "private_key", pem, (int)n, "client_email", email, "client_id", "1",
                          "token_uri", token_uri);
    char *s = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    BIO_free(b);
    EVP_PKEY_free(pk);
    return s;
}

static inline void bqd_start(bq_double *d, const char *const *extra) {
    memset(d, 0, sizeof *d);
    const char *py = it_need_env("CF_TEST_PYTHON");
    snprintf(d->dir, sizeof d->dir, "/tmp/cf-bqd-%d-%ld", (int)getpid(), (long)time(NULL));
    assert_int_equal(mkdir(d->dir, 0700), 0);
    /* the key first: its token_uri is fixed up once the port is known, and
     * the sink is told the token URI separately anyway */
    snprintf(d->keyfile, sizeof d->keyfile, "%s/key.json", d->dir);
    char *key = bqd_make_key("sink@" BQD_PROJECT ".iam.gserviceaccount.com", "https://oauth2.googleapis.com/token");
    bqd_write(d->keyfile, key);
    free(key);
    char server[512], ready[300], logf[300];
    snprintf(server, sizeof server, "%s/../tests/bigquery/bq_test_server.py", CF_TESTS_DIR);
    snprintf(ready, sizeof ready, "%s/ready.json", d->dir);
    snprintf(logf, sizeof logf, "%s/double.log", d->dir);
    const char *argv[40];
    int k = 0;
    argv[k++] = py, argv[k++] = server, argv[k++] = "--grpc-port", argv[k++] = "0", argv[k++] = "--http-port";
    argv[k++] = "0", argv[k++] = "--ready-file", argv[k++] = ready, argv[k++] = "--dataset";
    argv[k++] = BQD_PROJECT "." BQD_DATASET, argv[k++] = "--service-account-key", argv[k++] = d->keyfile;
    argv[k++] = "--access-token", argv[k++] = BQD_TOKEN, argv[k++] = "--token-audience";
    argv[k++] = "https://oauth2.googleapis.com/token";
    for (const char *const *e = extra; e && *e && k < 38; e++) argv[k++] = *e;
    argv[k] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    extern char **environ;
    assert_int_equal(posix_spawn(&d->pid, py, &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    json_t *info = NULL;
    for (int i = 0; i < 600 && !info; i++) { /* up to 60 s: Python imports grpc and protobuf */
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
        info = json_load_file(ready, 0, NULL);
        int st;
        if (!info && waitpid(d->pid, &st, WNOHANG) == d->pid) {
            char cmd[400];
            snprintf(cmd, sizeof cmd, "cat '%s' >&2", logf);
            if (system(cmd)) {}
            fail_msg("the BigQuery test double exited at start");
        }
    }
    assert_non_null(info);
    snprintf(d->grpc, sizeof d->grpc, "http://%s", json_string_value(json_object_get(info, "grpc")));
    snprintf(d->http, sizeof d->http, "%s", json_string_value(json_object_get(info, "http")));
    snprintf(d->token_uri, sizeof d->token_uri, "%s", json_string_value(json_object_get(info, "token_uri")));
    snprintf(d->metadata, sizeof d->metadata, "http://%s", json_string_value(json_object_get(info, "metadata_host")));
    json_decref(info);
}

/* A control or REST call; returns the parsed JSON answer (caller decrefs)
 * and the status in *status. */
static inline json_t *bqd_call(const bq_double *d, const char *method, const char *path, const char *body,
                               long *status) {
    char url[600];
    snprintf(url, sizeof url, "%s%s", d->http, path);
    const char *h[] = {"Authorization: Bearer " BQD_TOKEN, "Content-Type: application/json", NULL};
    cf_bq_http_resp r;
    cf_err e;
    assert_int_equal(cf_bq_http(method, url, h, body, body ? strlen(body) : 0, 30000, &r, &e), CF_OK);
    if (status) *status = r.status;
    json_t *o = json_loadb(r.body.data, r.body.len, JSON_DECODE_ANY, NULL);
    cf_bq_http_resp_free(&r);
    return o;
}

static inline void bqd_fault(const bq_double *d, const char *rule_json) {
    long st;
    json_t *o = bqd_call(d, "POST", "/_test/faults", rule_json, &st);
    assert_int_equal(st, 200);
    json_decref(o);
}

static inline void bqd_reset(const bq_double *d) {
    long st;
    json_decref(bqd_call(d, "POST", "/_test/reset", "{}", &st));
    assert_int_equal(st, 200);
}

/* The table's live rows (the double's dump) as {"rows": [...], ...}. */
static inline json_t *bqd_rows(const bq_double *d, const char *table) {
    char path[300];
    snprintf(path, sizeof path, "/_test/rows?table=%s.%s.%s", BQD_PROJECT, BQD_DATASET, table);
    long st;
    json_t *o = bqd_call(d, "GET", path, NULL, &st);
    if (st != 200) {
        char *s = json_dumps(o, 0);
        fprintf(stderr, "rows of %s: HTTP %ld %s\n", table, st, s ? s : "");
        free(s);
    }
    assert_int_equal(st, 200);
    return o;
}

static inline void bqd_stop(bq_double *d) {
    if (d->pid <= 0) return;
    long st;
    json_decref(bqd_call(d, "POST", "/_test/shutdown", "{}", &st));
    int ws;
    for (int i = 0; i < 100; i++) {
        if (waitpid(d->pid, &ws, WNOHANG) == d->pid) {
            d->pid = 0;
            break;
        }
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    if (d->pid > 0) { /* our own child, by its pid */
        kill(d->pid, SIGKILL);
        waitpid(d->pid, &ws, 0);
        d->pid = 0;
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd)) {}
}

/* Sink options for the double. */
static inline void bqd_options(const bq_double *d, cf_sink_options *o) {
    cf_sink_options_default(o);
    o->target = "bigquery";
    o->bq.project = BQD_PROJECT;
    o->bq.default_dataset = BQD_DATASET;
    o->bq.keyfile = d->keyfile;
    o->bq.key_source = "FILE";
    o->bq.storage_endpoint = d->grpc;
    o->bq.api_endpoint = d->http;
    o->bq.token_uri = d->token_uri;
    o->bq.retries = 10;
    o->bq.retry_wait_ms = 5;
    o->bq.timeout_ms = 20000;
}

#endif
