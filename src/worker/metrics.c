/*
 * metrics.c - the worker's metrics in the Prometheus text format 0.0.4:
 * per task records, bytes, errors, commits, lag; the converters' Schema
 * Registry status; the process's CPU, memory and file descriptors under the
 * names every Prometheus client library uses (process_*), so dashboards made
 * for JVM or Go exporters show ours.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cdcflow/log.h"
#include "worker_state.h"

static void escape_label(cf_buf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') cf_buf_append_byte(b, '\\'), cf_buf_append_byte(b, (uint8_t)*s);
        else if (*s == '\n') cf_buf_append_str(b, "\\n");
        else cf_buf_append_byte(b, (uint8_t)*s);
    }
}

typedef struct mdef {
    const char *name, *type, *help;
    size_t off; /* offset in metrics */
    bool is_seconds; /* microseconds -> seconds */
} mdef;

#define MOFF(f) offsetof(metrics, f)
static const mdef mdefs[] = {
    {"cdcflow_task_records_in_total", "counter", "Records polled from the source or read from the transport.",
     MOFF(records_in), false},
    {"cdcflow_task_records_out_total", "counter",
     "Records acknowledged by the transport (sources) or put into the sink (sinks).", MOFF(records_out), false},
    {"cdcflow_task_bytes_in_total", "counter", "Key and value bytes read (sinks).", MOFF(bytes_in), false},
    {"cdcflow_task_bytes_out_total", "counter", "Key and value bytes sent (sources).", MOFF(bytes_out), false},
    {"cdcflow_task_errors_total", "counter", "Records that failed in a stage (converter, transform, put).",
     MOFF(errors), false},
    {"cdcflow_task_records_skipped_total", "counter",
     "Records skipped by errors.tolerance=all.", MOFF(skipped), false},
    {"cdcflow_task_deadletterqueue_produce_total", "counter", "Records written to the dead letter queue.",
     MOFF(dlq), false},
    {"cdcflow_task_offset_commits_total", "counter", "Successful offset commits.", MOFF(commits), false},
    {"cdcflow_task_offset_commit_failures_total", "counter", "Failed offset commits.", MOFF(commit_failures),
     false},
    {"cdcflow_task_offset_commit_seconds_total", "counter", "Time spent committing offsets (flush included).",
     MOFF(commit_us_sum), true},
    {"cdcflow_task_offset_commit_last_seconds", "gauge", "Duration of the last offset commit.",
     MOFF(commit_us_last), true},
    {"cdcflow_task_lag_records", "gauge",
     "Sources: records sent but not yet acknowledged. Sinks: records behind the end of the assigned partitions "
     "(Kafka) or waiting in the queue (direct).", MOFF(lag),
     false},
};

/* Schema Registry clients of the converters (avro), one series per task
 * and converter (key/value); nothing at all when no converter has one. */
typedef struct srsample {
    conn *c;
    int task, role;
    cf_sr_status st;
} srsample;

static void sr_labels(cf_buf *out, const char *metric, const srsample *x) {
    cf_buf_printf(out, "%s{connector=\"", metric);
    escape_label(out, x->c->name);
    cf_buf_printf(out, "\",task=\"%d\",converter=\"%s\"} ", x->task, cf_conv_roles[x->role]);
}

static void metrics_sr(cf_buf *out, conn **cs, size_t n) {
    size_t ns = 0, cap = 0;
    srsample *xs = NULL;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < cs[i]->ntasks; j++)
            for (int k = 0; k < 2; k++) {
                srsample x = {cs[i], j, k, {0}};
                if (!cf_task_sr_status(cs[i]->tasks[j], k, &x.st)) continue;
                if (ns == cap) xs = cf_xrealloc(xs, (cap = cap ? cap * 2 : 8) * sizeof *xs);
                xs[ns++] = x;
            }
    if (!ns) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    static const struct {
        const char *name, *type, *help;
    } defs[] = {
        {"cdcflow_schema_registry_reachable", "gauge",
         "1 while the converter's Schema Registry client reaches the registry (its last attempt succeeded, or "
         "none was made yet), 0 while it is unreachable (calls that need the registry fail fast)."},
        {"cdcflow_schema_registry_requests_total", "counter", "HTTP requests made to the Schema Registry."},
        {"cdcflow_schema_registry_errors_total", "counter",
         "Failed attempts to reach the Schema Registry (transport errors and HTTP 5xx)."},
        {"cdcflow_schema_registry_cache_hits_total", "counter", "Schema lookups answered from the client's cache."},
        {"cdcflow_schema_registry_last_success_age_seconds", "gauge",
         "Seconds since the last successful registry request (absent: none yet)."},
        {"cdcflow_schema_registry_last_error_age_seconds", "gauge",
         "Seconds since the last failed registry attempt (absent: none yet)."},
    };
    for (size_t d = 0; d < sizeof defs / sizeof *defs; d++) {
        cf_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", defs[d].name, defs[d].help, defs[d].name, defs[d].type);
        for (size_t i = 0; i < ns; i++) {
            const cf_sr_status *st = &xs[i].st;
            int64_t at = d == 4 ? st->last_ok_ms : d == 5 ? st->last_error_ms : 0;
            if ((d == 4 || d == 5) && at <= 0) continue;
            sr_labels(out, defs[d].name, &xs[i]);
            switch (d) {
            case 0: cf_buf_printf(out, "%d\n", st->reachable ? 1 : 0); break;
            case 1: cf_buf_printf(out, "%llu\n", (unsigned long long)st->requests); break;
            case 2: cf_buf_printf(out, "%llu\n", (unsigned long long)st->errors); break;
            case 3: cf_buf_printf(out, "%llu\n", (unsigned long long)st->cache_hits); break;
            default: cf_buf_printf(out, "%.3f\n", now_ms > at ? (double)(now_ms - at) / 1e3 : 0.0); break;
            }
        }
    }
    free(xs);
}

/* The source plugins' own metrics, family by family, plugin by plugin, so
 * that every family's samples stay together. */
static void metrics_plugins(cf_buf *out, conn **cs, size_t n) {
    cf_source_metrics_fn fns[16];
    size_t nf = 0;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < cs[i]->ntasks; j++) {
            task *t = cs[i]->tasks[j];
            pthread_mutex_lock(&t->mu);
            cf_source_metrics_fn fn = t->mfn;
            pthread_mutex_unlock(&t->mu);
            size_t k = 0;
            while (k < nf && fns[k] != fn) k++;
            if (fn && k == nf && nf < 16) fns[nf++] = fn;
        }
    cf_buf labels = CF_BUF_INIT;
    for (size_t k = 0; k < nf; k++)
        for (int f = 0;; f++) {
            bool any = false;
            for (size_t i = 0; i < n; i++)
                for (int j = 0; j < cs[i]->ntasks; j++) {
                    task *t = cs[i]->tasks[j];
                    cf_buf_reset(&labels);
                    cf_buf_append_str(&labels, "connector=\"");
                    escape_label(&labels, cs[i]->name);
                    cf_buf_printf(&labels, "\",task=\"%d\"", j);
                    pthread_mutex_lock(&t->mu);
                    if (t->mfn == fns[k] && t->mfn(t->marg, f, labels.data, !any, out)) any = true;
                    pthread_mutex_unlock(&t->mu);
                }
            if (!any) break;
        }
    cf_buf_free(&labels);
}

/* process_* as Prometheus' client libraries define them, from /proc/self
 * (Linux; elsewhere nothing is printed rather than a wrong figure). */
static void metrics_process(cf_buf *out) {
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return;
    char line[1024];
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    /* the command name is in parentheses and may hold spaces: fields go on
     * after the last ')' (field 3, state, is the first after it) */
    char *p = strrchr(line, ')');
    unsigned long long utime = 0, stime = 0, start = 0, vsize = 0;
    long long rss = 0;
    if (!p || sscanf(p + 2,
                     "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
                     &utime, &stime, &start, &vsize, &rss) != 5)
        return;
    double tck = (double)sysconf(_SC_CLK_TCK), page = (double)sysconf(_SC_PAGESIZE);
    double btime = 0;
    FILE *st = fopen("/proc/stat", "r");
    if (st) {
        while (fgets(line, sizeof line, st))
            if (!strncmp(line, "btime ", 6)) btime = strtod(line + 6, NULL);
        fclose(st);
    }
    long fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') fds++;
        closedir(d);
        fds--; /* the descriptor opendir holds */
    }
    struct rlimit rl = {0};
    getrlimit(RLIMIT_NOFILE, &rl);
    cf_buf_printf(out,
                  "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                  "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n"
                  "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                  "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %.0f\n"
                  "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                  "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %llu\n"
                  "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
                  "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n"
                  "# HELP process_open_fds Number of open file descriptors.\n"
                  "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n"
                  "# HELP process_max_fds Maximum number of open file descriptors.\n"
                  "# TYPE process_max_fds gauge\nprocess_max_fds %.0f\n",
                  (double)(utime + stime) / tck, (double)rss * page, vsize, btime + (double)start / tck, fds,
                  rl.rlim_cur == RLIM_INFINITY ? -1.0 : (double)rl.rlim_cur);
}

void cf_worker_metrics_text(cf_worker *w, cf_buf *out) {
    size_t n;
    conn **cs = cf_conns_snapshot(w, &n);
    for (size_t d = 0; d < sizeof mdefs / sizeof *mdefs; d++) {
        cf_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", mdefs[d].name, mdefs[d].help, mdefs[d].name,
                      mdefs[d].type);
        for (size_t i = 0; i < n; i++)
            for (int j = 0; j < cs[i]->ntasks; j++) {
                const char *base = (const char *)&cs[i]->tasks[j]->m;
                uint64_t v = atomic_load((atomic_uint_fast64_t *)(base + mdefs[d].off));
                cf_buf_printf(out, "%s{connector=\"", mdefs[d].name);
                escape_label(out, cs[i]->name);
                cf_buf_printf(out, "\",task=\"%d\",type=\"%s\"} ", j, cs[i]->is_sink ? "sink" : "source");
                if (mdefs[d].is_seconds) cf_buf_printf(out, "%.6f\n", (double)v / 1e6);
                else cf_buf_printf(out, "%llu\n", (unsigned long long)v);
            }
    }
    cf_buf_printf(out, "# HELP cdcflow_task_state Task state (1 for the current state).\n"
                       "# TYPE cdcflow_task_state gauge\n");
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < cs[i]->ntasks; j++) {
            cf_buf_append_str(out, "cdcflow_task_state{connector=\"");
            escape_label(out, cs[i]->name);
            cf_buf_printf(out, "\",task=\"%d\",state=\"%s\"} 1\n", j,
                          cf_state_name((cf_state)atomic_load(&cs[i]->tasks[j]->state)));
        }
    /* Connect's consumer has records-lag per topic partition: the same here */
    cf_buf_printf(out, "# HELP cdcflow_task_partition_lag_records Sinks reading Kafka: records behind the end of "
                       "each assigned partition (high watermark of the last fetch minus the position).\n"
                       "# TYPE cdcflow_task_partition_lag_records gauge\n");
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < cs[i]->ntasks; j++) {
            task *t = cs[i]->tasks[j];
            pthread_mutex_lock(&t->mu);
            for (size_t k = 0; k < t->nlag_parts; k++) {
                cf_buf_append_str(out, "cdcflow_task_partition_lag_records{connector=\"");
                escape_label(out, cs[i]->name);
                cf_buf_printf(out, "\",task=\"%d\",topic=\"", j);
                escape_label(out, t->lag_parts[k].topic);
                cf_buf_printf(out, "\",partition=\"%d\"} %lld\n", (int)t->lag_parts[k].partition,
                              (long long)t->lag_parts[k].lag);
            }
            pthread_mutex_unlock(&t->mu);
        }
    metrics_sr(out, cs, n);
    metrics_plugins(out, cs, n);
    cf_buf_printf(out,
                  "# HELP cdcflow_worker_errors_total Records reported under errors.tolerance=all.\n"
                  "# TYPE cdcflow_worker_errors_total counter\ncdcflow_worker_errors_total %llu\n"
                  "# HELP cdcflow_worker_connectors Connectors in this worker.\n"
                  "# TYPE cdcflow_worker_connectors gauge\ncdcflow_worker_connectors %zu\n",
                  (unsigned long long)atomic_load(&w->errors), n);
    metrics_process(out);
    for (size_t i = 0; i < n; i++) cf_conn_unref(cs[i]);
    free(cs);
}
