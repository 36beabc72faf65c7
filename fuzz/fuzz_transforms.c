/*
 * fuzz_transforms.c - libFuzzer target for the transform chain.
 *
 * The first input byte picks ExtractNewRecordState's mode and options, the
 * rest is a message decoded by the JsonConverter (schemas on). The record
 * then goes through ExtractNewRecordState, ReplaceField$Value and
 * RegexRouter, and a copy of it through a second chain of Connect's SMTs
 * that the same byte picks from (Flatten, Cast, MaskField, InsertField,
 * ValueToKey, ExtractField with V2 paths, HoistField, SetSchemaMetadata,
 * TimestampRouter, Filter under predicates). Each step may refuse the
 * record with an error; when it succeeds its output must be consistent:
 * key and value must validate against their schemas and the JsonConverter
 * must be able to write the value. Crashes, leaks and sanitizer reports
 * abort too.
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

/* The second chain: Connect's SMTs, a selection by `sel`. */
static cf_transform_chain *connect_chain(uint8_t sel) {
    cf_props *p = cf_props_new();
    static const char *const pick[8] = {
        "flat,cast,mask,ins,vtk,dropTomb",  "cast,ins,hoist,ssm,route",     "flat,vtk,efk,mask",
        "mask,ssm,ef,cast2",                "ins,flat,cast2,vtk,hoistk",    "vtk,efk,hoistk,dropTopic",
        "flat,mask,ins,ssm,route,dropTomb", "ef,flat,cast,mask,ins,vtk,efk"};
    cf_props_set(p, "transforms", pick[(sel >> 5) & 7]);
    cf_props_set(p, "transforms.flat.type", "org.apache.kafka.connect.transforms.Flatten$Value");
    cf_props_set(p, "transforms.flat.delimiter", "_");
    cf_props_set(p, "transforms.cast.type", "org.apache.kafka.connect.transforms.Cast$Value");
    cf_props_set(p, "transforms.cast.spec", "id:string,name:int32,after_id:float64,x:boolean");
    cf_props_set(p, "transforms.cast2.type", "org.apache.kafka.connect.transforms.Cast$Value");
    cf_props_set(p, "transforms.cast2.spec", (sel & 1) ? "string" : "int64");
    cf_props_set(p, "transforms.mask.type", "org.apache.kafka.connect.transforms.MaskField$Value");
    cf_props_set(p, "transforms.mask.fields", "email,name,id,after_email");
    if (sel & 2) cf_props_set(p, "transforms.mask.replacement", "7");
    cf_props_set(p, "transforms.ins.type", "org.apache.kafka.connect.transforms.InsertField$Value");
    cf_props_set(p, "transforms.ins.topic.field", "t!");
    cf_props_set(p, "transforms.ins.partition.field", "p");
    cf_props_set(p, "transforms.ins.timestamp.field", "ts");
    cf_props_set(p, "transforms.ins.static.field", "s");
    cf_props_set(p, "transforms.ins.static.value", "v");
    cf_props_set(p, "transforms.vtk.type", "org.apache.kafka.connect.transforms.ValueToKey");
    cf_props_set(p, "transforms.vtk.fields", (sel & 4) ? "id" : "id,name");
    cf_props_set(p, "transforms.efk.type", "org.apache.kafka.connect.transforms.ExtractField$Key");
    cf_props_set(p, "transforms.efk.field", "id");
    cf_props_set(p, "transforms.ef.type", "org.apache.kafka.connect.transforms.ExtractField$Value");
    cf_props_set(p, "transforms.ef.field.syntax.version", "V2");
    cf_props_set(p, "transforms.ef.field", (sel & 8) ? "after" : "after.`a.b`");
    cf_props_set(p, "transforms.hoist.type", "org.apache.kafka.connect.transforms.HoistField$Value");
    cf_props_set(p, "transforms.hoist.field", "row");
    cf_props_set(p, "transforms.hoistk.type", "org.apache.kafka.connect.transforms.HoistField$Key");
    cf_props_set(p, "transforms.hoistk.field", "k");
    cf_props_set(p, "transforms.ssm.type", "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value");
    cf_props_set(p, "transforms.ssm.schema.name", "x.Y");
    cf_props_set(p, "transforms.ssm.schema.version", "3");
    cf_props_set(p, "transforms.route.type", "org.apache.kafka.connect.transforms.TimestampRouter");
    cf_props_set(p, "transforms.route.timestamp.format", "yyyy-MM-dd'T'HH");
    cf_props_set(p, "transforms.dropTomb.type", "org.apache.kafka.connect.transforms.Filter");
    cf_props_set(p, "transforms.dropTomb.predicate", "tomb");
    cf_props_set(p, "transforms.dropTopic.type", "org.apache.kafka.connect.transforms.Filter");
    cf_props_set(p, "transforms.dropTopic.predicate", "topic");
    cf_props_set(p, "transforms.dropTopic.negate", (sel & 16) ? "true" : "false");
    cf_props_set(p, "predicates", "tomb,topic,hdr");
    cf_props_set(p, "predicates.tomb.type", "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone");
    cf_props_set(p, "predicates.topic.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches");
    cf_props_set(p, "predicates.topic.pattern", "db[a-z0-9]+\\..*");
    cf_props_set(p, "predicates.hdr.type", "org.apache.kafka.connect.transforms.predicates.HasHeaderKey");
    cf_props_set(p, "predicates.hdr.name", "op");
    cf_transform_chain *c = NULL;
    if (cf_transform_chain_new(p, &c, NULL) != CF_OK) abort();
    cf_props_destroy(p);
    return c;
}

static void check_output(cf_converter *c, cf_record *out) {
    cf_err err;
    if (out->value_schema && out->value && cf_value_validate(out->value_schema, out->value, &err) != CF_OK) {
        fprintf(stderr, "transform output does not match its schema: %s at %s\n", err.message, err.where);
        abort();
    }
    if (out->key_schema && out->key && cf_value_validate(out->key_schema, out->key, &err) != CF_OK) {
        fprintf(stderr, "transform output key does not match its schema: %s at %s\n", err.message, err.where);
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
}

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
        r->partition = 0;
        r->offset = 5;
        r->timestamp = 1483425001864LL;
        r->ts_type = CF_TS_CREATE;
        cf_record *copy = cf_record_clone(r);
        cf_record *out = NULL;
        cf_err err;
        if (cf_transform_chain_apply(chain, r, &out, &err) == CF_OK && out) {
            check_output(c, out);
            cf_record_destroy(out);
        }
        cf_transform_chain *c2 = connect_chain(sel);
        out = NULL;
        if (cf_transform_chain_apply(c2, copy, &out, &err) == CF_OK && out) {
            check_output(c, out);
            cf_record_destroy(out);
        }
        cf_transform_chain_destroy(c2);
    }
    cf_converter_destroy(c);
    cf_transform_chain_destroy(chain);
    return 0;
}
