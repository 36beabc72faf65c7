/*
 * test_cql_replay.c - the CQL client against frames recorded from a real
 * Cassandra 5.0.5 node (tests/data/cassandra/cql-replay/schema.frames, made by
 * test_it_cql with CF_CQL_RECORD_DIR; each frame is the 9-byte header and
 * body exactly as the server sent them). A scripted server thread answers
 * each request with the next recorded frame on a socketpair, so this runs
 * without a node: same calls as test_it_cql's test_schema_matches_describe,
 * same checks (system_schema read by the client == DESCRIBE parsed by the
 * DDL parser). Then every frame is damaged (truncated, bytes changed) and the
 * client must answer with an error or a valid result, never crash.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_cql.h"
#include "cdcflow/cassandra_schema.h"

typedef struct frame {
    uint8_t *p;
    size_t len;
} frame;

static frame frames[256];
static size_t n_frames;

static void load_frames(void) {
    if (n_frames) return;
    FILE *f = fopen(CF_TESTS_DIR "/data/cassandra/cql-replay/schema.frames", "rb");
    if (!f) fail_msg("cannot open schema.frames");
    uint8_t h[9];
    while (fread(h, 1, 9, f) == 9) {
        uint32_t n = (uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8];
        frame fr = {malloc(9 + n), 9 + n};
        memcpy(fr.p, h, 9);
        if (fread(fr.p + 9, 1, n, f) != n) fail_msg("short frame");
        assert_true(n_frames < 256);
        frames[n_frames++] = fr;
    }
    fclose(f);
    assert_true(n_frames > 10);
}

typedef struct server {
    int fd;
    ssize_t damage_frame; /* -1: none */
    size_t damage_pos;
    bool truncate;
} server;

static bool rd_all(int fd, uint8_t *p, size_t n) {
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) return false;
        p += r, n -= (size_t)r;
    }
    return true;
}

static void *serve(void *arg) {
    server *s = arg;
    for (size_t i = 0; i < n_frames; i++) {
        uint8_t h[9];
        if (!rd_all(s->fd, h, 9)) break;
        uint32_t n = (uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8];
        uint8_t *body = malloc(n ? n : 1);
        bool ok = rd_all(s->fd, body, n);
        free(body);
        if (!ok) break;
        frame fr = frames[i];
        uint8_t *out = malloc(fr.len);
        memcpy(out, fr.p, fr.len);
        out[2] = h[2], out[3] = h[3]; /* answer on the request's stream */
        size_t len = fr.len;
        if ((ssize_t)i == s->damage_frame) {
            if (s->truncate) len = s->damage_pos < len ? s->damage_pos : len;
            else out[s->damage_pos % fr.len] ^= 0x5a;
        }
        bool wok = send(s->fd, out, len, MSG_NOSIGNAL) == (ssize_t)len;
        free(out);
        if (!wok || len != fr.len) break;
    }
    close(s->fd);
    return NULL;
}

static const char *ddl_statements[] = {
    "CREATE KEYSPACE IF NOT EXISTS itks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TYPE IF NOT EXISTS itks.\"Addr\" (...)", "CREATE TABLE IF NOT EXISTS itks.t (...)",
    "CREATE TABLE IF NOT EXISTS itks.k (...)", NULL};

/* The calls test_it_cql made while recording; returns the first error. */
static cf_code run_session(server *srv, cf_cass_schema **out_s, cf_cass_schema **out_d, cf_err *err) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    srv->fd = sv[1];
    pthread_t th;
    pthread_create(&th, NULL, serve, srv);
    /* a damaged length makes the client wait for bytes that never come */
    cf_cql_options o = {.host = "replay", .port = 0, .request_timeout_ms = srv->damage_frame >= 0 ? 300 : 5000,
                        .page_size = 100};
    cf_cql_conn *c = NULL;
    cf_cass_schema *s = cf_cass_schema_new(), *d = cf_cass_schema_new();
    cf_cql_result *r = NULL;
    cf_code rc = cf_cql_connect_fd(sv[0], &o, &c, err);
    for (size_t i = 0; !rc && ddl_statements[i]; i++) {
        rc = cf_cql_query(c, ddl_statements[i], CF_CQL_ONE, &r, err);
        cf_cql_result_free(r);
        r = NULL;
    }
    if (!rc) rc = cf_cql_query(c, "SELECT release_version FROM system.local", CF_CQL_ONE, &r, err);
    if (!rc) {
        if (r->n_rows != 1 || r->n_columns != 1) rc = cf_err_set(err, CF_ERR_INTERNAL, "release_version shape");
        else {
            char *v = cf_cql_result_text(r, 0, 0);
            if (!v || strncmp(v, "5.0.", 4) != 0) rc = cf_err_set(err, CF_ERR_INTERNAL, "release_version %s", v ? v : "null");
            free(v);
        }
    }
    cf_cql_result_free(r);
    r = NULL;
    const char *const kss[] = {"itks", NULL};
    if (!rc) rc = cf_cql_load_schema(c, kss, s, err);
    if (!rc) rc = cf_cql_query(c, "DESCRIBE KEYSPACE itks WITH INTERNALS", CF_CQL_ONE, &r, err);
    if (!rc) {
        size_t col = SIZE_MAX;
        for (size_t i = 0; i < r->n_columns; i++)
            if (r->column_names[i] && strcmp(r->column_names[i], "create_statement") == 0) col = i;
        cf_buf ddl = CF_BUF_INIT;
        for (size_t i = 0; col != SIZE_MAX && i < r->n_rows; i++) {
            char *st = cf_cql_result_text(r, i, col);
            if (st) cf_buf_printf(&ddl, "%s\n", st);
            free(st);
        }
        if (col == SIZE_MAX) rc = cf_err_set(err, CF_ERR_INTERNAL, "no create_statement column");
        else rc = cf_cass_ddl_parse(d, ddl.data ? ddl.data : "", ddl.len, "describe", err);
        cf_buf_free(&ddl);
    }
    cf_cql_result_free(r);
    cf_cql_close(c);
    if (!c) close(sv[0]);
    pthread_join(th, NULL);
    if (out_s && !rc) {
        *out_s = s;
        *out_d = d;
    } else {
        cf_cass_schema_destroy(s);
        cf_cass_schema_destroy(d);
    }
    return rc;
}

static void test_replay_schema(void **state) {
    (void)state;
    load_frames();
    server srv = {.damage_frame = -1};
    cf_cass_schema *s = NULL, *d = NULL;
    cf_err err;
    if (run_session(&srv, &s, &d, &err) != CF_OK) fail_msg("%s / %s / %s", err.message, err.detail, err.where);
    const cf_cass_table *ts = cf_cass_schema_table_by_name(s, "itks", "t");
    const cf_cass_table *td = cf_cass_schema_table_by_name(d, "itks", "t");
    assert_non_null(ts);
    assert_non_null(td);
    assert_memory_equal(ts->id, td->id, 16);
    assert_true(ts->cdc);
    assert_int_equal(ts->n_partition_key, 2);
    assert_string_equal(ts->partition_key[1].name, "b");
    assert_true(ts->clustering[0].reversed);
    assert_false(ts->clustering[1].reversed);
    assert_int_equal(ts->n_static, 1);
    assert_int_equal(cf_cass_table_column_count(ts), cf_cass_table_column_count(td));
    for (size_t i = 0; i < ts->n_regular; i++) {
        const cf_cass_column *x = cf_cass_table_column(td, ts->regular[i].name);
        assert_non_null(x);
        assert_true(cf_cql_type_equal(x->type, ts->regular[i].type));
    }
    const cf_cass_column *u = cf_cass_table_column(ts, "u");
    assert_true(cf_cql_type_is_multicell(u->type));
    assert_string_equal(cf_cql_type_field_name(u->type, 2), "tags");
    assert_non_null(cf_cass_schema_udt(s, "itks", "Addr"));
    assert_non_null(cf_cass_schema_table_by_name(s, "itks", "k"));
    cf_cass_schema_destroy(s);
    cf_cass_schema_destroy(d);
}

static void test_replay_damaged(void **state) {
    (void)state;
    load_frames();
    size_t errors = 0, runs = 0;
    for (size_t f = 0; f < n_frames; f++) {
        size_t len = frames[f].len;
        size_t step = len / 12 + 1;
        for (size_t pos = 0; pos < len; pos += step) {
            for (int trunc = 0; trunc < 2; trunc++) {
                server srv = {.damage_frame = (ssize_t)f, .damage_pos = pos, .truncate = trunc};
                cf_err err;
                cf_code rc = run_session(&srv, NULL, NULL, &err);
                runs++;
                if (rc) {
                    errors++;
                    assert_true(err.message[0] != '\0');
                }
                if (trunc) assert_int_not_equal(rc, CF_OK); /* a cut frame can never pass */
            }
        }
    }
    assert_true(errors > runs / 2);
}

/* An EVENT frame built from the protocol spec (v4 section 4.2.6). */
static void test_event_frame(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    /* READY for STARTUP, READY for REGISTER, then an unsolicited event */
    uint8_t ready1[] = {0x84, 0, 0, 1, 0x02, 0, 0, 0, 0};
    uint8_t ready2[] = {0x84, 0, 0, 2, 0x02, 0, 0, 0, 0};
    cf_buf ev = CF_BUF_INIT;
    const char *parts[] = {"SCHEMA_CHANGE", "UPDATED", "TABLE", "ks", "tbl"};
    for (int i = 0; i < 5; i++) {
        uint8_t l[2] = {0, (uint8_t)strlen(parts[i])};
        cf_buf_append(&ev, l, 2);
        cf_buf_append_str(&ev, parts[i]);
    }
    uint8_t eh[9] = {0x84, 0, 0xff, 0xff, 0x0C, 0, 0, 0, (uint8_t)ev.len};
    assert_int_equal(write(sv[1], ready1, 9), 9);
    assert_int_equal(write(sv[1], ready2, 9), 9);
    assert_int_equal(write(sv[1], eh, 9), 9);
    assert_int_equal(write(sv[1], ev.data, ev.len), (ssize_t)ev.len);
    cf_buf_free(&ev);
    cf_cql_conn *c = NULL;
    cf_err err;
    assert_int_equal(cf_cql_connect_fd(sv[0], NULL, &c, &err), CF_OK);
    assert_int_equal(cf_cql_register_schema_events(c, &err), CF_OK);
    cf_cql_event e;
    assert_int_equal(cf_cql_next_event(c, 1000, &e, &err), CF_OK);
    assert_string_equal(e.change, "UPDATED");
    assert_string_equal(e.target, "TABLE");
    assert_string_equal(e.keyspace, "ks");
    assert_string_equal(e.name, "tbl");
    assert_int_equal(cf_cql_next_event(c, 50, &e, &err), CF_ERR_AGAIN);
    /* the server goes away */
    close(sv[1]);
    assert_int_equal(cf_cql_next_event(c, 1000, &e, &err), CF_ERR_TRANSPORT);
    cf_cql_close(c);
}

/* A server that answers with an ERROR frame (bad credentials, protocol). */
static void test_error_frames(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    const char *msg = "Provided username x and/or password are incorrect";
    uint8_t body[128];
    size_t n = 0;
    body[n++] = 0, body[n++] = 0, body[n++] = 0x01, body[n++] = 0x00; /* 0x0100 bad credentials */
    body[n++] = 0, body[n++] = (uint8_t)strlen(msg);
    memcpy(body + n, msg, strlen(msg));
    n += strlen(msg);
    uint8_t h[9] = {0x84, 0, 0, 1, 0x00, 0, 0, 0, (uint8_t)n};
    assert_int_equal(write(sv[1], h, 9), 9);
    assert_int_equal(write(sv[1], body, n), (ssize_t)n);
    cf_cql_conn *c = NULL;
    cf_err err;
    assert_int_equal(cf_cql_connect_fd(sv[0], NULL, &c, &err), CF_ERR_CONFIG);
    assert_null(c);
    assert_non_null(strstr(err.detail, "incorrect"));
    close(sv[1]);
    /* a non-CQL server (HTTP) */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(write(sv[1], "HTTP/1.1 400 Bad Request\r\n\r\n", 28), 28);
    assert_int_equal(cf_cql_connect_fd(sv[0], NULL, &c, &err), CF_ERR_CORRUPT);
    assert_non_null(strstr(err.hint, "9042"));
    close(sv[1]);
}


/* Protocol v5 segments: the bytes below were framed by Cassandra's own
 * org.apache.cassandra.net.Crc (scripts/cassandra-oracle/SegOracle.java):
 * a self-contained segment holding a READY envelope for stream 2. */
static const uint8_t ready_segment[] = {0x09, 0x00, 0x02, 0xa4, 0xc8, 0xc1, 0x85, 0x00, 0x00, 0x02,
                                        0x02, 0x00, 0x00, 0x00, 0x00, 0x44, 0xfb, 0x95, 0xd4};

static cf_code v5_session(ssize_t damage) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    /* STARTUP is answered outside segments (legacy framing), then segments */
    uint8_t ready1[] = {0x85, 0, 0, 1, 0x02, 0, 0, 0, 0};
    uint8_t seg[sizeof ready_segment];
    memcpy(seg, ready_segment, sizeof seg);
    if (damage >= 0) seg[damage] ^= 0x01;
    assert_int_equal(write(sv[1], ready1, 9), 9);
    assert_int_equal(write(sv[1], seg, sizeof seg), (ssize_t)sizeof seg);
    cf_cql_options o = {.protocol_version = 5, .request_timeout_ms = 500};
    cf_cql_conn *c = NULL;
    cf_err err;
    cf_code rc = cf_cql_connect_fd(sv[0], &o, &c, &err);
    assert_int_equal(rc, CF_OK);
    assert_int_equal(cf_cql_protocol_version(c), 5);
    rc = cf_cql_register_schema_events(c, &err);
    /* what the client sent for REGISTER is one segment: 6-byte header,
     * payload (9-byte envelope header + body), 4-byte CRC32 */
    uint8_t in[512];
    size_t got = 0;
    while (got < 9 + 22 + 6) { /* STARTUP (legacy) then the REGISTER segment header */
        ssize_t r = read(sv[1], in + got, sizeof in - got);
        assert_true(r > 0);
        got += (size_t)r;
    }
    assert_int_equal(in[0], 0x05); /* STARTUP: a v5 request, legacy framing */
    size_t slen = (size_t)in[5] << 24 | (size_t)in[6] << 16 | (size_t)in[7] << 8 | in[8];
    const uint8_t *sg = in + 9 + slen;
    size_t plen = (size_t)sg[0] | (size_t)sg[1] << 8 | (size_t)(sg[2] & 1) << 16;
    assert_true(sg[2] & 0x02);  /* self-contained */
    assert_int_equal(sg[6], 0x05); /* the envelope inside: a v5 request */
    assert_int_equal(sg[6 + 4], 0x0B); /* REGISTER */
    assert_true(plen > 9);
    if (rc) assert_true(err.message[0] != '\0');
    cf_cql_close(c);
    close(sv[1]);
    return rc;
}

static void test_v5_segments(void **state) {
    (void)state;
    assert_int_equal(v5_session(-1), CF_OK);
    /* any changed bit in the header, its CRC24, the payload or the CRC32 is caught */
    for (size_t i = 0; i < sizeof ready_segment; i++) {
        cf_code rc = v5_session((ssize_t)i);
        if (rc == CF_OK) fail_msg("damaged byte %zu accepted", i);
    }
}

/* PasswordAuthenticator: STARTUP -> AUTHENTICATE, AUTH_RESPONSE carries the
 * SASL PLAIN token "\0user\0password" (native_protocol_v4.spec 4.2.3, 4.1.2),
 * AUTH_SUCCESS completes. (Checked live against a 5.0.5 node started with
 * scripts/cassandra-node --auth, over v4 and v5.) */
static void test_auth_plain(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    const char *cls = "org.apache.cassandra.auth.PasswordAuthenticator";
    uint8_t auth[128];
    size_t n = 0;
    auth[n++] = 0, auth[n++] = (uint8_t)strlen(cls);
    memcpy(auth + n, cls, strlen(cls));
    n += strlen(cls);
    uint8_t h1[9] = {0x84, 0, 0, 1, 0x03, 0, 0, 0, (uint8_t)n};
    uint8_t h2[9] = {0x84, 0, 0, 2, 0x10, 0, 0, 0, 4};
    uint8_t ok[4] = {0xff, 0xff, 0xff, 0xff}; /* [bytes] null token */
    assert_int_equal(write(sv[1], h1, 9), 9);
    assert_int_equal(write(sv[1], auth, n), (ssize_t)n);
    assert_int_equal(write(sv[1], h2, 9), 9);
    assert_int_equal(write(sv[1], ok, 4), 4);
    cf_cql_options o = {.username = "user", .password = "secret"};
    cf_cql_conn *c = NULL;
    cf_err err;
    assert_int_equal(cf_cql_connect_fd(sv[0], &o, &c, &err), CF_OK);
    uint8_t in[256];
    size_t got = 0;
    while (got < 9 + 22 + 9 + 4 + 12) {
        ssize_t r = read(sv[1], in + got, sizeof in - got);
        assert_true(r > 0);
        got += (size_t)r;
    }
    const uint8_t *ar = in + 9 + 22; /* after STARTUP */
    assert_int_equal(ar[4], 0x0F);   /* AUTH_RESPONSE */
    assert_int_equal(ar[12], 12);    /* token length */
    assert_memory_equal(ar + 13, "\0user\0secret", 12);
    cf_cql_close(c);
    close(sv[1]);
    /* without credentials: a clear configuration error */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(write(sv[1], h1, 9), 9);
    assert_int_equal(write(sv[1], auth, n), (ssize_t)n);
    assert_int_equal(cf_cql_connect_fd(sv[0], NULL, &c, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "PasswordAuthenticator"));
    assert_true(err.hint[0] != '\0');
    close(sv[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_schema),
        cmocka_unit_test(test_replay_damaged),
        cmocka_unit_test(test_event_frame),
        cmocka_unit_test(test_error_frames),
        cmocka_unit_test(test_v5_segments),
        cmocka_unit_test(test_auth_plain),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (size_t i = 0; i < n_frames; i++) free(frames[i].p);
    return rc;
}
