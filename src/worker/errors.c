/*
 * errors.c - the dead letter queue's context headers, named exactly as
 * Kafka Connect names them (org.apache.kafka.connect.runtime.errors.
 * DeadLetterQueueReporter), so tools written for Connect's DLQ read ours:
 *   __connect.errors.topic / .partition / .offset   where the record came from
 *   __connect.errors.connector.name / .task.id
 *   __connect.errors.stage                          KEY_CONVERTER, TASK_PUT, ...
 *   __connect.errors.class.name                     what ran (converter, connector)
 *   __connect.errors.exception.class.name           the Java exception Connect throws
 *                                                   for such an error (cf_exception_class)
 *   __connect.errors.exception.message              the message (+ detail)
 *   __connect.errors.exception.stacktrace           the whole error report
 *   __cdcflow.errors.code                           our cf_code name (CF_ERR_SCHEMA, ...)
 * Header values are UTF-8 strings, as Connect writes them.
 *
 * And errors.tolerance: a task that fails for good (cf_task_fail) and a
 * record that failed in a stage (cf_task_report_error: tolerated or not,
 * logged, sent to the dead letter queue).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "cdcflow/log.h"
#include "worker_state.h"

static const char *const stage_names[] = {"KEY_CONVERTER", "VALUE_CONVERTER", "HEADER_CONVERTER", "TRANSFORMATION",
                                          "TASK_PUT",      "TASK_POLL",       "KAFKA_PRODUCE",    "KAFKA_CONSUME"};

const char *cf_stage_name(cf_stage s) {
    return (unsigned)s < sizeof stage_names / sizeof *stage_names ? stage_names[s] : "UNKNOWN";
}

static void hdr(cf_msg *m, const char *k, const char *v) { cf_msg_add_header(m, k, v, strlen(v)); }

void cf_dlq_add_headers(cf_msg *m, const char *orig_topic, int32_t partition, int64_t offset, const char *connector,
                        int task_id, cf_stage stage, const char *class_name, const cf_err *problem) {
    char num[32];
    hdr(m, "__connect.errors.topic", orig_topic ? orig_topic : "");
    snprintf(num, sizeof num, "%d", (int)partition);
    hdr(m, "__connect.errors.partition", num);
    snprintf(num, sizeof num, "%lld", (long long)offset);
    hdr(m, "__connect.errors.offset", num);
    hdr(m, "__connect.errors.connector.name", connector ? connector : "");
    snprintf(num, sizeof num, "%d", task_id);
    hdr(m, "__connect.errors.task.id", num);
    hdr(m, "__connect.errors.stage", cf_stage_name(stage));
    hdr(m, "__connect.errors.class.name", class_name ? class_name : "");
    if (problem) {
        hdr(m, "__connect.errors.exception.class.name", cf_exception_class(problem->code));
        char msg[1100];
        if (problem->detail[0])
            snprintf(msg, sizeof msg, "%s: %s", problem->message, problem->detail);
        else
            snprintf(msg, sizeof msg, "%s", problem->message);
        hdr(m, "__connect.errors.exception.message", msg);
        char trace[2048];
        cf_err_format(problem, trace, sizeof trace);
        hdr(m, "__connect.errors.exception.stacktrace", trace);
        hdr(m, "__cdcflow.errors.code", cf_code_name(problem->code));
    }
}

/* The exception class Kafka Connect reports for an error of this kind, so
 * that DLQ tools and alerts written for Connect (which filter on
 * __connect.errors.exception.class.name) classify ours the same way: bad
 * record bytes or values are a DataException (what Connect's converters and
 * transforms throw), configuration a ConfigException, a peer that may come
 * back a RetriableException, anything else a ConnectException. */
const char *cf_exception_class(cf_code code) {
    switch (code) {
    case CF_ERR_INVALID:
    case CF_ERR_CORRUPT:
    case CF_ERR_SCHEMA:
    case CF_ERR_UNSUPPORTED: return "org.apache.kafka.connect.errors.DataException";
    case CF_ERR_CONFIG: return "org.apache.kafka.common.config.ConfigException";
    case CF_ERR_IO:
    case CF_ERR_TRANSPORT:
    case CF_ERR_AGAIN: return "org.apache.kafka.connect.errors.RetriableException";
    default: return "org.apache.kafka.connect.errors.ConnectException";
    }
}

int64_t cf_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---------------- task failure and error reporting ---------------- */

void cf_task_fail(task *t, const cf_err *err) {
    char buf[2048];
    cf_err_format(err, buf, sizeof buf);
    pthread_mutex_lock(&t->mu);
    snprintf(t->trace, sizeof t->trace, "%s", buf);
    t->fail_err = *err;
    pthread_mutex_unlock(&t->mu);
    atomic_store(&t->state, CF_STATE_FAILED);
    cf_log(CF_LOG_ERROR, COMP, "task %s-%d failed: %s%s%s", t->c->name, t->id, err->message,
           err->detail[0] ? ": " : "", err->detail);
    if (err->hint[0]) cf_log(CF_LOG_ERROR, COMP, "task %s-%d: HINT: %s", t->c->name, t->id, err->hint);
}

/* Apply errors.tolerance to one bad record. raw (may be NULL) is the
 * original message, sent to the DLQ with the context headers. Returns CF_OK
 * when the record is to be skipped, else the error that fails the task. */
cf_code cf_task_report_error(task *t, cf_stage stage, const char *class_name, const cf_msg *raw,
                            const cf_record *rec, const cf_err *problem, cf_err *err) {
    conn *c = t->c;
    atomic_fetch_add(&t->m.errors, 1);
    if (!c->tolerate_all) {
        if (err) {
            *err = *problem;
            char where[256];
            snprintf(where, sizeof where, "%s", problem->where);
            cf_err_where(err, "%s%sconnector %s task %d, stage %s%s%s@%lld", where, where[0] ? "; " : "",
                         c->name, t->id, cf_stage_name(stage), raw ? ", " : "", raw ? raw->topic : "",
                         raw ? (long long)raw->offset : -1LL);
            if (!err->hint[0])
                cf_err_hint(err, "Fix the record or set errors.tolerance=all (with errors.log.enable or "
                                 "errors.deadletterqueue.topic.name) to skip bad records.");
        }
        return problem->code ? problem->code : CF_ERR_INVALID;
    }
    atomic_fetch_add(&c->w->errors, 1);
    atomic_fetch_add(&t->m.skipped, 1);
    if (c->log_errors) {
        const char *topic = raw ? raw->topic : rec ? rec->topic : "";
        long long off = raw ? (long long)raw->offset : rec ? (long long)rec->offset : -1;
        int part = raw ? raw->partition : rec ? rec->partition : -1;
        /* what was skipped, and where: a bad input unit (a record file's
         * line, a source's row) has no topic or offset, only the location
         * the problem names (file, line, byte offset) */
        char what[512];
        int wl = (topic && *topic) || off >= 0
                     ? snprintf(what, sizeof what, "record %s-%d@%lld", topic ? topic : "", part, off)
                     : snprintf(what, sizeof what, "record");
        if (problem->where[0] && wl >= 0 && (size_t)wl < sizeof what)
            snprintf(what + wl, sizeof what - (size_t)wl, " at %s", problem->where);
        if (c->log_messages) {
            char *k = NULL, *v = NULL;
            if (raw) {
                k = raw->key ? cf_xstrndup(raw->key, raw->key_len > 512 ? 512 : raw->key_len) : cf_xstrdup("null");
                v = raw->value ? cf_xstrndup(raw->value, raw->value_len > 1024 ? 1024 : raw->value_len)
                               : cf_xstrdup("null");
            } else if (rec) {
                k = cf_value_debug_string(rec->key);
                v = cf_value_debug_string(rec->value);
            }
            cf_log(CF_LOG_ERROR, COMP,
                   "error in stage %s (%s) of connector %s task %d, %s skipped "
                   "(errors.tolerance=all): %s%s%s; key=%s value=%s",
                   cf_stage_name(stage), class_name, c->name, t->id, what, problem->message,
                   problem->detail[0] ? ": " : "", problem->detail, k ? k : "", v ? v : "");
            free(k), free(v);
        } else {
            cf_log(CF_LOG_ERROR, COMP,
                   "error in stage %s (%s) of connector %s task %d, %s skipped "
                   "(errors.tolerance=all): %s%s%s",
                   cf_stage_name(stage), class_name, c->name, t->id, what, problem->message,
                   problem->detail[0] ? ": " : "", problem->detail);
        }
    }
    if (c->dlq_topic && t->has_dlq) {
        cf_msg *m = raw ? cf_msg_clone(raw) : cf_msg_new();
        if (!raw && rec) {
            /* direct mode: no bytes exist; write the record as JSON for people to read */
            char *k = cf_worker_json_from_value(rec->key), *v = cf_worker_json_from_value(rec->value);
            cf_msg_set_key(m, k, strlen(k));
            cf_msg_set_value(m, v, strlen(v));
            free(k), free(v);
        }
        const char *orig_topic = raw ? raw->topic : rec ? rec->topic : "";
        int32_t part = raw ? raw->partition : rec ? rec->partition : -1;
        int64_t off = raw ? raw->offset : rec ? rec->offset : -1;
        char *orig = cf_xstrdup(orig_topic ? orig_topic : "");
        cf_msg_set_topic(m, c->dlq_topic);
        m->partition = CF_PARTITION_ANY;
        m->offset = CF_OFFSET_NONE;
        if (c->dlq_headers) cf_dlq_add_headers(m, orig, part, off, c->name, t->id, stage, class_name, problem);
        free(orig);
        cf_ack *a = cf_ack_new();
        cf_err e2;
        cf_code rc;
        int backoff = 100;
        while ((rc = t->dlq.send(t->dlq.state, m, a, &e2)) == CF_ERR_AGAIN && !atomic_load(&t->stop)) {
            t->dlq.serve(t->dlq.state, backoff);
            if (backoff < 10000) backoff *= 2;
        }
        cf_msg_destroy(m);
        if (rc) {
            cf_ack_free(a);
            if (err) *err = e2;
            return rc;
        }
        /* Connect waits for the DLQ write before it commits; so do we (flush below). */
        rc = t->dlq.flush(t->dlq.state, cf_task_wait_ms(t, (int)c->w->flush_timeout_ms), &e2);
        bool failed = atomic_load(&a->failed) || atomic_load(&a->pending) > 0;
        cf_ack_free(a);
        if (rc || failed) {
            if (err) {
                if (rc) *err = e2;
                else cf_err_set(err, CF_ERR_TRANSPORT, "could not write to the dead letter queue \"%s\"",
                                c->dlq_topic);
            }
            return rc ? rc : CF_ERR_TRANSPORT;
        }
        atomic_fetch_add(&t->m.dlq, 1);
    }
    return CF_OK;
}
