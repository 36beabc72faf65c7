/*
 * bench_cassandra_decode.c - Cassandra commit log decoding throughput, single
 * thread, in memory, against zlib's crc32 over the same bytes in the same run.
 *
 * Input: real plain segments, cut after their last entry (no zero padding):
 *   - CommitLogUpgradeTest 4.0.11 (v7) and 3.0.13 (v6), table Keyspace1.Standard1;
 *   - the Cassandra 5.0 fixture tests/data/cassandra/v7-plain (every CQL type,
 *     collections, statics, range tombstones, counters; system tables skipped).
 *   framing:  segment header, sync markers, both entry CRCs, no decoding
 *   decode:   segment header, sync markers, both entry CRCs, mutation decode into
 *             cf_cass_mutation events (unknown tables counted and skipped)
 *   decode+json: the same plus rendering every partition update as a JSON line
 *   baseline: zlib's crc32() over the same bytes, one round of it before each
 *             round of the measured work (CPU time of each summed apart), so
 *             that both see the same load; each line prints its own ratio
 *
 * Usage: bench_cassandra_decode [seconds per measurement, default 2] [only: framing|decode|decode+json]
 * (`only` runs that measurement alone, e.g. under perf record). With
 * CF_BENCH_ROUNDS=N each measurement runs exactly N rounds instead of for a
 * time: the same work every run, for comparing builds (with `perf stat -e
 * cycles:u,instructions:u` where the CPU exposes its counters; this VM does
 * not).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "bench_util.h"
#include "cdcflow/buf.h"
#include "cdcflow/cassandra_log.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"

#define LEGACY CF_SHARED_DIR "/testdata/cassandra/legacy-commitlog"
#define DATA CF_TESTS_DIR "/data/cassandra"

typedef struct input {
    const char *path, *schema;
    uint8_t *bytes;
    size_t len;
    cf_cass_schema *s;
    cf_cass_decoder *dec;
} input;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}


/* One pass over a segment; returns mutations read, adds updates.
 * mode 0: framing only (header, markers, CRCs), 1: + decode, 2: + JSON */
static size_t pass(input *in, int mode, size_t *updates, cf_buf *out) {
    bool json = mode == 2;
    cf_cass_segment *seg;
    cf_err err;
    if (cf_cass_segment_open_mem(in->bytes, in->len, "bench.log", NULL, &seg, &err)) {
        fprintf(stderr, "bench: %s: %s\n", in->path, err.message);
        exit(1);
    }
    int mv = cf_cass_segment_get_info(seg)->messaging_version;
    cf_cass_entry e;
    size_t n = 0;
    cf_code rc;
    while ((rc = cf_cass_segment_next(seg, &e, &err)) != CF_ERR_EOF) {
        if (rc) {
            fprintf(stderr, "bench: %s: %s (%s)\n", in->path, err.message, err.where);
            exit(1);
        }
        n++;
        if (mode == 0) continue;
        cf_cass_mutation *m;
        cf_cass_decode_mutation(in->dec, e.data, e.len, mv, &m, NULL, NULL);
        *updates += m->n_updates;
        if (json) {
            for (size_t i = 0; i < m->n_updates; i++) {
                cf_cass_update_to_json(&m->updates[i], "bench.log", e.position, out);
                cf_buf_append_byte(out, '\n');
            }
            cf_buf_reset(out);
        }
    }
    cf_cass_segment_destroy(seg);
    return n;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    const char *fixed = getenv("CF_BENCH_ROUNDS");
    size_t fixed_rounds = fixed ? strtoul(fixed, NULL, 10) : 0;
    const char *only = argc > 2 ? argv[2] : NULL;
    cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL);
    input in[] = {
        {LEGACY "/4.0.11-encrypted/CommitLog-7-1699285478684.log", DATA "/legacy_standard1_40.cql", 0, 0, 0, 0},
        {LEGACY "/3.0.13-encrypted/CommitLog-6-1699284515156.log", DATA "/legacy_standard1_30.cql", 0, 0, 0, 0},
        {DATA "/v7-plain/cdc_raw/CommitLog-7-1795978902474.log", DATA "/v7-plain/schema.cql", 0, 0, 0, 0},
    };
    size_t nin = sizeof in / sizeof in[0];
    size_t total_bytes = 0, total_mut = 0;
    for (size_t i = 0; i < nin; i++) {
        size_t len;
        uint8_t *p = bench_slurp(in[i].path, &len);
        in[i].s = cf_cass_schema_new();
        cf_err err;
        if (cf_cass_ddl_parse_file(in[i].s, in[i].schema, &err)) {
            fprintf(stderr, "bench: %s: %s\n", in[i].schema, err.message);
            return 1;
        }
        in[i].dec = cf_cass_decoder_new(in[i].s);
        /* cut after the last entry: zero padding is neither decoded nor CRC'd */
        cf_cass_segment *seg;
        if (cf_cass_segment_open_mem(p, len, "bench.log", NULL, &seg, &err)) return 1;
        cf_cass_entry e;
        int64_t end = 0;
        size_t muts = 0;
        while (cf_cass_segment_next(seg, &e, &err) == CF_OK) {
            end = e.end_position;
            muts++;
        }
        cf_cass_segment_destroy(seg);
        in[i].bytes = p;
        in[i].len = (size_t)end;
        total_bytes += in[i].len;
        total_mut += muts;
        printf("input %-52s %7zu bytes %5zu mutations\n", strrchr(in[i].path, '/') + 1, in[i].len, muts);
    }

    /* Each measurement alternates one round of crc32 over all inputs (the
     * baseline) with one round of the measured work, each timed on its own,
     * so that both see the same load of the shared machine; the ratio is
     * taken against the crc32 rounds interleaved with it. */
    double res[3] = {0, 0, 0}, mps[3], crc_mbs[3] = {0, 0, 0};
    uLong crc = 0;
    cf_buf out = CF_BUF_INIT;
    static const char *const names[3] = {"framing", "decode", "decode+json"};
    for (int json = 0; json < 3; json++) {
        if (only && strcmp(only, names[json]) != 0) continue;
        size_t updates = 0, muts = 0, rounds = 0;
        double t_work = 0, t_crc = 0;
        do {
            double a = now();
            for (size_t i = 0; i < nin; i++) crc = crc32(crc, in[i].bytes, (uInt)in[i].len);
            double b = now();
            for (size_t i = 0; i < nin; i++) muts += pass(&in[i], json, &updates, &out);
            double c = now();
            t_crc += b - a;
            t_work += c - b;
            rounds++;
        } while (fixed_rounds ? rounds < fixed_rounds : t_work + t_crc < 2 * secs);
        res[json] = (double)total_bytes * rounds / t_work / 1e6;
        crc_mbs[json] = (double)total_bytes * rounds / t_crc / 1e6;
        mps[json] = (double)muts / t_work;
        if (muts != total_mut * rounds) {
            fprintf(stderr, "bench: mutation count changed\n");
            return 1;
        }
        printf("%-12s %8.1f MB/s %10.0f mutations/s %10.0f partition updates/s | crc32 %7.1f MB/s | ratio %.2f\n",
               names[json], res[json], mps[json], (double)updates / t_work, crc_mbs[json], res[json] / crc_mbs[json]);
    }
    printf("(crc %08lx)\n", crc);
    if (res[1] > 0)
        printf("ratio decode/crc32 = %.2f (target >= 0.50)\n", res[1] / crc_mbs[1]);
    cf_buf_free(&out);
    for (size_t i = 0; i < nin; i++) {
        cf_cass_decoder_destroy(in[i].dec);
        cf_cass_schema_destroy(in[i].s);
        free(in[i].bytes);
    }
    return 0;
}
