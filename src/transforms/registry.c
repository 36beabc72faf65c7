/*
 * registry.c - the list of transform plugins. One line per plugin.
 */
#include "cdcflow/transforms.h"

extern const cf_transform_plugin cf_xf_extract_new_record_state;
extern const cf_transform_plugin cf_xf_replace_field_value;
extern const cf_transform_plugin cf_xf_replace_field_key;
extern const cf_transform_plugin cf_xf_regex_router;
extern const cf_transform_plugin cf_xf_timestamp_converter_value;
extern const cf_transform_plugin cf_xf_timestamp_converter_key;

static const cf_transform_plugin *const plugins[] = {
    &cf_xf_extract_new_record_state,
    &cf_xf_replace_field_value,
    &cf_xf_replace_field_key,
    &cf_xf_regex_router,
    &cf_xf_timestamp_converter_value,
    &cf_xf_timestamp_converter_key,
    NULL,
};

const cf_transform_plugin *const *cf_transform_plugins(void) { return plugins; }
