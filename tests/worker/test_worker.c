/*
 * test_worker.c - the connector runtime without Kafka: direct mode, record
 * files, offsets only after acknowledgement / flush, errors.tolerance,
 * dead letter queue headers, the offsets file.
 *
 * The plugins used here ("test-source", "test-sink") are defined in this
 * file and handed to the worker through cf_worker_opts.plugins.
 * Oracles from outside: Kafka Connect's offsets-topic format (key
 * ["<connector>",{partition}], value {offset}, as `kafka-console-consumer
 * --property print.key=true` shows for the FileStreamSource:
 * ["file-source",{"filename":"/data/input.txt"}] {"position":142}), and
 * the DLQ context header names of Connect's DeadLetterQueueReporter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <cmocka.h>

#include "cdcflow/buf.h"
#include "cdcflow/log.h"
#include "cdcflow/record.h"
#include "cdcflow/worker.h"
#include "../../src/worker/worker_internal.h"

#include "plugins.h"
#include "helpers.h"

/* ---------------- helpers ---------------- */

static const char *tpath(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static cf_props *props_of(const char *first, ...) {
    cf_props *p = cf_props_new();
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        cf_props_set(p, k, v);
    }
    va_end(ap);
    return p;
}

static cf_worker *new_worker(cf_props *wp, const char *input, const char *output) {
    cf_worker_opts o = {.plugins = test_plugins, .input_file = input, .output_file = output};
    cf_worker *w = NULL;
    cf_err err;
    assert_cf_ok(cf_worker_new(wp, &o, &w, &err), &err);
    assert_cf_ok(cf_worker_start(w, &err), &err);
    cf_props_destroy(wp);
    return w;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cf_buf b = CF_BUF_INIT;
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) cf_buf_append(&b, tmp, n);
    fclose(f);
    if (!b.data) cf_buf_append_str(&b, "");
    return cf_buf_detach(&b, NULL);
}

/* The stored offset "pos" of the test source, read from the offsets file
 * with a fresh store (what a restarted worker would see); -1 if none. */
static int64_t stored_pos(const char *offsets_file, const char *connector) {
    cf_offset_store *s = NULL;
    assert_int_equal(cf_offset_store_open_file(offsets_file, &s, NULL), CF_OK);
    cf_value *p = src_partition();
    cf_value *off = cf_offset_store_get(s, connector, p);
    int64_t pos = -1;
    if (off) pos = cf_value_map_get_str(off, "pos")->u.i;
    cf_value_destroy(off);
    cf_value_destroy(p);
    cf_offset_store_destroy(s);
    return pos;
}

static int setup(void **state) {
    (void)state;
    tmpdir_make("worker");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tmpdir_remove();
    return 0;
}

/* ---------------- tests ---------------- */

/* Connect's offsets topic: key ["<connector>",{partition}], value {offset}. */
static void test_offset_format_is_connects(void **state) {
    (void)state;
    cf_value *p = cf_value_map();
    cf_value_map_put(p, cf_value_string("filename"), cf_value_string("/data/input.txt"));
    cf_value *o = cf_value_map();
    cf_value_map_put(o, cf_value_string("position"), cf_value_int64(142));
    char *k = cf_offset_key_json("file-source", p), *v = cf_offset_value_json(o);
    assert_string_equal(k, "[\"file-source\",{\"filename\":\"/data/input.txt\"}]");
    assert_string_equal(v, "{\"position\":142}");
    /* read back: numbers come back as INT64, as JsonConverter gives them */
    char *conn = NULL;
    cf_value *p2 = NULL, *o2 = NULL;
    assert_int_equal(cf_offset_key_parse(k, strlen(k), &conn, &p2, NULL), CF_OK);
    assert_string_equal(conn, "file-source");
    assert_true(cf_value_equal(p, p2));
    assert_int_equal(cf_offset_value_parse(v, strlen(v), &o2, NULL), CF_OK);
    assert_int_equal(cf_value_map_get_str(o2, "position")->type, CF_INT64);
    assert_int_equal(cf_value_map_get_str(o2, "position")->u.i, 142);
    /* a key written by a JDBC source connector (Confluent docs) parses too */
    const char *jdbc = "[\"jdbc-source\",{\"protocol\":\"1\",\"table\":\"db.table\"}]";
    cf_value *p3 = NULL;
    char *c3 = NULL;
    assert_int_equal(cf_offset_key_parse(jdbc, strlen(jdbc), &c3, &p3, NULL), CF_OK);
    assert_string_equal(cf_value_map_get_str(p3, "table")->u.s.ptr, "db.table");
    /* damaged keys are errors, not crashes */
    cf_err err;
    assert_int_equal(cf_offset_key_parse("{\"a\":1}", 7, NULL, NULL, &err), CF_ERR_CORRUPT);
    assert_int_equal(cf_offset_key_parse("[\"x\"", 4, NULL, NULL, &err), CF_ERR_CORRUPT);
    assert_int_equal(cf_offset_value_parse("[1]", 3, &o2, &err) == CF_OK ? 0 : 1, 1);
    free(k), free(v), free(conn), free(c3);
    cf_value_destroy(p), cf_value_destroy(o), cf_value_destroy(p2), cf_value_destroy(p3);
    cf_value_destroy(o2);
}

static void test_offset_file_store(void **state) {
    (void)state;
    const char *path = tpath("offsets.json");
    cf_offset_store *s = NULL;
    assert_int_equal(cf_offset_store_open_file(path, &s, NULL), CF_OK); /* missing file: empty */
    assert_int_equal(cf_offset_store_count(s), 0);
    cf_value *p = src_partition();
    /* the same partition map built in another key order finds the same entry */
    cf_value *p_other = cf_value_map();
    cf_value_map_put(p_other, cf_value_string("src"), cf_value_string("test"));
    cf_value *o = cf_value_map();
    cf_value_map_put(o, cf_value_string("pos"), cf_value_int64(7));
    cf_offset_store_put(s, "c1", p, o);
    assert_int_equal(cf_offset_store_flush(s, NULL), CF_OK);
    struct stat st;
    assert_int_equal(stat(tpath("offsets.json.tmp"), &st), -1); /* renamed away */
    cf_offset_store_destroy(s);
    assert_int_equal(stored_pos(path, "c1"), 7);
    assert_int_equal(stored_pos(path, "c2"), -1);
    /* the file holds Connect's key/value JSON */
    char *text = slurp(path);
    assert_non_null(strstr(text, "{\"key\":[\"c1\",{\"src\":\"test\"}],\"value\":{\"pos\":7}}"));
    free(text);

    /* a failed write leaves the previous file intact */
    if (geteuid() != 0) {
        assert_int_equal(cf_offset_store_open_file(path, &s, NULL), CF_OK);
        cf_value_map_get_str(o, "pos")->u.i = 8;
        cf_offset_store_put(s, "c1", p_other, o);
        assert_int_equal(chmod(tmpdir, 0500), 0);
        cf_err err;
        assert_int_equal(cf_offset_store_flush(s, &err), CF_ERR_IO);
        assert_non_null(strstr(err.message, "offsets file"));
        assert_int_equal(chmod(tmpdir, 0700), 0);
        assert_int_equal(stored_pos(path, "c1"), 7);
        assert_int_equal(cf_offset_store_flush(s, NULL), CF_OK); /* still dirty: written now */
        cf_offset_store_destroy(s);
        assert_int_equal(stored_pos(path, "c1"), 8);
    }
    /* a damaged file is a clear error */
    FILE *f = fopen(path, "w");
    fputs("{\"offsets\": [ {\"key\": [\"c1\"", f);
    fclose(f);
    cf_err err;
    assert_int_equal(cf_offset_store_open_file(path, &s, &err), CF_ERR_CORRUPT);
    assert_non_null(strstr(err.message, "damaged"));
    assert_true(err.hint[0] != 0);
    cf_value_destroy(p), cf_value_destroy(p_other), cf_value_destroy(o);
}

/* ---- a backend that records writes and fails syncs on demand ---- */
typedef struct fake_backend {
    size_t writes, syncs;
    int fail_syncs;              /* fail this many syncs */
    cf_offset_store *put_during; /* put into this store from inside sync (another task) */
    char last_key[256];
} fake_backend;

static cf_code fb_write(void *st, const char *key, const char *value, cf_err *err) {
    (void)value, (void)err;
    fake_backend *b = st;
    b->writes++;
    snprintf(b->last_key, sizeof b->last_key, "%s", key);
    return CF_OK;
}

static cf_code fb_sync(void *st, int timeout_ms, cf_err *err) {
    (void)timeout_ms;
    fake_backend *b = st;
    b->syncs++;
    if (b->put_during) { /* must not wait for this flush: the store's lock is not held */
        cf_value *p = cf_value_map(), *o = cf_value_map();
        cf_value_map_put(p, cf_value_string("src"), cf_value_string("late"));
        cf_value_map_put(o, cf_value_string("pos"), cf_value_int64(1));
        cf_offset_store_put(b->put_during, "c1", p, o);
        cf_value_destroy(p), cf_value_destroy(o);
        b->put_during = NULL;
    }
    if (b->fail_syncs > 0) {
        b->fail_syncs--;
        return cf_err_set(err, CF_ERR_TRANSPORT, "fake: not acknowledged");
    }
    return CF_OK;
}

static void fb_destroy(void *st) { (void)st; }

static const cf_offset_backend fake_backend_ops = {fb_write, fb_sync, fb_destroy};

static cf_value *part_n(int64_t i) {
    cf_value *p = cf_value_map();
    cf_value_map_put(p, cf_value_string("file"), cf_value_int64(i));
    return p;
}

/* Many partitions (a files source keeps one per object), a failed sync that
 * leaves its entries to be written again, and a put from another task while
 * a flush waits for the broker. */
static void test_offset_store_backend(void **state) {
    (void)state;
    fake_backend fb = {0};
    cf_offset_store *s = cf_offset_store_new_backend(&fake_backend_ops, &fb);
    cf_value *o = cf_value_map();
    cf_value_map_put(o, cf_value_string("pos"), cf_value_int64(0));
    for (int64_t i = 0; i < 5000; i++) {
        cf_value *p = part_n(i);
        cf_value_map_get_str(o, "pos")->u.i = i * 10;
        cf_offset_store_put(s, "c1", p, o);
        cf_value_destroy(p);
    }
    assert_int_equal(cf_offset_store_count(s), 5000);
    assert_int_equal(cf_offset_store_flush(s, NULL), CF_OK);
    assert_int_equal(fb.writes, 5000);
    for (int64_t i = 0; i < 5000; i += 499) {
        cf_value *p = part_n(i);
        cf_value *got = cf_offset_store_get(s, "c1", p);
        assert_non_null(got);
        assert_int_equal(cf_value_map_get_str(got, "pos")->u.i, i * 10);
        cf_value_destroy(got), cf_value_destroy(p);
    }
    /* unchanged values are not written again */
    cf_value *p7 = part_n(7);
    cf_value_map_get_str(o, "pos")->u.i = 70;
    cf_offset_store_put(s, "c1", p7, o);
    assert_int_equal(cf_offset_store_flush(s, NULL), CF_OK);
    assert_int_equal(fb.writes, 5000);
    /* a failed sync: the entry is written again by the next flush */
    cf_value_map_get_str(o, "pos")->u.i = 71;
    cf_offset_store_put(s, "c1", p7, o);
    fb.fail_syncs = 1;
    cf_err err;
    assert_int_equal(cf_offset_store_flush(s, &err), CF_ERR_TRANSPORT);
    assert_int_equal(fb.writes, 5001);
    assert_int_equal(cf_offset_store_flush(s, NULL), CF_OK);
    assert_int_equal(fb.writes, 5002);
    assert_non_null(strstr(fb.last_key, "{\"file\":7}"));
    /* a put while a flush waits in sync lands, and the next flush writes it */
    cf_value_map_get_str(o, "pos")->u.i = 72;
    cf_offset_store_put(s, "c1", p7, o);
    fb.put_during = s;
    assert_int_equal(cf_offset_store_flush(s, NULL), CF_OK);
    assert_int_equal(fb.writes, 5003);
    assert_int_equal(cf_offset_store_count(s), 5001);
    assert_int_equal(cf_offset_store_flush(s, NULL), CF_OK);
    assert_int_equal(fb.writes, 5004);
    assert_non_null(strstr(fb.last_key, "late"));
    assert_int_equal(cf_offset_store_flush(s, NULL), CF_OK); /* nothing dirty */
    assert_int_equal(fb.writes, 5004);
    cf_value_destroy(p7), cf_value_destroy(o);
    cf_offset_store_destroy(s);
}

static cf_props *worker_props(void) {
    return props_of("offset.storage.file.filename", tpath("offsets.json"), "offset.flush.interval.ms", "50", NULL);
}

/* direct mode: every record reaches the sink, in order; the offset is stored;
 * a second run resumes after it. */
static void test_direct_end_to_end_and_resume(void **state) {
    (void)state;
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", NULL));
    add_connector(w, props_of("name", "src", "connector.class", "org.example.TestSource", "test.count", "1000", NULL));
    cf_err err;
    assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
    cf_state cs, t0;
    assert_int_equal(cf_worker_connector_state(w, "src", &cs, &t0, NULL), CF_OK);
    assert_int_equal(t0, CF_STATE_FINISHED);
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 1000);
    for (size_t i = 0; i < 1000; i++) {
        char exp[32];
        snprintf(exp, sizeof exp, "v%zu", i);
        assert_string_equal(seen.durable[i], exp);
    }
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), 999);

    /* run again: the source starts after the stored offset: nothing new */
    seen_reset();
    w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", NULL));
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "1010", NULL));
    assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 10);
    assert_string_equal(seen.durable[0], "v1000");
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), 1009);
}

/* direct mode: while the sink cannot flush, no source offset is stored */
static void test_offsets_only_after_sink_flush(void **state) {
    (void)state;
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", "test.gate", "true", NULL));
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "500", NULL));
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    usleep(400 * 1000); /* 8 flush intervals */
    /* the sink got records (put) but could not flush: nothing stored */
    pthread_mutex_lock(&seen.mu);
    size_t put = seen.npending, durable = seen.ndurable;
    pthread_mutex_unlock(&seen.mu);
    assert_true(put > 0);
    assert_int_equal(durable, 0);
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), -1);
    pthread_mutex_lock(&seen.mu);
    seen.gate_open = true;
    pthread_cond_broadcast(&seen.cv);
    pthread_mutex_unlock(&seen.mu);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 500);
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), 499);
}

/* a failing flush: the offset stays unstored and the run reports the failure */
static void test_flush_failure_keeps_offsets(void **state) {
    (void)state;
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", "test.flush.fail", "true", NULL));
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "300", NULL));
    cf_err err;
    cf_code rc = cf_worker_run(w, true, &err);
    assert_int_not_equal(rc, CF_OK);
    assert_non_null(strstr(err.message, "flush failed") ? err.message : strstr(err.message, "not delivered"));
    char *st = cf_worker_connector_status_json(w, "snk");
    assert_non_null(strstr(st, "\"FAILED\""));
    assert_non_null(strstr(st, "\"trace\""));
    free(st);
    cf_worker_destroy(w);
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), -1);
}

/* errors.tolerance=none: a bad record fails the task */
static void test_tolerance_none_fails(void **state) {
    (void)state;
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", "test.bad.value", "v5", NULL));
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "20", NULL));
    cf_err err;
    assert_int_equal(cf_worker_run(w, true, &err), CF_ERR_TARGET);
    assert_non_null(strstr(err.message, "refuses value \"v5\""));
    assert_non_null(strstr(err.where, "stage TASK_PUT"));
    assert_int_equal(cf_worker_error_count(w), 0);
    cf_worker_destroy(w);
    /* the batch with the bad record was never flushed: offset not past it */
    int64_t pos = stored_pos(tpath("offsets.json"), "src");
    assert_true(pos < 5);
}

/* errors.tolerance=all: skipped, logged, counted; the rest goes through */
static void test_tolerance_all_skips(void **state) {
    (void)state;
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", "test.bad.value", "v5",
                              "errors.tolerance", "all", "errors.log.enable", "true", "errors.log.include.messages", "true",
                              NULL));
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "20", "test.bad.at", "7",
                              "errors.tolerance", "all", NULL));
    cf_err err;
    assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
    assert_int_equal(cf_worker_error_count(w), 2); /* v5 in the sink, position 7 in the source */
    cf_buf m = CF_BUF_INIT;
    cf_worker_metrics_text(w, &m);
    assert_non_null(strstr(m.data, "cdcflow_task_errors_total{connector=\"snk\",task=\"0\",type=\"sink\"} 1\n"));
    assert_non_null(strstr(m.data, "cdcflow_task_records_skipped_total{connector=\"src\",task=\"0\",type=\"source\"} 1\n"));
    cf_buf_free(&m);
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 18);
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), 19);
}

/* Connect's DLQ context header names (DeadLetterQueueReporter). */
static void test_dlq_headers(void **state) {
    (void)state;
    cf_msg *m = cf_msg_new();
    cf_err problem;
    cf_err_set(&problem, CF_ERR_SCHEMA, "Converting byte[] to Kafka Connect data failed");
    cf_err_detail(&problem, "unexpected character at byte 0");
    cf_dlq_add_headers(m, "orders", 3, 42, "pg-sink", 1, CF_STAGE_VALUE_CONVERTER,
                       "org.apache.kafka.connect.json.JsonConverter", &problem);
    static const char *const expect[][2] = {
        {"__connect.errors.topic", "orders"},
        {"__connect.errors.partition", "3"},
        {"__connect.errors.offset", "42"},
        {"__connect.errors.connector.name", "pg-sink"},
        {"__connect.errors.task.id", "1"},
        {"__connect.errors.stage", "VALUE_CONVERTER"},
        {"__connect.errors.class.name", "org.apache.kafka.connect.json.JsonConverter"},
        /* what Connect's JsonConverter throws for bad bytes */
        {"__connect.errors.exception.class.name", "org.apache.kafka.connect.errors.DataException"},
        {"__connect.errors.exception.message",
         "Converting byte[] to Kafka Connect data failed: unexpected character at byte 0"},
    };
    assert_int_equal(m->n_headers, 11);
    for (size_t i = 0; i < sizeof expect / sizeof *expect; i++) {
        assert_string_equal(m->headers[i].key, expect[i][0]);
        assert_string_equal(m->headers[i].value, expect[i][1]);
    }
    assert_string_equal(m->headers[9].key, "__connect.errors.exception.stacktrace");
    assert_non_null(strstr(m->headers[9].value, "ERROR:"));
    assert_non_null(strstr(m->headers[9].value, "DETAIL:"));
    assert_string_equal(m->headers[10].key, "__cdcflow.errors.code");
    assert_string_equal(m->headers[10].value, "CF_ERR_SCHEMA");
    /* Connect's stage names */
    assert_string_equal(cf_stage_name(CF_STAGE_KEY_CONVERTER), "KEY_CONVERTER");
    assert_string_equal(cf_stage_name(CF_STAGE_TRANSFORMATION), "TRANSFORMATION");
    assert_string_equal(cf_stage_name(CF_STAGE_TASK_PUT), "TASK_PUT");
    assert_string_equal(cf_stage_name(CF_STAGE_KAFKA_PRODUCE), "KAFKA_PRODUCE");
    cf_msg_destroy(m);
}

/* --output then --input: a configuration tried offline, through converters */
static void test_record_files_round_trip(void **state) {
    (void)state;
    const char *file = tpath("recs.jsonl");
    cf_worker *w = new_worker(props_of("offset.storage.file.filename", tpath("offsets.json"), "value.converter",
                                       "string", "key.converter", "string", NULL),
                              NULL, file);
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "50", "test.topic", "orders",
                              NULL));
    cf_err err;
    assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
    cf_worker_destroy(w);
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), 49);
    char *text = slurp(file);
    assert_non_null(text);
    /* kcat -J envelope */
    assert_non_null(strstr(text, "\"topic\":\"orders\""));
    assert_non_null(strstr(text, "\"key\":\"k0\",\"payload\":\"v0\""));
    free(text);

    /* the sink reads it back, and a damaged line follows errors.tolerance */
    FILE *f = fopen(file, "a");
    fputs("{\"topic\":\"orders\",\"partition\":0,\"offset\": this is not json\n", f);
    fclose(f);
    w = new_worker(props_of("offset.storage.file.filename", tpath("offsets.json"), "value.converter", "string",
                            "key.converter", "string", NULL),
                   file, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "orders", "errors.tolerance", "all",
                              NULL));
    assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
    assert_int_equal(cf_worker_error_count(w), 1);
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 50);
    assert_string_equal(seen.durable[49], "v49");

    seen_reset();
    w = new_worker(props_of("offset.storage.file.filename", tpath("offsets.json"), "value.converter", "string",
                            "key.converter", "string", NULL),
                   file, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "orders", NULL));
    assert_int_equal(cf_worker_run(w, true, &err), CF_ERR_CORRUPT);
    assert_non_null(strstr(err.where, "KAFKA_CONSUME"));
    cf_worker_destroy(w);
}

/* Source "src" of the test plugin with test.count=1000, test.partitions=12
 * stored, in offsets_file, the last position of each of its 12 partitions. */
static void check_12_partitions(const char *offsets_file) {
    cf_offset_store *s = NULL;
    assert_int_equal(cf_offset_store_open_file(offsets_file, &s, NULL), CF_OK);
    for (int64_t p = 0; p < 12; p++) {
        cf_value *part = src_partition();
        cf_value_map_put(part, cf_value_string("p"), cf_value_int64(p));
        cf_value *off = cf_offset_store_get(s, "src", part);
        assert_non_null(off);
        int64_t last = 999 - ((999 - p) % 12); /* the last i < 1000 with i % 12 == p */
        assert_int_equal(cf_value_map_get_str(off, "pos")->u.i, last);
        cf_value_destroy(off);
        cf_value_destroy(part);
    }
    cf_offset_store_destroy(s);
}
/* Offsets are tracked per poll batch (at most 37 records from the test
 * source): with records spread round robin over 12 source partitions, more
 * than a batch looks back for and more than the store puts at once, every
 * partition must end at the offset of its own last record. */
static void test_offsets_many_partitions(void **state) {
    (void)state;
    cf_worker *w = new_worker(props_of("offset.storage.file.filename", tpath("offsets.json"), "value.converter",
                                       "string", "key.converter", "string", NULL),
                              NULL, tpath("recs.jsonl"));
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "1000",
                              "test.partitions", "12", NULL));
    cf_err err;
    assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
    cf_worker_destroy(w);
    check_12_partitions(tpath("offsets.json"));
}

/* A source whose records share their source partition and offset key
 * (cf_value_ref): the same offsets as with a copy per record, whether the
 * worker moves them from the record (record file), copies them (through a
 * transform) or the sink gets a clone of the record (direct); ASan sees
 * every shared value freed exactly once. */
static cf_code retopic_create(const cf_props *cfg, void **chain, cf_err *err) {
    (void)err;
    *chain = cf_props_get(cfg, "transforms") ? (void *)"u1" : NULL;
    return CF_OK;
}

/* A chain that keeps nothing of the record it takes: a new record with a new
 * topic, the rest copied. */
static cf_code retopic_apply(void *chain, cf_record *rec, cf_record **out, cf_err *err) {
    (void)err;
    *out = cf_record_clone(rec);
    cf_record_set_topic(*out, chain);
    cf_record_destroy(rec);
    return CF_OK;
}

static void retopic_destroy(void *chain) { (void)chain; }

static void test_shared_source_values(void **state) {
    (void)state;
    static const cf_worker_transforms retopic = {retopic_create, retopic_apply, retopic_destroy};
    for (int mode = 0; mode < 3; mode++) {
        seen_reset();
        unlink(tpath("offsets.json"));
        unlink(tpath("recs.jsonl")); /* --output appends to a file of an earlier run */
        cf_props *wp = mode == 2 ? worker_props()
                                 : props_of("offset.storage.file.filename", tpath("offsets.json"), "value.converter",
                                            "string", "key.converter", "string", NULL);
        cf_worker_opts o = {.plugins = test_plugins, .output_file = mode == 2 ? NULL : tpath("recs.jsonl"),
                            .transforms = &retopic};
        cf_worker *w = NULL;
        cf_err err;
        assert_cf_ok(cf_worker_new(wp, &o, &w, &err), &err);
        assert_cf_ok(cf_worker_start(w, &err), &err);
        cf_props_destroy(wp);
        if (mode == 2) add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", NULL));
        if (mode == 1)
            add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "1000",
                                      "test.partitions", "12", "test.shared", "true", "transforms", "r",
                                      "transforms.r.type", "retopic", NULL));
        else
            add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "1000",
                                      "test.partitions", mode == 2 ? "1" : "12", "test.shared", "true", NULL));
        assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
        cf_worker_destroy(w);
        if (mode == 1) {
            char *recs = slurp(tpath("recs.jsonl"));
            assert_non_null(strstr(recs, "\"topic\":\"u1\""));
            assert_null(strstr(recs, "\"topic\":\"t1\""));
            free(recs);
        }
        if (mode == 2) {
            assert_int_equal(seen.ndurable, 1000);
            assert_string_equal(seen.durable[999], "v999");
            assert_int_equal(stored_pos(tpath("offsets.json"), "src"), 999);
            continue;
        }
        check_12_partitions(tpath("offsets.json"));
    }
}

/* A direct-mode worker running on r's thread: an endless test source
 * feeding the test sink "snk" through topic t1. */
static cf_worker *run_endless_direct(runner *r) {
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", NULL));
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.endless", "true", NULL));
    *r = (runner){.w = w};
    pthread_create(&r->th, NULL, run_thread, r);
    return w;
}

/* stop (SIGINT) while a source runs forever: exit cleanly, offsets stored */
static void test_stop_flushes_and_commits(void **state) {
    (void)state;
    runner r;
    cf_worker *w = run_endless_direct(&r);
    usleep(200 * 1000);
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    cf_worker_destroy(w);
    assert_true(seen.ndurable > 0);
    assert_int_equal(seen.npending, 0); /* everything put was flushed */
    /* stored offset == last durable record */
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), (int64_t)seen.ndurable - 1);
}

/* direct mode: a sink reconfigured (its tasks stopped and new ones started)
 * while a source feeds it. The source waits for the new tasks instead of
 * failing ("sink ... is not running": a race that the REST test hit under
 * ASan), and every record up to the last one stored reaches the sink. */
static void test_direct_sink_reconfigured_while_fed(void **state) {
    (void)state;
    runner r;
    cf_worker *w = run_endless_direct(&r);
    /* the source task must have started before "never failed" can be
     * checked as RUNNING: under load its thread may start after the first
     * update (seen in CI: UNASSIGNED at the first check) */
    cf_state cs0 = CF_STATE_UNASSIGNED, st0 = CF_STATE_UNASSIGNED;
    for (int i = 0; i < 10000 && st0 != CF_STATE_RUNNING; i++) {
        assert_int_equal(cf_worker_connector_state(w, "src", &cs0, &st0, NULL), CF_OK);
        if (st0 != CF_STATE_RUNNING) usleep(1000);
    }
    assert_int_equal(st0, CF_STATE_RUNNING);
    for (int i = 0; i < 100; i++) {
        cf_props *p = props_of("connector.class", "test-sink", "topics", "t1", NULL);
        cf_err err;
        assert_cf_ok(cf_worker_update_connector(w, "snk", p, &err), &err);
        cf_props_destroy(p);
        usleep(2000);
        cf_state cs, t0;
        assert_int_equal(cf_worker_connector_state(w, "src", &cs, &t0, NULL), CF_OK);
        assert_int_equal(t0, CF_STATE_RUNNING); /* never failed */
    }
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_cf_ok(r.rc, &r.err);
    cf_worker_destroy(w);
    /* at least once: a record put to a stopped sink but not flushed comes again */
    int64_t last = stored_pos(tpath("offsets.json"), "src");
    assert_true(last > 0);
    bool *have = calloc((size_t)last + 1, sizeof *have);
    for (size_t i = 0; i < seen.ndurable; i++) {
        long v = atol(seen.durable[i] + 1);
        if (v <= last) have[v] = true;
    }
    for (int64_t v = 0; v <= last; v++) assert_true(have[v]);
    free(have);
}

/* direct mode: the sink is paused while a source feeds it, then the worker
 * stops. The source's records queued at the paused sink are given back (not
 * delivered: their offsets are not stored, the next run reads them again)
 * and what the sink had put before the pause is flushed on its interval, as
 * a paused Connect sink task still commits: the stop ends (it waited forever
 * for the paused sink before) and every record up to the stored offset
 * reached the sink. The stop must end within 20 s (else the test fails). */
static void test_direct_stop_with_paused_sink(void **state) {
    (void)state;
    runner r;
    cf_worker *w = run_endless_direct(&r);
    usleep(200 * 1000);
    assert_int_equal(cf_worker_pause_connector(w, "snk", NULL), CF_OK);
    usleep(300 * 1000); /* the source fills the paused sink's queue */
    cf_worker_stop(w);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    if (pthread_timedjoin_np(r.th, NULL, &ts) != 0)
        fail_msg("the worker did not stop within 20 s while a sink was paused");
    assert_cf_ok(r.rc, &r.err);
    cf_worker_destroy(w);
    int64_t last = stored_pos(tpath("offsets.json"), "src");
    bool *have = calloc((size_t)(last + 2), sizeof *have);
    for (size_t i = 0; i < seen.ndurable; i++) {
        long v = atol(seen.durable[i] + 1);
        if (v <= last) have[v] = true;
    }
    for (int64_t v = 0; v <= last; v++)
        if (!have[v]) fail_msg("record v%lld is before the stored offset %lld but never reached the sink", (long long)v, (long long)last);
    free(have);
}

/* configuration errors are clear and name the problem */
/* ---------------- the source hooks: commit() and the plugin's metrics ---------------- */

/* "hook-source": test-source plus an on-commit callback and its own metrics family. */
static struct {
    pthread_mutex_t mu;
    int64_t acked;    /* highest pos given to commit_record */
    int64_t durable;  /* acked as of the last commit() */
    int commits;
    bool bad_commit;  /* a commit() while the offsets file held less than acked */
    _Atomic int metric_calls;
} hooks = {PTHREAD_MUTEX_INITIALIZER, -1, -1, 0, false, 0};

static bool hook_metrics(void *arg, int family, const char *labels, bool with_help, cf_buf *out) {
    (void)arg;
    if (family > 0) return false;
    hooks.metric_calls++;
    if (with_help) cf_buf_append_str(out, "# HELP test_hook_metric a plugin's own metric\n# TYPE test_hook_metric gauge\n");
    cf_buf_printf(out, "test_hook_metric{%s} 42\n", labels);
    return true;
}

static void hook_commit(void *arg);

static cf_code hook_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    cf_code rc = src_start(cfg, ctx, task, err);
    if (!rc) {
        cf_source_ctx_set_metrics(ctx, hook_metrics, *task);
        cf_source_ctx_on_commit(ctx, hook_commit, *task);
    }
    return rc;
}

static void hook_commit_record(void *task, const cf_record *rec) {
    (void)task;
    const cf_value *pos = cf_value_map_get_str(rec->source_offset, "pos");
    pthread_mutex_lock(&hooks.mu);
    if (pos && pos->u.i > hooks.acked) hooks.acked = pos->u.i;
    pthread_mutex_unlock(&hooks.mu);
}

static void hook_commit(void *arg) {
    (void)arg;
    pthread_mutex_lock(&hooks.mu);
    if (stored_pos(tpath("offsets.json"), "src") < hooks.acked) hooks.bad_commit = true;
    hooks.durable = hooks.acked;
    hooks.commits++;
    pthread_mutex_unlock(&hooks.mu);
}

static const cf_connector_plugin hook_source = {
    "hook-source", NULL, CF_CONNECTOR_SOURCE, "test source with hooks", "1.0", &src_table,
    {.source = {.start = hook_start, .poll = src_poll, .commit_record = hook_commit_record, .stop = src_stop}},
};

/* the on-commit callback comes after the offsets are in the file, and never before a
 * record given to commit_record is stored; the plugin's metrics appear in
 * the worker's Prometheus text while the task runs, and not after. */
static void test_source_hooks(void **state) {
    (void)state;
    const cf_connector_plugin *plugins[] = {&hook_source, &test_sink, NULL};
    cf_worker_opts o = {.plugins = plugins};
    cf_worker *w = NULL;
    cf_err err;
    cf_props *wp = worker_props();
    assert_cf_ok(cf_worker_new(wp, &o, &w, &err), &err);
    cf_props_destroy(wp);
    assert_cf_ok(cf_worker_start(w, &err), &err);
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", NULL));
    add_connector(w, props_of("name", "src", "connector.class", "hook-source", "test.endless", "true",
                              "test.poll.delay.ms", "2", NULL));
    runner r = {.w = w};
    pthread_create(&r.th, NULL, run_thread, &r);
    cf_buf m = CF_BUF_INIT;
    for (int i = 0; i < 200 && !strstr(m.data ? m.data : "", "test_hook_metric{"); i++) {
        usleep(10 * 1000);
        cf_buf_reset(&m);
        cf_worker_metrics_text(w, &m);
    }
    assert_non_null(strstr(m.data, "# TYPE test_hook_metric gauge\ntest_hook_metric{connector=\"src\",task=\"0\"} 42\n"));
    usleep(300 * 1000); /* a few offset flushes (every 50 ms) */
    cf_worker_stop(w);
    pthread_join(r.th, NULL);
    assert_int_equal(r.rc, CF_OK);
    cf_buf_reset(&m);
    cf_worker_metrics_text(w, &m);
    assert_null(strstr(m.data, "test_hook_metric"));
    cf_worker_destroy(w);
    cf_buf_free(&m);
    assert_true(hooks.commits >= 2);
    assert_false(hooks.bad_commit);
    assert_true(hooks.durable >= 0);
    assert_int_equal(hooks.durable, hooks.acked); /* the last callback is at stop, after the last store */
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), hooks.acked);
}

static void test_config_errors(void **state) {
    (void)state;
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    cf_err err;
    cf_props *p = props_of("name", "x", "connector.class", "no-such-thing", NULL);
    assert_int_equal(cf_worker_add_connector(w, NULL, p, &err), CF_ERR_NOT_FOUND);
    assert_non_null(strstr(err.detail, "test-source"));
    cf_props_destroy(p);
    p = props_of("name", "x", "connector.class", "test-source", "test.count", "many", NULL);
    assert_int_equal(cf_worker_add_connector(w, NULL, p, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail, "test.count"));
    cf_props_destroy(p);
    p = props_of("name", "x", "connector.class", "test-sink", NULL); /* neither topics nor topics.regex */
    assert_int_equal(cf_worker_add_connector(w, NULL, p, &err), CF_ERR_CONFIG);
    cf_props_destroy(p);
    p = props_of("name", "x", "connector.class", "test-sink", "topics", "a", "errors.tolerance", "all",
                 "errors.deadletterqueue.topic.name", "dlq", NULL);
    assert_int_equal(cf_worker_add_connector(w, NULL, p, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.hint, "bootstrap.servers"));
    cf_props_destroy(p);
    p = props_of("name", "x", "connector.class", "test-source", NULL);
    assert_int_equal(cf_worker_add_connector(w, NULL, p, &err), CF_OK);
    assert_int_equal(cf_worker_add_connector(w, NULL, p, &err), CF_ERR_STATE);
    assert_non_null(strstr(err.message, "already exists"));
    cf_props_destroy(p);
    cf_worker_stop(w);
    cf_worker_run(w, false, NULL);
    cf_worker_destroy(w);

    cf_worker_opts o = {.plugins = test_plugins};
    cf_props *wp = props_of("transport", "carrier-pigeon", NULL);
    assert_int_equal(cf_worker_new(wp, &o, &w, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.detail, "transport"));
    cf_props_destroy(wp);
    wp = props_of("transport", "kafka", NULL);
    assert_int_equal(cf_worker_new(wp, &o, &w, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "bootstrap.servers"));
    cf_props_destroy(wp);
}

/* several tasks per sink in direct mode, several sinks per topic */
static void test_direct_fan_out(void **state) {
    (void)state;
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "snk1", "connector.class", "test-sink", "topics", "t1", "tasks.max", "3", NULL));
    add_connector(w, props_of("name", "snk2", "connector.class", "test-sink", "topics.regex", "t[0-9]+", NULL));
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.count", "400", NULL));
    cf_err err;
    assert_int_equal(cf_worker_run(w, true, &err), CF_OK);
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 800);
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), 399);
}

/* direct mode: a topic no sink reads is an error, never a silent drop */
static void test_direct_topic_without_sink(void **state) {
    (void)state;
    cf_worker *w = new_worker(worker_props(), NULL, NULL);
    add_connector(w, props_of("name", "src", "connector.class", "test-source", "test.topic", "lonely", NULL));
    add_connector(w, props_of("name", "snk", "connector.class", "test-sink", "topics", "t1", NULL));
    cf_err err;
    assert_int_equal(cf_worker_run(w, true, &err), CF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "no sink connector subscribes to topic \"lonely\""));
    cf_worker_destroy(w);
    assert_int_equal(seen.ndurable, 0);
    assert_int_equal(stored_pos(tpath("offsets.json"), "src"), -1);
}

int main(void) {
    cf_log_setup(getenv("CF_TEST_VERBOSE") ? CF_LOG_DEBUG : CF_LOG_WARN, CF_LOG_TEXT, stderr);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_offset_format_is_connects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_file_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_end_to_end_and_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offsets_only_after_sink_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_failure_keeps_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tolerance_none_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tolerance_all_skips, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dlq_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_files_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_flushes_and_commits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_fan_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_sink_reconfigured_while_fed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offsets_many_partitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_source_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_store_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_topic_without_sink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_stop_with_paused_sink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_hooks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
