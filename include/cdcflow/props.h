/*
 * cdcflow/props.h - an ordered map of string keys to string values.
 *
 * The raw form of every configuration (connector configs, worker configs,
 * librdkafka pass-through settings), before the config module types and
 * validates it against definitions. Insertion order is kept so that
 * generated output and error messages follow the user's file.
 *
 * OWNERSHIP: cf_props owns copies of all keys and values. Pointers returned
 * by getters stay valid until the key is set again, removed, or the props
 * destroyed. Lookups are linear: configurations have tens of keys.
 */
#ifndef CDCFLOW_PROPS_H
#define CDCFLOW_PROPS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_props cf_props;

cf_props *cf_props_new(void);
void cf_props_destroy(cf_props *p); /* NULL-safe */
cf_props *cf_props_clone(const cf_props *p);
/* Set (replace in place if present, else append). value NULL removes. */
void cf_props_set(cf_props *p, const char *key, const char *value);
const char *cf_props_get(const cf_props *p, const char *key); /* NULL if absent */
const char *cf_props_get_or(const cf_props *p, const char *key, const char *fallback);
bool cf_props_has(const cf_props *p, const char *key);
bool cf_props_remove(cf_props *p, const char *key);
size_t cf_props_count(const cf_props *p);
const char *cf_props_key_at(const cf_props *p, size_t i);
const char *cf_props_value_at(const cf_props *p, size_t i);
/* Keys starting with prefix; with strip the prefix is removed from the keys
 * ("producer." + "linger.ms" -> "linger.ms"). Caller destroys the result. */
cf_props *cf_props_subset(const cf_props *p, const char *prefix, bool strip);
/* Copy every entry of src into dst (src wins). */
void cf_props_merge(cf_props *dst, const cf_props *src);

#ifdef __cplusplus
}
#endif
#endif
