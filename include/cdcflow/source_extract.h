/*
 * cdcflow/source_extract.h - streaming readers and extractors of the source
 * framework: from a native object's bytes to Connect values.
 *
 * The design is Aiven's source framework's extractors (bytes, CSV, JSON
 * lines, Avro), with its known weaknesses fixed:
 *   - everything streams: memory stays flat whatever the object size (the
 *     Java CSV extractor read whole objects into a String);
 *   - every record carries its byte position, so a half-read object resumes
 *     by seeking (plain files) or by skipping decompressed bytes (compressed
 *     ones) instead of re-parsing and discarding records;
 *   - a bad record is an error with the object name, line and byte offset,
 *     after which the extractor can continue with the next record (the task
 *     decides with errors.tolerance); an object is never cut short silently.
 *
 * cf_reader: a byte stream over a file or memory, with optional
 * decompression (gzip, snappy — xerial stream or the framing format —, zstd).
 * Positions are in decompressed bytes.
 *
 * OWNERSHIP: an extractor owns its reader. Values returned by
 * cf_extractor_next are the caller's; the schema is a new reference.
 */
#ifndef CDCFLOW_SOURCE_EXTRACT_H
#define CDCFLOW_SOURCE_EXTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "cdcflow/error.h"
#include "cdcflow/props.h"
#include "cdcflow/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_compression {
    CF_COMPRESSION_NONE = 0,
    CF_COMPRESSION_GZIP,
    CF_COMPRESSION_SNAPPY,
    CF_COMPRESSION_ZSTD
} cf_compression;

/* "none", "gzip", "snappy", "zstd" (case-insensitive), as the Aiven
 * connectors' file.compression.type. */
cf_code cf_compression_parse(const char *s, cf_compression *out, cf_err *err);

typedef struct cf_reader cf_reader;

cf_code cf_reader_open_file(const char *path, cf_compression c, cf_reader **out, cf_err *err);
/* Reads from memory (not copied: data must outlive the reader). */
cf_code cf_reader_open_mem(const void *data, size_t len, const char *name, cf_compression c, cf_reader **out,
                           cf_err *err);
/* Read up to cap bytes; *n == 0 means end of stream. */
cf_code cf_reader_read(cf_reader *r, void *buf, size_t cap, size_t *n, cf_err *err);
/* Move forward to decompressed position pos (seek for plain files,
 * decompress-and-discard otherwise). Moving backwards is CF_ERR_INVALID. */
cf_code cf_reader_skip_to(cf_reader *r, uint64_t pos, cf_err *err);
uint64_t cf_reader_position(const cf_reader *r);
const char *cf_reader_name(const cf_reader *r);
void cf_reader_close(cf_reader *r);

typedef enum cf_input_format {
    CF_FORMAT_BYTES = 0,
    CF_FORMAT_CSV,
    CF_FORMAT_JSONL,
    CF_FORMAT_ENVELOPE, /* record files (kcat -J JSON lines): full-envelope restore */
    CF_FORMAT_AVRO      /* Avro object container files */
} cf_input_format;

/* "bytes", "csv", "jsonl", "envelope", "avro" (case-insensitive), as
 * input.format. */
cf_code cf_input_format_parse(const char *s, cf_input_format *out, cf_err *err);

/* Where a record came from. Resume position after this record = end. */
typedef struct cf_extract_pos {
    uint64_t index; /* 0-based record number in the object */
    uint64_t line;  /* 1-based line where the record starts (CSV, JSONL) */
    uint64_t start; /* byte offset of its first byte */
    uint64_t end;   /* byte offset just past it (and its line end) */
    uint64_t end_line; /* line where the next record starts (CSV, JSONL) */
} cf_extract_pos;

/* AVRO POSITIONS. The datums of an Avro object container block have no byte
 * offsets of their own (the block may be compressed), so an Avro position is
 * a block plus a datum number in it:
 *   start     byte offset of the record's block (its count varint);
 *   line      1 + the record's datum number in that block (1 = first);
 *   end       byte offset of the block that holds the NEXT datum: the same
 *             block while it has datums (or, damaged, bytes after its last
 *             datum) left, else the next block's start (after the last
 *             record of the object: the object's size);
 *   end_line  1 + the number of that block's datums already read (1 when
 *             `end` is a fresh block).
 * Resuming with start = end and start_line = end_line reads the header,
 * seeks to the block and decodes and drops end_line - 1 datums of it: at
 * most one block is read again. (The offset entry's "position" and "line"
 * hold end and end_line; "line" is a datum number in a block for Avro.)
 * Records are the datums mapped by cdcflow/avro.h (Confluent's AvroData
 * rules) from the writer schema in the header, mapped once per object.
 * Codecs: null, deflate, snappy (with its CRC32), zstandard. Errors are
 * CF_ERR_INVALID with the object name, block number and byte offset:
 *   - a file that is not an Avro container, an unknown codec, a writer
 *     schema Connect cannot represent, a resume position that does not
 *     exist: reported once by the first cf_extractor_next (the header is
 *     read there, so cf_extractor_new does not fail on data), then the
 *     object ends (CF_ERR_EOF);
 *   - a damaged block (bad count/size, a size above 64 MiB, no sync marker
 *     after the data, a decompression or CRC failure, more datums than its
 *     bytes can hold, a cut-short object):
 *     reported once, its datums are skipped, reading continues with the
 *     block after the next sync marker, or the object ends when none
 *     follows;
 *   - a datum that does not follow the schema: reported (field path and
 *     byte), the rest of its block is skipped (datum boundaries are then
 *     unknown), reading continues with the next block.
 * Each error takes one record index, as a bad CSV row does. */

typedef struct cf_extractor cf_extractor;

/* Options (Aiven's names):
 *   extractor.buffer               bytes: chunk size (default 4096)
 *   extractor.csv.headers.enabled  csv: first row is the header (default true)
 *   extractor.csv.headers          csv: comma-separated header names (used
 *                                  when given; the first row is then data
 *                                  unless headers.enabled is also true)
 * CSV rows become STRUCTs of optional STRING fields named by the header;
 * columns beyond the header are named field<N> (N = 0-based column index).
 * JSON lines become schemaless values exactly as Kafka's JsonConverter with
 * schemas.enable=false makes them; blank lines are skipped.
 * `start` is a resume position (a previous record's end, 0 = from the
 * beginning); `start_index`/`start_line` are that position's record number
 * and line, so positions stay true after a resume.
 * Takes ownership of `r` (also on failure). */
cf_code cf_extractor_new(cf_input_format f, const cf_props *opts, cf_reader *r, uint64_t start, uint64_t start_index,
                         uint64_t start_line, cf_extractor **out, cf_err *err);
/* Next record: CF_OK, CF_ERR_EOF at the end, or an error (CF_ERR_INVALID:
 * a bad record, *pos says where, the extractor is positioned after it and
 * can continue; CF_ERR_IO: the stream failed, do not continue). */
cf_code cf_extractor_next(cf_extractor *x, cf_schema **schema, cf_value **value, cf_extract_pos *pos, cf_err *err);
void cf_extractor_destroy(cf_extractor *x);
/* Envelope format only: the whole message of the record last returned
 * (topic, partition, timestamp, key, value, headers as bytes); the value
 * returned by cf_extractor_next is its value as BYTES. Valid until the next
 * call. NULL for other formats. */
const struct cf_msg *cf_extractor_envelope(const cf_extractor *x);

#ifdef __cplusplus
}
#endif
#endif
