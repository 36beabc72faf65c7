/*
 * bench_util.h - helpers shared by the bench programs (each bench is one .c
 * file; this header is included, not built on its own): a monotonic clock and
 * the bare librdkafka producer loop that bench_produce.c and
 * bench_source_task.c measure their producers against.
 */
#ifndef CF_BENCH_UTIL_H
#define CF_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

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
