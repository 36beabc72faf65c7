/*
 * xf_util.c - helpers shared by the transforms (see xf_util.h).
 */
#include "xf_util.h"

#include <string.h>

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
