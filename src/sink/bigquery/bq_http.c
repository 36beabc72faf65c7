/*
 * bq_http.c - one HTTP request over libcurl for the BigQuery target (the
 * REST API v2, the OAuth token endpoint, the metadata server).
 *
 * A fresh easy handle per request: these requests are rare (table checks,
 * DDL, one token an hour), so connection reuse buys nothing worth a shared
 * handle's state. Bodies may hold tokens and keys: they are never logged;
 * errors carry the HTTP status and the API's error message only.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/bigquery.h"
#include "cdcflow/version.h"

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
    cf_buf_append(ud, p, size * n);
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
    cf_bq_http_resp *r = ud;
    size_t len = size * n;
    if (len > 5 && strncasecmp(p, "etag:", 5) == 0) {
        const char *v = p + 5;
        size_t k = len - 5;
        while (k && (*v == ' ' || *v == '\t')) v++, k--;
        while (k && (v[k - 1] == '\r' || v[k - 1] == '\n' || v[k - 1] == ' ')) k--;
        if (k >= sizeof r->etag) k = sizeof r->etag - 1;
        memcpy(r->etag, v, k);
        r->etag[k] = 0;
    }
    return len;
}

cf_code cf_bq_http(const char *method, const char *url, const char *const *headers, const char *body,
                   size_t body_len, int timeout_ms, cf_bq_http_resp *r, cf_err *err) {
    memset(r, 0, sizeof *r);
    /* curl_global_init keeps a counter (thread-safe since curl 7.84), as in the Schema Registry client */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return cf_err_set(err, CF_ERR_INTERNAL, "curl_global_init failed");
    CURL *c = curl_easy_init();
    if (!c) {
        curl_global_cleanup();
        return cf_err_set(err, CF_ERR_INTERNAL, "curl_easy_init failed");
    }
    struct curl_slist *hl = NULL;
    for (const char *const *h = headers; h && *h; h++) hl = curl_slist_append(hl, *h);
    hl = curl_slist_append(hl, "Expect:");
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 60000));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "cdcflow/" CF_VERSION_STRING);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
    }
    CURLcode cc = curl_easy_perform(c);
    cf_code rc = CF_OK;
    if (cc != CURLE_OK) {
        rc = cf_err_set(err, CF_ERR_TRANSPORT, "HTTP %s %s failed: %s", method, url, errbuf[0] ? errbuf : curl_easy_strerror(cc));
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        if (!r->body.data) cf_buf_reserve(&r->body, 1);
    }
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    curl_global_cleanup();
    return rc;
}

void cf_bq_http_resp_free(cf_bq_http_resp *r) {
    if (!r) return;
    cf_buf_free(&r->body);
    memset(r, 0, sizeof *r);
}
