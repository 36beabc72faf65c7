/*
 * cass_schema.c - the Cassandra table model and the schema set: keyspaces,
 * user types, and tables keyed by id with their history (a segment written
 * before an ALTER TABLE still decodes), plus Murmur3 tokens and UUID text.
 */
#include <stdatomic.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cass_schema_internal.h"
#include "cdcflow/cassandra_schema.h"

/* ---- columns and tables ---- */

const char *cf_cass_column_kind_name(cf_cass_column_kind k) {
    switch (k) {
    case CF_CASS_PARTITION_KEY: return "partition_key";
    case CF_CASS_CLUSTERING: return "clustering";
    case CF_CASS_REGULAR: return "regular";
    case CF_CASS_STATIC: return "static";
    }
    return "?";
}

cf_cass_table *cf_cass_table_new(const char *keyspace, const char *name) {
    cf_cass_table *t = cf_xcalloc(1, sizeof *t);
    t->keyspace = cf_xstrdup(keyspace ? keyspace : "");
    t->name = cf_xstrdup(name ? name : "");
    t->compound = true;
    t->refcount = 1;
    return t;
}

cf_cass_table *cf_cass_table_ref(cf_cass_table *t) {
    if (t) atomic_fetch_add_explicit((_Atomic int *)&t->refcount, 1, memory_order_relaxed);
    return t;
}

static void free_columns(cf_cass_column *c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(c[i].name);
        cf_cql_type_destroy(c[i].type);
    }
    free(c);
}

void cf_cass_table_unref(cf_cass_table *t) {
    if (!t) return;
    if (atomic_fetch_sub_explicit((_Atomic int *)&t->refcount, 1, memory_order_acq_rel) != 1) return;
    free_columns(t->partition_key, t->n_partition_key);
    free_columns(t->clustering, t->n_clustering);
    free_columns(t->regular, t->n_regular);
    free_columns(t->statics, t->n_static);
    for (size_t i = 0; i < t->n_dropped; i++) {
        free(t->dropped[i].name);
        cf_cql_type_destroy(t->dropped[i].type);
    }
    free(t->dropped);
    free(t->keyspace);
    free(t->name);
    free(t);
}

static cf_cass_column *clone_columns(const cf_cass_column *c, size_t n) {
    if (!n) return NULL;
    cf_cass_column *r = cf_xcalloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++) {
        r[i] = c[i];
        r[i].name = cf_xstrdup(c[i].name);
        r[i].type = cf_cql_type_clone(c[i].type);
    }
    return r;
}

cf_cass_table *cf_cass_table_clone(const cf_cass_table *t) {
    cf_cass_table *c = cf_xcalloc(1, sizeof *c);
    *c = *t;
    c->refcount = 1;
    c->keyspace = cf_xstrdup(t->keyspace);
    c->name = cf_xstrdup(t->name);
    c->partition_key = clone_columns(t->partition_key, t->n_partition_key);
    c->clustering = clone_columns(t->clustering, t->n_clustering);
    c->regular = clone_columns(t->regular, t->n_regular);
    c->statics = clone_columns(t->statics, t->n_static);
    if (t->n_dropped) {
        c->dropped = cf_xcalloc(t->n_dropped, sizeof *c->dropped);
        for (size_t i = 0; i < t->n_dropped; i++) {
            c->dropped[i] = t->dropped[i];
            c->dropped[i].name = cf_xstrdup(t->dropped[i].name);
            c->dropped[i].type = cf_cql_type_clone(t->dropped[i].type);
        }
    }
    return c;
}

void cf_cass_table_set_id(cf_cass_table *t, const uint8_t id[16]) {
    memcpy(t->id, id, 16);
    t->has_id = true;
}

const cf_cass_column *cf_cass_table_column_n(const cf_cass_table *t, const char *name, size_t len) {
    const cf_cass_column *arrs[4] = {t->partition_key, t->clustering, t->regular, t->statics};
    size_t ns[4] = {t->n_partition_key, t->n_clustering, t->n_regular, t->n_static};
    for (int a = 0; a < 4; a++)
        for (size_t i = 0; i < ns[a]; i++)
            if (strlen(arrs[a][i].name) == len && memcmp(arrs[a][i].name, name, len) == 0) return &arrs[a][i];
    return NULL;
}

const cf_cass_column *cf_cass_table_column(const cf_cass_table *t, const char *name) {
    return cf_cass_table_column_n(t, name, strlen(name));
}

const cf_cass_dropped_column *cf_cass_table_dropped_n(const cf_cass_table *t, const char *name, size_t len) {
    const cf_cass_dropped_column *best = NULL;
    for (size_t i = 0; i < t->n_dropped; i++)
        if (strlen(t->dropped[i].name) == len && memcmp(t->dropped[i].name, name, len) == 0)
            if (!best || t->dropped[i].dropped_time >= best->dropped_time) best = &t->dropped[i];
    return best;
}

size_t cf_cass_table_column_count(const cf_cass_table *t) {
    return t->n_partition_key + t->n_clustering + t->n_regular + t->n_static;
}

cf_code cf_cass_table_add_column(cf_cass_table *t, const char *name, cf_cql_type *type,
                                 cf_cass_column_kind kind, int32_t position, bool reversed, cf_err *err) {
    if (!name || !*name || !type) {
        cf_cql_type_destroy(type);
        return cf_err_set(err, CF_ERR_INVALID, "column of table %s.%s needs a name and a type", t->keyspace,
                          t->name);
    }
    if (cf_cass_table_column(t, name)) {
        cf_cql_type_destroy(type);
        cf_err_set(err, CF_ERR_SCHEMA, "column \"%s\" is defined twice in table %s.%s", name, t->keyspace,
                   t->name);
        return CF_ERR_SCHEMA;
    }
    cf_cass_column **arr;
    size_t *n;
    switch (kind) {
    case CF_CASS_PARTITION_KEY: arr = &t->partition_key, n = &t->n_partition_key; break;
    case CF_CASS_CLUSTERING: arr = &t->clustering, n = &t->n_clustering; break;
    case CF_CASS_STATIC: arr = &t->statics, n = &t->n_static; break;
    default: arr = &t->regular, n = &t->n_regular; kind = CF_CASS_REGULAR; break;
    }
    if (kind == CF_CASS_PARTITION_KEY || kind == CF_CASS_CLUSTERING) {
        if (position < 0) position = (int32_t)*n;
        if (position > 4096) {
            cf_cql_type_destroy(type);
            return cf_err_set(err, CF_ERR_SCHEMA, "column \"%s\": position %d is out of range", name,
                              (int)position);
        }
    } else {
        position = -1;
        reversed = false;
    }
    *arr = cf_xrealloc(*arr, (*n + 1) * sizeof **arr);
    /* keep key columns ordered by position (system_schema rows come sorted
     * by name, not by position) */
    size_t at = *n;
    if (position >= 0)
        while (at > 0 && (*arr)[at - 1].position > position) at--;
    memmove(*arr + at + 1, *arr + at, (*n - at) * sizeof **arr);
    cf_cass_column *c = &(*arr)[at];
    memset(c, 0, sizeof *c);
    c->name = cf_xstrdup(name);
    c->type = type;
    c->kind = kind;
    c->position = position;
    c->reversed = reversed;
    (*n)++;
    if (type->kind == CF_CQL_COUNTER) t->counter = true;
    return CF_OK;
}

void cf_cass_table_add_dropped(cf_cass_table *t, const char *name, cf_cql_type *type, cf_cass_column_kind kind,
                               int64_t dropped_time_us) {
    t->dropped = cf_xrealloc(t->dropped, (t->n_dropped + 1) * sizeof *t->dropped);
    cf_cass_dropped_column *d = &t->dropped[t->n_dropped++];
    d->name = cf_xstrdup(name);
    d->type = type;
    d->kind = kind == CF_CASS_STATIC ? CF_CASS_STATIC : CF_CASS_REGULAR;
    d->dropped_time = dropped_time_us;
}

cf_code cf_cass_table_drop_column(cf_cass_table *t, const char *name, int64_t time_us, cf_err *err) {
    cf_cass_column **arrs[2] = {&t->regular, &t->statics};
    size_t *ns[2] = {&t->n_regular, &t->n_static};
    for (int a = 0; a < 2; a++)
        for (size_t i = 0; i < *ns[a]; i++) {
            cf_cass_column *c = &(*arrs[a])[i];
            if (strcmp(c->name, name) != 0) continue;
            cf_cass_table_add_dropped(t, c->name, c->type, c->kind, time_us);
            free(c->name);
            memmove(c, c + 1, (*ns[a] - i - 1) * sizeof *c);
            (*ns[a])--;
            return CF_OK;
        }
    if (cf_cass_table_column(t, name))
        return cf_err_set(err, CF_ERR_SCHEMA, "cannot drop primary key column \"%s\" of %s.%s", name,
                          t->keyspace, t->name);
    cf_err_set(err, CF_ERR_NOT_FOUND, "cannot drop column \"%s\": table %s.%s has no such column", name,
               t->keyspace, t->name);
    return CF_ERR_NOT_FOUND;
}

cf_code cf_cass_table_split_partition_key(const cf_cass_table *t, const uint8_t *key, size_t key_len,
                                          const uint8_t **comp, size_t *comp_len, cf_err *err) {
    size_t n = t->n_partition_key;
    if (n == 0) return cf_err_set(err, CF_ERR_SCHEMA, "table %s.%s has no partition key", t->keyspace, t->name);
    if (n == 1) {
        comp[0] = key;
        comp_len[0] = key_len;
        int32_t fixed = cf_cql_type_fixed_length(t->partition_key[0].type);
        if (fixed >= 0 && (size_t)fixed != key_len) {
            cf_err_set(err, CF_ERR_CORRUPT, "partition key of %s.%s has %zu bytes, type %s needs %d", t->keyspace,
                       t->name, key_len, cf_cql_kind_name(t->partition_key[0].type->kind), (int)fixed);
            return CF_ERR_CORRUPT;
        }
        return CF_OK;
    }
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        if (key_len - pos < 2) goto short_key;
        size_t l = ((size_t)key[pos] << 8) | key[pos + 1];
        pos += 2;
        if (key_len - pos < l + 1) goto short_key;
        comp[i] = key + pos;
        comp_len[i] = l;
        pos += l + 1; /* value, end-of-component byte */
        continue;
    short_key:
        cf_err_set(err, CF_ERR_CORRUPT, "composite partition key of %s.%s ends inside component %zu of %zu",
                   t->keyspace, t->name, i + 1, n);
        cf_err_detail(err, "key is %zu bytes; each component is u16 length, bytes, u8 end-of-component", key_len);
        return CF_ERR_CORRUPT;
    }
    if (pos != key_len) {
        cf_err_set(err, CF_ERR_CORRUPT, "composite partition key of %s.%s has %zu trailing bytes", t->keyspace,
                   t->name, key_len - pos);
        return CF_ERR_CORRUPT;
    }
    return CF_OK;
}

static void append_col(const cf_cass_column *c, cf_buf *b, bool single_pk) {
    cf_buf_append_str(b, "    ");
    cf_cql_append_identifier(c->name, b);
    cf_buf_append_byte(b, ' ');
    cf_cql_type_append(c->type, b);
    if (c->kind == CF_CASS_STATIC) cf_buf_append_str(b, " static");
    if (single_pk) cf_buf_append_str(b, " PRIMARY KEY");
    cf_buf_append_str(b, ",\n");
}

void cf_cass_table_append_cql(const cf_cass_table *t, cf_buf *b) {
    cf_buf_append_str(b, "CREATE TABLE ");
    cf_cql_append_identifier(t->keyspace, b);
    cf_buf_append_byte(b, '.');
    cf_cql_append_identifier(t->name, b);
    cf_buf_append_str(b, " (\n");
    bool single = t->n_partition_key == 1 && t->n_clustering == 0;
    for (size_t i = 0; i < t->n_partition_key; i++) append_col(&t->partition_key[i], b, single);
    for (size_t i = 0; i < t->n_clustering; i++) append_col(&t->clustering[i], b, false);
    for (size_t i = 0; i < t->n_static; i++) append_col(&t->statics[i], b, false);
    for (size_t i = 0; i < t->n_regular; i++) append_col(&t->regular[i], b, false);
    if (!single) {
        cf_buf_append_str(b, "    PRIMARY KEY (");
        if (t->n_partition_key > 1) cf_buf_append_byte(b, '(');
        for (size_t i = 0; i < t->n_partition_key; i++) {
            if (i) cf_buf_append_str(b, ", ");
            cf_cql_append_identifier(t->partition_key[i].name, b);
        }
        if (t->n_partition_key > 1) cf_buf_append_byte(b, ')');
        for (size_t i = 0; i < t->n_clustering; i++) {
            cf_buf_append_str(b, ", ");
            cf_cql_append_identifier(t->clustering[i].name, b);
        }
        cf_buf_append_str(b, ")\n");
    } else if (b->len >= 2) {
        b->len -= 2; /* drop the last ",\n" */
        b->data[b->len] = '\0';
        cf_buf_append_byte(b, '\n');
    }
    cf_buf_append_byte(b, ')');
    const char *sep = " WITH ";
    if (t->has_id) {
        char u[37];
        cf_cass_uuid_format(t->id, u);
        cf_buf_printf(b, "%sID = %s", sep, u);
        sep = "\n    AND ";
    }
    if (t->compact_storage) {
        cf_buf_printf(b, "%sCOMPACT STORAGE", sep);
        sep = "\n    AND ";
    }
    if (t->n_clustering) {
        cf_buf_printf(b, "%sCLUSTERING ORDER BY (", sep);
        for (size_t i = 0; i < t->n_clustering; i++) {
            if (i) cf_buf_append_str(b, ", ");
            cf_cql_append_identifier(t->clustering[i].name, b);
            cf_buf_append_str(b, t->clustering[i].reversed ? " DESC" : " ASC");
        }
        cf_buf_append_byte(b, ')');
        sep = "\n    AND ";
    }
    if (t->cdc) cf_buf_printf(b, "%scdc = true", sep);
    cf_buf_append_str(b, ";\n");
}

static bool columns_equal(const cf_cass_column *a, const cf_cass_column *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i].name, b[i].name) != 0 || a[i].kind != b[i].kind || a[i].position != b[i].position ||
            a[i].reversed != b[i].reversed || !cf_cql_type_equal(a[i].type, b[i].type))
            return false;
    return true;
}

static bool tables_equal(const cf_cass_table *a, const cf_cass_table *b) {
    if (strcmp(a->keyspace, b->keyspace) || strcmp(a->name, b->name)) return false;
    if (a->has_id != b->has_id || (a->has_id && memcmp(a->id, b->id, 16))) return false;
    if (a->n_partition_key != b->n_partition_key || a->n_clustering != b->n_clustering ||
        a->n_regular != b->n_regular || a->n_static != b->n_static || a->n_dropped != b->n_dropped)
        return false;
    if (a->compact_storage != b->compact_storage || a->dense != b->dense || a->compound != b->compound ||
        a->super != b->super || a->counter != b->counter || a->cdc != b->cdc || a->is_view != b->is_view)
        return false;
    if (!columns_equal(a->partition_key, b->partition_key, a->n_partition_key) ||
        !columns_equal(a->clustering, b->clustering, a->n_clustering) ||
        !columns_equal(a->regular, b->regular, a->n_regular) || !columns_equal(a->statics, b->statics, a->n_static))
        return false;
    for (size_t i = 0; i < a->n_dropped; i++)
        if (strcmp(a->dropped[i].name, b->dropped[i].name) || a->dropped[i].dropped_time != b->dropped[i].dropped_time ||
            !cf_cql_type_equal(a->dropped[i].type, b->dropped[i].type))
            return false;
    return true;
}

/* ---- the schema set ---- */

typedef struct table_history {
    uint8_t id[16];
    cf_cass_table **versions; /* oldest first, one reference each */
    size_t n;
} table_history;

struct cf_cass_schema {
    cf_cass_keyspace *keyspaces;
    size_t n_keyspaces;
    cf_cass_udt *udts;
    size_t n_udts;
    table_history *hist; /* by id */
    size_t n_hist;
    cf_cass_table **current; /* newest definition per name, one reference each */
    size_t n_current;
};

cf_cass_schema *cf_cass_schema_new(void) { return cf_xcalloc(1, sizeof(cf_cass_schema)); }

static void free_udt(cf_cass_udt *u) {
    free(u->keyspace);
    free(u->name);
    for (size_t i = 0; i < u->n_fields; i++) {
        free(u->field_names[i]);
        cf_cql_type_destroy(u->field_types[i]);
    }
    free(u->field_names);
    free(u->field_types);
}

void cf_cass_schema_destroy(cf_cass_schema *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_keyspaces; i++) {
        free(s->keyspaces[i].name);
        free(s->keyspaces[i].replication);
    }
    free(s->keyspaces);
    for (size_t i = 0; i < s->n_udts; i++) free_udt(&s->udts[i]);
    free(s->udts);
    for (size_t i = 0; i < s->n_hist; i++) {
        for (size_t j = 0; j < s->hist[i].n; j++) cf_cass_table_unref(s->hist[i].versions[j]);
        free(s->hist[i].versions);
    }
    free(s->hist);
    for (size_t i = 0; i < s->n_current; i++) cf_cass_table_unref(s->current[i]);
    free(s->current);
    free(s);
}

void cf_cass_schema_put_keyspace(cf_cass_schema *s, const char *name, const char *replication,
                                 bool durable_writes) {
    cf_cass_keyspace *k = (cf_cass_keyspace *)cf_cass_schema_keyspace(s, name);
    if (!k) {
        s->keyspaces = cf_xrealloc(s->keyspaces, (s->n_keyspaces + 1) * sizeof *s->keyspaces);
        k = &s->keyspaces[s->n_keyspaces++];
        k->name = cf_xstrdup(name);
    } else {
        free(k->replication);
    }
    k->replication = replication ? cf_xstrdup(replication) : NULL;
    k->durable_writes = durable_writes;
}

const cf_cass_keyspace *cf_cass_schema_keyspace(const cf_cass_schema *s, const char *name) {
    for (size_t i = 0; i < s->n_keyspaces; i++)
        if (strcmp(s->keyspaces[i].name, name) == 0) return &s->keyspaces[i];
    return NULL;
}
size_t cf_cass_schema_keyspace_count(const cf_cass_schema *s) { return s->n_keyspaces; }
const cf_cass_keyspace *cf_cass_schema_keyspace_at(const cf_cass_schema *s, size_t i) {
    return i < s->n_keyspaces ? &s->keyspaces[i] : NULL;
}

cf_code cf_cass_schema_put_udt(cf_cass_schema *s, const char *keyspace, const char *name,
                               const char *const *field_names, cf_cql_type **field_types, size_t n_fields,
                               cf_err *err) {
    for (size_t i = 0; i < n_fields; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(field_names[i], field_names[j]) == 0) {
                for (size_t k = 0; k < n_fields; k++) cf_cql_type_destroy(field_types[k]);
                return cf_err_set(err, CF_ERR_SCHEMA, "user type %s.%s has field \"%s\" twice", keyspace, name,
                                  field_names[i]);
            }
    cf_cass_udt *u = (cf_cass_udt *)cf_cass_schema_udt(s, keyspace, name);
    if (u) {
        free_udt(u);
    } else {
        s->udts = cf_xrealloc(s->udts, (s->n_udts + 1) * sizeof *s->udts);
        u = &s->udts[s->n_udts++];
    }
    memset(u, 0, sizeof *u);
    u->keyspace = cf_xstrdup(keyspace);
    u->name = cf_xstrdup(name);
    u->n_fields = n_fields;
    u->field_names = cf_xcalloc(n_fields ? n_fields : 1, sizeof *u->field_names);
    u->field_types = cf_xcalloc(n_fields ? n_fields : 1, sizeof *u->field_types);
    for (size_t i = 0; i < n_fields; i++) {
        u->field_names[i] = cf_xstrdup(field_names[i]);
        u->field_types[i] = field_types[i];
    }
    return CF_OK;
}

const cf_cass_udt *cf_cass_schema_udt(const cf_cass_schema *s, const char *keyspace, const char *name) {
    for (size_t i = 0; i < s->n_udts; i++)
        if (strcmp(s->udts[i].keyspace, keyspace) == 0 && strcmp(s->udts[i].name, name) == 0) return &s->udts[i];
    return NULL;
}

/* Called for every partition update decoded: two 8-byte compares per table
 * rather than a memcmp call. */
static table_history *find_hist(const cf_cass_schema *s, const uint8_t id[16]) {
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    for (size_t i = 0; i < s->n_hist; i++) {
        uint64_t x, y;
        memcpy(&x, s->hist[i].id, 8);
        memcpy(&y, s->hist[i].id + 8, 8);
        if (x == a && y == b) return &s->hist[i];
    }
    return NULL;
}

static ssize_t find_current(const cf_cass_schema *s, const char *ks, const char *name) {
    for (size_t i = 0; i < s->n_current; i++)
        if (strcmp(s->current[i]->keyspace, ks) == 0 && strcmp(s->current[i]->name, name) == 0) return (ssize_t)i;
    return -1;
}

cf_code cf_cass_schema_add_table(cf_cass_schema *s, cf_cass_table *t, cf_err *err) {
    if (t->has_id) {
        table_history *h = find_hist(s, t->id);
        if (h && h->n) {
            cf_cass_table *last = h->versions[h->n - 1];
            if (strcmp(last->keyspace, t->keyspace) || strcmp(last->name, t->name)) {
                char u[37];
                cf_cass_uuid_format(t->id, u);
                cf_err_set(err, CF_ERR_SCHEMA, "table id %s is used by both %s.%s and %s.%s", u, last->keyspace,
                           last->name, t->keyspace, t->name);
                cf_err_hint(err, "table ids are unique per cluster; check that the schema comes from one cluster");
                cf_cass_table_unref(t);
                return CF_ERR_SCHEMA;
            }
            if (tables_equal(last, t)) {
                /* nothing changed: keep the existing version */
                ssize_t ci = find_current(s, t->keyspace, t->name);
                if (ci < 0) {
                    s->current = cf_xrealloc(s->current, (s->n_current + 1) * sizeof *s->current);
                    s->current[s->n_current++] = cf_cass_table_ref(last);
                }
                cf_cass_table_unref(t);
                return CF_OK;
            }
        }
        if (!h) {
            s->hist = cf_xrealloc(s->hist, (s->n_hist + 1) * sizeof *s->hist);
            h = &s->hist[s->n_hist++];
            memset(h, 0, sizeof *h);
            memcpy(h->id, t->id, 16);
        }
        h->versions = cf_xrealloc(h->versions, (h->n + 1) * sizeof *h->versions);
        h->versions[h->n++] = cf_cass_table_ref(t);
    }
    ssize_t ci = find_current(s, t->keyspace, t->name);
    if (ci >= 0) {
        cf_cass_table_unref(s->current[ci]);
        s->current[ci] = t;
    } else {
        s->current = cf_xrealloc(s->current, (s->n_current + 1) * sizeof *s->current);
        s->current[s->n_current++] = t;
    }
    return CF_OK;
}

const cf_cass_table *cf_cass_schema_table_by_id(const cf_cass_schema *s, const uint8_t id[16]) {
    table_history *h = find_hist(s, id);
    return (h && h->n) ? h->versions[h->n - 1] : NULL;
}

const cf_cass_table *cf_cass_schema_table_by_name(const cf_cass_schema *s, const char *keyspace, const char *name) {
    ssize_t i = find_current(s, keyspace, name);
    return i >= 0 ? s->current[i] : NULL;
}

size_t cf_cass_schema_table_versions(const cf_cass_schema *s, const uint8_t id[16], cf_cass_table *const **out) {
    table_history *h = find_hist(s, id);
    if (!h) {
        *out = NULL;
        return 0;
    }
    *out = h->versions;
    return h->n;
}

size_t cf_cass_schema_table_count(const cf_cass_schema *s) { return s->n_current; }
const cf_cass_table *cf_cass_schema_table_at(const cf_cass_schema *s, size_t i) {
    return i < s->n_current ? s->current[i] : NULL;
}

void cf_cass_schema_remove_table(cf_cass_schema *s, const char *keyspace, const char *name) {
    ssize_t i = find_current(s, keyspace, name);
    if (i < 0) return;
    cf_cass_table_unref(s->current[i]);
    memmove(&s->current[i], &s->current[i + 1], (s->n_current - (size_t)i - 1) * sizeof *s->current);
    s->n_current--;
}

/* ---- Murmur3Partitioner ---- */

static inline uint64_t rotl64(uint64_t v, int n) { return (v << n) | (v >> (64 - n)); }
static inline uint64_t fmix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}
/* One load on little-endian CPUs (the byte loop this replaces was not merged
 * into a load by the compiler and was a third of the token's time). */
static inline uint64_t le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}
/* Cassandra reads tail bytes with ByteBuffer.get(), a signed byte that Java
 * sign-extends before shifting: that is where it differs from the reference
 * MurmurHash3 for bytes >= 0x80. */
static inline uint64_t sx(uint8_t b) { return (uint64_t)(int64_t)(int8_t)b; }

int64_t cf_cass_murmur3_token(const uint8_t *key, size_t len) {
    if (len == 0) return INT64_MIN; /* Murmur3Partitioner: empty key -> MINIMUM */
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    uint64_t h1 = 0, h2 = 0;
    size_t nblocks = len >> 4;
    for (size_t i = 0; i < nblocks; i++) {
        uint64_t k1 = le64(key + i * 16), k2 = le64(key + i * 16 + 8);
        k1 *= c1, k1 = rotl64(k1, 31), k1 *= c2, h1 ^= k1;
        h1 = rotl64(h1, 27), h1 += h2, h1 = h1 * 5 + 0x52dce729;
        k2 *= c2, k2 = rotl64(k2, 33), k2 *= c1, h2 ^= k2;
        h2 = rotl64(h2, 31), h2 += h1, h2 = h2 * 5 + 0x38495ab5;
    }
    const uint8_t *tail = key + nblocks * 16;
    uint64_t k1 = 0, k2 = 0;
    switch (len & 15) {
    case 15: k2 ^= sx(tail[14]) << 48; /* fall through */
    case 14: k2 ^= sx(tail[13]) << 40; /* fall through */
    case 13: k2 ^= sx(tail[12]) << 32; /* fall through */
    case 12: k2 ^= sx(tail[11]) << 24; /* fall through */
    case 11: k2 ^= sx(tail[10]) << 16; /* fall through */
    case 10: k2 ^= sx(tail[9]) << 8;   /* fall through */
    case 9:
        k2 ^= sx(tail[8]);
        k2 *= c2, k2 = rotl64(k2, 33), k2 *= c1, h2 ^= k2;
        /* fall through */
    case 8: k1 ^= sx(tail[7]) << 56; /* fall through */
    case 7: k1 ^= sx(tail[6]) << 48; /* fall through */
    case 6: k1 ^= sx(tail[5]) << 40; /* fall through */
    case 5: k1 ^= sx(tail[4]) << 32; /* fall through */
    case 4: k1 ^= sx(tail[3]) << 24; /* fall through */
    case 3: k1 ^= sx(tail[2]) << 16; /* fall through */
    case 2: k1 ^= sx(tail[1]) << 8;  /* fall through */
    case 1:
        k1 ^= sx(tail[0]);
        k1 *= c1, k1 = rotl64(k1, 31), k1 *= c2, h1 ^= k1;
        break;
    default: break;
    }
    h1 ^= (uint64_t)len;
    h2 ^= (uint64_t)len;
    h1 += h2;
    h2 += h1;
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 += h2;
    int64_t tok = (int64_t)h1;
    return tok == INT64_MIN ? INT64_MAX : tok;
}

/* ---- UUID text ---- */

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool cf_cass_uuid_parse(const char *text, size_t len, uint8_t out[16]) {
    if (len != 36) return false;
    size_t o = 0;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-') return false;
            i++;
            continue;
        }
        int a = hexval(text[i]), b = hexval(text[i + 1]);
        if (a < 0 || b < 0) return false;
        out[o++] = (uint8_t)(a << 4 | b);
        i += 2;
    }
    return o == 16;
}

void cf_cass_uuid_format(const uint8_t id[16], char out[37]) {
    static const char hx[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hx[id[i] >> 4];
        out[o++] = hx[id[i] & 15];
    }
    out[o] = '\0';
}
