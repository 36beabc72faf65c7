/*
 * bench_sink_kafka.c - the CDC sink behind a real Kafka broker (issue 18):
 * throughput against the in-process rate, resident memory, and the time from
 * a change in the topic to its row in the table, at the defaults.
 *
 *   1. in process: bench_sink's workload (sink_events.h: N events, 200,000
 *      keys, ~20% deletes, JsonConverter bytes) converted, routed and applied
 *      to SQLite in this process: the baseline rate; and bench_sink's bare
 *      loop of prepared upserts/deletes over the same events (issue 17's
 *      baseline);
 *   2. the same N events produced to a new one-partition topic, then
 *      `cdcflow run --worker W SINK.json` (cdc-sink into SQLite, every
 *      setting at its default, one task) consumes them: the rate is N over
 *      the time from the first record read (the REST metrics) to the group's
 *      committed offset reaching N (flushed and committed), read by a
 *      librdkafka handle of the bench; the process's peak RSS (VmHWM);
 *      the consumer's share: the CPU of librdkafka's threads (rdk:*) in the
 *      worker, and the time librdkafka alone (a consumer of the bench, the
 *      sink's 8 MB queue bound, every message dropped) takes to read the
 *      topic, against the run's;
 *   3. freshness: with the worker still running, 2,000 new rows produced at
 *      about 1,000/s; each row's latency is from just before its produce call
 *      to the first poll (every 5 ms) of the table that sees it: p50, p99, max.
 *
 *   build/bench/bench_sink_kafka [N]     (needs CF_TEST_KAFKA; CF_CLI: the
 *                                         binary, default ../cdcflow beside it;
 *                                         BENCH_WORKER="k=v;..." more worker settings,
 *                                         BENCH_SINK="k=v;..." more connector settings)
 * Prints the ratios Kafka / in process (issue 18) and Kafka / bare loop
 * (issue 17), target 0.8 each, and the p99 (target 1 s).
 */
#include <curl/curl.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "cdcflow/log.h"
#include "sink_events.h"

#define FRESH_ROWS 2000
#define FRESH_BASE 10000000

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
    cf_buf *b = ud;
    cf_buf_append(b, p, sz * n);
    return sz * n;
}

/* A metric of connector "bench" (task 0) from GET /metrics, or -1. */
static double metric(CURL *h, int port, const char *name) {
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    cf_buf b = CF_BUF_INIT;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
    double v = -1;
    if (curl_easy_perform(h) == CURLE_OK && b.data) {
        char pat[200];
        snprintf(pat, sizeof pat, "\n%s{connector=\"bench\"", name);
        char *p = strstr(b.data, pat);
        if (p && (p = strchr(p + 1, '}'))) v = strtod(p + 1, NULL);
    }
    cf_buf_free(&b);
    return v;
}

static long long committed(rd_kafka_t *rk, const char *topic) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, 0);
    long long off = -1;
    if (rd_kafka_committed(rk, l, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) off = l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return off;
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *bs, const char *group) {
    char e[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", bs, e, sizeof e);
    if (group) rd_kafka_conf_set(c, "group.id", group, e, sizeof e);
    if (type == RD_KAFKA_PRODUCER) {
        rd_kafka_conf_set(c, "linger.ms", "5", e, sizeof e);
        rd_kafka_conf_set(c, "queue.buffering.max.messages", "1000000", e, sizeof e);
    }
    rd_kafka_t *rk = rd_kafka_new(type, c, e, sizeof e);
    if (!rk) fprintf(stderr, "librdkafka: %s\n", e);
    return rk;
}

static int produce(rd_kafka_t *p, const char *topic, const char *k, size_t kl, const char *v, size_t vl) {
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                                  RD_KAFKA_V_KEY(k, kl), RD_KAFKA_V_VALUE((void *)v, vl), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(p, 10);
            continue;
        }
        return e ? -1 : 0;
    }
}

static int create_topic(rd_kafka_t *rk, const char *topic) {
    char e[256];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, 1, e, sizeof e);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    int rc = ev ? 0 : -1;
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    return rc;
}

/* librdkafka alone reading the topic from its start, every message taken
 * and dropped, with the queue bound the sink's consumer has by default
 * (8 MB): the consumer's own part of the Kafka path. Seconds from the first
 * message to the n-th, or -1. */
static double bare_consume(const char *bs, const char *topic, size_t n) {
    char e[512], group[64];
    snprintf(group, sizeof group, "bench-bare-%d", (int)getpid());
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", bs, e, sizeof e);
    rd_kafka_conf_set(c, "group.id", group, e, sizeof e);
    rd_kafka_conf_set(c, "queued.max.messages.kbytes", "8192", e, sizeof e);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, e, sizeof e);
    if (!rk) return -1;
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    size_t got = 0;
    double t0 = 0, start = now();
    while (got < n && now() - start < 120) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m) continue;
        if (!m->err) {
            if (!got) t0 = now();
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    double t = got == n ? now() - t0 : -1;
    rd_kafka_destroy(rk);
    return t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 500000;
    const char *bs = getenv("CF_TEST_KAFKA");
    if (!bs || !*bs) {
        fprintf(stderr, "bench_sink_kafka: CF_TEST_KAFKA is not set (source the env file of scripts/servers)\n");
        return 1;
    }
    char cli[4096];
    if (getenv("CF_CLI")) snprintf(cli, sizeof cli, "%s", getenv("CF_CLI"));
    else {
        char self[4096];
        ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
        self[l > 0 ? l : 0] = 0;
        char *slash = strrchr(self, '/');
        if (slash) *slash = 0;
        snprintf(cli, sizeof cli, "%s/../cdcflow", self);
    }
    cf_log_setup(CF_LOG_WARN, CF_LOG_TEXT, stderr);
    char dir[] = "/tmp/bench_sink_kafka.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char db[256], topic[128];
    snprintf(topic, sizeof topic, "bench-sinkk-%d-%ld", (int)getpid(), (long)time(NULL));

    /* 1. in process */
    snprintf(db, sizeof db, "%s/inproc.db", dir);
    cf_sink_options so;
    cf_sink_options_default(&so);
    so.sqlite_path = db;
    const cf_sink_target *tg = &cf_sink_target_sqlite;
    cf_err e;
    run_result in;
    printf("in process (%zu events):\n", n);
    if (run_sink(&so, tg, n, &in)) return 1;
    print_run("in process", &in);
    double rate_in = (double)n / in.total;
    char bare_db[300];
    snprintf(bare_db, sizeof bare_db, "%s/bare.db", dir);
    size_t bare_rows = 0;
    double t_bare = sqlite_baseline(bare_db, n, 0, &bare_rows);
    printf("  bare loop, prepared upserts/deletes of every event: %.2f s = %.0f events/s, %zu rows\n", t_bare,
           n / t_bare, bare_rows);

    /* 2. produce, then consume with cdcflow run */
    rd_kafka_t *p = client(RD_KAFKA_PRODUCER, bs, NULL);
    if (!p || create_topic(p, topic)) return 1;
    ops o;
    ops_init(&o);
    cf_props *pp;
    cf_converter *kc, *vc;
    if (json_converters(&pp, &kc, &vc)) return 1;
    for (size_t i = 0; i < n; i++) {
        char *kb, *vb;
        size_t kl, vl;
        event_bytes(&o, kc, vc, &kb, &kl, &vb, &vl);
        if (produce(p, topic, kb, kl, vb, vl)) return 1;
        free(kb), free(vb);
        if (i % 10000 == 0) rd_kafka_poll(p, 0);
    }
    rd_kafka_flush(p, 60000);
    printf("produced %zu events to %s\n", n, topic);
    double t_cons = bare_consume(bs, topic, n);
    if (t_cons > 0)
        printf("librdkafka alone reads them (8 MB queue, messages dropped): %.2f s = %.0f events/s\n", t_cons,
               n / t_cons);
    char wprops[256], conn[256], logf[256];
    snprintf(wprops, sizeof wprops, "%s/w.properties", dir);
    snprintf(conn, sizeof conn, "%s/sink.json", dir);
    snprintf(logf, sizeof logf, "%s/run.log", dir);
    snprintf(db, sizeof db, "%s/kafka.db", dir);
    FILE *f = fopen(wprops, "w");
    fprintf(f, "bootstrap.servers=%s\noffset.storage.file.filename=%s/offsets.json\nrest.port=0\n"
               "key.converter=json\nvalue.converter=json\n", bs, dir);
    /* BENCH_WORKER="k=v;k=v": more worker settings (to try tunings) */
    for (const char *x = getenv("BENCH_WORKER"); x && *x;) {
        size_t l = strcspn(x, ";");
        fprintf(f, "%.*s\n", (int)l, x);
        x += l + (x[l] == ';');
    }
    fclose(f);
    f = fopen(conn, "w");
    fprintf(f, "{\"name\":\"bench\",\"config\":{\"connector.class\":\"cdc-sink\",\"topics\":\"%s\","
               "\"sqlite.path\":\"%s\"", topic, db);
    /* BENCH_SINK="k=v;k=v": more connector settings (plain keys and values, no quotes) */
    for (const char *x = getenv("BENCH_SINK"); x && *x;) {
        size_t l = strcspn(x, ";"), eq = strcspn(x, "=");
        if (eq < l) fprintf(f, ",\"%.*s\":\"%.*s\"", (int)eq, x, (int)(l - eq - 1), x + eq + 1);
        x += l + (x[l] == ';');
    }
    fprintf(f, "}}\n");
    fclose(f);
    pid_t pid = fork();
    if (pid == 0) {
        freopen(logf, "w", stderr);
        execl(cli, cli, "run", "--worker", wprops, conn, (char *)NULL);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 300 && !port; i++) {
        usleep(100000);
        FILE *lf = fopen(logf, "r");
        char line[1024];
        while (lf && fgets(line, sizeof line, lf)) {
            char *q = strstr(line, "REST API on http://127.0.0.1:");
            if (q) port = atoi(q + strlen("REST API on http://127.0.0.1:"));
        }
        if (lf) fclose(lf);
    }
    if (!port) {
        fprintf(stderr, "cdcflow run did not start its REST API (log %s)\n", logf);
        return 1;
    }
    CURL *h = curl_easy_init();
    rd_kafka_t *cq = client(RD_KAFKA_CONSUMER, bs, "connect-bench");
    double t_first = 0, t_done = 0, t0 = now(), cpu_first = 0, rdk_first = 0;
    while (now() - t0 < 600) {
        if (!t_first && metric(h, port, "cdcflow_task_records_in_total") > 0) {
            t_first = now();
            cpu_first = bench_proc_cpu_s(pid);
            rdk_first = bench_threads_cpu_s(pid, "rdk:");
        }
        if (t_first && committed(cq, topic) >= (long long)n) {
            t_done = now();
            break;
        }
        usleep(20000);
    }
    if (!t_done) {
        fprintf(stderr, "the sink did not commit %zu records in 600 s (log %s)\n", n, logf);
        kill(pid, SIGKILL);
        return 1;
    }
    double rate_k = (double)n / (t_done - t_first);
    long rss = bench_peak_rss_kb(pid);
    double cpu = bench_proc_cpu_s(pid) - cpu_first;
    double rdk = bench_threads_cpu_s(pid, "rdk:") - rdk_first;
    double applies = metric(h, port, "cdcflow_sink_applies_total"),
           apply_s = metric(h, port, "cdcflow_sink_apply_seconds_total");

    /* 3. freshness */
    sqlite3 *rd;
    sqlite3_open_v2(db, &rd, SQLITE_OPEN_READONLY, NULL);
    sqlite3_busy_timeout(rd, 1000);
    sqlite3_stmt *st = NULL;
    char table[160], sql[256];
    snprintf(table, sizeof table, "%s", topic);
    for (char *q = table; *q; q++)
        if (*q == '-') *q = '_';
    snprintf(sql, sizeof sql, "SELECT id FROM \"%s\" WHERE id >= ?1", table);
    sqlite3_prepare_v2(rd, sql, -1, &st, NULL);
    double *sent = calloc(FRESH_ROWS, sizeof *sent), *lat = calloc(FRESH_ROWS, sizeof *lat);
    unsigned char *seen = calloc(FRESH_ROWS, 1);
    size_t nseen = 0, produced = 0;
    gen_row row = o.g.rows[0];
    double start = now(), last_poll = 0;
    while (nseen < FRESH_ROWS && now() - start < 120) {
        double t = now();
        while (produced < FRESH_ROWS && t - start >= produced / 1000.0) { /* ~1,000 rows/s */
            row.id = FRESH_BASE + (int32_t)produced;
            row.present = 1;
            cf_value *kv = cf_value_struct(cf_schema_ref(o.g.key_s));
            cf_value_struct_set(kv, "id", cf_value_int32(row.id), NULL);
            cf_value *vv = gen_row_value(&row, o.g.val_s, "false", 0);
            char *kb, *vb;
            size_t kl, vl;
            cf_converter_from_connect(kc, o.g.topic, o.g.key_s, kv, &kb, &kl, &e);
            cf_converter_from_connect(vc, o.g.topic, o.g.val_s, vv, &vb, &vl, &e);
            sent[produced] = now();
            produce(p, topic, kb, kl, vb, vl);
            rd_kafka_poll(p, 0);
            free(kb), free(vb);
            cf_value_destroy(kv), cf_value_destroy(vv);
            produced++;
        }
        if (st && t - last_poll >= 0.005) {
            last_poll = t;
            sqlite3_bind_int(st, 1, FRESH_BASE);
            while (sqlite3_step(st) == SQLITE_ROW) {
                int id = sqlite3_column_int(st, 0) - FRESH_BASE;
                if (id >= 0 && id < FRESH_ROWS && !seen[id]) {
                    seen[id] = 1;
                    lat[nseen++] = t - sent[id];
                }
            }
            sqlite3_reset(st);
        } else if (!st) { /* the table did not exist yet */
            sqlite3_prepare_v2(rd, sql, -1, &st, NULL);
        }
        usleep(1000);
    }
    sqlite3_finalize(st);
    sqlite3_close(rd);
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    qsort(lat, nseen, sizeof *lat, cmp_double);
    printf("behind Kafka (%s, one partition, one task, defaults): %zu events in %.2f s = %.0f events/s; peak RSS "
           "%.1f MB (target < 128)\n",
           bs, n, t_done - t_first, rate_k, rss / 1024.0);
    printf("  process CPU %.2f s (%.1f us per event; in process %.1f); %.0f applies, %.2f s in the database (in "
           "process %.2f s in %" PRIu64 "): the database works in its own thread while the task reads on\n",
           cpu, cpu * 1e6 / n, in.total * 1e6 / n, applies, apply_s, in.db, in.applies);
    printf("  the consumer's share: librdkafka's threads %.2f s of that CPU (%.0f%%); librdkafka alone read the "
           "topic in %.0f%% of this run's time\n",
           rdk, cpu > 0 ? 100 * rdk / cpu : 0, t_cons > 0 ? 100 * t_cons / (t_done - t_first) : -1.0);
    printf("ratio Kafka / in process: %.2f (target 0.80)\n", rate_k / rate_in);
    printf("ratio Kafka / bare loop: %.2f (target 0.80, issue 17)\n", rate_k / (n / t_bare));
    if (nseen)
        printf("change to row (%zu of %d rows at ~1,000/s): p50 %.0f ms, p99 %.0f ms, max %.0f ms (target p99 <= "
               "1000 ms)\n",
               nseen, FRESH_ROWS, lat[nseen / 2] * 1000, lat[(size_t)(nseen * 0.99)] * 1000, lat[nseen - 1] * 1000);
    else
        printf("change to row: no row seen\n");
    printf("cdcflow run exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    curl_easy_cleanup(h);
    rd_kafka_destroy(cq);
    rd_kafka_destroy(p);
    cf_converter_destroy(kc), cf_converter_destroy(vc);
    cf_props_destroy(pp);
    gen_free(&o.g);
    free(sent), free(lat), free(seen);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!getenv("KEEP") && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return nseen == FRESH_ROWS ? 0 : 1;
}
