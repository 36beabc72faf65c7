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
    cf_err_hint(err, "Remove the connector's stored offset to start from the oldest segments (changes may be "
                     "published again).");
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

cf_code cf_sc_engine_restore(cf_sc_engine *e, const cf_value *m, cf_err *err) {
    if (!m) return CF_OK;
    if (m->type != CF_MAP) return bad_state(err, "not a map");
    int64_t ver, n;
    if (!get_long(m, "version", &ver) || ver != STATE_VERSION) return bad_state(err, "unknown version");
    if (!get_long(m, "replicas", &n) || n < 0 || n > CF_SC_MAX_REPLICAS) return bad_state(err, "replica count");
    int map_to[CF_SC_MAX_REPLICAS]; /* state replica i -> our replica, or -1 */
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
        if (!ok) return bad_state(err, "a replica's marker");
        map_to[i] = -1;
        for (size_t j = 0; j < e->nreps; j++)
            if (strcmp(e->reps[j].name, name) == 0) {
                replica *r = &e->reps[j];
                map_to[i] = (int)j;
                r->m_seg = seg;
                r->m_pos = pos;
                r->m_done = done != 0;
                CF_INFO(COMP, "replica %s resumes after segment %lld position %lld%s", name, (long long)seg,
                        (long long)pos, done ? " (finished)" : "");
            }
        if (map_to[i] < 0) CF_WARN(COMP, "the stored state has replica \"%s\", which is not configured now", name);
    }
    for (size_t j = 0; j < e->nreps; j++)
        if (e->reps[j].m_seg < 0) CF_INFO(COMP, "replica %s has no stored position: read from its oldest segment", e->reps[j].name);
    const char *ranges = get_string(m, "ranges");
    if (ranges) {
        cf_buf cur = CF_BUF_INIT;
        cf_sc_ranges_format(&e->ranges, &cur);
        if (strcmp(cur.data, ranges) != 0)
            CF_WARN(COMP, "owned ranges changed from %s to %s: pending digests of tokens no longer owned are dropped",
                    ranges, cur.data);
        cf_buf_free(&cur);
    }
    const char *b64 = get_string(m, "pending");
    if (!b64 || !*b64) return CF_OK;
    size_t len;
    uint8_t *blob = base64_decode(b64, &len);
    if (!blob) return bad_state(err, "pending digests are not base64");
    rd r = {blob, blob + len, false};
    cf_code rc = CF_OK;
    uint32_t *tmap = NULL;
    if (len < 4 || memcmp(blob, "CFP1", 4) != 0) {
        rc = bad_state(err, "pending digests: unknown format");
        goto out;
    }
    r.p += 4;
    uint64_t nt = get_uv(&r);
    if (r.bad || nt > len) {
        rc = bad_state(err, "pending digests: table list");
        goto out;
    }
    tmap = cf_xcalloc(nt + 1, sizeof *tmap);
    for (uint64_t i = 0; i < nt; i++) {
        char *ks = get_str(&r), *tb = r.bad ? NULL : get_str(&r);
        if (r.bad) {
            free(ks);
            free(tb);
            rc = bad_state(err, "pending digests: table names");
            goto out;
        }
        tmap[i] = cf_sc_engine_table_ref(e, ks, tb);
        free(ks);
        free(tb);
    }
    uint64_t ne = get_uv(&r), kept = 0, dropped = 0;
    for (uint64_t i = 0; i < ne && !r.bad; i++) {
        cf_sc_pending p;
        memset(&p, 0, sizeof p);
        if (r.end - r.p < CF_SC_DIGEST_LEN) {
            r.bad = true;
            break;
        }
        memcpy(p.digest, r.p, CF_SC_DIGEST_LEN);
        r.p += CF_SC_DIGEST_LEN;
        uint64_t mask = get_le(&r, 8);
        p.copies = (uint32_t)get_le(&r, 4);
        uint64_t t = get_uv(&r);
        p.token = (int64_t)get_le(&r, 8);
        p.first_seen_ms = (int64_t)get_le(&r, 8);
        p.published = get_le(&r, 1) & 1;
        if (r.bad || t >= nt) {
            r.bad = true;
            break;
        }
        p.table = tmap[t];
        for (int64_t b = 0; b < n && b < 64; b++)
            if ((mask >> b & 1) && map_to[b] >= 0) p.replicas |= 1ULL << map_to[b];
        if (!cf_sc_ranges_contain(&e->ranges, p.token) || (!p.replicas && !p.published)) {
            dropped++;
            continue;
        }
        rc = cf_sc_dedup_restore(e->dd, &p, err);
        if (rc) goto out;
        kept++;
    }
    if (r.bad) {
        rc = bad_state(err, "pending digests: truncated entry");
        goto out;
    }
    CF_INFO(COMP, "%llu pending digest(s) restored%s", (unsigned long long)kept, dropped ? " (some dropped: not owned now)" : "");
    atomic_store(&e->st.pending, cf_sc_dedup_count(e->dd));
    atomic_store(&e->st.unpublished, cf_sc_dedup_unpublished(e->dd));
out:
    free(tmap);
    free(blob);
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
