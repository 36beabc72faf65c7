/*
 * cdc_pipeline.h - runs a generator's records through what the worker does
 * before a sink's put: a converter to bytes (the source side: Debezium's
 * key/value converter) and back (the sink side: the worker's converters,
 * other instances with caches of their own), then the connector's
 * transforms chain (e.g. ExtractNewRecordState), keeping partition and
 * offset. Records a transform drops leave a gap in the offsets, as in Kafka.
 * The JsonConverter (schemas.enable=true) by default; any converter by name
 * (e.g. "avro" with schema.registry.url) with pipeline_apply_conv.
 */
#ifndef CDC_PIPELINE_H
#define CDC_PIPELINE_H

#include "cdc_gen.h"
#include "cdcflow/convert.h"
#include "cdcflow/props.h"
#include "cdcflow/transforms.h"

typedef struct pipeline_stats {
    size_t dropped;                  /* records the transforms dropped */
    uint64_t key_bytes, value_bytes; /* converted bytes, keys and values */
} pipeline_stats;

/* conv, conv_props: the converter of keys and values and its settings;
 * conf: connector settings with "transforms" (may be NULL: converter only).
 * Returns 0 or a cf_code with err filled. */
static inline int pipeline_apply_conv(gen *g, const char *conv, const cf_props *conv_props, const cf_props *conf,
                                      pipeline_stats *st, cf_err *err) {
    cf_converter *kc = NULL, *vc = NULL, *kd = NULL, *vd = NULL; /* encoders (source side), decoders (sink side) */
    cf_transform_chain *chain = NULL;
    int rc = cf_converter_new(conv, conv_props, true, &kc, err);
    if (!rc) rc = cf_converter_new(conv, conv_props, false, &vc, err);
    if (!rc) rc = cf_converter_new(conv, conv_props, true, &kd, err);
    if (!rc) rc = cf_converter_new(conv, conv_props, false, &vd, err);
    if (!rc && conf) rc = cf_transform_chain_new(conf, &chain, err);
    memset(st, 0, sizeof *st);
    for (int p = 0; !rc && p < g->n_part; p++) {
        size_t k = 0;
        for (size_t i = 0; i < g->n_recs[p]; i++) {
            cf_record *r = g->recs[p][i];
            g->recs[p][i] = NULL;
            if (rc) {
                cf_record_destroy(r);
                continue;
            }
            char *kb = NULL, *vb = NULL;
            size_t kl = 0, vl = 0;
            rc = cf_converter_from_connect(kc, r->topic, r->key_schema, r->key, &kb, &kl, err);
            if (!rc) rc = cf_converter_from_connect(vc, r->topic, r->value_schema, r->value, &vb, &vl, err);
            cf_record *c = cf_record_new();
            cf_record_set_topic(c, r->topic);
            c->partition = r->partition;
            c->offset = r->offset;
            cf_record_destroy(r);
            cf_schema *ks = NULL, *vs = NULL;
            cf_value *kv = NULL, *vv = NULL;
            st->key_bytes += kl, st->value_bytes += vl;
            if (!rc) rc = cf_converter_to_connect(kd, c->topic, kb, kl, &ks, &kv, err);
            if (!rc) rc = cf_converter_to_connect(vd, c->topic, vb, vl, &vs, &vv, err);
            free(kb), free(vb);
            cf_record_set_key(c, ks, kv);
            cf_record_set_value(c, vs, vv);
            if (rc) {
                cf_record_destroy(c);
                continue;
            }
            cf_record *out = c;
            if (chain) rc = cf_transform_chain_apply(chain, c, &out, err);
            if (rc) continue;
            if (!out) {
                st->dropped++;
                continue;
            }
            g->recs[p][k++] = out;
        }
        g->total -= g->n_recs[p] - k;
        g->n_recs[p] = k;
    }
    cf_transform_chain_destroy(chain);
    cf_converter_destroy(kc);
    cf_converter_destroy(vc);
    cf_converter_destroy(kd);
    cf_converter_destroy(vd);
    return rc;
}

/* The JsonConverter with schemas.enable=true. */
static inline int pipeline_apply(gen *g, const cf_props *conf, size_t *dropped, cf_err *err) {
    cf_props *pp = cf_props_new();
    cf_props_set(pp, "schemas.enable", "true");
    pipeline_stats st;
    int rc = pipeline_apply_conv(g, "json", pp, conf, &st, err);
    *dropped = st.dropped;
    cf_props_destroy(pp);
    return rc;
}

/* The connector settings of ExtractNewRecordState in a given mode. */
static inline cf_props *unwrap_conf(const char *k1, const char *v1, const char *k2, const char *v2) {
    cf_props *c = cf_props_new();
    cf_props_set(c, "transforms", "unwrap");
    cf_props_set(c, "transforms.unwrap.type", "io.debezium.transforms.ExtractNewRecordState");
    if (k1) cf_props_set(c, k1, v1);
    if (k2) cf_props_set(c, k2, v2);
    return c;
}

#endif
