/*
 * source_commit.c - storing a source task's offsets. Groups (acks.c) are
 * queued in poll order; the task thread walks the queue from its head and
 * puts the offsets of every fully acknowledged group into the offset
 * store, so an offset is never stored before a record polled earlier was
 * acknowledged. The store is flushed every offset.flush.interval.ms and at
 * stop (cf_src_flush_offsets).
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/log.h"
#include "worker_state.h"

/* Open the group of a poll batch (queued at once: its guard count keeps it
 * pending until cf_src_group_close). */
void cf_src_group_open(srcstate *s) {
    cf_ack *g = s->spare;
    if (g) {
        s->spare = g->next;
        atomic_store(&g->pending, 1);
        atomic_store(&g->failed, false);
        atomic_store(&g->withdrawn, false);
        g->next = NULL;
    } else {
        g = cf_ack_new();
    }
    if (s->tail) s->tail->next = g;
    else s->head = g;
    s->tail = g;
    s->open = g;
}

void cf_src_group_close(srcstate *s) {
    if (!s->open) return;
    cf_ack_done(s->open, true); /* the guard */
    s->open = NULL;
}

static void src_group_release(srcstate *s, cf_ack *g) {
    cf_ack_clear(g);
    g->next = s->spare;
    s->spare = g;
}

void cf_src_spare_free(srcstate *s) {
    while (s->spare) {
        cf_ack *a = s->spare;
        s->spare = a->next;
        cf_ack_free(a);
    }
}

/* Same source partition for the offset store? Only an exact match counts
 * (maps compare as maps, as the store's canonical key does; floats by their
 * bits): a false "different" merely costs one more put, a false "same"
 * would lose an offset, so anything unusual is "different". */
static bool same_partition(const cf_value *a, const cf_value *b) {
    if (a == b) return true;
    if (!a || !b || a->type != b->type) return false;
    switch (a->type) {
    case CF_INT8: case CF_INT16: case CF_INT32: case CF_INT64: return a->u.i == b->u.i;
    case CF_BOOLEAN: return a->u.b == b->u.b;
    case CF_FLOAT32: case CF_FLOAT64: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
    case CF_STRING: case CF_BYTES:
        return a->u.s.len == b->u.s.len && memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len) == 0;
    case CF_MAP:
        if (a->u.map.len != b->u.map.len) return false;
        for (size_t i = 0; i < a->u.map.len; i++) {
            const cf_value *k = a->u.map.keys[i];
            if (!k || k->type != CF_STRING) return false;
            size_t hits = 0, j_hit = 0, own = 0;
            for (size_t j = 0; j < b->u.map.len; j++)
                if (same_partition(k, b->u.map.keys[j])) hits++, j_hit = j;
            for (size_t j = 0; j < a->u.map.len && hits == 1; j++) /* a key twice in a: "different" */
                if (same_partition(k, a->u.map.keys[j])) own++;
            if (hits != 1 || own != 1 || !same_partition(a->u.map.vals[i], b->u.map.vals[j_hit])) return false;
        }
        return true;
    case CF_ARRAY:
        if (a->u.arr.len != b->u.arr.len) return false;
        for (size_t i = 0; i < a->u.arr.len; i++)
            if (!same_partition(a->u.arr.items[i], b->u.arr.items[i])) return false;
        return true;
    default: return false;
    }
}

#define PUT_SLOTS 8

/* Store the offsets of the acknowledged groups at the head of the queue, in
 * poll order, up to the first one not yet acknowledged.
 *
 * The store keeps only the latest offset of each source partition, and
 * putting one costs a few JSON serialisations, so of a run of acknowledged
 * groups only the last offset per partition is put (the store ends in the
 * same state as if every one had been put, and nothing is flushed in
 * between). commit_record is called after the offsets were put. */
/* The oldest group is complete and has a record the stop withdrew: no
 * offset after it can be stored any more. */
bool cf_src_head_withdrawn(srcstate *s) {
    cf_ack *h = s->head;
    return h && h != s->open && atomic_load(&h->pending) == 0 && atomic_load(&h->withdrawn);
}

cf_code cf_src_commit_acked(srcstate *s, cf_err *err) {
    task *t = s->t;
    conn *c = t->c;
    /* 1. detach the acknowledged prefix */
    cf_ack *first = s->head, *last = NULL, *a = s->head;
    size_t n = 0;
    while (a && a != s->open && atomic_load(&a->pending) == 0 && !atomic_load(&a->failed) &&
           !atomic_load(&a->withdrawn)) {
        last = a;
        n += a->n_records;
        a = a->next;
    }
    bool undelivered = a && a != s->open && atomic_load(&a->pending) == 0 && atomic_load(&a->failed);
    if (last) {
        s->head = a;
        if (!a) s->tail = NULL;
        last->next = NULL;
        s->inflight -= n;
        /* 2. the last offset of each source partition */
        struct {
            const cf_value *part, *off;
        } slot[PUT_SLOTS];
        size_t ns = 0;
        for (cf_ack *x = first; x; x = x->next)
            for (size_t k = 0; k < x->n_offs; k++) {
                const cf_value *part = x->offs[k].part;
                size_t i = 0;
                while (i < ns && !same_partition(slot[i].part, part)) i++;
                if (i == ns && ns == PUT_SLOTS) { /* many partitions: put what we have, in order */
                    for (size_t j = 0; j < ns; j++)
                        cf_offset_store_put(c->w->offsets, c->name, slot[j].part, slot[j].off);
                    ns = i = 0;
                }
                if (i == ns) ns++;
                slot[i].part = part; /* the latest key form, as a put of each would leave it */
                slot[i].off = x->offs[k].off;
            }
        for (size_t j = 0; j < ns; j++) cf_offset_store_put(c->w->offsets, c->name, slot[j].part, slot[j].off);
        /* 3. tell the plugin, recycle */
        void (*commit_record)(void *, const cf_record *) = c->plugin->u.source.commit_record;
        while (first) {
            cf_ack *x = first;
            first = x->next;
            if (commit_record)
                for (size_t k = 0; k < x->n_recs; k++) commit_record(s->plugin_task, x->recs[k]);
            src_group_release(s, x);
        }
        atomic_fetch_add(&t->m.records_out, n);
    }
    atomic_store(&t->m.lag, (uint_fast64_t)s->inflight);
    if (undelivered)
        return cf_err_set(err, CF_ERR_TRANSPORT,
                          "a record of connector %s task %d was not delivered; offsets stop before it", c->name, t->id);
    return CF_OK;
}

/* Note a record's source partition and offset in the open group: the
 * offset replaces the one of the same partition (the last one counts).
 * move: take the record's values (it is freed after conversion and nothing
 * reads them); else copies (a transform chain takes the record). */
void cf_src_group_note(srcstate *s, cf_record *rec, bool move) {
    cf_ack *g = s->open;
    g->n_records++;
    s->inflight++;
    if (s->t->c->plugin->u.source.commit_record) {
        if (g->n_recs == g->cap_recs) {
            g->cap_recs = g->cap_recs ? g->cap_recs * 2 : 64;
            g->recs = cf_xrealloc(g->recs, g->cap_recs * sizeof *g->recs);
        }
        cf_record *r = cf_record_new();
        cf_record_set_source(r, cf_value_clone(rec->source_partition), cf_value_clone(rec->source_offset));
        cf_record_set_topic(r, rec->topic);
        g->recs[g->n_recs++] = r;
    }
    cf_value *part = rec->source_partition, *off = rec->source_offset;
    if (!part && !off) return;
    cf_ack_off *e = NULL;
    /* runs of one partition are the rule; look back a few entries only (a
     * partition seen again later gets a second entry, put after the first;
     * updating an earlier entry is safe: partitions are independent) */
    for (size_t k = g->n_offs; k > 0 && k + 8 > g->n_offs; k--)
        if (same_partition(g->offs[k - 1].part, part)) {
            e = &g->offs[k - 1];
            break;
        }
    if (!e) {
        if (g->n_offs == g->cap_offs) {
            g->cap_offs = g->cap_offs ? g->cap_offs * 2 : 4;
            g->offs = cf_xrealloc(g->offs, g->cap_offs * sizeof *g->offs);
        }
        e = &g->offs[g->n_offs++];
        e->part = move ? part : cf_value_clone(part);
        if (move) rec->source_partition = NULL;
        e->off = NULL;
    }
    cf_value_destroy(e->off);
    e->off = move ? off : cf_value_clone(off);
    if (move) rec->source_offset = NULL;
}

cf_code cf_src_flush_offsets(srcstate *s, cf_err *err) { return cf_src_flush_offsets_until(s, 0, err); }

cf_code cf_src_flush_offsets_until(srcstate *s, int64_t deadline_us, cf_err *err) {
    task *t = s->t;
    int64_t t0 = cf_now_us();
    cf_code rc = cf_offset_store_flush_until(t->c->w->offsets, deadline_us, err);
    int64_t us = cf_now_us() - t0;
    if (rc) {
        atomic_fetch_add(&t->m.commit_failures, 1);
        return rc;
    }
    cf_task_count_commit(t, us);
    s->last_flush_us = cf_now_us();
    if (t->cfn) t->cfn(t->carg); /* cf_source_ctx_on_commit */
    return CF_OK;
}

/* What a stop leaves not stored, for its log line: the records in flight and,
 * per source partition they belong to (a few named), the offset stored (read
 * again from there at the next start) and the latest one not stored. */
void cf_src_pending_text(srcstate *s, char *out, size_t size) {
    task *t = s->t;
    enum { SHOWN = 4 };
    const cf_value *part[SHOWN], *last[SHOWN];
    size_t np = 0, more = 0;
    for (cf_ack *g = s->head; g; g = g->next)
        for (size_t k = 0; k < g->n_offs; k++) {
            size_t i = 0;
            while (i < np && !same_partition(part[i], g->offs[k].part)) i++;
            if (i < np) last[i] = g->offs[k].off;
            else if (np < SHOWN) part[np] = g->offs[k].part, last[np++] = g->offs[k].off;
            else more++;
        }
    cf_buf b = CF_BUF_INIT;
    cf_buf_printf(&b, "%zu records sent and not acknowledged; their source offsets are not stored", s->inflight);
    for (size_t i = 0; i < np && !t->c->plugin->u.source.no_replay; i++) {
        char *pj = cf_worker_json_from_value(part[i]);
        char *lj = cf_worker_json_from_value(last[i]);
        cf_value *stored = cf_offset_store_get(t->c->w->offsets, t->c->name, part[i]);
        char *sj = stored ? cf_worker_json_from_value(stored) : NULL;
        cf_buf_printf(&b, "%s partition %s: stays at offset %s (not stored: up to %s)", i ? ";" : ":", pj,
                      sj ? sj : "none (read from its start)", lj);
        free(pj), free(lj), free(sj);
        cf_value_destroy(stored);
    }
    if (more) cf_buf_printf(&b, "; and %zu more", more);
    snprintf(out, size, "%s", b.data ? b.data : "");
    cf_buf_free(&b);
}
