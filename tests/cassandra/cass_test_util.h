/*
 * cass_test_util.h - helpers shared by the cassandra tests: the schema of
 * CommitLogUpgradeTest's Keyspace1.Standard1 and the hash.txt oracle.
 */
#ifndef CASS_TEST_UTIL_H
#define CASS_TEST_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/cassandra_log.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"

#define LEGACY_DIR CF_SHARED_DIR "/testdata/cassandra/legacy-commitlog"

typedef struct hash_props {
    long cells;
    int32_t hash;
    char cfid[64];
} hash_props;

static inline int read_hash_props(const char *dir, hash_props *h) {
    char path[1024];
    snprintf(path, sizeof path, "%s/hash.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    memset(h, 0, sizeof *h);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (strncmp(line, "cells=", 6) == 0) h->cells = atol(line + 6);
        if (strncmp(line, "hash=", 5) == 0) h->hash = (int32_t)atol(line + 5);
        if (strncmp(line, "cfid=", 5) == 0) snprintf(h->cfid, sizeof h->cfid, "%s", line + 5);
    }
    fclose(f);
    return 0;
}

/* Keyspace1.Standard1 as CommitLogUpgradeTest builds it on the 5.0 branch
 * (the one that added the 3.0.13 and 4.0.11 sets): key ascii, col ascii
 * (clustering), val blob, val0 blob, id = cfid. (The 3.4-era test had no
 * val0 and a dense table; the 3.0.13 segments carry val0 in their headers.) */
static inline cf_cass_table *standard1_table(const char *cfid) {
    cf_cass_table *t = cf_cass_table_new("Keyspace1", "Standard1");
    cf_cass_table_add_column(t, "key", cf_cql_type_new(CF_CQL_ASCII), CF_CASS_PARTITION_KEY, 0, false, NULL);
    cf_cass_table_add_column(t, "col", cf_cql_type_new(CF_CQL_ASCII), CF_CASS_CLUSTERING, 0, false, NULL);
    cf_cass_table_add_column(t, "val", cf_cql_type_new(CF_CQL_BLOB), CF_CASS_REGULAR, -1, false, NULL);
    cf_cass_table_add_column(t, "val0", cf_cql_type_new(CF_CQL_BLOB), CF_CASS_REGULAR, -1, false, NULL);
    uint8_t id[16];
    if (cf_cass_uuid_parse(cfid, strlen(cfid), id)) cf_cass_table_set_id(t, id);
    return t;
}

/* Sorted list of *.log files of a directory (malloc'd, NULL-terminated). */
static inline char **list_logs(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return NULL;
    size_t cap = 64, n = 0;
    char **v = calloc(cap, sizeof *v);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".log") == 0) {
            if (n + 1 == cap) { /* a shared node's cdc_raw may hold many */
                cap *= 2;
                v = realloc(v, cap * sizeof *v);
            }
            v[n] = malloc(strlen(dir) + l + 2);
            sprintf(v[n], "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    v[n] = NULL;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(v[i], v[j]) > 0) {
                char *t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
    return v;
}

static inline void free_list(char **v) {
    if (!v) return;
    for (char **p = v; *p; p++) free(*p);
    free(v);
}

/* CommitLogUpgradeTest.hash */
static inline int32_t upgrade_hash(int32_t h, const uint8_t *p, size_t n) {
    uint32_t hu = (uint32_t)h;
    int shift = 0;
    for (size_t i = 0; i < n; i++) {
        hu += (uint32_t)p[i] << shift;
        shift = (shift + 8) & 31;
    }
    return (int32_t)hu;
}

static inline size_t read_key_hex(const char *path, uint8_t *key, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[200];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    size_t k = 0;
    for (size_t i = 0; i + 1 < n && k < cap; i += 2) {
        unsigned v;
        if (sscanf(buf + i, "%2x", &v) != 1) break;
        key[k++] = (uint8_t)v;
    }
    return k;
}

#endif
