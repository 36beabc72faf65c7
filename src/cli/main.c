/*
 * main.c - the cdcflow command line: parses the global options and
 * dispatches to a subcommand from the table in commands.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv) { return cf_cli_main(argc, argv); }
