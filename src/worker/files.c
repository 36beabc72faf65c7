/*
 * files.c - record files as the worker's transport (`cdcflow run --input`
 * / `--output`), so a configuration can be tried without Kafka.
 *
 * Output: every source task writes to one shared writer (a mutex keeps lines
 * whole), appending to what earlier runs wrote (a torn last line, which a
 * kill leaves, is cut first: cf_recordfile_writer_open_resume). A record counts as acknowledged once its line is durable
 * (cf_recordfile_writer_flush: fflush + fsync), so source offsets follow the
 * same rule as with Kafka. Flushes are batched: on serve() at most every
 * 200 ms, and on flush().
 *
 * Input: one reader; messages keep the topic/partition/offset of the file
 * (as kcat printed them; the writer numbers the records that had none),
 * commits are no-ops (the file is read from its start every run, and what an
 * exactly-once sink already holds is skipped: cf_worker_file_in_resume). A
 * bad line is returned as CF_ERR_CORRUPT after the good messages before it,
 * and the worker applies errors.tolerance to it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/recordfile.h"
#include "worker_internal.h"

typedef struct fout {
    pthread_mutex_t mu;
    cf_recordfile_writer *w;
    cf_ack **pending;
    size_t n, cap;
    int64_t last_flush_us;
    bool failed;
    cf_err err;
} fout;

static cf_code fout_flush_locked(fout *f, cf_err *err) {
    if (!f->n) return CF_OK;
    cf_code rc = f->failed ? f->err.code : cf_recordfile_writer_flush(f->w, &f->err);
    if (rc) f->failed = true;
    for (size_t i = 0; i < f->n; i++) cf_ack_done(f->pending[i], rc == CF_OK);
    f->n = 0;
    f->last_flush_us = cf_now_us();
    if (rc && err) *err = f->err;
    return rc;
}

static cf_code fout_send(void *st, cf_msg *m, cf_ack *ack, cf_err *err) {
    fout *f = st;
    pthread_mutex_lock(&f->mu);
    cf_code rc = f->failed ? f->err.code : cf_recordfile_write(f->w, m, &f->err);
    if (rc) {
        f->failed = true;
        if (err) *err = f->err;
        pthread_mutex_unlock(&f->mu);
        return rc;
    }
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 1024;
        f->pending = cf_xrealloc(f->pending, f->cap * sizeof *f->pending);
    }
    f->pending[f->n++] = ack;
    pthread_mutex_unlock(&f->mu);
    return CF_OK;
}

static void fout_serve(void *st, int timeout_ms) {
    fout *f = st;
    pthread_mutex_lock(&f->mu);
    if (f->n && (cf_now_us() - f->last_flush_us >= 200000 || f->n >= 10000)) fout_flush_locked(f, NULL);
    pthread_mutex_unlock(&f->mu);
    (void)timeout_ms; /* writes complete synchronously: nothing to wait for */
}

static cf_code fout_flush(void *st, int timeout_ms, cf_err *err) {
    (void)timeout_ms;
    fout *f = st;
    pthread_mutex_lock(&f->mu);
    cf_code rc = fout_flush_locked(f, err);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static void fout_destroy(void *st) {
    fout *f = st;
    fout_flush_locked(f, NULL);
    cf_err e;
    if (cf_recordfile_writer_close(f->w, &e)) cf_log_err(CF_LOG_ERROR, "worker", &e);
    free(f->pending);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

cf_code cf_worker_file_out_new(const char *path, cf_msg_out *out, cf_err *err) {
    cf_recordfile_writer *w = NULL;
    cf_recordfile_resume ri;
    /* appended to, never truncated: earlier runs' stored offsets count on their lines */
    cf_code rc = cf_recordfile_writer_open_resume(path, &w, &ri, err);
    if (rc) return rc;
    if (ri.cut_bytes)
        CF_WARN("worker", "record file \"%s\": cut a torn last line (%llu bytes at byte offset %llu) an earlier run "
                "left unfinished; its records were not acknowledged and are written again",
                path, (unsigned long long)ri.cut_bytes, (unsigned long long)ri.cut_offset);
    fout *f = cf_xcalloc(1, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    f->w = w;
    f->last_flush_us = cf_now_us();
    *out = (cf_msg_out){f, fout_send, fout_serve, fout_flush, fout_destroy, NULL}; /* one line per message */
    return CF_OK;
}

/* ---------------- input ---------------- */

typedef struct fin {
    cf_recordfile_reader *r;
    cf_tp_pos *skip; /* resume: per topic partition, offsets below next_offset are skipped */
    size_t n_skip;
} fin;

static bool fin_skipped(const fin *f, const cf_msg *m) {
    for (size_t i = 0; i < f->n_skip; i++)
        if (f->skip[i].partition == m->partition && strcmp(f->skip[i].topic, m->topic ? m->topic : "") == 0)
            return m->offset < f->skip[i].next_offset;
    return false;
}

static cf_code fin_poll(void *st, cf_msg **out, size_t max, size_t *n, int timeout_ms, cf_err *err) {
    (void)timeout_ms;
    fin *f = st;
    *n = 0;
    while (*n < max) {
        cf_msg *m = cf_msg_new();
        cf_code rc = cf_recordfile_read(f->r, m, err);
        if (rc) {
            cf_msg_destroy(m);
            return rc; /* CF_ERR_EOF, CF_ERR_CORRUPT (a bad line; go on after it), CF_ERR_IO */
        }
        if (fin_skipped(f, m)) {
            cf_msg_destroy(m);
            continue;
        }
        out[(*n)++] = m;
    }
    return CF_OK;
}

void cf_worker_file_in_resume(cf_msg_in *in, const cf_tp_pos *pos, size_t n) {
    fin *f = in->state;
    f->skip = cf_xrealloc(f->skip, (f->n_skip + n + 1) * sizeof *f->skip);
    for (size_t i = 0; i < n; i++)
        f->skip[f->n_skip++] = (cf_tp_pos){cf_xstrdup(pos[i].topic ? pos[i].topic : ""), pos[i].partition,
                                           pos[i].next_offset};
}

static cf_code fin_commit(void *st, const cf_tp_pos *pos, size_t n, int timeout_ms, cf_err *err) {
    (void)timeout_ms;
    (void)st, (void)pos, (void)n, (void)err;
    return CF_OK;
}

static void fin_destroy(void *st) {
    fin *f = st;
    cf_recordfile_reader_close(f->r);
    for (size_t i = 0; i < f->n_skip; i++) free(f->skip[i].topic);
    free(f->skip);
    free(f);
}

cf_code cf_worker_file_in_new(const char *path, cf_msg_in *in, cf_err *err) {
    cf_recordfile_reader *r = NULL;
    cf_code rc = cf_recordfile_reader_open(path, &r, err);
    if (rc) return rc;
    fin *f = cf_xcalloc(1, sizeof *f);
    f->r = r;
    *in = (cf_msg_in){f, fin_poll, fin_commit, fin_destroy, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false};
    return CF_OK;
}
