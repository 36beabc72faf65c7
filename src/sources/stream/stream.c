/*
 * stream.c - the `stream` source: keyless lines from stdin, a FIFO or TCP
 * connections on loopback, each record keyed by a ULID.
 *
 * Keys: a ULID per record (48-bit ms time + 80 random bits, Crockford
 * base32, monotonic within a millisecond), so records sort by arrival and
 * keys never collide. Offsets: ONE offset key per stream,
 * {"stream": <stream.name>} -> {"ulid": <last ULID>, "recordCount": n}, so
 * the offsets topic does not grow by one key per message (Aiven's AMQP
 * source writes a new key for every message). On restart the generator
 * continues after the stored ULID, so keys stay increasing across restarts.
 *
 * Delivery: these inputs cannot be replayed. A line is taken from the pipe
 * or socket when it is read, so lines read but not yet acknowledged by the
 * transport when the process is killed are lost (documented in
 * docs/operations.md); a clean stop (SIGTERM) flushes them first.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdcflow/buf.h"
#include "cdcflow/connector.h"
#include "cdcflow/log.h"
#include "cdcflow/ulid.h"

#define COMP "stream"
#define MAX_CONNS 64
#define MAX_LINE (1024 * 1024)

typedef struct conn {
    int fd;
    cf_buf buf;       /* bytes of an incomplete line */
    bool overflow;    /* the current line passed MAX_LINE and is being discarded */
} conn;

typedef struct stream_task {
    cf_source_ctx *ctx;
    char *topic, *name, *type, *path;
    int listen_fd;
    conn conns[MAX_CONNS];
    int n_conns;
    cf_ulid_gen *gen;
    int64_t count;
    bool eof;
    cf_value *pm; /* the offset key, made at start, shared by every record */
} stream_task;

static const char *const stream_types[] = {"stdin", "fifo", "tcp", NULL};

static const cf_cfg_def stream_defs[] = {
    {"topic", CF_CFG_STRING, CF_CFG_REQUIRED, false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Stream",
     "Topic for every record."},
    {"stream.type", CF_CFG_STRING, "stdin", false, stream_types, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Stream",
     "Where lines come from: `stdin` (ends the run at end of input), `fifo` (a named pipe at `stream.path`, "
     "reopened when its writers go away) or `tcp` (connections to 127.0.0.1:`stream.port`)."},
    {"stream.path", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "Stream",
     "The FIFO for `stream.type=fifo` (created if missing)."},
    {"stream.port", CF_CFG_INT, "0", false, NULL, true, 0, 65535, NULL, CF_IMPORTANCE_MEDIUM, "Stream",
     "TCP port on 127.0.0.1 for `stream.type=tcp`."},
    {"stream.name", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Stream",
     "Name of the stream in its offset key `{\"stream\": name}`; default: the connector name."},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

const cf_cfg_table cf_stream_source_table = {
    "stream source",
    "`stream` source",
    "Keyless lines to records keyed by ULIDs: `\"connector.class\": \"stream\"`. One offset key per stream holds "
    "the last ULID.",
    stream_defs,
    NULL,
};

static void add_conn(stream_task *t, int fd) {
    if (t->n_conns == MAX_CONNS) {
        CF_WARN(COMP, "more than %d connections; closing the newest", MAX_CONNS);
        close(fd);
        return;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    t->conns[t->n_conns].fd = fd;
    cf_buf_init(&t->conns[t->n_conns].buf);
    t->conns[t->n_conns].overflow = false;
    t->n_conns++;
}

static void close_conn(stream_task *t, int i) {
    if (t->conns[i].fd != STDIN_FILENO) close(t->conns[i].fd);
    cf_buf_free(&t->conns[i].buf);
    t->conns[i] = t->conns[--t->n_conns];
}

static cf_code open_fifo(stream_task *t, cf_err *err) {
    struct stat st;
    if (stat(t->path, &st) != 0) {
        if (mkfifo(t->path, 0600) != 0) {
            cf_err_set(err, CF_ERR_IO, "could not create FIFO \"%s\": %s", t->path, strerror(errno));
            return CF_ERR_IO;
        }
    } else if (!S_ISFIFO(st.st_mode)) {
        cf_err_set(err, CF_ERR_CONFIG, "stream.path \"%s\" exists and is not a FIFO", t->path);
        return CF_ERR_CONFIG;
    }
    /* O_RDWR keeps the FIFO open with no writer, so we do not spin on EOF */
    int fd = open(t->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        cf_err_set(err, CF_ERR_IO, "could not open FIFO \"%s\": %s", t->path, strerror(errno));
        return CF_ERR_IO;
    }
    add_conn(t, fd);
    return CF_OK;
}

static void stream_stop(void *task) {
    stream_task *t = task;
    if (!t) return;
    while (t->n_conns) close_conn(t, 0);
    if (t->listen_fd >= 0) close(t->listen_fd);
    cf_ulid_gen_destroy(t->gen);
    free(t->topic);
    cf_value_destroy(t->pm);
    free(t->name);
    free(t->type);
    free(t->path);
    free(t);
}

static cf_value *partition_map(stream_task *t) {
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("stream"), cf_value_string(t->name));
    return m;
}

static cf_code stream_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    stream_task *t = cf_xcalloc(1, sizeof *t);
    t->ctx = ctx;
    t->listen_fd = -1;
    t->gen = cf_ulid_gen_new();
    t->topic = cf_xstrdup(cf_config_string(cfg, "topic"));
    const char *name = cf_config_string(cfg, "stream.name");
    t->name = cf_xstrdup(name ? name : cf_source_ctx_connector_name(ctx));
    t->type = cf_xstrdup(cf_config_string(cfg, "stream.type"));
    const char *path = cf_config_string(cfg, "stream.path");
    t->path = path ? cf_xstrdup(path) : NULL;
    /* continue after the stored ULID */
    t->pm = partition_map(t);
    cf_value *stored = cf_source_ctx_offset(ctx, t->pm);
    const cf_value *u = cf_value_map_get_str(stored, "ulid");
    const cf_value *c = cf_value_map_get_str(stored, "recordCount");
    if (u && u->type == CF_STRING) {
        cf_ulid last;
        if (cf_ulid_decode(u->u.s.ptr, &last, NULL) == CF_OK) cf_ulid_gen_seed_last(t->gen, &last);
    }
    if (c && c->type == CF_INT64) t->count = c->u.i;
    cf_value_destroy(stored);
    cf_code rc = CF_OK;
    if (strcasecmp(t->type, "stdin") == 0) {
        add_conn(t, STDIN_FILENO);
    } else if (strcasecmp(t->type, "fifo") == 0) {
        if (!t->path) {
            rc = cf_err_set(err, CF_ERR_CONFIG, "stream.type=fifo needs stream.path");
            goto fail;
        }
        if ((rc = open_fifo(t, err))) goto fail;
    } else {
        int port = cf_config_int(cfg, "stream.port");
        t->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        setsockopt(t->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* loopback only, by design */
        if (bind(t->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(t->listen_fd, 16) != 0) {
            rc = cf_err_set(err, CF_ERR_IO, "could not listen on 127.0.0.1:%d: %s", port, strerror(errno));
            cf_err_hint(err, "Choose a free stream.port.");
            goto fail;
        }
        socklen_t len = sizeof a;
        getsockname(t->listen_fd, (struct sockaddr *)&a, &len);
        CF_INFO(COMP, "stream \"%s\" listening on 127.0.0.1:%d", t->name, ntohs(a.sin_port));
    }
    *task = t;
    return CF_OK;
fail:
    stream_stop(t);
    return rc;
}

static cf_code emit_line(stream_task *t, const char *line, size_t len, cf_record **out, size_t *n, cf_err *err) {
    if (len && line[len - 1] == '\r') len--;
    cf_ulid id;
    cf_code rc;
    while ((rc = cf_ulid_next(t->gen, -1, &id, err)) == CF_ERR_AGAIN) usleep(1000);
    if (rc) return rc;
    char text[CF_ULID_TEXT_LEN + 1];
    cf_ulid_encode(&id, text);
    cf_record *r = cf_source_ctx_record_new(t->ctx);
    cf_record_set_topic(r, t->topic);
    cf_value *key = cf_value_string(text); /* also the offset's "ulid": one value, two owners */
    cf_record_set_key(r, cf_schema_primitive(CF_STRING, false), key);
    cf_record_set_value_string(r, cf_schema_primitive(CF_STRING, true), line, len);
    t->count++;
    cf_value *off = cf_value_map_n(2);
    cf_value_map_put_lit(off, "ulid", cf_value_ref(key));
    cf_value_map_put_lit_long(off, "recordCount", t->count);
    /* one offset key for the whole stream: a shared value, not a map per record */
    cf_record_set_source(r, cf_value_ref(t->pm), off);
    out[(*n)++] = r;
    return CF_OK;
}

/* Split complete lines out of a connection's buffer. */
static cf_code drain_lines(stream_task *t, conn *c, cf_record **out, size_t max, size_t *n, bool final, cf_err *err) {
    size_t start = 0;
    while (*n < max) {
        char *nl = c->buf.len > start ? memchr(c->buf.data + start, '\n', c->buf.len - start) : NULL;
        if (!nl) break;
        size_t len = (size_t)(nl - (c->buf.data + start));
        if (c->overflow) {
            c->overflow = false; /* the rest of an over-long line: dropped, reported below */
        } else {
            cf_code rc = emit_line(t, c->buf.data + start, len, out, n, err);
            if (rc) return rc;
        }
        start += len + 1;
    }
    if (final && *n < max && c->buf.len > start && !c->overflow) {
        cf_code rc = emit_line(t, c->buf.data + start, c->buf.len - start, out, n, err);
        if (rc) return rc;
        start = c->buf.len;
    }
    if (start) {
        memmove(c->buf.data, c->buf.data + start, c->buf.len - start);
        c->buf.len -= start;
    }
    if (c->buf.len > MAX_LINE) {
        cf_err problem;
        cf_err_set(&problem, CF_ERR_INVALID, "line longer than %d bytes on stream \"%s\"", MAX_LINE, t->name);
        cf_err_hint(&problem, "Lines are records; split the input or use the files source with input.format=bytes.");
        c->overflow = true;
        cf_code rc = cf_source_ctx_report(t->ctx, c->buf.data, 256, &problem, err);
        cf_buf_reset(&c->buf);
        if (rc) return rc;
    }
    return CF_OK;
}

static cf_code stream_poll(void *task, cf_record **out, size_t max, size_t *n, cf_err *err) {
    stream_task *t = task;
    *n = 0;
    if (t->eof) return CF_ERR_EOF;
    /* lines already buffered first */
    for (int i = 0; i < t->n_conns && *n < max; i++) {
        cf_code rc = drain_lines(t, &t->conns[i], out, max, n, false, err);
        if (rc) return rc;
    }
    if (*n) return CF_OK;
    struct pollfd p[MAX_CONNS + 1];
    int np = 0;
    for (int i = 0; i < t->n_conns; i++) p[np++] = (struct pollfd){t->conns[i].fd, POLLIN, 0};
    if (t->listen_fd >= 0) p[np++] = (struct pollfd){t->listen_fd, POLLIN, 0};
    int k = poll(p, (nfds_t)np, 100); /* bounded wait: no busy loop, and stop requests are seen quickly */
    if (k <= 0) return CF_OK;
    if (t->listen_fd >= 0 && (p[np - 1].revents & POLLIN)) {
        int fd;
        while ((fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) add_conn(t, fd);
    }
    for (int i = t->n_conns - 1; i >= 0; i--) {
        if (i >= np || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        conn *c = &t->conns[i];
        char buf[65536];
        ssize_t r = read(c->fd, buf, sizeof buf);
        if (r > 0) {
            cf_buf_append(&c->buf, buf, (size_t)r);
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            cf_code rc = drain_lines(t, c, out, max, n, true, err);
            if (rc) return rc;
            close_conn(t, i);
            if (strcasecmp(t->type, "stdin") == 0 && t->n_conns == 0) t->eof = true;
        }
    }
    for (int i = 0; i < t->n_conns && *n < max; i++) {
        cf_code rc = drain_lines(t, &t->conns[i], out, max, n, false, err);
        if (rc) return rc;
    }
    if (*n == 0 && t->eof) return CF_ERR_EOF;
    return CF_OK;
}

static const char *const stream_aliases[] = {"StreamSource", NULL};

const cf_connector_plugin cf_stream_source_plugin = {
    .name = "stream",
    .aliases = stream_aliases,
    .kind = CF_CONNECTOR_SOURCE,
    .description = "Keyless lines (stdin, FIFO, TCP on loopback) to records keyed by monotonic ULIDs",
    .version = "0.1.0",
    .config = &cf_stream_source_table,
    .u.source = {.start = stream_start, .poll = stream_poll, .stop = stream_stop, .no_replay = true},
};
