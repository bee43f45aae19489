/* test_safetensors.c — criterion tests for safetensors/safetensors.{h,c}.
 *
 * Round trips every dtype at ranks 0..8, 0-element tensors and names that
 * need escaping through st_write / st_read / st_read_mem; checks st_write
 * against a byte-exact file in the Python library's layout; feeds a corpus
 * of malformed files (built here as byte arrays) to st_read_mem, each
 * expecting -1 and a substring of the message (jansson's for JSON syntax,
 * ours for the format's rules); sweeps every truncation and many byte flips
 * of a valid file; reads headers alone (st_read_header) of whole and cut
 * files; and checks that st_read's map never writes the file. Inputs are copied into buffers of
 * their exact size so AddressSanitizer catches any read past the end.
 * Files are written under /tmp with mkstemp names and removed.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkstemp, strdup, close */
#endif
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h> /* JSON_PARSER_MAX_DEPTH */

#include "safetensors.h"

#define ERRLEN 512

static const struct {
	const char *name;
	int size;
} all[] = {
	{ "BOOL", 1 },
	{ "U8", 1 },
	{ "I8", 1 },
	{ "I16", 2 },
	{ "I32", 4 },
	{ "I64", 8 },
	{ "F16", 2 },
	{ "BF16", 2 },
	{ "F32", 4 },
	{ "F64", 8 },
	{ "F8_E4M3", 1 },
	{ "F8_E5M2", 1 },
};
#define NDTYPES ((int)(sizeof all / sizeof all[0]))

/* ---- helpers ---- */

/* A fresh, empty file under /tmp; the caller removes it. */
static void
tmppath(char path[64])
{
	int fd;

	snprintf(path, 64, "/tmp/st_test_XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp failed");
	close(fd);
}

static unsigned char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b;
	long n;

	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	cr_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void
spit(const char *path, const void *b, size_t len)
{
	FILE *f = fopen(path, "wb");

	cr_assert(f, "cannot create %s", path);
	cr_assert(fwrite(b, 1, len, f) == len);
	fclose(f);
}

static void
le64(unsigned char *b, uint64_t v)
{
	for (int k = 0; k < 8; k++)
		b[k] = (unsigned char)(v >> 8 * k);
}

/* A file image: the 8-byte length of hdr, hdr, then datalen pattern bytes. */
static unsigned char *
image(const char *hdr, size_t hlen, size_t datalen, size_t *len)
{
	unsigned char *b = malloc(8 + hlen + datalen);

	le64(b, hlen);
	memcpy(b + 8, hdr, hlen);
	for (size_t k = 0; k < datalen; k++)
		b[8 + hlen + k] = (unsigned char)(k * 7 + 1);
	*len = 8 + hlen + datalen;
	return b;
}

/* st_read_mem on a copy of the first len bytes of b in a buffer of exactly
 * len bytes, so that any read past the end trips AddressSanitizer. */
static int
readexact(const unsigned char *b, size_t len, StFile *f, char *err)
{
	unsigned char *c = malloc(len ? len : 1);
	int rc;

	memcpy(c, b, len);
	rc = st_read_mem(len ? c : NULL, len, f, err, ERRLEN);
	free(c);
	return rc;
}

/* A failed read: -1, *f left empty, a one-line "FILE: reason" message. */
static void
failed(int rc, const StFile *f, const char *err, const char *file)
{
	cr_expect_eq(rc, -1);
	cr_expect(f->n == 0 && f->t == NULL, "failed read left %d tensors", f->n);
	cr_expect(!strncmp(err, file, strlen(file)) && err[strlen(file)] == ':',
		"message \"%s\" does not start with \"%s:\"", err, file);
	cr_expect(strchr(err, '\n') == NULL, "message has a newline: \"%s\"", err);
}

/* A tensor of the given shape whose bytes are a pattern seeded by seed. */
static StTensor
mk(const char *name, const char *dtype, int rank, const int64_t *dims, unsigned seed)
{
	StTensor t;
	size_t n = (size_t)st_dtype_size(dtype);

	memset(&t, 0, sizeof t);
	t.name = strdup(name);
	snprintf(t.dtype, sizeof t.dtype, "%s", dtype);
	t.rank = rank;
	for (int k = 0; k < rank; k++)
		n *= (size_t)(t.dims[k] = dims[k]);
	t.nbytes = n;
	t.data = malloc(n ? n : 1);
	for (size_t k = 0; k < n; k++)
		((unsigned char *)t.data)[k] = (unsigned char)(k * 31 + seed * 17 + 5);
	return t;
}

static void
freeall(StTensor *ts, int n)
{
	for (int i = 0; i < n; i++) {
		free(ts[i].name);
		free(ts[i].data);
	}
}

/* got equals want in every field; prints the first mismatching bytes. */
static void
same(const StTensor *want, const StTensor *got)
{
	int bad = 0;

	cr_expect_str_eq(got->name, want->name);
	cr_expect_str_eq(got->dtype, want->dtype, "tensor %s", want->name);
	cr_expect_eq(got->rank, want->rank, "tensor %s: rank", want->name);
	for (int k = 0; k < ST_MAXRANK; k++)
		cr_expect_eq(got->dims[k], k < want->rank ? want->dims[k] : 0, "tensor %s: dims[%d]", want->name, k);
	cr_expect_eq(got->nbytes, want->nbytes, "tensor %s: nbytes", want->name);
	cr_expect(got->data != NULL, "tensor %s: data is NULL", want->name);
	if (got->nbytes != want->nbytes || !got->data)
		return;
	for (size_t k = 0; k < want->nbytes && bad < 5; k++) {
		unsigned char w = ((unsigned char *)want->data)[k];
		unsigned char g = ((unsigned char *)got->data)[k];
		if (w != g) {
			cr_expect_fail("tensor %s: byte %zu: expected 0x%02x, got 0x%02x", want->name, k, w, g);
			bad++;
		}
	}
}

/* Write ts to a temporary file, read it back both ways, compare in order. */
static void
roundtrip(const StTensor *ts, int n)
{
	char path[64], err[ERRLEN] = "";
	StFile f, g;
	unsigned char *b;
	size_t len;

	tmppath(path);
	cr_assert_eq(st_write(path, ts, n, err, sizeof err), 0, "st_write: %s", err);
	cr_assert_eq(st_read(path, &f, err, sizeof err), 0, "st_read: %s", err);
	b = slurp(path, &len);
	remove(path);
	cr_assert_eq(readexact(b, len, &g, err), 0, "st_read_mem: %s", err);
	cr_assert_eq(f.n, n);
	cr_assert_eq(g.n, n);
	for (int i = 0; i < n; i++) {
		same(&ts[i], &f.t[i]);
		same(&ts[i], &g.t[i]);
		cr_expect_eq(st_find(&f, ts[i].name), &f.t[i], "st_find(%s)", ts[i].name);
	}
	free(b);
	st_free(&f);
	st_free(&g);
}

/* ---- dtypes and the happy path ---- */

Test(safetensors, dtype_sizes)
{
	for (int d = 0; d < NDTYPES; d++)
		cr_expect_eq(st_dtype_size(all[d].name), all[d].size, "%s", all[d].name);
	cr_expect_eq(st_dtype_size("f32"), 0);
	cr_expect_eq(st_dtype_size("F8_E4M3FN"), 0);
	cr_expect_eq(st_dtype_size(""), 0);
	cr_expect_eq(st_dtype_size(NULL), 0);
}

Test(safetensors, roundtrip_every_dtype_and_rank)
{
	static const int64_t zero[][ST_MAXRANK] = { { 0 }, { 2, 0, 3 }, { 1, 2, 1, 2, 1, 2, 1, 0 } };
	static const int zrank[] = { 1, 3, 8 };
	StTensor ts[NDTYPES * 12];
	int n = 0;
	char name[64];

	for (int d = 0; d < NDTYPES; d++) {
		for (int r = 0; r <= ST_MAXRANK; r++) {
			int64_t dims[ST_MAXRANK];
			for (int k = 0; k < r; k++)
				dims[k] = 1 + (k + d) % 3;
			snprintf(name, sizeof name, "%s.rank%d", all[d].name, r);
			ts[n] = mk(name, all[d].name, r, dims, (unsigned)n);
			n++;
		}
		for (int z = 0; z < 3; z++) {
			snprintf(name, sizeof name, "%s.empty%d", all[d].name, z);
			ts[n] = mk(name, all[d].name, zrank[z], zero[z], (unsigned)n);
			cr_assert_eq(ts[n].nbytes, 0);
			n++;
		}
	}
	roundtrip(ts, n);
	freeall(ts, n);
}

Test(safetensors, roundtrip_names_that_need_escaping)
{
	static const char *names[] = { "q\"uote", "back\\slash", "\\\"\\\"", "/sl/ash", "ctl\n\r\t\b\f\x01\x1f",
		"\xc3\xbcn\xc3\xaf"
		"c\xc3\xb8"
		"d\xc3\xa9",
		"\xe6\x97\xa5\xe6\x9c\xac", "emoji \xf0\x9f\x98\x80", "", "__metadata", "x y", "\x7f" };
	enum { N = sizeof names / sizeof names[0] };
	StTensor ts[N];
	int64_t dims[1] = { 3 };

	for (int i = 0; i < N; i++)
		ts[i] = mk(names[i], "I16", 1, dims, (unsigned)i);
	roundtrip(ts, N);
	freeall(ts, N);
}

Test(safetensors, writer_escapes_like_serde_json)
{
	StTensor t = mk("a\"b\\c\nd\x01\x1f"
			"\xc3\xa9",
		"U8", 0, NULL, 0);
	char path[64], err[ERRLEN] = "";
	unsigned char *b;
	size_t len;
	const char *want = "{\"a\\\"b\\\\c\\nd\\u0001\\u001f\xc3\xa9\":{\"dtype\":\"U8\"";

	tmppath(path);
	cr_assert_eq(st_write(path, &t, 1, err, sizeof err), 0, "%s", err);
	b = slurp(path, &len);
	remove(path);
	cr_expect(len > 8 + strlen(want) && !memcmp(b + 8, want, strlen(want)),
		"header \"%.*s\" does not start with \"%s\"", (int)(len - 8), b + 8, want);
	free(b);
	freeall(&t, 1);
}

Test(safetensors, empty_file)
{
	static const unsigned char want[] = "\x08\0\0\0\0\0\0\0{}      ";
	char path[64], err[ERRLEN] = "";
	unsigned char *b;
	size_t len;
	StFile f = { .n = 1 };

	tmppath(path);
	cr_assert_eq(st_write(path, NULL, 0, err, sizeof err), 0, "%s", err);
	b = slurp(path, &len);
	cr_expect(len == 16 && !memcmp(b, want, 16), "empty file is not {} padded to 8");
	cr_assert_eq(st_read(path, &f, err, sizeof err), 0, "%s", err);
	cr_expect(f.n == 0 && f.t == NULL);
	remove(path);
	free(b);
	st_free(&f);
	/* any JSON whitespace pads the header */
	b = image("{}\r \t\n", 6, 0, &len);
	cr_expect_eq(readexact(b, len, &f, err), 0, "%s", err);
	cr_expect(f.n == 0 && f.t == NULL);
	free(b);
}

/* st_write of t gives exactly the 8-byte length, hdr padded with spaces to
 * a multiple of 8, and data; st_read_mem of those bytes gives t back. */
static void
exact(const StTensor *t, const char *hdr, size_t padded)
{
	size_t hlen = strlen(hdr), len = 8 + padded + t->nbytes, glen;
	unsigned char *want = malloc(len), *got;
	char path[64], err[ERRLEN] = "";
	StFile f;

	cr_assert(padded % 8 == 0 && padded >= hlen && padded < hlen + 8);
	le64(want, padded);
	memcpy(want + 8, hdr, hlen);
	memset(want + 8 + hlen, ' ', padded - hlen);
	memcpy(want + 8 + padded, t->data, t->nbytes);

	cr_assert_eq(readexact(want, len, &f, err), 0, "%s", err);
	cr_assert_eq(f.n, 1);
	same(t, &f.t[0]);
	st_free(&f);

	tmppath(path);
	cr_assert_eq(st_write(path, t, 1, err, sizeof err), 0, "%s", err);
	got = slurp(path, &glen);
	remove(path);
	cr_expect_eq(glen, len);
	for (size_t k = 0; k < len && k < glen; k++)
		if (got[k] != want[k]) {
			cr_expect_fail("byte %zu: expected 0x%02x '%c', got 0x%02x '%c'", k, want[k],
				want[k] >= 32 && want[k] < 127 ? want[k] : '.', got[k],
				got[k] >= 32 && got[k] < 127 ? got[k] : '.');
			break;
		}
	free(got);
	free(want);
}

/* The bytes the Python library writes for {"a": tensor([1.0, -2.5])}, and
 * for the safetensors crate's own forced-alignment test (attn0, 1x1x2x3 F32
 * 0..5, whose 65-byte header takes 7 spaces of padding). */
Test(safetensors, python_layout_byte_exact)
{
	static const float a[2] = { 1.0f, -2.5f }, attn[6] = { 0, 1, 2, 3, 4, 5 };
	StTensor t = { .name = "a", .dtype = "F32", .rank = 1, .dims = { 2 }, .nbytes = 8, .data = (void *)a };
	StTensor u = {
		.name = "attn0", .dtype = "F32", .rank = 4, .dims = { 1, 1, 2, 3 }, .nbytes = 24, .data = (void *)attn
	};

	exact(&t, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 56);
	exact(&u, "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}", 72);
}

/* Metadata first, pretty-printed, keys not in offset order, unknown fields,
 * \u escapes: tensors come back sorted by offset. */
Test(safetensors, python_style_with_metadata)
{
	static const char hdr[] = "{\n  \"__metadata__\": {\"format\": \"pt\", \"note\": \"a \\\"b\\\" \\u00e9\"},\n"
				  "  \"w\\u00e9\\ud83d\\ude00\\/\": {\"dtype\": \"F8_E4M3\", \"shape\": [3],\n"
				  "     \"data_offsets\": [8, 11], \"extra\": {\"x\": [1, -2.5e+3, true, false,"
				  " null, \"s\", {\"y\": []}, {}]}},\n"
				  "  \"b\": {\"data_offsets\": [0, 8], \"shape\": [2, 2], \"dtype\": \"BF16\"},\n"
				  "  \"z\": {\"dtype\": \"I64\", \"shape\": [0, 4], \"data_offsets\": [11, 11]}\n}\n";
	unsigned char *b;
	size_t len;
	StFile f;
	char err[ERRLEN] = "";

	b = image(hdr, strlen(hdr), 11, &len);
	cr_assert_eq(readexact(b, len, &f, err), 0, "%s", err);
	cr_assert_eq(f.n, 3);
	cr_expect_str_eq(f.t[0].name, "b");
	cr_expect_str_eq(f.t[1].name, "w\xc3\xa9\xf0\x9f\x98\x80/");
	cr_expect_str_eq(f.t[2].name, "z");
	cr_expect(f.t[0].rank == 2 && f.t[0].dims[0] == 2 && f.t[0].dims[1] == 2);
	cr_expect(f.t[2].rank == 2 && f.t[2].dims[0] == 0 && f.t[2].nbytes == 0);
	cr_expect(!memcmp(f.t[1].data, b + 8 + strlen(hdr) + 8, 3), "wrong bytes for w");
	cr_expect(st_find(&f, "nope") == NULL);
	cr_expect(st_find(&f, "__metadata__") == NULL);
	st_free(&f);
	st_free(&f);
	free(b);
}

/* ---- malformed input ---- */

/* Headers that must be rejected, with the buffer size that follows them. */
static const struct {
	const char *hdr;  /* the JSON header */
	size_t datalen;   /* bytes after it */
	const char *want; /* substring of the message */
} bad[] = {
#define T(x) "{\"a\":{" x "}}"
#define OK_A "\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"
	/* JSON syntax */
	{ "", 8, "'[' or '{' expected" },
	{ "   ", 8, "'[' or '{' expected" },
	{ "[]", 8, "header is not a JSON object" },
	{ "\"a\"", 8, "'[' or '{' expected" },
	{ "{", 8, "string or '}' expected near end of file" },
	{ "{\"a\":{" OK_A "}", 8, "'}' expected near end of file" },
	{ "{\"a\":{" OK_A "]}", 8, "'}' expected near ']'" },
	{ T(OK_A) "}", 8, "end of file expected near '}'" },
	{ T(OK_A) " x", 8, "end of file expected near 'x'" },
	{ "{\"a\" {" OK_A "}}", 8, "':' expected" },
	{ "{\"a\":{" OK_A "},}", 8, "string or '}' expected" },
	{ "{a:{" OK_A "}}", 8, "string or '}' expected" },
	{ "{\"a", 8, "premature end of input" },
	{ "{\"a\\\"}", 8, "premature end of input" },
	{ "{\"a\\q\":{" OK_A "}}", 8, "invalid escape" },
	{ "{\"a\\u12\":{" OK_A "}}", 8, "invalid escape" },
	{ "{\"a\\u12g4\":{" OK_A "}}", 8, "invalid escape" },
	{ "{\"a\\ud800\":{" OK_A "}}", 8, "invalid Unicode '\\uD800'" },
	{ "{\"a\\ud800\\u0041\":{" OK_A "}}", 8, "invalid Unicode '\\uD800\\u0041'" },
	{ "{\"a\\udc00\":{" OK_A "}}", 8, "invalid Unicode '\\uDC00'" },
	{ "{\"a\\u0000b\":{" OK_A "}}", 8, "NUL byte in object key" },
	{ "{\"a\x01\":{" OK_A "}}", 8, "control character 0x1" },
	{ "{\"a\xff\":{" OK_A "}}", 8, "unable to decode byte 0xff" },
	{ "{\"a\xc0\xaf\":{" OK_A "}}", 8, "unable to decode byte 0xc0" },
	{ "{\"a\xed\xa0\x80\":{" OK_A "}}", 8, "unable to decode byte 0xed" },
	{ "{\"a\xe6\x97\":{" OK_A "}}", 8, "unable to decode byte 0xe6" },
	{ "\xef\xbb\xbf" T(OK_A), 8, "'[' or '{' expected" },
	{ "{\"a\":[1]}", 0, "entry is not a JSON object" },
	{ "{\"a\":{" OK_A ",\"x\":tru}}", 8, "invalid token near 'tru'" },
	{ "{\"a\":{" OK_A ",\"x\":01}}", 8, "invalid token near '0'" },
	{ "{\"a\":{" OK_A ",\"x\":-}}", 8, "invalid token near '-'" },
	{ "{\"a\":{" OK_A ",\"x\":1.}}", 8, "invalid token near '1.'" },
	{ "{\"a\":{" OK_A ",\"x\":[1 2]}}", 8, "']' expected near '2'" },
	{ "{\"a\":{" OK_A ",\"x\":{\"k\" 1}}}", 8, "':' expected near '1'" },
	/* keys */
	{ T("\"shape\":[2],\"data_offsets\":[0,8]"), 8, "missing \"dtype\"" },
	{ T("\"dtype\":\"F32\",\"data_offsets\":[0,8]"), 8, "missing \"shape\"" },
	{ T("\"dtype\":\"F32\",\"shape\":[2]"), 8, "missing \"data_offsets\"" },
	{ "{\"a\":{}}", 0, "missing \"dtype\"" },
	{ T(OK_A ",\"dtype\":\"F32\""), 8, "duplicate object key near '\"dtype\"'" },
	{ T(OK_A ",\"shape\":[2]"), 8, "duplicate object key near '\"shape\"'" },
	{ T(OK_A ",\"data_offsets\":[0,8]"), 8, "duplicate object key near '\"data_offsets\"'" },
	{ "{\"a\":{" OK_A "},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16,
		"duplicate object key near '\"a\"'" },
	{ "{\"a\":{" OK_A "},\"\\u0061\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[8,9]}}", 9,
		"duplicate object key near '\"\\u0061\"'" },
	{ "{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ value of \"k\" is not a string" },
	{ "{\"__metadata__\":{\"k\":{}}}", 0, "is not a string" },
	{ "{\"__metadata__\":\"x\"}", 0, "\"__metadata__\" is not a JSON object" },
	{ "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate object key near '\"__metadata__\"'" },
	/* dtype */
	{ T("\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]"), 8, "unknown dtype \"F33\"" },
	{ T("\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]"), 8, "unknown dtype" },
	{ T("\"dtype\":\"F32\\u0000\",\"shape\":[2],\"data_offsets\":[0,8]"), 8, "\\u0000 is not allowed" },
	{ T("\"dtype\":\"F8_E4M3FNUZ\",\"shape\":[2],\"data_offsets\":[0,2]"), 2, "unknown dtype" },
	{ T("\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]"), 8, "dtype is not a string" },
	/* shape */
	{ T("\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]"), 8, "negative dimension" },
	{ T("\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]"), 8, "dimension is not an integer" },
	{ T("\"dtype\":\"F32\",\"shape\":[2e0],\"data_offsets\":[0,8]"), 8, "dimension is not an integer" },
	{ T("\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]"), 8, "dimension is not an integer" },
	{ T("\"dtype\":\"F32\",\"shape\":[2,],\"data_offsets\":[0,8]"), 8, "unexpected token near ']'" },
	{ T("\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]"), 8, "invalid token near '0'" },
	{ T("\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]"), 8, "shape is not a JSON array" },
	{ T("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]"), 8, "rank exceeds 8" },
	{ T("\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,8]"), 8, "too big integer" },
	{ T("\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]"), 0,
		"element count overflow" },
	{ T("\"dtype\":\"I64\",\"shape\":[9223372036854775807,2,0],\"data_offsets\":[0,0]"), 0,
		"element count overflow" },
	/* offsets */
	{ T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]"), 4, "span 4 bytes, but shape * dtype size is 8" },
	{ T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]"), 8, "end before begin" },
	{ T(OK_A), 4, "out of bounds" },
	{ T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]"), 8, "exactly 2 entries" },
	{ T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,16]"), 8, "exactly 2 entries" },
	{ T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18446744073709551616]"), 8, "too big integer" },
	{ T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]"), 8, "negative data offset" },
	{ "{\"a\":{" OK_A "},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
		"tensor \"b\" overlaps tensor \"a\"" },
	{ "{\"a\":{" OK_A "},\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8,
		"tensor \"z\" overlaps tensor \"a\"" },
	{ "{\"a\":{" OK_A "},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20,
		"hole in the byte buffer: bytes [8, 12)" },
	{ T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]"), 12, "hole in the byte buffer: bytes [0, 4)" },
	{ T(OK_A), 12, "byte buffer not fully covered: bytes [8, 12)" },
	{ "{}", 4, "byte buffer not fully covered" },
#undef T
#undef OK_A
};

Test(safetensors, malformed_corpus)
{
	size_t ncases = sizeof bad / sizeof bad[0];

	cr_assert_geq(ncases, 25);
	for (size_t i = 0; i < ncases; i++) {
		char err[ERRLEN] = "";
		StFile f = { .n = 7, .t = (StTensor *)&f };
		size_t len;
		unsigned char *b = image(bad[i].hdr, strlen(bad[i].hdr), bad[i].datalen, &len);
		int rc = readexact(b, len, &f, err);

		cr_expect_eq(rc, -1, "case %zu (%s): accepted", i, bad[i].want);
		if (rc == 0)
			st_free(&f);
		else
			failed(rc, &f, err, "<memory>");
		cr_expect(
			strstr(err, bad[i].want) != NULL, "case %zu: message \"%s\" lacks \"%s\"", i, err, bad[i].want);
		free(b);
	}
}

/* The 8-byte length itself is wrong. */
Test(safetensors, malformed_length)
{
	unsigned char b[32] = { 0 };
	char err[ERRLEN] = "";
	StFile f;

	failed(readexact(b, 0, &f, err), &f, err, "<memory>");
	cr_expect(strstr(err, "file too short") != NULL, "%s", err);
	failed(readexact(b, 7, &f, err), &f, err, "<memory>");
	cr_expect(strstr(err, "file too short") != NULL, "%s", err);
	le64(b, 100000001);
	failed(readexact(b, sizeof b, &f, err), &f, err, "<memory>");
	cr_expect(strstr(err, "header too large") != NULL, "%s", err);
	le64(b, UINT64_MAX);
	failed(readexact(b, sizeof b, &f, err), &f, err, "<memory>");
	cr_expect(strstr(err, "header too large") != NULL, "%s", err);
	le64(b, 25);
	failed(readexact(b, sizeof b, &f, err), &f, err, "<memory>");
	cr_expect(strstr(err, "header length 25 exceeds the file size") != NULL, "%s", err);
	failed(st_read_mem(NULL, 8, &f, err, sizeof err), &f, err, "<memory>");
	/* a NUL after the object is not whitespace */
	memcpy(b + 8, "{}\0     ", 8);
	le64(b, 8);
	failed(readexact(b, 16, &f, err), &f, err, "<memory>");
	cr_expect(strstr(err, "end of file expected") != NULL, "%s", err);
	cr_expect(st_read_mem(b, sizeof b, NULL, err, sizeof err) == -1);
}

/* An unknown field nested to the given depth with '{"k":[' pairs (or only
 * '[' if arrays), closed properly. */
static unsigned char *
nested(int depth, int arrays, size_t *len)
{
	static const char pre[] = "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1],"
				  "\"x\":";
	size_t cap = sizeof pre + 8 * (size_t)depth + 8, n = strlen(pre);
	char *h = malloc(cap);
	unsigned char *b;

	memcpy(h, pre, n);
	for (int k = 0; k < depth; k++)
		n += (size_t)sprintf(h + n, "%s", arrays || k % 2 ? "[" : "{\"k\":");
	for (int k = depth - 1; k >= 0; k--)
		h[n++] = arrays || k % 2 ? ']' : '}';
	memcpy(h + n, "}}", 2);
	b = image(h, n + 2, 1, len);
	free(h);
	return b;
}

/* Deep nesting is an error, not a stack overflow: jansson stops at
 * JSON_PARSER_MAX_DEPTH levels, counting the header's own two. Even depths,
 * so that the innermost value is an array in both forms. */
Test(safetensors, deep_nesting)
{
	static const struct {
		int depth, arrays, ok;
	} cases[] = { { 100000, 1, 0 }, { 100000, 0, 0 }, { JSON_PARSER_MAX_DEPTH, 1, 0 },
		{ JSON_PARSER_MAX_DEPTH, 0, 0 }, { JSON_PARSER_MAX_DEPTH - 2, 1, 1 },
		{ JSON_PARSER_MAX_DEPTH - 2, 0, 1 }, { 64, 0, 1 } };
	char err[ERRLEN] = "";
	StFile f;
	size_t len;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		unsigned char *b = nested(cases[i].depth, cases[i].arrays, &len);
		int rc = readexact(b, len, &f, err);
		if (cases[i].ok) {
			cr_expect_eq(rc, 0, "depth %d: %s", cases[i].depth, err);
			st_free(&f);
		} else {
			failed(rc, &f, err, "<memory>");
			cr_expect(strstr(err, "maximum parsing depth reached") != NULL, "%s", err);
		}
		free(b);
	}
}

/* A valid image with metadata, several dtypes and a 0-element tensor. */
static unsigned char *
sample(size_t *len)
{
	static const char hdr[] = "{\"__metadata__\":{\"format\":\"pt\"},"
				  "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
				  "\"e\":{\"dtype\":\"BF16\",\"shape\":[0,3],\"data_offsets\":[16,16]},"
				  "\"s\\u00e9\":{\"dtype\":\"F8_E4M3\",\"shape\":[],\"data_offsets\":[16,17]},"
				  "\"b\":{\"dtype\":\"I16\",\"shape\":[3],\"data_offsets\":[17,23]}}    ";

	return image(hdr, strlen(hdr), 23, len);
}

Test(safetensors, truncation_sweep)
{
	size_t len;
	unsigned char *b = sample(&len);
	char err[ERRLEN], path[64];
	StFile f;

	for (size_t n = 0; n < len; n++) {
		err[0] = 0;
		failed(readexact(b, n, &f, err), &f, err, "<memory>");
		cr_expect(err[0] != 0, "prefix %zu: empty message", n);
	}
	cr_assert_eq(readexact(b, len, &f, err), 0, "%s", err);
	cr_expect_eq(f.n, 4);
	st_free(&f);

	/* the same through st_read, every 7th prefix and the last few */
	tmppath(path);
	for (size_t n = 0; n < len; n += n + 8 < len ? 7 : 1) {
		spit(path, b, n);
		failed(st_read(path, &f, err, sizeof err), &f, err, path);
	}
	spit(path, b, len);
	cr_expect_eq(st_read(path, &f, err, sizeof err), 0, "%s", err);
	st_free(&f);
	remove(path);
	free(b);
}

/* Whatever a flipped byte does, the reader must not crash, and what it
 * accepts must be consistent. */
Test(safetensors, byte_flip_sweep)
{
	static const unsigned char vals[] = { 0x00, 0x01, ' ', '"', '\\', '{', '}', '[', ']', ',', ':', '0', '9', '-',
		'.', 'e', 'u', 0x7f, 0x80, 0xff };
	size_t len, hend;
	unsigned char *b = sample(&len);
	char err[ERRLEN];
	int accepted = 0, rejected = 0;

	hend = 8 + (size_t)b[0] + 256 * (size_t)b[1];
	for (size_t i = 0; i < hend; i++)
		for (size_t v = 0; v < sizeof vals + 2; v++) {
			unsigned char old = b[i];
			StFile f;
			size_t total = 0;
			b[i] = v < sizeof vals ? vals[v] : (unsigned char)(old ^ (v == sizeof vals ? 1 : 0x20));
			if (readexact(b, len, &f, err) == 0) {
				for (int k = 0; k < f.n; k++) {
					cr_expect(f.t[k].name && f.t[k].data);
					total += f.t[k].nbytes;
				}
				cr_expect_eq(total, len - hend, "flip %zu=0x%02x: bytes don't tile", i, b[i]);
				st_free(&f);
				accepted++;
			} else {
				failed(-1, &f, err, "<memory>");
				rejected++;
			}
			b[i] = old;
		}
	cr_expect(accepted > 0 && rejected > 0, "accepted %d, rejected %d", accepted, rejected);
	free(b);
}

/* st_read_header: the header of a file whose buffer is whole, cut short or
 * missing gives the same names, dtypes and shapes, and no data; a cut in
 * the header itself, or a header error, still fails. */
Test(safetensors, header_only)
{
	size_t len, hend;
	unsigned char *b = sample(&len);
	char err[ERRLEN] = "", path[64];
	StFile f;

	hend = 8 + (size_t)b[0] + 256 * (size_t)b[1];
	tmppath(path);
	for (size_t n = 0; n <= len; n++) {
		spit(path, b, n);
		if (n < hend) {
			failed(st_read_header(path, &f, err, sizeof err), &f, err, path);
			continue;
		}
		cr_assert_eq(st_read_header(path, &f, err, sizeof err), 0, "prefix %zu: %s", n, err);
		cr_assert_eq(f.n, 4);
		cr_expect_str_eq(f.t[0].name, "w");
		cr_expect_str_eq(f.t[0].dtype, "F32");
		cr_expect(f.t[0].rank == 2 && f.t[0].dims[0] == 2 && f.t[0].dims[1] == 2);
		cr_expect_eq(f.t[0].nbytes, 16);
		cr_expect_str_eq(f.t[2].name, "s\xc3\xa9");
		cr_expect(f.t[2].rank == 0 && f.t[2].nbytes == 1);
		cr_expect_str_eq(f.t[3].dtype, "I16");
		for (int k = 0; k < f.n; k++)
			cr_expect(f.t[k].data == NULL, "prefix %zu: tensor %d has data", n, k);
		cr_expect(f.base == NULL);
		st_free(&f);
	}
	/* what does not need the buffer is still checked */
	static const char overlap[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
				      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
	static const char span[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}";
	free(b);
	b = image(overlap, strlen(overlap), 0, &len);
	spit(path, b, len);
	failed(st_read_header(path, &f, err, sizeof err), &f, err, path);
	cr_expect(strstr(err, "overlaps") != NULL, "%s", err);
	free(b);
	b = image(span, strlen(span), 0, &len);
	spit(path, b, len);
	failed(st_read_header(path, &f, err, sizeof err), &f, err, path);
	cr_expect(strstr(err, "span 4 bytes") != NULL, "%s", err);
	failed(st_read(path, &f, err, sizeof err), &f, err, path);
	free(b);
	remove(path);
	failed(st_read_header(path, &f, err, sizeof err), &f, err, path);
	cr_expect(strstr(err, "cannot open") != NULL, "%s", err);
	failed(st_read_header("/tmp", &f, err, sizeof err), &f, err, "/tmp");
	cr_expect(st_read_header(path, NULL, err, sizeof err) == -1);
}

/* st_read maps the file: the tensors point into the map, and writing to
 * them changes the caller's copy only, never the file. */
Test(safetensors, mapped_private)
{
	size_t len, glen;
	unsigned char *b = sample(&len), *again;
	char err[ERRLEN] = "", path[64];
	StFile f;

	tmppath(path);
	spit(path, b, len);
	cr_assert_eq(st_read(path, &f, err, sizeof err), 0, "%s", err);
	cr_expect(f.mapped && f.baselen == len, "mapped %d, %zu of %zu bytes", f.mapped, f.baselen, len);
	for (int k = 0; k < f.n; k++) {
		unsigned char *d = f.t[k].data;
		cr_expect(d >= (unsigned char *)f.base && d + f.t[k].nbytes <= (unsigned char *)f.base + len,
			"tensor %s is outside the map", f.t[k].name);
		memset(d, 0xAB, f.t[k].nbytes);
	}
	st_free(&f);
	cr_expect(f.n == 0 && f.t == NULL && f.base == NULL && !f.mapped);
	again = slurp(path, &glen);
	cr_expect(glen == len && !memcmp(again, b, len), "st_read changed the file");
	remove(path);
	free(again);
	free(b);
}

Test(safetensors, read_errors)
{
	char err[ERRLEN] = "", small[12];
	StFile f;
	unsigned char b[8] = { 0 };

	failed(st_read("/nonexistent/x.safetensors", &f, err, sizeof err), &f, err, "/nonexistent/x.safetensors");
	cr_expect(strstr(err, "cannot open") != NULL, "%s", err);
	failed(st_read("/tmp", &f, err, sizeof err), &f, err, "/tmp");
	cr_expect(strstr(err, "not a regular file") != NULL, "%s", err);
	cr_expect_eq(st_read(NULL, &f, err, sizeof err), -1);
	/* messages are truncated to errlen; no err buffer at all is fine */
	memset(small, 'x', sizeof small);
	cr_expect_eq(st_read_mem(b, 3, &f, small, 5), -1);
	cr_expect_str_eq(small, "<mem");
	cr_expect_eq(small[5], 'x');
	cr_expect_eq(st_read_mem(b, 3, &f, NULL, 0), -1);
}

/* st_write rejects t (one of two tensors) with a message containing want,
 * and leaves no file behind. */
static void
wfail(StTensor t, const char *want)
{
	int64_t d1[1] = { 2 };
	StTensor ts[2] = { mk("ok", "U8", 1, d1, 0), t };
	char path[64], err[ERRLEN] = "";
	FILE *f;

	tmppath(path);
	remove(path);
	cr_expect_eq(st_write(path, ts, 2, err, sizeof err), -1, "accepted (want %s)", want);
	cr_expect(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"", err, want);
	cr_expect(!strncmp(err, path, strlen(path)), "message \"%s\" lacks the path", err);
	cr_expect((f = fopen(path, "rb")) == NULL, "st_write left %s behind", path);
	if (f)
		fclose(f), remove(path);
	free(ts[0].name);
	free(ts[0].data);
}

Test(safetensors, write_errors)
{
	int64_t d[2] = { 2, 3 };
	unsigned char data[64] = { 0 };
	StTensor t = { .name = "t", .dtype = "F32", .rank = 2, .dims = { 2, 3 }, .nbytes = 24, .data = data }, u;
	char err[ERRLEN] = "";

	u = t, memcpy(u.dtype, "F33", 4), wfail(u, "unknown dtype \"F33\"");
	u = t, memset(u.dtype, 'F', sizeof u.dtype), wfail(u, "unknown dtype");
	u = t, u.nbytes = 23, wfail(u, "nbytes is 23, but shape * dtype size is 24");
	u = t, u.rank = 9, wfail(u, "rank 9 not in 0..8");
	u = t, u.rank = -1, wfail(u, "rank -1 not in 0..8");
	u = t, u.dims[1] = -3, wfail(u, "negative dimension -3");
	u = t, u.dims[0] = INT64_MAX, wfail(u, "element count overflow");
	u = t, u.data = NULL, wfail(u, "data is NULL");
	u = t, u.name = NULL, wfail(u, "tensor 1: name is NULL");
	u = t, u.name = "bad\xff", wfail(u, "tensor 1: name is not valid UTF-8");
	u = t, u.name = "__metadata__", wfail(u, "\"__metadata__\" is reserved");
	u = t, u.name = "ok", wfail(u, "duplicate tensor name \"ok\"");
	(void)d;
	cr_expect_eq(st_write("/nonexistent/dir/x.safetensors", &t, 1, err, sizeof err), -1);
	cr_expect(strstr(err, "cannot create") != NULL, "%s", err);
	cr_expect_eq(st_write("/tmp/x", &t, -1, err, sizeof err), -1);
	cr_expect_eq(st_write(NULL, &t, 1, err, sizeof err), -1);
	/* a 0-byte tensor needs no data */
	u = t, u.dims[0] = 0, u.nbytes = 0, u.data = NULL;
	roundtrip(&u, 1);
}

Test(safetensors, free_and_find_edge_cases)
{
	StFile f = { 0 };

	st_free(NULL);
	st_free(&f);
	cr_expect(st_find(NULL, "a") == NULL);
	cr_expect(st_find(&f, "a") == NULL);
	cr_expect(st_find(&f, NULL) == NULL);
}
