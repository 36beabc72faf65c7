/*
 * timestamp_router.c - org.apache.kafka.connect.transforms.TimestampRouter:
 * the topic becomes topic.format with ${topic} and ${timestamp} (the
 * record's timestamp formatted with timestamp.format, a SimpleDateFormat
 * pattern, in UTC), e.g. "orders" at 2017-01-03 -> "orders-20170103", so a
 * table sink writes one table per day.
 *
 * As Kafka (TimestampRouter.java): a record without a timestamp is an
 * error ("Timestamp missing on record"); ${topic} is replaced first, then
 * ${timestamp}. The pattern is checked when the transform is configured.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/transforms.h"
#include "xf_util.h"

typedef struct tr {
    char *topic_format;
    xf_datefmt *fmt;
} tr;

static const cf_cfg_def tr_defs[] = {
    {.name = "topic.format", .type = CF_CFG_STRING, .default_value = "${topic}-${timestamp}",
     .importance = CF_IMPORTANCE_HIGH, .group = "Routing",
     .doc = "Format string which can contain `${topic}` and `${timestamp}` as placeholders for the topic and "
            "timestamp, respectively."},
    {.name = "timestamp.format", .type = CF_CFG_STRING, .default_value = "yyyyMMdd", .importance = CF_IMPORTANCE_HIGH,
     .group = "Routing",
     .doc = "Format string for the timestamp that is compatible with `java.text.SimpleDateFormat` (UTC; the letters "
            "TimestampConverter supports)."},
    {.name = NULL},
};

const cf_cfg_table cf_timestamp_router_table = {
    .name = "TimestampRouter",
    .title = "TimestampRouter (`org.apache.kafka.connect.transforms.TimestampRouter`)",
    .intro = "Update the record's topic field as a function of the original topic value and the record timestamp. "
             "This is mainly useful for sink connectors, since the topic field is often used to determine the "
             "equivalent entity name in the destination system (e.g. database table or search index name).",
    .defs = tr_defs,
};

static void tr_destroy(void *state) {
    tr *t = state;
    if (!t) return;
    free(t->topic_format);
    xf_datefmt_destroy(t->fmt);
    free(t);
}

static cf_code tr_create(const cf_config *cfg, void **state, cf_err *err) {
    xf_datefmt *f = NULL;
    cf_code rc = xf_datefmt_new(cf_config_string(cfg, "timestamp.format"), "TimestampRouter", &f, err);
    if (rc) {
        cf_err_where(err, "timestamp.format");
        return rc;
    }
    tr *t = cf_xcalloc(1, sizeof *t);
    t->topic_format = cf_xstrdup(cf_config_string(cfg, "topic.format"));
    t->fmt = f;
    *state = t;
    return CF_OK;
}

/* Pattern.compile(what, LITERAL).matcher(in).replaceAll(with) */
static char *replace_all(const char *in, const char *what, const char *with) {
    cf_buf b = CF_BUF_INIT;
    size_t wl = strlen(what);
    for (const char *p = in;;) {
        const char *q = strstr(p, what);
        if (!q) {
            cf_buf_append_str(&b, p);
            break;
        }
        cf_buf_append(&b, p, (size_t)(q - p));
        cf_buf_append_str(&b, with);
        p = q + wl;
    }
    if (!b.data) cf_buf_reserve(&b, 1);
    return cf_buf_detach(&b, NULL);
}

static cf_code tr_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    tr *t = state;
    *out = NULL;
    if (rec->ts_type == CF_TS_NONE) {
        cf_err_set(err, CF_ERR_SCHEMA, "Timestamp missing on record: topic %s, partition %" PRId32 ", offset %" PRId64,
                   rec->topic ? rec->topic : "(none)", rec->partition, rec->offset);
        cf_err_hint(err, "TimestampRouter routes by the record timestamp; records without one cannot be routed.");
        return CF_ERR_SCHEMA;
    }
    cf_buf ts = CF_BUF_INIT;
    xf_datefmt_format(t->fmt, rec->timestamp, &ts);
    if (!ts.data) cf_buf_reserve(&ts, 1);
    char *s1 = replace_all(t->topic_format, "${topic}", rec->topic ? rec->topic : "");
    char *s2 = replace_all(s1, "${timestamp}", ts.data);
    cf_record_set_topic(rec, s2);
    free(s1);
    free(s2);
    cf_buf_free(&ts);
    *out = rec;
    return CF_OK;
}

static const char *const tr_aliases[] = {"org.apache.kafka.connect.transforms.TimestampRouter", NULL};

const cf_transform_plugin cf_xf_timestamp_router = {
    .name = "TimestampRouter",
    .aliases = tr_aliases,
    .config = &cf_timestamp_router_table,
    .create = tr_create,
    .apply = tr_apply,
    .destroy = tr_destroy,
};
