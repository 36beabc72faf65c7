/*
 * cmd_sidecar.c - `cdcflow cassandra sidecar`: the Cassandra CDC sidecar as
 * a standalone service. Thin: its flags (and --config FILE) become the
 * settings of one cassandra-cdc connector and of the worker that runs it
 * (cf_sc_service_config), then cf_cli_run_worker runs it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/config.h"
#include "cdcflow/props.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/transforms.h"
#include "cdcflow/worker.h"
#include "cli.h"

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, "cdcflow cassandra sidecar: ");
    fprintf(stderr, fmt, arg ? arg : "");
    fprintf(stderr, "\nHINT:  See `cdcflow cassandra sidecar --help`.\n");
    return CF_EXIT_USAGE;
}

/* Append value to a comma list setting. */
static void add_list(cf_props *p, const char *key, const char *value) {
    const char *old = cf_props_get(p, key);
    if (!old || !*old) {
        cf_props_set(p, key, value);
        return;
    }
    cf_buf b = CF_BUF_INIT;
    cf_buf_printf(&b, "%s,%s", old, value);
    cf_props_set(p, key, b.data);
    cf_buf_free(&b);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cf_buf b = CF_BUF_INIT;
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) cf_buf_append(&b, tmp, n);
    fclose(f);
    if (!b.data) cf_buf_append_str(&b, "");
    return cf_buf_detach(&b, len);
}

static void sidecar_started(void *arg, cf_worker *w) { cf_sc_service_attach(arg, w); }
static void sidecar_ending(void *arg) { cf_sc_service_detach(arg); }

static int run(int argc, char **argv) {
    cf_props *c = cf_props_new(), *w = cf_props_new();
    const char *output = NULL, *name = "cassandra-cdc", *format = NULL;
    bool rest = false, once = false, cleanup_given = false, replicas_given = false, schemas_given = false;
    int code = CF_EXIT_OK;
    /* flag -> connector setting, one value each */
    static const struct {
        const char *flag, *key;
        bool worker;
    } simple[] = {
        {"--cql", "cql.host", false},
        {"--cql-user", "cql.username", false},
        {"--rf", "replication.factor", false},
        {"--consistency", "consistency.level", false},
        {"--datacenter", "datacenter", false},
        {"--timeout-ms", "consistency.timeout.ms", false},
        {"--max-pending", "max.pending.digests", false},
        {"--ranges", "token.ranges", false},
        {"--ranges-node", "token.ranges.node", false},
        {"--tables", "table.include.list", false},
        {"--topic-format", "topic.format", false},
        {"--cleanup", "cdc_raw.cleanup", false},
        {"--archive-dir", "cdc_raw.archive.dir", false},
        {"--key-file", "encryption.key.file", false},
        {"--progress-ms", "progress.interval.ms", false},
        {"--poll-ms", "poll.interval.ms", false},
        {"--job", "job.id", false},
        {"--bootstrap-servers", "bootstrap.servers", true},
        {"--offsets", "offset.storage.file.filename", true},
    };
    /* --config first: flags given on the command line win */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") != 0) continue;
        if (i + 1 >= argc) {
            code = usage("--config needs a FILE%s", "");
            goto out;
        }
        size_t len;
        char *text = slurp(argv[i + 1], &len);
        if (!text) {
            code = usage("cannot read --config file %s", argv[i + 1]);
            goto out;
        }
        cf_err err;
        cf_code rc = cf_sc_service_config(text, len, argv[i + 1], c, w, &err);
        free(text);
        if (rc) {
            cf_cli_print_err(&err);
            code = CF_EXIT_USAGE;
            goto out;
        }
        if (cf_props_get(c, "once")) once = strcmp(cf_props_get(c, "once"), "true") == 0;
        if (cf_props_has(c, "cdc_raw.cleanup")) cleanup_given = true;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        size_t k;
        for (k = 0; k < sizeof simple / sizeof *simple; k++)
            if (strcmp(a, simple[k].flag) == 0) break;
        if (k < sizeof simple / sizeof *simple) {
            if (!v) {
                code = usage("%s needs a value", a);
                goto out;
            }
            cf_props_set(simple[k].worker ? w : c, simple[k].key, v);
            if (strcmp(a, "--cleanup") == 0) cleanup_given = true;
        } else if (strcmp(a, "--config") == 0) {
            /* read above */
        } else if (strcmp(a, "--replica") == 0 && v) {
            if (!replicas_given) cf_props_set(c, "cdc_raw.dirs", NULL); /* the command line's replace the file's */
            replicas_given = true;
            add_list(c, "cdc_raw.dirs", v);
        } else if (strcmp(a, "--replica-name") == 0 && v) {
            add_list(c, "cdc_raw.names", v);
        } else if (strcmp(a, "--schema") == 0 && v) {
            if (!schemas_given) cf_props_set(c, "schema.files", NULL);
            schemas_given = true;
            add_list(c, "schema.files", v);
        } else if (strcmp(a, "--output") == 0 && v) {
            output = v;
        } else if (strcmp(a, "--name") == 0 && v) {
            name = v;
        } else if (strcmp(a, "--format") == 0 && v) {
            format = v;
        } else if (strcmp(a, "--schema-registry") == 0 && v) {
            cf_props_set(c, "key.converter", "avro");
            cf_props_set(c, "value.converter", "avro");
            cf_props_set(c, "key.converter.schema.registry.url", v);
            cf_props_set(c, "value.converter.schema.registry.url", v);
        } else if (strcmp(a, "--rest") == 0 && v) {
            cf_props_set(w, "rest.port", v);
            rest = true;
        } else if (strcmp(a, "--once") == 0) {
            takes = false;
            once = true;
        } else if (a[0] == '-') {
            code = usage(v || a[1] != '-' ? "unknown option \"%s\"" : "option \"%s\" needs a value", a);
            goto out;
        } else {
            code = usage("unexpected argument \"%s\"", a);
            goto out;
        }
        if (takes) i++;
    }
    if (format) {
        if (strcmp(format, "json") == 0) {
            cf_props_set(c, "key.converter", "json");
            cf_props_set(c, "value.converter", "json");
        } else if (strcmp(format, "avro") != 0) {
            code = usage("--format is json or avro, not \"%s\"", format);
            goto out;
        } else if (!cf_props_has(c, "value.converter.schema.registry.url")) {
            code = usage("--format avro needs --schema-registry URL%s", "");
            goto out;
        }
    }
    if (cf_props_has(w, "listeners") || cf_props_has(w, "rest.port")) rest = true;
    /* with REST the service may start unconfigured: PUT /api/v1/services/cdc/config configures it */
    bool configured = cf_props_has(c, "cdc_raw.dirs");
    if (!configured && !rest) {
        code = usage("no replica directory: give --replica DIR (once per replica) or cdc_raw.dirs in --config%s", "");
        goto out;
    }
    if (!output && !cf_props_has(w, "bootstrap.servers")) {
        code = usage("nowhere to publish: give --output FILE (a record file) or --bootstrap-servers HOST:PORT%s", "");
        goto out;
    }
    if (cf_props_has(c, "cql.username") && !cf_props_has(c, "cql.password") && getenv("CDCFLOW_CQL_PASSWORD"))
        cf_props_set(c, "cql.password", getenv("CDCFLOW_CQL_PASSWORD"));
    if (once) cf_props_set(c, "once", "true");
    /* a catch-up run over copies should not delete them unless asked to */
    if (once && !cleanup_given) cf_props_set(c, "cdc_raw.cleanup", "none");
    if (!cf_props_has(c, "progress.interval.ms")) cf_props_set(c, "progress.interval.ms", once ? "1000" : "10000");
    cf_props_set(c, "connector.class", "cassandra-cdc");
    cf_props_set(c, "name", name);
    cf_props_set(c, "tasks.max", "1");
    /* the design stores its state every second (persist_delay_millis) */
    if (!cf_props_has(w, "offset.flush.interval.ms")) cf_props_set(w, "offset.flush.interval.ms", "1000");
    cf_props *base = cf_props_clone(c); /* what a PUT of the service configuration starts from */
    cf_props_set(base, "cdc_raw.dirs", NULL);
    cf_props_set(base, "cdc_raw.names", NULL);
    cf_props *start = cf_props_new(); /* what statements build on until a PUT: the replicas given */
    if (configured) {
        cf_props_set(start, "cdc_raw.dirs", cf_props_get(c, "cdc_raw.dirs"));
        cf_props_set(start, "cdc_raw.names", cf_props_get(c, "cdc_raw.names"));
    }
    cf_sc_service *svc = cf_sc_service_new(name, base, start, w);
    cf_props_destroy(start);
    cf_props_destroy(base);
    cf_worker_route route = {"/api/v1/", cf_sc_service_route, svc};
    cf_worker_opts opts = {.output_file = output, .rest = rest, .transforms = &cf_transforms_for_worker,
                           .routes = &route, .n_routes = 1, .validate = cf_cli_validate_props};
    const cf_props *cp[1] = {c};
    const char *names[1] = {name};
    /* with state.store=cassandra the service configuration is shared through Cassandra */
    cf_cli_hooks hooks = {sidecar_started, sidecar_ending, svc};
    code = cf_cli_run_worker_hooks("cdcflow cassandra sidecar", w, &opts, cp, names, NULL, configured ? 1 : 0, &hooks);
    cf_sc_service_destroy(svc);
out:
    cf_props_destroy(c);
    cf_props_destroy(w);
    return code;
}

const cf_command cf_cmd_cassandra_sidecar = {
    "cassandra sidecar",
    "the Cassandra CDC sidecar: replicas' cdc_raw, deduplicated, published once per change",
    "Usage: cdcflow cassandra sidecar [--config FILE] [--replica DIR]... [--schema FILE.cql]... [--cql HOST[:PORT]]\n"
    "                                 [--rf N] [--consistency LEVEL] [--once] [--output FILE | --bootstrap-servers B]\n"
    "                                 [options]\n"
    "\n"
    "Reads the commit log segments Cassandra writes into each replica's cdc_raw directory, decodes every\n"
    "mutation with the table schemas, deduplicates the replicas' copies of each write (an MD5 digest of\n"
    "the partition update), and publishes a change once the copies reach the consistency level for the\n"
    "keyspace's replication factor: as change events (the envelope of Cassandra Sidecar CDC, CEP-44:\n"
    "operationType, timestampMicros, updateFields, payload with every column; see docs/formats.md) to\n"
    "Kafka, or to a record file. It runs the cassandra-cdc connector in a worker: the flags below are\n"
    "its settings (docs/configuration.md has them all).\n"
    "\n"
    "Replicas and schema:\n"
    "  --replica DIR         a replica's cdc_raw directory; repeat once per replica (RF=3: three)\n"
    "  --replica-name NAME   its name in the stored state (repeat, in --replica order; default the path)\n"
    "  --schema FILE.cql     `DESCRIBE SCHEMA WITH INTERNALS` output; repeatable. Give every user table\n"
    "                        (a batch can mix CDC and other tables)\n"
    "  --cql HOST[:PORT]     read the schema over CQL instead, and again on an unknown table id or\n"
    "                        column and on schema change events\n"
    "  --cql-user USER       when the node asks for authentication (password: $CDCFLOW_CQL_PASSWORD)\n"
    "  --key-file FILE       AES key (hex) of encrypted commit logs\n"
    "Consistency:\n"
    "  --consistency LEVEL   ONE TWO THREE QUORUM LOCAL_QUORUM (default) EACH_QUORUM ALL. The replicas\n"
    "                        read are one data center's: LOCAL_QUORUM and EACH_QUORUM are its quorum\n"
    "  --rf N                replication factor for every keyspace (default: each keyspace's own)\n"
    "  --datacenter DC       the data center read, for NetworkTopologyStrategy keyspaces\n"
    "  --timeout-ms N        a change not at its level N ms after its first copy was read is dropped,\n"
    "                        logged (keyspace, table, token) and counted (default 60000)\n"
    "  --max-pending N       bound of changes waiting for copies (default 400000); reaching it is an error\n"
    "  --ranges R            owned Murmur3 token ranges, (start,end] separated by ';' (default all), or\n"
    "                        `ring`: a node's primary ranges, read at start over --cql (system.peers)\n"
    "  --ranges-node ADDR    with --ranges ring: the node whose primary ranges (default: the --cql node)\n"
    "  --tables LIST         keyspace.table,... to publish (default: every table with cdc = true)\n"
    "Output:\n"
    "  --output FILE         write a record file (one line per change event, kcat -J form) instead of Kafka\n"
    "  --bootstrap-servers B Kafka brokers (or `embedded`)\n"
    "  --schema-registry URL Avro in the Confluent wire format, one subject per topic (TopicNameStrategy)\n"
    "  --format json|avro    the converter (default json with schemas; avro needs --schema-registry)\n"
    "  --topic-format F      topic per table, {keyspace} and {table} replaced (default {keyspace}.{table})\n"
    "Running:\n"
    "  --once                process every segment present (each up to its _cdc.idx offset) and exit;\n"
    "                        without it the sidecar follows the directories (inotify and listing) until\n"
    "                        SIGINT/SIGTERM\n"
    "  --offsets FILE        where the state is stored (default ./cdcflow.offsets.json; with Kafka, the\n"
    "                        offsets topic unless this is given). A second run resumes from it\n"
    "  --cleanup MODE        delete (default; with --once: none), archive (--archive-dir DIR), none:\n"
    "                        what happens to a segment once its changes are acknowledged and stored\n"
    "  --rest PORT           the REST API on 127.0.0.1:PORT: the worker's (Kafka Connect's paths,\n"
    "                        GET /metrics in Prometheus' format) and the design's service endpoints:\n"
    "                        PUT|GET|DELETE /api/v1/services/cdc/config (the --config JSON as the body),\n"
    "                        GET /api/v1/services/cdc/health, GET /api/v1/cdc/segments, and\n"
    "                        POST /api/v1/services/cdc/statements (CREATE DATA_SINK, CREATE DATA_SOURCE...:\n"
    "                        see `cdcflow cassandra exec --help`). With --rest the sidecar may start\n"
    "                        without --replica and be configured by a PUT or statements. A token:\n"
    "                        \"worker.rest.auth.token\" in --config\n"
    "  --progress-ms N       a progress line (segments and bytes done of the known, events/s) every N ms\n"
    "                        (default 1000 with --once, else 10000; 0: none)\n"
    "  --name NAME           the connector's name (default cassandra-cdc); --job ID its state's name\n"
    "  --config FILE         the service configuration as JSON, e.g.\n"
    "                          {\"kafka.bootstrap.servers\": \"kafka:9092\", \"schema.registry.url\": \"http://r:8081\",\n"
    "                           \"tables\": [\"ks.orders\"], \"consistency.level\": \"LOCAL_QUORUM\",\n"
    "                           \"cdc_raw.dirs\": \"/var/lib/cassandra/cdc_raw\", \"cql.host\": \"127.0.0.1\"}\n"
    "                        (any cassandra-cdc setting; worker settings as \"worker.<key>\"); flags win\n"
    "\n"
    "Example, offline over three nodes' copies, no Kafka, no registry:\n"
    "  cdcflow cassandra sidecar --schema schema.cql --replica n1/cdc_raw --replica n2/cdc_raw \\\n"
    "      --replica n3/cdc_raw --rf 3 --consistency LOCAL_QUORUM --once --output changes.jsonl\n"
    "\n"
    "Exit codes: 0 done (or stopped by a signal) without errors; 1 a failure (an unreadable directory,\n"
    "the pending bound reached, Kafka unreachable...); 2 usage or configuration error; 3 finished, but\n"
    "events were reported as errors (errors.tolerance=all); 4 stopped, but not cleanly (what was read\n"
    "could not all be acknowledged within task.shutdown.graceful.timeout.ms: it is read again at the\n"
    "next start).",
    run,
};
