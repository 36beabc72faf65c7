/*
 * cqlvalue.c - CQL types as Kafka Connect schemas, serialized CQL values as
 * Connect values (the TYPES table of cdcflow/sidecar_events.h).
 *
 * Values are read as Cassandra serializes them (db/marshal: fixed-width
 * big-endian numbers, varint/decimal as two's complement, collections and
 * tuples inside frozen values as int32 counts and int32-length elements,
 * vectors as fixed-width elements or unsigned-vint-length ones). Every
 * length is checked against what is left; a value that does not fit its
 * type is CF_ERR_SCHEMA naming the type, never a read past the end.
 */
#include <openssl/bn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/sidecar_events.h"
#include "sidecar_internal.h"

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* ---------------- names ---------------- */

void cf_sc_avro_name(const char *in, cf_buf *out) {
    size_t start = out->len;
    for (const unsigned char *s = (const unsigned char *)in; *s; s++) {
        bool ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || (*s >= '0' && *s <= '9');
        cf_buf_append_byte(out, ok ? *s : '_');
    }
    if (out->len == start || (out->data[start] >= '0' && out->data[start] <= '9')) {
        /* Avro names start with a letter or '_' */
        cf_buf_append_byte(out, 0);
        memmove(out->data + start + 1, out->data + start, out->len - start - 1);
        out->data[start] = '_';
        out->data[out->len] = 0;
    }
}

/* ---------------- schemas ---------------- */

static cf_schema *named_struct(cf_sc_events *ev, const char *ks, const char *name) {
    cf_schema *s = cf_schema_new_struct();
    cf_buf b = CF_BUF_INIT;
    cf_buf_append_str(&b, cf_sc_events_ns(ev));
    cf_buf_append_byte(&b, '.');
    cf_sc_avro_name(ks, &b);
    cf_buf_append_byte(&b, '.');
    cf_sc_avro_name(name, &b);
    cf_schema_set_name(s, b.data);
    cf_buf_free(&b);
    return s;
}

/* A struct field named after a CQL identifier: the Avro-valid name, the real
 * one in the field schema's "cassandra.column" parameter when they differ. */
void cf_sc_add_named_field(cf_schema *st, const char *cql_name, cf_schema *fs, cf_buf *scratch) {
    cf_buf_reset(scratch);
    cf_sc_avro_name(cql_name, scratch);
    size_t base_len = scratch->len;
    for (int k = 2; cf_schema_field(st, scratch->data); k++) { /* clash: "_2", "_3", ... */
        scratch->len = base_len;
        scratch->data[base_len] = 0;
        cf_buf_printf(scratch, "_%d", k);
    }
    if (strcmp(scratch->data, cql_name) != 0) cf_schema_set_param(fs, "cassandra.column", cql_name);
    cf_schema_add_field(st, scratch->data, fs, NULL);
}

cf_schema *cf_sc_cql_schema(cf_sc_events *ev, const cf_cql_type *t, bool optional) {
    cf_schema *s = NULL;
    switch (t->kind) {
    case CF_CQL_ASCII: case CF_CQL_TEXT: case CF_CQL_UUID: case CF_CQL_TIMEUUID: case CF_CQL_INET:
        s = cf_schema_new(CF_STRING);
        break;
    case CF_CQL_BIGINT: case CF_CQL_COUNTER: case CF_CQL_TIME: s = cf_schema_new(CF_INT64); break;
    case CF_CQL_BLOB: case CF_CQL_DURATION: case CF_CQL_CUSTOM: case CF_CQL_EMPTY: s = cf_schema_new(CF_BYTES); break;
    case CF_CQL_BOOLEAN: s = cf_schema_new(CF_BOOLEAN); break;
    case CF_CQL_DATE: s = cf_schema_date(); break;
    case CF_CQL_TIMESTAMP: s = cf_schema_timestamp(); break;
    case CF_CQL_DECIMAL:
        s = cf_sc_events_decimal_string(ev) ? cf_schema_new(CF_STRING) : cf_schema_decimal(cf_sc_events_decimal_scale(ev));
        break;
    case CF_CQL_VARINT: s = cf_schema_decimal(0); break;
    case CF_CQL_DOUBLE: s = cf_schema_new(CF_FLOAT64); break;
    case CF_CQL_FLOAT: s = cf_schema_new(CF_FLOAT32); break;
    case CF_CQL_INT: s = cf_schema_new(CF_INT32); break;
    case CF_CQL_SMALLINT: s = cf_schema_new(CF_INT16); break;
    case CF_CQL_TINYINT: s = cf_schema_new(CF_INT8); break;
    case CF_CQL_LIST: case CF_CQL_SET: case CF_CQL_VECTOR:
        s = cf_schema_new_array(cf_sc_cql_schema(ev, t->params[0], false));
        break;
    case CF_CQL_MAP:
        /* a non-frozen map's element deletions carry null values */
        s = cf_schema_new_map(cf_sc_cql_schema(ev, t->params[0], false),
                              cf_sc_cql_schema(ev, t->params[1], !t->frozen));
        break;
    case CF_CQL_TUPLE: {
        s = cf_schema_new_struct();
        for (size_t i = 0; i < t->n_params; i++) {
            char f[24];
            snprintf(f, sizeof f, "f%zu", i);
            cf_schema_add_field(s, f, cf_sc_cql_schema(ev, t->params[i], true), NULL);
        }
        break;
    }
    case CF_CQL_UDT: {
        s = named_struct(ev, t->keyspace ? t->keyspace : "", t->name ? t->name : "udt");
        cf_buf scratch = CF_BUF_INIT;
        for (size_t i = 0; i < t->n_params; i++)
            cf_sc_add_named_field(s, t->field_names[i], cf_sc_cql_schema(ev, t->params[i], true), &scratch);
        cf_buf_free(&scratch);
        break;
    }
    }
    if (!s) s = cf_schema_new(CF_BYTES);
    cf_schema_set_optional(s, optional);
    return s;
}

/* ---------------- values ---------------- */

static cf_code bad(cf_err *err, const cf_cql_type *t, size_t len, const char *why) {
    char *ts = cf_cql_type_to_string(t);
    cf_err_set(err, CF_ERR_SCHEMA, "value does not decode as %s: %s", ts, why);
    cf_err_detail(err, "%zu bytes", len);
    cf_err_hint(err, "The schema given does not match the one the data was written with: refresh it.");
    free(ts);
    return CF_ERR_SCHEMA;
}


/* Two's complement big-endian bytes -> BIGNUM. */
static BIGNUM *bn_from_twos(const uint8_t *p, size_t n) {
    if (n == 0) return BN_new();
    bool neg = p[0] & 0x80;
    BIGNUM *b;
    if (!neg) {
        b = BN_bin2bn(p, (int)n, NULL);
    } else {
        uint8_t *m = cf_xmalloc(n);
        int carry = 1;
        for (size_t i = n; i-- > 0;) {
            int v = (uint8_t)~p[i] + carry;
            m[i] = (uint8_t)v;
            carry = v >> 8;
        }
        b = BN_bin2bn(m, (int)n, NULL);
        BN_set_negative(b, 1);
        free(m);
    }
    return b;
}

/* BIGNUM -> minimal two's complement big-endian bytes (malloc'd). */
static uint8_t *bn_to_twos(const BIGNUM *b, size_t *len) {
    int n = BN_num_bytes(b);
    uint8_t *m = cf_xcalloc((size_t)n + 1, 1);
    BN_bn2bin(b, m + 1);
    size_t l = (size_t)n + 1;
    if (BN_is_negative(b)) {
        int carry = 1;
        for (size_t i = l; i-- > 0;) {
            int v = (uint8_t)~m[i] + carry;
            m[i] = (uint8_t)v;
            carry = v >> 8;
        }
    }
    /* drop redundant sign bytes */
    size_t s = 0;
    while (s + 1 < l && ((m[s] == 0 && !(m[s + 1] & 0x80)) || (m[s] == 0xff && (m[s + 1] & 0x80)))) s++;
    memmove(m, m + s, l - s);
    *len = l - s;
    return m;
}

/* Cassandra decimal (int32 scale + varint unscaled) rescaled to `scale`,
 * exactly. */
static cf_code decimal_value(const cf_cql_type *t, const uint8_t *p, size_t n, int32_t scale, cf_value **out,
                             cf_err *err) {
    if (n < 4) return bad(err, t, n, "shorter than its scale");
    int32_t vs = (int32_t)be32(p);
    const uint8_t *u = p + 4;
    size_t un = n - 4;
    if (vs == scale) {
        *out = un ? cf_value_bytes(u, un) : cf_value_bytes("\0", 1);
        return CF_OK;
    }
    int64_t diff = (int64_t)scale - vs;
    if (diff > 4000 || diff < -4000) return bad(err, t, n, "scale too far from decimal.scale to rescale");
    BIGNUM *b = bn_from_twos(u, un);
    BN_CTX *bc = BN_CTX_new();
    cf_code rc = CF_OK;
    if (diff > 0) {
        for (int64_t i = 0; i < diff; i++) BN_mul_word(b, 10);
    } else {
        for (int64_t i = 0; i < -diff && !BN_is_zero(b); i++) {
            BN_ULONG r = BN_div_word(b, 10);
            if (r != 0) {
                cf_buf tb = CF_BUF_INIT;
                cf_cass_value_to_json(t, p, n, &tb);
                cf_err_set(err, CF_ERR_SCHEMA, "decimal %s has more than %d digits after the point", tb.data ? tb.data : "?",
                           scale);
                cf_err_detail(err, "its scale is %d; decimal.scale is %d and rounding would change it", vs, scale);
                cf_err_hint(err, "Raise decimal.scale, or set decimal.handling.mode=string.");
                cf_buf_free(&tb);
                rc = CF_ERR_SCHEMA;
                break;
            }
        }
    }
    if (rc == CF_OK) {
        size_t l;
        uint8_t *m = bn_to_twos(b, &l);
        *out = cf_value_bytes_take(m, l);
    }
    BN_free(b);
    BN_CTX_free(bc);
    return rc;
}


static cf_code to_value(cf_sc_events *ev, const cf_cql_type *t, const cf_schema *s, const uint8_t *p, size_t n,
                        cf_value **out, int depth, cf_err *err);

/* The children of a collection-like value, into a new container. */
static cf_code frozen_collection(cf_sc_events *ev, const cf_cql_type *t, const cf_schema *s, const uint8_t *p,
                                 size_t n, cf_value **out, int depth, cf_err *err) {
    const uint8_t *q = p, *end = p + n;
    if (n < 4) return bad(err, t, n, "shorter than its element count");
    int32_t cnt = (int32_t)be32(q);
    q += 4;
    bool map = t->kind == CF_CQL_MAP;
    if (cnt < 0 || (size_t)cnt > n / (map ? 8 : 4)) return bad(err, t, n, "impossible element count");
    cf_value *c = map ? cf_value_map() : cf_value_array();
    for (int32_t i = 0; i < cnt; i++) {
        const uint8_t *ep;
        size_t en;
        cf_value *k = NULL, *v = NULL;
        if (!cf_cass_read_element(&q, end, &ep, &en)) goto fail;
        cf_code rc = ep ? to_value(ev, t->params[0], map ? s->key_schema : s->value_schema, ep, en, &k, depth + 1, err)
                        : CF_OK;
        if (rc) {
            cf_value_destroy(c);
            return rc;
        }
        if (map) {
            if (!cf_cass_read_element(&q, end, &ep, &en)) {
                cf_value_destroy(k);
                goto fail;
            }
            rc = ep ? to_value(ev, t->params[1], s->value_schema, ep, en, &v, depth + 1, err) : CF_OK;
            if (rc) {
                cf_value_destroy(k);
                cf_value_destroy(c);
                return rc;
            }
            cf_value_map_put(c, k, v);
        } else {
            cf_value_array_push(c, k);
        }
    }
    if (q != end) {
        cf_value_destroy(c);
        return bad(err, t, n, "bytes after the last element");
    }
    *out = c;
    return CF_OK;
fail:
    cf_value_destroy(c);
    return bad(err, t, n, "element longer than the value");
}

/* s: the Connect schema at this place (cf_sc_cql_schema of t), whose
 * pointers struct values take, so that encoders find them equal at once. */
static cf_code to_value(cf_sc_events *ev, const cf_cql_type *t, const cf_schema *s, const uint8_t *p, size_t n,
                        cf_value **out, int depth, cf_err *err) {
    *out = NULL;
    if (depth > 64) return bad(err, t, n, "nested too deep");
    bool text = t->kind == CF_CQL_ASCII || t->kind == CF_CQL_TEXT;
    if (n == 0 && !text && t->kind != CF_CQL_BLOB && t->kind != CF_CQL_CUSTOM && t->kind != CF_CQL_EMPTY)
        return CF_OK; /* Cassandra deserializes an empty value of these types as null */
    switch (t->kind) {
    case CF_CQL_ASCII: case CF_CQL_TEXT: *out = cf_value_string_n((const char *)p, n); return CF_OK;
    case CF_CQL_BLOB: case CF_CQL_CUSTOM: case CF_CQL_EMPTY: case CF_CQL_DURATION:
        *out = cf_value_bytes(p, n);
        return CF_OK;
    case CF_CQL_BOOLEAN:
        if (n != 1) return bad(err, t, n, "not 1 byte");
        *out = cf_value_bool(p[0] != 0);
        return CF_OK;
    case CF_CQL_TINYINT:
        if (n != 1) return bad(err, t, n, "not 1 byte");
        *out = cf_value_int8((int8_t)p[0]);
        return CF_OK;
    case CF_CQL_SMALLINT:
        if (n != 2) return bad(err, t, n, "not 2 bytes");
        *out = cf_value_int16((int16_t)(p[0] << 8 | p[1]));
        return CF_OK;
    case CF_CQL_INT:
        if (n != 4) return bad(err, t, n, "not 4 bytes");
        *out = cf_value_int32((int32_t)be32(p));
        return CF_OK;
    case CF_CQL_DATE:
        if (n != 4) return bad(err, t, n, "not 4 bytes");
        *out = cf_value_int32((int32_t)((int64_t)be32(p) - 2147483648LL)); /* unsigned, epoch at 2^31 */
        return CF_OK;
    case CF_CQL_BIGINT: case CF_CQL_TIMESTAMP: case CF_CQL_TIME:
        if (n != 8) return bad(err, t, n, "not 8 bytes");
        *out = cf_value_int64((int64_t)be64(p));
        return CF_OK;
    case CF_CQL_COUNTER: {
        if (n == 8) {
            *out = cf_value_int64((int64_t)be64(p));
            return CF_OK;
        }
        /* a CounterContext: int16 header count, 2 bytes each, then 32-byte shards; the count is the sum */
        if (n < 2) return bad(err, t, n, "shorter than a counter context");
        int16_t hs = (int16_t)(p[0] << 8 | p[1]);
        size_t off = 2 + (size_t)abs(hs) * 2;
        if (off > n || (n - off) % 32) return bad(err, t, n, "not a counter context");
        int64_t total = 0;
        for (; off < n; off += 32) total += (int64_t)be64(p + off + 24);
        *out = cf_value_int64(total);
        return CF_OK;
    }
    case CF_CQL_FLOAT: {
        if (n != 4) return bad(err, t, n, "not 4 bytes");
        uint32_t u = be32(p);
        float f;
        memcpy(&f, &u, 4);
        *out = cf_value_float32(f);
        return CF_OK;
    }
    case CF_CQL_DOUBLE: {
        if (n != 8) return bad(err, t, n, "not 8 bytes");
        uint64_t u = be64(p);
        double d;
        memcpy(&d, &u, 8);
        *out = cf_value_float64(d);
        return CF_OK;
    }
    case CF_CQL_UUID: case CF_CQL_TIMEUUID: {
        if (n != 16) return bad(err, t, n, "not 16 bytes");
        char s[37];
        cf_cass_uuid_format(p, s);
        *out = cf_value_string_n(s, 36);
        return CF_OK;
    }
    case CF_CQL_INET: {
        if (n != 4 && n != 16) return bad(err, t, n, "not 4 or 16 bytes");
        /* the text Cassandra's SELECT JSON gives (InetAddress.getHostAddress) */
        cf_buf b = CF_BUF_INIT;
        cf_cass_value_to_json(t, p, n, &b);
        *out = b.len >= 2 ? cf_value_string_n(b.data + 1, b.len - 2) : cf_value_string("");
        cf_buf_free(&b);
        return CF_OK;
    }
    case CF_CQL_VARINT: *out = cf_value_bytes(p, n); return CF_OK; /* already Decimal(0)'s unscaled form */
    case CF_CQL_DECIMAL:
        if (cf_sc_events_decimal_string(ev)) {
            cf_buf b = CF_BUF_INIT;
            if (n < 4 || cf_cass_value_to_json(t, p, n, &b) != CF_OK) {
                cf_buf_free(&b);
                return bad(err, t, n, "not a decimal");
            }
            *out = cf_value_string_n(b.data, b.len);
            cf_buf_free(&b);
            return CF_OK;
        }
        return decimal_value(t, p, n, cf_sc_events_decimal_scale(ev), out, err);
    case CF_CQL_LIST: case CF_CQL_SET: case CF_CQL_MAP: return frozen_collection(ev, t, s, p, n, out, depth, err);
    case CF_CQL_TUPLE: case CF_CQL_UDT: {
        cf_value *st = cf_value_struct(cf_schema_ref((cf_schema *)s));
        const uint8_t *q = p, *end = p + n;
        for (size_t i = 0; i < t->n_params && q < end; i++) { /* fields added later by ALTER TYPE: absent = null */
            const uint8_t *ep;
            size_t en;
            if (!cf_cass_read_element(&q, end, &ep, &en)) {
                cf_value_destroy(st);
                return bad(err, t, n, "field longer than the value");
            }
            cf_value *fv = NULL;
            cf_code rc = ep ? to_value(ev, t->params[i], s->fields[i].schema, ep, en, &fv, depth + 1, err) : CF_OK;
            if (rc) {
                cf_value_destroy(st);
                return rc;
            }
            cf_value_struct_set_index(st, i, fv);
        }
        if (q != end) {
            cf_value_destroy(st);
            return bad(err, t, n, "bytes after the last field");
        }
        *out = st;
        return CF_OK;
    }
    case CF_CQL_VECTOR: {
        const cf_cql_type *et = t->params[0];
        int32_t fixed = cf_cql_type_fixed_length(et);
        const uint8_t *q = p, *end = p + n;
        cf_value *a = cf_value_array();
        for (int32_t i = 0; i < t->dimension; i++) {
            size_t en;
            if (fixed >= 0) {
                en = (size_t)fixed;
            } else {
                uint64_t v;
                if (!cf_cass_read_uvint(&q, end, &v) || v > (uint64_t)(end - q)) {
                    cf_value_destroy(a);
                    return bad(err, t, n, "element longer than the value");
                }
                en = (size_t)v;
            }
            if ((size_t)(end - q) < en) {
                cf_value_destroy(a);
                return bad(err, t, n, "shorter than its dimension");
            }
            cf_value *e = NULL;
            cf_code rc = to_value(ev, et, s->value_schema, q, en, &e, depth + 1, err);
            if (rc) {
                cf_value_destroy(a);
                return rc;
            }
            cf_value_array_push(a, e);
            q += en;
        }
        if (q != end) {
            cf_value_destroy(a);
            return bad(err, t, n, "bytes after the last element");
        }
        *out = a;
        return CF_OK;
    }
    }
    return bad(err, t, n, "unknown type");
}

cf_code cf_sc_cql_to_value(cf_sc_events *ev, const cf_cql_type *t, const cf_schema *s, const uint8_t *p, size_t len,
                           cf_value **out, cf_err *err) {
    return to_value(ev, t, s, p, len, out, 0, err);
}
