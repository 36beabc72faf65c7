/*
 * cdcflow/record.h - records and raw messages.
 *
 * Two levels, as in Kafka Connect:
 *   cf_msg     what travels: a Kafka message (or a line of a record file):
 *              topic, partition, offset, timestamp, key and value as bytes
 *              (NULL = null), headers as bytes. Transports deal in cf_msg.
 *   cf_record  what connectors see: the same envelope with key and value as
 *              typed cf_value + cf_schema (converters turn one into the other).
 *              Source records also carry the source partition and source
 *              offset (schemaless maps of string -> string/int/long).
 *
 * OWNERSHIP: a cf_msg / cf_record owns every pointer in it; the _destroy
 * functions free them all. Setters copy their string arguments and take over
 * values and schema references, as documented per function.
 */
#ifndef CDCFLOW_RECORD_H
#define CDCFLOW_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kafka's timestamp types (librdkafka's RD_KAFKA_TIMESTAMP_* have the same values). */
typedef enum cf_ts_type {
    CF_TS_NONE = 0,       /* NoTimestampType */
    CF_TS_CREATE = 1,     /* CreateTime */
    CF_TS_LOG_APPEND = 2  /* LogAppendTime */
} cf_ts_type;

#define CF_PARTITION_ANY (-1) /* let the producer's partitioner choose */
#define CF_OFFSET_NONE (-1)

/* ---------------- raw messages ---------------- */

typedef struct cf_msg_header {
    char *key;
    char *value;      /* NULL = null header value; NUL-terminated copy */
    size_t value_len;
} cf_msg_header;

typedef struct cf_msg {
    char *topic;
    int32_t partition;
    int64_t offset;
    int64_t timestamp; /* ms since epoch; meaningful unless ts_type == NONE */
    cf_ts_type ts_type;
    char *key;         /* NULL = null key; otherwise len bytes + NUL */
    size_t key_len;
    char *value;       /* NULL = null value (tombstone) */
    size_t value_len;
    cf_msg_header *headers;
    size_t n_headers, cap_headers;
    unsigned packed; /* which of topic (1), key (2), value (4) live in the msg's own allocation */
} cf_msg;

cf_msg *cf_msg_new(void); /* partition/offset = -1, ts NONE, all NULL */
/* One allocation holding the message and copies of topic, key and value (a
 * consumer's: one malloc and one free per message instead of four); the
 * setters below still work on it. */
cf_msg *cf_msg_new_packed(const char *topic, const void *key, size_t key_len, const void *value, size_t value_len);
void cf_msg_destroy(cf_msg *m);
void cf_msg_clear(cf_msg *m); /* free contents, back to the state of cf_msg_new */
cf_msg *cf_msg_clone(const cf_msg *m);
void cf_msg_set_topic(cf_msg *m, const char *topic);
void cf_msg_set_key(cf_msg *m, const void *p, size_t len);   /* p NULL = null key; copies */
void cf_msg_set_value(cf_msg *m, const void *p, size_t len); /* p NULL = null value; copies */
void cf_msg_add_header(cf_msg *m, const char *key, const void *value, size_t len); /* copies */
const cf_msg_header *cf_msg_header_last(const cf_msg *m, const char *key); /* NULL if absent */

/* ---------------- records ---------------- */

typedef struct cf_header {
    char *key;
    cf_schema *schema; /* may be NULL (schemaless) */
    cf_value *value;   /* may be NULL */
} cf_header;

#define CF_RECORD_TOPIC_INLINE 48 /* topic names shorter than this live in the record */

typedef struct cf_record {
    char *topic; /* set with cf_record_set_topic only: may point into topic_buf */
    int32_t partition;
    int64_t offset; /* Kafka offset (sink side); -1 on the source side */
    int64_t timestamp;
    cf_ts_type ts_type;
    cf_schema *key_schema; /* may be NULL (schemaless) */
    cf_value *key;         /* may be NULL (null key) */
    cf_schema *value_schema;
    cf_value *value;       /* NULL = tombstone / null value */
    cf_header *headers;
    size_t n_headers, cap_headers;
    /* Source records only (NULL elsewhere): schemaless MAP values whose keys
     * are strings and whose values are STRING, INT32 or INT64 (Connect allows
     * these), e.g. {"filename": "a.csv"} -> {"position": 1234}. */
    cf_value *source_partition;
    cf_value *source_offset;
    /* A short topic's copy: one allocation less for every record (a record
     * is built and freed per message). Records are never copied by value. */
    char topic_buf[CF_RECORD_TOPIC_INLINE];
    /* Private: the memory of a value this record shell held before it went
     * back to a cf_record_pool, for cf_record_set_value_bytes/_string. */
    cf_value *spare;
} cf_record;

cf_record *cf_record_new(void);
void cf_record_destroy(cf_record *r);
cf_record *cf_record_clone(const cf_record *r);
void cf_record_set_topic(cf_record *r, const char *topic);
/* Take over the schema reference and the value (either may be NULL). */
void cf_record_set_key(cf_record *r, cf_schema *schema, cf_value *key);
void cf_record_set_value(cf_record *r, cf_schema *schema, cf_value *value);
void cf_record_add_header(cf_record *r, const char *key, cf_schema *schema, cf_value *value);
const cf_header *cf_record_header_last(const cf_record *r, const char *key);
void cf_record_remove_headers(cf_record *r, const char *key);
/* Take over the maps. A source partition that stays the same for many
 * records can be one shared value: cf_record_set_source(r,
 * cf_value_ref(part), off) (see cf_value_ref; the worker then also finds it
 * equal to the previous record's without comparing). */
void cf_record_set_source(cf_record *r, cf_value *source_partition, cf_value *source_offset);
/* Set the value to a copy of len bytes at p (BYTES / STRING; p NULL = the
 * null value); takes the schema reference. A record from a pool reuses the
 * memory of the value it held before when it is large enough. */
void cf_record_set_value_bytes(cf_record *r, cf_schema *schema, const void *p, size_t len);
void cf_record_set_value_string(cf_record *r, cf_schema *schema, const char *s, size_t len);

/* ---------------- record pools ----------------
 * A source task builds a record per message and the worker frees it once the
 * message was handed to the transport, hundreds at a time: the allocator's
 * slow path for every record and value. A pool keeps the shells (and the
 * memory of small values) of the records given back and hands them out
 * again. Not thread-safe: one pool per thread (the worker keeps one per
 * source task; cf_source_ctx_record_new). Records from a pool are ordinary
 * records: cf_record_destroy frees them wherever they end up. */
typedef struct cf_record_pool cf_record_pool;
cf_record_pool *cf_record_pool_new(size_t max); /* keeps at most max shells */
void cf_record_pool_destroy(cf_record_pool *p); /* NULL-safe; frees what it keeps */
/* A record as cf_record_new() makes it (NULL pool: cf_record_new()). */
cf_record *cf_record_pool_get(cf_record_pool *p);
/* Give r back (any record; NULL-safe): its contents are freed, the shell is
 * kept while the pool has room and has ever handed out a record (a pool
 * nobody draws from keeps nothing); else r is destroyed. */
void cf_record_pool_put(cf_record_pool *p, cf_record *r);
size_t cf_record_pool_size(const cf_record_pool *p); /* shells kept now */

#ifdef __cplusplus
}
#endif
#endif
