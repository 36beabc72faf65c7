/*
 * props.c - ordered string map (see include/cdcflow/props.h).
 */
#include "cdcflow/props.h"

#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"

struct cf_props {
    char **keys, **vals;
    size_t len, cap;
};

cf_props *cf_props_new(void) { return cf_xcalloc(1, sizeof(cf_props)); }

void cf_props_destroy(cf_props *p) {
    if (!p) return;
    for (size_t i = 0; i < p->len; i++) {
        free(p->keys[i]);
        free(p->vals[i]);
    }
    free(p->keys);
    free(p->vals);
    free(p);
}

static long find(const cf_props *p, const char *key) {
    for (size_t i = 0; i < p->len; i++)
        if (strcmp(p->keys[i], key) == 0) return (long)i;
    return -1;
}

void cf_props_set(cf_props *p, const char *key, const char *value) {
    if (!value) {
        cf_props_remove(p, key);
        return;
    }
    long i = find(p, key);
    if (i >= 0) {
        free(p->vals[i]);
        p->vals[i] = cf_xstrdup(value);
        return;
    }
    if (p->len == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->keys = cf_xrealloc(p->keys, p->cap * sizeof(char *));
        p->vals = cf_xrealloc(p->vals, p->cap * sizeof(char *));
    }
    p->keys[p->len] = cf_xstrdup(key);
    p->vals[p->len] = cf_xstrdup(value);
    p->len++;
}

const char *cf_props_get(const cf_props *p, const char *key) {
    if (!p) return NULL;
    long i = find(p, key);
    return i >= 0 ? p->vals[i] : NULL;
}

const char *cf_props_get_or(const cf_props *p, const char *key, const char *fallback) {
    const char *v = cf_props_get(p, key);
    return v ? v : fallback;
}

bool cf_props_has(const cf_props *p, const char *key) { return p && find(p, key) >= 0; }

bool cf_props_remove(cf_props *p, const char *key) {
    long i = find(p, key);
    if (i < 0) return false;
    free(p->keys[i]);
    free(p->vals[i]);
    memmove(p->keys + i, p->keys + i + 1, (p->len - (size_t)i - 1) * sizeof(char *));
    memmove(p->vals + i, p->vals + i + 1, (p->len - (size_t)i - 1) * sizeof(char *));
    p->len--;
    return true;
}

size_t cf_props_count(const cf_props *p) { return p ? p->len : 0; }
const char *cf_props_key_at(const cf_props *p, size_t i) { return i < p->len ? p->keys[i] : NULL; }
const char *cf_props_value_at(const cf_props *p, size_t i) { return i < p->len ? p->vals[i] : NULL; }

cf_props *cf_props_clone(const cf_props *p) {
    cf_props *c = cf_props_new();
    if (p) cf_props_merge(c, p);
    return c;
}

cf_props *cf_props_subset(const cf_props *p, const char *prefix, bool strip) {
    cf_props *c = cf_props_new();
    size_t n = strlen(prefix);
    for (size_t i = 0; p && i < p->len; i++)
        if (strncmp(p->keys[i], prefix, n) == 0) cf_props_set(c, strip ? p->keys[i] + n : p->keys[i], p->vals[i]);
    return c;
}

void cf_props_merge(cf_props *dst, const cf_props *src) {
    for (size_t i = 0; src && i < src->len; i++) cf_props_set(dst, src->keys[i], src->vals[i]);
}
