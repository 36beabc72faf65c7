/*
 * cql_type.c - CQL type trees: parsing the type strings Cassandra prints
 * (DESCRIBE, system_schema.columns.type), printing them back, and the
 * properties the commit log decoder needs (fixed value length, multi-cell).
 *
 * Fixed lengths follow AbstractType.valueLengthIfFixed() of cassandra-all
 * 5.0.5 (checked by calling it, see tests/cassandra/test_schema_types.c):
 * note that date, time, smallint and tinyint are variable-length on disk
 * even though their values have a fixed size, because those types were
 * added after the format was fixed.
 */
#include "cdcflow/cassandra_schema.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cass_schema_internal.h"

static const char *const kind_names[CF_CQL_KIND_COUNT] = {
    [CF_CQL_ASCII] = "ascii",     [CF_CQL_BIGINT] = "bigint",     [CF_CQL_BLOB] = "blob",
    [CF_CQL_BOOLEAN] = "boolean", [CF_CQL_COUNTER] = "counter",   [CF_CQL_DATE] = "date",
    [CF_CQL_DECIMAL] = "decimal", [CF_CQL_DOUBLE] = "double",     [CF_CQL_DURATION] = "duration",
    [CF_CQL_FLOAT] = "float",     [CF_CQL_INET] = "inet",         [CF_CQL_INT] = "int",
    [CF_CQL_SMALLINT] = "smallint", [CF_CQL_TEXT] = "text",       [CF_CQL_TIME] = "time",
    [CF_CQL_TIMESTAMP] = "timestamp", [CF_CQL_TIMEUUID] = "timeuuid", [CF_CQL_TINYINT] = "tinyint",
    [CF_CQL_UUID] = "uuid",       [CF_CQL_VARINT] = "varint",     [CF_CQL_EMPTY] = "empty",
    [CF_CQL_LIST] = "list",       [CF_CQL_SET] = "set",           [CF_CQL_MAP] = "map",
    [CF_CQL_TUPLE] = "tuple",     [CF_CQL_UDT] = "udt",           [CF_CQL_VECTOR] = "vector",
    [CF_CQL_CUSTOM] = "custom",
};

const char *cf_cql_kind_name(cf_cql_kind kind) {
    if ((unsigned)kind >= CF_CQL_KIND_COUNT) return "?";
    return kind_names[kind];
}

cf_cql_type *cf_cql_type_new(cf_cql_kind kind) {
    cf_cql_type *t = cf_xcalloc(1, sizeof *t);
    t->kind = kind;
    if (kind == CF_CQL_TUPLE || kind == CF_CQL_VECTOR) t->frozen = true;
    return t;
}

void cf_cql_type_destroy(cf_cql_type *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n_params; i++) {
        cf_cql_type_destroy(t->params[i]);
        if (t->field_names) free(t->field_names[i]);
    }
    free(t->params);
    free(t->field_names);
    free(t->keyspace);
    free(t->name);
    free(t);
}

cf_cql_type *cf_cql_type_clone(const cf_cql_type *t) {
    if (!t) return NULL;
    cf_cql_type *c = cf_xcalloc(1, sizeof *c);
    c->kind = t->kind;
    c->frozen = t->frozen;
    c->dimension = t->dimension;
    c->keyspace = t->keyspace ? cf_xstrdup(t->keyspace) : NULL;
    c->name = t->name ? cf_xstrdup(t->name) : NULL;
    c->n_params = t->n_params;
    if (t->n_params) {
        c->params = cf_xcalloc(t->n_params, sizeof *c->params);
        for (size_t i = 0; i < t->n_params; i++) c->params[i] = cf_cql_type_clone(t->params[i]);
        if (t->field_names) {
            c->field_names = cf_xcalloc(t->n_params, sizeof *c->field_names);
            for (size_t i = 0; i < t->n_params; i++) c->field_names[i] = cf_xstrdup(t->field_names[i]);
        }
    }
    return c;
}

static bool streq_null(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

bool cf_cql_type_equal(const cf_cql_type *a, const cf_cql_type *b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (a->kind != b->kind || a->frozen != b->frozen || a->n_params != b->n_params ||
        a->dimension != b->dimension)
        return false;
    if (!streq_null(a->keyspace, b->keyspace) || !streq_null(a->name, b->name)) return false;
    for (size_t i = 0; i < a->n_params; i++) {
        if (!cf_cql_type_equal(a->params[i], b->params[i])) return false;
        if ((a->field_names == NULL) != (b->field_names == NULL)) return false;
        if (a->field_names && strcmp(a->field_names[i], b->field_names[i]) != 0) return false;
    }
    return true;
}

/* ---- properties ---- */

int32_t cf_cql_type_fixed_length(const cf_cql_type *t) {
    if (!t) return -1;
    switch (t->kind) {
    case CF_CQL_BOOLEAN: return 1;
    case CF_CQL_INT:
    case CF_CQL_FLOAT: return 4;
    case CF_CQL_BIGINT:
    case CF_CQL_DOUBLE:
    case CF_CQL_TIMESTAMP: return 8;
    case CF_CQL_UUID:
    case CF_CQL_TIMEUUID: return 16;
    case CF_CQL_EMPTY: return 0;
    case CF_CQL_VECTOR: {
        int32_t e = cf_cql_type_fixed_length(t->n_params ? t->params[0] : NULL);
        if (e < 0 || t->dimension <= 0) return -1;
        if ((int64_t)e * t->dimension > INT32_MAX) return -1;
        return e * t->dimension;
    }
    case CF_CQL_CUSTOM:
        /* The few non-CQL marshal types with a fixed length that DESCRIBE
         * prints as custom types. */
        if (t->name) {
            const char *n = strrchr(t->name, '.');
            n = n ? n + 1 : t->name;
            if (strcmp(n, "LexicalUUIDType") == 0) return 16;
            if (strcmp(n, "DateType") == 0) return 8;
        }
        return -1;
    default: return -1;
    }
}

bool cf_cql_type_is_collection(const cf_cql_type *t) {
    return t && (t->kind == CF_CQL_LIST || t->kind == CF_CQL_SET || t->kind == CF_CQL_MAP);
}

bool cf_cql_type_is_multicell(const cf_cql_type *t) {
    return t && !t->frozen && (cf_cql_type_is_collection(t) || t->kind == CF_CQL_UDT);
}

bool cf_cql_type_is_counter(const cf_cql_type *t) { return t && t->kind == CF_CQL_COUNTER; }

const cf_cql_type *cf_cql_type_element(const cf_cql_type *t) {
    if (!t || t->n_params < 1) return NULL;
    if (t->kind == CF_CQL_LIST || t->kind == CF_CQL_SET || t->kind == CF_CQL_VECTOR) return t->params[0];
    return NULL;
}
const cf_cql_type *cf_cql_type_key(const cf_cql_type *t) {
    return (t && t->kind == CF_CQL_MAP && t->n_params == 2) ? t->params[0] : NULL;
}
const cf_cql_type *cf_cql_type_value(const cf_cql_type *t) {
    return (t && t->kind == CF_CQL_MAP && t->n_params == 2) ? t->params[1] : NULL;
}
size_t cf_cql_type_field_count(const cf_cql_type *t) {
    return (t && (t->kind == CF_CQL_TUPLE || t->kind == CF_CQL_UDT)) ? t->n_params : 0;
}
const cf_cql_type *cf_cql_type_field(const cf_cql_type *t, size_t i) {
    return i < cf_cql_type_field_count(t) ? t->params[i] : NULL;
}
const char *cf_cql_type_field_name(const cf_cql_type *t, size_t i) {
    if (!t || t->kind != CF_CQL_UDT || i >= t->n_params || !t->field_names) return NULL;
    return t->field_names[i];
}

/* ---- identifiers ---- */

static const char *const reserved[] = {
    /* org/apache/cassandra/cql3/reserved_keywords.txt of cassandra-all 5.0.5 */
    "add", "allow", "alter", "and", "apply", "asc", "authorize", "batch", "begin", "by",
    "columnfamily", "create", "delete", "desc", "describe", "drop", "entries", "execute", "from",
    "full", "grant", "if", "in", "index", "infinity", "insert", "into", "is", "keyspace", "limit",
    "materialized", "modify", "nan", "norecursive", "not", "null", "of", "on", "or", "order",
    "primary", "rename", "revoke", "schema", "select", "set", "table", "to", "token", "truncate",
    "unlogged", "update", "use", "using", "view", "where", "with", NULL};

bool cf_cass_is_reserved(const char *word, size_t len) {
    for (size_t i = 0; reserved[i]; i++)
        if (strlen(reserved[i]) == len && strncasecmp(reserved[i], word, len) == 0) return true;
    return false;
}

void cf_cql_append_identifier(const char *name, cf_buf *b) {
    bool plain = name[0] >= 'a' && name[0] <= 'z';
    for (const char *p = name; plain && *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) plain = false;
    if (plain && !cf_cass_is_reserved(name, strlen(name))) {
        cf_buf_append_str(b, name);
        return;
    }
    cf_buf_append_byte(b, '"');
    for (const char *p = name; *p; p++) {
        if (*p == '"') cf_buf_append_byte(b, '"');
        cf_buf_append_byte(b, (uint8_t)*p);
    }
    cf_buf_append_byte(b, '"');
}

/* ---- printing ---- */

static void append_inner(const cf_cql_type *t, cf_buf *b);

void cf_cql_type_append(const cf_cql_type *t, cf_buf *b) {
    if (!t) return;
    /* Cassandra 4.0+ prints tuples as frozen<tuple<...>> (TupleType is
     * always frozen); vectors print bare. */
    bool wrap = t->frozen && (cf_cql_type_is_collection(t) || t->kind == CF_CQL_UDT ||
                              t->kind == CF_CQL_TUPLE);
    if (wrap) cf_buf_append_str(b, "frozen<");
    append_inner(t, b);
    if (wrap) cf_buf_append_byte(b, '>');
}

static void append_inner(const cf_cql_type *t, cf_buf *b) {
    switch (t->kind) {
    case CF_CQL_LIST:
    case CF_CQL_SET:
    case CF_CQL_MAP:
    case CF_CQL_TUPLE:
        cf_buf_append_str(b, kind_names[t->kind]);
        cf_buf_append_byte(b, '<');
        for (size_t i = 0; i < t->n_params; i++) {
            if (i) cf_buf_append_str(b, ", ");
            cf_cql_type_append(t->params[i], b);
        }
        cf_buf_append_byte(b, '>');
        break;
    case CF_CQL_VECTOR:
        cf_buf_append_str(b, "vector<");
        cf_cql_type_append(t->n_params ? t->params[0] : NULL, b);
        cf_buf_printf(b, ", %d>", (int)t->dimension);
        break;
    case CF_CQL_UDT: cf_cql_append_identifier(t->name ? t->name : "?", b); break;
    case CF_CQL_CUSTOM:
        cf_buf_append_byte(b, '\'');
        for (const char *p = t->name ? t->name : ""; *p; p++) {
            if (*p == '\'') cf_buf_append_byte(b, '\'');
            cf_buf_append_byte(b, (uint8_t)*p);
        }
        cf_buf_append_byte(b, '\'');
        break;
    default: cf_buf_append_str(b, kind_names[t->kind]); break;
    }
}

char *cf_cql_type_to_string(const cf_cql_type *t) {
    cf_buf b = CF_BUF_INIT;
    cf_cql_type_append(t, &b);
    if (!b.data) cf_buf_append_str(&b, "");
    return cf_buf_detach(&b, NULL);
}

/* ---- parsing ---- */

static const struct {
    const char *name;
    cf_cql_kind kind;
} native_names[] = {
    {"ascii", CF_CQL_ASCII},       {"bigint", CF_CQL_BIGINT},     {"blob", CF_CQL_BLOB},
    {"boolean", CF_CQL_BOOLEAN},   {"counter", CF_CQL_COUNTER},   {"date", CF_CQL_DATE},
    {"decimal", CF_CQL_DECIMAL},   {"double", CF_CQL_DOUBLE},     {"duration", CF_CQL_DURATION},
    {"float", CF_CQL_FLOAT},       {"inet", CF_CQL_INET},         {"int", CF_CQL_INT},
    {"smallint", CF_CQL_SMALLINT}, {"text", CF_CQL_TEXT},         {"varchar", CF_CQL_TEXT},
    {"time", CF_CQL_TIME},         {"timestamp", CF_CQL_TIMESTAMP}, {"timeuuid", CF_CQL_TIMEUUID},
    {"tinyint", CF_CQL_TINYINT},   {"uuid", CF_CQL_UUID},         {"varint", CF_CQL_VARINT},
    {"empty", CF_CQL_EMPTY},
};

/* marshal classes of the native CQL types (AbstractType subclasses) */
static const struct {
    const char *name;
    cf_cql_kind kind;
} marshal_names[] = {
    {"AsciiType", CF_CQL_ASCII},     {"LongType", CF_CQL_BIGINT},          {"BytesType", CF_CQL_BLOB},
    {"BooleanType", CF_CQL_BOOLEAN}, {"CounterColumnType", CF_CQL_COUNTER}, {"SimpleDateType", CF_CQL_DATE},
    {"DecimalType", CF_CQL_DECIMAL}, {"DoubleType", CF_CQL_DOUBLE},        {"DurationType", CF_CQL_DURATION},
    {"FloatType", CF_CQL_FLOAT},     {"InetAddressType", CF_CQL_INET},     {"Int32Type", CF_CQL_INT},
    {"ShortType", CF_CQL_SMALLINT},  {"UTF8Type", CF_CQL_TEXT},            {"TimeType", CF_CQL_TIME},
    {"TimestampType", CF_CQL_TIMESTAMP}, {"TimeUUIDType", CF_CQL_TIMEUUID}, {"ByteType", CF_CQL_TINYINT},
    {"UUIDType", CF_CQL_UUID},       {"IntegerType", CF_CQL_VARINT},       {"EmptyType", CF_CQL_EMPTY},
};

static void skip_ws(cf_cass_lexer *lx);

/* Freeze a type and everything under it: what Cassandra does to types nested
 * in collections, tuples, UDT fields and vectors. */
static void freeze_all(cf_cql_type *t) {
    if (!t) return;
    if (cf_cql_type_is_collection(t) || t->kind == CF_CQL_UDT || t->kind == CF_CQL_TUPLE ||
        t->kind == CF_CQL_VECTOR)
        t->frozen = true;
    for (size_t i = 0; i < t->n_params; i++) freeze_all(t->params[i]);
}

static cf_code parse_type(cf_cass_lexer *lx, const char *keyspace, const cf_cass_schema *types,
                          int depth, cf_cql_type **out, cf_err *err);

static cf_code expect_char(cf_cass_lexer *lx, char c, const char *what, cf_err *err) {
    skip_ws(lx);
    if (lx->pos < lx->len && lx->text[lx->pos] == c) {
        lx->pos++;
        return CF_OK;
    }
    cf_err_set(err, CF_ERR_INVALID, "invalid CQL type: expected '%c' %s", c, what);
    cf_cass_lexer_where(lx, err);
    return CF_ERR_INVALID;
}

static cf_code parse_params(cf_cass_lexer *lx, const char *keyspace, const cf_cass_schema *types,
                            int depth, cf_cql_type *t, size_t min, size_t max, cf_err *err) {
    cf_code rc = expect_char(lx, '<', "after the collection or tuple name", err);
    if (rc) return rc;
    size_t cap = 0;
    for (;;) {
        cf_cql_type *p = NULL;
        rc = parse_type(lx, keyspace, types, depth + 1, &p, err);
        if (rc) return rc;
        freeze_all(p);
        if (t->n_params == cap) {
            cap = cap ? cap * 2 : 2;
            t->params = cf_xrealloc(t->params, cap * sizeof *t->params);
        }
        t->params[t->n_params++] = p;
        skip_ws(lx);
        if (lx->pos < lx->len && lx->text[lx->pos] == ',') {
            if (t->kind == CF_CQL_VECTOR) break; /* dimension follows */
            lx->pos++;
            continue;
        }
        break;
    }
    if (t->n_params < min || t->n_params > max) {
        cf_err_set(err, CF_ERR_INVALID, "invalid CQL type: %s takes %zu%s type parameter%s, got %zu",
                   kind_names[t->kind], min, max > min ? " or more" : "", min == 1 && max == 1 ? "" : "s",
                   t->n_params);
        cf_cass_lexer_where(lx, err);
        return CF_ERR_INVALID;
    }
    if (t->kind == CF_CQL_VECTOR) {
        rc = expect_char(lx, ',', "before the vector dimension", err);
        if (rc) return rc;
        skip_ws(lx);
        size_t start = lx->pos;
        long long dim = 0;
        while (lx->pos < lx->len && isdigit((unsigned char)lx->text[lx->pos]) && dim <= INT32_MAX)
            dim = dim * 10 + (lx->text[lx->pos++] - '0');
        if (lx->pos == start || dim <= 0 || dim > INT32_MAX) {
            cf_err_set(err, CF_ERR_INVALID, "invalid CQL type: vector dimension must be a positive integer");
            cf_cass_lexer_where(lx, err);
            return CF_ERR_INVALID;
        }
        t->dimension = (int32_t)dim;
    }
    return expect_char(lx, '>', "to close the type parameters", err);
}

static cf_code resolve_udt(cf_cass_lexer *lx, const char *ks, const char *name,
                           const cf_cass_schema *types, cf_cql_type **out, cf_err *err) {
    const cf_cass_udt *u = (types && ks) ? cf_cass_schema_udt(types, ks, name) : NULL;
    if (!u) {
        cf_err_set(err, CF_ERR_NOT_FOUND, "unknown CQL type \"%s\"", name);
        cf_err_detail(err, "no native type of that name and no user type %s.%s is defined", ks ? ks : "?",
                      name);
        cf_err_hint(err, "put the CREATE TYPE statement before the tables that use it");
        cf_cass_lexer_where(lx, err);
        return CF_ERR_NOT_FOUND;
    }
    cf_cql_type *t = cf_cql_type_new(CF_CQL_UDT);
    t->keyspace = cf_xstrdup(u->keyspace);
    t->name = cf_xstrdup(u->name);
    t->n_params = u->n_fields;
    if (u->n_fields) {
        t->params = cf_xcalloc(u->n_fields, sizeof *t->params);
        t->field_names = cf_xcalloc(u->n_fields, sizeof *t->field_names);
        for (size_t i = 0; i < u->n_fields; i++) {
            t->params[i] = cf_cql_type_clone(u->field_types[i]);
            freeze_all(t->params[i]);
            t->field_names[i] = cf_xstrdup(u->field_names[i]);
        }
    }
    *out = t;
    return CF_OK;
}

static cf_code parse_type(cf_cass_lexer *lx, const char *keyspace, const cf_cass_schema *types,
                          int depth, cf_cql_type **out, cf_err *err) {
    *out = NULL;
    if (depth > 64) {
        cf_err_set(err, CF_ERR_INVALID, "invalid CQL type: nested more than 64 levels deep");
        cf_cass_lexer_where(lx, err);
        return CF_ERR_INVALID;
    }
    skip_ws(lx);
    if (lx->pos < lx->len && lx->text[lx->pos] == '\'') {
        /* custom type: a quoted marshal class name */
        char *s = NULL;
        cf_code rc = cf_cass_lexer_string(lx, &s, err);
        if (rc) return rc;
        /* a quoted marshal class that is really a CQL type (3.x prints
         * EmptyType this way): map it to the native kind */
        const char *cls = strncmp(s, "org.apache.cassandra.db.marshal.", 32) == 0 ? s + 32 : s;
        for (size_t i = 0; i < sizeof marshal_names / sizeof marshal_names[0]; i++)
            if (strcmp(cls, marshal_names[i].name) == 0) {
                free(s);
                *out = cf_cql_type_new(marshal_names[i].kind);
                return CF_OK;
            }
        cf_cql_type *t = cf_cql_type_new(CF_CQL_CUSTOM);
        t->name = s;
        *out = t;
        return CF_OK;
    }
    char *id = NULL;
    bool quoted = false;
    size_t start = lx->pos;
    cf_code rc = cf_cass_lexer_ident(lx, &id, &quoted, err);
    if (rc) {
        if (err) snprintf(err->message, sizeof err->message, "invalid CQL type: expected a type name");
        return rc;
    }
    if (!quoted) {
        for (size_t i = 0; i < sizeof native_names / sizeof native_names[0]; i++)
            if (strcmp(id, native_names[i].name) == 0) {
                free(id);
                *out = cf_cql_type_new(native_names[i].kind);
                return CF_OK;
            }
        cf_cql_kind k = CF_CQL_KIND_COUNT;
        if (strcmp(id, "list") == 0) k = CF_CQL_LIST;
        else if (strcmp(id, "set") == 0) k = CF_CQL_SET;
        else if (strcmp(id, "map") == 0) k = CF_CQL_MAP;
        else if (strcmp(id, "tuple") == 0) k = CF_CQL_TUPLE;
        else if (strcmp(id, "vector") == 0) k = CF_CQL_VECTOR;
        if (k != CF_CQL_KIND_COUNT) {
            free(id);
            cf_cql_type *t = cf_cql_type_new(k);
            size_t min = 1, max = 1;
            if (k == CF_CQL_MAP) min = max = 2;
            if (k == CF_CQL_TUPLE) max = SIZE_MAX;
            rc = parse_params(lx, keyspace, types, depth, t, min, max, err);
            if (rc) {
                cf_cql_type_destroy(t);
                return rc;
            }
            *out = t;
            return CF_OK;
        }
        if (strcmp(id, "frozen") == 0) {
            free(id);
            rc = expect_char(lx, '<', "after frozen", err);
            if (rc) return rc;
            cf_cql_type *t = NULL;
            rc = parse_type(lx, keyspace, types, depth + 1, &t, err);
            if (rc) return rc;
            rc = expect_char(lx, '>', "to close frozen<...>", err);
            if (rc) {
                cf_cql_type_destroy(t);
                return rc;
            }
            if (!(cf_cql_type_is_collection(t) || t->kind == CF_CQL_UDT || t->kind == CF_CQL_TUPLE ||
                  t->kind == CF_CQL_VECTOR)) {
                char *s = cf_cql_type_to_string(t);
                cf_err_set(err, CF_ERR_INVALID, "invalid CQL type: frozen<> is only allowed on collections, tuples and user types");
                cf_err_detail(err, "got frozen<%s>", s);
                free(s);
                cf_cass_lexer_where(lx, err);
                cf_cql_type_destroy(t);
                return CF_ERR_INVALID;
            }
            freeze_all(t);
            *out = t;
            return CF_OK;
        }
    }
    /* a user type: name or ks.name */
    char *ks = NULL;
    skip_ws(lx);
    if (lx->pos < lx->len && lx->text[lx->pos] == '.') {
        lx->pos++;
        ks = id;
        id = NULL;
        rc = cf_cass_lexer_ident(lx, &id, &quoted, err);
        if (rc) {
            free(ks);
            return rc;
        }
    }
    size_t after = lx->pos;
    lx->pos = start; /* an unknown type is reported where its name starts */
    rc = resolve_udt(lx, ks ? ks : keyspace, id, types, out, err);
    if (rc == CF_OK) lx->pos = after;
    free(ks);
    free(id);
    return rc;
}

cf_code cf_cass_parse_type_lx(cf_cass_lexer *lx, const char *keyspace, const cf_cass_schema *types,
                              cf_cql_type **out, cf_err *err) {
    return parse_type(lx, keyspace, types, 0, out, err);
}

cf_code cf_cql_type_parse(const char *text, const char *keyspace, const cf_cass_schema *types,
                          cf_cql_type **out, cf_err *err) {
    *out = NULL;
    if (!text) return cf_err_set(err, CF_ERR_INVALID, "invalid CQL type: NULL");
    cf_cass_lexer lx;
    cf_cass_lexer_init(&lx, text, strlen(text), "type");
    cf_code rc = parse_type(&lx, keyspace, types, 0, out, err);
    if (rc) {
        if (err && err->detail[0] == '\0') cf_err_detail(err, "type text: %s", text);
        return rc;
    }
    skip_ws(&lx);
    if (lx.pos != lx.len) {
        cf_cql_type_destroy(*out);
        *out = NULL;
        cf_err_set(err, CF_ERR_INVALID, "invalid CQL type: unexpected text after the type");
        cf_err_detail(err, "type text: %s", text);
        cf_cass_lexer_where(&lx, err);
        return CF_ERR_INVALID;
    }
    return CF_OK;
}

/* ---- the small lexer shared with the DDL parser ---- */

void cf_cass_lexer_init(cf_cass_lexer *lx, const char *text, size_t len, const char *name) {
    memset(lx, 0, sizeof *lx);
    lx->text = text;
    lx->len = len;
    lx->name = name ? name : "input";
}

void cf_cass_lexer_pos(const cf_cass_lexer *lx, size_t pos, int *line, int *col) {
    int l = 1, c = 1;
    for (size_t i = 0; i < pos && i < lx->len; i++) {
        if (lx->text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

void cf_cass_lexer_where(const cf_cass_lexer *lx, cf_err *err) {
    if (!err) return;
    int line, col;
    cf_cass_lexer_pos(lx, lx->pos, &line, &col);
    cf_err_where(err, "%s:%d:%d", lx->name, line, col);
}

static void skip_ws(cf_cass_lexer *lx) {
    for (;;) {
        while (lx->pos < lx->len && isspace((unsigned char)lx->text[lx->pos])) lx->pos++;
        if (lx->pos + 1 < lx->len && ((lx->text[lx->pos] == '-' && lx->text[lx->pos + 1] == '-') ||
                                      (lx->text[lx->pos] == '/' && lx->text[lx->pos + 1] == '/'))) {
            while (lx->pos < lx->len && lx->text[lx->pos] != '\n') lx->pos++;
            continue;
        }
        if (lx->pos + 1 < lx->len && lx->text[lx->pos] == '/' && lx->text[lx->pos + 1] == '*') {
            const char *end = NULL;
            for (size_t i = lx->pos + 2; i + 1 < lx->len; i++)
                if (lx->text[i] == '*' && lx->text[i + 1] == '/') {
                    end = lx->text + i;
                    break;
                }
            if (!end) {
                lx->unterminated_comment = true;
                lx->pos = lx->len;
                return;
            }
            lx->pos = (size_t)(end - lx->text) + 2;
            continue;
        }
        return;
    }
}

void cf_cass_lexer_skip_ws(cf_cass_lexer *lx) { skip_ws(lx); }

cf_code cf_cass_lexer_ident(cf_cass_lexer *lx, char **out, bool *quoted, cf_err *err) {
    skip_ws(lx);
    *out = NULL;
    *quoted = false;
    if (lx->pos >= lx->len) {
        cf_err_set(err, CF_ERR_INVALID, "expected an identifier, got end of input");
        cf_cass_lexer_where(lx, err);
        return CF_ERR_INVALID;
    }
    char c = lx->text[lx->pos];
    if (c == '"') {
        size_t start = lx->pos;
        cf_buf b = CF_BUF_INIT;
        lx->pos++;
        for (;;) {
            if (lx->pos >= lx->len) {
                cf_buf_free(&b);
                lx->pos = start;
                cf_err_set(err, CF_ERR_INVALID, "unterminated quoted identifier");
                cf_cass_lexer_where(lx, err);
                return CF_ERR_INVALID;
            }
            char d = lx->text[lx->pos++];
            if (d == '"') {
                if (lx->pos < lx->len && lx->text[lx->pos] == '"') {
                    cf_buf_append_byte(&b, '"');
                    lx->pos++;
                    continue;
                }
                break;
            }
            cf_buf_append_byte(&b, (uint8_t)d);
        }
        if (b.len == 0) {
            cf_buf_free(&b);
            lx->pos = start;
            cf_err_set(err, CF_ERR_INVALID, "empty quoted identifier \"\"");
            cf_cass_lexer_where(lx, err);
            return CF_ERR_INVALID;
        }
        *out = cf_buf_detach(&b, NULL);
        *quoted = true;
        return CF_OK;
    }
    if (!(isalpha((unsigned char)c) || c == '_')) {
        cf_err_set(err, CF_ERR_INVALID, "expected an identifier, got '%c'", c);
        cf_cass_lexer_where(lx, err);
        return CF_ERR_INVALID;
    }
    size_t start = lx->pos;
    while (lx->pos < lx->len &&
           (isalnum((unsigned char)lx->text[lx->pos]) || lx->text[lx->pos] == '_'))
        lx->pos++;
    char *s = cf_xstrndup(lx->text + start, lx->pos - start);
    /* unquoted identifiers are case-insensitive: Cassandra lower-cases them */
    for (char *p = s; *p; p++) *p = (char)tolower((unsigned char)*p);
    *out = s;
    return CF_OK;
}

cf_code cf_cass_lexer_string(cf_cass_lexer *lx, char **out, cf_err *err) {
    skip_ws(lx);
    *out = NULL;
    size_t start = lx->pos;
    if (lx->pos >= lx->len || lx->text[lx->pos] != '\'') {
        cf_err_set(err, CF_ERR_INVALID, "expected a string literal");
        cf_cass_lexer_where(lx, err);
        return CF_ERR_INVALID;
    }
    lx->pos++;
    cf_buf b = CF_BUF_INIT;
    for (;;) {
        if (lx->pos >= lx->len) {
            cf_buf_free(&b);
            lx->pos = start;
            cf_err_set(err, CF_ERR_INVALID, "unterminated string literal");
            cf_cass_lexer_where(lx, err);
            return CF_ERR_INVALID;
        }
        char d = lx->text[lx->pos++];
        if (d == '\'') {
            if (lx->pos < lx->len && lx->text[lx->pos] == '\'') {
                cf_buf_append_byte(&b, '\'');
                lx->pos++;
                continue;
            }
            break;
        }
        cf_buf_append_byte(&b, (uint8_t)d);
    }
    if (!b.data) cf_buf_append_str(&b, "");
    *out = cf_buf_detach(&b, NULL);
    return CF_OK;
}
