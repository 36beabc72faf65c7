/*
 * cmd_run.c - `cdcflow run`: run connectors in one process, as Kafka
 * Connect's standalone worker (connect-standalone worker.properties
 * connector1.properties ...). All the work is in the worker module; this
 * file parses arguments, installs the SIGINT/SIGTERM handler and maps the
 * outcome to exit codes.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/config.h"
#include "cdcflow/log.h"
#include "cdcflow/transforms.h"
#include "cdcflow/worker.h"
#include "cli.h"

/* The signal handler needs the worker: the one piece of process state the
 * CLI keeps, set before the handler is installed. */
static cf_worker *volatile running_worker;

static void on_signal(int sig) {
    (void)sig;
    if (running_worker) cf_worker_stop(running_worker);
}

static int usage(const char *msg, const char *arg) {
    fprintf(stderr, "cdcflow run: %s%s%s\nHINT:  See `cdcflow run --help`.\n", msg, arg ? " " : "", arg ? arg : "");
    return CF_EXIT_USAGE;
}

static int run(int argc, char **argv) {
    const char *worker_file = NULL, *input = NULL, *output = NULL;
    bool rest = false;
    const char **connectors = calloc((size_t)argc, sizeof(char *));
    size_t nconn = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (strcmp(a, "--worker") == 0 || strcmp(a, "-w") == 0) dst = &worker_file;
        else if (strcmp(a, "--input") == 0) dst = &input;
        else if (strcmp(a, "--output") == 0) dst = &output;
        else if (strncmp(a, "--worker=", 9) == 0) worker_file = a + 9;
        else if (strncmp(a, "--input=", 8) == 0) input = a + 8;
        else if (strncmp(a, "--output=", 9) == 0) output = a + 9;
        else if (strcmp(a, "--rest") == 0) rest = true;
        else if (strcmp(a, "--") == 0) {
            while (++i < argc) connectors[nconn++] = argv[i];
            break;
        } else if (a[0] == '-' && a[1]) {
            free(connectors);
            return usage("unknown option", a);
        } else {
            connectors[nconn++] = a;
        }
        if (dst) {
            if (i + 1 >= argc) {
                free(connectors);
                return usage("missing value after", a);
            }
            *dst = argv[++i];
        }
    }
    if (nconn == 0 && !rest) {
        free(connectors);
        return usage("no connector configuration given", NULL);
    }
    cf_err err;
    cf_err_clear(&err);
    cf_props *wprops = NULL;
    if (worker_file) {
        char *ignored = NULL;
        if (cf_props_load_file(worker_file, &wprops, &ignored, &err)) {
            free(connectors);
            cf_cli_print_err(&err);
            return CF_EXIT_USAGE;
        }
        free(ignored);
        /* a worker file that configures REST means REST, as connect-standalone */
        if (cf_props_has(wprops, "listeners") || cf_props_has(wprops, "rest.port")) rest = true;
    }
    cf_props **cprops = calloc(nconn ? nconn : 1, sizeof(cf_props *));
    char **cnames = calloc(nconn ? nconn : 1, sizeof(char *));
    int code = CF_EXIT_OK;
    for (size_t i = 0; i < nconn; i++) {
        if (cf_props_load_file(connectors[i], &cprops[i], &cnames[i], &err)) {
            cf_cli_print_err(&err);
            code = CF_EXIT_USAGE;
            goto done;
        }
    }
    cf_worker_opts opts = {.plugins = NULL,
                           .input_file = input,
                           .output_file = output,
                           .rest = rest,
                           .transforms = &cf_transforms_for_worker};
    cf_worker *w = NULL;
    if (cf_worker_new(wprops, &opts, &w, &err)) {
        cf_cli_print_err(&err);
        code = CF_EXIT_USAGE;
        goto done;
    }
    if (cf_worker_start(w, &err)) {
        cf_cli_print_err(&err);
        code = err.code == CF_ERR_CONFIG ? CF_EXIT_USAGE : CF_EXIT_RUNTIME;
        cf_worker_destroy(w);
        goto done;
    }
    running_worker = w;
    cf_cli_on_stop_signals(on_signal);
    for (size_t i = 0; i < nconn; i++) {
        if (cf_worker_add_connector(w, cnames[i], cprops[i], &err)) {
            cf_err_where(&err, "%s", connectors[i]);
            cf_cli_print_err(&err);
            code = (err.code == CF_ERR_CONFIG || err.code == CF_ERR_NOT_FOUND || err.code == CF_ERR_STATE ||
                    err.code == CF_ERR_UNSUPPORTED)
                       ? CF_EXIT_USAGE
                       : CF_EXIT_RUNTIME;
            break;
        }
    }
    if (code == CF_EXIT_OK) {
        cf_err_clear(&err);
        if (cf_worker_run(w, !rest, &err)) {
            cf_cli_print_err(&err);
            code = CF_EXIT_RUNTIME;
        } else if (cf_worker_error_count(w) > 0) {
            const char *fmt = "finished; %llu records were reported as errors (errors.tolerance=all)";
            if (cf_log_get_format() == CF_LOG_JSON) { /* a program reads stderr: one more log line */
                cf_log(CF_LOG_WARN, "cli", fmt, (unsigned long long)cf_worker_error_count(w));
            } else {
                fputs("cdcflow run: ", stderr);
                fprintf(stderr, fmt, (unsigned long long)cf_worker_error_count(w));
                fputc('\n', stderr);
            }
            code = CF_EXIT_DATA_ERRORS;
        }
    } else {
        cf_worker_stop(w);
        cf_worker_run(w, false, NULL);
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    running_worker = NULL;
    cf_worker_destroy(w);
done:
    for (size_t i = 0; i < nconn; i++) {
        cf_props_destroy(cprops[i]);
        free(cnames[i]);
    }
    free(cprops);
    free(cnames);
    free(connectors);
    cf_props_destroy(wprops);
    return code;
}

const cf_command cf_cmd_run = {
    "run",
    "run connectors (sources and sinks) in one process, as Kafka Connect's standalone worker",
    "Usage: cdcflow run [--worker WORKER.properties] [--input FILE] [--output FILE] [--rest]\n"
    "                   CONNECTOR.json|CONNECTOR.properties ...\n"
    "\n"
    "Runs every connector given, one thread per task (tasks.max), until the\n"
    "inputs end or SIGINT/SIGTERM: then it stops polling, flushes the sinks,\n"
    "commits offsets and exits. Connector files are Kafka Connect's: JSON\n"
    "{\"name\": ..., \"config\": {...}} or a flat .properties file with name= and\n"
    "connector.class=.\n"
    "\n"
    "Modes:\n"
    "  direct (default without --worker, or transport=direct)\n"
    "      Sources hand records to the sinks in the same process, no Kafka. A\n"
    "      sink receives the records whose topic is in its \"topics\" (or\n"
    "      matches \"topics.regex\"). A source offset is stored only after every\n"
    "      sink that received the record flushed it. Offsets live in\n"
    "      offset.storage.file.filename (default ./cdcflow.offsets.json).\n"
    "  kafka (transport=kafka, or bootstrap.servers set)\n"
    "      Sources produce to Kafka (idempotent producer); an offset is stored\n"
    "      only after Kafka acknowledged the record and all before it. Sinks\n"
    "      consume in the group connect-<name> and commit only after a flush.\n"
    "      Offsets go to offset.storage.topic (Connect's format) unless\n"
    "      offset.storage.file.filename is set.\n"
    "  --output FILE   sources write a record file (kcat -J JSON lines) instead\n"
    "                  of producing; bounded sources end the run.\n"
    "  --input FILE    sinks read a record file instead of Kafka, to its end.\n"
    "  Together they let you try a configuration offline:\n"
    "    cdcflow run --output recs.jsonl source.json\n"
    "    cdcflow run --input recs.jsonl sink.json\n"
    "\n"
    "Worker configuration (--worker, a .properties file as connect-standalone's):\n"
    "  bootstrap.servers=HOST:PORT|embedded   transport=kafka|direct\n"
    "  offset.storage.file.filename=FILE      offset.storage.topic=connect-offsets\n"
    "  offset.flush.interval.ms=60000         task.shutdown.graceful.timeout.ms=5000\n"
    "  key.converter=json  value.converter=json  (+ key.converter.* / value.converter.*)\n"
    "  listeners=http://127.0.0.1:8083 (or rest.host.name / rest.port)\n"
    "  rest.auth.token=SECRET                 bearer token for the REST API\n"
    "  listeners.https.ssl.certificate.location / listeners.https.ssl.key.location\n"
    "  producer.* consumer.* admin.* ssl.* sasl.* security.protocol: Kafka clients\n"
    "All settings: docs/configuration.md (`cdcflow config docs`).\n"
    "\n"
    "REST API (Kafka Connect's paths): started when the worker file sets listeners\n"
    "or rest.port, or with --rest. Binds 127.0.0.1:8083 by default. With REST the\n"
    "worker keeps running when connectors finish or fail (manage them over HTTP):\n"
    "  GET /connectors, POST /connectors, GET|PUT /connectors/NAME/config,\n"
    "  GET /connectors/NAME/status, PUT .../pause, PUT .../resume,\n"
    "  POST .../restart, DELETE /connectors/NAME, GET /connector-plugins,\n"
    "  GET /metrics (Prometheus text).\n"
    "\n"
    "Errors in records follow each connector's errors.tolerance (none: the task\n"
    "fails; all: the record is skipped, logged with errors.log.enable, and sent\n"
    "to errors.deadletterqueue.topic.name with Connect's __connect.errors.*\n"
    "headers when errors.deadletterqueue.context.headers.enable=true).\n"
    "\n"
    "Exit codes:\n"
    "  0  every connector finished (or stopped by SIGINT/SIGTERM) without errors\n"
    "  1  a task failed (the first failure is printed), or a runtime error\n"
    "  2  usage or configuration error (nothing was run)\n"
    "  3  finished, but records were reported as errors (errors.tolerance=all)",
    run,
};
