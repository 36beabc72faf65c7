/*
 * cmd_cassandra.c - `cdcflow cassandra dump`: decode Cassandra commit log
 * segments (or cdc_raw directories) to one JSON object per partition update.
 * Thin: the reading is cassandra_log.h, the decoding and rendering
 * cassandra_mutation.h, the schema cassandra_schema.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_cql.h"
#include "cdcflow/cassandra_log.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/log.h"
#include "cdcflow/text.h"
#include "cli.h"

#define COMP "cassandra"

typedef struct dump_stats {
    unsigned long long segments, sections, mutations, updates, skipped, corrupt, schema_errors, entries_beyond;
} dump_stats;

typedef struct seen_id {
    uint8_t id[16];
} seen_id;

typedef struct dump_ctx {
    cf_cass_decoder *dec;
    cf_cass_segment_opts opts;
    bool follow;
    int poll_ms;
    dump_stats st;
    seen_id *seen;
    size_t n_seen, cap_seen;
    cf_buf out;
} dump_ctx;

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, "cdcflow: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nHINT:  See `cdcflow cassandra --help`.\n");
    return CF_EXIT_USAGE;
}

static int load_key(const char *path, uint8_t *key, size_t *len) {
    cf_err err;
    if (cf_cass_key_file_read(path, key, len, &err)) {
        cf_cli_print_err(&err);
        return CF_EXIT_USAGE;
    }
    return CF_EXIT_OK;
}

static void note_unknown(dump_ctx *c, const uint8_t id[16], const char *seg, long long pos) {
    for (size_t i = 0; i < c->n_seen; i++)
        if (memcmp(c->seen[i].id, id, 16) == 0) return;
    if (c->n_seen == c->cap_seen) {
        c->cap_seen = c->cap_seen ? c->cap_seen * 2 : 16;
        c->seen = cf_xrealloc(c->seen, c->cap_seen * sizeof *c->seen);
    }
    memcpy(c->seen[c->n_seen++].id, id, 16);
    char s[37];
    cf_cass_uuid_format(id, s);
    CF_INFO(COMP, "skipping mutations of table id %s: not in the schema (first at %s@%lld)", s, seg, pos);
}

static void flush_out(dump_ctx *c) {
    if (c->out.len) {
        fwrite(c->out.data, 1, c->out.len, stdout);
        cf_buf_reset(&c->out);
    }
}

static void handle_entry(dump_ctx *c, cf_cass_segment *seg, const cf_cass_entry *e) {
    const char *name = cf_cass_segment_name(seg), *path = cf_cass_segment_path(seg);
    int mv = cf_cass_segment_get_info(seg)->messaging_version;
    cf_cass_mutation *m;
    uint8_t unknown[16];
    cf_err err;
    c->st.mutations++;
    cf_code rc = cf_cass_decode_mutation(c->dec, e->data, e->len, mv, &m, unknown, &err);
    for (size_t i = 0; i < m->n_updates; i++) {
        cf_cass_update_to_json(&m->updates[i], name, e->position, &c->out);
        cf_buf_append_byte(&c->out, '\n');
        c->st.updates++;
    }
    if (c->out.len > (1 << 16)) flush_out(c);
    if (rc == CF_OK) return;
    if (rc == CF_ERR_NOT_FOUND) {
        c->st.skipped++;
        note_unknown(c, unknown, path, (long long)e->position);
        return;
    }
    char where[256];
    if (e->file_offset == e->position)
        snprintf(where, sizeof where, "%s@%lld, %s", path, (long long)e->position, err.where);
    else /* compressed, encrypted: the section's file offset, and the entry's place in it */
        snprintf(where, sizeof where, "%s@%lld (entry at logical position %lld), %s", path, (long long)e->file_offset,
                 (long long)e->position, err.where);
    snprintf(err.where, sizeof err.where, "%s", where);
    if (rc == CF_ERR_SCHEMA)
        c->st.schema_errors++;
    else
        c->st.corrupt++;
    flush_out(c);
    cf_cli_print_err(&err);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Returns 0, or an exit code for a failure that stops everything. */
static int dump_segment(dump_ctx *c, const char *path) {
    cf_cass_segment *seg;
    cf_err err;
    c->st.segments++;
    cf_code rc = cf_cass_segment_open(path, &c->opts, &seg, &err);
    if (rc) {
        cf_cli_print_err(&err);
        if (rc == CF_ERR_CONFIG) return CF_EXIT_USAGE;
        if (rc == CF_ERR_IO) return CF_EXIT_RUNTIME;
        c->st.corrupt++; /* bad header, unsupported version: a data error, go on */
        return 0;
    }
    char *idx = cf_cass_cdc_idx_path(path);
    bool has_idx = false, completed = false;
    int64_t limit = -1;
    struct stat sb;
    if (stat(idx, &sb) == 0) {
        has_idx = true;
        rc = cf_cass_cdc_idx_read(idx, 5, 100, &limit, &completed, &err);
        if (rc) {
            cf_cli_print_err(&err);
            c->st.corrupt++;
            free(idx);
            cf_cass_segment_destroy(seg);
            return 0;
        }
        cf_cass_segment_set_cdc_index(seg, limit, completed);
        CF_DEBUG(COMP, "%s: cdc index says %lld%s", cf_cass_segment_name(seg), (long long)limit,
                 completed ? ", COMPLETED" : "");
    }
    /* without --follow the segment is read once as it is now (up to its
     * index's offset, never raised): read it ahead (with --follow only once
     * its index says COMPLETED: set_cdc_index) */
    if (!c->follow) cf_cass_segment_set_complete(seg);
    cf_cass_entry e;
    for (;;) {
        rc = cf_cass_segment_next(seg, &e, &err);
        if (rc == CF_OK) {
            handle_entry(c, seg, &e);
            continue;
        }
        if (rc == CF_ERR_EOF) break;
        if (rc == CF_ERR_CORRUPT) {
            flush_out(c);
            cf_cli_print_err(&err);
            c->st.corrupt++;
            continue;
        }
        if (rc == CF_ERR_AGAIN) { /* only with a cdc index that is not COMPLETED */
            if (completed || !has_idx) break;
            if (!c->follow) {
                CF_INFO(COMP, "%s: read up to offset %lld named by its cdc index (not COMPLETED; --follow waits for more)",
                        cf_cass_segment_name(seg), (long long)limit);
                break;
            }
            flush_out(c);
            fflush(stdout);
            sleep_ms(c->poll_ms);
            int64_t nl;
            bool nc;
            rc = cf_cass_cdc_idx_read(idx, 5, 100, &nl, &nc, &err);
            if (rc == CF_ERR_NOT_FOUND) {
                CF_WARN(COMP, "%s: cdc index disappeared; stopping at %lld", cf_cass_segment_name(seg), (long long)limit);
                break;
            }
            if (rc && rc != CF_ERR_AGAIN) {
                cf_cli_print_err(&err);
                c->st.corrupt++;
                break;
            }
            if (rc == CF_OK) {
                if (nl < limit) {
                    CF_WARN(COMP, "%s: cdc index went back from %lld to %lld; keeping %lld", cf_cass_segment_name(seg),
                            (long long)limit, (long long)nl, (long long)limit);
                    nl = limit;
                }
                limit = nl;
                completed = nc;
                cf_cass_segment_set_cdc_index(seg, limit, completed);
            }
            continue;
        }
        flush_out(c);
        cf_cli_print_err(&err);
        free(idx);
        cf_cass_segment_destroy(seg);
        return CF_EXIT_RUNTIME;
    }
    c->st.sections += cf_cass_segment_get_stats(seg)->sections;
    flush_out(c);
    free(idx);
    cf_cass_segment_destroy(seg);
    return 0;
}

typedef struct seg_path {
    char *path;
    int64_t id;
} seg_path;

static void push(seg_path **v, size_t *k, size_t *cap, char *path, int64_t id) {
    if (*k == *cap) *v = cf_xrealloc(*v, (*cap = *cap ? *cap * 2 : 16) * sizeof **v);
    (*v)[(*k)++] = (seg_path){path, id};
}

/* Expand PATHs: files as given, directories to their CommitLog-*.log in
 * segment id order (cf_cass_dir_list). A PATH that is missing, empty of
 * segments or neither a file nor a directory is a usage error (exit 2: nothing
 * was read); an entry of a directory that is not a regular file is a data
 * error (reported, counted: exit 3) and the others are read. */
static int collect(char **paths, int n, dump_ctx *c, seg_path **out, size_t *n_out) {
    size_t cap = 0, k = 0;
    seg_path *v = NULL;
    int ex = CF_EXIT_OK;
    for (int i = 0; i < n && !ex; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) != 0) {
            fprintf(stderr, "cdcflow: cannot read %s: %s\nHINT:  Name commit log segments (CommitLog-*.log) or "
                            "directories holding them (commitlog, cdc_raw).\n", paths[i], strerror(errno));
            ex = CF_EXIT_USAGE;
        } else if (S_ISDIR(sb.st_mode)) {
            cf_cass_dir_entry *de;
            size_t nd;
            cf_err err;
            if (cf_cass_dir_list(paths[i], &de, &nd, &err)) {
                cf_cli_print_err(&err);
                ex = CF_EXIT_USAGE;
                break;
            }
            /* cdc_raw: Cassandra hard-links every new segment there and writes
             * <segment>_cdc.idx once it holds synced CDC data; a segment without
             * an index in a directory that has indexes holds no CDC data (yet). */
            bool any_idx = false;
            for (size_t j = 0; j < nd; j++) any_idx |= de[j].has_idx;
            for (size_t j = 0; j < nd; j++) {
                if (de[j].problem) {
                    cf_cli_print_err(&de[j].err);
                    c->st.corrupt++;
                } else if (any_idx && !de[j].has_idx) {
                    CF_INFO(COMP, "%s: no cdc index beside it in a cdc_raw directory: skipped (no CDC data yet)",
                            de[j].path);
                } else {
                    push(&v, &k, &cap, de[j].path, de[j].id);
                    de[j].path = NULL;
                }
            }
            cf_cass_dir_entries_free(de, nd);
        } else if (!S_ISREG(sb.st_mode)) {
            fprintf(stderr, "cdcflow: %s is neither a commit log segment nor a directory: it is %s\n"
                            "HINT:  Name commit log segments (CommitLog-*.log) or directories holding them "
                            "(commitlog, cdc_raw).\n",
                    paths[i], S_ISFIFO(sb.st_mode) ? "a FIFO (named pipe)" : S_ISSOCK(sb.st_mode) ? "a socket"
                                                     : S_ISCHR(sb.st_mode)  ? "a character device"
                                                     : S_ISBLK(sb.st_mode)  ? "a block device"
                                                                            : "not a regular file");
            ex = CF_EXIT_USAGE;
        } else {
            push(&v, &k, &cap, cf_xstrdup(paths[i]), 0);
        }
    }
    if (ex) {
        for (size_t j = 0; j < k; j++) free(v[j].path);
        free(v);
        return ex;
    }
    *out = v;
    *n_out = k;
    return CF_EXIT_OK;
}

static int run(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "dump") != 0)
        return usage("cassandra: expected the subcommand \"dump\", \"sidecar\" or \"exec\"%s", argc >= 2 ? "" : " (none given)");
    const char *schema_files[64];
    int n_schema = 0;
    const char *cql = NULL, *key_file = NULL, *cql_user = NULL;
    bool stats = false, follow = false;
    int poll_ms = 1000;
    char *paths[4096];
    int n_paths = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--schema") == 0 && i + 1 < argc) {
            if (n_schema == 64) return usage("too many --schema options%s", "");
            schema_files[n_schema++] = argv[++i];
        } else if (strcmp(a, "--cql") == 0 && i + 1 < argc) {
            cql = argv[++i];
        } else if (strcmp(a, "--cql-user") == 0 && i + 1 < argc) {
            cql_user = argv[++i];
        } else if (strcmp(a, "--key-file") == 0 && i + 1 < argc) {
            key_file = argv[++i];
        } else if (strcmp(a, "--stats") == 0) {
            stats = true;
        } else if (strcmp(a, "--follow") == 0) {
            follow = true;
        } else if (strcmp(a, "--poll-ms") == 0 && i + 1 < argc) {
            poll_ms = atoi(argv[++i]);
            if (poll_ms <= 0) return usage("invalid --poll-ms \"%s\"", argv[i]);
        } else if (a[0] == '-' && a[1]) {
            return usage("cassandra dump: unknown or incomplete option \"%s\"", a);
        } else {
            if (n_paths == 4096) return usage("too many paths%s", "");
            paths[n_paths++] = argv[i];
        }
    }
    if (n_paths == 0) return usage("cassandra dump: no commit log segment or directory given%s", "");
    if (cql && n_schema) return usage("cassandra dump: give either --schema or --cql, not both%s", "");
    cf_cass_schema *schema = cf_cass_schema_new();
    cf_err err;
    if (cql) {
        char host[256];
        int port = 9042;
        const char *colon = strrchr(cql, ':');
        if (colon && colon[1]) {
            char *end;
            long p = strtol(colon + 1, &end, 10);
            if (*end || p <= 0 || p > 65535) {
                cf_cass_schema_destroy(schema);
                return usage("cassandra dump: invalid --cql \"%s\" (want HOST:PORT)", cql);
            }
            port = (int)p;
            snprintf(host, sizeof host, "%.*s", (int)(colon - cql), cql);
        } else {
            snprintf(host, sizeof host, "%s", cql);
        }
        cf_cql_options o = {.host = host, .port = port, .username = cql_user,
                            .password = cql_user ? getenv("CDCFLOW_CQL_PASSWORD") : NULL};
        cf_cql_conn *conn;
        cf_code rc = cf_cql_connect(&o, &conn, &err);
        if (rc == CF_OK) {
            rc = cf_cql_load_schema(conn, NULL, schema, &err);
            cf_cql_close(conn);
        }
        if (rc) {
            cf_cli_print_err(&err);
            cf_cass_schema_destroy(schema);
            return rc == CF_ERR_CONFIG ? CF_EXIT_USAGE : CF_EXIT_RUNTIME;
        }
        CF_INFO(COMP, "schema of %zu table(s) read from %s:%d", cf_cass_schema_table_count(schema), host, port);
    }
    for (int i = 0; i < n_schema; i++) {
        if (cf_cass_ddl_parse_file(schema, schema_files[i], &err)) {
            cf_cli_print_err(&err);
            cf_cass_schema_destroy(schema);
            return CF_EXIT_USAGE;
        }
    }
    if (!n_schema && !cql) CF_WARN(COMP, "no --schema or --cql given: every mutation is skipped, only counted");
    dump_ctx c;
    memset(&c, 0, sizeof c);
    uint8_t key[32];
    size_t key_len = 0;
    if (key_file) {
        int x = load_key(key_file, key, &key_len);
        if (x) {
            cf_cass_schema_destroy(schema);
            return x;
        }
        c.opts.key = key;
        c.opts.key_len = key_len;
    }
    c.follow = follow;
    c.poll_ms = poll_ms;
    c.dec = cf_cass_decoder_new(schema);
    seg_path *segs;
    size_t n_segs;
    int ex = collect(paths, n_paths, &c, &segs, &n_segs);
    if (ex) {
        cf_cass_decoder_destroy(c.dec);
        cf_cass_schema_destroy(schema);
        return ex;
    }
    for (size_t i = 0; i < n_segs && !ex; i++) ex = dump_segment(&c, segs[i].path);
    flush_out(&c);
    fflush(stdout);
    if (stats)
        fprintf(stderr,
                "cassandra dump: segments=%llu sections=%llu mutations=%llu partition_updates=%llu skipped=%llu "
                "corrupt=%llu schema_errors=%llu unknown_tables=%zu\n",
                c.st.segments, c.st.sections, c.st.mutations, c.st.updates, c.st.skipped, c.st.corrupt,
                c.st.schema_errors, c.n_seen);
    for (size_t i = 0; i < n_segs; i++) free(segs[i].path);
    free(segs);
    free(c.seen);
    cf_buf_free(&c.out);
    cf_cass_decoder_destroy(c.dec);
    cf_cass_schema_destroy(schema);
    if (ex) return ex;
    return c.st.corrupt || c.st.schema_errors ? CF_EXIT_DATA_ERRORS : CF_EXIT_OK;
}

const cf_command cf_cmd_cassandra = {
    "cassandra",
    "decode Cassandra commit log segments (commitlog, cdc_raw) to JSON",
    "Usage: cdcflow cassandra dump [--schema FILE.cql... | --cql HOST:PORT [--cql-user USER]]\n"
    "                              [--key-file FILE] [--stats] [--follow [--poll-ms N]] PATH...\n"
    "\n"
    "Reads Cassandra commit log segments (CommitLog-<version>-<id>.log, versions 6 = 3.0/3.11,\n"
    "7 = 4.0/4.1/5.0, 8 = 5.0 with storage_compatibility_mode NONE; plain, LZ4, Snappy, Deflate,\n"
    "Zstd compressed or AES encrypted) and prints one JSON object per partition update to stdout.\n"
    "A PATH is a segment file or a directory (its CommitLog-*.log are read in segment id order).\n"
    "\n"
    "Options:\n"
    "  --schema FILE.cql  the schema as `DESCRIBE SCHEMA WITH INTERNALS` prints it (CREATE KEYSPACE,\n"
    "                     TYPE, TABLE ... WITH ID = <uuid>, ALTER TABLE ... DROP for dropped columns).\n"
    "                     Repeatable. Load every user table: a mutation (batch) whose first table is\n"
    "                     unknown is skipped whole and counted; one mixing known and unknown tables\n"
    "                     is reported as an error after its decodable part is printed.\n"
    "  --cql HOST:PORT    read the schema of every non-system keyspace from a live node over the\n"
    "                     CQL native protocol (system_schema tables: ids, dropped columns, types).\n"
    "  --cql-user USER    user for --cql when the node asks for authentication; the password is\n"
    "                     taken from the environment variable CDCFLOW_CQL_PASSWORD.\n"
    "  --key-file FILE    AES key of encrypted segments (transparent data encryption), as hex\n"
    "                     (16, 24 or 32 bytes); the key of the alias named in the segment header.\n"
    "  --stats            print counts to stderr at the end: segments, sections, mutations,\n"
    "                     partition_updates, skipped (unknown table), corrupt, schema_errors.\n"
    "  --follow           for segments with a cdc index (<segment>_cdc.idx beside them, as in\n"
    "                     cdc_raw): wait for the index to grow until it says COMPLETED.\n"
    "                     Without --follow a segment is read up to the offset its index names.\n"
    "  --poll-ms N        how often --follow re-reads the index (default 1000).\n"
    "\n"
    "Output, one line per partition update:\n"
    "  {\"segment\": \"CommitLog-7-123.log\", \"position\": N, \"keyspace\": K, \"table\": T,\n"
    "   \"table_id\": \"uuid\", \"token\": N, \"key\": {column: value, ...},\n"
    "   \"partition_deletion\": null | {\"ts\": N, \"local_deletion_time\": N}, \"rows\": [ROW, ...]}\n"
    "  position is the logical offset of the entry in the segment (the file offset for plain\n"
    "  segments; for compressed and encrypted ones the offset Cassandra and _cdc.idx use); token is\n"
    "  the Murmur3 token of the partition key. Each ROW has:\n"
    "    \"kind\": \"row\" | \"static\" | \"range_tombstone_bound\" | \"range_tombstone_boundary\"\n"
    "    \"clustering\": {column: value}     (a prefix for range tombstone bounds)\n"
    "    rows: \"ts\", \"ttl\" (primary key liveness, null if none), \"deletion\": null |\n"
    "      {\"ts\", \"local_deletion_time\", \"shadowable\"}, \"cells\": {column: CELL | [CELL, ...]},\n"
    "      \"complex_deletions\": {column: {\"ts\", \"local_deletion_time\"}} when a collection was\n"
    "      overwritten or deleted\n"
    "    range tombstones: \"bound\" (INCL_START_BOUND, EXCL_END_BOUND, ...), \"deletion\" (for a\n"
    "      boundary the deletion that ends) and \"start_deletion\" (boundaries: the one that starts)\n"
    "  A CELL is {\"value\": v, \"ts\": N, \"ttl\": N|null, \"deleted\": bool} plus\n"
    "  \"local_deletion_time\" for tombstones and expiring cells; cells of non-frozen collections and\n"
    "  UDTs form a list and carry \"path\": the list element's timeuuid, the set element, the map key\n"
    "  or the UDT field name. Values are rendered as Cassandra's SELECT JSON renders them (blob\n"
    "  \"0x..\", timestamp \"yyyy-mm-dd hh:mm:ss.fffZ\", uuid, inet, decimal, varint, duration, ...).\n"
    "\n"
    "Errors: damage is reported with the segment's path and byte offset (path@offset) and\n"
    "reading goes on: a bad entry checksum skips the entry, a bad size checksum, an impossible\n"
    "length or zeroed entries skip the rest of the sync section, a bad sync marker skips to the\n"
    "next valid one. A segment with a cdc index that does not reach the index's offset\n"
    "(truncated, zeroed), or whose index names an offset inside a sync section, is reported too:\n"
    "a damaged input is never printed short with exit 0. Segments older than Cassandra 3.0\n"
    "(version < 6) are refused with a message. Only regular files are read: a FIFO, socket or\n"
    "directory named like a segment in a directory is reported (exit 3); as a PATH, and a\n"
    "directory without segments, it is a usage error (exit 2).\n"
    "\n"
    "Exit codes: 0 ok; 1 I/O failure or --cql node unreachable; 2 usage error (bad option, missing path, encrypted segment\n"
    "without key, schema file that does not parse); 3 finished but corruption or schema\n"
    "mismatches were reported.\n"
    "\n"
    "Example:\n"
    "  cdcflow cassandra dump --schema schema.cql --stats /var/lib/cassandra/cdc_raw\n"
    "\n"
    "See also `cdcflow cassandra sidecar --help`: the replicas' copies deduplicated and published\n"
    "as change events; `cdcflow cassandra exec --help`: its CQL-style configuration statements.",
    run,
};
