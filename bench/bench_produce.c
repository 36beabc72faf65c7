/*
 * bench_produce.c - produce throughput: cf_producer (the transport wrapper)
 * against a bare librdkafka producer loop, same broker, same settings
 * (enable.idempotence=true, acks=all, linger.ms=5), same run.
 *
 *   bench_produce [BOOTSTRAP] [N]
 *
 * BOOTSTRAP defaults to $CF_TEST_KAFKA (the real broker of scripts/servers),
 * else "embedded" (the in-memory mock; its figures say little). N defaults
 * to 1,000,000 records of 100 bytes (null key, partitioner's choice) per run.
 * Runs in ABBA order (bare, wrapper, wrapper, bare) so that drift of a
 * shared machine hits both sides alike; each rate counts from the first
 * send to the last delivery report (flush). Target: wrapper >= 80% of bare.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "cdcflow/log.h"
#include "cdcflow/transport.h"

static void wrap_dr(const cf_delivery *d, void *ctx) {
    long *ok = ctx;
    if (d->code == CF_OK) (*ok)++;
}

static double run_wrapper(const char *bs, const char *topic, long n, const char *payload) {
    cf_err err;
    cf_producer *p = cf_producer_new(bs, NULL, 0, &err);
    if (!p) {
        fprintf(stderr, "wrapper: %s: %s\n", err.message, err.detail);
        exit(1);
    }
    long ok = 0;
    cf_producer_set_delivery_cb(p, wrap_dr, &ok);
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, topic);
    cf_msg_set_value(m, payload, 100);
    double t0 = now_s();
    for (long i = 0; i < n; i++)
        if (cf_producer_send(p, m, NULL, NULL, &err)) {
            fprintf(stderr, "wrapper: send: %s: %s\n", err.message, err.detail);
            exit(1);
        }
    cf_code rc;
    while ((rc = cf_producer_flush(p, 1000, &err)) == CF_ERR_AGAIN) {}
    double dt = now_s() - t0;
    if (rc || ok != n || cf_producer_acked_seq(p) != (uint64_t)n) {
        fprintf(stderr, "wrapper: %ld ok of %ld, acked %llu: %s\n", ok, n,
                (unsigned long long)cf_producer_acked_seq(p), err.message);
        exit(1);
    }
    cf_msg_destroy(m);
    cf_producer_destroy(p);
    return n / dt;
}

int main(int argc, char **argv) {
    cf_log_setup(CF_LOG_WARN, CF_LOG_TEXT, NULL);
    const char *bs = argc > 1 ? argv[1] : getenv("CF_TEST_KAFKA");
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    cf_embedded_kafka *k = NULL;
    if (!bs || !*bs || strcmp(bs, "embedded") == 0) {
        cf_err err;
        k = cf_embedded_kafka_new(1, &err);
        if (!k) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        bs = cf_embedded_kafka_bootstrap(k);
        printf("broker: embedded mock cluster (NOT Kafka; figures are indicative only)\n");
    } else {
        printf("broker: %s\n", bs);
    }
    char payload[100];
    for (int i = 0; i < 100; i++) payload[i] = (char)('a' + i % 26);
    char tb[64], tw[64];
    snprintf(tb, sizeof tb, "bench-bare-%ld", (long)time(NULL));
    snprintf(tw, sizeof tw, "bench-wrap-%ld", (long)time(NULL));
    if (!k) {
        cf_err err;
        if (cf_kafka_create_topic(bs, tb, 3, 1, NULL, 0, 30000, &err) ||
            cf_kafka_create_topic(bs, tw, 3, 1, NULL, 0, 30000, &err)) {
            fprintf(stderr, "%s: %s\n", err.message, err.detail);
            return 1;
        }
    }
    /* warm-up: topic metadata, producer ids, broker JIT */
    bench_run_bare(bs, tb, n / 20 + 1, payload, sizeof payload);
    run_wrapper(bs, tw, n / 20 + 1, payload);
    printf("records: %ld x 100 bytes per run, ABBA order, idempotent, acks=all, linger.ms=5\n", n);
    double b1 = bench_run_bare(bs, tb, n, payload, sizeof payload);
    printf("  bare librdkafka #1  %10.0f rec/s\n", b1);
    double w1 = run_wrapper(bs, tw, n, payload);
    printf("  cf_producer     #1  %10.0f rec/s\n", w1);
    double w2 = run_wrapper(bs, tw, n, payload);
    printf("  cf_producer     #2  %10.0f rec/s\n", w2);
    double b2 = bench_run_bare(bs, tb, n, payload, sizeof payload);
    printf("  bare librdkafka #2  %10.0f rec/s\n", b2);
    double bare = 2 / (1 / b1 + 1 / b2), wrap = 2 / (1 / w1 + 1 / w2); /* harmonic: total time */
    printf("bare librdkafka: %.0f rec/s (%.1f MB/s)\n", bare, bare * 100 / 1e6);
    printf("cf_producer:     %.0f rec/s (%.1f MB/s)\n", wrap, wrap * 100 / 1e6);
    printf("ratio wrapper/bare: %.2f (target >= 0.80)\n", wrap / bare);
    cf_embedded_kafka_destroy(k);
    return 0;
}
