/*
 * statements.c - the design's CQL-style management statements (CREATE/DROP
 * DATA_SINK, CREATE/DROP DATA_SOURCE; see cdcflow/sidecar.h): a pure parser
 * to a statement list, and their application to the service's state (the
 * named sinks and the data sources), which becomes the cassandra-cdc
 * connector's configuration through the same path as PUT
 * /api/v1/services/cdc/config (cf_sc_service_apply in rest.c).
 *
 * The parser is a hand-written tokenizer and recursive descent: every error
 * names the line and column of the token that broke the rule, the token as
 * written, and what the grammar expected there.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/sidecar.h"
#include "cdcflow/worker.h"
#include "sidecar_internal.h"

/* ------------------------------------------------------------------ */
/* Tokens                                                              */
/* ------------------------------------------------------------------ */

typedef enum tok_kind { T_END = 0, T_IDENT, T_QIDENT, T_STRING, T_NUMBER, T_PUNCT } tok_kind;

typedef struct tok {
    tok_kind k;
    const char *p; /* the token as written */
    size_t len;
    int line, col;
} tok;

typedef struct lexer {
    const char *s;
    size_t len, i;
    int line, col;
    tok t; /* the current token */
    const char *syntax; /* the hint: the syntax of what is being read */
    cf_sc_stmts *out;
    cf_err *err;
} lexer;

#define SYN_ANY                                                                                                   \
    "A statement is CREATE DATA_SINK, CREATE DATA_SOURCE, DROP DATA_SOURCE or DROP DATA_SINK; statements are "   \
    "separated by ';'. See `cdcflow cassandra exec --help`."
#define SYN_CREATE_SINK                                                                                           \
    "CREATE DATA_SINK [IF NOT EXISTS] name WITH uri = 'kafka://host:port/topic' [AND options = {'key': 'value', " \
    "...}]"
#define SYN_CREATE_SOURCE                                                                                         \
    "CREATE DATA_SOURCE [IF NOT EXISTS] cdc ON TABLE keyspace.table WITH sink = name [AND options = "            \
    "{'consistency.level': 'LOCAL_QUORUM', ...}]"
#define SYN_DROP_SOURCE "DROP DATA_SOURCE [IF EXISTS] cdc ON TABLE keyspace.table"
#define SYN_DROP_SINK "DROP DATA_SINK [IF EXISTS] name"

/* Advance over one character (a UTF-8 sequence counts once in columns). */
static void step(lexer *l) {
    unsigned char c = (unsigned char)l->s[l->i++];
    if (c == '\n') {
        l->line++;
        l->col = 1;
    } else if ((c & 0xC0) != 0x80) {
        l->col++;
    }
}

static cf_code fail_at(lexer *l, int line, int col, const char *fmt, const char *a, const char *b) {
    char what[400];
    snprintf(what, sizeof what, fmt, a ? a : "", b ? b : "");
    cf_err_set(l->err, CF_ERR_CONFIG, "line %d, column %d: %s", line, col, what);
    cf_err_hint(l->err, "%s", l->syntax);
    cf_err_where(l->err, "line %d, column %d", line, col);
    l->out->err_line = line;
    l->out->err_column = col;
    return CF_ERR_CONFIG;
}

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    if (p[0] < 0x80) return 1;
    size_t k;
    uint32_t cp;
    if ((p[0] & 0xE0) == 0xC0) k = 2, cp = p[0] & 0x1F;
    else if ((p[0] & 0xF0) == 0xE0) k = 3, cp = p[0] & 0x0F;
    else if ((p[0] & 0xF8) == 0xF0) k = 4, cp = p[0] & 0x07;
    else return 0;
    if (n < k) return 0;
    for (size_t j = 1; j < k; j++) {
        if ((p[j] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[j] & 0x3F);
    }
    if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

/* A quoted token (q is ' or "): the doubled quote is a quote. */
static cf_code lex_quoted(lexer *l, char q) {
    step(l);
    for (;;) {
        if (l->i >= l->len)
            return fail_at(l, l->t.line, l->t.col, q == '\'' ? "unterminated string literal%s%s"
                                                              : "unterminated quoted identifier%s%s",
                           NULL, NULL);
        unsigned char c = (unsigned char)l->s[l->i];
        if (c == (unsigned char)q) {
            step(l);
            if (l->i < l->len && l->s[l->i] == q) {
                step(l);
                continue;
            }
            return CF_OK;
        }
        if (c == 0) return fail_at(l, l->line, l->col, "a NUL byte in a quoted text%s%s", NULL, NULL);
        size_t k = utf8_len((const unsigned char *)l->s + l->i, l->len - l->i);
        if (!k) return fail_at(l, l->line, l->col, "invalid UTF-8%s%s", NULL, NULL);
        for (size_t j = 0; j < k; j++) step(l);
    }
}

/* Read the next token into l->t. */
static cf_code next(lexer *l) {
    for (;;) { /* white space and comments */
        if (l->i >= l->len) break;
        char c = l->s[l->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            step(l);
        } else if ((c == '-' || c == '/') && l->i + 1 < l->len && l->s[l->i + 1] == c) {
            while (l->i < l->len && l->s[l->i] != '\n') step(l);
        } else if (c == '/' && l->i + 1 < l->len && l->s[l->i + 1] == '*') {
            int line = l->line, col = l->col;
            step(l);
            step(l);
            while (l->i + 1 < l->len && !(l->s[l->i] == '*' && l->s[l->i + 1] == '/')) step(l);
            if (l->i + 1 >= l->len) return fail_at(l, line, col, "unterminated comment%s%s", NULL, NULL);
            step(l);
            step(l);
        } else {
            break;
        }
    }
    l->t.p = l->s + l->i;
    l->t.line = l->line;
    l->t.col = l->col;
    if (l->i >= l->len) {
        l->t.k = T_END;
        l->t.len = 0;
        return CF_OK;
    }
    size_t start = l->i;
    unsigned char c = (unsigned char)l->s[l->i];
    cf_code rc = CF_OK;
    if (isalpha(c) || c == '_') {
        l->t.k = T_IDENT;
        while (l->i < l->len && (isalnum((unsigned char)l->s[l->i]) || l->s[l->i] == '_')) step(l);
    } else if (isdigit(c) || (c == '-' && l->i + 1 < l->len && isdigit((unsigned char)l->s[l->i + 1]))) {
        l->t.k = T_NUMBER;
        step(l);
        while (l->i < l->len && isdigit((unsigned char)l->s[l->i])) step(l);
        if (l->i + 1 < l->len && l->s[l->i] == '.' && isdigit((unsigned char)l->s[l->i + 1])) {
            step(l);
            while (l->i < l->len && isdigit((unsigned char)l->s[l->i])) step(l);
        }
        if (l->i < l->len && (l->s[l->i] == 'e' || l->s[l->i] == 'E')) {
            size_t j = l->i + 1;
            if (j < l->len && (l->s[j] == '+' || l->s[j] == '-')) j++;
            if (j < l->len && isdigit((unsigned char)l->s[j])) {
                while (l->i < j) step(l);
                while (l->i < l->len && isdigit((unsigned char)l->s[l->i])) step(l);
            }
        }
    } else if (c == '\'' || c == '"') {
        l->t.k = c == '\'' ? T_STRING : T_QIDENT;
        rc = lex_quoted(l, (char)c);
    } else if (strchr(";,.={}:", c) && c) {
        l->t.k = T_PUNCT;
        step(l);
    } else {
        char shown[16];
        if (c >= 0x20 && c < 0x7F) snprintf(shown, sizeof shown, "\"%c\"", c);
        else snprintf(shown, sizeof shown, "byte 0x%02X", c);
        return fail_at(l, l->line, l->col, "unexpected character %s%s", shown, NULL);
    }
    l->t.len = l->i - start;
    return rc;
}

/* `found "TOKEN"` for messages (the token as written, shortened). */
static void found(const tok *t, char *buf, size_t size) {
    if (t->k == T_END) {
        snprintf(buf, size, "end of input");
        return;
    }
    size_t n = t->len > 60 ? 57 : t->len;
    size_t k = 0; /* do not cut a UTF-8 sequence */
    while (k < n) {
        size_t u = utf8_len((const unsigned char *)t->p + k, t->len - k);
        if (!u || k + u > n) break;
        k += u;
    }
    snprintf(buf, size, "\"%.*s%s\"", (int)k, t->p, k < t->len ? "..." : "");
}

static cf_code expected(lexer *l, const char *what) {
    char f[96];
    found(&l->t, f, sizeof f);
    return fail_at(l, l->t.line, l->t.col, "expected %s, found %s", what, f);
}

static bool is_kw(const lexer *l, const char *kw) {
    return l->t.k == T_IDENT && l->t.len == strlen(kw) && strncasecmp(l->t.p, kw, l->t.len) == 0;
}

static bool is_punct(const lexer *l, char c) { return l->t.k == T_PUNCT && l->t.p[0] == c; }

static cf_code keyword(lexer *l, const char *kw) {
    if (!is_kw(l, kw)) return expected(l, kw);
    return next(l);
}

static cf_code punct(lexer *l, char c, const char *what) {
    if (!is_punct(l, c)) return expected(l, what);
    return next(l);
}

/* The text of a quoted token without its quotes, doubled quotes undone. */
static char *unquote(const tok *t) {
    char q = t->p[0];
    char *s = cf_xmalloc(t->len);
    size_t k = 0;
    for (size_t i = 1; i + 1 < t->len; i++) {
        s[k++] = t->p[i];
        if (t->p[i] == q) i++;
    }
    s[k] = 0;
    return s;
}

/* An identifier: unquoted folded to lower case (as CQL does), quoted kept. */
static cf_code ident(lexer *l, const char *what, char **out) {
    if (l->t.k == T_IDENT) {
        char *s = cf_xmalloc(l->t.len + 1);
        for (size_t i = 0; i < l->t.len; i++) s[i] = (char)tolower((unsigned char)l->t.p[i]);
        s[l->t.len] = 0;
        *out = s;
    } else if (l->t.k == T_QIDENT) {
        if (l->t.len == 2) return fail_at(l, l->t.line, l->t.col, "an empty quoted identifier%s%s", NULL, NULL);
        *out = unquote(&l->t);
    } else {
        return expected(l, what);
    }
    return next(l);
}

/* [IF NOT EXISTS] / [IF EXISTS] */
static cf_code if_clause(lexer *l, bool create, bool *out) {
    *out = false;
    if (!is_kw(l, "IF")) return CF_OK;
    cf_code rc = next(l);
    if (!rc && create) rc = keyword(l, "NOT");
    if (!rc) rc = keyword(l, "EXISTS");
    *out = rc == CF_OK;
    return rc;
}

/* keyspace.table */
static cf_code table_name(lexer *l, cf_sc_stmt *st) {
    cf_code rc = ident(l, "the keyspace of keyspace.table", &st->keyspace);
    if (!rc) rc = punct(l, '.', "\".\" (the table as keyspace.table)");
    if (!rc) rc = ident(l, "the table of keyspace.table", &st->table);
    return rc;
}

/* cdc ON TABLE ks.t */
static cf_code source_target(lexer *l, cf_sc_stmt *st) {
    if (l->t.k == T_IDENT && !is_kw(l, "cdc")) {
        char f[96];
        found(&l->t, f, sizeof f);
        return fail_at(l, l->t.line, l->t.col, "unknown data source type %s: cdc is the only one%s", f, NULL);
    }
    cf_code rc = keyword(l, "cdc");
    if (!rc) rc = keyword(l, "ON");
    if (!rc) rc = keyword(l, "TABLE");
    if (!rc) rc = table_name(l, st);
    return rc;
}

#define MAX_OPTIONS 1000
#define MAX_OPTIONS_TEXT "1000"

/* {'k': v, ...}: keys strings, values strings, numbers, true/false. */
static cf_code options_map(lexer *l, cf_props *opts) {
    cf_code rc = punct(l, '{', "\"{\" (options are a map: {'key': 'value', ...})");
    if (rc) return rc;
    if (is_punct(l, '}')) return next(l);
    for (;;) {
        if (l->t.k != T_STRING) return expected(l, "an option name as a string literal ('key')");
        tok kt = l->t;
        if (cf_props_count(opts) == MAX_OPTIONS) /* the checks below are linear: bound the map */
            return fail_at(l, kt.line, kt.col, "more than %s options in one map%s", MAX_OPTIONS_TEXT, NULL);
        char *k = unquote(&kt);
        if (!*k || cf_props_has(opts, k)) {
            rc = fail_at(l, kt.line, kt.col, *k ? "option '%s' given twice%s" : "an empty option name%s%s", k, NULL);
            free(k);
            return rc;
        }
        rc = next(l);
        if (!rc) rc = punct(l, ':', "\":\" (between an option's name and value)");
        char *v = NULL;
        if (!rc) {
            if (l->t.k == T_STRING) {
                v = unquote(&l->t);
            } else if (l->t.k == T_NUMBER || is_kw(l, "true") || is_kw(l, "false")) {
                v = cf_xmalloc(l->t.len + 1);
                for (size_t i = 0; i < l->t.len; i++) v[i] = (char)tolower((unsigned char)l->t.p[i]);
                v[l->t.len] = 0;
            } else {
                rc = expected(l, "an option value (a string literal, a number, true or false)");
            }
        }
        if (!rc) rc = next(l);
        if (!rc) cf_props_set(opts, k, v);
        free(k);
        free(v);
        if (rc) return rc;
        if (is_punct(l, '}')) return next(l);
        rc = punct(l, ',', "\",\" or \"}\"");
        if (rc) return rc;
    }
}

static bool topic_char(char c) { return isalnum((unsigned char)c) || strchr("._-{}", c); }

/* kafka://SERVERS[/TOPIC] */
static cf_code parse_uri(lexer *l, const tok *at, cf_sc_stmt *st) {
    const char *u = st->uri, *why = NULL;
    if (strncasecmp(u, "kafka://", 8) != 0) {
        why = "it does not start with kafka://";
    } else {
        const char *h = u + 8, *slash = strchr(h, '/');
        size_t hl = slash ? (size_t)(slash - h) : strlen(h);
        const char *topic = slash ? slash + 1 : "";
        if (!hl) why = "it names no Kafka server (kafka://host:port/topic)";
        for (size_t i = 0; !why && i < hl; i++)
            if (!(isalnum((unsigned char)h[i]) || strchr(".-_:,[]", h[i])))
                why = "the servers are host:port items separated by ','";
        for (size_t i = 0; !why && topic[i]; i++)
            if (!topic_char(topic[i]))
                why = "a topic has only letters, digits, '.', '_', '-' (and the placeholders {keyspace}, {table})";
        if (!why && strlen(topic) > 249) why = "a topic has at most 249 characters";
        if (!why) {
            st->servers = cf_xmalloc(hl + 1);
            memcpy(st->servers, h, hl);
            st->servers[hl] = 0;
            for (char *a = st->servers, *c; !why && a; a = c ? c + 1 : NULL) {
                c = strchr(a, ',');
                size_t n = c ? (size_t)(c - a) : strlen(a);
                if (!n || a[0] == ':') why = "an empty server in the list";
                else if (a[n - 1] == ':') why = "a server ends with ':' and no port";
            }
            st->topic = cf_xstrdup(topic);
        }
    }
    if (!why) return CF_OK;
    char shown[96];
    found(at, shown, sizeof shown);
    fail_at(l, at->line, at->col, "invalid uri %s: %s", shown, why);
    return CF_ERR_CONFIG;
}

/* WITH prop [AND prop]...: uri (sinks) or sink (sources), and options. */
static cf_code with_props(lexer *l, cf_sc_stmt *st, bool sink) {
    cf_code rc = keyword(l, "WITH");
    bool have_main = false, have_opts = false;
    const char *mainp = sink ? "uri" : "sink";
    while (!rc) {
        tok at = l->t;
        if (is_kw(l, mainp) || is_kw(l, "options")) {
            bool opts = is_kw(l, "options");
            if (opts ? have_opts : have_main)
                return fail_at(l, at.line, at.col, "property %s given twice%s", opts ? "options" : mainp, NULL);
            rc = next(l);
            if (!rc) rc = punct(l, '=', "\"=\"");
            if (rc) return rc;
            if (opts) {
                have_opts = true;
                rc = options_map(l, st->options);
            } else if (sink) {
                have_main = true;
                if (l->t.k != T_STRING) return expected(l, "the uri as a string literal ('kafka://host:port/topic')");
                tok ut = l->t;
                st->uri = unquote(&ut);
                rc = next(l);
                if (!rc) rc = parse_uri(l, &ut, st);
            } else {
                have_main = true;
                rc = ident(l, "the sink's name", &st->sink);
            }
        } else {
            return expected(l, sink ? "uri or options" : "sink or options");
        }
        if (rc) return rc;
        if (!is_kw(l, "AND")) break;
        rc = next(l);
    }
    if (rc) return rc;
    if (!have_main)
        return fail_at(l, l->t.line, l->t.col,
                       sink ? "the sink has no uri (WITH uri = 'kafka://host:port/topic')%s%s"
                            : "the data source has no sink (WITH sink = name)%s%s",
                       NULL, NULL);
    return CF_OK;
}

static cf_code statement(lexer *l, cf_sc_stmt *st) {
    st->line = l->t.line;
    st->column = l->t.col;
    bool create = is_kw(l, "CREATE");
    if (!create && !is_kw(l, "DROP")) return expected(l, "CREATE or DROP");
    cf_code rc = next(l);
    if (rc) return rc;
    bool sink = is_kw(l, "DATA_SINK");
    if (!sink && !is_kw(l, "DATA_SOURCE")) return expected(l, "DATA_SINK or DATA_SOURCE");
    st->kind = create ? (sink ? CF_SC_CREATE_SINK : CF_SC_CREATE_SOURCE) : (sink ? CF_SC_DROP_SINK : CF_SC_DROP_SOURCE);
    l->syntax = create ? (sink ? SYN_CREATE_SINK : SYN_CREATE_SOURCE) : (sink ? SYN_DROP_SINK : SYN_DROP_SOURCE);
    rc = next(l);
    if (!rc) rc = if_clause(l, create, &st->if_exists);
    if (rc) return rc;
    if (create) st->options = cf_props_new();
    if (sink) rc = ident(l, "the sink's name", &st->name);
    else rc = source_target(l, st);
    if (!rc && create) rc = with_props(l, st, sink);
    return rc;
}

cf_code cf_sc_stmts_parse(const char *text, size_t len, cf_sc_stmts *out, cf_err *err) {
    memset(out, 0, sizeof *out);
    lexer l = {.s = text ? text : "", .len = text ? len : 0, .line = 1, .col = 1, .syntax = SYN_ANY, .out = out,
               .err = err};
    cf_code rc = next(&l);
    size_t cap = 0;
    while (!rc) {
        if (is_punct(&l, ';')) { /* an empty statement */
            rc = next(&l);
            continue;
        }
        if (l.t.k == T_END) break;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 4;
            out->v = cf_xrealloc(out->v, cap * sizeof *out->v);
        }
        cf_sc_stmt *st = &out->v[out->n++];
        memset(st, 0, sizeof *st);
        l.syntax = SYN_ANY;
        rc = statement(&l, st);
        if (rc) break;
        if (l.t.k == T_END) break;
        if (!is_punct(&l, ';')) {
            rc = expected(&l, "\";\" or the end of the input");
            break;
        }
        rc = next(&l);
    }
    if (!rc && out->n == 0) {
        l.syntax = SYN_ANY;
        rc = expected(&l, "a statement (CREATE or DROP)");
    }
    return rc;
}

void cf_sc_stmts_free(cf_sc_stmts *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        cf_sc_stmt *st = &s->v[i];
        free(st->name);
        free(st->keyspace);
        free(st->table);
        free(st->sink);
        free(st->uri);
        free(st->servers);
        free(st->topic);
        cf_props_destroy(st->options);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

const char *cf_sc_stmt_kind_name(cf_sc_stmt_kind k) {
    switch (k) {
    case CF_SC_CREATE_SINK: return "CREATE DATA_SINK";
    case CF_SC_CREATE_SOURCE: return "CREATE DATA_SOURCE";
    case CF_SC_DROP_SOURCE: return "DROP DATA_SOURCE";
    case CF_SC_DROP_SINK: return "DROP DATA_SINK";
    }
    return "?";
}

static json_t *stmt_json(const cf_sc_stmt *st) {
    json_t *o = json_object();
    bool create = st->kind == CF_SC_CREATE_SINK || st->kind == CF_SC_CREATE_SOURCE;
    json_object_set_new(o, "statement", json_string(cf_sc_stmt_kind_name(st->kind)));
    json_object_set_new(o, create ? "if_not_exists" : "if_exists", json_boolean(st->if_exists));
    if (st->name) json_object_set_new(o, "name", json_string(st->name));
    if (st->keyspace) {
        json_object_set_new(o, "type", json_string("cdc"));
        json_object_set_new(o, "keyspace", json_string(st->keyspace));
        json_object_set_new(o, "table", json_string(st->table));
    }
    if (st->sink) json_object_set_new(o, "sink", json_string(st->sink));
    if (st->uri) {
        json_object_set_new(o, "uri", json_string(st->uri));
        json_object_set_new(o, "servers", json_string(st->servers));
        json_object_set_new(o, "topic", json_string(st->topic));
    }
    if (st->options) {
        json_t *m = json_object();
        for (size_t i = 0; i < cf_props_count(st->options); i++)
            json_object_set_new(m, cf_props_key_at(st->options, i), json_string(cf_props_value_at(st->options, i)));
        json_object_set_new(o, "options", m);
    }
    json_object_set_new(o, "line", json_integer(st->line));
    json_object_set_new(o, "column", json_integer(st->column));
    return o;
}

void cf_sc_stmts_json(const cf_sc_stmts *s, cf_buf *out) {
    json_t *a = json_array();
    for (size_t i = 0; i < s->n; i++) json_array_append_new(a, stmt_json(&s->v[i]));
    char *t = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cf_buf_append_str(out, t);
    free(t);
    json_decref(a);
}

/* ------------------------------------------------------------------ */
/* Applying statements to the service (rest.c holds its lock)          */
/* ------------------------------------------------------------------ */

static cf_sc_sink *find_sink(const cf_sc_service *s, const char *name) {
    for (size_t i = 0; i < s->n_sinks; i++)
        if (strcmp(s->sinks[i].name, name) == 0) return &s->sinks[i];
    return NULL;
}

static size_t find_source(const cf_sc_service *s, const char *ks, const char *table) {
    size_t i = 0;
    while (i < s->n_sources && !(strcmp(s->sources[i].keyspace, ks) == 0 && strcmp(s->sources[i].table, table) == 0))
        i++;
    return i;
}

static bool starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Set k last in out: the mapping reads the settings in order, and what the
 * sink says must come after what the settings had. */
static void set_last(cf_props *out, const char *k, const char *v) {
    cf_props_remove(out, k);
    cf_props_set(out, k, v);
}

/* A sink's option as the service configuration key it is (see sidecar.h). */
static void sink_option(const char *k, const char *v, cf_props *out) {
    if (strcmp(k, "schema.registry.url") == 0 || starts(k, "key.converter") || starts(k, "value.converter") ||
        starts(k, "header.converter") || starts(k, "producer.override.")) {
        set_last(out, k, v);
    } else if (strcmp(k, "key.serializer") == 0 || strcmp(k, "value.serializer") == 0) {
        set_last(out, k[0] == 'k' ? "key.converter" : "value.converter", v);
    } else {
        cf_buf b = CF_BUF_INIT;
        cf_buf_printf(&b, "producer.override.%s", k);
        set_last(out, b.data, v);
        cf_buf_free(&b);
    }
}

cf_props *cf_sc_service_compose(const cf_sc_service *s, const cf_props *settings) {
    cf_props *out = cf_props_clone(settings);
    if (!s->n_sources) return out;
    const cf_sc_sink *k = find_sink(s, s->sources[0].sink);
    if (k) {
        cf_props_set(out, "kafka.bootstrap.servers", k->servers);
        if (k->topic[0]) cf_props_set(out, "topic.format", k->topic);
        /* the registry first: it makes both converters avro, which a
         * key./value.serializer given in any order then overrides */
        const char *reg = cf_props_get(k->options, "schema.registry.url");
        if (reg) set_last(out, "schema.registry.url", reg);
        for (size_t i = 0; i < cf_props_count(k->options); i++)
            if (strcmp(cf_props_key_at(k->options, i), "schema.registry.url") != 0)
                sink_option(cf_props_key_at(k->options, i), cf_props_value_at(k->options, i), out);
    }
    cf_buf tables = CF_BUF_INIT;
    for (size_t i = 0; i < s->n_sources; i++) {
        cf_props_merge(out, s->sources[i].options);
        cf_buf_printf(&tables, "%s%s.%s", i ? "," : "", s->sources[i].keyspace, s->sources[i].table);
    }
    cf_props_set(out, "tables", tables.data);
    cf_buf_free(&tables);
    return out;
}

typedef struct outcome {
    int status;          /* 200: done */
    char message[1200];  /* else: why */
    json_t *config;      /* the connector's configuration after the statement, or NULL */
} outcome;

static int refuse(outcome *o, int status, const char *fmt, const char *a, const char *b) {
    o->status = status;
    snprintf(o->message, sizeof o->message, fmt, a, b ? b : "");
    return status;
}

/* The connector made from the service's state now; on failure the reason
 * (the worker's or the mapping's error message) in o. */
static int apply(cf_sc_service *s, cf_worker *w, outcome *o) {
    cf_buf out = CF_BUF_INIT;
    int status;
    if (s->n_sources == 0) { /* nothing to publish: no connector */
        cf_err err;
        cf_state cs, t0;
        status = 200;
        if (cf_worker_connector_state(w, s->name, &cs, &t0, NULL) == CF_OK &&
            cf_worker_delete_connector(w, s->name, &err) != CF_OK)
            status = cf_sc_service_error(&out, &err);
    } else {
        cf_props *c = cf_sc_service_compose(s, s->settings);
        status = cf_sc_service_apply(s, w, c, &out);
        cf_props_destroy(c);
    }
    json_t *j = out.data ? json_loadb(out.data, out.len, 0, NULL) : NULL;
    cf_buf_free(&out);
    if (status < 300) {
        o->config = j ? json_incref(json_object_get(j, "config")) : NULL;
        json_decref(j);
        return o->status = 200;
    }
    const char *m = json_string_value(json_object_get(j, "message"));
    refuse(o, status, "%s%s", m ? m : "the connector could not be configured", NULL);
    json_decref(j);
    return status;
}

static void free_source(cf_sc_source *x) {
    free(x->keyspace);
    free(x->table);
    free(x->sink);
    cf_props_destroy(x->options);
}

static int create_sink(cf_sc_service *s, const cf_sc_stmt *st, outcome *o, const char **result) {
    if (find_sink(s, st->name)) {
        if (st->if_exists) return *result = "exists", 200;
        return refuse(o, 409, "data sink \"%s\" exists (DROP DATA_SINK it first, or CREATE DATA_SINK IF NOT EXISTS)%s",
                      st->name, NULL);
    }
    for (size_t i = 0; i < cf_props_count(st->options); i++) {
        const char *k = cf_props_key_at(st->options, i), *v = cf_props_value_at(st->options, i);
        if ((strcmp(k, "key.serializer") == 0 || strcmp(k, "value.serializer") == 0) && strcmp(v, "avro") != 0 &&
            strcmp(v, "json") != 0)
            return refuse(o, 400, "option '%s' is avro or json, not '%s'", k, v);
        if (strcmp(k, "topic.format") == 0 || strcmp(k, "kafka.bootstrap.servers") == 0)
            return refuse(o, 400, "option '%s' is the uri's (kafka://servers/topic)%s", k, NULL);
    }
    s->sinks = cf_xrealloc(s->sinks, (s->n_sinks + 1) * sizeof *s->sinks);
    cf_sc_sink *k = &s->sinks[s->n_sinks++];
    k->name = cf_xstrdup(st->name);
    k->uri = cf_xstrdup(st->uri);
    k->servers = cf_xstrdup(st->servers);
    k->topic = cf_xstrdup(st->topic);
    k->options = cf_props_clone(st->options);
    *result = "created";
    return 200;
}

static int drop_sink(cf_sc_service *s, const cf_sc_stmt *st, outcome *o, const char **result) {
    cf_sc_sink *k = find_sink(s, st->name);
    if (!k) {
        if (st->if_exists) return *result = "absent", 200;
        return refuse(o, 404, "no data sink \"%s\" (DROP DATA_SINK IF EXISTS drops it only if it exists)%s", st->name,
                      NULL);
    }
    for (size_t i = 0; i < s->n_sources; i++)
        if (strcmp(s->sources[i].sink, st->name) == 0) {
            char t[600];
            snprintf(t, sizeof t, "%s.%s", s->sources[i].keyspace, s->sources[i].table);
            return refuse(o, 409, "data sink \"%s\" is used by the data source on %s (DROP DATA_SOURCE it first)",
                          st->name, t);
        }
    free(k->name);
    free(k->uri);
    free(k->servers);
    free(k->topic);
    cf_props_destroy(k->options);
    size_t i = (size_t)(k - s->sinks);
    memmove(k, k + 1, (s->n_sinks - i - 1) * sizeof *k);
    s->n_sinks--;
    *result = "dropped";
    return 200;
}

static int create_source(cf_sc_service *s, cf_worker *w, const cf_sc_stmt *st, outcome *o, const char **result) {
    char t[600];
    snprintf(t, sizeof t, "%s.%s", st->keyspace, st->table);
    if (find_source(s, st->keyspace, st->table) < s->n_sources) {
        if (st->if_exists) return *result = "exists", 200;
        return refuse(o, 409, "a data source on %s exists (DROP DATA_SOURCE it first, or CREATE DATA_SOURCE IF NOT "
                              "EXISTS)%s", t, NULL);
    }
    if (!find_sink(s, st->sink))
        return refuse(o, 404, "no data sink \"%s\" (CREATE DATA_SINK %s WITH uri = ... first)", st->sink, st->sink);
    /* one connector reads the replicas: one sink, one value per option */
    for (size_t i = 0; i < s->n_sources; i++) {
        const cf_sc_source *x = &s->sources[i];
        char other[600];
        snprintf(other, sizeof other, "%s.%s", x->keyspace, x->table);
        if (strcmp(x->sink, st->sink) != 0)
            return refuse(o, 409, "the data sources publish to one sink: the one on %s uses \"%s\" (the sidecar "
                                  "runs one connector over the replicas)", other, x->sink);
        for (size_t j = 0; j < cf_props_count(st->options); j++) {
            const char *k = cf_props_key_at(st->options, j), *have = cf_props_get(x->options, k);
            if (have && strcmp(have, cf_props_value_at(st->options, j)) != 0) {
                char what[900];
                snprintf(what, sizeof what, "'%s' is '%s' for the data source on %s", k, have, other);
                return refuse(o, 409, "option %s: an option has one value for every data source (the sidecar runs "
                                      "one connector)%s", what, NULL);
            }
        }
    }
    s->sources = cf_xrealloc(s->sources, (s->n_sources + 1) * sizeof *s->sources);
    cf_sc_source *x = &s->sources[s->n_sources++];
    x->keyspace = cf_xstrdup(st->keyspace);
    x->table = cf_xstrdup(st->table);
    x->sink = cf_xstrdup(st->sink);
    x->options = cf_props_clone(st->options);
    if (apply(s, w, o) != 200) {
        free_source(x);
        s->n_sources--;
        return o->status;
    }
    *result = "created";
    return 200;
}

static int drop_source(cf_sc_service *s, cf_worker *w, const cf_sc_stmt *st, outcome *o, const char **result) {
    size_t i = find_source(s, st->keyspace, st->table);
    if (i == s->n_sources) {
        if (st->if_exists) return *result = "absent", 200;
        char t[600];
        snprintf(t, sizeof t, "%s.%s", st->keyspace, st->table);
        return refuse(o, 404, "no data source on %s (DROP DATA_SOURCE IF EXISTS drops it only if it exists)%s", t,
                      NULL);
    }
    cf_sc_source x = s->sources[i];
    memmove(&s->sources[i], &s->sources[i + 1], (s->n_sources - i - 1) * sizeof x);
    s->n_sources--;
    if (apply(s, w, o) != 200) { /* put it back where it was */
        memmove(&s->sources[i + 1], &s->sources[i], (s->n_sources - i) * sizeof x);
        s->sources[i] = x;
        s->n_sources++;
        return o->status;
    }
    free_source(&x);
    *result = "dropped";
    return 200;
}

static json_t *result_json(const cf_sc_stmt *st, const char *result) {
    json_t *r = json_object();
    json_object_set_new(r, "statement", json_string(cf_sc_stmt_kind_name(st->kind)));
    if (st->name) json_object_set_new(r, "name", json_string(st->name));
    if (st->keyspace) {
        json_object_set_new(r, "keyspace", json_string(st->keyspace));
        json_object_set_new(r, "table", json_string(st->table));
    }
    if (result) json_object_set_new(r, "result", json_string(result));
    return r;
}

static int reply(cf_buf *out, json_t *o) {
    char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cf_buf_append_str(out, t);
    free(t);
    int status = (int)json_integer_value(json_object_get(o, "error_code"));
    json_decref(o);
    return status ? status : 200;
}

int cf_sc_service_statements(cf_sc_service *s, cf_worker *w, const char *body, size_t len, cf_buf *out) {
    size_t i = 0;
    while (i < len && body[i] && strchr(" \t\r\n", body[i])) i++;
    json_t *doc = NULL;
    const char *text = body;
    if (i < len && body[i] == '{') { /* {"statements": "..."} */
        json_error_t je;
        doc = json_loadb(body, len, 0, &je);
        json_t *st = json_object_get(doc, "statements");
        if (!json_is_string(st)) {
            json_decref(doc);
            return reply(out, json_pack("{s:i,s:s}", "error_code", 400, "message",
                                        "the body is statements as text, or a JSON object {\"statements\": \"...\"}"));
        }
        text = json_string_value(st);
        len = json_string_length(st);
    }
    cf_sc_stmts stmts;
    cf_err err;
    cf_err_clear(&err);
    if (cf_sc_stmts_parse(text, len, &stmts, &err)) {
        json_t *e = json_pack("{s:i,s:s,s:i,s:i,s:s}", "error_code", 400, "message", err.message, "line",
                              stmts.err_line, "column", stmts.err_column, "hint", err.hint);
        cf_sc_stmts_free(&stmts);
        json_decref(doc);
        return reply(out, e);
    }
    json_decref(doc);
    json_t *results = json_array();
    json_t *answer = NULL;
    for (size_t k = 0; k < stmts.n && !answer; k++) {
        const cf_sc_stmt *st = &stmts.v[k];
        outcome o = {.status = 200};
        const char *result = NULL;
        switch (st->kind) {
        case CF_SC_CREATE_SINK: create_sink(s, st, &o, &result); break;
        case CF_SC_DROP_SINK: drop_sink(s, st, &o, &result); break;
        case CF_SC_CREATE_SOURCE: create_source(s, w, st, &o, &result); break;
        case CF_SC_DROP_SOURCE: drop_source(s, w, st, &o, &result); break;
        }
        if (o.status == 200) {
            json_t *r = result_json(st, result);
            if (o.config) json_object_set_new(r, "config", o.config);
            json_array_append_new(results, r);
            continue;
        }
        json_decref(o.config);
        char m[1400];
        snprintf(m, sizeof m, "statement %zu (%s, line %d, column %d): %s", k + 1, cf_sc_stmt_kind_name(st->kind),
                 st->line, st->column, o.message);
        answer = json_pack("{s:i,s:s,s:i,s:o}", "error_code", o.status, "message", m, "statement", (int)(k + 1),
                           "results", results);
    }
    cf_sc_stmts_free(&stmts);
    if (!answer) answer = json_pack("{s:o}", "results", results);
    return reply(out, answer);
}
