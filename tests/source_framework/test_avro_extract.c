/*
 * test_avro_extract.c - the input.format=avro extractor on Avro object
 * container files written by a real Avro implementation (fastavro; see
 * tests/data/avro/gen_avro.py): codecs null, deflate, snappy, zstandard,
 * records with nested records, arrays, maps, enums, fixed, unions with null,
 * a general union and logical types. The expected values are the ones
 * fastavro wrote, printed as Kafka's JsonConverter prints Connect values
 * (types.expected.jsonl); block offsets and datum counts are fastavro's own
 * block reader's (types-<codec>.blocks.json).
 *
 * Also: resume from every record's position gives the same rest; damaged
 * files (bad sync marker, bad lengths, CRC failure, wrong datum counts, cut
 * short, not Avro, unknown codec) give errors naming the object, block and
 * byte, and reading continues at the next sync marker.
 *
 * A second writer: avro-c's own file writer (avro_file_writer_create_with_codec,
 * codecs null, deflate, snappy, small blocks) makes files at test time from
 * values given through its generic value API; the extractor must return
 * those values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <unistd.h>
#include <zlib.h>
#include <avro.h>

#include "cdcflow/buf.h"
#include "cdcflow/convert.h"
#include "cdcflow/source_extract.h"

#define N_RECORDS 40
static const char *const codecs[] = {"null", "deflate", "snappy", "zstandard"};

static char *slurp(const char *name, size_t *len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/data/avro/%s", CF_TESTS_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

static cf_converter *json_conv(void) {
    cf_props *p = cf_props_new();
    cf_props_set(p, "schemas.enable", "false");
    cf_props_set(p, "decimal.format", "NUMERIC");
    cf_converter *c;
    assert_int_equal(cf_converter_new("json", p, false, &c, NULL), CF_OK);
    cf_props_destroy(p);
    return c;
}

/* The record as JsonConverter prints it (malloc'd). */
static char *to_json(cf_converter *c, const cf_schema *s, const cf_value *v) {
    char *d;
    size_t n;
    cf_err err;
    cf_code rc = cf_converter_from_connect(c, "t", s, v, &d, &n, &err);
    if (rc) fail_msg("JsonConverter: %s (%s)", err.message, err.where);
    return d;
}

static void assert_json_equal(const char *want, const char *got) {
    json_t *a = json_loads(want, JSON_DECODE_ANY, NULL), *b = json_loads(got, JSON_DECODE_ANY, NULL);
    assert_non_null(a);
    assert_non_null(b);
    if (!json_equal(a, b)) fail_msg("values differ:\n want %s\n got  %s", want, got);
    json_decref(a);
    json_decref(b);
}

typedef struct rec {
    char *json;
    cf_extract_pos pos;
} rec;

/* Read the object to the end; errors are counted (and their messages kept). */
typedef struct run {
    rec r[256];
    size_t n;
    cf_err errs[16];
    size_t nerr;
} run;

static void read_all(cf_input_format f, const char *data, size_t len, const char *name, uint64_t start, uint64_t idx,
                     uint64_t line, run *out) {
    memset(out, 0, sizeof *out);
    cf_converter *c = json_conv();
    cf_reader *r;
    assert_int_equal(cf_reader_open_mem(data, len, name, CF_COMPRESSION_NONE, &r, NULL), CF_OK);
    cf_extractor *x;
    assert_int_equal(cf_extractor_new(f, NULL, r, start, idx, line, &x, NULL), CF_OK);
    for (int guard = 0; guard < 1000; guard++) {
        cf_schema *s;
        cf_value *v;
        cf_extract_pos pos;
        cf_err err;
        cf_code rc = cf_extractor_next(x, &s, &v, &pos, &err);
        if (rc == CF_ERR_EOF) break;
        if (rc == CF_ERR_INVALID) {
            assert_true(out->nerr < 16);
            out->errs[out->nerr++] = err;
            if (getenv("CF_TEST_VERBOSE")) {
                char buf[2048];
                fprintf(stderr, "%s\n", cf_err_format(&err, buf, sizeof buf));
            }
            continue;
        }
        if (rc) fail_msg("unexpected %d: %s", rc, err.message);
        assert_true(out->n < 256);
        out->r[out->n].json = to_json(c, s, v);
        out->r[out->n].pos = pos;
        out->n++;
        cf_value_destroy(v);
        cf_schema_unref(s);
    }
    cf_extractor_destroy(x);
    cf_converter_destroy(c);
}

static void run_free(run *r) {
    for (size_t i = 0; i < r->n; i++) free(r->r[i].json);
}

static char **expected_lines(void) {
    size_t len;
    char *all = slurp("types.expected.jsonl", &len);
    char **lines = calloc(N_RECORDS, sizeof(char *));
    char *p = all;
    for (int i = 0; i < N_RECORDS; i++) {
        char *nl = strchr(p, '\n');
        assert_non_null(nl);
        lines[i] = strndup(p, (size_t)(nl - p));
        p = nl + 1;
    }
    free(all);
    return lines;
}

static void free_lines(char **l) {
    for (int i = 0; i < N_RECORDS; i++) free(l[i]);
    free(l);
}

/* fastavro's block offsets and counts */
typedef struct blocks {
    uint64_t off[64], count[64];
    size_t n;
} blocks;

static void load_blocks(const char *codec, blocks *b) {
    char name[64];
    snprintf(name, sizeof name, "types-%s.blocks.json", codec);
    size_t len;
    char *d = slurp(name, &len);
    json_t *j = json_loadb(d, len, 0, NULL);
    assert_non_null(j);
    b->n = json_array_size(j);
    for (size_t i = 0; i < b->n; i++) {
        b->off[i] = (uint64_t)json_integer_value(json_object_get(json_array_get(j, i), "offset"));
        b->count[i] = (uint64_t)json_integer_value(json_object_get(json_array_get(j, i), "count"));
    }
    json_decref(j);
    free(d);
}

/* Every codec: the values fastavro wrote, the block positions its reader sees. */
static void test_avro_codecs(void **state) {
    (void)state;
    char **want = expected_lines();
    for (size_t k = 0; k < 4; k++) {
        char name[64];
        snprintf(name, sizeof name, "types-%s.avro", codecs[k]);
        size_t len;
        char *data = slurp(name, &len);
        blocks b;
        load_blocks(codecs[k], &b);
        assert_true(b.n >= 4); /* several blocks */
        run r;
        read_all(CF_FORMAT_AVRO, data, len, name, 0, 0, 0, &r);
        if (r.nerr) fail_msg("%s: %s (%s)", name, r.errs[0].message, r.errs[0].where);
        assert_int_equal(r.n, N_RECORDS);
        size_t blk = 0, in_blk = 0;
        for (size_t i = 0; i < r.n; i++) {
            assert_json_equal(want[i], r.r[i].json);
            const cf_extract_pos *p = &r.r[i].pos;
            assert_int_equal(p->index, i);
            assert_int_equal(p->start, b.off[blk]);
            assert_int_equal(p->line, in_blk + 1);
            in_blk++;
            if (in_blk == b.count[blk]) {
                /* the last datum of a block: resume at the next block */
                assert_int_equal(p->end, blk + 1 < b.n ? b.off[blk + 1] : len);
                assert_int_equal(p->end_line, 1);
                blk++;
                in_blk = 0;
            } else {
                assert_int_equal(p->end, b.off[blk]);
                assert_int_equal(p->end_line, in_blk + 1);
            }
        }
        assert_int_equal(blk, b.n);
        run_free(&r);
        free(data);
    }
    free_lines(want);
}

/* The Connect schema is the writer schema mapped by AvroData's rules. */
static void test_avro_schema(void **state) {
    (void)state;
    size_t len;
    char *data = slurp("types-deflate.avro", &len);
    cf_reader *r;
    cf_reader_open_mem(data, len, "types-deflate.avro", CF_COMPRESSION_NONE, &r, NULL);
    cf_extractor *x;
    assert_int_equal(cf_extractor_new(CF_FORMAT_AVRO, NULL, r, 0, 0, 0, &x, NULL), CF_OK);
    cf_schema *s;
    cf_value *v;
    assert_int_equal(cf_extractor_next(x, &s, &v, NULL, NULL), CF_OK);
    assert_int_equal(s->type, CF_STRUCT);
    assert_string_equal(s->name, "cdcflow.test.Order");
    const cf_field *f = cf_schema_field(s, "note");
    assert_non_null(f);
    assert_true(f->schema->optional);
    assert_int_equal(f->schema->type, CF_STRING);
    f = cf_schema_field(s, "at");
    assert_string_equal(f->schema->name, "org.apache.kafka.connect.data.Timestamp");
    f = cf_schema_field(s, "day");
    assert_string_equal(f->schema->name, "org.apache.kafka.connect.data.Date");
    f = cf_schema_field(s, "lines");
    assert_int_equal(f->schema->type, CF_ARRAY);
    assert_string_equal(f->schema->value_schema->fields[2].schema->name, "org.apache.kafka.connect.data.Decimal");
    f = cf_schema_field(s, "choice");
    assert_string_equal(f->schema->name, "io.confluent.connect.avro.Union");
    f = cf_schema_field(s, "address");
    assert_int_equal(f->schema->type, CF_STRUCT);
    assert_string_equal(f->schema->name, "cdcflow.test.Address");
    /* the same schema object for every record: mapped once */
    cf_schema *s2;
    cf_value *v2;
    assert_int_equal(cf_extractor_next(x, &s2, &v2, NULL, NULL), CF_OK);
    assert_ptr_equal(s, s2);
    cf_value_destroy(v);
    cf_value_destroy(v2);
    cf_schema_unref(s);
    cf_schema_unref(s2);
    cf_extractor_destroy(x);
    free(data);
}

/* Resume from every record's end position: the rest is identical. */
static void test_avro_resume(void **state) {
    (void)state;
    for (size_t k = 0; k < 4; k++) {
        char name[64];
        snprintf(name, sizeof name, "types-%s.avro", codecs[k]);
        size_t len;
        char *data = slurp(name, &len);
        run all;
        read_all(CF_FORMAT_AVRO, data, len, name, 0, 0, 0, &all);
        assert_int_equal(all.n, N_RECORDS);
        for (size_t i = 0; i < all.n; i++) {
            run rest;
            const cf_extract_pos *p = &all.r[i].pos;
            read_all(CF_FORMAT_AVRO, data, len, name, p->end, p->index + 1, p->end_line, &rest);
            assert_int_equal(rest.nerr, 0);
            assert_int_equal(rest.n, all.n - i - 1);
            for (size_t j = 0; j < rest.n; j++) {
                assert_string_equal(rest.r[j].json, all.r[i + 1 + j].json);
                assert_memory_equal(&rest.r[j].pos, &all.r[i + 1 + j].pos, sizeof(cf_extract_pos));
            }
            run_free(&rest);
        }
        run_free(&all);
        free(data);
    }
}

/* A top-level primitive schema and a file with no block. */
static void test_avro_strings_and_empty(void **state) {
    (void)state;
    size_t len;
    char *data = slurp("strings-null.avro", &len);
    run r;
    read_all(CF_FORMAT_AVRO, data, len, "strings-null.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 0);
    assert_int_equal(r.n, 4);
    assert_string_equal(r.r[0].json, "\"a\"");
    assert_string_equal(r.r[1].json, "\"\"");
    assert_int_equal(strlen(r.r[2].json), 302);
    assert_string_equal(r.r[3].json, "\"\xc3\xbc" "ber\"");
    run_free(&r);
    free(data);
    data = slurp("empty-null.avro", &len);
    read_all(CF_FORMAT_AVRO, data, len, "empty-null.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 0);
    assert_int_equal(r.n, 0);
    free(data);
}

/* ---------------- damaged files ---------------- */

static void expect_err(const cf_err *e, const char *in_message, const char *in_where) {
    if (!strstr(e->message, in_message)) fail_msg("message \"%s\" lacks \"%s\"", e->message, in_message);
    if (in_where && !strstr(e->where, in_where)) fail_msg("where \"%s\" lacks \"%s\"", e->where, in_where);
    assert_int_equal(e->code, CF_ERR_INVALID);
}

/* Records fastavro wrote, skipping the datums of block `skip_blk` (-1: none). */
static void expect_records_except(const run *r, char **want, const blocks *b, int skip_blk) {
    size_t i = 0, w = 0;
    for (size_t blk = 0; blk < b->n; blk++) {
        for (size_t d = 0; d < b->count[blk]; d++, w++) {
            if ((int)blk == skip_blk) continue;
            assert_true(i < r->n);
            assert_json_equal(want[w], r->r[i].json);
            i++;
        }
    }
    assert_int_equal(i, r->n);
}

static void test_avro_bad_sync_and_crc(void **state) {
    (void)state;
    char **want = expected_lines();
    size_t len;
    blocks b;
    char where[128];
    /* the sync marker after block 2 is damaged: the scan for the next marker
     * starts at block 2's second byte, and the first intact marker is the
     * one after block 3; blocks 2 and 3 are skipped, reading continues with
     * block 4, one error */
    char *data = slurp("types-null.avro", &len);
    load_blocks("null", &b);
    data[b.off[3] - 1] ^= 0x5a; /* last byte of block 2's sync marker */
    run r;
    read_all(CF_FORMAT_AVRO, data, len, "types-null.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    snprintf(where, sizeof where, "types-null.avro: block 2, byte %llu", (unsigned long long)b.off[2]);
    expect_err(&r.errs[0], "no sync marker after", where);
    assert_non_null(strstr(r.errs[0].detail, "continues with the block at byte"));
    assert_int_equal(r.n, N_RECORDS - b.count[2] - b.count[3]);
    /* records after the damage are block 4's, with their true positions */
    size_t first_after = b.count[0] + b.count[1];
    assert_int_equal(r.r[first_after].pos.start, b.off[4]);
    run_free(&r);
    free(data);

    /* snappy: one flipped byte inside block 1's data is caught by the CRC32;
     * the framing is intact, so reading continues with block 2 */
    data = slurp("types-snappy.avro", &len);
    load_blocks("snappy", &b);
    data[b.off[1] + 40] ^= 0x01;
    read_all(CF_FORMAT_AVRO, data, len, "types-snappy.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    snprintf(where, sizeof where, "block 1, byte %llu", (unsigned long long)b.off[1]);
    expect_err(&r.errs[0], "snappy codec", where);
    expect_records_except(&r, want, &b, 1);
    run_free(&r);
    free(data);

    /* deflate: block 3's data overwritten with 0xff (an invalid block type) */
    data = slurp("types-deflate.avro", &len);
    load_blocks("deflate", &b);
    memset(data + b.off[3] + 4, 0xff, 8);
    read_all(CF_FORMAT_AVRO, data, len, "types-deflate.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "deflate codec", "block 3");
    expect_records_except(&r, want, &b, 3);
    run_free(&r);
    free(data);

    /* zstandard: the frame magic of block 0 is damaged */
    data = slurp("types-zstandard.avro", &len);
    load_blocks("zstandard", &b);
    char *magic = memmem(data + b.off[0], 8, "\x28\xb5\x2f\xfd", 4);
    assert_non_null(magic);
    magic[1] ^= 0xff;
    read_all(CF_FORMAT_AVRO, data, len, "types-zstandard.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "zstandard codec", "block 0");
    expect_records_except(&r, want, &b, 0);
    run_free(&r);
    free(data);
    free_lines(want);
}

static void test_avro_bad_lengths(void **state) {
    (void)state;
    char **want = expected_lines();
    size_t len;
    blocks b;
    load_blocks("null", &b);
    char *orig = slurp("types-null.avro", &len);
    char *data = malloc(len + 16);
    run r;

    /* block 1 says 8 datums, holds 7: the 8th runs out of bytes */
    memcpy(data, orig, len);
    assert_int_equal((uint8_t)data[b.off[1]], 7 * 2);
    data[b.off[1]] = 8 * 2;
    read_all(CF_FORMAT_AVRO, data, len, "f.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "bad block in Avro object \"f.avro\": no bytes left for datum 8 of 8", "f.avro: block 1");
    assert_non_null(strstr(r.errs[0].where, "datum 8"));
    expect_records_except(&r, want, &b, -1);
    run_free(&r);

    /* a datum that breaks the schema: record 8 (block 1, datum 2) gets a
     * boolean byte 2; the rest of block 1 is skipped, block 2 goes on */
    memcpy(data, orig, len);
    char *p8 = memmem(data, len, "\x0eorder 8\x01", 9);
    assert_non_null(p8);
    p8[8] = 2;
    read_all(CF_FORMAT_AVRO, data, len, "f.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "bad datum in Avro object \"f.avro\": damaged Avro data: boolean byte is neither 0 nor 1",
               "f.avro: block 1, byte");
    assert_non_null(strstr(r.errs[0].where, "datum 2, field active"));
    assert_non_null(strstr(r.errs[0].detail, "remaining 5 datums are skipped"));
    assert_int_equal(r.n, N_RECORDS - 6);
    for (size_t i = 0; i < r.n; i++) assert_json_equal(want[i < 8 ? i : i + 6], r.r[i].json);
    run_free(&r);
    memcpy(data, orig, len);
    data[b.off[1]] = 8 * 2;

    /* block 1 says 6 datums, holds 7: the bytes left over are reported */
    data[b.off[1]] = 6 * 2;
    read_all(CF_FORMAT_AVRO, data, len, "f.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "bytes after its 6 datums", "block 1");
    assert_int_equal(r.n, N_RECORDS - 1);
    /* the block's last datum resumes in the block (the error about its
     * leftover bytes comes next), so a resume there reports it again */
    cf_extract_pos last = r.r[b.count[0] + 5].pos;
    assert_int_equal(last.end, b.off[1]);
    assert_int_equal(last.end_line, 7);
    run_free(&r);
    read_all(CF_FORMAT_AVRO, data, len, "f.avro", last.end, last.index + 1, last.end_line, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "bytes after its 6 datums", "block 0 after the resume point");
    assert_int_equal(r.n, N_RECORDS - b.count[0] - b.count[1]);
    assert_int_equal(r.r[0].pos.index, last.index + 2);
    run_free(&r);

    /* a size above the limit (a 5-byte varint) in front of block 2: the scan
     * continues after the next marker, the one ending block 2 */
    size_t at = (size_t)b.off[2];
    memcpy(data, orig, at);
    const uint8_t big[] = {0x02, 0x80, 0x80, 0x80, 0x80, 0x01}; /* count 1, size 2^27 */
    memcpy(data + at, big, sizeof big);
    memcpy(data + at + sizeof big, orig + at, len - at);
    read_all(CF_FORMAT_AVRO, data, len + sizeof big, "f.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "above the limit", "block 2");
    expect_records_except(&r, want, &b, 2);
    run_free(&r);

    /* a negative size */
    memcpy(data, orig, len);
    data[b.off[2] + 1] = 0x03; /* the size varint: one byte, zig-zag -2 */
    read_all(CF_FORMAT_AVRO, data, len, "f.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "damaged block", "block 2");
    expect_records_except(&r, want, &b, 2);
    run_free(&r);

    /* cut short inside the last block: earlier blocks are read, then one
     * error, then the end */
    read_all(CF_FORMAT_AVRO, orig, (size_t)b.off[b.n - 1] + 20, "cut.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "ends inside the block", "cut.avro: block 5");
    assert_non_null(strstr(r.errs[0].detail, "no sync marker follows"));
    assert_int_equal(r.n, N_RECORDS - b.count[b.n - 1]);
    run_free(&r);

    /* cut inside the header */
    read_all(CF_FORMAT_AVRO, orig, 100, "cut.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "not a valid Avro object container file", "cut.avro: header");
    assert_int_equal(r.n, 0);
    free(data);
    free(orig);
    free_lines(want);
}

static void test_avro_not_avro(void **state) {
    (void)state;
    run r;
    const char csv[] = "id,name\n1,one\n";
    read_all(CF_FORMAT_AVRO, csv, sizeof csv - 1, "x.csv", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "\"x.csv\" is not a valid Avro object container file: no Avro magic", "x.csv");
    assert_non_null(strstr(r.errs[0].detail, "69 64 2c 6e"));
    assert_int_equal(r.n, 0);
    read_all(CF_FORMAT_AVRO, "", 0, "empty", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "no Avro magic", "empty");

    /* an unknown codec: "null" -> "xxxx" in the header */
    size_t len;
    char *data = slurp("types-null.avro", &len);
    char *p = memmem(data, len, "\x14" "avro.codec\x08null", 16);
    assert_non_null(p);
    memcpy(p + 12, "xxxx", 4);
    read_all(CF_FORMAT_AVRO, data, len, "c.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "uses codec \"xxxx\", which is not supported", "c.avro: header");
    assert_int_equal(r.n, 0);
    free(data);

    /* a writer schema that is not valid Avro */
    data = slurp("types-null.avro", &len);
    p = memmem(data, len, "\"type\": \"record\"", 16);
    if (!p) p = memmem(data, len, "\"type\":\"record\"", 15);
    assert_non_null(p);
    memcpy(strstr(p, "record"), "rekord", 6);
    read_all(CF_FORMAT_AVRO, data, len, "s.avro", 0, 0, 0, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "writer schema of Avro object \"s.avro\" cannot be read", "s.avro: header avro.schema");
    free(data);
}

/* A schema whose datums take no bytes (an empty record): a block may hold
 * a few of them, but not 2^40 in a 40-byte file. */
static void test_avro_empty_datums(void **state) {
    (void)state;
    static const char schema[] = "{\"type\":\"record\",\"name\":\"E\",\"fields\":[]}";
    uint8_t f[256];
    size_t n = 0;
    memcpy(f, "Obj\x01\x02\x16" "avro.schema", 17);
    n = 17;
    f[n++] = (uint8_t)((sizeof schema - 1) * 2);
    memcpy(f + n, schema, sizeof schema - 1);
    n += sizeof schema - 1;
    f[n++] = 0;
    uint8_t sync[16];
    for (int i = 0; i < 16; i++) sync[i] = (uint8_t)(0xa0 + i);
    memcpy(f + n, sync, 16);
    n += 16;
    /* block: 3 datums, 0 bytes */
    f[n++] = 6;
    f[n++] = 0;
    memcpy(f + n, sync, 16);
    n += 16;
    /* block: 2^40 datums, 0 bytes: zig-zag 2^41 = 7 bytes of varint */
    uint64_t z = (uint64_t)1 << 41;
    while (z >= 0x80) f[n++] = (uint8_t)(z | 0x80), z >>= 7;
    f[n++] = (uint8_t)z;
    f[n++] = 0;
    memcpy(f + n, sync, 16);
    n += 16;
    run r;
    read_all(CF_FORMAT_AVRO, (const char *)f, n, "e.avro", 0, 0, 0, &r);
    assert_int_equal(r.n, 3);
    assert_string_equal(r.r[0].json, "{}");
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "1099511627776 datums cannot be in 0 bytes", "e.avro: block 1");
    run_free(&r);
}

static void test_avro_bad_resume(void **state) {
    (void)state;
    size_t len;
    char *data = slurp("types-null.avro", &len);
    blocks b;
    load_blocks("null", &b);
    run r;
    /* inside the header */
    read_all(CF_FORMAT_AVRO, data, len, "r.avro", 10, 3, 1, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "inside its header", "r.avro: byte 10");
    assert_int_equal(r.n, 0);
    /* more datums read than the block has */
    read_all(CF_FORMAT_AVRO, data, len, "r.avro", b.off[1], 9, 9, &r);
    assert_int_equal(r.nerr, 1);
    expect_err(&r.errs[0], "resume position of Avro object \"r.avro\" does not exist", NULL);
    assert_int_equal(r.n, 0);
    /* damage after a resume: the byte offset is absolute, the block number
     * counts from the resume point (earlier blocks were not read) */
    char *snappy = slurp("types-snappy.avro", &len);
    blocks sb;
    load_blocks("snappy", &sb);
    snappy[sb.off[3] + 40] ^= 1;
    read_all(CF_FORMAT_AVRO, snappy, len, "r.avro", sb.off[1], 7, 1, &r);
    assert_int_equal(r.nerr, 1);
    char where[128];
    snprintf(where, sizeof where, "r.avro: block 2 after the resume point, byte %llu", (unsigned long long)sb.off[3]);
    expect_err(&r.errs[0], "CRC32", where);
    assert_int_equal(r.n, N_RECORDS - sb.count[0] - sb.count[3]);
    assert_int_equal(r.r[0].pos.index, 7);
    run_free(&r);
    free(snappy);
    len = 0;
    free(data);
    data = slurp("types-null.avro", &len);
    /* the end of the object: nothing more */
    read_all(CF_FORMAT_AVRO, data, len, "r.avro", len, 40, 1, &r);
    assert_int_equal(r.nerr, 0);
    assert_int_equal(r.n, 0);
    free(data);
}

/* A whole .avro file gzipped (file.compression.type=gzip): the container
 * positions are in decompressed bytes, and a resume skips by decompressing. */
static void test_avro_gzipped_object(void **state) {
    (void)state;
    size_t len;
    char *data = slurp("types-deflate.avro", &len);
    z_stream z = {0};
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, len);
    char *gz = malloc(cap);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)gz;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t gzlen = z.total_out;
    deflateEnd(&z);
    run plain;
    read_all(CF_FORMAT_AVRO, data, len, "p.avro", 0, 0, 0, &plain);
    for (int resume = 0; resume < 2; resume++) {
        cf_reader *r;
        assert_int_equal(cf_reader_open_mem(gz, gzlen, "g.avro.gz", CF_COMPRESSION_GZIP, &r, NULL), CF_OK);
        cf_extractor *x;
        const cf_extract_pos *p = &plain.r[17].pos;
        assert_int_equal(cf_extractor_new(CF_FORMAT_AVRO, NULL, r, resume ? p->end : 0, resume ? 18 : 0,
                                          resume ? p->end_line : 0, &x, NULL),
                         CF_OK);
        cf_converter *c = json_conv();
        size_t i = resume ? 18 : 0;
        for (;; i++) {
            cf_schema *s;
            cf_value *v;
            cf_extract_pos pos;
            cf_code rc = cf_extractor_next(x, &s, &v, &pos, NULL);
            if (rc == CF_ERR_EOF) break;
            assert_int_equal(rc, CF_OK);
            char *j = to_json(c, s, v);
            assert_string_equal(j, plain.r[i].json);
            assert_memory_equal(&pos, &plain.r[i].pos, sizeof pos);
            free(j);
            cf_value_destroy(v);
            cf_schema_unref(s);
        }
        assert_int_equal(i, N_RECORDS);
        cf_converter_destroy(c);
        cf_extractor_destroy(x);
    }
    run_free(&plain);
    free(gz);
    free(data);
}

/* ---------------- avro-c's writer ---------------- */

static const char ac_schema[] =
    "{\"type\":\"record\",\"name\":\"AC\",\"namespace\":\"t\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"s\",\"type\":\"string\"},"
    "{\"name\":\"opt\",\"type\":[\"null\",\"string\"]},"
    "{\"name\":\"nums\",\"type\":{\"type\":\"array\",\"items\":\"int\"}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"double\"}},"
    "{\"name\":\"in\",\"type\":{\"type\":\"record\",\"name\":\"In\",\"fields\":["
    "{\"name\":\"b\",\"type\":\"bytes\"},{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\","
    "\"symbols\":[\"A\",\"B\",\"C\"]}}]}},"
    "{\"name\":\"ts\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}}]}";
#define AC_N 300

static void ac_write(const char *path, const char *codec) {
    avro_schema_t sch;
    assert_int_equal(avro_schema_from_json_length(ac_schema, sizeof ac_schema - 1, &sch), 0);
    unlink(path);
    avro_file_writer_t w;
    if (avro_file_writer_create_with_codec(path, sch, &w, codec, 1024)) fail_msg("avro-c: %s", avro_strerror());
    avro_value_iface_t *iface = avro_generic_class_from_schema(sch);
    avro_value_t rec, f, br, el, in;
    avro_generic_value_new(iface, &rec);
    for (int i = 0; i < AC_N; i++) {
        char buf[64];
        avro_value_reset(&rec);
        avro_value_get_by_name(&rec, "id", &f, NULL);
        avro_value_set_long(&f, (int64_t)i * 1000003 - 5000);
        avro_value_get_by_name(&rec, "s", &f, NULL);
        snprintf(buf, sizeof buf, "row-%d", i);
        avro_value_set_string(&f, buf);
        avro_value_get_by_name(&rec, "opt", &f, NULL);
        if (i % 3 == 0) {
            avro_value_set_branch(&f, 0, &br);
            avro_value_set_null(&br);
        } else {
            avro_value_set_branch(&f, 1, &br);
            avro_value_set_string(&br, buf);
        }
        avro_value_get_by_name(&rec, "nums", &f, NULL);
        for (int k = 0; k < i % 5; k++) {
            avro_value_append(&f, &el, NULL);
            avro_value_set_int(&el, i - k);
        }
        avro_value_get_by_name(&rec, "m", &f, NULL);
        if (i % 2) {
            avro_value_add(&f, "half", &el, NULL, NULL);
            avro_value_set_double(&el, i / 2.0);
        }
        avro_value_get_by_name(&rec, "in", &in, NULL);
        avro_value_get_by_name(&in, "b", &f, NULL);
        uint8_t b[3] = {(uint8_t)i, 0, 0xff};
        avro_value_set_bytes(&f, b, (size_t)(i % 4 == 0 ? 0 : 3));
        avro_value_get_by_name(&in, "e", &f, NULL);
        avro_value_set_enum(&f, i % 3);
        avro_value_get_by_name(&rec, "ts", &f, NULL);
        avro_value_set_long(&f, 1700000000000LL + i);
        if (avro_file_writer_append_value(w, &rec)) fail_msg("avro-c append: %s", avro_strerror());
    }
    avro_file_writer_close(w);
    avro_value_decref(&rec);
    avro_value_iface_decref(iface);
    avro_schema_decref(sch);
}

/* The value avro-c was given for row i. */
static void ac_check(const cf_value *v, int i) {
    char buf[64];
    snprintf(buf, sizeof buf, "row-%d", i);
    assert_int_equal(cf_value_struct_get(v, "id")->u.i, (int64_t)i * 1000003 - 5000);
    assert_string_equal(cf_value_struct_get(v, "s")->u.s.ptr, buf);
    const cf_value *o = cf_value_struct_get(v, "opt");
    if (i % 3 == 0)
        assert_null(o);
    else
        assert_string_equal(o->u.s.ptr, buf);
    const cf_value *a = cf_value_struct_get(v, "nums");
    assert_int_equal(a->u.arr.len, (size_t)(i % 5));
    for (size_t k = 0; k < a->u.arr.len; k++) assert_int_equal(a->u.arr.items[k]->u.i, i - (int)k);
    const cf_value *m = cf_value_struct_get(v, "m");
    assert_int_equal(m->u.map.len, (size_t)(i % 2));
    if (i % 2) assert_true(cf_value_map_get_str(m, "half")->u.f == i / 2.0);
    const cf_value *in = cf_value_struct_get(v, "in");
    const cf_value *b = cf_value_struct_get(in, "b");
    assert_int_equal(b->u.s.len, (size_t)(i % 4 == 0 ? 0 : 3));
    const uint8_t want_b[3] = {(uint8_t)i, 0, 0xff};
    if (b->u.s.len) assert_memory_equal(b->u.s.ptr, want_b, 3);
    static const char *const sym[] = {"A", "B", "C"};
    assert_string_equal(cf_value_struct_get(in, "e")->u.s.ptr, sym[i % 3]);
    assert_int_equal(cf_value_struct_get(v, "ts")->u.i, 1700000000000LL + i);
}

static void test_avro_c_writer(void **state) {
    (void)state;
    static const char *const ac_codecs[] = {"null", "deflate", "snappy"};
    char path[] = "/tmp/cf_test_avroc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (int k = 0; k < 3; k++) {
        ac_write(path, ac_codecs[k]);
        cf_extract_pos ends[AC_N];
        size_t blocks = 0;
        uint64_t last_start = 0;
        /* the whole file, then resumes from every 7th record */
        for (int from = -1; from < AC_N; from += (from < 0 ? 1 : 7)) {
            cf_reader *r;
            assert_int_equal(cf_reader_open_file(path, CF_COMPRESSION_NONE, &r, NULL), CF_OK);
            cf_extractor *x;
            uint64_t st = from < 0 ? 0 : ends[from].end, ix = from < 0 ? 0 : ends[from].index + 1,
                     ln = from < 0 ? 0 : ends[from].end_line;
            assert_int_equal(cf_extractor_new(CF_FORMAT_AVRO, NULL, r, st, ix, ln, &x, NULL), CF_OK);
            int i = from + 1;
            for (;; i++) {
                cf_schema *s;
                cf_value *v;
                cf_extract_pos pos;
                cf_err err;
                cf_code rc = cf_extractor_next(x, &s, &v, &pos, &err);
                if (rc == CF_ERR_EOF) break;
                if (rc) fail_msg("avro-c %s file, row %d: %s (%s; %s)", ac_codecs[k], i, err.message, err.detail, err.where);
                assert_int_equal(pos.index, (uint64_t)i);
                ac_check(v, i);
                if (from < 0) {
                    ends[i] = pos;
                    if (pos.start != last_start) blocks++, last_start = pos.start;
                } else {
                    assert_memory_equal(&pos, &ends[i], sizeof pos);
                }
                cf_value_destroy(v);
                cf_schema_unref(s);
            }
            assert_int_equal(i, AC_N);
            cf_extractor_destroy(x);
        }
        assert_true(blocks > 5); /* several blocks */
    }
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avro_codecs),          cmocka_unit_test(test_avro_schema),
        cmocka_unit_test(test_avro_resume),          cmocka_unit_test(test_avro_strings_and_empty),
        cmocka_unit_test(test_avro_bad_sync_and_crc), cmocka_unit_test(test_avro_bad_lengths),
        cmocka_unit_test(test_avro_not_avro),        cmocka_unit_test(test_avro_bad_resume),
        cmocka_unit_test(test_avro_c_writer),        cmocka_unit_test(test_avro_empty_datums),
        cmocka_unit_test(test_avro_gzipped_object),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
