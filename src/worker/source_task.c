/*
 * source_task.c - the source task loop (Connect's WorkerSourceTask).
 *
 *   poll -> transforms -> converters -> send (Kafka / record file) or hand
 *   to the sinks (direct). Every poll batch gets a group (acks.c), and the
 *   offsets of acknowledged groups are stored in poll order
 *   (source_commit.c). When the transport's queue is full the task stops
 *   polling (back-pressure) and retries with exponential backoff, logging
 *   one line per step.
 *
 * THE STOP IS BOUNDED (task.shutdown.graceful.timeout.ms, the task's
 * deadline): backoffs end at the stop, acknowledgements of what was sent are
 * waited for until the deadline, the offsets store's flush too. Records sent
 * and not acknowledged by then are logged with their source partitions and
 * the stored offsets they are read again from ("stop not clean").
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

/* Free what a message on the stack holds: its headers (topic, key and
 * value are borrowed). Per record: no more than that. */
static void msg_release(cf_msg *m) {
    if (!m->headers) return;
    m->topic = m->key = m->value = NULL;
    cf_msg_clear(m);
}

/* Retry a send that found the transport's queue full: serve acknowledgements
 * (they make room) for up to *backoff ms. Room before that is flow control
 * (the producer outpaces the broker): no log line, no step. A wait that ran
 * its full time is a stall (broker slow or unreachable): one log line per
 * such backoff step, and the next wait doubles (up to 30 s; an
 * acknowledgement still ends it at once). */
static void src_backoff(srcstate *s, int *backoff, int *step) {
    task *t = s->t;
    int64_t t0 = cf_now_us();
    /* in slices: a stop ends the wait (a delivery ends a slice early) */
    for (int64_t left = *backoff; left > 0 && !atomic_load(&t->stop);) {
        int slice = left > 100 ? 100 : (int)left;
        int64_t s0 = cf_now_us();
        s->out->serve(s->out->state, slice);
        if (cf_now_us() - s0 < (int64_t)slice * 900) break; /* served a delivery */
        left = *backoff - (cf_now_us() - t0) / 1000;
    }
    cf_src_commit_acked(s, NULL);
    if (atomic_load(&t->stop)) return;
    if (cf_now_us() - t0 < (int64_t)*backoff * 900) return; /* room again */
    (*step)++;
    if (*backoff < 30000) *backoff *= 2;
    CF_WARN(COMP,
            "connector %s task %d: producer queue full (broker slow or unreachable); %zu records in flight, "
            "retrying in %d ms (step %d)",
            t->c->name, t->id, s->inflight, *backoff, *step);
}

/* Send the batched messages (in poll order, before any other message of the
 * task) and free their records, whatever the outcome. */
static cf_code src_send_batch(srcstate *s, cf_err *err) {
    if (!s->bn) return CF_OK;
    task *t = s->t;
    cf_ack *a = s->open;
    atomic_fetch_add(&a->pending, (int)s->bn); /* their acknowledgements */
    size_t done = 0, bytes = 0;
    int backoff = 100, step = 0;
    cf_code rc;
    for (;;) {
        size_t sent = 0;
        rc = s->out->send_batch(s->out->state, s->bmsg + done, s->bn - done, a, &sent, err);
        for (size_t i = done; i < done + sent; i++) bytes += s->bmsg[i].key_len + s->bmsg[i].value_len;
        done += sent;
        if (rc != CF_ERR_AGAIN || atomic_load(&t->stop)) break;
        src_backoff(s, &backoff, &step);
    }
    if (rc == CF_ERR_AGAIN) /* stopping: these records are polled again next run */
        for (size_t i = done; i < s->bn; i++) cf_ack_withdraw(a);
    for (size_t i = 0; i < s->bn; i++) cf_record_pool_put(t->sctx.pool, s->brec[i]);
    s->bn = 0;
    cf_arena_reset(s->barena);
    if (rc == CF_ERR_AGAIN) return CF_OK;
    if (rc) return rc;
    if (step) CF_INFO(COMP, "connector %s task %d: producer accepts records again", t->c->name, t->id);
    atomic_fetch_add(&t->m.bytes_out, bytes);
    return CF_OK;
}

/* The bytes of a batched message must outlive the next conversion: a
 * converter's own output (not the value's bytes) is copied to the arena. */
static char *batch_keep(srcstate *s, const cf_value *v, const char *data, size_t len) {
    if (!data || (v && (v->type == CF_STRING || v->type == CF_BYTES) && data == v->u.s.ptr)) return (char *)data;
    return cf_arena_strndup(s->barena, data, len);
}

/* A conversion that failed because the stop interrupted it (a Schema
 * Registry request abandoned, CF_ERR_AGAIN while stopping) is no bad record:
 * the record is not sent and its group is withdrawn, so that no offset at or
 * after it is stored and it is read again at the next start. True when pe
 * is such a failure (noted for the stop's log line). */
static bool src_abandoned(srcstate *s, cf_ack *a, const cf_err *pe) {
    if (pe->code != CF_ERR_AGAIN || !atomic_load(&s->t->stop)) return false;
    atomic_fetch_add(&a->pending, 1);
    cf_ack_withdraw(a);
    if (!s->abandoned++) s->abandon_err = *pe; /* its place names the topic and the registry */
    return true;
}

/* Convert and send one record (taken). */
static cf_code src_handle(srcstate *s, cf_record *rec, cf_err *err) {
    task *t = s->t;
    conn *c = t->c;
    cf_worker *w = c->w;
    /* offsets travel with the group even if a transform drops or rewrites
     * the record */
    cf_ack *a = s->open;
    cf_src_group_note(s, rec, !t->chain);

    cf_record *r = NULL;
    cf_err pe;
    cf_err_clear(&pe);
    if (cf_task_transform(t, rec, &r, &pe)) {
        return cf_task_report_error(t, CF_STAGE_TRANSFORMATION, "transforms", NULL, NULL, &pe, err);
    }
    if (!r) return CF_OK; /* filtered out: counts as done */
    if (w->mode == MODE_DIRECT && !w->has_file_out) {
        cf_task_note_topic(t, r->topic); /* Connect's active topics */
        cf_code rc = cf_direct_send(t, r, a, err);
        cf_record_pool_put(t->sctx.pool, r);
        return rc;
    }
    /* the message borrows the record's topic and the converters' bytes
     * (often the record's own: no copy); the transport copies what it keeps */
    cf_msg msg = {.topic = r->topic, .offset = -1}, *m = &msg;
    m->partition = r->partition;
    m->timestamp = r->timestamp;
    m->ts_type = r->ts_type;
    const char *data = NULL;
    size_t len = 0;
    if (cf_converter_from_connect_view(t->kconv, r->topic, r->key_schema, r->key, &data, &len, &pe)) {
        if (src_abandoned(s, a, &pe)) {
            msg_release(m), cf_record_pool_put(t->sctx.pool, r);
            return CF_OK;
        }
        cf_code rc = cf_task_report_error(t, CF_STAGE_KEY_CONVERTER, cf_conv_class(t->kconv), NULL, r, &pe, err);
        msg_release(m), cf_record_pool_put(t->sctx.pool, r);
        return rc;
    }
    m->key = (char *)data; /* not freed: msg_release */
    m->key_len = data ? len : 0;
    data = NULL;
    if (cf_converter_from_connect_view(t->vconv, r->topic, r->value_schema, r->value, &data, &len, &pe)) {
        if (src_abandoned(s, a, &pe)) {
            msg_release(m), cf_record_pool_put(t->sctx.pool, r);
            return CF_OK;
        }
        cf_code rc = cf_task_report_error(t, CF_STAGE_VALUE_CONVERTER, cf_conv_class(t->vconv), NULL, r, &pe, err);
        msg_release(m), cf_record_pool_put(t->sctx.pool, r);
        return rc;
    }
    m->value = (char *)data;
    m->value_len = data ? len : 0;
    cf_task_note_topic(t, r->topic); /* converted: it goes out (Connect's active topics) */
    if (s->bmsg && !r->n_headers && m->ts_type == CF_TS_NONE) {
        /* sent with the rest of the poll batch (src_send_batch) */
        m->key = batch_keep(s, r->key, m->key, m->key_len);
        m->value = batch_keep(s, r->value, m->value, m->value_len);
        s->bmsg[s->bn] = *m;
        s->brec[s->bn++] = r;
        return CF_OK;
    }
    cf_code rc = src_send_batch(s, err); /* what came before goes first */
    if (rc) {
        cf_record_pool_put(t->sctx.pool, r);
        return rc;
    }
    cf_headers_to_msg(r, m);
    size_t bytes = m->key_len + m->value_len;
    int backoff = 100, step = 0;
    atomic_fetch_add(&a->pending, 1); /* this message's acknowledgement */
    while ((rc = s->out->send(s->out->state, m, a, err)) == CF_ERR_AGAIN) {
        if (atomic_load(&t->stop)) break;
        src_backoff(s, &backoff, &step);
    }
    msg_release(m);
    cf_record_pool_put(t->sctx.pool, r);
    if (rc == CF_ERR_AGAIN) { /* stopping: the record is re-polled next run */
        cf_ack_withdraw(a);
        return CF_OK;
    }
    if (rc) {
        cf_ack_done(a, false);
        return rc;
    }
    if (step) CF_INFO(COMP, "connector %s task %d: producer accepts records again", c->name, t->id);
    atomic_fetch_add(&t->m.bytes_out, bytes);
    return CF_OK;
}

void *cf_source_task_main(void *arg) {
    task *t = arg;
    conn *c = t->c;
    cf_worker *w = c->w;
    cf_err err;
    cf_err_clear(&err);
    srcstate s = {.t = t};
    cf_msg_out out = {0};
    bool has_out = false, eof = false, failed = false;
    bool direct = w->mode == MODE_DIRECT && !w->has_file_out;

    if (cf_task_setup(t, !direct, &err)) {
        cf_task_fail(t, &err);
        goto out;
    }
    if (w->has_file_out) {
        s.out = &w->file_out;
    } else if (!direct) {
        char cid[300];
        snprintf(cid, sizeof cid, "%s-%s-%d", cf_config_string(w->cfg, "client.id"), c->name, t->id);
        if (cf_worker_kafka_out_new(w, cid, c->props, &out, &err)) {
            cf_task_fail(t, &err);
            goto out;
        }
        has_out = true;
        s.out = &out;
    }
    if (s.out && s.out->send_batch) {
        s.bmsg = cf_xcalloc(SOURCE_BATCH, sizeof *s.bmsg);
        s.brec = cf_xcalloc(SOURCE_BATCH, sizeof *s.brec);
        s.barena = cf_arena_new(0);
    }
    /* a poll batch's worth: every record of a batch comes back before the next poll */
    t->sctx.pool = cf_record_pool_new(SOURCE_BATCH);
    /* a Schema Registry request in a conversion is abandoned at the stop
     * (src_abandoned), as in sink tasks */
    cf_converter_set_interrupt(t->kconv, &t->stop);
    cf_converter_set_interrupt(t->vconv, &t->stop);
    if (direct) cf_direct_wait_sinks(t); /* the offsets an exactly-once sink stored come first */
    if (c->plugin->u.source.start(c->cfg, &t->sctx, &s.plugin_task, &err)) {
        cf_source_ctx_set_metrics(&t->sctx, NULL, NULL);
        cf_source_ctx_on_commit(&t->sctx, NULL, NULL);
        s.plugin_task = NULL;
        cf_task_fail(t, &err);
        goto out;
    }
    atomic_store(&t->state, atomic_load(&c->paused) ? CF_STATE_PAUSED : CF_STATE_RUNNING);
    CF_INFO(COMP, "connector %s task %d started (source)", c->name, t->id);
    s.last_flush_us = cf_now_us();
    cf_record *recs[SOURCE_BATCH];
    int idle_ms = 1, wait_step = 0, wait_log_s = 1, commit_log_s = 1;
    int64_t next_wait_log = 0, next_commit_log = 0, wait_start = 0;
    while (!atomic_load(&t->stop)) {
        if (atomic_load(&c->paused)) {
            atomic_store(&t->state, CF_STATE_PAUSED);
            if (s.out) s.out->serve(s.out->state, 100);
            else cf_sleep_ms(100);
            if (cf_src_commit_acked(&s, &err)) { failed = true; break; }
            continue;
        }
        atomic_store(&t->state, CF_STATE_RUNNING);
        if (s.inflight >= MAX_INFLIGHT) {
            /* back-pressure: wait for acknowledgements. Short waits are the
             * normal pace of a source faster than its transport: a line per
             * backoff step only once a wait lasts a second */
            int64_t now = cf_now_us();
            if (!wait_start) {
                wait_start = now;
                next_wait_log = now + 1000000;
            }
            if (now >= next_wait_log) {
                wait_step++;
                CF_WARN(COMP, "connector %s task %d: %zu records wait for acknowledgement since %lld ms (transport "
                              "slow or unreachable); polling paused, step %d, next report in %d s",
                        c->name, t->id, s.inflight, (long long)((now - wait_start) / 1000), wait_step, wait_log_s);
                next_wait_log = now + (int64_t)wait_log_s * 1000000;
                if (wait_log_s < 60) wait_log_s *= 2;
            }
            if (s.out) s.out->serve(s.out->state, 50);
            else cf_sleep_ms(5);
            if (cf_src_commit_acked(&s, &err)) { failed = true; break; }
            continue;
        }
        if (wait_start) {
            if (wait_step)
                CF_INFO(COMP, "connector %s task %d: acknowledgements flow again after %lld ms; polling resumed",
                        c->name, t->id, (long long)((cf_now_us() - wait_start) / 1000));
            wait_start = 0;
            wait_step = 0;
            wait_log_s = 1;
        }
        size_t n = 0;
        cf_code rc = c->plugin->u.source.poll(s.plugin_task, recs, SOURCE_BATCH, &n, &err);
        if (n) cf_src_group_open(&s);
        for (size_t i = 0; i < n; i++) {
            if (!failed && src_handle(&s, recs[i], &err)) failed = true;
            else if (failed) cf_record_pool_put(t->sctx.pool, recs[i]);
        }
        if (src_send_batch(&s, failed ? NULL : &err)) failed = true;
        atomic_fetch_add(&t->m.records_in, n);
        cf_src_group_close(&s);
        if (failed) break;
        if (rc == CF_ERR_EOF) {
            eof = true;
            break;
        }
        if (rc == CF_ERR_AGAIN) {
            CF_WARN(COMP, "connector %s task %d: poll: %s; retrying in %d ms", c->name, t->id, err.message,
                    idle_ms < 100 ? 100 : idle_ms);
            cf_sleep_ms(idle_ms < 100 ? 100 : idle_ms);
            cf_err_clear(&err);
            continue;
        }
        if (rc) {
            cf_err_where(&err, "connector %s task %d, poll", c->name, t->id);
            failed = true;
            break;
        }
        if (s.out) s.out->serve(s.out->state, 0);
        if (cf_src_commit_acked(&s, &err)) { failed = true; break; }
        if (n == 0) {
            if (s.out) s.out->serve(s.out->state, idle_ms);
            else cf_sleep_ms(idle_ms);
            if (idle_ms < 100) idle_ms *= 2;
        } else {
            idle_ms = 1;
        }
        if (cf_now_us() - s.last_flush_us >= w->flush_interval_ms * 1000) {
            cf_err fe;
            if (cf_src_flush_offsets(&s, &fe)) {
                /* retried at every interval; reported once per backoff step */
                s.last_flush_us = cf_now_us();
                if (cf_now_us() >= next_commit_log) {
                    CF_WARN(COMP, "connector %s task %d: %s: %s; retrying, next report in %d s", c->name, t->id,
                            fe.message, fe.detail, commit_log_s);
                    next_commit_log = cf_now_us() + (int64_t)commit_log_s * 1000000;
                    if (commit_log_s < 60) commit_log_s *= 2;
                }
            } else if (commit_log_s > 1) {
                CF_INFO(COMP, "connector %s task %d: offsets stored again", c->name, t->id);
                commit_log_s = 1;
                next_commit_log = 0;
            }
        }
    }
    /* Stop: wait (bounded) for what was sent, store what was acknowledged.
     * A bounded input that ended waits for all of it, unless a stop comes. */
    {
        bool stopping = !eof;
        if (stopping && !atomic_load(&t->deadline_us)) cf_task_request_stop(t, cf_stop_deadline(w));
        cf_err e2;
        for (;;) {
            if (!stopping && atomic_load(&t->stop)) stopping = true; /* asked to stop while draining */
            int64_t deadline = stopping ? atomic_load(&t->deadline_us) : INT64_MAX;
            if (!s.head || cf_now_us() >= deadline || failed || cf_src_head_withdrawn(&s)) break;
            if (s.out) s.out->flush(s.out->state, cf_task_wait_ms(t, 100), NULL);
            else cf_sleep_ms(5);
            if (cf_src_commit_acked(&s, &e2)) {
                err = e2;
                failed = true;
            }
        }
        if (s.head && !failed && !cf_src_head_withdrawn(&s)) {
            char text[1024];
            cf_src_pending_text(&s, text, sizeof text);
            cf_task_set_pending(t, text);
            cf_task_unclean(t, "%s; %s", text,
                            c->plugin->u.source.no_replay
                                ? "they are lost: this source cannot read its input again"
                                : "read again at the next start");
        }
        if (s.abandoned && !failed)
            cf_task_unclean(t, "%s%s%s (%s): %zu records not sent; their source offsets are not stored (the "
                               "offsets stop before them); %s",
                            s.abandon_err.message, s.abandon_err.detail[0] ? ": " : "", s.abandon_err.detail,
                            s.abandon_err.where, s.abandoned,
                            c->plugin->u.source.no_replay ? "they are lost: this source cannot read its input again"
                                                          : "read again at the next start");
        int64_t d = atomic_load(&t->deadline_us);
        if (cf_src_flush_offsets_until(&s, stopping ? d : 0, &e2)) {
            if (failed) cf_log_err(CF_LOG_ERROR, COMP, &e2);
            else if (stopping)
                cf_task_unclean(t, "source offsets not stored: %s%s%s; the records after the stored offsets are "
                                   "read again at the next start", e2.message, e2.detail[0] ? ": " : "", e2.detail);
            else {
                err = e2;
                failed = true;
            }
        }
    }
    cf_source_ctx_set_metrics(&t->sctx, NULL, NULL);
    cf_source_ctx_on_commit(&t->sctx, NULL, NULL);
    c->plugin->u.source.stop(s.plugin_task);
    if (failed) cf_task_fail(t, &err);
    else atomic_store(&t->state, cf_task_end_state(t, eof));
    CF_INFO(COMP, "connector %s task %d stopped (%s)", c->name, t->id, cf_state_name(atomic_load(&t->state)));
out:
    /* The output first: destroying (or, for the shared record file, flushing)
     * it completes or reports as undelivered every ack it still holds.
     * Waiting on those acks with the output no longer served would wait
     * forever (seen: a source task failing with --output). */
    if (has_out) out.destroy(out.state);
    else if (s.out) s.out->flush(s.out->state, 1000, NULL); /* the shared record file: complete its acks */
    if (direct && s.head) cf_direct_withdraw(t);
    while (s.head) {
        cf_ack *a = s.head;
        s.head = a->next;
        /* a direct sink may still hold it (put, to be flushed): wait until
         * nobody references it */
        while (atomic_load(&a->pending) > 0) cf_sleep_ms(1);
        cf_ack_free(a);
    }
    cf_src_spare_free(&s);
    free(s.bmsg);
    free(s.brec);
    cf_arena_destroy(s.barena);
    cf_record_pool_destroy(t->sctx.pool);
    t->sctx.pool = NULL;
    cf_task_set_pending(t, NULL);
    cf_task_teardown(t);
    return NULL;
}
