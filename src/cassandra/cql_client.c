/*
 * cql_client.c - CQL native protocol v4 client (see include/cdcflow/
 * cassandra_cql.h). Written from the protocol specification
 * (native_protocol_v4.spec in Cassandra's doc/): 9-byte frame headers,
 * [string]/[long string]/[bytes]/[string map] notation, RESULT kinds, type
 * options, EVENT frames on stream -1.
 *
 * Every byte from the server is bounds-checked: a short or impossible frame
 * is CF_ERR_CORRUPT, never a crash. One request is in flight at a time, so
 * a frame for another stream id is a protocol error, except events.
 */
#include "cdcflow/cassandra_cql.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/buf.h"

#define HDR_LEN 9
#define SEG_MAX_PAYLOAD (128 * 1024 - 1) /* v5 segments: 17-bit payload length */
#define MAX_FRAME (256u * 1024 * 1024) /* Cassandra's native_transport_max_frame_size ceiling */

enum {
    OP_ERROR = 0x00,
    OP_STARTUP = 0x01,
    OP_READY = 0x02,
    OP_AUTHENTICATE = 0x03,
    OP_QUERY = 0x07,
    OP_RESULT = 0x08,
    OP_REGISTER = 0x0B,
    OP_EVENT = 0x0C,
    OP_AUTH_CHALLENGE = 0x0E,
    OP_AUTH_RESPONSE = 0x0F,
    OP_AUTH_SUCCESS = 0x10,
};

struct cf_cql_conn {
    int fd;
    int version;     /* 4 or 5 */
    bool framed;     /* v5: envelopes travel inside CRC-checked segments (after STARTUP) */
    uint8_t *in;     /* v5: payload bytes of received segments not consumed yet */
    size_t in_len, in_pos, in_cap;
    char *host;
    int port;
    int request_timeout_ms;
    char *username, *password;
    int page_size;
    FILE *rec;
    int16_t next_stream;
    cf_cql_event *events;
    size_t n_events, cap_events;
    bool (*interrupted)(void *arg); /* cf_cql_options.interrupted */
    void *interrupt_arg;
};

/* The slice of a wait between two questions to an interrupt. */
#define INTERRUPT_SLICE_MS 100

/* ---- time and socket I/O ---- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static cf_code io_fail(cf_cql_conn *c, cf_err *err, const char *what) {
    cf_err_set(err, CF_ERR_TRANSPORT, "CQL connection: %s", what);
    cf_err_where(err, "%s:%d", c->host ? c->host : "fd", c->port);
    return CF_ERR_TRANSPORT;
}

static cf_code wait_fd(cf_cql_conn *c, short events, int64_t deadline, cf_err *err) {
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            io_fail(c, err, "timed out waiting for the server");
            cf_err_hint(err, "the node may be overloaded or down; request_timeout_ms is %d", c->request_timeout_ms);
            return CF_ERR_AGAIN;
        }
        if (c->interrupted && c->interrupted(c->interrupt_arg)) {
            cf_err_set(err, CF_ERR_AGAIN, "CQL connection: interrupted: the caller is stopping");
            cf_err_where(err, "%s:%d", c->host ? c->host : "fd", c->port);
            return CF_ERR_AGAIN;
        }
        int64_t most = c->interrupted ? INTERRUPT_SLICE_MS : 1000000;
        struct pollfd p = {.fd = c->fd, .events = events};
        int r = poll(&p, 1, left > most ? (int)most : (int)left);
        if (r > 0) return CF_OK;
        if (r < 0 && errno != EINTR) {
            io_fail(c, err, "poll failed");
            cf_err_detail(err, "%s", strerror(errno));
            return CF_ERR_TRANSPORT;
        }
    }
}

static cf_code read_full(cf_cql_conn *c, uint8_t *buf, size_t n, int64_t deadline, cf_err *err) {
    size_t got = 0;
    while (got < n) {
        cf_code rc = wait_fd(c, POLLIN, deadline, err);
        if (rc) return rc;
        ssize_t r = read(c->fd, buf + got, n - got);
        if (r == 0) {
            io_fail(c, err, "the server closed the connection");
            cf_err_detail(err, "after %zu of %zu bytes of a frame", got, n);
            return CF_ERR_TRANSPORT;
        }
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            io_fail(c, err, "read failed");
            cf_err_detail(err, "%s", strerror(errno));
            return CF_ERR_TRANSPORT;
        }
        got += (size_t)r;
    }
    return CF_OK;
}

static cf_code write_full(cf_cql_conn *c, const uint8_t *buf, size_t n, int64_t deadline, cf_err *err) {
    size_t put = 0;
    while (put < n) {
        cf_code rc = wait_fd(c, POLLOUT, deadline, err);
        if (rc) return rc;
        ssize_t r = send(c->fd, buf + put, n - put, MSG_NOSIGNAL);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            io_fail(c, err, "write failed");
            cf_err_detail(err, "%s", strerror(errno));
            return CF_ERR_TRANSPORT;
        }
        put += (size_t)r;
    }
    return CF_OK;
}


/* ---- protocol v5 segments (native_protocol_v5.spec section 2; Cassandra's
 * FrameEncoderCrc/FrameDecoderCrc and net/Crc.java): a 6-byte header, 3 bytes
 * little-endian (payload length | self-contained << 17) and their CRC24, then
 * the payload and its CRC32 (zlib CRC32 seeded with FA 2D 55 CA), little-
 * endian. Payloads concatenate into the stream of envelopes. ---- */

#include <zlib.h>

static uint32_t crc24(uint64_t bytes, int len) {
    uint32_t crc = 0x875060;
    while (len-- > 0) {
        crc ^= (uint32_t)(bytes & 0xff) << 16;
        bytes >>= 8;
        for (int i = 0; i < 8; i++) {
            crc <<= 1;
            if (crc & 0x1000000) crc ^= 0x1974F0B;
        }
    }
    return crc & 0xffffff;
}

static uint32_t seg_crc32(const uint8_t *p, size_t n) {
    static const uint8_t init[4] = {0xFA, 0x2D, 0x55, 0xCA};
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, init, 4);
    c = crc32(c, p, (uInt)n);
    return (uint32_t)c;
}

static cf_code read_segment(cf_cql_conn *c, int64_t deadline, cf_err *err) {
    uint8_t h[6];
    cf_code rc = read_full(c, h, 6, deadline, err);
    if (rc) return rc;
    uint32_t hdr = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16;
    uint32_t hcrc = (uint32_t)h[3] | (uint32_t)h[4] << 8 | (uint32_t)h[5] << 16;
    if (crc24(hdr, 3) != hcrc) {
        cf_err_set(err, CF_ERR_CORRUPT, "CQL protocol v5: segment header CRC24 mismatch");
        cf_err_detail(err, "header %06x, crc %06x, computed %06x", hdr, hcrc, crc24(hdr, 3));
        cf_err_where(err, "%s:%d", c->host ? c->host : "fd", c->port);
        return CF_ERR_CORRUPT;
    }
    size_t n = hdr & 0x1ffff;
    /* drop what was consumed, then grow geometrically: a large envelope
     * split over many segments is gathered in linear time */
    if (c->in_pos == c->in_len) {
        c->in_pos = c->in_len = 0;
    } else if (c->in_pos > c->in_len / 2) {
        memmove(c->in, c->in + c->in_pos, c->in_len - c->in_pos);
        c->in_len -= c->in_pos;
        c->in_pos = 0;
    }
    if (c->in_len + n + 4 > c->in_cap) {
        size_t cap = c->in_cap ? c->in_cap : 65536;
        while (cap < c->in_len + n + 4) cap *= 2;
        c->in = cf_xrealloc(c->in, cap);
        c->in_cap = cap;
    }
    uint8_t *buf = c->in + c->in_len;
    rc = read_full(c, buf, n + 4, deadline, err);
    if (rc) return rc;
    uint32_t want = (uint32_t)buf[n] | (uint32_t)buf[n + 1] << 8 | (uint32_t)buf[n + 2] << 16 | (uint32_t)buf[n + 3] << 24;
    if (seg_crc32(buf, n) != want) {
        cf_err_set(err, CF_ERR_CORRUPT, "CQL protocol v5: segment payload CRC32 mismatch");
        cf_err_detail(err, "payload of %zu bytes", n);
        cf_err_where(err, "%s:%d", c->host ? c->host : "fd", c->port);
        return CF_ERR_CORRUPT;
    }
    c->in_len += n; /* the CRC bytes past in_len are overwritten by the next payload */
    return CF_OK;
}

/* Envelope bytes: straight from the socket (v4, and v5 before framing
 * starts) or from segment payloads. */
static cf_code read_env(cf_cql_conn *c, uint8_t *buf, size_t n, int64_t deadline, cf_err *err) {
    if (!c->framed) return read_full(c, buf, n, deadline, err);
    while (c->in_len - c->in_pos < n) {
        cf_code rc = read_segment(c, deadline, err);
        if (rc) return rc;
    }
    memcpy(buf, c->in + c->in_pos, n);
    c->in_pos += n;
    return CF_OK;
}

static cf_code write_env(cf_cql_conn *c, const uint8_t *env, size_t n, int64_t deadline, cf_err *err) {
    if (!c->framed) return write_full(c, env, n, deadline, err);
    bool self_contained = n <= SEG_MAX_PAYLOAD;
    size_t off = 0;
    do {
        size_t chunk = n - off > SEG_MAX_PAYLOAD ? SEG_MAX_PAYLOAD : n - off;
        uint32_t hdr = (uint32_t)chunk | (self_contained ? 1u << 17 : 0);
        uint32_t hc = crc24(hdr, 3);
        uint32_t pc = seg_crc32(env + off, chunk);
        uint8_t h[6] = {(uint8_t)hdr, (uint8_t)(hdr >> 8), (uint8_t)(hdr >> 16),
                        (uint8_t)hc,  (uint8_t)(hc >> 8),  (uint8_t)(hc >> 16)};
        uint8_t t[4] = {(uint8_t)pc, (uint8_t)(pc >> 8), (uint8_t)(pc >> 16), (uint8_t)(pc >> 24)};
        cf_code rc = write_full(c, h, 6, deadline, err);
        if (!rc) rc = write_full(c, env + off, chunk, deadline, err);
        if (!rc) rc = write_full(c, t, 4, deadline, err);
        if (rc) return rc;
        off += chunk;
    } while (off < n);
    return CF_OK;
}

/* ---- encoding ---- */

static void put_u16(cf_buf *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    cf_buf_append(b, x, 2);
}
static void put_i32(cf_buf *b, int32_t v) {
    uint32_t u = (uint32_t)v;
    uint8_t x[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u};
    cf_buf_append(b, x, 4);
}
static void put_string(cf_buf *b, const char *s) {
    size_t n = strlen(s);
    put_u16(b, (uint16_t)n);
    cf_buf_append(b, s, n);
}
static void put_long_string(cf_buf *b, const char *s) {
    size_t n = strlen(s);
    put_i32(b, (int32_t)n);
    cf_buf_append(b, s, n);
}

/* ---- decoding (bounds-checked) ---- */

typedef struct rd {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
} rd;

static bool need(rd *r, size_t n) {
    if (r->bad || r->pos > r->len || r->len - r->pos < n) {
        r->bad = true;
        return false;
    }
    return true;
}
static uint16_t rd_u16(rd *r) {
    if (!need(r, 2)) return 0;
    uint16_t v = (uint16_t)(r->p[r->pos] << 8 | r->p[r->pos + 1]);
    r->pos += 2;
    return v;
}
static int32_t rd_i32(rd *r) {
    if (!need(r, 4)) return 0;
    uint32_t v = (uint32_t)r->p[r->pos] << 24 | (uint32_t)r->p[r->pos + 1] << 16 | (uint32_t)r->p[r->pos + 2] << 8 |
                 r->p[r->pos + 3];
    r->pos += 4;
    return (int32_t)v;
}
/* [string]: u16 length + bytes; returns a pointer into the frame */
static const char *rd_string(rd *r, size_t *len) {
    uint16_t n = rd_u16(r);
    if (!need(r, n)) return NULL;
    const char *s = (const char *)r->p + r->pos;
    r->pos += n;
    *len = n;
    return s;
}
/* [bytes]: i32 length (negative = null) + bytes */
static cf_cql_value rd_bytes(rd *r) {
    cf_cql_value v = {NULL, -1};
    int32_t n = rd_i32(r);
    if (r->bad || n < 0) return v;
    if (!need(r, (size_t)n)) return v;
    v.data = r->p + r->pos;
    v.len = n;
    r->pos += (size_t)n;
    return v;
}
static void copy_string(rd *r, char *dst, size_t cap) {
    size_t n = 0;
    const char *s = rd_string(r, &n);
    if (!s) {
        dst[0] = '\0';
        return;
    }
    if (n >= cap) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* [option]: a type id and, for custom/collection/UDT/tuple, its parameters */
static void skip_option(rd *r, int depth, uint16_t *id_out) {
    uint16_t id = rd_u16(r);
    if (id_out) *id_out = id;
    if (depth > 32) {
        r->bad = true;
        return;
    }
    size_t n;
    switch (id) {
    case 0x0000: rd_string(r, &n); break; /* custom: class name */
    case 0x0020:                           /* list */
    case 0x0022: skip_option(r, depth + 1, NULL); break; /* set */
    case 0x0021:
        skip_option(r, depth + 1, NULL);
        skip_option(r, depth + 1, NULL);
        break;
    case 0x0030: { /* UDT: ks, name, n, (field name, option)* */
        rd_string(r, &n);
        rd_string(r, &n);
        uint16_t k = rd_u16(r);
        for (uint16_t i = 0; i < k && !r->bad; i++) {
            rd_string(r, &n);
            skip_option(r, depth + 1, NULL);
        }
        break;
    }
    case 0x0031: { /* tuple */
        uint16_t k = rd_u16(r);
        for (uint16_t i = 0; i < k && !r->bad; i++) skip_option(r, depth + 1, NULL);
        break;
    }
    default:
        if (id > 0x0031 || (id > 0x0015 && id < 0x0020)) r->bad = true; /* unknown type id */
        break;
    }
}

static cf_code corrupt(cf_cql_conn *c, cf_err *err, const char *what, uint8_t opcode, size_t len) {
    cf_err_set(err, CF_ERR_CORRUPT, "CQL protocol: malformed %s from the server", what);
    cf_err_detail(err, "frame opcode 0x%02x, body %zu bytes", opcode, len);
    cf_err_where(err, "%s:%d", c->host ? c->host : "fd", c->port);
    return CF_ERR_CORRUPT;
}

/* ---- frames ---- */

static cf_code send_frame(cf_cql_conn *c, uint8_t opcode, int16_t stream, const cf_buf *body, int64_t deadline,
                          cf_err *err) {
    uint32_t len = (uint32_t)(body ? body->len : 0);
    uint8_t *env = cf_xmalloc(HDR_LEN + len);
    env[0] = (uint8_t)c->version;
    env[1] = 0;
    env[2] = (uint8_t)((uint16_t)stream >> 8);
    env[3] = (uint8_t)stream;
    env[4] = opcode;
    env[5] = (uint8_t)(len >> 24), env[6] = (uint8_t)(len >> 16), env[7] = (uint8_t)(len >> 8), env[8] = (uint8_t)len;
    if (len) memcpy(env + HDR_LEN, body->data, len);
    cf_code rc = write_env(c, env, HDR_LEN + len, deadline, err);
    free(env);
    return rc;
}

static cf_code recv_frame(cf_cql_conn *c, int64_t deadline, uint8_t *opcode, int16_t *stream, uint8_t **body,
                          size_t *len, cf_err *err) {
    uint8_t h[HDR_LEN];
    cf_code rc = read_env(c, h, HDR_LEN, deadline, err);
    if (rc) return rc;
    if (h[0] != (0x80 | c->version)) {
        /* a server that does not speak our version answers in its own */
        if ((h[0] & 0x80) && (h[0] & 0x7f) >= 3 && (h[0] & 0x7f) < c->version && h[4] == OP_ERROR) {
            cf_err_set(err, CF_ERR_UNSUPPORTED, "Cassandra does not support CQL protocol v%d", c->version);
            cf_err_detail(err, "it answered in protocol v%d", h[0] & 0x7f);
            return CF_ERR_UNSUPPORTED;
        }
        cf_err_set(err, CF_ERR_CORRUPT, "CQL protocol: unexpected frame version byte 0x%02x", h[0]);
        cf_err_detail(err, "expected 0x%02x (a protocol v%d response)", 0x80 | c->version, c->version);
        cf_err_hint(err, "is this a Cassandra native transport port (usually 9042)?");
        cf_err_where(err, "%s:%d", c->host ? c->host : "fd", c->port);
        return CF_ERR_CORRUPT;
    }
    if (h[1] & 0x01) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "CQL protocol: the server sent a compressed frame");
        cf_err_detail(err, "no compression was negotiated in STARTUP");
        return CF_ERR_UNSUPPORTED;
    }
    uint32_t n = (uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8];
    if (n > MAX_FRAME) {
        cf_err_set(err, CF_ERR_CORRUPT, "CQL protocol: frame body of %u bytes is too large", n);
        return CF_ERR_CORRUPT;
    }
    uint8_t *b = cf_xmalloc(n ? n : 1);
    rc = read_env(c, b, n, deadline, err);
    if (rc) {
        free(b);
        return rc;
    }
    if (c->rec) {
        fwrite(h, 1, HDR_LEN, c->rec);
        fwrite(b, 1, n, c->rec);
        fflush(c->rec);
    }
    /* frames may carry a tracing id, warnings or a custom payload before the
     * body (flags 0x02, 0x08, 0x04); we never ask for tracing or payloads,
     * but warnings can come at any time: strip them here */
    size_t off = 0;
    if (h[1] & 0x02) off += 16;
    if (h[1] & 0x08) {
        rd r = {b, n, off, false};
        uint16_t k = rd_u16(&r);
        size_t sl;
        for (uint16_t i = 0; i < k; i++) rd_string(&r, &sl);
        if (r.bad) {
            free(b);
            return corrupt(c, err, "warnings list", h[4], n);
        }
        off = r.pos;
    }
    if (h[1] & 0x04) {
        rd r = {b, n, off, false};
        uint16_t k = rd_u16(&r);
        size_t sl;
        for (uint16_t i = 0; i < k; i++) {
            rd_string(&r, &sl);
            rd_bytes(&r);
        }
        if (r.bad) {
            free(b);
            return corrupt(c, err, "custom payload", h[4], n);
        }
        off = r.pos;
    }
    if (off > n) {
        free(b);
        return corrupt(c, err, "frame header flags", h[4], n);
    }
    if (off) memmove(b, b + off, n - off);
    *opcode = h[4];
    *stream = (int16_t)((uint16_t)h[2] << 8 | h[3]);
    *body = b;
    *len = n - off;
    return CF_OK;
}

static cf_code parse_event(cf_cql_conn *c, const uint8_t *body, size_t len, cf_err *err) {
    rd r = {body, len, 0, false};
    char type[32];
    copy_string(&r, type, sizeof type);
    if (r.bad) return corrupt(c, err, "EVENT", OP_EVENT, len);
    if (strcmp(type, "SCHEMA_CHANGE") != 0) return CF_OK; /* TOPOLOGY/STATUS: not registered */
    cf_cql_event ev;
    memset(&ev, 0, sizeof ev);
    copy_string(&r, ev.change, sizeof ev.change);
    copy_string(&r, ev.target, sizeof ev.target);
    copy_string(&r, ev.keyspace, sizeof ev.keyspace);
    if (strcmp(ev.target, "KEYSPACE") != 0) copy_string(&r, ev.name, sizeof ev.name);
    /* FUNCTION/AGGREGATE also carry argument types: not needed */
    if (r.bad) return corrupt(c, err, "SCHEMA_CHANGE event", OP_EVENT, len);
    if (c->n_events == c->cap_events) {
        c->cap_events = c->cap_events ? c->cap_events * 2 : 8;
        c->events = cf_xrealloc(c->events, c->cap_events * sizeof *c->events);
    }
    c->events[c->n_events++] = ev;
    return CF_OK;
}

static cf_code server_error(cf_cql_conn *c, const uint8_t *body, size_t len, const char *what, cf_err *err) {
    rd r = {body, len, 0, false};
    int32_t code = rd_i32(&r);
    size_t n = 0;
    const char *msg = rd_string(&r, &n);
    if (r.bad) return corrupt(c, err, "ERROR", OP_ERROR, len);
    cf_code cc = CF_ERR_TARGET;
    if (code == 0x0100) cc = CF_ERR_CONFIG;                       /* bad credentials */
    else if (code == 0x1000 || code == 0x1001 || code == 0x1100 || code == 0x1200) cc = CF_ERR_AGAIN; /* unavailable, overloaded, write/read timeout */
    else if (code == 0x000A) cc = CF_ERR_UNSUPPORTED;             /* protocol error (version) */
    cf_err_set(err, cc, "Cassandra refused %s", what);
    cf_err_detail(err, "error 0x%04x: %.*s", (unsigned)code, (int)n, msg);
    if (code == 0x0100) cf_err_hint(err, "check the username and password given to cdcflow");
    else if (cc == CF_ERR_AGAIN) cf_err_hint(err, "the cluster is overloaded or a replica is down; retry later");
    cf_err_where(err, "%s:%d", c->host ? c->host : "fd", c->port);
    return cc;
}

/* Send one request and wait for its response; events are queued. The
 * caller frees *body. */
static cf_code request(cf_cql_conn *c, uint8_t opcode, const cf_buf *body, const char *what, uint8_t *r_op,
                       uint8_t **r_body, size_t *r_len, cf_err *err) {
    int64_t deadline = now_ms() + c->request_timeout_ms;
    int16_t stream = c->next_stream;
    c->next_stream = (int16_t)(c->next_stream >= 32767 ? 1 : c->next_stream + 1);
    cf_code rc = send_frame(c, opcode, stream, body, deadline, err);
    if (rc) return rc;
    for (;;) {
        uint8_t op;
        int16_t st;
        uint8_t *b;
        size_t n;
        rc = recv_frame(c, deadline, &op, &st, &b, &n, err);
        if (rc) return rc;
        if (st == -1 && op == OP_EVENT) {
            rc = parse_event(c, b, n, err);
            free(b);
            if (rc) return rc;
            continue;
        }
        if (st != stream) {
            free(b);
            cf_err_set(err, CF_ERR_CORRUPT, "CQL protocol: response for stream %d while waiting for stream %d", st,
                       stream);
            return CF_ERR_CORRUPT;
        }
        if (op == OP_ERROR) {
            rc = server_error(c, b, n, what, err);
            free(b);
            return rc;
        }
        *r_op = op;
        *r_body = b;
        *r_len = n;
        return CF_OK;
    }
}

/* ---- connect / startup ---- */

static cf_code startup(cf_cql_conn *c, cf_err *err) {
    cf_buf b = CF_BUF_INIT;
    put_u16(&b, 1);
    put_string(&b, "CQL_VERSION");
    put_string(&b, "3.0.0");
    uint8_t op;
    uint8_t *body;
    size_t len;
    cf_code rc = request(c, OP_STARTUP, &b, "STARTUP", &op, &body, &len, err);
    cf_buf_free(&b);
    if (rc) return rc;
    /* v5: the STARTUP response is the last envelope outside segments */
    if (c->version >= 5) c->framed = true;
    if (op == OP_READY) {
        free(body);
        return CF_OK;
    }
    if (op != OP_AUTHENTICATE) {
        free(body);
        return corrupt(c, err, "STARTUP response", op, len);
    }
    rd r = {body, len, 0, false};
    char auth[256];
    copy_string(&r, auth, sizeof auth);
    free(body);
    if (!c->username) {
        cf_err_set(err, CF_ERR_CONFIG, "Cassandra requires authentication (%s)", auth);
        cf_err_hint(err, "configure a username and password");
        return CF_ERR_CONFIG;
    }
    /* SASL PLAIN: \0user\0password */
    cf_buf tok = CF_BUF_INIT;
    cf_buf_append_byte(&tok, 0);
    cf_buf_append_str(&tok, c->username);
    cf_buf_append_byte(&tok, 0);
    cf_buf_append_str(&tok, c->password ? c->password : "");
    cf_buf_init(&b);
    put_i32(&b, (int32_t)tok.len);
    cf_buf_append(&b, tok.data, tok.len);
    cf_buf_free(&tok);
    rc = request(c, OP_AUTH_RESPONSE, &b, "the credentials", &op, &body, &len, err);
    cf_buf_free(&b);
    if (rc) return rc;
    free(body);
    if (op != OP_AUTH_SUCCESS) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "Cassandra asked for a multi-step authentication (opcode 0x%02x)", op);
        cf_err_detail(err, "authenticator %s; only PasswordAuthenticator (SASL PLAIN) is supported", auth);
        return CF_ERR_UNSUPPORTED;
    }
    return CF_OK;
}

static cf_cql_conn *conn_new(int fd, const cf_cql_options *opt, cf_err *err, cf_code *rc) {
    cf_cql_conn *c = cf_xcalloc(1, sizeof *c);
    c->fd = fd;
    c->host = cf_xstrdup(opt && opt->host ? opt->host : "127.0.0.1");
    c->port = opt && opt->port ? opt->port : 9042;
    c->request_timeout_ms = opt && opt->request_timeout_ms > 0 ? opt->request_timeout_ms : 30000;
    c->page_size = opt && opt->page_size > 0 ? opt->page_size : 1000;
    if (opt && opt->username) c->username = cf_xstrdup(opt->username);
    if (opt && opt->password) c->password = cf_xstrdup(opt->password);
    c->next_stream = 1;
    c->version = opt && opt->protocol_version == 5 ? 5 : 4;
    c->interrupted = opt ? opt->interrupted : NULL;
    c->interrupt_arg = opt ? opt->interrupt_arg : NULL;
    *rc = CF_OK;
    if (opt && opt->record_path) {
        c->rec = fopen(opt->record_path, "ab");
        if (!c->rec) {
            *rc = cf_err_set(err, CF_ERR_IO, "cannot open CQL record file %s: %s", opt->record_path, strerror(errno));
        }
    }
    return c;
}

cf_code cf_cql_connect_fd(int fd, const cf_cql_options *opt, cf_cql_conn **out, cf_err *err) {
    *out = NULL;
    cf_code rc;
    cf_cql_conn *c = conn_new(fd, opt, err, &rc);
    if (!rc) rc = startup(c, err);
    if (rc) {
        cf_cql_close(c);
        return rc;
    }
    *out = c;
    return CF_OK;
}

static cf_code open_socket(const char *host, int port, int cto, const cf_cql_options *opt, int *out_fd,
                           cf_err *err) {
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, ports, &hints, &res);
    if (gai) {
        cf_err_set(err, CF_ERR_TRANSPORT, "cannot resolve Cassandra host %s", host);
        cf_err_detail(err, "%s", gai_strerror(gai));
        return CF_ERR_TRANSPORT;
    }
    int fd = -1;
    char why[256] = "no address";
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        int r = connect(fd, a->ai_addr, a->ai_addrlen);
        if (r < 0 && errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (opt && opt->interrupted) { /* in slices: an interrupt ends the wait */
                r = 0;
                for (int left = cto; left > 0 && r == 0 && !opt->interrupted(opt->interrupt_arg);
                     left -= INTERRUPT_SLICE_MS)
                    r = poll(&p, 1, left < INTERRUPT_SLICE_MS ? left : INTERRUPT_SLICE_MS);
                if (r == 0 && opt->interrupted(opt->interrupt_arg)) {
                    close(fd);
                    freeaddrinfo(res);
                    cf_err_set(err, CF_ERR_AGAIN, "connecting to Cassandra at %s:%d interrupted: the caller is stopping",
                               host, port);
                    return CF_ERR_AGAIN;
                }
            } else {
                r = poll(&p, 1, cto);
            }
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) r = 0;
            else {
                snprintf(why, sizeof why, "%s", r == 0 ? "connect timed out" : strerror(soerr ? soerr : errno));
                r = -1;
            }
        } else if (r < 0) {
            snprintf(why, sizeof why, "%s", strerror(errno));
        }
        if (r < 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        cf_err_set(err, CF_ERR_TRANSPORT, "cannot connect to Cassandra at %s:%d", host, port);
        cf_err_detail(err, "%s", why);
        cf_err_hint(err, "check that the node runs and native transport listens on that address");
        return CF_ERR_TRANSPORT;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *out_fd = fd;
    return CF_OK;
}

cf_code cf_cql_connect(const cf_cql_options *opt, cf_cql_conn **out, cf_err *err) {
    *out = NULL;
    const char *host = opt && opt->host ? opt->host : "127.0.0.1";
    int port = opt && opt->port ? opt->port : 9042;
    int cto = opt && opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 5000;
    int want = opt ? opt->protocol_version : 0;
    if (want != 0 && want != 4 && want != 5)
        return cf_err_set(err, CF_ERR_CONFIG, "CQL protocol version %d is not supported (use 4 or 5)", want);
    cf_cql_options o = opt ? *opt : (cf_cql_options){0};
    /* 0: v5 first, then v4 on a fresh connection (a server that does not
     * know v5 answers with a protocol error in its own version) */
    for (int v = want ? want : 5; v >= (want ? want : 4); v--) {
        int fd = -1;
        cf_code rc = open_socket(host, port, cto, opt, &fd, err);
        if (rc) return rc;
        o.protocol_version = v;
        rc = cf_cql_connect_fd(fd, &o, out, err);
        if (rc == CF_OK || want || rc != CF_ERR_UNSUPPORTED) return rc;
    }
    return CF_ERR_UNSUPPORTED;
}

void cf_cql_close(cf_cql_conn *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    if (c->rec) fclose(c->rec);
    free(c->host);
    free(c->username);
    free(c->password);
    free(c->events);
    free(c->in);
    free(c);
}

int cf_cql_protocol_version(const cf_cql_conn *c) { return c ? c->version : 0; }

/* ---- queries ---- */

void cf_cql_result_free(cf_cql_result *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_columns; i++) free(r->column_names[i]);
    free(r->column_names);
    free(r->column_type_ids);
    free(r->values);
    for (size_t i = 0; i < r->n_pages; i++) free(r->pages[i]);
    free(r->pages);
    free(r);
}

const cf_cql_value *cf_cql_result_value(const cf_cql_result *r, size_t row, size_t col) {
    if (!r || row >= r->n_rows || col >= r->n_columns) return NULL;
    return &r->values[row * r->n_columns + col];
}

char *cf_cql_result_text(const cf_cql_result *r, size_t row, size_t col) {
    const cf_cql_value *v = cf_cql_result_value(r, row, col);
    if (!v || v->len < 0) return NULL;
    return cf_xstrndup((const char *)v->data, (size_t)v->len);
}

/* Parse one RESULT body into r; *paging gets the paging state (pointer into
 * body) when more pages follow. */
static cf_code parse_result(cf_cql_conn *c, cf_cql_result *r, const uint8_t *body, size_t len, bool first,
                            cf_cql_value *paging, cf_err *err) {
    rd d = {body, len, 0, false};
    paging->data = NULL;
    paging->len = -1;
    int32_t kind = rd_i32(&d);
    if (d.bad) return corrupt(c, err, "RESULT", OP_RESULT, len);
    r->kind = kind;
    if (kind != 2) return CF_OK; /* void, set_keyspace, schema_change: nothing to keep */
    int32_t flags = rd_i32(&d);
    int32_t ncol = rd_i32(&d);
    if (d.bad || ncol < 0 || ncol > 65535) return corrupt(c, err, "rows metadata", OP_RESULT, len);
    if (flags & 0x0002) *paging = rd_bytes(&d);
    if (flags & 0x0008) { /* v5 METADATA_CHANGED: [short bytes] new_metadata_id */
        uint16_t k = rd_u16(&d);
        if (need(&d, k)) d.pos += k;
    }
    if (!(flags & 0x0004)) {
        bool global = flags & 0x0001;
        size_t n;
        if (global) {
            rd_string(&d, &n);
            rd_string(&d, &n);
        }
        if (first) {
            r->n_columns = (size_t)ncol;
            r->column_names = cf_xcalloc((size_t)ncol + 1, sizeof *r->column_names);
            r->column_type_ids = cf_xcalloc((size_t)ncol + 1, sizeof *r->column_type_ids);
        } else if ((size_t)ncol != r->n_columns) {
            return corrupt(c, err, "page with a different column count", OP_RESULT, len);
        }
        for (int32_t i = 0; i < ncol && !d.bad; i++) {
            if (!global) {
                rd_string(&d, &n);
                rd_string(&d, &n);
            }
            const char *name = rd_string(&d, &n);
            uint16_t tid = 0;
            skip_option(&d, 0, &tid);
            if (first && name && !d.bad) {
                r->column_names[i] = cf_xstrndup(name, n);
                r->column_type_ids[i] = tid;
            }
        }
    } else if (first) {
        return corrupt(c, err, "rows without metadata", OP_RESULT, len);
    }
    int32_t nrows = rd_i32(&d);
    if (d.bad || nrows < 0) return corrupt(c, err, "rows count", OP_RESULT, len);
    /* each value takes at least 4 bytes: refuse impossible counts before
     * allocating */
    if (ncol && (size_t)nrows > (len - d.pos) / (4 * (size_t)ncol)) return corrupt(c, err, "rows count", OP_RESULT, len);
    size_t total = (r->n_rows + (size_t)nrows) * r->n_columns;
    r->values = cf_xrealloc(r->values, (total ? total : 1) * sizeof *r->values);
    for (int32_t i = 0; r->n_columns && i < nrows; i++)
        for (size_t j = 0; j < r->n_columns; j++) {
            cf_cql_value v = rd_bytes(&d);
            if (d.bad) return corrupt(c, err, "row values", OP_RESULT, len);
            r->values[(r->n_rows + (size_t)i) * r->n_columns + j] = v;
        }
    r->n_rows += (size_t)nrows;
    return CF_OK;
}

cf_code cf_cql_query(cf_cql_conn *c, const char *cql, uint16_t consistency, cf_cql_result **out, cf_err *err) {
    *out = NULL;
    cf_cql_result *r = cf_xcalloc(1, sizeof *r);
    cf_cql_value paging = {NULL, -1};
    uint8_t *keep_state = NULL;
    size_t keep_len = 0;
    for (bool first = true;; first = false) {
        cf_buf b = CF_BUF_INIT;
        put_long_string(&b, cql);
        put_u16(&b, consistency);
        uint8_t flags = 0x04; /* page size */
        if (keep_state) flags |= 0x08;
        if (c->version >= 5) put_i32(&b, flags); /* v5: query flags are an [int] */
        else cf_buf_append_byte(&b, flags);
        put_i32(&b, c->page_size);
        if (keep_state) {
            put_i32(&b, (int32_t)keep_len);
            cf_buf_append(&b, keep_state, keep_len);
        }
        uint8_t op;
        uint8_t *body;
        size_t len;
        char what[160];
        snprintf(what, sizeof what, "the query \"%.120s\"", cql);
        cf_code rc = request(c, OP_QUERY, &b, what, &op, &body, &len, err);
        cf_buf_free(&b);
        free(keep_state);
        keep_state = NULL;
        if (rc) {
            cf_cql_result_free(r);
            return rc;
        }
        if (op != OP_RESULT) {
            free(body);
            cf_cql_result_free(r);
            return corrupt(c, err, "QUERY response (not RESULT)", op, len);
        }
        r->pages = cf_xrealloc(r->pages, (r->n_pages + 1) * sizeof *r->pages);
        r->pages[r->n_pages++] = body;
        rc = parse_result(c, r, body, len, first, &paging, err);
        if (rc) {
            cf_cql_result_free(r);
            return rc;
        }
        if (paging.len < 0) break;
        keep_len = (size_t)paging.len;
        keep_state = cf_xmemdup(paging.data, keep_len ? keep_len : 1);
    }
    *out = r;
    return CF_OK;
}

/* ---- schema ---- */

static const char *const system_keyspaces[] = {"system", "system_schema", "system_auth", "system_distributed",
                                               "system_traces", "system_views", "system_virtual_schema",
                                               "system_cluster_metadata", "system_accord", NULL};

static bool wanted(const char *ks, const char *const *keyspaces) {
    if (keyspaces) {
        for (size_t i = 0; keyspaces[i]; i++)
            if (strcmp(keyspaces[i], ks) == 0) return true;
        return false;
    }
    for (size_t i = 0; system_keyspaces[i]; i++)
        if (strcmp(system_keyspaces[i], ks) == 0) return false;
    return true;
}

cf_code cf_cql_fetch_schema_json(cf_cql_conn *c, const char *const *keyspaces, char **json, cf_err *err) {
    *json = NULL;
    static const char *const tables[] = {"keyspaces", "tables", "views", "columns", "dropped_columns", "types"};
    cf_buf out = CF_BUF_INIT;
    cf_buf_append_byte(&out, '{');
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        /* keyspace_name is the partition key of every system_schema table:
         * with a list, ask only for those partitions */
        cf_buf qb = CF_BUF_INIT;
        cf_buf_printf(&qb, "SELECT JSON * FROM system_schema.%s", tables[t]);
        if (keyspaces && keyspaces[0]) {
            cf_buf_append_str(&qb, " WHERE keyspace_name IN (");
            for (size_t k = 0; keyspaces[k]; k++) {
                cf_buf_append_str(&qb, k ? ", '" : "'");
                for (const char *p = keyspaces[k]; *p; p++) {
                    if (*p == '\'') cf_buf_append_byte(&qb, '\'');
                    cf_buf_append_byte(&qb, (uint8_t)*p);
                }
                cf_buf_append_byte(&qb, '\'');
            }
            cf_buf_append_byte(&qb, ')');
        }
        char q[160];
        snprintf(q, sizeof q, "%s", qb.data);
        cf_cql_result *r = NULL;
        cf_code rc = cf_cql_query(c, qb.data, CF_CQL_ONE, &r, err);
        cf_buf_free(&qb);
        if (rc) {
            cf_buf_free(&out);
            return rc;
        }
        if (r->kind != 2 || r->n_columns != 1) {
            cf_cql_result_free(r);
            cf_buf_free(&out);
            cf_err_set(err, CF_ERR_CORRUPT, "%s did not return one JSON column", q);
            return CF_ERR_CORRUPT;
        }
        cf_buf_printf(&out, "%s\"%s\": [", t ? ", " : "", tables[t]);
        bool any = false;
        for (size_t i = 0; i < r->n_rows; i++) {
            const cf_cql_value *v = cf_cql_result_value(r, i, 0);
            if (v->len < 0) continue;
            /* filter by keyspace_name; SELECT JSON sorts keys, so look for
             * the field instead of assuming its position */
            char *row = cf_xstrndup((const char *)v->data, (size_t)v->len);
            const char *k = strstr(row, "\"keyspace_name\": \"");
            bool keep = false;
            if (k) {
                k += 18;
                const char *e = strchr(k, '"');
                if (e) {
                    char *ks = cf_xstrndup(k, (size_t)(e - k));
                    keep = wanted(ks, keyspaces);
                    free(ks);
                }
            }
            if (keep) {
                cf_buf_printf(&out, "%s%s", any ? ", " : "", row);
                any = true;
            }
            free(row);
        }
        cf_buf_append_byte(&out, ']');
        cf_cql_result_free(r);
    }
    cf_buf_append_byte(&out, '}');
    *json = cf_buf_detach(&out, NULL);
    return CF_OK;
}

cf_code cf_cql_load_schema(cf_cql_conn *c, const char *const *keyspaces, cf_cass_schema *s, cf_err *err) {
    char *json = NULL;
    cf_code rc = cf_cql_fetch_schema_json(c, keyspaces, &json, err);
    if (rc) return rc;
    rc = cf_cass_schema_load_system_json(s, json, strlen(json), err);
    free(json);
    return rc;
}

cf_code cf_cql_register_schema_events(cf_cql_conn *c, cf_err *err) {
    cf_buf b = CF_BUF_INIT;
    put_u16(&b, 1);
    put_string(&b, "SCHEMA_CHANGE");
    uint8_t op;
    uint8_t *body;
    size_t len;
    cf_code rc = request(c, OP_REGISTER, &b, "REGISTER", &op, &body, &len, err);
    cf_buf_free(&b);
    if (rc) return rc;
    free(body);
    if (op != OP_READY) return corrupt(c, err, "REGISTER response", op, len);
    return CF_OK;
}

cf_code cf_cql_next_event(cf_cql_conn *c, int timeout_ms, cf_cql_event *ev, cf_err *err) {
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        if (c->n_events) {
            *ev = c->events[0];
            memmove(c->events, c->events + 1, (c->n_events - 1) * sizeof *c->events);
            c->n_events--;
            return CF_OK;
        }
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        /* v5: bytes of the next envelope may already sit in the segment buffer */
        int r = c->in_len > c->in_pos ? 1 : poll(&p, 1, left > 0 ? (int)left : 0);
        if (r == 0) {
            cf_err_set(err, CF_ERR_AGAIN, "no schema change event within %d ms", timeout_ms);
            return CF_ERR_AGAIN;
        }
        if (r < 0) {
            if (errno == EINTR) continue;
            return io_fail(c, err, "poll failed");
        }
        uint8_t op;
        int16_t st;
        uint8_t *b;
        size_t n;
        cf_code rc = recv_frame(c, now_ms() + c->request_timeout_ms, &op, &st, &b, &n, err);
        if (rc) return rc;
        if (st == -1 && op == OP_EVENT) rc = parse_event(c, b, n, err);
        else rc = corrupt(c, err, "unsolicited frame (not an EVENT)", op, n);
        free(b);
        if (rc) return rc;
    }
}
