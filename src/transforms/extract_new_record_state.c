/*
 * extract_new_record_state.c - io.debezium.transforms.ExtractNewRecordState.
 *
 * Turns a Debezium change event envelope {before, after, source, op, ts_ms,
 * transaction} into the row state, as Debezium's SMT does
 * (debezium-core .../transforms/ExtractNewRecordState.java and the
 * extractnewstate strategies):
 *   tombstone (null value)   dropped, except rewrite-with-tombstone (and legacy
 *                            drop.tombstones=false): kept, "op" headers = "d"
 *   not an envelope          passed unchanged (heartbeats, schema changes,
 *                            schemaless values): the value schema name must
 *                            end with ".Envelope"
 *   truncate (before and after null)   dropped
 *   delete (after null)      drop: dropped; tombstone (legacy none): the
 *                            `after` field as value = null value with the row
 *                            schema; rewrite / rewrite-with-tombstone: the
 *                            `before` row + add.fields + __deleted="true";
 *                            delete-to-tombstone: null value and null schema
 *   create/read/update       the `after` row + add.fields (+ __deleted="false"
 *                            in the rewrite modes)
 * Mode selection: delete.tombstone.handling.mode if set; otherwise the legacy
 * delete.handling.mode (none|drop|rewrite, default drop) and drop.tombstones
 * (default true) if either is set; otherwise `tombstone`, the default since
 * Debezium 3.2 removed the legacy options.
 *
 * __deleted is appended last as an optional string field ("true"/"false"),
 * by Kafka's InsertField semantics: the struct is rebuilt as a required
 * struct with the same name/version/doc/parameters, and with
 * replace.null.with.default=true (default) null fields that have a default
 * take the default. add.fields ("op", "source.ts_ms", "transaction.id",
 * "field:newName", ...) get the source field's schema made optional and are
 * named <prefix><field> or <prefix><struct>_<field> (prefix default "__");
 * add.headers likewise as record headers. route.by.field sets the topic from
 * a row field (from `before` on deletes). drop.fields.header.name drops the
 * fields listed in that header (an array of strings): only optional ones
 * with drop.fields.keep.schema.compatible=true (default), from the key too
 * with drop.fields.from.key=true.
 * Not supported: the MongoDB variant (ExtractNewDocumentState).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/buf.h"
#include "cdcflow/transforms.h"
#include "xf_util.h"

#define DELETED_FIELD "__deleted"

typedef enum { M_DROP, M_TOMBSTONE, M_REWRITE, M_REWRITE_WITH_TOMBSTONE, M_DELETE_TO_TOMBSTONE } del_mode;

typedef struct field_ref {
    char *strct;   /* "source", "transaction" or NULL (envelope) */
    char *field;
    char *new_name;
} field_ref;

typedef struct enrs {
    del_mode mode;
    bool legacy, drop_tombstones;
    field_ref *fields, *headers;
    size_t n_fields, n_headers;
    char *route_by;
    bool replace_null;
    char *drop_hdr;
    bool drop_from_key, keep_compat;
    xf_cache deleted_cache; /* row schema -> row schema + __deleted */
    xf_cache fields_cache;  /* row schema -> row schema + add.fields (checked on hit) */
} enrs;

static const char *const new_modes[] = {"drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone", NULL};
static const char *const legacy_modes[] = {"none", "drop", "rewrite", NULL};

static const cf_cfg_def enrs_defs[] = {
    {.name = "delete.tombstone.handling.mode", .type = CF_CFG_STRING, .nullable = true, .valid_values = new_modes,
     .importance = CF_IMPORTANCE_MEDIUM, .group = "Deletes",
     .doc = "How deletes and tombstones are handled: `drop` (remove both), `tombstone` (a delete becomes a record "
            "with a null value and the row schema; tombstones are dropped), `rewrite` (a delete becomes its `before` "
            "row with `__deleted`=\"true\", other rows get `__deleted`=\"false\"; tombstones dropped), "
            "`rewrite-with-tombstone` (as rewrite, tombstones kept), `delete-to-tombstone` (a delete becomes a "
            "tombstone: null value and null schema; original tombstones dropped). Default `tombstone` unless the "
            "legacy options below are set."},
    {.name = "delete.handling.mode", .type = CF_CFG_STRING, .nullable = true, .valid_values = legacy_modes,
     .importance = CF_IMPORTANCE_LOW, .group = "Deletes",
     .doc = "Legacy (removed in Debezium 3.2): `drop` (default), `none` (null value) or `rewrite` (`__deleted`). "
            "Used only when delete.tombstone.handling.mode is not set."},
    {.name = "drop.tombstones", .type = CF_CFG_BOOLEAN, .nullable = true, .importance = CF_IMPORTANCE_LOW,
     .group = "Deletes",
     .doc = "Legacy (removed in Debezium 3.2): drop tombstones (default true). Used only when "
            "delete.tombstone.handling.mode is not set."},
    {.name = "add.fields", .type = CF_CFG_LIST, .default_value = "", .importance = CF_IMPORTANCE_LOW,
     .group = "Metadata",
     .doc = "Envelope fields to add to the row: `op`, `ts_ms`, `source.<field>` (or a bare source field such as "
            "`lsn`), `transaction.<field>` (`id`, `total_order`, `data_collection_order`); `field:newName` renames."},
    {.name = "add.fields.prefix", .type = CF_CFG_STRING, .default_value = "__", .importance = CF_IMPORTANCE_LOW,
     .group = "Metadata", .doc = "Prefix of the added field names."},
    {.name = "add.headers", .type = CF_CFG_LIST, .default_value = "", .importance = CF_IMPORTANCE_LOW,
     .group = "Metadata", .doc = "Envelope fields to add as headers, same syntax as add.fields."},
    {.name = "add.headers.prefix", .type = CF_CFG_STRING, .default_value = "__", .importance = CF_IMPORTANCE_LOW,
     .group = "Metadata", .doc = "Prefix of the added header names."},
    {.name = "route.by.field", .type = CF_CFG_STRING, .default_value = "", .importance = CF_IMPORTANCE_LOW,
     .group = "Routing", .doc = "A row field whose (string) value becomes the record's topic."},
    {.name = "replace.null.with.default", .type = CF_CFG_BOOLEAN, .default_value = "true",
     .importance = CF_IMPORTANCE_LOW, .group = "Deletes",
     .doc = "In the rewrite modes, null fields that have a default value take it (Kafka InsertField semantics)."},
    {.name = "drop.fields.header.name", .type = CF_CFG_STRING, .nullable = true, .importance = CF_IMPORTANCE_LOW,
     .group = "Drop fields", .doc = "Name of a header holding a list of field names to remove from the value."},
    {.name = "drop.fields.from.key", .type = CF_CFG_BOOLEAN, .default_value = "false",
     .importance = CF_IMPORTANCE_LOW, .group = "Drop fields", .doc = "Remove those fields from the key as well."},
    {.name = "drop.fields.keep.schema.compatible", .type = CF_CFG_BOOLEAN, .default_value = "true",
     .importance = CF_IMPORTANCE_LOW, .group = "Drop fields",
     .doc = "`true`: only optional fields are removed, keeping schemas compatible; `false`: all listed fields."},
    {.name = NULL},
};

const cf_cfg_table cf_extract_new_record_state_table = {
    .name = "ExtractNewRecordState",
    .title = "ExtractNewRecordState (`io.debezium.transforms.ExtractNewRecordState`)",
    .intro = "Flattens Debezium change events (`before`/`after`/`source`/`op` envelopes, value schema name ending "
             "in `.Envelope`) to the row state. Other records (heartbeats, schema changes, schemaless values) pass "
             "unchanged; truncates are dropped. In the rewrite modes `__deleted` is appended as an optional string "
             "field, \"true\" for deletes and \"false\" otherwise.",
    .defs = enrs_defs,
};

static void free_refs(field_ref *r, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(r[i].strct);
        free(r[i].field);
        free(r[i].new_name);
    }
    free(r);
}

static const char *determine_struct(const char *f) {
    if (strcmp(f, "id") == 0 || strcmp(f, "total_order") == 0 || strcmp(f, "data_collection_order") == 0)
        return "transaction";
    if (strcmp(f, "op") == 0 || strcmp(f, "ts_ms") == 0) return NULL;
    return "source";
}

/* FieldReference(prefix, spec) */
static cf_code parse_refs(const cf_config *cfg, const char *key, const char *prefix_key, field_ref **out, size_t *n,
                          cf_err *err) {
    size_t cnt;
    const char *const *items = cf_config_list(cfg, key, &cnt);
    const char *prefix = cf_config_string(cfg, prefix_key);
    if (!prefix) prefix = "";
    field_ref *r = cf_xcalloc(cnt ? cnt : 1, sizeof *r);
    for (size_t i = 0; i < cnt; i++) {
        const char *spec = items[i];
        const char *colon = strchr(spec, ':');
        if (colon && strchr(colon + 1, ':')) {
            free_refs(r, i);
            cf_err_set(err, CF_ERR_CONFIG, "%s: Unexpected field name: %s", key, spec);
            return CF_ERR_CONFIG;
        }
        size_t left = colon ? (size_t)(colon - spec) : strlen(spec);
        char *path = cf_xstrndup(spec, left);
        char *dot = strchr(path, '.');
        if (dot) {
            *dot = '\0';
            char *f = dot + 1;
            char *dot2 = strchr(f, '.');
            if (dot2) *dot2 = '\0'; /* Java's split keeps splits[1] only */
            r[i].strct = cf_xstrdup(path);
            r[i].field = cf_xstrdup(f);
        } else {
            const char *s = determine_struct(path);
            r[i].strct = s ? cf_xstrdup(s) : NULL;
            r[i].field = cf_xstrdup(path);
        }
        cf_buf nn = CF_BUF_INIT;
        if (colon && colon[1]) cf_buf_printf(&nn, "%s%s", prefix, colon + 1);
        else if (dot) cf_buf_printf(&nn, "%s%s_%s", prefix, r[i].strct, r[i].field);
        else cf_buf_printf(&nn, "%s%s", prefix, r[i].field);
        r[i].new_name = cf_buf_detach(&nn, NULL);
        free(path);
    }
    *out = r;
    *n = cnt;
    return CF_OK;
}

static void enrs_destroy(void *state) {
    enrs *s = state;
    if (!s) return;
    free_refs(s->fields, s->n_fields);
    free_refs(s->headers, s->n_headers);
    free(s->route_by);
    free(s->drop_hdr);
    xf_cache_clear(&s->deleted_cache);
    xf_cache_clear(&s->fields_cache);
    free(s);
}

static int mode_index(const char *v, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (strcasecmp(v, names[i]) == 0) return i;
    return -1;
}

static cf_code enrs_create(const cf_config *cfg, void **state, cf_err *err) {
    enrs *s = cf_xcalloc(1, sizeof *s);
    const cf_props *raw = cf_config_props(cfg);
    const char *m = cf_config_string(cfg, "delete.tombstone.handling.mode");
    if (m && *m) {
        s->mode = (del_mode)mode_index(m, new_modes);
    } else if (cf_props_has(raw, "delete.handling.mode") || cf_props_has(raw, "drop.tombstones")) {
        s->legacy = true;
        const char *lm = cf_config_string(cfg, "delete.handling.mode");
        int li = lm ? mode_index(lm, legacy_modes) : 1;
        s->mode = li == 0 ? M_TOMBSTONE : li == 2 ? M_REWRITE : M_DROP;
        s->drop_tombstones = cf_props_has(raw, "drop.tombstones") ? cf_config_bool(cfg, "drop.tombstones") : true;
    } else {
        s->mode = M_TOMBSTONE;
    }
    cf_code rc = parse_refs(cfg, "add.fields", "add.fields.prefix", &s->fields, &s->n_fields, err);
    if (!rc) rc = parse_refs(cfg, "add.headers", "add.headers.prefix", &s->headers, &s->n_headers, err);
    if (rc) {
        enrs_destroy(s);
        return rc;
    }
    const char *r = cf_config_string(cfg, "route.by.field");
    if (r && *r) s->route_by = cf_xstrdup(r);
    s->replace_null = cf_config_bool(cfg, "replace.null.with.default");
    const char *dh = cf_config_string(cfg, "drop.fields.header.name");
    if (dh && *dh) s->drop_hdr = cf_xstrdup(dh);
    s->drop_from_key = cf_config_bool(cfg, "drop.fields.from.key");
    s->keep_compat = cf_config_bool(cfg, "drop.fields.keep.schema.compatible");
    *state = s;
    return CF_OK;
}

/* ---------------------------------------------------------------- helpers */

static bool is_envelope(const cf_record *r) {
    const cf_schema *s = r->value_schema;
    if (!s || !s->name || s->type != CF_STRUCT || !r->value || r->value->type != CF_STRUCT) return false;
    size_t n = strlen(s->name);
    return n >= 9 && strcmp(s->name + n - 9, ".Envelope") == 0;
}

/* Schema of a FieldReference in the envelope schema (NULL if absent). */
static const cf_schema *ref_schema(const field_ref *f, const cf_schema *env) {
    const cf_field *sf = NULL;
    if (f->strct) {
        const cf_field *pf = cf_schema_field(env, f->strct);
        if (pf && pf->schema->type == CF_STRUCT) sf = cf_schema_field(pf->schema, f->field);
    } else {
        sf = cf_schema_field(env, f->field);
    }
    if (!sf) sf = cf_schema_field(env, f->field); /* "field added by another SMT in the main payload" */
    return sf ? sf->schema : NULL;
}

static cf_schema *ref_out_schema(const cf_schema *src) {
    cf_schema *c = xf_copy_basics(src);
    cf_schema_set_optional(c, true);
    return c;
}

/* getValue: without defaults */
static const cf_value *ref_value(const field_ref *f, const cf_value *env) {
    const cf_value *parent = env;
    if (f->strct) {
        parent = cf_value_struct_get(env, f->strct);
        if (!parent || parent->type != CF_STRUCT) return NULL;
    }
    if (cf_schema_field(parent->u.st.schema, f->field)) return cf_value_struct_get(parent, f->field);
    return cf_value_struct_get(env, f->field);
}

static void add_headers(const enrs *s, cf_record *out, const cf_value *env) {
    for (size_t i = 0; i < s->n_headers; i++) {
        const field_ref *h = &s->headers[i];
        if (!env) { /* tombstone: only "op", as "d" */
            if (strcmp(h->field, "op") == 0)
                cf_record_add_header(out, h->new_name, cf_schema_primitive(CF_STRING, false), cf_value_string("d"));
            continue;
        }
        const cf_schema *hs = ref_schema(h, env->u.st.schema);
        if (!hs) continue;
        cf_record_add_header(out, h->new_name, ref_out_schema(hs), cf_value_clone(ref_value(h, env)));
    }
}

/* Row + add.fields (AbstractExtractNewRecordState.addFields). Takes row/row_schema refs? No: borrows. */
static cf_code add_fields(enrs *s, const cf_schema *row_schema, const cf_value *row, const cf_value *env,
                          cf_schema **out_schema, cf_value **out_value, cf_err *err) {
    cf_code rc = xf_require_struct(row, "source field insertion", err);
    if (rc) return rc;
    const cf_schema *rs = row->u.st.schema;
    (void)row_schema;
    /* the schemas of the added fields, in order (absent ones skipped) */
    const cf_schema *env_s = env->u.st.schema;
    cf_schema *cached = xf_cache_get(&s->fields_cache, rs, (uint64_t)(uintptr_t)env_s);
    cf_schema *ns = NULL;
    if (cached) { /* check that the added fields still match (envelope schemas can change) */
        size_t k = rs->n_fields;
        bool ok = true;
        for (size_t i = 0; i < s->n_fields && ok; i++) {
            const cf_schema *fs = ref_schema(&s->fields[i], env_s);
            if (!fs) continue;
            cf_schema *want = ref_out_schema(fs);
            ok = k < cached->n_fields && strcmp(cached->fields[k].name, s->fields[i].new_name) == 0 &&
                 cf_schema_equal(cached->fields[k].schema, want);
            cf_schema_unref(want);
            k++;
        }
        if (ok && k == cached->n_fields) ns = cached;
        else cf_schema_unref(cached);
    }
    if (!ns) {
        ns = xf_struct_basics(rs);
        for (size_t i = 0; i < rs->n_fields; i++) cf_schema_add_field(ns, rs->fields[i].name, cf_schema_ref(rs->fields[i].schema), NULL);
        for (size_t i = 0; i < s->n_fields; i++) {
            const cf_schema *fs = ref_schema(&s->fields[i], env_s);
            if (!fs) continue;
            if ((rc = cf_schema_add_field(ns, s->fields[i].new_name, ref_out_schema(fs), err))) {
                cf_schema_unref(ns);
                cf_err_hint(err, "add.fields names a field that the row already has; change add.fields.prefix.");
                return rc;
            }
        }
        xf_cache_put(&s->fields_cache, rs, (uint64_t)(uintptr_t)env_s, ns);
    }
    cf_value *nv = cf_value_struct(cf_schema_ref(ns));
    for (size_t i = 0; i < rs->n_fields; i++) nv->u.st.fields[i] = xf_get_clone(row, i, false);
    size_t k = rs->n_fields;
    for (size_t i = 0; i < s->n_fields; i++) {
        if (!ref_schema(&s->fields[i], env_s)) continue;
        nv->u.st.fields[k++] = cf_value_clone(ref_value(&s->fields[i], env));
    }
    *out_schema = ns;
    *out_value = nv;
    return CF_OK;
}

/* InsertField.Value with static.field=__deleted, static.value=deleted */
static cf_code insert_deleted(enrs *s, cf_schema *in_schema, cf_value *in, bool deleted, cf_schema **out_schema,
                              cf_value **out_value, cf_err *err) {
    cf_code rc = xf_require_struct(in, "field insertion", err);
    if (rc) return rc;
    const cf_schema *rs = in->u.st.schema;
    (void)in_schema;
    cf_schema *ns = xf_cache_get(&s->deleted_cache, rs, 0);
    if (!ns) {
        ns = xf_struct_basics(rs);
        for (size_t i = 0; i < rs->n_fields; i++) cf_schema_add_field(ns, rs->fields[i].name, cf_schema_ref(rs->fields[i].schema), NULL);
        if ((rc = cf_schema_add_field(ns, DELETED_FIELD, cf_schema_primitive(CF_STRING, true), err))) {
            cf_schema_unref(ns);
            cf_err_hint(err, "The row already has a field named __deleted.");
            return rc;
        }
        xf_cache_put(&s->deleted_cache, rs, 0, ns);
    }
    cf_value *nv = cf_value_struct(cf_schema_ref(ns));
    for (size_t i = 0; i < rs->n_fields; i++) nv->u.st.fields[i] = xf_get_clone(in, i, s->replace_null);
    nv->u.st.fields[rs->n_fields] = cf_value_string(deleted ? "true" : "false");
    *out_schema = ns;
    *out_value = nv;
    return CF_OK;
}

/* fields listed in the drop header, filtered by optionality */
static cf_code drop_fields(const enrs *s, const cf_record *orig, cf_schema **schema, cf_value **value, bool is_key,
                           cf_err *err) {
    const cf_header *h = cf_record_header_last(orig, s->drop_hdr);
    if (!h || !h->value || h->value->type != CF_ARRAY || h->value->u.arr.len == 0) return CF_OK;
    if (!*value || !*schema || (*schema)->type != CF_STRUCT || (*value)->type != CF_STRUCT) return CF_OK;
    (void)err;
    const cf_schema *rs = (*value)->u.st.schema;
    const cf_value *names = h->value;
    bool *drop = cf_xcalloc(rs->n_fields ? rs->n_fields : 1, sizeof *drop);
    size_t nd = 0;
    for (size_t i = 0; i < rs->n_fields; i++) {
        if (s->keep_compat && !rs->fields[i].schema->optional) continue;
        for (size_t j = 0; j < names->u.arr.len; j++) {
            const cf_value *n = names->u.arr.items[j];
            if (n && n->type == CF_STRING && strcmp(n->u.s.ptr, rs->fields[i].name) == 0) {
                drop[i] = true;
                nd++;
                break;
            }
        }
    }
    if (nd) { /* ReplaceField exclude (replace.null.with.default=true: defaults for nulls) */
        cf_schema *ns = xf_struct_basics(rs);
        for (size_t i = 0; i < rs->n_fields; i++)
            if (!drop[i]) cf_schema_add_field(ns, rs->fields[i].name, cf_schema_ref(rs->fields[i].schema), NULL);
        cf_value *nv = cf_value_struct(cf_schema_ref(ns));
        size_t k = 0;
        for (size_t i = 0; i < rs->n_fields; i++)
            if (!drop[i]) nv->u.st.fields[k++] = xf_get_clone(*value, i, true);
        cf_schema_unref(*schema);
        cf_value_destroy(*value);
        *schema = ns;
        *value = nv;
    }
    (void)is_key;
    free(drop);
    return CF_OK;
}

static cf_code route_topic(const enrs *s, const cf_value *row, char **topic, cf_err *err) {
    *topic = NULL;
    if (!s->route_by || !row || row->type != CF_STRUCT) return CF_OK;
    if (!cf_schema_field(row->u.st.schema, s->route_by)) {
        cf_err_set(err, CF_ERR_SCHEMA, "%s is not a valid field name", s->route_by);
        cf_err_hint(err, "route.by.field must name a field of the row.");
        return CF_ERR_SCHEMA;
    }
    const cf_value *v = cf_value_struct_get(row, s->route_by);
    if (!v) return CF_OK;
    if (v->type != CF_STRING) {
        cf_err_set(err, CF_ERR_SCHEMA, "route.by.field %s is a %s, not a string", s->route_by, cf_type_name(v->type));
        cf_err_where(err, "%s", s->route_by);
        return CF_ERR_SCHEMA;
    }
    if (v->u.s.len == 0) return CF_OK; /* Strings.isNullOrBlank: keep the topic */
    bool blank = true;
    for (size_t i = 0; i < v->u.s.len && blank; i++)
        if (v->u.s.ptr[i] != ' ' && v->u.s.ptr[i] != '\t' && v->u.s.ptr[i] != '\n' && v->u.s.ptr[i] != '\r') blank = false;
    if (!blank) *topic = cf_xstrdup(v->u.s.ptr);
    return CF_OK;
}

/* ---------------------------------------------------------------- apply */

static cf_code enrs_apply(void *state, cf_record *rec, cf_record **out, cf_err *err) {
    enrs *s = state;
    *out = NULL;
    if (!rec->value) { /* tombstone */
        bool keep = s->legacy ? !s->drop_tombstones : s->mode == M_REWRITE_WITH_TOMBSTONE;
        if (!keep) {
            cf_record_destroy(rec);
            return CF_OK;
        }
        add_headers(s, rec, NULL);
        *out = rec;
        return CF_OK;
    }
    if (!is_envelope(rec)) {
        *out = rec;
        return CF_OK;
    }
    const cf_value *env = rec->value;
    const cf_schema *env_s = env->u.st.schema;
    const cf_field *af = cf_schema_field(env_s, "after"), *bf = cf_schema_field(env_s, "before");
    if (!af || !bf) {
        cf_err_set(err, CF_ERR_SCHEMA, "Debezium envelope %s has no %s field", env_s->name, !af ? "\"after\"" : "\"before\"");
        cf_err_hint(err, "Only change events with before/after rows can be flattened.");
        return CF_ERR_SCHEMA;
    }
    cf_value *after = env->u.st.fields[af->index], *before = env->u.st.fields[bf->index];
    if (!after && !before) { /* truncate */
        cf_record_destroy(rec);
        return CF_OK;
    }
    cf_schema *ns = NULL;
    cf_value *nv = NULL;
    char *topic = NULL;
    cf_code rc = CF_OK;
    if (!after) { /* delete */
        if ((rc = route_topic(s, before, &topic, err))) return rc;
        switch (s->mode) {
        case M_DROP:
            free(topic);
            cf_record_destroy(rec);
            return CF_OK;
        case M_TOMBSTONE: /* ExtractField "after": null value, the row schema */
            ns = cf_schema_ref(af->schema);
            break;
        case M_DELETE_TO_TOMBSTONE: break;
        case M_REWRITE:
        case M_REWRITE_WITH_TOMBSTONE: {
            cf_schema *s1;
            cf_value *v1;
            if (before->type != CF_STRUCT) { /* MongoDB-style string rows: no __deleted */
                ns = cf_schema_ref(bf->schema);
                nv = cf_value_clone(before);
                break;
            }
            if (s->n_fields) {
                if ((rc = add_fields(s, bf->schema, before, env, &s1, &v1, err))) break;
            } else {
                s1 = cf_schema_ref(bf->schema);
                v1 = cf_value_clone(before);
            }
            rc = insert_deleted(s, s1, v1, true, &ns, &nv, err);
            cf_schema_unref(s1);
            cf_value_destroy(v1);
            break;
        }
        }
    } else { /* create, read, update */
        if ((rc = route_topic(s, after, &topic, err))) return rc;
        if (s->n_fields && after->type == CF_STRUCT) {
            rc = add_fields(s, af->schema, after, env, &ns, &nv, err);
        } else {
            ns = cf_schema_ref(af->schema);
            nv = cf_value_clone(after);
        }
        if (!rc && s->drop_hdr) rc = drop_fields(s, rec, &ns, &nv, false, err);
        if (!rc && (s->mode == M_REWRITE || s->mode == M_REWRITE_WITH_TOMBSTONE) && nv && nv->type == CF_STRUCT) {
            cf_schema *s2;
            cf_value *v2;
            rc = insert_deleted(s, ns, nv, false, &s2, &v2, err);
            if (!rc) {
                cf_schema_unref(ns);
                cf_value_destroy(nv);
                ns = s2;
                nv = v2;
            }
        }
    }
    if (rc) {
        free(topic);
        cf_schema_unref(ns);
        cf_value_destroy(nv);
        return rc;
    }
    /* success: now change the record */
    if (s->drop_hdr && s->drop_from_key && after) {
        cf_schema *ks = cf_schema_ref(rec->key_schema);
        cf_value *kv = cf_value_clone(rec->key);
        drop_fields(s, rec, &ks, &kv, true, NULL);
        cf_record_set_key(rec, ks, kv);
    }
    add_headers(s, rec, env); /* reads env: before replacing the value */
    cf_record_set_value(rec, ns, nv);
    if (topic) {
        cf_record_set_topic(rec, topic);
        free(topic);
    }
    *out = rec;
    return CF_OK;
}

static const char *const enrs_aliases[] = {"io.debezium.transforms.ExtractNewRecordState", NULL};

const cf_transform_plugin cf_xf_extract_new_record_state = {
    .name = "ExtractNewRecordState",
    .aliases = enrs_aliases,
    .config = &cf_extract_new_record_state_table,
    .create = enrs_create,
    .apply = enrs_apply,
    .destroy = enrs_destroy,
};
