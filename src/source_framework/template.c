/*
 * template.c - file.name.template matching (see include/cdcflow/source.h).
 *
 * Aiven's connectors turn the placeholders into regex groups and then use
 * Matcher.find(), which matches any part of the name: "22-10-12/customer-
 * topic-1-..." gave topic=22, partition=10 (their README warns about it).
 * Here the expression is anchored (^...$), so the whole name must match.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/source.h"

enum { G_TOPIC = 1, G_PARTITION, G_START_OFFSET, G_TIMESTAMP };

struct cf_name_template {
    regex_t re;
    int groups[16]; /* group number (1-based) -> placeholder kind */
    int n_groups;
};

static int count_groups(const char *re) {
    /* '(' not escaped and not in a bracket expression opens a group */
    int n = 0, in_bracket = 0;
    for (const char *p = re; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        if (in_bracket) {
            if (*p == ']') in_bracket = 0;
        } else if (*p == '[') {
            in_bracket = 1;
            if (p[1] == ']') p++;
        } else if (*p == '(') {
            n++;
        }
    }
    return n;
}

cf_code cf_name_template_new(const char *tmpl, cf_name_template **out, cf_err *err) {
    static const struct { const char *ph, *re; int kind; } phs[] = {
        {"{{topic}}", "([a-zA-Z0-9._-]+)", G_TOPIC},
        {"{{partition}}", "([0-9]+)", G_PARTITION},
        {"{{start_offset}}", "([0-9]+)", G_START_OFFSET},
        {"{{timestamp}}", "([0-9]+)", G_TIMESTAMP},
    };
    cf_name_template *t = cf_xcalloc(1, sizeof *t);
    cf_buf re = CF_BUF_INIT;
    cf_buf_append_byte(&re, '^');
    const char *p = tmpl;
    while (*p) {
        int hit = -1;
        for (int i = 0; i < 4; i++)
            if (strncmp(p, phs[i].ph, strlen(phs[i].ph)) == 0) hit = i;
        if (hit >= 0) {
            /* groups opened by the user's own regex before this one count too */
            int before = count_groups(re.data);
            if (before + 1 < 16) t->groups[before + 1] = phs[hit].kind;
            t->n_groups = before + 1;
            cf_buf_append_str(&re, phs[hit].re);
            p += strlen(phs[hit].ph);
        } else if (p[0] == '{' && p[1] == '{') {
            const char *e = strstr(p, "}}");
            cf_err_set(err, CF_ERR_CONFIG, "unknown placeholder \"%.*s\" in file.name.template \"%s\"",
                       e ? (int)(e - p + 2) : (int)strlen(p), p, tmpl);
            cf_err_hint(err, "Use {{topic}}, {{partition}}, {{start_offset}} or {{timestamp}}.");
            cf_buf_free(&re);
            free(t);
            return CF_ERR_CONFIG;
        } else {
            cf_buf_append_byte(&re, (uint8_t)*p++);
        }
    }
    cf_buf_append_byte(&re, '$');
    int rc = regcomp(&t->re, re.data, REG_EXTENDED);
    if (rc) {
        char msg[256];
        regerror(rc, &t->re, msg, sizeof msg);
        cf_err_set(err, CF_ERR_CONFIG, "invalid file.name.template \"%s\": %s", tmpl, msg);
        cf_err_hint(err, "Outside the placeholders the template is a POSIX extended regular expression.");
        cf_buf_free(&re);
        free(t);
        return CF_ERR_CONFIG;
    }
    cf_buf_free(&re);
    *out = t;
    return CF_OK;
}

bool cf_name_template_match(const cf_name_template *t, const char *name, cf_name_match *m) {
    regmatch_t g[16];
    memset(m, 0, sizeof *m);
    if (regexec(&t->re, name, 16, g, 0) != 0) return false;
    for (int i = 1; i < 16; i++) {
        if (!t->groups[i] || g[i].rm_so < 0) continue;
        size_t len = (size_t)(g[i].rm_eo - g[i].rm_so);
        const char *s = name + g[i].rm_so;
        char num[32];
        switch (t->groups[i]) {
        case G_TOPIC:
            if (len >= sizeof m->topic) return false;
            memcpy(m->topic, s, len);
            m->topic[len] = '\0';
            m->has_topic = true;
            break;
        case G_PARTITION:
        case G_START_OFFSET:
            if (len >= sizeof num) return false;
            memcpy(num, s, len);
            num[len] = '\0';
            if (t->groups[i] == G_PARTITION) {
                long v = strtol(num, NULL, 10);
                if (v > INT32_MAX) return false;
                m->partition = (int32_t)v;
                m->has_partition = true;
            } else {
                m->start_offset = strtoll(num, NULL, 10);
                m->has_start_offset = true;
            }
            break;
        default: break;
        }
    }
    return true;
}

void cf_name_template_destroy(cf_name_template *t) {
    if (!t) return;
    regfree(&t->re);
    free(t);
}
