/*
 * cdcflow/avro.h - Avro <-> Kafka Connect data, as Confluent's AvroData does it, and the
 * AvroConverter (Confluent wire format, Schema Registry) built on it.
 *
 * This module owns three things:
 *   1. The schema mapping (cf_avro_schema_from_connect / cf_avro_schema_to_connect): a Connect
 *      schema becomes Avro schema JSON with the connect.* annotations that make the trip
 *      lossless (connect.name, connect.version, connect.doc, connect.default,
 *      connect.parameters, connect.type for int8/int16), optional schemas become unions with
 *      null first (or second when there is a non-null default), logical types carry both the
 *      Avro logicalType and Connect's name, unnamed structs are named
 *      io.confluent.connect.avro.ConnectDefault (ConnectDefault2, 3, ... for further ones),
 *      maps with non-string keys become arrays of io.confluent.connect.avro.MapEntry records.
 *      Avro schemas written by others map back the same way Confluent maps them (enums to
 *      strings with io.confluent.connect.avro.Enum parameters, general unions to
 *      io.confluent.connect.avro.Union structs, fixed to bytes).
 *   2. A codec (cf_avro_codec): one Avro schema compiled for avro-c plus its Connect schema;
 *      encodes a cf_value to Avro binary and decodes Avro binary to a cf_value. Decoding first
 *      checks the bytes against the schema (lengths, union indexes, varints) without
 *      allocating, so damaged input gives a CF_ERR_CORRUPT naming the field path and byte
 *      offset instead of reaching avro-c.
 *   3. The AvroConverter (cf_avro_converter, plugin "avro" /
 *      io.confluent.connect.avro.AvroConverter): Confluent's wire format, magic byte 0, the
 *      4-byte big-endian schema id, then the Avro binary; ids come from the Schema Registry
 *      (cdcflow/schema_registry.h) and are cached.
 *
 * Schemaless data (a NULL cf_schema with a non-NULL value, Confluent's "Anything" record) is
 * not supported: from_connect returns CF_ERR_UNSUPPORTED.
 *
 * OWNERSHIP and THREADS: as noted per function. A codec and a converter are used by one
 * thread at a time (they keep scratch buffers); the registry client they use is thread-safe.
 */
#ifndef CDCFLOW_AVRO_H
#define CDCFLOW_AVRO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/error.h"
#include "cdcflow/props.h"
#include "cdcflow/schema.h"
#include "cdcflow/schema_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CF_AVRO_NAMESPACE "io.confluent.connect.avro"
#define CF_AVRO_DEFAULT_NAME "io.confluent.connect.avro.ConnectDefault"
#define CF_AVRO_MAP_ENTRY "io.confluent.connect.avro.MapEntry"
#define CF_AVRO_UNION "io.confluent.connect.avro.Union"
#define CF_AVRO_ENUM "io.confluent.connect.avro.Enum"
#define CF_AVRO_DECIMAL_PRECISION_PARAM "connect.decimal.precision"
#define CF_AVRO_DECIMAL_PRECISION_DEFAULT 64

/* ---------------- schema mapping ---------------- */

typedef struct cf_avro_opts {
    bool connect_meta_data; /* connect.meta.data: write connect.* annotations (default true) */
} cf_avro_opts;
#define CF_AVRO_OPTS_DEFAULT {true}

/* Connect schema -> Avro schema JSON (compact, malloc'd into *json). Fails with CF_ERR_SCHEMA
 * (err.where = field path) for schemas Avro cannot express (a Decimal without a scale, two
 * different types under one name). opts may be NULL (defaults). */
cf_code cf_avro_schema_from_connect(const cf_schema *schema, const cf_avro_opts *opts, char **json, cf_err *err);

/* Avro schema JSON -> Connect schema (caller unrefs *out). Fails with CF_ERR_SCHEMA for JSON
 * that is not a valid Avro schema or that Connect cannot represent (recursive types, a bare
 * "null"), with err.where naming the place in the schema. */
cf_code cf_avro_schema_to_connect(const char *json, size_t len, cf_schema **out, cf_err *err);

/* ---------------- codec ---------------- */

typedef struct cf_avro_codec cf_avro_codec;

/* Build from a Connect schema (the Avro schema is derived as above). */
cf_code cf_avro_codec_from_connect(const cf_schema *schema, const cf_avro_opts *opts, cf_avro_codec **out,
                                   cf_err *err);
/* Build from Avro schema JSON (e.g. a writer schema fetched by id). */
cf_code cf_avro_codec_from_json(const char *json, size_t len, cf_avro_codec **out, cf_err *err);
void cf_avro_codec_destroy(cf_avro_codec *c); /* NULL-safe */

/* The Avro schema JSON (owned by the codec) and the Connect schema (borrowed; take a
 * cf_schema_ref to keep it). */
const char *cf_avro_codec_json(const cf_avro_codec *c);
cf_schema *cf_avro_codec_schema(const cf_avro_codec *c);
/* Full name of the top-level named type ("io.confluent.connect.avro.ConnectDefault"), or the
 * Avro type name for unnamed types ("string"); used by the RecordName subject strategies. */
const char *cf_avro_codec_record_name(const cf_avro_codec *c);

/* Append the Avro binary encoding of v (must not be NULL: a null top-level value is a
 * tombstone and never encoded) to out. The value is checked against the schema as it is
 * written: a mismatch gives CF_ERR_SCHEMA with err.where = field path. */
cf_code cf_avro_codec_encode(cf_avro_codec *c, const cf_value *v, cf_buf *out, cf_err *err);

/* Decode exactly len bytes of Avro binary into a new value (*out, caller destroys; NULL for a
 * null top-level union branch). Damaged or trailing bytes give CF_ERR_CORRUPT with err.where =
 * "byte N" plus the field path. */
cf_code cf_avro_codec_decode(cf_avro_codec *c, const void *data, size_t len, cf_value **out, cf_err *err);
/* As cf_avro_codec_decode, for one value at the start of data[0..len) when allow_trailing is
 * true (bytes after it are left alone): *used = the value's length in bytes. Consecutive datums
 * without framing (an Avro object container block) are decoded by calling it again at
 * data + *used. With allow_trailing false it is cf_avro_codec_decode. */
cf_code cf_avro_codec_decode_next(cf_avro_codec *c, const void *data, size_t len, bool allow_trailing, size_t *used,
                                  cf_value **out, cf_err *err);

/* Baseline for benchmarks: encode v with avro-c's generic value API alone (the datum is
 * already an avro-c value prepared by cf_avro_codec_prepare_bare), nothing of ours in the
 * loop. Returns the encoded length or -1. */
int cf_avro_codec_prepare_bare(cf_avro_codec *c, const cf_value *v, cf_err *err);
long cf_avro_codec_encode_bare(cf_avro_codec *c, void *buf, size_t cap);
/* Baseline for benchmarks: avro-c's own read of the binary into its generic value, without
 * our input checks or the conversion to cf_value. Returns 0 on success. */
int cf_avro_codec_decode_bare(cf_avro_codec *c, const void *data, size_t len);

/* ---------------- converter ---------------- */

/* Settings (Confluent's names, all optional except schema.registry.url):
 *   schema.registry.url                 comma-separated base URLs (e.g. .../apis/ccompat/v7)
 *   auto.register.schemas               true: register the Connect schema (default true)
 *   use.latest.version                  true: encode with the subject's latest schema
 *   key.subject.name.strategy / value.subject.name.strategy
 *                                       TopicNameStrategy (default), RecordNameStrategy,
 *                                       TopicRecordNameStrategy (short or class names)
 *   connect.meta.data                   write connect.* annotations (default true)
 *   schemas.cache.config                schemas cached per converter (default 1000)
 *   basic.auth.credentials.source, basic.auth.user.info (also schema.registry.basic.auth.*),
 *   schema.registry.ssl.ca.location, schema.registry.ssl.certificate.location,
 *   schema.registry.ssl.key.location, schema.registry.ssl.key.password,
 *   schema.registry.ssl.endpoint.identification.algorithm ("" disables host name checks),
 *   schema.registry.request.timeout.ms, schema.registry.retries,
 *   schema.registry.retry.backoff.ms, schema.registry.retry.backoff.max.ms
 */
typedef struct cf_avro_converter cf_avro_converter;

cf_code cf_avro_converter_new(const cf_props *props, bool is_key, cf_avro_converter **out, cf_err *err);
/* Use an existing registry client (not owned; must outlive the converter) instead of making
 * one from the settings; schema.registry.url is then not required. For tests, fuzzing and
 * sharing one client between key and value converters. */
cf_code cf_avro_converter_new_with_client(const cf_props *props, bool is_key, cf_sr_client *client,
                                          cf_avro_converter **out, cf_err *err);
void cf_avro_converter_destroy(cf_avro_converter *c); /* NULL-safe */
/* The registry client in use (borrowed), for its status (cf_sr_client_status). */
cf_sr_client *cf_avro_converter_client(cf_avro_converter *c);

/* Converter entry points with the semantics of cf_converter_plugin (cdcflow/convert.h):
 * value NULL -> *data NULL; data NULL -> *value NULL and *schema NULL. *data is malloc'd.
 * Errors name the topic in err.where. */
cf_code cf_avro_converter_from_connect(cf_avro_converter *c, const char *topic, const cf_schema *schema,
                                       const cf_value *value, char **data, size_t *len, cf_err *err);
/* from_connect appending to b (not emptied first); *is_null = true for a null value. */
cf_code cf_avro_converter_write(cf_avro_converter *c, const char *topic, const cf_schema *schema,
                                const cf_value *value, cf_buf *b, bool *is_null, cf_err *err);
cf_code cf_avro_converter_to_connect(cf_avro_converter *c, const char *topic, const char *data, size_t len,
                                     cf_schema **schema, cf_value **value, cf_err *err);

#ifdef __cplusplus
}
#endif
#endif
