/*
 * registry.c - the lists of transform and predicate plugins. One line per
 * plugin.
 */
#include "cdcflow/transforms.h"

extern const cf_transform_plugin cf_xf_extract_new_record_state;
extern const cf_transform_plugin cf_xf_replace_field_value;
extern const cf_transform_plugin cf_xf_replace_field_key;
extern const cf_transform_plugin cf_xf_regex_router;
extern const cf_transform_plugin cf_xf_timestamp_converter_value;
extern const cf_transform_plugin cf_xf_timestamp_converter_key;
extern const cf_transform_plugin cf_xf_value_to_key;
extern const cf_transform_plugin cf_xf_insert_field_value;
extern const cf_transform_plugin cf_xf_insert_field_key;
extern const cf_transform_plugin cf_xf_cast_value;
extern const cf_transform_plugin cf_xf_cast_key;
extern const cf_transform_plugin cf_xf_filter;
extern const cf_transform_plugin cf_xf_extract_field_value;
extern const cf_transform_plugin cf_xf_extract_field_key;
extern const cf_transform_plugin cf_xf_hoist_field_value;
extern const cf_transform_plugin cf_xf_hoist_field_key;
extern const cf_transform_plugin cf_xf_flatten_value;
extern const cf_transform_plugin cf_xf_flatten_key;
extern const cf_transform_plugin cf_xf_mask_field_value;
extern const cf_transform_plugin cf_xf_mask_field_key;
extern const cf_transform_plugin cf_xf_timestamp_router;
extern const cf_transform_plugin cf_xf_set_schema_metadata_value;
extern const cf_transform_plugin cf_xf_set_schema_metadata_key;

static const cf_transform_plugin *const plugins[] = {
    &cf_xf_extract_new_record_state,
    &cf_xf_replace_field_value,
    &cf_xf_replace_field_key,
    &cf_xf_regex_router,
    &cf_xf_timestamp_converter_value,
    &cf_xf_timestamp_converter_key,
    &cf_xf_value_to_key,
    &cf_xf_insert_field_value,
    &cf_xf_insert_field_key,
    &cf_xf_cast_value,
    &cf_xf_cast_key,
    &cf_xf_filter,
    &cf_xf_extract_field_value,
    &cf_xf_extract_field_key,
    &cf_xf_hoist_field_value,
    &cf_xf_hoist_field_key,
    &cf_xf_flatten_value,
    &cf_xf_flatten_key,
    &cf_xf_mask_field_value,
    &cf_xf_mask_field_key,
    &cf_xf_timestamp_router,
    &cf_xf_set_schema_metadata_value,
    &cf_xf_set_schema_metadata_key,
    NULL,
};

const cf_transform_plugin *const *cf_transform_plugins(void) { return plugins; }

extern const cf_predicate_plugin cf_pred_topic_name_matches;
extern const cf_predicate_plugin cf_pred_has_header_key;
extern const cf_predicate_plugin cf_pred_record_is_tombstone;

static const cf_predicate_plugin *const predicates[] = {
    &cf_pred_topic_name_matches,
    &cf_pred_has_header_key,
    &cf_pred_record_is_tombstone,
    NULL,
};

const cf_predicate_plugin *const *cf_predicate_plugins(void) { return predicates; }
