/*
 * pg_target.c - the PostgreSQL target, through libpq.
 *
 * One flush = one transaction. Per table: the compacted changes are COPied
 * (text format) into a temporary staging table, then three set-based
 * statements apply them with the sink's rules (include/cdcflow/sink.h):
 *   INSERT INTO t SELECT .. FROM batch WHERE op=UPSERT AND no newer tombstone
 *     ON CONFLICT (key) DO UPDATE SET .. WHERE EXCLUDED.seq >= t.seq
 *   DELETE FROM t USING batch WHERE op=DELETE AND t.seq <= batch.seq
 *   INSERT INTO tombstones SELECT .. WHERE op=DELETE AND the row is gone
 *     ON CONFLICT (key) DO UPDATE .. WHERE EXCLUDED.seq >= tombstone.seq
 * Sequence columns are text COLLATE "C": fixed-width hex, so byte order is
 * BigQuery's order whatever the database's collation.
 *
 * Changes carrying Debezium's unavailable-value placeholder go one by one
 * (an UPDATE that leaves those columns alone); they are rare.
 *
 * Positions (cf_sink_put_at): "_cdcflow_positions" in the tables' schema,
 * written in the flush's transaction.
 *
 * DDL (create, add columns, check the key) runs in its own transaction under
 * an advisory lock when mediateConcurrentSchemaUpdates is on, so several
 * tasks evolving one table never race.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/sink.h"

#define SEQ_COL "_change_sequence_number"

typedef struct pg {
    PGconn *c;
    const cf_sink_options *o;
    char *schema;
    unsigned gen; /* bumped on rollback: temporary tables may be gone */
    bool state_ready; /* "_cdc_cassandra_state" exists */
} pg;

typedef struct pg_tbl {
    size_t n_cols;
    unsigned gen;
    char *batch; /* temp table name */
    char *q_ups, *q_del, *q_tomb;
} pg_tbl;

static cf_code pg_fail(pg *q, PGresult *r, cf_err *err, const char *what, const char *sql) {
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(q->c);
    cf_err_set(err, CF_ERR_TARGET, "PostgreSQL: %s failed", what);
    cf_err_detail(err, "%s%s%s", state ? state : "", state ? ": " : "", msg && *msg ? msg : PQerrorMessage(q->c));
    size_t l = strlen(err->detail);
    while (l && (err->detail[l - 1] == '\n' || err->detail[l - 1] == ' ')) err->detail[--l] = 0;
    if (sql) cf_err_hint(err, "statement: %.220s", sql);
    if (r) PQclear(r);
    return CF_ERR_TARGET;
}

static cf_code run(pg *q, const char *sql, cf_err *err) {
    PGresult *r = PQexec(q->c, sql);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) return pg_fail(q, r, err, "statement", sql);
    PQclear(r);
    return CF_OK;
}

static void qid(cf_buf *b, const char *name) {
    cf_buf_append_byte(b, '"');
    for (const char *p = name; *p; p++) {
        if (*p == '"') cf_buf_append_byte(b, '"');
        cf_buf_append_byte(b, (uint8_t)*p);
    }
    cf_buf_append_byte(b, '"');
}

/* Names of helper tables: PostgreSQL cuts identifiers at 63 bytes, so long
 * ones get a hash suffix instead of colliding. */
static char *aux_name(const char *prefix, const char *table) {
    size_t n = strlen(prefix) + strlen(table);
    char *r = cf_xmalloc(n + 1);
    if (n <= 63) {
        sprintf(r, "%s%s", prefix, table);
        return r;
    }
    uint32_t h = 2166136261u;
    for (const char *p = table; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    size_t keep = 63 - strlen(prefix) - 9;
    snprintf(r, n + 1, "%s%.*s_%08x", prefix, (int)keep, table, h);
    return r;
}

static void qtab(cf_buf *b, pg *q, const char *prefix, const char *table) {
    qid(b, q->schema);
    cf_buf_append_byte(b, '.');
    char *n = aux_name(prefix, table);
    qid(b, n);
    free(n);
}

static const char *pgtype(cf_col_type t) {
    switch (t) {
    case CF_COL_BOOL: return "boolean";
    case CF_COL_INT16: return "smallint";
    case CF_COL_INT32: return "integer";
    case CF_COL_INT64: return "bigint";
    case CF_COL_FLOAT32: return "real";
    case CF_COL_FLOAT64: return "double precision";
    case CF_COL_TEXT: return "text";
    case CF_COL_BYTES: return "bytea";
    case CF_COL_NUMERIC: return "numeric";
    case CF_COL_DATE: return "date";
    case CF_COL_TIME: return "time";
    case CF_COL_TIMESTAMP: return "timestamp";
    case CF_COL_JSON: return "jsonb";
    }
    return "text";
}

static const char *udt(cf_col_type t) {
    static const char *const u[] = {"bool", "int2", "int4", "int8", "float4", "float8", "text",
                                    "bytea", "numeric", "date", "time", "timestamp", "jsonb"};
    return u[t];
}

/* May an existing column of udt `have` take values of our type? */
static bool udt_ok(const char *have, cf_col_type t) {
    if (strcmp(have, udt(t)) == 0) return true;
    int hi = !strcmp(have, "int2") ? 1 : !strcmp(have, "int4") ? 2 : !strcmp(have, "int8") ? 3 : 0;
    int ti = t == CF_COL_INT16 ? 1 : t == CF_COL_INT32 ? 2 : t == CF_COL_INT64 ? 3 : 0;
    if (hi && ti) return ti <= hi;
    if (!strcmp(have, "numeric") && ti) return true;
    if (!strcmp(have, "float8") && t == CF_COL_FLOAT32) return true;
    if ((!strcmp(have, "varchar") || !strcmp(have, "bpchar")) && t == CF_COL_TEXT) return true;
    if (!strcmp(have, "json") && t == CF_COL_JSON) return true;
    if (!strcmp(have, "timestamptz") && t == CF_COL_TIMESTAMP) return true;
    return false;
}

static void pgt_close(void *state);

static cf_code pgt_open(const cf_sink_options *o, void **state, cf_err *err) {
    const char *ci = o->pg_conninfo && *o->pg_conninfo ? o->pg_conninfo : "";
    if (strncmp(ci, "jdbc:", 5) == 0) ci += 5; /* Debezium JDBC sink's connection.url */
    const char *keys[4] = {"dbname", NULL, NULL, NULL};
    const char *vals[4] = {ci, NULL, NULL, NULL};
    int k = 1;
    if (o->pg_user && *o->pg_user) keys[k] = "user", vals[k++] = o->pg_user;
    if (o->pg_password && *o->pg_password) keys[k] = "password", vals[k++] = o->pg_password;
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        cf_err_set(err, CF_ERR_TARGET, "cannot connect to PostgreSQL");
        cf_err_detail(err, "%s", c ? PQerrorMessage(c) : "out of memory");
        size_t l = strlen(err->detail);
        while (l && err->detail[l - 1] == '\n') err->detail[--l] = 0;
        cf_err_hint(err, "check connection.url (a libpq conninfo or postgresql:// URL), connection.username and "
                         "connection.password");
        PQfinish(c);
        return CF_ERR_TARGET;
    }
    pg *q = cf_xcalloc(1, sizeof *q);
    q->c = c;
    q->o = o;
    q->schema = cf_xstrdup(o->pg_schema && *o->pg_schema ? o->pg_schema : "public");
    PGresult *r = PQexec(c, "SET client_min_messages = warning");
    PQclear(r);
    if (o->consumer) {
        /* concurrent CREATE TABLE IF NOT EXISTS can fail on PostgreSQL's
         * catalog (a unique violation): under the DDL lock, as ensure_table */
        cf_buf b = CF_BUF_INIT;
        cf_buf_append_str(&b, "CREATE TABLE IF NOT EXISTS ");
        qtab(&b, q, "_cdcflow_positions", "");
        cf_buf_append_str(&b, " (consumer text NOT NULL, stream text NOT NULL, \"partition\" integer NOT NULL, "
                              "next_offset bigint NOT NULL, source_offset text, PRIMARY KEY (consumer, stream, "
                              "\"partition\"))");
        cf_code rc = run(q, "BEGIN", err);
        if (!rc) rc = run(q, "SELECT pg_advisory_xact_lock(hashtext('cdcflow-sink-ddl'))", err);
        if (!rc) rc = run(q, b.data, err);
        if (!rc) rc = run(q, "COMMIT", err);
        else PQclear(PQexec(c, "ROLLBACK"));
        cf_buf_free(&b);
        if (rc) {
            pgt_close(q);
            return rc;
        }
    }
    *state = q;
    return CF_OK;
}

static void pgt_close(void *state) {
    pg *q = state;
    PQfinish(q->c);
    free(q->schema);
    free(q);
}

static void tbl_clear(pg_tbl *x) {
    free(x->batch), free(x->q_ups), free(x->q_del), free(x->q_tomb);
    x->batch = x->q_ups = x->q_del = x->q_tomb = NULL;
    x->n_cols = 0;
}

static void pgt_free_table_state(void *state, cf_sink_table *t) {
    (void)state;
    pg_tbl *x = t->target_state;
    if (!x) return;
    tbl_clear(x);
    free(x);
    t->target_state = NULL;
}

/* ---------------- DDL ---------------- */

static void key_list(cf_buf *b, const cf_sink_table *t, const char *prefix) {
    for (size_t k = 0; k < t->n_key; k++) {
        if (k) cf_buf_append_str(b, ", ");
        if (prefix) cf_buf_append_str(b, prefix);
        qid(b, t->cols[k].name);
    }
}

static void key_match(cf_buf *b, const cf_sink_table *t, const char *a, const char *c) {
    for (size_t k = 0; k < t->n_key; k++) {
        if (k) cf_buf_append_str(b, " AND ");
        cf_buf_printf(b, "%s.", a);
        qid(b, t->cols[k].name);
        cf_buf_printf(b, " = %s.", c);
        qid(b, t->cols[k].name);
    }
}

static cf_code has_key(pg *q, const cf_sink_table *t, bool *ok, cf_err *err) {
    cf_buf b = CF_BUF_INIT;
    qid(&b, q->schema);
    cf_buf_append_byte(&b, '.');
    qid(&b, t->name);
    const char *sql = "SELECT i.indexrelid, a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                      "AND a.attnum = ANY (i.indkey) WHERE i.indrelid = $1::regclass AND (i.indisprimary OR "
                      "(i.indisunique AND i.indpred IS NULL)) AND i.indnkeyatts = $2 ORDER BY 1";
    char nk[16];
    snprintf(nk, sizeof nk, "%zu", t->n_key);
    const char *params[2] = {b.data, nk};
    PGresult *r = PQexecParams(q->c, sql, 2, NULL, params, NULL, NULL, 0);
    cf_buf_free(&b);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) return pg_fail(q, r, err, "reading the table's indexes", sql);
    *ok = false;
    int n = PQntuples(r);
    for (int i = 0; i < n && !*ok;) {
        const char *idx = PQgetvalue(r, i, 0);
        size_t hit = 0;
        int j = i;
        for (; j < n && strcmp(PQgetvalue(r, j, 0), idx) == 0; j++)
            for (size_t k = 0; k < t->n_key; k++)
                if (strcmp(PQgetvalue(r, j, 1), t->cols[k].name) == 0) hit++;
        if (hit == t->n_key) *ok = true;
        i = j;
    }
    PQclear(r);
    return CF_OK;
}

static cf_code ensure_staging(pg *q, const cf_sink_table *t, cf_err *err);

static cf_code ensure_locked(pg *q, cf_sink_table *t, cf_err *err) {
    cf_buf b = CF_BUF_INIT;
    cf_code rc;
    cf_buf_append_str(&b, "CREATE TABLE IF NOT EXISTS ");
    qtab(&b, q, "_cdc_tables", "");
    cf_buf_append_str(&b, " (table_name text PRIMARY KEY, topic text, seq_sections integer NOT NULL, "
                          "key_columns text NOT NULL)");
    rc = run(q, b.data, err);
    if (rc) goto out;
    const char *sql = "SELECT column_name, udt_name FROM information_schema.columns WHERE table_schema = $1 AND "
                      "table_name = $2";
    const char *params[2] = {q->schema, t->name};
    PGresult *r = PQexecParams(q->c, sql, 2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = pg_fail(q, r, err, "reading the table's columns", sql);
        goto out;
    }
    int n = PQntuples(r);
    if (n == 0) {
        PQclear(r);
        if (!q->o->auto_create_tables) {
            rc = cf_err_set(err, CF_ERR_TARGET, "table %s.%s does not exist", q->schema, t->name);
            cf_err_hint(err, "set autoCreateTables=true, or create it with a primary key on the key's columns");
            goto out;
        }
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "CREATE TABLE ");
        qtab(&b, q, "", t->name);
        cf_buf_append_str(&b, " (");
        for (size_t i = 0; i < t->n_cols; i++) {
            qid(&b, t->cols[i].name);
            cf_buf_printf(&b, " %s%s, ", pgtype(t->cols[i].type), t->cols[i].key ? " NOT NULL" : "");
        }
        cf_buf_append_str(&b, "\"" SEQ_COL "\" text COLLATE \"C\" NOT NULL, PRIMARY KEY (");
        key_list(&b, t, NULL);
        cf_buf_append_str(&b, "))");
        rc = run(q, b.data, err);
        if (rc) goto out;
        CF_INFO("sink", "created table %s.%s for topic %s (%zu columns, key of %zu)", q->schema, t->name, t->topic,
                t->n_cols, t->n_key);
    } else {
        bool ok = false;
        rc = has_key(q, t, &ok, err);
        if (rc) {
            PQclear(r);
            goto out;
        }
        if (!ok) {
            cf_buf_reset(&b);
            cf_buf_append_str(&b, "ALTER TABLE ");
            qtab(&b, q, "", t->name);
            cf_buf_append_str(&b, " ADD PRIMARY KEY (");
            key_list(&b, t, NULL);
            cf_buf_append_str(&b, ");");
            rc = cf_err_set(err, CF_ERR_TARGET, "table %s.%s has no primary key on the record key's columns",
                            q->schema, t->name);
            cf_err_detail(err, "CDC applies changes by primary key; without one upserts would duplicate rows");
            cf_err_hint(err, "run: %s", b.data);
            PQclear(r);
            goto out;
        }
        bool have_seq = false;
        for (int i = 0; i < n; i++)
            if (strcmp(PQgetvalue(r, i, 0), SEQ_COL) == 0) have_seq = true;
        for (size_t c = 0; c < t->n_cols && !rc; c++) {
            int found = -1;
            for (int i = 0; i < n; i++)
                if (strcmp(PQgetvalue(r, i, 0), t->cols[c].name) == 0) found = i;
            if (found >= 0) {
                if (!udt_ok(PQgetvalue(r, found, 1), t->cols[c].type)) {
                    rc = cf_err_set(err, CF_ERR_SCHEMA,
                                    "incompatible schema change: column \"%s\" of %s.%s is %s, the record's field "
                                    "needs %s", t->cols[c].name, q->schema, t->name, PQgetvalue(r, found, 1),
                                    pgtype(t->cols[c].type));
                    cf_err_hint(err, "migrate the column by hand or route the topic to a new table");
                }
                continue;
            }
            if (!q->o->allow_new_fields) {
                rc = cf_err_set(err, CF_ERR_SCHEMA, "field \"%s\" has no column in table %s.%s", t->cols[c].name,
                                q->schema, t->name);
                cf_err_hint(err, "set allowNewBigQueryFields=true to add columns, or drop the field (ReplaceField)");
                break;
            }
            cf_buf_reset(&b);
            cf_buf_append_str(&b, "ALTER TABLE ");
            qtab(&b, q, "", t->name);
            cf_buf_append_str(&b, " ADD COLUMN IF NOT EXISTS ");
            qid(&b, t->cols[c].name);
            cf_buf_printf(&b, " %s", pgtype(t->cols[c].type));
            rc = run(q, b.data, err);
            if (!rc) CF_INFO("sink", "added column \"%s\" to %s.%s", t->cols[c].name, q->schema, t->name);
        }
        PQclear(r);
        if (!rc && !have_seq) {
            cf_buf_reset(&b);
            cf_buf_append_str(&b, "ALTER TABLE ");
            qtab(&b, q, "", t->name);
            cf_buf_append_str(&b, " ADD COLUMN IF NOT EXISTS \"" SEQ_COL "\" text COLLATE \"C\" NOT NULL DEFAULT ''");
            rc = run(q, b.data, err);
        }
        if (rc) goto out;
    }
    cf_buf_reset(&b);
    cf_buf_append_str(&b, "CREATE TABLE IF NOT EXISTS ");
    qtab(&b, q, "_cdc_tombstones_", t->name);
    cf_buf_append_str(&b, " (");
    for (size_t k = 0; k < t->n_key; k++) {
        qid(&b, t->cols[k].name);
        cf_buf_printf(&b, " %s NOT NULL, ", pgtype(t->cols[k].type));
    }
    cf_buf_append_str(&b, "\"" SEQ_COL "\" text COLLATE \"C\" NOT NULL, _deleted_at bigint NOT NULL, PRIMARY KEY (");
    key_list(&b, t, NULL);
    cf_buf_append_str(&b, "))");
    rc = run(q, b.data, err);
    if (rc) goto out;
    {
        cf_buf kb = CF_BUF_INIT;
        key_list(&kb, t, NULL);
        char secs[8];
        snprintf(secs, sizeof secs, "%u", t->seq_sections);
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "INSERT INTO ");
        qtab(&b, q, "_cdc_tables", "");
        cf_buf_append_str(&b, " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING");
        const char *p4[4] = {t->name, t->topic, secs, kb.data};
        r = PQexecParams(q->c, b.data, 4, NULL, p4, NULL, NULL, 0);
        cf_buf_free(&kb);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = pg_fail(q, r, err, "recording the table", b.data);
            goto out;
        }
        PQclear(r);
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "SELECT seq_sections FROM ");
        qtab(&b, q, "_cdc_tables", "");
        cf_buf_append_str(&b, " WHERE table_name = $1");
        r = PQexecParams(q->c, b.data, 1, NULL, p4, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            rc = pg_fail(q, r, err, "reading the table's record", b.data);
            goto out;
        }
        if (PQntuples(r) == 1 && atoi(PQgetvalue(r, 0, 0)) != t->seq_sections) {
            rc = cf_err_set(err, CF_ERR_CONFIG,
                            "table %s.%s holds change sequence numbers of %s section(s); this connector writes %u",
                            q->schema, t->name, PQgetvalue(r, 0, 0), t->seq_sections);
            cf_err_detail(err, "mixing sequence formats in one table orders changes unpredictably");
            cf_err_hint(err, "keep cdcChangeSequenceNumberField as it was for this table, or start a new table");
        }
        PQclear(r);
    }
    if (!rc && q->o->max_staleness_s > 0) rc = ensure_staging(q, t, err);
out:
    cf_buf_free(&b);
    return rc;
}

static cf_code pgt_ensure_table(void *state, cf_sink_table *t, cf_err *err) {
    pg *q = state;
    if (strlen(t->name) > 63) {
        cf_err_set(err, CF_ERR_CONFIG, "table name \"%s\" is longer than PostgreSQL's 63 bytes", t->name);
        cf_err_hint(err, "shorten the topic's table name with RegexRouter");
        return CF_ERR_CONFIG;
    }
    cf_code rc = run(q, "BEGIN", err);
    if (rc) return rc;
    if (q->o->mediate_schema_updates) rc = run(q, "SELECT pg_advisory_xact_lock(hashtext('cdcflow-sink-ddl'))", err);
    if (!rc) rc = ensure_locked(q, t, err);
    if (rc) {
        PQclear(PQexec(q->c, "ROLLBACK"));
        q->gen++;
        return rc;
    }
    rc = run(q, "COMMIT", err);
    if (t->target_state) tbl_clear(t->target_state);
    return rc;
}

/* ---------------- DML ---------------- */

static cf_code prepare_table(pg *q, cf_sink_table *t, cf_err *err) {
    pg_tbl *x = t->target_state;
    if (!x) x = t->target_state = cf_xcalloc(1, sizeof *x);
    if (x->q_ups && x->n_cols == t->n_cols && x->gen == q->gen) return CF_OK;
    tbl_clear(x);
    char *bn = aux_name("_cdc_batch_", t->name);
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "DROP TABLE IF EXISTS pg_temp.");
    qid(&b, bn);
    cf_buf_append_str(&b, "; CREATE TEMP TABLE ");
    qid(&b, bn);
    cf_buf_append_str(&b, " (_op smallint NOT NULL, _seq text COLLATE \"C\" NOT NULL");
    for (size_t i = 0; i < t->n_cols; i++) {
        cf_buf_append_str(&b, ", ");
        qid(&b, t->cols[i].name);
        cf_buf_printf(&b, " %s", pgtype(t->cols[i].type));
    }
    cf_buf_append_str(&b, ") ON COMMIT DELETE ROWS");
    cf_code rc = run(q, b.data, err);
    if (rc) {
        free(bn);
        cf_buf_free(&b);
        return rc;
    }
    /* upsert */
    cf_buf_reset(&b);
    cf_buf_append_str(&b, "INSERT INTO ");
    qtab(&b, q, "", t->name);
    cf_buf_append_str(&b, " AS t (");
    for (size_t i = 0; i < t->n_cols; i++) qid(&b, t->cols[i].name), cf_buf_append_str(&b, ", ");
    cf_buf_append_str(&b, "\"" SEQ_COL "\") SELECT ");
    for (size_t i = 0; i < t->n_cols; i++) cf_buf_append_str(&b, "x."), qid(&b, t->cols[i].name), cf_buf_append_str(&b, ", ");
    cf_buf_append_str(&b, "x._seq FROM pg_temp.");
    qid(&b, bn);
    cf_buf_append_str(&b, " x WHERE x._op = 0 AND NOT EXISTS (SELECT 1 FROM ");
    qtab(&b, q, "_cdc_tombstones_", t->name);
    cf_buf_append_str(&b, " y WHERE ");
    key_match(&b, t, "y", "x");
    cf_buf_append_str(&b, " AND y.\"" SEQ_COL "\" > x._seq) ON CONFLICT (");
    key_list(&b, t, NULL);
    cf_buf_append_str(&b, ") DO UPDATE SET ");
    for (size_t i = t->n_key; i < t->n_cols; i++) {
        qid(&b, t->cols[i].name);
        cf_buf_append_str(&b, " = EXCLUDED.");
        qid(&b, t->cols[i].name);
        cf_buf_append_str(&b, ", ");
    }
    cf_buf_append_str(&b, "\"" SEQ_COL "\" = EXCLUDED.\"" SEQ_COL "\" WHERE EXCLUDED.\"" SEQ_COL "\" >= t.\"" SEQ_COL "\"");
    x->q_ups = cf_xstrdup(b.data);
    /* delete */
    cf_buf_reset(&b);
    cf_buf_append_str(&b, "DELETE FROM ");
    qtab(&b, q, "", t->name);
    cf_buf_append_str(&b, " AS t USING pg_temp.");
    qid(&b, bn);
    cf_buf_append_str(&b, " x WHERE x._op = 1 AND ");
    key_match(&b, t, "t", "x");
    cf_buf_append_str(&b, " AND t.\"" SEQ_COL "\" <= x._seq");
    x->q_del = cf_xstrdup(b.data);
    /* tombstones ($1 = now) */
    cf_buf_reset(&b);
    cf_buf_append_str(&b, "INSERT INTO ");
    qtab(&b, q, "_cdc_tombstones_", t->name);
    cf_buf_append_str(&b, " AS y (");
    key_list(&b, t, NULL);
    cf_buf_append_str(&b, ", \"" SEQ_COL "\", _deleted_at) SELECT ");
    key_list(&b, t, "x.");
    cf_buf_append_str(&b, ", x._seq, $1 FROM pg_temp.");
    qid(&b, bn);
    cf_buf_append_str(&b, " x WHERE x._op = 1 AND NOT EXISTS (SELECT 1 FROM ");
    qtab(&b, q, "", t->name);
    cf_buf_append_str(&b, " t WHERE ");
    key_match(&b, t, "t", "x");
    cf_buf_append_str(&b, ") ON CONFLICT (");
    key_list(&b, t, NULL);
    cf_buf_append_str(&b, ") DO UPDATE SET \"" SEQ_COL "\" = EXCLUDED.\"" SEQ_COL
                          "\", _deleted_at = EXCLUDED._deleted_at WHERE EXCLUDED.\"" SEQ_COL "\" >= y.\"" SEQ_COL "\"");
    x->q_tomb = cf_xstrdup(b.data);
    x->batch = bn;
    x->n_cols = t->n_cols;
    x->gen = q->gen;
    cf_buf_free(&b);
    return CF_OK;
}

/* A cell as COPY text (or as a plain text parameter when copy is false). */
static void cell_text(cf_buf *b, const cf_cell *c, cf_col_type type, bool copy) {
    switch (c->kind) {
    case CF_CELL_INT:
        if (type == CF_COL_BOOL) cf_buf_append_str(b, c->u.i ? "t" : "f");
        else cf_buf_printf(b, "%" PRId64, c->u.i);
        return;
    case CF_CELL_REAL:
        if (isnan(c->u.f)) cf_buf_append_str(b, "NaN");
        else if (isinf(c->u.f)) cf_buf_append_str(b, c->u.f > 0 ? "Infinity" : "-Infinity");
        else cf_buf_printf(b, "%.17g", c->u.f);
        return;
    case CF_CELL_TEXT:
        if (!copy) {
            cf_buf_append(b, c->u.p, c->len);
            return;
        }
        for (uint32_t i = 0; i < c->len; i++) {
            char ch = c->u.p[i];
            switch (ch) {
            case '\\': cf_buf_append_str(b, "\\\\"); break;
            case '\n': cf_buf_append_str(b, "\\n"); break;
            case '\r': cf_buf_append_str(b, "\\r"); break;
            case '\t': cf_buf_append_str(b, "\\t"); break;
            default: cf_buf_append_byte(b, (uint8_t)ch);
            }
        }
        return;
    case CF_CELL_BLOB: {
        static const char hex[] = "0123456789abcdef";
        cf_buf_append_str(b, copy ? "\\\\x" : "\\x");
        for (uint32_t i = 0; i < c->len; i++) {
            uint8_t v = (uint8_t)c->u.p[i];
            cf_buf_append_byte(b, hex[v >> 4]);
            cf_buf_append_byte(b, hex[v & 15]);
        }
        return;
    }
    default: cf_buf_append_str(b, "\\N"); return;
    }
}

static cf_code exec_tuples(pg *q, const char *sql, int np, const char *const *params, cf_err *err) {
    PGresult *r = np ? PQexecParams(q->c, sql, np, NULL, params, NULL, NULL, 0) : PQexec(q->c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        return pg_fail(q, r, err, "applying changes", sql);
    PQclear(r);
    return CF_OK;
}

/* One change with placeholder cells: insert, or update all but those. */
static cf_code apply_keep(pg *q, cf_sink_table *t, const cf_change *c, cf_err *err) {
    cf_buf sql = CF_BUF_INIT;
    size_t n = t->n_cols;
    cf_buf_append_str(&sql, "INSERT INTO ");
    qtab(&sql, q, "", t->name);
    cf_buf_append_str(&sql, " AS t (");
    for (size_t i = 0; i < n; i++) qid(&sql, t->cols[i].name), cf_buf_append_str(&sql, ", ");
    cf_buf_append_str(&sql, "\"" SEQ_COL "\") SELECT ");
    for (size_t i = 0; i <= n; i++)
        cf_buf_printf(&sql, "%s$%zu::%s", i ? ", " : "", i + 1, i < n ? pgtype(t->cols[i].type) : "text");
    cf_buf_append_str(&sql, " WHERE NOT EXISTS (SELECT 1 FROM ");
    qtab(&sql, q, "_cdc_tombstones_", t->name);
    cf_buf_append_str(&sql, " y WHERE ");
    for (size_t k = 0; k < t->n_key; k++) {
        cf_buf_append_str(&sql, "y.");
        qid(&sql, t->cols[k].name);
        cf_buf_printf(&sql, " = $%zu::%s AND ", k + 1, pgtype(t->cols[k].type));
    }
    cf_buf_printf(&sql, "y.\"" SEQ_COL "\" > $%zu) ON CONFLICT (", n + 1);
    key_list(&sql, t, NULL);
    cf_buf_append_str(&sql, ") DO UPDATE SET ");
    for (size_t i = t->n_key; i < n; i++) {
        if (i < c->n_cells && c->cells[i].kind == CF_CELL_KEEP) continue;
        qid(&sql, t->cols[i].name);
        cf_buf_append_str(&sql, " = EXCLUDED.");
        qid(&sql, t->cols[i].name);
        cf_buf_append_str(&sql, ", ");
    }
    cf_buf_append_str(&sql, "\"" SEQ_COL "\" = EXCLUDED.\"" SEQ_COL "\" WHERE EXCLUDED.\"" SEQ_COL "\" >= t.\"" SEQ_COL "\"");
    cf_buf *vals = cf_xcalloc(n, sizeof *vals);
    const char **params = cf_xcalloc(n + 1, sizeof *params);
    static const cf_cell null_cell = {0};
    for (size_t i = 0; i < n; i++) {
        const cf_cell *x = i < c->n_cells ? &c->cells[i] : &null_cell;
        if (x->kind == CF_CELL_NULL || x->kind == CF_CELL_KEEP) continue;
        cell_text(&vals[i], x, t->cols[i].type, false);
        params[i] = vals[i].data ? vals[i].data : "";
    }
    params[n] = c->seq_text;
    cf_code rc = exec_tuples(q, sql.data, (int)n + 1, params, err);
    for (size_t i = 0; i < n; i++) cf_buf_free(&vals[i]);
    free(vals);
    free(params);
    cf_buf_free(&sql);
    return rc;
}

static cf_code pgt_apply(void *state, cf_sink_table *t, cf_change *const *changes, size_t n, cf_err *err) {
    pg *q = state;
    cf_code rc = prepare_table(q, t, err);
    if (rc) return rc;
    pg_tbl *x = t->target_state;
    cf_buf b = CF_BUF_INIT;
    /* Tasks applying to one table take turns (until commit): under READ
     * COMMITTED a concurrent delete's tombstone is invisible to another
     * task's upsert of the same key, which could bring the row back. */
    cf_buf_append_str(&b, "SELECT pg_advisory_xact_lock(hashtext($1))");
    char lockname[600];
    snprintf(lockname, sizeof lockname, "cdcflow-sink-apply:%s.%s", q->schema, t->name);
    const char *lp[1] = {lockname};
    rc = exec_tuples(q, b.data, 1, lp, err);
    if (rc) {
        cf_buf_free(&b);
        return rc;
    }
    cf_buf_reset(&b);
    cf_buf_append_str(&b, "COPY pg_temp.");
    qid(&b, x->batch);
    cf_buf_append_str(&b, " (_op, _seq");
    for (size_t i = 0; i < t->n_cols; i++) cf_buf_append_str(&b, ", "), qid(&b, t->cols[i].name);
    cf_buf_append_str(&b, ") FROM STDIN");
    PGresult *r = PQexec(q->c, b.data);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        rc = pg_fail(q, r, err, "starting COPY", b.data);
        cf_buf_free(&b);
        return rc;
    }
    PQclear(r);
    size_t ups = 0, dels = 0, keeps = 0;
    cf_buf_reset(&b);
    for (size_t i = 0; i < n; i++) {
        const cf_change *c = changes[i];
        if (c->has_keep) {
            keeps++;
            continue;
        }
        c->op == CF_CHANGE_UPSERT ? ups++ : dels++;
        cf_buf_printf(&b, "%d\t%s", c->op == CF_CHANGE_DELETE, c->seq_text);
        size_t m = c->op == CF_CHANGE_DELETE ? t->n_key : t->n_cols;
        for (size_t k = 0; k < t->n_cols; k++) {
            cf_buf_append_byte(&b, '\t');
            if (k < m && k < c->n_cells) cell_text(&b, &c->cells[k], t->cols[k].type, true);
            else cf_buf_append_str(&b, "\\N");
        }
        cf_buf_append_byte(&b, '\n');
        if (b.len > (1 << 20)) {
            if (PQputCopyData(q->c, b.data, (int)b.len) != 1) break;
            cf_buf_reset(&b);
        }
    }
    if (b.len) PQputCopyData(q->c, b.data, (int)b.len);
    cf_buf_free(&b);
    if (PQputCopyEnd(q->c, NULL) != 1) return pg_fail(q, NULL, err, "COPY into the batch table", NULL);
    r = PQgetResult(q->c);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        rc = pg_fail(q, r, err, "COPY into the batch table", NULL);
        while ((r = PQgetResult(q->c))) PQclear(r);
        return rc;
    }
    PQclear(r);
    while ((r = PQgetResult(q->c))) PQclear(r);
    if (ups) rc = exec_tuples(q, x->q_ups, 0, NULL, err);
    if (!rc && dels) rc = exec_tuples(q, x->q_del, 0, NULL, err);
    if (!rc && dels) {
        char now[24];
        snprintf(now, sizeof now, "%" PRId64, (int64_t)time(NULL));
        const char *p[1] = {now};
        rc = exec_tuples(q, x->q_tomb, 1, p, err);
    }
    for (size_t i = 0; i < n && !rc && keeps; i++)
        if (changes[i]->has_keep) rc = apply_keep(q, t, changes[i], err);
    if (!rc) { /* empty the batch table for the next table call in this transaction */
        cf_buf tb = CF_BUF_INIT;
        cf_buf_append_str(&tb, "TRUNCATE pg_temp.");
        qid(&tb, x->batch);
        rc = run(q, tb.data, err);
        cf_buf_free(&tb);
    }
    return rc;
}

static cf_code pgt_begin(void *state, cf_err *err) { return run(state, "BEGIN", err); }
static cf_code pgt_commit(void *state, cf_err *err) { return run(state, "COMMIT", err); }
static void pgt_rollback(void *state) {
    pg *q = state;
    PQclear(PQexec(q->c, "ROLLBACK"));
    q->gen++;
    q->state_ready = false; /* made in the rolled-back transaction, perhaps */
}

static cf_code pgt_purge(void *state, cf_sink_table *t, int64_t older_than, cf_err *err) {
    pg *q = state;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "DELETE FROM ");
    qtab(&b, q, "_cdc_tombstones_", t->name);
    cf_buf_printf(&b, " WHERE _deleted_at < %" PRId64, older_than);
    cf_code rc = run(q, b.data, err);
    cf_buf_free(&b);
    return rc;
}

/* ---------------- staleness ---------------- */

static cf_code ensure_staging(pg *q, const cf_sink_table *t, cf_err *err) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "CREATE TABLE IF NOT EXISTS ");
    qtab(&b, q, "_cdc_staged_", t->name);
    cf_buf_append_str(&b, " (_ing bigserial PRIMARY KEY, _op smallint NOT NULL, _seq text COLLATE \"C\" NOT NULL, "
                          "_keep text)");
    cf_code rc = run(q, b.data, err);
    for (size_t i = 0; !rc && i < t->n_cols; i++) {
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "ALTER TABLE ");
        qtab(&b, q, "_cdc_staged_", t->name);
        cf_buf_append_str(&b, " ADD COLUMN IF NOT EXISTS ");
        qid(&b, t->cols[i].name);
        cf_buf_printf(&b, " %s", pgtype(t->cols[i].type));
        rc = run(q, b.data, err);
    }
    if (!rc) {
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "DROP VIEW IF EXISTS ");
        qtab(&b, q, t->name, "_fresh");
        rc = run(q, b.data, err);
    }
    if (!rc) {
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "CREATE VIEW ");
        qtab(&b, q, t->name, "_fresh");
        cf_buf_append_str(&b, " AS WITH l AS (SELECT DISTINCT ON (");
        key_list(&b, t, "s.");
        cf_buf_append_str(&b, ") s.* FROM ");
        qtab(&b, q, "_cdc_staged_", t->name);
        cf_buf_append_str(&b, " s ORDER BY ");
        key_list(&b, t, "s.");
        cf_buf_append_str(&b, ", s._seq DESC, s._ing DESC) SELECT ");
        for (size_t i = 0; i < t->n_cols; i++) {
            if (i) cf_buf_append_str(&b, ", ");
            cf_buf_append_str(&b, "t."), qid(&b, t->cols[i].name);
        }
        cf_buf_append_str(&b, " FROM ");
        qtab(&b, q, "", t->name);
        cf_buf_append_str(&b, " t WHERE NOT EXISTS (SELECT 1 FROM l WHERE ");
        key_match(&b, t, "l", "t");
        cf_buf_append_str(&b, " AND l._seq >= t.\"" SEQ_COL "\") UNION ALL SELECT ");
        for (size_t i = 0; i < t->n_cols; i++) {
            if (i) cf_buf_append_str(&b, ", ");
            cf_buf_append_str(&b, "l."), qid(&b, t->cols[i].name);
        }
        cf_buf_append_str(&b, " FROM l WHERE l._op = 0 AND NOT EXISTS (SELECT 1 FROM ");
        qtab(&b, q, "", t->name);
        cf_buf_append_str(&b, " t WHERE ");
        key_match(&b, t, "t", "l");
        cf_buf_append_str(&b, " AND t.\"" SEQ_COL "\" > l._seq) AND NOT EXISTS (SELECT 1 FROM ");
        qtab(&b, q, "_cdc_tombstones_", t->name);
        cf_buf_append_str(&b, " y WHERE ");
        key_match(&b, t, "y", "l");
        cf_buf_append_str(&b, " AND y.\"" SEQ_COL "\" > l._seq)");
        rc = run(q, b.data, err);
    }
    cf_buf_free(&b);
    return rc;
}

static cf_code pgt_stage(void *state, cf_sink_table *t, cf_change *const *changes, size_t n, cf_err *err) {
    pg *q = state;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "COPY ");
    qtab(&b, q, "_cdc_staged_", t->name);
    cf_buf_append_str(&b, " (_op, _seq, _keep");
    for (size_t i = 0; i < t->n_cols; i++) cf_buf_append_str(&b, ", "), qid(&b, t->cols[i].name);
    cf_buf_append_str(&b, ") FROM STDIN");
    PGresult *r = PQexec(q->c, b.data);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        cf_code rc = pg_fail(q, r, err, "starting COPY into staging", b.data);
        cf_buf_free(&b);
        return rc;
    }
    PQclear(r);
    cf_buf_reset(&b);
    for (size_t i = 0; i < n; i++) {
        const cf_change *c = changes[i];
        cf_buf_printf(&b, "%d\t%s\t", c->op == CF_CHANGE_DELETE, c->seq_text);
        if (c->has_keep)
            for (size_t k = 0; k < t->n_cols; k++)
                cf_buf_append_byte(&b, k < c->n_cells && c->cells[k].kind == CF_CELL_KEEP ? '1' : '0');
        else cf_buf_append_str(&b, "\\N");
        for (size_t k = 0; k < t->n_cols; k++) {
            cf_buf_append_byte(&b, '\t');
            if (k < c->n_cells) cell_text(&b, &c->cells[k], t->cols[k].type, true);
            else cf_buf_append_str(&b, "\\N");
        }
        cf_buf_append_byte(&b, '\n');
    }
    if (b.len) PQputCopyData(q->c, b.data, (int)b.len);
    cf_buf_free(&b);
    PQputCopyEnd(q->c, NULL);
    r = PQgetResult(q->c);
    cf_code rc = CF_OK;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(q, r, err, "COPY into staging", NULL);
    else PQclear(r);
    while ((r = PQgetResult(q->c))) PQclear(r);
    return rc;
}

static cf_code pgt_apply_staged(void *state, cf_sink_table *t, size_t *applied, cf_err *err) {
    pg *q = state;
    *applied = 0;
    cf_code rc = run(q, "BEGIN", err);
    if (rc) return rc;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "SELECT _ing, _op, _seq, _keep");
    for (size_t i = 0; i < t->n_cols; i++) cf_buf_append_str(&b, ", "), qid(&b, t->cols[i].name), cf_buf_append_str(&b, "::text");
    cf_buf_append_str(&b, " FROM ");
    qtab(&b, q, "_cdc_staged_", t->name);
    cf_buf_append_str(&b, " ORDER BY _ing FOR UPDATE");
    PGresult *r = PQexec(q->c, b.data);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = pg_fail(q, r, err, "reading staged changes", b.data);
        PQclear(PQexec(q->c, "ROLLBACK"));
        q->gen++;
        cf_buf_free(&b);
        return rc;
    }
    int n = PQntuples(r);
    cf_change *cs = cf_xcalloc((size_t)n + 1, sizeof *cs);
    cf_change **v = cf_xcalloc((size_t)n + 1, sizeof *v);
    cf_cell *cells = cf_xcalloc((size_t)n * t->n_cols + 1, sizeof *cells);
    const char *max_ing = "0";
    for (int i = 0; i < n && !rc; i++) {
        cf_change *c = &cs[i];
        max_ing = PQgetvalue(r, i, 0);
        c->op = atoi(PQgetvalue(r, i, 1)) ? CF_CHANGE_DELETE : CF_CHANGE_UPSERT;
        snprintf(c->seq_text, sizeof c->seq_text, "%s", PQgetvalue(r, i, 2));
        if (cf_seq_parse(c->seq_text, &c->seq, err)) rc = CF_ERR_CORRUPT;
        const char *keep = PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3);
        c->cells = cells + (size_t)i * t->n_cols;
        c->n_cells = t->n_cols;
        for (size_t k = 0; k < t->n_cols; k++) {
            cf_cell *x = &c->cells[k];
            if (keep && keep[k] == '1') {
                x->kind = CF_CELL_KEEP, c->has_keep = true;
            } else if (!PQgetisnull(r, i, (int)k + 4)) {
                x->kind = CF_CELL_TEXT;
                x->u.p = PQgetvalue(r, i, (int)k + 4);
                x->len = (uint32_t)PQgetlength(r, i, (int)k + 4);
                if (t->cols[k].type == CF_COL_BOOL) x->kind = CF_CELL_INT, x->u.i = x->u.p[0] == 't';
            }
        }
        v[i] = c;
    }
    if (!rc && n) {
        size_t m = cf_sink_compact(v, (size_t)n, t->n_key);
        rc = pgt_apply(q, t, v, m, err);
        if (!rc) {
            cf_buf_reset(&b);
            cf_buf_append_str(&b, "DELETE FROM ");
            qtab(&b, q, "_cdc_staged_", t->name);
            cf_buf_printf(&b, " WHERE _ing <= %s", max_ing);
            rc = run(q, b.data, err);
        }
    }
    PQclear(r);
    if (!rc) rc = run(q, "COMMIT", err);
    else PQclear(PQexec(q->c, "ROLLBACK")), q->gen++;
    if (!rc) *applied = (size_t)n;
    free(cs), free(v), free(cells);
    cf_buf_free(&b);
    return rc;
}

/* The row's sequence number, else its tombstone's: for a delete without a
 * usable sequence field (rare), one query per table with the key as text
 * parameters. Outside the flush's transaction; a missing table is "not
 * found" (it is checked first, so no error aborts a transaction). */
static cf_code pgt_stored_seq(void *state, cf_sink_table *t, const cf_change *key, bool *found, cf_seq *seq,
                              cf_err *err) {
    pg *q = state;
    *found = false;
    if (t->n_key > 16) return CF_OK;
    cf_buf vals[16];
    const char *params[17];
    for (size_t k = 0; k < t->n_key; k++) {
        vals[k] = (cf_buf)CF_BUF_INIT;
        cell_text(&vals[k], &key->cells[k], t->cols[k].type, false);
        cf_buf_append_byte(&vals[k], 0);
        params[k] = vals[k].data;
    }
    cf_code rc = CF_OK;
    for (int pass = 0; pass < 2 && !*found && !rc; pass++) {
        cf_buf b = CF_BUF_INIT;
        qtab(&b, q, pass ? "_cdc_tombstones_" : "", t->name);
        const char *rel[1] = {b.data};
        PGresult *r = PQexecParams(q->c, "SELECT to_regclass($1) IS NOT NULL", 1, NULL, rel, NULL, NULL, 0);
        bool exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
        if (PQresultStatus(r) != PGRES_TUPLES_OK) rc = pg_fail(q, r, err, "looking up a table", NULL);
        else PQclear(r);
        if (!exists || rc) {
            cf_buf_free(&b);
            continue;
        }
        cf_buf sql = CF_BUF_INIT;
        cf_buf_append_str(&sql, "SELECT \"" SEQ_COL "\" FROM ");
        cf_buf_append(&sql, b.data, b.len);
        cf_buf_append_str(&sql, " WHERE ");
        for (size_t k = 0; k < t->n_key; k++) {
            if (k) cf_buf_append_str(&sql, " AND ");
            qid(&sql, t->cols[k].name);
            cf_buf_printf(&sql, " = $%zu::%s", k + 1, pgtype(t->cols[k].type));
        }
        r = PQexecParams(q->c, sql.data, (int)t->n_key, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            rc = pg_fail(q, r, err, "reading a stored sequence number", sql.data);
        } else {
            if (PQntuples(r) == 1) {
                rc = cf_seq_parse(PQgetvalue(r, 0, 0), seq, err);
                *found = rc == CF_OK;
            }
            PQclear(r);
        }
        cf_buf_free(&sql);
        cf_buf_free(&b);
    }
    for (size_t k = 0; k < t->n_key; k++) cf_buf_free(&vals[k]);
    return rc;
}

/* ---------------- positions ---------------- */

static cf_code pgt_save_positions(void *state, const char *consumer, const cf_sink_stored_position *p, size_t n,
                                  cf_err *err) {
    pg *q = state;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "INSERT INTO ");
    qtab(&b, q, "_cdcflow_positions", "");
    cf_buf_append_str(&b, " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (consumer, stream, \"partition\") DO UPDATE SET "
                          "next_offset = EXCLUDED.next_offset, source_offset = EXCLUDED.source_offset");
    cf_code rc = CF_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        char part[16], next[32];
        snprintf(part, sizeof part, "%d", (int)p[i].partition);
        snprintf(next, sizeof next, "%lld", (long long)p[i].next_offset);
        const char *params[5] = {consumer, p[i].stream, part, next, p[i].source_offset};
        PGresult *r = PQexecParams(q->c, b.data, 5, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(q, r, err, "storing the input positions", b.data);
        else PQclear(r);
    }
    cf_buf_free(&b);
    return rc;
}

static cf_code pgt_drop_positions(void *state, const char *consumer, const char *stream, int32_t partition,
                                  cf_err *err) {
    pg *q = state;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "DELETE FROM ");
    qtab(&b, q, "_cdcflow_positions", "");
    cf_buf_append_str(&b, stream ? " WHERE consumer = $1 AND stream = $2 AND \"partition\" = $3" : " WHERE consumer = $1");
    char part[16];
    snprintf(part, sizeof part, "%d", (int)partition);
    const char *params[3] = {consumer, stream, part};
    PGresult *r = PQexecParams(q->c, b.data, stream ? 3 : 1, NULL, params, NULL, NULL, 0);
    cf_code rc = CF_OK;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(q, r, err, "removing input positions", b.data);
    else PQclear(r);
    cf_buf_free(&b);
    return rc;
}

static cf_code pgt_load_positions(void *state, const char *consumer, cf_sink_stored_position **out, size_t *n,
                                  cf_err *err) {
    pg *q = state;
    *out = NULL;
    *n = 0;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "SELECT stream, \"partition\", next_offset, source_offset FROM ");
    qtab(&b, q, "_cdcflow_positions", "");
    cf_buf_append_str(&b, " WHERE consumer = $1 ORDER BY stream, \"partition\"");
    const char *params[1] = {consumer};
    PGresult *r = PQexecParams(q->c, b.data, 1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        cf_code rc = pg_fail(q, r, err, "reading the input positions", b.data);
        cf_buf_free(&b);
        return rc;
    }
    int k = PQntuples(r);
    *out = cf_xcalloc(k ? (size_t)k : 1, sizeof **out);
    for (int i = 0; i < k; i++)
        (*out)[i] = (cf_sink_stored_position){cf_xstrdup(PQgetvalue(r, i, 0)), (int32_t)atol(PQgetvalue(r, i, 1)),
                                              strtoll(PQgetvalue(r, i, 2), NULL, 10),
                                              PQgetisnull(r, i, 3) ? NULL : cf_xstrdup(PQgetvalue(r, i, 3))};
    *n = (size_t)k;
    PQclear(r);
    cf_buf_free(&b);
    return CF_OK;
}

/* ---------------- Cassandra row state (src/sink/cassandra.c) ---------------- */

/* The table is made outside the flush's transaction (the first read of a
 * state comes before any write), under the DDL lock as ensure_table. */
static cf_code state_table(pg *q, cf_err *err) {
    if (q->state_ready) return CF_OK;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "CREATE TABLE IF NOT EXISTS ");
    qtab(&b, q, "_cdc_cassandra_state", "");
    cf_buf_append_str(&b, " (table_name text NOT NULL, partition_key bytea NOT NULL, state bytea NOT NULL, "
                          "PRIMARY KEY (table_name, partition_key))");
    bool in_tx = PQtransactionStatus(q->c) == PQTRANS_INTRANS;
    cf_code rc = in_tx ? CF_OK : run(q, "BEGIN", err);
    if (!rc) rc = run(q, "SELECT pg_advisory_xact_lock(hashtext('cdcflow-sink-ddl'))", err);
    if (!rc) rc = run(q, b.data, err);
    if (!in_tx) {
        if (!rc) rc = run(q, "COMMIT", err);
        else PQclear(PQexec(q->c, "ROLLBACK"));
    }
    cf_buf_free(&b);
    if (!rc) q->state_ready = true;
    return rc;
}

static cf_code pgt_state_get(void *state, const char *space, const void *key, size_t klen, cf_buf *out, bool *found,
                             cf_err *err) {
    pg *q = state;
    *found = false;
    cf_code rc = state_table(q, err);
    if (rc) return rc;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "SELECT state FROM ");
    qtab(&b, q, "_cdc_cassandra_state", "");
    cf_buf_append_str(&b, " WHERE table_name = $1 AND partition_key = $2");
    const char *params[2] = {space, klen ? key : ""};
    int lens[2] = {0, (int)klen}, fmts[2] = {0, 1};
    PGresult *r = PQexecParams(q->c, b.data, 2, NULL, params, lens, fmts, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = pg_fail(q, r, err, "reading the Cassandra row state", b.data);
        cf_buf_free(&b);
        return rc;
    }
    if (PQntuples(r) > 0) {
        cf_buf_append(out, PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0));
        *found = true;
    }
    PQclear(r);
    cf_buf_free(&b);
    return CF_OK;
}

static cf_code pgt_state_put(void *state, const char *space, const void *key, size_t klen, const void *val,
                             size_t vlen, cf_err *err) {
    pg *q = state;
    cf_code rc = state_table(q, err);
    if (rc) return rc;
    cf_buf b = CF_BUF_INIT;
    if (vlen == 0) { /* nothing left in the partition */
        cf_buf_append_str(&b, "DELETE FROM ");
        qtab(&b, q, "_cdc_cassandra_state", "");
        cf_buf_append_str(&b, " WHERE table_name = $1 AND partition_key = $2");
        const char *dp[2] = {space, klen ? key : ""};
        int dl[2] = {0, (int)klen}, df[2] = {0, 1};
        PGresult *r = PQexecParams(q->c, b.data, 2, NULL, dp, dl, df, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(q, r, err, "removing a Cassandra row state", b.data);
        else PQclear(r);
        cf_buf_free(&b);
        return rc;
    }
    cf_buf_append_str(&b, "INSERT INTO ");
    qtab(&b, q, "_cdc_cassandra_state", "");
    cf_buf_append_str(&b, " VALUES ($1, $2, $3) ON CONFLICT (table_name, partition_key) DO UPDATE SET state = "
                          "EXCLUDED.state");
    const char *params[3] = {space, klen ? key : "", vlen ? val : ""};
    int lens[3] = {0, (int)klen, (int)vlen}, fmts[3] = {0, 1, 1};
    PGresult *r = PQexecParams(q->c, b.data, 3, NULL, params, lens, fmts, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(q, r, err, "storing the Cassandra row state", b.data);
    else PQclear(r);
    cf_buf_free(&b);
    return rc;
}

const cf_sink_target cf_sink_target_postgres = {
    .name = "postgres",
    .writer_thread = true, /* one connection, used by one thread at a time */
    .open = pgt_open,
    .ensure_table = pgt_ensure_table,
    .begin = pgt_begin,
    .apply = pgt_apply,
    .stage = pgt_stage,
    .apply_staged = pgt_apply_staged,
    .purge_tombstones = pgt_purge,
    .commit = pgt_commit,
    .rollback = pgt_rollback,
    .free_table_state = pgt_free_table_state,
    .close = pgt_close,
    .save_positions = pgt_save_positions,
    .load_positions = pgt_load_positions,
    .drop_positions = pgt_drop_positions,
    .stored_seq = pgt_stored_seq,
    .state_get = pgt_state_get,
    .state_put = pgt_state_put,
};
