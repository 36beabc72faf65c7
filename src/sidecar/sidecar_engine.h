/*
 * sidecar_engine.h - the engine's insides, shared by engine.c (reading,
 * dedup, cleanup), state.c (snapshots) and metrics.c (counters, rates,
 * Prometheus text). Not public.
 */
#ifndef CDCFLOW_SIDECAR_ENGINE_H
#define CDCFLOW_SIDECAR_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cdcflow/cassandra_cql.h"
#include "cdcflow/cassandra_log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"
#include "sidecar_internal.h"

typedef struct segref {
    int64_t id;
    char *path;
    bool has_idx;
    int64_t size;
} segref;

typedef struct replica {
    int index;
    char *dir, *name;
    segref *segs; /* listing, by id */
    size_t nsegs;
    bool listed_once, dirty, idle;
    int wd;
    /* the segment being read */
    cf_cass_segment *seg;
    int64_t seg_id;
    char *seg_path, *idx_path;
    int mv;
    int64_t limit;        /* the index's offset */
    bool completed;       /* the index says COMPLETED */
    int64_t skip_before;  /* entries before this position were processed before a restart */
    /* marker: everything up to m_pos of segment m_seg is processed; m_done:
     * m_seg is finished (and every segment before it) */
    int64_t m_seg, m_pos;
    bool m_done;
    int64_t clock;        /* largest write time of the last mutation read: the turn order */
} replica;

/* A replica's position in a state: everything up to pos of segment seg is
 * processed (done: all of seg); seg < 0: nothing. */
typedef struct sc_mark {
    int64_t seg, pos;
    bool done;
} sc_mark;

/* A takeover floor (state.c): copies of tokens in (lo, hi] that are before
 * m[replica] were processed by the state that owned those tokens; their
 * results (published, or pending digests) came with the merged state, so
 * they are not processed again. m has one mark per engine replica. */
typedef struct sc_floor {
    int64_t lo, hi;
    sc_mark *m;
} sc_floor;

#define CF_SC_LAT_BUCKETS 14

typedef struct sc_counters {
    atomic_uint_fast64_t entries, copies, published, events, duplicates, consistency_failures, dropped, not_owned,
        skipped, unknown_tables, corrupt, schema_refreshes, pending, segments_done, segments_total, bytes_done,
        bytes_total, read_lag, cleaned, unpublished, copy_hits;
    atomic_uint_fast64_t lat_bucket[CF_SC_LAT_BUCKETS + 1]; /* the last one: +Inf */
    atomic_uint_fast64_t lat_sum_us, lat_count;
    atomic_uint_fast64_t rate_milli; /* events per second x 1000 */
    atomic_uint_fast64_t last_published_ms; /* wall clock of the last publish */
} sc_counters;

struct cf_sc_engine {
    cf_cass_schema *schema;
    cf_cass_decoder *dec;
    cf_sc_digester *dg;
    cf_sc_dedup *dd;
    cf_sc_events *ev;
    cf_sc_ranges ranges;
    char **tables;
    size_t ntables;
    replica *reps;
    size_t nreps;
    cf_sc_cl cl;
    int rf;
    char *datacenter;
    int64_t timeout_ms;
    bool once;
    cf_sc_cleanup cleanup;
    char *archive_dir;
    uint8_t key[32];
    size_t key_len;
    int poll_ms;
    cf_code (*report)(void *arg, const cf_err *problem);
    void *report_arg;
    int64_t (*now_ms)(void *arg);
    void *clock_arg;
    int ifd;
    int64_t last_list_us, last_expire_ms;
    /* tables of pending digests (their number in cf_sc_pending.table) */
    struct {
        char *ks, *name;
    } *trefs;
    size_t ntrefs, captrefs;
    struct {
        char *ks;
        int required, complete;
    } *ksr;
    size_t nksr, capksr;
    const cf_cass_table **noted;
    size_t nnoted, capnoted;
    /* what the hot path decides once per table version */
    struct tcache {
        const cf_cass_table *t;
        bool publish;      /* cdc, included, supported */
        int required, complete;
        uint32_t tref;
    } *tc;
    size_t ntc, captc, tc_last;
    cf_sc_copies *copies;  /* results of recent entries, by their bytes */
    cf_sc_copy_update *cu; /* an entry's results, for the copy cache */
    size_t cap_cu;
    int64_t step_now_ms;   /* the wall clock, read once per step */
    uint8_t (*unknown)[16];
    size_t nunknown, capunknown;
    /* CQL */
    bool has_cql;
    cf_cql_options cqlopt;
    char *cql_host, *cql_user, *cql_pass;
    cf_cql_conn *cql;
    int64_t last_refresh_us;
    /* A schema refresh was interrupted by the caller's stop (cf_cql_options.
     * interrupted): the entry that asked for it was not processed, so no
     * state taken from now on may be stored (cf_sc_engine_halted); nothing
     * more is read. */
    bool halted;
    /* what cleanup removed, for the totals */
    uint64_t cleaned_segments, cleaned_bytes;
    /* events per second: a window of per-second counts */
    int64_t rate_t0_us;
    uint64_t rate_events_at[10];
    int64_t rate_sec;
    /* takeover floors (cf_sc_engine_restore of a merged state), until every
     * reader has passed them */
    sc_floor *floors;
    size_t nfloors;
    uint64_t floor_skipped;
    sc_counters st;
};

uint32_t cf_sc_engine_table_ref(cf_sc_engine *e, const char *ks, const char *name);
void cf_sc_engine_cleanup_through(cf_sc_engine *e, const char *name, int64_t seg, bool done);
void cf_sc_engine_observe_latency(cf_sc_engine *e, int64_t us);
void cf_sc_engine_tick_rate(cf_sc_engine *e);
/* Was the copy at (seg, pos) of replica rep, token t, processed by the owner
 * of t in a merged state (a takeover floor)? */
bool cf_sc_engine_floor_done(cf_sc_engine *e, int rep, int64_t seg, int64_t pos, int64_t t);
void cf_sc_engine_floors_free(cf_sc_engine *e);

#endif
