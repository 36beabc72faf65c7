/*
 * cast.c - org.apache.kafka.connect.transforms.Cast$Key and $Value: cast
 * fields (spec=field:type,...) or the whole key/value (spec=type) to int8,
 * int16, int32, int64, float32, float64, boolean or string, e.g. a CSV
 * column read as a string into the int64 a table wants.
 *
 * As Kafka (Cast.java), to the digit:
 *   - input types: the integers, floats, boolean, string and bytes (bytes
 *     only to string, base64); arrays, maps and structs are refused ("Cast
 *     transformation does not support casting from ARRAY; ...");
 *   - numbers narrow as Java's Number.byteValue/shortValue/intValue/
 *     longValue do (two's complement wrap; a float first saturates to int),
 *     a boolean is 1/0, a number is true when its long value is not 0;
 *   - strings parse as Byte.parseByte & co. (a bad or out-of-range text is
 *     "Value (x) was out of range for requested data type"), Float.parseFloat,
 *     Boolean.parseBoolean ("true" in any case, everything else false);
 *   - to string: Integer/Long.toString, Float/Double.toString, "true"/
 *     "false", BigDecimal.toString for a Decimal, base64 for bytes, and for
 *     Date/Time/Timestamp Connect's Values.dateFormatFor in UTC (before
 *     1970-01-02: HH:mm:ss.SSS'Z', at a midnight: yyyy-MM-dd, else
 *     yyyy-MM-dd'T'HH:mm:ss.SSS'Z'); to a number a logical value is its
 *     physical one (days, ms of day, ms), a Decimal its BigDecimal value;
 *   - a cast field keeps its optionality, its default is cast too; the other
 *     fields are unchanged; a null key/value passes; a null field stays null
 *     (replace.null.with.default=true first takes its default).
 * One difference: a whole-value cast keeps the schema's name, version, doc
 * and parameters (as Java's copySchemaBasics) except a Connect logical
 * name (Decimal, Date, Time, Timestamp), which no longer describes the cast
 * value (Java keeps it and makes a schema its own validation refuses).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/text.h"
#include "cdcflow/transforms.h"
#include "xf_util.h"

#define PURPOSE "cast types"
#define MS_PER_DAY 86400000LL

typedef struct cast_spec {
    char *field; /* NULL: the whole value */
    cf_type type;
} cast_spec;

typedef struct cst {
    bool is_key, replace_null;
    cast_spec *specs;
    size_t n;
    bool whole;
    xf_cache cache;
} cst;

static const char *upper_type(cf_type t) {
    static const char *const names[] = {"INT8",    "INT16", "INT32",  "INT64", "FLOAT32", "FLOAT64",
                                        "BOOLEAN", "STRING", "BYTES", "ARRAY", "MAP",     "STRUCT"};
    return names[t];
}

/* Parse the spec; with out NULL only check it. Java's String.split(":")
 * drops trailing empty strings ("a:" is one part). */
static cf_code parse_spec(const char *value, cast_spec **out, size_t *n_out, cf_err *err) {
    cast_spec *specs = NULL;
    size_t n = 0;
    bool whole = false;
    cf_code rc = CF_OK;
    const char *p = value ? value : "";
    size_t items = 0;
    while (*p && !rc) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p, *e = p + len;
        p = comma ? comma + 1 : p + len;
        while (s < e && isspace((unsigned char)*s)) s++;
        while (e > s && isspace((unsigned char)e[-1])) e--;
        if (s == e) continue;
        items++;
        /* parts */
        const char *c1 = memchr(s, ':', (size_t)(e - s));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(e - c1 - 1)) : NULL;
        const char *type_s, *type_e;
        char *field = NULL;
        bool has_field = c1 && c1 + 1 < e; /* "a:" is the whole-value cast "a" */
        if (c2) {
            const char *rest = c2;
            while (rest < e && *rest == ':') rest++;
            if (rest < e) {
                rc = cf_err_set(err, CF_ERR_CONFIG, "Invalid value %s for configuration spec: Invalid cast mapping: %.*s",
                                value, (int)(e - s), s);
                cf_err_hint(err, "Use a list of colon-delimited pairs, e.g. foo:int32,bar:string, or one type for the "
                                 "whole value.");
                break;
            }
            e = c2; /* trailing colons only: dropped as Java's split does */
        }
        if (has_field) {
            const char *fs = s, *fe = c1;
            while (fe > fs && isspace((unsigned char)fe[-1])) fe--;
            field = cf_xstrndup(fs, (size_t)(fe - fs));
            type_s = c1 + 1, type_e = e;
        } else {
            type_s = s, type_e = c1 ? c1 : e;
        }
        while (type_s < type_e && isspace((unsigned char)*type_s)) type_s++;
        while (type_e > type_s && isspace((unsigned char)type_e[-1])) type_e--;
        char tn[32];
        size_t tl = (size_t)(type_e - type_s);
        cf_type t = CF_INT8;
        bool ok = tl < sizeof tn;
        if (ok) { /* Schema.Type.valueOf(upper case) */
            memcpy(tn, type_s, tl);
            tn[tl] = 0;
            ok = false;
            for (int k = 0; k < CF_TYPE_COUNT && !ok; k++)
                if (strcasecmp(tn, upper_type((cf_type)k)) == 0) t = (cf_type)k, ok = true;
        }
        if (!ok) {
            rc = cf_err_set(err, CF_ERR_CONFIG, "Invalid type found in casting spec: %.*s", (int)tl, type_s);
            cf_err_hint(err, "Valid types: int8, int16, int32, int64, float32, float64, boolean, string.");
        } else if (t == CF_BYTES || t == CF_ARRAY || t == CF_MAP || t == CF_STRUCT) {
            rc = cf_err_set(err, CF_ERR_CONFIG, "Cast transformation does not support casting to %s; supported types "
                                                "are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]",
                            upper_type(t));
        }
        if (rc) {
            free(field);
            break;
        }
        if (!field) whole = true;
        if (out) {
            specs = cf_xrealloc(specs, (n + 1) * sizeof *specs);
            specs[n].field = field;
            specs[n].type = t;
            n++;
        } else {
            free(field);
        }
    }
    if (!rc && items == 0) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "Must specify at least one field to cast.");
    } else if (!rc && whole && items > 1) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "Cast transformations that specify a type to cast the entire value to may "
                                            "only specify a single cast in their spec");
    }
    if (rc) {
        for (size_t i = 0; i < n; i++) free(specs[i].field);
        free(specs);
        if (err) cf_err_where(err, "spec");
        return rc;
    }
    if (out) {
        *out = specs;
        *n_out = n;
    }
    return CF_OK;
}

static cf_code spec_validator(const char *key, const char *value, cf_err *err) {
    (void)key;
    return parse_spec(value, NULL, NULL, err);
}

static const cf_cfg_def cst_defs[] = {
    {.name = "spec", .type = CF_CFG_LIST, .default_value = CF_CFG_REQUIRED, .validator = spec_validator,
     .importance = CF_IMPORTANCE_HIGH, .group = "Cast",
     .doc = "List of fields and the type to cast them to of the form field1:type,field2:type to cast fields of Maps "
            "or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, int64, float32, "
            "float64, boolean, and string. Note that binary fields can only be cast to string."},
    XF_REPLACE_NULL_DEF("Cast"),
    {.name = NULL},
};

const cf_cfg_table cf_cast_table = {
    .name = "Cast",
    .title = "Cast (`org.apache.kafka.connect.transforms.Cast$Key`, `$Value`)",
    .intro = "Cast fields or the entire key or value to a specific type, e.g. to force an integer field to a smaller "
             "width. Cast from integers, floats, boolean and string to any other type, and cast binary to string "
             "(base64 encoded). Dates and times cast to string in Connect's ISO-8601 forms (UTC), Decimals as "
             "BigDecimal.toString.",
    .defs = cst_defs,
};

static void cst_destroy(void *state) {
    cst *t = state;
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) free(t->specs[i].field);
    free(t->specs);
    xf_cache_clear(&t->cache);
    free(t);
}

static cf_code cst_create(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    cst *t = cf_xcalloc(1, sizeof *t);
    t->is_key = is_key;
    t->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    cf_code rc = parse_spec(cf_config_string(cfg, "spec"), &t->specs, &t->n, err);
    if (rc) {
        free(t);
        return rc;
    }
    t->whole = t->n == 1 && !t->specs[0].field;
    *state = t;
    return CF_OK;
}
static cf_code cst_create_key(const cf_config *cfg, void **state, cf_err *err) {
    return cst_create(cfg, true, state, err);
}
static cf_code cst_create_value(const cf_config *cfg, void **state, cf_err *err) {
    return cst_create(cfg, false, state, err);
}

/* ---------------------------------------------------------------- one value */

static bool is_logical_time(const cf_schema *s) {
    return s && (cf_schema_is_logical(s, CF_LOGICAL_DATE) || cf_schema_is_logical(s, CF_LOGICAL_TIME) ||
                 cf_schema_is_logical(s, CF_LOGICAL_TIMESTAMP));
}

static cf_code out_of_range(const char *text, cf_err *err) {
    cf_err_set(err, CF_ERR_SCHEMA, "Value (%s) was out of range for requested data type", text);
    return CF_ERR_SCHEMA;
}

/* Byte/Short/Integer/Long.parseX: [+-]digits, nothing else. */
static cf_code parse_java_int(const char *s, int64_t lo, int64_t hi, int64_t *out, cf_err *err) {
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!*p) return out_of_range(s, err);
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9') return out_of_range(s, err);
    errno = 0;
    long long x = strtoll(s, NULL, 10);
    if (errno || x < lo || x > hi) return out_of_range(s, err);
    *out = x;
    return CF_OK;
}

/* Float/Double.parseX: trimmed, "NaN", "[+-]Infinity", decimal or hex
 * floating literals with an optional f/F/d/D suffix. */
static cf_code parse_java_float(const char *s, bool single, double *out, cf_err *err) {
    size_t n = strlen(s);
    const char *b = s, *e = s + n;
    while (b < e && (unsigned char)*b <= ' ') b++;
    while (e > b && (unsigned char)e[-1] <= ' ') e--;
    char *t = cf_xstrndup(b, (size_t)(e - b));
    size_t tl = strlen(t);
    cf_code rc = CF_OK;
    const char *body = t + (t[0] == '+' || t[0] == '-');
    if (strcmp(body, "NaN") == 0) {
        *out = NAN;
    } else if (strcmp(body, "Infinity") == 0) {
        *out = t[0] == '-' ? -INFINITY : INFINITY;
    } else {
        if (tl > 1 && strchr("fFdD", t[tl - 1]) && !(tl > 2 && (t[1] == 'x' || t[1] == 'X' || t[2] == 'x' || t[2] == 'X')))
            t[--tl] = 0;
        bool bad = tl == 0 || strpbrk(t, "nNiI") != NULL; /* C's nan/inf spellings are not Java's */
        char *end = NULL;
        errno = 0;
        double d = bad ? 0 : single ? (double)strtof(t, &end) : strtod(t, &end);
        if (bad || !end || *end) rc = out_of_range(s, err);
        else *out = d;
    }
    free(t);
    return rc;
}

/* Values.dateFormatFor(date).format(date), in UTC. */
static void date_text(int64_t ms, cf_buf *b) {
    static const char *const patterns[] = {"HH:mm:ss.SSS'Z'", "yyyy-MM-dd", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"};
    int which = ms < MS_PER_DAY ? 0 : ms % MS_PER_DAY == 0 ? 1 : 2;
    xf_datefmt *f = NULL;
    if (xf_datefmt_new(patterns[which], "Cast", &f, NULL) != CF_OK) return;
    xf_datefmt_format(f, ms, b);
    xf_datefmt_destroy(f);
}

/* A Decimal's BigDecimal: the integer part modulo 2^64 (longValue; intValue
 * and the narrower ones are its low bits) and the nearest double. */
static void decimal_number(const cf_value *v, int32_t scale, uint64_t *low64, double *d, cf_buf *text) {
    char *digits = cf_decimal_to_string((const uint8_t *)v->u.s.ptr, v->u.s.len, 0);
    bool neg = digits[0] == '-';
    const char *dg = digits + neg;
    size_t nd = strlen(dg);
    uint64_t acc = 0;
    size_t int_digits = scale >= 0 ? (nd > (size_t)scale ? nd - (size_t)scale : 0) : nd;
    for (size_t i = 0; i < int_digits; i++) acc = acc * 10 + (uint64_t)(dg[i] - '0');
    for (int64_t i = 0; scale < 0 && i < -(int64_t)scale && i < 64; i++) acc *= 10; /* 10^64 = 0 mod 2^64 */
    if (scale < -64 && acc) acc = 0;
    *low64 = neg ? (uint64_t)0 - acc : acc;
    cf_buf num = CF_BUF_INIT;
    cf_buf_printf(&num, "%se%" PRId32, digits, -scale);
    *d = strtod(num.data, NULL);
    cf_buf_free(&num);
    if (text) cf_java_bigdecimal_text(text, digits, scale);
    free(digits);
}

/* castValueToType: v (not NULL) with schema s (NULL without one) as `to`. */
static cf_code cast_value(const cf_schema *s, const cf_value *v, cf_type to, cf_value **out, cf_err *err) {
    *out = NULL;
    cf_type from = s ? s->type : v->type;
    if (from == CF_ARRAY || from == CF_MAP || from == CF_STRUCT) {
        cf_err_set(err, CF_ERR_SCHEMA, "Cast transformation does not support casting from %s; supported types are "
                                       "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]",
                   upper_type(from));
        return CF_ERR_SCHEMA;
    }
    if (v->type != from) { /* a value that does not match its schema */
        cf_err_set(err, CF_ERR_SCHEMA, "Cast: a %s value with a %s schema", cf_type_name(v->type), cf_type_name(from));
        return CF_ERR_SCHEMA;
    }
    int32_t scale;
    bool is_decimal = s && cf_schema_decimal_scale(s, &scale) && v->type == CF_BYTES;
    /* the number Java's Number methods see: integer x, or double d */
    bool is_int = false, is_float = false;
    int64_t x = 0;
    double d = 0;
    cf_buf text = CF_BUF_INIT;
    cf_code rc = CF_OK;
    if (to == CF_STRING) {
        switch (v->type) {
        case CF_INT8: case CF_INT16: case CF_INT32: case CF_INT64:
            if (is_logical_time(s)) {
                int64_t ms = v->u.i;
                if (cf_schema_is_logical(s, CF_LOGICAL_DATE)) ms = v->u.i * MS_PER_DAY;
                date_text(ms, &text);
            } else {
                cf_buf_printf(&text, "%" PRId64, v->u.i);
            }
            break;
        case CF_FLOAT32: cf_java_float_text(&text, (float)v->u.f); break;
        case CF_FLOAT64: cf_java_double_text(&text, v->u.f); break;
        case CF_BOOLEAN: cf_buf_append_str(&text, v->u.b ? "true" : "false"); break;
        case CF_STRING: cf_buf_append(&text, v->u.s.ptr, v->u.s.len); break;
        case CF_BYTES:
            if (is_decimal) {
                uint64_t lo;
                decimal_number(v, scale, &lo, &d, &text);
            } else {
                cf_base64_encode(&text, (const uint8_t *)v->u.s.ptr, v->u.s.len);
            }
            break;
        default: break;
        }
        *out = cf_value_string_n(text.data ? text.data : "", text.len);
        cf_buf_free(&text);
        return CF_OK;
    }
    switch (v->type) {
    case CF_INT8: case CF_INT16: case CF_INT32: case CF_INT64: is_int = true, x = v->u.i; break;
    case CF_FLOAT32: case CF_FLOAT64: is_float = true, d = v->u.f; break;
    case CF_BOOLEAN: is_int = true, x = v->u.b; break;
    case CF_BYTES:
        if (!is_decimal) {
            cf_err_set(err, CF_ERR_SCHEMA, "Unexpected type in Cast transformation: byte[]");
            cf_err_hint(err, "Bytes can only be cast to string (base64).");
            return CF_ERR_SCHEMA;
        }
        {
            uint64_t lo;
            decimal_number(v, scale, &lo, &d, NULL);
            if (to == CF_FLOAT32 || to == CF_FLOAT64) is_float = true;
            else is_int = true, x = (int64_t)lo;
        }
        break;
    case CF_STRING: {
        const char *str = v->u.s.ptr;
        switch (to) {
        case CF_INT8: rc = parse_java_int(str, INT8_MIN, INT8_MAX, &x, err), is_int = true; break;
        case CF_INT16: rc = parse_java_int(str, INT16_MIN, INT16_MAX, &x, err), is_int = true; break;
        case CF_INT32: rc = parse_java_int(str, INT32_MIN, INT32_MAX, &x, err), is_int = true; break;
        case CF_INT64: rc = parse_java_int(str, INT64_MIN, INT64_MAX, &x, err), is_int = true; break;
        case CF_FLOAT32: rc = parse_java_float(str, true, &d, err), is_float = true; break;
        case CF_FLOAT64: rc = parse_java_float(str, false, &d, err), is_float = true; break;
        default: is_int = true, x = strcasecmp(str, "true") == 0; break; /* Boolean.parseBoolean */
        }
        if (rc) return rc;
        break;
    }
    default: break;
    }
    (void)is_int;
    switch (to) {
    case CF_INT8: *out = cf_value_int8((int8_t)(is_float ? xf_java_d2i(d) : x)); break;
    case CF_INT16: *out = cf_value_int16((int16_t)(is_float ? xf_java_d2i(d) : x)); break;
    case CF_INT32: *out = cf_value_int32((int32_t)(is_float ? xf_java_d2i(d) : x)); break;
    case CF_INT64: *out = cf_value_int64(is_float ? xf_java_d2l(d) : x); break;
    case CF_FLOAT32: *out = cf_value_float32(is_float ? (float)d : (float)x); break;
    case CF_FLOAT64: *out = cf_value_float64(is_float ? d : (double)x); break;
    case CF_BOOLEAN: *out = cf_value_bool((is_float ? xf_java_d2l(d) : x) != 0); break;
    default: break;
    }
    /* a decimal cast to a float is its nearest value, not its integer part */
    if (is_decimal && (to == CF_FLOAT32 || to == CF_FLOAT64)) {
        cf_value_destroy(*out);
        *out = to == CF_FLOAT32 ? cf_value_float32((float)d) : cf_value_float64(d);
    }
    return CF_OK;
}

/* ---------------------------------------------------------------- schemas */

static bool logical_name(const char *n) {
    return n && (strcmp(n, CF_LOGICAL_DECIMAL) == 0 || strcmp(n, CF_LOGICAL_DATE) == 0 ||
                 strcmp(n, CF_LOGICAL_TIME) == 0 || strcmp(n, CF_LOGICAL_TIMESTAMP) == 0);
}

/* The schema of a cast value: type `to`, optional and default as s's. */
static cf_code cast_schema(const cf_schema *s, cf_type to, bool basics, cf_schema **out, cf_err *err) {
    cf_schema *ns = cf_schema_new(to);
    if (basics && !logical_name(s->name)) {
        if (s->name) cf_schema_set_name(ns, s->name);
        for (size_t i = 0; i < s->n_params; i++) cf_schema_set_param(ns, s->params[i].key, s->params[i].value);
    }
    if (basics) {
        if (s->has_version) cf_schema_set_version(ns, s->version);
        if (s->doc) cf_schema_set_doc(ns, s->doc);
    }
    ns->optional = s->optional;
    if (s->has_default && s->default_value) {
        cf_value *dv = NULL;
        cf_code rc = cast_value(s, s->default_value, to, &dv, err);
        if (!rc) rc = cf_schema_set_default(ns, dv, err);
        if (rc) {
            cf_schema_unref(ns);
            return rc;
        }
    }
    *out = ns;
    return CF_OK;
}

static const cast_spec *spec_for(const cst *t, const char *field) {
    for (size_t i = t->n; i-- > 0;) /* HashMap.put: the last spec of a field wins */
        if (t->specs[i].field && strcmp(t->specs[i].field, field) == 0) return &t->specs[i];
    return NULL;
}

static cf_code updated_schema(cst *t, const cf_schema *vs, cf_schema **out, cf_err *err) {
    cf_schema *ns = xf_cache_get(&t->cache, vs, 0);
    if (ns) {
        *out = ns;
        return CF_OK;
    }
    cf_code rc;
    if (t->whole) {
        if ((rc = cast_schema(vs, t->specs[0].type, true, &ns, err))) return rc;
    } else {
        ns = xf_struct_basics(vs);
        ns->optional = vs->optional;
        for (size_t i = 0; i < vs->n_fields; i++) {
            const cf_field *f = &vs->fields[i];
            const cast_spec *sp = spec_for(t, f->name);
            cf_schema *fs = NULL;
            if (!sp) {
                fs = cf_schema_ref(f->schema);
            } else if ((rc = cast_schema(f->schema, sp->type, false, &fs, err))) {
                cf_err_where(err, "%s", f->name);
                cf_schema_unref(ns);
                return rc;
            }
            cf_schema_add_field(ns, f->name, fs, NULL);
        }
        /* a struct default would need each field cast: Java casts the whole
         * Struct and fails; keep none rather than a wrong one */
    }
    xf_cache_put(&t->cache, vs, 0, ns);
    *out = ns;
    return CF_OK;
}

/* ---------------------------------------------------------------- apply */

static cf_code cst_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    cst *t = state;
    *out = NULL;
    cf_value *value = xf_op_value(rec, t->is_key);
    if (!value) {
        *out = rec;
        return CF_OK;
    }
    cf_schema *schema = xf_op_schema(rec, t->is_key);
    cf_code rc;
    cf_value *nv = NULL;
    if (!schema) {
        if (t->whole) {
            if ((rc = cast_value(NULL, value, t->specs[0].type, &nv, err))) return rc;
        } else {
            if ((rc = xf_require_map(value, PURPOSE, err))) return rc;
            nv = cf_value_clone(value);
            for (size_t i = 0; i < t->n; i++) {
                const cf_value *fv = cf_value_map_get_str(value, t->specs[i].field);
                cf_value *cv = NULL;
                if (fv && (rc = cast_value(NULL, fv, t->specs[i].type, &cv, err))) {
                    cf_err_where(err, "%s", t->specs[i].field);
                    cf_value_destroy(nv);
                    return rc;
                }
                xf_map_put(nv, t->specs[i].field, cv);
            }
        }
        xf_op_set(rec, t->is_key, NULL, nv);
        *out = rec;
        return CF_OK;
    }
    if (!t->whole && (rc = xf_require_struct(value, PURPOSE, err))) return rc;
    const cf_schema *vs = t->whole ? schema : value->u.st.schema;
    cf_schema *ns = NULL;
    if ((rc = updated_schema(t, vs, &ns, err))) return rc;
    if (t->whole) {
        if ((rc = cast_value(schema, value, t->specs[0].type, &nv, err))) {
            cf_schema_unref(ns);
            return rc;
        }
    } else {
        nv = cf_value_struct(cf_schema_ref(ns));
        for (size_t i = 0; i < vs->n_fields; i++) {
            cf_value *orig = xf_get_clone(value, i, t->replace_null);
            const cast_spec *sp = spec_for(t, vs->fields[i].name);
            if (!sp || !orig) {
                nv->u.st.fields[i] = orig;
                continue;
            }
            rc = cast_value(vs->fields[i].schema, orig, sp->type, &nv->u.st.fields[i], err);
            cf_value_destroy(orig);
            if (rc) {
                cf_err_where(err, "%s", vs->fields[i].name);
                cf_value_destroy(nv);
                cf_schema_unref(ns);
                return rc;
            }
        }
    }
    xf_op_set(rec, t->is_key, ns, nv);
    *out = rec;
    return CF_OK;
}

XF_KEY_VALUE(cf_xf_cast, "Cast", &cf_cast_table, cst_create_key, cst_create_value, cst_apply, cst_destroy);
