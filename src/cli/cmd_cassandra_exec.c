/*
 * cmd_cassandra_exec.c - `cdcflow cassandra exec`: the design's CQL-style
 * statements (CREATE/DROP DATA_SINK, CREATE/DROP DATA_SOURCE) sent to a
 * running sidecar's POST /api/v1/services/cdc/statements. Thin: the parsing
 * is cf_sc_stmts_parse (done here first, so a syntax error needs no server),
 * the applying is the sidecar's.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/sidecar.h"
#include "cli.h"

#define DEFAULT_URL "http://127.0.0.1:8083"

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, "cdcflow cassandra exec: ");
    fprintf(stderr, fmt, arg ? arg : "");
    fprintf(stderr, "\nHINT:  See `cdcflow cassandra exec --help`.\n");
    return CF_EXIT_USAGE;
}

static bool slurp(FILE *f, cf_buf *b) {
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) cf_buf_append(b, tmp, n);
    return !ferror(f);
}

static size_t collect(char *p, size_t size, size_t n, void *arg) {
    cf_buf_append(arg, p, size * n);
    return size * n;
}

/* POST the statements; the answer's status in *status, its body in body. */
static int post(const char *url, const char *token, const cf_buf *text, long *status, cf_buf *body) {
    cf_buf u = CF_BUF_INIT, auth = CF_BUF_INIT;
    size_t l = strlen(url);
    while (l && url[l - 1] == '/') l--;
    cf_buf_printf(&u, "%.*s/api/v1/services/cdc/statements", (int)l, url);
    CURL *c = curl_easy_init();
    if (!c) {
        fprintf(stderr, "cdcflow: curl_easy_init failed\n");
        return CF_EXIT_RUNTIME;
    }
    /* {"statements": "..."}: the worker takes application/json bodies only (a
     * cross-site page can send text/plain without a CORS preflight) */
    json_t *o = json_pack("{s:s%}", "statements", text->data, text->len);
    char *payload = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!payload) {
        fprintf(stderr, "cdcflow: the statements are not valid UTF-8\n");
        curl_easy_cleanup(c);
        cf_buf_free(&u);
        return CF_EXIT_USAGE;
    }
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (token && *token) {
        cf_buf_printf(&auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth.data);
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, u.data);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(payload));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    int ex = CF_EXIT_OK;
    if (rc != CURLE_OK) {
        fprintf(stderr, "cdcflow: cannot reach the sidecar at %s: %s\nHINT:  Is `cdcflow cassandra sidecar --rest PORT` "
                        "running there? Give its address with --url.\n",
                u.data, errbuf[0] ? errbuf : curl_easy_strerror(rc));
        ex = CF_EXIT_RUNTIME;
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(payload);
    cf_buf_free(&u);
    cf_buf_free(&auth);
    return ex;
}

static int run(int argc, char **argv) {
    const char *url = DEFAULT_URL, *token = getenv("CDCFLOW_REST_TOKEN"), *file = NULL, *inline_text = NULL;
    bool parse_only = false, from_stdin = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--url") == 0 && v) {
            url = argv[++i];
        } else if (strcmp(a, "--token") == 0 && v) {
            token = argv[++i];
        } else if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && v) {
            if (file || inline_text || from_stdin) return usage("give the statements once (text, -f FILE or -)%s", NULL);
            file = argv[++i];
        } else if (strcmp(a, "--parse-only") == 0) {
            parse_only = true;
        } else if (strcmp(a, "-") == 0) {
            if (file || inline_text || from_stdin) return usage("give the statements once (text, -f FILE or -)%s", NULL);
            from_stdin = true;
        } else if (a[0] == '-' && a[1]) {
            return usage(v || a[1] != '-' ? "unknown or incomplete option \"%s\"" : "option \"%s\" needs a value", a);
        } else {
            if (file || inline_text || from_stdin) return usage("give the statements once (text, -f FILE or -)%s", NULL);
            inline_text = a;
        }
    }
    if (!file && !inline_text && !from_stdin) return usage("no statements: give them as an argument, -f FILE or -%s", NULL);
    cf_buf text = CF_BUF_INIT;
    if (inline_text) {
        cf_buf_append_str(&text, inline_text);
    } else {
        FILE *f = file ? fopen(file, "rb") : stdin;
        if (!f) return usage("cannot read %s", file);
        bool ok = slurp(f, &text);
        if (file) fclose(f);
        if (!ok) {
            cf_buf_free(&text);
            return usage("cannot read %s", file ? file : "stdin");
        }
    }
    if (!text.data) cf_buf_append_str(&text, "");
    cf_sc_stmts stmts;
    cf_err err;
    cf_err_clear(&err);
    int ex = CF_EXIT_OK;
    if (cf_sc_stmts_parse(text.data, text.len, &stmts, &err)) {
        if (file) cf_err_where(&err, "%s:%d:%d", file, stmts.err_line, stmts.err_column);
        cf_cli_print_err(&err);
        ex = CF_EXIT_USAGE;
    } else if (parse_only) {
        cf_buf j = CF_BUF_INIT;
        cf_sc_stmts_json(&stmts, &j);
        printf("%s\n", j.data);
        cf_buf_free(&j);
    } else {
        long status = 0;
        cf_buf body = CF_BUF_INIT;
        ex = post(url, token, &text, &status, &body);
        if (!ex) {
            json_t *o = body.data ? json_loadb(body.data, body.len, 0, NULL) : NULL;
            if (body.len) printf("%.*s\n", (int)body.len, body.data);
            if (status < 200 || status >= 300) {
                const char *m = json_string_value(json_object_get(o, "message"));
                const char *hint = json_string_value(json_object_get(o, "hint"));
                fprintf(stderr, "cdcflow: the sidecar answered %ld: %s\n", status, m ? m : "(no message)");
                if (hint) fprintf(stderr, "HINT:  %s\n", hint);
                else if (status == 401) fprintf(stderr, "HINT:  Give its rest.auth.token with --token or $CDCFLOW_REST_TOKEN.\n");
                /* 400 without a statement number: the text did not parse there (nothing applied) */
                ex = status == 400 && !json_object_get(o, "statement") ? CF_EXIT_USAGE : CF_EXIT_RUNTIME;
            }
            json_decref(o);
        }
        cf_buf_free(&body);
    }
    cf_sc_stmts_free(&stmts);
    cf_buf_free(&text);
    return ex;
}

const cf_command cf_cmd_cassandra_exec = {
    "cassandra exec",
    "CQL-style statements (CREATE DATA_SINK, CREATE DATA_SOURCE, DROP ...) to a running sidecar",
    "Usage: cdcflow cassandra exec [--url URL] [--token TOKEN] [--parse-only] ('STATEMENTS' | -f FILE | -)\n"
    "\n"
    "Configures a running `cdcflow cassandra sidecar --rest PORT` with the management statements of the\n"
    "Sidecar CDC design, sent to its POST /api/v1/services/cdc/statements. The statements are parsed\n"
    "here first: a syntax error is reported with its line and column and nothing is sent.\n"
    "\n"
    "Statements (keywords in any case; separated by ';', the last one optional):\n"
    "  CREATE DATA_SINK [IF NOT EXISTS] name WITH uri = 'kafka://host:port/topic'\n"
    "      [AND options = {'key': 'value', ...}]\n"
    "        a named Kafka destination. host:port must be the sidecar's Kafka (--bootstrap-servers;\n"
    "        several as host:port,host:port, or `embedded`). The topic becomes the connector's\n"
    "        topic.format: {keyspace} and {table} are replaced (kafka://k:9092/cdc.{keyspace}.{table});\n"
    "        without them every table's events go to that one topic; without a topic the default\n"
    "        {keyspace}.{table}. Options: schema.registry.url (Avro in the Confluent wire format),\n"
    "        key.serializer / value.serializer = avro | json, key.converter*, value.converter*; any\n"
    "        other is a Kafka producer setting ('acks': 'all', 'compression.type': 'lz4').\n"
    "  CREATE DATA_SOURCE [IF NOT EXISTS] cdc ON TABLE keyspace.table WITH sink = name\n"
    "      [AND options = {'consistency.level': 'LOCAL_QUORUM', ...}]\n"
    "        publish the table's changes to the sink. Options are the sidecar's settings, as in\n"
    "        --config (consistency.level, cdc_raw.dirs, schema.files, replication.factor, ...): one\n"
    "        connector reads the replicas, so every data source uses one sink and an option has one\n"
    "        value for all of them.\n"
    "  DROP DATA_SOURCE [IF EXISTS] cdc ON TABLE keyspace.table\n"
    "        stop publishing the table (the last one dropped stops the connector).\n"
    "  DROP DATA_SINK [IF EXISTS] name\n"
    "        forget a sink no data source uses.\n"
    "Identifiers as in CQL: unquoted ones are lower-cased, \"Quoted\" ones kept (\"\" for a quote);\n"
    "strings in single quotes ('' for a quote); comments --, // and /* */.\n"
    "\n"
    "Options:\n"
    "  'STATEMENTS'     the statements as one argument\n"
    "  -f, --file FILE  read them from FILE\n"
    "  -                read them from stdin\n"
    "  --url URL        the sidecar's REST API (default " DEFAULT_URL ")\n"
    "  --token TOKEN    its rest.auth.token (default $CDCFLOW_REST_TOKEN)\n"
    "  --parse-only     only parse, and print the statements as JSON (no server)\n"
    "\n"
    "Output: the sidecar's answer, {\"results\": [{\"statement\", \"name\" | \"keyspace\" and \"table\",\n"
    "\"result\": \"created\" | \"exists\" | \"dropped\" | \"absent\", \"config\"}]} (config: the connector's\n"
    "configuration after a DATA_SOURCE statement). Statements are applied in order; the first that\n"
    "fails stops the rest, and the ones before it stay applied.\n"
    "\n"
    "Example:\n"
    "  cdcflow cassandra exec --url http://127.0.0.1:8083 \"\n"
    "    CREATE DATA_SINK orders_sink WITH uri = 'kafka://kafka:9092/cdc.{keyspace}.{table}'\n"
    "      AND options = {'schema.registry.url': 'http://registry:8081'};\n"
    "    CREATE DATA_SOURCE cdc ON TABLE shop.orders WITH sink = orders_sink\n"
    "      AND options = {'consistency.level': 'LOCAL_QUORUM'}\"\n"
    "\n"
    "Exit codes: 0 every statement applied; 1 the sidecar is unreachable or a statement failed\n"
    "(exists, unknown sink, a bad option, refused by the connector); 2 usage or syntax error (nothing\n"
    "was sent).",
    run,
};
