/*
 * errors.c - the dead letter queue's context headers, named exactly as
 * Kafka Connect names them (org.apache.kafka.connect.runtime.errors.
 * DeadLetterQueueReporter), so tools written for Connect's DLQ read ours:
 *   __connect.errors.topic / .partition / .offset   where the record came from
 *   __connect.errors.connector.name / .task.id
 *   __connect.errors.stage                          KEY_CONVERTER, TASK_PUT, ...
 *   __connect.errors.class.name                     what ran (converter, connector)
 *   __connect.errors.exception.class.name           the error's class: our cf_code name
 *   __connect.errors.exception.message              the message (+ detail)
 *   __connect.errors.exception.stacktrace           the whole error report
 * Header values are UTF-8 strings, as Connect writes them.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "worker_internal.h"

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
        hdr(m, "__connect.errors.exception.class.name", cf_code_name(problem->code));
        char msg[1100];
        if (problem->detail[0])
            snprintf(msg, sizeof msg, "%s: %s", problem->message, problem->detail);
        else
            snprintf(msg, sizeof msg, "%s", problem->message);
        hdr(m, "__connect.errors.exception.message", msg);
        char trace[2048];
        cf_err_format(problem, trace, sizeof trace);
        hdr(m, "__connect.errors.exception.stacktrace", trace);
    }
}

int64_t cf_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
