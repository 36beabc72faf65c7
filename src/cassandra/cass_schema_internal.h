/*
 * cass_schema_internal.h - pieces shared by the schema model, the type
 * parser and the DDL parser inside src/cassandra (not a public API): a small
 * CQL lexer that tracks positions for line:column error locations.
 */
#ifndef CDCFLOW_CASS_SCHEMA_INTERNAL_H
#define CDCFLOW_CASS_SCHEMA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "cdcflow/cassandra_schema.h"

typedef struct cf_cass_lexer {
    const char *text;
    size_t len;
    size_t pos;
    const char *name; /* for error locations */
    bool unterminated_comment;
} cf_cass_lexer;

void cf_cass_lexer_init(cf_cass_lexer *lx, const char *text, size_t len, const char *name);
void cf_cass_lexer_skip_ws(cf_cass_lexer *lx); /* whitespace and comments */
void cf_cass_lexer_pos(const cf_cass_lexer *lx, size_t pos, int *line, int *col);
void cf_cass_lexer_where(const cf_cass_lexer *lx, cf_err *err); /* name:line:col of lx->pos */
/* An identifier: unquoted (lower-cased) or "quoted" (exact, "" unescaped). */
cf_code cf_cass_lexer_ident(cf_cass_lexer *lx, char **out, bool *quoted, cf_err *err);
/* A 'string literal' ('' unescaped). */
cf_code cf_cass_lexer_string(cf_cass_lexer *lx, char **out, cf_err *err);
/* A CQL type at the lexer position. */
cf_code cf_cass_parse_type_lx(cf_cass_lexer *lx, const char *keyspace, const cf_cass_schema *types,
                              cf_cql_type **out, cf_err *err);
bool cf_cass_is_reserved(const char *word, size_t len);

#endif
