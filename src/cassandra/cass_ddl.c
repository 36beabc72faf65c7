/*
 * cass_ddl.c - the DDL file parser: CQL schema text as DESCRIBE KEYSPACE /
 * DESCRIBE SCHEMA [WITH INTERNALS] prints it (Cassandra 3.x, 4.x, 5.0), into a
 * cf_cass_schema. A hand-written recursive descent over cf_cass_lexer so that
 * every error names line and column.
 *
 * Cassandra's own behaviour this follows (CreateTableStatement, 3.x/4.x):
 *   - unquoted identifiers are lower-cased, "quoted" ones kept exactly;
 *   - COMPACT STORAGE: dense = compact && clustering columns exist;
 *     compound = !compact || more than one clustering column; a dense table
 *     without a regular column gets the hidden regular column "value" of
 *     EmptyType; a compact table without clustering ("static compact") stores
 *     its declared columns as static columns under a hidden clustering column
 *     "column1" (text) with a hidden "value" (empty) column;
 *   - DESCRIBE WITH INTERNALS reports dropped columns by listing them in
 *     CREATE TABLE followed by ALTER TABLE ... DROP c USING TIMESTAMP t.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cass_schema_internal.h"
#include "cdcflow/cassandra_schema.h"

typedef struct ddl {
    cf_cass_lexer lx;
    cf_cass_schema *s;
    char *use_ks; /* USE keyspace */
    cf_err *err;
} ddl;

static void ws(ddl *d) { cf_cass_lexer_skip_ws(&d->lx); }

static bool at_end(ddl *d) {
    ws(d);
    return d->lx.pos >= d->lx.len;
}

static cf_code fail(ddl *d, cf_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cf_code fail(ddl *d, cf_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cf_err_setv(d->err, code, fmt, ap);
    va_end(ap);
    cf_cass_lexer_where(&d->lx, d->err);
    return code;
}

/* the next word (letters, digits, _), case-insensitive, not consumed */
static bool peek_kw(ddl *d, const char *kw) {
    ws(d);
    size_t n = strlen(kw);
    if (d->lx.len - d->lx.pos < n) return false;
    if (strncasecmp(d->lx.text + d->lx.pos, kw, n) != 0) return false;
    if (d->lx.pos + n < d->lx.len) {
        char c = d->lx.text[d->lx.pos + n];
        if (isalnum((unsigned char)c) || c == '_') return false;
    }
    return true;
}

static bool accept_kw(ddl *d, const char *kw) {
    if (!peek_kw(d, kw)) return false;
    d->lx.pos += strlen(kw);
    return true;
}

static cf_code expect_kw(ddl *d, const char *kw, const char *ctx) {
    if (accept_kw(d, kw)) return CF_OK;
    return fail(d, CF_ERR_INVALID, "expected %s %s", kw, ctx);
}

static bool peek_ch(ddl *d, char c) {
    ws(d);
    return d->lx.pos < d->lx.len && d->lx.text[d->lx.pos] == c;
}

static bool accept_ch(ddl *d, char c) {
    if (!peek_ch(d, c)) return false;
    d->lx.pos++;
    return true;
}

static cf_code expect_ch(ddl *d, char c, const char *ctx) {
    if (accept_ch(d, c)) return CF_OK;
    if (d->lx.pos >= d->lx.len) return fail(d, CF_ERR_INVALID, "expected '%c' %s, got end of input", c, ctx);
    return fail(d, CF_ERR_INVALID, "expected '%c' %s, got '%c'", c, ctx, d->lx.text[d->lx.pos]);
}

static cf_code ident(ddl *d, char **out) {
    bool q;
    return cf_cass_lexer_ident(&d->lx, out, &q, d->err);
}

/* [ks.]name; *ks falls back to USE keyspace */
static cf_code qualified(ddl *d, char **ks, char **name, const char *what) {
    *ks = *name = NULL;
    char *a = NULL;
    ws(d);
    size_t start = d->lx.pos;
    cf_code rc = ident(d, &a);
    if (rc) return rc;
    if (accept_ch(d, '.')) {
        rc = ident(d, name);
        if (rc) {
            free(a);
            return rc;
        }
        *ks = a;
        return CF_OK;
    }
    *name = a;
    if (!d->use_ks) {
        d->lx.pos = start;
        fail(d, CF_ERR_INVALID, "%s name \"%s\" has no keyspace", what, a);
        cf_err_hint(d->err, "write keyspace.name, or put USE keyspace; before the statement");
        free(a);
        *name = NULL;
        return CF_ERR_INVALID;
    }
    *ks = cf_xstrdup(d->use_ks);
    return CF_OK;
}

/* Skip one constant or collection literal of a WITH option value. */
static cf_code skip_term(ddl *d) {
    ws(d);
    cf_cass_lexer *lx = &d->lx;
    if (lx->pos >= lx->len) return fail(d, CF_ERR_INVALID, "expected a value, got end of input");
    char c = lx->text[lx->pos];
    if (c == '\'') {
        char *s = NULL;
        cf_code rc = cf_cass_lexer_string(lx, &s, d->err);
        free(s);
        return rc;
    }
    if (c == '$' && lx->pos + 1 < lx->len && lx->text[lx->pos + 1] == '$') {
        const char *e = NULL;
        for (size_t i = lx->pos + 2; i + 1 < lx->len; i++)
            if (lx->text[i] == '$' && lx->text[i + 1] == '$') {
                e = lx->text + i;
                break;
            }
        if (!e) return fail(d, CF_ERR_INVALID, "unterminated $$ string");
        lx->pos = (size_t)(e - lx->text) + 2;
        return CF_OK;
    }
    if (c == '{' || c == '[' || c == '(') {
        char close = c == '{' ? '}' : c == '[' ? ']' : ')';
        size_t start = lx->pos;
        lx->pos++;
        for (;;) {
            if (accept_ch(d, close)) return CF_OK;
            if (lx->pos >= lx->len) {
                lx->pos = start;
                return fail(d, CF_ERR_INVALID, "unterminated '%c' literal", c);
            }
            cf_code rc = skip_term(d);
            if (rc) return rc;
            if (accept_ch(d, ':') || accept_ch(d, ',')) continue;
            if (!peek_ch(d, close)) return fail(d, CF_ERR_INVALID, "expected ',' or '%c' in literal", close);
        }
    }
    if (c == '"') {
        char *s = NULL;
        cf_code rc = ident(d, &s);
        free(s);
        return rc;
    }
    if (isalnum((unsigned char)c) || c == '-' || c == '+' || c == '.' || c == '_') {
        size_t start = lx->pos;
        while (lx->pos < lx->len) {
            char x = lx->text[lx->pos];
            if (isalnum((unsigned char)x) || x == '-' || x == '+' || x == '.' || x == '_') lx->pos++;
            else break;
        }
        if (lx->pos == start) return fail(d, CF_ERR_INVALID, "expected a value");
        return CF_OK;
    }
    return fail(d, CF_ERR_INVALID, "unexpected '%c' where a value was expected", c);
}

/* Text of a term (strings unquoted) for the few options we read. */
static cf_code term_text(ddl *d, char **out) {
    ws(d);
    size_t start = d->lx.pos;
    if (peek_ch(d, '\'')) return cf_cass_lexer_string(&d->lx, out, d->err);
    cf_code rc = skip_term(d);
    if (rc) return rc;
    *out = cf_xstrndup(d->lx.text + start, d->lx.pos - start);
    return CF_OK;
}

/* Skip to the end of the current statement (after ';' or at end). */
static cf_code skip_statement(ddl *d) {
    while (!at_end(d)) {
        if (accept_ch(d, ';')) return CF_OK;
        cf_cass_lexer *lx = &d->lx;
        char c = lx->text[lx->pos];
        if (c == '\'' || c == '"' || (c == '$' && lx->pos + 1 < lx->len && lx->text[lx->pos + 1] == '$')) {
            cf_code rc = skip_term(d);
            if (rc) return rc;
        } else {
            lx->pos++;
        }
    }
    return CF_OK;
}

static cf_code end_statement(ddl *d, const char *what) {
    if (accept_ch(d, ';') || at_end(d)) return CF_OK;
    return fail(d, CF_ERR_INVALID, "expected ';' after %s", what);
}

static bool parse_bool(const char *s, bool *out) {
    if (strcasecmp(s, "true") == 0) return (*out = true), true;
    if (strcasecmp(s, "false") == 0) return (*out = false), true;
    return false;
}

/* ---- CREATE KEYSPACE ---- */

static cf_code create_keyspace(ddl *d) {
    if (accept_kw(d, "IF")) {
        cf_code rc = expect_kw(d, "NOT", "after IF");
        if (!rc) rc = expect_kw(d, "EXISTS", "after IF NOT");
        if (rc) return rc;
    }
    char *name = NULL;
    cf_code rc = ident(d, &name);
    if (rc) return rc;
    char *replication = NULL;
    bool durable = true;
    if (accept_kw(d, "WITH")) {
        do {
            char *opt = NULL;
            rc = ident(d, &opt);
            if (!rc) rc = expect_ch(d, '=', "after the keyspace option name");
            if (rc) {
                free(opt);
                goto out;
            }
            ws(d);
            size_t start = d->lx.pos;
            if (strcmp(opt, "durable_writes") == 0) {
                char *v = NULL;
                rc = term_text(d, &v);
                if (!rc && !parse_bool(v, &durable)) {
                    d->lx.pos = start;
                    rc = fail(d, CF_ERR_INVALID, "durable_writes must be true or false, got %s", v);
                }
                free(v);
            } else {
                rc = skip_term(d);
                if (!rc && strcmp(opt, "replication") == 0) {
                    free(replication);
                    replication = cf_xstrndup(d->lx.text + start, d->lx.pos - start);
                }
            }
            free(opt);
            if (rc) goto out;
        } while (accept_kw(d, "AND"));
    }
    rc = end_statement(d, "CREATE KEYSPACE");
    if (!rc) cf_cass_schema_put_keyspace(d->s, name, replication, durable);
out:
    free(name);
    free(replication);
    return rc;
}

/* ---- CREATE TYPE ---- */

static cf_code create_type(ddl *d) {
    if (accept_kw(d, "IF")) {
        cf_code rc = expect_kw(d, "NOT", "after IF");
        if (!rc) rc = expect_kw(d, "EXISTS", "after IF NOT");
        if (rc) return rc;
    }
    char *ks = NULL, *name = NULL;
    cf_code rc = qualified(d, &ks, &name, "type");
    if (rc) return rc;
    char **names = NULL;
    cf_cql_type **types = NULL;
    size_t n = 0;
    rc = expect_ch(d, '(', "after the type name");
    while (!rc) {
        char *f = NULL;
        cf_cql_type *t = NULL;
        rc = ident(d, &f);
        if (!rc) rc = cf_cass_parse_type_lx(&d->lx, ks, d->s, &t, d->err);
        if (rc) {
            free(f);
            break;
        }
        names = cf_xrealloc(names, (n + 1) * sizeof *names);
        types = cf_xrealloc(types, (n + 1) * sizeof *types);
        names[n] = f;
        types[n] = t;
        n++;
        if (accept_ch(d, ',')) continue;
        rc = expect_ch(d, ')', "or ',' after a field of the type");
        break;
    }
    if (!rc) rc = end_statement(d, "CREATE TYPE");
    if (!rc) {
        rc = cf_cass_schema_put_udt(d->s, ks, name, (const char *const *)names, types, n, d->err);
        if (rc) cf_cass_lexer_where(&d->lx, d->err);
        for (size_t i = 0; i < n; i++) free(names[i]);
    } else {
        for (size_t i = 0; i < n; i++) {
            free(names[i]);
            cf_cql_type_destroy(types[i]);
        }
    }
    free(names);
    free(types);
    free(ks);
    free(name);
    return rc;
}

/* Cassandra 5.0 dynamic data masking: MASKED WITH DEFAULT | [ks.]fn(args).
 * A mask changes what SELECT shows, not what is stored: parsed and dropped. */
static cf_code skip_mask(ddl *d) {
    cf_code rc = expect_kw(d, "WITH", "after MASKED");
    if (rc || accept_kw(d, "DEFAULT")) return rc;
    char *fn = NULL;
    rc = ident(d, &fn);
    free(fn);
    if (!rc && accept_ch(d, '.')) {
        rc = ident(d, &fn);
        free(fn);
    }
    if (!rc && !peek_ch(d, '(')) rc = fail(d, CF_ERR_INVALID, "expected '(' after the masking function name");
    if (!rc) rc = skip_term(d);
    return rc;
}

/* ---- CREATE TABLE ---- */

typedef struct coldef {
    char *name;
    cf_cql_type *type;
    bool is_static;
    size_t pos; /* for errors */
} coldef;

typedef struct tabledef {
    coldef *cols;
    size_t n;
    char **pk;
    size_t n_pk;
    char **ck;
    size_t n_ck;
    bool have_pk;
} tabledef;

static void tabledef_free(tabledef *td) {
    for (size_t i = 0; i < td->n; i++) {
        free(td->cols[i].name);
        cf_cql_type_destroy(td->cols[i].type);
    }
    free(td->cols);
    for (size_t i = 0; i < td->n_pk; i++) free(td->pk[i]);
    for (size_t i = 0; i < td->n_ck; i++) free(td->ck[i]);
    free(td->pk);
    free(td->ck);
}

static void push_name(char ***arr, size_t *n, char *s) {
    *arr = cf_xrealloc(*arr, (*n + 1) * sizeof **arr);
    (*arr)[(*n)++] = s;
}

static cf_code primary_key_clause(ddl *d, tabledef *td) {
    if (td->have_pk) return fail(d, CF_ERR_INVALID, "PRIMARY KEY is defined twice");
    td->have_pk = true;
    cf_code rc = expect_ch(d, '(', "after PRIMARY KEY");
    if (rc) return rc;
    if (accept_ch(d, '(')) {
        do {
            char *c = NULL;
            rc = ident(d, &c);
            if (rc) return rc;
            push_name(&td->pk, &td->n_pk, c);
        } while (accept_ch(d, ','));
        rc = expect_ch(d, ')', "to close the partition key");
        if (rc) return rc;
    } else {
        char *c = NULL;
        rc = ident(d, &c);
        if (rc) return rc;
        push_name(&td->pk, &td->n_pk, c);
    }
    while (accept_ch(d, ',')) {
        char *c = NULL;
        rc = ident(d, &c);
        if (rc) return rc;
        push_name(&td->ck, &td->n_ck, c);
    }
    return expect_ch(d, ')', "to close PRIMARY KEY");
}

static coldef *find_col(tabledef *td, const char *name) {
    for (size_t i = 0; i < td->n; i++)
        if (strcmp(td->cols[i].name, name) == 0) return &td->cols[i];
    return NULL;
}

static cf_code table_options(ddl *d, cf_cass_table *t, char ***order, bool **desc, size_t *n_order) {
    cf_code rc = CF_OK;
    do {
        if (accept_kw(d, "COMPACT")) {
            rc = expect_kw(d, "STORAGE", "after COMPACT");
            if (rc) return rc;
            t->compact_storage = true;
            continue;
        }
        if (accept_kw(d, "CLUSTERING")) {
            rc = expect_kw(d, "ORDER", "after CLUSTERING");
            if (!rc) rc = expect_kw(d, "BY", "after CLUSTERING ORDER");
            if (!rc) rc = expect_ch(d, '(', "after CLUSTERING ORDER BY");
            if (rc) return rc;
            do {
                char *c = NULL;
                rc = ident(d, &c);
                if (rc) return rc;
                bool dsc = false;
                if (accept_kw(d, "DESC")) dsc = true;
                else if (!accept_kw(d, "ASC")) {
                    free(c);
                    return fail(d, CF_ERR_INVALID, "expected ASC or DESC in CLUSTERING ORDER BY");
                }
                *order = cf_xrealloc(*order, (*n_order + 1) * sizeof **order);
                *desc = cf_xrealloc(*desc, (*n_order + 1) * sizeof **desc);
                (*order)[*n_order] = c;
                (*desc)[*n_order] = dsc;
                (*n_order)++;
            } while (accept_ch(d, ','));
            rc = expect_ch(d, ')', "to close CLUSTERING ORDER BY");
            if (rc) return rc;
            continue;
        }
        char *opt = NULL;
        rc = ident(d, &opt);
        if (rc) return rc;
        rc = expect_ch(d, '=', "after a table option name");
        if (rc) {
            free(opt);
            return rc;
        }
        ws(d);
        size_t vstart = d->lx.pos;
        char *v = NULL;
        rc = term_text(d, &v);
        if (!rc) {
            if (strcmp(opt, "id") == 0) {
                uint8_t id[16];
                if (!cf_cass_uuid_parse(v, strlen(v), id)) {
                    d->lx.pos = vstart;
                    rc = fail(d, CF_ERR_INVALID, "WITH ID needs a UUID, got %s", v);
                } else {
                    cf_cass_table_set_id(t, id);
                }
            } else if (strcmp(opt, "cdc") == 0) {
                if (!parse_bool(v, &t->cdc)) {
                    d->lx.pos = vstart;
                    rc = fail(d, CF_ERR_INVALID, "cdc must be true or false, got %s", v);
                }
            }
            /* every other option (compaction, caching, ...) does not change how
             * the commit log is written: accepted and ignored */
        }
        free(v);
        free(opt);
        if (rc) return rc;
    } while (accept_kw(d, "AND"));
    return CF_OK;
}

static cf_code create_table(ddl *d, bool is_view_kw) {
    (void)is_view_kw;
    if (accept_kw(d, "IF")) {
        cf_code rc = expect_kw(d, "NOT", "after IF");
        if (!rc) rc = expect_kw(d, "EXISTS", "after IF NOT");
        if (rc) return rc;
    }
    size_t stmt_pos = d->lx.pos;
    char *ks = NULL, *name = NULL;
    cf_code rc = qualified(d, &ks, &name, "table");
    if (rc) return rc;
    tabledef td = {0};
    cf_cass_table *t = cf_cass_table_new(ks, name);
    char **order = NULL;
    bool *desc = NULL;
    size_t n_order = 0;
    rc = expect_ch(d, '(', "after the table name");
    while (!rc) {
        if (accept_kw(d, "PRIMARY")) {
            rc = expect_kw(d, "KEY", "after PRIMARY");
            if (!rc) rc = primary_key_clause(d, &td);
        } else {
            coldef c = {0};
            ws(d);
            c.pos = d->lx.pos;
            rc = ident(d, &c.name);
            if (!rc) rc = cf_cass_parse_type_lx(&d->lx, ks, d->s, &c.type, d->err);
            if (!rc && find_col(&td, c.name)) {
                d->lx.pos = c.pos;
                rc = fail(d, CF_ERR_SCHEMA, "column \"%s\" is defined twice in %s.%s", c.name, ks, name);
            }
            if (!rc && accept_kw(d, "STATIC")) c.is_static = true;
            if (!rc && accept_kw(d, "MASKED")) rc = skip_mask(d);
            if (!rc && accept_kw(d, "PRIMARY")) {
                rc = expect_kw(d, "KEY", "after PRIMARY");
                if (!rc) {
                    if (td.have_pk) rc = fail(d, CF_ERR_INVALID, "PRIMARY KEY is defined twice");
                    td.have_pk = true;
                    push_name(&td.pk, &td.n_pk, cf_xstrdup(c.name));
                }
            }
            if (rc) {
                free(c.name);
                cf_cql_type_destroy(c.type);
                break;
            }
            td.cols = cf_xrealloc(td.cols, (td.n + 1) * sizeof *td.cols);
            td.cols[td.n++] = c;
        }
        if (rc) break;
        if (accept_ch(d, ',')) {
            if (peek_ch(d, ')')) break; /* trailing comma, as some tools print */
            continue;
        }
        break;
    }
    if (!rc) rc = expect_ch(d, ')', "or ',' after a column definition");
    if (!rc && accept_kw(d, "WITH")) rc = table_options(d, t, &order, &desc, &n_order);
    if (!rc) rc = end_statement(d, "CREATE TABLE");
    if (rc) goto out;

    size_t end_pos = d->lx.pos;
    d->lx.pos = stmt_pos;
    if (!td.have_pk) {
        rc = fail(d, CF_ERR_INVALID, "table %s.%s has no PRIMARY KEY", ks, name);
        goto out;
    }
    /* key columns in key order */
    for (size_t i = 0; i < td.n_pk + td.n_ck && !rc; i++) {
        bool is_pk = i < td.n_pk;
        const char *cn = is_pk ? td.pk[i] : td.ck[i - td.n_pk];
        coldef *c = find_col(&td, cn);
        if (!c) {
            rc = fail(d, CF_ERR_SCHEMA, "PRIMARY KEY of %s.%s names column \"%s\", which is not defined", ks, name,
                      cn);
            break;
        }
        if (!c->type) {
            rc = fail(d, CF_ERR_SCHEMA, "column \"%s\" is used twice in the PRIMARY KEY of %s.%s", cn, ks, name);
            break;
        }
        if (c->is_static) {
            rc = fail(d, CF_ERR_SCHEMA, "primary key column \"%s\" of %s.%s cannot be static", cn, ks, name);
            break;
        }
        bool rev = false;
        if (!is_pk)
            for (size_t k = 0; k < n_order; k++)
                if (strcmp(order[k], cn) == 0) rev = desc[k];
        rc = cf_cass_table_add_column(t, cn, c->type, is_pk ? CF_CASS_PARTITION_KEY : CF_CASS_CLUSTERING,
                                      is_pk ? (int32_t)i : (int32_t)(i - td.n_pk), rev, d->err);
        c->type = NULL; /* taken */
    }
    for (size_t k = 0; k < n_order && !rc; k++) {
        const cf_cass_column *c = cf_cass_table_column(t, order[k]);
        if (!c || c->kind != CF_CASS_CLUSTERING)
            rc = fail(d, CF_ERR_SCHEMA, "CLUSTERING ORDER BY names \"%s\", which is not a clustering column of %s.%s",
                      order[k], ks, name);
    }
    bool static_compact = t->compact_storage && td.n_ck == 0;
    for (size_t i = 0; i < td.n && !rc; i++) {
        coldef *c = &td.cols[i];
        if (!c->type) continue; /* key column */
        if (c->is_static && td.n_ck == 0) {
            rc = fail(d, CF_ERR_SCHEMA, "static column \"%s\" needs clustering columns in %s.%s", c->name, ks, name);
            break;
        }
        cf_cass_column_kind kind = (c->is_static || static_compact) ? CF_CASS_STATIC : CF_CASS_REGULAR;
        rc = cf_cass_table_add_column(t, c->name, c->type, kind, -1, false, d->err);
        c->type = NULL;
    }
    if (!rc && t->compact_storage) {
        t->dense = td.n_ck > 0;
        t->compound = td.n_ck > 1;
        if (static_compact) {
            rc = cf_cass_table_add_column(t, "column1", cf_cql_type_new(CF_CQL_TEXT), CF_CASS_CLUSTERING, 0, false,
                                          d->err);
            if (!rc)
                rc = cf_cass_table_add_column(t, "value", cf_cql_type_new(CF_CQL_EMPTY), CF_CASS_REGULAR, -1, false,
                                              d->err);
        } else if (t->n_regular == 0) {
            rc = cf_cass_table_add_column(t, "value", cf_cql_type_new(CF_CQL_EMPTY), CF_CASS_REGULAR, -1, false,
                                          d->err);
        }
    }
    if (rc) {
        if (d->err && !d->err->where[0]) cf_cass_lexer_where(&d->lx, d->err);
        goto out;
    }
    d->lx.pos = end_pos;
    rc = cf_cass_schema_add_table(d->s, t, d->err);
    t = NULL;
    if (rc) {
        d->lx.pos = stmt_pos;
        cf_cass_lexer_where(&d->lx, d->err);
    }
out:
    cf_cass_table_unref(t);
    tabledef_free(&td);
    for (size_t k = 0; k < n_order; k++) free(order[k]);
    free(order);
    free(desc);
    free(ks);
    free(name);
    return rc;
}

/* ---- CREATE MATERIALIZED VIEW ----
 * As ViewMetadata prints it:
 *   CREATE MATERIALIZED VIEW ks.v AS SELECT a, b | * FROM ks.base
 *   WHERE ... PRIMARY KEY (...) WITH ID = ... AND CLUSTERING ORDER BY (...)
 * Column types come from the base table; selected columns outside the view's
 * primary key are its regular columns. */

static cf_code create_view(ddl *d) {
    if (accept_kw(d, "IF")) {
        cf_code rc = expect_kw(d, "NOT", "after IF");
        if (!rc) rc = expect_kw(d, "EXISTS", "after IF NOT");
        if (rc) return rc;
    }
    ws(d);
    size_t stmt_pos = d->lx.pos;
    char *ks = NULL, *name = NULL, *bks = NULL, *bname = NULL;
    char **sel = NULL;
    size_t n_sel = 0;
    bool all = false;
    tabledef td = {0};
    cf_cass_table *t = NULL;
    char **order = NULL;
    bool *desc = NULL;
    size_t n_order = 0;
    cf_code rc = qualified(d, &ks, &name, "view");
    if (!rc) rc = expect_kw(d, "AS", "after the view name");
    if (!rc) rc = expect_kw(d, "SELECT", "after AS");
    if (!rc) {
        if (accept_ch(d, '*')) all = true;
        else
            do {
                char *c = NULL;
                rc = ident(d, &c);
                if (!rc) push_name(&sel, &n_sel, c);
            } while (!rc && accept_ch(d, ','));
    }
    if (!rc) rc = expect_kw(d, "FROM", "after the selected columns");
    ws(d);
    size_t base_pos = d->lx.pos;
    if (!rc) rc = qualified(d, &bks, &bname, "base table");
    if (rc) goto out;
    /* the WHERE clause only filters rows: skip to PRIMARY KEY */
    if (accept_kw(d, "WHERE"))
        while (!at_end(d) && !peek_kw(d, "PRIMARY")) {
            if (peek_ch(d, '\'') || peek_ch(d, '"')) {
                rc = skip_term(d);
                if (rc) goto out;
            } else if (peek_ch(d, ';')) {
                break;
            } else {
                d->lx.pos++;
            }
        }
    rc = expect_kw(d, "PRIMARY", "in CREATE MATERIALIZED VIEW");
    if (!rc) rc = expect_kw(d, "KEY", "after PRIMARY");
    if (!rc) rc = primary_key_clause(d, &td);
    t = cf_cass_table_new(ks, name);
    t->is_view = true;
    if (!rc && accept_kw(d, "WITH")) rc = table_options(d, t, &order, &desc, &n_order);
    if (!rc) rc = end_statement(d, "CREATE MATERIALIZED VIEW");
    if (rc) goto out;
    size_t end_pos = d->lx.pos;
    const cf_cass_table *base = cf_cass_schema_table_by_name(d->s, bks, bname);
    if (!base) {
        d->lx.pos = base_pos;
        rc = fail(d, CF_ERR_NOT_FOUND, "materialized view %s.%s: unknown base table %s.%s", ks, name, bks, bname);
        cf_err_hint(d->err, "the CREATE TABLE of the base table must come first");
        goto out;
    }
    for (size_t i = 0; i < td.n_pk + td.n_ck && !rc; i++) {
        bool is_pk = i < td.n_pk;
        const char *cn = is_pk ? td.pk[i] : td.ck[i - td.n_pk];
        const cf_cass_column *bc = cf_cass_table_column(base, cn);
        if (!bc) {
            d->lx.pos = stmt_pos;
            rc = fail(d, CF_ERR_SCHEMA, "view %s.%s: primary key column \"%s\" is not in %s.%s", ks, name, cn, bks,
                      bname);
            break;
        }
        bool rev = false;
        if (!is_pk)
            for (size_t k = 0; k < n_order; k++)
                if (strcmp(order[k], cn) == 0) rev = desc[k];
        rc = cf_cass_table_add_column(t, cn, cf_cql_type_clone(bc->type),
                                      is_pk ? CF_CASS_PARTITION_KEY : CF_CASS_CLUSTERING,
                                      is_pk ? (int32_t)i : (int32_t)(i - td.n_pk), rev, d->err);
    }
    /* regular columns: the selection (or every base column) minus the key */
    size_t nb = all ? cf_cass_table_column_count(base) : n_sel;
    for (size_t i = 0; i < nb && !rc; i++) {
        const cf_cass_column *bc;
        if (all) {
            size_t k = i;
            const cf_cass_column *arrs[4] = {base->partition_key, base->clustering, base->statics, base->regular};
            size_t ns[4] = {base->n_partition_key, base->n_clustering, base->n_static, base->n_regular};
            int a = 0;
            while (k >= ns[a]) k -= ns[a++];
            bc = &arrs[a][k];
        } else {
            bc = cf_cass_table_column(base, sel[i]);
            if (!bc) {
                d->lx.pos = stmt_pos;
                rc = fail(d, CF_ERR_SCHEMA, "view %s.%s selects \"%s\", which %s.%s does not have", ks, name, sel[i],
                          bks, bname);
                break;
            }
        }
        if (cf_cass_table_column(t, bc->name)) continue;
        rc = cf_cass_table_add_column(t, bc->name, cf_cql_type_clone(bc->type), CF_CASS_REGULAR, -1, false, d->err);
    }
    if (rc) goto out;
    d->lx.pos = end_pos;
    rc = cf_cass_schema_add_table(d->s, t, d->err);
    t = NULL;
out:
    cf_cass_table_unref(t);
    tabledef_free(&td);
    for (size_t k = 0; k < n_order; k++) free(order[k]);
    free(order);
    free(desc);
    for (size_t k = 0; k < n_sel; k++) free(sel[k]);
    free(sel);
    free(ks);
    free(name);
    free(bks);
    free(bname);
    return rc;
}

/* ---- ALTER TABLE ---- */

static cf_code alter_table(ddl *d) {
    size_t stmt_pos = d->lx.pos;
    char *ks = NULL, *name = NULL;
    cf_code rc = qualified(d, &ks, &name, "table");
    if (rc) return rc;
    const cf_cass_table *cur = cf_cass_schema_table_by_name(d->s, ks, name);
    if (!cur) {
        d->lx.pos = stmt_pos;
        rc = fail(d, CF_ERR_NOT_FOUND, "ALTER TABLE of unknown table %s.%s", ks, name);
        cf_err_hint(d->err, "the CREATE TABLE statement must come first");
        free(ks);
        free(name);
        return rc;
    }
    cf_cass_table *t = cf_cass_table_clone(cur);
    if (accept_kw(d, "ADD")) {
        bool paren = accept_ch(d, '(');
        do {
            char *c = NULL;
            cf_cql_type *ty = NULL;
            ws(d);
            size_t cpos = d->lx.pos;
            rc = ident(d, &c);
            if (!rc) rc = cf_cass_parse_type_lx(&d->lx, ks, d->s, &ty, d->err);
            bool st = false;
            if (!rc) st = accept_kw(d, "STATIC");
            if (!rc && accept_kw(d, "MASKED")) rc = skip_mask(d);
            if (!rc) {
                rc = cf_cass_table_add_column(t, c, ty, st ? CF_CASS_STATIC : CF_CASS_REGULAR, -1, false, d->err);
                ty = NULL;
                if (rc) {
                    d->lx.pos = cpos;
                    cf_cass_lexer_where(&d->lx, d->err);
                }
            }
            cf_cql_type_destroy(ty);
            free(c);
        } while (!rc && paren && accept_ch(d, ','));
        if (!rc && paren) rc = expect_ch(d, ')', "to close ADD (...)");
    } else if (accept_kw(d, "DROP")) {
        bool paren = accept_ch(d, '(');
        char **cols = NULL;
        size_t n = 0;
        do {
            char *c = NULL;
            rc = ident(d, &c);
            if (!rc) push_name(&cols, &n, c);
        } while (!rc && paren && accept_ch(d, ','));
        if (!rc && paren) rc = expect_ch(d, ')', "to close DROP (...)");
        int64_t ts = 0;
        if (!rc && accept_kw(d, "USING")) {
            rc = expect_kw(d, "TIMESTAMP", "after USING");
            char *v = NULL;
            ws(d);
            size_t vpos = d->lx.pos;
            if (!rc) rc = term_text(d, &v);
            if (!rc) {
                char *e = NULL;
                errno = 0;
                long long x = strtoll(v, &e, 10);
                if (errno || !e || *e) {
                    d->lx.pos = vpos;
                    rc = fail(d, CF_ERR_INVALID, "USING TIMESTAMP needs an integer (microseconds), got %s", v);
                } else {
                    ts = x;
                }
            }
            free(v);
        }
        for (size_t i = 0; i < n && !rc; i++) {
            rc = cf_cass_table_drop_column(t, cols[i], ts, d->err);
            if (rc) {
                d->lx.pos = stmt_pos;
                cf_cass_lexer_where(&d->lx, d->err);
            }
        }
        for (size_t i = 0; i < n; i++) free(cols[i]);
        free(cols);
    } else if (accept_kw(d, "ALTER")) {
        /* only masks can be altered in place (5.0): no storage effect */
        char *c = NULL;
        rc = ident(d, &c);
        if (!rc && !cf_cass_table_column(t, c)) rc = fail(d, CF_ERR_NOT_FOUND, "ALTER of unknown column \"%s\" in %s.%s", c, ks, name);
        free(c);
        if (!rc) {
            if (accept_kw(d, "MASKED")) rc = skip_mask(d);
            else if (accept_kw(d, "DROP")) rc = expect_kw(d, "MASKED", "after ALTER column DROP");
            else {
                rc = fail(d, CF_ERR_UNSUPPORTED, "unsupported ALTER TABLE ... ALTER column form");
                cf_err_detail(d->err, "only MASKED WITH ... and DROP MASKED are understood (Cassandra 4.0+ cannot change a column type)");
            }
        }
    } else if (accept_kw(d, "WITH")) {
        char **order = NULL;
        bool *desc = NULL;
        size_t n_order = 0;
        rc = table_options(d, t, &order, &desc, &n_order);
        if (!rc && n_order) rc = fail(d, CF_ERR_SCHEMA, "ALTER TABLE cannot change CLUSTERING ORDER");
        for (size_t k = 0; k < n_order; k++) free(order[k]);
        free(order);
        free(desc);
    } else {
        rc = fail(d, CF_ERR_UNSUPPORTED, "unsupported ALTER TABLE form");
        cf_err_detail(d->err, "only ALTER TABLE ... ADD, DROP [USING TIMESTAMP] and WITH are understood");
        cf_err_hint(d->err, "give the schema as DESCRIBE prints it (CREATE TABLE with the current columns)");
    }
    if (!rc) rc = end_statement(d, "ALTER TABLE");
    if (!rc) {
        rc = cf_cass_schema_add_table(d->s, t, d->err);
        t = NULL;
    }
    cf_cass_table_unref(t);
    free(ks);
    free(name);
    return rc;
}

/* ---- statements ---- */

static cf_code statement(ddl *d) {
    ws(d);
    size_t start = d->lx.pos;
    if (accept_ch(d, ';')) return CF_OK; /* empty statement */
    if (accept_kw(d, "USE")) {
        char *ks = NULL;
        cf_code rc = ident(d, &ks);
        if (rc) return rc;
        free(d->use_ks);
        d->use_ks = ks;
        return end_statement(d, "USE");
    }
    if (accept_kw(d, "CREATE")) {
        if (accept_kw(d, "KEYSPACE") || accept_kw(d, "SCHEMA")) return create_keyspace(d);
        if (accept_kw(d, "TYPE")) return create_type(d);
        if (accept_kw(d, "TABLE") || accept_kw(d, "COLUMNFAMILY")) return create_table(d, false);
        if (accept_kw(d, "OR")) { /* CREATE OR REPLACE FUNCTION/AGGREGATE */
            return skip_statement(d);
        }
        if (accept_kw(d, "MATERIALIZED")) {
            cf_code rc = expect_kw(d, "VIEW", "after MATERIALIZED");
            return rc ? rc : create_view(d);
        }
        if (peek_kw(d, "INDEX") || peek_kw(d, "CUSTOM") || peek_kw(d, "FUNCTION") || peek_kw(d, "AGGREGATE") ||
            peek_kw(d, "TRIGGER") || peek_kw(d, "ROLE") || peek_kw(d, "USER"))
            return skip_statement(d); /* no effect on how tables are written */
        return fail(d, CF_ERR_INVALID, "unknown CREATE statement");
    }
    if (accept_kw(d, "ALTER")) {
        if (accept_kw(d, "TABLE") || accept_kw(d, "COLUMNFAMILY")) return alter_table(d);
        if (peek_kw(d, "KEYSPACE")) { /* replication changes do not matter here */
            return skip_statement(d);
        }
        return fail(d, CF_ERR_UNSUPPORTED, "unsupported ALTER statement");
    }
    if (accept_kw(d, "DROP")) {
        if (accept_kw(d, "TABLE") || accept_kw(d, "COLUMNFAMILY")) {
            if (accept_kw(d, "IF")) {
                cf_code rc = expect_kw(d, "EXISTS", "after IF");
                if (rc) return rc;
            }
            char *ks = NULL, *name = NULL;
            cf_code rc = qualified(d, &ks, &name, "table");
            if (!rc) rc = end_statement(d, "DROP TABLE");
            if (!rc) cf_cass_schema_remove_table(d->s, ks, name);
            free(ks);
            free(name);
            return rc;
        }
        return fail(d, CF_ERR_UNSUPPORTED, "unsupported DROP statement");
    }
    if (peek_kw(d, "GRANT") || peek_kw(d, "REVOKE")) return skip_statement(d);
    d->lx.pos = start;
    return fail(d, CF_ERR_INVALID, "expected a CREATE, ALTER, DROP or USE statement");
}

cf_code cf_cass_ddl_parse(cf_cass_schema *s, const char *text, size_t len, const char *name, cf_err *err) {
    ddl d = {0};
    cf_cass_lexer_init(&d.lx, text, len, name ? name : "ddl");
    d.s = s;
    d.err = err;
    cf_code rc = CF_OK;
    for (;;) {
        if (at_end(&d)) break;
        rc = statement(&d);
        if (rc) break;
    }
    if (!rc && d.lx.unterminated_comment) rc = fail(&d, CF_ERR_INVALID, "unterminated /* comment");
    if (rc && err && err->detail[0] == '\0') {
        /* show the offending line */
        size_t ls = d.lx.pos, le = d.lx.pos;
        if (ls > len) ls = le = len;
        while (ls > 0 && text[ls - 1] != '\n') ls--;
        while (le < len && text[le] != '\n') le++;
        cf_err_detail(err, "line: %.*s", (int)(le - ls > 200 ? 200 : le - ls), text + ls);
    }
    free(d.use_ks);
    return rc;
}

cf_code cf_cass_ddl_parse_file(cf_cass_schema *s, const char *path, cf_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cf_err_set(err, CF_ERR_IO, "cannot open schema file %s: %s", path, strerror(errno));
        cf_err_where(err, "%s", path);
        return CF_ERR_IO;
    }
    cf_buf b = CF_BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) cf_buf_append(&b, chunk, n);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        cf_buf_free(&b);
        cf_err_set(err, CF_ERR_IO, "cannot read schema file %s", path);
        return CF_ERR_IO;
    }
    const char *base = strrchr(path, '/');
    cf_code rc = cf_cass_ddl_parse(s, b.data ? b.data : "", b.len, base ? base + 1 : path, err);
    cf_buf_free(&b);
    return rc;
}
