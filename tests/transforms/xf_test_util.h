/*
 * xf_test_util.h - helpers of the transform tests: build a transform from
 * key/value pairs, apply it expecting success, make a value record.
 */
#ifndef CF_TESTS_XF_TEST_UTIL_H
#define CF_TESTS_XF_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "cdcflow/props.h"
#include "cdcflow/record.h"
#include "cdcflow/schema.h"
#include "cdcflow/transforms.h"

static inline cf_transform *mk(const char *type, ...) {
    cf_props *p = cf_props_new();
    va_list ap;
    va_start(ap, type);
    const char *k;
    while ((k = va_arg(ap, const char *))) cf_props_set(p, k, va_arg(ap, const char *));
    va_end(ap);
    cf_transform *t = NULL;
    cf_err err;
    cf_code rc = cf_transform_new(type, p, &t, &err);
    if (rc) fprintf(stderr, "%s / %s / %s\n", err.message, err.detail, err.hint);
    assert_int_equal(rc, CF_OK);
    cf_props_destroy(p);
    return t;
}

static inline cf_code mk_err(const char *type, cf_err *err, ...) {
    cf_props *p = cf_props_new();
    va_list ap;
    va_start(ap, err);
    const char *k;
    while ((k = va_arg(ap, const char *))) cf_props_set(p, k, va_arg(ap, const char *));
    va_end(ap);
    cf_transform *t = NULL;
    cf_code rc = cf_transform_new(type, p, &t, err);
    assert_null(t);
    cf_props_destroy(p);
    return rc;
}

static inline cf_record *run(cf_transform *t, cf_record *in) {
    cf_record *out = NULL;
    cf_err err;
    cf_code rc = cf_transform_apply(t, in, &out, &err);
    if (rc) fprintf(stderr, "%s (%s)\n", err.message, err.where);
    assert_int_equal(rc, CF_OK);
    return out;
}

static inline cf_record *value_rec(cf_schema *s, cf_value *v) {
    cf_record *r = cf_record_new();
    cf_record_set_topic(r, "test");
    cf_record_set_value(r, s, v);
    return r;
}

#endif
