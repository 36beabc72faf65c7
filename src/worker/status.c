/*
 * status.c - the JSON documents the REST API serves, in Kafka Connect's
 * shapes: connectors, a connector's config, status and tasks, health,
 * plugins. Secrets are shown hidden (cf_config_shown_value).
 */
#include <ctype.h>
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
#include "cdcflow/version.h"
#include "worker_state.h"

static char *dump(json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}

/* The config as it may be shown: secrets hidden, credentials inside values
 * masked (cf_config_shown_value decides; the stored props keep them). */
static json_t *config_obj(conn *c) {
    const cf_cfg_table *ts[3] = {&cf_connector_common_table, c->is_sink ? &cf_sink_common_table : NULL,
                                 c->plugin->config};
    json_t *o = json_object();
    cf_buf b = CF_BUF_INIT;
    for (size_t i = 0; i < cf_props_count(c->props); i++) {
        const char *k = cf_props_key_at(c->props, i);
        b.len = 0;
        cf_config_shown_value(ts, 3, k, cf_props_value_at(c->props, i), &b);
        json_object_set_new(o, k, json_stringn(b.data ? b.data : "", b.len));
    }
    cf_buf_free(&b);
    return o;
}

static json_t *tasks_arr(conn *c) {
    json_t *a = json_array();
    /* STOPPED: no tasks, as Connect empties a stopped connector's task configs */
    for (int i = 0; i < c->ntasks && !atomic_load(&c->stopped); i++) json_array_append_new(a, json_pack("{s:s,s:i}", "connector", c->name, "task", i));
    return a;
}

char *cf_worker_connectors_json(cf_worker *w) {
    json_t *a = json_array();
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->n_conns; i++) json_array_append_new(a, json_string(w->conns[i]->name));
    pthread_mutex_unlock(&w->mu);
    return dump(a);
}

char *cf_worker_connector_json(cf_worker *w, const char *name) {
    conn *c = cf_conn_get(w, name);
    if (!c) return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(c->name));
    json_object_set_new(o, "config", config_obj(c));
    json_object_set_new(o, "tasks", tasks_arr(c));
    json_object_set_new(o, "type", json_string(c->is_sink ? "sink" : "source"));
    cf_conn_unref(c);
    return dump(o);
}

char *cf_worker_connector_config_json(cf_worker *w, const char *name) {
    conn *c = cf_conn_get(w, name);
    if (!c) return NULL;
    json_t *o = config_obj(c);
    cf_conn_unref(c);
    return dump(o);
}

static char *worker_id(cf_worker *w) {
    char buf[300];
    snprintf(buf, sizeof buf, "%s:%d", cf_config_string(w->cfg, "rest.host.name"),
             w->rest ? cf_rest_port(w->rest) : (int)cf_config_int(w->cfg, "rest.port"));
    return cf_xstrdup(buf);
}

/* {"key": {status}, "value": {status}} of the task's registry clients
 * (cf_sr_status_json), NULL when neither converter has a registry.
 * *unreachable (may be NULL) is set when one of them is unreachable. */
static json_t *task_sr_json(task *t, bool *unreachable) {
    json_t *o = NULL;
    for (int k = 0; k < 2; k++) {
        cf_sr_status st;
        if (!cf_task_sr_status(t, k, &st)) continue;
        cf_buf b = CF_BUF_INIT;
        cf_sr_status_json(&st, &b);
        json_t *j = json_loadb(b.data ? b.data : "", b.len, 0, NULL);
        cf_buf_free(&b);
        if (!j) continue;
        if (!o) o = json_object();
        json_object_set_new(o, cf_conv_roles[k], j);
        if (!st.reachable && unreachable) *unreachable = true;
    }
    return o;
}

/* Connect's TaskState: {"id","state","worker_id"} and "trace" when FAILED
 * (plus our "schema_registry" when a converter uses one). */
static json_t *task_state_json(task *t, const char *wid) {
    int st = atomic_load(&t->state);
    json_t *to = json_pack("{s:i,s:s,s:s}", "id", t->id, "state", cf_state_name((cf_state)st), "worker_id", wid);
    if (st == CF_STATE_FAILED) {
        pthread_mutex_lock(&t->mu);
        json_object_set_new(to, "trace", json_string(t->trace));
        pthread_mutex_unlock(&t->mu);
    }
    json_t *sr = task_sr_json(t, NULL);
    if (sr) json_object_set_new(to, "schema_registry", sr);
    return to;
}

char *cf_worker_task_status_json(cf_worker *w, const char *name, int task_id) {
    conn *c = cf_conn_get(w, name);
    if (!c) return NULL;
    char *out = NULL;
    if (task_id >= 0 && task_id < c->ntasks) {
        char *wid = worker_id(w);
        out = dump(task_state_json(c->tasks[task_id], wid));
        free(wid);
    }
    cf_conn_unref(c);
    return out;
}

char *cf_worker_connector_status_json(cf_worker *w, const char *name) {
    conn *c = cf_conn_get(w, name);
    if (!c) return NULL;
    char *wid = worker_id(w);
    cf_state cs;
    cf_worker_connector_state(w, name, &cs, NULL, NULL);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(c->name));
    json_object_set_new(o, "connector", json_pack("{s:s,s:s}", "state", cf_state_name(cs), "worker_id", wid));
    json_t *ta = json_array();
    for (int i = 0; i < c->ntasks && cs != CF_STATE_STOPPED; i++)
        json_array_append_new(ta, task_state_json(c->tasks[i], wid));
    json_object_set_new(o, "tasks", ta);
    json_object_set_new(o, "type", json_string(c->is_sink ? "sink" : "source"));
    free(wid);
    cf_conn_unref(c);
    return dump(o);
}

char *cf_worker_health_json(cf_worker *w, bool *healthy) {
    size_t n;
    conn **cs = cf_conns_snapshot(w, &n);
    bool failed = false, unreachable = false;
    json_t *co = json_object();
    for (size_t i = 0; i < n; i++) {
        conn *c = cs[i];
        json_t *ta = json_array();
        for (int j = 0; j < c->ntasks && !atomic_load(&c->stopped); j++) {
            task *t = c->tasks[j];
            int st = atomic_load(&t->state);
            if (st == CF_STATE_FAILED) failed = true;
            json_t *to = json_pack("{s:i,s:s}", "id", j, "state", cf_state_name((cf_state)st));
            json_t *sr = task_sr_json(t, &unreachable);
            if (sr) json_object_set_new(to, "schema_registry", sr);
            json_array_append_new(ta, to);
        }
        json_object_set_new(co, c->name, json_pack("{s:s,s:o}", "type", c->is_sink ? "sink" : "source", "tasks", ta));
        cf_conn_unref(c);
    }
    free(cs);
    bool ok = !failed && !unreachable;
    if (healthy) *healthy = ok;
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(ok ? "UP" : "DOWN"));
    json_t *why = json_array();
    if (failed) json_array_append_new(why, json_string("a task failed"));
    if (unreachable) json_array_append_new(why, json_string("a Schema Registry is unreachable"));
    json_object_set_new(o, "problems", why);
    json_object_set_new(o, "connectors", co);
    return dump(o);
}

static void plugin_json(json_t *a, const cf_connector_plugin *p) {
    const char *cls = p->aliases && p->aliases[0] ? p->aliases[0] : p->name;
    json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "class", cls, "type",
                                       p->kind == CF_CONNECTOR_SINK ? "sink" : "source", "version",
                                       p->version ? p->version : CF_VERSION_STRING));
}

char *cf_worker_plugins_json(cf_worker *w) {
    json_t *a = json_array();
    for (const cf_connector_plugin *const *p = w->extra_plugins; p && *p; p++) plugin_json(a, *p);
    for (const cf_connector_plugin *const *p = cf_connector_plugins(); *p; p++) plugin_json(a, *p);
    return dump(a);
}

/* ---------------- PUT /connector-plugins/{plugin}/config/validate ---------------- */

/* Connect's ConnectorPluginsResource: "FooConnector" and "Foo" name one plugin. */
static size_t normalized_len(const char *s) {
    size_t l = strlen(s);
    return l > 9 && strcmp(s + l - 9, "Connector") == 0 ? l - 9 : l;
}

static bool same_plugin(cf_worker *w, const char *included, const char *path_name) {
    const cf_connector_plugin *a = cf_conn_find_plugin(w, included), *b = cf_conn_find_plugin(w, path_name);
    if (a || b) return a == b;
    size_t li = normalized_len(included), lp = normalized_len(path_name);
    return li >= lp && strncmp(included + li - lp, path_name, lp) == 0;
}

static json_t *upper(const char *s) {
    char b[64];
    size_t i = 0;
    for (; s[i] && i + 1 < sizeof b; i++) b[i] = (char)toupper((unsigned char)s[i]);
    b[i] = 0;
    return json_string(b);
}

/* One ConfigInfo: {"definition": ConfigKeyInfo, "value": ConfigValueInfo}. */
static json_t *config_info(const cf_cfg_table *const *ts, size_t nt, const cf_cfg_def *d, const char *key,
                           const cf_props *config, json_t *errors, int order) {
    json_t *def = json_object();
    json_object_set_new(def, "name", json_string(key));
    json_object_set_new(def, "type", upper(d ? cf_cfg_type_name(d->type) : "string"));
    json_object_set_new(def, "required", json_boolean(d && !d->default_value && !d->nullable));
    json_object_set_new(def, "default_value", d && d->default_value ? json_string(d->default_value) : json_null());
    json_object_set_new(def, "importance", upper(d ? cf_importance_name(d->importance) : "low"));
    json_object_set_new(def, "documentation", json_string(d && d->doc ? d->doc : ""));
    json_object_set_new(def, "group", d && d->group ? json_string(d->group) : json_null());
    json_object_set_new(def, "width", json_string("NONE"));
    json_object_set_new(def, "display_name", json_string(key));
    json_object_set_new(def, "dependents", json_array());
    json_object_set_new(def, "order", json_integer(order));
    json_t *val = json_object();
    json_object_set_new(val, "name", json_string(key));
    const char *given = cf_props_get(config, key);
    if (given) {
        cf_buf b = CF_BUF_INIT;
        cf_config_shown_value(ts, nt, key, given, &b); /* secrets stay hidden */
        json_object_set_new(val, "value", json_stringn(b.data ? b.data : "", b.len));
        cf_buf_free(&b);
    } else {
        json_object_set_new(val, "value", d && d->default_value ? json_string(d->default_value) : json_null());
    }
    json_t *rec = json_array();
    for (const char *const *v = d ? d->valid_values : NULL; v && *v; v++) json_array_append_new(rec, json_string(*v));
    json_object_set_new(val, "recommended_values", rec);
    json_object_set_new(val, "errors", errors ? json_incref(errors) : json_array());
    json_object_set_new(val, "visible", json_true());
    return json_pack("{s:o,s:o}", "definition", def, "value", val);
}

int cf_worker_config_problems(cf_worker *w, const cf_props *config, cf_buf *out) {
    /* every problem, by the checks of `cdcflow validate` when the CLI gave them */
    if (w->validate) return w->validate(config, out);
    const char *cls = cf_props_get(config, "connector.class");
    const cf_connector_plugin *pl = cls ? cf_conn_find_plugin(w, cls) : NULL;
    if (!pl) {
        cf_buf_printf(out, "connector.class: unknown connector \"%s\"\n", cls ? cls : "");
        return 1;
    }
    const cf_cfg_table *ts[3];
    size_t nt = 0;
    ts[nt++] = &cf_connector_common_table;
    if (pl->kind == CF_CONNECTOR_SINK) ts[nt++] = &cf_sink_common_table;
    if (pl->config) ts[nt++] = pl->config;
    cf_config *cfg = NULL;
    char *problems = NULL;
    cf_err e;
    if (cf_config_parse(ts, nt, config, &cfg, &problems, &e) == CF_OK)
        cf_connector_config_check(cfg, pl->kind == CF_CONNECTOR_SINK, &problems, &e);
    int n = 0;
    for (const char *p = problems; p && *p; p++) n += *p == '\n' || !p[1];
    if (problems) {
        cf_buf_append_str(out, problems);
        if (out->len && out->data[out->len - 1] != '\n') cf_buf_append_str(out, "\n");
    }
    free(problems);
    cf_config_destroy(cfg);
    return n;
}

char *cf_worker_validate_json(cf_worker *w, const char *plugin, const cf_props *config, cf_err *err) {
    const char *cls = cf_props_get(config, "connector.class");
    if (!cls || !*cls) {
        cf_err_set(err, CF_ERR_CONFIG, "Connector config contains no connector type");
        cf_err_hint(err, "Add \"connector.class\": \"%s\" to the request body, as Connect requires.", plugin);
        return NULL;
    }
    if (!same_plugin(w, cls, plugin)) {
        cf_err_set(err, CF_ERR_CONFIG, "Included connector type %s does not match request type %s", cls, plugin);
        return NULL;
    }
    cf_buf raw = CF_BUF_INIT;
    const cf_connector_plugin *pl = cf_conn_find_plugin(w, cls);
    const cf_cfg_table *ts[3];
    size_t nt = 0;
    ts[nt++] = &cf_connector_common_table;
    if (pl && pl->kind == CF_CONNECTOR_SINK) ts[nt++] = &cf_sink_common_table;
    if (pl && pl->config) ts[nt++] = pl->config;
    cf_worker_config_problems(w, config, &raw);
    /* problem lines "key: message" -> {key: [message, ...]}, keys in order */
    json_t *by_key = json_object();
    int error_count = 0;
    for (const char *p = raw.data; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        char key[512];
        const char *msg = p;
        if (colon && (size_t)(colon - p) < sizeof key && colon > p) {
            snprintf(key, sizeof key, "%.*s", (int)(colon - p), p);
            msg = colon + 1;
            while (msg < p + len && *msg == ' ') msg++;
        } else {
            snprintf(key, sizeof key, "connector.class"); /* a problem of the whole config */
        }
        json_t *a = json_object_get(by_key, key);
        if (!a) json_object_set_new(by_key, key, a = json_array());
        json_array_append_new(a, json_stringn(msg, (size_t)(p + len - msg)));
        error_count++;
        p = nl ? nl + 1 : NULL;
    }
    cf_buf_free(&raw);
    json_t *groups = json_array(), *configs = json_array(), *done = json_object(), *in_group = json_object();
    for (size_t i = 0; i < nt; i++) {
        for (const cf_cfg_def *d = ts[i]->defs; d && d->name; d++) {
            if (json_object_get(done, d->name)) continue;
            const char *g = d->group ? d->group : "";
            int order = 1;
            bool have = false;
            size_t gi;
            json_t *gv;
            json_array_foreach(groups, gi, gv) if (strcmp(json_string_value(gv), g) == 0) have = true;
            if (!have && *g) json_array_append_new(groups, json_string(g));
            json_t *count = json_object_get(in_group, g); /* Connect's order: the place in its group */
            order = count ? (int)json_integer_value(count) + 1 : 1;
            json_object_set_new(in_group, g, json_integer(order));
            json_object_set_new(done, d->name, json_true());
            json_array_append_new(configs, config_info(ts, nt, d, d->name, config, json_object_get(by_key, d->name), order));
        }
    }
    /* problems of keys no table defines (unknown keys, converter and
     * transform settings): listed too, so that every problem is there */
    const char *k;
    json_t *v;
    json_object_foreach(by_key, k, v) {
        if (json_object_get(done, k)) continue;
        json_array_append_new(configs, config_info(ts, nt, NULL, k, config, v, -1));
    }
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(pl ? (pl->aliases && pl->aliases[0] ? pl->aliases[0] : pl->name) : cls));
    json_object_set_new(o, "error_count", json_integer(error_count));
    json_object_set_new(o, "groups", groups);
    json_object_set_new(o, "configs", configs);
    json_decref(by_key);
    json_decref(done);
    json_decref(in_group);
    return dump(o);
}

char *cf_worker_connector_offsets_json(cf_worker *w, const char *name, cf_err *err) {
    conn *c = cf_conn_get(w, name);
    if (!c) {
        cf_err_set(err, CF_ERR_NOT_FOUND, "Connector %s not found", name);
        return NULL;
    }
    if (c->is_sink) {
        /* As Connect: a sink's offsets are its consumer group's committed
         * offsets, read from the broker. cdc-sink also keeps its positions
         * in its target, which win at a start; it commits the group's after
         * each flush, so both say the same once a flush is committed. */
        if (w->mode != MODE_KAFKA || w->input_file) {
            cf_err_set(err, CF_ERR_UNSUPPORTED,
                       "GET /connectors/%s/offsets: this worker reads no Kafka topics (%s); the sink's positions "
                       "are kept by the sink itself",
                       name, w->input_file ? "--input" : "transport=direct");
            cf_conn_unref(c);
            return NULL;
        }
        /* the configured topics, and those topics.regex matched (tracked) */
        size_t nt = 0;
        pthread_mutex_lock(&c->mu);
        char **ts = cf_xcalloc(c->n_topics + c->n_active_topics + 1, sizeof *ts);
        for (size_t i = 0; i < c->n_topics; i++) ts[nt++] = cf_xstrdup(c->topics[i]);
        for (size_t i = 0; i < c->n_active_topics; i++) {
            bool dup = false;
            for (size_t j = 0; j < nt && !dup; j++) dup = !strcmp(ts[j], c->active_topics[i]);
            if (!dup) ts[nt++] = cf_xstrdup(c->active_topics[i]);
        }
        pthread_mutex_unlock(&c->mu);
        char group[512];
        snprintf(group, sizeof group, "connect-%s", c->name);
        void *arr = NULL;
        cf_code rc = cf_worker_kafka_group_offsets(w, group, (const char *const *)ts, nt, c->props, &arr, err);
        for (size_t i = 0; i < nt; i++) free(ts[i]);
        free(ts);
        cf_conn_unref(c);
        return rc ? NULL : dump(json_pack("{s:o}", "offsets", (json_t *)arr));
    }
    cf_conn_unref(c);
    char *a = w->offsets ? cf_offset_store_connector_json(w->offsets, name) : cf_xstrdup("[]");
    json_t *arr = json_loads(a, 0, NULL);
    free(a);
    return dump(json_pack("{s:o}", "offsets", arr ? arr : json_array()));
}

/* ---------------- active topics (GET /connectors/{name}/topics) ---------------- */

char *cf_worker_connector_topics_json(cf_worker *w, const char *name) {
    conn *c = cf_conn_get(w, name);
    if (!c) return NULL;
    json_t *a = json_array();
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_active_topics; i++) json_array_append_new(a, json_string(c->active_topics[i]));
    pthread_mutex_unlock(&c->mu);
    json_t *o = json_object();
    json_object_set_new(o, c->name, json_pack("{s:o}", "topics", a));
    cf_conn_unref(c);
    return dump(o);
}

cf_code cf_worker_reset_connector_topics(cf_worker *w, const char *name, cf_err *err) {
    conn *c = cf_conn_get(w, name);
    if (!c) return cf_err_set(err, CF_ERR_NOT_FOUND, "Connector %s not found", name);
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_active_topics; i++) free(c->active_topics[i]);
    c->n_active_topics = 0;
    /* the tasks' caches of their last topic are stale now: the next record notes its topic again */
    atomic_fetch_add(&c->topics_gen, 1);
    pthread_mutex_unlock(&c->mu);
    CF_INFO(COMP, "connector %s: active topics reset", name);
    cf_conn_unref(c);
    return CF_OK;
}
