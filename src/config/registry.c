/*
 * registry.c - every configuration definition table, for
 * `cdcflow config docs` (docs/configuration.md) and the table self-checks in
 * tests/config/test_config.c.
 *
 * ADDING YOUR TABLE: one line in CF_CONFIG_TABLES below,
 *     X(cf_files_source_table)
 * naming the `const cf_cfg_table` your module defines (no header needed:
 * the line declares it). Order = order in the docs.
 *
 * Why the references are weak: config comes before every module that owns a
 * table (convert, worker, sources, sinks...), and the static libraries are
 * linked in module order, so a strong reference from here to a later module
 * would not resolve. A weak reference resolves whenever the table's object
 * file is in the program (in `cdcflow` it is: the plugin registries pull it
 * in) and is NULL otherwise; NULLs are left out of the list.
 */
#include <pthread.h>
#include <stddef.h>

#include "cdcflow/config.h"

/* X(symbol): one line per table, in docs order. */
#define CF_CONFIG_TABLES(X)      \
    X(cf_worker_config_table)    \
    X(cf_connector_common_table) \
    X(cf_sink_common_table)      \
    X(cf_files_source_table)     \
    X(cf_stream_source_table)    \
    X(cf_cassandra_cdc_table)    \
    X(cf_sink_config_table)             \
    X(cf_json_converter_table)          \
    X(cf_string_converter_table)        \
    X(cf_bytes_converter_table)         \
    X(cf_avro_converter_table)         \
    X(cf_extract_new_record_state_table) \
    X(cf_replace_field_table)           \
    X(cf_regex_router_table)            \
    X(cf_timestamp_converter_table)     \
    X(cf_value_to_key_table)            \
    X(cf_insert_field_table)            \
    X(cf_cast_table)                    \
    X(cf_filter_table)                  \
    X(cf_extract_field_table)           \
    X(cf_hoist_field_table)             \
    X(cf_flatten_table)                 \
    X(cf_mask_field_table)              \
    X(cf_timestamp_router_table)        \
    X(cf_set_schema_metadata_table)     \
    X(cf_topic_name_matches_table)      \
    X(cf_has_header_key_table)          \
    X(cf_record_is_tombstone_table)

#define CF_DECLARE_WEAK(sym) extern const cf_cfg_table sym __attribute__((weak));
CF_CONFIG_TABLES(CF_DECLARE_WEAK)
#undef CF_DECLARE_WEAK

#define CF_ADDRESS(sym) &sym,
static const cf_cfg_table *const all_tables[] = {CF_CONFIG_TABLES(CF_ADDRESS) NULL};
#undef CF_ADDRESS

#define N_TABLES (sizeof all_tables / sizeof all_tables[0])

/* The list without the tables that are not linked in. Filled once, then
 * read-only: a constant computed at first use, not mutable state. */
static const cf_cfg_table *present[N_TABLES];
static pthread_once_t present_once = PTHREAD_ONCE_INIT;

static void fill_present(void) {
    size_t k = 0;
    for (size_t i = 0; i + 1 < N_TABLES; i++)
        if (all_tables[i]) present[k++] = all_tables[i];
    present[k] = NULL;
}

const cf_cfg_table *const *cf_config_tables(void) {
    pthread_once(&present_once, fill_present);
    return present;
}
