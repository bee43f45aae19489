/* plan.c — reads the plan of an fp8cc program (docs/plan.md).
 *
 * The text is never copied or NUL-terminated: lines and words are (pointer,
 * length) slices of the caller's bytes, so garbage, binary data and very long
 * lines are read safely. Parsing runs in passes: collect the plan's lines,
 * count each kind (so references can be range-checked wherever they appear),
 * parse every line, then check what needs the whole plan (buffers inside the
 * workspace, the operands of gemm and copy steps). The first error stops it,
 * as "NAME:LINE: message".
 */
#include "ident.h"
#include "plan.h"
#include "arena.h"
#include "gemm_rules.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes ------------------------------------------------------------- */

static const struct {
	const char *name; /* the plan's (the IR's) spelling */
	int size;         /* bytes */
} dtypes[FP8RT_NUM_DTYPES] = {
	[FP8RT_DTYPE_NONE] = { "?", 0 },
#define DTYPE(id, ir, thunder, thunder_long, torch, st, bits, kind) { ir, (bits) / 8 },
#include "dtypes.def"
#undef DTYPE
};

/* fp8rt.h numbers the dtypes of common/dtypes.def from 1, in its order */
enum {
	RT_DT_NONE,
#define DTYPE(id, ...) RT_DT_##id,
#include "dtypes.def"
#undef DTYPE
	RT_DT_COUNT
};
_Static_assert((int)RT_DT_COUNT == (int)FP8RT_NUM_DTYPES, "fp8rt_dtype and dtypes.def disagree");
#define SAME(def, api) ((int)RT_DT_##def == (int)FP8RT_##api)
_Static_assert(SAME(B8, BOOL) && SAME(U8, U8) && SAME(I8, I8) && SAME(I16, I16) && SAME(I32, I32) && SAME(I64, I64) &&
		SAME(F16, F16) && SAME(BF16, BF16) && SAME(F32, F32) && SAME(F64, F64) && SAME(F8E4M3FN, F8E4M3FN) &&
		SAME(F8E5M2, F8E5M2),
	"fp8rt_dtype and dtypes.def disagree");
#undef SAME

/* every dtype's name, for messages */
static const char dtype_names[] =
#define DTYPE(id, ir, ...) " " ir
#include "dtypes.def"
#undef DTYPE
	;

const char *
rt_dtype_name(fp8rt_dtype dt)
{
	return (unsigned)dt < FP8RT_NUM_DTYPES ? dtypes[dt].name : "?";
}

size_t
rt_dtype_size(fp8rt_dtype dt)
{
	return (unsigned)dt < FP8RT_NUM_DTYPES ? (size_t)dtypes[dt].size : 0;
}

fp8rt_dtype
rt_dtype_parse(const char *s, size_t n)
{
	for (int i = 1; i < FP8RT_NUM_DTYPES; i++)
		if (strlen(dtypes[i].name) == n && memcmp(dtypes[i].name, s, n) == 0)
			return (fp8rt_dtype)i;
	return FP8RT_DTYPE_NONE;
}

int64_t
rt_type_numel(const RtType *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i] != 0 && n > INT64_MAX / 16 / t->dims[i])
			return -1;
		n *= t->dims[i];
	}
	return n;
}

/* ---- the FP8 GEMM's rules ------------------------------------------------ */

fp8rt_dtype
rt_gemm_bias_dtype(fp8rt_dtype dt)
{
	return (fp8rt_dtype)(fp8_gemm_bias_row((int)dt - 1) + 1); /* fp8rt_dtype: the row + 1 */
}

static int
is_fp8(fp8rt_dtype t)
{
	return t == FP8RT_F8E4M3FN || t == FP8RT_F8E5M2;
}

/* FP8RT_SCALE_BLOCK's shape rules (fp8rt.h): 0, or a status and why */
fp8rt_status
rt_block_rules(int64_t m, int64_t k, int fast_accum, char *msg, size_t cap)
{
	if (k % 128)
		snprintf(msg, cap, "block-wise scales need k a multiple of 128 (k=%lld)", (long long)k);
	else if (m % 4)
		snprintf(msg, cap, "block-wise scales need m a multiple of 4 (m=%lld): cuBLASLt's 1x128 scales",
			(long long)m);
	else if (fast_accum)
		snprintf(msg, cap, "block-wise scales take no fast_accum (cuBLASLt has none for them)");
	else
		return FP8RT_OK;
	return FP8RT_INVALID_ARGUMENT;
}

/* f32 values a scale holds: `b` says which operand's (fp8rt.h's layouts) */
int64_t
rt_scale_numel(fp8rt_scale_mode mode, int64_t m, int64_t n, int64_t k, int b)
{
	int64_t kb = (k + 127) / 128;
	switch (mode) {
	case FP8RT_SCALE_ROW:   return b ? n : m;
	case FP8RT_SCALE_BLOCK: return b ? (kb + 3) / 4 * 4 * ((n + 127) / 128) : kb * m;
	default:                return 1;
	}
}

fp8rt_status
rt_gemm_rules(int64_t m, int64_t n, int64_t k, fp8rt_dtype at, fp8rt_dtype bt, fp8rt_dtype dt, fp8rt_dtype bias_dt,
	char *err, size_t errlen)
{
	if (m < 0 || n < 0 || k < FP8_GEMM_MULTIPLE || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
		snprintf(err, errlen, "gemm shape m=%lld n=%lld k=%lld out of range (k >= 16, all < 2^31)",
			(long long)m, (long long)n, (long long)k);
		return FP8RT_INVALID_ARGUMENT;
	}
	if (!fp8_gemm_dims_ok(k, n)) {
		int bad_k = k % FP8_GEMM_MULTIPLE != 0;
		snprintf(err, errlen,
			"gemm %s=%lld is not a multiple of %d (cuBLASLt FP8 needs K and N multiples of %d)",
			bad_k ? "k" : "n", (long long)(bad_k ? k : n), FP8_GEMM_MULTIPLE, FP8_GEMM_MULTIPLE);
		return FP8RT_INVALID_ARGUMENT;
	}
	if (!is_fp8(at) || !is_fp8(bt)) {
		snprintf(err, errlen, "gemm operand dtypes %s x %s: both must be f8e4m3fn or f8e5m2", rt_dtype_name(at),
			rt_dtype_name(bt));
		return FP8RT_INVALID_ARGUMENT;
	}
	if (at == FP8RT_F8E5M2 && bt == FP8RT_F8E5M2) {
		snprintf(err, errlen,
			"gemm f8e5m2 x f8e5m2 is not supported by cuBLASLt "
			"(use e4m3 x e4m3, e4m3 x e5m2 or e5m2 x e4m3)");
		return FP8RT_UNSUPPORTED;
	}
	if (dt != FP8RT_BF16 && dt != FP8RT_F16 && dt != FP8RT_F32) {
		snprintf(err, errlen, "gemm output dtype %s is not supported (bf16, f16 or f32)", rt_dtype_name(dt));
		return FP8RT_UNSUPPORTED;
	}
	if (bias_dt != FP8RT_DTYPE_NONE && bias_dt != rt_gemm_bias_dtype(dt)) {
		snprintf(err, errlen, "gemm bias dtype %s with %s output: cuBLASLt FP8 wants a %s bias",
			rt_dtype_name(bias_dt), rt_dtype_name(dt), rt_dtype_name(rt_gemm_bias_dtype(dt)));
		return FP8RT_INVALID_ARGUMENT;
	}
	return FP8RT_OK;
}

static int
is_float(fp8rt_dtype t)
{
	return t == FP8RT_F16 || t == FP8RT_BF16 || t == FP8RT_F32 || t == FP8RT_F64;
}

fp8rt_status
rt_matmul_rules(int64_t m, int64_t n, int64_t k, int64_t batch, fp8rt_dtype at, fp8rt_dtype bt, fp8rt_dtype dt,
	char *err, size_t errlen)
{
	if (m < 0 || n < 0 || k < 1 || batch < 1 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX ||
		batch > INT32_MAX) {
		snprintf(err, errlen,
			"gemm shape m=%lld n=%lld k=%lld batch=%lld out of range (k, batch >= 1, all < 2^31)",
			(long long)m, (long long)n, (long long)k, (long long)batch);
		return FP8RT_INVALID_ARGUMENT;
	}
	if (at != bt || at != dt || !is_float(at)) {
		snprintf(err, errlen,
			"gemm dtypes %s x %s -> %s: a, b and d must be one of f16 bf16 f32 f64 "
			"(fp8 operands need scales)",
			rt_dtype_name(at), rt_dtype_name(bt), rt_dtype_name(dt));
		return FP8RT_INVALID_ARGUMENT;
	}
	return FP8RT_OK;
}

int64_t
rt_gemm_span(int64_t batch, int64_t stride, int64_t rows, int64_t cols)
{
	int64_t one, rest;
	if (__builtin_mul_overflow(rows, cols, &one) || __builtin_mul_overflow(batch - 1, stride, &rest) ||
		__builtin_add_overflow(one, rest, &one))
		return -1;
	return one;
}

/* ---- arena (common/arena.h: NULL when memory runs out) ---------------- */

struct RtArena {
	ArenaCore core;
};

static void *
arena_alloc(RtArena *a, size_t n)
{
	if (!a->core.block)
		a->core.block = 16384;
	return arena_core_alloc(&a->core, n);
}

static void
arena_free(RtArena *a)
{
	if (!a)
		return;
	arena_core_free(&a->core);
	free(a);
}

void
rt_plan_free(RtPlan *plan)
{
	if (!plan)
		return;
	arena_free(plan->arena);
	memset(plan, 0, sizeof *plan);
}

/* ---- lines and words ---------------------------------------------------- */

typedef struct {
	const char *p;
	size_t n;
} Str;

typedef struct {
	Str s;    /* the plan line's content, without "//" */
	int no;   /* 1-based line number in the text */
	int col0; /* columns before the content: 2 for "//" */
} Line;

#define MAXWORDS 32

typedef struct {
	const char *name;
	char *err;
	size_t errlen;
	int line; /* the line being read, for messages */
	RtPlan *plan;
	Line *lines; /* the plan's lines, header first */
	int nlines;
	RtFunc *fn;                         /* the function being read */
	int nin, nout, nbuf, nstep, nstate; /* its lines (the program's states) read so far */
	int ws_seen;
} Parser;

static fp8rt_status
failv(Parser *p, fp8rt_status st, const char *fmt, va_list ap)
{
	int n = snprintf(p->err, p->errlen, "%s:%d: ", p->name, p->line);
	if (n >= 0 && (size_t)n < p->errlen)
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	return st;
}

static fp8rt_status
fail(Parser *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fp8rt_status st = failv(p, FP8RT_BAD_PROGRAM, fmt, ap);
	va_end(ap);
	return st;
}

static fp8rt_status
fail_st(Parser *p, fp8rt_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	st = failv(p, st, fmt, ap);
	va_end(ap);
	return st;
}

static int
eq(Str s, const char *lit)
{
	return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

/* A word for a message: at most 40 bytes of it (the plan is printable ASCII
 * by the time words are quoted). */
#define W(s) (int)((s).n > 40 ? 40 : (s).n), (s).p

/* words := word { (' ' | '\t') word } [ '#' comment ] */
static fp8rt_status
split_words(Parser *p, Str line, Str *w, int *nw)
{
	*nw = 0;
	size_t i = 0;
	while (i < line.n) {
		char c = line.p[i];
		if (c == '#')
			break;
		if (c == ' ' || c == '\t') {
			i++;
			continue;
		}
		size_t start = i;
		while (i < line.n && line.p[i] != ' ' && line.p[i] != '\t' && line.p[i] != '#')
			i++;
		if (*nw == MAXWORDS)
			return fail(p, "too many words on one plan line (more than %d)", MAXWORDS);
		w[(*nw)++] = (Str){ line.p + start, i - start };
	}
	return FP8RT_OK;
}

/* Plan lines are printable ASCII (tabs allowed). */
static fp8rt_status
check_bytes(Parser *p, const Line *ln)
{
	for (size_t i = 0; i < ln->s.n; i++) {
		unsigned char c = (unsigned char)ln->s.p[i];
		if ((c < 0x20 && c != '\t') || c > 0x7e)
			return fail(p, "byte 0x%02x at column %zu is not printable ASCII", c, i + 1 + (size_t)ln->col0);
	}
	return FP8RT_OK;
}

/* ---- values ------------------------------------------------------------- */

/* int := digit { digit } */
static fp8rt_status
parse_int(Parser *p, Str s, int64_t lo, int64_t hi, const char *what, int64_t *out)
{
	int64_t v = 0;
	if (s.n == 0)
		return fail(p, "%s: expected a number, got nothing", what);
	for (size_t i = 0; i < s.n; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return fail(p, "%s: '%.*s' is not a non-negative integer", what, W(s));
		if (v > (INT64_MAX - 9) / 10)
			return fail(p, "%s: '%.*s' is too large", what, W(s));
		v = v * 10 + (s.p[i] - '0');
	}
	if (v < lo || v > hi)
		return fail(
			p, "%s=%lld is out of range [%lld, %lld]", what, (long long)v, (long long)lo, (long long)hi);
	*out = v;
	return FP8RT_OK;
}

static fp8rt_status
parse_int32(Parser *p, Str s, int lo, int hi, const char *what, int *out)
{
	int64_t v;
	fp8rt_status st = parse_int(p, s, lo, hi, what, &v);
	if (st == FP8RT_OK)
		*out = (int)v;
	return st;
}

/* list := '[' [ int { ',' int } ] ']'   (at most FP8RT_MAX_RANK entries) */
static fp8rt_status
parse_list(Parser *p, Str s, const char *what, int64_t *v, int *n)
{
	if (s.n < 2 || s.p[0] != '[' || s.p[s.n - 1] != ']')
		return fail(p, "%s: '%.*s' is not a [..] list", what, W(s));
	Str in = { s.p + 1, s.n - 2 };
	*n = 0;
	if (in.n == 0)
		return FP8RT_OK;
	size_t i = 0;
	for (;;) {
		size_t start = i;
		while (i < in.n && in.p[i] != ',')
			i++;
		if (*n == FP8RT_MAX_RANK)
			return fail(p, "%s: more than %d entries", what, FP8RT_MAX_RANK);
		fp8rt_status st = parse_int(p, (Str){ in.p + start, i - start }, 0, INT64_MAX, what, &v[*n]);
		if (st)
			return st;
		(*n)++;
		if (i == in.n)
			return FP8RT_OK;
		i++; /* ',' */
	}
}

/* type := dtype '[' [ dim { ',' dim } ] ']' */
static fp8rt_status
parse_type(Parser *p, Str s, RtType *t)
{
	size_t b = 0;
	while (b < s.n && s.p[b] != '[')
		b++;
	if (b == s.n)
		return fail(p, "type '%.*s' has no [dims] (a scalar is f32[])", W(s));
	t->dtype = rt_dtype_parse(s.p, b);
	if (t->dtype == FP8RT_DTYPE_NONE)
		return fail(p, "unknown dtype '%.*s' (%s)", W(((Str){ s.p, b })), dtype_names + 1);
	fp8rt_status st = parse_list(p, (Str){ s.p + b, s.n - b }, "dims", t->dims, &t->rank);
	if (st)
		return st;
	if (rt_type_numel(t) < 0)
		return fail(p, "type '%.*s' has too many elements", W(s));
	return FP8RT_OK;
}

/* ref := ('in' | 'out' | 'buf' | 'st') ':' int     (st: version 2) */
static fp8rt_status
parse_ref(Parser *p, Str s, RtRef *r)
{
	static const struct {
		const char *prefix, *what;
		RtRefKind kind;
	} kinds[] = { { "in:", "inputs", REF_IN }, { "out:", "outputs", REF_OUT }, { "buf:", "buffers", REF_BUF },
		{ "st:", "state slots", REF_STATE } };
	const RtFunc *fn = p->fn;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		size_t n = strlen(kinds[i].prefix);
		if (s.n < n || memcmp(s.p, kinds[i].prefix, n) != 0)
			continue;
		RtRefKind k = kinds[i].kind;
		int count = k == REF_IN ? fn->nin : k == REF_OUT ? fn->nout : k == REF_BUF ? fn->nbuf : p->plan->nstate;
		int64_t v;
		if (k == REF_STATE && p->plan->version < 2)
			return fail(p, "reference '%.*s': state slots need plan version 2", W(s));
		fp8rt_status st = parse_int(p, (Str){ s.p + n, s.n - n }, 0, INT32_MAX, "reference", &v);
		if (st)
			return st;
		if (v >= count)
			return fail(p, "reference '%.*s' is out of range (the %s has %d %s)", W(s),
				k == REF_STATE ? "program" : "function", count, kinds[i].what);
		r->kind = k;
		r->index = (int)v;
		return FP8RT_OK;
	}
	return fail(p,
		p->plan->version < 2 ? "bad reference '%.*s' (in:N, out:N or buf:N)"
				     : "bad reference '%.*s' (in:N, out:N, buf:N or st:N)",
		W(s));
}

/* ---- key=value words ---------------------------------------------------- */

/* Matches words[first..] against keys: each key at most once, those in
 * `required` (a bit per key) exactly once; a bare word is allowed only as
 * `flag` (e.g. "zero"). */
static fp8rt_status
parse_keys(Parser *p, const Str *w, int nw, int first, const char *const *keys, int nkeys, unsigned required, Str *val,
	const char *flag, int *flag_set)
{
	unsigned seen = 0;
	for (int i = first; i < nw; i++) {
		const char *eqp = memchr(w[i].p, '=', w[i].n);
		if (!eqp) {
			if (flag && eq(w[i], flag)) {
				if (*flag_set)
					return fail(p, "'%s' given twice", flag);
				*flag_set = 1;
				continue;
			}
			return fail(p, "unexpected word '%.*s' (expected key=value)", W(w[i]));
		}
		Str key = { w[i].p, (size_t)(eqp - w[i].p) };
		int k = 0;
		while (k < nkeys && !eq(key, keys[k]))
			k++;
		if (k == nkeys)
			return fail(p, "unknown key '%.*s'", W(key));
		if (seen & (1u << k))
			return fail(p, "key '%s' given twice", keys[k]);
		seen |= 1u << k;
		val[k] = (Str){ eqp + 1, w[i].n - key.n - 1 };
	}
	for (int k = 0; k < nkeys; k++)
		if ((required & (1u << k)) && !(seen & (1u << k)))
			return fail(p, "missing key '%s='", keys[k]);
	return FP8RT_OK;
}

/* ---- lines -------------------------------------------------------------- */

/* N NAME TYPE, the words after the kind; name := printable non-space characters */
static fp8rt_status
parse_port_words(Parser *p, const Str *w, RtPort *ports, int *count, const char *kind)
{
	int64_t n;
	fp8rt_status st = parse_int(p, w[1], 0, INT32_MAX, kind, &n);
	if (st)
		return st;
	if (n != *count)
		return fail(p, "%s %lld out of order: expected %s %d (numbered from 0 in order)", kind, (long long)n,
			kind, *count);
	RtPort *port = &ports[*count];
	for (int i = 0; i < *count; i++)
		if (eq(w[2], ports[i].name))
			return fail(p, "%s %d: name '%.*s' is already used by %s %d", kind, *count, W(w[2]), kind, i);
	port->name = arena_alloc(p->plan->arena, w[2].n + 1);
	if (!port->name)
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	memcpy(port->name, w[2].p, w[2].n);
	port->line = p->line;
	if ((st = parse_type(p, w[3], &port->type)))
		return st;
	(*count)++;
	return FP8RT_OK;
}

/* input N NAME TYPE */
static fp8rt_status
parse_port(Parser *p, const Str *w, int nw, RtPort *ports, int *count, const char *kind)
{
	if (nw != 4)
		return fail(p, "'%s' wants 3 words (%s N NAME TYPE), got %d", kind, kind, nw - 1);
	ports[*count].updates = -1;
	return parse_port_words(p, w, ports, count, kind);
}

/* output N NAME TYPE [updates=I inplace=0|1]   (updates: version 7) */
static fp8rt_status
parse_output(Parser *p, const Str *w, int nw)
{
	RtFunc *fn = p->fn;
	int i = p->nout;
	int64_t in, ip;
	fp8rt_status st;
	if (nw == 4)
		return parse_port(p, w, nw, fn->out, &p->nout, "output");
	if (nw != 6 || w[4].n < 8 || memcmp(w[4].p, "updates=", 8) || w[5].n < 8 || memcmp(w[5].p, "inplace=", 8))
		return fail(p, "'output' wants 3 words (output N NAME TYPE) or 5 (... updates=I inplace=0|1), got %d",
			nw - 1);
	if (p->plan->version < 7)
		return fail(p, "output key 'updates' needs plan version 7 (this plan is version %d)", p->plan->version);
	if ((st = parse_port_words(p, w, fn->out, &p->nout, "output")) ||
		(st = parse_int(p, (Str){ w[4].p + 8, w[4].n - 8 }, 0, INT32_MAX, "updates", &in)) ||
		(st = parse_int(p, (Str){ w[5].p + 8, w[5].n - 8 }, 0, 1, "inplace", &ip)))
		return st;
	if (in >= p->nin)
		return fail(p, "output %d: updates=%lld names no input before it", i, (long long)in);
	const RtType *a = &fn->in[in].type, *b = &fn->out[i].type;
	if (a->dtype != b->dtype || a->rank != b->rank || memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims))
		return fail(
			p, "output %d: updates input %lld '%s', of another type", i, (long long)in, fn->in[in].name);
	for (int j = 0; j < i; j++)
		if (fn->out[j].updates == in)
			return fail(p, "outputs %d and %d both update input %lld", j, i, (long long)in);
	fn->out[i].updates = (int)in;
	fn->out[i].inplace = (int)ip;
	return FP8RT_OK;
}

/* state N NAME TYPE from=FUNCTION */
static fp8rt_status
parse_state(Parser *p, const Str *w, int nw)
{
	RtPlan *pl = p->plan;
	int i = p->nstate;
	if (nw != 5 || w[4].n < 5 || memcmp(w[4].p, "from=", 5) != 0)
		return fail(p, "'state' wants 4 words (state N NAME TYPE from=FUNCTION)");
	fp8rt_status st = parse_port_words(p, w, pl->state, &p->nstate, "state");
	if (st)
		return st;
	Str from = { w[4].p + 5, w[4].n - 5 };
	for (int f = 0; f < pl->nfunc; f++)
		if (eq(from, pl->func[f].name)) {
			pl->state[i].from = f;
			return FP8RT_OK;
		}
	return fail(p, "state %d: from=%.*s names no function of the plan", i, W(from));
}

/* target := 'sm_' digits [ 'a' | 'f' ] */
static fp8rt_status
parse_target(Parser *p, const Str *w, int nw)
{
	RtPlan *pl = p->plan;
	if (pl->target[0])
		return fail(p, "second 'target' line");
	if (nw != 2)
		return fail(p, "'target' wants one word (target sm_90)");
	Str s = w[1];
	size_t i = 3;
	int64_t sm;
	if (s.n < 5 || s.n >= sizeof pl->target || memcmp(s.p, "sm_", 3) != 0)
		return fail(p, "bad target '%.*s' (sm_89, sm_90, sm_90a, sm_100, ...)", W(s));
	while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9')
		i++;
	char suffix = i < s.n ? s.p[i] : 0;
	if (i + (suffix != 0) != s.n || (suffix && suffix != 'a' && suffix != 'f'))
		return fail(p, "bad target '%.*s' (sm_89, sm_90, sm_90a, sm_100, ...)", W(s));
	fp8rt_status st = parse_int(p, (Str){ s.p + 3, i - 3 }, 10, 9999, "target sm", &sm);
	if (st)
		return st;
	memcpy(pl->target, s.p, s.n);
	pl->target[s.n] = 0;
	pl->sm = (int)sm;
	pl->sm_suffix = suffix;
	return FP8RT_OK;
}

static fp8rt_status
parse_workspace(Parser *p, const Str *w, int nw)
{
	if (p->ws_seen)
		return fail(p,
			p->plan->version < 2 ? "second 'workspace' line" : "second 'workspace' line in function %s",
			p->fn->name);
	if (nw != 2)
		return fail(p, "'workspace' wants one word (workspace BYTES)");
	p->ws_seen = 1;
	return parse_int(p, w[1], 0, INT64_MAX / 2, "workspace", &p->fn->workspace);
}

/* buffer N TYPE [layout=[...]] offset=O bytes=B [zero] */
static fp8rt_status
parse_buffer(Parser *p, const Str *w, int nw)
{
	static const char *const keys[] = { "layout", "offset", "bytes" };
	Str val[3] = { { 0 } };
	int64_t n, perm[FP8RT_MAX_RANK];
	int nperm;
	if (nw < 3)
		return fail(p, "'buffer' wants N TYPE offset=O bytes=B");
	fp8rt_status st = parse_int(p, w[1], 0, INT32_MAX, "buffer", &n);
	if (st)
		return st;
	int idx = p->nbuf;
	if (n != idx)
		return fail(p, "buffer %lld out of order: expected buffer %d (numbered from 0 in order)", (long long)n,
			idx);
	RtBuffer *b = &p->fn->buf[idx];
	b->line = p->line;
	if ((st = parse_type(p, w[2], &b->type)) || (st = parse_keys(p, w, nw, 3, keys, 3, 6u, val, "zero", &b->zero)))
		return st;
	p->nbuf++;
	for (int i = 0; i < b->type.rank; i++)
		b->layout[i] = i;
	if (val[0].p) {
		if ((st = parse_list(p, val[0], "layout", perm, &nperm)))
			return st;
		unsigned used = 0;
		if (nperm != b->type.rank)
			return fail(p, "layout has %d entries for a rank-%d buffer", nperm, b->type.rank);
		for (int i = 0; i < nperm; i++) {
			if (perm[i] >= nperm || (used & (1u << perm[i])))
				return fail(p, "layout '%.*s' is not a permutation of 0..%d", W(val[0]), nperm - 1);
			used |= 1u << perm[i];
			b->layout[i] = (int)perm[i];
		}
	}
	if ((st = parse_int(p, val[1], 0, INT64_MAX / 4, "offset", &b->offset)) ||
		(st = parse_int(p, val[2], 0, INT64_MAX / 4, "bytes", &b->bytes)))
		return st;
	return FP8RT_OK;
}

/* refs := [ref {"," ref}] — key names it in messages */
static fp8rt_status
parse_ref_list(Parser *p, Str s, const char *key, RtRef **out, int *nout)
{
	*nout = 0;
	if (s.n == 0)
		return FP8RT_OK;
	int n = 1;
	for (size_t i = 0; i < s.n; i++)
		n += s.p[i] == ',';
	RtRef *r = arena_alloc(p->plan->arena, (size_t)n * sizeof *r);
	if (!r)
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	size_t i = 0;
	for (int k = 0; k < n; k++) {
		size_t start = i;
		while (i < s.n && s.p[i] != ',')
			i++;
		if (i == start)
			return fail(p, "%s: empty reference in '%.*s'", key, W(s));
		fp8rt_status st = parse_ref(p, (Str){ s.p + start, i - start }, &r[k]);
		if (st)
			return st;
		i++;
	}
	*out = r;
	*nout = n;
	return FP8RT_OK;
}

/* kernel := [A-Za-z_$] [A-Za-z0-9_$]*  (common/ident.h) */
static int
is_ident(Str s)
{
	return plan_ident(s.p, s.n);
}

/* launch KERNEL grid=G block=B smem=S coop=C [per_sm=N] args=R,R,...
 * (per_sm: version 4) */
static fp8rt_status
parse_launch(Parser *p, const Str *w, int nw, RtStep *step)
{
	static const char *const keys[] = { "grid", "block", "smem", "coop", "args", "per_sm" };
	Str val[6] = { { 0 } };
	RtLaunch *l = &step->u.launch;
	fp8rt_status st;
	step->kind = STEP_LAUNCH;
	if (nw < 2)
		return fail(p, "'launch' wants a kernel name first");
	if (!is_ident(w[1]))
		return fail(p, "'launch' wants a kernel name first, got '%.*s'", W(w[1]));
	if ((st = parse_keys(p, w, nw, 2, keys, 6, 31u, val, NULL, NULL)))
		return st;
	if (val[5].p && p->plan->version < 4)
		return fail(p, "launch key 'per_sm' needs plan version 4 (this plan is version %d)", p->plan->version);
	l->kernel = arena_alloc(p->plan->arena, w[1].n + 1);
	if (!l->kernel)
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	memcpy(l->kernel, w[1].p, w[1].n);
	if ((st = parse_int(p, val[0], 0, INT32_MAX, "grid", &l->grid)) ||
		(st = parse_int32(p, val[1], 1, 1024, "block", &l->block)) ||
		(st = parse_int32(p, val[2], 0, INT32_MAX, "smem", &l->smem)) ||
		(st = parse_int32(p, val[3], 0, 1, "coop", &l->coop)) ||
		(val[5].p && (st = parse_int32(p, val[5], 1, 1024, "per_sm", &l->per_sm))))
		return st;
	return parse_ref_list(p, val[4], "args", &l->args, &l->nargs);
}

static fp8rt_status
parse_dtype_val(Parser *p, Str s, const char *what, fp8rt_dtype *dt)
{
	*dt = rt_dtype_parse(s.p, s.n);
	if (*dt == FP8RT_DTYPE_NONE)
		return fail(p, "%s: unknown dtype '%.*s'", what, W(s));
	return FP8RT_OK;
}

static const char *const epilogues[] = {
	[RT_EPI_NONE] = "none", [RT_EPI_RELU] = "relu", [RT_EPI_GELU] = "gelu", [RT_EPI_GELU_AUX] = "gelu_aux"
};

/* the keys of a gemm line: version 1's first, then version 2's, then 3's */
enum {
	G_D,
	G_A,
	G_B,
	G_SCALE_A,
	G_SCALE_B,
	G_BIAS,
	G_M,
	G_N,
	G_K,
	G_ATYPE,
	G_BTYPE,
	G_DTYPE,
	G_FAST_ACCUM,
	G_BATCH,
	G_STRIDE_A,
	G_STRIDE_B,
	G_STRIDE_D,
	G_TRANS_A,
	G_TRANS_B,
	G_EPILOGUE,
	G_AUX,
	G_SCALE_MODE,
	G_NKEYS
};
#define G_V1KEYS   G_BATCH
#define G_V2KEYS   G_SCALE_MODE
#define G_SCALED   ((1u << G_SCALE_A) | (1u << G_SCALE_B) | (1u << G_FAST_ACCUM))
#define G_OPTIONAL ((1u << G_AUX) | (1u << G_SCALE_MODE))

static const char *const scale_modes[] = {
	[FP8RT_SCALE_TENSOR] = "tensor", [FP8RT_SCALE_ROW] = "row", [FP8RT_SCALE_BLOCK] = "block"
};

/* the index of s in words[0..n), or -1 */
static int
word_index(Str s, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (eq(s, words[i]))
			return i;
	return -1;
}

static fp8rt_status
parse_epilogue(Parser *p, Str s, RtEpilogue *e)
{
	int i = word_index(s, epilogues, (int)(sizeof epilogues / sizeof epilogues[0]));
	if (i < 0)
		return fail(p, "epilogue: unknown epilogue '%.*s' (none, relu, gelu or gelu_aux)", W(s));
	*e = (RtEpilogue)i;
	return FP8RT_OK;
}

/* the version 2 keys (version 1 leaves them at the TN form) */
static fp8rt_status
parse_gemm_v2(Parser *p, const Str *val, RtGemm *g)
{
	fp8rt_status st;
	if ((st = parse_int(p, val[G_BATCH], 1, INT32_MAX, "batch", &g->batch)) ||
		(st = parse_int(p, val[G_STRIDE_A], 0, INT64_MAX / 4, "stride_a", &g->stride_a)) ||
		(st = parse_int(p, val[G_STRIDE_B], 0, INT64_MAX / 4, "stride_b", &g->stride_b)) ||
		(st = parse_int(p, val[G_STRIDE_D], 0, INT64_MAX / 4, "stride_d", &g->stride_d)) ||
		(st = parse_int32(p, val[G_TRANS_A], 0, 1, "trans_a", &g->trans_a)) ||
		(st = parse_int32(p, val[G_TRANS_B], 0, 1, "trans_b", &g->trans_b)) ||
		(st = parse_epilogue(p, val[G_EPILOGUE], &g->epilogue)))
		return st;
	if ((g->epilogue == RT_EPI_GELU_AUX) != (val[G_AUX].p != NULL))
		return fail(p, val[G_AUX].p ? "key 'aux' is for epilogue=gelu_aux" : "epilogue=gelu_aux wants aux=");
	return val[G_AUX].p ? parse_ref(p, val[G_AUX], &g->aux) : FP8RT_OK;
}

static fp8rt_status
parse_scale_mode(Parser *p, Str s, fp8rt_scale_mode *m)
{
	int i = word_index(s, scale_modes, (int)(sizeof scale_modes / sizeof scale_modes[0]));
	if (i < 0)
		return fail(p, "scale_mode: unknown scale mode '%.*s' (tensor, row or block)", W(s));
	*m = (fp8rt_scale_mode)i;
	return FP8RT_OK;
}

/* version 1: gemm d=R a=R b=R scale_a=R scale_b=R bias=R|none m=M n=N k=K atype=T btype=T dtype=T fast_accum=0|1
 * version 2: the same and batch= stride_a= stride_b= stride_d= trans_a= trans_b= epilogue=
 * [aux=R, for epilogue=gelu_aux only], where scale_a, scale_b and fast_accum are given for fp8
 * operands and only for them
 * version 3: the same and, optionally, scale_mode=tensor|row for fp8 operands */
static fp8rt_status
parse_gemm(Parser *p, const Str *w, int nw, RtStep *step)
{
	static const char *const keys[G_NKEYS] = { [G_D] = "d",
		[G_A] = "a",
		[G_B] = "b",
		[G_SCALE_A] = "scale_a",
		[G_SCALE_B] = "scale_b",
		[G_BIAS] = "bias",
		[G_M] = "m",
		[G_N] = "n",
		[G_K] = "k",
		[G_ATYPE] = "atype",
		[G_BTYPE] = "btype",
		[G_DTYPE] = "dtype",
		[G_FAST_ACCUM] = "fast_accum",
		[G_BATCH] = "batch",
		[G_STRIDE_A] = "stride_a",
		[G_STRIDE_B] = "stride_b",
		[G_STRIDE_D] = "stride_d",
		[G_TRANS_A] = "trans_a",
		[G_TRANS_B] = "trans_b",
		[G_EPILOGUE] = "epilogue",
		[G_AUX] = "aux",
		[G_SCALE_MODE] = "scale_mode" };
	Str val[G_NKEYS] = { { 0 } };
	RtGemm *g = &step->u.gemm;
	int v2 = p->plan->version >= 2;
	int nkeys = p->plan->version >= 3 ? G_NKEYS : v2 ? G_V2KEYS : G_V1KEYS;
	unsigned all = ((1u << nkeys) - 1) & ~G_OPTIONAL;
	fp8rt_status st;
	step->kind = STEP_GEMM;
	if ((st = parse_keys(p, w, nw, 1, keys, nkeys, v2 ? all & ~G_SCALED : all, val, NULL, NULL)))
		return st;
	if ((st = parse_dtype_val(p, val[G_ATYPE], "atype", &g->atype)) ||
		(st = parse_dtype_val(p, val[G_BTYPE], "btype", &g->btype)) ||
		(st = parse_dtype_val(p, val[G_DTYPE], "dtype", &g->dtype)))
		return st;
	g->scaled = is_fp8(g->atype) || is_fp8(g->btype) || !v2;
	static const int scaled_keys[] = { G_SCALE_A, G_SCALE_B, G_FAST_ACCUM };
	for (int i = 0; v2 && i < 3; i++) {
		int k = scaled_keys[i];
		if (g->scaled && !val[k].p)
			return fail(p, "missing key '%s=' (an fp8 gemm has scales and fast_accum)", keys[k]);
		if (!g->scaled && val[k].p)
			return fail(p, "key '%s' is for fp8 gemms; this one is %s x %s", keys[k],
				rt_dtype_name(g->atype), rt_dtype_name(g->btype));
	}
	if (val[G_SCALE_MODE].p && !g->scaled)
		return fail(p, "key 'scale_mode' is for fp8 gemms; this one is %s x %s", rt_dtype_name(g->atype),
			rt_dtype_name(g->btype));
	g->scale_mode = FP8RT_SCALE_TENSOR;
	if (val[G_SCALE_MODE].p && (st = parse_scale_mode(p, val[G_SCALE_MODE], &g->scale_mode)))
		return st;
	g->has_bias = !eq(val[G_BIAS], "none");
	if ((st = parse_ref(p, val[G_D], &g->d)) || (st = parse_ref(p, val[G_A], &g->a)) ||
		(st = parse_ref(p, val[G_B], &g->b)) ||
		(g->scaled &&
			((st = parse_ref(p, val[G_SCALE_A], &g->scale_a)) ||
				(st = parse_ref(p, val[G_SCALE_B], &g->scale_b)) ||
				(st = parse_int32(p, val[G_FAST_ACCUM], 0, 1, "fast_accum", &g->fast_accum)))) ||
		(g->has_bias && (st = parse_ref(p, val[G_BIAS], &g->bias))) ||
		(st = parse_int(p, val[G_M], 0, INT32_MAX, "m", &g->m)) ||
		(st = parse_int(p, val[G_N], 0, INT32_MAX, "n", &g->n)) ||
		(st = parse_int(p, val[G_K], 0, INT32_MAX, "k", &g->k)))
		return st;
	g->batch = 1;
	g->trans_b = 1;
	if (v2 && (st = parse_gemm_v2(p, val, g)))
		return st;
	g->bias_dtype = !g->has_bias ? FP8RT_DTYPE_NONE : g->scaled ? rt_gemm_bias_dtype(g->dtype) : g->dtype;
	return FP8RT_OK;
}

/* ---- call: an extern ---- */

#define MAXARGS 256

static int
hex(char c)
{
	return c >= '0' && c <= '9'    ? c - '0'
		: c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10
				       : -1;
}

/* The value of args=: %XX escapes decoded, into the arena. */
static fp8rt_status
decode_args(Parser *p, Str s, char **out)
{
	char *d = arena_alloc(p->plan->arena, s.n + 1);
	size_t n = 0;
	if (!d)
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	for (size_t i = 0; i < s.n; i++) {
		if (s.p[i] != '%') {
			d[n++] = s.p[i];
			continue;
		}
		int hi = i + 2 < s.n ? hex(s.p[i + 1]) : -1, lo = i + 2 < s.n ? hex(s.p[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return fail(p, "args: bad escape at column %zu of '%.*s' (%%XX, two hex digits, not %%00)",
				i + 1, W(s));
		d[n++] = (char)(hi * 16 + lo);
		i += 2;
	}
	d[n] = 0;
	*out = d;
	return FP8RT_OK;
}

typedef struct {
	Parser *p;
	const char *s, *at; /* the decoded list; where the reader is */
	fp8rt_arg *args;
	int nargs, ntensors, nins;
} ArgReader;

static fp8rt_status
arg_fail(ArgReader *a, const char *what)
{
	return fail(a->p, "args: %s at column %d of '%.40s'", what, (int)(a->at - a->s) + 1, a->s);
}

static int
is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int
is_ident_char(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* A copy of [b, e) in the arena. */
static char *
arena_str(Parser *p, const char *b, const char *e)
{
	char *c = arena_alloc(p->plan->arena, (size_t)(e - b) + 1);
	if (c)
		memcpy(c, b, (size_t)(e - b));
	return c;
}

static fp8rt_status arg_value(ArgReader *a, const char *key, int depth);

static fp8rt_status
arg_number(ArgReader *a, fp8rt_arg *g)
{
	const char *b = a->at, *q = b;
	char buf[64];
	if (*q == '-')
		q++;
	if (!strncmp(q, "inf", 3) || !strncmp(q, "nan", 3)) {
		g->kind = FP8RT_ARG_FLOAT;
		g->f = q[0] == 'n' ? NAN : b[0] == '-' ? -INFINITY : INFINITY;
		a->at = q + 3;
		return FP8RT_OK;
	}
	while ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
		((*q == '-' || *q == '+') && (q[-1] == 'e' || q[-1] == 'E')))
		q++;
	if (q == b || (size_t)(q - b) >= sizeof buf)
		return arg_fail(a, "expected a value");
	memcpy(buf, b, (size_t)(q - b));
	buf[q - b] = 0;
	char *end;
	errno = 0;
	if (strpbrk(buf, ".eE")) {
		g->kind = FP8RT_ARG_FLOAT;
		g->f = strtod(buf, &end);
	} else {
		g->kind = FP8RT_ARG_INT;
		g->i = strtoll(buf, &end, 10);
	}
	/* ERANGE on a float is an error when it overflows; a subnormal (as
	 * the compiler writes 5e-324) is a value */
	if (*end || (errno == ERANGE && (g->kind == FP8RT_ARG_INT || isinf(g->f))))
		return arg_fail(a, "bad number");
	a->at = q;
	return FP8RT_OK;
}

static fp8rt_status
arg_string(ArgReader *a, fp8rt_arg *g)
{
	const char *q = a->at + 1;
	char *d = arena_alloc(a->p->plan->arena, strlen(q) + 1);
	size_t n = 0;
	if (!d)
		return fail_st(a->p, FP8RT_OUT_OF_MEMORY, "out of memory");
	for (; *q != '\''; q++) {
		if (!*q)
			return arg_fail(a, "unterminated string");
		if (*q == '\\' && (q[1] == '\\' || q[1] == '\''))
			q++;
		d[n++] = *q;
	}
	d[n] = 0;
	g->kind = FP8RT_ARG_STRING;
	g->s = d;
	a->at = q + 1;
	return FP8RT_OK;
}

/* value := "@" N | number | True | False | None | STRING | NAME | "(" [value {"," value} [","]] ")" */
static fp8rt_status
arg_value(ArgReader *a, const char *key, int depth)
{
	fp8rt_status st;
	if (a->nargs == MAXARGS)
		return arg_fail(a, "more than 256 arguments");
	if (depth > 16)
		return arg_fail(a, "tuples nested too deep");
	int at = a->nargs++;
	fp8rt_arg *g = &a->args[at];
	memset(g, 0, sizeof *g);
	g->key = key;
	if (*a->at == '@') {
		char *end;
		long n = strtol(a->at + 1, &end, 10);
		if (end == a->at + 1 || n != a->ntensors || n >= a->nins)
			return arg_fail(a, "tensor @N out of order or range (the k-th is @k, below ins=)");
		g->kind = FP8RT_ARG_TENSOR;
		g->i = a->ntensors++;
		a->at = end;
		return FP8RT_OK;
	}
	if (*a->at == '\'')
		return arg_string(a, g);
	if (*a->at == '(') {
		a->at++;
		g->kind = FP8RT_ARG_TUPLE;
		while (*a->at != ')') {
			if ((st = arg_value(a, NULL, depth + 1)))
				return st;
			a->args[at].i++;
			if (*a->at == ',')
				a->at += a->at[1] == ' ' ? 2 : 1;
			else if (*a->at != ')')
				return arg_fail(a, "expected ',' or ')'");
		}
		a->at++;
		return FP8RT_OK;
	}
	if (!strncmp(a->at, "inf", 3) || !strncmp(a->at, "nan", 3))
		return arg_number(a, g);
	if (is_ident_start(*a->at)) {
		const char *b = a->at;
		while (is_ident_char(*a->at) || (*a->at == '.' && is_ident_start(a->at[1])))
			a->at++;
		size_t n = (size_t)(a->at - b);
		if (n == 4 && !memcmp(b, "True", 4))
			g->kind = FP8RT_ARG_BOOL, g->i = 1;
		else if (n == 5 && !memcmp(b, "False", 5))
			g->kind = FP8RT_ARG_BOOL;
		else if (n == 4 && !memcmp(b, "None", 4))
			g->kind = FP8RT_ARG_NONE;
		else if (!(g->kind = FP8RT_ARG_NAME, g->s = arena_str(a->p, b, a->at)))
			return fail_st(a->p, FP8RT_OUT_OF_MEMORY, "out of memory");
		return FP8RT_OK;
	}
	return arg_number(a, g);
}

/* args := [item {"," item}]; item := [KEY "="] value — ", " is read as "," */
static fp8rt_status
parse_args(Parser *p, const char *s, RtCall *c)
{
	ArgReader a = { p, s, s, NULL, 0, 0, c->nins };
	fp8rt_status st;
	if (!(a.args = arena_alloc(p->plan->arena, MAXARGS * sizeof *a.args)))
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	while (*a.at) {
		const char *b = a.at, *key = NULL;
		while (is_ident_char(*a.at))
			a.at++;
		if (a.at > b && is_ident_start(*b) && *a.at == '=') {
			if (!(key = arena_str(p, b, a.at)))
				return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
			a.at++;
		} else {
			a.at = b;
		}
		if ((st = arg_value(&a, key, 0)))
			return st;
		if (!*a.at)
			break;
		if (*a.at != ',')
			return arg_fail(&a, "expected ','");
		a.at += a.at[1] == ' ' ? 2 : 1;
		if (!*a.at)
			return arg_fail(&a, "expected an argument");
	}
	if (a.ntensors != c->nins)
		return fail(p, "args: '%.40s' names %d tensors, ins= gives %d", s, a.ntensors, c->nins);
	c->args = a.args;
	c->nargs = a.nargs;
	return FP8RT_OK;
}

/* extern name := [A-Za-z0-9_.:]+ */
static int
is_extern_name(Str s)
{
	for (size_t i = 0; i < s.n; i++)
		if (!is_ident_char(s.p[i]) && s.p[i] != '.' && s.p[i] != ':')
			return 0;
	return s.n > 0;
}

/* call NAME ins=R,... outs=R,... args=TEXT */
static fp8rt_status
parse_call(Parser *p, const Str *w, int nw, RtStep *step)
{
	static const char *const keys[] = { "ins", "outs", "args" };
	Str val[3] = { { 0 } };
	RtCall *c = &step->u.call;
	char *args = NULL;
	fp8rt_status st;
	step->kind = STEP_CALL;
	if (nw < 2 || !is_extern_name(w[1]))
		return fail(p, "'call' wants the extern's name first (letters, digits, _ . :)");
	if ((st = parse_keys(p, w, nw, 2, keys, 3, 7u, val, NULL, NULL)))
		return st;
	if (!(c->name = arena_str(p, w[1].p, w[1].p + w[1].n)))
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	if ((st = parse_ref_list(p, val[0], "ins", &c->ins, &c->nins)) ||
		(st = parse_ref_list(p, val[1], "outs", &c->outs, &c->nouts)) || (st = decode_args(p, val[2], &args)))
		return st;
	if (c->nouts == 0)
		return fail(p, "call %s has no outs= (an extern has results)", c->name);
	int k = 0;
	while (k < p->plan->nexterns && strcmp(p->plan->externs[k], c->name))
		k++;
	if (k == p->plan->nexterns)
		p->plan->externs[p->plan->nexterns++] = c->name;
	return parse_args(p, args, c);
}

/* copy dst=R src=R bytes=B */
static fp8rt_status
parse_copy(Parser *p, const Str *w, int nw, RtStep *step)
{
	static const char *const keys[] = { "dst", "src", "bytes" };
	Str val[3] = { { 0 } };
	RtCopy *c = &step->u.copy;
	fp8rt_status st;
	step->kind = STEP_COPY;
	if ((st = parse_keys(p, w, nw, 1, keys, 3, 7u, val, NULL, NULL)) || (st = parse_ref(p, val[0], &c->dst)) ||
		(st = parse_ref(p, val[1], &c->src)) ||
		(st = parse_int(p, val[2], 0, INT64_MAX / 4, "bytes", &c->bytes)))
		return st;
	return FP8RT_OK;
}

/* collective KIND in=R out=R count=N dtype=T [op=OP | root=R] ranks=N id=N */
static fp8rt_status
parse_collective(Parser *p, const Str *w, int nw, RtStep *step)
{
	static const char *const keys[] = { "in", "out", "count", "dtype", "op", "ranks", "id", "root" };
	static const char *const kinds[] = { "all_gather", "reduce_scatter", "all_reduce", "broadcast" };
	static const char *const ops[] = { "sum", "avg", "prod", "min", "max" };
	/* the keys each kind has (bit k: keys[k]) */
	static const unsigned want[] = { 0x6Fu, 0x7Fu, 0x7Fu, 0xEFu };
	Str val[8] = { { 0 } };
	RtCollective *c = &step->u.coll;
	int64_t v;
	fp8rt_status st;
	step->kind = STEP_COLLECTIVE;
	c->kind = (RtCollKind)-1;
	for (int k = 0; nw >= 2 && k < 4; k++)
		if (eq(w[1], kinds[k]))
			c->kind = (RtCollKind)k;
	if ((int)c->kind < 0)
		return fail(
			p, "'collective' wants its kind first (all_gather, reduce_scatter, all_reduce or broadcast)");
	if (c->kind == RT_BROADCAST && p->plan->version < 6)
		return fail(p, "a broadcast needs plan version 6 (this plan is version %d)", p->plan->version);
	if ((st = parse_keys(p, w, nw, 2, keys, 8, want[c->kind], val, NULL, NULL)) ||
		(st = parse_ref(p, val[0], &c->in)) || (st = parse_ref(p, val[1], &c->out)) ||
		(st = parse_int(p, val[2], 0, INT64_MAX / 4, "count", &c->count)) ||
		(st = parse_dtype_val(p, val[3], "dtype", &c->dtype)) ||
		(st = parse_int(p, val[5], 0, 1 << 20, "ranks", &v)))
		return st;
	c->ranks = (int)v;
	if ((st = parse_int(p, val[6], 0, INT32_MAX, "id", &v)))
		return st;
	c->id = (int)v;
	if ((c->kind == RT_ALL_GATHER || c->kind == RT_BROADCAST) && val[4].p)
		return fail(p, "%s has no op=", c->kind == RT_ALL_GATHER ? "an all_gather" : "a broadcast");
	if (c->kind != RT_BROADCAST && val[7].p)
		return fail(p, "only a broadcast has a root=");
	c->op = RT_RED_SUM;
	c->root = 0;
	if (c->kind == RT_BROADCAST) {
		if ((st = parse_int(p, val[7], 0, (1 << 20) - 1, "root", &v)))
			return st;
		c->root = (int)v;
		if (c->ranks && c->root >= c->ranks)
			return fail(p, "root=%d is no rank of %d", c->root, c->ranks);
	} else if (c->kind != RT_ALL_GATHER) {
		int k = 0;
		while (k < 5 && !eq(val[4], ops[k]))
			k++;
		if (k == 5)
			return fail(p, "op: '%.*s' is none of sum, avg, prod, min, max", W(val[4]));
		c->op = (RtRedOp)k;
	}
	if (c->ranks == 0 && c->kind != RT_ALL_REDUCE && c->kind != RT_BROADCAST)
		return fail(p, "ranks=0 (any number) is for all_reduce and broadcast alone");
	return FP8RT_OK;
}

/* wait id=N */
static fp8rt_status
parse_wait(Parser *p, const Str *w, int nw, RtStep *step)
{
	static const char *const keys[] = { "id" };
	Str val[1] = { { 0 } };
	int64_t v;
	fp8rt_status st;
	step->kind = STEP_WAIT;
	if ((st = parse_keys(p, w, nw, 1, keys, 1, 1u, val, NULL, NULL)) ||
		(st = parse_int(p, val[0], 0, INT32_MAX, "id", &v)))
		return st;
	step->u.wait = (int)v;
	return FP8RT_OK;
}

/* ---- whole-plan checks --------------------------------------------------- */

const RtType *
rt_plan_ref_type(const RtPlan *plan, const RtFunc *fn, RtRef r)
{
	switch (r.kind) {
	case REF_IN:    return &fn->in[r.index].type;
	case REF_OUT:   return &fn->out[r.index].type;
	case REF_BUF:   return &fn->buf[r.index].type;
	case REF_STATE: return &plan->state[r.index].type;
	}
	return NULL;
}

int64_t
rt_plan_ref_bytes(const RtPlan *plan, const RtFunc *fn, RtRef r)
{
	if (r.kind == REF_BUF)
		return fn->buf[r.index].bytes;
	const RtType *t = rt_plan_ref_type(plan, fn, r);
	return rt_type_numel(t) * (int64_t)rt_dtype_size(t->dtype);
}

static int
is_out(RtRef r, int out)
{
	return r.kind == REF_OUT && r.index == out;
}

/* how many times step s names out:`out` */
static int
out_refs(const RtStep *s, int out)
{
	int n = 0;
	switch (s->kind) {
	case STEP_LAUNCH:
		for (int i = 0; i < s->u.launch.nargs; i++)
			n += is_out(s->u.launch.args[i], out);
		return n;
	case STEP_GEMM: {
		const RtGemm *g = &s->u.gemm;
		return is_out(g->d, out) + is_out(g->a, out) + is_out(g->b, out) +
			(g->scaled && (is_out(g->scale_a, out) + is_out(g->scale_b, out))) +
			(g->has_bias && is_out(g->bias, out)) + (g->epilogue == RT_EPI_GELU_AUX && is_out(g->aux, out));
	}
	case STEP_COPY: return is_out(s->u.copy.dst, out) + is_out(s->u.copy.src, out);
	case STEP_CALL:
		for (int i = 0; i < s->u.call.nins; i++)
			n += is_out(s->u.call.ins[i], out);
		for (int i = 0; i < s->u.call.nouts; i++)
			n += is_out(s->u.call.outs[i], out);
		return n;
	case STEP_COLLECTIVE: return is_out(s->u.coll.in, out) + is_out(s->u.coll.out, out);
	case STEP_WAIT:       return 0;
	}
	return n;
}

int
rt_plan_output_source(const RtPlan *plan, const RtFunc *fn, int out)
{
	const RtStep *copy = NULL;
	int refs = 0;
	for (int i = 0; i < fn->nstep; i++) {
		int n = out_refs(&fn->step[i], out);
		if (n && fn->step[i].kind == STEP_COPY)
			copy = &fn->step[i];
		refs += n;
	}
	if (refs != 1 || !copy || !is_out(copy->u.copy.dst, out) || copy->u.copy.src.kind != REF_IN)
		return -1;
	const RtType *ti = &fn->in[copy->u.copy.src.index].type, *to = &fn->out[out].type;
	if (ti->dtype != to->dtype || ti->rank != to->rank ||
		memcmp(ti->dims, to->dims, (size_t)ti->rank * sizeof *ti->dims) ||
		copy->u.copy.bytes != rt_plan_ref_bytes(plan, fn, copy->u.copy.dst))
		return -1;
	return copy->u.copy.src.index;
}

const char *
rt_ref_str(RtRef r, char *buf, size_t n)
{
	static const char *const kinds[] = {
		[REF_IN] = "in", [REF_OUT] = "out", [REF_BUF] = "buf", [REF_STATE] = "st"
	};
	snprintf(buf, n, "%s:%d", kinds[r.kind], r.index);
	return buf;
}

static fp8rt_status
check_buffers(Parser *p)
{
	const RtFunc *fn = p->fn;
	for (int i = 0; i < fn->nbuf; i++) {
		const RtBuffer *b = &fn->buf[i];
		int64_t need = rt_type_numel(&b->type) * (int64_t)rt_dtype_size(b->type.dtype);
		p->line = b->line;
		if (b->offset % 16)
			return fail(p, "buffer %d: offset=%lld is not a multiple of 16", i, (long long)b->offset);
		if (b->bytes < need)
			return fail(p, "buffer %d: bytes=%lld is less than its type needs (%lld)", i,
				(long long)b->bytes, (long long)need);
		if (b->offset + b->bytes > fn->workspace)
			return fail(p, "buffer %d (offset=%lld bytes=%lld) ends outside the workspace of %lld bytes", i,
				(long long)b->offset, (long long)b->bytes, (long long)fn->workspace);
	}
	return FP8RT_OK;
}

/* A gemm operand: the dtype it must have and the elements it must hold. */
static fp8rt_status
check_operand(Parser *p, RtRef r, const char *what, fp8rt_dtype want, int64_t numel)
{
	char rs[24];
	const RtType *t = rt_plan_ref_type(p->plan, p->fn, r);
	int64_t have = rt_plan_ref_bytes(p->plan, p->fn, r) / (int64_t)rt_dtype_size(want);
	if (t->dtype != want)
		return fail(p, "gemm %s=%s is %s, the gemm wants %s", what, rt_ref_str(r, rs, sizeof rs),
			rt_dtype_name(t->dtype), rt_dtype_name(want));
	if (numel < 0)
		return fail(p, "gemm %s=%s: the gemm's batch and stride span more than 2^63 elements", what,
			rt_ref_str(r, rs, sizeof rs));
	if (have < numel)
		return fail(p, "gemm %s=%s holds %lld elements, the gemm needs %lld", what,
			rt_ref_str(r, rs, sizeof rs), (long long)have, (long long)numel);
	return FP8RT_OK;
}

/* An fp8 gemm's scale: its f32 values as its mode lays them out
 * (rt_scale_numel: one tensor-wise, m or n row-wise, blocks block-wise) */
static fp8rt_status
check_scale(Parser *p, const RtGemm *g, RtRef r, const char *what, int b)
{
	char rs[24];
	const RtType *t = rt_plan_ref_type(p->plan, p->fn, r);
	fp8rt_scale_mode mode = g->scale_mode;
	int64_t want = rt_scale_numel(mode, g->m, g->n, g->k, b);
	if (t->dtype != FP8RT_F32 || rt_type_numel(t) != want)
		return fail(p, "gemm %s=%s is %s with %lld elements, the gemm wants %lld f32 (scale_mode=%s)", what,
			rt_ref_str(r, rs, sizeof rs), rt_dtype_name(t->dtype), (long long)rt_type_numel(t),
			(long long)want, scale_modes[mode]);
	return FP8RT_OK;
}

/* The dtypes and shape, by the rules of the gemm's kind. */
static fp8rt_status
check_gemm_kind(Parser *p, const RtGemm *g)
{
	char msg[256];
	fp8rt_status st;
	if (!g->scaled)
		st = rt_matmul_rules(g->m, g->n, g->k, g->batch, g->atype, g->btype, g->dtype, msg, sizeof msg);
	else if ((st = rt_gemm_rules(g->m, g->n, g->k, g->atype, g->btype, g->dtype, g->bias_dtype, msg, sizeof msg)) ==
			FP8RT_OK &&
		(g->batch != 1 || g->trans_a || !g->trans_b || g->epilogue != RT_EPI_NONE))
		return fail_st(p, FP8RT_UNSUPPORTED,
			"an fp8 gemm must be batch=1 trans_a=0 trans_b=1 epilogue=none (cuBLASLt's FP8 GEMM is TN; "
			"this runtime has no batched fp8 or fp8 epilogue)");
	if (st == FP8RT_OK && g->scaled && g->scale_mode == FP8RT_SCALE_BLOCK)
		st = rt_block_rules(g->m, g->k, g->fast_accum, msg, sizeof msg);
	if (st == FP8RT_UNSUPPORTED)
		return fail_st(p, st, "%s", msg);
	if (st)
		return fail(p, "%s", msg);
	if (g->batch > 1 && g->stride_d < g->m * g->n)
		return fail(p,
			"gemm batch=%lld writes d with stride_d=%lld, less than m*n=%lld: the batches would overlap",
			(long long)g->batch, (long long)g->stride_d, (long long)(g->m * g->n));
	return FP8RT_OK;
}

static fp8rt_status
check_gemm(Parser *p, const RtGemm *g)
{
	char rs[24];
	fp8rt_status st = check_gemm_kind(p, g);
	if (st)
		return st;
	if (g->d.kind == REF_IN)
		return fail(p, "gemm d=%s writes a program input", rt_ref_str(g->d, rs, sizeof rs));
	if (g->epilogue == RT_EPI_GELU_AUX && g->aux.kind == REF_IN)
		return fail(p, "gemm aux=%s writes a program input", rt_ref_str(g->aux, rs, sizeof rs));
	if (g->epilogue == RT_EPI_GELU_AUX && g->aux.kind == g->d.kind && g->aux.index == g->d.index)
		return fail(p, "gemm aux=%s is its d too", rt_ref_str(g->aux, rs, sizeof rs));
	if ((st = check_operand(p, g->d, "d", g->dtype, rt_gemm_span(g->batch, g->stride_d, g->m, g->n))) ||
		(st = check_operand(p, g->a, "a", g->atype, rt_gemm_span(g->batch, g->stride_a, g->m, g->k))) ||
		(st = check_operand(p, g->b, "b", g->btype, rt_gemm_span(g->batch, g->stride_b, g->k, g->n))) ||
		(g->scaled &&
			((st = check_scale(p, g, g->scale_a, "scale_a", 0)) ||
				(st = check_scale(p, g, g->scale_b, "scale_b", 1)))) ||
		(g->has_bias && (st = check_operand(p, g->bias, "bias", g->bias_dtype, g->n))) ||
		(g->epilogue == RT_EPI_GELU_AUX &&
			(st = check_operand(
				 p, g->aux, "aux", g->dtype, rt_gemm_span(g->batch, g->stride_d, g->m, g->n)))))
		return st;
	return FP8RT_OK;
}

static fp8rt_status
check_copy(Parser *p, const RtCopy *c)
{
	char rs[24];
	if (c->dst.kind == REF_IN)
		return fail(p, "copy dst=%s writes a program input", rt_ref_str(c->dst, rs, sizeof rs));
	int64_t ds = rt_plan_ref_bytes(p->plan, p->fn, c->dst), ss = rt_plan_ref_bytes(p->plan, p->fn, c->src);
	if (c->bytes > ds || c->bytes > ss)
		return fail(p, "copy bytes=%lld is more than %s holds (%lld bytes)", (long long)c->bytes,
			rt_ref_str(c->bytes > ds ? c->dst : c->src, rs, sizeof rs),
			(long long)(c->bytes > ds ? ds : ss));
	return FP8RT_OK;
}

static fp8rt_status
check_call(Parser *p, const RtCall *c)
{
	char rs[24];
	for (int j = 0; j < c->nouts; j++) {
		if (c->outs[j].kind == REF_IN)
			return fail(p, "call %s: outs %s is a program input", c->name,
				rt_ref_str(c->outs[j], rs, sizeof rs));
		for (int k = 0; k < j; k++)
			if (c->outs[k].kind == c->outs[j].kind && c->outs[k].index == c->outs[j].index)
				return fail(p, "call %s: outs names %s twice", c->name,
					rt_ref_str(c->outs[j], rs, sizeof rs));
	}
	return FP8RT_OK;
}

/* One reference of function f to a state slot: named (its writer must name
 * it), and read when f is not its writer; `write`: the step writes it (a
 * gemm's d, a copy's dst, a call's outs; a launch's arguments may be either) */
static fp8rt_status
state_ref(Parser *p, int f, RtRef r, int write, unsigned char *named, unsigned char *read)
{
	RtPlan *pl = p->plan;
	RtFunc *fn = &pl->func[f];
	if (r.kind != REF_STATE)
		return FP8RT_OK;
	const RtPort *slot = &pl->state[r.index];
	named[r.index] = 1;
	if (slot->from == f)
		return FP8RT_OK;
	if (write)
		return fail(p, "st:%d ('%s') is written here, but it is state that function %s writes", r.index,
			slot->name, pl->func[slot->from].name);
	if (!read[r.index]++)
		fn->reads[fn->nreads++] = r.index;
	return FP8RT_OK;
}

static fp8rt_status
step_state(Parser *p, int f, const RtStep *s, unsigned char *named, unsigned char *read)
{
	fp8rt_status st = FP8RT_OK;
	const RtGemm *g = &s->u.gemm;
	const RtCall *c = &s->u.call;
	switch (s->kind) {
	case STEP_LAUNCH:
		for (int j = 0; j < s->u.launch.nargs && !st; j++)
			st = state_ref(p, f, s->u.launch.args[j], 0, named, read);
		return st;
	case STEP_GEMM:
		if ((st = state_ref(p, f, g->d, 1, named, read)) || (st = state_ref(p, f, g->a, 0, named, read)) ||
			(st = state_ref(p, f, g->b, 0, named, read)) ||
			(g->scaled &&
				((st = state_ref(p, f, g->scale_a, 0, named, read)) ||
					(st = state_ref(p, f, g->scale_b, 0, named, read)))) ||
			(g->has_bias && (st = state_ref(p, f, g->bias, 0, named, read))) ||
			(g->epilogue == RT_EPI_GELU_AUX && (st = state_ref(p, f, g->aux, 1, named, read))))
			return st;
		return FP8RT_OK;
	case STEP_COPY:
		if ((st = state_ref(p, f, s->u.copy.dst, 1, named, read)))
			return st;
		return state_ref(p, f, s->u.copy.src, 0, named, read);
	case STEP_CALL:
		for (int j = 0; j < c->nouts && !st; j++)
			st = state_ref(p, f, c->outs[j], 1, named, read);
		for (int j = 0; j < c->nins && !st; j++)
			st = state_ref(p, f, c->ins[j], 0, named, read);
		return st;
	case STEP_COLLECTIVE:
		if ((st = state_ref(p, f, s->u.coll.out, 1, named, read)))
			return st;
		return state_ref(p, f, s->u.coll.in, 0, named, read);
	case STEP_WAIT: return FP8RT_OK;
	}
	return FP8RT_OK;
}

/* Each state slot is written by its function alone, which must name it;
 * the others read it (fn->reads). */
static fp8rt_status
check_state(Parser *p, int f)
{
	RtPlan *pl = p->plan;
	RtFunc *fn = &pl->func[f];
	unsigned char *named = arena_alloc(pl->arena, (size_t)pl->nstate + 1);
	unsigned char *read = named ? arena_alloc(pl->arena, (size_t)pl->nstate + 1) : NULL;
	if (!read || !(fn->reads = arena_alloc(pl->arena, ((size_t)pl->nstate + 1) * sizeof *fn->reads)))
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	for (int i = 0; i < fn->nstep; i++) {
		p->line = fn->step[i].line;
		fp8rt_status st = step_state(p, f, &fn->step[i], named, read);
		if (st)
			return st;
	}
	for (int i = 0; i < pl->nstate; i++)
		if (pl->state[i].from == f && !named[i]) {
			p->line = pl->state[i].line;
			return fail(p, "state %d ('%s') is from=%s, but function %s never writes it", i,
				pl->state[i].name, fn->name, fn->name);
		}
	return FP8RT_OK;
}

/* a collective's tensors hold what it reads and writes, of its dtype; a
 * reduction's dtype is one NCCL reduces; its id is the next */
static fp8rt_status
check_collective(Parser *p, const RtCollective *c)
{
	char rs[24];
	int64_t r = c->ranks ? c->ranks : 1, size = (int64_t)rt_dtype_size(c->dtype);
	int64_t in = c->kind == RT_REDUCE_SCATTER ? c->count * r : c->count;
	int64_t out = c->kind == RT_ALL_GATHER ? c->count * r : c->count;
	if (c->id != p->fn->ncoll)
		return fail(p, "collective id=%d: the function's collective %d is next", c->id, p->fn->ncoll);
	p->fn->ncoll++;
	if (c->out.kind == REF_IN)
		return fail(p, "collective out=%s writes a program input", rt_ref_str(c->out, rs, sizeof rs));
	if (c->kind != RT_ALL_GATHER && c->kind != RT_BROADCAST &&
		(c->dtype == FP8RT_F8E4M3FN || c->dtype == FP8RT_F8E5M2 || c->dtype == FP8RT_BOOL ||
			c->dtype == FP8RT_I16))
		return fail(p, "a collective reduces no %s (NCCL reduces u8 i8 i32 i64 f16 bf16 f32 f64)",
			rt_dtype_name(c->dtype));
	for (int k = 0; k < 2; k++) {
		RtRef ref = k ? c->out : c->in;
		const RtType *t = rt_plan_ref_type(p->plan, p->fn, ref);
		int64_t want = (k ? out : in) * size;
		if (t->dtype != c->dtype)
			return fail(p, "collective %s=%s is %s, not dtype=%s", k ? "out" : "in",
				rt_ref_str(ref, rs, sizeof rs), rt_dtype_name(t->dtype), rt_dtype_name(c->dtype));
		if (rt_plan_ref_bytes(p->plan, p->fn, ref) < want)
			return fail(p, "collective %s=%s holds %lld bytes, not the %lld it %s", k ? "out" : "in",
				rt_ref_str(ref, rs, sizeof rs), (long long)rt_plan_ref_bytes(p->plan, p->fn, ref),
				(long long)want, k ? "writes" : "reads");
	}
	return FP8RT_OK;
}

static fp8rt_status
check_steps(Parser *p)
{
	RtFunc *fn = p->fn;
	int nwait = 0;
	fn->ncoll = 0;
	for (int i = 0; i < fn->nstep; i++) {
		fp8rt_status st = FP8RT_OK;
		p->line = fn->step[i].line;
		if (fn->step[i].kind == STEP_GEMM)
			st = check_gemm(p, &fn->step[i].u.gemm);
		else if (fn->step[i].kind == STEP_COPY)
			st = check_copy(p, &fn->step[i].u.copy);
		else if (fn->step[i].kind == STEP_CALL)
			st = check_call(p, &fn->step[i].u.call);
		else if (fn->step[i].kind == STEP_COLLECTIVE)
			st = check_collective(p, &fn->step[i].u.coll);
		else if (fn->step[i].kind == STEP_WAIT) {
			int id = fn->step[i].u.wait;
			if (id >= fn->ncoll)
				return fail(p, "wait id=%d: no collective %d before it", id, id);
			for (int j = 0; j < i; j++)
				if (fn->step[j].kind == STEP_WAIT && fn->step[j].u.wait == id)
					return fail(p, "wait id=%d: collective %d was waited for on line %d", id, id,
						fn->step[j].line);
			nwait++;
		}
		if (st)
			return st;
	}
	if (nwait != fn->ncoll) {
		p->line = fn->line;
		return fail(p, "function %s: %d collectives but %d waits (each is waited for once)", fn->name,
			fn->ncoll, nwait);
	}
	return FP8RT_OK;
}

static fp8rt_status
check_plan(Parser *p)
{
	RtPlan *pl = p->plan;
	fp8rt_status st;
	for (int f = 0; f < pl->nfunc; f++) {
		p->fn = &pl->func[f];
		if ((st = check_buffers(p)) || (st = check_steps(p)) || (st = check_state(p, f)))
			return st;
	}
	for (int i = 0; i < pl->nstate; i++) {
		RtPort *s = &pl->state[i];
		int64_t bytes = rt_type_numel(&s->type) * (int64_t)rt_dtype_size(s->type.dtype);
		s->offset = pl->state_bytes;
		if (bytes > INT64_MAX / 4 - pl->state_bytes) {
			p->line = s->line;
			return fail(p, "state %d: the program's state is larger than 2^61 bytes", i);
		}
		pl->state_bytes += (bytes + 255) / 256 * 256;
	}
	return FP8RT_OK;
}

/* ---- the passes --------------------------------------------------------- */

/* header := 'fp8cc-plan' version */
static fp8rt_status
parse_header(Parser *p)
{
	Str w[MAXWORDS];
	int nw;
	fp8rt_status st;
	p->line = p->lines[0].no;
	if ((st = split_words(p, p->lines[0].s, w, &nw)))
		return st;
	if (nw != 2 || !eq(w[0], "fp8cc-plan"))
		return fail(p, "the first plan line must be 'fp8cc-plan VERSION'");
	int64_t v;
	if ((st = parse_int(p, w[1], 0, INT32_MAX, "plan version", &v)))
		return st;
	if (v < RT_PLAN_VERSION_MIN || v > RT_PLAN_VERSION_MAX)
		return fail_st(p, FP8RT_BAD_PROGRAM, "plan version %lld; this runtime reads versions %d to %d",
			(long long)v, RT_PLAN_VERSION_MIN, RT_PLAN_VERSION_MAX);
	p->plan->version = (int)v;
	return FP8RT_OK;
}

typedef enum {
	L_TARGET,
	L_STATE,
	L_FUNCTION, /* the program's lines */
	L_INPUT,
	L_OUTPUT,
	L_WORKSPACE,
	L_BUFFER,
	L_LAUNCH,
	L_GEMM,
	L_COPY,
	L_CALL,
	L_COLLECTIVE,
	L_WAIT,
	L_NKINDS
} LineKind;

static const char *const line_kinds[L_NKINDS] = { "target", "state", "function", "input", "output", "workspace",
	"buffer", "launch", "gemm", "copy", "call", "collective", "wait" };

/* Which kind a line is; -1 for a blank or comment line. */
static fp8rt_status
line_kind(Parser *p, const Line *ln, Str *w, int *nw, int *kind)
{
	fp8rt_status st;
	p->line = ln->no;
	if ((st = check_bytes(p, ln)) || (st = split_words(p, ln->s, w, nw)))
		return st;
	*kind = -1;
	if (*nw == 0)
		return FP8RT_OK;
	for (int k = 0; k < L_NKINDS; k++)
		if (eq(w[0], line_kinds[k]))
			*kind = k;
	if (*kind < 0)
		return fail(p,
			p->plan->version < 2
				? "unknown plan line '%.*s' (target input output workspace buffer launch gemm copy)"
				: "unknown plan line '%.*s' (target state function input output workspace buffer "
				  "launch gemm copy call collective wait)",
			W(w[0]));
	if ((*kind == L_CALL || (*kind <= L_FUNCTION && *kind != L_TARGET)) && p->plan->version < 2)
		return fail(p, "'%s' lines need plan version 2 (this plan is version 1)", line_kinds[*kind]);
	if ((*kind == L_COLLECTIVE || *kind == L_WAIT) && p->plan->version < 5)
		return fail(p, "'%s' lines need plan version 5 (this plan is version %d)", line_kinds[*kind],
			p->plan->version);
	return FP8RT_OK;
}

/* function NAME: a name for the runtime's API and fp8run, unique */
static fp8rt_status
parse_function(Parser *p, const Str *w, int nw, RtFunc *fn)
{
	RtPlan *pl = p->plan;
	if (nw != 2 || !is_ident(w[1]))
		return fail(p, "'function' wants a name (function forward)");
	for (RtFunc *g = pl->func; g < fn; g++)
		if (eq(w[1], g->name))
			return fail(p, "function '%.*s' is already defined on line %d", W(w[1]), g->line);
	if (!(fn->name = arena_alloc(pl->arena, w[1].n + 1)))
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	memcpy(fn->name, w[1].p, w[1].n);
	fn->line = p->line;
	return FP8RT_OK;
}

static fp8rt_status
alloc_func(Parser *p, RtFunc *fn)
{
	RtArena *a = p->plan->arena;
	fn->in = arena_alloc(a, (size_t)fn->nin * sizeof *fn->in + 1);
	fn->out = arena_alloc(a, (size_t)fn->nout * sizeof *fn->out + 1);
	fn->buf = arena_alloc(a, (size_t)fn->nbuf * sizeof *fn->buf + 1);
	fn->step = arena_alloc(a, (size_t)fn->nstep * sizeof *fn->step + 1);
	if (!fn->in || !fn->out || !fn->buf || !fn->step)
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	return FP8RT_OK;
}

/* Count the functions and state slots, then each function's lines, so that
 * references can be range-checked wherever they appear. A version 1 plan is
 * one function, "main". */
static fp8rt_status
count_lines(Parser *p)
{
	RtPlan *pl = p->plan;
	Str w[MAXWORDS];
	int nw, kind, f, ncalls = 0;
	fp8rt_status st;
	for (int i = 1; i < p->nlines; i++) {
		if ((st = line_kind(p, &p->lines[i], w, &nw, &kind)))
			return st;
		pl->nfunc += kind == L_FUNCTION;
		pl->nstate += kind == L_STATE;
		ncalls += kind == L_CALL;
	}
	if (pl->version < 2)
		pl->nfunc = 1;
	if (pl->nfunc == 0) {
		p->line = p->lines[0].no;
		return fail(p, "a version 2 plan needs a 'function NAME' line before its steps");
	}
	pl->func = arena_alloc(pl->arena, (size_t)pl->nfunc * sizeof *pl->func);
	pl->state = arena_alloc(pl->arena, (size_t)pl->nstate * sizeof *pl->state + 1);
	pl->externs = arena_alloc(pl->arena, (size_t)ncalls * sizeof *pl->externs + 1);
	if (!pl->func || !pl->state || !pl->externs)
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	if (pl->version < 2 && !(pl->func[0].name = arena_alloc(pl->arena, 8)))
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	if (pl->version < 2)
		memcpy(pl->func[0].name, "main", 5);
	f = pl->version < 2 ? 0 : -1;
	for (int i = 1; i < p->nlines; i++) {
		line_kind(p, &p->lines[i], w, &nw, &kind); /* read once already */
		if (kind == L_FUNCTION && (st = parse_function(p, w, nw, &pl->func[++f])))
			return st;
		if (kind == L_STATE && f >= 0)
			return fail(p, "'state' after a 'function' line: the state slots come first");
		if (kind <= L_FUNCTION)
			continue;
		if (f < 0)
			return fail(p, "'%s' before the first 'function' line", line_kinds[kind]);
		RtFunc *fn = &pl->func[f];
		fn->nin += kind == L_INPUT;
		fn->nout += kind == L_OUTPUT;
		fn->nbuf += kind == L_BUFFER;
		fn->nstep += kind >= L_LAUNCH;
	}
	for (f = 0; f < pl->nfunc; f++)
		if ((st = alloc_func(p, &pl->func[f])))
			return st;
	return FP8RT_OK;
}

static fp8rt_status
parse_line(Parser *p, const Str *w, int nw, int kind)
{
	RtFunc *fn = p->fn;
	switch (kind) {
	case L_TARGET:     return parse_target(p, w, nw);
	case L_STATE:      return parse_state(p, w, nw);
	case L_INPUT:      return parse_port(p, w, nw, fn->in, &p->nin, "input");
	case L_OUTPUT:     return parse_output(p, w, nw);
	case L_WORKSPACE:  return parse_workspace(p, w, nw);
	case L_BUFFER:     return parse_buffer(p, w, nw);
	case L_LAUNCH:     return parse_launch(p, w, nw, &fn->step[p->nstep]);
	case L_GEMM:       return parse_gemm(p, w, nw, &fn->step[p->nstep]);
	case L_COPY:       return parse_copy(p, w, nw, &fn->step[p->nstep]);
	case L_CALL:       return parse_call(p, w, nw, &fn->step[p->nstep]);
	case L_COLLECTIVE: return parse_collective(p, w, nw, &fn->step[p->nstep]);
	case L_WAIT:       return parse_wait(p, w, nw, &fn->step[p->nstep]);
	default:           return FP8RT_OK;
	}
}

static fp8rt_status
parse_lines(Parser *p)
{
	RtPlan *pl = p->plan;
	Str w[MAXWORDS];
	int nw, kind, f = pl->version < 2 ? 0 : -1;
	p->fn = &pl->func[0];
	for (int i = 1; i < p->nlines; i++) {
		fp8rt_status st = line_kind(p, &p->lines[i], w, &nw, &kind);
		if (st)
			return st;
		if (kind == L_FUNCTION) {
			p->fn = &pl->func[++f];
			p->nin = p->nout = p->nbuf = p->nstep = p->ws_seen = 0;
		}
		if ((st = parse_line(p, w, nw, kind)))
			return st;
		if (kind >= L_LAUNCH)
			p->fn->step[p->nstep++].line = p->line;
	}
	if (!pl->target[0]) {
		p->line = p->lines[0].no;
		return fail(p, "missing 'target' line (target sm_90)");
	}
	return FP8RT_OK;
}

static fp8rt_status
parse_plan(Parser *p)
{
	fp8rt_status st;
	p->plan->arena = calloc(1, sizeof *p->plan->arena);
	if (!p->plan->arena)
		return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
	if ((st = parse_header(p)) || (st = count_lines(p)) || (st = parse_lines(p)) || (st = check_plan(p)))
		return st;
	return FP8RT_OK;
}

/* ---- finding the plan in the text --------------------------------------- */

/* The next line of text at *pos (without its '\n' and a trailing '\r'). */
static int
next_line(const char *text, size_t len, size_t *pos, Str *line)
{
	if (*pos >= len)
		return 0;
	const char *nl = memchr(text + *pos, '\n', len - *pos);
	size_t end = nl ? (size_t)(nl - text) : len;
	line->p = text + *pos;
	line->n = end - *pos;
	if (line->n && line->p[line->n - 1] == '\r')
		line->n--;
	*pos = nl ? end + 1 : len;
	return 1;
}

static int
blank(Str s)
{
	for (size_t i = 0; i < s.n; i++)
		if (s.p[i] != ' ' && s.p[i] != '\t')
			return 0;
	return 1;
}

static fp8rt_status
add_line(Parser *p, Str s, int no, int col0, int *cap)
{
	if (p->nlines == *cap) {
		int ncap = *cap ? *cap * 2 : 64;
		Line *nl = realloc(p->lines, (size_t)ncap * sizeof *nl);
		if (!nl)
			return fail_st(p, FP8RT_OUT_OF_MEMORY, "out of memory");
		p->lines = nl;
		*cap = ncap;
	}
	p->lines[p->nlines++] = (Line){ s, no, col0 };
	return FP8RT_OK;
}

/* "//" then the plan line (one space after "//" is customary, not required) */
static int
comment_body(Str s, Str *body)
{
	if (s.n < 2 || s.p[0] != '/' || s.p[1] != '/')
		return 0;
	*body = (Str){ s.p + 2, s.n - 2 };
	return 1;
}

static int
is_word_line(Str s, const char *word)
{
	Str w[2];
	size_t i = 0;
	int n = 0;
	while (i < s.n && n < 2) {
		while (i < s.n && (s.p[i] == ' ' || s.p[i] == '\t'))
			i++;
		if (i == s.n)
			break;
		size_t start = i;
		while (i < s.n && s.p[i] != ' ' && s.p[i] != '\t')
			i++;
		w[n++] = (Str){ s.p + start, i - start };
	}
	return n >= 1 && eq(w[0], word);
}

/* ptx-file := blank* '//' 'fp8cc-plan' V NL { '//' plan-line NL } '//' 'end-plan' NL ptx */
static fp8rt_status
collect_ptx(Parser *p, const char *text, size_t len, size_t *ptx_offset)
{
	size_t pos = 0;
	int no = 0, cap = 0, in_plan = 0;
	Str s, body;
	while (next_line(text, len, &pos, &s)) {
		p->line = ++no;
		if (!in_plan) {
			if (blank(s))
				continue;
			if (!comment_body(s, &body) || !is_word_line(body, "fp8cc-plan"))
				return fail(p, "not an fp8cc PTX file: the first line is not '// fp8cc-plan VERSION'");
			in_plan = 1;
		} else if (!comment_body(s, &body)) {
			return fail(p, "plan line does not start with '//' (no '// end-plan' before it?)");
		} else if (is_word_line(body, "end-plan")) {
			*ptx_offset = pos;
			return FP8RT_OK;
		}
		fp8rt_status st = add_line(p, body, no, 2, &cap);
		if (st)
			return st;
	}
	if (!in_plan)
		return fail(p, "not an fp8cc PTX file: it is empty");
	return fail(p, "the plan has no '// end-plan' line");
}

static fp8rt_status
collect_text(Parser *p, const char *text, size_t len)
{
	size_t pos = 0;
	int no = 0, cap = 0;
	Str s;
	while (next_line(text, len, &pos, &s)) {
		p->line = ++no;
		fp8rt_status st;
		if (p->nlines == 0 && (blank(s) || s.p[0] == '#'))
			continue;
		if (p->nlines == 0 && !is_word_line(s, "fp8cc-plan"))
			return fail(p, "not an fp8cc plan: the first line is not 'fp8cc-plan VERSION'");
		if ((st = add_line(p, s, no, 0, &cap)))
			return st;
	}
	if (p->nlines == 0)
		return fail(p, "not an fp8cc plan: it is empty");
	return FP8RT_OK;
}

/* The PTX must carry the plan's target: its first ".target" directive names it. */
static fp8rt_status
check_ptx(Parser *p, const char *text, size_t len, size_t off)
{
	const char *nul = memchr(text + off, 0, len - off);
	size_t pos = off;
	int no = p->lines[p->nlines - 1].no + 1;
	Str s;
	p->line = no;
	if (nul && (size_t)(nul - text) + 1 != len)
		return fail(p, "NUL byte inside the PTX at offset %zu", (size_t)(nul - text));
	while (next_line(text, len, &pos, &s)) {
		p->line = ++no;
		size_t i = 0;
		while (i < s.n && (s.p[i] == ' ' || s.p[i] == '\t'))
			i++;
		if (s.n - i < 8 || memcmp(s.p + i, ".target", 7) != 0 || (s.p[i + 7] != ' ' && s.p[i + 7] != '\t'))
			continue;
		for (i += 7; i < s.n && (s.p[i] == ' ' || s.p[i] == '\t'); i++)
			;
		size_t start = i;
		while (i < s.n && s.p[i] != ',' && s.p[i] != ' ' && s.p[i] != '\t' && s.p[i] != ';')
			i++;
		Str t = { s.p + start, i - start };
		if (!eq(t, p->plan->target))
			return fail(
				p, "the PTX says '.target %.*s' but the plan says 'target %s'", W(t), p->plan->target);
		return FP8RT_OK;
	}
	return fail(p, "no PTX after the plan (no '.target' directive after '// end-plan')");
}

static fp8rt_status
finish(Parser *p, fp8rt_status st)
{
	free(p->lines);
	p->lines = NULL;
	if (st)
		rt_plan_free(p->plan);
	return st;
}

fp8rt_status
rt_plan_parse_ptx(const char *text, size_t len, const char *name, RtPlan *plan, char *err, size_t errlen)
{
	Parser p = { .name = name ? name : "<memory>", .err = err, .errlen = errlen, .plan = plan };
	memset(plan, 0, sizeof *plan);
	if (errlen)
		err[0] = 0;
	if (!text)
		len = 0;
	size_t off = 0;
	fp8rt_status st = collect_ptx(&p, text, len, &off);
	if (st == FP8RT_OK && (st = parse_plan(&p)) == FP8RT_OK && (st = check_ptx(&p, text, len, off)) == FP8RT_OK)
		plan->ptx_offset = off;
	return finish(&p, st);
}

fp8rt_status
rt_plan_parse_text(const char *text, size_t len, const char *name, RtPlan *plan, char *err, size_t errlen)
{
	Parser p = { .name = name ? name : "<memory>", .err = err, .errlen = errlen, .plan = plan };
	memset(plan, 0, sizeof *plan);
	if (errlen)
		err[0] = 0;
	if (!text)
		len = 0;
	fp8rt_status st = collect_text(&p, text, len);
	if (st == FP8RT_OK)
		st = parse_plan(&p);
	return finish(&p, st);
}
