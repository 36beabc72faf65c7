/*
 * bench_avro_converter.c - AvroConverter throughput, records/s, encode and decode, against
 * avro-c alone on the same datum in the same run.
 *
 * The record is a Debezium-style change event (envelope with before/after rows of 9 columns
 * including a decimal, a timestamp, an optional string and an array, op, ts_ms, a source
 * struct). The registry is a cache-only client preloaded with the schema, so no HTTP is
 * measured (ids are cached after the first record in real runs too).
 *
 *   encode:   cf_avro_converter_from_connect (cache lookup, Connect -> avro-c value, write,
 *             5-byte header, malloc'd output)
 *   baseline: avro-c's avro_value_write of the same, already filled generic value
 *   decode:   cf_avro_converter_to_connect (header, input check, avro-c read, -> cf_value)
 *   baseline: avro-c's avro_value_read of the same bytes into its generic value
 *
 * The four run interleaved in rounds of 1000 records, so that load from other processes on a
 * shared machine hits them alike.
 *
 * Usage: bench_avro_converter [seconds, about that much per measurement, default 2]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcflow/avro.h"
#include "cdcflow/schema_registry.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static cf_schema *row_schema(void) {
    cf_schema *r = cf_schema_new_struct();
    cf_schema_set_name(r, "dbserver1.inventory.customers.Value");
    cf_schema_add_field(r, "id", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(r, "first_name", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(r, "last_name", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(r, "email", cf_schema_primitive(CF_STRING, true), NULL);
    cf_schema *d = cf_schema_decimal(2);
    cf_schema_set_optional(d, true);
    cf_schema_add_field(r, "balance", d, NULL);
    cf_schema_add_field(r, "created", cf_schema_timestamp(), NULL);
    cf_schema_add_field(r, "active", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema_add_field(r, "score", cf_schema_primitive(CF_FLOAT64, false), NULL);
    cf_schema_add_field(r, "tags", cf_schema_new_array(cf_schema_primitive(CF_STRING, false)), NULL);
    cf_schema_set_optional(r, true);
    return r;
}

static cf_value *row_value(const cf_schema *rs, int64_t id) {
    cf_value *v = cf_value_struct(cf_schema_ref((cf_schema *)rs));
    cf_value_struct_set(v, "id", cf_value_int64(id), NULL);
    cf_value_struct_set(v, "first_name", cf_value_string("Anne Marie"), NULL);
    cf_value_struct_set(v, "last_name", cf_value_string("Kretchmar"), NULL);
    cf_value_struct_set(v, "email", cf_value_string("annek@noanswer.org"), NULL);
    uint8_t *u;
    size_t ul;
    cf_decimal_from_string("12345.67", 2, &u, &ul, NULL);
    cf_value_struct_set(v, "balance", cf_value_bytes_take(u, ul), NULL);
    cf_value_struct_set(v, "created", cf_value_int64(1700000000123LL), NULL);
    cf_value_struct_set(v, "active", cf_value_bool(true), NULL);
    cf_value_struct_set(v, "score", cf_value_float64(0.875), NULL);
    cf_value *tags = cf_value_array();
    cf_value_array_push(tags, cf_value_string("vip"));
    cf_value_array_push(tags, cf_value_string("newsletter"));
    cf_value_struct_set(v, "tags", tags, NULL);
    return v;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    if (secs <= 0) secs = 2.0;
    cf_schema *rs = row_schema();
    cf_schema *src = cf_schema_new_struct();
    cf_schema_set_name(src, "io.debezium.connector.postgresql.Source");
    cf_schema_add_field(src, "version", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(src, "lsn", cf_schema_primitive(CF_INT64, true), NULL);
    cf_schema_add_field(src, "table", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema *env = cf_schema_new_struct();
    cf_schema_set_name(env, "dbserver1.inventory.customers.Envelope");
    cf_schema_set_version(env, 1);
    cf_schema_add_field(env, "before", cf_schema_ref(rs), NULL);
    cf_schema_add_field(env, "after", cf_schema_ref(rs), NULL);
    cf_schema_add_field(env, "source", src, NULL);
    cf_schema_add_field(env, "op", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(env, "ts_ms", cf_schema_primitive(CF_INT64, true), NULL);

    cf_value *v = cf_value_struct(cf_schema_ref(env));
    cf_value_struct_set(v, "after", row_value(rs, 1004), NULL);
    cf_value *sv = cf_value_struct(cf_schema_ref(src));
    cf_value_struct_set(sv, "version", cf_value_string("3.6.1.Final"), NULL);
    cf_value_struct_set(sv, "lsn", cf_value_int64(33227720), NULL);
    cf_value_struct_set(sv, "table", cf_value_string("customers"), NULL);
    cf_value_struct_set(v, "source", sv, NULL);
    cf_value_struct_set(v, "op", cf_value_string("c"), NULL);
    cf_value_struct_set(v, "ts_ms", cf_value_int64(1700000000456LL), NULL);

    cf_err err;
    cf_avro_codec *codec;
    if (cf_avro_codec_from_connect(env, NULL, &codec, &err)) {
        fprintf(stderr, "codec: %s\n", err.message);
        return 1;
    }
    cf_sr_config cfg;
    cf_sr_config_init(&cfg);
    cf_sr_client *sr;
    cf_sr_client_new(&cfg, &sr, NULL);
    cf_sr_cache_put_registered(sr, "customers-value", cf_avro_codec_json(codec), 42);
    cf_avro_converter *conv;
    cf_avro_converter_new_with_client(NULL, false, sr, &conv, NULL);

    /* The four measurements run interleaved, 1000 records each per round, so that load from
     * other processes on a shared machine hits them alike and the ratios stay meaningful. */
    char *data = NULL;
    size_t len = 0;
    if (cf_avro_converter_from_connect(conv, "customers", env, v, &data, &len, &err)) {
        fprintf(stderr, "encode: %s %s at %s\n", err.message, err.detail, err.where);
        return 1;
    }
    char *wire = malloc(len);
    memcpy(wire, data, len);
    char buf[4096];
    double t_enc = 0, t_benc = 0, t_dec = 0, t_bdec = 0;
    long rounds = 0;
    double start = now();
    do {
        double t0 = now();
        for (int i = 0; i < 1000; i++) {
            free(data);
            if (cf_avro_converter_from_connect(conv, "customers", env, v, &data, &len, &err)) {
                fprintf(stderr, "encode: %s %s at %s\n", err.message, err.detail, err.where);
                return 1;
            }
        }
        double t1 = now();
        /* baseline encode: avro-c alone, writing the same datum from its filled generic value */
        if (cf_avro_codec_prepare_bare(codec, v, &err)) {
            fprintf(stderr, "prepare: %s\n", err.message);
            return 1;
        }
        double t2 = now();
        for (int i = 0; i < 1000; i++)
            if (cf_avro_codec_encode_bare(codec, buf, sizeof buf) < 0) return 1;
        double t3 = now();
        for (int i = 0; i < 1000; i++) {
            cf_schema *s;
            cf_value *out;
            if (cf_avro_converter_to_connect(conv, "customers", wire, len, &s, &out, &err)) {
                fprintf(stderr, "decode: %s %s at %s\n", err.message, err.detail, err.where);
                return 1;
            }
            cf_value_destroy(out);
            cf_schema_unref(s);
        }
        double t4 = now();
        /* baseline decode: avro-c's read of the same bytes into its generic value */
        for (int i = 0; i < 1000; i++)
            if (cf_avro_codec_decode_bare(codec, wire + 5, len - 5)) return 1;
        double t5 = now();
        t_enc += t1 - t0;
        t_benc += t3 - t2;
        t_dec += t4 - t3;
        t_bdec += t5 - t4;
        rounds++;
    } while (now() - start < 4 * secs);
    double n = rounds * 1000.0;
    double enc_rate = n / t_enc, base_enc = n / t_benc, dec_rate = n / t_dec, base_dec = n / t_bdec;
    free(wire);

    printf("avro converter, Debezium-style envelope, %zu bytes per message (avro-c %s)\n", len, CF_AVRO_C_VERSION);
    printf("  encode  cf_avro_converter_from_connect  %10.0f records/s  %7.1f MB/s\n", enc_rate, enc_rate * len / 1e6);
    printf("  base    avro-c avro_value_write         %10.0f records/s\n", base_enc);
    printf("  ratio   encode / avro-c write           %10.2f\n", enc_rate / base_enc);
    printf("  decode  cf_avro_converter_to_connect    %10.0f records/s  %7.1f MB/s\n", dec_rate, dec_rate * len / 1e6);
    printf("  base    avro-c avro_value_read          %10.0f records/s\n", base_dec);
    printf("  ratio   decode / avro-c read            %10.2f\n", dec_rate / base_dec);

    free(data);
    cf_avro_converter_destroy(conv);
    cf_sr_client_destroy(sr);
    cf_avro_codec_destroy(codec);
    cf_value_destroy(v);
    cf_schema_unref(env);
    cf_schema_unref(rs);
    return 0;
}
