/*
 * test_connector.c - the cassandra-cdc connector in the worker with
 * transport=direct: its events handed to a sink connector in the same
 * process (a counting sink defined here), the state stored only after the
 * sink flushed, segments cleaned up only after that state is durable, and a
 * second run resuming from it. Input: the fixture v8-lz4-rollover (a real
 * Cassandra 5.0 node's four segments) copied as three replicas.
 * Oracle: the node's writes (each change once: the count of a single-replica
 * run at ONE), Kafka Connect's offsets format.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <unistd.h>

#include "cdcflow/connector.h"
#include "cdcflow/log.h"
#include "cdcflow/worker.h"
#include "sc_test_util.h"

#define ROLL FIX "/v8-lz4-rollover/cdc_raw"

/* the registry refers to it weakly (it is in a later module): name it to link it */
extern const cf_connector_plugin cf_cassandra_cdc_plugin;

/* ---- a sink that counts what it got and what it flushed ---- */

static struct {
    pthread_mutex_t mu;
    long put, flushed, with_payload;
} sink_seen = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};

static cf_code sk_start(const cf_config *cfg, cf_sink_ctx *ctx, void **task, cf_err *err) {
    (void)cfg, (void)ctx, (void)err;
    *task = calloc(1, sizeof(long));
    return CF_OK;
}

static cf_code sk_put(void *task, cf_record *const *recs, size_t n, cf_err *err) {
    (void)err;
    long *pending = task;
    pthread_mutex_lock(&sink_seen.mu);
    for (size_t i = 0; i < n; i++) {
        sink_seen.put++;
        if (recs[i]->value && cf_value_struct_get(recs[i]->value, "payload")) sink_seen.with_payload++;
    }
    pthread_mutex_unlock(&sink_seen.mu);
    *pending += (long)n;
    return CF_OK;
}

static cf_code sk_flush(void *task, cf_err *err) {
    (void)err;
    long *pending = task;
    pthread_mutex_lock(&sink_seen.mu);
    sink_seen.flushed += *pending;
    pthread_mutex_unlock(&sink_seen.mu);
    *pending = 0;
    return CF_OK;
}

static void sk_stop(void *task) { free(task); }

static const cf_cfg_def sk_defs[] = {{NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL}};
static const cf_cfg_table sk_table = {"count sink", "Count sink", "", sk_defs, NULL};
static const cf_connector_plugin count_sink = {
    "count-sink", NULL, CF_CONNECTOR_SINK, "counts", "1.0", &sk_table,
    {.sink = {.start = sk_start, .put = sk_put, .flush = sk_flush, .stop = sk_stop}},
};

static cf_props *props(const char *first, ...) {
    cf_props *p = cf_props_new();
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k; k = va_arg(ap, const char *)) cf_props_set(p, k, va_arg(ap, const char *));
    va_end(ap);
    return p;
}


/* One run: the sidecar (once) and the count sink in direct mode. */
static void run(const char *tmp, const char *cleanup) {
    char offsets[600], dirs[2000], schema[512];
    snprintf(offsets, sizeof offsets, "%s/offsets.json", tmp);
    snprintf(dirs, sizeof dirs, "%s/n1,%s/n2,%s/n3", tmp, tmp, tmp);
    snprintf(schema, sizeof schema, "%s/v8-lz4-rollover/schema.cql", FIX);
    const cf_connector_plugin *plugins[] = {&count_sink, &cf_cassandra_cdc_plugin, NULL};
    cf_worker_opts o = {.plugins = plugins};
    cf_props *wp = props("transport", "direct", "offset.storage.file.filename", offsets, "offset.flush.interval.ms",
                         "100", NULL);
    cf_worker *w;
    cf_err err;
    if (cf_worker_new(wp, &o, &w, &err) || cf_worker_start(w, &err)) fail_msg("worker: %s", err.message);
    cf_props_destroy(wp);
    cf_props *sp = props("name", "sink", "connector.class", "count-sink", "topics.regex", "cdcks\\..*", NULL);
    cf_props *cp = props("name", "cdc", "connector.class", "cassandra-cdc", "cdc_raw.dirs", dirs, "schema.files", schema,
                         "replication.factor", "3", "consistency.level", "QUORUM", "once", "true", "cdc_raw.cleanup",
                         cleanup, NULL);
    if (cf_worker_add_connector(w, NULL, sp, &err)) fail_msg("sink: %s", err.message);
    if (cf_worker_add_connector(w, NULL, cp, &err)) fail_msg("cdc: %s (%s)", err.message, err.detail);
    cf_props_destroy(sp);
    cf_props_destroy(cp);
    /* the source finishes (once); a direct sink ends when no source runs and its queue is empty */
    assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
    cf_state cs, t0;
    assert_int_equal(cf_worker_connector_state(w, "cdc", &cs, &t0, NULL), CF_OK);
    assert_int_equal(t0, CF_STATE_FINISHED);
    cf_worker_destroy(w);
}

static void test_direct_to_a_sink(void **state) {
    (void)state;
    char *tmp = make_tmpdir("conn");
    for (int i = 1; i <= 3; i++) {
        char d[700];
        snprintf(d, sizeof d, "%s/n%d", tmp, i);
        copy_dir(ROLL, d, -1);
    }
    run(tmp, "delete");
    pthread_mutex_lock(&sink_seen.mu);
    long put = sink_seen.put, flushed = sink_seen.flushed, with = sink_seen.with_payload;
    pthread_mutex_unlock(&sink_seen.mu);
    assert_int_equal(put, 3053); /* every change of the node, once (3051 partition updates, 3053 events) */
    assert_int_equal(flushed, put);
    assert_int_equal(with, put);
    /* everything acknowledged and stored: the segments are gone */
    for (int i = 1; i <= 3; i++) {
        char d[700];
        snprintf(d, sizeof d, "%s/n%d", tmp, i);
        assert_int_equal(count_logs(d), 0);
    }
    /* the stored state: Connect's key form, the markers past the last segment, nothing pending */
    char path[700];
    snprintf(path, sizeof path, "%s/offsets.json", tmp);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    assert_non_null(strstr(buf, "\"key\":[\"cdc\",{\"cassandra-cdc\":\"cdc\"}]"));
    assert_non_null(strstr(buf, "\"r0.segment\":1795981246661"));
    assert_non_null(strstr(buf, "\"r2.done\":1"));
    assert_non_null(strstr(buf, "\"pending.count\":0"));
    /* a second run over new copies of the same segments resumes: nothing again */
    for (int i = 1; i <= 3; i++) {
        char d[700];
        snprintf(d, sizeof d, "%s/n%d", tmp, i);
        copy_dir(ROLL, d, -1);
    }
    run(tmp, "none");
    pthread_mutex_lock(&sink_seen.mu);
    assert_int_equal(sink_seen.put, put);
    pthread_mutex_unlock(&sink_seen.mu);
    rm_rf(tmp);
    free(tmp);
}

static void test_config_errors(void **state) {
    (void)state;
    const cf_connector_plugin *plugins[] = {&count_sink, &cf_cassandra_cdc_plugin, NULL};
    cf_worker_opts o = {.plugins = plugins};
    cf_props *wp = props("transport", "direct", "offset.storage.file.filename", "/tmp/cf-sc-none.json", NULL);
    cf_worker *w;
    cf_err err;
    assert_int_equal(cf_worker_new(wp, &o, &w, &err), CF_OK);
    assert_int_equal(cf_worker_start(w, &err), CF_OK);
    cf_props_destroy(wp);
    /* a bad level, with the allowed ones named */
    cf_props *cp = props("name", "c1", "connector.class", "cassandra-cdc", "cdc_raw.dirs", "/tmp", "consistency.level",
                         "SOMETIMES", "schema.files", FIX "/v8-plain/schema.cql", NULL);
    assert_int_equal(cf_worker_add_connector(w, NULL, cp, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail, "consistency.level"));
    cf_props_destroy(cp);
    /* an unknown setting */
    cp = props("name", "c2", "connector.class", "cassandra-cdc", "cdc_raw.dirs", "/tmp", "consistency.levle", "ONE", NULL);
    assert_int_equal(cf_worker_add_connector(w, NULL, cp, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail, "consistency.levle"));
    cf_props_destroy(cp);
    cf_worker_stop(w);
    cf_worker_run(w, false, NULL);
    cf_worker_destroy(w);
}

int main(void) {
    cf_log_set_level(CF_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_to_a_sink),
        cmocka_unit_test(test_config_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
