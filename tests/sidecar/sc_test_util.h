/*
 * sc_test_util.h - helpers shared by the sidecar tests: reading the Cassandra
 * 5.0 fixtures (tests/data/cassandra/<case>: segments written by a real
 * node), copying a cdc_raw directory as another "replica", temporary
 * directories.
 */
#ifndef SC_TEST_UTIL_H
#define SC_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdcflow/cassandra_log.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "../cassandra/cass_test_util.h"

#define FIX CF_TESTS_DIR "/data/cassandra"

static inline cf_cass_schema *fixture_schema(const char *c) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/schema.cql", FIX, c);
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    if (cf_cass_ddl_parse_file(s, path, &err)) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        abort();
    }
    return s;
}

/* Sorted "CommitLog-*.log" paths of dir that have a _cdc.idx (malloc'd, NULL-terminated). */
static inline char **fixture_logs(const char *dir) {
    char **v = list_logs(dir);
    if (!v) return NULL;
    size_t w = 0;
    for (size_t i = 0; v[i]; i++) {
        char *idx = cf_cass_cdc_idx_path(v[i]);
        bool has = access(idx, F_OK) == 0;
        free(idx);
        if (has) v[w++] = v[i];
        else free(v[i]);
    }
    v[w] = NULL;
    return v;
}

static inline void free_strv(char **v) { free_list(v); }

static inline int count_logs(const char *dir) {
    char **v = fixture_logs(dir);
    int n = 0;
    for (char **p = v; p && *p; p++) n++;
    free_strv(v);
    return n;
}

typedef void (*update_fn)(void *arg, cf_cass_update *u, const char *segment, int64_t position);

/* Decode every mutation of the segments in dir (up to their idx offsets)
 * and call fn for each partition update. Returns the number of updates;
 * corruption or schema errors abort the test program. */
static inline long each_update(const char *dir, cf_cass_schema *schema, update_fn fn, void *arg) {
    cf_cass_decoder *dec = cf_cass_decoder_new(schema);
    char **logs = fixture_logs(dir);
    if (!logs) {
        fprintf(stderr, "no segments in %s\n", dir);
        abort();
    }
    long n = 0;
    cf_err err;
    for (char **lp = logs; *lp; lp++) {
        char *idx = cf_cass_cdc_idx_path(*lp);
        int64_t off;
        bool done;
        if (cf_cass_cdc_idx_read(idx, 3, 10, &off, &done, &err)) abort();
        free(idx);
        cf_cass_segment *seg;
        if (cf_cass_segment_open(*lp, NULL, &seg, &err)) abort();
        cf_cass_segment_set_limit(seg, off);
        cf_cass_entry e;
        cf_code rc;
        while ((rc = cf_cass_segment_next(seg, &e, &err)) == CF_OK) {
            cf_cass_mutation *m;
            rc = cf_cass_decode_mutation(dec, e.data, e.len, cf_cass_segment_get_info(seg)->messaging_version, &m, NULL,
                                         &err);
            if (rc == CF_ERR_NOT_FOUND) continue;
            if (rc) {
                fprintf(stderr, "%s: %s (%s)\n", *lp, err.message, err.detail);
                abort();
            }
            for (size_t i = 0; i < m->n_updates; i++, n++) fn(arg, &m->updates[i], cf_cass_segment_name(seg), e.position);
        }
        if (rc != CF_ERR_AGAIN && rc != CF_ERR_EOF) {
            fprintf(stderr, "%s: %s\n", *lp, err.message);
            abort();
        }
        cf_cass_segment_destroy(seg);
    }
    free_strv(logs);
    cf_cass_decoder_destroy(dec);
    return n;
}

/* A fresh directory under $TMPDIR (or /tmp); malloc'd path. */
static inline char *make_tmpdir(const char *tag) {
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/cf-sc-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    char *p = mkdtemp(tmpl);
    if (!p) abort();
    return strdup(p);
}

static inline void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    if (!a || !b) abort();
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n) abort();
    fclose(a);
    if (fclose(b)) abort();
}

/* Copy the regular files of dir `from` into `to` (created). With skip_seg >=
 * 0, the segment of that index in id order (and its idx) is left out: a
 * replica that lacks one segment. Returns the number of files copied. */
static inline int copy_dir(const char *from, const char *to, int skip_seg) {
    mkdir(to, 0755);
    char **logs = fixture_logs(from);
    char skip[1024] = "";
    for (int i = 0; logs && logs[i]; i++)
        if (i == skip_seg) snprintf(skip, sizeof skip, "%s", strrchr(logs[i], '/') + 1);
    free_strv(logs);
    size_t skip_len = strlen(skip) > 4 ? strlen(skip) - 4 : 0; /* without ".log" */
    DIR *d = opendir(from);
    if (!d) abort();
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (skip_len && strncmp(e->d_name, skip, skip_len) == 0) continue;
        char a[1024], b[1024];
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        snprintf(b, sizeof b, "%s/%s", to, e->d_name);
        struct stat st;
        if (stat(a, &st) || !S_ISREG(st.st_mode)) continue;
        copy_file(a, b);
        n++;
    }
    closedir(d);
    return n;
}

static inline void rm_rf(const char *path) {
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", path);
}

#endif
