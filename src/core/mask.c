/*
 * mask.c - credentials inside free text (see include/cdcflow/text.h): URL
 * user info passwords and password=/secret=/token= pairs become [hidden].
 *
 * Why here, in core: the log and cf_err are core, and every message they
 * carry passes through them, so masking there covers messages that quote a
 * connection.url or a registry URL wherever they were made. Which settings
 * are secret as a whole (PASSWORD-type definitions, Connect's password
 * names) is the configuration's business: src/config/secrets.c.
 */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/text.h"

#define HIDDEN_LEN (sizeof CF_HIDDEN - 1)

/* Where a URL authority ends (RFC 3986: '/', '?', '#'), and where text
 * around a URL does (whitespace, quotes, a list's ','). */
static bool authority_end(char c) { return !c || strchr("/?#\"' \t\r\n,<>\\", c) != NULL; }

/* scheme://user:PASSWORD@host at s + i ("://" found there): the password's
 * range. */
static bool url_password(const char *s, size_t i, size_t *a, size_t *b) {
    size_t j = i + 3, k = j, at = 0, colon = 0;
    bool has_at = false, has_colon = false;
    for (; !authority_end(s[k]); k++)
        if (s[k] == '@') at = k, has_at = true; /* the last '@': a password may hold one */
    if (!has_at) return false;
    for (size_t q = j; q < at; q++)
        if (s[q] == ':') {
            colon = q, has_colon = true;
            break;
        }
    if (!has_colon || colon + 1 >= at) return false; /* a user alone stays */
    if (at - colon - 1 == HIDDEN_LEN && memcmp(s + colon + 1, CF_HIDDEN, HIDDEN_LEN) == 0) return false;
    *a = colon + 1;
    *b = at;
    return true;
}

static const char *const pair_keys[] = {"password", "passwd", "pwd", "secret", "token", NULL};

/* KEY=VALUE, KEY: VALUE, "KEY": "VALUE" at s + i: the value's range. KEY
 * must start the text or follow a character that is not a letter or digit
 * (so client_secret= and sasl.password= count, cwd= does not). */
static bool pair_value(const char *s, size_t i, size_t *a, size_t *b) {
    if (i > 0 && isalnum((unsigned char)s[i - 1])) return false;
    for (const char *const *k = pair_keys; *k; k++) {
        size_t kl = strlen(*k);
        if (strncasecmp(s + i, *k, kl) != 0) continue;
        size_t p = i + kl;
        if (s[p] == '"' || s[p] == '\'') p++;
        while (s[p] == ' ') p++;
        if (s[p] == '=') {
            p++;
        } else if (s[p] == ':' && (s[p + 1] == ' ' || s[p + 1] == '"')) {
            p++;
        } else {
            continue;
        }
        while (s[p] == ' ') p++;
        size_t start = p, end;
        if (s[p] == '"' || s[p] == '\'') {
            char q = s[p];
            start = ++p;
            while (s[p] && !(s[p] == q && s[p - 1] != '\\')) p++;
            end = p;
        } else {
            while (s[p] && !strchr(" \t\r\n&;,)\"'", s[p])) p++;
            end = p;
        }
        if (end <= start) return false;
        if (end - start == HIDDEN_LEN && memcmp(s + start, CF_HIDDEN, HIDDEN_LEN) == 0) return false;
        *a = start;
        *b = end;
        return true;
    }
    return false;
}

/* The next range to hide at or after pos. */
static bool next_secret(const char *s, size_t pos, size_t *a, size_t *b) {
    for (size_t i = pos; s[i]; i++) {
        if (s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/' && url_password(s, i, a, b)) return true;
        if (strchr("pPsStT", s[i]) && pair_value(s, i, a, b)) return true;
    }
    return false;
}

bool cf_mask_credentials(const char *s, cf_buf *out) {
    if (!s) return false;
    size_t pos = 0, a, b;
    bool any = false;
    while (next_secret(s, pos, &a, &b)) {
        cf_buf_append(out, s + pos, a - pos);
        cf_buf_append_str(out, CF_HIDDEN);
        pos = b;
        any = true;
    }
    cf_buf_append_str(out, s + pos);
    return any;
}

void cf_mask_credentials_inplace(char *s, size_t size) {
    if (!s || !size) return;
    size_t pos = 0, a, b;
    while (next_secret(s, pos, &a, &b)) {
        size_t len = strlen(s), tail = len - b;
        if (a + HIDDEN_LEN >= size) { /* no room even for the mask: cut the text there */
            s[a] = '\0';
            return;
        }
        size_t room = size - 1 - (a + HIDDEN_LEN); /* bytes left for the tail */
        if (tail > room) tail = room;
        memmove(s + a + HIDDEN_LEN, s + b, tail);
        memcpy(s + a, CF_HIDDEN, HIDDEN_LEN);
        s[a + HIDDEN_LEN + tail] = '\0';
        pos = a + HIDDEN_LEN;
    }
}
