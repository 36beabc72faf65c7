/*
 * extract.c - streaming extractors: bytes, CSV (RFC 4180), JSON lines (see
 * include/cdcflow/source_extract.h); Avro container files are in
 * avro_extract.c, reached from here.
 *
 * One window buffer slides over the stream: records are parsed in place and
 * the buffer only grows when a single record is larger than it (bounded by
 * CF_EXTRACT_MAX_RECORD), so memory does not depend on the object size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/convert.h"
#include "cdcflow/recordfile.h"
#include "cdcflow/source_extract.h"

/* avro_extract.c (internal to this module; it borrows the reader) */
typedef struct cf_avro_extract cf_avro_extract;
cf_code cf_avro_extract_new(cf_reader *r, uint64_t start, uint64_t start_index, uint64_t start_line,
                            cf_avro_extract **out, cf_err *err);
cf_code cf_avro_extract_next(cf_avro_extract *a, cf_schema **schema, cf_value **value, cf_extract_pos *pos,
                             cf_err *err);
void cf_avro_extract_destroy(cf_avro_extract *a);

#define WINDOW_INIT (256 * 1024)
#define CF_EXTRACT_MAX_RECORD (64u * 1024 * 1024)

struct cf_extractor {
    cf_input_format fmt;
    cf_reader *r;
    /* window: buf[off..len) is unparsed data starting at stream offset base+off */
    char *buf;
    size_t cap, off, len;
    uint64_t base;
    bool eof;
    uint64_t index, line;
    /* bytes */
    size_t chunk;
    /* csv */
    char **header;
    size_t n_header;
    cf_schema *row_schema; /* for the current width */
    size_t row_width;
    cf_buf field;          /* scratch for unescaped (quoted) field text */
    const char **fptr;     /* field text: into the window, or into `field` */
    size_t *fstart, *flen; /* quoted fields: offset into `field` until resolved */
    bool *fquoted;
    size_t fcap;
    /* jsonl */
    cf_converter *json;
    /* envelope */
    cf_msg *msg;
    /* avro */
    cf_avro_extract *avro;
};

cf_code cf_input_format_parse(const char *s, cf_input_format *out, cf_err *err) {
    static const char *names[] = {"bytes", "csv", "jsonl", "envelope", "avro"};
    for (int i = 0; i < 5; i++)
        if (s && strcasecmp(s, names[i]) == 0) return *out = (cf_input_format)i, CF_OK;
    cf_err_set(err, CF_ERR_CONFIG, "invalid input.format \"%s\"", s ? s : "");
    cf_err_hint(err, "Use one of: bytes, csv, jsonl, envelope, avro.");
    return CF_ERR_CONFIG;
}

/* Read more data into the window; keeps buf[off..len). Sets eof at the end. */
static cf_code refill(cf_extractor *x, cf_err *err) {
    if (x->eof) return CF_OK;
    if (x->off > 0) {
        memmove(x->buf, x->buf + x->off, x->len - x->off);
        x->base += x->off;
        x->len -= x->off;
        x->off = 0;
    }
    if (x->len == x->cap) {
        if (x->cap >= CF_EXTRACT_MAX_RECORD) {
            cf_err_set(err, CF_ERR_INVALID, "record in \"%s\" is larger than %u bytes", cf_reader_name(x->r),
                       CF_EXTRACT_MAX_RECORD);
            cf_err_where(err, "%s: line %llu, byte %llu", cf_reader_name(x->r), (unsigned long long)x->line,
                         (unsigned long long)x->base);
            cf_err_hint(err, "Check input.format; a binary object read as lines has no line ends.");
            return CF_ERR_INVALID;
        }
        x->cap *= 2;
        x->buf = cf_xrealloc(x->buf, x->cap + 1);
    }
    size_t n;
    cf_code rc = cf_reader_read(x->r, x->buf + x->len, x->cap - x->len, &n, err);
    if (rc) return rc;
    if (n == 0) x->eof = true;
    x->len += n;
    x->buf[x->len] = '\0';
    return CF_OK;
}

/* ---------------- CSV ---------------- */

typedef enum { CSV_OK, CSV_MORE, CSV_BAD } csv_status;

/* Parse one record from p[0..n). On CSV_OK sets *used (bytes incl. the line
 * end) and *lines (line ends inside). `final` = no more data will come. */
static csv_status csv_parse(cf_extractor *x, const char *p, size_t n, bool final, size_t *used, size_t *lines,
                            const char **why) {
    cf_buf_reset(&x->field);
    size_t nf = 0, i = 0;
    *lines = 0;
    for (;;) {
        if (nf == x->fcap) {
            x->fcap = x->fcap ? x->fcap * 2 : 16;
            x->fstart = cf_xrealloc(x->fstart, x->fcap * sizeof(size_t));
            x->flen = cf_xrealloc(x->flen, x->fcap * sizeof(size_t));
            x->fptr = cf_xrealloc(x->fptr, x->fcap * sizeof(char *));
            x->fquoted = cf_xrealloc(x->fquoted, x->fcap * sizeof(bool));
        }
        size_t start = x->field.len;
        x->fquoted[nf] = false;
        if (i < n && p[i] == '"') {
            i++;
            for (;;) {
                const char *q = memchr(p + i, '"', n - i);
                if (!q) {
                    if (!final) return CSV_MORE;
                    *why = "a quoted field is not closed before the end of the object";
                    return CSV_BAD;
                }
                size_t k = (size_t)(q - (p + i));
                for (size_t j = 0; j < k; j++)
                    if (p[i + j] == '\n') (*lines)++;
                cf_buf_append(&x->field, p + i, k);
                i += k + 1;
                if (i < n && p[i] == '"') { /* "" is a quote */
                    cf_buf_append_byte(&x->field, '"');
                    i++;
                    continue;
                }
                if (i == n && !final) return CSV_MORE;
                break;
            }
            if (i < n && p[i] != ',' && p[i] != '\n' && p[i] != '\r') {
                *why = "invalid character between a closing quote and the next delimiter";
                return CSV_BAD;
            }
            x->fquoted[nf] = true;
            x->fstart[nf] = start;
            x->flen[nf] = x->field.len - start;
        } else {
            /* unquoted: the text is used where it is, no copy */
            size_t j = i;
            while (j < n && p[j] != ',' && p[j] != '\n' && p[j] != '\r') j++;
            if (j == n && !final) return CSV_MORE;
            x->fptr[nf] = p + i;
            x->flen[nf] = j - i;
            i = j;
        }
        nf++;
        if (i < n && p[i] == ',') {
            i++;
            continue;
        }
        /* end of record: \r\n, \n, \r or end of data */
        if (i < n && p[i] == '\r') {
            if (i + 1 == n && !final) return CSV_MORE;
            i++;
            if (i < n && p[i] == '\n') i++;
            (*lines)++;
        } else if (i < n && p[i] == '\n') {
            i++;
            (*lines)++;
        }
        *used = i;
        x->row_width = nf;
        for (size_t k = 0; k < nf; k++) /* the scratch buffer no longer moves */
            if (x->fquoted[k]) x->fptr[k] = x->field.data + x->fstart[k];
        return CSV_OK;
    }
}

static cf_schema *csv_schema(cf_extractor *x, size_t width) {
    if (x->row_schema && x->row_schema->n_fields == width) return cf_schema_ref(x->row_schema);
    cf_schema_unref(x->row_schema);
    cf_schema *s = cf_schema_new_struct();
    for (size_t i = 0; i < width; i++) {
        char name[32];
        const char *fname = name;
        if (i < x->n_header && x->header[i][0])
            fname = x->header[i];
        else
            snprintf(name, sizeof name, "field%zu", i);
        /* A duplicate name (two equal headers, or a header that equals a
         * generated field<N>): keep the data, name the column by index, and
         * add a suffix until the name is unique, so the schema always has
         * exactly `width` fields. */
        for (unsigned k = 0; cf_schema_field(s, fname); k++) {
            if (k == 0)
                snprintf(name, sizeof name, "field%zu", i);
            else
                snprintf(name, sizeof name, "field%zu_%u", i, k);
            fname = name;
        }
        cf_schema_add_field(s, fname, cf_schema_primitive(CF_STRING, true), NULL);
    }
    x->row_schema = s;
    return cf_schema_ref(s);
}

/* Parse the next raw CSV record into x->field / fstart / flen. */
static cf_code csv_next_raw(cf_extractor *x, cf_extract_pos *pos, cf_err *err) {
    for (;;) {
        if (x->off == x->len && x->eof) return CF_ERR_EOF;
        size_t used = 0, lines = 0;
        const char *why = NULL;
        csv_status st = csv_parse(x, x->buf + x->off, x->len - x->off, x->eof, &used, &lines, &why);
        if (st == CSV_MORE) {
            cf_code rc = refill(x, err);
            if (rc) return rc;
            continue;
        }
        pos->index = x->index;
        pos->line = x->line;
        pos->start = x->base + x->off;
        if (st == CSV_BAD) {
            /* skip to the end of this physical line so the next call continues */
            const char *nl = memchr(x->buf + x->off, '\n', x->len - x->off);
            size_t skip = nl ? (size_t)(nl - (x->buf + x->off)) + 1 : x->len - x->off;
            x->off += skip;
            pos->end = x->base + x->off;
            x->line++;
            x->index++;
            pos->end_line = x->line;
            cf_err_set(err, CF_ERR_INVALID, "malformed CSV record in \"%s\": %s", cf_reader_name(x->r), why);
            cf_err_where(err, "%s: line %llu, byte %llu", cf_reader_name(x->r), (unsigned long long)pos->line,
                         (unsigned long long)pos->start);
            cf_err_hint(err, "Fields containing commas, quotes or line breaks must be quoted, quotes doubled (RFC 4180).");
            return CF_ERR_INVALID;
        }
        x->off += used;
        x->line += lines;
        pos->end = x->base + x->off;
        pos->end_line = x->line;
        return CF_OK;
    }
}

/* ---------------- construction ---------------- */

static bool opt_bool(const cf_props *o, const char *k, bool dflt) {
    const char *v = cf_props_get(o, k);
    if (!v) return dflt;
    return strcasecmp(v, "true") == 0;
}

cf_code cf_extractor_new(cf_input_format f, const cf_props *opts, cf_reader *r, uint64_t start, uint64_t start_index,
                         uint64_t start_line, cf_extractor **out, cf_err *err) {
    cf_extractor *x = cf_xcalloc(1, sizeof *x);
    x->fmt = f;
    x->r = r;
    if (f == CF_FORMAT_AVRO) {
        /* the header is read by the first next(), so that a bad file is a
         * reported data error of that object (positions: see the header) */
        cf_code rc = cf_avro_extract_new(r, start, start_index, start_line, &x->avro, err);
        if (rc) {
            cf_extractor_destroy(x);
            return rc;
        }
        *out = x;
        return CF_OK;
    }
    x->cap = WINDOW_INIT;
    x->buf = cf_xmalloc(x->cap + 1);
    x->line = 1;
    cf_code rc = CF_OK;
    if (f == CF_FORMAT_BYTES) {
        const char *b = cf_props_get(opts, "extractor.buffer");
        long v = b ? strtol(b, NULL, 10) : 4096;
        if (v < 1 || v > (long)CF_EXTRACT_MAX_RECORD) {
            cf_err_set(err, CF_ERR_CONFIG, "invalid extractor.buffer \"%s\"", b);
            cf_err_hint(err, "Use a chunk size between 1 and %u bytes.", CF_EXTRACT_MAX_RECORD);
            rc = CF_ERR_CONFIG;
            goto fail;
        }
        x->chunk = (size_t)v;
    } else if (f == CF_FORMAT_ENVELOPE) {
        x->msg = cf_msg_new();
    } else if (f == CF_FORMAT_JSONL) {
        cf_props *jp = cf_props_new();
        cf_props_set(jp, "schemas.enable", "false");
        rc = cf_converter_new("json", jp, false, &x->json, err);
        cf_props_destroy(jp);
        if (rc) goto fail;
    } else if (f == CF_FORMAT_CSV) {
        const char *names = cf_props_get(opts, "extractor.csv.headers");
        bool from_file = opt_bool(opts, "extractor.csv.headers.enabled", names == NULL);
        if (names && *names) {
            /* comma-separated list, items trimmed */
            const char *p = names;
            while (*p) {
                const char *e = strchr(p, ',');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                const char *a = p, *b = p + len;
                while (a < b && (*a == ' ' || *a == '\t')) a++;
                while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
                x->header = cf_xrealloc(x->header, (x->n_header + 1) * sizeof(char *));
                x->header[x->n_header++] = cf_xstrndup(a, (size_t)(b - a));
                p = e ? e + 1 : p + len;
            }
        }
        if (from_file) {
            /* the header row is always the first record, also on resume */
            cf_extract_pos hp;
            rc = csv_next_raw(x, &hp, err);
            if (rc == CF_ERR_EOF) {
                rc = CF_OK; /* empty object: no records */
            } else if (rc) {
                goto fail;
            } else if (!names) {
                x->n_header = x->row_width;
                x->header = cf_xcalloc(x->n_header ? x->n_header : 1, sizeof(char *));
                for (size_t i = 0; i < x->n_header; i++)
                    x->header[i] = cf_xstrndup(x->fptr[i], x->flen[i]);
            }
            if (start_line == 0) start_line = x->line, start_index = 0;
        }
    }
    if (start > 0) {
        uint64_t have = x->base + x->len; /* bytes already read into the window */
        if (start <= have && start >= x->base + x->off) {
            x->off = (size_t)(start - x->base);
        } else if (start > have) {
            rc = cf_reader_skip_to(x->r, start, err);
            if (rc) goto fail;
            x->base = start;
            x->off = x->len = 0;
            x->eof = false;
        } else {
            cf_err_set(err, CF_ERR_INVALID, "resume position %llu is inside the CSV header of \"%s\"",
                       (unsigned long long)start, cf_reader_name(r));
            rc = CF_ERR_INVALID;
            goto fail;
        }
        x->index = start_index;
        x->line = start_line ? start_line : 1;
    } else if (f == CF_FORMAT_CSV && x->line > 1) {
        x->index = 0; /* the header row is not a record */
    }
    *out = x;
    return CF_OK;
fail:
    cf_extractor_destroy(x);
    return rc;
}

void cf_extractor_destroy(cf_extractor *x) {
    if (!x) return;
    cf_avro_extract_destroy(x->avro);
    cf_reader_close(x->r);
    free(x->buf);
    for (size_t i = 0; i < x->n_header; i++) free(x->header[i]);
    free(x->header);
    cf_schema_unref(x->row_schema);
    cf_buf_free(&x->field);
    free(x->fstart);
    free(x->flen);
    free(x->fptr);
    free(x->fquoted);
    cf_converter_destroy(x->json);
    cf_msg_destroy(x->msg);
    free(x);
}

/* ---------------- next ---------------- */

static cf_code next_bytes(cf_extractor *x, cf_schema **schema, cf_value **value, cf_extract_pos *pos, cf_err *err) {
    while (x->len - x->off < x->chunk && !x->eof) {
        cf_code rc = refill(x, err);
        if (rc) return rc;
    }
    size_t n = x->len - x->off;
    if (n == 0) return CF_ERR_EOF;
    if (n > x->chunk) n = x->chunk;
    pos->index = x->index++;
    pos->line = 0;
    pos->end_line = 0;
    pos->start = x->base + x->off;
    *value = cf_value_bytes(x->buf + x->off, n);
    *schema = cf_schema_primitive(CF_BYTES, true);
    x->off += n;
    pos->end = x->base + x->off;
    return CF_OK;
}

static cf_code next_jsonl(cf_extractor *x, cf_schema **schema, cf_value **value, cf_extract_pos *pos, cf_err *err) {
    for (;;) {
        char *nl = memchr(x->buf + x->off, '\n', x->len - x->off);
        if (!nl && !x->eof) {
            cf_code rc = refill(x, err);
            if (rc) return rc;
            continue;
        }
        if (!nl && x->off == x->len) return CF_ERR_EOF;
        size_t linelen = nl ? (size_t)(nl - (x->buf + x->off)) : x->len - x->off;
        const char *line = x->buf + x->off;
        uint64_t start = x->base + x->off, lineno = x->line;
        x->off += linelen + (nl ? 1 : 0);
        x->line++;
        size_t l = linelen;
        if (l && line[l - 1] == '\r') l--;
        size_t k = 0;
        while (k < l && (line[k] == ' ' || line[k] == '\t')) k++;
        if (k == l) continue; /* blank lines are skipped, as Aiven's JSONL extractor */
        pos->index = x->index++;
        pos->line = lineno;
        pos->start = start;
        pos->end = x->base + x->off;
        pos->end_line = x->line;
        cf_code rc;
        if (x->fmt == CF_FORMAT_ENVELOPE) {
            rc = cf_recordfile_parse(line, l, x->msg, err);
            if (!rc) {
                *schema = cf_schema_primitive(CF_BYTES, true);
                *value = x->msg->value ? cf_value_bytes(x->msg->value, x->msg->value_len) : NULL;
            }
        } else {
            rc = cf_converter_to_connect(x->json, NULL, line, l, schema, value, err);
        }
        if (rc) {
            if (err) {
                char msg[sizeof err->message];
                snprintf(msg, sizeof msg, "invalid %s line in \"%s\": %s",
                         x->fmt == CF_FORMAT_ENVELOPE ? "record file" : "JSON", cf_reader_name(x->r), err->message);
                memcpy(err->message, msg, sizeof msg);
            }
            cf_err_where(err, "%s: line %llu, byte %llu", cf_reader_name(x->r), (unsigned long long)lineno,
                         (unsigned long long)start);
            cf_err_hint(err, "Each line must be one JSON value (JSON Lines); fix or remove the line.");
            return CF_ERR_INVALID;
        }
        return CF_OK;
    }
}

static cf_code next_csv(cf_extractor *x, cf_schema **schema, cf_value **value, cf_extract_pos *pos, cf_err *err) {
    for (;;) {
        cf_code rc = csv_next_raw(x, pos, err);
        if (rc) return rc;
        /* a record that is one empty field on an empty line is a blank line */
        if (x->row_width == 1 && x->flen[0] == 0) continue;
        x->index++;
        size_t width = x->row_width > x->n_header ? x->row_width : x->n_header;
        cf_schema *s = csv_schema(x, width);
        cf_value *v = cf_value_struct(cf_schema_ref(s));
        for (size_t i = 0; i < x->row_width; i++)
            cf_value_struct_set_index(v, i, cf_value_string_n(x->fptr[i], x->flen[i]));
        *schema = s;
        *value = v;
        return CF_OK;
    }
}

cf_code cf_extractor_next(cf_extractor *x, cf_schema **schema, cf_value **value, cf_extract_pos *pos, cf_err *err) {
    *schema = NULL;
    *value = NULL;
    cf_extract_pos dummy;
    if (!pos) pos = &dummy;
    switch (x->fmt) {
    case CF_FORMAT_BYTES: return next_bytes(x, schema, value, pos, err);
    case CF_FORMAT_JSONL:
    case CF_FORMAT_ENVELOPE: return next_jsonl(x, schema, value, pos, err);
    case CF_FORMAT_CSV: return next_csv(x, schema, value, pos, err);
    case CF_FORMAT_AVRO: return cf_avro_extract_next(x->avro, schema, value, pos, err);
    }
    return cf_err_set(err, CF_ERR_INTERNAL, "unknown input format %d", (int)x->fmt);
}

const cf_msg *cf_extractor_envelope(const cf_extractor *x) { return x->fmt == CF_FORMAT_ENVELOPE ? x->msg : NULL; }
