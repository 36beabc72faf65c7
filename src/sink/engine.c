/*
 * engine.c - the CDC sink engine: tables per topic, buffering with
 * compaction by key, flush through a target, the staleness thread.
 *
 * Data flow of one record: classify (route.c) -> table for its topic ->
 * column map of its value schema (cached by schema pointer, so a stream of
 * records sharing a schema maps its fields once) -> cells in the batch arena
 * -> the compaction map, keyed by (table, encoded key): a later change of
 * the same key replaces the buffered one when its sequence number is >=, so
 * a flush hands each key once to the target. Everything buffered lives in
 * one arena reset after a successful flush.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cdcflow/log.h"
#include "sink_internal.h"

#define SEQ_COL "_change_sequence_number"

/* Column map of one value (image) schema onto the table. */
typedef struct sk_map {
    cf_schema *schema; /* reference held */
    int *col;          /* per field: column index, or -1 (metadata, duplicate of a key field) */
    size_t n;
} sk_map;

typedef struct sk_table {
    cf_sink_table t;
    cf_schema *key_schema; /* reference to the last key schema seen */
    sk_map map;            /* last value schema seen */
    bool ensured;          /* the target has the table with n_created_cols columns */
    cf_change **batch;     /* this flush's changes, one per key */
    size_t nb, capb;
    int64_t last_purge;
    void *bg_state; /* the background connection's statement cache */
    /* per partition: the last offset put and the stream's epoch, which
     * changes whenever the offsets are not consecutive (a redelivery, a
     * reassignment, records dropped upstream) */
    int64_t *last_off;
    uint32_t *epoch;
    size_t n_parts;
} sk_table;

/* A buffered change and where it came from (the merge rule needs it). */
typedef struct sk_change {
    cf_change c;
    int32_t partition;
    uint32_t epoch;
} sk_change;

#define CF_SINK_RETRY_AFTER_FLUSH 1000 /* internal: apply the buffer, then route the record again */

typedef struct sk_entry {
    uint64_t hash;
    const uint8_t *key;
    uint32_t len;
    uint32_t slot; /* index into the table's batch */
    sk_table *tbl;
} sk_entry;

struct cf_sink {
    cf_sink_options o;
    char **keep;
    size_t n_keep;
    const cf_sink_target *tg;
    void *ts;
    cf_sink_report_fn rep;
    void *rep_ud;
    sk_table **tables;
    size_t n_tables;
    sk_table *last_tbl;
    cf_arena *arena;
    sk_entry *ht;
    size_t ht_cap, ht_used;
    size_t buffered;
    cf_sink_stats st;
    /* staleness */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t bg;
    bool bg_running, bg_stop;
    void *bg_ts;
    cf_err bg_err;
    bool bg_failed;
    bool merge_any; /* cf_sink_compact: changes of one ordered stream */
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void cf_sink_options_default(cf_sink_options *o) {
    memset(o, 0, sizeof *o);
    o->target = "sqlite";
    o->sqlite_path = "cdcflow.db";
    o->auto_create_tables = true;
    o->allow_new_fields = true;
    o->sanitize_topics = true;
    o->sanitize_field_names = false; /* kcbq's default */
    o->delete_retention_s = 172800;
    o->mediate_schema_updates = true;
    o->batch_max_records = 100000;
}

static char *dup_or_null(const char *s) { return s ? cf_xstrdup(s) : NULL; }

/* ---------------- tables ---------------- */

static void map_clear(sk_map *m) {
    cf_schema_unref(m->schema);
    free(m->col);
    memset(m, 0, sizeof *m);
}

static void table_free(cf_sink *s, sk_table *t) {
    if (s->tg->free_table_state) {
        if (t->t.target_state) s->tg->free_table_state(s->ts, &t->t);
        if (t->bg_state) {
            t->t.target_state = t->bg_state;
            s->tg->free_table_state(s->bg_ts, &t->t);
        }
    }
    for (size_t i = 0; i < t->t.n_cols; i++) free(t->t.cols[i].name);
    free(t->t.cols);
    free(t->t.name);
    free(t->t.topic);
    cf_schema_unref(t->key_schema);
    map_clear(&t->map);
    free(t->batch);
    free(t->last_off);
    free(t->epoch);
    free(t);
}

static bool reserved_name(const char *n) {
    return strncasecmp(n, "_change_type", 12) == 0 || strncasecmp(n, "_change_sequence_number", 23) == 0 ||
           strncasecmp(n, "_change_timestamp", 17) == 0;
}

static char *col_name(cf_sink *s, const char *field) {
    return s->o.sanitize_field_names ? cf_sink_sanitize_name(field) : cf_xstrdup(field);
}

static int find_col(const sk_table *t, const char *name) {
    for (size_t i = 0; i < t->t.n_cols; i++)
        if (strcmp(t->t.cols[i].name, name) == 0) return (int)i;
    return -1;
}

static void add_col(sk_table *t, char *name, cf_col_type type, bool key) {
    t->t.cols = cf_xrealloc(t->t.cols, (t->t.n_cols + 1) * sizeof *t->t.cols);
    t->t.cols[t->t.n_cols++] = (cf_sink_column){name, type, key};
}

/* The key schema of a record against the table's key columns. */
static cf_code check_key_schema(cf_sink *s, sk_table *t, const cf_schema *ks, cf_err *err) {
    if (t->key_schema == ks) return CF_OK;
    if (!ks || ks->type != CF_STRUCT) {
        cf_err_set(err, CF_ERR_SCHEMA, "record key is %s, not a struct", ks ? cf_type_name(ks->type) : "schemaless");
        cf_err_detail(err, "the primary key comes from the key's struct fields (Debezium's <topic>.Key)");
        cf_err_hint(err, "use key.converter.schemas.enable=true (JsonConverter) or the Avro converter");
        return CF_ERR_SCHEMA;
    }
    if (ks->n_fields == 0) {
        cf_err_set(err, CF_ERR_SCHEMA, "record key struct has no fields");
        cf_err_hint(err, "the source table needs a primary key (Debezium sends a null key without one)");
        return CF_ERR_SCHEMA;
    }
    if (t->t.n_key == 0) { /* first record: the key defines the primary key */
        if (ks->n_fields > 16) {
            cf_err_set(err, CF_ERR_SCHEMA, "record key has %zu fields; a primary key may have at most 16",
                       ks->n_fields);
            cf_err_detail(err, "BigQuery CDC tables allow composite keys of up to 16 columns");
            return CF_ERR_SCHEMA;
        }
        for (size_t i = 0; i < ks->n_fields; i++) {
            char *n = col_name(s, ks->fields[i].name);
            if (find_col(t, n) >= 0 || reserved_name(n)) {
                cf_err_set(err, CF_ERR_SCHEMA, "key field \"%s\" gives a column name \"%s\" that is %s",
                           ks->fields[i].name, n, reserved_name(n) ? "reserved" : "already used");
                free(n);
                return CF_ERR_SCHEMA;
            }
            add_col(t, n, sk_col_type_of(ks->fields[i].schema), true);
        }
        t->t.n_key = ks->n_fields;
    } else {
        bool same = ks->n_fields == t->t.n_key;
        for (size_t i = 0; same && i < ks->n_fields; i++) {
            char *n = col_name(s, ks->fields[i].name);
            same = strcmp(n, t->t.cols[i].name) == 0 &&
                   sk_col_compatible(t->t.cols[i].type, sk_col_type_of(ks->fields[i].schema));
            free(n);
        }
        if (!same) {
            cf_buf b = CF_BUF_INIT;
            for (size_t i = 0; i < t->t.n_key; i++)
                cf_buf_printf(&b, "%s%s %s", i ? ", " : "", t->t.cols[i].name, cf_col_type_name(t->t.cols[i].type));
            cf_err_set(err, CF_ERR_SCHEMA, "record key fields do not match the primary key of table \"%s\"",
                       t->t.name);
            cf_err_detail(err, "primary key: (%s)", b.data ? b.data : "");
            cf_err_hint(err, "a primary key change needs a new table: route the topic elsewhere (RegexRouter) or "
                             "recreate the table");
            cf_buf_free(&b);
            return CF_ERR_SCHEMA;
        }
    }
    cf_schema_unref(t->key_schema);
    t->key_schema = cf_schema_ref((cf_schema *)ks);
    return CF_OK;
}

static bool keep_field(const cf_sink *s, const char *name) {
    for (size_t i = 0; i < s->n_keep; i++)
        if (strcmp(s->keep[i], name) == 0) return true;
    return false;
}

/* Map an image schema's fields to columns, adding columns for new fields. */
static cf_code build_map(cf_sink *s, sk_table *t, const cf_schema *vs, cf_err *err) {
    if (t->map.schema == vs) return CF_OK;
    if (t->map.schema && cf_schema_equal(t->map.schema, vs)) { /* same shape, new object */
        cf_schema_unref(t->map.schema);
        t->map.schema = cf_schema_ref((cf_schema *)vs);
        return CF_OK;
    }
    map_clear(&t->map);
    int *col = cf_xmalloc((vs->n_fields ? vs->n_fields : 1) * sizeof *col);
    for (size_t i = 0; i < vs->n_fields; i++) {
        const cf_field *f = &vs->fields[i];
        col[i] = -1;
        if (strncmp(f->name, "__", 2) == 0 && !keep_field(s, f->name)) continue; /* transform metadata */
        char *n = col_name(s, f->name);
        int c = find_col(t, n);
        cf_col_type ft = sk_col_type_of(f->schema);
        if (c >= 0 && (size_t)c < t->t.n_key) { /* key field repeated in the value: the key's wins */
            free(n);
            continue;
        }
        if (reserved_name(n)) {
            cf_err_set(err, CF_ERR_SCHEMA, "field \"%s\" would be column \"%s\", a reserved name", f->name, n);
            cf_err_where(err, "%s", f->name);
            cf_err_detail(err, "BigQuery reserves _CHANGE_TYPE, _CHANGE_SEQUENCE_NUMBER and _CHANGE_TIMESTAMP");
            cf_err_hint(err, "rename the field with ReplaceField (renames=...)");
            free(n);
            free(col);
            return CF_ERR_SCHEMA;
        }
        if (c >= 0) {
            for (size_t j = 0; j < i; j++)
                if (col[j] == c) {
                    cf_err_set(err, CF_ERR_SCHEMA, "fields \"%s\" and \"%s\" both become column \"%s\"",
                               vs->fields[j].name, f->name, n);
                    cf_err_hint(err, "rename one with ReplaceField, or set sanitizeFieldNames=false");
                    free(n);
                    free(col);
                    return CF_ERR_SCHEMA;
                }
            if (!sk_col_compatible(t->t.cols[c].type, ft)) {
                cf_err_set(err, CF_ERR_SCHEMA, "incompatible schema change: column \"%s\" of table \"%s\" is %s, "
                           "field \"%s\" is now %s", n, t->t.name, cf_col_type_name(t->t.cols[c].type), f->name,
                           cf_col_type_name(ft));
                cf_err_where(err, "%s", f->name);
                cf_err_hint(err, "only widening changes (int16 -> int32 -> int64, float -> double) are applied; "
                                 "migrate the column by hand or route the topic to a new table");
                free(n);
                free(col);
                return CF_ERR_SCHEMA;
            }
            free(n);
        } else {
            if (t->ensured && !s->o.allow_new_fields) {
                cf_err_set(err, CF_ERR_SCHEMA, "field \"%s\" has no column in table \"%s\"", f->name, t->t.name);
                cf_err_where(err, "%s", f->name);
                cf_err_hint(err, "set allowNewBigQueryFields=true to add columns, or drop the field (ReplaceField)");
                free(n);
                free(col);
                return CF_ERR_SCHEMA;
            }
            add_col(t, n, ft, false);
            c = (int)t->t.n_cols - 1;
        }
        col[i] = c;
    }
    t->map.schema = cf_schema_ref((cf_schema *)vs);
    t->map.col = col;
    t->map.n = vs->n_fields;
    return CF_OK;
}

static cf_code table_for(cf_sink *s, const char *topic, sk_table **out, cf_err *err) {
    if (s->last_tbl && strcmp(s->last_tbl->t.topic, topic) == 0) {
        *out = s->last_tbl;
        return CF_OK;
    }
    for (size_t i = 0; i < s->n_tables; i++)
        if (strcmp(s->tables[i]->t.topic, topic) == 0) {
            *out = s->last_tbl = s->tables[i];
            return CF_OK;
        }
    char *name = s->o.sanitize_topics ? cf_sink_sanitize_name(topic) : cf_xstrdup(topic);
    for (size_t i = 0; i < s->n_tables; i++)
        if (strcmp(s->tables[i]->t.name, name) == 0) {
            cf_err_set(err, CF_ERR_CONFIG, "topics \"%s\" and \"%s\" both map to table \"%s\"",
                       s->tables[i]->t.topic, topic, name);
            cf_err_hint(err, "rename one topic with RegexRouter");
            free(name);
            return CF_ERR_CONFIG;
        }
    sk_table *t = cf_xcalloc(1, sizeof *t);
    t->t.name = name;
    t->t.topic = cf_xstrdup(topic);
    t->t.seq_sections = (s->o.seq_field && *s->o.seq_field) ? 2 : 1;
    pthread_mutex_lock(&s->mu);
    s->tables = cf_xrealloc(s->tables, (s->n_tables + 1) * sizeof *s->tables);
    s->tables[s->n_tables++] = t;
    pthread_mutex_unlock(&s->mu);
    *out = s->last_tbl = t;
    return CF_OK;
}

/* ---------------- compaction ---------------- */

static uint64_t hash_bytes(const uint8_t *p, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* Encode the key cells (kind + payload) into the arena. */
static const uint8_t *encode_key(cf_sink *s, const cf_change *c, size_t n_key, uint32_t *len) {
    size_t need = 0;
    for (size_t i = 0; i < n_key; i++) need += 1 + 8 + (c->cells[i].kind >= CF_CELL_TEXT ? c->cells[i].len : 0);
    uint8_t *b = cf_arena_alloc(s->arena, need ? need : 1), *p = b;
    for (size_t i = 0; i < n_key; i++) {
        const cf_cell *x = &c->cells[i];
        *p++ = x->kind;
        if (x->kind == CF_CELL_TEXT || x->kind == CF_CELL_BLOB) {
            uint64_t l = x->len;
            memcpy(p, &l, 8), p += 8;
            memcpy(p, x->u.p, x->len), p += x->len;
        } else {
            memcpy(p, &x->u.i, 8), p += 8;
        }
    }
    *len = (uint32_t)(p - b);
    return b;
}

static void ht_grow(cf_sink *s) {
    size_t ncap = s->ht_cap ? s->ht_cap * 2 : 4096;
    sk_entry *n = cf_xcalloc(ncap, sizeof *n);
    for (size_t i = 0; i < s->ht_cap; i++) {
        sk_entry *e = &s->ht[i];
        if (!e->key) continue;
        size_t j = e->hash & (ncap - 1);
        while (n[j].key) j = (j + 1) & (ncap - 1);
        n[j] = *e;
    }
    free(s->ht);
    s->ht = n;
    s->ht_cap = ncap;
}

/* A later change of the same key: merge cells that keep the stored value. */
static void merge_keep(cf_change *newer, const cf_change *older) {
    if (!newer->has_keep || newer->op != CF_CHANGE_UPSERT || older->op != CF_CHANGE_UPSERT) return;
    bool still = false;
    for (size_t i = 0; i < newer->n_cells; i++) {
        if (newer->cells[i].kind != CF_CELL_KEEP) continue;
        if (i < older->n_cells && older->cells[i].kind != CF_CELL_KEEP) newer->cells[i] = older->cells[i];
        else still = true;
    }
    newer->has_keep = still;
}

static void batch_push(sk_table *t, cf_change *c, uint32_t *slot) {
    if (t->nb == t->capb) {
        t->capb = t->capb ? t->capb * 2 : 1024;
        t->batch = cf_xrealloc(t->batch, t->capb * sizeof *t->batch);
    }
    *slot = (uint32_t)t->nb;
    t->batch[t->nb++] = c;
}

/* Merging cells that keep the stored value from the buffered change is
 * right only if that change is the key's previous change in the source:
 * same partition and an unbroken run of offsets since (same epoch). Across
 * a break (a zombie task's stale buffer, a redelivery) the buffered change
 * is applied first instead, and the new one then keeps what is stored. */
static bool may_merge(const cf_change *newer, const cf_change *older) {
    if (!newer->has_keep || newer->op != CF_CHANGE_UPSERT || older->op != CF_CHANGE_UPSERT) return true;
    const sk_change *a = (const sk_change *)newer, *b = (const sk_change *)older;
    return a->partition == b->partition && a->epoch == b->epoch;
}

static int compact_add(cf_sink *s, sk_table *t, cf_change *c) {
    if ((s->ht_used + 1) * 10 > s->ht_cap * 7) ht_grow(s);
    uint32_t len;
    const uint8_t *key = encode_key(s, c, t->t.n_key, &len);
    uint64_t h = hash_bytes(key, len, hash_bytes((const uint8_t *)&t, sizeof t, 0xcbf29ce484222325ULL));
    size_t j = h & (s->ht_cap - 1);
    while (s->ht[j].key) {
        sk_entry *e = &s->ht[j];
        if (e->hash == h && e->tbl == t && e->len == len && memcmp(e->key, key, len) == 0) {
            cf_change *old = t->batch[e->slot];
            if (cf_seq_compare(&c->seq, &old->seq) >= 0) {
                if (!s->merge_any && !may_merge(c, old)) return CF_SINK_RETRY_AFTER_FLUSH;
                merge_keep(c, old);
                t->batch[e->slot] = c;
            }
            s->st.compacted++;
            return CF_OK;
        }
        j = (j + 1) & (s->ht_cap - 1);
    }
    sk_entry *e = &s->ht[j];
    e->hash = h, e->key = key, e->len = len, e->tbl = t;
    batch_push(t, c, &e->slot);
    s->ht_used++;
    return CF_OK;
}

/* Compact an array of changes of one table in place (used by targets for
 * staged changes); returns the new count. Order of survivors: first
 * appearance. */
size_t cf_sink_compact(cf_change **changes, size_t n, size_t n_key) {
    cf_sink tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.arena = cf_arena_new(0);
    tmp.merge_any = true;
    sk_table t;
    memset(&t, 0, sizeof t);
    t.t.n_key = n_key;
    for (size_t i = 0; i < n; i++) (void)compact_add(&tmp, &t, changes[i]); /* staged rows: one stream, in order */
    memcpy(changes, t.batch, t.nb * sizeof *changes);
    size_t m = t.nb;
    free(t.batch);
    free(tmp.ht);
    cf_arena_destroy(tmp.arena);
    return m;
}

/* ---------------- routing a record ---------------- */

static cf_code route(cf_sink *s, const cf_record *rec, bool retry, cf_err *err) {
    sk_class k;
    cf_code rc = sk_classify(&s->o, rec, &k, err);
    if (rc) return rc;
    if (k.skip) {
        s->st.skipped_other++;
        CF_DEBUG("sink", "%s/%d@%" PRId64 ": skipped (%s)", rec->topic, rec->partition, rec->offset, k.why);
        return CF_OK;
    }
    cf_seq seq;
    bool skip;
    rc = sk_sequence(&s->o, rec, &k, &seq, &skip, err);
    if (rc) return rc;
    if (skip) {
        s->st.skipped_tombstones++;
        return CF_OK;
    }
    if (!rec->key) {
        cf_err_set(err, CF_ERR_SCHEMA, "record key is null");
        cf_err_detail(err, "the primary key comes from the record key; Debezium sends a null key for tables "
                           "without a primary key");
        cf_err_hint(err, "give the source table a primary key (or message.key.columns in Debezium)");
        return CF_ERR_SCHEMA;
    }
    sk_table *t;
    rc = table_for(s, rec->topic ? rec->topic : "", &t, err);
    if (rc) return rc;
    const cf_schema *ks = rec->key->type == CF_STRUCT ? rec->key->u.st.schema : rec->key_schema;
    rc = check_key_schema(s, t, ks, err);
    if (rc) return rc;
    if (k.image) {
        rc = build_map(s, t, k.image->u.st.schema, err);
        if (rc) return rc;
    }
    if (rec->partition >= 0 && !retry) { /* stream epochs per partition */
        size_t p = (size_t)rec->partition;
        if (p >= t->n_parts) {
            size_t n = p + 1;
            t->last_off = cf_xrealloc(t->last_off, n * sizeof *t->last_off);
            t->epoch = cf_xrealloc(t->epoch, n * sizeof *t->epoch);
            for (size_t i = t->n_parts; i < n; i++) t->last_off[i] = -2, t->epoch[i] = 0;
            t->n_parts = n;
        }
        if (rec->offset != t->last_off[p] + 1) t->epoch[p]++;
        t->last_off[p] = rec->offset;
    }
    sk_change *sc = cf_arena_alloc(s->arena, sizeof *sc);
    memset(sc, 0, sizeof *sc);
    sc->partition = rec->partition;
    sc->epoch = rec->partition >= 0 && (size_t)rec->partition < t->n_parts ? t->epoch[rec->partition] : 0;
    cf_change *c = &sc->c;
    c->op = k.op;
    c->seq = seq;
    cf_seq_format(&seq, c->seq_text);
    c->n_cells = k.op == CF_CHANGE_DELETE ? t->t.n_key : t->t.n_cols;
    c->cells = cf_arena_alloc(s->arena, (c->n_cells ? c->n_cells : 1) * sizeof *c->cells);
    memset(c->cells, 0, c->n_cells * sizeof *c->cells);
    sk_ctx ctx = {s->arena, true};
    for (size_t i = 0; i < t->t.n_key; i++) {
        const cf_value *kv = rec->key->u.st.fields[i];
        if (!kv) {
            cf_err_set(err, CF_ERR_SCHEMA, "key field \"%s\" is null", ks->fields[i].name);
            cf_err_where(err, "key.%s", ks->fields[i].name);
            cf_err_detail(err, "primary key columns cannot be null");
            return CF_ERR_SCHEMA;
        }
        rc = sk_cell_from_value(&ctx, ks->fields[i].schema, kv, t->t.cols[i].type, &c->cells[i], err);
        if (rc) {
            cf_err_where(err, "key.%s", ks->fields[i].name);
            return rc;
        }
        if (c->cells[i].kind == CF_CELL_KEEP) {
            cf_err_set(err, CF_ERR_SCHEMA, "key field \"%s\" holds Debezium's unavailable-value placeholder",
                       ks->fields[i].name);
            cf_err_where(err, "key.%s", ks->fields[i].name);
            return CF_ERR_SCHEMA;
        }
    }
    if (k.op == CF_CHANGE_UPSERT) {
        const cf_schema *vs = k.image->u.st.schema;
        for (size_t i = 0; i < t->map.n; i++) {
            int ci = t->map.col[i];
            if (ci < 0) continue;
            const cf_value *v = k.image->u.st.fields[i];
            rc = sk_cell_from_value(&ctx, vs->fields[i].schema, v, t->t.cols[ci].type, &c->cells[ci], err);
            if (rc) {
                cf_err_where(err, "%s", vs->fields[i].name);
                return rc;
            }
            if (c->cells[ci].kind == CF_CELL_KEEP) c->has_keep = true;
        }
    }
    rc = compact_add(s, t, c);
    if (rc) return rc; /* CF_SINK_RETRY_AFTER_FLUSH */
    if (k.op == CF_CHANGE_UPSERT) s->st.upserts++;
    else s->st.deletes++;
    s->buffered++;
    return CF_OK;
}

/* ---------------- flush ---------------- */

/* Key order for the writes: a batch has one change per key, so the order is
 * free, and walking a primary key index in order touches each page once
 * (SQLite: ~3x fewer database seconds than event order on random keys). */
static int cell_cmp(const cf_cell *a, const cf_cell *b) {
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    switch (a->kind) {
    case CF_CELL_INT: return a->u.i < b->u.i ? -1 : a->u.i > b->u.i;
    case CF_CELL_REAL: return a->u.f < b->u.f ? -1 : a->u.f > b->u.f;
    case CF_CELL_TEXT:
    case CF_CELL_BLOB: {
        uint32_t m = a->len < b->len ? a->len : b->len;
        int c = m ? memcmp(a->u.p, b->u.p, m) : 0;
        return c ? c : (a->len < b->len ? -1 : a->len > b->len);
    }
    default: return 0;
    }
}

static int key_cmp(const void *pa, const void *pb) {
    const cf_change *a = *(const cf_change *const *)pa, *b = *(const cf_change *const *)pb;
    size_t n = a->n_cells < b->n_cells ? a->n_cells : b->n_cells;
    for (size_t k = 0; k < n; k++) {
        int c = cell_cmp(&a->cells[k], &b->cells[k]);
        if (c) return c; /* key cells come first; distinct keys differ there */
    }
    return 0;
}

static void batch_reset(cf_sink *s) {
    for (size_t i = 0; i < s->n_tables; i++) s->tables[i]->nb = 0;
    if (s->ht) memset(s->ht, 0, s->ht_cap * sizeof *s->ht);
    s->ht_used = 0;
    s->buffered = 0;
    cf_arena_reset(s->arena);
}

static int table_name_cmp(const void *a, const void *b) {
    return strcmp((*(sk_table *const *)a)->t.name, (*(sk_table *const *)b)->t.name);
}

static cf_code do_flush(cf_sink *s, cf_err *err) {
    if (s->buffered == 0) return CF_OK;
    double t0 = now_s();
    cf_code rc = CF_OK;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_tables && !rc; i++) {
        sk_table *t = s->tables[i];
        if (t->nb == 0) continue;
        if (!t->ensured || t->t.n_created_cols < t->t.n_cols) {
            rc = s->tg->ensure_table(s->ts, &t->t, err);
            if (!rc) t->ensured = true, t->t.n_created_cols = t->t.n_cols;
        }
    }
    if (!rc) rc = s->tg->begin(s->ts, err);
    /* tables in name order: targets lock per table, and every task taking
     * the locks in the same order cannot deadlock */
    sk_table **order = cf_xmalloc((s->n_tables ? s->n_tables : 1) * sizeof *order);
    memcpy(order, s->tables, s->n_tables * sizeof *order);
    qsort(order, s->n_tables, sizeof *order, table_name_cmp);
    if (!rc) {
        int64_t wall = (int64_t)time(NULL);
        for (size_t i = 0; i < s->n_tables && !rc; i++) {
            sk_table *t = order[i];
            if (t->nb == 0) continue;
            /* a sorted copy: the compaction map indexes t->batch until the reset */
            cf_change **sorted = cf_xmalloc(t->nb * sizeof *sorted);
            memcpy(sorted, t->batch, t->nb * sizeof *sorted);
            qsort(sorted, t->nb, sizeof *sorted, key_cmp);
            if (s->o.max_staleness_s > 0) rc = s->tg->stage(s->ts, &t->t, sorted, t->nb, err);
            else rc = s->tg->apply(s->ts, &t->t, sorted, t->nb, err);
            free(sorted);
            if (!rc) s->st.written += t->nb;
            if (!rc && s->tg->purge_tombstones && wall - t->last_purge >= 60) {
                rc = s->tg->purge_tombstones(s->ts, &t->t, wall - s->o.delete_retention_s, err);
                t->last_purge = wall;
            }
            if (rc) cf_err_where(err, "table \"%s\" (topic %s)", t->t.name, t->t.topic);
        }
        if (!rc) rc = s->tg->commit(s->ts, err);
        else s->tg->rollback(s->ts);
    }
    free(order);
    pthread_mutex_unlock(&s->mu);
    s->st.t_db_s += now_s() - t0;
    if (rc) return rc;
    s->st.flushes++;
    batch_reset(s);
    return CF_OK;
}

cf_code cf_sink_put(cf_sink *s, cf_record *const *records, size_t n, cf_err *err) {
    double t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        const cf_record *r = records[i];
        s->st.records++;
        cf_err problem;
        cf_err_clear(&problem);
        cf_code rc = route(s, r, false, &problem);
        if (rc == CF_SINK_RETRY_AFTER_FLUSH) {
            s->st.t_route_s += now_s() - t0;
            rc = do_flush(s, err);
            if (rc) return rc;
            t0 = now_s();
            rc = route(s, r, true, &problem);
            if (rc == CF_SINK_RETRY_AFTER_FLUSH) rc = cf_err_set(&problem, CF_ERR_INTERNAL, "compaction retry failed");
        }
        if (rc) {
            char where[256];
            snprintf(where, sizeof where, "%s/%d@%" PRId64 "%s%s", r->topic ? r->topic : "?", r->partition,
                     r->offset, problem.where[0] ? ": " : "", problem.where);
            snprintf(problem.where, sizeof problem.where, "%s", where);
            if (!s->rep) {
                if (err) *err = problem;
                s->st.t_route_s += now_s() - t0;
                return rc;
            }
            rc = s->rep(s->rep_ud, r, &problem, err);
            if (rc) {
                s->st.t_route_s += now_s() - t0;
                return rc;
            }
            s->st.bad_records++;
            continue;
        }
        if (s->buffered >= s->o.batch_max_records) {
            s->st.t_route_s += now_s() - t0;
            rc = do_flush(s, err);
            if (rc) return rc;
            t0 = now_s();
        }
    }
    s->st.t_route_s += now_s() - t0;
    return CF_OK;
}

cf_code cf_sink_flush(cf_sink *s, cf_err *err) {
    if (s->bg_failed) {
        if (err) *err = s->bg_err;
        return s->bg_err.code ? s->bg_err.code : CF_ERR_TARGET;
    }
    return do_flush(s, err);
}

/* ---------------- staleness ---------------- */

static cf_code apply_staged_locked(cf_sink *s, void *ts, bool bg, cf_err *err) {
    for (size_t i = 0; i < s->n_tables; i++) {
        sk_table *t = s->tables[i];
        if (!t->ensured) continue;
        void *keep = t->t.target_state;
        if (bg) t->t.target_state = t->bg_state;
        size_t applied = 0;
        cf_code rc = s->tg->apply_staged(ts, &t->t, &applied, err);
        if (bg) t->bg_state = t->t.target_state, t->t.target_state = keep;
        if (rc) {
            cf_err_where(err, "table \"%s\" (topic %s)", t->t.name, t->t.topic);
            return rc;
        }
        if (applied) s->st.background_applies++;
    }
    return CF_OK;
}

cf_code cf_sink_apply_staged(cf_sink *s, cf_err *err) {
    if (s->o.max_staleness_s <= 0) return CF_OK;
    pthread_mutex_lock(&s->mu);
    cf_code rc = apply_staged_locked(s, s->ts, false, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void *bg_main(void *arg) {
    cf_sink *s = arg;
    /* Wake at half the interval so an apply happens at least every N seconds
     * even when one apply takes a while. */
    int64_t period_ms = s->o.max_staleness_s * 500;
    if (period_ms < 100) period_ms = 100;
    pthread_mutex_lock(&s->mu);
    while (!s->bg_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += period_ms / 1000;
        ts.tv_nsec += (period_ms % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        int w = pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (s->bg_stop) break;
        if (w != ETIMEDOUT) continue;
        cf_err e;
        cf_err_clear(&e);
        if (apply_staged_locked(s, s->bg_ts, true, &e)) {
            cf_log_err(CF_LOG_ERROR, "sink", &e);
            s->bg_err = e;
            s->bg_failed = true;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---------------- lifecycle ---------------- */

cf_code cf_sink_new(const cf_sink_options *opts, const cf_sink_target *target, cf_sink **out, cf_err *err) {
    *out = NULL;
    if (!target) {
        cf_err_set(err, CF_ERR_INTERNAL, "cf_sink_new needs a target");
        cf_err_hint(err, "resolve the name with cf_sink_target_find");
        return CF_ERR_INTERNAL;
    }
    cf_sink *s = cf_xcalloc(1, sizeof *s);
    s->o = *opts;
    s->o.target = target->name;
    s->o.sqlite_path = dup_or_null(opts->sqlite_path);
    s->o.pg_conninfo = dup_or_null(opts->pg_conninfo);
    s->o.pg_user = dup_or_null(opts->pg_user);
    s->o.pg_password = dup_or_null(opts->pg_password);
    s->o.pg_schema = dup_or_null(opts->pg_schema);
    s->o.seq_field = opts->seq_field && *opts->seq_field ? cf_xstrdup(opts->seq_field) : NULL;
    if (!s->o.batch_max_records) s->o.batch_max_records = 100000;
    for (const char *const *k = opts->keep_fields; k && *k; k++) {
        s->keep = cf_xrealloc(s->keep, (s->n_keep + 1) * sizeof *s->keep);
        s->keep[s->n_keep++] = cf_xstrdup(*k);
    }
    s->o.keep_fields = NULL;
    s->tg = target;
    s->arena = cf_arena_new(1 << 20);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    cf_code rc = target->open(&s->o, &s->ts, err);
    if (!rc && s->o.max_staleness_s > 0) {
        rc = target->open(&s->o, &s->bg_ts, err);
        if (!rc) {
            if (pthread_create(&s->bg, NULL, bg_main, s) != 0) {
                rc = cf_err_set(err, CF_ERR_INTERNAL, "cannot start the staleness thread");
            } else {
                s->bg_running = true;
            }
        }
    }
    if (rc) {
        cf_sink_destroy(s);
        return rc;
    }
    *out = s;
    return CF_OK;
}

void cf_sink_destroy(cf_sink *s) {
    if (!s) return;
    if (s->bg_running) {
        pthread_mutex_lock(&s->mu);
        s->bg_stop = true;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->bg, NULL);
        /* what is staged stays in the database (the next run applies it);
         * applying it now keeps the target fresh after a bounded run */
        cf_err e;
        cf_err_clear(&e);
        if (cf_sink_apply_staged(s, &e)) cf_log_err(CF_LOG_WARN, "sink", &e);
    }
    for (size_t i = 0; i < s->n_tables; i++) table_free(s, s->tables[i]);
    free(s->tables);
    if (s->ts) s->tg->close(s->ts);
    if (s->bg_ts) s->tg->close(s->bg_ts);
    cf_arena_destroy(s->arena);
    free(s->ht);
    free((char *)s->o.sqlite_path);
    free((char *)s->o.pg_conninfo);
    free((char *)s->o.pg_user);
    free((char *)s->o.pg_password);
    free((char *)s->o.pg_schema);
    free((char *)s->o.seq_field);
    for (size_t i = 0; i < s->n_keep; i++) free(s->keep[i]);
    free(s->keep);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

void cf_sink_set_reporter(cf_sink *s, cf_sink_report_fn fn, void *ud) {
    s->rep = fn;
    s->rep_ud = ud;
}

void cf_sink_get_stats(const cf_sink *s, cf_sink_stats *out) { *out = s->st; }

const cf_sink_table *cf_sink_table_for_topic(const cf_sink *s, const char *topic) {
    for (size_t i = 0; i < s->n_tables; i++)
        if (strcmp(s->tables[i]->t.topic, topic) == 0) return &s->tables[i]->t;
    return NULL;
}
