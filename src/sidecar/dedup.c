/*
 * dedup.c - consistency levels and the pending-digest cache (see
 * cdcflow/sidecar.h).
 *
 * The cache is an open-addressing hash table keyed by the digest (MD5 bits
 * are uniform, so its first 8 bytes are the hash), linear probing and
 * backward-shift deletion (no tombstones, so lookups of absent digests stay
 * short however many digests came and went). It grows by doubling up to the
 * bound; the bound is on entries, and the table never holds more than half
 * its slots.
 *
 * What an entry remembers and why:
 *   replicas  a bit per replica directory: the level counts replicas, not
 *             copies (a replica can hold a write twice: a client retry with
 *             the same timestamp, a hint replayed to a node that had it);
 *   copies    32 bits: Sidecar CDC's 16-bit count corrupted its state past
 *             32767;
 *   published the digest went out; later copies are duplicates until every
 *             replica wrote one (then it is forgotten) or it times out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/sidecar.h"

/* ---------------- consistency levels ---------------- */

static const char *const cl_names[] = {"ONE", "TWO", "THREE", "QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL",
                                       "LOCAL_ONE"};
#define N_CL (sizeof cl_names / sizeof cl_names[0])

cf_code cf_sc_cl_parse(const char *text, cf_sc_cl *out, cf_err *err) {
    for (size_t i = 0; text && i < N_CL; i++)
        if (strcasecmp(text, cl_names[i]) == 0) {
            *out = (cf_sc_cl)i;
            return CF_OK;
        }
    cf_err_set(err, CF_ERR_CONFIG, "invalid consistency level \"%s\"", text ? text : "");
    cf_err_detail(err, "allowed: ONE, TWO, THREE, QUORUM, LOCAL_QUORUM, EACH_QUORUM, ALL, LOCAL_ONE");
    return CF_ERR_CONFIG;
}

const char *cf_sc_cl_name(cf_sc_cl cl) { return (unsigned)cl < N_CL ? cl_names[cl] : "?"; }

int cf_sc_cl_required(cf_sc_cl cl, int rf) {
    if (rf < 1) return 0;
    int n;
    switch (cl) {
    case CF_SC_ONE: case CF_SC_LOCAL_ONE: n = 1; break;
    case CF_SC_TWO: n = 2; break;
    case CF_SC_THREE: n = 3; break;
    case CF_SC_QUORUM: case CF_SC_LOCAL_QUORUM: case CF_SC_EACH_QUORUM: n = rf / 2 + 1; break;
    case CF_SC_ALL: n = rf; break;
    default: return 0;
    }
    return n <= rf ? n : 0;
}

/* The entries of a replication map, as DESCRIBE prints it (a CQL map
 * literal, {'class': 'SimpleStrategy', 'replication_factor': '3'}) or as the
 * system_schema loader keeps it (JSON, {"class":"...","replication_factor":"3"}):
 * keys and values quoted with ' or ", numbers possibly bare. */
typedef struct kv {
    char k[128], v[128];
} kv;

static const char *quote_at(const char *p) {
    const char *a = strchr(p, '\''), *b = strchr(p, '"');
    return !a ? b : !b ? a : a < b ? a : b;
}

static size_t parse_map(const char *s, kv *out, size_t max) {
    size_t n = 0;
    const char *p = s;
    while (*p && n < max) {
        const char *q = quote_at(p);
        if (!q) break;
        const char *e = strchr(q + 1, *q);
        if (!e) break;
        kv *x = &out[n];
        snprintf(x->k, sizeof x->k, "%.*s", (int)(e - q - 1), q + 1);
        p = e + 1;
        while (*p == ' ' || *p == ':') p++;
        if (*p == '\'' || *p == '"') {
            const char *ve = strchr(p + 1, *p);
            if (!ve) break;
            snprintf(x->v, sizeof x->v, "%.*s", (int)(ve - p - 1), p + 1);
            p = ve + 1;
        } else { /* an unquoted number */
            size_t l = strcspn(p, ",} ");
            snprintf(x->v, sizeof x->v, "%.*s", (int)l, p);
            p += l;
        }
        n++;
    }
    return n;
}

static bool rf_number(const char *v, int *rf) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || x < 0 || x > 1000) return false;
    if (*end == '/') { /* "3/1": 3 replicas, 1 of them transient; transient ones hold no full data */
        char *e2;
        long t = strtol(end + 1, &e2, 10);
        if (*e2 || t < 0 || t > x) return false;
        x -= t;
    } else if (*end) {
        return false;
    }
    *rf = (int)x;
    return true;
}

cf_code cf_sc_keyspace_rf(const char *replication, const char *datacenter, int *rf, cf_err *err) {
    kv m[64];
    size_t n = replication ? parse_map(replication, m, 64) : 0;
    const char *cls = NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].k, "class") == 0) cls = m[i].v;
    if (!cls) {
        cf_err_set(err, CF_ERR_CONFIG, "cannot read the replication of keyspace: no class in %s",
                   replication ? replication : "(none)");
        cf_err_hint(err, "Give the replication factor (rf) in the configuration.");
        return CF_ERR_CONFIG;
    }
    const char *base = strrchr(cls, '.');
    base = base ? base + 1 : cls;
    if (strcmp(base, "SimpleStrategy") == 0) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(m[i].k, "replication_factor") == 0 && rf_number(m[i].v, rf)) return CF_OK;
        cf_err_set(err, CF_ERR_CONFIG, "SimpleStrategy replication without a valid replication_factor: %s",
                   replication);
        return CF_ERR_CONFIG;
    }
    if (strcmp(base, "NetworkTopologyStrategy") == 0) {
        const kv *dc = NULL;
        size_t ndc = 0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(m[i].k, "class") == 0) continue;
            ndc++;
            if (datacenter ? strcmp(m[i].k, datacenter) == 0 : ndc == 1) dc = &m[i];
        }
        if (!datacenter && ndc > 1) {
            cf_err_set(err, CF_ERR_CONFIG, "keyspace replicated to %zu data centers and no datacenter configured", ndc);
            cf_err_detail(err, "replication %s", replication);
            cf_err_hint(err, "Set datacenter to the data center whose replicas' cdc_raw directories are read.");
            return CF_ERR_CONFIG;
        }
        if (!dc || !rf_number(dc->v, rf)) {
            cf_err_set(err, CF_ERR_CONFIG, "no replication factor for data center \"%s\"",
                       datacenter ? datacenter : "(any)");
            cf_err_detail(err, "replication %s", replication);
            return CF_ERR_CONFIG;
        }
        return CF_OK;
    }
    cf_err_set(err, CF_ERR_CONFIG, "unsupported replication strategy %s", cls);
    cf_err_hint(err, "Give the replication factor (rf) in the configuration.");
    return CF_ERR_CONFIG;
}

/* ---------------- the cache ---------------- */

struct cf_sc_dedup {
    cf_sc_pending *slots;
    uint8_t *used;
    size_t cap; /* power of two */
    size_t count, unpublished, max;
};

static size_t hash_of(const uint8_t *d) {
    uint64_t h;
    memcpy(&h, d, 8);
    return (size_t)h;
}

cf_sc_dedup *cf_sc_dedup_new(size_t max_entries) {
    cf_sc_dedup *d = cf_xcalloc(1, sizeof *d);
    d->max = max_entries ? max_entries : 1;
    d->cap = 1024;
    d->slots = cf_xmalloc(d->cap * sizeof *d->slots);
    d->used = cf_xcalloc(d->cap, 1);
    return d;
}

void cf_sc_dedup_destroy(cf_sc_dedup *d) {
    if (!d) return;
    free(d->slots);
    free(d->used);
    free(d);
}

static size_t find_slot(const cf_sc_dedup *d, const uint8_t *dg, bool *found) {
    size_t mask = d->cap - 1, i = hash_of(dg) & mask;
    while (d->used[i]) {
        if (memcmp(d->slots[i].digest, dg, CF_SC_DIGEST_LEN) == 0) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
    *found = false;
    return i;
}

static void grow(cf_sc_dedup *d) {
    cf_sc_pending *old = d->slots;
    uint8_t *old_used = d->used;
    size_t old_cap = d->cap;
    d->cap *= 2;
    d->slots = cf_xmalloc(d->cap * sizeof *d->slots);
    d->used = cf_xcalloc(d->cap, 1);
    for (size_t i = 0; i < old_cap; i++) {
        if (!old_used[i]) continue;
        bool f;
        size_t j = find_slot(d, old[i].digest, &f);
        d->slots[j] = old[i];
        d->used[j] = 1;
    }
    free(old);
    free(old_used);
}

/* Backward-shift deletion: move later members of the probe run into the gap. */
static void remove_at(cf_sc_dedup *d, size_t i) {
    size_t mask = d->cap - 1;
    if (!d->slots[i].published) d->unpublished--;
    d->count--;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!d->used[j]) break;
        size_t home = hash_of(d->slots[j].digest) & mask;
        /* can j's entry move to i? only if its home is not in (i, j] */
        bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (between) continue;
        d->slots[i] = d->slots[j];
        i = j;
    }
    d->used[i] = 0;
}

static cf_code full(const cf_sc_dedup *d, cf_err *err) {
    cf_err_set(err, CF_ERR_STATE, "pending digest cache is full: %zu digests wait for their replicas' copies",
               d->count);
    cf_err_detail(err, "%zu of them not yet published, the bound (max.pending.digests) is %zu", d->unpublished,
                  d->max);
    cf_err_hint(err, "A replica's cdc_raw lags far behind the others or is missing: check the replica directories; "
                     "or raise max.pending.digests, or lower consistency.timeout.ms so that digests expire sooner.");
    return CF_ERR_STATE;
}

static cf_code insert(cf_sc_dedup *d, const cf_sc_pending *p, cf_err *err) {
    if (d->count >= d->max) return full(d, err);
    if ((d->count + 1) * 2 > d->cap) grow(d);
    bool f;
    size_t i = find_slot(d, p->digest, &f);
    if (f) {
        d->slots[i] = *p; /* restore over itself: keep one */
        return CF_OK;
    }
    d->slots[i] = *p;
    d->used[i] = 1;
    d->count++;
    if (!p->published) d->unpublished++;
    return CF_OK;
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

cf_code cf_sc_dedup_add(cf_sc_dedup *d, const uint8_t digest[CF_SC_DIGEST_LEN], int replica, int required,
                        int complete, int64_t now_ms, uint32_t table, int64_t token, cf_sc_verdict *v, cf_err *err) {
    uint64_t bit = 1ULL << (replica & 63);
    if (required < 1) required = 1;
    if (complete < required) complete = required;
    bool f;
    size_t i = find_slot(d, digest, &f);
    if (!f) {
        if (required <= 1 && complete <= 1) { /* ONE over one replica: nothing to wait for */
            *v = CF_SC_PUBLISH;
            return CF_OK;
        }
        cf_sc_pending p = {.replicas = bit, .copies = 1, .table = table, .token = token, .first_seen_ms = now_ms,
                           .published = required <= 1};
        memcpy(p.digest, digest, CF_SC_DIGEST_LEN);
        cf_code rc = insert(d, &p, err);
        if (rc) return rc;
        *v = required <= 1 ? CF_SC_PUBLISH : CF_SC_WAIT;
        return CF_OK;
    }
    cf_sc_pending *p = &d->slots[i];
    if (p->copies < UINT32_MAX) p->copies++;
    p->replicas |= bit;
    int have = popcount64(p->replicas);
    if (p->published) {
        *v = CF_SC_DUPLICATE;
    } else if (have >= required) {
        p->published = true;
        d->unpublished--;
        *v = CF_SC_PUBLISH;
    } else {
        *v = CF_SC_WAIT;
    }
    if (p->published && have >= complete) remove_at(d, i);
    return CF_OK;
}

size_t cf_sc_dedup_expire(cf_sc_dedup *d, int64_t now_ms, int64_t timeout_ms,
                          void (*dropped)(void *arg, const cf_sc_pending *p), void *arg) {
    size_t n = 0;
    for (size_t i = 0; i < d->cap;) {
        if (d->used[i] && now_ms - d->slots[i].first_seen_ms > timeout_ms) {
            if (!d->slots[i].published) {
                n++;
                if (dropped) dropped(arg, &d->slots[i]);
            }
            remove_at(d, i); /* a later entry may have moved into i: look at i again */
            continue;
        }
        i++;
    }
    return n;
}

size_t cf_sc_dedup_count(const cf_sc_dedup *d) { return d->count; }
size_t cf_sc_dedup_unpublished(const cf_sc_dedup *d) { return d->unpublished; }
size_t cf_sc_dedup_capacity(const cf_sc_dedup *d) { return d->max; }

void cf_sc_dedup_foreach(const cf_sc_dedup *d, void (*fn)(void *arg, const cf_sc_pending *p), void *arg) {
    for (size_t i = 0; i < d->cap; i++)
        if (d->used[i]) fn(arg, &d->slots[i]);
}

cf_code cf_sc_dedup_restore(cf_sc_dedup *d, const cf_sc_pending *p, cf_err *err) { return insert(d, p, err); }

const cf_sc_pending *cf_sc_dedup_find(const cf_sc_dedup *d, const uint8_t digest[CF_SC_DIGEST_LEN]) {
    bool f;
    size_t i = find_slot(d, digest, &f);
    return f ? &d->slots[i] : NULL;
}
