/*
 * fuzz_cassandra_ddl.c - the Cassandra schema inputs that come from outside:
 * DDL text (cf_cass_ddl_parse), CQL type strings (cf_cql_type_parse) and
 * system_schema rows as JSON (cf_cass_schema_load_system_json). The first
 * byte picks the parser; the model built is printed back and re-parsed so the
 * printer is exercised too. Any input must give CF_OK or a filled cf_err.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0] % 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    cf_cass_schema *s = cf_cass_schema_new();
    cf_err err;
    cf_code rc;
    if (mode == 0) {
        rc = cf_cass_ddl_parse(s, text, len, "fuzz", &err);
    } else if (mode == 1) {
        char *t = cf_xstrndup(text, len);
        cf_cql_type *ty = NULL;
        rc = cf_cql_type_parse(t, "ks", s, &ty, &err);
        if (rc == CF_OK) {
            char *p = cf_cql_type_to_string(ty);
            cf_cql_type *again = NULL;
            if (cf_cql_type_parse(p, "ks", s, &again, NULL) != CF_OK || !cf_cql_type_equal(ty, again)) abort();
            (void)cf_cql_type_fixed_length(ty);
            cf_cql_type_destroy(again);
            free(p);
        }
        cf_cql_type_destroy(ty);
        free(t);
    } else {
        rc = cf_cass_schema_load_system_json(s, text, len, &err);
    }
    if (rc != CF_OK && err.message[0] == '\0') abort();
    /* print what was built and parse it again (errors allowed: printed
     * COMPACT STORAGE tables carry their hidden columns) */
    cf_buf b = CF_BUF_INIT;
    for (size_t i = 0; i < cf_cass_schema_table_count(s); i++) cf_cass_table_append_cql(cf_cass_schema_table_at(s, i), &b);
    if (b.len) {
        rc = cf_cass_ddl_parse(s, b.data, b.len, "printed", &err);
        if (rc != CF_OK && err.message[0] == '\0') abort();
    }
    cf_buf_free(&b);
    cf_cass_schema_destroy(s);
    return 0;
}
