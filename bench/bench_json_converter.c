/*
 * bench_json_converter.c - JsonConverter decode speed on a Debezium change
 * event, against jansson's bare json_loadb of the same bytes in the same run.
 *
 * The message is a Debezium Postgres UPDATE envelope with schemas.enable=true
 * (schema of before/after/source/op/ts_ms/transaction + payload), shaped like
 * the example in Debezium's postgresql.adoc, about 3.5 KB. The converter does
 * strictly more work than json_loadb (it also builds typed Connect values and
 * checks them against the schema; the schema itself comes from its cache
 * after the first message), so ratio = converter / jansson in records/s tells
 * how much the typed decoding costs over bare parsing.
 *
 *   build/bench/bench_json_converter [seconds-per-side, default 2]
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcflow/convert.h"
#include "cdcflow/schema.h"

static const char *ROW_FIELDS =
    "{\"type\":\"int32\",\"optional\":false,\"default\":0,\"field\":\"id\"},"
    "{\"type\":\"string\",\"optional\":false,\"field\":\"first_name\"},"
    "{\"type\":\"string\",\"optional\":false,\"field\":\"last_name\"},"
    "{\"type\":\"string\",\"optional\":false,\"field\":\"email\"},"
    "{\"type\":\"bytes\",\"optional\":true,\"name\":\"org.apache.kafka.connect.data.Decimal\",\"version\":1,"
    "\"parameters\":{\"scale\":\"2\",\"connect.decimal.precision\":\"10\"},\"field\":\"balance\"},"
    "{\"type\":\"int64\",\"optional\":true,\"name\":\"io.debezium.time.MicroTimestamp\",\"version\":1,\"field\":\"updated_at\"},"
    "{\"type\":\"boolean\",\"optional\":true,\"field\":\"active\"}";

static char *make_message(void) {
    char *buf = malloc(16384);
    int n = snprintf(
        buf, 16384,
        "{\"schema\":{\"type\":\"struct\",\"fields\":["
        "{\"type\":\"struct\",\"fields\":[%s],\"optional\":true,\"name\":\"dbserver1.inventory.customers.Value\",\"field\":\"before\"},"
        "{\"type\":\"struct\",\"fields\":[%s],\"optional\":true,\"name\":\"dbserver1.inventory.customers.Value\",\"field\":\"after\"},"
        "{\"type\":\"struct\",\"fields\":["
        "{\"type\":\"string\",\"optional\":false,\"field\":\"version\"},"
        "{\"type\":\"string\",\"optional\":false,\"field\":\"connector\"},"
        "{\"type\":\"string\",\"optional\":false,\"field\":\"name\"},"
        "{\"type\":\"int64\",\"optional\":false,\"field\":\"ts_ms\"},"
        "{\"type\":\"string\",\"optional\":true,\"name\":\"io.debezium.data.Enum\",\"version\":1,"
        "\"parameters\":{\"allowed\":\"true,last,false,incremental\"},\"default\":\"false\",\"field\":\"snapshot\"},"
        "{\"type\":\"string\",\"optional\":false,\"field\":\"db\"},"
        "{\"type\":\"string\",\"optional\":true,\"field\":\"sequence\"},"
        "{\"type\":\"string\",\"optional\":false,\"field\":\"schema\"},"
        "{\"type\":\"string\",\"optional\":false,\"field\":\"table\"},"
        "{\"type\":\"int64\",\"optional\":true,\"field\":\"txId\"},"
        "{\"type\":\"int64\",\"optional\":true,\"field\":\"lsn\"},"
        "{\"type\":\"int64\",\"optional\":true,\"field\":\"xmin\"}"
        "],\"optional\":false,\"name\":\"io.debezium.connector.postgresql.Source\",\"field\":\"source\"},"
        "{\"type\":\"string\",\"optional\":false,\"field\":\"op\"},"
        "{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_ms\"},"
        "{\"type\":\"struct\",\"fields\":["
        "{\"type\":\"string\",\"optional\":false,\"field\":\"id\"},"
        "{\"type\":\"int64\",\"optional\":false,\"field\":\"total_order\"},"
        "{\"type\":\"int64\",\"optional\":false,\"field\":\"data_collection_order\"}"
        "],\"optional\":true,\"name\":\"event.block\",\"version\":1,\"field\":\"transaction\"}"
        "],\"optional\":false,\"name\":\"dbserver1.inventory.customers.Envelope\",\"version\":1},"
        "\"payload\":{"
        "\"before\":{\"id\":1004,\"first_name\":\"Anne\",\"last_name\":\"Kretchmar\",\"email\":\"annek@noanswer.org\","
        "\"balance\":\"AJw=\",\"updated_at\":1559033904863123,\"active\":true},"
        "\"after\":{\"id\":1004,\"first_name\":\"Anne Marie\",\"last_name\":\"Kretchmar\",\"email\":\"annek@noanswer.org\","
        "\"balance\":\"ATk=\",\"updated_at\":1559033904863456,\"active\":true},"
        "\"source\":{\"version\":\"2.7.0.Final\",\"connector\":\"postgresql\",\"name\":\"dbserver1\",\"ts_ms\":1559033904863,"
        "\"snapshot\":\"false\",\"db\":\"postgres\",\"sequence\":\"[\\\"24023119\\\",\\\"24023128\\\"]\",\"schema\":\"inventory\","
        "\"table\":\"customers\",\"txId\":556,\"lsn\":24023128,\"xmin\":null},"
        "\"op\":\"u\",\"ts_ms\":1465584025523,\"transaction\":null}}",
        ROW_FIELDS, ROW_FIELDS);
    buf[n] = '\0';
    return buf;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    char *msg = make_message();
    size_t len = strlen(msg);
    cf_converter *c = NULL;
    cf_err err;
    if (cf_converter_new("json", NULL, false, &c, &err) != CF_OK) {
        fprintf(stderr, "converter: %s\n", err.message);
        return 1;
    }
    /* check once that the message decodes */
    cf_schema *s;
    cf_value *v;
    if (cf_converter_to_connect(c, "t", msg, len, &s, &v, &err) != CF_OK) {
        fprintf(stderr, "decode: %s at %s\n", err.message, err.where);
        return 1;
    }
    cf_schema_unref(s);
    cf_value_destroy(v);

    /* Interleave short batches of both so that load from other processes
     * on the machine hits both sides alike. */
    long n_conv = 0, n_jan = 0;
    double t_conv = 0, t_jan = 0, start = now();
    while (now() - start < 2 * secs) {
        double t0 = now();
        for (int i = 0; i < 100; i++) {
            cf_converter_to_connect(c, "t", msg, len, &s, &v, NULL);
            cf_schema_unref(s);
            cf_value_destroy(v);
        }
        double t1 = now();
        for (int i = 0; i < 100; i++) {
            json_error_t je;
            json_t *j = json_loadb(msg, len, 0, &je);
            json_decref(j);
        }
        double t2 = now();
        t_conv += t1 - t0;
        t_jan += t2 - t1;
        n_conv += 100;
        n_jan += 100;
    }
    double conv_rps = n_conv / t_conv, jan_rps = n_jan / t_jan;

    printf("message: Debezium Postgres update envelope, schemas.enable=true, %zu bytes\n", len);
    printf("JsonConverter to_connect: %10.0f records/s  %8.1f MB/s\n", conv_rps, conv_rps * len / 1e6);
    printf("jansson json_loadb:       %10.0f records/s  %8.1f MB/s\n", jan_rps, jan_rps * len / 1e6);
    printf("ratio converter/jansson:  %.2f\n", conv_rps / jan_rps);
    cf_converter_destroy(c);
    free(msg);
    return 0;
}
