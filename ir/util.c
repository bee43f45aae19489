/* util.c — fatal internal errors and the per-compilation arena.
 *
 * The arena hands out zeroed, 16-byte aligned memory from large blocks and frees
 * them all at once; nothing it hands out is freed one by one. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir.h"

typedef struct Block Block;
struct Block {
	Block *next;
	size_t used, cap;
	_Alignas(16) unsigned char mem[];
};

struct Arena {
	Block *head;
};

noreturn void
die_(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: internal error: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

Arena *
arena_new(void)
{
	Arena *a = calloc(1, sizeof *a);

	if (!a)
		die("out of memory");
	return a;
}

void
arena_free(Arena *a)
{
	Block *b, *next;

	if (!a)
		return;
	for (b = a->head; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

void *
arena_alloc(Arena *a, size_t n)
{
	Block *b = a->head;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 65536 ? n : 65536;

		b = malloc(sizeof *b + cap);
		if (!b)
			die("out of memory");
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

char *
arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *
arena_printf(Arena *a, const char *fmt, ...)
{
	va_list ap;
	char small[256], *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("bad format '%s'", fmt);
	p = arena_alloc(a, (size_t)n + 1);
	if ((size_t)n < sizeof small) {
		memcpy(p, small, (size_t)n + 1);
		return p;
	}
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void
arena_grow(Arena *a, void **p, uint32_t *cap, uint32_t need, size_t sz)
{
	uint32_t c = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return;
	while (c < need)
		c *= 2;
	q = arena_alloc(a, c * sz);
	if (*p)
		memcpy(q, *p, *cap * sz);
	*p = q;
	*cap = c;
}

double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
