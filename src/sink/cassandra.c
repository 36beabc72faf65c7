/*
 * cassandra.c - the cdc-sink applies Cassandra change events (the envelope
 * of `cassandra-cdc` / `cdcflow cassandra sidecar`, docs/formats.md) with
 * Cassandra's semantics.
 *
 * WHY A STATE PER PARTITION
 *   A Cassandra write carries only the cells it wrote, each with its own
 *   timestamp; replicas deliver copies late and in any order; deletions
 *   (row, range, partition) shadow what is not newer, even data that arrives
 *   after them. Last-write-wins on whole rows cannot give Cassandra's answer
 *   under reordering (an older partial update arriving late loses its cells;
 *   a range deletion must shadow an older insert that comes after it). So
 *   the sink keeps what Cassandra keeps: per partition the partition
 *   deletion, the range tombstones, and per row the row's liveness and
 *   deletion timestamps and each cell's (and each collection element's /
 *   UDT field's) timestamp and value. Merging an event into that state is
 *   commutative and idempotent (maxima, and per cell the higher timestamp,
 *   a deletion winning ties, then the greater value as Cassandra does), so
 *   redelivery and any order give the same state. The rows the state
 *   produces are written to the table as whole rows (UPSERT) or removed
 *   (DELETE); their sequence number is the partition's highest timestamp,
 *   which never decreases, so the engine's "newer or equal wins" lets each
 *   recomputed row through. The state lives in "_cdc_cassandra_state" (one
 *   blob per partition, target functions state_get/state_put) and commits
 *   in the same transaction as the rows it produced (SQLite, PostgreSQL);
 *   BigQuery's target keeps it in a local SQLite file committed only after
 *   BigQuery acknowledged the rows (bq_target.c, CASSANDRA STATE). When a
 *   partition's state is written, deletions older than
 *   cassandra.gc.grace.seconds before the newest event timestamp seen are
 *   dropped with the data they shadow (part_purge), as Cassandra's
 *   compaction does past gc_grace_seconds, zombie caveat included.
 *
 * WHAT IS EXACT AND WHAT IS NOT (docs/formats.md, "Cassandra change events
 * in cdc-sink")
 *   Exact: regular and static cells, INSERT liveness, row / range /
 *   partition deletions, frozen values, set and map elements, UDT fields,
 *   whatever the order and the number of copies. An event carries one
 *   timestamp (timestampMicros, the largest of the write); a single CQL
 *   statement's cells share it, so per-cell timestamps are exact for
 *   statements that use one timestamp (every normal write).
 *   Not exact: list element positions (appends/prepends come without them:
 *   elements are ordered by write timestamp) and list element removals
 *   (no value in the commit log: not applied, counted); TTLs (the row stays:
 *   expiry is not a write); a partition with static cells and no rows has no
 *   row in the table (its clustering columns would be NULL in the key).
 *   A column's CQL type comes from cassandra.schema.files or, for a column
 *   the files lack (added by ALTER TABLE ADD after they were written, or no
 *   files), from the event field's "cassandra.type" / "cassandra.kind"
 *   parameters (learn_columns): sets are sets (elements by value, in
 *   Cassandra's order), statics static, uuid / timeuuid / inet ordered as in
 *   Cassandra. With neither (events of an older sidecar) an array column is
 *   taken as a list and those types compare as text.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"
#include "sink_internal.h"

#define TS_NONE INT64_MIN
#define STATE_MAGIC 0x31534343u /* "CCS1" */

/* ---------------- the model ---------------- */

enum { K_SIMPLE = 0, K_LIST, K_SET, K_MAP, K_UDT };

typedef struct cs_el {
    cf_cell k;     /* identity and order: set element / map key (typed); list: position in its write; UDT: field */
    int64_t ts;
    uint8_t dead;
    char *kj;      /* JSON of a set element / map key */
    uint32_t kjn;
    char *vj;      /* JSON of a map value, list element, UDT field */
    uint32_t vjn;
} cs_el;

typedef struct cs_col {
    char *name;
    uint8_t kind;   /* K_* */
    int64_t ts;     /* simple: the cell */
    uint8_t dead;
    cf_cell v;
    int64_t cdel;   /* multi-cell: everything up to this timestamp deleted */
    cs_el *el;
    size_t nel, capel;
} cs_col;

typedef struct cs_row {
    uint8_t is_static;
    cf_cell *ck; /* n_ck cells (none for the static row) */
    int64_t live, del;
    cs_col *cols;
    size_t ncols;
} cs_row;

typedef struct cs_pred {
    uint8_t ck;  /* clustering column index */
    uint8_t op;  /* 0 LT 1 LTE 2 EQ 3 GTE 4 GT */
    cf_cell v;
} cs_pred;

typedef struct cs_range {
    int64_t ts;
    cs_pred *p;
    size_t np;
} cs_range;

typedef struct cs_part {
    struct cs_tab *tab;
    uint8_t *key;     /* encoded partition key cells */
    size_t klen;
    cf_cell *pk;      /* the partition key cells (arena of the batch: only for emitting) */
    int64_t pdel, pmax;
    cs_range *ranges;
    size_t nranges;
    cs_row *rows;
    size_t nrows;
    uint32_t *rix;   /* rows by clustering (open addressing: row index + 1, 0 = free), wide partitions */
    size_t rixcap;
    bool dirty;
    struct cs_part *next; /* hash chain */
} cs_part;

/* What the sink knows of one table (per topic). */
typedef struct cs_tab {
    char *topic;
    cf_sink_table *t;
    size_t n_pk, n_ck;
    const cf_schema *payload_schema; /* the last payload schema mapped (pointer identity) */
    cf_schema *payload_ref;
    int *col_of_field;               /* payload field -> table column (-1: none) */
    int *ck_field;                   /* clustering column i -> payload field */
    const cf_cass_table *cql;        /* from cassandra.schema.files, or own, or NULL */
    cf_cass_table *own;              /* that table with the columns learned from the events, or NULL */
    uint8_t *ck_cmp;                 /* clustering column i: its order (CMP_*) */
    bool warned_lists;
} cs_tab;

struct sk_cass {
    cf_cass_schema *schema; /* cassandra.schema.files */
    cs_tab **tabs;
    size_t ntabs;
    cs_part **ht;
    size_t htcap, nparts;
    uint64_t list_removals_unapplied;
    int64_t newest;   /* the newest event timestamp seen (TS_NONE: none yet) */
    int64_t grace_us; /* cassandra.gc.grace.seconds in microseconds; < 0: never purge */
};

/* ---------------- cells ---------------- */

static void cell_free(cf_cell *c) {
    if (c->kind == CF_CELL_TEXT || c->kind == CF_CELL_BLOB) free((void *)c->u.p);
    memset(c, 0, sizeof *c);
}

/* A column's name, value and elements (the column itself is its row's). */
static void col_free(cs_col *c) {
    free(c->name);
    cell_free(&c->v);
    for (size_t e = 0; e < c->nel; e++) {
        cell_free(&c->el[e].k);
        free(c->el[e].kj);
        free(c->el[e].vj);
    }
    free(c->el);
}

static cf_cell cell_dup(const cf_cell *c) {
    cf_cell r = *c;
    if (c->kind == CF_CELL_TEXT || c->kind == CF_CELL_BLOB) {
        char *p = cf_xmalloc(c->len + 1);
        memcpy(p, c->u.p, c->len);
        p[c->len] = 0;
        r.u.p = p;
    }
    return r;
}

static cf_cell cell_arena(cf_arena *a, const cf_cell *c) {
    cf_cell r = *c;
    if (c->kind == CF_CELL_TEXT || c->kind == CF_CELL_BLOB) r.u.p = cf_arena_strndup(a, c->u.p, c->len);
    return r;
}



/* Orders a cell's text or bytes do not give (Cassandra's comparators):
 * decimal and varint by value (the cell is their exact text), uuid
 * (UUIDType: version, then time for version 1, then bytes) and timeuuid
 * (TimeUUIDType: time, then the low bytes as signed bytes) and inet (its
 * address bytes). Which one a column needs comes from its Connect type
 * (Decimal) or the CQL schema (cassandra.schema.files). */
enum { CMP_PLAIN = 0, CMP_NUM, CMP_UUID, CMP_TIMEUUID, CMP_INET };

static bool uuid_bytes(const cf_cell *c, uint8_t out[16]) {
    if (c->kind != CF_CELL_TEXT) return false;
    int n = 0;
    for (uint32_t i = 0; i < c->len; i++) {
        char ch = c->u.p[i];
        if (ch == '-') continue;
        int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (v < 0 || n >= 32) return false;
        if (n % 2 == 0) out[n / 2] = (uint8_t)(v << 4);
        else out[n / 2] |= (uint8_t)v;
        n++;
    }
    return n == 32;
}

static uint64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

/* TimeUUIDType.reorderTimestampBytes: time_hi, time_mid, time_low */
static uint64_t uuid_time(uint64_t msb) { return (msb << 48) | ((msb << 16) & 0xFFFF00000000ULL) | (msb >> 32); }

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

static int cmp_uuid(const uint8_t *a, const uint8_t *b, bool timeuuid) {
    uint64_t ma = be64(a), mb = be64(b), la = be64(a + 8), lb = be64(b + 8);
    if (!timeuuid) {
        int va = (int)(ma >> 12 & 0xf), vb = (int)(mb >> 12 & 0xf);
        if (va != vb) return va < vb ? -1 : 1;
        int c = va == 1 ? cmp_u64(uuid_time(ma), uuid_time(mb)) : cmp_u64(ma, mb);
        return c ? c : cmp_u64(la, lb);
    }
    int64_t ta = (int64_t)uuid_time(ma), tb = (int64_t)uuid_time(mb);
    if (ta != tb) return ta < tb ? -1 : 1;
    int64_t sa = (int64_t)(la ^ 0x0080808080808080ULL), sb = (int64_t)(lb ^ 0x0080808080808080ULL);
    return sa < sb ? -1 : sa > sb;
}

/* Exact decimal text ("-123.4500", "7"): sign, then magnitude. */
static int cmp_num(const cf_cell *a, const cf_cell *b) {
    const char *s[2] = {a->u.p, b->u.p};
    uint32_t n[2] = {a->len, b->len};
    bool neg[2];
    const char *ip[2], *fp[2];
    size_t il[2], fl[2];
    for (int k = 0; k < 2; k++) {
        const char *p = s[k], *e = s[k] + n[k];
        for (const char *q = p; q < e; q++)
            if (*q == 'e' || *q == 'E') return cf_sink_cell_cmp(a, b); /* not the exact text form */
        neg[k] = p < e && *p == '-';
        if (p < e && (*p == '-' || *p == '+')) p++;
        while (p < e && *p == '0') p++;
        const char *dot = memchr(p, '.', (size_t)(e - p));
        ip[k] = p, il[k] = (size_t)((dot ? dot : e) - p);
        fp[k] = dot ? dot + 1 : e, fl[k] = dot ? (size_t)(e - dot - 1) : 0;
        while (fl[k] && fp[k][fl[k] - 1] == '0') fl[k]--;
        if (!il[k] && !fl[k]) neg[k] = false; /* -0 */
    }
    if (neg[0] != neg[1]) return neg[0] ? -1 : 1;
    int c = il[0] != il[1] ? (il[0] < il[1] ? -1 : 1) : memcmp(ip[0], ip[1], il[0]);
    for (size_t i = 0; !c && i < (fl[0] > fl[1] ? fl[0] : fl[1]); i++) {
        char x = i < fl[0] ? fp[0][i] : '0', y = i < fl[1] ? fp[1][i] : '0';
        c = (x > y) - (x < y);
    }
    c = c < 0 ? -1 : c > 0;
    return neg[0] ? -c : c;
}

static bool inet_bytes(const cf_cell *c, uint8_t out[16], size_t *n) {
    char buf[64];
    if (c->kind != CF_CELL_TEXT || c->len >= sizeof buf) return false;
    memcpy(buf, c->u.p, c->len);
    buf[c->len] = 0;
    if (inet_pton(AF_INET, buf, out) == 1) return *n = 4, true;
    if (inet_pton(AF_INET6, buf, out) == 1) return *n = 16, true;
    return false;
}

static int cmp_typed(uint8_t how, const cf_cell *a, const cf_cell *b) {
    if (a->kind == CF_CELL_TEXT && b->kind == CF_CELL_TEXT) {
        uint8_t x[16], y[16];
        size_t nx, ny;
        switch (how) {
        case CMP_NUM: return cmp_num(a, b);
        case CMP_UUID:
        case CMP_TIMEUUID:
            if (uuid_bytes(a, x) && uuid_bytes(b, y)) return cmp_uuid(x, y, how == CMP_TIMEUUID);
            break;
        case CMP_INET:
            if (inet_bytes(a, x, &nx) && inet_bytes(b, y, &ny)) {
                int c = memcmp(x, y, nx < ny ? nx : ny);
                return c ? (c < 0 ? -1 : 1) : (nx < ny ? -1 : nx > ny);
            }
            break;
        default: break;
        }
    }
    return cf_sink_cell_cmp(a, b);
}

static uint8_t cmp_of_cql(const cf_cql_type *t) {
    if (!t) return CMP_PLAIN;
    switch (t->kind) {
    case CF_CQL_DECIMAL:
    case CF_CQL_VARINT: return CMP_NUM;
    case CF_CQL_UUID: return CMP_UUID;
    case CF_CQL_TIMEUUID: return CMP_TIMEUUID;
    case CF_CQL_INET: return CMP_INET;
    default: return CMP_PLAIN;
    }
}

static uint8_t cmp_of(const cf_schema *fs, const cf_cql_type *t) {
    if (t) return cmp_of_cql(t);
    return fs && sk_col_type_of(fs) == CF_COL_NUMERIC ? CMP_NUM : CMP_PLAIN;
}

/* ---------------- the state's bytes ---------------- */

static void w_u8(cf_buf *b, uint8_t v) { cf_buf_append_byte(b, v); }
static void w_u32(cf_buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    cf_buf_append(b, x, 4);
}
static void w_i64(cf_buf *b, int64_t v) {
    uint64_t u = (uint64_t)v;
    w_u32(b, (uint32_t)u);
    w_u32(b, (uint32_t)(u >> 32));
}
static void w_bytes(cf_buf *b, const char *p, uint32_t n) {
    w_u32(b, p ? n : UINT32_MAX);
    if (p && n) cf_buf_append(b, p, n);
}
static void w_cell(cf_buf *b, const cf_cell *c) {
    w_u8(b, c->kind);
    if (c->kind == CF_CELL_INT) w_i64(b, c->u.i);
    else if (c->kind == CF_CELL_REAL) {
        int64_t bits;
        memcpy(&bits, &c->u.f, 8);
        w_i64(b, bits);
    } else if (c->kind == CF_CELL_TEXT || c->kind == CF_CELL_BLOB) w_bytes(b, c->u.p, c->len);
}

typedef struct rd {
    const uint8_t *p, *end;
    bool bad;
} rd;

static bool need(rd *r, size_t n) {
    if (r->bad || (size_t)(r->end - r->p) < n) return r->bad = true, false;
    return true;
}
static uint8_t r_u8(rd *r) { return need(r, 1) ? *r->p++ : 0; }
static uint32_t r_u32(rd *r) {
    if (!need(r, 4)) return 0;
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
    r->p += 4;
    return v;
}
static int64_t r_i64(rd *r) {
    uint64_t lo = r_u32(r), hi = r_u32(r);
    return (int64_t)(lo | hi << 32);
}
static char *r_bytes(rd *r, uint32_t *n) {
    uint32_t l = r_u32(r);
    *n = 0;
    if (l == UINT32_MAX || r->bad) return NULL;
    if (!need(r, l)) return NULL;
    char *s = cf_xmalloc(l + 1);
    memcpy(s, r->p, l);
    s[l] = 0;
    r->p += l;
    *n = l;
    return s;
}
static cf_cell r_cell(rd *r) {
    cf_cell c;
    memset(&c, 0, sizeof c);
    c.kind = r_u8(r);
    if (c.kind == CF_CELL_INT) c.u.i = r_i64(r);
    else if (c.kind == CF_CELL_REAL) {
        int64_t bits = r_i64(r);
        memcpy(&c.u.f, &bits, 8);
    } else if (c.kind == CF_CELL_TEXT || c.kind == CF_CELL_BLOB) {
        char *s = r_bytes(r, &c.len);
        c.u.p = s ? s : cf_xstrdup("");
    } else if (c.kind != CF_CELL_NULL) r->bad = true;
    return c;
}

static void part_clear(cs_part *p) {
    for (size_t i = 0; i < p->nranges; i++) {
        for (size_t j = 0; j < p->ranges[i].np; j++) cell_free(&p->ranges[i].p[j].v);
        free(p->ranges[i].p);
    }
    free(p->ranges);
    for (size_t i = 0; i < p->nrows; i++) {
        cs_row *w = &p->rows[i];
        for (size_t j = 0; w->ck && j < p->tab->n_ck; j++) cell_free(&w->ck[j]);
        free(w->ck);
        for (size_t j = 0; j < w->ncols; j++) col_free(&w->cols[j]);
        free(w->cols);
    }
    free(p->rows);
    free(p->rix);
    p->ranges = NULL, p->rows = NULL, p->nranges = p->nrows = 0;
    p->rix = NULL, p->rixcap = 0;
}

static void state_write(const cs_part *p, cf_buf *b) {
    w_u32(b, STATE_MAGIC);
    w_i64(b, p->pdel);
    w_i64(b, p->pmax);
    w_u32(b, (uint32_t)p->tab->n_ck);
    w_u32(b, (uint32_t)p->nranges);
    for (size_t i = 0; i < p->nranges; i++) {
        w_i64(b, p->ranges[i].ts);
        w_u32(b, (uint32_t)p->ranges[i].np);
        for (size_t j = 0; j < p->ranges[i].np; j++) {
            w_u8(b, p->ranges[i].p[j].ck);
            w_u8(b, p->ranges[i].p[j].op);
            w_cell(b, &p->ranges[i].p[j].v);
        }
    }
    w_u32(b, (uint32_t)p->nrows);
    for (size_t i = 0; i < p->nrows; i++) {
        const cs_row *w = &p->rows[i];
        w_u8(b, w->is_static);
        if (!w->is_static)
            for (size_t j = 0; j < p->tab->n_ck; j++) w_cell(b, &w->ck[j]);
        w_i64(b, w->live);
        w_i64(b, w->del);
        w_u32(b, (uint32_t)w->ncols);
        for (size_t j = 0; j < w->ncols; j++) {
            const cs_col *c = &w->cols[j];
            w_bytes(b, c->name, (uint32_t)strlen(c->name));
            w_u8(b, c->kind);
            w_i64(b, c->ts);
            w_u8(b, c->dead);
            w_cell(b, &c->v);
            w_i64(b, c->cdel);
            w_u32(b, (uint32_t)c->nel);
            for (size_t e = 0; e < c->nel; e++) {
                const cs_el *x = &c->el[e];
                w_cell(b, &x->k);
                w_i64(b, x->ts);
                w_u8(b, x->dead);
                w_bytes(b, x->kj, x->kjn);
                w_bytes(b, x->vj, x->vjn);
            }
        }
    }
}

static bool state_read(cs_part *p, const uint8_t *data, size_t n) {
    rd r = {data, data + n, false};
    if (r_u32(&r) != STATE_MAGIC) return false;
    p->pdel = r_i64(&r);
    p->pmax = r_i64(&r);
    if (r_u32(&r) != p->tab->n_ck) return false;
    uint32_t nr = r_u32(&r);
    if (r.bad || nr > n) return false;
    p->ranges = cf_xcalloc(nr ? nr : 1, sizeof *p->ranges);
    for (uint32_t i = 0; i < nr && !r.bad; i++) {
        cs_range *g = &p->ranges[p->nranges++];
        g->ts = r_i64(&r);
        uint32_t np = r_u32(&r);
        if (r.bad || np > 64) return r.bad = true, false;
        g->p = cf_xcalloc(np ? np : 1, sizeof *g->p);
        for (uint32_t j = 0; j < np && !r.bad; j++) {
            g->p[j].ck = r_u8(&r);
            g->p[j].op = r_u8(&r);
            g->p[j].v = r_cell(&r);
            g->np++;
            if (g->p[j].ck >= p->tab->n_ck || g->p[j].op > 4) r.bad = true;
        }
    }
    uint32_t nw = r_u32(&r);
    if (r.bad || nw > n) return false;
    p->rows = cf_xcalloc(nw ? nw : 1, sizeof *p->rows);
    for (uint32_t i = 0; i < nw && !r.bad; i++) {
        cs_row *w = &p->rows[p->nrows++];
        w->is_static = r_u8(&r);
        if (!w->is_static) {
            w->ck = cf_xcalloc(p->tab->n_ck ? p->tab->n_ck : 1, sizeof *w->ck);
            for (size_t j = 0; j < p->tab->n_ck; j++) w->ck[j] = r_cell(&r);
        }
        w->live = r_i64(&r);
        w->del = r_i64(&r);
        uint32_t nc = r_u32(&r);
        if (r.bad || nc > n) return false;
        w->cols = cf_xcalloc(nc ? nc : 1, sizeof *w->cols);
        for (uint32_t j = 0; j < nc && !r.bad; j++) {
            cs_col *c = &w->cols[w->ncols++];
            uint32_t l;
            c->name = r_bytes(&r, &l);
            if (!c->name) c->name = cf_xstrdup(""), r.bad = true;
            c->kind = r_u8(&r);
            c->ts = r_i64(&r);
            c->dead = r_u8(&r);
            c->v = r_cell(&r);
            c->cdel = r_i64(&r);
            uint32_t ne = r_u32(&r);
            if (r.bad || ne > n) return false;
            c->el = cf_xcalloc(ne ? ne : 1, sizeof *c->el);
            c->capel = ne ? ne : 1;
            for (uint32_t e = 0; e < ne && !r.bad; e++) {
                cs_el *x = &c->el[c->nel++];
                x->k = r_cell(&r);
                x->ts = r_i64(&r);
                x->dead = r_u8(&r);
                x->kj = r_bytes(&r, &x->kjn);
                x->vj = r_bytes(&r, &x->vjn);
            }
        }
    }
    return !r.bad && r.p == r.end;
}

/* ---------------- partitions in memory ---------------- */

static uint64_t hash_key(const cs_tab *t, const uint8_t *k, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(uintptr_t)t;
    for (size_t i = 0; i < n; i++) h = (h ^ k[i]) * 0x100000001b3ULL;
    return h;
}

static void encode_cells(cf_buf *b, const cf_cell *c, size_t n) {
    for (size_t i = 0; i < n; i++) w_cell(b, &c[i]);
}

static void parts_clear(sk_cass *c) {
    for (size_t i = 0; i < c->htcap; i++) {
        cs_part *p = c->ht[i];
        while (p) {
            cs_part *nx = p->next;
            part_clear(p);
            free(p->key);
            free(p);
            p = nx;
        }
        c->ht[i] = NULL;
    }
    c->nparts = 0;
}

/* The partition's state: in memory since the last flush, else stored, else
 * new. */
static cf_code part_get(cf_sink *s, sk_cass *c, cs_tab *t, const cf_cell *pk, cs_part **out, cf_err *err) {
    cf_buf kb = CF_BUF_INIT;
    encode_cells(&kb, pk, t->n_pk);
    if (!c->htcap) {
        c->htcap = 1024;
        c->ht = cf_xcalloc(c->htcap, sizeof *c->ht);
    }
    uint64_t h = hash_key(t, (const uint8_t *)kb.data, kb.len);
    size_t slot = h & (c->htcap - 1);
    for (cs_part *p = c->ht[slot]; p; p = p->next)
        if (p->tab == t && p->klen == kb.len && memcmp(p->key, kb.data, kb.len) == 0) {
            cf_buf_free(&kb);
            p->pk = (cf_cell *)pk;
            *out = p;
            return CF_OK;
        }
    cs_part *p = cf_xcalloc(1, sizeof *p);
    p->tab = t;
    p->klen = kb.len;
    p->key = (uint8_t *)cf_buf_detach(&kb, NULL);
    p->pk = (cf_cell *)pk;
    p->pdel = p->pmax = TS_NONE;
    void *ts;
    const cf_sink_target *tg = sk_engine_target(s, &ts);
    cf_buf v = CF_BUF_INIT;
    bool found = false;
    cf_code rc = tg->state_get(ts, t->t->name, p->key, p->klen, &v, &found, err);
    if (!rc && found && !state_read(p, (const uint8_t *)v.data, v.len)) {
        cf_err_set(err, CF_ERR_INVALID, "the stored Cassandra state of a partition of table \"%s\" is damaged",
                   t->t->name);
        cf_err_detail(err, "%zu bytes in \"_cdc_cassandra_state\" that do not decode", v.len);
        cf_err_hint(err, "the table and its state must be rebuilt from the start of the events (drop both)");
        rc = CF_ERR_INVALID;
    }
    cf_buf_free(&v);
    if (rc) {
        part_clear(p);
        free(p->key);
        free(p);
        return rc;
    }
    p->next = c->ht[slot];
    c->ht[slot] = p;
    c->nparts++;
    *out = p;
    return CF_OK;
}

/* ---------------- tables ---------------- */

static const cf_field *field(const cf_schema *s, const char *name) {
    return s && s->type == CF_STRUCT ? cf_schema_field(s, name) : NULL;
}

static const char *cql_name(const cf_field *f) {
    const char *n = cf_schema_param(f->schema, "cassandra.column");
    return n ? n : f->name;
}

/* The column's kind: from the CQL schema when known, else from its Connect
 * type (an array is taken as a list). */
static uint8_t col_kind(const cs_tab *t, const cf_field *f) {
    if (t->cql) {
        const cf_cass_column *cc = cf_cass_table_column(t->cql, cql_name(f));
        if (cc) {
            if (!cf_cql_type_is_multicell(cc->type)) return K_SIMPLE;
            switch (cc->type->kind) {
            case CF_CQL_LIST: return K_LIST;
            case CF_CQL_SET: return K_SET;
            case CF_CQL_MAP: return K_MAP;
            case CF_CQL_UDT: return K_UDT;
            default: return K_SIMPLE;
            }
        }
    }
    switch (f->schema->type) {
    case CF_ARRAY: return K_LIST;
    case CF_MAP: return K_MAP;
    case CF_STRUCT: return K_UDT;
    default: return K_SIMPLE;
    }
}

static bool col_static(const cs_tab *t, const cf_field *f) {
    if (!t->cql) return false;
    const cf_cass_column *cc = cf_cass_table_column(t->cql, cql_name(f));
    return cc && cc->kind == CF_CASS_STATIC;
}

/* Columns the CQL schema does not know (none given, or a file older than an
 * ALTER TABLE ADD) whose payload field says its CQL type (the sidecar's
 * "cassandra.type" and "cassandra.kind" parameters): added to the table's own
 * copy, so that a set stays a set, a frozen collection one value, a static
 * column static and a uuid ordered as a uuid. A type that does not parse
 * (a UDT the schema does not define) is left to the Connect type. */
static void learn_columns(sk_cass *c, cs_tab *t, const cf_schema *ps, const cf_schema *kschema, const cf_schema *cl,
                          const char *ks, const char *tn) {
    for (size_t i = 0; i < ps->n_fields; i++) {
        const cf_field *f = &ps->fields[i];
        const char *ty = cf_schema_param(f->schema, "cassandra.type");
        const char *name = cql_name(f);
        if (!ty || (t->cql && cf_cass_table_column(t->cql, name))) continue;
        cf_cql_type *parsed = NULL;
        cf_err e = {0};
        if (cf_cql_type_parse(ty, ks, c->schema, &parsed, &e) != CF_OK) {
            CF_DEBUG("sink", "%s.%s column %s: type %s not used (%s): taken from its Connect type", ks, tn, name, ty,
                     e.message);
            continue;
        }
        cf_cass_column_kind kind = CF_CASS_REGULAR;
        if (field(kschema, f->name)) kind = CF_CASS_PARTITION_KEY;
        else if (field(cl, f->name)) kind = CF_CASS_CLUSTERING;
        else if (cf_schema_param(f->schema, "cassandra.kind") &&
                 strcmp(cf_schema_param(f->schema, "cassandra.kind"), "static") == 0)
            kind = CF_CASS_STATIC;
        if (!t->own) {
            t->own = t->cql ? cf_cass_table_clone(t->cql) : cf_cass_table_new(ks, tn);
            t->cql = t->own;
        }
        if (cf_cass_table_add_column(t->own, name, parsed, kind, -1, false, &e) != CF_OK)
            CF_DEBUG("sink", "%s.%s column %s: %s", ks, tn, name, e.message);
    }
}

/* The table of an event: key = partition key (the record key's fields) +
 * clustering columns (the fields of the Clustering struct of the range
 * predicates' schema); every other payload field a column. */
static cf_code tab_for(cf_sink *s, sk_cass *c, const cf_record *rec, const cf_schema *env, const char *ks,
                       const char *tn, cs_tab **out, cf_err *err) {
    const char *topic = rec->topic ? rec->topic : "";
    cs_tab *t = NULL;
    for (size_t i = 0; i < c->ntabs && !t; i++)
        if (strcmp(c->tabs[i]->topic, topic) == 0) t = c->tabs[i];
    const cf_field *pf = field(env, "payload");
    const cf_schema *ps = pf ? pf->schema : NULL;
    const cf_schema *kschema = rec->key && rec->key->type == CF_STRUCT ? rec->key->u.st.schema : NULL;
    if (!ps || ps->type != CF_STRUCT || !kschema || kschema->n_fields == 0) {
        cf_err_set(err, CF_ERR_SCHEMA, "Cassandra change event without %s", !kschema ? "a key struct" : "a payload struct");
        cf_err_hint(err, "the record key must be the partition key struct the sidecar writes (key.converter with "
                         "schemas)");
        return CF_ERR_SCHEMA;
    }
    if (t && t->payload_schema == ps) {
        *out = t;
        return CF_OK;
    }
    /* clustering columns */
    const cf_field *rf = field(env, "range");
    const cf_schema *cl = NULL;
    if (rf && rf->schema->type == CF_ARRAY && rf->schema->value_schema &&
        rf->schema->value_schema->type == CF_STRUCT) {
        const cf_field *vf = field(rf->schema->value_schema, "value");
        if (vf && vf->schema->type == CF_STRUCT) cl = vf->schema;
    }
    size_t n_ck = cl ? cl->n_fields : 0;
    if (!t) {
        t = cf_xcalloc(1, sizeof *t);
        t->topic = cf_xstrdup(topic);
        cf_code rc = sk_engine_table(s, topic, &t->t, err);
        if (rc) {
            free(t->topic);
            free(t);
            return rc;
        }
        if (c->schema) t->cql = cf_cass_schema_table_by_name(c->schema, ks, tn);
        if (c->schema && !t->cql && !(ps->n_fields && cf_schema_param(ps->fields[0].schema, "cassandra.type")))
            CF_WARN("sink", "table %s.%s is not in cassandra.schema.files (and its events carry no CQL types): array "
                    "columns are taken as lists", ks, tn);
        c->tabs = cf_xrealloc(c->tabs, (c->ntabs + 1) * sizeof *c->tabs);
        c->tabs[c->ntabs++] = t;
        t->n_pk = kschema->n_fields;
        t->n_ck = n_ck;
    }
    if (t->n_pk != kschema->n_fields || t->n_ck != n_ck) {
        cf_err_set(err, CF_ERR_SCHEMA, "the primary key of Cassandra table %s.%s changed (%zu + %zu columns, was %zu + %zu)",
                   ks, tn, kschema->n_fields, n_ck, t->n_pk, t->n_ck);
        return CF_ERR_SCHEMA;
    }
    learn_columns(c, t, ps, kschema, cl, ks, tn);
    int *cof = cf_xmalloc((ps->n_fields ? ps->n_fields : 1) * sizeof *cof);
    int *ckf = cf_xmalloc((n_ck ? n_ck : 1) * sizeof *ckf);
    cf_code rc = CF_OK;
    /* key columns first: partition key, then clustering */
    for (size_t i = 0; i < t->n_pk + n_ck && !rc; i++) {
        const char *name = i < t->n_pk ? kschema->fields[i].name : cl->fields[i - t->n_pk].name;
        const cf_field *f = field(ps, name);
        if (!f) {
            rc = cf_err_set(err, CF_ERR_SCHEMA, "key column \"%s\" of %s.%s is not in the payload", name, ks, tn);
            break;
        }
        int idx;
        rc = sk_engine_column(s, t->t, name, sk_col_type_of(f->schema), true, i, &idx, err);
        if (i >= t->n_pk) ckf[i - t->n_pk] = (int)f->index;
        if (i >= t->n_pk) {
            const cf_cass_column *cc = t->cql ? cf_cass_table_column(t->cql, cql_name(f)) : NULL;
            if (!t->ck_cmp) t->ck_cmp = cf_xcalloc(n_ck, 1);
            t->ck_cmp[i - t->n_pk] = cmp_of(f->schema, cc ? cc->type : NULL);
        }
    }
    for (size_t i = 0; i < ps->n_fields && !rc; i++) {
        const cf_field *f = &ps->fields[i];
        bool key = false;
        for (size_t j = 0; j < kschema->n_fields; j++) key = key || strcmp(kschema->fields[j].name, f->name) == 0;
        for (size_t j = 0; j < n_ck; j++) key = key || strcmp(cl->fields[j].name, f->name) == 0;
        cof[i] = -1;
        if (key) continue;
        cf_col_type ct = col_kind(t, f) == K_SIMPLE ? sk_col_type_of(f->schema) : CF_COL_JSON;
        rc = sk_engine_column(s, t->t, f->name, ct, false, 0, &cof[i], err);
    }
    if (rc) {
        free(cof);
        free(ckf);
        cf_err_where(err, "%s.%s", ks, tn);
        return rc;
    }
    free(t->col_of_field);
    free(t->ck_field);
    cf_schema_unref(t->payload_ref);
    t->col_of_field = cof;
    t->ck_field = ckf;
    t->payload_ref = cf_schema_ref((cf_schema *)ps);
    t->payload_schema = ps;
    *out = t;
    return CF_OK;
}

/* ---------------- merging an event ---------------- */

static uint64_t ck_hash(const cf_cell *ck, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t j = 0; j < n; j++) {
        const cf_cell *c = &ck[j];
        h = (h ^ c->kind) * 0x100000001b3ULL;
        if (c->kind == CF_CELL_TEXT || c->kind == CF_CELL_BLOB)
            for (uint32_t i = 0; i < c->len; i++) h = (h ^ (uint8_t)c->u.p[i]) * 0x100000001b3ULL;
        else if (c->kind == CF_CELL_INT || c->kind == CF_CELL_REAL) {
            uint64_t v;
            memcpy(&v, &c->u, 8);
            h = (h ^ v) * 0x100000001b3ULL;
        }
    }
    return h;
}

static bool ck_equal(const cs_part *p, const cs_row *w, const cf_cell *ck, bool is_static) {
    if (w->is_static != is_static) return false;
    for (size_t j = 0; !is_static && j < p->tab->n_ck; j++)
        if (w->ck[j].kind != ck[j].kind || cf_sink_cell_cmp(&w->ck[j], &ck[j]) != 0) return false;
    return true;
}

/* The index of a partition's clustering rows: a wide partition's events
 * would otherwise search its rows one by one (quadratic). */
static void rix_put(cs_part *p, size_t row) {
    const cs_row *w = &p->rows[row];
    size_t j = w->is_static ? 0 : ck_hash(w->ck, p->tab->n_ck) & (p->rixcap - 1);
    while (p->rix[j]) j = (j + 1) & (p->rixcap - 1);
    p->rix[j] = (uint32_t)row + 1;
}

static void rix_grow(cs_part *p) {
    free(p->rix);
    p->rixcap = p->rixcap ? p->rixcap * 2 : 64;
    while (p->rixcap < 2 * p->nrows) p->rixcap *= 2;
    p->rix = cf_xcalloc(p->rixcap, sizeof *p->rix);
    for (size_t i = 0; i < p->nrows; i++) rix_put(p, i);
}

static cs_row *row_find(cs_part *p, const cf_cell *ck, bool is_static, bool add) {
    if (p->nrows > 16 && p->rixcap < 2 * p->nrows) rix_grow(p);
    if (p->rixcap) {
        size_t j = is_static ? 0 : ck_hash(ck, p->tab->n_ck) & (p->rixcap - 1);
        for (; p->rix[j]; j = (j + 1) & (p->rixcap - 1))
            if (ck_equal(p, &p->rows[p->rix[j] - 1], ck, is_static)) return &p->rows[p->rix[j] - 1];
    } else {
        for (size_t i = 0; i < p->nrows; i++)
            if (ck_equal(p, &p->rows[i], ck, is_static)) return &p->rows[i];
    }
    if (!add) return NULL;
    p->rows = cf_xrealloc(p->rows, (p->nrows + 1) * sizeof *p->rows);
    cs_row *w = &p->rows[p->nrows++];
    memset(w, 0, sizeof *w);
    w->is_static = is_static;
    w->live = w->del = TS_NONE;
    if (!is_static) {
        w->ck = cf_xcalloc(p->tab->n_ck ? p->tab->n_ck : 1, sizeof *w->ck);
        for (size_t j = 0; j < p->tab->n_ck; j++) w->ck[j] = cell_dup(&ck[j]);
    }
    if (p->rixcap) {
        if (p->rixcap < 2 * p->nrows) rix_grow(p);
        else rix_put(p, p->nrows - 1);
    }
    return w;
}

static cs_col *col_find(cs_row *w, const char *name, uint8_t kind) {
    for (size_t i = 0; i < w->ncols; i++)
        if (strcmp(w->cols[i].name, name) == 0) return &w->cols[i];
    w->cols = cf_xrealloc(w->cols, (w->ncols + 1) * sizeof *w->cols);
    cs_col *c = &w->cols[w->ncols++];
    memset(c, 0, sizeof *c);
    c->name = cf_xstrdup(name);
    c->kind = kind;
    c->ts = c->cdel = TS_NONE;
    return c;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Cassandra's reconciliation of two versions of one cell: the higher
 * timestamp, a tombstone on a tie, then the greater value. */
static bool newer(int64_t ts, bool dead, const cf_cell *v, int64_t ots, bool odead, const cf_cell *ov) {
    if (ts != ots) return ts > ots;
    if (dead != odead) return dead;
    return cf_sink_cell_cmp(v, ov) > 0;
}

static cs_el *el_find(cs_col *c, const cf_cell *k, int64_t list_ts) {
    for (size_t i = 0; i < c->nel; i++)
        if (cf_sink_cell_cmp(&c->el[i].k, k) == 0 && (c->kind != K_LIST || c->el[i].ts == list_ts)) return &c->el[i];
    return NULL;
}

static void el_put(cs_col *c, const cf_cell *k, int64_t ts, bool dead, const cf_cell *kj, const cf_cell *vj) {
    cs_el *e = el_find(c, k, ts);
    cf_cell vv = vj ? *vj : (cf_cell){0};
    if (e) {
        cf_cell ov = e->vj ? (cf_cell){.kind = CF_CELL_TEXT, .len = e->vjn, .u.p = e->vj} : (cf_cell){0};
        if (!newer(ts, dead, &vv, e->ts, e->dead, &ov)) return;
        free(e->kj);
        free(e->vj);
        cell_free(&e->k);
    } else {
        if (c->nel == c->capel) c->el = cf_xrealloc(c->el, (c->capel = c->capel ? c->capel * 2 : 4) * sizeof *c->el);
        e = &c->el[c->nel++];
    }
    memset(e, 0, sizeof *e);
    e->k = cell_dup(k);
    e->ts = ts;
    e->dead = dead;
    if (kj && kj->kind == CF_CELL_TEXT) e->kj = cf_xstrdup(kj->u.p ? kj->u.p : ""), e->kjn = kj->len;
    if (vj && vj->kind == CF_CELL_TEXT) e->vj = cf_xstrdup(vj->u.p ? vj->u.p : ""), e->vjn = vj->len;
}

static bool listed(const cf_value *arr, const char *name) {
    if (!arr || arr->type != CF_ARRAY) return false;
    for (size_t i = 0; i < arr->u.arr.len; i++) {
        const cf_value *x = arr->u.arr.items[i];
        if (x && x->type == CF_STRING && strcmp(x->u.s.ptr, name) == 0) return true;
    }
    return false;
}

static const char *str_field(const cf_value *st, const char *name) {
    const cf_value *v = cf_value_struct_get(st, name);
    return v && v->type == CF_STRING ? v->u.s.ptr : NULL;
}

/* A JSON fragment (sk_cell_from_value's rendering) and the typed cell of one value. */
static cf_code json_cell(sk_ctx *x, const cf_schema *fs, const cf_value *v, cf_cell *out, cf_err *err) {
    return sk_cell_from_value(x, fs, v, CF_COL_JSON, out, err);
}

/* The elements of one write of a multi-cell column (whole value or
 * elements only). */
static cf_code put_elements(sk_ctx *x, cs_col *c, const cf_schema *fs, const cf_value *v, int64_t ts, bool dead,
                            bool only_written_fields, cf_err *err) {
    cf_code rc = CF_OK;
    if (!v) return CF_OK;
    if (c->kind == K_UDT && v->type == CF_STRUCT) {
        for (size_t i = 0; i < fs->n_fields && !rc; i++) {
            const cf_value *fv = v->u.st.fields[i];
            if (!fv) continue; /* not written (a field set to null comes by name in elementFields) */
            cf_cell k = {.kind = CF_CELL_INT, .u.i = (int64_t)i}, vj;
            rc = json_cell(x, fs->fields[i].schema, fv, &vj, err);
            if (!rc) el_put(c, &k, ts, dead, NULL, &vj);
        }
        (void)only_written_fields;
        return rc;
    }
    if (v->type == CF_ARRAY) {
        const cf_schema *es = fs->value_schema;
        for (size_t i = 0; i < v->u.arr.len && !rc; i++) {
            const cf_value *ev = v->u.arr.items[i];
            cf_cell k, j;
            if (c->kind == K_LIST) {
                k = (cf_cell){.kind = CF_CELL_INT, .u.i = (int64_t)i};
                rc = json_cell(x, es, ev, &j, err);
                if (!rc) el_put(c, &k, ts, dead, NULL, &j);
            } else {
                rc = sk_cell_from_value(x, es, ev, sk_col_type_of(es), &k, err);
                if (!rc) rc = json_cell(x, es, ev, &j, err);
                if (!rc) el_put(c, &k, ts, dead, &j, NULL);
            }
        }
        return rc;
    }
    if (v->type == CF_MAP) {
        for (size_t i = 0; i < v->u.map.len && !rc; i++) {
            const cf_value *kv = v->u.map.keys[i], *vv = v->u.map.vals[i];
            cf_cell k, kj, vj;
            rc = sk_cell_from_value(x, fs->key_schema, kv, sk_col_type_of(fs->key_schema), &k, err);
            if (!rc) rc = json_cell(x, fs->key_schema, kv, &kj, err);
            if (!rc) rc = json_cell(x, fs->value_schema, vv, &vj, err);
            if (!rc) el_put(c, &k, ts, dead || !vv, &kj, &vj);
        }
        return rc;
    }
    return cf_err_set(err, CF_ERR_SCHEMA, "column \"%s\" holds a %s where a collection or UDT was expected", c->name,
                      cf_type_name(v->type));
}

static const cf_cell *pred_value(const cs_pred *p) { return &p->v; }

static bool covered(const cs_tab *t, const cs_range *g, const cf_cell *ck) {
    for (size_t i = 0; i < g->np; i++) {
        int c = cmp_typed(t->ck_cmp ? t->ck_cmp[g->p[i].ck] : CMP_PLAIN, &ck[g->p[i].ck], pred_value(&g->p[i]));
        bool ok = g->p[i].op == 0 ? c < 0 : g->p[i].op == 1 ? c <= 0 : g->p[i].op == 2 ? c == 0 : g->p[i].op == 3 ? c >= 0 : c > 0;
        if (!ok) return false;
    }
    return true;
}

/* ---------------- rows out ---------------- */

static int el_order(const void *pa, const void *pb, void *how) {
    const cs_el *a = *(const cs_el *const *)pa, *b = *(const cs_el *const *)pb;
    if (a->k.kind == CF_CELL_INT && a->kj == NULL && a->vj && b->kj == NULL && a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1; /* list: write order, then position */
    return cmp_typed(*(const uint8_t *)how, &a->k, &b->k);
}

/* A multi-cell column's value as JSON (into the arena), or NULL. */
static bool col_json(cf_arena *a, const cs_col *c, int64_t shadow, const cf_schema *fs, uint8_t how, cf_cell *out) {
    int64_t lim = max64(shadow, c->cdel);
    const cs_el **alive = cf_xmalloc((c->nel ? c->nel : 1) * sizeof *alive);
    size_t n = 0;
    for (size_t i = 0; i < c->nel; i++)
        if (!c->el[i].dead && c->el[i].ts > lim) alive[n++] = &c->el[i];
    if (!n) {
        free(alive);
        return false;
    }
    qsort_r(alive, n, sizeof *alive, el_order, &how); /* Cassandra's order of set elements and map keys */
    cf_buf b = CF_BUF_INIT;
    if (c->kind == K_UDT) {
        cf_buf_append_byte(&b, '{');
        size_t nf = fs && fs->type == CF_STRUCT ? fs->n_fields : 0;
        for (size_t f = 0; f < nf; f++) {
            if (f) cf_buf_append_byte(&b, ',');
            cf_cell name;
            sk_ctx x = {a, true};
            cf_value *nv = cf_value_string(fs->fields[f].name);
            cf_err e;
            (void)sk_cell_from_value(&x, NULL, nv, CF_COL_JSON, &name, &e);
            cf_value_destroy(nv);
            cf_buf_append(&b, name.u.p, name.len);
            cf_buf_append_byte(&b, ':');
            const cs_el *hit = NULL;
            for (size_t i = 0; i < n && !hit; i++)
                if (alive[i]->k.u.i == (int64_t)f) hit = alive[i];
            if (hit && hit->vj) cf_buf_append(&b, hit->vj, hit->vjn);
            else cf_buf_append_str(&b, "null");
        }
        cf_buf_append_byte(&b, '}');
    } else if (c->kind == K_MAP) {
        bool strkeys = fs && fs->key_schema && fs->key_schema->type == CF_STRING;
        cf_buf_append_byte(&b, strkeys ? '{' : '[');
        for (size_t i = 0; i < n; i++) {
            if (i) cf_buf_append_byte(&b, ',');
            if (!strkeys) cf_buf_append_byte(&b, '[');
            cf_buf_append(&b, alive[i]->kj ? alive[i]->kj : "null", alive[i]->kj ? alive[i]->kjn : 4);
            cf_buf_append_byte(&b, strkeys ? ':' : ',');
            cf_buf_append(&b, alive[i]->vj ? alive[i]->vj : "null", alive[i]->vj ? alive[i]->vjn : 4);
            if (!strkeys) cf_buf_append_byte(&b, ']');
        }
        cf_buf_append_byte(&b, strkeys ? '}' : ']');
    } else {
        cf_buf_append_byte(&b, '[');
        for (size_t i = 0; i < n; i++) {
            if (i) cf_buf_append_byte(&b, ',');
            const char *j = c->kind == K_SET ? alive[i]->kj : alive[i]->vj;
            uint32_t jn = c->kind == K_SET ? alive[i]->kjn : alive[i]->vjn;
            cf_buf_append(&b, j ? j : "null", j ? jn : 4);
        }
        cf_buf_append_byte(&b, ']');
    }
    free(alive);
    *out = (cf_cell){.kind = CF_CELL_TEXT, .len = (uint32_t)b.len, .u.p = cf_arena_strndup(a, b.data, b.len)};
    cf_buf_free(&b);
    return true;
}

/* The row's shadow: the newest deletion that covers it. */
static int64_t row_shadow(const cs_part *p, const cs_row *w) {
    int64_t sh = p->pdel;
    if (w->is_static) return sh;
    sh = max64(sh, w->del);
    for (size_t i = 0; i < p->nranges; i++)
        if (covered(p->tab, &p->ranges[i], w->ck)) sh = max64(sh, p->ranges[i].ts);
    return sh;
}

static const cf_schema *payload_field_schema(const cs_tab *t, const char *name) {
    const cf_field *f = field(t->payload_schema, name);
    return f ? f->schema : NULL;
}

/* The columns of row w that are alive, into cells (NULL elsewhere); returns
 * whether the row is alive. */
static bool row_cells(cf_arena *a, const cs_part *p, const cs_row *w, cf_cell *cells, size_t n_cells) {
    int64_t sh = row_shadow(p, w);
    bool live = w->live != TS_NONE && w->live > sh;
    const cf_sink_table *st = p->tab->t;
    for (size_t j = 0; j < w->ncols; j++) {
        const cs_col *c = &w->cols[j];
        int ci = -1;
        for (size_t k = st->n_key; k < st->n_cols && k < n_cells && ci < 0; k++)
            if (strcmp(st->cols[k].name, c->name) == 0) ci = (int)k;
        cf_cell v = {0};
        bool has;
        if (c->kind == K_SIMPLE) {
            has = !c->dead && c->ts != TS_NONE && c->ts > sh;
            if (has) v = cell_arena(a, &c->v);
        } else {
            const cf_schema *fs = payload_field_schema(p->tab, c->name);
            const cf_field *pf = field(p->tab->payload_schema, c->name);
            const cf_cass_column *cc = p->tab->cql && pf ? cf_cass_table_column(p->tab->cql, cql_name(pf)) : NULL;
            const cf_cql_type *et = NULL;
            if (cc && cc->type->kind == CF_CQL_SET) et = cf_cql_type_element(cc->type);
            if (cc && cc->type->kind == CF_CQL_MAP) et = cf_cql_type_key(cc->type);
            const cf_schema *es = fs ? (fs->type == CF_MAP ? fs->key_schema : fs->value_schema) : NULL;
            has = col_json(a, c, sh, fs, cmp_of(es, et), &v);
        }
        if (has) live = true;
        if (ci >= 0 && has) cells[ci] = v;
    }
    return live;
}

static cf_code emit_row(cf_sink *s, const cf_record *rec, cs_part *p, const cs_row *w, const cs_row *stat) {
    cf_sink_table *st = p->tab->t;
    cf_arena *a = sk_engine_arena(s);
    cf_cell *cells = cf_arena_alloc(a, (st->n_cols ? st->n_cols : 1) * sizeof *cells);
    memset(cells, 0, st->n_cols * sizeof *cells);
    bool live = row_cells(a, p, w, cells, st->n_cols);
    if (live && stat) { /* static columns: the partition's, in every row */
        cf_cell *sc = cf_arena_alloc(a, (st->n_cols ? st->n_cols : 1) * sizeof *sc);
        memset(sc, 0, st->n_cols * sizeof *sc);
        (void)row_cells(a, p, stat, sc, st->n_cols);
        for (size_t k = st->n_key; k < st->n_cols; k++)
            if (sc[k].kind != CF_CELL_NULL) cells[k] = sc[k];
    }
    for (size_t k = 0; k < p->tab->n_pk; k++) cells[k] = cell_arena(a, &p->pk[k]);
    for (size_t k = 0; k < p->tab->n_ck; k++) cells[p->tab->n_pk + k] = cell_arena(a, &w->ck[k]);
    cf_change *c = sk_engine_change(s, rec, st, live ? CF_CHANGE_UPSERT : CF_CHANGE_DELETE, cells);
    /* the partition's highest timestamp: never decreases, so each
     * recomputed row passes the engine's "newer or equal" rule */
    c->seq.n = st->seq_sections ? st->seq_sections : 1;
    c->seq.s[0] = (uint64_t)p->pmax ^ (1ULL << 63);
    for (uint8_t i = 1; i < c->seq.n; i++) c->seq.s[i] = 0;
    cf_seq_format(&c->seq, c->seq_text);
    return sk_engine_buffer(s, st, c);
}

/* ---------------- the entry points ---------------- */

bool sk_cass_is_event(const cf_record *rec) {
    const cf_value *v = rec->value;
    if (!v || v->type != CF_STRUCT) return false;
    const cf_schema *s = v->u.st.schema;
    const char *n = s ? s->name : NULL;
    size_t l = n ? strlen(n) : 0;
    if (l < 9 || strcmp(n + l - 9, ".Envelope") != 0) return false;
    const cf_field *op = field(s, "operationType"), *ts = field(s, "timestampMicros"), *up = field(s, "updateFields"),
                   *pl = field(s, "payload");
    return op && op->schema->type == CF_STRING && ts && ts->schema->type == CF_INT64 && up &&
           up->schema->type == CF_ARRAY && pl && pl->schema->type == CF_STRUCT && field(s, "sourceTable");
}

sk_cass *sk_cass_new(const cf_sink_options *o, cf_err *err) {
    sk_cass *c = cf_xcalloc(1, sizeof *c);
    c->newest = TS_NONE;
    c->grace_us = o->cassandra_gc_grace_s < 0 ? -1
                  : o->cassandra_gc_grace_s > INT64_MAX / 1000000 ? INT64_MAX
                                                                 : o->cassandra_gc_grace_s * 1000000;
    if (o->cassandra_schema && *o->cassandra_schema) {
        c->schema = cf_cass_schema_new();
        char *list = cf_xstrdup(o->cassandra_schema), *save = NULL;
        for (char *f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
            while (*f == ' ') f++;
            if (!*f) continue;
            if (cf_cass_ddl_parse_file(c->schema, f, err)) {
                cf_err_where(err, "cassandra.schema.files %s", f);
                free(list);
                sk_cass_destroy(c);
                return NULL;
            }
        }
        free(list);
    }
    return c;
}

void sk_cass_destroy(sk_cass *c) {
    if (!c) return;
    parts_clear(c);
    free(c->ht);
    for (size_t i = 0; i < c->ntabs; i++) {
        free(c->tabs[i]->topic);
        free(c->tabs[i]->col_of_field);
        free(c->tabs[i]->ck_field);
        free(c->tabs[i]->ck_cmp);
        cf_schema_unref(c->tabs[i]->payload_ref);
        cf_cass_table_unref(c->tabs[i]->own);
        free(c->tabs[i]);
    }
    free(c->tabs);
    cf_cass_schema_destroy(c->schema);
    free(c);
}

static int pred_op(const char *s) {
    static const char *const ops[] = {"LT", "LTE", "EQ", "GTE", "GT"};
    for (int i = 0; s && i < 5; i++)
        if (strcmp(s, ops[i]) == 0) return i;
    return -1;
}

cf_code sk_cass_route(cf_sink *s, sk_cass *c, const cf_record *rec, cf_err *err) {
    void *tsd;
    const cf_sink_target *tg = sk_engine_target(s, &tsd);
    if (!tg->state_get || !tg->state_put) {
        cf_err_set(err, CF_ERR_CONFIG, "target %s cannot apply Cassandra change events", tg->name);
        cf_err_detail(err, "Cassandra's semantics need the row state of every partition next to the tables "
                           "(\"_cdc_cassandra_state\"); targets sqlite, postgres and bigquery keep it");
        cf_err_hint(err, "use target sqlite, postgres or bigquery for cassandra-cdc topics");
        return CF_ERR_CONFIG;
    }
    const cf_value *ev = rec->value;
    const cf_schema *env = ev->u.st.schema;
    const char *op = str_field(ev, "operationType");
    const cf_value *tsv = cf_value_struct_get(ev, "timestampMicros");
    const char *ks = str_field(ev, "sourceKeyspace"), *tn = str_field(ev, "sourceTable");
    const cf_value *pay = cf_value_struct_get(ev, "payload");
    const cf_value *upd = cf_value_struct_get(ev, "updateFields");
    const cf_value *elem = cf_value_struct_get(ev, "elementFields");
    if (!op || !tsv || !pay || pay->type != CF_STRUCT || !ks || !tn) {
        cf_err_set(err, CF_ERR_SCHEMA, "Cassandra change event without operationType, timestampMicros, "
                                       "sourceKeyspace, sourceTable or payload");
        return CF_ERR_SCHEMA;
    }
    int64_t ts = tsv->u.i;
    c->newest = max64(c->newest, ts);
    cs_tab *t;
    cf_code rc = tab_for(s, c, rec, env, ks, tn, &t, err);
    if (rc) return rc;
    const cf_schema *ps = pay->u.st.schema;
    sk_ctx x = {sk_engine_arena(s), true};
    /* partition key cells (from the record key) */
    cf_cell *pk = cf_arena_alloc(x.arena, t->n_pk * sizeof *pk);
    for (size_t i = 0; i < t->n_pk; i++) {
        const cf_schema *kfs = rec->key->u.st.schema->fields[i].schema;
        const cf_value *kv = rec->key->u.st.fields[i];
        if (!kv) {
            cf_err_set(err, CF_ERR_SCHEMA, "partition key column \"%s\" is null", rec->key->u.st.schema->fields[i].name);
            return CF_ERR_SCHEMA;
        }
        rc = sk_cell_from_value(&x, kfs, kv, t->t->cols[i].type, &pk[i], err);
        if (rc) return rc;
    }
    cs_part *p;
    rc = part_get(s, c, t, pk, &p, err);
    if (rc) return rc;
    p->pmax = max64(p->pmax, ts);
    p->dirty = true;
    bool all = false;       /* every row of the partition changes */
    cs_row *one = NULL;     /* or this one */
    const cs_range *range = NULL;
    if (strcmp(op, "DELETE_PARTITION") == 0) {
        p->pdel = max64(p->pdel, ts);
        all = true;
    } else if (strcmp(op, "DELETE_RANGE") == 0) {
        const cf_value *rg = cf_value_struct_get(ev, "range");
        size_t n = rg && rg->type == CF_ARRAY ? rg->u.arr.len : 0;
        cs_range g = {ts, cf_xcalloc(n ? n : 1, sizeof(cs_pred)), 0};
        for (size_t i = 0; i < n && !rc; i++) {
            const cf_value *pr = rg->u.arr.items[i];
            const char *fname = pr ? str_field(pr, "field") : NULL;
            int o = pr ? pred_op(str_field(pr, "rangePredicateType")) : -1;
            const cf_value *val = pr ? cf_value_struct_get(pr, "value") : NULL;
            int ck = -1;
            for (size_t j = 0; fname && j < t->n_ck; j++)
                if (strcmp(t->t->cols[t->n_pk + j].name, fname) == 0) ck = (int)j;
            const cf_value *cv = val && val->type == CF_STRUCT ? cf_value_struct_get(val, fname) : NULL;
            if (ck < 0 || o < 0 || !cv) {
                rc = cf_err_set(err, CF_ERR_SCHEMA, "range predicate %zu of a DELETE_RANGE is not a clustering column "
                                                    "bound", i);
                break;
            }
            const cf_field *vf = field(val->u.st.schema, fname);
            cf_cell cell;
            rc = sk_cell_from_value(&x, vf->schema, cv, t->t->cols[t->n_pk + (size_t)ck].type, &cell, err);
            if (!rc) g.p[g.np++] = (cs_pred){(uint8_t)ck, (uint8_t)o, cell_dup(&cell)};
        }
        if (rc) {
            for (size_t j = 0; j < g.np; j++) cell_free(&g.p[j].v);
            free(g.p);
            return rc;
        }
        /* the same deletion again (a replica's copy): kept once */
        bool dup = false;
        for (size_t i = 0; i < p->nranges && !dup; i++) {
            const cs_range *h = &p->ranges[i];
            dup = h->ts == g.ts && h->np == g.np;
            for (size_t j = 0; dup && j < g.np; j++)
                dup = h->p[j].ck == g.p[j].ck && h->p[j].op == g.p[j].op && cf_sink_cell_cmp(&h->p[j].v, &g.p[j].v) == 0;
        }
        if (dup) {
            for (size_t j = 0; j < g.np; j++) cell_free(&g.p[j].v);
            free(g.p);
        } else {
            p->ranges = cf_xrealloc(p->ranges, (p->nranges + 1) * sizeof *p->ranges);
            p->ranges[p->nranges++] = g;
        }
        range = &p->ranges[p->nranges - 1];
        all = true;
        (void)range;
    } else {
        /* a row (or the static row) */
        cf_cell *ck = cf_arena_alloc(x.arena, (t->n_ck ? t->n_ck : 1) * sizeof *ck);
        bool any_null = false, all_null = true, ck_written = false;
        for (size_t j = 0; j < t->n_ck; j++) {
            const cf_field *f = &ps->fields[t->ck_field[j]];
            const cf_value *v = pay->u.st.fields[f->index];
            if (listed(upd, f->name)) ck_written = true;
            if (!v) {
                any_null = true;
                memset(&ck[j], 0, sizeof ck[j]);
                continue;
            }
            all_null = false;
            rc = sk_cell_from_value(&x, f->schema, v, t->t->cols[t->n_pk + j].type, &ck[j], err);
            if (rc) return rc;
        }
        bool is_static = t->n_ck > 0 && all_null && !ck_written;
        if (any_null && !is_static) {
            cf_err_set(err, CF_ERR_SCHEMA, "a %s event of %s.%s with a null clustering column", op, ks, tn);
            return CF_ERR_SCHEMA;
        }
        cs_row *w = row_find(p, ck, is_static, true);
        bool written = false;
        for (size_t i = 0; i < ps->n_fields; i++)
            if (t->col_of_field[i] >= 0 && listed(upd, ps->fields[i].name)) written = true;
        if (strcmp(op, "INSERT") == 0) w->live = max64(w->live, ts);
        if (strcmp(op, "DELETE") == 0 && !written) w->del = max64(w->del, ts);
        bool ced = strcmp(op, "COMPLEX_ELEMENT_DELETE") == 0;
        for (size_t i = 0; i < ps->n_fields && !rc; i++) {
            const cf_field *f = &ps->fields[i];
            if (t->col_of_field[i] < 0 || !listed(upd, f->name)) continue;
            const cf_value *v = pay->u.st.fields[i];
            uint8_t kind = col_kind(t, f);
            cs_row *target = w;
            if (!is_static && col_static(t, f)) target = row_find(p, ck, true, true);
            cs_col *col = col_find(target, f->name, kind);
            if (kind == K_SIMPLE) {
                cf_cell cell = {0};
                if (v) rc = sk_cell_from_value(&x, f->schema, v, t->t->cols[t->col_of_field[i]].type, &cell, err);
                if (!rc && newer(ts, !v, &cell, col->ts, col->dead, &col->v)) {
                    cell_free(&col->v);
                    col->v = cell_dup(&cell);
                    col->ts = ts;
                    col->dead = !v;
                }
                continue;
            }
            /* UDT fields set to null: "<column>.<field>" in elementFields */
            bool fields_nulled = false;
            if (kind == K_UDT && elem && elem->type == CF_ARRAY) {
                size_t fl = strlen(f->name);
                for (size_t e = 0; e < elem->u.arr.len; e++) {
                    const cf_value *en = elem->u.arr.items[e];
                    if (!en || en->type != CF_STRING || strncmp(en->u.s.ptr, f->name, fl) != 0 || en->u.s.ptr[fl] != '.')
                        continue;
                    const cf_field *uf = field(f->schema, en->u.s.ptr + fl + 1);
                    if (!uf) continue;
                    cf_cell k = {.kind = CF_CELL_INT, .u.i = (int64_t)uf->index};
                    el_put(col, &k, ts, true, NULL, NULL);
                    fields_nulled = true;
                }
            }
            if (fields_nulled) continue;
            if (listed(elem, f->name)) {
                if (kind == K_LIST && ced) { /* which element: not in the commit log */
                    c->list_removals_unapplied++;
                    if (!t->warned_lists)
                        CF_WARN("sink", "table %s: a list element removal (column %s) cannot be applied: the events do "
                                "not say which element (docs/formats.md); counted, the list keeps it",
                                t->t->name, f->name);
                    t->warned_lists = true;
                    continue;
                }
                rc = put_elements(&x, col, f->schema, v, ts, ced, true, err);
            } else { /* the whole value: what was there before goes */
                col->cdel = max64(col->cdel, v ? ts - 1 : ts);
                rc = put_elements(&x, col, f->schema, v, ts, false, false, err);
            }
        }
        if (rc) return rc;
        if (is_static) all = true;
        else one = w;
    }
    const cs_row *stat = NULL;
    for (size_t i = 0; i < p->nrows && !stat; i++)
        if (p->rows[i].is_static) stat = &p->rows[i];
    if (one) return emit_row(s, rec, p, one, stat);
    for (size_t i = 0; all && i < p->nrows && !rc; i++)
        if (!p->rows[i].is_static) rc = emit_row(s, rec, p, &p->rows[i], stat);
    return rc;
}

/* ---------------- purging past gc_grace_seconds ---------------- */


/* What Cassandra's compaction drops once a tombstone is older than
 * gc_grace_seconds, done when a partition's state is written: first the data
 * every deletion shadows (never emitted again: row_cells filters it out, so
 * dropping it changes no row), then the deletions older than cutoff (the
 * newest timestamp seen minus the grace). Rows and columns left with nothing
 * go. Returns whether the partition is left with nothing at all (its state
 * can be removed). The zombie caveat is Cassandra's: a copy of a write older
 * than a dropped deletion, arriving after the drop, is taken as new. */
static bool part_purge(cs_part *p, int64_t cutoff) {
    size_t kept = 0;
    for (size_t i = 0; i < p->nrows; i++) {
        cs_row *w = &p->rows[i];
        int64_t sh = row_shadow(p, w);
        if (w->live != TS_NONE && w->live <= sh) w->live = TS_NONE;
        size_t kc = 0;
        for (size_t j = 0; j < w->ncols; j++) {
            cs_col *c = &w->cols[j];
            if (c->kind == K_SIMPLE) {
                if (c->ts != TS_NONE && (c->ts <= sh || (c->dead && c->ts < cutoff))) {
                    cell_free(&c->v);
                    c->ts = TS_NONE;
                    c->dead = 0;
                }
            } else {
                int64_t lim = max64(sh, c->cdel);
                size_t ke = 0;
                for (size_t e = 0; e < c->nel; e++) {
                    cs_el *x = &c->el[e];
                    if (x->ts <= lim || (x->dead && x->ts < cutoff)) {
                        cell_free(&x->k);
                        free(x->kj);
                        free(x->vj);
                    } else c->el[ke++] = *x;
                }
                c->nel = ke;
                if (c->cdel != TS_NONE && c->cdel < cutoff) c->cdel = TS_NONE;
            }
            if (c->ts == TS_NONE && c->nel == 0 && c->cdel == TS_NONE) col_free(c);
            else w->cols[kc++] = *c;
        }
        w->ncols = kc;
        if (w->del != TS_NONE && w->del < cutoff) w->del = TS_NONE;
        if (w->live == TS_NONE && w->del == TS_NONE && w->ncols == 0) {
            for (size_t j = 0; w->ck && j < p->tab->n_ck; j++) cell_free(&w->ck[j]);
            free(w->ck);
            free(w->cols);
        } else p->rows[kept++] = *w;
    }
    if (kept != p->nrows) { /* the index holds row positions: built again when needed */
        p->nrows = kept;
        free(p->rix);
        p->rix = NULL, p->rixcap = 0;
    }
    size_t kr = 0;
    for (size_t i = 0; i < p->nranges; i++) {
        if (p->ranges[i].ts < cutoff) {
            for (size_t j = 0; j < p->ranges[i].np; j++) cell_free(&p->ranges[i].p[j].v);
            free(p->ranges[i].p);
        } else p->ranges[kr++] = p->ranges[i];
    }
    p->nranges = kr;
    if (p->pdel != TS_NONE && p->pdel < cutoff) p->pdel = TS_NONE;
    return p->nrows == 0 && p->nranges == 0 && p->pdel == TS_NONE;
}

bool sk_cass_dirty(const sk_cass *c) {
    if (!c) return false;
    for (size_t i = 0; i < c->htcap; i++)
        for (cs_part *p = c->ht[i]; p; p = p->next)
            if (p->dirty) return true;
    return false;
}

cf_code sk_cass_save(cf_sink *s, sk_cass *c, cf_err *err) {
    if (!c || !c->nparts) return CF_OK;
    void *ts;
    const cf_sink_target *tg = sk_engine_target(s, &ts);
    cf_buf b = CF_BUF_INIT;
    cf_code rc = CF_OK;
    for (size_t i = 0; i < c->htcap && !rc; i++)
        for (cs_part *p = c->ht[i]; p && !rc; p = p->next) {
            if (!p->dirty) continue;
            cf_buf_reset(&b);
            bool empty = false;
            if (c->grace_us >= 0 && c->newest != TS_NONE)
                empty = part_purge(p, c->newest - c->grace_us > c->newest ? INT64_MIN : c->newest - c->grace_us);
            if (!empty) state_write(p, &b); /* empty: vlen 0 removes the state */
            rc = tg->state_put(ts, p->tab->t->name, p->key, p->klen, b.data, empty ? 0 : b.len, err);
            if (rc) cf_err_where(err, "Cassandra state of table \"%s\"", p->tab->t->name);
        }
    cf_buf_free(&b);
    return rc;
}

void sk_cass_saved(sk_cass *c) {
    if (c) parts_clear(c); /* read again from the database when touched: memory stays bounded by a batch */
}

uint64_t sk_cass_list_removals(const sk_cass *c) { return c ? c->list_removals_unapplied : 0; }
