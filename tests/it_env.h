/*
 * it_env.h - the environment of integration tests (tests/<module>/test_it_*):
 * the addresses of the servers scripts/servers starts, in CF_TEST_*
 * variables. A missing one fails the test program: integration tests fail,
 * never skip, without their servers.
 */
#ifndef CF_TESTS_IT_ENV_H
#define CF_TESTS_IT_ENV_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The value of the environment variable name; exits with status 1 and a
 * message saying how to start the servers when it is unset or empty. */
static inline const char *it_need_env(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr,
                "%s: %s is not set; start the servers with `scripts/servers start` and source the file printed by "
                "`scripts/servers envfile`\n",
                program_invocation_short_name, name);
        exit(1);
    }
    return v;
}

#endif
