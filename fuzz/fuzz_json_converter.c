/*
 * fuzz_json_converter.c - libFuzzer target for the JsonConverter.
 *
 * The first input byte picks the configuration (schemas.enable on/off,
 * decimal.format BASE64/NUMERIC, replace.null.with.default); the rest is the
 * message. to_connect must either fail with a cf_err or give a record that
 * from_connect writes, and reading that output back must give an equal
 * record (the round trip our tests promise). Crashes, leaks, sanitizer
 * reports and round-trip differences all abort.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/convert.h"
#include "cdcflow/props.h"
#include "cdcflow/schema.h"

/* Jackson writes NaN and infinities as strings ("NaN"); without a schema
 * they read back as strings, in Kafka too. That is the one lossy case. */
static bool has_non_finite(const cf_value *v) {
    if (!v) return false;
    switch (v->type) {
    case CF_FLOAT32:
    case CF_FLOAT64: return !isfinite(v->u.f);
    case CF_ARRAY:
        for (size_t i = 0; i < v->u.arr.len; i++)
            if (has_non_finite(v->u.arr.items[i])) return true;
        return false;
    case CF_MAP:
        for (size_t i = 0; i < v->u.map.len; i++)
            if (has_non_finite(v->u.map.keys[i]) || has_non_finite(v->u.map.vals[i])) return true;
        return false;
    default: return false;
    }
}

static cf_converter *make(uint8_t sel) {
    cf_props *p = cf_props_new();
    cf_props_set(p, "schemas.enable", (sel & 1) ? "false" : "true");
    cf_props_set(p, "decimal.format", (sel & 2) ? "NUMERIC" : "BASE64");
    cf_props_set(p, "replace.null.with.default", (sel & 4) ? "false" : "true");
    cf_props_set(p, "schemas.cache.size", (sel & 8) ? "0" : "4");
    cf_converter *c = NULL;
    if (cf_converter_new("json", p, false, &c, NULL) != CF_OK) abort();
    cf_props_destroy(p);
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    cf_converter *c = make(data[0]);
    const char *msg = (const char *)data + 1;
    size_t len = size - 1;
    cf_schema *s = NULL;
    cf_value *v = NULL;
    cf_err err;
    if (cf_converter_to_connect(c, "t", msg, len, &s, &v, &err) == CF_OK) {
        char *out = NULL;
        size_t olen = 0;
        cf_code rc = cf_converter_from_connect(c, "t", s, v, &out, &olen, &err);
        /* A NaN stored in a struct equals itself in cf_value_equal. The only
         * legitimate failure: a Decimal read as BASE64 (no length limit) with
         * more significant digits than a NUMERIC JSON number may have. */
        bool too_long = rc == CF_ERR_SCHEMA && strstr(err.message, "too long for a JSON number");
        if (rc != CF_OK && !too_long) {
            fprintf(stderr, "from_connect failed after to_connect: %s (%s)\n", err.message, err.where);
            abort();
        }
        /* the borrowed view (what a producer uses) gives the same bytes or error */
        const char *view = NULL;
        size_t vlen = 0;
        cf_err verr;
        cf_code vrc = cf_converter_from_connect_view(c, "t", s, v, &view, &vlen, &verr);
        if (vrc != rc || (!rc && (vlen != olen || (!view) != (!out) || (out && memcmp(view, out, olen) != 0)))) {
            fprintf(stderr, "the view differs from from_connect\n");
            abort();
        }
        if (too_long) {
            /* nothing written */
        } else if (out) {
            cf_schema *s2 = NULL;
            cf_value *v2 = NULL;
            if (cf_converter_to_connect(c, "t", out, olen, &s2, &v2, &err) != CF_OK) {
                fprintf(stderr, "re-read failed: %s (%s)\n%.*s\n", err.message, err.where, (int)olen, out);
                abort();
            }
            bool lossy = !s && has_non_finite(v);
            if (!lossy && (!cf_schema_equal(s, s2) || !cf_value_equal(v, v2))) {
                fprintf(stderr, "round trip differs:\n%.*s\n", (int)olen, out);
                abort();
            }
            cf_schema_unref(s2);
            cf_value_destroy(v2);
        } else if (s || v) {
            fprintf(stderr, "null output for a non-null record\n");
            abort();
        }
        free(out);
    }
    cf_schema_unref(s);
    cf_value_destroy(v);
    /* The converter keeps the last message's schema bytes as a hint: a
     * message read after another (the input split at its first NUL byte, or
     * the same message twice) must give what a fresh converter gives. */
    const char *m1 = msg, *m2 = msg;
    size_t l1 = len, l2 = len;
    const char *sep = len ? memchr(msg, 0, len) : NULL;
    if (sep) l1 = (size_t)(sep - msg), m2 = sep + 1, l2 = len - l1 - 1;
    s = NULL, v = NULL;
    if (cf_converter_to_connect(c, "t", m1, l1, &s, &v, &err) == CF_OK) cf_schema_unref(s), cf_value_destroy(v);
    cf_converter *fresh = make(data[0]);
    cf_schema *sa = NULL, *sb = NULL;
    cf_value *va = NULL, *vb = NULL;
    cf_code ra = cf_converter_to_connect(c, "t", m2, l2, &sa, &va, &err);
    cf_code rb = cf_converter_to_connect(fresh, "t", m2, l2, &sb, &vb, &err);
    if (ra != rb) {
        fprintf(stderr, "after another message: code %d, fresh converter: %d\n", (int)ra, (int)rb);
        abort();
    }
    if (ra == CF_OK && !has_non_finite(va) && (!cf_schema_equal(sa, sb) || !cf_value_equal(va, vb))) {
        fprintf(stderr, "after another message the record differs from a fresh converter's\n");
        abort();
    }
    cf_schema_unref(sa), cf_schema_unref(sb);
    cf_value_destroy(va), cf_value_destroy(vb);
    cf_converter_destroy(fresh);
    cf_converter_destroy(c);
    return 0;
}
