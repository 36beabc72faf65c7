/*
 * cmd_kafka.c - `cdcflow kafka embedded`: run librdkafka's in-memory mock
 * cluster alone (cf_embedded_kafka), print its bootstrap address, serve until
 * SIGINT/SIGTERM. For demos and for trying clients; it is not a broker.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcflow/log.h"
#include "cdcflow/transport.h"
#include "cli.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "cdcflow kafka: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nHINT:  See `cdcflow kafka --help`.\n");
    return CF_EXIT_USAGE;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int run_embedded(int argc, char **argv) {
    int brokers = 1;
    const char *topics[64];
    int parts[64];
    int n_topics = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (strcmp(a, "--brokers") == 0 || strncmp(a, "--brokers=", 10) == 0) {
            val = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : NULL);
            if (parse_int(val, 1, 16, &brokers))
                return usage_error("--brokers needs a number from 1 to 16, not \"%s\"", val ? val : "");
        } else if (strcmp(a, "--topic") == 0 || strncmp(a, "--topic=", 8) == 0) {
            val = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val || !*val) return usage_error("--topic needs NAME[:PARTITIONS]%s", "");
            if (n_topics == 64) return usage_error("at most 64 --topic options%s", "");
            const char *colon = strrchr(val, ':');
            parts[n_topics] = 1;
            if (colon) {
                if (parse_int(colon + 1, 1, 1000, &parts[n_topics]) || colon == val)
                    return usage_error("--topic \"%s\": expected NAME[:PARTITIONS] with 1 to 1000 partitions", val);
                ((char *)colon)[0] = '\0';
            }
            topics[n_topics++] = val;
        } else {
            return usage_error("unknown option \"%s\" for `kafka embedded`", a);
        }
    }
    cf_err err;
    cf_embedded_kafka *k = cf_embedded_kafka_new(brokers, &err);
    if (!k) {
        cf_cli_print_err(&err);
        return CF_EXIT_RUNTIME;
    }
    for (int i = 0; i < n_topics; i++)
        if (cf_embedded_kafka_create_topic(k, topics[i], parts[i], &err)) {
            cf_cli_print_err(&err);
            cf_embedded_kafka_destroy(k);
            return CF_EXIT_RUNTIME;
        }
    cf_cli_on_stop_signals(on_signal);
    printf("%s\n", cf_embedded_kafka_bootstrap(k));
    fflush(stdout);
    CF_INFO("kafka", "embedded (in-memory, NOT durable) mock cluster of %d broker(s) at %s; "
            "SIGINT/SIGTERM stops it and drops all data", brokers, cf_embedded_kafka_bootstrap(k));
    while (!stop_signal) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CF_INFO("kafka", "signal %d: stopping the embedded cluster", (int)stop_signal);
    cf_embedded_kafka_destroy(k);
    return CF_EXIT_OK;
}

static int run(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "cdcflow kafka: missing subcommand\nHINT:  Use `cdcflow kafka embedded`; see `cdcflow kafka --help`.\n");
        return CF_EXIT_USAGE;
    }
    if (strcmp(argv[1], "embedded") == 0) return run_embedded(argc, argv);
    return usage_error("unknown subcommand \"%s\"", argv[1]);
}

const cf_command cf_cmd_kafka = {
    "kafka",
    "Kafka helpers: `kafka embedded` runs an in-memory test cluster",
    "Usage: cdcflow kafka embedded [--brokers N] [--topic NAME[:PARTITIONS]]...\n"
    "\n"
    "Starts librdkafka's mock cluster in this process and serves it until\n"
    "SIGINT or SIGTERM. It prints one line on stdout, its bootstrap address\n"
    "(\"127.0.0.1:PORT[,127.0.0.1:PORT...]\"), which any Kafka client (cdcflow,\n"
    "kcat, Java) can use as bootstrap.servers.\n"
    "\n"
    "IT IS IN MEMORY AND NOT DURABLE: everything written to it is lost when it\n"
    "stops. It is a mock of a broker for demos and tests, not Kafka: it has no\n"
    "ACLs, no retention, no transactions guarantees and little validation. Use a\n"
    "real Kafka cluster for anything you want to keep.\n"
    "\n"
    "Options:\n"
    "  --brokers N               mock brokers, 1 to 16 (default 1); each listens\n"
    "                            on its own random port of 127.0.0.1\n"
    "  --topic NAME[:PARTITIONS] create a topic up front (default 1 partition);\n"
    "                            repeatable. Other topics are created on first use.\n"
    "\n"
    "In cdcflow configurations, bootstrap.servers=embedded starts such a cluster\n"
    "inside the process that uses it instead.\n"
    "\n"
    "Exit codes: 0 stopped by a signal, 1 the cluster could not start, 2 usage.",
    run,
};
