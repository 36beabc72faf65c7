/*
 * bench_extract.c - CSV and JSON lines extraction, file to records in memory.
 *
 *   bench_extract [MB]      (default 256; the flat-memory check uses 2048)
 *
 * Writes a temporary file of ~1 KB lines in each format, then extracts every
 * record. Prints MB/s and records/s per CPU second (thread CPU time, so the
 * figure is per core and not skewed by other load), the ratio against a baseline that only
 * finds line ends (memchr over the same file through the same reader: the
 * I/O floor), and the growth of resident memory while reading (must stay
 * flat: within 10 MB whatever the file size).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/source_extract.h"

/* CPU time of this thread: the figure is "per core", and CPU time does not
 * count the time the machine gave to other processes. */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void write_file(const char *path, int csv, size_t mb) {
    FILE *f = fopen(path, "w");
    char line[1100];
    size_t total = 0, i = 0;
    if (csv) fputs("id,name,email,city,note,amount,flag,ts,payload,tail\n", f);
    while (total < mb * 1024 * 1024) {
        int n;
        if (csv)
            n = snprintf(line, sizeof line, "%zu,name %zu,user%zu@example.com,\"Zurich, CH\",\"said \"\"hi\"\"\",%zu.25,true,2026-11-29T18:00:00Z,%.*s,end\n",
                         i, i, i, i * 7, 850, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        else
            n = snprintf(line, sizeof line, "{\"id\":%zu,\"name\":\"name %zu\",\"email\":\"user%zu@example.com\",\"city\":\"Zurich\",\"amount\":%zu.25,\"flag\":true,\"tags\":[\"a\",\"b\"],\"payload\":\"%.*s\"}\n",
                         i, i, i, i * 7, 860, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        fwrite(line, 1, (size_t)n, f);
        total += (size_t)n;
        i++;
    }
    fclose(f);
}

static double baseline(const char *path, size_t *bytes) {
    cf_reader *r;
    cf_reader_open_file(path, CF_COMPRESSION_NONE, &r, NULL);
    static char buf[1 << 18];
    size_t n, lines = 0;
    *bytes = 0;
    double t0 = now();
    while (cf_reader_read(r, buf, sizeof buf, &n, NULL) == CF_OK && n) {
        for (char *p = buf; (p = memchr(p, '\n', (size_t)(buf + n - p))); p++) lines++;
        *bytes += n;
    }
    double t = now() - t0;
    cf_reader_close(r);
    if (lines == 0) fprintf(stderr, "no lines\n");
    return t;
}

static void run(const char *name, cf_input_format fmt, const char *path) {
    size_t bytes;
    double tb = baseline(path, &bytes);
    cf_reader *r;
    cf_reader_open_file(path, CF_COMPRESSION_NONE, &r, NULL);
    cf_extractor *x;
    cf_err err;
    if (cf_extractor_new(fmt, NULL, r, 0, 0, 0, &x, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        exit(1);
    }
    long rss0 = rss_kb(), rss_max = rss0;
    size_t recs = 0;
    double t0 = now();
    for (;;) {
        cf_schema *s;
        cf_value *v;
        cf_code rc = cf_extractor_next(x, &s, &v, NULL, &err);
        if (rc == CF_ERR_EOF) break;
        if (rc) {
            fprintf(stderr, "%s: %s (%s)\n", name, err.message, err.where);
            exit(1);
        }
        cf_value_destroy(v);
        cf_schema_unref(s);
        if ((++recs & 0xffff) == 0) {
            long rs = rss_kb();
            if (rs > rss_max) rss_max = rs;
        }
    }
    double t = now() - t0;
    cf_extractor_destroy(x);
    double mb = bytes / 1048576.0;
    printf("%-6s %8.1f MB  %8.1f MB/s  %10.0f records/s  baseline (line scan) %8.1f MB/s  ratio %.3f  RSS growth %ld KB\n",
           name, mb, mb / t, recs / t, mb / tb, tb / t, rss_max - rss0);
}

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 256;
    char csv[] = "/tmp/cf_bench_csv_XXXXXX", jsonl[] = "/tmp/cf_bench_jsonl_XXXXXX";
    close(mkstemp(csv));
    close(mkstemp(jsonl));
    write_file(csv, 1, mb);
    write_file(jsonl, 0, mb);
    run("csv", CF_FORMAT_CSV, csv);
    run("jsonl", CF_FORMAT_JSONL, jsonl);
    unlink(csv);
    unlink(jsonl);
    return 0;
}
