/*
 * connectors.c - a connector's lifetime: created from its config (plugin,
 * converters, transforms, error settings, tasks), looked up by name,
 * reference counted, its task threads started and joined.
 *
 * LIFETIME: connectors are reference counted; a source in direct mode
 * holds a reference to the sink connectors it hands records to while it
 * does so, so REST can delete or restart a sink at any time. A connector's
 * `life` lock is held while its threads are started or joined, so that
 * one thread at a time does it (two joins of one thread are undefined).
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

conn *cf_conn_find_locked(cf_worker *w, const char *name, size_t *idx) {
    for (size_t i = 0; i < w->n_conns; i++)
        if (strcmp(w->conns[i]->name, name) == 0) {
            if (idx) *idx = i;
            return w->conns[i];
        }
    return NULL;
}

conn *cf_conn_get(cf_worker *w, const char *name) {
    pthread_mutex_lock(&w->mu);
    conn *c = cf_conn_find_locked(w, name, NULL);
    if (c) atomic_fetch_add(&c->refs, 1);
    pthread_mutex_unlock(&w->mu);
    return c;
}

const cf_connector_plugin *cf_conn_find_plugin(const cf_worker *w, const char *name) {
    for (const cf_connector_plugin *const *p = w->extra_plugins; p && *p; p++) {
        if (strcmp((*p)->name, name) == 0) return *p;
        for (const char *const *a = (*p)->aliases; a && *a; a++)
            if (strcmp(*a, name) == 0) return *p;
    }
    return cf_connector_find(name);
}
/* ---------------- connectors: create, start, stop ---------------- */

void cf_conn_free(conn *c) {
    for (int i = 0; i < c->ntasks; i++) {
        task *t = c->tasks[i];
        cf_dq_destroy(&t->q);
        cf_tp_lag_free(t->lag_parts, t->nlag_parts);
        pthread_mutex_destroy(&t->mu);
        free(t);
    }
    free(c->tasks);
    for (size_t i = 0; i < c->n_topics; i++) free(c->topics[i]);
    free(c->topics);
    for (size_t i = 0; i < c->n_active_topics; i++) free(c->active_topics[i]);
    free(c->active_topics);
    if (c->has_re) regfree(&c->topics_re);
    free(c->name);
    free(c->dlq_topic);
    free(c->key_conv);
    free(c->val_conv);
    cf_props_destroy(c->key_conv_props);
    cf_props_destroy(c->val_conv_props);
    cf_props_destroy(c->props);
    cf_config_destroy(c->cfg);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->life);
    free(c);
}

void cf_conn_unref(conn *c) {
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) cf_conn_free(c);
}

/* Converter name and settings: the connector's own when it names one, else
 * the worker's (as Connect). */
static void pick_converter(cf_worker *w, conn *c, const char *key, char **name, cf_props **props) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s.", key);
    const char *cn = cf_props_get(c->props, key);
    if (cn && *cn) {
        *name = cf_xstrdup(cn);
        *props = cf_props_subset(c->props, prefix, true);
    } else {
        *name = cf_xstrdup(cf_config_string(w->cfg, key));
        *props = cf_props_subset(w->props, prefix, true);
    }
}

/* A connector name must be one REST path segment that names it alone:
 * no '/', no control characters (NUL cannot reach here: the JSON and
 * .properties readers refuse it, see src/config/parse.c), not empty or
 * only whitespace. As Connect's ConnectorConfig ("name": non-empty, without
 * control characters) and its REST layer (no '/'). */
static cf_code check_name(const char *nm, cf_err *err) {
    static const char hint[] = "Choose a name of letters, digits, '-', '_' and '.' (no '/', NUL or control "
                               "characters, not empty).";
    if (!*nm) {
        cf_err_set(err, CF_ERR_CONFIG, "connector name is empty");
        cf_err_hint(err, "%s", hint);
        return CF_ERR_CONFIG;
    }
    bool blank = true;
    for (const unsigned char *p = (const unsigned char *)nm; *p; p++) {
        size_t at = (size_t)(p - (const unsigned char *)nm);
        if (*p == '/') {
            cf_err_set(err, CF_ERR_CONFIG, "connector name \"%s\" contains '/' (at byte %zu)", nm, at);
            cf_err_detail(err, "a REST path cannot name such a connector: /connectors/%s is another path", nm);
            cf_err_hint(err, "%s", hint);
            return CF_ERR_CONFIG;
        }
        if (*p < 0x20 || *p == 0x7f) {
            cf_err_set(err, CF_ERR_CONFIG, "connector name contains the control character U+%04X (at byte %zu)",
                       (unsigned)*p, at);
            cf_err_detail(err, "names appear in REST paths, logs and topic names, where control characters break "
                               "them");
            cf_err_hint(err, "%s", hint);
            return CF_ERR_CONFIG;
        }
        if (*p != ' ') blank = false;
    }
    if (blank) {
        cf_err_set(err, CF_ERR_CONFIG, "connector name \"%s\" is only whitespace", nm);
        cf_err_hint(err, "%s", hint);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

cf_code cf_conn_create(cf_worker *w, const char *name, const cf_props *config, conn **out, cf_err *err) {
    cf_props *p = cf_props_clone(config);
    if (name) {
        const char *pn = cf_props_get(p, "name");
        if (pn && strcmp(pn, name) != 0) {
            cf_props_destroy(p);
            cf_err_set(err, CF_ERR_CONFIG, "connector name \"%s\" does not match the name \"%s\" in its config",
                       name, pn);
            cf_err_hint(err, "Use the same name in the URL and the configuration.");
            return CF_ERR_CONFIG;
        }
        cf_props_set(p, "name", name);
    }
    const char *nm = cf_props_get(p, "name");
    if (!nm) {
        cf_props_destroy(p);
        cf_err_set(err, CF_ERR_CONFIG, "connector configuration has no \"name\"");
        cf_err_hint(err, "Add \"name\": \"<connector name>\".");
        return CF_ERR_CONFIG;
    }
    if (check_name(nm, err)) {
        cf_props_destroy(p);
        return CF_ERR_CONFIG;
    }
    const char *cls = cf_props_get(p, "connector.class");
    if (!cls || !*cls) {
        cf_err_set(err, CF_ERR_CONFIG, "connector \"%s\" has no \"connector.class\"", nm);
        cf_err_hint(err, "Name the connector plugin, e.g. \"connector.class\": \"files\"; "
                         "GET /connector-plugins or `cdcflow run --help` lists them.");
        cf_props_destroy(p);
        return CF_ERR_CONFIG;
    }
    const cf_connector_plugin *pl = cf_conn_find_plugin(w, cls);
    if (!pl) {
        cf_err_set(err, CF_ERR_NOT_FOUND, "unknown connector.class \"%s\" in connector \"%s\"", cls, nm);
        cf_buf b = CF_BUF_INIT;
        for (const cf_connector_plugin *const *q = w->extra_plugins; q && *q; q++)
            cf_buf_printf(&b, "%s%s", b.len ? ", " : "", (*q)->name);
        for (const cf_connector_plugin *const *q = cf_connector_plugins(); *q; q++)
            cf_buf_printf(&b, "%s%s", b.len ? ", " : "", (*q)->name);
        cf_err_detail(err, "known connectors: %s", b.len ? b.data : "(none)");
        cf_buf_free(&b);
        cf_props_destroy(p);
        return CF_ERR_NOT_FOUND;
    }
    bool is_sink = pl->kind == CF_CONNECTOR_SINK;
    const cf_cfg_table *tables[3];
    size_t nt = 0;
    tables[nt++] = &cf_connector_common_table;
    if (is_sink) tables[nt++] = &cf_sink_common_table;
    if (pl->config) tables[nt++] = pl->config;
    cf_config *cfg = NULL;
    char *problems = NULL;
    if (cf_config_parse(tables, nt, p, &cfg, &problems, err) ||
        cf_connector_config_check(cfg, is_sink, &problems, err)) {
        if (err) {
            char first[512];
            snprintf(first, sizeof first, "%s", err->message);
            cf_err_set(err, CF_ERR_CONFIG, "invalid configuration of connector \"%s\"", nm);
            cf_err_detail(err, "%s", problems ? problems : first);
            cf_err_hint(err, "`cdcflow validate` checks a configuration without running it.");
        }
        free(problems);
        cf_config_destroy(cfg);
        cf_props_destroy(p);
        return CF_ERR_CONFIG;
    }
    free(problems);
    conn *c = cf_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->life, NULL);
    atomic_init(&c->refs, 1);
    c->w = w;
    c->name = cf_xstrdup(nm);
    c->props = p;
    c->cfg = cfg;
    c->plugin = pl;
    c->is_sink = is_sink;
    atomic_init(&c->paused, false);
    atomic_init(&c->stopped, false);
    atomic_init(&c->topics_gen, 1); /* tasks start at 0: their first record is noted */
    const char *tol = cf_props_get_or(p, "errors.tolerance", "none");
    c->tolerate_all = strcasecmp(tol, "all") == 0;
    c->log_errors = strcasecmp(cf_props_get_or(p, "errors.log.enable", "false"), "true") == 0;
    c->log_messages = strcasecmp(cf_props_get_or(p, "errors.log.include.messages", "false"), "true") == 0;
    c->dlq_headers =
        strcasecmp(cf_props_get_or(p, "errors.deadletterqueue.context.headers.enable", "false"), "true") == 0;
    const char *dlq = cf_props_get(p, "errors.deadletterqueue.topic.name");
    if (dlq && *dlq) c->dlq_topic = cf_xstrdup(dlq);
    cf_code rc = CF_OK;
    if (c->dlq_topic && c->tolerate_all && !cf_config_string(w->cfg, "bootstrap.servers")) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "connector \"%s\" has a dead letter queue but the worker has no Kafka",
                        nm);
        cf_err_detail(err, "errors.deadletterqueue.topic.name=%s needs bootstrap.servers in the worker config",
                      c->dlq_topic);
        cf_err_hint(err, "Set bootstrap.servers (a broker or `embedded`), or use errors.log.enable instead.");
    }
    if (!rc) rc = cf_worker_check_overrides(w, nm, p, err);
    const char *tr = cf_props_get(p, "transforms");
    if (!rc && tr && *tr && !w->transforms) {
        rc = cf_err_set(err, CF_ERR_UNSUPPORTED, "connector \"%s\" has transforms but this runtime has none", nm);
        cf_err_hint(err, "Run it with the cdcflow command line, which provides the transforms.");
    }
    if (!rc && is_sink) {
        const char *topics = cf_props_get(p, "topics");
        if (topics) {
            size_t n = 0;
            const char *const *list = cf_config_list(cfg, "topics", &n);
            c->topics = cf_xcalloc(n ? n : 1, sizeof(char *));
            for (size_t i = 0; i < n; i++) c->topics[i] = cf_xstrdup(list[i]);
            c->n_topics = n;
        }
        const char *re = cf_props_get(p, "topics.regex");
        if (re && *re) {
            /* Java's regex matches the whole topic name: anchor it */
            size_t l = strlen(re);
            char *anch = cf_xmalloc(l + 5);
            snprintf(anch, l + 5, "^(%s)$", re);
            int e = regcomp(&c->topics_re, anch, REG_EXTENDED | REG_NOSUB);
            free(anch);
            if (e) {
                rc = cf_err_set(err, CF_ERR_CONFIG, "invalid topics.regex \"%s\" in connector \"%s\"", re, nm);
                cf_err_hint(err, "Use a POSIX extended regular expression.");
            } else {
                c->has_re = true;
            }
        }
    }
    if (rc) {
        cf_conn_free(c);
        return rc;
    }
    pick_converter(w, c, "key.converter", &c->key_conv, &c->key_conv_props);
    pick_converter(w, c, "value.converter", &c->val_conv, &c->val_conv_props);
    int ntasks = atoi(cf_props_get_or(p, "tasks.max", "1"));
    if (ntasks < 1) ntasks = 1;
    if (is_sink && w->input_file && ntasks > 1) {
        CF_INFO(COMP, "connector %s: reading a record file, so 1 task instead of tasks.max=%d", nm, ntasks);
        ntasks = 1;
    }
    c->ntasks = ntasks;
    c->tasks = cf_xcalloc((size_t)ntasks, sizeof(task *));
    for (int i = 0; i < ntasks; i++) {
        task *t = cf_xcalloc(1, sizeof *t);
        t->c = c;
        t->id = i;
        atomic_init(&t->state, CF_STATE_UNASSIGNED);
        atomic_init(&t->stop, false);
        pthread_mutex_init(&t->mu, NULL);
        cf_dq_init(&t->q);
        t->sctx.t = t;
        t->kctx.t = t;
        c->tasks[i] = t;
    }
    *out = c;
    return CF_OK;
}

/* Start (cf_task_start) and join (cf_task_join) a task's thread: with t->c->life
 * held, so that only one thread starts or joins it at a time. */
void cf_task_start(task *t) {
    if (t->c->is_sink) { /* a restarted sink task takes records again */
        pthread_mutex_lock(&t->q.mu);
        t->q.closed = false;
        pthread_mutex_unlock(&t->q.mu);
    }
    atomic_store(&t->stop, false);
    atomic_store(&t->deadline_us, 0);
    atomic_store(&t->sink_ready, false);
    atomic_store(&t->state, CF_STATE_UNASSIGNED);
    t->trace[0] = 0;
    pthread_mutex_lock(&t->mu);
    t->unclean = false;
    t->pending[0] = 0;
    pthread_mutex_unlock(&t->mu);
    pthread_create(&t->th, NULL, t->c->is_sink ? cf_sink_task_main : cf_source_task_main, t);
    t->started = true;
}

/* A task not asked to stop yet gets the default deadline (cf_stop_deadline). */
void cf_task_join(task *t) {
    if (!t->started) return;
    cf_task_request_stop(t, cf_stop_deadline(t->c->w));
    pthread_join(t->th, NULL);
    t->started = false;
}

/* Stop every task of c (all asked first, with one deadline, then joined):
 * the stop takes task.shutdown.graceful.timeout.ms at most, however many
 * tasks. retire: for good, no restart starts them again (c was deleted or
 * replaced). Not with w->mu held: the tasks take it. */
void cf_conn_stop(conn *c, bool retire) {
    pthread_mutex_lock(&c->life);
    if (retire) c->retired = true;
    int64_t deadline = cf_stop_deadline(c->w);
    for (int i = 0; i < c->ntasks; i++) cf_task_request_stop(c->tasks[i], deadline);
    for (int i = 0; i < c->ntasks; i++) cf_task_join(c->tasks[i]);
    pthread_mutex_unlock(&c->life);
}

/* Register c (under w->mu). */
void cf_conns_append_locked(cf_worker *w, conn *c) {
    if (w->n_conns == w->cap_conns) {
        w->cap_conns = w->cap_conns ? w->cap_conns * 2 : 8;
        w->conns = cf_xrealloc(w->conns, w->cap_conns * sizeof(conn *));
    }
    w->conns[w->n_conns++] = c;
}
