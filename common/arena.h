/* arena.h — the one arena: zeroed, 16-byte aligned memory from large blocks,
 * all freed at once, nothing freed one by one. The compiler's (ir/util.c)
 * dies when memory runs out; libfp8rt's (runtime/plan.c) returns NULL and
 * reports it, as a library must. Both are this code. */
#ifndef FP8CC_ARENA_H
#define FP8CC_ARENA_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct ArenaBlock {
	struct ArenaBlock *next;
	size_t used, cap;
	_Alignas(16) unsigned char mem[];
} ArenaBlock;

typedef struct {
	ArenaBlock *head;
	size_t block; /* the size of a new block (larger for a larger request) */
} ArenaCore;

/* n zeroed bytes, or NULL when memory runs out */
static inline void *
arena_core_alloc(ArenaCore *a, size_t n)
{
	ArenaBlock *b = a->head;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > a->block ? n : a->block;

		if (!(b = malloc(sizeof *b + cap)))
			return NULL;
		b->cap = cap;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	p = b->mem + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

static inline void
arena_core_free(ArenaCore *a)
{
	for (ArenaBlock *b = a->head, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
}

#endif
