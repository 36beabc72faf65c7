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
#include "cdcflow/props.h"
#include "cdcflow/worker.h"

#define CF_EXIT_OK 0         /* success */
#define CF_EXIT_RUNTIME 1    /* runtime failure */
#define CF_EXIT_USAGE 2      /* usage or configuration error */
#define CF_EXIT_DATA_ERRORS 3 /* finished, but data errors were reported */
#define CF_EXIT_UNCLEAN_STOP 4 /* stopped, but not everything read or sent could be committed */

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
/* The connector plugin name or class closest to `typed` when one is close
 * enough to suggest ("did you mean"), else NULL. Static. */
const char *cf_cli_closest_connector(const char *typed);
/* Every problem of a connector configuration (what `cdcflow validate`
 * reports; the worker's PUT /connector-plugins/{plugin}/config/validate
 * uses it too, cf_worker_opts.validate): one "key: message" line each,
 * appended to out; returns how many (0: valid). */
int cf_cli_validate_props(const cf_props *props, cf_buf *out);
/* Every problem of a connector (or, with worker, a worker) configuration,
 * one line each ("  WHERE: key: ...") appended to out, as `cdcflow validate`
 * finds them; returns how many (0: none it can tell). */
int cf_cli_config_problems(const cf_props *props, bool worker, const char *where, cf_buf *out);
/* Print err as cf_cli_print_err does; when the configuration props has
 * problems validate can tell, all of them, each whole (err's DETAIL holds
 * only what fits). */
void cf_cli_print_config_err(cf_err *err, const cf_props *props, bool worker, const char *where);
/* Run a worker with these connectors to their end, or until SIGINT/SIGTERM,
 * and return the exit code (cmd_run.c; see there). */
int cf_cli_run_worker(const char *who, const cf_props *wprops, const cf_worker_opts *opts,
                      const cf_props *const *cprops, const char *const *cnames, const char *const *files, size_t nconn);
/* The same with hooks: started(arg, w) once the connectors are added (the
 * worker runs), ending(arg) before the worker is destroyed. */
typedef struct cf_cli_hooks {
    void (*started)(void *arg, cf_worker *w);
    void (*ending)(void *arg);
    void *arg;
} cf_cli_hooks;
int cf_cli_run_worker_hooks(const char *who, const cf_props *wprops, const cf_worker_opts *opts,
                            const cf_props *const *cprops, const char *const *cnames, const char *const *files,
                            size_t nconn, const cf_cli_hooks *hooks);

#endif
