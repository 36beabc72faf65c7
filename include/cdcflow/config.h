/*
 * cdcflow/config.h - typed configuration definitions, like Kafka's ConfigDef.
 *
 * Every plugin (connector, converter, transform, target) and the worker
 * declare their settings as a static table of cf_cfg_def. The same table
 * validates user input, supplies defaults, and generates
 * docs/configuration.md (`cdcflow config docs`), so the documentation can
 * never drift from the code.
 *
 * A user's configuration arrives as cf_props (Kafka Connect JSON, either
 * {"name": ..., "config": {...}} or the flat map, or a .properties file) and
 * is checked against one or more definition tables: unknown keys and invalid
 * values give an error naming the key, the value and what is allowed.
 *
 * OWNERSHIP: definition tables are static and never freed. A cf_config owns a
 * copy of the props it was parsed from.
 */
#ifndef CDCFLOW_CONFIG_H
#define CDCFLOW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/error.h"
#include "cdcflow/props.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_cfg_type {
    CF_CFG_STRING = 0,
    CF_CFG_INT,      /* 32-bit */
    CF_CFG_LONG,     /* 64-bit */
    CF_CFG_DOUBLE,
    CF_CFG_BOOLEAN,  /* "true"/"false", case-insensitive, as Kafka */
    CF_CFG_LIST,     /* comma-separated, items trimmed, empty items dropped */
    CF_CFG_PASSWORD, /* a string never printed in logs, docs or REST output */
    CF_CFG_CLASS     /* a plugin name or Java class name (aliases resolve) */
} cf_cfg_type;

typedef enum cf_importance { CF_IMPORTANCE_HIGH = 0, CF_IMPORTANCE_MEDIUM, CF_IMPORTANCE_LOW } cf_importance;

/* Custom validator: return CF_OK or set err (message naming key and value). */
typedef cf_code (*cf_cfg_validator)(const char *key, const char *value, cf_err *err);

#define CF_CFG_REQUIRED NULL /* as default_value: the key has no default */

typedef struct cf_cfg_def {
    const char *name;
    cf_cfg_type type;
    const char *default_value; /* text form; CF_CFG_REQUIRED = must be given */
    bool nullable;             /* with no default: may be absent (default null) */
    const char *const *valid_values; /* NULL-terminated enum, case-insensitive; or NULL */
    bool has_range;            /* numeric range check */
    double min, max;
    cf_cfg_validator validator; /* extra check, or NULL */
    cf_importance importance;
    const char *group;          /* heading in the docs, e.g. "Connection" */
    const char *doc;            /* one or more sentences, Markdown allowed */
} cf_cfg_def;

/* A parsed, validated configuration. */
typedef struct cf_config cf_config;

/* A named table of definitions. `defs` ends with an entry whose name is NULL.
 * `prefixes` (NULL-terminated, may be NULL) are key prefixes passed through
 * without checking, e.g. "transforms.", "producer.", "consumer.". */
typedef struct cf_cfg_table {
    const char *name;  /* "worker", "connector", "files source", ... */
    const char *title; /* heading for the docs */
    const char *intro; /* paragraph for the docs */
    const cf_cfg_def *defs;
    const char *const *prefixes;
} cf_cfg_table;

/* A check across the keys of one table, which one definition cannot
 * express (e.g. a sink target that contradicts its connection URL): it sets
 * *problems to one line per problem (malloc'd; NULL when none) and returns
 * CF_OK or CF_ERR_CONFIG with the first in err. cf_connector_config_check
 * runs the check of every table a configuration was parsed with. The checks
 * are listed in src/config/connector_defs.c (weak references, as the table
 * registry). */
typedef struct cf_cfg_check {
    const cf_cfg_table *table;
    cf_code (*check)(const cf_config *c, char **problems, cf_err *err);
} cf_cfg_check;

/* Validate props against the union of `tables` (n of them; a key may be
 * defined in any). Missing keys take their defaults. Every problem is
 * reported, not only the first: err holds the first one, and when `problems`
 * is non-NULL each problem is appended to it as one line
 * ("key: message; allowed: ..."). */
cf_code cf_config_parse(const cf_cfg_table *const *tables, size_t n, const cf_props *props, cf_config **out,
                        char **problems, cf_err *err);
void cf_config_destroy(cf_config *c);
const cf_props *cf_config_props(const cf_config *c);
/* The tables c was parsed with (static pointers), *n of them. */
const cf_cfg_table *const *cf_config_tables_of(const cf_config *c, size_t *n);

/* Typed getters for defined keys (value or default). Asking for a key that
 * no table defines is a programming error (abort with a message). */
const char *cf_config_string(const cf_config *c, const char *key); /* NULL if nullable and unset */
int32_t cf_config_int(const cf_config *c, const char *key);
int64_t cf_config_long(const cf_config *c, const char *key);
double cf_config_double(const cf_config *c, const char *key);
bool cf_config_bool(const cf_config *c, const char *key);
/* List items; *n set to the count. The array and strings live as long as c. */
const char *const *cf_config_list(const cf_config *c, const char *key, size_t *n);

/* ---- reading configuration files ---- */

/* Kafka Connect JSON: {"name": "x", "config": {...}} or the flat map
 * {"name": "x", "connector.class": ...}, or an array of one of those.
 * Non-string JSON values (numbers,
 * booleans) are accepted and turned into their text form, as Connect does.
 * `name` (may be NULL) receives the connector name (malloc'd) if present. */
cf_code cf_props_from_json(const char *text, size_t len, cf_props **out, char **name, cf_err *err);
/* Java .properties: key=value / key: value / key value, # and ! comments,
 * backslash line continuations and escapes (\t \n \uXXXX), as
 * java.util.Properties.load. */
cf_code cf_props_from_properties(const char *text, size_t len, cf_props **out, cf_err *err);
/* Read a file; the format follows the content (a file whose first
 * non-blank character is '{' or '[' is JSON, otherwise .properties; a JSON
 * array must hold exactly one connector object). Errors name the file and
 * the line. */
cf_code cf_props_load_file(const char *path, cf_props **out, char **name, cf_err *err);

/* Like cf_props_load_file; `lines` (may be NULL) receives a props mapping
 * each key to the line number (decimal text) where it was set last, so later
 * problems can name file:line. For JSON the line is found by the key's text
 * (a key written with \u escapes gets none). Caller destroys *lines. */
cf_code cf_props_load_file_lines(const char *path, cf_props **out, char **name, cf_props **lines, cf_err *err);

/* ---- single definitions ---- */

/* The definition of key in t, or NULL. */
const cf_cfg_def *cf_cfg_table_find(const cf_cfg_table *t, const char *key);
/* Check one text value against one definition (type, enum, range,
 * validator), exactly as cf_config_parse does. */
cf_code cf_cfg_check_value(const cf_cfg_def *def, const char *value, cf_err *err);
/* Check a table itself, as Kafka's ConfigDef.define does: names unique, every
 * default parses and passes the definition's own checks, enums only on
 * string/class/list types, ranges only on numbers. Tests run it on every
 * registered table. */
cf_code cf_cfg_table_check(const cf_cfg_table *t, cf_err *err);
/* Text for the type in docs and messages ("int", "list", ...). Static. */
const char *cf_cfg_type_name(cf_cfg_type t);
/* "high" / "medium" / "low". Static. */
const char *cf_importance_name(cf_importance i);

/* ---- the common connector settings (src/config/connector_defs.c) ---- */

/* Settings of Kafka Connect's ConnectorConfig that cdcflow honours: name,
 * connector.class, tasks.max, converters, transforms, predicates, errors.*;
 * pass-through prefixes transforms., predicates., key.converter.,
 * value.converter., header.converter. */
extern const cf_cfg_table cf_connector_common_table;
/* What SinkConnectorConfig adds: topics, topics.regex. Validate a sink with
 * both tables plus the connector's own. */
extern const cf_cfg_table cf_sink_common_table;
/* Checks across keys that one definition cannot express, as Connect's
 * ConnectorConfig/SinkConnectorConfig.validate do: for a sink exactly one of
 * topics and topics.regex; every alias named in transforms / predicates has
 * its ".type"; and each table's own `check`. Problems are appended to
 * *problems as lines (like cf_config_parse); returns CF_OK or CF_ERR_CONFIG
 * with err set to the first.
 * c must come from cf_config_parse with cf_connector_common_table (and, when
 * is_sink, cf_sink_common_table) among its tables. */
cf_code cf_connector_config_check(const cf_config *c, bool is_sink, char **problems, cf_err *err);

/* ---- secrets (src/config/secrets.c) ---- */

/* Whether key's value is a secret, never to be shown (REST, logs, errors,
 * validate): by its definition when one is known (the key's own in tables,
 * n of them, may be NULL/0; else the definition of its longest dotted
 * suffix in any table of cf_config_tables(), so key.converter.X is judged as
 * the converter's X), PASSWORD-type; a key no table defines by its name, as
 * Connect names its passwords (*.password, *.basic.auth.user.info,
 * sasl.jaas.config, *secret*, tokens...). */
bool cf_config_key_is_secret(const cf_cfg_table *const *tables, size_t n, const char *key);
/* Append what may be shown of key's value to out: "[hidden]" for a secret
 * key, else the value with the credentials in it masked
 * (cf_mask_credentials: postgres://user:[hidden]@host/db). True when
 * something was hidden. */
bool cf_config_shown_value(const cf_cfg_table *const *tables, size_t n, const char *key, const char *value,
                           cf_buf *out);

/* ---- documentation ---- */

/* Every definition table cdcflow has, for `cdcflow config docs`
 * (src/config/registry.c). NULL-terminated, static. */
const cf_cfg_table *const *cf_config_tables(void);

/* Markdown reference for tables (usually cf_config_tables()). Caller frees. */
char *cf_config_docs_markdown(const cf_cfg_table *const *tables, size_t n);

#ifdef __cplusplus
}
#endif
#endif
