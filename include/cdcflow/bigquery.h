/*
 * cdcflow/bigquery.h - the BigQuery target's parts (module sink/bigquery):
 * table schemas, the Storage Write API's writer schema and row encoding,
 * the AppendRows stream over gRPC, the REST API v2 for tables, and Google
 * credentials.
 *
 * WHAT IT OWNS
 *   schema     a BigQuery table schema as a tree (cf_bq_field), read from
 *              and written as the REST API's JSON (tables.get / insert /
 *              patch).
 *   writer     the proto2 DescriptorProto that AppendRows takes as
 *              ProtoSchema.proto_descriptor, built at run time from the
 *              table schema plus the CDC pseudo-columns _CHANGE_TYPE and
 *              _CHANGE_SEQUENCE_NUMBER (writer schema only, never table
 *              columns); rows encoded in protobuf wire format against it
 *              (shared/specs/bigquery-cdc.md section 4): TIMESTAMP int64
 *              microseconds, DATE int32 days, NUMERIC / BIGNUMERIC / JSON /
 *              DATETIME / TIME / GEOGRAPHY / INTERVAL as strings, RECORD as a
 *              nested message, REPEATED as a repeated field.
 *   requests   AppendRowsRequest built by hand, AppendRowsResponse decoded
 *              (the decoder reads bytes from the network: fuzz/fuzz_bq_response).
 *   stream     one AppendRows bidi call on gRPC's C core (grpc/grpc.h), with
 *              the bearer token and x-goog-request-params metadata, and the
 *              unary GetWriteStream on the same channel (WriteStream
 *              decoded: fuzz/fuzz_bq_write_stream).
 *   rest       tables.get / insert / patch and jobs.query over libcurl.
 *   auth       access tokens from a service account key (JWT RS256 signed
 *              with OpenSSL, exchanged at its token URI), an authorized-user
 *              refresh token, or the metadata server; Application Default
 *              Credentials lookup. Tokens are refreshed before they expire
 *              and never logged.
 *
 * WHY OUR OWN PROTOBUF ENCODER (and not protobuf-c): the writer schema is a
 * descriptor made at run time from whatever table the topic maps to;
 * protobuf-c only encodes messages it generated C code for at build time,
 * and has no dynamic messages. The few fixed messages (AppendRowsRequest,
 * its response, DescriptorProto) would need Google's .proto files in the
 * tree to generate code from. The wire format is small (varints, tags,
 * length prefixes), so writing it directly also lets the hot path put a
 * row's bytes straight into the request buffer with precomputed tags.
 *
 * OWNERSHIP is written next to each function. THREADS: every handle here is
 * used by one thread (a sink task); gRPC's own threads are internal to it.
 */
#ifndef CDCFLOW_BIGQUERY_H
#define CDCFLOW_BIGQUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/error.h"
#include "cdcflow/sink.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------- table schemas ---------------- */

typedef enum cf_bq_type {
    CF_BQ_STRING = 0,
    CF_BQ_BYTES,
    CF_BQ_INT64,
    CF_BQ_FLOAT64,
    CF_BQ_BOOL,
    CF_BQ_NUMERIC,
    CF_BQ_BIGNUMERIC,
    CF_BQ_TIMESTAMP,
    CF_BQ_DATE,
    CF_BQ_TIME,
    CF_BQ_DATETIME,
    CF_BQ_GEOGRAPHY,
    CF_BQ_JSON,
    CF_BQ_INTERVAL,
    CF_BQ_RECORD
} cf_bq_type;

typedef enum cf_bq_mode { CF_BQ_NULLABLE = 0, CF_BQ_REQUIRED, CF_BQ_REPEATED } cf_bq_mode;

typedef struct cf_bq_field {
    char *name;
    cf_bq_type type;
    cf_bq_mode mode;
    struct cf_bq_field *fields; /* RECORD: its fields */
    size_t n_fields;
} cf_bq_field;

/* The REST API's name ("INT64", "RECORD", ...). Static. */
const char *cf_bq_type_name(cf_bq_type t);
const char *cf_bq_mode_name(cf_bq_mode m);
/* Parse a type name; the legacy names INTEGER, FLOAT, BOOLEAN, STRUCT and
 * BIGDECIMAL are accepted. False for others. */
bool cf_bq_type_parse(const char *name, cf_bq_type *out);
/* Free an array of fields (recursively) and the array. NULL-safe. */
void cf_bq_fields_free(cf_bq_field *f, size_t n);
cf_bq_field *cf_bq_fields_clone(const cf_bq_field *f, size_t n);

/* The column type the sink creates for an engine column type. */
cf_bq_type cf_bq_type_for_col(cf_col_type t);
/* May cells of engine type `col` be written to a column of BigQuery type
 * `bq` (e.g. TIMESTAMP cells into DATETIME, TEXT into GEOGRAPHY)? */
bool cf_bq_col_fits(cf_col_type col, const cf_bq_field *bq);

/* A field name the writer schema can carry as a proto field name:
 * [A-Za-z_][A-Za-z0-9_]*, at most 300 bytes (BigQuery's column limit). */
bool cf_bq_name_ok(const char *name);

/* ---------------- the writer schema ---------------- */

/* Field numbers: the fields in order get 1..n; with cdc, _CHANGE_TYPE is
 * n+1 and _CHANGE_SEQUENCE_NUMBER n+2 (proto2 optional strings). RECORD
 * fields become nested types (all nested in the one top-level message, as
 * ProtoSchema wants a self-contained descriptor). Appends the serialized
 * DescriptorProto to out. A name the writer cannot carry or a RECORD with
 * no fields is CF_ERR_SCHEMA. */
cf_code cf_bq_descriptor(const cf_bq_field *fields, size_t n, bool cdc, cf_buf *out, cf_err *err);

/* A row encoder for one writer schema (top-level fields = columns). */
typedef struct cf_bq_rowenc cf_bq_rowenc;
/* Copies fields. */
cf_code cf_bq_rowenc_new(const cf_bq_field *fields, size_t n, bool cdc, cf_bq_rowenc **out, cf_err *err);
void cf_bq_rowenc_destroy(cf_bq_rowenc *e); /* NULL-safe */
size_t cf_bq_rowenc_columns(const cf_bq_rowenc *e);

/* Append one row's message bytes to out. cells[i] is column i (i <
 * n_cells; later columns are NULL). A cell converts to its column's type:
 * INT64/BOOL from INT, FLOAT64 from REAL (or INT), BYTES from BLOB (or
 * TEXT), DATE from "YYYY-MM-DD" text (or INT days), TIMESTAMP from
 * "YYYY-MM-DD HH:MM:SS[.ffffff][Z|+hh:mm]" text (or INT microseconds), the
 * string types from TEXT, RECORD and REPEATED columns from JSON text (an
 * object / array; inside it, numbers for TIMESTAMP are Connect's
 * milliseconds and for DATE days, BYTES are base64). change_type (NULL: no
 * pseudo-columns) and seq are the CDC values. A cell that does not fit is
 * CF_ERR_SCHEMA naming the column; on error out is left as it was. */
cf_code cf_bq_encode_row(const cf_bq_rowenc *e, const cf_cell *cells, size_t n_cells, const char *change_type,
                         const char *seq, cf_buf *out, cf_err *err);

/* "YYYY-MM-DD" -> days since 1970-01-01; "YYYY-MM-DD[T ]HH:MM:SS[.f]"
 * with optional Z / +hh:mm / -hh:mm -> microseconds since the epoch (UTC).
 * False when the text is not such a literal. */
bool cf_bq_parse_date(const char *s, size_t n, int32_t *days);
bool cf_bq_parse_timestamp(const char *s, size_t n, int64_t *micros);

/* ---------------- AppendRows messages ---------------- */

/* One AppendRowsRequest: write_stream (NULL: left out, as on later requests
 * of a stream), proto_rows { writer_schema { proto_descriptor =
 * descriptor } when descriptor != NULL, rows { serialized_rows } }, where
 * rows holds the ProtoRows body already (each row as field 1, see
 * cf_bq_rows_add), and trace_id when not NULL. Appends to out. */
void cf_bq_append_request(cf_buf *out, const char *write_stream, const cf_buf *descriptor, const uint8_t *rows,
                          size_t rows_len, const char *trace_id);
/* Append one encoded row as ProtoRows.serialized_rows (field 1). */
void cf_bq_rows_add(cf_buf *rows, const void *row, size_t len);
/* Bytes a request adds around `rows_len` bytes of rows (upper bound). */
size_t cf_bq_request_overhead(const char *write_stream, size_t descriptor_len);

typedef struct cf_bq_row_error {
    int64_t index; /* row index in the request */
    int32_t code;  /* RowError.RowErrorCode: 1 = FIELDS_ERROR */
    char *message;
} cf_bq_row_error;

typedef struct cf_bq_append_resp {
    bool has_result;   /* append_result present (success) */
    bool has_offset;
    int64_t offset;    /* append_result.offset (not on the default stream) */
    bool has_error;
    int32_t code;      /* error: google.rpc.Status code (gRPC codes) */
    char *message;     /* error: its message */
    int32_t storage_code; /* StorageError.code found in the status details (0: none) */
    cf_bq_row_error *row_errors;
    size_t n_row_errors;
    bool updated_schema; /* the table's schema changed (updated_schema present) */
    char *write_stream;
} cf_bq_append_resp;

/* Decode an AppendRowsResponse (unknown fields skipped, as protobuf does;
 * truncated or malformed bytes are CF_ERR_CORRUPT with the byte offset).
 * Free with cf_bq_append_resp_free (also after an error). */
cf_code cf_bq_append_resp_decode(const uint8_t *p, size_t n, cf_bq_append_resp *out, cf_err *err);
void cf_bq_append_resp_free(cf_bq_append_resp *r);

/* ---------------- GetWriteStream messages ---------------- */

/* WriteStreamView: BASIC leaves table_schema out, FULL includes it. */
enum { CF_BQ_VIEW_BASIC = 1, CF_BQ_VIEW_FULL = 2 };
/* WriteStream.Type */
enum { CF_BQ_STREAM_COMMITTED = 1, CF_BQ_STREAM_PENDING = 2, CF_BQ_STREAM_BUFFERED = 3 };

/* A GetWriteStreamRequest { name = 1, view = 3 } (view 0: left out, the
 * server's default, BASIC). Appends to out. */
void cf_bq_get_write_stream_request(cf_buf *out, const char *name, int view);

typedef struct cf_bq_write_stream {
    char *name;
    int32_t type;       /* WriteStream.Type (0: absent) */
    int32_t write_mode; /* WriteStream.WriteMode: 1 = INSERT */
    char *location;
    bool has_schema;    /* table_schema present (view FULL) */
    char **columns;     /* table_schema's top-level field names, in order */
    size_t n_columns;
} cf_bq_write_stream;

/* Decode a WriteStream (GetWriteStream's answer; unknown fields skipped;
 * malformed bytes are CF_ERR_CORRUPT with the byte offset:
 * fuzz/fuzz_bq_write_stream). Free with cf_bq_write_stream_free (also
 * after an error). */
cf_code cf_bq_write_stream_decode(const uint8_t *p, size_t n, cf_bq_write_stream *out, cf_err *err);
void cf_bq_write_stream_free(cf_bq_write_stream *w);

/* gRPC status codes used here. */
enum {
    CF_GRPC_OK = 0,
    CF_GRPC_CANCELLED = 1,
    CF_GRPC_UNKNOWN = 2,
    CF_GRPC_INVALID_ARGUMENT = 3,
    CF_GRPC_DEADLINE_EXCEEDED = 4,
    CF_GRPC_NOT_FOUND = 5,
    CF_GRPC_ALREADY_EXISTS = 6,
    CF_GRPC_PERMISSION_DENIED = 7,
    CF_GRPC_RESOURCE_EXHAUSTED = 8,
    CF_GRPC_FAILED_PRECONDITION = 9,
    CF_GRPC_ABORTED = 10,
    CF_GRPC_OUT_OF_RANGE = 11,
    CF_GRPC_UNIMPLEMENTED = 12,
    CF_GRPC_INTERNAL = 13,
    CF_GRPC_UNAVAILABLE = 14,
    CF_GRPC_UNAUTHENTICATED = 16
};
const char *cf_grpc_code_name(int code);
/* The codes the writer retries with backoff: CANCELLED, DEADLINE_EXCEEDED,
 * RESOURCE_EXHAUSTED (throttling), ABORTED, INTERNAL, UNAVAILABLE. */
bool cf_grpc_code_retryable(int code);

/* ---------------- credentials ---------------- */

typedef enum cf_bq_key_source {
    CF_BQ_KEY_FILE = 0,        /* keyfile is a path to a JSON key */
    CF_BQ_KEY_JSON,            /* keyfile is the JSON key itself */
    CF_BQ_KEY_APPLICATION_DEFAULT
} cf_bq_key_source;

typedef struct cf_bq_auth_opts {
    cf_bq_key_source source;
    const char *keyfile;      /* FILE / JSON; may be NULL with APPLICATION_DEFAULT */
    const char *token_uri;    /* overrides the key's token_uri (NULL: the key's) */
    const char *metadata_url; /* NULL: $GCE_METADATA_HOST or http://metadata.google.internal */
    const char *scope;        /* NULL: https://www.googleapis.com/auth/bigquery */
    const char *home;         /* NULL: $HOME (tests) */
    int timeout_ms;           /* per HTTP request (0: 30000) */
} cf_bq_auth_opts;

typedef struct cf_bq_auth cf_bq_auth;
/* Finds the credentials (not a token yet): APPLICATION_DEFAULT looks at
 * $GOOGLE_APPLICATION_CREDENTIALS, then
 * ~/.config/gcloud/application_default_credentials.json, then the metadata
 * server. Key types: service_account, authorized_user. Copies opts. */
cf_code cf_bq_auth_new(const cf_bq_auth_opts *o, cf_bq_auth **out, cf_err *err);
void cf_bq_auth_destroy(cf_bq_auth *a);
/* A valid access token (fetched or refreshed when less than five minutes
 * of its life are left). The string lives until the next call. */
cf_code cf_bq_auth_token(cf_bq_auth *a, const char **token, cf_err *err);
/* The project the credentials name (key's project_id, quota_project_id, or
 * the metadata server's), or NULL. */
const char *cf_bq_auth_project(cf_bq_auth *a);
/* "service account x@y (key file)", "metadata server", ... for logs. */
const char *cf_bq_auth_describe(const cf_bq_auth *a);
/* For tests: the JWT assertion a service account key would send at time
 * now (malloc'd), so a test can check it with another implementation. */
cf_code cf_bq_auth_jwt(cf_bq_auth *a, int64_t now, char **jwt, cf_err *err);

/* ---------------- HTTP (libcurl) ---------------- */

typedef struct cf_bq_http_resp {
    long status;
    cf_buf body;
    char etag[128];
} cf_bq_http_resp;

/* One request. headers: NULL-terminated "Name: value" lines (may be NULL).
 * body NULL = no body. Transport failures are CF_ERR_TRANSPORT; any HTTP
 * status is CF_OK (the caller reads r->status). The body is never logged. */
cf_code cf_bq_http(const char *method, const char *url, const char *const *headers, const char *body,
                   size_t body_len, int timeout_ms, cf_bq_http_resp *r, cf_err *err);
void cf_bq_http_resp_free(cf_bq_http_resp *r);

/* ---------------- REST API v2: tables ---------------- */

typedef struct cf_bq_table {
    cf_bq_field *fields;
    size_t n_fields;
    char **pk;          /* tableConstraints.primaryKey.columns */
    size_t n_pk;
    char etag[128];
    int seq_sections;   /* label cdcflow_seq_sections (0: none) */
    char max_staleness[64]; /* as the API returns it ("" if none) */
} cf_bq_table;

void cf_bq_table_free(cf_bq_table *t);
/* Parse a Table resource (tables.get's JSON). Bad JSON or shapes are
 * CF_ERR_CORRUPT (fuzz/fuzz_bq_table). */
cf_code cf_bq_table_parse(const char *json, size_t len, cf_bq_table *out, cf_err *err);
/* The schema.fields JSON array of fields (appended to out). */
void cf_bq_fields_json(const cf_bq_field *f, size_t n, cf_buf *out);

typedef struct cf_bq_rest cf_bq_rest;
/* api: NULL = https://bigquery.googleapis.com. auth is borrowed. */
cf_bq_rest *cf_bq_rest_new(const char *api, cf_bq_auth *auth, int timeout_ms);
void cf_bq_rest_destroy(cf_bq_rest *r);
/* tables.get: CF_ERR_NOT_FOUND when it does not exist. */
cf_code cf_bq_rest_get_table(cf_bq_rest *r, const char *project, const char *dataset, const char *table,
                             cf_bq_table *out, cf_err *err);
/* tables.insert with the body given (a Table resource); CF_ERR_STATE when
 * it exists already (409). */
cf_code cf_bq_rest_insert_table(cf_bq_rest *r, const char *project, const char *dataset, const char *body,
                                cf_err *err);
/* tables.patch with the body; if_match (NULL: none) is the etag that must
 * still hold: a changed table is CF_ERR_AGAIN (412 / 409). */
cf_code cf_bq_rest_patch_table(cf_bq_rest *r, const char *project, const char *dataset, const char *table,
                               const char *body, const char *if_match, cf_err *err);
/* jobs.query of one GoogleSQL statement (DDL), waiting for it to finish. */
cf_code cf_bq_rest_query(cf_bq_rest *r, const char *project, const char *sql, cf_err *err);

/* ---------------- the AppendRows stream (gRPC) ---------------- */

typedef struct cf_bq_stream cf_bq_stream;

/* endpoint: "host:port" (TLS), "https://host[:port]" (TLS) or
 * "http://host:port" (plaintext, for test servers and emulators). Opens
 * the channel; the call starts at the first send. */
cf_code cf_bq_stream_new(const char *endpoint, const char *write_stream, cf_bq_stream **out, cf_err *err);
void cf_bq_stream_destroy(cf_bq_stream *s); /* cancels a call in progress */
/* Start a call (closing one in progress) with this bearer token. */
cf_code cf_bq_stream_open(cf_bq_stream *s, const char *token, cf_err *err);
bool cf_bq_stream_is_open(const cf_bq_stream *s);
/* Send one request message (copied). A call that ended is CF_ERR_TRANSPORT
 * with its status in *grpc_code. */
cf_code cf_bq_stream_send(cf_bq_stream *s, const void *msg, size_t len, int *grpc_code, cf_err *err);
/* The next response message into out (replaced), waiting at most
 * timeout_ms. CF_ERR_AGAIN on timeout; a call that ended (the server closed
 * the stream, or the connection broke) is CF_ERR_TRANSPORT with the
 * status code in *grpc_code and its message in err. */
cf_code cf_bq_stream_recv(cf_bq_stream *s, int timeout_ms, cf_buf *out, int *grpc_code, cf_err *err);
/* End the call (cancel) and forget it; the next send needs an open. */
void cf_bq_stream_close(cf_bq_stream *s);
/* One unary GetWriteStream call on the stream's channel (req: a
 * GetWriteStreamRequest, see cf_bq_get_write_stream_request), with the same
 * bearer token and routing header as AppendRows, independent of an
 * AppendRows call in progress. Waits at most timeout_ms (then
 * DEADLINE_EXCEEDED). The answer's bytes replace out's. A failed call is
 * CF_ERR_TRANSPORT with its status in *grpc_code and its message in err. */
cf_code cf_bq_get_write_stream(cf_bq_stream *s, const char *token, const void *req, size_t len, int timeout_ms,
                               cf_buf *out, int *grpc_code, cf_err *err);

/* ---------------- the target ---------------- */

extern const cf_sink_target cf_sink_target_bigquery;

#ifdef __cplusplus
}
#endif
#endif
