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

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/config.h"
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

/* ---- the key or the value of a record (the $Key / $Value variants) ---- */
/* The schema and value a $Key or $Value transform works on. */
static inline cf_schema *xf_op_schema(const cf_record *r, bool is_key) { return is_key ? r->key_schema : r->value_schema; }
static inline cf_value *xf_op_value(const cf_record *r, bool is_key) { return is_key ? r->key : r->value; }
/* Replace the key or the value (takes both; frees the old ones). */
void xf_op_set(cf_record *r, bool is_key, cf_schema *schema, cf_value *value);

/* Validators of Connect's transforms: NonEmptyListValidator ("Empty list")
 * and ConfigDef.NonEmptyString ("String must be non-empty"). */
cf_code xf_nonempty_list(const char *key, const char *value, cf_err *err);
cf_code xf_nonempty_string(const char *key, const char *value, cf_err *err);
/* A copy of a list setting: n strings (the array has at least one slot). */
char **xf_list_copy(const cf_config *cfg, const char *key, size_t *n);
void xf_list_free(char **l, size_t n);
bool xf_list_has(char *const *l, size_t n, const char *s);

/* "Schema required for [purpose]" */
cf_code xf_require_schema(const cf_schema *s, const char *purpose, cf_err *err);

/* Java's narrowing of a double to int / long ((int)d, (long)d: NaN is 0,
 * out of range saturates), then the wrap to byte/short of (byte)(int)d. */
int32_t xf_java_d2i(double d);
int64_t xf_java_d2l(double d);

/* Put key -> val into a string-keyed map as java.util.HashMap.put does:
 * replace the value of an existing key, else append. Takes val. */
void xf_map_put(cf_value *map, const char *key, cf_value *val);

/* Connect's field.syntax.version (KIP-821): V1 takes a field name as it is,
 * V2 a dotted path with `backtick` quoting (SingleFieldPath). */
typedef struct xf_path {
    char **steps;
    size_t n;
} xf_path;
cf_code xf_path_parse(const char *text, bool v2, xf_path *out, cf_err *err);
void xf_path_free(xf_path *p);
/* The field at the path in a struct schema, or NULL (fieldFrom). */
const cf_field *xf_path_field(const xf_path *p, const cf_schema *s);
/* The value at the path (NULL when absent or null; valueFrom), borrowed
 * from the struct or its schema's defaults. A nested
 * value that is not a struct (or map) is an error, as Connect's
 * requireStructOrNull. */
cf_code xf_path_struct_value(const xf_path *p, const cf_value *st, bool with_default, const cf_value **out,
                             cf_err *err);
cf_code xf_path_map_value(const xf_path *p, const cf_value *map, const cf_value **out, cf_err *err);
/* The field.syntax.version definition that the transforms with field paths share. */
#define XF_FIELD_SYNTAX_DEF                                                                                           \
    {.name = "field.syntax.version", .type = CF_CFG_STRING, .default_value = "V1", .valid_values = xf_syntax_versions, \
     .importance = CF_IMPORTANCE_HIGH, .group = "Fields",                                                              \
     .doc = "Defines the version of the syntax to access fields. `V1`: field paths name a field at the root of the "  \
            "struct or map. `V2`: nested fields with dotted notation; backtick pairs wrap a field name that contains "  \
            "dots, e.g. `` `foo.bar`.baz `` is the subfield `baz` of the field \"foo.bar\"."}
extern const char *const xf_syntax_versions[];
/* Connect's replace.null.with.default (KIP-1032), which most transforms share. */
#define XF_REPLACE_NULL_DEF(grp)                                                                                  \
    {.name = "replace.null.with.default", .type = CF_CFG_BOOLEAN, .default_value = "true",                          \
     .importance = CF_IMPORTANCE_MEDIUM, .group = grp,                                                              \
     .doc = "Whether to replace fields that have a default value and that are null to the default value. When set " \
            "to true, the default value is used, otherwise null is used."}

/* Registry entries for the two variants of one transform:
 * XF_KEY_VALUE(cf_xf_cast, "Cast", &table, create_key, create_value, apply, destroy)
 * defines cf_xf_cast_key and cf_xf_cast_value with Connect's class names
 * org.apache.kafka.connect.transforms.Cast$Key / $Value. */
#define XF_KEY_VALUE(sym, short_name, table, create_key, create_value, apply_fn, destroy_fn)                          \
    static const char *const sym##_key_aliases[] = {"org.apache.kafka.connect.transforms." short_name "$Key", NULL};  \
    static const char *const sym##_value_aliases[] = {"org.apache.kafka.connect.transforms." short_name "$Value",      \
                                                      NULL};                                                            \
    const cf_transform_plugin sym##_key = {.name = short_name "$Key",                                                 \
                                           .aliases = sym##_key_aliases,                                               \
                                           .config = table,                                                            \
                                           .create = create_key,                                                       \
                                           .apply = apply_fn,                                                          \
                                           .destroy = destroy_fn};                                                     \
    const cf_transform_plugin sym##_value = {.name = short_name "$Value",                                             \
                                             .aliases = sym##_value_aliases,                                           \
                                             .config = table,                                                          \
                                             .create = create_value,                                                   \
                                             .apply = apply_fn,                                                        \
                                             .destroy = destroy_fn}

/* ---- java.text.SimpleDateFormat in UTC (timestamp_converter.c has the
 * pattern rules: which letters, quoting) ---- */
typedef struct xf_datefmt xf_datefmt;
/* `who` names the transform in the error ("TimestampRouter requires ..."). */
cf_code xf_datefmt_new(const char *pattern, const char *who, xf_datefmt **out, cf_err *err);
void xf_datefmt_format(const xf_datefmt *f, int64_t ms_since_epoch, cf_buf *b);
void xf_datefmt_destroy(xf_datefmt *f); /* NULL-safe */

/* ---- Java regular expressions (regex_router.c has the supported subset)
 * compiled as POSIX ERE that must match the whole string; `key` names the
 * setting in errors. *groups: the Java pattern's capturing groups (the ERE
 * has one more, group 1 wrapping the whole pattern). ---- */
cf_code xf_java_regex_compile(const char *java, const char *key, regex_t *re, size_t *groups, cf_err *err);

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
