/*
 * rest.c - the Sidecar CDC design's REST endpoints (see cdcflow/sidecar.h):
 * the service configuration (PUT/GET/DELETE /api/v1/services/cdc/config,
 * and the CQL-style statements of statements.c that change it),
 * its health, and the segments of the configured cdc_raw directories. They
 * run in the worker's REST thread, on the worker's listener (token, TLS),
 * and act through the worker's public API: the service is one cassandra-cdc
 * connector. The health figures come from the connector's own Prometheus
 * families (the only view of a running task's engine the worker gives
 * another thread).
 */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cdcflow/cassandra_log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/worker.h"
#include "sidecar_internal.h"

cf_sc_service *cf_sc_service_new(const char *name, const cf_props *base, const cf_props *settings,
                                 const cf_props *worker) {
    cf_sc_service *s = cf_xcalloc(1, sizeof *s);
    s->name = cf_xstrdup(name && *name ? name : "cassandra-cdc");
    s->base = base ? cf_props_clone(base) : cf_props_new();
    s->settings = settings ? cf_props_clone(settings) : cf_props_new();
    s->worker = worker ? cf_props_clone(worker) : cf_props_new();
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    return s;
}

void cf_sc_service_clear_sources(cf_sc_service *s) {
    for (size_t i = 0; i < s->n_sources; i++) {
        free(s->sources[i].keyspace);
        free(s->sources[i].table);
        free(s->sources[i].sink);
        cf_props_destroy(s->sources[i].options);
    }
    free(s->sources);
    s->sources = NULL;
    s->n_sources = 0;
}

void cf_sc_service_destroy(cf_sc_service *s) {
    if (!s) return;
    cf_sc_service_detach(s);
    free(s->name);
    cf_props_destroy(s->base);
    cf_props_destroy(s->worker);
    cf_props_destroy(s->settings);
    cf_sc_service_clear_sources(s);
    for (size_t i = 0; i < s->n_sinks; i++) {
        free(s->sinks[i].name);
        free(s->sinks[i].uri);
        free(s->sinks[i].servers);
        free(s->sinks[i].topic);
        cf_props_destroy(s->sinks[i].options);
    }
    free(s->sinks);
    cf_sc_cstore_close(s->store);
    cf_sc_cstore_close(s->rstore);
    cf_props_destroy(s->shared);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int error(cf_buf *out, int status, const char *fmt, const char *a, const char *b) {
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
    json_t *o = json_pack("{s:i,s:s}", "error_code", status, "message", msg);
    char *t = json_dumps(o, JSON_COMPACT);
    cf_buf_append_str(out, t);
    free(t);
    json_decref(o);
    return status;
}

int cf_sc_service_error(cf_buf *out, const cf_err *e) {
    int status = e->code == CF_ERR_CONFIG ? 400 : e->code == CF_ERR_NOT_FOUND ? 404 : e->code == CF_ERR_STATE ? 409 : 500;
    char m[1200];
    snprintf(m, sizeof m, "%s%s%s", e->message, e->detail[0] ? ": " : "", e->detail);
    return error(out, status, "%s%s", m, NULL);
}

/* {"config": <the connector's configuration>} */
static int get_config(cf_sc_service *s, cf_worker *w, cf_buf *out) {
    char *cfg = cf_worker_connector_config_json(w, s->name);
    if (!cfg) return error(out, 404, "no CDC service is configured (PUT /api/v1/services/cdc/config)%s%s", NULL, NULL);
    cf_buf_printf(out, "{\"config\":%s}", cfg);
    free(cfg);
    return 200;
}

int cf_sc_service_apply(cf_sc_service *s, cf_worker *w, const cf_props *settings, cf_buf *out) {
    cf_props *c = cf_props_clone(s->base), *wk = cf_props_new();
    cf_err err;
    int status;
    for (size_t i = 0; i < cf_props_count(settings); i++)
        cf_sc_service_put(cf_props_key_at(settings, i), cf_props_value_at(settings, i), c, wk);
    /* the worker's own settings (Kafka) are fixed while it runs */
    for (size_t i = 0; i < cf_props_count(wk); i++) {
        const char *k = cf_props_key_at(wk, i), *v = cf_props_value_at(wk, i);
        const char *have = cf_props_get(s->worker, k);
        if (!have || strcmp(have, v) != 0) {
            status = error(out, 409,
                           "worker setting \"%s\" cannot change while the sidecar runs (it is \"%s\"); restart it "
                           "with the new value",
                           k, have ? have : "unset");
            goto done;
        }
    }
    cf_props_set(c, "connector.class", "cassandra-cdc");
    cf_props_set(c, "name", s->name);
    cf_props_set(c, "tasks.max", "1");
    cf_state cs, t0;
    bool exists = cf_worker_connector_state(w, s->name, &cs, &t0, NULL) == CF_OK;
    cf_code rc = exists ? cf_worker_update_connector(w, s->name, c, &err) : cf_worker_add_connector(w, s->name, c, &err);
    if (rc) {
        status = cf_sc_service_error(out, &err);
        goto done;
    }
    status = get_config(s, w, out);
    if (status == 200 && !exists) status = 201;
done:
    cf_props_destroy(c);
    cf_props_destroy(wk);
    return status;
}

/* The body becomes the service's settings; the data sources defined by
 * statements stay on top of them. */
static int put_config(cf_sc_service *s, cf_worker *w, const char *body, size_t len, cf_buf *out) {
    cf_props *settings = cf_props_new();
    cf_err err;
    int status;
    if (cf_sc_service_settings(body, len, "request body", settings, &err)) {
        status = cf_sc_service_error(out, &err);
    } else {
        cf_props *c = cf_sc_service_compose(s, settings);
        status = cf_sc_service_apply(s, w, c, out);
        cf_props_destroy(c);
        if (status < 300) {
            cf_props_destroy(s->settings);
            s->settings = settings;
            settings = NULL;
        }
    }
    cf_props_destroy(settings);
    return status;
}

/* The value of a sample `name{connector="<c>",task="0"} value` in the
 * Prometheus text, or -1. */
static double sample(const char *text, const char *name, const char *connector) {
    char pat[512];
    snprintf(pat, sizeof pat, "\n%s{connector=\"%s\",task=\"0\"} ", name, connector);
    const char *p = strstr(text, pat);
    return p ? strtod(p + strlen(pat), NULL) : -1;
}

static int health(cf_sc_service *s, cf_worker *w, cf_buf *out) {
    cf_state cs, t0;
    if (cf_worker_connector_state(w, s->name, &cs, &t0, NULL) != CF_OK)
        return error(out, 404, "no CDC service is configured (PUT /api/v1/services/cdc/config)%s%s", NULL, NULL);
    cf_buf m = CF_BUF_INIT;
    cf_buf_append_byte(&m, '\n');
    cf_worker_metrics_text(w, &m);
    double lag = sample(m.data, "cdc_segment_read_lag", s->name), eps = sample(m.data, "cdc_events_per_second", s->name),
           pend = sample(m.data, "cdc_unpublished_digests", s->name), pub = sample(m.data, "cdc_published_total", s->name),
           drop = sample(m.data, "cdc_dropped_mutations_total", s->name),
           last = sample(m.data, "cdc_last_published_timestamp_seconds", s->name);
    cf_buf_free(&m);
    const char *status = t0 == CF_STATE_RUNNING || t0 == CF_STATE_FINISHED ? "healthy"
                         : t0 == CF_STATE_FAILED                           ? "failed"
                                                                           : "stopped";
    char when[64] = "";
    if (last > 0) {
        time_t tt = (time_t)last;
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "state", json_string(cf_state_name(t0)));
    json_object_set_new(o, "lag_segments", lag >= 0 ? json_integer((json_int_t)lag) : json_null());
    json_object_set_new(o, "last_published", when[0] ? json_string(when) : json_null());
    json_object_set_new(o, "events_per_second", eps >= 0 ? json_real(eps) : json_null());
    json_object_set_new(o, "pending_mutations", pend >= 0 ? json_integer((json_int_t)pend) : json_null());
    json_object_set_new(o, "published", pub >= 0 ? json_integer((json_int_t)pub) : json_null());
    json_object_set_new(o, "dropped", drop >= 0 ? json_integer((json_int_t)drop) : json_null());
    char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cf_buf_append_str(out, t);
    free(t);
    json_decref(o);
    return strcmp(status, "healthy") == 0 ? 200 : 503;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every CommitLog-*.log of the configured directories, with its index. */
static int segments(cf_sc_service *s, cf_worker *w, cf_buf *out) {
    char *cfg = cf_worker_connector_config_json(w, s->name);
    if (!cfg) return error(out, 404, "no CDC service is configured (PUT /api/v1/services/cdc/config)%s%s", NULL, NULL);
    json_t *c = json_loads(cfg, 0, NULL);
    free(cfg);
    const char *dirs = json_string_value(json_object_get(c, "cdc_raw.dirs"));
    const char *names = json_string_value(json_object_get(c, "cdc_raw.names"));
    json_t *arr = json_array();
    char *dl = cf_xstrdup(dirs ? dirs : ""), *nl = cf_xstrdup(names ? names : "");
    char *ds = NULL, *ns = NULL;
    for (char *d = strtok_r(dl, ",", &ds), *n = strtok_r(nl, ",", &ns); d; d = strtok_r(NULL, ",", &ds),
              n = n ? strtok_r(NULL, ",", &ns) : NULL) {
        while (*d == ' ') d++;
        DIR *dh = opendir(d);
        if (!dh) continue;
        char **files = NULL;
        size_t nf = 0;
        struct dirent *de;
        while ((de = readdir(dh))) {
            int32_t ver;
            int64_t id;
            size_t l = strlen(de->d_name);
            if (l < 4 || strcmp(de->d_name + l - 4, ".log") != 0 || !cf_cass_segment_name_parse(de->d_name, &ver, &id))
                continue;
            files = cf_xrealloc(files, (nf + 1) * sizeof *files);
            files[nf++] = cf_xstrdup(de->d_name);
        }
        closedir(dh);
        if (nf) qsort(files, nf, sizeof *files, cmp_name);
        for (size_t i = 0; i < nf; i++) {
            cf_buf p = CF_BUF_INIT;
            cf_buf_printf(&p, "%s/%s", d, files[i]);
            struct stat st;
            if (stat(p.data, &st) == 0) {
                char *idx = cf_cass_cdc_idx_path(p.data);
                int64_t off = -1;
                bool done = false;
                bool has = cf_cass_cdc_idx_read(idx, 2, 2, &off, &done, NULL) == CF_OK;
                free(idx);
                json_t *o = json_object();
                json_object_set_new(o, "replica", json_string(n ? n : d));
                json_object_set_new(o, "name", json_string(files[i]));
                json_object_set_new(o, "size", json_integer((json_int_t)st.st_size));
                json_object_set_new(o, "idx", has ? json_integer((json_int_t)off) : json_null());
                json_object_set_new(o, "completed", json_boolean(done));
                json_object_set_new(o, "lastModified",
                                    json_integer((json_int_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000));
                json_array_append_new(arr, o);
            }
            cf_buf_free(&p);
            free(files[i]);
        }
        free(files);
    }
    free(dl);
    free(nl);
    json_decref(c);
    json_t *o = json_pack("{s:o}", "segmentInfos", arr);
    char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cf_buf_append_str(out, t);
    free(t);
    json_decref(o);
    return 200;
}

int cf_sc_service_route(void *arg, cf_worker *w, const char *method, const char *path, const char *body,
                        size_t body_len, const char **content_type, cf_buf *out) {
    cf_sc_service *s = arg;
    *content_type = "application/json";
    bool get = strcmp(method, "GET") == 0;
    if (strcmp(path, "/api/v1/services/cdc/config") == 0) {
        int status;
        if (get) { /* after the first read of the shared configuration at the start (cf_sc_service_attach) */
            pthread_mutex_lock(&s->mu);
            status = get_config(s, w, out);
            pthread_mutex_unlock(&s->mu);
            return status;
        }
        pthread_mutex_lock(&s->mu);
        if (strcmp(method, "PUT") == 0) {
            status = put_config(s, w, body, body_len, out);
            if (status < 300) cf_sc_service_share(s, w);
        } else if (strcmp(method, "DELETE") == 0) {
            cf_err err;
            if (cf_worker_delete_connector(w, s->name, &err)) {
                status = cf_sc_service_error(out, &err);
            } else { /* the service is unconfigured: its data sources go too, the named sinks stay */
                cf_sc_service_unconfigured(s);
                cf_sc_service_clear_sources(s);
                status = 204;
                cf_sc_service_share(s, w);
            }
        } else {
            status = error(out, 405, "HTTP 405 Method Not Allowed%s%s", NULL, NULL);
        }
        pthread_mutex_unlock(&s->mu);
        return status;
    }
    if (strcmp(path, "/api/v1/services/cdc/statements") == 0) {
        if (strcmp(method, "POST") != 0) return error(out, 405, "HTTP 405 Method Not Allowed%s%s", NULL, NULL);
        pthread_mutex_lock(&s->mu);
        int status = cf_sc_service_statements(s, w, body, body_len, out);
        cf_sc_service_share(s, w); /* what was applied, also when a later statement failed */
        pthread_mutex_unlock(&s->mu);
        return status;
    }
    if (strcmp(path, "/api/v1/services/cdc/health") == 0) {
        if (!get) return error(out, 405, "HTTP 405 Method Not Allowed%s%s", NULL, NULL);
        return health(s, w, out);
    }
    if (strcmp(path, "/api/v1/cdc/segments") == 0) {
        if (!get) return error(out, 405, "HTTP 405 Method Not Allowed%s%s", NULL, NULL);
        return segments(s, w, out);
    }
    return 0; /* not ours: the worker answers 404 */
}
