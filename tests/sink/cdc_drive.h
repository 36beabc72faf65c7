/*
 * cdc_drive.h - delivers a generator's records to sink engines the way a
 * Kafka consumer group does at least once: several tasks (engines) sharing
 * one target, partitions assigned to tasks, offsets committed only after a
 * flush, crashes that lose what was buffered (redelivery from the committed
 * offset), rebalances that move a partition with or without a final flush
 * (duplicates), and rewinds to an older offset (replays). Afterwards every
 * task flushes and the caller compares the target with the source model.
 * With o->async_apply half of the flushes are background writes
 * (cf_sink_flush_begin) whose positions are committed only once
 * cf_sink_flush_wait says they ended, as the worker does; a crash while one
 * is up commits nothing of it.
 */
#ifndef CDC_DRIVE_H
#define CDC_DRIVE_H

#include "cdc_gen.h"
#include "cdcflow/sink.h"

typedef struct drive_stats {
    uint64_t delivered, crashes, rebalances, rewinds, flushes;
    uint64_t refused; /* background writes not begun: the engine's own write still ran (CF_ERR_AGAIN) */
} drive_stats;

#define DRIVE_TASKS 2

/* Returns 0 or the failing cf_code (err filled). */
static inline int drive(gen *g, const cf_sink_options *o, const cf_sink_target *tg, uint64_t seed, int chaos,
                        drive_stats *ds, cf_err *err) {
    memset(ds, 0, sizeof *ds);
    cf_sink *task[DRIVE_TASKS] = {0};
    int owner[64];
    size_t pos[64], committed[64];
    bool pend[DRIVE_TASKS] = {0};  /* a background write up, with the positions it covers */
    uint64_t ticket[DRIVE_TASKS] = {0};
    size_t pend_pos[DRIVE_TASKS][64];
    uint64_t rng = seed;
    for (int t = 0; t < DRIVE_TASKS; t++) {
        int rc = cf_sink_new(o, tg, &task[t], err);
        if (rc) return rc;
    }
    for (int p = 0; p < g->n_part; p++) owner[p] = p % DRIVE_TASKS, pos[p] = committed[p] = 0;
#define DRAND() (rng = rng * 6364136223846793005ULL + 1442695040888963407ULL, (unsigned)(rng >> 33))
    int rc = 0;
    for (;;) {
        int left = 0;
        for (int p = 0; p < g->n_part; p++)
            if (pos[p] < g->n_recs[p]) left = 1;
        if (!left) break;
        int p = (int)(DRAND() % (unsigned)g->n_part);
        if (pos[p] >= g->n_recs[p]) continue;
        size_t maxk = g->total / 300 + 5; /* about 300 deliveries a run: plenty of crashes and rebalances */
        size_t k = 1 + DRAND() % maxk;
        if (pos[p] + k > g->n_recs[p]) k = g->n_recs[p] - pos[p];
        cf_sink *s = task[owner[p]];
        int ot = owner[p];
        if (pend[ot]) { /* a background write that ended: commit what it covers */
            bool done = false;
            rc = cf_sink_flush_wait(s, ticket[ot], false, &done, err);
            if (rc) goto out;
            if (done) {
                for (int q = 0; q < g->n_part; q++)
                    if (owner[q] == ot && pend_pos[ot][q] != (size_t)-1) committed[q] = pend_pos[ot][q];
                pend[ot] = false;
            }
        }
        rc = cf_sink_put(s, g->recs[p] + pos[p], k, err);
        if (rc) goto out;
        ds->delivered += k;
        pos[p] += k;
        unsigned d = DRAND() % 1000;
        if (d < 75 && o->async_apply && !pend[ot]) { /* a background write */
            rc = cf_sink_flush_begin(s, &ticket[ot], err);
            if (rc == CF_ERR_AGAIN) { /* the engine's own write (its bounds) runs: nothing begun, as the worker */
                rc = 0;
                cf_err_clear(err);
                ds->refused++;
            } else if (rc) {
                goto out;
            } else {
                for (int q = 0; q < g->n_part; q++) pend_pos[ot][q] = owner[q] == ot ? pos[q] : (size_t)-1;
                pend[ot] = true;
                ds->flushes++;
            }
        } else if (d < 150) { /* flush + commit the task's partitions */
            rc = cf_sink_flush(s, err);
            if (rc) goto out;
            ds->flushes++;
            pend[ot] = false; /* the flush wrote it too */
            for (int q = 0; q < g->n_part; q++)
                if (owner[q] == owner[p]) committed[q] = pos[q];
        } else if (chaos && d < 165) { /* crash: lose the buffer, redeliver from the commit */
            int t = owner[p];
            pend[t] = false; /* whether it was written or not, nothing of it was committed */
            cf_sink_destroy(task[t]);
            rc = cf_sink_new(o, tg, &task[t], err);
            if (rc) goto out;
            ds->crashes++;
            for (int q = 0; q < g->n_part; q++)
                if (owner[q] == t) pos[q] = committed[q];
        } else if (chaos && d < 180) { /* rebalance: move p, maybe without a last flush */
            int from = owner[p], to = (owner[p] + 1) % DRIVE_TASKS;
            if (DRAND() % 2) {
                rc = cf_sink_flush(task[from], err);
                if (rc) goto out;
                for (int q = 0; q < g->n_part; q++)
                    if (owner[q] == from) committed[q] = pos[q];
                pend[from] = false;
            } else if (pend[from]) { /* the write goes on; what it covers of p is not committed by it */
                pend_pos[from][p] = (size_t)-1;
            }
            owner[p] = to;
            pos[p] = committed[p]; /* the new owner starts at the committed offset */
            ds->rebalances++;
        } else if (chaos && d < 186) { /* rewind: an operator resets the group to an older offset */
            rc = cf_sink_flush(s, err);
            if (rc) goto out;
            pend[ot] = false; /* written by that flush; the positions go back anyway */
            size_t back = DRAND() % 3000;
            pos[p] = pos[p] > back ? pos[p] - back : 0;
            committed[p] = pos[p];
            ds->rewinds++;
        }
    }
    for (int t = 0; t < DRIVE_TASKS && !rc; t++) rc = cf_sink_flush(task[t], err);
out:
    for (int t = 0; t < DRIVE_TASKS; t++) cf_sink_destroy(task[t]);
#undef DRAND
    return rc;
}

#endif
