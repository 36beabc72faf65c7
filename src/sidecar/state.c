/*
 * state.c - the engine's state as a source offset (see cdcflow/sidecar.h):
 *
 *   source partition {"cassandra-cdc": <job>}
 *   source offset    {"version": 1, "replicas": N,
 *                     "r<i>.name": ..., "r<i>.segment": id, "r<i>.position": p,
 *                     "r<i>.done": 0|1,           (per replica, i = 0..N-1)
 *                     "ranges": "(a,b];..." | "all",
 *                     "pending.count": n, "pending": "<base64>",
 *                     "published": total}
 *
 * Connect's offsets hold strings and integers only, so the pending digests
 * are one binary blob in base64 (little-endian, versioned):
 *   "CFP1", uvarint tables, per table uvarint-length keyspace and name,
 *   uvarint entries, per entry: digest (16), replica mask (u64, bit i = the
 *   replica "r<i>" of this offset), copies (u32), table (uvarint), token
 *   (i64), first read (i64, wall clock ms), flags (u8: 1 = published).
 * Replica bits refer to the offset's own replica list, so a restart with
 * the replicas listed in another order (or one more) maps them by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/log.h"
#include "cdcflow/text.h"
#include "sidecar_engine.h"

void cf_sc_engine_snapshot_floors(cf_sc_engine *e, cf_value *m);

#define COMP "sidecar"
#define STATE_VERSION 1

static void put_uv(cf_buf *b, uint64_t v) {
    while (v >= 0x80) {
        cf_buf_append_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    cf_buf_append_byte(b, (uint8_t)v);
}

static void put_le(cf_buf *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) cf_buf_append_byte(b, (uint8_t)(v >> (8 * i)));
}

static void put_str(cf_buf *b, const char *s) {
    size_t n = strlen(s);
    put_uv(b, n);
    cf_buf_append(b, s, n);
}

typedef struct rd {
    const uint8_t *p, *end;
    bool bad;
} rd;

static uint64_t get_uv(rd *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return v;
    }
    r->bad = true;
    return 0;
}

static uint64_t get_le(rd *r, int n) {
    if (r->end - r->p < n) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    return v;
}

static char *get_str(rd *r) {
    uint64_t n = get_uv(r);
    if (r->bad || (uint64_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    char *s = cf_xstrndup((const char *)r->p, (size_t)n);
    r->p += n;
    return s;
}

static void put_entry(void *arg, const cf_sc_pending *p) {
    cf_buf *b = arg;
    cf_buf_append(b, p->digest, CF_SC_DIGEST_LEN);
    put_le(b, p->replicas, 8);
    put_le(b, p->copies, 4);
    put_uv(b, p->table);
    put_le(b, (uint64_t)p->token, 8);
    put_le(b, (uint64_t)p->first_seen_ms, 8);
    cf_buf_append_byte(b, p->published ? 1 : 0);
}

static void put_key_long(cf_value *m, const char *k, int64_t v) {
    cf_value_map_put(m, cf_value_string(k), cf_value_int64(v));
}

static void put_key_str(cf_value *m, const char *k, const char *v) {
    cf_value_map_put(m, cf_value_string(k), cf_value_string(v));
}

cf_value *cf_sc_engine_partition(const char *job) {
    cf_value *m = cf_value_map();
    put_key_str(m, "cassandra-cdc", job);
    return m;
}

cf_value *cf_sc_engine_snapshot(cf_sc_engine *e) {
    cf_value *m = cf_value_map();
    put_key_long(m, "version", STATE_VERSION);
    put_key_long(m, "replicas", (int64_t)e->nreps);
    char k[64];
    for (size_t i = 0; i < e->nreps; i++) {
        const replica *r = &e->reps[i];
        snprintf(k, sizeof k, "r%zu.name", i);
        put_key_str(m, k, r->name);
        snprintf(k, sizeof k, "r%zu.segment", i);
        put_key_long(m, k, r->m_seg);
        snprintf(k, sizeof k, "r%zu.position", i);
        put_key_long(m, k, r->m_pos);
        snprintf(k, sizeof k, "r%zu.done", i);
        put_key_long(m, k, r->m_done ? 1 : 0);
    }
    cf_buf b = CF_BUF_INIT;
    cf_sc_ranges_format(&e->ranges, &b);
    put_key_str(m, "ranges", b.data);
    cf_buf_reset(&b);
    cf_buf_append(&b, "CFP1", 4);
    put_uv(&b, e->ntrefs);
    for (size_t i = 0; i < e->ntrefs; i++) {
        put_str(&b, e->trefs[i].ks);
        put_str(&b, e->trefs[i].name);
    }
    put_uv(&b, cf_sc_dedup_count(e->dd));
    cf_sc_dedup_foreach(e->dd, put_entry, &b);
    cf_buf b64 = CF_BUF_INIT;
    cf_base64_encode(&b64, (const uint8_t *)b.data, b.len);
    put_key_long(m, "pending.count", (int64_t)cf_sc_dedup_count(e->dd));
    put_key_str(m, "pending", b64.data ? b64.data : "");
    put_key_long(m, "published", (int64_t)atomic_load(&e->st.published));
    cf_sc_engine_snapshot_floors(e, m);
    cf_buf_free(&b);
    cf_buf_free(&b64);
    return m;
}

static const cf_value *get(const cf_value *m, const char *k) { return cf_value_map_get_str(m, k); }

static bool get_long(const cf_value *m, const char *k, int64_t *out) {
    const cf_value *v = get(m, k);
    if (!v || (v->type != CF_INT64 && v->type != CF_INT32 && v->type != CF_INT8 && v->type != CF_INT16)) return false;
    *out = v->u.i;
    return true;
}

static const char *get_string(const cf_value *m, const char *k) {
    const cf_value *v = get(m, k);
    return v && v->type == CF_STRING ? v->u.s.ptr : NULL;
}

static cf_code bad_state(cf_err *err, const char *what) {
    cf_err_set(err, CF_ERR_CORRUPT, "stored sidecar state is unreadable: %s", what);
    cf_err_hint(err, "Remove the connector's stored offset (or its rows in the state table) to start from the "
                     "oldest segments (changes may be published again).");
    return CF_ERR_CORRUPT;
}

static uint8_t *base64_decode(const char *s, size_t *len) {
    size_t n = strlen(s);
    uint8_t *out = cf_xmalloc(n / 4 * 3 + 3);
    size_t k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '=') break;
        int d = cf_base64_digit((unsigned char)s[i]);
        if (d < 0) {
            free(out);
            return NULL;
        }
        acc = acc << 6 | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[k++] = (uint8_t)(acc >> bits);
        }
    }
    *len = k;
    return out;
}

/* ---------------- a snapshot decoded ---------------- */

typedef struct dfloor {
    int64_t lo, hi; /* linear (lo, hi] */
    sc_mark *m;     /* per name of the state */
} dfloor;

typedef struct dstate {
    size_t nrep;
    char **names;
    sc_mark *m;
    char *ranges;
    size_t nt;
    char **tks, **tns;
    size_t np, capp;
    cf_sc_pending *p; /* table: index into tks/tns; replicas: bits of names */
    size_t nf;
    dfloor *f;
    int64_t published;
} dstate;

static void dstate_free(dstate *d) {
    for (size_t i = 0; i < d->nrep; i++) free(d->names[i]);
    free(d->names);
    free(d->m);
    free(d->ranges);
    for (size_t i = 0; i < d->nt; i++) {
        free(d->tks[i]);
        free(d->tns[i]);
    }
    free(d->tks);
    free(d->tns);
    free(d->p);
    for (size_t i = 0; i < d->nf; i++) free(d->f[i].m);
    free(d->f);
    memset(d, 0, sizeof *d);
}

static void push_pending(dstate *d, const cf_sc_pending *p) {
    if (d->np == d->capp) d->p = cf_xrealloc(d->p, (d->capp = d->capp ? d->capp * 2 : 64) * sizeof *d->p);
    d->p[d->np++] = *p;
}

static size_t add_table(dstate *d, const char *ks, const char *name) {
    for (size_t i = 0; i < d->nt; i++)
        if (strcmp(d->tks[i], ks) == 0 && strcmp(d->tns[i], name) == 0) return i;
    d->tks = cf_xrealloc(d->tks, (d->nt + 1) * sizeof *d->tks);
    d->tns = cf_xrealloc(d->tns, (d->nt + 1) * sizeof *d->tns);
    d->tks[d->nt] = cf_xstrdup(ks);
    d->tns[d->nt] = cf_xstrdup(name);
    return d->nt++;
}

static size_t add_name(dstate *d, const char *name) {
    for (size_t i = 0; i < d->nrep; i++)
        if (strcmp(d->names[i], name) == 0) return i;
    d->names = cf_xrealloc(d->names, (d->nrep + 1) * sizeof *d->names);
    d->m = cf_xrealloc(d->m, (d->nrep + 1) * sizeof *d->m);
    d->names[d->nrep] = cf_xstrdup(name);
    d->m[d->nrep] = (sc_mark){-1, 0, false};
    return d->nrep++;
}

/* "seg:pos:done" */
static bool parse_mark(const char *s, sc_mark *m) {
    long long seg, pos;
    int done;
    if (!s || sscanf(s, "%lld:%lld:%d", &seg, &pos, &done) != 3) return false;
    *m = (sc_mark){seg, pos, done != 0};
    return true;
}

static void put_floors(cf_value *m, const dfloor *f, size_t nf, size_t nrep) {
    if (!nf) return;
    put_key_long(m, "floors", (int64_t)nf);
    char k[64], v[96];
    for (size_t i = 0; i < nf; i++) {
        snprintf(k, sizeof k, "f%zu.lo", i);
        put_key_long(m, k, f[i].lo);
        snprintf(k, sizeof k, "f%zu.hi", i);
        put_key_long(m, k, f[i].hi);
        for (size_t j = 0; j < nrep; j++) {
            if (f[i].m[j].seg < 0) continue;
            snprintf(k, sizeof k, "f%zu.r%zu", i, j);
            snprintf(v, sizeof v, "%lld:%lld:%d", (long long)f[i].m[j].seg, (long long)f[i].m[j].pos,
                     f[i].m[j].done ? 1 : 0);
            put_key_str(m, k, v);
        }
    }
}

static cf_code decode(const cf_value *m, dstate *d, cf_err *err) {
    memset(d, 0, sizeof *d);
    if (!m || m->type != CF_MAP) return bad_state(err, "not a map");
    int64_t ver, n;
    if (!get_long(m, "version", &ver) || ver != STATE_VERSION) return bad_state(err, "unknown version");
    if (!get_long(m, "replicas", &n) || n < 0 || n > CF_SC_MAX_REPLICAS) return bad_state(err, "replica count");
    char k[64];
    for (int64_t i = 0; i < n; i++) {
        snprintf(k, sizeof k, "r%lld.name", (long long)i);
        const char *name = get_string(m, k);
        int64_t seg, pos, done;
        snprintf(k, sizeof k, "r%lld.segment", (long long)i);
        bool ok = name && get_long(m, k, &seg);
        snprintf(k, sizeof k, "r%lld.position", (long long)i);
        ok = ok && get_long(m, k, &pos);
        snprintf(k, sizeof k, "r%lld.done", (long long)i);
        ok = ok && get_long(m, k, &done);
        if (!ok || add_name(d, name) != (size_t)i) {
            dstate_free(d);
            return bad_state(err, "a replica's marker");
        }
        d->m[i] = (sc_mark){seg, pos, done != 0};
    }
    const char *ranges = get_string(m, "ranges");
    d->ranges = ranges ? cf_xstrdup(ranges) : NULL;
    get_long(m, "published", &d->published);
    int64_t nf = 0;
    if (get_long(m, "floors", &nf) && nf > 0) {
        d->f = cf_xcalloc((size_t)nf, sizeof *d->f);
        for (int64_t i = 0; i < nf; i++) {
            dfloor *f = &d->f[d->nf++];
            f->m = cf_xcalloc(d->nrep + 1, sizeof *f->m);
            snprintf(k, sizeof k, "f%lld.lo", (long long)i);
            bool ok = get_long(m, k, &f->lo);
            snprintf(k, sizeof k, "f%lld.hi", (long long)i);
            ok = ok && get_long(m, k, &f->hi);
            for (size_t j = 0; j < d->nrep; j++) {
                snprintf(k, sizeof k, "f%lld.r%zu", (long long)i, j);
                const char *v = get_string(m, k);
                f->m[j] = (sc_mark){-1, 0, false};
                if (v && !parse_mark(v, &f->m[j])) ok = false;
            }
            if (!ok) {
                dstate_free(d);
                return bad_state(err, "a takeover floor");
            }
        }
    }
    const char *b64 = get_string(m, "pending");
    if (!b64 || !*b64) return CF_OK;
    size_t len;
    uint8_t *blob = base64_decode(b64, &len);
    if (!blob) {
        dstate_free(d);
        return bad_state(err, "pending digests are not base64");
    }
    rd r = {blob, blob + len, false};
    const char *what = NULL;
    if (len < 4 || memcmp(blob, "CFP1", 4) != 0) {
        what = "pending digests: unknown format";
        goto out;
    }
    r.p += 4;
    uint64_t nt = get_uv(&r);
    if (r.bad || nt > len) {
        what = "pending digests: table list";
        goto out;
    }
    for (uint64_t i = 0; i < nt; i++) {
        char *ks = get_str(&r), *tb = r.bad ? NULL : get_str(&r);
        if (!r.bad) {
            d->tks = cf_xrealloc(d->tks, (d->nt + 1) * sizeof *d->tks);
            d->tns = cf_xrealloc(d->tns, (d->nt + 1) * sizeof *d->tns);
            d->tks[d->nt] = ks;
            d->tns[d->nt++] = tb;
            continue;
        }
        free(ks);
        free(tb);
        what = "pending digests: table names";
        goto out;
    }
    uint64_t ne = get_uv(&r);
    for (uint64_t i = 0; i < ne && !r.bad; i++) {
        cf_sc_pending p;
        memset(&p, 0, sizeof p);
        if (r.end - r.p < CF_SC_DIGEST_LEN) {
            r.bad = true;
            break;
        }
        memcpy(p.digest, r.p, CF_SC_DIGEST_LEN);
        r.p += CF_SC_DIGEST_LEN;
        p.replicas = get_le(&r, 8);
        p.copies = (uint32_t)get_le(&r, 4);
        uint64_t t = get_uv(&r);
        p.token = (int64_t)get_le(&r, 8);
        p.first_seen_ms = (int64_t)get_le(&r, 8);
        p.published = get_le(&r, 1) & 1;
        if (r.bad || t >= nt) {
            r.bad = true;
            break;
        }
        p.table = (uint32_t)t;
        push_pending(d, &p);
    }
    if (r.bad) what = "pending digests: truncated entry";
out:
    free(blob);
    if (what) {
        dstate_free(d);
        return bad_state(err, what);
    }
    return CF_OK;
}

static cf_value *encode(const dstate *d) {
    cf_value *m = cf_value_map();
    put_key_long(m, "version", STATE_VERSION);
    put_key_long(m, "replicas", (int64_t)d->nrep);
    char k[64];
    for (size_t i = 0; i < d->nrep; i++) {
        snprintf(k, sizeof k, "r%zu.name", i);
        put_key_str(m, k, d->names[i]);
        snprintf(k, sizeof k, "r%zu.segment", i);
        put_key_long(m, k, d->m[i].seg);
        snprintf(k, sizeof k, "r%zu.position", i);
        put_key_long(m, k, d->m[i].seg < 0 ? 0 : d->m[i].pos);
        snprintf(k, sizeof k, "r%zu.done", i);
        put_key_long(m, k, d->m[i].seg >= 0 && d->m[i].done ? 1 : 0);
    }
    put_key_str(m, "ranges", d->ranges ? d->ranges : "all");
    cf_buf b = CF_BUF_INIT;
    cf_buf_append(&b, "CFP1", 4);
    put_uv(&b, d->nt);
    for (size_t i = 0; i < d->nt; i++) {
        put_str(&b, d->tks[i]);
        put_str(&b, d->tns[i]);
    }
    put_uv(&b, d->np);
    for (size_t i = 0; i < d->np; i++) put_entry(&b, &d->p[i]);
    cf_buf b64 = CF_BUF_INIT;
    cf_base64_encode(&b64, (const uint8_t *)b.data, b.len);
    put_key_long(m, "pending.count", (int64_t)d->np);
    put_key_str(m, "pending", b64.data ? b64.data : "");
    put_key_long(m, "published", d->published);
    put_floors(m, d->f, d->nf, d->nrep);
    cf_buf_free(&b);
    cf_buf_free(&b64);
    return m;
}

/* ---------------- restore ---------------- */

cf_code cf_sc_engine_restore(cf_sc_engine *e, const cf_value *m, cf_err *err) {
    if (!m) return CF_OK;
    dstate d;
    cf_code rc = decode(m, &d, err);
    if (rc) return rc;
    int map_to[CF_SC_MAX_REPLICAS]; /* state replica i -> our replica, or -1 */
    for (size_t i = 0; i < d.nrep; i++) {
        map_to[i] = -1;
        for (size_t j = 0; j < e->nreps; j++)
            if (strcmp(e->reps[j].name, d.names[i]) == 0) {
                replica *r = &e->reps[j];
                map_to[i] = (int)j;
                r->m_seg = d.m[i].seg;
                r->m_pos = d.m[i].pos;
                r->m_done = d.m[i].done;
                if (r->m_seg >= 0)
                    CF_INFO(COMP, "replica %s resumes after segment %lld position %lld%s", d.names[i],
                            (long long)r->m_seg, (long long)r->m_pos, r->m_done ? " (finished)" : "");
            }
        if (map_to[i] < 0) CF_WARN(COMP, "the stored state has replica \"%s\", which is not configured now", d.names[i]);
    }
    for (size_t j = 0; j < e->nreps; j++)
        if (e->reps[j].m_seg < 0) CF_INFO(COMP, "replica %s has no stored position: read from its oldest segment", e->reps[j].name);
    if (d.ranges) {
        cf_buf cur = CF_BUF_INIT;
        cf_sc_ranges_format(&e->ranges, &cur);
        if (strcmp(cur.data, d.ranges) != 0)
            CF_WARN(COMP, "owned ranges changed from %s to %s: pending digests of tokens no longer owned are dropped",
                    d.ranges, cur.data);
        cf_buf_free(&cur);
    }
    cf_sc_engine_floors_free(e);
    if (d.nf) {
        e->floors = cf_xcalloc(d.nf, sizeof *e->floors);
        for (size_t i = 0; i < d.nf; i++) {
            sc_floor *f = &e->floors[e->nfloors++];
            f->lo = d.f[i].lo;
            f->hi = d.f[i].hi;
            f->m = cf_xcalloc(e->nreps + 1, sizeof *f->m);
            for (size_t j = 0; j < e->nreps; j++) f->m[j] = (sc_mark){-1, 0, false};
            for (size_t j = 0; j < d.nrep; j++)
                if (map_to[j] >= 0) f->m[map_to[j]] = d.f[i].m[j];
        }
        CF_INFO(COMP, "taking over merged states: %zu token interval(s) resume after their own owner's positions",
                d.nf);
    }
    uint32_t *tmap = cf_xcalloc(d.nt + 1, sizeof *tmap);
    for (size_t i = 0; i < d.nt; i++) tmap[i] = cf_sc_engine_table_ref(e, d.tks[i], d.tns[i]);
    uint64_t kept = 0, dropped = 0;
    for (size_t i = 0; i < d.np; i++) {
        cf_sc_pending p = d.p[i];
        uint64_t mask = p.replicas;
        p.replicas = 0;
        p.table = tmap[p.table];
        for (size_t b = 0; b < d.nrep && b < 64; b++)
            if ((mask >> b & 1) && map_to[b] >= 0) p.replicas |= 1ULL << map_to[b];
        if (!cf_sc_ranges_contain(&e->ranges, p.token) || (!p.replicas && !p.published)) {
            dropped++;
            continue;
        }
        rc = cf_sc_dedup_restore(e->dd, &p, err);
        if (rc) break;
        kept++;
    }
    free(tmap);
    if (!rc && d.np)
        CF_INFO(COMP, "%llu pending digest(s) restored%s", (unsigned long long)kept,
                dropped ? " (some dropped: not owned now)" : "");
    atomic_store(&e->st.pending, cf_sc_dedup_count(e->dd));
    atomic_store(&e->st.unpublished, cf_sc_dedup_unpublished(e->dd));
    dstate_free(&d);
    return rc;
}

/* ---------------- takeover floors ---------------- */

static int mark_cmp(const sc_mark *a, const sc_mark *b) {
    if (a->seg < 0 || b->seg < 0) return (a->seg >= 0) - (b->seg >= 0);
    if (a->seg != b->seg) return a->seg < b->seg ? -1 : 1;
    if (a->done != b->done) return a->done ? 1 : -1;
    if (a->done) return 0;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

void cf_sc_engine_floors_free(cf_sc_engine *e) {
    for (size_t i = 0; i < e->nfloors; i++) free(e->floors[i].m);
    free(e->floors);
    e->floors = NULL;
    e->nfloors = 0;
}

bool cf_sc_engine_floor_done(cf_sc_engine *e, int rep, int64_t seg, int64_t pos, int64_t t) {
    for (size_t i = 0; i < e->nfloors; i++) {
        const sc_floor *f = &e->floors[i];
        if (t <= f->lo || t > f->hi) continue;
        const sc_mark *m = &f->m[rep];
        return m->seg >= 0 && (seg < m->seg || (seg == m->seg && (m->done || pos < m->pos)));
    }
    return false;
}

/* Every reader past every floor: they are no longer needed. */
static void floors_check(cf_sc_engine *e) {
    for (size_t i = 0; i < e->nfloors; i++)
        for (size_t j = 0; j < e->nreps; j++) {
            sc_mark cur = {e->reps[j].m_seg, e->reps[j].m_pos, e->reps[j].m_done};
            if (e->floors[i].m[j].seg >= 0 && mark_cmp(&cur, &e->floors[i].m[j]) < 0) return;
        }
    CF_INFO(COMP, "takeover done: every replica is read past the merged states' positions (%llu copies processed "
                  "before by their owner skipped)", (unsigned long long)e->floor_skipped);
    cf_sc_engine_floors_free(e);
}

void cf_sc_engine_snapshot_floors(cf_sc_engine *e, cf_value *m) {
    if (!e->nfloors) return;
    floors_check(e);
    if (!e->nfloors) return;
    dfloor *f = cf_xcalloc(e->nfloors, sizeof *f);
    for (size_t i = 0; i < e->nfloors; i++) f[i] = (dfloor){e->floors[i].lo, e->floors[i].hi, e->floors[i].m};
    put_floors(m, f, e->nfloors, e->nreps);
    free(f);
}

/* ---------------- merge (the Cassandra state store) ---------------- */

#define TMIN INT64_MIN

/* (start, end] as linear intervals (lo, hi], lo < hi: one, or two when it
 * wraps, (lo, MAX] and (MIN, hi]; start == end is the whole ring. The
 * token MIN itself is never a Murmur3 token. */
static size_t linear(cf_sc_range r, int64_t lo[2], int64_t hi[2]) {
    if (r.start < r.end) {
        lo[0] = r.start;
        hi[0] = r.end;
        return 1;
    }
    if (r.start == r.end || (r.start == INT64_MAX && r.end == TMIN)) {
        lo[0] = TMIN;
        hi[0] = INT64_MAX;
        return 1;
    }
    size_t n = 0;
    if (r.start < INT64_MAX) lo[n] = r.start, hi[n++] = INT64_MAX;
    if (r.end > TMIN) lo[n] = TMIN, hi[n++] = r.end;
    return n;
}

static bool range_has(cf_sc_range r, int64_t t) {
    cf_sc_ranges one = {&r, 1};
    return cf_sc_ranges_contain(&one, t);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_digest(const void *a, const void *b) {
    return memcmp(((const cf_sc_pending *)a)->digest, ((const cf_sc_pending *)b)->digest, CF_SC_DIGEST_LEN);
}

typedef struct elem {
    int64_t lo, hi, epoch; /* epoch of its owner(s); no owner: covered false */
    bool covered;
} elem;

cf_code cf_sc_state_merge(const cf_sc_state_row *rows, size_t n, const cf_sc_ranges *owned, cf_value **out,
                          cf_err *err) {
    *out = NULL;
    cf_sc_range whole = {TMIN, TMIN};
    cf_sc_ranges own = owned && owned->n ? *owned : (cf_sc_ranges){&whole, 1};
    dstate *ds = cf_xcalloc(n + 1, sizeof *ds);
    size_t **nm = cf_xcalloc(n + 1, sizeof *nm); /* row name index -> merged name index */
    dstate o;
    memset(&o, 0, sizeof o);
    cf_code rc = CF_OK;
    /* the breakpoints */
    size_t nb = 0, capb = 16;
    int64_t *bp = cf_xmalloc(capb * sizeof *bp);
#define BP(v)                                                                                                          \
    do {                                                                                                               \
        if (nb == capb) bp = cf_xrealloc(bp, (capb *= 2) * sizeof *bp);                                                \
        bp[nb++] = (v);                                                                                                \
    } while (0)
    int64_t lo[2], hi[2];
    for (size_t i = 0; i < own.n; i++)
        for (size_t k = linear(own.r[i], lo, hi); k-- > 0;) {
            BP(lo[k]);
            BP(hi[k]);
        }
    for (size_t i = 0; i < n; i++) {
        if ((rc = decode(rows[i].snapshot, &ds[i], err))) {
            cf_err_detail(err, "the row of range (%lld,%lld]", (long long)rows[i].range.start,
                          (long long)rows[i].range.end);
            goto out;
        }
        nm[i] = cf_xcalloc(ds[i].nrep + 1, sizeof *nm[i]);
        for (size_t j = 0; j < ds[i].nrep; j++) nm[i][j] = add_name(&o, ds[i].names[j]);
        if (o.nrep > CF_SC_MAX_REPLICAS) {
            rc = bad_state(err, "more than 64 replicas in the merged states");
            goto out;
        }
        for (size_t k = linear(rows[i].range, lo, hi); k-- > 0;) {
            BP(lo[k]);
            BP(hi[k]);
        }
    }
    qsort(bp, nb, sizeof *bp, cmp_i64);
    /* the elementary intervals of the owned ranges, each owned by the newest row covering it */
    elem *el = cf_xcalloc(nb + 1, sizeof *el);
    size_t nel = 0;
    bool uncovered = false;
    for (size_t i = 0; i + 1 < nb; i++) {
        if (bp[i] == bp[i + 1]) continue;
        int64_t a = bp[i], b = bp[i + 1];
        if (!cf_sc_ranges_contain(&own, b)) continue;
        elem *x = &el[nel++];
        *x = (elem){a, b, 0, false};
        for (size_t k = 0; k < n; k++)
            if (range_has(rows[k].range, b) && (!x->covered || rows[k].epoch > x->epoch)) {
                x->covered = true;
                x->epoch = rows[k].epoch;
            }
        if (!x->covered) {
            uncovered = true;
            continue;
        }
        /* its positions: per replica, the owner's marker (or its own floor there, which is later); rows of the
         * same epoch: the earlier */
        sc_mark *mk = cf_xcalloc(o.nrep + 1, sizeof *mk);
        bool first = true;
        for (size_t k = 0; k < n; k++) {
            if (!range_has(rows[k].range, b) || rows[k].epoch != x->epoch) continue;
            sc_mark *rm = cf_xcalloc(o.nrep + 1, sizeof *rm);
            for (size_t j = 0; j < o.nrep; j++) rm[j] = (sc_mark){-1, 0, false};
            for (size_t j = 0; j < ds[k].nrep; j++) rm[nm[k][j]] = ds[k].m[j];
            for (size_t f = 0; f < ds[k].nf; f++)
                if (b > ds[k].f[f].lo && b <= ds[k].f[f].hi)
                    for (size_t j = 0; j < ds[k].nrep; j++)
                        if (mark_cmp(&ds[k].f[f].m[j], &rm[nm[k][j]]) > 0) rm[nm[k][j]] = ds[k].f[f].m[j];
            for (size_t j = 0; j < o.nrep; j++)
                if (first || mark_cmp(&rm[j], &mk[j]) < 0) mk[j] = rm[j];
            first = false;
            free(rm);
        }
        /* one floor per run of intervals with the same positions */
        dfloor *prev = o.nf ? &o.f[o.nf - 1] : NULL;
        bool same = prev && prev->hi == a;
        for (size_t j = 0; same && j < o.nrep; j++) same = mark_cmp(&prev->m[j], &mk[j]) == 0;
        if (same) {
            prev->hi = b;
            free(mk);
        } else {
            o.f = cf_xrealloc(o.f, (o.nf + 1) * sizeof *o.f);
            o.f[o.nf++] = (dfloor){a, b, mk};
        }
    }
    /* where to read from: the earliest position of any owner (nothing where no state covers) */
    for (size_t j = 0; j < o.nrep; j++) {
        o.m[j] = (sc_mark){-1, 0, false};
        for (size_t f = 0; !uncovered && f < o.nf; f++)
            if (f == 0 || mark_cmp(&o.f[f].m[j], &o.m[j]) < 0) o.m[j] = o.f[f].m[j];
        if (!o.nf) o.m[j] = (sc_mark){-1, 0, false};
    }
    /* the pending digests of each token, from its owner (union when two rows of one epoch own it) */
    for (size_t k = 0; k < n; k++) {
        o.published = ds[k].published > o.published ? ds[k].published : o.published;
        for (size_t i = 0; i < ds[k].np; i++) {
            cf_sc_pending p = ds[k].p[i];
            if (!range_has(rows[k].range, p.token) || !cf_sc_ranges_contain(&own, p.token)) continue;
            const elem *x = NULL;
            for (size_t q = 0; q < nel && !x; q++)
                if (p.token > el[q].lo && p.token <= el[q].hi) x = &el[q];
            if (!x || !x->covered || x->epoch != rows[k].epoch) continue;
            uint64_t mask = p.replicas;
            p.replicas = 0;
            for (size_t b = 0; b < ds[k].nrep && b < 64; b++)
                if (mask >> b & 1) p.replicas |= 1ULL << nm[k][b];
            p.table = (uint32_t)add_table(&o, ds[k].tks[p.table], ds[k].tns[p.table]);
            push_pending(&o, &p);
        }
    }
    if (o.np) {
        qsort(o.p, o.np, sizeof *o.p, cmp_digest);
        size_t w = 0;
        for (size_t i = 0; i < o.np; i++) {
            if (w && memcmp(o.p[w - 1].digest, o.p[i].digest, CF_SC_DIGEST_LEN) == 0) {
                cf_sc_pending *y = &o.p[w - 1];
                y->replicas |= o.p[i].replicas;
                y->copies = o.p[i].copies > y->copies ? o.p[i].copies : y->copies;
                y->published = y->published || o.p[i].published;
                if (o.p[i].first_seen_ms < y->first_seen_ms) y->first_seen_ms = o.p[i].first_seen_ms;
                continue;
            }
            o.p[w++] = o.p[i];
        }
        o.np = w;
    }
    /* floors are needed only where an owner's position is later than where reading starts */
    bool need = false;
    for (size_t f = 0; f < o.nf && !need; f++)
        for (size_t j = 0; j < o.nrep && !need; j++) need = mark_cmp(&o.f[f].m[j], &o.m[j]) != 0;
    if (!need) {
        for (size_t f = 0; f < o.nf; f++) free(o.f[f].m);
        free(o.f);
        o.f = NULL;
        o.nf = 0;
    }
    cf_buf rb = CF_BUF_INIT;
    cf_sc_ranges_format(owned, &rb);
    o.ranges = cf_buf_detach(&rb, NULL);
    *out = encode(&o);
    free(el);
out:
#undef BP
    free(bp);
    for (size_t i = 0; i < n; i++) {
        dstate_free(&ds[i]);
        free(nm[i]);
    }
    free(ds);
    free(nm);
    dstate_free(&o);
    return rc;
}

cf_value *cf_sc_state_restrict(const cf_value *snapshot, cf_sc_range range) {
    dstate d;
    cf_err err;
    if (decode(snapshot, &d, &err)) return NULL;
    size_t w = 0;
    for (size_t i = 0; i < d.np; i++)
        if (range_has(range, d.p[i].token)) d.p[w++] = d.p[i];
    d.np = w;
    int64_t lo[2], hi[2];
    size_t nl = linear(range, lo, hi), nf = 0;
    dfloor *f = cf_xcalloc(d.nf * 2 + 1, sizeof *f);
    for (size_t i = 0; i < d.nf; i++)
        for (size_t k = 0; k < nl; k++) {
            int64_t a = d.f[i].lo > lo[k] ? d.f[i].lo : lo[k], b = d.f[i].hi < hi[k] ? d.f[i].hi : hi[k];
            if (a < b) f[nf++] = (dfloor){a, b, d.f[i].m};
        }
    cf_sc_ranges one = {&range, 1};
    cf_buf rb = CF_BUF_INIT;
    cf_sc_ranges_format(&one, &rb);
    free(d.ranges);
    d.ranges = cf_buf_detach(&rb, NULL);
    dfloor *keep = d.f;
    size_t keepn = d.nf;
    d.f = f;
    d.nf = nf;
    cf_value *out = encode(&d);
    d.f = keep;
    d.nf = keepn;
    free(f);
    dstate_free(&d);
    return out;
}

cf_code cf_sc_state_cleanup_marks(const cf_sc_state_row *rows, size_t n, cf_value **out, cf_err *err) {
    *out = NULL;
    if (n == 0) return CF_OK;
    dstate *ds = cf_xcalloc(n, sizeof *ds);
    bool *counted = cf_xcalloc(n, sizeof *counted);
    size_t nb = 0;
    int64_t *bp = cf_xmalloc((4 * n + 2) * sizeof *bp), lo[2], hi[2];
    cf_code rc = CF_OK;
    bp[nb++] = TMIN;
    bp[nb++] = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if ((rc = decode(rows[i].snapshot, &ds[i], err))) {
            cf_err_detail(err, "the row of range (%lld,%lld]", (long long)rows[i].range.start,
                          (long long)rows[i].range.end);
            goto done;
        }
        for (size_t k = linear(rows[i].range, lo, hi); k-- > 0;) {
            bp[nb++] = lo[k];
            bp[nb++] = hi[k];
        }
    }
    qsort(bp, nb, sizeof *bp, cmp_i64);
    /* every elementary interval of the ring: its owners (the newest rows covering it) count */
    bool uncovered = false;
    for (size_t i = 0; i + 1 < nb && !uncovered; i++) {
        if (bp[i] == bp[i + 1]) continue;
        int64_t b = bp[i + 1], ep = 0;
        bool cov = false;
        for (size_t k = 0; k < n; k++)
            if (range_has(rows[k].range, b) && (!cov || rows[k].epoch > ep)) {
                cov = true;
                ep = rows[k].epoch;
            }
        if (!cov) uncovered = true;
        for (size_t k = 0; cov && k < n; k++)
            if (range_has(rows[k].range, b) && rows[k].epoch == ep) counted[k] = true;
    }
    if (uncovered) goto done;
    /* per replica named by a counted row: the earliest marker of the counted rows (none if one does not name it) */
    dstate o;
    memset(&o, 0, sizeof o);
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; counted[k] && j < ds[k].nrep; j++) add_name(&o, ds[k].names[j]);
    for (size_t j = 0; j < o.nrep; j++) {
        bool first = true;
        for (size_t k = 0; k < n; k++) {
            if (!counted[k]) continue;
            sc_mark m = {-1, 0, false};
            for (size_t r = 0; r < ds[k].nrep; r++)
                if (strcmp(ds[k].names[r], o.names[j]) == 0) m = ds[k].m[r];
            if (first || mark_cmp(&m, &o.m[j]) < 0) o.m[j] = m;
            first = false;
        }
    }
    cf_value *m = cf_value_map();
    put_key_long(m, "replicas", (int64_t)o.nrep);
    char key[64];
    for (size_t j = 0; j < o.nrep; j++) {
        snprintf(key, sizeof key, "r%zu.name", j);
        put_key_str(m, key, o.names[j]);
        snprintf(key, sizeof key, "r%zu.segment", j);
        put_key_long(m, key, o.m[j].seg < 0 ? -1 : o.m[j].seg);
        snprintf(key, sizeof key, "r%zu.position", j);
        put_key_long(m, key, o.m[j].pos);
        snprintf(key, sizeof key, "r%zu.done", j);
        put_key_long(m, key, o.m[j].done ? 1 : 0);
    }
    dstate_free(&o);
    *out = m;
done:
    for (size_t i = 0; i < n; i++) dstate_free(&ds[i]);
    free(ds);
    free(counted);
    free(bp);
    return rc;
}

void cf_sc_engine_durable(cf_sc_engine *e, const cf_value *m) {
    if (!m || m->type != CF_MAP || e->cleanup == CF_SC_CLEANUP_NONE) return;
    int64_t n;
    if (!get_long(m, "replicas", &n)) return;
    char k[64];
    for (int64_t i = 0; i < n; i++) {
        snprintf(k, sizeof k, "r%lld.name", (long long)i);
        const char *name = get_string(m, k);
        int64_t seg, done;
        snprintf(k, sizeof k, "r%lld.segment", (long long)i);
        bool ok = name && get_long(m, k, &seg);
        snprintf(k, sizeof k, "r%lld.done", (long long)i);
        ok = ok && get_long(m, k, &done);
        if (ok && seg >= 0) cf_sc_engine_cleanup_through(e, name, seg, done != 0);
    }
}
