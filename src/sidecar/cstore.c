/*
 * cstore.c - the Cassandra state store (state.store=cassandra): the
 * sidecar's state and the service configuration in Cassandra itself, as the
 * design (Cassandra Sidecar CDC) keeps them:
 *
 *   CREATE TABLE <ks>.cdc_state (job_id text, split smallint, "start" varint,
 *       "end" varint, state blob, PRIMARY KEY ((job_id), "start", "end"))
 *       WITH default_time_to_live = 2592000 AND gc_grace_seconds = 0
 *   CREATE TABLE <ks>.configs (service text PRIMARY KEY, config map<text,text>)
 *
 * One cdc_state row per owned range (the whole ring: start = end = the
 * minimum token), split its number among the writer's ranges; its state the
 * engine's snapshot for that range (cf_sc_state_restrict) as the JSON of a
 * source offset. Every row is written USING TTL 2592000 AND TIMESTAMP from a
 * monotonic generator (never below the newest write time read at start), so
 * the newest state of a range wins in Cassandra and in the merge (whose
 * epoch is the row's write time). Rows are written one by one, not in a
 * batch (a state blob is larger than Cassandra's batch size limits): each
 * row is a complete state for its range, so a write interrupted between two
 * rows leaves every range a valid state, some older.
 *
 * One connection, used by one thread at a time (the source task's; the
 * service's writes, by REST threads under the service's lock; the service's
 * refresh reads, a store of their own, outside that lock); it is opened
 * again after a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/cassandra_cql.h"
#include "cdcflow/log.h"
#include "cdcflow/sidecar.h"
#include "cdcflow/worker.h"
#include "sidecar_internal.h"

#define COMP "sidecar"
#define STATE_TTL 2592000

struct cf_sc_cstore {
    cf_cql_options cql;
    char *host, *user, *pass, *ks, *replication;
    cf_cql_conn *c;
    int64_t last_ts; /* the monotonic write time generator */
    bool created;
};

static bool ident_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 48) return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9'))) return false;
    return true;
}

/* 'text' with quotes doubled (appended) */
static void lit(cf_buf *b, const char *s) {
    cf_buf_append_byte(b, '\'');
    for (; *s; s++) {
        if (*s == '\'') cf_buf_append_byte(b, '\'');
        cf_buf_append_byte(b, (uint8_t)*s);
    }
    cf_buf_append_byte(b, '\'');
}

static int64_t next_ts(cf_sc_cstore *s) {
    int64_t now = cf_sc_wall_ms() * 1000;
    s->last_ts = now > s->last_ts ? now : s->last_ts + 1;
    return s->last_ts;
}

static cf_code query(cf_sc_cstore *s, const char *cql, cf_cql_result **out, cf_err *err) {
    if (out) *out = NULL;
    if (!s->c) {
        cf_code rc = cf_cql_connect(&s->cql, &s->c, err);
        if (rc) {
            cf_err_where(err, "state store %s:%d", s->cql.host, s->cql.port ? s->cql.port : 9042);
            return rc;
        }
    }
    cf_cql_result *r = NULL;
    cf_code rc = cf_cql_query(s->c, cql, CF_CQL_LOCAL_QUORUM, &r, err);
    if (rc) {
        cf_cql_close(s->c); /* opened again next time */
        s->c = NULL;
        cf_err_where(err, "state store %s:%d", s->cql.host, s->cql.port ? s->cql.port : 9042);
        return rc;
    }
    if (out) *out = r;
    else cf_cql_result_free(r);
    return CF_OK;
}

static cf_code create(cf_sc_cstore *s, cf_err *err) {
    if (s->created) return CF_OK;
    cf_buf b = CF_BUF_INIT;
    cf_buf_printf(&b, "CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", s->ks, s->replication);
    cf_code rc = query(s, b.data, NULL, err);
    cf_buf_reset(&b);
    cf_buf_printf(&b,
                  "CREATE TABLE IF NOT EXISTS %s.cdc_state (job_id text, split smallint, \"start\" varint, \"end\" "
                  "varint, state blob, PRIMARY KEY ((job_id), \"start\", \"end\")) WITH default_time_to_live = %d "
                  "AND gc_grace_seconds = 0",
                  s->ks, STATE_TTL);
    if (!rc) rc = query(s, b.data, NULL, err);
    cf_buf_reset(&b);
    cf_buf_printf(&b, "CREATE TABLE IF NOT EXISTS %s.configs (service text PRIMARY KEY, config map<text, text>)",
                  s->ks);
    if (!rc) rc = query(s, b.data, NULL, err);
    cf_buf_free(&b);
    if (rc) {
        cf_err_hint(err, "The state store needs a reachable node (cql.host) and a user allowed to create keyspace "
                         "%s and its tables (or create them beforehand).", s->ks);
        return rc;
    }
    s->created = true;
    return CF_OK;
}

cf_code cf_sc_cstore_open(const cf_sc_cstore_opts *o, cf_sc_cstore **out, cf_err *err) {
    *out = NULL;
    const char *ks = o->keyspace && *o->keyspace ? o->keyspace : "sidecar_internal";
    if (!ident_ok(ks)) {
        cf_err_set(err, CF_ERR_CONFIG, "state.keyspace \"%s\" is not a keyspace name", ks);
        cf_err_hint(err, "Use 1 to 48 characters of a-z, 0-9 and _.");
        return CF_ERR_CONFIG;
    }
    const char *repl = o->replication && *o->replication ? o->replication
                                                         : "{'class': 'SimpleStrategy', 'replication_factor': 1}";
    if (repl[0] != '{' || strchr(repl, ';')) {
        cf_err_set(err, CF_ERR_CONFIG, "state.keyspace.replication is not a CQL replication map");
        cf_err_detail(err, "\"%s\"", repl);
        cf_err_hint(err, "Write it as CREATE KEYSPACE takes it, e.g. {'class': 'NetworkTopologyStrategy', 'dc1': 3}.");
        return CF_ERR_CONFIG;
    }
    cf_sc_cstore *s = cf_xcalloc(1, sizeof *s);
    s->host = cf_xstrdup(o->cql->host ? o->cql->host : "127.0.0.1");
    s->user = o->cql->username ? cf_xstrdup(o->cql->username) : NULL;
    s->pass = o->cql->password ? cf_xstrdup(o->cql->password) : NULL;
    s->cql = *o->cql;
    s->cql.host = s->host;
    s->cql.username = s->user;
    s->cql.password = s->pass;
    /* a commit waits for the store: short timeouts; no interrupt (the last commit of a stop must get through) */
    s->cql.connect_timeout_ms = 3000;
    s->cql.request_timeout_ms = 10000;
    s->cql.interrupted = NULL;
    s->cql.interrupt_arg = NULL;
    s->cql.record_path = NULL;
    s->ks = cf_xstrdup(ks);
    s->replication = cf_xstrdup(repl);
    cf_code rc = create(s, err);
    if (rc) {
        cf_sc_cstore_close(s);
        return rc;
    }
    *out = s;
    return CF_OK;
}

void cf_sc_cstore_close(cf_sc_cstore *s) {
    if (!s) return;
    cf_cql_close(s->c);
    free(s->host);
    free(s->user);
    free(s->pass);
    free(s->ks);
    free(s->replication);
    free(s);
}

const char *cf_sc_cstore_keyspace(const cf_sc_cstore *s) { return s->ks; }

/* A varint (two's complement, big-endian) that fits 64 bits. */
static bool varint(const cf_cql_value *v, int64_t *out) {
    if (!v->data || v->len < 1 || v->len > 8) return false;
    uint64_t x = (v->data[0] & 0x80) ? ~(uint64_t)0 : 0;
    for (int32_t i = 0; i < v->len; i++) x = x << 8 | v->data[i];
    *out = (int64_t)x;
    return true;
}

static bool bigint(const cf_cql_value *v, int64_t *out) {
    if (!v->data || v->len != 8) return false;
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) x = x << 8 | v->data[i];
    *out = (int64_t)x;
    return true;
}

static bool overlaps(const cf_sc_ranges *owned, cf_sc_range r) {
    if (!owned || owned->n == 0 || r.start == r.end) return true;
    /* two ranges overlap iff one contains the other's end (their intersection ends at one of the ends) */
    for (size_t i = 0; i < owned->n; i++) {
        cf_sc_ranges one = {&owned->r[i], 1}, other = {&r, 1};
        if (owned->r[i].start == owned->r[i].end || cf_sc_ranges_contain(&one, r.end) ||
            cf_sc_ranges_contain(&other, owned->r[i].end))
            return true;
    }
    return false;
}

/* The rows of job (those overlapping owned; all with owned NULL), their snapshots parsed (freed by free_rows). */
static cf_code read_rows(cf_sc_cstore *s, const char *job, const cf_sc_ranges *owned, bool all, cf_sc_state_row **out,
                         size_t *nrows, cf_err *err) {
    *out = NULL;
    *nrows = 0;
    cf_code rc = create(s, err);
    if (rc) return rc;
    cf_buf b = CF_BUF_INIT;
    cf_buf_printf(&b, "SELECT \"start\", \"end\", state, writetime(state) FROM %s.cdc_state WHERE job_id = ", s->ks);
    lit(&b, job);
    cf_cql_result *r;
    rc = query(s, b.data, &r, err);
    cf_buf_free(&b);
    if (rc) return rc;
    cf_sc_state_row *rows = cf_xcalloc(r->n_rows + 1, sizeof *rows);
    size_t n = 0;
    for (size_t i = 0; i < r->n_rows && !rc; i++) {
        cf_sc_state_row row;
        const cf_cql_value *st = cf_cql_result_value(r, i, 2);
        if (!varint(cf_cql_result_value(r, i, 0), &row.range.start) ||
            !varint(cf_cql_result_value(r, i, 1), &row.range.end) || !bigint(cf_cql_result_value(r, i, 3), &row.epoch) ||
            !st->data) {
            CF_WARN(COMP, "state store: a row of job %s in %s.cdc_state is not a state (left out)", job, s->ks);
            continue;
        }
        if (row.epoch > s->last_ts) s->last_ts = row.epoch;
        if (!all && !overlaps(owned, row.range)) continue;
        cf_value *v = NULL;
        rc = cf_offset_value_parse((const char *)st->data, (size_t)st->len, &v, err);
        if (rc) {
            cf_err_detail(err, "the state of job %s, range (%lld,%lld] in %s.cdc_state", job,
                          (long long)row.range.start, (long long)row.range.end, s->ks);
            break;
        }
        row.snapshot = v;
        rows[n++] = row;
    }
    cf_cql_result_free(r);
    *out = rows;
    *nrows = n;
    return rc;
}

static void free_rows(cf_sc_state_row *rows, size_t n) {
    for (size_t i = 0; i < n; i++) cf_value_destroy((cf_value *)rows[i].snapshot);
    free(rows);
}

cf_code cf_sc_cstore_load(cf_sc_cstore *s, const char *job, const cf_sc_ranges *owned, cf_value **merged,
                          size_t *nrows, cf_err *err) {
    *merged = NULL;
    cf_sc_state_row *rows;
    size_t n;
    cf_code rc = read_rows(s, job, owned, false, &rows, &n, err);
    if (!rc && n) rc = cf_sc_state_merge(rows, n, owned, merged, err);
    free_rows(rows, n);
    *nrows = n;
    return rc;
}

cf_code cf_sc_cstore_cleanup_marks(cf_sc_cstore *s, const char *job, cf_value **marks, size_t *nrows, cf_err *err) {
    *marks = NULL;
    cf_sc_state_row *rows;
    size_t n;
    cf_code rc = read_rows(s, job, NULL, true, &rows, &n, err);
    if (!rc) rc = cf_sc_state_cleanup_marks(rows, n, marks, err);
    free_rows(rows, n);
    *nrows = n;
    return rc;
}

static void put_row(cf_sc_cstore *s, cf_buf *b, const char *job, int split, cf_sc_range range, const cf_value *snap,
                    int64_t ts) {
    char *json = cf_offset_value_json(snap);
    cf_buf_reset(b);
    cf_buf_printf(b, "INSERT INTO %s.cdc_state (job_id, split, \"start\", \"end\", state) VALUES (", s->ks);
    lit(b, job);
    cf_buf_printf(b, ", %d, %lld, %lld, 0x", split, (long long)range.start, (long long)range.end);
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)json; p && *p; p++) {
        cf_buf_append_byte(b, (uint8_t)hex[*p >> 4]);
        cf_buf_append_byte(b, (uint8_t)hex[*p & 15]);
    }
    cf_buf_printf(b, ") USING TTL %d AND TIMESTAMP %lld", STATE_TTL, (long long)ts);
    free(json);
}

cf_code cf_sc_cstore_save(cf_sc_cstore *s, const char *job, const cf_sc_ranges *owned, const cf_value *snapshot,
                          cf_err *err) {
    cf_code rc = create(s, err);
    if (rc) return rc;
    cf_sc_range whole = {INT64_MIN, INT64_MIN};
    size_t n = owned && owned->n ? owned->n : 1;
    cf_buf b = CF_BUF_INIT;
    int64_t ts = next_ts(s);
    for (size_t i = 0; i < n && !rc; i++) {
        cf_sc_range range = owned && owned->n ? owned->r[i] : whole;
        cf_value *part = cf_sc_state_restrict(snapshot, range);
        if (!part) {
            rc = cf_err_set(err, CF_ERR_STATE, "the sidecar state to store is not a snapshot");
            break;
        }
        put_row(s, &b, job, (int)i, range, part, ts);
        cf_value_destroy(part);
        rc = query(s, b.data, NULL, err);
    }
    cf_buf_free(&b);
    return rc;
}

/* ---------------- the shared service configuration ---------------- */

static bool be32(const uint8_t **p, const uint8_t *end, int32_t *out) {
    if (end - *p < 4) return false;
    *out = (int32_t)((uint32_t)(*p)[0] << 24 | (uint32_t)(*p)[1] << 16 | (uint32_t)(*p)[2] << 8 | (*p)[3]);
    *p += 4;
    return true;
}

cf_code cf_sc_cstore_config_get(cf_sc_cstore *s, const char *service, cf_props **out, int64_t *written,
                                cf_err *err) {
    *out = NULL;
    *written = 0;
    cf_code rc = create(s, err);
    if (rc) return rc;
    cf_buf b = CF_BUF_INIT;
    cf_buf_printf(&b, "SELECT config FROM %s.configs WHERE service = ", s->ks); /* (WRITETIME of a map: not before 5.0) */
    lit(&b, service);
    cf_cql_result *r;
    rc = query(s, b.data, &r, err);
    cf_buf_free(&b);
    if (rc) return rc;
    if (r->n_rows == 0 || !cf_cql_result_value(r, 0, 0)->data) {
        cf_cql_result_free(r);
        return CF_OK;
    }
    const cf_cql_value *v = cf_cql_result_value(r, 0, 0);
    const uint8_t *p = v->data, *end = v->data + v->len;
    int32_t n;
    cf_props *props = cf_props_new();
    bool ok = be32(&p, end, &n) && n >= 0;
    for (int32_t i = 0; ok && i < n; i++) {
        int32_t kl, vl;
        ok = be32(&p, end, &kl) && kl >= 0 && end - p >= kl;
        if (!ok) break;
        char *k = cf_xstrndup((const char *)p, (size_t)kl);
        p += kl;
        ok = be32(&p, end, &vl) && vl >= 0 && end - p >= vl;
        if (ok) {
            char *val = cf_xstrndup((const char *)p, (size_t)vl);
            p += vl;
            cf_props_set(props, k, val);
            free(val);
        }
        free(k);
    }
    cf_cql_result_free(r);
    if (!ok) {
        cf_props_destroy(props);
        cf_err_set(err, CF_ERR_CORRUPT, "the configuration of service %s in %s.configs is not a map<text, text>",
                   service, s->ks);
        return CF_ERR_CORRUPT;
    }
    *out = props;
    return CF_OK;
}

cf_code cf_sc_cstore_config_put(cf_sc_cstore *s, const char *service, const cf_props *config, int64_t *written,
                                cf_err *err) {
    cf_code rc = create(s, err);
    if (rc) return rc;
    cf_buf b = CF_BUF_INIT;
    if (config) {
        cf_buf_printf(&b, "INSERT INTO %s.configs (service, config) VALUES (", s->ks);
        lit(&b, service);
        cf_buf_append_str(&b, ", {");
        for (size_t i = 0; i < cf_props_count(config); i++) {
            if (i) cf_buf_append_str(&b, ", ");
            lit(&b, cf_props_key_at(config, i));
            cf_buf_append_str(&b, ": ");
            lit(&b, cf_props_value_at(config, i));
        }
        *written = next_ts(s);
        cf_buf_printf(&b, "}) USING TIMESTAMP %lld", (long long)*written);
    } else {
        *written = 0;
        cf_buf_printf(&b, "DELETE FROM %s.configs USING TIMESTAMP %lld WHERE service = ", s->ks, (long long)next_ts(s));
        lit(&b, service);
    }
    rc = query(s, b.data, NULL, err);
    cf_buf_free(&b);
    return rc;
}
