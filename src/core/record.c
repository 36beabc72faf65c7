/*
 * record.c - cf_msg and cf_record (see include/cdcflow/record.h).
 */
#include "cdcflow/record.h"

#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"

/* ---------------- cf_msg ---------------- */

cf_msg *cf_msg_new(void) {
    cf_msg *m = cf_xcalloc(1, sizeof *m);
    m->partition = CF_PARTITION_ANY;
    m->offset = CF_OFFSET_NONE;
    m->ts_type = CF_TS_NONE;
    return m;
}

void cf_msg_clear(cf_msg *m) {
    free(m->topic);
    free(m->key);
    free(m->value);
    for (size_t i = 0; i < m->n_headers; i++) {
        free(m->headers[i].key);
        free(m->headers[i].value);
    }
    free(m->headers);
    memset(m, 0, sizeof *m);
    m->partition = CF_PARTITION_ANY;
    m->offset = CF_OFFSET_NONE;
}

void cf_msg_destroy(cf_msg *m) {
    if (!m) return;
    cf_msg_clear(m);
    free(m);
}

void cf_msg_set_topic(cf_msg *m, const char *topic) {
    free(m->topic);
    m->topic = topic ? cf_xstrdup(topic) : NULL;
}

void cf_msg_set_key(cf_msg *m, const void *p, size_t len) {
    free(m->key);
    m->key = p ? cf_xmemdup(p, len) : NULL;
    m->key_len = p ? len : 0;
}

void cf_msg_set_value(cf_msg *m, const void *p, size_t len) {
    free(m->value);
    m->value = p ? cf_xmemdup(p, len) : NULL;
    m->value_len = p ? len : 0;
}

void cf_msg_add_header(cf_msg *m, const char *key, const void *value, size_t len) {
    if (m->n_headers == m->cap_headers) {
        m->cap_headers = m->cap_headers ? m->cap_headers * 2 : 4;
        m->headers = cf_xrealloc(m->headers, m->cap_headers * sizeof *m->headers);
    }
    cf_msg_header *h = &m->headers[m->n_headers++];
    h->key = cf_xstrdup(key);
    h->value = value ? cf_xmemdup(value, len) : NULL;
    h->value_len = value ? len : 0;
}

const cf_msg_header *cf_msg_header_last(const cf_msg *m, const char *key) {
    for (size_t i = m->n_headers; i-- > 0;)
        if (strcmp(m->headers[i].key, key) == 0) return &m->headers[i];
    return NULL;
}

cf_msg *cf_msg_clone(const cf_msg *m) {
    cf_msg *c = cf_msg_new();
    cf_msg_set_topic(c, m->topic);
    c->partition = m->partition;
    c->offset = m->offset;
    c->timestamp = m->timestamp;
    c->ts_type = m->ts_type;
    cf_msg_set_key(c, m->key, m->key_len);
    cf_msg_set_value(c, m->value, m->value_len);
    for (size_t i = 0; i < m->n_headers; i++)
        cf_msg_add_header(c, m->headers[i].key, m->headers[i].value, m->headers[i].value_len);
    return c;
}

/* ---------------- cf_record ---------------- */

cf_record *cf_record_new(void) {
    cf_record *r = cf_xcalloc(1, sizeof *r);
    r->partition = CF_PARTITION_ANY;
    r->offset = CF_OFFSET_NONE;
    return r;
}

static void header_free(cf_header *h) {
    free(h->key);
    cf_schema_unref(h->schema);
    cf_value_destroy(h->value);
}

static void topic_free(cf_record *r) {
    if (r->topic != r->topic_buf) free(r->topic);
    r->topic = NULL;
}

void cf_record_destroy(cf_record *r) {
    if (!r) return;
    topic_free(r);
    cf_schema_unref(r->key_schema);
    cf_value_destroy(r->key);
    cf_schema_unref(r->value_schema);
    cf_value_destroy(r->value);
    for (size_t i = 0; i < r->n_headers; i++) header_free(&r->headers[i]);
    free(r->headers);
    cf_value_destroy(r->source_partition);
    cf_value_destroy(r->source_offset);
    free(r);
}

void cf_record_set_topic(cf_record *r, const char *topic) {
    /* the old one is freed last: topic may point into it */
    char *old = r->topic != r->topic_buf ? r->topic : NULL;
    size_t len = topic ? strlen(topic) : 0;
    if (!topic) {
        r->topic = NULL;
    } else if (len < sizeof r->topic_buf) {
        memmove(r->topic_buf, topic, len + 1);
        r->topic = r->topic_buf;
    } else {
        r->topic = cf_xstrdup(topic);
    }
    free(old);
}

void cf_record_set_key(cf_record *r, cf_schema *schema, cf_value *key) {
    cf_schema_unref(r->key_schema);
    cf_value_destroy(r->key);
    r->key_schema = schema;
    r->key = key;
}

void cf_record_set_value(cf_record *r, cf_schema *schema, cf_value *value) {
    cf_schema_unref(r->value_schema);
    cf_value_destroy(r->value);
    r->value_schema = schema;
    r->value = value;
}

void cf_record_add_header(cf_record *r, const char *key, cf_schema *schema, cf_value *value) {
    if (r->n_headers == r->cap_headers) {
        r->cap_headers = r->cap_headers ? r->cap_headers * 2 : 4;
        r->headers = cf_xrealloc(r->headers, r->cap_headers * sizeof *r->headers);
    }
    cf_header *h = &r->headers[r->n_headers++];
    h->key = cf_xstrdup(key);
    h->schema = schema;
    h->value = value;
}

const cf_header *cf_record_header_last(const cf_record *r, const char *key) {
    for (size_t i = r->n_headers; i-- > 0;)
        if (strcmp(r->headers[i].key, key) == 0) return &r->headers[i];
    return NULL;
}

void cf_record_remove_headers(cf_record *r, const char *key) {
    size_t j = 0;
    for (size_t i = 0; i < r->n_headers; i++) {
        if (strcmp(r->headers[i].key, key) == 0)
            header_free(&r->headers[i]);
        else
            r->headers[j++] = r->headers[i];
    }
    r->n_headers = j;
}

void cf_record_set_source(cf_record *r, cf_value *source_partition, cf_value *source_offset) {
    cf_value_destroy(r->source_partition);
    cf_value_destroy(r->source_offset);
    r->source_partition = source_partition;
    r->source_offset = source_offset;
}

cf_record *cf_record_clone(const cf_record *r) {
    cf_record *c = cf_record_new();
    cf_record_set_topic(c, r->topic);
    c->partition = r->partition;
    c->offset = r->offset;
    c->timestamp = r->timestamp;
    c->ts_type = r->ts_type;
    cf_record_set_key(c, cf_schema_ref(r->key_schema), cf_value_clone(r->key));
    cf_record_set_value(c, cf_schema_ref(r->value_schema), cf_value_clone(r->value));
    for (size_t i = 0; i < r->n_headers; i++)
        cf_record_add_header(c, r->headers[i].key, cf_schema_ref(r->headers[i].schema),
                             cf_value_clone(r->headers[i].value));
    cf_record_set_source(c, cf_value_clone(r->source_partition), cf_value_clone(r->source_offset));
    return c;
}
