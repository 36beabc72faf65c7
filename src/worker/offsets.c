/*
 * offsets.c - source offsets: Connect's offsets-topic serialization and the
 * offset store (local file, or a backend such as the Kafka offsets topic).
 *
 * Kafka Connect keeps source offsets as key/value pairs written with the
 * JsonConverter (schemas.enable=false):
 *     key   ["<connector name>",{<source partition map>}]
 *     value {<source offset map>}          (null = offset deleted)
 * We write exactly that (compact JSON, as Jackson prints it) so that
 * Connect's own tooling (and a Connect worker sharing the topic) reads our
 * offsets and we read theirs. Numbers read back are INT64 / FLOAT64, as
 * JsonConverter's schemaless conversion gives them.
 *
 * The store keeps the latest value per key in memory, indexed by a
 * canonical form of the key (map keys sorted) so that two equal partition
 * maps built in different orders find the same offset (hashed: a files
 * source has one entry per object). flush() takes the dirty entries under
 * the lock and writes them without it, so puts never wait for I/O; it hands
 * the dirty entries to the backend: the file backend rewrites the whole file
 * atomically (temp file, fsync, rename, fsync of the directory), so a crash
 * leaves either the old or the new file, never a torn one.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/worker.h"
#include "worker_internal.h"

/* ---------------- cf_value <-> JSON ---------------- */

static json_t *value_to_json(const cf_value *v) {
    if (!v) return json_null();
    switch (v->type) {
    case CF_INT8: case CF_INT16: case CF_INT32: case CF_INT64: return json_integer((json_int_t)v->u.i);
    case CF_FLOAT32: case CF_FLOAT64: return json_real(v->u.f);
    case CF_BOOLEAN: return json_boolean(v->u.b);
    case CF_STRING: return json_stringn(v->u.s.ptr, v->u.s.len);
    case CF_BYTES: return json_stringn(v->u.s.ptr, v->u.s.len); /* not produced by sources; best effort */
    case CF_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; i < v->u.arr.len; i++) json_array_append_new(a, value_to_json(v->u.arr.items[i]));
        return a;
    }
    case CF_MAP: {
        json_t *o = json_object();
        for (size_t i = 0; i < v->u.map.len; i++) {
            const cf_value *k = v->u.map.keys[i];
            char *ks = (k && k->type == CF_STRING) ? cf_xstrdup(k->u.s.ptr) : cf_value_debug_string(k);
            json_object_set_new(o, ks, value_to_json(v->u.map.vals[i]));
            free(ks);
        }
        return o;
    }
    case CF_STRUCT: {
        json_t *o = json_object();
        const cf_schema *s = v->u.st.schema;
        for (size_t i = 0; s && i < s->n_fields; i++)
            json_object_set_new(o, s->fields[i].name, value_to_json(v->u.st.fields[i]));
        return o;
    }
    }
    return json_null();
}

static cf_value *json_to_value(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        cf_value *m = cf_value_map();
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)j, k, x) cf_value_map_put(m, cf_value_string(k), json_to_value(x));
        return m;
    }
    case JSON_ARRAY: {
        cf_value *a = cf_value_array();
        for (size_t i = 0; i < json_array_size(j); i++) cf_value_array_push(a, json_to_value(json_array_get(j, i)));
        return a;
    }
    case JSON_STRING: return cf_value_string_n(json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return cf_value_int64((int64_t)json_integer_value(j));
    case JSON_REAL: return cf_value_float64(json_real_value(j));
    case JSON_TRUE: return cf_value_bool(true);
    case JSON_FALSE: return cf_value_bool(false);
    case JSON_NULL: return NULL;
    }
    return NULL;
}

char *cf_worker_json_from_value(const cf_value *v) {
    json_t *j = value_to_json(v);
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    json_decref(j);
    return s;
}

static json_t *key_json(const char *connector, const cf_value *partition) {
    json_t *k = json_array();
    json_array_append_new(k, json_string(connector ? connector : ""));
    json_array_append_new(k, value_to_json(partition));
    return k;
}

char *cf_offset_key_json(const char *connector, const cf_value *source_partition) {
    json_t *k = key_json(connector, source_partition);
    char *s = json_dumps(k, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(k);
    return s;
}

char *cf_offset_value_json(const cf_value *source_offset) {
    if (!source_offset) return NULL;
    return cf_worker_json_from_value(source_offset);
}

cf_code cf_offset_key_parse(const char *json, size_t len, char **connector, cf_value **partition, cf_err *err) {
    json_error_t je;
    json_t *j = json_loadb(json, len, JSON_DECODE_ANY, &je);
    if (!j) {
        cf_err_set(err, CF_ERR_CORRUPT, "offsets key is not JSON");
        cf_err_detail(err, "%s at byte %d", je.text, je.position);
        return CF_ERR_CORRUPT;
    }
    if (!json_is_array(j) || json_array_size(j) != 2 || !json_is_string(json_array_get(j, 0)) ||
        !(json_is_object(json_array_get(j, 1)) || json_is_null(json_array_get(j, 1)))) {
        json_decref(j);
        cf_err_set(err, CF_ERR_CORRUPT, "offsets key is not [\"<connector>\",{partition}]");
        cf_err_detail(err, "key: %.*s", (int)(len > 200 ? 200 : len), json);
        return CF_ERR_CORRUPT;
    }
    if (connector) *connector = cf_xstrdup(json_string_value(json_array_get(j, 0)));
    if (partition) *partition = json_to_value(json_array_get(j, 1));
    json_decref(j);
    return CF_OK;
}

cf_code cf_offset_value_parse(const char *json, size_t len, cf_value **offset, cf_err *err) {
    json_error_t je;
    json_t *j = json_loadb(json, len, JSON_DECODE_ANY, &je);
    if (!j) {
        cf_err_set(err, CF_ERR_CORRUPT, "offsets value is not JSON");
        cf_err_detail(err, "%s at byte %d", je.text, je.position);
        return CF_ERR_CORRUPT;
    }
    if (!json_is_object(j) && !json_is_null(j)) {
        json_decref(j);
        cf_err_set(err, CF_ERR_CORRUPT, "offsets value is not a JSON object");
        cf_err_detail(err, "value: %.*s", (int)(len > 200 ? 200 : len), json);
        return CF_ERR_CORRUPT;
    }
    *offset = json_to_value(j);
    json_decref(j);
    return CF_OK;
}

/* ---------------- the store ---------------- */

typedef struct entry {
    char *canon;      /* sorted-keys form of the key: the index */
    char *key;        /* key JSON as written */
    char *value;      /* value JSON, NULL = deleted (tombstone) */
    bool dirty;
} entry;

struct cf_offset_store {
    pthread_mutex_t mu;       /* entries, index, dirty marks */
    pthread_mutex_t flush_mu; /* one flush at a time; held across the I/O, mu is not */
    entry *e;
    size_t n, cap;
    /* open addressing over canon: entry index + 1 (0 = empty), a power of
     * two at least twice n (a files source keeps one entry per object ever
     * read: a linear search made every put O(objects)) */
    size_t *idx;
    size_t idx_cap;
    bool dirty;
    char *path;                        /* file backend */
    const cf_offset_backend *backend;  /* other backends (Kafka topic) */
    void *bstate;
};

static char *canon_of(const char *connector, const cf_value *partition) {
    json_t *k = key_json(connector, partition);
    char *s = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(k);
    return s;
}

static char *canon_of_key_json(const char *key, size_t len) {
    json_t *j = json_loadb(key, len, JSON_DECODE_ANY, NULL);
    if (!j) return NULL;
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(j);
    return s;
}

static uint64_t canon_hash(const char *c) {
    uint64_t h = 1469598103934665603ull;
    for (; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h;
}

static void index_place(cf_offset_store *s, size_t i) {
    size_t mask = s->idx_cap - 1, j = (size_t)canon_hash(s->e[i].canon) & mask;
    while (s->idx[j]) j = (j + 1) & mask;
    s->idx[j] = i + 1;
}

/* Index entry i (just appended); grows and rebuilds the table as needed. */
static void index_add(cf_offset_store *s, size_t i) {
    if (2 * s->n > s->idx_cap) {
        size_t cap = 64;
        while (cap < 4 * s->n) cap *= 2;
        free(s->idx);
        s->idx = cf_xcalloc(cap, sizeof *s->idx);
        s->idx_cap = cap;
        for (size_t k = 0; k < s->n; k++) index_place(s, k);
        return;
    }
    index_place(s, i);
}

static entry *find(cf_offset_store *s, const char *canon) {
    if (!s->idx_cap) return NULL;
    size_t mask = s->idx_cap - 1;
    for (size_t j = (size_t)canon_hash(canon) & mask; s->idx[j]; j = (j + 1) & mask)
        if (strcmp(s->e[s->idx[j] - 1].canon, canon) == 0) return &s->e[s->idx[j] - 1];
    return NULL;
}

/* Set by key JSON text (owned strings are taken). */
static void set_entry(cf_offset_store *s, char *canon, char *key, char *value, bool dirty) {
    entry *e = find(s, canon);
    if (e) {
        free(canon);
        free(e->key);
        free(e->value);
        e->key = key;
        e->value = value;
    } else {
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 16;
            s->e = cf_xrealloc(s->e, s->cap * sizeof(entry));
        }
        e = &s->e[s->n++];
        e->canon = canon;
        e->key = key;
        e->value = value;
        index_add(s, s->n - 1);
    }
    e->dirty = dirty;
    if (dirty) s->dirty = true;
}

cf_code cf_offset_store_load_record(cf_offset_store *s, const char *key, size_t klen, const char *value, size_t vlen,
                                    cf_err *err) {
    char *conn = NULL;
    cf_value *part = NULL;
    if (cf_offset_key_parse(key, klen, &conn, &part, err)) return err ? err->code : CF_ERR_CORRUPT;
    free(conn);
    cf_value_destroy(part);
    if (value) {
        cf_value *off = NULL;
        if (cf_offset_value_parse(value, vlen, &off, err)) return err ? err->code : CF_ERR_CORRUPT;
        cf_value_destroy(off);
    }
    pthread_mutex_lock(&s->mu);
    set_entry(s, canon_of_key_json(key, klen), cf_xstrndup(key, klen), value ? cf_xstrndup(value, vlen) : NULL,
              false);
    pthread_mutex_unlock(&s->mu);
    return CF_OK;
}

static cf_offset_store *store_alloc(void) {
    cf_offset_store *s = cf_xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->flush_mu, NULL);
    return s;
}

static cf_code load_file(cf_offset_store *s, cf_err *err) {
    FILE *f = fopen(s->path, "rb");
    if (!f) {
        if (errno == ENOENT) return CF_OK;
        cf_err_set(err, CF_ERR_IO, "cannot open offsets file \"%s\"", s->path);
        cf_err_detail(err, "%s", strerror(errno));
        return CF_ERR_IO;
    }
    json_error_t je;
    json_t *j = json_loadf(f, 0, &je);
    fclose(f);
    if (!j || !json_is_object(j) || !json_is_array(json_object_get(j, "offsets"))) {
        cf_err_set(err, CF_ERR_CORRUPT, "offsets file \"%s\" is damaged", s->path);
        if (!j) cf_err_detail(err, "%s at line %d", je.text, je.line);
        else cf_err_detail(err, "expected {\"offsets\": [{\"key\": [...], \"value\": {...}}, ...]}");
        cf_err_hint(err, "Restore it from a backup, or remove it to start the sources from the beginning.");
        cf_err_where(err, "%s", s->path);
        json_decref(j);
        return CF_ERR_CORRUPT;
    }
    json_t *arr = json_object_get(j, "offsets"), *it;
    size_t i;
    cf_code rc = CF_OK;
    json_array_foreach(arr, i, it) {
        json_t *k = json_object_get(it, "key"), *v = json_object_get(it, "value");
        char *ks = k ? json_dumps(k, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
        char *vs = (v && !json_is_null(v)) ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
        if (!ks) {
            rc = cf_err_set(err, CF_ERR_CORRUPT, "offsets file \"%s\": entry %zu has no key", s->path, i);
        } else {
            rc = cf_offset_store_load_record(s, ks, strlen(ks), vs, vs ? strlen(vs) : 0, err);
            if (rc) cf_err_where(err, "%s: entry %zu", s->path, i);
        }
        free(ks);
        free(vs);
        if (rc) break;
    }
    json_decref(j);
    return rc;
}

cf_code cf_offset_store_open_file(const char *path, cf_offset_store **out, cf_err *err) {
    cf_offset_store *s = store_alloc();
    s->path = cf_xstrdup(path);
    cf_code rc = load_file(s, err);
    if (rc) {
        cf_offset_store_destroy(s);
        return rc;
    }
    *out = s;
    return CF_OK;
}

cf_offset_store *cf_offset_store_new_backend(const cf_offset_backend *backend, void *state) {
    cf_offset_store *s = store_alloc();
    s->backend = backend;
    s->bstate = state;
    return s;
}

cf_value *cf_offset_store_get(cf_offset_store *s, const char *connector, const cf_value *partition) {
    char *canon = canon_of(connector, partition);
    cf_value *v = NULL;
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, canon);
    if (e && e->value) cf_offset_value_parse(e->value, strlen(e->value), &v, NULL);
    pthread_mutex_unlock(&s->mu);
    free(canon);
    return v;
}

void cf_offset_store_put(cf_offset_store *s, const char *connector, const cf_value *partition,
                         const cf_value *offset) {
    char *canon = canon_of(connector, partition);
    char *key = cf_offset_key_json(connector, partition);
    char *val = cf_offset_value_json(offset);
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, canon);
    if (e && ((e->value && val && strcmp(e->value, val) == 0) || (!e->value && !val))) {
        free(canon), free(key), free(val); /* unchanged */
    } else {
        set_entry(s, canon, key, val, true);
    }
    pthread_mutex_unlock(&s->mu);
}

char *cf_offset_store_connector_json(cf_offset_store *s, const char *connector) {
    json_t *a = json_array();
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++) {
        if (!s->e[i].value) continue; /* deleted */
        json_t *k = json_loads(s->e[i].key, JSON_DECODE_ANY, NULL);
        const char *kc = json_string_value(json_array_get(k, 0));
        if (kc && strcmp(kc, connector) == 0) {
            json_t *v = json_loads(s->e[i].value, JSON_DECODE_ANY, NULL);
            json_array_append_new(a, json_pack("{s:O,s:o}", "partition", json_array_get(k, 1), "offset",
                                               v ? v : json_null()));
        }
        json_decref(k);
    }
    pthread_mutex_unlock(&s->mu);
    char *out = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(a);
    return out;
}

size_t cf_offset_store_count(cf_offset_store *s) {
    pthread_mutex_lock(&s->mu);
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) n += s->e[i].value != NULL;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static cf_code fsync_dir_of(const char *path) {
    char *copy = cf_xstrdup(path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    free(copy);
    if (fd < 0) return CF_ERR_IO;
    int r = fsync(fd);
    close(fd);
    return r ? CF_ERR_IO : CF_OK;
}

/* The whole store as the file's text (under mu); write_file puts it in
 * <path>.tmp, fsyncs and renames it over <path>. */
static void file_text(cf_offset_store *s, cf_buf *b) {
    cf_buf_append_str(b, "{\"format\":\"cdcflow.offsets\",\"version\":1,\"offsets\":[\n");
    bool first = true;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->e[i].value) continue; /* deleted offsets are simply absent */
        cf_buf_printf(b, "%s{\"key\":%s,\"value\":%s}", first ? "" : ",\n", s->e[i].key, s->e[i].value);
        first = false;
    }
    cf_buf_append_str(b, "\n]}\n");
}

/* Replace the file with b's text atomically (no lock held: flush_mu orders
 * the writers). */
static cf_code write_file(cf_offset_store *s, cf_buf *bp, cf_err *err) {
    cf_buf b = *bp;
    size_t plen = strlen(s->path);
    char *tmp = cf_xmalloc(plen + 16);
    snprintf(tmp, plen + 16, "%s.tmp", s->path);
    cf_code rc = CF_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        rc = cf_err_set(err, CF_ERR_IO, "cannot write offsets file \"%s\"", tmp);
        cf_err_detail(err, "%s", strerror(errno));
        cf_err_hint(err, "Check that the directory of offset.storage.file.filename exists and is writable.");
        goto out;
    }
    size_t off = 0;
    while (off < b.len) {
        ssize_t w = write(fd, b.data + off, b.len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            rc = cf_err_set(err, CF_ERR_IO, "cannot write offsets file \"%s\"", tmp);
            cf_err_detail(err, "%s", strerror(errno));
            close(fd);
            unlink(tmp);
            goto out;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0) {
        rc = cf_err_set(err, CF_ERR_IO, "cannot fsync offsets file \"%s\"", tmp);
        cf_err_detail(err, "%s", strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    close(fd);
    if (rename(tmp, s->path) != 0) {
        rc = cf_err_set(err, CF_ERR_IO, "cannot rename \"%s\" to \"%s\"", tmp, s->path);
        cf_err_detail(err, "%s", strerror(errno));
        unlink(tmp);
        goto out;
    }
    fsync_dir_of(s->path);
out:
    free(tmp);
    return rc;
}

/* The dirty state is taken under mu and written with mu released, so that
 * puts (every source task's acknowledged offsets) never wait for the disk or
 * the broker. What a failed flush took is marked dirty again. */
cf_code cf_offset_store_flush(cf_offset_store *s, cf_err *err) { return cf_offset_store_flush_until(s, 0, err); }

cf_code cf_offset_store_flush_until(cf_offset_store *s, int64_t deadline_us, cf_err *err) {
    if (deadline_us) {
        /* another task's flush may be waiting on an unreachable broker */
        int64_t left = deadline_us - cf_now_us();
        if (left < 100000) left = 100000; /* CF_STOP_MIN_WAIT_MS */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += left / 1000000;
        ts.tv_nsec += (left % 1000000) * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        if (pthread_mutex_timedlock(&s->flush_mu, &ts) != 0) {
            cf_err_set(err, CF_ERR_AGAIN, "offsets not stored: another flush of the offset store did not end in time");
            cf_err_hint(err, "They are stored at the next flush; the records after the stored offsets are read again "
                             "after a restart.");
            return CF_ERR_AGAIN;
        }
    } else {
        pthread_mutex_lock(&s->flush_mu);
    }
    int timeout_ms = -1;
    if (deadline_us) {
        int64_t left = (deadline_us - cf_now_us()) / 1000;
        timeout_ms = left < 100 ? 100 : left > INT32_MAX ? INT32_MAX : (int)left;
    }
    pthread_mutex_lock(&s->mu);
    if (!s->dirty) {
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->flush_mu);
        return CF_OK;
    }
    cf_code rc = CF_OK;
    cf_buf text = CF_BUF_INIT;
    size_t *taken = NULL, nt = 0;
    if (s->path) {
        file_text(s, &text);
        for (size_t i = 0; i < s->n; i++) s->e[i].dirty = false;
    } else if (s->backend) {
        /* hand the dirty entries over (Kafka: produce, no waiting) */
        taken = cf_xmalloc((s->n ? s->n : 1) * sizeof *taken);
        for (size_t i = 0; i < s->n && !rc; i++) {
            if (!s->e[i].dirty) continue;
            rc = s->backend->write(s->bstate, s->e[i].key, s->e[i].value, err);
            if (!rc) {
                s->e[i].dirty = false;
                taken[nt++] = i;
            }
        }
    }
    s->dirty = rc != CF_OK; /* entries not handed over are still dirty */
    pthread_mutex_unlock(&s->mu);
    if (!rc) rc = s->path ? write_file(s, &text, err) : s->backend ? s->backend->sync(s->bstate, timeout_ms, err) : CF_OK;
    if (rc) {
        pthread_mutex_lock(&s->mu);
        s->dirty = true;
        if (s->path) /* the file is rewritten whole: any entry marks it */
            for (size_t i = 0; i < s->n; i++) s->e[i].dirty = true;
        for (size_t k = 0; k < nt; k++) s->e[taken[k]].dirty = true;
        pthread_mutex_unlock(&s->mu);
    }
    free(taken);
    cf_buf_free(&text);
    pthread_mutex_unlock(&s->flush_mu);
    return rc;
}

void cf_offset_store_destroy(cf_offset_store *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->e[i].canon);
        free(s->e[i].key);
        free(s->e[i].value);
    }
    free(s->e);
    free(s->idx);
    free(s->path);
    if (s->backend && s->backend->destroy) s->backend->destroy(s->bstate);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->flush_mu);
    free(s);
}
