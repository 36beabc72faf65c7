/*
 * bq_target.c - the BigQuery target of the CDC sink: BigQuery applies the
 * CDC rules itself (UPSERT / DELETE by primary key, _CHANGE_SEQUENCE_NUMBER
 * order, max_staleness), so this target only has to deliver every
 * compacted change exactly as the engine routed it, acknowledged.
 *
 * TABLES (ensure_table, REST API v2): a missing table is created with the
 * record key as `tableConstraints.primaryKey` (at most 16 columns), the key
 * columns REQUIRED and every other column NULLABLE (a DELETE row carries
 * only the key), clustered on the first four clusterable key columns,
 * labelled with the sequence section count (cdcflow_seq_sections, the
 * facts SQLite and PostgreSQL keep in _cdc_tables), and with maxStaleness
 * = tableMaxStaleness. An existing table must have the primary key on the
 * record key's columns; without one the connector stops with the ALTER
 * TABLE ... ADD PRIMARY KEY ... NOT ENFORCED that fixes it. New fields add
 * NULLABLE columns and REQUIRED non-key columns are relaxed, in one
 * tables.patch sent with the etag read (mediateConcurrentSchemaUpdates): a
 * 409/412 means another task changed the table, so it is read again and
 * the change redone. A staleness the Table resource did not take is set
 * with the DDL ALTER TABLE SET OPTIONS (max_staleness) through jobs.query.
 *
 * WRITING (apply, Storage Write API): one AppendRows stream per table on
 * the table's default stream (one connection each: BigQuery refuses CDC
 * and non-CDC rows mixed on one connection). Rows are encoded against the
 * writer schema (the table's columns in the engine's order plus
 * _CHANGE_TYPE and _CHANGE_SEQUENCE_NUMBER), cut into requests below
 * request_max_bytes, and up to `inflight` requests are on the wire before
 * the oldest answer is awaited (answers come in request order). Before a
 * table's first AppendRows call of a task, and again after its schema
 * changed, GetWriteStream asks for the default stream (check_write_stream;
 * its errors are handled like a broken stream's: transient codes retried,
 * others fail the flush). Every request names the stream; the first of a
 * call, and the first after a schema change, carries the writer schema.
 * Answers:
 *   success                      the rows are committed (default stream)
 *   row_errors                   BigQuery appended none of the request's
 *                                rows: the named rows go to the engine's
 *                                reporter (errors.tolerance / dead letter
 *                                queue), the others are sent again
 *   CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL,
 *   UNAVAILABLE                  sent again after a backoff
 *                                (bigQueryRetryWait doubling, at most
 *                                bigQueryRetry times per request)
 *   anything else                (INVALID_ARGUMENT without row errors,
 *                                PERMISSION_DENIED, ...) fails the flush
 * A broken stream (the call ended, or no answer within timeout) is opened
 * again and every unanswered request resent. apply returns CF_OK only when
 * every row was acknowledged or handed to the reporter, so the worker
 * commits offsets only for rows BigQuery has. Resending is safe: a row
 * carries its sequence number, and BigQuery's order ignores a duplicate of
 * an applied change (at-least-once, as the default stream promises).
 *
 * Unchanged-TOAST placeholders the engine could not fill from the batch
 * cannot be written (UPSERT replaces the whole row): such a change goes to
 * the reporter.
 *
 * CASSANDRA STATE (state_get / state_put, src/sink/cassandra.c). Cassandra
 * change events are merged into per-partition states; the rows a state
 * produces are whole rows, UPSERT or DELETE, whose sequence number is the
 * partition's highest timestamp: exactly what BigQuery's CDC applies. A
 * range or partition deletion becomes a DELETE of every row the state
 * knows in it. BigQuery cannot hold the states in a transaction with the
 * rows, so they live in a local SQLite file (cassandra.state.file, table
 * "_cdc_cassandra_state" as the other targets have it). The ORDER makes it
 * correct: the engine calls apply (which returns only once BigQuery
 * acknowledged every row), then state_put for the dirty partitions, then
 * commit; state_put writes inside a transaction of the state file that
 * only commit() commits (rollback, or a crash, drops it). So a flush's
 * states are durable only after BigQuery has the flush's rows:
 *   - a crash after the append and before the state commit: the input is
 *     read again from the positions committed before (the worker commits
 *     offsets after the flush), the events merge into the OLD state again
 *     (the merge is commutative and idempotent) and produce the same rows
 *     with the same sequence numbers again; BigQuery ignores what it
 *     already applied (an equal sequence number replaces the row by the
 *     same row). Nothing is lost, nothing changes.
 *   - a crash after the state commit and before the worker committed
 *     the offsets: the events merge into the NEW state, which holds them
 *     already (idempotent): the same rows again.
 *   - never the other order. With the state committed first and the
 *     append lost, the redelivered events merge into a state that holds
 *     them already, so their rows exist only if a merge that changes
 *     nothing still produces rows. cassandra.c does that today (every
 *     event emits the rows it touches from the merged state, changed or
 *     not), but it is not a promise of the merge: an optimisation that
 *     skips unchanged merges would silently lose those rows for good.
 *     The state follows the acknowledged rows, never leads them.
 * Only the task's own thread uses the file (writer_thread is false), and
 * tasks of one connector share it (SQLite's locking, 30 s busy timeout:
 * their partitions differ, the keys never clash).
 */
#include <inttypes.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cdcflow/bigquery.h"
#include "cdcflow/log.h"
#include "../sqlite/state_table.h"

typedef struct bq {
    const cf_sink_options *o;
    cf_bq_auth *auth;
    cf_bq_rest *rest;
    char *project;
    regex_t *ds_re;
    char **ds_name;
    size_t n_ds;
    char *storage;
    int retries;
    int64_t wait_ms;
    size_t max_bytes;
    int inflight;
    int timeout_ms;
    /* Cassandra change events' partition states (see CASSANDRA STATE) */
    char *state_path;
    sqlite3 *sdb;
    sk_state_table cstate;
    bool st_tx; /* a transaction of the state file is open */
} bq;

typedef struct bq_tbl {
    char *dataset;
    char *path;         /* project.dataset.table, for messages and DDL */
    char *write_stream;
    cf_bq_field *cols;  /* writer columns = the engine's columns, as the table has them */
    size_t n_cols;
    cf_bq_rowenc *enc;
    cf_buf desc;
    bool schema_due;    /* the next request carries the writer schema */
    bool stream_check_due; /* GetWriteStream before the next AppendRows */
    cf_bq_stream *stream;
    char *stream_token;
} bq_tbl;

#define LOG "bigquery"

/* ---------------- lifecycle ---------------- */

static void bq_close(void *state) {
    bq *q = state;
    if (!q) return;
    if (q->sdb) {
        if (q->st_tx) sqlite3_exec(q->sdb, "ROLLBACK", NULL, NULL, NULL);
        sk_state_table_finalize(&q->cstate);
        sqlite3_close(q->sdb);
    }
    free(q->state_path);
    cf_bq_rest_destroy(q->rest);
    cf_bq_auth_destroy(q->auth);
    for (size_t i = 0; i < q->n_ds; i++) regfree(&q->ds_re[i]), free(q->ds_name[i]);
    free(q->ds_re);
    free(q->ds_name);
    free(q->project);
    free(q->storage);
    free(q);
}

static cf_code bq_open(const cf_sink_options *o, void **state, cf_err *err) {
    *state = NULL;
    bq *q = cf_xcalloc(1, sizeof *q);
    q->o = o;
    const cf_sink_bq_options *b = &o->bq;
    q->retries = b->retries >= 0 ? b->retries : 0;
    q->wait_ms = b->retry_wait_ms > 0 ? b->retry_wait_ms : 1000;
    q->max_bytes = b->request_max_bytes ? b->request_max_bytes : 9u << 20;
    if (q->max_bytes > 10000000 - 4096) q->max_bytes = 10000000 - 4096; /* BigQuery: a request under 10 MB */
    q->inflight = b->inflight > 0 ? b->inflight : 4;
    q->timeout_ms = b->timeout_ms > 0 ? b->timeout_ms : 60000;
    if (o->cassandra_state_file && *o->cassandra_state_file) q->state_path = cf_xstrdup(o->cassandra_state_file);
    else { /* one file per connector: states are keyed by table name, not by dataset */
        cf_buf p = CF_BUF_INIT;
        cf_buf_append_str(&p, "cdcflow-cassandra-state");
        if (o->consumer && *o->consumer) {
            cf_buf_append_byte(&p, '-');
            for (const char *c = o->consumer; *c; c++)
                cf_buf_append_byte(&p, (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                                               *c == '-' || *c == '_' || *c == '.'
                                           ? *c
                                           : '_');
        }
        cf_buf_append_str(&p, ".db");
        q->state_path = cf_buf_detach(&p, NULL);
    }
    q->storage = cf_xstrdup(b->storage_endpoint && *b->storage_endpoint ? b->storage_endpoint
                                                                        : "bigquerystorage.googleapis.com:443");
    /* configuration first: no credentials are looked at (and no server
     * asked) for a configuration that cannot work */
    if (!(b->datasets && b->datasets[0]) && !(b->default_dataset && *b->default_dataset)) {
        bq_close(q);
        cf_err_set(err, CF_ERR_CONFIG, "missing required configuration \"defaultDataset\" (or \"datasets\")");
        cf_err_hint(err, "e.g. \"defaultDataset\": \"my_dataset\", or \"datasets\": \".*=my_dataset\"");
        return CF_ERR_CONFIG;
    }
    cf_bq_auth_opts ao = {0};
    const char *ks = b->key_source && *b->key_source ? b->key_source : "FILE";
    if (strcasecmp(ks, "FILE") == 0) ao.source = CF_BQ_KEY_FILE;
    else if (strcasecmp(ks, "JSON") == 0) ao.source = CF_BQ_KEY_JSON;
    else if (strcasecmp(ks, "APPLICATION_DEFAULT") == 0) ao.source = CF_BQ_KEY_APPLICATION_DEFAULT;
    else {
        bq_close(q);
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"keySource\": %s", ks);
        cf_err_hint(err, "keySource is one of FILE, JSON, APPLICATION_DEFAULT");
        return CF_ERR_CONFIG;
    }
    /* kcbq: keySource=FILE without a keyfile means Application Default Credentials */
    if (ao.source == CF_BQ_KEY_FILE && (!b->keyfile || !*b->keyfile)) ao.source = CF_BQ_KEY_APPLICATION_DEFAULT;
    ao.keyfile = b->keyfile;
    ao.token_uri = b->token_uri;
    ao.metadata_url = b->metadata_url;
    ao.timeout_ms = q->timeout_ms;
    cf_code rc = cf_bq_auth_new(&ao, &q->auth, err);
    if (rc) {
        bq_close(q);
        return rc;
    }
    q->rest = cf_bq_rest_new(b->api_endpoint, q->auth, q->timeout_ms);
    const char *proj = b->project && *b->project ? b->project : cf_bq_auth_project(q->auth);
    if (!proj) {
        bq_close(q);
        cf_err_set(err, CF_ERR_CONFIG, "missing required configuration \"project\"");
        cf_err_detail(err, "the credentials do not name a project either");
        cf_err_hint(err, "set \"project\" to the Google Cloud project that holds the datasets");
        return CF_ERR_CONFIG;
    }
    q->project = cf_xstrdup(proj);
    for (const char *const *d = b->datasets; d && *d; d++) {
        const char *eq = strrchr(*d, '=');
        if (!eq || eq == *d || !eq[1]) {
            bq_close(q);
            cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"datasets\": \"%s\"", *d);
            cf_err_hint(err, "each entry is <topic regex>=<dataset>, e.g. .*=my_dataset");
            return CF_ERR_CONFIG;
        }
        cf_buf re = CF_BUF_INIT;
        cf_buf_append_str(&re, "^(");
        cf_buf_append(&re, *d, (size_t)(eq - *d));
        cf_buf_append_str(&re, ")$");
        q->ds_re = cf_xrealloc(q->ds_re, (q->n_ds + 1) * sizeof *q->ds_re);
        q->ds_name = cf_xrealloc(q->ds_name, (q->n_ds + 1) * sizeof *q->ds_name);
        int e = regcomp(&q->ds_re[q->n_ds], re.data, REG_EXTENDED | REG_NOSUB);
        cf_buf_free(&re);
        if (e) {
            char m[128];
            regerror(e, &q->ds_re[q->n_ds], m, sizeof m);
            bq_close(q);
            cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"datasets\": \"%s\": %s", *d, m);
            cf_err_hint(err, "the topic pattern is a POSIX extended regular expression matched against the whole topic");
            return CF_ERR_CONFIG;
        }
        q->ds_name[q->n_ds++] = cf_xstrdup(eq + 1);
    }
    CF_INFO(LOG, "BigQuery target: project %s, credentials: %s, Storage Write API at %s", q->project,
            cf_bq_auth_describe(q->auth), q->storage);
    *state = q;
    return CF_OK;
}

static void bq_free_table_state(void *state, cf_sink_table *t) {
    (void)state;
    bq_tbl *x = t->target_state;
    if (!x) return;
    cf_bq_stream_destroy(x->stream);
    cf_bq_rowenc_destroy(x->enc);
    cf_bq_fields_free(x->cols, x->n_cols);
    cf_buf_free(&x->desc);
    free(x->dataset), free(x->path), free(x->write_stream), free(x->stream_token);
    free(x);
    t->target_state = NULL;
}

/* ---------------- Cassandra state (a local SQLite file) ---------------- */

static cf_code state_err(bq *q, cf_err *err, const char *what) {
    cf_err_set(err, CF_ERR_TARGET, "%s in the Cassandra state file %s: %s", what, q->state_path,
               q->sdb ? sqlite3_errmsg(q->sdb) : "cannot open");
    cf_err_hint(err, "check cassandra.state.file: a writable local file, used by the tasks of one connector");
    return CF_ERR_TARGET;
}

static cf_code state_open(bq *q, cf_err *err) {
    if (q->cstate.get) return CF_OK;
    if (!q->sdb) {
        if (sqlite3_open_v2(q->state_path, &q->sdb, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            NULL) != SQLITE_OK) {
            cf_code rc = state_err(q, err, "opening");
            sqlite3_close(q->sdb);
            q->sdb = NULL;
            return rc;
        }
        sqlite3_busy_timeout(q->sdb, 30000);
    }
    /* WAL: readers of one task do not wait on another's commit; FULL sync:
     * a committed state survives a power loss like BigQuery's rows do */
    if (sqlite3_exec(q->sdb, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL", NULL, NULL, NULL) != SQLITE_OK)
        return state_err(q, err, "setting WAL mode");
    if (sk_state_table_prepare(q->sdb, &q->cstate) != SQLITE_OK)
        return state_err(q, err, "creating \"_cdc_cassandra_state\"");
    return CF_OK;
}

static cf_code bq_state_get(void *state, const char *space, const void *key, size_t klen, cf_buf *out, bool *found,
                            cf_err *err) {
    bq *q = state;
    *found = false;
    cf_code rc = state_open(q, err);
    if (rc) return rc;
    if (sk_state_table_get(&q->cstate, space, key, klen, out, found) != SQLITE_OK)
        return state_err(q, err, "reading a partition state");
    return CF_OK;
}

/* Inside the flush's transaction of the state file, which commit() commits
 * after apply returned (BigQuery has the rows): see CASSANDRA STATE. */
static cf_code bq_state_put(void *state, const char *space, const void *key, size_t klen, const void *val,
                            size_t vlen, cf_err *err) {
    bq *q = state;
    cf_code rc = state_open(q, err);
    if (rc) return rc;
    if (!q->st_tx) {
        if (sqlite3_exec(q->sdb, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            return state_err(q, err, "beginning a transaction");
        q->st_tx = true;
    }
    if (sk_state_table_put(&q->cstate, space, key, klen, val, vlen) != SQLITE_OK)
        return state_err(q, err, vlen ? "storing a partition state" : "removing a partition state");
    return CF_OK;
}

static cf_code bq_begin(void *state, cf_err *err) {
    (void)state, (void)err;
    return CF_OK;
}
static cf_code bq_commit(void *state, cf_err *err) {
    bq *q = state;
    /* apply returned only once BigQuery acknowledged every row: the states
     * those rows came from can be committed now, and only now */
    if (!q->st_tx) return CF_OK;
    if (sqlite3_exec(q->sdb, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        cf_code rc = state_err(q, err, "committing the partition states");
        sqlite3_exec(q->sdb, "ROLLBACK", NULL, NULL, NULL);
        q->st_tx = false;
        return rc;
    }
    q->st_tx = false;
    return CF_OK;
}
static void bq_rollback(void *state) {
    bq *q = state;
    if (q->st_tx) sqlite3_exec(q->sdb, "ROLLBACK", NULL, NULL, NULL);
    q->st_tx = false;
}

/* ---------------- tables ---------------- */

static const char *dataset_for(bq *q, const char *topic) {
    for (size_t i = 0; i < q->n_ds; i++)
        if (regexec(&q->ds_re[i], topic, 0, NULL, 0) == 0) return q->ds_name[i];
    const char *d = q->o->bq.default_dataset;
    return d && *d ? d : NULL;
}

static bool clusterable(cf_col_type t) {
    return t != CF_COL_FLOAT32 && t != CF_COL_FLOAT64 && t != CF_COL_BYTES && t != CF_COL_JSON;
}

static void staleness_text(char *b, size_t n, int64_t s) {
    snprintf(b, n, "0-0 0 %" PRId64 ":%" PRId64 ":%" PRId64, s / 3600, s / 60 % 60, s % 60);
}

/* "Y-M D H:M:S[.f]" (BigQuery's canonical INTERVAL) -> seconds; -1 if not. */
static int64_t staleness_seconds(const char *s) {
    long long y, mo, d, h, mi;
    double sec;
    if (!s || sscanf(s, "%lld-%lld %lld %lld:%lld:%lf", &y, &mo, &d, &h, &mi, &sec) != 6) return -1;
    return (((y * 12 + mo) * 30 + d) * 24 + h) * 3600 + mi * 60 + (int64_t)sec;
}

static int col_index(const cf_bq_table *bt, const char *name) {
    for (size_t i = 0; i < bt->n_fields; i++)
        if (strcasecmp(bt->fields[i].name, name) == 0) return (int)i; /* BigQuery names are case-insensitive */
    return -1;
}

static char *create_body(bq *q, const cf_sink_table *t, const char *dataset) {
    json_t *o = json_pack("{s:{s:s,s:s,s:s}}", "tableReference", "projectId", q->project, "datasetId", dataset,
                          "tableId", t->name);
    cf_bq_field *f = cf_xcalloc(t->n_cols ? t->n_cols : 1, sizeof *f);
    json_t *pk = json_array(), *cl = json_array();
    for (size_t i = 0; i < t->n_cols; i++) {
        f[i].name = t->cols[i].name;
        f[i].type = cf_bq_type_for_col(t->cols[i].type);
        f[i].mode = t->cols[i].key ? CF_BQ_REQUIRED : CF_BQ_NULLABLE;
        if (t->cols[i].key) {
            json_array_append_new(pk, json_string(t->cols[i].name));
            if (json_array_size(cl) < 4 && clusterable(t->cols[i].type))
                json_array_append_new(cl, json_string(t->cols[i].name));
        }
    }
    cf_buf fj = CF_BUF_INIT;
    cf_bq_fields_json(f, t->n_cols, &fj);
    free(f);
    json_object_set_new(o, "schema", json_pack("{s:o}", "fields", json_loads(fj.data, 0, NULL)));
    cf_buf_free(&fj);
    json_object_set_new(o, "tableConstraints", json_pack("{s:{s:o}}", "primaryKey", "columns", pk));
    if (json_array_size(cl)) json_object_set_new(o, "clustering", json_pack("{s:o}", "fields", cl));
    else json_decref(cl);
    char secs[8];
    snprintf(secs, sizeof secs, "%u", t->seq_sections);
    json_object_set_new(o, "labels", json_pack("{s:s}", "cdcflow_seq_sections", secs));
    if (q->o->max_staleness_s > 0) {
        char st[64];
        staleness_text(st, sizeof st, q->o->max_staleness_s);
        json_object_set_new(o, "maxStaleness", json_string(st));
    }
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static void pk_statement(cf_buf *b, const char *path, const cf_sink_table *t) {
    cf_buf_printf(b, "ALTER TABLE `%s` ADD PRIMARY KEY (", path);
    for (size_t k = 0; k < t->n_key; k++) cf_buf_printf(b, "%s%s", k ? ", " : "", t->cols[k].name);
    cf_buf_append_str(b, ") NOT ENFORCED");
}

/* Check bt against t; fill a patch of its schema and labels when columns
 * must be added or relaxed or the label is missing. */
static cf_code check_table(bq *q, bq_tbl *x, cf_sink_table *t, const cf_bq_table *bt, char **patch, cf_err *err) {
    *patch = NULL;
    if (bt->n_pk == 0) {
        cf_buf b = CF_BUF_INIT;
        pk_statement(&b, x->path, t);
        cf_err_set(err, CF_ERR_TARGET, "table %s has no primary key", x->path);
        cf_err_detail(err, "BigQuery applies CDC changes (UPSERT/DELETE) only to a table with a primary key");
        cf_err_hint(err, "run: %s;", b.data);
        cf_buf_free(&b);
        return CF_ERR_TARGET;
    }
    bool same = bt->n_pk == t->n_key;
    for (size_t k = 0; same && k < t->n_key; k++) same = strcasecmp(bt->pk[k], t->cols[k].name) == 0;
    if (!same) {
        cf_buf a = CF_BUF_INIT, b = CF_BUF_INIT;
        for (size_t k = 0; k < bt->n_pk; k++) cf_buf_printf(&a, "%s%s", k ? ", " : "", bt->pk[k]);
        for (size_t k = 0; k < t->n_key; k++) cf_buf_printf(&b, "%s%s", k ? ", " : "", t->cols[k].name);
        cf_err_set(err, CF_ERR_TARGET, "the primary key of table %s is (%s), the record key's fields are (%s)", x->path,
                   a.data, b.data);
        cf_err_hint(err, "route the topic to another table (RegexRouter) or recreate the table with the key's columns");
        cf_buf_free(&a), cf_buf_free(&b);
        return CF_ERR_TARGET;
    }
    if (bt->seq_sections && bt->seq_sections != t->seq_sections) {
        cf_err_set(err, CF_ERR_CONFIG, "table %s holds change sequence numbers of %d section(s); this connector writes %u",
                   x->path, bt->seq_sections, t->seq_sections);
        cf_err_detail(err, "mixing sequence formats in one table orders changes unpredictably");
        cf_err_hint(err, "keep cdcChangeSequenceNumberField as it was for this table, or start a new table");
        return CF_ERR_CONFIG;
    }
    bool changed = !bt->seq_sections;
    cf_bq_field *nf = cf_bq_fields_clone(bt->fields, bt->n_fields);
    size_t nn = bt->n_fields;
    for (size_t i = 0; i < t->n_cols; i++) {
        int c = col_index(bt, t->cols[i].name);
        if (c < 0) {
            if (!q->o->allow_new_fields) {
                cf_bq_fields_free(nf, nn);
                cf_err_set(err, CF_ERR_SCHEMA, "field \"%s\" has no column in table %s", t->cols[i].name, x->path);
                cf_err_hint(err, "set allowNewBigQueryFields=true to add columns, or drop the field (ReplaceField)");
                return CF_ERR_SCHEMA;
            }
            nf = cf_xrealloc(nf, (nn + 1) * sizeof *nf);
            nf[nn++] = (cf_bq_field){cf_xstrdup(t->cols[i].name), cf_bq_type_for_col(t->cols[i].type),
                                     CF_BQ_NULLABLE, NULL, 0};
            CF_INFO(LOG, "adding column %s %s to %s", t->cols[i].name, cf_bq_type_name(nf[nn - 1].type), x->path);
            changed = true;
            continue;
        }
        if (!cf_bq_col_fits(t->cols[i].type, &bt->fields[c])) {
            cf_bq_fields_free(nf, nn);
            cf_err_set(err, CF_ERR_SCHEMA, "incompatible schema change: column \"%s\" of %s is %s %s, the record's field "
                       "is %s", bt->fields[c].name, x->path, cf_bq_mode_name(bt->fields[c].mode),
                       cf_bq_type_name(bt->fields[c].type), cf_col_type_name(t->cols[i].type));
            cf_err_hint(err, "migrate the column by hand or route the topic to a new table");
            return CF_ERR_SCHEMA;
        }
        if (!t->cols[i].key && nf[c].mode == CF_BQ_REQUIRED) { /* a DELETE row leaves it out */
            nf[c].mode = CF_BQ_NULLABLE;
            CF_INFO(LOG, "relaxing column %s of %s to NULLABLE", nf[c].name, x->path);
            changed = true;
        }
    }
    if (changed) {
        cf_buf fj = CF_BUF_INIT;
        cf_bq_fields_json(nf, nn, &fj);
        char secs[8];
        snprintf(secs, sizeof secs, "%u", t->seq_sections);
        json_t *o = json_pack("{s:{s:o},s:{s:s}}", "schema", "fields", json_loads(fj.data, 0, NULL), "labels",
                              "cdcflow_seq_sections", secs);
        *patch = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        cf_buf_free(&fj);
    }
    cf_bq_fields_free(nf, nn);
    return CF_OK;
}

/* The writer columns (the engine's columns as the table has them) and a
 * fresh encoder and descriptor. */
static cf_code set_writer(bq_tbl *x, const cf_sink_table *t, const cf_bq_table *bt, cf_err *err) {
    cf_bq_field *w = cf_xcalloc(t->n_cols ? t->n_cols : 1, sizeof *w);
    for (size_t i = 0; i < t->n_cols; i++) {
        int c = col_index(bt, t->cols[i].name);
        if (c < 0) {
            cf_bq_fields_free(w, i);
            return cf_err_set(err, CF_ERR_TARGET, "column \"%s\" is missing from table %s after the schema update",
                              t->cols[i].name, x->path);
        }
        cf_bq_field *one = cf_bq_fields_clone(&bt->fields[c], 1);
        w[i] = *one;
        free(one);
    }
    cf_bq_rowenc *enc;
    cf_code rc = cf_bq_rowenc_new(w, t->n_cols, true, &enc, err);
    cf_buf d = CF_BUF_INIT;
    if (!rc) rc = cf_bq_descriptor(w, t->n_cols, true, &d, err);
    if (rc) {
        cf_bq_rowenc_destroy(enc);
        cf_bq_fields_free(w, t->n_cols);
        cf_buf_free(&d);
        return rc;
    }
    cf_bq_rowenc_destroy(x->enc);
    cf_bq_fields_free(x->cols, x->n_cols);
    cf_buf_free(&x->desc);
    x->enc = enc, x->cols = w, x->n_cols = t->n_cols, x->desc = d;
    x->schema_due = true;
    x->stream_check_due = true; /* the table is new to this task, or its schema changed */
    return CF_OK;
}

static void sleep_ms(int64_t ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static cf_code bq_ensure_table(void *state, cf_sink_table *t, cf_err *err) {
    bq *q = state;
    bq_tbl *x = t->target_state;
    if (!x) {
        const char *ds = dataset_for(q, t->topic);
        if (!ds) {
            cf_err_set(err, CF_ERR_CONFIG, "no dataset for topic \"%s\"", t->topic);
            cf_err_hint(err, "add a datasets entry matching it (<regex>=<dataset>) or set defaultDataset");
            return CF_ERR_CONFIG;
        }
        if (!cf_bq_name_ok(t->name) || strlen(t->name) > 1024) {
            cf_err_set(err, CF_ERR_CONFIG, "\"%s\" is not a table name this sink can use", t->name);
            cf_err_hint(err, "keep sanitizeTopics=true, or rename the topic's table with RegexRouter");
            return CF_ERR_CONFIG;
        }
        x = t->target_state = cf_xcalloc(1, sizeof *x);
        x->dataset = cf_xstrdup(ds);
        cf_buf b = CF_BUF_INIT;
        cf_buf_printf(&b, "%s.%s.%s", q->project, ds, t->name);
        x->path = cf_buf_detach(&b, NULL);
        cf_buf_printf(&b, "projects/%s/datasets/%s/tables/%s/streams/_default", q->project, ds, t->name);
        x->write_stream = cf_buf_detach(&b, NULL);
    }
    cf_code rc = CF_OK;
    cf_bq_table bt;
    bool created = false;
    for (int attempt = 0;; attempt++) {
        rc = cf_bq_rest_get_table(q->rest, q->project, x->dataset, t->name, &bt, err);
        if (rc == CF_ERR_NOT_FOUND) {
            if (!q->o->auto_create_tables) {
                cf_err_hint(err, "create it with a primary key on the record key's columns, or set autoCreateTables=true");
                return rc;
            }
            char *body = create_body(q, t, x->dataset);
            rc = cf_bq_rest_insert_table(q->rest, q->project, x->dataset, body, err);
            free(body);
            if (rc == CF_ERR_STATE) continue; /* another task created it: read it */
            if (rc) return rc;
            CF_INFO(LOG, "created table %s (primary key of %zu column(s))", x->path, t->n_key);
            created = true;
            continue;
        }
        if (rc) return rc;
        char *patch = NULL;
        rc = check_table(q, x, t, &bt, &patch, err);
        if (rc || !patch) break;
        rc = cf_bq_rest_patch_table(q->rest, q->project, x->dataset, t->name, patch,
                                    q->o->mediate_schema_updates ? bt.etag : NULL, err);
        free(patch);
        cf_bq_table_free(&bt);
        if (rc == CF_ERR_AGAIN && attempt < 20) { /* another task changed it: read again, redo */
            CF_DEBUG(LOG, "%s changed under a schema update; retrying", x->path);
            sleep_ms(50 + 50 * attempt);
            continue;
        }
        if (rc) return rc;
    }
    if (rc) {
        cf_bq_table_free(&bt);
        return rc;
    }
    int64_t want = q->o->max_staleness_s;
    if (want > 0 && staleness_seconds(bt.max_staleness) != want) {
        /* the Table resource did not take it (or an older table has another):
         * the DDL does, on every BigQuery */
        cf_buf sql = CF_BUF_INIT;
        cf_buf_printf(&sql, "ALTER TABLE `%s` SET OPTIONS (max_staleness = INTERVAL %" PRId64 " SECOND)", x->path, want);
        rc = cf_bq_rest_query(q->rest, q->project, sql.data, err);
        if (!rc) CF_INFO(LOG, "%s: %s", created ? "new table" : "existing table", sql.data);
        cf_buf_free(&sql);
    }
    if (!rc) rc = set_writer(x, t, &bt, err);
    cf_bq_table_free(&bt);
    return rc;
}

/* ---------------- writing ---------------- */

typedef struct req {
    size_t *ids; /* indexes into the batch */
    size_t n;
    int attempts;
} req;

typedef struct batch {
    cf_sink_table *t;
    cf_change *const *changes;
    cf_buf rows;   /* every change's encoded row, back to back */
    size_t *off, *len;
    bool *done;    /* acknowledged or rejected */
    req *reqs;
    size_t n_reqs, cap_reqs;
    size_t *todo;  /* requests to send, in order */
    size_t todo_h, todo_n, todo_cap;
    size_t *wire;  /* sent, not answered, in send order (at most `inflight`) */
    size_t wire_n;
    size_t rejected;
} batch;

static void todo_push(batch *b, size_t r, bool front) {
    if (b->todo_n == b->todo_cap) {
        size_t nc = b->todo_cap ? b->todo_cap * 2 : 16;
        size_t *n = cf_xmalloc(nc * sizeof *n);
        for (size_t i = 0; i < b->todo_n; i++) n[i] = b->todo[(b->todo_h + i) % b->todo_cap];
        free(b->todo);
        b->todo = n, b->todo_h = 0, b->todo_cap = nc;
    }
    if (front) {
        b->todo_h = (b->todo_h + b->todo_cap - 1) % b->todo_cap;
        b->todo[b->todo_h] = r;
    } else {
        b->todo[(b->todo_h + b->todo_n) % b->todo_cap] = r;
    }
    b->todo_n++;
}

static size_t todo_pop(batch *b) {
    size_t r = b->todo[b->todo_h];
    b->todo_h = (b->todo_h + 1) % b->todo_cap;
    b->todo_n--;
    return r;
}

static size_t new_req(batch *b, size_t *ids, size_t n, int attempts) {
    if (b->n_reqs == b->cap_reqs) {
        b->cap_reqs = b->cap_reqs ? b->cap_reqs * 2 : 16;
        b->reqs = cf_xrealloc(b->reqs, b->cap_reqs * sizeof *b->reqs);
    }
    b->reqs[b->n_reqs] = (req){ids, n, attempts};
    return b->n_reqs++;
}

/* Everything on the wire back to the front of the queue (a broken stream). */
static void unsend_all(batch *b) {
    while (b->wire_n) todo_push(b, b->wire[--b->wire_n], true);
}

static cf_code reject(batch *b, size_t id, const cf_err *problem, cf_err *err) {
    b->done[id] = true;
    b->rejected++;
    return cf_sink_table_reject(b->t, b->changes[id], problem, err);
}

static int64_t backoff_ms(bq *q, int attempt) {
    int64_t w = q->wait_ms;
    for (int i = 1; i < attempt && w < q->wait_ms * 32; i++) w *= 2;
    return w;
}

/* GetWriteStream (view FULL) on the table's default stream, as Google's
 * Java writer does when it opens one: some servers set the default stream
 * up only then (goccy/bigquery-emulator answers AppendRows with "failed to
 * get stream" otherwise), and the answer's table_schema is the schema the
 * Storage Write API writes with. BigQuery takes a while (minutes) to make
 * columns added by tables.patch writable; a writer column missing there
 * is CF_ERR_AGAIN, which the caller retries with backoff like a transient
 * error instead of sending requests bound to fail. A failed call is
 * CF_ERR_TRANSPORT with the gRPC status in *code (the caller retries the
 * transient ones). */
static cf_code check_write_stream(bq *q, bq_tbl *x, const char *token, int *code, cf_err *err) {
    cf_buf req = CF_BUF_INIT, resp = CF_BUF_INIT;
    cf_bq_get_write_stream_request(&req, x->write_stream, CF_BQ_VIEW_FULL);
    cf_code rc = cf_bq_get_write_stream(x->stream, token, req.data, req.len, q->timeout_ms, &resp, code, err);
    cf_buf_free(&req);
    if (rc) {
        cf_buf_free(&resp);
        if (*code == CF_GRPC_NOT_FOUND)
            cf_err_hint(err, "the table was there over REST a moment ago: was it (or its dataset) deleted, or do "
                             "bigquery.api.endpoint and bigquery.storage.endpoint name different servers?");
        else if (*code == CF_GRPC_PERMISSION_DENIED)
            cf_err_hint(err, "the credentials need bigquery.tables.updateData on %s (e.g. roles/bigquery.dataEditor "
                             "on the dataset)", x->path);
        return rc;
    }
    cf_bq_write_stream ws;
    cf_err de;
    cf_err_clear(&de);
    rc = cf_bq_write_stream_decode((const uint8_t *)resp.data, resp.len, &ws, &de);
    cf_buf_free(&resp);
    if (rc) {
        cf_bq_write_stream_free(&ws);
        if (err) *err = de;
        cf_err_detail(err, "GetWriteStream's answer for %s", x->write_stream);
        if (err) err->code = CF_ERR_TARGET;
        return CF_ERR_TARGET;
    }
    cf_buf missing = CF_BUF_INIT;
    for (size_t i = 0; ws.has_schema && i < x->n_cols; i++) {
        bool found = false;
        for (size_t k = 0; k < ws.n_columns && !found; k++) found = strcasecmp(ws.columns[k], x->cols[i].name) == 0;
        if (!found) cf_buf_printf(&missing, "%s%s", missing.len ? ", " : "", x->cols[i].name);
    }
    CF_DEBUG(LOG, "GetWriteStream %s: type %d, %s%zu column(s)", x->write_stream, ws.type,
             ws.has_schema ? "" : "no schema, ", ws.n_columns);
    cf_bq_write_stream_free(&ws);
    if (missing.len) {
        cf_err_set(err, CF_ERR_AGAIN, "the Storage Write API does not show column(s) %s of table %s yet", missing.data,
                   x->path);
        cf_err_detail(err, "GetWriteStream's table_schema lacks them; BigQuery makes columns added to a table "
                           "writable after a while (minutes)");
        cf_buf_free(&missing);
        return CF_ERR_AGAIN;
    }
    x->stream_check_due = false;
    return CF_OK;
}

/* Open the table's stream when needed (a new token takes a new call),
 * after GetWriteStream when that is due. A failed gRPC call leaves its
 * status in *code. */
static cf_code ensure_stream(bq *q, bq_tbl *x, int *code, cf_err *err) {
    const char *token;
    cf_code rc = cf_bq_auth_token(q->auth, &token, err);
    if (rc) return rc;
    if (!x->stream) {
        rc = cf_bq_stream_new(q->storage, x->write_stream, &x->stream, err);
        if (rc) return rc;
    }
    if (x->stream_check_due) {
        rc = check_write_stream(q, x, token, code, err);
        if (rc) return rc;
    }
    if (cf_bq_stream_is_open(x->stream) && x->stream_token && strcmp(x->stream_token, token) == 0) return CF_OK;
    rc = cf_bq_stream_open(x->stream, token, err);
    if (rc) return rc;
    free(x->stream_token);
    x->stream_token = cf_xstrdup(token);
    x->schema_due = true; /* a new call: its first request names the stream and carries the schema */
    return CF_OK;
}

static cf_code send_req(bq *q, bq_tbl *x, batch *b, size_t r, cf_buf *scratch, int *code, cf_err *err) {
    (void)q;
    req *rq = &b->reqs[r];
    cf_buf rows = CF_BUF_INIT;
    for (size_t i = 0; i < rq->n; i++) {
        size_t id = rq->ids[i];
        cf_bq_rows_add(&rows, b->rows.data + b->off[id], b->len[id]);
    }
    cf_buf_reset(scratch);
    /* write_stream on every request, not only on a call's first (which is
     * all BigQuery needs): about 80 bytes a request, and a server cannot
     * get the destination wrong (goccy/bigquery-emulator v0.8.1 sends
     * requests without one to any stream it knows, of any table) */
    cf_bq_append_request(scratch, x->write_stream, x->schema_due ? &x->desc : NULL, (const uint8_t *)rows.data,
                         rows.len, NULL);
    cf_buf_free(&rows);
    cf_code rc = cf_bq_stream_send(x->stream, scratch->data, scratch->len, code, err);
    if (!rc) x->schema_due = false;
    return rc;
}

static cf_code bq_apply(void *state, cf_sink_table *t, cf_change *const *changes, size_t n, cf_err *err) {
    bq *q = state;
    bq_tbl *x = t->target_state;
    if (!x || !x->enc) return cf_err_set(err, CF_ERR_INTERNAL, "BigQuery table %s not ensured before apply", t->name);
    if (n == 0) return CF_OK;
    batch b;
    memset(&b, 0, sizeof b);
    b.t = t;
    b.changes = changes;
    b.off = cf_xmalloc(n * sizeof *b.off);
    b.len = cf_xmalloc(n * sizeof *b.len);
    b.done = cf_xcalloc(n, sizeof *b.done);
    cf_code rc = CF_OK;
    /* encode every row; bad ones go to the reporter */
    for (size_t i = 0; i < n && !rc; i++) {
        const cf_change *c = changes[i];
        b.off[i] = b.rows.len;
        cf_err pe;
        cf_err_clear(&pe);
        cf_code ec = cf_bq_encode_row(x->enc, c->cells, c->n_cells, c->op == CF_CHANGE_DELETE ? "DELETE" : "UPSERT",
                                      c->seq_text, &b.rows, &pe);
        b.len[i] = b.rows.len - b.off[i];
        if (ec) rc = reject(&b, i, &pe, err);
    }
    /* cut into requests under the size limit */
    size_t overhead = cf_bq_request_overhead(x->write_stream, x->desc.len);
    size_t limit = q->max_bytes > overhead + 1024 ? q->max_bytes - overhead : 1024;
    for (size_t i = 0; i < n && !rc;) {
        size_t *ids = cf_xmalloc((n - i) * sizeof *ids), k = 0, bytes = 0;
        for (; i < n; i++) {
            if (b.done[i]) continue;
            size_t add = b.len[i] + 11;
            if (k && bytes + add > limit) break;
            if (add > limit) {
                cf_err pe;
                cf_err_set(&pe, CF_ERR_SCHEMA, "row of %zu bytes exceeds the AppendRows request limit of %zu bytes",
                           b.len[i], q->max_bytes);
                cf_err_hint(&pe, "BigQuery takes requests under 10 MB; such a row cannot be written");
                rc = reject(&b, i, &pe, err);
                if (rc) break;
                continue;
            }
            ids[k++] = i, bytes += add;
        }
        if (k) todo_push(&b, new_req(&b, ids, k, 0), false);
        else free(ids);
    }
    b.wire = cf_xmalloc((size_t)q->inflight * sizeof *b.wire);
    cf_buf scratch = CF_BUF_INIT, resp = CF_BUF_INIT;
    size_t acked = 0, requests = 0;
    int stream_failures = 0;
    bool first_on_wire = false;
    while (!rc && (b.todo_n || b.wire_n)) {
        int code = CF_GRPC_OK;
        cf_err se;
        cf_err_clear(&se);
        /* fill the pipeline */
        cf_code sr = CF_OK;
        /* the first request of a call (it names the stream and carries the
         * schema) is answered before more follow: a refused first request
         * must not take the requests behind it down too */
        while (b.todo_n && b.wire_n < (size_t)q->inflight && !(b.wire_n && first_on_wire)) {
            sr = ensure_stream(q, x, &code, &se);
            if (sr) break;
            size_t r = todo_pop(&b);
            bool first = x->schema_due;
            sr = send_req(q, x, &b, r, &scratch, &code, &se);
            if (sr) {
                todo_push(&b, r, true);
                break;
            }
            b.wire[b.wire_n++] = r;
            if (first) first_on_wire = true;
            requests++;
        }
        if (!sr && b.wire_n) {
            sr = cf_bq_stream_recv(x->stream, q->timeout_ms, &resp, &code, &se);
            if (sr == CF_ERR_AGAIN) code = CF_GRPC_DEADLINE_EXCEEDED;
        }
        if (sr) { /* the stream broke (or could not start): resend what it did not answer */
            if (sr != CF_ERR_TRANSPORT && sr != CF_ERR_AGAIN) {
                if (err) *err = se;
                rc = sr;
                break;
            }
            cf_bq_stream_close(x->stream);
            unsend_all(&b);
            first_on_wire = false;
            bool retry = cf_grpc_code_retryable(code) || code == CF_GRPC_UNAUTHENTICATED || code == CF_GRPC_OK;
            if (!retry || ++stream_failures > q->retries) {
                if (err) *err = se;
                cf_err_where(err, "%s", x->path);
                if (retry) cf_err_hint(err, "gave up after %d retries (bigQueryRetry)", q->retries);
                rc = CF_ERR_TARGET;
                if (err) err->code = rc;
                break;
            }
            int64_t w = backoff_ms(q, stream_failures);
            CF_WARN(LOG, "%s: %s%s%s; retrying in %" PRId64 " ms", x->path, se.message, se.detail[0] ? ": " : "",
                    se.detail, w);
            sleep_ms(w);
            continue;
        }
        if (!b.wire_n) continue;
        size_t r = b.wire[0];
        memmove(b.wire, b.wire + 1, --b.wire_n * sizeof *b.wire);
        first_on_wire = false;
        req *rq = &b.reqs[r];
        cf_bq_append_resp ar;
        cf_err de;
        cf_err_clear(&de);
        if (cf_bq_append_resp_decode((const uint8_t *)resp.data, resp.len, &ar, &de)) {
            cf_bq_append_resp_free(&ar);
            if (err) *err = de;
            cf_err_where(err, "%s", x->path);
            rc = CF_ERR_TARGET;
            break;
        }
        /* after a refusal the next request names the stream and carries the
         * schema again: what a refused first request set up is not to be
         * relied on */
        if (ar.n_row_errors || ar.has_error) x->schema_due = true;
        if (ar.n_row_errors) { /* none appended: reject the named rows, resend the rest */
            bool *bad = cf_xcalloc(rq->n, sizeof *bad);
            for (size_t i = 0; i < ar.n_row_errors && !rc; i++) {
                int64_t ix = ar.row_errors[i].index;
                if (ix < 0 || (size_t)ix >= rq->n || bad[ix]) continue;
                bad[ix] = true;
                cf_err pe;
                cf_err_set(&pe, CF_ERR_SCHEMA, "BigQuery refused the row: %s",
                           ar.row_errors[i].message ? ar.row_errors[i].message : "(no message)");
                cf_err_detail(&pe, "AppendRows row error code %d in table %s", ar.row_errors[i].code, x->path);
                rc = reject(&b, rq->ids[ix], &pe, err);
            }
            size_t *ids = cf_xmalloc((rq->n ? rq->n : 1) * sizeof *ids), k = 0;
            for (size_t i = 0; i < rq->n; i++)
                if (!bad[i]) ids[k++] = rq->ids[i];
            free(bad);
            if (k && !rc) todo_push(&b, new_req(&b, ids, k, rq->attempts), true);
            else free(ids);
        } else if (ar.has_error) {
            char det[512];
            snprintf(det, sizeof det, "%s", ar.message ? ar.message : "");
            if (cf_grpc_code_retryable(ar.code) && rq->attempts < q->retries) {
                rq->attempts++;
                int64_t w = backoff_ms(q, rq->attempts);
                CF_WARN(LOG, "%s: AppendRows %s: %s; request of %zu rows again in %" PRId64 " ms", x->path,
                        cf_grpc_code_name(ar.code), det, rq->n, w);
                todo_push(&b, r, true);
                sleep_ms(w);
            } else {
                cf_err_set(err, CF_ERR_TARGET, "BigQuery refused an AppendRows request to %s: %s: %s", x->path,
                           cf_grpc_code_name(ar.code), det);
                if (ar.storage_code) cf_err_detail(err, "StorageError code %d", ar.storage_code);
                if (cf_grpc_code_retryable(ar.code))
                    cf_err_hint(err, "gave up after %d retries (bigQueryRetry)", q->retries);
                else if (ar.code == CF_GRPC_INVALID_ARGUMENT)
                    cf_err_hint(err, "the writer schema or the rows do not match the table; check the table's "
                                     "columns and primary key");
                rc = CF_ERR_TARGET;
            }
        } else {
            for (size_t i = 0; i < rq->n; i++) b.done[rq->ids[i]] = true;
            acked += rq->n;
            stream_failures = 0;
        }
        cf_bq_append_resp_free(&ar);
    }
    if (!rc) {
        for (size_t i = 0; i < n; i++)
            if (!b.done[i]) {
                rc = cf_err_set(err, CF_ERR_INTERNAL, "BigQuery apply left change %zu of %zu unacknowledged", i, n);
                break;
            }
    } else {
        cf_bq_stream_close(x->stream); /* answers still due belong to this failed apply */
    }
    CF_DEBUG(LOG, "%s: %zu changes, %zu acknowledged in %zu requests, %zu rejected", x->path, n, acked, requests,
             b.rejected);
    for (size_t i = 0; i < b.n_reqs; i++) free(b.reqs[i].ids);
    free(b.reqs), free(b.todo), free(b.wire), free(b.off), free(b.len), free(b.done);
    cf_buf_free(&b.rows), cf_buf_free(&scratch), cf_buf_free(&resp);
    return rc;
}

const cf_sink_target cf_sink_target_bigquery = {
    .name = "bigquery",
    .open = bq_open,
    .ensure_table = bq_ensure_table,
    .begin = bq_begin,
    .apply = bq_apply,
    .stage = NULL,        /* BigQuery applies max_staleness itself */
    .apply_staged = NULL,
    .purge_tombstones = NULL, /* and keeps deletes' retention itself */
    .commit = bq_commit,
    .rollback = bq_rollback,
    .free_table_state = bq_free_table_state,
    .close = bq_close,
    .state_get = bq_state_get,
    .state_put = bq_state_put,
};
