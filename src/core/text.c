/*
 * text.c - UTF-8, hex, \u escapes, base64 and JSON string escaping shared by
 * config, convert and transport (see include/cdcflow/text.h for the rules it
 * owns). These were three private copies once; one copy means a fix to, say,
 * the surrogate rule reaches the config parser and both JSON readers at once.
 */
#include "cdcflow/text.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t cf_utf8_seq_len(const unsigned char *p, size_t avail) {
    unsigned c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if (avail < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    /* overlong forms, surrogates and values past Unicode are not UTF-8 (RFC 3629) */
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

bool cf_utf8_valid(const void *s, size_t n) {
    const unsigned char *p = s;
    size_t i = 0;
    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = cf_utf8_seq_len(p + i, n - i);
        if (!len) return false;
        i += len;
    }
    return true;
}

size_t cf_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

void cf_buf_append_utf8(cf_buf *b, uint32_t cp) {
    char u[4];
    cf_buf_append(b, u, cf_utf8_encode(cp, u));
}

int cf_hex_digit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at s[at..at+4) within n; on failure *bad is the first non-digit. */
static bool hex4(const char *s, size_t n, size_t at, uint32_t *v, size_t *bad) {
    uint32_t x = 0;
    for (size_t k = at; k < at + 4; k++) {
        int h = k < n ? cf_hex_digit((unsigned char)s[k]) : -1;
        if (h < 0) {
            *bad = k < n ? k : n;
            return false;
        }
        x = (x << 4) | (uint32_t)h;
    }
    *v = x;
    return true;
}

cf_uescape cf_unicode_escape(const char *s, size_t n, size_t at, uint32_t *cp, size_t *end) {
    uint32_t v, lo;
    size_t bad;
    if (!hex4(s, n, at, &v, &bad)) {
        *end = bad;
        return CF_UESC_BAD_HEX;
    }
    size_t i = at + 4;
    if (v >= 0xdc00 && v <= 0xdfff) {
        *end = i;
        return CF_UESC_LONE_LOW;
    }
    if (v >= 0xd800 && v <= 0xdbff) {
        if (!(i + 6 <= n && s[i] == '\\' && s[i + 1] == 'u' && hex4(s, n, i + 2, &lo, &bad) && lo >= 0xdc00 &&
              lo <= 0xdfff)) {
            *end = i;
            return CF_UESC_NO_LOW;
        }
        v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
        i += 6;
    }
    *cp = v;
    *end = i;
    return CF_UESC_OK;
}

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/* The two characters of every 12-bit value, made by the preprocessor (a
 * constant table: no initialization at run time) */
#define B64C(v) (char)((v) < 26 ? 'A' + (v) : (v) < 52 ? 'a' + (v) - 26 : (v) < 62 ? '0' + (v) - 52 : (v) == 62 ? '+' : '/')
#define B64P1(i) B64C((i) >> 6), B64C((i) & 63),
#define B64P4(i) B64P1(i) B64P1(i + 1) B64P1(i + 2) B64P1(i + 3)
#define B64P16(i) B64P4(i) B64P4(i + 4) B64P4(i + 8) B64P4(i + 12)
#define B64P64(i) B64P16(i) B64P16(i + 16) B64P16(i + 32) B64P16(i + 48)
#define B64P256(i) B64P64(i) B64P64(i + 64) B64P64(i + 128) B64P64(i + 192)
#define B64P1024(i) B64P256(i) B64P256(i + 256) B64P256(i + 512) B64P256(i + 768)
static const char b64_pairs[8192] = {B64P1024(0) B64P1024(1024) B64P1024(2048) B64P1024(3072)};

void cf_base64_encode(cf_buf *b, const uint8_t *p, size_t n) {
    const char *restrict a = b64_alphabet;
    cf_buf_reserve(b, (n + 2) / 3 * 4);
    /* into the reserved room directly (restrict: the stores do not make the
     * compiler load the input again): a call per 3 bytes was most of a
     * record-file line's cost (bench_sidecar) */
    char *restrict o = b->data + b->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3, o += 4) { /* 12 bits -> 2 characters per lookup */
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        memcpy(o, b64_pairs + 2 * (v >> 12), 2);
        memcpy(o + 2, b64_pairs + 2 * (v & 4095), 2);
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        o[0] = a[v >> 18], o[1] = a[(v >> 12) & 63], o[2] = '=', o[3] = '=';
        o += 4;
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        o[0] = a[v >> 18], o[1] = a[(v >> 12) & 63], o[2] = a[(v >> 6) & 63], o[3] = '=';
        o += 4;
    }
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
}

int cf_base64_digit(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

void cf_json_write_string(cf_buf *b, const char *s, size_t n, cf_json_bytes invalid) {
    static const char hex[] = "0123456789ABCDEF";
    cf_buf_reserve(b, n + 2);
    cf_buf_append_byte(b, '"');
    size_t run = 0; /* start of the bytes not yet copied */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            if (invalid == CF_JSON_RAW_BYTES) continue;
            size_t len = cf_utf8_seq_len((const unsigned char *)s + i, n - i);
            if (len) {
                i += len - 1;
                continue;
            }
            cf_buf_append(b, s + run, i - run);
            cf_buf_append(b, "\xEF\xBF\xBD", 3);
            run = i + 1;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        cf_buf_append(b, s + run, i - run);
        run = i + 1;
        char e[6] = {'\\', 0};
        switch (c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\b': e[1] = 'b'; break;
        case '\t': e[1] = 't'; break;
        case '\n': e[1] = 'n'; break;
        case '\f': e[1] = 'f'; break;
        case '\r': e[1] = 'r'; break;
        default:
            e[1] = 'u', e[2] = '0', e[3] = '0', e[4] = hex[c >> 4], e[5] = hex[c & 15];
            cf_buf_append(b, e, 6);
            continue;
        }
        cf_buf_append(b, e, 2);
    }
    cf_buf_append(b, s + run, n - run);
    cf_buf_append_byte(b, '"');
}

/* ---------------- civil dates (Howard Hinnant's algorithms) ---------------- */

void cf_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

int64_t cf_days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}


/* ---------------------------------------------------------------- Java number texts */

static bool non_finite(cf_buf *b, double d) {
    if (isnan(d)) cf_buf_append_str(b, "NaN");
    else if (isinf(d)) cf_buf_append_str(b, d > 0 ? "Infinity" : "-Infinity");
    else return false;
    return true;
}

/* Java's (JDK 19+) Double.toString / Float.toString layout of the shortest
 * decimal digits `dig` (no leading zeros) with decimal exponent `e10` such
 * that value = 0.d1d2d3... * 10^e10. */
static void java_layout(cf_buf *b, bool neg, const char *dig, int nd, int e10) {
    if (neg) cf_buf_append_byte(b, '-');
    int sci = e10 - 1; /* exponent in d.ddd form */
    if (sci >= -3 && sci < 7) {
        if (e10 <= 0) {
            cf_buf_append_str(b, "0.");
            for (int i = 0; i < -e10; i++) cf_buf_append_byte(b, '0');
            cf_buf_append(b, dig, (size_t)nd);
        } else if (nd <= e10) {
            cf_buf_append(b, dig, (size_t)nd);
            for (int i = nd; i < e10; i++) cf_buf_append_byte(b, '0');
            cf_buf_append_str(b, ".0");
        } else {
            cf_buf_append(b, dig, (size_t)e10);
            cf_buf_append_byte(b, '.');
            cf_buf_append(b, dig + e10, (size_t)(nd - e10));
        }
    } else {
        cf_buf_append_byte(b, dig[0]);
        cf_buf_append_byte(b, '.');
        if (nd > 1) cf_buf_append(b, dig + 1, (size_t)(nd - 1));
        else cf_buf_append_byte(b, '0');
        cf_buf_printf(b, "E%d", sci);
    }
}

/* Shortest %.Ne digits that read back to the same value. */
static void shortest(double d, bool is_float, char *dig, int *nd, int *e10) {
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        bool same = is_float ? (strtof(tmp, NULL) == (float)d) : (strtod(tmp, NULL) == d);
        if (same || prec == 17) break;
    }
    /* tmp = "d.ddde[+-]xx" */
    int k = 0;
    const char *q = tmp;
    while (*q && *q != 'e') {
        if (*q >= '0' && *q <= '9') dig[k++] = *q;
        q++;
    }
    int ex = atoi(q + 1);
    while (k > 1 && dig[k - 1] == '0') k--;
    dig[k] = '\0';
    *nd = k;
    *e10 = ex + 1;
}

void cf_java_double_text(cf_buf *b, double d) {
    if (non_finite(b, d)) return;
    if (d == 0) {
        cf_buf_append_str(b, signbit(d) ? "-0.0" : "0.0");
        return;
    }
    char dig[40];
    int nd, e10;
    shortest(fabs(d), false, dig, &nd, &e10);
    java_layout(b, d < 0, dig, nd, e10);
}

void cf_java_float_text(cf_buf *b, float f) {
    if (non_finite(b, f)) return;
    if (f == 0) {
        cf_buf_append_str(b, signbit(f) ? "-0.0" : "0.0");
        return;
    }
    char dig[40];
    int nd, e10;
    shortest(fabs((double)f), true, dig, &nd, &e10);
    java_layout(b, f < 0, dig, nd, e10);
}

void cf_java_bigdecimal_text(cf_buf *b, const char *unscaled, int32_t scale) {
    bool neg = unscaled[0] == '-';
    const char *c = unscaled + (neg ? 1 : 0);
    long n = (long)strlen(c);
    long adjusted = -(long)scale + (n - 1);
    if (neg) cf_buf_append_byte(b, '-');
    if (scale >= 0 && adjusted >= -6) {
        if (scale == 0) {
            cf_buf_append(b, c, (size_t)n);
        } else if (n > scale) {
            cf_buf_append(b, c, (size_t)(n - scale));
            cf_buf_append_byte(b, '.');
            cf_buf_append(b, c + n - scale, (size_t)scale);
        } else {
            cf_buf_append_str(b, "0.");
            for (long i = n; i < scale; i++) cf_buf_append_byte(b, '0');
            cf_buf_append(b, c, (size_t)n);
        }
        return;
    }
    cf_buf_append_byte(b, c[0]);
    if (n > 1) {
        cf_buf_append_byte(b, '.');
        cf_buf_append(b, c + 1, (size_t)(n - 1));
    }
    if (adjusted != 0) cf_buf_printf(b, "E%s%ld", adjusted > 0 ? "+" : "", adjusted);
}

/* ---------------------------------------------------------------- did you mean */

size_t cf_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 200 || lb > 200) return (size_t)-1;
    size_t prev[201], cur[201];
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof(size_t));
    }
    return prev[lb];
}

bool cf_close_enough(const char *typed, size_t d) {
    size_t len = strlen(typed);
    return d != (size_t)-1 && d <= (len < 6 ? 2 : len / 3 + 1);
}

static const char *simple_name(const char *s) {
    const char *dot = strrchr(s, '.');
    return dot ? dot + 1 : s;
}

const char *cf_did_you_mean(const char *typed, const char *const *cands, size_t n) {
    if (!typed || !*typed) return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    const char *ts = simple_name(typed);
    for (size_t i = 0; i < n; i++) {
        if (!cands[i]) continue;
        size_t d = cf_edit_distance(typed, cands[i]);
        if (cf_close_enough(typed, d) && d < best_d) best_d = d, best = cands[i];
        /* the simple names, a little worse than a full match at the same distance */
        size_t ds = cf_edit_distance(ts, simple_name(cands[i]));
        if (cf_close_enough(ts, ds) && ds + 1 < best_d) best_d = ds + 1, best = cands[i];
    }
    return best;
}
