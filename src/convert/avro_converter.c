/*
 * avro_converter.c - Confluent's AvroConverter: Connect data <-> Confluent wire format
 * (magic byte 0, 4-byte big-endian schema id, Avro binary), schemas in a Schema Registry.
 *
 * Two caches keep the registry off the hot path:
 *   encode: (Connect schema, topic) -> codec + schema id. Looked up by pointer first (sources
 *           reuse their schema objects), then by structural equality; the entry holds a
 *           reference so the pointer stays valid. Bounded, evicted round-robin.
 *   decode: schema id -> codec (writer schema compiled once). Bounded the same way.
 * The registry client has its own caches below these (ids, schema texts), so a converter
 * recreated after a restart still avoids most requests.
 *
 * Semantics taken from Confluent's AvroConverter/AvroData:
 *   - a null (unset) struct field whose schema has a default is written as the default,
 *     because Connect's Struct.get returns the default for it and AvroData writes what
 *     Struct.get returns;
 *   - auto.register.schemas=true registers under the subject (POST .../versions), false looks
 *     the schema up (POST /subjects/{subject}) and fails with CF_ERR_NOT_FOUND if absent;
 *   - use.latest.version=true writes with the subject's latest schema and its id (struct
 *     fields matched by name; the latest schema is fetched once per converter and cached, as
 *     Confluent's latest.cache.ttl.sec=-1 default does);
 *   - to_connect uses the writer schema named by the id (no reader schema / projection).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/avro.h"
#include "cdcflow/buf.h"

typedef struct enc_entry {
    cf_schema *schema; /* reference */
    char *topic;
    cf_avro_codec *codec;
    int32_t id;
} enc_entry;

typedef struct dec_entry {
    int32_t id;
    cf_avro_codec *codec;
} dec_entry;

struct cf_avro_converter {
    bool is_key;
    cf_sr_client *client;
    bool own_client;
    cf_sr_strategy strategy;
    bool auto_register, use_latest;
    cf_avro_opts opts;
    size_t cap;
    enc_entry *enc;
    size_t nenc, enc_next, enc_last;
    dec_entry *dec;
    size_t ndec, dec_next, dec_last;
};

static cf_code parse_bool(const cf_props *p, const char *key, bool def, bool *out, cf_err *err) {
    const char *v = cf_props_get(p, key);
    if (!v) {
        *out = def;
        return CF_OK;
    }
    if (strcasecmp(v, "true") == 0) *out = true;
    else if (strcasecmp(v, "false") == 0) *out = false;
    else {
        cf_err_set(err, CF_ERR_CONFIG, "invalid value for %s", key);
        cf_err_detail(err, "\"%s\" is not true or false", v);
        cf_err_where(err, "%s", key);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

static cf_code setup(cf_avro_converter *c, const cf_props *props, bool is_key, cf_err *err) {
    c->is_key = is_key;
    cf_code rc;
    if ((rc = parse_bool(props, "auto.register.schemas", true, &c->auto_register, err))) return rc;
    if ((rc = parse_bool(props, "use.latest.version", false, &c->use_latest, err))) return rc;
    if ((rc = parse_bool(props, "connect.meta.data", true, &c->opts.connect_meta_data, err))) return rc;
    const char *skey = is_key ? "key.subject.name.strategy" : "value.subject.name.strategy";
    if ((rc = cf_sr_strategy_parse(cf_props_get(props, skey), &c->strategy, err))) {
        cf_err_where(err, "%s", skey);
        return rc;
    }
    c->cap = 1000;
    const char *cap = cf_props_get(props, "schemas.cache.config");
    if (cap) {
        char *end;
        long v = strtol(cap, &end, 10);
        if (*end || end == cap || v < 1 || v > 1000000) {
            cf_err_set(err, CF_ERR_CONFIG, "invalid value for schemas.cache.config");
            cf_err_detail(err, "\"%s\" is not an integer between 1 and 1000000", cap);
            cf_err_where(err, "schemas.cache.config");
            return CF_ERR_CONFIG;
        }
        c->cap = (size_t)v;
    }
    c->enc = cf_xcalloc(c->cap, sizeof *c->enc);
    c->dec = cf_xcalloc(c->cap, sizeof *c->dec);
    return CF_OK;
}

cf_code cf_avro_converter_new_with_client(const cf_props *props, bool is_key, cf_sr_client *client,
                                          cf_avro_converter **out, cf_err *err) {
    cf_avro_converter *c = cf_xcalloc(1, sizeof *c);
    cf_props *empty = NULL;
    if (!props) props = empty = cf_props_new();
    cf_code rc = setup(c, props, is_key, err);
    cf_props_destroy(empty);
    if (rc) {
        cf_avro_converter_destroy(c);
        return rc;
    }
    c->client = client;
    *out = c;
    return CF_OK;
}

cf_code cf_avro_converter_new(const cf_props *props, bool is_key, cf_avro_converter **out, cf_err *err) {
    const char *url = props ? cf_props_get(props, "schema.registry.url") : NULL;
    if (!url || !*url) {
        cf_err_set(err, CF_ERR_CONFIG, "the avro converter needs schema.registry.url");
        cf_err_hint(err, "Set schema.registry.url to the registry's base URL, e.g. "
                         "http://127.0.0.1:8081/apis/ccompat/v7 for Apicurio or http://host:8081 for Confluent.");
        cf_err_where(err, "schema.registry.url");
        return CF_ERR_CONFIG;
    }
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    cf_code rc = cf_sr_config_from_props(&cfg, props, err);
    if (rc) return rc;
    cf_sr_client *client;
    if ((rc = cf_sr_client_new(&cfg, &client, err))) return rc;
    rc = cf_avro_converter_new_with_client(props, is_key, client, out, err);
    if (rc) {
        cf_sr_client_destroy(client);
        return rc;
    }
    (*out)->own_client = true;
    return CF_OK;
}

void cf_avro_converter_destroy(cf_avro_converter *c) {
    if (!c) return;
    for (size_t i = 0; i < c->nenc; i++) {
        cf_schema_unref(c->enc[i].schema);
        free(c->enc[i].topic);
        cf_avro_codec_destroy(c->enc[i].codec);
    }
    for (size_t i = 0; i < c->ndec; i++) cf_avro_codec_destroy(c->dec[i].codec);
    free(c->enc);
    free(c->dec);
    if (c->own_client) cf_sr_client_destroy(c->client);
    free(c);
}

cf_sr_client *cf_avro_converter_client(cf_avro_converter *c) { return c->client; }

/* "topic t" plus whatever location the error already has (a field path). */
static void where_topic(cf_err *err, const char *topic, int32_t id) {
    if (!err) return;
    char w[sizeof err->where];
    char idpart[32] = "";
    if (id >= 0) snprintf(idpart, sizeof idpart, ", schema id %d", id);
    if (err->where[0])
        snprintf(w, sizeof w, "topic %s%s, %s", topic ? topic : "(none)", idpart, err->where);
    else
        snprintf(w, sizeof w, "topic %s%s", topic ? topic : "(none)", idpart);
    memcpy(err->where, w, sizeof w);
}

static bool topic_eq(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

static enc_entry *enc_find(cf_avro_converter *c, const char *topic, const cf_schema *schema) {
    bool topic_matters = c->strategy != CF_SR_RECORD_NAME;
    if (c->nenc) {
        enc_entry *e = &c->enc[c->enc_last];
        if (e->schema == schema && (!topic_matters || topic_eq(e->topic, topic))) return e;
    }
    for (size_t i = 0; i < c->nenc; i++)
        if (c->enc[i].schema == schema && (!topic_matters || topic_eq(c->enc[i].topic, topic))) {
            c->enc_last = i;
            return &c->enc[i];
        }
    for (size_t i = 0; i < c->nenc; i++)
        if ((!topic_matters || topic_eq(c->enc[i].topic, topic)) && cf_schema_equal(c->enc[i].schema, schema)) {
            c->enc_last = i;
            return &c->enc[i];
        }
    return NULL;
}

static cf_code enc_resolve(cf_avro_converter *c, const char *topic, const cf_schema *schema, enc_entry **out,
                           cf_err *err) {
    enc_entry *e = enc_find(c, topic, schema);
    if (e) {
        *out = e;
        return CF_OK;
    }
    cf_avro_codec *codec = NULL;
    cf_code rc = cf_avro_codec_from_connect(schema, &c->opts, &codec, err);
    if (rc) return rc;
    char *subject = cf_sr_subject_name(c->strategy, topic, c->is_key, cf_avro_codec_record_name(codec));
    int32_t id = -1;
    if (c->use_latest) {
        char *json = NULL;
        rc = cf_sr_get_latest(c->client, subject, &id, NULL, &json, err);
        if (rc == CF_OK) {
            cf_avro_codec *latest = NULL;
            rc = cf_avro_codec_from_json(json, strlen(json), &latest, err);
            if (rc == CF_OK) {
                cf_avro_codec_destroy(codec);
                codec = latest;
            } else {
                cf_err_detail(err, "the latest schema of subject %s (id %d) is not usable", subject, id);
            }
        }
        free(json);
    } else if (c->auto_register) {
        rc = cf_sr_register(c->client, subject, cf_avro_codec_json(codec), &id, err);
    } else {
        rc = cf_sr_lookup(c->client, subject, cf_avro_codec_json(codec), &id, NULL, err);
    }
    free(subject);
    if (rc) {
        cf_avro_codec_destroy(codec);
        return rc;
    }
    size_t slot;
    if (c->nenc < c->cap) slot = c->nenc++;
    else {
        slot = c->enc_next;
        c->enc_next = (c->enc_next + 1) % c->cap;
        cf_schema_unref(c->enc[slot].schema);
        free(c->enc[slot].topic);
        cf_avro_codec_destroy(c->enc[slot].codec);
    }
    c->enc[slot].schema = cf_schema_ref((cf_schema *)schema);
    c->enc[slot].topic = topic ? cf_xstrdup(topic) : NULL;
    c->enc[slot].codec = codec;
    c->enc[slot].id = id;
    c->enc_last = slot;
    *out = &c->enc[slot];
    return CF_OK;
}

cf_code cf_avro_converter_write(cf_avro_converter *c, const char *topic, const cf_schema *schema,
                                const cf_value *value, cf_buf *b, bool *is_null, cf_err *err) {
    *is_null = !value;
    if (!value) return CF_OK; /* tombstone / null key */
    if (!schema) {
        cf_err_set(err, CF_ERR_UNSUPPORTED, "the avro converter cannot write schemaless data");
        cf_err_detail(err, "the %s has no Connect schema", c->is_key ? "key" : "value");
        cf_err_hint(err, "Give the records a schema, or use the json converter with schemas.enable=false.");
        where_topic(err, topic, -1);
        return CF_ERR_UNSUPPORTED;
    }
    enc_entry *e;
    cf_code rc = enc_resolve(c, topic, schema, &e, err);
    if (rc) {
        where_topic(err, topic, -1);
        return rc;
    }
    uint8_t hdr[5] = {0, (uint8_t)((uint32_t)e->id >> 24), (uint8_t)((uint32_t)e->id >> 16),
                      (uint8_t)((uint32_t)e->id >> 8), (uint8_t)e->id};
    cf_buf_append(b, hdr, 5);
    rc = cf_avro_codec_encode(e->codec, value, b, err);
    if (rc) where_topic(err, topic, e->id);
    return rc;
}

cf_code cf_avro_converter_from_connect(cf_avro_converter *c, const char *topic, const cf_schema *schema,
                                       const cf_value *value, char **data, size_t *len, cf_err *err) {
    *data = NULL;
    *len = 0;
    cf_buf b = CF_BUF_INIT;
    cf_buf_reserve(&b, 256);
    bool is_null = false;
    cf_code rc = cf_avro_converter_write(c, topic, schema, value, &b, &is_null, err);
    if (rc || is_null) {
        cf_buf_free(&b);
        return rc;
    }
    *data = cf_buf_detach(&b, len);
    return CF_OK;
}

static cf_code dec_resolve(cf_avro_converter *c, int32_t id, cf_avro_codec **out, cf_err *err) {
    if (c->ndec && c->dec[c->dec_last].id == id) {
        *out = c->dec[c->dec_last].codec;
        return CF_OK;
    }
    for (size_t i = 0; i < c->ndec; i++)
        if (c->dec[i].id == id) {
            c->dec_last = i;
            *out = c->dec[i].codec;
            return CF_OK;
        }
    char *json = NULL;
    cf_code rc = cf_sr_get_by_id(c->client, id, &json, err);
    if (rc) return rc;
    cf_avro_codec *codec = NULL;
    rc = cf_avro_codec_from_json(json, strlen(json), &codec, err);
    free(json);
    if (rc) return rc;
    size_t slot;
    if (c->ndec < c->cap) slot = c->ndec++;
    else {
        slot = c->dec_next;
        c->dec_next = (c->dec_next + 1) % c->cap;
        cf_avro_codec_destroy(c->dec[slot].codec);
    }
    c->dec[slot].id = id;
    c->dec[slot].codec = codec;
    c->dec_last = slot;
    *out = codec;
    return CF_OK;
}

cf_code cf_avro_converter_to_connect(cf_avro_converter *c, const char *topic, const char *data, size_t len,
                                     cf_schema **schema, cf_value **value, cf_err *err) {
    *schema = NULL;
    *value = NULL;
    if (!data) return CF_OK;
    const uint8_t *p = (const uint8_t *)data;
    if (len < 5) {
        cf_err_set(err, CF_ERR_CORRUPT, "%s too short for Confluent's Avro wire format", c->is_key ? "key" : "value");
        cf_err_detail(err, "%zu byte(s); at least 5 are needed (magic byte 0 and a 4-byte schema id)", len);
        cf_err_hint(err, "Was the topic written by another serializer (JSON, string)? Use the matching converter.");
        where_topic(err, topic, -1);
        return CF_ERR_CORRUPT;
    }
    if (p[0] != 0) {
        cf_err_set(err, CF_ERR_CORRUPT, "unknown magic byte in %s", c->is_key ? "key" : "value");
        cf_err_detail(err, "first byte is 0x%02x, Confluent's wire format starts with 0x00", p[0]);
        cf_err_hint(err, "Was the topic written by another serializer (JSON, string)? Use the matching converter.");
        where_topic(err, topic, -1);
        return CF_ERR_CORRUPT;
    }
    int32_t id = (int32_t)(((uint32_t)p[1] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 8) | p[4]);
    cf_avro_codec *codec;
    cf_code rc = dec_resolve(c, id, &codec, err);
    if (rc) {
        where_topic(err, topic, id);
        return rc;
    }
    cf_value *v = NULL;
    rc = cf_avro_codec_decode(codec, p + 5, len - 5, &v, err);
    if (rc) {
        if (err && err->code == CF_ERR_CORRUPT) {
            char d[sizeof err->detail];
            memcpy(d, err->detail, sizeof d);
            cf_err_detail(err, "%s (offsets count from the byte after the 5-byte header)", d);
        }
        where_topic(err, topic, id);
        return rc;
    }
    *schema = cf_schema_ref(cf_avro_codec_schema(codec));
    *value = v;
    return CF_OK;
}
