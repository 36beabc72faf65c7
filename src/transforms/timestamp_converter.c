/*
 * timestamp_converter.c - org.apache.kafka.connect.transforms.
 * TimestampConverter$Value and $Key: convert a timestamp (the whole
 * key/value, or one field with `field`) between a formatted string, a unix
 * epoch number (precision `unix.precision`), and Connect's Date, Time and
 * Timestamp logical types. Everything is computed in UTC, as Kafka does.
 *
 * Input type comes from the schema: Timestamp/Date/Time logical names,
 * STRING -> string, INT64 -> unix; without a schema a STRING is a string and
 * an INT64 a unix number (Connect's java.util.Date has no schemaless form in
 * our data model: schemaless Date/Time/Timestamp results are written in
 * their physical form, INT32 days / INT32 ms of day / INT64 ms).
 * Conversions follow Kafka: Date truncates to midnight, Time keeps the
 * milliseconds of the day, unix precisions convert with Java's TimeUnit
 * (truncating towards zero).
 *
 * `format` is a java.text.SimpleDateFormat pattern. Supported letters:
 *   G era (AD/BC), y year (yy = two digits), M/L month (M, MM, MMM name,
 *   MMMM full name), d day, D day of year, E day name (EEE, EEEE), u day
 *   number (1 = Monday), a AM/PM, H 0-23, k 1-24, K 0-11, h 1-12, m, s,
 *   S milliseconds, z zone name ("UTC"), Z +0000, X ISO offset ("Z");
 *   'quoted text' and '' for a quote. Refused (error at configure time):
 *   Y (week year), w, W, F and letters SimpleDateFormat rejects.
 * Parsing is lenient like SimpleDateFormat's default: numbers may overflow
 * into the next unit (month 13 = January of the next year), abutting
 * numeric fields take exactly their width, text after the pattern is
 * ignored, a two-digit year for yy falls within 80 years before and 20 after
 * now, and zones "UTC", "GMT", "Z", "+hh:mm", "GMT+hh:mm" are understood.
 * Calendar: proleptic Gregorian (Java switches to the Julian calendar
 * before 1582-10-15, so results differ for earlier dates).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cdcflow/buf.h"
#include "cdcflow/transforms.h"
#include "xf_util.h"

#define MS_PER_DAY 86400000LL

typedef enum { T_STRING = 0, T_UNIX, T_DATE, T_TIME, T_TIMESTAMP } ts_type;
typedef enum { P_SECONDS = 0, P_MILLIS, P_MICROS, P_NANOS } precision;

typedef struct tok {
    char letter; /* 0 = literal */
    int count;
    char *text;  /* literal */
} tok;

typedef struct tsc {
    bool is_key;
    char *field; /* NULL: the whole key/value */
    ts_type target;
    precision prec;
    bool replace_null;
    char *pattern; /* NULL if none */
    tok *toks;
    size_t n_toks;
    xf_cache cache;
} tsc;

static const char *const target_types[] = {"string", "unix", "Date", "Time", "Timestamp", NULL};
static const char *const precisions[] = {"seconds", "milliseconds", "microseconds", "nanoseconds", NULL};

static const cf_cfg_def tsc_defs[] = {
    {.name = "field", .type = CF_CFG_STRING, .default_value = "", .importance = CF_IMPORTANCE_HIGH,
     .group = "Conversion",
     .doc = "The field containing the timestamp, or empty if the entire value is a timestamp."},
    {.name = "target.type", .type = CF_CFG_STRING, .default_value = CF_CFG_REQUIRED, .valid_values = target_types,
     .importance = CF_IMPORTANCE_HIGH, .group = "Conversion",
     .doc = "The desired timestamp representation: string, unix, Date, Time, or Timestamp."},
    {.name = "format", .type = CF_CFG_STRING, .default_value = "", .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Conversion",
     .doc = "A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when "
            "target.type=string or used to parse the input if the input is a string, e.g. `yyyy-MM-dd'T'HH:mm:ss.SSSX`."},
    {.name = "unix.precision", .type = CF_CFG_STRING, .default_value = "milliseconds", .valid_values = precisions,
     .importance = CF_IMPORTANCE_LOW, .group = "Conversion",
     .doc = "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or nanoseconds. "
            "Used to generate the output when type=unix or used to parse the input if the input is a Long."},
    {.name = "replace.null.with.default", .type = CF_CFG_BOOLEAN, .default_value = "true",
     .importance = CF_IMPORTANCE_MEDIUM, .group = "Conversion",
     .doc = "Whether to replace fields that have a default value and that are null to the default value."},
    {.name = NULL},
};

const cf_cfg_table cf_timestamp_converter_table = {
    .name = "TimestampConverter",
    .title = "TimestampConverter (`org.apache.kafka.connect.transforms.TimestampConverter$Value`, `$Key`)",
    .intro = "Convert timestamps between different formats such as Unix epoch, strings, and Connect Date/Timestamp "
             "types, in UTC. `format` is a Java SimpleDateFormat pattern; supported letters: `G y M L d D E u a H k K h "
             "m s S z Z X` and `'quoted text'` (`Y w W F` are refused). Parsing is lenient like SimpleDateFormat "
             "(overflowing numbers roll over, text after the pattern is ignored). Dates use the proleptic Gregorian "
             "calendar (Java switches to Julian before 1582-10-15). Without a schema, int64 values are unix times and "
             "Date/Time/Timestamp results are their physical values (int32 days, int32 ms of day, int64 ms).",
    .defs = tsc_defs,
};

/* ------------------------------------------------------------ calendar */

static int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
static int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    /* normalise the month first (lenient) */
    y += floordiv(m - 1, 12);
    m = floormod(m - 1, 12) + 1;
    y -= m <= 2;
    int64_t era = floordiv(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468 + (d - 1);
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
    z += 719468;
    int64_t era = floordiv(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static const char *const month_full[] = {"January", "February", "March",     "April",   "May",      "June",
                                         "July",    "August",   "September", "October", "November", "December"};
static const char *const day_full[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};

/* ------------------------------------------------------------ patterns */

static void free_toks(tok *t, size_t n) {
    for (size_t i = 0; i < n; i++) free(t[i].text);
    free(t);
}

static cf_code compile_pattern(const char *p, const char *who, tok **out, size_t *n_out, cf_err *err) {
    tok *t = NULL;
    size_t n = 0;
    size_t i = 0, len = strlen(p);
    while (i < len) {
        char c = p[i];
        t = cf_xrealloc(t, (n + 1) * sizeof *t);
        memset(&t[n], 0, sizeof t[n]);
        if (c == '\'') {
            cf_buf lit = CF_BUF_INIT;
            if (i + 1 < len && p[i + 1] == '\'') {
                cf_buf_append_byte(&lit, '\'');
                i += 2;
            } else {
                i++;
                for (;;) {
                    if (i >= len) {
                        cf_buf_free(&lit);
                        free_toks(t, n);
                        cf_err_set(err, CF_ERR_CONFIG, "%s requires a SimpleDateFormat-compatible pattern%s: %s", who,
                                   strcmp(who, "TimestampConverter") == 0 ? " for string timestamps" : "", p);
                        cf_err_detail(err, "Unterminated quote");
                        return CF_ERR_CONFIG;
                    }
                    if (p[i] == '\'') {
                        if (i + 1 < len && p[i + 1] == '\'') {
                            cf_buf_append_byte(&lit, '\'');
                            i += 2;
                            continue;
                        }
                        i++;
                        break;
                    }
                    cf_buf_append_byte(&lit, (uint8_t)p[i++]);
                }
            }
            if (!lit.data) cf_buf_reserve(&lit, 1);
            t[n].text = cf_buf_detach(&lit, NULL);
            n++;
            continue;
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            if (!strchr("GyYMLwWDdFEuaHkKhmsSzZX", c)) {
                free_toks(t, n);
                cf_err_set(err, CF_ERR_CONFIG, "%s requires a SimpleDateFormat-compatible pattern%s: %s", who,
                           strcmp(who, "TimestampConverter") == 0 ? " for string timestamps" : "", p);
                cf_err_detail(err, "Illegal pattern character '%c'", c);
                return CF_ERR_CONFIG;
            }
            if (strchr("YwWF", c)) {
                free_toks(t, n);
                cf_err_set(err, CF_ERR_CONFIG, "format: pattern letter '%c' is not supported", c);
                cf_err_hint(err, "Supported: G y M L d D E u a H k K h m s S z Z X and 'quoted text'.");
                return CF_ERR_CONFIG;
            }
            int cnt = 0;
            while (i < len && p[i] == c) cnt++, i++;
            t[n].letter = c == 'L' ? 'M' : c;
            t[n].count = cnt;
            n++;
            continue;
        }
        /* other characters are literal text; merge a run */
        size_t s = i;
        while (i < len && p[i] != '\'' && !((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z'))) i++;
        t[n].text = cf_xstrndup(p + s, i - s);
        n++;
    }
    *out = t;
    *n_out = n;
    return CF_OK;
}

static void pad(cf_buf *b, int64_t v, int width) {
    if (v < 0) {
        cf_buf_append_byte(b, '-');
        v = -v;
    }
    cf_buf_printf(b, "%0*" PRId64, width, v);
}

static void format_ms(const tok *toks, size_t n_toks, int64_t ms, cf_buf *b) {
    int64_t days = floordiv(ms, MS_PER_DAY), mod = floormod(ms, MS_PER_DAY);
    int64_t y;
    int mo, d;
    civil_from_days(days, &y, &mo, &d);
    int hour = (int)(mod / 3600000), min = (int)(mod / 60000 % 60), sec = (int)(mod / 1000 % 60), milli = (int)(mod % 1000);
    int wday = (int)floormod(days + 4, 7); /* 0 = Sunday */
    int64_t yoe = y > 0 ? y : 1 - y;      /* year of era */
    for (size_t i = 0; i < n_toks; i++) {
        const tok *t = &toks[i];
        if (!t->letter) {
            cf_buf_append_str(b, t->text);
            continue;
        }
        switch (t->letter) {
        case 'G': cf_buf_append_str(b, y > 0 ? "AD" : "BC"); break;
        case 'y':
            if (t->count == 2) pad(b, yoe % 100, 2);
            else pad(b, yoe, t->count);
            break;
        case 'M':
            if (t->count >= 4) cf_buf_append_str(b, month_full[mo - 1]);
            else if (t->count == 3) cf_buf_append(b, month_full[mo - 1], 3);
            else pad(b, mo, t->count);
            break;
        case 'd': pad(b, d, t->count); break;
        case 'D': pad(b, days - days_from_civil(y, 1, 1) + 1, t->count); break;
        case 'E':
            if (t->count >= 4) cf_buf_append_str(b, day_full[wday]);
            else cf_buf_append(b, day_full[wday], 3);
            break;
        case 'u': pad(b, wday == 0 ? 7 : wday, t->count); break;
        case 'a': cf_buf_append_str(b, hour < 12 ? "AM" : "PM"); break;
        case 'H': pad(b, hour, t->count); break;
        case 'k': pad(b, hour == 0 ? 24 : hour, t->count); break;
        case 'K': pad(b, hour % 12, t->count); break;
        case 'h': pad(b, hour % 12 == 0 ? 12 : hour % 12, t->count); break;
        case 'm': pad(b, min, t->count); break;
        case 's': pad(b, sec, t->count); break;
        case 'S': pad(b, milli, t->count); break;
        case 'z': cf_buf_append_str(b, t->count >= 4 ? "Coordinated Universal Time" : "UTC"); break;
        case 'Z': cf_buf_append_str(b, "+0000"); break;
        case 'X': cf_buf_append_byte(b, 'Z'); break;
        }
    }
}

/* The formatter alone, for TimestampRouter (xf_util.h). */
struct xf_datefmt {
    tok *toks;
    size_t n_toks;
};

cf_code xf_datefmt_new(const char *pattern, const char *who, xf_datefmt **out, cf_err *err) {
    *out = NULL;
    xf_datefmt *f = cf_xcalloc(1, sizeof *f);
    cf_code rc = compile_pattern(pattern, who, &f->toks, &f->n_toks, err);
    if (rc) {
        free(f);
        return rc;
    }
    *out = f;
    return CF_OK;
}

void xf_datefmt_format(const xf_datefmt *f, int64_t ms, cf_buf *b) { format_ms(f->toks, f->n_toks, ms, b); }

void xf_datefmt_destroy(xf_datefmt *f) {
    if (!f) return;
    free_toks(f->toks, f->n_toks);
    free(f);
}

static bool numeric_letter(char l, int count) {
    if (l == 'M') return count <= 2;
    return strchr("yDduHkKhmsS", l) != NULL;
}

static int match_name(const char *s, const char *const *names, int n, size_t *used) {
    int best = -1;
    size_t best_len = 0;
    for (int i = 0; i < n; i++) {
        size_t full = strlen(names[i]);
        if (strncasecmp(s, names[i], full) == 0 && full > best_len) best = i, best_len = full;
        else if (strncasecmp(s, names[i], 3) == 0 && 3 > best_len) best = i, best_len = 3;
    }
    *used = best_len;
    return best;
}

/* Parse an offset: "UTC", "GMT", "Z", "+hh", "+hhmm", "+hh:mm", "GMT+hh:mm". */
static bool parse_zone(const char *s, size_t *used, int64_t *offset_ms) {
    size_t k = 0;
    *offset_ms = 0;
    if (strncasecmp(s, "UTC", 3) == 0 || strncasecmp(s, "GMT", 3) == 0) k = 3;
    else if (s[0] == 'Z') {
        *used = 1;
        return true;
    }
    if (s[k] == '+' || s[k] == '-') {
        int sign = s[k] == '-' ? -1 : 1;
        k++;
        if (!isdigit((unsigned char)s[k]) || !isdigit((unsigned char)s[k + 1])) return k > 4 ? false : (*used = k - 1, k > 1);
        int hh = (s[k] - '0') * 10 + (s[k + 1] - '0'), mm = 0;
        k += 2;
        if (s[k] == ':') k++;
        if (isdigit((unsigned char)s[k]) && isdigit((unsigned char)s[k + 1])) {
            mm = (s[k] - '0') * 10 + (s[k + 1] - '0');
            k += 2;
        }
        *offset_ms = sign * ((int64_t)hh * 3600000 + (int64_t)mm * 60000);
    }
    *used = k;
    return k > 0;
}

static cf_code parse_ms(const tsc *c, const char *s, int64_t *out, cf_err *err) {
    int64_t year = 1970, month = 1, day = 1, hour = 0, min = 0, sec = 0, milli = 0, doy = -1, offset = 0;
    int64_t hour12 = -1;
    int pm = -1;
    bool two_digit_year = false;
    bool bc = false;
    size_t pos = 0, len = strlen(s);
    for (size_t i = 0; i < c->n_toks; i++) {
        const tok *t = &c->toks[i];
        if (!t->letter) {
            size_t tl = strlen(t->text);
            if (strncmp(s + pos, t->text, tl) != 0) goto fail;
            pos += tl;
            continue;
        }
        if (numeric_letter(t->letter, t->count)) {
            /* abutting numeric fields: this one takes exactly count digits */
            bool abut = i + 1 < c->n_toks && c->toks[i + 1].letter && numeric_letter(c->toks[i + 1].letter, c->toks[i + 1].count);
            bool neg = false;
            if (t->letter == 'y' && s[pos] == '-') neg = true, pos++;
            size_t st = pos;
            while (pos < len && isdigit((unsigned char)s[pos]) && (!abut || pos - st < (size_t)t->count)) pos++;
            if (pos == st || pos - st > 18) goto fail;
            int64_t v = 0;
            for (size_t q = st; q < pos; q++) v = v * 10 + (s[q] - '0');
            if (neg) v = -v;
            switch (t->letter) {
            case 'y':
                year = v;
                two_digit_year = t->count <= 2 && pos - st == 2 && !neg;
                break;
            case 'M': month = v; break;
            case 'd': day = v; break;
            case 'D': doy = v; break;
            case 'u': break;
            case 'H': hour = v; break;
            case 'k': hour = v == 24 ? 0 : v; break;
            case 'K': hour12 = v; break;
            case 'h': hour12 = v == 12 ? 0 : v; break;
            case 'm': min = v; break;
            case 's': sec = v; break;
            case 'S': milli = v; break;
            }
            continue;
        }
        size_t used = 0;
        switch (t->letter) {
        case 'M': {
            int mi = match_name(s + pos, month_full, 12, &used);
            if (mi < 0) goto fail;
            month = mi + 1;
            break;
        }
        case 'E':
            if (match_name(s + pos, day_full, 7, &used) < 0) goto fail;
            break;
        case 'a':
            if (strncasecmp(s + pos, "AM", 2) == 0) pm = 0, used = 2;
            else if (strncasecmp(s + pos, "PM", 2) == 0) pm = 1, used = 2;
            else goto fail;
            break;
        case 'G':
            if (strncasecmp(s + pos, "AD", 2) == 0) used = 2;
            else if (strncasecmp(s + pos, "BC", 2) == 0) used = 2, bc = true;
            else goto fail;
            break;
        case 'z':
        case 'Z':
        case 'X':
            if (!parse_zone(s + pos, &used, &offset)) goto fail;
            break;
        }
        pos += used;
    }
    if (two_digit_year) { /* SimpleDateFormat: within [now - 80 years, now + 20 years) */
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        int64_t start = tm.tm_year + 1900 - 80;
        int64_t cand = (start / 100) * 100 + year;
        if (cand < start) cand += 100;
        year = cand;
    }
    if (bc) year = 1 - year;
    if (hour12 >= 0) hour = hour12 + (pm == 1 ? 12 : 0); /* with H, Java ignores the AM/PM marker */
    int64_t days = doy >= 0 ? days_from_civil(year, 1, 1) + doy - 1 : days_from_civil(year, month, day);
    *out = days * MS_PER_DAY + hour * 3600000 + min * 60000 + sec * 1000 + milli - offset;
    return CF_OK;
fail:
    cf_err_set(err, CF_ERR_SCHEMA, "Could not parse timestamp: value (%s) does not match pattern (%s)", s, c->pattern);
    cf_err_detail(err, "parsing stopped at character %zu", pos);
    return CF_ERR_SCHEMA;
}

/* ------------------------------------------------------------ transform */

static void tsc_destroy(void *state) {
    tsc *c = state;
    if (!c) return;
    free(c->field);
    free(c->pattern);
    free_toks(c->toks, c->n_toks);
    xf_cache_clear(&c->cache);
    free(c);
}

static int idx_of(const char *v, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (strcasecmp(v, names[i]) == 0) return i;
    return -1;
}

static cf_code tsc_create_common(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    tsc *c = cf_xcalloc(1, sizeof *c);
    c->is_key = is_key;
    const char *f = cf_config_string(cfg, "field");
    if (f && *f) c->field = cf_xstrdup(f);
    c->target = (ts_type)idx_of(cf_config_string(cfg, "target.type"), target_types);
    c->prec = (precision)idx_of(cf_config_string(cfg, "unix.precision"), precisions);
    c->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    const char *fmt = cf_config_string(cfg, "format");
    bool blank = true;
    for (const char *q = fmt ? fmt : ""; *q && blank; q++)
        if (!isspace((unsigned char)*q)) blank = false;
    if (c->target == T_STRING && blank) {
        tsc_destroy(c);
        cf_err_set(err, CF_ERR_CONFIG, "TimestampConverter requires format option to be specified when using string timestamps");
        cf_err_hint(err, "Set format, e.g. yyyy-MM-dd'T'HH:mm:ss.SSSX.");
        return CF_ERR_CONFIG;
    }
    if (!blank) {
        c->pattern = cf_xstrdup(fmt);
        cf_code rc = compile_pattern(fmt, "TimestampConverter", &c->toks, &c->n_toks, err);
        if (rc) {
            tsc_destroy(c);
            return rc;
        }
    }
    *state = c;
    return CF_OK;
}

static cf_code tsc_create_value(const cf_config *cfg, void **state, cf_err *err) { return tsc_create_common(cfg, false, state, err); }
static cf_code tsc_create_key(const cf_config *cfg, void **state, cf_err *err) { return tsc_create_common(cfg, true, state, err); }

static cf_code type_from_schema(const cf_schema *s, ts_type *t, cf_err *err) {
    if (cf_schema_is_logical(s, CF_LOGICAL_TIMESTAMP) && s->type == CF_INT64) *t = T_TIMESTAMP;
    else if (cf_schema_is_logical(s, CF_LOGICAL_DATE) && s->type == CF_INT32) *t = T_DATE;
    else if (cf_schema_is_logical(s, CF_LOGICAL_TIME) && s->type == CF_INT32) *t = T_TIME;
    else if (s->type == CF_STRING) *t = T_STRING;
    else if (s->type == CF_INT64) *t = T_UNIX;
    else {
        cf_err_set(err, CF_ERR_SCHEMA, "Schema %s%s%s does not correspond to a known timestamp type format",
                   cf_type_name(s->type), s->name ? " " : "", s->name ? s->name : "");
        return CF_ERR_SCHEMA;
    }
    return CF_OK;
}

static cf_code type_from_value(const cf_value *v, ts_type *t, cf_err *err) {
    if (v->type == CF_STRING) *t = T_STRING;
    else if (v->type == CF_INT64) *t = T_UNIX;
    else {
        cf_err_set(err, CF_ERR_SCHEMA, "TimestampConverter does not support %s objects as timestamps", xf_java_type(v));
        cf_err_hint(err, "Without a schema, timestamps must be strings or int64 epoch numbers.");
        return CF_ERR_SCHEMA;
    }
    return CF_OK;
}

static cf_schema *type_schema(ts_type t, bool optional) {
    cf_schema *s;
    switch (t) {
    case T_STRING: s = cf_schema_primitive(CF_STRING, false); break;
    case T_UNIX: s = cf_schema_primitive(CF_INT64, false); break;
    case T_DATE: s = cf_schema_date(); break;
    case T_TIME: s = cf_schema_time(); break;
    default: s = cf_schema_timestamp(); break;
    }
    cf_schema_set_optional(s, optional);
    return s;
}

/* convertTimestamp: v (non-NULL) of type `from` -> new value of the target type */
static cf_code convert(const tsc *c, const cf_value *v, ts_type from, cf_value **out, cf_err *err) {
    int64_t ms = 0;
    switch (from) {
    case T_STRING:
        if (v->type != CF_STRING) goto wrong;
        if (!c->pattern) {
            cf_err_set(err, CF_ERR_SCHEMA, "TimestampConverter requires format option to be specified when using string timestamps");
            return CF_ERR_SCHEMA;
        }
        if (parse_ms(c, v->u.s.ptr, &ms, err)) return CF_ERR_SCHEMA;
        break;
    case T_UNIX:
        if (v->type != CF_INT64) goto wrong;
        switch (c->prec) {
        case P_SECONDS: ms = v->u.i * 1000; break; /* TimeUnit.SECONDS.toMillis (saturating in Java) */
        case P_MILLIS: ms = v->u.i; break;
        case P_MICROS: ms = v->u.i / 1000; break;
        case P_NANOS: ms = v->u.i / 1000000; break;
        }
        break;
    case T_DATE:
        if (v->type != CF_INT32) goto wrong;
        ms = v->u.i * MS_PER_DAY;
        break;
    case T_TIME:
    case T_TIMESTAMP:
        if (v->type != (from == T_TIME ? CF_INT32 : CF_INT64)) goto wrong;
        ms = v->u.i;
        break;
    }
    switch (c->target) {
    case T_STRING: {
        cf_buf b = CF_BUF_INIT;
        format_ms(c->toks, c->n_toks, ms, &b);
        if (!b.data) cf_buf_reserve(&b, 1);
        size_t n;
        char *s = cf_buf_detach(&b, &n);
        *out = cf_value_string_take(s, n);
        break;
    }
    case T_UNIX: {
        int64_t u = ms;
        switch (c->prec) {
        case P_SECONDS: u = ms / 1000; break;
        case P_MILLIS: break;
        case P_MICROS: u = ms * 1000; break;
        case P_NANOS: u = ms * 1000000; break;
        }
        *out = cf_value_int64(u);
        break;
    }
    case T_DATE: *out = cf_value_int32((int32_t)floordiv(ms, MS_PER_DAY)); break;
    case T_TIME: *out = cf_value_int32((int32_t)floormod(ms, MS_PER_DAY)); break;
    case T_TIMESTAMP: *out = cf_value_int64(ms); break;
    }
    return CF_OK;
wrong:
    cf_err_set(err, CF_ERR_SCHEMA, "Invalid timestamp value: %s value for a %s timestamp", cf_type_name(v->type),
               target_types[from]);
    return CF_ERR_SCHEMA;
}

static cf_code tsc_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    tsc *c = state;
    *out = NULL;
    const cf_schema *schema = c->is_key ? rec->key_schema : rec->value_schema;
    const cf_value *value = c->is_key ? rec->key : rec->value;
    cf_schema *ns = NULL;
    cf_value *nv = NULL;
    cf_code rc = CF_OK;
    if (!c->field) {
        if (schema) {
            ts_type from;
            if ((rc = type_from_schema(schema, &from, err))) return rc;
            ns = type_schema(c->target, schema->optional);
            if (value && (rc = convert(c, value, from, &nv, err))) {
                cf_schema_unref(ns);
                return rc;
            }
        } else if (value) {
            ts_type from;
            if ((rc = type_from_value(value, &from, err)) || (rc = convert(c, value, from, &nv, err))) return rc;
        }
    } else if (schema) {
        if (value && (rc = xf_require_struct(value, "converting timestamp formats", err))) return rc;
        if (schema->type != CF_STRUCT) return xf_require_struct(NULL, "converting timestamp formats", err);
        const cf_field *tf = cf_schema_field(schema, c->field);
        ts_type from = T_UNIX;
        if (tf && (rc = type_from_schema(tf->schema, &from, err))) {
            cf_err_where(err, "%s", c->field);
            return rc;
        }
        ns = xf_cache_get(&c->cache, schema, 0);
        if (!ns) {
            ns = xf_struct_basics(schema);
            for (size_t i = 0; i < schema->n_fields; i++) {
                const cf_field *f = &schema->fields[i];
                cf_schema_add_field(ns, f->name, f == tf ? type_schema(c->target, f->schema->optional) : cf_schema_ref(f->schema), NULL);
            }
            xf_cache_put(&c->cache, schema, 0, ns);
        }
        if (value) {
            nv = cf_value_struct(cf_schema_ref(ns));
            for (size_t i = 0; i < schema->n_fields; i++) {
                cf_value *fv = xf_get_clone(value, i, c->replace_null);
                if (&schema->fields[i] == tf && fv) {
                    cf_value *conv = NULL;
                    rc = convert(c, fv, from, &conv, err);
                    cf_value_destroy(fv);
                    if (rc) {
                        cf_err_where(err, "%s", c->field);
                        cf_value_destroy(nv);
                        cf_schema_unref(ns);
                        return rc;
                    }
                    fv = conv;
                }
                nv->u.st.fields[i] = fv;
            }
        }
    } else if (value) {
        if ((rc = xf_require_map(value, "converting timestamp formats", err))) return rc;
        nv = cf_value_map();
        for (size_t i = 0; i < value->u.map.len; i++) {
            const cf_value *k = value->u.map.keys[i], *v = value->u.map.vals[i];
            cf_value *nvv = NULL;
            if (k && k->type == CF_STRING && strcmp(k->u.s.ptr, c->field) == 0 && v) {
                ts_type from;
                if ((rc = type_from_value(v, &from, err)) || (rc = convert(c, v, from, &nvv, err))) {
                    cf_err_where(err, "%s", c->field);
                    cf_value_destroy(nv);
                    return rc;
                }
            } else {
                nvv = cf_value_clone(v);
            }
            cf_value_map_put(nv, cf_value_clone(k), nvv);
        }
    } else {
        *out = rec; /* schemaless null: unchanged */
        return CF_OK;
    }
    if (c->is_key) cf_record_set_key(rec, ns, nv);
    else cf_record_set_value(rec, ns, nv);
    *out = rec;
    return CF_OK;
}

static const char *const tsc_value_aliases[] = {"org.apache.kafka.connect.transforms.TimestampConverter$Value", NULL};
static const char *const tsc_key_aliases[] = {"org.apache.kafka.connect.transforms.TimestampConverter$Key", NULL};

const cf_transform_plugin cf_xf_timestamp_converter_value = {
    .name = "TimestampConverter$Value",
    .aliases = tsc_value_aliases,
    .config = &cf_timestamp_converter_table,
    .create = tsc_create_value,
    .apply = tsc_apply,
    .destroy = tsc_destroy,
};

const cf_transform_plugin cf_xf_timestamp_converter_key = {
    .name = "TimestampConverter$Key",
    .aliases = tsc_key_aliases,
    .config = &cf_timestamp_converter_table,
    .create = tsc_create_key,
    .apply = tsc_apply,
    .destroy = tsc_destroy,
};
