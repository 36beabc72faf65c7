/*
 * mutation.c - decode Cassandra Mutations (messaging versions 10, 12, 13)
 * into cf_cass_mutation (see include/cdcflow/cassandra_mutation.h).
 *
 * Follows, call for call, Cassandra's deserializers: Mutation.serializer,
 * PartitionUpdate.serializer, UnfilteredRowIteratorSerializer.deserializeHeader,
 * SerializationHeader.deserializeForMessaging, EncodingStats.serializer,
 * Columns.serializer (and deserializeSubset / deserializeLargeSubset),
 * UnfilteredSerializer (rows, static rows, range tombstone markers),
 * Cell.Serializer, ClusteringPrefix.Serializer.deserializeValuesWithoutSize,
 * ClusteringBoundOrBoundary.serializer. Every length and count read from the
 * bytes is checked against what is left before it is used, so a damaged
 * mutation costs at most its own size in memory.
 */
#include "cdcflow/cassandra_mutation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"

#define TIMESTAMP_EPOCH 1442880000000000LL /* 2015-09-22T00:00:00Z in micros (EncodingStats) */
#define DELETION_TIME_EPOCH 1442880000LL

typedef struct cur {
    const uint8_t *base, *p, *end;
    bool bad;
    const char *what; /* what failed, for the error */
    size_t bad_at;
} cur;

static inline bool need(cur *c, size_t n, const char *what) {
    if (c->bad) return false;
    if ((size_t)(c->end - c->p) < n) {
        c->bad = true;
        c->what = what;
        c->bad_at = (size_t)(c->p - c->base);
        return false;
    }
    return true;
}

static inline void fail(cur *c, const char *what) {
    if (c->bad) return;
    c->bad = true;
    c->what = what;
    c->bad_at = (size_t)(c->p - c->base);
}

static inline uint8_t rd_u8(cur *c, const char *what) {
    if (!need(c, 1, what)) return 0;
    return *c->p++;
}

static inline uint16_t rd_u16(cur *c, const char *what) {
    if (!need(c, 2, what)) return 0;
    uint16_t v = (uint16_t)(c->p[0] << 8 | c->p[1]);
    c->p += 2;
    return v;
}

/* VIntCoding.readUnsignedVInt: leading 1-bits of the first byte = extra bytes */
static inline uint64_t rd_uvint(cur *c, const char *what) {
    if (!need(c, 1, what)) return 0;
    uint8_t first = *c->p;
    if (first < 0x80) {
        c->p++;
        return first;
    }
    /* 0xff: 8 extra bytes (clz of 0 is undefined, so it is spelled out) */
    int extra = first == 0xff ? 8 : __builtin_clz((unsigned)(uint8_t)~first) - 24;
    if (!need(c, (size_t)extra + 1, what)) return 0;
    uint64_t v;
    if (c->end - c->p >= 9) {
        /* the extra bytes with one big-endian load (timestamps, most of a
         * mutation's vints, take 3-6 bytes: a dependent step per byte was
         * the hottest line of the decoder) */
        uint64_t w;
        memcpy(&w, c->p + 1, 8);
        w = __builtin_bswap64(w);
        v = extra == 8 ? w : (uint64_t)(first & (0xffu >> extra)) << (8 * extra) | w >> (64 - 8 * extra);
    } else {
        v = extra >= 8 ? 0 : (uint64_t)(first & (0xffu >> extra));
        for (int i = 1; i <= extra; i++) v = v << 8 | c->p[i];
    }
    c->p += extra + 1;
    return v;
}

/* readUnsignedVInt32: must fit a non-negative int */
static inline uint32_t rd_uvint32(cur *c, const char *what) {
    const uint8_t *at = c->p;
    uint64_t v = rd_uvint(c, what);
    if (!c->bad && v > INT32_MAX) {
        c->p = at;
        fail(c, what);
        return 0;
    }
    return (uint32_t)v;
}

static inline cf_cass_bytes rd_vbytes(cur *c, const char *what) {
    cf_cass_bytes b = {NULL, 0};
    uint32_t n = rd_uvint32(c, what);
    if (!need(c, n, what)) return b;
    b.p = c->p;
    b.len = n;
    c->p += n;
    return b;
}

/* AbstractType.readValue: fixed length raw, otherwise vint length + bytes */
static inline cf_cass_bytes rd_value(cur *c, int32_t fixed, const char *what) {
    if (fixed >= 0) {
        cf_cass_bytes b = {NULL, 0};
        if (!need(c, (size_t)fixed, what)) return b;
        b.p = c->p;
        b.len = (size_t)fixed;
        c->p += fixed;
        return b;
    }
    return rd_vbytes(c, what);
}

/* ---------------- decoder ---------------- */

typedef struct hcol {
    const char *name;
    const cf_cql_type *type;
    int32_t fixed; /* value length if fixed (simple columns), -1 otherwise */
    bool complex;
    bool dropped;
    int64_t dropped_time;
} hcol;

/* The column list of a partition update's header is the same bytes for
 * every update of a table until its schema changes: resolving the names once
 * and remembering the result saves the name lookups on every update. */
#define COLCACHE 16
typedef struct colcache {
    const cf_cass_table *table;
    uint8_t *bytes;
    size_t len;
    hcol *cols;
    size_t n;
} colcache;

#define BUMP_BYTES 16384
struct cf_cass_decoder {
    const cf_cass_schema *schema;
    bool quiet_unknown; /* a mutation of an unknown table: the code and the id, no message */
    colcache cc[COLCACHE];
    colcache *last_cc; /* the entry used last: tried first, without measuring the block */
    cf_arena *arena;
    /* a typical mutation's events fit in this block, taken with an inline
     * bump (a call to cf_arena_alloc per row and cell cost an eighth of the
     * decoding); larger ones continue in the arena. Both reset per mutation. */
    uint8_t *bump;
    size_t bump_used;
    bool arena_used; /* something was taken from the arena since its reset */
    /* the fixed value lengths (-1: variable) of cl_table's clustering
     * columns, looked up once per table rather than per value */
    const cf_cass_table *cl_table;
    int32_t *cl_fixed;
    size_t cl_cap;
    int mv;
    /* per update */
    int64_t min_ts;
    int64_t min_ldt;
    int64_t min_ttl;
    const cf_cass_table *table;
    /* error about an unknown column (used to try older table versions) */
    char unknown_col[200];
    /* recover(): which first two bytes a known table id can start with, so
     * that scanning a mutation for table ids costs a bit test per byte */
    uint64_t id_prefix[65536 / 64];
    const cf_cass_schema *prefix_schema;
    size_t prefix_count;
};

cf_cass_decoder *cf_cass_decoder_new(const cf_cass_schema *schema) {
    cf_cass_decoder *d = cf_xcalloc(1, sizeof *d);
    d->schema = schema;
    d->arena = cf_arena_new(0);
    d->bump = cf_xmalloc(BUMP_BYTES);
    return d;
}

/* 16-byte aligned memory valid until the next cf_cass_decode_mutation. */
static inline void *dalloc(cf_cass_decoder *d, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n <= BUMP_BYTES - d->bump_used) {
        void *p = d->bump + d->bump_used;
        d->bump_used += n;
        return p;
    }
    d->arena_used = true;
    return cf_arena_alloc(d->arena, n);
}

static void cache_clear(cf_cass_decoder *d) {
    for (int i = 0; i < COLCACHE; i++) {
        free(d->cc[i].bytes);
        free(d->cc[i].cols);
    }
    memset(d->cc, 0, sizeof d->cc);
    d->last_cc = NULL;
    d->cl_table = NULL;
}

void cf_cass_decoder_set_quiet_unknown(cf_cass_decoder *d, bool quiet) { d->quiet_unknown = quiet; }

void cf_cass_decoder_destroy(cf_cass_decoder *d) {
    if (!d) return;
    cache_clear(d);
    cf_arena_destroy(d->arena);
    free(d->bump);
    free(d->cl_fixed);
    free(d);
}

void cf_cass_decoder_set_schema(cf_cass_decoder *d, const cf_cass_schema *schema) {
    cache_clear(d);
    d->schema = schema;
    d->prefix_schema = NULL;
}

const char *cf_cass_bound_kind_name(cf_cass_bound_kind k) {
    static const char *const names[] = {"EXCL_END_BOUND", "INCL_START_BOUND", "EXCL_END_INCL_START_BOUNDARY",
                                        "STATIC_CLUSTERING", "CLUSTERING", "INCL_END_EXCL_START_BOUNDARY",
                                        "INCL_END_BOUND", "EXCL_START_BOUND"};
    return (unsigned)k < 8 ? names[k] : "?";
}

const char *cf_cass_row_kind_name(cf_cass_row_kind k) {
    switch (k) {
    case CF_CASS_ROW: return "row";
    case CF_CASS_STATIC_ROW: return "static";
    case CF_CASS_RT_BOUND: return "range_tombstone_bound";
    case CF_CASS_RT_BOUNDARY: return "range_tombstone_boundary";
    }
    return "?";
}

static inline int64_t rd_ts(cf_cass_decoder *d, cur *c) {
    return (int64_t)(rd_uvint(c, "timestamp") + (uint64_t)d->min_ts);
}

static inline int64_t ldt_of(cf_cass_decoder *d, uint64_t raw) {
    uint32_t v = (uint32_t)raw;
    /* messaging 13 (5.0, CASSANDRA-14227) stores deletion times as unsigned ints */
    return d->mv >= 13 ? (int64_t)v : (int64_t)(int32_t)v;
}

static inline int64_t rd_ldt(cf_cass_decoder *d, cur *c) {
    return ldt_of(d, rd_uvint(c, "local deletion time") + (uint64_t)d->min_ldt);
}

static inline int32_t rd_ttl(cf_cass_decoder *d, cur *c) {
    return (int32_t)(uint32_t)(rd_uvint(c, "ttl") + (uint64_t)d->min_ttl);
}

static inline cf_cass_deletion rd_deletion(cf_cass_decoder *d, cur *c) {
    cf_cass_deletion x;
    x.marked_at = rd_ts(d, c);
    x.local_deletion_time = rd_ldt(d, c);
    return x;
}

/* Field by field rather than memset: a memset of these sizes compiles to
 * `rep stos`, whose start-up cost was a third of the update decoding time. */
static inline void row_init(cf_cass_row *r, cf_cass_row_kind kind, cf_cass_bound_kind bound) {
    r->kind = kind;
    r->bound = bound;
    r->clustering = NULL;
    r->n_clustering = 0;
    r->has_liveness = false;
    r->ts = 0;
    r->ttl = 0;
    r->local_expiration_time = 0;
    r->deletion.marked_at = 0;
    r->deletion.local_deletion_time = 0;
    r->shadowable = false;
    r->start_deletion.marked_at = 0;
    r->start_deletion.local_deletion_time = 0;
    r->columns = NULL;
    r->n_columns = 0;
}

static inline void update_init(cf_cass_update *u, const uint8_t id[16], size_t start) {
    u->table = NULL;
    memcpy(u->table_id, id, 16);
    u->key.p = NULL;
    u->key.len = 0;
    u->token = 0;
    u->partition_deletion.marked_at = 0;
    u->partition_deletion.local_deletion_time = 0;
    u->static_row = NULL;
    u->rows = NULL;
    u->n_rows = 0;
    u->min_timestamp = 0;
    u->byte_offset = start;
}

static cf_code read_columns_slow(cf_cass_decoder *d, cur *c, hcol **out, size_t *n_out, cf_err *err);

static cf_code read_columns(cf_cass_decoder *d, cur *c, hcol **out, size_t *n_out, cf_err *err) {
    /* The block is self-delimiting (count, then length-prefixed names), so
     * bytes that start with a cached block of the same table are that block. */
    colcache *last = d->last_cc;
    if (last && !c->bad && last->table == d->table && last->len <= (size_t)(c->end - c->p) &&
        memcmp(last->bytes, c->p, last->len) == 0) {
        c->p += last->len;
        *out = last->cols;
        *n_out = last->n;
        return CF_OK;
    }
    /* measure the block (count + names) without resolving anything */
    cur probe = *c;
    uint32_t n = rd_uvint32(&probe, "column count");
    for (uint32_t i = 0; i < n && !probe.bad; i++) rd_vbytes(&probe, "column name");
    if (probe.bad) return read_columns_slow(d, c, out, n_out, err); /* reports the damage */
    const uint8_t *start = c->p;
    size_t len = (size_t)(probe.p - start);
    size_t slot = (((uintptr_t)d->table >> 4) ^ len * 31u ^ start[len - 1] * 7u ^ start[len / 2]) % COLCACHE;
    colcache *e = &d->cc[slot];
    if (e->table == d->table && e->len == len && memcmp(e->bytes, start, len) == 0) {
        c->p = probe.p;
        *out = e->cols;
        *n_out = e->n;
        d->last_cc = e;
        return CF_OK;
    }
    cf_code rc = read_columns_slow(d, c, out, n_out, err);
    if (rc || c->bad) return rc;
    free(e->bytes);
    free(e->cols);
    e->table = d->table;
    e->bytes = cf_xmemdup(start, len);
    e->len = len;
    e->n = *n_out;
    e->cols = cf_xmemdup(*out, (*n_out ? *n_out : 1) * sizeof **out);
    *out = e->cols;
    d->last_cc = e;
    return CF_OK;
}

static cf_code read_columns_slow(cf_cass_decoder *d, cur *c, hcol **out, size_t *n_out, cf_err *err) {
    uint32_t n = rd_uvint32(c, "column count");
    if (c->bad) return CF_OK;
    if (n > (size_t)(c->end - c->p)) { /* every name takes at least one byte */
        fail(c, "column count larger than the mutation");
        return CF_OK;
    }
    hcol *cols = dalloc(d, (n ? n : 1) * sizeof *cols);
    for (uint32_t i = 0; i < n; i++) {
        cf_cass_bytes name = rd_vbytes(c, "column name");
        if (c->bad) return CF_OK;
        const cf_cass_column *col = cf_cass_table_column_n(d->table, (const char *)name.p, name.len);
        hcol *h = &cols[i];
        memset(h, 0, sizeof *h);
        if (col) {
            h->name = col->name;
            h->type = col->type;
        } else {
            const cf_cass_dropped_column *dc = cf_cass_table_dropped_n(d->table, (const char *)name.p, name.len);
            if (!dc) {
                snprintf(d->unknown_col, sizeof d->unknown_col, "%.*s", (int)(name.len > 150 ? 150 : name.len),
                         (const char *)name.p);
                cf_err_set(err, CF_ERR_SCHEMA, "column \"%s\" is not in table %s.%s (nor among its dropped columns)",
                           d->unknown_col, d->table->keyspace, d->table->name);
                cf_err_hint(err, "The schema given is older than the data; load the current schema "
                                 "(DESCRIBE SCHEMA WITH INTERNALS keeps dropped columns).");
                return CF_ERR_SCHEMA;
            }
            h->name = dc->name;
            h->type = dc->type;
            h->dropped = true;
            h->dropped_time = dc->dropped_time;
        }
        h->complex = cf_cql_type_is_multicell(h->type);
        h->fixed = h->complex ? -1 : cf_cql_type_fixed_length(h->type);
    }
    *out = cols;
    *n_out = n;
    return CF_OK;
}

/* Columns.deserializeSubset: which header columns a row has. */
static size_t read_subset(cf_cass_decoder *d, cur *c, size_t n_super, uint32_t **idx_out) {
    uint64_t enc = rd_uvint(c, "column subset");
    uint32_t *idx = dalloc(d, (n_super ? n_super : 1) * sizeof *idx);
    *idx_out = idx;
    size_t k = 0;
    if (c->bad) return 0;
    if (enc == 0) {
        for (size_t i = 0; i < n_super; i++) idx[k++] = (uint32_t)i;
        return k;
    }
    if (n_super < 64) {
        /* a bitmap of the MISSING columns */
        if (n_super < 64 && (enc >> n_super) != 0) {
            fail(c, "column subset names columns the header does not have");
            return 0;
        }
        for (size_t i = 0; i < n_super; i++, enc >>= 1)
            if (!(enc & 1)) idx[k++] = (uint32_t)i;
        return k;
    }
    /* deserializeLargeSubset: enc is the number of missing columns */
    if (enc > n_super) {
        fail(c, "column subset larger than the header");
        return 0;
    }
    size_t delta = (size_t)enc, count = n_super - delta;
    if (count < n_super / 2) {
        for (size_t i = 0; i < count; i++) {
            uint32_t x = rd_uvint32(c, "column subset index");
            if (c->bad || x >= n_super || (k && x <= idx[k - 1])) {
                fail(c, "column subset index out of range");
                return 0;
            }
            idx[k++] = x;
        }
    } else {
        size_t i = 0, skipped = 0;
        for (;;) {
            size_t next_missing = n_super;
            if (skipped < delta) {
                next_missing = rd_uvint32(c, "column subset index");
                if (c->bad || next_missing >= n_super || next_missing < i) {
                    fail(c, "column subset index out of range");
                    return 0;
                }
            }
            while (i < next_missing) idx[k++] = (uint32_t)i++;
            if (i == n_super) break;
            i++;
            skipped++;
        }
    }
    return k;
}

/* ClusteringPrefix.Serializer.deserializeValuesWithoutSize */
static cf_cass_bytes *read_clustering(cf_cass_decoder *d, cur *c, size_t size) {
    const cf_cass_table *t = d->table;
    if (size > t->n_clustering) {
        fail(c, "clustering prefix longer than the table's clustering key");
        return NULL;
    }
    if (d->cl_table != t) {
        if (t->n_clustering > d->cl_cap) {
            free(d->cl_fixed);
            d->cl_cap = t->n_clustering;
            d->cl_fixed = cf_xmalloc(d->cl_cap * sizeof *d->cl_fixed);
        }
        for (size_t i = 0; i < t->n_clustering; i++) d->cl_fixed[i] = cf_cql_type_fixed_length(t->clustering[i].type);
        d->cl_table = t;
    }
    cf_cass_bytes *v = dalloc(d, (size ? size : 1) * sizeof *v);
    uint64_t header = 0;
    for (size_t i = 0; i < size; i++) {
        if (i % 32 == 0) header = rd_uvint(c, "clustering header");
        if (c->bad) return NULL;
        unsigned bit = (unsigned)(i % 32) * 2;
        if (header & (1ULL << (bit + 1))) {
            v[i].p = NULL; /* null */
            v[i].len = 0;
        } else if (header & (1ULL << bit)) {
            v[i].p = c->p; /* empty */
            v[i].len = 0;
        } else {
            v[i] = rd_value(c, d->cl_fixed[i], "clustering value");
            if (c->bad) return NULL;
        }
    }
    return v;
}

static void read_cell(cf_cass_decoder *d, cur *c, const hcol *h, const cf_cass_row *row, cf_cass_cell *cell) {
    uint8_t flags = rd_u8(c, "cell flags");
    if (c->bad) return;
    if (flags & 0xe0) {
        c->p--;
        fail(c, "cell flags with unknown bits");
        return;
    }
    bool has_value = !(flags & 0x04);
    cell->deleted = flags & 0x01;
    cell->expiring = (flags & 0x02) && !cell->deleted;
    bool use_row_ts = flags & 0x08, use_row_ttl = flags & 0x10;
    cell->ts = use_row_ts ? row->ts : rd_ts(d, c);
    if (use_row_ttl)
        cell->local_deletion_time = row->local_expiration_time;
    else
        cell->local_deletion_time = (flags & 0x03) ? rd_ldt(d, c) : CF_CASS_NO_DELETION_TIME;
    if (use_row_ttl)
        cell->ttl = row->ttl;
    else
        cell->ttl = (flags & 0x02) ? rd_ttl(d, c) : CF_CASS_NO_TTL;
    if (flags & 0x02) cell->expiring = true;
    cell->path.p = NULL;
    cell->path.len = 0;
    if (h->complex) cell->path = rd_vbytes(c, "cell path");
    cell->value.p = c->p;
    cell->value.len = 0;
    if (has_value) cell->value = rd_value(c, h->fixed, "cell value");
    if (!c->bad && cell->ttl < 0) fail(c, "negative TTL");
}

/* UnfilteredSerializer.deserializeRowBody */
static void read_row_body(cf_cass_decoder *d, cur *c, uint8_t flags, uint8_t ext, const hcol *cols, size_t n_cols,
                          cf_cass_row *row) {
    if (flags & 0x04) { /* HAS_TIMESTAMP */
        row->has_liveness = true;
        row->ts = rd_ts(d, c);
        if (flags & 0x08) { /* HAS_TTL */
            row->ttl = rd_ttl(d, c);
            row->local_expiration_time = rd_ldt(d, c);
        } else {
            row->ttl = CF_CASS_NO_TTL;
            row->local_expiration_time = CF_CASS_NO_DELETION_TIME;
        }
    } else {
        row->ts = CF_CASS_LIVE_TS;
        row->ttl = CF_CASS_NO_TTL;
        row->local_expiration_time = CF_CASS_NO_DELETION_TIME;
    }
    row->deletion.marked_at = CF_CASS_LIVE_TS;
    row->deletion.local_deletion_time = CF_CASS_NO_DELETION_TIME;
    if (flags & 0x10) { /* HAS_DELETION */
        row->deletion = rd_deletion(d, c);
        row->shadowable = ext & 0x02;
    }
    uint32_t *idx = NULL; /* NULL: every header column (HAS_ALL_COLUMNS, the usual case) */
    size_t n = n_cols;
    if (!(flags & 0x20)) n = read_subset(d, c, n_cols, &idx);
    if (c->bad) return;
    /* the columns, and one cell each for the simple ones, in one block */
    row->columns = dalloc(d, (n ? n : 1) * (sizeof *row->columns + sizeof(cf_cass_cell)));
    cf_cass_cell *simple = (cf_cass_cell *)(row->columns + (n ? n : 1));
    row->n_columns = 0;
    for (size_t i = 0; i < n && !c->bad; i++) {
        const hcol *h = &cols[idx ? idx[i] : i];
        cf_cass_column_data *cd = &row->columns[row->n_columns];
        cd->name = h->name;
        cd->type = h->type;
        cd->complex = h->complex;
        cd->dropped = h->dropped;
        cd->has_complex_deletion = false;
        cd->complex_deletion.marked_at = 0;
        cd->complex_deletion.local_deletion_time = 0;
        if (!h->complex) {
            cd->cells = &simple[i];
            read_cell(d, c, h, row, &cd->cells[0]);
            cd->n_cells = 1;
            /* Cassandra drops cells of dropped columns written before the drop */
            if (h->dropped && cd->cells[0].ts <= h->dropped_time) continue;
        } else {
            if (flags & 0x40) { /* HAS_COMPLEX_DELETION: every complex column carries one */
                cd->complex_deletion = rd_deletion(d, c);
                cd->has_complex_deletion = !cf_cass_deletion_is_live(&cd->complex_deletion);
            }
            uint32_t count = rd_uvint32(c, "complex cell count");
            if (c->bad) return;
            if (count > (size_t)(c->end - c->p)) {
                fail(c, "complex cell count larger than the mutation");
                return;
            }
            cd->cells = dalloc(d, (count ? count : 1) * sizeof *cd->cells);
            size_t kept = 0;
            for (uint32_t j = 0; j < count && !c->bad; j++) {
                read_cell(d, c, h, row, &cd->cells[kept]);
                if (!(h->dropped && cd->cells[kept].ts <= h->dropped_time)) kept++;
            }
            cd->n_cells = kept;
            if (h->dropped && !kept) continue;
        }
        row->n_columns++;
    }
}

static cf_code decode_update_body(cf_cass_decoder *d, cur *c, cf_cass_update *u, cf_err *err) {
    u->key = rd_vbytes(c, "partition key");
    uint8_t flags = rd_u8(c, "partition flags");
    u->partition_deletion.marked_at = CF_CASS_LIVE_TS;
    u->partition_deletion.local_deletion_time = CF_CASS_NO_DELETION_TIME;
    u->static_row = NULL;
    u->rows = NULL;
    u->n_rows = 0;
    if (c->bad) return CF_OK;
    u->token = cf_cass_murmur3_token(u->key.p, u->key.len);
    if (flags & 0x01) return CF_OK; /* IS_EMPTY */
    if (flags & 0xe0) {
        c->p--;
        fail(c, "partition flags with unknown bits");
        return CF_OK;
    }
    bool has_pdel = flags & 0x04, has_static = flags & 0x08, has_estimate = flags & 0x10;
    /* EncodingStats */
    d->min_ts = (int64_t)(rd_uvint(c, "encoding stats") + (uint64_t)TIMESTAMP_EPOCH);
    d->min_ldt = (int64_t)(rd_uvint(c, "encoding stats") + (uint64_t)DELETION_TIME_EPOCH);
    d->min_ttl = (int64_t)rd_uvint(c, "encoding stats");
    u->min_timestamp = d->min_ts;
    hcol *statics = NULL, *regulars = NULL;
    size_t n_statics = 0, n_regulars = 0;
    cf_code rc;
    if (has_static && (rc = read_columns(d, c, &statics, &n_statics, err))) return rc;
    if ((rc = read_columns(d, c, &regulars, &n_regulars, err))) return rc;
    if (has_pdel) u->partition_deletion = rd_deletion(d, c);
    if (has_static && !c->bad) {
        uint8_t f = rd_u8(c, "static row flags");
        uint8_t ext = (f & 0x80) ? rd_u8(c, "static row flags") : 0;
        if (!c->bad && ((f & 0x01) || (f & 0x02) || !(ext & 0x01))) {
            fail(c, "static row flags without the static flag");
            return CF_OK;
        }
        cf_cass_row *r = dalloc(d, sizeof *r);
        row_init(r, CF_CASS_STATIC_ROW, CF_CASS_BK_STATIC_CLUSTERING);
        read_row_body(d, c, f, ext, statics, n_statics, r);
        u->static_row = r;
    }
    if (has_estimate) rd_uvint(c, "row estimate");
    size_t cap = 0;
    while (!c->bad) {
        uint8_t f = rd_u8(c, "row flags");
        if (c->bad) break;
        if (f & 0x01) break; /* END_OF_PARTITION */
        if (u->n_rows == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            cf_cass_row *nr = dalloc(d, ncap * sizeof *nr);
            if (cap) memcpy(nr, u->rows, cap * sizeof *nr);
            u->rows = nr;
            cap = ncap;
        }
        cf_cass_row *r = &u->rows[u->n_rows];
        row_init(r, CF_CASS_ROW, CF_CASS_BK_CLUSTERING);
        uint8_t ext = (f & 0x80) ? rd_u8(c, "row extended flags") : 0;
        if (f & 0x02) { /* IS_MARKER: range tombstone bound or boundary */
            uint8_t kind = rd_u8(c, "bound kind");
            uint16_t size = rd_u16(c, "bound size");
            if (c->bad) break;
            if (kind > 7 || kind == CF_CASS_BK_CLUSTERING || kind == CF_CASS_BK_STATIC_CLUSTERING) {
                c->p -= 3;
                fail(c, "range tombstone marker with an impossible bound kind");
                break;
            }
            r->bound = (cf_cass_bound_kind)kind;
            r->clustering = read_clustering(d, c, size);
            r->n_clustering = size;
            bool boundary = kind == CF_CASS_BK_EXCL_END_INCL_START_BOUNDARY || kind == CF_CASS_BK_INCL_END_EXCL_START_BOUNDARY;
            r->kind = boundary ? CF_CASS_RT_BOUNDARY : CF_CASS_RT_BOUND;
            r->ts = CF_CASS_LIVE_TS;
            r->deletion = rd_deletion(d, c);
            if (boundary) r->start_deletion = rd_deletion(d, c);
        } else {
            if (ext & 0x01) {
                fail(c, "row with the static flag after the static row");
                break;
            }
            r->kind = CF_CASS_ROW;
            r->bound = CF_CASS_BK_CLUSTERING;
            r->clustering = read_clustering(d, c, d->table->n_clustering);
            r->n_clustering = d->table->n_clustering;
            read_row_body(d, c, f, ext, regulars, n_regulars, r);
        }
        if (!c->bad) u->n_rows++;
    }
    return CF_OK;
}

cf_code cf_cass_mutation_first_table_id(const uint8_t *p, size_t len, uint8_t id[16], cf_err *err) {
    cur c = {p, p, p + len, false, NULL, 0};
    uint32_t n = rd_uvint32(&c, "update count");
    if (!c.bad && n == 0) fail(&c, "mutation without updates");
    if (need(&c, 16, "table id")) memcpy(id, c.p, 16);
    if (c.bad) {
        cf_err_set(err, CF_ERR_CORRUPT, "mutation does not decode: %s", c.what);
        cf_err_where(err, "mutation byte %zu", c.bad_at);
        return CF_ERR_CORRUPT;
    }
    return CF_OK;
}

/* Decode the update at c (table id + body) into the next slot of m.
 * CF_ERR_NOT_FOUND (table unknown, c is past the id), CF_ERR_SCHEMA (unknown
 * column in every version), CF_OK (check c->bad for damage). */
static cf_code decode_one(cf_cass_decoder *d, cur *c, cf_cass_mutation *m, uint8_t id[16], cf_err *err) {
    size_t start = (size_t)(c->p - c->base);
    if (!need(c, 16, "table id")) return CF_OK;
    memcpy(id, c->p, 16);
    c->p += 16;
    const cf_cass_table *t = d->schema ? cf_cass_schema_table_by_id(d->schema, id) : NULL;
    if (!t) return CF_ERR_NOT_FOUND;
    /* Try the newest definition, then older ones if a column is unknown
     * (segments written before an ALTER TABLE ... ADD/DROP). */
    cf_cass_table *const *versions = NULL;
    size_t nv = 0;
    const uint8_t *body = c->p;
    cf_code rc = CF_OK;
    cf_cass_update *u = &m->updates[m->n_updates];
    for (size_t v = 0;; v++) {
        update_init(u, id, start);
        d->table = v == 0 ? t : versions[nv - 1 - v];
        if (v > 0 && d->table == t) continue;
        u->table = d->table;
        c->p = body;
        rc = decode_update_body(d, c, u, err);
        if (rc != CF_ERR_SCHEMA) break;
        if (v == 0) nv = cf_cass_schema_table_versions(d->schema, id, &versions); /* only when needed */
        if (v + 1 >= nv) break;
    }
    if (rc) {
        char ids[37];
        cf_cass_uuid_format(id, ids);
        cf_err_detail(err, "table %s.%s (id %s), %zu update(s) of %zu decoded before it", t->keyspace, t->name, ids,
                      m->n_updates, m->n_declared);
        cf_err_where(err, "mutation byte %zu", start);
        return rc;
    }
    if (!c->bad) m->n_updates++;
    return CF_OK;
}

/* After the update of an unknown table (whose length is unknown): look for a
 * later known table id from which the remaining updates decode exactly to the
 * end of the mutation. A batch that mixes a CDC table with one missing from
 * the schema thereby keeps its decodable updates. Returns the number of
 * updates recovered (0: nothing found, m unchanged). */
static size_t recover(cf_cass_decoder *d, const uint8_t *p, size_t len, size_t from, cf_cass_mutation *m,
                      size_t *at) {
    if (!d->schema) return 0;
    size_t nt = cf_cass_schema_table_count(d->schema);
    if (nt == 0) return 0;
    if (d->prefix_schema != d->schema || d->prefix_count != nt) {
        memset(d->id_prefix, 0, sizeof d->id_prefix);
        for (size_t i = 0; i < nt; i++) {
            const cf_cass_table *t = cf_cass_schema_table_at(d->schema, i);
            if (!t->has_id) continue;
            unsigned k = (unsigned)t->id[0] << 8 | t->id[1];
            d->id_prefix[k / 64] |= 1ULL << (k % 64);
        }
        d->prefix_schema = d->schema;
        d->prefix_count = nt;
    }
    for (size_t off = from; off + 16 < len; off++) {
        /* an update follows the END_OF_PARTITION byte (0x01) of the one
         * before: memchr finds the candidates (one pass over the bytes, which
         * was five memmem passes for five tables), the bitmap and the id
         * lookup confirm them */
        const uint8_t *q = memchr(p + off - 1, 0x01, len - 16 - off);
        if (!q) break;
        off = (size_t)(q - p) + 1;
        unsigned k = (unsigned)p[off] << 8 | p[off + 1];
        if (!(d->id_prefix[k / 64] >> (k % 64) & 1)) continue;
        if (!cf_cass_schema_table_by_id(d->schema, p + off)) continue;
        size_t saved = m->n_updates;
        cur c = {p, p + off, p + len, false, NULL, 0};
        bool ok = true;
        while (c.p < c.end) {
            uint8_t id[16];
            if (m->n_updates >= m->n_declared || decode_one(d, &c, m, id, NULL) != CF_OK || c.bad) {
                ok = false;
                break;
            }
        }
        if (ok && c.p == c.end && m->n_updates > saved) {
            *at = off;
            return m->n_updates - saved;
        }
        m->n_updates = saved;
    }
    return 0;
}

cf_code cf_cass_decode_mutation(cf_cass_decoder *d, const uint8_t *p, size_t len, int messaging_version,
                                cf_cass_mutation **out, uint8_t unknown_id[16], cf_err *err) {
    if (d->arena_used) { /* most mutations fit the bump block */
        cf_arena_reset(d->arena);
        d->arena_used = false;
    }
    d->bump_used = 0;
    d->mv = messaging_version;
    d->table = NULL;
    cf_cass_mutation *m = dalloc(d, sizeof *m);
    memset(m, 0, sizeof *m);
    *out = m;
    cur c = {p, p, p + len, false, NULL, 0};
    uint32_t n = rd_uvint32(&c, "update count");
    if (!c.bad && n == 0) fail(&c, "mutation without updates");
    if (!c.bad && n > len / 18) fail(&c, "update count larger than the mutation"); /* 16-byte id + key + flags */
    if (!c.bad) m->updates = dalloc(d, n * sizeof *m->updates);
    m->n_declared = n;
    for (uint32_t i = 0; i < n && !c.bad; i++) {
        size_t start = (size_t)(c.p - c.base);
        uint8_t id[16];
        cf_code rc = decode_one(d, &c, m, id, err);
        if (rc == CF_ERR_NOT_FOUND) {
            char ids[37] = "";
            if (unknown_id) memcpy(unknown_id, id, 16);
            size_t before = m->n_updates, at = 0;
            size_t got = n - i > 1 ? recover(d, p, len, (size_t)(c.p - c.base), m, &at) : 0;
            if (i == 0 && got == 0) {
                if (d->quiet_unknown) return CF_ERR_NOT_FOUND; /* err untouched: the caller counts it */
                if (err) cf_cass_uuid_format(id, ids); /* only for the message */
                cf_err_set(err, CF_ERR_NOT_FOUND, "mutation for unknown table id %s skipped", ids);
                cf_err_hint(err, "Load the schema of every table that shares the commit log (all user tables).");
                return CF_ERR_NOT_FOUND;
            }
            if (err) cf_cass_uuid_format(id, ids);
            cf_err_set(err, CF_ERR_SCHEMA, "mutation mixes known tables and unknown table id %s (update %u of %u)", ids,
                       i + 1, n);
            if (got)
                cf_err_detail(err, "%zu update(s) decoded before it and %zu recovered after it (from mutation byte %zu); "
                                   "the update(s) of the unknown table are lost",
                              before, got, at);
            else
                cf_err_detail(err, "%zu update(s) decoded; the update for %s and the %u after it cannot be decoded "
                                   "(updates have no length prefix)",
                              before, ids, n - i - 1);
            cf_err_hint(err, "Load the schema of every table that can share a batch with a CDC table.");
            cf_err_where(err, "mutation byte %zu", start);
            return CF_ERR_SCHEMA;
        }
        if (rc) return rc;
    }
    if (!c.bad && c.p != c.end) fail(&c, "bytes left after the last update");
    if (c.bad) {
        cf_err_set(err, CF_ERR_CORRUPT, "mutation does not decode: %s", c.what);
        cf_err_detail(err, "%zu bytes; %zu of %zu update(s) decoded before the damage%s%s%s", len, m->n_updates,
                      m->n_declared, d->table ? " (table " : "", d->table ? d->table->name : "", d->table ? ")" : "");
        cf_err_hint(err, "The entry CRC was valid, so the bytes are as written: the schema given probably does not "
                         "match the one the data was written with.");
        cf_err_where(err, "mutation byte %zu", c.bad_at);
        return CF_ERR_CORRUPT;
    }
    return CF_OK;
}
