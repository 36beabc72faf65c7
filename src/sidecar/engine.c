/*
 * engine.c - the sidecar engine: one reader per replica cdc_raw directory,
 * decode, digest, dedup against the consistency level, events, schema
 * refresh over CQL, cleanup of finished segments (see cdcflow/sidecar.h for
 * the rules; state.c writes and reads the snapshots).
 *
 * Why readers take turns by write time: with three replicas read one after
 * the other, the first replica's whole backlog would be pending before the
 * second one's copies arrive; taking the reader whose last write is oldest
 * keeps the copies of a write together, so catching up on hours of segments
 * needs a pending cache of seconds.
 *
 * Why a segment without an index is passed over only when a newer one has
 * an index: Cassandra hard-links every segment into cdc_raw when it creates
 * it and writes <segment>_cdc.idx at the first sync with CDC data; once a
 * newer segment has one, the older one is closed and can get no CDC data.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdcflow/cassandra_cql.h"
#include "cdcflow/cassandra_log.h"
#include "cdcflow/log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"
#include "sidecar_engine.h"

#define COMP "sidecar"
#define CHUNK 64            /* entries a reader reads before the next turn */
#define STEP_ENTRIES 4096   /* entries per step, so that a poll returns */
#define DROP_LOG_MAX 20     /* dropped digests logged one by one per expiry pass */

static int64_t now_ms(const cf_sc_engine *e) { return e->now_ms ? e->now_ms(e->clock_arg) : cf_sc_wall_ms(); }

#define BUMP(f) atomic_fetch_add(&e->st.f, 1)
#define ADD(f, n) atomic_fetch_add(&e->st.f, (n))

/* ---------------- reporting ---------------- */

static cf_code report(cf_sc_engine *e, const cf_err *problem) {
    if (e->report) return e->report(e->report_arg, problem);
    cf_log_err(CF_LOG_WARN, COMP, problem);
    return CF_OK;
}

/* ---------------- listing ---------------- */

static int cmp_seg(const void *a, const void *b) {
    const segref *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void free_segs(segref *s, size_t n) {
    for (size_t i = 0; i < n; i++) free(s[i].path);
    free(s);
}

/* The directory's segments, sorted by id. A missing directory is an error
 * the first time only (a replica mounted later is read once it appears). */
static cf_code list_dir(replica *r, cf_err *err) {
    DIR *d = opendir(r->dir);
    if (!d) {
        int en = errno;
        if (!r->listed_once) {
            cf_err_set(err, CF_ERR_IO, "cannot read replica directory %s", r->dir);
            cf_err_detail(err, "%s", strerror(en));
            cf_err_hint(err, "Give each replica's cdc_raw directory (cassandra.yaml cdc_raw_directory).");
            return CF_ERR_IO;
        }
        return CF_OK;
    }
    size_t n = 0, cap = 16;
    segref *v = cf_xmalloc(cap * sizeof *v);
    struct dirent *de;
    while ((de = readdir(d))) {
        int32_t ver;
        int64_t id;
        if (!cf_cass_segment_name_parse(de->d_name, &ver, &id)) continue;
        size_t l = strlen(de->d_name);
        if (l < 4 || strcmp(de->d_name + l - 4, ".log") != 0) continue;
        if (n == cap) v = cf_xrealloc(v, (cap *= 2) * sizeof *v);
        cf_buf b = CF_BUF_INIT;
        cf_buf_printf(&b, "%s/%s", r->dir, de->d_name);
        v[n].path = cf_buf_detach(&b, NULL);
        v[n].id = id;
        char *idx = cf_cass_cdc_idx_path(v[n].path);
        v[n].has_idx = access(idx, F_OK) == 0;
        free(idx);
        struct stat st;
        v[n].size = stat(v[n].path, &st) == 0 ? (int64_t)st.st_size : 0;
        n++;
    }
    closedir(d);
    qsort(v, n, sizeof *v, cmp_seg);
    free_segs(r->segs, r->nsegs);
    r->segs = v;
    r->nsegs = n;
    r->listed_once = true;
    return CF_OK;
}

static bool seg_finished(const replica *r, int64_t id) {
    return id < r->m_seg || (id == r->m_seg && r->m_done);
}

/* Known segments with an index, finished and not, and their bytes. */
static void update_totals(cf_sc_engine *e) {
    uint64_t total = 0, done = 0, bt = 0, bd = 0;
    for (size_t i = 0; i < e->nreps; i++) {
        replica *r = &e->reps[i];
        for (size_t k = 0; k < r->nsegs; k++) {
            if (!r->segs[k].has_idx) continue;
            total++;
            bt += (uint64_t)r->segs[k].size;
            if (seg_finished(r, r->segs[k].id)) {
                done++;
                bd += (uint64_t)r->segs[k].size;
            } else if (r->seg && r->segs[k].id == r->seg_id) {
                bd += cf_cass_segment_get_stats(r->seg)->bytes;
            }
        }
    }
    atomic_store(&e->st.segments_total, total + e->cleaned_segments);
    atomic_store(&e->st.segments_done, done + e->cleaned_segments);
    atomic_store(&e->st.bytes_total, bt + e->cleaned_bytes);
    atomic_store(&e->st.bytes_done, bd + e->cleaned_bytes);
    atomic_store(&e->st.read_lag, total - done);
}

static cf_code relist(cf_sc_engine *e, cf_err *err) {
    for (size_t i = 0; i < e->nreps; i++) {
        cf_code rc = list_dir(&e->reps[i], err);
        if (rc) return rc;
        e->reps[i].idle = false;
    }
    e->last_list_us = cf_sc_mono_us();
    update_totals(e);
    return CF_OK;
}

/* ---------------- inotify ---------------- */

static void watch_dirs(cf_sc_engine *e) {
    if (e->once) return;
    e->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (e->ifd < 0) {
        CF_WARN(COMP, "inotify is not available (%s): new segments are found by listing every %d ms", strerror(errno),
                e->poll_ms);
        return;
    }
    for (size_t i = 0; i < e->nreps; i++) {
        replica *r = &e->reps[i];
        r->wd = inotify_add_watch(e->ifd, r->dir, IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY | IN_DELETE);
        if (r->wd < 0)
            CF_WARN(COMP, "cannot watch %s (%s): it is listed every %d ms", r->dir, strerror(errno), e->poll_ms);
    }
}

/* Read what inotify queued; the replicas that changed read again. */
static bool drain_inotify(cf_sc_engine *e) {
    if (e->ifd < 0) return false;
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool any = false;
    for (;;) {
        ssize_t n = read(e->ifd, buf, sizeof buf);
        if (n <= 0) break;
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            for (size_t i = 0; i < e->nreps; i++)
                if (e->reps[i].wd == ev->wd) {
                    e->reps[i].idle = false;
                    if (ev->mask & (IN_CREATE | IN_MOVED_TO | IN_DELETE)) e->reps[i].dirty = true;
                    else if (ev->len && strstr(ev->name, "_cdc.idx")) e->reps[i].dirty = true; /* a new index */
                }
            any = true;
            p += sizeof *ev + ev->len;
        }
    }
    return any;
}

void cf_sc_engine_wait(cf_sc_engine *e, int timeout_ms) {
    if (e->once) return;
    int64_t left_ms = e->poll_ms - (cf_sc_mono_us() - e->last_list_us) / 1000;
    if (left_ms < timeout_ms) timeout_ms = left_ms < 0 ? 0 : (int)left_ms;
    if (e->ifd >= 0) {
        struct pollfd p = {e->ifd, POLLIN, 0};
        poll(&p, 1, timeout_ms);
    } else if (timeout_ms > 0) {
        usleep((useconds_t)timeout_ms * 1000);
    }
}

/* ---------------- schema ---------------- */

static cf_code cql_connect(cf_sc_engine *e, cf_err *err) {
    if (e->cql) return CF_OK;
    cf_code rc = cf_cql_connect(&e->cqlopt, &e->cql, err);
    if (rc) return rc;
    if (cf_cql_register_schema_events(e->cql, err)) {
        cf_log_err(CF_LOG_WARN, COMP, err); /* refreshes still come on unknown ids */
    }
    return CF_OK;
}

/* Read the schema again (an unknown table id or column, or a SCHEMA_CHANGE
 * event). At most once a second: a stream of mutations of a table that is
 * really unknown must not become a stream of schema reads. */
static bool refresh_schema(cf_sc_engine *e, const char *why) {
    if (!e->has_cql) return false;
    int64_t t = cf_sc_mono_us();
    if (e->last_refresh_us && t - e->last_refresh_us < 1000000) return false;
    e->last_refresh_us = t;
    cf_err err;
    size_t before = cf_cass_schema_table_count(e->schema);
    cf_code rc = cql_connect(e, &err);
    if (!rc) rc = cf_cql_load_schema(e->cql, NULL, e->schema, &err);
    if (rc && e->cqlopt.interrupted && e->cqlopt.interrupted(e->cqlopt.interrupt_arg)) {
        /* the caller stops: the entry that asked is not taken as unknown */
        CF_WARN(COMP, "schema refresh (%s) abandoned: the task is stopping (%s); reading stops here, the state "
                      "is not stored past the last stored one", why, err.message);
        e->halted = true;
        cf_cql_close(e->cql);
        e->cql = NULL;
        return false;
    }
    if (rc) {
        CF_WARN(COMP, "schema refresh (%s) failed: %s%s%s; decoding goes on with the schema known", why, err.message,
                err.detail[0] ? ": " : "", err.detail);
        cf_cql_close(e->cql);
        e->cql = NULL;
        return false;
    }
    BUMP(schema_refreshes);
    cf_cass_decoder_set_schema(e->dec, e->schema);
    cf_sc_copies_clear(e->copies); /* their results came from the schema before */
    CF_INFO(COMP, "schema refreshed over CQL (%s): %zu table(s), %zu new", why, cf_cass_schema_table_count(e->schema),
            cf_cass_schema_table_count(e->schema) - before);
    return true;
}

/* token ranges "ring": the primary ranges of a node, from the ring read
 * over CQL once at start (a ring change takes effect at the next start) */
static bool is_ring(const char *ranges) {
    if (!ranges) return false;
    while (*ranges == ' ' || *ranges == '\t') ranges++;
    size_t l = strlen(ranges);
    while (l && (ranges[l - 1] == ' ' || ranges[l - 1] == '\t')) l--;
    return l == 4 && strncasecmp(ranges, "ring", 4) == 0;
}

static cf_code ring_ranges(cf_sc_engine *e, const char *node, cf_err *err) {
    if (!e->has_cql) {
        cf_err_set(err, CF_ERR_CONFIG, "token ranges \"ring\" need a CQL connection to read the ring from");
        cf_err_hint(err, "Give a node to connect to (cql.host), or the owned ranges as (start,end];...");
        return CF_ERR_CONFIG;
    }
    const char *host = e->cqlopt.host ? e->cqlopt.host : "127.0.0.1";
    int port = e->cqlopt.port ? e->cqlopt.port : 9042;
    cf_err why;
    cf_sc_ring ring;
    memset(&ring, 0, sizeof ring);
    cf_code rc = cql_connect(e, &why);
    if (!rc) rc = cf_sc_ring_read(e->cql, &ring, &why);
    if (rc) {
        cf_cql_close(e->cql);
        e->cql = NULL;
        cf_err_set(err, rc == CF_ERR_UNSUPPORTED ? rc : CF_ERR_TRANSPORT,
                   "cannot read the token ring (system.local, system.peers) over CQL from %s:%d", host, port);
        cf_err_detail(err, "%s%s%s", why.message, why.detail[0] ? ": " : "", why.detail);
        cf_err_hint(err, "%s", rc == CF_ERR_UNSUPPORTED && why.hint[0]
                                   ? why.hint
                                   : "token.ranges=ring reads the ring at start: check that the node is up and that "
                                     "cql.host/cql.port and the credentials reach it, or give the owned ranges as "
                                     "token.ranges=(start,end];...");
        return err ? err->code : rc;
    }
    rc = cf_sc_ranges_primary(&ring, node, &e->ranges, err);
    if (!rc) {
        cf_buf b = CF_BUF_INIT;
        cf_sc_ranges_format(&e->ranges, &b);
        size_t total = 0;
        for (size_t i = 0; i < ring.n; i++) total += ring.nodes[i].n_tokens;
        const cf_sc_ring_node *me = &ring.nodes[ring.local];
        CF_INFO(COMP, "token ranges from the ring read from %s:%d (%zu node(s), %zu token(s)): the primary ranges "
                      "of %s%s: %s",
                host, port, ring.n, total, node && *node ? node : me->address,
                node && *node ? "" : " (the node connected to)", b.data);
        cf_buf_free(&b);
    }
    cf_sc_ring_free(&ring);
    return rc;
}

static void poll_schema_events(cf_sc_engine *e) {
    if (!e->cql) return;
    cf_cql_event ev;
    cf_err err;
    bool changed = false;
    cf_code rc;
    while ((rc = cf_cql_next_event(e->cql, 0, &ev, &err)) == CF_OK)
        if (strcmp(ev.target, "TABLE") == 0 || strcmp(ev.target, "TYPE") == 0 || strcmp(ev.target, "KEYSPACE") == 0)
            changed = true;
    if (rc != CF_ERR_AGAIN) { /* the connection broke: make a new one at the next refresh */
        cf_cql_close(e->cql);
        e->cql = NULL;
    }
    if (changed) {
        e->last_refresh_us = 0;
        refresh_schema(e, "schema change event");
    }
}

/* ---------------- tables and keyspaces ---------------- */

static bool included(const cf_sc_engine *e, const cf_cass_table *t) {
    if (!e->ntables) return true;
    for (size_t i = 0; i < e->ntables; i++) {
        const char *dot = strchr(e->tables[i], '.');
        if (dot && strlen(t->keyspace) == (size_t)(dot - e->tables[i]) &&
            strncmp(e->tables[i], t->keyspace, (size_t)(dot - e->tables[i])) == 0 && strcmp(dot + 1, t->name) == 0)
            return true;
    }
    return false;
}

uint32_t cf_sc_engine_table_ref(cf_sc_engine *e, const char *ks, const char *name) {
    for (size_t i = 0; i < e->ntrefs; i++)
        if (strcmp(e->trefs[i].ks, ks) == 0 && strcmp(e->trefs[i].name, name) == 0) return (uint32_t)i;
    if (e->ntrefs == e->captrefs) e->trefs = cf_xrealloc(e->trefs, (e->captrefs = e->captrefs ? e->captrefs * 2 : 16) * sizeof *e->trefs);
    e->trefs[e->ntrefs].ks = cf_xstrdup(ks);
    e->trefs[e->ntrefs].name = cf_xstrdup(name);
    return (uint32_t)e->ntrefs++;
}

/* Replicas the level needs for a keyspace, and after how many copies a
 * published digest is forgotten. */
static cf_code keyspace_levels(cf_sc_engine *e, const char *ks, int *required, int *complete, cf_err *err) {
    for (size_t i = 0; i < e->nksr; i++)
        if (strcmp(e->ksr[i].ks, ks) == 0) {
            *required = e->ksr[i].required;
            *complete = e->ksr[i].complete;
            return CF_OK;
        }
    int rf = e->rf;
    if (rf <= 0) {
        const cf_cass_keyspace *k = cf_cass_schema_keyspace(e->schema, ks);
        cf_code rc = cf_sc_keyspace_rf(k ? k->replication : NULL, e->datacenter, &rf, err);
        if (rc) {
            cf_err_where(err, "keyspace %s", ks);
            return rc;
        }
    }
    int req = cf_sc_cl_required(e->cl, rf);
    int have = (int)e->nreps;
    if (req == 0 || req > have) {
        cf_err_set(err, CF_ERR_CONFIG, "consistency level %s cannot be met for keyspace %s", cf_sc_cl_name(e->cl), ks);
        cf_err_detail(err, "replication factor %d, %d replica director%s read; the level needs %s", rf, have,
                      have == 1 ? "y" : "ies", req ? "more replicas than are read" : "more replicas than the keyspace has");
        cf_err_hint(err, "Give every replica's cdc_raw directory, or a level the replicas read can meet (e.g. ONE).");
        return CF_ERR_CONFIG;
    }
    if (e->nksr == e->capksr) e->ksr = cf_xrealloc(e->ksr, (e->capksr = e->capksr ? e->capksr * 2 : 8) * sizeof *e->ksr);
    e->ksr[e->nksr].ks = cf_xstrdup(ks);
    e->ksr[e->nksr].required = req;
    e->ksr[e->nksr].complete = rf < have ? rf : have;
    *required = req;
    *complete = e->ksr[e->nksr].complete;
    e->nksr++;
    return CF_OK;
}

/* Said once per table version: what is published and what is not. */
static cf_code note_table(cf_sc_engine *e, const cf_cass_table *t, const cf_sc_table_schemas **ts, cf_err *err) {
    cf_code rc = cf_sc_events_table(e->ev, t, ts, err);
    if (rc) return rc;
    for (size_t i = 0; i < e->nnoted; i++)
        if (e->noted[i] == t) return CF_OK;
    if (e->nnoted == e->capnoted) e->noted = cf_xrealloc(e->noted, (e->capnoted = e->capnoted ? e->capnoted * 2 : 16) * sizeof *e->noted);
    e->noted[e->nnoted++] = t;
    int req = 0, comp = 0;
    if ((*ts)->supported) {
        rc = keyspace_levels(e, t->keyspace, &req, &comp, err);
        if (rc) return rc;
        CF_INFO(COMP, "%s.%s: published to %s at %s (%d of the replicas read), schema %s (id %d)", t->keyspace, t->name,
                (*ts)->topic, cf_sc_cl_name(e->cl), req, (*ts)->uuid, (*ts)->id);
    }
    if ((*ts)->notes[0]) {
        const char *p = (*ts)->notes;
        while (*p) {
            size_t l = strcspn(p, "\n");
            CF_WARN(COMP, "%s.%s: %.*s", t->keyspace, t->name, (int)l, p);
            p += l + (p[l] ? 1 : 0);
        }
    }
    return CF_OK;
}

/* The decisions for one table version: publish or not, the levels, its
 * number for the pending digests. Cached: a copy must not cost string
 * compares (the table ids repeat, entry after entry). */
static cf_code table_info(cf_sc_engine *e, const cf_cass_table *t, struct tcache **out, cf_err *err) {
    if (e->tc_last < e->ntc && e->tc[e->tc_last].t == t) {
        *out = &e->tc[e->tc_last];
        return CF_OK;
    }
    for (size_t i = 0; i < e->ntc; i++)
        if (e->tc[i].t == t) {
            e->tc_last = i;
            *out = &e->tc[i];
            return CF_OK;
        }
    struct tcache c = {.t = t};
    if (t->cdc && included(e, t)) {
        const cf_sc_table_schemas *ts;
        cf_code rc = note_table(e, t, &ts, err);
        if (rc) return rc;
        if (ts->supported) {
            rc = keyspace_levels(e, t->keyspace, &c.required, &c.complete, err);
            if (rc) return rc;
            c.publish = true;
            c.tref = cf_sc_engine_table_ref(e, t->keyspace, t->name);
        }
    }
    if (e->ntc == e->captc) e->tc = cf_xrealloc(e->tc, (e->captc = e->captc ? e->captc * 2 : 16) * sizeof *e->tc);
    e->tc[e->ntc] = c;
    e->tc_last = e->ntc;
    *out = &e->tc[e->ntc++];
    return CF_OK;
}

/* ---------------- one entry ---------------- */

static void note_unknown(cf_sc_engine *e, const uint8_t id[16], const replica *r, int64_t pos) {
    for (size_t i = 0; i < e->nunknown; i++)
        if (memcmp(e->unknown[i], id, 16) == 0) return;
    if (e->nunknown == e->capunknown)
        e->unknown = cf_xrealloc(e->unknown, (e->capunknown = e->capunknown ? e->capunknown * 2 : 16) * sizeof *e->unknown);
    memcpy(e->unknown[e->nunknown++], id, 16);
    char s[37];
    cf_cass_uuid_format(id, s);
    CF_INFO(COMP, "mutations of table id %s are skipped: not in the schema%s (first at %s %s@%lld)", s,
            e->has_cql ? " read over CQL" : " given", r->name, r->seg ? cf_cass_segment_name(r->seg) : "?",
            (long long)pos);
}

/* Can the cached results of an entry stand for this copy? Not when an
 * update that is published here now was not digested then (the owned ranges
 * changed since). */
static bool cached_usable(const cf_sc_engine *e, const cf_sc_copy_update *cu, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!cu[i].digested && e->tc[cu[i].tc].publish && cf_sc_ranges_contain(&e->ranges, cu[i].token)) return false;
    return true;
}

static cf_code decode_entry(cf_sc_engine *e, replica *r, const cf_cass_entry *en, cf_cass_mutation **m,
                            uint8_t unknown[16], cf_err *perr) {
    cf_code rc = cf_cass_decode_mutation(e->dec, en->data, en->len, r->mv, m, unknown, perr);
    if ((rc == CF_ERR_NOT_FOUND || rc == CF_ERR_SCHEMA) && refresh_schema(e, rc == CF_ERR_NOT_FOUND ? "unknown table id"
                                                                                                 : "unknown column"))
        rc = cf_cass_decode_mutation(e->dec, en->data, en->len, r->mv, m, unknown, perr);
    return rc;
}

static cf_code process_entry(cf_sc_engine *e, replica *r, const cf_cass_entry *en, const cf_sc_emitter *em,
                             size_t *nev, cf_err *err) {
    BUMP(entries);
    /* a copy whose bytes an earlier copy had: its results, without decoding
     * or digesting (copies.c); decoded below only if it publishes */
    size_t n = 0;
    const cf_sc_copy_update *cu = cf_sc_copies_find(e->copies, en->crc, r->mv, en->data, en->len, &n);
    if (cu && !cached_usable(e, cu, n)) cu = NULL;
    if (cu) BUMP(copy_hits);
    cf_cass_mutation *m = NULL;
    uint8_t unknown[16];
    cf_err perr;
    cf_code rc = CF_OK;
    bool cache = false; /* the results go into the copy cache */
    if (!cu) {
        rc = decode_entry(e, r, en, &m, unknown, &perr);
        if (e->halted) { /* not processed: read again at the next start (the state stored stays before it) */
            return CF_ERR_AGAIN;
        }
        if (rc == CF_ERR_NOT_FOUND) {
            BUMP(unknown_tables);
            note_unknown(e, unknown, r, en->position);
            return CF_OK;
        }
        if (rc) {
            char where[256];
            snprintf(where, sizeof where, "%s", perr.where);
            cf_err_where(&perr, "replica %s, %s@%lld, %s", r->name, cf_cass_segment_name(r->seg),
                         (long long)en->position, where);
            if (rc == CF_ERR_CORRUPT) BUMP(corrupt);
            BUMP(dropped);
            cf_code x = report(e, &perr);
            if (x) {
                *err = perr;
                return x;
            }
        }
        n = m->n_updates;
        cache = rc == CF_OK;
        if (cache && e->cap_cu < n) e->cu = cf_xrealloc(e->cu, (e->cap_cu = n) * sizeof *e->cu);
    }
    int64_t clock = r->clock;
    for (size_t i = 0; i < n; i++) {
        const cf_cass_update *u = m ? &m->updates[i] : NULL;
        struct tcache *tc;
        int64_t token;
        if (u) {
            rc = table_info(e, u->table, &tc, err);
            if (rc) return rc;
            token = u->token;
            if (cache) e->cu[i] = (cf_sc_copy_update){.token = token, .tc = (uint32_t)(tc - e->tc)};
        } else {
            tc = &e->tc[cu[i].tc];
            token = cu[i].token;
        }
        if (!tc->publish) { /* cdc = false, not included, or a counter table */
            BUMP(skipped);
            continue;
        }
        if (!cf_sc_ranges_contain(&e->ranges, token)) {
            BUMP(not_owned);
            continue;
        }
        if (e->nfloors && cf_sc_engine_floor_done(e, r->index, r->seg_id, en->position, token)) {
            e->floor_skipped++; /* the previous owner of this token processed it */
            continue;
        }
        BUMP(copies);
        uint8_t dg[CF_SC_DIGEST_LEN];
        int64_t max_ts;
        if (u) {
            cf_sc_digest(e->dg, u, dg, &max_ts);
            if (cache) {
                memcpy(e->cu[i].dg, dg, sizeof dg);
                e->cu[i].max_ts = max_ts;
                e->cu[i].digested = true;
            }
        } else {
            memcpy(dg, cu[i].dg, sizeof dg);
            max_ts = cu[i].max_ts;
        }
        if (max_ts != CF_CASS_LIVE_TS && max_ts > clock) clock = max_ts;
        cf_sc_verdict v;
        rc = cf_sc_dedup_add(e->dd, dg, r->index, tc->required, tc->complete, e->step_now_ms, tc->tref, token, &v,
                             err);
        if (rc) {
            cf_err_where(err, "replica %s, %s@%lld", r->name, cf_cass_segment_name(r->seg), (long long)en->position);
            return rc;
        }
        if (v == CF_SC_DUPLICATE) {
            BUMP(duplicates);
            continue;
        }
        if (v == CF_SC_WAIT) continue;
        BUMP(published);
        atomic_store(&e->st.last_published_ms, (uint64_t)e->step_now_ms);
        size_t k = 0;
        cf_err berr;
        if (!u) { /* a cached copy publishes: decode it now (the same bytes and schema gave the results) */
            rc = cf_cass_decode_mutation(e->dec, en->data, en->len, r->mv, &m, unknown, &berr);
            if (rc == CF_OK && m->n_updates == n) u = &m->updates[i];
            else if (rc == CF_OK) {
                rc = cf_err_set(&berr, CF_ERR_INTERNAL, "a cached copy decoded to %zu partition updates, not %zu",
                                m->n_updates, n);
            }
        }
        if (u) rc = cf_sc_events_build(e->ev, u, em, &k, &berr);
        *nev += k;
        ADD(events, k);
        if (max_ts != CF_CASS_LIVE_TS) cf_sc_engine_observe_latency(e, e->step_now_ms * 1000 - max_ts);
        if (rc) {
            char where[256];
            snprintf(where, sizeof where, "%s", berr.where);
            cf_err_where(&berr, "%s; replica %s, %s@%lld", where, r->name, cf_cass_segment_name(r->seg),
                         (long long)en->position);
            BUMP(dropped);
            cf_code x = report(e, &berr);
            if (x) {
                *err = berr;
                return x;
            }
        }
    }
    r->clock = clock;
    if (cache) cf_sc_copies_put(e->copies, en->crc, r->mv, en->data, en->len, e->cu, n);
    return CF_OK;
}

/* ---------------- one replica ---------------- */

static void close_segment(replica *r) {
    cf_cass_segment_destroy(r->seg);
    r->seg = NULL;
    free(r->seg_path);
    free(r->idx_path);
    r->seg_path = r->idx_path = NULL;
}

static void finish_segment(cf_sc_engine *e, replica *r, const char *why) {
    CF_DEBUG(COMP, "replica %s: %s finished (%s)", r->name, cf_cass_segment_name(r->seg), why);
    r->m_seg = r->seg_id;
    r->m_done = true;
    r->m_pos = 0;
    close_segment(r);
    update_totals(e);
}

/* Open the next segment to read. CF_ERR_AGAIN: none yet. */
static cf_code open_next(cf_sc_engine *e, replica *r, cf_err *err) {
    if (r->dirty) {
        cf_code rc = list_dir(r, err);
        if (rc) return rc;
        r->dirty = false;
        update_totals(e);
    }
    for (size_t k = 0; k < r->nsegs; k++) {
        segref *s = &r->segs[k];
        if (seg_finished(r, s->id)) continue;
        if (!s->has_idx) {
            bool newer = false;
            for (size_t j = k + 1; j < r->nsegs && !newer; j++) newer = r->segs[j].has_idx;
            if (!newer && !e->once) {
                /* maybe its index was written since the listing */
                char *idx = cf_cass_cdc_idx_path(s->path);
                s->has_idx = access(idx, F_OK) == 0;
                free(idx);
                if (!s->has_idx) return CF_ERR_AGAIN;
            } else if (!newer) {
                return CF_ERR_AGAIN;
            } else {
                r->m_seg = s->id; /* no CDC data can reach it any more */
                r->m_done = true;
                r->m_pos = 0;
                continue;
            }
        }
        cf_cass_segment_opts so = {.key = e->key, .key_len = e->key_len};
        cf_err perr;
        cf_code rc = cf_cass_segment_open(s->path, &so, &r->seg, &perr);
        if (rc == CF_ERR_NOT_FOUND) { /* gone since the listing */
            r->dirty = true;
            return CF_ERR_AGAIN;
        }
        if (rc == CF_ERR_CONFIG || rc == CF_ERR_IO) {
            *err = perr;
            return rc;
        }
        if (rc) { /* a bad header: the segment cannot be read */
            cf_err_where(&perr, "replica %s, %s", r->name, s->path);
            BUMP(corrupt);
            BUMP(dropped);
            cf_code x = report(e, &perr);
            if (x) {
                *err = perr;
                return x;
            }
            r->m_seg = s->id;
            r->m_done = true;
            r->m_pos = 0;
            continue;
        }
        r->seg_id = s->id;
        r->seg_path = cf_xstrdup(s->path);
        r->idx_path = cf_cass_cdc_idx_path(s->path);
        r->mv = cf_cass_segment_get_info(r->seg)->messaging_version;
        r->skip_before = (s->id == r->m_seg && !r->m_done) ? r->m_pos : 0;
        r->limit = 0;
        r->completed = false;
        rc = cf_cass_cdc_idx_read(r->idx_path, 3, 2, &r->limit, &r->completed, &perr);
        if (rc && rc != CF_ERR_AGAIN) {
            if (rc == CF_ERR_NOT_FOUND) { /* removed meanwhile */
                close_segment(r);
                r->dirty = true;
                return CF_ERR_AGAIN;
            }
            cf_err_where(&perr, "replica %s", r->name);
            BUMP(corrupt);
            cf_code x = report(e, &perr);
            if (x) {
                *err = perr;
                return x;
            }
        }
        cf_cass_segment_set_limit(r->seg, r->limit);
        /* COMPLETED, or --once (the limit read now is never raised): the
         * reader only reads what does not change any more: read it ahead */
        if (r->completed || e->once) cf_cass_segment_set_complete(r->seg);
        if (!(s->id == r->m_seg && !r->m_done)) { /* from its start */
            r->m_seg = s->id;
            r->m_pos = 0;
            r->m_done = false;
        }
        return CF_OK;
    }
    return CF_ERR_AGAIN;
}

/* Has this replica a segment with an index newer than the one being read? */
static bool newer_indexed(const replica *r) {
    for (size_t k = 0; k < r->nsegs; k++)
        if (r->segs[k].id > r->seg_id && r->segs[k].has_idx) return true;
    return false;
}

/* Read up to CHUNK entries of one replica. CF_ERR_AGAIN: nothing to read now. */
static cf_code replica_step(cf_sc_engine *e, replica *r, const cf_sc_emitter *em, size_t budget, size_t *nev,
                            size_t *read, cf_err *err) {
    size_t n = 0;
    while (n < CHUNK && *nev < budget) {
        if (!r->seg) {
            cf_code rc = open_next(e, r, err);
            if (rc == CF_ERR_AGAIN) {
                r->idle = true;
                break;
            }
            if (rc) return rc;
        }
        cf_cass_entry en;
        cf_err perr;
        cf_code rc = cf_cass_segment_next(r->seg, &en, &perr);
        if (rc == CF_OK) {
            n++;
            if (en.position < r->skip_before) continue; /* processed before the restart */
            rc = process_entry(e, r, &en, em, nev, err);
            if (rc == CF_ERR_AGAIN && e->halted) return CF_OK; /* nothing more: cf_sc_engine_step says so */
            if (rc) return rc;
            r->m_pos = en.end_position;
            continue;
        }
        if (rc == CF_ERR_CORRUPT) {
            cf_err_where_prefix(&perr, r->name);
            BUMP(corrupt);
            BUMP(dropped);
            cf_code x = report(e, &perr);
            if (x) {
                *err = perr;
                return x;
            }
            continue;
        }
        if (rc != CF_ERR_AGAIN && rc != CF_ERR_EOF) {
            cf_err_where_prefix(&perr, r->name);
            *err = perr;
            return rc;
        }
        /* at the index's offset (AGAIN) or at the segment's end (EOF) */
        if (r->completed) {
            finish_segment(e, r, "index says COMPLETED, read to its offset");
            continue;
        }
        int64_t off;
        bool done;
        cf_code ir = e->once ? CF_ERR_AGAIN : cf_cass_cdc_idx_read(r->idx_path, 3, 2, &off, &done, &perr);
        if (ir == CF_ERR_NOT_FOUND) {
            CF_WARN(COMP, "replica %s: the index of %s disappeared at offset %lld; the segment is taken as finished",
                    r->name, cf_cass_segment_name(r->seg), (long long)r->limit);
            finish_segment(e, r, "index removed");
            continue;
        }
        if (ir == CF_OK && (off > r->limit || done)) {
            if (off < r->limit) off = r->limit;
            r->limit = off;
            r->completed = done;
            if (rc == CF_ERR_EOF) { /* the reader ended: open again and skip what was read */
                close_segment(r);
                continue;
            }
            cf_cass_segment_set_limit(r->seg, off);
            if (done) cf_cass_segment_set_complete(r->seg);
            continue;
        }
        if (newer_indexed(r)) { /* Cassandra moved on without writing COMPLETED (a crash) */
            CF_WARN(COMP, "replica %s: %s has no COMPLETED in its index but a newer segment has CDC data; taken as "
                          "finished at offset %lld", r->name, cf_cass_segment_name(r->seg), (long long)r->limit);
            finish_segment(e, r, "a newer segment exists");
            continue;
        }
        if (rc == CF_ERR_EOF) close_segment(r);
        r->idle = true;
        break;
    }
    *read += n;
    return CF_OK;
}

/* ---------------- expiry ---------------- */

typedef struct dropctx {
    cf_sc_engine *e;
    size_t logged, n;
} dropctx;

static void on_dropped(void *arg, const cf_sc_pending *p) {
    dropctx *d = arg;
    cf_sc_engine *e = d->e;
    d->n++;
    if (d->logged >= DROP_LOG_MAX) return;
    d->logged++;
    const char *ks = p->table < e->ntrefs ? e->trefs[p->table].ks : "?";
    const char *tb = p->table < e->ntrefs ? e->trefs[p->table].name : "?";
    CF_WARN(COMP, "change dropped: %s.%s token %lld: %d of the replicas wrote it within %lld ms, %s needs more "
                  "(first read %lld ms ago)",
            ks, tb, (long long)p->token, __builtin_popcountll(p->replicas), (long long)e->timeout_ms,
            cf_sc_cl_name(e->cl), (long long)(now_ms(e) - p->first_seen_ms));
}

void cf_sc_engine_expire(cf_sc_engine *e) {
    dropctx d = {e, 0, 0};
    cf_sc_dedup_expire(e->dd, now_ms(e), e->timeout_ms, on_dropped, &d);
    if (d.n > d.logged)
        CF_WARN(COMP, "%zu more changes dropped for the same reason (consistency level %s not reached within %lld ms)",
                d.n - d.logged, cf_sc_cl_name(e->cl), (long long)e->timeout_ms);
    ADD(consistency_failures, d.n);
    ADD(dropped, d.n);
    atomic_store(&e->st.pending, cf_sc_dedup_count(e->dd));
    atomic_store(&e->st.unpublished, cf_sc_dedup_unpublished(e->dd));
    e->last_expire_ms = now_ms(e);
}

/* ---------------- step ---------------- */

cf_code cf_sc_engine_step(cf_sc_engine *e, const cf_sc_emitter *em, size_t max_events, size_t *events, cf_err *err) {
    *events = 0;
    if (e->halted) return CF_ERR_AGAIN;
    if (drain_inotify(e)) {
        for (size_t i = 0; i < e->nreps; i++)
            if (e->reps[i].dirty && !e->reps[i].seg) e->reps[i].idle = false;
    }
    if (!e->once && cf_sc_mono_us() - e->last_list_us >= (int64_t)e->poll_ms * 1000) {
        cf_code rc = relist(e, err);
        if (rc) return rc;
    }
    poll_schema_events(e);
    int64_t t = now_ms(e);
    e->step_now_ms = t;
    if (t - e->last_expire_ms >= (e->timeout_ms < 4000 ? e->timeout_ms / 4 + 1 : 1000)) cf_sc_engine_expire(e);
    size_t read = 0;
    bool any = false;
    while (*events < max_events && read < STEP_ENTRIES) {
        replica *best = NULL;
        for (size_t i = 0; i < e->nreps; i++) {
            replica *r = &e->reps[i];
            if (r->idle) continue;
            if (!best || r->clock < best->clock) best = r;
        }
        if (!best) break;
        size_t before = read;
        cf_code rc = replica_step(e, best, em, max_events, events, &read, err);
        if (rc) return rc;
        if (e->halted) break;
        if (read > before) any = true;
    }
    atomic_store(&e->st.pending, cf_sc_dedup_count(e->dd));
    atomic_store(&e->st.unpublished, cf_sc_dedup_unpublished(e->dd));
    cf_sc_engine_tick_rate(e);
    if (any || *events) return CF_OK;
    for (size_t i = 0; i < e->nreps; i++)
        if (!e->reps[i].idle) return CF_OK;
    if (e->once) { /* the last word on digests that timed out, even for a run that read nothing new */
        update_totals(e);
        cf_sc_engine_expire(e);
        return CF_ERR_EOF;
    }
    /* nothing to read: the copy cache gives its memory back (an idle sidecar
     * is meant to be small; the next copies of a write come soon after the
     * first, so little is lost) */
    cf_sc_copies_release(e->copies);
    return CF_ERR_AGAIN;
}

bool cf_sc_engine_halted(const cf_sc_engine *e) { return e->halted; }

/* ---------------- cleanup ---------------- */

static cf_code mkdir_p(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) && errno != EEXIST) return CF_ERR_IO;
            *p = '/';
        }
    if (mkdir(tmp, 0755) && errno != EEXIST) return CF_ERR_IO;
    return CF_OK;
}

static void clean_one(cf_sc_engine *e, replica *r, const segref *s) {
    char *idx = cf_cass_cdc_idx_path(s->path);
    const char *what = "deleted";
    if (e->cleanup == CF_SC_CLEANUP_ARCHIVE) {
        cf_buf dir = CF_BUF_INIT;
        cf_buf_printf(&dir, "%s/", e->archive_dir);
        cf_sc_avro_name(r->name, &dir); /* a file name from the replica name */
        if (mkdir_p(dir.data)) {
            CF_WARN(COMP, "cannot create archive directory %s: %s; %s stays in cdc_raw", dir.data, strerror(errno), s->path);
            cf_buf_free(&dir);
            free(idx);
            return;
        }
        const char *files[2] = {s->path, idx};
        for (int i = 0; i < 2; i++) {
            const char *base = strrchr(files[i], '/');
            cf_buf to = CF_BUF_INIT;
            cf_buf_printf(&to, "%s/%s", dir.data, base ? base + 1 : files[i]);
            if (rename(files[i], to.data) && errno != ENOENT) {
                /* another file system: copy is not done here, the operator chose the directory */
                CF_WARN(COMP, "cannot move %s to %s: %s", files[i], to.data, strerror(errno));
            }
            cf_buf_free(&to);
        }
        cf_buf_free(&dir);
        what = "archived";
    } else {
        if (unlink(s->path) && errno != ENOENT) CF_WARN(COMP, "cannot delete %s: %s", s->path, strerror(errno));
        if (unlink(idx) && errno != ENOENT) CF_WARN(COMP, "cannot delete %s: %s", idx, strerror(errno));
    }
    CF_DEBUG(COMP, "replica %s: %s %s (finished, its changes acknowledged and in the stored state)", r->name, what,
             s->path);
    e->cleaned_segments++;
    e->cleaned_bytes += (uint64_t)s->size;
    BUMP(cleaned);
    free(idx);
}

void cf_sc_engine_cleanup_through(cf_sc_engine *e, const char *name, int64_t seg, bool done) {
    if (e->cleanup == CF_SC_CLEANUP_NONE) return;
    for (size_t i = 0; i < e->nreps; i++) {
        replica *r = &e->reps[i];
        if (strcmp(r->name, name) != 0) continue;
        size_t w = 0;
        for (size_t k = 0; k < r->nsegs; k++) {
            segref *s = &r->segs[k];
            bool fin = s->id < seg || (s->id == seg && done);
            bool open = r->seg && r->seg_id == s->id;
            if (fin && !open && s->has_idx) {
                clean_one(e, r, s);
                free(s->path);
                continue;
            }
            r->segs[w++] = *s;
        }
        r->nsegs = w;
    }
    update_totals(e);
}

/* ---------------- lifetime ---------------- */

static char *dup_or_null(const char *s) { return s ? cf_xstrdup(s) : NULL; }

cf_code cf_sc_engine_new(const cf_sc_engine_opts *o, cf_sc_engine **out, cf_err *err) {
    *out = NULL;
    if (o->n_dirs == 0 || o->n_dirs > CF_SC_MAX_REPLICAS) {
        cf_err_set(err, CF_ERR_CONFIG, "%s replica directories given", o->n_dirs ? "more than 64" : "no");
        cf_err_hint(err, "Give the cdc_raw directory of each replica (1 to 64).");
        return CF_ERR_CONFIG;
    }
    if (o->cleanup == CF_SC_CLEANUP_ARCHIVE && (!o->archive_dir || !*o->archive_dir)) {
        cf_err_set(err, CF_ERR_CONFIG, "segment cleanup \"archive\" needs an archive directory");
        return CF_ERR_CONFIG;
    }
    cf_sc_engine *e = cf_xcalloc(1, sizeof *e);
    e->ifd = -1;
    e->schema = o->schema;
    e->cl = o->cl;
    e->rf = o->rf;
    e->datacenter = dup_or_null(o->datacenter);
    e->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 60000;
    e->once = o->once;
    e->cleanup = o->cleanup;
    e->archive_dir = dup_or_null(o->archive_dir);
    if (o->key && o->key_len <= sizeof e->key) {
        memcpy(e->key, o->key, o->key_len);
        e->key_len = o->key_len;
    }
    e->poll_ms = o->poll_ms > 0 ? o->poll_ms : 1000;
    e->report = o->report;
    e->report_arg = o->report_arg;
    e->now_ms = o->now_ms;
    e->clock_arg = o->clock_arg;
    if (o->cql) {
        e->has_cql = true;
        e->cqlopt = *o->cql;
        e->cql_host = dup_or_null(o->cql->host);
        e->cql_user = dup_or_null(o->cql->username);
        e->cql_pass = dup_or_null(o->cql->password);
        e->cqlopt.host = e->cql_host;
        e->cqlopt.username = e->cql_user;
        e->cqlopt.password = e->cql_pass;
        e->cqlopt.record_path = NULL;
    }
    cf_code rc = is_ring(o->ranges) ? ring_ranges(e, o->ring_node, err) : cf_sc_ranges_parse(o->ranges, &e->ranges, err);
    if (rc) {
        cf_sc_engine_destroy(e);
        return rc;
    }
    for (size_t i = 0; i < o->n_tables; i++) {
        if (!strchr(o->tables[i], '.')) {
            cf_err_set(err, CF_ERR_CONFIG, "table \"%s\" is not keyspace.table", o->tables[i]);
            cf_sc_engine_destroy(e);
            return CF_ERR_CONFIG;
        }
    }
    e->tables = cf_xcalloc(o->n_tables + 1, sizeof *e->tables);
    for (size_t i = 0; i < o->n_tables; i++) e->tables[i] = cf_xstrdup(o->tables[i]);
    e->ntables = o->n_tables;
    e->dec = cf_cass_decoder_new(e->schema);
    cf_cass_decoder_set_quiet_unknown(e->dec, true); /* counted (note_unknown), the message never used */
    e->dg = cf_sc_digester_new();
    e->copies = cf_sc_copies_new();
    e->dd = cf_sc_dedup_new(o->max_pending ? o->max_pending : 400000);
    e->ev = cf_sc_events_new(o->events);
    e->reps = cf_xcalloc(o->n_dirs, sizeof *e->reps);
    e->nreps = o->n_dirs;
    for (size_t i = 0; i < o->n_dirs; i++) {
        replica *r = &e->reps[i];
        r->index = (int)i;
        r->dir = cf_xstrdup(o->dirs[i]);
        size_t l = strlen(r->dir);
        while (l > 1 && r->dir[l - 1] == '/') r->dir[--l] = 0;
        r->name = cf_xstrdup(o->names && o->names[i] ? o->names[i] : r->dir);
        r->wd = -1;
        r->clock = INT64_MIN;
        r->m_seg = -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(e->reps[j].name, r->name) == 0) {
                cf_err_set(err, CF_ERR_CONFIG, "two replicas named \"%s\"", r->name);
                cf_err_hint(err, "Each replica directory is given once, with its own name.");
                cf_sc_engine_destroy(e);
                return CF_ERR_CONFIG;
            }
    }
    if (e->has_cql) {
        /* the first schema: the one given is kept if the node cannot be reached now */
        if (!refresh_schema(e, "start") && cf_cass_schema_table_count(e->schema) == 0) {
            cf_err_set(err, CF_ERR_TRANSPORT, "cannot read the schema over CQL from %s:%d",
                       e->cqlopt.host ? e->cqlopt.host : "127.0.0.1", e->cqlopt.port ? e->cqlopt.port : 9042);
            cf_err_hint(err, "Check cassandra.cql.host/port and credentials, or give the schema as a file.");
            cf_sc_engine_destroy(e);
            return CF_ERR_TRANSPORT;
        }
    }
    /* what will be published, said once at start; levels that cannot be met are errors now */
    for (size_t i = 0; i < cf_cass_schema_table_count(e->schema); i++) {
        const cf_cass_table *t = cf_cass_schema_table_at(e->schema, i);
        if (!t->cdc || !included(e, t) || t->is_view) continue;
        const cf_sc_table_schemas *ts;
        rc = note_table(e, t, &ts, err);
        if (rc) {
            cf_sc_engine_destroy(e);
            return rc;
        }
    }
    rc = relist(e, err);
    if (rc) {
        cf_sc_engine_destroy(e);
        return rc;
    }
    watch_dirs(e);
    e->last_expire_ms = 0; /* the first step expires what a restored state held too long */
    e->rate_t0_us = cf_sc_mono_us();
    *out = e;
    return CF_OK;
}

void cf_sc_engine_destroy(cf_sc_engine *e) {
    if (!e) return;
    for (size_t i = 0; i < e->nreps; i++) {
        replica *r = &e->reps[i];
        close_segment(r);
        free_segs(r->segs, r->nsegs);
        free(r->dir);
        free(r->name);
    }
    free(e->reps);
    if (e->ifd >= 0) close(e->ifd);
    cf_cql_close(e->cql);
    free(e->cql_host);
    free(e->cql_user);
    free(e->cql_pass);
    cf_cass_decoder_destroy(e->dec);
    cf_sc_digester_destroy(e->dg);
    cf_sc_copies_destroy(e->copies);
    free(e->cu);
    cf_sc_dedup_destroy(e->dd);
    cf_sc_events_destroy(e->ev);
    cf_sc_ranges_free(&e->ranges);
    for (size_t i = 0; i < e->ntables; i++) free(e->tables[i]);
    free(e->tables);
    for (size_t i = 0; i < e->ntrefs; i++) {
        free(e->trefs[i].ks);
        free(e->trefs[i].name);
    }
    free(e->trefs);
    for (size_t i = 0; i < e->nksr; i++) free(e->ksr[i].ks);
    free(e->ksr);
    free(e->noted);
    free(e->tc);
    free(e->unknown);
    free(e->datacenter);
    free(e->archive_dir);
    cf_sc_engine_floors_free(e);
    free(e);
}

const cf_sc_ranges *cf_sc_engine_ranges(const cf_sc_engine *e) { return &e->ranges; }

void cf_sc_engine_stats(const cf_sc_engine *e, cf_sc_stats *o) {
    cf_sc_engine *x = (cf_sc_engine *)e;
#define LOAD(f) o->f = atomic_load(&x->st.f)
    LOAD(entries), LOAD(copies), LOAD(published), LOAD(events), LOAD(duplicates), LOAD(consistency_failures);
    LOAD(dropped), LOAD(not_owned), LOAD(skipped), LOAD(unknown_tables), LOAD(corrupt), LOAD(schema_refreshes);
    LOAD(pending), LOAD(segments_done), LOAD(segments_total), LOAD(bytes_done), LOAD(bytes_total), LOAD(read_lag);
    LOAD(cleaned), LOAD(unpublished), LOAD(copy_hits);
#undef LOAD
}
