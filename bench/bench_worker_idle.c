/*
 * bench_worker_idle.c - what an idle worker costs: one source (that has no
 * data) and one sink, direct mode (and kafka mode against CF_TEST_KAFKA
 * when set; the embedded mock cluster otherwise is left out because it is
 * a broker inside the process, not the worker).
 *
 * Figures:
 *   - resident memory of the whole process (VmRSS) once the worker idles,
 *     target <= 30 MB; baseline: the same process before the worker starts;
 *   - time from cf_worker_new to the source task's first poll, median of 21
 *     runs, target <= 100 ms; baseline: creating and joining one bare
 *     thread (the least "one thread per task" can cost);
 *   - CPU used while idle (2 s), as a percentage of one core.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/log.h"
#include "cdcflow/worker.h"

static atomic_llong first_poll_ns;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static cf_code idle_start(const cf_config *c, cf_source_ctx *ctx, void **t, cf_err *e) {
    (void)c, (void)ctx, (void)e;
    *t = NULL;
    return CF_OK;
}
static cf_code idle_poll(void *t, cf_record **out, size_t max, size_t *n, cf_err *e) {
    (void)t, (void)out, (void)max, (void)e;
    long long zero = 0;
    atomic_compare_exchange_strong(&first_poll_ns, &zero, now_ns());
    *n = 0;
    return CF_OK;
}
static void idle_stop(void *t) { (void)t; }
static cf_code sink_start(const cf_config *c, cf_sink_ctx *ctx, void **t, cf_err *e) {
    (void)c, (void)ctx, (void)e;
    *t = NULL;
    return CF_OK;
}
static cf_code sink_put(void *t, cf_record *const *r, size_t n, cf_err *e) {
    (void)t, (void)r, (void)n, (void)e;
    return CF_OK;
}
static cf_code sink_flush(void *t, cf_err *e) {
    (void)t, (void)e;
    return CF_OK;
}
static void sink_stop(void *t) { (void)t; }

static const cf_connector_plugin idle_source = {
    "idle-source", NULL, CF_CONNECTOR_SOURCE, "no data", "1", NULL, {.source = {.start = idle_start, .poll = idle_poll, .stop = idle_stop}}};
static const cf_connector_plugin null_sink = {
    "null-sink", NULL, CF_CONNECTOR_SINK, "drops", "1", NULL, {.sink = {.start = sink_start, .put = sink_put, .flush = sink_flush, .stop = sink_stop}}};
static const cf_connector_plugin *const plugins[] = {&idle_source, &null_sink, NULL};

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Start a worker, return ms until the first poll; leaves it running in *out. */
static double start_one(const char *kafka, const char *dir, bool rest, cf_worker **out) {
    char off[512];
    snprintf(off, sizeof off, "%s/offsets.json", dir);
    cf_props *wp = cf_props_new();
    cf_props_set(wp, "offset.storage.file.filename", off);
    if (kafka) {
        cf_props_set(wp, "bootstrap.servers", kafka);
        cf_props_set(wp, "transport", "kafka");
    }
    if (rest) cf_props_set(wp, "rest.port", "0");
    atomic_store(&first_poll_ns, 0);
    long long t0 = now_ns();
    cf_worker_opts o = {.plugins = plugins, .rest = rest};
    cf_worker *w = NULL;
    cf_err err;
    if (cf_worker_new(wp, &o, &w, &err) || cf_worker_start(w, &err)) {
        char b[2048];
        fprintf(stderr, "%s\n", cf_err_format(&err, b, sizeof b));
        exit(1);
    }
    cf_props_destroy(wp);
    cf_props *sp = cf_props_new();
    cf_props_set(sp, "name", "sink");
    cf_props_set(sp, "connector.class", "null-sink");
    cf_props_set(sp, "topics", "t");
    cf_props *so = cf_props_new();
    cf_props_set(so, "name", "source");
    cf_props_set(so, "connector.class", "idle-source");
    if (cf_worker_add_connector(w, NULL, sp, &err) || cf_worker_add_connector(w, NULL, so, &err)) {
        char b[2048];
        fprintf(stderr, "%s\n", cf_err_format(&err, b, sizeof b));
        exit(1);
    }
    cf_props_destroy(sp);
    cf_props_destroy(so);
    while (!atomic_load(&first_poll_ns)) usleep(100);
    *out = w;
    return (double)(atomic_load(&first_poll_ns) - t0) / 1e6;
}

static void stop_one(cf_worker *w) {
    cf_worker_stop(w);
    cf_worker_run(w, false, NULL);
    cf_worker_destroy(w);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *noop(void *a) { return a; }

static void measure(const char *label, const char *kafka, const char *dir, bool rest) {
    enum { RUNS = 21 };
    double ms[RUNS];
    long rss_before = rss_kb();
    cf_worker *w;
    for (int i = 0; i < RUNS; i++) {
        ms[i] = start_one(kafka, dir, rest, &w);
        if (i < RUNS - 1) stop_one(w);
    }
    /* the last worker stays up: let it idle, then measure */
    double c0 = cpu_s();
    sleep(2);
    double idle_cpu = (cpu_s() - c0) / 2.0 * 100.0;
    long rss = rss_kb();
    stop_one(w);
    qsort(ms, RUNS, sizeof *ms, cmp_d);
    /* baseline: one bare thread */
    double tb[RUNS];
    for (int i = 0; i < RUNS; i++) {
        long long t0 = now_ns();
        pthread_t th;
        pthread_create(&th, NULL, noop, NULL);
        pthread_join(th, NULL);
        tb[i] = (double)(now_ns() - t0) / 1e6;
    }
    qsort(tb, RUNS, sizeof *tb, cmp_d);
    printf("%-34s start->first poll: median %.2f ms (min %.2f, max %.2f; target <= 100 ms; "
           "bare thread %.3f ms, ratio %.0fx)\n",
           label, ms[RUNS / 2], ms[0], ms[RUNS - 1], tb[RUNS / 2], ms[RUNS / 2] / (tb[RUNS / 2] > 0 ? tb[RUNS / 2] : 1));
    printf("%-34s idle RSS: %.1f MB (target <= 30 MB; process before the worker %.1f MB, +%.1f MB); idle CPU %.2f%% "
           "of a core\n",
           label, rss / 1024.0, rss_before / 1024.0, (rss - rss_before) / 1024.0, idle_cpu);
}

int main(void) {
    cf_log_setup(CF_LOG_WARN, CF_LOG_TEXT, stderr);
    char dir[] = "/tmp/cf_bench_worker_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    printf("bench_worker_idle: one idle source + one sink\n");
    measure("direct mode", NULL, dir, false);
    measure("direct mode + REST", NULL, dir, true);
    const char *kafka = getenv("CF_TEST_KAFKA");
    if (kafka && *kafka) measure("kafka mode (CF_TEST_KAFKA)", kafka, dir, true);
    else printf("kafka mode: skipped (set CF_TEST_KAFKA to measure against a real broker)\n");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
