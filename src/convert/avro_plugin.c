/*
 * avro_plugin.c - the "avro" converter plugin (io.confluent.connect.avro.AvroConverter):
 * its configuration table and the glue from cf_converter_plugin to cf_avro_converter.
 * Kept apart from avro_converter.c so that code using the converter directly (tests, fuzz
 * targets, benchmarks) does not pull in the config module.
 */
#include "cdcflow/avro.h"
#include "cdcflow/convert.h"

static const char *const strategies[] = {"TopicNameStrategy",
                                         "RecordNameStrategy",
                                         "TopicRecordNameStrategy",
                                         "io.confluent.kafka.serializers.subject.TopicNameStrategy",
                                         "io.confluent.kafka.serializers.subject.RecordNameStrategy",
                                         "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
                                         NULL};
static const char *const auth_sources[] = {"USER_INFO", "URL", "", NULL};
static const char *const converter_types[] = {"key", "value", "header", NULL};

#define STRATEGY_DOC                                                                                             \
    "How the subject is named: `TopicNameStrategy` (`<topic>-key` / `<topic>-value`), `RecordNameStrategy` "  \
    "(the record's full name) or `TopicRecordNameStrategy` (`<topic>-<record full name>`); Confluent's class " \
    "names `io.confluent.kafka.serializers.subject.*` are accepted too."

static const cf_cfg_def avro_defs[] = {
    {.name = "schema.registry.url", .type = CF_CFG_LIST, .default_value = CF_CFG_REQUIRED,
     .importance = CF_IMPORTANCE_HIGH, .group = "Schema Registry",
     .doc = "Comma-separated base URLs of the Schema Registry, tried in order, e.g. "
            "`http://127.0.0.1:8081/apis/ccompat/v7` for Apicurio's Confluent-compatible API."},
    {.name = "auto.register.schemas", .type = CF_CFG_BOOLEAN, .default_value = "true",
     .importance = CF_IMPORTANCE_MEDIUM, .group = "Schema Registry",
     .doc = "Register the Avro schema derived from the Connect schema under the subject. With `false` the schema "
            "must already be registered (looked up with `POST /subjects/{subject}`)."},
    {.name = "use.latest.version", .type = CF_CFG_BOOLEAN, .default_value = "false",
     .importance = CF_IMPORTANCE_LOW, .group = "Schema Registry",
     .doc = "Write with the subject's latest registered schema instead of the one derived from the record "
            "(struct fields are matched by name)."},
    {.name = "key.subject.name.strategy", .type = CF_CFG_STRING, .default_value = "TopicNameStrategy",
     .valid_values = strategies, .importance = CF_IMPORTANCE_MEDIUM, .group = "Schema Registry", .doc = STRATEGY_DOC},
    {.name = "value.subject.name.strategy", .type = CF_CFG_STRING, .default_value = "TopicNameStrategy",
     .valid_values = strategies, .importance = CF_IMPORTANCE_MEDIUM, .group = "Schema Registry",
     .doc = STRATEGY_DOC},
    {.name = "basic.auth.credentials.source", .type = CF_CFG_STRING, .nullable = true, .valid_values = auth_sources,
     .importance = CF_IMPORTANCE_MEDIUM, .group = "Schema Registry",
     .doc = "`USER_INFO`: HTTP basic authentication with `basic.auth.user.info`; `URL`: credentials given in the "
            "URL (`http://user:pass@host`)."},
    {.name = "basic.auth.user.info", .type = CF_CFG_PASSWORD, .nullable = true, .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Schema Registry", .doc = "`user:password` for `basic.auth.credentials.source=USER_INFO`."},
    {.name = "schema.registry.basic.auth.credentials.source", .type = CF_CFG_STRING, .nullable = true,
     .valid_values = auth_sources, .importance = CF_IMPORTANCE_LOW, .group = "Schema Registry",
     .doc = "Alias of `basic.auth.credentials.source`."},
    {.name = "schema.registry.basic.auth.user.info", .type = CF_CFG_PASSWORD, .nullable = true,
     .importance = CF_IMPORTANCE_LOW, .group = "Schema Registry", .doc = "Alias of `basic.auth.user.info`."},
    {.name = "schema.registry.ssl.ca.location", .type = CF_CFG_STRING, .nullable = true,
     .importance = CF_IMPORTANCE_LOW, .group = "TLS", .doc = "PEM file of CA certificates to verify the registry."},
    {.name = "schema.registry.ssl.certificate.location", .type = CF_CFG_STRING, .nullable = true,
     .importance = CF_IMPORTANCE_LOW, .group = "TLS", .doc = "Client certificate (PEM) for mutual TLS."},
    {.name = "schema.registry.ssl.key.location", .type = CF_CFG_STRING, .nullable = true,
     .importance = CF_IMPORTANCE_LOW, .group = "TLS", .doc = "Client private key (PEM) for mutual TLS."},
    {.name = "schema.registry.ssl.key.password", .type = CF_CFG_PASSWORD, .nullable = true,
     .importance = CF_IMPORTANCE_LOW, .group = "TLS", .doc = "Password of the client private key."},
    {.name = "schema.registry.ssl.endpoint.identification.algorithm", .type = CF_CFG_STRING, .default_value = "https",
     .importance = CF_IMPORTANCE_LOW, .group = "TLS",
     .doc = "`https` checks the registry's host name against its certificate; an empty value disables the check."},
    {.name = "schema.registry.request.timeout.ms", .type = CF_CFG_INT, .default_value = "30000", .has_range = true,
     .min = 1, .max = 3600000, .importance = CF_IMPORTANCE_LOW, .group = "Schema Registry",
     .doc = "Timeout of one HTTP request to the registry."},
    {.name = "schema.registry.retries", .type = CF_CFG_INT, .default_value = "2", .has_range = true, .min = 0,
     .max = 100, .importance = CF_IMPORTANCE_LOW, .group = "Schema Registry",
     .doc = "Retries of a failed request (transport error or HTTP 5xx) within one call, with exponential backoff."},
    {.name = "schema.registry.retry.backoff.ms", .type = CF_CFG_INT, .default_value = "100", .has_range = true,
     .min = 0, .max = 3600000, .importance = CF_IMPORTANCE_LOW, .group = "Schema Registry",
     .doc = "First backoff between retries; doubles per retry. After a call has failed, calls that need the "
            "registry fail fast (cached schemas keep working) for a window that doubles per failed call."},
    {.name = "schema.registry.retry.backoff.max.ms", .type = CF_CFG_INT, .default_value = "10000",
     .has_range = true, .min = 0, .max = 3600000, .importance = CF_IMPORTANCE_LOW, .group = "Schema Registry",
     .doc = "Upper bound of the backoff and of the fail-fast window."},
    {.name = "schemas.cache.config", .type = CF_CFG_INT, .default_value = "1000", .has_range = true, .min = 1,
     .max = 1000000, .importance = CF_IMPORTANCE_LOW, .group = "Schemas",
     .doc = "Schemas cached per converter in each direction (and entries per registry client cache)."},
    {.name = "connect.meta.data", .type = CF_CFG_BOOLEAN, .default_value = "true", .importance = CF_IMPORTANCE_LOW,
     .group = "Schemas",
     .doc = "Write Connect's metadata into the Avro schema (`connect.name`, `connect.version`, `connect.doc`, "
            "`connect.default`, `connect.parameters`, `connect.type`), so that reading back gives the same Connect "
            "schema."},
    {.name = "converter.type", .type = CF_CFG_STRING, .nullable = true, .valid_values = converter_types,
     .importance = CF_IMPORTANCE_LOW, .group = "Schemas",
     .doc = "Set by the worker (`key`, `value` or `header`); accepted for compatibility, ignored."},
    {.name = NULL},
};

/* Exported for the docs (src/config/registry.c lists the tables by this name). */
const cf_cfg_table cf_avro_converter_table = {
    .name = "avro converter",
    .title = "AvroConverter (`avro`, `io.confluent.connect.avro.AvroConverter`)",
    .intro = "Confluent's Avro wire format (magic byte 0, 4-byte schema id, Avro binary) with schemas kept in a "
             "Schema Registry (Confluent's REST API; Apicurio under `/apis/ccompat/v7`). Connect schemas map to "
             "Avro as Confluent's AvroData maps them.",
    .defs = avro_defs,
    .prefixes = NULL,
};

static cf_code avro_create(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    cf_avro_converter *c = NULL;
    cf_code rc = cf_avro_converter_new(cf_config_props(cfg), is_key, &c, err);
    if (rc == CF_OK) *state = c;
    return rc;
}

static cf_code avro_from_connect(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                 char **data, size_t *len, cf_err *err) {
    return cf_avro_converter_from_connect(state, topic, schema, value, data, len, err);
}

static cf_code avro_from_connect_buf(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                     cf_buf *out, bool *is_null, cf_err *err) {
    return cf_avro_converter_write(state, topic, schema, value, out, is_null, err);
}

static cf_code avro_to_connect(void *state, const char *topic, const char *data, size_t len, cf_schema **schema,
                               cf_value **value, cf_err *err) {
    return cf_avro_converter_to_connect(state, topic, data, len, schema, value, err);
}

static void avro_destroy(void *state) { cf_avro_converter_destroy(state); }

static const char *const avro_aliases[] = {"io.confluent.connect.avro.AvroConverter", NULL};

const cf_converter_plugin cf_avro_converter_plugin = {
    .name = "avro",
    .aliases = avro_aliases,
    .config = &cf_avro_converter_table,
    .create = avro_create,
    .from_connect = avro_from_connect,
    .to_connect = avro_to_connect,
    .destroy = avro_destroy,
    .from_connect_buf = avro_from_connect_buf,
};
