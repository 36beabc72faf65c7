/*
 * cdcflow/sidecar.h - the Cassandra CDC sidecar (the design of Cassandra
 * Sidecar CDC, CEP-44): what turns the copies of a write that the replicas'
 * commit logs hold into one published change.
 *
 * The sidecar module owns, on top of the commit log reader (cassandra_log.h,
 * cassandra_mutation.h: segments, mutation decode, schemas):
 *   - the canonical digest of a partition update (MD5, OpenSSL): the unit of
 *     deduplication, equal for the copies different replicas wrote of one
 *     write, different for different writes;
 *   - consistency levels (ONE .. ALL) and the replica count a level needs for
 *     a keyspace's replication factor;
 *   - the pending-digest cache: per digest the replicas that wrote a copy
 *     (32-bit copy counts, a replica bit mask), published or not, first read
 *     at, table and token for the log; bounded, with a clear error when full;
 *   - Murmur3 token ranges a sidecar owns;
 *   - the engine (one reader per replica cdc_raw directory, live tailing with
 *     inotify and a listing fallback, the merge of the replicas by write
 *     time, decode, digest, dedup, schema refresh over CQL) and its state
 *     (markers per replica, pending digests, owned ranges) as a source
 *     offset, or in Cassandra's own tables (cstore.c), states of several
 *     sidecars merged for a takeover (cf_sc_state_merge); the cleanup of
 *     finished segments;
 *   - the change events (sidecar_events.h) and the `cassandra-cdc` source
 *     connector that runs all this in the worker (sidecar_connector.c).
 *
 * THREADS: every object here is used by one thread at a time (a source task
 * thread); metrics counters are read from other threads atomically.
 */
#ifndef CDCFLOW_SIDECAR_H
#define CDCFLOW_SIDECAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdcflow/buf.h"
#include "cdcflow/cassandra_mutation.h"
#include "cdcflow/cassandra_schema.h"
#include "cdcflow/error.h"
#include "cdcflow/props.h"
#include "cdcflow/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Canonical digest of a partition update                              */
/* ------------------------------------------------------------------ */

/* The digest covers, in this order, the table id, the partition key bytes,
 * the partition deletion, the static row and every row and range tombstone
 * marker in order: kind, bound, clustering values, primary key liveness
 * (timestamp, TTL, local expiration time), row deletion (and for boundaries
 * both deletions), and per column present (by name, in header order) the
 * complex deletion and every cell: flags (deleted, expiring), timestamp,
 * TTL, local deletion time (tombstones and expiring cells), cell path and
 * value. Values are taken decoded, not as serialized: timestamps are written
 * as differences to the first timestamp of the update, so two replicas that
 * encode the same update with other EncodingStats deltas (or another
 * messaging version) give the same digest. Each field is tagged and length
 * prefixed, so different content cannot give the same byte stream. */
#define CF_SC_DIGEST_LEN 16

typedef struct cf_sc_digester cf_sc_digester;

cf_sc_digester *cf_sc_digester_new(void);
void cf_sc_digester_destroy(cf_sc_digester *d); /* NULL-safe */
/* Digest of u into out. *max_ts (may be NULL) receives the largest
 * timestamp in the update (micros; CF_CASS_LIVE_TS if it has none), which
 * the engine uses to merge the replicas by write time. */
void cf_sc_digest(cf_sc_digester *d, const cf_cass_update *u, uint8_t out[CF_SC_DIGEST_LEN], int64_t *max_ts);
/* The canonical bytes the digest is computed over (for tests and
 * debugging): valid until the next call on d. */
const uint8_t *cf_sc_digest_input(const cf_sc_digester *d, size_t *len);

/* ------------------------------------------------------------------ */
/* Consistency levels                                                  */
/* ------------------------------------------------------------------ */

typedef enum cf_sc_cl {
    CF_SC_ONE = 0,
    CF_SC_TWO,
    CF_SC_THREE,
    CF_SC_QUORUM,
    CF_SC_LOCAL_QUORUM,
    CF_SC_EACH_QUORUM,
    CF_SC_ALL,
    CF_SC_LOCAL_ONE
} cf_sc_cl;

/* "LOCAL_QUORUM" (any case) -> level; CF_ERR_CONFIG names the allowed ones. */
cf_code cf_sc_cl_parse(const char *text, cf_sc_cl *out, cf_err *err);
const char *cf_sc_cl_name(cf_sc_cl cl); /* "LOCAL_QUORUM" */
/* Replica copies a level needs for replication factor rf, as Cassandra's
 * ConsistencyLevel.blockFor: ONE/LOCAL_ONE 1, TWO 2, THREE 3, QUORUM
 * rf/2+1, ALL rf. The sidecar reads the replicas of one data center, so
 * LOCAL_QUORUM and EACH_QUORUM are the quorum of that data center's rf
 * (the rf given here). Returns 0 if the level cannot be met (TWO with
 * rf 1, THREE with rf < 3, rf < 1). */
int cf_sc_cl_required(cf_sc_cl cl, int rf);
/* The replication factor of a keyspace from its replication map as
 * system_schema/DESCRIBE print it: SimpleStrategy's replication_factor, or
 * for NetworkTopologyStrategy the entry of `datacenter` (NULL: the only data
 * center; several without a name is an error). "3/1" (transient
 * replication) counts the full replicas (3). CF_ERR_CONFIG on anything else. */
cf_code cf_sc_keyspace_rf(const char *replication, const char *datacenter, int *rf, cf_err *err);

/* ------------------------------------------------------------------ */
/* The pending-digest cache                                            */
/* ------------------------------------------------------------------ */

#define CF_SC_MAX_REPLICAS 64

typedef struct cf_sc_pending {
    uint8_t digest[CF_SC_DIGEST_LEN];
    uint64_t replicas;     /* bit i: replica i wrote a copy */
    uint32_t copies;       /* copies read (a replica may write one twice) */
    uint32_t table;        /* the caller's table number (names for the log and the state) */
    int64_t token;         /* Murmur3 token of the partition key */
    int64_t first_seen_ms; /* wall clock ms when the first copy was read */
    bool published;
} cf_sc_pending;

typedef enum cf_sc_verdict {
    CF_SC_PUBLISH = 0,   /* this copy completes the level: publish it now */
    CF_SC_WAIT,          /* not enough replicas yet: remembered */
    CF_SC_DUPLICATE      /* the digest was published before: drop this copy */
} cf_sc_verdict;

typedef struct cf_sc_dedup cf_sc_dedup;

/* max_entries bounds the digests remembered (published ones waiting for
 * their late copies included). */
cf_sc_dedup *cf_sc_dedup_new(size_t max_entries);
void cf_sc_dedup_destroy(cf_sc_dedup *d); /* NULL-safe */

/* A copy of `digest` from replica `replica` (0..63) was read.
 *   required: replicas the consistency level needs (>= 1)
 *   complete: replicas that hold the data (the replica directories read);
 *             once that many wrote a copy, the digest is forgotten
 * A digest is published once, by the copy of the `required`-th distinct
 * replica; every later copy is a duplicate. A second copy from the same
 * replica counts as a copy, not as a replica. With required == complete ==
 * 1 nothing is stored. CF_ERR_STATE when a new digest does not fit (the
 * error says how many are pending and what to do); *v is then undefined. */
cf_code cf_sc_dedup_add(cf_sc_dedup *d, const uint8_t digest[CF_SC_DIGEST_LEN], int replica, int required,
                        int complete, int64_t now_ms, uint32_t table, int64_t token, cf_sc_verdict *v, cf_err *err);

/* Forget digests first read more than timeout_ms before now_ms. For each
 * one never published (the level was not reached in time), dropped() is
 * called before it is forgotten; published ones go silently (their late
 * copies will be taken for new digests if they still come). Returns the
 * number of unpublished digests dropped. */
size_t cf_sc_dedup_expire(cf_sc_dedup *d, int64_t now_ms, int64_t timeout_ms,
                          void (*dropped)(void *arg, const cf_sc_pending *p), void *arg);

size_t cf_sc_dedup_count(const cf_sc_dedup *d);     /* digests remembered */
size_t cf_sc_dedup_unpublished(const cf_sc_dedup *d); /* of them not yet published */
size_t cf_sc_dedup_capacity(const cf_sc_dedup *d);  /* max_entries */
/* Visit every entry (state snapshots); order unspecified. */
void cf_sc_dedup_foreach(const cf_sc_dedup *d, void (*fn)(void *arg, const cf_sc_pending *p), void *arg);
/* Put an entry back as it was (restoring a snapshot). CF_ERR_STATE if full. */
cf_code cf_sc_dedup_restore(cf_sc_dedup *d, const cf_sc_pending *p, cf_err *err);
/* Look an entry up (tests); NULL if unknown. */
const cf_sc_pending *cf_sc_dedup_find(const cf_sc_dedup *d, const uint8_t digest[CF_SC_DIGEST_LEN]);

/* ------------------------------------------------------------------ */
/* Token ranges                                                        */
/* ------------------------------------------------------------------ */

/* A Cassandra token range (start, end]: start exclusive, end inclusive, as
 * Cassandra's Range; start >= end wraps around the ring (start == end is
 * the whole ring). */
typedef struct cf_sc_range {
    int64_t start, end;
} cf_sc_range;

typedef struct cf_sc_ranges {
    cf_sc_range *r;
    size_t n; /* 0: the whole ring */
} cf_sc_ranges;

/* Parse "(start,end]" items separated by ';' or whitespace, or the words
 * "all"/"" for the whole ring. Tokens are signed 64-bit decimals. */
cf_code cf_sc_ranges_parse(const char *text, cf_sc_ranges *out, cf_err *err);
void cf_sc_ranges_free(cf_sc_ranges *r);
bool cf_sc_ranges_contain(const cf_sc_ranges *r, int64_t token);
/* The canonical text form, "(a,b];(c,d]" or "all" (appended). */
void cf_sc_ranges_format(const cf_sc_ranges *r, cf_buf *out);

/* The ring: every node's tokens, as system.local and system.peers(_v2)
 * list them. A node's primary ranges are, for each of its tokens t,
 * (the previous token of the sorted ring, t]; the first token's range
 * starts at the last token (it wraps). The primary ranges of all nodes
 * partition the ring: every token is in exactly one node's ranges, whatever
 * the replication factor. So sidecars that each own one node's primary
 * ranges, every one reading all the replicas' cdc_raw, publish each change
 * once in total (replica ranges are not used: they overlap, RF times). */
typedef struct cf_sc_ring_node {
    char address[64];        /* broadcast address (system.local broadcast_address, system.peers peer) */
    char native_address[64]; /* the CQL address (rpc_address / native_address); "" if unknown */
    int64_t *tokens;         /* malloc'd */
    size_t n_tokens;
} cf_sc_ring_node;

typedef struct cf_sc_ring {
    cf_sc_ring_node *nodes; /* malloc'd */
    size_t n;
    size_t local;           /* the node that answered (system.local) */
} cf_sc_ring;

/* Add a node (address, native address or NULL, its tokens copied). */
void cf_sc_ring_add(cf_sc_ring *ring, const char *address, const char *native_address, const int64_t *tokens,
                    size_t n_tokens);
void cf_sc_ring_free(cf_sc_ring *ring); /* NULL-safe, leaves it empty */
/* The primary ranges of `node` (an address as the ring lists it, matched
 * against both addresses of each node; NULL: ring->local) into *out,
 * adjacent ranges merged, sorted by start; a node holding every token gets
 * the whole ring (n = 0). Errors: CF_ERR_NOT_FOUND for an address no node
 * has (the message lists the known ones), CF_ERR_STATE for a ring without
 * tokens, a node without tokens, or a token two nodes claim. */
cf_code cf_sc_ranges_primary(const cf_sc_ring *ring, const char *node, cf_sc_ranges *out, cf_err *err);

typedef struct cf_cql_conn cf_cql_conn; /* cassandra_cql.h */
/* Read the ring over CQL: system.local (broadcast_address, rpc_address,
 * tokens, partitioner: Murmur3Partitioner, or CF_ERR_UNSUPPORTED) and
 * system.peers_v2 (peer, native_address, tokens), or system.peers (peer,
 * rpc_address, tokens) where peers_v2 does not exist (Cassandra 3.x).
 * Peers without tokens (joining, left) are left out. */
cf_code cf_sc_ring_read(cf_cql_conn *c, cf_sc_ring *out, cf_err *err);

/* ------------------------------------------------------------------ */
/* The engine                                                          */
/* ------------------------------------------------------------------ */

/* READING. One reader per replica cdc_raw directory. A reader takes the
 * directory's segments in id order; a segment is read up to the offset of
 * its <segment>_cdc.idx and again as the index grows, and is finished once
 * the index says COMPLETED and everything up to its offset was read. A
 * segment without an index holds no CDC data yet: it is waited for while it
 * is the newest, and passed over once a newer segment has an index (no CDC
 * data can reach it any more). New segments and index rewrites are seen
 * through inotify, and by listing the directory every poll_ms in case
 * inotify misses them (network file systems). The readers take turns by
 * write time: the reader whose last write is the oldest goes next, so that
 * the copies of a write arrive close together and few digests wait.
 *
 * STATE. The engine's state is a snapshot (cf_sc_engine_snapshot), a
 * source offset map: per replica the last fully processed segment and
 * position, the owned ranges, and the pending digests (base64). It is
 * consistent with what was published: every change of a copy read before
 * the markers is either published (in a record the caller returned before
 * taking the snapshot) or in the pending digests. Stored after the
 * transport acknowledged those records, it is where a restart resumes:
 * copies after the markers are read again, nothing before them is needed.
 *
 * CLEANUP. Once a snapshot is durable (cf_sc_engine_durable), the segments
 * it marks finished are deleted from cdc_raw with their index (or moved to
 * the archive directory), so Cassandra's cdc_total_space does not fill;
 * never a segment the durable state still needs. With the state in
 * Cassandra the connector passes instead the marks of every sidecar's rows
 * of the job (cf_sc_state_cleanup_marks), so several sidecars over the same
 * cdc_raw never remove what another still needs. */

typedef enum cf_sc_cleanup {
    CF_SC_CLEANUP_NONE = 0,
    CF_SC_CLEANUP_DELETE,
    CF_SC_CLEANUP_ARCHIVE
} cf_sc_cleanup;

typedef struct cf_sc_engine cf_sc_engine;
typedef struct cf_sc_emitter cf_sc_emitter;   /* sidecar_events.h */
typedef struct cf_sc_events_opts cf_sc_events_opts;
typedef struct cf_cql_options cf_cql_options; /* cassandra_cql.h */

typedef struct cf_sc_engine_opts {
    const char *const *dirs;   /* replica cdc_raw directories */
    const char *const *names;  /* their names in the state (NULL: the paths) */
    size_t n_dirs;
    cf_cass_schema *schema;    /* borrowed; refreshed in place over CQL when cql is set */
    const cf_cql_options *cql; /* NULL: the schema is fixed */
    cf_sc_cl cl;
    int rf;                    /* > 0: for every keyspace; 0: from each keyspace's replication */
    const char *datacenter;    /* NetworkTopologyStrategy: the data center read */
    int64_t timeout_ms;        /* from the first copy read to the level reached */
    size_t max_pending;
    /* owned ranges (cf_sc_ranges_parse), NULL/"all"; or "ring": the
     * primary ranges of ring_node, computed at start from the ring read over
     * cql (needs cql; a ring change takes effect at the next start) */
    const char *ranges;
    const char *ring_node;     /* "ring": the node's address (NULL: the node cql connects to) */
    const char *const *tables; /* "ks.table" to publish (NULL: every cdc table) */
    size_t n_tables;
    bool once;                 /* stop (CF_ERR_EOF) once everything present is read */
    cf_sc_cleanup cleanup;
    const char *archive_dir;   /* CF_SC_CLEANUP_ARCHIVE: <archive_dir>/<replica name>/ */
    const uint8_t *key;        /* AES key for encrypted segments, or NULL */
    size_t key_len;
    int poll_ms;               /* listing fallback interval (default 1000) */
    const cf_sc_events_opts *events;
    /* Bad input that is not the engine's failure (a corrupt entry, a value
     * that does not decode, an event that cannot be written): report() is
     * asked; CF_OK goes on (errors.tolerance=all), anything else fails the
     * step with that error. NULL: logged and counted, and go on. */
    cf_code (*report)(void *arg, const cf_err *problem);
    void *report_arg;
    /* Tests: the wall clock in ms (NULL: the real one). */
    int64_t (*now_ms)(void *arg);
    void *clock_arg;
} cf_sc_engine_opts;

/* Counters (read from any thread). */
typedef struct cf_sc_stats {
    uint64_t entries;          /* commit log entries read */
    uint64_t copies;           /* partition updates of published tables (replica copies) */
    uint64_t published;        /* digests published */
    uint64_t events;           /* change events made */
    uint64_t duplicates;       /* copies dropped as duplicates */
    uint64_t consistency_failures; /* digests that timed out before the level */
    uint64_t dropped;          /* changes not published: consistency failures, bad events, unknown tables, corrupt entries */
    uint64_t not_owned;        /* updates outside the owned ranges */
    uint64_t skipped;          /* updates of tables not published (cdc=false, not included, counters) */
    uint64_t unknown_tables;   /* mutations skipped: table id unknown to the schema */
    uint64_t corrupt;          /* damaged entries / segments reported */
    uint64_t schema_refreshes;
    uint64_t pending;          /* digests remembered now: waiting for their level, or published and
                                * waiting for the late copies that are duplicates */
    uint64_t unpublished;      /* of them still waiting for their level */
    uint64_t segments_done, segments_total;   /* segments finished / known (with an index) */
    uint64_t bytes_done, bytes_total;         /* their bytes */
    uint64_t read_lag;         /* segments known and not finished */
    uint64_t cleaned;          /* segments deleted or archived */
    uint64_t copy_hits;        /* entries whose bytes an earlier copy had: its results taken, not decoded again */
} cf_sc_stats;

cf_code cf_sc_engine_new(const cf_sc_engine_opts *opts, cf_sc_engine **out, cf_err *err);
void cf_sc_engine_destroy(cf_sc_engine *e); /* NULL-safe */

/* Resume from a stored snapshot (NULL: from the start of every replica's
 * oldest segment). Replicas are matched by name; an unknown one starts
 * from the beginning. */
cf_code cf_sc_engine_restore(cf_sc_engine *e, const cf_value *snapshot, cf_err *err);

/* Read, dedup and publish: the events of published changes go to em. Reads
 * until about max_events events were made or nothing is left to read now.
 *   CF_OK          something was read (*events may be 0)
 *   CF_ERR_AGAIN   nothing to read now (wait with cf_sc_engine_wait)
 *   CF_ERR_EOF     with once: everything present is read
 *   other          a failure (I/O, the pending cache is full, report() refused) */
cf_code cf_sc_engine_step(cf_sc_engine *e, const cf_sc_emitter *em, size_t max_events, size_t *events, cf_err *err);
/* Block up to timeout_ms for new data (inotify, or the listing interval). */
void cf_sc_engine_wait(cf_sc_engine *e, int timeout_ms);
/* Time out digests whose level was not reached (also done by step). */
void cf_sc_engine_expire(cf_sc_engine *e);

/* The state now, as a new source offset map (caller destroys). */
cf_value *cf_sc_engine_snapshot(cf_sc_engine *e);
/* True once a schema refresh over CQL was interrupted by the stop (the
 * cql options' interrupted): an entry waits unprocessed, so no snapshot
 * taken since may be stored (the changes published since the last stored
 * one are published again at the next start), and cf_sc_engine_step reads
 * nothing more (CF_ERR_AGAIN). */
bool cf_sc_engine_halted(const cf_sc_engine *e);
/* The source partition the snapshots belong to: {"cassandra-cdc": job}. */
cf_value *cf_sc_engine_partition(const char *job);
/* A snapshot is durable: clean up the segments it marks finished. */
void cf_sc_engine_durable(cf_sc_engine *e, const cf_value *snapshot);

/* The Cassandra state store (state.store=cassandra): one row per owned
 * range, (job_id, split, start, end, state), the state the snapshot of the
 * engine restricted to that range (cf_sc_state_restrict), written with the
 * epoch as its write time (USING TIMESTAMP, monotonic). */
typedef struct cf_sc_state_row {
    cf_sc_range range;        /* (start, end]; start == end: the whole ring */
    int64_t epoch;            /* its write time */
    const cf_value *snapshot; /* a snapshot (cf_sc_engine_snapshot's format) */
} cf_sc_state_row;

/* Merge the stored rows of a job into one snapshot for the ranges `owned`
 * (NULL or n = 0: the whole ring), as the CEP-44 code merges the states of
 * overlapping ranges, so that a sidecar whose ranges cover ranges others
 * stored state for takes them over:
 *   - each token of owned is owned by the newest row (epoch) covering it;
 *     a row that owns no token (all of it is covered by newer rows) is left
 *     out; rows of the same epoch over one token: the earlier positions;
 *   - per replica (by name) reading resumes at the minimum of the owners'
 *     markers; where no row covers an owned token, every replica reads from
 *     its oldest segment;
 *   - pending digests: those of each token's owner, the same digest from two
 *     owners merged (replica masks united, copies max, published if either);
 *   - "takeover floors": per token interval the owner's own markers, so that
 *     the copies an owner had processed (its changes published or pending)
 *     are not processed again where reading resumes earlier for another
 *     owner's sake (cf_sc_engine_restore applies them, the snapshots carry
 *     them until every reader has passed them).
 * CF_ERR_CORRUPT for a row that is not a snapshot. *out is a new snapshot. */
cf_code cf_sc_state_merge(const cf_sc_state_row *rows, size_t n, const cf_sc_ranges *owned, cf_value **out,
                          cf_err *err);
/* The cleanup rule with several sidecars over one job's rows (state.store=
 * cassandra: the rows of every sidecar, read back from Cassandra): a segment
 * may leave cdc_raw only when every row is past it for that replica. Rows
 * that own no token (every token of theirs is in newer rows: a dead
 * sidecar's row whose ranges were taken over, the taker's markers being no
 * later, see the takeover floors) are left out; per replica the earliest
 * marker of the others (segment -1: nothing, when a row does not name it or
 * has read none of it). *out is a snapshot-shaped map cf_sc_engine_durable
 * takes, or NULL (clean nothing) when n = 0 or a token of the ring is in no
 * row (a sidecar that has stored no state yet, or whose rows expired).
 * CF_ERR_CORRUPT for a row that is not a snapshot. */
cf_code cf_sc_state_cleanup_marks(const cf_sc_state_row *rows, size_t n, cf_value **out, cf_err *err);
/* The part of a snapshot one range stores: its pending digests of tokens in
 * range, its floors cut to range, "ranges" that range. NULL if snapshot is
 * not one. */
cf_value *cf_sc_state_restrict(const cf_value *snapshot, cf_sc_range range);

void cf_sc_engine_stats(const cf_sc_engine *e, cf_sc_stats *out);
/* The ranges the engine owns (given, or computed from the ring). */
const cf_sc_ranges *cf_sc_engine_ranges(const cf_sc_engine *e);
/* Events per second over the last seconds (a gauge). */
double cf_sc_engine_rate(const cf_sc_engine *e);
/* One line for logs: segments and bytes done of the known, events/s. */
void cf_sc_engine_progress(const cf_sc_engine *e, cf_buf *out);
/* Append metric family f (0, 1, ...: returns false past the last) with the
 * labels given (the inside of {...}); with_help adds HELP and TYPE lines. */
bool cf_sc_engine_metrics(const cf_sc_engine *e, int family, const char *labels, bool with_help, cf_buf *out);

/* ------------------------------------------------------------------ */
/* The service configuration                                           */
/* ------------------------------------------------------------------ */

/* The Sidecar CDC service's configuration, as `cdcflow cassandra sidecar
 * --config FILE` and PUT /api/v1/services/cdc/config take it, turned into
 * the cassandra-cdc connector's settings and the worker's:
 *   {"config": {...}} or the flat object; values are strings, numbers,
 *   booleans, or arrays of strings (joined with ',');
 *   "kafka.bootstrap.servers"  -> worker bootstrap.servers
 *   "schema.registry.url"      -> key and value converter avro with that registry
 *   "tables"                   -> table.include.list
 *   "worker.<key>"             -> worker <key>
 *   anything else              -> the connector (checked when it is added,
 *                                 so an unknown key is an error naming it).
 * .properties text (not starting with '{') is read too, with the same keys.
 * Entries are added to (or replace those in) connector and worker. */
cf_code cf_sc_service_config(const char *text, size_t len, const char *name, cf_props *connector, cf_props *worker,
                             cf_err *err);

/* ------------------------------------------------------------------ */
/* CQL-style statements (the design's management syntax, CEP-38)      */
/* ------------------------------------------------------------------ */

/* The statements the design configures the service with, as `cdcflow
 * cassandra exec` and POST /api/v1/services/cdc/statements take them:
 *   CREATE DATA_SINK [IF NOT EXISTS] name WITH uri = 'kafka://host:port/topic'
 *       [AND options = {'key': 'value', ...}]
 *   CREATE DATA_SOURCE [IF NOT EXISTS] cdc ON TABLE ks.t WITH sink = name
 *       [AND options = {'consistency.level': 'LOCAL_QUORUM', ...}]
 *   DROP DATA_SOURCE [IF EXISTS] cdc ON TABLE ks.t
 *   DROP DATA_SINK [IF EXISTS] name
 * Keywords in any case; identifiers as CQL's: unquoted ones are folded to
 * lower case, "Quoted" ones kept as written ("" is a quote); string literals
 * in single quotes ('' is a quote); option values are strings, numbers or
 * true/false (kept as their text), at most 1000 options a map; WITH properties in any order. Statements
 * are separated by ';' (a trailing one is optional); -- and // comment to the
 * end of the line, C's block comments a block. `cdc` is the only data
 * source type. The uri is kafka://SERVERS[/TOPIC]: SERVERS
 * host[:port] items separated by ',' (or `embedded`), TOPIC Kafka topic
 * characters plus the {keyspace} and {table} placeholders of topic.format.
 * Parsing is pure: nothing is looked up. */
typedef enum cf_sc_stmt_kind {
    CF_SC_CREATE_SINK = 0,
    CF_SC_CREATE_SOURCE,
    CF_SC_DROP_SOURCE,
    CF_SC_DROP_SINK
} cf_sc_stmt_kind;

typedef struct cf_sc_stmt {
    cf_sc_stmt_kind kind;
    bool if_exists;           /* IF NOT EXISTS (CREATE), IF EXISTS (DROP) */
    char *name;               /* the sink (DATA_SINK statements), else NULL */
    char *keyspace, *table;   /* the table (DATA_SOURCE statements), else NULL */
    char *sink;               /* CREATE DATA_SOURCE: WITH sink = ..., else NULL */
    char *uri;                /* CREATE DATA_SINK: the uri as written, else NULL */
    char *servers, *topic;    /* of the uri: "host:port,..."; the topic ("" if none) */
    cf_props *options;        /* CREATE: the options in order (empty if none); DROP: NULL */
    int line, column;         /* where the statement starts (1-based; columns in characters) */
} cf_sc_stmt;

typedef struct cf_sc_stmts {
    cf_sc_stmt *v;
    size_t n;
    int err_line, err_column; /* after a parse error: where (1-based), else 0 */
} cf_sc_stmts;

/* Parse text (len bytes, any bytes: NUL or invalid UTF-8 is an error at
 * its place) into out (caller frees with cf_sc_stmts_free, also after an
 * error). At least one statement is needed. CF_ERR_CONFIG on a syntax error:
 * the message is `line L, column C: expected X, found "TOKEN"` (or `found
 * end of input`), the hint the syntax of the statement being read, where
 * "line L, column C"; out->err_line/err_column hold L and C. */
cf_code cf_sc_stmts_parse(const char *text, size_t len, cf_sc_stmts *out, cf_err *err);
void cf_sc_stmts_free(cf_sc_stmts *s); /* NULL-safe; leaves it empty */
/* The name of a kind: "CREATE DATA_SINK", ... (static). */
const char *cf_sc_stmt_kind_name(cf_sc_stmt_kind k);
/* The statements as a JSON array (appended): per statement "statement" (the
 * kind's name), "if_exists"/"if_not_exists", "name" or "keyspace"/"table"/
 * "type", "sink", "uri", "servers", "topic", "options" (an object, in order),
 * "line", "column". */
void cf_sc_stmts_json(const cf_sc_stmts *s, cf_buf *out);

/* The design's REST endpoints, served by the worker's REST listener (a
 * cf_worker_route with prefix "/api/v1/"):
 *   PUT    /api/v1/services/cdc/config   the service configuration (as above) -> the
 *                                        cassandra-cdc connector created or updated
 *                                        (200, {"config": {...}}); 400 for a body that is not
 *                                        one, 409 for Kafka settings other than the worker's
 *   GET    /api/v1/services/cdc/config   {"config": {...}} (passwords hidden), 404 if none
 *   DELETE /api/v1/services/cdc/config   the connector stopped and removed (204), 404
 *   GET    /api/v1/services/cdc/health   {"status": "healthy"|"failed"|"stopped", "state",
 *                                        "lag_segments", "last_published" (ISO 8601 or null),
 *                                        "events_per_second", "pending_mutations",
 *                                        "published", "dropped"}; 503 unless healthy, 404 if
 *                                        no service is configured
 *   GET    /api/v1/cdc/segments          {"segmentInfos": [{"replica", "name", "size", "idx",
 *                                        "completed", "lastModified"}]}: every segment of the
 *                                        configured cdc_raw directories
 *   POST   /api/v1/services/cdc/statements  CQL-style statements (above), as {"statements":
 *                                        "..."} or the text itself (Content-Type application/json
 *                                        either way: the worker refuses text/plain bodies, which a
 *                                        cross-site page can send), applied one after the other ->
 *                                        200 {"results": [{"statement", ..., "result":
 *                                        "created"|"exists"|"dropped"|"absent"}]}; a parse error
 *                                        400 {"error_code", "message", "line", "column", "hint"}
 *                                        and nothing applied; a statement that fails its status
 *                                        with "statement" (its number, from 1) and the results of
 *                                        the ones before it (applied: there is no rollback)
 * The service's state: the named sinks, the data sources (a table bound to a
 * sink, with options) and the settings (the last PUT's body, or the start's).
 * The connector is the settings with, when data sources exist, their sink and
 * options on top (cf. cf_sc_service_compose): the sink's servers are
 * kafka.bootstrap.servers (so they must be the worker's), its topic the
 * connector's topic.format, its options: schema.registry.url, key./value./
 * header.converter... as they are, key./value.serializer avro|json as that
 * converter, anything else a producer setting (producer.override.<key>); the
 * data sources' options are settings as in a PUT's body (consistency.level,
 * cdc_raw.dirs, ...) and their tables the published ones ("tables"). One
 * connector reads the replicas, so every data source uses one sink and an
 * option has one value for all of them (409 otherwise). Dropping the last data
 * source removes the connector; DELETE of the configuration removes the data
 * sources too (the sinks stay). Sinks and sources live in memory, as what a
 * PUT configures: nothing of it survives a restart, unless the service
 * configuration is shared through Cassandra (state.store=cassandra,
 * cf_sc_service_attach): then what they configured is read back at start.
 * Errors are {"error_code": status, "message": ...} as the worker's REST API. */
typedef struct cf_sc_service cf_sc_service;
typedef struct cf_worker cf_worker;

/* name: the connector the service manages; base: the settings every PUT
 * starts from (the command line's; copied, may be NULL); settings: the
 * service configuration it starts with, which statements build on until a
 * PUT replaces it (the design's keys, e.g. the command line's cdc_raw.dirs;
 * copied, may be NULL); worker: the worker's settings (for the Kafka check;
 * copied, may be NULL). */
cf_sc_service *cf_sc_service_new(const char *name, const cf_props *base, const cf_props *settings,
                                 const cf_props *worker);
void cf_sc_service_destroy(cf_sc_service *s); /* NULL-safe */
/* The shared configuration, with state.store=cassandra in the base or the
 * settings (its cql.host, state.keyspace...): the configuration in
 * <state.keyspace>.configs (service "cdc", config map<text, text>) is read
 * now and applied, then every config.refresh.interval.ms (a thread, until
 * detach); PUT, DELETE and the statements write what they configured there.
 * What is shared is the service configuration the connector is made of (the
 * design's keys, data sources' effect included) without what belongs to one
 * sidecar: cdc_raw.dirs, cdc_raw.names, cdc_raw.archive.dir, token.ranges,
 * token.ranges.node, cql.*, encryption.key.file, worker.*; each sidecar keeps
 * its own. The named sinks and data sources themselves are not shared (a
 * sidecar that received their effect cannot DROP them by name: DELETE the
 * configuration or PUT a new one). Without state.store=cassandra: nothing. */
void cf_sc_service_attach(cf_sc_service *s, cf_worker *w);
void cf_sc_service_detach(cf_sc_service *s); /* NULL-safe; before the worker goes */
/* The cf_worker_route handler (arg: the service). */
int cf_sc_service_route(void *arg, cf_worker *w, const char *method, const char *path, const char *body,
                        size_t body_len, const char **content_type, cf_buf *out);

#ifdef __cplusplus
}
#endif
#endif
