/*
 * registry.c - the list of converter plugins. One line per plugin; adding a
 * converter means adding its extern declaration and one line here.
 */
#include "cdcflow/convert.h"

extern const cf_converter_plugin cf_json_converter_plugin;
extern const cf_converter_plugin cf_string_converter_plugin;
extern const cf_converter_plugin cf_bytes_converter_plugin;
extern const cf_converter_plugin cf_avro_converter_plugin;

static const cf_converter_plugin *const plugins[] = {
    &cf_json_converter_plugin,
    &cf_string_converter_plugin,
    &cf_bytes_converter_plugin,
    &cf_avro_converter_plugin,
    NULL,
};

const cf_converter_plugin *const *cf_converter_plugins(void) { return plugins; }
