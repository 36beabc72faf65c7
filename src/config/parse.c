/*
 * parse.c - configuration files into cf_props: Kafka Connect JSON and Java
 * .properties (see include/cdcflow/config.h).
 *
 * .properties follows java.util.Properties.load(Reader) to the letter
 * (its javadoc and the LineReader/loadConvert code paths):
 *   - natural lines end at \n, \r or \r\n; a logical line continues while a
 *     natural line ends with an odd number of backslashes, and the leading
 *     whitespace (space, \t, \f) of each continuation line is dropped;
 *   - a line whose first non-whitespace char is '#' or '!' is a comment, and
 *     a comment never continues (a trailing backslash does not join); a '#'
 *     at the start of a continuation line is data;
 *   - blank lines are skipped; a backslash at the very end of the input is
 *     dropped;
 *   - the key ends at the first unescaped '=', ':' or whitespace; then
 *     whitespace, then at most one '=' or ':', then whitespace are skipped;
 *     the rest is the value (trailing whitespace kept);
 *   - escapes: \t \n \r \f, \uXXXX (exactly four hex digits, else "Malformed
 *     \uxxxx encoding"), and a backslash before any other char stands for
 *     that char (so \b is "b", \= is "=", \\ is one backslash);
 *   - a key given twice: the last value wins.
 * Bytes: load(InputStream) reads ISO-8859-1, load(Reader) whatever the
 * reader decodes. We read UTF-8 when the whole input is valid UTF-8, and
 * otherwise ISO-8859-1 (every byte is one char), so that a Latin-1 file that
 * Kafka reads correctly reads the same here. \uXXXX becomes UTF-8; surrogate
 * pairs are combined. A NUL (\u0000) or a lone surrogate cannot live in a C
 * string and is an error naming the line.
 *
 * JSON: {"name": ..., "config": {...}} (Connect's REST create request; also
 * accepted: "initial_state", and the "tasks"/"type" fields that
 * GET /connectors/{name} returns) or the flat map. Values that are numbers
 * or booleans turn into their text, as Jackson does when binding to
 * Map<String, String>. Unlike Jackson we reject duplicate keys and null
 * values: both are almost always mistakes, and silently picking one is what
 * this project does not do.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/config.h"
#include "cdcflow/text.h"

/* ---------------- .properties ---------------- */

/* loadConvert: unescape s[0..n) into out. Returns false with err set. */
static bool load_convert(const char *s, size_t n, cf_buf *out, int line, cf_err *err) {
    cf_buf_reset(out);
    cf_buf_reserve(out, n);
    for (size_t i = 0; i < n;) {
        char c = s[i++];
        if (c != '\\') {
            cf_buf_append_byte(out, (uint8_t)c);
            continue;
        }
        if (i >= n) break; /* lone backslash at the end of the input: dropped */
        c = s[i++];
        if (c == 'u') {
            uint32_t cp = 0;
            size_t end;
            cf_uescape st = cf_unicode_escape(s, n, i, &cp, &end);
            if (st == CF_UESC_BAD_HEX) {
                cf_err_set(err, CF_ERR_CONFIG, "malformed \\uxxxx encoding");
                cf_err_detail(err, "\\u must be followed by exactly four hex digits: \"\\u%.*s\"",
                              (int)(n - i < 4 ? n - i : 4), s + i);
                cf_err_hint(err, "write a character as \\u00e9 (four hex digits), or a literal backslash as \\\\");
                cf_err_where(err, "line %d", line);
                return false;
            }
            if (st != CF_UESC_OK) {
                cf_err_set(err, CF_ERR_CONFIG, "lone UTF-16 surrogate in a \\u escape");
                cf_err_detail(err, "a \\uD800-\\uDFFF escape must be a high surrogate followed by a low one");
                cf_err_hint(err, "write the character itself (UTF-8) or a correct surrogate pair");
                cf_err_where(err, "line %d", line);
                return false;
            }
            i = end;
            if (cp == 0) {
                cf_err_set(err, CF_ERR_CONFIG, "NUL character (\\u0000) in a configuration file");
                cf_err_detail(err, "configuration keys and values cannot contain NUL");
                cf_err_hint(err, "remove the \\u0000");
                cf_err_where(err, "line %d", line);
                return false;
            }
            cf_buf_append_utf8(out, cp);
        } else if (c == 't') {
            cf_buf_append_byte(out, '\t');
        } else if (c == 'n') {
            cf_buf_append_byte(out, '\n');
        } else if (c == 'r') {
            cf_buf_append_byte(out, '\r');
        } else if (c == 'f') {
            cf_buf_append_byte(out, '\f');
        } else {
            cf_buf_append_byte(out, (uint8_t)c);
        }
    }
    cf_buf_append(out, "", 0); /* NUL-terminate even when nothing was appended */
    return true;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\f'; }

static cf_code props_parse(const char *text, size_t len, cf_props **out, cf_props *lines, cf_err *err) {
    *out = NULL;
    /* decode to UTF-8 once (see the top comment) */
    char *conv = NULL;
    if (!cf_utf8_valid(text, len)) {
        cf_buf b = CF_BUF_INIT;
        for (size_t i = 0; i < len; i++) cf_buf_append_utf8(&b, (unsigned char)text[i]);
        conv = cf_buf_detach(&b, &len);
        text = conv;
    }
    /* A NUL byte inside the file would cut keys short silently. */
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line = 1;
        for (const char *p = text; p < nul; p++)
            if (*p == '\n' || (*p == '\r' && (p + 1 >= nul || p[1] != '\n'))) line++;
        free(conv);
        cf_err_set(err, CF_ERR_CONFIG, "NUL byte in a .properties file");
        cf_err_detail(err, "byte offset %zu", (size_t)(nul - text));
        cf_err_hint(err, "is this a text file? save it as UTF-8 or ISO-8859-1 text");
        cf_err_where(err, "line %d", line);
        return CF_ERR_CONFIG;
    }
    cf_props *p = cf_props_new();
    cf_buf lb = CF_BUF_INIT, kb = CF_BUF_INIT, vb = CF_BUF_INIT;
    size_t i = 0;
    int line = 1; /* current natural line number */
    cf_code rc = CF_OK;
    while (i < len) {
        /* ---- LineReader: read one logical line into lb ---- */
        cf_buf_reset(&lb);
        bool skip_ws = true, appended_begin = false, is_new_line = true, comment = false, backslash = false;
        int start_line = line;
        bool have = false;
        while (i < len) {
            char c = text[i++];
            if (skip_ws) {
                if (is_ws(c)) continue;
                if (!appended_begin && (c == '\r' || c == '\n')) {
                    if (c == '\r' && i < len && text[i] == '\n') i++;
                    line++;
                    start_line = line;
                    continue;
                }
                skip_ws = false;
                appended_begin = false;
            }
            if (is_new_line) {
                is_new_line = false;
                if (c == '#' || c == '!') {
                    comment = true;
                    continue;
                }
            }
            if (c != '\n' && c != '\r') {
                cf_buf_append_byte(&lb, (uint8_t)c);
                backslash = c == '\\' ? !backslash : false;
                continue;
            }
            /* end of a natural line */
            if (c == '\r' && i < len && text[i] == '\n') i++;
            line++;
            if (comment || lb.len == 0) {
                comment = false;
                backslash = false;
                is_new_line = true;
                skip_ws = true;
                cf_buf_reset(&lb);
                start_line = line;
                continue;
            }
            if (backslash) {
                lb.len--; /* drop the continuation backslash */
                lb.data[lb.len] = '\0';
                skip_ws = true;
                appended_begin = true;
                backslash = false;
                continue;
            }
            have = true;
            break;
        }
        if (!have) {
            /* end of input */
            if (comment || lb.len == 0) break;
            if (backslash) {
                lb.len--;
                lb.data[lb.len] = '\0';
            }
        }
        /* ---- load0: split key and value ---- */
        const char *s = lb.data ? lb.data : "";
        size_t limit = lb.len, key_len = 0, value_start = limit;
        bool has_sep = false, pb = false;
        while (key_len < limit) {
            char c = s[key_len];
            if ((c == '=' || c == ':') && !pb) {
                value_start = key_len + 1;
                has_sep = true;
                break;
            } else if (is_ws(c) && !pb) {
                value_start = key_len + 1;
                break;
            }
            pb = c == '\\' ? !pb : false;
            key_len++;
        }
        while (value_start < limit) {
            char c = s[value_start];
            if (!is_ws(c)) {
                if (!has_sep && (c == '=' || c == ':'))
                    has_sep = true;
                else
                    break;
            }
            value_start++;
        }
        if (!load_convert(s, key_len, &kb, start_line, err) ||
            !load_convert(s + value_start, limit - value_start, &vb, start_line, err)) {
            rc = CF_ERR_CONFIG;
            break;
        }
        cf_props_set(p, kb.data ? kb.data : "", vb.data ? vb.data : "");
        if (lines) {
            char num[24];
            snprintf(num, sizeof num, "%d", start_line);
            cf_props_set(lines, kb.data ? kb.data : "", num);
        }
    }
    cf_buf_free(&lb);
    cf_buf_free(&kb);
    cf_buf_free(&vb);
    free(conv);
    if (rc != CF_OK) {
        cf_props_destroy(p);
        return rc;
    }
    *out = p;
    return CF_OK;
}

cf_code cf_props_from_properties(const char *text, size_t len, cf_props **out, cf_err *err) {
    return props_parse(text, len, out, NULL, err);
}

/* ---------------- JSON ---------------- */

/* The shortest text that reads back as the same double, like Java's
 * Double.toString does for the usual cases ("1.5", "0.1", "1.0E10" aside). */
static void real_text(double v, char *buf, size_t size) {
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, size, "%.1f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* Read with JSON_ALLOW_NUL so that a "\u0000" is reported here, by key and
 * position, instead of as unreadable JSON: a C string would end at it (a
 * name "x\u0000" would become "x", another connector). */
static cf_code nul_in_string(const char *key, json_t *v, cf_err *err) {
    size_t at = strlen(json_string_value(v));
    if (strcmp(key, "name") == 0) {
        cf_err_set(err, CF_ERR_CONFIG, "connector name contains NUL (\\u0000, at byte %zu)", at);
        cf_err_hint(err, "Choose a name of letters, digits, '-', '_' and '.' (no '/', NUL or control characters, "
                         "not empty).");
    } else {
        cf_err_set(err, CF_ERR_CONFIG, "configuration \"%s\" contains NUL (\\u0000, at byte %zu)", key, at);
        cf_err_hint(err, "remove the \\u0000: configuration values cannot hold NUL");
    }
    cf_err_where(err, "%s", key);
    return CF_ERR_CONFIG;
}

static cf_code json_value_text(const char *key, json_t *v, char **out, cf_err *err) {
    char buf[64];
    switch (json_typeof(v)) {
    case JSON_STRING:
        if (memchr(json_string_value(v), 0, json_string_length(v))) return nul_in_string(key, v, err);
        *out = cf_xstrndup(json_string_value(v), json_string_length(v));
        return CF_OK;
    case JSON_INTEGER: snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: real_text(json_real_value(v), buf, sizeof buf); break;
    case JSON_TRUE: snprintf(buf, sizeof buf, "true"); break;
    case JSON_FALSE: snprintf(buf, sizeof buf, "false"); break;
    case JSON_NULL:
        cf_err_set(err, CF_ERR_CONFIG, "configuration \"%s\" is null", key);
        cf_err_detail(err, "configuration values are strings (numbers and booleans are accepted too)");
        cf_err_hint(err, "remove the key to use its default, or give a value");
        cf_err_where(err, "%s", key);
        return CF_ERR_CONFIG;
    default:
        cf_err_set(err, CF_ERR_CONFIG, "configuration \"%s\" is a JSON %s", key,
                   json_is_object(v) ? "object" : "array");
        cf_err_detail(err, "Kafka Connect configurations are flat maps of string to string");
        cf_err_hint(err, "write lists as one comma-separated string: \"a,b,c\"");
        cf_err_where(err, "%s", key);
        return CF_ERR_CONFIG;
    }
    *out = cf_xstrdup(buf);
    return CF_OK;
}

static cf_code json_to_props(json_t *obj, cf_props *p, cf_err *err) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        char *text = NULL;
        if (json_value_text(k, v, &text, err) != CF_OK) return CF_ERR_CONFIG;
        cf_props_set(p, k, text);
        free(text);
    }
    return CF_OK;
}

cf_code cf_props_from_json(const char *text, size_t len, cf_props **out, char **name, cf_err *err) {
    *out = NULL;
    if (name) *name = NULL;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!root) {
        cf_err_set(err, CF_ERR_CONFIG, "invalid JSON in connector configuration");
        cf_err_detail(err, "%s", je.text);
        cf_err_hint(err, "the file must hold one JSON object: {\"name\": ..., \"config\": {...}} or a flat map");
        cf_err_where(err, "line %d, column %d", je.line, je.column);
        return CF_ERR_CONFIG;
    }
    cf_code rc = CF_OK;
    if (json_is_array(root)) {
        /* a list of connectors ([{"name":..., "config":...}]): one is that connector */
        size_t n = json_array_size(root);
        if (n == 1 && json_is_object(json_array_get(root, 0))) {
            json_t *one = json_incref(json_array_get(root, 0));
            json_decref(root);
            root = one;
        } else {
            cf_err_set(err, CF_ERR_CONFIG, "connector configuration is a JSON array of %zu elements", n);
            cf_err_detail(err, "a configuration file holds one connector");
            cf_err_hint(err, "put each connector in a file of its own (cdcflow run a.json b.json), or give the array "
                             "one element");
            json_decref(root);
            return CF_ERR_CONFIG;
        }
    }
    cf_props *p = cf_props_new();
    json_t *config = json_is_object(root) ? json_object_get(root, "config") : NULL;
    if (!json_is_object(root)) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "connector configuration is not a JSON object");
        cf_err_hint(err, "write {\"name\": ..., \"config\": {...}} or a flat map of settings");
    } else if (config && json_is_object(config)) {
        /* the REST form: {"name": "x", "config": {...}} */
        const char *k;
        json_t *v;
        json_object_foreach(root, k, v) {
            if (strcmp(k, "name") == 0 || strcmp(k, "config") == 0 || strcmp(k, "tasks") == 0 ||
                strcmp(k, "type") == 0)
                continue;
            if (strcmp(k, "initial_state") == 0) {
                const char *s = json_string_value(v);
                if (!s || (strcasecmp(s, "RUNNING") && strcasecmp(s, "PAUSED") && strcasecmp(s, "STOPPED"))) {
                    rc = cf_err_set(err, CF_ERR_CONFIG, "invalid \"initial_state\"");
                    cf_err_hint(err, "allowed: RUNNING, PAUSED, STOPPED");
                    cf_err_where(err, "initial_state");
                    break;
                }
                continue;
            }
            rc = cf_err_set(err, CF_ERR_CONFIG, "unknown top-level field \"%s\" next to \"config\"", k);
            cf_err_hint(err, "allowed at the top level: name, config, initial_state; settings go inside \"config\"");
            cf_err_where(err, "%s", k);
            break;
        }
        if (rc == CF_OK) rc = json_to_props(config, p, err);
        json_t *jn = json_object_get(root, "name");
        if (rc == CF_OK && jn) {
            if (!json_is_string(jn)) {
                rc = cf_err_set(err, CF_ERR_CONFIG, "connector \"name\" is not a string");
                cf_err_where(err, "name");
            } else if (memchr(json_string_value(jn), 0, json_string_length(jn))) {
                rc = nul_in_string("name", jn, err);
            } else {
                const char *inner = cf_props_get(p, "name");
                if (inner && strcmp(inner, json_string_value(jn)) != 0) {
                    rc = cf_err_set(err, CF_ERR_CONFIG, "connector name mismatch");
                    cf_err_detail(err, "\"name\" is \"%s\" but config.name is \"%s\"", json_string_value(jn), inner);
                    cf_err_hint(err, "make them equal or drop config.name");
                    cf_err_where(err, "config.name");
                } else if (!inner) {
                    /* as Connect's REST layer: the name goes into the config */
                    cf_props_set(p, "name", json_string_value(jn));
                }
            }
        }
    } else if (config) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "\"config\" is not a JSON object");
        cf_err_hint(err, "write {\"name\": ..., \"config\": {\"connector.class\": ...}}");
        cf_err_where(err, "config");
    } else {
        rc = json_to_props(root, p, err);
    }
    json_decref(root);
    if (rc != CF_OK) {
        cf_props_destroy(p);
        return rc;
    }
    if (name && cf_props_get(p, "name")) *name = cf_xstrdup(cf_props_get(p, "name"));
    *out = p;
    return CF_OK;
}

/* ---------------- files ---------------- */

static cf_code read_all(const char *path, char **data, size_t *len, cf_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cf_err_set(err, CF_ERR_IO, "cannot open configuration file \"%s\"", path);
        cf_err_detail(err, "%s", strerror(errno));
        cf_err_where(err, "%s", path);
        return CF_ERR_IO;
    }
    cf_buf b = CF_BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) cf_buf_append(&b, chunk, n);
    bool failed = ferror(f);
    int e = errno;
    fclose(f);
    if (failed) {
        cf_buf_free(&b);
        cf_err_set(err, CF_ERR_IO, "cannot read configuration file \"%s\"", path);
        cf_err_detail(err, "%s", strerror(e));
        cf_err_where(err, "%s", path);
        return CF_ERR_IO;
    }
    if (!b.data) cf_buf_append(&b, "", 0);
    *data = cf_buf_detach(&b, len);
    return CF_OK;
}

/* jansson keeps no positions, so find each key's line by its text: a JSON
 * string followed by ':' is always an object key. A key written with \u
 * escapes is not found and simply gets no line. */
static cf_props *json_key_lines(const char *text, size_t len, const cf_props *p) {
    cf_props *lines = cf_props_new();
    for (size_t k = 0; k < cf_props_count(p); k++) {
        const char *key = cf_props_key_at(p, k);
        json_t *js = json_string(key);
        char *quoted = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
        json_decref(js);
        if (!quoted) continue;
        size_t ql = strlen(quoted);
        long found_line = -1;
        int line = 1;
        for (size_t i = 0; i + ql <= len; i++) {
            if (text[i] == '\n') line++;
            if (text[i] != '"' || memcmp(text + i, quoted, ql) != 0) continue;
            if (i > 0 && text[i - 1] == '\\') continue;
            size_t j = i + ql;
            while (j < len && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n')) j++;
            if (j < len && text[j] == ':') found_line = line; /* the last one: config.name over the outer name */
        }
        free(quoted);
        if (found_line > 0) {
            char num[24];
            snprintf(num, sizeof num, "%ld", found_line);
            cf_props_set(lines, key, num);
        }
    }
    return lines;
}

cf_code cf_props_load_file_lines(const char *path, cf_props **out, char **name, cf_props **lines, cf_err *err) {
    *out = NULL;
    if (name) *name = NULL;
    if (lines) *lines = NULL;
    char *data;
    size_t len;
    cf_code rc = read_all(path, &data, &len, err);
    if (rc != CF_OK) return rc;
    size_t off = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) off = 3; /* UTF-8 byte order mark */
    size_t i = off;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n' || data[i] == '\f'))
        i++;
    if (i < len && (data[i] == '{' || data[i] == '[')) {
        rc = cf_props_from_json(data + off, len - off, out, name, err);
        if (rc == CF_OK && lines) *lines = json_key_lines(data + off, len - off, *out);
        if (rc != CF_OK && err) {
            char where[sizeof err->where];
            snprintf(where, sizeof where, "%s", err->where);
            /* jansson's "line N, column M" -> "path:N:M"; a key -> "path: key" */
            int l, c;
            if (sscanf(where, "line %d, column %d", &l, &c) == 2)
                cf_err_where(err, "%s:%d:%d", path, l, c);
            else if (!where[0])
                cf_err_where(err, "%s", path);
            else
                cf_err_where(err, "%s: %s", path, where);
        }
    } else {
        cf_props *ln = lines ? cf_props_new() : NULL;
        rc = props_parse(data + off, len - off, out, ln, err);
        if (rc != CF_OK && err) {
            int l;
            if (sscanf(err->where, "line %d", &l) == 1) cf_err_where(err, "%s:%d", path, l);
        }
        if (rc == CF_OK && name && cf_props_get(*out, "name")) *name = cf_xstrdup(cf_props_get(*out, "name"));
        if (rc == CF_OK && lines)
            *lines = ln;
        else
            cf_props_destroy(ln);
    }
    free(data);
    return rc;
}

cf_code cf_props_load_file(const char *path, cf_props **out, char **name, cf_err *err) {
    return cf_props_load_file_lines(path, out, name, NULL, err);
}
