/*
 * sink_task.c - the sink task loop (Connect's WorkerSinkTask).
 *
 *   read (Kafka consumer / record file / direct queue) -> converters ->
 *   transforms -> put. Every offset.flush.interval.ms, at the end of a
 *   bounded input, before a rebalance takes partitions away and at stop:
 *   flush, and only when it returned CF_OK commit the consumer positions (or
 *   acknowledge the direct records, which lets the sources store offsets).
 *   A sink with its own flush schedule (cf_sink_ctx_flush_every) and
 *   flush_begin writes in the background on that schedule: the positions
 *   read so far are kept aside, reading and putting go on, and they are
 *   committed once flush_wait says the write ended (Connect's preCommit).
 *
 * THE STOP IS BOUNDED (task.shutdown.graceful.timeout.ms, the task's
 * deadline): retries of put back off in slices that end at the stop, a
 * Schema Registry request is abandoned (the converters' interrupt), the
 * commit's answer and the consumer's close are waited for until the
 * deadline. What was read and could not be committed is logged with its
 * partitions and offsets ("stop not clean") and read again at the next
 * start; the task then ends UNASSIGNED, not FAILED (nothing is wrong with
 * the records), and the run's exit code says the stop was not clean.
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

typedef struct sinkstate {
    task *t;
    void *plugin_task;
    cf_msg_in *in;
    cf_tp_pos *pos;
    int64_t *first; /* per pos: the first offset read since the last commit (-1: none) */
    size_t npos, cappos;
    bool uncommitted;
    bool published;   /* t->pending holds the positions as they are */
    /* The stop interrupted work (a registry request, a put being retried):
     * no_commit when positions were advanced past records not put. */
    bool abandoned, no_commit;
    cf_err abandon_err;
    cf_ack **acks; /* direct: acknowledged after the next flush */
    size_t nacks, capacks;
    int64_t last_commit_us;
    int64_t first_put_us; /* the first put since the last flush (0: none) */
    /* a write begun with flush_begin, not yet known to have ended: the
     * positions read before it, committed once it has */
    bool flight;
    bool begin_later; /* the last flush_begin found the sink's own write running (CF_ERR_AGAIN) */
    bool unconfirmed; /* all is committed, by a commit not waited for: its answer decides */
    int64_t unconfirmed_us; /* when that commit was sent */
    uint64_t ticket;
    cf_tp_pos *fpos;
    size_t nfpos;
    bool failed;
    cf_err err;
    /* a record file's positions are its own, not its topics' (another file
     * with the same topics is another log): "<path>#<topic>", one per topic */
    char *file_prefix; /* "<absolute path>#", NULL unless --input */
    char **file_streams;
    size_t n_file_streams;
} sinkstate;

/* The stream a record file's message is positioned in (lives as long as s). */
static const char *file_stream(sinkstate *s, const char *topic) {
    size_t pl = strlen(s->file_prefix);
    topic = topic ? topic : "";
    for (size_t i = 0; i < s->n_file_streams; i++)
        if (strcmp(s->file_streams[i] + pl, topic) == 0) return s->file_streams[i];
    s->file_streams = cf_xrealloc(s->file_streams, (s->n_file_streams + 1) * sizeof *s->file_streams);
    char *f = cf_xmalloc(pl + strlen(topic) + 1);
    sprintf(f, "%s%s", s->file_prefix, topic);
    return s->file_streams[s->n_file_streams++] = f;
}

static void pos_update(sinkstate *s, const char *topic, int32_t part, int64_t offset) {
    s->uncommitted = true;
    s->published = false;
    for (size_t i = 0; i < s->npos; i++)
        if (s->pos[i].partition == part && strcmp(s->pos[i].topic, topic) == 0) {
            s->pos[i].next_offset = offset + 1;
            if (s->first[i] < 0) s->first[i] = offset;
            return;
        }
    if (s->npos == s->cappos) {
        s->cappos = s->cappos ? s->cappos * 2 : 8;
        s->pos = cf_xrealloc(s->pos, s->cappos * sizeof *s->pos);
        s->first = cf_xrealloc(s->first, s->cappos * sizeof *s->first);
    }
    s->first[s->npos] = offset;
    s->pos[s->npos++] = (cf_tp_pos){cf_xstrdup(topic), part, offset + 1};
}

/* What was read and not committed: "t/0 offsets 10-99 (90 records), ...". */
static void pending_text(const sinkstate *s, char *out, size_t size) {
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < s->npos && used + 1 < size; i++) {
        if (s->first[i] < 0 || s->first[i] >= s->pos[i].next_offset) continue;
        int w = snprintf(out + used, size - used, "%s%s/%d offsets %lld-%lld (%lld records)", used ? ", " : "",
                         s->pos[i].topic, (int)s->pos[i].partition, (long long)s->first[i],
                         (long long)s->pos[i].next_offset - 1, (long long)(s->pos[i].next_offset - s->first[i]));
        if (w < 0) break;
        used += (size_t)w < size - used ? (size_t)w : size - used - 1;
    }
    if (!out[0] && s->nacks) snprintf(out, size, "%zu records of direct sources", s->nacks);
}

/* Keep t->pending current (read by cf_worker_log_uncommitted when a stop
 * does not end in time): once per batch, and only after a change. */
static void publish(sinkstate *s) {
    if (s->published) return;
    char text[1024];
    pending_text(s, text, sizeof text);
    cf_task_set_pending(s->t, text);
    s->published = true;
}

static void positions_committed(sinkstate *s) {
    for (size_t i = 0; i < s->npos; i++) s->first[i] = -1;
    s->published = false;
}

static void flight_drop(sinkstate *s) {
    for (size_t i = 0; i < s->nfpos; i++) free(s->fpos[i].topic);
    free(s->fpos);
    s->fpos = NULL, s->nfpos = 0;
    s->flight = false;
}

/* Commit positions p[0..n) (what they cover is written). false: not
 * committed, logged (at_stop: as an unclean stop); committed next time.
 * nowait: sent without waiting for the answer (a background write's: the
 * task reads on; a failure is logged when the answer comes, and the next
 * commit covers the positions). */
static bool commit_positions(sinkstate *s, const cf_tp_pos *p, size_t n, bool at_stop, bool nowait) {
    task *t = s->t;
    cf_err ce;
    int wait = nowait ? 0 : cf_task_wait_ms(t, (int)t->c->w->flush_timeout_ms);
    if (!s->in->commit(s->in->state, p, n, wait, &ce)) return true;
    /* The data is flushed; only the positions are not stored. As Connect,
     * log it and commit again next time (a restart in between reads some
     * records twice, never loses one). */
    atomic_fetch_add(&t->m.commit_failures, 1);
    if (at_stop) {
        char text[1024];
        pending_text(s, text, sizeof text);
        cf_task_unclean(t, "%s: %s; flushed but not committed: %s; read again at the next start", ce.message,
                        ce.detail, text);
    } else {
        CF_WARN(COMP, "connector %s task %d: %s: %s; retried at the next commit", t->c->name, t->id, ce.message,
                ce.detail);
    }
    s->last_commit_us = cf_now_us();
    return false;
}

/* The background write's end: commit what it covers (wait: until it
 * ended). Its error fails the task. */
static cf_code flight_check(sinkstate *s, bool wait, cf_err *err) {
    if (!s->flight) return CF_OK;
    task *t = s->t;
    bool done = false;
    cf_code rc = t->c->plugin->u.sink.flush_wait(s->plugin_task, s->ticket, wait, &done, err);
    if (rc || !done) return rc;
    int64_t t0 = cf_now_us();
    if (s->nfpos && commit_positions(s, s->fpos, s->nfpos, false, true)) {
        /* what was read after the write began is still to commit; when
         * nothing was, all is committed once that commit is answered */
        bool all = s->nfpos == s->npos;
        for (size_t i = 0; i < s->npos; i++)
            for (size_t j = 0; j < s->nfpos; j++)
                if (s->pos[i].partition == s->fpos[j].partition && strcmp(s->pos[i].topic, s->fpos[j].topic) == 0) {
                    s->first[i] = s->pos[i].next_offset > s->fpos[j].next_offset ? s->fpos[j].next_offset : -1;
                    if (s->first[i] >= 0) all = false;
                    break;
                }
        s->published = false;
        if (all && !s->nacks) s->uncommitted = false, s->unconfirmed = true, s->unconfirmed_us = cf_now_us();
        cf_task_count_commit(t, cf_now_us() - t0);
        s->last_commit_us = cf_now_us();
    }
    flight_drop(s);
    return CF_OK;
}

/* Begin a background write of what was put, the last one's end first (one
 * at a time: that is the back-pressure). */
static cf_code flight_begin(sinkstate *s, cf_err *err) {
    cf_code rc = flight_check(s, true, err);
    if (rc) return rc;
    cf_tp_pos *p = cf_xmalloc((s->npos ? s->npos : 1) * sizeof *p);
    for (size_t i = 0; i < s->npos; i++) p[i] = (cf_tp_pos){cf_xstrdup(s->pos[i].topic), s->pos[i].partition, s->pos[i].next_offset};
    s->fpos = p, s->nfpos = s->npos;
    s->flight = true;
    rc = s->t->c->plugin->u.sink.flush_begin(s->plugin_task, &s->ticket, err);
    if (rc == CF_ERR_AGAIN) {
        /* the sink's own write (its buffer's bounds) still runs: read on,
         * still due, and begin this one once that one ended */
        flight_drop(s);
        cf_err_clear(err);
        s->begin_later = true;
        return CF_OK;
    }
    s->begin_later = false;
    if (rc) flight_drop(s);
    s->first_put_us = 0; /* the plugin's interval starts again */
    return rc;
}

/* flush, then commit positions / acknowledge direct records. at_stop: the
 * task stops: what cannot be committed is reported as an unclean stop, not
 * a failure, and a commit without an answer is not retried. */
static cf_code sink_commit(sinkstate *s, bool at_stop, cf_err *err) {
    task *t = s->t;
    if (!s->uncommitted && !s->nacks && !s->flight &&
        (!s->unconfirmed || !s->in || !s->in->committed || s->in->committed(s->in->state)))
        return CF_OK; /* nothing read since the last commit, and that one was made */
    if (at_stop && s->no_commit) {
        char text[1024];
        pending_text(s, text, sizeof text);
        cf_task_unclean(t, "%s%s%s; not committed: %s; read again at the next start", s->abandon_err.message,
                        s->abandon_err.detail[0] ? ": " : "", s->abandon_err.detail, text[0] ? text : "nothing read");
        for (size_t i = 0; i < s->nacks; i++) cf_ack_done(s->acks[i], false);
        s->nacks = 0;
        return CF_OK;
    }
    int64_t t0 = cf_now_us();
    cf_code rc = t->c->plugin->u.sink.flush(s->plugin_task, err);
    flight_drop(s); /* the flush wrote what a background write had begun with, or failed with it */
    if (rc && at_stop) {
        char text[1024];
        pending_text(s, text, sizeof text);
        cf_task_unclean(t, "the flush failed: %s%s%s; not committed: %s; read again at the next start",
                        err ? err->message : "", err && err->detail[0] ? ": " : "", err ? err->detail : "",
                        text[0] ? text : "nothing");
        atomic_fetch_add(&t->m.commit_failures, 1);
        for (size_t i = 0; i < s->nacks; i++) cf_ack_done(s->acks[i], false);
        s->nacks = 0;
        return CF_OK;
    }
    if (!rc) s->first_put_us = 0; /* written: the plugin's own interval starts again */
    if (!rc && s->in && s->npos) {
        if (!commit_positions(s, s->pos, s->npos, at_stop, false)) return CF_OK;
        positions_committed(s);
        s->unconfirmed = false;
    }
    int64_t us = cf_now_us() - t0;
    if (rc) {
        atomic_fetch_add(&t->m.commit_failures, 1);
        for (size_t i = 0; i < s->nacks; i++) cf_ack_done(s->acks[i], false);
        s->nacks = 0;
        return rc;
    }
    for (size_t i = 0; i < s->nacks; i++) cf_ack_done(s->acks[i], true);
    s->nacks = 0;
    s->uncommitted = false;
    s->first_put_us = 0;
    cf_task_count_commit(t, us);
    s->last_commit_us = cf_now_us();
    return CF_OK;
}

static void on_revoke(void *arg, const cf_tp_pos *revoked, size_t n) {
    sinkstate *s = arg;
    if (s->failed) return;
    cf_err e;
    if (sink_commit(s, false, &e)) {
        s->failed = true;
        s->err = e;
        return;
    }
    /* committed: the revoked partitions' positions are their new owner's now */
    size_t j = 0;
    for (size_t i = 0; i < s->npos; i++) {
        bool gone = false;
        for (size_t k = 0; k < n && !gone; k++)
            gone = s->pos[i].partition == revoked[k].partition && strcmp(s->pos[i].topic, revoked[k].topic) == 0;
        if (gone) {
            free(s->pos[i].topic);
        } else {
            s->first[j] = s->first[i];
            s->pos[j++] = s->pos[i];
        }
    }
    s->npos = j;
    s->published = false;
}

/* put with retries of CF_ERR_AGAIN (Connect's RetriableException) */
static cf_code sink_put(sinkstate *s, cf_record **recs, size_t n, cf_err *err) {
    task *t = s->t;
    int backoff = 100;
    for (;;) {
        cf_code rc = t->c->plugin->u.sink.put(s->plugin_task, recs, n, err);
        if (rc != CF_ERR_AGAIN) return rc;
        if (!atomic_load(&t->stop)) {
            CF_WARN(COMP, "connector %s task %d: put: %s; retrying in %d ms", t->c->name, t->id,
                    err ? err->message : "", backoff);
            cf_task_nap(t, backoff);
            if (backoff < 30000) backoff *= 2;
        }
        if (atomic_load(&t->stop)) {
            /* the batch's positions are advanced already: no commit */
            s->abandoned = s->no_commit = true;
            if (err) s->abandon_err = *err;
            cf_err_set(&s->abandon_err, CF_ERR_AGAIN, "a put was being retried (%s) when the stop came",
                       err ? err->message : "the target asked to");
            return CF_OK;
        }
    }
}

static void free_recs(cf_record **r, size_t n) {
    for (size_t i = 0; i < n; i++) cf_record_destroy(r[i]);
}

/* ---- exactly-once sinks: resume where the sink's own positions say ---- */

static cf_code stored_positions(sinkstate *s, cf_sink_stored_position **p, size_t *n, cf_err *err) {
    *p = NULL;
    *n = 0;
    const cf_sink_plugin *pl = &s->t->c->plugin->u.sink;
    return pl->positions ? pl->positions(s->plugin_task, p, n, err) : CF_OK;
}

/* Kafka: partitions just assigned start at the stored next offsets. */
static void on_assign(void *arg, cf_tp_pos *assigned, size_t n) {
    sinkstate *s = arg;
    cf_sink_stored_position *p;
    size_t np;
    cf_err e;
    if (s->failed) return;
    if (stored_positions(s, &p, &np, &e)) {
        s->failed = true, s->err = e;
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < np; k++)
            if (!p[k].source_offset && p[k].partition == assigned[i].partition &&
                strcmp(p[k].stream, assigned[i].topic) == 0) {
                assigned[i].next_offset = p[k].next_offset;
                CF_INFO(COMP, "connector %s task %d: %s-%d resumes at offset %lld, where its sink stands",
                        s->t->c->name, s->t->id, p[k].stream, (int)p[k].partition, (long long)p[k].next_offset);
            }
    cf_sink_stored_positions_free(p, np);
}

/* Record file and direct mode, at start: skip what the file's messages the
 * sink holds; direct, give the sources their offsets from the sink (newer
 * than or equal to the offsets store's: those are stored after the sink's
 * flush) and go on with the synthetic offsets after the stored ones. */
static cf_code resume_at_start(sinkstate *s, cf_msg_in *in, bool direct, cf_err *err) {
    cf_sink_stored_position *p;
    size_t np;
    cf_code rc = stored_positions(s, &p, &np, err);
    if (rc) return rc;
    task *t = s->t;
    cf_tp_pos *tp = cf_xcalloc(np + 1, sizeof *tp);
    size_t ntp = 0, nsrc = 0;
    for (size_t k = 0; k < np && !rc; k++) {
        if (p[k].source_offset) {
            if (direct)
                rc = cf_offset_store_load_record(t->c->w->offsets, p[k].stream, strlen(p[k].stream), p[k].source_offset,
                                                 strlen(p[k].source_offset), err);
            nsrc++;
        } else if (direct) {
            if (p[k].next_offset > t->direct_offset) t->direct_offset = p[k].next_offset;
            ntp++;
        } else if (s->file_prefix && strncmp(p[k].stream, s->file_prefix, strlen(s->file_prefix)) == 0) {
            /* this file's: skip what the sink holds (other files' are theirs) */
            tp[ntp++] = (cf_tp_pos){p[k].stream + strlen(s->file_prefix), p[k].partition, p[k].next_offset};
        }
    }
    if (!rc && in && !direct && ntp) cf_worker_file_in_resume(in, tp, ntp);
    if (!rc && np)
        CF_INFO(COMP, "connector %s task %d resumes where its sink stands: %zu topic partition%s, %zu source "
                "partition%s", t->c->name, t->id, ntp, ntp == 1 ? "" : "s", nsrc, nsrc == 1 ? "" : "s");
    free(tp);
    cf_sink_stored_positions_free(p, np);
    return rc;
}

/* The task's consumer of its topics, in the group connect-<connector>. */
static cf_code kafka_in_new(task *t, cf_msg_in *in, cf_err *err) {
    conn *c = t->c;
    char group[512];
    snprintf(group, sizeof group, "connect-%s", c->name);
    return cf_worker_kafka_in_new(c->w, group, (const char *const *)c->topics, c->n_topics,
                                  cf_config_string(c->cfg, "topics.regex"), c->props, in, err);
}

static void in_bind(sinkstate *s, cf_msg_in *in) {
    s->in = in;
    in->on_revoke = on_revoke;
    in->revoke_arg = s;
    in->deadline = &s->t->deadline_us;
    cf_worker_kafka_in_bind(in);
}

/* A FENCED consumer (its static member, group.instance.id, replaced: seen
 * after a broker restart with no other member using the id, issue 16's
 * kill schedules) cannot read any more. What was put is written (its
 * positions are in the sink; their commit fails and is made by the next
 * one), and a new consumer joins the group, as a restarted worker would;
 * the partitions resume where the sink stands. A fence more than
 * FENCE_MAX times in FENCE_WINDOW_US is another member really using the
 * id: the task fails with poll's error. Returns false when it did not
 * join again (s->err says why, the task fails). */
#define FENCE_MAX 3
#define FENCE_WINDOW_US (600LL * 1000000)
static bool rejoin(sinkstate *s, cf_msg_in *in, int64_t fences[FENCE_MAX]) {
    task *t = s->t;
    int64_t now = cf_now_us();
    int recent = 0;
    for (int i = 0; i < FENCE_MAX; i++)
        if (fences[i] && now - fences[i] < FENCE_WINDOW_US) recent++;
    if (recent >= FENCE_MAX) {
        cf_err_detail(&s->err, "fenced %d times within %lld minutes: another consumer uses this group.instance.id",
                      FENCE_MAX + 1, FENCE_WINDOW_US / 60000000);
        return false;
    }
    for (int i = 0; i < FENCE_MAX; i++)
        if (!fences[i] || now - fences[i] >= FENCE_WINDOW_US) {
            fences[i] = now;
            break;
        }
    CF_WARN(COMP, "connector %s task %d: %s (%s); what was put is written and a new consumer joins the group (fence %d "
                  "of at most %d within %lld minutes)",
            t->c->name, t->id, s->err.message, s->err.where, recent + 1, FENCE_MAX, FENCE_WINDOW_US / 60000000);
    cf_err pe;
    cf_err_clear(&pe);
    cf_err_clear(&s->err);
    if (sink_commit(s, false, &pe)) { /* the write failed: the task fails with it */
        s->err = pe;
        return false;
    }
    in->on_revoke = NULL; /* nothing to flush in the close: it was just written */
    in->destroy(in->state);
    memset(in, 0, sizeof *in);
    if (kafka_in_new(t, in, &s->err)) return false;
    in_bind(s, in);
    in->on_assign = on_assign;
    return true;
}

void *cf_sink_task_main(void *arg) {
    task *t = arg;
    conn *c = t->c;
    cf_worker *w = c->w;
    sinkstate s = {.t = t};
    cf_err_clear(&s.err);
    cf_msg_in in = {0};
    bool has_in = false, eof = false, in_pause = false;
    int64_t lag_parts_us = 0; /* when t->lag_parts was last refreshed */
    int64_t fences[FENCE_MAX] = {0}; /* when the consumer was fenced (rejoin) */
    bool direct = w->mode == MODE_DIRECT && !w->input_file;
    bool background = false; /* the plugin's schedule writes in the background (flight_begin) */
    cf_msg *msgs[SINK_BATCH], *raws[SINK_BATCH], *stash[SINK_BATCH];
    size_t nmsgs = 0, nstash = 0;
    cf_record *recs[SINK_BATCH];
    qitem items[SINK_BATCH];
    cf_sink_position pos[SINK_BATCH];               /* where the input stands after recs[i] */
    cf_value *spart[SINK_BATCH], *soff[SINK_BATCH]; /* direct: the source positions pos[] points to */
    size_t nsrc = 0;

    if (cf_task_setup(t, !direct, &s.err)) {
        s.failed = true;
        goto out;
    }
    if (w->input_file) {
        if (t->id == 0) {
            if (cf_worker_file_in_new(w->input_file, &in, &s.err)) {
                s.failed = true;
                goto out;
            }
            has_in = true;
        } else {
            eof = true; /* one reader for a file */
        }
    } else if (!direct) {
        if (kafka_in_new(t, &in, &s.err)) {
            s.failed = true;
            goto out;
        }
        has_in = true;
    }
    if (has_in) {
        in_bind(&s, &in);
    }
    /* a Schema Registry request in a conversion is abandoned at the stop */
    cf_converter_set_interrupt(t->kconv, &t->stop);
    cf_converter_set_interrupt(t->vconv, &t->stop);
    t->flush_every_ms = 0;
    if (c->plugin->u.sink.start(c->cfg, &t->kctx, &s.plugin_task, &s.err)) {
        s.failed = true;
        goto out;
    }
    if (w->input_file) {
        char *abs = strcmp(w->input_file, "-") ? realpath(w->input_file, NULL) : NULL;
        s.file_prefix = cf_xmalloc(strlen(abs ? abs : w->input_file) + 2);
        sprintf(s.file_prefix, "%s#", abs ? abs : w->input_file);
        free(abs);
    }
    background = !direct && has_in && c->plugin->u.sink.flush_begin && c->plugin->u.sink.flush_wait;
    if (has_in && !w->input_file) in.on_assign = on_assign;
    else if ((direct || w->input_file) && resume_at_start(&s, has_in ? &in : NULL, direct, &s.err)) s.failed = true;
    atomic_store(&t->sink_ready, true); /* direct sources may read their offsets now */
    atomic_store(&t->state, CF_STATE_RUNNING);
    CF_INFO(COMP, "connector %s task %d started (sink%s)", c->name, t->id,
            direct ? ", direct" : w->input_file ? ", record file" : "");
    s.last_commit_us = cf_now_us();
    while (!eof && !s.failed) {
        bool stopping = atomic_load(&t->stop);
        bool want_pause = atomic_load(&c->paused) && !stopping;
        if (want_pause != in_pause && has_in && in.pause) {
            /* stay in the group while paused: stop fetching, keep polling */
            in.pause(in.state, want_pause);
            in_pause = want_pause;
        }
        if (want_pause) {
            atomic_store(&t->state, CF_STATE_PAUSED);
            if (has_in && in.pause) {
                /* records fetched before the pause took effect are kept for after it */
                size_t n = 0;
                if (nstash < SINK_BATCH) in.poll(in.state, stash + nstash, SINK_BATCH - nstash, &n, 100, &s.err);
                else cf_sleep_ms(100);
                nstash += n;
            } else {
                cf_sleep_ms(100);
            }
            /* what was put before the pause is still flushed and committed
             * on the interval (as a paused Connect sink task does): its
             * sources wait for that; a background write's at its end */
            if (s.flight && flight_check(&s, false, &s.err)) {
                s.failed = true;
                break;
            }
            if (cf_now_us() - s.last_commit_us >= w->flush_interval_ms * 1000 && sink_commit(&s, false, &s.err)) {
                s.failed = true;
                break;
            }
            continue;
        }
        atomic_store(&t->state, CF_STATE_RUNNING);
        size_t nrec = 0;
        if (direct) {
            size_t n = cf_dq_pop(&t->q, items, SINK_BATCH, stopping ? 0 : 100);
            if (n == 0 && (stopping || (atomic_load(&w->draining) && !w->want_rest))) {
                if (cf_dq_len(&t->q) == 0) {
                    eof = !stopping;
                    break;
                }
            }
            for (size_t i = 0; i < n; i++) {
                cf_record *r = items[i].rec;
                if (r->partition < 0) r->partition = 0;
                r->offset = t->direct_offset++;
                cf_task_note_topic(t, r->topic); /* Connect's active topics: what it consumed from */
                /* the source's position goes with the record to the sink (pos), not in it */
                cf_sink_position ps = {NULL, r->partition, r->offset + 1, items[i].src->c->name, r->source_partition,
                                       r->source_offset};
                spart[nsrc] = r->source_partition, soff[nsrc++] = r->source_offset;
                r->source_partition = r->source_offset = NULL;
                atomic_fetch_add(&t->m.records_in, 1);
                if (s.nacks == s.capacks) {
                    s.capacks = s.capacks ? s.capacks * 2 : 1024;
                    s.acks = cf_xrealloc(s.acks, s.capacks * sizeof *s.acks);
                }
                s.acks[s.nacks++] = items[i].ack;
                cf_record *o = NULL;
                cf_err pe;
                if (cf_task_transform(t, r, &o, &pe)) {
                    if (cf_task_report_error(t, CF_STAGE_TRANSFORMATION, "transforms", NULL, NULL, &pe, &s.err)) {
                        s.failed = true;
                    }
                    continue;
                }
                if (o) {
                    ps.topic = o->topic;
                    pos[nrec] = ps;
                    recs[nrec++] = o;
                }
            }
            if (s.failed) {
                free_recs(recs, nrec);
                break;
            }
        } else {
            if (stopping) break;
            size_t n = 0;
            cf_code rc = CF_OK;
            if (nstash) {
                memcpy(msgs, stash, nstash * sizeof *msgs);
                n = nstash;
                nstash = 0;
            } else {
                /* no longer than until the plugin's own flush is due */
                int wait = 100;
                if (t->flush_every_ms && s.first_put_us) {
                    int64_t left = (s.first_put_us + t->flush_every_ms * 1000 - cf_now_us()) / 1000;
                    wait = left < 0 ? 0 : left < wait ? (int)left : wait;
                    if (wait == 0 && (s.flight || s.begin_later)) wait = 5; /* due, but the last write still runs */
                }
                /* a write's end is seen soon: its offsets are committed then */
                if (s.flight && wait > 10) wait = 10;
                rc = in.poll(in.state, msgs, SINK_BATCH, &n, wait, &s.err);
            }
            if (s.failed) { /* a commit in a rebalance failed */
                for (size_t i = 0; i < n; i++) cf_msg_destroy(msgs[i]);
                break;
            }
            if (rc == CF_ERR_STATE && in.fenced) {
                if (!rejoin(&s, &in, fences)) {
                    has_in = s.in->state != NULL;
                    s.failed = true;
                    break;
                }
                continue;
            }
            if (rc == CF_ERR_EOF) eof = true;
            else if (rc == CF_ERR_CORRUPT) {
                /* a damaged input unit (bad record-file line): errors.tolerance decides */
                cf_err pe = s.err;
                cf_err_clear(&s.err);
                if (cf_task_report_error(t, CF_STAGE_KAFKA_CONSUME, "recordfile", NULL, NULL, &pe, &s.err)) s.failed = true;
            } else if (rc == CF_ERR_AGAIN || rc == CF_ERR_TRANSPORT) {
                CF_WARN(COMP, "connector %s task %d: reading: %s; retrying", c->name, t->id, s.err.message);
                cf_sleep_ms(200);
            } else if (rc) {
                s.failed = true;
            }
            for (size_t i = 0; i < n && !s.failed; i++) {
                cf_msg *m = msgs[i];
                atomic_fetch_add(&t->m.records_in, 1);
                cf_task_note_topic(t, m->topic); /* Connect's active topics: what it consumed from */
                atomic_fetch_add(&t->m.bytes_in, m->key_len + m->value_len);
                cf_schema *ks = NULL, *vs = NULL;
                cf_value *kv = NULL, *vv = NULL;
                cf_err pe;
                cf_err_clear(&pe);
                int which = 0;
                cf_code crc = cf_converter_to_connect(t->kconv, m->topic, m->key, m->key_len, &ks, &kv, &pe);
                if (!crc) {
                    which = 1;
                    crc = cf_converter_to_connect(t->vconv, m->topic, m->value, m->value_len, &vs, &vv, &pe);
                    if (crc) cf_schema_unref(ks), cf_value_destroy(kv);
                }
                if (crc == CF_ERR_AGAIN && atomic_load(&t->stop)) {
                    /* interrupted by the stop (a registry request): not a bad
                     * record. This and the rest of the batch are not put and
                     * their positions stay: they are read again. */
                    s.abandoned = true;
                    s.abandon_err = pe;
                    cf_err_where(&s.abandon_err, "%s/%d@%lld", m->topic, (int)m->partition, (long long)m->offset);
                    break;
                }
                if (crc) {
                    cf_converter *cv = which ? t->vconv : t->kconv;
                    if (cf_task_report_error(t, which ? CF_STAGE_VALUE_CONVERTER : CF_STAGE_KEY_CONVERTER,
                                             cf_conv_class(cv), m, NULL, &pe, &s.err))
                        s.failed = true;
                } else {
                    cf_record *r = cf_record_new();
                    cf_record_set_topic(r, m->topic);
                    r->partition = m->partition;
                    r->offset = m->offset;
                    r->timestamp = m->timestamp;
                    r->ts_type = m->ts_type;
                    cf_record_set_key(r, ks, kv);
                    cf_record_set_value(r, vs, vv);
                    cf_headers_to_record(m, r);
                    cf_record *o = NULL;
                    if (cf_task_transform(t, r, &o, &pe)) {
                        if (cf_task_report_error(t, CF_STAGE_TRANSFORMATION, "transforms", m, NULL, &pe, &s.err))
                            s.failed = true;
                    } else if (o) {
                        pos[nrec] = (cf_sink_position){s.file_prefix ? file_stream(&s, m->topic) : m->topic,
                                                       m->partition, m->offset + 1, NULL, NULL, NULL};
                        raws[nrec] = m;
                        recs[nrec++] = o;
                    }
                }
                if (!s.failed && m->topic && m->offset >= 0) pos_update(&s, m->topic, m->partition, m->offset);
            }
            nmsgs = n;
            if (s.failed) {
                for (size_t i = 0; i < n; i++) cf_msg_destroy(msgs[i]);
                free_recs(recs, nrec);
                break;
            }
        }
        if (nrec) {
            t->cur_recs = recs;
            t->cur_raws = raws;
            t->cur_n = direct ? 0 : nrec;
            t->cur_pos = pos;
            cf_code rc = sink_put(&s, recs, nrec, &s.err);
            t->cur_n = 0;
            t->cur_pos = NULL;
            free_recs(recs, nrec);
            for (size_t i = 0; i < nmsgs; i++) cf_msg_destroy(msgs[i]);
            nmsgs = 0;
            if (rc) {
                if (!s.err.where[0]) cf_err_where(&s.err, "connector %s task %d, put", c->name, t->id);
                s.failed = true;
                break;
            }
            atomic_fetch_add(&t->m.records_out, nrec);
            s.uncommitted = true; /* records put since the last flush */
            if (!s.first_put_us) s.first_put_us = cf_now_us();
        }
        for (size_t i = 0; i < nmsgs; i++) cf_msg_destroy(msgs[i]);
        nmsgs = 0;
        for (size_t i = 0; i < nsrc; i++) cf_value_destroy(spart[i]), cf_value_destroy(soff[i]);
        nsrc = 0;
        /* direct: flush when the queue ran dry or enough is waiting, so sources can commit soon */
        bool due = cf_now_us() - s.last_commit_us >= w->flush_interval_ms * 1000;
        /* a background write that ended: commit what it covers */
        if (s.flight && flight_check(&s, false, &s.err)) {
            s.failed = true;
            break;
        }
        /* all was committed by a commit not waited for that has no good
         * answer a second later (the broker went away, say): sent again,
         * not waited for either, until one is answered (else the stop has
         * to commit, with only its deadline to do it in) */
        if (s.unconfirmed && !s.uncommitted && !s.flight && s.npos && s.in && s.in->committed &&
            cf_now_us() - s.unconfirmed_us >= 1000000) {
            if (!s.in->committed(s.in->state)) commit_positions(&s, s.pos, s.npos, false, true);
            else s.unconfirmed = false;
            s.unconfirmed_us = cf_now_us();
        }
        /* the plugin's own schedule: flush (and commit) what was put; in
         * the background when it can, reading on meanwhile */
        if (t->flush_every_ms && s.first_put_us && cf_now_us() - s.first_put_us >= t->flush_every_ms * 1000) {
            if (!background || due) {
                due = true;
            } else if (!s.flight && flight_begin(&s, &s.err)) {
                s.failed = true;
                break;
            }
            /* else the last write still runs: the batch grows until it
             * ended (fewer, larger writes when the target is the slower
             * side), and the next round begins the next one */
        }
        if (direct && s.nacks && (cf_dq_len(&t->q) == 0 || s.nacks >= 5000)) due = true;
        if (due && sink_commit(&s, false, &s.err)) {
            s.failed = true;
            break;
        }
        publish(&s);
        if (s.abandoned) break;
        if (direct) atomic_store(&t->m.lag, (uint_fast64_t)cf_dq_len(&t->q));
        else if (has_in && in.lag) {
            /* per partition about once a second: the copies are not free */
            cf_tp_lag *parts = NULL;
            size_t nparts = 0;
            bool each = cf_now_us() - lag_parts_us >= 1000000;
            atomic_store(&t->m.lag, (uint_fast64_t)in.lag(in.state, each ? &parts : NULL, &nparts));
            if (each) {
                lag_parts_us = cf_now_us();
                pthread_mutex_lock(&t->mu);
                cf_tp_lag *old = t->lag_parts;
                size_t nold = t->nlag_parts;
                t->lag_parts = parts, t->nlag_parts = nparts;
                pthread_mutex_unlock(&t->mu);
                cf_tp_lag_free(old, nold);
            }
        } else atomic_store(&t->m.lag, 0);
    }
    for (size_t i = 0; i < nsrc; i++) cf_value_destroy(spart[i]), cf_value_destroy(soff[i]);
    if (!s.failed) {
        bool at_stop = atomic_load(&t->stop) && !eof;
        if (sink_commit(&s, at_stop, &s.err)) s.failed = true;
        else if (at_stop && s.abandoned && !s.no_commit)
            cf_task_unclean(t, "%s%s%s (at %s): the records from there on were read and not put; read again at the "
                               "next start", s.abandon_err.message, s.abandon_err.detail[0] ? ": " : "",
                            s.abandon_err.detail, s.abandon_err.where);
    }
    /* leave the group before the task is stopped: closing the consumer
     * revokes, and there is nothing left to flush then */
    if (has_in) {
        in.on_revoke = NULL;
        in.destroy(in.state);
        has_in = false;
    }
    pthread_mutex_lock(&t->mu); /* no partitions any more */
    cf_tp_lag_free(t->lag_parts, t->nlag_parts);
    t->lag_parts = NULL, t->nlag_parts = 0;
    pthread_mutex_unlock(&t->mu);
    cf_sink_ctx_set_metrics(&t->kctx, NULL, NULL); /* no metrics call into a stopped task */
    c->plugin->u.sink.stop(s.plugin_task);
out:
    flight_drop(&s); /* not committed: read again */
    for (size_t i = 0; i < nstash; i++) cf_msg_destroy(stash[i]); /* not put, not committed: read again */
    for (size_t i = 0; i < s.nacks; i++) cf_ack_done(s.acks[i], false);
    free(s.acks);
    if (direct) cf_dq_fail_all(&t->q);
    if (s.failed) cf_task_fail(t, &s.err);
    else atomic_store(&t->state, cf_task_end_state(t, eof));
    CF_INFO(COMP, "connector %s task %d stopped (%s)", c->name, t->id, cf_state_name(atomic_load(&t->state)));
    if (has_in) in.destroy(in.state);
    for (size_t i = 0; i < s.npos; i++) free(s.pos[i].topic);
    for (size_t i = 0; i < s.n_file_streams; i++) free(s.file_streams[i]);
    free(s.file_streams);
    free(s.file_prefix);
    free(s.pos);
    free(s.first);
    cf_task_set_pending(t, NULL);
    cf_task_teardown(t);
    return NULL;
}
