/*
 * cdc_sink_connector.c - the "cdc-sink" connector: Kafka Connect's sink
 * plugin shape around the sink engine, with the target chosen by `target`.
 *
 * The connector finds its target by name in the table of targets
 * (targets.c), which refers to the targets (src/sink/sqlite, postgres,
 * bigquery: modules after this one) weakly, as the worker's registry refers
 * to connector plugins; the `cdcflow` binary links them in.
 *
 * Settings: kcbq's names (autoCreateTables, sanitizeTopics,
 * sanitizeFieldNames, allowNewBigQueryFields, cdcEnabled,
 * cdcChangeSequenceNumberField, tableMaxStaleness,
 * mediateConcurrentSchemaUpdates, and for BigQuery project,
 * defaultDataset, datasets, keyfile, keySource, useStorageWriteApi,
 * bigQueryRetry, bigQueryRetryWait) and the Debezium JDBC sink's
 * (connection.*, insert.mode, delete.enabled, primary.key.mode/fields,
 * table.name.format, schema.evolution, batch.size); `topics`,
 * `transforms.*`, converters and errors.* come from the common connector
 * tables (src/config/connector_defs.c) and the worker.
 *
 * THREE FLAVOURS, by connector.class:
 *   cdc-sink                   ours; kcbq's defaults
 *   io.debezium.connector.jdbc.JdbcSinkConnector
 *                              the Debezium JDBC sink's defaults and meaning:
 *                              deletes only with delete.enabled=true, only
 *                              for null values; every "__" field (add.fields)
 *                              is a column, `__deleted` too; schema.evolution
 *                              none unless set; connection.url required
 *   com.wepay.kafka.connect.bigquery.BigQuerySinkConnector
 *                              kcbq: target=bigquery
 * The target follows from connection.url when `target` is not set
 * (jdbc:postgresql:, postgresql:, postgres:, a libpq conninfo -> postgres;
 * sqlite:, jdbc:sqlite:, file:, a file path -> sqlite at that path); a
 * `target` that contradicts the URL is a configuration error, checked with
 * the configuration (cf_sink_config_check) so `validate` and `run` refuse
 * it before anything is written. A key of those connectors that cdcflow
 * does not honour is refused with what replaces it, or accepted and logged
 * at start with why it changes nothing.
 *
 * Exactly once: every apply stores where the input stands (the worker's
 * cf_sink_ctx_positions) in the same transaction as the rows, under the
 * connector's name; `positions` reads them back for the worker to resume
 * there.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/sink.h"
#include "cdcflow/transforms.h"

#define DEBEZIUM_JDBC_CLASS "io.debezium.connector.jdbc.JdbcSinkConnector"
#define KCBQ_CLASS "com.wepay.kafka.connect.bigquery.BigQuerySinkConnector"

static const char *const targets[] = {"sqlite", "postgres", "postgresql", "bigquery", NULL};
static const char *const insert_modes[] = {"insert", "upsert", "update", NULL};
static const char *const pk_modes[] = {"none", "kafka", "record_key", "record_header", "record_value", NULL};
static const char *const evolutions[] = {"none", "basic", NULL};
static const char *const key_sources[] = {"FILE", "JSON", "APPLICATION_DEFAULT", NULL};

static cf_code storage_api_validator(const char *key, const char *value, cf_err *err) {
    if (strcasecmp(value, "true") == 0) return CF_OK;
    cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\": %s", key, value);
    cf_err_detail(err, "BigQuery's change data capture (UPSERT/DELETE) works only through the Storage Write API");
    cf_err_hint(err, "remove %s or set it to true", key);
    return CF_ERR_CONFIG;
}

/* The configuration check itself refuses a target this build does not have
 * (cf_sink_target_find), so `cdcflow validate` and `cdcflow run` report it
 * as a configuration error (exit 2). */
static cf_code target_validator(const char *key, const char *value, cf_err *err) {
    const cf_sink_target *t;
    (void)key;
    return cf_sink_target_find(value, &t, err);
}

static cf_code cdc_enabled_validator(const char *key, const char *value, cf_err *err) {
    if (strcasecmp(value, "true") == 0) return CF_OK;
    cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\": %s", key, value);
    cf_err_detail(err, "the cdc-sink connector always applies changes with CDC semantics");
    cf_err_hint(err, "remove %s or set it to true", key);
    return CF_ERR_CONFIG;
}

static cf_code seq_field_validator(const char *key, const char *value, cf_err *err) {
    if (strcmp(value, "_KAFKA_TIMESTAMP") == 0) {
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\": _KAFKA_TIMESTAMP", key);
        cf_err_detail(err, "ordering by the Kafka record timestamp is not supported: it is not a change order");
        cf_err_hint(err, "name an integer or timestamp field of the row (e.g. version, updated_at), or leave it "
                         "empty to order by offset");
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

/* A key of the Debezium JDBC sink that cdcflow does not do: refused with
 * what replaces it (one line). */
typedef struct refusal {
    const char *key;
    const char *ok_value; /* a value that is accepted (the default), or NULL */
    const char *instead;
} refusal;

static const refusal refusals[] = {
    {"insert.mode", "upsert",
     "cdc-sink applies every change as an upsert ordered by its sequence number (insert.mode=upsert); insert-only "
     "and update-only writes are not supported: set insert.mode=upsert"},
    {"primary.key.mode", NULL, NULL}, /* checked by its own validator */
    {"field.include.list", NULL,
     "use the transform ReplaceField$Value with include=<fields> (transforms=keep, "
     "transforms.keep.type=org.apache.kafka.connect.transforms.ReplaceField$Value, transforms.keep.include=...)"},
    {"field.exclude.list", NULL,
     "use the transform ReplaceField$Value with exclude=<fields> (transforms=drop, "
     "transforms.drop.type=org.apache.kafka.connect.transforms.ReplaceField$Value, transforms.drop.exclude=...)"},
    {"truncate.enabled", "false",
     "truncate events (op t) are skipped and counted, never applied: remove truncate.enabled or set it to false"},
    {"table.naming.strategy", "io.debezium.connector.jdbc.naming.DefaultTableNamingStrategy",
     "table names come from table.name.format and sanitizeTopics; rename topics with RegexRouter"},
    {"collection.naming.strategy", "io.debezium.sink.naming.DefaultCollectionNamingStrategy",
     "table names come from table.name.format and sanitizeTopics; rename topics with RegexRouter"},
    {"column.naming.strategy", "io.debezium.connector.jdbc.naming.DefaultColumnNamingStrategy",
     "column names are the field names (sanitizeFieldNames=true makes them [A-Za-z0-9_]); rename fields with "
     "ReplaceField$Value renames=old:new"},
    {"database.time_zone", "UTC", "timestamps are written in UTC: remove database.time_zone or set it to UTC"},
    {NULL, NULL, NULL},
};

static cf_code refuse(const char *key, const char *value, cf_err *err) {
    for (const refusal *r = refusals; r->key; r++) {
        if (strcmp(r->key, key) != 0 || !r->instead) continue;
        if (r->ok_value && strcasecmp(value, r->ok_value) == 0) return CF_OK;
        cf_err_set(err, CF_ERR_CONFIG, "%s=%s is not supported by cdc-sink: %s", key, value, r->instead);
        cf_err_where(err, "%s", key);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

static cf_code pk_mode_validator(const char *key, const char *value, cf_err *err) {
    if (strcasecmp(value, "record_key") == 0 || strcasecmp(value, "record_value") == 0) return CF_OK;
    const char *instead =
        strcasecmp(value, "none") == 0
            ? "every table needs a primary key to apply changes: use record_key (the Kafka key's fields) or "
              "record_value with primary.key.fields"
        : strcasecmp(value, "kafka") == 0
            ? "a key of topic, partition and offset makes every record a new row: use record_key, or InsertField$Value "
              "with topic.field/partition.field/offset.field and record_value with those fields"
        : strcasecmp(value, "record_header") == 0 ? "use record_key, or record_value with primary.key.fields"
                                                  : "primary.key.mode is one of record_key, record_value";
    cf_err_set(err, CF_ERR_CONFIG, "%s=%s is not supported by cdc-sink: %s", key, value, instead);
    cf_err_where(err, "%s", key);
    return CF_ERR_CONFIG;
}

static cf_code table_format_validator(const char *key, const char *value, cf_err *err) {
    const char *p = strstr(value, "${");
    for (; p; p = strstr(p + 2, "${")) {
        if (strncmp(p, "${topic}", 8) == 0) continue;
        const char *e = strchr(p, '}');
        cf_err_set(err, CF_ERR_CONFIG, "%s: the placeholder %.*s is not supported (planned)", key,
                   e ? (int)(e - p + 1) : (int)strlen(p), p);
        cf_err_detail(err, "cdc-sink names a table from its topic: ${topic} (dots become underscores, as the Debezium "
                           "JDBC sink does)");
        cf_err_hint(err, "route topics to the names you want with RegexRouter, e.g. regex=[^.]+\\.[^.]+\\.(.*) "
                         "replacement=$1 for the table name alone");
        cf_err_where(err, "%s", key);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

#define D(name, type, def, nullable, valid, range, lo, hi, val, imp, group, doc) \
    {name, type, def, nullable, valid, range, lo, hi, val, imp, group, doc}

static const cf_cfg_def sink_defs[] = {
    D("target", CF_CFG_STRING, "sqlite", false, targets, false, 0, 0, target_validator, CF_IMPORTANCE_HIGH, "Target",
      "Where rows go: `sqlite` (one database file, the default), `postgres` (libpq), `bigquery` (the Storage Write "
      "API; see docs/bigquery.md). The kcbq class name `com.wepay.kafka.connect.bigquery.BigQuerySinkConnector` "
      "as `connector.class` means `bigquery`. Unset, it follows from connection.url: `jdbc:postgresql:`, "
      "`postgresql:`, `postgres:` or a libpq conninfo is postgres; `sqlite:`, `jdbc:sqlite:`, `file:` or a file "
      "path is sqlite at that path. A target that contradicts connection.url (or the kcbq class) is a "
      "configuration error."),
    D("sqlite.path", CF_CFG_STRING, "cdcflow.db", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Target",
      "SQLite: the database file (created if missing; WAL mode)."),
    D("connection.url", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Target",
      "Where rows go. PostgreSQL: a libpq conninfo (`host=... dbname=...`) or URL (`postgresql://host:5432/db`), "
      "or the `jdbc:postgresql://` URL the Debezium JDBC sink takes. SQLite: `sqlite:PATH`, `jdbc:sqlite:PATH`, "
      "`sqlite:///abs/path` or a plain file path (instead of sqlite.path). Required with the Debezium JDBC sink's "
      "class."),
    D("connection.username", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Target",
      "PostgreSQL: the user (overrides the URL's)."),
    D("connection.password", CF_CFG_PASSWORD, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Target",
      "PostgreSQL: the password (overrides the URL's)."),
    D("postgres.schema", CF_CFG_STRING, "public", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "Target",
      "PostgreSQL: the schema that holds the tables."),
    D("autoCreateTables", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Tables",
      "Create a missing table (one per topic) with the record key's fields as primary key and every other "
      "column nullable. An existing table must have a primary key (or unique index) on the key's columns; "
      "without one the connector stops with the statement that adds it."),
    D("allowNewBigQueryFields", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
      "Tables", "Add a column when a new field appears in the value schema. Type changes other than widening "
      "(int16 to int32 to int64, float to double) are refused with an error."),
    D("sanitizeTopics", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "Tables",
      "Table name = the topic with every character outside `[A-Za-z0-9_]` replaced by `_` and a leading digit "
      "prefixed with `_` (kcbq's FieldNameSanitizer); false uses the topic as it is (quoted)."),
    D("sanitizeFieldNames", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
      "Tables", "Column names sanitized the same way as topics."),
    D("cdcEnabled", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, cdc_enabled_validator, CF_IMPORTANCE_LOW,
      "CDC", "Accepted for kcbq compatibility; this connector always applies UPSERT/DELETE (false is an error)."),
    D("cdcChangeSequenceNumberField", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, seq_field_validator,
      CF_IMPORTANCE_HIGH, "CDC",
      "Order changes by this field (integer, or an ISO-8601 / Connect timestamp) of the row, then by the Kafka "
      "offset: the sequence number is `<field>/<offset>` in BigQuery's format. Unset: the offset alone. The field "
      "must never decrease for a key, re-inserts included (an updated_at or global version), and deletes must "
      "carry it: use ExtractNewRecordState's rewrite mode with REPLICA IDENTITY FULL. Tombstones (which have no "
      "field) are skipped and counted in this mode."),
    D("tableMaxStaleness", CF_CFG_LONG, "0", false, NULL, true, 0, 31536000, NULL, CF_IMPORTANCE_MEDIUM, "CDC",
      "Seconds. 0 applies changes at every flush. N stages them in `_cdc_staged_<table>` and applies them in the "
      "background at least every N seconds (BigQuery's max_staleness); the view `<table>_fresh` merges the staged "
      "changes for fresh reads. With target=bigquery it is the table's own `max_staleness` option (set at creation, "
      "and on an existing table through `ALTER TABLE ... SET OPTIONS`); BigQuery applies the changes."),
    D("cdcDeleteRetentionSeconds", CF_CFG_LONG, "172800", false, NULL, true, 0, 3153600000.0, NULL,
      CF_IMPORTANCE_LOW, "CDC",
      "How long a delete's tombstone (key and sequence number) is kept so that a late, older upsert cannot bring "
      "the row back (BigQuery keeps two days)."),
    D("mediateConcurrentSchemaUpdates", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Tables", "Serialise table creation and column additions across tasks (a lock in the database), so tasks "
      "evolving one table never race."),
    D("cdcKeepMetadataFields", CF_CFG_LIST, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "CDC",
      "Fields starting with `__` (ExtractNewRecordState's add.fields, e.g. `__op`, `__lsn`) that become columns; "
      "all others, and `__deleted` always, are dropped."),
    D("cassandra.schema.files", CF_CFG_LIST, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "CDC",
      "Cassandra change events (the `cassandra-cdc` source's topics): the CQL schema files of their tables (the "
      "source's `schema.files`), so that a set is a set (elements by value, in Cassandra's order) and static "
      "columns are known. Without them an array column is taken as a list (docs/formats.md). Debezium topics "
      "ignore it."),
    D("cassandra.gc.grace.seconds", CF_CFG_LONG, "864000", false, NULL, true, -1, 3153600000.0, NULL,
      CF_IMPORTANCE_LOW, "CDC",
      "Cassandra change events: what the partition states keep of deletions, as Cassandra's table option of the "
      "same name. When a partition's state is written, its deletions (partition, range, row, cell and collection "
      "tombstones) older than this many seconds before the newest event timestamp the task has seen are dropped "
      "with the data they shadow, and a state left with nothing is removed. As in Cassandra, a copy of a write "
      "older than a dropped deletion that arrives after it (a replica's copy later than gc_grace_seconds) comes "
      "back (a zombie). -1: never drop."),
    D("cassandra.state.file", CF_CFG_STRING, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "CDC",
      "target=bigquery: the local SQLite file that keeps the partition states of Cassandra change events (table "
      "`_cdc_cassandra_state`; targets sqlite and postgres keep it next to the tables). A flush's states are "
      "committed there only after BigQuery acknowledged the flush's rows. Empty: "
      "`cdcflow-cassandra-state-<connector name>.db` in the working directory (characters other than letters, "
      "digits, `.`, `-`, `_` as `_`), shared by the connector's tasks. Keep it with the worker (a lost file makes "
      "later events merge into empty states); never one file for two connectors whose table names collide "
      "(states are keyed by table name, not dataset)."),
    D("mergeIntervalMs", CF_CFG_LONG, "250", false, NULL, true, -1, 86400000, NULL, CF_IMPORTANCE_MEDIUM, "CDC",
      "How often (ms) what was read is written to the tables, counted from the first change buffered since the "
      "last write (kcbq's name; its default is a minute): a change is in its table within about this plus the "
      "write's own time (under load also the end of the write before it: targets sqlite and postgres write in a "
      "thread of their own while the task reads on, one write at a time). The consumer offsets are committed "
      "after each write, whatever "
      "offset.flush.interval.ms says. -1: only on the worker's offset.flush.interval.ms (Kafka Connect's "
      "behaviour). The size bound is batchMaxRecords."),
    D("batchMaxRecords", CF_CFG_INT, "100000", false, NULL, true, 1, 100000000, NULL, CF_IMPORTANCE_LOW, "CDC",
      "Buffered records that force an apply before the worker's flush. Changes are compacted by key before "
      "writing, so a larger buffer writes each key fewer times."),
    D("batchMaxBytes", CF_CFG_LONG, "16777216", false, NULL, true, 65536, 68719476736.0, NULL, CF_IMPORTANCE_LOW,
      "CDC",
      "Bytes of buffered changes (their cells and keys, as the sink holds them) that force an apply, whichever "
      "of this and batchMaxRecords comes first: the sink's memory is bounded in bytes, whatever the size of a "
      "record (with large values, batchMaxRecords alone let the buffer grow with them). The buffer is not the "
      "whole of the memory: a 1M-event `cdcflow run --input` of bench_sink peaks at 37 MB resident with the "
      "default (bench_sink prints it)."),
    /* ---- the Debezium JDBC sink's names ---- */
    D("insert.mode", CF_CFG_STRING, NULL, true, insert_modes, false, 0, 0, refuse, CF_IMPORTANCE_MEDIUM,
      "Debezium JDBC sink", "Debezium JDBC sink: `upsert` is what cdc-sink does (and what it does when unset); "
      "`insert` and `update` are refused (every change is an upsert ordered by its sequence number)."),
    D("delete.enabled", CF_CFG_BOOLEAN, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
      "Debezium JDBC sink", "Whether deletes are applied. Unset: yes for `cdc-sink`, no with the Debezium JDBC "
      "sink's class (its default false: null values are skipped and counted). true needs primary.key.mode="
      "record_key, as in Debezium."),
    D("primary.key.mode", CF_CFG_STRING, NULL, true, pk_modes, false, 0, 0, pk_mode_validator, CF_IMPORTANCE_MEDIUM,
      "Debezium JDBC sink", "`record_key` (the default for cdc-sink): the key's struct fields, only those in "
      "primary.key.fields when set; a primitive key becomes the column named by the first of primary.key.fields. "
      "`record_value`: the value fields listed in primary.key.fields (as ValueToKey). `none`, `kafka` and "
      "`record_header` are refused with what to use instead."),
    D("primary.key.fields", CF_CFG_LIST, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
      "Debezium JDBC sink", "The primary key's field names, read as primary.key.mode says."),
    D("table.name.format", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, table_format_validator,
      CF_IMPORTANCE_MEDIUM, "Debezium JDBC sink",
      "The table name, with `${topic}` for the topic with dots as underscores (the Debezium JDBC sink's rule); then "
      "sanitized as sanitizeTopics says. Other placeholders (`${source.table}`, ...) are planned and refused."),
    D("collection.name.format", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, table_format_validator,
      CF_IMPORTANCE_LOW, "Debezium JDBC sink", "Debezium 3's name of table.name.format (the same rules)."),
    D("schema.evolution", CF_CFG_STRING, NULL, true, evolutions, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
      "Debezium JDBC sink", "`basic`: create missing tables and add columns for new fields (autoCreateTables and "
      "allowNewBigQueryFields true); `none`: neither. Unset: the kcbq settings decide for `cdc-sink`; `none` (the "
      "Debezium default) with the Debezium JDBC sink's class."),
    D("batch.size", CF_CFG_INT, NULL, true, NULL, true, 1, 100000000, NULL, CF_IMPORTANCE_LOW, "Debezium JDBC sink",
      "Debezium JDBC sink: buffered records that force an apply (batchMaxRecords)."),
    D("field.include.list", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, refuse, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Refused: use ReplaceField$Value with include=."),
    D("field.exclude.list", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, refuse, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Refused: use ReplaceField$Value with exclude=."),
    D("truncate.enabled", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, refuse, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Only false: truncate events are skipped and counted."),
    D("table.naming.strategy", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, refuse, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Only Debezium's default class; names come from table.name.format."),
    D("collection.naming.strategy", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, refuse, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Only Debezium's default class; names come from table.name.format."),
    D("column.naming.strategy", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, refuse, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Only Debezium's default class; column names are the field names."),
    D("database.time_zone", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, refuse, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Only UTC: timestamps are written in UTC."),
    D("quote.identifiers", CF_CFG_BOOLEAN, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted; identifiers are always quoted (names keep their case)."),
    D("connection.provider", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: one connection per task, no pool."),
    D("connection.pool.min_size", CF_CFG_INT, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: one connection per task, no pool."),
    D("connection.pool.max_size", CF_CFG_INT, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: one connection per task, no pool."),
    D("connection.pool.acquire_increment", CF_CFG_INT, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: one connection per task, no pool."),
    D("connection.pool.timeout", CF_CFG_LONG, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: one connection per task, no pool."),
    D("dialect.postgres.postgis.schema", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: PostGIS types are not mapped (geometry arrives as a struct)."),
    D("dialect.sqlserver.identity.insert", CF_CFG_BOOLEAN, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: SQL Server is not a target."),
    D("flush.max.retries", CF_CFG_INT, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: a failed flush fails the task (errors.* decide about records)."),
    D("flush.retry.delay.ms", CF_CFG_LONG, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored, as flush.max.retries."),
    D("use.reduction.buffer", CF_CFG_BOOLEAN, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
      "Debezium JDBC sink", "Accepted and ignored: changes are always compacted by key before writing."),
    /* ---- BigQuery (kcbq's names) ---- */
    D("project", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "BigQuery",
      "BigQuery: the Google Cloud project of the datasets (kcbq `project`). Unset: the credentials' project "
      "(a key's `project_id`, or the metadata server's)."),
    D("defaultDataset", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "BigQuery",
      "BigQuery: the dataset of the tables, for topics no `datasets` entry matches."),
    D("datasets", CF_CFG_LIST, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "BigQuery",
      "BigQuery: `<topic regex>=<dataset>` entries (kcbq 1.x's `datasets`), tried in order; the first whose "
      "pattern matches the whole topic names the dataset. Patterns are POSIX extended regular expressions "
      "(`.*=my_dataset` as in kcbq)."),
    D("keyfile", CF_CFG_PASSWORD, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "BigQuery",
      "BigQuery: a service account JSON key: its path (keySource=FILE) or its text (keySource=JSON). Unset with "
      "keySource=FILE: Application Default Credentials. Never printed in logs or REST output."),
    D("keySource", CF_CFG_STRING, "FILE", false, key_sources, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "BigQuery",
      "BigQuery: what keyfile holds: `FILE` (a path), `JSON` (the key itself) or `APPLICATION_DEFAULT` "
      "(`$GOOGLE_APPLICATION_CREDENTIALS`, then `~/.config/gcloud/application_default_credentials.json`, then "
      "the metadata server of a Google Cloud machine). Keys of type service_account and authorized_user work."),
    D("useStorageWriteApi", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, storage_api_validator,
      CF_IMPORTANCE_LOW, "BigQuery",
      "Accepted for kcbq compatibility: BigQuery's CDC works only through the Storage Write API, which this "
      "connector always uses (false is an error)."),
    D("bigQueryRetry", CF_CFG_INT, "10", false, NULL, true, 0, 1000, NULL, CF_IMPORTANCE_MEDIUM, "BigQuery",
      "BigQuery: how often one AppendRows request (or a broken stream) is retried after a transient error "
      "(CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNAVAILABLE) before the flush fails."),
    D("bigQueryRetryWait", CF_CFG_LONG, "1000", false, NULL, true, 1, 600000, NULL, CF_IMPORTANCE_LOW, "BigQuery",
      "BigQuery: milliseconds before the first retry; each further retry of the same request waits twice as long, "
      "up to 32 times this."),
    D("bigquery.storage.endpoint", CF_CFG_STRING, "bigquerystorage.googleapis.com:443", false, NULL, false, 0, 0,
      NULL, CF_IMPORTANCE_LOW, "BigQuery",
      "BigQuery: the Storage Write API's gRPC endpoint: `host:port` or `https://host[:port]` (TLS), or "
      "`http://host:port` (plaintext, for emulators and test servers)."),
    D("bigquery.api.endpoint", CF_CFG_STRING, "https://bigquery.googleapis.com", false, NULL, false, 0, 0, NULL,
      CF_IMPORTANCE_LOW, "BigQuery", "BigQuery: the base URL of the REST API v2 (tables, DDL jobs)."),
    D("bigquery.token.uri", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "BigQuery",
      "BigQuery: the OAuth token endpoint, instead of the key's `token_uri` (private endpoints, test servers)."),
    D("bigquery.metadata.url", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "BigQuery",
      "BigQuery: the metadata server's base URL for Application Default Credentials on Google Cloud (unset: "
      "`http://$GCE_METADATA_HOST`, else `http://metadata.google.internal`)."),
    D("bigquery.request.max.bytes", CF_CFG_INT, "9437184", false, NULL, true, 65536, 9990000, NULL,
      CF_IMPORTANCE_LOW, "BigQuery",
      "BigQuery: the largest AppendRows request (BigQuery refuses 10 MB and more); a flush is cut into requests "
      "this size."),
    D("bigquery.inflight.requests", CF_CFG_INT, "4", false, NULL, true, 1, 64, NULL, CF_IMPORTANCE_LOW, "BigQuery",
      "BigQuery: AppendRows requests sent on a table's stream before the oldest answer is awaited."),
    D("bigquery.timeout.ms", CF_CFG_INT, "60000", false, NULL, true, 1000, 3600000, NULL, CF_IMPORTANCE_LOW,
      "BigQuery", "BigQuery: how long to wait for one AppendRows answer or one REST call; a stream that does not "
      "answer in time is opened again and its requests resent."),
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

/* the Debezium JDBC sink's Hibernate settings: accepted, logged as ignored */
static const char *const sink_prefixes[] = {"hibernate.", NULL};

const cf_cfg_table cf_sink_config_table = {
    "cdc-sink",
    "`cdc-sink` sink connector",
    "Applies Debezium change events (after ExtractNewRecordState, or raw envelopes) to tables with BigQuery's CDC "
    "semantics: `\"connector.class\": \"cdc-sink\"`. Deletes: tombstones, null values, `__deleted=true`, op `d`. "
    "A row changes only when the incoming change sequence number is >= the stored one; deletes leave tombstones "
    "so that replays cannot resurrect rows. See include/cdcflow/sink.h.",
    sink_defs,
    sink_prefixes,
};

/* ---------------- what a configuration means ---------------- */

typedef enum flavour { FL_CDC_SINK, FL_DEBEZIUM_JDBC, FL_KCBQ } flavour;

static flavour flavour_of(const cf_config *c) {
    const char *cls = cf_props_get(cf_config_props(c), "connector.class");
    if (cls && strcmp(cls, DEBEZIUM_JDBC_CLASS) == 0) return FL_DEBEZIUM_JDBC;
    if (cls && strcmp(cls, KCBQ_CLASS) == 0) return FL_KCBQ;
    return FL_CDC_SINK;
}

typedef enum url_kind { URL_NONE, URL_POSTGRES, URL_SQLITE, URL_OTHER } url_kind;

/* What connection.url names; *path gets the SQLite file (malloc'd). */
static url_kind url_kind_of(const char *url, char **path) {
    *path = NULL;
    if (!url || !*url) return URL_NONE;
    const char *u = url;
    if (strncasecmp(u, "jdbc:", 5) == 0) u += 5;
    if (strncasecmp(u, "postgresql:", 11) == 0 || strncasecmp(u, "postgres:", 9) == 0) return URL_POSTGRES;
    if (strncasecmp(u, "sqlite:", 7) == 0) {
        u += 7;
        if (strncmp(u, "//", 2) == 0) u += 2; /* sqlite:///abs/path: an empty host */
        *path = cf_xstrdup(u);
        return URL_SQLITE;
    }
    if (strncasecmp(u, "file:", 5) == 0) { /* SQLite's own URI form */
        *path = cf_xstrdup(url);
        return URL_SQLITE;
    }
    if (strchr(url, '=')) return URL_POSTGRES; /* libpq's key=value conninfo */
    const char *colon = strchr(url, ':');
    const char *slash = strchr(url, '/');
    if (colon && (!slash || colon < slash)) return URL_OTHER; /* some other scheme: jdbc:mysql:, mysql:, ... */
    *path = cf_xstrdup(url);
    return URL_SQLITE;
}

/* Everything start needs, resolved once from the configuration. */
typedef struct resolved {
    cf_sink_options o;
    flavour fl;
    char *sqlite_path; /* owned */
    bool pk_from_value;
    const char *const *pk_fields;
    size_t n_pk_fields;
} resolved;

static void resolved_free(resolved *r) { free(r->sqlite_path); }

static bool has(const cf_config *c, const char *key) { return cf_props_get(cf_config_props(c), key) != NULL; }

/* A problem line into pb ("key: message; hint"), the first also into first. */
static void problem(cf_buf *pb, cf_err *first, size_t *n, const char *key, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void problem(cf_buf *pb, cf_err *first, size_t *n, const char *key, const char *hint, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if ((*n)++ == 0) {
        cf_err_set(first, CF_ERR_CONFIG, "%s", msg);
        if (hint) cf_err_hint(first, "%s", hint);
        cf_err_where(first, "%s", key);
    }
    cf_buf_printf(pb, "%s: %s%s%s\n", key, msg, hint ? "; " : "", hint ? hint : "");
}

static const char *target_family(const char *t) {
    return strcasecmp(t, "postgresql") == 0 ? "postgres" : t;
}

/* Resolve the options; problems (one line each) go to pb. Returns their count. */
static size_t resolve(const cf_config *c, resolved *r, cf_buf *pb, cf_err *first) {
    memset(r, 0, sizeof *r);
    size_t n = 0;
    cf_sink_options *o = &r->o;
    cf_sink_options_default(o);
    r->fl = flavour_of(c);
    bool dbz = r->fl == FL_DEBEZIUM_JDBC;
    o->target = cf_config_string(c, "target");
    o->sqlite_path = cf_config_string(c, "sqlite.path");
    o->cassandra_state_file = cf_config_string(c, "cassandra.state.file");
    o->pg_conninfo = cf_config_string(c, "connection.url");
    o->pg_user = cf_config_string(c, "connection.username");
    o->pg_password = cf_config_string(c, "connection.password");
    o->pg_schema = cf_config_string(c, "postgres.schema");
    o->auto_create_tables = cf_config_bool(c, "autoCreateTables");
    o->allow_new_fields = cf_config_bool(c, "allowNewBigQueryFields");
    o->sanitize_topics = cf_config_bool(c, "sanitizeTopics");
    o->sanitize_field_names = cf_config_bool(c, "sanitizeFieldNames");
    o->seq_field = cf_config_string(c, "cdcChangeSequenceNumberField");
    o->max_staleness_s = cf_config_long(c, "tableMaxStaleness");
    o->delete_retention_s = cf_config_long(c, "cdcDeleteRetentionSeconds");
    o->cassandra_gc_grace_s = cf_config_long(c, "cassandra.gc.grace.seconds");
    o->mediate_schema_updates = cf_config_bool(c, "mediateConcurrentSchemaUpdates");
    o->batch_max_records = (size_t)cf_config_int(c, "batchMaxRecords");
    o->batch_max_bytes = (size_t)cf_config_long(c, "batchMaxBytes");
    cf_sink_bq_options *b = &o->bq;
    b->project = cf_config_string(c, "project");
    b->default_dataset = cf_config_string(c, "defaultDataset");
    b->keyfile = cf_config_string(c, "keyfile");
    b->key_source = cf_config_string(c, "keySource");
    b->storage_endpoint = cf_config_string(c, "bigquery.storage.endpoint");
    b->api_endpoint = cf_config_string(c, "bigquery.api.endpoint");
    b->token_uri = cf_config_string(c, "bigquery.token.uri");
    b->metadata_url = cf_config_string(c, "bigquery.metadata.url");
    b->retries = cf_config_int(c, "bigQueryRetry");
    b->retry_wait_ms = cf_config_long(c, "bigQueryRetryWait");
    b->request_max_bytes = (size_t)cf_config_int(c, "bigquery.request.max.bytes");
    b->inflight = cf_config_int(c, "bigquery.inflight.requests");
    b->timeout_ms = cf_config_int(c, "bigquery.timeout.ms");

    /* ---- the target, from `target`, the connector class and connection.url ---- */
    const char *url = o->pg_conninfo;
    url_kind uk = url_kind_of(url, &r->sqlite_path);
    bool explicit_target = has(c, "target");
    if (r->fl == FL_KCBQ) {
        if (explicit_target && strcasecmp(o->target, "bigquery") != 0)
            problem(pb, first, &n, "target", "remove target, or use connector.class=cdc-sink for another target",
                    "target=%s contradicts connector.class=%s, the BigQuery sink", o->target, KCBQ_CLASS);
        o->target = "bigquery";
        const cf_sink_target *t;
        cf_err e;
        if (cf_sink_target_find("bigquery", &t, &e) != CF_OK)
            problem(pb, first, &n, "connector.class", e.hint[0] ? e.hint : NULL,
                    "%s runs as cdc-sink with target=bigquery, which is not available in this build", KCBQ_CLASS);
    } else if (uk == URL_OTHER) {
        problem(pb, first, &n, "connection.url", "cdc-sink writes to PostgreSQL (jdbc:postgresql://host/db) and SQLite "
                "(sqlite:PATH), and BigQuery with target=bigquery", "connection.url \"%.*s...\" names a database cdc-sink cannot "
                "write to", (int)(strchr(url, ':') ? strchr(url, ':') - url + 1 : 8), url);
    } else if (explicit_target) {
        const char *fam = target_family(o->target);
        if (uk == URL_POSTGRES && strcasecmp(fam, "postgres") != 0)
            problem(pb, first, &n, "target", "remove target (connection.url decides), or point connection.url at the "
                    "target", "target=%s contradicts connection.url, which names a PostgreSQL database", o->target);
        else if (uk == URL_SQLITE && strcasecmp(fam, "sqlite") != 0)
            problem(pb, first, &n, "target", "remove target (connection.url decides), or give a PostgreSQL URL",
                    "target=%s contradicts connection.url, which names a SQLite file (%s)", o->target, r->sqlite_path);
    } else if (uk == URL_POSTGRES) {
        o->target = "postgres";
    } else if (uk == URL_SQLITE) {
        o->target = "sqlite";
    } else if (dbz) {
        problem(pb, first, &n, "connection.url", "e.g. \"connection.url\": \"jdbc:postgresql://127.0.0.1:5432/db\"",
                "missing required configuration \"connection.url\" which has no default value (the Debezium JDBC "
                "sink's)");
    }
    if (uk == URL_SQLITE && strcasecmp(target_family(o->target), "sqlite") == 0) {
        if (has(c, "sqlite.path") && strcmp(o->sqlite_path, r->sqlite_path) != 0)
            problem(pb, first, &n, "sqlite.path", "set only one of them", "sqlite.path=%s contradicts connection.url, "
                    "which names %s", o->sqlite_path, r->sqlite_path);
        o->sqlite_path = r->sqlite_path;
        o->pg_conninfo = NULL;
    }
    if (strcasecmp(target_family(o->target), "postgres") == 0 && (!url || !*url))
        problem(pb, first, &n, "connection.url", "e.g. \"connection.url\": \"postgresql://127.0.0.1:5432/mydb\"",
                "missing required configuration \"connection.url\" for target=postgres");

    /* ---- the Debezium JDBC sink's keys ---- */
    const char *pk_mode = cf_config_string(c, "primary.key.mode");
    r->pk_fields = cf_config_list(c, "primary.key.fields", &r->n_pk_fields);
    r->pk_from_value = pk_mode && strcasecmp(pk_mode, "record_value") == 0;
    if (r->pk_from_value && r->n_pk_fields == 0)
        problem(pb, first, &n, "primary.key.fields", "list the value fields of the key, e.g. primary.key.fields=id",
                "At least one primary.key.fields field name should be specified when resolving keys from the "
                "record's value.");
    bool deletes = has(c, "delete.enabled") ? cf_config_bool(c, "delete.enabled") : !dbz;
    if (has(c, "delete.enabled") && deletes && r->pk_from_value)
        problem(pb, first, &n, "delete.enabled", "use primary.key.mode=record_key, or delete.enabled=false",
                "delete.enabled=true requires primary.key.mode=record_key: a delete (a null value) has no value "
                "fields to find the row by");
    o->skip_deletes = !deletes;
    o->metadata_columns = dbz;
    const char *tf = cf_config_string(c, "table.name.format");
    const char *cf = cf_config_string(c, "collection.name.format");
    if (tf && cf && strcmp(tf, cf) != 0)
        problem(pb, first, &n, "collection.name.format", "set only one (table.name.format is the older name)",
                "collection.name.format=%s contradicts table.name.format=%s", cf, tf);
    o->table_name_format = tf ? tf : cf;
    if (o->table_name_format && strcmp(o->table_name_format, "${topic}") == 0 && !dbz)
        o->table_name_format = NULL; /* cdc-sink's own naming: the topic as it is, then sanitized */
    const char *evo = cf_config_string(c, "schema.evolution");
    if (!evo && dbz && !has(c, "autoCreateTables") && !has(c, "allowNewBigQueryFields")) evo = "none";
    if (evo) {
        bool basic = strcasecmp(evo, "basic") == 0;
        if ((has(c, "autoCreateTables") && o->auto_create_tables != basic) ||
            (has(c, "allowNewBigQueryFields") && o->allow_new_fields != basic))
            problem(pb, first, &n, "schema.evolution", "set schema.evolution or the kcbq keys, not both",
                    "schema.evolution=%s contradicts autoCreateTables/allowNewBigQueryFields", evo);
        o->auto_create_tables = o->allow_new_fields = basic;
    }
    if (has(c, "batch.size")) {
        if (has(c, "batchMaxRecords") && cf_config_int(c, "batch.size") != cf_config_int(c, "batchMaxRecords"))
            problem(pb, first, &n, "batch.size", "set only one of them", "batch.size contradicts batchMaxRecords");
        o->batch_max_records = (size_t)cf_config_int(c, "batch.size");
    }
    return n;
}

static cf_code sink_check(const cf_config *c, char **problems, cf_err *err) {
    resolved r;
    cf_buf pb = CF_BUF_INIT;
    cf_err first;
    cf_err_clear(&first);
    size_t n = resolve(c, &r, &pb, &first);
    resolved_free(&r);
    if (problems) *problems = n ? cf_buf_detach(&pb, NULL) : NULL;
    cf_buf_free(&pb);
    if (!n) return CF_OK;
    if (err) *err = first;
    return CF_ERR_CONFIG;
}

const cf_cfg_check cf_sink_config_check = {&cf_sink_config_table, sink_check};

/* ---------------- logging what the sink does ---------------- */

/* "host 127.0.0.1 port 5432 database x" from a libpq conninfo or URL,
 * never the password. */
static void describe_pg(const char *ci, const char *schema, cf_buf *b) {
    const char *u = ci;
    if (strncasecmp(u, "jdbc:", 5) == 0) u += 5;
    const char *sep = strstr(u, "://");
    if (sep) {
        const char *h = sep + 3, *at = strchr(h, '@'), *end = h + strcspn(h, "/?");
        if (at && at < end) h = at + 1;
        const char *db = *end == '/' ? end + 1 : "";
        cf_buf_printf(b, "%.*s, database %.*s", (int)(end - h), h, (int)strcspn(db, "?"), db);
    } else {
        static const char *const keys[] = {"host", "hostaddr", "port", "dbname", NULL};
        for (const char *const *k = keys; *k; k++) {
            const char *p = strstr(ci, *k);
            while (p && ((p > ci && p[-1] != ' ') || p[strlen(*k)] != '=')) p = strstr(p + 1, *k);
            if (p) cf_buf_printf(b, "%s%s %.*s", b->len ? ", " : "", *k, (int)strcspn(p + strlen(*k) + 1, " "),
                                 p + strlen(*k) + 1);
        }
    }
    cf_buf_printf(b, ", schema %s", schema && *schema ? schema : "public");
}

static void log_start(const cf_config *c, const resolved *r, const char *connector) {
    const cf_sink_options *o = &r->o;
    cf_buf where = CF_BUF_INIT;
    if (strcasecmp(target_family(o->target), "postgres") == 0) {
        describe_pg(o->pg_conninfo ? o->pg_conninfo : "", o->pg_schema, &where);
    } else if (strcasecmp(o->target, "bigquery") == 0) {
        cf_buf_printf(&where, "project %s, dataset %s%s", o->bq.project ? o->bq.project : "(the credentials')",
                      o->bq.default_dataset ? o->bq.default_dataset : "(from datasets)",
                      o->bq.datasets && o->bq.datasets[0] ? " and the datasets entries" : "");
    } else {
        char abs[PATH_MAX];
        const char *slash = strrchr(o->sqlite_path, '/');
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - o->sqlite_path) : 1, slash ? o->sqlite_path : ".");
        if (slash == o->sqlite_path) snprintf(dir, sizeof dir, "/");
        if (strncmp(o->sqlite_path, "file:", 5) != 0 && realpath(dir, abs))
            cf_buf_printf(&where, "file %s/%s", strcmp(abs, "/") ? abs : "", slash ? slash + 1 : o->sqlite_path);
        else cf_buf_printf(&where, "file %s", o->sqlite_path);
    }
    CF_INFO("sink", "%s: target %s, writing to %s; tables %s%s%s%s", connector, target_family(o->target), where.data,
            o->table_name_format ? "named by " : "named after their topics",
            o->table_name_format ? o->table_name_format : "", o->auto_create_tables ? ", created when missing" : "",
            o->skip_deletes ? "; deletes are skipped (delete.enabled=false)" : "");
    cf_buf_free(&where);
    if (r->fl != FL_DEBEZIUM_JDBC) return;
    /* the Debezium JDBC sink's keys whose default differs, and those that change nothing */
    if (!has(c, "insert.mode"))
        CF_INFO("sink", "%s: insert.mode is not set (the Debezium JDBC sink's default is insert): changes are applied "
                "as upserts", connector);
    if (!has(c, "primary.key.mode"))
        CF_INFO("sink", "%s: primary.key.mode is not set (the Debezium JDBC sink's default is none): the primary key is "
                "the record key's fields (record_key)", connector);
    static const struct {
        const char *key, *why;
    } ignored[] = {
        {"connection.provider", "one connection per task, no pool"},
        {"connection.pool.min_size", "one connection per task, no pool"},
        {"connection.pool.max_size", "one connection per task, no pool"},
        {"connection.pool.acquire_increment", "one connection per task, no pool"},
        {"connection.pool.timeout", "one connection per task, no pool"},
        {"quote.identifiers", "identifiers are always quoted (names keep their case)"},
        {"dialect.postgres.postgis.schema", "PostGIS types are not mapped"},
        {"dialect.sqlserver.identity.insert", "SQL Server is not a target"},
        {"flush.max.retries", "a failed flush fails the task"},
        {"flush.retry.delay.ms", "a failed flush fails the task"},
        {"use.reduction.buffer", "changes are always compacted by key"},
    };
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        if (has(c, ignored[i].key)) CF_INFO("sink", "%s: %s is ignored: %s", connector, ignored[i].key, ignored[i].why);
    const cf_props *p = cf_config_props(c);
    for (size_t i = 0; i < cf_props_count(p); i++)
        if (strncmp(cf_props_key_at(p, i), "hibernate.", 10) == 0)
            CF_INFO("sink", "%s: %s is ignored: there is no Hibernate; the target follows from connection.url",
                    connector, cf_props_key_at(p, i));
}

/* ---------------- the task ---------------- */

typedef struct task {
    cf_sink *sink;
    cf_sink_ctx *ctx;
    /* primary.key.mode: the key made from the value (record_value), or the
     * key's listed fields / a primitive key named (record_key with fields) */
    cf_transform *pk_value, *pk_subset, *pk_hoist;
    cf_record **tmp;
    size_t cap_tmp;
    /* the engine's counters as of the last put or flush, for GET /metrics
     * (read by the REST thread: atomics, written by the task thread) */
    atomic_uint_fast64_t m[8];
} task;

/* The families of the sink's metrics: name, help, which counter (index into
 * task.m), and whether it holds microseconds (shown as seconds). */
static const struct {
    const char *name, *help;
    bool us;
} sink_families[] = {
    {"cdcflow_sink_records_total", "Records put into the CDC sink.", false},
    {"cdcflow_sink_upserts_total", "Changes routed as UPSERT.", false},
    {"cdcflow_sink_deletes_total", "Changes routed as DELETE.", false},
    {"cdcflow_sink_tombstones_skipped_total", "Tombstones skipped (sequence-field mode).", false},
    {"cdcflow_sink_compacted_total", "Changes dropped by compaction (a later change of the key won).", false},
    {"cdcflow_sink_written_total", "Changes handed to the target.", false},
    {"cdcflow_sink_applies_total", "Applies (flushes) to the target.", false},
    {"cdcflow_sink_apply_seconds_total", "Time spent in the target (apply latency, summed).", true},
};

static void publish_stats(task *t) {
    cf_sink_stats st;
    cf_sink_get_stats(t->sink, &st);
    uint64_t v[8] = {st.records, st.upserts, st.deletes, st.skipped_tombstones, st.compacted, st.written,
                     st.flushes, (uint64_t)(st.t_db_s * 1e6)};
    for (int i = 0; i < 8; i++) atomic_store(&t->m[i], v[i]);
}

static bool sink_metrics(void *arg, int family, const char *labels, bool with_help, cf_buf *out) {
    task *t = arg;
    if (family < 0 || (size_t)family >= sizeof sink_families / sizeof *sink_families) return false;
    const char *name = sink_families[family].name;
    if (with_help)
        cf_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", name, sink_families[family].help, name);
    uint64_t v = atomic_load(&t->m[family]);
    if (sink_families[family].us) cf_buf_printf(out, "%s{%s} %.6f\n", name, labels, (double)v / 1e6);
    else cf_buf_printf(out, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
    return true;
}

static cf_code report(void *ud, const cf_record *rec, const cf_err *problem, cf_err *err) {
    task *t = ud;
    return cf_sink_ctx_report(t->ctx, rec, problem, err);
}

static cf_code key_transform(const char *type, const char *key, const char *const *fields, size_t n, cf_transform **out,
                             cf_err *err) {
    cf_buf list = CF_BUF_INIT;
    for (size_t i = 0; i < n; i++) cf_buf_printf(&list, "%s%s", i ? "," : "", fields[i]);
    cf_props *p = cf_props_new();
    cf_props_set(p, key, list.data ? list.data : "");
    cf_code rc = cf_transform_new(type, p, out, err);
    cf_props_destroy(p);
    cf_buf_free(&list);
    return rc;
}

static void task_free(task *t) {
    if (!t) return;
    cf_sink_destroy(t->sink);
    cf_transform_destroy(t->pk_value);
    cf_transform_destroy(t->pk_subset);
    cf_transform_destroy(t->pk_hoist);
    free(t->tmp);
    free(t);
}

/* The sink of config, its positions stored under consumer (NULL: none);
 * started by the worker (ctx) or opened for its positions only (no ctx). */
static cf_code open_task(const cf_config *config, cf_sink_ctx *ctx, const char *consumer, task **out, cf_err *err) {
    resolved r;
    cf_buf pb = CF_BUF_INIT;
    cf_err first;
    cf_err_clear(&first);
    if (resolve(config, &r, &pb, &first)) {
        if (err) *err = first;
        cf_buf_free(&pb);
        resolved_free(&r);
        return CF_ERR_CONFIG;
    }
    cf_buf_free(&pb);
    cf_sink_options o = r.o;
    size_t nk = 0;
    const char *const *keep = cf_config_list(config, "cdcKeepMetadataFields", &nk);
    const char **kl = cf_xcalloc(nk + 1, sizeof *kl);
    for (size_t i = 0; i < nk; i++) kl[i] = keep[i];
    o.keep_fields = kl;
    size_t nd = 0;
    const char *const *ds = cf_config_list(config, "datasets", &nd);
    const char **dl = cf_xcalloc(nd + 1, sizeof *dl);
    for (size_t i = 0; i < nd; i++) dl[i] = ds[i];
    o.bq.datasets = dl;
    size_t ncs = 0;
    const char *const *cs = cf_config_list(config, "cassandra.schema.files", &ncs);
    cf_buf csb = CF_BUF_INIT;
    for (size_t i = 0; i < ncs; i++) cf_buf_printf(&csb, "%s%s", i ? "," : "", cs[i]);
    o.cassandra_schema = csb.data;
    const cf_sink_target *tg;
    cf_code rc = cf_sink_target_find(o.target, &tg, err);
    task *t = cf_xcalloc(1, sizeof *t);
    t->ctx = ctx;
    if (!rc && r.pk_from_value)
        rc = key_transform("ValueToKey", "fields", r.pk_fields, r.n_pk_fields, &t->pk_value, err);
    if (!rc && !r.pk_from_value && r.n_pk_fields) {
        rc = key_transform("ReplaceField$Key", "include", r.pk_fields, r.n_pk_fields, &t->pk_subset, err);
        if (!rc) rc = key_transform("HoistField$Key", "field", r.pk_fields, 1, &t->pk_hoist, err);
    }
    o.consumer = consumer;
    /* a worker's task writes in the background while it reads on (the
     * worker commits after flush_wait); alter_positions' engine does not */
    o.async_apply = ctx != NULL;
    if (!rc && ctx) log_start(config, &r, consumer ? consumer : "cdc-sink");
    if (!rc) rc = cf_sink_new(&o, tg, &t->sink, err);
    free(kl);
    free(dl);
    cf_buf_free(&csb);
    resolved_free(&r);
    if (rc) {
        task_free(t);
        return rc;
    }
    *out = t;
    return CF_OK;
}

static cf_code start(const cf_config *config, cf_sink_ctx *ctx, void **out, cf_err *err) {
    /* the input positions of what the tables hold are stored with them,
     * under the connector's name (exactly once: the worker resumes there) */
    task *t = NULL;
    cf_code rc = open_task(config, ctx, ctx ? cf_sink_ctx_connector_name(ctx) : NULL, &t, err);
    if (rc) return rc;
    cf_sink_set_reporter(t->sink, report, t);
    int64_t every = cf_config_long(config, "mergeIntervalMs");
    cf_sink_ctx_flush_every(ctx, every > 0 ? every : 0);
    cf_sink_ctx_set_metrics(ctx, sink_metrics, t);
    *out = t;
    return CF_OK;
}

/* primary.key.mode: the key each record is applied with. The records stay
 * the worker's, so a changed one is a copy. */
/* The row image of a raw Debezium envelope (`after`), or NULL: the Debezium
 * JDBC sink reads record_value keys from there. */
static const cf_value *envelope_after(const cf_value *v) {
    if (!v || v->type != CF_STRUCT) return NULL;
    const cf_field *op = cf_schema_field(v->u.st.schema, "op"), *after = cf_schema_field(v->u.st.schema, "after");
    if (!op || !after || after->schema->type != CF_STRUCT) return NULL;
    return v->u.st.fields[after->index];
}

static cf_code with_key(task *t, cf_record *rec, cf_record **out, cf_err *err) {
    *out = rec;
    cf_transform *x = t->pk_value;
    if (!x && t->pk_subset) x = rec->key && rec->key->type == CF_STRUCT ? t->pk_subset : rec->key ? t->pk_hoist : NULL;
    if (!x) return CF_OK;
    const cf_value *after = t->pk_value ? envelope_after(rec->value) : NULL;
    bool envelope = t->pk_value && rec->value && rec->value->type == CF_STRUCT &&
                    cf_schema_field(rec->value->u.st.schema, "op") && cf_schema_field(rec->value->u.st.schema, "after");
    if (t->pk_value && (!rec->value || (envelope && !after))) return CF_OK; /* a delete: skipped (delete.enabled=false) */
    cf_record *copy = cf_record_clone(rec), *done = NULL;
    if (!after) {
        cf_code rc = cf_transform_apply(x, copy, &done, err);
        if (rc) cf_record_destroy(copy);
        else *out = done;
        return rc;
    }
    /* the key from the envelope's `after` image, put on the copy */
    cf_record *img = cf_record_new();
    cf_record_set_value(img, cf_schema_ref(after->u.st.schema), cf_value_clone(after));
    cf_code rc = cf_transform_apply(x, img, &done, err);
    if (rc) {
        cf_record_destroy(img);
        cf_record_destroy(copy);
        return rc;
    }
    cf_record_set_key(copy, done->key_schema, done->key);
    done->key_schema = NULL, done->key = NULL;
    cf_record_destroy(done);
    *out = copy;
    return CF_OK;
}

static cf_code put(void *tp, cf_record *const *records, size_t n, cf_err *err) {
    task *t = tp;
    /* where the input stands after each record: stored with the rows */
    const cf_sink_position *pos = cf_sink_ctx_positions(t->ctx);
    if (!t->pk_value && !t->pk_subset) {
        cf_code prc = cf_sink_put_at(t->sink, records, pos, n, err);
        publish_stats(t);
        return prc;
    }
    if (n > t->cap_tmp) {
        t->tmp = cf_xrealloc(t->tmp, n * sizeof *t->tmp);
        t->cap_tmp = n;
    }
    cf_code rc = CF_OK;
    size_t done = 0;
    for (; done < n && !rc; done++) {
        cf_record *r = NULL;
        cf_err e;
        t->tmp[done] = NULL; /* dropped (reported): the engine only moves the position past it */
        if (with_key(t, records[done], &r, &e) != CF_OK) /* a key that cannot be made: a bad record */
            rc = cf_sink_ctx_report(t->ctx, records[done], &e, err);
        else t->tmp[done] = r;
    }
    if (!rc) rc = cf_sink_put_at(t->sink, t->tmp, pos, done, err);
    for (size_t i = 0; i < done; i++) /* free the copies */
        if (t->tmp[i] && t->tmp[i] != records[i]) cf_record_destroy(t->tmp[i]);
    publish_stats(t);
    return rc;
}

static cf_code positions(void *tp, cf_sink_stored_position **out, size_t *n, cf_err *err) {
    task *t = tp;
    return cf_sink_read_positions(t->sink, out, n, err);
}

static cf_code alter_positions(const cf_config *config, const char *connector, bool all,
                               const cf_sink_stored_position *drop, size_t ndrop, const cf_sink_stored_position *set,
                               size_t nset, cf_err *err) {
    task *t = NULL;
    cf_code rc = open_task(config, NULL, connector, &t, err);
    if (!rc) rc = cf_sink_alter_positions(t->sink, all, drop, ndrop, set, nset, err);
    task_free(t);
    return rc;
}

static cf_code flush(void *tp, cf_err *err) {
    task *t = tp;
    cf_code rc = cf_sink_flush(t->sink, err);
    publish_stats(t);
    return rc;
}

static cf_code flush_begin(void *tp, uint64_t *ticket, cf_err *err) {
    task *t = tp;
    cf_code rc = cf_sink_flush_begin(t->sink, ticket, err);
    publish_stats(t);
    return rc;
}

static cf_code flush_wait(void *tp, uint64_t ticket, bool wait, bool *done, cf_err *err) {
    task *t = tp;
    cf_code rc = cf_sink_flush_wait(t->sink, ticket, wait, done, err);
    if (*done || rc) publish_stats(t);
    return rc;
}

static void stop(void *tp) {
    task *t = tp;
    if (!t) return;
    cf_sink_stats st;
    cf_sink_get_stats(t->sink, &st);
    CF_INFO("sink", "cdc-sink stopping: %llu records, %llu upserts, %llu deletes, %llu tombstones skipped, %llu "
            "skipped (op t/m), %llu deletes skipped, %llu bad, %llu compacted away, %llu written",
            (unsigned long long)st.records, (unsigned long long)st.upserts, (unsigned long long)st.deletes,
            (unsigned long long)st.skipped_tombstones, (unsigned long long)st.skipped_other,
            (unsigned long long)st.skipped_deletes,
            (unsigned long long)st.bad_records, (unsigned long long)st.compacted, (unsigned long long)st.written);
    task_free(t);
}

static const char *const sink_aliases[] = {DEBEZIUM_JDBC_CLASS, KCBQ_CLASS, NULL};

const cf_connector_plugin cf_connector_cdc_sink = {
    .name = "cdc-sink",
    .aliases = sink_aliases,
    .kind = CF_CONNECTOR_SINK,
    .description = "Debezium change events to SQLite / PostgreSQL tables with BigQuery's CDC semantics",
    .version = "0.1.0",
    .config = &cf_sink_config_table,
    .u.sink = {.start = start, .put = put, .flush = flush, .stop = stop, .flush_begin = flush_begin,
               .flush_wait = flush_wait, .positions = positions, .alter_positions = alter_positions},
};
