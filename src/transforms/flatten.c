/*
 * flatten.c - org.apache.kafka.connect.transforms.Flatten$Key and $Value:
 * nested structs (maps without a schema) become one level, the field names
 * joined with `delimiter` (default "."): {"a": {"b": 1}} -> {"a.b": 1}, as a
 * table sink wants its columns.
 *
 * As Kafka (Flatten.java): arrays and their contents are kept as they are; a
 * MAP inside a struct schema is refused ("Flatten transformation does not
 * support MAP for record with schemas (for field x)."); a field under an
 * optional struct becomes optional, and takes the default of its own schema
 * or else the one the parent's default struct holds; the flattened struct
 * keeps the name, version, doc and parameters of the old one; each field
 * keeps those of its own schema (logical types survive); a null key/value
 * passes unchanged; fields of a null nested struct are null. Two fields
 * whose joined names collide are an error (Java's SchemaBuilder says
 * "field name duplication").
 */
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/transforms.h"
#include "xf_util.h"

#define PURPOSE "flattening"

typedef struct fl {
    bool is_key;
    char *delim;
    xf_cache cache;
} fl;

static const cf_cfg_def fl_defs[] = {
    {.name = "delimiter", .type = CF_CFG_STRING, .default_value = ".", .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields",
     .doc = "Delimiter to insert between field names from the input record when generating field names for the "
            "output record."},
    {.name = NULL},
};

const cf_cfg_table cf_flatten_table = {
    .name = "Flatten",
    .title = "Flatten (`org.apache.kafka.connect.transforms.Flatten$Key`, `$Value`)",
    .intro = "Flatten a nested data structure, generating names for each field by concatenating the field names at "
             "each level with a configurable delimiter character. Applies to Struct when schema present, or a Map in "
             "the case of schemaless data. Array fields and their contents are not modified. The default delimiter "
             "is '.'.",
    .defs = fl_defs,
};

static void fl_destroy(void *state) {
    fl *t = state;
    if (!t) return;
    free(t->delim);
    xf_cache_clear(&t->cache);
    free(t);
}

static cf_code fl_create(const cf_config *cfg, bool is_key, void **state) {
    fl *t = cf_xcalloc(1, sizeof *t);
    t->is_key = is_key;
    t->delim = cf_xstrdup(cf_config_string(cfg, "delimiter"));
    *state = t;
    return CF_OK;
}
static cf_code fl_create_key(const cf_config *cfg, void **state, cf_err *err) {
    (void)err;
    return fl_create(cfg, true, state);
}
static cf_code fl_create_value(const cf_config *cfg, void **state, cf_err *err) {
    (void)err;
    return fl_create(cfg, false, state);
}

/* prefix + delimiter + name into b (b is reset) */
static void join(const fl *t, cf_buf *b, const char *prefix, const char *name) {
    cf_buf_reset(b);
    if (*prefix) {
        cf_buf_append_str(b, prefix);
        cf_buf_append_str(b, t->delim);
    }
    cf_buf_append_str(b, name);
}

static cf_code flatten_map(const fl *t, const cf_value *m, const char *prefix, cf_value *out, int depth, cf_err *err) {
    cf_buf name = CF_BUF_INIT;
    cf_code rc = CF_OK;
    for (size_t i = 0; i < m->u.map.len && !rc; i++) {
        const cf_value *k = m->u.map.keys[i], *v = m->u.map.vals[i];
        if (!k || k->type != CF_STRING) {
            rc = cf_err_set(err, CF_ERR_SCHEMA, "Flatten needs string map keys without a schema, found: %s",
                            xf_java_type(k));
            break;
        }
        join(t, &name, prefix, k->u.s.ptr);
        if (v && v->type == CF_MAP) {
            if (depth > 100) {
                rc = cf_err_set(err, CF_ERR_SCHEMA, "Flatten: maps nested deeper than 100 levels (at %s)", name.data);
                break;
            }
            char *p = cf_buf_detach(&name, NULL);
            rc = flatten_map(t, v, p, out, depth + 1, err);
            free(p);
        } else if (v && v->type == CF_STRUCT) {
            rc = cf_err_set(err, CF_ERR_SCHEMA, "Flatten transformation does not support Struct for record without "
                                                "schemas (for field %s).", name.data);
            cf_err_where(err, "%s", name.data);
        } else {
            xf_map_put(out, name.data, cf_value_clone(v));
        }
    }
    cf_buf_free(&name);
    return rc;
}

/* buildUpdatedSchema: the flattened fields of struct schema s under prefix. */
static cf_code build_schema(const fl *t, const cf_schema *s, const char *prefix, cf_schema *ns, bool optional,
                            const cf_value *parent_default, cf_err *err) {
    cf_buf name = CF_BUF_INIT;
    cf_code rc = CF_OK;
    for (size_t i = 0; i < s->n_fields && !rc; i++) {
        const cf_field *f = &s->fields[i];
        join(t, &name, prefix, f->name);
        bool opt = optional || f->schema->optional;
        const cf_value *def = NULL;
        bool has_def = false;
        if (f->schema->has_default && f->schema->default_value) {
            def = f->schema->default_value, has_def = true;
        } else if (parent_default) {
            def = parent_default->u.st.fields[i];
            if (!def && f->schema->has_default) def = f->schema->default_value;
            has_def = def != NULL;
        }
        if (f->schema->type == CF_STRUCT) {
            char *p = cf_buf_detach(&name, NULL);
            bool fits = has_def && def && def->type == CF_STRUCT && def->u.st.schema->n_fields == f->schema->n_fields;
            rc = build_schema(t, f->schema, p, ns, opt, fits ? def : NULL, err);
            free(p);
        } else if (f->schema->type == CF_MAP) {
            rc = cf_err_set(err, CF_ERR_SCHEMA, "Flatten transformation does not support MAP for record with schemas "
                                                "(for field %s).", name.data);
            cf_err_where(err, "%s", name.data);
        } else {
            cf_schema *fs = xf_copy_basics(f->schema);
            fs->optional = opt;
            if (has_def && def) cf_schema_set_default(fs, cf_value_clone(def), NULL);
            if ((rc = cf_schema_add_field(ns, name.data, fs, err)))
                cf_err_detail(err, "Cannot create field because of field name duplication %s", name.data);
        }
    }
    cf_buf_free(&name);
    return rc;
}

/* buildWithSchema: values in the order build_schema made the fields. A
 * nested struct whose schema has other fields than its field's schema (not
 * a valid value) counts as null rather than shifting the columns. */
static void build_values(const cf_schema *s, const cf_value *st, cf_value *out, size_t *k) {
    for (size_t i = 0; i < s->n_fields; i++) {
        const cf_field *f = &s->fields[i];
        const cf_value *v = NULL;
        if (st) {
            v = st->u.st.fields[i];
            if (!v && f->schema->has_default) v = f->schema->default_value;
        }
        if (f->schema->type == CF_STRUCT) {
            bool same = v && v->type == CF_STRUCT && v->u.st.schema->n_fields == f->schema->n_fields;
            build_values(f->schema, same ? v : NULL, out, k);
        } else if (*k < out->u.st.schema->n_fields) {
            out->u.st.fields[(*k)++] = cf_value_clone(v);
        }
    }
}

static cf_code fl_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    fl *t = state;
    *out = NULL;
    cf_value *value = xf_op_value(rec, t->is_key);
    if (!value) {
        *out = rec;
        return CF_OK;
    }
    cf_schema *schema = xf_op_schema(rec, t->is_key);
    cf_code rc;
    if (!schema) {
        if ((rc = xf_require_map(value, PURPOSE, err))) return rc;
        cf_value *m = cf_value_map();
        if ((rc = flatten_map(t, value, "", m, 0, err))) {
            cf_value_destroy(m);
            return rc;
        }
        xf_op_set(rec, t->is_key, NULL, m);
        *out = rec;
        return CF_OK;
    }
    if ((rc = xf_require_struct(value, PURPOSE, err))) return rc;
    /* fields from the struct's own schema; optionality and the default from the record's */
    const cf_schema *vs = value->u.st.schema;
    cf_schema *ns = xf_cache_get(&t->cache, schema, (uintptr_t)vs);
    if (!ns) {
        ns = xf_struct_basics(schema);
        const cf_value *def = schema->has_default ? schema->default_value : NULL;
        if (def && (def->type != CF_STRUCT || def->u.st.schema->n_fields != vs->n_fields)) def = NULL;
        if ((rc = build_schema(t, vs, "", ns, schema->optional, def, err))) {
            cf_schema_unref(ns);
            return rc;
        }
        xf_cache_put(&t->cache, schema, (uintptr_t)vs, ns);
    }
    cf_value *nv = cf_value_struct(cf_schema_ref(ns));
    size_t k = 0;
    build_values(vs, value, nv, &k);
    xf_op_set(rec, t->is_key, ns, nv);
    *out = rec;
    return CF_OK;
}

XF_KEY_VALUE(cf_xf_flatten, "Flatten", &cf_flatten_table, fl_create_key, fl_create_value, fl_apply, fl_destroy);
