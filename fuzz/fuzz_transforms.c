/*
 * fuzz_transforms.c - libFuzzer target for the transform chain.
 *
 * The first input byte picks ExtractNewRecordState's mode and options, the
 * rest is a message decoded by the JsonConverter (schemas on). The record
 * then goes through ExtractNewRecordState, ReplaceField$Value and
 * RegexRouter. Each step may refuse the record with an error; when it
 * succeeds its output must be consistent: the value must validate against
 * its schema and the JsonConverter must be able to write it. Crashes, leaks
 * and sanitizer reports abort too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/convert.h"
#include "cdcflow/props.h"
#include "cdcflow/record.h"
#include "cdcflow/transforms.h"

static const char *const modes[] = {"drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone",
                                    NULL, NULL, NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    cf_props *p = cf_props_new();
    cf_props_set(p, "transforms", "unwrap,drop,route");
    cf_props_set(p, "transforms.unwrap.type", "io.debezium.transforms.ExtractNewRecordState");
    if (modes[sel & 7]) cf_props_set(p, "transforms.unwrap.delete.tombstone.handling.mode", modes[sel & 7]);
    else if (sel & 1) cf_props_set(p, "transforms.unwrap.delete.handling.mode", "rewrite");
    if (sel & 8) cf_props_set(p, "transforms.unwrap.add.fields", "op,source.ts_ms,transaction.id,lsn:x");
    if (sel & 16) cf_props_set(p, "transforms.unwrap.add.headers", "op,source.db");
    if (sel & 32) cf_props_set(p, "transforms.unwrap.route.by.field", "name");
    if (sel & 64) cf_props_set(p, "transforms.unwrap.replace.null.with.default", "false");
    cf_props_set(p, "transforms.drop.type", "org.apache.kafka.connect.transforms.ReplaceField$Value");
    cf_props_set(p, "transforms.drop.exclude", "email");
    cf_props_set(p, "transforms.drop.renames", "name:full_name");
    cf_props_set(p, "transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter");
    cf_props_set(p, "transforms.route.regex", "([a-z]+)\\.(.*)");
    cf_props_set(p, "transforms.route.replacement", "$2_$1");
    cf_transform_chain *chain = NULL;
    if (cf_transform_chain_new(p, &chain, NULL) != CF_OK) abort();
    cf_props_destroy(p);
    cf_converter *c = NULL;
    if (cf_converter_new("json", NULL, false, &c, NULL) != CF_OK) abort();

    cf_schema *s = NULL;
    cf_value *v = NULL;
    const char *msg = size > 1 ? (const char *)data + 1 : NULL; /* one byte alone: a tombstone */
    if (cf_converter_to_connect(c, "t", msg, size - 1, &s, &v, NULL) == CF_OK) {
        cf_record *r = cf_record_new();
        cf_record_set_topic(r, "dbserver1.public.customers");
        cf_record_set_value(r, s, v);
        cf_record *out = NULL;
        cf_err err;
        if (cf_transform_chain_apply(chain, r, &out, &err) == CF_OK && out) {
            if (out->value_schema && out->value && cf_value_validate(out->value_schema, out->value, &err) != CF_OK) {
                fprintf(stderr, "transform output does not match its schema: %s at %s\n", err.message, err.where);
                abort();
            }
            char *json = NULL;
            size_t len;
            if (cf_converter_from_connect(c, out->topic, out->value_schema, out->value, &json, &len, &err) != CF_OK &&
                !(out->value_schema && !out->value && !out->value_schema->optional)) {
                fprintf(stderr, "cannot write the transform output: %s at %s\n", err.message, err.where);
                abort();
            }
            free(json);
            if (!out->topic || !*out->topic) {
                fprintf(stderr, "empty topic after the chain\n");
                abort();
            }
            cf_record_destroy(out);
        }
    }
    cf_converter_destroy(c);
    cf_transform_chain_destroy(chain);
    return 0;
}
