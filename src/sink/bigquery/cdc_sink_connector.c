/*
 * cdc_sink_connector.c - the "cdc-sink" connector: Kafka Connect's sink
 * plugin shape around the sink engine, with the target chosen by `target`.
 *
 * Why here, in sink/bigquery: the connector knows every target, and a module
 * may only use the modules before it; sink/bigquery is the last sink module.
 * Adding the BigQuery target = a file beside this one defining
 * `cf_sink_target_bigquery` and one line in cf_sink_target_find.
 *
 * Settings: kcbq's names (autoCreateTables, sanitizeTopics,
 * sanitizeFieldNames, allowNewBigQueryFields, cdcEnabled,
 * cdcChangeSequenceNumberField, tableMaxStaleness,
 * mediateConcurrentSchemaUpdates) and the Debezium JDBC sink's connection.*;
 * `topics`, `transforms.*`, converters and errors.* come from the common
 * connector tables (src/config/connector_defs.c) and the worker.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/sink.h"

cf_code cf_sink_target_find(const char *name, const cf_sink_target **out, cf_err *err) {
    const char *n = name && *name ? name : "sqlite";
    *out = NULL;
    if (strcasecmp(n, "sqlite") == 0) *out = &cf_sink_target_sqlite;
    else if (strcasecmp(n, "postgres") == 0 || strcasecmp(n, "postgresql") == 0) *out = &cf_sink_target_postgres;
    else if (strcasecmp(n, "bigquery") == 0) {
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"target\": bigquery is not built yet");
        cf_err_detail(err, "the BigQuery Storage Write API target is planned; the engine's target interface is "
                           "ready for it, the target itself does not exist");
        cf_err_hint(err, "use target=sqlite or target=postgres");
        return CF_ERR_CONFIG;
    } else {
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"target\": \"%s\"", n);
        cf_err_hint(err, "target is one of sqlite, postgres, bigquery");
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

static const char *const targets[] = {"sqlite", "postgres", "postgresql", "bigquery", NULL};

/* The configuration check itself refuses bigquery, so `cdcflow validate`
 * and `cdcflow run` report it as a configuration error (exit 2). */
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

#define D(name, type, def, nullable, valid, range, lo, hi, val, imp, group, doc) \
    {name, type, def, nullable, valid, range, lo, hi, val, imp, group, doc}

static const cf_cfg_def sink_defs[] = {
    D("target", CF_CFG_STRING, "sqlite", false, targets, false, 0, 0, target_validator, CF_IMPORTANCE_HIGH, "Target",
      "Where rows go: `sqlite` (one database file, the default), `postgres` (libpq), `bigquery` (not built yet: "
      "a configuration error)."),
    D("sqlite.path", CF_CFG_STRING, "cdcflow.db", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Target",
      "SQLite: the database file (created if missing; WAL mode)."),
    D("connection.url", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Target",
      "PostgreSQL: a libpq conninfo (`host=... dbname=...`) or URL (`postgresql://host:5432/db`); a "
      "`jdbc:postgresql://` URL as the Debezium JDBC sink takes it works too."),
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
      "changes for fresh reads."),
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
    D("batchMaxRecords", CF_CFG_INT, "100000", false, NULL, true, 1, 100000000, NULL, CF_IMPORTANCE_LOW, "CDC",
      "Buffered records that force an apply before the worker's flush. Changes are compacted by key before "
      "writing, so a larger buffer writes each key fewer times."),
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

const cf_cfg_table cf_sink_config_table = {
    "cdc-sink",
    "`cdc-sink` sink connector",
    "Applies Debezium change events (after ExtractNewRecordState, or raw envelopes) to tables with BigQuery's CDC "
    "semantics: `\"connector.class\": \"cdc-sink\"`. Deletes: tombstones, null values, `__deleted=true`, op `d`. "
    "A row changes only when the incoming change sequence number is >= the stored one; deletes leave tombstones "
    "so that replays cannot resurrect rows. See include/cdcflow/sink.h.",
    sink_defs,
    NULL,
};

/* ---------------- the task ---------------- */

typedef struct task {
    cf_sink *sink;
    cf_sink_ctx *ctx;
} task;

static cf_code report(void *ud, const cf_record *rec, const cf_err *problem, cf_err *err) {
    task *t = ud;
    return cf_sink_ctx_report(t->ctx, rec, problem, err);
}

cf_code cf_sink_options_from_config(const cf_config *c, cf_sink_options *o, cf_err *err);
cf_code cf_sink_options_from_config(const cf_config *c, cf_sink_options *o, cf_err *err) {
    cf_sink_options_default(o);
    o->target = cf_config_string(c, "target");
    o->sqlite_path = cf_config_string(c, "sqlite.path");
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
    o->mediate_schema_updates = cf_config_bool(c, "mediateConcurrentSchemaUpdates");
    o->batch_max_records = (size_t)cf_config_int(c, "batchMaxRecords");
    if (strcasecmp(o->target, "postgres") == 0 || strcasecmp(o->target, "postgresql") == 0) {
        if (!o->pg_conninfo || !*o->pg_conninfo) {
            cf_err_set(err, CF_ERR_CONFIG, "missing required configuration \"connection.url\" for target=postgres");
            cf_err_hint(err, "e.g. \"connection.url\": \"postgresql://127.0.0.1:5432/mydb\"");
            return CF_ERR_CONFIG;
        }
    }
    return CF_OK;
}

static cf_code start(const cf_config *config, cf_sink_ctx *ctx, void **out, cf_err *err) {
    cf_sink_options o;
    cf_code rc = cf_sink_options_from_config(config, &o, err);
    if (rc) return rc;
    size_t nk = 0;
    const char *const *keep = cf_config_list(config, "cdcKeepMetadataFields", &nk);
    const char **kl = cf_xcalloc(nk + 1, sizeof *kl);
    for (size_t i = 0; i < nk; i++) kl[i] = keep[i];
    o.keep_fields = kl;
    const cf_sink_target *tg;
    rc = cf_sink_target_find(o.target, &tg, err);
    task *t = NULL;
    if (!rc) {
        t = cf_xcalloc(1, sizeof *t);
        t->ctx = ctx;
        rc = cf_sink_new(&o, tg, &t->sink, err);
    }
    free(kl);
    if (rc) {
        free(t);
        return rc;
    }
    cf_sink_set_reporter(t->sink, report, t);
    *out = t;
    return CF_OK;
}

static cf_code put(void *tp, cf_record *const *records, size_t n, cf_err *err) {
    task *t = tp;
    return cf_sink_put(t->sink, records, n, err);
}

static cf_code flush(void *tp, cf_err *err) {
    task *t = tp;
    return cf_sink_flush(t->sink, err);
}

static void stop(void *tp) {
    task *t = tp;
    if (!t) return;
    cf_sink_stats st;
    cf_sink_get_stats(t->sink, &st);
    CF_INFO("sink", "cdc-sink stopping: %llu records, %llu upserts, %llu deletes, %llu tombstones skipped, %llu "
            "skipped (op t/m), %llu bad, %llu compacted away, %llu written",
            (unsigned long long)st.records, (unsigned long long)st.upserts, (unsigned long long)st.deletes,
            (unsigned long long)st.skipped_tombstones, (unsigned long long)st.skipped_other,
            (unsigned long long)st.bad_records, (unsigned long long)st.compacted, (unsigned long long)st.written);
    cf_sink_destroy(t->sink);
    free(t);
}

const cf_connector_plugin cf_connector_cdc_sink = {
    .name = "cdc-sink",
    .aliases = NULL,
    .kind = CF_CONNECTOR_SINK,
    .description = "Debezium change events to SQLite / PostgreSQL tables with BigQuery's CDC semantics",
    .version = "0.1.0",
    .config = &cf_sink_config_table,
    .u.sink = {start, put, flush, stop},
};
