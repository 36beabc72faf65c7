/*
 * offsets.c - offset entries as source offset maps (see cdcflow/source.h).
 *
 * Integers are written as INT64: Kafka Connect's JSON offset storage reads
 * every integer back as a Long, so an entry must compare equal after a round
 * trip through the offsets topic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcflow/buf.h"
#include "cdcflow/source.h"

/* One per record: one allocation (literal keys, values in the map). */
cf_value *cf_offset_entry_to_map(const cf_offset_entry *e) {
    cf_value *m = cf_value_map_n(7);
    cf_value_map_put_lit_long(m, "recordCount", e->record_count);
    cf_value_map_put_lit_long(m, "position", e->position);
    cf_value_map_put_lit_long(m, "line", e->line);
    cf_value_map_put_lit_long(m, "size", e->size);
    cf_value_map_put_lit_long(m, "mtime", e->mtime_ms);
    if (e->etag[0]) cf_value_map_put_lit(m, "etag", cf_value_string(e->etag));
    cf_value_map_put_lit_bool(m, "done", e->done);
    return m;
}

static cf_code get_long(const cf_value *m, const char *k, int64_t *out, cf_err *err) {
    const cf_value *v = cf_value_map_get_str(m, k);
    *out = 0;
    if (!v) return CF_OK;
    if (v->type == CF_INT8 || v->type == CF_INT16 || v->type == CF_INT32 || v->type == CF_INT64) {
        *out = v->u.i;
        return CF_OK;
    }
    cf_err_set(err, CF_ERR_INVALID, "stored source offset has a non-integer \"%s\"", k);
    cf_err_hint(err, "The offsets were written by another connector version or by hand; reset this connector's offsets.");
    return CF_ERR_INVALID;
}

cf_code cf_offset_entry_from_map(const cf_value *map, cf_offset_entry *e, cf_err *err) {
    memset(e, 0, sizeof *e);
    if (!map) return CF_OK;
    if (map->type != CF_MAP) return cf_err_set(err, CF_ERR_INVALID, "stored source offset is not a map");
    cf_code rc;
    if ((rc = get_long(map, "recordCount", &e->record_count, err)) || (rc = get_long(map, "position", &e->position, err)) ||
        (rc = get_long(map, "line", &e->line, err)) || (rc = get_long(map, "size", &e->size, err)) ||
        (rc = get_long(map, "mtime", &e->mtime_ms, err)))
        return rc;
    const cf_value *et = cf_value_map_get_str(map, "etag");
    if (et && et->type == CF_STRING) snprintf(e->etag, sizeof e->etag, "%s", et->u.s.ptr);
    const cf_value *d = cf_value_map_get_str(map, "done");
    if (d && d->type == CF_BOOLEAN) e->done = d->u.b;
    return CF_OK;
}

void cf_native_infos_free(cf_native_info *items, size_t n) {
    for (size_t i = 0; i < n; i++) free(items[i].key), free(items[i].etag);
    free(items);
}
