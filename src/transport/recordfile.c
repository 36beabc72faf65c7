/*
 * recordfile.c - record files: cf_msg as `kcat -C -J` JSON lines (see
 * include/cdcflow/recordfile.h and docs/formats.md).
 *
 * The parser is hand-written rather than jansson for two reasons: kcat
 * writes bytes that are not valid UTF-8 raw into its strings, which a strict
 * JSON parser rejects but we must read back losslessly; and errors must name
 * the exact column. The envelope is flat (strings, integers, null, one array
 * of strings), so a small recursive-descent parser covers it; any other JSON
 * value (kcat -s avro embeds decoded objects as key/payload) is kept as its
 * JSON text.
 *
 * The writer reproduces yajl's string escaping byte for byte, so that for
 * UTF-8 data our lines are identical to kcat's (tests compare against the
 * real kcat).
 */
#include "cdcflow/recordfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <unistd.h>

#include "cdcflow/text.h"

/* ---------------- shared helpers ---------------- */

/* Strict RFC 4648 base64 with padding. */
static bool b64_decode(const char *s, size_t n, cf_buf *out) {
    cf_buf_reset(out);
    if (n % 4) return false;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else {
                if (pad) return false;
                v[k] = cf_base64_digit((unsigned char)s[i + k]);
                if (v[k] < 0) return false;
            }
        }
        uint32_t x = ((uint32_t)v[0] << 18) | ((uint32_t)v[1] << 12) | ((uint32_t)v[2] << 6) | (uint32_t)v[3];
        cf_buf_append_byte(out, (uint8_t)(x >> 16));
        if (pad < 2) cf_buf_append_byte(out, (uint8_t)(x >> 8));
        if (pad < 1) cf_buf_append_byte(out, (uint8_t)x);
    }
    if (!out->data) cf_buf_append(out, "", 0);
    return true;
}

/* ---------------- writer: format ---------------- */

/* yajl_string_encode with escape_solidus off (kcat's setting): the shared
 * JSON escape table, bytes copied raw. */
static void json_str(cf_buf *b, const char *s, size_t n) { cf_json_write_string(b, s, n, CF_JSON_RAW_BYTES); }

/* A string field: UTF-8 as is, else base64. Returns true if base64 was used. */
static bool bytes_field(cf_buf *b, const char *s, size_t n) {
    if (cf_utf8_valid(s, n)) {
        json_str(b, s, n);
        return false;
    }
    cf_buf_append_byte(b, '"');
    cf_base64_encode(b, (const uint8_t *)s, n);
    cf_buf_append_byte(b, '"');
    return true;
}

void cf_recordfile_format(const cf_msg *m, cf_buf *out) {
    cf_buf_append_str(out, "{\"topic\":");
    const char *topic = m->topic ? m->topic : "";
    json_str(out, topic, strlen(topic));
    cf_buf_append_str(out, ",\"partition\":");
    cf_buf_append_int(out, m->partition);
    cf_buf_append_str(out, ",\"offset\":");
    cf_buf_append_int(out, m->offset);
    if (m->ts_type == CF_TS_CREATE || m->ts_type == CF_TS_LOG_APPEND)
        cf_buf_printf(out, ",\"tstype\":\"%s\",\"ts\":%lld", m->ts_type == CF_TS_CREATE ? "create" : "logappend",
                      (long long)m->timestamp);
    cf_buf_append_str(out, ",\"broker\":-1");
    /* positions of base64 elements in the flat headers array */
    size_t *b64pos = NULL, n_b64 = 0;
    if (m->n_headers) {
        cf_buf_append_str(out, ",\"headers\":[");
        b64pos = cf_xmalloc(2 * m->n_headers * sizeof *b64pos);
        for (size_t i = 0; i < m->n_headers; i++) {
            const cf_msg_header *h = &m->headers[i];
            if (i) cf_buf_append_byte(out, ',');
            const char *k = h->key ? h->key : "";
            if (bytes_field(out, k, strlen(k))) b64pos[n_b64++] = 2 * i;
            cf_buf_append_byte(out, ',');
            if (!h->value)
                cf_buf_append_str(out, "null");
            else if (bytes_field(out, h->value, h->value_len))
                b64pos[n_b64++] = 2 * i + 1;
        }
        cf_buf_append_byte(out, ']');
    }
    bool key64 = false, val64 = false;
    cf_buf_append_str(out, ",\"key\":");
    if (m->key)
        key64 = bytes_field(out, m->key, m->key_len);
    else
        cf_buf_append_str(out, "null");
    cf_buf_append_str(out, ",\"payload\":");
    if (m->value)
        val64 = bytes_field(out, m->value, m->value_len);
    else
        cf_buf_append_str(out, "null");
    if (key64) cf_buf_append_str(out, ",\"key_encoding\":\"base64\"");
    if (val64) cf_buf_append_str(out, ",\"payload_encoding\":\"base64\"");
    if (n_b64) {
        cf_buf_append_str(out, ",\"headers_b64\":[");
        for (size_t i = 0; i < n_b64; i++) cf_buf_printf(out, "%s%zu", i ? "," : "", b64pos[i]);
        cf_buf_append_byte(out, ']');
    }
    free(b64pos);
    cf_buf_append_str(out, "}\n");
}

/* ---------------- parser ---------------- */

typedef struct parser {
    const char *s;
    size_t n, i;
    cf_err *err;
    cf_buf tmp; /* decoded string scratch */
} parser;

static cf_code perr(parser *p, size_t at, const char *fmt, const char *arg) {
    cf_err_set(p->err, CF_ERR_CORRUPT, "invalid record file line");
    if (p->err) {
        snprintf(p->err->detail, sizeof p->err->detail, fmt, arg ? arg : "");
        cf_err_hint(p->err,
                    "each line must be one JSON object as `kcat -C -J` prints: "
                    "{\"topic\":..,\"partition\":..,\"offset\":..,\"key\":..,\"payload\":..}");
        cf_err_where(p->err, "column %zu", at + 1);
    }
    return CF_ERR_CORRUPT;
}

static void skip_ws(parser *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\r' || p->s[p->i] == '\n'))
        p->i++;
}

/* A JSON string at p->i into out (bytes; raw non-UTF-8 bytes kept). */
/* Unescaping never makes a string longer (\uXXXX is 6 bytes for at most 3,
 * a surrogate pair 12 for 4), so the rest of the line bounds the result: the
 * buffer is reserved once and written directly. Payloads that are JSON
 * (the common case) have an escape every few bytes; a call per escape made
 * this the reader's hot spot. */
static cf_code parse_string(parser *p, cf_buf *out) {
    cf_buf_reset(out);
    size_t start = p->i;
    if (p->i >= p->n || p->s[p->i] != '"') return perr(p, p->i, "expected a string%s", NULL);
    const char *s = p->s;
    size_t n = p->n, i = p->i + 1, o = 0;
    cf_buf_reserve(out, n - i);
    char *d = out->data;
    for (;;) {
#ifdef __SSE2__
        /* 16 bytes at a time up to the next '"', '\\' or control byte; the
         * store may write past the run (never past the reserved room, as
         * o <= i - start and i + 16 <= n), later bytes overwrite it */
        while (i + 16 <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
            __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                         _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                            _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f)));
            _mm_storeu_si128((__m128i *)(d + o), v);
            unsigned m = (unsigned)_mm_movemask_epi8(special);
            if (!m) {
                i += 16, o += 16;
                continue;
            }
            unsigned k = (unsigned)__builtin_ctz(m);
            i += k, o += k;
            break;
        }
#endif
        if (i >= n) return perr(p, start, "unterminated string%s", NULL);
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            d[o++] = (char)c;
            i++;
            continue;
        }
        if (c == '"') break;
        if (c < 0x20) return perr(p, i, "raw control character in a string (must be escaped as \\u00XX)%s", NULL);
        size_t esc_at = i++;
        if (i >= n) return perr(p, esc_at, "unterminated escape%s", NULL);
        char e = s[i++];
        switch (e) {
        case '"': d[o++] = '"'; break;
        case '\\': d[o++] = '\\'; break;
        case '/': d[o++] = '/'; break;
        case 'b': d[o++] = '\b'; break;
        case 'f': d[o++] = '\f'; break;
        case 'n': d[o++] = '\n'; break;
        case 'r': d[o++] = '\r'; break;
        case 't': d[o++] = '\t'; break;
        case 'u': {
            uint32_t cp = 0;
            size_t end;
            switch (cf_unicode_escape(s, n, i, &cp, &end)) {
            case CF_UESC_OK: break;
            case CF_UESC_BAD_HEX: return perr(p, esc_at, "\\u must be followed by four hex digits%s", NULL);
            case CF_UESC_NO_LOW:
                return perr(p, esc_at, "high surrogate \\u escape without a low surrogate after it%s", NULL);
            case CF_UESC_LONE_LOW: return perr(p, esc_at, "lone low surrogate \\u escape%s", NULL);
            }
            i = end;
            o += cf_utf8_encode(cp, d + o);
            break;
        }
        default: {
            char bad[2] = {e, 0};
            return perr(p, esc_at, "invalid escape \\%s", bad);
        }
        }
    }
    out->len = o;
    d[o] = 0;
    p->i = i + 1; /* closing quote */
    return CF_OK;
}

static bool lit(parser *p, const char *w) {
    size_t l = strlen(w);
    if (p->i + l <= p->n && memcmp(p->s + p->i, w, l) == 0) {
        p->i += l;
        return true;
    }
    return false;
}

/* A JSON integer (no fraction, no exponent) in [lo, hi]. */
static cf_code parse_int(parser *p, const char *field, int64_t lo, int64_t hi, int64_t *out) {
    size_t start = p->i;
    bool neg = false;
    if (p->i < p->n && p->s[p->i] == '-') neg = true, p->i++;
    size_t digits = p->i;
    uint64_t v = 0;
    bool overflow = false;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        unsigned d = (unsigned)(p->s[p->i] - '0');
        if (v > (UINT64_MAX - d) / 10) overflow = true;
        v = v * 10 + d;
        p->i++;
    }
    if (p->i == digits) return perr(p, start, "\"%s\" must be an integer", field);
    if (p->i - digits > 1 && p->s[digits] == '0') return perr(p, start, "\"%s\": leading zeros are not JSON", field);
    if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E'))
        return perr(p, start, "\"%s\" must be an integer, not a fraction", field);
    int64_t r;
    if (overflow || (!neg && v > (uint64_t)INT64_MAX) || (neg && v > (uint64_t)INT64_MAX + 1))
        return perr(p, start, "\"%s\" is out of range", field);
    r = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (r < lo || r > hi) return perr(p, start, "\"%s\" is out of range", field);
    *out = r;
    return CF_OK;
}

/* Skip any JSON value (depth-limited); used for other JSON as key/payload. */
static cf_code skip_value(parser *p, int depth) {
    if (depth > 64) return perr(p, p->i, "JSON nested too deeply%s", NULL);
    skip_ws(p);
    if (p->i >= p->n) return perr(p, p->i, "expected a value%s", NULL);
    char c = p->s[p->i];
    cf_buf scratch = CF_BUF_INIT;
    cf_code rc = CF_OK;
    if (c == '"') {
        rc = parse_string(p, &scratch);
    } else if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        p->i++;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
        } else {
            while (rc == CF_OK) {
                if (c == '{') {
                    skip_ws(p);
                    if ((rc = parse_string(p, &scratch)) != CF_OK) break;
                    skip_ws(p);
                    if (p->i >= p->n || p->s[p->i] != ':') {
                        rc = perr(p, p->i, "expected ':'%s", NULL);
                        break;
                    }
                    p->i++;
                }
                if ((rc = skip_value(p, depth + 1)) != CF_OK) break;
                skip_ws(p);
                if (p->i < p->n && p->s[p->i] == ',') {
                    p->i++;
                    continue;
                }
                if (p->i < p->n && p->s[p->i] == close) {
                    p->i++;
                    break;
                }
                rc = perr(p, p->i, "expected ',' or the end of the %s", c == '{' ? "object" : "array");
            }
        }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        size_t start = p->i;
        if (c == '-') p->i++;
        size_t d = p->i;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
        if (p->i == d) rc = perr(p, start, "invalid number%s", NULL);
        if (rc == CF_OK && p->i < p->n && p->s[p->i] == '.') {
            p->i++;
            d = p->i;
            while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
            if (p->i == d) rc = perr(p, start, "invalid number%s", NULL);
        }
        if (rc == CF_OK && p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
            p->i++;
            if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
            d = p->i;
            while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
            if (p->i == d) rc = perr(p, start, "invalid number%s", NULL);
        }
    } else if (!lit(p, "true") && !lit(p, "false") && !lit(p, "null")) {
        rc = perr(p, p->i, "expected a JSON value%s", NULL);
    }
    cf_buf_free(&scratch);
    return rc;
}

enum { F_TOPIC, F_PARTITION, F_OFFSET, F_TSTYPE, F_TS, F_BROKER, F_HEADERS, F_KEY, F_PAYLOAD, F_KEY_ENC,
       F_PAYLOAD_ENC, F_HEADERS_B64, F_KEY_SCHEMA_ID, F_VALUE_SCHEMA_ID, F_KEY_ERROR, F_PAYLOAD_ERROR, F_COUNT };
static const char *const field_names[F_COUNT] = {
    "topic",         "partition",        "offset",        "tstype",          "ts",
    "broker",        "headers",          "key",           "payload",         "key_encoding",
    "payload_encoding", "headers_b64",   "key_schema_id", "value_schema_id", "key_error",
    "payload_error"};

/* key or payload: null, a string, or other JSON kept as its text. */
static cf_code parse_bytes_value(parser *p, bool *is_null, cf_buf *out) {
    skip_ws(p);
    if (lit(p, "null")) {
        *is_null = true;
        return CF_OK;
    }
    *is_null = false;
    if (p->i < p->n && p->s[p->i] == '"') return parse_string(p, out);
    size_t start = p->i;
    cf_code rc = skip_value(p, 0);
    if (rc != CF_OK) return rc;
    cf_buf_reset(out);
    cf_buf_append(out, p->s + start, p->i - start);
    return CF_OK;
}

typedef struct hdr_tmp {
    char *s; /* NULL = null */
    size_t len;
} hdr_tmp;

static bool has_nul(const cf_buf *b) { return b->len && memchr(b->data, '\0', b->len) != NULL; }

cf_code cf_recordfile_parse(const char *line, size_t len, cf_msg *m, cf_err *err) {
    cf_msg_clear(m);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
    parser P = {line, len, 0, err, CF_BUF_INIT}, *p = &P;
    bool seen[F_COUNT] = {false};
    cf_buf key = CF_BUF_INIT, val = CF_BUF_INIT, fname = CF_BUF_INIT, dec = CF_BUF_INIT;
    bool key_null = true, val_null = true, key_b64 = false, val_b64 = false;
    hdr_tmp *hdrs = NULL;
    size_t n_hdr = 0, cap_hdr = 0;
    int64_t *b64pos = NULL;
    size_t n_b64 = 0, cap_b64 = 0;
    int64_t ts = 0;
    int ts_kind = -1; /* -1 absent */
    size_t payload_at = 0;
    cf_code rc = CF_OK;

    skip_ws(p);
    if (p->i >= p->n || p->s[p->i] != '{') {
        rc = perr(p, p->i, "a line must start with '{'%s", NULL);
        goto done;
    }
    p->i++;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == '}') {
        p->i++;
    } else {
        while (1) {
            skip_ws(p);
            size_t fat = p->i;
            if ((rc = parse_string(p, &fname)) != CF_OK) goto done;
            int f = -1;
            for (int k = 0; k < F_COUNT; k++)
                if (strlen(field_names[k]) == fname.len && memcmp(field_names[k], fname.data, fname.len) == 0) f = k;
            if (f < 0) {
                char shown[80];
                snprintf(shown, sizeof shown, "%.*s", (int)(fname.len > 60 ? 60 : fname.len), fname.data);
                rc = perr(p, fat, "unknown field \"%s\" (known: topic, partition, offset, tstype, ts, broker, "
                                  "headers, key, payload, key_encoding, payload_encoding, headers_b64)",
                          shown);
                goto done;
            }
            if (seen[f]) {
                rc = perr(p, fat, "field \"%s\" appears twice", field_names[f]);
                goto done;
            }
            seen[f] = true;
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') {
                rc = perr(p, p->i, "expected ':' after \"%s\"", field_names[f]);
                goto done;
            }
            p->i++;
            skip_ws(p);
            size_t vat = p->i;
            int64_t iv;
            switch (f) {
            case F_TOPIC:
                if ((rc = parse_string(p, &P.tmp)) != CF_OK) goto done;
                if (has_nul(&P.tmp)) {
                    rc = perr(p, vat, "\"topic\" contains a NUL character%s", NULL);
                    goto done;
                }
                cf_msg_set_topic(m, P.tmp.data);
                break;
            case F_PARTITION:
                if ((rc = parse_int(p, "partition", INT32_MIN, INT32_MAX, &iv)) != CF_OK) goto done;
                m->partition = (int32_t)iv;
                break;
            case F_OFFSET:
                if ((rc = parse_int(p, "offset", INT64_MIN, INT64_MAX, &iv)) != CF_OK) goto done;
                m->offset = iv;
                break;
            case F_TS:
                if ((rc = parse_int(p, "ts", INT64_MIN, INT64_MAX, &ts)) != CF_OK) goto done;
                break;
            case F_TSTYPE:
                if ((rc = parse_string(p, &P.tmp)) != CF_OK) goto done;
                if (strcmp(P.tmp.data, "create") == 0)
                    ts_kind = CF_TS_CREATE;
                else if (strcmp(P.tmp.data, "logappend") == 0)
                    ts_kind = CF_TS_LOG_APPEND;
                else if (strcmp(P.tmp.data, "unknown") == 0 || strcmp(P.tmp.data, "none") == 0)
                    ts_kind = CF_TS_NONE;
                else {
                    rc = perr(p, vat, "\"tstype\" must be \"create\", \"logappend\" or \"unknown\"%s", NULL);
                    goto done;
                }
                break;
            case F_BROKER:
            case F_KEY_SCHEMA_ID:
            case F_VALUE_SCHEMA_ID:
                if (lit(p, "null")) break;
                if ((rc = parse_int(p, field_names[f], INT64_MIN, INT64_MAX, &iv)) != CF_OK) goto done;
                break;
            case F_KEY_ERROR:
            case F_PAYLOAD_ERROR:
                if ((rc = skip_value(p, 0)) != CF_OK) goto done;
                break;
            case F_KEY:
                if ((rc = parse_bytes_value(p, &key_null, &key)) != CF_OK) goto done;
                break;
            case F_PAYLOAD:
                payload_at = vat;
                if ((rc = parse_bytes_value(p, &val_null, &val)) != CF_OK) goto done;
                break;
            case F_KEY_ENC:
            case F_PAYLOAD_ENC:
                if ((rc = parse_string(p, &P.tmp)) != CF_OK) goto done;
                if (strcmp(P.tmp.data, "base64") != 0) {
                    rc = perr(p, vat, "\"%s\" must be \"base64\"", field_names[f]);
                    goto done;
                }
                if (f == F_KEY_ENC)
                    key_b64 = true;
                else
                    val_b64 = true;
                break;
            case F_HEADERS:
            case F_HEADERS_B64:
                if (lit(p, "null")) break;
                if (p->i >= p->n || p->s[p->i] != '[') {
                    rc = perr(p, vat, "\"%s\" must be an array or null", field_names[f]);
                    goto done;
                }
                p->i++;
                skip_ws(p);
                if (p->i < p->n && p->s[p->i] == ']') {
                    p->i++;
                    break;
                }
                while (1) {
                    skip_ws(p);
                    if (f == F_HEADERS) {
                        if (n_hdr == cap_hdr) {
                            cap_hdr = cap_hdr ? cap_hdr * 2 : 8;
                            hdrs = cf_xrealloc(hdrs, cap_hdr * sizeof *hdrs);
                        }
                        hdr_tmp *h = &hdrs[n_hdr];
                        if (n_hdr % 2 == 1 && lit(p, "null")) {
                            h->s = NULL, h->len = 0;
                        } else {
                            if ((rc = parse_string(p, &P.tmp)) != CF_OK) goto done;
                            h->s = cf_xmemdup(P.tmp.data, P.tmp.len);
                            h->len = P.tmp.len;
                        }
                        n_hdr++;
                    } else {
                        if (n_b64 == cap_b64) {
                            cap_b64 = cap_b64 ? cap_b64 * 2 : 8;
                            b64pos = cf_xrealloc(b64pos, cap_b64 * sizeof *b64pos);
                        }
                        if ((rc = parse_int(p, "headers_b64", 0, INT32_MAX, &b64pos[n_b64])) != CF_OK) goto done;
                        n_b64++;
                    }
                    skip_ws(p);
                    if (p->i < p->n && p->s[p->i] == ',') {
                        p->i++;
                        continue;
                    }
                    if (p->i < p->n && p->s[p->i] == ']') {
                        p->i++;
                        break;
                    }
                    rc = perr(p, p->i, "expected ',' or ']' in \"%s\"", field_names[f]);
                    goto done;
                }
                if (f == F_HEADERS && n_hdr % 2) {
                    rc = perr(p, vat, "\"headers\" must hold name, value pairs (odd number of elements)%s", NULL);
                    goto done;
                }
                break;
            }
            skip_ws(p);
            if (p->i < p->n && p->s[p->i] == ',') {
                p->i++;
                continue;
            }
            if (p->i < p->n && p->s[p->i] == '}') {
                p->i++;
                break;
            }
            rc = perr(p, p->i, "expected ',' or '}'%s", NULL);
            goto done;
        }
    }
    skip_ws(p);
    if (p->i < p->n) {
        rc = perr(p, p->i, "unexpected text after the JSON object%s", NULL);
        goto done;
    }
    if (!seen[F_PAYLOAD]) {
        rc = perr(p, 0, "missing \"payload\" (write \"payload\":null for a tombstone)%s", NULL);
        goto done;
    }
    if (seen[F_TSTYPE] && !seen[F_TS]) {
        rc = perr(p, 0, "\"tstype\" without \"ts\"%s", NULL);
        goto done;
    }
    /* encodings */
    if (key_b64) {
        if (key_null) {
            rc = perr(p, 0, "\"key_encoding\" given but the key is null%s", NULL);
            goto done;
        }
        if (!b64_decode(key.data, key.len, &dec)) {
            rc = perr(p, 0, "\"key\" is not valid base64 (key_encoding is base64)%s", NULL);
            goto done;
        }
        cf_buf t = key;
        key = dec;
        dec = t;
    }
    if (val_b64) {
        if (val_null) {
            rc = perr(p, payload_at, "\"payload_encoding\" given but the payload is null%s", NULL);
            goto done;
        }
        if (!b64_decode(val.data, val.len, &dec)) {
            rc = perr(p, payload_at, "\"payload\" is not valid base64 (payload_encoding is base64)%s", NULL);
            goto done;
        }
        cf_buf t = val;
        val = dec;
        dec = t;
    }
    for (size_t i = 0; i < n_b64; i++) {
        size_t pos = (size_t)b64pos[i];
        if (pos >= n_hdr || !hdrs[pos].s) {
            rc = perr(p, 0, "\"headers_b64\" names a position that is not a header string%s", NULL);
            goto done;
        }
        if (!b64_decode(hdrs[pos].s, hdrs[pos].len, &dec)) {
            rc = perr(p, 0, "a header listed in \"headers_b64\" is not valid base64%s", NULL);
            goto done;
        }
        free(hdrs[pos].s);
        hdrs[pos].s = cf_xmemdup(dec.data, dec.len);
        hdrs[pos].len = dec.len;
    }
    for (size_t i = 0; i < n_hdr; i += 2)
        if (memchr(hdrs[i].s, '\0', hdrs[i].len)) {
            rc = perr(p, 0, "a header name contains a NUL character%s", NULL);
            goto done;
        }
    if (!key_null) cf_msg_set_key(m, key.data ? key.data : "", key.len);
    if (!val_null) cf_msg_set_value(m, val.data ? val.data : "", val.len);
    for (size_t i = 0; i < n_hdr; i += 2) cf_msg_add_header(m, hdrs[i].s, hdrs[i + 1].s, hdrs[i + 1].len);
    if (seen[F_TS]) {
        m->timestamp = ts;
        m->ts_type = ts_kind < 0 ? CF_TS_CREATE : (cf_ts_type)ts_kind;
    }
done:
    for (size_t i = 0; i < n_hdr; i++) free(hdrs[i].s);
    free(hdrs);
    free(b64pos);
    cf_buf_free(&key);
    cf_buf_free(&val);
    cf_buf_free(&fname);
    cf_buf_free(&dec);
    cf_buf_free(&P.tmp);
    if (rc != CF_OK) cf_msg_clear(m);
    return rc;
}

/* ---------------- reader ---------------- */

struct cf_recordfile_reader {
    FILE *fp;
    char *name;
    bool owns;
    size_t max_line;
    char *chunk; /* read buffer */
    size_t chunk_len, chunk_pos;
    cf_buf line;
    uint64_t next_line, next_offset; /* where the next line starts */
    uint64_t line_no, line_off;      /* the line last returned */
    bool eof;
};

cf_recordfile_reader *cf_recordfile_reader_new(FILE *fp, const char *name, bool owns) {
    cf_recordfile_reader *r = cf_xcalloc(1, sizeof *r);
    r->fp = fp;
    r->name = cf_xstrdup(name ? name : "(stream)");
    r->owns = owns;
    r->max_line = CF_RECORDFILE_MAX_LINE_DEFAULT;
    r->chunk = cf_xmalloc(65536);
    r->next_line = 1;
    return r;
}

cf_code cf_recordfile_reader_open(const char *path, cf_recordfile_reader **out, cf_err *err) {
    *out = NULL;
    if (strcmp(path, "-") == 0) {
        *out = cf_recordfile_reader_new(stdin, "stdin", false);
        return CF_OK;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        cf_err_set(err, CF_ERR_IO, "cannot open record file \"%s\"", path);
        cf_err_detail(err, "%s", strerror(errno));
        cf_err_where(err, "%s", path);
        return CF_ERR_IO;
    }
    *out = cf_recordfile_reader_new(fp, path, true);
    return CF_OK;
}

void cf_recordfile_reader_set_max_line(cf_recordfile_reader *r, size_t max) { r->max_line = max ? max : 1; }
uint64_t cf_recordfile_reader_line(const cf_recordfile_reader *r) { return r->line_no; }
uint64_t cf_recordfile_reader_offset(const cf_recordfile_reader *r) { return r->line_off; }

void cf_recordfile_reader_close(cf_recordfile_reader *r) {
    if (!r) return;
    if (r->owns && r->fp) fclose(r->fp);
    cf_buf_free(&r->line);
    free(r->chunk);
    free(r->name);
    free(r);
}

/* Read the next physical line into r->line (without '\n'). Returns 1 on a
 * line, 0 at EOF, -1 on I/O error, -2 if the line is longer than max_line
 * (the rest of it is consumed). */
static int next_line(cf_recordfile_reader *r, int *io_errno) {
    cf_buf_reset(&r->line);
    bool any = false, too_long = false;
    while (1) {
        if (r->chunk_pos == r->chunk_len) {
            if (r->eof) break;
            r->chunk_len = fread(r->chunk, 1, 65536, r->fp);
            r->chunk_pos = 0;
            if (r->chunk_len == 0) {
                if (ferror(r->fp)) {
                    *io_errno = errno;
                    return -1;
                }
                r->eof = true;
                break;
            }
        }
        any = true;
        const char *start = r->chunk + r->chunk_pos;
        size_t avail = r->chunk_len - r->chunk_pos;
        const char *nl = memchr(start, '\n', avail);
        size_t take = nl ? (size_t)(nl - start) : avail;
        if (!too_long) {
            if (r->line.len + take > r->max_line) {
                too_long = true;
                cf_buf_reset(&r->line);
            } else {
                cf_buf_append(&r->line, start, take);
            }
        }
        r->chunk_pos += take + (nl ? 1 : 0);
        r->next_offset += take + (nl ? 1 : 0);
        if (nl) break;
    }
    if (!any) return 0;
    return too_long ? -2 : 1;
}

static bool blank(const cf_buf *b) {
    for (size_t i = 0; i < b->len; i++)
        if (b->data[i] != ' ' && b->data[i] != '\t' && b->data[i] != '\r') return false;
    return true;
}

cf_code cf_recordfile_read(cf_recordfile_reader *r, cf_msg *m, cf_err *err) {
    while (1) {
        uint64_t off = r->next_offset;
        int e = 0;
        int got = next_line(r, &e);
        if (got == 0) {
            cf_msg_clear(m);
            return CF_ERR_EOF;
        }
        r->line_no = r->next_line++;
        r->line_off = off;
        if (got == -1) {
            cf_err_set(err, CF_ERR_IO, "cannot read record file \"%s\"", r->name);
            cf_err_detail(err, "%s", strerror(e));
            cf_err_where(err, "%s:%llu (byte offset %llu)", r->name, (unsigned long long)r->line_no,
                         (unsigned long long)off);
            return CF_ERR_IO;
        }
        if (got == -2) {
            cf_msg_clear(m);
            cf_err_set(err, CF_ERR_CORRUPT, "record file line too long");
            cf_err_detail(err, "the line is longer than %zu bytes", r->max_line);
            cf_err_hint(err, "is this a record file (one JSON object per line)? the limit can be raised");
            cf_err_where(err, "%s:%llu (byte offset %llu)", r->name, (unsigned long long)r->line_no,
                         (unsigned long long)off);
            return CF_ERR_CORRUPT;
        }
        if (blank(&r->line)) continue;
        cf_code rc = cf_recordfile_parse(r->line.data, r->line.len, m, err);
        if (rc != CF_OK && err) {
            unsigned long col = 1;
            sscanf(err->where, "column %lu", &col);
            cf_err_where(err, "%s:%llu:%lu (byte offset %llu)", r->name, (unsigned long long)r->line_no, col,
                         (unsigned long long)(off + col - 1));
        }
        /* memory stays flat: a huge line's buffer is not kept for the next */
        if (r->line.cap > (1u << 20)) cf_buf_free(&r->line);
        return rc;
    }
}

/* ---------------- writer ---------------- */

/* The next offset of one topic partition of the file, as a broker's log
 * assigns them (see cf_recordfile_write). */
typedef struct next_offset {
    char *topic;
    int32_t partition;
    int64_t next;
} next_offset;

/* Lines are collected in `buf` and handed to the file in whole lines (the
 * stream is unbuffered): a process killed between two writes leaves only
 * complete lines, never half a record, whatever the lines' lengths. */
#define WRITER_CHUNK (64u << 10)

struct cf_recordfile_writer {
    FILE *fp;
    char *name;
    bool owns;
    cf_buf buf;
    next_offset *next;
    size_t n_next;
};

cf_recordfile_writer *cf_recordfile_writer_new(FILE *fp, const char *name, bool owns) {
    cf_recordfile_writer *w = cf_xcalloc(1, sizeof *w);
    w->fp = fp;
    w->name = cf_xstrdup(name ? name : "(stream)");
    w->owns = owns;
    if (owns) setvbuf(fp, NULL, _IONBF, 0); /* a stream we opened: no I/O on it yet */
    return w;
}

/* Hand the collected lines to the file. */
static cf_code write_out(cf_recordfile_writer *w, cf_err *err) {
    if (!w->buf.len) return CF_OK;
    if (fwrite(w->buf.data, 1, w->buf.len, w->fp) != w->buf.len) {
        cf_err_set(err, CF_ERR_IO, "cannot write record file \"%s\"", w->name);
        cf_err_detail(err, "%s", strerror(errno));
        cf_err_where(err, "%s", w->name);
        return CF_ERR_IO;
    }
    cf_buf_reset(&w->buf);
    if (w->buf.cap > 4 * WRITER_CHUNK) cf_buf_free(&w->buf);
    if (!w->owns) fflush(w->fp); /* stdout keeps its own buffer: push the lines through it */
    return CF_OK;
}

static next_offset *next_of(cf_recordfile_writer *w, const char *topic, int32_t partition) {
    for (size_t i = 0; i < w->n_next; i++)
        if (w->next[i].partition == partition && strcmp(w->next[i].topic, topic) == 0) return &w->next[i];
    w->next = cf_xrealloc(w->next, (w->n_next + 1) * sizeof *w->next);
    next_offset *n = &w->next[w->n_next++];
    n->topic = cf_xstrdup(topic);
    n->partition = partition;
    n->next = 0;
    return n;
}

/* Appending: offsets go on after the highest each partition has in the file. */
static void learn_offsets(cf_recordfile_writer *w, const char *path) {
    cf_recordfile_reader *r = NULL;
    if (cf_recordfile_reader_open(path, &r, NULL) != CF_OK) return;
    cf_msg *m = cf_msg_new();
    for (;;) {
        cf_code rc = cf_recordfile_read(r, m, NULL);
        if (rc == CF_ERR_EOF || rc == CF_ERR_IO) break;
        if (rc || m->offset < 0) continue; /* a bad line is the reader's business, not ours */
        next_offset *n = next_of(w, m->topic ? m->topic : "", m->partition < 0 ? 0 : m->partition);
        if (m->offset + 1 > n->next) n->next = m->offset + 1;
    }
    cf_msg_destroy(m);
    cf_recordfile_reader_close(r);
}

cf_code cf_recordfile_writer_open(const char *path, bool append, cf_recordfile_writer **out, cf_err *err) {
    *out = NULL;
    if (strcmp(path, "-") == 0) {
        *out = cf_recordfile_writer_new(stdout, "stdout", false);
        return CF_OK;
    }
    FILE *fp = fopen(path, append ? "ab" : "wb");
    if (!fp) {
        cf_err_set(err, CF_ERR_IO, "cannot open record file \"%s\" for writing", path);
        cf_err_detail(err, "%s", strerror(errno));
        cf_err_where(err, "%s", path);
        return CF_ERR_IO;
    }
    *out = cf_recordfile_writer_new(fp, path, true);
    if (append) learn_offsets(*out, path);
    return CF_OK;
}

/* ---- going on with a file of earlier runs ---- */

static bool pread_all(int fd, void *dst, size_t n, int64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)dst + got, n - got, (off_t)(off + (int64_t)got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        got += (size_t)r;
    }
    return true;
}

/* The offset just after the last '\n' in [0, end), 0 if there is none, -1
 * on a read error. Reads backwards, 64 KiB at a time. */
static int64_t after_last_newline(int fd, int64_t end) {
    char buf[65536];
    while (end > 0) {
        size_t n = end < (int64_t)sizeof buf ? (size_t)end : sizeof buf;
        int64_t off = end - (int64_t)n;
        if (!pread_all(fd, buf, n, off)) return -1;
        const char *nl = memrchr(buf, '\n', n);
        if (nl) return off + (nl - buf) + 1;
        end = off;
    }
    return 0;
}

static cf_code resume_refuse(const char *path, uint64_t off, cf_err *err) {
    cf_err_where(err, "%s (byte offset %llu)", path, (unsigned long long)off);
    cf_err_hint(err, "Records are appended to the record file of earlier runs (their stored offsets count on its "
                     "lines). Name a new file, or move this one away if it is not a record file.");
    return CF_ERR_CORRUPT;
}

static cf_code resume_io(const char *path, const char *what, cf_err *err) {
    cf_err_set(err, CF_ERR_IO, "cannot %s record file \"%s\"", what, path);
    cf_err_detail(err, "%s", strerror(errno));
    cf_err_where(err, "%s", path);
    return CF_ERR_IO;
}

/* Check the end of the regular file open as fd and cut a torn last line. */
static cf_code resume_repair(int fd, const char *path, int64_t size, cf_recordfile_resume *info, cf_err *err) {
    int64_t keep = after_last_newline(fd, size);
    if (keep < 0) return resume_io(path, "read", err);
    if (keep < size) { /* a tail without '\n': a record, or blanks/NULs a crash left */
        char head[64];
        size_t n = (size_t)(size - keep) < sizeof head ? (size_t)(size - keep) : sizeof head;
        if (!pread_all(fd, head, n, keep)) return resume_io(path, "read", err);
        size_t i = 0;
        while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == 0)) i++;
        if (i < n && head[i] != '{') {
            cf_err_set(err, CF_ERR_CORRUPT, "record file \"%s\" does not end with a record: refusing to append to it",
                       path);
            cf_err_detail(err, "its last %lld bytes are not a line of a record file (\"%.*s\")",
                          (long long)(size - keep), (int)(n > 40 ? 40 : n), head);
            return resume_refuse(path, (uint64_t)keep, err);
        }
    }
    if (keep > 0) { /* the last complete line must be a record (blank lines are allowed) */
        int64_t start = after_last_newline(fd, keep - 1);
        if (start < 0) return resume_io(path, "read", err);
        size_t len = (size_t)(keep - 1 - start);
        if (len > CF_RECORDFILE_MAX_LINE_DEFAULT) {
            cf_err_set(err, CF_ERR_CORRUPT, "record file \"%s\" does not end with a record: refusing to append to it",
                       path);
            cf_err_detail(err, "its last line is longer than %zu bytes", CF_RECORDFILE_MAX_LINE_DEFAULT);
            return resume_refuse(path, (uint64_t)start, err);
        }
        char *line = cf_xmalloc(len + 1);
        if (!pread_all(fd, line, len, start)) {
            free(line);
            return resume_io(path, "read", err);
        }
        line[len] = 0;
        bool blank = true;
        for (size_t i = 0; i < len && blank; i++) blank = line[i] == ' ' || line[i] == '\t' || line[i] == '\r';
        cf_code rc = CF_OK;
        if (!blank) {
            cf_msg *m = cf_msg_new();
            cf_err pe;
            if (cf_recordfile_parse(line, len, m, &pe)) {
                cf_err_set(err, CF_ERR_CORRUPT,
                           "record file \"%s\" does not end with a record: refusing to append to it", path);
                cf_err_detail(err, "its last line: %s (%s)", pe.message, pe.where);
                rc = resume_refuse(path, (uint64_t)start, err);
            }
            cf_msg_destroy(m);
        }
        free(line);
        if (rc) return rc;
    }
    if (keep < size && (size - keep) <= (1 << 20)) {
        /* a whole record whose '\n' is missing (kcat's last line may have
         * none; a crash may cut exactly before it) is kept and ended: a
         * record is never cut away, at worst it is there twice */
        size_t len = (size_t)(size - keep);
        char *tail = cf_xmalloc(len + 1);
        bool whole = false;
        if (pread_all(fd, tail, len, keep)) {
            cf_msg *m = cf_msg_new();
            whole = cf_recordfile_parse(tail, len, m, NULL) == CF_OK;
            cf_msg_destroy(m);
        }
        free(tail);
        if (whole) {
            if (pwrite(fd, "\n", 1, (off_t)size) != 1 || fsync(fd) != 0) return resume_io(path, "end the last line of", err);
            keep = size = size + 1;
        }
    }
    if (keep < size) {
        if (ftruncate(fd, (off_t)keep) != 0 || fsync(fd) != 0) return resume_io(path, "cut the torn last line of", err);
        info->cut_bytes = (uint64_t)(size - keep);
        info->cut_offset = (uint64_t)keep;
    }
    info->size = (uint64_t)keep;
    return CF_OK;
}

cf_code cf_recordfile_writer_open_resume(const char *path, cf_recordfile_writer **out, cf_recordfile_resume *info,
                                         cf_err *err) {
    cf_recordfile_resume dummy;
    if (!info) info = &dummy;
    memset(info, 0, sizeof *info);
    *out = NULL;
    if (strcmp(path, "-") == 0) return cf_recordfile_writer_open(path, true, out, err);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        cf_err_set(err, CF_ERR_IO, "cannot open record file \"%s\" for writing", path);
        cf_err_detail(err, "%s", strerror(errno));
        cf_err_where(err, "%s", path);
        return CF_ERR_IO;
    }
    struct stat st;
    cf_code rc = CF_OK;
    if (fstat(fd, &st) != 0) rc = resume_io(path, "inspect", err);
    else if (S_ISREG(st.st_mode)) rc = resume_repair(fd, path, (int64_t)st.st_size, info, err);
    FILE *fp = NULL;
    if (!rc && !(fp = fdopen(fd, "ab"))) rc = resume_io(path, "open", err);
    if (rc) {
        close(fd);
        return rc;
    }
    *out = cf_recordfile_writer_new(fp, path, true);
    if (info->size) learn_offsets(*out, path); /* offsets go on after the file's */
    return CF_OK;
}

cf_code cf_recordfile_write(cf_recordfile_writer *w, const cf_msg *m, cf_err *err) {
    cf_msg placed;
    if (m->offset < 0) {
        /* a record that was never in Kafka (a source's): the file is its
         * log, so it gets the next offset of its partition there (partition
         * 0 when none was chosen), as a broker would give it; readers (a
         * sink's --input) need the offsets to order changes */
        placed = *m;
        placed.partition = m->partition < 0 ? 0 : m->partition;
        next_offset *n = next_of(w, m->topic ? m->topic : "", placed.partition);
        placed.offset = n->next++;
        m = &placed;
    } else {
        next_offset *n = next_of(w, m->topic ? m->topic : "", m->partition < 0 ? 0 : m->partition);
        if (m->offset + 1 > n->next) n->next = m->offset + 1;
    }
    cf_recordfile_format(m, &w->buf);
    return w->buf.len >= WRITER_CHUNK ? write_out(w, err) : CF_OK;
}

cf_code cf_recordfile_writer_flush(cf_recordfile_writer *w, cf_err *err) {
    cf_code rc = write_out(w, err);
    if (rc) return rc;
    if (fflush(w->fp) != 0) {
        cf_err_set(err, CF_ERR_IO, "cannot write record file \"%s\"", w->name);
        cf_err_detail(err, "%s", strerror(errno));
        cf_err_where(err, "%s", w->name);
        return CF_ERR_IO;
    }
    /* fsync only where it means something (not pipes, not terminals) */
    int fd = fileno(w->fp);
    if (fd >= 0 && w->owns && fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
        cf_err_set(err, CF_ERR_IO, "cannot sync record file \"%s\"", w->name);
        cf_err_detail(err, "%s", strerror(errno));
        cf_err_where(err, "%s", w->name);
        return CF_ERR_IO;
    }
    return CF_OK;
}

cf_code cf_recordfile_writer_close(cf_recordfile_writer *w, cf_err *err) {
    if (!w) return CF_OK;
    cf_code rc = cf_recordfile_writer_flush(w, err);
    if (w->owns && fclose(w->fp) != 0 && rc == CF_OK) {
        cf_err_set(err, CF_ERR_IO, "cannot close record file \"%s\"", w->name);
        cf_err_detail(err, "%s", strerror(errno));
        rc = CF_ERR_IO;
    }
    cf_buf_free(&w->buf);
    for (size_t i = 0; i < w->n_next; i++) free(w->next[i].topic);
    free(w->next);
    free(w->name);
    free(w);
    return rc;
}
