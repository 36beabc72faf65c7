/*
 * cdcflow/transforms.h - single message transforms (SMTs), as Kafka
 * Connect's org.apache.kafka.connect.transforms.Transformation.
 *
 * This module owns the transform plugin interface, the registry of built-in
 * transforms and the chain built from a connector configuration in Connect's
 * syntax:
 *     transforms=unwrap,route
 *     transforms.unwrap.type=io.debezium.transforms.ExtractNewRecordState
 *     transforms.unwrap.delete.tombstone.handling.mode=rewrite
 *     transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
 *     transforms.route.regex=dbserver1\.public\.(.*)
 *     transforms.route.replacement=$1
 * Each transform's own keys (without "transforms.<alias>.") are checked
 * against its cf_cfg_table; unknown keys are errors. Predicates work as in
 * Connect (KIP-585): the connector's `predicates=a,b` with
 * `predicates.a.type=...` and the predicate's settings; a transform with
 * `transforms.<alias>.predicate=a` applies only to records for which the
 * predicate is true (false with `transforms.<alias>.negate=true`), the
 * others pass it unchanged. Each transform stage gets its own predicate
 * instance, as Connect's ConnectorConfig makes them.
 *
 * Built-in transforms (short name, then the Connect class names accepted;
 * X$Key / X$Value are org.apache.kafka.connect.transforms.X$Key / $Value):
 *   ExtractNewRecordState      io.debezium.transforms.ExtractNewRecordState
 *   ReplaceField$Value / $Key, TimestampConverter$Value / $Key,
 *   InsertField$Value / $Key, Cast$Value / $Key, ExtractField$Value / $Key,
 *   HoistField$Value / $Key, Flatten$Value / $Key, MaskField$Value / $Key,
 *   SetSchemaMetadata$Value / $Key
 *   RegexRouter, ValueToKey, Filter, TimestampRouter
 *                              org.apache.kafka.connect.transforms.<name>
 * Predicates: TopicNameMatches, HasHeaderKey, RecordIsTombstone
 *                              org.apache.kafka.connect.transforms.predicates.<name>
 * An unknown class name is an error that suggests the closest known one.
 *
 * OWNERSHIP: apply() takes the record. On CF_OK, *out is the result: the
 * same record changed in place, a new record (the input then freed), or NULL
 * when the transform drops it (the input freed). On an error a plugin's
 * apply leaves the record unchanged and it stays the caller's; the chain's
 * apply frees it (the error names the transform alias), which is what the
 * worker expects (cf_worker_transforms in worker.h).
 * A transform instance is used by one thread at a time.
 */
#ifndef CDCFLOW_TRANSFORMS_H
#define CDCFLOW_TRANSFORMS_H

#include <stdbool.h>
#include <stddef.h>

#include "cdcflow/config.h"
#include "cdcflow/error.h"
#include "cdcflow/props.h"
#include "cdcflow/record.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_transform_plugin {
    const char *name;           /* short name, e.g. "RegexRouter" */
    const char *const *aliases; /* NULL-terminated Connect class names */
    const cf_cfg_table *config; /* its settings, without "transforms.<alias>." */
    cf_code (*create)(const cf_config *cfg, void **state, cf_err *err);
    /* See OWNERSHIP above. */
    cf_code (*apply)(void *state, cf_record *rec, cf_record **out, cf_err *err);
    void (*destroy)(void *state);
} cf_transform_plugin;

/* The registered plugins, NULL-terminated. */
const cf_transform_plugin *const *cf_transform_plugins(void);
/* By short name or class name (exact, case-sensitive like Java class names). */
const cf_transform_plugin *cf_transform_find(const char *name_or_class);

/* A predicate (org.apache.kafka.connect.transforms.predicates.Predicate). */
typedef struct cf_predicate_plugin {
    const char *name;
    const char *const *aliases; /* NULL-terminated Connect class names */
    const cf_cfg_table *config; /* its settings, without "predicates.<alias>." */
    cf_code (*create)(const cf_config *cfg, void **state, cf_err *err);
    bool (*test)(void *state, const cf_record *rec);
    void (*destroy)(void *state);
} cf_predicate_plugin;

/* The registered predicates, NULL-terminated; by short or class name. */
const cf_predicate_plugin *const *cf_predicate_plugins(void);
const cf_predicate_plugin *cf_predicate_find(const char *name_or_class);

/* ---- one transform ---- */
typedef struct cf_transform cf_transform;
/* `type` is a short or class name; props hold the transform's own settings
 * (already without "transforms.<alias>."; a "type" key is ignored). */
cf_code cf_transform_new(const char *type, const cf_props *props, cf_transform **out, cf_err *err);
void cf_transform_destroy(cf_transform *t);
const cf_transform_plugin *cf_transform_get_plugin(const cf_transform *t);
/* Plugin semantics: on error rec is unchanged and still the caller's. */
cf_code cf_transform_apply(cf_transform *t, cf_record *rec, cf_record **out, cf_err *err);

/* ---- the chain of a connector ---- */
typedef struct cf_transform_chain cf_transform_chain;
/* Build from a connector configuration ("transforms", "transforms.*"; other
 * keys are ignored). *out is NULL when "transforms" is absent or empty.
 * Errors name the key: "transforms.unwrap.type: unknown transform ...";
 * "predicates.x.type: ..." for a predicate's. */
cf_code cf_transform_chain_new(const cf_props *connector_config, cf_transform_chain **out, cf_err *err);
void cf_transform_chain_destroy(cf_transform_chain *c); /* NULL-safe */
size_t cf_transform_chain_len(const cf_transform_chain *c);
const char *cf_transform_chain_alias(const cf_transform_chain *c, size_t i);
/* Apply each transform in order (those with a predicate only where it
 * holds). Takes rec, also on error (then freed and err->where =
 * "transforms.<alias>" plus the field path if any). *out NULL means a
 * transform dropped the record. A NULL chain passes rec through. */
cf_code cf_transform_chain_apply(cf_transform_chain *c, cf_record *rec, cf_record **out, cf_err *err);

/* The three functions the worker takes (cf_worker_opts.transforms), backed
 * by the chain above. */
struct cf_worker_transforms;
extern const struct cf_worker_transforms cf_transforms_for_worker;

#ifdef __cplusplus
}
#endif
#endif
