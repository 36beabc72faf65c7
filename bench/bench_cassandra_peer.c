/*
 * bench_cassandra_peer.c - cdcflow's commit log decode over directories of
 * cdc_raw segments: cdcflow's side of the Cassandra part of bench/peers/run
 * (issue 17), whose peer is Cassandra's own CommitLogReader
 * (bench/peers/CassReadBench.java) over the same files in the same run.
 *
 *   bench_cassandra_peer SCHEMA.CQL ROUNDS CDC_RAW_DIR...
 *
 * Start-up: the schema (DESCRIBE ... WITH INTERNALS: table ids) parsed. Then
 * ROUNDS passes, each over every segment with a _cdc.idx in the directories
 * (cf_cass_dir_list order): the segment opened from its file, read up to its
 * index (cf_cass_segment_set_cdc_index), every entry's CRCs checked and its
 * mutation decoded (cf_cass_decode_mutation) into partition updates, rows and
 * cells, counted as the peer's handler counts them: mutations, partition
 * updates, rows (rows and range tombstone markers, the static row apart),
 * and the bytes of the partition keys, clusterings, cell values and cell
 * paths (so the same totals mean both decoded the same data). Mutations of
 * tables the schema does not know are skipped and counted.
 *
 * Prints, tab separated, as the peer does:
 *   init   SECONDS CPU_S
 *   round  N SECONDS CPU_S MUTATIONS UPDATES ROWS CELL_BYTES SEGMENTS SKIPPED_MUTATIONS
 *   hwm    PEAK_RSS_KB
 * SECONDS: wall clock; CPU_S: the process's user + system CPU (getrusage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "cdcflow/cassandra_log.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

typedef struct counts {
    unsigned long long mutations, updates, rows, cell_bytes, skipped;
} counts;

static unsigned long long row_bytes(const cf_cass_row *r) {
    unsigned long long n = 0;
    for (size_t i = 0; i < r->n_clustering; i++) n += r->clustering[i].len;
    for (size_t c = 0; c < r->n_columns; c++)
        for (size_t k = 0; k < r->columns[c].n_cells; k++)
            n += r->columns[c].cells[k].value.len + r->columns[c].cells[k].path.len;
    return n;
}

static void read_segment(const char *path, cf_cass_decoder *dec, counts *c) {
    cf_err err;
    cf_cass_segment *seg;
    if (cf_cass_segment_open(path, NULL, &seg, &err)) {
        fprintf(stderr, "bench_cassandra_peer: %s: %s\n", path, err.message);
        exit(1);
    }
    char *idx = cf_cass_cdc_idx_path(path);
    int64_t off;
    bool completed;
    if (cf_cass_cdc_idx_read(idx, 0, 0, &off, &completed, &err)) {
        fprintf(stderr, "bench_cassandra_peer: %s: %s\n", idx, err.message);
        exit(1);
    }
    free(idx);
    cf_cass_segment_set_cdc_index(seg, off, completed);
    int mv = cf_cass_segment_get_info(seg)->messaging_version;
    cf_cass_entry e;
    cf_code rc;
    while ((rc = cf_cass_segment_next(seg, &e, &err)) != CF_ERR_EOF) {
        if (rc) {
            fprintf(stderr, "bench_cassandra_peer: %s: %s (%s)\n", path, err.message, err.where);
            exit(1);
        }
        cf_cass_mutation *m;
        rc = cf_cass_decode_mutation(dec, e.data, e.len, mv, &m, NULL, &err);
        if (rc == CF_ERR_NOT_FOUND) {
            c->skipped++;
            continue;
        }
        if (rc) {
            fprintf(stderr, "bench_cassandra_peer: %s@%lld: %s\n", path, (long long)e.position, err.message);
            exit(1);
        }
        c->mutations++;
        for (size_t i = 0; i < m->n_updates; i++) {
            const cf_cass_update *u = &m->updates[i];
            c->updates++;
            c->cell_bytes += u->key.len;
            if (u->static_row) c->cell_bytes += row_bytes(u->static_row);
            c->rows += u->n_rows;
            for (size_t r = 0; r < u->n_rows; r++) c->cell_bytes += row_bytes(&u->rows[r]);
        }
    }
    cf_cass_segment_destroy(seg);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_cassandra_peer SCHEMA.CQL ROUNDS CDC_RAW_DIR...\n");
        return 2;
    }
    double w0 = wall();
    cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL);
    cf_err err;
    cf_cass_schema *s = cf_cass_schema_new();
    if (cf_cass_ddl_parse_file(s, argv[1], &err)) {
        fprintf(stderr, "bench_cassandra_peer: %s: %s\n", argv[1], err.message);
        return 1;
    }
    cf_cass_decoder *dec = cf_cass_decoder_new(s);
    printf("init\t%.3f\t%.3f\n", wall() - w0, cpu());
    /* the segments (with an index) of every directory */
    char **paths = NULL;
    size_t npaths = 0;
    for (int a = 3; a < argc; a++) {
        cf_cass_dir_entry *de;
        size_t n;
        if (cf_cass_dir_list(argv[a], &de, &n, &err)) {
            fprintf(stderr, "bench_cassandra_peer: %s: %s\n", argv[a], err.message);
            return 1;
        }
        paths = realloc(paths, (npaths + n) * sizeof *paths);
        for (size_t i = 0; i < n; i++)
            if (de[i].has_idx && de[i].problem == CF_OK) paths[npaths++] = strdup(de[i].path);
        cf_cass_dir_entries_free(de, n);
    }
    int rounds = atoi(argv[2]);
    for (int r = 1; r <= rounds; r++) {
        counts c = {0};
        double c0 = cpu(), t0 = wall();
        for (size_t i = 0; i < npaths; i++) read_segment(paths[i], dec, &c);
        printf("round\t%d\t%.3f\t%.3f\t%llu\t%llu\t%llu\t%llu\t%zu\t%llu\n", r, wall() - t0, cpu() - c0, c.mutations,
               c.updates, c.rows, c.cell_bytes, npaths, c.skipped);
        fflush(stdout);
    }
    printf("hwm\t%ld\n", bench_peak_rss_kb(getpid()));
    for (size_t i = 0; i < npaths; i++) free(paths[i]);
    free(paths);
    cf_cass_decoder_destroy(dec);
    cf_cass_schema_destroy(s);
    return 0;
}
