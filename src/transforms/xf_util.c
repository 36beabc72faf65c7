/*
 * xf_util.c - helpers shared by the transforms (see xf_util.h).
 */
#include "xf_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"

static void copy_meta(cf_schema *c, const cf_schema *s) {
    if (s->name) cf_schema_set_name(c, s->name);
    if (s->has_version) cf_schema_set_version(c, s->version);
    if (s->doc) cf_schema_set_doc(c, s->doc);
    for (size_t i = 0; i < s->n_params; i++) cf_schema_set_param(c, s->params[i].key, s->params[i].value);
}

cf_schema *xf_struct_basics(const cf_schema *source) {
    cf_schema *c = cf_schema_new_struct();
    copy_meta(c, source);
    return c;
}

cf_schema *xf_copy_basics(const cf_schema *s) {
    cf_schema *c = cf_schema_new(s->type);
    copy_meta(c, s);
    c->key_schema = cf_schema_ref(s->key_schema);
    c->value_schema = cf_schema_ref(s->value_schema);
    for (size_t i = 0; i < s->n_fields; i++) cf_schema_add_field(c, s->fields[i].name, cf_schema_ref(s->fields[i].schema), NULL);
    return c;
}

cf_schema *xf_shallow_copy(const cf_schema *s) {
    cf_schema *c = xf_copy_basics(s);
    c->optional = s->optional;
    if (s->has_default) {
        c->has_default = true;
        c->default_value = cf_value_clone(s->default_value);
    }
    return c;
}

cf_value *xf_get_clone(const cf_value *st, size_t index, bool with_default) {
    const cf_value *v = st->u.st.fields[index];
    if (!v && with_default) {
        const cf_schema *fs = st->u.st.schema->fields[index].schema;
        if (fs->has_default) v = fs->default_value;
    }
    return cf_value_clone(v);
}

const char *xf_java_type(const cf_value *v) {
    if (!v) return "null";
    switch (v->type) {
    case CF_INT8: return "Byte";
    case CF_INT16: return "Short";
    case CF_INT32: return "Integer";
    case CF_INT64: return "Long";
    case CF_FLOAT32: return "Float";
    case CF_FLOAT64: return "Double";
    case CF_BOOLEAN: return "Boolean";
    case CF_STRING: return "String";
    case CF_BYTES: return "byte[]";
    case CF_ARRAY: return "ArrayList";
    case CF_MAP: return "HashMap";
    case CF_STRUCT: return "Struct";
    }
    return "?";
}

cf_code xf_require_struct(const cf_value *v, const char *purpose, cf_err *err) {
    if (v && v->type == CF_STRUCT) return CF_OK;
    cf_err_set(err, CF_ERR_SCHEMA, "Only Struct objects supported for [%s], found: %s", purpose, xf_java_type(v));
    return CF_ERR_SCHEMA;
}

cf_code xf_require_map(const cf_value *v, const char *purpose, cf_err *err) {
    if (v && v->type == CF_MAP) return CF_OK;
    cf_err_set(err, CF_ERR_SCHEMA, "Only Map objects supported in absence of schema for [%s], found: %s", purpose,
               xf_java_type(v));
    return CF_ERR_SCHEMA;
}

cf_schema *xf_cache_get(xf_cache *c, const cf_schema *in, uint64_t variant) {
    for (int i = 0; i < XF_CACHE_SIZE; i++)
        if (c->e[i].in == in && c->e[i].variant == variant && c->e[i].out) {
            c->e[i].tick = ++c->tick;
            return cf_schema_ref(c->e[i].out);
        }
    return NULL;
}

void xf_cache_put(xf_cache *c, const cf_schema *in, uint64_t variant, cf_schema *out) {
    int k = 0;
    for (int i = 0; i < XF_CACHE_SIZE; i++) {
        if (!c->e[i].in) {
            k = i;
            break;
        }
        if (c->e[i].tick < c->e[k].tick) k = i;
    }
    cf_schema_unref(c->e[k].in);
    cf_schema_unref(c->e[k].out);
    c->e[k].in = cf_schema_ref((cf_schema *)in);
    c->e[k].variant = variant;
    c->e[k].out = cf_schema_ref(out);
    c->e[k].tick = ++c->tick;
}

void xf_cache_clear(xf_cache *c) {
    for (int i = 0; i < XF_CACHE_SIZE; i++) {
        cf_schema_unref(c->e[i].in);
        cf_schema_unref(c->e[i].out);
    }
    memset(c, 0, sizeof *c);
}

void xf_op_set(cf_record *r, bool is_key, cf_schema *schema, cf_value *value) {
    if (is_key) cf_record_set_key(r, schema, value);
    else cf_record_set_value(r, schema, value);
}

cf_code xf_require_schema(const cf_schema *s, const char *purpose, cf_err *err) {
    if (s) return CF_OK;
    cf_err_set(err, CF_ERR_SCHEMA, "Schema required for [%s]", purpose);
    return CF_ERR_SCHEMA;
}

int32_t xf_java_d2i(double d) {
    if (isnan(d)) return 0;
    if (d >= 2147483647.0) return INT32_MAX;
    if (d <= -2147483648.0) return INT32_MIN;
    return (int32_t)d;
}

int64_t xf_java_d2l(double d) {
    if (isnan(d)) return 0;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}

void xf_map_put(cf_value *map, const char *key, cf_value *val) {
    for (size_t i = 0; i < map->u.map.len; i++) {
        const cf_value *k = map->u.map.keys[i];
        if (k && k->type == CF_STRING && strcmp(k->u.s.ptr, key) == 0) {
            cf_value_destroy(map->u.map.vals[i]);
            map->u.map.vals[i] = val;
            return;
        }
    }
    cf_value_map_put(map, cf_value_string(key), val);
}

/* ---- field paths ---- */

const char *const xf_syntax_versions[] = {"V1", "V2", NULL};

void xf_path_free(xf_path *p) {
    for (size_t i = 0; i < p->n; i++) free(p->steps[i]);
    free(p->steps);
    p->steps = NULL;
    p->n = 0;
}

static void add_step(xf_path *p, const char *s, size_t n) {
    p->steps = cf_xrealloc(p->steps, (p->n + 1) * sizeof *p->steps);
    p->steps[p->n++] = cf_xstrndup(s, n);
}

/* SingleFieldPath.buildFieldPathV2, step for step. */
cf_code xf_path_parse(const char *path, bool v2, xf_path *out, cf_err *err) {
    memset(out, 0, sizeof *out);
    if (!v2) {
        add_step(out, path, strlen(path));
        return CF_OK;
    }
    size_t len = strlen(path), idx = 0;
    while (idx < len) {
        if (path[idx] != '`') {
            const char *dot = strchr(path + idx, '.');
            if (dot) {
                add_step(out, path + idx, (size_t)(dot - path) - idx);
                idx = (size_t)(dot - path) + 1;
            } else {
                add_step(out, path + idx, len - idx);
                idx = len;
            }
            continue;
        }
        size_t backtick_at = idx;
        idx++;
        cf_buf field = CF_BUF_INIT;
        size_t start = idx;
        for (;;) {
            const char *bt = idx < len ? strchr(path + idx, '`') : NULL;
            bool escaped = bt && bt > path && bt[-1] == '\\';
            if (!bt || ((size_t)(bt - path) >= len - 1 && escaped)) {
                cf_buf_free(&field);
                xf_path_free(out);
                cf_err_set(err, CF_ERR_CONFIG,
                           "Incomplete backtick pair in path: [%s], consider adding a backslash before backtick at "
                           "position %zu to escape it", path, backtick_at);
                return CF_ERR_CONFIG;
            }
            idx = (size_t)(bt - path);
            if (idx >= len - 1) { /* the closing backtick ends the path */
                cf_buf_append(&field, path + start, idx - start);
                add_step(out, field.data ? field.data : "", field.len);
                idx++;
                break;
            }
            if (path[idx + 1] != '.') { /* part of the name; look for the next one */
                idx++;
                continue;
            }
            if (escaped) {
                cf_buf_append(&field, path + start, idx - 1 - start);
                cf_buf_append_byte(&field, '`');
                idx++;
                start = idx;
                continue;
            }
            cf_buf_append(&field, path + start, idx - start);
            add_step(out, field.data ? field.data : "", field.len);
            idx += 2;
            break;
        }
        cf_buf_free(&field);
    }
    if (len && path[len - 1] == '.') add_step(out, "", 0);
    if (out->n == 0) add_step(out, "", 0);
    return CF_OK;
}

const cf_field *xf_path_field(const xf_path *p, const cf_schema *s) {
    if (!s) return NULL;
    for (size_t i = 0; i + 1 < p->n; i++) {
        if (s->type != CF_STRUCT) return NULL;
        const cf_field *f = cf_schema_field(s, p->steps[i]);
        if (!f) return NULL;
        s = f->schema;
    }
    return s->type == CF_STRUCT ? cf_schema_field(s, p->steps[p->n - 1]) : NULL;
}

cf_code xf_path_struct_value(const xf_path *p, const cf_value *st, bool with_default, const cf_value **out,
                             cf_err *err) {
    *out = NULL;
    for (size_t i = 0; st && i + 1 < p->n; i++) {
        const cf_field *f = cf_schema_field(st->u.st.schema, p->steps[i]);
        if (!f) return CF_OK;
        const cf_value *sub = st->u.st.fields[f->index];
        if (!sub && f->schema->has_default) sub = f->schema->default_value;
        if (!sub) return CF_OK;
        cf_code rc = xf_require_struct(sub, "nested field access", err);
        if (rc) return rc;
        st = sub;
    }
    if (!st) return CF_OK;
    const cf_field *f = cf_schema_field(st->u.st.schema, p->steps[p->n - 1]);
    if (!f) return CF_OK;
    const cf_value *v = st->u.st.fields[f->index];
    if (!v && with_default && f->schema->has_default) v = f->schema->default_value;
    *out = v;
    return CF_OK;
}

cf_code xf_path_map_value(const xf_path *p, const cf_value *map, const cf_value **out, cf_err *err) {
    *out = NULL;
    for (size_t i = 0; map && i + 1 < p->n; i++) {
        const cf_value *sub = cf_value_map_get_str(map, p->steps[i]);
        if (!sub) return CF_OK;
        cf_code rc = xf_require_map(sub, "nested field access", err);
        if (rc) return rc;
        map = sub;
    }
    if (map) *out = cf_value_map_get_str(map, p->steps[p->n - 1]);
    return CF_OK;
}

cf_code xf_nonempty_list(const char *key, const char *value, cf_err *err) {
    for (const char *p = value ? value : ""; *p; p++)
        if (*p != ',' && *p != ' ' && *p != '\t') return CF_OK;
    cf_err_set(err, CF_ERR_CONFIG, "Invalid value %s for configuration %s: Empty list", value ? value : "null", key);
    return CF_ERR_CONFIG;
}

cf_code xf_nonempty_string(const char *key, const char *value, cf_err *err) {
    for (const char *p = value ? value : ""; *p; p++)
        if (*p != ' ' && *p != '\t') return CF_OK;
    cf_err_set(err, CF_ERR_CONFIG, "Invalid value %s for configuration %s: String must be non-empty", value ? value : "",
               key);
    return CF_ERR_CONFIG;
}

char **xf_list_copy(const cf_config *cfg, const char *key, size_t *n) {
    const char *const *items = cf_config_list(cfg, key, n);
    char **out = cf_xcalloc(*n ? *n : 1, sizeof *out);
    for (size_t i = 0; i < *n; i++) out[i] = cf_xstrdup(items[i]);
    return out;
}

void xf_list_free(char **l, size_t n) {
    if (!l) return;
    for (size_t i = 0; i < n; i++) free(l[i]);
    free(l);
}

bool xf_list_has(char *const *l, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i], s) == 0) return true;
    return false;
}
