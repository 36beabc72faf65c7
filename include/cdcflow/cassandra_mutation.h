/*
 * cdcflow/cassandra_mutation.h - decoded Cassandra mutations and the
 * rendering of their values as Cassandra's `SELECT JSON` renders them.
 *
 * A commit log entry (cassandra_log.h) holds one Mutation: one or more
 * PartitionUpdates, each for one table and one partition key. Decoding needs
 * the table schema (cassandra_schema.h): clustering types decide value
 * lengths, column types decide simple vs complex cells. The wire format is
 * the one of Cassandra's MessagingService versions 10 (3.x), 12 (4.x, 5.0)
 * and 13 (5.0 without storage compatibility): Mutation.MutationSerializer,
 * PartitionUpdate.PartitionUpdateSerializer, UnfilteredRowIteratorSerializer,
 * SerializationHeader, UnfilteredSerializer, Cell.Serializer,
 * ClusteringPrefix.Serializer, Columns.Serializer.
 *
 * Unknown tables. A PartitionUpdate carries no length, so the bytes after an
 * update of a table without schema cannot be decoded:
 *   - first update unknown: the whole mutation is skipped
 *     (CF_ERR_NOT_FOUND, err names the table id) - Cassandra does the same;
 *   - a later update unknown: the updates before it are returned and the
 *     call reports CF_ERR_SCHEMA naming the table id and how many updates
 *     were lost, so nothing is dropped silently.
 * Dropped columns decode with their dropped type; their cells written before
 * the drop are left out, as Cassandra's read path does.
 *
 * OWNERSHIP: a decoded cf_cass_mutation lives in the decoder's arena and
 * points into the entry bytes; both stay valid until the next decode call on
 * the same decoder. The decoder keeps references to the schema's tables only
 * for the duration of a call; the schema must outlive the decoder.
 *
 * THREADS: one decoder per thread; the schema may be shared (read-only).
 */
#ifndef CDCFLOW_CASSANDRA_MUTATION_H
#define CDCFLOW_CASSANDRA_MUTATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DeletionTime.LIVE: markedForDeleteAt Long.MIN_VALUE, localDeletionTime Integer.MAX_VALUE */
#define CF_CASS_LIVE_TS INT64_MIN
#define CF_CASS_NO_TTL 0
#define CF_CASS_NO_DELETION_TIME INT32_MAX

typedef struct cf_cass_deletion {
    int64_t marked_at;           /* micros; CF_CASS_LIVE_TS = not deleted */
    int64_t local_deletion_time; /* seconds since epoch */
} cf_cass_deletion;

static inline bool cf_cass_deletion_is_live(const cf_cass_deletion *d) { return d->marked_at == CF_CASS_LIVE_TS; }

/* ClusteringPrefix.Kind, by ordinal (what the wire carries). */
typedef enum cf_cass_bound_kind {
    CF_CASS_BK_EXCL_END_BOUND = 0,
    CF_CASS_BK_INCL_START_BOUND = 1,
    CF_CASS_BK_EXCL_END_INCL_START_BOUNDARY = 2,
    CF_CASS_BK_STATIC_CLUSTERING = 3,
    CF_CASS_BK_CLUSTERING = 4,
    CF_CASS_BK_INCL_END_EXCL_START_BOUNDARY = 5,
    CF_CASS_BK_INCL_END_BOUND = 6,
    CF_CASS_BK_EXCL_START_BOUND = 7
} cf_cass_bound_kind;
const char *cf_cass_bound_kind_name(cf_cass_bound_kind k); /* "INCL_START_BOUND", ... */

typedef struct cf_cass_bytes {
    const uint8_t *p; /* NULL for a null value */
    size_t len;
} cf_cass_bytes;

typedef struct cf_cass_cell {
    cf_cass_bytes path;  /* complex columns: the CellPath (list timeuuid, set element, map key, UDT field index) */
    cf_cass_bytes value; /* len 0 for empty values and tombstones */
    int64_t ts;
    int32_t ttl;                 /* CF_CASS_NO_TTL unless expiring */
    int64_t local_deletion_time; /* tombstone: deletion time; expiring: expiry; else CF_CASS_NO_DELETION_TIME */
    bool deleted;
    bool expiring;
} cf_cass_cell;

typedef struct cf_cass_column_data {
    const char *name;         /* borrowed from the table (or its dropped columns) */
    const cf_cql_type *type;  /* the column's type (the collection type for complex columns) */
    bool complex;
    bool dropped;             /* a dropped column (only cells newer than the drop are kept) */
    bool has_complex_deletion;
    cf_cass_deletion complex_deletion;
    cf_cass_cell *cells;
    size_t n_cells;
} cf_cass_column_data;

typedef enum cf_cass_row_kind {
    CF_CASS_ROW = 0,
    CF_CASS_STATIC_ROW,
    CF_CASS_RT_BOUND,
    CF_CASS_RT_BOUNDARY
} cf_cass_row_kind;
const char *cf_cass_row_kind_name(cf_cass_row_kind k); /* "row", "static", "range_tombstone_bound", ... */

typedef struct cf_cass_row {
    cf_cass_row_kind kind;
    cf_cass_bound_kind bound;   /* CLUSTERING for rows, STATIC_CLUSTERING for the static row */
    cf_cass_bytes *clustering;  /* n_clustering values (a prefix for bounds); p NULL = null */
    size_t n_clustering;
    /* rows: primary key liveness */
    bool has_liveness;
    int64_t ts;
    int32_t ttl;
    int64_t local_expiration_time;
    /* rows: row deletion; bounds: the deletion; boundaries: the end deletion */
    cf_cass_deletion deletion;
    bool shadowable;
    cf_cass_deletion start_deletion; /* boundaries only */
    cf_cass_column_data *columns;    /* rows: the columns present, header order */
    size_t n_columns;
} cf_cass_row;

typedef struct cf_cass_update {
    const cf_cass_table *table; /* borrowed from the schema */
    uint8_t table_id[16];
    cf_cass_bytes key;          /* serialized partition key */
    int64_t token;              /* Murmur3 token of key */
    cf_cass_deletion partition_deletion;
    cf_cass_row *static_row;    /* NULL if none */
    cf_cass_row *rows;          /* rows and range tombstone markers, in order */
    size_t n_rows;
    int64_t min_timestamp;      /* EncodingStats of the update */
    size_t byte_offset;         /* offset of the update in the mutation bytes */
} cf_cass_update;

typedef struct cf_cass_mutation {
    cf_cass_update *updates;
    size_t n_updates;
    size_t n_declared;          /* updates the mutation says it has */
} cf_cass_mutation;

typedef struct cf_cass_decoder cf_cass_decoder;

/* The schema is borrowed and must outlive the decoder. */
cf_cass_decoder *cf_cass_decoder_new(const cf_cass_schema *schema);
void cf_cass_decoder_destroy(cf_cass_decoder *d); /* NULL-safe */
/* quiet: a mutation whose (first and only recoverable) table is unknown
 * returns CF_ERR_NOT_FOUND and unknown_id without filling err (no message
 * formatted: for callers that count them, as the sidecar does; the system
 * tables' writes share the commit log). Default false. */
void cf_cass_decoder_set_quiet_unknown(cf_cass_decoder *d, bool quiet);
/* Replace the schema (e.g. after a refresh); same lifetime rule. */
void cf_cass_decoder_set_schema(cf_cass_decoder *d, const cf_cass_schema *schema);

/* Decode one mutation serialized with `messaging_version` (10, 12 or 13).
 *   CF_OK            *out filled
 *   CF_ERR_NOT_FOUND the first update's table is unknown: mutation skipped;
 *                    *unknown_id (if not NULL) gets the table id
 *   CF_ERR_SCHEMA    a later update's table is unknown, or a column is
 *                    unknown to every version of the table: *out holds the
 *                    updates decoded before it (may be 0), err says what was lost
 *   CF_ERR_CORRUPT   the bytes do not decode (where = "mutation byte N");
 *                    *out holds the updates decoded before the damage
 * *out is never NULL after a call (it may have 0 updates). */
cf_code cf_cass_decode_mutation(cf_cass_decoder *d, const uint8_t *p, size_t len, int messaging_version,
                                cf_cass_mutation **out, uint8_t unknown_id[16], cf_err *err);

/* One unsigned vint (Cassandra's VIntCoding, as inside serialized values:
 * durations, vector element lengths) at *p, not past end; *p moves past it.
 * False if it does not fit. */
bool cf_cass_read_uvint(const uint8_t **p, const uint8_t *end, uint64_t *out);

/* One element of a frozen collection, tuple or UDT value: int32 length
 * (negative: null, *ep NULL) and its bytes; *q moves past it. False if it
 * does not fit before end. */
bool cf_cass_read_element(const uint8_t **q, const uint8_t *end, const uint8_t **ep, size_t *en);

/* Read only the table id of the first update (no schema needed). */
cf_code cf_cass_mutation_first_table_id(const uint8_t *p, size_t len, uint8_t id[16], cf_err *err);

/* ---------------- rendering ---------------- */

/* Append the JSON text Cassandra's toJSONString gives for a value of type t
 * (e.g. blob "0x0a0b", timestamp "2024-01-02 03:04:05.678Z", map
 * {"k": 1, "l": 2}, UDT {"f": 1}), with Cassandra's spacing. Values that do
 * not fit their type are rendered as a blob and the call returns
 * CF_ERR_SCHEMA (the output stays valid JSON). */
cf_code cf_cass_value_to_json(const cf_cql_type *t, const uint8_t *p, size_t len, cf_buf *out);

/* Append one partition update as a single-line JSON object:
 * {"segment": S, "position": N, "keyspace": K, "table": T, "table_id": U,
 *  "token": N, "key": {...}, "partition_deletion": D|null, "rows": [...]}
 * (the row and cell layout is documented in `cdcflow cassandra dump --help`). */
void cf_cass_update_to_json(const cf_cass_update *u, const char *segment, int64_t position, cf_buf *out);

#ifdef __cplusplus
}
#endif
#endif
