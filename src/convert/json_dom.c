/*
 * json_dom.c - the JSON reader and writer helpers of the convert module (see
 * json_dom.h for why we do not use jansson here and which Jackson rules we
 * follow).
 */
#include "json_dom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cdcflow/text.h"

/* ---------------------------------------------------------------- reader */

typedef struct parser {
    cf_arena *arena;
    const char *p, *end, *base;
    int depth;
    /* scratch stack of pointers while a container is open */
    void **stack;
    size_t sp, scap;
    cf_err *err;
    /* json_parse_lazy: the top-level member named lazy_key is only checked
     * (dry mode: no tree, nothing allocated) and becomes a JN_RAW node */
    const char *lazy_key;
    const char *hint; /* json_parse_lazy_hint */
    size_t hint_len;
    bool hint_hit;
    bool dry;
    jnode scratch;
    char *sbuf; /* dry mode: unescape scratch */
    size_t sbuf_cap;
} parser;

static cf_code perr(parser *ps, const char *at, const char *fmt, const char *what) {
    size_t off = (size_t)(at - ps->base);
    size_t line = 1, col = 1;
    for (const char *q = ps->base; q < at; q++) {
        if (*q == '\n') line++, col = 1;
        else col++;
    }
    cf_err_set(ps->err, CF_ERR_INVALID, "invalid JSON: %s", what);
    if (at < ps->end) {
        unsigned char c = (unsigned char)*at;
        if (c >= 0x20 && c < 0x7f) cf_err_detail(ps->err, fmt, c);
        else cf_err_detail(ps->err, "found byte 0x%02x", c);
    } else {
        cf_err_detail(ps->err, "%s", "the input ended early");
    }
    cf_err_where(ps->err, "byte %zu (line %zu, column %zu)", off, line, col);
    return CF_ERR_INVALID;
}

static void push(parser *ps, void *x) {
    if (ps->sp == ps->scap) {
        ps->scap = ps->scap ? ps->scap * 2 : 64;
        ps->stack = cf_xrealloc(ps->stack, ps->scap * sizeof *ps->stack);
    }
    ps->stack[ps->sp++] = x;
}

static inline void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')) ps->p++;
}

static jnode *new_node(parser *ps, jn_type t, size_t start) {
    jnode *n = ps->dry ? &ps->scratch : cf_arena_alloc(ps->arena, sizeof *n);
    memset(n, 0, sizeof *n);
    n->type = t;
    n->start = start;
    return n;
}

/* True when none of the 8 bytes of w is a quote, a backslash, a control
 * character or non-ASCII: the bytes the string scan must look at one by one.
 * (Exact for "any such byte": the zero-byte tests have no false negatives,
 * and a byte >= 0x80 is caught by its own high bit.) String bodies are most
 * of a JSON line's bytes; a byte loop over them held JSON lines extraction
 * below 300 MB/s. With SSE2 (every x86-64) 16 bytes are tested at once. */
static inline bool plain8(uint64_t w) {
    const uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;
    uint64_t q = w ^ (0x22 * k01), b = w ^ (0x5c * k01);
    return ((((w - 0x20 * k01) & ~w) | ((q - k01) & ~q) | ((b - k01) & ~b) | w) & k80) == 0;
}

/* Parse a string starting at the opening quote. */
static cf_code parse_string(parser *ps, const char **out, size_t *out_len) {
    const char *s = ++ps->p; /* after the quote */
    /* fast scan: no escapes, ASCII or valid UTF-8 */
    const char *q = s;
    bool esc = false;
    while (q < ps->end) {
#ifdef __SSE2__
        if (ps->end - q >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
            __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                        _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                           /* signed: < 0x20 also catches bytes >= 0x80 */
                                           _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
            int m = _mm_movemask_epi8(special);
            if (m == 0) {
                q += 16;
                continue;
            }
            q += __builtin_ctz((unsigned)m); /* the byte loop below takes it */
        }
#endif
        if (ps->end - q >= 8) {
            uint64_t w;
            memcpy(&w, q, 8);
            if (plain8(w)) {
                q += 8;
                continue;
            }
        }
        unsigned char c = (unsigned char)*q;
        if (c == '"') break;
        if (c == '\\') { esc = true; q += 2; continue; }
        if (c < 0x20) return perr(ps, q, "unescaped control character 0x%02x in a string", "control character in string");
        if (c >= 0x80) {
            size_t n = cf_utf8_seq_len((const unsigned char *)q, (size_t)(ps->end - q));
            if (!n) return perr(ps, q, "invalid UTF-8 byte '%c'", "invalid UTF-8 in a string");
            q += n;
            continue;
        }
        q++;
    }
    if (q >= ps->end) return perr(ps, ps->end, "%c", "unterminated string");
    size_t raw = (size_t)(q - s);
    if (ps->dry && !esc) {
        *out = "";
        *out_len = 0;
        ps->p = q + 1;
        return CF_OK;
    }
    char *o;
    if (ps->dry) {
        if (ps->sbuf_cap < raw + 1) {
            ps->sbuf_cap = raw + 1 > 256 ? raw + 1 : 256;
            ps->sbuf = cf_xrealloc(ps->sbuf, ps->sbuf_cap);
        }
        o = ps->sbuf;
    } else {
        o = cf_arena_alloc(ps->arena, raw + 1);
    }
    if (!esc) {
        memcpy(o, s, raw);
        o[raw] = '\0';
        *out = o;
        *out_len = raw;
        ps->p = q + 1;
        return CF_OK;
    }
    size_t k = 0;
    const char *r = s;
    while (r < q) {
        if (*r != '\\') { o[k++] = *r++; continue; }
        r++;
        switch (*r) {
        case '"': o[k++] = '"'; r++; break;
        case '\\': o[k++] = '\\'; r++; break;
        case '/': o[k++] = '/'; r++; break;
        case 'b': o[k++] = '\b'; r++; break;
        case 'f': o[k++] = '\f'; r++; break;
        case 'n': o[k++] = '\n'; r++; break;
        case 'r': o[k++] = '\r'; r++; break;
        case 't': o[k++] = '\t'; r++; break;
        case 'u': {
            /* r is at the 'u'; the string's closing quote q bounds the escape */
            uint32_t cp = 0;
            size_t end;
            switch (cf_unicode_escape(r + 1, (size_t)(q - r - 1), 0, &cp, &end)) {
            case CF_UESC_OK: break;
            case CF_UESC_BAD_HEX: {
                const char *bad = r + 1 + end;
                return perr(ps, bad < ps->end ? bad : ps->end, "'%c' is not a hex digit", "invalid \\u escape");
            }
            case CF_UESC_NO_LOW:
                return perr(ps, r + 5, "'%c' does not start a low surrogate", "unpaired UTF-16 surrogate in \\u escape");
            case CF_UESC_LONE_LOW:
                return perr(ps, r - 1, "'%c' starts a lone low surrogate", "unpaired UTF-16 surrogate in \\u escape");
            }
            r += 1 + end;
            k += cf_utf8_encode(cp, o + k); /* never longer than the 6+ escape bytes */
            break;
        }
        default: return perr(ps, r, "'%c' cannot follow a backslash", "invalid escape in a string");
        }
    }
    o[k] = '\0';
    *out = o;
    *out_len = k;
    ps->p = q + 1;
    return CF_OK;
}

static cf_code parse_number(parser *ps, jnode *n) {
    const char *s = ps->p, *q = s;
    bool integral = true;
    if (q < ps->end && *q == '-') q++;
    if (q >= ps->end || !(*q >= '0' && *q <= '9')) return perr(ps, q, "'%c' where a digit was expected", "invalid number");
    if (*q == '0') {
        q++;
        if (q < ps->end && *q >= '0' && *q <= '9') return perr(ps, q, "'%c' after a leading zero", "leading zeros are not allowed");
    } else {
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < ps->end && *q == '.') {
        integral = false;
        q++;
        if (q >= ps->end || !(*q >= '0' && *q <= '9')) return perr(ps, q, "'%c' where a fraction digit was expected", "invalid number");
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        integral = false;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-')) q++;
        if (q >= ps->end || !(*q >= '0' && *q <= '9')) return perr(ps, q, "'%c' where an exponent digit was expected", "invalid number");
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    size_t len = (size_t)(q - s);
    if (len > JSON_MAX_NUMBER_LEN) return perr(ps, s, "'%c' starts a number longer than 1000 characters", "number too long");
    n->integral = integral;
    n->str = ps->dry ? "" : cf_arena_strndup(ps->arena, s, len);
    n->len = len;
    ps->p = q;
    return CF_OK;
}

static bool lit(parser *ps, const char *w, size_t n) {
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n) != 0) return false;
    ps->p += n;
    return true;
}

static uint32_t key_hash(const char *k, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 16777619u;
    return h;
}

/* Jackson keeps one entry per key: the last value at the first key's position. */
static size_t dedupe_members(cf_arena *a, jmember *m, size_t n) {
    if (n < 2) return n;
    bool dup = false;
    if (n <= 8) {
        for (size_t i = 0; i < n && !dup; i++)
            for (size_t j = i + 1; j < n && !dup; j++)
                if (m[i].klen == m[j].klen && memcmp(m[i].key, m[j].key, m[i].klen) == 0) dup = true;
    } else {
        size_t cap = 16;
        while (cap < n * 2) cap <<= 1;
        size_t *tab = cf_arena_alloc(a, cap * sizeof *tab); /* index + 1, 0 = empty */
        memset(tab, 0, cap * sizeof *tab);
        for (size_t i = 0; i < n && !dup; i++) {
            size_t h = key_hash(m[i].key, m[i].klen) & (cap - 1);
            while (tab[h]) {
                jmember *o = &m[tab[h] - 1];
                if (o->klen == m[i].klen && memcmp(o->key, m[i].key, o->klen) == 0) { dup = true; break; }
                h = (h + 1) & (cap - 1);
            }
            tab[h] = i + 1;
        }
    }
    if (!dup) return n;
    /* rare: quadratic is fine */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j;
        for (j = 0; j < k; j++)
            if (m[j].klen == m[i].klen && memcmp(m[j].key, m[i].key, m[i].klen) == 0) break;
        if (j < k) m[j].val = m[i].val;
        else m[k++] = m[i];
    }
    return k;
}

static cf_code parse_value(parser *ps, jnode **out);

static cf_code parse_array(parser *ps, jnode *n) {
    ps->p++; /* [ */
    size_t base = ps->sp;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return CF_OK;
    }
    for (;;) {
        jnode *item;
        cf_code rc = parse_value(ps, &item);
        if (rc) return rc;
        if (!ps->dry) push(ps, item);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == ']') { ps->p++; break; }
        return perr(ps, ps->p, "'%c' where ',' or ']' was expected", "expected ',' or ']' in an array");
    }
    if (ps->dry) return CF_OK;
    n->len = ps->sp - base;
    n->items = cf_arena_alloc(ps->arena, n->len * sizeof(jnode *));
    memcpy(n->items, ps->stack + base, n->len * sizeof(jnode *));
    ps->sp = base;
    return CF_OK;
}

static cf_code parse_object(parser *ps, jnode *n) {
    ps->p++; /* { */
    size_t base = ps->sp;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return CF_OK;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"')
            return perr(ps, ps->p, "'%c' where a quoted field name was expected", "expected a field name");
        const char *k;
        size_t kl;
        cf_code rc = parse_string(ps, &k, &kl);
        if (rc) return rc;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') return perr(ps, ps->p, "'%c' where ':' was expected", "expected ':' after a field name");
        ps->p++;
        jnode *v;
        if (ps->lazy_key && ps->depth == 1 && !ps->dry && strcmp(k, ps->lazy_key) == 0) {
            skip_ws(ps);
            size_t vstart = (size_t)(ps->p - ps->base);
            if (ps->hint_len && (size_t)(ps->end - ps->p) >= ps->hint_len &&
                memcmp(ps->p, ps->hint, ps->hint_len) == 0) {
                /* the hint is a complete object seen before: its closing
                 * brace ends the value here too, no need to scan it again */
                ps->p += ps->hint_len;
                ps->hint_hit = true;
            } else {
                ps->dry = true;
                rc = parse_value(ps, &v);
                ps->dry = false;
                if (rc) return rc;
            }
            v = new_node(ps, JN_RAW, vstart);
            v->end = (size_t)(ps->p - ps->base);
            v->str = ps->base + vstart;
            v->len = v->end - vstart;
        } else {
            rc = parse_value(ps, &v);
            if (rc) return rc;
        }
        if (ps->dry) goto next;
        push(ps, (void *)k);
        push(ps, (void *)(uintptr_t)kl);
        push(ps, v);
    next:
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == '}') { ps->p++; break; }
        return perr(ps, ps->p, "'%c' where ',' or '}' was expected", "expected ',' or '}' in an object");
    }
    if (ps->dry) return CF_OK;
    size_t cnt = (ps->sp - base) / 3;
    jmember *m = cf_arena_alloc(ps->arena, cnt * sizeof *m);
    for (size_t i = 0; i < cnt; i++) {
        m[i].key = ps->stack[base + 3 * i];
        m[i].klen = (size_t)(uintptr_t)ps->stack[base + 3 * i + 1];
        m[i].val = ps->stack[base + 3 * i + 2];
    }
    ps->sp = base;
    n->members = m;
    n->len = dedupe_members(ps->arena, m, cnt);
    return CF_OK;
}

static cf_code parse_value(parser *ps, jnode **out) {
    skip_ws(ps);
    if (ps->p >= ps->end) return perr(ps, ps->p, "%c", "expected a value");
    size_t start = (size_t)(ps->p - ps->base);
    jnode *n;
    cf_code rc = CF_OK;
    switch (*ps->p) {
    case '{':
    case '[':
        if (++ps->depth > JSON_MAX_DEPTH) return perr(ps, ps->p, "'%c' opens level 1001", "nesting deeper than 1000 levels");
        n = new_node(ps, *ps->p == '{' ? JN_OBJECT : JN_ARRAY, start);
        rc = n->type == JN_OBJECT ? parse_object(ps, n) : parse_array(ps, n);
        ps->depth--;
        break;
    case '"':
        n = new_node(ps, JN_STRING, start);
        rc = parse_string(ps, &n->str, &n->len);
        break;
    case 't':
        n = new_node(ps, JN_TRUE, start);
        if (!lit(ps, "true", 4)) return perr(ps, ps->p, "'%c' starts an unknown literal", "unrecognized token");
        break;
    case 'f':
        n = new_node(ps, JN_FALSE, start);
        if (!lit(ps, "false", 5)) return perr(ps, ps->p, "'%c' starts an unknown literal", "unrecognized token");
        break;
    case 'n':
        n = new_node(ps, JN_NULL, start);
        if (!lit(ps, "null", 4)) return perr(ps, ps->p, "'%c' starts an unknown literal", "unrecognized token");
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
            n = new_node(ps, JN_NUMBER, start);
            rc = parse_number(ps, n);
        } else {
            return perr(ps, ps->p, "'%c' cannot start a value", "unexpected character");
        }
    }
    if (rc) return rc;
    n->end = (size_t)(ps->p - ps->base);
    *out = n;
    return CF_OK;
}

cf_code json_parse(cf_arena *arena, const char *data, size_t len, jnode **out, cf_err *err) {
    return json_parse_lazy(arena, data, len, NULL, out, err);
}

cf_code json_parse_lazy(cf_arena *arena, const char *data, size_t len, const char *lazy_key, jnode **out, cf_err *err) {
    return json_parse_lazy_hint(arena, data, len, lazy_key, NULL, 0, NULL, out, err);
}

cf_code json_parse_lazy_hint(cf_arena *arena, const char *data, size_t len, const char *lazy_key, const char *hint,
                             size_t hint_len, bool *hint_hit, jnode **out, cf_err *err) {
    parser ps = {.arena = arena, .p = data, .end = data + len, .base = data, .err = err, .lazy_key = lazy_key};
    if (hint && hint_len && hint[0] == '{') ps.hint = hint, ps.hint_len = hint_len;
    *out = NULL;
    jnode *n = NULL;
    cf_code rc = parse_value(&ps, &n);
    if (!rc) {
        skip_ws(&ps);
        if (ps.p < ps.end) rc = perr(&ps, ps.p, "'%c' after the end of the value", "trailing data after the JSON value");
    }
    free(ps.stack);
    free(ps.sbuf);
    if (hint_hit) *hint_hit = !rc && ps.hint_hit;
    if (!rc) *out = n;
    return rc;
}

const jnode *json_get(const jnode *obj, const char *key) {
    if (!obj || obj->type != JN_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < obj->len; i++)
        if (obj->members[i].klen == kl && memcmp(obj->members[i].key, key, kl) == 0) return obj->members[i].val;
    return NULL;
}

const char *json_type_name(const jnode *n) {
    if (!n) return "MISSING";
    switch (n->type) {
    case JN_NULL: return "NULL";
    case JN_FALSE:
    case JN_TRUE: return "BOOLEAN";
    case JN_NUMBER: return "NUMBER";
    case JN_STRING: return "STRING";
    case JN_ARRAY: return "ARRAY";
    case JN_OBJECT: return "OBJECT";
    case JN_RAW: return "RAW";
    }
    return "?";
}

/* ---------------------------------------------------------------- writer */

void json_write_string(cf_buf *b, const char *s, size_t len) {
    cf_json_write_string(b, s, len, CF_JSON_REPLACE_BYTES);
}

static bool write_non_finite(cf_buf *b, double d, bool quote) {
    const char *s = NULL;
    if (isnan(d)) s = "NaN";
    else if (isinf(d)) s = d > 0 ? "Infinity" : "-Infinity";
    if (!s) return false;
    if (quote) cf_buf_printf(b, "\"%s\"", s);
    else cf_buf_append_str(b, s);
    return true;
}

void json_write_double(cf_buf *b, double d, bool quote_non_finite) {
    if (!write_non_finite(b, d, quote_non_finite)) cf_java_double_text(b, d);
}

void json_write_float(cf_buf *b, float f, bool quote_non_finite) {
    if (!write_non_finite(b, f, quote_non_finite)) cf_java_float_text(b, f);
}

void json_write_bigdecimal(cf_buf *b, const char *unscaled, int32_t scale) { cf_java_bigdecimal_text(b, unscaled, scale); }

void json_write_base64(cf_buf *b, const uint8_t *p, size_t n) { cf_base64_encode(b, p, n); }

bool json_base64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len) {
    while (n > 0 && s[n - 1] == '=') n--; /* padding is optional */
    if (n % 4 == 1) return false;
    uint8_t *o = cf_xmalloc(n / 4 * 3 + 3 + 1);
    size_t k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = cf_base64_digit((unsigned char)s[i]);
        if (v < 0) {
            free(o);
            return false;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[k++] = (uint8_t)(acc >> bits);
        }
    }
    o[k] = 0;
    *out = o;
    *out_len = k;
    return true;
}
