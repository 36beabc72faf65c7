/*
 * route.c - what one record means for its table: UPSERT or DELETE, the key,
 * the sequence number, and the row as SQL cells.
 *
 * The rules (include/cdcflow/sink.h, shared/specs/bigquery-cdc.md §3):
 * Kafka tombstone, null value with a schema, `__deleted` "true" and a raw
 * envelope with op "d" are deletes; the key's struct fields are the primary
 * key; "__" metadata never becomes a column. Conversion to cells happens
 * here, once per field, into the batch arena, so targets only bind.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/text.h"
#include "sink_internal.h"

#define UNAVAILABLE "__debezium_unavailable_value"

const char *cf_col_type_name(cf_col_type t) {
    static const char *const n[] = {"BOOL", "INT16", "INT32", "INT64", "FLOAT32", "FLOAT64", "TEXT",
                                    "BYTES", "NUMERIC", "DATE", "TIME", "TIMESTAMP", "JSON"};
    return (unsigned)t < sizeof n / sizeof n[0] ? n[t] : "?";
}

cf_col_type sk_col_type_of(const cf_schema *s) {
    if (s->name) {
        if (strcmp(s->name, CF_LOGICAL_DECIMAL) == 0) return CF_COL_NUMERIC;
        if (strcmp(s->name, CF_LOGICAL_DATE) == 0) return CF_COL_DATE;
        if (strcmp(s->name, CF_LOGICAL_TIME) == 0) return CF_COL_TIME;
        if (strcmp(s->name, CF_LOGICAL_TIMESTAMP) == 0) return CF_COL_TIMESTAMP;
    }
    switch (s->type) {
    case CF_INT8:
    case CF_INT16: return CF_COL_INT16;
    case CF_INT32: return CF_COL_INT32;
    case CF_INT64: return CF_COL_INT64;
    case CF_FLOAT32: return CF_COL_FLOAT32;
    case CF_FLOAT64: return CF_COL_FLOAT64;
    case CF_BOOLEAN: return CF_COL_BOOL;
    case CF_STRING: return CF_COL_TEXT;
    case CF_BYTES: return CF_COL_BYTES;
    default: return CF_COL_JSON;
    }
}

/* May a field of type `field` be written to a column of type `col`? */
bool sk_col_compatible(cf_col_type col, cf_col_type field) {
    if (col == field) return true;
    bool ci = col == CF_COL_INT16 || col == CF_COL_INT32 || col == CF_COL_INT64;
    bool fi = field == CF_COL_INT16 || field == CF_COL_INT32 || field == CF_COL_INT64;
    if (ci && fi) return field <= col; /* widening only */
    if (col == CF_COL_FLOAT64 && field == CF_COL_FLOAT32) return true;
    return false;
}

/* ---------------- civil time (the calendar: cf_days_from_civil, core) ---------------- */

static int fmt_date(char *b, size_t n, int64_t days) {
    int64_t y;
    unsigned m, d;
    cf_civil_from_days(days, &y, &m, &d);
    return snprintf(b, n, "%04" PRId64 "-%02u-%02u", y, m, d);
}

static int fmt_time(char *b, size_t n, int64_t ms) {
    return snprintf(b, n, "%02d:%02d:%02d.%03d", (int)(ms / 3600000), (int)(ms / 60000 % 60), (int)(ms / 1000 % 60),
                    (int)(ms % 1000));
}

static int fmt_ts(char *b, size_t n, int64_t ms) {
    int64_t days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
    int64_t rem = ms - days * 86400000;
    int k = fmt_date(b, n, days);
    b[k++] = ' ';
    return k + fmt_time(b + k, n - (size_t)k, rem);
}

/* "2024-04-30T11:19:44.123456Z" / "+02:00" / " " separator -> microseconds. */
static bool parse_iso_micros(const char *s, int64_t *out) {
    int Y, M, D, h = 0, mi = 0, se = 0, k = 0;
    if (sscanf(s, "%d-%d-%d%n", &Y, &M, &D, &k) != 3) return false;
    s += k;
    if (*s == 'T' || *s == ' ') {
        if (sscanf(s + 1, "%d:%d:%d%n", &h, &mi, &se, &k) != 3) return false;
        s += 1 + k;
    }
    int64_t frac = 0;
    if (*s == '.') {
        int digits = 0;
        s++;
        while (*s >= '0' && *s <= '9') {
            if (digits < 6) frac = frac * 10 + (*s - '0'), digits++;
            s++;
        }
        while (digits < 6) frac *= 10, digits++;
    }
    int64_t off = 0;
    if (*s == 'Z') s++;
    else if (*s == '+' || *s == '-') {
        int oh = 0, om = 0, sign = *s == '-' ? -1 : 1;
        if (sscanf(s + 1, "%d:%d", &oh, &om) < 1) return false;
        off = sign * (oh * 3600 + om * 60);
        s += strlen(s);
    }
    if (*s) return false;
    if (M < 1 || M > 12 || D < 1 || D > 31) return false;
    int64_t secs = cf_days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + mi * 60 + se - off;
    *out = secs * 1000000 + frac;
    return true;
}

/* ---------------- JSON for ARRAY / MAP / STRUCT columns ---------------- */

static void json_str(cf_buf *b, const char *p, size_t n) {
    cf_buf_append_byte(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') cf_buf_append_byte(b, '\\'), cf_buf_append_byte(b, c);
        else if (c < 0x20) cf_buf_printf(b, "\\u%04x", c);
        else cf_buf_append_byte(b, c);
    }
    cf_buf_append_byte(b, '"');
}

static void json_b64(cf_buf *b, const uint8_t *p, size_t n) {
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    cf_buf_append_byte(b, '"');
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        cf_buf_append_byte(b, t[v >> 18 & 63]);
        cf_buf_append_byte(b, t[v >> 12 & 63]);
        cf_buf_append_byte(b, i + 1 < n ? t[v >> 6 & 63] : '=');
        cf_buf_append_byte(b, i + 2 < n ? t[v & 63] : '=');
    }
    cf_buf_append_byte(b, '"');
}

static void json_val(cf_buf *b, const cf_value *v) {
    if (!v) {
        cf_buf_append_str(b, "null");
        return;
    }
    switch (v->type) {
    case CF_INT8:
    case CF_INT16:
    case CF_INT32:
    case CF_INT64: cf_buf_printf(b, "%" PRId64, v->u.i); break;
    case CF_FLOAT32:
    case CF_FLOAT64: cf_buf_printf(b, "%.17g", v->u.f); break;
    case CF_BOOLEAN: cf_buf_append_str(b, v->u.b ? "true" : "false"); break;
    case CF_STRING: json_str(b, v->u.s.ptr, v->u.s.len); break;
    case CF_BYTES: json_b64(b, (const uint8_t *)v->u.s.ptr, v->u.s.len); break;
    case CF_ARRAY:
        cf_buf_append_byte(b, '[');
        for (size_t i = 0; i < v->u.arr.len; i++) {
            if (i) cf_buf_append_byte(b, ',');
            json_val(b, v->u.arr.items[i]);
        }
        cf_buf_append_byte(b, ']');
        break;
    case CF_MAP: {
        bool strkeys = true;
        for (size_t i = 0; i < v->u.map.len; i++)
            if (!v->u.map.keys[i] || v->u.map.keys[i]->type != CF_STRING) strkeys = false;
        cf_buf_append_byte(b, strkeys ? '{' : '[');
        for (size_t i = 0; i < v->u.map.len; i++) {
            if (i) cf_buf_append_byte(b, ',');
            if (strkeys) {
                json_val(b, v->u.map.keys[i]);
                cf_buf_append_byte(b, ':');
                json_val(b, v->u.map.vals[i]);
            } else {
                cf_buf_append_byte(b, '[');
                json_val(b, v->u.map.keys[i]);
                cf_buf_append_byte(b, ',');
                json_val(b, v->u.map.vals[i]);
                cf_buf_append_byte(b, ']');
            }
        }
        cf_buf_append_byte(b, strkeys ? '}' : ']');
        break;
    }
    case CF_STRUCT: {
        const cf_schema *s = v->u.st.schema;
        cf_buf_append_byte(b, '{');
        for (size_t i = 0; i < s->n_fields; i++) {
            if (i) cf_buf_append_byte(b, ',');
            json_str(b, s->fields[i].name, strlen(s->fields[i].name));
            cf_buf_append_byte(b, ':');
            json_val(b, v->u.st.fields[i]);
        }
        cf_buf_append_byte(b, '}');
        break;
    }
    }
}

/* ---------------- cells ---------------- */

static const char *arena_text(cf_arena *a, const char *p, size_t n) { return cf_arena_strndup(a, p, n); }

cf_code sk_cell_from_value(sk_ctx *c, const cf_schema *fs, const cf_value *v, cf_col_type ct, cf_cell *cell,
                           cf_err *err) {
    memset(cell, 0, sizeof *cell);
    if (!v) return CF_OK;
    char tmp[64];
    int k;
    switch (ct) {
    case CF_COL_BOOL:
        if (v->type != CF_BOOLEAN) break;
        cell->kind = CF_CELL_INT, cell->u.i = v->u.b;
        return CF_OK;
    case CF_COL_INT16:
    case CF_COL_INT32:
    case CF_COL_INT64:
        if (v->type > CF_INT64) break;
        cell->kind = CF_CELL_INT, cell->u.i = v->u.i;
        return CF_OK;
    case CF_COL_FLOAT32:
    case CF_COL_FLOAT64:
        if (v->type != CF_FLOAT32 && v->type != CF_FLOAT64) break;
        cell->kind = CF_CELL_REAL, cell->u.f = v->u.f;
        return CF_OK;
    case CF_COL_TEXT:
        if (v->type != CF_STRING) break;
        if (v->u.s.len == sizeof UNAVAILABLE - 1 && memcmp(v->u.s.ptr, UNAVAILABLE, v->u.s.len) == 0) {
            cell->kind = CF_CELL_KEEP;
            return CF_OK;
        }
        cell->kind = CF_CELL_TEXT, cell->len = (uint32_t)v->u.s.len;
        cell->u.p = c->copy ? arena_text(c->arena, v->u.s.ptr, v->u.s.len) : v->u.s.ptr;
        return CF_OK;
    case CF_COL_BYTES:
        if (v->type != CF_BYTES) break;
        if (v->u.s.len == sizeof UNAVAILABLE - 1 && memcmp(v->u.s.ptr, UNAVAILABLE, v->u.s.len) == 0) {
            cell->kind = CF_CELL_KEEP;
            return CF_OK;
        }
        cell->kind = CF_CELL_BLOB, cell->len = (uint32_t)v->u.s.len;
        cell->u.p = c->copy ? arena_text(c->arena, v->u.s.ptr, v->u.s.len) : v->u.s.ptr;
        return CF_OK;
    case CF_COL_NUMERIC: {
        int32_t scale;
        if (v->type != CF_BYTES || !cf_schema_decimal_scale(fs, &scale)) break;
        char *d = cf_decimal_to_string((const uint8_t *)v->u.s.ptr, v->u.s.len, scale);
        cell->kind = CF_CELL_TEXT, cell->len = (uint32_t)strlen(d);
        cell->u.p = arena_text(c->arena, d, cell->len);
        free(d);
        return CF_OK;
    }
    case CF_COL_DATE:
        if (v->type > CF_INT64) break;
        k = fmt_date(tmp, sizeof tmp, v->u.i);
        goto text;
    case CF_COL_TIME:
        if (v->type > CF_INT64) break;
        k = fmt_time(tmp, sizeof tmp, v->u.i);
        goto text;
    case CF_COL_TIMESTAMP:
        if (v->type > CF_INT64) break;
        k = fmt_ts(tmp, sizeof tmp, v->u.i);
        goto text;
    case CF_COL_JSON: {
        cf_buf b = CF_BUF_INIT;
        json_val(&b, v);
        cell->kind = CF_CELL_TEXT, cell->len = (uint32_t)b.len;
        cell->u.p = arena_text(c->arena, b.data, b.len);
        cf_buf_free(&b);
        return CF_OK;
    }
    }
    return cf_err_set(err, CF_ERR_SCHEMA, "value of type %s does not fit a %s column", cf_type_name(v->type),
                      cf_col_type_name(ct));
text:
    cell->kind = CF_CELL_TEXT, cell->len = (uint32_t)k;
    cell->u.p = arena_text(c->arena, tmp, (size_t)k);
    return CF_OK;
}

/* The sequence field's value as an unsigned number. */
static cf_code seq_value(const cf_schema *fs, const cf_value *v, uint64_t *out, cf_err *err) {
    if (v->type <= CF_INT64) {
        if (v->u.i < 0) {
            cf_err_set(err, CF_ERR_INVALID, "sequence field value %" PRId64 " is negative", v->u.i);
            cf_err_detail(err, "BigQuery sequence sections are unsigned; negative numbers would order wrongly");
            return CF_ERR_INVALID;
        }
        *out = (uint64_t)v->u.i;
        return CF_OK;
    }
    if (v->type == CF_STRING) {
        int64_t us;
        if (parse_iso_micros(v->u.s.ptr, &us) && us >= 0) {
            *out = (uint64_t)us;
            return CF_OK;
        }
        cf_err_set(err, CF_ERR_INVALID, "sequence field value \"%s\" is not an ISO-8601 timestamp", v->u.s.ptr);
        cf_err_hint(err, "cdcChangeSequenceNumberField must name an integer or timestamp field");
        return CF_ERR_INVALID;
    }
    (void)fs;
    cf_err_set(err, CF_ERR_INVALID, "sequence field has type %s", cf_type_name(v->type));
    cf_err_hint(err, "cdcChangeSequenceNumberField must name an integer or timestamp field");
    return CF_ERR_INVALID;
}

/* ---------------- record classification ---------------- */

static const cf_value *struct_field(const cf_value *st, const char *name, const cf_schema **fs) {
    const cf_field *f = cf_schema_field(st->u.st.schema, name);
    if (!f) return NULL;
    if (fs) *fs = f->schema;
    return st->u.st.fields[f->index];
}

static bool is_envelope(const cf_schema *s) {
    if (!s || s->type != CF_STRUCT) return false;
    const cf_field *op = cf_schema_field(s, "op");
    const cf_field *before = cf_schema_field(s, "before");
    const cf_field *after = cf_schema_field(s, "after");
    return op && op->schema->type == CF_STRING && (before || after) &&
           (!before || before->schema->type == CF_STRUCT) && (!after || after->schema->type == CF_STRUCT);
}

cf_code sk_classify(const cf_sink_options *o, const cf_record *rec, sk_class *out, cf_err *err) {
    memset(out, 0, sizeof *out);
    if (!rec->value) {
        out->op = CF_CHANGE_DELETE;
        out->why = rec->value_schema ? "payload null" : "tombstone";
        out->tombstone = rec->value_schema == NULL;
        return CF_OK;
    }
    const cf_value *v = rec->value;
    if (v->type != CF_STRUCT) {
        cf_err_set(err, CF_ERR_SCHEMA, "record value is a %s, not a struct", cf_type_name(v->type));
        cf_err_detail(err, "the CDC sink needs the row as a struct with a schema");
        cf_err_hint(err, "use value.converter.schemas.enable=true (JsonConverter) or the Avro converter, and "
                         "ExtractNewRecordState for Debezium envelopes");
        return CF_ERR_SCHEMA;
    }
    const cf_schema *vs = v->u.st.schema;
    if (is_envelope(vs)) {
        const cf_schema *fs = NULL;
        const cf_value *op = struct_field(v, "op", &fs);
        const char *ops = op && op->type == CF_STRING ? op->u.s.ptr : "";
        const cf_schema *bs = NULL, *as = NULL;
        const cf_value *before = struct_field(v, "before", &bs);
        const cf_value *after = struct_field(v, "after", &as);
        if (strcmp(ops, "d") == 0) {
            out->op = CF_CHANGE_DELETE, out->why = "op d", out->image = before;
            return CF_OK;
        }
        if (strcmp(ops, "c") == 0 || strcmp(ops, "u") == 0 || strcmp(ops, "r") == 0) {
            if (!after) {
                cf_err_set(err, CF_ERR_SCHEMA, "Debezium envelope with op \"%s\" has no \"after\" image", ops);
                return CF_ERR_SCHEMA;
            }
            out->op = CF_CHANGE_UPSERT, out->image = after;
            out->why = ops[0] == 'c' ? "op c" : ops[0] == 'u' ? "op u" : "op r";
            return CF_OK;
        }
        if (strcmp(ops, "t") == 0 || strcmp(ops, "m") == 0) {
            out->skip = true, out->why = ops[0] == 't' ? "op t (truncate)" : "op m (message)";
            return CF_OK;
        }
        cf_err_set(err, CF_ERR_SCHEMA, "Debezium envelope has unknown op \"%s\"", ops);
        cf_err_where(err, "op");
        cf_err_detail(err, "known ops: c, u, r (upsert), d (delete), t, m (skipped)");
        return CF_ERR_SCHEMA;
    }
    out->image = v;
    out->op = CF_CHANGE_UPSERT, out->why = "upsert";
    const cf_schema *ds = NULL;
    /* the Debezium JDBC sink deletes only for a null value: __deleted is a column */
    const cf_value *del = o->metadata_columns ? NULL : struct_field(v, "__deleted", &ds);
    if (del) {
        if (del->type == CF_BOOLEAN) {
            if (del->u.b) out->op = CF_CHANGE_DELETE, out->why = "__deleted";
        } else if (del->type == CF_STRING) {
            if (strcmp(del->u.s.ptr, "true") == 0) out->op = CF_CHANGE_DELETE, out->why = "__deleted";
            else if (strcmp(del->u.s.ptr, "false") != 0) {
                cf_err_set(err, CF_ERR_SCHEMA, "__deleted is \"%s\", expected \"true\" or \"false\"", del->u.s.ptr);
                cf_err_where(err, "__deleted");
                cf_err_detail(err, "ExtractNewRecordState writes the strings \"true\" and \"false\"");
                return CF_ERR_SCHEMA;
            }
        } else {
            cf_err_set(err, CF_ERR_SCHEMA, "__deleted has type %s, expected string or boolean",
                       cf_type_name(del->type));
            cf_err_where(err, "__deleted");
            return CF_ERR_SCHEMA;
        }
    }
    return CF_OK;
}

/* Sequence number of a classified record. Sets *skip for a seq_field-mode
 * tombstone. */
cf_code sk_sequence(const cf_sink_options *o, const cf_record *rec, const sk_class *k, cf_seq *seq, bool *skip,
                    bool *unknown, cf_err *err) {
    *skip = false;
    if (unknown) *unknown = false;
    memset(seq, 0, sizeof *seq);
    if (rec->offset < 0) {
        cf_err_set(err, CF_ERR_INVALID, "record has no Kafka offset (%" PRId64 ")", rec->offset);
        cf_err_detail(err, "the offset is the change sequence number, or its tie-breaker section");
        return CF_ERR_INVALID;
    }
    if (!o->seq_field || !*o->seq_field) {
        seq->n = 1, seq->s[0] = (uint64_t)rec->offset;
        return CF_OK;
    }
    const cf_schema *fs = NULL;
    const cf_value *fv = NULL;
    if (k->image) fv = struct_field(k->image, o->seq_field, &fs);
    if (!fv && rec->key && rec->key->type == CF_STRUCT) fv = struct_field(rec->key, o->seq_field, &fs);
    /* A delete of a table with REPLICA IDENTITY DEFAULT carries only the key
     * in its before image: Debezium leaves the other columns null, or gives
     * the required ones their type's default (0, ""). Ordered by that, the
     * delete would sort before the row's last version and the row would
     * stay: the engine takes the field section from the key's last version. */
    bool defaulted = fv && ((fv->type <= CF_INT64 && fv->u.i == 0) || (fv->type == CF_STRING && fv->u.s.len == 0));
    if (unknown && k->op == CF_CHANGE_DELETE && !k->tombstone && (!fv || defaulted)) {
        *unknown = true;
        seq->n = 2, seq->s[0] = 0, seq->s[1] = (uint64_t)rec->offset;
        return CF_OK;
    }
    if (!fv) {
        if (k->tombstone) {
            *skip = true;
            return CF_OK;
        }
        cf_err_set(err, CF_ERR_INVALID, "record (%s) has no value for the sequence field \"%s\"", k->why,
                   o->seq_field);
        cf_err_where(err, "%s", o->seq_field);
        cf_err_detail(err, "with cdcChangeSequenceNumberField every upsert and delete must carry the field");
        cf_err_hint(err, "deletes must be rewritten with their before image: ExtractNewRecordState "
                         "delete.tombstone.handling.mode=rewrite (or delete.handling.mode=rewrite) and "
                         "REPLICA IDENTITY FULL on the source table");
        return CF_ERR_INVALID;
    }
    cf_code rc = seq_value(fs, fv, &seq->s[0], err);
    if (rc) {
        cf_err_where(err, "%s", o->seq_field);
        return rc;
    }
    seq->n = 2, seq->s[1] = (uint64_t)rec->offset;
    return CF_OK;
}

cf_code cf_sink_route_one(const cf_sink_options *opts, const cf_record *rec, cf_route_info *out, cf_err *err) {
    sk_class k;
    memset(out, 0, sizeof *out);
    cf_code rc = sk_classify(opts, rec, &k, err);
    if (rc) return rc;
    out->op = k.op, out->why = k.why, out->skip = k.skip;
    if (k.skip) return CF_OK;
    bool skip;
    rc = sk_sequence(opts, rec, &k, &out->seq, &skip, NULL, err);
    if (rc) return rc;
    if (skip) out->skip = true, out->why = "tombstone (sequence field mode)";
    return CF_OK;
}
