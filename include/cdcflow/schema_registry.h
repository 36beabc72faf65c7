/*
 * cdcflow/schema_registry.h - a Confluent Schema Registry REST client on libcurl.
 *
 * Speaks the Confluent API (also served by Apicurio Registry under /apis/ccompat/v7):
 *   POST /subjects/{subject}/versions   register       -> {"id": N}
 *   POST /subjects/{subject}            look up schema -> {"subject","id","version","schema"}
 *   GET  /schemas/ids/{id}              schema by id   -> {"schema": "..."}
 *   GET  /subjects/{subject}/versions/latest           -> {"id","version","schema",...}
 *
 * Caches: schema by id, and id by (subject, schema text). Once a schema is cached, the
 * registry is never asked again, so a converter keeps working with the schemas it has seen
 * while the registry is down.
 *
 * Failures: transport errors and HTTP 5xx are retried inside a call (schema.registry.retries
 * times, exponential backoff from retry.backoff.ms up to retry.backoff.max.ms). When a call
 * gives up, the client is marked unreachable and further calls that need the network fail
 * fast with CF_ERR_AGAIN until the next retry time; the wait doubles with each failed attempt
 * (capped) and resets on the first success. cf_sr_client_status() exposes this state for
 * health checks and metrics.
 *
 * Errors: 404 -> CF_ERR_NOT_FOUND, 409 (incompatible) -> CF_ERR_SCHEMA, 422 (invalid schema)
 * -> CF_ERR_INVALID, 401/403 -> CF_ERR_CONFIG, unreachable / 5xx -> CF_ERR_AGAIN; the detail
 * carries the registry's error_code and message, the where the URL.
 *
 * Interrupt: a call that waits on the registry (a request, the backoff between retries)
 * returns CF_ERR_AGAIN within about 100 ms once the flag given to cf_sr_client_set_interrupt
 * is true (a worker task that is asked to stop must not wait out request timeouts); such a
 * call does not count as the registry failing.
 *
 * THREADS: a client may be shared by several threads (one lock around requests and caches,
 * another around the status).
 */
#ifndef CDCFLOW_SCHEMA_REGISTRY_H
#define CDCFLOW_SCHEMA_REGISTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/error.h"
#include "cdcflow/props.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_sr_config {
    const char *urls;                /* comma-separated base URLs; tried in order */
    const char *basic_auth_source;   /* "USER_INFO", "URL" or NULL/"" (none) */
    const char *basic_auth_user_info; /* "user:password" for USER_INFO */
    const char *ssl_ca_location;     /* PEM CA bundle */
    const char *ssl_cert_location;   /* client certificate (PEM) */
    const char *ssl_key_location;    /* client key (PEM) */
    const char *ssl_key_password;
    bool ssl_verify_host;            /* check the host name (default true) */
    long timeout_ms;                 /* per request, default 30000 */
    int max_retries;                 /* retries within one call, default 2 */
    long backoff_ms;                 /* first backoff, default 100 */
    long backoff_max_ms;             /* cap, default 10000 */
    size_t cache_capacity;           /* entries per cache, default 1000 */
} cf_sr_config;

/* Fill defaults (all pointers NULL). */
void cf_sr_config_init(cf_sr_config *cfg);
/* Read Confluent's settings from props into cfg (strings point into props, which must
 * outlive cfg): schema.registry.url, basic.auth.credentials.source, basic.auth.user.info
 * (or schema.registry.basic.auth.*), schema.registry.ssl.{ca,certificate,key}.location,
 * schema.registry.ssl.key.password, schema.registry.ssl.endpoint.identification.algorithm,
 * schema.registry.request.timeout.ms, schema.registry.retries,
 * schema.registry.retry.backoff.ms, schema.registry.retry.backoff.max.ms,
 * schemas.cache.config. Bad numbers or sources give CF_ERR_CONFIG naming the key. */
cf_code cf_sr_config_from_props(cf_sr_config *cfg, const cf_props *props, cf_err *err);

typedef struct cf_sr_client cf_sr_client;

/* Copies everything it needs from cfg. urls may be NULL/empty for a cache-only client (every
 * network call then fails with CF_ERR_CONFIG; cf_sr_cache_put fills it). */
cf_code cf_sr_client_new(const cf_sr_config *cfg, cf_sr_client **out, cf_err *err);
void cf_sr_client_destroy(cf_sr_client *c); /* NULL-safe */
/* Calls give up (CF_ERR_AGAIN, "interrupted") soon after *stop becomes true; stop (borrowed,
 * may be NULL for none) must outlive the client's calls. Set it before the calls begin. */
void cf_sr_client_set_interrupt(cf_sr_client *c, const atomic_bool *stop);

/* Register schema (Avro JSON text) under subject; *id receives the global id. Cached by
 * (subject, text). */
cf_code cf_sr_register(cf_sr_client *c, const char *subject, const char *schema, int32_t *id, cf_err *err);
/* Is this schema registered under subject? *id (and *version, may be NULL) on success;
 * CF_ERR_NOT_FOUND if not. Cached by (subject, text). */
cf_code cf_sr_lookup(cf_sr_client *c, const char *subject, const char *schema, int32_t *id, int32_t *version,
                     cf_err *err);
/* Schema text by id. *schema is malloc'd (caller frees). Cached. */
cf_code cf_sr_get_by_id(cf_sr_client *c, int32_t id, char **schema, cf_err *err);
/* Latest version of a subject (not cached: it changes). *schema malloc'd; version may be NULL. */
cf_code cf_sr_get_latest(cf_sr_client *c, const char *subject, int32_t *id, int32_t *version, char **schema,
                         cf_err *err);
/* Put an id -> schema entry into the cache (tests, fuzzing, preloading). */
void cf_sr_cache_put(cf_sr_client *c, int32_t id, const char *schema);
/* Preload "schema is registered under subject with this id" (register and lookup caches and
 * the id cache), e.g. for benchmarks and fuzzing without a registry. */
void cf_sr_cache_put_registered(cf_sr_client *c, const char *subject, const char *schema, int32_t id);

typedef struct cf_sr_status {
    bool reachable;          /* last network attempt succeeded (true before any attempt) */
    uint64_t requests;       /* HTTP requests made */
    uint64_t errors;         /* failed attempts (transport errors and 5xx) */
    uint64_t cache_hits;
    int64_t last_ok_ms;      /* wall clock ms of the last success, 0 = never */
    int64_t last_error_ms;   /* of the last failure, 0 = never */
    int64_t next_retry_ms;   /* while unreachable: calls fail fast until then */
    char last_error[512];    /* empty if none */
} cf_sr_status;
void cf_sr_client_status(cf_sr_client *c, cf_sr_status *out);
/* The status as one JSON object for health endpoints and metrics, appended to out:
 * {"reachable":true,"requests":3,"errors":0,"cache_hits":12,"last_ok_ms":...,
 *  "last_error_ms":0,"next_retry_ms":0,"last_error":""} */
void cf_sr_status_json(const cf_sr_status *st, cf_buf *out);

/* ---- subject name strategies ---- */
typedef enum cf_sr_strategy {
    CF_SR_TOPIC_NAME = 0,  /* <topic>-key / <topic>-value */
    CF_SR_RECORD_NAME,     /* <record full name> */
    CF_SR_TOPIC_RECORD_NAME /* <topic>-<record full name> */
} cf_sr_strategy;

/* Accepts the short names and Confluent's class names
 * (io.confluent.kafka.serializers.subject.TopicNameStrategy, ...). NULL/"" -> TopicName. */
cf_code cf_sr_strategy_parse(const char *name, cf_sr_strategy *out, cf_err *err);
/* The subject for a topic (malloc'd). record_name is the schema's full name (needed by the
 * record strategies). */
char *cf_sr_subject_name(cf_sr_strategy s, const char *topic, bool is_key, const char *record_name);

#ifdef __cplusplus
}
#endif
#endif
