/*
 * bench_source_task.c - produce throughput of a source task run by the real
 * worker (kafka mode, idempotent producer, ByteArray converter, offsets in
 * the offsets topic) against a bare librdkafka producer loop with the same
 * settings (enable.idempotence=true, acks=all, linger.ms=5), same broker,
 * same run.
 *
 *   bench_source_task [BOOTSTRAP] [N]
 *
 * BOOTSTRAP defaults to $CF_TEST_KAFKA (the real broker of scripts/servers);
 * without one the bench fails (the figure is about a real broker). N
 * defaults to 1,000,000 records with 100-byte values per run.
 *
 * The source plugin ("bench-source", defined here and handed to the worker
 * through cf_worker_opts.plugins) emits records as fast as the worker polls:
 * null key, 100-byte bytes value, source partition {"bench":"<connector>"},
 * offset {"seq": i}, as a real source builds them: the record from the
 * task's pool (cf_source_ctx_record_new) with its value copied in
 * (cf_record_set_value_bytes), the partition, which every record repeats, a
 * shared value (cf_value_ref), the offset map new per record (one
 * allocation: cf_value_map_n with a literal key); after
 * N records poll returns CF_ERR_EOF (a bounded
 * input), so cf_worker_run returns once every record was acknowledged by
 * Kafka, its offset stored and the offsets written to the offsets topic
 * (acknowledged too) and the task stopped. The worker rate counts from the
 * first poll to that return; the run is checked afterwards: the connector
 * FINISHED and cdcflow_task_records_out_total (records whose offsets were
 * stored) is N. The bare rate counts from the first send to the last
 * delivery report. Both print the CPU time of the whole process per record.
 *
 * Runs in ABBA order (bare, worker, worker, bare) after a warm-up of each, so
 * that drift of a loaded machine hits both sides alike, CF_BENCH_ROUNDS times
 * (default 2: the broker shares the two cores and one round varies by +-0.1);
 * the ratio uses the harmonic means (total time of each side over all
 * rounds). Target: worker >= 80% of bare.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_util.h"
#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/transport.h"
#include "cdcflow/worker.h"

#define VALUE_LEN 100

/* CPU seconds of the whole process (every thread: librdkafka's too). */
static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static char payload[VALUE_LEN];

/* ---------------- the bench source plugin ---------------- */

static const cf_cfg_def bench_defs[] = {
    {"bench.records", CF_CFG_LONG, "1000000", false, NULL, true, 1, 1e12, NULL, CF_IMPORTANCE_LOW, "Bench",
     "records to emit before the end of input"},
    {"bench.topic", CF_CFG_STRING, "bench", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Bench", "topic"},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};
static const cf_cfg_table bench_table = {"bench source", "Bench source", "", bench_defs, NULL};

/* When the first poll happened (task thread; read after cf_worker_run). */
static double t_first_poll;

typedef struct bench_task {
    long next, count;
    char topic[128];
    cf_schema *vschema;
    cf_value *part; /* shared by every record */
    cf_source_ctx *ctx;
} bench_task;

static cf_code bench_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    (void)err;
    bench_task *t = cf_xcalloc(1, sizeof *t);
    t->count = (long)cf_config_long(cfg, "bench.records");
    snprintf(t->topic, sizeof t->topic, "%s", cf_config_string(cfg, "bench.topic"));
    t->vschema = cf_schema_primitive(CF_BYTES, false);
    t->part = cf_value_map();
    cf_value_map_put(t->part, cf_value_string("bench"), cf_value_string(cf_source_ctx_connector_name(ctx)));
    t->ctx = ctx;
    *task = t;
    return CF_OK;
}

static cf_code bench_poll(void *task, cf_record **out, size_t max, size_t *n, cf_err *err) {
    (void)err;
    bench_task *t = task;
    if (t->next == 0 && t_first_poll == 0) t_first_poll = now_s();
    *n = 0;
    while (*n < max && t->next < t->count) {
        cf_record *r = cf_source_ctx_record_new(t->ctx);
        cf_record_set_topic(r, t->topic);
        cf_record_set_value_bytes(r, cf_schema_ref(t->vschema), payload, VALUE_LEN);
        cf_value *off = cf_value_map_n(1);
        cf_value_map_put_lit_long(off, "seq", t->next);
        cf_record_set_source(r, cf_value_ref(t->part), off);
        out[(*n)++] = r;
        t->next++;
    }
    return *n == 0 && t->next >= t->count ? CF_ERR_EOF : CF_OK;
}

static void bench_stop(void *task) {
    bench_task *t = task;
    cf_schema_unref(t->vschema);
    cf_value_destroy(t->part);
    free(t);
}

static const cf_connector_plugin bench_source = {
    "bench-source", NULL, CF_CONNECTOR_SOURCE, "emits N 100-byte records", "1", &bench_table,
    {.source = {.start = bench_start, .poll = bench_poll, .stop = bench_stop}}};
static const cf_connector_plugin *const plugins[] = {&bench_source, NULL};

static void die_err(const char *what, const cf_err *err) {
    char b[2048];
    fprintf(stderr, "%s: %s\n", what, cf_err_format(err, b, sizeof b));
    exit(1);
}

/* The value of a metrics sample (name with labels), or -1. */
static double metric(const char *text, const char *series) {
    size_t l = strlen(series);
    for (const char *p = text; (p = strstr(p, series)); p += l)
        if ((p == text || p[-1] == '\n') && p[l] == ' ') return atof(p + l + 1);
    return -1;
}

/* One worker run; records/s from the first poll to the end of cf_worker_run. */
static double run_worker(const char *bs, const char *offsets_topic, const char *topic, const char *name, long n) {
    cf_props *wp = cf_props_new();
    cf_props_set(wp, "bootstrap.servers", bs);
    cf_props_set(wp, "transport", "kafka");
    cf_props_set(wp, "offset.storage.topic", offsets_topic);
    cf_props_set(wp, "offset.storage.partitions", "1");
    cf_props_set(wp, "offset.storage.replication.factor", "1");
    cf_props_set(wp, "offset.flush.interval.ms", "1000");
    cf_props_set(wp, "key.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
    cf_props_set(wp, "value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
    cf_props_set(wp, "producer.linger.ms", "5");
    cf_worker_opts o = {.plugins = plugins};
    cf_worker *w = NULL;
    cf_err err;
    if (cf_worker_new(wp, &o, &w, &err)) die_err("worker", &err);
    cf_props_destroy(wp);
    if (cf_worker_start(w, &err)) die_err("worker start", &err);
    t_first_poll = 0;
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%ld", n);
    cf_props *cp = cf_props_new();
    cf_props_set(cp, "name", name);
    cf_props_set(cp, "connector.class", "bench-source");
    cf_props_set(cp, "bench.records", nbuf);
    cf_props_set(cp, "bench.topic", topic);
    if (cf_worker_add_connector(w, NULL, cp, &err)) die_err("add connector", &err);
    cf_props_destroy(cp);
    if (cf_worker_run(w, true, &err)) die_err("worker run", &err);
    double t_end = now_s();
    cf_state cs = CF_STATE_UNASSIGNED;
    cf_worker_connector_state(w, name, &cs, NULL, NULL);
    cf_buf m = CF_BUF_INIT;
    cf_worker_metrics_text(w, &m);
    char series[256];
    snprintf(series, sizeof series, "cdcflow_task_records_out_total{connector=\"%s\",task=\"0\",type=\"source\"}",
             name);
    double out = metric(m.data, series);
    cf_buf_free(&m);
    cf_worker_destroy(w);
    if (out != (double)n || cs != CF_STATE_FINISHED || t_first_poll == 0) {
        fprintf(stderr, "worker: %.0f of %ld offsets stored, connector %s\n", out, n, cf_state_name(cs));
        exit(1);
    }
    return n / (t_end - t_first_poll);
}

int main(int argc, char **argv) {
    cf_log_setup(CF_LOG_WARN, CF_LOG_TEXT, NULL);
    const char *bs = argc > 1 ? argv[1] : getenv("CF_TEST_KAFKA");
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    if (!bs || !*bs) {
        fprintf(stderr, "bench_source_task: no broker: give BOOTSTRAP or set CF_TEST_KAFKA "
                        "(scripts/servers start kafka)\n");
        return 1;
    }
    if (n < 1) {
        fprintf(stderr, "bench_source_task: N must be >= 1\n");
        return 2;
    }
    printf("broker: %s\n", bs);
    for (int i = 0; i < VALUE_LEN; i++) payload[i] = (char)('a' + i % 26);
    long stamp = (long)time(NULL);
    char tb[64], tw[64], to[64];
    snprintf(tb, sizeof tb, "bench-st-bare-%ld", stamp);
    snprintf(tw, sizeof tw, "bench-st-worker-%ld", stamp);
    snprintf(to, sizeof to, "bench-st-offsets-%ld", stamp);
    cf_err err;
    if (cf_kafka_create_topic(bs, tb, 3, 1, NULL, 0, 30000, &err) ||
        cf_kafka_create_topic(bs, tw, 3, 1, NULL, 0, 30000, &err))
        die_err("create topic", &err);
    /* warm-up: topic metadata, producer ids, broker JIT, offsets topic */
    bench_run_bare(bs, tb, n / 20 + 1, payload, VALUE_LEN);
    run_worker(bs, to, tw, "bench-warmup", n / 20 + 1);
    int rounds = getenv("CF_BENCH_ROUNDS") ? atoi(getenv("CF_BENCH_ROUNDS")) : 2;
    if (rounds < 1) rounds = 1;
    printf("records: %ld x %d bytes per run, %d ABBA round(s), idempotent, acks=all, linger.ms=5, "
           "ByteArrayConverter\n",
           n, VALUE_LEN, rounds);
    double t_bare = 0, t_wrk = 0; /* total seconds per side: the ratio of harmonic means */
    for (int r = 0; r < rounds; r++) {
        double rate[4];
        for (int k = 0; k < 4; k++) {
            bool is_bare = k == 0 || k == 3;
            char name[32];
            snprintf(name, sizeof name, "bench-%d-%d", r + 1, k);
            double c0 = cpu_s();
            rate[k] = is_bare ? bench_run_bare(bs, tb, n, payload, VALUE_LEN) : run_worker(bs, to, tw, name, n);
            printf("  %s  %10.0f rec/s  (process CPU %.2f us/record)\n",
                   is_bare ? "bare librdkafka" : "worker task    ", rate[k], (cpu_s() - c0) * 1e6 / n);
            if (is_bare) t_bare += n / rate[k];
            else t_wrk += n / rate[k];
        }
        printf("  round %d ratio: %.2f\n", r + 1, (2 / (1 / rate[1] + 1 / rate[2])) / (2 / (1 / rate[0] + 1 / rate[3])));
    }
    double bare = 2.0 * rounds * n / t_bare, wrk = 2.0 * rounds * n / t_wrk;
    printf("bare librdkafka:  %.0f rec/s (%.1f MB/s)\n", bare, bare * VALUE_LEN / 1e6);
    printf("worker source:    %.0f rec/s (%.1f MB/s)\n", wrk, wrk * VALUE_LEN / 1e6);
    printf("ratio worker/bare: %.2f (target >= 0.80)\n", wrk / bare);
    return 0;
}
