/*
 * connector_defs.c - the settings every connector has, from Kafka Connect's
 * ConnectorConfig and SinkConnectorConfig, limited to those cdcflow honours.
 *
 * Names, types, defaults and rules are Kafka's, so a Kafka Connect connector
 * configuration moves to cdcflow unchanged. Two deliberate differences:
 *   - errors.deadletterqueue.* is sink-only in Kafka; cdcflow also gives
 *     source tasks a dead letter queue (cf_source_ctx_report), so the keys are
 *     in the common table.
 *   - topics.regex is checked with POSIX extended regular expressions
 *     (regcomp), which is close to but not the same as java.util.regex.
 * The rules that span keys (topics vs topics.regex, transform aliases need
 * a type) live in cf_connector_config_check, as in Connect's validate().
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/config.h"

/* Kafka's NonEmptyStringWithoutControlChars. */
static cf_code name_validator(const char *key, const char *value, cf_err *err) {
    if (!*value) {
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\"", key);
        cf_err_detail(err, "String may not be empty");
        cf_err_hint(err, "give the connector a unique, non-empty name");
        return CF_ERR_CONFIG;
    }
    for (const unsigned char *p = (const unsigned char *)value; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\"", key);
            cf_err_detail(err, "String may not contain control characters but had 0x%02x at position %zu", *p,
                          (size_t)(p - (const unsigned char *)value));
            cf_err_hint(err, "remove control characters (tabs, newlines) from the name");
            return CF_ERR_CONFIG;
        }
    return CF_OK;
}

/* transforms / predicates: aliases must be unique (Kafka: "Duplicate alias
 * provided."); an alias is used in key names, so it may not contain '.'
 * or whitespace inside. */
static cf_code alias_list_validator(const char *key, const char *value, cf_err *err) {
    char *copy = cf_xstrdup(value);
    char *save = NULL;
    size_t n = 0, cap = 0;
    char **seen = NULL;
    cf_code rc = CF_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        size_t l = strlen(tok);
        while (l && (tok[l - 1] == ' ' || tok[l - 1] == '\t')) tok[--l] = '\0';
        if (!l) continue;
        for (size_t i = 0; i < n; i++)
            if (strcmp(seen[i], tok) == 0) {
                cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\"", key);
                cf_err_detail(err, "Duplicate alias provided: \"%s\"", tok);
                cf_err_hint(err, "name each alias once");
                rc = CF_ERR_CONFIG;
                goto out;
            }
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            seen = cf_xrealloc(seen, cap * sizeof *seen);
        }
        seen[n++] = tok;
    }
out:
    free(seen);
    free(copy);
    return rc;
}

static cf_code regex_validator(const char *key, const char *value, cf_err *err) {
    if (!*value) return CF_OK;
    regex_t re;
    int rc = regcomp(&re, value, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[256];
        regerror(rc, &re, msg, sizeof msg);
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\"", key);
        cf_err_detail(err, "not a valid regular expression: %s", msg);
        cf_err_hint(err, "use a POSIX extended regular expression, e.g. \"orders\\..*\"");
        return CF_ERR_CONFIG;
    }
    regfree(&re);
    return CF_OK;
}

static const char *const tolerance_values[] = {"none", "all", NULL};
static const char *const common_prefixes[] = {"transforms.", "predicates.", "key.converter.", "value.converter.",
                                              "header.converter.", "producer.override.", "consumer.override.",
                                              "admin.override.", NULL};

#define G_COMMON "Common"
#define G_TRANSFORMS "Transforms"
#define G_ERRORS "Error Handling"

static const cf_cfg_def connector_defs[] = {
    {"name", CF_CFG_STRING, CF_CFG_REQUIRED, false, NULL, false, 0, 0, name_validator, CF_IMPORTANCE_HIGH, G_COMMON,
     "Globally unique name of this connector. Offsets and status are stored under it, so renaming a connector "
     "starts it from scratch. Must be non-empty and free of control characters."},
    {"connector.class", CF_CFG_STRING, CF_CFG_REQUIRED, false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH,
     G_COMMON,
     "The connector plugin: its short name (e.g. `files`) or one of its aliases (Java class names are accepted "
     "as aliases). `cdcflow validate` lists the known connectors when this is wrong."},
    {"tasks.max", CF_CFG_INT, "1", false, NULL, true, 1, 2147483647, NULL, CF_IMPORTANCE_HIGH, G_COMMON,
     "Maximum number of tasks (threads) for this connector. The connector may use fewer if it cannot split its "
     "work that far."},
    {"key.converter", CF_CFG_CLASS, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, G_COMMON,
     "Converter between record keys and the bytes in Kafka (`json`, `string`, `bytes`, `avro` or the Kafka "
     "Connect class name). Unset: the worker's default. Its own settings go under `key.converter.`."},
    {"value.converter", CF_CFG_CLASS, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, G_COMMON,
     "Converter between record values and the bytes in Kafka, as `key.converter`. Unset: the worker's default. "
     "Its own settings go under `value.converter.`."},
    {"header.converter", CF_CFG_CLASS, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, G_COMMON,
     "Converter for header values. Unset: the worker's default. Its own settings go under `header.converter.`."},
    {"transforms", CF_CFG_LIST, "", false, NULL, false, 0, 0, alias_list_validator, CF_IMPORTANCE_LOW,
     G_TRANSFORMS,
     "Aliases of the single message transforms to apply, in order. Each alias needs `transforms.<alias>.type` "
     "and may have `transforms.<alias>.predicate` and `transforms.<alias>.negate`. Aliases must be unique."},
    {"predicates", CF_CFG_LIST, "", false, NULL, false, 0, 0, alias_list_validator, CF_IMPORTANCE_LOW,
     G_TRANSFORMS,
     "Aliases of the predicates that transforms may refer to. Each alias needs `predicates.<alias>.type`."},
    {"errors.retry.timeout", CF_CFG_LONG, "0", false, NULL, true, -1, 9223372036854775807.0, NULL, CF_IMPORTANCE_MEDIUM, G_ERRORS,
     "How long in milliseconds a failed operation (converting, transforming, writing) is retried. 0: no retries; "
     "-1: retry forever."},
    {"errors.retry.delay.max.ms", CF_CFG_LONG, "60000", false, NULL, true, 0, 9223372036854775807.0, NULL, CF_IMPORTANCE_MEDIUM,
     G_ERRORS,
     "Longest wait in milliseconds between two retries. Waits grow exponentially from one second up to this "
     "value, with jitter."},
    {"errors.tolerance", CF_CFG_STRING, "none", false, tolerance_values, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
     G_ERRORS,
     "What a bad record does. `none`: the task fails at the first error. `all`: the record is skipped (logged "
     "and/or sent to the dead letter queue, see below) and the task goes on."},
    {"errors.log.enable", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, G_ERRORS,
     "With `errors.tolerance=all`: log every skipped record's error, where it happened (topic, partition, offset "
     "or file and position) and why."},
    {"errors.log.include.messages", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
     G_ERRORS,
     "With `errors.log.enable`: also log the record itself (key, value, headers). Off by default because records "
     "may hold personal data."},
    {"errors.deadletterqueue.topic.name", CF_CFG_STRING, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
     G_ERRORS,
     "With `errors.tolerance=all`: the Kafka topic that receives the original bytes of every skipped record. "
     "Empty: no dead letter queue. Unlike Kafka Connect, source connectors may use it too."},
    {"errors.deadletterqueue.context.headers.enable", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL,
     CF_IMPORTANCE_MEDIUM, G_ERRORS,
     "Add headers to dead letter queue records that say where the record came from and why it failed "
     "(`__connect.errors.*`, as Kafka Connect writes them)."},
    {"errors.deadletterqueue.topic.replication.factor", CF_CFG_INT, "3", false, NULL, true, -1, 32767, NULL,
     CF_IMPORTANCE_LOW, G_ERRORS,
     "Replication factor of the dead letter queue topic when the task creates it (one partition, as Connect); "
     "-1: the broker's default. Connect's default 3 needs three brokers: set 1 for a single broker. An existing "
     "topic is used as it is."},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

const cf_cfg_table cf_connector_common_table = {
    "connector",
    "Common connector settings",
    "Settings every connector has, source or sink, with Kafka Connect's names and defaults "
    "(`ConnectorConfig`). The connector's own settings follow in its own table.",
    connector_defs,
    common_prefixes,
};

static const cf_cfg_def sink_defs[] = {
    {"topics", CF_CFG_LIST, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Sink",
     "Topics to consume, comma-separated. Exactly one of `topics` and `topics.regex` must be set."},
    {"topics.regex", CF_CFG_STRING, "", false, NULL, false, 0, 0, regex_validator, CF_IMPORTANCE_HIGH, "Sink",
     "Regular expression (POSIX extended) naming the topics to consume; new matching topics are picked up. "
     "Exactly one of `topics` and `topics.regex` must be set."},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

const cf_cfg_table cf_sink_common_table = {
    "sink",
    "Common sink connector settings",
    "What sink connectors have in addition to the common settings (Kafka Connect's `SinkConnectorConfig`).",
    sink_defs,
    NULL,
};

/* ---- checks across keys ---- */

static void problem(cf_buf *pb, size_t *count, cf_err *first, const cf_err *e) {
    if ((*count)++ == 0 && first) *first = *e;
    cf_buf_printf(pb, "%s: %s", e->where[0] ? e->where : "?", e->message);
    if (e->detail[0]) cf_buf_printf(pb, "; %s", e->detail);
    if (e->hint[0]) cf_buf_printf(pb, "; %s", e->hint);
    cf_buf_append_byte(pb, '\n');
}

static void check_aliases(const cf_config *c, const char *list_key, cf_buf *pb, size_t *count, cf_err *first) {
    size_t n;
    const char *const *aliases = cf_config_list(c, list_key, &n);
    const cf_props *p = cf_config_props(c);
    for (size_t i = 0; i < n; i++) {
        char key[512];
        snprintf(key, sizeof key, "%s.%s.type", list_key, aliases[i]);
        const char *type = cf_props_get(p, key);
        if (!type || !*type) {
            cf_err e;
            cf_err_set(&e, CF_ERR_CONFIG, "missing required configuration \"%s\" which has no default value", key);
            cf_err_detail(&e, "\"%s\" names the alias \"%s\"", list_key, aliases[i]);
            cf_err_hint(&e, "set %s to the plugin name, or remove \"%s\" from %s", key, aliases[i], list_key);
            cf_err_where(&e, "%s", key);
            problem(pb, count, first, &e);
        }
        if (strcmp(list_key, "transforms") == 0) {
            snprintf(key, sizeof key, "transforms.%s.predicate", aliases[i]);
            const char *pred = cf_props_get(p, key);
            if (pred && *pred) {
                size_t np;
                const char *const *preds = cf_config_list(c, "predicates", &np);
                bool found = false;
                for (size_t k = 0; k < np; k++)
                    if (strcmp(preds[k], pred) == 0) found = true;
                if (!found) {
                    cf_err e;
                    cf_err_set(&e, CF_ERR_CONFIG, "invalid value for configuration \"%s\"", key);
                    cf_err_detail(&e, "predicate \"%s\" is not one of the aliases in \"predicates\"", pred);
                    cf_err_hint(&e, "add \"%s\" to predicates and set predicates.%s.type", pred, pred);
                    cf_err_where(&e, "%s", key);
                    problem(pb, count, first, &e);
                }
            }
            snprintf(key, sizeof key, "transforms.%s.negate", aliases[i]);
            const char *neg = cf_props_get(p, key);
            if (neg && strcasecmp(neg, "true") != 0 && strcasecmp(neg, "false") != 0) {
                cf_err e;
                cf_err_set(&e, CF_ERR_CONFIG, "invalid value for configuration \"%s\"", key);
                cf_err_detail(&e, "Invalid value %s for configuration %s: Expected value to be either true or false",
                              neg, key);
                cf_err_hint(&e, "allowed: true or false");
                cf_err_where(&e, "%s", key);
                problem(pb, count, first, &e);
            }
        }
    }
}

/* The checks across keys of the connectors' tables (cf_cfg_check), weak
 * references as in src/config/registry.c: a connector module comes after
 * config. ADDING ONE: define `const cf_cfg_check cf_X_check` beside the
 * table and add it here. */
#define CF_CONFIG_CHECKS(X) X(cf_sink_config_check)
#define CF_DECLARE_WEAK(sym) extern const cf_cfg_check sym __attribute__((weak));
CF_CONFIG_CHECKS(CF_DECLARE_WEAK)
#undef CF_DECLARE_WEAK
#define CF_ADDRESS(sym) &sym,
static const cf_cfg_check *const all_checks[] = {CF_CONFIG_CHECKS(CF_ADDRESS) NULL};
#undef CF_ADDRESS

static const cf_cfg_check *check_of(const cf_cfg_table *t) {
    for (size_t i = 0; i + 1 < sizeof all_checks / sizeof all_checks[0]; i++)
        if (all_checks[i] && all_checks[i]->table == t) return all_checks[i];
    return NULL;
}

cf_code cf_connector_config_check(const cf_config *c, bool is_sink, char **problems, cf_err *err) {
    if (problems) *problems = NULL;
    cf_buf pb = CF_BUF_INIT;
    size_t count = 0;
    cf_err first;
    cf_err_clear(&first);
    check_aliases(c, "transforms", &pb, &count, &first);
    check_aliases(c, "predicates", &pb, &count, &first);
    if (is_sink) {
        size_t nt;
        const char *const *topics = cf_config_list(c, "topics", &nt);
        const char *regex = cf_config_string(c, "topics.regex");
        bool has_regex = regex && *regex;
        cf_err e;
        if (nt && has_regex) {
            cf_err_set(&e, CF_ERR_CONFIG, "topics and topics.regex are mutually exclusive options, but both are set");
            cf_err_hint(&e, "keep one of them");
            cf_err_where(&e, "topics");
            problem(&pb, &count, &first, &e);
        } else if (!nt && !has_regex) {
            cf_err_set(&e, CF_ERR_CONFIG, "must configure one of topics or topics.regex");
            cf_err_hint(&e, "set topics (a comma-separated list) or topics.regex");
            cf_err_where(&e, "topics");
            problem(&pb, &count, &first, &e);
        }
        const char *dlq = cf_config_string(c, "errors.deadletterqueue.topic.name");
        if (dlq && *dlq)
            for (size_t i = 0; i < nt; i++)
                if (strcmp(topics[i], dlq) == 0) {
                    cf_err_set(&e, CF_ERR_CONFIG, "the dead letter queue topic \"%s\" is also consumed", dlq);
                    cf_err_detail(&e, "the DLQ topic may not be included in the list of topics consumed by the "
                                      "connector: a bad record would loop forever");
                    cf_err_hint(&e, "use another topic for errors.deadletterqueue.topic.name");
                    cf_err_where(&e, "errors.deadletterqueue.topic.name");
                    problem(&pb, &count, &first, &e);
                }
    }
    /* the connector's own checks across keys */
    size_t nt = 0;
    const cf_cfg_table *const *tables = cf_config_tables_of(c, &nt);
    for (size_t i = 0; i < nt; i++) {
        const cf_cfg_check *chk = check_of(tables[i]);
        if (!chk) continue;
        char *more = NULL;
        cf_err e;
        cf_err_clear(&e);
        if (chk->check(c, &more, &e) != CF_OK && (!more || !*more)) {
            problem(&pb, &count, &first, &e);
        } else if (more && *more) {
            if (!count) first = e;
            for (const char *p = more ? more : ""; *p;) { /* one problem a line */
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                if (len) {
                    cf_buf_append(&pb, p, len);
                    cf_buf_append_byte(&pb, '\n');
                    count++;
                }
                p = nl ? nl + 1 : p + len;
            }
        }
        free(more);
    }
    if (!count) {
        cf_buf_free(&pb);
        return CF_OK;
    }
    if (err) *err = first;
    if (problems)
        *problems = cf_buf_detach(&pb, NULL);
    else
        cf_buf_free(&pb);
    return CF_ERR_CONFIG;
}
