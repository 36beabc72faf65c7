/*
 * regex_router.c - org.apache.kafka.connect.transforms.RegexRouter: if the
 * whole topic matches `regex`, the topic becomes `replacement` with $n
 * group references filled in (Java's Matcher.replaceFirst on a full match).
 *
 * Java regular expressions are run with the C library's POSIX extended
 * regex after a conversion of the common Java syntax:
 *   supported  . * + ? {n,m} | ( ) [...] [^...] ^ $, escapes of
 *              punctuation (\. \- \$ ...), \d \D \w \W \s \S (also inside
 *              [...] for \d \w \s), \t \n \r \f, \Q...\E literal blocks
 *   refused    (?...) groups of any kind (non-capturing, named, lookaround,
 *              inline flags), lazy and possessive quantifiers (*? +?, *+),
 *              back-references \1, \b \B \A \z \Z \p{..}, [a&&b] and nested
 *              classes - each with an error naming the construct
 * Matching is POSIX leftmost-longest rather than Java's backtracking order;
 * for a full-string match the groups agree except for ambiguous patterns
 * such as (a*)(a*). Replacement syntax is Java's: $n (the longest group
 * number that exists, as Java reads digits), \x for a literal x; ${name}
 * is refused (no named groups).
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/transforms.h"
#include "xf_util.h"

typedef struct rr {
    regex_t re;
    size_t ngroups; /* Java's groups; ours are one more (the wrapping group) */
    char *replacement;
    regmatch_t *m;   /* ngroups + 2 */
} rr;

static const cf_cfg_def rr_defs[] = {
    {.name = "regex", .type = CF_CFG_STRING, .default_value = CF_CFG_REQUIRED, .importance = CF_IMPORTANCE_HIGH,
     .group = "Routing", .doc = "Regular expression to use for matching (Java syntax; see the supported subset)."},
    {.name = "replacement", .type = CF_CFG_STRING, .default_value = CF_CFG_REQUIRED, .importance = CF_IMPORTANCE_HIGH,
     .group = "Routing", .doc = "Replacement string, with `$1` style group references."},
    {.name = NULL},
};

const cf_cfg_table cf_regex_router_table = {
    .name = "RegexRouter",
    .title = "RegexRouter (`org.apache.kafka.connect.transforms.RegexRouter`)",
    .intro = "Update the record topic using the configured regular expression and replacement string: when the "
             "whole topic matches `regex`, it becomes `replacement` with `$1`-style group references filled in. "
             "Java regex syntax is translated to POSIX extended regex: supported are `. * + ? {n,m} | ( ) [...] [^...] "
             "^ $`, escaped punctuation (`\\.`), `\\d \\D \\w \\W \\s \\S`, `\\t \\n \\r \\f` and "
             "`\\Q...\\E`; refused with an error are `(?...)` groups (non-capturing, named, lookaround, flags), lazy "
             "and possessive quantifiers, back-references, `\\b`, `\\p{..}`, nested classes and `&&`. Matching is "
             "POSIX leftmost-longest, which gives the same groups as Java except for ambiguous patterns such as "
             "`(a*)(a*)`. In `replacement`, `\\$` is a literal dollar; `${name}` is not supported.",
    .defs = rr_defs,
};

static cf_code unsupported(cf_err *err, const char *regex, size_t at, const char *what) {
    cf_err_set(err, CF_ERR_CONFIG, "regex: %s is not supported", what);
    cf_err_detail(err, "in \"%s\" at character %zu", regex, at);
    cf_err_hint(err, "Supported: . * + ? {n,m} | ( ) [..] ^ $ \\d \\w \\s and escaped punctuation (POSIX regex).");
    return CF_ERR_CONFIG;
}

static bool is_ere_special(char c) { return strchr(".[]()*+?{}|^$\\", c) != NULL; }

/* Java regex -> POSIX ERE. *groups counts capturing groups. */
static cf_code java_to_ere(const char *j, cf_buf *o, size_t *groups, cf_err *err) {
    size_t n = strlen(j);
    *groups = 0;
    for (size_t i = 0; i < n; i++) {
        char c = j[i];
        if (c == '\\') {
            if (i + 1 >= n) return unsupported(err, j, i, "a trailing backslash");
            char e = j[++i];
            switch (e) {
            case 'd': cf_buf_append_str(o, "[0-9]"); break;
            case 'D': cf_buf_append_str(o, "[^0-9]"); break;
            case 'w': cf_buf_append_str(o, "[A-Za-z0-9_]"); break;
            case 'W': cf_buf_append_str(o, "[^A-Za-z0-9_]"); break;
            case 's': cf_buf_append_str(o, "[ \t\n\v\f\r]"); break;
            case 'S': cf_buf_append_str(o, "[^ \t\n\v\f\r]"); break;
            case 't': cf_buf_append_byte(o, '\t'); break;
            case 'n': cf_buf_append_byte(o, '\n'); break;
            case 'r': cf_buf_append_byte(o, '\r'); break;
            case 'f': cf_buf_append_byte(o, '\f'); break;
            case 'Q': {
                const char *end = strstr(j + i + 1, "\\E");
                size_t stop = end ? (size_t)(end - j) : n;
                for (size_t k = i + 1; k < stop; k++) {
                    if (is_ere_special(j[k])) cf_buf_append_byte(o, '\\');
                    cf_buf_append_byte(o, (uint8_t)j[k]);
                }
                i = end ? stop + 1 : n;
                break;
            }
            default:
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
                    char what[32];
                    snprintf(what, sizeof what, "\\%c", e);
                    return unsupported(err, j, i - 1, what);
                }
                if (is_ere_special(e)) cf_buf_append_byte(o, '\\');
                cf_buf_append_byte(o, (uint8_t)e);
            }
            continue;
        }
        if (c == '(') {
            if (i + 1 < n && j[i + 1] == '?') return unsupported(err, j, i, "a (?...) group");
            (*groups)++;
            cf_buf_append_byte(o, '(');
            continue;
        }
        if (c == '*' || c == '+' || c == '?' || c == '}') {
            cf_buf_append_byte(o, (uint8_t)c);
            if (i + 1 < n && (j[i + 1] == '?' || j[i + 1] == '+'))
                return unsupported(err, j, i + 1, j[i + 1] == '?' ? "a lazy quantifier" : "a possessive quantifier");
            continue;
        }
        if (c == '[') {
            /* a bracket expression: collect items, rebuild for POSIX */
            size_t k = i + 1;
            bool neg = false;
            if (k < n && j[k] == '^') neg = true, k++;
            cf_buf items = CF_BUF_INIT;
            bool lit_rbracket = false, lit_dash = false, lit_caret = false;
            bool first = true;
            for (; k < n && (j[k] != ']' || first); k++) {
                char d = j[k];
                if (d == ']' && first) { /* Java: "[]" is an error; "[]a]" too. Treat a leading ] as literal. */
                    lit_rbracket = true;
                } else if (d == '\\') {
                    if (k + 1 >= n) break;
                    char e = j[++k];
                    if (e == 'd') cf_buf_append_str(&items, "0-9");
                    else if (e == 'w') cf_buf_append_str(&items, "A-Za-z0-9_");
                    else if (e == 's') cf_buf_append_str(&items, " \t\n\v\f\r");
                    else if (e == 't') cf_buf_append_byte(&items, '\t');
                    else if (e == 'n') cf_buf_append_byte(&items, '\n');
                    else if (e == 'r') cf_buf_append_byte(&items, '\r');
                    else if (e == ']') lit_rbracket = true;
                    else if (e == '-') lit_dash = true;
                    else if (e == '^') lit_caret = true;
                    else if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
                        cf_buf_free(&items);
                        char what[48];
                        snprintf(what, sizeof what, "\\%c inside [...]", e);
                        return unsupported(err, j, k - 1, what);
                    } else cf_buf_append_byte(&items, (uint8_t)e);
                } else if (d == '[') {
                    cf_buf_free(&items);
                    return unsupported(err, j, k, "a nested character class");
                } else if (d == '&' && k + 1 < n && j[k + 1] == '&') {
                    cf_buf_free(&items);
                    return unsupported(err, j, k, "a class intersection (&&)");
                } else if (d == '^') {
                    lit_caret = true;
                } else {
                    cf_buf_append_byte(&items, (uint8_t)d);
                }
                first = false;
            }
            if (k >= n) {
                cf_buf_free(&items);
                cf_err_set(err, CF_ERR_CONFIG, "regex: Unclosed character class");
                cf_err_detail(err, "in \"%s\" near index %zu", j, n - 1);
                return CF_ERR_CONFIG;
            }
            cf_buf_append_byte(o, '[');
            if (neg) cf_buf_append_byte(o, '^');
            if (lit_rbracket) cf_buf_append_byte(o, ']');
            if (items.len) cf_buf_append(o, items.data, items.len);
            if (lit_caret) cf_buf_append_byte(o, '^');
            if (lit_dash) cf_buf_append_byte(o, '-');
            if (!items.len && !lit_rbracket && !lit_caret && !lit_dash) {
                cf_buf_free(&items);
                return unsupported(err, j, i, "an empty character class");
            }
            cf_buf_append_byte(o, ']');
            cf_buf_free(&items);
            i = k;
            continue;
        }
        cf_buf_append_byte(o, (uint8_t)c);
    }
    return CF_OK;
}

/* Java's appendReplacement parsing, checked once at configure time. */
static cf_code check_replacement(const char *r, size_t ngroups, cf_err *err) {
    for (size_t i = 0; r[i]; i++) {
        if (r[i] == '\\') {
            if (!r[i + 1]) {
                cf_err_set(err, CF_ERR_CONFIG, "replacement: character to be escaped is missing");
                return CF_ERR_CONFIG;
            }
            i++;
        } else if (r[i] == '$') {
            if (r[i + 1] == '{') {
                cf_err_set(err, CF_ERR_CONFIG, "replacement: named group references ${...} are not supported");
                cf_err_hint(err, "Use numbered groups: $1, $2, ...");
                return CF_ERR_CONFIG;
            }
            if (!(r[i + 1] >= '0' && r[i + 1] <= '9')) {
                cf_err_set(err, CF_ERR_CONFIG, "replacement: Illegal group reference");
                cf_err_detail(err, "\"%s\": '$' must be followed by a group number (write \\$ for a dollar)", r);
                return CF_ERR_CONFIG;
            }
            if ((size_t)(r[i + 1] - '0') > ngroups) {
                cf_err_set(err, CF_ERR_CONFIG, "replacement: No group %c", r[i + 1]);
                cf_err_detail(err, "the regex has %zu group(s)", ngroups);
                return CF_ERR_CONFIG;
            }
        }
    }
    return CF_OK;
}

cf_code xf_java_regex_compile(const char *java, const char *key, regex_t *re, size_t *groups, cf_err *err) {
    cf_buf ere = CF_BUF_INIT;
    cf_buf_append_str(&ere, "^(");
    cf_code rc = java_to_ere(java, &ere, groups, err);
    if (rc) {
        cf_buf_free(&ere);
        if (err && strcmp(key, "regex") != 0 && strncmp(err->message, "regex: ", 7) == 0) {
            char tmp[sizeof err->message];
            snprintf(tmp, sizeof tmp, "%s: %s", key, err->message + 7);
            memcpy(err->message, tmp, sizeof tmp);
        }
        if (err) cf_err_where(err, "%s", key);
        return rc;
    }
    cf_buf_append_str(&ere, ")$");
    int e = regcomp(re, ere.data, REG_EXTENDED);
    cf_buf_free(&ere);
    if (e) {
        char msg[256];
        regerror(e, re, msg, sizeof msg);
        cf_err_set(err, CF_ERR_CONFIG, "%s: invalid regular expression \"%s\": %s", key, java, msg);
        cf_err_where(err, "%s", key);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

static void rr_destroy(void *state) {
    rr *r = state;
    if (!r) return;
    regfree(&r->re);
    free(r->replacement);
    free(r->m);
    free(r);
}

static cf_code rr_create(const cf_config *cfg, void **state, cf_err *err) {
    const char *regex = cf_config_string(cfg, "regex");
    const char *repl = cf_config_string(cfg, "replacement");
    size_t groups;
    rr *r = cf_xcalloc(1, sizeof *r);
    cf_code rc = xf_java_regex_compile(regex, "regex", &r->re, &groups, err);
    if (rc) {
        free(r);
        return rc;
    }
    r->ngroups = groups;
    if ((rc = check_replacement(repl, groups, err))) {
        rr_destroy(r);
        return rc;
    }
    r->replacement = cf_xstrdup(repl);
    r->m = cf_xcalloc(groups + 2, sizeof *r->m);
    *state = r;
    return CF_OK;
}

static cf_code rr_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    (void)err;
    rr *r = state;
    *out = rec;
    const char *topic = rec->topic ? rec->topic : "";
    regmatch_t *m = r->m;
    size_t nm = r->ngroups + 2;
    if (regexec(&r->re, topic, nm, m, 0) != 0) return CF_OK;
    cf_buf b = CF_BUF_INIT;
    const char *p = r->replacement;
    for (size_t i = 0; p[i]; i++) {
        if (p[i] == '\\') {
            cf_buf_append_byte(&b, (uint8_t)p[++i]);
        } else if (p[i] == '$') {
            /* Java: first digit, then more digits while the number stays a valid group */
            size_t g = (size_t)(p[++i] - '0');
            while (p[i + 1] >= '0' && p[i + 1] <= '9' && g * 10 + (size_t)(p[i + 1] - '0') <= r->ngroups)
                g = g * 10 + (size_t)(p[++i] - '0');
            size_t ours = g + 1; /* our group 1 wraps the whole pattern */
            if (ours < nm && m[ours].rm_so >= 0)
                cf_buf_append(&b, topic + m[ours].rm_so, (size_t)(m[ours].rm_eo - m[ours].rm_so));
        } else {
            cf_buf_append_byte(&b, (uint8_t)p[i]);
        }
    }
    if (!b.data) cf_buf_reserve(&b, 1);
    cf_record_set_topic(rec, b.data);
    cf_buf_free(&b);
    return CF_OK;
}

static const char *const rr_aliases[] = {"org.apache.kafka.connect.transforms.RegexRouter", NULL};

const cf_transform_plugin cf_xf_regex_router = {
    .name = "RegexRouter",
    .aliases = rr_aliases,
    .config = &cf_regex_router_table,
    .create = rr_create,
    .apply = rr_apply,
    .destroy = rr_destroy,
};
