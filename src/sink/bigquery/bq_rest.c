/*
 * bq_rest.c - BigQuery's REST API v2 for the tables the sink writes:
 * tables.get / insert / patch, and jobs.query for the DDL the Table
 * resource cannot express.
 *
 * Concurrency: tables.patch sends If-Match with the etag the schema was
 * read under; BigQuery answers 412 (or 409) when another writer changed the
 * table since, and the caller reads it again and retries
 * (mediateConcurrentSchemaUpdates). Errors carry the API's own message
 * ({"error": {"code", "message", "status"}}); bodies are never logged.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcflow/bigquery.h"
#include "cdcflow/log.h"

struct cf_bq_rest {
    char *api;
    cf_bq_auth *auth;
    int timeout_ms;
};

cf_bq_rest *cf_bq_rest_new(const char *api, cf_bq_auth *auth, int timeout_ms) {
    cf_bq_rest *r = cf_xcalloc(1, sizeof *r);
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, api && *api ? api : "https://bigquery.googleapis.com");
    while (b.len && b.data[b.len - 1] == '/') b.data[--b.len] = 0;
    r->api = cf_buf_detach(&b, NULL);
    r->auth = auth;
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : 60000;
    return r;
}

void cf_bq_rest_destroy(cf_bq_rest *r) {
    if (!r) return;
    free(r->api);
    free(r);
}

/* ---------------- the Table resource ---------------- */

static cf_code parse_fields(json_t *arr, cf_bq_field **out, size_t *n, int depth, cf_err *err) {
    *out = NULL;
    *n = 0;
    if (!arr) return CF_OK;
    if (!json_is_array(arr)) return cf_err_set(err, CF_ERR_CORRUPT, "table schema: \"fields\" is not an array");
    if (depth > 16) return cf_err_set(err, CF_ERR_CORRUPT, "table schema nests deeper than 15 levels");
    size_t m = json_array_size(arr);
    cf_bq_field *f = cf_xcalloc(m ? m : 1, sizeof *f);
    for (size_t i = 0; i < m; i++) {
        json_t *o = json_array_get(arr, i);
        json_t *name = json_object_get(o, "name"), *type = json_object_get(o, "type"),
               *mode = json_object_get(o, "mode");
        if (!json_is_string(name) || !json_is_string(type)) {
            cf_bq_fields_free(f, i);
            return cf_err_set(err, CF_ERR_CORRUPT, "table schema: field %zu has no name or type", i);
        }
        f[i].name = cf_xstrdup(json_string_value(name));
        if (!cf_bq_type_parse(json_string_value(type), &f[i].type)) {
            cf_err_set(err, CF_ERR_UNSUPPORTED, "column \"%s\" has type %s, which this sink cannot write", f[i].name,
                       json_string_value(type));
            cf_bq_fields_free(f, i + 1);
            return CF_ERR_UNSUPPORTED;
        }
        const char *md = json_is_string(mode) ? json_string_value(mode) : "NULLABLE";
        f[i].mode = strcmp(md, "REQUIRED") == 0 ? CF_BQ_REQUIRED : strcmp(md, "REPEATED") == 0 ? CF_BQ_REPEATED
                                                                                              : CF_BQ_NULLABLE;
        cf_code rc = parse_fields(json_object_get(o, "fields"), &f[i].fields, &f[i].n_fields, depth + 1, err);
        if (rc) {
            cf_bq_fields_free(f, i + 1);
            return rc;
        }
    }
    *out = f;
    *n = m;
    return CF_OK;
}

cf_code cf_bq_table_parse(const char *json, size_t len, cf_bq_table *out, cf_err *err) {
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = json_loadb(json, len, 0, &je);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        cf_err_set(err, CF_ERR_CORRUPT, "table resource is not a JSON object");
        cf_err_where(err, "byte %d", je.position);
        return CF_ERR_CORRUPT;
    }
    json_t *schema = json_object_get(o, "schema");
    cf_code rc = parse_fields(json_object_get(schema, "fields"), &out->fields, &out->n_fields, 0, err);
    json_t *cols = json_object_get(json_object_get(json_object_get(o, "tableConstraints"), "primaryKey"), "columns");
    if (!rc && cols) {
        if (!json_is_array(cols)) rc = cf_err_set(err, CF_ERR_CORRUPT, "primaryKey.columns is not an array");
        else {
            out->pk = cf_xcalloc(json_array_size(cols) + 1, sizeof *out->pk);
            for (size_t i = 0; i < json_array_size(cols) && !rc; i++) {
                json_t *c = json_array_get(cols, i);
                if (!json_is_string(c)) rc = cf_err_set(err, CF_ERR_CORRUPT, "primaryKey.columns[%zu] is not a string", i);
                else out->pk[out->n_pk++] = cf_xstrdup(json_string_value(c));
            }
        }
    }
    json_t *etag = json_object_get(o, "etag");
    if (json_is_string(etag)) snprintf(out->etag, sizeof out->etag, "%s", json_string_value(etag));
    json_t *secs = json_object_get(json_object_get(o, "labels"), "cdcflow_seq_sections");
    if (json_is_string(secs)) out->seq_sections = atoi(json_string_value(secs));
    json_t *ms = json_object_get(o, "maxStaleness");
    if (json_is_string(ms)) snprintf(out->max_staleness, sizeof out->max_staleness, "%s", json_string_value(ms));
    json_decref(o);
    if (rc) cf_bq_table_free(out);
    return rc;
}

void cf_bq_table_free(cf_bq_table *t) {
    if (!t) return;
    cf_bq_fields_free(t->fields, t->n_fields);
    for (size_t i = 0; i < t->n_pk; i++) free(t->pk[i]);
    free(t->pk);
    memset(t, 0, sizeof *t);
}

static json_t *fields_to_json(const cf_bq_field *f, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s,s:s,s:s}", "name", f[i].name, "type", cf_bq_type_name(f[i].type), "mode",
                              cf_bq_mode_name(f[i].mode));
        if (f[i].n_fields) json_object_set_new(o, "fields", fields_to_json(f[i].fields, f[i].n_fields));
        json_array_append_new(a, o);
    }
    return a;
}

void cf_bq_fields_json(const cf_bq_field *f, size_t n, cf_buf *out) {
    json_t *a = fields_to_json(f, n);
    char *s = json_dumps(a, JSON_COMPACT);
    cf_buf_append_str(out, s);
    free(s);
    json_decref(a);
}

/* ---------------- requests ---------------- */

static void path_escape(cf_buf *b, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("-_.~", *p))
            cf_buf_append_byte(b, *p);
        else cf_buf_printf(b, "%%%02X", *p);
    }
}

static void table_url(cf_bq_rest *r, cf_buf *b, const char *project, const char *dataset, const char *table) {
    cf_buf_printf(b, "%s/bigquery/v2/projects/", r->api);
    path_escape(b, project);
    cf_buf_append_str(b, "/datasets/");
    path_escape(b, dataset);
    cf_buf_append_str(b, "/tables");
    if (table) {
        cf_buf_append_byte(b, '/');
        path_escape(b, table);
    }
}

/* The API's error message for a failed call. */
static cf_code api_error(const char *what, const cf_bq_http_resp *h, cf_code code, cf_err *err) {
    json_t *o = json_loadb(h->body.data, h->body.len, 0, NULL);
    json_t *e = json_object_get(o, "error");
    json_t *m = json_object_get(e, "message"), *st = json_object_get(e, "status");
    cf_err_set(err, code, "BigQuery %s failed: HTTP %ld%s%s", what, h->status, json_is_string(st) ? " " : "",
               json_is_string(st) ? json_string_value(st) : "");
    if (json_is_string(m)) cf_err_detail(err, "%s", json_string_value(m));
    if (h->status == 401 || h->status == 403)
        cf_err_hint(err, "the credentials need roles/bigquery.dataEditor on the dataset (and bigquery.jobs.create "
                         "for DDL)");
    json_decref(o);
    return code;
}

static cf_code call(cf_bq_rest *r, const char *method, const char *url, const char *body, const char *if_match,
                    cf_bq_http_resp *h, cf_err *err) {
    const char *token;
    cf_code rc = cf_bq_auth_token(r->auth, &token, err);
    if (rc) return rc;
    cf_buf auth = CF_BUF_INIT, im = CF_BUF_INIT;
    cf_buf_printf(&auth, "Authorization: Bearer %s", token);
    const char *hd[4] = {auth.data, "Content-Type: application/json", NULL, NULL};
    if (if_match) {
        cf_buf_printf(&im, "If-Match: %s", if_match);
        hd[2] = im.data;
    }
    rc = cf_bq_http(method, url, hd, body, body ? strlen(body) : 0, r->timeout_ms, h, err);
    cf_buf_free(&auth);
    cf_buf_free(&im);
    return rc;
}

cf_code cf_bq_rest_get_table(cf_bq_rest *r, const char *project, const char *dataset, const char *table,
                             cf_bq_table *out, cf_err *err) {
    memset(out, 0, sizeof *out);
    cf_buf url = CF_BUF_INIT;
    table_url(r, &url, project, dataset, table);
    cf_bq_http_resp h;
    cf_code rc = call(r, "GET", url.data, NULL, NULL, &h, err);
    if (!rc) {
        if (h.status == 404) {
            rc = cf_err_set(err, CF_ERR_NOT_FOUND, "table %s.%s.%s does not exist", project, dataset, table);
        } else if (h.status != 200) {
            rc = api_error("tables.get", &h, CF_ERR_TARGET, err);
        } else {
            rc = cf_bq_table_parse(h.body.data, h.body.len, out, err);
            if (!rc && !out->etag[0]) snprintf(out->etag, sizeof out->etag, "%s", h.etag);
        }
        if (rc) cf_err_where(err, "%s.%s.%s", project, dataset, table);
    }
    cf_bq_http_resp_free(&h);
    cf_buf_free(&url);
    return rc;
}

cf_code cf_bq_rest_insert_table(cf_bq_rest *r, const char *project, const char *dataset, const char *body,
                                cf_err *err) {
    cf_buf url = CF_BUF_INIT;
    table_url(r, &url, project, dataset, NULL);
    cf_bq_http_resp h;
    cf_code rc = call(r, "POST", url.data, body, NULL, &h, err);
    if (!rc && h.status == 409) rc = cf_err_set(err, CF_ERR_STATE, "table exists already");
    else if (!rc && h.status != 200) rc = api_error("tables.insert", &h, CF_ERR_TARGET, err);
    cf_bq_http_resp_free(&h);
    cf_buf_free(&url);
    return rc;
}

cf_code cf_bq_rest_patch_table(cf_bq_rest *r, const char *project, const char *dataset, const char *table,
                               const char *body, const char *if_match, cf_err *err) {
    cf_buf url = CF_BUF_INIT;
    table_url(r, &url, project, dataset, table);
    cf_bq_http_resp h;
    cf_code rc = call(r, "PATCH", url.data, body, if_match, &h, err);
    if (!rc && (h.status == 412 || h.status == 409))
        rc = api_error("tables.patch (the table changed meanwhile)", &h, CF_ERR_AGAIN, err);
    else if (!rc && h.status != 200) rc = api_error("tables.patch", &h, CF_ERR_TARGET, err);
    cf_bq_http_resp_free(&h);
    cf_buf_free(&url);
    return rc;
}

cf_code cf_bq_rest_query(cf_bq_rest *r, const char *project, const char *sql, cf_err *err) {
    cf_buf url = CF_BUF_INIT;
    cf_buf_printf(&url, "%s/bigquery/v2/projects/", r->api);
    path_escape(&url, project);
    cf_buf_append_str(&url, "/queries");
    json_t *q = json_pack("{s:s,s:b,s:i}", "query", sql, "useLegacySql", 0, "timeoutMs", r->timeout_ms);
    char *body = json_dumps(q, JSON_COMPACT);
    json_decref(q);
    cf_bq_http_resp h;
    cf_code rc = call(r, "POST", url.data, body, NULL, &h, err);
    free(body);
    for (int polls = 0; !rc; polls++) {
        if (h.status != 200) {
            rc = api_error("jobs.query", &h, CF_ERR_TARGET, err);
            cf_err_where(err, "%s", sql);
            break;
        }
        json_t *o = json_loadb(h.body.data, h.body.len, 0, NULL);
        bool done = json_is_true(json_object_get(o, "jobComplete"));
        json_t *ref = json_object_get(o, "jobReference");
        json_t *id = json_object_get(ref, "jobId"), *loc = json_object_get(ref, "location");
        if (done || !json_is_string(id) || polls > 60) {
            if (!done) rc = cf_err_set(err, CF_ERR_TARGET, "BigQuery query job did not finish");
            json_decref(o);
            break;
        }
        cf_buf_reset(&url);
        cf_buf_printf(&url, "%s/bigquery/v2/projects/", r->api);
        path_escape(&url, project);
        cf_buf_append_str(&url, "/queries/");
        path_escape(&url, json_string_value(id));
        cf_buf_printf(&url, "?timeoutMs=%d", r->timeout_ms);
        if (json_is_string(loc)) cf_buf_append_str(&url, "&location="), path_escape(&url, json_string_value(loc));
        json_decref(o);
        cf_bq_http_resp_free(&h);
        rc = call(r, "GET", url.data, NULL, NULL, &h, err);
    }
    cf_bq_http_resp_free(&h);
    cf_buf_free(&url);
    return rc;
}
