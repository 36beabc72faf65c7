/*
 * cdcflow/cassandra_schema.h - Cassandra's schema as the commit log reader
 * needs it: CQL types, tables, keyspaces, user types, the schema set with
 * per-table-id history, the DDL file parser and Murmur3 tokens.
 *
 * The cassandra module owns this model. The commit log decoder
 * (cassandra_log.h, cassandra_mutation.h) only reads it; the DDL parser
 * (cf_cass_ddl_*) and the CQL client (cassandra_cql.h) fill it.
 *
 * CQL TYPES
 *   A cf_cql_type is an immutable tree. Type strings are parsed exactly as
 *   Cassandra prints them in DESCRIBE and in system_schema.columns.type:
 *   "int", "frozen<map<text, int>>", "list<frozen<tuple<int, text>>>",
 *   "vector<float, 3>", UDT names (bare, "Quoted" or ks.name), and custom
 *   types as a quoted class name ('org.apache.cassandra.db.marshal.X').
 *   "varchar" is an alias of "text" (both are UTF8Type) and parses to
 *   CF_CQL_TEXT. A UDT is resolved against the known CREATE TYPE
 *   definitions at parse time: the type tree carries the field names and
 *   field types, so the decoder needs nothing else.
 *   Nested types are frozen as Cassandra freezes them: anything inside a
 *   collection, tuple, UDT field or vector is frozen; tuples and vectors are
 *   never multi-cell.
 *
 * OWNERSHIP
 *   cf_cql_type: one owner; cf_cql_type_destroy frees the tree;
 *   cf_cql_type_clone deep-copies.
 *   cf_cass_table: reference counted (atomic), immutable once added to a
 *   cf_cass_schema. A decoder may keep a reference (cf_cass_table_ref) to the
 *   definition it decodes with while the schema set is replaced or refreshed.
 *   cf_cass_schema owns its keyspaces, types and one reference to each table
 *   version it holds.
 *
 * THREADS: a cf_cass_schema is not synchronised; build it on one thread, then
 *   read it from many, or swap whole sets. Tables may be shared once added.
 */
#ifndef CDCFLOW_CASSANDRA_SCHEMA_H
#define CDCFLOW_CASSANDRA_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* CQL types                                                           */
/* ------------------------------------------------------------------ */

typedef enum cf_cql_kind {
    CF_CQL_ASCII = 0, /* AsciiType */
    CF_CQL_BIGINT,    /* LongType */
    CF_CQL_BLOB,      /* BytesType */
    CF_CQL_BOOLEAN,   /* BooleanType */
    CF_CQL_COUNTER,   /* CounterColumnType */
    CF_CQL_DATE,      /* SimpleDateType */
    CF_CQL_DECIMAL,   /* DecimalType */
    CF_CQL_DOUBLE,    /* DoubleType */
    CF_CQL_DURATION,  /* DurationType */
    CF_CQL_FLOAT,     /* FloatType */
    CF_CQL_INET,      /* InetAddressType */
    CF_CQL_INT,       /* Int32Type */
    CF_CQL_SMALLINT,  /* ShortType */
    CF_CQL_TEXT,      /* UTF8Type ("text" and "varchar") */
    CF_CQL_TIME,      /* TimeType */
    CF_CQL_TIMESTAMP, /* TimestampType */
    CF_CQL_TIMEUUID,  /* TimeUUIDType */
    CF_CQL_TINYINT,   /* ByteType */
    CF_CQL_UUID,      /* UUIDType */
    CF_CQL_VARINT,    /* IntegerType */
    CF_CQL_EMPTY,     /* EmptyType: the hidden value column of compact tables */
    CF_CQL_LIST,      /* params[0] = element */
    CF_CQL_SET,       /* params[0] = element */
    CF_CQL_MAP,       /* params[0] = key, params[1] = value */
    CF_CQL_TUPLE,     /* params[i] = component i */
    CF_CQL_UDT,       /* params[i] = field i, field_names[i] */
    CF_CQL_VECTOR,    /* params[0] = element, dimension */
    CF_CQL_CUSTOM     /* 'class.Name(...)' kept as text in `name` */
} cf_cql_kind;
#define CF_CQL_KIND_COUNT 28

typedef struct cf_cql_type cf_cql_type;
struct cf_cql_type {
    cf_cql_kind kind;
    bool frozen;           /* collections and UDTs; tuples/vectors are always frozen */
    cf_cql_type **params;  /* child types, see cf_cql_kind; owned */
    size_t n_params;
    char **field_names;    /* UDT: n_params names (unquoted, exact case); owned */
    char *keyspace;        /* UDT: keyspace of the type; NULL otherwise */
    char *name;            /* UDT: type name (unquoted); CUSTOM: class text */
    int32_t dimension;     /* VECTOR */
};

/* The CQL name of a kind ("int", "list", "frozen" is not a kind). Static. */
const char *cf_cql_kind_name(cf_cql_kind kind);

/* A type for a native kind (ASCII .. EMPTY). Caller owns. */
cf_cql_type *cf_cql_type_new(cf_cql_kind kind);
void cf_cql_type_destroy(cf_cql_type *t); /* NULL-safe, recursive */
cf_cql_type *cf_cql_type_clone(const cf_cql_type *t);
bool cf_cql_type_equal(const cf_cql_type *a, const cf_cql_type *b);

typedef struct cf_cass_schema cf_cass_schema;

/* Parse a CQL type string. `keyspace` is the keyspace unqualified UDT names
 * belong to; UDTs are looked up in `types` (may be NULL: then any UDT name is
 * an error). On success *out is a new tree the caller owns.
 * Errors: CF_ERR_INVALID (syntax, with the column in `where`),
 * CF_ERR_NOT_FOUND (unknown UDT). */
cf_code cf_cql_type_parse(const char *text, const char *keyspace, const cf_cass_schema *types,
                          cf_cql_type **out, cf_err *err);

/* Render the type as Cassandra 5.0 prints it in DESCRIBE, e.g.
 * "frozen<map<text, int>>", "frozen<tuple<int, text>>", "vector<float, 3>",
 * a UDT by its (quoted if needed) name. Appends to b. */
void cf_cql_type_append(const cf_cql_type *t, cf_buf *b);
char *cf_cql_type_to_string(const cf_cql_type *t); /* malloc'd */

/* Cassandra's AbstractType.valueLengthIfFixed(): the serialized length of
 * every value of the type, or -1 if values carry a length. Checked against
 * cassandra-all 5.0.5: boolean 1, int 4, float 4, bigint 8, double 8,
 * timestamp 8, uuid 16, timeuuid 16, empty 0, vector<fixed T, n> n*len(T);
 * everything else -1 (including date, time, smallint, tinyint, counter). */
int32_t cf_cql_type_fixed_length(const cf_cql_type *t);

/* Multi-cell (complex) column: a non-frozen list, set, map or UDT. Its cells
 * carry a CellPath: list -> a timeuuid, set -> the element, map -> the key,
 * UDT -> the field index as a 2-byte big-endian short. */
bool cf_cql_type_is_multicell(const cf_cql_type *t);
bool cf_cql_type_is_collection(const cf_cql_type *t); /* list, set, map */
bool cf_cql_type_is_counter(const cf_cql_type *t);

/* Element accessors; NULL when the type has no such part. */
const cf_cql_type *cf_cql_type_element(const cf_cql_type *t); /* list, set, vector */
const cf_cql_type *cf_cql_type_key(const cf_cql_type *t);     /* map */
const cf_cql_type *cf_cql_type_value(const cf_cql_type *t);   /* map */
size_t cf_cql_type_field_count(const cf_cql_type *t);         /* tuple, UDT */
const cf_cql_type *cf_cql_type_field(const cf_cql_type *t, size_t i);
const char *cf_cql_type_field_name(const cf_cql_type *t, size_t i); /* UDT only */

/* ------------------------------------------------------------------ */
/* Tables                                                              */
/* ------------------------------------------------------------------ */

typedef enum cf_cass_column_kind {
    CF_CASS_PARTITION_KEY = 0,
    CF_CASS_CLUSTERING = 1,
    CF_CASS_REGULAR = 2,
    CF_CASS_STATIC = 3
} cf_cass_column_kind;
const char *cf_cass_column_kind_name(cf_cass_column_kind k); /* "partition_key", ... as system_schema */

typedef struct cf_cass_column {
    char *name;            /* unquoted, exact case */
    cf_cql_type *type;     /* owned; for DESC clustering the base type (not reversed) */
    cf_cass_column_kind kind;
    int32_t position;      /* index within the partition key / clustering; -1 otherwise */
    bool reversed;         /* clustering column with ORDER BY ... DESC */
} cf_cass_column;

typedef struct cf_cass_dropped_column {
    char *name;
    cf_cql_type *type;      /* owned; the type it had when dropped */
    cf_cass_column_kind kind; /* CF_CASS_REGULAR or CF_CASS_STATIC */
    int64_t dropped_time;   /* microseconds since epoch (USING TIMESTAMP / dropped_time) */
} cf_cass_dropped_column;

typedef struct cf_cass_table {
    char *keyspace;
    char *name;
    uint8_t id[16];         /* table id (UUID bytes, big-endian msb then lsb) */
    bool has_id;            /* false when the DDL had no WITH ID and nothing set it */
    /* Columns by kind, each array ordered: partition key and clustering by
     * position; regular and static as declared. */
    cf_cass_column *partition_key;
    size_t n_partition_key;
    cf_cass_column *clustering;
    size_t n_clustering;
    cf_cass_column *regular;
    size_t n_regular;
    cf_cass_column *statics;
    size_t n_static;
    cf_cass_dropped_column *dropped;
    size_t n_dropped;
    bool compact_storage;   /* WITH COMPACT STORAGE (flags dense / not compound) */
    bool dense;             /* system_schema flag "dense" */
    bool compound;          /* system_schema flag "compound" */
    bool super;             /* system_schema flag "super" */
    bool counter;           /* has counter columns (flag "counter") */
    bool cdc;               /* WITH cdc = true */
    bool is_view;           /* a materialized view */
    int refcount;           /* atomic */
} cf_cass_table;

/* An empty table (refcount 1) the builders below fill. Caller owns. */
cf_cass_table *cf_cass_table_new(const char *keyspace, const char *name);
cf_cass_table *cf_cass_table_ref(cf_cass_table *t); /* NULL-safe; returns t */
void cf_cass_table_unref(cf_cass_table *t);         /* NULL-safe */
/* Deep copy with refcount 1 (to derive an altered version). */
cf_cass_table *cf_cass_table_clone(const cf_cass_table *t);

/* Add a column (takes `type`). position is used for partition key and
 * clustering columns (-1 = next). Fails on duplicate names (CF_ERR_SCHEMA). */
cf_code cf_cass_table_add_column(cf_cass_table *t, const char *name, cf_cql_type *type,
                                 cf_cass_column_kind kind, int32_t position, bool reversed,
                                 cf_err *err);
/* Remove a regular/static column and record it as dropped at `time_us`. */
cf_code cf_cass_table_drop_column(cf_cass_table *t, const char *name, int64_t time_us, cf_err *err);
/* Record a dropped column (takes `type`), as system_schema.dropped_columns. */
void cf_cass_table_add_dropped(cf_cass_table *t, const char *name, cf_cql_type *type,
                               cf_cass_column_kind kind, int64_t dropped_time_us);
void cf_cass_table_set_id(cf_cass_table *t, const uint8_t id[16]);

/* Look a column up by name (exact case), any kind. NULL if absent. */
const cf_cass_column *cf_cass_table_column(const cf_cass_table *t, const char *name);
/* The same for a name given as bytes (the commit log's column names). */
const cf_cass_column *cf_cass_table_column_n(const cf_cass_table *t, const char *name, size_t len);
/* The newest dropped-column record of that name, or NULL. */
const cf_cass_dropped_column *cf_cass_table_dropped_n(const cf_cass_table *t, const char *name,
                                                      size_t len);
size_t cf_cass_table_column_count(const cf_cass_table *t);

/* Split a serialized partition key into its components. With one partition
 * key column the key is the value itself; with several it is a
 * CompositeType: per component u16 length, bytes, u8 end-of-component.
 * comp/len must hold n_partition_key entries; comp[i] points into `key`.
 * CF_ERR_CORRUPT if the bytes do not fit the table. */
cf_code cf_cass_table_split_partition_key(const cf_cass_table *t, const uint8_t *key, size_t key_len,
                                          const uint8_t **comp, size_t *comp_len, cf_err *err);

/* "CREATE TABLE ks.t (...) WITH ID = ... AND CLUSTERING ORDER BY (...)" in
 * DESCRIBE's style (for logs, debugging, schema fingerprints). Appends. */
void cf_cass_table_append_cql(const cf_cass_table *t, cf_buf *b);

/* ------------------------------------------------------------------ */
/* Keyspaces, user types, the schema set                               */
/* ------------------------------------------------------------------ */

typedef struct cf_cass_keyspace {
    char *name;
    char *replication; /* the replication map as CQL text, e.g. {'class': 'SimpleStrategy', ...} */
    bool durable_writes;
} cf_cass_keyspace;

typedef struct cf_cass_udt {
    char *keyspace;
    char *name;
    char **field_names;
    cf_cql_type **field_types; /* owned */
    size_t n_fields;
} cf_cass_udt;

cf_cass_schema *cf_cass_schema_new(void);
void cf_cass_schema_destroy(cf_cass_schema *s); /* NULL-safe */

/* Add or replace a keyspace (strings copied). */
void cf_cass_schema_put_keyspace(cf_cass_schema *s, const char *name, const char *replication,
                                 bool durable_writes);
const cf_cass_keyspace *cf_cass_schema_keyspace(const cf_cass_schema *s, const char *name);
size_t cf_cass_schema_keyspace_count(const cf_cass_schema *s);
const cf_cass_keyspace *cf_cass_schema_keyspace_at(const cf_cass_schema *s, size_t i);

/* Add or replace a user type; takes the field types. Fails on duplicate
 * field names. Tables parsed later resolve the type by name. */
cf_code cf_cass_schema_put_udt(cf_cass_schema *s, const char *keyspace, const char *name,
                               const char *const *field_names, cf_cql_type **field_types,
                               size_t n_fields, cf_err *err);
const cf_cass_udt *cf_cass_schema_udt(const cf_cass_schema *s, const char *keyspace, const char *name);

/* Add a table definition; takes the caller's reference to t.
 * - A table with an id: if the newest definition for that id is equal, t is
 *   dropped (no new version); otherwise t becomes the newest version of that
 *   id and the older ones are kept (segments written before an ALTER still
 *   decode with cf_cass_schema_table_versions).
 * - Name lookup always finds the newest definition added under that name.
 * - A table without an id is only found by name.
 * Fails (CF_ERR_SCHEMA) if the id is already used by another keyspace/name. */
cf_code cf_cass_schema_add_table(cf_cass_schema *s, cf_cass_table *t, cf_err *err);

/* Newest definition for an id / a name; NULL if unknown. Borrowed: valid
 * while the schema lives (take a ref to keep it longer). */
const cf_cass_table *cf_cass_schema_table_by_id(const cf_cass_schema *s, const uint8_t id[16]);
const cf_cass_table *cf_cass_schema_table_by_name(const cf_cass_schema *s, const char *keyspace,
                                                  const char *name);
/* All versions for an id, oldest first; returns the count, *out borrowed. */
size_t cf_cass_schema_table_versions(const cf_cass_schema *s, const uint8_t id[16],
                                     cf_cass_table *const **out);
/* Every newest table definition (one per id or name), in insertion order. */
size_t cf_cass_schema_table_count(const cf_cass_schema *s);
const cf_cass_table *cf_cass_schema_table_at(const cf_cass_schema *s, size_t i);
/* Forget a table by name (DROP TABLE); its history by id stays for decoding. */
void cf_cass_schema_remove_table(cf_cass_schema *s, const char *keyspace, const char *name);

/* ------------------------------------------------------------------ */
/* The DDL file parser                                                 */
/* ------------------------------------------------------------------ */

/* Parse CQL DDL as DESCRIBE KEYSPACE / DESCRIBE SCHEMA [WITH INTERNALS]
 * prints it (Cassandra 3.x, 4.x, 5.0) into s:
 *   CREATE KEYSPACE, CREATE TYPE, CREATE TABLE (quoted identifiers, composite
 *   partition keys, static columns, WITH ID = <uuid>, CLUSTERING ORDER BY,
 *   COMPACT STORAGE, cdc = true, 5.0 column masks MASKED WITH ...; all other
 *   WITH options are accepted and ignored), ALTER TABLE ... ADD / DROP [USING
 *   TIMESTAMP t] (how DESCRIBE WITH INTERNALS reports dropped columns) / ALTER
 *   col [DROP] MASKED / WITH, DROP TABLE, USE, and comments (--, //, block).
 *   CREATE MATERIALIZED VIEW (columns typed from the base table, is_view set;
 *   its id is the view's table id). CREATE INDEX / CUSTOM INDEX / FUNCTION /
 *   AGGREGATE / TRIGGER / ROLE, GRANT/REVOKE and ALTER KEYSPACE are skipped
 *   whole: they do not change how rows are written.
 * `name` is used in error locations ("schema.cql:12:5"). Statements before
 * an error stay in s. Errors: CF_ERR_INVALID with line:column in `where`,
 * CF_ERR_NOT_FOUND for an unknown UDT, CF_ERR_SCHEMA for contradictions. */
cf_code cf_cass_ddl_parse(cf_cass_schema *s, const char *text, size_t len, const char *name,
                          cf_err *err);
cf_code cf_cass_ddl_parse_file(cf_cass_schema *s, const char *path, cf_err *err);

/* Load the rows of system_schema.{keyspaces,tables,views,columns,
 * dropped_columns,types} given as one JSON object
 *   {"keyspaces": [...], "tables": [...], "columns": [...],
 *    "dropped_columns": [...], "types": [...], "views": [...]}
 * where each array holds the rows exactly as `SELECT JSON *` returns them
 * (Cassandra 3.0+). User types are resolved in dependency order; table ids,
 * flags (compound/dense/super/counter), cdc, column kinds, positions and
 * clustering order are taken from the rows. "tables" and "columns" are
 * required. The CQL client (cassandra_cql.h) feeds this; the fixtures record
 * the same rows in tests/data/cassandra/<case>/system_schema.json. */
cf_code cf_cass_schema_load_system_json(cf_cass_schema *s, const char *json, size_t len, cf_err *err);

/* ------------------------------------------------------------------ */
/* Tokens and UUIDs                                                    */
/* ------------------------------------------------------------------ */

/* The Murmur3Partitioner token of a serialized partition key: Cassandra's
 * MurmurHash3 x64 128 variant (tail bytes are sign-extended), seed 0, first
 * 64-bit half; Long.MIN_VALUE is mapped to Long.MAX_VALUE; the empty key has
 * the minimum token Long.MIN_VALUE. */
int64_t cf_cass_murmur3_token(const uint8_t *key, size_t len);

/* "123e4567-e89b-12d3-a456-426614174000" <-> 16 bytes. parse accepts
 * upper/lower case; returns false on bad text. format writes 37 bytes. */
bool cf_cass_uuid_parse(const char *text, size_t len, uint8_t out[16]);
void cf_cass_uuid_format(const uint8_t id[16], char out[37]);

/* Quote a CQL identifier only if needed (not lower-case [a-z][a-z0-9_]* or
 * a reserved word), doubling inner quotes, as Cassandra's
 * ColumnIdentifier.maybeQuote. Appends. */
void cf_cql_append_identifier(const char *name, cf_buf *b);

#ifdef __cplusplus
}
#endif
#endif
