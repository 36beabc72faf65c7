/*
 * schema_registry.c - Confluent Schema Registry client (libcurl + jansson).
 *
 * Design: one CURL easy handle reused for all requests (keeps the connection alive), guarded
 * by `lock` together with the two caches; the status lives under its own `slock` so a health
 * check never waits for a slow request. Caches are small chained hash tables with FIFO
 * eviction at `cache_capacity` entries: registry ids never change meaning, so a cached entry
 * is always valid and eviction only bounds memory.
 *
 * Reachability: a failed call (after its in-call retries) sets next_retry_ms; until then calls
 * that need the network return CF_ERR_AGAIN at once, so a worker with a dead registry keeps
 * serving cached schemas without stalling on timeouts. The gap doubles per failed call.
 */
#include "cdcflow/schema_registry.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"

/* ---------------- small hash cache ---------------- */

typedef struct sr_entry {
    struct sr_entry *next;    /* chain */
    struct sr_entry *fifo;    /* insertion order, for eviction */
    uint64_t hash;
    char *key;                /* for the id cache: decimal id */
    char *schema;             /* schema text */
    int32_t id, version;
} sr_entry;

typedef struct sr_cache {
    sr_entry **buckets;
    size_t nbuckets, count, cap;
    sr_entry *fifo_head, *fifo_tail;
} sr_cache;

static uint64_t fnv1a(const char *s, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void cache_init(sr_cache *c, size_t cap) {
    c->cap = cap ? cap : 1000;
    c->nbuckets = 64;
    while (c->nbuckets < c->cap) c->nbuckets <<= 1;
    c->buckets = cf_xcalloc(c->nbuckets, sizeof *c->buckets);
    c->count = 0;
    c->fifo_head = c->fifo_tail = NULL;
}

static void entry_free(sr_entry *e) {
    free(e->key);
    free(e->schema);
    free(e);
}

static void cache_free(sr_cache *c) {
    sr_entry *e = c->fifo_head;
    while (e) {
        sr_entry *n = e->fifo;
        entry_free(e);
        e = n;
    }
    free(c->buckets);
    memset(c, 0, sizeof *c);
}

static sr_entry *cache_get(sr_cache *c, const char *key, uint64_t h) {
    for (sr_entry *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && strcmp(e->key, key) == 0) return e;
    return NULL;
}

static void cache_evict_oldest(sr_cache *c) {
    sr_entry *old = c->fifo_head;
    if (!old) return;
    c->fifo_head = old->fifo;
    if (!c->fifo_head) c->fifo_tail = NULL;
    sr_entry **pp = &c->buckets[old->hash & (c->nbuckets - 1)];
    while (*pp && *pp != old) pp = &(*pp)->next;
    if (*pp) *pp = old->next;
    c->count--;
    entry_free(old);
}

/* Takes key; copies schema. Replaces an existing entry's values. */
static sr_entry *cache_put(sr_cache *c, char *key, uint64_t h, const char *schema, int32_t id, int32_t version) {
    sr_entry *e = cache_get(c, key, h);
    if (e) {
        free(key);
        if (schema && (!e->schema || strcmp(e->schema, schema) != 0)) {
            free(e->schema);
            e->schema = cf_xstrdup(schema);
        }
        e->id = id;
        e->version = version;
        return e;
    }
    if (c->count >= c->cap) cache_evict_oldest(c);
    e = cf_xcalloc(1, sizeof *e);
    e->hash = h;
    e->key = key;
    e->schema = schema ? cf_xstrdup(schema) : NULL;
    e->id = id;
    e->version = version;
    size_t b = h & (c->nbuckets - 1);
    e->next = c->buckets[b];
    c->buckets[b] = e;
    if (c->fifo_tail) c->fifo_tail->fifo = e;
    else c->fifo_head = e;
    c->fifo_tail = e;
    c->count++;
    return e;
}

/* ---------------- client ---------------- */

struct cf_sr_client {
    pthread_mutex_t lock;  /* curl handle + caches */
    pthread_mutex_t slock; /* status */
    CURL *curl;
    char **urls;
    size_t n_urls;
    size_t url_index; /* last URL that answered */
    char *userpwd;
    char *ca, *cert, *key, *keypass;
    bool verify_host;
    long timeout_ms;
    int max_retries;
    long backoff_ms, backoff_max_ms;
    long unreachable_gap_ms; /* current fail-fast window, doubles per failed call */
    sr_cache by_id;      /* key "id" -> schema */
    sr_cache by_schema;  /* key "reg\nsubject\nschema" or "chk\n..." -> id, version */
    cf_sr_status st;
    const atomic_bool *interrupt; /* cf_sr_client_set_interrupt; NULL: none */
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool interrupted(const cf_sr_client *c) { return c->interrupt && atomic_load(c->interrupt); }

/* The backoff between retries, in slices so that an interrupt ends it. */
static void sleep_ms(const cf_sr_client *c, long ms) {
    while (ms > 0 && !interrupted(c)) {
        long step = ms < 50 ? ms : 50;
        struct timespec ts = {0, step * 1000000L};
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
        }
        ms -= step;
    }
}

void cf_sr_client_set_interrupt(cf_sr_client *c, const atomic_bool *stop) {
    if (c) c->interrupt = stop;
}

/* libcurl calls this about once a second while it waits and at every
 * transfer step: a non-zero return aborts the request
 * (CURLE_ABORTED_BY_CALLBACK). */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return interrupted(arg) ? 1 : 0;
}

void cf_sr_config_init(cf_sr_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->ssl_verify_host = true;
    cfg->timeout_ms = 30000;
    cfg->max_retries = 2;
    cfg->backoff_ms = 100;
    cfg->backoff_max_ms = 10000;
    cfg->cache_capacity = 1000;
}

static const char *prop2(const cf_props *p, const char *a, const char *b) {
    const char *v = cf_props_get(p, a);
    if (!v && b) v = cf_props_get(p, b);
    return v;
}

static cf_code parse_long(const cf_props *p, const char *key, long min, long max, long *out, cf_err *err) {
    const char *v = cf_props_get(p, key);
    if (!v) return CF_OK;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max) {
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for %s", key);
        cf_err_detail(err, "\"%s\" is not an integer between %ld and %ld", v, min, max);
        cf_err_where(err, "%s", key);
        return CF_ERR_CONFIG;
    }
    *out = x;
    return CF_OK;
}

cf_code cf_sr_config_from_props(cf_sr_config *cfg, const cf_props *props, cf_err *err) {
    cfg->urls = cf_props_get(props, "schema.registry.url");
    cfg->basic_auth_source = prop2(props, "basic.auth.credentials.source", "schema.registry.basic.auth.credentials.source");
    cfg->basic_auth_user_info = prop2(props, "basic.auth.user.info", "schema.registry.basic.auth.user.info");
    cfg->ssl_ca_location = cf_props_get(props, "schema.registry.ssl.ca.location");
    cfg->ssl_cert_location = cf_props_get(props, "schema.registry.ssl.certificate.location");
    cfg->ssl_key_location = cf_props_get(props, "schema.registry.ssl.key.location");
    cfg->ssl_key_password = cf_props_get(props, "schema.registry.ssl.key.password");
    const char *eia = cf_props_get(props, "schema.registry.ssl.endpoint.identification.algorithm");
    if (eia) cfg->ssl_verify_host = *eia != '\0';
    if (cfg->basic_auth_source && *cfg->basic_auth_source && strcasecmp(cfg->basic_auth_source, "USER_INFO") != 0 &&
        strcasecmp(cfg->basic_auth_source, "URL") != 0) {
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for basic.auth.credentials.source");
        cf_err_detail(err, "\"%s\" is not supported", cfg->basic_auth_source);
        cf_err_hint(err, "Use USER_INFO (with basic.auth.user.info=user:password) or URL (credentials in the URL).");
        cf_err_where(err, "basic.auth.credentials.source");
        return CF_ERR_CONFIG;
    }
    long v;
    cf_code rc;
    v = cfg->timeout_ms;
    if ((rc = parse_long(props, "schema.registry.request.timeout.ms", 1, 3600000, &v, err))) return rc;
    cfg->timeout_ms = v;
    v = cfg->max_retries;
    if ((rc = parse_long(props, "schema.registry.retries", 0, 100, &v, err))) return rc;
    cfg->max_retries = (int)v;
    v = cfg->backoff_ms;
    if ((rc = parse_long(props, "schema.registry.retry.backoff.ms", 0, 3600000, &v, err))) return rc;
    cfg->backoff_ms = v;
    v = cfg->backoff_max_ms;
    if ((rc = parse_long(props, "schema.registry.retry.backoff.max.ms", 0, 3600000, &v, err))) return rc;
    cfg->backoff_max_ms = v;
    v = (long)cfg->cache_capacity;
    if ((rc = parse_long(props, "schemas.cache.config", 1, 10000000, &v, err))) return rc;
    cfg->cache_capacity = (size_t)v;
    return CF_OK;
}

static char *dup_or_null(const char *s) { return s && *s ? cf_xstrdup(s) : NULL; }

cf_code cf_sr_client_new(const cf_sr_config *cfg, cf_sr_client **out, cf_err *err) {
    cf_sr_config def;
    if (!cfg) {
        cf_sr_config_init(&def);
        cfg = &def;
    }
    if (cfg->basic_auth_source && strcasecmp(cfg->basic_auth_source, "USER_INFO") == 0 &&
        (!cfg->basic_auth_user_info || !strchr(cfg->basic_auth_user_info, ':'))) {
        cf_err_set(err, CF_ERR_CONFIG, "basic.auth.user.info must be user:password");
        cf_err_detail(err, "basic.auth.credentials.source is USER_INFO but basic.auth.user.info is %s",
                      cfg->basic_auth_user_info ? "missing the ':'" : "not set");
        cf_err_where(err, "basic.auth.user.info");
        return CF_ERR_CONFIG;
    }
    /* curl_global_init keeps a counter (thread-safe since curl 7.84); paired with the
     * curl_global_cleanup in destroy. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return cf_err_set(err, CF_ERR_INTERNAL, "curl_global_init failed");
    }
    cf_sr_client *c = cf_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->slock, NULL);
    if (cfg->urls) {
        const char *p = cfg->urls;
        while (*p) {
            while (*p == ' ' || *p == ',') p++;
            const char *e = p;
            while (*e && *e != ',') e++;
            const char *t = e;
            while (t > p && t[-1] == ' ') t--;
            while (t > p && t[-1] == '/') t--; /* no trailing slash: paths start with one */
            if (t > p) {
                c->urls = cf_xrealloc(c->urls, (c->n_urls + 1) * sizeof *c->urls);
                c->urls[c->n_urls++] = cf_xstrndup(p, (size_t)(t - p));
            }
            p = e;
        }
    }
    if (cfg->basic_auth_source && strcasecmp(cfg->basic_auth_source, "USER_INFO") == 0)
        c->userpwd = cf_xstrdup(cfg->basic_auth_user_info);
    c->ca = dup_or_null(cfg->ssl_ca_location);
    c->cert = dup_or_null(cfg->ssl_cert_location);
    c->key = dup_or_null(cfg->ssl_key_location);
    c->keypass = dup_or_null(cfg->ssl_key_password);
    c->verify_host = cfg->ssl_verify_host;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 30000;
    c->max_retries = cfg->max_retries >= 0 ? cfg->max_retries : 0;
    c->backoff_ms = cfg->backoff_ms > 0 ? cfg->backoff_ms : 100;
    c->backoff_max_ms = cfg->backoff_max_ms >= c->backoff_ms ? cfg->backoff_max_ms : c->backoff_ms;
    c->unreachable_gap_ms = c->backoff_ms;
    cache_init(&c->by_id, cfg->cache_capacity);
    cache_init(&c->by_schema, cfg->cache_capacity);
    c->st.reachable = true;
    c->curl = curl_easy_init();
    if (!c->curl) {
        cf_sr_client_destroy(c);
        return cf_err_set(err, CF_ERR_INTERNAL, "curl_easy_init failed");
    }
    *out = c;
    return CF_OK;
}

void cf_sr_client_destroy(cf_sr_client *c) {
    if (!c) return;
    if (c->curl) curl_easy_cleanup(c->curl);
    for (size_t i = 0; i < c->n_urls; i++) free(c->urls[i]);
    free(c->urls);
    free(c->userpwd);
    free(c->ca);
    free(c->cert);
    free(c->key);
    free(c->keypass);
    cache_free(&c->by_id);
    cache_free(&c->by_schema);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->slock);
    free(c);
    curl_global_cleanup();
}

void cf_sr_client_status(cf_sr_client *c, cf_sr_status *out) {
    pthread_mutex_lock(&c->slock);
    *out = c->st;
    pthread_mutex_unlock(&c->slock);
}

void cf_sr_status_json(const cf_sr_status *st, cf_buf *out) {
    json_t *o = json_object();
    json_object_set_new(o, "reachable", json_boolean(st->reachable));
    json_object_set_new(o, "requests", json_integer((json_int_t)st->requests));
    json_object_set_new(o, "errors", json_integer((json_int_t)st->errors));
    json_object_set_new(o, "cache_hits", json_integer((json_int_t)st->cache_hits));
    json_object_set_new(o, "last_ok_ms", json_integer(st->last_ok_ms));
    json_object_set_new(o, "last_error_ms", json_integer(st->last_error_ms));
    json_object_set_new(o, "next_retry_ms", json_integer(st->next_retry_ms));
    json_object_set_new(o, "last_error", json_string(st->last_error));
    char *s = json_dumps(o, JSON_COMPACT);
    cf_buf_append_str(out, s);
    free(s);
    json_decref(o);
}

static void count_hit(cf_sr_client *c) {
    pthread_mutex_lock(&c->slock);
    c->st.cache_hits++;
    pthread_mutex_unlock(&c->slock);
}

/* ---------------- HTTP ---------------- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud) {
    cf_buf *b = ud;
    size_t n = size * nmemb;
    if (b->len + n > 64u * 1024 * 1024) return 0; /* a schema response this large is not sane */
    cf_buf_append(b, ptr, n);
    return n;
}

typedef struct http_result {
    long status;   /* 0 = transport failure */
    CURLcode cc;
    cf_buf body;
    char curl_error[CURL_ERROR_SIZE];
    char url[512];  /* what curl gets (may carry user:password@) */
    char shown[512]; /* the same without credentials, for messages and logs */
} http_result;

/* Copy a URL without its user:password@ part (basic.auth.credentials.source=URL), so that
 * credentials never reach error messages, logs or metrics. */
static void redact_url(char *dst, size_t n, const char *url) {
    const char *p = strstr(url, "://");
    const char *host = p ? p + 3 : url;
    const char *end = host + strcspn(host, "/");
    const char *at = memchr(host, '@', (size_t)(end - host));
    if (at) snprintf(dst, n, "%.*s%s", (int)(host - url), url, at + 1);
    else snprintf(dst, n, "%s", url);
}

/* One attempt against one base URL. */
static void http_once(cf_sr_client *c, const char *base, const char *method, const char *path, const char *body,
                      http_result *r) {
    CURL *h = c->curl;
    curl_easy_reset(h);
    snprintf(r->url, sizeof r->url, "%s%s", base, path);
    redact_url(r->shown, sizeof r->shown, r->url);
    cf_buf_reset(&r->body);
    r->curl_error[0] = '\0';
    r->status = 0;
    curl_easy_setopt(h, CURLOPT_URL, r->url);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->curl_error);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms); /* includes the TLS handshake */
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "cdcflow-schema-registry-client");
    if (c->interrupt) {
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    if (c->userpwd) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERPWD, c->userpwd);
    }
    if (c->ca) curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
    if (c->cert) curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert);
    if (c->key) curl_easy_setopt(h, CURLOPT_SSLKEY, c->key);
    if (c->keypass) curl_easy_setopt(h, CURLOPT_KEYPASSWD, c->keypass);
    if (!c->verify_host) curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    struct curl_slist *hdrs = NULL;
    hdrs = curl_slist_append(hdrs, "Accept: application/vnd.schemaregistry.v1+json, application/json");
    if (body) {
        hdrs = curl_slist_append(hdrs, "Content-Type: application/vnd.schemaregistry.v1+json");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    if (strcmp(method, "GET") != 0 && !body) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    CURLcode cc = curl_easy_perform(h);
    r->cc = cc;
    if (cc == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    } else if (!r->curl_error[0]) {
        snprintf(r->curl_error, sizeof r->curl_error, "%s", curl_easy_strerror(cc));
    }
    curl_slist_free_all(hdrs);
    pthread_mutex_lock(&c->slock);
    c->st.requests++;
    pthread_mutex_unlock(&c->slock);
}

static void mark_failure(cf_sr_client *c, const char *msg, bool final) {
    pthread_mutex_lock(&c->slock);
    c->st.errors++;
    c->st.last_error_ms = now_ms();
    snprintf(c->st.last_error, sizeof c->st.last_error, "%s", msg);
    if (final) {
        c->st.reachable = false;
        c->st.next_retry_ms = c->st.last_error_ms + c->unreachable_gap_ms;
        c->unreachable_gap_ms = c->unreachable_gap_ms * 2 > c->backoff_max_ms ? c->backoff_max_ms
                                                                                : c->unreachable_gap_ms * 2;
    }
    pthread_mutex_unlock(&c->slock);
}

static void mark_ok(cf_sr_client *c) {
    pthread_mutex_lock(&c->slock);
    c->st.reachable = true;
    c->st.last_ok_ms = now_ms();
    c->st.next_retry_ms = 0;
    c->unreachable_gap_ms = c->backoff_ms;
    pthread_mutex_unlock(&c->slock);
}

/* Failures that no retry will fix: TLS trust and certificates, malformed URLs. */
static bool config_failure(CURLcode cc) {
    switch (cc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_LOGIN_DENIED: return true;
    default: return false;
    }
}

/* Turn a non-2xx answer into a cf_err. */
static cf_code http_error(const http_result *r, const char *what, cf_err *err) {
    long ecode = 0;
    const char *emsg = NULL;
    json_t *j = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, NULL);
    if (j && json_is_object(j)) {
        ecode = (long)json_integer_value(json_object_get(j, "error_code"));
        emsg = json_string_value(json_object_get(j, "message"));
    }
    cf_code code;
    const char *hint = NULL;
    switch (r->status) {
    case 404: code = CF_ERR_NOT_FOUND; break;
    case 409:
        code = CF_ERR_SCHEMA;
        hint = "The new schema is not compatible with the subject's earlier versions under its compatibility level; "
               "change the schema or the subject's compatibility setting.";
        break;
    case 422: code = CF_ERR_INVALID; hint = "The registry rejected the schema or request as invalid."; break;
    case 401:
    case 403:
        code = CF_ERR_CONFIG;
        hint = "Check basic.auth.credentials.source and basic.auth.user.info.";
        break;
    default: code = r->status >= 500 ? CF_ERR_AGAIN : CF_ERR_INVALID; break;
    }
    cf_err_set(err, code, "Schema Registry %s failed with HTTP %ld", what, r->status);
    if (emsg || ecode)
        cf_err_detail(err, "error_code %ld: %s", ecode, emsg ? emsg : "");
    else if (r->body.len)
        cf_err_detail(err, "response: %.300s", r->body.data);
    if (hint) cf_err_hint(err, "%s", hint);
    cf_err_where(err, "%s", r->shown);
    json_decref(j);
    return code;
}

/* Run a request with retries over all URLs. On return r->status is the final HTTP status
 * (2xx or an error answer) or the call failed with CF_ERR_AGAIN / CF_ERR_CONFIG. Caller holds
 * c->lock. */
static cf_code http_call(cf_sr_client *c, const char *method, const char *path, const char *body,
                         const char *what, http_result *r, cf_err *err) {
    if (c->n_urls == 0) {
        cf_err_set(err, CF_ERR_CONFIG, "Schema Registry %s needs schema.registry.url", what);
        cf_err_detail(err, "the client has no URL (cache-only) and the entry is not cached");
        cf_err_hint(err, "Set schema.registry.url, e.g. http://127.0.0.1:8081/apis/ccompat/v7 for Apicurio.");
        return CF_ERR_CONFIG;
    }
    pthread_mutex_lock(&c->slock);
    bool down = !c->st.reachable && now_ms() < c->st.next_retry_ms;
    int64_t next = c->st.next_retry_ms;
    char last[512];
    snprintf(last, sizeof last, "%s", c->st.last_error);
    pthread_mutex_unlock(&c->slock);
    if (down) {
        cf_err_set(err, CF_ERR_AGAIN, "Schema Registry unreachable; %s not attempted", what);
        cf_err_detail(err, "last error: %s; next attempt in %lld ms", last, (long long)(next - now_ms()));
        char shown[512];
        redact_url(shown, sizeof shown, c->urls[c->url_index]);
        cf_err_hint(err, "Cached schemas keep working; check that the registry at %s is running.", shown);
        cf_err_where(err, "%s", shown);
        return CF_ERR_AGAIN;
    }
    long backoff = c->backoff_ms;
    char msg[600] = "";
    for (int attempt = 0; attempt <= c->max_retries; attempt++) {
        if (attempt > 0) {
            sleep_ms(c, backoff);
            backoff = backoff * 2 > c->backoff_max_ms ? c->backoff_max_ms : backoff * 2;
        }
        for (size_t k = 0; k < c->n_urls; k++) {
            size_t ui = (c->url_index + k) % c->n_urls;
            if (!interrupted(c)) http_once(c, c->urls[ui], method, path, body, r);
            if (interrupted(c)) {
                /* not the registry's failure: the caller stops */
                char shown[512];
                redact_url(shown, sizeof shown, c->urls[ui]);
                cf_err_set(err, CF_ERR_AGAIN, "Schema Registry %s interrupted: the task is stopping", what);
                cf_err_detail(err, "the request to %s was abandoned; it is made again when the record is read again",
                              shown);
                cf_err_where(err, "%s", shown);
                return CF_ERR_AGAIN;
            }
            if (r->status > 0 && r->status < 500) {
                c->url_index = ui;
                mark_ok(c);
                return CF_OK;
            }
            if (r->status >= 500)
                snprintf(msg, sizeof msg, "HTTP %ld from %s: %.200s", r->status, r->shown,
                         r->body.data ? r->body.data : "");
            else
                snprintf(msg, sizeof msg, "%s: %s", r->shown, r->curl_error);
            if (r->status == 0 && config_failure(r->cc)) {
                mark_failure(c, msg, false);
                cf_err_set(err, CF_ERR_CONFIG, "Schema Registry %s failed: %s", what, curl_easy_strerror(r->cc));
                cf_err_detail(err, "%s", r->curl_error);
                cf_err_hint(err, "Check schema.registry.url and the schema.registry.ssl.* settings (CA file, client "
                                 "certificate and key); retrying will not help.");
                cf_err_where(err, "%s", r->shown);
                return CF_ERR_CONFIG;
            }
            bool final = attempt == c->max_retries && k + 1 == c->n_urls;
            mark_failure(c, msg, final);
        }
    }
    cf_err_set(err, CF_ERR_AGAIN, "Schema Registry unreachable; %s failed after %d attempt(s)", what,
               c->max_retries + 1);
    cf_err_detail(err, "%s", msg);
    cf_err_hint(err, "Check that the registry is running and schema.registry.url is right; calls fail fast and are "
                     "retried with exponential backoff, cached schemas keep working.");
    cf_err_where(err, "%s", r->shown);
    return CF_ERR_AGAIN;
}

static char *escape_subject(cf_sr_client *c, const char *subject) {
    char *e = curl_easy_escape(c->curl, subject, 0);
    char *r = cf_xstrdup(e ? e : "");
    curl_free(e);
    return r;
}

static char *schema_body(const char *schema) {
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string(schema));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static cf_code parse_json_body(const http_result *r, const char *what, json_t **out, cf_err *err) {
    json_error_t je;
    json_t *j = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        cf_err_set(err, CF_ERR_INVALID, "Schema Registry %s: the answer is not a JSON object", what);
        cf_err_detail(err, "%s; body: %.200s", j ? "not an object" : je.text, r->body.data ? r->body.data : "");
        cf_err_where(err, "%s", r->shown);
        return CF_ERR_INVALID;
    }
    *out = j;
    return CF_OK;
}

static char *schema_key(const char *kind, const char *subject, const char *schema, uint64_t *h) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_printf(&b, "%s\n%s\n%s", kind, subject, schema);
    *h = fnv1a(b.data, b.len, 1469598103934665603ULL);
    return cf_buf_detach(&b, NULL);
}

/* The by_id cache key of a schema id (its decimal text in idk) and its hash. */
static uint64_t id_key(int32_t id, char idk[16]) {
    snprintf(idk, 16, "%d", id);
    return fnv1a(idk, strlen(idk), 1469598103934665603ULL);
}

/* POST {"schema": ...} to /subjects/<subject, escaped><suffix>: the request
 * behind both registration ("/versions") and lookup (""). `what` names it in
 * errors. */
static cf_code post_schema(cf_sr_client *c, const char *subject, const char *suffix, const char *schema,
                           const char *what, http_result *r, cf_err *err) {
    char *esc = escape_subject(c, subject);
    char path[1200];
    snprintf(path, sizeof path, "/subjects/%s%s", esc, suffix);
    free(esc);
    char *body = schema_body(schema);
    cf_code rc = http_call(c, "POST", path, body, what, r, err);
    free(body);
    return rc;
}

cf_code cf_sr_register(cf_sr_client *c, const char *subject, const char *schema, int32_t *id, cf_err *err) {
    uint64_t h;
    char *key = schema_key("reg", subject, schema, &h);
    pthread_mutex_lock(&c->lock);
    sr_entry *e = cache_get(&c->by_schema, key, h);
    if (e) {
        *id = e->id;
        pthread_mutex_unlock(&c->lock);
        free(key);
        count_hit(c);
        return CF_OK;
    }
    http_result r = {0};
    char what[400];
    snprintf(what, sizeof what, "registration under subject \"%s\"", subject);
    cf_code rc = post_schema(c, subject, "/versions", schema, what, &r, err);
    json_t *j = NULL;
    if (rc == CF_OK && (r.status < 200 || r.status >= 300)) rc = http_error(&r, what, err);
    if (rc == CF_OK) rc = parse_json_body(&r, what, &j, err);
    if (rc == CF_OK) {
        json_t *jid = json_object_get(j, "id");
        if (!json_is_integer(jid)) {
            rc = cf_err_set(err, CF_ERR_INVALID, "Schema Registry %s: no integer \"id\" in the answer", what);
            cf_err_detail(err, "body: %.200s", r.body.data);
        } else {
            *id = (int32_t)json_integer_value(jid);
            cache_put(&c->by_schema, key, h, NULL, *id, -1);
            key = NULL;
            char idk[16];
            uint64_t hi = id_key(*id, idk);
            cache_put(&c->by_id, cf_xstrdup(idk), hi, schema, *id, -1);
        }
    }
    pthread_mutex_unlock(&c->lock);
    json_decref(j);
    cf_buf_free(&r.body);
    free(key);
    return rc;
}

cf_code cf_sr_lookup(cf_sr_client *c, const char *subject, const char *schema, int32_t *id, int32_t *version,
                     cf_err *err) {
    uint64_t h;
    char *key = schema_key("chk", subject, schema, &h);
    pthread_mutex_lock(&c->lock);
    sr_entry *e = cache_get(&c->by_schema, key, h);
    if (e) {
        *id = e->id;
        if (version) *version = e->version;
        pthread_mutex_unlock(&c->lock);
        free(key);
        count_hit(c);
        return CF_OK;
    }
    http_result r = {0};
    char what[400];
    snprintf(what, sizeof what, "lookup of a schema under subject \"%s\"", subject);
    cf_code rc = post_schema(c, subject, "", schema, what, &r, err);
    json_t *j = NULL;
    if (rc == CF_OK && (r.status < 200 || r.status >= 300)) {
        rc = http_error(&r, what, err);
        if (rc == CF_ERR_NOT_FOUND)
            cf_err_hint(err, "The schema is not registered under \"%s\" and auto.register.schemas is false; register "
                             "it or enable auto.register.schemas.",
                        subject);
    }
    if (rc == CF_OK) rc = parse_json_body(&r, what, &j, err);
    if (rc == CF_OK) {
        json_t *jid = json_object_get(j, "id");
        if (!json_is_integer(jid)) {
            rc = cf_err_set(err, CF_ERR_INVALID, "Schema Registry %s: no integer \"id\" in the answer", what);
            cf_err_detail(err, "body: %.200s", r.body.data);
        } else {
            *id = (int32_t)json_integer_value(jid);
            int32_t ver = (int32_t)json_integer_value(json_object_get(j, "version"));
            if (version) *version = ver;
            cache_put(&c->by_schema, key, h, NULL, *id, ver);
            key = NULL;
        }
    }
    pthread_mutex_unlock(&c->lock);
    json_decref(j);
    cf_buf_free(&r.body);
    free(key);
    return rc;
}

void cf_sr_cache_put(cf_sr_client *c, int32_t id, const char *schema) {
    char idk[16];
    uint64_t h = id_key(id, idk);
    pthread_mutex_lock(&c->lock);
    cache_put(&c->by_id, cf_xstrdup(idk), h, schema, id, -1);
    pthread_mutex_unlock(&c->lock);
}

void cf_sr_cache_put_registered(cf_sr_client *c, const char *subject, const char *schema, int32_t id) {
    cf_sr_cache_put(c, id, schema);
    uint64_t h1, h2;
    char *k1 = schema_key("reg", subject, schema, &h1);
    char *k2 = schema_key("chk", subject, schema, &h2);
    pthread_mutex_lock(&c->lock);
    cache_put(&c->by_schema, k1, h1, NULL, id, -1);
    cache_put(&c->by_schema, k2, h2, NULL, id, -1);
    pthread_mutex_unlock(&c->lock);
}

cf_code cf_sr_get_by_id(cf_sr_client *c, int32_t id, char **schema, cf_err *err) {
    char idk[16];
    uint64_t h = id_key(id, idk);
    pthread_mutex_lock(&c->lock);
    sr_entry *e = cache_get(&c->by_id, idk, h);
    if (e) {
        *schema = cf_xstrdup(e->schema);
        pthread_mutex_unlock(&c->lock);
        count_hit(c);
        return CF_OK;
    }
    char path[64];
    snprintf(path, sizeof path, "/schemas/ids/%d", id);
    http_result r = {0};
    char what[64];
    snprintf(what, sizeof what, "fetch of schema id %d", id);
    cf_code rc = http_call(c, "GET", path, NULL, what, &r, err);
    json_t *j = NULL;
    if (rc == CF_OK && (r.status < 200 || r.status >= 300)) {
        rc = http_error(&r, what, err);
        if (rc == CF_ERR_NOT_FOUND)
            cf_err_hint(err, "The message names a schema id this registry does not know: was it written with another "
                             "registry, or is the message not in Confluent's wire format?");
    }
    if (rc == CF_OK) rc = parse_json_body(&r, what, &j, err);
    if (rc == CF_OK) {
        const char *s = json_string_value(json_object_get(j, "schema"));
        const char *type = json_string_value(json_object_get(j, "schemaType"));
        if (!s) {
            rc = cf_err_set(err, CF_ERR_INVALID, "Schema Registry %s: no \"schema\" string in the answer", what);
            cf_err_detail(err, "body: %.200s", r.body.data);
        } else if (type && strcasecmp(type, "AVRO") != 0) {
            rc = cf_err_set(err, CF_ERR_UNSUPPORTED, "schema id %d is a %s schema, not Avro", id, type);
            cf_err_hint(err, "Use the converter that matches the producer's serializer.");
        } else {
            *schema = cf_xstrdup(s);
            cache_put(&c->by_id, cf_xstrdup(idk), h, s, id, -1);
        }
    }
    pthread_mutex_unlock(&c->lock);
    json_decref(j);
    cf_buf_free(&r.body);
    return rc;
}

cf_code cf_sr_get_latest(cf_sr_client *c, const char *subject, int32_t *id, int32_t *version, char **schema,
                         cf_err *err) {
    char *esc = escape_subject(c, subject);
    char path[1200];
    snprintf(path, sizeof path, "/subjects/%s/versions/latest", esc);
    free(esc);
    http_result r = {0};
    char what[400];
    snprintf(what, sizeof what, "fetch of the latest schema of subject \"%s\"", subject);
    pthread_mutex_lock(&c->lock);
    cf_code rc = http_call(c, "GET", path, NULL, what, &r, err);
    json_t *j = NULL;
    if (rc == CF_OK && (r.status < 200 || r.status >= 300)) rc = http_error(&r, what, err);
    if (rc == CF_OK) rc = parse_json_body(&r, what, &j, err);
    if (rc == CF_OK) {
        const char *s = json_string_value(json_object_get(j, "schema"));
        json_t *jid = json_object_get(j, "id");
        if (!s || !json_is_integer(jid)) {
            rc = cf_err_set(err, CF_ERR_INVALID, "Schema Registry %s: no \"schema\" and \"id\" in the answer", what);
            cf_err_detail(err, "body: %.200s", r.body.data);
        } else {
            *id = (int32_t)json_integer_value(jid);
            if (version) *version = (int32_t)json_integer_value(json_object_get(j, "version"));
            *schema = cf_xstrdup(s);
            char idk[16];
            snprintf(idk, sizeof idk, "%d", *id);
            uint64_t h = fnv1a(idk, strlen(idk), 1469598103934665603ULL);
            cache_put(&c->by_id, cf_xstrdup(idk), h, s, *id, -1);
        }
    }
    pthread_mutex_unlock(&c->lock);
    json_decref(j);
    cf_buf_free(&r.body);
    return rc;
}

/* ---------------- subject names ---------------- */

cf_code cf_sr_strategy_parse(const char *name, cf_sr_strategy *out, cf_err *err) {
    if (!name || !*name) {
        *out = CF_SR_TOPIC_NAME;
        return CF_OK;
    }
    const char *base = strrchr(name, '.');
    base = base ? base + 1 : name;
    if (strcmp(base, "TopicNameStrategy") == 0) *out = CF_SR_TOPIC_NAME;
    else if (strcmp(base, "RecordNameStrategy") == 0) *out = CF_SR_RECORD_NAME;
    else if (strcmp(base, "TopicRecordNameStrategy") == 0) *out = CF_SR_TOPIC_RECORD_NAME;
    else {
        cf_err_set(err, CF_ERR_CONFIG, "unknown subject name strategy \"%s\"", name);
        cf_err_hint(err, "Use TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy (or their "
                         "io.confluent.kafka.serializers.subject.* class names).");
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

char *cf_sr_subject_name(cf_sr_strategy s, const char *topic, bool is_key, const char *record_name) {
    cf_buf b = CF_BUF_INIT;
    switch (s) {
    case CF_SR_TOPIC_NAME: cf_buf_printf(&b, "%s-%s", topic ? topic : "", is_key ? "key" : "value"); break;
    case CF_SR_RECORD_NAME: cf_buf_append_str(&b, record_name ? record_name : ""); break;
    case CF_SR_TOPIC_RECORD_NAME:
        cf_buf_printf(&b, "%s-%s", topic ? topic : "", record_name ? record_name : "");
        break;
    }
    if (!b.data) cf_buf_append_str(&b, "");
    return cf_buf_detach(&b, NULL);
}
