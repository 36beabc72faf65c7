/*
 * test_lifecycle_race.c - connector operations that stop and start task
 * threads (update, restart, delete, add) from two threads, racing each
 * other and the end of cf_worker_run, which stops every connector: a
 * bounded source reaching its end, or cf_worker_stop at a random moment
 * (as REST requests during a shutdown would). Pause and resume only flip a
 * flag the tasks read and are left out.
 *
 * What must hold, each iteration:
 *   - nothing hangs (two threads joining the same task thread did: each
 *     wait below is bounded, and CTest's TIMEOUT bounds the whole program);
 *   - when cf_worker_run returns no task runs any more (the plugins count
 *     their live tasks), also once the operations in flight have returned;
 *   - an operation begun after cf_worker_run returned is refused with
 *     CF_ERR_STATE ("... the worker is stopping"), not half done.
 * Under ASan a task joined twice or freed while running shows as an error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <cmocka.h>

#include "cdcflow/log.h"
#include "cdcflow/worker.h"

#include "plugins.h"
#include "helpers.h"

/* ---------------- plugins that count their live tasks ---------------- */

static atomic_int live_tasks;

static cf_code cnt_src_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    cf_code rc = src_start(cfg, ctx, task, err);
    if (!rc) atomic_fetch_add(&live_tasks, 1);
    return rc;
}
static void cnt_src_stop(void *task) {
    src_stop(task);
    atomic_fetch_sub(&live_tasks, 1);
}
static cf_code cnt_sink_start(const cf_config *cfg, cf_sink_ctx *ctx, void **task, cf_err *err) {
    cf_code rc = sink_start(cfg, ctx, task, err);
    if (!rc) atomic_fetch_add(&live_tasks, 1);
    return rc;
}
static void cnt_sink_stop(void *task) {
    sink_stop(task);
    atomic_fetch_sub(&live_tasks, 1);
}

static const cf_connector_plugin counted_source = {
    "test-source", NULL, CF_CONNECTOR_SOURCE, "test source (counted)", "1.0", &src_table,
    {.source = {.start = cnt_src_start, .poll = src_poll, .stop = cnt_src_stop}},
};
static const cf_connector_plugin counted_sink = {
    "test-sink", NULL, CF_CONNECTOR_SINK, "test sink (counted)", "1.0", &sink_table,
    {.sink = {.start = cnt_sink_start, .put = sink_put, .flush = sink_flush, .stop = cnt_sink_stop}},
};
static const cf_connector_plugin *const counted_plugins[] = {&counted_source, &counted_sink, NULL};

/* ---------------- helpers ---------------- */

static cf_props *props_of(const char *first, ...) {
    cf_props *p = cf_props_new();
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k; k = va_arg(ap, const char *)) cf_props_set(p, k, va_arg(ap, const char *));
    va_end(ap);
    return p;
}

static cf_props *sink_props(void) {
    return props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", NULL);
}
static cf_props *source_props(void) {
    return props_of("name", "src", "connector.class", "test-source", "test.count", "300", NULL);
}

/* Join th within `seconds`; false: it hangs. */
static bool join_within(pthread_t th, int seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    return pthread_timedjoin_np(th, NULL, &ts) == 0;
}

typedef struct race {
    cf_worker *w;
    runner run;
    atomic_bool run_returned; /* cf_worker_run returned */
    atomic_bool quit;         /* the racers end (after a few operations past the run's end) */
    unsigned seed;
} race;

static void *run_and_mark(void *arg) {
    race *x = arg;
    run_thread(&x->run);
    atomic_store(&x->run_returned, true);
    return NULL;
}

typedef struct racer {
    race *x;
    unsigned seed;
    int ops, ops_after, refused_after;
    char bad[1024]; /* the first unexpected result, for the failure message */
} racer;

/* One connector operation chosen at random; its result is checked. */
static void one_op(racer *r) {
    cf_worker *w = r->x->w;
    bool after = atomic_load(&r->x->run_returned); /* begun after cf_worker_run returned */
    cf_err err;
    cf_err_clear(&err);
    cf_code rc;
    const char *what;
    cf_props *p;
    switch (rand_r(&r->seed) % 7) {
    case 0:
        what = "update snk";
        p = sink_props();
        rc = cf_worker_update_connector(w, "snk", p, &err);
        cf_props_destroy(p);
        break;
    case 1:
        what = "update src";
        p = source_props();
        rc = cf_worker_update_connector(w, "src", p, &err);
        cf_props_destroy(p);
        break;
    case 2: what = "restart snk", rc = cf_worker_restart_connector(w, "snk", false, &err); break;
    case 3: what = "restart src", rc = cf_worker_restart_connector(w, "src", false, &err); break;
    case 4: what = "restart failed tasks of src", rc = cf_worker_restart_connector(w, "src", true, &err); break;
    case 5: what = "delete src", rc = cf_worker_delete_connector(w, "src", &err); break;
    default:
        what = "add src";
        p = source_props();
        rc = cf_worker_add_connector(w, NULL, p, &err);
        cf_props_destroy(p);
        break;
    }
    r->ops++;
    if (after) r->ops_after++;
    /* the other racer may have deleted src (not found) or added it again (exists) */
    bool expected = rc == CF_OK || rc == CF_ERR_STATE || rc == CF_ERR_NOT_FOUND;
    if (after) {
        if (rc == CF_ERR_STATE && strstr(err.message, "stopping")) r->refused_after++;
        else if (rc != CF_ERR_NOT_FOUND) expected = false;
    }
    if (!expected && !r->bad[0])
        snprintf(r->bad, sizeof r->bad, "%s %s cf_worker_run returned: code %d, \"%s\" (%s) hint: %s", what,
                 after ? "after" : "before", (int)rc, err.message, err.detail, err.hint);
}

static void *racer_main(void *arg) {
    racer *r = arg;
    int past_end = 0;
    while (!atomic_load(&r->x->quit) || past_end < 3) {
        one_op(r);
        if (atomic_load(&r->x->run_returned)) past_end++;
        usleep((useconds_t)(200 + rand_r(&r->seed) % 1800));
    }
    return NULL;
}

static int setup(void **state) {
    (void)state;
    tmpdir_make("lifecycle_race");
    atomic_store(&live_tasks, 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tmpdir_remove();
    return 0;
}

/* ---------------- tests ---------------- */

#define ITERATIONS 80
#define HANG_S 30 /* no single wait of an iteration takes this long unless something hangs */

/* Two racers change the connectors while cf_worker_run ends (half of the
 * iterations by cf_worker_stop at a random moment, half by the bounded
 * source's end). */
static void test_connector_ops_race_run_end(void **state) {
    (void)state;
    char offsets[512];
    snprintf(offsets, sizeof offsets, "%s/offsets.json", tmpdir);
    int ops = 0, ops_after = 0, refused_after = 0;
    for (int it = 0; it < ITERATIONS; it++) {
        remove(offsets); /* each run starts from the beginning */
        seen_reset();
        cf_props *wp = props_of("offset.storage.file.filename", offsets, "offset.flush.interval.ms", "20", NULL);
        cf_worker_opts o = {.plugins = counted_plugins};
        race x = {.seed = 7919u * (unsigned)it + 1};
        cf_err err;
        assert_cf_ok(cf_worker_new(wp, &o, &x.w, &err), &err);
        cf_props_destroy(wp);
        assert_cf_ok(cf_worker_start(x.w, &err), &err);
        add_connector(x.w, sink_props());
        add_connector(x.w, source_props());
        x.run.w = x.w;
        pthread_t run_th;
        pthread_create(&run_th, NULL, run_and_mark, &x);
        racer rs[2] = {{.x = &x, .seed = x.seed * 31u}, {.x = &x, .seed = x.seed * 37u + 5}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, racer_main, &rs[i]);
        if (it % 2 == 0) {
            usleep((useconds_t)(rand_r(&x.seed) % 30000));
            cf_worker_stop(x.w);
        }
        /* the source ends after 300 records, but the racers restarting it
         * can keep the run going: a stop after 300 ms ends it then */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 300 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        if (pthread_timedjoin_np(run_th, NULL, &ts) != 0) {
            cf_worker_stop(x.w);
            if (!join_within(run_th, HANG_S))
                fail_msg("iteration %d: cf_worker_run did not return within %d s of cf_worker_stop (hangs)", it,
                         HANG_S);
        }
        /* no task runs once the run returned... */
        int live_at_return = atomic_load(&live_tasks);
        atomic_store(&x.quit, true);
        for (int i = 0; i < 2; i++)
            if (!join_within(th[i], HANG_S))
                fail_msg("iteration %d: a connector operation did not return within %d s of the run's end (hangs)",
                         it, HANG_S);
        /* ...nor after the operations that were in flight returned */
        int live_after_ops = atomic_load(&live_tasks);
        for (int i = 0; i < 2; i++) {
            if (rs[i].bad[0]) fail_msg("iteration %d: %s", it, rs[i].bad);
            ops += rs[i].ops, ops_after += rs[i].ops_after, refused_after += rs[i].refused_after;
        }
        if (live_at_return != 0 || live_after_ops != 0)
            fail_msg("iteration %d: %d task(s) ran when cf_worker_run returned, %d once the operations in flight "
                     "returned (expected none)",
                     it, live_at_return, live_after_ops);
        if (x.run.rc && getenv("CF_TEST_VERBOSE"))
            fprintf(stderr, "iteration %d: run: %s (a sink restarted while fed may fail the source)\n", it,
                    x.run.err.message);
        cf_worker_destroy(x.w);
        assert_int_equal(atomic_load(&live_tasks), 0);
    }
    /* the races were run, not skipped */
    assert_true(ops > ITERATIONS);
    assert_true(ops_after >= ITERATIONS);
    print_message("%d operations, %d begun after cf_worker_run returned (%d refused as stopping)\n", ops, ops_after,
                  refused_after);
}

int main(void) {
    cf_log_setup(getenv("CF_TEST_VERBOSE") ? CF_LOG_DEBUG : CF_LOG_ERROR, CF_LOG_TEXT, stderr);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_connector_ops_race_run_end, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
