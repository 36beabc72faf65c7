/*
 * predicates.c - Connect's predicates (org.apache.kafka.connect.transforms.
 * predicates.*), which decide per record whether a transform applies
 * (transforms.<alias>.predicate, transforms.<alias>.negate; see
 * transform.c):
 *   TopicNameMatches   the whole topic matches `pattern` (a Java regex, the
 *                      subset RegexRouter supports); no topic: false
 *   HasHeaderKey       the record has at least one header named `name`
 *   RecordIsTombstone  the value is null
 * As Kafka: `pattern` and `name` are required and non-empty; a pattern that
 * does not compile is "Invalid regex: ...".
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/transforms.h"
#include "xf_util.h"

/* ---------------------------------------------------------------- TopicNameMatches */

static const cf_cfg_def tnm_defs[] = {
    {.name = "pattern", .type = CF_CFG_STRING, .default_value = CF_CFG_REQUIRED, .validator = xf_nonempty_string,
     .importance = CF_IMPORTANCE_MEDIUM, .group = "Predicate",
     .doc = "A Java regular expression for matching against the name of a record's topic (the subset RegexRouter "
            "supports)."},
    {.name = NULL},
};

const cf_cfg_table cf_topic_name_matches_table = {
    .name = "TopicNameMatches",
    .title = "TopicNameMatches (`org.apache.kafka.connect.transforms.predicates.TopicNameMatches`)",
    .intro = "A predicate which is true for records with a topic name that matches the configured regular "
             "expression. Used as `predicates.<alias>.type`; a transform applies it with "
             "`transforms.<name>.predicate=<alias>` (and `transforms.<name>.negate=true` for the opposite).",
    .defs = tnm_defs,
};

static cf_code tnm_create(const cf_config *cfg, void **state, cf_err *err) {
    const char *pattern = cf_config_string(cfg, "pattern");
    regex_t *re = cf_xcalloc(1, sizeof *re);
    size_t groups;
    cf_code rc = xf_java_regex_compile(pattern, "pattern", re, &groups, err);
    if (rc) {
        free(re);
        if (err) {
            char tmp[sizeof err->message];
            snprintf(tmp, sizeof tmp, "Invalid value %s for configuration pattern: Invalid regex: %s", pattern,
                     err->message);
            memcpy(err->message, tmp, sizeof tmp);
        }
        return rc;
    }
    *state = re;
    return CF_OK;
}

static bool tnm_test(void *state, const cf_record *rec) {
    return rec->topic && regexec(state, rec->topic, 0, NULL, 0) == 0;
}

static void tnm_destroy(void *state) {
    if (!state) return;
    regfree(state);
    free(state);
}

static const char *const tnm_aliases[] = {"org.apache.kafka.connect.transforms.predicates.TopicNameMatches", NULL};

const cf_predicate_plugin cf_pred_topic_name_matches = {
    .name = "TopicNameMatches",
    .aliases = tnm_aliases,
    .config = &cf_topic_name_matches_table,
    .create = tnm_create,
    .test = tnm_test,
    .destroy = tnm_destroy,
};

/* ---------------------------------------------------------------- HasHeaderKey */

static const cf_cfg_def hhk_defs[] = {
    {.name = "name", .type = CF_CFG_STRING, .default_value = CF_CFG_REQUIRED, .validator = xf_nonempty_string,
     .importance = CF_IMPORTANCE_MEDIUM, .group = "Predicate", .doc = "The header name."},
    {.name = NULL},
};

const cf_cfg_table cf_has_header_key_table = {
    .name = "HasHeaderKey",
    .title = "HasHeaderKey (`org.apache.kafka.connect.transforms.predicates.HasHeaderKey`)",
    .intro = "A predicate which is true for records with at least one header with the configured name.",
    .defs = hhk_defs,
};

static cf_code hhk_create(const cf_config *cfg, void **state, cf_err *err) {
    (void)err;
    *state = cf_xstrdup(cf_config_string(cfg, "name"));
    return CF_OK;
}

static bool hhk_test(void *state, const cf_record *rec) { return cf_record_header_last(rec, state) != NULL; }

static void hhk_destroy(void *state) { free(state); }

static const char *const hhk_aliases[] = {"org.apache.kafka.connect.transforms.predicates.HasHeaderKey", NULL};

const cf_predicate_plugin cf_pred_has_header_key = {
    .name = "HasHeaderKey",
    .aliases = hhk_aliases,
    .config = &cf_has_header_key_table,
    .create = hhk_create,
    .test = hhk_test,
    .destroy = hhk_destroy,
};

/* ---------------------------------------------------------------- RecordIsTombstone */

static const cf_cfg_def rit_defs[] = {{.name = NULL}};

const cf_cfg_table cf_record_is_tombstone_table = {
    .name = "RecordIsTombstone",
    .title = "RecordIsTombstone (`org.apache.kafka.connect.transforms.predicates.RecordIsTombstone`)",
    .intro = "A predicate which is true for records which are tombstones (i.e. have null value). It has no settings.",
    .defs = rit_defs,
};

static cf_code rit_create(const cf_config *cfg, void **state, cf_err *err) {
    (void)cfg, (void)err;
    *state = NULL;
    return CF_OK;
}

static bool rit_test(void *state, const cf_record *rec) {
    (void)state;
    return rec->value == NULL;
}

static void rit_destroy(void *state) { (void)state; }

static const char *const rit_aliases[] = {"org.apache.kafka.connect.transforms.predicates.RecordIsTombstone", NULL};

const cf_predicate_plugin cf_pred_record_is_tombstone = {
    .name = "RecordIsTombstone",
    .aliases = rit_aliases,
    .config = &cf_record_is_tombstone_table,
    .create = rit_create,
    .test = rit_test,
    .destroy = rit_destroy,
};
