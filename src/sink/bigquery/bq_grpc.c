/*
 * bq_grpc.c - one AppendRows bidi stream of BigQuery's Storage Write API on
 * gRPC's C core (Debian's libgrpc-dev, grpc/grpc.h).
 *
 * A cf_bq_stream is one channel (one HTTP/2 connection: the channel takes a
 * subchannel pool of its own, else gRPC would share one connection among
 * every table's channels, and BigQuery wants one CDC connection per table)
 * and at most one call on it, driven from one completion queue by the
 * caller's thread:
 *
 *   open    SEND_INITIAL_METADATA (authorization: Bearer, x-goog-request-
 *           params: write_stream=<name>, which routes the call to the
 *           table's region), RECV_STATUS_ON_CLIENT, and the first
 *           RECV_INITIAL_METADATA + RECV_MESSAGE
 *   send    SEND_MESSAGE; gRPC allows one send in flight per call, so a
 *           send first waits for the previous one (responses that arrive
 *           meanwhile are queued, never dropped)
 *   recv    the next queued response; a RECV_MESSAGE is always armed, so
 *           responses keep flowing while requests are sent
 *   close   half-close and wait briefly for the status, then cancel; every
 *           operation is drained before the call is freed, so no event of an
 *           old call can reach a new one
 *
 * The token is sent as call metadata, so a refreshed token takes a new call
 * (the caller reopens the stream when its token changed).
 *
 * The channel also carries the unary GetWriteStream call
 * (cf_bq_get_write_stream), on a completion queue of its own so that none
 * of its events can reach the AppendRows call's queue; it has a deadline,
 * since a server that never answers must not hold a flush forever.
 */
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/bigquery.h"
#include "cdcflow/log.h"
#include "cdcflow/version.h"

#define METHOD "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"
#define METHOD_GET "/google.cloud.bigquery.storage.v1.BigQueryWrite/GetWriteStream"

enum { TAG_START = 1, TAG_SEND, TAG_RECV, TAG_STATUS, TAG_CLOSE };

struct cf_bq_stream {
    char *target;       /* gRPC target "host:port" */
    char *endpoint;     /* as configured, for messages */
    bool tls;
    char *write_stream;
    char *params;       /* x-goog-request-params value for AppendRows */
    char *get_params;   /* ... and for GetWriteStream */
    grpc_channel *ch;
    grpc_completion_queue *cq;
    /* the call */
    grpc_call *call;
    grpc_slice md_vals[2];
    bool md_set;
    bool start_busy, send_busy, recv_busy, close_busy, status_done;
    grpc_byte_buffer *send_bb, *recv_bb;
    grpc_metadata_array init_md, trailing_md;
    grpc_status_code status;
    grpc_slice status_details;
    const char *error_string;
    /* responses received, not yet taken */
    cf_buf *q;
    size_t qh, qn, qcap;
};

static void *tag(int t) { return (void *)(intptr_t)t; }

/* "http://h:p" -> plaintext "h:p"; "https://h[:p]" and "h:p" -> TLS. */
static void parse_endpoint(cf_bq_stream *s, const char *ep) {
    const char *h = ep;
    s->tls = true;
    if (strncmp(ep, "http://", 7) == 0) h = ep + 7, s->tls = false;
    else if (strncmp(ep, "https://", 8) == 0) h = ep + 8;
    size_t n = strcspn(h, "/");
    cf_buf b = CF_BUF_INIT;
    cf_buf_append(&b, h, n);
    if (!memchr(h, ':', n)) cf_buf_append_str(&b, s->tls ? ":443" : ":80");
    s->target = cf_buf_detach(&b, NULL);
}

/* The routing header "<key>=<write stream name>", the name with the
 * characters a URL query value must escape escaped ('/' is kept, as
 * Google's clients send it). The key is the request's field that names the
 * stream: write_stream in AppendRowsRequest, name in GetWriteStreamRequest. */
static char *request_params(const char *key, const char *ws) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_printf(&b, "%s=", key);
    for (const unsigned char *p = (const unsigned char *)ws; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("-_.~/", *p))
            cf_buf_append_byte(&b, *p);
        else cf_buf_printf(&b, "%%%02X", *p);
    }
    return cf_buf_detach(&b, NULL);
}

cf_code cf_bq_stream_new(const char *endpoint, const char *write_stream, cf_bq_stream **out, cf_err *err) {
    *out = NULL;
    if (!endpoint || !*endpoint)
        return cf_err_set(err, CF_ERR_CONFIG, "the Storage Write API endpoint is empty");
    grpc_init();
    cf_bq_stream *s = cf_xcalloc(1, sizeof *s);
    s->endpoint = cf_xstrdup(endpoint);
    parse_endpoint(s, endpoint);
    s->write_stream = cf_xstrdup(write_stream);
    s->params = request_params("write_stream", write_stream);
    s->get_params = request_params("name", write_stream);
    char ua[64];
    snprintf(ua, sizeof ua, "cdcflow/%s", CF_VERSION_STRING);
    grpc_arg args[2];
    args[0].type = GRPC_ARG_STRING;
    args[0].key = GRPC_ARG_PRIMARY_USER_AGENT_STRING;
    args[0].value.string = ua;
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL;
    args[1].value.integer = 1;
    grpc_channel_args ca = {2, args};
    grpc_channel_credentials *creds =
        s->tls ? grpc_ssl_credentials_create(NULL, NULL, NULL, NULL) : grpc_insecure_credentials_create();
    s->ch = grpc_channel_create(s->target, creds, &ca);
    grpc_channel_credentials_release(creds);
    s->cq = grpc_completion_queue_create_for_next(NULL);
    if (!s->ch || !s->cq) {
        cf_bq_stream_destroy(s);
        return cf_err_set(err, CF_ERR_TRANSPORT, "cannot create a gRPC channel to %s", endpoint);
    }
    *out = s;
    return CF_OK;
}

/* Append a received message's bytes (its slices, in order) to b. */
static void bb_append(cf_buf *b, grpc_byte_buffer *bb) {
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, bb)) return;
    grpc_slice sl;
    while (grpc_byte_buffer_reader_next(&r, &sl)) {
        cf_buf_append(b, GRPC_SLICE_START_PTR(sl), GRPC_SLICE_LENGTH(sl));
        grpc_slice_unref(sl);
    }
    grpc_byte_buffer_reader_destroy(&r);
}

static void queue_push(cf_bq_stream *s, grpc_byte_buffer *bb) {
    if (s->qn == s->qcap) {
        size_t ncap = s->qcap ? s->qcap * 2 : 16;
        cf_buf *nq = cf_xcalloc(ncap, sizeof *nq);
        for (size_t i = 0; i < s->qn; i++) nq[i] = s->q[(s->qh + i) % s->qcap];
        free(s->q);
        s->q = nq, s->qh = 0, s->qcap = ncap;
    }
    cf_buf *b = &s->q[(s->qh + s->qn) % s->qcap];
    cf_buf_init(b);
    bb_append(b, bb);
    if (!b->data) cf_buf_reserve(b, 1);
    s->qn++;
}

static void arm_recv(cf_bq_stream *s, bool with_md) {
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    size_t n = 0;
    if (with_md) {
        ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[n++].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
    }
    ops[n].op = GRPC_OP_RECV_MESSAGE;
    ops[n++].data.recv_message.recv_message = &s->recv_bb;
    s->recv_bb = NULL;
    if (grpc_call_start_batch(s->call, ops, n, tag(TAG_RECV), NULL) == GRPC_CALL_OK) s->recv_busy = true;
}

/* Handle one completion-queue event; false on timeout. */
static bool pump(cf_bq_stream *s, gpr_timespec deadline) {
    grpc_event ev = grpc_completion_queue_next(s->cq, deadline, NULL);
    if (ev.type != GRPC_OP_COMPLETE) return false;
    switch ((int)(intptr_t)ev.tag) {
    case TAG_START: s->start_busy = false; break;
    case TAG_SEND:
        s->send_busy = false;
        grpc_byte_buffer_destroy(s->send_bb);
        s->send_bb = NULL;
        break;
    case TAG_CLOSE: s->close_busy = false; break;
    case TAG_RECV:
        s->recv_busy = false;
        if (ev.success && s->recv_bb) {
            queue_push(s, s->recv_bb);
            grpc_byte_buffer_destroy(s->recv_bb);
            s->recv_bb = NULL;
            if (!s->status_done) arm_recv(s, false);
        }
        break;
    case TAG_STATUS: s->status_done = true; break;
    }
    return true;
}

static gpr_timespec in_ms(int ms) {
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

static void call_free(cf_bq_stream *s) {
    if (!s->call) return;
    grpc_call_unref(s->call);
    s->call = NULL;
    grpc_metadata_array_destroy(&s->init_md);
    grpc_metadata_array_destroy(&s->trailing_md);
    grpc_slice_unref(s->status_details);
    if (s->error_string) gpr_free((void *)s->error_string);
    s->error_string = NULL;
    if (s->md_set) grpc_slice_unref(s->md_vals[0]), grpc_slice_unref(s->md_vals[1]);
    s->md_set = false;
    for (size_t i = 0; i < s->qn; i++) cf_buf_free(&s->q[(s->qh + i) % s->qcap]);
    s->qh = s->qn = 0;
    s->status_done = false;
}

void cf_bq_stream_close(cf_bq_stream *s) {
    if (!s || !s->call) return;
    if (!s->status_done && !s->send_busy) { /* half-close: the server ends the call cleanly */
        grpc_op op;
        memset(&op, 0, sizeof op);
        op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        if (grpc_call_start_batch(s->call, &op, 1, tag(TAG_CLOSE), NULL) == GRPC_CALL_OK) s->close_busy = true;
        gpr_timespec until = in_ms(1000);
        while (!s->status_done && gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), until) < 0)
            if (!pump(s, until)) break;
    }
    if (!s->status_done) grpc_call_cancel(s->call, NULL);
    while (s->start_busy || s->send_busy || s->recv_busy || s->close_busy || !s->status_done)
        pump(s, gpr_inf_future(GPR_CLOCK_MONOTONIC));
    call_free(s);
}

/* A call's metadata: authorization: Bearer <token> (left out without a
 * token) and x-goog-request-params: params. vals get the two value slices,
 * which the caller unrefs once the call is done; *md points at the first
 * entry to send in mdv. Returns the entry count. */
static size_t call_metadata(const char *token, const char *params, grpc_slice vals[2], grpc_metadata mdv[2],
                            grpc_metadata **md) {
    cf_buf auth = CF_BUF_INIT;
    cf_buf_printf(&auth, "Bearer %s", token ? token : "");
    vals[0] = grpc_slice_from_copied_buffer(auth.data, auth.len);
    vals[1] = grpc_slice_from_copied_string(params);
    cf_buf_free(&auth);
    memset(mdv, 0, 2 * sizeof *mdv);
    mdv[0].key = grpc_slice_from_static_string("authorization");
    mdv[0].value = vals[0];
    mdv[1].key = grpc_slice_from_static_string("x-goog-request-params");
    mdv[1].value = vals[1];
    *md = token ? mdv : mdv + 1;
    return token ? 2 : 1;
}

cf_code cf_bq_stream_open(cf_bq_stream *s, const char *token, cf_err *err) {
    cf_bq_stream_close(s);
    grpc_slice method = grpc_slice_from_static_string(METHOD);
    s->call = grpc_channel_create_call(s->ch, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq, method, NULL,
                                       gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (!s->call) return cf_err_set(err, CF_ERR_TRANSPORT, "cannot start an AppendRows call to %s", s->endpoint);
    grpc_metadata_array_init(&s->init_md);
    grpc_metadata_array_init(&s->trailing_md);
    s->status_details = grpc_empty_slice();
    s->status = GRPC_STATUS_OK;
    s->status_done = false;
    grpc_metadata mdv[2], *md;
    size_t nmd = call_metadata(token, s->params, s->md_vals, mdv, &md);
    s->md_set = true;
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_SEND_INITIAL_METADATA;
    op.data.send_initial_metadata.count = nmd;
    op.data.send_initial_metadata.metadata = md;
    grpc_call_error ce = grpc_call_start_batch(s->call, &op, 1, tag(TAG_START), NULL);
    if (ce == GRPC_CALL_OK) s->start_busy = true;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    op.data.recv_status_on_client.trailing_metadata = &s->trailing_md;
    op.data.recv_status_on_client.status = &s->status;
    op.data.recv_status_on_client.status_details = &s->status_details;
    op.data.recv_status_on_client.error_string = &s->error_string;
    if (ce == GRPC_CALL_OK) ce = grpc_call_start_batch(s->call, &op, 1, tag(TAG_STATUS), NULL);
    if (ce != GRPC_CALL_OK) {
        s->status_done = true; /* nothing armed for the status: do not wait for it */
        cf_bq_stream_close(s);
        return cf_err_set(err, CF_ERR_TRANSPORT, "cannot start an AppendRows call to %s (gRPC call error %d)",
                          s->endpoint, (int)ce);
    }
    arm_recv(s, true);
    return CF_OK;
}

bool cf_bq_stream_is_open(const cf_bq_stream *s) { return s && s->call && !s->status_done; }

/* A call's final status as an error: "<what> call to <endpoint> <how>:
 * CODE: details", gRPC's own error text as the detail. */
static cf_code status_error(const cf_bq_stream *s, const char *what, const char *how, grpc_status_code status,
                            grpc_slice details, const char *error_string, int *grpc_code, cf_err *err) {
    char *det = grpc_slice_to_c_string(details);
    if (grpc_code) *grpc_code = (int)status;
    cf_err_set(err, CF_ERR_TRANSPORT, "%s call to %s %s: %s%s%s", what, s->endpoint, how, cf_grpc_code_name((int)status),
               det && *det ? ": " : "", det ? det : "");
    if (error_string && *error_string) cf_err_detail(err, "%s", error_string);
    cf_err_where(err, "%s", s->write_stream);
    gpr_free(det);
    return CF_ERR_TRANSPORT;
}

static cf_code ended(cf_bq_stream *s, int *grpc_code, cf_err *err) {
    return status_error(s, "AppendRows", "ended", s->status, s->status_details, s->error_string, grpc_code, err);
}

cf_code cf_bq_stream_send(cf_bq_stream *s, const void *msg, size_t len, int *grpc_code, cf_err *err) {
    if (grpc_code) *grpc_code = CF_GRPC_OK;
    if (!s->call) return cf_err_set(err, CF_ERR_STATE, "AppendRows stream is not open");
    while (s->send_busy && !s->status_done) pump(s, gpr_inf_future(GPR_CLOCK_MONOTONIC));
    if (s->status_done) return ended(s, grpc_code, err);
    grpc_slice sl = grpc_slice_from_copied_buffer(msg, len);
    s->send_bb = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = s->send_bb;
    if (grpc_call_start_batch(s->call, &op, 1, tag(TAG_SEND), NULL) != GRPC_CALL_OK) {
        grpc_byte_buffer_destroy(s->send_bb);
        s->send_bb = NULL;
        return cf_err_set(err, CF_ERR_TRANSPORT, "AppendRows send to %s refused by gRPC", s->endpoint);
    }
    s->send_busy = true;
    return CF_OK;
}

cf_code cf_bq_stream_recv(cf_bq_stream *s, int timeout_ms, cf_buf *out, int *grpc_code, cf_err *err) {
    if (grpc_code) *grpc_code = CF_GRPC_OK;
    if (!s->call) return cf_err_set(err, CF_ERR_STATE, "AppendRows stream is not open");
    gpr_timespec until = in_ms(timeout_ms);
    for (;;) {
        if (s->qn) {
            cf_buf_free(out);
            *out = s->q[s->qh];
            s->qh = (s->qh + 1) % s->qcap;
            s->qn--;
            return CF_OK;
        }
        if (s->status_done && !s->recv_busy) return ended(s, grpc_code, err);
        if (!pump(s, until)) {
            if (grpc_code) *grpc_code = CF_GRPC_DEADLINE_EXCEEDED;
            cf_err_set(err, CF_ERR_AGAIN, "no AppendRows response from %s within %d ms", s->endpoint, timeout_ms);
            return CF_ERR_AGAIN;
        }
    }
}

cf_code cf_bq_get_write_stream(cf_bq_stream *s, const char *token, const void *req, size_t len, int timeout_ms,
                               cf_buf *out, int *grpc_code, cf_err *err) {
    if (grpc_code) *grpc_code = CF_GRPC_OK;
    cf_buf_reset(out);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    gpr_timespec deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms > 0 ? timeout_ms : 1, GPR_TIMESPAN));
    grpc_call *call = grpc_channel_create_call(s->ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                               grpc_slice_from_static_string(METHOD_GET), NULL, deadline, NULL);
    if (!call) {
        grpc_completion_queue_destroy(cq);
        return cf_err_set(err, CF_ERR_TRANSPORT, "cannot start a GetWriteStream call to %s", s->endpoint);
    }
    grpc_slice vals[2];
    grpc_metadata mdv[2], *md;
    size_t nmd = call_metadata(token, s->get_params, vals, mdv, &md);
    grpc_slice sl = grpc_slice_from_copied_buffer(req, len);
    grpc_byte_buffer *send_bb = grpc_raw_byte_buffer_create(&sl, 1), *recv_bb = NULL;
    grpc_slice_unref(sl);
    grpc_metadata_array init_md, trailing_md;
    grpc_metadata_array_init(&init_md);
    grpc_metadata_array_init(&trailing_md);
    grpc_status_code status = GRPC_STATUS_OK;
    grpc_slice details = grpc_empty_slice();
    const char *error_string = NULL;
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = nmd;
    ops[0].data.send_initial_metadata.metadata = md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send_bb;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv_bb;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing_md;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    ops[5].data.recv_status_on_client.error_string = &error_string;
    cf_code rc = CF_OK;
    grpc_call_error ce = grpc_call_start_batch(call, ops, 6, tag(TAG_START), NULL);
    if (ce != GRPC_CALL_OK) {
        rc = cf_err_set(err, CF_ERR_TRANSPORT, "cannot start a GetWriteStream call to %s (gRPC call error %d)",
                        s->endpoint, (int)ce);
    } else {
        /* the call's deadline ends the batch: no wait of our own needed */
        grpc_event ev = grpc_completion_queue_pluck(cq, tag(TAG_START), gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type != GRPC_OP_COMPLETE) {
            rc = cf_err_set(err, CF_ERR_TRANSPORT, "GetWriteStream call to %s did not complete", s->endpoint);
        } else if (status != GRPC_STATUS_OK) {
            rc = status_error(s, "GetWriteStream", "failed", status, details, error_string, grpc_code, err);
        } else if (recv_bb) {
            bb_append(out, recv_bb);
        }
    }
    if (recv_bb) grpc_byte_buffer_destroy(recv_bb);
    grpc_byte_buffer_destroy(send_bb);
    grpc_metadata_array_destroy(&init_md);
    grpc_metadata_array_destroy(&trailing_md);
    grpc_slice_unref(details);
    if (error_string) gpr_free((void *)error_string);
    grpc_slice_unref(vals[0]), grpc_slice_unref(vals[1]);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, tag(TAG_START), gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    return rc;
}

void cf_bq_stream_destroy(cf_bq_stream *s) {
    if (!s) return;
    cf_bq_stream_close(s);
    if (s->ch) grpc_channel_destroy(s->ch);
    if (s->cq) {
        grpc_completion_queue_shutdown(s->cq);
        while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN) {
        }
        grpc_completion_queue_destroy(s->cq);
    }
    free(s->q);
    free(s->target);
    free(s->endpoint);
    free(s->write_stream);
    free(s->params);
    free(s->get_params);
    free(s);
    grpc_shutdown();
}
