/*
 * state_table.c - the "_cdc_cassandra_state" table in an SQLite database
 * (state_table.h says who uses it).
 */
#include "state_table.h"

#define STATE_TABLE "\"_cdc_cassandra_state\""

int sk_state_table_prepare(sqlite3 *db, sk_state_table *t) {
    if (t->get) return SQLITE_OK;
    int r = sqlite3_exec(db,
                         "CREATE TABLE IF NOT EXISTS " STATE_TABLE " (\"table_name\" TEXT NOT NULL, "
                         "\"partition_key\" BLOB NOT NULL, \"state\" BLOB NOT NULL, PRIMARY KEY (\"table_name\", "
                         "\"partition_key\"))",
                         NULL, NULL, NULL);
    if (r == SQLITE_OK)
        r = sqlite3_prepare_v2(db, "SELECT \"state\" FROM " STATE_TABLE " WHERE \"table_name\" = ?1 AND "
                                   "\"partition_key\" = ?2", -1, &t->get, NULL);
    if (r == SQLITE_OK)
        r = sqlite3_prepare_v2(db, "INSERT INTO " STATE_TABLE " VALUES (?1, ?2, ?3) ON CONFLICT DO UPDATE SET "
                                   "\"state\" = excluded.\"state\"", -1, &t->put, NULL);
    if (r == SQLITE_OK)
        r = sqlite3_prepare_v2(db, "DELETE FROM " STATE_TABLE " WHERE \"table_name\" = ?1 AND \"partition_key\" = ?2",
                               -1, &t->del, NULL);
    if (r != SQLITE_OK) sk_state_table_finalize(t);
    return r;
}

static void bind_key(sqlite3_stmt *st, const char *space, const void *key, size_t klen) {
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, space, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, klen ? key : "", (int)klen, SQLITE_STATIC);
}

int sk_state_table_get(sk_state_table *t, const char *space, const void *key, size_t klen, cf_buf *out, bool *found) {
    *found = false;
    bind_key(t->get, space, key, klen);
    int r = sqlite3_step(t->get);
    if (r == SQLITE_ROW) {
        cf_buf_append(out, sqlite3_column_blob(t->get, 0), (size_t)sqlite3_column_bytes(t->get, 0));
        *found = true;
        r = sqlite3_step(t->get);
    }
    sqlite3_reset(t->get);
    return r == SQLITE_DONE ? SQLITE_OK : r;
}

int sk_state_table_put(sk_state_table *t, const char *space, const void *key, size_t klen, const void *val,
                       size_t vlen) {
    sqlite3_stmt *st = vlen ? t->put : t->del;
    bind_key(st, space, key, klen);
    if (vlen) sqlite3_bind_blob(st, 3, val, (int)vlen, SQLITE_STATIC);
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    return r == SQLITE_DONE ? SQLITE_OK : r;
}

void sk_state_table_finalize(sk_state_table *t) {
    sqlite3_finalize(t->get);
    sqlite3_finalize(t->put);
    sqlite3_finalize(t->del);
    t->get = t->put = t->del = NULL;
}
