/*
 * record.c - cf_msg and cf_record (see include/cdcflow/record.h).
 */
#include "cdcflow/record.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
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

cf_msg *cf_msg_new_packed(const char *topic, const void *key, size_t key_len, const void *value, size_t value_len) {
    size_t tl = topic ? strlen(topic) + 1 : 0, kl = key ? key_len + 1 : 0, vl = value ? value_len + 1 : 0;
    cf_msg *m = cf_xmalloc(sizeof *m + tl + kl + vl);
    memset(m, 0, sizeof *m);
    m->partition = CF_PARTITION_ANY;
    m->offset = CF_OFFSET_NONE;
    m->ts_type = CF_TS_NONE;
    char *p = (char *)(m + 1);
    if (topic) memcpy(m->topic = p, topic, tl), p += tl;
    if (key) {
        memcpy(m->key = p, key, key_len);
        p[key_len] = 0; /* as cf_msg_set_key's copy */
        m->key_len = key_len;
        p += kl;
    }
    if (value) {
        memcpy(m->value = p, value, value_len);
        p[value_len] = 0;
        m->value_len = value_len;
    }
    m->packed = 7;
    return m;
}

void cf_msg_clear(cf_msg *m) {
    if (!(m->packed & 1)) free(m->topic);
    if (!(m->packed & 2)) free(m->key);
    if (!(m->packed & 4)) free(m->value);
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
    if (!(m->packed & 1)) free(m->topic);
    m->packed &= ~1u;
    m->topic = topic ? cf_xstrdup(topic) : NULL;
}

void cf_msg_set_key(cf_msg *m, const void *p, size_t len) {
    if (!(m->packed & 2)) free(m->key);
    m->packed &= ~2u;
    m->key = p ? cf_xmemdup(p, len) : NULL;
    m->key_len = p ? len : 0;
}

void cf_msg_set_value(cf_msg *m, const void *p, size_t len) {
    if (!(m->packed & 4)) free(m->value);
    m->packed &= ~4u;
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

/* Free what r holds and make it as cf_record_new() made it, except the
 * spare value memory, which the caller handles. */
static void record_clear(cf_record *r) {
    topic_free(r);
    cf_schema_unref(r->key_schema);
    cf_value_destroy(r->key);
    cf_schema_unref(r->value_schema);
    cf_value_destroy(r->value);
    for (size_t i = 0; i < r->n_headers; i++) header_free(&r->headers[i]);
    free(r->headers);
    cf_value_destroy(r->source_partition);
    cf_value_destroy(r->source_offset);
    cf_value *spare = r->spare;
    memset(r, 0, offsetof(cf_record, topic_buf));
    r->partition = CF_PARTITION_ANY;
    r->offset = CF_OFFSET_NONE;
    r->spare = spare;
}

void cf_record_destroy(cf_record *r) {
    if (!r) return;
    record_clear(r);
    free(r->spare);
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

/* ---------------- values set from bytes, record pools ---------------- */

/* Spare value memory larger than this is freed, not kept: a pool keeps at
 * most max * SPARE_MAX bytes of it. */
#define SPARE_MAX 4096

/* v if its memory may be reused for another text value: a STRING/BYTES of
 * one allocation (CF_VALUE_INLINE only) with one owner. */
static cf_value *reusable(cf_value *v) {
    if (!v || (v->type != CF_STRING && v->type != CF_BYTES) || v->flags != CF_VALUE_INLINE) return NULL;
    /* other owners may let go in other threads meanwhile (cf_value_destroy) */
    if (atomic_load_explicit((_Atomic uint16_t *)&v->refs, memory_order_acquire)) return NULL;
    return v;
}

static void set_text(cf_record *r, cf_schema *schema, cf_type t, const void *p, size_t len) {
    cf_value *v = NULL;
    if (p) {
        /* the record's own value or its spare, whichever fits */
        cf_value *cand[2] = {reusable(r->value), r->spare};
        for (int i = 0; i < 2 && !v; i++)
            if (cand[i] && malloc_usable_size(cand[i]) >= sizeof *v + len + 1) v = cand[i];
        if (v) {
            if (v == r->value) r->value = NULL;
            else r->spare = NULL;
            v->type = t;
            v->u.s.ptr = (char *)(v + 1);
            memcpy(v->u.s.ptr, p, len);
            v->u.s.ptr[len] = '\0';
            v->u.s.len = len;
        } else {
            v = t == CF_BYTES ? cf_value_bytes(p, len) : cf_value_string_n(p, len);
        }
    }
    cf_record_set_value(r, schema, v);
}

void cf_record_set_value_bytes(cf_record *r, cf_schema *schema, const void *p, size_t len) {
    set_text(r, schema, CF_BYTES, p, len);
}

void cf_record_set_value_string(cf_record *r, cf_schema *schema, const char *s, size_t len) {
    set_text(r, schema, CF_STRING, s, len);
}

struct cf_record_pool {
    cf_record **shells;
    size_t n, max;
    bool drawn; /* a record was ever handed out */
};

cf_record_pool *cf_record_pool_new(size_t max) {
    cf_record_pool *p = cf_xcalloc(1, sizeof *p);
    p->max = max;
    p->shells = cf_xmalloc((max ? max : 1) * sizeof *p->shells);
    return p;
}

void cf_record_pool_destroy(cf_record_pool *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) cf_record_destroy(p->shells[i]);
    free(p->shells);
    free(p);
}

cf_record *cf_record_pool_get(cf_record_pool *p) {
    if (!p) return cf_record_new();
    p->drawn = true;
    return p->n ? p->shells[--p->n] : cf_record_new();
}

void cf_record_pool_put(cf_record_pool *p, cf_record *r) {
    if (!r) return;
    if (!p || !p->drawn || p->n == p->max) {
        cf_record_destroy(r);
        return;
    }
    /* keep the value's memory as the spare (the larger one if both) */
    cf_value *v = reusable(r->value);
    if (v && malloc_usable_size(v) <= SPARE_MAX) {
        r->value = NULL;
        if (r->spare && malloc_usable_size(r->spare) >= malloc_usable_size(v)) {
            free(v);
        } else {
            free(r->spare);
            r->spare = v;
        }
    }
    record_clear(r);
    p->shells[p->n++] = r;
}

size_t cf_record_pool_size(const cf_record_pool *p) { return p ? p->n : 0; }
