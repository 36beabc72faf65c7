/*
 * test_sink_run_gen.c - the generator's Debezium history through the whole
 * product: rendered by the JsonConverter (schemas.enable=true) into a
 * kcat-JSON record file, with a redelivered stretch appended, applied by
 * `cdcflow run SINK.json --input FILE` (CF_CLI) with the cdc-sink connector
 * on SQLite; the table must equal the generator's model of the source table.
 *
 * Variants: raw Debezium envelopes (the sink routes op c/u/d itself), with
 * the offset or the `version` field as the sequence number.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "cdc_gen.h"
#include "cdc_rows.h"
#include "cdcflow/buf.h"
#include "cdcflow/convert.h"
#include "cdcflow/props.h"
#include "cdcflow/recordfile.h"

#define TOPIC "dbserver1.public.customers"

static char g_dir[256];

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Every record of the history as record-file lines, partitions interleaved
 * in offset order; then partition 0's middle third again (a redelivery). */
static void write_records(gen *g, const char *path) {
    cf_props *pp = cf_props_new();
    cf_props_set(pp, "schemas.enable", "true");
    cf_converter *kc, *vc;
    cf_err e;
    assert_int_equal(cf_converter_new("json", pp, true, &kc, &e), CF_OK);
    assert_int_equal(cf_converter_new("json", pp, false, &vc, &e), CF_OK);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    cf_buf line = CF_BUF_INIT;
    size_t pos[16] = {0};
    int more = 1;
    uint64_t rng = 99;
    while (more) {
        more = 0;
        for (int p = 0; p < g->n_part; p++) {
            rng = rng * 6364136223846793005ULL + 1;
            size_t k = 1 + (size_t)((rng >> 33) % 50);
            for (; k && pos[p] < g->n_recs[p]; k--, pos[p]++) {
                const cf_record *r = g->recs[p][pos[p]];
                cf_msg *m = cf_msg_new();
                cf_msg_set_topic(m, r->topic);
                m->partition = r->partition;
                m->offset = r->offset;
                char *kb, *vb;
                size_t kl, vl;
                assert_int_equal(cf_converter_from_connect(kc, TOPIC, r->key_schema, r->key, &kb, &kl, &e), CF_OK);
                assert_int_equal(cf_converter_from_connect(vc, TOPIC, r->value_schema, r->value, &vb, &vl, &e), CF_OK);
                cf_msg_set_key(m, kb, kl);
                cf_msg_set_value(m, vb, vl);
                free(kb), free(vb);
                cf_buf_reset(&line);
                cf_recordfile_format(m, &line);
                fwrite(line.data, 1, line.len, f);
                cf_msg_destroy(m);
            }
            if (pos[p] < g->n_recs[p]) more = 1;
        }
    }
    /* redelivery of partition 0's middle third */
    for (size_t i = g->n_recs[0] / 3; i < 2 * g->n_recs[0] / 3; i++) {
        const cf_record *r = g->recs[0][i];
        cf_msg *m = cf_msg_new();
        cf_msg_set_topic(m, r->topic);
        m->partition = r->partition;
        m->offset = r->offset;
        char *kb, *vb;
        size_t kl, vl;
        cf_converter_from_connect(kc, TOPIC, r->key_schema, r->key, &kb, &kl, &e);
        cf_converter_from_connect(vc, TOPIC, r->value_schema, r->value, &vb, &vl, &e);
        cf_msg_set_key(m, kb, kl);
        cf_msg_set_value(m, vb, vl);
        free(kb), free(vb);
        cf_buf_reset(&line);
        cf_recordfile_format(m, &line);
        fwrite(line.data, 1, line.len, f);
        cf_msg_destroy(m);
    }
    fclose(f);
    cf_buf_free(&line);
    cf_converter_destroy(kc), cf_converter_destroy(vc);
    cf_props_destroy(pp);
}

/* The target table against the source model (cdc_rows.h, as every sink test). */
static size_t compare(const gen *g, const char *db_path) {
    size_t n;
    char **rows = rows_sqlite(db_path, "dbserver1_public_customers", &n);
    size_t diffs = rows_diff(g, rows, n, 0);
    rows_free(rows, n);
    return diffs;
}

static void run_variant(const char *tag, gen_shape shape, const char *extra_conf) {
    const char *cli = getenv("CF_CLI");
    assert_non_null(cli);
    gen g;
    gen_init(&g, 2024, shape, 2000, 3, TOPIC);
    for (int i = 0; i < 20000; i++) gen_step(&g);
    char recs[512], conf[512], db[512], cmd[2048];
    snprintf(recs, sizeof recs, "%s/%s.jsonl", g_dir, tag);
    snprintf(conf, sizeof conf, "%s/%s.json", g_dir, tag);
    snprintf(db, sizeof db, "%s/%s.db", g_dir, tag);
    write_records(&g, recs);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"cdc-%s\", \"config\": {\"connector.class\": \"cdc-sink\", \"topics\": \"" TOPIC "\", "
             "\"sqlite.path\": \"%s\", \"key.converter\": \"json\", \"value.converter\": \"json\"%s}}\n",
             tag, db, extra_conf);
    write_file(conf, text);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' --log-level warn run '%s' --input '%s'", g_dir, cli, conf, recs);
    int rc = system(cmd);
    assert_int_equal(rc, 0);
    size_t d = compare(&g, db);
    fprintf(stderr, "# %s: %zu records (+ a redelivered third of partition 0), differences %zu\n", tag, g.total, d);
    assert_int_equal(d, 0);
    gen_free(&g);
}

static void test_run_envelope_offset(void **state) {
    (void)state;
    run_variant("env-offset", GEN_ENVELOPE, "");
}

static void test_run_envelope_version(void **state) {
    (void)state;
    run_variant("env-version", GEN_ENVELOPE, ", \"cdcChangeSequenceNumberField\": \"version\"");
}

static void test_run_rewrite_version(void **state) {
    (void)state;
    run_variant("rewrite-version", GEN_REWRITE, ", \"cdcChangeSequenceNumberField\": \"version\"");
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/cf_sink_run_%d", (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    if (system(cmd) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_envelope_offset),
        cmocka_unit_test(test_run_envelope_version),
        cmocka_unit_test(test_run_rewrite_version),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) return 1;
    return r;
}
