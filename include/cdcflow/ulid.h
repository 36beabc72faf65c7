/*
 * cdcflow/ulid.h - ULIDs (https://github.com/ulid/spec), monotonic.
 *
 * 128 bits: a 48-bit Unix time in milliseconds, then 80 random bits; text
 * form is 26 Crockford base32 characters (0123456789ABCDEFGHJKMNPQRSTVWXYZ),
 * big-endian, so text order is time order. Within one millisecond the
 * generator increments the random part by one (with carry), so ids from one
 * generator are strictly increasing; if the random part would overflow the
 * generation fails (CF_ERR_AGAIN: wait for the next millisecond), as the spec
 * requires. Decoding is case-insensitive and rejects values above
 * 7ZZZZZZZZZZZZZZZZZZZZZZZZZ.
 *
 * A cf_ulid_gen is used by one thread (each keyless stream source has its own).
 */
#ifndef CDCFLOW_ULID_H
#define CDCFLOW_ULID_H

#include <stdint.h>

#include "cdcflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_ulid {
    uint8_t b[16]; /* big-endian: 6 bytes time, 10 bytes randomness */
} cf_ulid;

#define CF_ULID_TEXT_LEN 26

typedef struct cf_ulid_gen cf_ulid_gen;

cf_ulid_gen *cf_ulid_gen_new(void);
void cf_ulid_gen_destroy(cf_ulid_gen *g);
/* Next ULID at time `ms` (pass -1 for the current clock). A clock that goes
 * backwards keeps the last time, so output stays monotonic. */
cf_code cf_ulid_next(cf_ulid_gen *g, int64_t ms, cf_ulid *out, cf_err *err);
/* Resume after a restart: later ids sort after `last`. */
void cf_ulid_gen_seed_last(cf_ulid_gen *g, const cf_ulid *last);

/* 26 characters + NUL. */
void cf_ulid_encode(const cf_ulid *u, char out[CF_ULID_TEXT_LEN + 1]);
cf_code cf_ulid_decode(const char *text, cf_ulid *out, cf_err *err);
int64_t cf_ulid_time_ms(const cf_ulid *u);
int cf_ulid_compare(const cf_ulid *a, const cf_ulid *b);

#ifdef __cplusplus
}
#endif
#endif
