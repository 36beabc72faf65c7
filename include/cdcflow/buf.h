/*
 * cdcflow/buf.h - a growable byte buffer and a bump arena.
 *
 * cf_buf: the caller owns the struct (usually on the stack or inside another
 * object) and calls cf_buf_free() once; `data` is always NUL-terminated so a
 * buffer that holds text can be used as a C string. Growth doubles, so
 * appending n bytes one at a time costs O(n).
 *
 * cf_arena: per-batch allocations freed all at once with cf_arena_reset()
 * (hot paths: decode a batch, reset, decode the next). Memory from an arena is
 * never freed individually.
 */
#ifndef CDCFLOW_BUF_H
#define CDCFLOW_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_buf {
    char *data;  /* NUL-terminated; NULL until the first append */
    size_t len;  /* bytes used, not counting the terminating NUL */
    size_t cap;  /* bytes allocated */
} cf_buf;

#define CF_BUF_INIT {NULL, 0, 0}

void cf_buf_init(cf_buf *b);
void cf_buf_free(cf_buf *b);
void cf_buf_reset(cf_buf *b); /* len = 0, keeps memory */
/* Ensure room for `extra` more bytes (plus the NUL). Aborts on out of memory:
 * cdcflow treats allocation failure of small buffers as fatal, as Redis does. */
void cf_buf_reserve(cf_buf *b, size_t extra);
void cf_buf_append(cf_buf *b, const void *p, size_t n);
void cf_buf_append_str(cf_buf *b, const char *s);
void cf_buf_append_byte(cf_buf *b, uint8_t c);
void cf_buf_append_int(cf_buf *b, long long v); /* decimal, as %lld without printf's cost */
void cf_buf_printf(cf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cf_buf_vprintf(cf_buf *b, const char *fmt, va_list ap);
/* Hand the bytes to the caller (free() them); the buffer becomes empty. */
char *cf_buf_detach(cf_buf *b, size_t *len_out);

/* Allocation helpers that abort with a message on out of memory. */
void *cf_xmalloc(size_t n);
void *cf_xcalloc(size_t n, size_t size);
void *cf_xrealloc(void *p, size_t n);
char *cf_xstrdup(const char *s);
char *cf_xstrndup(const char *s, size_t n);
void *cf_xmemdup(const void *p, size_t n);

typedef struct cf_arena cf_arena;
cf_arena *cf_arena_new(size_t block_size); /* 0: 64 KiB blocks */
void cf_arena_destroy(cf_arena *a);
void *cf_arena_alloc(cf_arena *a, size_t n); /* 16-byte aligned */
char *cf_arena_strndup(cf_arena *a, const char *s, size_t n);
void cf_arena_reset(cf_arena *a); /* keeps the first block and up to 8 more of the base size */
size_t cf_arena_used(const cf_arena *a);

#ifdef __cplusplus
}
#endif
#endif
