/*
 * seq.c - BigQuery's _CHANGE_SEQUENCE_NUMBER: parse, compare, format, and
 * kcbq's name sanitizer.
 *
 * The text form we write is fixed-width (16 hex digits per section), so that
 * within one table (fixed section count) comparing the text byte by byte is
 * the same as BigQuery's section-by-section unsigned comparison; the targets
 * rely on that to compare in SQL.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/sink.h"

int cf_seq_compare(const cf_seq *a, const cf_seq *b) {
    uint8_t n = a->n < b->n ? a->n : b->n;
    for (uint8_t i = 0; i < n; i++) {
        if (a->s[i] != b->s[i]) return a->s[i] < b->s[i] ? -1 : 1;
    }
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return 0;
}

char *cf_seq_format(const cf_seq *s, char buf[CF_SEQ_TEXT_MAX]) {
    static const char hex[] = "0123456789abcdef";
    char *p = buf;
    for (uint8_t i = 0; i < s->n && i < CF_SEQ_MAX_SECTIONS; i++) {
        if (i) *p++ = '/';
        uint64_t v = s->s[i];
        for (int d = 15; d >= 0; d--) p[d] = hex[v & 15], v >>= 4;
        p += 16;
    }
    *p = 0;
    return buf;
}

cf_code cf_seq_parse(const char *text, cf_seq *out, cf_err *err) {
    cf_seq r = {{0}, 0};
    const char *p = text;
    if (!text || !*text)
        return cf_err_set(err, CF_ERR_INVALID, "empty change sequence number"),
               cf_err_hint(err, "BigQuery's format is 1 to 4 '/'-separated sections of 1 to 16 hex digits"),
               CF_ERR_INVALID;
    for (;;) {
        if (r.n == CF_SEQ_MAX_SECTIONS) {
            cf_err_set(err, CF_ERR_INVALID, "change sequence number \"%s\" has more than 4 sections", text);
            cf_err_hint(err, "BigQuery's format is 1 to 4 '/'-separated sections of 1 to 16 hex digits");
            return CF_ERR_INVALID;
        }
        uint64_t v = 0;
        int digits = 0;
        while (isxdigit((unsigned char)*p)) {
            int c = (unsigned char)*p;
            int d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
            v = (v << 4) | (uint64_t)d;
            digits++, p++;
        }
        if (digits == 0 || digits > 16) {
            cf_err_set(err, CF_ERR_INVALID, "change sequence number \"%s\": section %u has %d hex digits", text,
                       (unsigned)r.n + 1, digits);
            cf_err_detail(err, "a section must have 1 to 16 hex digits (0-9, a-f, A-F)");
            cf_err_hint(err, "use '/' between sections, e.g. \"%016" PRIx64 "/%016" PRIx64 "\"", (uint64_t)5,
                        (uint64_t)42);
            return CF_ERR_INVALID;
        }
        r.s[r.n++] = v;
        if (*p == 0) break;
        if (*p != '/') {
            cf_err_set(err, CF_ERR_INVALID, "change sequence number \"%s\": unexpected character '%c' at %zu", text,
                       *p, (size_t)(p - text));
            cf_err_hint(err, "BigQuery's format is 1 to 4 '/'-separated sections of 1 to 16 hex digits");
            return CF_ERR_INVALID;
        }
        p++;
    }
    *out = r;
    return CF_OK;
}

char *cf_sink_sanitize_name(const char *name) {
    size_t n = strlen(name);
    char *r = cf_xmalloc(n + 2);
    char *p = r;
    if (n == 0 || !(isalpha((unsigned char)name[0]) || name[0] == '_')) {
        /* kcbq tests the name after replacement: only a digit (or empty) gets
         * the prefix, since other characters became '_' already. */
        if (n == 0 || isdigit((unsigned char)name[0])) *p++ = '_';
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if ((c & 0xC0) == 0x80) continue; /* one '_' per UTF-8 character, as Java's per-char replace */
        *p++ = (isalnum(c) || c == '_') && c < 128 ? (char)c : '_';
    }
    *p = 0;
    return r;
}
