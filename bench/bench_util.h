/*
 * bench_util.h - helpers shared by the bench programs (each bench is one .c
 * file; this header is included, not built on its own): a monotonic clock and
 * the bare librdkafka producer loop that bench_produce.c and
 * bench_source_task.c measure their producers against.
 */
#ifndef CF_BENCH_UTIL_H
#define CF_BENCH_UTIL_H

#include <stdint.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <librdkafka/rdkafka.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The peak resident size of a running process in kB (VmHWM of
 * /proc/PID/status; -1 when gone). Read it of the process itself, never
 * through getrusage(RUSAGE_CHILDREN): a child's ru_maxrss counts what it
 * held between fork and exec, which is the forking bench's own resident
 * size (bench_sink reported its 96 MB as cdcflow's). */
static inline long bench_peak_rss_kb(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

/* user + system clock ticks of a /proc .../stat file, or -1 (also when
 * `prefix` is given and the thread's or process's name does not begin with it). */
static inline long long bench_stat_ticks(const char *path, const char *prefix) {
    char buf[1024];
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *open = strchr(buf, '('), *close = strrchr(buf, ')'); /* the name may hold spaces */
    if (!open || !close) return -1;
    if (prefix && strncmp(open + 1, prefix, strlen(prefix)) != 0) return -1;
    unsigned long long ut = 0, st = 0;
    if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) return -1;
    return (long long)(ut + st);
}

/* CPU seconds (user + system) a process has used so far, or -1. */
static inline double bench_proc_cpu_s(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    long long t = bench_stat_ticks(path, NULL);
    return t < 0 ? -1 : (double)t / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds of a process's threads whose name begins with `prefix`
 * (librdkafka names its threads "rdk:..."), or -1. */
static inline double bench_threads_cpu_s(pid_t pid, const char *prefix) {
    char path[300];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    long long sum = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, de->d_name);
        long long t = bench_stat_ticks(path, prefix);
        if (t > 0) sum += t;
    }
    closedir(d);
    return (double)sum / (double)sysconf(_SC_CLK_TCK);
}

/* A whole file in memory (malloc'd, *len bytes); exits the process when it
 * cannot be read. */
static inline uint8_t *bench_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)n + 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) exit(1);
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* Seconds on the monotonic clock. */
static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Delivery reports of one bare run (the producer's opaque). */
typedef struct bench_bare_counts {
    long ok, failed;
} bench_bare_counts;

static inline void bench_bare_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    bench_bare_counts *c = opaque;
    if (m->err) c->failed++;
    else c->ok++;
}

/* The baseline: a bare librdkafka producer (enable.idempotence=true, acks=all,
 * linger.ms=5) sends N copies of PAYLOAD (LEN bytes, null key, partitioner's
 * choice) to TOPIC. Returns records/s from the first send to the last delivery
 * report (flush); exits the process on any error or failed delivery. */
static inline double bench_run_bare(const char *bs, const char *topic, long n, const void *payload, size_t len) {
    char errstr[512];
    bench_bare_counts counts = {0, 0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers", bs, "enable.idempotence", "true", "acks", "all", "linger.ms", "5"};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr)) {
            fprintf(stderr, "bare: %s\n", errstr);
            exit(1);
        }
    rd_kafka_conf_set_dr_msg_cb(conf, bench_bare_dr);
    rd_kafka_conf_set_opaque(conf, &counts);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "bare: %s\n", errstr);
        exit(1);
    }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        for (;;) {
            rd_kafka_resp_err_t e =
                rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_VALUE((void *)payload, len), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(rk, 100);
                continue;
            }
            if (e) {
                fprintf(stderr, "bare: produce: %s\n", rd_kafka_err2str(e));
                exit(1);
            }
            break;
        }
        rd_kafka_poll(rk, 0);
    }
    while (rd_kafka_outq_len(rk) > 0) rd_kafka_flush(rk, 1000);
    double dt = now_s() - t0;
    if (counts.ok != n || counts.failed) {
        fprintf(stderr, "bare: %ld ok, %ld failed of %ld\n", counts.ok, counts.failed, n);
        exit(1);
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return n / dt;
}

#endif
