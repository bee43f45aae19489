/* util.c — fatal internal errors, the per-compilation arena (common/arena.h,
 * dying when memory runs out) and the string map. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "ir.h"

struct Arena {
	ArenaCore core;
};

/* errors in three levels: the input's (frontend/diag.c: file:line:col with
 * the line), the environment's (here: out of memory, a file that cannot be
 * read or written, no libdevice: "fp8cc: error: ...", status 1), and bugs
 * (die: the place in the source, abort) */

static void
venv_error(const char *fmt, va_list ap)
{
	fputs("fp8cc: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
env_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	venv_error(fmt, ap);
	va_end(ap);
}

noreturn void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	venv_error(fmt, ap);
	va_end(ap);
	exit(1);
}

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
		fatal("out of memory");
	a->core.block = 65536;
	return a;
}

void
arena_free(Arena *a)
{
	if (!a)
		return;
	arena_core_free(&a->core);
	free(a);
}

void *
arena_alloc(Arena *a, size_t n)
{
	void *p = arena_core_alloc(&a->core, n);

	if (!p)
		fatal("out of memory");
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

/* ---- a string map ---- */

static uint32_t
hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* where s[0..n) is, or where it would go */
static uint32_t
map_slot(const Map *m, const char *s, size_t n)
{
	uint32_t i = hash(s, n) & (m->cap - 1);

	while (m->keys[i] && (strncmp(m->keys[i], s, n) != 0 || m->keys[i][n] != '\0'))
		i = (i + 1) & (m->cap - 1);
	return i;
}

uint32_t *
map_getn(const Map *m, const char *s, size_t n)
{
	uint32_t i;

	if (m->cap == 0)
		return NULL;
	i = map_slot(m, s, n);
	return m->keys[i] ? &m->vals[i] : NULL;
}

void
map_put(Arena *a, Map *m, const char *key, uint32_t v)
{
	uint32_t i;

	if (2 * (m->n + 1) > m->cap) {
		Map old = *m;

		m->cap = m->cap ? 2 * m->cap : 64;
		m->keys = arena_alloc(a, m->cap * sizeof *m->keys);
		m->vals = arena_alloc(a, m->cap * sizeof *m->vals);
		m->n = 0;
		for (uint32_t j = 0; j < old.cap; j++)
			if (old.keys[j])
				map_put(a, m, old.keys[j], old.vals[j]);
	}
	i = map_slot(m, key, strlen(key));
	if (!m->keys[i])
		m->n++;
	m->keys[i] = key;
	m->vals[i] = v;
}
