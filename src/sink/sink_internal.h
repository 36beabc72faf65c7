/*
 * sink_internal.h - shared by the sink engine's files (not a public API).
 */
#ifndef CF_SINK_INTERNAL_H
#define CF_SINK_INTERNAL_H

#include "cdcflow/buf.h"
#include "cdcflow/sink.h"

typedef struct sk_ctx {
    cf_arena *arena;
    bool copy; /* copy strings into the arena (the record dies before the flush) */
} sk_ctx;

/* What a record is, before its table is known. */
typedef struct sk_class {
    cf_change_op op;
    bool skip;            /* raw envelope op t / m */
    bool tombstone;       /* Kafka tombstone: null value and null schema */
    const cf_value *image; /* the row image (flattened value, before or after); NULL = key only */
    const char *why;
} sk_class;

cf_code sk_classify(const cf_sink_options *o, const cf_record *rec, sk_class *out, cf_err *err);
/* *unknown (may be NULL): a delete whose sequence field is missing, null or
 * a default (0, "": what Debezium writes for a column outside REPLICA
 * IDENTITY DEFAULT); its field section (0 in *seq) must come from the
 * key's last version (the engine). */
cf_code sk_sequence(const cf_sink_options *o, const cf_record *rec, const sk_class *k, cf_seq *seq, bool *skip,
                    bool *unknown, cf_err *err);
cf_col_type sk_col_type_of(const cf_schema *s);
bool sk_col_compatible(cf_col_type col, cf_col_type field);
cf_code sk_cell_from_value(sk_ctx *c, const cf_schema *fs, const cf_value *v, cf_col_type ct, cf_cell *cell,
                           cf_err *err);

/* ---------------- Cassandra change events (cassandra.c) ---------------- */

typedef struct sk_cass sk_cass;
/* The record's value is a Cassandra change event (the sidecar's envelope:
 * a struct named "*.Envelope" with operationType, timestampMicros,
 * updateFields, sourceTable and payload). Debezium envelopes have op/before/
 * after and never match. */
bool sk_cass_is_event(const cf_record *rec);
sk_cass *sk_cass_new(const cf_sink_options *o, cf_err *err); /* NULL: err (cassandra.schema.files) */
void sk_cass_destroy(sk_cass *c);
/* Merge one event into its partition's state and buffer the rows it changes. */
cf_code sk_cass_route(cf_sink *s, sk_cass *c, const cf_record *rec, cf_err *err);
bool sk_cass_dirty(const sk_cass *c);
/* In the flush's transaction: store the changed partitions' state. */
cf_code sk_cass_save(cf_sink *s, sk_cass *c, cf_err *err);
/* After the commit: forget the partitions (read again when touched). */
void sk_cass_saved(sk_cass *c);
uint64_t sk_cass_list_removals(const sk_cass *c);

/* What the engine offers cassandra.c (engine.c). */
const cf_sink_target *sk_engine_target(cf_sink *s, void **target_state);
cf_arena *sk_engine_arena(cf_sink *s);
cf_code sk_engine_table(cf_sink *s, const char *topic, cf_sink_table **out, cf_err *err);
/* The column `name` of t (added if new): a key column must be the key's
 * key_pos-th; *idx receives its index. */
cf_code sk_engine_column(cf_sink *s, cf_sink_table *t, const char *name, cf_col_type type, bool key, size_t key_pos,
                         int *idx, cf_err *err);
/* A change of t from rec (cells: t's n_cols cells in the batch arena; a
 * DELETE uses the key's); the caller sets its sequence number. */
cf_change *sk_engine_change(cf_sink *s, const cf_record *rec, cf_sink_table *t, cf_change_op op, cf_cell *cells);
cf_code sk_engine_buffer(cf_sink *s, cf_sink_table *t, cf_change *c);
/* The sink's one order of cells (engine.c): numbers by value, text and bytes
 * by unsigned bytes (Cassandra's order for its text and blob types), kinds
 * apart by kind; -1, 0 or 1. */
int cf_sink_cell_cmp(const cf_cell *a, const cf_cell *b);

#endif
