/*
 * test_it_bq_encode.c - the BigQuery writer schema and row encoding,
 * checked by Google's code: the requests we build are parsed by
 * google-cloud-bigquery-storage's AppendRowsRequest and the rows by the
 * message class Google's protobuf runtime makes from the descriptor we sent
 * (tests/sink/bigquery/bq_decode.py, run with the test venv's python,
 * CF_TEST_PYTHON from scripts/servers). The other direction too: responses
 * built by Google's AppendRowsResponse and WriteStream are decoded by ours.
 *
 * Expected values come from BigQuery's documented encodings (TIMESTAMP as
 * microseconds since the epoch, DATE as days, the rest as literals), worked
 * out by hand below, and from protobuf's JSON mapping (int64 as strings,
 * bytes as base64).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../it_env.h"
#include "cdcflow/bigquery.h"

static const char *g_py;
static char g_dir[256];

static cf_bq_field fld(const char *name, cf_bq_type t, cf_bq_mode m) {
    cf_bq_field f = {(char *)name, t, m, NULL, 0};
    return f;
}

static cf_cell txt(const char *s) {
    cf_cell c = {CF_CELL_TEXT, (uint32_t)strlen(s), {.p = s}};
    return c;
}
static cf_cell num(int64_t i) {
    cf_cell c = {CF_CELL_INT, 0, {.i = i}};
    return c;
}
static cf_cell real(double f) {
    cf_cell c = {CF_CELL_REAL, 0, {.f = f}};
    return c;
}

/* Run the decoder on request files; returns its stdout lines (malloc'd). */
static char **decode(const char *const *files, size_t nf, size_t *n) {
    cf_buf cmd = CF_BUF_INIT;
    cf_buf_printf(&cmd, "'%s' '%s/sink/bigquery/bq_decode.py'", g_py, CF_TESTS_DIR);
    for (size_t i = 0; i < nf; i++) cf_buf_printf(&cmd, " '%s'", files[i]);
    FILE *p = popen(cmd.data, "r");
    assert_non_null(p);
    char **lines = NULL;
    *n = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t k;
    while ((k = getline(&line, &cap, p)) > 0) {
        if (line[k - 1] == '\n') line[k - 1] = 0;
        lines = realloc(lines, (*n + 1) * sizeof *lines);
        lines[(*n)++] = strdup(line);
    }
    free(line);
    int st = pclose(p);
    if (st != 0) fprintf(stderr, "decoder failed: %s (status %d)\n", cmd.data, st);
    assert_int_equal(st, 0);
    cf_buf_free(&cmd);
    return lines;
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void expect_line(char **lines, size_t n, size_t i, const char *want) {
    assert_true(i < n);
    if (strcmp(lines[i], want) != 0) fprintf(stderr, "line %zu\n  got:  %s\n  want: %s\n", i, lines[i], want);
    assert_string_equal(lines[i], want);
}

static void free_lines(char **l, size_t n) {
    for (size_t i = 0; i < n; i++) free(l[i]);
    free(l);
}

/* Every column type, nested and repeated records, CDC pseudo-columns. */
static void test_every_type(void **state) {
    (void)state;
    cf_bq_field loc[2] = {fld("lat", CF_BQ_FLOAT64, CF_BQ_NULLABLE), fld("lon", CF_BQ_FLOAT64, CF_BQ_NULLABLE)};
    cf_bq_field addr[4] = {fld("street", CF_BQ_STRING, CF_BQ_NULLABLE), fld("zip", CF_BQ_INT64, CF_BQ_NULLABLE),
                           fld("loc", CF_BQ_RECORD, CF_BQ_NULLABLE), fld("since", CF_BQ_TIMESTAMP, CF_BQ_NULLABLE)};
    addr[2].fields = loc, addr[2].n_fields = 2;
    cf_bq_field item[2] = {fld("sku", CF_BQ_STRING, CF_BQ_REQUIRED), fld("qty", CF_BQ_INT64, CF_BQ_NULLABLE)};
    cf_bq_field cols[] = {
        fld("id", CF_BQ_INT64, CF_BQ_REQUIRED),     fld("name", CF_BQ_STRING, CF_BQ_NULLABLE),
        fld("score", CF_BQ_FLOAT64, CF_BQ_NULLABLE), fld("ok", CF_BQ_BOOL, CF_BQ_NULLABLE),
        fld("raw", CF_BQ_BYTES, CF_BQ_NULLABLE),     fld("amount", CF_BQ_NUMERIC, CF_BQ_NULLABLE),
        fld("big", CF_BQ_BIGNUMERIC, CF_BQ_NULLABLE), fld("ts", CF_BQ_TIMESTAMP, CF_BQ_NULLABLE),
        fld("d", CF_BQ_DATE, CF_BQ_NULLABLE),        fld("dt", CF_BQ_DATETIME, CF_BQ_NULLABLE),
        fld("t", CF_BQ_TIME, CF_BQ_NULLABLE),        fld("geo", CF_BQ_GEOGRAPHY, CF_BQ_NULLABLE),
        fld("doc", CF_BQ_JSON, CF_BQ_NULLABLE),      fld("tags", CF_BQ_STRING, CF_BQ_REPEATED),
        fld("addr", CF_BQ_RECORD, CF_BQ_NULLABLE),   fld("items", CF_BQ_RECORD, CF_BQ_REPEATED),
        fld("dur", CF_BQ_INTERVAL, CF_BQ_NULLABLE),
    };
    size_t nc = sizeof cols / sizeof *cols;
    cols[14].fields = addr, cols[14].n_fields = 4;
    cols[15].fields = item, cols[15].n_fields = 2;

    cf_err e;
    cf_buf desc = CF_BUF_INIT;
    assert_int_equal(cf_bq_descriptor(cols, nc, true, &desc, &e), CF_OK);
    cf_bq_rowenc *enc;
    assert_int_equal(cf_bq_rowenc_new(cols, nc, true, &enc, &e), CF_OK);

    static const char blob[] = {0, (char)0xff, 'a', 'b'};
    cf_cell r1[17] = {
        num(1),
        txt("h\xc3\xa9llo \"q\""),
        real(-1.5),
        num(1),
        {CF_CELL_BLOB, 4, {.p = blob}},
        txt("123.456"),
        txt("-12345678901234567890123456789.123456789012345678901234567890123456"),
        txt("2024-04-30 11:19:44.123456"), /* 19843 days * 86400 + 40784 s = 1714475984 s */
        txt("2024-04-30"),                 /* 19843 days */
        txt("2024-04-30 11:19:44.123"),
        txt("11:19:44.123"),
        txt("POINT(1 2)"),
        txt("{\"a\":[1,2]}"),
        txt("[\"x\",\"y\"]"),
        txt("{\"street\":\"Main\",\"zip\":12345,\"loc\":{\"lat\":1.5,\"lon\":-2.25},\"since\":1714475984123}"),
        txt("[{\"sku\":\"a\",\"qty\":2},{\"sku\":\"b\",\"qty\":-3}]"),
        txt("1-2 3 4:5:6.789"),
    };
    cf_cell r2[1] = {num(2)}; /* a DELETE: the key only */
    cf_cell r3[9] = {num(-5), {0}, real(0.0), num(0), {0}, {0}, {0},
                     txt("1969-12-31 23:59:59.999"), /* -1 ms = -1000 us */
                     txt("1900-01-01")};            /* 70 years, 17 of them leap: -(70*365+17) = -25567 */
    cf_buf rows = CF_BUF_INIT, row = CF_BUF_INIT;
    assert_int_equal(cf_bq_encode_row(enc, r1, 17, "UPSERT", "0000000000000001/000000000000000a", &row, &e), CF_OK);
    cf_bq_rows_add(&rows, row.data, row.len);
    cf_buf_reset(&row);
    assert_int_equal(cf_bq_encode_row(enc, r2, 1, "DELETE", "0000000000000002/000000000000000b", &row, &e), CF_OK);
    cf_bq_rows_add(&rows, row.data, row.len);
    cf_buf_reset(&row);
    assert_int_equal(cf_bq_encode_row(enc, r3, 9, "UPSERT", "ffffffffffffffff/ffffffffffffffff", &row, &e), CF_OK);
    cf_bq_rows_add(&rows, row.data, row.len);

    const char *ws = "projects/p1/datasets/ds/tables/t_all/streams/_default";
    cf_buf req = CF_BUF_INIT;
    cf_bq_append_request(&req, ws, &desc, (const uint8_t *)rows.data, rows.len, "cdcflow-test");
    assert_true(req.len <= rows.len + cf_bq_request_overhead(ws, desc.len));
    char path[300];
    snprintf(path, sizeof path, "%s/req1.bin", g_dir);
    write_file(path, req.data, req.len);
    /* a later request of the stream: no stream name, no schema */
    cf_buf req2 = CF_BUF_INIT;
    cf_bq_append_request(&req2, NULL, NULL, (const uint8_t *)rows.data, rows.len, NULL);
    char path2[300];
    snprintf(path2, sizeof path2, "%s/req2.bin", g_dir);
    write_file(path2, req2.data, req2.len);

    const char *files[2] = {path, path2};
    size_t n;
    char **l = decode(files, 2, &n);
    assert_int_equal(n, 2 + 3 + 1 + 3);
    expect_line(l, n, 0, "{\"write_stream\": \"projects/p1/datasets/ds/tables/t_all/streams/_default\", "
                         "\"has_schema\": true, \"trace_id\": \"cdcflow-test\"}");
    /* label 1 optional, 3 repeated; type 3 int64, 9 string, 1 double, 8 bool, 12 bytes, 5 int32, 11 message */
    expect_line(l, n, 1,
                "{\"descriptor\": [[\"id\", 1, 1, 3, \"\"], [\"name\", 2, 1, 9, \"\"], [\"score\", 3, 1, 1, \"\"], "
                "[\"ok\", 4, 1, 8, \"\"], [\"raw\", 5, 1, 12, \"\"], [\"amount\", 6, 1, 9, \"\"], [\"big\", 7, 1, 9, "
                "\"\"], [\"ts\", 8, 1, 3, \"\"], [\"d\", 9, 1, 5, \"\"], [\"dt\", 10, 1, 9, \"\"], [\"t\", 11, 1, 9, "
                "\"\"], [\"geo\", 12, 1, 9, \"\"], [\"doc\", 13, 1, 9, \"\"], [\"tags\", 14, 3, 9, \"\"], [\"addr\", "
                "15, 1, 11, \"r1\"], [\"items\", 16, 3, 11, \"r3\"], [\"dur\", 17, 1, 9, \"\"], [\"_CHANGE_TYPE\", 18, "
                "1, 9, \"\"], [\"_CHANGE_SEQUENCE_NUMBER\", 19, 1, 9, \"\"]], \"nested\": {\"r2\": [[\"lat\", 1, 1, 1, "
                "\"\"], [\"lon\", 2, 1, 1, \"\"]], \"r1\": [[\"street\", 1, 1, 9, \"\"], [\"zip\", 2, 1, 3, \"\"], "
                "[\"loc\", 3, 1, 11, \"r2\"], [\"since\", 4, 1, 3, \"\"]], \"r3\": [[\"sku\", 1, 1, 9, \"\"], "
                "[\"qty\", 2, 1, 3, \"\"]]}}");
    /* 2024-04-30 11:19:44.123456 UTC = 1714475984123456 us; the nested since
     * (Connect milliseconds 1714475984123) = 1714475984123000 us; blob 00 ff 61 62 = AP9hYg== */
    const char *row1 = "{\"_CHANGE_SEQUENCE_NUMBER\": \"0000000000000001/000000000000000a\", \"_CHANGE_TYPE\": "
                       "\"UPSERT\", \"_unknown\": 0, \"addr\": {\"loc\": {\"lat\": 1.5, \"lon\": -2.25}, \"since\": "
                       "\"1714475984123000\", \"street\": \"Main\", \"zip\": \"12345\"}, \"amount\": \"123.456\", "
                       "\"big\": \"-12345678901234567890123456789.123456789012345678901234567890123456\", \"d\": 19843, "
                       "\"doc\": \"{\\\"a\\\":[1,2]}\", \"dt\": \"2024-04-30 11:19:44.123\", \"dur\": \"1-2 3 "
                       "4:5:6.789\", \"geo\": \"POINT(1 2)\", \"id\": \"1\", \"items\": [{\"qty\": \"2\", \"sku\": "
                       "\"a\"}, {\"qty\": \"-3\", \"sku\": \"b\"}], \"name\": \"h\\u00e9llo \\\"q\\\"\", \"ok\": true, "
                       "\"raw\": \"AP9hYg==\", \"score\": -1.5, \"t\": \"11:19:44.123\", \"tags\": [\"x\", \"y\"], "
                       "\"ts\": \"1714475984123456\"}";
    const char *row2 = "{\"_CHANGE_SEQUENCE_NUMBER\": \"0000000000000002/000000000000000b\", \"_CHANGE_TYPE\": "
                       "\"DELETE\", \"_unknown\": 0, \"id\": \"2\"}";
    const char *row3 = "{\"_CHANGE_SEQUENCE_NUMBER\": \"ffffffffffffffff/ffffffffffffffff\", \"_CHANGE_TYPE\": "
                       "\"UPSERT\", \"_unknown\": 0, \"d\": -25567, \"id\": \"-5\", \"ok\": false, \"score\": 0.0, "
                       "\"ts\": \"-1000\"}";
    expect_line(l, n, 2, row1);
    expect_line(l, n, 3, row2);
    expect_line(l, n, 4, row3);
    expect_line(l, n, 5, "{\"write_stream\": \"\", \"has_schema\": false, \"trace_id\": \"\"}");
    expect_line(l, n, 6, row1);
    expect_line(l, n, 7, row2);
    expect_line(l, n, 8, row3);
    free_lines(l, n);

    /* Bad cells: named, and the output left as it was. */
    cf_buf_reset(&row);
    cf_cell bad[9] = {num(1), {0}, {0}, {0}, {0}, {0}, {0}, {0}, txt("2024-02-30")};
    assert_int_equal(cf_bq_encode_row(enc, bad, 9, "UPSERT", "1", &row, &e), CF_ERR_SCHEMA);
    assert_string_equal(e.where, "d");
    assert_int_equal(row.len, 0);
    cf_cell bad2[16] = {num(1)};
    bad2[15] = txt("[{\"sku\":\"a\",\"color\":\"red\"}]");
    assert_int_equal(cf_bq_encode_row(enc, bad2, 16, "UPSERT", "1", &row, &e), CF_ERR_SCHEMA);
    assert_string_equal(e.where, "items.color");
    bad2[15] = txt("[{\"qty\":1}]"); /* sku is REQUIRED */
    assert_int_equal(cf_bq_encode_row(enc, bad2, 16, "UPSERT", "1", &row, &e), CF_ERR_SCHEMA);
    assert_string_equal(e.where, "items.sku");
    cf_cell keep[2] = {num(1), {CF_CELL_KEEP, 0, {0}}};
    assert_int_equal(cf_bq_encode_row(enc, keep, 2, "UPSERT", "1", &row, &e), CF_ERR_SCHEMA);
    assert_non_null(strstr(e.message, "unavailable-value placeholder"));

    cf_bq_rowenc_destroy(enc);
    cf_buf_free(&desc), cf_buf_free(&rows), cf_buf_free(&row), cf_buf_free(&req), cf_buf_free(&req2);
}

/* A Cassandra map as kcbq shapes a Connect map (REPEATED RECORD of key and
 * value), filled from the sink's JSON for a map: an object (text keys) and
 * an array of [key, value] pairs (other keys); a NULL map value is a record
 * without value; a nested UDT (RECORD in RECORD, a list inside). */
static void test_map_and_nested_udt(void **state) {
    (void)state;
    cf_bq_field kv1[2] = {fld("key", CF_BQ_STRING, CF_BQ_NULLABLE), fld("value", CF_BQ_INT64, CF_BQ_NULLABLE)};
    cf_bq_field udt_in[2] = {fld("a", CF_BQ_STRING, CF_BQ_NULLABLE), fld("b", CF_BQ_STRING, CF_BQ_REPEATED)};
    cf_bq_field kv2[2] = {fld("key", CF_BQ_INT64, CF_BQ_NULLABLE), fld("value", CF_BQ_RECORD, CF_BQ_NULLABLE)};
    kv2[1].fields = udt_in, kv2[1].n_fields = 2;
    cf_bq_field zip[1] = {fld("zip", CF_BQ_INT64, CF_BQ_NULLABLE)};
    cf_bq_field udt[2] = {fld("name", CF_BQ_STRING, CF_BQ_NULLABLE), fld("addr", CF_BQ_RECORD, CF_BQ_NULLABLE)};
    udt[1].fields = zip, udt[1].n_fields = 1;
    cf_bq_field cols[] = {fld("id", CF_BQ_INT64, CF_BQ_REQUIRED), fld("m", CF_BQ_RECORD, CF_BQ_REPEATED),
                          fld("m2", CF_BQ_RECORD, CF_BQ_REPEATED), fld("u", CF_BQ_RECORD, CF_BQ_NULLABLE)};
    cols[1].fields = kv1, cols[1].n_fields = 2;
    cols[2].fields = kv2, cols[2].n_fields = 2;
    cols[3].fields = udt, cols[3].n_fields = 2;
    size_t nc = sizeof cols / sizeof *cols;
    cf_err e;
    cf_buf desc = CF_BUF_INIT, rows = CF_BUF_INIT, row = CF_BUF_INIT, req = CF_BUF_INIT;
    assert_int_equal(cf_bq_descriptor(cols, nc, true, &desc, &e), CF_OK);
    cf_bq_rowenc *enc;
    assert_int_equal(cf_bq_rowenc_new(cols, nc, true, &enc, &e), CF_OK);
    cf_cell r1[4] = {num(1), txt("{\"a\":1,\"b\":null}"),
                     txt("[[1,{\"a\":\"x\",\"b\":[\"p\",\"q\"]}],[-2,null]]"),
                     txt("{\"name\":\"n\",\"addr\":{\"zip\":12345}}")};
    assert_int_equal(cf_bq_encode_row(enc, r1, 4, "UPSERT", "1", &row, &e), CF_OK);
    cf_bq_rows_add(&rows, row.data, row.len);
    cf_buf_reset(&row);
    cf_cell r2[4] = {num(2), txt("{}"), {0}, {0}}; /* an empty map, a NULL map: no entries */
    assert_int_equal(cf_bq_encode_row(enc, r2, 4, "UPSERT", "2", &row, &e), CF_OK);
    cf_bq_rows_add(&rows, row.data, row.len);
    cf_buf_reset(&row);
    const char *ws = "projects/p1/datasets/ds/tables/t_map/streams/_default";
    cf_bq_append_request(&req, ws, &desc, (const uint8_t *)rows.data, rows.len, NULL);
    char path[300];
    snprintf(path, sizeof path, "%s/req_map.bin", g_dir);
    write_file(path, req.data, req.len);
    const char *files[1] = {path};
    size_t n;
    char **l = decode(files, 1, &n);
    assert_int_equal(n, 2 + 2);
    expect_line(l, n, 2,
                "{\"_CHANGE_SEQUENCE_NUMBER\": \"1\", \"_CHANGE_TYPE\": \"UPSERT\", \"_unknown\": 0, \"id\": \"1\", "
                "\"m\": [{\"key\": \"a\", \"value\": \"1\"}, {\"key\": \"b\"}], \"m2\": [{\"key\": \"1\", "
                "\"value\": {\"a\": \"x\", \"b\": [\"p\", \"q\"]}}, {\"key\": \"-2\"}], \"u\": {\"addr\": "
                "{\"zip\": \"12345\"}, \"name\": \"n\"}}");
    expect_line(l, n, 3, "{\"_CHANGE_SEQUENCE_NUMBER\": \"2\", \"_CHANGE_TYPE\": \"UPSERT\", \"_unknown\": 0, "
                         "\"id\": \"2\"}");
    free_lines(l, n);
    /* a NULL element of a list is refused, named (BigQuery arrays hold no NULL) */
    cf_cell bad[3] = {num(3), {0}, txt("[[1,{\"b\":[\"p\",null]}]]")};
    assert_int_equal(cf_bq_encode_row(enc, bad, 3, "UPSERT", "3", &row, &e), CF_ERR_SCHEMA);
    assert_non_null(strstr(e.where, "b[1]"));
    assert_int_equal(row.len, 0);
    cf_bq_rowenc_destroy(enc);
    cf_buf_free(&desc), cf_buf_free(&rows), cf_buf_free(&row), cf_buf_free(&req);
}

/* The message bq_responses.py wrote to <prefix>.<name>, into buf. */
static size_t read_made(const char *prefix, const char *name, uint8_t *buf, size_t cap) {
    char f[400];
    snprintf(f, sizeof f, "%s.%s", prefix, name);
    FILE *fp = fopen(f, "rb");
    assert_non_null(fp);
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return n;
}

/* Responses built by Google's AppendRowsResponse, decoded by ours. */
static void test_responses(void **state) {
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/resp", g_dir);
    cf_buf cmd = CF_BUF_INIT;
    cf_buf_printf(&cmd, "'%s' '%s/sink/bigquery/bq_responses.py' '%s'", g_py, CF_TESTS_DIR, path);
    assert_int_equal(system(cmd.data), 0);
    cf_buf_free(&cmd);
    struct {
        const char *name;
    } files[] = {{"ok"}, {"row_errors"}, {"internal"}, {"schema"}};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        uint8_t buf[4096];
        size_t n = read_made(path, files[i].name, buf, sizeof buf);
        cf_bq_append_resp r;
        cf_err e;
        assert_int_equal(cf_bq_append_resp_decode(buf, n, &r, &e), CF_OK);
        switch (i) {
        case 0:
            assert_true(r.has_result);
            assert_false(r.has_error);
            assert_true(r.has_offset);
            assert_int_equal(r.offset, 42);
            assert_string_equal(r.write_stream, "projects/p/datasets/d/tables/t/streams/_default");
            break;
        case 1:
            assert_true(r.has_error);
            assert_int_equal(r.code, CF_GRPC_INVALID_ARGUMENT);
            assert_int_equal(r.n_row_errors, 2);
            assert_int_equal(r.row_errors[0].index, 1);
            assert_int_equal(r.row_errors[0].code, 1);
            assert_string_equal(r.row_errors[0].message, "Field qty: bad value");
            assert_int_equal(r.row_errors[1].index, 300);
            break;
        case 2:
            assert_true(r.has_error);
            assert_int_equal(r.code, CF_GRPC_INTERNAL);
            assert_string_equal(r.message, "backend error");
            assert_int_equal(r.storage_code, 7); /* SCHEMA_MISMATCH_EXTRA_FIELDS in the Any detail */
            break;
        case 3:
            assert_true(r.updated_schema);
            assert_true(r.has_result);
            assert_false(r.has_offset);
            break;
        }
        cf_bq_append_resp_free(&r);
        /* every truncation is an error or a clean shorter message, never a crash */
        for (size_t k = 0; k < n; k++) {
            cf_bq_append_resp t;
            (void)cf_bq_append_resp_decode(buf, k, &t, NULL);
            cf_bq_append_resp_free(&t);
        }
    }
}

/* GetWriteStream: our request parsed by Google's GetWriteStreamRequest;
 * WriteStream answers built by Google's class decoded by ours. */
static void test_get_write_stream(void **state) {
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/gws.req", g_dir);
    cf_buf req = CF_BUF_INIT;
    cf_bq_get_write_stream_request(&req, "projects/p/datasets/d/tables/t/streams/_default", CF_BQ_VIEW_FULL);
    write_file(path, req.data, req.len);
    cf_buf cmd = CF_BUF_INIT;
    cf_buf_printf(&cmd, "'%s' '%s/sink/bigquery/bq_decode.py' --get-write-stream '%s'", g_py, CF_TESTS_DIR, path);
    FILE *p = popen(cmd.data, "r");
    assert_non_null(p);
    char line[512] = "";
    if (!fgets(line, sizeof line, p)) line[0] = 0;
    assert_int_equal(pclose(p), 0);
    assert_string_equal(line, "{\"name\": \"projects/p/datasets/d/tables/t/streams/_default\", \"view\": \"FULL\", "
                              "\"_unknown\": 0}\n");
    cf_buf_free(&cmd);
    cf_buf_free(&req);

    snprintf(path, sizeof path, "%s/ws", g_dir);
    cf_buf_printf(&cmd, "'%s' '%s/sink/bigquery/bq_responses.py' '%s'", g_py, CF_TESTS_DIR, path);
    assert_int_equal(system(cmd.data), 0);
    cf_buf_free(&cmd);
    static const char *const names[] = {"ws_full", "ws_basic"};
    for (size_t i = 0; i < 2; i++) {
        uint8_t buf[4096];
        size_t n = read_made(path, names[i], buf, sizeof buf);
        cf_bq_write_stream w;
        cf_err e;
        assert_int_equal(cf_bq_write_stream_decode(buf, n, &w, &e), CF_OK);
        assert_string_equal(w.name, "projects/p/datasets/d/tables/t/streams/_default");
        assert_int_equal(w.type, CF_BQ_STREAM_COMMITTED);
        if (i == 0) {
            assert_int_equal(w.write_mode, 1); /* INSERT */
            assert_string_equal(w.location, "EU");
            assert_true(w.has_schema);
            assert_int_equal(w.n_columns, 3); /* top level only: Addr.city is not a column */
            assert_string_equal(w.columns[0], "id");
            assert_string_equal(w.columns[1], "Addr");
            assert_string_equal(w.columns[2], "tags");
        } else {
            assert_false(w.has_schema);
            assert_int_equal(w.n_columns, 0);
            assert_null(w.location);
        }
        cf_bq_write_stream_free(&w);
        /* every truncation is an error or a clean shorter message, never a crash */
        for (size_t k = 0; k < n; k++) {
            cf_bq_write_stream t;
            (void)cf_bq_write_stream_decode(buf, k, &t, NULL);
            cf_bq_write_stream_free(&t);
        }
    }
}

int main(void) {
    g_py = it_need_env("CF_TEST_PYTHON");
    snprintf(g_dir, sizeof g_dir, "/tmp/cf-bq-encode-%d", (int)getpid());
    char mk[300];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", g_dir);
    if (system(mk) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type),
        cmocka_unit_test(test_map_and_nested_udt),
        cmocka_unit_test(test_responses),
        cmocka_unit_test(test_get_write_stream),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(mk, sizeof mk, "rm -rf '%s'", g_dir);
    if (system(mk) != 0) return 1;
    return rc;
}
