/*
 * cli.h - the cdcflow command line.
 *
 * Each subcommand lives in its own file cmd_<name>.c and is one line in the
 * table of commands.c. The CLI is thin: it parses arguments and calls the
 * modules; anything worth testing without a process lives in a module.
 *
 * Exit codes (documented in `cdcflow --help` and docs/operations.md):
 */
#ifndef CDCFLOW_CLI_H
#define CDCFLOW_CLI_H

#include <stdio.h>

#include "cdcflow/error.h"

#define CF_EXIT_OK 0         /* success */
#define CF_EXIT_RUNTIME 1    /* runtime failure */
#define CF_EXIT_USAGE 2      /* usage or configuration error */
#define CF_EXIT_DATA_ERRORS 3 /* finished, but data errors were reported */

typedef struct cf_command {
    const char *name;    /* "validate", or "config docs" style two words */
    const char *summary; /* one line for `cdcflow --help` */
    const char *help;    /* full text for `cdcflow <command> --help` */
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
} cf_command;

extern const cf_command *const cf_commands[];

int cf_cli_main(int argc, char **argv);

/* True if argv holds -h or --help (before a "--"). */
int cf_cli_wants_help(int argc, char **argv);
/* Print a command's help to stdout. */
void cf_cli_print_help(const cf_command *cmd);
/* Print an error the PostgreSQL way to stderr, prefixed with "cdcflow: ". */
void cf_cli_print_err(const cf_err *err);
/* Install `handler` for SIGINT and SIGTERM (sigaction, no flags): how the
 * long-running commands learn that they should stop cleanly. */
void cf_cli_on_stop_signals(void (*handler)(int));

#endif
