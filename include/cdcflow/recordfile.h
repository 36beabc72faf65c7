/*
 * cdcflow/recordfile.h - record files: cf_msg as JSON lines, in the envelope
 * `kcat -C -J` prints (part of the transport module; this header owns only
 * the file format, src/transport/recordfile.c).
 *
 * One message per line, fields in kcat's order (kcat 1.7, json.c):
 *   {"topic":"t","partition":0,"offset":42,"tstype":"create","ts":1700000000000,
 *    "broker":-1,"headers":["k1","v1","k2",null],"key":"k","payload":"v"}
 * - "tstype"/"ts" only when the message has a timestamp ("create" or
 *   "logappend"), as kcat omits them when the timestamp is not available;
 * - "broker" is the broker id kcat consumed from; we write -1 (unknown);
 * - "headers" only when the message has headers: a flat array of name,
 *   value, name, value... with null for a null value;
 * - "key" and "payload": a string, or null for a null key / tombstone.
 * Strings are escaped exactly as kcat's JSON library (yajl) does: \" \\ \b
 * \f \n \r \t, other bytes below 0x20 as \u00XX (upper-case hex), nothing
 * else, so for UTF-8 data our lines are byte for byte kcat's.
 *
 * Bytes that are not valid UTF-8: kcat writes them raw (its output is then
 * not valid JSON). We write such a key or payload as base64 and add
 * "key_encoding":"base64" / "payload_encoding":"base64" after "payload";
 * a header name or value that is not UTF-8 is base64 too, and
 * "headers_b64":[i,...] lists the positions (0-based, in the flat headers
 * array) that are. The reader accepts both: our markers and kcat's raw bytes
 * (taken as they are, lossless). docs/formats.md has the full description.
 *
 * Reading is streaming: one line in memory at a time (a buffer reused for
 * every line), whatever the file size. Errors name the file, the line, the
 * column and the byte offset in the file. After a bad line the reader can go
 * on with the next one (the caller applies errors.tolerance).
 *
 * Writing hands the file whole lines only (collected, then written in one
 * go at 64 KiB and at each flush): a writer killed in the middle leaves
 * complete lines, the unflushed ones missing, never half a line.
 *
 * OWNERSHIP: readers and writers are used by one thread; _close frees them.
 * Messages passed in are the caller's; cf_recordfile_read fills the caller's
 * cf_msg (cleared first).
 */
#ifndef CDCFLOW_RECORDFILE_H
#define CDCFLOW_RECORDFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cdcflow/buf.h"
#include "cdcflow/error.h"
#include "cdcflow/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Append one line for m (with the trailing '\n') to out. */
void cf_recordfile_format(const cf_msg *m, cf_buf *out);

/* Parse one line (a trailing "\n" or "\r\n" is allowed) into m (cleared
 * first). On error err->where is "column N" (1-based byte column). */
cf_code cf_recordfile_parse(const char *line, size_t len, cf_msg *m, cf_err *err);

/* ---- reader ---- */

typedef struct cf_recordfile_reader cf_recordfile_reader;

#define CF_RECORDFILE_MAX_LINE_DEFAULT ((size_t)256 << 20) /* 256 MiB */

/* path "-" reads stdin. */
cf_code cf_recordfile_reader_open(const char *path, cf_recordfile_reader **out, cf_err *err);
/* Read from an open stream; name is used in errors; with owns the stream is
 * fclose'd by cf_recordfile_reader_close. */
cf_recordfile_reader *cf_recordfile_reader_new(FILE *fp, const char *name, bool owns);
/* Lines longer than this are an error (and skipped); default 256 MiB. */
void cf_recordfile_reader_set_max_line(cf_recordfile_reader *r, size_t max);
/* Next message. CF_ERR_EOF at the end. Blank lines are skipped. A bad line
 * gives CF_ERR_CORRUPT (err->where "file:line:column (byte offset N)"); the
 * next call continues after it. CF_ERR_IO on a read error. */
cf_code cf_recordfile_read(cf_recordfile_reader *r, cf_msg *m, cf_err *err);
/* 1-based line number and byte offset (of the line start) of the line last
 * returned or rejected. */
uint64_t cf_recordfile_reader_line(const cf_recordfile_reader *r);
uint64_t cf_recordfile_reader_offset(const cf_recordfile_reader *r);
void cf_recordfile_reader_close(cf_recordfile_reader *r); /* NULL-safe */

/* ---- writer ---- */

typedef struct cf_recordfile_writer cf_recordfile_writer;

/* path "-" writes stdout; append keeps existing lines. */
cf_code cf_recordfile_writer_open(const char *path, bool append, cf_recordfile_writer **out, cf_err *err);
cf_recordfile_writer *cf_recordfile_writer_new(FILE *fp, const char *name, bool owns);

/* What cf_recordfile_writer_open_resume found in the file it appends to. */
typedef struct cf_recordfile_resume {
    uint64_t size;       /* bytes kept: whole lines of earlier runs (0 for a new file) */
    uint64_t cut_bytes;  /* bytes of a torn last line cut off (0: none) */
    uint64_t cut_offset; /* byte offset where the torn line began */
} cf_recordfile_resume;

/* Open a record file to go on with it: the lines earlier runs wrote are
 * kept (their records' offsets may be stored, so truncating would lose
 * them) and new lines are appended. A last line without its '\n' is a write
 * a crash cut short (its records were never acknowledged: they are sent
 * again): it is cut off, durably (ftruncate + fsync), before anything is
 * appended; if it is a whole record that only lacks the '\n' it is kept
 * and ended instead. Refused with CF_ERR_CORRUPT, the file untouched, when it does
 * not end like a record file: the last complete line does not parse as a
 * record, or the unterminated tail does not begin like one ('{'), e.g. a
 * file of something else named by mistake. Non-regular files (a FIFO,
 * /dev/stdout) and "-" are written as they are. info may be NULL. */
cf_code cf_recordfile_writer_open_resume(const char *path, cf_recordfile_writer **out, cf_recordfile_resume *info,
                                         cf_err *err);
/* A message without an offset (-1: a source's record, never in Kafka) is
 * written with the next offset of its topic partition in this file, and
 * partition 0 when it has none, as a broker's log would place it: the file
 * is then a valid input for a sink (--input), which orders changes by
 * offset. Offsets continue after the highest of the partition already
 * written (or, when appending, already in the file). */
cf_code cf_recordfile_write(cf_recordfile_writer *w, const cf_msg *m, cf_err *err);
/* fflush, and fsync for regular files: after CF_OK the lines are durable. */
cf_code cf_recordfile_writer_flush(cf_recordfile_writer *w, cf_err *err);
/* Flush and close; returns the flush result. NULL-safe. */
cf_code cf_recordfile_writer_close(cf_recordfile_writer *w, cf_err *err);

#ifdef __cplusplus
}
#endif
#endif
