/*
 * test_recordfile.c - record files (kcat -J lines): exact output, round
 * trips, kcat's raw non-UTF-8 output, streaming reader errors.
 * The expected lines follow kcat's json.c (field order, tstype strings,
 * headers as a flat array, null key/payload) and yajl's escaping (upper-case
 * \u00XX for control bytes, '/' and DEL not escaped); test_recordfile_kcat.c
 * checks the same against the real kcat binary.
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

#include "cdcflow/recordfile.h"

static char *fmt(const cf_msg *m) {
    cf_buf b = CF_BUF_INIT;
    cf_recordfile_format(m, &b);
    return cf_buf_detach(&b, NULL);
}

static void assert_msg_equal(const cf_msg *a, const cf_msg *b) {
    assert_string_equal(a->topic ? a->topic : "", b->topic ? b->topic : "");
    assert_int_equal(a->partition, b->partition);
    assert_true(a->offset == b->offset);
    assert_int_equal(a->ts_type, b->ts_type);
    if (a->ts_type != CF_TS_NONE) assert_true(a->timestamp == b->timestamp);
    assert_int_equal(a->key == NULL, b->key == NULL);
    if (a->key) {
        assert_int_equal(a->key_len, b->key_len);
        assert_memory_equal(a->key, b->key, a->key_len);
    }
    assert_int_equal(a->value == NULL, b->value == NULL);
    if (a->value) {
        assert_int_equal(a->value_len, b->value_len);
        assert_memory_equal(a->value, b->value, a->value_len);
    }
    assert_int_equal(a->n_headers, b->n_headers);
    for (size_t i = 0; i < a->n_headers; i++) {
        assert_string_equal(a->headers[i].key, b->headers[i].key);
        assert_int_equal(a->headers[i].value == NULL, b->headers[i].value == NULL);
        if (a->headers[i].value) {
            assert_int_equal(a->headers[i].value_len, b->headers[i].value_len);
            assert_memory_equal(a->headers[i].value, b->headers[i].value, a->headers[i].value_len);
        }
    }
}

static void test_exact_kcat_shape(void **state) {
    (void)state;
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "orders");
    m->partition = 0;
    m->offset = 5;
    m->ts_type = CF_TS_CREATE;
    m->timestamp = 1700000000123;
    cf_msg_add_header(m, "h", "v", 1);
    cf_msg_add_header(m, "n", NULL, 0);
    cf_msg_set_key(m, "k", 1);
    const char v[] = "a\n\"/\\\t\x01\x1f\x7f\xc3\xa9\b\f\r";
    cf_msg_set_value(m, v, sizeof v - 1);
    char *line = fmt(m);
    assert_string_equal(line, "{\"topic\":\"orders\",\"partition\":0,\"offset\":5,\"tstype\":\"create\","
                              "\"ts\":1700000000123,\"broker\":-1,\"headers\":[\"h\",\"v\",\"n\",null],"
                              "\"key\":\"k\",\"payload\":\"a\\n\\\"/\\\\\\t\\u0001\\u001F\x7f\xc3\xa9\\b\\f\\r\"}\n");
    free(line);

    /* no timestamp: no tstype/ts; no headers: no "headers"; nulls */
    cf_msg_clear(m);
    cf_msg_set_topic(m, "t");
    m->partition = 3;
    m->offset = 0;
    line = fmt(m);
    assert_string_equal(line, "{\"topic\":\"t\",\"partition\":3,\"offset\":0,\"broker\":-1,\"key\":null,\"payload\":null}\n");
    free(line);
    m->ts_type = CF_TS_LOG_APPEND;
    m->timestamp = 7;
    cf_msg_set_value(m, "", 0); /* empty is not null */
    line = fmt(m);
    assert_string_equal(line, "{\"topic\":\"t\",\"partition\":3,\"offset\":0,\"tstype\":\"logappend\",\"ts\":7,"
                              "\"broker\":-1,\"key\":null,\"payload\":\"\"}\n");
    free(line);
    cf_msg_destroy(m);
}

static void test_non_utf8_base64(void **state) {
    (void)state;
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "t");
    m->partition = 0;
    m->offset = 1;
    cf_msg_set_key(m, "\xff\x00\x01", 3);
    cf_msg_set_value(m, "\xc3\x28", 2); /* invalid 2-byte sequence */
    cf_msg_add_header(m, "ok", "\xed\xa0\x80", 3); /* UTF-8-encoded surrogate: invalid */
    char *line = fmt(m);
    assert_string_equal(line, "{\"topic\":\"t\",\"partition\":0,\"offset\":1,\"broker\":-1,\"headers\":[\"ok\",\"7aCA\"],"
                              "\"key\":\"/wAB\",\"payload\":\"wyg=\",\"key_encoding\":\"base64\","
                              "\"payload_encoding\":\"base64\",\"headers_b64\":[1]}\n");
    cf_msg *back = cf_msg_new();
    cf_err err;
    assert_int_equal(cf_recordfile_parse(line, strlen(line), back, &err), CF_OK);
    assert_msg_equal(m, back);
    free(line);
    cf_msg_destroy(back);
    cf_msg_destroy(m);
}

static void test_reads_kcat_raw_bytes(void **state) {
    (void)state;
    /* kcat writes non-UTF-8 raw; that must read back byte for byte */
    const char line[] = "{\"topic\":\"t\",\"partition\":2,\"offset\":9,\"tstype\":\"logappend\",\"ts\":5,\"broker\":1,"
                        "\"headers\":[\"a\",\"\xff\xfe\",\"b\",null],\"key\":\"\xc3\x28\",\"payload\":\"x\\u0000y\\ud83d\\ude00\"}";
    cf_msg *m = cf_msg_new();
    cf_err err;
    assert_int_equal(cf_recordfile_parse(line, sizeof line - 1, m, &err), CF_OK);
    assert_string_equal(m->topic, "t");
    assert_int_equal(m->partition, 2);
    assert_int_equal(m->offset, 9);
    assert_int_equal(m->ts_type, CF_TS_LOG_APPEND);
    assert_int_equal(m->timestamp, 5);
    assert_int_equal(m->key_len, 2);
    assert_memory_equal(m->key, "\xc3\x28", 2);
    assert_int_equal(m->value_len, 7);
    assert_memory_equal(m->value, "x\0y\xf0\x9f\x98\x80", 7);
    assert_int_equal(m->n_headers, 2);
    assert_memory_equal(m->headers[0].value, "\xff\xfe", 2);
    assert_null(m->headers[1].value);
    /* kcat -s avro embeds decoded JSON: kept as its text */
    const char avro[] = "{\"topic\":\"t\",\"partition\":0,\"offset\":0,\"broker\":1,\"key\":null,"
                        "\"payload\":{\"id\": 1, \"a\": [true, null, 1.5e3]},\"value_schema_id\":3}";
    assert_int_equal(cf_recordfile_parse(avro, sizeof avro - 1, m, &err), CF_OK);
    assert_int_equal(m->value_len, strlen("{\"id\": 1, \"a\": [true, null, 1.5e3]}"));
    assert_memory_equal(m->value, "{\"id\": 1, \"a\": [true, null, 1.5e3]}", m->value_len);
    /* hand-written minimal line */
    const char minimal[] = "  {\"payload\":\"p\"}  \r\n";
    assert_int_equal(cf_recordfile_parse(minimal, sizeof minimal - 1, m, &err), CF_OK);
    assert_null(m->topic);
    assert_int_equal(m->partition, -1);
    assert_null(m->key);
    cf_msg_destroy(m);
}

static void test_parse_errors(void **state) {
    (void)state;
    struct {
        const char *line;
        const char *detail;
        const char *where;
    } bad[] = {
        {"", "start with '{'", "column 1"},
        {"[1]", "start with '{'", "column 1"},
        {"{\"topic\":\"t\"}", "missing \"payload\"", "column 1"},
        {"{\"payload\":null,\"payload\":null}", "appears twice", "column 17"},
        {"{\"payload\":null,\"nope\":1}", "unknown field \"nope\"", "column 17"},
        {"{\"partition\":1.5,\"payload\":null}", "not a fraction", "column 14"},
        {"{\"partition\":2147483648,\"payload\":null}", "out of range", "column 14"},
        {"{\"offset\":99999999999999999999,\"payload\":null}", "out of range", "column 11"},
        {"{\"payload\":\"a\x01\"}", "raw control character", "column 14"},
        {"{\"payload\":\"\\x\"}", "invalid escape", "column 13"},
        {"{\"payload\":\"\\ud800\"}", "surrogate", "column 13"},
        {"{\"payload\":\"abc", "unterminated", "column 12"},
        {"{\"payload\":null} x", "after the JSON object", "column 18"},
        {"{\"headers\":[\"a\"],\"payload\":null}", "pairs", "column 12"},
        {"{\"headers\":[null,\"a\"],\"payload\":null}", "expected a string", "column 13"},
        {"{\"tstype\":\"create\",\"payload\":null}", "without \"ts\"", "column 1"},
        {"{\"tstype\":\"later\",\"ts\":1,\"payload\":null}", "\"tstype\" must be", "column 11"},
        {"{\"payload\":\"%%%\",\"payload_encoding\":\"base64\"}", "not valid base64", "column 12"},
        {"{\"payload\":\"YQ==\",\"payload_encoding\":\"hex\"}", "must be \"base64\"", "column 38"},
        {"{\"topic\":\"a\\u0000b\",\"payload\":null}", "NUL", "column 10"},
    };
    cf_msg *m = cf_msg_new();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cf_err err;
        cf_code rc = cf_recordfile_parse(bad[i].line, strlen(bad[i].line), m, &err);
        if (rc != CF_ERR_CORRUPT) fail_msg("line %zu accepted: %s", i, bad[i].line);
        if (!strstr(err.detail, bad[i].detail)) fail_msg("line %zu: detail \"%s\"", i, err.detail);
        if (strcmp(err.where, bad[i].where)) fail_msg("line %zu: where \"%s\", want %s", i, err.where, bad[i].where);
        assert_null(m->topic);
    }
    cf_msg_destroy(m);
}

/* deterministic pseudo-random messages, binary included */
static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)rng;
}
static void rnd_bytes(char *b, size_t n, bool text) {
    for (size_t i = 0; i < n; i++) b[i] = text ? (char)(0x20 + rnd() % 95) : (char)rnd();
}

static void test_round_trip_random(void **state) {
    (void)state;
    cf_msg *m = cf_msg_new(), *back = cf_msg_new();
    char buf[300];
    for (int it = 0; it < 2000; it++) {
        cf_msg_clear(m);
        bool text = rnd() % 2;
        size_t n = rnd() % 40;
        rnd_bytes(buf, n, true);
        buf[n] = 0;
        cf_msg_set_topic(m, buf);
        m->partition = (int32_t)(rnd() % 100) - 1;
        m->offset = (int64_t)rnd() * 1000 - 1;
        m->ts_type = (cf_ts_type)(rnd() % 3);
        m->timestamp = m->ts_type ? (int64_t)rnd() * 7 : 0;
        if (rnd() % 4) {
            n = rnd() % 200;
            rnd_bytes(buf, n, text);
            cf_msg_set_key(m, buf, n);
        }
        if (rnd() % 4) {
            n = rnd() % 300;
            rnd_bytes(buf, n, text);
            cf_msg_set_value(m, buf, n);
        }
        for (int h = rnd() % 4; h > 0; h--) {
            n = rnd() % 10;
            rnd_bytes(buf, n, true);
            buf[n] = 0;
            char val[20];
            size_t vn = rnd() % 20;
            rnd_bytes(val, vn, text);
            cf_msg_add_header(m, buf, rnd() % 5 ? val : NULL, vn);
        }
        char *line = fmt(m);
        assert_non_null(strchr(line, '\n'));
        assert_true(strchr(line, '\n') == line + strlen(line) - 1); /* one line */
        cf_err err;
        if (cf_recordfile_parse(line, strlen(line), back, &err) != CF_OK)
            fail_msg("round trip %d: %s (%s) in %s", it, err.detail, err.where, line);
        assert_msg_equal(m, back);
        free(line);
    }
    cf_msg_destroy(m);
    cf_msg_destroy(back);
}

/* Strings are scanned 16 bytes at a time: a raw control byte, an escape or
 * the closing quote at every position of a block, and runs longer than a
 * block, give the same result and the same error columns as byte by byte. */
static void test_string_blocks(void **state) {
    (void)state;
    cf_msg *m = cf_msg_new(), *back = cf_msg_new();
    char line[256], want[128];
    cf_err err;
    for (int pos = 0; pos < 48; pos++) {
        /* a raw control byte at pos: refused, column of that byte */
        memset(want, 'a', 60);
        want[pos] = '\x01';
        snprintf(line, sizeof line, "{\"payload\":\"%.60s\"}", want);
        assert_int_equal(cf_recordfile_parse(line, strlen(line), m, &err), CF_ERR_CORRUPT);
        char col[32];
        snprintf(col, sizeof col, "column %d", 13 + pos);
        assert_string_equal(err.where, col);
        assert_non_null(strstr(err.detail, "raw control character"));
        /* every escape kind at pos, in a 60-byte string */
        static const char *const esc[] = {"\\\"", "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\ud83d\\ude00"};
        static const char *const raw[] = {"\"", "\\", "/", "\n", "\t", "\xc3\xa9", "\xf0\x9f\x98\x80"};
        for (size_t e = 0; e < sizeof esc / sizeof *esc; e++) {
            snprintf(line, sizeof line, "{\"payload\":\"%.*s%s%.*s\"}", pos, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                     esc[e], 60 - pos, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
            assert_int_equal(cf_recordfile_parse(line, strlen(line), back, &err), CF_OK);
            snprintf(want, sizeof want, "%.*s%s%.*s", pos, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", raw[e],
                     60 - pos, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
            assert_int_equal(back->value_len, strlen(want));
            assert_memory_equal(back->value, want, strlen(want));
        }
        /* the closing quote at pos, then the rest of the object */
        snprintf(line, sizeof line, "{\"payload\":\"%.*s\",\"key\":\"k\"}", pos,
                 "dddddddddddddddddddddddddddddddddddddddddddddddddddd");
        assert_int_equal(cf_recordfile_parse(line, strlen(line), back, &err), CF_OK);
        assert_int_equal(back->value_len, (size_t)pos);
        assert_string_equal(back->key, "k");
        /* unterminated after pos bytes: the column of the opening quote */
        snprintf(line, sizeof line, "{\"payload\":\"%.*s", pos, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
        assert_int_equal(cf_recordfile_parse(line, strlen(line), m, &err), CF_ERR_CORRUPT);
        assert_string_equal(err.where, "column 12");
    }
    /* round trip of text with control bytes and multi-byte UTF-8 */
    static const char *const parts[] = {"x", "\"", "\\", "\n", "\x01", "\x1f", "\xc3\xa9", "\xe2\x82\xac", "abcdefghijklmnopq", " "};
    char buf[2048];
    for (int it = 0; it < 500; it++) {
        size_t n = 0;
        for (int k = (int)(rnd() % 120); k > 0; k--) {
            const char *p = parts[rnd() % (sizeof parts / sizeof *parts)];
            memcpy(buf + n, p, strlen(p));
            n += strlen(p);
        }
        cf_msg_clear(m);
        cf_msg_set_value(m, buf, n);
        char *l = fmt(m);
        if (cf_recordfile_parse(l, strlen(l), back, &err) != CF_OK) fail_msg("%s: %s", l, err.detail);
        assert_msg_equal(m, back);
        free(l);
    }
    cf_msg_destroy(m);
    cf_msg_destroy(back);
}

static void test_reader_writer_file(void **state) {
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/cf_test_recordfile_%d.jsonl", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    cf_recordfile_writer *w;
    cf_err err;
    assert_int_equal(cf_recordfile_writer_open(path, false, &w, &err), CF_OK);
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "t");
    for (int i = 0; i < 3; i++) {
        m->partition = 0;
        m->offset = i;
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        cf_msg_set_value(m, v, strlen(v));
        assert_int_equal(cf_recordfile_write(w, m, &err), CF_OK);
    }
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    /* append a blank line, a bad line, a good line without final newline */
    FILE *f = fopen(path, "ab");
    fputs("\n{\"topic\":\"t\",\"partition\":0,\"offset\":x}\n{\"payload\":\"last\"}", f);
    fclose(f);

    cf_recordfile_reader *r;
    assert_int_equal(cf_recordfile_reader_open(path, &r, &err), CF_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cf_recordfile_read(r, m, &err), CF_OK);
        assert_int_equal(m->offset, i);
        assert_int_equal(cf_recordfile_reader_line(r), (uint64_t)i + 1);
    }
    uint64_t first_len = 0;
    {
        cf_buf b = CF_BUF_INIT;
        cf_recordfile_format(m, &b);
        first_len = b.len; /* all three lines have the same length */
        cf_buf_free(&b);
    }
    assert_int_equal(cf_recordfile_read(r, m, &err), CF_ERR_CORRUPT);
    assert_int_equal(cf_recordfile_reader_line(r), 5); /* the blank line 4 was skipped */
    assert_int_equal(cf_recordfile_reader_offset(r), 3 * first_len + 1);
    char want[400];
    snprintf(want, sizeof want, "%s:5:37 (byte offset %llu)", path, (unsigned long long)(3 * first_len + 1 + 36));
    assert_string_equal(err.where, want);
    /* the reader goes on after a bad line */
    assert_int_equal(cf_recordfile_read(r, m, &err), CF_OK);
    assert_memory_equal(m->value, "last", 4);
    assert_int_equal(cf_recordfile_read(r, m, &err), CF_ERR_EOF);
    assert_int_equal(cf_recordfile_read(r, m, &err), CF_ERR_EOF);
    cf_recordfile_reader_close(r);

    /* too long lines are rejected and skipped */
    f = fopen(path, "wb");
    fputs("{\"payload\":\"0123456789012345678901234567890123456789\"}\n{\"payload\":\"ok\"}\n", f);
    fclose(f);
    assert_int_equal(cf_recordfile_reader_open(path, &r, &err), CF_OK);
    cf_recordfile_reader_set_max_line(r, 30);
    assert_int_equal(cf_recordfile_read(r, m, &err), CF_ERR_CORRUPT);
    assert_non_null(strstr(err.message, "too long"));
    assert_int_equal(cf_recordfile_read(r, m, &err), CF_OK);
    assert_memory_equal(m->value, "ok", 2);
    cf_recordfile_reader_close(r);
    unlink(path);
    assert_int_equal(cf_recordfile_reader_open(path, &r, &err), CF_ERR_IO);
    assert_non_null(strstr(err.where, path));
    cf_msg_destroy(m);
}

/* Lines longer than the 64 KiB read chunk, many of them. */
static void test_reader_long_lines(void **state) {
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    cf_msg *m = cf_msg_new();
    size_t n = 200000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++) big[i] = (char)('a' + i % 26);
    cf_recordfile_writer *w = cf_recordfile_writer_new(f, "tmp", false);
    cf_err err;
    for (int i = 0; i < 20; i++) {
        cf_msg_set_value(m, big, n - (size_t)i);
        assert_int_equal(cf_recordfile_write(w, m, &err), CF_OK);
    }
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    rewind(f);
    cf_recordfile_reader *r = cf_recordfile_reader_new(f, "tmp", true);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(cf_recordfile_read(r, m, &err), CF_OK);
        assert_int_equal(m->value_len, n - (size_t)i);
        assert_memory_equal(m->value, big, m->value_len);
    }
    assert_int_equal(cf_recordfile_read(r, m, &err), CF_ERR_EOF);
    cf_recordfile_reader_close(r);
    free(big);
    cf_msg_destroy(m);
}

/* ---- going on with a record file of earlier runs (cf_recordfile_writer_open_resume) ---- */

static void tmp_path(char *path, size_t cap, const char *tag) {
    snprintf(path, cap, "%s/cf_test_resume_%s_%d.jsonl", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag,
             (int)getpid());
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 16);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

static void spit(const char *path, const char *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

static void write_n(cf_recordfile_writer *w, int from, int n) {
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "t");
    cf_err err;
    for (int i = from; i < from + n; i++) {
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        cf_msg_set_value(m, v, strlen(v));
        assert_int_equal(cf_recordfile_write(w, m, &err), CF_OK);
    }
    cf_msg_destroy(m);
}

/* every line of the file parses; returns how many there are */
static int count_records(const char *path) {
    cf_recordfile_reader *r;
    cf_err err;
    assert_int_equal(cf_recordfile_reader_open(path, &r, &err), CF_OK);
    cf_msg *m = cf_msg_new();
    int n = 0;
    cf_code rc;
    while ((rc = cf_recordfile_read(r, m, &err)) == CF_OK) {
        char v[16];
        snprintf(v, sizeof v, "v%d", n);
        assert_int_equal(m->value_len, strlen(v));
        assert_memory_equal(m->value, v, m->value_len);
        n++;
    }
    assert_int_equal(rc, CF_ERR_EOF);
    cf_msg_destroy(m);
    cf_recordfile_reader_close(r);
    return n;
}

/* a restart appends to what the earlier run wrote: nothing is lost */
static void test_resume_appends(void **state) {
    (void)state;
    char path[256];
    tmp_path(path, sizeof path, "append");
    unlink(path);
    cf_recordfile_writer *w;
    cf_recordfile_resume ri;
    cf_err err;
    assert_int_equal(cf_recordfile_writer_open_resume(path, &w, &ri, &err), CF_OK);
    assert_int_equal(ri.size, 0);
    assert_int_equal(ri.cut_bytes, 0);
    write_n(w, 0, 3);
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    size_t len;
    free(slurp(path, &len));
    assert_int_equal(cf_recordfile_writer_open_resume(path, &w, &ri, &err), CF_OK);
    assert_int_equal(ri.size, len);
    assert_int_equal(ri.cut_bytes, 0);
    write_n(w, 3, 2);
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    assert_int_equal(count_records(path), 5);
    unlink(path);
}

/* a kill -9 leaves a torn last line: it is cut, the new lines follow the
 * last whole record */
static void test_resume_cuts_torn_line(void **state) {
    (void)state;
    char path[256];
    tmp_path(path, sizeof path, "torn");
    cf_recordfile_writer *w;
    cf_recordfile_resume ri;
    cf_err err;
    assert_int_equal(cf_recordfile_writer_open(path, false, &w, &err), CF_OK);
    write_n(w, 0, 2);
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    size_t whole;
    char *kept = slurp(path, &whole);
    FILE *f = fopen(path, "ab");
    fputs("{\"topic\":\"t\",\"partition\":-1,\"offs", f);
    fclose(f);
    assert_int_equal(cf_recordfile_writer_open_resume(path, &w, &ri, &err), CF_OK);
    assert_int_equal(ri.size, whole);
    assert_int_equal(ri.cut_offset, whole);
    assert_int_equal(ri.cut_bytes, strlen("{\"topic\":\"t\",\"partition\":-1,\"offs"));
    write_n(w, 2, 1);
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    assert_int_equal(count_records(path), 3);
    size_t len;
    char *now = slurp(path, &len);
    assert_memory_equal(now, kept, whole); /* the earlier lines byte for byte */
    free(now), free(kept);

    /* only a torn line (the first write was cut): cut to nothing */
    spit(path, "{\"topic\":\"t\",\"par", 17);
    assert_int_equal(cf_recordfile_writer_open_resume(path, &w, &ri, &err), CF_OK);
    assert_int_equal(ri.size, 0);
    assert_int_equal(ri.cut_bytes, 17);
    write_n(w, 0, 1);
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    assert_int_equal(count_records(path), 1);

    /* NUL bytes after the last line (a power loss) are cut too */
    size_t l1;
    char *one = slurp(path, &l1);
    char buf[256];
    memcpy(buf, one, l1);
    memset(buf + l1, 0, 9);
    spit(path, buf, l1 + 9);
    free(one);
    assert_int_equal(cf_recordfile_writer_open_resume(path, &w, &ri, &err), CF_OK);
    assert_int_equal(ri.cut_bytes, 9);
    write_n(w, 1, 1);
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    assert_int_equal(count_records(path), 2);

    /* a whole record that only lacks its newline (kcat's last line) is kept */
    spit(path, "{\"payload\":\"v0\"}", 16);
    assert_int_equal(cf_recordfile_writer_open_resume(path, &w, &ri, &err), CF_OK);
    assert_int_equal(ri.cut_bytes, 0);
    assert_int_equal(ri.size, 17);
    write_n(w, 1, 1);
    assert_int_equal(cf_recordfile_writer_close(w, &err), CF_OK);
    assert_int_equal(count_records(path), 2);
    unlink(path);
}

/* a file that is not a record file is refused and left as it was */
static void test_resume_refuses_other_files(void **state) {
    (void)state;
    char path[256];
    tmp_path(path, sizeof path, "refuse");
    const char *cases[] = {
        "id,name\n1,a\n",                                  /* a CSV file */
        "{\"payload\":\"v0\"}\nnot a record at all",       /* a tail that is no record */
        "{\"payload\":\"v0\"}\n{\"topic\":\"t\",\"bad\":1}\n", /* a damaged last line */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        spit(path, cases[i], strlen(cases[i]));
        cf_recordfile_writer *w = NULL;
        cf_err err;
        assert_int_equal(cf_recordfile_writer_open_resume(path, &w, NULL, &err), CF_ERR_CORRUPT);
        assert_null(w);
        assert_non_null(strstr(err.message, "refusing to append"));
        assert_non_null(strstr(err.where, path));
        assert_non_null(strstr(err.where, "byte offset"));
        assert_true(err.hint[0] != 0);
        size_t len;
        char *now = slurp(path, &len);
        assert_int_equal(len, strlen(cases[i]));
        assert_memory_equal(now, cases[i], len);
        free(now);
    }
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_kcat_shape),
        cmocka_unit_test(test_non_utf8_base64),
        cmocka_unit_test(test_reads_kcat_raw_bytes),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_round_trip_random),
        cmocka_unit_test(test_string_blocks),
        cmocka_unit_test(test_reader_writer_file),
        cmocka_unit_test(test_reader_long_lines),
        cmocka_unit_test(test_resume_appends),
        cmocka_unit_test(test_resume_cuts_torn_line),
        cmocka_unit_test(test_resume_refuses_other_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
