/*
 * files.c - the `files` source: a directory tree on the local file system
 * (or a mounted bucket) read through the source framework.
 *
 * This file is all a source has to write: list (sorted relative paths after
 * a key), open (a cf_reader), the offset key ({"path": relative path}) and
 * an optional wait for changes (inotify on every directory of the tree, so a
 * new file is seen at once; the framework's periodic listing is the
 * fallback when inotify is unavailable or its watch limit is reached).
 *
 * A file modified less than files.min.age.ms ago may still be being written:
 * the listing stops before it (it keeps key order, so nothing is skipped) and
 * takes it up on a later listing.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/buf.h"
#include "cdcflow/connector.h"
#include "cdcflow/log.h"
#include "cdcflow/source.h"

#define COMP "files"

typedef struct files_src {
    char *root;
    int64_t min_age_ms;
    int ino;        /* inotify fd or -1 */
    bool held_back; /* the last listing stopped before a file too young */
} files_src;

typedef struct path_list {
    char **v;
    size_t n, cap;
} path_list;

static void walk(files_src *s, const char *rel, path_list *out, int depth) {
    if (depth > 64) return;
    char *dir = rel[0] ? cf_xstrdup(rel) : NULL;
    cf_buf abs = CF_BUF_INIT;
    cf_buf_printf(&abs, "%s%s%s", s->root, rel[0] ? "/" : "", rel);
    if (s->ino >= 0) inotify_add_watch(s->ino, abs.data, IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE);
    DIR *d = opendir(abs.data);
    if (!d) {
        cf_buf_free(&abs);
        free(dir);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue; /* hidden and temporary files (".x.tmp") are not objects */
        cf_buf child = CF_BUF_INIT;
        cf_buf_printf(&child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        cf_buf cabs = CF_BUF_INIT;
        cf_buf_printf(&cabs, "%s/%s", s->root, child.data);
        struct stat st;
        if (stat(cabs.data, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                walk(s, child.data, out, depth + 1);
            } else if (S_ISREG(st.st_mode)) {
                if (out->n == out->cap) out->v = cf_xrealloc(out->v, (out->cap = out->cap ? out->cap * 2 : 64) * sizeof(char *));
                out->v[out->n++] = cf_buf_detach(&child, NULL);
            }
        }
        cf_buf_free(&child);
        cf_buf_free(&cabs);
    }
    closedir(d);
    cf_buf_free(&abs);
    free(dir);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static cf_code files_list(void *self, const char *after, size_t max, cf_native_info **items, size_t *n, cf_err *err) {
    files_src *s = self;
    struct stat rst;
    if (stat(s->root, &rst) != 0 || !S_ISDIR(rst.st_mode)) {
        cf_err_set(err, CF_ERR_IO, "files.path \"%s\" is not a readable directory", s->root);
        cf_err_detail(err, "%s", strerror(errno));
        return CF_ERR_IO;
    }
    path_list pl = {0};
    walk(s, "", &pl, 0);
    if (pl.n) qsort(pl.v, pl.n, sizeof(char *), cmp_str); /* an empty tree has no array: qsort(NULL) is undefined */
    *items = cf_xcalloc(max ? max : 1, sizeof(cf_native_info));
    *n = 0;
    int64_t now = wall_ms();
    size_t i = 0;
    s->held_back = false;
    for (; i < pl.n && *n < max; i++) {
        if (after && strcmp(pl.v[i], after) <= 0) continue;
        cf_buf abs = CF_BUF_INIT;
        cf_buf_printf(&abs, "%s/%s", s->root, pl.v[i]);
        struct stat st;
        int ok = stat(abs.data, &st);
        cf_buf_free(&abs);
        if (ok != 0) continue; /* deleted since the walk */
        int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        if (s->min_age_ms > 0 && now - mtime < s->min_age_ms) { /* still being written: stop here, keep order */
            s->held_back = true;
            break;
        }
        (*items)[*n].key = pl.v[i];
        (*items)[*n].size = (int64_t)st.st_size;
        (*items)[*n].mtime_ms = mtime;
        pl.v[i] = NULL;
        (*n)++;
    }
    for (size_t j = 0; j < pl.n; j++) free(pl.v[j]);
    free(pl.v);
    return CF_OK;
}

static cf_code files_open(void *self, const cf_native_info *info, cf_compression c, cf_reader **out, cf_err *err) {
    files_src *s = self;
    cf_buf abs = CF_BUF_INIT;
    cf_buf_printf(&abs, "%s/%s", s->root, info->key);
    cf_code rc = cf_reader_open_file(abs.data, c, out, err);
    cf_buf_free(&abs);
    return rc;
}

static cf_value *files_partition_map(void *self, const char *key) {
    (void)self;
    cf_value *m = cf_value_map();
    cf_value_map_put(m, cf_value_string("path"), cf_value_string(key));
    return m;
}

static bool files_wait(void *self, int timeout_ms) {
    files_src *s = self;
    struct pollfd p = {s->ino, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) > 0) {
        char buf[8192];
        while (read(s->ino, buf, sizeof buf) > 0) {
        } /* drain: the listing finds what changed */
        if (s->min_age_ms > 0) { /* let a file that just appeared age */
            struct timespec ts = {s->min_age_ms / 1000, (long)(s->min_age_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
        }
        return true;
    }
    return false;
}

static bool files_held_back(void *self) { return ((files_src *)self)->held_back; }

static void files_destroy(void *self) {
    files_src *s = self;
    if (s->ino >= 0) close(s->ino);
    free(s->root);
    free(s);
}

static const cf_native_ops files_ops = {
    .kind = "files",
    .list = files_list,
    .open = files_open,
    .partition_map = files_partition_map,
    .wait_for_change = files_wait,
    .destroy = files_destroy,
    .held_back = files_held_back,
};

/* Without inotify: no change notices, so the task lists the tree from the
 * beginning after each idle backoff (poll.backoff.*). */
static const cf_native_ops files_ops_listing = {
    .kind = "files",
    .list = files_list,
    .open = files_open,
    .partition_map = files_partition_map,
    .destroy = files_destroy,
    .held_back = files_held_back,
};

static cf_code files_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    files_src *s = cf_xcalloc(1, sizeof *s);
    const char *root = cf_config_string(cfg, "files.path");
    size_t len = strlen(root);
    while (len > 1 && root[len - 1] == '/') len--;
    s->root = cf_xstrndup(root, len);
    s->min_age_ms = cf_config_long(cfg, "files.min.age.ms");
    s->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (s->ino < 0) CF_WARN(COMP, "inotify unavailable (%s): new files are found by periodic listing", strerror(errno));
    struct stat st;
    if (stat(s->root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cf_err_set(err, CF_ERR_CONFIG, "files.path \"%s\" is not a directory", s->root);
        cf_err_hint(err, "Create the directory or fix files.path; it is read recursively.");
        files_destroy(s);
        return CF_ERR_CONFIG;
    }
    cf_source_task *t;
    cf_code rc = cf_source_task_new(cfg, ctx, s, s->ino >= 0 ? &files_ops : &files_ops_listing, &t, err);
    if (rc) return rc;
    *task = t;
    return CF_OK;
}

static const cf_cfg_def files_defs[] = {
    {"files.path", CF_CFG_STRING, CF_CFG_REQUIRED, false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Files",
     "Root folder; every regular file below it (hidden files excepted) whose relative path matches "
     "`file.name.template` is an object."},
    {"files.min.age.ms", CF_CFG_LONG, "500", false, NULL, true, 0, 86400000, NULL, CF_IMPORTANCE_LOW, "Files",
     "A file modified more recently than this may still be being written and is taken up later. Writers that "
     "create files atomically (write to a hidden temporary name, then rename) can set 0."},
    CF_SOURCE_FRAMEWORK_DEFS
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

const cf_cfg_table cf_files_source_table = {
    "files source",
    "`files` source",
    "Reads a directory tree (local or a mounted bucket) into Kafka records: `\"connector.class\": \"files\"`. "
    "Finished files are marked done in their offsets and never read again after a restart; a half-read file "
    "resumes at its byte position; a file that changed (size or modification time) is read again from the start "
    "and counted, so its earlier records may appear twice.",
    files_defs,
    NULL,
};

static const char *const files_aliases[] = {"FilesSource", NULL};

const cf_connector_plugin cf_files_source_plugin = {
    .name = "files",
    .aliases = files_aliases,
    .kind = CF_CONNECTOR_SOURCE,
    .description = "Files in a directory tree (CSV, JSON lines, bytes; gzip, snappy, zstd) to records",
    .version = "0.1.0",
    .config = &cf_files_source_table,
    .u.source = {.start = files_start, .poll = cf_source_task_poll, .stop = cf_source_task_stop},
};
