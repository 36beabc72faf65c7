/*
 * string_converter.c - org.apache.kafka.connect.storage.StringConverter and
 * org.apache.kafka.connect.converters.ByteArrayConverter.
 *
 * StringConverter: to_connect gives an optional string schema and the text
 * (null bytes give a null value with that schema, as Kafka); from_connect
 * writes the value's text form (Java's toString for non-strings: numbers,
 * booleans, "[a, b]" for lists, "{k=v}" for maps, "Struct{a=1,b=x}" for
 * structs; BYTES pass through unchanged). `converter.encoding` accepts UTF-8
 * (default), ISO-8859-1 and US-ASCII under their Java names and common
 * aliases. Decoding replaces malformed input with U+FFFD and encoding
 * replaces unmappable characters with '?', as Java's String(byte[], charset)
 * and String.getBytes(charset) do.
 *
 * ByteArrayConverter: the bytes as an optional bytes value; from_connect
 * accepts only a BYTES schema (or none) and a BYTES value.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/convert.h"
#include "json_dom.h"

typedef enum { ENC_UTF8, ENC_LATIN1, ENC_ASCII } encoding;

typedef struct str_conv {
    encoding enc;
} str_conv;

static cf_code check_encoding(const char *key, const char *value, cf_err *err);

static const char *const converter_types[] = {"key", "value", "header", NULL};

static const cf_cfg_def string_defs[] = {
    {.name = "converter.encoding", .type = CF_CFG_STRING, .default_value = "UTF-8", .validator = check_encoding,
     .importance = CF_IMPORTANCE_HIGH, .group = "Serialization",
     .doc = "The name of the character encoding: `UTF-8` (default, also `UTF8`), `ISO-8859-1` (`latin1`) or "
            "`US-ASCII` (`ASCII`), case insensitive."},
    {.name = "converter.type", .type = CF_CFG_STRING, .nullable = true, .valid_values = converter_types,
     .importance = CF_IMPORTANCE_LOW, .group = "Serialization",
     .doc = "Set by the worker (`key`, `value` or `header`); accepted for compatibility, ignored."},
    {.name = NULL},
};

const cf_cfg_table cf_string_converter_table = {
    .name = "string converter",
    .title = "StringConverter (`string`, `org.apache.kafka.connect.storage.StringConverter`)",
    .intro = "Values as text in one character encoding; the schema read back is an optional string.",
    .defs = string_defs,
};

static bool parse_encoding(const char *v, encoding *out) {
    static const struct { const char *name; encoding e; } names[] = {
        {"UTF-8", ENC_UTF8},       {"UTF8", ENC_UTF8},      {"ISO-8859-1", ENC_LATIN1}, {"ISO8859_1", ENC_LATIN1},
        {"ISO_8859_1", ENC_LATIN1}, {"latin1", ENC_LATIN1}, {"ISO-LATIN-1", ENC_LATIN1}, {"US-ASCII", ENC_ASCII},
        {"ASCII", ENC_ASCII},      {NULL, ENC_UTF8}};
    for (int i = 0; names[i].name; i++)
        if (strcasecmp(v, names[i].name) == 0) {
            *out = names[i].e;
            return true;
        }
    return false;
}

static cf_code check_encoding(const char *key, const char *value, cf_err *err) {
    encoding e;
    if (value && parse_encoding(value, &e)) return CF_OK;
    cf_err_set(err, CF_ERR_CONFIG, "%s: unsupported encoding \"%s\"", key, value ? value : "");
    cf_err_hint(err, "Use UTF-8, ISO-8859-1 or US-ASCII.");
    return CF_ERR_CONFIG;
}

static cf_code string_create(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    (void)is_key;
    str_conv *sc = cf_xcalloc(1, sizeof *sc);
    const char *e = cf_config_string(cfg, "converter.encoding");
    if (e && !parse_encoding(e, &sc->enc)) {
        free(sc);
        return check_encoding("converter.encoding", e, err);
    }
    *state = sc;
    return CF_OK;
}

static void string_destroy(void *state) { free(state); }

/* ---- text form of a value, as Java's toString ---- */

static void java_text(cf_buf *b, const cf_value *v, bool top) {
    if (!v) {
        cf_buf_append_str(b, "null");
        return;
    }
    switch (v->type) {
    case CF_INT8:
    case CF_INT16:
    case CF_INT32:
    case CF_INT64: cf_buf_printf(b, "%" PRId64, v->u.i); break;
    case CF_FLOAT32: json_write_float(b, (float)v->u.f, false); break;
    case CF_FLOAT64: json_write_double(b, v->u.f, false); break;
    case CF_BOOLEAN: cf_buf_append_str(b, v->u.b ? "true" : "false"); break;
    case CF_STRING:
    case CF_BYTES: cf_buf_append(b, v->u.s.ptr, v->u.s.len); break;
    case CF_ARRAY:
        cf_buf_append_byte(b, '[');
        for (size_t i = 0; i < v->u.arr.len; i++) {
            if (i) cf_buf_append_str(b, ", ");
            java_text(b, v->u.arr.items[i], false);
        }
        cf_buf_append_byte(b, ']');
        break;
    case CF_MAP:
        cf_buf_append_byte(b, '{');
        for (size_t i = 0; i < v->u.map.len; i++) {
            if (i) cf_buf_append_str(b, ", ");
            java_text(b, v->u.map.keys[i], false);
            cf_buf_append_byte(b, '=');
            java_text(b, v->u.map.vals[i], false);
        }
        cf_buf_append_byte(b, '}');
        break;
    case CF_STRUCT: { /* Struct.toString: set fields only, comma-separated */
        cf_buf_append_str(b, "Struct{");
        bool first = true;
        for (size_t i = 0; i < v->u.st.schema->n_fields; i++) {
            if (!v->u.st.fields[i]) continue;
            if (!first) cf_buf_append_byte(b, ',');
            first = false;
            cf_buf_printf(b, "%s=", v->u.st.schema->fields[i].name);
            java_text(b, v->u.st.fields[i], false);
        }
        cf_buf_append_byte(b, '}');
        break;
    }
    }
    (void)top;
}

static cf_code string_from_connect(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                   char **data, size_t *len, cf_err *err) {
    (void)topic, (void)schema, (void)err;
    str_conv *sc = state;
    *data = NULL;
    *len = 0;
    if (!value) return CF_OK;
    cf_buf b = CF_BUF_INIT;
    java_text(&b, value, true);
    if (sc->enc != ENC_UTF8) { /* UTF-8 -> one byte per code point, '?' if unmappable */
        cf_buf o = CF_BUF_INIT;
        const unsigned char *p = (const unsigned char *)b.data, *end = p + b.len;
        while (p < end) {
            uint32_t cp;
            size_t n;
            if (p[0] < 0x80) cp = p[0], n = 1;
            else if ((p[0] & 0xe0) == 0xc0 && end - p >= 2) cp = ((p[0] & 0x1fu) << 6) | (p[1] & 0x3fu), n = 2;
            else if ((p[0] & 0xf0) == 0xe0 && end - p >= 3) cp = 0x10000, n = 3;
            else if ((p[0] & 0xf8) == 0xf0 && end - p >= 4) cp = 0x10000, n = 4;
            else cp = 0x10000, n = 1;
            uint32_t limit = sc->enc == ENC_LATIN1 ? 0xff : 0x7f;
            cf_buf_append_byte(&o, cp <= limit ? (uint8_t)cp : '?');
            p += n;
        }
        cf_buf_free(&b);
        b = o;
    }
    if (!b.data) cf_buf_reserve(&b, 1);
    *len = b.len;
    *data = cf_buf_detach(&b, NULL);
    return CF_OK;
}

/* Decode to UTF-8, malformed input replaced by U+FFFD. */
static void decode_text(encoding enc, const unsigned char *p, size_t n, cf_buf *o) {
    static const char repl[] = "\xEF\xBF\xBD";
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c < 0x80) {
            cf_buf_append_byte(o, (uint8_t)c);
            i++;
            continue;
        }
        if (enc == ENC_LATIN1) {
            cf_buf_append_byte(o, (uint8_t)(0xc0 | (c >> 6)));
            cf_buf_append_byte(o, (uint8_t)(0x80 | (c & 0x3f)));
            i++;
            continue;
        }
        if (enc == ENC_ASCII) {
            cf_buf_append(o, repl, 3);
            i++;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) len = 2, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0) len = 3, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0) len = 4, cp = c & 0x07, min = 0x10000;
        else {
            cf_buf_append(o, repl, 3);
            i++;
            continue;
        }
        size_t k = 1;
        while (k < len && i + k < n && (p[i + k] & 0xc0) == 0x80) cp = (cp << 6) | (p[i + k] & 0x3f), k++;
        if (k < len || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            cf_buf_append(o, repl, 3);
            i += k; /* skip the maximal invalid prefix */
            continue;
        }
        cf_buf_append(o, p + i, len);
        i += len;
    }
}

static cf_code string_to_connect(void *state, const char *topic, const char *data, size_t len, cf_schema **schema,
                                 cf_value **value, cf_err *err) {
    (void)topic, (void)err;
    str_conv *sc = state;
    *schema = cf_schema_primitive(CF_STRING, true);
    *value = NULL;
    if (!data) return CF_OK;
    cf_buf o = CF_BUF_INIT;
    cf_buf_reserve(&o, len);
    decode_text(sc->enc, (const unsigned char *)data, len, &o);
    size_t n;
    char *s = cf_buf_detach(&o, &n);
    *value = cf_value_string_take(s, n);
    return CF_OK;
}

/* A string value in UTF-8 is its own output (java_text of a string is the
 * string). */
static bool string_from_connect_view(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                     const char **data, size_t *len) {
    (void)topic, (void)schema;
    const str_conv *sc = state;
    if (value && (value->type != CF_STRING || sc->enc != ENC_UTF8)) return false;
    *data = value ? value->u.s.ptr : NULL;
    *len = value ? value->u.s.len : 0;
    return true;
}

static const char *const string_aliases[] = {"org.apache.kafka.connect.storage.StringConverter", "StringConverter",
                                             NULL};

const cf_converter_plugin cf_string_converter_plugin = {
    .name = "string",
    .aliases = string_aliases,
    .config = &cf_string_converter_table,
    .create = string_create,
    .from_connect = string_from_connect,
    .to_connect = string_to_connect,
    .destroy = string_destroy,
    .from_connect_view = string_from_connect_view,
};

/* ------------------------------------------------------- ByteArrayConverter */

static const cf_cfg_def bytes_defs[] = {
    {.name = "converter.type", .type = CF_CFG_STRING, .nullable = true, .valid_values = converter_types,
     .importance = CF_IMPORTANCE_LOW, .group = "Serialization",
     .doc = "Set by the worker (`key`, `value` or `header`); accepted for compatibility, ignored."},
    {.name = NULL},
};

const cf_cfg_table cf_bytes_converter_table = {
    .name = "bytes converter",
    .title = "ByteArrayConverter (`bytes`, `org.apache.kafka.connect.converters.ByteArrayConverter`)",
    .intro = "Passes the bytes through; the schema read back is an optional bytes schema.",
    .defs = bytes_defs,
};

static cf_code bytes_create(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    (void)cfg, (void)is_key, (void)err;
    *state = NULL;
    return CF_OK;
}

static void bytes_destroy(void *state) { (void)state; }

static cf_code bytes_from_connect(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                  char **data, size_t *len, cf_err *err) {
    (void)state, (void)topic;
    *data = NULL;
    *len = 0;
    if (schema && schema->type != CF_BYTES) {
        cf_err_set(err, CF_ERR_SCHEMA, "Invalid schema type for ByteArrayConverter: %s", cf_type_name(schema->type));
        cf_err_hint(err, "ByteArrayConverter writes only bytes values; use the json or string converter.");
        return CF_ERR_SCHEMA;
    }
    if (!value) return CF_OK;
    if (value->type != CF_BYTES) {
        cf_err_set(err, CF_ERR_SCHEMA, "ByteArrayConverter is not compatible with objects of type %s",
                   cf_type_name(value->type));
        return CF_ERR_SCHEMA;
    }
    *data = cf_xmalloc(value->u.s.len + 1);
    memcpy(*data, value->u.s.ptr, value->u.s.len);
    (*data)[value->u.s.len] = '\0';
    *len = value->u.s.len;
    return CF_OK;
}

/* Valid bytes are their own output; anything else is from_connect's error. */
static bool bytes_from_connect_view(void *state, const char *topic, const cf_schema *schema, const cf_value *value,
                                    const char **data, size_t *len) {
    (void)state, (void)topic;
    if ((schema && schema->type != CF_BYTES) || (value && value->type != CF_BYTES)) return false;
    *data = value ? value->u.s.ptr : NULL;
    *len = value ? value->u.s.len : 0;
    return true;
}

static cf_code bytes_to_connect(void *state, const char *topic, const char *data, size_t len, cf_schema **schema,
                                cf_value **value, cf_err *err) {
    (void)state, (void)topic, (void)err;
    *schema = cf_schema_primitive(CF_BYTES, true);
    *value = data ? cf_value_bytes(data, len) : NULL;
    return CF_OK;
}

static const char *const bytes_aliases[] = {"org.apache.kafka.connect.converters.ByteArrayConverter",
                                            "ByteArrayConverter", NULL};

const cf_converter_plugin cf_bytes_converter_plugin = {
    .name = "bytes",
    .aliases = bytes_aliases,
    .config = &cf_bytes_converter_table,
    .create = bytes_create,
    .from_connect = bytes_from_connect,
    .to_connect = bytes_to_connect,
    .destroy = bytes_destroy,
    .from_connect_view = bytes_from_connect_view,
};
