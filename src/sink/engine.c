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
 *
 * THE WRITER THREAD (async_apply). Routing and the database's work take
 * about the same time (bench_sink), so one thread doing both leaves a core
 * idle while the other waits on it. With async_apply a flush hands the
 * whole batch over (the tables' change arrays, the arena they live in and a
 * copy of the positions it reaches: the flight) to one writer thread and
 * routing goes on into a fresh buffer; the next flush first waits for the
 * flight. The writer alone uses the target connection while a flight is
 * up; everything routing does that the writer reads (the table list, a
 * table's columns, the connection for a stored sequence, Cassandra's state)
 * waits for the flight first (settle). A flight's failure is kept: every
 * later call returns it, so no later write can move the positions past
 * changes that were lost.
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
#include "cdcflow/worker.h"
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
    cf_change **fbatch;    /* the flight's (async_apply), read by the writer */
    size_t fnb, fcapb;
    int64_t last_purge;
    void *bg_state; /* the background connection's statement cache */
    /* per partition: the last offset put and the stream's epoch, which
     * changes whenever the offsets are not consecutive (a redelivery, a
     * reassignment, records dropped upstream) */
    int64_t *last_off;
    uint32_t *epoch;
    size_t n_parts;
    bool meta_logged; /* the "__" fields kept out were logged */
} sk_table;

/* A buffered change and where it came from (the merge rule needs it). */
typedef struct sk_change {
    cf_change c;
    uint32_t epoch;
} sk_change;

/* Where one stream of the input stands: a topic partition (next offset) or
 * a source partition (direct mode: the source offset after the last record
 * taken, kept borrowed from the record while the put runs, as JSON once it
 * must outlive it). */
typedef struct sk_pos {
    bool source;
    char *stream;        /* topic, or the source's offsets key JSON */
    int32_t partition;   /* -1 for a source's */
    int64_t next_offset; /* -1 for a source's */
    char *source_name;   /* a source's: its connector and partition, to find it again */
    cf_value *source_partition;
    const cf_value *offset_borrowed;
    char *offset_json;
    bool dirty;
} sk_pos;

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
    /* positions (cf_sink_put_at): the last one of each stream taken, stored
     * with the next apply; dirty ones are written */
    sk_pos *pos;
    size_t n_pos, cap_pos, last_topic_pos, last_source_pos;
    bool pos_dirty;
    sk_cass *cass; /* Cassandra change events' partition states (cassandra.c) */
    /* async_apply: the writer thread and its flight (see the top) */
    bool async;                   /* asked for and allowed (target, no staleness) */
    bool wr_running, wr_quit;     /* wr_quit under wmu */
    pthread_t wr;
    pthread_mutex_t wmu;
    pthread_cond_t wcv;           /* a flight handed over, or one ended */
    bool flying;                  /* under wmu: handed over, not ended */
    bool up;                      /* the caller's side: a flight not yet collected */
    uint64_t begun, done;         /* tickets: the last write begun, the last one ended */
    cf_arena *farena;             /* the flight's cells */
    cf_sink_stored_position *fpos; /* the positions it stores (owned copies) */
    size_t n_fpos;
    cf_code frc;                  /* the flight's result, its time and rows (under wmu) */
    cf_err ferr;
    double f_db_s;
    uint64_t f_written;
    bool failed;                  /* a flight failed: fail_err for every later call */
    cf_err fail_err;
};

static void settle(cf_sink *s);

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
    o->cassandra_gc_grace_s = 864000;
    o->mediate_schema_updates = true;
    o->batch_max_records = 100000;
}

static char *dup_or_null(const char *s) { return s ? cf_xstrdup(s) : NULL; }

/* The BigQuery settings' strings, owned by the engine's copy of the options. */
static void bq_options_copy(cf_sink_bq_options *d, const cf_sink_bq_options *o) {
    *d = *o;
    d->project = dup_or_null(o->project);
    d->default_dataset = dup_or_null(o->default_dataset);
    d->keyfile = dup_or_null(o->keyfile);
    d->key_source = dup_or_null(o->key_source);
    d->storage_endpoint = dup_or_null(o->storage_endpoint);
    d->api_endpoint = dup_or_null(o->api_endpoint);
    d->token_uri = dup_or_null(o->token_uri);
    d->metadata_url = dup_or_null(o->metadata_url);
    size_t n = 0;
    while (o->datasets && o->datasets[n]) n++;
    char **ds = NULL;
    if (o->datasets) {
        ds = cf_xcalloc(n + 1, sizeof *ds);
        for (size_t i = 0; i < n; i++) ds[i] = cf_xstrdup(o->datasets[i]);
    }
    d->datasets = (const char *const *)ds;
}

static void bq_options_free(cf_sink_bq_options *o) {
    const char *strs[] = {o->project,          o->default_dataset, o->keyfile,   o->key_source,
                          o->storage_endpoint, o->api_endpoint,    o->token_uri, o->metadata_url};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) free((char *)strs[i]);
    for (size_t i = 0; o->datasets && o->datasets[i]; i++) free((char *)o->datasets[i]);
    free((void *)o->datasets);
    memset(o, 0, sizeof *o);
}

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
    free(t->fbatch);
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
        cf_err_hint(err, "a key without a schema: key.converter.schemas.enable=true (JsonConverter) or the Avro "
                         "converter; a source without keys (files, stream): make the key from the row with "
                         "transforms ValueToKey (fields=id), or primary.key.mode=record_value with primary.key.fields");
        return CF_ERR_SCHEMA;
    }
    if (ks->n_fields == 0) {
        cf_err_set(err, CF_ERR_SCHEMA, "record key struct has no fields");
        cf_err_hint(err, "the source table needs a primary key (Debezium sends a null key without one)");
        return CF_ERR_SCHEMA;
    }
    if (t->t.n_key == 0) { /* first record: the key defines the primary key */
        settle(s);         /* columns change: not while the writer reads them */
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
    cf_buf kept_out = CF_BUF_INIT;
    for (size_t i = 0; i < vs->n_fields; i++) {
        const cf_field *f = &vs->fields[i];
        col[i] = -1;
        if (strncmp(f->name, "__", 2) == 0 && !s->o.metadata_columns && !keep_field(s, f->name)) {
            /* transform metadata (ExtractNewRecordState's add.fields) */
            if (strcmp(f->name, "__deleted") != 0) cf_buf_printf(&kept_out, "%s%s", kept_out.len ? ", " : "", f->name);
            continue;
        }
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
            cf_buf_free(&kept_out);
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
                    cf_buf_free(&kept_out);
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
                cf_buf_free(&kept_out);
                return CF_ERR_SCHEMA;
            }
            free(n);
        } else {
            settle(s); /* a new column: not while the writer reads the columns (and ensured is its) */
            if (t->ensured && !s->o.allow_new_fields) {
                cf_err_set(err, CF_ERR_SCHEMA, "field \"%s\" has no column in table \"%s\"", f->name, t->t.name);
                cf_err_where(err, "%s", f->name);
                cf_err_hint(err, "set allowNewBigQueryFields=true to add columns, or drop the field (ReplaceField)");
                free(n);
                free(col);
                cf_buf_free(&kept_out);
                return CF_ERR_SCHEMA;
            }
            add_col(t, n, ft, false);
            c = (int)t->t.n_cols - 1;
        }
        col[i] = c;
    }
    if (kept_out.len && !t->meta_logged) {
        CF_INFO("sink", "table %s: fields %s are not written (ExtractNewRecordState metadata; cdc-sink keeps \"__\" "
                "fields out unless cdcKeepMetadataFields lists them)", t->t.name, kept_out.data);
        t->meta_logged = true;
    }
    cf_buf_free(&kept_out);
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
    char *name;
    if (s->o.table_name_format) { /* the Debezium JDBC sink's: ${topic} with dots as underscores */
        cf_buf b = CF_BUF_INIT;
        for (const char *p = s->o.table_name_format; *p;) {
            if (strncmp(p, "${topic}", 8) == 0) {
                for (const char *q = topic; *q; q++) cf_buf_append_byte(&b, *q == '.' ? '_' : (uint8_t)*q);
                p += 8;
            } else {
                cf_buf_append_byte(&b, (uint8_t)*p++);
            }
        }
        char *formatted = b.data ? b.data : cf_xstrdup("");
        name = s->o.sanitize_topics ? cf_sink_sanitize_name(formatted) : cf_xstrdup(formatted);
        free(formatted);
    } else {
        name = s->o.sanitize_topics ? cf_sink_sanitize_name(topic) : cf_xstrdup(topic);
    }
    for (size_t i = 0; i < s->n_tables; i++)
        if (strcmp(s->tables[i]->t.name, name) == 0) {
            cf_err_set(err, CF_ERR_CONFIG, "topics \"%s\" and \"%s\" both map to table \"%s\"",
                       s->tables[i]->t.topic, topic, name);
            cf_err_hint(err, "rename one topic with RegexRouter");
            free(name);
            return CF_ERR_CONFIG;
        }
    settle(s); /* the writer walks the table list */
    sk_table *t = cf_xcalloc(1, sizeof *t);
    t->t.name = name;
    t->t.topic = cf_xstrdup(topic);
    t->t.seq_sections = (s->o.seq_field && *s->o.seq_field) ? 2 : 1;
    t->t.sink = s;
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
    return a->c.partition == b->c.partition && a->epoch == b->epoch;
}

/* The compaction map's slot of c's key: its entry, or the free slot where
 * it goes (key, len and hash for that). */
static sk_entry *compact_probe(cf_sink *s, sk_table *t, const cf_change *c, const uint8_t **key, uint32_t *len,
                               uint64_t *hash) {
    *key = encode_key(s, c, t->t.n_key, len);
    uint64_t h = hash_bytes(*key, *len, hash_bytes((const uint8_t *)&t, sizeof t, 0xcbf29ce484222325ULL));
    *hash = h;
    size_t j = h & (s->ht_cap - 1);
    while (s->ht[j].key) {
        sk_entry *e = &s->ht[j];
        if (e->hash == h && e->tbl == t && e->len == *len && memcmp(e->key, *key, *len) == 0) return e;
        j = (j + 1) & (s->ht_cap - 1);
    }
    return &s->ht[j];
}

static int compact_add(cf_sink *s, sk_table *t, cf_change *c) {
    if ((s->ht_used + 1) * 10 > s->ht_cap * 7) ht_grow(s);
    uint32_t len;
    uint64_t h;
    const uint8_t *key;
    sk_entry *e = compact_probe(s, t, c, &key, &len, &h);
    if (e->key) {
        cf_change *old = t->batch[e->slot];
        if (cf_seq_compare(&c->seq, &old->seq) >= 0) {
            if (!s->merge_any && !may_merge(c, old)) return CF_SINK_RETRY_AFTER_FLUSH;
            merge_keep(c, old);
            t->batch[e->slot] = c;
        }
        s->st.compacted++;
        return CF_OK;
    }
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

/* Debezium's PostgreSQL connector sends an unchanged TOASTed array column
 * (REPLICA IDENTITY DEFAULT) as an array placeholder
 * (UnchangedToastedPlaceholder): text[] as the one-element list
 * ["__debezium_unavailable_value"], int[] and bigint[] as the placeholder's
 * bytes, one number per byte. Such a cell keeps the stored value, like the
 * text and bytes placeholders route.c recognises. */
static bool is_array_placeholder(const cf_value *v) {
    static const char ph[] = "__debezium_unavailable_value";
    const size_t n = sizeof ph - 1;
    if (!v || v->type != CF_ARRAY) return false;
    const cf_value *const *it = (const cf_value *const *)v->u.arr.items;
    if (v->u.arr.len == 1 && it[0] && it[0]->type == CF_STRING)
        return it[0]->u.s.len == n && memcmp(it[0]->u.s.ptr, ph, n) == 0;
    if (v->u.arr.len != n) return false;
    for (size_t i = 0; i < n; i++)
        if (!it[i] || it[i]->type > CF_INT64 || it[i]->u.i != (int64_t)(unsigned char)ph[i]) return false;
    return true;
}

/* A primary-key change under REPLICA IDENTITY DEFAULT: Debezium sends a
 * delete of the old key and a create of the new key (header
 * __debezium.oldkey) in which the TOASTed columns the UPDATE left alone are
 * placeholders. Their values are in the old key's row, which the delete
 * removes; the new row would get NULL there. Silently wrong, so the record
 * is an error for errors.tolerance. */
static cf_code refuse_moved_placeholder(const sk_table *t, const cf_change *c, const cf_record *rec, cf_err *err) {
    if (c->op != CF_CHANGE_UPSERT || !c->has_keep || !cf_record_header_last(rec, "__debezium.oldkey")) return CF_OK;
    size_t i = 0;
    while (i + 1 < c->n_cells && c->cells[i].kind != CF_CELL_KEEP) i++;
    cf_err_set(err, CF_ERR_INVALID,
               "column \"%s\" holds Debezium's unavailable-value placeholder in the create of a primary-key change "
               "(header __debezium.oldkey): its value was in the old key's row, which the delete before it removed",
               t->t.cols[i].name);
    cf_err_hint(err, "set REPLICA IDENTITY FULL on the source table (ALTER TABLE ... REPLICA IDENTITY FULL) so that "
                     "Debezium sends the unchanged TOASTed values of a row whose key changes");
    cf_err_where(err, "%s", t->t.cols[i].name);
    return CF_ERR_INVALID;
}

/* A delete whose sequence field was missing or a default (REPLICA IDENTITY
 * DEFAULT, see sk_sequence) follows the key's last version in the stream: it
 * takes that version's field section, so that it sorts after it (its offset
 * section is later). The last version is the one buffered, else the one the
 * table (or its tombstone) holds. When neither exists the delete cannot be
 * ordered: an error for errors.tolerance, never a silently kept row. */
static cf_code order_unknown_delete(cf_sink *s, sk_table *t, cf_change *c, const cf_record *rec, cf_err *err) {
    const uint8_t *key;
    uint32_t len;
    uint64_t h;
    sk_entry *e = s->ht_cap ? compact_probe(s, t, c, &key, &len, &h) : NULL;
    bool found = false;
    cf_seq stored;
    if (e && e->key) {
        stored = t->batch[e->slot]->seq;
        found = true;
    } else if (s->tg->stored_seq) {
        settle(s); /* the connection is the writer's while a flight is up, and it may hold the key's version */
        cf_code rc = s->tg->stored_seq(s->ts, &t->t, c, &found, &stored, err);
        if (rc) return rc;
    }
    if (!found || stored.n != 2) {
        const cf_field *f = rec->value_schema && rec->value_schema->type == CF_STRUCT
                                ? cf_schema_field(rec->value_schema, s->o.seq_field)
                                : NULL;
        cf_err_set(err, CF_ERR_INVALID, "delete has no usable value in the sequence field \"%s\"", s->o.seq_field);
        cf_err_detail(err, "its before image holds only the key (the field is %s, as Debezium writes it for a column "
                           "outside REPLICA IDENTITY DEFAULT), and %s no version of the key to order it after",
                      f ? "null or its type's default" : "missing",
                      s->tg->stored_seq ? "neither this batch nor the table has" : "this target cannot look up");
        cf_err_hint(err, "set REPLICA IDENTITY FULL on the source table (ALTER TABLE ... REPLICA IDENTITY FULL) so "
                         "that deletes carry the row's last version, or leave cdcChangeSequenceNumberField empty to "
                         "order changes by offset");
        cf_err_where(err, "%s", s->o.seq_field);
        return CF_ERR_INVALID;
    }
    c->seq.s[0] = stored.s[0];
    cf_seq_format(&c->seq, c->seq_text);
    return CF_OK;
}

static cf_code route(cf_sink *s, const cf_record *rec, bool retry, cf_err *err) {
    if (sk_cass_is_event(rec)) { /* Cassandra's semantics; its state is read with the connection */
        settle(s);
        return sk_cass_route(s, s->cass, rec, err);
    }
    sk_class k;
    cf_code rc = sk_classify(&s->o, rec, &k, err);
    if (rc) return rc;
    if (k.op == CF_CHANGE_DELETE && s->o.skip_deletes && !k.skip) { /* delete.enabled=false */
        s->st.skipped_deletes++;
        CF_DEBUG("sink", "%s/%d@%" PRId64 ": delete skipped (delete.enabled=false)", rec->topic, rec->partition,
                 rec->offset);
        return CF_OK;
    }
    if (k.skip) {
        s->st.skipped_other++;
        CF_DEBUG("sink", "%s/%d@%" PRId64 ": skipped (%s)", rec->topic, rec->partition, rec->offset, k.why);
        return CF_OK;
    }
    cf_seq seq;
    bool skip, unknown;
    rc = sk_sequence(&s->o, rec, &k, &seq, &skip, &unknown, err);
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
    sc->c.partition = rec->partition;
    sc->c.offset = rec->offset;
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
            if (is_array_placeholder(v)) c->cells[ci].kind = CF_CELL_KEEP;
            if (c->cells[ci].kind == CF_CELL_KEEP) c->has_keep = true;
        }
    }
    if ((rc = refuse_moved_placeholder(t, c, rec, err))) return rc;
    if (unknown && (rc = order_unknown_delete(s, t, c, rec, err))) return rc;
    rc = compact_add(s, t, c);
    if (rc) return rc; /* CF_SINK_RETRY_AFTER_FLUSH */
    if (k.op == CF_CHANGE_UPSERT) s->st.upserts++;
    else s->st.deletes++;
    s->buffered++;
    return CF_OK;
}

/* ---------------- what cassandra.c uses ---------------- */

const cf_sink_target *sk_engine_target(cf_sink *s, void **target_state) {
    *target_state = s->ts;
    return s->tg;
}

cf_arena *sk_engine_arena(cf_sink *s) { return s->arena; }

cf_code sk_engine_table(cf_sink *s, const char *topic, cf_sink_table **out, cf_err *err) {
    sk_table *t;
    cf_code rc = table_for(s, topic, &t, err);
    if (!rc) *out = &t->t;
    return rc;
}

cf_code sk_engine_column(cf_sink *s, cf_sink_table *st, const char *field, cf_col_type type, bool key, size_t key_pos,
                         int *idx, cf_err *err) {
    sk_table *t = (sk_table *)st; /* t->t is the first member */
    char *n = col_name(s, field);
    int c = find_col(t, n);
    if (c < 0) settle(s); /* a new column: not while the writer reads the columns */
    if (reserved_name(n)) {
        cf_err_set(err, CF_ERR_SCHEMA, "column \"%s\" would be \"%s\", a reserved name", field, n);
        free(n);
        return CF_ERR_SCHEMA;
    }
    if (key) {
        if (c >= 0 ? (size_t)c != key_pos : (key_pos != t->t.n_key || t->t.n_cols != t->t.n_key)) {
            cf_err_set(err, CF_ERR_SCHEMA, "column \"%s\" is not the primary key's column %zu of table \"%s\"", n,
                       key_pos + 1, t->t.name);
            cf_err_hint(err, "a primary key change needs a new table: route the topic elsewhere or recreate the table");
            free(n);
            return CF_ERR_SCHEMA;
        }
        if (c < 0) {
            add_col(t, n, type, true);
            t->t.n_key = key_pos + 1;
            c = (int)key_pos;
            n = NULL;
        }
    } else if (c < 0) {
        if (t->ensured && !s->o.allow_new_fields) {
            cf_err_set(err, CF_ERR_SCHEMA, "field \"%s\" has no column in table \"%s\"", field, t->t.name);
            cf_err_hint(err, "set allowNewBigQueryFields=true to add columns");
            free(n);
            return CF_ERR_SCHEMA;
        }
        add_col(t, n, type, false);
        c = (int)t->t.n_cols - 1;
        n = NULL;
    } else if ((size_t)c < t->t.n_key) {
        cf_err_set(err, CF_ERR_SCHEMA, "field \"%s\" is a primary key column of table \"%s\"", field, t->t.name);
        free(n);
        return CF_ERR_SCHEMA;
    }
    if (n && !sk_col_compatible(t->t.cols[c].type, type)) {
        cf_err_set(err, CF_ERR_SCHEMA, "incompatible schema change: column \"%s\" of table \"%s\" is %s, now %s", n,
                   t->t.name, cf_col_type_name(t->t.cols[c].type), cf_col_type_name(type));
        free(n);
        return CF_ERR_SCHEMA;
    }
    free(n);
    *idx = c;
    return CF_OK;
}

cf_change *sk_engine_change(cf_sink *s, const cf_record *rec, cf_sink_table *t, cf_change_op op, cf_cell *cells) {
    sk_change *sc = cf_arena_alloc(s->arena, sizeof *sc);
    memset(sc, 0, sizeof *sc);
    sc->c.partition = rec->partition;
    sc->c.offset = rec->offset;
    sc->c.op = op;
    sc->c.n_cells = op == CF_CHANGE_DELETE ? t->n_key : t->n_cols;
    sc->c.cells = cells;
    return &sc->c;
}

cf_code sk_engine_buffer(cf_sink *s, cf_sink_table *t, cf_change *c) {
    cf_code rc = compact_add(s, (sk_table *)t, c);
    if (rc) return rc;
    if (c->op == CF_CHANGE_UPSERT) s->st.upserts++;
    else s->st.deletes++;
    s->buffered++;
    return CF_OK;
}

/* ---------------- flush ---------------- */

/* Key order for the writes: a batch has one change per key, so the order is
 * free, and walking a primary key index in order touches each page once
 * (SQLite: ~3x fewer database seconds than event order on random keys). */
/* One order of cells for every use in the sink (write order here, clustering
 * and element order for Cassandra events): numbers by value (an int against
 * a real too), text and bytes by unsigned bytes, which is Cassandra's order
 * for UTF8Type, AsciiType and BytesType (ISO dates and times sort as text);
 * kinds apart by kind, NULL first. Returns -1, 0 or 1. */
int cf_sink_cell_cmp(const cf_cell *a, const cf_cell *b) {
    if (a->kind != b->kind) {
        if (a->kind == CF_CELL_INT && b->kind == CF_CELL_REAL) return (double)a->u.i < b->u.f ? -1 : (double)a->u.i > b->u.f;
        if (a->kind == CF_CELL_REAL && b->kind == CF_CELL_INT) return a->u.f < (double)b->u.i ? -1 : a->u.f > (double)b->u.i;
        return a->kind < b->kind ? -1 : 1;
    }
    switch (a->kind) {
    case CF_CELL_INT: return a->u.i < b->u.i ? -1 : a->u.i > b->u.i;
    case CF_CELL_REAL: return a->u.f < b->u.f ? -1 : a->u.f > b->u.f;
    case CF_CELL_TEXT:
    case CF_CELL_BLOB: {
        uint32_t m = a->len < b->len ? a->len : b->len;
        int c = m ? memcmp(a->u.p, b->u.p, m) : 0;
        return c ? (c < 0 ? -1 : 1) : (a->len < b->len ? -1 : a->len > b->len);
    }
    default: return 0;
    }
}

static int key_cmp(const void *pa, const void *pb) {
    const cf_change *a = *(const cf_change *const *)pa, *b = *(const cf_change *const *)pb;
    size_t n = a->n_cells < b->n_cells ? a->n_cells : b->n_cells;
    for (size_t k = 0; k < n; k++) {
        int c = cf_sink_cell_cmp(&a->cells[k], &b->cells[k]);
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

/* ---------------- positions ---------------- */

static bool keeps_positions(const cf_sink *s) {
    return s->o.consumer && s->tg->save_positions && s->tg->load_positions;
}

static sk_pos *pos_add(cf_sink *s) {
    if (s->n_pos == s->cap_pos) s->pos = cf_xrealloc(s->pos, (s->cap_pos = s->cap_pos ? s->cap_pos * 2 : 8) * sizeof *s->pos);
    sk_pos *e = &s->pos[s->n_pos++];
    memset(e, 0, sizeof *e);
    return e;
}

/* Note where the input stands after one record. Cheap for a run of records
 * of one stream (the last stream's entry is tried first). */
static void pos_note(cf_sink *s, const cf_sink_position *p) {
    if (p->topic && p->next_offset >= 0) {
        sk_pos *e = NULL;
        size_t i = s->last_topic_pos;
        if (i < s->n_pos && !s->pos[i].source && s->pos[i].partition == p->partition &&
            strcmp(s->pos[i].stream, p->topic) == 0)
            e = &s->pos[i];
        for (i = 0; !e && i < s->n_pos; i++)
            if (!s->pos[i].source && s->pos[i].partition == p->partition && strcmp(s->pos[i].stream, p->topic) == 0)
                e = &s->pos[i], s->last_topic_pos = i;
        if (!e) {
            e = pos_add(s);
            e->stream = cf_xstrdup(p->topic);
            e->partition = p->partition;
            s->last_topic_pos = s->n_pos - 1;
        }
        e->next_offset = p->next_offset;
        e->dirty = s->pos_dirty = true;
    }
    if (p->source && p->source_partition && p->source_offset) {
        sk_pos *e = NULL;
        size_t i = s->last_source_pos;
        if (i < s->n_pos && s->pos[i].source && strcmp(s->pos[i].source_name, p->source) == 0 &&
            cf_value_equal(s->pos[i].source_partition, p->source_partition))
            e = &s->pos[i];
        for (i = 0; !e && i < s->n_pos; i++)
            if (s->pos[i].source && strcmp(s->pos[i].source_name, p->source) == 0 &&
                cf_value_equal(s->pos[i].source_partition, p->source_partition))
                e = &s->pos[i], s->last_source_pos = i;
        if (!e) {
            e = pos_add(s);
            e->source = true;
            e->source_name = cf_xstrdup(p->source);
            e->source_partition = cf_value_clone(p->source_partition);
            e->stream = cf_offset_key_json(p->source, p->source_partition);
            e->partition = -1;
            e->next_offset = -1;
            s->last_source_pos = s->n_pos - 1;
        }
        e->offset_borrowed = p->source_offset;
        e->dirty = s->pos_dirty = true;
    }
}

/* The records of the put end (or an apply in its middle): source offsets
 * borrowed from them become the engine's own. */
static void pos_own(cf_sink *s) {
    for (size_t i = 0; i < s->n_pos; i++) {
        sk_pos *e = &s->pos[i];
        if (!e->offset_borrowed) continue;
        free(e->offset_json);
        e->offset_json = cf_offset_value_json(e->offset_borrowed);
        e->offset_borrowed = NULL;
    }
}

/* The dirty positions as the target stores them: borrowed strings, or
 * copies (a flight's: routing goes on changing the originals). */
static cf_sink_stored_position *pos_collect(cf_sink *s, bool copy, size_t *n) {
    pos_own(s);
    cf_sink_stored_position *v = cf_xmalloc((s->n_pos ? s->n_pos : 1) * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < s->n_pos; i++) {
        const sk_pos *p = &s->pos[i];
        if (!p->dirty) continue;
        const char *off = p->source ? p->offset_json : NULL;
        v[k++] = (cf_sink_stored_position){copy ? cf_xstrdup(p->stream) : p->stream, p->partition, p->next_offset,
                                           copy && off ? cf_xstrdup(off) : (char *)off};
    }
    *n = k;
    return v;
}

static cf_code pos_save(cf_sink *s, const cf_sink_stored_position *v, size_t n, cf_err *err) {
    cf_code rc = s->tg->save_positions(s->ts, s->o.consumer, v, n, err);
    if (rc) cf_err_where(err, "positions of %s", s->o.consumer);
    return rc;
}

static void pos_saved(cf_sink *s) {
    for (size_t i = 0; i < s->n_pos; i++) s->pos[i].dirty = false;
    s->pos_dirty = false;
}

static void pos_free(cf_sink *s) {
    for (size_t i = 0; i < s->n_pos; i++) {
        free(s->pos[i].stream);
        free(s->pos[i].source_name);
        free(s->pos[i].offset_json);
        cf_value_destroy(s->pos[i].source_partition);
    }
    free(s->pos);
}

cf_code cf_sink_read_positions(cf_sink *s, cf_sink_stored_position **out, size_t *n, cf_err *err) {
    *out = NULL;
    *n = 0;
    if (!keeps_positions(s)) return CF_OK;
    settle(s); /* the connection */
    pthread_mutex_lock(&s->mu);
    cf_code rc = s->tg->load_positions(s->ts, s->o.consumer, out, n, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

cf_code cf_sink_alter_positions(cf_sink *s, bool all, const cf_sink_stored_position *drop, size_t ndrop,
                                const cf_sink_stored_position *set, size_t nset, cf_err *err) {
    if (!keeps_positions(s) || !s->tg->drop_positions)
        return cf_err_set(err, CF_ERR_UNSUPPORTED, "target %s keeps no input positions", s->tg->name);
    settle(s); /* the connection */
    pthread_mutex_lock(&s->mu);
    cf_code rc = s->tg->begin(s->ts, err);
    if (!rc && all) rc = s->tg->drop_positions(s->ts, s->o.consumer, NULL, 0, err);
    for (size_t i = 0; i < ndrop && !rc; i++)
        rc = s->tg->drop_positions(s->ts, s->o.consumer, drop[i].stream, drop[i].partition, err);
    if (!rc && nset) rc = s->tg->save_positions(s->ts, s->o.consumer, set, nset, err);
    if (!rc) rc = s->tg->commit(s->ts, err);
    else s->tg->rollback(s->ts);
    pthread_mutex_unlock(&s->mu);
    if (rc) cf_err_where(err, "positions of %s", s->o.consumer);
    return rc;
}

/* ---------------- applying a batch ---------------- */

/* One batch into the target, in one transaction: the buffer's (the
 * caller's thread) or the flight's (the writer). The positions pv[0..pn)
 * and, for the buffer, Cassandra's state commit with the rows. *written:
 * the changes applied. */
static cf_code apply_batch(cf_sink *s, bool flight, const cf_sink_stored_position *pv, size_t pn, bool cass,
                           uint64_t *written, cf_err *err) {
    cf_code rc = CF_OK;
    *written = 0;
    for (size_t i = 0; i < s->n_tables && !rc; i++) {
        sk_table *t = s->tables[i];
        if ((flight ? t->fnb : t->nb) == 0) continue;
        if (!t->ensured || t->t.n_created_cols < t->t.n_cols) {
            rc = s->tg->ensure_table(s->ts, &t->t, err);
            if (!rc) t->ensured = true, t->t.n_created_cols = t->t.n_cols;
        }
    }
    if (!rc) rc = s->tg->begin(s->ts, err);
    /* tables in name order: targets lock per table, and every task taking
     * the locks in the same order cannot deadlock */
    sk_table **order = cf_xmalloc((s->n_tables ? s->n_tables : 1) * sizeof *order);
    if (s->n_tables) memcpy(order, s->tables, s->n_tables * sizeof *order); /* none yet: positions alone */
    qsort(order, s->n_tables, sizeof *order, table_name_cmp);
    if (!rc) {
        int64_t wall = (int64_t)time(NULL);
        for (size_t i = 0; i < s->n_tables && !rc; i++) {
            sk_table *t = order[i];
            cf_change **batch = flight ? t->fbatch : t->batch;
            size_t nb = flight ? t->fnb : t->nb;
            if (nb == 0) continue;
            /* a sorted copy: the compaction map indexes t->batch until the reset */
            cf_change **sorted = cf_xmalloc(nb * sizeof *sorted);
            memcpy(sorted, batch, nb * sizeof *sorted);
            qsort(sorted, nb, sizeof *sorted, key_cmp);
            if (s->o.max_staleness_s > 0 && s->tg->stage) rc = s->tg->stage(s->ts, &t->t, sorted, nb, err);
            else rc = s->tg->apply(s->ts, &t->t, sorted, nb, err);
            free(sorted);
            if (!rc) *written += nb;
            if (!rc && s->tg->purge_tombstones && wall - t->last_purge >= 60) {
                rc = s->tg->purge_tombstones(s->ts, &t->t, wall - s->o.delete_retention_s, err);
                t->last_purge = wall;
            }
            if (rc) cf_err_where(err, "table \"%s\" (topic %s)", t->t.name, t->t.topic);
        }
        if (!rc && cass) rc = sk_cass_save(s, s->cass, err); /* the state with the rows it produced */
        if (!rc && pv) rc = pos_save(s, pv, pn, err);        /* with the rows, in their transaction */
        if (!rc) rc = s->tg->commit(s->ts, err);
        else s->tg->rollback(s->ts);
    }
    free(order);
    return rc;
}

/* Apply the buffer in the caller's thread (no flight up: settled). */
static cf_code do_flush(cf_sink *s, cf_err *err) {
    bool positions = s->pos_dirty && keeps_positions(s);
    bool cass = sk_cass_dirty(s->cass);
    if (s->buffered == 0 && !positions && !cass) return CF_OK;
    double t0 = now_s();
    size_t pn = 0;
    cf_sink_stored_position *pv = positions ? pos_collect(s, false, &pn) : NULL;
    uint64_t written = 0;
    pthread_mutex_lock(&s->mu);
    cf_code rc = apply_batch(s, false, pv, pn, cass, &written, err);
    s->st.written += written;
    pthread_mutex_unlock(&s->mu);
    free(pv);
    s->st.t_db_s += now_s() - t0;
    if (rc) return rc;
    if (positions) pos_saved(s);
    sk_cass_saved(s->cass);
    s->st.flushes++;
    batch_reset(s);
    return CF_OK;
}

/* ---------------- the writer thread (async_apply) ---------------- */

static void *writer_main(void *arg) {
    cf_sink *s = arg;
    pthread_mutex_lock(&s->wmu);
    for (;;) {
        while (!s->flying && !s->wr_quit) pthread_cond_wait(&s->wcv, &s->wmu);
        if (!s->flying) break; /* quit, nothing handed over */
        pthread_mutex_unlock(&s->wmu);
        /* the flight is this thread's alone until flying is false: no lock
         * while the database works (the caller reads its stats meanwhile) */
        cf_err e;
        cf_err_clear(&e);
        uint64_t written = 0;
        double t0 = now_s();
        cf_code rc = apply_batch(s, true, s->fpos, s->n_fpos, false, &written, &e);
        double dt = now_s() - t0;
        pthread_mutex_lock(&s->wmu);
        s->frc = rc;
        s->ferr = e;
        s->f_db_s = dt;
        s->f_written = written;
        s->flying = false;
        pthread_cond_broadcast(&s->wcv);
    }
    pthread_mutex_unlock(&s->wmu);
    return NULL;
}

/* The caller's side of an ended flight: its counts, its memory back, a
 * failure kept for every later call. */
static void collect(cf_sink *s) {
    s->up = false;
    pthread_mutex_lock(&s->mu);
    s->st.t_db_s += s->f_db_s;
    s->st.written += s->f_written;
    if (!s->frc) s->st.flushes++;
    pthread_mutex_unlock(&s->mu);
    if (s->frc && !s->failed) {
        s->failed = true;
        s->fail_err = s->ferr;
        if (!s->fail_err.code) s->fail_err.code = s->frc; /* every later call returns it (the task logs it) */
    }
    if (!s->frc) s->done = s->begun;
    for (size_t i = 0; i < s->n_tables; i++) s->tables[i]->fnb = 0;
    cf_arena_reset(s->farena);
    cf_sink_stored_positions_free(s->fpos, s->n_fpos);
    s->fpos = NULL, s->n_fpos = 0;
}

/* Wait for the flight to end and collect it (nothing up: returns at once). */
static void settle(cf_sink *s) {
    if (!s->up) return;
    pthread_mutex_lock(&s->wmu);
    while (s->flying) pthread_cond_wait(&s->wcv, &s->wmu);
    pthread_mutex_unlock(&s->wmu);
    collect(s);
}

/* Collect the flight if it has ended, without waiting. */
static void peek(cf_sink *s) {
    if (!s->up) return;
    pthread_mutex_lock(&s->wmu);
    bool flying = s->flying;
    pthread_mutex_unlock(&s->wmu);
    if (!flying) collect(s);
}

static cf_code failure(cf_sink *s, cf_err *err) {
    if (err) *err = s->fail_err;
    return s->fail_err.code ? s->fail_err.code : CF_ERR_TARGET;
}

/* Hand the buffer to the writer (settled, not failed, something to write). */
static cf_code take_off(cf_sink *s, cf_err *err) {
    if (!s->wr_running) {
        if (pthread_create(&s->wr, NULL, writer_main, s) != 0)
            return cf_err_set(err, CF_ERR_INTERNAL, "cannot start the sink's writer thread");
        s->wr_running = true;
    }
    bool positions = s->pos_dirty && keeps_positions(s);
    s->fpos = positions ? pos_collect(s, true, &s->n_fpos) : NULL;
    if (positions) pos_saved(s); /* if the flight fails, everything later fails too */
    for (size_t i = 0; i < s->n_tables; i++) { /* the batch arrays trade places */
        sk_table *t = s->tables[i];
        cf_change **b = t->fbatch;
        size_t cap = t->fcapb;
        t->fbatch = t->batch, t->fnb = t->nb, t->fcapb = t->capb;
        t->batch = b, t->nb = 0, t->capb = cap;
    }
    if (s->ht) memset(s->ht, 0, s->ht_cap * sizeof *s->ht);
    s->ht_used = 0;
    s->buffered = 0;
    cf_arena *a = s->farena; /* emptied when the last flight was collected */
    s->farena = s->arena;
    s->arena = a;
    s->begun++;
    s->up = true;
    pthread_mutex_lock(&s->wmu);
    s->flying = true;
    pthread_cond_signal(&s->wcv);
    pthread_mutex_unlock(&s->wmu);
    return CF_OK;
}

/* Write the buffer: handed to the writer (async_apply, no Cassandra state
 * to save with it), else applied now; the write before it ended first. A
 * flush in put (the buffer's bounds, a compaction retry) is this. */
static cf_code begin_write(cf_sink *s, cf_err *err) {
    settle(s);
    if (s->failed) return failure(s, err);
    if (!s->async || sk_cass_dirty(s->cass)) return do_flush(s, err);
    if (s->buffered == 0 && !(s->pos_dirty && keeps_positions(s))) return CF_OK;
    return take_off(s, err);
}

cf_code cf_sink_put(cf_sink *s, cf_record *const *records, size_t n, cf_err *err) {
    return cf_sink_put_at(s, records, NULL, n, err);
}

cf_code cf_sink_put_at(cf_sink *s, cf_record *const *records, const cf_sink_position *pos, size_t n, cf_err *err) {
    if (!keeps_positions(s)) pos = NULL;
    peek(s);
    if (s->failed) return failure(s, err);
    cf_code rc = CF_OK;
    double t0 = now_s();
    for (size_t i = 0; i < n && !rc; i++) {
        const cf_record *r = records[i];
        if (!r) { /* dropped before the engine (reported): only the position moves */
            if (pos) pos_note(s, &pos[i]);
            continue;
        }
        s->st.records++;
        cf_err problem;
        cf_err_clear(&problem);
        rc = route(s, r, false, &problem);
        if (s->failed) { /* a flight failed while routing waited for it: not this record's fault */
            rc = failure(s, err);
            break;
        }
        if (rc == CF_SINK_RETRY_AFTER_FLUSH) {
            /* applied first: what came before this record, with its positions */
            s->st.t_route_s += now_s() - t0;
            pos_own(s);
            rc = begin_write(s, err);
            if (rc) break;
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
                break;
            }
            rc = s->rep(s->rep_ud, r, &problem, err);
            if (rc) break;
            s->st.bad_records++; /* reported and dropped: the position moves past it */
        }
        if (pos) pos_note(s, &pos[i]);
        if (s->buffered >= s->o.batch_max_records ||
            (s->o.batch_max_bytes && cf_arena_used(s->arena) >= s->o.batch_max_bytes)) {
            s->st.t_route_s += now_s() - t0;
            pos_own(s);
            rc = begin_write(s, err);
            t0 = now_s();
        }
    }
    /* the records (and the source offsets borrowed from them) are the caller's again */
    pos_own(s);
    s->st.t_route_s += now_s() - t0;
    return rc;
}

cf_code cf_sink_flush(cf_sink *s, cf_err *err) {
    if (s->bg_failed) {
        if (err) *err = s->bg_err;
        return s->bg_err.code ? s->bg_err.code : CF_ERR_TARGET;
    }
    settle(s);
    if (s->failed) return failure(s, err);
    cf_code rc = do_flush(s, err);
    if (!rc) s->done = s->begun;
    return rc;
}

cf_code cf_sink_flush_begin(cf_sink *s, uint64_t *ticket, cf_err *err) {
    *ticket = s->begun;
    if (s->bg_failed) {
        if (err) *err = s->bg_err;
        return s->bg_err.code ? s->bg_err.code : CF_ERR_TARGET;
    }
    /* A write is still running: one the buffer's bounds began in put (the
     * caller's own it knows of). Waiting for it here stopped the caller's
     * reading for as long as that write had left (issue 18: a third of the
     * run behind Kafka, the writer then idle while the caller caught up).
     * Nothing is begun: the caller reads on and asks again. */
    peek(s);
    if (s->failed) return failure(s, err);
    if (s->up) return cf_err_set(err, CF_ERR_AGAIN, "a write is still running");
    bool now = !s->async || sk_cass_dirty(s->cass); /* written when begin_write returns */
    cf_code rc = begin_write(s, err);
    if (rc) return rc;
    if (now) s->done = ++s->begun;
    *ticket = s->begun; /* nothing new to write: the last one's */
    return CF_OK;
}

cf_code cf_sink_flush_wait(cf_sink *s, uint64_t ticket, bool wait, bool *done, cf_err *err) {
    if (wait) settle(s);
    else peek(s);
    *done = ticket <= s->done;
    if (s->failed) {
        *done = false;
        return failure(s, err);
    }
    return CF_OK;
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
    if (s->o.max_staleness_s <= 0 || !s->tg->apply_staged) return CF_OK;
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
    bq_options_copy(&s->o.bq, &opts->bq);
    s->o.table_name_format = dup_or_null(opts->table_name_format);
    s->o.consumer = dup_or_null(opts->consumer);
    s->o.cassandra_schema = dup_or_null(opts->cassandra_schema);
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
    pthread_mutex_init(&s->wmu, NULL);
    pthread_cond_init(&s->wcv, NULL);
    s->async = opts->async_apply && target->writer_thread && opts->max_staleness_s <= 0;
    if (s->async) s->farena = cf_arena_new(1 << 20);
    s->cass = sk_cass_new(&s->o, err);
    cf_code rc = s->cass ? target->open(&s->o, &s->ts, err) : CF_ERR_CONFIG;
    if (!rc && s->o.max_staleness_s > 0 && target->stage && target->apply_staged) {
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
    settle(s); /* what was handed over is written (or failed): it is not lost half-way */
    if (s->wr_running) {
        pthread_mutex_lock(&s->wmu);
        s->wr_quit = true;
        pthread_cond_signal(&s->wcv);
        pthread_mutex_unlock(&s->wmu);
        pthread_join(s->wr, NULL);
    }
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
    pos_free(s);
    if (s->ts) s->tg->close(s->ts);
    if (s->bg_ts) s->tg->close(s->bg_ts);
    cf_arena_destroy(s->arena);
    if (s->farena) cf_arena_destroy(s->farena);
    free(s->ht);
    free((char *)s->o.sqlite_path);
    free((char *)s->o.pg_conninfo);
    free((char *)s->o.pg_user);
    free((char *)s->o.pg_password);
    free((char *)s->o.pg_schema);
    free((char *)s->o.seq_field);
    bq_options_free(&s->o.bq);
    free((char *)s->o.table_name_format);
    free((char *)s->o.consumer);
    free((char *)s->o.cassandra_schema);
    sk_cass_destroy(s->cass);
    for (size_t i = 0; i < s->n_keep; i++) free(s->keep[i]);
    free(s->keep);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->wmu);
    pthread_cond_destroy(&s->wcv);
    free(s);
}

/* ---------------- changes a target refused ---------------- */

/* A struct of columns [from, to) of t holding the change's cells (text
 * forms as strings), for the reporter and the dead letter queue. */
static cf_value *cells_struct(const cf_sink_table *t, const cf_change *c, size_t from, size_t to, const char *name,
                              cf_schema **schema) {
    cf_schema *st = cf_schema_new_struct();
    cf_schema_set_name(st, name);
    for (size_t i = from; i < to; i++) {
        cf_type ty = CF_STRING;
        switch (t->cols[i].type) {
        case CF_COL_BOOL: ty = CF_BOOLEAN; break;
        case CF_COL_INT16:
        case CF_COL_INT32:
        case CF_COL_INT64: ty = CF_INT64; break;
        case CF_COL_FLOAT32:
        case CF_COL_FLOAT64: ty = CF_FLOAT64; break;
        case CF_COL_BYTES: ty = CF_BYTES; break;
        default: break;
        }
        cf_schema_add_field(st, t->cols[i].name, cf_schema_primitive(ty, !t->cols[i].key), NULL);
    }
    cf_value *v = cf_value_struct(cf_schema_ref(st));
    for (size_t i = from; i < to; i++) {
        const cf_cell *x = i < c->n_cells ? &c->cells[i] : NULL;
        cf_value *cv = NULL;
        if (x) switch (x->kind) {
            case CF_CELL_INT:
                cv = t->cols[i].type == CF_COL_BOOL ? cf_value_bool(x->u.i != 0) : cf_value_int64(x->u.i);
                break;
            case CF_CELL_REAL: cv = cf_value_float64(x->u.f); break;
            case CF_CELL_TEXT: cv = cf_value_string_n(x->u.p, x->len); break;
            case CF_CELL_BLOB: cv = cf_value_bytes(x->u.p, x->len); break;
            case CF_CELL_KEEP: cv = cf_value_string("__debezium_unavailable_value"); break;
            default: break;
            }
        cf_value_struct_set_index(v, i - from, cv);
    }
    *schema = st;
    return v;
}

cf_code cf_sink_table_reject(cf_sink_table *t, const cf_change *c, const cf_err *problem, cf_err *err) {
    cf_sink *s = t->sink;
    cf_err p = *problem;
    char where[256];
    snprintf(where, sizeof where, "%s/%d@%" PRId64 "%s%s", t->topic, c->partition, c->offset,
             p.where[0] ? ": " : "", p.where);
    snprintf(p.where, sizeof p.where, "%s", where);
    if (!s || !s->rep) {
        if (err) *err = p;
        return p.code ? p.code : CF_ERR_TARGET;
    }
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, t->topic);
    r->partition = c->partition;
    r->offset = c->offset;
    cf_schema *ks, *vs;
    cf_value *k = cells_struct(t, c, 0, t->n_key, "key", &ks);
    cf_record_set_key(r, ks, k);
    if (c->op == CF_CHANGE_UPSERT) {
        cf_value *v = cells_struct(t, c, 0, t->n_cols, "value", &vs);
        cf_record_set_value(r, vs, v);
    }
    cf_code rc = s->rep(s->rep_ud, r, &p, err);
    cf_record_destroy(r);
    if (!rc) s->st.bad_records++;
    return rc;
}

void cf_sink_set_reporter(cf_sink *s, cf_sink_report_fn fn, void *ud) {
    s->rep = fn;
    s->rep_ud = ud;
}

void cf_sink_get_stats(const cf_sink *s, cf_sink_stats *out) {
    /* the staleness thread counts its applies under mu */
    cf_sink *m = (cf_sink *)s;
    pthread_mutex_lock(&m->mu);
    *out = s->st;
    pthread_mutex_unlock(&m->mu);
}

const cf_sink_table *cf_sink_table_for_topic(const cf_sink *s, const char *topic) {
    for (size_t i = 0; i < s->n_tables; i++)
        if (strcmp(s->tables[i]->t.topic, topic) == 0) return &s->tables[i]->t;
    return NULL;
}
