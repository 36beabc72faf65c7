/*
 * task.c - what every task has, source or sink: the context API the
 * connector plugins call (cf_source_ctx_*, cf_sink_ctx_*), the converters
 * and the transform chain set up around the plugin and torn down after
 * it, the record <-> message header copies, and the stop's clock: every
 * wait of a task's stop path is cut to its deadline (cf_task_wait_ms), and
 * what the stop could not commit is logged (cf_task_unclean).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
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

cf_value *cf_source_ctx_offset(cf_source_ctx *ctx, const cf_value *source_partition) {
    return cf_offset_store_get(ctx->t->c->w->offsets, ctx->t->c->name, source_partition);
}
const char *cf_source_ctx_connector_name(const cf_source_ctx *ctx) { return ctx->t->c->name; }
cf_record *cf_source_ctx_record_new(cf_source_ctx *ctx) { return cf_record_pool_get(ctx->pool); }
int cf_source_ctx_task_id(const cf_source_ctx *ctx) { return ctx->t->id; }
int cf_source_ctx_task_count(const cf_source_ctx *ctx) { return ctx->t->c->ntasks; }
bool cf_source_ctx_stopping(const cf_source_ctx *ctx) { return atomic_load(&ctx->t->stop); }
int cf_source_ctx_stop_remaining_ms(cf_source_ctx *ctx) {
    return atomic_load(&ctx->t->stop) ? cf_task_wait_ms(ctx->t, INT32_MAX) : -1;
}

void cf_source_ctx_on_commit(cf_source_ctx *ctx, void (*fn)(void *arg), void *arg) {
    ctx->t->cfn = fn;
    ctx->t->carg = fn ? arg : NULL;
}

void cf_source_ctx_set_metrics(cf_source_ctx *ctx, cf_source_metrics_fn fn, void *arg) {
    pthread_mutex_lock(&ctx->t->mu);
    ctx->t->mfn = fn;
    ctx->t->marg = fn ? arg : NULL;
    pthread_mutex_unlock(&ctx->t->mu);
}

void cf_sink_ctx_set_metrics(cf_sink_ctx *ctx, cf_source_metrics_fn fn, void *arg) {
    pthread_mutex_lock(&ctx->t->mu);
    ctx->t->mfn = fn;
    ctx->t->marg = fn ? arg : NULL;
    pthread_mutex_unlock(&ctx->t->mu);
}

cf_code cf_source_ctx_report(cf_source_ctx *ctx, const char *raw, size_t raw_len, const cf_err *problem,
                             cf_err *err) {
    task *t = ctx->t;
    cf_msg *m = NULL;
    if (raw) {
        m = cf_msg_new();
        cf_msg_set_value(m, raw, raw_len);
    }
    cf_code rc = cf_task_report_error(t, CF_STAGE_TASK_POLL, t->c->plugin->name, m, NULL, problem, err);
    cf_msg_destroy(m);
    return rc;
}

cf_code cf_sink_ctx_report(cf_sink_ctx *ctx, const cf_record *rec, const cf_err *problem, cf_err *err) {
    task *t = ctx->t;
    const cf_msg *raw = NULL;
    for (size_t i = 0; i < t->cur_n && !raw; i++)
        if (t->cur_recs[i] == rec) raw = t->cur_raws[i];
    return cf_task_report_error(t, CF_STAGE_TASK_PUT, t->c->plugin->name, raw, raw ? NULL : rec, problem, err);
}
const cf_sink_position *cf_sink_ctx_positions(const cf_sink_ctx *ctx) { return ctx->t->cur_pos; }
void cf_sink_stored_positions_free(cf_sink_stored_position *p, size_t n) {
    for (size_t i = 0; p && i < n; i++) free(p[i].stream), free(p[i].source_offset);
    free(p);
}
const char *cf_sink_ctx_connector_name(const cf_sink_ctx *ctx) { return ctx->t->c->name; }
int cf_sink_ctx_task_id(const cf_sink_ctx *ctx) { return ctx->t->id; }
bool cf_sink_ctx_stopping(const cf_sink_ctx *ctx) { return atomic_load(&ctx->t->stop); }
void cf_sink_ctx_flush_every(cf_sink_ctx *ctx, int64_t ms) { ctx->t->flush_every_ms = ms > 0 ? ms : 0; }
int cf_sink_ctx_stop_remaining_ms(cf_sink_ctx *ctx) {
    return atomic_load(&ctx->t->stop) ? cf_task_wait_ms(ctx->t, INT32_MAX) : -1;
}

/* ---------------- the stop's clock ---------------- */

void cf_task_request_stop(task *t, int64_t deadline_us) {
    int64_t cur = atomic_load(&t->deadline_us);
    while ((cur == 0 || deadline_us < cur) && !atomic_compare_exchange_weak(&t->deadline_us, &cur, deadline_us)) {
    }
    atomic_store(&t->stop, true);
    pthread_mutex_lock(&t->q.mu);
    pthread_cond_broadcast(&t->q.cv);
    pthread_mutex_unlock(&t->q.mu);
}

int64_t cf_stop_deadline(cf_worker *w) {
    int64_t d = atomic_load(&w->stop_deadline_us);
    return d ? d : cf_now_us() + w->shutdown_timeout_ms * 1000;
}

int cf_task_wait_ms(task *t, int ms) {
    int64_t d = atomic_load(&t->deadline_us);
    if (!d) return ms;
    int64_t left = (d - cf_now_us()) / 1000;
    if (left < CF_STOP_MIN_WAIT_MS) left = CF_STOP_MIN_WAIT_MS;
    return left < ms ? (int)left : ms;
}

bool cf_task_nap(task *t, int ms) {
    while (ms > 0 && !atomic_load(&t->stop)) {
        int step = ms < 50 ? ms : 50;
        cf_sleep_ms(step);
        ms -= step;
    }
    return !atomic_load(&t->stop);
}

void cf_task_set_pending(task *t, const char *text) {
    pthread_mutex_lock(&t->mu);
    snprintf(t->pending, sizeof t->pending, "%s", text ? text : "");
    pthread_mutex_unlock(&t->mu);
}

void cf_task_unclean(task *t, const char *fmt, ...) {
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&t->mu);
    t->unclean = true;
    pthread_mutex_unlock(&t->mu);
    CF_WARN(COMP, "connector %s task %d: stop not clean: %s", t->c->name, t->id, what);
}

cf_state cf_task_end_state(task *t, bool eof) {
    if (eof) return CF_STATE_FINISHED;
    pthread_mutex_lock(&t->mu);
    bool unclean = t->unclean;
    pthread_mutex_unlock(&t->mu);
    return unclean ? CF_STATE_UNASSIGNED : CF_STATE_STOPPED;
}

/* ---------------- converters, transforms ---------------- */

cf_code cf_task_setup(task *t, bool need_converters, cf_err *err) {
    conn *c = t->c;
    cf_worker *w = c->w;
    if (need_converters) {
        cf_converter *kc = NULL, *vc = NULL;
        if (cf_converter_new(c->key_conv, c->key_conv_props, true, &kc, err)) return err ? err->code : 1;
        if (cf_converter_new(c->val_conv, c->val_conv_props, false, &vc, err)) {
            cf_converter_destroy(kc);
            return err ? err->code : 1;
        }
        pthread_mutex_lock(&t->mu);
        t->kconv = kc;
        t->vconv = vc;
        t->sr_last_set[0] = t->sr_last_set[1] = false;
        pthread_mutex_unlock(&t->mu);
    }
    if (w->transforms && cf_props_get(c->props, "transforms") && *cf_props_get(c->props, "transforms")) {
        if (w->transforms->create(c->props, &t->chain, err)) return err ? err->code : 1;
    }
    if (c->dlq_topic && c->tolerate_all) {
        char cid[300];
        snprintf(cid, sizeof cid, "%s-%s-%d-dlq", cf_config_string(w->cfg, "client.id"), c->name, t->id);
        cf_worker_kafka_ensure_topic(w, "dead letter queue topic", c->dlq_topic, 1,
                                     (int)cf_config_int(c->cfg, "errors.deadletterqueue.topic.replication.factor"),
                                     c->props, &t->stop);
        if (cf_worker_kafka_out_new(w, cid, c->props, &t->dlq, err)) return err ? err->code : 1;
        t->has_dlq = true;
    }
    return CF_OK;
}

void cf_task_teardown(task *t) {
    pthread_mutex_lock(&t->mu);
    cf_converter *kc = t->kconv, *vc = t->vconv;
    t->sr_last_set[0] = cf_converter_sr_status(kc, &t->sr_last[0]);
    t->sr_last_set[1] = cf_converter_sr_status(vc, &t->sr_last[1]);
    t->kconv = t->vconv = NULL;
    pthread_mutex_unlock(&t->mu);
    cf_converter_destroy(kc);
    cf_converter_destroy(vc);
    if (t->chain && t->c->w->transforms) t->c->w->transforms->destroy(t->chain);
    t->chain = NULL;
    if (t->has_dlq) {
        t->dlq.flush(t->dlq.state, cf_task_wait_ms(t, 5000), NULL);
        t->dlq.destroy(t->dlq.state);
        t->has_dlq = false;
    }
}

/* The Schema Registry status of a task's key (which 0) or value (1)
 * converter: live while the task runs, else as it was at teardown. False
 * when that converter has no registry (or never existed). Any thread. */
bool cf_task_sr_status(task *t, int which, cf_sr_status *out) {
    pthread_mutex_lock(&t->mu);
    cf_converter *cv = which ? t->vconv : t->kconv;
    bool ok = cv ? cf_converter_sr_status(cv, out) : t->sr_last_set[which];
    if (!cv && ok) *out = t->sr_last[which];
    pthread_mutex_unlock(&t->mu);
    return ok;
}

const char *const cf_conv_roles[2] = {"key", "value"};

/* Apply the transform chain: rec taken; *out NULL = filtered. */
cf_code cf_task_transform(task *t, cf_record *rec, cf_record **out, cf_err *err) {
    if (!t->chain) {
        *out = rec;
        return CF_OK;
    }
    return t->c->w->transforms->apply(t->chain, rec, out, err);
}

/* Headers of a record as message bytes: strings and bytes as they are,
 * other values as JSON (what Connect's SimpleHeaderConverter writes for them). */
void cf_headers_to_msg(const cf_record *r, cf_msg *m) {
    for (size_t i = 0; i < r->n_headers; i++) {
        const cf_header *h = &r->headers[i];
        if (!h->value) {
            cf_msg_add_header(m, h->key, NULL, 0);
        } else if (h->value->type == CF_STRING || h->value->type == CF_BYTES) {
            cf_msg_add_header(m, h->key, h->value->u.s.ptr, h->value->u.s.len);
        } else {
            char *j = cf_worker_json_from_value(h->value);
            cf_msg_add_header(m, h->key, j, strlen(j));
            free(j);
        }
    }
}

void cf_headers_to_record(const cf_msg *m, cf_record *r) {
    for (size_t i = 0; i < m->n_headers; i++) {
        const cf_msg_header *h = &m->headers[i];
        cf_record_add_header(r, h->key, cf_schema_primitive(CF_STRING, true),
                             h->value ? cf_value_string_n(h->value, h->value_len) : NULL);
    }
}

const char *cf_conv_class(cf_converter *c) {
    const cf_converter_plugin *p = cf_converter_get_plugin(c);
    return p ? (p->aliases && p->aliases[0] ? p->aliases[0] : p->name) : "converter";
}

/* A successful commit that took us microseconds, in the task's metrics. */
void cf_task_count_commit(task *t, int64_t us) {
    atomic_fetch_add(&t->m.commits, 1);
    atomic_fetch_add(&t->m.commit_us_sum, (uint_fast64_t)us);
    atomic_store(&t->m.commit_us_last, (uint_fast64_t)us);
}

void cf_task_note_topic(task *t, const char *topic) {
    conn *c = t->c;
    if (!topic || !c->w->topic_tracking) return;
    if (t->topics_gen == atomic_load_explicit(&c->topics_gen, memory_order_acquire) &&
        strcmp(t->last_topic, topic) == 0)
        return;
    pthread_mutex_lock(&c->mu);
    unsigned gen = atomic_load(&c->topics_gen);
    bool have = false;
    for (size_t i = 0; i < c->n_active_topics && !have; i++) have = strcmp(c->active_topics[i], topic) == 0;
    if (!have) {
        if (c->n_active_topics == c->cap_active_topics) {
            c->cap_active_topics = c->cap_active_topics ? c->cap_active_topics * 2 : 4;
            c->active_topics = cf_xrealloc(c->active_topics, c->cap_active_topics * sizeof(char *));
        }
        c->active_topics[c->n_active_topics++] = cf_xstrdup(topic);
    }
    pthread_mutex_unlock(&c->mu);
    snprintf(t->last_topic, sizeof t->last_topic, "%s", topic);
    t->topics_gen = gen;
}
