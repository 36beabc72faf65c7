/*
 * xf_util.h - private helpers shared by the transforms: Connect's SchemaUtil
 * (copy a schema's name, version, doc and parameters), Struct.get with and
 * without defaults, Requirements.requireStruct/requireMap messages, and a
 * small schema cache (Kafka's transforms keep an LRU of 16 schemas) so that
 * records sharing a schema also share the transformed schema: downstream
 * converters cache by schema object.
 */
#ifndef CF_TRANSFORMS_XF_UTIL_H
#define CF_TRANSFORMS_XF_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "cdcflow/error.h"
#include "cdcflow/record.h"
#include "cdcflow/schema.h"

/* SchemaUtil.copySchemaBasics(source, SchemaBuilder.struct()): a new
 * required struct schema with source's name, version, doc and parameters. */
cf_schema *xf_struct_basics(const cf_schema *source);
/* SchemaUtil.copySchemaBasics(source): same type (array/map/struct children
 * kept by reference), name, version, doc, parameters; required, no default. */
cf_schema *xf_copy_basics(const cf_schema *source);
/* A full copy of a schema's top level (children by reference), to change
 * `optional` or the default without touching a shared schema. */
cf_schema *xf_shallow_copy(const cf_schema *s);

/* Struct.get (default for null when with_default) as a clone, or NULL. */
cf_value *xf_get_clone(const cf_value *st, size_t index, bool with_default);

/* "Only Struct objects supported for [purpose], found: <type>" */
cf_code xf_require_struct(const cf_value *v, const char *purpose, cf_err *err);
/* "Only Map objects supported in absence of schema for [purpose], found: <type>" */
cf_code xf_require_map(const cf_value *v, const char *purpose, cf_err *err);

/* Java-ish type name of a value for messages: "Struct", "String", "Long"... */
const char *xf_java_type(const cf_value *v);

/* ---- schema cache: (input schema object, variant) -> output schema ---- */
#define XF_CACHE_SIZE 16
typedef struct xf_cache_ent {
    cf_schema *in; /* reference held so the pointer stays unique */
    uint64_t variant;
    cf_schema *out;
    uint64_t tick;
} xf_cache_ent;
typedef struct xf_cache {
    xf_cache_ent e[XF_CACHE_SIZE];
    uint64_t tick;
} xf_cache;
/* A new reference to the cached output, or NULL. */
cf_schema *xf_cache_get(xf_cache *c, const cf_schema *in, uint64_t variant);
/* Stores a reference to out (the caller keeps its own). */
void xf_cache_put(xf_cache *c, const cf_schema *in, uint64_t variant, cf_schema *out);
void xf_cache_clear(xf_cache *c);

#endif
