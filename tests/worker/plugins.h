/*
 * plugins.h - connector plugins for the worker tests ("test-source",
 * "test-sink"), included by each test program (static: one copy each).
 *   test-source  emits k<i>/v<i> strings to test.topic with source partition
 *                {"src":"test"} and offset {"pos": i}, resumes after the
 *                stored offset, ends (CF_ERR_EOF) after test.count records
 *                unless test.endless; test.bad.at reports a bad input unit;
 *                test.partitions spreads records over source partitions;
 *                test.null.key: records without a key;
 *                test.shared: partitions and the offset key are shared
 *                values (cf_value_ref), as a fast source builds them.
 *   test-sink    records what it was given in `seen` (pending until flush,
 *                durable after); test.bad.value is reported through
 *                cf_sink_ctx_report, test.flush.fail fails flushes,
 *                test.gate makes flush wait until the test opens the gate.
 */
#ifndef CF_TEST_WORKER_PLUGINS_H
#define CF_TEST_WORKER_PLUGINS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdcflow/connector.h"
#include "cdcflow/schema.h"

/* ---------------- test plugins ---------------- */

static const cf_cfg_def src_defs[] = {
    {"test.count", CF_CFG_INT, "100", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test", "records"},
    {"test.topic", CF_CFG_STRING, "t1", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test", "topic"},
    {"test.endless", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test", "never EOF"},
    {"test.bad.at", CF_CFG_INT, "-1", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test",
     "report this position as a bad input unit"},
    {"test.poll.delay.ms", CF_CFG_INT, "0", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test",
     "sleep per poll (a slow source)"},
    {"test.partitions", CF_CFG_INT, "1", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test",
     "source partitions, round robin: record i has {\"src\":\"test\",\"p\":i % N} (N > 1; no resume)"},
    {"test.null.key", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test", "x"},
    {"test.shared", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test",
     "every record's source partition and offset key are shared values"},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};
static const cf_cfg_table src_table = {"test source", "Test source", "", src_defs, NULL};

typedef struct srctask {
    cf_source_ctx *ctx;
    int64_t next, count;
    char topic[64];
    bool endless;
    int64_t bad_at;
    int delay_ms;
    int partitions;
    bool null_key;
    cf_value **shared_parts; /* test.shared: one per source partition */
    cf_value *pos_key;       /* test.shared: "pos" */
} srctask;

static cf_value *src_partition(void) {
    cf_value *p = cf_value_map();
    cf_value_map_put(p, cf_value_string("src"), cf_value_string("test"));
    return p;
}

static cf_code src_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    (void)err;
    srctask *t = calloc(1, sizeof *t);
    t->ctx = ctx;
    t->count = cf_config_int(cfg, "test.count");
    snprintf(t->topic, sizeof t->topic, "%s", cf_config_string(cfg, "test.topic"));
    t->endless = cf_config_bool(cfg, "test.endless");
    t->bad_at = cf_config_int(cfg, "test.bad.at");
    t->delay_ms = cf_config_int(cfg, "test.poll.delay.ms");
    t->partitions = cf_config_int(cfg, "test.partitions");
    t->null_key = cf_config_bool(cfg, "test.null.key");
    if (cf_config_bool(cfg, "test.shared")) {
        t->shared_parts = calloc((size_t)t->partitions, sizeof *t->shared_parts);
        for (int i = 0; i < t->partitions; i++) {
            t->shared_parts[i] = src_partition();
            if (t->partitions > 1) cf_value_map_put(t->shared_parts[i], cf_value_string("p"), cf_value_int64(i));
        }
        t->pos_key = cf_value_string("pos");
    }
    cf_value *p = src_partition();
    cf_value *off = cf_source_ctx_offset(ctx, p);
    cf_value_destroy(p);
    if (off) {
        cf_value *pos = cf_value_map_get_str(off, "pos");
        if (pos) t->next = pos->u.i + 1;
        cf_value_destroy(off);
    }
    *task = t;
    return CF_OK;
}

static cf_code src_poll(void *task, cf_record **out, size_t max, size_t *n, cf_err *err) {
    srctask *t = task;
    *n = 0;
    if (t->delay_ms) usleep((useconds_t)t->delay_ms * 1000);
    while (*n < max && *n < 37 && (t->endless || t->next < t->count)) {
        if (t->next == t->bad_at) {
            cf_err problem;
            cf_err_set(&problem, CF_ERR_CORRUPT, "test: unparsable unit at %lld", (long long)t->next);
            t->next++;
            cf_code rc = cf_source_ctx_report(t->ctx, "garbage", 7, &problem, err);
            if (rc) return rc;
            continue;
        }
        cf_record *r = cf_record_new();
        cf_record_set_topic(r, t->topic);
        char buf[64];
        snprintf(buf, sizeof buf, "k%lld", (long long)t->next);
        if (!t->null_key) cf_record_set_key(r, cf_schema_primitive(CF_STRING, false), cf_value_string(buf));
        snprintf(buf, sizeof buf, "v%lld", (long long)t->next);
        cf_record_set_value(r, cf_schema_primitive(CF_STRING, false), cf_value_string(buf));
        cf_value *off = cf_value_map();
        if (t->shared_parts) {
            cf_value_map_put(off, cf_value_ref(t->pos_key), cf_value_int64(t->next));
            cf_record_set_source(r, cf_value_ref(t->shared_parts[t->next % t->partitions]), off);
        } else {
            cf_value_map_put(off, cf_value_string("pos"), cf_value_int64(t->next));
            cf_value *part = src_partition();
            if (t->partitions > 1)
                cf_value_map_put(part, cf_value_string("p"), cf_value_int64(t->next % t->partitions));
            cf_record_set_source(r, part, off);
        }
        out[(*n)++] = r;
        t->next++;
    }
    if (*n == 0 && !t->endless && t->next >= t->count) return CF_ERR_EOF;
    if (t->endless && *n == 0) usleep(1000);
    return CF_OK;
}

static void src_stop(void *task) {
    srctask *t = task;
    for (int i = 0; t->shared_parts && i < t->partitions; i++) cf_value_destroy(t->shared_parts[i]);
    free(t->shared_parts);
    cf_value_destroy(t->pos_key);
    free(t);
}

static const char *const src_aliases[] = {"org.example.TestSource", NULL};
static const cf_connector_plugin test_source = {
    "test-source", src_aliases, CF_CONNECTOR_SOURCE, "test source", "1.0", &src_table,
    {.source = {.start = src_start, .poll = src_poll, .stop = src_stop}},
};

static const cf_cfg_def sink_defs[] = {
    {"test.bad.value", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test", "bad"},
    {"test.flush.fail", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test", "x"},
    {"test.gate", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test", "x"},
    {"test.put.delay.ms", CF_CFG_INT, "0", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Test", "slow sink"},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};
static const cf_cfg_table sink_table = {"test sink", "Test sink", "", sink_defs, NULL};

/* What the sinks saw (the test's own state, reset per test). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char **pending, **durable;
    size_t npending, ndurable;
    int flushes;
    bool gate_open;
} seen = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, 0, false};

static void seen_reset(void) {
    pthread_mutex_lock(&seen.mu);
    for (size_t i = 0; i < seen.npending; i++) free(seen.pending[i]);
    for (size_t i = 0; i < seen.ndurable; i++) free(seen.durable[i]);
    free(seen.pending), free(seen.durable);
    seen.pending = seen.durable = NULL;
    seen.npending = seen.ndurable = 0;
    seen.flushes = 0;
    seen.gate_open = false;
    pthread_mutex_unlock(&seen.mu);
}

typedef struct sinktask {
    cf_sink_ctx *ctx;
    char *bad;
    bool fail, gate;
    int delay_ms;
} sinktask;

static cf_code sink_start(const cf_config *cfg, cf_sink_ctx *ctx, void **task, cf_err *err) {
    (void)err;
    sinktask *t = calloc(1, sizeof *t);
    t->ctx = ctx;
    const char *b = cf_config_string(cfg, "test.bad.value");
    t->bad = b ? strdup(b) : NULL;
    t->fail = cf_config_bool(cfg, "test.flush.fail");
    t->gate = cf_config_bool(cfg, "test.gate");
    t->delay_ms = cf_config_int(cfg, "test.put.delay.ms");
    *task = t;
    return CF_OK;
}

static cf_code sink_put(void *task, cf_record *const *recs, size_t n, cf_err *err) {
    sinktask *t = task;
    if (t->delay_ms) usleep((useconds_t)t->delay_ms * 1000);
    for (size_t i = 0; i < n; i++) {
        const cf_value *v = recs[i]->value;
        char *s = v && v->type == CF_STRING ? strdup(v->u.s.ptr) : cf_value_debug_string(v);
        if (t->bad && strcmp(s, t->bad) == 0) {
            cf_err problem;
            cf_err_set(&problem, CF_ERR_TARGET, "test sink refuses value \"%s\"", s);
            free(s);
            cf_code rc = cf_sink_ctx_report(t->ctx, recs[i], &problem, err);
            if (rc) return rc;
            continue;
        }
        pthread_mutex_lock(&seen.mu);
        seen.pending = realloc(seen.pending, (seen.npending + 1) * sizeof(char *));
        seen.pending[seen.npending++] = s;
        pthread_mutex_unlock(&seen.mu);
    }
    return CF_OK;
}

static cf_code sink_flush(void *task, cf_err *err) {
    sinktask *t = task;
    pthread_mutex_lock(&seen.mu);
    while (t->gate && !seen.gate_open) pthread_cond_wait(&seen.cv, &seen.mu);
    if (t->fail && seen.npending) {
        pthread_mutex_unlock(&seen.mu);
        return cf_err_set(err, CF_ERR_TARGET, "test sink: flush failed");
    }
    seen.durable = realloc(seen.durable, (seen.ndurable + seen.npending + 1) * sizeof(char *));
    for (size_t i = 0; i < seen.npending; i++) seen.durable[seen.ndurable++] = seen.pending[i];
    seen.npending = 0;
    seen.flushes++;
    pthread_mutex_unlock(&seen.mu);
    return CF_OK;
}

static void sink_stop(void *task) {
    sinktask *t = task;
    free(t->bad);
    free(t);
}

static const cf_connector_plugin test_sink = {
    "test-sink", NULL, CF_CONNECTOR_SINK, "test sink", "1.0", &sink_table,
    {.sink = {.start = sink_start, .put = sink_put, .flush = sink_flush, .stop = sink_stop}},
};

static const cf_connector_plugin *const test_plugins[] = {&test_source, &test_sink, NULL};

#endif
