/*
 * connector.c - the `cassandra-cdc` source connector: the sidecar engine
 * (cdcflow/sidecar.h) running in the worker like any other source, so the
 * same code publishes to Kafka, to the embedded cluster, to a record file
 * (--output) or straight into cdc-sink (transport=direct).
 *
 * Offsets: one source partition {"cassandra-cdc": <job.id>} whose offset is
 * the engine's snapshot. A snapshot is attached to the last record of a poll
 * batch, when every event made so far is in that batch (none waits in the
 * overflow queue), at most every state.checkpoint.interval.ms (a snapshot
 * with thousands of pending digests is not free), when there is nothing
 * more to read for now, and at the end of a bounded run; a batch without it
 * keeps its last record back for the next poll, so that the state of the
 * last changes always has a record to ride on. The worker stores it only after the transport acknowledged
 * that record and everything before it, so the stored state is never ahead
 * of what was delivered. After a crash the copies read after the stored
 * markers are read again: changes published since the last stored snapshot
 * are published again (at least once); none is lost.
 *
 * Cleanup: commit_record gives the newest acknowledged snapshot, the
 * on-commit callback says it is durable in the offset store; only then are
 * the segments it marks finished deleted (or archived).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/cassandra_cql.h"
#include "cdcflow/cassandra_log.h"
#include "cdcflow/connector.h"
#include "cdcflow/log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/sidecar_events.h"
#include "sidecar_internal.h"

#define COMP "cassandra-cdc"

static const char *const cl_values[] = {"ONE", "TWO", "THREE", "QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL",
                                        "LOCAL_ONE", NULL};
static const char *const cleanup_values[] = {"delete", "archive", "none", NULL};
static const char *const decimal_values[] = {"precise", "string", NULL};
static const char *const store_values[] = {"offsets", "cassandra", NULL};

static const cf_cfg_def cdc_defs[] = {
    {"cdc_raw.dirs", CF_CFG_LIST, CF_CFG_REQUIRED, false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Replicas",
     "The `cdc_raw` directory of each replica (cassandra.yaml `cdc_raw_directory`), comma-separated; one reader "
     "each. Every directory given must hold the replicas of the owned token ranges (e.g. the three nodes of an "
     "RF=3 cluster)."},
    {"cdc_raw.names", CF_CFG_LIST, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Replicas",
     "Names of the replicas in the stored state, in the order of `cdc_raw.dirs` (default: the paths). A renamed "
     "mount keeps its position under the same name."},
    {"cdc_raw.cleanup", CF_CFG_STRING, "delete", false, cleanup_values, false, 0, 0, NULL, CF_IMPORTANCE_HIGH,
     "Replicas",
     "What happens to a segment (and its `_cdc.idx`) once every change in it is acknowledged and the state saying "
     "so is stored: `delete` (Cassandra stops accepting writes to CDC tables when `cdc_raw` reaches "
     "`cdc_total_space`), `archive` (moved to `cdc_raw.archive.dir/<replica>/`) or `none`. With "
     "`state.store=cassandra` the state saying so is every state row of the `job.id` (all sidecars' ranges, "
     "read back from Cassandra): nothing leaves while a token of the ring is in no row."},
    {"cdc_raw.archive.dir", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
     "Replicas", "Where `cdc_raw.cleanup=archive` moves finished segments (same file system as `cdc_raw`)."},
    {"poll.interval.ms", CF_CFG_INT, "1000", false, NULL, true, 10, 3600000, NULL, CF_IMPORTANCE_LOW, "Replicas",
     "The directories are listed this often besides inotify (which network file systems lack), and indexes of "
     "segments being written re-read."},
    {"once", CF_CFG_BOOLEAN, "false", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "Replicas",
     "Read everything present (each segment up to its index's offset) and finish: catch-up runs, tests."},
    {"encryption.key.file", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW,
     "Replicas", "AES key of encrypted commit logs (transparent data encryption), as hex in a file."},
    {"schema.files", CF_CFG_LIST, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Schema",
     "CQL DDL as `DESCRIBE SCHEMA WITH INTERNALS` prints it (table ids, dropped columns). Give every user table: "
     "a batch can mix CDC and other tables. With `cql.host` the schema is read (and refreshed) over CQL instead; "
     "both may be given (the files first)."},
    {"cql.host", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH, "Schema",
     "A node to read the schema from over the CQL native protocol (host or host:port). The schema is read at "
     "start, again on a table id or column the schema does not know, and on SCHEMA_CHANGE events, keeping every "
     "version by table id (an ALTER TABLE during the run loses nothing)."},
    {"cql.port", CF_CFG_INT, "9042", false, NULL, true, 1, 65535, NULL, CF_IMPORTANCE_LOW, "Schema",
     "CQL port when `cql.host` has none."},
    {"cql.username", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Schema",
     "User for CQL when the node asks for authentication."},
    {"cql.password", CF_CFG_PASSWORD, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Schema",
     "Password for `cql.username`."},
    {"consistency.level", CF_CFG_STRING, "LOCAL_QUORUM", false, cl_values, false, 0, 0, NULL, CF_IMPORTANCE_HIGH,
     "Consistency",
     "How many replicas must have written a change before it is published: ONE, TWO, THREE, QUORUM, "
     "LOCAL_QUORUM, EACH_QUORUM, ALL (as Cassandra's ConsistencyLevel.blockFor for the keyspace's replication "
     "factor). The replicas read are one data center's: LOCAL_QUORUM and EACH_QUORUM mean its quorum."},
    {"replication.factor", CF_CFG_INT, "0", false, NULL, true, 0, 64, NULL, CF_IMPORTANCE_MEDIUM, "Consistency",
     "Replication factor for every keyspace; 0 takes each keyspace's own (SimpleStrategy replication_factor, or "
     "the `datacenter` entry of NetworkTopologyStrategy)."},
    {"datacenter", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
     "Consistency", "The data center whose replicas are read (NetworkTopologyStrategy keyspaces with several)."},
    {"consistency.timeout.ms", CF_CFG_LONG, "60000", false, NULL, true, 1, 86400000.0 * 30, NULL,
     CF_IMPORTANCE_MEDIUM, "Consistency",
     "A change whose replicas do not reach the level this long after its first copy was read is dropped, "
     "logged with keyspace, table and token, and counted (cdc_consistency_failures_total). Measured from the "
     "first read, so catching up on old segments works."},
    {"max.pending.digests", CF_CFG_INT, "400000", false, NULL, true, 1, 100000000, NULL, CF_IMPORTANCE_LOW,
     "Consistency",
     "Bound of the changes waiting for more copies (about 60 bytes each); reaching it fails the task with an "
     "error saying which replica lags."},
    {"token.ranges", CF_CFG_STRING, "all", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "Consistency",
     "Murmur3 token ranges this connector owns: `all`; `(start,end]` separated by `;` (Cassandra's ranges; start "
     ">= end wraps); or `ring`: the primary ranges of the node `token.ranges.node`, read at start over CQL "
     "(`cql.host`) from system.local and system.peers_v2 (system.peers before Cassandra 4.0). A node's primary "
     "ranges are (previous token, token] for each of its tokens; they partition the ring whatever the replication "
     "factor, so one connector per node, each reading every replica's `cdc_raw`, publishes each change once in "
     "total. The ring is read once: after a ring change (node added, removed, moved) restart the connectors. "
     "Several connectors over the same replicas with ranges covering the ring once publish each change once in "
     "total."},
    {"token.ranges.node", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
     "Consistency",
     "With `token.ranges=ring`: the node whose primary ranges this connector owns, by address (its broadcast "
     "address as system.peers lists it, or its CQL address). Default: the node `cql.host` connects to "
     "(system.local)."},
    {"table.include.list", CF_CFG_LIST, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM,
     "Events", "`keyspace.table` names to publish (default every table with `cdc = true`; others never are)."},
    {"topic.format", CF_CFG_STRING, "{keyspace}.{table}", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_HIGH,
     "Events", "Topic of a table's events; `{keyspace}` and `{table}` are replaced."},
    {"schema.namespace", CF_CFG_STRING, "cassandra", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "Events",
     "Namespace of the record names (`<namespace>.<keyspace>.<table>.Envelope`, `.Key`, `.Row`)."},
    {"decimal.handling.mode", CF_CFG_STRING, "precise", false, decimal_values, false, 0, 0, NULL,
     CF_IMPORTANCE_LOW, "Events",
     "`precise`: decimal columns as Connect Decimal (Avro bytes with logicalType decimal) at `decimal.scale`; "
     "`string`: as text (Cassandra's BigDecimal text)."},
    {"decimal.scale", CF_CFG_INT, "18", false, NULL, true, 0, 1000, NULL, CF_IMPORTANCE_LOW, "Events",
     "Scale of decimal columns in `precise` mode; a value with more digits after the point is an error "
     "(errors.tolerance), never rounded."},
    {"job.id", CF_CFG_STRING, CF_CFG_REQUIRED, true, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "State",
     "Name of the state in the source offsets: `{\"cassandra-cdc\": job.id}` (default: the connector name)."},
    {"state.checkpoint.interval.ms", CF_CFG_LONG, "1000", false, NULL, true, 0, 3600000, NULL, CF_IMPORTANCE_LOW,
     "State",
     "At most this often the state (markers per replica, pending digests) travels with a record as its source "
     "offset. After a crash, changes published since the last stored state are published again."},
    {"state.store", CF_CFG_STRING, "offsets", false, store_values, false, 0, 0, NULL, CF_IMPORTANCE_MEDIUM, "State",
     "Where the state (markers per replica, pending digests, owned ranges) is stored once the transport "
     "acknowledged the changes it covers: `offsets`, the worker's offset store (as every source); `cassandra`, "
     "the table `cdc_state` of `state.keyspace` through `cql.host` (the design's store: one row per owned range, "
     "job id, split, start, end, state, 30-day TTL, written USING TIMESTAMP from a monotonic clock). At start the "
     "rows of the job whose ranges overlap the owned ones are merged (per token the newest row covering it; "
     "reading resumes at the earliest of the owners' markers; their pending digests united; what each owner had "
     "processed is not processed again), so a connector whose ranges cover ranges other connectors of the same "
     "`job.id` stored state for takes them over (docs/operations.md). When Cassandra cannot be written, the "
     "state is not advanced (logged) and tried again at every offset commit and every second; finished "
     "segments are cleaned up "
     "only after it was written. With no row yet the worker's stored offset is used, if any. With `cassandra` the "
     "service configuration is kept in `state.keyspace`.configs as well (shared by the sidecars of a cluster)."},
    {"state.keyspace", CF_CFG_STRING, "sidecar_internal", false, NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "State",
     "Keyspace of `state.store=cassandra`'s tables (`cdc_state`, `configs`), created if missing."},
    {"state.keyspace.replication", CF_CFG_STRING, "{'class': 'SimpleStrategy', 'replication_factor': 1}", false,
     NULL, false, 0, 0, NULL, CF_IMPORTANCE_LOW, "State",
     "The replication of `state.keyspace` when it is created, as CQL's CREATE KEYSPACE takes it (the default "
     "suits a one-node test cluster; give e.g. {'class': 'NetworkTopologyStrategy', 'dc1': 3} in production). An "
     "existing keyspace is left as it is. The state is written and read at LOCAL_QUORUM."},
    {"config.refresh.interval.ms", CF_CFG_LONG, "30000", false, NULL, true, 100, 86400000, NULL, CF_IMPORTANCE_LOW,
     "State",
     "`cdcflow cassandra sidecar` with `state.store=cassandra`: the service configuration (PUT/DELETE "
     "/api/v1/services/cdc/config, the CQL-style statements) is written to `state.keyspace`.configs and read "
     "from it at start and this often, so that the sidecars of one cluster share it. The connector itself does "
     "not use it."},
    {"progress.interval.ms", CF_CFG_LONG, "10000", false, NULL, true, 0, 86400000, NULL, CF_IMPORTANCE_LOW, "State",
     "A progress line (segments and bytes done of those known, events/s) this often while reading; 0: none."},
    {NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL},
};

const cf_cfg_table cf_cassandra_cdc_table = {
    "cassandra-cdc source",
    "`cassandra-cdc` source",
    "Cassandra CDC (the design of Cassandra Sidecar CDC, CEP-44): `\"connector.class\": \"cassandra-cdc\"`. Reads "
    "the commit log segments in each replica's `cdc_raw`, deduplicates the replicas' copies of every write, "
    "publishes each change once its consistency level is reached, as Avro or JSON change events (see "
    "docs/formats.md). `tasks.max` must be 1: split the ring with `token.ranges` over several connectors instead.",
    cdc_defs,
    NULL,
};

typedef struct cdc_task {
    cf_source_ctx *ctx;
    cf_cass_schema *schema;
    cf_sc_engine *e;
    cf_value *partition;
    cf_record **queue; /* events made beyond a poll's room */
    size_t qhead, qlen, qcap;
    cf_record **out;   /* the poll being filled */
    size_t max, *n;
    int64_t checkpoint_ms, last_checkpoint_us, progress_ms, last_progress_us;
    bool eof;
    bool busy; /* records made since the last idle poll */
    cf_value *acked;   /* newest snapshot acknowledged, not yet known durable */
    bool halt_logged;
    cf_sc_cstore *store; /* state.store=cassandra */
    char *job;
    bool store_failing;
    int64_t store_retry_us; /* when a failed write was last tried */
    /* cleanup with the state in Cassandra: by the rows of every sidecar of the job */
    bool cleanup_on, cleanup_pending, cleanup_failing, cleanup_kept_logged, cleanup_pending_logged;
    int64_t cleanup_try_us;
    cf_value *durable; /* the newest snapshot stored */
    cf_cql_options cql;
    char cql_host[256];
} cdc_task;

/* The CQL client's interrupt (schema reads at start and refreshes): a stop
 * ends its waits at once instead of after connect/request timeouts (5 s,
 * 30 s) on a node that accepts and does not answer. */
static bool cql_interrupted(void *arg) { return cf_source_ctx_stopping(((cdc_task *)arg)->ctx); }

static cf_record *new_record(void *arg) { return cf_source_ctx_record_new(((cdc_task *)arg)->ctx); }

static void emit(void *arg, cf_record *rec, cf_sc_op op) {
    (void)op;
    cdc_task *t = arg;
    if (t->out && *t->n < t->max && t->qlen == 0) {
        t->out[(*t->n)++] = rec;
        return;
    }
    if (t->qlen == t->qcap) {
        size_t nc = t->qcap ? t->qcap * 2 : 256;
        cf_record **q = cf_xmalloc(nc * sizeof *q);
        for (size_t i = 0; i < t->qlen; i++) q[i] = t->queue[(t->qhead + i) % t->qcap];
        free(t->queue);
        t->queue = q;
        t->qcap = nc;
        t->qhead = 0;
    }
    t->queue[(t->qhead + t->qlen++) % t->qcap] = rec;
}

static cf_code report(void *arg, const cf_err *problem) {
    cdc_task *t = arg;
    cf_err err;
    cf_code rc = cf_source_ctx_report(t->ctx, NULL, 0, problem, &err);
    return rc;
}

static bool metrics(void *arg, int family, const char *labels, bool with_help, cf_buf *out) {
    return cf_sc_engine_metrics(((cdc_task *)arg)->e, family, labels, with_help, out);
}

static void cdc_stop(void *task) {
    cdc_task *t = task;
    if (!t) return;
    if (t->e) {
        cf_buf b = CF_BUF_INIT;
        cf_sc_engine_progress(t->e, &b);
        CF_INFO(COMP, "stopped: %s", b.data);
        cf_buf_free(&b);
    }
    for (size_t i = 0; i < t->qlen; i++) cf_record_destroy(t->queue[(t->qhead + i) % t->qcap]);
    free(t->queue);
    cf_sc_engine_destroy(t->e);
    cf_cass_schema_destroy(t->schema);
    cf_value_destroy(t->partition);
    cf_value_destroy(t->acked);
    cf_value_destroy(t->durable);
    cf_sc_cstore_close(t->store);
    free(t->job);
    free(t);
}

static void cdc_commit(void *arg);
static void clean_shared(cdc_task *t);
#define CLEANUP_EVERY_US 5000000

static cf_code cdc_start(const cf_config *cfg, cf_source_ctx *ctx, void **task, cf_err *err) {
    *task = NULL;
    if (cf_source_ctx_task_count(ctx) > 1) {
        cf_err_set(err, CF_ERR_CONFIG, "cassandra-cdc runs one task (tasks.max = %d given)", cf_source_ctx_task_count(ctx));
        cf_err_hint(err, "Set tasks.max=1; to spread the work, run several connectors with token.ranges that split "
                         "the ring.");
        return CF_ERR_CONFIG;
    }
    cdc_task *t = cf_xcalloc(1, sizeof *t);
    t->ctx = ctx;
    t->schema = cf_cass_schema_new();
    size_t nfiles = 0, ndirs = 0, nnames = 0, ntables = 0;
    const char *const *files = cf_config_list(cfg, "schema.files", &nfiles);
    const char *host = cf_config_string(cfg, "cql.host");
    cf_code rc = CF_OK;
    for (size_t i = 0; i < nfiles && !rc; i++) rc = cf_cass_ddl_parse_file(t->schema, files[i], err);
    if (rc) goto fail;
    if (!nfiles && !host) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "cassandra-cdc needs the table schemas: schema.files or cql.host");
        cf_err_hint(err, "Give `DESCRIBE SCHEMA WITH INTERNALS` output as schema.files, or a node as cql.host.");
        goto fail;
    }
    const char *ranges = cf_config_string(cfg, "token.ranges");
    if (ranges && strcasecmp(ranges, "ring") == 0 && !host) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "token.ranges=ring needs cql.host: the ring is read over CQL");
        cf_err_hint(err, "Set cql.host to a node of the cluster (token.ranges.node then chooses whose ranges, "
                         "default that node's), or give token.ranges as (start,end];... or all.");
        goto fail;
    }
    if (cf_config_string(cfg, "token.ranges.node") && !(ranges && strcasecmp(ranges, "ring") == 0)) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "token.ranges.node is set but token.ranges is not ring");
        cf_err_detail(err, "token.ranges = \"%s\"", ranges ? ranges : "");
        cf_err_hint(err, "Set token.ranges=ring to own that node's primary ranges, or remove token.ranges.node.");
        goto fail;
    }
    const char *const *dirs = cf_config_list(cfg, "cdc_raw.dirs", &ndirs);
    const char *const *names = cf_config_list(cfg, "cdc_raw.names", &nnames);
    if (nnames && nnames != ndirs) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "cdc_raw.names has %zu names for %zu directories", nnames, ndirs);
        goto fail;
    }
    const char *const *tables = cf_config_list(cfg, "table.include.list", &ntables);
    cf_sc_cl cl;
    if ((rc = cf_sc_cl_parse(cf_config_string(cfg, "consistency.level"), &cl, err))) goto fail;
    const char *cleanup = cf_config_string(cfg, "cdc_raw.cleanup");
    cf_sc_events_opts eo = {.topic_format = cf_config_string(cfg, "topic.format"),
                            .ns = cf_config_string(cfg, "schema.namespace"),
                            .decimal_scale = cf_config_int(cfg, "decimal.scale"),
                            .decimal_scale_set = true,
                            .decimal_as_string = strcasecmp(cf_config_string(cfg, "decimal.handling.mode"), "string") == 0};
    uint8_t key[32];
    size_t key_len = 0;
    const char *kf = cf_config_string(cfg, "encryption.key.file");
    if (kf && (rc = cf_cass_key_file_read(kf, key, &key_len, err))) goto fail;
    cf_sc_engine_opts o = {
        .dirs = dirs, .names = nnames ? names : NULL, .n_dirs = ndirs, .schema = t->schema, .cl = cl,
        .rf = cf_config_int(cfg, "replication.factor"), .datacenter = cf_config_string(cfg, "datacenter"),
        .timeout_ms = cf_config_long(cfg, "consistency.timeout.ms"),
        .max_pending = (size_t)cf_config_int(cfg, "max.pending.digests"),
        .ranges = ranges, .ring_node = cf_config_string(cfg, "token.ranges.node"), .tables = ntables ? tables : NULL, .n_tables = ntables,
        .once = cf_config_bool(cfg, "once"),
        .cleanup = strcasecmp(cleanup, "delete") == 0    ? CF_SC_CLEANUP_DELETE
                   : strcasecmp(cleanup, "archive") == 0 ? CF_SC_CLEANUP_ARCHIVE
                                                         : CF_SC_CLEANUP_NONE,
        .archive_dir = cf_config_string(cfg, "cdc_raw.archive.dir"), .key = key_len ? key : NULL, .key_len = key_len,
        .poll_ms = cf_config_int(cfg, "poll.interval.ms"), .events = &eo, .report = report, .report_arg = t};
    if (host) {
        const char *colon = strrchr(host, ':');
        t->cql.port = cf_config_int(cfg, "cql.port");
        if (colon && strchr(host, ':') == colon) { /* host:port (not an IPv6 address) */
            snprintf(t->cql_host, sizeof t->cql_host, "%.*s", (int)(colon - host), host);
            t->cql.port = atoi(colon + 1);
        } else {
            snprintf(t->cql_host, sizeof t->cql_host, "%s", host);
        }
        t->cql.host = t->cql_host;
        t->cql.username = cf_config_string(cfg, "cql.username");
        t->cql.password = cf_config_string(cfg, "cql.password");
        t->cql.interrupted = cql_interrupted;
        t->cql.interrupt_arg = t;
        o.cql = &t->cql;
    }
    if ((rc = cf_sc_engine_new(&o, &t->e, err))) goto fail;
    const char *job = cf_config_string(cfg, "job.id");
    t->job = cf_xstrdup(job ? job : cf_source_ctx_connector_name(ctx));
    t->partition = cf_sc_engine_partition(t->job);
    cf_value *stored = NULL;
    if (strcasecmp(cf_config_string(cfg, "state.store"), "cassandra") == 0) {
        if (!host) {
            rc = cf_err_set(err, CF_ERR_CONFIG, "state.store=cassandra needs cql.host: the state is kept in Cassandra");
            cf_err_hint(err, "Set cql.host to a node of the cluster, or state.store=offsets.");
            goto fail;
        }
        cf_sc_cstore_opts so = {.cql = &t->cql, .keyspace = cf_config_string(cfg, "state.keyspace"),
                                .replication = cf_config_string(cfg, "state.keyspace.replication")};
        if ((rc = cf_sc_cstore_open(&so, &t->store, err))) goto fail;
        size_t nrows = 0;
        rc = cf_sc_cstore_load(t->store, t->job, cf_sc_engine_ranges(t->e), &stored, &nrows, err);
        if (rc) {
            cf_err_hint(err, "The stored state of job %s cannot be read: the connector starts once it can.", t->job);
            goto fail;
        }
        if (stored) {
            CF_INFO(COMP, "state: %zu row(s) of job %s in %s.cdc_state merged", nrows, t->job,
                    cf_sc_cstore_keyspace(t->store));
        } else {
            stored = cf_source_ctx_offset(ctx, t->partition);
            CF_INFO(COMP, "state: no row of job %s in %s.cdc_state overlaps the owned ranges%s", t->job,
                    cf_sc_cstore_keyspace(t->store), stored ? ": resuming from the worker's stored offset" : "");
        }
    } else {
        stored = cf_source_ctx_offset(ctx, t->partition);
    }
    rc = cf_sc_engine_restore(t->e, stored, err);
    cf_value_destroy(stored);
    if (rc) goto fail;
    t->cleanup_on = o.cleanup != CF_SC_CLEANUP_NONE;
    t->checkpoint_ms = cf_config_long(cfg, "state.checkpoint.interval.ms");
    t->progress_ms = cf_config_long(cfg, "progress.interval.ms");
    t->last_checkpoint_us = t->last_progress_us = cf_sc_mono_us();
    cf_source_ctx_set_metrics(ctx, metrics, t);
    cf_source_ctx_on_commit(ctx, cdc_commit, t);
    *task = t;
    return CF_OK;
fail:
    cdc_stop(t);
    return rc;
}

static void progress(cdc_task *t, const char *what) {
    cf_buf b = CF_BUF_INIT;
    cf_sc_engine_progress(t->e, &b);
    CF_INFO(COMP, "%s: %s", what, b.data);
    cf_buf_free(&b);
}

static cf_code cdc_poll(void *task, cf_record **out, size_t max, size_t *n, cf_err *err) {
    cdc_task *t = task;
    *n = 0;
    while (*n < max && t->qlen) { /* what the last poll had no room for, first */
        out[(*n)++] = t->queue[t->qhead];
        t->qhead = (t->qhead + 1) % t->qcap;
        t->qlen--;
    }
    t->out = out;
    t->max = max;
    t->n = n;
    int64_t t0 = cf_sc_mono_us();
    cf_code rc = CF_OK;
    bool idle = false;
    const cf_sc_emitter em = {new_record, emit, t};
    /* A stop reads nothing new: what was made is handed out (it rides with
     * the state, below), and no schema refresh starts during the stop */
    while (!t->eof && *n < max && !t->qlen && !cf_source_ctx_stopping(t->ctx)) {
        size_t k;
        rc = cf_sc_engine_step(t->e, &em, max - *n, &k, err);
        if (rc == CF_OK) {
            if (cf_sc_mono_us() - t0 > 50000 || cf_source_ctx_stopping(t->ctx)) break; /* return what we have */
            continue;
        }
        if (rc == CF_ERR_AGAIN) {
            rc = CF_OK;
            idle = true;
            if (*n == 0 && t->busy) {
                /* a catch-up ended: give the heap it left free back to the system, an idle
                 * sidecar is meant to be small (glibc keeps freed memory otherwise) */
                malloc_trim(0);
                t->busy = false;
            }
            if (*n == 0) cf_sc_engine_wait(t->e, 100);
            break;
        }
        if (rc == CF_ERR_EOF) {
            rc = CF_OK;
            t->eof = true;
            progress(t, "everything present is read");
            break;
        }
        break; /* a failure: the records made are handed over first */
    }
    t->out = NULL;
    if (*n) t->busy = true;
    int64_t now = cf_sc_mono_us();
    /* the state store failed and nothing new came to commit: try the acknowledged state again every second */
    if (t->store_failing && t->acked && now - t->store_retry_us >= 1000000) cdc_commit(t);
    /* segments other sidecars held back, or a cleanup left for later: asked again every CLEANUP_EVERY_US */
    if (t->cleanup_pending && !t->store_failing && now - t->cleanup_try_us >= CLEANUP_EVERY_US) clean_shared(t);
    /* The state rides on the last record, when no event waits in the queue.
     * Not every batch: a snapshot costs its pending digests. But the state
     * of the last batch before an end or a pause must not be lost, and the
     * poll that sees the end may have no record left to carry it: so a batch
     * that carries no state keeps its last record back for the next poll,
     * which sends it with the state when it finds nothing more to read. */
    bool due = now - t->last_checkpoint_us >= t->checkpoint_ms * 1000 || t->eof || idle ||
               cf_source_ctx_stopping(t->ctx);
    if (cf_sc_engine_halted(t->e)) {
        /* an entry waits unprocessed (its schema refresh was abandoned):
         * no state from now on is stored; these records go out without it
         * (published again at the next start: at least once) */
        if (*n && !t->halt_logged) {
            CF_WARN(COMP, "stopping: the last %zu change events go out without the state (a schema refresh was "
                          "abandoned); they are published again at the next start", *n + t->qlen);
            t->halt_logged = true;
        }
        return rc;
    }
    if (*n && !t->qlen) {
        if (due) {
            cf_record_set_source(out[*n - 1], cf_value_ref(t->partition), cf_sc_engine_snapshot(t->e));
            t->last_checkpoint_us = now;
        } else {
            emit(t, out[--(*n)], CF_SC_OP_INSERT); /* into the (empty) queue: first out next time */
        }
    }
    if (t->progress_ms && now - t->last_progress_us >= t->progress_ms * 1000) {
        progress(t, "progress");
        t->last_progress_us = now;
    }
    if (rc) return rc;
    if (t->eof && *n == 0 && !t->qlen) return CF_ERR_EOF;
    return CF_OK;
}

static void cdc_commit_record(void *task, const cf_record *rec) {
    cdc_task *t = task;
    if (!rec->source_offset) return;
    cf_value_destroy(t->acked);
    t->acked = cf_value_clone(rec->source_offset);
}

/* a's mark of replica name has fewer segments finished than (bseg, bdone) */
static bool finished_before(const cf_value *a, const char *name, int64_t bseg, int64_t bdone) {
    const cf_value *n = cf_value_map_get_str(a, "replicas");
    char k[64];
    for (int64_t i = 0; n && i < n->u.i; i++) {
        snprintf(k, sizeof k, "r%lld.name", (long long)i);
        const cf_value *v = cf_value_map_get_str(a, k);
        if (!v || v->type != CF_STRING || strcmp(v->u.s.ptr, name) != 0) continue;
        snprintf(k, sizeof k, "r%lld.segment", (long long)i);
        const cf_value *seg = cf_value_map_get_str(a, k);
        snprintf(k, sizeof k, "r%lld.done", (long long)i);
        const cf_value *done = cf_value_map_get_str(a, k);
        if (!seg || !done) return true;
        return seg->u.i < bseg || (seg->u.i == bseg && !done->u.i && bdone);
    }
    return true;
}

/* The marks leave segments this sidecar has finished in cdc_raw (another sidecar is behind). */
static bool held_back(const cf_value *marks, const cf_value *own) {
    const cf_value *n = cf_value_map_get_str(own, "replicas");
    char k[64];
    for (int64_t i = 0; n && i < n->u.i; i++) {
        snprintf(k, sizeof k, "r%lld.name", (long long)i);
        const cf_value *name = cf_value_map_get_str(own, k);
        snprintf(k, sizeof k, "r%lld.segment", (long long)i);
        const cf_value *seg = cf_value_map_get_str(own, k);
        snprintf(k, sizeof k, "r%lld.done", (long long)i);
        const cf_value *done = cf_value_map_get_str(own, k);
        if (!name || name->type != CF_STRING || !seg || !done || seg->u.i < 0) continue;
        if (finished_before(marks, name->u.s.ptr, seg->u.i, done->u.i)) return true;
    }
    return false;
}

/* With the state in Cassandra, several sidecars may share the job's ranges
 * over the same cdc_raw: a segment leaves it only once every row of the job
 * (theirs, read back, and ours) is past it (cf_sc_state_cleanup_marks).
 * Cassandra unreachable: nothing is cleaned, asked again. */
static void clean_shared(cdc_task *t) {
    t->cleanup_try_us = cf_sc_mono_us();
    t->cleanup_pending = true;
    if (!t->cleanup_on || !t->durable) {
        t->cleanup_pending = false;
        return;
    }
    cf_value *marks = NULL;
    size_t nrows = 0;
    cf_err err;
    if (cf_sc_cstore_cleanup_marks(t->store, t->job, &marks, &nrows, &err)) {
        if (!t->cleanup_failing) {
            cf_log_err(CF_LOG_WARN, COMP, &err);
            CF_WARN(COMP, "job %s: no segment leaves cdc_raw until the state rows of every sidecar can be read "
                          "(tried again every 5 s)", t->job);
        }
        t->cleanup_failing = true;
        return;
    }
    if (t->cleanup_failing) CF_INFO(COMP, "job %s: the state rows of every sidecar are read again", t->job);
    t->cleanup_failing = false;
    if (!marks) {
        if (!t->cleanup_kept_logged)
            CF_INFO(COMP, "job %s: finished segments stay in cdc_raw: some token range is in none of the %zu state "
                          "row(s) in %s.cdc_state (a sidecar that has stored no state yet, or whose rows expired)",
                    t->job, nrows, cf_sc_cstore_keyspace(t->store));
        t->cleanup_kept_logged = true;
        return;
    }
    t->cleanup_kept_logged = false;
    cf_sc_engine_durable(t->e, marks);
    bool back = held_back(marks, t->durable);
    if (back && !t->cleanup_pending_logged)
        CF_INFO(COMP, "job %s: segments finished here stay in cdc_raw until the state rows of every sidecar in "
                      "%s.cdc_state are past them", t->job, cf_sc_cstore_keyspace(t->store));
    t->cleanup_pending_logged = back;
    t->cleanup_pending = back;
    cf_value_destroy(marks);
}

static void cdc_commit(void *arg) {
    cdc_task *t = arg;
    if (!t->acked) return;
    if (t->store) { /* durable once Cassandra has it; until then the older state stays (a newer acked one replaces it) */
        cf_err err;
        if (cf_sc_cstore_save(t->store, t->job, cf_sc_engine_ranges(t->e), t->acked, &err)) {
            if (!t->store_failing) {
                cf_log_err(CF_LOG_WARN, COMP, &err);
                CF_WARN(COMP, "the state of job %s is not advanced (nothing is lost: changes since the stored state "
                              "are published again after a restart); tried again every second",
                        t->job);
            }
            t->store_failing = true;
            t->store_retry_us = cf_sc_mono_us();
            return;
        }
        if (t->store_failing) CF_INFO(COMP, "the state of job %s is stored again", t->job);
        t->store_failing = false;
        cf_value_destroy(t->durable);
        t->durable = t->acked;
        t->acked = NULL;
        /* the rows of every sidecar are read at most every CLEANUP_EVERY_US (their states are large: their
         * pending digests), but always at the end of a --once run and at a stop */
        if (t->eof || cf_source_ctx_stopping(t->ctx) || cf_sc_mono_us() - t->cleanup_try_us >= CLEANUP_EVERY_US)
            clean_shared(t);
        else if (t->cleanup_on)
            t->cleanup_pending = true;
        return;
    }
    cf_sc_engine_durable(t->e, t->acked);
    cf_value_destroy(t->acked);
    t->acked = NULL;
}

static const char *const cdc_aliases[] = {"CassandraCdc", "cassandra", NULL};

const cf_connector_plugin cf_cassandra_cdc_plugin = {
    .name = "cassandra-cdc",
    .aliases = cdc_aliases,
    .kind = CF_CONNECTOR_SOURCE,
    .description = "Cassandra CDC: replicas' cdc_raw commit logs, deduplicated at a consistency level, as change events",
    .version = "0.1.0",
    .config = &cf_cassandra_cdc_table,
    .u.source = {.start = cdc_start, .poll = cdc_poll, .commit_record = cdc_commit_record, .stop = cdc_stop},
};
