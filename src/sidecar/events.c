/*
 * events.c - partition updates as change events (see cdcflow/sidecar_events.h).
 *
 * Per table version the schemas are built once (key, payload, clustering,
 * envelope) and the constant parts of its events made shared values (the
 * keyspace, table and schema id strings, the column names of updateFields),
 * so an event costs the values of its cells and a few small allocations.
 * Partition key and clustering values are converted once per update / row
 * and shared by its events.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/log.h"
#include "cdcflow/sidecar_events.h"
#include "sidecar_internal.h"

#define COMP "sidecar"

static const char *const op_names[] = {"INSERT", "UPDATE", "DELETE", "DELETE_PARTITION", "DELETE_RANGE",
                                       "COMPLEX_ELEMENT_DELETE"};
const char *cf_sc_op_name(cf_sc_op op) { return (unsigned)op < 6 ? op_names[op] : "?"; }

enum { PR_LT, PR_LTE, PR_EQ, PR_GTE, PR_GT, PR_N };
static const char *const pred_names[] = {"LT", "LTE", "EQ", "GTE", "GT"};

/* envelope fields, in order */
enum { E_OP, E_TS, E_KS, E_TABLE, E_UUID, E_PARTIAL, E_UPDATE, E_ELEMENT, E_RANGE, E_TTL, E_PAYLOAD, E_N };

typedef struct colinfo {
    const char *cql_name; /* borrowed from the table */
    const cf_cql_type *type;
    cf_cass_column_kind kind;
    bool reversed;
    size_t field;          /* index in the payload */
    const cf_schema *fs;   /* the payload field's schema (borrowed) */
    cf_value *name_v;      /* shared: the field name, for updateFields and range predicates */
} colinfo;

typedef struct tab {
    cf_sc_table_schemas pub;
    colinfo *cols;
    size_t ncols, npk, nck; /* cols: pk (by position), ck (by position), statics, regulars (by name) */
    cf_schema *pred;        /* RangePredicate */
    cf_value *ks_v, *tb_v, *uuid_v;
} tab;

struct cf_sc_events {
    char *topic_format, *ns;
    int32_t dscale;
    bool dstring;
    tab **tabs;
    size_t ntabs, cap;
    cf_schema *ttl_schema;
    cf_value *op_v[6], *pred_v[PR_N], *true_v, *false_v;
};

const char *cf_sc_events_ns(const cf_sc_events *ev) { return ev->ns; }
bool cf_sc_events_decimal_string(const cf_sc_events *ev) { return ev->dstring; }
int32_t cf_sc_events_decimal_scale(const cf_sc_events *ev) { return ev->dscale; }

cf_sc_events *cf_sc_events_new(const cf_sc_events_opts *o) {
    cf_sc_events *ev = cf_xcalloc(1, sizeof *ev);
    ev->topic_format = cf_xstrdup(o && o->topic_format && *o->topic_format ? o->topic_format : "{keyspace}.{table}");
    ev->ns = cf_xstrdup(o && o->ns && *o->ns ? o->ns : "cassandra");
    ev->dstring = o && o->decimal_as_string;
    ev->dscale = o && (o->decimal_scale_set || o->decimal_scale) ? o->decimal_scale : 18;
    for (int i = 0; i < 6; i++) ev->op_v[i] = cf_value_string(op_names[i]);
    for (int i = 0; i < PR_N; i++) ev->pred_v[i] = cf_value_string(pred_names[i]);
    ev->true_v = cf_value_bool(true);
    ev->false_v = cf_value_bool(false);
    cf_schema *ttl = cf_schema_new_struct();
    char name[300];
    snprintf(name, sizeof name, "%s.TTL", ev->ns);
    cf_schema_set_name(ttl, name);
    cf_schema *f = cf_schema_primitive(CF_INT32, false);
    cf_schema_set_doc(f, "Relative time in seconds as set in the CQL statement");
    cf_schema_add_field(ttl, "ttl", f, NULL);
    f = cf_schema_primitive(CF_INT64, false);
    cf_schema_set_doc(f, "When the data expires, seconds since the epoch");
    cf_schema_add_field(ttl, "deletedAt", f, NULL);
    cf_schema_set_optional(ttl, true);
    ev->ttl_schema = ttl;
    return ev;
}

static void tab_free(tab *t) {
    cf_schema_unref(t->pub.key);
    cf_schema_unref(t->pub.value);
    cf_schema_unref(t->pub.payload);
    cf_schema_unref(t->pub.clustering);
    cf_schema_unref(t->pred);
    free(t->pub.topic);
    free(t->pub.notes);
    for (size_t i = 0; i < t->ncols; i++) cf_value_destroy(t->cols[i].name_v);
    free(t->cols);
    cf_value_destroy(t->ks_v);
    cf_value_destroy(t->tb_v);
    cf_value_destroy(t->uuid_v);
    free(t);
}

void cf_sc_events_destroy(cf_sc_events *ev) {
    if (!ev) return;
    for (size_t i = 0; i < ev->ntabs; i++) tab_free(ev->tabs[i]);
    free(ev->tabs);
    for (int i = 0; i < 6; i++) cf_value_destroy(ev->op_v[i]);
    for (int i = 0; i < PR_N; i++) cf_value_destroy(ev->pred_v[i]);
    cf_value_destroy(ev->true_v);
    cf_value_destroy(ev->false_v);
    cf_schema_unref(ev->ttl_schema);
    free(ev->topic_format);
    free(ev->ns);
    free(ev);
}

/* ---------------- table schemas ---------------- */

static int cmp_col_name(const void *a, const void *b) {
    return strcmp(((const cf_cass_column *)a)->name, ((const cf_cass_column *)b)->name);
}

static char *topic_of(const char *fmt, const char *ks, const char *tb) {
    cf_buf b = CF_BUF_INIT;
    for (const char *p = fmt; *p;) {
        if (strncmp(p, "{keyspace}", 10) == 0) {
            cf_buf_append_str(&b, ks);
            p += 10;
        } else if (strncmp(p, "{table}", 7) == 0) {
            cf_buf_append_str(&b, tb);
            p += 7;
        } else {
            cf_buf_append_byte(&b, (uint8_t)*p++);
        }
    }
    return cf_buf_detach(&b, NULL);
}

static cf_schema *named(cf_sc_events *ev, const cf_cass_table *t, const char *suffix) {
    cf_buf b = CF_BUF_INIT;
    cf_buf_printf(&b, "%s.", ev->ns);
    cf_sc_avro_name(t->keyspace, &b);
    cf_buf_append_byte(&b, '.');
    cf_sc_avro_name(t->name, &b);
    cf_buf_printf(&b, ".%s", suffix);
    cf_schema *s = cf_schema_new_struct();
    cf_schema_set_name(s, b.data);
    cf_buf_free(&b);
    return s;
}

static void add_col(tab *x, const cf_cass_column *c, size_t *k) {
    colinfo *ci = &x->cols[(*k)++];
    ci->cql_name = c->name;
    ci->type = c->type;
    ci->kind = c->kind;
    ci->reversed = c->reversed;
}

static void note(cf_buf *n, const char *fmt, const char *col, const cf_cql_type *type) {
    char *ts = cf_cql_type_to_string(type);
    cf_buf_printf(n, fmt, col, ts);
    cf_buf_append_byte(n, '\n');
    free(ts);
}

static bool has_kind(const cf_cql_type *t, cf_cql_kind k) {
    if (t->kind == k) return true;
    for (size_t i = 0; i < t->n_params; i++)
        if (has_kind(t->params[i], k)) return true;
    return false;
}

static tab *build_tab(cf_sc_events *ev, const cf_cass_table *t) {
    tab *x = cf_xcalloc(1, sizeof *x);
    x->pub.table = t;
    size_t n = t->n_partition_key + t->n_clustering + t->n_static + t->n_regular, k = 0;
    x->cols = cf_xcalloc(n ? n : 1, sizeof *x->cols);
    x->ncols = n;
    x->npk = t->n_partition_key;
    x->nck = t->n_clustering;
    for (size_t i = 0; i < t->n_partition_key; i++) add_col(x, &t->partition_key[i], &k);
    for (size_t i = 0; i < t->n_clustering; i++) add_col(x, &t->clustering[i], &k);
    /* statics and regulars by name: the same payload whatever order the schema came in */
    cf_cass_column *sorted = cf_xmalloc((t->n_static + t->n_regular + 1) * sizeof *sorted);
    if (t->n_static) {
        memcpy(sorted, t->statics, t->n_static * sizeof *sorted);
        qsort(sorted, t->n_static, sizeof *sorted, cmp_col_name);
    }
    if (t->n_regular) {
        memcpy(sorted + t->n_static, t->regular, t->n_regular * sizeof *sorted);
        qsort(sorted + t->n_static, t->n_regular, sizeof *sorted, cmp_col_name);
    }
    for (size_t i = 0; i < t->n_static + t->n_regular; i++) add_col(x, &sorted[i], &k);
    free(sorted);

    /* the deterministic schema id */
    cf_buf idb = CF_BUF_INIT, scratch = CF_BUF_INIT, notes = CF_BUF_INIT;
    cf_buf_printf(&idb, "%s%c%s%c", t->keyspace, 0, t->name, 0);
    for (size_t i = 0; i < n; i++) {
        char *ts = cf_cql_type_to_string(x->cols[i].type);
        cf_buf_printf(&idb, "%d%c%s%c%s%c%d%c", (int)x->cols[i].kind, 0, x->cols[i].cql_name, 0, ts, 0,
                      x->cols[i].reversed ? 1 : 0, 0);
        free(ts);
    }
    uint8_t md[16];
    unsigned mdn = 16;
    EVP_Digest(idb.data, idb.len, md, &mdn, EVP_md5(), NULL);
    md[6] = (uint8_t)((md[6] & 0x0f) | 0x30); /* name-based, MD5 (version 3), as Java's UUID.nameUUIDFromBytes */
    md[8] = (uint8_t)((md[8] & 0x3f) | 0x80);
    cf_cass_uuid_format(md, x->pub.uuid);
    x->pub.id = (int32_t)(((uint32_t)md[0] << 24 | (uint32_t)md[1] << 16 | (uint32_t)md[2] << 8 | md[3]) & 0x7fffffffu);
    cf_buf_free(&idb);

    /* key, payload, clustering */
    cf_schema *key = named(ev, t, "Key"), *payload = named(ev, t, "Row");
    cf_schema *clus = t->n_clustering ? named(ev, t, "Clustering") : NULL;
    for (size_t i = 0; i < n; i++) {
        colinfo *ci = &x->cols[i];
        if (ci->kind == CF_CASS_PARTITION_KEY) cf_sc_add_named_field(key, ci->cql_name, cf_sc_cql_schema(ev, ci->type, false), &scratch);
        if (ci->kind == CF_CASS_CLUSTERING) cf_sc_add_named_field(clus, ci->cql_name, cf_sc_cql_schema(ev, ci->type, true), &scratch);
        /* the column's CQL type and kind ride along (parameters "cassandra.type", "cassandra.kind" for
         * static): a Connect array is a list or a set, a string may be a uuid; a consumer whose copy of
         * the schema predates an ALTER TABLE ADD (the cdc-sink's cassandra.schema.files) reads them here.
         * Not on a UDT: its schema is a named record shared by every use of the type (Avro allows one
         * definition per name), and a struct is a UDT already */
        cf_schema *pfs = cf_sc_cql_schema(ev, ci->type, true);
        if (ci->type->kind != CF_CQL_UDT) {
            char *pts = cf_cql_type_to_string(ci->type);
            cf_schema_set_param(pfs, "cassandra.type", pts);
            free(pts);
            if (ci->kind == CF_CASS_STATIC) cf_schema_set_param(pfs, "cassandra.kind", "static");
        }
        cf_sc_add_named_field(payload, ci->cql_name, pfs, &scratch);
        ci->field = payload->n_fields - 1;
        ci->fs = payload->fields[ci->field].schema;
        ci->name_v = cf_value_string(payload->fields[ci->field].name);
        /* what the events cannot carry, said once */
        const cf_cql_type *ty = ci->type;
        if (ty->kind == CF_CQL_COUNTER) continue; /* the table note below covers it */
        if (cf_cql_type_is_multicell(ty) && ty->kind == CF_CQL_LIST)
            note(&notes, "column %s (%s): list elements added are published as they are, but an element removed "
                         "(DELETE l[i], l = l - [...]) is published without it: Cassandra keys list elements by "
                         "timeuuids, not by index or value", ci->cql_name, ty);
        else if (cf_cql_type_is_multicell(ty))
            note(&notes, "column %s (%s): a write that adds or removes elements (fields) is published with those "
                         "elements only (elementFields), not the whole stored value", ci->cql_name, ty);
        if (has_kind(ty, CF_CQL_CUSTOM)) note(&notes, "column %s (%s): custom type, published as its bytes", ci->cql_name, ty);
    }
    cf_buf_free(&scratch);
    x->pub.supported = !t->counter;
    if (t->counter)
        cf_buf_append_str(&notes, "counter table: its changes are not published (a counter update is a delta whose "
                                  "copies differ between replicas; Sidecar CDC does not support counters either)\n");
    if (notes.len) notes.data[--notes.len] = 0; /* no trailing newline */
    x->pub.notes = notes.data ? cf_buf_detach(&notes, NULL) : cf_xstrdup("");

    /* the envelope */
    cf_schema *env = named(ev, t, "Envelope");
    cf_schema_add_field(env, "operationType", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(env, "timestampMicros", cf_schema_primitive(CF_INT64, false), NULL);
    cf_schema_add_field(env, "sourceKeyspace", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(env, "sourceTable", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(env, "schemaUuid", cf_schema_primitive(CF_STRING, false), NULL);
    cf_schema_add_field(env, "isPartial", cf_schema_primitive(CF_BOOLEAN, false), NULL);
    cf_schema *upd = cf_schema_new_array(cf_schema_primitive(CF_STRING, false));
    cf_schema_set_doc(upd, "Columns the write set (to a value or to null); a column not listed was not written");
    cf_schema_add_field(env, "updateFields", upd, NULL);
    cf_schema *elf = cf_schema_new_array(cf_schema_primitive(CF_STRING, false));
    cf_schema_set_optional(elf, true);
    cf_schema_set_doc(elf, "Collection and UDT columns whose value holds only the elements added or removed");
    cf_schema_add_field(env, "elementFields", elf, NULL);
    cf_schema *pred = NULL;
    if (clus) {
        pred = named(ev, t, "RangePredicate");
        cf_schema_add_field(pred, "field", cf_schema_primitive(CF_STRING, false), NULL);
        cf_schema_add_field(pred, "rangePredicateType", cf_schema_primitive(CF_STRING, false), NULL);
        cf_schema_add_field(pred, "value", cf_schema_ref(clus), NULL);
        cf_schema *ra = cf_schema_new_array(cf_schema_ref(pred));
        cf_schema_set_optional(ra, true);
        cf_schema_set_doc(ra, "Clustering key predicates of a DELETE_RANGE, ANDed");
        cf_schema_add_field(env, "range", ra, NULL);
    } else {
        /* no clustering: no range deletions; the field stays for one envelope shape */
        cf_schema *ra = cf_schema_new_array(cf_schema_primitive(CF_STRING, false));
        cf_schema_set_optional(ra, true);
        cf_schema_add_field(env, "range", ra, NULL);
    }
    cf_schema_add_field(env, "ttl", cf_schema_ref(ev->ttl_schema), NULL);
    cf_schema_add_field(env, "payload", payload, NULL);
    x->pub.key = key;
    x->pub.value = env;
    x->pub.payload = cf_schema_ref(payload);
    x->pub.clustering = clus;
    x->pred = pred;
    x->pub.topic = topic_of(ev->topic_format, t->keyspace, t->name);
    x->ks_v = cf_value_string(t->keyspace);
    x->tb_v = cf_value_string(t->name);
    x->uuid_v = cf_value_string(x->pub.uuid);
    return x;
}

static tab *find_tab(cf_sc_events *ev, const cf_cass_table *t) {
    for (size_t i = ev->ntabs; i-- > 0;) /* the newest first: usually the one in use */
        if (ev->tabs[i]->pub.table == t) return ev->tabs[i];
    tab *x = build_tab(ev, t);
    if (ev->ntabs == ev->cap) ev->tabs = cf_xrealloc(ev->tabs, (ev->cap = ev->cap ? ev->cap * 2 : 8) * sizeof *ev->tabs);
    ev->tabs[ev->ntabs++] = x;
    return x;
}

cf_code cf_sc_events_table(cf_sc_events *ev, const cf_cass_table *t, const cf_sc_table_schemas **out, cf_err *err) {
    (void)err;
    *out = &find_tab(ev, t)->pub;
    return CF_OK;
}

/* ---------------- building events ---------------- */

/* Values made once and handed to many events (cf_value_ref) are never
 * changed after: the key, the partition key and clustering values, the
 * constant strings. */
typedef struct bctx {
    cf_sc_events *ev;
    tab *t;
    const cf_cass_update *u;
    const cf_sc_emitter *em;
    cf_value *key;   /* shared by the update's events */
    cf_value **pkv;  /* payload values of the partition key (shared) */
    cf_value **ckv;  /* of the current row's clustering (shared) */
    size_t n;
    cf_err *err;
} bctx;

typedef struct evb {
    cf_value *payload, *upd, *elem;
    int64_t ts;
    bool has_ttl;
    int32_t ttl;
    int64_t deleted_at;
    size_t written; /* columns set besides the primary key */
} evb;

static void evb_start(bctx *b, evb *e, bool with_ck) {
    memset(e, 0, sizeof *e);
    e->ts = CF_CASS_LIVE_TS;
    e->payload = cf_value_struct(cf_schema_ref(b->t->pub.payload));
    e->upd = cf_value_array();
    for (size_t i = 0; i < b->t->npk; i++) {
        cf_value_struct_set_index(e->payload, b->t->cols[i].field, cf_value_ref(b->pkv[i]));
        cf_value_array_push(e->upd, cf_value_ref(b->t->cols[i].name_v));
    }
    if (with_ck)
        for (size_t i = 0; i < b->t->nck; i++) {
            const colinfo *ci = &b->t->cols[b->t->npk + i];
            cf_value_struct_set_index(e->payload, ci->field, cf_value_ref(b->ckv[i]));
            cf_value_array_push(e->upd, cf_value_ref(ci->name_v));
        }
}

static void evb_free(evb *e) {
    cf_value_destroy(e->payload);
    cf_value_destroy(e->upd);
    cf_value_destroy(e->elem);
    memset(e, 0, sizeof *e);
}

static void evb_ts(evb *e, int64_t ts) {
    if (ts != CF_CASS_LIVE_TS && (e->ts == CF_CASS_LIVE_TS || ts > e->ts)) e->ts = ts;
}

static void evb_set(evb *e, const colinfo *ci, cf_value *v, bool element) {
    cf_value_struct_set_index(e->payload, ci->field, v);
    cf_value_array_push(e->upd, cf_value_ref(ci->name_v));
    if (element) {
        if (!e->elem) e->elem = cf_value_array();
        cf_value_array_push(e->elem, cf_value_ref(ci->name_v));
    }
    e->written++;
}

static void evb_emit(bctx *b, evb *e, cf_sc_op op, cf_value *range) {
    cf_sc_events *ev = b->ev;
    tab *t = b->t;
    cf_value *env = cf_value_struct(cf_schema_ref(t->pub.value));
    cf_value **f = env->u.st.fields;
    f[E_OP] = cf_value_ref(ev->op_v[op]);
    f[E_TS] = cf_value_int64(e->ts == CF_CASS_LIVE_TS ? 0 : e->ts);
    f[E_KS] = cf_value_ref(t->ks_v);
    f[E_TABLE] = cf_value_ref(t->tb_v);
    f[E_UUID] = cf_value_ref(t->uuid_v);
    f[E_PARTIAL] = cf_value_ref(e->upd->u.arr.len < t->ncols ? ev->true_v : ev->false_v);
    f[E_UPDATE] = e->upd;
    f[E_ELEMENT] = e->elem;
    f[E_RANGE] = range;
    if (e->has_ttl) {
        cf_value *ttl = cf_value_struct(cf_schema_ref(ev->ttl_schema));
        ttl->u.st.fields[0] = cf_value_int32(e->ttl);
        ttl->u.st.fields[1] = cf_value_int64(e->deleted_at);
        f[E_TTL] = ttl;
    }
    f[E_PAYLOAD] = e->payload;
    e->upd = e->elem = e->payload = NULL;
    cf_record *r = b->em->new_record(b->em->arg);
    cf_record_set_topic(r, t->pub.topic);
    cf_record_set_key(r, cf_schema_ref(t->pub.key), cf_value_ref(b->key));
    cf_record_set_value(r, cf_schema_ref(t->pub.value), env);
    b->em->emit(b->em->arg, r, op);
    b->n++;
}

static cf_code convert(bctx *b, const colinfo *ci, const cf_cql_type *t, const cf_schema *s, const uint8_t *p,
                       size_t n, cf_value **out) {
    if (!p) {
        *out = NULL;
        return CF_OK;
    }
    cf_code rc = cf_sc_cql_to_value(b->ev, t, s, p, n, out, b->err);
    if (rc) cf_err_where(b->err, "%s.%s.%s, column %s", b->t->pub.table->keyspace, b->t->pub.table->name, "payload",
                         ci ? ci->cql_name : "?");
    return rc;
}

static const colinfo *find_col(const tab *t, const char *name) {
    for (size_t i = t->npk + t->nck; i < t->ncols; i++)
        if (t->cols[i].cql_name == name) return &t->cols[i];
    for (size_t i = t->npk + t->nck; i < t->ncols; i++)
        if (strcmp(t->cols[i].cql_name, name) == 0) return &t->cols[i];
    return NULL; /* a dropped column: not in this version */
}

/* One complex column's live cells as the value of its whole type. */
static cf_code complex_value(bctx *b, const colinfo *ci, const cf_cass_column_data *cd, bool tombstones,
                             cf_value **out) {
    const cf_cql_type *t = ci->type;
    const cf_schema *s = ci->fs;
    cf_value *c;
    if (t->kind == CF_CQL_MAP) c = cf_value_map();
    else if (t->kind == CF_CQL_UDT) c = cf_value_struct(cf_schema_ref((cf_schema *)s));
    else c = cf_value_array();
    size_t got = 0;
    for (size_t k = 0; k < cd->n_cells; k++) {
        const cf_cass_cell *cell = &cd->cells[k];
        if (cell->deleted != tombstones) continue;
        cf_value *v = NULL, *kv = NULL;
        cf_code rc = CF_OK;
        switch (t->kind) {
        case CF_CQL_LIST:
            if (tombstones) continue; /* a removed list element has no value, only its timeuuid */
            rc = convert(b, ci, t->params[0], s->value_schema, cell->value.p ? cell->value.p : (const uint8_t *)"",
                         cell->value.len, &v);
            if (!rc) cf_value_array_push(c, v);
            break;
        case CF_CQL_SET:
            rc = convert(b, ci, t->params[0], s->value_schema, cell->path.p, cell->path.len, &v);
            if (!rc) cf_value_array_push(c, v);
            break;
        case CF_CQL_MAP:
            rc = convert(b, ci, t->params[0], s->key_schema, cell->path.p, cell->path.len, &kv);
            if (!rc && !tombstones)
                rc = convert(b, ci, t->params[1], s->value_schema, cell->value.p ? cell->value.p : (const uint8_t *)"",
                             cell->value.len, &v);
            if (!rc) cf_value_map_put(c, kv, v);
            else cf_value_destroy(kv);
            break;
        case CF_CQL_UDT: {
            if (cell->path.len != 2) {
                cf_value_destroy(c);
                cf_err_set(b->err, CF_ERR_SCHEMA, "UDT cell path of %zu bytes (a 2-byte field index expected)",
                           cell->path.len);
                cf_err_where(b->err, "%s.%s, column %s", b->t->pub.table->keyspace, b->t->pub.table->name,
                             ci->cql_name);
                return CF_ERR_SCHEMA;
            }
            size_t fi = (size_t)(cell->path.p[0] << 8 | cell->path.p[1]);
            if (fi >= t->n_params) break; /* a field this schema version does not know */
            if (!tombstones)
                rc = convert(b, ci, t->params[fi], s->fields[fi].schema,
                             cell->value.p ? cell->value.p : (const uint8_t *)"", cell->value.len, &v);
            if (!rc) cf_value_struct_set_index(c, fi, v);
            break;
        }
        default: break;
        }
        if (rc) {
            cf_value_destroy(c);
            return rc;
        }
        got++;
    }
    if (!got && (t->kind != CF_CQL_LIST || !tombstones)) {
        cf_value_destroy(c);
        c = NULL;
    }
    *out = c;
    return CF_OK;
}

static void cell_ttl(evb *e, const cf_cass_cell *c) {
    if (c->expiring && !e->has_ttl) {
        e->has_ttl = true;
        e->ttl = c->ttl;
        e->deleted_at = c->local_deletion_time;
    }
}

/* A row or the static row: a DELETE for its deletion, then the event of its
 * cells, then a COMPLEX_ELEMENT_DELETE for elements it removed. */
static cf_code row_events(bctx *b, const cf_cass_row *r, bool is_static) {
    tab *t = b->t;
    evb e;
    cf_code rc = CF_OK;
    if (!cf_cass_deletion_is_live(&r->deletion)) {
        evb_start(b, &e, !is_static);
        evb_ts(&e, r->deletion.marked_at);
        evb_emit(b, &e, CF_SC_OP_DELETE, NULL);
    }
    evb_start(b, &e, !is_static);
    bool wrote = false, deleted = false;
    if (r->has_liveness) {
        evb_ts(&e, r->ts);
        if (r->ttl) {
            e.has_ttl = true;
            e.ttl = r->ttl;
            e.deleted_at = r->local_expiration_time;
        }
    }
    bool element_deletes = false;
    for (size_t i = 0; i < r->n_columns; i++) {
        const cf_cass_column_data *cd = &r->columns[i];
        const colinfo *ci = find_col(t, cd->name);
        if (!ci) continue;
        if (!cd->complex) {
            if (!cd->n_cells) continue;
            const cf_cass_cell *c = &cd->cells[0];
            evb_ts(&e, c->ts);
            cell_ttl(&e, c);
            cf_value *v = NULL;
            if (c->deleted) {
                deleted = true;
            } else {
                rc = convert(b, ci, ci->type, ci->fs, c->value.p ? c->value.p : (const uint8_t *)"", c->value.len, &v);
                if (rc) goto fail;
                wrote = true;
            }
            evb_set(&e, ci, v, false);
            continue;
        }
        /* complex: a collection or UDT column written cell by cell */
        bool live = false;
        for (size_t k = 0; k < cd->n_cells; k++) {
            if (cd->cells[k].deleted) element_deletes = true;
            else {
                live = true;
                evb_ts(&e, cd->cells[k].ts);
                cell_ttl(&e, &cd->cells[k]);
            }
        }
        if (!cd->has_complex_deletion && !live) continue; /* only removals: the event below */
        cf_value *v = NULL;
        rc = complex_value(b, ci, cd, false, &v);
        if (rc) goto fail;
        if (cd->has_complex_deletion) { /* the whole value replaced (or set to null) */
            evb_ts(&e, cd->complex_deletion.marked_at);
            if (live) wrote = true;
            else deleted = true;
            evb_set(&e, ci, v, false);
        } else {
            wrote = true;
            evb_set(&e, ci, v, true);
        }
    }
    if (r->has_liveness || wrote || deleted) {
        cf_sc_op op = r->has_liveness ? CF_SC_OP_INSERT : wrote ? CF_SC_OP_UPDATE : CF_SC_OP_DELETE;
        if (is_static && op == CF_SC_OP_INSERT) op = CF_SC_OP_UPDATE;
        evb_emit(b, &e, op, NULL);
    } else {
        evb_free(&e);
    }
    if (!element_deletes) return CF_OK;
    evb_start(b, &e, !is_static);
    for (size_t i = 0; i < r->n_columns; i++) {
        const cf_cass_column_data *cd = &r->columns[i];
        const colinfo *ci = find_col(t, cd->name);
        if (!ci || !cd->complex) continue;
        bool any = false;
        for (size_t k = 0; k < cd->n_cells; k++)
            if (cd->cells[k].deleted) {
                any = true;
                evb_ts(&e, cd->cells[k].ts);
            }
        if (!any) continue;
        if (ci->type->kind == CF_CQL_UDT) {
            /* a removed field has no value to show: the field is named, "<column>.<field>" */
            evb_set(&e, ci, NULL, false);
            if (!e.elem) e.elem = cf_value_array();
            for (size_t k = 0; k < cd->n_cells; k++) {
                const cf_cass_cell *c = &cd->cells[k];
                if (!c->deleted || c->path.len != 2) continue;
                size_t fi = (size_t)(c->path.p[0] << 8 | c->path.p[1]);
                if (fi >= ci->fs->n_fields) continue;
                cf_buf fb = CF_BUF_INIT;
                cf_buf_printf(&fb, "%s.%s", b->t->pub.payload->fields[ci->field].name, ci->fs->fields[fi].name);
                cf_value_array_push(e.elem, cf_value_string_n(fb.data, fb.len));
                cf_buf_free(&fb);
            }
            continue;
        }
        cf_value *v = NULL;
        rc = complex_value(b, ci, cd, true, &v);
        if (rc) goto fail;
        evb_set(&e, ci, v, true);
    }
    evb_emit(b, &e, CF_SC_OP_COMPLEX_ELEMENT_DELETE, NULL);
    return CF_OK;
fail:
    evb_free(&e);
    return rc;
}

static void clustering_values(bctx *b, const cf_cass_row *r, cf_value **out, cf_code *rc) {
    for (size_t i = 0; i < b->t->nck; i++) {
        out[i] = NULL;
        if (i >= r->n_clustering || *rc) continue;
        const colinfo *ci = &b->t->cols[b->t->npk + i];
        *rc = convert(b, ci, ci->type, ci->fs, r->clustering[i].p, r->clustering[i].len, &out[i]);
    }
}

static void free_values(cf_value **v, size_t n) {
    for (size_t i = 0; i < n; i++) cf_value_destroy(v[i]);
}

/* A predicate on clustering column i with the value of bound r. */
static cf_code add_pred(bctx *b, cf_value *arr, const cf_cass_row *r, size_t i, int op) {
    const colinfo *ci = &b->t->cols[b->t->npk + i];
    const cf_schema *cs = b->t->pub.clustering;
    cf_value *v = NULL;
    cf_code rc = convert(b, ci, ci->type, cs->fields[i].schema, r->clustering[i].p, r->clustering[i].len, &v);
    if (rc) return rc;
    cf_value *cv = cf_value_struct(cf_schema_ref(b->t->pub.clustering));
    cf_value_struct_set_index(cv, i, v);
    cf_value *p = cf_value_struct(cf_schema_ref(b->t->pred));
    p->u.st.fields[0] = cf_value_ref(ci->name_v);
    p->u.st.fields[1] = cf_value_ref(b->ev->pred_v[op]);
    p->u.st.fields[2] = cv;
    cf_value_array_push(arr, p);
    return CF_OK;
}

static bool bound_inclusive(cf_cass_bound_kind k, bool start) {
    if (start)
        return k == CF_CASS_BK_INCL_START_BOUND || k == CF_CASS_BK_EXCL_END_INCL_START_BOUNDARY;
    return k == CF_CASS_BK_INCL_END_BOUND || k == CF_CASS_BK_INCL_END_EXCL_START_BOUNDARY;
}

static bool same_value(const cf_cass_bytes *a, const cf_cass_bytes *b) {
    if (!a->p || !b->p) return a->p == b->p;
    return a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
}

/* The predicate "in clustering order, after (lower) or before (upper) the
 * value of bound r at column i", inclusive or not: for a DESC column the
 * clustering order is the values' order reversed. */
static cf_code add_bound(bctx *b, cf_value *arr, const cf_cass_row *r, size_t i, bool lower, bool incl) {
    bool rev = b->t->cols[b->t->npk + i].reversed;
    int op = lower != rev ? (incl ? PR_GTE : PR_GT) : (incl ? PR_LTE : PR_LT);
    return add_pred(b, arr, r, i, op);
}

/* One range event: columns 0..neq-1 equal to eq's values, then at column
 * neq an optional lower bound (lo) and an optional upper bound (hi). */
static cf_code range_piece(bctx *b, const cf_cass_deletion *del, const cf_cass_row *eq, size_t neq,
                           const cf_cass_row *lo, bool loinc, const cf_cass_row *hi, bool hiinc) {
    evb ev;
    evb_start(b, &ev, false);
    evb_ts(&ev, del->marked_at);
    cf_value *arr = cf_value_array();
    cf_code rc = CF_OK;
    for (size_t i = 0; i < neq && !rc; i++) rc = add_pred(b, arr, eq, i, PR_EQ);
    if (!rc && lo) rc = add_bound(b, arr, lo, neq, true, loinc);
    if (!rc && hi) rc = add_bound(b, arr, hi, neq, false, hiinc);
    if (rc) {
        cf_value_destroy(arr);
        evb_free(&ev);
        return rc;
    }
    evb_emit(b, &ev, CF_SC_OP_DELETE_RANGE, arr);
    return CF_OK;
}

/* The range (start, end) of a range tombstone as range events, each with
 * ANDed single-column predicates (the form of the Sidecar CDC design).
 * Bounds that differ in one column (DELETE ... WHERE c1 = 1 AND c2 > 'a')
 * give one event: the common leading values as EQ, then the first column
 * that differs bounded by each side. Bounds that differ in more columns
 * (a multi-column slice, (c1, c2) >= (1, 'a'), or the pieces Cassandra
 * makes when overlapping range deletions of one batch are merged, e.g.
 * [(2), (3, 'b'))) are the union of such ranges, split at each column:
 *   c1 = 2 AND c2 >= 'a'    (the rest of the start's first value)
 *   c1 > 2 AND c1 < 3       (the values in between)
 *   c1 = 3 AND c2 < 'b'     (the part of the end's first value)
 * one event each, same timestamp; together they delete exactly the range. */
static cf_code range_event(bctx *b, const cf_cass_row *s, const cf_cass_row *e, const cf_cass_deletion *del) {
    size_t c = 0;
    while (c < s->n_clustering && c < e->n_clustering && same_value(&s->clustering[c], &e->clustering[c])) c++;
    size_t ns = s->n_clustering, ne = e->n_clustering;
    bool sinc = bound_inclusive(s->bound, true), einc = bound_inclusive(e->bound, false);
    if (ns == c && ne == c && c > 0 && !(sinc && einc)) {
        /* equal bounds, one of them exclusive: an empty range Cassandra does not write */
        cf_err_set(b->err, CF_ERR_UNSUPPORTED, "range deletion on %s.%s has equal bounds and is empty",
                   b->t->pub.table->keyspace, b->t->pub.table->name);
        cf_err_detail(b->err, "its bounds (%zu clustering values, %s and %s) are the same values",
                      ns, cf_cass_bound_kind_name(s->bound), cf_cass_bound_kind_name(e->bound));
        cf_err_hint(b->err, "This is not a range deletion Cassandra writes; check that the schema matches the "
                            "segment. With errors.tolerance=all the event is reported and skipped.");
        return CF_ERR_UNSUPPORTED;
    }
    cf_code rc = CF_OK;
    /* the start's tail, deepest column first (clustering order) */
    for (size_t j = ns; j-- > c + 1 && !rc;) rc = range_piece(b, del, s, j, s, j == ns - 1 ? sinc : false, NULL, false);
    /* between: column c after the start's value and before the end's */
    if (!rc)
        rc = range_piece(b, del, s, c, ns > c ? s : NULL, ns == c + 1 ? sinc : false, ne > c ? e : NULL,
                         ne == c + 1 ? einc : false);
    /* the end's tail */
    for (size_t j = c + 1; j < ne && !rc; j++) rc = range_piece(b, del, e, j, NULL, false, e, j == ne - 1 ? einc : false);
    return rc;
}

cf_code cf_sc_events_build(cf_sc_events *ev, const cf_cass_update *u, const cf_sc_emitter *em, size_t *n,
                           cf_err *err) {
    if (n) *n = 0;
    tab *t = find_tab(ev, u->table);
    bctx b = {ev, t, u, em, NULL, NULL, NULL, 0, err};
    const cf_cass_table *tb = u->table;
    const uint8_t *comp[64];
    size_t clen[64];
    cf_code rc = CF_OK;
    if (t->npk > 64) return cf_err_set(err, CF_ERR_UNSUPPORTED, "more than 64 partition key columns");
    if (cf_cass_table_split_partition_key(tb, u->key.p, u->key.len, comp, clen, err)) return CF_ERR_SCHEMA;
    cf_value *pkv[64], *ckv[64];
    b.pkv = pkv;
    b.ckv = ckv;
    b.key = cf_value_struct(cf_schema_ref(t->pub.key));
    for (size_t i = 0; i < t->npk; i++) {
        pkv[i] = NULL;
        if (rc) continue;
        const colinfo *ci = &t->cols[i];
        cf_value *kv = NULL;
        rc = convert(&b, ci, ci->type, t->pub.key->fields[i].schema, comp[i], clen[i], &kv);
        if (!rc) rc = convert(&b, ci, ci->type, ci->fs, comp[i], clen[i], &pkv[i]);
        cf_value_struct_set_index(b.key, i, kv);
    }
    if (rc) goto out;
    if (!cf_cass_deletion_is_live(&u->partition_deletion)) {
        evb e;
        evb_start(&b, &e, false);
        evb_ts(&e, u->partition_deletion.marked_at);
        evb_emit(&b, &e, CF_SC_OP_DELETE_PARTITION, NULL);
    }
    /* range tombstones first: Cassandra applies deletions before the writes they shadow */
    const cf_cass_row *open = NULL;
    for (size_t i = 0; i < u->n_rows && !rc; i++) {
        const cf_cass_row *r = &u->rows[i];
        if (r->kind == CF_CASS_RT_BOUND) {
            bool is_start = r->bound == CF_CASS_BK_INCL_START_BOUND || r->bound == CF_CASS_BK_EXCL_START_BOUND;
            if (is_start) open = r;
            else if (open) {
                rc = range_event(&b, open, r, &r->deletion);
                open = NULL;
            }
        } else if (r->kind == CF_CASS_RT_BOUNDARY) {
            if (open) rc = range_event(&b, open, r, &r->deletion); /* the deletion that ends here */
            open = r;
        }
    }
    /* a boundary opens with its start deletion */
    if (u->static_row && !rc) rc = row_events(&b, u->static_row, true);
    for (size_t i = 0; i < u->n_rows && !rc; i++) {
        const cf_cass_row *r = &u->rows[i];
        if (r->kind != CF_CASS_ROW) continue;
        clustering_values(&b, r, ckv, &rc);
        if (!rc) rc = row_events(&b, r, false);
        free_values(ckv, t->nck);
    }
out:
    free_values(pkv, t->npk);
    cf_value_destroy(b.key);
    if (n) *n = b.n;
    return rc;
}
