/*
 * avro_data.c - Avro schemas and data <-> Kafka Connect schemas and values, the way
 * Confluent's io.confluent.connect.avro.AvroData maps them, plus the codec that moves values
 * through avro-c.
 *
 * Why our own view of the Avro schema (anode): avro-c parses schemas but drops every property
 * it does not know (connect.*, logicalType, scale, precision), and those carry half of the
 * mapping. So a schema's JSON is parsed twice: once by jansson into an anode tree (types,
 * names, fields, defaults and all properties), once by avro-c for the binary codec. The two
 * trees have the same shape (same field order, same union branch order), so the encoder and
 * decoder walk the Connect schema, the anode and the avro-c value in lockstep.
 *
 * Why a skim before decoding: avro-c trusts lengths in the input (it allocates what a length
 * prefix says and loops as many times as a block count says). skim() walks the bytes against
 * the anode first, without allocating, and rejects anything that would read past the end, so
 * damaged input becomes a CF_ERR_CORRUPT with a byte offset and a field path.
 */
#include <avro.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/avro.h"
#include "cdcflow/buf.h"

/* ======================================================================
 * anode: our parsed Avro schema
 * ====================================================================== */

typedef enum atype {
    AT_NULL,
    AT_BOOLEAN,
    AT_INT,
    AT_LONG,
    AT_FLOAT,
    AT_DOUBLE,
    AT_BYTES,
    AT_STRING,
    AT_RECORD,
    AT_ENUM,
    AT_ARRAY,
    AT_MAP,
    AT_UNION,
    AT_FIXED
} atype;

static const char *const atype_names[] = {"null",   "boolean", "int",  "long",  "float", "double", "bytes",
                                          "string", "record",  "enum", "array", "map",   "union",  "fixed"};

typedef struct anode anode;

typedef struct afield {
    const char *name; /* borrowed from the JSON document */
    anode *type;
    json_t *def; /* field default, NULL if none (borrowed) */
    const char *doc;
} afield;

struct anode {
    atype type;
    json_t *j;        /* this schema's JSON object, NULL for the bare "int" form (borrowed) */
    char *fullname;   /* named types (owned) */
    const char *doc;
    anode *items;     /* ARRAY items, MAP values */
    anode **br;       /* UNION branches (owned array) */
    size_t nbr;
    int null_branch;  /* UNION: index of the null branch or -1 */
    afield *fields;   /* RECORD (owned array) */
    size_t nfields;
    const char **symbols; /* ENUM (owned array of borrowed strings) */
    size_t nsym;
    size_t fixed_size;
    bool visiting;    /* recursion guard for to_connect */
};

typedef struct named {
    char *fullname; /* borrowed from the node */
    anode *node;
} named;

typedef struct aparse {
    anode **all;
    size_t n, cap;
    named *names;
    size_t nn, capn;
    cf_err *err;
} aparse;

static anode *node_new(aparse *P, atype t, json_t *j) {
    anode *n = cf_xcalloc(1, sizeof *n);
    n->type = t;
    n->j = j;
    n->null_branch = -1;
    if (P->n == P->cap) {
        P->cap = P->cap ? P->cap * 2 : 16;
        P->all = cf_xrealloc(P->all, P->cap * sizeof *P->all);
    }
    P->all[P->n++] = n;
    return n;
}

static void nodes_free(anode **all, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(all[i]->fullname);
        free(all[i]->br);
        free(all[i]->fields);
        free(all[i]->symbols);
        free(all[i]);
    }
    free(all);
}

static anode *find_named(aparse *P, const char *fullname) {
    for (size_t i = 0; i < P->nn; i++)
        if (strcmp(P->names[i].fullname, fullname) == 0) return P->names[i].node;
    return NULL;
}

static bool primitive_type(const char *s, atype *t) {
    static const struct { const char *n; atype t; } prims[] = {
        {"null", AT_NULL},     {"boolean", AT_BOOLEAN}, {"int", AT_INT},       {"long", AT_LONG},
        {"float", AT_FLOAT},   {"double", AT_DOUBLE},   {"bytes", AT_BYTES},   {"string", AT_STRING}};
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (strcmp(s, prims[i].n) == 0) {
            *t = prims[i].t;
            return true;
        }
    return false;
}

static anode *parse_fail(aparse *P, const char *path, const char *fmt, const char *arg) {
    cf_err_set(P->err, CF_ERR_SCHEMA, "invalid Avro schema");
    cf_err_detail(P->err, fmt, arg ? arg : "");
    cf_err_where(P->err, "%s", *path ? path : "(top level)");
    return NULL;
}

static bool valid_ident(const char *s) {
    if (!s || !*s) return false;
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return false;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

static anode *parse_node(aparse *P, json_t *j, const char *ns, const char *path, int depth);

/* Register a named type; computes fullname from name/namespace/enclosing namespace.
 * *own_ns receives the namespace for nested definitions (malloc'd or NULL). */
static bool parse_name(aparse *P, json_t *j, const char *ns, const char *path, anode *n, char **own_ns) {
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!name || !*name) {
        parse_fail(P, path, "a %s needs a \"name\"", atype_names[n->type]);
        return false;
    }
    const char *dot = strrchr(name, '.');
    cf_buf b = CF_BUF_INIT;
    if (dot) {
        cf_buf_append_str(&b, name);
        *own_ns = cf_xstrndup(name, (size_t)(dot - name));
    } else {
        json_t *jns = json_object_get(j, "namespace");
        const char *space = jns ? json_string_value(jns) : ns;
        if (space && *space) cf_buf_printf(&b, "%s.%s", space, name);
        else cf_buf_append_str(&b, name);
        *own_ns = space && *space ? cf_xstrdup(space) : NULL;
    }
    n->fullname = cf_buf_detach(&b, NULL);
    if (!valid_ident(dot ? dot + 1 : name)) {
        parse_fail(P, path, "\"%s\" is not a valid Avro name", name);
        return false;
    }
    if (find_named(P, n->fullname)) {
        parse_fail(P, path, "the name \"%s\" is defined twice", n->fullname);
        return false;
    }
    if (P->nn == P->capn) {
        P->capn = P->capn ? P->capn * 2 : 8;
        P->names = cf_xrealloc(P->names, P->capn * sizeof *P->names);
    }
    P->names[P->nn].fullname = n->fullname;
    P->names[P->nn].node = n;
    P->nn++;
    return true;
}

static anode *parse_node(aparse *P, json_t *j, const char *ns, const char *path, int depth) {
    if (depth > 200) return parse_fail(P, path, "schema nested more than %s levels deep", "200");
    atype t;
    if (json_is_string(j)) {
        const char *s = json_string_value(j);
        if (primitive_type(s, &t)) return node_new(P, t, NULL);
        anode *ref = NULL;
        if (!strchr(s, '.') && ns && *ns) {
            char full[1024];
            snprintf(full, sizeof full, "%s.%s", ns, s);
            ref = find_named(P, full);
        }
        if (!ref) ref = find_named(P, s);
        if (!ref) return parse_fail(P, path, "unknown type \"%s\" (not a primitive and not defined earlier)", s);
        return ref;
    }
    if (json_is_array(j)) {
        if (json_array_size(j) == 0) return parse_fail(P, path, "a union needs at least one branch%s", "");
        anode *u = node_new(P, AT_UNION, NULL);
        u->nbr = json_array_size(j);
        u->br = cf_xcalloc(u->nbr, sizeof *u->br);
        for (size_t i = 0; i < u->nbr; i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            u->br[i] = parse_node(P, json_array_get(j, i), ns, sub, depth + 1);
            if (!u->br[i]) return NULL;
            if (u->br[i]->type == AT_UNION) return parse_fail(P, sub, "a union may not contain a union%s", "");
            if (u->br[i]->type == AT_NULL) u->null_branch = (int)i;
        }
        return u;
    }
    if (!json_is_object(j)) return parse_fail(P, path, "a schema must be a string, an array or an object%s", "");
    json_t *jt = json_object_get(j, "type");
    if (!jt) return parse_fail(P, path, "schema object without \"type\"%s", "");
    if (!json_is_string(jt)) return parse_node(P, jt, ns, path, depth + 1);
    const char *ts = json_string_value(jt);
    if (primitive_type(ts, &t)) {
        anode *n = node_new(P, t, j);
        return n;
    }
    if (strcmp(ts, "record") == 0 || strcmp(ts, "error") == 0) {
        anode *n = node_new(P, AT_RECORD, j);
        char *own_ns = NULL;
        if (!parse_name(P, j, ns, path, n, &own_ns)) {
            free(own_ns);
            return NULL;
        }
        n->doc = json_string_value(json_object_get(j, "doc"));
        json_t *jf = json_object_get(j, "fields");
        if (!json_is_array(jf)) {
            free(own_ns);
            return parse_fail(P, path, "record \"%s\" has no \"fields\" array", n->fullname);
        }
        n->nfields = json_array_size(jf);
        n->fields = cf_xcalloc(n->nfields ? n->nfields : 1, sizeof *n->fields);
        for (size_t i = 0; i < n->nfields; i++) {
            json_t *f = json_array_get(jf, i);
            const char *fname = json_string_value(json_object_get(f, "name"));
            char sub[256];
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", fname ? fname : "?");
            if (!json_is_object(f) || !fname || !valid_ident(fname)) {
                free(own_ns);
                return parse_fail(P, sub, "field without a valid \"name\" in record \"%s\"", n->fullname);
            }
            for (size_t k = 0; k < i; k++)
                if (strcmp(n->fields[k].name, fname) == 0) {
                    free(own_ns);
                    return parse_fail(P, sub, "duplicate field name \"%s\"", fname);
                }
            n->fields[i].name = fname;
            n->fields[i].doc = json_string_value(json_object_get(f, "doc"));
            n->fields[i].def = json_object_get(f, "default");
            json_t *ftype = json_object_get(f, "type");
            if (!ftype) {
                free(own_ns);
                return parse_fail(P, sub, "field \"%s\" has no \"type\"", fname);
            }
            n->fields[i].type = parse_node(P, ftype, own_ns, sub, depth + 1);
            if (!n->fields[i].type) {
                free(own_ns);
                return NULL;
            }
        }
        free(own_ns);
        return n;
    }
    if (strcmp(ts, "enum") == 0) {
        anode *n = node_new(P, AT_ENUM, j);
        char *own_ns = NULL;
        bool ok = parse_name(P, j, ns, path, n, &own_ns);
        free(own_ns);
        if (!ok) return NULL;
        n->doc = json_string_value(json_object_get(j, "doc"));
        json_t *js = json_object_get(j, "symbols");
        if (!json_is_array(js) || json_array_size(js) == 0)
            return parse_fail(P, path, "enum \"%s\" needs a non-empty \"symbols\" array", n->fullname);
        n->nsym = json_array_size(js);
        n->symbols = cf_xcalloc(n->nsym, sizeof *n->symbols);
        for (size_t i = 0; i < n->nsym; i++) {
            n->symbols[i] = json_string_value(json_array_get(js, i));
            if (!n->symbols[i]) return parse_fail(P, path, "enum \"%s\" has a symbol that is not a string", n->fullname);
        }
        return n;
    }
    if (strcmp(ts, "fixed") == 0) {
        anode *n = node_new(P, AT_FIXED, j);
        char *own_ns = NULL;
        bool ok = parse_name(P, j, ns, path, n, &own_ns);
        free(own_ns);
        if (!ok) return NULL;
        n->doc = json_string_value(json_object_get(j, "doc"));
        json_t *sz = json_object_get(j, "size");
        if (!json_is_integer(sz) || json_integer_value(sz) < 0 || json_integer_value(sz) > INT32_MAX)
            return parse_fail(P, path, "fixed \"%s\" needs a non-negative integer \"size\"", n->fullname);
        n->fixed_size = (size_t)json_integer_value(sz);
        return n;
    }
    if (strcmp(ts, "array") == 0 || strcmp(ts, "map") == 0) {
        bool arr = ts[0] == 'a';
        anode *n = node_new(P, arr ? AT_ARRAY : AT_MAP, j);
        json_t *it = json_object_get(j, arr ? "items" : "values");
        if (!it) return parse_fail(P, path, "%s without its element type", arr ? "array (\"items\")" : "map (\"values\")");
        char sub[256];
        snprintf(sub, sizeof sub, "%s%s", path, arr ? "[]" : "{}");
        n->items = parse_node(P, it, ns, sub, depth + 1);
        if (!n->items) return NULL;
        return n;
    }
    return parse_fail(P, path, "unknown type \"%s\"", ts);
}

/* ---- property helpers ---- */
static json_t *prop(const anode *n, const char *key) { return n->j ? json_object_get(n->j, key) : NULL; }
static const char *prop_str(const anode *n, const char *key) { return json_string_value(prop(n, key)); }

static bool is_optional_union(const anode *n) { return n->type == AT_UNION && n->nbr == 2 && n->null_branch >= 0; }

static bool is_map_entry(const anode *items) {
    if (items->type != AT_RECORD || !items->fullname) return false;
    const char *internal = prop_str(items, "connect.internal.type");
    return strcmp(items->fullname, CF_AVRO_MAP_ENTRY) == 0 || (internal && strcmp(internal, "MapEntry") == 0);
}

static const char *short_name(const char *full) {
    const char *d = strrchr(full, '.');
    return d ? d + 1 : full;
}

/* Field name of a union member in Connect's io.confluent.connect.avro.Union struct. */
static const char *union_member_name(const anode *m) {
    if (m->type == AT_RECORD || m->type == AT_ENUM) return short_name(m->fullname);
    return atype_names[m->type];
}

/* ======================================================================
 * Avro -> Connect schema (AvroData.toConnectSchema)
 * ====================================================================== */

static cf_code default_from_avro(const cf_schema *s, const anode *n, json_t *jv, cf_value **out, cf_err *err);

static cf_code schema_fail(cf_err *err, const char *path, const char *msg, const char *detail) {
    cf_err_set(err, CF_ERR_SCHEMA, "%s", msg);
    if (detail) cf_err_detail(err, "%s", detail);
    cf_err_where(err, "%s", path && *path ? path : "(top level)");
    return CF_ERR_SCHEMA;
}

static bool is_default_name(const char *name) {
    size_t l = strlen(CF_AVRO_DEFAULT_NAME);
    if (strncmp(name, CF_AVRO_DEFAULT_NAME, l) != 0) return false;
    for (const char *p = name + l; *p; p++)
        if (*p < '0' || *p > '9') return false;
    return true;
}

static cf_code to_connect(anode *n, bool force_optional, json_t *field_default, const char *doc_default,
                          const char *path, cf_schema **out, cf_err *err) {
    const char *ctype = prop_str(n, "connect.type");
    const char *logical = prop_str(n, "logicalType");
    cf_schema *s = NULL;
    cf_code rc = CF_OK;
    char sub[300];

    switch (n->type) {
    case AT_BOOLEAN: s = cf_schema_new(CF_BOOLEAN); break;
    case AT_BYTES:
    case AT_FIXED:
        if (logical && strcasecmp(logical, "decimal") == 0) {
            json_t *sc = prop(n, "scale");
            if (!json_is_integer(sc))
                return schema_fail(err, path, "invalid Avro decimal", "\"scale\" must be specified and must be a number");
            s = cf_schema_decimal((int32_t)json_integer_value(sc));
            json_t *pr = prop(n, "precision");
            char buf[32];
            if (pr) {
                if (!json_is_integer(pr)) {
                    cf_schema_unref(s);
                    return schema_fail(err, path, "invalid Avro decimal", "\"precision\" must be a JSON integer");
                }
                snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(pr));
            } else {
                snprintf(buf, sizeof buf, "%d", CF_AVRO_DECIMAL_PRECISION_DEFAULT);
            }
            cf_schema_set_param(s, CF_AVRO_DECIMAL_PRECISION_PARAM, buf);
        } else {
            s = cf_schema_new(CF_BYTES);
        }
        if (n->type == AT_FIXED) {
            char buf[32];
            snprintf(buf, sizeof buf, "%zu", n->fixed_size);
            cf_schema_set_param(s, "connect.fixed.size", buf);
        }
        break;
    case AT_DOUBLE: s = cf_schema_new(CF_FLOAT64); break;
    case AT_FLOAT: s = cf_schema_new(CF_FLOAT32); break;
    case AT_INT:
        if (!ctype && !logical) s = cf_schema_new(CF_INT32);
        else if (logical) {
            if (strcasecmp(logical, "date") == 0) s = cf_schema_date();
            else if (strcasecmp(logical, "time-millis") == 0) s = cf_schema_time();
            else s = cf_schema_new(CF_INT32);
        } else if (strcmp(ctype, "int8") == 0) s = cf_schema_new(CF_INT8);
        else if (strcmp(ctype, "int16") == 0) s = cf_schema_new(CF_INT16);
        else return schema_fail(err, path, "invalid connect.type annotation on an Avro int", ctype);
        break;
    case AT_LONG:
        if (logical && strcasecmp(logical, "timestamp-millis") == 0) s = cf_schema_timestamp();
        else s = cf_schema_new(CF_INT64);
        break;
    case AT_STRING: s = cf_schema_new(CF_STRING); break;
    case AT_ARRAY:
        snprintf(sub, sizeof sub, "%s[]", path);
        if (is_map_entry(n->items)) {
            anode *e = n->items;
            const afield *kf = NULL, *vf = NULL;
            for (size_t i = 0; i < e->nfields; i++) {
                if (strcmp(e->fields[i].name, "key") == 0) kf = &e->fields[i];
                else if (strcmp(e->fields[i].name, "value") == 0) vf = &e->fields[i];
            }
            if (e->nfields != 2 || !kf || !vf)
                return schema_fail(err, path, "invalid Connect map encoding",
                                   "found a map encoded as an array of key-value records, but the records do not have "
                                   "exactly the fields \"key\" and \"value\"");
            cf_schema *ks = NULL, *vs = NULL;
            if ((rc = to_connect(kf->type, false, NULL, NULL, sub, &ks, err))) return rc;
            if ((rc = to_connect(vf->type, false, NULL, NULL, sub, &vs, err))) {
                cf_schema_unref(ks);
                return rc;
            }
            s = cf_schema_new_map(ks, vs);
        } else {
            cf_schema *es = NULL;
            if ((rc = to_connect(n->items, false, NULL, NULL, sub, &es, err))) return rc;
            s = cf_schema_new_array(es);
        }
        break;
    case AT_MAP: {
        snprintf(sub, sizeof sub, "%s{}", path);
        cf_schema *vs = NULL;
        if ((rc = to_connect(n->items, false, NULL, NULL, sub, &vs, err))) return rc;
        s = cf_schema_new_map(cf_schema_new(CF_STRING), vs);
        break;
    }
    case AT_RECORD:
        if (n->visiting)
            return schema_fail(err, path, "recursive Avro type cannot be represented as a Connect schema", n->fullname);
        n->visiting = true;
        s = cf_schema_new_struct();
        for (size_t i = 0; i < n->nfields; i++) {
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", n->fields[i].name);
            cf_schema *fs = NULL;
            rc = to_connect(n->fields[i].type, false, n->fields[i].def, n->fields[i].doc, sub, &fs, err);
            if (rc == CF_OK) rc = cf_schema_add_field(s, n->fields[i].name, fs, err);
            if (rc) {
                n->visiting = false;
                cf_schema_unref(s);
                return rc;
            }
        }
        n->visiting = false;
        break;
    case AT_ENUM: {
        s = cf_schema_new(CF_STRING);
        if (n->doc) cf_schema_set_param(s, "connect.enum.doc", n->doc);
        cf_schema_set_param(s, CF_AVRO_ENUM, n->fullname);
        for (size_t i = 0; i < n->nsym; i++) {
            char key[512];
            snprintf(key, sizeof key, "%s.%s", CF_AVRO_ENUM, n->symbols[i]);
            cf_schema_set_param(s, key, n->symbols[i]);
        }
        break;
    }
    case AT_UNION:
        if (is_optional_union(n)) return to_connect(n->br[1 - n->null_branch], true, NULL, doc_default, path, out, err);
        s = cf_schema_new_struct();
        cf_schema_set_name(s, CF_AVRO_UNION);
        for (size_t i = 0; i < n->nbr; i++) {
            anode *m = n->br[i];
            if (m->type == AT_NULL) {
                cf_schema_set_optional(s, true);
                continue;
            }
            const char *fname = union_member_name(m);
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (cf_schema_field(s, fname)) {
                cf_schema_unref(s);
                return schema_fail(err, sub, "Avro union cannot be represented in Connect",
                                   "multiple union members map to the same Connect union field name");
            }
            cf_schema *fs = NULL;
            if ((rc = to_connect(m, true, NULL, NULL, sub, &fs, err)) ||
                (rc = cf_schema_add_field(s, fname, fs, err))) {
                cf_schema_unref(s);
                return rc;
            }
        }
        break;
    case AT_NULL:
        return schema_fail(err, path, "standalone null schemas are not supported",
                           "Connect has no null type; \"null\" can only appear in a union");
    }

    /* doc */
    const char *doc = doc_default ? doc_default : (n->doc ? n->doc : prop_str(n, "connect.doc"));
    if (doc) cf_schema_set_doc(s, doc);
    if (n->doc) cf_schema_set_param(s, "connect.record.doc", n->doc);

    /* version */
    json_t *ver = prop(n, "connect.version");
    if (ver) {
        if (!json_is_integer(ver)) {
            cf_schema_unref(s);
            return schema_fail(err, path, "invalid connect.version", "connect.version must be an integer");
        }
        int32_t v = (int32_t)json_integer_value(ver);
        if (s->has_version && s->version != v) {
            cf_schema_unref(s);
            return schema_fail(err, path, "mismatched versions",
                               "connect.version differs from the version of the logical type");
        }
        cf_schema_set_version(s, v);
    }

    /* parameters */
    json_t *params = prop(n, "connect.parameters");
    if (params) {
        if (!json_is_object(params)) {
            cf_schema_unref(s);
            return schema_fail(err, path, "invalid connect.parameters", "expected a JSON object of strings");
        }
        const char *k;
        json_t *v;
        json_object_foreach(params, k, v) {
            if (!json_is_string(v)) {
                cf_schema_unref(s);
                return schema_fail(err, path, "invalid connect.parameters", "parameter values must be strings");
            }
            cf_schema_set_param(s, k, json_string_value(v));
        }
    }
    if (n->j) {
        const char *k;
        json_t *v;
        json_object_foreach(n->j, k, v) {
            if (strncmp(k, "avro", 4) == 0 && json_is_string(v)) cf_schema_set_param(s, k, json_string_value(v));
        }
    }

    /* name */
    json_t *cname = prop(n, "connect.name");
    const char *name = NULL;
    if (cname) {
        if (!json_is_string(cname)) {
            cf_schema_unref(s);
            return schema_fail(err, path, "invalid connect.name", "connect.name must be a string");
        }
        name = json_string_value(cname);
    } else if (n->type == AT_RECORD || n->type == AT_ENUM || n->type == AT_FIXED) {
        name = n->fullname;
    }
    if (name && !is_default_name(name)) {
        if (s->name && strcmp(s->name, name) != 0) {
            char d[600];
            snprintf(d, sizeof d, "the type is %s but the schema names it %s", s->name, name);
            cf_schema_unref(s);
            return schema_fail(err, path, "mismatched names", d);
        }
        cf_schema_set_name(s, name);
    }

    if (force_optional) cf_schema_set_optional(s, true);

    /* default: the field's default wins over connect.default */
    json_t *def = field_default ? field_default : prop(n, "connect.default");
    if (def && !json_is_null(def)) {
        cf_value *dv = NULL;
        rc = default_from_avro(s, n, def, &dv, err);
        if (rc == CF_OK && dv) rc = cf_schema_set_default(s, dv, err);
        else if (rc == CF_OK && !dv) rc = CF_OK;
        if (rc) {
            cf_err_where_prefix(err, *path ? path : NULL);
            cf_schema_unref(s);
            return rc;
        }
    }
    *out = s;
    return CF_OK;
}

/* ISO-8859-1 JSON string (Avro's encoding of bytes defaults) -> bytes. */
static cf_value *latin1_bytes(const char *s, size_t len, bool *ok) {
    unsigned char *out = cf_xmalloc(len + 1);
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            out[o++] = c;
            i++;
        } else if ((c & 0xE0) == 0xC0 && i + 1 < len && c <= 0xC3) {
            out[o++] = (unsigned char)(((c & 0x1F) << 6) | ((unsigned char)s[i + 1] & 0x3F));
            i += 2;
        } else {
            *ok = false;
            free(out);
            return NULL;
        }
    }
    out[o] = 0;
    return cf_value_bytes_take(out, o);
}

static cf_code bad_default(cf_err *err, const cf_schema *s, json_t *jv) {
    char *t = json_dumps(jv, JSON_ENCODE_ANY | JSON_COMPACT);
    cf_err_set(err, CF_ERR_SCHEMA, "invalid default value for a %s schema", cf_type_name(s->type));
    cf_err_detail(err, "default %.300s", t ? t : "?");
    free(t);
    return CF_ERR_SCHEMA;
}

/* Deep copy without the default: a struct default value must not hold a reference to the
 * schema that owns it (a reference cycle would never be freed). */
static cf_schema *copy_nodefault(const cf_schema *s) {
    cf_schema *c = cf_schema_new(s->type);
    c->optional = s->optional;
    if (s->name) cf_schema_set_name(c, s->name);
    if (s->has_version) cf_schema_set_version(c, s->version);
    if (s->doc) cf_schema_set_doc(c, s->doc);
    for (size_t i = 0; i < s->n_params; i++) cf_schema_set_param(c, s->params[i].key, s->params[i].value);
    c->key_schema = cf_schema_ref(s->key_schema);
    c->value_schema = cf_schema_ref(s->value_schema);
    for (size_t i = 0; i < s->n_fields; i++)
        cf_schema_add_field(c, s->fields[i].name, cf_schema_ref(s->fields[i].schema), NULL);
    return c;
}

static cf_code default_from_avro(const cf_schema *s, const anode *n, json_t *jv, cf_value **out, cf_err *err) {
    *out = NULL;
    if (json_is_null(jv)) return CF_OK;
    if (n->type == AT_UNION) {
        /* defaults match the first branch */
        const anode *m = n->br[0];
        if (m->type == AT_NULL) return CF_OK;
        if (is_optional_union(n)) return default_from_avro(s, m, jv, out, err);
        const cf_field *f = cf_schema_field(s, union_member_name(m));
        if (!f) return bad_default(err, s, jv);
        cf_value *fv = NULL;
        cf_code rc = default_from_avro(f->schema, m, jv, &fv, err);
        if (rc) return rc;
        cf_value *st = cf_value_struct(copy_nodefault(s));
        cf_value_struct_set_index(st, f->index, fv);
        *out = st;
        return CF_OK;
    }
    switch (s->type) {
    case CF_INT8:
    case CF_INT16:
    case CF_INT32:
    case CF_INT64: {
        if (!json_is_integer(jv)) return bad_default(err, s, jv);
        json_int_t x = json_integer_value(jv);
        cf_value *v = cf_value_int64(x);
        v->type = s->type;
        if ((s->type == CF_INT8 && (x < INT8_MIN || x > INT8_MAX)) ||
            (s->type == CF_INT16 && (x < INT16_MIN || x > INT16_MAX)) ||
            (s->type == CF_INT32 && (x < INT32_MIN || x > INT32_MAX))) {
            cf_value_destroy(v);
            return bad_default(err, s, jv);
        }
        *out = v;
        return CF_OK;
    }
    case CF_FLOAT32:
        if (!json_is_number(jv)) return bad_default(err, s, jv);
        *out = cf_value_float32((float)json_number_value(jv));
        return CF_OK;
    case CF_FLOAT64:
        if (!json_is_number(jv)) return bad_default(err, s, jv);
        *out = cf_value_float64(json_number_value(jv));
        return CF_OK;
    case CF_BOOLEAN:
        if (!json_is_boolean(jv)) return bad_default(err, s, jv);
        *out = cf_value_bool(json_is_true(jv));
        return CF_OK;
    case CF_STRING:
        if (!json_is_string(jv)) return bad_default(err, s, jv);
        *out = cf_value_string_n(json_string_value(jv), json_string_length(jv));
        return CF_OK;
    case CF_BYTES: {
        if (!json_is_string(jv)) return bad_default(err, s, jv);
        bool ok = true;
        cf_value *v = latin1_bytes(json_string_value(jv), json_string_length(jv), &ok);
        if (!ok) return bad_default(err, s, jv);
        *out = v;
        return CF_OK;
    }
    case CF_ARRAY: {
        if (!json_is_array(jv) || n->type != AT_ARRAY) return bad_default(err, s, jv);
        cf_value *arr = cf_value_array();
        for (size_t i = 0; i < json_array_size(jv); i++) {
            cf_value *e = NULL;
            cf_code rc = default_from_avro(s->value_schema, n->items, json_array_get(jv, i), &e, err);
            if (rc) {
                cf_value_destroy(arr);
                return rc;
            }
            cf_value_array_push(arr, e);
        }
        *out = arr;
        return CF_OK;
    }
    case CF_MAP: {
        cf_value *m = cf_value_map();
        if (n->type == AT_MAP && json_is_object(jv)) {
            const char *k;
            json_t *v;
            json_object_foreach(jv, k, v) {
                cf_value *e = NULL;
                cf_code rc = default_from_avro(s->value_schema, n->items, v, &e, err);
                if (rc) {
                    cf_value_destroy(m);
                    return rc;
                }
                cf_value_map_put(m, cf_value_string(k), e);
            }
        } else if (n->type == AT_ARRAY && json_is_array(jv) && is_map_entry(n->items)) {
            const anode *e = n->items;
            const anode *kt = strcmp(e->fields[0].name, "key") == 0 ? e->fields[0].type : e->fields[1].type;
            const anode *vt = strcmp(e->fields[0].name, "key") == 0 ? e->fields[1].type : e->fields[0].type;
            for (size_t i = 0; i < json_array_size(jv); i++) {
                json_t *ent = json_array_get(jv, i);
                json_t *jk = NULL, *jvv = NULL;
                if (json_is_object(ent)) {
                    jk = json_object_get(ent, "key");
                    jvv = json_object_get(ent, "value");
                } else if (json_is_array(ent) && json_array_size(ent) == 2) { /* Confluent's older form */
                    jk = json_array_get(ent, 0);
                    jvv = json_array_get(ent, 1);
                }
                if (!jk || !jvv) {
                    cf_value_destroy(m);
                    return bad_default(err, s, jv);
                }
                cf_value *kv = NULL, *vv = NULL;
                cf_code rc = default_from_avro(s->key_schema, kt, jk, &kv, err);
                if (!rc) rc = default_from_avro(s->value_schema, vt, jvv, &vv, err);
                if (rc) {
                    cf_value_destroy(kv);
                    cf_value_destroy(m);
                    return rc;
                }
                cf_value_map_put(m, kv, vv);
            }
        } else {
            cf_value_destroy(m);
            return bad_default(err, s, jv);
        }
        *out = m;
        return CF_OK;
    }
    case CF_STRUCT: {
        if (!json_is_object(jv) || n->type != AT_RECORD) return bad_default(err, s, jv);
        cf_value *st = cf_value_struct(copy_nodefault(s));
        for (size_t i = 0; i < n->nfields && i < s->n_fields; i++) {
            json_t *fj = json_object_get(jv, n->fields[i].name);
            if (!fj) fj = n->fields[i].def;
            if (!fj) continue;
            cf_value *fv = NULL;
            cf_code rc = default_from_avro(s->fields[i].schema, n->fields[i].type, fj, &fv, err);
            if (rc) {
                cf_value_destroy(st);
                return rc;
            }
            cf_value_struct_set_index(st, i, fv);
        }
        *out = st;
        return CF_OK;
    }
    }
    return bad_default(err, s, jv);
}

/* ======================================================================
 * Connect -> Avro schema JSON (AvroData.fromConnectSchema)
 * ====================================================================== */

typedef struct fdef {
    char *fullname;
    json_t *def;            /* the full definition (borrowed; lives in the output tree) */
    const cf_schema *schema; /* STRUCT definitions: the Connect schema (borrowed) */
    const cf_schema *map;    /* MapEntry definitions: the Connect map schema (borrowed) */
} fdef;

typedef struct fctx {
    bool meta;
    int unnamed; /* ConnectDefault counter */
    fdef *defs;
    size_t ndefs, capdefs;
    cf_err *err;
} fctx;

static fdef *fc_find(fctx *F, const char *fullname) {
    for (size_t i = 0; i < F->ndefs; i++)
        if (strcmp(F->defs[i].fullname, fullname) == 0) return &F->defs[i];
    return NULL;
}

static void fc_add(fctx *F, const char *fullname, json_t *def, const cf_schema *s) {
    if (F->ndefs == F->capdefs) {
        F->capdefs = F->capdefs ? F->capdefs * 2 : 8;
        F->defs = cf_xrealloc(F->defs, F->capdefs * sizeof *F->defs);
    }
    F->defs[F->ndefs].fullname = cf_xstrdup(fullname);
    F->defs[F->ndefs].def = def;
    F->defs[F->ndefs].schema = s;
    F->defs[F->ndefs].map = NULL;
    F->ndefs++;
}

/* Equality of two Connect schemas ignoring the top-level optional flag (an optional struct
 * and its required twin share one Avro record). */
static bool same_base(const cf_schema *a, const cf_schema *b) {
    if (a == b) return true;
    cf_schema tmp = *b;
    tmp.optional = a->optional;
    return cf_schema_equal(a, &tmp);
}

/* A named definition was just built: if the name exists, reuse it when identical (a name
 * reference), else fail as Avro would ("Can't redefine"). Returns the node to place. */
static json_t *fc_named(fctx *F, const char *fullname, json_t *def, const cf_schema *s, const char *path) {
    fdef *d = fc_find(F, fullname);
    if (!d) {
        fc_add(F, fullname, def, s);
        return def;
    }
    if (json_equal(d->def, def)) {
        json_decref(def);
        return json_string(fullname);
    }
    json_decref(def);
    cf_err_set(F->err, CF_ERR_SCHEMA, "two different Connect schemas both map to the Avro name %s", fullname);
    cf_err_detail(F->err, "Avro cannot define one name twice with different contents");
    cf_err_hint(F->err, "Give the schemas different names (schema name of the struct or map).");
    cf_err_where(F->err, "%s", *path ? path : "(top level)");
    return NULL;
}

static void split_name(const char *full, char **ns, char **name) {
    const char *d = strrchr(full, '.');
    if (d) {
        *ns = cf_xstrndup(full, (size_t)(d - full));
        *name = cf_xstrdup(d + 1);
    } else {
        *ns = NULL;
        *name = cf_xstrdup(full);
    }
}

static json_t *default_to_json(const cf_schema *s, const cf_value *v);

static json_t *bytes_to_latin1(const char *p, size_t n) {
    cf_buf b = CF_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x80) cf_buf_append_byte(&b, c);
        else {
            cf_buf_append_byte(&b, (uint8_t)(0xC0 | (c >> 6)));
            cf_buf_append_byte(&b, (uint8_t)(0x80 | (c & 0x3F)));
        }
    }
    json_t *j = json_stringn(b.data ? b.data : "", b.len);
    cf_buf_free(&b);
    return j;
}

static json_t *default_to_json(const cf_schema *s, const cf_value *v) {
    if (!v) return json_null();
    switch (s->type) {
    case CF_INT8:
    case CF_INT16:
    case CF_INT32:
    case CF_INT64: return json_integer(v->u.i);
    case CF_FLOAT32:
    case CF_FLOAT64: return json_real(v->u.f);
    case CF_BOOLEAN: return json_boolean(v->u.b);
    case CF_STRING: return json_stringn(v->u.s.ptr, v->u.s.len);
    case CF_BYTES: return bytes_to_latin1(v->u.s.ptr, v->u.s.len);
    case CF_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; i < v->u.arr.len; i++) json_array_append_new(a, default_to_json(s->value_schema, v->u.arr.items[i]));
        return a;
    }
    case CF_MAP:
        if (s->key_schema->type == CF_STRING && !s->key_schema->optional) {
            json_t *o = json_object();
            for (size_t i = 0; i < v->u.map.len; i++)
                if (v->u.map.keys[i])
                    json_object_setn_new(o, v->u.map.keys[i]->u.s.ptr, v->u.map.keys[i]->u.s.len,
                                         default_to_json(s->value_schema, v->u.map.vals[i]));
            return o;
        } else {
            json_t *a = json_array();
            for (size_t i = 0; i < v->u.map.len; i++) {
                json_t *e = json_object();
                json_object_set_new(e, "key", default_to_json(s->key_schema, v->u.map.keys[i]));
                json_object_set_new(e, "value", default_to_json(s->value_schema, v->u.map.vals[i]));
                json_array_append_new(a, e);
            }
            return a;
        }
    case CF_STRUCT: {
        json_t *o = json_object();
        for (size_t i = 0; i < s->n_fields; i++) {
            const cf_value *fv = v->u.st.fields ? v->u.st.fields[i] : NULL;
            json_object_set_new(o, s->fields[i].name, default_to_json(s->fields[i].schema, fv));
        }
        return o;
    }
    }
    return json_null();
}

static bool has_default(const cf_schema *s) { return s->has_default && s->default_value; }

/* Wrap a primitive type name into an object so properties can be added. */
static json_t *as_object(json_t *base) {
    if (json_is_object(base)) return base;
    json_t *o = json_object();
    json_object_set_new(o, "type", base);
    return o;
}

static json_t *fc(fctx *F, const cf_schema *s, bool ignore_optional, const char *path);

static json_t *fc_field(fctx *F, const char *name, const cf_schema *fs, const char *path) {
    json_t *t = fc(F, fs, false, path);
    if (!t) return NULL;
    json_t *f = json_object();
    json_object_set_new(f, "name", json_string(name));
    json_object_set_new(f, "type", t);
    if (has_default(fs)) json_object_set_new(f, "default", default_to_json(fs, fs->default_value));
    else if (fs->optional) json_object_set_new(f, "default", json_null());
    return f;
}

static json_t *fc(fctx *F, const cf_schema *s, bool ignore_optional, const char *path) {
    char sub[300];
    const char *connect_type = NULL;
    json_t *base = NULL;
    bool is_union = false, is_ref = false;

    switch (s->type) {
    case CF_INT8: connect_type = "int8"; base = json_string("int"); break;
    case CF_INT16: connect_type = "int16"; base = json_string("int"); break;
    case CF_INT32: base = json_string("int"); break;
    case CF_INT64: base = json_string("long"); break;
    case CF_FLOAT32: base = json_string("float"); break;
    case CF_FLOAT64: base = json_string("double"); break;
    case CF_BOOLEAN: base = json_string("boolean"); break;
    case CF_STRING: base = json_string("string"); break;
    case CF_BYTES: {
        const char *fsize = cf_schema_param(s, "connect.fixed.size");
        if (fsize && s->name) {
            char *ns, *nm;
            split_name(s->name, &ns, &nm);
            base = json_object();
            json_object_set_new(base, "type", json_string("fixed"));
            json_object_set_new(base, "name", json_string(nm));
            if (ns) json_object_set_new(base, "namespace", json_string(ns));
            json_object_set_new(base, "size", json_integer(strtoll(fsize, NULL, 10)));
            free(ns);
            free(nm);
        } else {
            base = json_string("bytes");
        }
        if (s->name && strcasecmp(s->name, CF_LOGICAL_DECIMAL) == 0) {
            int32_t scale;
            if (!cf_schema_decimal_scale(s, &scale)) {
                json_decref(base);
                cf_err_set(F->err, CF_ERR_SCHEMA, "Decimal schema without a valid \"scale\" parameter");
                cf_err_where(F->err, "%s", *path ? path : "(top level)");
                return NULL;
            }
            const char *p = cf_schema_param(s, CF_AVRO_DECIMAL_PRECISION_PARAM);
            long precision = CF_AVRO_DECIMAL_PRECISION_DEFAULT;
            if (p) {
                char *end;
                precision = strtol(p, &end, 10);
                if (*end || end == p) {
                    json_decref(base);
                    cf_err_set(F->err, CF_ERR_SCHEMA, "invalid %s parameter", CF_AVRO_DECIMAL_PRECISION_PARAM);
                    cf_err_detail(F->err, "\"%s\" is not an integer", p);
                    cf_err_where(F->err, "%s", *path ? path : "(top level)");
                    return NULL;
                }
            }
            base = as_object(base);
            json_object_set_new(base, "scale", json_integer(scale));
            json_object_set_new(base, "precision", json_integer(precision));
        }
        break;
    }
    case CF_ARRAY: {
        snprintf(sub, sizeof sub, "%s[]", path);
        json_t *items = fc(F, s->value_schema, false, sub);
        if (!items) return NULL;
        base = json_object();
        json_object_set_new(base, "type", json_string("array"));
        json_object_set_new(base, "items", items);
        break;
    }
    case CF_MAP:
        snprintf(sub, sizeof sub, "%s{}", path);
        if (s->key_schema->type == CF_STRING && !s->key_schema->optional) {
            json_t *vals = fc(F, s->value_schema, false, sub);
            if (!vals) return NULL;
            base = json_object();
            json_object_set_new(base, "type", json_string("map"));
            json_object_set_new(base, "values", vals);
        } else {
            /* An equal map converted before: reuse its entry record by name (its nested
             * definitions are references now, so comparing JSON would not see the match). */
            const char *entry_name = s->name ? s->name : CF_AVRO_MAP_ENTRY;
            for (size_t i = 0; i < F->ndefs && !base; i++) {
                const cf_schema *m = F->defs[i].map;
                if (m && strcmp(F->defs[i].fullname, entry_name) == 0 && cf_schema_equal(m->key_schema, s->key_schema) &&
                    cf_schema_equal(m->value_schema, s->value_schema)) {
                    base = json_object();
                    json_object_set_new(base, "type", json_string("array"));
                    json_object_set_new(base, "items", json_string(entry_name));
                }
            }
            if (base) break;
            json_t *rec = json_object();
            char *ns = NULL, *nm = NULL;
            if (s->name) split_name(s->name, &ns, &nm);
            json_object_set_new(rec, "type", json_string("record"));
            json_object_set_new(rec, "name", json_string(s->name ? nm : "MapEntry"));
            if (!s->name || ns) json_object_set_new(rec, "namespace", json_string(s->name ? ns : CF_AVRO_NAMESPACE));
            json_t *fields = json_array();
            json_object_set_new(rec, "fields", fields);
            json_t *kf = fc_field(F, "key", s->key_schema, sub);
            json_t *vf = kf ? fc_field(F, "value", s->value_schema, sub) : NULL;
            if (!kf || !vf) {
                json_decref(kf);
                json_decref(rec);
                free(ns);
                free(nm);
                return NULL;
            }
            json_array_append_new(fields, kf);
            json_array_append_new(fields, vf);
            if (s->name) json_object_set_new(rec, "connect.internal.type", json_string("MapEntry"));
            char full[1024];
            snprintf(full, sizeof full, "%s", s->name ? s->name : CF_AVRO_MAP_ENTRY);
            free(ns);
            free(nm);
            json_t *placed = fc_named(F, full, rec, NULL, path);
            if (!placed) return NULL;
            if (placed == rec) F->defs[F->ndefs - 1].map = s;
            base = json_object();
            json_object_set_new(base, "type", json_string("array"));
            json_object_set_new(base, "items", placed);
        }
        break;
    case CF_STRUCT:
        if (s->name && strcmp(s->name, CF_AVRO_UNION) == 0) {
            is_union = true;
            base = json_array();
            if (s->optional) json_array_append_new(base, json_string("null"));
            for (size_t i = 0; i < s->n_fields; i++) {
                snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", s->fields[i].name);
                json_t *m = fc(F, s->fields[i].schema, true, sub);
                if (!m) {
                    json_decref(base);
                    return NULL;
                }
                json_array_append_new(base, m);
            }
        } else {
            /* An equal struct converted before: reuse its Avro name. */
            for (size_t i = 0; i < F->ndefs; i++)
                if (F->defs[i].schema && same_base(F->defs[i].schema, s)) {
                    base = json_string(F->defs[i].fullname);
                    is_ref = true;
                    break;
                }
            if (!base) {
                char *ns, *nm;
                if (s->name) split_name(s->name, &ns, &nm);
                else {
                    ns = cf_xstrdup(CF_AVRO_NAMESPACE);
                    char b[64];
                    F->unnamed++;
                    if (F->unnamed > 1) snprintf(b, sizeof b, "ConnectDefault%d", F->unnamed);
                    else snprintf(b, sizeof b, "ConnectDefault");
                    nm = cf_xstrdup(b);
                }
                json_t *rec = json_object();
                json_object_set_new(rec, "type", json_string("record"));
                json_object_set_new(rec, "name", json_string(nm));
                if (ns) json_object_set_new(rec, "namespace", json_string(ns));
                const char *rdoc = cf_schema_param(s, "connect.record.doc");
                if (rdoc) json_object_set_new(rec, "doc", json_string(rdoc));
                json_t *fields = json_array();
                json_object_set_new(rec, "fields", fields);
                char full[1024];
                snprintf(full, sizeof full, "%s%s%s", ns ? ns : "", ns ? "." : "", nm);
                free(ns);
                free(nm);
                for (size_t i = 0; i < s->n_fields; i++) {
                    snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", s->fields[i].name);
                    json_t *f = fc_field(F, s->fields[i].name, s->fields[i].schema, sub);
                    if (!f) {
                        json_decref(rec);
                        return NULL;
                    }
                    json_array_append_new(fields, f);
                }
                base = rec; /* registered below, once its properties are on it */
                (void)full;
            }
        }
        break;
    }

    if (!is_union && !is_ref) {
        if (F->meta) {
            json_t *props = json_object();
            if (s->doc) json_object_set_new(props, "connect.doc", json_string(s->doc));
            if (s->has_version) json_object_set_new(props, "connect.version", json_integer(s->version));
            if (s->n_params) {
                json_t *p = json_object();
                for (size_t i = 0; i < s->n_params; i++)
                    json_object_set_new(p, s->params[i].key, json_string(s->params[i].value));
                json_object_set_new(props, "connect.parameters", p);
            }
            if (has_default(s)) json_object_set_new(props, "connect.default", default_to_json(s, s->default_value));
            if (s->name) json_object_set_new(props, "connect.name", json_string(s->name));
            if (connect_type) json_object_set_new(props, "connect.type", json_string(connect_type));
            if (json_object_size(props)) {
                base = as_object(base);
                json_object_update(base, props);
            }
            json_decref(props);
        }
        if (s->name) {
            const char *lt = NULL;
            if (strcasecmp(s->name, CF_LOGICAL_DECIMAL) == 0) lt = "decimal";
            else if (strcasecmp(s->name, CF_LOGICAL_TIME) == 0) lt = "time-millis";
            else if (strcasecmp(s->name, CF_LOGICAL_TIMESTAMP) == 0) lt = "timestamp-millis";
            else if (strcasecmp(s->name, CF_LOGICAL_DATE) == 0) lt = "date";
            if (lt) {
                base = as_object(base);
                json_object_set_new(base, "logicalType", json_string(lt));
            }
        }
        for (size_t i = 0; i < s->n_params; i++)
            if (strncmp(s->params[i].key, "avro", 4) == 0) {
                base = as_object(base);
                json_object_set_new(base, s->params[i].key, json_string(s->params[i].value));
            }
        /* Register a freshly built named type once its properties are complete, so that
         * fc_named compares whole definitions. */
        const char *type = json_string_value(json_object_get(base, "type"));
        if (json_is_object(base) && type && (strcmp(type, "record") == 0 || strcmp(type, "fixed") == 0)) {
            const char *nm = json_string_value(json_object_get(base, "name"));
            const char *ns = json_string_value(json_object_get(base, "namespace"));
            char full[1024];
            snprintf(full, sizeof full, "%s%s%s", ns ? ns : "", ns ? "." : "", nm ? nm : "");
            base = fc_named(F, full, base, s->type == CF_STRUCT ? s : NULL, path);
            if (!base) return NULL;
        }
    }

    if (!is_union && !ignore_optional && s->optional) {
        json_t *u = json_array();
        if (has_default(s)) {
            json_array_append_new(u, base);
            json_array_append_new(u, json_string("null"));
        } else {
            json_array_append_new(u, json_string("null"));
            json_array_append_new(u, base);
        }
        return u;
    }
    return base;
}

cf_code cf_avro_schema_from_connect(const cf_schema *schema, const cf_avro_opts *opts, char **json, cf_err *err) {
    if (!schema) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "schemaless data cannot be written as Avro by cdcflow");
        cf_err_hint(err, "Give the records a schema, or use the json converter with schemas.enable=false.");
        return CF_ERR_UNSUPPORTED;
    }
    fctx F = {.meta = opts ? opts->connect_meta_data : true, .err = err};
    json_t *j = fc(&F, schema, false, "");
    for (size_t i = 0; i < F.ndefs; i++) free(F.defs[i].fullname);
    free(F.defs);
    if (!j) return err && err->code != CF_OK ? err->code : CF_ERR_SCHEMA;
    *json = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    return CF_OK;
}

/* ======================================================================
 * codec
 * ====================================================================== */

struct cf_avro_codec {
    char *json;
    json_t *doc;
    anode **nodes;
    size_t nnodes;
    anode *root;
    cf_schema *schema;
    avro_schema_t aschema;
    avro_value_iface_t *iface;
    avro_value_t value;
    bool has_value;
    avro_writer_t writer; /* one memory writer, pointed at each output in turn */
    size_t room;          /* bytes to reserve for the next value: grows with what was needed */
    const char *record_name;
};

void cf_avro_codec_destroy(cf_avro_codec *c) {
    if (!c) return;
    if (c->has_value) avro_value_decref(&c->value);
    if (c->iface) avro_value_iface_decref(c->iface);
    if (c->aschema) avro_schema_decref(c->aschema);
    nodes_free(c->nodes, c->nnodes);
    json_decref(c->doc);
    cf_schema_unref(c->schema);
    free(c->json);
    if (c->writer) avro_writer_free(c->writer);
    free(c);
}

/* Parse JSON into the anode tree (and names); does not build the Connect schema. */
static cf_code parse_doc(const char *json, size_t len, json_t **doc_out, anode ***nodes, size_t *nnodes,
                         anode **root, cf_err *err) {
    json_error_t je;
    json_t *doc = json_loadb(json, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!doc) {
        cf_err_set(err, CF_ERR_SCHEMA, "invalid Avro schema: not JSON");
        cf_err_detail(err, "%s at line %d column %d", je.text, je.line, je.column);
        return CF_ERR_SCHEMA;
    }
    aparse P = {.err = err};
    anode *r = parse_node(&P, doc, NULL, "", 0);
    free(P.names);
    if (!r) {
        nodes_free(P.all, P.n);
        json_decref(doc);
        /* parse_node set err; a failure is never CF_OK, whatever err holds */
        return err && err->code != CF_OK ? err->code : CF_ERR_SCHEMA;
    }
    *doc_out = doc;
    *nodes = P.all;
    *nnodes = P.n;
    *root = r;
    return CF_OK;
}

cf_code cf_avro_schema_to_connect(const char *json, size_t len, cf_schema **out, cf_err *err) {
    json_t *doc;
    anode **nodes, *root;
    size_t nn;
    cf_code rc = parse_doc(json, len, &doc, &nodes, &nn, &root, err);
    if (rc) return rc;
    rc = to_connect(root, false, NULL, NULL, "", out, err);
    nodes_free(nodes, nn);
    json_decref(doc);
    return rc;
}

/* The schema as avro-c needs it: types, full names, fields, symbols, sizes, nothing else.
 * avro-c's JSON parser rejects \u0000 (legal in a bytes default) and mishandles an empty
 * "namespace", and it needs none of the properties or defaults anyway. */
static json_t *min_json(const anode *n, json_t *seen) {
    if (n->fullname && json_object_get(seen, n->fullname)) return json_string(n->fullname);
    json_t *o;
    switch (n->type) {
    case AT_UNION:
        o = json_array();
        for (size_t i = 0; i < n->nbr; i++) json_array_append_new(o, min_json(n->br[i], seen));
        return o;
    case AT_RECORD: {
        json_object_set_new(seen, n->fullname, json_true());
        o = json_object();
        json_object_set_new(o, "type", json_string("record"));
        json_object_set_new(o, "name", json_string(n->fullname));
        json_t *fs = json_array();
        for (size_t i = 0; i < n->nfields; i++) {
            json_t *f = json_object();
            json_object_set_new(f, "name", json_string(n->fields[i].name));
            json_object_set_new(f, "type", min_json(n->fields[i].type, seen));
            json_array_append_new(fs, f);
        }
        json_object_set_new(o, "fields", fs);
        return o;
    }
    case AT_ENUM: {
        json_object_set_new(seen, n->fullname, json_true());
        o = json_object();
        json_object_set_new(o, "type", json_string("enum"));
        json_object_set_new(o, "name", json_string(n->fullname));
        json_t *sy = json_array();
        for (size_t i = 0; i < n->nsym; i++) json_array_append_new(sy, json_string(n->symbols[i]));
        json_object_set_new(o, "symbols", sy);
        return o;
    }
    case AT_FIXED:
        json_object_set_new(seen, n->fullname, json_true());
        o = json_object();
        json_object_set_new(o, "type", json_string("fixed"));
        json_object_set_new(o, "name", json_string(n->fullname));
        json_object_set_new(o, "size", json_integer((json_int_t)n->fixed_size));
        return o;
    case AT_ARRAY:
    case AT_MAP:
        o = json_object();
        json_object_set_new(o, "type", json_string(n->type == AT_ARRAY ? "array" : "map"));
        json_object_set_new(o, n->type == AT_ARRAY ? "items" : "values", min_json(n->items, seen));
        return o;
    default: return json_string(atype_names[n->type]);
    }
}

static cf_code codec_finish(cf_avro_codec *c, cf_err *err) {
    cf_code rc = parse_doc(c->json, strlen(c->json), &c->doc, &c->nodes, &c->nnodes, &c->root, err);
    if (rc) return rc;
    if (!c->schema) {
        rc = to_connect(c->root, false, NULL, NULL, "", &c->schema, err);
        if (rc) return rc;
    }
    json_t *seen = json_object();
    json_t *mj = min_json(c->root, seen);
    char *mtext = json_dumps(mj, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(mj);
    json_decref(seen);
    int arc = avro_schema_from_json_length(mtext, strlen(mtext), &c->aschema);
    if (arc) {
        cf_err_set(err, CF_ERR_SCHEMA, "avro-c rejected the Avro schema");
        cf_err_detail(err, "%s", avro_strerror());
        cf_err_where(err, "%.200s", mtext);
        free(mtext);
        return CF_ERR_SCHEMA;
    }
    free(mtext);
    c->iface = avro_generic_class_from_schema(c->aschema);
    if (!c->iface || avro_generic_value_new(c->iface, &c->value)) {
        cf_err_set(err, CF_ERR_INTERNAL, "avro-c could not make a value for the schema");
        cf_err_detail(err, "%s", avro_strerror());
        return CF_ERR_INTERNAL;
    }
    c->has_value = true;
    c->record_name = c->root->fullname ? c->root->fullname : atype_names[c->root->type];
    if (is_optional_union(c->root)) {
        const anode *b = c->root->br[1 - c->root->null_branch];
        c->record_name = b->fullname ? b->fullname : atype_names[b->type];
    }
    return CF_OK;
}

cf_code cf_avro_codec_from_connect(const cf_schema *schema, const cf_avro_opts *opts, cf_avro_codec **out,
                                   cf_err *err) {
    cf_avro_codec *c = cf_xcalloc(1, sizeof *c);
    cf_code rc = cf_avro_schema_from_connect(schema, opts, &c->json, err);
    if (rc) {
        free(c);
        return rc;
    }
    c->schema = cf_schema_ref((cf_schema *)schema);
    rc = codec_finish(c, err);
    if (rc) {
        cf_avro_codec_destroy(c);
        return rc;
    }
    *out = c;
    return CF_OK;
}

cf_code cf_avro_codec_from_json(const char *json, size_t len, cf_avro_codec **out, cf_err *err) {
    cf_avro_codec *c = cf_xcalloc(1, sizeof *c);
    c->json = cf_xstrndup(json, len);
    if (strlen(c->json) != len) {
        cf_avro_codec_destroy(c);
        cf_err_set(err, CF_ERR_SCHEMA, "invalid Avro schema: contains a NUL byte");
        return CF_ERR_SCHEMA;
    }
    cf_code rc = codec_finish(c, err);
    if (rc) {
        cf_avro_codec_destroy(c);
        return rc;
    }
    *out = c;
    return CF_OK;
}

const char *cf_avro_codec_json(const cf_avro_codec *c) { return c->json; }
cf_schema *cf_avro_codec_schema(const cf_avro_codec *c) { return c->schema; }
const char *cf_avro_codec_record_name(const cf_avro_codec *c) { return c->record_name; }

/* ---------------- encode ---------------- */

static cf_code enc_fail(cf_err *err, const char *msg, const cf_schema *s, const cf_value *v) {
    cf_err_set(err, CF_ERR_SCHEMA, "%s", msg);
    if (v) cf_err_detail(err, "expected %s%s%s, got a %s value", cf_type_name(s->type), s->name ? " " : "",
                         s->name ? s->name : "", cf_type_name(v->type));
    else cf_err_detail(err, "expected %s%s%s, got null", cf_type_name(s->type), s->name ? " " : "",
                       s->name ? s->name : "");
    return CF_ERR_SCHEMA;
}

static cf_code avro_fail(cf_err *err, const char *what) {
    cf_err_set(err, CF_ERR_INTERNAL, "avro-c failed to %s", what);
    cf_err_detail(err, "%s", avro_strerror());
    return CF_ERR_INTERNAL;
}

static cf_code enc(const cf_schema *s, const anode *n, const cf_value *v, avro_value_t *av, cf_err *err);

static bool struct_schema_matches(const cf_schema *expected, const cf_schema *actual) {
    return expected == actual || cf_schema_equal(expected, actual);
}

static cf_code enc_union_struct(const cf_schema *s, const anode *n, const cf_value *v, avro_value_t *av,
                                cf_err *err) {
    avro_value_t br;
    if (v) {
        if (v->type != CF_STRUCT) return enc_fail(err, "value does not match its Connect union schema", s, v);
        size_t mi = 0;
        for (size_t b = 0; b < n->nbr; b++) {
            if (n->br[b]->type == AT_NULL) continue;
            const cf_field *f = &s->fields[mi];
            const cf_value *fv = v->u.st.fields[mi];
            if (v->u.st.schema != s) {
                const cf_field *vf = cf_schema_field(v->u.st.schema, f->name);
                fv = vf ? v->u.st.fields[vf->index] : NULL;
            }
            mi++;
            if (!fv) continue;
            if (avro_value_set_branch(av, (int)b, &br)) return avro_fail(err, "select a union branch");
            cf_code rc = enc(f->schema, n->br[b], fv, &br, err);
            if (rc) cf_err_where_prefix(err, f->name);
            return rc;
        }
    }
    if (n->null_branch < 0) return enc_fail(err, "null value for a union without null", s, NULL);
    if (avro_value_set_branch(av, n->null_branch, &br) || avro_value_set_null(&br))
        return avro_fail(err, "write a null union branch");
    return CF_OK;
}

static cf_code enc(const cf_schema *s, const anode *n, const cf_value *v, avro_value_t *av, cf_err *err) {
    /* Connect's Struct.get gives a field's default for an unset value. */
    if (!v && has_default(s)) v = s->default_value;
    if (n->type == AT_UNION) {
        if (!is_optional_union(n)) return enc_union_struct(s, n, v, av, err);
        avro_value_t br;
        if (!v) {
            if (avro_value_set_branch(av, n->null_branch, &br) || avro_value_set_null(&br))
                return avro_fail(err, "write a null union branch");
            return CF_OK;
        }
        int b = 1 - n->null_branch;
        if (avro_value_set_branch(av, b, &br)) return avro_fail(err, "select a union branch");
        return enc(s, n->br[b], v, &br, err);
    }
    if (!v) return enc_fail(err, "null value for a required field", s, NULL);
    int rc = 0;
    switch (n->type) {
    case AT_NULL: rc = avro_value_set_null(av); break;
    case AT_BOOLEAN:
        if (v->type != CF_BOOLEAN) return enc_fail(err, "value does not match its schema", s, v);
        rc = avro_value_set_boolean(av, v->u.b);
        break;
    case AT_INT:
        if (v->type != s->type || (v->type != CF_INT8 && v->type != CF_INT16 && v->type != CF_INT32))
            return enc_fail(err, "value does not match its schema", s, v);
        if ((v->type == CF_INT8 && (v->u.i < INT8_MIN || v->u.i > INT8_MAX)) ||
            (v->type == CF_INT16 && (v->u.i < INT16_MIN || v->u.i > INT16_MAX)) ||
            (v->u.i < INT32_MIN || v->u.i > INT32_MAX)) {
            cf_err_set(err, CF_ERR_SCHEMA, "%s value out of range", cf_type_name(v->type));
            cf_err_detail(err, "%lld", (long long)v->u.i);
            return CF_ERR_SCHEMA;
        }
        rc = avro_value_set_int(av, (int32_t)v->u.i);
        break;
    case AT_LONG:
        if (v->type != CF_INT64) return enc_fail(err, "value does not match its schema", s, v);
        rc = avro_value_set_long(av, v->u.i);
        break;
    case AT_FLOAT:
        if (v->type != CF_FLOAT32) return enc_fail(err, "value does not match its schema", s, v);
        rc = avro_value_set_float(av, (float)v->u.f);
        break;
    case AT_DOUBLE:
        if (v->type != CF_FLOAT64) return enc_fail(err, "value does not match its schema", s, v);
        rc = avro_value_set_double(av, v->u.f);
        break;
    case AT_STRING:
        if (v->type != CF_STRING) return enc_fail(err, "value does not match its schema", s, v);
        /* avro-c string sizes count the terminating NUL */
        rc = avro_value_set_string_len(av, v->u.s.ptr, v->u.s.len + 1);
        break;
    case AT_ENUM: {
        if (v->type != CF_STRING) return enc_fail(err, "value does not match its schema", s, v);
        size_t i = 0;
        while (i < n->nsym && strcmp(n->symbols[i], v->u.s.ptr) != 0) i++;
        if (i == n->nsym) {
            cf_err_set(err, CF_ERR_SCHEMA, "\"%.100s\" is not a symbol of enum %s", v->u.s.ptr, n->fullname);
            return CF_ERR_SCHEMA;
        }
        rc = avro_value_set_enum(av, (int)i);
        break;
    }
    case AT_BYTES:
        if (v->type != CF_BYTES) return enc_fail(err, "value does not match its schema", s, v);
        rc = avro_value_set_bytes(av, v->u.s.ptr, v->u.s.len);
        break;
    case AT_FIXED:
        if (v->type != CF_BYTES) return enc_fail(err, "value does not match its schema", s, v);
        if (v->u.s.len != n->fixed_size) {
            cf_err_set(err, CF_ERR_SCHEMA, "bytes value of length %zu for a fixed(%zu) type", v->u.s.len,
                       n->fixed_size);
            return CF_ERR_SCHEMA;
        }
        rc = avro_value_set_fixed(av, v->u.s.ptr, v->u.s.len);
        break;
    case AT_RECORD: {
        if (v->type != CF_STRUCT) return enc_fail(err, "value does not match its schema", s, v);
        bool same = struct_schema_matches(s, v->u.st.schema);
        for (size_t i = 0; i < n->nfields; i++) {
            avro_value_t fav;
            if (avro_value_get_by_index(av, i, &fav, NULL)) return avro_fail(err, "reach a record field");
            const cf_field *f = &s->fields[i];
            const cf_value *fv;
            if (same) fv = v->u.st.fields[i];
            else {
                const cf_field *vf = cf_schema_field(v->u.st.schema, f->name);
                fv = vf ? v->u.st.fields[vf->index] : NULL;
            }
            cf_code r = enc(f->schema, n->fields[i].type, fv, &fav, err);
            if (r) {
                cf_err_where_prefix(err, f->name);
                return r;
            }
        }
        break;
    }
    case AT_ARRAY:
        if (s->type == CF_MAP) {
            if (v->type != CF_MAP) return enc_fail(err, "value does not match its schema", s, v);
            const anode *e = n->items;
            size_t ki = strcmp(e->fields[0].name, "key") == 0 ? 0 : 1;
            for (size_t i = 0; i < v->u.map.len; i++) {
                avro_value_t ent, kav, vav;
                if (avro_value_append(av, &ent, NULL) || avro_value_get_by_index(&ent, ki, &kav, NULL) ||
                    avro_value_get_by_index(&ent, 1 - ki, &vav, NULL))
                    return avro_fail(err, "append a map entry");
                cf_code r = enc(s->key_schema, e->fields[ki].type, v->u.map.keys[i], &kav, err);
                if (!r) r = enc(s->value_schema, e->fields[1 - ki].type, v->u.map.vals[i], &vav, err);
                if (r) {
                    char idx[32];
                    snprintf(idx, sizeof idx, "[%zu]", i);
                    cf_err_where_prefix(err, idx);
                    return r;
                }
            }
        } else {
            if (v->type != CF_ARRAY) return enc_fail(err, "value does not match its schema", s, v);
            for (size_t i = 0; i < v->u.arr.len; i++) {
                avro_value_t el;
                if (avro_value_append(av, &el, NULL)) return avro_fail(err, "append an array element");
                cf_code r = enc(s->value_schema, n->items, v->u.arr.items[i], &el, err);
                if (r) {
                    char idx[32];
                    snprintf(idx, sizeof idx, "[%zu]", i);
                    cf_err_where_prefix(err, idx);
                    return r;
                }
            }
        }
        break;
    case AT_MAP:
        if (v->type != CF_MAP) return enc_fail(err, "value does not match its schema", s, v);
        for (size_t i = 0; i < v->u.map.len; i++) {
            const cf_value *k = v->u.map.keys[i];
            if (!k || k->type != CF_STRING) {
                cf_err_set(err, CF_ERR_SCHEMA, "map key is not a string");
                char idx[32];
                snprintf(idx, sizeof idx, "[%zu]", i);
                cf_err_where(err, "%s", idx);
                return CF_ERR_SCHEMA;
            }
            avro_value_t el;
            if (avro_value_add(av, k->u.s.ptr, &el, NULL, NULL)) return avro_fail(err, "add a map entry");
            cf_code r = enc(s->value_schema, n->items, v->u.map.vals[i], &el, err);
            if (r) {
                char idx[300];
                snprintf(idx, sizeof idx, "[\"%.250s\"]", k->u.s.ptr);
                cf_err_where_prefix(err, idx);
                return r;
            }
        }
        break;
    case AT_UNION: break; /* handled above */
    }
    if (rc) return avro_fail(err, "set a value");
    return CF_OK;
}

/* Straight into out's free room, with one writer kept for the codec (a
 * writer made and freed per value, and a copy from a scratch buffer, were a
 * tenth of the encoding's cost in bench_sidecar). */
static cf_code write_value(cf_avro_codec *c, cf_buf *out, cf_err *err) {
    if (!c->room) c->room = 4096;
    for (;;) {
        cf_buf_reserve(out, c->room);
        size_t avail = out->cap - out->len - 1; /* the buffer keeps its NUL */
        if (!c->writer) c->writer = avro_writer_memory(out->data + out->len, (int64_t)avail);
        else avro_writer_memory_set_dest(c->writer, out->data + out->len, (int64_t)avail);
        if (!c->writer) return avro_fail(err, "make a memory writer");
        int rc = avro_value_write(c->writer, &c->value);
        if (rc == 0) {
            out->len += (size_t)avro_writer_tell(c->writer);
            out->data[out->len] = '\0';
            return CF_OK;
        }
        if (rc != ENOSPC || c->room > (1u << 30)) return avro_fail(err, "write the Avro binary");
        c->room = avail * 4;
    }
}

cf_code cf_avro_codec_encode(cf_avro_codec *c, const cf_value *v, cf_buf *out, cf_err *err) {
    avro_value_reset(&c->value);
    cf_code rc = enc(c->schema, c->root, v, &c->value, err);
    if (rc) return rc;
    return write_value(c, out, err);
}

int cf_avro_codec_prepare_bare(cf_avro_codec *c, const cf_value *v, cf_err *err) {
    avro_value_reset(&c->value);
    return enc(c->schema, c->root, v, &c->value, err) ? -1 : 0;
}

long cf_avro_codec_encode_bare(cf_avro_codec *c, void *buf, size_t cap) {
    avro_writer_t w = avro_writer_memory(buf, (int64_t)cap);
    int rc = avro_value_write(w, &c->value);
    long n = (long)avro_writer_tell(w);
    avro_writer_free(w);
    return rc ? -1 : n;
}

int cf_avro_codec_decode_bare(cf_avro_codec *c, const void *data, size_t len) {
    avro_value_reset(&c->value);
    avro_reader_t r = avro_reader_memory(data, (int64_t)len);
    int rc = avro_value_read(r, &c->value);
    avro_reader_free(r);
    return rc;
}

/* ---------------- skim: check bytes against the schema ---------------- */

typedef struct skim_ctx {
    const uint8_t *base, *p, *end;
    cf_err *err;
} skim_ctx;

static cf_code skim_fail(skim_ctx *k, const char *what) {
    cf_err_set(k->err, CF_ERR_CORRUPT, "damaged Avro data: %s", what);
    cf_err_detail(k->err, "at byte %zu of %zu", (size_t)(k->p - k->base), (size_t)(k->end - k->base));
    cf_err_hint(k->err, "The bytes do not follow the writer schema named by the message's schema id.");
    return CF_ERR_CORRUPT;
}

static cf_code skim_long(skim_ctx *k, int64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    for (;;) {
        if (k->p >= k->end) return skim_fail(k, "truncated varint");
        uint8_t b = *k->p++;
        if (shift == 63 && (b & 0x7e)) return skim_fail(k, "varint longer than 64 bits");
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
        if (shift > 63) return skim_fail(k, "varint longer than 64 bits");
    }
    *out = (int64_t)((v >> 1) ^ -(v & 1));
    return CF_OK;
}

static cf_code skim_bytes(skim_ctx *k) {
    int64_t n;
    cf_code rc = skim_long(k, &n);
    if (rc) return rc;
    if (n < 0) return skim_fail(k, "negative length");
    if ((uint64_t)n > (uint64_t)(k->end - k->p)) return skim_fail(k, "length past the end of the data");
    k->p += n;
    return CF_OK;
}

/* Smallest encoding of a value of this type, in bytes (0 for null / empty record). */
static size_t min_size(const anode *n, int depth) {
    if (depth > 50) return 0;
    switch (n->type) {
    case AT_NULL: return 0;
    case AT_BOOLEAN:
    case AT_INT:
    case AT_LONG:
    case AT_ENUM:
    case AT_BYTES:
    case AT_STRING:
    case AT_ARRAY:
    case AT_MAP:
    case AT_UNION: return 1;
    case AT_FLOAT: return 4;
    case AT_DOUBLE: return 8;
    case AT_FIXED: return n->fixed_size;
    case AT_RECORD: {
        size_t s = 0;
        for (size_t i = 0; i < n->nfields; i++) s += min_size(n->fields[i].type, depth + 1);
        return s;
    }
    }
    return 0;
}

static cf_code skim(skim_ctx *k, const anode *n, int depth) {
    if (depth > 500) return skim_fail(k, "nesting deeper than 500 levels");
    int64_t x;
    cf_code rc;
    switch (n->type) {
    case AT_NULL: return CF_OK;
    case AT_BOOLEAN:
        if (k->p >= k->end) return skim_fail(k, "truncated boolean");
        if (*k->p > 1) return skim_fail(k, "boolean byte is neither 0 nor 1");
        k->p++;
        return CF_OK;
    case AT_INT:
        if ((rc = skim_long(k, &x))) return rc;
        if (x < INT32_MIN || x > INT32_MAX) return skim_fail(k, "int out of 32-bit range");
        return CF_OK;
    case AT_LONG: return skim_long(k, &x);
    case AT_FLOAT:
    case AT_DOUBLE: {
        size_t w = n->type == AT_FLOAT ? 4 : 8;
        if ((size_t)(k->end - k->p) < w) return skim_fail(k, "truncated floating point number");
        k->p += w;
        return CF_OK;
    }
    case AT_BYTES:
    case AT_STRING: return skim_bytes(k);
    case AT_FIXED:
        if ((size_t)(k->end - k->p) < n->fixed_size) return skim_fail(k, "truncated fixed");
        k->p += n->fixed_size;
        return CF_OK;
    case AT_ENUM:
        if ((rc = skim_long(k, &x))) return rc;
        if (x < 0 || (uint64_t)x >= n->nsym) return skim_fail(k, "enum index out of range");
        return CF_OK;
    case AT_UNION:
        if ((rc = skim_long(k, &x))) return rc;
        if (x < 0 || (uint64_t)x >= n->nbr) return skim_fail(k, "union branch index out of range");
        return skim(k, n->br[x], depth + 1);
    case AT_RECORD:
        for (size_t i = 0; i < n->nfields; i++) {
            rc = skim(k, n->fields[i].type, depth + 1);
            if (rc) {
                cf_err_where_prefix(k->err, n->fields[i].name);
                return rc;
            }
        }
        return CF_OK;
    case AT_ARRAY:
    case AT_MAP: {
        size_t msz = min_size(n->items, 0) + (n->type == AT_MAP ? 1 : 0);
        uint64_t total = 0;
        for (;;) {
            int64_t cnt;
            if ((rc = skim_long(k, &cnt))) return rc;
            if (cnt == 0) break;
            if (cnt < 0) {
                if (cnt == INT64_MIN) return skim_fail(k, "invalid block count");
                cnt = -cnt;
                int64_t bytes;
                if ((rc = skim_long(k, &bytes))) return rc;
                if (bytes < 0) return skim_fail(k, "negative block size");
            }
            total += (uint64_t)cnt;
            /* Elements that take no bytes could make a tiny input expand without bound. */
            if (msz == 0 ? total > 100000 : (uint64_t)cnt > (uint64_t)(k->end - k->p) / msz)
                return skim_fail(k, "block count larger than the data can hold");
            for (int64_t i = 0; i < cnt; i++) {
                if (n->type == AT_MAP && (rc = skim_bytes(k))) return rc;
                rc = skim(k, n->items, depth + 1);
                if (rc) {
                    char idx[32];
                    snprintf(idx, sizeof idx, "[%lld]", (long long)(total - (uint64_t)cnt + (uint64_t)i));
                    cf_err_where_prefix(k->err, idx);
                    return rc;
                }
            }
        }
        return CF_OK;
    }
    }
    return CF_OK;
}

/* ---------------- decode ---------------- */

static cf_code dec(const cf_schema *s, const anode *n, avro_value_t *av, cf_value **out, cf_err *err) {
    *out = NULL;
    switch (n->type) {
    case AT_NULL: return CF_OK;
    case AT_UNION: {
        int d;
        avro_value_t br;
        if (avro_value_get_discriminant(av, &d) || avro_value_get_current_branch(av, &br))
            return avro_fail(err, "read a union");
        const anode *b = n->br[d];
        if (b->type == AT_NULL) return CF_OK;
        if (is_optional_union(n)) return dec(s, b, &br, out, err);
        const cf_field *f = cf_schema_field(s, union_member_name(b));
        if (!f) return cf_err_set(err, CF_ERR_INTERNAL, "union member %s not in its Connect schema", union_member_name(b));
        cf_value *fv = NULL;
        cf_code rc = dec(f->schema, b, &br, &fv, err);
        if (rc) return rc;
        cf_value *st = cf_value_struct(cf_schema_ref((cf_schema *)s));
        cf_value_struct_set_index(st, f->index, fv);
        *out = st;
        return CF_OK;
    }
    case AT_BOOLEAN: {
        int b;
        if (avro_value_get_boolean(av, &b)) return avro_fail(err, "read a boolean");
        *out = cf_value_bool(b != 0);
        return CF_OK;
    }
    case AT_INT: {
        int32_t x;
        if (avro_value_get_int(av, &x)) return avro_fail(err, "read an int");
        if (s->type == CF_INT8 && (x < INT8_MIN || x > INT8_MAX)) {
            cf_err_set(err, CF_ERR_SCHEMA, "int value %d out of range for int8", x);
            return CF_ERR_SCHEMA;
        }
        if (s->type == CF_INT16 && (x < INT16_MIN || x > INT16_MAX)) {
            cf_err_set(err, CF_ERR_SCHEMA, "int value %d out of range for int16", x);
            return CF_ERR_SCHEMA;
        }
        cf_value *v = cf_value_int32(x);
        v->type = s->type;
        *out = v;
        return CF_OK;
    }
    case AT_LONG: {
        int64_t x;
        if (avro_value_get_long(av, &x)) return avro_fail(err, "read a long");
        *out = cf_value_int64(x);
        return CF_OK;
    }
    case AT_FLOAT: {
        float x;
        if (avro_value_get_float(av, &x)) return avro_fail(err, "read a float");
        *out = cf_value_float32(x);
        return CF_OK;
    }
    case AT_DOUBLE: {
        double x;
        if (avro_value_get_double(av, &x)) return avro_fail(err, "read a double");
        *out = cf_value_float64(x);
        return CF_OK;
    }
    case AT_STRING: {
        const char *p;
        size_t sz;
        if (avro_value_get_string(av, &p, &sz)) return avro_fail(err, "read a string");
        *out = cf_value_string_n(p, sz ? sz - 1 : 0);
        return CF_OK;
    }
    case AT_BYTES: {
        const void *p;
        size_t sz;
        if (avro_value_get_bytes(av, &p, &sz)) return avro_fail(err, "read bytes");
        *out = cf_value_bytes(p, sz);
        return CF_OK;
    }
    case AT_FIXED: {
        const void *p;
        size_t sz;
        if (avro_value_get_fixed(av, &p, &sz)) return avro_fail(err, "read a fixed");
        *out = cf_value_bytes(p, sz);
        return CF_OK;
    }
    case AT_ENUM: {
        int i;
        if (avro_value_get_enum(av, &i)) return avro_fail(err, "read an enum");
        if (i < 0 || (size_t)i >= n->nsym) return cf_err_set(err, CF_ERR_CORRUPT, "enum index %d out of range", i);
        *out = cf_value_string(n->symbols[i]);
        return CF_OK;
    }
    case AT_RECORD: {
        cf_value *st = cf_value_struct(cf_schema_ref((cf_schema *)s));
        for (size_t i = 0; i < n->nfields; i++) {
            avro_value_t fav;
            if (avro_value_get_by_index(av, i, &fav, NULL)) {
                cf_value_destroy(st);
                return avro_fail(err, "reach a record field");
            }
            cf_value *fv = NULL;
            cf_code rc = dec(s->fields[i].schema, n->fields[i].type, &fav, &fv, err);
            if (rc) {
                cf_err_where_prefix(err, n->fields[i].name);
                cf_value_destroy(st);
                return rc;
            }
            cf_value_struct_set_index(st, i, fv);
        }
        *out = st;
        return CF_OK;
    }
    case AT_ARRAY: {
        size_t cnt;
        if (avro_value_get_size(av, &cnt)) return avro_fail(err, "read an array");
        if (s->type == CF_MAP) {
            const anode *e = n->items;
            size_t ki = strcmp(e->fields[0].name, "key") == 0 ? 0 : 1;
            cf_value *m = cf_value_map();
            for (size_t i = 0; i < cnt; i++) {
                avro_value_t ent, kav, vav;
                if (avro_value_get_by_index(av, i, &ent, NULL) || avro_value_get_by_index(&ent, ki, &kav, NULL) ||
                    avro_value_get_by_index(&ent, 1 - ki, &vav, NULL)) {
                    cf_value_destroy(m);
                    return avro_fail(err, "read a map entry");
                }
                cf_value *kv = NULL, *vv = NULL;
                cf_code rc = dec(s->key_schema, e->fields[ki].type, &kav, &kv, err);
                if (!rc) rc = dec(s->value_schema, e->fields[1 - ki].type, &vav, &vv, err);
                if (rc) {
                    cf_value_destroy(kv);
                    cf_value_destroy(m);
                    return rc;
                }
                cf_value_map_put(m, kv, vv);
            }
            *out = m;
            return CF_OK;
        }
        cf_value *arr = cf_value_array();
        for (size_t i = 0; i < cnt; i++) {
            avro_value_t el;
            cf_value *ev = NULL;
            if (avro_value_get_by_index(av, i, &el, NULL)) {
                cf_value_destroy(arr);
                return avro_fail(err, "read an array element");
            }
            cf_code rc = dec(s->value_schema, n->items, &el, &ev, err);
            if (rc) {
                cf_value_destroy(arr);
                return rc;
            }
            cf_value_array_push(arr, ev);
        }
        *out = arr;
        return CF_OK;
    }
    case AT_MAP: {
        size_t cnt;
        if (avro_value_get_size(av, &cnt)) return avro_fail(err, "read a map");
        cf_value *m = cf_value_map();
        for (size_t i = 0; i < cnt; i++) {
            avro_value_t el;
            const char *key;
            cf_value *ev = NULL;
            if (avro_value_get_by_index(av, i, &el, &key)) {
                cf_value_destroy(m);
                return avro_fail(err, "read a map entry");
            }
            cf_code rc = dec(s->value_schema, n->items, &el, &ev, err);
            if (rc) {
                cf_value_destroy(m);
                return rc;
            }
            cf_value_map_put(m, cf_value_string(key), ev);
        }
        *out = m;
        return CF_OK;
    }
    }
    return CF_OK;
}

cf_code cf_avro_codec_decode(cf_avro_codec *c, const void *data, size_t len, cf_value **out, cf_err *err) {
    size_t used;
    return cf_avro_codec_decode_next(c, data, len, false, &used, out, err);
}

/* Also the body of cf_avro_codec_decode: the skim finds where the value ends, so consecutive
 * values (an Avro container block) are decoded one by one without framing of their own. */
cf_code cf_avro_codec_decode_next(cf_avro_codec *c, const void *data, size_t len, bool allow_trailing, size_t *used,
                                  cf_value **out, cf_err *err) {
    *out = NULL;
    *used = 0;
    skim_ctx k = {.base = data, .p = data, .end = (const uint8_t *)data + len, .err = err};
    cf_code rc = skim(&k, c->root, 0);
    if (rc == CF_OK && k.p != k.end && !allow_trailing) {
        rc = skim_fail(&k, "trailing bytes after the value");
    }
    if (rc) return rc;
    len = (size_t)(k.p - k.base);
    *used = len;
    avro_value_reset(&c->value);
    avro_reader_t r = avro_reader_memory(data, (int64_t)len);
    int arc = avro_value_read(r, &c->value);
    avro_reader_free(r);
    if (arc) {
        cf_err_set(err, CF_ERR_CORRUPT, "damaged Avro data");
        cf_err_detail(err, "avro-c: %s", avro_strerror());
        return CF_ERR_CORRUPT;
    }
    return dec(c->schema, c->root, &c->value, out, err);
}
