/*
 * cmd_config.c - `cdcflow config docs`: the configuration reference.
 *
 * Prints docs/configuration.md, generated from every definition table: the
 * config registry (cf_config_tables) plus the tables of the registered
 * connector plugins that are not already listed there. `make docs` writes it
 * to docs/configuration.md; tests/cli/test_config_docs.sh fails when the
 * committed file differs, so the reference cannot drift from the code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/config.h"
#include "cdcflow/connector.h"
#include "cli.h"

static int run_docs(void) {
    size_t n = 0, cap = 16;
    const cf_cfg_table **tables = malloc(cap * sizeof *tables);
    if (!tables) return CF_EXIT_RUNTIME;
    for (const cf_cfg_table *const *t = cf_config_tables(); *t; t++) {
        if (n + 1 >= cap) {
            cap *= 2;
            const cf_cfg_table **nt = realloc(tables, cap * sizeof *tables);
            if (!nt) { free(tables); return CF_EXIT_RUNTIME; }
            tables = nt;
        }
        tables[n++] = *t;
    }
    for (const cf_connector_plugin *const *p = cf_connector_plugins(); *p; p++) {
        const cf_cfg_table *ct = (*p)->config;
        bool listed = false;
        for (size_t i = 0; i < n; i++) listed |= tables[i] == ct;
        if (!ct || listed) continue;
        if (n + 1 >= cap) {
            cap *= 2;
            const cf_cfg_table **nt = realloc(tables, cap * sizeof *tables);
            if (!nt) { free(tables); return CF_EXIT_RUNTIME; }
            tables = nt;
        }
        tables[n++] = ct;
    }
    char *md = cf_config_docs_markdown((const cf_cfg_table *const *)tables, n);
    free(tables);
    int rc = fputs(md, stdout) < 0 || fflush(stdout) != 0 ? CF_EXIT_RUNTIME : CF_EXIT_OK;
    free(md);
    if (rc != CF_EXIT_OK) fprintf(stderr, "cdcflow: cannot write to stdout\n");
    return rc;
}

static int run(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "docs") == 0) return run_docs();
    fprintf(stderr, "cdcflow: %s \"%s\"\nHINT:  Usage: cdcflow config docs (see `cdcflow config --help`).\n",
            argc < 2 ? "missing subcommand" : "unknown subcommand or extra argument", argc < 2 ? "" : argv[argc < 3 ? 1 : 2]);
    return CF_EXIT_USAGE;
}

const cf_command cf_cmd_config = {
    "config",
    "configuration reference: `config docs` prints docs/configuration.md",
    "Usage: cdcflow config docs\n"
    "\n"
    "Prints the configuration reference as Markdown on stdout: every setting of\n"
    "every registered table (common connector settings, sink settings, each\n"
    "connector, converter and transform), with type, default, valid values,\n"
    "importance and description. It is generated from the same definitions that\n"
    "validate configurations, so it is always current. docs/configuration.md is\n"
    "this output (`make docs` regenerates it; a test fails if it is stale).\n"
    "\n"
    "Exit codes: 0 printed, 1 stdout not writable, 2 usage error.",
    run,
};
