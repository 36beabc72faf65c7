/*
 * ranges.c - the Murmur3 token ranges a sidecar owns (see cdcflow/sidecar.h).
 *
 * Cassandra's ranges are (start, end]: the token after start up to end
 * included; start >= end wraps past Long.MAX_VALUE to Long.MIN_VALUE. Several
 * sidecars over the same data, each with its own ranges, publish every
 * change once in total when their ranges cover the ring without overlap.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/cassandra_cql.h"
#include "cdcflow/sidecar.h"

static bool parse_token(const char **p, int64_t *out) {
    while (isspace((unsigned char)**p)) (*p)++;
    errno = 0;
    char *end;
    long long v = strtoll(*p, &end, 10);
    if (end == *p || errno == ERANGE) return false;
    *out = (int64_t)v;
    *p = end;
    while (isspace((unsigned char)**p)) (*p)++;
    return true;
}

cf_code cf_sc_ranges_parse(const char *text, cf_sc_ranges *out, cf_err *err) {
    out->r = NULL;
    out->n = 0;
    const char *p = text ? text : "";
    while (isspace((unsigned char)*p)) p++;
    if (!*p || strcasecmp(p, "all") == 0) return CF_OK;
    size_t cap = 0;
    while (*p) {
        const char *at = p;
        int64_t a, b;
        if (*p != '(') goto bad;
        p++;
        if (!parse_token(&p, &a) || *p != ',') goto bad;
        p++;
        if (!parse_token(&p, &b) || *p != ']') goto bad;
        p++;
        if (out->n == cap) out->r = cf_xrealloc(out->r, (cap = cap ? cap * 2 : 4) * sizeof *out->r);
        out->r[out->n++] = (cf_sc_range){a, b};
        while (isspace((unsigned char)*p) || *p == ';') p++;
        continue;
    bad:
        cf_err_set(err, CF_ERR_CONFIG, "invalid token range at \"%.40s\"", at);
        cf_err_detail(err, "in \"%s\"", text);
        cf_err_hint(err, "Write ranges as Cassandra does, (start,end] with signed 64-bit tokens, separated by ';', "
                         "e.g. (-9223372036854775808,0];(0,9223372036854775807]; or \"all\".");
        cf_sc_ranges_free(out);
        return CF_ERR_CONFIG;
    }
    return CF_OK;
}

void cf_sc_ranges_free(cf_sc_ranges *r) {
    free(r->r);
    r->r = NULL;
    r->n = 0;
}

bool cf_sc_ranges_contain(const cf_sc_ranges *r, int64_t t) {
    if (!r || r->n == 0) return true;
    for (size_t i = 0; i < r->n; i++) {
        int64_t a = r->r[i].start, b = r->r[i].end;
        if (a < b ? (t > a && t <= b) : (t > a || t <= b)) return true;
    }
    return false;
}

void cf_sc_ranges_format(const cf_sc_ranges *r, cf_buf *out) {
    if (!r || r->n == 0) {
        cf_buf_append_str(out, "all");
        return;
    }
    for (size_t i = 0; i < r->n; i++)
        cf_buf_printf(out, "%s(%lld,%lld]", i ? ";" : "", (long long)r->r[i].start, (long long)r->r[i].end);
}

/* ---------------- the ring ---------------- */

void cf_sc_ring_add(cf_sc_ring *ring, const char *address, const char *native_address, const int64_t *tokens,
                    size_t n_tokens) {
    ring->nodes = cf_xrealloc(ring->nodes, (ring->n + 1) * sizeof *ring->nodes);
    cf_sc_ring_node *n = &ring->nodes[ring->n++];
    memset(n, 0, sizeof *n);
    snprintf(n->address, sizeof n->address, "%s", address ? address : "");
    snprintf(n->native_address, sizeof n->native_address, "%s", native_address ? native_address : "");
    n->tokens = cf_xmalloc((n_tokens ? n_tokens : 1) * sizeof *n->tokens);
    if (n_tokens) memcpy(n->tokens, tokens, n_tokens * sizeof *tokens);
    n->n_tokens = n_tokens;
}

void cf_sc_ring_free(cf_sc_ring *ring) {
    if (!ring) return;
    for (size_t i = 0; i < ring->n; i++) free(ring->nodes[i].tokens);
    free(ring->nodes);
    ring->nodes = NULL;
    ring->n = ring->local = 0;
}

/* An address as inet_ntop writes it ("127.0.0.2", "::1"); text that is not
 * a numeric address is kept as given. */
static void canonical_address(const char *in, char *out, size_t size) {
    unsigned char a[16];
    const char *s = in;
    char tmp[64];
    size_t l = strlen(in);
    if (l >= 2 && in[0] == '[' && in[l - 1] == ']' && l - 2 < sizeof tmp) { /* [::1] */
        memcpy(tmp, in + 1, l - 2);
        tmp[l - 2] = 0;
        s = tmp;
    }
    if (inet_pton(AF_INET, s, a) == 1 && inet_ntop(AF_INET, a, out, (socklen_t)size)) return;
    if (inet_pton(AF_INET6, s, a) == 1 && inet_ntop(AF_INET6, a, out, (socklen_t)size)) return;
    snprintf(out, size, "%s", in);
}

typedef struct ring_token {
    int64_t t;
    size_t node;
} ring_token;

static int cmp_ring_token(const void *a, const void *b) {
    int64_t x = ((const ring_token *)a)->t, y = ((const ring_token *)b)->t;
    return (x > y) - (x < y);
}

static int cmp_range_start(const void *a, const void *b) {
    int64_t x = ((const cf_sc_range *)a)->start, y = ((const cf_sc_range *)b)->start;
    return (x > y) - (x < y);
}

static void known_addresses(const cf_sc_ring *ring, cf_buf *b) {
    for (size_t i = 0; i < ring->n; i++) {
        const cf_sc_ring_node *n = &ring->nodes[i];
        cf_buf_printf(b, "%s%s", i ? ", " : "", n->address);
        if (n->native_address[0] && strcmp(n->native_address, n->address) != 0)
            cf_buf_printf(b, " (CQL %s)", n->native_address);
    }
}

cf_code cf_sc_ranges_primary(const cf_sc_ring *ring, const char *node, cf_sc_ranges *out, cf_err *err) {
    out->r = NULL;
    out->n = 0;
    size_t me = ring->local;
    if (node && *node) {
        char want[64], a[64];
        canonical_address(node, want, sizeof want);
        me = ring->n;
        for (size_t i = 0; i < ring->n && me == ring->n; i++) {
            canonical_address(ring->nodes[i].address, a, sizeof a);
            if (strcmp(a, want) == 0) me = i;
            canonical_address(ring->nodes[i].native_address, a, sizeof a);
            if (ring->nodes[i].native_address[0] && strcmp(a, want) == 0) me = i;
        }
        if (me == ring->n) {
            cf_buf b = CF_BUF_INIT;
            known_addresses(ring, &b);
            cf_err_set(err, CF_ERR_NOT_FOUND, "no node of the ring has the address \"%s\"", node);
            cf_err_detail(err, "The ring's nodes: %s.", b.data ? b.data : "none");
            cf_err_hint(err, "Set token.ranges.node to one of these addresses (a node's broadcast or CQL address), "
                             "or leave it out for the node cql.host connects to.");
            cf_buf_free(&b);
            return CF_ERR_NOT_FOUND;
        }
    } else if (me >= ring->n) {
        return cf_err_set(err, CF_ERR_STATE, "the ring has no nodes");
    }
    size_t total = 0;
    for (size_t i = 0; i < ring->n; i++) total += ring->nodes[i].n_tokens;
    if (ring->nodes[me].n_tokens == 0) {
        cf_err_set(err, CF_ERR_STATE, "node %s has no tokens in the ring", ring->nodes[me].address);
        cf_err_hint(err, "A node that is joining or leaving owns no range yet: start the sidecar once it is in the "
                         "ring, or choose another node with token.ranges.node.");
        return CF_ERR_STATE;
    }
    ring_token *all = cf_xmalloc(total * sizeof *all);
    size_t k = 0;
    for (size_t i = 0; i < ring->n; i++)
        for (size_t j = 0; j < ring->nodes[i].n_tokens; j++) all[k++] = (ring_token){ring->nodes[i].tokens[j], i};
    qsort(all, total, sizeof *all, cmp_ring_token);
    for (size_t i = 1; i < total; i++) {
        if (all[i].t != all[i - 1].t) continue;
        cf_err_set(err, CF_ERR_STATE, "token %lld is claimed twice in the ring (nodes %s and %s)",
                   (long long)all[i].t, ring->nodes[all[i - 1].node].address, ring->nodes[all[i].node].address);
        cf_err_hint(err, "The ring read is inconsistent (a node replacing another?): start again once "
                         "`nodetool ring` shows each token once.");
        free(all);
        return CF_ERR_STATE;
    }
    /* start after a token another node holds, so that a run of our tokens
     * never breaks at the start; none: the node holds the whole ring */
    size_t s = total;
    for (size_t i = total; i-- > 0;)
        if (all[i].node != me) {
            s = i;
            break;
        }
    if (s == total) {
        free(all);
        return CF_OK;
    }
    size_t cap = 0;
    bool in_run = false;
    for (size_t step = 1; step <= total; step++) {
        size_t p = (s + step) % total;
        if (all[p].node != me) {
            in_run = false;
            continue;
        }
        if (in_run) {
            out->r[out->n - 1].end = all[p].t; /* adjacent: (a,b] + (b,c] = (a,c] */
            continue;
        }
        if (out->n == cap) out->r = cf_xrealloc(out->r, (cap = cap ? cap * 2 : 4) * sizeof *out->r);
        out->r[out->n++] = (cf_sc_range){all[(p + total - 1) % total].t, all[p].t};
        in_run = true;
    }
    free(all);
    qsort(out->r, out->n, sizeof *out->r, cmp_range_start);
    return CF_OK;
}

/* ---------------- reading the ring over CQL ---------------- */

static void inet_text(const cf_cql_value *v, char *out, size_t size) {
    out[0] = 0;
    if (!v || !v->data) return;
    if (v->len == 4) inet_ntop(AF_INET, v->data, out, (socklen_t)size);
    else if (v->len == 16) inet_ntop(AF_INET6, v->data, out, (socklen_t)size);
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A set<text> of tokens (protocol v3+: int32 count, then int32 length +
 * bytes each) into a malloc'd array. */
static cf_code tokens_of(const cf_cql_value *v, const char *who, int64_t **out, size_t *n, cf_err *err) {
    *out = NULL;
    *n = 0;
    if (!v || !v->data || v->len < 4) return CF_OK;
    const uint8_t *p = v->data, *end = v->data + v->len;
    uint32_t count = be32(p);
    p += 4;
    if (count > (uint32_t)(v->len / 4)) goto bad;
    *out = cf_xmalloc((count ? count : 1) * sizeof **out);
    for (uint32_t i = 0; i < count; i++) {
        if (end - p < 4) goto bad;
        int32_t l = (int32_t)be32(p);
        p += 4;
        if (l < 1 || l > 20 || end - p < l) goto bad;
        char text[24];
        memcpy(text, p, (size_t)l);
        text[l] = 0;
        p += l;
        errno = 0;
        char *e;
        long long t = strtoll(text, &e, 10);
        if (*e || errno == ERANGE) {
            cf_err_set(err, CF_ERR_UNSUPPORTED, "node %s has the token \"%s\", not a Murmur3 token", who, text);
            cf_err_hint(err, "The sidecar works with Murmur3Partitioner rings only.");
            free(*out);
            *out = NULL;
            return CF_ERR_UNSUPPORTED;
        }
        (*out)[(*n)++] = (int64_t)t;
    }
    return CF_OK;
bad:
    free(*out);
    *out = NULL;
    *n = 0;
    return cf_err_set(err, CF_ERR_CORRUPT, "the tokens of node %s do not decode as set<text>", who);
}

cf_code cf_sc_ring_read(cf_cql_conn *c, cf_sc_ring *out, cf_err *err) {
    memset(out, 0, sizeof *out);
    cf_cql_result *r = NULL;
    cf_code rc = cf_cql_query(c, "SELECT broadcast_address, rpc_address, tokens, partitioner FROM system.local",
                              CF_CQL_ONE, &r, err);
    if (rc) return rc;
    if (r->n_rows != 1 || r->n_columns != 4) {
        rc = cf_err_set(err, CF_ERR_CORRUPT, "system.local returned %zu rows of %zu columns (1 of 4 expected)",
                        r->n_rows, r->n_columns);
        goto out;
    }
    char *part = cf_cql_result_text(r, 0, 3);
    if (part && !strstr(part, "Murmur3Partitioner")) {
        rc = cf_err_set(err, CF_ERR_UNSUPPORTED, "the cluster's partitioner is %s, not Murmur3Partitioner", part);
        cf_err_hint(err, "token.ranges=ring works with Murmur3Partitioner only; give the ranges by hand, or all.");
        free(part);
        goto out;
    }
    free(part);
    char a[64], na[64];
    inet_text(cf_cql_result_value(r, 0, 0), a, sizeof a);
    inet_text(cf_cql_result_value(r, 0, 1), na, sizeof na);
    int64_t *toks;
    size_t nt;
    if ((rc = tokens_of(cf_cql_result_value(r, 0, 2), a, &toks, &nt, err))) goto out;
    cf_sc_ring_add(out, a, na, toks, nt);
    free(toks);
    out->local = 0;
    cf_cql_result_free(r);
    r = NULL;
    /* peers_v2 (Cassandra 4.0+) first: it also knows nodes that share an
     * address on other ports; system.peers where it does not exist */
    cf_err e2;
    rc = cf_cql_query(c, "SELECT peer, native_address, tokens FROM system.peers_v2", CF_CQL_ONE, &r, &e2);
    if (rc == CF_ERR_TARGET) {
        cf_cql_result_free(r);
        r = NULL;
        rc = cf_cql_query(c, "SELECT peer, rpc_address, tokens FROM system.peers", CF_CQL_ONE, &r, err);
    } else if (rc) {
        *err = e2;
    }
    if (rc) goto out;
    for (size_t i = 0; i < r->n_rows && r->n_columns == 3; i++) {
        inet_text(cf_cql_result_value(r, i, 0), a, sizeof a);
        inet_text(cf_cql_result_value(r, i, 1), na, sizeof na);
        if ((rc = tokens_of(cf_cql_result_value(r, i, 2), a, &toks, &nt, err))) goto out;
        if (nt) cf_sc_ring_add(out, a, na, toks, nt);
        free(toks);
    }
out:
    cf_cql_result_free(r);
    if (rc) cf_sc_ring_free(out);
    return rc;
}
