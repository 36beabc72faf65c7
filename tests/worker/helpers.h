/*
 * helpers.h - test scaffolding shared by the worker test programs (include
 * after <cmocka.h> and "plugins.h"; static inline: one copy each, no warning
 * where a program does not use one):
 *   tmpdir_make / tmpdir_remove  a scratch directory per test, and a clean `seen`
 *   runner / run_thread          cf_worker_run on a thread, result kept
 *   durable_count / wait_durable how many records the test sink flushed
 *   assert_cf_ok                 assert CF_OK, printing the whole cf_err first
 *   add_connector / add_kv       cf_worker_add_connector that must succeed
 */
#ifndef CF_TEST_WORKER_HELPERS_H
#define CF_TEST_WORKER_HELPERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cdcflow/props.h"
#include "cdcflow/worker.h"

static char tmpdir[256];

/* A fresh /tmp/cf_test_<name>_XXXXXX in tmpdir. */
static inline void tmpdir_make(const char *name) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cf_test_%s_XXXXXX", name);
    assert_non_null(mkdtemp(tmpdir));
    seen_reset();
}

static inline void tmpdir_remove(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
    seen_reset();
}

typedef struct runner {
    cf_worker *w;
    cf_code rc;
    cf_err err;
    pthread_t th;
} runner;

static inline void *run_thread(void *arg) {
    runner *r = arg;
    r->rc = cf_worker_run(r->w, false, &r->err);
    return NULL;
}

static inline size_t durable_count(void) {
    pthread_mutex_lock(&seen.mu);
    size_t n = seen.ndurable;
    pthread_mutex_unlock(&seen.mu);
    return n;
}

/* Poll every 50 ms for up to `seconds` until the sink flushed n records. */
static inline bool wait_durable(size_t n, int seconds) {
    for (int i = 0; i < seconds * 20; i++) {
        if (durable_count() >= n) return true;
        usleep(50 * 1000);
    }
    return false;
}

static inline void assert_cf_ok(cf_code rc, const cf_err *err) {
    if (rc) {
        char buf[2048];
        fprintf(stderr, "%s\n", cf_err_format(err, buf, sizeof buf));
    }
    assert_int_equal(rc, CF_OK);
}

/* Add a connector from its properties (destroyed here). */
static inline void add_connector(cf_worker *w, cf_props *cp) {
    cf_err err;
    cf_code rc = cf_worker_add_connector(w, NULL, cp, &err);
    assert_cf_ok(rc, &err);
    cf_props_destroy(cp);
}

/* Add a connector from a NULL-ended key, value, key, value... list. */
static inline void add_kv(cf_worker *w, const char *const *kv) {
    cf_props *p = cf_props_new();
    for (; *kv; kv += 2) cf_props_set(p, kv[0], kv[1]);
    add_connector(w, p);
}

#endif
