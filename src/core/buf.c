/*
 * buf.c - growable buffers, checked allocation and arenas (see cdcflow/buf.h).
 */
#include "cdcflow/buf.h"

#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n) {
    fprintf(stderr, "cdcflow: out of memory allocating %zu bytes\n", n);
    abort();
}

void *cf_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

/* Small blocks (a value, a record: several per message) through malloc and
 * memset: glibc's calloc takes no block from the thread's cache, it locks
 * the arena every time, and clearing a few hundred bytes costs less. Large
 * ones keep calloc, whose fresh pages come cleared. */
#define XCALLOC_SMALL 1024

/* Called through a volatile pointer: the compiler would otherwise turn
 * malloc + memset back into calloc. */
static void *(*const volatile xcalloc_clear)(void *, int, size_t) = memset;

void *cf_xcalloc(size_t n, size_t size) {
    if (!n) n = 1;
    if (!size) size = 1;
    void *p;
    if (n <= XCALLOC_SMALL / size) {
        p = malloc(n * size);
        if (p) xcalloc_clear(p, 0, n * size);
    } else {
        p = calloc(n, size);
    }
    if (!p) oom(n * size);
    return p;
}

void *cf_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *cf_xstrdup(const char *s) { return cf_xstrndup(s, strlen(s)); }

char *cf_xstrndup(const char *s, size_t n) {
    char *p = cf_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void *cf_xmemdup(const void *p, size_t n) {
    void *q = cf_xmalloc(n + 1);
    if (n) memcpy(q, p, n);
    ((char *)q)[n] = '\0';
    return q;
}

void cf_buf_init(cf_buf *b) { b->data = NULL, b->len = 0, b->cap = 0; }

void cf_buf_free(cf_buf *b) {
    free(b->data);
    cf_buf_init(b);
}

void cf_buf_reset(cf_buf *b) {
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

void cf_buf_reserve(cf_buf *b, size_t extra) {
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    bool fresh = !b->data;
    b->data = cf_xrealloc(b->data, cap);
    b->cap = cap;
    if (fresh) b->data[0] = '\0'; /* the data is a string from its first byte, appended or not */
}

void cf_buf_append(cf_buf *b, const void *p, size_t n) {
    cf_buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void cf_buf_append_str(cf_buf *b, const char *s) { cf_buf_append(b, s, strlen(s)); }

void cf_buf_append_byte(cf_buf *b, uint8_t c) {
    cf_buf_reserve(b, 1);
    b->data[b->len++] = (char)c;
    b->data[b->len] = '\0';
}

void cf_buf_append_int(cf_buf *b, long long v) {
    char t[24], *e = t + sizeof t, *q = e;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do *--q = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0) *--q = '-';
    cf_buf_append(b, q, (size_t)(e - q));
}

void cf_buf_vprintf(cf_buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    cf_buf_reserve(b, 64);
    int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    if (n >= 0 && (size_t)n >= b->cap - b->len) {
        cf_buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap2);
    }
    if (n > 0) b->len += (size_t)n;
    va_end(ap2);
}

void cf_buf_printf(cf_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cf_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *cf_buf_detach(cf_buf *b, size_t *len_out) {
    if (!b->data) cf_buf_reserve(b, 0), b->data[0] = '\0';
    char *p = b->data;
    if (len_out) *len_out = b->len;
    cf_buf_init(b);
    return p;
}

/* Arena: a singly linked list of blocks; on reset the first block and up to
 * ARENA_SPARE more of the base size are kept for the next use, so a
 * steady-state batch loop allocates nothing and does not touch fresh pages
 * again (a 1 MiB block is an mmap of its own in glibc: freed and taken
 * again per batch it cost a page fault per 4 KiB, ~4% of a sink task). */
#define ARENA_SPARE 8
typedef struct arena_block {
    struct arena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} arena_block;

struct cf_arena {
    arena_block *head;
    arena_block *spare; /* kept blocks of block_size, for the next allocations */
    size_t n_spare;
    size_t block_size;
    size_t used_total;
};

static arena_block *block_new(size_t size) {
    arena_block *b = cf_xmalloc(sizeof *b + size);
    b->next = NULL, b->size = size, b->used = 0;
    return b;
}

cf_arena *cf_arena_new(size_t block_size) {
    cf_arena *a = cf_xcalloc(1, sizeof *a);
    a->block_size = block_size ? block_size : 65536;
    a->head = block_new(a->block_size);
    return a;
}

static void blocks_free(arena_block *b) {
    while (b) {
        arena_block *n = b->next;
        free(b);
        b = n;
    }
}

void cf_arena_destroy(cf_arena *a) {
    if (!a) return;
    blocks_free(a->head);
    blocks_free(a->spare);
    free(a);
}

void *cf_arena_alloc(cf_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (a->head->used + n > a->head->size) {
        size_t sz = n > a->block_size ? n : a->block_size;
        arena_block *b;
        if (sz == a->block_size && a->spare) {
            b = a->spare;
            a->spare = b->next;
            a->n_spare--;
            b->used = 0;
        } else {
            b = block_new(sz);
        }
        b->next = a->head;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    a->used_total += n;
    return p;
}

char *cf_arena_strndup(cf_arena *a, const char *s, size_t n) {
    char *p = cf_arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void cf_arena_reset(cf_arena *a) {
    /* keep the oldest block (the tail of the list): it has the base size */
    arena_block *b = a->head;
    while (b->next) {
        arena_block *n = b->next;
        if (b->size == a->block_size && a->n_spare < ARENA_SPARE) {
            b->next = a->spare;
            a->spare = b;
            a->n_spare++;
        } else {
            free(b);
        }
        b = n;
    }
    b->used = 0;
    a->head = b;
    a->used_total = 0;
}

size_t cf_arena_used(const cf_arena *a) { return a->used_total; }
