/*
 * secrets.c - which settings are secret, and what of a value may be shown
 * (see include/cdcflow/config.h). The one decision used by the REST views
 * of connector configs, by configuration errors (and so by `cdcflow
 * validate` and `cdcflow run`), never repeated elsewhere.
 *
 * A key is secret by its definition when one is known: the key's own in
 * the tables given, else the definition named by the key's longest dotted
 * suffix in any table cdcflow has (so key.converter.basic.auth.user.info is
 * the avro converter's PASSWORD-type basic.auth.user.info). A key no table
 * defines (pass-through prefixes: producer.*, key.converter.* of a
 * converter without a table, plugins of others) is judged by its name, as
 * Connect marks its PASSWORD settings: *.password, *.basic.auth.user.info,
 * sasl.jaas.config, ssl.keystore.key, ssl.key.pem, and names holding
 * "secret", "credential", "passw", or a part "token", "pwd", "pass",
 * "apikey", or a name close to a PASSWORD setting's (a misspelt one).
 * Hiding too much is the safe side.
 *
 * A value that is not secret as a whole is shown with the credentials in
 * it masked (cf_mask_credentials: postgres://user:[hidden]@host/db).
 */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "cdcflow/config.h"
#include "cdcflow/text.h"

static const cf_cfg_def *find_in(const cf_cfg_table *const *tables, size_t n, const char *key) {
    for (size_t i = 0; tables && i < n; i++) {
        const cf_cfg_def *d = cf_cfg_table_find(tables[i], key);
        if (d) return d;
    }
    return NULL;
}

static const cf_cfg_def *find_anywhere(const char *key) {
    for (const cf_cfg_table *const *t = cf_config_tables(); *t; t++) {
        const cf_cfg_def *d = cf_cfg_table_find(*t, key);
        if (d) return d;
    }
    return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0 && (a == b || s[a - b - 1] == '.');
}

/* A part of the name between '.', '_' and '-' equal to w. */
static bool has_part(const char *key, const char *w) {
    size_t wl = strlen(w);
    for (const char *p = key; *p;) {
        size_t l = strcspn(p, "._-");
        if (l == wl && strncasecmp(p, w, wl) == 0) return true;
        p += l;
        if (*p) p++;
    }
    return false;
}

static bool secret_by_name(const char *key) {
    static const char *const inside[] = {"passw", "secret", "credential", NULL};
    static const char *const suffixes[] = {"basic.auth.user.info", "user.info", "sasl.jaas.config", "ssl.keystore.key",
                                           "ssl.key.pem", "private.key", NULL};
    static const char *const parts[] = {"token", "pwd", "pass", "apikey", NULL};
    for (const char *const *w = inside; *w; w++)
        if (strcasestr(key, *w)) return true;
    for (const char *const *w = suffixes; *w; w++)
        if (ends_with(key, *w)) return true;
    for (const char *const *w = parts; *w; w++)
        if (has_part(key, *w)) return true;
    return false;
}

/* A misspelt password key ("basic.auth.user.inf") keeps its secret: a
 * dotted suffix of key close to the name of a PASSWORD-type definition
 * ("did you mean" distance), in tables or any registered table. */
static bool close_to_password(const cf_cfg_table *const *tables, size_t n, const char *key) {
    const cf_cfg_table *const *all = cf_config_tables();
    for (const char *p = key; p; p = strchr(p, '.')) {
        if (*p == '.') p++;
        if (strlen(p) < 4) break;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; pass ? all[i] != NULL : i < n; i++) {
                const cf_cfg_table *t = pass ? all[i] : (tables ? tables[i] : NULL);
                if (!t || !t->defs) continue;
                for (const cf_cfg_def *d = t->defs; d->name; d++)
                    if (d->type == CF_CFG_PASSWORD && cf_close_enough(p, cf_edit_distance(p, d->name))) return true;
            }
    }
    return false;
}

bool cf_config_key_is_secret(const cf_cfg_table *const *tables, size_t n, const char *key) {
    if (!key) return false;
    const cf_cfg_def *d = find_in(tables, n, key);
    /* the longest dotted suffix that some table defines */
    for (const char *p = key; !d && p; p = strchr(p, '.')) {
        if (*p == '.') p++;
        if (!*p) break;
        d = find_in(tables, n, p);
        if (!d) d = find_anywhere(p);
    }
    if (d) return d->type == CF_CFG_PASSWORD;
    return secret_by_name(key) || close_to_password(tables, n, key);
}

bool cf_config_shown_value(const cf_cfg_table *const *tables, size_t n, const char *key, const char *value,
                           cf_buf *out) {
    if (!value) return false;
    if (cf_config_key_is_secret(tables, n, key)) {
        cf_buf_append_str(out, CF_HIDDEN);
        return true;
    }
    return cf_mask_credentials(value, out);
}
