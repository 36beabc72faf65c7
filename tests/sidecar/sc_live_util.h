/*
 * sc_live_util.h - what the sidecar tests against the live Cassandra 5.0
 * node of scripts/servers share (test_it_sidecar_live.c,
 * test_it_sidecar_ring.c): the node's address ($CF_TEST_CASSANDRA) and
 * cdc_raw ($CF_TEST_CASSANDRA_CDC_RAW; the program fails without them), a
 * keyspace of the run with the CDC table t (k int PRIMARY KEY, v text,
 * n bigint), CQL statements to it, the engine's options over the node's
 * cdc_raw, and a collector of the events of the run's keyspace.
 *
 * One test program includes it (its state is the program's: one node, one
 * keyspace); include cmocka first.
 */
#ifndef SC_LIVE_UTIL_H
#define SC_LIVE_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../it_env.h"
#include "cdcflow/cassandra_cql.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"

static char live_host[128], ks[64];
static const char *live_raw; /* the node's cdc_raw */
static cf_cql_options live_cql;
static cf_cql_conn *conn;

/* Run one statement (printf-style) at ONE; a failure fails the test. */
static inline void q(const char *fmt, ...) {
    char cql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cql, sizeof cql, fmt, ap);
    va_end(ap);
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err) != CF_OK) fail_msg("%s: %s / %s", cql, err.message, err.detail);
    cf_cql_result_free(r);
}

/* Connect to the node and create the keyspace "<prefix>_<pid>_<time>" (ks)
 * with its CDC table t. */
static inline void live_setup(const char *prefix) {
    const char *env = it_need_env("CF_TEST_CASSANDRA");
    live_raw = it_need_env("CF_TEST_CASSANDRA_CDC_RAW");
    const char *colon = strrchr(env, ':');
    assert_non_null(colon);
    snprintf(live_host, sizeof live_host, "%.*s", (int)(colon - env), env);
    snprintf(ks, sizeof ks, "%s_%d_%u", prefix, (int)getpid(), (unsigned)time(NULL) % 100000);
    live_cql = (cf_cql_options){.host = live_host, .port = atoi(colon + 1), .request_timeout_ms = 60000};
    cf_err err;
    if (cf_cql_connect(&live_cql, &conn, &err) != CF_OK)
        fail_msg("connect %s:%d: %s / %s", live_host, live_cql.port, err.message, err.detail);
    q("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ks);
    q("CREATE TABLE %s.t (k int PRIMARY KEY, v text, n bigint) WITH cdc = true", ks);
}

/* Drop the keyspace and close the connection. */
static inline void live_teardown(void) {
    q("DROP KEYSPACE IF EXISTS %s", ks);
    cf_cql_close(conn);
}

/* An engine over the node's cdc_raw at ONE, its schema read over CQL into
 * schema; the node's segments are never deleted (cleanup none). */
static inline cf_sc_engine_opts live_opts(cf_cass_schema *schema) {
    return (cf_sc_engine_opts){.dirs = &live_raw, .n_dirs = 1, .schema = schema, .cql = &live_cql, .cl = CF_SC_ONE,
                               .timeout_ms = 60000, .max_pending = 100000, .cleanup = CF_SC_CLEANUP_NONE,
                               .poll_ms = 500};
}

/* The events of the run's keyspace (other tests' keyspaces on the shared
 * node are not counted). */
typedef struct got {
    int n;            /* every event of ks */
    int by_k[64];     /* inserts per key of table t */
    int64_t v_of[64]; /* "n" value seen per key (-1: none) */
    int64_t added[64];
    int other_table; /* events of tables other than t */
    int64_t ts_of[64];
} got;

static inline cf_record *new_rec(void *arg) {
    (void)arg;
    return cf_record_new();
}

static inline void emit(void *arg, cf_record *r, cf_sc_op op) {
    got *g = arg;
    const cf_value *ksv = cf_value_struct_get(r->value, "sourceKeyspace");
    const cf_value *tb = cf_value_struct_get(r->value, "sourceTable");
    if (strcmp(ksv->u.s.ptr, ks) != 0) { /* another test's keyspace on the shared node */
        cf_record_destroy(r);
        return;
    }
    if (strcmp(tb->u.s.ptr, "t") != 0) g->other_table++;
    else if (op == CF_SC_OP_INSERT) {
        const cf_value *p = cf_value_struct_get(r->value, "payload");
        int k = (int)cf_value_struct_get(p, "k")->u.i;
        if (k >= 0 && k < 64) {
            g->by_k[k]++;
            const cf_value *n = cf_value_struct_get(p, "n");
            g->v_of[k] = n ? n->u.i : -1;
            const cf_value *a = cf_value_struct_get(p, "added");
            g->added[k] = a ? a->u.i : -1;
            g->ts_of[k] = cf_value_struct_get(r->value, "timestampMicros")->u.i;
        }
    }
    g->n++;
    cf_record_destroy(r);
}

static inline int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read what the node holds from before (other tests' keyspaces) up to the
 * end, so that what follows is this test's. */
static inline void catch_up(cf_sc_engine *e, got *g) {
    cf_sc_emitter em = {new_rec, emit, g};
    cf_err err;
    size_t nev;
    for (cf_code rc; (rc = cf_sc_engine_step(e, &em, 500, &nev, &err)) != CF_ERR_AGAIN;)
        if (rc) fail_msg("catching up: %s / %s", err.message, err.detail);
}

/* Step until `want` events of ks came (or 30 s); returns the ms it took. */
static inline int64_t until(cf_sc_engine *e, got *g, int want) {
    cf_sc_emitter em = {new_rec, emit, g};
    cf_err err;
    int64_t t0 = mono_ms();
    while (g->n < want && mono_ms() - t0 < 30000) {
        size_t n;
        cf_code rc = cf_sc_engine_step(e, &em, 500, &n, &err);
        if (rc == CF_ERR_AGAIN) cf_sc_engine_wait(e, 100);
        else if (rc) fail_msg("step: %s / %s / %s", err.message, err.detail, err.where);
    }
    return mono_ms() - t0;
}

#endif
