/*
 * task.c - the framework's source task: a poller thread lists objects,
 * extracts records into a bounded queue, and poll() hands them out (see
 * include/cdcflow/source.h).
 *
 * Why a thread: listing and extraction (I/O, decompression, parsing) then
 * overlap with the worker's converting and producing, and the queue bound
 * keeps memory flat. The poller is the only thread that touches the native
 * source; poll() is the only one that touches the worker context's error
 * reporting (bad records travel through the queue as error items).
 *
 * Delivery: a record's source offset is the object's entry AFTER it, so a
 * committed offset resumes at the next record. The last record of an object
 * carries done=true (one record of lookahead tells us it is the last). An
 * object with no records carries no offset; it is opened again after a
 * restart and yields nothing (cheap, and documented).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/source.h"

#define COMP "source"

const char *const cf_source_formats[] = {"bytes", "csv", "jsonl", "envelope", "avro", NULL};
const char *const cf_source_compressions[] = {"none", "gzip", "snappy", "zstd", NULL};
const char *const cf_source_distributions[] = {"object_hash", "partition", NULL};

static const cf_cfg_def framework_defs[] = {
    CF_SOURCE_FRAMEWORK_DEFS
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

const cf_cfg_table cf_source_framework_table = {
    "source framework",
    "Source framework (every files/stream source)",
    "Settings shared by the sources built on the source framework. Names follow Aiven's cloud storage "
    "connectors where they exist.",
    framework_defs,
    NULL,
};

/* ---- a small set of seen objects: key -> (size, mtime, done) ---- */

typedef struct seen_entry {
    char *key;
    char *etag;
    int64_t size, mtime;
    bool done;
} seen_entry;

typedef struct seen_set {
    seen_entry *slots;
    size_t cap, len;
} seen_set;

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

static seen_entry *seen_find(seen_set *s, const char *key, bool create) {
    if (create && (s->len + 1) * 2 > s->cap) {
        seen_set n = {cf_xcalloc(s->cap ? s->cap * 2 : 64, sizeof(seen_entry)), s->cap ? s->cap * 2 : 64, 0};
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].key) {
                size_t j = fnv1a(s->slots[i].key) & (n.cap - 1);
                while (n.slots[j].key) j = (j + 1) & (n.cap - 1);
                n.slots[j] = s->slots[i];
                n.len++;
            }
        free(s->slots);
        *s = n;
    }
    if (!s->cap) return NULL;
    size_t j = fnv1a(key) & (s->cap - 1);
    while (s->slots[j].key) {
        if (strcmp(s->slots[j].key, key) == 0) return &s->slots[j];
        j = (j + 1) & (s->cap - 1);
    }
    if (!create) return NULL;
    s->slots[j].key = cf_xstrdup(key);
    s->len++;
    return &s->slots[j];
}

static void seen_free(seen_set *s) {
    for (size_t i = 0; i < s->cap; i++) free(s->slots[i].key), free(s->slots[i].etag);
    free(s->slots);
}

/* ---- the queue ---- */

typedef struct qitem {
    cf_record *rec; /* or NULL for an error item */
    cf_err problem;
    char *raw;
    size_t raw_len;
} qitem;

struct cf_source_task {
    void *self;
    const cf_native_ops *ops;
    cf_source_ctx *ctx;
    /* settings */
    char *topic;
    cf_input_format fmt;
    cf_compression comp;
    cf_name_template *tmpl;
    bool by_partition;
    bool bounded; /* one pass over the listing, then finished (see poller) */
    int64_t backoff_initial, backoff_max, full_interval;
    size_t max_poll; /* max.poll.records */
    double jitter;
    cf_props *xopts;
    int task_id, task_count;
    /* queue */
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    qitem *q;
    size_t qcap, qhead, qlen;
    bool poller_failed;
    cf_err poller_err;
    bool finished; /* bounded: everything listed was read; poll() says CF_ERR_EOF once the queue is empty */
    /* poller */
    pthread_t thread;
    bool thread_started;
    _Atomic bool stopping;
    seen_set seen;
    struct {
        cf_source_step_fn fn;
        void *ctx;
    } steps[16];
    size_t n_steps;
    _Atomic uint64_t st_started, st_done, st_changed, st_records, st_bad, st_skipped;
    unsigned rng;
    /* Of the object being read (poller thread only), one shared value each
     * for all its records instead of new ones per record: its name (the
     * records' key; its text tells which object they are of) and its
     * source partition. */
    cf_value *kval;
    cf_value *pm;
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Block while the queue is full; false if stopping. Takes `it`. */
static bool enqueue(cf_source_task *t, qitem *it) {
    pthread_mutex_lock(&t->mu);
    while (t->qlen == t->qcap && !atomic_load(&t->stopping)) pthread_cond_wait(&t->not_full, &t->mu);
    if (atomic_load(&t->stopping)) {
        pthread_mutex_unlock(&t->mu);
        cf_record_destroy(it->rec);
        free(it->raw);
        return false;
    }
    t->q[(t->qhead + t->qlen) % t->qcap] = *it;
    t->qlen++;
    pthread_cond_signal(&t->not_empty);
    pthread_mutex_unlock(&t->mu);
    return true;
}

static bool mine(cf_source_task *t, const char *key, const cf_name_match *m) {
    if (t->task_count <= 1) return true;
    if (t->by_partition) {
        if (!m->has_partition) {
            CF_WARN(COMP, "object \"%s\" has no {{partition}} in its name; distribution.type=partition skips it", key);
            return false;
        }
        return m->partition % t->task_count == t->task_id;
    }
    return (int)(fnv1a(key) % (uint64_t)t->task_count) == t->task_id;
}

/* The shared values of object `key` (t->kval, t->pm), made when it changes. */
static void object_values(cf_source_task *t, const char *key) {
    if (t->kval && strcmp(t->kval->u.s.ptr, key) == 0) return;
    cf_value_destroy(t->kval);
    cf_value_destroy(t->pm);
    t->kval = cf_value_string(key);
    t->pm = t->ops->partition_map(t->self, key);
}

static cf_record *make_record(cf_source_task *t, const cf_native_info *info, const cf_name_match *m, cf_schema *s,
                              cf_value *v, const cf_msg *env) {
    cf_record *r = cf_record_new();
    cf_record_set_value(r, s, v);
    if (env) {
        /* full-envelope restore: everything as it was written */
        cf_record_set_topic(r, t->topic ? t->topic : env->topic);
        r->partition = env->partition;
        r->timestamp = env->timestamp;
        r->ts_type = env->ts_type;
        cf_record_set_key(r, cf_schema_primitive(CF_BYTES, true), env->key ? cf_value_bytes(env->key, env->key_len) : NULL);
        for (size_t i = 0; i < env->n_headers; i++)
            cf_record_add_header(r, env->headers[i].key, cf_schema_primitive(CF_BYTES, true),
                                 env->headers[i].value ? cf_value_bytes(env->headers[i].value, env->headers[i].value_len) : NULL);
        return r;
    }
    cf_record_set_topic(r, t->topic ? t->topic : m->topic);
    r->partition = m->has_partition ? m->partition : CF_PARTITION_ANY;
    object_values(t, info->key);
    cf_record_set_key(r, cf_schema_primitive(CF_STRING, true), cf_value_ref(t->kval));
    return r;
}

static void emit_offset(cf_source_task *t, cf_record *r, const char *key, const cf_offset_entry *e) {
    object_values(t, key);
    cf_record_set_source(r, cf_value_ref(t->pm), cf_offset_entry_to_map(e));
}

/* One object being read: through the framework's extractor (byte-stream
 * objects) or the source's own records (open_records). */
typedef struct obj_reader {
    cf_extractor *x;
    void *rstate;
    const cf_native_records_ops *rops;
} obj_reader;

static cf_code obj_open(cf_source_task *t, const cf_native_info *info, const cf_offset_entry *e, obj_reader *o,
                        cf_err *err) {
    memset(o, 0, sizeof *o);
    if (t->ops->open_records) return t->ops->open_records(t->self, info, e, &o->rstate, &o->rops, err);
    cf_reader *r;
    cf_code rc = t->ops->open(t->self, info, t->comp, &r, err);
    if (rc) return rc;
    return cf_extractor_new(t->fmt, t->xopts, r, (uint64_t)e->position, (uint64_t)e->record_count,
                            (uint64_t)(e->line > 0 ? e->line : 0), &o->x, err);
}

static void obj_close(obj_reader *o) {
    if (o->x) cf_extractor_destroy(o->x);
    if (o->rops && o->rops->close) o->rops->close(o->rstate);
}

/* The next record of the object as a cf_record (without offsets). */
static cf_code obj_next(cf_source_task *t, obj_reader *o, const cf_native_info *info, const cf_name_match *m,
                        cf_record **out, cf_extract_pos *pos, cf_err *err) {
    *out = NULL;
    cf_schema *s = NULL, *ks = NULL;
    cf_value *v = NULL, *k = NULL;
    cf_code rc;
    if (o->rops) {
        memset(pos, 0, sizeof *pos);
        rc = o->rops->next(o->rstate, &ks, &k, &s, &v, pos, err);
        if (rc) return rc;
        cf_record *r = make_record(t, info, m, s, v, NULL);
        cf_record_set_key(r, ks, k);
        *out = r;
        return CF_OK;
    }
    rc = cf_extractor_next(o->x, &s, &v, pos, err);
    if (rc) return rc;
    *out = make_record(t, info, m, s, v, cf_extractor_envelope(o->x));
    return CF_OK;
}

/* The evolving record: the task's steps, then the source's last evolution.
 * Returns CF_OK with *keep false to drop it, or an error (a bad record). */
static cf_code evolve(cf_source_task *t, const cf_native_info *info, cf_record *r, bool *keep, cf_err *err) {
    *keep = true;
    for (size_t i = 0; i < t->n_steps && *keep; i++) {
        cf_code rc = t->steps[i].fn(t->steps[i].ctx, info, r, keep, err);
        if (rc) return rc;
    }
    if (*keep && t->ops->last_evolution) return t->ops->last_evolution(t->self, info, r, keep, err);
    return CF_OK;
}

/* The offset key is the source partition map: string keys and string, int
 * or long values only (what Kafka Connect's OffsetUtils lets a source store),
 * so every offset store holds it and equal keys stay equal after a round
 * trip. A source that breaks this has a bug: its object is not read (the
 * error goes through errors.tolerance) rather than its offsets being lost. */
static cf_code check_offset_key(const cf_source_task *t, const char *key, cf_err *err) {
    cf_value *pm = t->ops->partition_map(t->self, key);
    char what[200] = "";
    if (!pm || pm->type != CF_MAP) {
        snprintf(what, sizeof what, "it is %s, not a map", pm ? cf_type_name(pm->type) : "null");
    } else {
        for (size_t i = 0; i < pm->u.map.len && !what[0]; i++) {
            const cf_value *k = pm->u.map.keys[i], *v = pm->u.map.vals[i];
            if (!k || k->type != CF_STRING)
                snprintf(what, sizeof what, "a key is %s, not a string", k ? cf_type_name(k->type) : "null");
            else if (!v || (v->type != CF_STRING && v->type != CF_INT32 && v->type != CF_INT64))
                snprintf(what, sizeof what, "\"%s\" is %s", k->u.s.ptr, v ? cf_type_name(v->type) : "null");
        }
    }
    cf_value_destroy(pm);
    if (!what[0]) return CF_OK;
    cf_err_set(err, CF_ERR_INVALID, "%s source: the offset key (source partition map) of \"%s\" is not valid",
               t->ops->kind, key);
    cf_err_detail(err, "%s", what);
    cf_err_hint(err, "An offset key maps string keys to string, int or long values; fix the source's partition_map.");
    cf_err_where(err, "%s", key);
    return CF_ERR_INVALID;
}

/* Read one object from its stored entry to the end. False when stopping. */
static bool read_object(cf_source_task *t, const cf_native_info *info, const cf_name_match *m, cf_offset_entry *e) {
    cf_err err;
    obj_reader o;
    atomic_fetch_add(&t->st_started, 1);
    if (check_offset_key(t, info->key, &err)) {
        atomic_fetch_add(&t->st_bad, 1);
        qitem it = {NULL, err, NULL, 0};
        return enqueue(t, &it);
    }
    if (obj_open(t, info, e, &o, &err)) {
        obj_close(&o);
        qitem it = {NULL, err, NULL, 0};
        return enqueue(t, &it);
    }
    e->size = info->size;
    e->mtime_ms = info->mtime_ms;
    snprintf(e->etag, sizeof e->etag, "%s", info->etag ? info->etag : "");
    /* One record of lookahead: only when the next call says "end" do we know
     * a record is the object's last, which carries the done mark. */
    cf_record *pending = NULL;
    cf_offset_entry pend_e = *e;
    for (;;) {
        if (atomic_load(&t->stopping)) {
            cf_record_destroy(pending);
            obj_close(&o);
            return false;
        }
        cf_record *rec;
        cf_extract_pos pos;
        cf_code rc = obj_next(t, &o, info, m, &rec, &pos, &err);
        if (rc == CF_OK || rc == CF_ERR_INVALID) {
            if (pending) {
                emit_offset(t, pending, info->key, &pend_e);
                qitem it = {pending, {0}, NULL, 0};
                pending = NULL;
                if (!enqueue(t, &it)) { /* stopping: the record just read goes too */
                    if (rc == CF_OK) cf_record_destroy(rec);
                    break;
                }
            }
            e->record_count = (int64_t)pos.index + 1;
            e->position = (int64_t)pos.end;
            e->line = (int64_t)pos.end_line;
        }
        if (rc == CF_OK) {
            bool keep;
            rc = evolve(t, info, rec, &keep, &err);
            if (rc == CF_OK && keep) {
                atomic_fetch_add(&t->st_records, 1);
                pending = rec;
                pend_e = *e;
                continue;
            }
            cf_record_destroy(rec);
            if (rc == CF_OK) continue; /* filtered out: the next record carries the offset */
            rc = CF_ERR_INVALID;
        }
        if (rc == CF_ERR_INVALID) {
            atomic_fetch_add(&t->st_bad, 1);
            qitem it = {NULL, err, NULL, 0};
            if (!enqueue(t, &it)) break;
        } else if (rc == CF_ERR_EOF) {
            if (pending) {
                pend_e.done = true;
                emit_offset(t, pending, info->key, &pend_e);
                qitem it = {pending, {0}, NULL, 0};
                pending = NULL;
                if (!enqueue(t, &it)) break;
            }
            e->done = true;
            atomic_fetch_add(&t->st_done, 1);
            CF_INFO(COMP, "read %s \"%s\": %lld records", t->ops->kind, info->key, (long long)e->record_count);
            break;
        } else {
            /* I/O or corrupt stream: report; the object is not done and will be retried */
            cf_record_destroy(pending);
            pending = NULL;
            qitem it = {NULL, err, NULL, 0};
            enqueue(t, &it);
            break;
        }
    }
    cf_record_destroy(pending);
    obj_close(&o);
    return !atomic_load(&t->stopping);
}

/* Returns true when the native source saw a change. */
static bool sleep_backoff(cf_source_task *t, int64_t ms) {
    double j = t->jitter * (((double)rand_r(&t->rng) / RAND_MAX) * 2 - 1);
    int64_t wait = (int64_t)(ms * (1 + j));
    if (wait < 1) wait = 1;
    int64_t end = now_ms() + wait, left;
    /* In slices, so that a stop is seen within one slice: a whole backoff
     * (poll.backoff.max.ms, up to an hour) in one wait_for_change delayed a
     * clean stop by as much. */
    while (!atomic_load(&t->stopping) && (left = end - now_ms()) > 0) {
        int slice = left < 100 ? (int)left : 100;
        if (t->ops->wait_for_change) {
            if (t->ops->wait_for_change(t->self, slice)) return true;
        } else {
            struct timespec ts = {0, (long)(slice < 20 ? slice : 20) * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return false;
}

static void *poller(void *arg) {
    cf_source_task *t = arg;
    char *after = NULL;
    int64_t backoff = t->backoff_initial, last_full = now_ms();
    bool said_all_read = true; /* nothing read yet: nothing to announce */
    while (!atomic_load(&t->stopping)) {
        if (t->full_interval > 0 && now_ms() - last_full >= t->full_interval) {
            free(after);
            after = NULL;
            last_full = now_ms();
        }
        cf_native_info *items = NULL;
        size_t n = 0;
        cf_err err;
        if (t->ops->list(t->self, after, 1000, &items, &n, &err)) {
            CF_WARN(COMP, "listing %s failed: %s (%s); retrying in %lld ms", t->ops->kind, err.message, err.detail,
                    (long long)backoff);
            sleep_backoff(t, backoff);
            backoff = backoff * 2 > t->backoff_max ? t->backoff_max : backoff * 2;
            continue;
        }
        size_t worked = 0;
        for (size_t i = 0; i < n && !atomic_load(&t->stopping); i++) {
            cf_native_info *info = &items[i];
            free(after);
            after = cf_xstrdup(info->key);
            cf_name_match m;
            if (!cf_name_template_match(t->tmpl, info->key, &m)) continue;
            if (!t->topic && !m.has_topic && t->fmt != CF_FORMAT_ENVELOPE) continue;
            if (!mine(t, info->key, &m)) continue;
            cf_offset_entry e;
            seen_entry *se = seen_find(&t->seen, info->key, false);
            /* bounded: each object once (a damaged one was reported: trying
             * it again would make the pass endless) */
            if (se && t->bounded) continue;
            if (se) {
                memset(&e, 0, sizeof e);
                e.size = se->size, e.mtime_ms = se->mtime, e.done = se->done;
            } else {
                cf_value *pm = t->ops->partition_map(t->self, info->key);
                cf_value *stored = cf_source_ctx_offset(t->ctx, pm);
                cf_value_destroy(pm);
                if (cf_offset_entry_from_map(stored, &e, &err)) {
                    CF_WARN(COMP, "%s: %s; reading \"%s\" from the start", t->ops->kind, err.message, info->key);
                    memset(&e, 0, sizeof e);
                }
                cf_value_destroy(stored);
            }
            bool known = se || e.record_count > 0 || e.done;
            bool etag_changed = info->etag && (se ? (se->etag && strcmp(se->etag, info->etag) != 0)
                                                  : (e.etag[0] && strcmp(e.etag, info->etag) != 0));
            if (known && (e.size != info->size || e.mtime_ms != info->mtime_ms || etag_changed)) {
                unsigned long long changed = (unsigned long long)atomic_fetch_add(&t->st_changed, 1) + 1;
                char etags[300] = "";
                if (etag_changed)
                    snprintf(etags, sizeof etags, ", etag \"%s\" -> \"%s\"", se ? se->etag : e.etag, info->etag);
                CF_WARN(COMP,
                        "object \"%s\" changed (size %lld -> %lld, mtime %lld -> %lld%s): reading it again from the "
                        "start; its records already sent may be duplicated (%llu changed object%s read again by this task)",
                        info->key, (long long)e.size, (long long)info->size, (long long)e.mtime_ms,
                        (long long)info->mtime_ms, etags, changed, changed == 1 ? "" : "s");
                memset(&e, 0, sizeof e);
            } else if (e.done) {
                atomic_fetch_add(&t->st_skipped, 1);
                continue;
            }
            worked++;
            bool go = read_object(t, info, &m, &e);
            se = seen_find(&t->seen, info->key, true);
            se->size = info->size, se->mtime = info->mtime_ms, se->done = e.done;
            free(se->etag);
            se->etag = info->etag ? cf_xstrdup(info->etag) : NULL;
            if (!go) break;
        }
        cf_native_infos_free(items, n);
        if (worked > 0) said_all_read = false;
        if (t->bounded && worked == 0 && n < 1000 && !(t->ops->held_back && t->ops->held_back(t->self))) {
            CF_INFO(COMP, "all %s read (%llu objects done, %llu records): the bounded run of task %d ends",
                    t->ops->kind, (unsigned long long)atomic_load(&t->st_done),
                    (unsigned long long)atomic_load(&t->st_records), t->task_id);
            pthread_mutex_lock(&t->mu);
            t->finished = true;
            pthread_cond_broadcast(&t->not_empty);
            pthread_mutex_unlock(&t->mu);
            break;
        }
        if (worked == 0 && n < 1000 && !said_all_read) {
            /* a listing found nothing more to read */
            CF_INFO(COMP, "all %s read (%llu objects done); waiting for new ones", t->ops->kind,
                    (unsigned long long)atomic_load(&t->st_done));
            said_all_read = true;
        }
        if (worked == 0 && n < 1000) {
            if (sleep_backoff(t, backoff)) {
                free(after); /* something changed: list from the beginning */
                after = NULL;
                backoff = t->backoff_initial;
                continue;
            }
            if (!t->ops->wait_for_change) {
                /* no change notices: a new name may sort anywhere, so the
                 * next idle listing starts from the beginning (at the pace
                 * of the growing backoff; finished objects are skipped) */
                free(after);
                after = NULL;
            }
            backoff = backoff * 2 > t->backoff_max ? t->backoff_max : backoff * 2;
        } else {
            backoff = t->backoff_initial;
        }
    }
    free(after);
    return NULL;
}

cf_code cf_source_task_new(const cf_config *cfg, cf_source_ctx *ctx, void *self, const cf_native_ops *ops,
                           cf_source_task **out, cf_err *err) {
    cf_source_task *t = cf_xcalloc(1, sizeof *t);
    t->self = self;
    t->ops = ops;
    t->ctx = ctx;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->not_empty, NULL);
    pthread_cond_init(&t->not_full, NULL);
    const char *topic = cf_config_string(cfg, "topic");
    t->topic = topic && *topic ? cf_xstrdup(topic) : NULL;
    cf_code rc;
    if ((rc = cf_input_format_parse(cf_config_string(cfg, "input.format"), &t->fmt, err)) ||
        (rc = cf_compression_parse(cf_config_string(cfg, "file.compression.type"), &t->comp, err)) ||
        (rc = cf_name_template_new(cf_config_string(cfg, "file.name.template"), &t->tmpl, err)))
        goto fail;
    if (!t->topic && t->fmt != CF_FORMAT_ENVELOPE && !strstr(cf_config_string(cfg, "file.name.template"), "{{topic}}")) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "no topic: set \"topic\" or put {{topic}} in file.name.template");
        goto fail;
    }
    t->by_partition = strcasecmp(cf_config_string(cfg, "distribution.type"), "partition") == 0;
    t->bounded = cf_config_bool(cfg, "bounded");
    t->backoff_initial = cf_config_long(cfg, "poll.backoff.initial.ms");
    t->backoff_max = cf_config_long(cfg, "poll.backoff.max.ms");
    t->jitter = cf_config_double(cfg, "poll.backoff.jitter");
    t->full_interval = cf_config_long(cfg, "listing.full.interval.ms");
    t->qcap = (size_t)cf_config_int(cfg, "queue.max.records");
    t->max_poll = (size_t)cf_config_int(cfg, "max.poll.records");
    t->q = cf_xcalloc(t->qcap, sizeof(qitem));
    t->xopts = cf_props_new();
    char num[32];
    snprintf(num, sizeof num, "%d", cf_config_int(cfg, "extractor.buffer"));
    cf_props_set(t->xopts, "extractor.buffer", num);
    cf_props_set(t->xopts, "extractor.csv.headers.enabled", cf_config_bool(cfg, "extractor.csv.headers.enabled") ? "true" : "false");
    size_t nh = 0;
    const char *const *hs = cf_config_list(cfg, "extractor.csv.headers", &nh);
    if (nh) {
        cf_buf b = CF_BUF_INIT;
        for (size_t i = 0; i < nh; i++) cf_buf_printf(&b, "%s%s", i ? "," : "", hs[i]);
        cf_props_set(t->xopts, "extractor.csv.headers", b.data);
        cf_buf_free(&b);
        if (!cf_props_has(cf_config_props(cfg), "extractor.csv.headers.enabled"))
            cf_props_set(t->xopts, "extractor.csv.headers.enabled", "false");
    }
    t->task_id = cf_source_ctx_task_id(ctx);
    t->task_count = cf_source_ctx_task_count(ctx);
    t->rng = (unsigned)time(NULL) ^ (unsigned)t->task_id;
    /* the poller thread starts at the first poll, so that steps added right
     * after creation (cf_source_task_add_step) see every record */
    *out = t;
    return CF_OK;
fail:
    t->self = self;
    cf_source_task_stop(t);
    return rc;
}

void cf_source_task_add_step(cf_source_task *t, cf_source_step_fn fn, void *step_ctx) {
    if (t->n_steps < sizeof t->steps / sizeof t->steps[0]) {
        t->steps[t->n_steps].fn = fn;
        t->steps[t->n_steps].ctx = step_ctx;
        t->n_steps++;
    } else {
        CF_ERROR(COMP, "more than %zu pipeline steps; step ignored", sizeof t->steps / sizeof t->steps[0]);
    }
}

cf_code cf_source_task_poll(void *task, cf_record **out, size_t max, size_t *n, cf_err *err) {
    cf_source_task *t = task;
    *n = 0;
    if (!t->thread_started) {
        if (pthread_create(&t->thread, NULL, poller, t) != 0)
            return cf_err_set(err, CF_ERR_INTERNAL, "could not start the poller thread of the %s source", t->ops->kind);
        t->thread_started = true;
    }
    pthread_mutex_lock(&t->mu);
    if (t->qlen == 0 && !t->finished) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&t->not_empty, &t->mu, &ts);
    }
    cf_code rc = CF_OK;
    if (max > t->max_poll) max = t->max_poll;
    while (t->qlen > 0 && *n < max) {
        qitem it = t->q[t->qhead];
        t->qhead = (t->qhead + 1) % t->qcap;
        t->qlen--;
        pthread_cond_signal(&t->not_full);
        if (it.rec) {
            out[(*n)++] = it.rec;
            continue;
        }
        /* a bad record or a failed object: errors.tolerance decides */
        pthread_mutex_unlock(&t->mu);
        cf_log_err(CF_LOG_WARN, COMP, &it.problem);
        rc = cf_source_ctx_report(t->ctx, it.raw, it.raw_len, &it.problem, err);
        free(it.raw);
        pthread_mutex_lock(&t->mu);
        if (rc) break;
    }
    /* bounded and read whole: the end of this input (the task ends FINISHED) */
    if (!rc && *n == 0 && t->qlen == 0 && t->finished) rc = CF_ERR_EOF;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void cf_source_task_stop(void *task) {
    cf_source_task *t = task;
    if (!t) return;
    atomic_store(&t->stopping, true);
    pthread_mutex_lock(&t->mu);
    pthread_cond_broadcast(&t->not_full);
    pthread_cond_broadcast(&t->not_empty);
    pthread_mutex_unlock(&t->mu);
    if (t->thread_started) pthread_join(t->thread, NULL);
    for (size_t i = 0; i < t->qlen; i++) {
        qitem *it = &t->q[(t->qhead + i) % t->qcap];
        cf_record_destroy(it->rec);
        free(it->raw);
    }
    free(t->q);
    if (t->ops && t->ops->destroy) t->ops->destroy(t->self);
    cf_name_template_destroy(t->tmpl);
    cf_props_destroy(t->xopts);
    seen_free(&t->seen);
    cf_value_destroy(t->pm);
    cf_value_destroy(t->kval);
    free(t->topic);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->not_empty);
    pthread_cond_destroy(&t->not_full);
    free(t);
}

void cf_source_task_stats(cf_source_task *t, cf_source_stats *o) {
    o->objects_started = atomic_load(&t->st_started);
    o->objects_done = atomic_load(&t->st_done);
    o->objects_changed = atomic_load(&t->st_changed);
    o->records = atomic_load(&t->st_records);
    o->bad_records = atomic_load(&t->st_bad);
    o->skipped_done = atomic_load(&t->st_skipped);
}
