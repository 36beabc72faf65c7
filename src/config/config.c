/*
 * config.c - typed configuration definitions and validation, the way Kafka's
 * ConfigDef does it (see include/cdcflow/config.h).
 *
 * Semantics taken from org.apache.kafka.common.config.ConfigDef, so that a
 * configuration accepted by Kafka Connect is accepted here and fails here for
 * the same reasons:
 *   - values are trimmed (String.trim) before parsing, for every type;
 *   - BOOLEAN is "true"/"false" in any case; INT/LONG are decimal integers
 *     with an optional sign (Integer.parseInt), out-of-range is "not a number";
 *   - LIST splits on commas with surrounding whitespace (\s*,\s*); we drop
 *     empty items as config.h documents;
 *   - a key without default is required ("Missing required configuration ...
 *     which has no default value") unless the definition is nullable;
 *   - ranges: "Value must be at least X" / "Value must be no more than Y";
 *   - enums: "String must be one of: a, b" (we compare case-insensitively,
 *     as CaseInsensitiveValidString does for errors.tolerance);
 *   - passwords print as "[hidden]" (Password.toString()).
 * Unlike Kafka Connect, which only logs "was supplied but isn't a known
 * config", an unknown key is an error here: a typo must not silently fall
 * back to a default. Keys under a table's pass-through prefixes are accepted.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/config.h"
#include "cdcflow/text.h"

typedef struct cfg_entry {
    const cf_cfg_def *def;
    char *text; /* trimmed value or default; NULL = null */
    int64_t l;
    double d;
    bool b;
    char **items;
    size_t n_items;
} cfg_entry;

struct cf_config {
    cf_props *props;
    cfg_entry *entries;
    size_t n;
    const cf_cfg_table **tables; /* the tables it was parsed with (static) */
    size_t n_tables;
};

const char *cf_cfg_type_name(cf_cfg_type t) {
    switch (t) {
    case CF_CFG_STRING: return "string";
    case CF_CFG_INT: return "int";
    case CF_CFG_LONG: return "long";
    case CF_CFG_DOUBLE: return "double";
    case CF_CFG_BOOLEAN: return "boolean";
    case CF_CFG_LIST: return "list";
    case CF_CFG_PASSWORD: return "password";
    case CF_CFG_CLASS: return "class";
    }
    return "unknown";
}

const char *cf_importance_name(cf_importance i) {
    switch (i) {
    case CF_IMPORTANCE_HIGH: return "high";
    case CF_IMPORTANCE_MEDIUM: return "medium";
    case CF_IMPORTANCE_LOW: return "low";
    }
    return "unknown";
}

/* Java's String.trim(): strips every char <= ' ' at both ends. */
static char *trim_dup(const char *s) {
    while (*s && (unsigned char)*s <= ' ') s++;
    size_t n = strlen(s);
    while (n > 0 && (unsigned char)s[n - 1] <= ' ') n--;
    return cf_xstrndup(s, n);
}

/* A PASSWORD value is never shown; credentials inside other values are
 * masked by cf_err itself (cf_mask_credentials). */
static const char *shown(const cf_cfg_def *def, const char *value) {
    return def->type == CF_CFG_PASSWORD ? CF_HIDDEN : value;
}

/* Integer.parseInt / Long.parseLong: [+-]?[0-9]+ within range. */
static bool parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!*p) return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q)) return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* Double.parseDouble accepts decimal and hex floats, NaN, Infinity and a
 * trailing type suffix (d/D/f/F); strtod covers all but the suffix. */
static bool parse_double(const char *s, double *out) {
    if (!*s) return false;
    size_t n = strlen(s);
    char *tmp = cf_xstrdup(s);
    if (n > 1 && strchr("dDfF", tmp[n - 1]) && (isdigit((unsigned char)tmp[n - 2]) || tmp[n - 2] == '.'))
        tmp[n - 1] = '\0';
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    bool ok = *end == '\0' && end != tmp;
    /* strtod takes "inf"/"nan"/"infinity" in any case; Java only takes
     * "NaN" and "Infinity" exactly. */
    if (ok && !isfinite(v)) {
        const char *w = tmp + (tmp[0] == '+' || tmp[0] == '-');
        ok = strcmp(w, "NaN") == 0 || strcmp(w, "Infinity") == 0;
    }
    free(tmp);
    if (ok) *out = v;
    return ok;
}

static void split_list(const char *trimmed, char ***items, size_t *n) {
    *items = NULL;
    *n = 0;
    size_t cap = 0;
    const char *p = trimmed;
    while (1) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char *raw = cf_xstrndup(p, len);
        char *item = trim_dup(raw);
        free(raw);
        if (*item) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 4;
                *items = cf_xrealloc(*items, cap * sizeof(char *));
            }
            (*items)[(*n)++] = item;
        } else {
            free(item);
        }
        if (!c) break;
        p = c + 1;
    }
}

static void free_items(char **items, size_t n) {
    for (size_t i = 0; i < n; i++) free(items[i]);
    free(items);
}

static bool in_enum(const char *const *valid, const char *v) {
    for (const char *const *e = valid; *e; e++)
        if (strcasecmp(*e, v) == 0) return true;
    return false;
}

static void join_enum(cf_buf *b, const char *const *valid) {
    for (const char *const *e = valid; *e; e++) {
        if (e != valid) cf_buf_append_str(b, ", ");
        cf_buf_append_str(b, *e);
    }
}

static void fmt_num(char *buf, size_t size, double v) {
    if (v >= 9223372036854775807.0)
        snprintf(buf, size, "9223372036854775807"); /* Long.MAX_VALUE */
    else if (v <= -9223372036854775808.0)
        snprintf(buf, size, "-9223372036854775808");
    else if (v == floor(v))
        snprintf(buf, size, "%lld", (long long)v);
    else
        snprintf(buf, size, "%g", v);
}

/* "what is allowed" for a definition, one line, for hints and problems. */
static void describe_allowed(const cf_cfg_def *def, cf_buf *b) {
    switch (def->type) {
    case CF_CFG_BOOLEAN: cf_buf_append_str(b, "true or false"); return;
    case CF_CFG_INT: cf_buf_append_str(b, "a 32-bit integer"); break;
    case CF_CFG_LONG: cf_buf_append_str(b, "a 64-bit integer"); break;
    case CF_CFG_DOUBLE: cf_buf_append_str(b, "a number"); break;
    case CF_CFG_LIST:
        cf_buf_append_str(b, "a comma-separated list");
        if (def->valid_values) {
            cf_buf_append_str(b, " of: ");
            join_enum(b, def->valid_values);
        }
        break;
    default:
        if (def->valid_values) {
            cf_buf_append_str(b, "one of (case insensitive): ");
            join_enum(b, def->valid_values);
        } else {
            cf_buf_append_str(b, def->type == CF_CFG_CLASS ? "a plugin or class name" : "a string");
        }
        break;
    }
    if (def->has_range) {
        char lo[64], hi[64];
        fmt_num(lo, sizeof lo, def->min);
        fmt_num(hi, sizeof hi, def->max);
        cf_buf_printf(b, " in [%s, %s]", lo, hi);
    }
}

static cf_code bad_value(cf_err *err, const cf_cfg_def *def, const char *value, const char *why) {
    cf_err_set(err, CF_ERR_CONFIG, "invalid value for configuration \"%s\"", def->name);
    cf_err_detail(err, "Invalid value %s for configuration %s: %s", shown(def, value), def->name, why);
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, "allowed: ");
    describe_allowed(def, &b);
    cf_err_hint(err, "%s", b.data);
    cf_buf_free(&b);
    cf_err_where(err, "%s", def->name);
    return CF_ERR_CONFIG;
}

/* Parse and check one value into e (e may be NULL: check only). value is the
 * raw text; NULL means null (allowed only when the definition permits). */
static cf_code check_into(const cf_cfg_def *def, const char *value, cfg_entry *e, cf_err *err) {
    if (!value) {
        if (e) e->text = NULL;
        return CF_OK;
    }
    char *t = trim_dup(value);
    cf_code rc = CF_OK;
    char why[256];
    int64_t l = 0;
    double d = 0;
    bool b = false;
    char **items = NULL;
    size_t n_items = 0;
    switch (def->type) {
    case CF_CFG_BOOLEAN:
        if (strcasecmp(t, "true") == 0)
            b = true;
        else if (strcasecmp(t, "false") == 0)
            b = false;
        else
            rc = bad_value(err, def, value, "Expected value to be either true or false");
        break;
    case CF_CFG_INT:
        if (!parse_int64(t, INT32_MIN, INT32_MAX, &l)) rc = bad_value(err, def, value, "Not a number of type INT");
        d = (double)l;
        break;
    case CF_CFG_LONG:
        if (!parse_int64(t, INT64_MIN, INT64_MAX, &l)) rc = bad_value(err, def, value, "Not a number of type LONG");
        d = (double)l;
        break;
    case CF_CFG_DOUBLE:
        if (!parse_double(t, &d)) rc = bad_value(err, def, value, "Not a number of type DOUBLE");
        break;
    case CF_CFG_LIST:
        split_list(t, &items, &n_items);
        if (def->valid_values)
            for (size_t i = 0; i < n_items && rc == CF_OK; i++)
                if (!in_enum(def->valid_values, items[i])) {
                    cf_buf m = CF_BUF_INIT;
                    cf_buf_printf(&m, "Invalid value %s; list items must be from: ", items[i]);
                    join_enum(&m, def->valid_values);
                    rc = bad_value(err, def, value, m.data);
                    cf_buf_free(&m);
                }
        break;
    case CF_CFG_STRING:
    case CF_CFG_PASSWORD:
    case CF_CFG_CLASS:
        if (def->type == CF_CFG_CLASS && !*t) rc = bad_value(err, def, value, "Class name must not be empty");
        if (rc == CF_OK && def->valid_values && !in_enum(def->valid_values, t)) {
            cf_buf m = CF_BUF_INIT;
            cf_buf_append_str(&m, "String must be one of (case insensitive): ");
            join_enum(&m, def->valid_values);
            rc = bad_value(err, def, value, m.data);
            cf_buf_free(&m);
        }
        break;
    }
    if (rc == CF_OK && def->has_range &&
        (def->type == CF_CFG_INT || def->type == CF_CFG_LONG || def->type == CF_CFG_DOUBLE)) {
        bool low = def->type == CF_CFG_DOUBLE ? d < def->min : (double)l < def->min;
        bool high = def->type == CF_CFG_DOUBLE ? d > def->max : (double)l > def->max;
        if (isnan(d) && def->type == CF_CFG_DOUBLE) low = true;
        char num[64];
        if (low) {
            fmt_num(num, sizeof num, def->min);
            snprintf(why, sizeof why, "Value must be at least %s", num);
            rc = bad_value(err, def, value, why);
        } else if (high) {
            fmt_num(num, sizeof num, def->max);
            snprintf(why, sizeof why, "Value must be no more than %s", num);
            rc = bad_value(err, def, value, why);
        }
    }
    if (rc == CF_OK && def->validator) {
        cf_err verr;
        cf_err_clear(&verr);
        rc = def->validator(def->name, t, &verr);
        if (rc != CF_OK) {
            if (err) {
                *err = verr;
                if (!err->message[0])
                    snprintf(err->message, sizeof err->message, "invalid value for configuration \"%s\"", def->name);
                if (!err->where[0]) cf_err_where(err, "%s", def->name);
                if (!err->hint[0]) {
                    cf_buf h = CF_BUF_INIT;
                    cf_buf_append_str(&h, "allowed: ");
                    describe_allowed(def, &h);
                    cf_err_hint(err, "%s", h.data);
                    cf_buf_free(&h);
                }
            }
            rc = CF_ERR_CONFIG;
        }
    }
    if (rc != CF_OK || !e) {
        free(t);
        free_items(items, n_items);
        return rc;
    }
    e->text = t;
    e->l = l;
    e->d = def->type == CF_CFG_INT || def->type == CF_CFG_LONG ? (double)l : d;
    e->b = b;
    e->items = items;
    e->n_items = n_items;
    return CF_OK;
}

cf_code cf_cfg_check_value(const cf_cfg_def *def, const char *value, cf_err *err) {
    return check_into(def, value, NULL, err);
}

const cf_cfg_def *cf_cfg_table_find(const cf_cfg_table *t, const char *key) {
    if (!t || !t->defs || !key) return NULL;
    for (const cf_cfg_def *d = t->defs; d->name; d++)
        if (strcmp(d->name, key) == 0) return d;
    return NULL;
}

cf_code cf_cfg_table_check(const cf_cfg_table *t, cf_err *err) {
    if (!t || !t->name || !t->defs)
        return cf_err_set(err, CF_ERR_INTERNAL, "configuration table without name or definitions");
    for (const cf_cfg_def *d = t->defs; d->name; d++) {
        if (!*d->name) return cf_err_set(err, CF_ERR_INTERNAL, "table \"%s\": a definition has an empty name", t->name);
        for (const cf_cfg_def *o = t->defs; o < d; o++)
            if (strcmp(o->name, d->name) == 0)
                return cf_err_set(err, CF_ERR_INTERNAL, "table \"%s\": \"%s\" defined twice", t->name, d->name);
        if (d->valid_values && d->type != CF_CFG_STRING && d->type != CF_CFG_CLASS && d->type != CF_CFG_LIST)
            return cf_err_set(err, CF_ERR_INTERNAL, "table \"%s\": \"%s\" has an enum but type %s", t->name, d->name,
                              cf_cfg_type_name(d->type));
        if (d->has_range && d->type != CF_CFG_INT && d->type != CF_CFG_LONG && d->type != CF_CFG_DOUBLE)
            return cf_err_set(err, CF_ERR_INTERNAL, "table \"%s\": \"%s\" has a range but type %s", t->name, d->name,
                              cf_cfg_type_name(d->type));
        if (d->has_range && d->min > d->max)
            return cf_err_set(err, CF_ERR_INTERNAL, "table \"%s\": \"%s\" has min > max", t->name, d->name);
        if (!d->doc || !*d->doc)
            return cf_err_set(err, CF_ERR_INTERNAL, "table \"%s\": \"%s\" has no documentation", t->name, d->name);
        if (d->default_value) {
            cf_err inner;
            if (cf_cfg_check_value(d, d->default_value, &inner) != CF_OK) {
                cf_err_set(err, CF_ERR_INTERNAL, "table \"%s\": the default of \"%s\" is invalid", t->name, d->name);
                cf_err_detail(err, "%s", inner.detail[0] ? inner.detail : inner.message);
                return CF_ERR_INTERNAL;
            }
        }
    }
    return CF_OK;
}

/* ---- unknown keys: "did you mean" ---- */

static const cf_cfg_def *find_def(const cf_cfg_table *const *tables, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++) {
        const cf_cfg_def *d = cf_cfg_table_find(tables[i], key);
        if (d) return d;
    }
    return NULL;
}

static bool passes_prefix(const cf_cfg_table *const *tables, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (tables[i] && tables[i]->prefixes)
            for (const char *const *p = tables[i]->prefixes; *p; p++)
                if (strncmp(key, *p, strlen(*p)) == 0) return true;
    return false;
}

/* Fills err (fixed-size, may truncate the list of allowed keys) and appends
 * the complete problem line to line. */
static void unknown_key(const cf_cfg_table *const *tables, size_t n, const char *key, const char *value,
                        cf_err *err, cf_buf *line) {
    const char *best = NULL;
    const cf_cfg_def *best_def = NULL;
    size_t best_d = (size_t)-1;
    cf_buf known = CF_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (!tables[i] || !tables[i]->defs) continue;
        for (const cf_cfg_def *d = tables[i]->defs; d->name; d++) {
            if (known.len) cf_buf_append_str(&known, ", ");
            cf_buf_append_str(&known, d->name);
            size_t dist = cf_edit_distance(key, d->name);
            if (dist < best_d) best_d = dist, best = d->name, best_def = d;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (tables[i] && tables[i]->prefixes)
            for (const char *const *p = tables[i]->prefixes; *p; p++) {
                if (known.len) cf_buf_append_str(&known, ", ");
                cf_buf_printf(&known, "%s*", *p);
            }
    cf_err_set(err, CF_ERR_CONFIG, "unknown configuration \"%s\"", key);
    /* The value of an unknown key might be a secret (a misspelt password
     * key), so it is hidden when the key looks like one or its closest
     * known key is a password. */
    bool close = best && cf_close_enough(key, best_d);
    cf_buf owners = CF_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        if (tables[i] && tables[i]->name && *tables[i]->name) {
            if (owners.len) cf_buf_append_str(&owners, ", ");
            cf_buf_append_str(&owners, tables[i]->name);
        }
    if (cf_config_key_is_secret(tables, n, key) || (close && best_def->type == CF_CFG_PASSWORD))
        cf_err_detail(err, "\"%s\" (value [hidden]) is not a setting of: %s", key, owners.len ? owners.data : "-");
    else
        cf_err_detail(err, "\"%s\" = \"%s\" is not a setting of: %s", key, value, owners.len ? owners.data : "-");
    cf_buf_free(&owners);
    if (close)
        cf_err_hint(err, "did you mean \"%s\"? allowed: %s", best, known.len ? known.data : "(none)");
    else
        cf_err_hint(err, "allowed: %s", known.len ? known.data : "(none)");
    cf_err_where(err, "%s", key);
    cf_buf_printf(line, "%s: %s; %s; ", key, err->message, err->detail);
    if (close) cf_buf_printf(line, "did you mean \"%s\"? ", best);
    cf_buf_printf(line, "allowed: %s\n", known.len ? known.data : "(none)");
    cf_buf_free(&known);
}

/* ---- parse ---- */

static void add_problem(cf_buf *pb, const cf_err *e) {
    /* "key: message; detail; allowed: ..." - one line */
    cf_buf_printf(pb, "%s: %s", e->where[0] ? e->where : "?", e->message);
    if (e->detail[0]) cf_buf_printf(pb, "; %s", e->detail);
    if (e->hint[0]) cf_buf_printf(pb, "; %s", e->hint);
    cf_buf_append_byte(pb, '\n');
}

void cf_config_destroy(cf_config *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->entries[i].text);
        free_items(c->entries[i].items, c->entries[i].n_items);
    }
    free(c->entries);
    free(c->tables);
    cf_props_destroy(c->props);
    free(c);
}

const cf_props *cf_config_props(const cf_config *c) { return c ? c->props : NULL; }

const cf_cfg_table *const *cf_config_tables_of(const cf_config *c, size_t *n) {
    *n = c ? c->n_tables : 0;
    return c ? c->tables : NULL;
}

cf_code cf_config_parse(const cf_cfg_table *const *tables, size_t n, const cf_props *props, cf_config **out,
                        char **problems, cf_err *err) {
    if (out) *out = NULL;
    if (problems) *problems = NULL;
    cf_config *c = cf_xcalloc(1, sizeof *c);
    c->props = props ? cf_props_clone(props) : cf_props_new();
    c->tables = cf_xcalloc(n ? n : 1, sizeof *c->tables);
    for (size_t i = 0; i < n; i++)
        if (tables[i]) c->tables[c->n_tables++] = tables[i];
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (tables[i] && tables[i]->defs)
            for (const cf_cfg_def *d = tables[i]->defs; d->name; d++) total++;
    c->entries = cf_xcalloc(total ? total : 1, sizeof(cfg_entry));
    cf_buf pb = CF_BUF_INIT;
    size_t n_problems = 0;
    cf_err first, e;
    cf_err_clear(&first);

#define PROBLEM()                                   \
    do {                                            \
        if (n_problems++ == 0) first = e;           \
        add_problem(&pb, &e);                       \
    } while (0)

    /* unknown keys first, in the user's order */
    for (size_t i = 0; i < cf_props_count(c->props); i++) {
        const char *k = cf_props_key_at(c->props, i);
        if (find_def(tables, n, k) || passes_prefix(tables, n, k)) continue;
        unknown_key(tables, n, k, cf_props_value_at(c->props, i), &e, &pb);
        if (n_problems++ == 0) first = e;
    }
    /* then every definition, in table order; the first table defining a
     * key wins (a connector's table may refine a common key) */
    for (size_t i = 0; i < n; i++) {
        if (!tables[i] || !tables[i]->defs) continue;
        for (const cf_cfg_def *d = tables[i]->defs; d->name; d++) {
            if (find_def(tables, n, d->name) != d) continue;
            cfg_entry *ent = &c->entries[c->n++];
            ent->def = d;
            const char *v = cf_props_get(c->props, d->name);
            if (!v) {
                if (!d->default_value) {
                    if (d->nullable) continue;
                    cf_err_set(&e, CF_ERR_CONFIG, "missing required configuration \"%s\" which has no default value",
                               d->name);
                    cf_err_detail(&e, "%s", d->doc ? d->doc : "");
                    cf_buf h = CF_BUF_INIT;
                    cf_buf_append_str(&h, "add it; allowed: ");
                    describe_allowed(d, &h);
                    cf_err_hint(&e, "%s", h.data);
                    cf_buf_free(&h);
                    cf_err_where(&e, "%s", d->name);
                    PROBLEM();
                    continue;
                }
                v = d->default_value;
            }
            if (check_into(d, v, ent, &e) != CF_OK) PROBLEM();
        }
    }
#undef PROBLEM
    if (n_problems) {
        if (err) {
            *err = first;
            if (n_problems > 1) {
                char more[64];
                snprintf(more, sizeof more, " (and %zu more problem%s)", n_problems - 1, n_problems > 2 ? "s" : "");
                size_t ml = strlen(err->message);
                if (ml + strlen(more) < sizeof err->message) memcpy(err->message + ml, more, strlen(more) + 1);
            }
        }
        if (problems)
            *problems = cf_buf_detach(&pb, NULL);
        else
            cf_buf_free(&pb);
        cf_config_destroy(c);
        return CF_ERR_CONFIG;
    }
    cf_buf_free(&pb);
    if (out)
        *out = c;
    else
        cf_config_destroy(c);
    return CF_OK;
}

/* ---- getters ---- */

static const cfg_entry *entry(const cf_config *c, const char *key, const char *getter) {
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(c->entries[i].def->name, key) == 0) return &c->entries[i];
    fprintf(stderr, "cdcflow: BUG: %s(\"%s\"): no table given to cf_config_parse defines this key\n", getter, key);
    abort();
}

const char *cf_config_string(const cf_config *c, const char *key) {
    return entry(c, key, "cf_config_string")->text;
}

int32_t cf_config_int(const cf_config *c, const char *key) {
    const cfg_entry *e = entry(c, key, "cf_config_int");
    return e->text ? (int32_t)e->l : 0;
}

int64_t cf_config_long(const cf_config *c, const char *key) {
    const cfg_entry *e = entry(c, key, "cf_config_long");
    return e->text ? e->l : 0;
}

double cf_config_double(const cf_config *c, const char *key) {
    const cfg_entry *e = entry(c, key, "cf_config_double");
    return e->text ? e->d : 0.0;
}

bool cf_config_bool(const cf_config *c, const char *key) {
    const cfg_entry *e = entry(c, key, "cf_config_bool");
    return e->text ? e->b : false;
}

const char *const *cf_config_list(const cf_config *c, const char *key, size_t *n) {
    const cfg_entry *e = entry(c, key, "cf_config_list");
    if (n) *n = e->n_items;
    return (const char *const *)e->items;
}
