/*
 * plugins.c - strong references to every plugin and configuration table, so
 * that the linker puts them into the `cdcflow` binary.
 *
 * The registries (src/worker/registry.c for connectors, src/config/registry.c
 * for configuration tables, src/sink/targets.c for sink targets) refer to
 * plugins weakly, because a module must not depend on later modules; weak
 * references do not pull object files out of static libraries. This table does. ADDING A PLUGIN: one line here too.
 */
#include "cdcflow/config.h"
#include "cdcflow/connector.h"
#include "cdcflow/bigquery.h"
#include "cdcflow/sink.h"

extern const cf_cfg_table cf_worker_config_table;
extern const cf_cfg_table cf_avro_converter_table;
extern const cf_connector_plugin cf_files_source_plugin;
extern const cf_cfg_table cf_files_source_table;
extern const cf_connector_plugin cf_stream_source_plugin;
extern const cf_cfg_table cf_stream_source_table;
extern const cf_connector_plugin cf_cassandra_cdc_plugin;
extern const cf_cfg_table cf_cassandra_cdc_table;
extern const cf_connector_plugin cf_connector_cdc_sink;
extern const cf_cfg_table cf_sink_config_table;

const void *const cf_cli_linked_plugins[] = {
    &cf_worker_config_table,
    &cf_avro_converter_table,
    &cf_files_source_plugin,
    &cf_files_source_table,
    &cf_stream_source_plugin,
    &cf_stream_source_table,
    &cf_cassandra_cdc_plugin,
    &cf_cassandra_cdc_table,
    &cf_connector_cdc_sink,
    &cf_sink_config_table,
    &cf_sink_target_sqlite,
    &cf_sink_target_postgres,
    &cf_sink_target_bigquery,
};
