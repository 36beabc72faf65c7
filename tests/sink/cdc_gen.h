/*
 * cdc_gen.h - a generator of random operation histories on a source table,
 * rendered as the records Debezium's PostgreSQL connector produces, plus the
 * source table's own state as the oracle.
 *
 * The oracle is the model of the SOURCE table (what PostgreSQL holds after
 * the history), never the sink's output. The history has inserts, updates,
 * deletes, re-inserts, updates that keep the version, deletes that repeat
 * it, primary key changes (Debezium: delete of the old key + tombstone +
 * create of the new key) and updates that leave a TOASTed column unchanged
 * (sent as __debezium_unavailable_value).
 *
 * Source table (10 columns, REPLICA IDENTITY FULL):
 *   id int4 PK, email text NOT NULL, name text NULL, version int8 NOT NULL,
 *   score float8 NULL, active bool NOT NULL, note text NULL (TOASTed),
 *   qty int4 NULL, created int8 NOT NULL, tag text NULL
 * The version never decreases for a key over its life, re-inserts included
 * (an updated_at-like field): the rule cdcChangeSequenceNumberField needs.
 *
 * Shapes (gen_shape):
 *   GEN_REWRITE    ExtractNewRecordState delete.handling.mode=rewrite,
 *                  drop.tombstones=false: flat rows + __deleted, then a
 *                  tombstone after each delete
 *   GEN_TOMBSTONE  ExtractNewRecordState (Debezium >= 3.2 default): deletes
 *                  as a null value with the value schema, tombstone kept
 *   GEN_ENVELOPE   raw Debezium envelopes (before/after/op), tombstones
 * Records are spread over partitions by key hash, offsets per partition.
 */
#ifndef CDC_GEN_H
#define CDC_GEN_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/record.h"
#include "cdcflow/schema.h"

typedef enum gen_shape { GEN_REWRITE = 0, GEN_TOMBSTONE = 1, GEN_ENVELOPE = 2 } gen_shape;

#define GEN_NCOLS 10

typedef struct gen_row {
    int present;
    int32_t id;
    char email[32];
    int has_name;
    char name[24];
    int64_t version;
    int has_score;
    double score;
    int active;
    int has_note;
    char note[48];
    int has_qty;
    int32_t qty;
    int64_t created;
    int has_tag;
    char tag[16];
} gen_row;

typedef struct gen {
    uint64_t rng;
    gen_shape shape;
    int n_part;
    int32_t n_keys;
    gen_row *rows;     /* model: index = id */
    int64_t *last_ver; /* per id, kept across deletes */
    int64_t clock;
    const char *topic;
    cf_schema *key_s, *val_s, *env_s, *row_opt_s;
    cf_record ***recs; /* per partition, in offset order */
    size_t *n_recs, *cap_recs;
    size_t total;
    uint64_t ops[8]; /* counts per kind */
    int no_toast;    /* no unchanged-TOAST updates (a target that replaces whole rows: BigQuery) */
} gen;

enum { OP_INSERT, OP_UPDATE, OP_UPDATE_SAMEVER, OP_DELETE, OP_REINSERT, OP_KEYCHANGE, OP_TOAST, OP_NOOP };

static inline uint64_t gen_rand(gen *g) { /* splitmix64 */
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline cf_schema *gen_row_schema(const char *name, int with_deleted, int optional) {
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, name);
    cf_schema_add_field(s, "id", cf_schema_primitive(CF_INT32, false), NULL);
    cf_schema_add_field(s, "email", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(s, "name", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema_add_field(s, "version", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(s, "score", cf_schema_primitive(CF_FLOAT64, true), NULL);
    cf_schema_add_field(s, "active", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema_add_field(s, "note", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema_add_field(s, "qty", cf_schema_primitive(CF_INT32, true), NULL);
    cf_schema_add_field(s, "created", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(s, "tag", cf_schema_primitive(CF_STRING, true), NULL);
    if (with_deleted) cf_schema_add_field(s, "__deleted", cf_schema_primitive(CF_STRING, true), NULL);
    if (optional) cf_schema_set_optional(s, true);
    return s;
}

static inline void gen_init(gen *g, uint64_t seed, gen_shape shape, int32_t n_keys, int n_part, const char *topic) {
    memset(g, 0, sizeof *g);
    g->rng = seed;
    g->shape = shape;
    g->n_keys = n_keys;
    g->n_part = n_part;
    g->topic = topic;
    g->rows = calloc((size_t)n_keys, sizeof *g->rows);
    g->last_ver = calloc((size_t)n_keys, sizeof *g->last_ver);
    g->clock = 1000;
    g->key_s = cf_schema_new_struct();
    cf_schema_set_name(g->key_s, "dbserver1.public.customers.Key");
    cf_schema_add_field(g->key_s, "id", cf_schema_primitive(CF_INT32, false), NULL);
    g->val_s = gen_row_schema("dbserver1.public.customers.Value", shape == GEN_REWRITE, 0);
    if (shape == GEN_ENVELOPE) {
        g->row_opt_s = gen_row_schema("dbserver1.public.customers.Value", 0, 1);
        g->env_s = cf_schema_new_struct();
        cf_schema_set_name(g->env_s, "dbserver1.public.customers.Envelope");
        cf_schema_add_field(g->env_s, "before", cf_schema_ref(g->row_opt_s), NULL);
        cf_schema_add_field(g->env_s, "after", cf_schema_ref(g->row_opt_s), NULL);
        cf_schema *src = cf_schema_new_struct();
        cf_schema_add_field(src, "lsn", cf_schema_primitive(CF_INT64, true), NULL);
        cf_schema_add_field(g->env_s, "source", src, NULL);
        cf_schema_add_field(g->env_s, "op", cf_schema_primitive(CF_STRING, false), NULL);
        cf_schema_add_field(g->env_s, "ts_ms", cf_schema_primitive(CF_INT64, true), NULL);
    }
    g->recs = calloc((size_t)n_part, sizeof *g->recs);
    g->n_recs = calloc((size_t)n_part, sizeof *g->n_recs);
    g->cap_recs = calloc((size_t)n_part, sizeof *g->cap_recs);
}

static inline int gen_part(const gen *g, int32_t id) { return (int)(((uint32_t)id * 2654435761u) % (uint32_t)g->n_part); }

static inline void gen_push(gen *g, int32_t id, cf_record *r) {
    int p = gen_part(g, id);
    if (g->n_recs[p] == g->cap_recs[p]) {
        g->cap_recs[p] = g->cap_recs[p] ? g->cap_recs[p] * 2 : 1024;
        g->recs[p] = realloc(g->recs[p], g->cap_recs[p] * sizeof *g->recs[p]);
    }
    r->partition = p;
    r->offset = (int64_t)g->n_recs[p];
    g->recs[p][g->n_recs[p]++] = r;
    g->total++;
}

/* The row as a struct value of schema s; toast_note: note = placeholder. */
static inline cf_value *gen_row_value(const gen_row *w, cf_schema *s, const char *deleted, int toast_note) {
    cf_value *v = cf_value_struct(cf_schema_ref(s));
    cf_value_struct_set(v, "id", cf_value_int32(w->id), NULL);
    cf_value_struct_set(v, "email", cf_value_string(w->email), NULL);
    cf_value_struct_set(v, "name", w->has_name ? cf_value_string(w->name) : NULL, NULL);
    cf_value_struct_set(v, "version", cf_value_int64(w->version), NULL);
    cf_value_struct_set(v, "score", w->has_score ? cf_value_float64(w->score) : NULL, NULL);
    cf_value_struct_set(v, "active", cf_value_bool(w->active != 0), NULL);
    cf_value_struct_set(v, "note",
                        toast_note ? cf_value_string("__debezium_unavailable_value")
                                   : w->has_note ? cf_value_string(w->note) : NULL,
                        NULL);
    cf_value_struct_set(v, "qty", w->has_qty ? cf_value_int32(w->qty) : NULL, NULL);
    cf_value_struct_set(v, "created", cf_value_int64(w->created), NULL);
    cf_value_struct_set(v, "tag", w->has_tag ? cf_value_string(w->tag) : NULL, NULL);
    if (deleted) cf_value_struct_set(v, "__deleted", cf_value_string(deleted), NULL);
    return v;
}

static inline cf_record *gen_base(gen *g, int32_t id) {
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, g->topic);
    cf_value *k = cf_value_struct(cf_schema_ref(g->key_s));
    cf_value_struct_set(k, "id", cf_value_int32(id), NULL);
    cf_record_set_key(r, cf_schema_ref(g->key_s), k);
    return r;
}

/* Emit the change event(s) of one source change. before NULL = insert;
 * after NULL = delete. */
static inline void gen_emit(gen *g, const gen_row *before, const gen_row *after, int toast_note) {
    int32_t id = after ? after->id : before->id;
    cf_record *r = gen_base(g, id);
    const char *op = !before ? "c" : !after ? "d" : "u";
    switch (g->shape) {
    case GEN_REWRITE:
        if (after) cf_record_set_value(r, cf_schema_ref(g->val_s), gen_row_value(after, g->val_s, "false", toast_note));
        else cf_record_set_value(r, cf_schema_ref(g->val_s), gen_row_value(before, g->val_s, "true", 0));
        break;
    case GEN_TOMBSTONE:
        if (after) cf_record_set_value(r, cf_schema_ref(g->val_s), gen_row_value(after, g->val_s, NULL, toast_note));
        else cf_record_set_value(r, cf_schema_ref(g->val_s), NULL);
        break;
    case GEN_ENVELOPE: {
        cf_value *e = cf_value_struct(cf_schema_ref(g->env_s));
        if (before) cf_value_struct_set(e, "before", gen_row_value(before, g->row_opt_s, NULL, 0), NULL);
        if (after) cf_value_struct_set(e, "after", gen_row_value(after, g->row_opt_s, NULL, toast_note), NULL);
        cf_schema *src_s = cf_schema_field(g->env_s, "source")->schema;
        cf_value *src = cf_value_struct(cf_schema_ref(src_s));
        cf_value_struct_set(src, "lsn", cf_value_int64(g->clock), NULL);
        cf_value_struct_set(e, "source", src, NULL);
        cf_value_struct_set(e, "op", cf_value_string(op), NULL);
        cf_value_struct_set(e, "ts_ms", cf_value_int64(g->clock), NULL);
        cf_record_set_value(r, cf_schema_ref(g->env_s), e);
        break;
    }
    }
    gen_push(g, id, r);
    if (!after) gen_push(g, id, gen_base(g, id)); /* the tombstone that follows a delete */
}

static inline void gen_fill(gen *g, gen_row *w, int32_t id, int64_t version) {
    w->present = 1;
    w->id = id;
    snprintf(w->email, sizeof w->email, "u%d.%u@x.org", id, (unsigned)(gen_rand(g) % 1000));
    w->has_name = gen_rand(g) % 4 != 0;
    snprintf(w->name, sizeof w->name, "N%u", (unsigned)(gen_rand(g) % 100000));
    w->version = version;
    w->has_score = gen_rand(g) % 3 != 0;
    w->score = (double)(int64_t)(gen_rand(g) % 100000 - 50000) / 8.0; /* exact in binary */
    w->active = (int)(gen_rand(g) & 1);
    w->has_note = gen_rand(g) % 5 != 0;
    snprintf(w->note, sizeof w->note, "long note %016" PRIx64, gen_rand(g));
    w->has_qty = gen_rand(g) % 2;
    w->qty = (int32_t)(gen_rand(g) % 2000) - 1000;
    w->created = g->clock;
    w->has_tag = gen_rand(g) % 2;
    snprintf(w->tag, sizeof w->tag, "t\"'%u", (unsigned)(gen_rand(g) % 50));
}

/* Bump the version: mostly up, sometimes kept (same version). */
static inline int64_t gen_next_ver(gen *g, int32_t id, int keep) {
    int64_t v = g->last_ver[id];
    if (!keep) v += 1 + (int64_t)(gen_rand(g) % 3);
    g->last_ver[id] = v;
    return v;
}

static inline void gen_insert(gen *g, int32_t id, int keep_ver) {
    gen_row *w = &g->rows[id];
    gen_fill(g, w, id, gen_next_ver(g, id, keep_ver));
    gen_emit(g, NULL, w, 0);
}

static inline void gen_delete(gen *g, int32_t id) {
    gen_row old = g->rows[id];
    g->rows[id].present = 0;
    gen_emit(g, &old, NULL, 0); /* the delete repeats the row's version */
}

static inline void gen_update(gen *g, int32_t id, int keep_ver, int keep_note) {
    gen_row *w = &g->rows[id];
    gen_row old = *w;
    int64_t created = w->created;
    char note[48];
    int has_note = w->has_note;
    memcpy(note, w->note, sizeof note);
    gen_fill(g, w, id, gen_next_ver(g, id, keep_ver));
    w->created = created;
    if (keep_note) w->has_note = has_note, memcpy(w->note, note, sizeof note);
    gen_emit(g, &old, w, 0);
}

/* An update that leaves the TOASTed note alone: sent as the placeholder. */
static inline void gen_toast(gen *g, int32_t id) {
    gen_row *w = &g->rows[id];
    gen_row old = *w;
    w->version = gen_next_ver(g, id, 0);
    w->qty = (int32_t)(gen_rand(g) % 2000) - 1000, w->has_qty = 1;
    gen_emit(g, &old, w, 1);
}

/* Primary key change id -> nid (nid free): Debezium sends a delete of the
 * old key, its tombstone, and a create of the new key. */
static inline void gen_keychange(gen *g, int32_t id, int32_t nid) {
    gen_row *w = &g->rows[id];
    gen_row old = *w;
    w->present = 0;
    gen_emit(g, &old, NULL, 0);
    gen_row *n = &g->rows[nid];
    *n = old;
    n->id = nid;
    n->version = gen_next_ver(g, nid, 0);
    if (n->version < old.version) n->version = g->last_ver[nid] = old.version;
    gen_emit(g, NULL, n, 0);
}

/* One random operation. */
static inline void gen_step(gen *g) {
    g->clock += (int64_t)(gen_rand(g) % 3);
    int32_t id = (int32_t)(gen_rand(g) % (uint64_t)g->n_keys);
    gen_row *w = &g->rows[id];
    unsigned dice = (unsigned)(gen_rand(g) % 100);
    if (!w->present) {
        g->ops[g->last_ver[id] ? OP_REINSERT : OP_INSERT]++;
        gen_insert(g, id, g->last_ver[id] && dice < 20); /* a re-insert may repeat the version */
        return;
    }
    if (dice < 18) {
        g->ops[OP_DELETE]++;
        gen_delete(g, id);
    } else if (dice < 23) {
        int32_t nid = (int32_t)(gen_rand(g) % (uint64_t)g->n_keys);
        if (g->rows[nid].present) {
            g->ops[OP_NOOP]++;
            return;
        }
        g->ops[OP_KEYCHANGE]++;
        gen_keychange(g, id, nid);
    } else if (dice < 33 && w->has_note && !g->no_toast) {
        g->ops[OP_TOAST]++;
        gen_toast(g, id);
    } else {
        int keep = dice < 50;
        g->ops[keep ? OP_UPDATE_SAMEVER : OP_UPDATE]++;
        gen_update(g, id, keep, dice % 2);
    }
}

/* The model row as text, one cell per column joined by '|', NULL as \N;
 * floats %.17g, booleans 0/1. Targets render their rows the same way. */
static inline void gen_row_text(const gen_row *w, cf_buf *b) {
    cf_buf_reset(b);
    cf_buf_printf(b, "%d|%s|", w->id, w->email);
    if (w->has_name) cf_buf_append_str(b, w->name); else cf_buf_append_str(b, "\\N");
    cf_buf_printf(b, "|%" PRId64 "|", w->version);
    if (w->has_score) cf_buf_printf(b, "%.17g", w->score); else cf_buf_append_str(b, "\\N");
    cf_buf_printf(b, "|%d|", w->active);
    if (w->has_note) cf_buf_append_str(b, w->note); else cf_buf_append_str(b, "\\N");
    cf_buf_append_str(b, "|");
    if (w->has_qty) cf_buf_printf(b, "%d", w->qty); else cf_buf_append_str(b, "\\N");
    cf_buf_printf(b, "|%" PRId64 "|", w->created);
    if (w->has_tag) cf_buf_append_str(b, w->tag); else cf_buf_append_str(b, "\\N");
}

static inline void gen_free(gen *g) {
    for (int p = 0; p < g->n_part; p++) {
        for (size_t i = 0; i < g->n_recs[p]; i++) cf_record_destroy(g->recs[p][i]);
        free(g->recs[p]);
    }
    free(g->recs);
    free(g->n_recs);
    free(g->cap_recs);
    free(g->rows);
    free(g->last_ver);
    cf_schema_unref(g->key_s);
    cf_schema_unref(g->val_s);
    cf_schema_unref(g->env_s);
    cf_schema_unref(g->row_opt_s);
}

#endif
