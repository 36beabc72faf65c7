/*
 * transform.c - transform instances and the chain of a connector, built
 * from Connect's "transforms" syntax (see include/cdcflow/transforms.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/text.h"
#include "cdcflow/transforms.h"
#include "cdcflow/worker.h"

struct cf_transform {
    const cf_transform_plugin *plugin;
    void *state;
    cf_config *cfg;
};

const cf_transform_plugin *cf_transform_find(const char *name) {
    if (!name) return NULL;
    for (const cf_transform_plugin *const *p = cf_transform_plugins(); *p; p++) {
        if (strcmp((*p)->name, name) == 0) return *p;
        for (const char *const *a = (*p)->aliases; a && *a; a++)
            if (strcmp(*a, name) == 0) return *p;
    }
    return NULL;
}

const cf_predicate_plugin *cf_predicate_find(const char *name) {
    if (!name) return NULL;
    for (const cf_predicate_plugin *const *p = cf_predicate_plugins(); *p; p++) {
        if (strcmp((*p)->name, name) == 0) return *p;
        for (const char *const *a = (*p)->aliases; a && *a; a++)
            if (strcmp(*a, name) == 0) return *p;
    }
    return NULL;
}

/* The class names (first alias) of a plugin list, for messages. */
#define CLASS_NAMES(list_fn, type)                                                    \
    size_t n_names = 0;                                                               \
    for (type const *p = list_fn(); *p; p++) n_names++;                               \
    const char **names = cf_xcalloc(n_names + 1, sizeof *names);                      \
    for (size_t i = 0; i < n_names; i++) {                                            \
        type pl = list_fn()[i];                                                       \
        names[i] = pl->aliases && pl->aliases[0] ? pl->aliases[0] : pl->name;         \
    }

/* "unknown transform "x"" with a did-you-mean and the list. */
static cf_code unknown_class(cf_err *err, const char *what, const char *type, const char **names, size_t n) {
    cf_err_set(err, CF_ERR_NOT_FOUND, "unknown %s \"%s\"", what, type ? type : "(null)");
    const char *best = cf_did_you_mean(type, names, n);
    cf_buf b = CF_BUF_INIT;
    for (size_t i = 0; i < n; i++) cf_buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
    if (best) cf_err_hint(err, "Did you mean %s? Known %ss: %s.", best, what, b.data ? b.data : "none");
    else cf_err_hint(err, "Known %ss: %s.", what, b.data ? b.data : "none");
    cf_buf_free(&b);
    return CF_ERR_NOT_FOUND;
}

cf_code cf_transform_new(const char *type, const cf_props *props, cf_transform **out, cf_err *err) {
    *out = NULL;
    const cf_transform_plugin *pl = cf_transform_find(type);
    if (!pl) {
        CLASS_NAMES(cf_transform_plugins, const cf_transform_plugin *)
        unknown_class(err, "transform", type, names, n_names);
        free(names);
        return CF_ERR_NOT_FOUND;
    }
    cf_props *p = props ? cf_props_clone(props) : cf_props_new();
    cf_props_remove(p, "type");
    const cf_cfg_table *tables[1] = {pl->config};
    cf_config *cfg = NULL;
    char *problems = NULL;
    cf_code rc = cf_config_parse(tables, 1, p, &cfg, &problems, err);
    cf_props_destroy(p);
    if (rc != CF_OK) {
        if (problems && err && !err->detail[0]) cf_err_detail(err, "%s", problems);
        free(problems);
        return rc;
    }
    free(problems);
    void *state = NULL;
    rc = pl->create(cfg, &state, err);
    if (rc != CF_OK) {
        cf_config_destroy(cfg);
        return rc;
    }
    cf_transform *t = cf_xcalloc(1, sizeof *t);
    t->plugin = pl;
    t->state = state;
    t->cfg = cfg;
    *out = t;
    return CF_OK;
}

void cf_transform_destroy(cf_transform *t) {
    if (!t) return;
    t->plugin->destroy(t->state);
    cf_config_destroy(t->cfg);
    free(t);
}

const cf_transform_plugin *cf_transform_get_plugin(const cf_transform *t) { return t->plugin; }

cf_code cf_transform_apply(cf_transform *t, cf_record *rec, cf_record **out, cf_err *err) {
    *out = NULL;
    return t->plugin->apply(t->state, rec, out, err);
}

/* ---------------------------------------------------------------- predicates */

typedef struct pred {
    const cf_predicate_plugin *plugin;
    void *state;
    cf_config *cfg;
} pred;

static void pred_destroy(pred *p) {
    if (!p) return;
    p->plugin->destroy(p->state);
    cf_config_destroy(p->cfg);
    free(p);
}

/* Is `alias` one of the connector's `predicates`? */
static bool listed(const char *list, const char *alias) {
    size_t al = strlen(alias);
    for (const char *p = list ? list : ""; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p, *e = p + n;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
        if ((size_t)(e - s) == al && memcmp(s, alias, al) == 0) return true;
        p = comma ? comma + 1 : p + n;
    }
    return false;
}

/* ConnectorConfig: predicates.<alias>.type and the predicate's settings. */
static cf_code pred_new(const cf_props *cc, const char *transform, const char *alias, pred **out, cf_err *err) {
    *out = NULL;
    if (!listed(cf_props_get(cc, "predicates"), alias)) {
        cf_err_set(err, CF_ERR_CONFIG, "transforms.%s.predicate: \"%s\" is not a predicate of this connector",
                   transform, alias);
        cf_err_hint(err, "List it in predicates (predicates=%s) and set predicates.%s.type, e.g. "
                         "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone.", alias, alias);
        cf_err_where(err, "transforms.%s.predicate", transform);
        return CF_ERR_CONFIG;
    }
    char prefix[512];
    snprintf(prefix, sizeof prefix, "predicates.%s.", alias);
    cf_props *sub = cf_props_subset(cc, prefix, true);
    const char *type = cf_props_get(sub, "type");
    cf_code rc = CF_OK;
    const cf_predicate_plugin *pl = type ? cf_predicate_find(type) : NULL;
    if (!type) {
        rc = cf_err_set(err, CF_ERR_CONFIG, "predicates.%s.type: missing", alias);
        cf_err_hint(err, "Set predicates.%s.type to a predicate class, e.g. "
                         "org.apache.kafka.connect.transforms.predicates.TopicNameMatches.", alias);
    } else if (!pl) {
        CLASS_NAMES(cf_predicate_plugins, const cf_predicate_plugin *)
        rc = unknown_class(err, "predicate", type, names, n_names);
        free(names);
    }
    cf_config *cfg = NULL;
    if (!rc) {
        cf_props_remove(sub, "type");
        const cf_cfg_table *tables[1] = {pl->config};
        char *problems = NULL;
        rc = cf_config_parse(tables, 1, sub, &cfg, &problems, err);
        if (rc && problems && err && !err->detail[0]) cf_err_detail(err, "%s", problems);
        free(problems);
    }
    void *state = NULL;
    if (!rc && (rc = pl->create(cfg, &state, err))) cf_config_destroy(cfg);
    if (rc) {
        if (err) {
            char tmp[sizeof err->message], where[sizeof err->where];
            if (strncmp(err->message, "predicates.", 11) != 0) {
                snprintf(tmp, sizeof tmp, "predicates.%s: %s", alias, err->message);
                memcpy(err->message, tmp, sizeof tmp);
            }
            snprintf(where, sizeof where, "predicates.%s%s%s", alias, err->where[0] ? "." : "", err->where);
            memcpy(err->where, where, sizeof where);
        }
        cf_props_destroy(sub);
        return rc;
    }
    cf_props_destroy(sub);
    pred *p = cf_xcalloc(1, sizeof *p);
    p->plugin = pl;
    p->state = state;
    p->cfg = cfg;
    *out = p;
    return CF_OK;
}

/* ---------------------------------------------------------------- chain */

struct cf_transform_chain {
    size_t n;
    char **aliases;
    cf_transform **xf;
    pred **preds; /* NULL: the transform applies to every record */
    bool *negate;
};

void cf_transform_chain_destroy(cf_transform_chain *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->aliases[i]);
        cf_transform_destroy(c->xf[i]);
        pred_destroy(c->preds[i]);
    }
    free(c->aliases);
    free(c->xf);
    free(c->preds);
    free(c->negate);
    free(c);
}

size_t cf_transform_chain_len(const cf_transform_chain *c) { return c ? c->n : 0; }
const char *cf_transform_chain_alias(const cf_transform_chain *c, size_t i) { return c && i < c->n ? c->aliases[i] : NULL; }

/* Prefix "transforms.<alias>." to a config error's message/where. */
static void name_key(cf_err *err, const char *alias) {
    if (!err) return;
    char tmp[sizeof err->message];
    snprintf(tmp, sizeof tmp, "transforms.%s: %s", alias, err->message);
    memcpy(err->message, tmp, sizeof tmp);
}

/* One stage: the transform and its predicate. */
static cf_code stage_new(const cf_props *cc, const char *alias, cf_props *sub, cf_transform **xf, pred **pr,
                         bool *negate, cf_err *err) {
    *xf = NULL;
    *pr = NULL;
    *negate = false;
    const char *type = cf_props_get(sub, "type");
    if (!type) {
        cf_err_set(err, CF_ERR_CONFIG, "transforms.%s.type: missing", alias);
        cf_err_hint(err, "Set transforms.%s.type to a transform class, e.g. io.debezium.transforms.ExtractNewRecordState.",
                    alias);
        return CF_ERR_CONFIG;
    }
    const char *pname = cf_props_get(sub, "predicate");
    const char *neg = cf_props_get(sub, "negate");
    if (neg && !pname) {
        cf_err_set(err, CF_ERR_CONFIG, "Config 'transforms.%s.negate' was provided but there is no config "
                   "'transforms.%s.predicate' defining a predicate to be negated.", alias, alias);
        cf_err_where(err, "transforms.%s.negate", alias);
        return CF_ERR_CONFIG;
    }
    if (neg) {
        if (strcasecmp(neg, "true") == 0) *negate = true;
        else if (strcasecmp(neg, "false") != 0) {
            cf_err_set(err, CF_ERR_CONFIG, "Invalid value %s for configuration transforms.%s.negate: Expected value to "
                       "be either true or false", neg, alias);
            cf_err_where(err, "transforms.%s.negate", alias);
            return CF_ERR_CONFIG;
        }
    }
    cf_code rc;
    if (pname && (rc = pred_new(cc, alias, pname, pr, err))) return rc;
    cf_props_remove(sub, "predicate");
    cf_props_remove(sub, "negate");
    if ((rc = cf_transform_new(type, sub, xf, err))) {
        name_key(err, alias);
        pred_destroy(*pr);
        *pr = NULL;
        return rc;
    }
    return CF_OK;
}

cf_code cf_transform_chain_new(const cf_props *cc, cf_transform_chain **out, cf_err *err) {
    *out = NULL;
    const char *list = cc ? cf_props_get(cc, "transforms") : NULL;
    if (!list) return CF_OK;
    cf_transform_chain *c = cf_xcalloc(1, sizeof *c);
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p, *e = p + n;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
        p = comma ? comma + 1 : p + n;
        if (s == e) continue;
        char *alias = cf_xstrndup(s, (size_t)(e - s));
        for (size_t i = 0; i < c->n; i++)
            if (strcmp(c->aliases[i], alias) == 0) {
                cf_err_set(err, CF_ERR_CONFIG, "transforms: duplicate alias \"%s\"", alias);
                cf_err_where(err, "transforms");
                free(alias);
                cf_transform_chain_destroy(c);
                return CF_ERR_CONFIG;
            }
        char key[512];
        snprintf(key, sizeof key, "transforms.%s.", alias);
        cf_props *sub = cf_props_subset(cc, key, true);
        cf_transform *t = NULL;
        pred *pr = NULL;
        bool negate = false;
        cf_code rc = stage_new(cc, alias, sub, &t, &pr, &negate, err);
        if (!rc) {
            c->aliases = cf_xrealloc(c->aliases, (c->n + 1) * sizeof *c->aliases);
            c->xf = cf_xrealloc(c->xf, (c->n + 1) * sizeof *c->xf);
            c->preds = cf_xrealloc(c->preds, (c->n + 1) * sizeof *c->preds);
            c->negate = cf_xrealloc(c->negate, (c->n + 1) * sizeof *c->negate);
            c->aliases[c->n] = alias;
            c->xf[c->n] = t;
            c->preds[c->n] = pr;
            c->negate[c->n] = negate;
            c->n++;
            alias = NULL;
        }
        if (rc && err && !err->where[0]) cf_err_where(err, "transforms.%s", alias);
        free(alias);
        cf_props_destroy(sub);
        if (rc) {
            cf_transform_chain_destroy(c);
            return rc;
        }
    }
    if (c->n == 0) {
        cf_transform_chain_destroy(c);
        return CF_OK;
    }
    *out = c;
    return CF_OK;
}

cf_code cf_transform_chain_apply(cf_transform_chain *c, cf_record *rec, cf_record **out, cf_err *err) {
    *out = NULL;
    if (!c) {
        *out = rec;
        return CF_OK;
    }
    for (size_t i = 0; i < c->n && rec; i++) {
        /* TransformationStage.apply: negate XOR test */
        if (c->preds[i] && c->preds[i]->plugin->test(c->preds[i]->state, rec) == c->negate[i]) continue;
        cf_record *next = NULL;
        cf_code rc = cf_transform_apply(c->xf[i], rec, &next, err);
        if (rc) {
            if (err) {
                char where[sizeof err->where];
                if (err->where[0]) snprintf(where, sizeof where, "transforms.%s: %s", c->aliases[i], err->where);
                else snprintf(where, sizeof where, "transforms.%s", c->aliases[i]);
                memcpy(err->where, where, sizeof where);
            }
            cf_record_destroy(rec);
            return rc;
        }
        rec = next;
    }
    *out = rec;
    return CF_OK;
}

/* ---- adapter for the worker ---- */

static cf_code w_create(const cf_props *cc, void **chain, cf_err *err) {
    cf_transform_chain *c = NULL;
    cf_code rc = cf_transform_chain_new(cc, &c, err);
    *chain = c;
    return rc;
}

static cf_code w_apply(void *chain, cf_record *rec, cf_record **out, cf_err *err) {
    return cf_transform_chain_apply(chain, rec, out, err);
}

static void w_destroy(void *chain) { cf_transform_chain_destroy(chain); }

const cf_worker_transforms cf_transforms_for_worker = {.create = w_create, .apply = w_apply, .destroy = w_destroy};
