/*
 * transform.c - transform instances and the chain of a connector, built
 * from Connect's "transforms" syntax (see include/cdcflow/transforms.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
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

static void known_list(cf_buf *b) {
    for (const cf_transform_plugin *const *p = cf_transform_plugins(); *p; p++)
        cf_buf_printf(b, "%s%s", b->len ? ", " : "", (*p)->aliases && (*p)->aliases[0] ? (*p)->aliases[0] : (*p)->name);
}

cf_code cf_transform_new(const char *type, const cf_props *props, cf_transform **out, cf_err *err) {
    *out = NULL;
    const cf_transform_plugin *pl = cf_transform_find(type);
    if (!pl) {
        cf_err_set(err, CF_ERR_NOT_FOUND, "unknown transform \"%s\"", type ? type : "(null)");
        cf_buf names = CF_BUF_INIT;
        known_list(&names);
        cf_err_hint(err, "Known transforms: %s.", names.data ? names.data : "none");
        cf_buf_free(&names);
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

/* ---------------------------------------------------------------- chain */

struct cf_transform_chain {
    size_t n;
    char **aliases;
    cf_transform **xf;
};

void cf_transform_chain_destroy(cf_transform_chain *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->aliases[i]);
        cf_transform_destroy(c->xf[i]);
    }
    free(c->aliases);
    free(c->xf);
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
        const char *type = cf_props_get(sub, "type");
        cf_code rc = CF_OK;
        if (!type) {
            rc = cf_err_set(err, CF_ERR_CONFIG, "transforms.%s.type: missing", alias);
            cf_err_hint(err, "Set transforms.%s.type to a transform class, e.g. io.debezium.transforms.ExtractNewRecordState.",
                        alias);
        } else if (cf_props_has(sub, "predicate") || cf_props_has(sub, "negate")) {
            rc = cf_err_set(err, CF_ERR_UNSUPPORTED, "transforms.%s.predicate: predicates are not supported", alias);
            cf_err_hint(err, "Remove the predicate; cdcflow applies every transform to every record.");
        } else {
            cf_transform *t = NULL;
            rc = cf_transform_new(type, sub, &t, err);
            if (rc) {
                name_key(err, alias);
            } else {
                c->aliases = cf_xrealloc(c->aliases, (c->n + 1) * sizeof *c->aliases);
                c->xf = cf_xrealloc(c->xf, (c->n + 1) * sizeof *c->xf);
                c->aliases[c->n] = alias;
                c->xf[c->n] = t;
                c->n++;
                alias = NULL;
            }
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
