/*
 * fuzz_avro_decode.c - libFuzzer target: AvroConverter.to_connect on arbitrary bytes with a
 * fixed writer schema (id 1) held in a cache-only registry client, so no HTTP is involved.
 *
 * Input: the first byte picks the mode. Even: the rest is an Avro body and the 5-byte wire
 * header for id 1 is put in front (so most effort goes into the Avro decoder). Odd: the rest is
 * the whole message, header included (magic byte, unknown ids, short input).
 *
 * Invariants checked beyond "no crash, no leak, no UB": a message that decodes must encode
 * again with the same schema, and that encoding must decode and re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/avro.h"
#include "cdcflow/schema_registry.h"

static const char *WRITER =
    "{\"type\":\"record\",\"name\":\"Envelope\",\"namespace\":\"fuzz\",\"fields\":["
    "{\"name\":\"i8\",\"type\":{\"type\":\"int\",\"connect.type\":\"int8\"}},"
    "{\"name\":\"l\",\"type\":\"long\"},"
    "{\"name\":\"f\",\"type\":\"float\"},{\"name\":\"d\",\"type\":\"double\"},{\"name\":\"b\",\"type\":\"boolean\"},"
    "{\"name\":\"s\",\"type\":[\"null\",\"string\"],\"default\":null},"
    "{\"name\":\"dec\",\"type\":{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":20,\"scale\":2}},"
    "{\"name\":\"day\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}},"
    "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"Color\",\"symbols\":[\"RED\",\"GREEN\"]}},"
    "{\"name\":\"fx\",\"type\":{\"type\":\"fixed\",\"name\":\"Four\",\"size\":4}},"
    "{\"name\":\"u\",\"type\":[\"int\",\"string\",\"null\"]},"
    "{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"items\":[\"null\",\"string\"]}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"long\"}},"
    "{\"name\":\"nsk\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"MapEntry\","
    "\"namespace\":\"io.confluent.connect.avro\",\"fields\":[{\"name\":\"key\",\"type\":\"int\"},"
    "{\"name\":\"value\",\"type\":\"string\"}]}}},"
    "{\"name\":\"empties\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"Empty\",\"fields\":[]}}},"
    "{\"name\":\"inner\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"Inner\",\"fields\":["
    "{\"name\":\"x\",\"type\":\"int\"},{\"name\":\"ys\",\"type\":{\"type\":\"array\",\"items\":\"double\"}}]}]}"
    "]}";

static cf_sr_client *client;
static cf_avro_converter *conv;
static cf_avro_codec *codec;

/* Free the long-lived objects at exit, so LeakSanitizer's exit check sees only real leaks
 * (registered after LSan's own handler, so it runs first). */
static void cleanup(void) {
    cf_avro_codec_destroy(codec);
    cf_avro_converter_destroy(conv);
    cf_sr_client_destroy(client);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!client) {
        atexit(cleanup);
        cf_sr_config cfg;
        cf_sr_config_init(&cfg);
        cf_err err;
        if (cf_sr_client_new(&cfg, &client, &err) ||
            cf_avro_converter_new_with_client(NULL, false, client, &conv, &err) ||
            cf_avro_codec_from_json(WRITER, strlen(WRITER), &codec, &err)) {
            fprintf(stderr, "setup failed: %s: %s\n", err.message, err.detail);
            abort();
        }
        cf_sr_cache_put(client, 1, WRITER);
    }
    if (size == 0) return 0;
    uint8_t *msg;
    size_t len;
    if ((data[0] & 1) == 0) {
        len = size - 1 + 5;
        msg = malloc(len);
        memcpy(msg, "\0\0\0\0\1", 5);
        memcpy(msg + 5, data + 1, size - 1);
    } else {
        len = size - 1;
        msg = malloc(len ? len : 1);
        memcpy(msg, data + 1, len);
    }
    cf_schema *s = NULL;
    cf_value *v = NULL;
    cf_err err;
    cf_code rc = cf_avro_converter_to_connect(conv, "fuzz", (const char *)msg, len, &s, &v, &err);
    if (rc == CF_OK) {
        cf_buf a = CF_BUF_INIT, b = CF_BUF_INIT;
        cf_value *v2 = NULL;
        if (cf_avro_codec_encode(codec, v, &a, &err)) {
            fprintf(stderr, "decoded value does not encode again: %s %s at %s\n", err.message, err.detail, err.where);
            abort();
        }
        if (cf_avro_codec_decode(codec, a.data, a.len, &v2, &err) || cf_avro_codec_encode(codec, v2, &b, &err) ||
            a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
            fprintf(stderr, "re-encoding is not stable: %s\n", err.message);
            abort();
        }
        cf_value_destroy(v2);
        cf_buf_free(&a);
        cf_buf_free(&b);
    } else if (err.message[0] == '\0') {
        fprintf(stderr, "error without a message (code %d)\n", rc);
        abort();
    }
    cf_value_destroy(v);
    cf_schema_unref(s);
    free(msg);
    return 0;
}
