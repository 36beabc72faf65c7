/*
 * cdcflow/cassandra_log.h - Cassandra commit log segments: header, sync
 * sections, entries, and the cdc_raw `_cdc.idx` index files.
 *
 * This layer needs no table schema. It owns:
 *   - the segment header (CommitLogDescriptor, versions 6 = 3.0/3.11,
 *     7 = 4.0/4.1/5.0 default, 8 = 5.0 storage_compatibility_mode NONE), its
 *     parameters JSON and header CRC; older versions are refused;
 *   - sync sections: plain, compressed (LZ4, Snappy, Deflate, Zstd, as
 *     Cassandra's ICompressor classes write them) and encrypted (AES/CBC/PKCS5
 *     blocks with LZ4 inside, key given as raw bytes);
 *   - entries: int32 size, CRC of the size, mutation bytes, CRC of size+bytes;
 *   - cdc_raw index files: "<offset>\n[COMPLETED]".
 *
 * Positions. Every entry has a *logical* position: for a plain segment it is
 * the file offset of the entry's size field; for compressed and encrypted
 * segments it is the offset in Cassandra's in-memory segment buffer (each
 * section counts 8 marker bytes + its uncompressed length), which is also
 * what `_cdc.idx` files and CommitLogPositions use. end_position is
 * Cassandra's "entryLocation" (just after the entry's trailing CRC).
 *
 * Errors. The reader never stops at the first bad byte. cf_cass_segment_next
 * returns CF_ERR_CORRUPT with the error filled in (message, detail, hint,
 * where = "<segment path>@<byte offset>") and has already moved past the
 * damage; calling it again continues with the next entry or the next valid
 * section. Rules (Cassandra's CommitLogReader, made non-fatal):
 *   - bad sync marker CRC that is not the all-zero clean end: report, then
 *     scan forward for the next marker whose CRC is valid;
 *   - marker pointing backwards or past the file: report, scan forward;
 *   - marker pointing past EOF with a valid CRC (truncated file): the section
 *     is clamped to the file and its last entry reported as truncated;
 *   - entry size CRC (crc1) wrong, size < 10 or larger than the section:
 *     report, stop the section, continue with the next one;
 *   - entry data CRC (crc2) wrong: report, skip the entry, continue;
 *   - size 0 inside a section: report (Cassandra fills sections with whole
 *     entries, so these bytes were zeroed or never written), stop the
 *     section, continue with the next one; the zero padding of a
 *     preallocated segment (after its last section, where the next marker
 *     would be) is the clean end;
 *   - with the segment's cdc index (cf_cass_segment_set_cdc_index): an
 *     offset the segment does not reach, or not at a section's end, is
 *     reported too.
 * Files: only regular files are read; a FIFO, a directory... in a segment's
 * or index's place is refused (CF_ERR_INVALID) saying what it is, and is
 * opened without blocking.
 * Memory: one section (its file bytes and, if compressed, its uncompressed
 * bytes) at a time; sizes are checked against the file before allocating.
 * A complete segment (cf_cass_segment_set_complete) is read ahead: its file
 * bytes are one window of max(read_ahead, the largest section) bytes, 1 MiB
 * by default, instead of one section.
 *
 * THREADS: a cf_cass_segment is used by one thread at a time.
 */
#ifndef CDCFLOW_CASSANDRA_LOG_H
#define CDCFLOW_CASSANDRA_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CF_CASS_LOG_VERSION_30 6 /* Cassandra 3.0, 3.11: messaging version 10 */
#define CF_CASS_LOG_VERSION_40 7 /* Cassandra 4.0, 4.1, 5.0 default: messaging 12 */
#define CF_CASS_LOG_VERSION_50 8 /* Cassandra 5.0 storage_compatibility_mode NONE: messaging 13 */

typedef enum cf_cass_compression {
    CF_CASS_COMP_NONE = 0,
    CF_CASS_COMP_LZ4,
    CF_CASS_COMP_SNAPPY,
    CF_CASS_COMP_DEFLATE,
    CF_CASS_COMP_ZSTD
} cf_cass_compression;

const char *cf_cass_compression_name(cf_cass_compression c); /* "none", "lz4", ... */

typedef struct cf_cass_segment_info {
    int32_t version;           /* commit log descriptor version: 6, 7 or 8 */
    int32_t messaging_version; /* 10, 12 or 13: the serialization of the mutations */
    int64_t id;                /* segment id (also in the file name) */
    char params[65536 + 1];    /* parameters JSON as written, NUL-terminated */
    cf_cass_compression compression;
    bool encrypted;            /* encCipher present (AES/CBC/PKCS5Padding) */
    char cipher[64];           /* encCipher, "" if none */
    char key_alias[128];       /* encKeyAlias, "" if none */
    uint8_t iv[16];            /* encIV */
    size_t iv_len;
    size_t header_size;        /* bytes before the first sync marker */
} cf_cass_segment_info;

/* Parse a segment header from the first bytes of a file. `name` is used in
 * errors only. CF_ERR_UNSUPPORTED for versions < 6 (pre-3.0 storage engine)
 * or > 8, CF_ERR_CORRUPT for a bad CRC or impossible lengths, CF_ERR_EOF if
 * `len` is too short to hold the header (a file still being created). */
cf_code cf_cass_header_parse(const uint8_t *p, size_t len, const char *name, cf_cass_segment_info *out,
                             cf_err *err);

/* Read an AES key for encrypted segments from a file: 16, 24 or 32 bytes
 * written as hex (whitespace ignored), e.g. b7d96fb9b11d829179aeeb0b4e81f97a.
 * CF_ERR_CONFIG naming the file and what is wrong. */
cf_code cf_cass_key_file_read(const char *path, uint8_t key[32], size_t *len, cf_err *err);

/* Parse "CommitLog-<version>-<id>.log" (directories allowed in front).
 * Returns false if the name does not have that form. */
bool cf_cass_segment_name_parse(const char *path, int32_t *version, int64_t *id);

typedef struct cf_cass_segment_opts {
    const uint8_t *key; /* AES key for encrypted segments (16, 24 or 32 bytes); copied */
    size_t key_len;
    size_t read_ahead;  /* read-ahead block of a complete segment; 0: 1 MiB */
} cf_cass_segment_opts;

typedef struct cf_cass_segment_stats {
    uint64_t sections;       /* sync sections read */
    uint64_t entries;        /* entries returned with a valid CRC */
    uint64_t corrupt;        /* corruption reports returned */
    uint64_t bytes;          /* file bytes consumed */
} cf_cass_segment_stats;

typedef struct cf_cass_segment cf_cass_segment;

/* Open a segment file and read its header. opts may be NULL (then an
 * encrypted segment fails here with CF_ERR_CONFIG and a hint to pass a key). */
cf_code cf_cass_segment_open(const char *path, const cf_cass_segment_opts *opts, cf_cass_segment **out,
                             cf_err *err);
/* Same over bytes in memory (fuzzing, tests); `name` is used in errors. The
 * bytes must outlive the segment. */
cf_code cf_cass_segment_open_mem(const uint8_t *data, size_t len, const char *name,
                                 const cf_cass_segment_opts *opts, cf_cass_segment **out, cf_err *err);
void cf_cass_segment_destroy(cf_cass_segment *s); /* NULL-safe */

const cf_cass_segment_info *cf_cass_segment_get_info(const cf_cass_segment *s);
const char *cf_cass_segment_name(const cf_cass_segment *s); /* file name without directories */
/* The path as opened (the name for segments in memory): what error
 * locations (where = "<path>@<byte offset>") name. */
const char *cf_cass_segment_path(const cf_cass_segment *s);
const cf_cass_segment_stats *cf_cass_segment_get_stats(const cf_cass_segment *s);

/* Only read sections that end at or before this logical offset (the offset
 * of a `_cdc.idx` file); -1 (the default) means no limit. May be raised
 * while reading to follow a growing segment. */
void cf_cass_segment_set_limit(cf_cass_segment *s, int64_t logical_limit);

/* What the segment's `_cdc.idx` says (cf_cass_cdc_idx_read): Cassandra writes
 * the index after syncing the segment up to its offset, and that offset is
 * always the end of a sync section. Reading stops there: CF_ERR_EOF when the
 * index says COMPLETED, CF_ERR_AGAIN otherwise (call this again when the
 * index grew). A segment that breaks the promise is a data error
 * (CF_ERR_CORRUPT, counted in stats.corrupt, where = "<path>@<byte offset>"),
 * never a short read:
 *   - it ends, or holds zeros, before the offset (truncated or zeroed copy);
 *     reading of the segment ends;
 *   - the offset falls inside a sync section; the index is then ignored and
 *     the segment read to its end;
 *   - COMPLETED, and a valid sync section follows the offset; it is read too.
 * Use this instead of cf_cass_segment_set_limit for everything that reads
 * cdc_raw. */
void cf_cass_segment_set_cdc_index(cf_cass_segment *s, int64_t offset, bool completed);

/* The file does not change any more: its index says COMPLETED (set_cdc_index
 * with completed calls this), or the caller reads copied segments offline.
 * From the next section on, the reader measures the file's length once (now)
 * and reads it ahead in blocks of opts.read_ahead (1 MiB) into one window:
 * a sync section then costs no system call unless it crosses the window's
 * end. Without it (a live segment) each section is read with its own pread()
 * after measuring the file again, so a segment Cassandra still writes (in
 * place: its preallocated zeros become sections) is read as it is now. No-op
 * for segments in memory. */
void cf_cass_segment_set_complete(cf_cass_segment *s);

typedef struct cf_cass_entry {
    const uint8_t *data;   /* mutation bytes; valid until the next call */
    size_t len;
    int64_t position;      /* logical offset of the entry's size field */
    int64_t end_position;  /* logical offset just after the entry (Cassandra's entryLocation) */
    int64_t file_offset;   /* file offset of the entry (plain) or of its section (compressed, encrypted) */
    uint32_t crc;          /* the entry's CRC as stored (checked): a hash of its bytes for free */
} cf_cass_entry;

/* Next entry with valid CRCs.
 *   CF_OK            *e filled
 *   CF_ERR_EOF       no more entries (clean end, zero padding or end of file)
 *   CF_ERR_AGAIN     a limit is set and the next section lies beyond it: raise
 *                    the limit (cf_cass_segment_set_limit) and call again
 *   CF_ERR_CORRUPT   damage reported in err (where = "name@offset"); the reader
 *                    has moved on, call again to continue
 *   CF_ERR_IO        the file could not be read */
cf_code cf_cass_segment_next(cf_cass_segment *s, cf_cass_entry *e, cf_err *err);

/* ---------------- cdc_raw index files ---------------- */

/* "<dir>/CommitLog-7-123.log" -> "<dir>/CommitLog-7-123_cdc.idx" (malloc'd). */
char *cf_cass_cdc_idx_path(const char *segment_path);

/* Read a `_cdc.idx` file: first line the decimal logical offset up to which
 * the segment is synced, optional second line "COMPLETED". Cassandra rewrites
 * the file in place (truncate, then write), so an empty read is retried up to
 * `retries` times, `retry_ms` apart, as Sidecar's CdcUtil does. CF_ERR_NOT_FOUND
 * if the file does not exist, CF_ERR_AGAIN if it stayed empty, CF_ERR_CORRUPT
 * if it holds something else. */
cf_code cf_cass_cdc_idx_read(const char *idx_path, int retries, int retry_ms, int64_t *offset,
                             bool *completed, cf_err *err);
/* Parse the contents of an index file (no I/O). Empty -> CF_ERR_AGAIN. */
cf_code cf_cass_cdc_idx_parse(const char *text, size_t len, int64_t *offset, bool *completed, cf_err *err);

/* ---------------- directories (commitlog, cdc_raw) ---------------- */

typedef struct cf_cass_dir_entry {
    char *path;      /* "<dir>/<name>" */
    int32_t version; /* from the name */
    int64_t id;
    bool has_idx;    /* "<segment>_cdc.idx" is beside it (in cdc_raw, a segment without one holds no CDC data yet) */
    /* CF_OK, or why the entry cannot be read as a segment, with what was
     * found in err (CF_ERR_INVALID: a directory, a FIFO, a socket... in a
     * segment's place): a data error for the caller to report and count */
    cf_code problem;
    cf_err err;
} cf_cass_dir_entry;

/* The entries of `dir` named like segments (CommitLog-<version>-<id>.log),
 * in segment id order; *out is freed with cf_cass_dir_entries_free. Nothing
 * is opened (a FIFO cannot block the listing). CF_ERR_NOT_FOUND, saying what
 * the directory holds instead, when there is no segment in it;
 * CF_ERR_INVALID when `dir` is not a directory; CF_ERR_IO when it cannot be
 * read. */
cf_code cf_cass_dir_list(const char *dir, cf_cass_dir_entry **out, size_t *n, cf_err *err);
void cf_cass_dir_entries_free(cf_cass_dir_entry *e, size_t n);

#ifdef __cplusplus
}
#endif
#endif
