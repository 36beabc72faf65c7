/*
 * cmd_validate.c - `cdcflow validate FILE...`: check connector configurations.
 *
 * Each file (Kafka Connect JSON or .properties, told apart by content) is
 * checked against the common connector settings, the sink settings for a
 * sink, and the connector's own table, found through connector.class in the
 * connector registry. Every problem of every file is printed, not only the
 * first, with the file and the line of the key (for JSON found by the key's
 * text). key.converter / value.converter are checked through the converter
 * registry. The output is the command's result, so it goes to stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/config.h"
#include "cdcflow/connector.h"
#include "cdcflow/convert.h"
#include "cdcflow/text.h"
#include "cdcflow/transforms.h"
#include "cdcflow/worker.h"
#include "cli.h"

/* Accept every key: used when the connector is unknown, so that its own
 * settings are not all reported as unknown on top of the real problem. */
static const cf_cfg_def no_defs[] = {{NULL, 0, NULL, false, NULL, false, 0, 0, NULL, 0, NULL, NULL}};
static const char *const all_prefixes[] = {"", NULL};
static const cf_cfg_table any_key = {"any", "any", "", no_defs, all_prefixes};

static void known_connectors(cf_buf *b) {
    const cf_connector_plugin *const *p = cf_connector_plugins();
    if (!*p) {
        cf_buf_append_str(b, "(none registered in this build)");
        return;
    }
    for (; *p; p++) {
        if (b->len) cf_buf_append_str(b, ", ");
        cf_buf_printf(b, "%s (%s)", (*p)->name, (*p)->kind == CF_CONNECTOR_SINK ? "sink" : "source");
    }
}

/* Append problem lines "key: ..." as "  file[:line]: key: ..." to out (as
 * they are, "key: ...", when path is NULL: cf_cli_validate_props);
 * returns how many. Lines whose key is `skip` are left out. */
static int add_problems(cf_buf *out, const char *path, const char *problems, const cf_props *lines,
                        const char *skip) {
    int count = 0;
    const char *p = problems;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        char key[512] = "";
        if (colon && (size_t)(colon - p) < sizeof key) snprintf(key, sizeof key, "%.*s", (int)(colon - p), p);
        if (!(skip && strcmp(key, skip) == 0)) {
            const char *line = lines && key[0] ? cf_props_get(lines, key) : NULL;
            if (!path)
                cf_buf_printf(out, "%.*s\n", (int)len, p);
            else if (line)
                cf_buf_printf(out, "  %s:%s: %.*s\n", path, line, (int)len, p);
            else
                cf_buf_printf(out, "  %s: %.*s\n", path, (int)len, p);
            count++;
        }
        p = nl ? nl + 1 : NULL;
    }
    return count;
}

/* Problems from cf_config_parse over a prefix subset (cf_props_subset with
 * the prefix stripped): put the prefix back on every line's key, so the
 * report names the key as the file spells it, then add them. */
static int add_prefixed_problems(cf_buf *out, const char *path, const char *prefix, const char *problems,
                                 const cf_props *lines) {
    cf_buf fixed = CF_BUF_INIT;
    for (const char *p = problems; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
        cf_buf_printf(&fixed, "%s%.*s", prefix, (int)len, p);
        p += len;
    }
    int count = add_problems(out, path, fixed.data, lines, NULL);
    cf_buf_free(&fixed);
    return count;
}

/* key.converter / value.converter: the converter must exist, and its own
 * settings (under the "key.converter." prefix) must pass its table. The
 * header converter is not checked: cdcflow's default is used when unset and
 * Connect's SimpleHeaderConverter has no table here. */
static int check_converter(cf_buf *out, const char *path, const cf_props *props, const cf_props *lines,
                           const char *key) {
    const char *name = cf_props_get(props, key);
    if (!name) return 0;
    char *trimmed = strdup(name);
    if (!trimmed) return 0;
    char *t = trimmed;
    while (*t == ' ' || *t == '\t') t++;
    size_t l = strlen(t);
    while (l && (t[l - 1] == ' ' || t[l - 1] == '\t')) t[--l] = '\0';
    int count = 0;
    const cf_converter_plugin *pl = cf_converter_find(t);
    if (!pl) {
        cf_buf known = CF_BUF_INIT;
        for (const cf_converter_plugin *const *p = cf_converter_plugins(); *p; p++) {
            cf_buf_printf(&known, "%s%s", known.len ? ", " : "", (*p)->name);
            for (const char *const *a = (*p)->aliases; a && *a; a++) cf_buf_printf(&known, ", %s", *a);
        }
        cf_buf line = CF_BUF_INIT; /* built whole: a cf_err hint would cut the list */
        cf_buf_printf(&line, "%s: unknown converter \"%s\"; known converters: %s", key, t,
                      known.len ? known.data : "(none)");
        cf_buf_free(&known);
        count = add_problems(out, path, line.data, lines, NULL);
        cf_buf_free(&line);
    } else if (pl->config) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s.", key);
        cf_props *sub = cf_props_subset(props, prefix, true);
        const cf_cfg_table *tables[1] = {pl->config};
        char *problems = NULL;
        cf_err err;
        if (cf_config_parse(tables, 1, sub, NULL, &problems, &err) != CF_OK) {
            count = add_prefixed_problems(out, path, prefix, problems, lines);
        }
        free(problems);
        cf_props_destroy(sub);
    }
    free(trimmed);
    return count;
}

/* Every alias in "transforms": its type must be a known transform and its
 * own settings (transforms.<alias>.*) must pass the transform's table; then
 * the chain is built as the worker builds it, to catch whatever else the
 * run would refuse (predicates, for one). A missing type was reported by
 * cf_connector_config_check already. */
static int check_transforms(cf_buf *out, const char *path, const cf_props *props, const cf_props *lines) {
    const char *list = cf_props_get(props, "transforms");
    if (!list) return 0;
    int count = 0;
    char *copy = strdup(list);
    if (!copy) return 0;
    char *save = NULL;
    for (char *alias = strtok_r(copy, ",", &save); alias; alias = strtok_r(NULL, ",", &save)) {
        while (*alias == ' ' || *alias == '\t') alias++;
        size_t l = strlen(alias);
        while (l && (alias[l - 1] == ' ' || alias[l - 1] == '\t')) alias[--l] = '\0';
        if (!l) continue;
        char prefix[512], key[600];
        snprintf(prefix, sizeof prefix, "transforms.%s.", alias);
        snprintf(key, sizeof key, "%stype", prefix);
        const char *type = cf_props_get(props, key);
        if (!type || !*type) continue;
        const cf_transform_plugin *pl = cf_transform_find(type);
        if (!pl) {
            cf_buf line = CF_BUF_INIT, known = CF_BUF_INIT;
            const char *names[128];
            size_t nn = 0;
            for (const cf_transform_plugin *const *p = cf_transform_plugins(); *p; p++) {
                cf_buf_printf(&known, "%s%s", known.len ? ", " : "", (*p)->name);
                if (nn < 128) names[nn++] = (*p)->name;
                for (const char *const *a = (*p)->aliases; a && *a; a++) {
                    cf_buf_printf(&known, ", %s", *a);
                    if (nn < 128) names[nn++] = *a;
                }
            }
            const char *best = cf_did_you_mean(type, names, nn);
            cf_buf_printf(&line, "%s: unknown transform \"%s\"; ", key, type);
            if (best) cf_buf_printf(&line, "did you mean \"%s\"?; ", best);
            cf_buf_printf(&line, "known transforms: %s", known.len ? known.data : "(none)");
            count += add_problems(out, path, line.data, lines, NULL);
            cf_buf_free(&line);
            cf_buf_free(&known);
            continue;
        }
        if (!pl->config) continue;
        cf_props *sub = cf_props_subset(props, prefix, true);
        /* keys the chain itself owns, not the transform */
        cf_props_remove(sub, "type");
        cf_props_remove(sub, "predicate");
        cf_props_remove(sub, "negate");
        const cf_cfg_table *tables[1] = {pl->config};
        char *problems = NULL;
        cf_err err;
        if (cf_config_parse(tables, 1, sub, NULL, &problems, &err) != CF_OK) {
            count += add_prefixed_problems(out, path, prefix, problems, lines);
        }
        free(problems);
        cf_props_destroy(sub);
    }
    free(copy);
    if (!count) {
        cf_transform_chain *chain = NULL;
        cf_err err;
        if (cf_transform_chain_new(props, &chain, &err) != CF_OK) {
            cf_buf line = CF_BUF_INIT;
            /* the chain's messages often start with the key already */
            if (err.where[0] && strncmp(err.message, err.where, strlen(err.where)) == 0)
                cf_buf_append_str(&line, err.message);
            else
                cf_buf_printf(&line, "%s: %s", err.where[0] ? err.where : "transforms", err.message);
            if (err.detail[0]) cf_buf_printf(&line, "; %s", err.detail);
            if (err.hint[0]) cf_buf_printf(&line, "; %s", err.hint);
            count += add_problems(out, path, line.data, lines, NULL);
            cf_buf_free(&line);
        }
        cf_transform_chain_destroy(chain);
    }
    return count;
}

/* Every problem of one connector configuration, one line each appended to
 * out ("  path[:line]: key: ..."); returns how many. lines (may be NULL)
 * maps keys to their line numbers. The same check serves `cdcflow validate`
 * and the errors of `cdcflow run` (cf_cli_config_problems). */
static int check_connector(cf_buf *out, const char *path, const cf_props *props, const cf_props *lines) {
    cf_err err;
    int count = 0;
    const char *cls = cf_props_get(props, "connector.class");
    const cf_connector_plugin *plugin = cls && *cls ? cf_connector_find(cls) : NULL;
    const cf_cfg_table *tables[4];
    size_t n = 0;
    tables[n++] = &cf_connector_common_table;
    bool is_sink = plugin && plugin->kind == CF_CONNECTOR_SINK;
    if (is_sink) tables[n++] = &cf_sink_common_table;
    if (plugin && plugin->config) tables[n++] = plugin->config;
    if (!plugin) {
        /* The problem to report is the class; the other keys cannot be
         * judged without the connector's table, so they all pass. */
        tables[n++] = &any_key;
        cf_buf known = CF_BUF_INIT, line = CF_BUF_INIT;
        known_connectors(&known);
        const char *best = cls && *cls ? cf_cli_closest_connector(cls) : NULL;
        if (best)
            cf_buf_printf(&line, "connector.class: unknown connector \"%s\"; did you mean \"%s\"?", cls, best);
        else if (cls && *cls)
            cf_buf_printf(&line, "connector.class: unknown connector \"%s\"; no connector plugin has this name or "
                                 "alias", cls);
        else
            cf_buf_printf(&line, "connector.class: missing required configuration \"connector.class\"; the "
                                 "connector to run is not named");
        cf_buf_printf(&line, "; known connectors: %s", known.data);
        cf_buf_free(&known);
        count += add_problems(out, path, line.data, lines, NULL);
        cf_buf_free(&line);
    }
    char *problems = NULL;
    cf_config *cfg = NULL;
    if (cf_config_parse(tables, n, props, &cfg, &problems, &err) != CF_OK) {
        /* without a plugin, connector.class was reported above already */
        count += add_problems(out, path, problems, lines, plugin ? NULL : "connector.class");
        free(problems);
    } else {
        char *cross = NULL;
        if (cf_connector_config_check(cfg, is_sink, &cross, &err) != CF_OK) {
            count += add_problems(out, path, cross, lines, NULL);
            free(cross);
        }
        cf_config_destroy(cfg);
    }
    count += check_converter(out, path, props, lines, "key.converter");
    count += check_converter(out, path, props, lines, "value.converter");
    if (plugin) count += check_transforms(out, path, props, lines);
    return count;
}

/* The worker file's problems, as check_connector's. */
static int check_worker(cf_buf *out, const char *path, const cf_props *props, const cf_props *lines) {
    cf_err err;
    int count = 0;
    const cf_cfg_table *tables[] = {&cf_worker_config_table};
    char *problems = NULL;
    cf_config *cfg = NULL;
    if (cf_config_parse(tables, 1, props, &cfg, &problems, &err) != CF_OK) {
        count += add_problems(out, path, problems, lines, NULL);
        free(problems);
    } else {
        cf_config_destroy(cfg);
    }
    count += check_converter(out, path, props, lines, "key.converter");
    count += check_converter(out, path, props, lines, "value.converter");
    return count;
}

int cf_cli_config_problems(const cf_props *props, bool worker, const char *where, cf_buf *out) {
    return worker ? check_worker(out, where ? where : "", props, NULL) : check_connector(out, where ? where : "", props, NULL);
}

int cf_cli_validate_props(const cf_props *props, cf_buf *out) { return check_connector(out, NULL, props, NULL); }

/* A file that could not be read: its error, indented; one problem. */
static int unreadable(const char *path, const char *what, const cf_err *err) {
    printf("%s: INVALID%s\n", path, what);
    char buf[2048];
    cf_err_format(err, buf, sizeof buf);
    for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) printf("  %s\n", l);
    return 1;
}

/* Returns the number of problems found in one file (0 = valid). */
static int validate_one(const char *path) {
    cf_props *props = NULL, *lines = NULL;
    char *name = NULL;
    cf_err err;
    if (cf_props_load_file_lines(path, &props, &name, &lines, &err) != CF_OK) return unreadable(path, "", &err);
    cf_buf out = CF_BUF_INIT;
    int count = check_connector(&out, path, props, lines);
    const char *cls = cf_props_get(props, "connector.class");
    const cf_connector_plugin *plugin = cls && *cls ? cf_connector_find(cls) : NULL;
    if (count)
        printf("%s: INVALID (%d problem%s)\n%s", path, count, count > 1 ? "s" : "", out.data);
    else
        printf("%s: OK (connector \"%s\", %s %s)\n", path, name ? name : "", plugin->name,
               plugin->kind == CF_CONNECTOR_SINK ? "sink" : "source");
    cf_buf_free(&out);
    cf_props_destroy(props);
    cf_props_destroy(lines);
    free(name);
    return count;
}

/* A worker file (--worker), checked against the worker's table as
 * `cdcflow run --worker` reads it; its converters as a connector's. Returns
 * the number of problems. */
static int validate_worker(const char *path) {
    cf_props *props = NULL, *lines = NULL;
    cf_err err;
    if (cf_props_load_file_lines(path, &props, NULL, &lines, &err) != CF_OK)
        return unreadable(path, " (worker file)", &err);
    cf_buf out = CF_BUF_INIT;
    int count = check_worker(&out, path, props, lines);
    if (count)
        printf("%s: INVALID (worker file, %d problem%s)\n%s", path, count, count > 1 ? "s" : "", out.data);
    else
        printf("%s: OK (worker file)\n", path);
    cf_buf_free(&out);
    cf_props_destroy(props);
    cf_props_destroy(lines);
    return count;
}

static int run(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "cdcflow: validate needs at least one file\nHINT:  Usage: cdcflow validate [--worker FILE] FILE...\n");
        return CF_EXIT_USAGE;
    }
    int bad = 0, files = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) continue;
        const char *worker = NULL;
        if (strcmp(argv[i], "--worker") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "cdcflow: --worker needs a file\nHINT:  Usage: cdcflow validate [--worker FILE] FILE...\n");
                return CF_EXIT_USAGE;
            }
            worker = argv[++i];
        } else if (strncmp(argv[i], "--worker=", 9) == 0) {
            worker = argv[i] + 9;
        }
        files++;
        if (worker ? validate_worker(worker) : validate_one(argv[i])) bad++;
    }
    if (!files) {
        fprintf(stderr, "cdcflow: validate needs at least one file\nHINT:  Usage: cdcflow validate FILE...\n");
        return CF_EXIT_USAGE;
    }
    if (files > 1) printf("%d of %d file(s) invalid\n", bad, files);
    return bad ? CF_EXIT_USAGE : CF_EXIT_OK;
}

const cf_command cf_cmd_validate = {
    "validate",
    "check connector configuration files (JSON or .properties) without running them",
    "Usage: cdcflow validate [--worker WORKER.properties] FILE...\n"
    "\n"
    "--worker FILE checks a worker file (a connect-standalone.properties) against\n"
    "the worker's settings, as `cdcflow run --worker` reads it (Connect keys that\n"
    "do nothing here, such as plugin.path, are accepted; see docs/configuration.md).\n"
    "\n"
    "Checks each connector configuration file and prints every problem found, not\n"
    "only the first. A file is Kafka Connect JSON ({\"name\": ..., \"config\": {...}}\n"
    "or a flat map) when its first non-blank character is '{', otherwise a Java\n"
    ".properties file (key=value, key: value or key value; # and ! comments;\n"
    "backslash continuations and escapes as java.util.Properties).\n"
    "\n"
    "The connector is found through connector.class (short name or alias); the\n"
    "file is checked against the common connector settings, for sinks the sink\n"
    "settings (topics / topics.regex), and the connector's own settings:\n"
    "unknown keys (with a \"did you mean\"), missing required keys, wrong types,\n"
    "values outside their range or list of allowed values. A missing or unknown\n"
    "connector.class is reported with the list of known connectors. key.converter\n"
    "and value.converter must name known converters, and their settings (under\n"
    "key.converter. / value.converter.) are checked against the converter's table;\n"
    "each alias in transforms must name a known transform, and its settings\n"
    "(transforms.<alias>.*) are checked against the transform's table.\n"
    "\n"
    "Output, per file: \"FILE: OK (...)\" or \"FILE: INVALID\" followed by one line\n"
    "per problem, \"FILE[:LINE]: key: what is wrong; the value; what is allowed\".\n"
    "The reference of all settings is docs/configuration.md (`cdcflow config docs`).\n"
    "\n"
    "Exit codes: 0 every file is valid, 2 a file is invalid or unreadable, or\n"
    "usage error.",
    run,
};
