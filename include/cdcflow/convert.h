/*
 * cdcflow/convert.h - converters between cf_record values and bytes.
 *
 * The same plugin shape as Kafka Connect's Converter: from_connect turns a
 * (schema, value) into bytes for Kafka; to_connect turns bytes back into a
 * (schema, value). Built-in converters and their Connect class names:
 *   json   org.apache.kafka.connect.json.JsonConverter
 *   string org.apache.kafka.connect.storage.StringConverter
 *   bytes  org.apache.kafka.connect.converters.ByteArrayConverter
 *   avro   io.confluent.connect.avro.AvroConverter   (Schema Registry)
 * Either name works in a config ("value.converter": "json" or the class).
 *
 * Null handling follows Connect: a null value (tombstone) is NULL bytes and
 * NULL bytes give a NULL value.
 *
 * OWNERSHIP: bytes and values returned are the caller's (free / 
 * cf_value_destroy / cf_schema_unref). A cf_converter is used by one thread.
 */
#ifndef CDCFLOW_CONVERT_H
#define CDCFLOW_CONVERT_H

#include <stdbool.h>
#include <stddef.h>

#include "cdcflow/config.h"
#include "cdcflow/buf.h"
#include "cdcflow/error.h"
#include "cdcflow/props.h"
#include "cdcflow/schema.h"
#include "cdcflow/schema_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_converter_plugin {
    const char *name;              /* short name: "json" */
    const char *const *aliases;    /* NULL-terminated: Connect class names */
    const cf_cfg_table *config;    /* its settings (without the key./value.converter. prefix) */
    cf_code (*create)(const cf_config *cfg, bool is_key, void **state, cf_err *err);
    /* value NULL = null; sets *data NULL for null output. *data is malloc'd. */
    cf_code (*from_connect)(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                            char **data, size_t *len, cf_err *err);
    /* data NULL = null input. */
    cf_code (*to_connect)(void *state, const char *topic, const char *data, size_t len, cf_schema **schema,
                          cf_value **value, cf_err *err);
    void (*destroy)(void *state);
    /* Optional: true when the output is exactly bytes that value already
     * holds (or null): *data then points at them (NULL = null), no copy.
     * False (also for anything invalid) lets from_connect do the work. */
    bool (*from_connect_view)(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                              const char **data, size_t *len);
    /* Optional: from_connect writing into out (empty when called) instead of
     * a new allocation; *is_null = true for null output. The view uses it
     * with one buffer per converter: no allocation per record. */
    cf_code (*from_connect_buf)(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                cf_buf *out, bool *is_null, cf_err *err);
} cf_converter_plugin;

typedef struct cf_converter cf_converter;

/* Create by short name or class name. `props` holds the converter's own
 * settings (already stripped of "value.converter." etc.). */
cf_code cf_converter_new(const char *name, const cf_props *props, bool is_key, cf_converter **out, cf_err *err);
void cf_converter_destroy(cf_converter *c);
const cf_converter_plugin *cf_converter_get_plugin(const cf_converter *c);
cf_code cf_converter_from_connect(cf_converter *c, const char *topic, const cf_schema *schema, const cf_value *value,
                                  char **data, size_t *len, cf_err *err);
/* As cf_converter_from_connect, but *data is borrowed: valid until the next
 * conversion by c or its destruction, and while value stays unchanged. For a
 * caller that copies the bytes anyway (a producer): the bytes and string
 * converters then point at the value's own bytes, without an allocation. */
cf_code cf_converter_from_connect_view(cf_converter *c, const char *topic, const cf_schema *schema,
                                       const cf_value *value, const char **data, size_t *len, cf_err *err);
cf_code cf_converter_to_connect(cf_converter *c, const char *topic, const char *data, size_t len,
                                cf_schema **schema, cf_value **value, cf_err *err);

/* The Schema Registry client state of a converter that uses a registry (avro):
 * fills *out (cf_sr_client_status) and returns true. Returns false, *out
 * untouched, for converters without a registry (json, string, bytes) and for
 * c NULL. Unlike the conversion functions this may be called from another
 * thread while c is in use (the client's status has its own lock), e.g. by
 * health checks and metrics; c must stay alive during the call. */
bool cf_converter_sr_status(const cf_converter *c, cf_sr_status *out);

/* Conversions that wait on the network (the avro converter's Schema Registry
 * requests and their retries) give up with CF_ERR_AGAIN ("interrupted")
 * within about 100 ms once *stop is true: a task asked to stop does not wait
 * out request timeouts. stop is borrowed (NULL: none); no-op for converters
 * that never wait. Set it before the first conversion. */
void cf_converter_set_interrupt(cf_converter *c, const atomic_bool *stop);

/* The registered converter plugins, NULL-terminated. */
const cf_converter_plugin *const *cf_converter_plugins(void);
const cf_converter_plugin *cf_converter_find(const char *name_or_class);

#ifdef __cplusplus
}
#endif
#endif
