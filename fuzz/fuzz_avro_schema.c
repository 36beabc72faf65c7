/*
 * fuzz_avro_schema.c - libFuzzer target: Avro schema JSON as it arrives from a Schema
 * Registry (so: outside input) -> our parser, the Connect mapping and avro-c.
 *
 * Invariants beyond "no crash, no leak, no UB": every rejection carries a message; an accepted
 * schema maps to a Connect schema that maps back to Avro JSON; the mapping is stable after one
 * trip (Connect S1 -> Avro -> S2 -> Avro -> S3 gives S2 == S3). S1 == S2 does not always hold,
 * nor is the JSON of S1 always accepted: as with Java's AvroData, a schema can carry Connect
 * metadata that contradicts its Avro type (a plain bytes schema with connect.name
 * org.apache.kafka.connect.data.Decimal reads as bytes but writes back as a decimal).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/avro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 65536) return 0;
    cf_avro_codec *c = NULL;
    cf_err err;
    if (cf_avro_codec_from_json((const char *)data, size, &c, &err) != CF_OK) {
        if (err.message[0] == '\0') abort();
        return 0;
    }
    char *json = NULL;
    if (cf_avro_schema_from_connect(cf_avro_codec_schema(c), NULL, &json, &err) == CF_OK) {
        cf_schema *back = NULL;
        if (cf_avro_schema_to_connect(json, strlen(json), &back, &err) != CF_OK) {
            if (err.message[0] == '\0') abort();
        } else {
            char *json2 = NULL;
            cf_schema *back2 = NULL;
            if (cf_avro_schema_from_connect(back, NULL, &json2, &err) == CF_OK) {
                if (cf_avro_schema_to_connect(json2, strlen(json2), &back2, &err) != CF_OK ||
                    !cf_schema_equal(back, back2)) {
                    fprintf(stderr, "the mapping is not stable after one trip:\n%s\n%s\n", json, json2);
                    abort();
                }
            }
            cf_schema_unref(back2);
            free(json2);
        }
        cf_schema_unref(back);
        free(json);
    }
    cf_value *v = NULL;
    if (cf_avro_codec_decode(c, "", 0, &v, &err) == CF_OK) cf_value_destroy(v);
    cf_avro_codec_destroy(c);
    return 0;
}
