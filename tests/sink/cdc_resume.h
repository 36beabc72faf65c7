/*
 * cdc_resume.h - delivers a generator's records to a sink engine that
 * keeps its input positions (cf_sink_put_at) and resumes from them, as the
 * worker does with an exactly-once sink: a new engine reads the stored
 * positions and delivers the rest of the history from there, in random
 * slices with random flushes; a crash (kill -9 of a child process, or the
 * caller's power cut) may come at any moment. Shared by the SQLite and
 * PostgreSQL tests. Include after <cmocka.h>.
 */
#ifndef CDC_RESUME_H
#define CDC_RESUME_H

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cdc_gen.h"
#include "cdcflow/sink.h"

/* "stream:partition=next" of every stored position, sorted (static buffer). */
static inline const char *stored_text(cf_sink *s) {
    static char b[512];
    cf_sink_stored_position *p = NULL;
    size_t n = 0;
    cf_err err;
    if (cf_sink_read_positions(s, &p, &n, &err)) fail_msg("read positions: %s", err.message);
    b[0] = 0;
    for (size_t i = 0; i < n; i++)
        snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s:%d=%lld", i ? " " : "", p[i].stream, (int)p[i].partition,
                 (long long)p[i].next_offset);
    cf_sink_stored_positions_free(p, n);
    return b;
}

/* Stored positions changed while no task runs (REST's PATCH and DELETE of a
 * stopped sink's offsets): set, drop one, drop all; each in one transaction,
 * and what another consumer stored is left alone. */
static inline void alter_positions_check(const cf_sink_options *base, const cf_sink_target *tg) {
    cf_sink_options o = *base, other = *base;
    o.consumer = "alter";
    other.consumer = "bystander";
    cf_sink *s = NULL, *b = NULL;
    cf_err err;
    if (cf_sink_new(&o, tg, &s, &err) || cf_sink_new(&other, tg, &b, &err)) fail_msg("open: %s", err.message);
    cf_sink_stored_position set[] = {{"t", 0, 10, NULL}, {"t", 1, 20, NULL}, {"u", 0, 5, NULL}};
    assert_int_equal(cf_sink_alter_positions(b, false, NULL, 0, set, 1, &err), CF_OK);
    assert_int_equal(cf_sink_alter_positions(s, false, NULL, 0, set, 3, &err), CF_OK);
    assert_string_equal(stored_text(s), "t:0=10 t:1=20 u:0=5");
    cf_sink_stored_position moved[] = {{"t", 0, 3, NULL}}, dropped[] = {{"t", 1, -1, NULL}};
    assert_int_equal(cf_sink_alter_positions(s, false, dropped, 1, moved, 1, &err), CF_OK);
    assert_string_equal(stored_text(s), "t:0=3 u:0=5");
    assert_int_equal(cf_sink_alter_positions(s, true, NULL, 0, NULL, 0, &err), CF_OK);
    assert_string_equal(stored_text(s), "");
    assert_string_equal(stored_text(b), "t:0=10");
    cf_sink_destroy(s);
    cf_sink_destroy(b);
}

/* The position after record i of partition p. */
static inline void pos_of(const gen *g, int p, size_t from, size_t k, cf_sink_position *out) {
    for (size_t i = 0; i < k; i++)
        out[i] = (cf_sink_position){g->topic, p, g->recs[p][from + i]->offset + 1, NULL, NULL, NULL};
}

static inline uint32_t rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

/* Where each partition resumes: the stored next offset, as an index into the
 * generator's records (offsets are 0, 1, 2... per partition). */
static inline void resume_at(cf_sink *s, const gen *g, size_t *next) {
    cf_sink_stored_position *sp;
    size_t n;
    cf_err err;
    assert_int_equal(cf_sink_read_positions(s, &sp, &n, &err), CF_OK);
    for (int p = 0; p < g->n_part; p++) next[p] = 0;
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(sp[i].stream, g->topic);
        assert_true(sp[i].partition >= 0 && sp[i].partition < g->n_part);
        assert_true((size_t)sp[i].next_offset <= g->n_recs[sp[i].partition]);
        next[sp[i].partition] = (size_t)sp[i].next_offset;
    }
    cf_sink_stored_positions_free(sp, n);
}

typedef void (*snap_fn)(void);

/* Deliver the rest of the history to a new engine on path, from the stored
 * positions, in random slices with random flushes (and applies forced by a
 * small batchMaxRecords). With max_ops >= 0, stop after that many slices
 * without a last flush: snap (if given) runs first, then the engine goes
 * away as a crash would leave it. acked[p]: the position of the last flush
 * that returned CF_OK (what a worker would have committed). Returns 1 when
 * stopped early, 0 when everything was delivered and flushed. */
static inline int resume_deliver(const gen *g, const cf_sink_options *opts, const cf_sink_target *tg, uint64_t *rng,
                          int max_ops, snap_fn snap, size_t *acked, size_t slice) {
    cf_sink_options o = *opts;
    o.batch_max_records = 20 + rnd(rng) % 300;
    cf_sink *s;
    cf_err err;
    if (cf_sink_new(&o, tg, &s, &err)) fail_msg("%s: %s", err.message, err.detail);
    size_t next[16];
    resume_at(s, g, next);
    cf_sink_position pos[400];
    for (int ops = 0;; ops++) {
        if (max_ops >= 0 && ops >= max_ops) {
            if (snap) snap();
            cf_sink_destroy(s); /* nothing flushed: what was buffered is lost */
            return 1;
        }
        int left = 0;
        for (int p = 0; p < g->n_part; p++) left |= next[p] < g->n_recs[p];
        if (!left) break;
        int p = (int)(rnd(rng) % (unsigned)g->n_part);
        if (next[p] >= g->n_recs[p]) continue;
        size_t k = 1 + rnd(rng) % slice;
        if (next[p] + k > g->n_recs[p]) k = g->n_recs[p] - next[p];
        pos_of(g, p, next[p], k, pos);
        if (cf_sink_put_at(s, g->recs[p] + next[p], pos, k, &err)) fail_msg("put: %s: %s", err.message, err.detail);
        next[p] += k;
        if (rnd(rng) % 100 < 15) {
            if (cf_sink_flush(s, &err)) fail_msg("flush: %s: %s", err.message, err.detail);
            if (acked)
                for (int q = 0; q < g->n_part; q++) acked[q] = next[q];
        }
    }
    if (cf_sink_flush(s, &err)) fail_msg("flush: %s: %s", err.message, err.detail);
    if (acked)
        for (int q = 0; q < g->n_part; q++) acked[q] = next[q];
    cf_sink_destroy(s);
    return 0;
}


/* kill -9 at `kills` random moments: each time a child process delivers the
 * rest of the history from the stored positions and is killed after up to
 * 250 ms; then one more child runs to the end. */
static inline void resume_kill9(const gen *g, const cf_sink_options *o, const cf_sink_target *tg, uint64_t seed,
                                int kills) {
    for (int k = 0; k <= kills; k++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            uint64_t rng = seed + (uint64_t)k;
            resume_deliver(g, o, tg, &rng, -1, NULL, NULL, 400);
            _exit(0);
        }
        int st;
        if (k < kills) {
            uint64_t r = seed * 31 + (uint64_t)k;
            struct timespec ts = {0, (long)(rnd(&r) % 250) * 1000000L};
            nanosleep(&ts, NULL);
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        } else {
            waitpid(pid, &st, 0);
            assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
    }
}

#endif
