/*
 * bq_proto.c - BigQuery table schemas, the Storage Write API writer schema
 * (a proto2 DescriptorProto made at run time) and row encoding, the
 * AppendRowsRequest around the rows and the AppendRowsResponse decoder.
 *
 * Why the encoder writes the wire format itself: see include/cdcflow/
 * bigquery.h (protobuf-c has no run-time messages). The row encoder keeps
 * one precomputed tag per column, so encoding a row is a loop of
 * tag + value writes into one buffer: no allocation per row or cell.
 *
 * Type mapping (BigQuery's supported-data-types page for the Storage Write
 * API, shared/specs/bigquery-cdc.md section 4):
 *   BOOL -> bool, INT64 -> int64, FLOAT64 -> double, BYTES -> bytes,
 *   DATE -> int32 (days since the epoch), TIMESTAMP -> int64 (microseconds),
 *   STRING, NUMERIC, BIGNUMERIC (decimal text), JSON, DATETIME, TIME,
 *   GEOGRAPHY (WKT / GeoJSON), INTERVAL -> string,
 *   RECORD -> a nested message, mode REPEATED -> a repeated field.
 * Every field is proto2 `optional` (or `repeated`): BigQuery checks a
 * REQUIRED column's presence itself, and a DELETE row carries only the key.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bq_pb.h"
#include "cdcflow/bigquery.h"
#include "cdcflow/text.h"

/* ---------------- schema ---------------- */

static const char *const type_names[] = {"STRING", "BYTES",    "INT64",     "FLOAT64",  "BOOL",
                                         "NUMERIC", "BIGNUMERIC", "TIMESTAMP", "DATE",     "TIME",
                                         "DATETIME", "GEOGRAPHY", "JSON",      "INTERVAL", "RECORD"};

const char *cf_bq_type_name(cf_bq_type t) {
    return (unsigned)t < sizeof type_names / sizeof *type_names ? type_names[t] : "?";
}

const char *cf_bq_mode_name(cf_bq_mode m) {
    return m == CF_BQ_REQUIRED ? "REQUIRED" : m == CF_BQ_REPEATED ? "REPEATED" : "NULLABLE";
}

bool cf_bq_type_parse(const char *name, cf_bq_type *out) {
    static const struct {
        const char *n;
        cf_bq_type t;
    } legacy[] = {{"INTEGER", CF_BQ_INT64},    {"FLOAT", CF_BQ_FLOAT64},      {"BOOLEAN", CF_BQ_BOOL},
                  {"STRUCT", CF_BQ_RECORD},    {"BIGDECIMAL", CF_BQ_BIGNUMERIC}};
    for (size_t i = 0; i < sizeof type_names / sizeof *type_names; i++)
        if (strcasecmp(name, type_names[i]) == 0) return *out = (cf_bq_type)i, true;
    for (size_t i = 0; i < sizeof legacy / sizeof *legacy; i++)
        if (strcasecmp(name, legacy[i].n) == 0) return *out = legacy[i].t, true;
    return false;
}

void cf_bq_fields_free(cf_bq_field *f, size_t n) {
    if (!f) return;
    for (size_t i = 0; i < n; i++) {
        free(f[i].name);
        cf_bq_fields_free(f[i].fields, f[i].n_fields);
    }
    free(f);
}

cf_bq_field *cf_bq_fields_clone(const cf_bq_field *f, size_t n) {
    cf_bq_field *c = cf_xcalloc(n ? n : 1, sizeof *c);
    for (size_t i = 0; i < n; i++) {
        c[i] = f[i];
        c[i].name = cf_xstrdup(f[i].name);
        c[i].fields = f[i].n_fields ? cf_bq_fields_clone(f[i].fields, f[i].n_fields) : NULL;
    }
    return c;
}

cf_bq_type cf_bq_type_for_col(cf_col_type t) {
    switch (t) {
    case CF_COL_BOOL: return CF_BQ_BOOL;
    case CF_COL_INT16:
    case CF_COL_INT32:
    case CF_COL_INT64: return CF_BQ_INT64;
    case CF_COL_FLOAT32:
    case CF_COL_FLOAT64: return CF_BQ_FLOAT64;
    case CF_COL_TEXT: return CF_BQ_STRING;
    case CF_COL_BYTES: return CF_BQ_BYTES;
    /* Connect decimals carry any scale; NUMERIC keeps 9 digits after the
     * point, BIGNUMERIC 38, so BIGNUMERIC loses nothing a decimal(38,s)
     * source column can hold. */
    case CF_COL_NUMERIC: return CF_BQ_BIGNUMERIC;
    case CF_COL_DATE: return CF_BQ_DATE;
    case CF_COL_TIME: return CF_BQ_TIME;
    case CF_COL_TIMESTAMP: return CF_BQ_TIMESTAMP;
    case CF_COL_JSON: return CF_BQ_JSON;
    }
    return CF_BQ_STRING;
}

bool cf_bq_col_fits(cf_col_type col, const cf_bq_field *bq) {
    cf_bq_type t = bq->type;
    if (bq->mode == CF_BQ_REPEATED || t == CF_BQ_RECORD) return col == CF_COL_JSON; /* JSON text -> message */
    switch (col) {
    case CF_COL_BOOL: return t == CF_BQ_BOOL;
    case CF_COL_INT16:
    case CF_COL_INT32:
    case CF_COL_INT64: return t == CF_BQ_INT64 || t == CF_BQ_NUMERIC || t == CF_BQ_BIGNUMERIC;
    case CF_COL_FLOAT32:
    case CF_COL_FLOAT64: return t == CF_BQ_FLOAT64;
    case CF_COL_TEXT:
        return t == CF_BQ_STRING || t == CF_BQ_JSON || t == CF_BQ_GEOGRAPHY || t == CF_BQ_DATETIME ||
               t == CF_BQ_TIME || t == CF_BQ_DATE || t == CF_BQ_TIMESTAMP || t == CF_BQ_NUMERIC ||
               t == CF_BQ_BIGNUMERIC || t == CF_BQ_INTERVAL || t == CF_BQ_BYTES;
    case CF_COL_BYTES: return t == CF_BQ_BYTES;
    case CF_COL_NUMERIC: return t == CF_BQ_NUMERIC || t == CF_BQ_BIGNUMERIC || t == CF_BQ_STRING;
    case CF_COL_DATE: return t == CF_BQ_DATE || t == CF_BQ_STRING;
    case CF_COL_TIME: return t == CF_BQ_TIME || t == CF_BQ_STRING;
    case CF_COL_TIMESTAMP: return t == CF_BQ_TIMESTAMP || t == CF_BQ_DATETIME || t == CF_BQ_STRING;
    case CF_COL_JSON: return t == CF_BQ_JSON || t == CF_BQ_STRING;
    }
    return false;
}

bool cf_bq_name_ok(const char *n) {
    size_t len = strlen(n);
    if (len == 0 || len > 300) return false;
    if (!(n[0] == '_' || (n[0] >= 'A' && n[0] <= 'Z') || (n[0] >= 'a' && n[0] <= 'z'))) return false;
    for (size_t i = 1; i < len; i++) {
        char c = n[i];
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
    }
    return true;
}

/* ---------------- the writer schema ---------------- */

/* FieldDescriptorProto.Type and .Label values (descriptor.proto). */
enum { FT_DOUBLE = 1, FT_INT64 = 3, FT_INT32 = 5, FT_BOOL = 8, FT_STRING = 9, FT_MESSAGE = 11, FT_BYTES = 12 };
enum { FL_OPTIONAL = 1, FL_REPEATED = 3 };

static int proto_type(cf_bq_type t) {
    switch (t) {
    case CF_BQ_BYTES: return FT_BYTES;
    case CF_BQ_INT64:
    case CF_BQ_TIMESTAMP: return FT_INT64;
    case CF_BQ_FLOAT64: return FT_DOUBLE;
    case CF_BQ_BOOL: return FT_BOOL;
    case CF_BQ_DATE: return FT_INT32;
    case CF_BQ_RECORD: return FT_MESSAGE;
    default: return FT_STRING;
    }
}

static void field_desc(cf_buf *b, const char *name, uint32_t number, int label, int type, const char *type_name) {
    size_t at = pb_begin(b, 2); /* DescriptorProto.field */
    pb_string(b, 1, name);
    pb_uint(b, 3, number);
    pb_uint(b, 4, (uint64_t)label);
    pb_uint(b, 5, (uint64_t)type);
    if (type_name) pb_string(b, 6, type_name);
    pb_end(b, at);
}

/* One message's body (name, fields) into b; nested record types are added
 * to `nested` as whole DescriptorProto bodies (flattened: every nested type
 * lives directly in the top-level message, referred to by a relative name,
 * as Google's own ProtoSchemaConverter does). */
static cf_code message_desc(const char *name, const cf_bq_field *f, size_t n, bool cdc, cf_buf *b, cf_buf *nested,
                            unsigned *counter, int depth, cf_err *err) {
    if (depth > 15) /* BigQuery allows 15 levels of nested RECORDs */
        return cf_err_set(err, CF_ERR_SCHEMA, "RECORD fields nest deeper than 15 levels");
    pb_string(b, 1, name);
    for (size_t i = 0; i < n; i++) {
        if (!cf_bq_name_ok(f[i].name)) {
            cf_err_set(err, CF_ERR_SCHEMA, "column name \"%s\" cannot be a field of the writer schema", f[i].name);
            cf_err_detail(err, "the Storage Write API's protobuf rows need names of letters, digits and '_', not "
                               "starting with a digit");
            cf_err_hint(err, "set sanitizeFieldNames=true, or rename the field with ReplaceField");
            return CF_ERR_SCHEMA;
        }
        int label = f[i].mode == CF_BQ_REPEATED ? FL_REPEATED : FL_OPTIONAL;
        if (f[i].type == CF_BQ_RECORD) {
            if (f[i].n_fields == 0) {
                cf_err_set(err, CF_ERR_SCHEMA, "RECORD column \"%s\" has no fields", f[i].name);
                return CF_ERR_SCHEMA;
            }
            char tn[32];
            snprintf(tn, sizeof tn, "r%u", ++*counter);
            cf_buf sub = CF_BUF_INIT;
            cf_code rc = message_desc(tn, f[i].fields, f[i].n_fields, false, &sub, nested, counter, depth + 1, err);
            if (rc) {
                cf_buf_free(&sub);
                cf_err_where_prefix(err, f[i].name);
                return rc;
            }
            pb_bytes(nested, 3, sub.data, sub.len); /* DescriptorProto.nested_type */
            cf_buf_free(&sub);
            field_desc(b, f[i].name, (uint32_t)(i + 1), label, FT_MESSAGE, tn);
        } else {
            field_desc(b, f[i].name, (uint32_t)(i + 1), label, proto_type(f[i].type), NULL);
        }
    }
    if (cdc) {
        field_desc(b, "_CHANGE_TYPE", (uint32_t)(n + 1), FL_OPTIONAL, FT_STRING, NULL);
        field_desc(b, "_CHANGE_SEQUENCE_NUMBER", (uint32_t)(n + 2), FL_OPTIONAL, FT_STRING, NULL);
    }
    return CF_OK;
}

cf_code cf_bq_descriptor(const cf_bq_field *fields, size_t n, bool cdc, cf_buf *out, cf_err *err) {
    cf_buf body = CF_BUF_INIT, nested = CF_BUF_INIT;
    unsigned counter = 0;
    cf_code rc = message_desc("row", fields, n, cdc, &body, &nested, &counter, 0, err);
    if (!rc) {
        cf_buf_append(out, body.data ? body.data : "", body.len);
        cf_buf_append(out, nested.data ? nested.data : "", nested.len);
    }
    cf_buf_free(&body);
    cf_buf_free(&nested);
    return rc;
}

/* ---------------- dates and timestamps ---------------- */

/* n digits at s[*i] as a number; false if any is not a digit. */
static bool digits(const char *s, size_t len, size_t *i, int n, int *out) {
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (*i >= len || s[*i] < '0' || s[*i] > '9') return false;
        v = v * 10 + (s[(*i)++] - '0');
    }
    *out = v;
    return true;
}

static bool parse_ymd(const char *s, size_t n, size_t *i, int64_t *days) {
    int y, m, d;
    bool neg = *i < n && s[*i] == '-';
    if (neg) ++*i;
    if (!digits(s, n, i, 4, &y) || *i >= n || s[(*i)++] != '-' || !digits(s, n, i, 2, &m) || *i >= n ||
        s[(*i)++] != '-' || !digits(s, n, i, 2, &d))
        return false;
    if (m < 1 || m > 12 || d < 1 || d > 31) return false;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (d > mdays[m - 1]) return false;
    int64_t yy = neg ? -y : y;
    bool leap = (yy % 4 == 0 && yy % 100 != 0) || yy % 400 == 0;
    if (m == 2 && d == 29 && !leap) return false;
    *days = cf_days_from_civil(yy, (unsigned)m, (unsigned)d);
    return true;
}

bool cf_bq_parse_date(const char *s, size_t n, int32_t *days) {
    size_t i = 0;
    int64_t d;
    if (!parse_ymd(s, n, &i, &d) || i != n) return false;
    if (d < INT32_MIN || d > INT32_MAX) return false;
    *days = (int32_t)d;
    return true;
}

bool cf_bq_parse_timestamp(const char *s, size_t n, int64_t *micros) {
    size_t i = 0;
    int64_t days;
    int h = 0, mi = 0, se = 0;
    int64_t frac = 0;
    if (!parse_ymd(s, n, &i, &days)) return false;
    if (i < n && (s[i] == ' ' || s[i] == 'T' || s[i] == 't')) {
        i++;
        if (!digits(s, n, &i, 2, &h) || i >= n || s[i++] != ':' || !digits(s, n, &i, 2, &mi) || i >= n ||
            s[i++] != ':' || !digits(s, n, &i, 2, &se))
            return false;
        if (h > 23 || mi > 59 || se > 60) return false;
        if (i < n && s[i] == '.') {
            i++;
            int nd = 0;
            while (i < n && s[i] >= '0' && s[i] <= '9') {
                if (nd < 6) frac = frac * 10 + (s[i] - '0');
                nd++, i++;
            }
            if (nd == 0) return false;
            for (; nd < 6; nd++) frac *= 10;
        }
    }
    int64_t off = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) i++;
    else if (i < n && (s[i] == '+' || s[i] == '-')) {
        int sign = s[i++] == '-' ? -1 : 1, oh, om = 0;
        if (!digits(s, n, &i, 2, &oh)) return false;
        if (i < n && s[i] == ':') i++;
        if (i < n && !digits(s, n, &i, 2, &om)) return false;
        off = sign * (oh * 3600 + om * 60);
    }
    if (i != n) return false;
    *micros = ((days * 86400 + h * 3600 + mi * 60 + se) - off) * 1000000 + frac;
    return true;
}

/* ---------------- the row encoder ---------------- */

typedef enum ek {
    EK_INT64,
    EK_BOOL,
    EK_DOUBLE,
    EK_STRING,
    EK_BYTES,
    EK_DATE,
    EK_TIMESTAMP,
    EK_JSON /* RECORD or REPEATED: from JSON text */
} ek;

typedef struct enc_col {
    ek kind;
    uint8_t tag[5], tag_len;
    const cf_bq_field *f;
} enc_col;

struct cf_bq_rowenc {
    cf_bq_field *fields;
    size_t n;
    enc_col *cols;
    bool cdc;
    uint8_t ct_tag[5], ct_tag_len, seq_tag[5], seq_tag_len;
};

static ek kind_of(const cf_bq_field *f) {
    if (f->mode == CF_BQ_REPEATED || f->type == CF_BQ_RECORD) return EK_JSON;
    switch (f->type) {
    case CF_BQ_INT64: return EK_INT64;
    case CF_BQ_BOOL: return EK_BOOL;
    case CF_BQ_FLOAT64: return EK_DOUBLE;
    case CF_BQ_BYTES: return EK_BYTES;
    case CF_BQ_DATE: return EK_DATE;
    case CF_BQ_TIMESTAMP: return EK_TIMESTAMP;
    default: return EK_STRING;
    }
}

static int wire_of(ek k) {
    switch (k) {
    case EK_INT64:
    case EK_BOOL:
    case EK_DATE:
    case EK_TIMESTAMP: return PB_VARINT;
    case EK_DOUBLE: return PB_I64;
    default: return PB_LEN;
    }
}

cf_code cf_bq_rowenc_new(const cf_bq_field *fields, size_t n, bool cdc, cf_bq_rowenc **out, cf_err *err) {
    *out = NULL;
    for (size_t i = 0; i < n; i++)
        if (!cf_bq_name_ok(fields[i].name)) {
            cf_err_set(err, CF_ERR_SCHEMA, "column name \"%s\" cannot be a field of the writer schema", fields[i].name);
            cf_err_hint(err, "set sanitizeFieldNames=true, or rename the field with ReplaceField");
            return CF_ERR_SCHEMA;
        }
    cf_bq_rowenc *e = cf_xcalloc(1, sizeof *e);
    e->fields = cf_bq_fields_clone(fields, n);
    e->n = n;
    e->cdc = cdc;
    e->cols = cf_xcalloc(n ? n : 1, sizeof *e->cols);
    for (size_t i = 0; i < n; i++) {
        enc_col *c = &e->cols[i];
        c->f = &e->fields[i];
        c->kind = kind_of(c->f);
        c->tag_len = (uint8_t)pb_put_varint(c->tag, (uint64_t)(i + 1) << 3 | (unsigned)wire_of(c->kind));
    }
    e->ct_tag_len = (uint8_t)pb_put_varint(e->ct_tag, (uint64_t)(n + 1) << 3 | PB_LEN);
    e->seq_tag_len = (uint8_t)pb_put_varint(e->seq_tag, (uint64_t)(n + 2) << 3 | PB_LEN);
    *out = e;
    return CF_OK;
}

void cf_bq_rowenc_destroy(cf_bq_rowenc *e) {
    if (!e) return;
    cf_bq_fields_free(e->fields, e->n);
    free(e->cols);
    free(e);
}

size_t cf_bq_rowenc_columns(const cf_bq_rowenc *e) { return e->n; }

/* --- JSON values into nested messages / repeated fields --- */

static cf_code json_field(cf_buf *b, const cf_bq_field *f, uint32_t num, json_t *v, int depth, cf_err *err);

static bool b64_decode(const char *s, size_t n, cf_buf *out) {
    uint32_t acc = 0;
    int bits = 0;
    size_t i = 0;
    for (; i < n && s[i] != '='; i++) {
        int d = cf_base64_digit((unsigned char)s[i]);
        if (d < 0) return false;
        acc = acc << 6 | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            cf_buf_append_byte(out, (uint8_t)(acc >> bits));
        }
    }
    for (; i < n; i++)
        if (s[i] != '=') return false;
    return true;
}

static cf_code json_scalar(cf_buf *b, const cf_bq_field *f, uint32_t num, json_t *v, cf_err *err) {
    ek k = f->type == CF_BQ_RECORD ? EK_JSON : kind_of(&(cf_bq_field){.type = f->type});
    switch (k) {
    case EK_INT64:
        if (json_is_integer(v)) return pb_uint(b, num, (uint64_t)json_integer_value(v)), CF_OK;
        break;
    case EK_BOOL:
        if (json_is_boolean(v)) return pb_uint(b, num, json_is_true(v)), CF_OK;
        break;
    case EK_DOUBLE:
        if (json_is_number(v)) {
            double d = json_number_value(v);
            uint64_t bits;
            memcpy(&bits, &d, 8);
            pb_tag(b, num, PB_I64);
            for (int i = 0; i < 8; i++) cf_buf_append_byte(b, (uint8_t)(bits >> (8 * i)));
            return CF_OK;
        }
        break;
    case EK_DATE:
        if (json_is_integer(v)) return pb_uint(b, num, (uint64_t)(int64_t)(int32_t)json_integer_value(v)), CF_OK;
        if (json_is_string(v)) {
            int32_t d;
            if (cf_bq_parse_date(json_string_value(v), json_string_length(v), &d))
                return pb_uint(b, num, (uint64_t)(int64_t)d), CF_OK;
        }
        break;
    case EK_TIMESTAMP:
        /* Connect's Timestamp is milliseconds: the JSON the sink renders for a
         * struct holds those numbers */
        if (json_is_integer(v)) return pb_uint(b, num, (uint64_t)(json_integer_value(v) * 1000)), CF_OK;
        if (json_is_string(v)) {
            int64_t us;
            if (cf_bq_parse_timestamp(json_string_value(v), json_string_length(v), &us))
                return pb_uint(b, num, (uint64_t)us), CF_OK;
        }
        break;
    case EK_BYTES:
        if (json_is_string(v)) {
            cf_buf raw = CF_BUF_INIT;
            bool ok = b64_decode(json_string_value(v), json_string_length(v), &raw);
            if (ok) pb_bytes(b, num, raw.data ? raw.data : "", raw.len);
            cf_buf_free(&raw);
            if (ok) return CF_OK;
        }
        break;
    case EK_STRING:
        if (json_is_string(v)) return pb_bytes(b, num, json_string_value(v), json_string_length(v)), CF_OK;
        if (f->type == CF_BQ_JSON || ((f->type == CF_BQ_NUMERIC || f->type == CF_BQ_BIGNUMERIC) && json_is_number(v))) {
            char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
            if (s) pb_string(b, num, s);
            free(s);
            if (s) return CF_OK;
        }
        break;
    case EK_JSON: break;
    }
    static const char *const jt[] = {"object", "array", "string", "integer", "real", "true", "false", "null"};
    cf_err_set(err, CF_ERR_SCHEMA, "a JSON %s does not fit %s field \"%s\"", jt[json_typeof(v)],
               cf_bq_type_name(f->type), f->name);
    cf_err_where(err, "%s", f->name);
    return CF_ERR_SCHEMA;
}

static cf_code json_record(cf_buf *b, const cf_bq_field *f, uint32_t num, json_t *v, int depth, cf_err *err) {
    if (!json_is_object(v)) {
        cf_err_set(err, CF_ERR_SCHEMA, "RECORD field \"%s\" needs a JSON object", f->name);
        cf_err_where(err, "%s", f->name);
        return CF_ERR_SCHEMA;
    }
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) { /* BigQuery refuses unknown fields: so do we, by name */
        bool known = false;
        for (size_t j = 0; j < f->n_fields && !known; j++) known = strcmp(f->fields[j].name, key) == 0;
        if (!known && !json_is_null(val)) {
            cf_err_set(err, CF_ERR_SCHEMA, "RECORD field \"%s\" has no field \"%s\"", f->name, key);
            cf_err_where(err, "%s.%s", f->name, key);
            cf_err_hint(err, "add the field to the table's RECORD column");
            return CF_ERR_SCHEMA;
        }
    }
    size_t at = pb_begin(b, num);
    for (size_t j = 0; j < f->n_fields; j++) {
        json_t *x = json_object_get(v, f->fields[j].name);
        cf_code rc = json_field(b, &f->fields[j], (uint32_t)(j + 1), x, depth + 1, err);
        if (rc) {
            cf_err_where_prefix(err, f->name);
            return rc;
        }
    }
    pb_end(b, at);
    return CF_OK;
}

static cf_code json_one(cf_buf *b, const cf_bq_field *f, uint32_t num, json_t *v, int depth, cf_err *err) {
    if (f->type == CF_BQ_RECORD) return json_record(b, f, num, v, depth, err);
    return json_scalar(b, f, num, v, err);
}

/* A REPEATED RECORD of fields "key" and "value" (kcbq's shape for a Connect
 * map) is also filled from the sink's JSON for a map: an object (text keys)
 * or an array of [key, value] pairs (other keys), one record per entry. */
static bool is_map_record(const cf_bq_field *f) {
    if (f->type != CF_BQ_RECORD || f->n_fields != 2) return false;
    bool k = false, v = false;
    for (size_t j = 0; j < 2; j++) {
        k = k || strcmp(f->fields[j].name, "key") == 0;
        v = v || strcmp(f->fields[j].name, "value") == 0;
    }
    return k && v;
}

static bool is_pair_array(json_t *v) {
    size_t i;
    json_t *x;
    if (!json_is_array(v) || json_array_size(v) == 0) return false;
    json_array_foreach(v, i, x) if (!json_is_array(x) || json_array_size(x) != 2) return false;
    return true;
}

static cf_code json_map(cf_buf *b, const cf_bq_field *f, uint32_t num, json_t *v, int depth, cf_err *err) {
    json_t *e = json_object();
    cf_code rc = CF_OK;
    if (json_is_object(v)) {
        const char *key;
        json_t *val;
        json_object_foreach(v, key, val) {
            json_object_set_new(e, "key", json_string(key));
            json_object_set(e, "value", val);
            if ((rc = json_record(b, f, num, e, depth, err))) break;
        }
    } else {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            json_object_set(e, "key", json_array_get(x, 0));
            json_object_set(e, "value", json_array_get(x, 1));
            if ((rc = json_record(b, f, num, e, depth, err))) break;
        }
    }
    json_decref(e);
    return rc;
}

static cf_code json_field(cf_buf *b, const cf_bq_field *f, uint32_t num, json_t *v, int depth, cf_err *err) {
    if (depth > 16) return cf_err_set(err, CF_ERR_SCHEMA, "value nests deeper than BigQuery's 15 levels");
    if (!v || json_is_null(v)) {
        if (f->mode == CF_BQ_REQUIRED) {
            cf_err_set(err, CF_ERR_SCHEMA, "REQUIRED field \"%s\" is null", f->name);
            cf_err_where(err, "%s", f->name);
            return CF_ERR_SCHEMA;
        }
        return CF_OK; /* absent: NULL (a REPEATED field: empty) */
    }
    if (f->mode != CF_BQ_REPEATED) return json_one(b, f, num, v, depth, err);
    if (is_map_record(f) && (json_is_object(v) || is_pair_array(v))) return json_map(b, f, num, v, depth, err);
    if (!json_is_array(v)) {
        cf_err_set(err, CF_ERR_SCHEMA, "REPEATED field \"%s\" needs a JSON array", f->name);
        cf_err_where(err, "%s", f->name);
        return CF_ERR_SCHEMA;
    }
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (json_is_null(x)) {
            cf_err_set(err, CF_ERR_SCHEMA, "REPEATED field \"%s\" has a null element", f->name);
            cf_err_detail(err, "BigQuery arrays cannot hold NULL");
            cf_err_where(err, "%s[%zu]", f->name, i);
            return CF_ERR_SCHEMA;
        }
        cf_code rc = json_one(b, f, num, x, depth, err);
        if (rc) return rc;
    }
    return CF_OK;
}

/* --- cells --- */

static inline uint8_t *room(cf_buf *b, size_t n) {
    cf_buf_reserve(b, n);
    return (uint8_t *)b->data + b->len;
}

static inline void put_tag_varint(cf_buf *b, const enc_col *c, uint64_t v) {
    uint8_t *p = room(b, 15);
    memcpy(p, c->tag, c->tag_len);
    size_t k = c->tag_len;
    k += pb_put_varint(p + k, v);
    b->len += k;
}

static inline void put_tag_len(cf_buf *b, const uint8_t *tag, size_t tag_len, const void *s, size_t n) {
    uint8_t *p = room(b, tag_len + 10 + n);
    memcpy(p, tag, tag_len);
    size_t k = tag_len;
    k += pb_put_varint(p + k, n);
    memcpy(p + k, s, n);
    b->len += k + n;
}

static cf_code cell_bad(const enc_col *c, const cf_cell *x, const char *why, cf_err *err) {
    static const char *const kinds[] = {"null", "integer", "real", "text", "bytes", "placeholder"};
    cf_err_set(err, CF_ERR_SCHEMA, "a %s value does not fit %s column \"%s\"%s%s", kinds[x->kind < 6 ? x->kind : 0],
               cf_bq_type_name(c->f->type), c->f->name, why ? ": " : "", why ? why : "");
    cf_err_where(err, "%s", c->f->name);
    return CF_ERR_SCHEMA;
}

static cf_code encode_cell(cf_buf *b, const enc_col *c, uint32_t num, const cf_cell *x, cf_err *err) {
    switch (c->kind) {
    case EK_INT64:
        if (x->kind == CF_CELL_INT) return put_tag_varint(b, c, (uint64_t)x->u.i), CF_OK;
        break;
    case EK_BOOL:
        if (x->kind == CF_CELL_INT) return put_tag_varint(b, c, x->u.i != 0), CF_OK;
        break;
    case EK_DOUBLE:
        if (x->kind == CF_CELL_REAL || x->kind == CF_CELL_INT) {
            double d = x->kind == CF_CELL_REAL ? x->u.f : (double)x->u.i;
            uint8_t *p = room(b, 13);
            memcpy(p, c->tag, c->tag_len);
            uint64_t bits;
            memcpy(&bits, &d, 8);
            for (int i = 0; i < 8; i++) p[c->tag_len + i] = (uint8_t)(bits >> (8 * i));
            b->len += c->tag_len + 8u;
            return CF_OK;
        }
        break;
    case EK_STRING:
        if (x->kind == CF_CELL_TEXT) return put_tag_len(b, c->tag, c->tag_len, x->u.p, x->len), CF_OK;
        if (x->kind == CF_CELL_INT && (c->f->type == CF_BQ_NUMERIC || c->f->type == CF_BQ_BIGNUMERIC)) {
            char t[24];
            int k = snprintf(t, sizeof t, "%" PRId64, x->u.i);
            return put_tag_len(b, c->tag, c->tag_len, t, (size_t)k), CF_OK;
        }
        break;
    case EK_BYTES:
        if (x->kind == CF_CELL_BLOB || x->kind == CF_CELL_TEXT)
            return put_tag_len(b, c->tag, c->tag_len, x->u.p, x->len), CF_OK;
        break;
    case EK_DATE:
        if (x->kind == CF_CELL_INT) return put_tag_varint(b, c, (uint64_t)(int64_t)(int32_t)x->u.i), CF_OK;
        if (x->kind == CF_CELL_TEXT) {
            int32_t d;
            if (!cf_bq_parse_date(x->u.p, x->len, &d)) return cell_bad(c, x, "not a YYYY-MM-DD date", err);
            return put_tag_varint(b, c, (uint64_t)(int64_t)d), CF_OK;
        }
        break;
    case EK_TIMESTAMP:
        if (x->kind == CF_CELL_INT) return put_tag_varint(b, c, (uint64_t)x->u.i), CF_OK;
        if (x->kind == CF_CELL_TEXT) {
            int64_t us;
            if (!cf_bq_parse_timestamp(x->u.p, x->len, &us)) return cell_bad(c, x, "not a timestamp literal", err);
            return put_tag_varint(b, c, (uint64_t)us), CF_OK;
        }
        break;
    case EK_JSON:
        if (x->kind == CF_CELL_TEXT) {
            json_error_t je;
            json_t *v = json_loadb(x->u.p, x->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
            if (!v) return cell_bad(c, x, "not JSON text", err);
            cf_code rc = json_field(b, c->f, num, v, 1, err);
            json_decref(v);
            return rc;
        }
        break;
    }
    return cell_bad(c, x, NULL, err);
}

cf_code cf_bq_encode_row(const cf_bq_rowenc *e, const cf_cell *cells, size_t n_cells, const char *change_type,
                         const char *seq, cf_buf *out, cf_err *err) {
    size_t start = out->len;
    size_t n = n_cells < e->n ? n_cells : e->n;
    for (size_t i = 0; i < n; i++) {
        const cf_cell *x = &cells[i];
        if (x->kind == CF_CELL_NULL) continue; /* absent: NULL */
        if (x->kind == CF_CELL_KEEP) {
            out->len = start;
            if (out->data) out->data[start] = 0;
            cf_err_set(err, CF_ERR_SCHEMA, "column \"%s\" holds Debezium's unavailable-value placeholder",
                       e->cols[i].f->name);
            cf_err_detail(err, "BigQuery's UPSERT replaces the whole row, so an unchanged TOASTed value that the "
                               "change does not carry cannot be kept");
            cf_err_where(err, "%s", e->cols[i].f->name);
            return CF_ERR_SCHEMA;
        }
        cf_code rc = encode_cell(out, &e->cols[i], (uint32_t)(i + 1), x, err);
        if (rc) {
            out->len = start;
            if (out->data) out->data[start] = 0;
            return rc;
        }
    }
    if (e->cdc && change_type) {
        put_tag_len(out, e->ct_tag, e->ct_tag_len, change_type, strlen(change_type));
        if (seq) put_tag_len(out, e->seq_tag, e->seq_tag_len, seq, strlen(seq));
    }
    if (out->data) out->data[out->len] = 0;
    return CF_OK;
}

/* ---------------- AppendRowsRequest ---------------- */

void cf_bq_rows_add(cf_buf *rows, const void *row, size_t len) {
    static const uint8_t tag = 1 << 3 | PB_LEN;
    put_tag_len(rows, &tag, 1, row, len);
    rows->data[rows->len] = 0;
}

size_t cf_bq_request_overhead(const char *write_stream, size_t descriptor_len) {
    size_t n = 3 * 6; /* tags and lengths of proto_rows, rows and their length prefixes */
    if (write_stream) n += 6 + strlen(write_stream);
    if (descriptor_len) n += 2 * 6 + descriptor_len;
    return n + 64; /* trace id */
}

void cf_bq_append_request(cf_buf *out, const char *write_stream, const cf_buf *descriptor, const uint8_t *rows,
                          size_t rows_len, const char *trace_id) {
    if (write_stream) pb_string(out, 1, write_stream);
    size_t pd = pb_begin(out, 4); /* proto_rows: ProtoData */
    if (descriptor) {
        size_t ps = pb_begin(out, 1); /* writer_schema: ProtoSchema */
        pb_bytes(out, 1, descriptor->data ? descriptor->data : "", descriptor->len); /* proto_descriptor */
        pb_end(out, ps);
    }
    pb_bytes(out, 2, rows ? (const void *)rows : "", rows_len); /* rows: ProtoRows */
    pb_end(out, pd);
    if (trace_id) pb_string(out, 6, trace_id);
}

/* ---------------- AppendRowsResponse ---------------- */

static char *dup_len(const uint8_t *p, size_t n) { return cf_xstrndup((const char *)p, n); }

static cf_code corrupt_msg(const pb_reader *r, const char *msg, const char *what, cf_err *err) {
    cf_err_set(err, CF_ERR_CORRUPT, "malformed %s: %s", msg, what);
    cf_err_where(err, "byte %td", r->p - r->start);
    return CF_ERR_CORRUPT;
}

static cf_code corrupt(const pb_reader *r, const char *what, cf_err *err) {
    return corrupt_msg(r, "AppendRowsResponse", what, err);
}

#define STORAGE_ERROR_TYPE "type.googleapis.com/google.cloud.bigquery.storage.v1.StorageError"

static cf_code decode_status(pb_reader *r, cf_bq_append_resp *out, cf_err *err) {
    uint32_t f;
    int wt;
    uint64_t v;
    const uint8_t *p;
    size_t n;
    while (pb_next(r, &f, &wt)) {
        if (f == 1 && wt == PB_VARINT) {
            if (!pb_read_varint(r, &v)) break;
            out->code = (int32_t)(uint32_t)v;
        } else if (f == 2 && wt == PB_LEN) {
            if (!pb_read_len(r, &p, &n)) break;
            free(out->message);
            out->message = dup_len(p, n);
        } else if (f == 3 && wt == PB_LEN) { /* details: google.protobuf.Any */
            if (!pb_read_len(r, &p, &n)) break;
            pb_reader a = pb_reader_of(p, n, r->start);
            const uint8_t *tu = NULL, *val = NULL;
            size_t tul = 0, vall = 0;
            while (pb_next(&a, &f, &wt)) {
                if (f == 1 && wt == PB_LEN) {
                    if (!pb_read_len(&a, &tu, &tul)) break;
                } else if (f == 2 && wt == PB_LEN) {
                    if (!pb_read_len(&a, &val, &vall)) break;
                } else if (!pb_skip(&a, wt)) break;
            }
            if (a.bad) return corrupt(&a, "bad status detail", err);
            if (tu && tul == sizeof STORAGE_ERROR_TYPE - 1 && memcmp(tu, STORAGE_ERROR_TYPE, tul) == 0 && val) {
                pb_reader s = pb_reader_of(val, vall, r->start);
                while (pb_next(&s, &f, &wt)) {
                    if (f == 1 && wt == PB_VARINT) {
                        if (!pb_read_varint(&s, &v)) break;
                        out->storage_code = (int32_t)(uint32_t)v;
                    } else if (!pb_skip(&s, wt)) break;
                }
                if (s.bad) return corrupt(&s, "bad StorageError", err);
            }
        } else if (!pb_skip(r, wt)) break;
    }
    return r->bad ? corrupt(r, "bad error status", err) : CF_OK;
}

cf_code cf_bq_append_resp_decode(const uint8_t *buf, size_t len, cf_bq_append_resp *out, cf_err *err) {
    memset(out, 0, sizeof *out);
    pb_reader r = pb_reader_of(buf, len, buf);
    uint32_t f;
    int wt;
    uint64_t v;
    const uint8_t *p;
    size_t n;
    size_t cap = 0;
    while (pb_next(&r, &f, &wt)) {
        if (wt == PB_LEN && (f == 1 || f == 2 || f == 3 || f == 4 || f == 5)) {
            if (!pb_read_len(&r, &p, &n)) break;
            pb_reader m = pb_reader_of(p, n, buf);
            if (f == 1) { /* append_result { offset: Int64Value { value = 1 } } */
                out->has_result = true;
                uint32_t g;
                int w;
                while (pb_next(&m, &g, &w)) {
                    if (g == 1 && w == PB_LEN) {
                        const uint8_t *q;
                        size_t qn;
                        if (!pb_read_len(&m, &q, &qn)) break;
                        pb_reader iv = pb_reader_of(q, qn, buf);
                        out->has_offset = true;
                        while (pb_next(&iv, &g, &w)) {
                            if (g == 1 && w == PB_VARINT) {
                                if (!pb_read_varint(&iv, &v)) break;
                                out->offset = (int64_t)v;
                            } else if (!pb_skip(&iv, w)) break;
                        }
                        if (iv.bad) return corrupt(&iv, "bad offset", err);
                    } else if (!pb_skip(&m, w)) break;
                }
                if (m.bad) return corrupt(&m, "bad append_result", err);
            } else if (f == 2) {
                out->has_error = true;
                cf_code rc = decode_status(&m, out, err);
                if (rc) return rc;
            } else if (f == 3) {
                out->updated_schema = true;
            } else if (f == 4) { /* RowError */
                if (out->n_row_errors == cap) {
                    cap = cap ? cap * 2 : 8;
                    out->row_errors = cf_xrealloc(out->row_errors, cap * sizeof *out->row_errors);
                }
                cf_bq_row_error *e = &out->row_errors[out->n_row_errors++];
                memset(e, 0, sizeof *e);
                uint32_t g;
                int w;
                while (pb_next(&m, &g, &w)) {
                    if (g == 1 && w == PB_VARINT) {
                        if (!pb_read_varint(&m, &v)) break;
                        e->index = (int64_t)v;
                    } else if (g == 2 && w == PB_VARINT) {
                        if (!pb_read_varint(&m, &v)) break;
                        e->code = (int32_t)(uint32_t)v;
                    } else if (g == 3 && w == PB_LEN) {
                        const uint8_t *q;
                        size_t qn;
                        if (!pb_read_len(&m, &q, &qn)) break;
                        free(e->message);
                        e->message = dup_len(q, qn);
                    } else if (!pb_skip(&m, w)) break;
                }
                if (m.bad) return corrupt(&m, "bad row_errors entry", err);
                if (e->index < 0) return corrupt(&m, "negative row index", err);
            } else {
                free(out->write_stream);
                out->write_stream = dup_len(p, n);
            }
        } else if (!pb_skip(&r, wt)) break;
    }
    if (r.bad) return corrupt(&r, "truncated or invalid field", err);
    return CF_OK;
}

void cf_bq_append_resp_free(cf_bq_append_resp *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_row_errors; i++) free(r->row_errors[i].message);
    free(r->row_errors);
    free(r->message);
    free(r->write_stream);
    memset(r, 0, sizeof *r);
}

/* ---------------- GetWriteStream ---------------- */

void cf_bq_get_write_stream_request(cf_buf *out, const char *name, int view) {
    pb_string(out, 1, name);
    if (view) pb_uint(out, 3, (uint64_t)view);
}

/* TableSchema { repeated TableFieldSchema fields = 1 { string name = 1 } }:
 * the top-level names (nested fields are not read). */
static cf_code decode_table_schema(pb_reader *r, cf_bq_write_stream *out, cf_err *err) {
    uint32_t f, g;
    int wt, w;
    const uint8_t *p, *q;
    size_t n, qn, cap = 0;
    while (pb_next(r, &f, &wt)) {
        if (f != 1 || wt != PB_LEN) {
            if (!pb_skip(r, wt)) break;
            continue;
        }
        if (!pb_read_len(r, &p, &n)) break;
        pb_reader fr = pb_reader_of(p, n, r->start);
        char *name = NULL;
        while (pb_next(&fr, &g, &w)) {
            if (g == 1 && w == PB_LEN) {
                if (!pb_read_len(&fr, &q, &qn)) break;
                free(name);
                name = dup_len(q, qn);
            } else if (!pb_skip(&fr, w)) break;
        }
        if (fr.bad || !name) {
            free(name);
            return corrupt_msg(&fr, "WriteStream", fr.bad ? "bad table_schema field" : "table_schema field without a name",
                               err);
        }
        if (out->n_columns == cap) {
            cap = cap ? cap * 2 : 16;
            out->columns = cf_xrealloc(out->columns, cap * sizeof *out->columns);
        }
        out->columns[out->n_columns++] = name;
    }
    return r->bad ? corrupt_msg(r, "WriteStream", "bad table_schema", err) : CF_OK;
}

cf_code cf_bq_write_stream_decode(const uint8_t *buf, size_t len, cf_bq_write_stream *out, cf_err *err) {
    memset(out, 0, sizeof *out);
    pb_reader r = pb_reader_of(buf, len, buf);
    uint32_t f;
    int wt;
    uint64_t v;
    const uint8_t *p;
    size_t n;
    while (pb_next(&r, &f, &wt)) {
        if ((f == 1 || f == 8) && wt == PB_LEN) { /* name, location */
            if (!pb_read_len(&r, &p, &n)) break;
            char **dst = f == 1 ? &out->name : &out->location;
            free(*dst);
            *dst = dup_len(p, n);
        } else if ((f == 2 || f == 7) && wt == PB_VARINT) { /* type, write_mode */
            if (!pb_read_varint(&r, &v)) break;
            *(f == 2 ? &out->type : &out->write_mode) = (int32_t)(uint32_t)v;
        } else if (f == 5 && wt == PB_LEN) { /* table_schema (view FULL); a later one replaces it */
            if (!pb_read_len(&r, &p, &n)) break;
            for (size_t i = 0; i < out->n_columns; i++) free(out->columns[i]);
            out->n_columns = 0;
            out->has_schema = true;
            pb_reader m = pb_reader_of(p, n, buf);
            cf_code rc = decode_table_schema(&m, out, err);
            if (rc) return rc;
        } else if (!pb_skip(&r, wt)) break;
    }
    if (r.bad) return corrupt_msg(&r, "WriteStream", "truncated or invalid field", err);
    return CF_OK;
}

void cf_bq_write_stream_free(cf_bq_write_stream *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_columns; i++) free(w->columns[i]);
    free(w->columns);
    free(w->name);
    free(w->location);
    memset(w, 0, sizeof *w);
}

/* ---------------- gRPC codes ---------------- */

const char *cf_grpc_code_name(int code) {
    static const char *const names[] = {"OK",
                                        "CANCELLED",
                                        "UNKNOWN",
                                        "INVALID_ARGUMENT",
                                        "DEADLINE_EXCEEDED",
                                        "NOT_FOUND",
                                        "ALREADY_EXISTS",
                                        "PERMISSION_DENIED",
                                        "RESOURCE_EXHAUSTED",
                                        "FAILED_PRECONDITION",
                                        "ABORTED",
                                        "OUT_OF_RANGE",
                                        "UNIMPLEMENTED",
                                        "INTERNAL",
                                        "UNAVAILABLE",
                                        "DATA_LOSS",
                                        "UNAUTHENTICATED"};
    return code >= 0 && code <= 16 ? names[code] : "UNKNOWN";
}

bool cf_grpc_code_retryable(int code) {
    return code == CF_GRPC_CANCELLED || code == CF_GRPC_DEADLINE_EXCEEDED || code == CF_GRPC_RESOURCE_EXHAUSTED ||
           code == CF_GRPC_ABORTED || code == CF_GRPC_INTERNAL || code == CF_GRPC_UNAVAILABLE;
}
