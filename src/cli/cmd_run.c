/*
 * cmd_run.c - `cdcflow run`: run connectors in one process, as Kafka
 * Connect's standalone worker (connect-standalone worker.properties
 * connector1.properties ...). All the work is in the worker module; this
 * file parses arguments, handles SIGINT/SIGTERM and maps the outcome to exit
 * codes.
 *
 * SIGNALS: SIGINT and SIGTERM are blocked in every thread (before the worker
 * makes any) and taken by one thread of ours with sigwait, which can do what
 * a handler cannot: the first signal asks the worker to stop and starts the
 * stop's clock; a second one, or the stop outliving
 * task.shutdown.graceful.timeout.ms + CF_WORKER_STOP_MARGIN_MS (a plugin
 * stuck in a call no timeout reaches: a database that does not answer),
 * logs what was not committed and ends the process at once with exit code
 * 4. Ending it so loses nothing: nothing was committed that was not written,
 * and what was not is read again at the next start (SQLite and PostgreSQL
 * roll back an unfinished transaction; the offsets file is replaced
 * atomically).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/config.h"
#include "cdcflow/connector.h"
#include "cdcflow/log.h"
#include "cdcflow/transforms.h"
#include "cdcflow/worker.h"
#include "cli.h"

/* The thread that takes SIGINT/SIGTERM. w is valid while it is not NULL
 * (under mu): the main thread clears it before destroying the worker. */
typedef struct stopper {
    pthread_t th;
    sigset_t set;
    pthread_mutex_t mu;
    cf_worker *w;
} stopper;

static const char *sig_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal"; }

/* End the process now, after saying what was not committed. */
static void exit_now(stopper *st) {
    pthread_mutex_lock(&st->mu);
    if (st->w) cf_worker_log_uncommitted(st->w);
    fflush(stderr);
    _exit(CF_EXIT_UNCLEAN_STOP);
}

static void *stopper_main(void *arg) {
    stopper *st = arg;
    int sig = 0;
    if (sigwait(&st->set, &sig) != 0) return NULL;
    pthread_mutex_lock(&st->mu);
    if (!st->w) { /* the run is over: nothing to stop */
        pthread_mutex_unlock(&st->mu);
        return NULL;
    }
    int64_t bound_ms = cf_worker_stop_bound_ms(st->w);
    CF_INFO("cli", "%s: stopping; the stop takes at most %lld ms (task.shutdown.graceful.timeout.ms + %d ms), a "
                   "second SIGINT/SIGTERM ends the process at once",
            sig_name(sig), (long long)bound_ms, CF_WORKER_STOP_MARGIN_MS);
    cf_worker_stop(st->w);
    pthread_mutex_unlock(&st->mu);
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += bound_ms / 1000;
    end.tv_nsec += (bound_ms % 1000) * 1000000L;
    if (end.tv_nsec >= 1000000000L) end.tv_sec++, end.tv_nsec -= 1000000000L;
    for (;;) {
        struct timespec now, left;
        clock_gettime(CLOCK_MONOTONIC, &now);
        left.tv_sec = end.tv_sec - now.tv_sec;
        left.tv_nsec = end.tv_nsec - now.tv_nsec;
        if (left.tv_nsec < 0) left.tv_sec--, left.tv_nsec += 1000000000L;
        if (left.tv_sec < 0) left.tv_sec = left.tv_nsec = 0;
        int r = sigtimedwait(&st->set, NULL, &left);
        if (r > 0) {
            CF_WARN("cli", "second %s: exiting at once without waiting for the stop (exit code %d); what was not "
                           "committed is read again at the next start",
                    sig_name(r), CF_EXIT_UNCLEAN_STOP);
            exit_now(st);
        }
        if (r < 0 && errno == EINTR) continue;
        CF_ERROR("cli", "the stop did not end within %lld ms (task.shutdown.graceful.timeout.ms + %d ms): exiting "
                        "(exit code %d); what was not committed is read again at the next start",
                 (long long)bound_ms, CF_WORKER_STOP_MARGIN_MS, CF_EXIT_UNCLEAN_STOP);
        exit_now(st);
    }
}

/* The run's closing line when its exit code is not 0 or 1: one more log
 * line in the JSON format (a program reads stderr), else text prefixed by
 * `who`. */
static void closing_line(const char *who, const char *fmt, uint64_t n) {
    if (cf_log_get_format() == CF_LOG_JSON) {
        cf_log(CF_LOG_WARN, "cli", fmt, (unsigned long long)n);
    } else {
        fprintf(stderr, "%s: ", who);
        fprintf(stderr, fmt, (unsigned long long)n);
        fputc('\n', stderr);
    }
}

static int usage(const char *msg, const char *arg) {
    fprintf(stderr, "cdcflow run: %s%s%s\nHINT:  See `cdcflow run --help`.\n", msg, arg ? " " : "", arg ? arg : "");
    return CF_EXIT_USAGE;
}

/* Create and start a worker, add the connectors, run until they finish
 * (or SIGINT/SIGTERM, see SIGNALS above), and map the outcome to an exit
 * code: 2 for a configuration the worker or a connector refuses, 1 for a
 * task failure, 3 when records were reported as errors, 4 for a stop that
 * was not clean. `who` prefixes the closing line; files[i] names connector
 * i's file in errors (may be NULL). With opts->rest the worker keeps running
 * when connectors end. Call it before the process made threads of its own
 * (they would not inherit the blocked SIGINT/SIGTERM). */
int cf_cli_run_worker(const char *who, const cf_props *wprops, const cf_worker_opts *opts,
                      const cf_props *const *cprops, const char *const *cnames, const char *const *files, size_t nconn) {
    return cf_cli_run_worker_hooks(who, wprops, opts, cprops, cnames, files, nconn, NULL);
}

int cf_cli_run_worker_hooks(const char *who, const cf_props *wprops, const cf_worker_opts *opts,
                            const cf_props *const *cprops, const char *const *cnames, const char *const *files,
                            size_t nconn, const cf_cli_hooks *hooks) {
    cf_err err;
    cf_err_clear(&err);
    int code = CF_EXIT_OK;
    /* before the worker makes threads: they inherit the mask */
    static stopper st = {.mu = PTHREAD_MUTEX_INITIALIZER};
    sigemptyset(&st.set);
    sigaddset(&st.set, SIGINT);
    sigaddset(&st.set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &st.set, NULL);
    cf_worker *w = NULL;
    if (cf_worker_new(wprops, opts, &w, &err)) {
        cf_cli_print_config_err(&err, err.code == CF_ERR_CONFIG ? wprops : NULL, true, "worker configuration");
        return CF_EXIT_USAGE;
    }
    /* from here on a signal is taken: also while the worker starts (reading
     * the offsets topic of a broker that is down waits a while) */
    st.w = w;
    pthread_create(&st.th, NULL, stopper_main, &st);
    pthread_detach(st.th);
    if (cf_worker_start(w, &err)) {
        cf_cli_print_err(&err);
        code = err.code == CF_ERR_CONFIG ? CF_EXIT_USAGE : CF_EXIT_RUNTIME;
        pthread_mutex_lock(&st.mu);
        st.w = NULL;
        pthread_mutex_unlock(&st.mu);
        cf_worker_destroy(w);
        return code;
    }
    /* sinks first: in direct mode a source reads its offsets only after the
     * sinks there are read the positions they store (exactly once) */
    size_t *order = cf_xcalloc(nconn ? nconn : 1, sizeof *order), no = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < nconn; i++) {
            const char *cls = cf_props_get(cprops[i], "connector.class");
            const cf_connector_plugin *pl = cls ? cf_connector_find(cls) : NULL;
            if ((pl && pl->kind == CF_CONNECTOR_SINK) == (pass == 0)) order[no++] = i;
        }
    for (size_t oi = 0; oi < nconn; oi++) {
        size_t i = order[oi];
        if (cf_worker_add_connector(w, cnames[i], cprops[i], &err)) {
            if (files && files[i]) cf_err_where(&err, "%s", files[i]);
            const char *cls = cf_props_get(cprops[i], "connector.class");
            const char *best = err.code == CF_ERR_NOT_FOUND && cls && !cf_connector_find(cls)
                                   ? cf_cli_closest_connector(cls)
                                   : NULL;
            if (best) cf_err_hint(&err, "Did you mean \"%s\"?", best);
            cf_cli_print_config_err(&err, err.code == CF_ERR_CONFIG ? cprops[i] : NULL, false,
                                    files && files[i] ? files[i] : cnames[i]);
            code = (err.code == CF_ERR_CONFIG || err.code == CF_ERR_NOT_FOUND || err.code == CF_ERR_STATE ||
                    err.code == CF_ERR_UNSUPPORTED)
                       ? CF_EXIT_USAGE
                       : CF_EXIT_RUNTIME;
            break;
        }
    }
    free(order);
    if (code == CF_EXIT_OK && hooks && hooks->started) hooks->started(hooks->arg, w);
    if (code == CF_EXIT_OK) {
        cf_err_clear(&err);
        if (cf_worker_run(w, !opts->rest, &err)) {
            cf_cli_print_err(&err);
            code = CF_EXIT_RUNTIME;
        } else if (cf_worker_unclean_stops(w) > 0) {
            closing_line(who,
                         "stopped, but not cleanly: %llu task(s) could not commit everything they read or sent "
                         "(logged above); it is read again at the next start",
                         cf_worker_unclean_stops(w));
            code = CF_EXIT_UNCLEAN_STOP;
        } else if (cf_worker_error_count(w) > 0) {
            closing_line(who, "finished; %llu records were reported as errors (errors.tolerance=all)",
                         cf_worker_error_count(w));
            code = CF_EXIT_DATA_ERRORS;
        }
    } else {
        cf_worker_stop(w);
        cf_worker_run(w, false, NULL);
    }
    /* the stopper may still end the process while this cleans up (a
     * teardown past the bound), but no longer touches the worker */
    if (hooks && hooks->ending) hooks->ending(hooks->arg);
    pthread_mutex_lock(&st.mu);
    st.w = NULL;
    pthread_mutex_unlock(&st.mu);
    cf_worker_destroy(w);
    return code;
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
    /* with REST, no connector is fine: they come over HTTP (connect-standalone
     * starts with a worker file alone, too) */
    if (nconn == 0 && !rest) {
        free(connectors);
        cf_props_destroy(wprops);
        return usage("no connector configuration given", NULL);
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
                           .transforms = &cf_transforms_for_worker,
                           .validate = cf_cli_validate_props};
    code = cf_cli_run_worker("cdcflow run", wprops, &opts, (const cf_props *const *)cprops, (const char *const *)cnames,
                             connectors, nconn);
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
    "commits offsets and exits. The stop is bounded: it takes at most\n"
    "task.shutdown.graceful.timeout.ms (default 5000) + 1 s whatever the broker,\n"
    "the registry or a database does; what could not be committed by then is\n"
    "logged (connector, task, partitions, offsets), read again at the next\n"
    "start, and the exit code is 4. A second SIGINT/SIGTERM exits at once (4).\n"
    "Connector files are Kafka Connect's: JSON\n"
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
    "                  of producing; bounded sources end the run (the stream\n"
    "                  source at its end, files with bounded=true). A file of an\n"
    "                  earlier run is appended to (its stored offsets count on\n"
    "                  it), after cutting a torn last line a crash left; a file\n"
    "                  that does not end like a record file is refused.\n"
    "  --input FILE    sinks read a record file instead of Kafka, to its end; a\n"
    "                  sink that keeps positions (cdc-sink) skips what it applied\n"
    "                  from FILE before (another connector name reads it again).\n"
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
    "or rest.port, or with --rest. Binds 127.0.0.1:8083 by default. With REST no\n"
    "connector file is needed (they can come over HTTP, as with connect-standalone)\n"
    "and the worker keeps running when connectors finish or fail:\n"
    "  GET /connectors (?expand=status&expand=info), POST /connectors,\n"
    "  GET|PUT /connectors/NAME/config, GET /connectors/NAME/status,\n"
    "  GET /connectors/NAME/tasks, GET .../tasks/ID/status, POST .../tasks/ID/restart,\n"
    "  PUT .../pause, PUT .../resume, PUT .../stop, POST .../restart,\n"
    "  DELETE /connectors/NAME, GET .../offsets, PATCH|DELETE .../offsets (stopped\n"
    "  sources), GET .../topics, PUT .../topics/reset, GET /connector-plugins,\n"
    "  PUT /connector-plugins/PLUGIN/config/validate, GET /admin/loggers,\n"
    "  GET|PUT /admin/loggers/NAME, GET /health, GET /metrics (Prometheus text).\n"
    "  docs/operations.md, \"REST API endpoints\", has the answers.\n"
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
    "  3  finished, but records were reported as errors (errors.tolerance=all)\n"
    "  4  stopped, but not cleanly: what a task read or sent could not all be\n"
    "     committed within task.shutdown.graceful.timeout.ms (broker, registry\n"
    "     or database unreachable), or a second signal came; nothing is lost:\n"
    "     it is read again at the next start",
    run,
};
