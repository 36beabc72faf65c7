/*
 * direct.c - transport=direct: a source task hands its records to the
 * queues of the sink tasks that want their topic, in the same process and
 * without Kafka. A record's group is acknowledged when every sink that
 * took it flushed; a stopping source takes back what is still queued (it
 * is read again next run).
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

void cf_dq_init(dqueue *q) {
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
}

/* Close the queue and fail what is in it (the sink task ends). */
void cf_dq_fail_all(dqueue *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    while (q->len) {
        qitem it = q->items[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
        cf_record_destroy(it.rec);
        cf_ack_done(it.ack, false);
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void cf_dq_destroy(dqueue *q) {
    cf_dq_fail_all(q);
    free(q->items);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
}

/* Push into a sink task's queue; blocks while full (back-pressure). Returns
 * false if the sink task is stopped or the source is asked to stop. */
static bool dq_push(task *sink, task *src, cf_record *rec, cf_ack *ack) {
    dqueue *q = &sink->q;
    pthread_mutex_lock(&q->mu);
    while (q->len >= DIRECT_QUEUE_MAX && !q->closed) {
        int st = atomic_load(&sink->state);
        if (atomic_load(&sink->stop) || st == CF_STATE_FAILED || st == CF_STATE_FINISHED ||
            atomic_load(&src->stop)) {
            pthread_mutex_unlock(&q->mu);
            return false;
        }
        timed_wait(&q->cv, &q->mu, 100);
    }
    int st = atomic_load(&sink->state);
    if (q->closed || atomic_load(&sink->stop) || st == CF_STATE_FAILED || st == CF_STATE_FINISHED) {
        pthread_mutex_unlock(&q->mu);
        return false;
    }
    if (q->len == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 256;
        qitem *n = cf_xmalloc(ncap * sizeof *n);
        for (size_t i = 0; i < q->len; i++) n[i] = q->items[(q->head + i) % q->cap];
        free(q->items);
        q->items = n;
        q->head = 0;
        q->cap = ncap;
    }
    q->items[(q->head + q->len) % q->cap] = (qitem){rec, ack, src};
    q->len++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return true;
}

/* Take back what src pushed and the sink did not take yet: not delivered
 * (its offsets are not stored). */
static void dq_withdraw(dqueue *q, const task *src) {
    pthread_mutex_lock(&q->mu);
    size_t kept = 0, n = q->len;
    for (size_t i = 0; i < n; i++) {
        qitem it = q->items[(q->head + i) % q->cap];
        if (it.src == src) {
            cf_record_destroy(it.rec);
            cf_ack_withdraw(it.ack);
        } else {
            q->items[(q->head + kept++) % q->cap] = it;
        }
    }
    q->len = kept;
    if (kept != n) pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* A stopping source takes back what waits in direct sinks' queues: a sink
 * that does not take it (paused) would hold the source's stop forever. */
void cf_direct_withdraw(task *t) {
    size_t n;
    conn **cs = cf_conns_snapshot(t->c->w, &n);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; cs[i]->is_sink && k < cs[i]->ntasks; k++) dq_withdraw(&cs[i]->tasks[k]->q, t);
        cf_conn_unref(cs[i]);
    }
    free(cs);
}

size_t cf_dq_pop(dqueue *q, qitem *out, size_t max, int wait_ms) {
    pthread_mutex_lock(&q->mu);
    if (!q->len && wait_ms > 0) timed_wait(&q->cv, &q->mu, wait_ms);
    size_t n = 0;
    while (q->len && n < max) {
        out[n++] = q->items[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    if (n) pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return n;
}

size_t cf_dq_len(dqueue *q) {
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static bool sink_wants_topic(conn *c, const char *topic) {
    if (!topic) return false;
    for (size_t i = 0; i < c->n_topics; i++)
        if (strcmp(c->topics[i], topic) == 0) return true;
    return c->has_re && regexec(&c->topics_re, topic, 0, NULL, 0) == 0;
}

static uint32_t fnv1a(const char *s) {
    uint32_t h = 2166136261u;
    for (; s && *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* Hand one source record to every direct sink that subscribes to its topic.
 * `a` already counts one (the caller's guard).
 * A sink that is being reconfigured, restarted or deleted refuses the push
 * for a moment (its old tasks are stopping, the new ones not started yet):
 * the record then waits and goes to whatever subscribes to its topic by that
 * name afterwards, and only sinks that took it are not asked again. Only a
 * sink task that failed or finished while still registered fails the source
 * (the record cannot be delivered; its offset is not stored). */
cf_code cf_direct_send(task *t, cf_record *rec, cf_ack *a, cf_err *err) {
    cf_worker *w = t->c->w;
    conn *targets[64];
    char *done[64]; /* after a refused push: names of the sinks that took the record */
    size_t n_done = 0;
    bool warned = false;
    cf_code rc = CF_OK;
    for (;;) {
        size_t nt = 0;
        pthread_mutex_lock(&w->mu);
        bool updating = w->reconfiguring > 0; /* a sink may be missing for a moment */
        for (size_t i = 0; i < w->n_conns && nt < 64; i++) {
            conn *c = w->conns[i];
            if (!c->is_sink || c->ntasks == 0 || !sink_wants_topic(c, rec->topic)) continue;
            bool took = false;
            for (size_t j = 0; j < n_done && !took; j++) took = strcmp(done[j], c->name) == 0;
            if (took) continue;
            atomic_fetch_add(&c->refs, 1);
            targets[nt++] = c;
        }
        pthread_mutex_unlock(&w->mu);
        if (nt == 0 && n_done) break; /* every subscriber has it */
        if (nt == 0) {
            /* No sink for this topic. Never drop: while connectors may still
             * be added (REST, or the run not yet begun) wait; otherwise it is
             * a configuration error. */
            if (!w->want_rest && atomic_load(&w->sealed) && !updating) {
                cf_err_set(err, CF_ERR_CONFIG, "direct mode: no sink connector subscribes to topic \"%s\"",
                           rec->topic ? rec->topic : "");
                cf_err_detail(err, "connector %s produced a record for it", t->c->name);
                cf_err_hint(err, "Add the topic to a sink's \"topics\" (or \"topics.regex\"), or run with "
                                 "transport=kafka or --output FILE.");
                rc = CF_ERR_CONFIG;
                break;
            }
            if (atomic_load(&t->stop)) {
                atomic_store(&a->withdrawn, true); /* not delivered: the offset is not stored */
                break;
            }
            if (!warned)
                CF_WARN(COMP, "direct mode: no sink connector subscribes to topic \"%s\" yet; connector %s waits",
                        rec->topic ? rec->topic : "", t->c->name);
            warned = true;
            cf_sleep_ms(50);
            continue;
        }
        bool again = false;
        conn *took[64];
        size_t n_took = 0;
        for (size_t i = 0; i < nt; i++) {
            conn *c = targets[i];
            int ti = 0;
            if (c->ntasks > 1) {
                char *k = cf_value_debug_string(rec->key);
                ti = (int)(fnv1a(k) % (uint32_t)c->ntasks);
                free(k);
            }
            atomic_fetch_add(&a->pending, 1);
            cf_record *copy = cf_record_clone(rec);
            if (dq_push(c->tasks[ti], t, copy, a)) {
                took[n_took++] = c;
            } else {
                cf_record_destroy(copy);
                int st = atomic_load(&c->tasks[ti]->state);
                bool registered = false;
                pthread_mutex_lock(&w->mu);
                for (size_t j = 0; j < w->n_conns && !registered; j++) registered = w->conns[j] == c;
                pthread_mutex_unlock(&w->mu);
                if (atomic_load(&t->stop)) {
                    cf_ack_withdraw(a); /* not delivered: the offset is not stored */
                } else if (registered && (st == CF_STATE_FAILED || st == CF_STATE_FINISHED)) {
                    cf_ack_done(a, false);
                    if (!rc)
                        rc = cf_err_set(err, CF_ERR_STATE, "direct mode: sink connector %s task %d is not running",
                                        c->name, ti);
                } else {
                    cf_ack_done(a, true); /* not pushed, not failed: the guard keeps `a` open */
                    again = true;
                }
            }
        }
        bool retry = !rc && !atomic_load(&t->stop) && again;
        /* names copied only for a retry (rare): a conn may be gone by then */
        for (size_t i = 0; retry && i < n_took && n_done < 64; i++) done[n_done++] = cf_xstrdup(took[i]->name);
        for (size_t i = 0; i < nt; i++) cf_conn_unref(targets[i]);
        if (!retry) break;
        cf_sleep_ms(20);
    }
    for (size_t i = 0; i < n_done; i++) free(done[i]);
    return rc;
}

/* A direct source reads its stored offsets only once every sink task there
 * is has read its sink's positions: an exactly-once sink keeps the sources'
 * offsets of what it applied, newer than the offsets store's, and hands them
 * to the store at its start (sink_task.c). A sink task that failed or ended
 * has nothing more to give. */
void cf_direct_wait_sinks(task *t) {
    for (bool logged = false; !atomic_load(&t->stop);) {
        size_t n;
        conn **cs = cf_conns_snapshot(t->c->w, &n);
        bool ready = true;
        for (size_t i = 0; i < n; i++) {
            for (int k = 0; cs[i]->is_sink && k < cs[i]->ntasks && ready; k++) {
                task *x = cs[i]->tasks[k];
                int st = atomic_load(&x->state);
                ready = atomic_load(&x->sink_ready) || st == CF_STATE_FAILED || st == CF_STATE_FINISHED;
            }
            cf_conn_unref(cs[i]);
        }
        free(cs);
        if (ready) return;
        if (!logged) CF_DEBUG(COMP, "connector %s task %d waits for the sinks to read their positions", t->c->name, t->id);
        logged = true;
        cf_sleep_ms(5);
    }
}
