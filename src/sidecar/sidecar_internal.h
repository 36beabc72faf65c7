/*
 * sidecar_internal.h - what the sidecar's source files share (not public).
 */
#ifndef CDCFLOW_SIDECAR_INTERNAL_H
#define CDCFLOW_SIDECAR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/schema.h"
#include "cdcflow/sidecar_events.h"

/* A CQL identifier as a valid Avro name (appended): characters outside
 * [A-Za-z0-9_] become '_', a leading digit (or nothing) gets a '_' before. */
void cf_sc_avro_name(const char *in, cf_buf *out);
/* Add a field named after a CQL identifier to st (takes fs): its Avro-valid
 * name, "_2", "_3"... on a clash, the real name in fs's "cassandra.column"
 * parameter when it differs. */
void cf_sc_add_named_field(cf_schema *st, const char *cql_name, cf_schema *fs, cf_buf *scratch);

/* Settings of an events object (events.c) that cqlvalue.c reads. */
const char *cf_sc_events_ns(const cf_sc_events *ev);
bool cf_sc_events_decimal_string(const cf_sc_events *ev);
int32_t cf_sc_events_decimal_scale(const cf_sc_events *ev);

/* Wall clock in ms and monotonic clock in us. */
int64_t cf_sc_wall_ms(void);
int64_t cf_sc_mono_us(void);

#endif
