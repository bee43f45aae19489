/* safetensors.c — reader and writer for .safetensors files.
 *
 * Reading: after the 8-byte header length is checked against the file size,
 * a recursive-descent parser reads the JSON header. Its recursion depth is
 * fixed by the format (header -> entry -> tensor -> list); values of unknown
 * keys are skipped by an iterative scanner with an explicit depth limit, so
 * no input can exhaust the stack. Each entry is checked as it is parsed
 * (dtype, rank, dims, element-count overflow, offsets against shape and
 * buffer), then names must be unique and the entries, sorted by offset, must
 * tile the byte buffer exactly. Only then are the bytes copied, in one
 * sequential pass, from memory or from the open file. A Parser owns every
 * allocation until the StFile is complete, so error paths cannot leak.
 *
 * Writing: check every tensor, build the header in a growable buffer in the
 * Python library's layout (space-padded to a multiple of 8), then write the
 * length, the header and the data; a failed write removes the file.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fileno, fstat */
#endif
#include "safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_HEADER 100000000u /* header length limit, as in the Python library */
#define MAX_DEPTH 64          /* nesting limit for skipped JSON values */
#define MEMNAME "<memory>"    /* the file name st_read_mem reports */

#if defined(__GNUC__)
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF(f, a)
#endif

static const struct {
	const char *name; /* safetensors spelling */
	int size;         /* bytes per element */
} dtypes[] = {
	{"BOOL", 1}, {"U8", 1},   {"I8", 1},   {"I16", 2},
	{"I32", 4},  {"I64", 8},  {"F16", 2},  {"BF16", 2},
	{"F32", 4},  {"F64", 8},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

int st_dtype_size(const char *dtype)
{
	if (!dtype)
		return 0;
	for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
		if (!strcmp(dtype, dtypes[k].name))
			return dtypes[k].size;
	return 0;
}

/* Put "FILE: message" in err, with control characters replaced so the
 * message stays on one line; returns -1. */
PRINTF(4, 5)
static int fail(char *err, size_t errlen, const char *file, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (!err || !errlen)
		return -1;
	k = snprintf(err, errlen, "%s: ", file);
	if (k >= 0 && (size_t)k < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
		va_end(ap);
	}
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = '?';
	return -1;
}

/* Length of the valid UTF-8 sequence at s (n bytes readable), 0 if it is
 * invalid: overlong forms, surrogates and code points past U+10FFFF. */
static int utf8seq(const unsigned char *s, size_t n)
{
	unsigned lo = 0x80, hi = 0xBF;
	int len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, lo = s[0] == 0xE0 ? 0xA0 : lo, hi = s[0] == 0xED ? 0x9F : hi;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, lo = s[0] == 0xF0 ? 0x90 : lo, hi = s[0] == 0xF4 ? 0x8F : hi;
	else
		return 0;
	if ((size_t)len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (int k = 2; k < len; k++)
		if ((s[k] & 0xC0) != 0x80)
			return 0;
	return len;
}

/* Encode code point cp (valid, not a surrogate) as UTF-8 at d. */
static size_t utf8put(char *d, uint32_t cp)
{
	unsigned char *u = (unsigned char *)d;

	if (cp < 0x80)
		return u[0] = (unsigned char)cp, 1;
	if (cp < 0x800) {
		u[0] = (unsigned char)(0xC0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (unsigned char)(0xE0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		u[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	u[0] = (unsigned char)(0xF0 | cp >> 18);
	u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
	u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
	u[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* product(dims) * size of dtype into *out; -1 if it overflows. */
static int nbytes_of(const char *dtype, int rank, const int64_t *dims, size_t *out)
{
	uint64_t n = (uint64_t)st_dtype_size(dtype);

	for (int k = 0; k < rank; k++) {
		uint64_t d = (uint64_t)dims[k];
		if (d && n > UINT64_MAX / d)
			return -1;
		n *= d;
	}
#if SIZE_MAX < UINT64_MAX
	if (n > SIZE_MAX)
		return -1;
#endif
	*out = (size_t)n;
	return 0;
}

static int byname(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sort the n names in v and fail naming the first one that repeats. */
static int dupcheck(const char **v, int n, const char *file, char *err, size_t errlen)
{
	if (n > 1)
		qsort(v, (size_t)n, sizeof *v, byname);
	for (int k = 1; k < n; k++)
		if (!strcmp(v[k - 1], v[k]))
			return fail(err, errlen, file, "duplicate tensor name \"%.64s\"", v[k]);
	return 0;
}

/* ---- reader ---- */

/* One header entry while it is parsed and checked. */
typedef struct {
	char *name;               /* decoded, malloc'd; moved to the StTensor */
	char dtype[12];           /* known safetensors dtype */
	int rank;                 /* number of dims */
	int64_t dims[ST_MAXRANK]; /* shape */
	size_t nbytes;            /* product(dims) * dtype size */
	uint64_t begin, end;      /* data_offsets */
	int seq;                  /* position in the header: sort tie-break */
	int seen;                 /* bit set: dtype 1, shape 2, data_offsets 4 */
} Ent;

/* The header being parsed, and everything allocated so far. */
typedef struct {
	const char *s;    /* header text, not NUL-terminated */
	size_t n, i;      /* its length; the cursor */
	uint64_t buflen;  /* bytes in the buffer after the header */
	Ent *e;           /* entries, malloc'd */
	int ne, cap;      /* entries used, allocated */
	int meta;         /* __metadata__ seen */
	const char *cur;  /* name of the tensor being parsed, for messages */
	const char *file; /* file name for messages */
	char *err;        /* message buffer */
	size_t errlen;    /* its size */
} Parser;

/* Where tensor bytes come from: memory, or an open file at the buffer. */
typedef struct {
	const unsigned char *mem; /* next byte, when fp is NULL */
	FILE *fp;                 /* file positioned at the next byte */
} Src;

/* Fail at the cursor: "FILE: byte K: tensor "x": message". */
PRINTF(2, 3)
static int perr(Parser *p, const char *fmt, ...)
{
	char m[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	if (p->cur)
		return fail(p->err, p->errlen, p->file, "byte %zu: tensor \"%.64s\": %s",
		            p->i + 8, p->cur, m);
	return fail(p->err, p->errlen, p->file, "byte %zu: %s", p->i + 8, m);
}

/* The byte at the cursor, or -1 at the end of the header. */
static int peek(const Parser *p)
{
	return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

/* Fail on the character at the cursor: "unexpected 'x', expected want". */
static int unexpected(Parser *p, const char *want)
{
	int c = peek(p);

	if (c < 0)
		return perr(p, "unexpected end of header, expected %s", want);
	if (c > 0x20 && c < 0x7F)
		return perr(p, "unexpected '%c', expected %s", c, want);
	return perr(p, "unexpected byte 0x%02x, expected %s", (unsigned)c, want);
}

/* ws := [ \t\n\r]* */
static void ws(Parser *p)
{
	int c;

	while ((c = peek(p)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		p->i++;
}

/* Skip ws, then consume the character c or fail naming want. */
static int expect(Parser *p, int c, const char *want)
{
	ws(p);
	if (peek(p) != c)
		return unexpected(p, want);
	p->i++;
	return 0;
}

/* hex4 := [0-9a-fA-F]{4}, at s[at..], before end */
static int hex4(const Parser *p, size_t at, size_t end, uint32_t *v)
{
	*v = 0;
	if (at + 4 > end)
		return -1;
	for (size_t k = at; k < at + 4; k++) {
		int c = (unsigned char)p->s[k];
		int d = c >= '0' && c <= '9' ? c - '0'
		      : c >= 'a' && c <= 'f' ? c - 'a' + 10
		      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		*v = *v << 4 | (uint32_t)d;
	}
	return 0;
}

/* escape := '\' ( ["\/bfnrt] | 'u' hex4 | 'u' hi-surrogate '\u' lo-surrogate )
 * Cursor at the backslash, which is followed by a byte before end. */
static int escape(Parser *p, char *d, size_t *k, size_t end)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	int c = (unsigned char)p->s[p->i + 1];
	const char *hit = c ? strchr(from, c) : NULL;
	uint32_t cp, lo;

	if (hit) {
		d[(*k)++] = to[hit - from];
		p->i += 2;
		return 0;
	}
	if (c != 'u')
		return c > 0x20 && c < 0x7F ? perr(p, "invalid escape '\\%c' in string", c)
		                            : perr(p, "invalid escape in string");
	if (hex4(p, p->i + 2, end, &cp))
		return perr(p, "invalid \\u escape: need 4 hex digits");
	if (cp >= 0xDC00 && cp <= 0xDFFF)
		return perr(p, "invalid \\u escape: lone low surrogate \\u%04" PRIX32, cp);
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		if (p->i + 7 >= end || p->s[p->i + 6] != '\\' || p->s[p->i + 7] != 'u' ||
		    hex4(p, p->i + 8, end, &lo) || lo < 0xDC00 || lo > 0xDFFF)
			return perr(p, "invalid \\u escape: unpaired surrogate \\u%04" PRIX32, cp);
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		p->i += 6;
	}
	p->i += 6;
	*k += utf8put(d + *k, cp);
	return 0;
}

/* char := a UTF-8 character except '"', '\' and U+0000..U+001F | escape */
static int strchar(Parser *p, char *d, size_t *k, size_t end)
{
	const unsigned char *s = (const unsigned char *)p->s + p->i;
	int m;

	if (*s == '\\')
		return escape(p, d, k, end);
	if (*s < 0x20)
		return perr(p, "control character 0x%02x in string (must be escaped)", *s);
	m = utf8seq(s, end - p->i);
	if (!m)
		return perr(p, "invalid UTF-8 in string");
	memcpy(d + *k, s, (size_t)m);
	*k += (size_t)m;
	p->i += (size_t)m;
	return 0;
}

/* string := '"' char* '"'
 * Decoded into malloc'd, NUL-terminated *out of *len bytes (a \u0000 makes
 * strlen(*out) < *len). Decoding never lengthens, so the raw length is
 * enough room. */
static int string(Parser *p, char **out, size_t *len)
{
	size_t end, k = 0;
	char *d;

	ws(p);
	if (peek(p) != '"')
		return unexpected(p, "a string");
	for (end = p->i + 1; end < p->n && p->s[end] != '"';)
		end += p->s[end] == '\\' ? 2 : 1;
	if (end >= p->n)
		return perr(p, "unterminated string");
	if (!(d = malloc(end - p->i)))
		return perr(p, "out of memory");
	for (p->i++; p->i < end;)
		if (strchar(p, d, &k, end)) {
			free(d);
			return -1;
		}
	p->i = end + 1;
	d[k] = 0;
	*out = d;
	*len = k;
	return 0;
}

/* digits := [0-9]*   (returns how many) */
static size_t digits(Parser *p)
{
	size_t k = 0;

	for (int c; (c = peek(p)) >= '0' && c <= '9'; k++)
		p->i++;
	return k;
}

/* number := '-'? ( '0' | [1-9][0-9]* ) ( '.' [0-9]+ )? ( [eE] [+-]? [0-9]+ )? */
static int number(Parser *p)
{
	if (peek(p) == '-')
		p->i++;
	if (peek(p) == '0')
		p->i++;
	else if (!digits(p))
		return unexpected(p, "a digit");
	if (peek(p) == '.' && (p->i++, !digits(p)))
		return unexpected(p, "a digit");
	if (peek(p) == 'e' || peek(p) == 'E') {
		p->i++;
		if (peek(p) == '+' || peek(p) == '-')
			p->i++;
		if (!digits(p))
			return unexpected(p, "a digit");
	}
	return 0;
}

/* scalar := string | number | 'true' | 'false' | 'null' */
static int scalar(Parser *p)
{
	static const char *lit[] = {"true", "false", "null"};
	int c = peek(p);
	char *s;
	size_t n;

	if (c == '"') {
		if (string(p, &s, &n))
			return -1;
		free(s);
		return 0;
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		return number(p);
	for (int k = 0; k < 3; k++) {
		n = strlen(lit[k]);
		if (p->n - p->i >= n && !memcmp(p->s + p->i, lit[k], n)) {
			p->i += n;
			return 0;
		}
	}
	return unexpected(p, "a JSON value");
}

/* key := string ':'   (inside a skipped object; the key is dropped) */
static int key(Parser *p)
{
	char *s;
	size_t n;

	if (string(p, &s, &n))
		return -1;
	free(s);
	return expect(p, ':', "':'");
}

/* value := scalar | '[' ( value ( ',' value )* )? ']'
 *        | '{' ( key value ( ',' key value )* )? '}'
 * Skipped without recursion: open[] holds the open brackets, at most
 * MAX_DEPTH; want says whether a value or a ',' / closer comes next. */
static int skip(Parser *p)
{
	char open[MAX_DEPTH];
	int d = 0, want = 1, c;

	for (;;) {
		ws(p);
		c = peek(p);
		if (want && (c == '{' || c == '[')) {
			if (d == MAX_DEPTH)
				return perr(p, "JSON nesting too deep (limit %d)", MAX_DEPTH);
			open[d++] = (char)c;
			p->i++;
			ws(p);
			if (peek(p) == (c == '{' ? '}' : ']'))
				p->i++, d--, want = 0;
			else if (c == '{' && key(p))
				return -1;
		} else if (want) {
			if (scalar(p))
				return -1;
			want = 0;
		} else if (d == 0) {
			return 0;
		} else if (c == (open[d - 1] == '{' ? '}' : ']')) {
			p->i++, d--;
		} else if (c == ',') {
			p->i++, want = 1;
			if (open[d - 1] == '{' && key(p))
				return -1;
		} else {
			return unexpected(p, open[d - 1] == '{' ? "',' or '}'" : "',' or ']'");
		}
	}
}

/* object := '{' ( string ':' MEMBER ( ',' string ':' MEMBER )* )? '}'
 * fn parses each MEMBER, the cursor after the ':', and owns the key. */
static int members(Parser *p, int (*fn)(Parser *, char *, size_t, void *), void *ctx)
{
	char *k;
	size_t klen;
	int c;

	if (expect(p, '{', "'{'"))
		return -1;
	ws(p);
	if (peek(p) == '}')
		return p->i++, 0;
	for (;;) {
		if (string(p, &k, &klen))
			return -1;
		if (expect(p, ':', "':'")) {
			free(k);
			return -1;
		}
		if (fn(p, k, klen, ctx))
			return -1;
		ws(p);
		if ((c = peek(p)) == '}')
			return p->i++, 0;
		if (c != ',')
			return unexpected(p, "',' or '}'");
		p->i++;
	}
}

/* natural := '0' | [1-9][0-9]*   (a JSON number that must be an integer
 * in 0..lim; what names it in messages) */
static int natural(Parser *p, uint64_t lim, uint64_t *v, const char *what)
{
	int c;

	ws(p);
	if ((c = peek(p)) == '-')
		return perr(p, "negative %s", what);
	if (c < '0' || c > '9')
		return unexpected(p, what);
	if (c == '0' && p->i + 1 < p->n && p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9')
		return perr(p, "leading zero in %s", what);
	for (*v = 0; (c = peek(p)) >= '0' && c <= '9'; p->i++) {
		if (*v > (lim - (uint64_t)(c - '0')) / 10)
			return perr(p, "%s too large", what);
		*v = *v * 10 + (uint64_t)(c - '0');
	}
	if (c == '.' || c == 'e' || c == 'E')
		return perr(p, "%s is not an integer", what);
	return 0;
}

/* list := '[' ( natural ( ',' natural )* )? ']'   (at most max of them) */
static int list(Parser *p, uint64_t *v, int max, int *cnt, uint64_t lim,
                const char *what, const char *toomany)
{
	int c;

	*cnt = 0;
	if (expect(p, '[', "'['"))
		return -1;
	ws(p);
	if (peek(p) == ']')
		return p->i++, 0;
	for (;;) {
		if (*cnt == max)
			return perr(p, "%s", toomany);
		if (natural(p, lim, &v[(*cnt)++], what))
			return -1;
		ws(p);
		if ((c = peek(p)) == ']')
			return p->i++, 0;
		if (c != ',')
			return unexpected(p, "',' or ']'");
		p->i++;
	}
}

/* dtype := string   (one of the dtypes[] names) */
static int dtype(Parser *p, Ent *e)
{
	char *v;
	size_t n;

	if (string(p, &v, &n))
		return -1;
	if (strlen(v) != n || !st_dtype_size(v)) {
		if (strlen(v) != n)
			perr(p, "unknown dtype (it contains \\u0000)");
		else
			perr(p, "unknown dtype \"%.16s\"", v);
		free(v);
		return -1;
	}
	memcpy(e->dtype, v, n + 1);
	free(v);
	return 0;
}

/* shape := list   (at most ST_MAXRANK dims, each at most INT64_MAX) */
static int shape(Parser *p, Ent *e)
{
	uint64_t v[ST_MAXRANK];

	if (list(p, v, ST_MAXRANK, &e->rank, INT64_MAX, "dimension",
	         "rank exceeds 8 (ST_MAXRANK)"))
		return -1;
	for (int k = 0; k < e->rank; k++)
		e->dims[k] = (int64_t)v[k];
	return 0;
}

/* offsets := '[' natural ',' natural ']' */
static int offsets(Parser *p, Ent *e)
{
	static const char *two = "data_offsets must have exactly 2 entries";
	uint64_t v[2];
	int n;

	if (list(p, v, 2, &n, UINT64_MAX, "data offset", two))
		return -1;
	if (n != 2)
		return perr(p, "%s", two);
	e->begin = v[0];
	e->end = v[1];
	return 0;
}

/* field := '"dtype"' ':' dtype | '"shape"' ':' shape
 *        | '"data_offsets"' ':' offsets | string ':' value   (skipped) */
static int field(Parser *p, char *k, size_t klen, void *ctx)
{
	static const char *known[] = {"dtype", "shape", "data_offsets"};
	Ent *e = ctx;
	int b = 0;

	while (b < 3 && (strlen(known[b]) != klen || strcmp(known[b], k)))
		b++;
	free(k);
	if (b == 3)
		return skip(p);
	if (e->seen & 1 << b)
		return perr(p, "duplicate key \"%s\"", known[b]);
	e->seen |= 1 << b;
	return b == 0 ? dtype(p, e) : b == 1 ? shape(p, e) : offsets(p, e);
}

/* tensor := '{' field ( ',' field )* '}'   (each known field exactly once) */
static int tensor(Parser *p, Ent *e)
{
	static const char *known[] = {"dtype", "shape", "data_offsets"};

	ws(p);
	if (peek(p) != '{')
		return perr(p, "entry is not a JSON object");
	if (members(p, field, e))
		return -1;
	for (int b = 0; b < 3; b++)
		if (!(e->seen & 1 << b))
			return perr(p, "missing \"%s\"", known[b]);
	return 0;
}

/* Element count, byte size and offsets of a parsed entry. */
static int check(Parser *p, Ent *e)
{
	if (nbytes_of(e->dtype, e->rank, e->dims, &e->nbytes))
		return perr(p, "element count overflow: shape * dtype size exceeds 64 bits");
	if (e->end < e->begin)
		return perr(p, "data_offsets [%" PRIu64 ", %" PRIu64 "]: end before begin",
		            e->begin, e->end);
	if (e->end - e->begin != e->nbytes)
		return perr(p, "data_offsets [%" PRIu64 ", %" PRIu64 "] span %" PRIu64
		            " bytes, but shape * dtype size is %zu",
		            e->begin, e->end, e->end - e->begin, e->nbytes);
	if (e->end > p->buflen)
		return perr(p, "data_offsets [%" PRIu64 ", %" PRIu64 "] out of bounds: "
		            "the byte buffer has %" PRIu64 " bytes", e->begin, e->end, p->buflen);
	return 0;
}

/* metaval := string   (a __metadata__ value; dropped) */
static int metaval(Parser *p, char *k, size_t klen, void *ctx)
{
	char *v;
	size_t n;

	(void)klen, (void)ctx;
	ws(p);
	if (peek(p) != '"') {
		perr(p, "__metadata__ value of \"%.64s\" is not a string", k);
		free(k);
		return -1;
	}
	free(k);
	if (string(p, &v, &n))
		return -1;
	free(v);
	return 0;
}

/* metadata := '{' ( string ':' metaval ( ',' string ':' metaval )* )? '}' */
static int metadata(Parser *p)
{
	if (p->meta++)
		return perr(p, "duplicate key \"__metadata__\"");
	ws(p);
	if (peek(p) != '{')
		return perr(p, "\"__metadata__\" is not a JSON object");
	return members(p, metaval, NULL);
}

/* A new zeroed entry at the end of p->e, or NULL. */
static Ent *newent(Parser *p)
{
	if (p->ne == p->cap) {
		int cap = p->cap ? 2 * p->cap : 16;
		Ent *e = cap > 0 ? realloc(p->e, (size_t)cap * sizeof *e) : NULL;
		if (!e)
			return NULL;
		p->e = e;
		p->cap = cap;
	}
	memset(&p->e[p->ne], 0, sizeof p->e[0]);
	p->e[p->ne].seq = p->ne;
	return &p->e[p->ne++];
}

/* entry := '"__metadata__"' ':' metadata | string ':' tensor */
static int entry(Parser *p, char *k, size_t klen, void *ctx)
{
	Ent *e;

	(void)ctx;
	if (klen == 12 && !strcmp(k, "__metadata__")) {
		free(k);
		return metadata(p);
	}
	if (strlen(k) != klen) {
		free(k);
		return perr(p, "tensor name contains \\u0000");
	}
	if (!(e = newent(p))) {
		free(k);
		return perr(p, "out of memory");
	}
	e->name = k;
	p->cur = k;
	if (tensor(p, e) || check(p, e))
		return -1;
	p->cur = NULL;
	return 0;
}

/* header := ws '{' ( entry ( ',' entry )* )? '}' ws */
static int header(Parser *p)
{
	ws(p);
	if (peek(p) != '{')
		return perr(p, "header is not a JSON object");
	if (members(p, entry, NULL))
		return -1;
	ws(p);
	if (p->i < p->n)
		return perr(p, "trailing garbage after the JSON object");
	return 0;
}

/* Tensor names must be unique. */
static int dupnames(Parser *p)
{
	const char **v;
	int rc;

	if (p->ne < 2)
		return 0;
	if (!(v = malloc((size_t)p->ne * sizeof *v)))
		return fail(p->err, p->errlen, p->file, "out of memory");
	for (int k = 0; k < p->ne; k++)
		v[k] = p->e[k].name;
	rc = dupcheck(v, p->ne, p->file, p->err, p->errlen);
	free(v);
	return rc;
}

static int byoffset(const void *a, const void *b)
{
	const Ent *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sort by offset; the tensors must cover the buffer without holes or overlap. */
static int tile(Parser *p)
{
	uint64_t at = 0;

	if (p->ne > 1)
		qsort(p->e, (size_t)p->ne, sizeof *p->e, byoffset);
	for (int k = 0; k < p->ne; k++) {
		Ent *e = &p->e[k];
		if (e->begin < at)
			return fail(p->err, p->errlen, p->file, "tensor \"%.64s\" overlaps tensor "
			            "\"%.64s\" in the byte buffer", e->name, e[-1].name);
		if (e->begin > at)
			return fail(p->err, p->errlen, p->file, "hole in the byte buffer: bytes [%"
			            PRIu64 ", %" PRIu64 ") before tensor \"%.64s\" belong to no tensor",
			            at, e->begin, e->name);
		at = e->end;
	}
	if (at != p->buflen)
		return fail(p->err, p->errlen, p->file, "byte buffer not fully covered: bytes [%"
		            PRIu64 ", %" PRIu64 ") after the last tensor belong to no tensor",
		            at, p->buflen);
	return 0;
}

/* The next n bytes of the buffer into dst. */
static int load(Src *s, void *dst, size_t n)
{
	if (!n)
		return 0;
	if (s->fp)
		return fread(dst, 1, n, s->fp) == n ? 0 : -1;
	memcpy(dst, s->mem, n);
	s->mem += n;
	return 0;
}

/* Move the sorted entries into *out and copy their bytes from src. */
static int build(Parser *p, Src *src, StFile *out)
{
	StFile f = {0, NULL};

	if (p->ne && !(f.t = calloc((size_t)p->ne, sizeof *f.t)))
		return fail(p->err, p->errlen, p->file, "out of memory");
	for (int k = 0; k < p->ne; k++) {
		Ent *e = &p->e[k];
		StTensor *t = &f.t[f.n++];
		t->name = e->name;
		e->name = NULL;
		memcpy(t->dtype, e->dtype, sizeof t->dtype);
		t->rank = e->rank;
		memcpy(t->dims, e->dims, sizeof t->dims);
		t->nbytes = e->nbytes;
		if (!(t->data = malloc(e->nbytes ? e->nbytes : 1)) || load(src, t->data, e->nbytes)) {
			fail(p->err, p->errlen, p->file, "tensor \"%.64s\": %s", t->name,
			     t->data ? "short read (file changed?)" : "out of memory");
			st_free(&f);
			return -1;
		}
	}
	*out = f;
	return 0;
}

/* Parse and check the n-byte header hdr, then read the buflen-byte buffer
 * from src into *out. */
static int parse(const char *hdr, size_t n, uint64_t buflen, Src *src, const char *file,
                 StFile *out, char *err, size_t errlen)
{
	Parser p = {.s = hdr, .n = n, .buflen = buflen, .file = file, .err = err,
	            .errlen = errlen};
	int rc = header(&p);

	if (!rc)
		rc = dupnames(&p);
	if (!rc)
		rc = tile(&p);
	if (!rc)
		rc = build(&p, src, out);
	for (int k = 0; k < p.ne; k++)
		free(p.e[k].name);
	free(p.e);
	return rc;
}

/* Check the header length N in the first 8 of total bytes. */
static int prelude(const unsigned char *b, uint64_t total, uint64_t *n, const char *file,
                   char *err, size_t errlen)
{
	if (total < 8)
		return fail(err, errlen, file, "file too short: %" PRIu64 " bytes, need 8 for "
		            "the header length", total);
	*n = 0;
	for (int k = 7; k >= 0; k--)
		*n = *n << 8 | b[k];
	if (*n > MAX_HEADER)
		return fail(err, errlen, file, "header too large: length %" PRIu64 " exceeds "
		            "the %u-byte limit", *n, MAX_HEADER);
	if (*n > total - 8)
		return fail(err, errlen, file, "header length %" PRIu64 " exceeds the file size "
		            "(%" PRIu64 " bytes after the length)", *n, total - 8);
	return 0;
}

int st_read_mem(const void *buf, size_t len, StFile *out, char *err, size_t errlen)
{
	const unsigned char *b = buf;
	uint64_t n;
	Src src = {NULL, NULL};

	if (!out)
		return fail(err, errlen, MEMNAME, "no output StFile");
	*out = (StFile){0, NULL};
	if (!buf && len)
		return fail(err, errlen, MEMNAME, "buffer is NULL");
	if (prelude(b, len, &n, MEMNAME, err, errlen))
		return -1;
	src.mem = b + 8 + n;
	return parse((const char *)b + 8, (size_t)n, len - 8 - n, &src, MEMNAME, out, err,
	             errlen);
}

/* st_read on an open file. */
static int readfp(FILE *fp, const char *path, StFile *out, char *err, size_t errlen)
{
	struct stat sb;
	unsigned char b8[8];
	uint64_t size, n;
	Src src = {NULL, fp};
	char *hdr;
	int rc;

	if (fstat(fileno(fp), &sb) || !S_ISREG(sb.st_mode))
		return fail(err, errlen, path, "not a regular file");
	size = (uint64_t)sb.st_size;
	if (size >= 8 && fread(b8, 1, 8, fp) != 8)
		return fail(err, errlen, path, "read error");
	if (prelude(b8, size, &n, path, err, errlen))
		return -1;
	if (!(hdr = malloc(n ? (size_t)n : 1)))
		return fail(err, errlen, path, "out of memory");
	if (fread(hdr, 1, (size_t)n, fp) != n)
		rc = fail(err, errlen, path, "short read in the header (file changed?)");
	else
		rc = parse(hdr, (size_t)n, size - 8 - n, &src, path, out, err, errlen);
	free(hdr);
	return rc;
}

int st_read(const char *path, StFile *out, char *err, size_t errlen)
{
	FILE *fp;
	int rc;

	if (!out)
		return fail(err, errlen, path ? path : "(null)", "no output StFile");
	*out = (StFile){0, NULL};
	if (!path)
		return fail(err, errlen, "(null)", "no path");
	if (!(fp = fopen(path, "rb")))
		return fail(err, errlen, path, "cannot open: %s", strerror(errno));
	rc = readfp(fp, path, out, err, errlen);
	fclose(fp);
	return rc;
}

void st_free(StFile *f)
{
	if (!f)
		return;
	for (int k = 0; k < f->n; k++) {
		free(f->t[k].name);
		free(f->t[k].data);
	}
	free(f->t);
	f->n = 0;
	f->t = NULL;
}

const StTensor *st_find(const StFile *f, const char *name)
{
	if (!f || !name)
		return NULL;
	for (int k = 0; k < f->n; k++)
		if (!strcmp(f->t[k].name, name))
			return &f->t[k];
	return NULL;
}

/* ---- writer ---- */

/* A growable byte buffer; oom is sticky. */
typedef struct {
	char *p;       /* bytes, malloc'd */
	size_t n, cap; /* used, allocated */
	int oom;       /* an allocation failed */
} Buf;

static void bputn(Buf *b, const char *s, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	char *q;

	if (b->oom)
		return;
	while (cap < b->n + n)
		cap *= 2;
	if (cap != b->cap) {
		if (!(q = realloc(b->p, cap))) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

static void bput(Buf *b, const char *s)
{
	bputn(b, s, strlen(s));
}

/* s as a JSON string, escaped as serde_json does: \" \\ \b \f \n \r \t,
 * other control characters as \u00xx, everything else verbatim. */
static void bname(Buf *b, const char *s)
{
	static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
	char esc[8];

	bput(b, "\"");
	for (; *s; s++) {
		const char *hit = strchr(from, *s);
		if (hit)
			esc[0] = '\\', esc[1] = to[hit - from], esc[2] = 0;
		else if ((unsigned char)*s < 0x20)
			snprintf(esc, sizeof esc, "\\u%04x", (unsigned)(unsigned char)*s);
		else
			esc[0] = *s, esc[1] = 0;
		bput(b, esc);
	}
	bput(b, "\"");
}

/* The header, {"name":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},...},
 * padded with spaces to a multiple of 8. */
static int whead(Buf *b, const StTensor *ts, int n)
{
	uint64_t off = 0;
	char num[96];

	bput(b, "{");
	for (int i = 0; i < n; i++) {
		const StTensor *t = &ts[i];
		bput(b, i ? "," : "");
		bname(b, t->name);
		bput(b, ":{\"dtype\":\"");
		bput(b, t->dtype);
		bput(b, "\",\"shape\":[");
		for (int k = 0; k < t->rank; k++) {
			snprintf(num, sizeof num, "%s%" PRId64, k ? "," : "", t->dims[k]);
			bput(b, num);
		}
		snprintf(num, sizeof num, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off,
		         off + (uint64_t)t->nbytes);
		bput(b, num);
		off += t->nbytes;
	}
	bput(b, "}");
	while (b->n % 8)
		bput(b, " ");
	return b->oom ? -1 : 0;
}

/* s is valid UTF-8. */
static int utf8ok(const char *s)
{
	size_t n = strlen(s);

	for (int m; n; s += m, n -= (size_t)m)
		if (!(m = utf8seq((const unsigned char *)s, n)))
			return 0;
	return 1;
}

/* The preconditions of st_write on tensor i. */
static int wcheck(const StTensor *t, int i, const char *path, char *err, size_t errlen)
{
	size_t nb;

	if (!t->name)
		return fail(err, errlen, path, "tensor %d: name is NULL", i);
	if (!utf8ok(t->name))
		return fail(err, errlen, path, "tensor %d: name is not valid UTF-8", i);
	if (!strcmp(t->name, "__metadata__"))
		return fail(err, errlen, path, "tensor %d: the name \"__metadata__\" is reserved", i);
	if (!memchr(t->dtype, 0, sizeof t->dtype) || !st_dtype_size(t->dtype))
		return fail(err, errlen, path, "tensor \"%.64s\": unknown dtype \"%.11s\"", t->name,
		            t->dtype);
	if (t->rank < 0 || t->rank > ST_MAXRANK)
		return fail(err, errlen, path, "tensor \"%.64s\": rank %d not in 0..8", t->name,
		            t->rank);
	for (int k = 0; k < t->rank; k++)
		if (t->dims[k] < 0)
			return fail(err, errlen, path, "tensor \"%.64s\": negative dimension %" PRId64,
			            t->name, t->dims[k]);
	if (nbytes_of(t->dtype, t->rank, t->dims, &nb))
		return fail(err, errlen, path, "tensor \"%.64s\": element count overflow", t->name);
	if (nb != t->nbytes)
		return fail(err, errlen, path, "tensor \"%.64s\": nbytes is %zu, but shape * dtype "
		            "size is %zu", t->name, t->nbytes, nb);
	if (nb && !t->data)
		return fail(err, errlen, path, "tensor \"%.64s\": data is NULL", t->name);
	return 0;
}

/* Every tensor passes wcheck, and the names are unique. */
static int wcheckall(const StTensor *ts, int n, const char *path, char *err, size_t errlen)
{
	const char **v;
	int rc;

	for (int i = 0; i < n; i++)
		if (wcheck(&ts[i], i, path, err, errlen))
			return -1;
	if (n < 2)
		return 0;
	if (!(v = malloc((size_t)n * sizeof *v)))
		return fail(err, errlen, path, "out of memory");
	for (int i = 0; i < n; i++)
		v[i] = ts[i].name;
	rc = dupcheck(v, n, path, err, errlen);
	free(v);
	return rc;
}

/* Length, header, data; 0 or -1 with errno set. */
static int wfile(FILE *f, const Buf *h, const StTensor *ts, int n)
{
	unsigned char le[8];

	for (int k = 0; k < 8; k++)
		le[k] = (unsigned char)((uint64_t)h->n >> 8 * k);
	if (fwrite(le, 1, 8, f) != 8 || fwrite(h->p, 1, h->n, f) != h->n)
		return -1;
	for (int i = 0; i < n; i++)
		if (ts[i].nbytes && fwrite(ts[i].data, 1, ts[i].nbytes, f) != ts[i].nbytes)
			return -1;
	return 0;
}

int st_write(const char *path, const StTensor *ts, int n, char *err, size_t errlen)
{
	Buf h = {NULL, 0, 0, 0};
	FILE *f;
	int rc, e;

	if (!path)
		return fail(err, errlen, "(null)", "no path");
	if (n < 0 || (n && !ts))
		return fail(err, errlen, path, "bad tensor list (n = %d)", n);
	if (wcheckall(ts, n, path, err, errlen))
		return -1;
	if (whead(&h, ts, n)) {
		free(h.p);
		return fail(err, errlen, path, "out of memory");
	}
	if (!(f = fopen(path, "wb"))) {
		free(h.p);
		return fail(err, errlen, path, "cannot create: %s", strerror(errno));
	}
	errno = 0;
	rc = wfile(f, &h, ts, n);
	e = errno;
	if (fclose(f) && !rc)
		rc = -1, e = errno;
	free(h.p);
	if (!rc)
		return 0;
	remove(path);
	return fail(err, errlen, path, "write failed: %s", e ? strerror(e) : "short write");
}
