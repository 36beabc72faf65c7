/*
 * worker.c - the connector runtime's API: the worker's settings, and what
 * the CLI and the REST API ask of it: create it, add, update, pause,
 * resume, restart and delete connectors, run until every connector ended
 * or a stop came, stop, destroy. See include/cdcflow/worker.h for the
 * guarantees, worker_state.h for which file holds which part.
 *
 * Connector operations (update, restart, delete) may come from the REST
 * thread at any time, also while cf_worker_run ends: w->busy counts those
 * in flight and w->stopping refuses new ones, so the end of a run never
 * races a task start (begin_stopping).
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/log.h"
#include "worker_state.h"

static const char *const transport_values[] = {"kafka", "direct", NULL};
static const char *const override_policies[] = {"All", "None", "Principal", NULL};

static const cf_cfg_def worker_defs[] = {
    {"bootstrap.servers", CF_CFG_LIST, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Kafka",
     "Kafka brokers (host:port, comma-separated), or `embedded` for the in-process mock cluster "
     "(tests, demos). Needed for transport=kafka, the offsets topic and dead letter queues."},
    {"transport", CF_CFG_STRING, NULL, true, transport_values, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Kafka",
     "`kafka`: sources produce to Kafka and sinks consume from it. `direct`: sources hand records to the "
     "sinks in the same process, no Kafka. Default: `kafka` when bootstrap.servers is set, else `direct`."},
    {"offset.storage.file.filename", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH,
     "Offsets",
     "Local file for source offsets (written atomically: temp file, fsync, rename). Default "
     "`cdcflow.offsets.json` in direct mode; in kafka mode the offsets topic is used unless this is set."},
    {"offset.storage.topic", CF_CFG_STRING, "connect-offsets", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH,
     "Offsets",
     "Compacted topic for source offsets in Kafka Connect's format (key `[\"<connector>\",{partition}]`, "
     "value `{offset}`, JSON), readable by Connect's tools. Records are placed by murmur2 of the key, as "
     "Java's producer places them, so a Connect worker sharing the topic finds each key where it looks. "
     "An existing topic that is not compacted, or whose partition count differs from "
     "`offset.storage.partitions`, gets a WARN at start."},
    {"offset.storage.partitions", CF_CFG_INT, "25", false, NULL, true, 1, 10000, NULL, CF_IMPORTANCE_LOW,
     "Offsets", "Partitions of the offsets topic when the worker creates it (Connect's default: 25)."},
    {"offset.storage.replication.factor", CF_CFG_INT, "-1", false, NULL, true, -1, 32767, NULL, CF_IMPORTANCE_LOW,
     "Offsets", "Replication factor of the offsets topic when the worker creates it; -1: the broker's default."},
    {"offset.flush.interval.ms", CF_CFG_LONG, "60000", false, NULL, true, 1, 86400000.0, NULL,
     CF_IMPORTANCE_MEDIUM, "Offsets",
     "How often source offsets are stored and sink consumer offsets committed (after a flush)."},
    {"offset.flush.timeout.ms", CF_CFG_LONG, "5000", false, NULL, true, 1, 86400000.0, NULL, CF_IMPORTANCE_LOW,
     "Offsets", "How long a commit waits for outstanding acknowledgements before giving up until the next one."},
    {"task.shutdown.graceful.timeout.ms", CF_CFG_LONG, "5000", false, NULL, true, 0, 86400000.0, NULL,
     CF_IMPORTANCE_LOW, "Tasks",
     "The bound of a stop (SIGINT/SIGTERM, REST delete, update or restart), as Connect's: the total time the "
     "tasks get to finish what they do, however many. Sources wait for the acknowledgement of what they sent, "
     "sinks flush and commit, the consumers leave their groups, a Schema Registry request is abandoned; what "
     "could not be committed by then is logged (connector, task, partitions and offsets), read again at the "
     "next start, and `cdcflow run` exits 4. The whole stop takes at most this plus one second (the CLI ends "
     "the process then, also when a plugin waits on a database that does not answer)."},
    {"progress.interval.ms", CF_CFG_LONG, "30000", false, NULL, true, 0, 86400000.0, NULL, CF_IMPORTANCE_LOW,
     "Tasks",
     "How often each running task logs a progress line (records so far, the rate since the last line, lag, "
     "errors), when it did something since the last one. 0: no progress lines."},
    {"topic.tracking.enable", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Tasks",
     "Connect's setting: track the topics each connector's records are produced to (sources) or consumed from "
     "(sinks), which `GET /connectors/{name}/topics` answers. `false`: nothing is tracked and that endpoint and "
     "`PUT .../topics/reset` answer 403 `Topic tracking is disabled.`"},
    {"topic.tracking.allow.reset", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
     "Tasks",
     "Connect's setting: whether `PUT /connectors/{name}/topics/reset` may empty a connector's tracked topics "
     "(`false`: 403 `Topic tracking reset is disabled.`)."},
    {"key.converter", CF_CFG_CLASS, "json", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Converters",
     "Default key converter of every connector (json, string, bytes, avro or the Connect class name); "
     "settings under `key.converter.`."},
    {"value.converter", CF_CFG_CLASS, "json", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Converters",
     "Default value converter of every connector; settings under `value.converter.`."},
    {"listeners", CF_CFG_LIST, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "REST",
     "REST listener as in Connect, e.g. `http://127.0.0.1:8083` or `https://127.0.0.1:8443` (one). "
     "Overrides rest.host.name and rest.port."},
    {"rest.host.name", CF_CFG_STRING, "127.0.0.1", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "REST",
     "Address the REST API binds to. The default keeps it local; set 0.0.0.0 deliberately (and a token)."},
    {"rest.port", CF_CFG_INT, "8083", false, NULL, true, 0, 65535, NULL, CF_IMPORTANCE_MEDIUM, "REST",
     "Port of the REST API (0: any free port, logged at start)."},
    {"rest.auth.token", CF_CFG_PASSWORD, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "REST",
     "When set, every REST request needs `Authorization: Bearer <token>` (401 otherwise)."},
    {"access.control.allow.origin", CF_CFG_LIST, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "REST",
     "Connect's setting: origins (`scheme://host[:port]`, comma-separated) whose web pages may call the REST API, "
     "or `*` for any. They get `Access-Control-Allow-Origin` and an answer to their preflight. The default (empty) "
     "allows only the API's own origin: a request with another `Origin` header is refused (403)."},
    {"access.control.allow.methods", CF_CFG_STRING, "", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "REST",
     "Connect's setting: the `Access-Control-Allow-Methods` of a preflight from an allowed origin "
     "(empty: `GET,POST,HEAD`, as Connect's Jetty)."},
    {"rest.connection.idle.timeout.ms", CF_CFG_LONG, "30000", false, NULL, true, 1000, 86400000.0, NULL,
     CF_IMPORTANCE_LOW, "REST",
     "A REST connection that sends nothing for this long is closed (rounded up to whole seconds; Jetty's "
     "default idle timeout is 30 s). See also rest.request.header.timeout.ms."},
    {"rest.request.header.timeout.ms", CF_CFG_LONG, "30000", false, NULL, true, 1000, 86400000.0, NULL,
     CF_IMPORTANCE_LOW, "REST",
     "A REST connection whose request head (request line and headers) is not complete this long after it was "
     "accepted, or after its last request ended (keep-alive), is closed, however slowly it sends (checked "
     "every second)."},
    {"rest.connections.max", CF_CFG_INT, "1000", false, NULL, true, 1, 1000000, NULL, CF_IMPORTANCE_LOW, "REST",
     "REST connections open at once. At the limit, the connection idle longest that is not in a request "
     "(one that sent only part of a request, or a keep-alive one between requests) is closed to make room; only "
     "when all are in requests is a new one refused. The descriptor limit (`ulimit -n`, raised toward its hard "
     "limit at start) may lower it (logged)."},
    {"rest.connections.max.per.ip", CF_CFG_INT, "100", false, NULL, true, 0, 1000000, NULL, CF_IMPORTANCE_LOW,
     "REST",
     "REST connections open at once from one client address (0: no limit of its own). At the limit, that "
     "address's connection idle longest that is not in a request is closed to make room, as for "
     "rest.connections.max."},
    {"rest.threads", CF_CFG_INT, "4", false, NULL, true, 1, 64, NULL, CF_IMPORTANCE_LOW, "REST",
     "Threads serving the REST API (a request that waits, such as a DELETE stopping tasks, holds one)."},
    {"listeners.https.ssl.certificate.location", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL,
     CF_IMPORTANCE_LOW, "REST", "PEM certificate (chain) of the REST API; with the key, the API speaks HTTPS."},
    {"listeners.https.ssl.key.location", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
     "REST", "PEM private key of the REST API's certificate."},
    {"client.id", CF_CFG_STRING, "cdcflow", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Kafka",
     "Prefix of the Kafka client ids (`<client.id>-<connector>-<task>`)."},
    {"security.protocol", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "Kafka",
     "Passed to every Kafka client (plaintext, ssl, sasl_plaintext, sasl_ssl)."},
    {"connector.client.config.override.policy", CF_CFG_STRING, "All", false, override_policies, false, 0, 0, NULL,
     CF_IMPORTANCE_MEDIUM, "Kafka",
     "Connect's policy for the connectors' `producer.override.*`, `consumer.override.*` and `admin.override.*` "
     "keys (librdkafka names, over the worker's `producer.*` ...): `All` (Connect's default since 3.0) allows "
     "every one, `None` refuses a connector that has one, `Principal` allows only `sasl.jaas.config`, "
     "`sasl.mechanism` and `security.protocol`."},
    /* Connect's keys that a connect-standalone.properties carries and that
     * mean nothing here: accepted, one INFO line each at start (ignored_keys) */
    {"plugin.path", CF_CFG_LIST, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Connect compatibility",
     "Accepted and ignored (one INFO line): cdcflow's connectors, converters and transforms are built in, "
     "so there is no plugin folder to scan."},
    {"internal.key.converter", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
     "Connect compatibility",
     "Accepted and ignored (one INFO line), as Connect 2.0+ ignores it: offsets are always Connect's JSON "
     "without schemas. The same for `internal.value.converter` and `internal.*.converter.*`."},
    {"internal.value.converter", CF_CFG_STRING, NULL, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
     "Connect compatibility", "Accepted and ignored, as `internal.key.converter`."},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

static const char *const worker_prefixes[] = {"producer.", "consumer.", "admin.", "ssl.", "sasl.",
                                               "key.converter.", "value.converter.", "internal.key.converter.",
                                               "internal.value.converter.", NULL};

/* Say once which of Connect's keys a worker file set that do nothing here,
 * so that a user who brought their connect-standalone.properties knows the
 * line was read and why it has no effect. */
static void ignored_keys(const cf_props *p) {
    if (cf_props_get(p, "plugin.path"))
        CF_INFO(COMP, "plugin.path=%s ignored: cdcflow's connectors, converters and transforms are built in",
                cf_props_get(p, "plugin.path"));
    bool internal = false;
    for (size_t i = 0; i < cf_props_count(p) && !internal; i++)
        internal = strncmp(cf_props_key_at(p, i), "internal.", 9) == 0;
    if (internal)
        CF_INFO(COMP, "internal.key.converter / internal.value.converter ignored (as Kafka Connect 2.0+ ignores "
                      "them): offsets are stored as Connect's JSON without schemas");
}

const cf_cfg_table cf_worker_config_table = {
    "worker",
    "Worker",
    "Settings of `cdcflow run --worker FILE` (a Java .properties file, as Kafka Connect's standalone "
    "worker). `producer.*`, `consumer.*` and `admin.*` go to the Kafka clients (librdkafka names); "
    "`ssl.*`, `sasl.*` and `security.protocol` to all of them.",
    worker_defs,
    worker_prefixes,
};

const cf_config *cf_worker_config(const cf_worker *w) { return w->cfg; }
const cf_worker_route *cf_worker_routes(const cf_worker *w, size_t *n) {
    *n = w->n_routes;
    return w->routes;
}
const char *cf_worker_kafka_bootstrap(const cf_worker *w) { return cf_kafka_env_bootstrap(w->kenv); }
cf_kafka_env *cf_worker_kafka_env(const cf_worker *w) { return w->kenv; }

static const char *const state_names[] = {"UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "FINISHED", "STOPPED"};
const char *cf_state_name(cf_state s) { return (unsigned)s <= CF_STATE_STOPPED ? state_names[s] : "UNKNOWN"; }

void cf_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {}
}

/* The error of a connector operation asked for while the worker stops. */
static cf_code worker_stopping(cf_err *err, const char *name, const char *done) {
    cf_err_set(err, CF_ERR_STATE, "connector %s cannot be %s: the worker is stopping", name, done);
    cf_err_detail(err, "its run ended (a stop was requested, or every bounded source finished) and it stops "
                       "every connector");
    cf_err_hint(err, "Send the request to a running worker (start `cdcflow run` again).");
    return CF_ERR_STATE;
}

/* An update, restart or delete ends (counted in w->busy since it began). */
static void op_end(cf_worker *w) {
    pthread_mutex_lock(&w->mu);
    if (--w->busy == 0) pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->mu);
}

/* From now on connector operations are refused; wait for those in flight
 * (they may still start tasks, which the caller then stops). */
static void begin_stopping(cf_worker *w) {
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    while (w->busy > 0) pthread_cond_wait(&w->idle, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

/* ---------------- worker ---------------- */

cf_code cf_worker_new(const cf_props *worker_props, const cf_worker_opts *opts, cf_worker **out, cf_err *err) {
    cf_props *p = worker_props ? cf_props_clone(worker_props) : cf_props_new();
    const cf_cfg_table *tables[] = {&cf_worker_config_table};
    cf_config *cfg = NULL;
    char *problems = NULL;
    if (cf_config_parse(tables, 1, p, &cfg, &problems, err)) {
        if (err && problems) {
            cf_err_set(err, CF_ERR_CONFIG, "invalid worker configuration");
            cf_err_detail(err, "%s", problems);
        }
        free(problems);
        cf_props_destroy(p);
        return CF_ERR_CONFIG;
    }
    free(problems);
    ignored_keys(p);
    cf_worker *w = cf_xcalloc(1, sizeof *w);
    w->props = p;
    w->cfg = cfg;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->idle, NULL);
    atomic_init(&w->draining, false);
    atomic_init(&w->sealed, false);
    atomic_init(&w->errors, 0);
    const char *bs = cf_config_string(cfg, "bootstrap.servers");
    const char *tr = cf_config_string(cfg, "transport");
    if (tr) w->mode = strcasecmp(tr, "direct") == 0 ? MODE_DIRECT : MODE_KAFKA;
    else w->mode = bs ? MODE_KAFKA : MODE_DIRECT;
    if (opts) {
        w->extra_plugins = opts->plugins;
        w->input_file = opts->input_file ? cf_xstrdup(opts->input_file) : NULL;
        w->output_file = opts->output_file ? cf_xstrdup(opts->output_file) : NULL;
        w->want_rest = opts->rest;
        w->transforms = opts->transforms;
        w->validate = opts->validate;
        w->routes = opts->routes;
        w->n_routes = opts->n_routes;
    }
    w->flush_interval_ms = cf_config_long(cfg, "offset.flush.interval.ms");
    w->flush_timeout_ms = cf_config_long(cfg, "offset.flush.timeout.ms");
    w->shutdown_timeout_ms = cf_config_long(cfg, "task.shutdown.graceful.timeout.ms");
    w->progress_interval_ms = cf_config_long(cfg, "progress.interval.ms");
    w->topic_tracking = cf_config_bool(cfg, "topic.tracking.enable");
    if (w->mode == MODE_KAFKA && !bs && !w->output_file) {
        cf_err_set(err, CF_ERR_CONFIG, "transport=kafka needs bootstrap.servers");
        cf_err_hint(err, "Set bootstrap.servers=host:port (or `embedded`), or transport=direct.");
        cf_worker_destroy(w);
        return CF_ERR_CONFIG;
    }
    *out = w;
    return CF_OK;
}

cf_code cf_worker_start(cf_worker *w, cf_err *err) {
    if (w->started) return CF_OK;
    const char *file = cf_config_string(w->cfg, "offset.storage.file.filename");
    cf_code rc;
    if (cf_config_string(w->cfg, "bootstrap.servers") && !w->kenv &&
        (rc = cf_kafka_env_new(w->cfg, &w->kenv, err)))
        return rc;
    if (file || w->mode == MODE_DIRECT || !cf_config_string(w->cfg, "bootstrap.servers"))
        rc = cf_offset_store_open_file(file ? file : "cdcflow.offsets.json", &w->offsets, err);
    else
        rc = cf_worker_kafka_offsets_open(w, cf_config_string(w->cfg, "offset.storage.topic"), &w->offsets, err);
    if (rc) return rc;
    if (w->output_file) {
        if ((rc = cf_worker_file_out_new(w->output_file, &w->file_out, err))) return rc;
        w->has_file_out = true;
    }
    if (w->want_rest && (rc = cf_rest_start(w, w->cfg, &w->rest, err))) return rc;
    w->started = true;
    CF_INFO(COMP, "worker started: transport=%s, offsets in %s%s%s", w->mode == MODE_DIRECT ? "direct" : "kafka",
            (file || w->mode == MODE_DIRECT || !cf_config_string(w->cfg, "bootstrap.servers")) ? "file " : "topic ",
            (file || w->mode == MODE_DIRECT || !cf_config_string(w->cfg, "bootstrap.servers"))
                ? (file ? file : "cdcflow.offsets.json")
                : cf_config_string(w->cfg, "offset.storage.topic"),
            w->input_file ? ", sinks read the record file" : w->output_file ? ", sources write the record file" : "");
    return CF_OK;
}

cf_code cf_worker_add_connector(cf_worker *w, const char *name, const cf_props *config, cf_err *err) {
    if (!w->started) return cf_err_set(err, CF_ERR_STATE, "the worker is not started");
    conn *c = NULL;
    cf_code rc = cf_conn_create(w, name, config, &c, err);
    if (rc) return rc;
    /* registered and started at once: whoever finds it (cf_worker_run's
     * end, a delete) waits for c->life and finds the tasks started */
    pthread_mutex_lock(&c->life);
    pthread_mutex_lock(&w->mu);
    if (w->stopping || cf_conn_find_locked(w, c->name, NULL)) {
        bool stopping = w->stopping;
        pthread_mutex_unlock(&w->mu);
        pthread_mutex_unlock(&c->life);
        if (stopping) rc = worker_stopping(err, c->name, "created");
        else rc = cf_err_set(err, CF_ERR_STATE, "Connector %s already exists", c->name);
        cf_conn_free(c);
        return rc;
    }
    cf_conns_append_locked(w, c);
    if (!c->is_sink) atomic_store(&w->draining, false);
    for (int i = 0; i < c->ntasks; i++) cf_task_start(c->tasks[i]);
    pthread_mutex_unlock(&w->mu);
    /* c->life still held: an update or delete of c cannot free it yet */
    CF_INFO(COMP, "connector %s (%s, %s) created with %d task%s", c->name, c->plugin->name,
            c->is_sink ? "sink" : "source", c->ntasks, c->ntasks == 1 ? "" : "s");
    pthread_mutex_unlock(&c->life);
    return CF_OK;
}

static cf_code not_found(cf_err *err, const char *name) {
    return cf_err_set(err, CF_ERR_NOT_FOUND, "Connector %s not found", name);
}

cf_code cf_worker_delete_connector(cf_worker *w, const char *name, cf_err *err) {
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        return worker_stopping(err, name, "deleted");
    }
    size_t idx;
    conn *c = cf_conn_find_locked(w, name, &idx);
    if (!c) {
        pthread_mutex_unlock(&w->mu);
        return not_found(err, name);
    }
    memmove(w->conns + idx, w->conns + idx + 1, (w->n_conns - idx - 1) * sizeof(conn *));
    w->n_conns--;
    w->busy++;
    pthread_mutex_unlock(&w->mu);
    cf_conn_stop(c, true);
    cf_conn_unref(c);
    op_end(w);
    CF_INFO(COMP, "connector %s deleted", name);
    return CF_OK;
}

cf_code cf_worker_update_connector(cf_worker *w, const char *name, const cf_props *config, cf_err *err) {
    conn *nc = NULL;
    cf_code rc = cf_conn_create(w, name, config, &nc, err);
    if (rc) return rc;
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        cf_conn_free(nc);
        return worker_stopping(err, name, "reconfigured");
    }
    size_t idx;
    conn *old = cf_conn_find_locked(w, name, &idx);
    if (!old) {
        pthread_mutex_unlock(&w->mu);
        cf_conn_free(nc);
        return not_found(err, name);
    }
    atomic_store(&nc->paused, atomic_load(&old->paused));
    /* a new config keeps the target state (Connect's lives in the config topic) */
    atomic_store(&nc->stopped, atomic_load(&old->stopped));
    memmove(w->conns + idx, w->conns + idx + 1, (w->n_conns - idx - 1) * sizeof(conn *));
    w->n_conns--;
    w->reconfiguring++;
    w->busy++; /* the worker's end waits for the new tasks, then stops them */
    pthread_mutex_unlock(&w->mu);
    cf_conn_stop(old, true);
    /* and the active topics (Connect's live in the status topic): taken once
     * the old tasks noted their last; the new ones have not started */
    pthread_mutex_lock(&old->mu);
    nc->active_topics = cf_xcalloc(old->n_active_topics + 1, sizeof(char *));
    nc->cap_active_topics = old->n_active_topics + 1;
    for (size_t i = 0; i < old->n_active_topics; i++) nc->active_topics[i] = cf_xstrdup(old->active_topics[i]);
    nc->n_active_topics = old->n_active_topics;
    pthread_mutex_unlock(&old->mu);
    cf_conn_unref(old);
    pthread_mutex_lock(&nc->life);
    pthread_mutex_lock(&w->mu);
    w->reconfiguring--;
    cf_conns_append_locked(w, nc); /* not "the slot we freed": an add may have taken it meanwhile */
    for (int i = 0; i < nc->ntasks && !atomic_load(&nc->stopped); i++) cf_task_start(nc->tasks[i]);
    if (--w->busy == 0) pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&nc->life);
    CF_INFO(COMP, "connector %s reconfigured", name);
    return CF_OK;
}

/* Find a connector for an operation that starts or stops its tasks: a
 * reference held and the operation counted in w->busy (op_end, then
 * cf_conn_unref). NULL with err when the worker stops or none is named so. */
static conn *op_begin(cf_worker *w, const char *name, const char *done, cf_err *err) {
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        worker_stopping(err, name, done);
        return NULL;
    }
    conn *c = cf_conn_find_locked(w, name, NULL);
    if (!c) {
        pthread_mutex_unlock(&w->mu);
        not_found(err, name);
        return NULL;
    }
    atomic_fetch_add(&c->refs, 1);
    w->busy++;
    pthread_mutex_unlock(&w->mu);
    return c;
}

static cf_code retired_err(cf_err *err, const char *name, const char *done) {
    cf_err_set(err, CF_ERR_STATE, "connector %s cannot be %s: it was deleted or reconfigured meanwhile", name, done);
    cf_err_hint(err, "Send the request again: it then applies to the connector of this name as it is now, if any.");
    return CF_ERR_STATE;
}

/* Pause and resume flip the flag the tasks poll; of a STOPPED connector
 * they start its tasks again (paused for a pause), as Connect's target
 * states STOPPED -> PAUSED / STARTED. */
static cf_code set_paused(cf_worker *w, const char *name, bool paused, cf_err *err) {
    conn *c = op_begin(w, name, paused ? "paused" : "resumed", err);
    if (!c) return err ? err->code : CF_ERR_NOT_FOUND;
    cf_code rc = CF_OK;
    pthread_mutex_lock(&c->life);
    bool was_stopped = atomic_load(&c->stopped);
    if (c->retired) {
        rc = retired_err(err, name, paused ? "paused" : "resumed");
    } else {
        atomic_store(&c->paused, paused);
        if (was_stopped) {
            atomic_store(&c->stopped, false);
            for (int i = 0; i < c->ntasks; i++) cf_task_start(c->tasks[i]);
            if (!c->is_sink) atomic_store(&w->draining, false);
        }
    }
    pthread_mutex_unlock(&c->life);
    op_end(w);
    if (!rc)
        CF_INFO(COMP, "connector %s %s%s", name, paused ? "paused" : "resumed",
                was_stopped ? " (was stopped: its tasks start again)" : "");
    cf_conn_unref(c);
    return rc;
}

cf_code cf_worker_pause_connector(cf_worker *w, const char *name, cf_err *err) {
    return set_paused(w, name, true, err);
}

cf_code cf_worker_resume_connector(cf_worker *w, const char *name, cf_err *err) {
    return set_paused(w, name, false, err);
}

cf_code cf_worker_stop_connector(cf_worker *w, const char *name, cf_err *err) {
    conn *c = op_begin(w, name, "stopped", err);
    if (!c) return err ? err->code : CF_ERR_NOT_FOUND;
    cf_code rc = CF_OK;
    bool already = false;
    pthread_mutex_lock(&c->life);
    if (c->retired) {
        rc = retired_err(err, name, "stopped");
    } else if (atomic_load(&c->stopped)) {
        already = true; /* idempotent, as Connect's */
    } else {
        /* the stop of a delete: every task asked at once, one deadline, so
         * it takes task.shutdown.graceful.timeout.ms at most; each task
         * flushes and commits (sources store their offsets) */
        atomic_store(&c->stopped, true);
        atomic_store(&c->paused, false);
        int64_t deadline = cf_stop_deadline(w);
        for (int i = 0; i < c->ntasks; i++)
            if (c->tasks[i]->started) cf_task_request_stop(c->tasks[i], deadline);
        for (int i = 0; i < c->ntasks; i++) cf_task_join(c->tasks[i]);
    }
    pthread_mutex_unlock(&c->life);
    op_end(w);
    /* what a source stored reaches the store's file or topic now, so that
     * GET .../offsets and a later PATCH see it */
    if (!rc && !already && !c->is_sink && w->offsets) {
        cf_err fe;
        if (cf_offset_store_flush_until(w->offsets, cf_stop_deadline(w), &fe)) cf_log_err(CF_LOG_WARN, COMP, &fe);
    }
    if (!rc) CF_INFO(COMP, "connector %s stopped%s (its config is kept; PUT /connectors/%s/resume starts it)", name,
                     already ? " already" : "", name);
    cf_conn_unref(c);
    return rc;
}

/* Restart the tasks of a connector: all, the failed ones (only_failed), or
 * the one numbered only_task (>= 0; 404 when the connector has no such task). */
static cf_code restart_tasks(cf_worker *w, const char *name, bool only_failed, int only_task, cf_err *err) {
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        return worker_stopping(err, name, "restarted");
    }
    conn *c = cf_conn_find_locked(w, name, NULL);
    if (!c) {
        pthread_mutex_unlock(&w->mu);
        return not_found(err, name);
    }
    if (only_task >= 0 && only_task >= c->ntasks) {
        /* Connect's StandaloneHerder: "Task <connector>-<id> not found" */
        pthread_mutex_unlock(&w->mu);
        cf_err_set(err, CF_ERR_NOT_FOUND, "Task %s-%d not found", name, only_task);
        cf_err_hint(err, "Connector %s has %d task(s), numbered from 0; GET /connectors/%s/status lists them.",
                    name, c->ntasks, name);
        return CF_ERR_NOT_FOUND;
    }
    atomic_fetch_add(&c->refs, 1);
    w->busy++;
    pthread_mutex_unlock(&w->mu);
    cf_code rc = CF_OK;
    pthread_mutex_lock(&c->life);
    if (c->retired) {
        /* deleted or replaced since we found it: its tasks stay stopped */
        rc = cf_err_set(err, CF_ERR_STATE, "connector %s cannot be restarted: it was deleted or reconfigured "
                                           "meanwhile", name);
        cf_err_hint(err, "Restart it again: that restarts the connector of this name as it is now, if any.");
    } else if (atomic_load(&c->stopped)) {
        /* STOPPED has no tasks (Connect: its task configs are emptied): a
         * restart leaves it stopped, a task is not found */
        if (only_task >= 0) {
            rc = cf_err_set(err, CF_ERR_NOT_FOUND, "Task %s-%d not found", name, only_task);
            cf_err_hint(err, "Connector %s is STOPPED and has no tasks; PUT /connectors/%s/resume starts them.", name,
                        name);
        }
    } else {
        /* every task asked first, with one deadline: the restart takes
         * task.shutdown.graceful.timeout.ms at most, however many tasks */
        int64_t deadline = cf_stop_deadline(w);
        bool *pick = cf_xcalloc((size_t)c->ntasks + 1, sizeof *pick);
        for (int i = 0; i < c->ntasks; i++) {
            pick[i] = only_task >= 0 ? i == only_task
                                     : !only_failed || atomic_load(&c->tasks[i]->state) == CF_STATE_FAILED;
            if (pick[i] && c->tasks[i]->started) cf_task_request_stop(c->tasks[i], deadline);
        }
        for (int i = 0; i < c->ntasks; i++) {
            if (!pick[i]) continue;
            cf_task_join(c->tasks[i]);
            cf_task_start(c->tasks[i]);
        }
        free(pick);
        if (!c->is_sink) atomic_store(&w->draining, false);
    }
    pthread_mutex_unlock(&c->life);
    op_end(w);
    if (!rc && only_task >= 0) CF_INFO(COMP, "connector %s: task %d restarted", name, only_task);
    else if (!rc) CF_INFO(COMP, "connector %s restarted%s", name, only_failed ? " (failed tasks)" : "");
    cf_conn_unref(c);
    return rc;
}

cf_code cf_worker_restart_connector(cf_worker *w, const char *name, bool only_failed, cf_err *err) {
    return restart_tasks(w, name, only_failed, -1, err);
}

cf_code cf_worker_restart_task(cf_worker *w, const char *name, int task_id, cf_err *err) {
    if (task_id < 0) {
        cf_err_set(err, CF_ERR_NOT_FOUND, "Task %s-%d not found", name, task_id);
        return CF_ERR_NOT_FOUND;
    }
    return restart_tasks(w, name, false, task_id, err);
}

static bool terminal(int st) { return st == CF_STATE_FINISHED || st == CF_STATE_FAILED; }

/* The connectors as they are now, each with a reference held (cf_conn_unref
 * each, free the array): the caller walks them without the worker's lock. */
conn **cf_conns_snapshot(cf_worker *w, size_t *n_out) {
    pthread_mutex_lock(&w->mu);
    size_t n = w->n_conns;
    conn **cs = cf_xmalloc((n ? n : 1) * sizeof(conn *));
    for (size_t i = 0; i < n; i++) {
        cs[i] = w->conns[i];
        atomic_fetch_add(&cs[i]->refs, 1);
    }
    pthread_mutex_unlock(&w->mu);
    *n_out = n;
    return cs;
}

/* One line per running task that did something since the last line (or
 * has lag): long work shows it goes on, and how fast. */
static void log_progress(cf_worker *w, double secs) {
    for (size_t i = 0; i < w->n_conns; i++) {
        conn *c = w->conns[i];
        for (int j = 0; j < c->ntasks; j++) {
            task *t = c->tasks[j];
            if (atomic_load(&t->state) != CF_STATE_RUNNING) continue;
            uint64_t out = atomic_load(&t->m.records_out), lag = atomic_load(&t->m.lag);
            uint64_t errs = atomic_load(&t->m.errors);
            if (out == t->progress_out && lag == 0) continue;
            CF_INFO(COMP, "progress: connector %s task %d (%s): %llu records %s (%.0f/s over %.1f s), lag %llu, %llu errors",
                    c->name, j, c->is_sink ? "sink" : "source", (unsigned long long)out,
                    c->is_sink ? "put" : "sent", (double)(out - t->progress_out) / secs, secs,
                    (unsigned long long)lag, (unsigned long long)errs);
            t->progress_out = out;
        }
    }
}

cf_code cf_worker_run(cf_worker *w, bool stop_on_failure, cf_err *err) {
    cf_code rc = CF_OK;
    atomic_store(&w->sealed, true);
    int64_t last_progress = cf_now_us();
    for (;;) {
        if (w->stop_flag) {
            CF_INFO(COMP, "stop requested: stopping the tasks (flush, commit)");
            break;
        }
        bool sources_live = false, all_done = true, any = false;
        task *failed = NULL;
        pthread_mutex_lock(&w->mu);
        for (size_t i = 0; i < w->n_conns; i++) {
            conn *c = w->conns[i];
            for (int j = 0; j < c->ntasks; j++) {
                int st = atomic_load(&c->tasks[j]->state);
                any = true;
                if (!terminal(st)) all_done = false;
                if (!c->is_sink && !terminal(st)) sources_live = true;
                if (st == CF_STATE_FAILED && !failed) failed = c->tasks[j];
            }
        }
        if (!sources_live) atomic_store(&w->draining, true);
        int64_t now = cf_now_us();
        if (w->progress_interval_ms > 0 && now - last_progress >= w->progress_interval_ms * 1000) {
            log_progress(w, (double)(now - last_progress) / 1e6);
            last_progress = now;
        }
        if (failed && stop_on_failure) {
            pthread_mutex_lock(&failed->mu);
            if (err) *err = failed->fail_err;
            rc = failed->fail_err.code ? failed->fail_err.code : CF_ERR_INTERNAL;
            pthread_mutex_unlock(&failed->mu);
        }
        pthread_mutex_unlock(&w->mu);
        if (rc) break;
        if (any && all_done && !w->want_rest) break;
        cf_sleep_ms(20);
    }
    /* One deadline for the whole stop (task.shutdown.graceful.timeout.ms):
     * every task's waits end by then, whatever the broker, the registry or
     * a database does. */
    atomic_store(&w->stop_deadline_us, cf_now_us() + w->shutdown_timeout_ms * 1000);
    /* no connector changes from here on (those in flight end first): the
     * snapshot is every connector, and no task starts after it is stopped */
    begin_stopping(w);
    size_t n;
    conn **cs = cf_conns_snapshot(w, &n);
    int64_t deadline = atomic_load(&w->stop_deadline_us);
    /* direct mode: sources first (their pending records need the sinks),
     * then sinks; otherwise sources and sinks are independent: all at once */
    bool sinks_after = w->mode == MODE_DIRECT;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < cs[i]->ntasks; j++)
            if (!cs[i]->is_sink || !sinks_after) cf_task_request_stop(cs[i]->tasks[j], deadline);
    for (size_t i = 0; i < n; i++)
        if (!cs[i]->is_sink) cf_conn_stop(cs[i], false);
    atomic_store(&w->draining, true);
    for (size_t i = 0; i < n; i++)
        if (cs[i]->is_sink) cf_conn_stop(cs[i], false);
    /* what the stops could not commit was logged by each task; the exit
     * code says so (cf_worker_unclean_stops) */
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < cs[i]->ntasks; j++) {
            task *t = cs[i]->tasks[j];
            pthread_mutex_lock(&t->mu);
            if (t->unclean) atomic_fetch_add(&w->unclean_stops, 1);
            pthread_mutex_unlock(&t->mu);
        }
    /* report the first failure even when not stopping on it */
    if (!rc) {
        for (size_t i = 0; i < n && !rc; i++)
            for (int j = 0; j < cs[i]->ntasks && !rc; j++)
                if (atomic_load(&cs[i]->tasks[j]->state) == CF_STATE_FAILED) {
                    if (err) *err = cs[i]->tasks[j]->fail_err;
                    rc = cs[i]->tasks[j]->fail_err.code ? cs[i]->tasks[j]->fail_err.code : CF_ERR_INTERNAL;
                }
    }
    for (size_t i = 0; i < n; i++) cf_conn_unref(cs[i]);
    free(cs);
    if (w->offsets) {
        cf_err fe;
        if (cf_offset_store_flush_until(w->offsets, deadline, &fe)) {
            /* the tasks stored what they could; what is left is read again */
            cf_log_err(CF_LOG_WARN, COMP, &fe);
            if (atomic_load(&w->unclean_stops) == 0) {
                CF_WARN(COMP, "stop not clean: source offsets not stored: %s; the records after the stored offsets "
                              "are read again at the next start", fe.message);
                atomic_fetch_add(&w->unclean_stops, 1);
            }
        }
    }
    return rc;
}

void cf_worker_stop(cf_worker *w) {
    if (w) w->stop_flag = 1;
}

void cf_worker_destroy(cf_worker *w) {
    if (!w) return;
    if (w->rest) cf_rest_stop(w->rest);
    begin_stopping(w);
    pthread_mutex_lock(&w->mu);
    size_t n = w->n_conns;
    conn **cs = w->conns;
    w->conns = NULL;
    w->n_conns = w->cap_conns = 0;
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < n; i++)
        if (!cs[i]->is_sink) cf_conn_stop(cs[i], true);
    atomic_store(&w->draining, true);
    for (size_t i = 0; i < n; i++)
        if (cs[i]->is_sink) cf_conn_stop(cs[i], true);
    for (size_t i = 0; i < n; i++) cf_conn_unref(cs[i]);
    free(cs);
    if (w->has_file_out) {
        w->file_out.flush(w->file_out.state, 30000, NULL);
        w->file_out.destroy(w->file_out.state);
    }
    if (w->offsets) {
        /* after a run's stop, only what is left of its deadline */
        cf_offset_store_flush_until(w->offsets, atomic_load(&w->stop_deadline_us), NULL);
        cf_offset_store_destroy(w->offsets);
    }
    cf_kafka_env_destroy(w->kenv);
    cf_config_destroy(w->cfg);
    cf_props_destroy(w->props);
    free(w->input_file);
    free(w->output_file);
    pthread_cond_destroy(&w->idle);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

uint64_t cf_worker_error_count(const cf_worker *w) { return atomic_load(&((cf_worker *)w)->errors); }

uint64_t cf_worker_unclean_stops(const cf_worker *w) { return atomic_load(&((cf_worker *)w)->unclean_stops); }

int64_t cf_worker_stop_bound_ms(const cf_worker *w) { return w->shutdown_timeout_ms + CF_WORKER_STOP_MARGIN_MS; }

/* For a stop that did not end in time (a second signal, the CLI's watchdog):
 * what each task published as not committed. The worker's lock is waited
 * for a second at most: the thread that holds it may be the one stuck. */
void cf_worker_log_uncommitted(cf_worker *w) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    if (pthread_mutex_timedlock(&w->mu, &ts) != 0) {
        CF_WARN(COMP, "not committed: unknown (the worker is busy); what was not committed is read again at the next "
                      "start");
        return;
    }
    size_t told = 0;
    for (size_t i = 0; i < w->n_conns; i++) {
        conn *c = w->conns[i];
        for (int j = 0; j < c->ntasks; j++) {
            task *t = c->tasks[j];
            int st = atomic_load(&t->state);
            if (st == CF_STATE_FINISHED || (!t->started && st != CF_STATE_RUNNING)) continue;
            char text[1024];
            pthread_mutex_lock(&t->mu);
            snprintf(text, sizeof text, "%s", t->pending);
            pthread_mutex_unlock(&t->mu);
            uint64_t inflight = c->is_sink ? 0 : (uint64_t)atomic_load(&t->m.lag);
            if (!text[0] && inflight)
                snprintf(text, sizeof text, "%llu records sent and not acknowledged", (unsigned long long)inflight);
            if (!text[0]) continue;
            CF_WARN(COMP, "connector %s task %d: not committed: %s; %s", c->name, t->id, text,
                    !c->is_sink && c->plugin->u.source.no_replay ? "lost: this source cannot read its input again"
                                                                 : "read again at the next start");
            told++;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (!told) CF_INFO(COMP, "not committed: nothing (every task had committed what it read)");
}

int cf_worker_rest_port(const cf_worker *w) { return w->rest ? cf_rest_port(w->rest) : 0; }

cf_code cf_worker_connector_state(cf_worker *w, const char *name, cf_state *connector, cf_state *task0,
                                  cf_err *err) {
    conn *c = cf_conn_get(w, name);
    if (!c) return not_found(err, name);
    bool all_fin = true;
    for (int i = 0; i < c->ntasks; i++)
        if (atomic_load(&c->tasks[i]->state) != CF_STATE_FINISHED) all_fin = false;
    if (connector)
        *connector = atomic_load(&c->stopped) ? CF_STATE_STOPPED
                     : atomic_load(&c->paused) ? CF_STATE_PAUSED
                     : all_fin                 ? CF_STATE_FINISHED
                                               : CF_STATE_RUNNING;
    if (task0) *task0 = c->ntasks ? (cf_state)atomic_load(&c->tasks[0]->state) : CF_STATE_UNASSIGNED;
    cf_conn_unref(c);
    return CF_OK;
}

/* ---------------- KIP-875: altering and resetting offsets ---------------- */

/* A partition or offset map holds primitive values only, as Connect's
 * OffsetUtils.validateFormat requires (and its JsonConverter stores). */
static bool primitive_members(const json_t *o, cf_err *err, size_t i, const char *what) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        if (!json_is_object(v) && !json_is_array(v)) continue;
        cf_err_set(err, CF_ERR_INVALID, "Offsets may only contain primitive types as values, but field %s contains %s", k,
                   json_is_object(v) ? "MAP" : "ARRAY");
        cf_err_detail(err, "in the %s of offsets[%zu]", what, i);
        return false;
    }
    return true;
}

/* Parse PATCH's {"offsets": [{"partition": {...}, "offset": {...} | null}]}
 * into parts[] / offs[] (offs[i] NULL: remove). Every entry is checked before
 * any is applied. */
static cf_code parse_offsets_body(const char *name, const char *body, size_t len, cf_value ***parts, cf_value ***offs,
                                  size_t *n, cf_err *err) {
    *parts = *offs = NULL;
    *n = 0;
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        cf_err_set(err, CF_ERR_INVALID, "Request body must be a JSON object {\"offsets\": [{\"partition\": {...}, "
                                        "\"offset\": {...}}]}");
        return CF_ERR_INVALID;
    }
    const char *tk;
    json_t *tv;
    json_object_foreach(j, tk, tv) {
        if (strcmp(tk, "offsets") == 0) continue;
        cf_err_set(err, CF_ERR_INVALID, "the request body has the member \"%s\": only \"offsets\" is known", tk);
        cf_err_hint(err, "Send {\"offsets\": [{\"partition\": {...}, \"offset\": {...}}]}, as GET "
                         "/connectors/%s/offsets answers.", name);
        json_decref(j);
        return CF_ERR_INVALID;
    }
    json_t *a = json_object_get(j, "offsets");
    if (!json_is_array(a) || json_array_size(a) == 0) {
        json_decref(j);
        /* Connect's words (ConnectorsResource) */
        cf_err_set(err, CF_ERR_INVALID, "Partitions / offsets need to be provided for an alter offsets request");
        return CF_ERR_INVALID;
    }
    size_t m = json_array_size(a);
    cf_value **p = cf_xcalloc(m, sizeof *p), **o = cf_xcalloc(m, sizeof *o);
    cf_code rc = CF_OK;
    for (size_t i = 0; i < m && !rc; i++) {
        json_t *e = json_array_get(a, i), *jp = json_object_get(e, "partition"), *jo = json_object_get(e, "offset");
        const char *k;
        json_t *v;
        if (!json_is_object(e)) {
            rc = cf_err_set(err, CF_ERR_INVALID, "offsets[%zu] is not an object {\"partition\": {...}, \"offset\": "
                                                 "{...}}", i);
            break;
        }
        json_object_foreach(e, k, v) {
            if (strcmp(k, "partition") != 0 && strcmp(k, "offset") != 0) {
                rc = cf_err_set(err, CF_ERR_INVALID, "offsets[%zu] has the member \"%s\": only \"partition\" and "
                                                     "\"offset\" are known", i, k);
                break;
            }
        }
        if (rc) break;
        if (!json_is_object(jp)) {
            rc = cf_err_set(err, CF_ERR_INVALID, "offsets[%zu]: \"partition\" must be a JSON object, a source "
                                                 "partition as GET /connectors/%s/offsets lists them", i, name);
            break;
        }
        if (!jo || !(json_is_object(jo) || json_is_null(jo))) {
            rc = cf_err_set(err, CF_ERR_INVALID, "offsets[%zu]: \"offset\" must be a JSON object, or null to remove the "
                                                 "partition's offset%s", i, jo ? "" : " (it is missing)");
            break;
        }
        if (!primitive_members(jp, err, i, "partition") || !primitive_members(jo, err, i, "offset")) {
            rc = CF_ERR_INVALID;
            break;
        }
        char *ps = json_dumps(jp, JSON_COMPACT | JSON_PRESERVE_ORDER);
        char *os = json_dumps(jo, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        /* as Connect normalizes them through its JsonConverter: integers INT64, others FLOAT64 */
        rc = cf_offset_value_parse(ps, strlen(ps), &p[i], err);
        if (!rc) rc = cf_offset_value_parse(os, strlen(os), &o[i], err);
        free(ps);
        free(os);
    }
    json_decref(j);
    if (rc) {
        for (size_t i = 0; i < m; i++) cf_value_destroy(p[i]), cf_value_destroy(o[i]);
        free(p);
        free(o);
        return rc;
    }
    *parts = p;
    *offs = o;
    *n = m;
    return CF_OK;
}

/* A sink's PATCH body, as Connect takes it: {"offsets": [{"partition":
 * {"kafka_topic": T, "kafka_partition": P}, "offset": {"kafka_offset": O}
 * or null}]}: set[] the partitions given an offset, drop[] those given
 * null (cf_tp_pos, topics malloc'd). */
static cf_code parse_sink_offsets(const char *name, const char *body, size_t len, cf_tp_pos **set, size_t *nset,
                                  cf_tp_pos **drop, size_t *ndrop, cf_err *err) {
    *set = *drop = NULL;
    *nset = *ndrop = 0;
    json_t *j = json_loadb(body, len, 0, NULL), *a = json_object_get(j, "offsets");
    if (!json_is_array(a)) {
        json_decref(j);
        return cf_err_set(err, CF_ERR_INVALID, "Request body must be a JSON object {\"offsets\": [{\"partition\": "
                                               "{\"kafka_topic\": ..., \"kafka_partition\": ...}, \"offset\": "
                                               "{\"kafka_offset\": ...}}]} (sink connector %s)", name);
    }
    size_t n = json_array_size(a);
    *set = cf_xcalloc(n ? n : 1, sizeof **set);
    *drop = cf_xcalloc(n ? n : 1, sizeof **drop);
    cf_code rc = CF_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *e = json_array_get(a, i), *jp = json_object_get(e, "partition"), *jo = json_object_get(e, "offset");
        json_t *t = json_object_get(jp, "kafka_topic"), *p = json_object_get(jp, "kafka_partition");
        json_t *o = json_is_object(jo) ? json_object_get(jo, "kafka_offset") : NULL;
        if (!json_is_string(t) || !json_string_length(t) || !json_is_integer(p) || json_integer_value(p) < 0 ||
            json_integer_value(p) > INT32_MAX)
            rc = cf_err_set(err, CF_ERR_INVALID, "offsets[%zu]: a sink's \"partition\" is {\"kafka_topic\": "
                                                 "\"<topic>\", \"kafka_partition\": <partition number>}", i);
        else if (!json_is_null(jo) && !(json_is_integer(o) && json_integer_value(o) >= 0))
            rc = cf_err_set(err, CF_ERR_INVALID, "offsets[%zu]: a sink's \"offset\" is {\"kafka_offset\": <offset "
                                                 "0 or more>}, or null to remove the partition's offset", i);
        else if (json_is_null(jo))
            (*drop)[(*ndrop)++] = (cf_tp_pos){cf_xstrdup(json_string_value(t)), (int32_t)json_integer_value(p), -1};
        else
            (*set)[(*nset)++] = (cf_tp_pos){cf_xstrdup(json_string_value(t)), (int32_t)json_integer_value(p),
                                            (int64_t)json_integer_value(o)};
    }
    json_decref(j);
    return rc;
}

/* A stopped sink's offsets: its consumer group's, and the positions the
 * sink keeps in its target (cdc-sink's _cdcflow_positions, which win at its
 * next start), both changed, the group first. */
static cf_code modify_sink_offsets(cf_worker *w, conn *c, const char *body, size_t len, size_t *count, cf_err *err) {
    if (w->mode != MODE_KAFKA || w->input_file) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "sink connector %s reads no Kafka topics in this worker (%s): its offsets "
                                            "cannot be changed over REST", c->name,
                   w->input_file ? "--input" : "transport=direct");
        cf_err_detail(err, "its positions are kept by the sink itself (cdc-sink: the target's _cdcflow_positions "
                           "table)");
        return CF_ERR_UNSUPPORTED;
    }
    bool reset = body == NULL;
    cf_tp_pos *set = NULL, *drop = NULL;
    size_t nset = 0, ndrop = 0;
    cf_code rc = reset ? CF_OK : parse_sink_offsets(c->name, body, len, &set, &nset, &drop, &ndrop, err);
    char group[512];
    snprintf(group, sizeof group, "connect-%s", c->name);
    if (!rc) rc = cf_worker_kafka_group_alter(w, group, c->props, reset, drop, ndrop, set, nset, err);
    const cf_sink_plugin *sp = &c->plugin->u.sink;
    if (!rc && sp->positions && !sp->alter_positions)
        rc = cf_err_set(err, CF_ERR_UNSUPPORTED, "sink connector %s keeps positions it cannot change while stopped",
                        c->name);
    if (!rc && sp->alter_positions) {
        cf_sink_stored_position *ds = cf_xcalloc(ndrop + 1, sizeof *ds), *ss = cf_xcalloc(nset + 1, sizeof *ss);
        for (size_t i = 0; i < ndrop; i++) ds[i] = (cf_sink_stored_position){drop[i].topic, drop[i].partition, -1, NULL};
        for (size_t i = 0; i < nset; i++)
            ss[i] = (cf_sink_stored_position){set[i].topic, set[i].partition, set[i].next_offset, NULL};
        rc = sp->alter_positions(c->cfg, c->name, reset, ds, ndrop, ss, nset, err);
        if (rc)
            cf_err_hint(err, "The consumer group connect-%s was changed already; the sink's own positions were not, "
                             "and they win at its next start. Retry the request.", c->name);
        free(ds);
        free(ss);
    }
    *count = nset + ndrop;
    for (size_t i = 0; i < nset; i++) free(set[i].topic);
    for (size_t i = 0; i < ndrop; i++) free(drop[i].topic);
    free(set);
    free(drop);
    return rc;
}

/* PATCH (body) or DELETE (body NULL) of /connectors/{name}/offsets. */
static cf_code modify_offsets(cf_worker *w, const char *name, const char *body, size_t len, char **message,
                              cf_err *err) {
    bool reset = body == NULL;
    conn *c = op_begin(w, name, reset ? "reset" : "altered", err);
    if (!c) return err ? err->code : CF_ERR_NOT_FOUND;
    cf_value **parts = NULL, **offs = NULL;
    size_t n = 0, sink_n = 0;
    cf_code rc = CF_OK;
    /* held throughout: no resume starts the tasks while their offsets change */
    pthread_mutex_lock(&c->life);
    if (c->retired) {
        rc = retired_err(err, name, reset ? "reset" : "altered");
    } else if (!atomic_load(&c->stopped)) {
        /* Connect's words (StandaloneHerder) */
        rc = cf_err_set(err, CF_ERR_INVALID,
                        "Connectors must be in the STOPPED state before their offsets can be modified. This can be done "
                        "for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint",
                        name);
    } else if (c->is_sink) {
        rc = modify_sink_offsets(w, c, body, len, &n, err);
        sink_n = n;
        n = 0;
    } else if (!w->offsets) {
        rc = cf_err_set(err, CF_ERR_STATE, "the worker has no offset store");
    } else if (!reset) {
        rc = parse_offsets_body(name, body, len, &parts, &offs, &n, err);
    } else {
        /* every partition the store holds for this connector, removed */
        char *s = cf_offset_store_connector_json(w->offsets, name);
        json_t *a = json_loads(s, 0, NULL), *e;
        free(s);
        size_t i;
        n = json_array_size(a);
        parts = cf_xcalloc(n ? n : 1, sizeof *parts);
        offs = cf_xcalloc(n ? n : 1, sizeof *offs);
        json_array_foreach(a, i, e) {
            char *ps = json_dumps(json_object_get(e, "partition"), JSON_COMPACT | JSON_PRESERVE_ORDER);
            if (ps) cf_offset_value_parse(ps, strlen(ps), &parts[i], NULL);
            free(ps);
        }
        json_decref(a);
    }
    if (!rc && !c->is_sink) {
        for (size_t i = 0; i < n; i++)
            if (parts[i]) cf_offset_store_put(w->offsets, name, parts[i], offs[i]);
        rc = cf_offset_store_flush(w->offsets, err);
        if (rc) cf_err_where(err, "connector %s: %s offsets", name, reset ? "resetting" : "altering");
    }
    pthread_mutex_unlock(&c->life);
    op_end(w);
    if (!rc) {
        /* Connect's definite answer: a source's offsets here are the worker's alone */
        char m[128];
        snprintf(m, sizeof m, "The offsets for this connector have been %s successfully", reset ? "reset" : "altered");
        *message = cf_xstrdup(m);
        if (c->is_sink && reset)
            CF_INFO(COMP, "connector %s: offsets reset (consumer group connect-%s deleted, the sink's positions removed)",
                    name, name);
        else if (c->is_sink)
            CF_INFO(COMP, "connector %s: offsets altered (%zu topic partition%s, in consumer group connect-%s and the "
                          "sink's positions)", name, sink_n, sink_n == 1 ? "" : "s", name);
        else
            CF_INFO(COMP, "connector %s: offsets %s (%zu source partition%s)", name, reset ? "reset" : "altered", n,
                    n == 1 ? "" : "s");
    }
    for (size_t i = 0; i < n; i++) cf_value_destroy(parts[i]), cf_value_destroy(offs[i]);
    free(parts);
    free(offs);
    cf_conn_unref(c);
    return rc;
}

cf_code cf_worker_alter_connector_offsets(cf_worker *w, const char *name, const char *body, size_t body_len,
                                          char **message, cf_err *err) {
    return modify_offsets(w, name, body ? body : "", body ? body_len : 0, message, err);
}

cf_code cf_worker_reset_connector_offsets(cf_worker *w, const char *name, char **message, cf_err *err) {
    return modify_offsets(w, name, NULL, 0, message, err);
}
