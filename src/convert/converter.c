/*
 * converter.c - cf_converter: a plugin instance with its parsed configuration
 * (see include/cdcflow/convert.h). Lookup by short name or Connect class
 * name, configuration checked against the plugin's table, then the plugin's
 * create().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/avro.h"
#include "cdcflow/buf.h"
#include "cdcflow/convert.h"

extern const cf_converter_plugin cf_avro_converter_plugin;

struct cf_converter {
    const cf_converter_plugin *plugin;
    void *state;
    cf_config *cfg;
    char *held; /* the last output of cf_converter_from_connect_view, when it had to be made */
    cf_buf vbuf; /* ... or written by from_connect_buf (kept: no allocation per record) */
};

const cf_converter_plugin *cf_converter_find(const char *name) {
    if (!name) return NULL;
    for (const cf_converter_plugin *const *p = cf_converter_plugins(); *p; p++) {
        if (strcasecmp((*p)->name, name) == 0) return *p;
        for (const char *const *a = (*p)->aliases; a && *a; a++)
            if (strcmp(*a, name) == 0) return *p;
    }
    return NULL;
}

cf_code cf_converter_new(const char *name, const cf_props *props, bool is_key, cf_converter **out, cf_err *err) {
    *out = NULL;
    const cf_converter_plugin *pl = cf_converter_find(name);
    if (!pl) {
        cf_err_set(err, CF_ERR_NOT_FOUND, "unknown converter \"%s\"", name ? name : "(null)");
        cf_buf names = CF_BUF_INIT;
        for (const cf_converter_plugin *const *p = cf_converter_plugins(); *p; p++) {
            cf_buf_printf(&names, "%s%s", names.len ? ", " : "", (*p)->name);
            for (const char *const *a = (*p)->aliases; a && *a; a++) cf_buf_printf(&names, ", %s", *a);
        }
        cf_err_hint(err, "Known converters: %s.", names.data ? names.data : "none");
        cf_buf_free(&names);
        return CF_ERR_NOT_FOUND;
    }
    cf_props *empty = props ? NULL : cf_props_new();
    const cf_cfg_table *tables[1] = {pl->config};
    cf_config *cfg = NULL;
    char *problems = NULL;
    cf_code rc = cf_config_parse(tables, 1, props ? props : empty, &cfg, &problems, err);
    cf_props_destroy(empty);
    if (rc != CF_OK) {
        if (err) {
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "invalid configuration for converter %s: %s", pl->name, err->message);
            memcpy(err->message, msg, sizeof msg);
            if (problems && !err->detail[0]) cf_err_detail(err, "%s", problems);
        }
        free(problems);
        return rc;
    }
    free(problems);
    void *state = NULL;
    rc = pl->create(cfg, is_key, &state, err);
    if (rc != CF_OK) {
        cf_config_destroy(cfg);
        return rc;
    }
    cf_converter *c = cf_xcalloc(1, sizeof *c);
    c->plugin = pl;
    c->state = state;
    c->cfg = cfg;
    *out = c;
    return CF_OK;
}

void cf_converter_destroy(cf_converter *c) {
    if (!c) return;
    c->plugin->destroy(c->state);
    cf_config_destroy(c->cfg);
    free(c->held);
    cf_buf_free(&c->vbuf);
    free(c);
}

const cf_converter_plugin *cf_converter_get_plugin(const cf_converter *c) { return c->plugin; }

cf_code cf_converter_from_connect(cf_converter *c, const char *topic, const cf_schema *schema, const cf_value *value,
                                  char **data, size_t *len, cf_err *err) {
    *data = NULL;
    *len = 0;
    return c->plugin->from_connect(c->state, topic, schema, value, data, len, err);
}

cf_code cf_converter_from_connect_view(cf_converter *c, const char *topic, const cf_schema *schema,
                                       const cf_value *value, const char **data, size_t *len, cf_err *err) {
    *data = NULL;
    *len = 0;
    free(c->held);
    c->held = NULL;
    if (c->plugin->from_connect_view && c->plugin->from_connect_view(c->state, topic, schema, value, data, len))
        return CF_OK;
    if (c->plugin->from_connect_buf) {
        cf_buf_reset(&c->vbuf);
        cf_buf_reserve(&c->vbuf, 1); /* data non-NULL even for empty output */
        bool is_null = false;
        cf_code rc = c->plugin->from_connect_buf(c->state, topic, schema, value, &c->vbuf, &is_null, err);
        if (rc || is_null) return rc;
        *data = c->vbuf.data;
        *len = c->vbuf.len;
        return CF_OK;
    }
    cf_code rc = c->plugin->from_connect(c->state, topic, schema, value, &c->held, len, err);
    *data = c->held;
    return rc;
}

cf_code cf_converter_to_connect(cf_converter *c, const char *topic, const char *data, size_t len, cf_schema **schema,
                                cf_value **value, cf_err *err) {
    *schema = NULL;
    *value = NULL;
    return c->plugin->to_connect(c->state, topic, data, len, schema, value, err);
}

/* Only the avro converter talks to a registry; its state is a cf_avro_converter. */
bool cf_converter_sr_status(const cf_converter *c, cf_sr_status *out) {
    if (!c || !out || c->plugin != &cf_avro_converter_plugin || !c->state) return false;
    cf_sr_client *client = cf_avro_converter_client(c->state);
    if (!client) return false;
    cf_sr_client_status(client, out);
    return true;
}

/* As for the registry status: only the avro converter waits on the network. */
void cf_converter_set_interrupt(cf_converter *c, const atomic_bool *stop) {
    if (!c || c->plugin != &cf_avro_converter_plugin || !c->state) return;
    cf_sr_client_set_interrupt(cf_avro_converter_client(c->state), stop);
}
