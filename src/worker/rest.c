/*
 * rest.c - the worker's REST API: the subset of Kafka Connect's that a
 * standalone worker needs, with Connect's paths, status codes and error
 * bodies ({"error_code": <http status>, "message": "..."}), plus
 * GET /metrics in Prometheus' text format.
 *
 *   GET    /                                  version
 *   GET    /connectors                        ["name", ...]  (?expand=status, ?expand=info, both)
 *   POST   /connectors                        {"name","config"} -> 201, 409 if it exists
 *   GET    /connectors/{name}                 {name, config, tasks, type}
 *   GET    /connectors/{name}/config
 *   PUT    /connectors/{name}/config          flat config -> 201 created / 200 updated
 *   GET    /connectors/{name}/status
 *   GET    /connectors/{name}/tasks           [{id:{connector,task}, config}]
 *   PUT    /connectors/{name}/pause|resume    202 (of a STOPPED connector: its tasks start, paused for pause)
 *   PUT    /connectors/{name}/stop            204 (KIP-875): tasks stopped, config kept; status STOPPED, no tasks
 *   GET    /connectors/{name}/offsets         {"offsets":[{partition, offset}]} (KIP-875; sources' stored offsets,
 *                                             sinks' committed group offsets; 501 for a sink reading no Kafka)
 *   PATCH  /connectors/{name}/offsets         {"offsets":[{partition, offset|null}]} -> 200 {"message"} (KIP-875;
 *                                             STOPPED only, else 400; sinks: group + target positions,
 *                                             501 for a sink reading no Kafka)
 *   DELETE /connectors/{name}/offsets         200 {"message"}: every offset removed (same conditions)
 *   GET    /connectors/{name}/topics          {"<name>": {"topics": [...]}}: produced to / consumed from
 *   PUT    /connectors/{name}/topics/reset    202, empty body: that set emptied (403 when topic.tracking.enable
 *                                             or topic.tracking.allow.reset is false, as Connect)
 *   POST   /connectors/{name}/restart         204 (or 202 + status with includeTasks/onlyFailed)
 *   GET    /connectors/{name}/tasks/{id}/status   {id, state, worker_id[, trace]}; 404 unknown task
 *   POST   /connectors/{name}/tasks/{id}/restart  204 (that task only); 404 unknown task
 *   DELETE /connectors/{name}                 204
 *   GET    /connector-plugins                 [{class, type, version}]
 *   PUT    /connector-plugins/{plugin}/config/validate  flat config -> 200 ConfigInfos {name, error_count,
 *                                             groups, configs:[{definition, value:{errors}}]}, every problem
 *   GET    /admin/loggers                     {"<logger>": {level, last_modified}, "root": {...}}
 *   GET    /admin/loggers/{name}              {level, last_modified}; 404 unknown logger
 *   PUT    /admin/loggers/{name}              {"level": "DEBUG"} -> 200 [changed loggers] (?scope=cluster: 204)
 *   GET    /metrics                           text/plain; version=0.0.4
 *   (and the paths of cf_worker_opts.routes, for other modules)
 *   GET    /health                            {"status":"UP"|"DOWN",...}: 200 when UP, 503 when a
 *                                             task failed or a Schema Registry is unreachable
 *
 * A small pool of libmicrohttpd threads (rest.threads, epoll) serves
 * requests. It binds 127.0.0.1 by default (rest.host.name / listeners);
 * with rest.auth.token every request needs "Authorization: Bearer <token>"
 * (401 otherwise, compared in constant time); with a certificate and key it
 * speaks HTTPS.
 *
 * SAFE TO EXPOSE (issue 15; docs/operations.md, "REST API safety"), before
 * any route runs:
 *   - Host: a loopback listener answers only a loopback Host (127.x, localhost,
 *     [::1], any port): 421 otherwise, so a page whose name was rebound to
 *     127.0.0.1 (DNS rebinding) reaches nothing;
 *   - Origin: a request with an Origin other than the listener's own
 *     (scheme://Host) is refused (403) unless access.control.allow.origin
 *     (Connect's: a list or *) names it; those get Access-Control-Allow-Origin
 *     and a preflight answer (OPTIONS, access.control.allow.methods);
 *   - bodies must be Content-Type: application/json (415 otherwise, as
 *     Connect's Jersey resources): a cross-site form or no-preflight fetch()
 *     can only send text/plain, form or multipart bodies;
 *   - paths are decoded segment by segment (our own unescape callback), so
 *     %2F and %00 stay inside the connector name they are in: such a name
 *     matches no connector (names with '/', NUL or control characters are
 *     refused at creation, connectors.c);
 *   - slow clients: an idle timeout per connection
 *     (rest.connection.idle.timeout.ms), a deadline for the request head
 *     (rest.request.header.timeout.ms, from the accept or the end of the
 *     last request, however slowly bytes trickle in), a connection limit and a per-IP limit (rest.connections.max,
 *     rest.connections.max.per.ip). At a limit the connection idle longest
 *     that is not in a request (half-open, or keep-alive between requests)
 *     is closed to make room, so held connections cannot lock real requests
 *     out; only when every connection is in a request is the new one refused.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/text.h"
#include "cdcflow/version.h"
#include "worker_internal.h"

#define MAX_BODY (1u << 20)

/* One accepted TCP connection (the socket context of libmicrohttpd). */
typedef struct slot {
    bool used;
    bool evicted;      /* shut down to make room; gone at its CLOSED notification */
    bool busy;         /* a request is being answered: never evicted */
    int fd;
    unsigned char ip[17]; /* family byte + address */
    int64_t last_us;   /* accepted, or the last request ended */
    char acao[300];    /* Access-Control-Allow-Origin of the current answer ("" none) */
} slot;

struct cf_rest {
    struct MHD_Daemon *d;
    cf_worker *w;
    char *token;
    char *cert, *key;
    int port;
    bool loopback;          /* bound to 127.0.0.0/8: Host must be a loopback name */
    bool https;
    char **allow_origins;   /* access.control.allow.origin items; "*" any */
    size_t n_allow_origins;
    char *allow_methods;    /* access.control.allow.methods, or Jetty's default */
    /* connection accounting (slots: every accepted connection) */
    pthread_mutex_t mu;
    /* Requests that change something run one at a time, as with the single
     * thread before the pool: "exists? then create, else update" (PUT
     * .../config, the sidecar's PUT) must not interleave. Reads run in
     * parallel. */
    pthread_mutex_t ops;
    slot *slots;
    size_t n_slots;
    size_t max_conns, max_per_ip;
    int64_t warned_us; /* last WARN about the limits (at most one a minute) */
    /* the request head deadline: a sweeper closes connections that have not
     * completed a request head this long after they were accepted or their
     * last request ended, however slowly they trickle bytes */
    int64_t header_timeout_us;
    pthread_t sweeper;
    bool sweeper_started, stopping;
    pthread_cond_t stop_cv;
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

static slot *conn_slot(struct MHD_Connection *con) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? (slot *)ci->socket_context : NULL;
}

/* Headers every answer carries: the CORS answer of an allowed origin. */
static void common_headers(struct MHD_Connection *con, struct MHD_Response *r) {
    slot *sl = conn_slot(con);
    if (sl && sl->acao[0]) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", sl->acao);
        MHD_add_response_header(r, "Vary", "Origin");
    }
}

static enum MHD_Result send_text(struct MHD_Connection *con, unsigned status, const char *ctype, char *text) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(text ? strlen(text) : 0, text ? text : (char *)"", text ? MHD_RESPMEM_MUST_FREE
                                                                                                : MHD_RESPMEM_PERSISTENT);
    common_headers(con, r);
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
    /* as long as it is: a list of problems is never cut */
    cf_buf b = CF_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    cf_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    json_t *o = json_pack("{s:i,s:s%}", "error_code", (int)status, "message", b.data ? b.data : "", b.len);
    cf_buf_free(&b);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return send_json(con, status, s);
}

/* Create and config requests carry a JSON object: false (with the 400
 * answer queued in *ret) when the body is not JSON or not an object. */
static bool body_is_json_object(struct MHD_Connection *con, const char *body, size_t body_len, enum MHD_Result *ret) {
    json_error_t je;
    json_t *j = json_loadb(body, body_len, JSON_ALLOW_NUL, &je); /* a \u0000 is reported by cf_props_from_json */
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
/* An invalid config (create, PUT .../config) lists every problem, as
 * Connect's "Connector configuration is invalid and contains the following
 * N error(s)", found by the validate endpoint's checks (cf_err's detail
 * holds 512 bytes only). */
static enum MHD_Result send_config_err(cf_rest *r, struct MHD_Connection *con, const char *name, const cf_props *props,
                                       cf_err *e) {
    if (e->code == CF_ERR_NOT_FOUND && strstr(e->message, "connector.class")) e->code = CF_ERR_CONFIG;
    /* only for the problems of the settings (a bad name, for one, is its own answer) */
    bool settings = strncmp(e->message, "invalid configuration of connector", 34) == 0 ||
                    strncmp(e->message, "unknown connector.class", 23) == 0;
    if (e->code != CF_ERR_CONFIG || !props || !settings) return send_cf_err(con, e);
    cf_props *p = cf_props_clone(props);
    if (name && !cf_props_get(p, "name")) cf_props_set(p, "name", name);
    cf_buf lines = CF_BUF_INIT;
    int n = cf_worker_config_problems(r->w, p, &lines);
    cf_props_destroy(p);
    if (n <= 0) {
        cf_buf_free(&lines);
        return send_cf_err(con, e);
    }
    const char *cls = cf_props_get(props, "connector.class");
    enum MHD_Result ret = send_error(con, 400,
                                     "Connector configuration is invalid and contains the following %d error(s):\n%s"
                                     "You can also find the above list of errors at the endpoint "
                                     "`/connector-plugins/{connectorType}/config/validate`%s%s%s",
                                     n, lines.data, cls ? " (connectorType: " : "", cls ? cls : "", cls ? ")" : "");
    cf_buf_free(&lines);
    return ret;
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

/* %XX-decode in place (MHD's rule: a malformed escape stays as it is);
 * returns the length, which may include NULs. */
static size_t pct_decode(char *s) {
    char *o = s;
    for (const char *p = s; *p; p++) {
        int h, l;
        if (*p == '%' && (h = cf_hex_digit((unsigned char)p[1])) >= 0 && (l = cf_hex_digit((unsigned char)p[2])) >= 0) {
            *o++ = (char)(h * 16 + l);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return (size_t)(o - s);
}

/* The unescape callback: leave paths and arguments as sent, so that a
 * path is cut at its '/' before %2F is decoded (split_path), and %00 is seen. */
static size_t keep_escaped(void *cls, struct MHD_Connection *con, char *s) {
    (void)cls, (void)con;
    return strlen(s);
}

/* Split the raw "/connectors/a%2Fb/config" at its '/' (in place in a copy)
 * and decode each segment: seg[i] is then "a/b"; nul[i] when the decoded
 * segment holds a NUL (it ends the C string early: such a name is no name). */
static size_t split_path(char *p, char **seg, bool *nul, size_t max) {
    size_t n = 0;
    for (char *s = strtok(p, "/"); s && n < max; s = strtok(NULL, "/")) {
        size_t len = pct_decode(s);
        nul[n] = strlen(s) != len;
        seg[n++] = s;
    }
    return n;
}

/* A query argument, decoded into buf (arguments reach us escaped). */
static const char *arg(struct MHD_Connection *con, const char *key, char *buf, size_t size) {
    const char *v = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, key);
    if (!v) return NULL;
    snprintf(buf, size, "%s", v);
    pct_decode(buf);
    return buf;
}

static bool qbool(struct MHD_Connection *con, const char *key) {
    char buf[64];
    const char *v = arg(con, key, buf, sizeof buf);
    return v && strcasecmp(v, "true") == 0;
}

/* A task number as Connect's int path parameter: decimal digits only. */
static bool task_number(const char *s, int *out) {
    if (!*s || strlen(s) > 9) return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return false;
    *out = atoi(s);
    return true;
}

typedef struct expand_args {
    bool status, info;
} expand_args;

/* Each ?expand=... value (libmicrohttpd calls once per occurrence; values
 * reach us escaped, keep_escaped). */
static enum MHD_Result expand_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    expand_args *x = cls;
    if (strcmp(key, "expand") != 0 || !value) return MHD_YES;
    char v[64];
    snprintf(v, sizeof v, "%s", value);
    pct_decode(v);
    if (strcmp(v, "status") == 0) x->status = true;
    else if (strcmp(v, "info") == 0) x->info = true;
    return MHD_YES;
}

static enum MHD_Result connectors_expanded(cf_rest *r, struct MHD_Connection *con) {
    /* expand may be repeated, as Connect's @QueryParam List<String>:
     * ?expand=status&expand=info gives both members per connector */
    expand_args x = {0};
    MHD_get_connection_values(con, MHD_GET_ARGUMENT_KIND, expand_arg, &x);
    bool st = x.status, info = x.info;
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

/* Connect's level names (log4j's): FATAL is our ERROR, ALL our TRACE. */
static bool connect_level(const char *s, cf_log_level *out) {
    static const struct {
        const char *name;
        cf_log_level level;
    } names[] = {{"ALL", CF_LOG_TRACE}, {"TRACE", CF_LOG_TRACE}, {"DEBUG", CF_LOG_DEBUG}, {"INFO", CF_LOG_INFO},
                 {"WARN", CF_LOG_WARN}, {"ERROR", CF_LOG_ERROR}, {"FATAL", CF_LOG_ERROR}, {"OFF", CF_LOG_OFF}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(s, names[i].name) == 0) return *out = names[i].level, true;
    return false;
}

/* /admin/loggers (KIP-495, KIP-976): the levels of the components' loggers
 * (the [name] of a log line) and of "root", changed at run time. */
static enum MHD_Result loggers_route(struct MHD_Connection *con, bool get, bool put, const char *name, bool nul,
                                     const char *body, size_t body_len) {
    if (!name) {
        if (!get) return send_error(con, 405, "HTTP 405 Method Not Allowed");
        return send_json(con, 200, cf_log_loggers_json());
    }
    if (nul) return send_error(con, 404, "Logger %s%%00... not found.", name);
    if (get) {
        char *s = cf_log_logger_json(name);
        return s ? send_json(con, 200, s) : send_error(con, 404, "Logger %s not found.", name);
    }
    if (!put) return send_error(con, 405, "HTTP 405 Method Not Allowed");
    enum MHD_Result ret;
    if (!body_is_json_object(con, body, body_len, &ret)) return ret;
    json_t *j = json_loadb(body, body_len, 0, NULL);
    const char *lv = json_string_value(json_object_get(j, "level"));
    cf_log_level level;
    char scope[32];
    if (!lv) {
        ret = send_error(con, 400, "Desired 'level' parameter was not specified in request.");
    } else if (!connect_level(lv, &level)) {
        /* Connect answers 404 here (its NotFoundException) */
        ret = send_error(con, 404, "invalid log level '%s'.", lv);
    } else {
        char **changed = NULL;
        size_t k = cf_log_logger_set(name, level, &changed);
        if (k == 0) {
            ret = send_error(con, 400, "Logger name \"%s\" cannot be set: names are at most 63 bytes (and at most "
                                       "256 loggers)", name);
        } else {
            CF_INFO("rest", "log level of %s set to %s (%zu logger%s)", name, cf_log_level_name(level), k,
                    k == 1 ? "" : "s");
            const char *sc = arg(con, "scope", scope, sizeof scope);
            if (sc && strcasecmp(sc, "cluster") == 0) {
                /* a standalone worker is the whole cluster; Connect answers 204 */
                ret = send_text(con, 204, NULL, NULL);
            } else {
                json_t *a = json_array();
                for (size_t i = 0; i < k; i++) json_array_append_new(a, json_string(changed[i]));
                ret = send_json(con, 200, json_dumps(a, JSON_COMPACT));
                json_decref(a);
            }
        }
        for (size_t i = 0; i < k; i++) free(changed[i]);
        free(changed);
    }
    json_decref(j);
    return ret;
}

static enum MHD_Result route(cf_rest *r, struct MHD_Connection *con, const char *method, const char *url,
                             const char *body, size_t body_len) {
    char *path = cf_xstrdup(url);
    char *seg[8];
    bool nul[8];
    size_t n = split_path(path, seg, nul, 8);
    enum MHD_Result ret;
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0, put = strcmp(method, "PUT") == 0,
         del = strcmp(method, "DELETE") == 0, patch = strcmp(method, "PATCH") == 0;
    cf_err err;
    cf_err_clear(&err);
#define METHOD_NOT_ALLOWED() send_error(con, 405, "HTTP 405 Method Not Allowed")
    size_t nr;
    const cf_worker_route *routes = cf_worker_routes(r->w, &nr);
    /* paths of other modules (cf_worker_opts.routes) get the URL decoded, as
     * libmicrohttpd would have (a %00 ends it) */
    char *durl = cf_xstrdup(url);
    pct_decode(durl);
    for (size_t i = 0; i < nr; i++) {
        if (strncmp(durl, routes[i].prefix, strlen(routes[i].prefix)) != 0) continue;
        cf_buf b = CF_BUF_INIT;
        const char *ctype = NULL;
        int status = routes[i].handle(routes[i].arg, r->w, method, durl, body, body_len, &ctype, &b);
        if (status) {
            free(durl);
            ret = send_text(con, (unsigned)status, ctype ? ctype : "application/json", b.data ? cf_buf_detach(&b, NULL) : NULL);
            goto out;
        }
        cf_buf_free(&b);
    }
    free(durl);
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
    if (strcmp(seg[0], "admin") == 0 && n >= 2 && strcmp(seg[1], "loggers") == 0 && n <= 3) {
        ret = loggers_route(con, get, put, n == 3 ? seg[2] : NULL, n == 3 && nul[2], body, body_len);
        goto out;
    }
    if (n == 4 && strcmp(seg[0], "connector-plugins") == 0 && strcmp(seg[2], "config") == 0 &&
        strcmp(seg[3], "validate") == 0) {
        if (!put) { ret = METHOD_NOT_ALLOWED(); goto out; }
        if (!body_is_json_object(con, body, body_len, &ret)) goto out;
        cf_props *props = NULL;
        char *bn = NULL;
        /* the body is the flat config (Connect's Map<String, String>) */
        if (cf_props_from_json(body, body_len, &props, &bn, &err)) {
            ret = send_error(con, 400, "%s%s%s", err.message, err.detail[0] ? ": " : "", err.detail);
            goto out;
        }
        free(bn);
        char *s = nul[1] ? NULL : cf_worker_validate_json(r->w, seg[1], props, &err);
        if (nul[1]) ret = send_error(con, 404, "HTTP 404 Not Found");
        else ret = s ? send_json(con, 200, s) : send_cf_err(con, &err);
        cf_props_destroy(props);
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
            if (!name) {
                cf_props_destroy(props);
                ret = send_error(con, 400, "Connector config must contain a \"name\"");
                goto out;
            }
            if (cf_worker_add_connector(r->w, name, props, &err)) {
                ret = send_config_err(r, con, name, props, &err);
            } else {
                char *info = cf_worker_connector_json(r->w, name);
                struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(info), info, MHD_RESPMEM_MUST_FREE);
                MHD_add_response_header(resp, "Content-Type", "application/json");
                common_headers(con, resp);
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
    if (nul[1]) {
        /* "x%00": no connector has a NUL in its name (nor can get one) */
        if (n == 3 && put && strcmp(seg[2], "config") == 0)
            ret = send_error(con, 400, "connector name contains NUL (%%00, at byte %zu): choose a name of letters, "
                                       "digits, '-', '_' and '.' (no '/', NUL or control characters, not empty)",
                             strlen(name));
        else
            ret = send_error(con, 404, "Connector %s%%00... not found (no connector name holds NUL)", name);
        goto out;
    }
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
            if (rc) ret = send_config_err(r, con, name, props, &err);
            else ret = send_json(con, created ? 201 : 200, cf_worker_connector_json(r->w, name));
            cf_props_destroy(props);
        } else {
            ret = METHOD_NOT_ALLOWED();
        }
        goto out;
    }
    if (n == 3 && strcmp(what, "offsets") == 0) {
        char *s = NULL, *msg = NULL;
        if (get) {
            s = cf_worker_connector_offsets_json(r->w, name, &err);
        } else if (patch || del) {
            if (patch && !body_is_json_object(con, body, body_len, &ret)) goto out;
            cf_code rc = patch ? cf_worker_alter_connector_offsets(r->w, name, body, body_len, &msg, &err)
                               : cf_worker_reset_connector_offsets(r->w, name, &msg, &err);
            if (!rc) {
                json_t *o = json_pack("{s:s}", "message", msg);
                free(msg);
                s = json_dumps(o, JSON_COMPACT);
                json_decref(o);
            }
        } else {
            ret = METHOD_NOT_ALLOWED();
            goto out;
        }
        if (s) ret = send_json(con, 200, s);
        else if (err.code == CF_ERR_UNSUPPORTED) ret = send_error(con, 501, "%s%s%s", err.message, err.detail[0] ? ": " : "", err.detail);
        else ret = send_cf_err(con, &err);
        goto out;
    }
    if (n == 3 && strcmp(what, "stop") == 0) {
        if (!put) { ret = METHOD_NOT_ALLOWED(); goto out; }
        /* Connect's stopConnector is a void method: 204 */
        ret = cf_worker_stop_connector(r->w, name, &err) ? send_cf_err(con, &err) : send_text(con, 204, NULL, NULL);
        goto out;
    }
    if ((n == 3 && strcmp(what, "topics") == 0) || (n == 4 && strcmp(what, "topics") == 0 && strcmp(seg[3], "reset") == 0)) {
        bool reset = n == 4;
        if (reset ? !put : !get) { ret = METHOD_NOT_ALLOWED(); goto out; }
        /* Connect's 403s (ConnectorsResource) */
        const cf_config *wc = cf_worker_config(r->w);
        if (!cf_config_bool(wc, "topic.tracking.enable")) {
            ret = send_error(con, 403, "Topic tracking is disabled.");
        } else if (reset && !cf_config_bool(wc, "topic.tracking.allow.reset")) {
            ret = send_error(con, 403, "Topic tracking reset is disabled.");
        } else if (!reset) {
            char *s = cf_worker_connector_topics_json(r->w, name);
            ret = s ? send_json(con, 200, s) : send_error(con, 404, "Connector %s not found", name);
        } else {
            /* Connect: Response.accepted(), no body */
            ret = cf_worker_reset_connector_topics(r->w, name, &err) ? send_cf_err(con, &err)
                                                                      : send_text(con, 202, NULL, NULL);
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
    if (n == 5 && strcmp(what, "tasks") == 0 && (strcmp(seg[4], "restart") == 0 || strcmp(seg[4], "status") == 0)) {
        int tid = -1;
        /* Connect's {task} is an int path parameter: anything else is 404 */
        if (!task_number(seg[3], &tid) || nul[3]) {
            ret = send_error(con, 404, "HTTP 404 Not Found");
            goto out;
        }
        if (seg[4][0] == 's') {
            if (!get) { ret = METHOD_NOT_ALLOWED(); goto out; }
            char *s = cf_worker_task_status_json(r->w, name, tid);
            ret = s ? send_json(con, 200, s) : send_error(con, 404, "No status found for task %s-%d", name, tid);
        } else {
            if (!post) { ret = METHOD_NOT_ALLOWED(); goto out; }
            ret = cf_worker_restart_task(r->w, name, tid, &err) ? send_cf_err(con, &err)
                                                                : send_text(con, 204, NULL, NULL);
        }
        goto out;
    }
    ret = send_error(con, 404, "HTTP 404 Not Found");
out:
    free(path);
    return ret;
}

/* ---------------- who may ask: Host, Origin, Content-Type ---------------- */

/* A Host header naming loopback: 127.x.y.z, localhost or [::1], with or
 * without a port. */
static bool loopback_host(const char *h) {
    char name[256];
    const char *port = NULL;
    if (h[0] == '[') {
        const char *e = strchr(h, ']');
        if (!e || (size_t)(e - h) >= sizeof name) return false;
        snprintf(name, sizeof name, "%.*s", (int)(e - h - 1), h + 1);
        if (e[1] == ':') port = e + 2;
        else if (e[1]) return false;
    } else {
        const char *c = strchr(h, ':');
        size_t l = c ? (size_t)(c - h) : strlen(h);
        if (l >= sizeof name) return false;
        snprintf(name, sizeof name, "%.*s", (int)l, h);
        if (c) port = c + 1;
    }
    if (port) {
        if (!*port) return false;
        for (const char *p = port; *p; p++)
            if (!isdigit((unsigned char)*p)) return false;
    }
    if (strcasecmp(name, "localhost") == 0 || strcmp(name, "::1") == 0) return true;
    struct in_addr a;
    return inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* The media type of a Content-Type, without parameters, is application/json. */
static bool json_media_type(const char *ct) {
    while (*ct == ' ' || *ct == '\t') ct++;
    size_t l = strcspn(ct, ";");
    while (l && (ct[l - 1] == ' ' || ct[l - 1] == '\t')) l--;
    return l == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

static bool origin_listed(const cf_rest *r, const char *origin, bool *any) {
    *any = false;
    for (size_t i = 0; i < r->n_allow_origins; i++) {
        if (strcmp(r->allow_origins[i], "*") == 0) return *any = true;
        if (strcasecmp(r->allow_origins[i], origin) == 0) return true;
    }
    return false;
}

/* Everything checked before a route runs. false: the answer is queued in *ret. */
static bool admitted(cf_rest *r, struct MHD_Connection *con, const char *method, const req *q,
                     enum MHD_Result *ret) {
    const char *host = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Host");
    if (r->loopback && host && !loopback_host(host)) {
        *ret = send_error(con, 421,
                          "Host \"%s\" is not a loopback name: this API listens on loopback and answers requests for "
                          "127.0.0.1, localhost or [::1] only (another name resolved to this machine is DNS "
                          "rebinding); to serve other names bind rest.host.name beyond loopback, with "
                          "rest.auth.token", host);
        return false;
    }
    const char *origin = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Origin");
    if (origin) {
        char own[600];
        snprintf(own, sizeof own, "%s://%s", r->https ? "https" : "http", host ? host : "");
        bool any = false, listed = origin_listed(r, origin, &any);
        if (!listed && !(host && strcasecmp(origin, own) == 0)) {
            *ret = send_error(con, 403,
                              "Origin \"%s\" is not allowed: requests from a web page of another origin are refused "
                              "unless access.control.allow.origin lists that origin (or is *)", origin);
            return false;
        }
        slot *sl = conn_slot(con);
        if (listed && sl) snprintf(sl->acao, sizeof sl->acao, "%s", any ? "*" : origin);
        if (listed && strcmp(method, "OPTIONS") == 0 &&
            MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Access-Control-Request-Method")) {
            /* a preflight, answered as Jetty's CrossOriginFilter does for Connect */
            struct MHD_Response *resp = MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
            common_headers(con, resp);
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", r->allow_methods);
            MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                    "X-Requested-With,Content-Type,Accept,Origin,Authorization");
            MHD_add_response_header(resp, "Access-Control-Max-Age", "1800");
            *ret = MHD_queue_response(con, 204, resp);
            MHD_destroy_response(resp);
            return false;
        }
    }
    if (!token_ok(r, con)) {
        *ret = send_error(con, 401, "Missing or invalid bearer token (rest.auth.token)");
        return false;
    }
    if (q->too_big) {
        *ret = send_error(con, 413, "Request body larger than %u bytes", MAX_BODY);
        return false;
    }
    if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0) {
        const char *ct = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Type");
        if (ct ? !json_media_type(ct) : q->body.len > 0) {
            *ret = send_error(con, 415,
                              "HTTP 415 Unsupported Media Type: request bodies must be sent as Content-Type: "
                              "application/json (got %s%s%s)", ct ? "\"" : "", ct ? ct : "no Content-Type",
                              ct ? "\"" : "");
            return false;
        }
    }
    return true;
}

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *con, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)version;
    cf_rest *r = cls;
    if (!*con_cls) {
        req *q = cf_xcalloc(1, sizeof *q);
        *con_cls = q;
        slot *sl = conn_slot(con);
        if (sl) {
            pthread_mutex_lock(&r->mu);
            sl->busy = true; /* the head is in: a request, not a held connection */
            sl->acao[0] = '\0';
            pthread_mutex_unlock(&r->mu);
        }
        return MHD_YES;
    }
    req *q = *con_cls;
    if (*upload_size) {
        if (q->body.len + *upload_size > MAX_BODY) q->too_big = true;
        else cf_buf_append(&q->body, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    enum MHD_Result ret;
    if (!admitted(r, con, method, q, &ret)) return ret;
    CF_DEBUG("rest", "%s %s", method, url);
    bool changes = strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
    if (changes) pthread_mutex_lock(&r->ops);
    ret = route(r, con, method, url, q->body.data ? q->body.data : "", q->body.len);
    if (changes) pthread_mutex_unlock(&r->ops);
    return ret;
}

static void completed(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)toe;
    cf_rest *r = cls;
    req *q = *con_cls;
    if (q) {
        cf_buf_free(&q->body);
        free(q);
    }
    *con_cls = NULL;
    slot *sl = con ? conn_slot(con) : NULL;
    if (sl) {
        pthread_mutex_lock(&r->mu);
        sl->busy = false;
        sl->last_us = now_us();
        pthread_mutex_unlock(&r->mu);
    }
}

/* ---------------- connections: limits, eviction ---------------- */

static void ip_key(const struct sockaddr *a, unsigned char key[17]) {
    memset(key, 0, 17);
    if (!a) return;
    key[0] = (unsigned char)a->sa_family;
    if (a->sa_family == AF_INET) memcpy(key + 1, &((const struct sockaddr_in *)a)->sin_addr, 4);
    else if (a->sa_family == AF_INET6) memcpy(key + 1, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
}

/* Make room for one more connection (of ip) if a limit is reached: close the
 * connection idle longest that is not in a request (of ip when ip's limit
 * is the one reached). Under r->mu. false: no room (all are in requests). */
static bool make_room_locked(cf_rest *r, const unsigned char ip[17]) {
    size_t total = 0, same = 0;
    for (size_t i = 0; i < r->n_slots; i++) {
        const slot *sl = &r->slots[i];
        if (!sl->used || sl->evicted) continue;
        total++;
        if (memcmp(sl->ip, ip, 17) == 0) same++;
    }
    bool per_ip = r->max_per_ip && same >= r->max_per_ip;
    if (total < r->max_conns && !per_ip) return true;
    slot *victim = NULL;
    for (size_t i = 0; i < r->n_slots; i++) {
        slot *sl = &r->slots[i];
        if (!sl->used || sl->evicted || sl->busy) continue;
        if (per_ip && memcmp(sl->ip, ip, 17) != 0) continue;
        if (!victim || sl->last_us < victim->last_us) victim = sl;
    }
    if (!victim) return false;
    /* libmicrohttpd sees the end of the stream and closes it (the fd stays
     * open until its CLOSED notification, which takes r->mu first) */
    shutdown(victim->fd, SHUT_RDWR);
    victim->evicted = true;
    return true;
}

static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    (void)addrlen;
    cf_rest *r = cls;
    unsigned char ip[17];
    ip_key(addr, ip);
    pthread_mutex_lock(&r->mu);
    size_t before = 0;
    for (size_t i = 0; i < r->n_slots; i++) before += r->slots[i].evicted && r->slots[i].used;
    bool ok = make_room_locked(r, ip);
    size_t after = 0;
    for (size_t i = 0; i < r->n_slots; i++) after += r->slots[i].evicted && r->slots[i].used;
    bool warn = (!ok || after > before) && now_us() - r->warned_us > 60 * 1000000LL;
    if (warn) r->warned_us = now_us();
    pthread_mutex_unlock(&r->mu);
    /* one line a minute: a flood of connections must not flood the log too */
    if (warn)
        CF_WARN("rest", "REST connections at their limit (rest.connections.max=%zu, rest.connections.max.per.ip=%zu): "
                        "%s (logged at most once a minute)", r->max_conns, r->max_per_ip,
                ok ? "closing the connections idle longest that are not in a request"
                   : "refusing new ones, every connection is in a request");
    return ok ? MHD_YES : MHD_NO;
}

/* Once a second: shut down the connections whose request head is overdue
 * (not in a request, and accepted or idle since longer than the header
 * timeout). The idle timeout alone would let a client that sends one byte
 * every few seconds hold a connection for ever. */
static void *sweeper_main(void *arg) {
    cf_rest *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&r->stop_cv, &r->mu, &ts);
        int64_t now = now_us();
        for (size_t i = 0; i < r->n_slots; i++) {
            slot *sl = &r->slots[i];
            if (!sl->used || sl->evicted || sl->busy || now - sl->last_us <= r->header_timeout_us) continue;
            shutdown(sl->fd, SHUT_RDWR); /* the fd stays open until CLOSED, which takes r->mu */
            sl->evicted = true;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* libmicrohttpd's messages (a client that closed mid-request, ...) are
 * about clients, one per connection: debug lines, not a flood in the log. */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    if (!cf_log_enabled(CF_LOG_DEBUG)) return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t l = strlen(msg);
    while (l && (msg[l - 1] == '\n' || msg[l - 1] == '\r')) msg[--l] = '\0';
    CF_DEBUG("rest", "libmicrohttpd: %s", msg);
}

static void notify_connection(void *cls, struct MHD_Connection *con, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe) {
    cf_rest *r = cls;
    pthread_mutex_lock(&r->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        slot *sl = NULL;
        for (size_t i = 0; i < r->n_slots && !sl; i++)
            if (!r->slots[i].used) sl = &r->slots[i];
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (sl && fi) {
            memset(sl, 0, sizeof *sl);
            sl->used = true;
            sl->fd = fi->connect_fd;
            ip_key(ai ? ai->client_addr : NULL, sl->ip);
            sl->last_us = now_us();
        } else {
            sl = NULL;
        }
        *socket_context = sl;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        slot *sl = *socket_context;
        if (sl) sl->used = false;
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&r->mu);
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

static void rest_free(cf_rest *r) {
    if (!r) return;
    free(r->cert);
    free(r->key);
    free(r->token);
    for (size_t i = 0; i < r->n_allow_origins; i++) free(r->allow_origins[i]);
    free(r->allow_origins);
    free(r->allow_methods);
    free(r->slots);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->ops);
    pthread_cond_destroy(&r->stop_cv);
    free(r);
}

/* Descriptors for `want` connections: raise the soft limit toward the hard
 * one if needed (what the JVM does for Connect at start); returns how many
 * connections fit. */
static size_t fit_descriptors(size_t want) {
    const size_t reserve = 256; /* files, Kafka clients, sockets of the tasks */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return want;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want + reserve) {
        rlim_t target = (rlim_t)(want + reserve);
        if (rl.rlim_max != RLIM_INFINITY && target > rl.rlim_max) target = rl.rlim_max;
        if (target > rl.rlim_cur) {
            rl.rlim_cur = target;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want + reserve) return want;
    return rl.rlim_cur > reserve + 16 ? (size_t)(rl.rlim_cur - reserve) : 16;
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
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->ops, NULL);
    pthread_cond_init(&r->stop_cv, NULL);
    r->w = w;
    const char *tok = cf_config_string(cfg, "rest.auth.token");
    if (tok && *tok) r->token = cf_xstrdup(tok);
    size_t no = 0;
    const char *const *origins = cf_config_list(cfg, "access.control.allow.origin", &no);
    r->allow_origins = cf_xcalloc(no ? no : 1, sizeof(char *));
    for (size_t i = 0; i < no; i++) r->allow_origins[r->n_allow_origins++] = cf_xstrdup(origins[i]);
    const char *methods = cf_config_string(cfg, "access.control.allow.methods");
    r->allow_methods = cf_xstrdup(methods && *methods ? methods : "GET,POST,HEAD"); /* Jetty's default */
    const char *certp = cf_config_string(cfg, "listeners.https.ssl.certificate.location");
    const char *keyp = cf_config_string(cfg, "listeners.https.ssl.key.location");
    if ((certp != NULL) != (keyp != NULL) || (https && !certp)) {
        cf_err_set(err, CF_ERR_CONFIG, "HTTPS needs both listeners.https.ssl.certificate.location and "
                                       "listeners.https.ssl.key.location");
        rest_free(r);
        return CF_ERR_CONFIG;
    }
    if (certp) {
        if (!(r->cert = read_file(certp, err)) || !(r->key = read_file(keyp, err))) {
            rest_free(r);
            return CF_ERR_CONFIG;
        }
        https = true;
    }
    r->https = https;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        cf_err_set(err, CF_ERR_CONFIG, "rest.host.name \"%s\" is not an IPv4 address", host);
        cf_err_hint(err, "Use 127.0.0.1 (default), 0.0.0.0 or another IPv4 address of this machine.");
        rest_free(r);
        return CF_ERR_CONFIG;
    }
    r->loopback = (ntohl(sa.sin_addr.s_addr) >> 24) == 127;
    if (https && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "this libmicrohttpd has no TLS support: the REST API cannot speak HTTPS");
        cf_err_hint(err, "Use an http:// listener on 127.0.0.1 (and a TLS proxy in front if needed).");
        rest_free(r);
        return CF_ERR_UNSUPPORTED;
    }
    unsigned threads = (unsigned)cf_config_int(cfg, "rest.threads");
    unsigned idle_s = (unsigned)((cf_config_long(cfg, "rest.connection.idle.timeout.ms") + 999) / 1000);
    r->header_timeout_us = cf_config_long(cfg, "rest.request.header.timeout.ms") * 1000;
    r->max_conns = (size_t)cf_config_int(cfg, "rest.connections.max");
    r->max_per_ip = (size_t)cf_config_int(cfg, "rest.connections.max.per.ip");
    /* libmicrohttpd's own limit is the backstop above ours: connections shut
     * down to make room count there until they are closed, and it splits
     * its limit over the pool's threads */
    size_t mhd_limit = r->max_conns + r->max_conns / 2 + 16 * threads;
    size_t fits = fit_descriptors(mhd_limit);
    if (fits < mhd_limit) {
        size_t was = r->max_conns;
        r->max_conns = fits * 2 / 3 > 1 ? fits * 2 / 3 : 1;
        mhd_limit = fits;
        CF_WARN("rest", "rest.connections.max=%zu does not fit the descriptor limit (ulimit -n): %zu connections "
                        "at most", was, r->max_conns);
    }
    r->n_slots = mhd_limit;
    r->slots = cf_xcalloc(r->n_slots, sizeof *r->slots);
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG; /* epoll on Linux: no FD_SETSIZE limit */
    if (https) flags |= MHD_USE_TLS;
    struct MHD_OptionItem tls[] = {
        {https ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, r->cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, r->key},
        {MHD_OPTION_END, 0, NULL},
    };
    r->d = MHD_start_daemon(flags, (uint16_t)port, accept_policy, r, handler, r, MHD_OPTION_SOCK_ADDR, &sa,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, r, MHD_OPTION_NOTIFY_CONNECTION,
                            notify_connection, r, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                            MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)mhd_limit, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (!r->d) {
        cf_err_set(err, CF_ERR_IO, "cannot start the REST server on %s:%d", host, port);
        cf_err_hint(err, "Is the port in use? Set rest.port (0 picks a free port) or listeners.");
        rest_free(r);
        return CF_ERR_IO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(r->d, MHD_DAEMON_INFO_BIND_PORT);
    r->port = info ? info->port : port;
    r->sweeper_started = pthread_create(&r->sweeper, NULL, sweeper_main, r) == 0;
    CF_INFO("rest", "REST API on %s://%s:%d%s (%u threads, at most %zu connections, %zu per address)",
            https ? "https" : "http", host, r->port, r->token ? " (bearer token required)" : "", threads,
            r->max_conns, r->max_per_ip);
    if (!r->loopback && !r->token)
        CF_WARN("rest", "the REST API listens on %s:%d, beyond loopback, without rest.auth.token: anyone who "
                        "reaches this port can create, change and delete connectors; set rest.auth.token (and "
                        "HTTPS), or bind rest.host.name=127.0.0.1",
                host, r->port);
    *out = r;
    return CF_OK;
}

int cf_rest_port(const cf_rest *r) { return r->port; }

void cf_rest_stop(cf_rest *r) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    pthread_cond_signal(&r->stop_cv);
    pthread_mutex_unlock(&r->mu);
    if (r->sweeper_started) pthread_join(r->sweeper, NULL);
    MHD_stop_daemon(r->d);
    rest_free(r);
}
