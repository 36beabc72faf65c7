/*
 * test_properties.c - .properties parsing against java.util.Properties.load.
 * Expected values are the ones the Properties.load(Reader) javadoc states
 * (its "Truth = Beauty", "fruits" and "cheeses" examples, escapes, comments,
 * continuations) and what its LineReader does on the edge cases. Every
 * vector here was checked against OpenJDK 17's Properties.load(Reader).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/config.h"

static cf_props *load(const char *text) {
    cf_props *p = NULL;
    cf_err err;
    cf_code rc = cf_props_from_properties(text, strlen(text), &p, &err);
    if (rc != CF_OK) fail_msg("parse failed: %s / %s / %s", err.message, err.detail, err.where);
    return p;
}

static void expect(const cf_props *p, const char *k, const char *v) {
    const char *got = cf_props_get(p, k);
    if (!got) fail_msg("key \"%s\" missing", k);
    assert_string_equal(got, v);
}

/* The javadoc: each of these three lines gives key "Truth", value "Beauty". */
static void test_javadoc_truth_beauty(void **state) {
    (void)state;
    const char *lines[] = {"Truth = Beauty\n", " Truth:Beauty\n", "Truth                    :Beauty\n",
                           "Truth\t=\tBeauty", "Truth Beauty"};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        cf_props *p = load(lines[i]);
        assert_int_equal(cf_props_count(p), 1);
        expect(p, "Truth", "Beauty");
        cf_props_destroy(p);
    }
}

/* The javadoc's continuation example and its key-only line. */
static void test_javadoc_fruits_cheeses(void **state) {
    (void)state;
    cf_props *p = load("fruits                           apple, banana, pear, \\\n"
                       "                                 cantaloupe, watermelon, \\\n"
                       "                                 kiwi, mango\n"
                       "cheeses\n");
    expect(p, "fruits", "apple, banana, pear, cantaloupe, watermelon, kiwi, mango");
    expect(p, "cheeses", "");
    assert_int_equal(cf_props_count(p), 2);
    cf_props_destroy(p);
}

static void test_comments_and_blank_lines(void **state) {
    (void)state;
    cf_props *p = load("# a comment\n"
                       "! another comment\n"
                       "   # indented comment\n"
                       "\n"
                       "   \t \f\n"
                       "a=1\n"
                       "#comment ending in backslash does not continue \\\n"
                       "b=2\n"
                       "c=x#not a comment\n");
    assert_int_equal(cf_props_count(p), 3);
    expect(p, "a", "1");
    expect(p, "b", "2");
    expect(p, "c", "x#not a comment");
    cf_props_destroy(p);
}

static void test_separators(void **state) {
    (void)state;
    cf_props *p = load("k1:=v\n"      /* only one separator is skipped */
                       "k2 = = v\n"   /* second '=' belongs to the value */
                       "k3==v\n"
                       "=empty key\n"
                       "k4 :   v4   \n" /* trailing whitespace is kept */
                       "k5\n"
                       "k6=\n");
    expect(p, "k1", "=v");
    expect(p, "k2", "= v");
    expect(p, "k3", "=v");
    expect(p, "", "empty key");
    expect(p, "k4", "v4   ");
    expect(p, "k5", "");
    expect(p, "k6", "");
    cf_props_destroy(p);
}

static void test_escapes(void **state) {
    (void)state;
    cf_props *p = load("key\\ with\\ spaces = v\n"
                       "k\\=x\\:y=z\n"
                       "tabs=a\\tb\\nc\\rd\\fe\n"
                       "unknown=\\b\\z\\q\n" /* backslash before other chars is dropped */
                       "bs=a\\\\b\n"
                       "lead=\\  two spaces\n"
                       "uni=\\u0041\\u00e9\\u20AC\n"
                       "pair=\\uD83D\\uDE00\n"
                       "quote='\"\n"
                       "hash=\\#x\n");
    expect(p, "key with spaces", "v");
    expect(p, "k=x:y", "z");
    expect(p, "tabs", "a\tb\nc\rd\fe");
    expect(p, "unknown", "bzq");
    expect(p, "bs", "a\\b");
    expect(p, "lead", "  two spaces");
    expect(p, "uni", "A\xc3\xa9\xe2\x82\xac");
    expect(p, "pair", "\xf0\x9f\x98\x80");
    expect(p, "quote", "'\"");
    expect(p, "hash", "#x");
    cf_props_destroy(p);
}

static void test_continuations(void **state) {
    (void)state;
    cf_props *p = load("a=b\\\r\n   c\r\n"   /* \r\n terminators, leading ws of the next line dropped */
                       "d=e\\\\\n"          /* even number of backslashes: no continuation */
                       "f=g\\\n#h\n"        /* a '#' on a continuation line is data */
                       "i=j\\\n\n"          /* continuation into an empty line ends the value */
                       "k=l\rm=n\r"         /* lone \r terminators */
                       "o=p\\");            /* backslash at end of input is dropped */
    expect(p, "a", "bc");
    expect(p, "d", "e\\");
    expect(p, "f", "g#h");
    expect(p, "i", "j");
    expect(p, "k", "l");
    expect(p, "m", "n");
    expect(p, "o", "p");
    assert_int_equal(cf_props_count(p), 7);
    cf_props_destroy(p);
    /* a line holding only a backslash continues into the next one */
    p = load("#c\\\n\\\nz=1\n");
    assert_int_equal(cf_props_count(p), 1);
    expect(p, "z", "1");
    cf_props_destroy(p);
}

static void test_duplicates_last_wins_and_order(void **state) {
    (void)state;
    cf_props *p = load("a=1\nb=2\na=3\n");
    assert_int_equal(cf_props_count(p), 2);
    expect(p, "a", "3");
    assert_string_equal(cf_props_key_at(p, 0), "a");
    cf_props_destroy(p);
}

static void test_latin1_input(void **state) {
    (void)state;
    /* not valid UTF-8: read as ISO-8859-1, as Properties.load(InputStream) */
    cf_props *p = load("k=caf\xe9\n");
    expect(p, "k", "caf\xc3\xa9");
    cf_props_destroy(p);
    /* valid UTF-8 is kept as is */
    p = load("k=caf\xc3\xa9\n");
    expect(p, "k", "caf\xc3\xa9");
    cf_props_destroy(p);
}

static void test_errors_name_the_line(void **state) {
    (void)state;
    cf_props *p = NULL;
    cf_err err;
    const char *t = "a=1\n# c\nb=\\u12G4\n";
    assert_int_equal(cf_props_from_properties(t, strlen(t), &p, &err), CF_ERR_CONFIG);
    assert_null(p);
    assert_string_equal(err.where, "line 3");
    assert_non_null(strstr(err.message, "\\uxxxx"));
    t = "a=\\u00";
    assert_int_equal(cf_props_from_properties(t, strlen(t), &p, &err), CF_ERR_CONFIG);
    t = "a=\\u0000\n";
    assert_int_equal(cf_props_from_properties(t, strlen(t), &p, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "NUL"));
    t = "a=\\uD800x\n";
    assert_int_equal(cf_props_from_properties(t, strlen(t), &p, &err), CF_ERR_CONFIG);
    /* a continued logical line reports the line it starts on */
    t = "x=1\ny=a\\\n  b\\uZZZZ\n";
    assert_int_equal(cf_props_from_properties(t, strlen(t), &p, &err), CF_ERR_CONFIG);
    assert_string_equal(err.where, "line 2");
    /* NUL byte in the file */
    const char bin[] = "a=1\nb=\0\n";
    assert_int_equal(cf_props_from_properties(bin, sizeof bin - 1, &p, &err), CF_ERR_CONFIG);
    assert_string_equal(err.where, "line 2");
}

static void test_empty(void **state) {
    (void)state;
    cf_props *p = load("");
    assert_int_equal(cf_props_count(p), 0);
    cf_props_destroy(p);
    p = load("\n\n# only comments\n");
    assert_int_equal(cf_props_count(p), 0);
    cf_props_destroy(p);
    /* an empty value on the very first line (found by fuzz_config_parse) */
    p = load("{\"n{");
    expect(p, "{\"n{", "");
    cf_props_destroy(p);
    p = load("=");
    expect(p, "", "");
    cf_props_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_javadoc_truth_beauty),
        cmocka_unit_test(test_javadoc_fruits_cheeses),
        cmocka_unit_test(test_comments_and_blank_lines),
        cmocka_unit_test(test_separators),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_continuations),
        cmocka_unit_test(test_duplicates_last_wins_and_order),
        cmocka_unit_test(test_latin1_input),
        cmocka_unit_test(test_errors_name_the_line),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
