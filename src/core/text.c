/*
 * text.c - UTF-8, hex, \u escapes, base64 and JSON string escaping shared by
 * config, convert and transport (see include/cdcflow/text.h for the rules it
 * owns). These were three private copies once; one copy means a fix to, say,
 * the surrogate rule reaches the config parser and both JSON readers at once.
 */
#include "cdcflow/text.h"

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

void cf_base64_encode(cf_buf *b, const uint8_t *p, size_t n) {
    const char *a = b64_alphabet;
    cf_buf_reserve(b, (n + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        char o[4] = {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], a[v & 63]};
        cf_buf_append(b, o, 4);
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        char o[4] = {a[v >> 18], a[(v >> 12) & 63], '=', '='};
        cf_buf_append(b, o, 4);
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        char o[4] = {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], '='};
        cf_buf_append(b, o, 4);
    }
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
