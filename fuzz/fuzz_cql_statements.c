/*
 * fuzz_cql_statements.c - libFuzzer target for the parser of the design's
 * CQL-style statements (CREATE/DROP DATA_SINK, CREATE/DROP DATA_SOURCE;
 * cf_sc_stmts_parse), which reads what `cdcflow cassandra exec` and POST
 * /api/v1/services/cdc/statements are given. Must never crash, leak or
 * read out of bounds; beyond that it checks what the header promises: an
 * error names a line and column inside the input ("line L, column C: ..."),
 * a success has at least one statement with the fields of its kind, and
 * the JSON form of any parsed list is valid JSON.
 * Seeds: fuzz/corpus/fuzz_cql_statements/.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/sidecar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cf_sc_stmts s;
    cf_err err;
    cf_err_clear(&err);
    cf_code rc = cf_sc_stmts_parse((const char *)data, size, &s, &err);
    if (rc) {
        char pre[64];
        snprintf(pre, sizeof pre, "line %d, column %d: ", s.err_line, s.err_column);
        int lines = 1;
        for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
        if (rc != CF_ERR_CONFIG || s.err_line < 1 || s.err_line > lines || s.err_column < 1 ||
            (size_t)s.err_column > size + 1 || strncmp(err.message, pre, strlen(pre)) != 0 || !err.hint[0])
            abort();
    } else {
        if (s.n == 0) abort();
        for (size_t i = 0; i < s.n; i++) {
            const cf_sc_stmt *st = &s.v[i];
            bool sink = st->kind == CF_SC_CREATE_SINK || st->kind == CF_SC_DROP_SINK;
            bool create = st->kind == CF_SC_CREATE_SINK || st->kind == CF_SC_CREATE_SOURCE;
            if (sink ? !st->name || st->keyspace : !st->keyspace || !st->table || st->name) abort();
            if (create != (st->options != NULL)) abort();
            if (st->kind == CF_SC_CREATE_SINK && (!st->uri || !st->servers || !st->topic || !st->servers[0])) abort();
            if (st->kind == CF_SC_CREATE_SOURCE && !st->sink) abort();
            if (st->line < 1 || st->column < 1) abort();
        }
        cf_buf b = CF_BUF_INIT;
        cf_sc_stmts_json(&s, &b);
        json_t *j = json_loadb(b.data, b.len, 0, NULL);
        if (!json_is_array(j) || json_array_size(j) != s.n) abort();
        json_decref(j);
        cf_buf_free(&b);
    }
    cf_sc_stmts_free(&s);
    return 0;
}
