/* arena.c — bump allocator whose memory is freed all at once.
 *
 * A module's arena holds every op, value, attribute and constant of the module; a pass may make a
 * scratch arena for its own maps and free it when it returns. Chunks grow geometrically; an allocation
 * larger than half a chunk gets a chunk of its own so big constants do not waste the tail of a chunk.
 * All memory comes from one function (chunk_alloc), the single place to hook for failure injection.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct FcArenaChunk {
  FcArenaChunk *next;
  size_t size, used; /* bytes of data[] */
  _Alignas(64) unsigned char data[];
};

enum { ARENA_MIN_CHUNK = 64 * 1024 };

static FcArenaChunk *chunk_alloc(size_t size) {
  FcArenaChunk *c = aligned_alloc(64, (sizeof(FcArenaChunk) + size + 63) & ~(size_t)63);
  if (!c) {
    fprintf(stderr, "flowc: out of memory (asked for %zu bytes)\n", size);
    abort();
  }
  c->next = NULL;
  c->size = size;
  c->used = 0;
  return c;
}

void fc_arena_init(FcArena *a) {
  a->head = NULL;
  a->total = 0;
}

void fc_arena_free(FcArena *a) {
  for (FcArenaChunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  a->head = NULL;
  a->total = 0;
}

void *fc_arena_alloc(FcArena *a, size_t size, size_t align) {
  FC_ASSERT(align && align <= 64 && (align & (align - 1)) == 0);
  if (size == 0) size = 1;
  FcArenaChunk *c = a->head;
  if (c) {
    size_t off = (c->used + align - 1) & ~(align - 1);
    if (off <= c->size && size <= c->size - off) {
      c->used = off + size;
      return memset(c->data + off, 0, size);
    }
  }
  size_t want = a->total < ARENA_MIN_CHUNK ? ARENA_MIN_CHUNK : a->total;
  if (size > SIZE_MAX / 2 - 64) {
    fprintf(stderr, "flowc: out of memory (asked for %zu bytes)\n", size);
    abort();
  }
  if (size > want / 2) {
    /* A chunk of its own, linked behind the head so the head's free tail stays usable. */
    FcArenaChunk *big = chunk_alloc(size);
    big->used = size;
    a->total += size;
    if (c) {
      big->next = c->next;
      c->next = big;
    } else {
      a->head = big;
    }
    return memset(big->data, 0, size);
  }
  FcArenaChunk *n = chunk_alloc(want);
  n->next = a->head;
  a->head = n;
  a->total += want;
  n->used = size;
  return memset(n->data, 0, size);
}

char *fc_arena_strndup(FcArena *a, const char *s, size_t n) {
  char *d = fc_arena_alloc(a, n + 1, 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *fc_arena_strdup(FcArena *a, const char *s) { return s ? fc_arena_strndup(a, s, strlen(s)) : NULL; }

void *fc_arena_memdup(FcArena *a, const void *p, size_t n, size_t align) {
  void *d = fc_arena_alloc(a, n, align);
  if (n) memcpy(d, p, n);
  return d;
}

char *fc_arena_printf(FcArena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  FC_ASSERT(n >= 0);
  char *d = fc_arena_alloc(a, (size_t)n + 1, 1);
  vsnprintf(d, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return d;
}
