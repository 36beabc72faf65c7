/*
 * cass_system_schema.c - build the schema model from the rows of
 * system_schema.{keyspaces,tables,columns,dropped_columns,types} as
 * `SELECT JSON *` returns them (Cassandra 3.0+). The CQL client asks for
 * exactly that, and the fixtures record it (tests/data/cassandra/<case>/
 * system_schema.json), so one code path serves both.
 *
 * Row shapes (Cassandra's SchemaKeyspace): columns carry kind
 * ("partition_key", "clustering", "regular", "static"), position, the CQL
 * type text and clustering_order ("asc", "desc", "none"); tables carry id
 * and flags (a set of "compound", "dense", "super", "counter"); dropped
 * columns carry dropped_time as a timestamp ("2026-11-29 19:00:41.374Z").
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cass_schema_internal.h"
#include "cdcflow/cassandra_schema.h"

static const char *jstr(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static cf_code need(cf_err *err, const char *table, size_t row, const char *field) {
    cf_err_set(err, CF_ERR_SCHEMA, "system_schema.%s row %zu has no usable \"%s\"", table, row, field);
    cf_err_where(err, "system_schema.%s[%zu].%s", table, row, field);
    return CF_ERR_SCHEMA;
}

/* "2026-11-29 19:00:41.374Z" (SELECT JSON's timestamp text) -> microseconds */
static bool parse_ts_us(json_t *v, int64_t *out) {
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v) * 1000;
        return true;
    }
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    if (!s) return false;
    int y, mo, d, h, mi, sec, n = 0;
    if (sscanf(s, "%d-%d-%d %d:%d:%d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6) return false;
    int64_t ms = 0;
    const char *p = s + n;
    if (*p == '.') {
        int digits = 0;
        p++;
        while (*p >= '0' && *p <= '9') {
            if (digits < 3) ms = ms * 10 + (*p - '0');
            digits++;
            p++;
        }
        while (digits < 3) ms *= 10, digits++;
    }
    int64_t off_s = 0;
    if (*p == 'Z') p++;
    else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        int oh = 0, om = 0;
        if (sscanf(p + 1, "%2d%*[:]%2d", &oh, &om) < 1 && sscanf(p + 1, "%2d%2d", &oh, &om) < 1) return false;
        off_s = sign * (oh * 3600 + om * 60);
        p += strlen(p);
    }
    if (*p) return false;
    /* days from civil (Howard Hinnant's algorithm), no timezone state */
    int yy = y - (mo <= 2);
    int era = (yy >= 0 ? yy : yy - 399) / 400;
    unsigned yoe = (unsigned)(yy - era * 400);
    unsigned doy = (unsigned)((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1);
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = (int64_t)era * 146097 + (int64_t)doe - 719468;
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - off_s;
    *out = (secs * 1000 + ms) * 1000;
    return true;
}

static cf_code load_types(cf_cass_schema *s, json_t *types, cf_err *err) {
    size_t n = json_array_size(types);
    bool *done = calloc(n ? n : 1, sizeof *done);
    size_t left = n;
    /* a type may use another type: load in rounds until nothing is left */
    while (left) {
        size_t progress = 0;
        cf_err last;
        cf_err_clear(&last);
        for (size_t i = 0; i < n; i++) {
            if (done[i]) continue;
            json_t *r = json_array_get(types, i);
            const char *ks = jstr(r, "keyspace_name"), *name = jstr(r, "type_name");
            json_t *fn = json_object_get(r, "field_names"), *ft = json_object_get(r, "field_types");
            if (!ks || !name || !json_is_array(fn) || !json_is_array(ft) || json_array_size(fn) != json_array_size(ft)) {
                free(done);
                return need(err, "types", i, !ks ? "keyspace_name" : !name ? "type_name" : "field_names/field_types");
            }
            size_t nf = json_array_size(fn);
            const char **names = cf_xcalloc(nf ? nf : 1, sizeof *names);
            cf_cql_type **tys = cf_xcalloc(nf ? nf : 1, sizeof *tys);
            cf_code rc = CF_OK;
            size_t k;
            for (k = 0; k < nf && !rc; k++) {
                names[k] = json_string_value(json_array_get(fn, k));
                const char *tt = json_string_value(json_array_get(ft, k));
                if (!names[k] || !tt) {
                    rc = need(err, "types", i, "field_names/field_types");
                    break;
                }
                rc = cf_cql_type_parse(tt, ks, s, &tys[k], &last);
            }
            if (rc == CF_ERR_NOT_FOUND) { /* depends on a type not loaded yet */
                for (size_t j = 0; j < nf; j++) cf_cql_type_destroy(tys[j]);
                free(names), free(tys);
                continue;
            }
            if (rc) {
                if (err && rc != CF_ERR_SCHEMA) {
                    *err = last;
                    cf_err_where(err, "system_schema.types[%zu] %s.%s field %zu", i, ks, name, k);
                }
                for (size_t j = 0; j < nf; j++) cf_cql_type_destroy(tys[j]);
                free(names), free(tys), free(done);
                return rc;
            }
            rc = cf_cass_schema_put_udt(s, ks, name, names, tys, nf, err);
            free(names), free(tys);
            if (rc) {
                free(done);
                return rc;
            }
            done[i] = true;
            left--;
            progress++;
        }
        if (!progress) {
            if (err) {
                *err = last;
                cf_err_detail(err, "%zu user type(s) use types that are not defined (or each other in a cycle)", left);
            }
            free(done);
            return CF_ERR_NOT_FOUND;
        }
    }
    free(done);
    return CF_OK;
}

static bool has_flag(json_t *flags, const char *f) {
    size_t i;
    json_t *v;
    json_array_foreach(flags, i, v) if (json_is_string(v) && strcmp(json_string_value(v), f) == 0) return true;
    return false;
}

static cf_code load_table(cf_cass_schema *s, json_t *tr, size_t ti, json_t *columns, json_t *dropped, bool is_view,
                          cf_err *err) {
    const char *tabname = is_view ? "views" : "tables";
    const char *ks = jstr(tr, "keyspace_name");
    const char *name = jstr(tr, is_view ? "view_name" : "table_name");
    const char *id = jstr(tr, "id");
    if (!ks) return need(err, tabname, ti, "keyspace_name");
    if (!name) return need(err, tabname, ti, is_view ? "view_name" : "table_name");
    uint8_t idb[16];
    if (!id || !cf_cass_uuid_parse(id, strlen(id), idb)) return need(err, tabname, ti, "id");
    cf_cass_table *t = cf_cass_table_new(ks, name);
    cf_cass_table_set_id(t, idb);
    t->is_view = is_view;
    json_t *flags = json_object_get(tr, "flags");
    if (json_is_array(flags)) {
        t->compound = has_flag(flags, "compound");
        t->dense = has_flag(flags, "dense");
        t->super = has_flag(flags, "super");
        t->counter = has_flag(flags, "counter");
        t->compact_storage = t->super || t->dense || !t->compound;
    }
    json_t *cdc = json_object_get(tr, "cdc");
    t->cdc = json_is_true(cdc);
    size_t i;
    json_t *c;
    cf_code rc = CF_OK;
    json_array_foreach(columns, i, c) {
        const char *cks = jstr(c, "keyspace_name"), *ctn = jstr(c, "table_name");
        if (!cks || !ctn) {
            rc = need(err, "columns", i, !cks ? "keyspace_name" : "table_name");
            break;
        }
        if (strcmp(cks, ks) || strcmp(ctn, name)) continue;
        const char *cn = jstr(c, "column_name"), *kind = jstr(c, "kind"), *type = jstr(c, "type");
        const char *order = jstr(c, "clustering_order");
        json_t *pos = json_object_get(c, "position");
        if (!cn || !kind || !type) {
            rc = need(err, "columns", i, !cn ? "column_name" : !kind ? "kind" : "type");
            break;
        }
        cf_cass_column_kind k;
        if (strcmp(kind, "partition_key") == 0) k = CF_CASS_PARTITION_KEY;
        else if (strcmp(kind, "clustering") == 0) k = CF_CASS_CLUSTERING;
        else if (strcmp(kind, "regular") == 0) k = CF_CASS_REGULAR;
        else if (strcmp(kind, "static") == 0) k = CF_CASS_STATIC;
        else {
            cf_err_set(err, CF_ERR_SCHEMA, "system_schema.columns row %zu: unknown kind \"%s\"", i, kind);
            cf_err_where(err, "system_schema.columns[%zu].kind", i);
            rc = CF_ERR_SCHEMA;
            break;
        }
        cf_cql_type *ty = NULL;
        rc = cf_cql_type_parse(type, ks, s, &ty, err);
        if (rc) {
            cf_err_where(err, "system_schema.columns[%zu] %s.%s.%s type", i, ks, name, cn);
            break;
        }
        int32_t p = json_is_integer(pos) ? (int32_t)json_integer_value(pos) : -1;
        if ((k == CF_CASS_PARTITION_KEY || k == CF_CASS_CLUSTERING) && p < 0) {
            cf_cql_type_destroy(ty);
            rc = need(err, "columns", i, "position");
            break;
        }
        rc = cf_cass_table_add_column(t, cn, ty, k, p, order && strcmp(order, "desc") == 0, err);
        if (rc) {
            cf_err_where(err, "system_schema.columns[%zu]", i);
            break;
        }
    }
    if (!rc && t->n_partition_key == 0) {
        cf_err_set(err, CF_ERR_SCHEMA, "table %s.%s has no partition key column in system_schema.columns", ks, name);
        cf_err_hint(err, "read system_schema.columns for the same keyspaces as system_schema.tables");
        rc = CF_ERR_SCHEMA;
    }
    /* positions must be 0..n-1 without gaps */
    for (size_t k = 0; !rc && k < t->n_partition_key; k++)
        if (t->partition_key[k].position != (int32_t)k) rc = need(err, "columns", k, "position (partition key)");
    for (size_t k = 0; !rc && k < t->n_clustering; k++)
        if (t->clustering[k].position != (int32_t)k) rc = need(err, "columns", k, "position (clustering)");
    json_array_foreach(dropped, i, c) {
        if (rc) break;
        const char *dks = jstr(c, "keyspace_name"), *dtn = jstr(c, "table_name");
        if (!dks || !dtn || strcmp(dks, ks) || strcmp(dtn, name)) continue;
        const char *cn = jstr(c, "column_name"), *type = jstr(c, "type"), *kind = jstr(c, "kind");
        int64_t us;
        if (!cn || !type) {
            rc = need(err, "dropped_columns", i, !cn ? "column_name" : "type");
            break;
        }
        if (!parse_ts_us(json_object_get(c, "dropped_time"), &us)) {
            rc = need(err, "dropped_columns", i, "dropped_time");
            break;
        }
        /* dropped types are stored with UDTs expanded to tuples in 4.0+;
         * any UDT name still there may be gone, so resolve leniently */
        cf_cql_type *ty = NULL;
        cf_err e2;
        if (cf_cql_type_parse(type, ks, s, &ty, &e2) != CF_OK) {
            if (err) *err = e2;
            cf_err_where(err, "system_schema.dropped_columns[%zu] %s.%s.%s type", i, ks, name, cn);
            rc = e2.code;
            break;
        }
        cf_cass_table_add_dropped(t, cn, ty, kind && strcmp(kind, "static") == 0 ? CF_CASS_STATIC : CF_CASS_REGULAR,
                                  us);
    }
    if (rc) {
        cf_cass_table_unref(t);
        return rc;
    }
    return cf_cass_schema_add_table(s, t, err);
}

cf_code cf_cass_schema_load_system_json(cf_cass_schema *s, const char *json, size_t len, cf_err *err) {
    json_error_t je;
    json_t *root = json_loadb(json, len, 0, &je);
    if (!root || !json_is_object(root)) {
        cf_err_set(err, CF_ERR_INVALID, "system_schema JSON does not parse: %s", root ? "not an object" : je.text);
        if (!root) cf_err_where(err, "line %d column %d", je.line, je.column);
        json_decref(root);
        return CF_ERR_INVALID;
    }
    json_t *ksr = json_object_get(root, "keyspaces"), *tables = json_object_get(root, "tables");
    json_t *columns = json_object_get(root, "columns"), *dropped = json_object_get(root, "dropped_columns");
    json_t *types = json_object_get(root, "types"), *views = json_object_get(root, "views");
    cf_code rc = CF_OK;
    if (!json_is_array(tables) || !json_is_array(columns)) {
        rc = cf_err_set(err, CF_ERR_SCHEMA, "system_schema JSON needs arrays \"tables\" and \"columns\"");
        goto out;
    }
    size_t i;
    json_t *r;
    json_array_foreach(ksr, i, r) {
        const char *n = jstr(r, "keyspace_name");
        if (!n) {
            rc = need(err, "keyspaces", i, "keyspace_name");
            goto out;
        }
        char *rep = NULL;
        json_t *rj = json_object_get(r, "replication");
        if (rj) rep = json_dumps(rj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        json_t *dw = json_object_get(r, "durable_writes");
        cf_cass_schema_put_keyspace(s, n, rep, dw ? json_is_true(dw) : true);
        free(rep);
    }
    if (json_is_array(types)) {
        rc = load_types(s, types, err);
        if (rc) goto out;
    }
    json_array_foreach(tables, i, r) {
        rc = load_table(s, r, i, columns, dropped, false, err);
        if (rc) goto out;
    }
    json_array_foreach(views, i, r) {
        rc = load_table(s, r, i, columns, dropped, true, err);
        if (rc) goto out;
    }
out:
    json_decref(root);
    return rc;
}
