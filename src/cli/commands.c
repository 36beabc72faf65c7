/*
 * commands.c - the table of subcommands. Adding a command: write
 * cmd_<name>.c defining `const cf_command cf_cmd_<name>`, declare it here and
 * add one line to the table.
 */
#include "cli.h"

extern const cf_command cf_cmd_version;
extern const cf_command cf_cmd_run;
extern const cf_command cf_cmd_cassandra;
extern const cf_command cf_cmd_cassandra_sidecar;
extern const cf_command cf_cmd_cassandra_exec;
extern const cf_command cf_cmd_config;
extern const cf_command cf_cmd_validate;
extern const cf_command cf_cmd_kafka;

const cf_command *const cf_commands[] = {
    &cf_cmd_version,
    &cf_cmd_run,
    &cf_cmd_config,
    &cf_cmd_validate,
    &cf_cmd_cassandra,
    &cf_cmd_cassandra_sidecar,
    &cf_cmd_cassandra_exec,
    &cf_cmd_kafka,
    NULL,
};
