/*
 * replace_field.c - org.apache.kafka.connect.transforms.ReplaceField$Value
 * and $Key: filter (exclude, include) and rename (renames "old:new") the
 * fields of a struct, or of a string-keyed map when there is no schema.
 *
 * As Kafka (ReplaceField.java): a null key/value passes unchanged; exclude
 * wins over include; an empty include keeps every field; the new struct
 * schema keeps name, version, doc and parameters but is required (Kafka's
 * SchemaUtil.copySchemaBasics does not copy optionality); with
 * replace.null.with.default=true (default) a null field that has a default
 * value gets it. The legacy names blacklist / whitelist (deprecated in Kafka
 * 2.7, removed in 4.0) are accepted for exclude / include.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/transforms.h"
#include "xf_util.h"

typedef struct rf {
    bool is_key;
    char **exclude, **include;
    size_t n_exclude, n_include;
    char **ren_from, **ren_to;
    size_t n_renames;
    bool replace_null;
    xf_cache cache;
} rf;

static cf_code renames_validator(const char *key, const char *value, cf_err *err) {
    /* comma-separated "old:new" pairs; each pair exactly one colon, both sides non-empty */
    const char *p = value ? value : "";
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n && (*p == ' ' || *p == '\t')) p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        if (n) {
            const char *c = memchr(p, ':', n);
            if (!c || c == p || c == p + n - 1 || memchr(c + 1, ':', (size_t)(p + n - c - 1))) {
                cf_err_set(err, CF_ERR_CONFIG, "Invalid value %s for configuration %s: Invalid rename mapping: %.*s",
                           value, key, (int)n, p);
                cf_err_hint(err, "Use a list of colon-delimited pairs, e.g. foo:bar,abc:xyz.");
                return CF_ERR_CONFIG;
            }
        }
        if (!e) break;
        p = e + 1;
    }
    return CF_OK;
}

static const cf_cfg_def rf_defs[] = {
    {.name = "exclude", .type = CF_CFG_LIST, .default_value = "", .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Fields to exclude. This takes precedence over the fields to include."},
    {.name = "include", .type = CF_CFG_LIST, .default_value = "", .importance = CF_IMPORTANCE_MEDIUM,
     .group = "Fields", .doc = "Fields to include. If specified, only these fields will be used."},
    {.name = "renames", .type = CF_CFG_LIST, .default_value = "", .validator = renames_validator,
     .importance = CF_IMPORTANCE_MEDIUM, .group = "Fields",
     .doc = "Field rename mappings: a list of colon-delimited pairs, e.g. `foo:bar,abc:xyz`."},
    {.name = "blacklist", .type = CF_CFG_LIST, .nullable = true, .importance = CF_IMPORTANCE_LOW, .group = "Fields",
     .doc = "Deprecated name of `exclude`."},
    {.name = "whitelist", .type = CF_CFG_LIST, .nullable = true, .importance = CF_IMPORTANCE_LOW, .group = "Fields",
     .doc = "Deprecated name of `include`."},
    {.name = "replace.null.with.default", .type = CF_CFG_BOOLEAN, .default_value = "true",
     .importance = CF_IMPORTANCE_MEDIUM, .group = "Fields",
     .doc = "Whether to replace fields that have a default value and that are null to the default value."},
    {.name = NULL},
};

const cf_cfg_table cf_replace_field_table = {
    .name = "ReplaceField",
    .title = "ReplaceField (`org.apache.kafka.connect.transforms.ReplaceField$Value`, `$Key`)",
    .intro = "Filter or rename fields of the record value or key.",
    .defs = rf_defs,
};

static char **copy_list(const cf_config *cfg, const char *key, size_t *n) {
    const char *const *items = cf_config_list(cfg, key, n);
    char **out = cf_xcalloc(*n ? *n : 1, sizeof *out);
    for (size_t i = 0; i < *n; i++) out[i] = cf_xstrdup(items[i]);
    return out;
}

static void free_list(char **l, size_t n) {
    for (size_t i = 0; i < n; i++) free(l[i]);
    free(l);
}

static void rf_destroy(void *state) {
    rf *r = state;
    if (!r) return;
    free_list(r->exclude, r->n_exclude);
    free_list(r->include, r->n_include);
    free_list(r->ren_from, r->n_renames);
    free_list(r->ren_to, r->n_renames);
    xf_cache_clear(&r->cache);
    free(r);
}

static cf_code rf_create_common(const cf_config *cfg, bool is_key, void **state, cf_err *err) {
    (void)err;
    rf *r = cf_xcalloc(1, sizeof *r);
    r->is_key = is_key;
    const cf_props *raw = cf_config_props(cfg);
    /* ConfigUtils.translateDeprecatedConfigs: the new name wins when both are set */
    r->exclude = copy_list(cfg, !cf_props_has(raw, "exclude") && cf_props_has(raw, "blacklist") ? "blacklist" : "exclude",
                           &r->n_exclude);
    r->include = copy_list(cfg, !cf_props_has(raw, "include") && cf_props_has(raw, "whitelist") ? "whitelist" : "include",
                           &r->n_include);
    size_t n;
    char **pairs = copy_list(cfg, "renames", &n);
    r->ren_from = cf_xcalloc(n ? n : 1, sizeof(char *));
    r->ren_to = cf_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        char *c = strchr(pairs[i], ':');
        r->ren_from[i] = cf_xstrndup(pairs[i], (size_t)(c - pairs[i]));
        r->ren_to[i] = cf_xstrdup(c + 1);
    }
    r->n_renames = n;
    free_list(pairs, n);
    r->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    *state = r;
    return CF_OK;
}

static cf_code rf_create_value(const cf_config *cfg, void **state, cf_err *err) { return rf_create_common(cfg, false, state, err); }
static cf_code rf_create_key(const cf_config *cfg, void **state, cf_err *err) { return rf_create_common(cfg, true, state, err); }

static bool in_list(char **l, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i], s) == 0) return true;
    return false;
}

static bool keep(const rf *r, const char *name) {
    return !in_list(r->exclude, r->n_exclude, name) && (r->n_include == 0 || in_list(r->include, r->n_include, name));
}

static const char *renamed(const rf *r, const char *name) {
    for (size_t i = r->n_renames; i-- > 0;) /* HashMap.put: the last mapping wins */
        if (strcmp(r->ren_from[i], name) == 0) return r->ren_to[i];
    return name;
}

static cf_code rf_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    rf *r = state;
    *out = NULL;
    cf_schema *schema = r->is_key ? rec->key_schema : rec->value_schema;
    cf_value *value = r->is_key ? rec->key : rec->value;
    if (!value) {
        *out = rec;
        return CF_OK;
    }
    cf_schema *ns = NULL;
    cf_value *nv = NULL;
    if (!schema) {
        cf_code rc = xf_require_map(value, "field replacement", err);
        if (rc) return rc;
        nv = cf_value_map();
        for (size_t i = 0; i < value->u.map.len; i++) {
            const cf_value *k = value->u.map.keys[i];
            if (!k || k->type != CF_STRING) {
                cf_value_destroy(nv);
                cf_err_set(err, CF_ERR_SCHEMA, "ReplaceField needs string map keys without a schema, found: %s",
                           xf_java_type(k));
                return CF_ERR_SCHEMA;
            }
            if (!keep(r, k->u.s.ptr)) continue;
            const char *nn = renamed(r, k->u.s.ptr);
            /* HashMap: a later key renamed onto an earlier one replaces it */
            cf_value *prev = cf_value_map_get_str(nv, nn);
            if (prev) {
                for (size_t j = 0; j < nv->u.map.len; j++)
                    if (nv->u.map.vals[j] == prev && strcmp(nv->u.map.keys[j]->u.s.ptr, nn) == 0) {
                        cf_value_destroy(nv->u.map.vals[j]);
                        nv->u.map.vals[j] = cf_value_clone(value->u.map.vals[i]);
                        break;
                    }
                continue;
            }
            cf_value_map_put(nv, cf_value_string(nn), cf_value_clone(value->u.map.vals[i]));
        }
    } else {
        cf_code rc = xf_require_struct(value, "field replacement", err);
        if (rc) return rc;
        const cf_schema *vs = value->u.st.schema;
        ns = xf_cache_get(&r->cache, vs, 0);
        if (!ns) {
            ns = xf_struct_basics(vs);
            for (size_t i = 0; i < vs->n_fields; i++) {
                if (!keep(r, vs->fields[i].name)) continue;
                if ((rc = cf_schema_add_field(ns, renamed(r, vs->fields[i].name), cf_schema_ref(vs->fields[i].schema), err))) {
                    cf_schema_unref(ns);
                    cf_err_hint(err, "Two fields would get the same name; check renames.");
                    return rc;
                }
            }
            xf_cache_put(&r->cache, vs, 0, ns);
        }
        nv = cf_value_struct(cf_schema_ref(ns));
        size_t k = 0;
        for (size_t i = 0; i < vs->n_fields; i++)
            if (keep(r, vs->fields[i].name)) nv->u.st.fields[k++] = xf_get_clone(value, i, r->replace_null);
    }
    if (r->is_key) cf_record_set_key(rec, ns, nv);
    else cf_record_set_value(rec, ns, nv);
    *out = rec;
    return CF_OK;
}

static void rf_destroy_v(void *s) { rf_destroy(s); }

static const char *const rf_value_aliases[] = {"org.apache.kafka.connect.transforms.ReplaceField$Value", NULL};
static const char *const rf_key_aliases[] = {"org.apache.kafka.connect.transforms.ReplaceField$Key", NULL};

const cf_transform_plugin cf_xf_replace_field_value = {
    .name = "ReplaceField$Value",
    .aliases = rf_value_aliases,
    .config = &cf_replace_field_table,
    .create = rf_create_value,
    .apply = rf_apply,
    .destroy = rf_destroy_v,
};

const cf_transform_plugin cf_xf_replace_field_key = {
    .name = "ReplaceField$Key",
    .aliases = rf_key_aliases,
    .config = &cf_replace_field_table,
    .create = rf_create_key,
    .apply = rf_apply,
    .destroy = rf_destroy_v,
};
