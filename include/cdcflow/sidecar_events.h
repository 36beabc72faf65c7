/*
 * cdcflow/sidecar_events.h - Cassandra changes as Kafka Connect records: the
 * envelope of Sidecar CDC (CEP-44's org.apache.cassandra.CassandraCDC) in
 * Connect's data model, so that the worker's converters write it as Avro
 * (Confluent wire format, Schema Registry) or JSON (JsonConverter).
 *
 * ONE PARTITION UPDATE, SEVERAL EVENTS
 *   DELETE_PARTITION        the partition deletion
 *   DELETE_RANGE            each range tombstone (a start and an end bound,
 *                           boundaries both end one and start the next), its
 *                           bounds as range predicates on clustering columns
 *   DELETE                  a row deletion (updateFields: the primary key
 *                           only), or cells deleted (set to null) and nothing
 *                           written
 *   INSERT                  a row with primary key liveness (CQL INSERT)
 *   UPDATE                  cells written without it (CQL UPDATE), and the
 *                           static row
 *   COMPLEX_ELEMENT_DELETE  elements removed from a non-frozen set or map
 *                           (the value holds the removed elements: a set's
 *                           as an array, a map's keys with null values), or
 *                           from a list (its elements are keyed by timeuuids
 *                           Cassandra makes; the value is null), or fields
 *                           of a non-frozen UDT set to null (named in
 *                           elementFields as "<column>.<field>", the value
 *                           is null)
 *   in this order, as Cassandra applies them (deletions first).
 *
 * THE VALUE (a STRUCT named <ns>.<keyspace>.<table>.Envelope)
 *   operationType     STRING, one of the six above
 *   timestampMicros   INT64, the largest write timestamp in the event
 *   sourceKeyspace, sourceTable  STRING
 *   schemaUuid        STRING: the deterministic id of the table version
 *                     (cf_sc_table_schemas.uuid)
 *   isPartial         BOOLEAN: not every column of the row is in the event
 *   updateFields      ARRAY<STRING>: the primary key columns and every
 *                     column the write set, to a value or to null; a column
 *                     not listed is absent (not written), a listed one whose
 *                     payload field is null was set to null / deleted
 *   elementFields     ARRAY<STRING> (optional): non-frozen collection and
 *                     UDT columns whose payload value holds only the elements
 *                     or fields the write added (or removed), not the whole
 *                     stored value
 *   range             ARRAY<RangePredicate> (optional): DELETE_RANGE only,
 *                     {field, rangePredicateType: LT LTE EQ GTE GT,
 *                     value: Clustering struct with that field set}, ANDed
 *   ttl               STRUCT {ttl INT32 seconds, deletedAt INT64 epoch
 *                     seconds} (optional): the row's or first cell's TTL
 *   payload           STRUCT <table>.Row: every column, each optional, in
 *                     the order partition key, clustering, static, regular
 * Field names are the column names made valid Avro names (other characters
 * become '_', a leading digit gets a '_' in front, a clash gets "_2"); the
 * field schema's parameter "cassandra.column" keeps the real name.
 *
 * THE KEY: a STRUCT <ns>.<keyspace>.<table>.Key of the partition key columns
 * (required), so every change of a partition goes to one Kafka partition in
 * order. The payload carries the clustering columns too, so partition key +
 * clustering (the row's primary key) can be taken from it.
 *
 * TYPES (the table of the Sidecar CDC design)
 *   ascii, text, varchar STRING; tinyint INT8, smallint INT16, int INT32,
 *   bigint INT64, counter INT64; float FLOAT32, double FLOAT64; boolean;
 *   blob BYTES; uuid, timeuuid, inet STRING; date Connect Date (days since
 *   epoch); time INT64 (nanoseconds of the day); timestamp Connect Timestamp
 *   (ms); varint Connect Decimal with scale 0 (Avro bytes, logicalType
 *   decimal); decimal Connect Decimal at decimal.scale (Cassandra's value is
 *   rescaled exactly; a value that would need rounding is an error) or, with
 *   decimal.handling.mode=string, its text; duration BYTES (Cassandra's
 *   form: vint months, vint days, vint nanoseconds); list, set, vector ARRAY;
 *   map MAP (Avro: a map for text keys, else an array of key/value
 *   records); tuple STRUCT (fields f0, f1, ...); UDT STRUCT named
 *   <ns>.<keyspace>.<type> (frozen or not); custom types BYTES.
 *
 * SCHEMA IDS: schemaUuid is an MD5 (name-based, version 3) UUID of the
 * keyspace, table and column definitions (kind, position, name, CQL type,
 * clustering order), and `id` its first 31 bits: the same table version
 * gives the same ids on every start and every sidecar, without a registry.
 *
 * OWNERSHIP: cf_sc_events owns the schemas it built (one set per table
 * version, by cf_cass_table identity; the table must outlive it). Records
 * are handed to the caller's emit function, which takes them.
 * THREADS: one thread at a time.
 */
#ifndef CDCFLOW_SIDECAR_EVENTS_H
#define CDCFLOW_SIDECAR_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/error.h"
#include "cdcflow/record.h"
#include "cdcflow/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_sc_op {
    CF_SC_OP_INSERT = 0,
    CF_SC_OP_UPDATE,
    CF_SC_OP_DELETE,
    CF_SC_OP_DELETE_PARTITION,
    CF_SC_OP_DELETE_RANGE,
    CF_SC_OP_COMPLEX_ELEMENT_DELETE
} cf_sc_op;
const char *cf_sc_op_name(cf_sc_op op); /* "INSERT", ... */

typedef struct cf_sc_events_opts {
    /* Topic of a table's events: {keyspace} and {table} are replaced;
     * default "{keyspace}.{table}". */
    const char *topic_format;
    /* Namespace of the schema names; default "cassandra". */
    const char *ns;
    int32_t decimal_scale;   /* used when decimal_scale_set, else 18 */
    bool decimal_scale_set;
    bool decimal_as_string;  /* decimal.handling.mode=string */
} cf_sc_events_opts;

typedef struct cf_sc_events cf_sc_events;

cf_sc_events *cf_sc_events_new(const cf_sc_events_opts *opts); /* opts may be NULL */
void cf_sc_events_destroy(cf_sc_events *ev);                   /* NULL-safe */

/* The schemas of one table version. Borrowed from ev. */
typedef struct cf_sc_table_schemas {
    const cf_cass_table *table;
    cf_schema *key;        /* <ns>.<ks>.<table>.Key */
    cf_schema *value;      /* the envelope */
    cf_schema *payload;    /* <ns>.<ks>.<table>.Row */
    cf_schema *clustering; /* <ns>.<ks>.<table>.Clustering (range predicate values); NULL without clustering */
    char uuid[37];
    int32_t id;            /* the first 31 bits of the uuid */
    char *topic;
    /* What the events of this table cannot carry (counter columns, list
     * element deletions, custom types...), one sentence per line; "" if
     * nothing. Reported per table at start, not per event. */
    char *notes;
    bool supported;        /* false: counter tables (their changes are not published) */
} cf_sc_table_schemas;

/* The schemas for a table version (built on first use). CF_ERR_SCHEMA if a
 * column type cannot be mapped (it is not: unknown types map to BYTES). */
cf_code cf_sc_events_table(cf_sc_events *ev, const cf_cass_table *t, const cf_sc_table_schemas **out, cf_err *err);

/* Where the events of an update go. new_record gives an empty record (the
 * caller's pool); emit takes it. */
typedef struct cf_sc_emitter {
    cf_record *(*new_record)(void *arg);
    void (*emit)(void *arg, cf_record *rec, cf_sc_op op);
    void *arg;
} cf_sc_emitter;

/* Build the events of one partition update (see the top of this file) and
 * hand them to em, in order. *n (may be NULL) gets their number. A value
 * that does not decode for its type (the entry CRC was right, so the schema
 * does not fit) gives CF_ERR_SCHEMA naming the column; events already
 * emitted stay emitted. */
cf_code cf_sc_events_build(cf_sc_events *ev, const cf_cass_update *u, const cf_sc_emitter *em, size_t *n,
                           cf_err *err);

/* The Connect schema of a CQL type (optional = nullable). Caller unrefs. */
cf_schema *cf_sc_cql_schema(cf_sc_events *ev, const cf_cql_type *t, bool optional);
/* One serialized CQL value (as in a cell or inside a frozen collection) as a
 * Connect value of schema s (cf_sc_cql_schema of t: struct values take its
 * pointers). Exposed for tests. *out may be NULL (null value, or an empty
 * value of a non-text type, which Cassandra reads as null). */
cf_code cf_sc_cql_to_value(cf_sc_events *ev, const cf_cql_type *t, const cf_schema *s, const uint8_t *p, size_t len,
                           cf_value **out, cf_err *err);

#ifdef __cplusplus
}
#endif
#endif
