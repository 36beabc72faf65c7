/*
 * bench_recordfile.c - record file (kcat -J lines) throughput, MB/s and
 * messages/s, for writing (format) and reading (streaming reader, parse),
 * against jansson on the same lines in the same run.
 *
 *   format:   cf_recordfile_format of a typical CDC message (topic, partition,
 *             offset, timestamp, 2 headers, a short key, a ~600-byte JSON
 *             Debezium-style payload that needs escaping)
 *   baseline: jansson building the same object and json_dumps(JSON_COMPACT)
 *   read:     cf_recordfile_read over an in-memory file of those lines
 *             (fmemopen), i.e. line splitting + parsing + filling a cf_msg
 *   baseline: jansson json_loadb of each line (parsing only, no cf_msg)
 *
 * Usage: bench_recordfile [seconds per measurement, default 2]
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcflow/recordfile.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char payload[] =
    "{\"before\":null,\"after\":{\"id\":1004,\"first_name\":\"Anne\",\"last_name\":\"Kretchmar\","
    "\"email\":\"annek@noanswer.org\",\"note\":\"line one\\nline \\\"two\\\"\"},\"source\":{\"version\":\"2.7.0."
    "Final\",\"connector\":\"postgresql\",\"name\":\"dbserver1\",\"ts_ms\":1700000000000,\"snapshot\":\"false\","
    "\"db\":\"inventory\",\"sequence\":\"[\\\"24023928\\\",\\\"24023928\\\"]\",\"schema\":\"inventory\","
    "\"table\":\"customers\",\"txId\":555,\"lsn\":24023928,\"xmin\":null},\"op\":\"c\",\"ts_ms\":1700000000123,"
    "\"transaction\":null,\"padding\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}";

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    if (secs <= 0) secs = 2.0;
    cf_msg *m = cf_msg_new();
    cf_msg_set_topic(m, "dbserver1.inventory.customers");
    m->partition = 3;
    m->offset = 123456789;
    m->ts_type = CF_TS_CREATE;
    m->timestamp = 1700000000123;
    cf_msg_add_header(m, "__debezium.context.connectorName", "inventory", 9);
    cf_msg_add_header(m, "trace-id", "4bf92f3577b34da6a3ce929d0e0e4736", 32);
    cf_msg_set_key(m, "{\"id\":1004}", 11);
    cf_msg_set_value(m, payload, sizeof payload - 1);

    /* ---- format ---- */
    cf_buf b = CF_BUF_INIT;
    size_t n = 0, bytes = 0;
    double t0 = now(), t;
    do {
        for (int i = 0; i < 1000; i++) {
            cf_buf_reset(&b);
            cf_recordfile_format(m, &b);
            bytes += b.len;
        }
        n += 1000;
    } while ((t = now() - t0) < secs);
    double fmt_rate = n / t, fmt_mb = bytes / t / 1e6;
    size_t line_len = b.len;

    size_t bn = 0;
    t0 = now();
    do {
        for (int i = 0; i < 1000; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "topic", json_string(m->topic));
            json_object_set_new(o, "partition", json_integer(m->partition));
            json_object_set_new(o, "offset", json_integer(m->offset));
            json_object_set_new(o, "tstype", json_string("create"));
            json_object_set_new(o, "ts", json_integer(m->timestamp));
            json_object_set_new(o, "broker", json_integer(-1));
            json_t *h = json_array();
            for (size_t k = 0; k < m->n_headers; k++) {
                json_array_append_new(h, json_string(m->headers[k].key));
                json_array_append_new(h, json_stringn(m->headers[k].value, m->headers[k].value_len));
            }
            json_object_set_new(o, "headers", h);
            json_object_set_new(o, "key", json_stringn(m->key, m->key_len));
            json_object_set_new(o, "payload", json_stringn(m->value, m->value_len));
            char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
            free(s);
            json_decref(o);
        }
        bn += 1000;
    } while ((t = now() - t0) < secs);
    double base_fmt_rate = bn / t;

    /* ---- read: an in-memory file of 10000 lines ---- */
    cf_buf file = CF_BUF_INIT;
    for (int i = 0; i < 10000; i++) cf_recordfile_format(m, &file);
    cf_msg *in = cf_msg_new();
    cf_err err;
    n = 0;
    bytes = 0;
    t0 = now();
    do {
        FILE *f = fmemopen(file.data, file.len, "rb");
        cf_recordfile_reader *r = cf_recordfile_reader_new(f, "mem", true);
        while (cf_recordfile_read(r, in, &err) == CF_OK) n++;
        cf_recordfile_reader_close(r);
        bytes += file.len;
    } while ((t = now() - t0) < secs);
    double read_rate = n / t, read_mb = bytes / t / 1e6;

    bn = 0;
    t0 = now();
    do {
        for (int i = 0; i < 1000; i++) {
            json_error_t je;
            json_t *o = json_loadb(b.data, b.len, 0, &je);
            if (!o) {
                fprintf(stderr, "jansson: %s\n", je.text);
                return 1;
            }
            json_decref(o);
        }
        bn += 1000;
    } while ((t = now() - t0) < secs);
    double base_read_rate = bn / t;

    printf("record file lines of %zu bytes\n", line_len);
    printf("format:  %10.0f msg/s  %7.1f MB/s   jansson build+dump: %10.0f msg/s   ratio %.2fx\n", fmt_rate, fmt_mb,
           base_fmt_rate, fmt_rate / base_fmt_rate);
    printf("read:    %10.0f msg/s  %7.1f MB/s   jansson loadb:      %10.0f msg/s   ratio %.2fx\n", read_rate,
           read_mb, base_read_rate, read_rate / base_read_rate);
    cf_buf_free(&b);
    cf_buf_free(&file);
    cf_msg_destroy(m);
    cf_msg_destroy(in);
    return 0;
}
