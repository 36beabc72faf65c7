/*
 * cdcflow/sink.h - the CDC sink engine: change routing, sequence numbers,
 * tables, and the target plugin interface (SQLite, PostgreSQL, BigQuery).
 *
 * WHAT IT OWNS
 *   A sink engine turns converted (and usually ExtractNewRecordState-
 *   unwrapped) Debezium records into row changes and applies them to a
 *   target database with BigQuery's CDC semantics, the same on every target
 *   (shared/specs/bigquery-cdc.md):
 *
 *   routing    DELETE for a Kafka tombstone (null value, null schema), a
 *              value that is null with a schema ({"schema":..,"payload":null}),
 *              `__deleted` = "true" (or boolean true), and a raw Debezium
 *              envelope with op "d" (its `before`); UPSERT otherwise (op c/u/r
 *              take `after`). A raw envelope with op "t" or "m" is counted as
 *              skipped. The primary key is the record key's struct fields;
 *              key and value fields with the same name give one column (the
 *              key's value); `__deleted` and every other field starting with
 *              "__" (ExtractNewRecordState's add.fields) never reach the
 *              table unless listed in keep_fields (metadata_columns keeps
 *              them all, as the Debezium JDBC sink does; `__deleted` is then
 *              a column, not a delete); the fields kept out are logged once
 *              per table. skip_deletes skips deletes. A column value equal to
 *              Debezium's `__debezium_unavailable_value` (unchanged TOAST)
 *              keeps the stored value: in a buffer, such a cell takes the
 *              value of the key's previous change when that change came from
 *              the same partition in an unbroken run of offsets (else the
 *              buffer is applied first and the target keeps its value); a
 *              row the target does not have gets NULL there.
 *   sequence   BigQuery's _CHANGE_SEQUENCE_NUMBER format: up to four
 *              '/'-separated hex sections, compared section by section as
 *              unsigned numbers. Default: one section, the Kafka offset.
 *              With seq_field: two sections, <field>/<offset>, so a delete
 *              that repeats the last version still orders after it. Every
 *              row of a table has the same number of sections (recorded per
 *              table; a change of mode is refused). In seq_field mode a
 *              Kafka tombstone (no field value) is skipped and counted: it
 *              always follows the rewritten delete Debezium sends before it,
 *              and a replayed old tombstone must never delete a re-inserted
 *              row. Any other record without a value for the field is a bad
 *              record (reported through the error callback, i.e.
 *              errors.tolerance). The field must never decrease for a key
 *              over the key's whole history, re-inserts included (updated_at
 *              timestamps, a global version): a re-insert with a smaller
 *              value than the delete before it is older by definition, as in
 *              BigQuery.
 *   batches    changes are buffered and compacted by (table, key): the last
 *              sequence wins (ties: the later one), so a flush writes each
 *              key once.
 *   apply      a row changes only if the incoming sequence number is >= the
 *              stored one (ties: later ingestion wins). A DELETE leaves a
 *              tombstone (the key and its sequence number) for
 *              delete_retention_s seconds (BigQuery: two days), so replays
 *              and reordering cannot resurrect rows.
 *   staleness  max_staleness_s = 0 applies at flush; N > 0 stages the
 *              compacted changes at flush and applies them in the background
 *              at least every N seconds; the view "<table>_fresh" merges the
 *              staged changes for fresh reads, as BigQuery's runtime merge
 *              (limitation: a staged unchanged-TOAST cell reads as NULL in
 *              the view until the apply). Destroying the engine applies what
 *              is staged; what a crash leaves staged is applied by the next
 *              engine once it writes to that table again.
 *   tables     one table per topic (kcbq's sanitizeTopics /
 *              sanitizeFieldNames rules), created with the primary key and
 *              every non-key column nullable; an existing table without a
 *              primary key (or unique index on the key) fails with the
 *              statement that fixes it; new value fields add columns;
 *              incompatible changes are refused. The stored sequence lives in
 *              the column `_change_sequence_number` (a name BigQuery
 *              reserves), tombstones in "_cdc_tombstones_<table>", staged
 *              changes in "_cdc_staged_<table>", per-table facts in
 *              "_cdc_tables", and where the input of what they hold stands
 *              in "_cdcflow_positions" (cf_sink_put_at).
 *
 * OWNERSHIP: cf_sink_new copies the options. Records passed to
 * cf_sink_put stay the caller's; what the engine keeps it copies into its
 * own batch memory. THREADS: one engine per task thread; with
 * max_staleness_s > 0 the engine runs one background thread with its own
 * target connection; with async_apply one writer thread applies a batch on
 * the engine's connection while the caller routes the next one (never two
 * threads on the connection at once). Several engines (tasks) may share one
 * database.
 */
#ifndef CDCFLOW_SINK_H
#define CDCFLOW_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/config.h"
#include "cdcflow/connector.h"
#include "cdcflow/error.h"
#include "cdcflow/record.h"
#include "cdcflow/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------- sequence numbers ---------------- */

#define CF_SEQ_MAX_SECTIONS 4
/* Longest text form: 4 sections of 16 hex digits and 3 slashes. */
#define CF_SEQ_TEXT_MAX 68

typedef struct cf_seq {
    uint64_t s[CF_SEQ_MAX_SECTIONS];
    uint8_t n; /* sections used, 1..4 */
} cf_seq;

/* BigQuery's order: sections compared as unsigned numbers, first first; if
 * one value runs out of sections first it is the smaller (never happens
 * inside one table, every row has the same count). Returns <0, 0, >0. */
int cf_seq_compare(const cf_seq *a, const cf_seq *b);
/* Text form, each section as 16 lowercase zero-padded hex digits joined by
 * '/': with a fixed section count, byte order equals BigQuery's order, so a
 * database can compare the text (COLLATE "C" / BINARY). Returns buf. */
char *cf_seq_format(const cf_seq *s, char buf[CF_SEQ_TEXT_MAX]);
/* Parse BigQuery's format: 1..4 sections of 1..16 hex digits (either case)
 * separated by '/'. Anything else is CF_ERR_INVALID naming the problem. */
cf_code cf_seq_parse(const char *text, cf_seq *out, cf_err *err);

/* ---------------- names ---------------- */

/* kcbq's FieldNameSanitizer: every character outside [A-Za-z0-9_] becomes
 * '_', and a name that does not start with a letter or '_' gets a leading
 * '_'. Returns a malloc'd string. */
char *cf_sink_sanitize_name(const char *name);

/* ---------------- options ---------------- */

/* The BigQuery target's settings (kcbq's names in the connector). */
typedef struct cf_sink_bq_options {
    const char *project;          /* NULL: the credentials' project */
    const char *default_dataset;  /* defaultDataset */
    const char *const *datasets;  /* "topic-regex=dataset" (kcbq datasets), NULL-terminated; first match wins */
    const char *keyfile;          /* a key file path or the key's JSON (key_source) */
    const char *key_source;       /* FILE (default) | JSON | APPLICATION_DEFAULT */
    const char *storage_endpoint; /* AppendRows: host:port, https://host, http://host:port (plaintext) */
    const char *api_endpoint;     /* REST API v2 base URL */
    const char *token_uri;        /* overrides the key's token_uri */
    const char *metadata_url;     /* the metadata server's base URL */
    int retries;                  /* retries of a failed request (bigQueryRetry) */
    int64_t retry_wait_ms;        /* first backoff (bigQueryRetryWait), doubled per retry up to 32x */
    size_t request_max_bytes;     /* AppendRows request size limit (0: 9 MiB; BigQuery: < 10 MB) */
    int inflight;                 /* requests sent before the first answer is awaited (0: 4) */
    int timeout_ms;               /* wait for one response / HTTP request (0: 60000) */
} cf_sink_bq_options;

typedef struct cf_sink_options {
    const char *target;            /* "sqlite" (default) | "postgres" | "bigquery" */
    const char *sqlite_path;       /* sqlite: the database file */
    const char *pg_conninfo;       /* postgres: libpq conninfo or postgresql:// URL */
    const char *pg_user;           /* postgres: overrides the conninfo's user (may be NULL) */
    const char *pg_password;       /* postgres: overrides the password (may be NULL) */
    const char *pg_schema;         /* postgres: schema of the tables (NULL: "public") */
    bool auto_create_tables;       /* create missing tables (kcbq autoCreateTables) */
    bool allow_new_fields;         /* add columns for new value fields */
    bool sanitize_topics;          /* table name = sanitized topic */
    bool sanitize_field_names;     /* column names sanitized */
    const char *seq_field;         /* cdcChangeSequenceNumberField; NULL/"" = offset */
    int64_t max_staleness_s;       /* tableMaxStaleness; 0 = apply at flush */
    int64_t delete_retention_s;    /* how long tombstones are kept (default 172800) */
    bool mediate_schema_updates;   /* serialise DDL across tasks with a lock */
    const char *const *keep_fields;/* "__" fields to keep as columns (NULL-terminated) */
    size_t batch_max_records;      /* buffered records that force an apply (0: 100000) */
    size_t batch_max_bytes;        /* buffered change bytes (cells, keys) that force an apply (0: no bound) */
    const char *consumer;          /* positions are stored under this name (the connector's); NULL: none */
    cf_sink_bq_options bq;         /* bigquery */
    /* The Debezium JDBC sink's semantics (its connector class as
     * connector.class, see src/sink/connector.c): */
    bool skip_deletes;             /* delete.enabled=false: deletes are skipped and counted */
    bool metadata_columns;         /* every "__" field is a column, `__deleted` too (then not a delete) */
    const char *table_name_format; /* table.name.format: "${topic}" is the topic with '.' -> '_'; NULL: the topic */
    /* Cassandra change events (src/sink/cassandra.c): comma-separated CQL
     * schema files (the sidecar's schema.files) that tell sets from lists
     * and static columns; NULL: from the events alone */
    const char *cassandra_schema;
    /* target=bigquery: the local SQLite file that keeps Cassandra change
     * events' partition states (BigQuery cannot hold them in a transaction
     * with the rows); NULL/"": "cdcflow-cassandra-state-<consumer>.db"
     * (characters other than [A-Za-z0-9._-] of consumer as '_'), without
     * a consumer "cdcflow-cassandra-state.db" */
    const char *cassandra_state_file;
    /* Cassandra change events: deletions (and partition states holding
     * nothing else) older than this many seconds before the newest event
     * timestamp seen are dropped from the state (Cassandra's
     * gc_grace_seconds); < 0: never */
    int64_t cassandra_gc_grace_s;
    /* Apply in a writer thread while the next batch is routed (see
     * cf_sink_flush_begin); only where the target allows it
     * (cf_sink_target.writer_thread) and without max_staleness_s. Off:
     * every apply runs in the caller's thread. */
    bool async_apply;
} cf_sink_options;

/* Fill the defaults (sqlite, auto-create on, new fields on, topics
 * sanitized, field names as they are, offset sequence, staleness 0,
 * retention two days, mediation on). */
void cf_sink_options_default(cf_sink_options *o);

/* ---------------- tables (what targets see) ---------------- */

/* SQL-facing column types. Connect logical types map as: Decimal -> NUMERIC
 * (text, exact), Date -> DATE ("YYYY-MM-DD"), Time -> TIME
 * ("HH:MM:SS.mmm"), Timestamp -> TIMESTAMP ("YYYY-MM-DD HH:MM:SS.mmm", UTC);
 * ARRAY / MAP / STRUCT -> JSON text. FLOAT32/FLOAT64 are REAL in SQLite,
 * which stores a whole-number REAL as an integer: -0.0 reads back as 0.0
 * there (PostgreSQL keeps it); the table is in docs/formats.md. */
typedef enum cf_col_type {
    CF_COL_BOOL = 0,
    CF_COL_INT16,
    CF_COL_INT32,
    CF_COL_INT64,
    CF_COL_FLOAT32,
    CF_COL_FLOAT64,
    CF_COL_TEXT,
    CF_COL_BYTES,
    CF_COL_NUMERIC,
    CF_COL_DATE,
    CF_COL_TIME,
    CF_COL_TIMESTAMP,
    CF_COL_JSON
} cf_col_type;
const char *cf_col_type_name(cf_col_type t);

typedef struct cf_sink_column {
    char *name;       /* column name (sanitized if configured) */
    cf_col_type type;
    bool key;         /* part of the primary key (NOT NULL) */
} cf_sink_column;

/* A table as the engine knows it: key columns first, in key field order. */
typedef struct cf_sink_table {
    char *name;            /* table name */
    char *topic;           /* the topic it came from */
    cf_sink_column *cols;
    size_t n_cols, n_key;
    uint8_t seq_sections;  /* 1 (offset) or 2 (field/offset) */
    size_t n_created_cols; /* columns the target has already (engine-managed) */
    void *target_state;    /* the target's per-table cache (statements) */
    struct cf_sink *sink;  /* the engine (for cf_sink_table_reject) */
} cf_sink_table;

/* One cell of a row, already in SQL form (text for NUMERIC/DATE/TIME/
 * TIMESTAMP/JSON). Pointers live in the engine's batch memory. */
typedef enum cf_cell_kind {
    CF_CELL_NULL = 0,
    CF_CELL_INT,
    CF_CELL_REAL,
    CF_CELL_TEXT,
    CF_CELL_BLOB,
    CF_CELL_KEEP /* Debezium's unavailable placeholder: keep the stored value */
} cf_cell_kind;

typedef struct cf_cell {
    uint8_t kind;
    uint32_t len;  /* TEXT/BLOB bytes */
    union {
        int64_t i;
        double f;
        const char *p;
    } u;
} cf_cell;

typedef enum cf_change_op { CF_CHANGE_UPSERT = 0, CF_CHANGE_DELETE = 1 } cf_change_op;

/* One compacted change. cells[0..n_cells) follow the table's columns;
 * columns beyond n_cells (added after the change was routed) are NULL. A
 * DELETE needs only the key cells. */
typedef struct cf_change {
    cf_change_op op;
    int32_t partition;  /* where the change came from (the last record compacted into it) */
    int64_t offset;
    bool has_keep;      /* some cell is CF_CELL_KEEP */
    cf_seq seq;
    char seq_text[CF_SEQ_TEXT_MAX];
    size_t n_cells;
    cf_cell *cells;
} cf_change;

/* ---------------- the target plugin interface ---------------- */

/* A target applies compacted changes with the rules above. Every function
 * returns CF_OK or fills err (CF_ERR_TARGET for the database's refusals,
 * with the SQL state / message in detail). One target state is used by one
 * thread at a time (with writer_thread, not always the same one). Adding
 * a target = one file defining a cf_sink_target and one line
 * in the table of targets (src/sink/targets.c) and in src/cli/plugins.c. */
typedef struct cf_sink_target {
    const char *name;
    /* Its state may be used by the engine's writer thread (async_apply):
     * one thread at a time, but not the one that opened it, and its apply
     * never calls cf_sink_table_reject (the reporter runs in the task's
     * thread only). */
    bool writer_thread;
    cf_code (*open)(const cf_sink_options *opts, void **state, cf_err *err);
    /* Make the table exist with t's columns (create, add columns, check
     * the primary key, record the sequence section count). Called before the
     * first write of a table and whenever columns were added. Mediated with a
     * lock across tasks when opts->mediate_schema_updates. */
    cf_code (*ensure_table)(void *state, cf_sink_table *t, cf_err *err);
    cf_code (*begin)(void *state, cf_err *err);
    /* Apply changes of one table (each key at most once) now. */
    cf_code (*apply)(void *state, cf_sink_table *t, cf_change *const *changes, size_t n, cf_err *err);
    /* Staleness mode: append the changes to the staging table. NULL (with
     * apply_staged NULL): the database applies max_staleness itself
     * (BigQuery), so the engine applies at flush and runs no background
     * thread. */
    cf_code (*stage)(void *state, cf_sink_table *t, cf_change *const *changes, size_t n, cf_err *err);
    /* Apply staged changes of the table (latest per key) and empty staging;
     * *applied receives the number of staged rows consumed. */
    cf_code (*apply_staged)(void *state, cf_sink_table *t, size_t *applied, cf_err *err);
    /* Drop tombstones older than the retention. */
    cf_code (*purge_tombstones)(void *state, cf_sink_table *t, int64_t older_than_unix_s, cf_err *err);
    cf_code (*commit)(void *state, cf_err *err);
    void (*rollback)(void *state);
    void (*free_table_state)(void *state, cf_sink_table *t);
    void (*close)(void *state);
    /* The sequence number stored for the key of `key` (its first n_key
     * cells): the row's, else its tombstone's; *found false when the table
     * or the key is not there. For a delete whose sequence field is missing
     * or a default (REPLICA IDENTITY DEFAULT), which takes its field section
     * from what is stored. NULL: the target cannot tell (such a delete is
     * then an error). */
    cf_code (*stored_seq)(void *state, cf_sink_table *t, const cf_change *key, bool *found, cf_seq *seq, cf_err *err);
    /* Positions (optional: NULL = the target keeps none). Store p[0..n) under
     * consumer inside the transaction begin() opened (insert or replace by
     * consumer, stream, partition), in the table "_cdcflow_positions"; read
     * back every row of consumer (outside a transaction). */
    cf_code (*save_positions)(void *state, const char *consumer, const cf_sink_stored_position *p, size_t n,
                              cf_err *err);
    cf_code (*load_positions)(void *state, const char *consumer, cf_sink_stored_position **out, size_t *n,
                              cf_err *err);
    /* Remove the position of (stream, partition) under consumer, or every
     * position of consumer when stream is NULL, inside the transaction
     * begin() opened (REST's PATCH/DELETE of a sink's offsets). */
    cf_code (*drop_positions)(void *state, const char *consumer, const char *stream, int32_t partition, cf_err *err);
    /* Row state of Cassandra change events (optional: NULL = the target
     * cannot apply them; src/sink/cassandra.c). One opaque blob per (space,
     * key) in the table "_cdc_cassandra_state": state_get reads it outside a
     * transaction (*found false when there is none; the table is created on
     * first use), state_put inserts or replaces it inside the transaction
     * begin() opened, so the state and the rows it produced commit together
     * (BigQuery, which has no such transaction: a local state file whose
     * transaction commit() commits, after apply returned with every row
     * acknowledged; bq_target.c, CASSANDRA STATE); vlen 0 removes the
     * partition's state (nothing left in it). */
    cf_code (*state_get)(void *state, const char *space, const void *key, size_t klen, cf_buf *out, bool *found,
                         cf_err *err);
    cf_code (*state_put)(void *state, const char *space, const void *key, size_t klen, const void *val, size_t vlen,
                         cf_err *err);
} cf_sink_target;

/* For targets: a change the database refused as bad data (BigQuery's
 * row_errors) goes to the engine's reporter (errors.tolerance, the dead
 * letter queue) as a record rebuilt from it: the table's topic, the
 * change's partition and offset, a key struct of the key columns and a value
 * struct of every column (NULL for a DELETE). CF_OK: go on without it; an
 * error code: the apply fails (errors.tolerance=none). */
cf_code cf_sink_table_reject(cf_sink_table *t, const cf_change *c, const cf_err *problem, cf_err *err);

/* For targets: compact changes of one table (n_key key cells each) in place,
 * the later of equal sequence numbers winning, cells that keep the stored
 * value merged from the change they replace. Returns the new count. */
size_t cf_sink_compact(cf_change **changes, size_t n, size_t n_key);

extern const cf_sink_target cf_sink_target_sqlite;   /* src/sink/sqlite */
extern const cf_sink_target cf_sink_target_postgres; /* src/sink/postgres */
/* The target named "sqlite" | "postgres" (alias "postgresql") | "bigquery"
 * (src/sink/targets.c; NULL or "" is sqlite). A target not linked into the
 * program and unknown names are CF_ERR_CONFIG
 * with a hint naming the targets there are. */
cf_code cf_sink_target_find(const char *name, const cf_sink_target **out, cf_err *err);
/* The linked targets' names, ", "-separated, into buf (cut at cap). */
const char *cf_sink_target_names(char *buf, size_t cap);

/* ---------------- the engine ---------------- */

typedef struct cf_sink cf_sink;

/* A bad record (not a target failure): the callback decides (errors.
 * tolerance). Return CF_OK to go on (the record is dropped and counted), or
 * an error code to fail the put. NULL callback: every bad record fails. */
typedef cf_code (*cf_sink_report_fn)(void *ud, const cf_record *rec, const cf_err *problem, cf_err *err);

typedef struct cf_sink_stats {
    uint64_t records;        /* records put */
    uint64_t upserts;        /* routed upserts */
    uint64_t deletes;        /* routed deletes */
    uint64_t skipped_tombstones; /* seq_field mode: tombstones skipped */
    uint64_t skipped_other;  /* raw envelopes with op t/m */
    uint64_t skipped_deletes; /* skip_deletes: deletes not applied */
    uint64_t bad_records;    /* reported and tolerated */
    uint64_t compacted;      /* changes dropped by compaction */
    uint64_t written;        /* changes handed to the target */
    uint64_t flushes;
    uint64_t background_applies;
    double t_route_s;        /* time in routing (record -> cells) */
    double t_db_s;           /* time in the target */
} cf_sink_stats;

/* Create an engine for `target` (see cf_sink_target_find). Opens the
 * target connection. */
cf_code cf_sink_new(const cf_sink_options *opts, const cf_sink_target *target, cf_sink **out, cf_err *err);
/* Stop the background thread (applying what is staged), close. NULL-safe. */
void cf_sink_destroy(cf_sink *s);
void cf_sink_set_reporter(cf_sink *s, cf_sink_report_fn fn, void *ud);

/* Route and buffer records. A bad record goes to the reporter; a target
 * failure (an apply forced by batch_max_records) fails the put. */
cf_code cf_sink_put(cf_sink *s, cf_record *const *records, size_t n, cf_err *err);
/* The same, with where the input stands after each record (pos[i] after
 * records[i]; pos may be NULL; a NULL record only moves the position: one
 * the caller dropped, e.g. reported as bad). With opts->consumer set and a target that
 * keeps positions, every apply (a flush, or one batch_max_records forces in
 * the middle of a put) stores the position after the last record it covers,
 * per topic partition and per source partition, in the same transaction as
 * the rows: records skipped or reported as bad move the position too. So
 * what the table holds and where its input resumes never disagree. */
cf_code cf_sink_put_at(cf_sink *s, cf_record *const *records, const cf_sink_position *pos, size_t n, cf_err *err);
/* The positions stored under opts->consumer (cf_sink_stored_positions_free);
 * none (n = 0) when the target keeps none or consumer is not set. */
cf_code cf_sink_read_positions(cf_sink *s, cf_sink_stored_position **out, size_t *n, cf_err *err);
/* Change the stored positions in one transaction (a stopped connector's
 * offsets altered over REST): every position removed first when all, then
 * drop[0..ndrop) removed (stream, partition), then set[0..nset) stored.
 * CF_ERR_UNSUPPORTED when the sink keeps no positions. */
cf_code cf_sink_alter_positions(cf_sink *s, bool all, const cf_sink_stored_position *drop, size_t ndrop,
                                const cf_sink_stored_position *set, size_t nset, cf_err *err);
/* Compact and apply (or stage) everything buffered, in one transaction;
 * with async_apply, after the write begun before it ended. */
cf_code cf_sink_flush(cf_sink *s, cf_err *err);
/* async_apply: hand everything buffered (and the positions it reaches) to
 * the writer thread and return while it is applied, so the next records
 * are routed meanwhile. *ticket names this write for cf_sink_flush_wait.
 * One write at a time: while one still runs (one the buffer's bounds began
 * during cf_sink_put_at; the caller knows of its own), nothing is begun and
 * CF_ERR_AGAIN is returned at once: ask again later (what is put meanwhile
 * goes with that later write); the caller's reading is not held up. The
 * error of an ended write is returned. Without async_apply it is
 * cf_sink_flush (the write has ended when it returns). A failed write fails
 * every later call: the engine must be destroyed, and its input read again
 * from what was committed before. */
cf_code cf_sink_flush_begin(cf_sink *s, uint64_t *ticket, cf_err *err);
/* Whether the write `ticket` (and every one before it) has ended: *done,
 * waiting for it when `wait`. Its error, or the error of a later
 * write that ended meanwhile, is returned. */
cf_code cf_sink_flush_wait(cf_sink *s, uint64_t ticket, bool wait, bool *done, cf_err *err);
/* Staleness mode: apply what is staged now (the background thread calls
 * it; tests and shutdown too). */
cf_code cf_sink_apply_staged(cf_sink *s, cf_err *err);
void cf_sink_get_stats(const cf_sink *s, cf_sink_stats *out);
/* The table for a topic, once a record of it was seen (NULL otherwise). */
const cf_sink_table *cf_sink_table_for_topic(const cf_sink *s, const char *topic);

/* ---------------- routing alone (tests, benches) ---------------- */

/* What a single record means, without a target: op, sequence and a readable
 * reason. Returns CF_OK and sets *skip when the record is skipped (seq_field
 * tombstone, op t/m). */
typedef struct cf_route_info {
    cf_change_op op;
    cf_seq seq;
    bool skip;
    const char *why; /* static: "tombstone", "payload null", "__deleted", "op d", "op c", ... */
} cf_route_info;
cf_code cf_sink_route_one(const cf_sink_options *opts, const cf_record *rec, cf_route_info *out, cf_err *err);

/* ---------------- the connector ---------------- */

/* "cdc-sink": the sink connector plugin (src/sink/connector.c; it finds
 * its target through cf_sink_target_find). Its settings: */
extern const cf_cfg_table cf_sink_config_table;
extern const cf_connector_plugin cf_connector_cdc_sink;

#ifdef __cplusplus
}
#endif
#endif
