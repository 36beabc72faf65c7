/*
 * metrics.c - the engine's counters as Prometheus metrics (the names of the
 * Sidecar CDC design: cdc_publish_latency_seconds, cdc_events_per_second,
 * cdc_consistency_failures_total, cdc_dropped_mutations_total,
 * cdc_segment_read_lag, plus duplicates and pending digests), its events
 * per second, and the progress line of a catch-up.
 *
 * Everything here is written by the task thread and read by the REST
 * thread: atomics only.
 */
#include <stdio.h>
#include <string.h>

#include "sidecar_engine.h"

/* upper bounds of the latency buckets, seconds */
static const double lat_bounds[CF_SC_LAT_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                     1,     2.5,  5,     10,   30,  60,  300};

void cf_sc_engine_observe_latency(cf_sc_engine *e, int64_t us) {
    if (us < 0) us = 0; /* a writer's clock ahead of ours */
    double s = (double)us / 1e6;
    int b = 0;
    while (b < CF_SC_LAT_BUCKETS && s > lat_bounds[b]) b++;
    atomic_fetch_add(&e->st.lat_bucket[b], 1);
    atomic_fetch_add(&e->st.lat_sum_us, (uint64_t)us);
    atomic_fetch_add(&e->st.lat_count, 1);
}

/* Events per second over the last (up to) ten seconds: a ring of the event
 * count at the start of each second (the first step seen in it; no step
 * means no event, so the count then is the count at its start). */
void cf_sc_engine_tick_rate(cf_sc_engine *e) {
    int64_t us = cf_sc_mono_us() - e->rate_t0_us;
    int64_t sec = us / 1000000;
    uint64_t ev = atomic_load(&e->st.events);
    while (e->rate_sec < sec) e->rate_events_at[++e->rate_sec % 10] = ev;
    int64_t span = sec < 9 ? sec : 9; /* whole seconds back, plus the current part */
    uint64_t then = span ? e->rate_events_at[(sec - span) % 10] : 0;
    double secs = (double)(us - (sec - span) * 1000000) / 1e6;
    double rate = secs > 0.01 ? (double)(ev - then) / secs : 0;
    atomic_store(&e->st.rate_milli, (uint64_t)(rate * 1000));
}

double cf_sc_engine_rate(const cf_sc_engine *e) {
    return (double)atomic_load(&((cf_sc_engine *)e)->st.rate_milli) / 1000.0;
}

void cf_sc_engine_progress(const cf_sc_engine *e, cf_buf *out) {
    cf_sc_stats s;
    cf_sc_engine_stats(e, &s);
    cf_buf_printf(out,
                  "segments %llu/%llu, %.1f/%.1f MB, %llu copies read, %llu changes published (%llu events, %.0f/s), "
                  "%llu duplicates, %llu pending",
                  (unsigned long long)s.segments_done, (unsigned long long)s.segments_total, (double)s.bytes_done / 1e6,
                  (double)s.bytes_total / 1e6, (unsigned long long)s.copies, (unsigned long long)s.published,
                  (unsigned long long)s.events, cf_sc_engine_rate(e), (unsigned long long)s.duplicates,
                  (unsigned long long)s.pending);
    /* pending: every digest remembered; those published already only wait
     * for the late copies they make duplicates (a replica that was down
     * keeps them there until the timeout) */
    if (s.pending > s.unpublished)
        cf_buf_printf(out, " (%llu published, awaiting late copies)", (unsigned long long)(s.pending - s.unpublished));
    cf_buf_printf(out, ", %llu dropped", (unsigned long long)s.dropped);
}

typedef struct fam {
    const char *name, *type, *help;
} fam;

static const fam fams[] = {
    {"cdc_publish_latency_seconds", "histogram",
     "Time from a change's write timestamp to its publication (catching up old segments shows their age)."},
    {"cdc_events_per_second", "gauge", "Change events published per second (last ten seconds)."},
    {"cdc_consistency_failures_total", "counter",
     "Changes whose replicas did not reach the consistency level within the timeout (dropped)."},
    {"cdc_dropped_mutations_total", "counter",
     "Changes not published: consistency failures, entries that do not decode, events that cannot be written."},
    {"cdc_segment_read_lag", "gauge", "Commit log segments with CDC data not yet read to their end, all replicas."},
    {"cdc_duplicates_dropped_total", "counter", "Replica copies dropped because their change was published already."},
    {"cdc_pending_digests", "gauge", "Changes waiting for more replicas' copies (and published ones awaiting their late copies)."},
    {"cdc_published_total", "counter", "Changes published (partition updates that reached the consistency level)."},
    {"cdc_replica_copies_total", "counter", "Partition updates of published tables read from the replicas."},
    {"cdc_unknown_table_mutations_total", "counter", "Mutations skipped: their table is not in the schema."},
    {"cdc_segments_cleaned_total", "counter", "Finished segments deleted from (or archived out of) cdc_raw."},
    {"cdc_last_published_timestamp_seconds", "gauge", "When the last change was published (Unix time; 0: none yet)."},
    {"cdc_unpublished_digests", "gauge", "Of the pending digests, the changes not yet at their consistency level."},
    {"cdc_copy_cache_hits_total", "counter",
     "Entries whose bytes an earlier replica's copy had: its results taken, not decoded and digested again."},
};
#define N_FAMS (sizeof fams / sizeof fams[0])

bool cf_sc_engine_metrics(const cf_sc_engine *ce, int f, const char *labels, bool with_help, cf_buf *out) {
    cf_sc_engine *e = (cf_sc_engine *)ce;
    if (f < 0 || (size_t)f >= N_FAMS) return false;
    const fam *m = &fams[f];
    if (with_help) cf_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
    const char *sep = labels && *labels ? "," : "";
    labels = labels ? labels : "";
    if (f == 0) {
        uint64_t cum = 0;
        for (int b = 0; b <= CF_SC_LAT_BUCKETS; b++) {
            cum += atomic_load(&e->st.lat_bucket[b]);
            if (b < CF_SC_LAT_BUCKETS) cf_buf_printf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", m->name, labels, sep, lat_bounds[b], (unsigned long long)cum);
            else cf_buf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", m->name, labels, sep, (unsigned long long)cum);
        }
        cf_buf_printf(out, "%s_sum{%s} %.6f\n%s_count{%s} %llu\n", m->name, labels,
                      (double)atomic_load(&e->st.lat_sum_us) / 1e6, m->name, labels,
                      (unsigned long long)atomic_load(&e->st.lat_count));
        return true;
    }
    if (f == 1) {
        cf_buf_printf(out, "%s{%s} %.3f\n", m->name, labels, cf_sc_engine_rate(e));
        return true;
    }
    uint64_t v = 0;
    switch (f) {
    case 2: v = atomic_load(&e->st.consistency_failures); break;
    case 3: v = atomic_load(&e->st.dropped); break;
    case 4: v = atomic_load(&e->st.read_lag); break;
    case 5: v = atomic_load(&e->st.duplicates); break;
    case 6: v = atomic_load(&e->st.pending); break;
    case 7: v = atomic_load(&e->st.published); break;
    case 8: v = atomic_load(&e->st.copies); break;
    case 9: v = atomic_load(&e->st.unknown_tables); break;
    case 10: v = atomic_load(&e->st.cleaned); break;
    case 11: v = atomic_load(&e->st.last_published_ms) / 1000; break;
    case 12: v = atomic_load(&e->st.unpublished); break;
    case 13: v = atomic_load(&e->st.copy_hits); break;
    }
    cf_buf_printf(out, "%s{%s} %llu\n", m->name, labels, (unsigned long long)v);
    return true;
}
