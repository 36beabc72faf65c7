/*
 * fuzz_recordfile.c - libFuzzer target for the record file reader.
 *
 * The input is a whole file: it goes through the streaming reader line by
 * line (errors must be reported, never crash, and the reader must go on).
 * Every line that parses must survive a round trip: format it, parse it
 * again, and get the same message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/recordfile.h"

static void check_same(const cf_msg *a, const cf_msg *b) {
    int same = ((a->topic ? strcmp(a->topic, b->topic ? b->topic : "") : (b->topic && *b->topic)) == 0) &&
               a->partition == b->partition && a->offset == b->offset && a->ts_type == b->ts_type &&
               (a->ts_type == CF_TS_NONE || a->timestamp == b->timestamp) && (!a->key == !b->key) &&
               (!a->key || (a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0)) &&
               (!a->value == !b->value) &&
               (!a->value || (a->value_len == b->value_len && memcmp(a->value, b->value, a->value_len) == 0)) &&
               a->n_headers == b->n_headers;
    for (size_t i = 0; same && i < a->n_headers; i++) {
        const cf_msg_header *x = &a->headers[i], *y = &b->headers[i];
        same = strcmp(x->key, y->key) == 0 && !x->value == !y->value &&
               (!x->value || (x->value_len == y->value_len && memcmp(x->value, y->value, x->value_len) == 0));
    }
    if (!same) {
        fprintf(stderr, "round trip changed the message\n");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fmemopen((void *)data, size ? size : 1, "rb");
    if (!f) return 0;
    if (!size) {
        fclose(f);
        return 0;
    }
    cf_recordfile_reader *r = cf_recordfile_reader_new(f, "fuzz", true);
    cf_recordfile_reader_set_max_line(r, 1 << 20);
    cf_msg *m = cf_msg_new(), *back = cf_msg_new();
    cf_buf b = CF_BUF_INIT;
    cf_err err;
    for (int lines = 0; lines < 10000; lines++) {
        cf_code rc = cf_recordfile_read(r, m, &err);
        if (rc == CF_ERR_EOF || rc == CF_ERR_IO) break;
        if (rc != CF_OK) {
            if (!err.message[0] || !err.where[0]) abort(); /* errors must say what and where */
            continue;
        }
        cf_buf_reset(&b);
        cf_recordfile_format(m, &b);
        if (cf_recordfile_parse(b.data, b.len, back, &err) != CF_OK) {
            fprintf(stderr, "our own line did not parse: %s (%s)\n%s", err.detail, err.where, b.data);
            abort();
        }
        check_same(m, back);
    }
    cf_buf_free(&b);
    cf_msg_destroy(m);
    cf_msg_destroy(back);
    cf_recordfile_reader_close(r);
    return 0;
}
