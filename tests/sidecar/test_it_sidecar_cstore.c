/*
 * test_it_sidecar_cstore.c - state.store=cassandra against the live
 * Cassandra 5.0 node of scripts/servers ($CF_TEST_CASSANDRA, its cdc_raw in
 * $CF_TEST_CASSANDRA_CDC_RAW; fails without it): `cdcflow cassandra
 * sidecar` processes keep their state in the node's own tables and take
 * over each other's ranges (test_takeover_live), and share the service
 * configuration (test_shared_config_live).
 *
 * Takeover:
 *  1. sidecar A owns the lower half of the ring, B the upper half, both
 *     over the node's cdc_raw, state in <ks>_st.cdc_state, each with its own
 *     offsets file; a first workload is written: each row is published once
 *     by A and B together, each by the owner of its token;
 *  2. B is stopped; more rows are written, A publishes those of its half;
 *     A is stopped; their rows are in the state table (one each, with the
 *     30-day TTL), B's markers before A's;
 *  3. A starts again owning the whole ring, with a new, empty offsets file
 *     (so its state can only come from Cassandra), and a second workload is
 *     written (new rows, and updates of rows of the first): every change is
 *     published (nothing lost: B's rows written while it was down are
 *     published by A now), none of the changes A or B had published is
 *     published again (the documented bound after clean stops: none), and
 *     the last value published of each row is what Cassandra returns.
 *
 * Shared configuration: sidecars S1 and S2 (each with its own replica
 * directory setting, REST on a free port, config.refresh.interval.ms 300):
 * a PUT of the service configuration on S1 is S2's configuration soon after
 * (its GET shows the PUT's keys, its own cdc_raw.dirs kept), a DELETE on S1
 * unconfigures S2, a PUT on S2 is what S3 starts with and S1 follows; the
 * configs table holds the PUT's keys and no sidecar-local one.
 *
 * Cassandra down at a commit (test_store_down_live: the sidecar reaches the
 * node through a TCP proxy of this test, cut and restored): while it is cut
 * the sidecar publishes on, logs that the state is not advanced; restored,
 * the state is written again; cut again, rows written, the sidecar killed
 * (kill -9) and started with an empty offsets file: the changes after the
 * last row written are published again (nothing lost), none before it.
 *
 * Refresh outside the lock (test_refresh_unlocked_live: the service reaches
 * the node through the proxy, which then swallows every request of the
 * connection that reads the configs row): a PUT while the refresh waits for
 * its answer is answered in well under the 10 s request timeout, written,
 * and not undone by the refreshes once the node answers again.
 *
 * CF_TEST_KEEP=1 keeps the sidecars' logs and record files in /tmp/sc*_<pid>.
 *
 * Oracles: Cassandra (SELECT of the rows, the state and configs tables'
 * rows and TTL), the statements of this test (each row written once per
 * workload), the REST API's answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "cdcflow/log.h"
#include "sc_live_util.h"

#define NK 120 /* keys of both workloads */

static char tmp[256], cli[512];
static pid_t kids[8]; /* the sidecars running: killed by the teardown if a test fails */

typedef struct outs {
    int by_k[NK];      /* inserts and updates of key k seen */
    int first[NK];     /* of them with the first workload's value */
    int64_t last[NK];  /* the last value of n seen (-1: none) */
    int n;
} outs;

/* The events of ks.t in a record file (JSON converter lines). */
static void read_out(const char *path, outs *o) {
    memset(o, 0, sizeof *o);
    for (int k = 0; k < NK; k++) o->last[k] = -1;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *m = json_loads(line, 0, NULL);
        const char *pl = json_string_value(json_object_get(m, "payload"));
        json_t *v = pl ? json_loads(pl, 0, NULL) : NULL;
        json_t *env = json_object_get(v, "schema") ? json_object_get(v, "payload") : v;
        const char *kss = json_string_value(json_object_get(env, "sourceKeyspace"));
        json_t *row = json_object_get(env, "payload");
        if (kss && strcmp(kss, ks) == 0 && json_is_object(row)) {
            int k = (int)json_integer_value(json_object_get(row, "k"));
            json_t *n = json_object_get(row, "n");
            if (k >= 0 && k < NK) {
                o->by_k[k]++;
                o->last[k] = json_is_integer(n) ? json_integer_value(n) : -1;
                if (json_integer_value(n) == k * 10) o->first[k]++;
            }
            o->n++;
        }
        json_decref(v);
        json_decref(m);
    }
    free(line);
    fclose(f);
}

/* `cdcflow cassandra sidecar ARGS...` in the background, its log in <tmp>/<tag>.log. */
static pid_t spawn(const char *tag, const char *const *args) {
    char log[512];
    snprintf(log, sizeof log, "%s/%s.log", tmp, tag);
    const char *argv[32] = {cli, "cassandra", "sidecar"};
    size_t n = 3;
    for (; args[n - 3] && n < 31; n++) argv[n] = args[n - 3];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *e = freopen(log, "w", stderr);
        (void)e;
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    for (size_t i = 0; i < 8; i++)
        if (!kids[i]) {
            kids[i] = pid;
            break;
        }
    return pid;
}

/* A sidecar with the configuration cfg (JSON, written to <tmp>/<tag>.json), its events to
 * <tmp>/<tag>.jsonl, its offsets in <tmp>/<tag>.offsets, and rest (NULL-terminated) more arguments. */
static pid_t start_cfg(const char *tag, const char *cfg, const char *const *rest) {
    char path[512], out[512], off[512];
    snprintf(path, sizeof path, "%s/%s.json", tmp, tag);
    snprintf(out, sizeof out, "%s/%s.jsonl", tmp, tag);
    snprintf(off, sizeof off, "%s/%s.offsets", tmp, tag);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(cfg, f);
    fclose(f);
    const char *args[24] = {"--config", path, "--output", out, "--offsets", off};
    size_t n = 6;
    for (; rest && rest[n - 6] && n < 23; n++) args[n] = rest[n - 6];
    args[n] = NULL;
    return spawn(tag, args);
}

/* A sidecar owning ranges, state in Cassandra; its events to <tmp>/<tag>.jsonl. */
static pid_t start_at(const char *tag, const char *host, int port, const char *ranges) {
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
            "{\"cdc_raw.dirs\": \"%s\", \"cql.host\": \"%s:%d\", \"token.ranges\": \"%s\", \"state.store\": "
            "\"cassandra\", \"state.keyspace\": \"%s_st\", \"job.id\": \"%s\", \"cdc_raw.cleanup\": \"none\", "
            "\"consistency.level\": \"ONE\", \"tables\": [\"%s.t\"], \"state.checkpoint.interval.ms\": 100, "
            "\"poll.interval.ms\": 200}\n",
            live_raw, host, port, ranges, ks, ks, ks);
    return start_cfg(tag, cfg, NULL);
}

static pid_t start(const char *tag, const char *ranges) { return start_at(tag, live_host, live_cql.port, ranges); }

static int stop(pid_t pid) {
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    for (size_t i = 0; i < 8; i++)
        if (kids[i] == pid) kids[i] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void out_of(const char *tag, outs *o) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s.jsonl", tmp, tag);
    read_out(p, o);
}

static void show_log(const char *tag) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tail -20 %s/%s.log >&2", tmp, tag);
    if (system(cmd)) {}
}

/* Wait (up to 60 s) until the events of tags cover keys [lo, hi) with value fn(k). */
static bool wait_keys(const char *const *tags, size_t nt, int lo, int hi, int64_t (*val)(int)) {
    for (int64_t t0 = mono_ms(); mono_ms() - t0 < 60000; usleep(200000)) {
        bool all = true;
        outs o;
        int64_t last[NK];
        for (int k = 0; k < NK; k++) last[k] = -1;
        for (size_t i = 0; i < nt; i++) {
            out_of(tags[i], &o);
            for (int k = 0; k < NK; k++)
                if (o.last[k] >= 0) last[k] = o.last[k];
        }
        for (int k = lo; k < hi && all; k++) all = last[k] == val(k);
        if (all) return true;
    }
    return false;
}

static int64_t v1(int k) { return k * 10; }
static int64_t v2(int k) { return k < 10 ? 5000 + k : k * 10; }

static int64_t count_rows(const char *what) {
    char cql[512];
    snprintf(cql, sizeof cql, "SELECT %s FROM %s_st.cdc_state WHERE job_id = '%s'", what, ks, ks);
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err)) fail_msg("%s: %s / %s", cql, err.message, err.detail);
    int64_t n = (int64_t)r->n_rows;
    if (strstr(what, "ttl") && n) { /* the smallest TTL left: written with 30 days */
        for (size_t i = 0; i < r->n_rows; i++) {
            const cf_cql_value *v = cf_cql_result_value(r, i, 0);
            assert_int_equal(v->len, 4);
            int32_t ttl = (int32_t)((uint32_t)v->data[0] << 24 | (uint32_t)v->data[1] << 16 | v->data[2] << 8 | v->data[3]);
            if (ttl < 2592000 - 3600 || ttl > 2592000) fail_msg("state row TTL %d", ttl);
        }
    }
    cf_cql_result_free(r);
    return n;
}

/* A test's start: the live keyspace TAG, the CLI, a fresh /tmp/TAG_PID. */
static void test_setup(const char *tag) {
    live_setup(tag);
    snprintf(cli, sizeof cli, "%s", it_need_env("CF_CLI"));
    snprintf(tmp, sizeof tmp, "/tmp/%s_%d", tag, (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", tmp, tmp);
    assert_int_equal(system(cmd), 0);
}

static void test_takeover_live(void **state) {
    (void)state;
    test_setup("sctake");
    char cmd[600];

    /* 1. two halves */
    pid_t a = start("a1", "(-9223372036854775808,0]"), b = start("b1", "(0,-9223372036854775808]");
    usleep(1500000);
    for (int k = 0; k < 60; k++) q("INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d)", ks, k, k, k * 10);
    const char *both[] = {"a1", "b1"};
    bool ok = wait_keys(both, 2, 0, 60, v1);
    usleep(1500000); /* offsets (and the state) are committed every second */
    int rb = stop(b);
    /* B is down: rows of its half wait for it; A publishes its own */
    for (int k = 60; k < 90; k++) q("INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d)", ks, k, k, k * 10);
    for (int64_t t0 = mono_ms(); mono_ms() - t0 < 3000; usleep(200000)) {}
    usleep(1500000);
    int ra = stop(a);
    if (!ok) {
        show_log("a1");
        show_log("b1");
        fail_msg("the first workload was not published by A and B");
    }
    assert_int_equal(ra, 0);
    assert_int_equal(rb, 0);
    outs oa, ob;
    out_of("a1", &oa);
    out_of("b1", &ob);
    int a_late = 0;
    for (int k = 60; k < 90; k++) a_late += oa.by_k[k];
    print_message("first workload: A published %d, B %d; while B was down A published %d of 30\n", oa.n, ob.n,
                  a_late);
    assert_true(oa.n > 0 && ob.n > 0 && a_late > 0 && a_late < 30);
    for (int k = 0; k < 60; k++)
        if (oa.by_k[k] + ob.by_k[k] != 1) fail_msg("key %d: A %d, B %d events", k, oa.by_k[k], ob.by_k[k]);
    for (int k = 60; k < 90; k++) assert_int_equal(ob.by_k[k], 0);

    /* 2. their state in Cassandra */
    assert_int_equal(count_rows("\"start\""), 2);
    count_rows("ttl(state)");

    /* 3. A takes over the whole ring, no offsets of its own */
    pid_t a2 = start("a2", "all");
    usleep(1500000);
    for (int k = 90; k < NK; k++) q("INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d)", ks, k, k, k * 10);
    for (int k = 0; k < 10; k++) q("UPDATE %s.t SET n = %d WHERE k = %d", ks, 5000 + k, k);
    const char *all3[] = {"a1", "b1", "a2"};
    ok = wait_keys(all3, 3, 0, NK, v2);
    usleep(1500000);
    int r2 = stop(a2);
    if (!ok) {
        show_log("a2");
        fail_msg("the second workload was not published after the takeover");
    }
    assert_int_equal(r2, 0);
    char log[512];
    snprintf(log, sizeof log, "grep -q 'row(s) of job %s in %s_st.cdc_state merged' %s/a2.log", ks, ks, tmp);
    if (system(log)) {
        show_log("a2");
        fail_msg("A did not start from the merged state");
    }
    outs o2;
    out_of("a2", &o2);
    /* every first value (rows 0..89) once in total: B's rows written while it was down by A now, nothing of
     * what A or B had published again */
    int again = 0, taken = 0;
    for (int k = 0; k < 90; k++) {
        int total = oa.first[k] + ob.first[k] + o2.first[k];
        if (total != 1) fail_msg("key %d: its first value published %d times (A %d, B %d, A again %d)", k, total,
                                 oa.first[k], ob.first[k], o2.first[k]);
        if (k < 60 || oa.by_k[k]) again += o2.first[k];
        else taken += o2.first[k];
    }
    print_message("after the takeover: A published %d: %d of B's rows written while it was down, %d again\n", o2.n,
                  taken, again);
    assert_int_equal(again, 0);
    assert_int_equal(taken, 30 - a_late);
    for (int k = 90; k < NK; k++)
        if (o2.by_k[k] != 1) fail_msg("key %d: %d events after the takeover", k, o2.by_k[k]);
    for (int k = 0; k < 10; k++) assert_int_equal(o2.by_k[k], 1);
    /* the last value of each row is Cassandra's */
    cf_cql_result *r = NULL;
    cf_err err;
    char cql[256];
    snprintf(cql, sizeof cql, "SELECT k, n FROM %s.t", ks);
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err)) fail_msg("select: %s", err.message);
    assert_int_equal(r->n_rows, NK);
    for (size_t i = 0; i < r->n_rows; i++) {
        const cf_cql_value *kv = cf_cql_result_value(r, i, 0), *nv = cf_cql_result_value(r, i, 1);
        int k = (int)((uint32_t)kv->data[0] << 24 | (uint32_t)kv->data[1] << 16 | kv->data[2] << 8 | kv->data[3]);
        int64_t n = 0;
        for (int j = 0; j < 8; j++) n = n << 8 | nv->data[j];
        int64_t seen = o2.last[k] >= 0 ? o2.last[k] : oa.last[k] >= 0 ? oa.last[k] : ob.last[k];
        if (seen != n) fail_msg("key %d: Cassandra has n = %lld, the last event %lld", k, (long long)n, (long long)seen);
    }
    cf_cql_result_free(r);
    q("DROP KEYSPACE IF EXISTS %s_st", ks);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("CF_TEST_KEEP") && system(cmd)) {} /* CF_TEST_KEEP: the logs stay */
    live_teardown();
}


/* ---------------- the shared configuration ---------------- */

/* The REST port of a sidecar (its "REST API on" log line; 15 s at most). */
static int rest_port(const char *tag) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.log", tmp, tag);
    for (int64_t t0 = mono_ms(); mono_ms() - t0 < 15000; usleep(100000)) {
        FILE *f = fopen(path, "r");
        char line[2048];
        int port = 0;
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "REST API on http://");
            if (p && (p = strchr(p + 19, ':'))) port = atoi(p + 1);
        }
        if (f) fclose(f);
        if (port > 0) return port;
    }
    show_log(tag);
    fail_msg("%s: no REST API", tag);
    return 0;
}

/* An HTTP request to a sidecar: its status; the body in <tmp>/body. */
static int api(int port, const char *method, const char *path, const char *body) {
    char cmd[4096], bodyf[512], code[512];
    snprintf(bodyf, sizeof bodyf, "%s/req.json", tmp);
    snprintf(code, sizeof code, "%s/code", tmp);
    FILE *f = fopen(bodyf, "w");
    assert_non_null(f);
    fputs(body ? body : "", f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "curl -s -o %s/body -w '%%{http_code}' -X %s -H 'Content-Type: application/json' %s%s "
             "http://127.0.0.1:%d%s >%s",
             tmp, method, body ? "--data-binary @" : "", body ? bodyf : "", port, path, code);
    if (system(cmd)) return 0;
    f = fopen(code, "r");
    int st = 0;
    if (f && fscanf(f, "%d", &st) != 1) st = 0;
    if (f) fclose(f);
    return st;
}

static bool body_has(const char *what) {
    char p[512], buf[16384];
    snprintf(p, sizeof p, "%s/body", tmp);
    FILE *f = fopen(p, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return strstr(buf, what) != NULL;
}

/* Wait (10 s at most) until GET of the service configuration on port answers
 * status and, for 200, its body holds what. */
static bool config_becomes(int port, int status, const char *what) {
    for (int64_t t0 = mono_ms(); mono_ms() - t0 < 10000; usleep(100000))
        if (api(port, "GET", "/api/v1/services/cdc/config", NULL) == status && (status != 200 || body_has(what)))
            return true;
    return false;
}

static pid_t start_service_at(const char *tag, const char *host, int port, int refresh_ms) {
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
            "{\"cql.host\": \"%s:%d\", \"state.store\": \"cassandra\", \"state.keyspace\": \"%s_st\", \"job.id\": "
            "\"%s_%s\", \"cdc_raw.cleanup\": \"none\", \"config.refresh.interval.ms\": %d, \"tables\": [\"%s.t\"]}\n",
            host, port, ks, ks, tag, refresh_ms, ks);
    return start_cfg(tag, cfg, (const char *const[]){"--replica", live_raw, "--rest", "0", NULL});
}

static pid_t start_service(const char *tag, int refresh_ms) {
    return start_service_at(tag, live_host, live_cql.port, refresh_ms);
}

static void test_shared_config_live(void **state) {
    (void)state;
    test_setup("scconf");
    char cmd[600];
    pid_t s1 = start_service("s1", 300), s2 = start_service("s2", 300);
    int p1 = rest_port("s1"), p2 = rest_port("s2");
    /* a PUT on S1 (its own replica directory with it) */
    char body[1024];
    snprintf(body, sizeof body,
             "{\"config\": {\"cdc_raw.dirs\": \"%s\", \"tables\": [\"%s.t\"], \"consistency.level\": \"ONE\", "
             "\"topic.format\": \"first.{table}\"}}",
             live_raw, ks);
    int st = api(p1, "PUT", "/api/v1/services/cdc/config", body);
    if (st != 200 && st != 201) {
        show_log("s1");
        fail_msg("PUT on S1: %d", st);
    }
    if (!config_becomes(p2, 200, "first.{table}")) {
        show_log("s2");
        fail_msg("S2 did not take S1's configuration");
    }
    char dirs[600];
    snprintf(dirs, sizeof dirs, "\"cdc_raw.dirs\":\"%s\"", live_raw);
    assert_true(body_has(dirs)); /* its own replicas */
    /* in Cassandra: the shared keys, no sidecar-local one */
    char cql[256];
    snprintf(cql, sizeof cql, "SELECT JSON config FROM %s_st.configs WHERE service = 'cdc'", ks);
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err)) fail_msg("configs: %s / %s", err.message, err.detail);
    assert_int_equal(r->n_rows, 1);
    char *json = cf_cql_result_text(r, 0, 0);
    print_message("configs: %s\n", json);
    assert_non_null(strstr(json, "\"topic.format\": \"first.{table}\""));
    assert_null(strstr(json, "cdc_raw.dirs"));
    assert_null(strstr(json, "cql."));
    free(json);
    cf_cql_result_free(r);
    /* a DELETE on S1 unconfigures S2 */
    assert_int_equal(api(p1, "DELETE", "/api/v1/services/cdc/config", NULL), 204);
    if (!config_becomes(p2, 404, NULL)) fail_msg("S2 is still configured after S1's DELETE");
    /* a PUT on S2: S1 follows, S3 starts with it (read at start: its refresh interval is long) */
    snprintf(body, sizeof body,
             "{\"config\": {\"cdc_raw.dirs\": \"%s\", \"tables\": [\"%s.t\"], \"consistency.level\": \"ONE\", "
             "\"topic.format\": \"second.{table}\"}}",
             live_raw, ks);
    st = api(p2, "PUT", "/api/v1/services/cdc/config", body);
    assert_true(st == 200 || st == 201);
    if (!config_becomes(p1, 200, "second.{table}")) fail_msg("S1 did not take S2's configuration");
    pid_t s3 = start_service("s3", 600000);
    int p3 = rest_port("s3");
    assert_int_equal(api(p3, "GET", "/api/v1/services/cdc/config", NULL), 200);
    assert_true(body_has("second.{table}"));
    assert_int_equal(stop(s3), 0);
    assert_int_equal(stop(s2), 0);
    assert_int_equal(stop(s1), 0);
    q("DROP KEYSPACE IF EXISTS %s_st", ks);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("CF_TEST_KEEP") && system(cmd)) {}
    live_teardown();
}

/* ---------------- Cassandra down at a commit ---------------- */

/* A TCP proxy to the node that can be cut (connections closed, connects refused) and restored. */
typedef struct proxy {
    int port, lfd;
    atomic_bool down, quit;
    atomic_bool stall_select; /* a connection that sends "SELECT config" (the service's refresh) is answered no more */
    pthread_t th;
} proxy;

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 16)) {
        close(fd);
        return -1;
    }
    return fd;
}

static void *proxy_main(void *arg) {
    proxy *p = arg;
    int fds[64]; /* pairs: client, server */
    bool stalled[64] = {false}; /* per pair (at its client's index): nothing forwarded any more */
    size_t n = 0;
    char buf[65536];
    while (!atomic_load(&p->quit)) {
        bool down = atomic_load(&p->down);
        if (down) { /* the node "down": connections closed, new ones closed at once (the port stays ours) */
            for (size_t i = 0; i < n; i++) close(fds[i]);
            n = 0;
        }
        struct pollfd pf[65];
        pf[0] = (struct pollfd){p->lfd, POLLIN, 0};
        for (size_t i = 0; i < n; i++) pf[i + 1] = (struct pollfd){fds[i], POLLIN, 0};
        if (poll(pf, n + 1, 50) <= 0) continue;
        if ((pf[0].revents & POLLIN) && (down || n + 2 > 64)) {
            int c = accept(p->lfd, NULL, NULL);
            if (c >= 0) close(c);
        } else if (pf[0].revents & POLLIN) {
            int c = accept(p->lfd, NULL, NULL), sv = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)live_cql.port)};
            inet_pton(AF_INET, live_host, &a.sin_addr);
            if (c >= 0 && connect(sv, (struct sockaddr *)&a, sizeof a) == 0) {
                stalled[n] = false;
                fds[n++] = c;
                fds[n++] = sv;
            } else {
                fprintf(stderr, "proxy: accept/connect failed: %s\n", strerror(errno));
                if (c >= 0) close(c);
                close(sv);
            }
        }
        for (size_t i = 0; i < n; i++) {
            if (!(pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t k = read(fds[i], buf, sizeof buf);
            size_t peer = i ^ 1, a = i & ~(size_t)1;
            if (k > 0 && i == a && atomic_load(&p->stall_select) && memmem(buf, (size_t)k, "SELECT config", 13))
                stalled[a] = true;
            if (k > 0 && stalled[a]) continue; /* swallowed */
            if (k <= 0 || write(fds[peer], buf, (size_t)k) != k) { /* one side gone: the pair goes */
                close(fds[a]);
                close(fds[a + 1]);
                fds[a] = fds[n - 2];
                fds[a + 1] = fds[n - 1];
                stalled[a] = stalled[n - 2];
                n -= 2;
                break; /* the poll set changed */
            }
        }
    }
    for (size_t i = 0; i < n; i++) close(fds[i]);
    if (p->lfd >= 0) close(p->lfd);
    return NULL;
}

static void proxy_start(proxy *p) {
    p->lfd = listen_on(0);
    assert_true(p->lfd >= 0);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    getsockname(p->lfd, (struct sockaddr *)&a, &al);
    p->port = ntohs(a.sin_port);
    atomic_store(&p->down, false);
    atomic_store(&p->quit, false);
    pthread_create(&p->th, NULL, proxy_main, p);
}

static bool log_has(const char *tag, const char *what, int wait_ms) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "grep -q '%s' %s/%s.log", what, tmp, tag);
    for (int64_t t0 = mono_ms();; usleep(100000)) {
        if (system(cmd) == 0) return true;
        if (mono_ms() - t0 > wait_ms) return false;
    }
}

/* A sidecar owning the whole ring that reaches the node through the proxy. */
static pid_t start_via(const char *tag, int port) { return start_at(tag, "127.0.0.1", port, "all"); }

static void test_store_down_live(void **state) {
    (void)state;
    test_setup("scdown");
    char cmd[600];
    static proxy px;
    proxy_start(&px);
    pid_t c = start_via("c1", px.port);
    usleep(1500000);
    const char *c1[] = {"c1"};
    for (int k = 0; k < 30; k++) q("INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d)", ks, k, k, k * 10);
    if (!wait_keys(c1, 1, 0, 30, v1)) {
        show_log("c1");
        fail_msg("the first rows were not published");
    }
    usleep(1500000);
    assert_int_equal(count_rows("\"start\""), 1);
    /* cut: it publishes on, the state is not advanced */
    atomic_store(&px.down, true);
    for (int k = 30; k < 60; k++) q("INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d)", ks, k, k, k * 10);
    if (!wait_keys(c1, 1, 30, 60, v1)) {
        show_log("c1");
        fail_msg("the rows written while the store is down were not published");
    }
    if (!log_has("c1", "is not advanced", 10000)) {
        show_log("c1");
        fail_msg("no log line: the state is not advanced");
    }
    /* restored: written again */
    atomic_store(&px.down, false);
    if (!log_has("c1", "is stored again", 15000)) {
        show_log("c1");
        fail_msg("the state was not written again once the store was back");
    }
    /* cut again, rows, kill -9 */
    atomic_store(&px.down, true);
    for (int k = 60; k < 90; k++) q("INSERT INTO %s.t (k, v, n) VALUES (%d, 'v%d', %d)", ks, k, k, k * 10);
    bool ok = wait_keys(c1, 1, 60, 90, v1);
    usleep(1500000);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    for (size_t i = 0; i < 8; i++)
        if (kids[i] == c) kids[i] = 0;
    assert_true(ok);
    atomic_store(&px.down, false);
    /* a new start, an empty offsets file: the state is the last row written */
    pid_t c2 = start_via("c2", px.port);
    const char *c2t[] = {"c2"};
    ok = wait_keys(c2t, 1, 60, 90, v1);
    usleep(1500000);
    assert_int_equal(stop(c2), 0);
    if (!ok) {
        show_log("c2");
        fail_msg("the rows after the last state written were not published again");
    }
    outs o1, o2;
    out_of("c1", &o1);
    out_of("c2", &o2);
    int again = 0;
    for (int k = 0; k < 60; k++) again += o2.by_k[k];
    print_message("store down: first run %d events; after kill -9 %d, of them %d from before the last state written\n",
                  o1.n, o2.n, again);
    assert_int_equal(again, 0);
    for (int k = 0; k < 90; k++) assert_int_equal(o1.by_k[k], 1);
    for (int k = 60; k < 90; k++) assert_int_equal(o2.by_k[k], 1);
    atomic_store(&px.quit, true);
    pthread_join(px.th, NULL);
    q("DROP KEYSPACE IF EXISTS %s_st", ks);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("CF_TEST_KEEP") && system(cmd)) {}
    live_teardown();
}

/* The service's refresh reads the shared configuration outside the service's lock (and on its own
 * connection): while its read waits for a node that does not answer it (the proxy swallows every request of
 * a connection that sent "SELECT config"; the request timeout is 10 s), a PUT is answered at once, is
 * written, and is not undone by the refresh once the node answers again. */
static void test_refresh_unlocked_live(void **state) {
    (void)state;
    test_setup("screfr");
    char cmd[600], body[1024];
    static proxy px;
    proxy_start(&px);
    pid_t r1 = start_service_at("r1", "127.0.0.1", px.port, 300);
    int p1 = rest_port("r1");
    snprintf(body, sizeof body,
             "{\"config\": {\"cdc_raw.dirs\": \"%s\", \"tables\": [\"%s.t\"], \"consistency.level\": \"ONE\", "
             "\"topic.format\": \"first.{table}\"}}",
             live_raw, ks);
    int st = api(p1, "PUT", "/api/v1/services/cdc/config", body);
    if (st != 200 && st != 201) {
        show_log("r1");
        fail_msg("PUT: %d", st);
    }
    atomic_store(&px.stall_select, true);
    usleep(1000000); /* a refresh (every 300 ms) waits for its answer now */
    snprintf(body, sizeof body,
             "{\"config\": {\"cdc_raw.dirs\": \"%s\", \"tables\": [\"%s.t\"], \"consistency.level\": \"ONE\", "
             "\"topic.format\": \"second.{table}\"}}",
             live_raw, ks);
    int64_t t0 = mono_ms();
    st = api(p1, "PUT", "/api/v1/services/cdc/config", body);
    int64_t took = mono_ms() - t0;
    print_message("a PUT while the refresh waits for the node: %lld ms (status %d)\n", (long long)took, st);
    if (st != 200 && st != 201) {
        show_log("r1");
        fail_msg("PUT during the stalled refresh: %d", st);
    }
    assert_true(took < 4000);
    /* written to Cassandra (by the PUT's own connection) */
    char cql[256];
    snprintf(cql, sizeof cql, "SELECT JSON config FROM %s_st.configs WHERE service = 'cdc'", ks);
    cf_cql_result *r = NULL;
    cf_err err;
    if (cf_cql_query(conn, cql, CF_CQL_ONE, &r, &err)) fail_msg("configs: %s / %s", err.message, err.detail);
    assert_int_equal(r->n_rows, 1);
    char *json = cf_cql_result_text(r, 0, 0);
    assert_non_null(strstr(json, "second.{table}"));
    free(json);
    cf_cql_result_free(r);
    /* the node answers again: the refreshes read the PUT's configuration, nothing older comes back */
    atomic_store(&px.stall_select, false);
    if (!log_has("r1", "is read again", 15000)) {
        show_log("r1");
        fail_msg("the refresh did not read again once the node answered");
    }
    usleep(1000000);
    assert_int_equal(api(p1, "GET", "/api/v1/services/cdc/config", NULL), 200);
    assert_true(body_has("second.{table}"));
    assert_int_equal(stop(r1), 0);
    atomic_store(&px.quit, true);
    pthread_join(px.th, NULL);
    q("DROP KEYSPACE IF EXISTS %s_st", ks);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (!getenv("CF_TEST_KEEP") && system(cmd)) {}
    live_teardown();
}

static int kill_kids(void **state) {
    (void)state;
    for (size_t i = 0; i < 8; i++)
        if (kids[i]) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
            kids[i] = 0;
        }
    return 0;
}

int main(void) {
    cf_log_set_level(CF_LOG_WARN);
    const struct CMUnitTest tests[] = {cmocka_unit_test_teardown(test_takeover_live, kill_kids),
                                       cmocka_unit_test_teardown(test_shared_config_live, kill_kids),
                                       cmocka_unit_test_teardown(test_store_down_live, kill_kids),
                                       cmocka_unit_test_teardown(test_refresh_unlocked_live, kill_kids)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
