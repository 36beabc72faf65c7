/*
 * state_table.h - the "_cdc_cassandra_state" table in an SQLite database
 * (the Cassandra partition states of src/sink/cassandra.c): the SQLite
 * target keeps it next to its tables, the BigQuery target in a local file
 * (cassandra.state.file). One code for both; each caller says in its own
 * words what failed (the functions return SQLite's result code).
 */
#ifndef CF_SINK_STATE_TABLE_H
#define CF_SINK_STATE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <sqlite3.h>

#include "cdcflow/buf.h"

typedef struct sk_state_table {
    sqlite3_stmt *get, *put, *del; /* prepared on first use */
} sk_state_table;

/* Create the table if missing and prepare the statements (once: SQLITE_OK
 * at once when prepared). */
int sk_state_table_prepare(sqlite3 *db, sk_state_table *t);
/* The state of (space, key) appended to out; *found false when there is none. */
int sk_state_table_get(sk_state_table *t, const char *space, const void *key, size_t klen, cf_buf *out, bool *found);
/* Insert or replace; vlen 0: remove the row (nothing left in the partition). */
int sk_state_table_put(sk_state_table *t, const char *space, const void *key, size_t klen, const void *val,
                       size_t vlen);
void sk_state_table_finalize(sk_state_table *t);

#endif
