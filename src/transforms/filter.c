/*
 * filter.c - org.apache.kafka.connect.transforms.Filter: drops every record.
 * Meant to be used with a predicate (transforms.<alias>.predicate, see
 * transform.c), e.g. to drop tombstones or the records of some topics:
 *     transforms=dropTombstones
 *     transforms.dropTombstones.type=org.apache.kafka.connect.transforms.Filter
 *     transforms.dropTombstones.predicate=isTombstone
 *     predicates=isTombstone
 *     predicates.isTombstone.type=org.apache.kafka.connect.transforms.predicates.RecordIsTombstone
 */
#include "cdcflow/transforms.h"
#include "xf_util.h"

static const cf_cfg_def filter_defs[] = {{.name = NULL}};

const cf_cfg_table cf_filter_table = {
    .name = "Filter",
    .title = "Filter (`org.apache.kafka.connect.transforms.Filter`)",
    .intro = "Drops all records, filtering them from subsequent transformations in the chain. This is intended to be "
             "used conditionally to filter out records matching (or not matching) a particular predicate "
             "(`transforms.<alias>.predicate`, `transforms.<alias>.negate`). It has no settings of its own.",
    .defs = filter_defs,
};

static cf_code filter_create(const cf_config *cfg, void **state, cf_err *err) {
    (void)cfg, (void)err;
    *state = NULL;
    return CF_OK;
}

static cf_code filter_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    (void)state, (void)err;
    cf_record_destroy(rec);
    *out = NULL;
    return CF_OK;
}

static void filter_destroy(void *state) { (void)state; }

static const char *const filter_aliases[] = {"org.apache.kafka.connect.transforms.Filter", NULL};

const cf_transform_plugin cf_xf_filter = {
    .name = "Filter",
    .aliases = filter_aliases,
    .config = &cf_filter_table,
    .create = filter_create,
    .apply = filter_apply,
    .destroy = filter_destroy,
};
