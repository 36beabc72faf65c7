/*
 * bench_extract.c - CSV, JSON lines and Avro container extraction, file to
 * records in memory.
 *
 *   bench_extract [MB] [csv|jsonl|avro ...]   throughput (default 256 MB, all formats)
 *   bench_extract --rss [MB]                  flat memory check (default 2048 MB)
 *
 * Throughput: writes a temporary file of ~1 KB lines in each format, then
 * extracts every record. Prints MB/s and records/s per CPU second (thread CPU
 * time, so the figure is per core and not skewed by other load), the ratio
 * against a baseline that only finds line ends (memchr over the same file
 * through the same reader: the I/O floor), and the growth of resident memory
 * while reading.
 *
 * --rss: the "resident memory flat (within 10 MB) while reading a
 * 2 GB file". For CSV and then JSON lines (one file at a time, so /tmp needs
 * MB once), writes the file, samples the process's resident set from
 * /proc/self/statm before the extractor exists (start), every 1024 records
 * while it streams the whole file (peak), and after it is destroyed (end),
 * then deletes the file. Exits 1 when peak - start exceeds 10 MB.
 *
 * Avro: the file is written by avro-c's own file writer (codecs null and
 * deflate, 64 KiB blocks) with the JSON lines' fields; the baseline is
 * avro-c's own file reader into its generic value (no Connect values), so
 * the ratio is what our framing, checks and the mapping to Connect cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <avro.h>

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

static double avro_baseline(const char *path, size_t *bytes);

/* Every record of x, dropped as it comes; the RSS is sampled every
 * (mask + 1) records into *peak, *pos is the position after the last record.
 * Exits on an extraction error. */
static size_t drain(const char *name, cf_extractor *x, size_t mask, long *peak, cf_extract_pos *pos) {
    size_t recs = 0;
    cf_err err;
    for (;;) {
        cf_schema *s;
        cf_value *v;
        cf_code rc = cf_extractor_next(x, &s, &v, pos, &err);
        if (rc == CF_ERR_EOF) return recs;
        if (rc) {
            fprintf(stderr, "%s: %s (%s)\n", name, err.message, err.where);
            exit(1);
        }
        cf_value_destroy(v);
        cf_schema_unref(s);
        if ((++recs & mask) == 0) {
            long rs = rss_kb();
            if (rs > *peak) *peak = rs;
        }
    }
}

static void run(const char *name, cf_input_format fmt, const char *path) {
    size_t bytes;
    double tb = fmt == CF_FORMAT_AVRO ? avro_baseline(path, &bytes) : baseline(path, &bytes);
    cf_reader *r;
    cf_reader_open_file(path, CF_COMPRESSION_NONE, &r, NULL);
    cf_extractor *x;
    cf_err err;
    if (cf_extractor_new(fmt, NULL, r, 0, 0, 0, &x, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        exit(1);
    }
    long rss0 = rss_kb(), rss_max = rss0;
    double t0 = now();
    cf_extract_pos pos = {0};
    size_t recs = drain(name, x, 0xffff, &rss_max, &pos);
    double t = now() - t0;
    cf_extractor_destroy(x);
    double mb = bytes / 1048576.0;
    printf("%-12s %8.1f MB  %8.1f MB/s  %10.0f records/s  baseline (%s) %8.1f MB/s  ratio %.3f  RSS growth %ld KB\n",
           name, mb, mb / t, recs / t, fmt == CF_FORMAT_AVRO ? "avro-c reader" : "line scan", mb / tb, tb / t,
           rss_max - rss0);
}

static const char avro_schema_json[] =
    "{\"type\":\"record\",\"name\":\"Row\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"name\",\"type\":\"string\"},{\"name\":\"email\",\"type\":\"string\"},"
    "{\"name\":\"city\",\"type\":[\"null\",\"string\"]},{\"name\":\"amount\",\"type\":\"double\"},"
    "{\"name\":\"flag\",\"type\":\"boolean\"},{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"items\":\"string\"}},"
    "{\"name\":\"payload\",\"type\":\"string\"}]}";

static void write_avro(const char *path, const char *codec, size_t mb) {
    avro_schema_t sch;
    if (avro_schema_from_json_length(avro_schema_json, sizeof avro_schema_json - 1, &sch)) {
        fprintf(stderr, "avro schema: %s\n", avro_strerror());
        exit(1);
    }
    unlink(path);
    avro_file_writer_t w;
    if (avro_file_writer_create_with_codec(path, sch, &w, codec, 64 * 1024)) {
        fprintf(stderr, "avro writer (%s): %s\n", codec, avro_strerror());
        exit(1);
    }
    avro_value_iface_t *iface = avro_generic_class_from_schema(sch);
    avro_value_t rec, f, br, el;
    avro_generic_value_new(iface, &rec);
    char name[64], email[64], payload[861];
    memset(payload, 'x', 860);
    payload[860] = 0;
    size_t total = 0;
    for (size_t i = 0; total < mb * 1024 * 1024; i++) {
        avro_value_reset(&rec);
        snprintf(name, sizeof name, "name %zu", i);
        snprintf(email, sizeof email, "user%zu@example.com", i);
        avro_value_get_by_name(&rec, "id", &f, NULL);
        avro_value_set_long(&f, (int64_t)i);
        avro_value_get_by_name(&rec, "name", &f, NULL);
        avro_value_set_string(&f, name);
        avro_value_get_by_name(&rec, "email", &f, NULL);
        avro_value_set_string(&f, email);
        avro_value_get_by_name(&rec, "city", &f, NULL);
        avro_value_set_branch(&f, 1, &br);
        avro_value_set_string(&br, "Zurich");
        avro_value_get_by_name(&rec, "amount", &f, NULL);
        avro_value_set_double(&f, i * 7 + 0.25);
        avro_value_get_by_name(&rec, "flag", &f, NULL);
        avro_value_set_boolean(&f, 1);
        avro_value_get_by_name(&rec, "tags", &f, NULL);
        avro_value_append(&f, &el, NULL);
        avro_value_set_string(&el, "a");
        avro_value_append(&f, &el, NULL);
        avro_value_set_string(&el, "b");
        avro_value_get_by_name(&rec, "payload", &f, NULL);
        avro_value_set_string(&f, payload);
        if (avro_file_writer_append_value(w, &rec)) {
            fprintf(stderr, "avro append: %s\n", avro_strerror());
            exit(1);
        }
        total += 960; /* about the JSON line's size */
    }
    avro_file_writer_close(w);
    avro_value_decref(&rec);
    avro_value_iface_decref(iface);
    avro_schema_decref(sch);
}

/* avro-c's own reader: its generic value, nothing of ours. */
static double avro_baseline(const char *path, size_t *bytes) {
    avro_file_reader_t r;
    if (avro_file_reader(path, &r)) {
        fprintf(stderr, "avro reader: %s\n", avro_strerror());
        exit(1);
    }
    avro_schema_t ws = avro_file_reader_get_writer_schema(r);
    avro_value_iface_t *iface = avro_generic_class_from_schema(ws);
    avro_value_t v;
    avro_generic_value_new(iface, &v);
    size_t n = 0;
    double t0 = now();
    while (avro_file_reader_read_value(r, &v) == 0) n++;
    double t = now() - t0;
    avro_value_decref(&v);
    avro_value_iface_decref(iface);
    avro_file_reader_close(r);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *bytes = (size_t)ftell(f);
    fclose(f);
    if (n == 0) fprintf(stderr, "no avro records\n");
    return t;
}

/* Stream the whole file through the extractor, sampling RSS; returns 0 when
 * the peak stays within 10 MB of the start. */
static int rss_check(const char *name, cf_input_format fmt, const char *path) {
    long start = rss_kb(), peak = start;
    cf_reader *r;
    cf_err err;
    if (cf_reader_open_file(path, CF_COMPRESSION_NONE, &r, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        exit(1);
    }
    cf_extractor *x;
    if (cf_extractor_new(fmt, NULL, r, 0, 0, 0, &x, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        exit(1);
    }
    long opened = rss_kb();
    if (opened > peak) peak = opened;
    double t0 = now();
    cf_extract_pos pos = {0};
    size_t recs = drain(name, x, 1023, &peak, &pos);
    double t = now() - t0;
    long before_destroy = rss_kb();
    if (before_destroy > peak) peak = before_destroy;
    cf_extractor_destroy(x);
    long end = rss_kb();
    int ok = peak - start <= 10 * 1024;
    printf("%-6s %8.1f MB read, %zu records, %.1f MB/s per core; RSS start %ld KB, after open %ld KB, "
           "peak %ld KB, end %ld KB: growth %ld KB (limit 10240 KB) %s\n",
           name, pos.end / 1048576.0, recs, pos.end / 1048576.0 / t, start, opened, peak, end, peak - start,
           ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}

/* the line formats, made by write_file (csv 1: CSV, 0: JSON lines) */
static const struct {
    const char *name;
    cf_input_format fmt;
    int csv;
} text_formats[] = {{"csv", CF_FORMAT_CSV, 1}, {"jsonl", CF_FORMAT_JSONL, 0}};

static int rss_mode(size_t mb) {
    int failed = 0;
    for (int k = 0; k < 2; k++) {
        char path[] = "/tmp/cf_bench_rss_XXXXXX";
        close(mkstemp(path));
        write_file(path, text_formats[k].csv, mb);
        failed |= rss_check(text_formats[k].name, text_formats[k].fmt, path);
        unlink(path);
    }
    return failed;
}

static int wanted(int argc, char **argv, const char *fmt) {
    if (argc <= 2) return 1;
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], fmt) == 0) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--rss") == 0) return rss_mode(argc > 2 ? (size_t)atol(argv[2]) : 2048);
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 256;
    for (int k = 0; k < 2; k++) {
        if (!wanted(argc, argv, text_formats[k].name)) continue;
        char path[] = "/tmp/cf_bench_text_XXXXXX";
        close(mkstemp(path));
        write_file(path, text_formats[k].csv, mb);
        run(text_formats[k].name, text_formats[k].fmt, path);
        unlink(path);
    }
    if (!wanted(argc, argv, "avro")) return 0;
    char avro[] = "/tmp/cf_bench_avro_XXXXXX";
    close(mkstemp(avro));
    static const char *const avro_codecs[] = {"null", "deflate"};
    for (int k = 0; k < 2; k++) {
        char label[32];
        write_avro(avro, avro_codecs[k], mb);
        snprintf(label, sizeof label, "avro-%s", avro_codecs[k]);
        run(label, CF_FORMAT_AVRO, avro);
    }
    unlink(avro);
    return 0;
}
