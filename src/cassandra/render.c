/*
 * render.c - Cassandra values and partition updates as JSON text.
 *
 * Values are rendered exactly as Cassandra's AbstractType.toJSONString does
 * for `SELECT JSON` (the db/marshal type classes of cassandra 5.0):
 *   ascii/text     "..." (JsonUtils.quoteAsJsonString: \" \\ \b \f \n \r \t, other controls \u00XX)
 *   int/bigint/smallint/tinyint/varint/counter   decimal digits
 *   decimal        BigDecimal.toString() (E notation when Java uses it)
 *   float/double   Float/Double.toString(); NaN and infinities -> null
 *   boolean        true / false
 *   blob           "0x<hex>"
 *   timestamp      "yyyy-MM-dd HH:mm:ss.SSSZ" in UTC
 *   date           "yyyy-MM-dd"; time "HH:mm:ss.nnnnnnnnn"
 *   uuid/timeuuid  "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
 *   inet           "1.2.3.4" / "0:0:0:0:0:0:0:1" (InetAddress.getHostAddress)
 *   duration       "1y2mo3d4h5m6s7ms8us9ns" (cql3.Duration.toString)
 *   list/set/tuple/vector  [a, b]   map {"k": v}   UDT {"f": v}
 *   an empty value of a non-text type (Cassandra's deserialize gives null) -> ""
 * Known differences: timestamps and dates before 1582-10-15 are rendered in
 * the proleptic Gregorian calendar (Java's SimpleDateFormat switches to the
 * Julian calendar); floating point uses the shortest round-trip digits,
 * which Java's pre-19 Double.toString does not always produce.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/text.h"
#include "cdcflow/cassandra_mutation.h"

static const char HEX[] = "0123456789abcdef";

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* JSON string body with Jackson's escaping; invalid UTF-8 becomes U+FFFD as
 * Java's decoder does, so the output is always valid JSON. */
static void json_escape(cf_buf *b, const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t ch = p[i];
        if (ch < 0x80) {
            switch (ch) {
            case '"': cf_buf_append_str(b, "\\\""); break;
            case '\\': cf_buf_append_str(b, "\\\\"); break;
            case '\b': cf_buf_append_str(b, "\\b"); break;
            case '\f': cf_buf_append_str(b, "\\f"); break;
            case '\n': cf_buf_append_str(b, "\\n"); break;
            case '\r': cf_buf_append_str(b, "\\r"); break;
            case '\t': cf_buf_append_str(b, "\\t"); break;
            default:
                if (ch < 0x20)
                    cf_buf_printf(b, "\\u%04x", ch);
                else
                    cf_buf_append_byte(b, ch);
            }
            i++;
            continue;
        }
        size_t len = ch >= 0xf0 && ch <= 0xf4 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc2 && ch <= 0xdf ? 2 : 0;
        bool ok = len && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80) ok = false;
        if (ok && len == 3) {
            uint32_t cp = (uint32_t)(ch & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6 | (p[i + 2] & 0x3f);
            if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) ok = false;
        } else if (ok && len == 4) {
            uint32_t cp = (uint32_t)(ch & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3f) << 12 |
                          (uint32_t)(p[i + 2] & 0x3f) << 6 | (p[i + 3] & 0x3f);
            if (cp < 0x10000 || cp > 0x10ffff) ok = false;
        }
        if (ok) {
            cf_buf_append(b, p + i, len);
            i += len;
        } else {
            cf_buf_append_str(b, "\xef\xbf\xbd");
            i++;
        }
    }
}

static void json_str(cf_buf *b, const char *s, size_t n) {
    cf_buf_append_byte(b, '"');
    json_escape(b, (const uint8_t *)s, n);
    cf_buf_append_byte(b, '"');
}

static void blob(cf_buf *b, const uint8_t *p, size_t n) {
    cf_buf_append_str(b, "\"0x");
    cf_buf_reserve(b, n * 2);
    for (size_t i = 0; i < n; i++) {
        b->data[b->len++] = HEX[p[i] >> 4];
        b->data[b->len++] = HEX[p[i] & 15];
    }
    b->data[b->len] = 0;
    cf_buf_append_byte(b, '"');
}

static void uuid(cf_buf *b, const uint8_t *p) {
    char s[37];
    cf_cass_uuid_format(p, s);
    cf_buf_printf(b, "\"%s\"", s);
}

/* Big-endian two's complement integer -> decimal digits (any length). */
static void bigint_digits(cf_buf *b, const uint8_t *p, size_t n) {
    if (n == 0) {
        cf_buf_append_byte(b, '0');
        return;
    }
    bool neg = p[0] & 0x80;
    uint8_t *mag = cf_xmalloc(n);
    memcpy(mag, p, n);
    if (neg) { /* negate: invert and add one */
        for (size_t i = 0; i < n; i++) mag[i] = (uint8_t)~mag[i];
        for (size_t i = n; i-- > 0;)
            if (++mag[i] != 0) break;
    }
    /* repeated division by 10^9 */
    size_t cap = n * 3 + 16, nd = 0;
    char *digits = cf_xmalloc(cap);
    size_t start = 0;
    while (start < n && mag[start] == 0) start++;
    while (start < n) {
        uint64_t rem = 0;
        for (size_t i = start; i < n; i++) {
            uint64_t cur = rem << 8 | mag[i];
            mag[i] = (uint8_t)(cur / 1000000000u);
            rem = cur % 1000000000u;
        }
        while (start < n && mag[start] == 0) start++;
        for (int k = 0; k < 9; k++) {
            digits[nd++] = (char)('0' + rem % 10);
            rem /= 10;
            if (start >= n && rem == 0) break;
        }
    }
    if (nd == 0) digits[nd++] = '0';
    if (neg) cf_buf_append_byte(b, '-');
    cf_buf_reserve(b, nd);
    for (size_t i = nd; i-- > 0;) b->data[b->len++] = digits[i];
    b->data[b->len] = 0;
    free(digits);
    free(mag);
}

/* java.math.BigDecimal.toString() */
static void decimal(cf_buf *b, int32_t scale, const uint8_t *p, size_t n) {
    cf_buf d = CF_BUF_INIT;
    bigint_digits(&d, p, n);
    const char *digits = d.data;
    bool neg = digits[0] == '-';
    if (neg) digits++;
    long nd = (long)strlen(digits);
    long adjusted = -(long)scale + (nd - 1);
    if (neg) cf_buf_append_byte(b, '-');
    if (scale >= 0 && adjusted >= -6) {
        if (scale == 0) {
            cf_buf_append_str(b, digits);
        } else if (nd > scale) {
            cf_buf_append(b, digits, (size_t)(nd - scale));
            cf_buf_append_byte(b, '.');
            cf_buf_append_str(b, digits + nd - scale);
        } else {
            cf_buf_append_str(b, "0.");
            for (long i = 0; i < scale - nd; i++) cf_buf_append_byte(b, '0');
            cf_buf_append_str(b, digits);
        }
    } else {
        cf_buf_append_byte(b, digits[0]);
        if (nd > 1) {
            cf_buf_append_byte(b, '.');
            cf_buf_append_str(b, digits + 1);
        }
        cf_buf_printf(b, "E%s%ld", adjusted > 0 ? "+" : "", adjusted);
    }
    cf_buf_free(&d);
}

/* Java's Float/Double.toString with the shortest round-trip digits. */
static void java_float(cf_buf *b, double v, bool is_float) {
    if (isnan(v) || isinf(v)) { /* JSON has no NaN/Infinity: Cassandra writes null */
        cf_buf_append_str(b, "null");
        return;
    }
    if (v == 0) {
        cf_buf_append_str(b, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    char tmp[64];
    int maxp = is_float ? 9 : 17;
    for (int prec = 1; prec <= maxp; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        if (is_float ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v) break;
    }
    /* tmp = [-]d[.ddd]e[+-]XX */
    char digits[32];
    size_t nd = 0;
    const char *s = tmp;
    bool neg = *s == '-';
    if (neg) s++;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') digits[nd++] = *s;
    int exp = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (neg) cf_buf_append_byte(b, '-');
    double a = fabs(v);
    if (a >= 1e-3 && a < 1e7) {
        if (exp >= 0) {
            for (int i = 0; i <= exp; i++) cf_buf_append_byte(b, (size_t)i < nd ? digits[i] : '0');
            cf_buf_append_byte(b, '.');
            if ((size_t)exp + 1 < nd)
                cf_buf_append(b, digits + exp + 1, nd - (size_t)exp - 1);
            else
                cf_buf_append_byte(b, '0');
        } else {
            cf_buf_append_str(b, "0.");
            for (int i = 0; i < -exp - 1; i++) cf_buf_append_byte(b, '0');
            cf_buf_append(b, digits, nd);
        }
    } else {
        cf_buf_append_byte(b, digits[0]);
        cf_buf_append_byte(b, '.');
        if (nd > 1)
            cf_buf_append(b, digits + 1, nd - 1);
        else
            cf_buf_append_byte(b, '0');
        cf_buf_printf(b, "E%d", exp);
    }
}


static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

static void timestamp(cf_buf *b, int64_t ms) {
    int64_t days = floor_div(ms, 86400000);
    int64_t rem = ms - days * 86400000;
    int64_t y;
    unsigned mo, d;
    cf_civil_from_days(days, &y, &mo, &d);
    cf_buf_printf(b, "\"%04lld-%02u-%02u %02d:%02d:%02d.%03dZ\"", (long long)y, mo, d, (int)(rem / 3600000),
                  (int)(rem / 60000 % 60), (int)(rem / 1000 % 60), (int)(rem % 1000));
}

bool cf_cass_read_uvint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    if (*p >= end) return false;
    uint8_t first = **p;
    int extra = first < 0x80 ? 0 : first == 0xff ? 8 : __builtin_clz((unsigned)(uint8_t)~first) - 24;
    if (end - *p < extra + 1) return false;
    uint64_t v = extra >= 8 ? 0 : (uint64_t)(first & (0xffu >> extra));
    for (int i = 1; i <= extra; i++) v = v << 8 | (*p)[i];
    *p += extra + 1;
    *out = v;
    return true;
}

static bool read_signed_vint(const uint8_t **p, const uint8_t *end, int64_t *out) {
    uint64_t v;
    if (!cf_cass_read_uvint(p, end, &v)) return false;
    *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    return true;
}

/* cql3.Duration.toString */
static int64_t dur_part(cf_buf *b, int64_t dividend, int64_t divisor, const char *unit) {
    if (dividend == 0 || dividend < divisor) return dividend;
    cf_buf_printf(b, "%lld%s", (long long)(dividend / divisor), unit);
    return dividend % divisor;
}

static bool duration(cf_buf *b, const uint8_t *p, size_t n) {
    const uint8_t *q = p, *end = p + n;
    int64_t months, days, nanos;
    if (!read_signed_vint(&q, end, &months) || !read_signed_vint(&q, end, &days) ||
        !read_signed_vint(&q, end, &nanos) || q != end)
        return false;
    cf_buf_append_byte(b, '"');
    if (months < 0 || days < 0 || nanos < 0) cf_buf_append_byte(b, '-');
    int64_t r = dur_part(b, llabs(months), 12, "y");
    dur_part(b, r, 1, "mo");
    dur_part(b, llabs(days), 1, "d");
    if (nanos != 0) {
        r = dur_part(b, llabs(nanos), 3600000000000LL, "h");
        r = dur_part(b, r, 60000000000LL, "m");
        r = dur_part(b, r, 1000000000LL, "s");
        r = dur_part(b, r, 1000000LL, "ms");
        r = dur_part(b, r, 1000LL, "us");
        dur_part(b, r, 1, "ns");
    }
    cf_buf_append_byte(b, '"');
    return true;
}

static bool is_text(const cf_cql_type *t) { return t->kind == CF_CQL_ASCII || t->kind == CF_CQL_TEXT; }

static cf_code value_json(const cf_cql_type *t, const uint8_t *p, size_t n, cf_buf *b, int depth);

bool cf_cass_read_element(const uint8_t **q, const uint8_t *end, const uint8_t **ep, size_t *en) {
    if (end - *q < 4) return false;
    int32_t l = (int32_t)be32(*q);
    *q += 4;
    if (l < 0) {
        *ep = NULL;
        *en = 0;
        return true;
    }
    if (end - *q < l) return false;
    *ep = *q;
    *en = (size_t)l;
    *q += l;
    return true;
}

static bool next_elem(const uint8_t **q, const uint8_t *end, const uint8_t **ep, size_t *en, bool *null) {
    bool ok = cf_cass_read_element(q, end, ep, en);
    *null = ok && !*ep;
    return ok;
}

static cf_code value_json(const cf_cql_type *t, const uint8_t *p, size_t n, cf_buf *b, int depth) {
    size_t mark = b->len;
    if (depth > 64) goto bad;
    if (n == 0 && !is_text(t) && t->kind != CF_CQL_BLOB && t->kind != CF_CQL_EMPTY) {
        cf_buf_append_str(b, "\"\""); /* deserialize(empty) is null: Objects.toString(null, "\"\"") */
        return CF_OK;
    }
    switch (t->kind) {
    case CF_CQL_ASCII:
    case CF_CQL_TEXT: json_str(b, (const char *)p, n); return CF_OK;
    case CF_CQL_BLOB: blob(b, p, n); return CF_OK;
    case CF_CQL_EMPTY: cf_buf_append_str(b, "\"\""); return CF_OK;
    case CF_CQL_BOOLEAN:
        if (n != 1) goto bad;
        cf_buf_append_str(b, p[0] ? "true" : "false");
        return CF_OK;
    case CF_CQL_TINYINT:
        if (n != 1) goto bad;
        cf_buf_printf(b, "%d", (int8_t)p[0]);
        return CF_OK;
    case CF_CQL_SMALLINT:
        if (n != 2) goto bad;
        cf_buf_printf(b, "%d", (int16_t)(p[0] << 8 | p[1]));
        return CF_OK;
    case CF_CQL_INT:
        if (n != 4) goto bad;
        cf_buf_printf(b, "%d", (int32_t)be32(p));
        return CF_OK;
    case CF_CQL_BIGINT:
        if (n != 8) goto bad;
        cf_buf_printf(b, "%lld", (long long)(int64_t)be64(p));
        return CF_OK;
    case CF_CQL_COUNTER: {
        /* a counter cell holds a CounterContext: int16 header count (sign = kind),
         * 2 bytes per header entry, then shards of counter id (16), clock (8), count (8) */
        if (n == 8) { /* a plain long (counter update as sent) */
            cf_buf_printf(b, "%lld", (long long)(int64_t)be64(p));
            return CF_OK;
        }
        if (n < 2) goto bad;
        int16_t hs = (int16_t)(p[0] << 8 | p[1]);
        size_t off = 2 + (size_t)abs(hs) * 2;
        if (off > n || (n - off) % 32) goto bad;
        int64_t total = 0;
        for (; off < n; off += 32) total += (int64_t)be64(p + off + 24);
        cf_buf_printf(b, "%lld", (long long)total);
        return CF_OK;
    }
    case CF_CQL_VARINT: bigint_digits(b, p, n); return CF_OK;
    case CF_CQL_DECIMAL:
        if (n < 4) goto bad;
        decimal(b, (int32_t)be32(p), p + 4, n - 4);
        return CF_OK;
    case CF_CQL_FLOAT: {
        if (n != 4) goto bad;
        uint32_t u = be32(p);
        float f;
        memcpy(&f, &u, 4);
        java_float(b, f, true);
        return CF_OK;
    }
    case CF_CQL_DOUBLE: {
        if (n != 8) goto bad;
        uint64_t u = be64(p);
        double dv;
        memcpy(&dv, &u, 8);
        java_float(b, dv, false);
        return CF_OK;
    }
    case CF_CQL_TIMESTAMP:
        if (n != 8) goto bad;
        timestamp(b, (int64_t)be64(p));
        return CF_OK;
    case CF_CQL_DATE: {
        if (n != 4) goto bad;
        int64_t days = (int64_t)be32(p) - 2147483648LL;
        int64_t y;
        unsigned mo, d;
        cf_civil_from_days(days, &y, &mo, &d);
        cf_buf_printf(b, "\"%04lld-%02u-%02u\"", (long long)y, mo, d);
        return CF_OK;
    }
    case CF_CQL_TIME: {
        if (n != 8) goto bad;
        int64_t ns = (int64_t)be64(p);
        if (ns < 0 || ns >= 86400000000000LL) goto bad;
        cf_buf_printf(b, "\"%02d:%02d:%02d.%09lld\"", (int)(ns / 3600000000000LL), (int)(ns / 60000000000LL % 60),
                      (int)(ns / 1000000000LL % 60), (long long)(ns % 1000000000LL));
        return CF_OK;
    }
    case CF_CQL_UUID:
    case CF_CQL_TIMEUUID:
        if (n != 16) goto bad;
        uuid(b, p);
        return CF_OK;
    case CF_CQL_INET:
        if (n == 4) {
            cf_buf_printf(b, "\"%u.%u.%u.%u\"", p[0], p[1], p[2], p[3]);
        } else if (n == 16) {
            static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
            if (memcmp(p, mapped, 12) == 0) { /* Java turns IPv4-mapped addresses into Inet4Address */
                cf_buf_printf(b, "\"%u.%u.%u.%u\"", p[12], p[13], p[14], p[15]);
            } else {
                cf_buf_append_byte(b, '"');
                for (int i = 0; i < 8; i++) cf_buf_printf(b, "%s%x", i ? ":" : "", (unsigned)(p[2 * i] << 8 | p[2 * i + 1]));
                cf_buf_append_byte(b, '"');
            }
        } else
            goto bad;
        return CF_OK;
    case CF_CQL_DURATION:
        if (!duration(b, p, n)) goto bad;
        return CF_OK;
    case CF_CQL_LIST:
    case CF_CQL_SET:
    case CF_CQL_MAP: {
        const uint8_t *q = p, *end = p + n;
        if (n < 4) goto bad;
        int32_t cnt = (int32_t)be32(q);
        q += 4;
        if (cnt < 0 || (size_t)cnt > n / 4) goto bad;
        bool map = t->kind == CF_CQL_MAP;
        cf_buf_append_byte(b, map ? '{' : '[');
        for (int32_t i = 0; i < cnt; i++) {
            if (i) cf_buf_append_str(b, ", ");
            const uint8_t *ep;
            size_t en;
            bool null;
            if (!next_elem(&q, end, &ep, &en, &null)) goto bad;
            if (map) {
                /* map keys must be JSON strings: non-string keys are quoted */
                size_t kmark = b->len;
                if (null)
                    cf_buf_append_str(b, "null");
                else if (value_json(t->params[0], ep, en, b, depth + 1))
                    goto bad;
                if (b->data[kmark] != '"') {
                    char *k = cf_xstrndup(b->data + kmark, b->len - kmark);
                    b->len = kmark;
                    b->data[kmark] = 0;
                    json_str(b, k, strlen(k));
                    free(k);
                }
                cf_buf_append_str(b, ": ");
                if (!next_elem(&q, end, &ep, &en, &null)) goto bad;
                if (null)
                    cf_buf_append_str(b, "null");
                else if (value_json(t->params[1], ep, en, b, depth + 1))
                    goto bad;
            } else if (null) {
                cf_buf_append_str(b, "null");
            } else if (value_json(t->params[0], ep, en, b, depth + 1)) {
                goto bad;
            }
        }
        if (q != end) goto bad;
        cf_buf_append_byte(b, map ? '}' : ']');
        return CF_OK;
    }
    case CF_CQL_TUPLE:
    case CF_CQL_UDT: {
        const uint8_t *q = p, *end = p + n;
        bool udt = t->kind == CF_CQL_UDT;
        cf_buf_append_byte(b, udt ? '{' : '[');
        for (size_t i = 0; i < t->n_params; i++) {
            if (i) cf_buf_append_str(b, ", ");
            if (udt) {
                const char *name = t->field_names[i];
                bool lower = true;
                for (const char *s = name; *s; s++)
                    if (*s >= 'A' && *s <= 'Z') lower = false;
                cf_buf_append_byte(b, '"');
                if (!lower) { /* case-sensitive names keep their CQL quotes */
                    cf_buf_append_str(b, "\\\"");
                    json_escape(b, (const uint8_t *)name, strlen(name));
                    cf_buf_append_str(b, "\\\"");
                } else {
                    json_escape(b, (const uint8_t *)name, strlen(name));
                }
                cf_buf_append_str(b, "\": ");
            }
            const uint8_t *ep;
            size_t en;
            bool null = true;
            if (q < end && !next_elem(&q, end, &ep, &en, &null)) goto bad;
            if (null) /* absent trailing fields (added by ALTER TYPE) are null too */
                cf_buf_append_str(b, "null");
            else if (value_json(t->params[i], ep, en, b, depth + 1))
                goto bad;
        }
        if (q != end) goto bad;
        cf_buf_append_byte(b, udt ? '}' : ']');
        return CF_OK;
    }
    case CF_CQL_VECTOR: {
        const cf_cql_type *et = t->params[0];
        int32_t fixed = cf_cql_type_fixed_length(et);
        const uint8_t *q = p, *end = p + n;
        cf_buf_append_byte(b, '[');
        for (int32_t i = 0; i < t->dimension; i++) {
            if (i) cf_buf_append_str(b, ", ");
            size_t en;
            if (fixed >= 0) {
                en = (size_t)fixed;
            } else { /* unsigned vint length */
                uint64_t v;
                if (!cf_cass_read_uvint(&q, end, &v) || v > (uint64_t)(end - q)) goto bad;
                en = (size_t)v;
            }
            if ((size_t)(end - q) < en) goto bad;
            if (value_json(et, q, en, b, depth + 1)) goto bad;
            q += en;
        }
        if (q != end) goto bad;
        cf_buf_append_byte(b, ']');
        return CF_OK;
    }
    case CF_CQL_CUSTOM: blob(b, p, n); return CF_OK;
    }
bad:
    b->len = mark;
    if (b->data) b->data[mark] = 0;
    blob(b, p, n);
    return CF_ERR_SCHEMA;
}

cf_code cf_cass_value_to_json(const cf_cql_type *t, const uint8_t *p, size_t len, cf_buf *out) {
    if (!p) {
        cf_buf_append_str(out, "null");
        return CF_OK;
    }
    return value_json(t, p, len, out, 0);
}

/* printf-free integer output for the hot JSON paths */
static void append_i64(cf_buf *b, int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[n++] = '-';
    cf_buf_reserve(b, (size_t)n);
    while (n) b->data[b->len++] = tmp[--n];
    b->data[b->len] = 0;
}

/* ---------------- partition updates ---------------- */

static void deletion_json(cf_buf *b, const cf_cass_deletion *d) {
    if (cf_cass_deletion_is_live(d)) {
        cf_buf_append_str(b, "null");
        return;
    }
    cf_buf_append_str(b, "{\"ts\": ");
    append_i64(b, d->marked_at);
    cf_buf_append_str(b, ", \"local_deletion_time\": ");
    append_i64(b, d->local_deletion_time);
    cf_buf_append_byte(b, '}');
}

static void name_json(cf_buf *b, const char *name) { json_str(b, name, strlen(name)); }

static void clustering_json(cf_buf *b, const cf_cass_table *t, const cf_cass_row *r) {
    cf_buf_append_byte(b, '{');
    for (size_t i = 0; i < r->n_clustering && i < t->n_clustering; i++) {
        if (i) cf_buf_append_str(b, ", ");
        name_json(b, t->clustering[i].name);
        cf_buf_append_str(b, ": ");
        cf_cass_value_to_json(t->clustering[i].type, r->clustering[i].p, r->clustering[i].len, b);
    }
    cf_buf_append_byte(b, '}');
}

/* Render a complex cell's path by the collection kind. */
static void path_json(cf_buf *b, const cf_cql_type *t, const cf_cass_bytes *path) {
    switch (t->kind) {
    case CF_CQL_LIST:
        if (path->len == 16)
            uuid(b, path->p);
        else
            blob(b, path->p, path->len);
        return;
    case CF_CQL_SET:
    case CF_CQL_MAP: cf_cass_value_to_json(t->params[0], path->p, path->len, b); return;
    case CF_CQL_UDT:
        if (path->len == 2) {
            size_t i = (size_t)(path->p[0] << 8 | path->p[1]);
            if (i < t->n_params) {
                name_json(b, t->field_names[i]);
                return;
            }
        }
        blob(b, path->p, path->len);
        return;
    default: blob(b, path->p, path->len);
    }
}

static const cf_cql_type *cell_value_type(const cf_cql_type *t, const cf_cass_bytes *path) {
    switch (t->kind) {
    case CF_CQL_LIST: return t->params[0];
    case CF_CQL_SET: return NULL; /* the element is the path; the value is empty */
    case CF_CQL_MAP: return t->params[1];
    case CF_CQL_UDT:
        if (path->len == 2) {
            size_t i = (size_t)(path->p[0] << 8 | path->p[1]);
            if (i < t->n_params) return t->params[i];
        }
        return NULL;
    default: return t;
    }
}

static void cell_json(cf_buf *b, const cf_cass_column_data *cd, const cf_cass_cell *c) {
    cf_buf_append_byte(b, '{');
    if (cd->complex) {
        cf_buf_append_str(b, "\"path\": ");
        path_json(b, cd->type, &c->path);
        cf_buf_append_str(b, ", ");
    }
    cf_buf_append_str(b, "\"value\": ");
    const cf_cql_type *vt = cd->complex ? cell_value_type(cd->type, &c->path) : cd->type;
    if (c->deleted || !vt || (c->value.len == 0 && cd->complex && cd->type->kind == CF_CQL_SET))
        cf_buf_append_str(b, "null");
    else
        cf_cass_value_to_json(vt, c->value.p, c->value.len, b);
    cf_buf_append_str(b, ", \"ts\": ");
    append_i64(b, c->ts);
    cf_buf_append_str(b, ", \"ttl\": ");
    if (c->expiring)
        append_i64(b, c->ttl);
    else
        cf_buf_append_str(b, "null");
    cf_buf_append_str(b, c->deleted ? ", \"deleted\": true" : ", \"deleted\": false");
    if (c->deleted || c->expiring) {
        cf_buf_append_str(b, ", \"local_deletion_time\": ");
        append_i64(b, c->local_deletion_time);
    }
    cf_buf_append_byte(b, '}');
}

static void row_json(cf_buf *b, const cf_cass_table *t, const cf_cass_row *r) {
    cf_buf_append_str(b, "{\"kind\": \"");
    cf_buf_append_str(b, cf_cass_row_kind_name(r->kind));
    cf_buf_append_byte(b, '"');
    if (r->kind == CF_CASS_RT_BOUND || r->kind == CF_CASS_RT_BOUNDARY)
        cf_buf_printf(b, ", \"bound\": \"%s\"", cf_cass_bound_kind_name(r->bound));
    cf_buf_append_str(b, ", \"clustering\": ");
    clustering_json(b, t, r);
    if (r->kind == CF_CASS_RT_BOUND || r->kind == CF_CASS_RT_BOUNDARY) {
        cf_buf_append_str(b, ", \"deletion\": ");
        deletion_json(b, &r->deletion);
        if (r->kind == CF_CASS_RT_BOUNDARY) {
            cf_buf_append_str(b, ", \"start_deletion\": ");
            deletion_json(b, &r->start_deletion);
        }
        cf_buf_append_byte(b, '}');
        return;
    }
    if (r->has_liveness) {
        cf_buf_append_str(b, ", \"ts\": ");
        append_i64(b, r->ts);
        cf_buf_append_str(b, ", \"ttl\": ");
        if (r->ttl != CF_CASS_NO_TTL)
            append_i64(b, r->ttl);
        else
            cf_buf_append_str(b, "null");
    } else {
        cf_buf_append_str(b, ", \"ts\": null, \"ttl\": null");
    }
    cf_buf_append_str(b, ", \"deletion\": ");
    if (cf_cass_deletion_is_live(&r->deletion))
        cf_buf_append_str(b, "null");
    else
        cf_buf_printf(b, "{\"ts\": %lld, \"local_deletion_time\": %lld, \"shadowable\": %s}",
                      (long long)r->deletion.marked_at, (long long)r->deletion.local_deletion_time,
                      r->shadowable ? "true" : "false");
    cf_buf_append_str(b, ", \"cells\": {");
    bool any_cd = false;
    for (size_t i = 0; i < r->n_columns; i++) {
        const cf_cass_column_data *cd = &r->columns[i];
        if (cd->has_complex_deletion) any_cd = true;
        if (i) cf_buf_append_str(b, ", ");
        name_json(b, cd->name);
        cf_buf_append_str(b, ": ");
        if (!cd->complex) {
            cell_json(b, cd, &cd->cells[0]);
        } else {
            cf_buf_append_byte(b, '[');
            for (size_t j = 0; j < cd->n_cells; j++) {
                if (j) cf_buf_append_str(b, ", ");
                cell_json(b, cd, &cd->cells[j]);
            }
            cf_buf_append_byte(b, ']');
        }
    }
    cf_buf_append_byte(b, '}');
    if (any_cd) {
        cf_buf_append_str(b, ", \"complex_deletions\": {");
        bool first = true;
        for (size_t i = 0; i < r->n_columns; i++) {
            const cf_cass_column_data *cd = &r->columns[i];
            if (!cd->has_complex_deletion) continue;
            if (!first) cf_buf_append_str(b, ", ");
            first = false;
            name_json(b, cd->name);
            cf_buf_append_str(b, ": ");
            deletion_json(b, &cd->complex_deletion);
        }
        cf_buf_append_byte(b, '}');
    }
    cf_buf_append_byte(b, '}');
}

void cf_cass_update_to_json(const cf_cass_update *u, const char *segment, int64_t position, cf_buf *b) {
    const cf_cass_table *t = u->table;
    char id[37];
    cf_cass_uuid_format(u->table_id, id);
    cf_buf_append_str(b, "{\"segment\": ");
    json_str(b, segment, strlen(segment));
    cf_buf_append_str(b, ", \"position\": ");
    append_i64(b, position);
    cf_buf_append_str(b, ", \"keyspace\": ");
    name_json(b, t->keyspace);
    cf_buf_append_str(b, ", \"table\": ");
    name_json(b, t->name);
    cf_buf_append_str(b, ", \"table_id\": \"");
    cf_buf_append_str(b, id);
    cf_buf_append_str(b, "\", \"token\": ");
    append_i64(b, u->token);
    cf_buf_append_str(b, ", \"key\": {");
    size_t npk = t->n_partition_key;
    const uint8_t *comp[64];
    size_t clen[64];
    if (npk > 0 && npk <= 64 && cf_cass_table_split_partition_key(t, u->key.p, u->key.len, comp, clen, NULL) == CF_OK) {
        for (size_t i = 0; i < npk; i++) {
            if (i) cf_buf_append_str(b, ", ");
            name_json(b, t->partition_key[i].name);
            cf_buf_append_str(b, ": ");
            cf_cass_value_to_json(t->partition_key[i].type, comp[i], clen[i], b);
        }
    } else {
        cf_buf_append_str(b, "\"_raw\": ");
        blob(b, u->key.p, u->key.len);
    }
    cf_buf_append_str(b, "}, \"partition_deletion\": ");
    deletion_json(b, &u->partition_deletion);
    cf_buf_append_str(b, ", \"rows\": [");
    bool first = true;
    if (u->static_row) {
        row_json(b, t, u->static_row);
        first = false;
    }
    for (size_t i = 0; i < u->n_rows; i++) {
        if (!first) cf_buf_append_str(b, ", ");
        first = false;
        row_json(b, t, &u->rows[i]);
    }
    cf_buf_append_str(b, "]}");
}
