/*
 * sqlite_target.c - the embedded default target: one SQLite database file,
 * WAL mode, one transaction per flush, prepared statements per table.
 *
 * Apply rules (include/cdcflow/sink.h), per compacted change:
 *   UPSERT  INSERT .. WHERE no newer tombstone ON CONFLICT(key) DO UPDATE ..
 *           WHERE excluded.seq >= stored seq
 *   DELETE  DELETE the row if its seq <= ours; then record a tombstone
 *           (key, seq, time) unless a newer row is still there.
 * Sequence numbers are fixed-width text (cf_seq_format), so SQLite's BINARY
 * text comparison is BigQuery's order. A tombstone is not removed when a
 * newer upsert lands: the row (whose seq is >= the tombstone's) decides from
 * then on, and the tombstone expires with the retention; this keeps an
 * upsert at one statement.
 *
 * Positions (cf_sink_put_at): "_cdcflow_positions", written in the flush's
 * transaction; synchronous=FULL so a commit is durable when it returns.
 *
 * Concurrent tasks on one file: every connection sets a busy timeout, DDL
 * runs in BEGIN IMMEDIATE (mediateConcurrentSchemaUpdates) so "look at the
 * table, then alter it" is atomic across tasks.
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/sink.h"
#include "state_table.h"

#define SEQ_COL "_change_sequence_number"

typedef struct sq {
    sqlite3 *db;
    const cf_sink_options *o;
    sqlite3_stmt *pos_put; /* positions: insert or replace (prepared once) */
    sk_state_table cstate; /* Cassandra row state (prepared on first use) */
} sq;

typedef struct sq_tbl {
    size_t n_cols; /* statements below are for this many columns */
    sqlite3_stmt *ups, *ups_nt, *del, *tomb, *tomb_nc, *stage;
    bool has_tombs;
} sq_tbl;

static cf_code db_err(sq *q, cf_err *err, const char *what, const char *sql) {
    cf_err_set(err, CF_ERR_TARGET, "SQLite: %s failed", what);
    cf_err_detail(err, "%s (code %d)", sqlite3_errmsg(q->db), sqlite3_extended_errcode(q->db));
    if (sql) cf_err_hint(err, "statement: %.200s", sql);
    return CF_ERR_TARGET;
}

static cf_code exec(sq *q, const char *sql, cf_err *err) {
    char *msg = NULL;
    if (sqlite3_exec(q->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        cf_err_set(err, CF_ERR_TARGET, "SQLite statement failed");
        cf_err_detail(err, "%s", msg ? msg : sqlite3_errmsg(q->db));
        cf_err_hint(err, "statement: %.200s", sql);
        sqlite3_free(msg);
        return CF_ERR_TARGET;
    }
    return CF_OK;
}

/* Switch the file to WAL. The switch needs an exclusive lock, and SQLite
 * answers SQLITE_BUSY at once (without calling the busy handler) when two
 * connections try it together on a fresh file, since waiting could deadlock
 * (both hold a shared lock and want to upgrade). So retry here, for as long as
 * the busy timeout, until one of them wins; the others then see "wal". */
static cf_code set_wal(sq *q, cf_err *err) {
    const char *sql = "PRAGMA journal_mode=WAL";
    for (int waited_ms = 0;; waited_ms += 5) {
        char *msg = NULL;
        int rc = sqlite3_exec(q->db, sql, NULL, NULL, &msg);
        sqlite3_free(msg);
        if (rc == SQLITE_OK) return CF_OK;
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        if (waited_ms >= 30000) break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return db_err(q, err, "switching to WAL mode", sql);
}

static void qid(cf_buf *b, const char *name) { /* "name" with quotes doubled */
    cf_buf_append_byte(b, '"');
    for (const char *p = name; *p; p++) {
        if (*p == '"') cf_buf_append_byte(b, '"');
        cf_buf_append_byte(b, (uint8_t)*p);
    }
    cf_buf_append_byte(b, '"');
}

static void qid2(cf_buf *b, const char *prefix, const char *name, const char *suffix) {
    char *n = cf_xmalloc(strlen(prefix) + strlen(name) + strlen(suffix) + 1);
    sprintf(n, "%s%s%s", prefix, name, suffix);
    qid(b, n);
    free(n);
}

static const char *decl(cf_col_type t) {
    switch (t) {
    case CF_COL_BOOL: return "BOOLEAN";
    case CF_COL_INT16:
    case CF_COL_INT32:
    case CF_COL_INT64: return "INTEGER";
    case CF_COL_FLOAT32:
    case CF_COL_FLOAT64: return "REAL";
    case CF_COL_BYTES: return "BLOB";
    case CF_COL_DATE: return "DATE";
    case CF_COL_TIME: return "TIME";
    case CF_COL_TIMESTAMP: return "TIMESTAMP";
    default: return "TEXT"; /* TEXT, NUMERIC (exact text), JSON */
    }
}

/* SQLite's type affinity of a declared type (datatype3.html §3.1). */
static char affinity(const char *d) {
    char u[64];
    size_t i = 0;
    for (; d && d[i] && i < sizeof u - 1; i++) u[i] = (char)(d[i] >= 'a' && d[i] <= 'z' ? d[i] - 32 : d[i]);
    u[i] = 0;
    if (strstr(u, "INT")) return 'I';
    if (strstr(u, "CHAR") || strstr(u, "CLOB") || strstr(u, "TEXT")) return 'T';
    if (!*u || strstr(u, "BLOB")) return 'B';
    if (strstr(u, "REAL") || strstr(u, "FLOA") || strstr(u, "DOUB")) return 'R';
    return 'N';
}

static cf_code sq_open(const cf_sink_options *o, void **state, cf_err *err) {
    sq *q = cf_xcalloc(1, sizeof *q);
    q->o = o;
    const char *path = o->sqlite_path && *o->sqlite_path ? o->sqlite_path : "cdcflow.db";
    if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        cf_err_set(err, CF_ERR_TARGET, "cannot open SQLite database \"%s\"", path);
        cf_err_detail(err, "%s", q->db ? sqlite3_errmsg(q->db) : "out of memory");
        cf_err_hint(err, "check sqlite.path and the directory's permissions");
        sqlite3_close(q->db);
        free(q);
        return CF_ERR_TARGET;
    }
    sqlite3_busy_timeout(q->db, 30000);
    cf_code rc = set_wal(q, err);
    /* FULL: a commit is on disk (the WAL synced) before it returns. With
     * NORMAL a power loss could take back transactions whose input positions
     * the worker had already committed elsewhere (Kafka offsets, source
     * offsets): rows lost. The positions kept in the same transaction make
     * the table exact either way; FULL keeps what was acknowledged. */
    if (!rc) rc = exec(q, "PRAGMA synchronous=FULL;", err);
    if (!rc)
        rc = exec(q,
                  "CREATE TABLE IF NOT EXISTS \"_cdc_tables\" (\"table_name\" TEXT PRIMARY KEY, \"topic\" TEXT, "
                  "\"seq_sections\" INTEGER NOT NULL, \"key_columns\" TEXT NOT NULL)",
                  err);
    if (!rc && o->consumer)
        rc = exec(q,
                  "CREATE TABLE IF NOT EXISTS \"_cdcflow_positions\" (\"consumer\" TEXT NOT NULL, \"stream\" TEXT "
                  "NOT NULL, \"partition\" INTEGER NOT NULL, \"next_offset\" INTEGER NOT NULL, \"source_offset\" TEXT, "
                  "PRIMARY KEY (\"consumer\", \"stream\", \"partition\"))",
                  err);
    if (rc) {
        sqlite3_close(q->db);
        free(q);
        return rc;
    }
    *state = q;
    return CF_OK;
}

static void tbl_finalize(sq_tbl *x) {
    sqlite3_finalize(x->ups);
    sqlite3_finalize(x->ups_nt);
    sqlite3_finalize(x->del);
    sqlite3_finalize(x->tomb);
    sqlite3_finalize(x->tomb_nc);
    sqlite3_finalize(x->stage);
    x->ups = x->ups_nt = x->del = x->tomb = x->tomb_nc = x->stage = NULL;
    x->n_cols = 0;
}

static void sq_free_table_state(void *state, cf_sink_table *t) {
    (void)state;
    sq_tbl *x = t->target_state;
    if (!x) return;
    tbl_finalize(x);
    free(x);
    t->target_state = NULL;
}

static void sq_close(void *state) {
    sq *q = state;
    sqlite3_finalize(q->pos_put);
    sk_state_table_finalize(&q->cstate);
    sqlite3_close(q->db);
    free(q);
}

/* ---------------- DDL ---------------- */

typedef struct sq_col {
    char *name, *type;
    int pk;
} sq_col;

static cf_code table_info(sq *q, const char *table, sq_col **cols, size_t *n, cf_err *err) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "PRAGMA table_info(");
    qid(&b, table);
    cf_buf_append_str(&b, ")");
    sqlite3_stmt *st;
    *cols = NULL, *n = 0;
    if (sqlite3_prepare_v2(q->db, b.data, -1, &st, NULL) != SQLITE_OK) {
        cf_code rc = db_err(q, err, "reading the table's columns", b.data);
        cf_buf_free(&b);
        return rc;
    }
    cf_buf_free(&b);
    while (sqlite3_step(st) == SQLITE_ROW) {
        *cols = cf_xrealloc(*cols, (*n + 1) * sizeof **cols);
        (*cols)[*n].name = cf_xstrdup((const char *)sqlite3_column_text(st, 1));
        const char *ty = (const char *)sqlite3_column_text(st, 2);
        (*cols)[*n].type = cf_xstrdup(ty ? ty : "");
        (*cols)[*n].pk = sqlite3_column_int(st, 5);
        (*n)++;
    }
    sqlite3_finalize(st);
    return CF_OK;
}

static void free_cols(sq_col *c, size_t n) {
    for (size_t i = 0; i < n; i++) free(c[i].name), free(c[i].type);
    free(c);
}

/* Is there a primary key or unique index on exactly the key columns? */
static bool has_key(sq *q, const cf_sink_table *t, const sq_col *cols, size_t n) {
    size_t npk = 0;
    for (size_t i = 0; i < n; i++)
        if (cols[i].pk) npk++;
    if (npk == t->n_key) {
        bool ok = true;
        for (size_t k = 0; k < t->n_key && ok; k++) {
            ok = false;
            for (size_t i = 0; i < n; i++)
                if (cols[i].pk && strcmp(cols[i].name, t->cols[k].name) == 0) ok = true;
        }
        if (ok) return true;
    }
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "SELECT il.name FROM pragma_index_list(?1) il WHERE il.\"unique\" = 1 AND "
                          "(SELECT count(*) FROM pragma_index_info(il.name)) = ?2");
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(q->db, b.data, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, (int)t->n_key);
        while (!found && sqlite3_step(st) == SQLITE_ROW) {
            const char *idx = (const char *)sqlite3_column_text(st, 0);
            sqlite3_stmt *ii;
            if (sqlite3_prepare_v2(q->db, "SELECT name FROM pragma_index_info(?1)", -1, &ii, NULL) != SQLITE_OK)
                continue;
            sqlite3_bind_text(ii, 1, idx, -1, SQLITE_TRANSIENT);
            size_t hit = 0;
            while (sqlite3_step(ii) == SQLITE_ROW) {
                const char *cn = (const char *)sqlite3_column_text(ii, 0);
                for (size_t k = 0; cn && k < t->n_key; k++)
                    if (strcmp(cn, t->cols[k].name) == 0) hit++;
            }
            sqlite3_finalize(ii);
            found = hit == t->n_key;
        }
        sqlite3_finalize(st);
    }
    cf_buf_free(&b);
    return found;
}

/* The first n columns, comma separated, each after prefix (NULL: none). */
static void col_list(cf_buf *b, const cf_sink_table *t, size_t n, const char *prefix) {
    for (size_t k = 0; k < n; k++) {
        if (k) cf_buf_append_str(b, ", ");
        if (prefix) cf_buf_append_str(b, prefix);
        qid(b, t->cols[k].name);
    }
}

static void key_list(cf_buf *b, const cf_sink_table *t, const char *prefix) { col_list(b, t, t->n_key, prefix); }

/* "a.k1 = b.k1 AND a.k2 = b.k2 AND " over the key columns. */
static void key_match(cf_buf *b, const cf_sink_table *t, const char *a, const char *bb) {
    for (size_t k = 0; k < t->n_key; k++) {
        cf_buf_printf(b, "%s.", a);
        qid(b, t->cols[k].name);
        cf_buf_printf(b, " = %s.", bb);
        qid(b, t->cols[k].name);
        cf_buf_append_str(b, " AND ");
    }
}

/* The statement that records a tombstone (key, seq, time: ?1..?n+2), kept
 * only if newer than the one there; if_no_row: only when the table has no
 * row of that key (a newer upsert already replaced the deleted row). */
static void tomb_upsert(cf_buf *b, const cf_sink_table *t, bool if_no_row) {
    cf_buf_append_str(b, "INSERT INTO ");
    qid2(b, "_cdc_tombstones_", t->name, "");
    cf_buf_append_str(b, " (");
    key_list(b, t, NULL);
    cf_buf_append_str(b, if_no_row ? ", \"" SEQ_COL "\", \"_deleted_at\") SELECT "
                                   : ", \"" SEQ_COL "\", \"_deleted_at\") VALUES (");
    for (size_t k = 0; k < t->n_key + 2; k++) cf_buf_printf(b, "%s?%zu", k ? ", " : "", k + 1);
    if (if_no_row) {
        cf_buf_append_str(b, " WHERE NOT EXISTS (SELECT 1 FROM ");
        qid(b, t->name);
        cf_buf_append_str(b, " WHERE ");
        for (size_t k = 0; k < t->n_key; k++) {
            if (k) cf_buf_append_str(b, " AND ");
            qid(b, t->cols[k].name);
            cf_buf_printf(b, " = ?%zu", k + 1);
        }
    }
    cf_buf_append_str(b, ") ON CONFLICT (");
    key_list(b, t, NULL);
    cf_buf_append_str(b, ") DO UPDATE SET \"" SEQ_COL "\" = excluded.\"" SEQ_COL
                         "\", \"_deleted_at\" = excluded.\"_deleted_at\" WHERE excluded.\"" SEQ_COL "\" >= ");
    qid2(b, "_cdc_tombstones_", t->name, "");
    cf_buf_append_str(b, ".\"" SEQ_COL "\"");
}

static cf_code create_table(sq *q, const cf_sink_table *t, cf_err *err) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "CREATE TABLE ");
    qid(&b, t->name);
    cf_buf_append_str(&b, " (");
    for (size_t i = 0; i < t->n_cols; i++) {
        qid(&b, t->cols[i].name);
        cf_buf_printf(&b, " %s%s, ", decl(t->cols[i].type), t->cols[i].key ? " NOT NULL" : "");
    }
    cf_buf_append_str(&b, "\"" SEQ_COL "\" TEXT NOT NULL, PRIMARY KEY (");
    key_list(&b, t, NULL);
    cf_buf_append_str(&b, "))");
    cf_code rc = exec(q, b.data, err);
    cf_buf_free(&b);
    return rc;
}

/* The staging table for tableMaxStaleness and its read view. */
static cf_code ensure_staging(sq *q, const cf_sink_table *t, cf_err *err) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "CREATE TABLE IF NOT EXISTS ");
    qid2(&b, "_cdc_staged_", t->name, "");
    cf_buf_append_str(&b, " (\"_ing\" INTEGER PRIMARY KEY, \"_op\" INTEGER NOT NULL, \"_seq\" TEXT NOT NULL, "
                          "\"_keep\" TEXT)");
    cf_code rc = exec(q, b.data, err);
    sq_col *cols = NULL;
    size_t n = 0;
    char *stg = cf_xmalloc(strlen(t->name) + 16);
    sprintf(stg, "_cdc_staged_%s", t->name);
    if (!rc) rc = table_info(q, stg, &cols, &n, err);
    for (size_t i = 0; !rc && i < t->n_cols; i++) {
        bool have = false;
        for (size_t j = 0; j < n; j++)
            if (strcmp(cols[j].name, t->cols[i].name) == 0) have = true;
        if (have) continue;
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "ALTER TABLE ");
        qid(&b, stg);
        cf_buf_append_str(&b, " ADD COLUMN ");
        qid(&b, t->cols[i].name);
        cf_buf_printf(&b, " %s", decl(t->cols[i].type));
        rc = exec(q, b.data, err);
    }
    free_cols(cols, n);
    /* The view: table rows no staged change supersedes, plus the latest
     * staged upsert per key that beats the row and any tombstone. */
    if (!rc) {
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "DROP VIEW IF EXISTS ");
        qid2(&b, "", t->name, "_fresh");
        rc = exec(q, b.data, err);
    }
    if (!rc) {
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "CREATE VIEW ");
        qid2(&b, "", t->name, "_fresh");
        cf_buf_append_str(&b, " AS WITH l AS (SELECT * FROM (SELECT s.*, row_number() OVER (PARTITION BY ");
        key_list(&b, t, "s.");
        cf_buf_append_str(&b, " ORDER BY s.\"_seq\" DESC, s.\"_ing\" DESC) AS \"_rn\" FROM ");
        qid(&b, stg);
        cf_buf_append_str(&b, " s) WHERE \"_rn\" = 1) SELECT ");
        col_list(&b, t, t->n_cols, "t.");
        cf_buf_append_str(&b, " FROM ");
        qid(&b, t->name);
        cf_buf_append_str(&b, " t WHERE NOT EXISTS (SELECT 1 FROM l WHERE ");
        key_match(&b, t, "l", "t");
        cf_buf_append_str(&b, "l.\"_seq\" >= t.\"" SEQ_COL "\") UNION ALL SELECT ");
        col_list(&b, t, t->n_cols, "l.");
        cf_buf_append_str(&b, " FROM l WHERE l.\"_op\" = 0 AND NOT EXISTS (SELECT 1 FROM ");
        qid(&b, t->name);
        cf_buf_append_str(&b, " t WHERE ");
        key_match(&b, t, "t", "l");
        cf_buf_append_str(&b, "t.\"" SEQ_COL "\" > l.\"_seq\") AND NOT EXISTS (SELECT 1 FROM ");
        qid2(&b, "_cdc_tombstones_", t->name, "");
        cf_buf_append_str(&b, " x WHERE ");
        key_match(&b, t, "x", "l");
        cf_buf_append_str(&b, "x.\"" SEQ_COL "\" > l.\"_seq\")");
        rc = exec(q, b.data, err);
    }
    free(stg);
    cf_buf_free(&b);
    return rc;
}

static cf_code ensure_locked(sq *q, cf_sink_table *t, cf_err *err) {
    sq_col *cols = NULL;
    size_t n = 0;
    cf_code rc = table_info(q, t->name, &cols, &n, err);
    if (rc) return rc;
    cf_buf b = CF_BUF_INIT;
    bool created = false;
    if (n == 0) {
        if (!q->o->auto_create_tables) {
            cf_err_set(err, CF_ERR_TARGET, "table \"%s\" does not exist", t->name);
            cf_err_hint(err, "set autoCreateTables=true, or create it with a primary key on (%s)", t->cols[0].name);
            free_cols(cols, n);
            return CF_ERR_TARGET;
        }
        rc = create_table(q, t, err);
        created = true;
        CF_INFO("sink", "created table \"%s\" for topic %s (%zu columns, key of %zu)", t->name, t->topic,
                t->n_cols, t->n_key);
    } else {
        if (!has_key(q, t, cols, n)) {
            cf_buf_append_str(&b, "CREATE UNIQUE INDEX ");
            qid2(&b, "", t->name, "_pkey");
            cf_buf_append_str(&b, " ON ");
            qid(&b, t->name);
            cf_buf_append_str(&b, " (");
            key_list(&b, t, NULL);
            cf_buf_append_str(&b, ");");
            cf_err_set(err, CF_ERR_TARGET, "table \"%s\" has no primary key on the record key's columns", t->name);
            cf_err_detail(err, "CDC applies changes by primary key; without one upserts would duplicate rows");
            cf_err_hint(err, "run: %s", b.data);
            cf_buf_free(&b);
            free_cols(cols, n);
            return CF_ERR_TARGET;
        }
        bool have_seq = false;
        for (size_t i = 0; i < n; i++)
            if (strcmp(cols[i].name, SEQ_COL) == 0) have_seq = true;
        for (size_t i = 0; !rc && i < t->n_cols; i++) {
            const sq_col *have = NULL;
            for (size_t j = 0; j < n; j++)
                if (strcmp(cols[j].name, t->cols[i].name) == 0) have = &cols[j];
            if (have) {
                if (affinity(have->type) != affinity(decl(t->cols[i].type))) {
                    rc = cf_err_set(err, CF_ERR_SCHEMA,
                                    "incompatible schema change: column \"%s\" of table \"%s\" is %s, the record's "
                                    "field needs %s", t->cols[i].name, t->name, have->type,
                                    decl(t->cols[i].type));
                    cf_err_hint(err, "migrate the column by hand or route the topic to a new table");
                }
                continue;
            }
            if (!q->o->allow_new_fields) {
                rc = cf_err_set(err, CF_ERR_SCHEMA, "field \"%s\" has no column in table \"%s\"", t->cols[i].name,
                                t->name);
                cf_err_hint(err, "set allowNewBigQueryFields=true to add columns, or drop the field (ReplaceField)");
                break;
            }
            cf_buf_reset(&b);
            cf_buf_append_str(&b, "ALTER TABLE ");
            qid(&b, t->name);
            cf_buf_append_str(&b, " ADD COLUMN ");
            qid(&b, t->cols[i].name);
            cf_buf_printf(&b, " %s", decl(t->cols[i].type));
            rc = exec(q, b.data, err);
            if (!rc) CF_INFO("sink", "added column \"%s\" to table \"%s\"", t->cols[i].name, t->name);
        }
        if (!rc && !have_seq) {
            cf_buf_reset(&b);
            cf_buf_append_str(&b, "ALTER TABLE ");
            qid(&b, t->name);
            cf_buf_append_str(&b, " ADD COLUMN \"" SEQ_COL "\" TEXT NOT NULL DEFAULT ''");
            rc = exec(q, b.data, err);
        }
    }
    free_cols(cols, n);
    /* tombstones */
    if (!rc) {
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "CREATE TABLE IF NOT EXISTS ");
        qid2(&b, "_cdc_tombstones_", t->name, "");
        cf_buf_append_str(&b, " (");
        for (size_t k = 0; k < t->n_key; k++) {
            qid(&b, t->cols[k].name);
            cf_buf_printf(&b, " %s NOT NULL, ", decl(t->cols[k].type));
        }
        cf_buf_append_str(&b, "\"" SEQ_COL "\" TEXT NOT NULL, \"_deleted_at\" INTEGER NOT NULL, PRIMARY KEY (");
        key_list(&b, t, NULL);
        cf_buf_append_str(&b, "))");
        rc = exec(q, b.data, err);
    }
    /* the sequence section count is a property of the table */
    if (!rc) {
        sqlite3_stmt *st;
        const char *sql = "INSERT INTO \"_cdc_tables\" VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING";
        if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK) rc = db_err(q, err, "recording", sql);
        else {
            cf_buf kb = CF_BUF_INIT;
            key_list(&kb, t, NULL);
            sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, t->topic, -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 3, t->seq_sections);
            sqlite3_bind_text(st, 4, kb.data, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE) rc = db_err(q, err, "recording the table", sql);
            sqlite3_finalize(st);
            cf_buf_free(&kb);
        }
    }
    if (!rc) {
        sqlite3_stmt *st;
        const char *sql = "SELECT \"seq_sections\" FROM \"_cdc_tables\" WHERE \"table_name\" = ?1";
        if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW) {
                int have = sqlite3_column_int(st, 0);
                if (have != t->seq_sections) {
                    rc = cf_err_set(err, CF_ERR_CONFIG,
                                    "table \"%s\" holds change sequence numbers of %d section(s); this connector "
                                    "writes %d", t->name, have, t->seq_sections);
                    cf_err_detail(err, "mixing sequence formats in one table orders changes unpredictably "
                                       "(BigQuery: always supply the same format once custom ordering is used)");
                    cf_err_hint(err, "keep cdcChangeSequenceNumberField as it was for this table, or start a new "
                                     "table");
                }
            }
            sqlite3_finalize(st);
        }
    }
    if (!rc && q->o->max_staleness_s > 0) rc = ensure_staging(q, t, err);
    (void)created;
    cf_buf_free(&b);
    return rc;
}

static cf_code sq_ensure_table(void *state, cf_sink_table *t, cf_err *err) {
    sq *q = state;
    cf_code rc = exec(q, q->o->mediate_schema_updates ? "BEGIN IMMEDIATE" : "BEGIN", err);
    if (rc) return rc;
    rc = ensure_locked(q, t, err);
    if (rc) {
        exec(q, "ROLLBACK", NULL);
        return rc;
    }
    rc = exec(q, "COMMIT", err);
    if (t->target_state) tbl_finalize(t->target_state); /* columns may have changed */
    return rc;
}

/* ---------------- DML ---------------- */

static cf_code prep(sq *q, const char *sql, sqlite3_stmt **st, cf_err *err) {
    if (sqlite3_prepare_v3(q->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return db_err(q, err, "preparing a statement", sql);
    return CF_OK;
}

/* UPSERT statement; keep (may be NULL) marks columns whose stored value
 * stays on update. */
static void upsert_sql(cf_buf *b, const cf_sink_table *t, bool tomb_check, const cf_change *keep) {
    size_t n = t->n_cols;
    cf_buf_append_str(b, "INSERT INTO ");
    qid(b, t->name);
    cf_buf_append_str(b, " (");
    for (size_t i = 0; i < n; i++) qid(b, t->cols[i].name), cf_buf_append_str(b, ", ");
    cf_buf_append_str(b, "\"" SEQ_COL "\") ");
    cf_buf_append_str(b, tomb_check ? "SELECT " : "VALUES (");
    for (size_t i = 0; i <= n; i++) cf_buf_printf(b, "%s?%zu", i ? ", " : "", i + 1);
    if (tomb_check) {
        cf_buf_append_str(b, " WHERE NOT EXISTS (SELECT 1 FROM ");
        qid2(b, "_cdc_tombstones_", t->name, "");
        cf_buf_append_str(b, " WHERE ");
        for (size_t k = 0; k < t->n_key; k++) {
            qid(b, t->cols[k].name);
            cf_buf_printf(b, " = ?%zu AND ", k + 1);
        }
        cf_buf_printf(b, "\"" SEQ_COL "\" > ?%zu)", n + 1);
    } else {
        cf_buf_append_str(b, ")");
    }
    cf_buf_append_str(b, " ON CONFLICT (");
    key_list(b, t, NULL);
    cf_buf_append_str(b, ") DO UPDATE SET ");
    for (size_t i = t->n_key; i < n; i++) {
        if (keep && i < keep->n_cells && keep->cells[i].kind == CF_CELL_KEEP) continue;
        qid(b, t->cols[i].name);
        cf_buf_append_str(b, " = excluded.");
        qid(b, t->cols[i].name);
        cf_buf_append_str(b, ", ");
    }
    cf_buf_append_str(b, "\"" SEQ_COL "\" = excluded.\"" SEQ_COL "\" WHERE excluded.\"" SEQ_COL "\" >= ");
    qid(b, t->name);
    cf_buf_append_str(b, ".\"" SEQ_COL "\"");
}

static cf_code prepare_table(sq *q, cf_sink_table *t, cf_err *err) {
    sq_tbl *x = t->target_state;
    if (!x) x = t->target_state = cf_xcalloc(1, sizeof *x);
    if (x->ups && x->n_cols == t->n_cols) return CF_OK;
    tbl_finalize(x);
    cf_buf b = CF_BUF_INIT;
    upsert_sql(&b, t, true, NULL);
    cf_code rc = prep(q, b.data, &x->ups, err);
    cf_buf_reset(&b);
    upsert_sql(&b, t, false, NULL);
    if (!rc) rc = prep(q, b.data, &x->ups_nt, err);
    cf_buf_reset(&b);
    cf_buf_append_str(&b, "DELETE FROM ");
    qid(&b, t->name);
    cf_buf_append_str(&b, " WHERE ");
    for (size_t k = 0; k < t->n_key; k++) {
        qid(&b, t->cols[k].name);
        cf_buf_printf(&b, " = ?%zu AND ", k + 1);
    }
    cf_buf_printf(&b, "\"" SEQ_COL "\" <= ?%zu", t->n_key + 1);
    if (!rc) rc = prep(q, b.data, &x->del, err);
    cf_buf_reset(&b);
    tomb_upsert(&b, t, true);
    if (!rc) rc = prep(q, b.data, &x->tomb, err);
    /* the same when the DELETE just removed the row: no row to look for */
    cf_buf_reset(&b);
    tomb_upsert(&b, t, false);
    if (!rc) rc = prep(q, b.data, &x->tomb_nc, err);
    if (!rc && q->o->max_staleness_s > 0) {
        cf_buf_reset(&b);
        cf_buf_append_str(&b, "INSERT INTO ");
        qid2(&b, "_cdc_staged_", t->name, "");
        cf_buf_append_str(&b, " (\"_op\", \"_seq\", \"_keep\"");
        for (size_t i = 0; i < t->n_cols; i++) cf_buf_append_str(&b, ", "), qid(&b, t->cols[i].name);
        cf_buf_append_str(&b, ") VALUES (?1, ?2, ?3");
        for (size_t i = 0; i < t->n_cols; i++) cf_buf_printf(&b, ", ?%zu", i + 4);
        cf_buf_append_str(&b, ")");
        rc = prep(q, b.data, &x->stage, err);
    }
    cf_buf_free(&b);
    if (rc) {
        tbl_finalize(x);
        return rc;
    }
    x->n_cols = t->n_cols;
    return CF_OK;
}

static void bind_cell(sqlite3_stmt *st, int i, const cf_cell *c) {
    switch (c->kind) {
    case CF_CELL_INT: sqlite3_bind_int64(st, i, c->u.i); break;
    case CF_CELL_REAL: sqlite3_bind_double(st, i, c->u.f); break;
    case CF_CELL_TEXT: sqlite3_bind_text(st, i, c->u.p, (int)c->len, SQLITE_STATIC); break;
    case CF_CELL_BLOB: sqlite3_bind_blob(st, i, c->u.p, (int)c->len, SQLITE_STATIC); break;
    default: sqlite3_bind_null(st, i); break;
    }
}

static void bind_row(sqlite3_stmt *st, const cf_sink_table *t, const cf_change *c, int first) {
    static const cf_cell null_cell = {0};
    for (size_t i = 0; i < t->n_cols; i++) bind_cell(st, first + (int)i, i < c->n_cells ? &c->cells[i] : &null_cell);
}

static cf_code step(sq *q, sqlite3_stmt *st, cf_err *err) {
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    if (r != SQLITE_DONE) return db_err(q, err, "applying a change", sqlite3_sql(st));
    return CF_OK;
}

static cf_code apply_one(sq *q, cf_sink_table *t, sq_tbl *x, const cf_change *c, int64_t now, cf_err *err) {
    cf_code rc;
    if (c->op == CF_CHANGE_UPSERT) {
        sqlite3_stmt *st = x->has_tombs ? x->ups : x->ups_nt;
        bool own = false;
        if (c->has_keep) { /* rare: a statement that leaves those columns alone */
            cf_buf b = CF_BUF_INIT;
            upsert_sql(&b, t, true, c);
            rc = sqlite3_prepare_v2(q->db, b.data, -1, &st, NULL) == SQLITE_OK ? CF_OK
                                                                                : db_err(q, err, "preparing", b.data);
            cf_buf_free(&b);
            if (rc) return rc;
            own = true;
        }
        bind_row(st, t, c, 1);
        sqlite3_bind_text(st, (int)t->n_cols + 1, c->seq_text, -1, SQLITE_STATIC);
        rc = step(q, st, err);
        if (own) sqlite3_finalize(st);
        return rc;
    }
    for (size_t k = 0; k < t->n_key; k++) bind_cell(x->del, (int)k + 1, &c->cells[k]);
    sqlite3_bind_text(x->del, (int)t->n_key + 1, c->seq_text, -1, SQLITE_STATIC);
    rc = step(q, x->del, err);
    if (rc) return rc;
    sqlite3_stmt *ts = sqlite3_changes(q->db) > 0 ? x->tomb_nc : x->tomb;
    for (size_t k = 0; k < t->n_key; k++) bind_cell(ts, (int)k + 1, &c->cells[k]);
    sqlite3_bind_text(ts, (int)t->n_key + 1, c->seq_text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(ts, (int)t->n_key + 2, now);
    rc = step(q, ts, err);
    x->has_tombs = true;
    return rc;
}

static bool any_tombs(sq *q, const cf_sink_table *t) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "SELECT EXISTS (SELECT 1 FROM ");
    qid2(&b, "_cdc_tombstones_", t->name, "");
    cf_buf_append_str(&b, ")");
    sqlite3_stmt *st;
    bool r = true; /* when in doubt, check */
    if (sqlite3_prepare_v2(q->db, b.data, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) r = sqlite3_column_int(st, 0) != 0;
        sqlite3_finalize(st);
    }
    cf_buf_free(&b);
    return r;
}

static cf_code sq_apply(void *state, cf_sink_table *t, cf_change *const *changes, size_t n, cf_err *err) {
    sq *q = state;
    cf_code rc = prepare_table(q, t, err);
    if (rc) return rc;
    sq_tbl *x = t->target_state;
    /* read inside the write transaction: other tasks' tombstones are visible */
    x->has_tombs = any_tombs(q, t);
    int64_t now = (int64_t)time(NULL);
    /* the engine hands the changes in key order: each B-tree page is touched once */
    for (size_t i = 0; i < n && !rc; i++) rc = apply_one(q, t, x, changes[i], now, err);
    return rc;
}

static cf_code sq_begin(void *state, cf_err *err) { return exec(state, "BEGIN IMMEDIATE", err); }
static cf_code sq_commit(void *state, cf_err *err) { return exec(state, "COMMIT", err); }
static void sq_rollback(void *state) { exec(state, "ROLLBACK", NULL); }

static cf_code sq_purge(void *state, cf_sink_table *t, int64_t older_than, cf_err *err) {
    sq *q = state;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "DELETE FROM ");
    qid2(&b, "_cdc_tombstones_", t->name, "");
    cf_buf_printf(&b, " WHERE \"_deleted_at\" < %" PRId64, older_than);
    cf_code rc = exec(q, b.data, err);
    cf_buf_free(&b);
    return rc;
}

/* ---------------- staleness ---------------- */

static cf_code sq_stage(void *state, cf_sink_table *t, cf_change *const *changes, size_t n, cf_err *err) {
    sq *q = state;
    cf_code rc = prepare_table(q, t, err);
    if (rc) return rc;
    sq_tbl *x = t->target_state;
    char *keep = cf_xmalloc(t->n_cols + 1);
    for (size_t i = 0; i < n && !rc; i++) {
        const cf_change *c = changes[i];
        sqlite3_bind_int(x->stage, 1, c->op);
        sqlite3_bind_text(x->stage, 2, c->seq_text, -1, SQLITE_STATIC);
        if (c->has_keep) {
            for (size_t k = 0; k < t->n_cols; k++)
                keep[k] = k < c->n_cells && c->cells[k].kind == CF_CELL_KEEP ? '1' : '0';
            keep[t->n_cols] = 0;
            sqlite3_bind_text(x->stage, 3, keep, -1, SQLITE_TRANSIENT);
        } else {
            sqlite3_bind_null(x->stage, 3);
        }
        bind_row(x->stage, t, c, 4);
        rc = step(q, x->stage, err);
    }
    free(keep);
    return rc;
}

static cf_code sq_apply_staged(void *state, cf_sink_table *t, size_t *applied, cf_err *err) {
    sq *q = state;
    *applied = 0;
    cf_code rc = exec(q, "BEGIN IMMEDIATE", err);
    if (rc) return rc;
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "SELECT \"_ing\", \"_op\", \"_seq\", \"_keep\"");
    for (size_t i = 0; i < t->n_cols; i++) cf_buf_append_str(&b, ", "), qid(&b, t->cols[i].name);
    cf_buf_append_str(&b, " FROM ");
    qid2(&b, "_cdc_staged_", t->name, "");
    cf_buf_append_str(&b, " ORDER BY \"_ing\"");
    sqlite3_stmt *st;
    cf_arena *a = cf_arena_new(1 << 20);
    cf_change **v = NULL;
    size_t n = 0, cap = 0;
    int64_t max_ing = -1;
    if (sqlite3_prepare_v2(q->db, b.data, -1, &st, NULL) != SQLITE_OK) rc = db_err(q, err, "reading staged", b.data);
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        cf_change *c = cf_arena_alloc(a, sizeof *c);
        memset(c, 0, sizeof *c);
        max_ing = sqlite3_column_int64(st, 0);
        c->op = sqlite3_column_int(st, 1) ? CF_CHANGE_DELETE : CF_CHANGE_UPSERT;
        const char *seq = (const char *)sqlite3_column_text(st, 2);
        snprintf(c->seq_text, sizeof c->seq_text, "%s", seq ? seq : "");
        if (cf_seq_parse(c->seq_text, &c->seq, err)) {
            rc = CF_ERR_CORRUPT;
            break;
        }
        const char *keep = (const char *)sqlite3_column_text(st, 3);
        c->n_cells = t->n_cols;
        c->cells = cf_arena_alloc(a, (t->n_cols + 1) * sizeof *c->cells);
        for (size_t i = 0; i < t->n_cols; i++) {
            cf_cell *x = &c->cells[i];
            memset(x, 0, sizeof *x);
            int col = (int)i + 4;
            if (keep && keep[i] == '1') {
                x->kind = CF_CELL_KEEP, c->has_keep = true;
                continue;
            }
            switch (sqlite3_column_type(st, col)) {
            case SQLITE_INTEGER: x->kind = CF_CELL_INT, x->u.i = sqlite3_column_int64(st, col); break;
            case SQLITE_FLOAT: x->kind = CF_CELL_REAL, x->u.f = sqlite3_column_double(st, col); break;
            case SQLITE_TEXT:
                x->kind = CF_CELL_TEXT, x->len = (uint32_t)sqlite3_column_bytes(st, col);
                x->u.p = cf_arena_strndup(a, (const char *)sqlite3_column_text(st, col), x->len);
                break;
            case SQLITE_BLOB: {
                x->kind = CF_CELL_BLOB, x->len = (uint32_t)sqlite3_column_bytes(st, col);
                char *p = cf_arena_alloc(a, x->len + 1);
                if (x->len) memcpy(p, sqlite3_column_blob(st, col), x->len);
                x->u.p = p;
                break;
            }
            default: break;
            }
        }
        if (n == cap) cap = cap ? cap * 2 : 1024, v = cf_xrealloc(v, cap * sizeof *v);
        v[n++] = c;
    }
    if (st) sqlite3_finalize(st);
    if (!rc && n) {
        size_t m = cf_sink_compact(v, n, t->n_key);
        rc = sq_apply(q, t, v, m, err);
        if (!rc) {
            cf_buf_reset(&b);
            cf_buf_append_str(&b, "DELETE FROM ");
            qid2(&b, "_cdc_staged_", t->name, "");
            cf_buf_printf(&b, " WHERE \"_ing\" <= %" PRId64, max_ing);
            rc = exec(q, b.data, err);
        }
    }
    if (!rc) rc = exec(q, "COMMIT", err);
    else exec(q, "ROLLBACK", NULL);
    if (!rc) *applied = n;
    free(v);
    cf_arena_destroy(a);
    cf_buf_free(&b);
    return rc;
}

/* The row's sequence number, else its tombstone's (rare: a delete without a
 * usable sequence field), so a statement made per call. */
static cf_code sq_stored_seq(void *state, cf_sink_table *t, const cf_change *key, bool *found, cf_seq *seq,
                             cf_err *err) {
    sq *q = state;
    *found = false;
    for (int pass = 0; pass < 2 && !*found; pass++) {
        cf_buf b = CF_BUF_INIT;
        cf_buf_append_str(&b, "SELECT \"" SEQ_COL "\" FROM ");
        qid2(&b, pass ? "_cdc_tombstones_" : "", t->name, "");
        cf_buf_append_str(&b, " WHERE ");
        for (size_t k = 0; k < t->n_key; k++) {
            if (k) cf_buf_append_str(&b, " AND ");
            qid(&b, t->cols[k].name);
            cf_buf_printf(&b, " = ?%zu", k + 1);
        }
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(q->db, b.data, -1, &st, NULL) != SQLITE_OK) { /* no such table yet */
            cf_buf_free(&b);
            return CF_OK;
        }
        for (size_t k = 0; k < t->n_key; k++) bind_cell(st, (int)k + 1, &key->cells[k]);
        int r = sqlite3_step(st);
        cf_code rc = CF_OK;
        if (r == SQLITE_ROW) {
            const char *text = (const char *)sqlite3_column_text(st, 0);
            rc = cf_seq_parse(text ? text : "", seq, err);
            *found = rc == CF_OK;
        } else if (r != SQLITE_DONE) {
            rc = db_err(q, err, "reading a stored sequence number", b.data);
        }
        sqlite3_finalize(st);
        cf_buf_free(&b);
        if (rc) return rc;
    }
    return CF_OK;
}

/* ---------------- positions ---------------- */

static cf_code sq_save_positions(void *state, const char *consumer, const cf_sink_stored_position *p, size_t n,
                                 cf_err *err) {
    sq *q = state;
    const char *sql = "INSERT INTO \"_cdcflow_positions\" VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO UPDATE SET "
                      "\"next_offset\" = excluded.\"next_offset\", \"source_offset\" = excluded.\"source_offset\"";
    if (!q->pos_put && sqlite3_prepare_v2(q->db, sql, -1, &q->pos_put, NULL) != SQLITE_OK)
        return db_err(q, err, "preparing the positions statement", sql);
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = q->pos_put;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, consumer, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, p[i].stream, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, p[i].partition);
        sqlite3_bind_int64(st, 4, p[i].next_offset);
        if (p[i].source_offset) sqlite3_bind_text(st, 5, p[i].source_offset, -1, SQLITE_STATIC);
        else sqlite3_bind_null(st, 5);
        int r = sqlite3_step(st);
        sqlite3_reset(st);
        if (r != SQLITE_DONE) return db_err(q, err, "storing the input positions", sql);
    }
    return CF_OK;
}

static cf_code sq_drop_positions(void *state, const char *consumer, const char *stream, int32_t partition,
                                 cf_err *err) {
    sq *q = state;
    const char *sql = stream ? "DELETE FROM \"_cdcflow_positions\" WHERE \"consumer\" = ?1 AND \"stream\" = ?2 AND "
                               "\"partition\" = ?3"
                             : "DELETE FROM \"_cdcflow_positions\" WHERE \"consumer\" = ?1";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(q, err, "preparing the positions statement", sql);
    sqlite3_bind_text(st, 1, consumer, -1, SQLITE_STATIC);
    if (stream) sqlite3_bind_text(st, 2, stream, -1, SQLITE_STATIC), sqlite3_bind_int(st, 3, partition);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    return r == SQLITE_DONE ? CF_OK : db_err(q, err, "removing input positions", sql);
}

static cf_code sq_load_positions(void *state, const char *consumer, cf_sink_stored_position **out, size_t *n,
                                 cf_err *err) {
    sq *q = state;
    *out = NULL;
    *n = 0;
    const char *sql = "SELECT \"stream\", \"partition\", \"next_offset\", \"source_offset\" FROM "
                      "\"_cdcflow_positions\" WHERE \"consumer\" = ?1 ORDER BY \"stream\", \"partition\"";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(q, err, "reading the input positions", sql);
    sqlite3_bind_text(st, 1, consumer, -1, SQLITE_STATIC);
    size_t cap = 0;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) *out = cf_xrealloc(*out, (cap = cap ? cap * 2 : 16) * sizeof **out);
        const char *so = (const char *)sqlite3_column_text(st, 3);
        (*out)[(*n)++] = (cf_sink_stored_position){cf_xstrdup((const char *)sqlite3_column_text(st, 0)),
                                                   sqlite3_column_int(st, 1), sqlite3_column_int64(st, 2),
                                                   so ? cf_xstrdup(so) : NULL};
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE) {
        cf_sink_stored_positions_free(*out, *n);
        *out = NULL;
        *n = 0;
        return db_err(q, err, "reading the input positions", sql);
    }
    return CF_OK;
}

/* ---------------- Cassandra row state (src/sink/cassandra.c) ---------------- */

static cf_code sq_state_get(void *state, const char *space, const void *key, size_t klen, cf_buf *out, bool *found,
                            cf_err *err) {
    sq *q = state;
    *found = false;
    if (sk_state_table_prepare(q->db, &q->cstate) != SQLITE_OK)
        return db_err(q, err, "preparing the Cassandra state table", NULL);
    if (sk_state_table_get(&q->cstate, space, key, klen, out, found) != SQLITE_OK)
        return db_err(q, err, "reading the Cassandra row state", NULL);
    return CF_OK;
}

static cf_code sq_state_put(void *state, const char *space, const void *key, size_t klen, const void *val,
                            size_t vlen, cf_err *err) {
    sq *q = state;
    if (sk_state_table_prepare(q->db, &q->cstate) != SQLITE_OK)
        return db_err(q, err, "preparing the Cassandra state table", NULL);
    if (sk_state_table_put(&q->cstate, space, key, klen, val, vlen) != SQLITE_OK)
        return db_err(q, err, vlen ? "storing the Cassandra row state" : "removing a Cassandra row state", NULL);
    return CF_OK;
}

const cf_sink_target cf_sink_target_sqlite = {
    .name = "sqlite",
    .writer_thread = true, /* one connection, used by one thread at a time */
    .open = sq_open,
    .ensure_table = sq_ensure_table,
    .begin = sq_begin,
    .apply = sq_apply,
    .stage = sq_stage,
    .apply_staged = sq_apply_staged,
    .purge_tombstones = sq_purge,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .free_table_state = sq_free_table_state,
    .close = sq_close,
    .save_positions = sq_save_positions,
    .load_positions = sq_load_positions,
    .drop_positions = sq_drop_positions,
    .stored_seq = sq_stored_seq,
    .state_get = sq_state_get,
    .state_put = sq_state_put,
};
