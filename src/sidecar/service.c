/*
 * service.c - the Sidecar CDC service configuration (the JSON body of the
 * design's PUT /api/v1/services/cdc/config, also `cdcflow cassandra sidecar
 * --config FILE`) as connector and worker settings (see cdcflow/sidecar.h).
 * The mapping is the one place the design's names meet ours: a PUT's body,
 * --config, and what the CQL-style statements make (statements.c) all go
 * through cf_sc_service_put.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cdcflow/config.h"
#include "cdcflow/sidecar.h"
#include "sidecar_internal.h"

void cf_sc_service_put(const char *key, const char *value, cf_props *connector, cf_props *worker) {
    if (strcmp(key, "kafka.bootstrap.servers") == 0) {
        cf_props_set(worker, "bootstrap.servers", value);
    } else if (strcmp(key, "schema.registry.url") == 0) {
        cf_props_set(connector, "key.converter", "avro");
        cf_props_set(connector, "value.converter", "avro");
        cf_props_set(connector, "key.converter.schema.registry.url", value);
        cf_props_set(connector, "value.converter.schema.registry.url", value);
    } else if (strcmp(key, "tables") == 0) {
        cf_props_set(connector, "table.include.list", value);
    } else if (strncmp(key, "worker.", 7) == 0 && key[7]) {
        cf_props_set(worker, key + 7, value);
    } else {
        cf_props_set(connector, key, value);
    }
}

static cf_code bad(cf_err *err, const char *name, const char *key, const char *what) {
    cf_err_set(err, CF_ERR_CONFIG, "configuration \"%s\" is %s", key, what);
    cf_err_hint(err, "Values are strings, numbers, booleans, or arrays of strings.");
    cf_err_where(err, "%s", name);
    return CF_ERR_CONFIG;
}

cf_code cf_sc_service_settings(const char *text, size_t len, const char *name, cf_props *settings, cf_err *err) {
    name = name ? name : "configuration";
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) i++;
    if (i == len || text[i] != '{') { /* .properties */
        cf_props *p;
        cf_code rc = cf_props_from_properties(text, len, &p, err);
        if (rc) {
            cf_err_where_prefix(err, name);
            return rc;
        }
        cf_props_merge(settings, p);
        cf_props_destroy(p);
        return CF_OK;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root || !json_is_object(root)) {
        cf_err_set(err, CF_ERR_CONFIG, "configuration is not a JSON object%s%s", root ? "" : ": ", root ? "" : je.text);
        if (!root) cf_err_where(err, "%s:%d:%d", name, je.line, je.column);
        else cf_err_where(err, "%s", name);
        json_decref(root);
        return CF_ERR_CONFIG;
    }
    json_t *obj = json_object_get(root, "config");
    if (!json_is_object(obj)) obj = root;
    const char *k;
    json_t *v;
    cf_code rc = CF_OK;
    cf_buf b = CF_BUF_INIT;
    json_object_foreach(obj, k, v) {
        if (obj == root && strcmp(k, "name") == 0 && json_is_string(v)) continue; /* Connect's envelope */
        cf_buf_reset(&b);
        switch (json_typeof(v)) {
        case JSON_STRING: cf_buf_append(&b, json_string_value(v), json_string_length(v)); break;
        case JSON_INTEGER: cf_buf_printf(&b, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
        case JSON_REAL: cf_buf_printf(&b, "%.17g", json_real_value(v)); break;
        case JSON_TRUE: cf_buf_append_str(&b, "true"); break;
        case JSON_FALSE: cf_buf_append_str(&b, "false"); break;
        case JSON_ARRAY: {
            size_t ix;
            json_t *e;
            json_array_foreach(v, ix, e) {
                if (!json_is_string(e)) {
                    rc = bad(err, name, k, "an array with a value that is not a string");
                    goto out;
                }
                if (ix) cf_buf_append_byte(&b, ',');
                cf_buf_append_str(&b, json_string_value(e));
            }
            break;
        }
        default:
            rc = bad(err, name, k, json_is_null(v) ? "null" : "an object");
            goto out;
        }
        cf_props_set(settings, k, b.data ? b.data : "");
    }
out:
    cf_buf_free(&b);
    json_decref(root);
    return rc;
}

cf_code cf_sc_service_config(const char *text, size_t len, const char *name, cf_props *connector, cf_props *worker,
                             cf_err *err) {
    cf_props *settings = cf_props_new();
    cf_code rc = cf_sc_service_settings(text, len, name, settings, err);
    for (size_t k = 0; !rc && k < cf_props_count(settings); k++)
        cf_sc_service_put(cf_props_key_at(settings, k), cf_props_value_at(settings, k), connector, worker);
    cf_props_destroy(settings);
    return rc;
}
