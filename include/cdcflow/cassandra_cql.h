/*
 * cdcflow/cassandra_cql.h - a small CQL native protocol client (protocol v5 and v4,
 * plain TCP, blocking with timeouts): enough to read Cassandra's schema into
 * the cassandra_schema.h model and to follow schema changes.
 *
 * Protocol v5 (Cassandra 4.0+) with its CRC-checked segment framing (CRC24
 * header, CRC32 payload, envelopes split across segments when larger than
 * 128 KiB), or v4 (Cassandra 3.x .. 5.0).
 * What it does: STARTUP (with PLAIN SASL authentication when the server asks),
 * QUERY with result paging, RESULT Rows decoding (all column types skipped or
 * kept as raw bytes), ERROR frames as cf_err, REGISTER for SCHEMA_CHANGE and
 * EVENT frames (queued while a response is awaited). Not done: compression
 * (v4 LZ4/Snappy, v5 compressed segments), TLS, prepared statements, several
 * hosts, the v5 USE_BETA flag.
 *
 * Schema loading runs `SELECT JSON * FROM system_schema.<t>` for keyspaces,
 * tables, views, columns, dropped_columns and types, and hands the rows to
 * cf_cass_schema_load_system_json(), so a table is described exactly as
 * Cassandra describes it (ids, dropped columns, clustering order).
 *
 * OWNERSHIP: cf_cql_conn is one connection, used by one thread at a time.
 * cf_cql_result is owned by the caller (cf_cql_result_free).
 */
#ifndef CDCFLOW_CASSANDRA_CQL_H
#define CDCFLOW_CASSANDRA_CQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/cassandra_schema.h"
#include "cdcflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_cql_conn cf_cql_conn;

typedef struct cf_cql_options {
    const char *host;          /* name or address; default "127.0.0.1" */
    int port;                  /* default 9042 */
    int connect_timeout_ms;    /* default 5000 */
    int request_timeout_ms;    /* default 30000 */
    const char *username;      /* PLAIN auth if the server asks (NULL: fail then) */
    const char *password;
    int page_size;             /* rows per page, default 1000 */
    /* 4 or 5; 0 = cf_cql_connect tries v5 and falls back to v4 on a new
     * connection, cf_cql_connect_fd uses v4 */
    int protocol_version;
    /* If set, every frame the server sends is appended to this file (9-byte
     * header + body, as received), to make fixtures from a real server. */
    const char *record_path;
    /* If set, asked at least every 100 ms of every wait on the network
     * (connect, send, receive): true ends the wait, and the connect or
     * request fails with CF_ERR_AGAIN ("interrupted"). A stopping caller
     * (the cassandra-cdc source) is thereby not held for the timeouts
     * above by a node that accepts and does not answer. */
    bool (*interrupted)(void *arg);
    void *interrupt_arg;
} cf_cql_options;

/* Consistency levels (protocol values). */
#define CF_CQL_ONE 0x0001
#define CF_CQL_QUORUM 0x0004
#define CF_CQL_LOCAL_ONE 0x000A
#define CF_CQL_LOCAL_QUORUM 0x0006

/* Connect and send STARTUP (CQL_VERSION 3.0.0) with the chosen protocol
 * version (see protocol_version); authenticates with
 * PLAIN if asked. Errors: CF_ERR_TRANSPORT (connect, timeout, peer closed),
 * CF_ERR_CONFIG (authentication needed/refused), CF_ERR_CORRUPT (bad frame). */
cf_code cf_cql_connect(const cf_cql_options *opt, cf_cql_conn **out, cf_err *err);
/* The same over an already connected socket (takes the fd; tests use a
 * socketpair with a scripted server). */
cf_code cf_cql_connect_fd(int fd, const cf_cql_options *opt, cf_cql_conn **out, cf_err *err);
void cf_cql_close(cf_cql_conn *c); /* NULL-safe */

/* A query result: every page gathered. Values are raw protocol bytes
 * (big-endian, as Cassandra serializes the type); NULL value = null. */
typedef struct cf_cql_value {
    const uint8_t *data; /* NULL for null */
    int32_t len;         /* -1 for null */
} cf_cql_value;

typedef struct cf_cql_result {
    int kind;              /* 1 void, 2 rows, 3 set_keyspace, 5 schema_change */
    size_t n_columns;
    char **column_names;
    uint16_t *column_type_ids; /* protocol type ids: 0x000D varchar, 0x0009 int, ... */
    size_t n_rows;
    cf_cql_value *values;  /* n_rows * n_columns, row-major */
    /* internal storage */
    uint8_t **pages;
    size_t n_pages;
} cf_cql_result;

/* Run one statement (no bound values) at the given consistency, following
 * paging until the last page. On a server ERROR frame: CF_ERR_TARGET with the
 * server's code and message in the detail. *out is the caller's. */
cf_code cf_cql_query(cf_cql_conn *c, const char *cql, uint16_t consistency, cf_cql_result **out, cf_err *err);
void cf_cql_result_free(cf_cql_result *r); /* NULL-safe */
const cf_cql_value *cf_cql_result_value(const cf_cql_result *r, size_t row, size_t col);
/* A text column as a malloc'd C string (NULL for null). */
char *cf_cql_result_text(const cf_cql_result *r, size_t row, size_t col);

/* Read the schema of the given keyspaces (NULL-terminated list; NULL = every
 * keyspace except Cassandra's own system keyspaces) into s. Tables whose
 * definition did not change are not duplicated; changed ones become a new
 * version of their id (see cf_cass_schema_add_table). Tables dropped in
 * Cassandra are kept (older segments may still hold their mutations). */
cf_code cf_cql_load_schema(cf_cql_conn *c, const char *const *keyspaces, cf_cass_schema *s, cf_err *err);
/* The same rows as one JSON document (the input of
 * cf_cass_schema_load_system_json); malloc'd into *json. */
cf_code cf_cql_fetch_schema_json(cf_cql_conn *c, const char *const *keyspaces, char **json, cf_err *err);

/* Schema change notifications. */
cf_code cf_cql_register_schema_events(cf_cql_conn *c, cf_err *err);

typedef struct cf_cql_event {
    char change[16];   /* CREATED, UPDATED, DROPPED */
    char target[16];   /* KEYSPACE, TABLE, TYPE, FUNCTION, AGGREGATE */
    char keyspace[256];
    char name[256];    /* table / type / function name; "" for KEYSPACE */
} cf_cql_event;

/* Wait up to timeout_ms for the next SCHEMA_CHANGE event (events that came
 * in while a query was running are returned first). CF_ERR_AGAIN on timeout. */
cf_code cf_cql_next_event(cf_cql_conn *c, int timeout_ms, cf_cql_event *ev, cf_err *err);

/* The protocol version in use (4 or 5). */
int cf_cql_protocol_version(const cf_cql_conn *c);

#ifdef __cplusplus
}
#endif
#endif
