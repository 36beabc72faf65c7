/*
 * cdcflow/source.h - the source framework: a new source is one file.
 *
 * The design is Aiven's source framework (native key, native object, native
 * info, offset manager, evolving record, extractor, polling queue), with the
 * complaints its users raised fixed:
 *   - finished objects carry a done mark (with size and modification time)
 *     in their offset entry: a restart does not read them again;
 *   - a half-read object resumes from its byte position (seek), not by
 *     re-reading and skipping records;
 *   - extractor errors obey errors.tolerance (stop, or log / dead letter
 *     queue and continue); an object is never cut short silently;
 *   - file.name.template matches the whole object name, never a part of it;
 *   - a changed object (size or modification time differs from its offset
 *     entry) is read again from the start, counted and logged;
 *   - the poller backs off when idle (initial, max, jitter): no busy loop.
 *
 * WHAT A SOURCE IMPLEMENTS (cf_native_ops): list objects in key order after
 * a key, open an object as a cf_reader, and name the offset key (source
 * partition map) of an object. Everything else - extraction, offsets,
 * distribution over tasks, queueing, error routing - is the framework's
 * (cf_source_task). See src/sources/files/files.c for a complete source.
 *
 * OFFSETS: the offset key of an object is the map its source returns (for
 * files {"path": "<relative path>"}); the offset entry (source offset map) is
 *   {"recordCount": n, "position": byte, "line": l, "size": s,
 *    "mtime": ms, "etag": "...", "done": bool}   ("etag" only when the source has one)
 * (integers are stored as longs, as Kafka returns them). For input.format=avro
 * "position" is the byte offset of a block and "line" 1 + the datums of it
 * already read (see AVRO POSITIONS in cdcflow/source_extract.h).
 */
#ifndef CDCFLOW_SOURCE_H
#define CDCFLOW_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "cdcflow/config.h"
#include "cdcflow/connector.h"
#include "cdcflow/error.h"
#include "cdcflow/record.h"
#include "cdcflow/source_extract.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- file.name.template ---- */

typedef struct cf_name_template cf_name_template;

typedef struct cf_name_match {
    bool has_topic, has_partition, has_start_offset;
    char topic[250];
    int32_t partition;
    int64_t start_offset;
} cf_name_match;

/* Placeholders {{topic}} ([a-zA-Z0-9._-]+), {{partition}} (digits),
 * {{start_offset}} (digits), {{timestamp}} (digits); the rest of the
 * template is a POSIX extended regular expression (so ".*" alone is a valid
 * template, as in Aiven's connectors). The whole name must match. */
cf_code cf_name_template_new(const char *tmpl, cf_name_template **out, cf_err *err);
bool cf_name_template_match(const cf_name_template *t, const char *name, cf_name_match *m);
void cf_name_template_destroy(cf_name_template *t);

/* ---- offset entries ---- */

typedef struct cf_offset_entry {
    int64_t record_count; /* records of the object emitted so far */
    int64_t position;     /* byte where the next record starts */
    int64_t line;         /* line where the next record starts (1-based) */
    int64_t size;         /* object size when it was read */
    int64_t mtime_ms;     /* object modification time when it was read */
    char etag[128];       /* object version tag when it was read ("" if none) */
    bool done;            /* every record of the object was emitted */
} cf_offset_entry;

cf_value *cf_offset_entry_to_map(const cf_offset_entry *e); /* new MAP value */
/* Missing keys read as 0/false; a non-map or wrongly typed value is an error. */
cf_code cf_offset_entry_from_map(const cf_value *map, cf_offset_entry *e, cf_err *err);

/* ---- native sources ---- */

typedef struct cf_native_info {
    char *key;        /* native key: compared with strcmp (keys are listed in that order) */
    int64_t size;     /* -1 if unknown */
    int64_t mtime_ms; /* -1 if unknown */
    char *etag;       /* version tag (object stores' ETag), NULL if none; a change means a new object */
} cf_native_info;

void cf_native_infos_free(cf_native_info *items, size_t n);

/* For sources whose objects are not byte streams (rows of a query, messages
 * of a queue): they yield key and value records themselves. */
typedef struct cf_native_records_ops {
    /* Next record of the object: CF_OK, CF_ERR_EOF at its end, CF_ERR_INVALID
     * for a bad record (reported through errors.tolerance, then next is called
     * again), anything else ends the object. pos->end / pos->end_line /
     * pos->index are stored in the offset entry, and given back on resume. */
    cf_code (*next)(void *state, cf_schema **key_schema, cf_value **key, cf_schema **value_schema, cf_value **value,
                    cf_extract_pos *pos, cf_err *err);
    void (*close)(void *state);
} cf_native_records_ops;

typedef struct cf_native_ops {
    const char *kind; /* for logs: "files" */
    /* Objects with key > after (after NULL: all), ascending by strcmp, at
     * most `max` of them. *items is malloc'd (cf_native_infos_free). */
    cf_code (*list)(void *self, const char *after, size_t max, cf_native_info **items, size_t *n, cf_err *err);
    cf_code (*open)(void *self, const cf_native_info *info, cf_compression c, cf_reader **out, cf_err *err);
    /* Offset key of an object: a new MAP value of string -> string/int/long
     * (INT32/INT64). The task checks it when it starts an object: any other
     * key or value type is a bad record of that object, which is not read. */
    cf_value *(*partition_map)(void *self, const char *key);
    /* Block up to timeout_ms for a sign that new objects may exist (inotify
     * for files). Returns true if something changed: the next listing then
     * starts from the beginning, since a new name may sort before the last
     * one read. The task calls it in slices of at most 100 ms (so that a
     * stop is seen at once) until the backoff has passed. NULL: the poller
     * sleeps its backoff, then lists from the beginning again (a new name
     * may sort anywhere; finished objects are skipped by their done mark). */
    bool (*wait_for_change)(void *self, int timeout_ms);
    void (*destroy)(void *self);
    /* Optional, instead of open + input.format: open the object as records,
     * resuming after `resume` (record_count, position, line). */
    cf_code (*open_records)(void *self, const cf_native_info *info, const cf_offset_entry *resume, void **state,
                            const cf_native_records_ops **rops, cf_err *err);
    /* Optional last evolution, after the task's steps: change the record
     * (topic, key, headers...), or set *keep = false to drop it (its offset
     * still advances). */
    cf_code (*last_evolution)(void *self, const cf_native_info *info, cf_record *rec, bool *keep, cf_err *err);
    /* Optional: the last listing stopped before objects that exist but may
     * not be read yet (files: younger than files.min.age.ms). A bounded run
     * waits for them instead of ending. NULL: never. */
    bool (*held_back)(void *self);
} cf_native_ops;

/* The evolving record: a pipeline of map/filter steps from the native
 * object's record to the Kafka record, run in order on the poller thread
 * before the source's last evolution. A step may change rec, or set
 * *keep = false to filter it out; an error is a bad record (errors.tolerance). */
typedef cf_code (*cf_source_step_fn)(void *step_ctx, const cf_native_info *info, cf_record *rec, bool *keep,
                                     cf_err *err);

/* Settings every framework source has (Aiven's names): topic,
 * input.format, file.name.template, file.compression.type,
 * max.poll.records, distribution.type, poll backoff, extractor.*.
 * A source's own table starts with its own definitions and ends with
 * CF_SOURCE_FRAMEWORK_DEFS (then the NULL entry), so one table validates and
 * documents the whole connector. */
extern const char *const cf_source_formats[];
extern const char *const cf_source_compressions[];
extern const char *const cf_source_distributions[];
#define CF_SOURCE_FRAMEWORK_DEFS \
    {"topic", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Source", \
     "Topic for every record. When unset, the topic comes from `{{topic}}` in `file.name.template`."}, \
    {"input.format", CF_CFG_STRING, "bytes", false, cf_source_formats, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Source", \
     "How an object's bytes become records: `bytes` (fixed-size chunks), `csv` (RFC 4180, one STRUCT of " \
     "optional strings per row), `jsonl` (one JSON value per line, as Kafka's JsonConverter with schemas off), " \
     "`envelope` (record files as `kcat -C -J` prints them: key, value, headers, timestamp and partition are " \
     "restored exactly; use the `bytes` key and value converters), `avro` (Avro object container files, codecs " \
     "null, deflate, snappy, zstandard: one record per datum, its value mapped from the writer schema as " \
     "Confluent's AvroData does; a damaged block is reported and skipped up to the next sync marker)."}, \
    {"file.name.template", CF_CFG_STRING, ".*", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Source", \
     "Which object names are read, and what they say: `{{topic}}`, `{{partition}}`, `{{start_offset}}`, " \
     "`{{timestamp}}` placeholders; the rest is a POSIX extended regular expression. The WHOLE name must match " \
     "(Aiven's connectors match any part of it)."}, \
    {"file.compression.type", CF_CFG_STRING, "none", false, cf_source_compressions, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, \
     "Source", "Compression of the objects: `none`, `gzip`, `snappy` (snappy-java stream or framing format), `zstd`."}, \
    {"max.poll.records", CF_CFG_INT, "500", false, NULL, true, 1, 1000000, NULL, CF_IMPORTANCE_MEDIUM, "Source", \
     "Most records returned by one poll."}, \
    {"distribution.type", CF_CFG_STRING, "object_hash", false, cf_source_distributions, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, \
     "Source", \
     "How `tasks.max` tasks share the objects so that none is read twice: `object_hash` (hash of the object " \
     "name) or `partition` (`{{partition}}` modulo the task count; objects without one are skipped with a warning)."}, \
    {"poll.backoff.initial.ms", CF_CFG_LONG, "100", false, NULL, true, 1, 3600000, NULL, CF_IMPORTANCE_LOW, "Source", \
     "First wait when a listing finds nothing new; doubles up to `poll.backoff.max.ms`."}, \
    {"poll.backoff.max.ms", CF_CFG_LONG, "10000", false, NULL, true, 1, 3600000, NULL, CF_IMPORTANCE_LOW, "Source", \
     "Longest wait between listings when idle."}, \
    {"poll.backoff.jitter", CF_CFG_DOUBLE, "0.2", false, NULL, true, 0, 1, NULL, CF_IMPORTANCE_LOW, "Source", \
     "Random share added to or taken from each wait, so that many tasks do not list in step."}, \
    {"listing.full.interval.ms", CF_CFG_LONG, "60000", false, NULL, true, 0, 86400000, NULL, CF_IMPORTANCE_LOW, \
     "Source", \
     "Listings normally start after the last object read; every this many ms the listing starts from the " \
     "beginning again, to find objects whose names sort before it (finished ones are skipped by their done mark)."}, \
    {"bounded", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "Source", \
     "Batch load: read the objects the listing holds (every page of it; objects held back as too young are " \
     "waited for), then end the task (FINISHED): `cdcflow run` exits when its inputs end. Objects already done " \
     "by their stored offsets are skipped, so a second bounded run reads only what is new; a damaged object is " \
     "tried once and reported (errors.tolerance). false: keep watching for new objects."}, \
    {"queue.max.records", CF_CFG_INT, "2000", false, NULL, true, 1, 10000000, NULL, CF_IMPORTANCE_LOW, "Source", \
     "Bound of the queue between the poller thread and poll()."}, \
    {"extractor.buffer", CF_CFG_INT, "4096", false, NULL, true, 1, 67108864, NULL, CF_IMPORTANCE_LOW, "Source", \
     "Chunk size of the `bytes` format."}, \
    {"extractor.csv.headers.enabled", CF_CFG_BOOLEAN, "true", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, \
     "Source", "The first CSV row holds the column names."}, \
    {"extractor.csv.headers", CF_CFG_LIST, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Source", \
     "Column names to use instead of a header row."},
extern const cf_cfg_table cf_source_framework_table;

typedef struct cf_source_task cf_source_task;

/* Create a task over a native source (takes `self` and destroys it with
 * ops->destroy). The poller thread starts at the first poll. */
cf_code cf_source_task_new(const cf_config *cfg, cf_source_ctx *ctx, void *self, const cf_native_ops *ops,
                           cf_source_task **out, cf_err *err);
/* Append a step to the pipeline (right after cf_source_task_new, before the
 * first poll; at most 16 steps). */
void cf_source_task_add_step(cf_source_task *t, cf_source_step_fn fn, void *step_ctx);
/* The cf_source_plugin functions, for a source built on the framework. */
cf_code cf_source_task_poll(void *task, cf_record **out, size_t max, size_t *n, cf_err *err);
void cf_source_task_stop(void *task);

/* Counters, for tests and metrics. */
typedef struct cf_source_stats {
    uint64_t objects_started, objects_done, objects_changed, records, bad_records, skipped_done;
} cf_source_stats;
void cf_source_task_stats(cf_source_task *t, cf_source_stats *out);

#ifdef __cplusplus
}
#endif
#endif
