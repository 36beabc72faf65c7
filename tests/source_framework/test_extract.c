/*
 * test_extract.c - streaming readers and extractors.
 *
 * CSV vectors are RFC 4180's own examples (section 2, rules 1-7); JSON lines
 * follow Kafka's JsonConverter with schemas.enable=false (integers INT64,
 * objects MAP); the compressed streams are produced by the real libraries
 * (zlib's gzip, libzstd, libsnappy) so the reader is checked against their
 * formats, not against itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "cdcflow/buf.h"
#include "cdcflow/source_extract.h"

static cf_extractor *open_mem(cf_input_format f, const char *data, size_t len, cf_props *opts, cf_compression c,
                              uint64_t start, uint64_t idx, uint64_t line) {
    cf_reader *r;
    assert_int_equal(cf_reader_open_mem(data, len, "obj.csv", c, &r, NULL), CF_OK);
    cf_extractor *x;
    cf_err err;
    cf_code rc = cf_extractor_new(f, opts, r, start, idx, line, &x, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, CF_OK);
    return x;
}

static const char *field(const cf_value *v, const char *name) {
    const cf_value *f = cf_value_struct_get(v, name);
    return f ? f->u.s.ptr : NULL;
}

/* RFC 4180 2.1-2.3 and 2.5-2.7 in one object with a header row. */
static const char rfc[] = "field_name,field_name2,field_name3\r\n"
                          "aaa,bbb,ccc\r\n"
                          "\"aaa\",\"b\r\nbb\",\"ccc\"\r\n"
                          "\"aaa\",\"b\"\"bb\",\"ccc\"\r\n"
                          "zzz,yyy,xxx";

static void test_csv_rfc4180(void **state) {
    (void)state;
    cf_extractor *x = open_mem(CF_FORMAT_CSV, rfc, sizeof rfc - 1, NULL, CF_COMPRESSION_NONE, 0, 0, 0);
    cf_schema *s;
    cf_value *v;
    cf_extract_pos pos;
    const char *expect[4][3] = {{"aaa", "bbb", "ccc"}, {"aaa", "b\r\nbb", "ccc"}, {"aaa", "b\"bb", "ccc"}, {"zzz", "yyy", "xxx"}};
    uint64_t lines[4] = {2, 3, 5, 6};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(cf_extractor_next(x, &s, &v, &pos, NULL), CF_OK);
        assert_int_equal(pos.index, (uint64_t)i);
        assert_int_equal(pos.line, lines[i]);
        assert_string_equal(field(v, "field_name"), expect[i][0]);
        assert_string_equal(field(v, "field_name2"), expect[i][1]);
        assert_string_equal(field(v, "field_name3"), expect[i][2]);
        assert_true(s->fields[0].schema->optional);
        assert_int_equal(s->fields[0].schema->type, CF_STRING);
        cf_value_destroy(v);
        cf_schema_unref(s);
    }
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, NULL), CF_ERR_EOF);
    cf_extractor_destroy(x);
}

/* Resume from every record's end position: the rest is identical. */
static void test_csv_resume(void **state) {
    (void)state;
    cf_extract_pos all[4];
    char *vals[4];
    cf_extractor *x = open_mem(CF_FORMAT_CSV, rfc, sizeof rfc - 1, NULL, CF_COMPRESSION_NONE, 0, 0, 0);
    for (int i = 0; i < 4; i++) {
        cf_schema *s;
        cf_value *v;
        assert_int_equal(cf_extractor_next(x, &s, &v, &all[i], NULL), CF_OK);
        vals[i] = cf_value_debug_string(v);
        cf_value_destroy(v);
        cf_schema_unref(s);
    }
    cf_extractor_destroy(x);
    for (cf_compression c = CF_COMPRESSION_NONE; c <= CF_COMPRESSION_GZIP; c++) {
        char *data = (char *)rfc;
        size_t len = sizeof rfc - 1;
        unsigned char gz[1024];
        if (c == CF_COMPRESSION_GZIP) {
            z_stream z = {0};
            deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
            z.next_in = (unsigned char *)rfc, z.avail_in = (uInt)len, z.next_out = gz, z.avail_out = sizeof gz;
            assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
            len = z.total_out;
            deflateEnd(&z);
            data = (char *)gz;
        }
        for (int k = 0; k < 3; k++) {
            x = open_mem(CF_FORMAT_CSV, data, len, NULL, c, all[k].end, all[k].index + 1, all[k + 1].line);
            for (int i = k + 1; i < 4; i++) {
                cf_schema *s;
                cf_value *v;
                cf_extract_pos pos;
                assert_int_equal(cf_extractor_next(x, &s, &v, &pos, NULL), CF_OK);
                char *d = cf_value_debug_string(v);
                assert_string_equal(d, vals[i]);
                assert_int_equal(pos.index, all[i].index);
                assert_int_equal(pos.line, all[i].line);
                assert_int_equal(pos.start, all[i].start);
                free(d);
                cf_value_destroy(v);
                cf_schema_unref(s);
            }
            cf_extractor_destroy(x);
        }
    }
    for (int i = 0; i < 4; i++) free(vals[i]);
}

static void test_csv_errors_and_options(void **state) {
    (void)state;
    const char bad[] = "a,b\n1,2\n\"x\"y,3\n4,5\n\"open,6";
    cf_extractor *x = open_mem(CF_FORMAT_CSV, bad, sizeof bad - 1, NULL, CF_COMPRESSION_NONE, 0, 0, 0);
    cf_schema *s;
    cf_value *v;
    cf_extract_pos pos;
    cf_err err;
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_OK);
    cf_value_destroy(v), cf_schema_unref(s);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_ERR_INVALID);
    assert_string_equal(err.where, "obj.csv: line 3, byte 8");
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_OK); /* continues after the bad line */
    assert_string_equal(field(v, "a"), "4");
    cf_value_destroy(v), cf_schema_unref(s);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_ERR_INVALID); /* unterminated quote */
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_ERR_EOF);
    cf_extractor_destroy(x);

    /* no header row: field0.., extra columns beyond a header: fieldN */
    cf_props *o = cf_props_new();
    cf_props_set(o, "extractor.csv.headers.enabled", "false");
    const char nohdr[] = "1,2\n3,4,5\n";
    x = open_mem(CF_FORMAT_CSV, nohdr, sizeof nohdr - 1, o, CF_COMPRESSION_NONE, 0, 0, 0);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, NULL), CF_OK);
    assert_string_equal(field(v, "field0"), "1");
    assert_int_equal(pos.line, 1);
    cf_value_destroy(v), cf_schema_unref(s);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, NULL), CF_OK);
    assert_string_equal(field(v, "field2"), "5");
    cf_value_destroy(v), cf_schema_unref(s);
    cf_extractor_destroy(x);
    /* given header names */
    cf_props_set(o, "extractor.csv.headers", " id , name");
    cf_props_remove(o, "extractor.csv.headers.enabled");
    x = open_mem(CF_FORMAT_CSV, nohdr, sizeof nohdr - 1, o, CF_COMPRESSION_NONE, 0, 0, 0);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, NULL), CF_OK);
    assert_string_equal(field(v, "id"), "1");
    assert_string_equal(field(v, "name"), "2");
    cf_value_destroy(v), cf_schema_unref(s);
    cf_extractor_destroy(x);
    /* names that collide (found by fuzz_csv_extractor): a header equal to a
     * generated field<N>, and two equal headers; every column is kept */
    cf_props_remove(o, "extractor.csv.headers");
    const char clash[] = "field2,b,b\n1,2,3,4\n";
    x = open_mem(CF_FORMAT_CSV, clash, sizeof clash - 1, o, CF_COMPRESSION_NONE, 0, 0, 0);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, NULL), CF_OK);
    assert_int_equal(s->n_fields, 4);
    assert_string_equal(field(v, "field2"), "1");
    assert_string_equal(field(v, "b"), "2");
    assert_string_equal(field(v, "field2_1"), "3");
    assert_string_equal(field(v, "field3"), "4");
    cf_value_destroy(v), cf_schema_unref(s);
    cf_extractor_destroy(x);
    cf_props_destroy(o);
}

static void test_bytes(void **state) {
    (void)state;
    char *data = malloc(10000);
    for (int i = 0; i < 10000; i++) data[i] = (char)i;
    cf_extractor *x = open_mem(CF_FORMAT_BYTES, data, 10000, NULL, CF_COMPRESSION_NONE, 0, 0, 0);
    size_t sizes[] = {4096, 4096, 1808}, total = 0;
    for (int i = 0; i < 3; i++) {
        cf_schema *s;
        cf_value *v;
        cf_extract_pos pos;
        assert_int_equal(cf_extractor_next(x, &s, &v, &pos, NULL), CF_OK);
        assert_int_equal(v->u.s.len, sizes[i]);
        assert_memory_equal(v->u.s.ptr, data + total, sizes[i]);
        assert_int_equal(pos.start, total);
        total += sizes[i];
        assert_int_equal(pos.end, total);
        cf_value_destroy(v), cf_schema_unref(s);
    }
    cf_schema *s;
    cf_value *v;
    assert_int_equal(cf_extractor_next(x, &s, &v, NULL, NULL), CF_ERR_EOF);
    cf_extractor_destroy(x);
    /* an empty object gives no records (Aiven's ByteArrayExtractor) */
    x = open_mem(CF_FORMAT_BYTES, data, 0, NULL, CF_COMPRESSION_NONE, 0, 0, 0);
    assert_int_equal(cf_extractor_next(x, &s, &v, NULL, NULL), CF_ERR_EOF);
    cf_extractor_destroy(x);
    free(data);
}

/* One payload compressed by each real library decodes to the same bytes. */
static void test_decompression(void **state) {
    (void)state;
    size_t n = 300000;
    char *plain = malloc(n);
    for (size_t i = 0; i < n; i++) plain[i] = (char)("abcdefgh\n"[i % 9] + (i % 7 == 0));
    struct { cf_compression c; char *data; size_t len; } cases[5];
    int nc = 0;
    /* gzip, two concatenated members */
    {
        size_t cap = n + 1024;
        unsigned char *gz = malloc(cap);
        size_t used = 0;
        for (int m = 0; m < 2; m++) {
            z_stream z = {0};
            deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
            z.next_in = (unsigned char *)plain + (m ? n / 2 : 0), z.avail_in = (uInt)(n / 2);
            z.next_out = gz + used, z.avail_out = (uInt)(cap - used);
            assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
            used += z.total_out;
            deflateEnd(&z);
        }
        cases[nc].c = CF_COMPRESSION_GZIP, cases[nc].data = (char *)gz, cases[nc++].len = used;
    }
    {
        size_t cap = ZSTD_compressBound(n);
        char *zs = malloc(cap);
        size_t len = ZSTD_compress(zs, cap, plain, n, 3);
        assert_false(ZSTD_isError(len));
        cases[nc].c = CF_COMPRESSION_ZSTD, cases[nc].data = zs, cases[nc++].len = len;
    }
    /* snappy-java (xerial) stream: magic, version 1, compatible 1, blocks */
    {
        cf_buf b = CF_BUF_INIT;
        const unsigned char hdr[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
        cf_buf_append(&b, hdr, 16);
        for (size_t off = 0; off < n; off += 32768) {
            size_t k = n - off < 32768 ? n - off : 32768, clen = snappy_max_compressed_length(k);
            char *tmp = malloc(clen);
            assert_int_equal(snappy_compress(plain + off, k, tmp, &clen), SNAPPY_OK);
            unsigned char l[4] = {(unsigned char)(clen >> 24), (unsigned char)(clen >> 16), (unsigned char)(clen >> 8), (unsigned char)clen};
            cf_buf_append(&b, l, 4);
            cf_buf_append(&b, tmp, clen);
            free(tmp);
        }
        size_t len;
        char *d = cf_buf_detach(&b, &len);
        cases[nc].c = CF_COMPRESSION_SNAPPY, cases[nc].data = d, cases[nc++].len = len;
    }
    /* snappy framing format: stream identifier, compressed chunks (CRC not checked) */
    {
        cf_buf b = CF_BUF_INIT;
        const unsigned char id[10] = {0xff, 6, 0, 0, 's', 'N', 'a', 'P', 'p', 'Y'};
        cf_buf_append(&b, id, 10);
        for (size_t off = 0; off < n; off += 65536) {
            size_t k = n - off < 65536 ? n - off : 65536, clen = snappy_max_compressed_length(k);
            char *tmp = malloc(clen);
            assert_int_equal(snappy_compress(plain + off, k, tmp, &clen), SNAPPY_OK);
            size_t cl = clen + 4;
            unsigned char h[8] = {0x00, (unsigned char)cl, (unsigned char)(cl >> 8), (unsigned char)(cl >> 16), 0, 0, 0, 0};
            cf_buf_append(&b, h, 8);
            cf_buf_append(&b, tmp, clen);
            free(tmp);
        }
        size_t len;
        char *d = cf_buf_detach(&b, &len);
        cases[nc].c = CF_COMPRESSION_SNAPPY, cases[nc].data = d, cases[nc++].len = len;
    }
    for (int i = 0; i < nc; i++) {
        cf_reader *r;
        assert_int_equal(cf_reader_open_mem(cases[i].data, cases[i].len, "x", cases[i].c, &r, NULL), CF_OK);
        char *out = malloc(n + 10);
        size_t got = 0, k;
        do {
            assert_int_equal(cf_reader_read(r, out + got, 7777 < n + 10 - got ? 7777 : n + 10 - got, &k, NULL), CF_OK);
            got += k;
        } while (k);
        assert_int_equal(got, n);
        assert_memory_equal(out, plain, n);
        cf_reader_close(r);
        /* skip_to then read the tail */
        assert_int_equal(cf_reader_open_mem(cases[i].data, cases[i].len, "x", cases[i].c, &r, NULL), CF_OK);
        assert_int_equal(cf_reader_skip_to(r, n - 100, NULL), CF_OK);
        assert_int_equal(cf_reader_read(r, out, 1000, &k, NULL), CF_OK);
        assert_int_equal(k, 100);
        assert_memory_equal(out, plain + n - 100, 100);
        cf_reader_close(r);
        /* truncated / damaged input is an error, not a short read */
        cf_err err;
        assert_int_equal(cf_reader_open_mem(cases[i].data, cases[i].len * 2 / 3, "x", cases[i].c, &r, NULL), CF_OK);
        cf_code rc;
        do rc = cf_reader_read(r, out, n, &k, &err);
        while (rc == CF_OK && k);
        if (rc != CF_ERR_CORRUPT) fprintf(stderr, "case %d: truncated input not reported\n", i);
        assert_int_equal(rc, CF_ERR_CORRUPT);
        cf_reader_close(r);
        free(out);
        free(cases[i].data);
    }
    free(plain);
}

/* JSON lines as Kafka's JsonConverter with schemas.enable=false reads them:
 * integers INT64, decimals FLOAT64, objects MAP, no schema; blank lines are
 * skipped; a bad line is reported with line and byte, then reading goes on. */
static void test_jsonl(void **state) {
    (void)state;
    const char data[] = "{\"id\": 1, \"name\": \"a\"}\n\n  \n[1, 2.5]\r\n{bad json\n\"tail\"";
    cf_extractor *x = open_mem(CF_FORMAT_JSONL, data, sizeof data - 1, NULL, CF_COMPRESSION_NONE, 0, 0, 0);
    cf_schema *s;
    cf_value *v;
    cf_extract_pos pos;
    cf_err err;
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_OK);
    assert_null(s);
    assert_int_equal(v->type, CF_MAP);
    assert_int_equal(cf_value_map_get_str(v, "id")->type, CF_INT64);
    assert_int_equal(cf_value_map_get_str(v, "id")->u.i, 1);
    assert_int_equal(pos.line, 1);
    cf_value_destroy(v);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_OK);
    assert_int_equal(v->type, CF_ARRAY);
    assert_int_equal(v->u.arr.items[1]->type, CF_FLOAT64);
    assert_int_equal(pos.line, 4);
    assert_int_equal(pos.index, 1);
    cf_value_destroy(v);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_ERR_INVALID);
    assert_string_equal(err.where, "obj.csv: line 5, byte 37");
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_OK);
    assert_int_equal(v->type, CF_STRING);
    assert_int_equal(pos.end, sizeof data - 1);
    cf_value_destroy(v);
    assert_int_equal(cf_extractor_next(x, &s, &v, &pos, &err), CF_ERR_EOF);
    cf_extractor_destroy(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_rfc4180), cmocka_unit_test(test_csv_resume),
        cmocka_unit_test(test_csv_errors_and_options), cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_decompression), cmocka_unit_test(test_jsonl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
