/*
 * bq_auth.c - Google credentials for the BigQuery target: access tokens
 * from a service account key, an authorized-user refresh token (what
 * `gcloud auth application-default login` writes), or the metadata server
 * of a Google Cloud machine.
 *
 * Service account (RFC 7523, Google's "OAuth 2.0 for server to server
 * applications"): a JWT {alg RS256, kid} . {iss = client_email, scope, aud =
 * token_uri, iat, exp = iat + 3600}, signed with the key's RSA private key
 * through OpenSSL's EVP_DigestSign, POSTed to token_uri as grant_type
 * urn:ietf:params:oauth:grant-type:jwt-bearer; the answer's access_token and
 * expires_in are kept. A token is refreshed once less than five minutes of
 * its life are left, so a request never starts with a token about to lapse.
 *
 * Application Default Credentials, in Google's order:
 * $GOOGLE_APPLICATION_CREDENTIALS, then
 * ~/.config/gcloud/application_default_credentials.json, then the metadata
 * server ($GCE_METADATA_HOST overrides metadata.google.internal).
 *
 * Secrets (the key, the refresh token, access tokens) are never logged or
 * put in error messages: errors name the file, the key's client_email and
 * the token endpoint's error code and description only.
 */
#include <errno.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cdcflow/bigquery.h"
#include "cdcflow/log.h"

#define DEFAULT_TOKEN_URI "https://oauth2.googleapis.com/token"
#define DEFAULT_SCOPE "https://www.googleapis.com/auth/bigquery"
#define REFRESH_MARGIN_S 300

typedef enum kind { K_SERVICE_ACCOUNT, K_AUTHORIZED_USER, K_METADATA } kind;

struct cf_bq_auth {
    kind k;
    char *client_email, *private_key, *private_key_id, *token_uri, *project;
    char *client_id, *client_secret, *refresh_token;
    char *metadata_url, *scope;
    char *origin; /* where the credentials came from, for messages */
    char desc[512];
    int timeout_ms;
    char *token;
    int64_t expires_at; /* wall-clock seconds */
};

static char *jdup(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? cf_xstrdup(json_string_value(v)) : NULL;
}

static cf_code read_file(const char *path, cf_buf *out, cf_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cf_err_set(err, CF_ERR_CONFIG, "could not open credentials file \"%s\": %s", path, strerror(errno));
        cf_err_hint(err, "keyfile names a service account JSON key (keySource=FILE)");
        return CF_ERR_CONFIG;
    }
    char b[4096];
    size_t n;
    while ((n = fread(b, 1, sizeof b, f)) > 0) cf_buf_append(out, b, n);
    fclose(f);
    if (!out->data) cf_buf_reserve(out, 1);
    return CF_OK;
}

/* Fill a from a JSON key (service_account or authorized_user). */
static cf_code parse_key(cf_bq_auth *a, const char *text, size_t len, const char *origin, cf_err *err) {
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        /* json_error_t's text may quote the key: give the position only */
        cf_err_set(err, CF_ERR_CONFIG, "credentials in %s are not a JSON object", origin);
        cf_err_detail(err, "JSON error at line %d, column %d", je.line, je.column);
        cf_err_hint(err, "download the service account key as JSON (IAM > Service accounts > Keys)");
        return CF_ERR_CONFIG;
    }
    char *type = jdup(o, "type");
    cf_code rc = CF_OK;
    if (type && strcmp(type, "service_account") == 0) {
        a->k = K_SERVICE_ACCOUNT;
        a->client_email = jdup(o, "client_email");
        a->private_key = jdup(o, "private_key");
        a->private_key_id = jdup(o, "private_key_id");
        if (!a->token_uri) a->token_uri = jdup(o, "token_uri");
        a->project = jdup(o, "project_id");
        if (!a->client_email || !a->private_key) {
            rc = cf_err_set(err, CF_ERR_CONFIG, "service account key in %s lacks %s", origin,
                            !a->client_email ? "client_email" : "private_key");
        }
        snprintf(a->desc, sizeof a->desc, "service account %s (%s)", a->client_email ? a->client_email : "?", origin);
    } else if (type && strcmp(type, "authorized_user") == 0) {
        a->k = K_AUTHORIZED_USER;
        a->client_id = jdup(o, "client_id");
        a->client_secret = jdup(o, "client_secret");
        a->refresh_token = jdup(o, "refresh_token");
        a->project = jdup(o, "quota_project_id");
        if (!a->token_uri) a->token_uri = jdup(o, "token_uri");
        if (!a->client_id || !a->client_secret || !a->refresh_token)
            rc = cf_err_set(err, CF_ERR_CONFIG, "authorized_user credentials in %s lack client_id, client_secret or "
                                                "refresh_token", origin);
        snprintf(a->desc, sizeof a->desc, "authorized user (%s)", origin);
    } else {
        rc = cf_err_set(err, CF_ERR_CONFIG, "credentials in %s have type \"%s\"", origin, type ? type : "(none)");
        cf_err_detail(err, "supported: service_account, authorized_user");
        cf_err_hint(err, "use a service account JSON key, or keySource=APPLICATION_DEFAULT on Google Cloud");
    }
    if (!a->token_uri) a->token_uri = cf_xstrdup(DEFAULT_TOKEN_URI);
    free(type);
    json_decref(o);
    return rc;
}

static void set_metadata(cf_bq_auth *a, const cf_bq_auth_opts *o) {
    a->k = K_METADATA;
    const char *env = getenv("GCE_METADATA_HOST");
    cf_buf b = CF_BUF_INIT;
    if (o->metadata_url && *o->metadata_url) cf_buf_append_str(&b, o->metadata_url);
    else if (env && *env) cf_buf_printf(&b, "http://%s", env);
    else cf_buf_append_str(&b, "http://metadata.google.internal");
    while (b.len && b.data[b.len - 1] == '/') b.data[--b.len] = 0;
    a->metadata_url = cf_buf_detach(&b, NULL);
    snprintf(a->desc, sizeof a->desc, "the metadata server (%s)", a->metadata_url);
}

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

cf_code cf_bq_auth_new(const cf_bq_auth_opts *o, cf_bq_auth **out, cf_err *err) {
    *out = NULL;
    cf_bq_auth *a = cf_xcalloc(1, sizeof *a);
    a->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    a->scope = cf_xstrdup(o->scope ? o->scope : DEFAULT_SCOPE);
    if (o->token_uri && *o->token_uri) a->token_uri = cf_xstrdup(o->token_uri);
    cf_code rc = CF_OK;
    cf_buf text = CF_BUF_INIT;
    switch (o->source) {
    case CF_BQ_KEY_FILE:
        if (!o->keyfile || !*o->keyfile) {
            rc = cf_err_set(err, CF_ERR_CONFIG, "missing required configuration \"keyfile\" for keySource=FILE");
            cf_err_hint(err, "set keyfile to the path of a service account JSON key, or keySource=APPLICATION_DEFAULT");
            break;
        }
        a->origin = cf_xstrdup(o->keyfile);
        rc = read_file(o->keyfile, &text, err);
        if (!rc) rc = parse_key(a, text.data, text.len, a->origin, err);
        break;
    case CF_BQ_KEY_JSON:
        if (!o->keyfile || !*o->keyfile) {
            rc = cf_err_set(err, CF_ERR_CONFIG, "missing required configuration \"keyfile\" for keySource=JSON");
            cf_err_hint(err, "set keyfile to the service account key's JSON text");
            break;
        }
        a->origin = cf_xstrdup("the keyfile setting");
        rc = parse_key(a, o->keyfile, strlen(o->keyfile), a->origin, err);
        break;
    case CF_BQ_KEY_APPLICATION_DEFAULT: {
        const char *env = getenv("GOOGLE_APPLICATION_CREDENTIALS");
        const char *home = o->home ? o->home : getenv("HOME");
        char well_known[1024] = "";
        if (home) snprintf(well_known, sizeof well_known, "%s/.config/gcloud/application_default_credentials.json", home);
        if (o->keyfile && *o->keyfile) { /* an explicit file wins, as kcbq's keyfile does */
            a->origin = cf_xstrdup(o->keyfile);
        } else if (env && *env) {
            a->origin = cf_xstrdup(env);
            if (!file_exists(env)) {
                rc = cf_err_set(err, CF_ERR_CONFIG, "GOOGLE_APPLICATION_CREDENTIALS names \"%s\", which does not exist",
                                env);
                cf_err_hint(err, "point it at a service account JSON key, or unset it");
                break;
            }
        } else if (well_known[0] && file_exists(well_known)) {
            a->origin = cf_xstrdup(well_known);
        }
        if (a->origin) {
            rc = read_file(a->origin, &text, err);
            if (!rc) rc = parse_key(a, text.data, text.len, a->origin, err);
        } else {
            set_metadata(a, o);
        }
        break;
    }
    }
    cf_buf_free(&text);
    if (rc) {
        cf_bq_auth_destroy(a);
        return rc;
    }
    *out = a;
    return CF_OK;
}

void cf_bq_auth_destroy(cf_bq_auth *a) {
    if (!a) return;
    char *secrets[] = {a->private_key, a->client_secret, a->refresh_token, a->token};
    for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
        if (secrets[i]) OPENSSL_cleanse(secrets[i], strlen(secrets[i]));
    char *all[] = {a->client_email, a->private_key, a->private_key_id, a->token_uri, a->project, a->client_id,
                   a->client_secret, a->refresh_token, a->metadata_url, a->scope, a->origin, a->token};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
    free(a);
}

const char *cf_bq_auth_describe(const cf_bq_auth *a) { return a->desc; }

/* ---------------- JWT ---------------- */

static void b64url(cf_buf *b, const uint8_t *p, size_t n) {
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        cf_buf_append_byte(b, (uint8_t)t[v >> 18 & 63]);
        cf_buf_append_byte(b, (uint8_t)t[v >> 12 & 63]);
        if (i + 1 < n) cf_buf_append_byte(b, (uint8_t)t[v >> 6 & 63]);
        if (i + 2 < n) cf_buf_append_byte(b, (uint8_t)t[v & 63]);
    }
}

static void b64url_json(cf_buf *b, json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT);
    b64url(b, (const uint8_t *)s, strlen(s));
    free(s);
}

cf_code cf_bq_auth_jwt(cf_bq_auth *a, int64_t now, char **jwt, cf_err *err) {
    *jwt = NULL;
    if (a->k != K_SERVICE_ACCOUNT) return cf_err_set(err, CF_ERR_STATE, "credentials are not a service account key");
    json_t *h = json_pack("{s:s,s:s}", "alg", "RS256", "typ", "JWT");
    if (a->private_key_id) json_object_set_new(h, "kid", json_string(a->private_key_id));
    json_t *c = json_pack("{s:s,s:s,s:s,s:I,s:I}", "iss", a->client_email, "scope", a->scope, "aud", a->token_uri,
                          "iat", (json_int_t)now, "exp", (json_int_t)(now + 3600));
    cf_buf b = CF_BUF_INIT;
    b64url_json(&b, h);
    cf_buf_append_byte(&b, '.');
    b64url_json(&b, c);
    json_decref(h);
    json_decref(c);
    cf_code rc = CF_OK;
    BIO *bio = BIO_new_mem_buf(a->private_key, -1);
    EVP_PKEY *pk = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t siglen = 0;
    uint8_t *sig = NULL;
    if (!pk || EVP_PKEY_base_id(pk) != EVP_PKEY_RSA) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "the private_key of service account %s is not an RSA key in PEM form",
                        a->client_email);
        cf_err_hint(err, "download a new JSON key for the service account");
    } else if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pk) != 1 ||
               EVP_DigestSign(md, NULL, &siglen, (const uint8_t *)b.data, b.len) != 1 ||
               !(sig = cf_xmalloc(siglen)) ||
               EVP_DigestSign(md, sig, &siglen, (const uint8_t *)b.data, b.len) != 1) {
        rc = cf_err_set(err, CF_ERR_INTERNAL, "signing the token request (RS256) failed: %s",
                        ERR_error_string(ERR_get_error(), NULL));
    }
    ERR_clear_error();
    if (!rc) {
        cf_buf_append_byte(&b, '.');
        b64url(&b, sig, siglen);
        *jwt = cf_buf_detach(&b, NULL);
    }
    free(sig);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pk);
    BIO_free(bio);
    cf_buf_free(&b);
    return rc;
}

/* ---------------- tokens ---------------- */

static void form_escape(cf_buf *b, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("-_.~", *p))
            cf_buf_append_byte(b, *p);
        else cf_buf_printf(b, "%%%02X", *p);
    }
}

/* Read {"access_token", "expires_in"} from a token endpoint's answer. */
static cf_code take_token(cf_bq_auth *a, const cf_bq_http_resp *r, const char *url, cf_err *err) {
    json_t *o = json_loadb(r->body.data, r->body.len, 0, NULL);
    if (r->status != 200) {
        json_t *e = json_object_get(o, "error");
        json_t *d = json_object_get(o, "error_description");
        cf_err_set(err, CF_ERR_TARGET, "token request to %s failed: HTTP %ld%s%s", url, r->status,
                   json_is_string(e) ? " " : "", json_is_string(e) ? json_string_value(e) : "");
        if (json_is_string(d)) cf_err_detail(err, "%s", json_string_value(d));
        cf_err_hint(err, "check the credentials (%s): the key may be deleted or the account disabled", a->desc);
        json_decref(o);
        return CF_ERR_TARGET;
    }
    json_t *t = json_object_get(o, "access_token");
    json_t *x = json_object_get(o, "expires_in");
    if (!json_is_string(t) || !json_string_length(t)) {
        json_decref(o);
        return cf_err_set(err, CF_ERR_TARGET, "token answer from %s has no access_token", url);
    }
    if (a->token) OPENSSL_cleanse(a->token, strlen(a->token));
    free(a->token);
    a->token = cf_xstrdup(json_string_value(t));
    int64_t life = json_is_integer(x) ? (int64_t)json_integer_value(x) : 3600;
    a->expires_at = (int64_t)time(NULL) + life;
    json_decref(o);
    CF_DEBUG("bigquery", "access token from %s, valid %lld s", a->desc, (long long)life);
    return CF_OK;
}

static cf_code fetch(cf_bq_auth *a, cf_err *err) {
    cf_bq_http_resp r;
    cf_buf body = CF_BUF_INIT;
    cf_code rc;
    if (a->k == K_METADATA) {
        cf_buf url = CF_BUF_INIT;
        cf_buf_printf(&url, "%s/computeMetadata/v1/instance/service-accounts/default/token?scopes=", a->metadata_url);
        form_escape(&url, a->scope);
        const char *h[] = {"Metadata-Flavor: Google", NULL};
        rc = cf_bq_http("GET", url.data, h, NULL, 0, a->timeout_ms, &r, err);
        if (rc) {
            cf_err_hint(err, "no credentials: not on Google Cloud (metadata server unreachable), no "
                             "GOOGLE_APPLICATION_CREDENTIALS and no ~/.config/gcloud/application_default_credentials.json; "
                             "set keyfile to a service account key");
        } else {
            rc = take_token(a, &r, url.data, err);
        }
        cf_bq_http_resp_free(&r);
        cf_buf_free(&url);
        return rc;
    }
    if (a->k == K_SERVICE_ACCOUNT) {
        char *jwt;
        rc = cf_bq_auth_jwt(a, (int64_t)time(NULL), &jwt, err);
        if (rc) return rc;
        cf_buf_append_str(&body, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=");
        cf_buf_append_str(&body, jwt);
        free(jwt);
    } else {
        cf_buf_append_str(&body, "grant_type=refresh_token&client_id=");
        form_escape(&body, a->client_id);
        cf_buf_append_str(&body, "&client_secret=");
        form_escape(&body, a->client_secret);
        cf_buf_append_str(&body, "&refresh_token=");
        form_escape(&body, a->refresh_token);
    }
    const char *h[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
    rc = cf_bq_http("POST", a->token_uri, h, body.data, body.len, a->timeout_ms, &r, err);
    OPENSSL_cleanse(body.data, body.len);
    cf_buf_free(&body);
    if (!rc) rc = take_token(a, &r, a->token_uri, err);
    cf_bq_http_resp_free(&r);
    return rc;
}

cf_code cf_bq_auth_token(cf_bq_auth *a, const char **token, cf_err *err) {
    *token = NULL;
    if (!a->token || (int64_t)time(NULL) + REFRESH_MARGIN_S >= a->expires_at) {
        cf_code rc = fetch(a, err);
        if (rc) return rc;
    }
    *token = a->token;
    return CF_OK;
}

const char *cf_bq_auth_project(cf_bq_auth *a) {
    if (!a->project && a->k == K_METADATA) {
        cf_buf url = CF_BUF_INIT;
        cf_buf_printf(&url, "%s/computeMetadata/v1/project/project-id", a->metadata_url);
        const char *h[] = {"Metadata-Flavor: Google", NULL};
        cf_bq_http_resp r;
        if (cf_bq_http("GET", url.data, h, NULL, 0, a->timeout_ms, &r, NULL) == CF_OK && r.status == 200 && r.body.len)
            a->project = cf_xstrdup(r.body.data);
        cf_bq_http_resp_free(&r);
        cf_buf_free(&url);
    }
    return a->project;
}
