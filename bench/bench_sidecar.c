/*
 * bench_sidecar.c - the Cassandra CDC sidecar over captured segments, RF=3,
 * one thread, against MD5 alone over the same bytes in the same run.
 *
 * Input: real segments written by Cassandra, each copied as three replicas'
 * cdc_raw directories (in $TMPDIR: the page cache holds them, so reading is
 * a memory copy):
 *   - CommitLogUpgradeTest 4.0.11 and 3.0.13 (Keyspace1.Standard1, 256-byte
 *     random blobs: cassandra-stress-like writes), taken as cdc = true, with
 *     an _cdc.idx written here (those segments come from a commit log, not
 *     cdc_raw);
 *   - the 5.0 fixtures v8-lz4-rollover (3000 rows of ~1 KiB, LZ4) and
 *     v7-plain (every CQL type, collections, range deletions).
 * Measured, each the whole engine (cdcflow/sidecar.h) at QUORUM, run to the
 * end of the segments, CPU time of this thread:
 *   dedup        read + decode + digest + dedup + change events (Connect values)
 *   dedup+avro   the same, every event through the AvroConverter (Confluent
 *                wire format; a registry client preloaded with the schemas,
 *                as after the first message of a table) and formatted as a
 *                record-file line into memory
 *   baseline     MD5 over the same segment bytes: each entry's bytes hashed
 *                on its own (one digest per replica copy, as a dedup of raw
 *                bytes would), and the bytes in one stream (MD5's best case);
 *                OpenSSL's MD5(), as the engine's digest
 * Figures: replica copies/s, published changes/s, MB/s of segment bytes, and
 * the ratio of MB/s to MD5's. Targets: >= 1.5M copies/s, >= 0.5 x MD5.
 *
 * Usage: bench_sidecar [seconds per measurement, default 2] [group 1-3: only that one] [dedup|avro: only that]
 * (the last two for profiling, e.g. under callgrind with 0.001 seconds: one round)
 */
#define OPENSSL_API_COMPAT 0x10100000L /* MD5(): deprecated in OpenSSL 3.0, not removed */
#include <openssl/md5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/avro.h"
#include "bench_util.h"
#include "cdcflow/buf.h"
#include "cdcflow/cassandra_log.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"
#include "cdcflow/recordfile.h"
#include "cdcflow/schema_registry.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"

#define LEGACY CF_SHARED_DIR "/testdata/cassandra/legacy-commitlog"
#define DATA CF_TESTS_DIR "/data/cassandra"

static double cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* the machine is shared */
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}


static void put(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "bench: cannot write %s\n", path);
        exit(1);
    }
}

/* one segment's entries, for the MD5 baseline */
typedef struct entries {
    uint8_t *bytes;
    size_t len;
    size_t *off, *elen, n;
} entries;

typedef struct group {
    const char *name;
    char dir[1024];
    entries e[8];
    size_t n;
    size_t bytes;       /* segment bytes the engine reads per replica and round */
    size_t entry_bytes; /* the entries' bytes (uncompressed) */
    size_t entries;
} group;

/* Copy a segment into the three replica directories, cut after its last entry
 * (plain segments are zero padded), with an index saying COMPLETED. */
static void add_segment(group *g, const char *path) {
    const char *dir = g->dir;
    size_t len;
    uint8_t *p = bench_slurp(path, &len);
    cf_cass_segment *seg;
    cf_err err;
    if (cf_cass_segment_open_mem(p, len, "x.log", NULL, &seg, &err)) {
        fprintf(stderr, "bench: %s: %s\n", path, err.message);
        exit(1);
    }
    entries *E = &g->e[g->n++];
    size_t cap = 1024;
    E->off = malloc(cap * sizeof *E->off);
    E->elen = malloc(cap * sizeof *E->elen);
    cf_cass_entry e;
    int64_t end = 0;
    bool plain = cf_cass_segment_get_info(seg)->compression == CF_CASS_COMP_NONE;
    while (cf_cass_segment_next(seg, &e, &err) == CF_OK) {
        if (E->n == cap) {
            cap *= 2;
            E->off = realloc(E->off, cap * sizeof *E->off);
            E->elen = realloc(E->elen, cap * sizeof *E->elen);
        }
        E->off[E->n] = (size_t)(e.data - p); /* plain segments: the data is in place */
        E->elen[E->n++] = e.len;
        end = e.end_position;
    }
    cf_cass_segment_destroy(seg);
    size_t keep = plain ? (size_t)end : len;
    if (!plain) { /* the baseline hashes the uncompressed entries: gather them */
        cf_buf b = CF_BUF_INIT;
        cf_cass_segment_open_mem(p, len, "x.log", NULL, &seg, &err);
        size_t k = 0;
        while (cf_cass_segment_next(seg, &e, &err) == CF_OK) {
            E->off[k] = b.len;
            cf_buf_append(&b, e.data, e.len);
            k++;
        }
        cf_cass_segment_destroy(seg);
        E->bytes = (uint8_t *)cf_buf_detach(&b, &E->len);
    } else {
        E->bytes = malloc(keep);
        memcpy(E->bytes, p, keep);
        E->len = keep;
    }
    const char *base = strrchr(path, '/') + 1;
    for (int r = 1; r <= 3; r++) {
        char to[1200], idx[1200];
        snprintf(to, sizeof to, "%s/n%d/%s", dir, r, base);
        put(to, p, keep);
        snprintf(idx, sizeof idx, "%.*s_cdc.idx", (int)(strlen(to) - 4), to);
        char txt[64];
        int tn = snprintf(txt, sizeof txt, "%lld\nCOMPLETED", (long long)end);
        put(idx, txt, (size_t)tn);
    }
    g->bytes += keep;
    g->entries += E->n;
    for (size_t i = 0; i < E->n; i++) g->entry_bytes += E->elen[i];
    free(p);
}

/* ---- the emitter: Avro through the converter, a record-file line in memory ---- */

typedef struct out {
    bool avro;
    cf_sr_client *sr;
    cf_avro_converter *kc, *vc;
    cf_buf file, k, v;
    char **registered;
    size_t nreg;
    size_t events;
} out;

static cf_record *new_rec(void *arg) {
    (void)arg;
    return cf_record_new();
}

static void preload(out *o, const cf_record *r) {
    for (size_t i = 0; i < o->nreg; i++)
        if (strcmp(o->registered[i], r->topic) == 0) return;
    o->registered = realloc(o->registered, (o->nreg + 1) * sizeof *o->registered);
    o->registered[o->nreg++] = strdup(r->topic);
    for (int k = 0; k < 2; k++) {
        char *json;
        cf_err err;
        if (cf_avro_schema_from_connect(k ? r->key_schema : r->value_schema, NULL, &json, &err)) {
            fprintf(stderr, "bench: %s\n", err.message);
            exit(1);
        }
        char *subject = cf_sr_subject_name(CF_SR_TOPIC_NAME, r->topic, k, NULL);
        cf_sr_cache_put_registered(o->sr, subject, json, (int32_t)(o->nreg * 2 + (size_t)k));
        free(subject);
        free(json);
    }
}

static void emit(void *arg, cf_record *r, cf_sc_op op) {
    (void)op;
    out *o = arg;
    o->events++;
    if (o->avro) {
        preload(o, r);
        cf_err err;
        bool null;
        cf_buf_reset(&o->k);
        cf_buf_reset(&o->v);
        if (cf_avro_converter_write(o->kc, r->topic, r->key_schema, r->key, &o->k, &null, &err) ||
            cf_avro_converter_write(o->vc, r->topic, r->value_schema, r->value, &o->v, &null, &err)) {
            fprintf(stderr, "bench: avro: %s (%s)\n", err.message, err.where);
            exit(1);
        }
        cf_msg m = {.topic = r->topic, .partition = -1, .offset = -1, .key = o->k.data, .key_len = o->k.len,
                    .value = o->v.data, .value_len = o->v.len};
        cf_recordfile_format(&m, &o->file);
        if (o->file.len > (1 << 20)) cf_buf_reset(&o->file); /* an in-memory file that wraps */
    }
    cf_record_destroy(r);
}

static cf_cass_schema *schemas(void) {
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    /* Keyspace1.Standard1 of both legacy sets, as CDC tables */
    const char *ddl =
        "CREATE KEYSPACE \"Keyspace1\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '3'};"
        "CREATE TABLE \"Keyspace1\".\"Standard1\" (key ascii, col ascii, val blob, val0 blob, PRIMARY KEY (key, col))"
        " WITH ID = 657e5210-7cbb-11ee-9858-c9aa1eb53e69 AND cdc = true;"
        "CREATE TABLE \"Keyspace1\".\"Standard1_30\" (key ascii, col ascii, val blob, val0 blob, PRIMARY KEY (key, col))"
        " WITH ID = 26be1710-7cb9-11ee-9fce-59fe9713701b AND cdc = true;";
    if (cf_cass_ddl_parse(s, ddl, strlen(ddl), "bench", &err)) {
        fprintf(stderr, "bench: %s (%s)\n", err.message, err.where);
        exit(1);
    }
    const char *files[] = {DATA "/v8-lz4-rollover/schema.cql", DATA "/v7-plain/schema.cql"};
    for (int i = 0; i < 2; i++)
        if (cf_cass_ddl_parse_file(s, files[i], &err)) {
            fprintf(stderr, "bench: %s: %s\n", files[i], err.message);
            exit(1);
        }
    return s;
}

typedef struct result {
    double t;
    uint64_t copies, published, events;
} result;

/* A fresh registry client and converters: each round's engine makes its own
 * schema objects, and a converter that saw another round's would compare
 * them field by field (a long-running engine keeps one set). */
static void converters(out *o) {
    cf_avro_converter_destroy(o->kc);
    cf_avro_converter_destroy(o->vc);
    cf_sr_client_destroy(o->sr);
    for (size_t i = 0; i < o->nreg; i++) free(o->registered[i]);
    o->nreg = 0;
    cf_sr_config sc;
    cf_sr_config_init(&sc);
    cf_err err;
    cf_props *cp = cf_props_new();
    cf_props_set(cp, "auto.register.schemas", "true");
    if (cf_sr_client_new(&sc, &o->sr, &err) || cf_avro_converter_new_with_client(cp, true, o->sr, &o->kc, &err) ||
        cf_avro_converter_new_with_client(cp, false, o->sr, &o->vc, &err)) {
        fprintf(stderr, "bench: %s\n", err.message);
        exit(1);
    }
    cf_props_destroy(cp);
}

static result run_engine(const char *dir, cf_cass_schema *s, out *o) {
    converters(o);
    char d[3][1100];
    const char *dirs[3];
    for (int i = 0; i < 3; i++) {
        snprintf(d[i], sizeof d[i], "%s/n%d", dir, i + 1);
        dirs[i] = d[i];
    }
    cf_sc_engine_opts eo = {.dirs = dirs, .n_dirs = 3, .schema = s, .cl = CF_SC_QUORUM, .rf = 3,
                            .timeout_ms = 600000, .max_pending = 1000000, .once = true};
    cf_sc_engine *e;
    cf_err err;
    double t0 = cpu();
    if (cf_sc_engine_new(&eo, &e, &err)) {
        fprintf(stderr, "bench: engine: %s (%s)\n", err.message, err.detail);
        exit(1);
    }
    cf_sc_emitter em = {new_rec, emit, o};
    size_t n;
    cf_code rc;
    while ((rc = cf_sc_engine_step(e, &em, 4096, &n, &err)) == CF_OK) {}
    if (rc != CF_ERR_EOF) {
        fprintf(stderr, "bench: step: %s\n", err.message);
        exit(1);
    }
    cf_sc_stats st;
    cf_sc_engine_stats(e, &st);
    cf_sc_engine_destroy(e);
    result r = {cpu() - t0, st.copies, st.published, st.events};
    return r;
}

/* MD5 of every replica copy's entry bytes (3 x each entry), or of the bytes
 * as one stream. OpenSSL's MD5() (the digest of the engine uses it too): the
 * cheapest way to it, EVP's Init costs allocations per call. */
static double md5_round(const group *g, bool per_entry, unsigned char *acc) {
    unsigned char dg[16];
    double t0 = cpu();
    for (int r = 0; r < 3; r++)
        for (size_t s = 0; s < g->n; s++) {
            const entries *E = &g->e[s];
            if (per_entry) {
                for (size_t i = 0; i < E->n; i++) {
                    MD5(E->bytes + E->off[i], E->elen[i], dg);
                    acc[i & 15] ^= dg[0];
                }
            } else {
                MD5(E->bytes, E->len, dg);
                acc[0] ^= dg[1];
            }
        }
    return cpu() - t0;
}

static void group_init(group *g, const char *name) {
    g->name = name;
    const char *tmp = getenv("TMPDIR");
    snprintf(g->dir, sizeof g->dir, "%s/cf-bench-sidecar-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g->dir)) exit(1);
    for (int r = 1; r <= 3; r++) {
        char d[1100];
        snprintf(d, sizeof d, "%s/n%d", g->dir, r);
        mkdir(d, 0755);
    }
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    int only = argc > 2 ? atoi(argv[2]) : 0;
    const char *mode = argc > 3 ? argv[3] : "";
    cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL);
    group groups[3];
    memset(groups, 0, sizeof groups);
    group_init(&groups[0], "Standard1 (CommitLogUpgradeTest 4.0.11 + 3.0.13, ~300 B writes)");
    add_segment(&groups[0], LEGACY "/4.0.11-encrypted/CommitLog-7-1699285478684.log");
    add_segment(&groups[0], LEGACY "/3.0.13-encrypted/CommitLog-6-1699284515156.log");
    group_init(&groups[1], "all CQL types (fixture v7-plain)");
    add_segment(&groups[1], DATA "/v7-plain/cdc_raw/CommitLog-7-1795978902474.log");
    group_init(&groups[2], "3000 x 1 KiB rows, LZ4 (fixture v8-lz4-rollover)");
    const char *roll[] = {"CommitLog-8-1795981246658.log", "CommitLog-8-1795981246659.log",
                          "CommitLog-8-1795981246660.log", "CommitLog-8-1795981246661.log"};
    for (int i = 0; i < 4; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/v8-lz4-rollover/cdc_raw/%s", DATA, roll[i]);
        add_segment(&groups[2], p);
    }
    cf_cass_schema *s = schemas();
    out o = {0};
    static const char *const names[2] = {"dedup", "dedup+avro"};
    unsigned char acc[16] = {0};
    for (int gi = 0; gi < 3; gi++) {
        group *g = &groups[gi];
        if (only && gi + 1 != only) {
            char cmd[1200];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", g->dir);
            if (system(cmd)) return 1;
            continue;
        }
        printf("%s: %zu segment(s) x 3 replicas, %zu entries, %.2f MB of segments, %.2f MB of entries per replica\n",
               g->name, g->n, g->entries, g->bytes / 1e6, g->entry_bytes / 1e6);
        for (int avro = 0; avro < 2; avro++) {
            if (*mode && strcmp(mode, names[avro] + (avro ? 6 : 0)) != 0) continue;
            o.avro = avro;
            double t_work = 0, t_md5e = 0, t_md5s = 0;
            uint64_t copies = 0, published = 0, events = 0;
            int rounds = 0;
            do { /* alternate the baseline and the work, so that both see the same load */
                t_md5e += md5_round(g, true, acc);
                t_md5s += md5_round(g, false, acc);
                result r = run_engine(g->dir, s, &o);
                t_work += r.t;
                copies += r.copies;
                published += r.published;
                events += r.events;
                rounds++;
            } while (t_work + t_md5e + t_md5s < 3 * secs);
            double ebytes = (double)g->entry_bytes * 3 * rounds;
            double embs = ebytes / t_work / 1e6, emd5 = ebytes / t_md5e / 1e6, smd5 = ebytes / t_md5s / 1e6;
            printf("  %-11s %9.0f copies/s %9.0f published/s %9.0f events/s | %6.1f MB/s of entries | MD5 per "
                   "entry %6.1f MB/s, one stream %6.1f MB/s | ratio %.2f (per entry), %.2f (stream)\n",
                   names[avro], (double)copies / t_work, (double)published / t_work, (double)events / t_work, embs,
                   emd5, smd5, embs / emd5, embs / smd5);
        }
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g->dir);
        if (system(cmd)) return 1;
    }
    printf("targets (dedup+avro): >= 1500000 copies/s on one core, >= 0.50 x MD5 over the same bytes\n");
    printf("(acc %02x)\n", acc[0]);
    cf_avro_converter_destroy(o.kc);
    cf_avro_converter_destroy(o.vc);
    cf_sr_client_destroy(o.sr);
    cf_buf_free(&o.file);
    cf_buf_free(&o.k);
    cf_buf_free(&o.v);
    for (size_t i = 0; i < o.nreg; i++) free(o.registered[i]);
    free(o.registered);
    cf_cass_schema_destroy(s);
    return 0;
}
