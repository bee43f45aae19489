/* safetensors.c — reader and writer for .safetensors files.
 *
 * Reading: the 8-byte header length is checked against the file size, then
 * jansson parses the JSON header (JSON_REJECT_DUPLICATES: a name or a key
 * given twice is an error; integers are 64-bit, json_int_t being long long;
 * nesting is bounded by jansson's parser depth, so no input exhausts the
 * stack). Each entry is checked (dtype, rank, dims, element-count overflow,
 * offsets against shape and buffer), then the entries, sorted by offset,
 * must tile the byte buffer exactly. st_read maps the file (mmap, private,
 * so the file itself is never written) and the tensors point into the map;
 * st_read_mem copies the buffer once; st_read_header reads only the header
 * and checks everything that does not need the buffer.
 *
 * Writing: check every tensor, build the header in a growable buffer in the
 * Python library's layout (space-padded to a multiple of 8), then write the
 * length, the header and the data; a failed write removes the file.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fileno, fstat, mmap */
#endif
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "utf8.h"

#define MAX_HEADER 100000000u /* header length limit, as in the Python library */
#define MEMNAME    "<memory>" /* the file name st_read_mem reports */

#if defined(__GNUC__)
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF(f, a)
#endif

static const struct {
	const char *name; /* safetensors spelling */
	int size;         /* bytes per element */
} dtypes[] = {
#define DTYPE(id, ir, thunder, thunder_long, torch, st, bits, kind) { st, (bits) / 8 },
#include "dtypes.def"
#undef DTYPE
};

int
st_dtype_size(const char *dtype)
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
static int
fail(char *err, size_t errlen, const char *file, const char *fmt, ...)
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

/* product(dims) * size of dtype into *out; -1 if it overflows. */
static int
nbytes_of(const char *dtype, int rank, const int64_t *dims, size_t *out)
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

static int
byname(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sort the n names in v and fail naming the first one that repeats. */
static int
dupcheck(const char **v, int n, const char *file, char *err, size_t errlen)
{
	if (n > 1)
		qsort(v, (size_t)n, sizeof *v, byname);
	for (int k = 1; k < n; k++)
		if (!strcmp(v[k - 1], v[k]))
			return fail(err, errlen, file, "duplicate tensor name \"%.64s\"", v[k]);
	return 0;
}

/* ---- reader ---- */

/* One header entry while it is checked. */
typedef struct {
	const char *name;         /* jansson's key: lives as long as the JSON tree */
	char dtype[12];           /* known safetensors dtype */
	int rank;                 /* number of dims */
	int64_t dims[ST_MAXRANK]; /* shape */
	size_t nbytes;            /* product(dims) * dtype size */
	uint64_t begin, end;      /* data_offsets */
	int seq;                  /* position in the header: sort tie-break */
} Ent;

/* What the checks need to know, and where their messages go. */
typedef struct {
	const char *file; /* file name for messages */
	char *err;        /* message buffer */
	size_t errlen;    /* its size */
	uint64_t buflen;  /* bytes in the buffer after the header */
	int header_only;  /* the buffer may be absent: skip the checks against it */
	json_t *root;     /* the parsed header */
	Ent *e;           /* its entries, malloc'd */
	int ne;           /* their number */
} Reader;

/* Fail on the tensor called name: "FILE: tensor "x": message". */
PRINTF(3, 4)
static int
terr(Reader *r, const char *name, const char *fmt, ...)
{
	char m[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	return fail(r->err, r->errlen, r->file, "tensor \"%.64s\": %s", name, m);
}

/* A JSON integer in 0..INT64_MAX (what names it in messages). */
static int
natural(Reader *r, const char *name, json_t *v, uint64_t *out, const char *what)
{
	if (!json_is_integer(v))
		return terr(r, name, "%s is not an integer", what);
	if (json_integer_value(v) < 0)
		return terr(r, name, "negative %s", what);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* "dtype": one of the dtypes[] names */
static int
dtype(Reader *r, const char *name, json_t *v, Ent *e)
{
	const char *s = json_string_value(v);

	if (!s)
		return terr(r, name, "dtype is not a string");
	if (!st_dtype_size(s))
		return terr(r, name, "unknown dtype \"%.16s\"", s);
	snprintf(e->dtype, sizeof e->dtype, "%s", s);
	return 0;
}

/* "shape": [d0, d1, ...], at most ST_MAXRANK integers >= 0 */
static int
shape(Reader *r, const char *name, json_t *v, Ent *e)
{
	uint64_t d;

	if (!json_is_array(v))
		return terr(r, name, "shape is not a JSON array");
	if (json_array_size(v) > ST_MAXRANK)
		return terr(r, name, "rank exceeds 8 (ST_MAXRANK)");
	e->rank = (int)json_array_size(v);
	for (int k = 0; k < e->rank; k++) {
		if (natural(r, name, json_array_get(v, (size_t)k), &d, "dimension"))
			return -1;
		e->dims[k] = (int64_t)d;
	}
	return 0;
}

/* "data_offsets": [begin, end] */
static int
offsets(Reader *r, const char *name, json_t *v, Ent *e)
{
	if (!json_is_array(v))
		return terr(r, name, "data_offsets is not a JSON array");
	if (json_array_size(v) != 2)
		return terr(r, name, "data_offsets must have exactly 2 entries");
	if (natural(r, name, json_array_get(v, 0), &e->begin, "data offset") ||
		natural(r, name, json_array_get(v, 1), &e->end, "data offset"))
		return -1;
	return 0;
}

/* Element count, byte size and offsets of a parsed entry. */
static int
check(Reader *r, Ent *e)
{
	if (nbytes_of(e->dtype, e->rank, e->dims, &e->nbytes))
		return terr(r, e->name, "element count overflow: shape * dtype size exceeds 64 bits");
	if (e->end < e->begin)
		return terr(r, e->name, "data_offsets [%" PRIu64 ", %" PRIu64 "]: end before begin", e->begin, e->end);
	if (e->end - e->begin != e->nbytes)
		return terr(r, e->name,
			"data_offsets [%" PRIu64 ", %" PRIu64 "] span %" PRIu64 " bytes, but shape * dtype size is %zu",
			e->begin, e->end, e->end - e->begin, e->nbytes);
	if (!r->header_only && e->end > r->buflen)
		return terr(r, e->name,
			"data_offsets [%" PRIu64 ", %" PRIu64 "] out of bounds: "
			"the byte buffer has %" PRIu64 " bytes",
			e->begin, e->end, r->buflen);
	return 0;
}

/* tensor := {"dtype": ..., "shape": ..., "data_offsets": ..., other keys ignored} */
static int
tensor(Reader *r, const char *name, json_t *v, Ent *e)
{
	static const char *known[] = { "dtype", "shape", "data_offsets" };
	json_t *f[3];

	if (!json_is_object(v))
		return terr(r, name, "entry is not a JSON object");
	for (int k = 0; k < 3; k++)
		if (!(f[k] = json_object_get(v, known[k])))
			return terr(r, name, "missing \"%s\"", known[k]);
	e->name = name;
	if (dtype(r, name, f[0], e) || shape(r, name, f[1], e) || offsets(r, name, f[2], e))
		return -1;
	return check(r, e);
}

/* metadata := {"key": "string value", ...} */
static int
metadata(Reader *r, json_t *v)
{
	const char *k;
	json_t *s;

	if (!json_is_object(v))
		return fail(r->err, r->errlen, r->file, "\"__metadata__\" is not a JSON object");
	json_object_foreach(v, k, s) if (!json_is_string(s)) return fail(r->err, r->errlen, r->file,
		"__metadata__ value of \"%.64s\" is "
		"not a string",
		k);
	return 0;
}

/* header := {"__metadata__": metadata, "name": tensor, ...} */
static int
entries(Reader *r)
{
	const char *k;
	json_t *v;

	if (!json_is_object(r->root))
		return fail(r->err, r->errlen, r->file, "header is not a JSON object");
	if (!(r->e = calloc(json_object_size(r->root) + 1, sizeof *r->e)))
		return fail(r->err, r->errlen, r->file, "out of memory");
	json_object_foreach(r->root, k, v)
	{
		if (!strcmp(k, "__metadata__")) {
			if (metadata(r, v))
				return -1;
			continue;
		}
		r->e[r->ne].seq = r->ne;
		if (tensor(r, k, v, &r->e[r->ne]))
			return -1;
		r->ne++;
	}
	return 0;
}

static int
byoffset(const void *a, const void *b)
{
	const Ent *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sort by offset; the tensors must cover the buffer without holes or
 * overlap (up to the last tensor only, when the buffer may be absent). */
static int
tile(Reader *r)
{
	uint64_t at = 0;

	if (r->ne > 1)
		qsort(r->e, (size_t)r->ne, sizeof *r->e, byoffset);
	for (int k = 0; k < r->ne; k++) {
		Ent *e = &r->e[k];
		if (e->begin < at)
			return fail(r->err, r->errlen, r->file,
				"tensor \"%.64s\" overlaps tensor "
				"\"%.64s\" in the byte buffer",
				e->name, e[-1].name);
		if (e->begin > at)
			return fail(r->err, r->errlen, r->file,
				"hole in the byte buffer: bytes [%" PRIu64 ", %" PRIu64
				") before tensor \"%.64s\" belong to no tensor",
				at, e->begin, e->name);
		at = e->end;
	}
	if (!r->header_only && at != r->buflen)
		return fail(r->err, r->errlen, r->file,
			"byte buffer not fully covered: bytes [%" PRIu64 ", %" PRIu64
			") after the last tensor belong to no tensor",
			at, r->buflen);
	return 0;
}

/* Parse and check the n-byte header hdr into r->root and r->e. */
static int
parse(Reader *r, const char *hdr, size_t n)
{
	json_error_t je;

	if (!(r->root = json_loadb(hdr, n, JSON_REJECT_DUPLICATES, &je)))
		return fail(r->err, r->errlen, r->file, "byte %zu: invalid JSON header: %s", (size_t)je.position + 8,
			je.text);
	return entries(r) || tile(r) ? -1 : 0;
}

/* The checked entries as *out; tensor k's data at data + its offset (NULL
 * data: no data). */
static int
build(Reader *r, unsigned char *data, StFile *out)
{
	StFile f = { 0 };

	if (r->ne && !(f.t = calloc((size_t)r->ne, sizeof *f.t)))
		return fail(r->err, r->errlen, r->file, "out of memory");
	for (int k = 0; k < r->ne; k++) {
		Ent *e = &r->e[k];
		StTensor *t = &f.t[f.n];
		if (!(t->name = strdup(e->name))) {
			st_free(&f);
			return fail(r->err, r->errlen, r->file, "out of memory");
		}
		f.n++;
		memcpy(t->dtype, e->dtype, sizeof t->dtype);
		t->rank = e->rank;
		memcpy(t->dims, e->dims, sizeof t->dims);
		t->nbytes = e->nbytes;
		t->data = data ? data + e->begin : NULL;
	}
	*out = f;
	return 0;
}

static void
reader_free(Reader *r)
{
	json_decref(r->root);
	free(r->e);
}

/* Check the header length N in the first 8 of total bytes. */
static int
prelude(const unsigned char *b, uint64_t total, uint64_t *n, const char *file, char *err, size_t errlen)
{
	if (total < 8)
		return fail(err, errlen, file,
			"file too short: %" PRIu64 " bytes, need 8 for "
			"the header length",
			total);
	*n = 0;
	for (int k = 7; k >= 0; k--)
		*n = *n << 8 | b[k];
	if (*n > MAX_HEADER)
		return fail(err, errlen, file,
			"header too large: length %" PRIu64 " exceeds "
			"the %u-byte limit",
			*n, MAX_HEADER);
	if (*n > total - 8)
		return fail(err, errlen, file,
			"header length %" PRIu64 " exceeds the file size "
			"(%" PRIu64 " bytes after the length)",
			*n, total - 8);
	return 0;
}

/* Read the len-byte image b. The tensors point into its buffer, or with
 * copy into a malloc'd copy of the buffer that *out then owns (0-byte
 * tensors of an empty buffer keep pointing into b: never dereferenced). */
static int
image(const unsigned char *b, size_t len, int copy, const char *file, StFile *out, char *err, size_t errlen)
{
	Reader r = { .file = file, .err = err, .errlen = errlen };
	unsigned char *data, *dup = NULL;
	uint64_t n;
	int rc;

	if (prelude(b, len, &n, file, err, errlen))
		return -1;
	r.buflen = len - 8 - n;
	data = (unsigned char *)b + 8 + n;
	rc = parse(&r, (const char *)b + 8, (size_t)n);
	if (!rc && copy && r.buflen) { /* an empty buffer: nothing to copy, nothing to free */
		if (!(dup = malloc((size_t)r.buflen)))
			rc = fail(err, errlen, file, "out of memory");
		else
			data = memcpy(dup, data, (size_t)r.buflen);
	}
	if (!rc)
		rc = build(&r, data, out);
	if (!rc && copy)
		out->base = dup, out->baselen = (size_t)r.buflen;
	else
		free(dup);
	reader_free(&r);
	return rc;
}

int
st_read_mem(const void *buf, size_t len, StFile *out, char *err, size_t errlen)
{
	if (!out)
		return fail(err, errlen, MEMNAME, "no output StFile");
	*out = (StFile){ 0 };
	if (!buf && len)
		return fail(err, errlen, MEMNAME, "buffer is NULL");
	return image(buf, len, 1, MEMNAME, out, err, errlen);
}

int
st_read(const char *path, StFile *out, char *err, size_t errlen)
{
	struct stat sb;
	void *map;
	size_t size;
	int fd, rc;

	if (!out)
		return fail(err, errlen, path ? path : "(null)", "no output StFile");
	*out = (StFile){ 0 };
	if (!path)
		return fail(err, errlen, "(null)", "no path");
	if ((fd = open(path, O_RDONLY)) < 0)
		return fail(err, errlen, path, "cannot open: %s", strerror(errno));
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return fail(err, errlen, path, "not a regular file");
	}
	size = (size_t)sb.st_size;
	if (size < 8) {
		close(fd);
		return fail(err, errlen, path,
			"file too short: %zu bytes, need 8 for the header "
			"length",
			size);
	}
	/* private and writable: callers may scribble on tensor data, never on the file */
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return fail(err, errlen, path, "cannot map: %s", strerror(errno));
	if ((rc = image(map, size, 0, path, out, err, errlen)) == 0) {
		out->base = map;
		out->baselen = size;
		out->mapped = 1;
	} else {
		munmap(map, size);
	}
	return rc;
}

/* st_read_header on an open file of size bytes. */
static int
headerfp(FILE *fp, uint64_t size, const char *path, StFile *out, char *err, size_t errlen)
{
	Reader r = { .file = path, .err = err, .errlen = errlen, .header_only = 1 };
	unsigned char b8[8];
	uint64_t n;
	char *hdr;
	int rc;

	if (size >= 8 && fread(b8, 1, 8, fp) != 8)
		return fail(err, errlen, path, "read error");
	if (prelude(b8, size, &n, path, err, errlen))
		return -1;
	if (!(hdr = malloc(n ? (size_t)n : 1)))
		return fail(err, errlen, path, "out of memory");
	if (fread(hdr, 1, (size_t)n, fp) != n)
		rc = fail(err, errlen, path, "short read in the header (file changed?)");
	else if ((rc = parse(&r, hdr, (size_t)n)) == 0)
		rc = build(&r, NULL, out);
	reader_free(&r);
	free(hdr);
	return rc;
}

int
st_read_header(const char *path, StFile *out, char *err, size_t errlen)
{
	struct stat sb;
	FILE *fp;
	int rc;

	if (!out)
		return fail(err, errlen, path ? path : "(null)", "no output StFile");
	*out = (StFile){ 0 };
	if (!path)
		return fail(err, errlen, "(null)", "no path");
	if (!(fp = fopen(path, "rb")))
		return fail(err, errlen, path, "cannot open: %s", strerror(errno));
	if (fstat(fileno(fp), &sb) || !S_ISREG(sb.st_mode))
		rc = fail(err, errlen, path, "not a regular file");
	else
		rc = headerfp(fp, (uint64_t)sb.st_size, path, out, err, errlen);
	fclose(fp);
	return rc;
}

void
st_free(StFile *f)
{
	if (!f)
		return;
	for (int k = 0; k < f->n; k++)
		free(f->t[k].name);
	free(f->t);
	if (f->mapped)
		munmap(f->base, f->baselen);
	else
		free(f->base);
	*f = (StFile){ 0 };
}

const StTensor *
st_find(const StFile *f, const char *name)
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

static void
bputn(Buf *b, const char *s, size_t n)
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

static void
bput(Buf *b, const char *s)
{
	bputn(b, s, strlen(s));
}

/* s as a JSON string, escaped as serde_json does: \" \\ \b \f \n \r \t,
 * other control characters as \u00xx, everything else verbatim. */
static void
bname(Buf *b, const char *s)
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
static int
whead(Buf *b, const StTensor *ts, int n)
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
static int
utf8ok(const char *s)
{
	size_t n = strlen(s);

	for (size_t m; n; s += m, n -= m)
		if (!(m = utf8_seq_len((const unsigned char *)s, n)))
			return 0;
	return 1;
}

/* The preconditions of st_write on tensor i. */
static int
wcheck(const StTensor *t, int i, const char *path, char *err, size_t errlen)
{
	size_t nb;

	if (!t->name)
		return fail(err, errlen, path, "tensor %d: name is NULL", i);
	if (!utf8ok(t->name))
		return fail(err, errlen, path, "tensor %d: name is not valid UTF-8", i);
	if (!strcmp(t->name, "__metadata__"))
		return fail(err, errlen, path, "tensor %d: the name \"__metadata__\" is reserved", i);
	if (!memchr(t->dtype, 0, sizeof t->dtype) || !st_dtype_size(t->dtype))
		return fail(err, errlen, path, "tensor \"%.64s\": unknown dtype \"%.11s\"", t->name, t->dtype);
	if (t->rank < 0 || t->rank > ST_MAXRANK)
		return fail(err, errlen, path, "tensor \"%.64s\": rank %d not in 0..8", t->name, t->rank);
	for (int k = 0; k < t->rank; k++)
		if (t->dims[k] < 0)
			return fail(err, errlen, path, "tensor \"%.64s\": negative dimension %" PRId64, t->name,
				t->dims[k]);
	if (nbytes_of(t->dtype, t->rank, t->dims, &nb))
		return fail(err, errlen, path, "tensor \"%.64s\": element count overflow", t->name);
	if (nb != t->nbytes)
		return fail(err, errlen, path,
			"tensor \"%.64s\": nbytes is %zu, but shape * dtype "
			"size is %zu",
			t->name, t->nbytes, nb);
	if (nb && !t->data)
		return fail(err, errlen, path, "tensor \"%.64s\": data is NULL", t->name);
	return 0;
}

/* Every tensor passes wcheck, and the names are unique. */
static int
wcheckall(const StTensor *ts, int n, const char *path, char *err, size_t errlen)
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
static int
wfile(FILE *f, const Buf *h, const StTensor *ts, int n)
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

/* Check the tensors and build the header into *h; 0 or -1 with a message. */
static int
prepare(Buf *h, const StTensor *ts, int n, const char *name, char *err, size_t errlen)
{
	if (n < 0 || (n && !ts))
		return fail(err, errlen, name, "bad tensor list (n = %d)", n);
	if (wcheckall(ts, n, name, err, errlen))
		return -1;
	if (whead(h, ts, n)) {
		free(h->p);
		return fail(err, errlen, name, "out of memory");
	}
	return 0;
}

int
st_write(const char *path, const StTensor *ts, int n, char *err, size_t errlen)
{
	Buf h = { NULL, 0, 0, 0 };
	FILE *f;
	int rc, e;

	if (!path)
		return fail(err, errlen, "(null)", "no path");
	if (prepare(&h, ts, n, path, err, errlen))
		return -1;
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

int
st_fwrite(FILE *f, const char *name, const StTensor *ts, int n, char *err, size_t errlen)
{
	Buf h = { NULL, 0, 0, 0 };
	int rc, e;

	if (!name)
		name = "(stream)";
	if (!f)
		return fail(err, errlen, name, "no stream");
	if (prepare(&h, ts, n, name, err, errlen))
		return -1;
	errno = 0;
	rc = wfile(f, &h, ts, n);
	if (!rc && fflush(f))
		rc = -1;
	e = errno;
	free(h.p);
	if (!rc)
		return 0;
	return fail(err, errlen, name, "write failed: %s", e ? strerror(e) : "short write");
}
