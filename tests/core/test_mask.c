/*
 * test_mask.c - cf_mask_credentials (src/core/mask.c): URL user info as RFC
 * 3986 writes it (scheme "://" [user [":" password] "@"] host), libpq
 * conninfo keyword=value pairs (PostgreSQL docs, 34.1.1), JAAS options
 * (key="value";), and the in-place form used by cf_err and the log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdcflow/error.h"
#include "cdcflow/text.h"

static void expect(const char *in, const char *want) {
    cf_buf b = CF_BUF_INIT;
    bool hid = cf_mask_credentials(in, &b);
    assert_string_equal(b.data ? b.data : "", want);
    assert_int_equal(hid, strcmp(in, want) != 0);
    char fixed[512];
    snprintf(fixed, sizeof fixed, "%s", in);
    cf_mask_credentials_inplace(fixed, sizeof fixed);
    assert_string_equal(fixed, want);
    cf_buf_free(&b);
}

static void test_urls(void **state) {
    (void)state;
    expect("postgres://user:pass@host/db", "postgres://user:[hidden]@host/db");
    expect("postgresql://u:p@h:5432/db?sslmode=require", "postgresql://u:[hidden]@h:5432/db?sslmode=require");
    expect("http://u:p@registry", "http://u:[hidden]@registry");
    expect("jdbc:postgresql://u:p@h/db", "jdbc:postgresql://u:[hidden]@h/db");
    /* a list of URLs, each on its own */
    expect("http://a:1@h1,https://b:2@h2/x", "http://a:[hidden]@h1,https://b:[hidden]@h2/x");
    /* in a message */
    expect("cannot connect to \"postgres://al:pw@127.0.0.1:1/db\": refused",
           "cannot connect to \"postgres://al:[hidden]@127.0.0.1:1/db\": refused");
    /* a user alone, no user info, '@' after the authority: unchanged */
    expect("https://token@host/x", "https://token@host/x");
    expect("http://host:8080/a@b", "http://host:8080/a@b");
    expect("http://127.0.0.1:8081/apis/ccompat/v7", "http://127.0.0.1:8081/apis/ccompat/v7");
    /* an '@' inside the password: the last '@' of the authority ends it */
    expect("postgres://u:p@ss@h/db", "postgres://u:[hidden]@h/db");
    /* already masked: unchanged */
    expect("postgres://u:[hidden]@h/db", "postgres://u:[hidden]@h/db");
    expect("no url here", "no url here");
}

static void test_pairs(void **state) {
    (void)state;
    expect("host=h dbname=d user=u password=secret1 port=5432", "host=h dbname=d user=u password=[hidden] port=5432");
    expect("host=h password='a b c' user=u", "host=h password='[hidden]' user=u");
    expect("postgres://h/db?user=u&password=x1&sslmode=disable",
           "postgres://h/db?user=u&password=[hidden]&sslmode=disable");
    expect("PlainLoginModule required username=\"u\" password=\"p;w\";",
           "PlainLoginModule required username=\"u\" password=\"[hidden]\";");
    expect("https://oauth2.example/token?client_secret=abc&access_token=def",
           "https://oauth2.example/token?client_secret=[hidden]&access_token=[hidden]");
    expect("Server=x;Uid=u;Pwd=p;", "Server=x;Uid=u;Pwd=[hidden];");
    /* not a pair: the key goes on, or no '=' */
    expect("passwordless=true tokens=3 cwd=/tmp", "passwordless=true tokens=3 cwd=/tmp");
    expect("Missing or invalid bearer token (rest.auth.token)", "Missing or invalid bearer token (rest.auth.token)");
}

static void test_inplace_cut(void **state) {
    (void)state;
    /* the mask is longer than "p": the text is cut, never overrun */
    char small[24] = "http://u:p@h/abcdefghij";
    cf_mask_credentials_inplace(small, sizeof small);
    assert_string_equal(small, "http://u:[hidden]@h/abc");
    char tiny[12] = "http://u:p@";
    cf_mask_credentials_inplace(tiny, sizeof tiny);
    assert_string_equal(tiny, "http://u:");
}

/* cf_err masks what it is given: a message never keeps a URL password. */
static void test_cf_err(void **state) {
    (void)state;
    cf_err e;
    cf_err_set(&e, CF_ERR_IO, "cannot reach %s", "http://u:pw@h:1");
    cf_err_detail(&e, "url=%s", "postgres://a:b@c/d");
    cf_err_hint(&e, "try host=h password=%s", "x");
    assert_string_equal(e.message, "cannot reach http://u:[hidden]@h:1");
    assert_string_equal(e.detail, "url=postgres://a:[hidden]@c/d");
    assert_string_equal(e.hint, "try host=h password=[hidden]");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_inplace_cut),
        cmocka_unit_test(test_cf_err),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
