/*
 * rest.c - the worker's REST API: the subset of Kafka Connect's that a
 * standalone worker needs, with Connect's paths, status codes and error
 * bodies ({"error_code": <http status>, "message": "..."}), plus
 * GET /metrics in Prometheus' text format.
 *
 *   GET    /                                  version
 *   GET    /connectors                        ["name", ...]  (?expand=status|info)
 *   POST   /connectors                        {"name","config"} -> 201, 409 if it exists
 *   GET    /connectors/{name}                 {name, config, tasks, type}
 *   GET    /connectors/{name}/config
 *   PUT    /connectors/{name}/config          flat config -> 201 created / 200 updated
 *   GET    /connectors/{name}/status
 *   GET    /connectors/{name}/tasks           [{id:{connector,task}, config}]
 *   PUT    /connectors/{name}/pause|resume    202
 *   POST   /connectors/{name}/restart         204 (or 202 + status with includeTasks/onlyFailed)
 *   POST   /connectors/{name}/tasks/{id}/restart  204
 *   DELETE /connectors/{name}                 204
 *   GET    /connector-plugins                 [{class, type, version}]
 *   GET    /metrics                           text/plain; version=0.0.4
 *   GET    /health                            {"status":"UP"|"DOWN",...}: 200 when UP, 503 when a
 *                                             task failed or a Schema Registry is unreachable
 *
 * One libmicrohttpd thread serves requests. It binds 127.0.0.1 by default
 * (rest.host.name / listeners); with rest.auth.token every request needs
 * "Authorization: Bearer <token>" (401 otherwise, compared in constant
 * time); with a certificate and key it speaks HTTPS.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/version.h"
#include "worker_internal.h"

#define MAX_BODY (1u << 20)

struct cf_rest {
    struct MHD_Daemon *d;
    cf_worker *w;
    char *token;
    char *cert, *key;
    int port;
};

typedef struct req {
    cf_buf body;
    bool too_big;
} req;

static char *read_file(const char *path, cf_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cf_err_set(err, CF_ERR_IO, "cannot read \"%s\"", path);
        return NULL;
    }
    cf_buf b = CF_BUF_INIT;
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) cf_buf_append(&b, tmp, n);
    fclose(f);
    if (!b.data) cf_buf_append_str(&b, "");
    return cf_buf_detach(&b, NULL);
}

static enum MHD_Result send_text(struct MHD_Connection *con, unsigned status, const char *ctype, char *text) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(text ? strlen(text) : 0, text ? text : (char *)"", text ? MHD_RESPMEM_MUST_FREE
                                                                                                : MHD_RESPMEM_PERSISTENT);
    if (ctype) MHD_add_response_header(r, "Content-Type", ctype);
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    enum MHD_Result ret = MHD_queue_response(con, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *con, unsigned status, char *json) {
    return send_text(con, status, "application/json", json);
}

static enum MHD_Result send_error(struct MHD_Connection *con, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum MHD_Result send_error(struct MHD_Connection *con, unsigned status, const char *fmt, ...) {
    char msg[1500];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *o = json_pack("{s:i,s:s}", "error_code", (int)status, "message", msg);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return send_json(con, status, s);
}

/* Create and config requests carry a JSON object: false (with the 400
 * answer queued in *ret) when the body is not JSON or not an object. */
static bool body_is_json_object(struct MHD_Connection *con, const char *body, size_t body_len, enum MHD_Result *ret) {
    json_error_t je;
    json_t *j = json_loadb(body, body_len, 0, &je);
    bool ok = j && json_is_object(j);
    if (!ok)
        *ret = j ? send_error(con, 400, "Request body must be a JSON object")
                 : send_error(con, 400, "Invalid JSON in request body: %s (at byte %d)", je.text, je.position);
    json_decref(j);
    return ok;
}

/* Creating or configuring: an unknown connector.class is a bad request
 * (Connect's BadRequestException), not a missing resource. */
static enum MHD_Result send_cf_err(struct MHD_Connection *con, const cf_err *e);
static enum MHD_Result send_config_err(struct MHD_Connection *con, cf_err *e) {
    if (e->code == CF_ERR_NOT_FOUND && strstr(e->message, "connector.class")) e->code = CF_ERR_CONFIG;
    return send_cf_err(con, e);
}

static enum MHD_Result send_cf_err(struct MHD_Connection *con, const cf_err *e) {
    unsigned status = 500;
    switch (e->code) {
    case CF_ERR_NOT_FOUND: status = 404; break;
    case CF_ERR_STATE: status = 409; break;
    case CF_ERR_CONFIG: case CF_ERR_INVALID: case CF_ERR_UNSUPPORTED: status = 400; break;
    default: status = 500;
    }
    if (e->detail[0]) return send_error(con, status, "%s: %s", e->message, e->detail);
    return send_error(con, status, "%s", e->message);
}

static bool token_ok(const cf_rest *r, struct MHD_Connection *con) {
    if (!r->token) return true;
    const char *h = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return false;
    h += 7;
    size_t a = strlen(h), b = strlen(r->token);
    unsigned diff = (unsigned)(a ^ b);
    for (size_t i = 0; i < b; i++) diff |= (unsigned)((uint8_t)(i < a ? h[i] : 0) ^ (uint8_t)r->token[i]);
    return diff == 0;
}

/* Split "/connectors/a/b" into segments (in place in a copy). */
static size_t split_path(char *p, char **seg, size_t max) {
    size_t n = 0;
    for (char *s = strtok(p, "/"); s && n < max; s = strtok(NULL, "/")) seg[n++] = s;
    return n;
}

static bool qbool(struct MHD_Connection *con, const char *key) {
    const char *v = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, key);
    return v && strcasecmp(v, "true") == 0;
}

static enum MHD_Result connectors_expanded(cf_rest *r, struct MHD_Connection *con) {
    bool st = false, info = false;
    /* expand may be repeated: ?expand=status&expand=info */
    const char *e = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "expand");
    if (e) {
        st = strstr(e, "status") != NULL;
        info = strstr(e, "info") != NULL;
    }
    char *names = cf_worker_connectors_json(r->w);
    if (!st && !info) return send_json(con, 200, names);
    json_t *arr = json_loads(names, 0, NULL), *out = json_object(), *it;
    free(names);
    size_t i;
    json_array_foreach(arr, i, it) {
        const char *n = json_string_value(it);
        json_t *o = json_object();
        if (st) {
            char *s = cf_worker_connector_status_json(r->w, n);
            if (s) json_object_set_new(o, "status", json_loads(s, 0, NULL));
            free(s);
        }
        if (info) {
            char *s = cf_worker_connector_json(r->w, n);
            if (s) json_object_set_new(o, "info", json_loads(s, 0, NULL));
            free(s);
        }
        json_object_set_new(out, n, o);
    }
    json_decref(arr);
    char *s = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(out);
    return send_json(con, 200, s);
}

static enum MHD_Result route(cf_rest *r, struct MHD_Connection *con, const char *method, const char *url,
                             const char *body, size_t body_len) {
    char *path = cf_xstrdup(url);
    char *seg[8];
    size_t n = split_path(path, seg, 8);
    enum MHD_Result ret;
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0, put = strcmp(method, "PUT") == 0,
         del = strcmp(method, "DELETE") == 0;
    cf_err err;
    cf_err_clear(&err);
#define METHOD_NOT_ALLOWED() send_error(con, 405, "HTTP 405 Method Not Allowed")
    if (n == 0) {
        if (!get) { ret = METHOD_NOT_ALLOWED(); goto out; }
        json_t *o = json_pack("{s:s,s:s,s:n}", "version", CF_VERSION_STRING, "commit", "", "kafka_cluster_id");
        ret = send_json(con, 200, json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER));
        json_decref(o);
        goto out;
    }
    if (n == 1 && strcmp(seg[0], "metrics") == 0) {
        if (!get) { ret = METHOD_NOT_ALLOWED(); goto out; }
        cf_buf b = CF_BUF_INIT;
        cf_worker_metrics_text(r->w, &b);
        ret = send_text(con, 200, "text/plain; version=0.0.4; charset=utf-8", cf_buf_detach(&b, NULL));
        goto out;
    }
    if (n == 1 && strcmp(seg[0], "health") == 0) {
        if (!get) { ret = METHOD_NOT_ALLOWED(); goto out; }
        bool healthy = false;
        char *h = cf_worker_health_json(r->w, &healthy);
        ret = send_json(con, healthy ? 200 : 503, h);
        goto out;
    }
    if (n == 1 && strcmp(seg[0], "connector-plugins") == 0) {
        if (!get) { ret = METHOD_NOT_ALLOWED(); goto out; }
        ret = send_json(con, 200, cf_worker_plugins_json(r->w));
        goto out;
    }
    if (strcmp(seg[0], "connectors") != 0) {
        ret = send_error(con, 404, "HTTP 404 Not Found");
        goto out;
    }
    if (n == 1) {
        if (get) {
            ret = connectors_expanded(r, con);
        } else if (post) {
            cf_props *props = NULL;
            char *name = NULL;
            if (!body_is_json_object(con, body, body_len, &ret)) goto out;
            if (cf_props_from_json(body, body_len, &props, &name, &err)) {
                ret = send_error(con, 400, "%s%s%s", err.message, err.detail[0] ? ": " : "", err.detail);
                goto out;
            }
            if (!name || !*name) {
                free(name);
                cf_props_destroy(props);
                ret = send_error(con, 400, "Connector config must contain a \"name\"");
                goto out;
            }
            if (cf_worker_add_connector(r->w, name, props, &err)) {
                ret = send_config_err(con, &err);
            } else {
                char *info = cf_worker_connector_json(r->w, name);
                struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(info), info, MHD_RESPMEM_MUST_FREE);
                MHD_add_response_header(resp, "Content-Type", "application/json");
                char loc[600];
                snprintf(loc, sizeof loc, "/connectors/%s", name);
                MHD_add_response_header(resp, "Location", loc);
                ret = MHD_queue_response(con, 201, resp);
                MHD_destroy_response(resp);
            }
            free(name);
            cf_props_destroy(props);
        } else {
            ret = METHOD_NOT_ALLOWED();
        }
        goto out;
    }
    const char *name = seg[1];
    if (n == 2) {
        if (get) {
            char *s = cf_worker_connector_json(r->w, name);
            ret = s ? send_json(con, 200, s) : send_error(con, 404, "Connector %s not found", name);
        } else if (del) {
            ret = cf_worker_delete_connector(r->w, name, &err) ? send_cf_err(con, &err) : send_text(con, 204, NULL, NULL);
        } else {
            ret = METHOD_NOT_ALLOWED();
        }
        goto out;
    }
    const char *what = seg[2];
    if (n == 3 && strcmp(what, "config") == 0) {
        if (get) {
            char *s = cf_worker_connector_config_json(r->w, name);
            ret = s ? send_json(con, 200, s) : send_error(con, 404, "Connector %s not found", name);
        } else if (put) {
            if (!body_is_json_object(con, body, body_len, &ret)) goto out;
            cf_props *props = NULL;
            char *bn = NULL;
            if (cf_props_from_json(body, body_len, &props, &bn, &err)) {
                ret = send_error(con, 400, "%s%s%s", err.message, err.detail[0] ? ": " : "", err.detail);
                goto out;
            }
            free(bn);
            char *exists = cf_worker_connector_config_json(r->w, name);
            bool created = exists == NULL;
            free(exists);
            cf_code rc = created ? cf_worker_add_connector(r->w, name, props, &err)
                                 : cf_worker_update_connector(r->w, name, props, &err);
            cf_props_destroy(props);
            if (rc) ret = send_config_err(con, &err);
            else ret = send_json(con, created ? 201 : 200, cf_worker_connector_json(r->w, name));
        } else {
            ret = METHOD_NOT_ALLOWED();
        }
        goto out;
    }
    if (n == 3 && strcmp(what, "status") == 0) {
        if (!get) { ret = METHOD_NOT_ALLOWED(); goto out; }
        char *s = cf_worker_connector_status_json(r->w, name);
        ret = s ? send_json(con, 200, s) : send_error(con, 404, "Connector %s not found", name);
        goto out;
    }
    if (n == 3 && strcmp(what, "tasks") == 0) {
        if (!get) { ret = METHOD_NOT_ALLOWED(); goto out; }
        char *info = cf_worker_connector_json(r->w, name);
        if (!info) { ret = send_error(con, 404, "Connector %s not found", name); goto out; }
        json_t *o = json_loads(info, 0, NULL), *a = json_array(), *t;
        free(info);
        size_t i;
        json_array_foreach(json_object_get(o, "tasks"), i, t)
            json_array_append_new(a, json_pack("{s:O,s:O}", "id", t, "config", json_object_get(o, "config")));
        json_decref(o);
        ret = send_json(con, 200, json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER));
        json_decref(a);
        goto out;
    }
    if (n == 3 && (strcmp(what, "pause") == 0 || strcmp(what, "resume") == 0)) {
        if (!put) { ret = METHOD_NOT_ALLOWED(); goto out; }
        cf_code rc = what[0] == 'p' ? cf_worker_pause_connector(r->w, name, &err)
                                    : cf_worker_resume_connector(r->w, name, &err);
        ret = rc ? send_cf_err(con, &err) : send_text(con, 202, NULL, NULL);
        goto out;
    }
    if (n == 3 && strcmp(what, "restart") == 0) {
        if (!post) { ret = METHOD_NOT_ALLOWED(); goto out; }
        bool include_tasks = qbool(con, "includeTasks"), only_failed = qbool(con, "onlyFailed");
        if (cf_worker_restart_connector(r->w, name, only_failed, &err)) {
            ret = send_cf_err(con, &err);
        } else if (!include_tasks && !only_failed) {
            ret = send_text(con, 204, NULL, NULL);
        } else {
            ret = send_json(con, 202, cf_worker_connector_status_json(r->w, name));
        }
        goto out;
    }
    if (n == 5 && strcmp(what, "tasks") == 0 && strcmp(seg[4], "restart") == 0) {
        if (!post) { ret = METHOD_NOT_ALLOWED(); goto out; }
        /* tasks share one configuration: restarting one restarts the failed ones */
        ret = cf_worker_restart_connector(r->w, name, true, &err) ? send_cf_err(con, &err)
                                                                  : send_text(con, 204, NULL, NULL);
        goto out;
    }
    ret = send_error(con, 404, "HTTP 404 Not Found");
out:
    free(path);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *con, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)version;
    cf_rest *r = cls;
    if (!*con_cls) {
        req *q = cf_xcalloc(1, sizeof *q);
        *con_cls = q;
        return MHD_YES;
    }
    req *q = *con_cls;
    if (*upload_size) {
        if (q->body.len + *upload_size > MAX_BODY) q->too_big = true;
        else cf_buf_append(&q->body, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (!token_ok(r, con)) return send_error(con, 401, "Missing or invalid bearer token (rest.auth.token)");
    if (q->too_big) return send_error(con, 413, "Request body larger than %u bytes", MAX_BODY);
    CF_DEBUG("rest", "%s %s", method, url);
    return route(r, con, method, url, q->body.data ? q->body.data : "", q->body.len);
}

static void completed(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)con, (void)toe;
    req *q = *con_cls;
    if (q) {
        cf_buf_free(&q->body);
        free(q);
    }
    *con_cls = NULL;
}

/* "http://host:port" -> host, port, https */
static cf_code parse_listener(const char *l, char *host, size_t hs, int *port, bool *https, cf_err *err) {
    const char *p = l;
    if (strncasecmp(p, "http://", 7) == 0) p += 7, *https = false;
    else if (strncasecmp(p, "https://", 8) == 0) p += 8, *https = true;
    else goto bad;
    const char *colon = strrchr(p, ':');
    if (!colon) goto bad;
    size_t hl = (size_t)(colon - p);
    if (hl >= hs) goto bad;
    memcpy(host, p, hl);
    host[hl] = 0;
    char *end;
    long v = strtol(colon + 1, &end, 10);
    if (*end || v < 0 || v > 65535) goto bad;
    *port = (int)v;
    if (!*host) snprintf(host, hs, "0.0.0.0");
    return CF_OK;
bad:
    cf_err_set(err, CF_ERR_CONFIG, "invalid listeners value \"%s\"", l);
    cf_err_hint(err, "Use http://HOST:PORT or https://HOST:PORT, e.g. http://127.0.0.1:8083.");
    return CF_ERR_CONFIG;
}

cf_code cf_rest_start(cf_worker *w, const cf_config *cfg, cf_rest **out, cf_err *err) {
    char host[256];
    snprintf(host, sizeof host, "%s", cf_config_string(cfg, "rest.host.name"));
    int port = (int)cf_config_int(cfg, "rest.port");
    bool https = false;
    size_t nl = 0;
    const char *const *ls = cf_config_list(cfg, "listeners", &nl);
    if (nl > 1) {
        cf_err_set(err, CF_ERR_CONFIG, "listeners: only one listener is supported");
        cf_err_detail(err, "got %zu", nl);
        return CF_ERR_CONFIG;
    }
    if (nl == 1 && parse_listener(ls[0], host, sizeof host, &port, &https, err)) return CF_ERR_CONFIG;
    cf_rest *r = cf_xcalloc(1, sizeof *r);
    r->w = w;
    const char *tok = cf_config_string(cfg, "rest.auth.token");
    if (tok && *tok) r->token = cf_xstrdup(tok);
    const char *certp = cf_config_string(cfg, "listeners.https.ssl.certificate.location");
    const char *keyp = cf_config_string(cfg, "listeners.https.ssl.key.location");
    if ((certp != NULL) != (keyp != NULL) || (https && !certp)) {
        cf_err_set(err, CF_ERR_CONFIG, "HTTPS needs both listeners.https.ssl.certificate.location and "
                                       "listeners.https.ssl.key.location");
        free(r->token);
        free(r);
        return CF_ERR_CONFIG;
    }
    if (certp) {
        if (!(r->cert = read_file(certp, err)) || !(r->key = read_file(keyp, err))) {
            free(r->cert), free(r->token), free(r);
            return CF_ERR_CONFIG;
        }
        https = true;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        cf_err_set(err, CF_ERR_CONFIG, "rest.host.name \"%s\" is not an IPv4 address", host);
        cf_err_hint(err, "Use 127.0.0.1 (default), 0.0.0.0 or another IPv4 address of this machine.");
        free(r->cert), free(r->key), free(r->token), free(r);
        return CF_ERR_CONFIG;
    }
    if (https && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "this libmicrohttpd has no TLS support: the REST API cannot speak HTTPS");
        cf_err_hint(err, "Use an http:// listener on 127.0.0.1 (and a TLS proxy in front if needed).");
        free(r->cert), free(r->key), free(r->token), free(r);
        return CF_ERR_UNSUPPORTED;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (https) flags |= MHD_USE_TLS;
    if (https)
        r->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handler, r, MHD_OPTION_SOCK_ADDR, &sa,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_HTTPS_MEM_CERT, r->cert,
                                MHD_OPTION_HTTPS_MEM_KEY, r->key, MHD_OPTION_END);
    else
        r->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handler, r, MHD_OPTION_SOCK_ADDR, &sa,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!r->d) {
        cf_err_set(err, CF_ERR_IO, "cannot start the REST server on %s:%d", host, port);
        cf_err_hint(err, "Is the port in use? Set rest.port (0 picks a free port) or listeners.");
        free(r->cert), free(r->key), free(r->token), free(r);
        return CF_ERR_IO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(r->d, MHD_DAEMON_INFO_BIND_PORT);
    r->port = info ? info->port : port;
    CF_INFO("rest", "REST API on %s://%s:%d%s", https ? "https" : "http", host, r->port,
            r->token ? " (bearer token required)" : "");
    *out = r;
    return CF_OK;
}

int cf_rest_port(const cf_rest *r) { return r->port; }

void cf_rest_stop(cf_rest *r) {
    if (!r) return;
    MHD_stop_daemon(r->d);
    free(r->cert);
    free(r->key);
    free(r->token);
    free(r);
}
