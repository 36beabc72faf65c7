/*
 * ranges.c - the Murmur3 token ranges a sidecar owns (see cdcflow/sidecar.h).
 *
 * Cassandra's ranges are (start, end]: the token after start up to end
 * included; start >= end wraps past Long.MAX_VALUE to Long.MIN_VALUE. Several
 * sidecars over the same data, each with its own ranges, publish every
 * change once in total when their ranges cover the ring without overlap.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/sidecar.h"

static bool parse_token(const char **p, int64_t *out) {
    while (isspace((unsigned char)**p)) (*p)++;
    errno = 0;
    char *end;
    long long v = strtoll(*p, &end, 10);
    if (end == *p || errno == ERANGE) return false;
    *out = (int64_t)v;
    *p = end;
    while (isspace((unsigned char)**p)) (*p)++;
    return true;
}

cf_code cf_sc_ranges_parse(const char *text, cf_sc_ranges *out, cf_err *err) {
    out->r = NULL;
    out->n = 0;
    const char *p = text ? text : "";
    while (isspace((unsigned char)*p)) p++;
    if (!*p || strcasecmp(p, "all") == 0) return CF_OK;
    size_t cap = 0;
    while (*p) {
        const char *at = p;
        int64_t a, b;
        if (*p != '(') goto bad;
        p++;
        if (!parse_token(&p, &a) || *p != ',') goto bad;
        p++;
        if (!parse_token(&p, &b) || *p != ']') goto bad;
        p++;
        if (out->n == cap) out->r = cf_xrealloc(out->r, (cap = cap ? cap * 2 : 4) * sizeof *out->r);
        out->r[out->n++] = (cf_sc_range){a, b};
        while (isspace((unsigned char)*p) || *p == ';') p++;
        continue;
    bad:
        cf_err_set(err, CF_ERR_CONFIG, "invalid token range at \"%.40s\"", at);
        cf_err_detail(err, "in \"%s\"", text);
        cf_err_hint(err, "Write ranges as Cassandra does, (start,end] with signed 64-bit tokens, separated by ';', "
                         "e.g. (-9223372036854775808,0];(0,9223372036854775807]; or \"all\".");
        cf_sc_ranges_free(out);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

void cf_sc_ranges_free(cf_sc_ranges *r) {
    free(r->r);
    r->r = NULL;
    r->n = 0;
}

bool cf_sc_ranges_contain(const cf_sc_ranges *r, int64_t t) {
    if (!r || r->n == 0) return true;
    for (size_t i = 0; i < r->n; i++) {
        int64_t a = r->r[i].start, b = r->r[i].end;
        if (a < b ? (t > a && t <= b) : (t > a || t <= b)) return true;
    }
    return false;
}

void cf_sc_ranges_format(const cf_sc_ranges *r, cf_buf *out) {
    if (!r || r->n == 0) {
        cf_buf_append_str(out, "all");
        return;
    }
    for (size_t i = 0; i < r->n; i++)
        cf_buf_printf(out, "%s(%lld,%lld]", i ? ";" : "", (long long)r->r[i].start, (long long)r->r[i].end);
}
