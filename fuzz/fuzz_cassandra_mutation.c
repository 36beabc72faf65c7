/*
 * fuzz_cassandra_mutation.c - libFuzzer target: arbitrary bytes as one
 * commit log mutation, decoded against the schema of the Cassandra 5.0
 * fixtures (every CQL type, statics, collections, UDTs, counters, a dropped
 * column) and rendered as JSON. The first byte picks the messaging version
 * (10, 12 or 13). Must never crash, leak or read out of bounds; errors are fine.
 * Seeds: fuzz/corpus/fuzz_cassandra_mutation/ (entries of the real segments).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"

static const char SCHEMA[] =
    "CREATE KEYSPACE cdcks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}  AND durable_writes = true;\n"
    "CREATE TYPE cdcks.address (\n"
    "    street text,\n"
    "    \"Zip Code\" int,\n"
    "    tags frozen<set<text>>\n"
    ");\n"
    "CREATE TYPE cdcks.person (\n"
    "    name text,\n"
    "    home frozen<address>,\n"
    "    phones frozen<list<text>>\n"
    ");\n"
    "CREATE TABLE cdcks.all_types (\n"
    "    id int,\n"
    "    bucket text,\n"
    "    ck1 timeuuid,\n"
    "    ck2 text,\n"
    "    s_count int static,\n"
    "    s_note text static,\n"
    "    \"Quoted Col\" text,\n"
    "    c_ascii ascii,\n"
    "    c_bigint bigint,\n"
    "    c_blob blob,\n"
    "    c_boolean boolean,\n"
    "    c_date date,\n"
    "    c_decimal decimal,\n"
    "    c_double double,\n"
    "    c_duration duration,\n"
    "    c_float float,\n"
    "    c_frozen_list frozen<list<int>>,\n"
    "    c_frozen_map frozen<map<int, text>>,\n"
    "    c_frozen_udt frozen<person>,\n"
    "    c_inet inet,\n"
    "    c_int int,\n"
    "    c_smallint smallint,\n"
    "    c_text text,\n"
    "    c_time time,\n"
    "    c_timestamp timestamp,\n"
    "    c_timeuuid timeuuid,\n"
    "    c_tinyint tinyint,\n"
    "    c_tuple frozen<tuple<int, text, frozen<list<int>>>>,\n"
    "    c_uuid uuid,\n"
    "    c_varchar text,\n"
    "    c_varint varint,\n"
    "    c_vector vector<float, 3>,\n"
    "    c_vector_text vector<text, 2>,\n"
    "    c_list list<text>,\n"
    "    c_map map<text, int>,\n"
    "    c_nested map<text, frozen<list<int>>>,\n"
    "    c_set set<int>,\n"
    "    c_udt address,\n"
    "    c_udt_list list<frozen<address>>,\n"
    "    PRIMARY KEY ((id, bucket), ck1, ck2)\n"
    ") WITH ID = 58ef3f30-ec27-11f1-983c-579e33a44f86\n"
    "    AND CLUSTERING ORDER BY (ck1 DESC, ck2 ASC);\n"
    "CREATE TABLE cdcks.counters (\n"
    "    k text,\n"
    "    b int,\n"
    "    c1 counter,\n"
    "    c2 counter,\n"
    "    PRIMARY KEY (k, b)\n"
    ") WITH ID = 5a1855e0-ec27-11f1-983c-579e33a44f86\n"
    "    AND CLUSTERING ORDER BY (b ASC);\n"
    "CREATE TABLE cdcks.events (\n"
    "    p int,\n"
    "    seq int,\n"
    "    sub text,\n"
    "    v text,\n"
    "    PRIMARY KEY (p, seq, sub)\n"
    ") WITH ID = 595b9590-ec27-11f1-983c-579e33a44f86\n"
    "    AND CLUSTERING ORDER BY (seq ASC, sub ASC);\n"
    "CREATE TABLE cdcks.plain (\n"
    "    k text PRIMARY KEY,\n"
    "    v text\n"
    ") WITH ID = 5a93a060-ec27-11f1-983c-579e33a44f86;\n"
    "CREATE TABLE cdcks.simple (\n"
    "    k text PRIMARY KEY,\n"
    "    added bigint,\n"
    "    v int,\n"
    "    m map<int, text>,\n"
    "    dropme text\n"
    ") WITH ID = 59d161d0-ec27-11f1-983c-579e33a44f86;\n"
    "ALTER TABLE cdcks.simple DROP dropme USING TIMESTAMP 1795978922681000;\n";

static cf_cass_schema *schema;
static cf_cass_decoder *dec;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    cf_log_setup(CF_LOG_OFF, CF_LOG_TEXT, NULL);
    schema = cf_cass_schema_new();
    cf_err err;
    if (cf_cass_ddl_parse(schema, SCHEMA, strlen(SCHEMA), "fuzz-schema.cql", &err) != CF_OK) abort();
    dec = cf_cass_decoder_new(schema);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int versions[3] = {10, 12, 13};
    int mv = versions[data[0] % 3];
    cf_cass_mutation *m;
    uint8_t unknown[16];
    cf_err err;
    cf_cass_decode_mutation(dec, data + 1, size - 1, mv, &m, unknown, &err);
    cf_buf out = CF_BUF_INIT;
    for (size_t i = 0; i < m->n_updates; i++) cf_cass_update_to_json(&m->updates[i], "fuzz.log", 0, &out);
    cf_buf_free(&out);
    return 0;
}
