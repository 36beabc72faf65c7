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
cf_code sk_sequence(const cf_sink_options *o, const cf_record *rec, const sk_class *k, cf_seq *seq, bool *skip,
                    cf_err *err);
cf_col_type sk_col_type_of(const cf_schema *s);
bool sk_col_compatible(cf_col_type col, cf_col_type field);
cf_code sk_cell_from_value(sk_ctx *c, const cf_schema *fs, const cf_value *v, cf_col_type ct, cf_cell *cell,
                           cf_err *err);

#endif
