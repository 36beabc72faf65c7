/*
 * shared.c - the service configuration shared through Cassandra
 * (state.store=cassandra; see cf_sc_service_attach in cdcflow/sidecar.h):
 * written to <state.keyspace>.configs after every change made here, read
 * at start and every config.refresh.interval.ms, applied when it is not the
 * one applied or written last (compared by content: WRITETIME of a map is
 * not one value).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cdcflow/cassandra_cql.h"
#include "cdcflow/log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/worker.h"
#include "sidecar_internal.h"

#define COMP "sidecar"
#define SERVICE "cdc"

/* Keys of one sidecar, never shared. */
static bool local_key(const char *k) {
    static const char *const keys[] = {"cdc_raw.dirs", "cdc_raw.names", "cdc_raw.archive.dir", "token.ranges",
                                       "token.ranges.node", "encryption.key.file", NULL};
    for (size_t i = 0; keys[i]; i++)
        if (strcmp(k, keys[i]) == 0) return true;
    return strncmp(k, "cql.", 4) == 0 || strncmp(k, "worker.", 7) == 0;
}

/* The connector's settings the service stands on now: base and settings mapped. */
static cf_props *effective(const cf_sc_service *s) {
    cf_props *c = cf_props_clone(s->base), *wk = cf_props_new();
    for (size_t i = 0; i < cf_props_count(s->settings); i++)
        cf_sc_service_put(cf_props_key_at(s->settings, i), cf_props_value_at(s->settings, i), c, wk);
    cf_props_destroy(wk);
    return c;
}

/* The store's options from the configuration (holding mu): false when it asks for none. The strings
 * point into *c (destroyed by the caller) and h. */
static bool store_opts(cf_sc_service *s, cf_props **c, char *h, size_t hn, cf_cql_options *o, cf_sc_cstore_opts *so) {
    *c = effective(s);
    const char *kind = cf_props_get(*c, "state.store");
    const char *host = cf_props_get(*c, "cql.host");
    if (!kind || strcasecmp(kind, "cassandra") != 0 || !host) return false;
    const char *ri = cf_props_get(*c, "config.refresh.interval.ms");
    s->refresh_ms = ri ? atoll(ri) : 30000;
    if (s->refresh_ms < 100) s->refresh_ms = 100;
    const char *colon = strrchr(host, ':');
    const char *port = cf_props_get(*c, "cql.port");
    *o = (cf_cql_options){.port = port ? atoi(port) : 9042, .username = cf_props_get(*c, "cql.username"),
                          .password = cf_props_get(*c, "cql.password")};
    if (colon && strchr(host, ':') == colon) {
        snprintf(h, hn, "%.*s", (int)(colon - host), host);
        o->port = atoi(colon + 1);
    } else {
        snprintf(h, hn, "%s", host);
    }
    o->host = h;
    *so = (cf_sc_cstore_opts){.cql = o, .keyspace = cf_props_get(*c, "state.keyspace"),
                              .replication = cf_props_get(*c, "state.keyspace.replication")};
    return true;
}

static void open_failed(cf_sc_service *s, const cf_err *err) {
    if (!s->store_failing) {
        cf_log_err(CF_LOG_WARN, COMP, err);
        CF_WARN(COMP, "the shared service configuration cannot be read or written now; tried again");
    }
    s->store_failing = true;
}

/* The store of the writes, opened when the configuration asks for it (holding mu). NULL: not used or not
 * reachable. */
static cf_sc_cstore *store(cf_sc_service *s) {
    if (s->store) return s->store;
    cf_props *c;
    char h[256];
    cf_cql_options o;
    cf_sc_cstore_opts so;
    if (store_opts(s, &c, h, sizeof h, &o, &so)) {
        cf_err err;
        if (cf_sc_cstore_open(&so, &s->store, &err)) {
            open_failed(s, &err);
            s->store = NULL;
        }
    }
    cf_props_destroy(c);
    return s->store;
}

static void failing(cf_sc_service *s, const cf_err *err, const char *what) {
    if (!s->store_failing) {
        cf_log_err(CF_LOG_WARN, COMP, err);
        CF_WARN(COMP, "the shared service configuration was not %s (tried again at the next change or refresh)", what);
    }
    s->store_failing = true;
}

void cf_sc_service_share(cf_sc_service *s, cf_worker *w) {
    s->shared_gen++; /* a refresh reading now may read what was there before */
    cf_sc_cstore *st = store(s);
    if (!st) return;
    cf_state cs, t0;
    bool exists = cf_worker_connector_state(w, s->name, &cs, &t0, NULL) == CF_OK;
    cf_props *shared = NULL;
    if (exists) {
        cf_props *c = cf_sc_service_compose(s, s->settings);
        shared = cf_props_new();
        for (size_t i = 0; i < cf_props_count(c); i++)
            if (!local_key(cf_props_key_at(c, i))) cf_props_set(shared, cf_props_key_at(c, i), cf_props_value_at(c, i));
        cf_props_destroy(c);
    }
    cf_err err;
    int64_t ts = 0;
    if (cf_sc_cstore_config_put(st, SERVICE, shared, &ts, &err)) {
        failing(s, &err, "written");
    } else {
        if (s->store_failing) CF_INFO(COMP, "the shared service configuration is written again");
        s->store_failing = false;
        (void)ts;
        cf_props_destroy(s->shared);
        s->shared = shared ? cf_props_clone(shared) : NULL;
        CF_INFO(COMP, "service configuration %s %s.configs", shared ? "written to" : "deleted from",
                cf_sc_cstore_keyspace(st));
    }
    cf_props_destroy(shared);
}

static bool same(const cf_props *a, const cf_props *b) {
    if (!a || !b) return a == b;
    if (cf_props_count(a) != cf_props_count(b)) return false;
    for (size_t i = 0; i < cf_props_count(a); i++) {
        const char *v = cf_props_get(b, cf_props_key_at(a, i));
        if (!v || strcmp(v, cf_props_value_at(a, i)) != 0) return false;
    }
    return true;
}

/* this sidecar's own keys of its settings */
static cf_props *local_settings(const cf_sc_service *s) {
    cf_props *out = cf_props_new();
    for (size_t i = 0; i < cf_props_count(s->settings); i++)
        if (local_key(cf_props_key_at(s->settings, i)))
            cf_props_set(out, cf_props_key_at(s->settings, i), cf_props_value_at(s->settings, i));
    return out;
}

void cf_sc_service_unconfigured(cf_sc_service *s) {
    cf_props *keep = store(s) || s->store_failing ? local_settings(s) : cf_props_new();
    cf_props_destroy(s->settings);
    s->settings = keep;
}

/* Read the shared configuration, apply it if it changed (holding mu, released during the CQL calls: they
 * may wait for the request timeout, the REST calls must not; the reads have their own connection).
 * hold: keep mu during the calls too: the first read at attach, so that a GET of the configuration
 * (rest.c takes mu) is not answered with the command line's while the shared one is being read (one
 * right after the start was: test_shared_config_live in a CI run). */
static void refresh(cf_sc_service *s, bool hold) {
    if (!s->w) return;
    cf_props *c;
    char h[256];
    cf_cql_options o;
    cf_sc_cstore_opts so;
    if (!store_opts(s, &c, h, sizeof h, &o, &so)) {
        cf_props_destroy(c);
        return;
    }
    uint64_t gen = s->shared_gen;
    cf_sc_cstore *rs = s->rstore; /* this thread's while mu is released */
    s->rstore = NULL;
    if (!hold) pthread_mutex_unlock(&s->mu);
    cf_props *shared = NULL;
    int64_t ts = 0;
    cf_err err;
    bool opened = rs != NULL;
    cf_code rc = rs ? CF_OK : cf_sc_cstore_open(&so, &rs, &err);
    if (!rc) rc = cf_sc_cstore_config_get(rs, SERVICE, &shared, &ts, &err);
    if (!hold) pthread_mutex_lock(&s->mu);
    cf_props_destroy(c);
    s->rstore = rs;
    if (rc) {
        if (!opened && !rs) open_failed(s, &err);
        else failing(s, &err, "read");
        return;
    }
    if (gen != s->shared_gen) { /* changed here meanwhile: what was read may be older; read again next time */
        cf_props_destroy(shared);
        return;
    }
    cf_sc_cstore *st = rs;
    if (s->store_failing) CF_INFO(COMP, "the shared service configuration is read again");
    s->store_failing = false;
    if (same(shared, s->shared)) {
        cf_props_destroy(shared);
        return;
    }
    /* this sidecar's own keys stay; the rest is the shared configuration */
    cf_props *settings = local_settings(s);
    cf_buf out = CF_BUF_INIT;
    if (shared) {
        cf_props_merge(settings, shared);
        cf_sc_service_clear_sources(s); /* their effect is in the shared configuration */
        int status = cf_sc_service_apply(s, s->w, settings, &out);
        if (status < 300) {
            CF_INFO(COMP, "the shared service configuration of %s.configs is applied", cf_sc_cstore_keyspace(st));
        } else {
            CF_WARN(COMP, "the shared service configuration of %s.configs cannot be applied here: %s",
                    cf_sc_cstore_keyspace(st), out.data ? out.data : "");
        }
    } else {
        cf_state cs, t0;
        if (cf_worker_connector_state(s->w, s->name, &cs, &t0, NULL) == CF_OK &&
            cf_worker_delete_connector(s->w, s->name, &err) != CF_OK)
            cf_log_err(CF_LOG_WARN, COMP, &err);
        else
            CF_INFO(COMP, "the shared service configuration was deleted: the service is unconfigured");
        cf_sc_service_clear_sources(s);
    }
    cf_props_destroy(s->settings);
    s->settings = settings;
    cf_props_destroy(s->shared);
    s->shared = shared;
    cf_buf_free(&out);
}

static void *refresher(void *arg) {
    cf_sc_service *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->th_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t ns = until.tv_nsec + (s->refresh_ms % 1000) * 1000000;
        until.tv_sec += s->refresh_ms / 1000 + ns / 1000000000;
        until.tv_nsec = ns % 1000000000;
        int rc = 0;
        while (!s->th_stop && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&s->cv, &s->mu, &until);
        if (!s->th_stop) refresh(s, false);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void cf_sc_service_attach(cf_sc_service *s, cf_worker *w) {
    pthread_mutex_lock(&s->mu);
    s->w = w;
    bool use = store(s) != NULL || s->store_failing;
    if (use) {
        refresh(s, true);
        s->th_stop = false;
        s->th_running = pthread_create(&s->th, NULL, refresher, s) == 0;
    }
    pthread_mutex_unlock(&s->mu);
}

void cf_sc_service_detach(cf_sc_service *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->th_stop = true;
    pthread_cond_broadcast(&s->cv);
    bool running = s->th_running;
    s->th_running = false;
    pthread_mutex_unlock(&s->mu);
    if (running) pthread_join(s->th, NULL);
    pthread_mutex_lock(&s->mu);
    s->w = NULL;
    pthread_mutex_unlock(&s->mu);
}
