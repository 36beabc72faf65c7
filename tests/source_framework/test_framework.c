/*
 * test_framework.c - the source framework as a new source sees it: a source
 * whose objects are not byte streams (open_records), the evolving-record
 * pipeline (steps, last evolution), errors.tolerance for a bad record, done
 * marks in the offsets, and a restart that reads nothing again. Runs the
 * real worker (direct mode, --output record file).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cdcflow/recordfile.h"
#include "cdcflow/source.h"
#include "cdcflow/worker.h"

/* ---- a source of in-memory objects: "a" has 5 records, "b" has 3 of which
 * the second is bad ---- */

typedef struct mem_cursor {
    const char *obj;
    int n, idx;
} mem_cursor;

static const char *mem_etag = "v1"; /* version tag of object "a" */
static _Atomic int list_calls;         /* listings by the poller thread */

static cf_code mem_list(void *self, const char *after, size_t max, cf_native_info **items, size_t *n, cf_err *err) {
    (void)self, (void)err;
    list_calls++;
    static const char *keys[] = {"a", "b"};
    *items = calloc(2, sizeof(cf_native_info));
    *n = 0;
    for (int i = 0; i < 2 && *n < max; i++) {
        if (after && strcmp(keys[i], after) <= 0) continue;
        (*items)[*n].key = strdup(keys[i]);
        (*items)[*n].size = 100;
        (*items)[*n].mtime_ms = 1000;
        if (i == 0) (*items)[*n].etag = strdup(mem_etag);
        (*n)++;
    }
    return CF_OK;
}

static cf_code mem_open(void *self, const cf_native_info *info, cf_compression c, cf_reader **out, cf_err *err) {
    (void)self, (void)info, (void)c, (void)out;
    return cf_err_set(err, CF_ERR_INTERNAL, "open must not be called when open_records exists");
}

static _Atomic int bad_pmap; /* 1: object "b" has a float in its offset key, "a" an int and a long */

static cf_value *mem_pmap(void *self, const char *key) {
    (void)self;
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("object"), cf_value_string(key));
    if (bad_pmap && strcmp(key, "b") == 0) cf_value_map_put(m, cf_value_string("weight"), cf_value_float64(0.5));
    if (bad_pmap && strcmp(key, "a") == 0) { /* ints and longs are allowed */
        cf_value_map_put(m, cf_value_string("n"), cf_value_int32(1));
        cf_value_map_put(m, cf_value_string("l"), cf_value_int64(1LL << 40));
    }
    return m;
}

static cf_code mem_next(void *state, cf_schema **ks, cf_value **k, cf_schema **vs, cf_value **v, cf_extract_pos *pos,
                        cf_err *err) {
    mem_cursor *c = state;
    if (c->idx >= c->n) return CF_ERR_EOF;
    int i = c->idx++;
    pos->index = (uint64_t)i;
    pos->end = (uint64_t)(i + 1) * 10;
    if (strcmp(c->obj, "b") == 0 && i == 1) return cf_err_set(err, CF_ERR_INVALID, "record b/1 is bad");
    char key[16];
    snprintf(key, sizeof key, "%s-%d", c->obj, i);
    *ks = cf_schema_primitive(CF_STRING, false);
    *k = cf_value_string(key);
    *vs = cf_schema_primitive(CF_INT64, false);
    *v = cf_value_int64(i);
    return CF_OK;
}

static void mem_close(void *state) { free(state); }

static const cf_native_records_ops mem_rops = {mem_next, mem_close};

static int opened_from[2] = {-1, -1};

static cf_code mem_open_records(void *self, const cf_native_info *info, const cf_offset_entry *resume, void **state,
                                const cf_native_records_ops **rops, cf_err *err) {
    (void)self, (void)err;
    mem_cursor *c = calloc(1, sizeof *c);
    c->obj = strcmp(info->key, "a") == 0 ? "a" : "b";
    c->n = c->obj[0] == 'a' ? 5 : 3;
    c->idx = (int)resume->record_count;
    opened_from[c->obj[0] - 'a'] = c->idx;
    *state = c;
    *rops = &mem_rops;
    return CF_OK;
}

static cf_code mem_last(void *self, const cf_native_info *info, cf_record *rec, bool *keep, cf_err *err) {
    (void)self, (void)keep, (void)err;
    cf_record_add_header(rec, "object", cf_schema_primitive(CF_STRING, true), cf_value_string(info->key));
    return CF_OK;
}

static void mem_destroy(void *self) { (void)self; }

static const cf_native_ops mem_ops = {
    .kind = "mem",
    .list = mem_list,
    .open = mem_open,
    .partition_map = mem_pmap,
    .destroy = mem_destroy,
    .open_records = mem_open_records,
    .last_evolution = mem_last,
};

/* step: drop odd values */
static cf_code drop_odd(void *ctx, const cf_native_info *info, cf_record *rec, bool *keep, cf_err *err) {
    (void)ctx, (void)info, (void)err;
    if (rec->value && rec->value->u.i % 2) *keep = false;
    return CF_OK;
}

static cf_code mem_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    cf_source_task *t;
    cf_code rc = cf_source_task_new(cfg, ctx, NULL, &mem_ops, &t, err);
    if (rc) return rc;
    cf_source_task_add_step(t, drop_odd, NULL);
    *task = t;
    return CF_OK;
}

/* poll as the worker calls it, counting what it returns */
static _Atomic int polls, polls_empty, poll_most;
static _Atomic int seen_changed, seen_skipped; /* the task's counters at its last poll */
static cf_code mem_poll(void *task, cf_record **out, size_t max, size_t *n, cf_err *err) {
    cf_code rc = cf_source_task_poll(task, out, max, n, err);
    cf_source_stats st;
    cf_source_task_stats(task, &st);
    seen_changed = (int)st.objects_changed;
    seen_skipped = (int)st.skipped_done;
    polls++;
    if (*n == 0) polls_empty++;
    if ((int)*n > poll_most) poll_most = (int)*n;
    return rc;
}

static const cf_cfg_def mem_defs[] = {CF_SOURCE_FRAMEWORK_DEFS{NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL}};
static const cf_cfg_table mem_table = {"mem source", "mem", "test", mem_defs, NULL};
static const cf_connector_plugin mem_plugin = {
    .name = "mem",
    .kind = CF_CONNECTOR_SOURCE,
    .description = "test source",
    .version = "0",
    .config = &mem_table,
    .u.source = {.start = mem_start, .poll = mem_poll, .stop = cf_source_task_stop},
};
static const cf_connector_plugin *const test_plugins[] = {&mem_plugin, NULL};

typedef struct run_arg {
    cf_worker *w;
} run_arg;

static void *runner(void *p) {
    run_arg *a = p;
    cf_worker_run(a->w, false, NULL);
    return NULL;
}

static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

/* Run the connector until `want` records are written (or max_ms), let it
 * idle idle_ms, then stop. extra: NULL or "key", "value", ..., NULL. */
static void run_with(const char *dir, const char *out, int want, int max_ms, int idle_ms, const char *const *extra) {
    char offs[512];
    snprintf(offs, sizeof offs, "%s/offsets.json", dir);
    cf_props *wp = cf_props_new();
    cf_props_set(wp, "offset.storage.file.filename", offs);
    cf_worker_opts opts = {.plugins = test_plugins, .output_file = out};
    cf_worker *w;
    cf_err err;
    assert_int_equal(cf_worker_new(wp, &opts, &w, &err), CF_OK);
    assert_int_equal(cf_worker_start(w, &err), CF_OK);
    cf_props *c = cf_props_new();
    cf_props_set(c, "connector.class", "mem");
    cf_props_set(c, "topic", "t");
    cf_props_set(c, "errors.tolerance", "all");
    cf_props_set(c, "key.converter", "string");
    cf_props_set(c, "value.converter", "json");
    cf_props_set(c, "value.converter.schemas.enable", "false");
    cf_props_set(c, "poll.backoff.initial.ms", "10");
    for (; extra && extra[0]; extra += 2) cf_props_set(c, extra[0], extra[1]);
    cf_code rc = cf_worker_add_connector(w, "memsrc", c, &err);
    if (rc) fprintf(stderr, "%s: %s\n", err.message, err.detail);
    assert_int_equal(rc, CF_OK);
    run_arg a = {w};
    pthread_t th;
    pthread_create(&th, NULL, runner, &a);
    for (int i = 0; i < max_ms / 10 && count_lines(out) < want; i++) usleep(10000);
    usleep((useconds_t)idle_ms * 1000); /* anything more that would come */
    cf_worker_stop(w);
    pthread_join(th, NULL);
    cf_worker_destroy(w);
    cf_props_destroy(c);
    cf_props_destroy(wp);
}

static void run_once(const char *dir, const char *out, int want, int max_ms) {
    run_with(dir, out, want, max_ms, 300, NULL);
}

static void test_pipeline_offsets_restart(void **state) {
    (void)state;
    char dir[] = "/tmp/cf_fw_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out1[600], out2[600];
    snprintf(out1, sizeof out1, "%s/out1.jsonl", dir);
    snprintf(out2, sizeof out2, "%s/out2.jsonl", dir);
    run_once(dir, out1, 5, 5000);
    /* a-0 a-2 a-4 (odd ones filtered), b-0, b-2 (b-1 bad: tolerated) */
    const char *want[] = {"a-0", "a-2", "a-4", "b-0", "b-2"};
    cf_recordfile_reader *r;
    assert_int_equal(cf_recordfile_reader_open(out1, &r, NULL), CF_OK);
    cf_msg *m = cf_msg_new();
    for (int i = 0; i < 5; i++) {
        assert_int_equal(cf_recordfile_read(r, m, NULL), CF_OK);
        assert_int_equal(m->key_len, 3);
        assert_memory_equal(m->key, want[i], 3);
        const cf_msg_header *h = cf_msg_header_last(m, "object");
        assert_non_null(h);
        assert_int_equal(h->value[0], want[i][0]);
    }
    assert_int_equal(cf_recordfile_read(r, m, NULL), CF_ERR_EOF);
    cf_recordfile_reader_close(r);
    /* offsets: both objects done, recordCount = all records */
    char offs[600], buf[4096] = {0};
    snprintf(offs, sizeof offs, "%s/offsets.json", dir);
    FILE *f = fopen(offs, "r");
    assert_non_null(f);
    assert_true(fread(buf, 1, sizeof buf - 1, f) > 0);
    fclose(f);
    assert_non_null(strstr(buf, "{\"object\":\"a\"}],\"value\":{\"recordCount\":5"));
    assert_non_null(strstr(buf, "{\"object\":\"b\"}],\"value\":{\"recordCount\":3"));
    assert_non_null(strstr(buf, "\"done\":true"));
    assert_non_null(strstr(buf, "\"etag\":\"v1\""));
    /* restart: nothing is read again */
    opened_from[0] = opened_from[1] = -1;
    run_once(dir, out2, 1, 700);
    assert_int_equal(count_lines(out2), 0);
    assert_true(seen_skipped >= 2); /* both found done (every listing counts them) */
    assert_int_equal(seen_changed, 0);
    assert_int_equal(opened_from[0], -1);
    assert_int_equal(opened_from[1], -1);
    /* a new version of "a" (same size and time, another ETag) is read again
     * from the start; "b" is still done */
    char out3[600];
    snprintf(out3, sizeof out3, "%s/out3.jsonl", dir);
    mem_etag = "v2";
    run_once(dir, out3, 3, 5000);
    assert_int_equal(count_lines(out3), 3);
    assert_int_equal(seen_changed, 1); /* counted once, though listed again and again */
    assert_int_equal(opened_from[0], 0);
    assert_int_equal(opened_from[1], -1);
    cf_msg_destroy(m);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* max.poll.records bounds every poll; an idle task does not spin: the
 * poller's listings back off (10 ms doubling to 100 ms, jitter 0.2), so
 * 1.5 s with nothing new is a few dozen listings, not thousands. */
static void test_poll_limit_and_idle_backoff(void **state) {
    (void)state;
    char dir[] = "/tmp/cf_fw_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out[600];
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    polls = polls_empty = poll_most = 0;
    list_calls = 0;
    static const char *const extra[] = {"max.poll.records", "2", "poll.backoff.max.ms", "100", NULL};
    run_with(dir, out, 5, 5000, 1500, extra);
    assert_int_equal(count_lines(out), 5);
    fprintf(stderr, "polls %d (%d empty), most records in one poll %d, listings %d\n", (int)polls, (int)polls_empty,
            (int)poll_most, (int)list_calls);
    assert_true(poll_most >= 1 && poll_most <= 2);
    /* about 1.5 s / 100 ms = 15 listings once the backoff is at its maximum */
    assert_true(list_calls >= 3);
    assert_true(list_calls <= 60);
    /* the worker waits between empty polls too */
    assert_true(polls_empty <= 1000);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* An offset key must map strings to string, int or long values: an object
 * whose key holds a float is not read (the error is a reported bad record,
 * tolerated here), the others are. */
static void test_offset_key_types(void **state) {
    (void)state;
    char dir[] = "/tmp/cf_fw_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out[600];
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    opened_from[0] = opened_from[1] = -1;
    bad_pmap = 1;
    run_with(dir, out, 3, 5000, 500, NULL);
    bad_pmap = 0;
    assert_int_equal(count_lines(out), 3); /* a-0 a-2 a-4 */
    assert_int_equal(opened_from[0], 0);
    assert_int_equal(opened_from[1], -1); /* never opened */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* file.name.template: whole-name matching, placeholders, user groups. */
static void test_template(void **state) {
    (void)state;
    cf_name_template *t;
    cf_name_match m;
    assert_int_equal(cf_name_template_new("{{topic}}-{{partition}}-{{start_offset}}\\.csv", &t, NULL), CF_OK);
    assert_true(cf_name_template_match(t, "orders-3-1200.csv", &m));
    assert_string_equal(m.topic, "orders");
    assert_int_equal(m.partition, 3);
    assert_int_equal(m.start_offset, 1200);
    /* Aiven's README example of a wrong partial match: must not match at all */
    assert_false(cf_name_template_match(t, "22-10-12/customer-topic-1-1734445664111.csv", &m));
    assert_false(cf_name_template_match(t, "x/orders-3-1200.csv.tmp", &m));
    cf_name_template_destroy(t);
    assert_int_equal(cf_name_template_new("(dir|other)/{{topic}}/p{{partition}}\\.jsonl", &t, NULL), CF_OK);
    assert_true(cf_name_template_match(t, "other/events/p7.jsonl", &m));
    assert_string_equal(m.topic, "events");
    assert_int_equal(m.partition, 7);
    cf_name_template_destroy(t);
    /* {{timestamp}}: digits only, and the whole name */
    assert_int_equal(cf_name_template_new("{{topic}}/{{timestamp}}\\.jsonl", &t, NULL), CF_OK);
    assert_true(cf_name_template_match(t, "clicks/1700000000123.jsonl", &m));
    assert_string_equal(m.topic, "clicks");
    assert_false(m.has_partition);
    assert_false(cf_name_template_match(t, "clicks/17000x.jsonl", &m));
    assert_false(cf_name_template_match(t, "clicks/.jsonl", &m));
    assert_false(cf_name_template_match(t, "in/clicks/1700000000123.jsonl", &m));
    cf_name_template_destroy(t);
    cf_err err;
    assert_int_equal(cf_name_template_new("{{bogus}}", &t, &err), CF_ERR_CONFIG);
    assert_int_equal(cf_name_template_new("(", &t, &err), CF_ERR_CONFIG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template),
        cmocka_unit_test(test_pipeline_offsets_restart),
        cmocka_unit_test(test_poll_limit_and_idle_backoff),
        cmocka_unit_test(test_offset_key_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
