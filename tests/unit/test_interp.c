/* test_interp.c — the reference interpreter, op by op, against results worked
 * out by hand from PyTorch eager's semantics (CUDA, torch 2.11).
 *
 * Each test builds a small function with the builder (ir_func_new, ir_param,
 * ir_instr, ir_full, ir_return), runs ir_interpret on host tensors and compares
 * every element bit for bit: results are decoded exactly to double and compared
 * with memcmp (so -0 differs from +0; NaN matches any NaN), 8-bit float codes
 * are compared raw. Inputs are special values: NaN, ±inf, ±0, subnormals, ties.
 * The first mismatches are logged with index, expected and got. Suite: interp. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "ir.h"

#define NSHOW 5        /* mismatches logged per check */
#define MAXN  16       /* elements per table row */
#define TINY  0x1p-149 /* smallest float32 subnormal */

#define I64(...)  ((const int64_t[]){ __VA_ARGS__ })
#define NI64(...) ((int)(sizeof(I64(__VA_ARGS__)) / sizeof(int64_t)))
#define SH(...)   NI64(__VA_ARGS__), I64(__VA_ARGS__)
#define DBL(...)  ((const double[]){ __VA_ARGS__ })
#define NDBL(...) ((int)(sizeof(DBL(__VA_ARGS__)) / sizeof(double)))
#define VEC(...)  NDBL(__VA_ARGS__), DBL(__VA_ARGS__)

static Arena *A;

static void
setup(void)
{
	A = arena_new();
}

static void
teardown(void)
{
	arena_free(A);
}

TestSuite(interp, .init = setup, .fini = teardown);

/* ---- tensors ---- */

static Tensor *
tens(const char *name, DType t, int rank, const int64_t *dims, const double *v)
{
	Tensor *x = tensor_new(name, t, rank, dims);

	cr_assert_not_null(x);
	for (int64_t i = 0; i < tensor_numel(x); i++)
		tensor_setf(x, i, v[i]);
	return x;
}

static Tensor *
tens_i(const char *name, DType t, int rank, const int64_t *dims, const int64_t *v)
{
	Tensor *x = tensor_new(name, t, rank, dims);

	cr_assert_not_null(x);
	for (int64_t i = 0; i < tensor_numel(x); i++)
		tensor_seti(x, i, v[i]);
	return x;
}

/* a 1-d tensor of 8-bit codes */
static Tensor *
tens_u8(const char *name, DType t, const uint8_t *codes, int n)
{
	Tensor *x = tensor_new(name, t, 1, I64(n));

	cr_assert_not_null(x);
	memcpy(x->data, codes, (size_t)n);
	return x;
}

static void
free_all(Tensor **t, int n)
{
	for (int i = 0; i < n; i++)
		tensor_free(t[i]);
}

/* ---- comparisons ---- */

static bool
same(double got, double want)
{
	return isnan(want) ? isnan(got) : memcmp(&got, &want, sizeof got) == 0;
}

/* every element of t, decoded exactly, is want[i] bit for bit */
static void
expect_vals(const Tensor *t, const double *want, int64_t n, const char *what)
{
	int bad = 0;

	cr_assert_eq(
		tensor_numel(t), n, "%s: %lld elements, expected %lld", what, (long long)tensor_numel(t), (long long)n);
	for (int64_t i = 0; i < n; i++) {
		double got = tensor_getf(t, i);

		if (!same(got, want[i]) && bad++ < NSHOW)
			cr_log_error("%s [%lld]: expected %a (%.17g), got %a (%.17g)", what, (long long)i, want[i],
				want[i], got, got);
	}
	cr_expect_eq(bad, 0, "%s: %d of %lld elements differ", what, bad, (long long)n);
}

static void
expect_ints(const Tensor *t, const int64_t *want, int64_t n, const char *what)
{
	int bad = 0;

	cr_assert_eq(
		tensor_numel(t), n, "%s: %lld elements, expected %lld", what, (long long)tensor_numel(t), (long long)n);
	for (int64_t i = 0; i < n; i++) {
		int64_t got = tensor_geti(t, i);

		if (got != want[i] && bad++ < NSHOW)
			cr_log_error("%s [%lld]: expected %lld, got %lld", what, (long long)i, (long long)want[i],
				(long long)got);
	}
	cr_expect_eq(bad, 0, "%s: %d of %lld elements differ", what, bad, (long long)n);
}

/* raw 8-bit codes (fp8) */
static void
expect_codes(const Tensor *t, const uint8_t *want, int64_t n, const char *what)
{
	const uint8_t *got = t->data;
	int bad = 0;

	cr_assert_eq(dt_size(t->dtype), 1);
	cr_assert_eq(
		tensor_numel(t), n, "%s: %lld elements, expected %lld", what, (long long)tensor_numel(t), (long long)n);
	for (int64_t i = 0; i < n; i++)
		if (got[i] != want[i] && bad++ < NSHOW)
			cr_log_error(
				"%s [%lld]: expected code 0x%02x, got 0x%02x", what, (long long)i, want[i], got[i]);
	cr_expect_eq(bad, 0, "%s: %d of %lld codes differ", what, bad, (long long)n);
}

/* ---- running ---- */

static void
verify_ok(Func *fn)
{
	char err[512] = "";

	cr_assert(ir_verify(fn, err, sizeof err, NULL), "verifier rejected the test function: %s", err);
}

/* interpret fn on ins; outs gets one tensor per return */
static void
run(Func *fn, Tensor **ins, Tensor **outs)
{
	char err[512] = "";

	verify_ok(fn);
	cr_assert(ir_interpret(fn, ins, outs, err, sizeof err), "ir_interpret failed: %s", err);
	for (uint32_t i = 0; i < fn->nrets; i++)
		cr_assert_not_null(outs[i]);
}

/* fn(ins...) = op(ins...) with result dtype rt, shaped as the highest-rank input */
static Tensor *
eval_op(Op op, DType rt, Tensor **ins, int nin)
{
	static const char *const names[] = { "a", "b", "c" };
	Func *fn = ir_func_new(A, ir_ops[op].name);
	uint32_t p[3], r;
	int big = 0;
	Tensor *out = NULL;

	for (int k = 0; k < nin; k++) {
		p[k] = ir_param(fn, names[k], ins[k]->dtype, ins[k]->rank, ins[k]->dims);
		if (ins[k]->rank > ins[big]->rank)
			big = k;
	}
	r = ir_instr(fn, op, p, nin, NULL, 0, rt, ins[big]->rank, ins[big]->dims);
	ir_return(fn, r, NULL);
	run(fn, ins, &out);
	return out;
}

/* x (dtype t) converted to dtype to */
static Tensor *
convert(Tensor *x, DType to)
{
	return eval_op(OP_CONVERT, to, &x, 1);
}

/* ---- unary elementwise ---- */

typedef struct {
	Op op;
	int n;
	double x[MAXN], want[MAXN];
} Unary;

static void
unary_table(DType t, const Unary *cases, size_t ncases)
{
	for (size_t c = 0; c < ncases; c++) {
		const Unary *u = &cases[c];
		Tensor *x = tens("a", t, 1, I64(u->n), u->x);
		Tensor *r = eval_op(u->op, u->op == OP_ISFINITE || u->op == OP_SIGNBIT ? DT_B8 : t, &x, 1);
		char what[64];
		int bad = 0;

		for (int i = 0; i < u->n; i++) {
			double got = tensor_getf(r, i);

			if (!same(got, u->want[i]) && bad++ < NSHOW)
				cr_log_error("%s %s(%a): expected %a (%.9g), got %a (%.9g)", ir_dtypes[t].name,
					ir_ops[u->op].name, u->x[i], u->want[i], u->want[i], got, got);
		}
		snprintf(what, sizeof what, "%s %s", ir_dtypes[t].name, ir_ops[u->op].name);
		cr_expect_eq(bad, 0, "%s: %d of %d elements differ", what, bad, u->n);
		tensor_free(x);
		tensor_free(r);
	}
}

static const Unary f32_unary[] = {
	{ OP_ABS, 8, { NAN, INFINITY, -INFINITY, 0.0, -0.0, -TINY, -2.5, 3 },
		{ NAN, INFINITY, INFINITY, 0.0, 0.0, TINY, 2.5, 3 } },
	{ OP_NEG, 6, { NAN, INFINITY, 0.0, -0.0, TINY, -2.5 }, { NAN, -INFINITY, -0.0, 0.0, -TINY, 2.5 } },
	{ OP_RECIPROCAL, 9, { NAN, INFINITY, -INFINITY, 0.0, -0.0, TINY, 2.5, -4, 3 },
		{ NAN, 0.0, -0.0, INFINITY, -INFINITY, INFINITY, 0.4f, -0.25, 0x1.555556p-2 } },
	{ OP_EXP, 8, { NAN, INFINITY, -INFINITY, 0.0, -0.0, TINY, 1, -200 },
		{ NAN, INFINITY, 0.0, 1, 1, 1, 0x1.5bf0a8p+1, 0.0 } },
	{ OP_EXP2, 10, { NAN, INFINITY, -INFINITY, 0.0, 3, -1, -149, -150, 128, 0.5 },
		{ NAN, INFINITY, 0.0, 1, 8, 0.5, TINY, 0.0, INFINITY, 0x1.6a09e6p+0 } },
	{ OP_LOG, 8, { NAN, INFINITY, -INFINITY, 0.0, -0.0, -1, 1, TINY },
		{ NAN, INFINITY, NAN, -INFINITY, -INFINITY, NAN, 0.0, -0x1.9d1dap+6 } },
	{ OP_LOG1P, 8, { NAN, INFINITY, -1, -2, 0.0, -0.0, TINY, -TINY },
		{ NAN, INFINITY, -INFINITY, NAN, 0.0, -0.0, TINY, -TINY } },
	{ OP_LOG2, 9, { NAN, INFINITY, 0.0, -0.0, -1, 1, 8, 0.5, TINY },
		{ NAN, INFINITY, -INFINITY, -INFINITY, NAN, 0.0, 3, -1, -149 } },
	{ OP_SQRT, 9, { NAN, INFINITY, -INFINITY, 0.0, -0.0, -1, 4, 2, TINY },
		{ NAN, INFINITY, NAN, 0.0, -0.0, NAN, 2, 0x1.6a09e6p+0, 0x1.6a09e6p-75 } },
	{ OP_RSQRT, 8, { NAN, INFINITY, 0.0, -0.0, -1, 4, 0.25, 2 },
		{ NAN, 0.0, INFINITY, -INFINITY, NAN, 0.5, 2, 0x1.6a09e6p-1 } },
	{ OP_TANH, 7, { NAN, INFINITY, -INFINITY, 0.0, -0.0, 20, -20 }, { NAN, 1, -1, 0.0, -0.0, 1, -1 } },
	{ OP_ERF, 6, { NAN, INFINITY, -INFINITY, 0.0, -0.0, 10 }, { NAN, 1, -1, 0.0, -0.0, 1 } },
	{ OP_SIN, 6, { NAN, INFINITY, -INFINITY, 0.0, -0.0, TINY }, { NAN, NAN, NAN, 0.0, -0.0, TINY } },
	{ OP_COS, 6, { NAN, INFINITY, -INFINITY, 0.0, -0.0, TINY }, { NAN, NAN, NAN, 1, 1, 1 } },
	/* sign(-0) = +0: c10::signum is (0 < x) - (x < 0) */
	{ OP_SIGN, 8, { INFINITY, -INFINITY, 0.0, -0.0, TINY, -TINY, -2.5, 3 }, { 1, -1, 0.0, 0.0, 1, -1, -1, 1 } },
	{ OP_FLOOR, 9, { NAN, INFINITY, -INFINITY, -0.0, TINY, -TINY, -2.5, 2.5, -0.5 },
		{ NAN, INFINITY, -INFINITY, -0.0, 0.0, -1, -3, 2, -1 } },
	{ OP_CEIL, 8, { NAN, INFINITY, -0.0, TINY, -TINY, -2.5, 2.5, -0.5 },
		{ NAN, INFINITY, -0.0, 1, -0.0, -2, 3, -0.0 } },
	/* round half to even (std::nearbyint) */
	{ OP_ROUND, 11, { NAN, INFINITY, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 3.5, TINY, 8388607.5 },
		{ NAN, INFINITY, -0.0, 0.0, 2, 2, -2, -0.0, 4, 0.0, 8388608 } },
	{ OP_TRUNC, 7, { NAN, INFINITY, -2.5, 2.5, -0.5, -0.0, TINY }, { NAN, INFINITY, -2, 2, -0.0, -0.0, 0.0 } },
	{ OP_ISFINITE, 8, { NAN, INFINITY, -INFINITY, 0.0, -0.0, TINY, FLT_MAX, -NAN }, { 0, 0, 0, 1, 1, 1, 1, 0 } },
	{ OP_SIGNBIT, 8, { NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, -TINY, 2 }, { 0, 1, 0, 1, 0, 1, 1, 0 } },
	{ OP_ACOS, 6, { NAN, 1, -1, 0.0, 2, INFINITY }, { NAN, 0.0, 0x1.921fb6p+1, 0x1.921fb6p+0, NAN, NAN } },
	{ OP_ACOSH, 5, { NAN, 1, INFINITY, 0.5, -INFINITY }, { NAN, 0.0, INFINITY, NAN, NAN } },
	{ OP_ASIN, 6, { NAN, 0.0, -0.0, 1, -1, 2 }, { NAN, 0.0, -0.0, 0x1.921fb6p+0, -0x1.921fb6p+0, NAN } },
	{ OP_ASINH, 5, { NAN, 0.0, -0.0, INFINITY, -INFINITY }, { NAN, 0.0, -0.0, INFINITY, -INFINITY } },
	{ OP_ATAN, 5, { NAN, 0.0, -0.0, INFINITY, -INFINITY }, { NAN, 0.0, -0.0, 0x1.921fb6p+0, -0x1.921fb6p+0 } },
	{ OP_ATANH, 6, { NAN, 0.0, -0.0, 1, -1, 2 }, { NAN, 0.0, -0.0, INFINITY, -INFINITY, NAN } },
	{ OP_COSH, 5, { NAN, 0.0, -0.0, INFINITY, -INFINITY }, { NAN, 1, 1, INFINITY, INFINITY } },
	{ OP_SINH, 5, { NAN, 0.0, -0.0, INFINITY, -INFINITY }, { NAN, 0.0, -0.0, INFINITY, -INFINITY } },
	{ OP_TAN, 5, { NAN, 0.0, -0.0, INFINITY, TINY }, { NAN, 0.0, -0.0, NAN, TINY } },
	{ OP_ERFC, 5, { NAN, INFINITY, -INFINITY, 0.0, 10 }, { NAN, 0.0, 2, 1, 0x1p-149 } },
	/* erfinv: Newton on erf in double, the f32 result rounded once */
	{ OP_ERFINV, 8, { NAN, 0.0, -0.0, 1, -1, 2, 0.5, -0.9 },
		{ NAN, 0.0, -0.0, INFINITY, -INFINITY, NAN, 0x1.e861fcp-2, -0x1.29c014p+0 } },
	{ OP_EXPM1, 6, { NAN, INFINITY, -INFINITY, 0.0, -0.0, TINY }, { NAN, INFINITY, -1, 0.0, -0.0, TINY } },
	{ OP_LOG10, 8, { NAN, INFINITY, 0.0, -0.0, -1, 1, 100, 1000 },
		{ NAN, INFINITY, -INFINITY, -INFINITY, NAN, 0.0, 2, 3 } },
	{ OP_LGAMMA, 7, { NAN, 1, 2, INFINITY, 0.0, -INFINITY, -1 },
		{ NAN, 0.0, 0.0, INFINITY, INFINITY, INFINITY, INFINITY } },
};

Test(interp, unary_f32_special_values) { unary_table(DT_F32, f32_unary, NELEM(f32_unary)); }

/* every float unary op of ops.def has a row above */
Test(interp, unary_table_covers_every_float_op)
{
	for (int op = 0; op < OP_COUNT; op++) {
		bool found = false;

		if (ir_ops[op].cls != OC_UNARY || ir_ops[op].tc == TC_INT || ir_ops[op].tc == TC_BOOL)
			continue;
		for (size_t c = 0; c < NELEM(f32_unary); c++)
			found |= (int)f32_unary[c].op == op;
		cr_expect(found, "no f32 test row for %s", ir_ops[op].name);
	}
}

/* torch.sign(nan) is 0 in torch 2.11 (pytorch#41245, still open): sign is
 * (0 < x) - (x < 0) on CPU and CUDA, so NaN gives 0 of either sign's NaN */
Test(interp, sign_of_nan_is_zero)
{
	static const Unary c[] = { { OP_SIGN, 2, { NAN, -NAN }, { 0.0, 0.0 } } };

	unary_table(DT_F32, c, 1);
	unary_table(DT_BF16, c, 1);
	unary_table(DT_F64, c, 1);
}

/* bf16 ops compute in float and round once to bf16 */
static const Unary bf16_unary[] = {
	{ OP_EXP, 3, { 1, 0.0, NAN }, { 2.71875, 1, NAN } },
	{ OP_RECIPROCAL, 3, { 3, 0.0, -0.0 }, { 0.333984375, INFINITY, -INFINITY } },
	{ OP_SQRT, 2, { 2, -0.0 }, { 1.4140625, -0.0 } },
	{ OP_NEG, 3, { NAN, -0.0, 0x1p-133 }, { NAN, 0.0, -0x1p-133 } },
	{ OP_ROUND, 3, { 2.5, -0.5, 3.5 }, { 2, -0.0, 4 } },
	{ OP_ISFINITE, 3, { INFINITY, NAN, 0x1.fep+127 }, { 0, 0, 1 } },
};

Test(interp, unary_bf16_rounds_once) { unary_table(DT_BF16, bf16_unary, NELEM(bf16_unary)); }

static const Unary f16_unary[] = {
	{ OP_RECIPROCAL, 3, { 3, 0.0, 65504 }, { 0.333251953125, INFINITY, 0x1p-16 } },
	{ OP_EXP, 3, { 12, -17, -20 }, { INFINITY, 0x1p-24, 0.0 } },
	{ OP_ABS, 2, { -0x1p-24, -65504 }, { 0x1p-24, 65504 } },
};

Test(interp, unary_f16) { unary_table(DT_F16, f16_unary, NELEM(f16_unary)); }

/* f64 ops compute in double */
static const Unary f64_unary[] = {
	{ OP_SQRT, 2, { 2, 0x1p-1074 }, { 0x1.6a09e667f3bcdp+0, 0x1p-537 } },
	{ OP_RECIPROCAL, 2, { 3, 0x1p-1074 }, { 0x1.5555555555555p-2, INFINITY } },
	{ OP_EXP2, 3, { -1074, -1075, 1024 }, { 0x1p-1074, 0.0, INFINITY } },
	{ OP_LOG2, 2, { 0x1p-1074, 0x1p1023 }, { -1074, 1023 } },
	{ OP_ROUND, 3, { 2.5, 4503599627370495.5, -0.5 }, { 2, 4503599627370496, -0.0 } },
	{ OP_SIGN, 2, { -0.0, -0x1p-1074 }, { 0.0, -1 } },
	{ OP_EXP, 2, { 1, -746 }, { 0x1.5bf0a8b145769p+1, 0.0 } },
	{ OP_ISFINITE, 2, { DBL_MAX, -INFINITY }, { 1, 0 } },
};

Test(interp, unary_f64_in_double) { unary_table(DT_F64, f64_unary, NELEM(f64_unary)); }

/* integer and bool unary ops: results wrap to the dtype */
static void
unary_int(Op op, DType t, DType rt, int n, const int64_t *x, const int64_t *want)
{
	Tensor *a = tens_i("a", t, 1, I64(n), x);
	Tensor *r = eval_op(op, rt, &a, 1);
	char what[64];

	snprintf(what, sizeof what, "%s %s", ir_dtypes[t].name, ir_ops[op].name);
	expect_ints(r, want, n, what);
	tensor_free(a);
	tensor_free(r);
}

Test(interp, unary_integers)
{
	unary_int(OP_ABS, DT_I8, DT_I8, 4, I64(-128, -5, 0, 127), I64(-128, 5, 0, 127));
	unary_int(OP_NEG, DT_I8, DT_I8, 3, I64(-128, 5, 0), I64(-128, -5, 0));
	unary_int(OP_NEG, DT_U8, DT_U8, 3, I64(0, 1, 255), I64(0, 255, 1));
	unary_int(OP_ABS, DT_I64, DT_I64, 2, I64(INT64_MIN, -3), I64(INT64_MIN, 3));
	unary_int(OP_SIGN, DT_I32, DT_I32, 4, I64(-7, 0, 9, INT32_MIN), I64(-1, 0, 1, -1));
	unary_int(OP_BITWISE_NOT, DT_I32, DT_I32, 4, I64(0, 5, -1, INT32_MIN), I64(-1, -6, 0, INT32_MAX));
	unary_int(OP_BITWISE_NOT, DT_U8, DT_U8, 3, I64(0, 255, 0x0F), I64(255, 0, 0xF0));
	unary_int(OP_BITWISE_NOT, DT_B8, DT_B8, 2, I64(0, 1), I64(1, 0));
	unary_int(OP_LOGICAL_NOT, DT_B8, DT_B8, 2, I64(0, 1), I64(1, 0));
	unary_int(OP_ISFINITE, DT_I32, DT_B8, 2, I64(INT32_MIN, 0), I64(1, 1));
}

/* ---- binary elementwise and comparisons ---- */

typedef struct {
	Op op;
	int n;
	double a[MAXN], b[MAXN], want[MAXN];
} Binary;

static void
binary_table(DType t, const Binary *cases, size_t ncases)
{
	for (size_t c = 0; c < ncases; c++) {
		const Binary *u = &cases[c];
		Tensor *in[2] = { tens("a", t, 1, I64(u->n), u->a), tens("b", t, 1, I64(u->n), u->b) };
		DType rt = ir_ops[u->op].cls == OC_COMPARE ? DT_B8 : t;
		Tensor *r = eval_op(u->op, rt, in, 2);
		int bad = 0;

		for (int i = 0; i < u->n; i++) {
			double got = tensor_getf(r, i);

			if (!same(got, u->want[i]) && bad++ < NSHOW)
				cr_log_error("%s %s(%a, %a): expected %a (%.9g), got %a (%.9g)", ir_dtypes[t].name,
					ir_ops[u->op].name, u->a[i], u->b[i], u->want[i], u->want[i], got, got);
		}
		cr_expect_eq(
			bad, 0, "%s %s: %d of %d elements differ", ir_dtypes[t].name, ir_ops[u->op].name, bad, u->n);
		free_all(in, 2);
		tensor_free(r);
	}
}

static const Binary f32_binary[] = {
	{ OP_ADD, 10, { NAN, INFINITY, INFINITY, -0.0, -0.0, 1, 1, TINY, FLT_MAX, 1e38f },
		{ 1, -INFINITY, 1, -0.0, 0.0, 0x1p-24, 0x1.8p-23, TINY, FLT_MAX, -1e38f },
		{ NAN, NAN, INFINITY, -0.0, 0.0, 1, 0x1.000004p+0, 0x1p-148, INFINITY, 0.0 } },
	{ OP_SUB, 6, { INFINITY, 0.0, -0.0, 1, NAN, 1 }, { INFINITY, 0.0, 0.0, 1, NAN, 0x1p-25 },
		{ NAN, 0.0, -0.0, 0.0, NAN, 1 } },
	{ OP_MUL, 8, { 0.0, -0.0, TINY, TINY, -1, INFINITY, 0x1p64, NAN },
		{ INFINITY, 5, 0.5, 3, 0.0, -2, 0x1p64, 0.0 },
		{ NAN, -0.0, 0.0, 0x1.8p-148, -0.0, -INFINITY, INFINITY, NAN } },
	/* IEEE division: x/0 = ±inf, 0/0 = NaN */
	{ OP_DIV, 11, { 1, -1, 0.0, 1, 1, INFINITY, 1, -1, -0.0, 3, NAN },
		{ 0.0, 0.0, 0.0, -0.0, 3, INFINITY, INFINITY, INFINITY, 5, -0.0, 1 },
		{ INFINITY, -INFINITY, NAN, -INFINITY, 0x1.555556p-2, NAN, 0.0, -0.0, -0.0, -INFINITY, NAN } },
	{ OP_POW, 12, { 2, NAN, 1, -8, 0.0, -0.0, -2, 2, 4, INFINITY, -INFINITY, 0.5 },
		{ 10, 0.0, NAN, 0x1.555556p-2, -1, -1, 3, -149, 0.5, -1, 3, INFINITY },
		{ 1024, 1, 1, NAN, INFINITY, -INFINITY, -8, TINY, 2, 0.0, -INFINITY, 0.0 } },
	/* NaN propagates; -0 < +0 */
	{ OP_MAXIMUM, 8, { NAN, 1, -0.0, 0.0, -INFINITY, 2, TINY, NAN }, { 1, NAN, 0.0, -0.0, INFINITY, 1, 0.0, NAN },
		{ NAN, NAN, 0.0, 0.0, INFINITY, 2, TINY, NAN } },
	{ OP_MINIMUM, 7, { NAN, 1, -0.0, 0.0, -INFINITY, 2, -TINY }, { 1, NAN, 0.0, -0.0, INFINITY, 1, -0.0 },
		{ NAN, NAN, -0.0, -0.0, -INFINITY, 1, -TINY } },
	/* fmod: the sign of the dividend */
	{ OP_FMOD, 10, { -3, 3, 5.5, 1, INFINITY, 1, -0.0, NAN, -3, 3 }, { 2, -2, 2, 0.0, 1, INFINITY, 1, 1, -2, 1.5 },
		{ -1, 1, 1.5, NAN, NAN, 1, -0.0, NAN, -1, 0.0 } },
	/* remainder: the sign of the divisor (fmod, then + b if the signs differ) */
	{ OP_REMAINDER, 10, { -3, 3, -3, 5.5, -5.5, 1, -0.0, 3, 0.0, -1 },
		{ 2, -2, -2, 2, 2, 0.0, 1, 1.5, -2, INFINITY },
		{ 1, -1, -1, 1.5, 0.5, NAN, -0.0, 0.0, 0.0, INFINITY } },
	/* comparisons with NaN are false, except ne */
	{ OP_EQ, 9, { NAN, NAN, 1, 1, -0.0, INFINITY, 1, 2, -INFINITY },
		{ 1, NAN, NAN, 1, 0.0, INFINITY, 2, 1, INFINITY }, { 0, 0, 0, 1, 1, 1, 0, 0, 0 } },
	{ OP_NE, 9, { NAN, NAN, 1, 1, -0.0, INFINITY, 1, 2, -INFINITY },
		{ 1, NAN, NAN, 1, 0.0, INFINITY, 2, 1, INFINITY }, { 1, 1, 1, 0, 0, 0, 1, 1, 1 } },
	{ OP_LT, 9, { NAN, NAN, 1, 1, -0.0, INFINITY, 1, 2, -INFINITY },
		{ 1, NAN, NAN, 1, 0.0, INFINITY, 2, 1, INFINITY }, { 0, 0, 0, 0, 0, 0, 1, 0, 1 } },
	{ OP_LE, 9, { NAN, NAN, 1, 1, -0.0, INFINITY, 1, 2, -INFINITY },
		{ 1, NAN, NAN, 1, 0.0, INFINITY, 2, 1, INFINITY }, { 0, 0, 0, 1, 1, 1, 1, 0, 1 } },
	{ OP_GT, 9, { NAN, NAN, 1, 1, -0.0, INFINITY, 1, 2, -INFINITY },
		{ 1, NAN, NAN, 1, 0.0, INFINITY, 2, 1, INFINITY }, { 0, 0, 0, 0, 0, 0, 0, 1, 0 } },
	{ OP_GE, 9, { NAN, NAN, 1, 1, -0.0, INFINITY, 1, 2, -INFINITY },
		{ 1, NAN, NAN, 1, 0.0, INFINITY, 2, 1, INFINITY }, { 0, 0, 0, 1, 1, 1, 0, 1, 0 } },
	/* atan2(y, x): the angle of (x, y), the signs of zeros kept */
	{ OP_ATAN2, 8, { NAN, 0.0, -0.0, 0.0, 1, -1, 1, INFINITY }, { 1, 1, 1, -1, 0.0, 0.0, INFINITY, INFINITY },
		{ NAN, 0.0, -0.0, 0x1.921fb6p+1, 0x1.921fb6p+0, -0x1.921fb6p+0, 0.0, 0x1.921fb6p-1 } },
	/* nextafter in f32: one float step towards b */
	{ OP_NEXTAFTER, 6, { 1, 1, 0.0, -0.0, NAN, FLT_MAX }, { 2, 0.0, 1, -1, 1, INFINITY },
		{ 0x1.000002p+0, 0x1.fffffep-1, 0x1p-149, -0x1p-149, NAN, INFINITY } },
};

Test(interp, binary_f32_special_values) { binary_table(DT_F32, f32_binary, NELEM(f32_binary)); }

Test(interp, binary_table_covers_every_float_op)
{
	for (int op = 0; op < OP_COUNT; op++) {
		bool found = false;

		if ((ir_ops[op].cls != OC_BINARY && ir_ops[op].cls != OC_COMPARE) || ir_ops[op].tc == TC_INT)
			continue;
		for (size_t c = 0; c < NELEM(f32_binary); c++)
			found |= (int)f32_binary[c].op == op;
		cr_expect(found, "no f32 test row for %s", ir_ops[op].name);
	}
}

/* bf16: computed in float, rounded once, to nearest even */
static const Binary bf16_binary[] = {
	{ OP_ADD, 4, { 1, 1, 256, 0x1.fep+127 }, { 0x1p-8, 0x1.8p-7, 1, 0x1p120 }, { 1, 0x1.04p+0, 256, INFINITY } },
	{ OP_MUL, 2, { 3, 0x1p-133 }, { 0.333984375, 0.5 }, { 1, 0.0 } },
	{ OP_DIV, 2, { 1, 0.0 }, { 3, 0.0 }, { 0.333984375, NAN } },
	{ OP_MAXIMUM, 2, { NAN, -0.0 }, { 1, 0.0 }, { NAN, 0.0 } },
	{ OP_LT, 2, { 1, NAN }, { 0x1.02p+0, 1 }, { 1, 0 } },
};

Test(interp, binary_bf16_rounding) { binary_table(DT_BF16, bf16_binary, NELEM(bf16_binary)); }

static const Binary f16_binary[] = {
	{ OP_ADD, 4, { 2048, 65504, 1, 2048 }, { 1, 16, 0x1p-11, 3 }, { 2048, INFINITY, 1, 2052 } },
	{ OP_MUL, 2, { 0x1p-24, 0x1p-14 }, { 0.5, 0.75 }, { 0.0, 0x1.8p-15 } },
};

Test(interp, binary_f16_rounding) { binary_table(DT_F16, f16_binary, NELEM(f16_binary)); }

static const Binary f64_binary[] = {
	{ OP_ADD, 3, { 1, 0.1, 1e308 }, { 0x1p-30, 0.2, 1e308 }, { 0x1.00000004p+0, 0.30000000000000004, INFINITY } },
	{ OP_DIV, 2, { 1, 1 }, { 3, 0.0 }, { 0x1.5555555555555p-2, INFINITY } },
	{ OP_MUL, 2, { 1e300, 1e-300 }, { 1e10, 1e-300 }, { INFINITY, 0.0 } },
	{ OP_SUB, 1, { 1 }, { 0x1p-53 }, { 0x1.fffffffffffffp-1 } },
};

Test(interp, binary_f64_in_double) { binary_table(DT_F64, f64_binary, NELEM(f64_binary)); }

static void
binary_int(Op op, DType t, int n, const int64_t *a, const int64_t *b, const int64_t *want)
{
	Tensor *in[2] = { tens_i("a", t, 1, I64(n), a), tens_i("b", t, 1, I64(n), b) };
	Tensor *r = eval_op(op, ir_ops[op].cls == OC_COMPARE ? DT_B8 : t, in, 2);
	char what[64];

	snprintf(what, sizeof what, "%s %s", ir_dtypes[t].name, ir_ops[op].name);
	expect_ints(r, want, n, what);
	free_all(in, 2);
	tensor_free(r);
}

/* integers wrap to their width; division truncates toward zero */
Test(interp, binary_integers)
{
	binary_int(OP_ADD, DT_I8, 4, I64(127, -128, 100, -1), I64(1, -1, 100, 1), I64(-128, 127, -56, 0));
	binary_int(OP_SUB, DT_I8, 2, I64(-128, 0), I64(1, 1), I64(127, -1));
	binary_int(OP_MUL, DT_I8, 3, I64(16, -16, 64), I64(16, 8, 2), I64(0, -128, -128));
	binary_int(OP_DIV, DT_I8, 5, I64(-7, 7, -7, 7, -128), I64(2, -2, -2, 2, -1), I64(-3, -3, 3, 3, -128));
	binary_int(OP_FMOD, DT_I8, 3, I64(-7, 7, -7), I64(2, -2, -2), I64(-1, 1, -1));
	binary_int(OP_REMAINDER, DT_I8, 4, I64(-7, 7, -7, 6), I64(2, -2, -2, 3), I64(1, -1, -1, 0));
	binary_int(OP_MAXIMUM, DT_I8, 2, I64(-128, 5), I64(127, -5), I64(127, 5));
	binary_int(OP_MINIMUM, DT_I8, 2, I64(-128, 5), I64(127, -5), I64(-128, -5));
	binary_int(OP_BITWISE_AND, DT_I8, 2, I64(0x0F, -1), I64(0x3C, 0x55), I64(0x0C, 0x55));
	binary_int(OP_BITWISE_OR, DT_I8, 2, I64(0x0F, -1), I64(0x3C, 0x55), I64(0x3F, -1));
	binary_int(OP_BITWISE_XOR, DT_I8, 2, I64(0x0F, -1), I64(0x3C, 0x55), I64(0x33, -86));
	binary_int(OP_ADD, DT_U8, 2, I64(200, 0), I64(100, 0), I64(44, 0));
	binary_int(OP_SUB, DT_U8, 1, I64(0), I64(1), I64(255));
	binary_int(OP_ADD, DT_I64, 1, I64(INT64_MAX), I64(1), I64(INT64_MIN));
	binary_int(OP_MUL, DT_I16, 1, I64(300), I64(300), I64(90000 - 65536));
	binary_int(OP_DIV, DT_I32, 3, I64(-2147483647, 9, -9), I64(2, 4, 4), I64(-1073741823, 2, -2));
	binary_int(OP_REMAINDER, DT_I32, 2, I64(-1, 5), I64(3, -3), I64(2, -1));
	binary_int(OP_BITWISE_XOR, DT_B8, 2, I64(1, 1), I64(0, 1), I64(1, 0));
	binary_int(OP_BITWISE_AND, DT_B8, 2, I64(1, 1), I64(0, 1), I64(0, 1));
}

Test(interp, compare_integers_and_bools)
{
	binary_int(OP_LT, DT_I32, 3, I64(-1, 2, INT32_MIN), I64(0, 2, INT32_MAX), I64(1, 0, 1));
	binary_int(OP_GE, DT_U8, 2, I64(255, 0), I64(0, 1), I64(1, 0));
	binary_int(OP_EQ, DT_B8, 2, I64(1, 0), I64(1, 1), I64(1, 0));
	binary_int(OP_NE, DT_I64, 2, I64(INT64_MIN, 3), I64(INT64_MAX, 3), I64(1, 0));
}

/* a rank-0 operand stands for every element, on either side */
Test(interp, binary_scalar_operand)
{
	Tensor *in[2] = { tens("a", DT_F32, 1, I64(4), DBL(1, 2, NAN, -0.0)), tens("b", DT_F32, 0, NULL, DBL(-2)) };
	Tensor *r = eval_op(OP_MUL, DT_F32, in, 2), *in2[2] = { in[1], in[0] }, *r2;

	expect_vals(r, DBL(-2, -4, NAN, 0.0), 4, "x * scalar");
	r2 = eval_op(OP_SUB, DT_F32, in2, 2);
	expect_vals(r2, DBL(-3, -4, NAN, -2), 4, "scalar - x");
	free_all(in, 2);
	tensor_free(r);
	tensor_free(r2);
}

/* ---- where ---- */

Test(interp, where_selects_nan_and_signed_zero)
{
	Tensor *in[3] = {
		tens_i("c", DT_B8, 1, I64(4), I64(1, 0, 1, 0)),
		tens("a", DT_F32, 1, I64(4), DBL(NAN, 1, -0.0, 2)),
		tens("b", DT_F32, 1, I64(4), DBL(5, NAN, 7, -0.0)),
	};
	Tensor *r = eval_op(OP_WHERE, DT_F32, in, 3);

	expect_vals(r, DBL(NAN, NAN, -0.0, -0.0), 4, "where");
	free_all(in, 3);
	tensor_free(r);
}

Test(interp, where_scalar_branch_and_condition)
{
	Tensor *in[3] = {
		tens_i("c", DT_B8, 1, I64(3), I64(1, 0, 1)),
		tens("a", DT_BF16, 0, NULL, DBL(INFINITY)),
		tens("b", DT_BF16, 1, I64(3), DBL(1, 2, 3)),
	};
	Tensor *r = eval_op(OP_WHERE, DT_BF16, in, 3), *r2;

	expect_vals(r, DBL(INFINITY, 2, INFINITY), 3, "where(c, scalar, b)");
	tensor_free(in[0]);
	in[0] = tens_i("c", DT_B8, 0, NULL, I64(0));
	r2 = eval_op(OP_WHERE, DT_BF16, in, 3);
	expect_vals(r2, DBL(1, 2, 3), 3, "where(scalar false, a, b)");
	free_all(in, 3);
	tensor_free(r);
	tensor_free(r2);
}

/* fp8 where copies codes, NaN codes and their signs included */
Test(interp, where_fp8_copies_codes)
{
	Tensor *in[3] = {
		tens_i("c", DT_B8, 1, I64(3), I64(1, 0, 1)),
		tens_u8("a", DT_F8E4M3FN, (const uint8_t[]){ 0x7F, 0x01, 0xFF }, 3),
		tens_u8("b", DT_F8E4M3FN, (const uint8_t[]){ 0x80, 0xFE, 0x00 }, 3),
	};
	Tensor *r = eval_op(OP_WHERE, DT_F8E4M3FN, in, 3);

	expect_codes(r, (const uint8_t[]){ 0x7F, 0xFE, 0xFF }, 3, "where e4m3fn");
	free_all(in, 3);
	tensor_free(r);
}

/* ---- convert_element_type ---- */

/* f32 -> e4m3fn: |x| > 464 -> NaN (0x7F|sign), 464 -> 448, ties to even, subnormals */
Test(interp, convert_f32_to_e4m3fn)
{
	static const double x[] = { 464, 465, 448, -464, 480, INFINITY, NAN, -0.0, 0x1p-10, 0x1.8p-10, 0x1.8p-9, 1e-12,
		-NAN, 240, 0x1p-6, -INFINITY };
	static const uint8_t want[] = { 0x7E, 0x7F, 0x7E, 0xFE, 0x7F, 0x7F, 0x7F, 0x80, 0x00, 0x01, 0x02, 0x00, 0xFF,
		0x77, 0x08, 0xFF };
	Tensor *a = tens("a", DT_F32, 1, I64(NELEM(x)), x), *r = convert(a, DT_F8E4M3FN);

	expect_codes(r, want, NELEM(want), "f32 -> e4m3fn");
	tensor_free(a);
	tensor_free(r);
}

/* f32 -> e5m2: |x| >= 61440 -> inf, NaN -> 0x7F */
Test(interp, convert_f32_to_e5m2)
{
	static const double x[] = { 61440, 61439, 57344, INFINITY, -INFINITY, NAN, 65536, 1e10, -0.0, 0x1p-16, 0x1p-17,
		0x1.8p-16, -61440, 0x1p-14, 1.25, 1.375 };
	static const uint8_t want[] = { 0x7C, 0x7B, 0x7B, 0x7C, 0xFC, 0x7F, 0x7C, 0x7C, 0x80, 0x01, 0x00, 0x02, 0xFC,
		0x04, 0x3D, 0x3E };
	Tensor *a = tens("a", DT_F32, 1, I64(NELEM(x)), x), *r = convert(a, DT_F8E5M2);

	expect_codes(r, want, NELEM(want), "f32 -> e5m2");
	tensor_free(a);
	tensor_free(r);
}

/* fp8 -> f32 is exact; NaN codes keep their sign */
Test(interp, convert_fp8_to_f32)
{
	Tensor *a = tens_u8("a", DT_F8E4M3FN, (const uint8_t[]){ 0x7F, 0xFF, 0x7E, 0x01, 0x80, 0x08, 0x77, 0xFE }, 8);
	Tensor *b = tens_u8("b", DT_F8E5M2, (const uint8_t[]){ 0x7C, 0xFC, 0x7D, 0x7F, 0x01, 0x7B, 0x80, 0xFF }, 8);
	Tensor *ra = convert(a, DT_F32), *rb = convert(b, DT_F32);

	expect_vals(ra, DBL(NAN, NAN, 448, 0x1p-9, -0.0, 0x1p-6, 240, -448), 8, "e4m3fn -> f32");
	cr_expect(!signbit(tensor_getf(ra, 0)) && signbit(tensor_getf(ra, 1)), "e4m3fn NaN sign lost");
	expect_vals(rb, DBL(INFINITY, -INFINITY, NAN, NAN, 0x1p-16, 57344, -0.0, NAN), 8, "e5m2 -> f32");
	cr_expect(signbit(tensor_getf(rb, 7)), "e5m2 NaN sign lost");
	tensor_free(a);
	tensor_free(b);
	tensor_free(ra);
	tensor_free(rb);
}

Test(interp, convert_fp8_to_fp8)
{
	Tensor *a = tens_u8("a", DT_F8E4M3FN, (const uint8_t[]){ 0x7E, 0x7F, 0x01, 0xF7 }, 4);
	Tensor *b = tens_u8("b", DT_F8E5M2, (const uint8_t[]){ 0x7B, 0x7C, 0xFC, 0x3C }, 4);
	Tensor *ra = convert(a, DT_F8E5M2), *rb = convert(b, DT_F8E4M3FN);

	expect_codes(ra, (const uint8_t[]){ 0x5F, 0x7F, 0x18, 0xDC }, 4, "e4m3fn -> e5m2");
	expect_codes(rb, (const uint8_t[]){ 0x7F, 0x7F, 0xFF, 0x38 }, 4, "e5m2 -> e4m3fn");
	tensor_free(a);
	tensor_free(b);
	tensor_free(ra);
	tensor_free(rb);
}

Test(interp, convert_f32_to_bf16)
{
	Tensor *a = tens("a", DT_F32, 1, I64(8),
		DBL(0x1.01p+0, 0x1.03p+0, NAN, FLT_MAX, -0.0, 0x1p-133, -INFINITY, 0x1.fep+127));
	Tensor *r = convert(a, DT_BF16);

	expect_vals(r, DBL(1, 0x1.04p+0, NAN, INFINITY, -0.0, 0x1p-133, -INFINITY, 0x1.fep+127), 8, "f32 -> bf16");
	tensor_free(a);
	tensor_free(r);
}

/* f64 -> bf16 / f16 / fp8 round through f32 first, as c10 does: double rounding */
Test(interp, convert_f64_double_rounds_through_f32)
{
	Tensor *a = tens("a", DT_F64, 1, I64(4), DBL(1 + 0x1p-8 + 0x1p-30, 1 + 0x1p-8 + 0x1p-24, NAN, 1e300));
	Tensor *h = tens("h", DT_F64, 1, I64(2), DBL(1 + 0x1p-11 + 0x1p-40, 65519));
	Tensor *q = tens("q", DT_F64, 1, I64(2), DBL(1 + 0x1p-4 + 0x1p-40, 464.00000000001));
	Tensor *ra = convert(a, DT_BF16), *rh = convert(h, DT_F16), *rq = convert(q, DT_F8E4M3FN);

	expect_vals(ra, DBL(1, 1, NAN, INFINITY), 4, "f64 -> bf16");
	expect_vals(rh, DBL(1, 65504), 2, "f64 -> f16");
	expect_codes(rq, (const uint8_t[]){ 0x38, 0x7E }, 2, "f64 -> e4m3fn");
	tensor_free(a);
	tensor_free(h);
	tensor_free(q);
	tensor_free(ra);
	tensor_free(rh);
	tensor_free(rq);
}

Test(interp, convert_f64_to_f32_and_back)
{
	Tensor *a =
		tens("a", DT_F64, 1, I64(8), DBL(1e300, -1e300, 1e-50, -1e-50, 0.1, NAN, 0x1p-150, 0x1.0000001p-150));
	Tensor *r = convert(a, DT_F32), *b = tens("b", DT_F32, 1, I64(2), DBL(0.1f, -0.0)), *rb = convert(b, DT_F64);

	expect_vals(r, DBL(INFINITY, -INFINITY, 0.0, -0.0, 0x1.99999ap-4, NAN, 0.0, TINY), 8, "f64 -> f32");
	expect_vals(rb, DBL(0x1.99999ap-4, -0.0), 2, "f32 -> f64");
	tensor_free(a);
	tensor_free(r);
	tensor_free(b);
	tensor_free(rb);
}

Test(interp, convert_f32_to_f16)
{
	Tensor *a = tens("a", DT_F32, 1, I64(7), DBL(0x1p-24, 0x1p-25, 0x1.8p-24, 65504, 65520, NAN, -0.0));
	Tensor *r = convert(a, DT_F16);

	expect_vals(r, DBL(0x1p-24, 0.0, 0x1p-23, 65504, INFINITY, NAN, -0.0), 7, "f32 -> f16");
	tensor_free(a);
	tensor_free(r);
}

/* bool: any nonzero (NaN included) is true */
Test(interp, convert_bool)
{
	Tensor *a = tens("a", DT_F32, 1, I64(7), DBL(NAN, 0.0, -0.0, 0.5, INFINITY, TINY, -1));
	Tensor *b = tens_i("b", DT_B8, 1, I64(2), I64(1, 0));
	Tensor *i = tens_i("i", DT_I32, 1, I64(3), I64(2, 0, -1));
	Tensor *ra = convert(a, DT_B8), *rb = convert(b, DT_F32), *ri = convert(i, DT_B8), *rbi = convert(b, DT_I64);

	expect_ints(ra, I64(1, 0, 0, 1, 1, 1, 1), 7, "f32 -> b8");
	expect_vals(rb, DBL(1, 0.0), 2, "b8 -> f32");
	expect_ints(ri, I64(1, 0, 1), 3, "i32 -> b8");
	expect_ints(rbi, I64(1, 0), 2, "b8 -> i64");
	tensor_free(a);
	tensor_free(b);
	tensor_free(i);
	tensor_free(ra);
	tensor_free(rb);
	tensor_free(ri);
	tensor_free(rbi);
}

/* float -> int truncates toward zero; NaN -> 0; uint8 goes through int64 (c10) */
Test(interp, convert_float_to_int)
{
	Tensor *a = tens("a", DT_F32, 1, I64(6), DBL(2.9, -2.9, NAN, -0.5, 16777216, -0.0));
	Tensor *b = tens("b", DT_F32, 1, I64(3), DBL(-1.5, 100.7, 127.9));
	Tensor *c = tens("c", DT_F32, 1, I64(3), DBL(3.7, 255.5, -1.5));
	Tensor *d = tens("d", DT_F64, 1, I64(2), DBL(-1e15 - 0.5, 0x1p53));
	Tensor *q = tens_u8("q", DT_F8E4M3FN, (const uint8_t[]){ 0x7E, 0x7F, 0xBC }, 3);
	Tensor *ra = convert(a, DT_I32), *rb = convert(b, DT_I8), *rc = convert(c, DT_U8);
	Tensor *rd = convert(d, DT_I64), *rq = convert(q, DT_I16);

	expect_ints(ra, I64(2, -2, 0, 0, 16777216, 0), 6, "f32 -> i32");
	expect_ints(rb, I64(-1, 100, 127), 3, "f32 -> i8");
	expect_ints(rc, I64(3, 255, 255), 3, "f32 -> u8");
	expect_ints(rd, I64(-1000000000000000, INT64_C(9007199254740992)), 2, "f64 -> i64");
	expect_ints(rq, I64(448, 0, -1), 3, "e4m3fn -> i16");
	Tensor *all[] = { a, b, c, d, q, ra, rb, rc, rd, rq };
	free_all(all, NELEM(all));
}

/* float -> integer out of range and NaN, as PyTorch 2.11 gives them on an
 * H200 (tests/oracle/golden/convert_element_type.safetensors; also
 * pytorch#154311): i64 and i32 saturate (cvt.rzi), NaN gives INT64_MIN for
 * i64 and 0 for i32; i8 and i16 go through i32 and keep the low bits; u8
 * goes through i64 (c10's cast) and keeps the low bits */
Test(interp, convert_float_to_int_out_of_range)
{
	Tensor *a = tens("a", DT_F32, 1, I64(6), DBL(INFINITY, -INFINITY, 3e9, -3e9, NAN, 1e10));
	Tensor *b = tens("b", DT_F64, 1, I64(4), DBL(INFINITY, -1e19, 1e19, NAN));
	Tensor *c = tens("c", DT_F32, 1, I64(6), DBL(300, -300, 1e10, INFINITY, NAN, -INFINITY));
	Tensor *d = tens("d", DT_F32, 1, I64(4), DBL(40000, -40000, INFINITY, 1e10));
	Tensor *e = tens("e", DT_F32, 1, I64(4), DBL(300, -1.5, 1e10, INFINITY));
	Tensor *q = tens_u8("q", DT_F8E4M3FN, (const uint8_t[]){ 0x7F, 0xFF }, 2);
	Tensor *ra = convert(a, DT_I32), *rb = convert(b, DT_I64), *rc = convert(c, DT_I8);
	Tensor *rd = convert(d, DT_I16), *re = convert(e, DT_U8), *rq = convert(q, DT_I64), *rf = convert(a, DT_I64);

	expect_ints(ra, I64(INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, INT32_MAX), 6, "f32 -> i32");
	expect_ints(rb, I64(INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN), 4, "f64 -> i64");
	expect_ints(rf, I64(INT64_MAX, INT64_MIN, 3000000000, -3000000000, INT64_MIN, 10000000000), 6, "f32 -> i64");
	expect_ints(rc, I64(44, -44, -1, -1, 0, 0), 6, "f32 -> i8");
	expect_ints(rd, I64(-25536, 25536, -1, -1), 4, "f32 -> i16");
	expect_ints(re, I64(44, 255, 0, 255), 4, "f32 -> u8");
	expect_ints(rq, I64(INT64_MIN, INT64_MIN), 2, "e4m3fn NaN -> i64");
	Tensor *all[] = { a, b, c, d, e, q, ra, rb, rc, rd, re, rq, rf };
	free_all(all, NELEM(all));
}

/* int -> float rounds to nearest even (through f32 for the narrow floats) */
Test(interp, convert_int_to_float)
{
	Tensor *a = tens_i("a", DT_I32, 1, I64(3), I64(16777217, 16777219, -3));
	Tensor *b = tens_i("b", DT_I64, 1, I64(2), I64(257, 259));
	Tensor *c = tens_i("c", DT_I32, 1, I64(3), I64(300, 500, -1));
	Tensor *d = tens_i("d", DT_I64, 1, I64(1), I64((INT64_C(1) << 53) + 1));
	Tensor *ra = convert(a, DT_F32), *rb = convert(b, DT_BF16), *rc = convert(c, DT_F8E4M3FN);
	Tensor *rd = convert(d, DT_F64);

	expect_vals(ra, DBL(16777216, 16777220, -3), 3, "i32 -> f32");
	expect_vals(rb, DBL(256, 260), 2, "i64 -> bf16");
	expect_codes(rc, (const uint8_t[]){ 0x79, 0x7F, 0xB8 }, 3, "i32 -> e4m3fn");
	expect_vals(rd, DBL(0x1p53), 1, "i64 -> f64");
	Tensor *all[] = { a, b, c, d, ra, rb, rc, rd };
	free_all(all, NELEM(all));
}

/* int -> narrower int wraps */
Test(interp, convert_int_to_int)
{
	Tensor *a = tens_i("a", DT_I32, 1, I64(3), I64(300, -129, 128));
	Tensor *b = tens_i("b", DT_U8, 1, I64(2), I64(200, 255));
	Tensor *c = tens_i("c", DT_I8, 1, I64(2), I64(-1, -128));
	Tensor *ra = convert(a, DT_I8), *rb = convert(b, DT_I8), *rc = convert(c, DT_U8);

	expect_ints(ra, I64(44, 127, -128), 3, "i32 -> i8");
	expect_ints(rb, I64(-56, -1), 2, "u8 -> i8");
	expect_ints(rc, I64(255, 128), 2, "i8 -> u8");
	Tensor *all[] = { a, b, c, ra, rb, rc };
	free_all(all, NELEM(all));
}

Test(interp, convert_scalar)
{
	cr_expect(ir_convert_scalar(NAN, DT_F32, DT_B8) == 1);
	cr_expect(ir_convert_scalar(464, DT_F32, DT_F8E4M3FN) == 448);
	cr_expect(isnan(ir_convert_scalar(465, DT_F32, DT_F8E4M3FN)));
	cr_expect(isinf(ir_convert_scalar(61440, DT_F32, DT_F8E5M2)));
	cr_expect(ir_convert_scalar(NAN, DT_F32, DT_I32) == 0);
	cr_expect(ir_convert_scalar(-2.9, DT_F32, DT_I8) == -2);
	cr_expect(ir_convert_scalar(300, DT_F64, DT_U8) == 44);
	cr_expect(ir_convert_scalar(1 + 0x1p-8 + 0x1p-30, DT_F64, DT_BF16) == 1);
}

/* ---- reductions ---- */

/* op over dims of x (dtype t, shape xd), result shape rd */
static Tensor *
reduce(Op op, Tensor *x, const int64_t *dims, int ndims, int rrank, const int64_t *rd)
{
	Func *fn = ir_func_new(A, ir_ops[op].name);
	uint32_t p = ir_param(fn, "x", x->dtype, x->rank, x->dims);
	uint32_t r = ir_instr(fn, op, &p, 1, dims, ndims, x->dtype, rrank, rd);
	Tensor *out = NULL;

	ir_return(fn, r, NULL);
	run(fn, &x, &out);
	return out;
}

Test(interp, amax_amin_partial_dims_propagate_nan)
{
	Tensor *x = tens("x", DT_F32, SH(2, 3), DBL(1, NAN, 3, -INFINITY, -0.0, -5));
	Tensor *r1 = reduce(OP_AMAX, x, I64(1), 1, SH(2));
	Tensor *r0 = reduce(OP_AMAX, x, I64(0), 1, SH(3));
	Tensor *ra = reduce(OP_AMAX, x, I64(0, 1), 2, 0, NULL);
	Tensor *m1 = reduce(OP_AMIN, x, I64(1), 1, SH(2));
	Tensor *m0 = reduce(OP_AMIN, x, I64(0), 1, SH(3));

	expect_vals(r1, DBL(NAN, -0.0), 2, "amax dim 1");
	expect_vals(r0, DBL(1, NAN, 3), 3, "amax dim 0");
	expect_vals(ra, DBL(NAN), 1, "amax all");
	expect_vals(m1, DBL(NAN, -INFINITY), 2, "amin dim 1");
	expect_vals(m0, DBL(-INFINITY, NAN, -5), 3, "amin dim 0");
	Tensor *all[] = { x, r1, r0, ra, m1, m0 };
	free_all(all, NELEM(all));
}

Test(interp, amax_3d_outer_dims)
{
	double v[12];
	Tensor *x, *r;

	for (int i = 0; i < 12; i++) /* x[i][j][k] = (i*6 + j*2 + k) * (-1)^(i+k) */
		v[i] = (double)i * (((i / 6) + (i % 2)) % 2 ? -1 : 1);
	x = tens("x", DT_BF16, SH(2, 3, 2), v);
	r = reduce(OP_AMAX, x, I64(0, 2), 2, SH(3));
	/* j = 0: {0, -1, -6, 7} -> 7; j = 1: {2, -3, -8, 9} -> 9; j = 2: {4, -5, -10, 11} -> 11 */
	expect_vals(r, DBL(7, 9, 11), 3, "amax dims 0,2 of [2,3,2]");
	tensor_free(x);
	tensor_free(r);
}

Test(interp, amax_bf16_and_int)
{
	Tensor *x = tens("x", DT_BF16, SH(2, 3), DBL(1, 2.5, -3, INFINITY, 0.0, 1));
	Tensor *i = tens_i("i", DT_I32, SH(3), I64(-5, 3, 2));
	Tensor *r = reduce(OP_AMAX, x, I64(1), 1, SH(2)), *ri = reduce(OP_AMAX, i, I64(0), 1, 0, NULL);
	Tensor *rn = reduce(OP_AMIN, i, I64(0), 1, 0, NULL);

	expect_vals(r, DBL(2.5, INFINITY), 2, "bf16 amax dim 1");
	expect_ints(ri, I64(3), 1, "i32 amax");
	expect_ints(rn, I64(-5), 1, "i32 amin");
	Tensor *all[] = { x, i, r, ri, rn };
	free_all(all, NELEM(all));
}

Test(interp, sum_and_prod)
{
	Tensor *x = tens("x", DT_F32, SH(2, 3), DBL(1, 2, 3, 0.5, 0.25, -1));
	Tensor *y = tens("y", DT_F32, SH(2, 3), DBL(2, 3, 4, 0.5, -1, INFINITY));
	Tensor *z = tens("z", DT_F32, SH(2, 2), DBL(INFINITY, -INFINITY, 0.0, INFINITY));
	Tensor *s1 = reduce(OP_SUM, x, I64(1), 1, SH(2)), *s0 = reduce(OP_SUM, x, I64(0), 1, SH(3));
	Tensor *p1 = reduce(OP_PROD, y, I64(1), 1, SH(2)), *pa = reduce(OP_PROD, y, I64(0, 1), 2, 0, NULL);
	Tensor *sz = reduce(OP_SUM, z, I64(1), 1, SH(2)), *pz = reduce(OP_PROD, z, I64(1), 1, SH(2));

	expect_vals(s1, DBL(6, -0.25), 2, "sum dim 1");
	expect_vals(s0, DBL(1.5, 2.25, 2), 3, "sum dim 0");
	expect_vals(p1, DBL(24, -INFINITY), 2, "prod dim 1");
	expect_vals(pa, DBL(-INFINITY), 1, "prod all");
	expect_vals(sz, DBL(NAN, INFINITY), 2, "sum inf - inf");
	expect_vals(pz, DBL(-INFINITY, NAN), 2, "prod 0 * inf");
	Tensor *all[] = { x, y, z, s1, s0, p1, pa, sz, pz };
	free_all(all, NELEM(all));
}

Test(interp, sum_empty_and_integer)
{
	Tensor *e = tens("e", DT_F32, SH(0, 3), NULL);
	Tensor *i = tens_i("i", DT_I32, SH(4), I64(1, 2, 3, INT32_MAX));
	Tensor *b = tens("b", DT_BF16, SH(3), DBL(1, 0x1p-8, 0x1p-8));
	Tensor *se = reduce(OP_SUM, e, I64(0), 1, SH(3)), *pe = reduce(OP_PROD, e, I64(0), 1, SH(3));
	Tensor *si = reduce(OP_SUM, i, I64(0), 1, 0, NULL), *pi = reduce(OP_PROD, i, I64(0), 1, 0, NULL);
	Tensor *sb = reduce(OP_SUM, b, I64(0), 1, 0, NULL);

	expect_vals(se, DBL(0.0, 0.0, 0.0), 3, "sum over an empty dim");
	expect_vals(pe, DBL(1, 1, 1), 3, "prod over an empty dim");
	expect_ints(si, I64(6 + INT64_C(2147483647) - INT64_C(4294967296)), 1, "i32 sum wraps");
	expect_ints(pi, I64(6 * INT64_C(2147483647) - 3 * INT64_C(4294967296)), 1, "i32 prod wraps");
	expect_vals(sb, DBL(0x1.02p+0), 1, "bf16 sum rounds once");
	Tensor *all[] = { e, i, b, se, pe, si, pi, sb };
	free_all(all, NELEM(all));
}

/* an empty dims list reduces nothing: the result is the operand (the sign of
 * a zero summed over nothing is left open) */
Test(interp, reduce_no_dims)
{
	Tensor *x = tens("x", DT_F32, SH(3), DBL(NAN, -0.0, 2.5));
	Tensor *r = reduce(OP_SUM, x, NULL, 0, SH(3)), *m = reduce(OP_AMAX, x, NULL, 0, SH(3));

	cr_expect(isnan(tensor_getf(r, 0)) && tensor_getf(r, 2) == 2.5, "sum over no dims");
	expect_vals(m, DBL(NAN, -0.0, 2.5), 3, "amax over no dims");
	tensor_free(x);
	tensor_free(r);
	tensor_free(m);
}

/* ---- shape ops ---- */

/* fn(x) = op x [attr] : same dtype, shape rd */
static Tensor *
shape_op(Op op, Tensor *x, const int64_t *attr, int nattr, int rrank, const int64_t *rd)
{
	Func *fn = ir_func_new(A, ir_ops[op].name);
	uint32_t p = ir_param(fn, "x", x->dtype, x->rank, x->dims);
	uint32_t r = ir_instr(fn, op, &p, 1, attr, nattr, x->dtype, rrank, rd);
	Tensor *out = NULL;

	ir_return(fn, r, NULL);
	run(fn, &x, &out);
	return out;
}

Test(interp, broadcast_in_dim)
{
	Tensor *row = tens("row", DT_F32, SH(2), DBL(NAN, -0.0));
	Tensor *col = tens("col", DT_F32, SH(3), DBL(1, 2, 3));
	Tensor *one = tens("one", DT_F32, SH(2, 1), DBL(5, 6));
	Tensor *sc = tens("sc", DT_BF16, 0, NULL, DBL(7));
	Tensor *r1 = shape_op(OP_BROADCAST, row, I64(0), 1, SH(2, 3));
	Tensor *r2 = shape_op(OP_BROADCAST, col, I64(1), 1, SH(2, 3));
	Tensor *r3 = shape_op(OP_BROADCAST, one, I64(0, 1), 2, SH(2, 3));
	Tensor *r4 = shape_op(OP_BROADCAST, sc, NULL, 0, SH(2, 2));
	Tensor *r5 = shape_op(OP_BROADCAST, col, I64(1), 1, SH(2, 3, 2));

	expect_vals(r1, DBL(NAN, NAN, NAN, -0.0, -0.0, -0.0), 6, "per-row vector");
	expect_vals(r2, DBL(1, 2, 3, 1, 2, 3), 6, "per-column vector");
	expect_vals(r3, DBL(5, 5, 5, 6, 6, 6), 6, "size-1 dim");
	expect_vals(r4, DBL(7, 7, 7, 7), 4, "scalar");
	expect_vals(r5, DBL(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3), 12, "middle dim");
	Tensor *all[] = { row, col, one, sc, r1, r2, r3, r4, r5 };
	free_all(all, NELEM(all));
}

Test(interp, transpose_3d)
{
	double v[24], want[24];
	Tensor *x, *r;

	for (int i = 0; i < 24; i++)
		v[i] = i;
	/* perm [2,0,1]: r[a][b][c] = x[b][c][a], x[b][c][a] = b*12 + c*4 + a */
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 2; b++)
			for (int c = 0; c < 3; c++)
				want[a * 6 + b * 3 + c] = b * 12 + c * 4 + a;
	x = tens("x", DT_F32, SH(2, 3, 4), v);
	r = shape_op(OP_TRANSPOSE, x, I64(2, 0, 1), 3, SH(4, 2, 3));
	expect_vals(r, want, 24, "transpose [2,0,1] of [2,3,4]");
	tensor_free(x);
	tensor_free(r);
}

Test(interp, transpose_2d_fp8)
{
	Tensor *x = tens_u8("x", DT_F8E4M3FN, (const uint8_t[]){ 1, 2, 3, 4, 5, 6 }, 6), *r;

	x->rank = 2;
	x->dims[0] = 2;
	x->dims[1] = 3;
	r = shape_op(OP_TRANSPOSE, x, I64(1, 0), 2, SH(3, 2));
	expect_codes(r, (const uint8_t[]){ 1, 4, 2, 5, 3, 6 }, 6, "transpose [1,0] of e4m3fn [2,3]");
	tensor_free(x);
	tensor_free(r);
}

Test(interp, slice_with_stride)
{
	double v[20];
	Tensor *a, *b, *ra, *rb, *re;

	for (int i = 0; i < 20; i++)
		v[i] = i;
	a = tens("a", DT_F32, SH(10), v);
	b = tens("b", DT_F32, SH(4, 5), v);
	ra = shape_op(OP_SLICE, a, I64(1, 8, 3), 3, SH(3));
	rb = shape_op(OP_SLICE, b, I64(1, 0, 4, 5, 2, 2), 6, SH(2, 3));
	re = shape_op(OP_SLICE, a, I64(2, 2, 1), 3, SH(0));
	expect_vals(ra, DBL(1, 4, 7), 3, "slice [1:8:3]");
	expect_vals(rb, DBL(5, 7, 9, 15, 17, 19), 6, "slice [1:4:2, 0:5:2]");
	cr_expect_eq(tensor_numel(re), 0);
	Tensor *all[] = { a, b, ra, rb, re };
	free_all(all, NELEM(all));
}

Test(interp, cat_on_dim_1_and_0)
{
	Func *fn = ir_func_new(A, "cat");
	uint32_t p[3], r1, r0;
	Tensor *in[3] = {
		tens("a", DT_F32, SH(2, 1), DBL(1, 2)),
		tens("b", DT_F32, SH(2, 3), DBL(3, 4, 5, 6, 7, 8)),
		tens("c", DT_F32, SH(2, 0), NULL),
	};
	Tensor *out[2] = { NULL, NULL };

	for (int k = 0; k < 3; k++)
		p[k] = ir_param(fn, in[k]->name, DT_F32, in[k]->rank, in[k]->dims);
	r1 = ir_instr(fn, OP_CAT, p, 3, I64(1), 1, DT_F32, SH(2, 4));
	r0 = ir_instr(fn, OP_CAT, (const uint32_t[]){ p[1], p[1] }, 2, I64(0), 1, DT_F32, SH(4, 3));
	ir_return(fn, r1, NULL);
	ir_return(fn, r0, NULL);
	run(fn, in, out);
	expect_vals(out[0], DBL(1, 3, 4, 5, 2, 6, 7, 8), 8, "cat dim 1");
	expect_vals(out[1], DBL(3, 4, 5, 6, 7, 8, 3, 4, 5, 6, 7, 8), 12, "cat dim 0");
	free_all(in, 3);
	free_all(out, 2);
}

Test(interp, squeeze_reshape_clone)
{
	Tensor *x = tens("x", DT_F32, SH(1, 3, 1), DBL(1, NAN, -0.0));
	Tensor *y = tens("y", DT_F32, SH(2, 3), DBL(1, 2, 3, 4, 5, 6));
	Tensor *n = tens("n", DT_F32, SH(2), DBL(0, 0));
	uint32_t payload = 0x7FC01234u;
	Tensor *rs, *rr, *rc;

	memcpy(n->data, &payload, 4);
	rs = shape_op(OP_SQUEEZE, x, I64(0, 2), 2, SH(3));
	rr = shape_op(OP_RESHAPE, y, NULL, 0, SH(3, 2));
	rc = shape_op(OP_CLONE, n, NULL, 0, SH(2));
	expect_vals(rs, DBL(1, NAN, -0.0), 3, "squeeze [0,2]");
	cr_expect_eq(rs->rank, 1);
	expect_vals(rr, DBL(1, 2, 3, 4, 5, 6), 6, "reshape [2,3] -> [3,2]");
	cr_expect_eq(rr->dims[0], 3);
	cr_expect_eq(memcmp(rc->data, n->data, 8), 0, "clone changed the bytes (NaN payload)");
	Tensor *all[] = { x, y, n, rs, rr, rc };
	free_all(all, NELEM(all));
}

/* ---- full ---- */

static Tensor *
full(double v, DType t, int rank, const int64_t *dims)
{
	Func *fn = ir_func_new(A, "full");
	Tensor *out = NULL;

	ir_return(fn, ir_full(fn, v, t, rank, dims), NULL);
	run(fn, NULL, &out);
	return out;
}

Test(interp, full_values)
{
	Tensor *t[] = {
		full(448, DT_F32, SH(2)),
		full(-0.0, DT_F32, SH(1)),
		full(NAN, DT_F32, 0, NULL),
		full(1e300, DT_F32, 0, NULL),
		full(5e-324, DT_F64, 0, NULL),
		full(0.1, DT_BF16, SH(3)),
		full(1e-12, DT_F32, 0, NULL),
		full(70000, DT_F16, 0, NULL),
		full(-INFINITY, DT_F64, SH(2, 2)),
	};

	expect_vals(t[0], DBL(448, 448), 2, "full 448 f32");
	expect_vals(t[1], DBL(-0.0), 1, "full -0 f32");
	expect_vals(t[2], DBL(NAN), 1, "full nan f32");
	expect_vals(t[3], DBL(INFINITY), 1, "full 1e300 f32");
	expect_vals(t[4], DBL(0x1p-1074), 1, "full 5e-324 f64");
	expect_vals(t[5], DBL(0.10009765625, 0.10009765625, 0.10009765625), 3, "full 0.1 bf16");
	expect_vals(t[6], DBL(0x1.197998p-40), 1, "full 1e-12 f32");
	expect_vals(t[7], DBL(INFINITY), 1, "full 70000 f16");
	expect_vals(t[8], DBL(-INFINITY, -INFINITY, -INFINITY, -INFINITY), 4, "full -inf f64");
	free_all(t, NELEM(t));
}

Test(interp, full_int_bool_fp8)
{
	Tensor *t[] = {
		full(3.7, DT_I32, SH(2)),
		full(-3.5, DT_I8, 0, NULL),
		full(NAN, DT_B8, 0, NULL),
		full(0.0, DT_B8, 0, NULL),
		full(464, DT_F8E4M3FN, SH(2)),
		full(-NAN, DT_F8E4M3FN, 0, NULL),
		full(1e5, DT_F8E5M2, 0, NULL),
	};

	expect_ints(t[0], I64(3, 3), 2, "full 3.7 i32");
	expect_ints(t[1], I64(-3), 1, "full -3.5 i8");
	expect_ints(t[2], I64(1), 1, "full nan b8");
	expect_ints(t[3], I64(0), 1, "full 0 b8");
	expect_codes(t[4], (const uint8_t[]){ 0x7E, 0x7E }, 2, "full 464 e4m3fn");
	expect_codes(t[5], (const uint8_t[]){ 0xFF }, 1, "full -nan e4m3fn");
	expect_codes(t[6], (const uint8_t[]){ 0x7C }, 1, "full 1e5 e5m2");
	free_all(t, NELEM(t));
}

/* ---- scaled_mm ---- */

/* A (2,3) e4m3fn = [[1,2,3],[-1,0.5,448]], B (3,2) = [[1,0],[2,1],[-1,0.25]],
 * scale_a 4, scale_b 0.5: A·B = [[2,2.75],[-448,112.5]], times 2 = [[4,5.5],[-896,225]] */
static Tensor *
scaled_mm(DType tb, DType out, bool bias)
{
	Func *fn = ir_func_new(A, "mm");
	uint32_t p[5];
	Tensor *in[5] = {
		tens("a", DT_F8E4M3FN, SH(2, 3), DBL(1, 2, 3, -1, 0.5, 448)),
		tens("b", tb, SH(3, 2), DBL(1, 0.0, 2, 1, -1, 0.25)),
		tens("sa", DT_F32, 0, NULL, DBL(4)),
		tens("sb", DT_F32, 0, NULL, DBL(0.5)),
		tens("bias", DT_BF16, SH(2), DBL(1, 0.5)),
	};
	Tensor *r = NULL;
	int n = bias ? 5 : 4;

	for (int k = 0; k < n; k++)
		p[k] = ir_param(fn, in[k]->name, in[k]->dtype, in[k]->rank, in[k]->dims);
	ir_return(fn, ir_instr(fn, OP_SCALED_MM, p, n, NULL, 0, out, SH(2, 2)), NULL);
	fn->ins[0].flags = IF_FAST_ACCUM;
	run(fn, in, &r);
	free_all(in, 5);
	return r;
}

/* + bias [1, 0.5] = [[5,6],[-895,225.5]]; bf16: -895 -> -896 (ulp 4), 225.5 -> 226 (tie, even) */
Test(interp, scaled_mm_bias_bf16_rounding)
{
	Tensor *r = scaled_mm(DT_F8E4M3FN, DT_BF16, true);

	expect_vals(r, DBL(5, 6, -896, 226), 4, "scaled_mm + bias -> bf16");
	tensor_free(r);
}

Test(interp, scaled_mm_f32_and_e5m2)
{
	Tensor *r = scaled_mm(DT_F8E4M3FN, DT_F32, false), *r2 = scaled_mm(DT_F8E5M2, DT_F16, false);

	expect_vals(r, DBL(4, 5.5, -896, 225), 4, "scaled_mm -> f32");
	expect_vals(r2, DBL(4, 5.5, -896, 225), 4, "scaled_mm e4m3fn x e5m2 -> f16");
	tensor_free(r);
	tensor_free(r2);
}

/* Block-wise scales (DeepSeek-V3's): a (4,512) and b (512,2) all ones, so
 * each 128-long partial sum is 128; scale_a (4,4) = i + r, scale_b (4,1) =
 * (r+1)/2: d(i,j) = 128 * sum_r (i+r)(r+1)/2 = 1280, 1920, 2560, 3200 */
Test(interp, scaled_mm_block_scales)
{
	Func *fn = ir_func_new(A, "mm");
	double *ones = malloc(512 * 4 * sizeof *ones), sa[16], sb[4];
	uint32_t p[4];

	cr_assert(ones);
	for (int i = 0; i < 512 * 4; i++)
		ones[i] = 1;
	for (int i = 0; i < 4; i++)
		for (int r = 0; r < 4; r++)
			sa[i * 4 + r] = i + r;
	for (int r = 0; r < 4; r++)
		sb[r] = (r + 1) / 2.0;
	Tensor *in[4] = {
		tens("a", DT_F8E4M3FN, SH(4, 512), ones),
		tens("b", DT_F8E4M3FN, SH(512, 2), ones),
		tens("sa", DT_F32, SH(4, 4), sa),
		tens("sb", DT_F32, SH(4, 1), sb),
	};
	Tensor *r = NULL;

	for (int k = 0; k < 4; k++)
		p[k] = ir_param(fn, in[k]->name, in[k]->dtype, in[k]->rank, in[k]->dims);
	ir_return(fn, ir_instr(fn, OP_SCALED_MM, p, 4, NULL, 0, DT_F32, SH(4, 2)), NULL);
	cr_assert_eq(ir_scale_mode(fn, &fn->ins[0]), SCALES_BLOCK);
	run(fn, in, &r);
	expect_vals(r, DBL(1280, 1280, 1920, 1920, 2560, 2560, 3200, 3200), 8, "scaled_mm, block-wise scales");
	tensor_free(r);
	free_all(in, 4);
	free(ones);
}

/* ---- whole functions ---- */

/* the torchao recipe on 4 values: amax 3.5, scale = 448 / max(amax, 1e-12) in
 * f64 = 128 -> f32, x * 128 clamped to ±448, cast to e4m3fn; inverse scale */
Test(interp, fp8_quantize_recipe)
{
	Func *fn = ir_func_new(A, "quant");
	uint32_t x = ir_param(fn, "x", DT_F32, SH(4)), v[16];
	Tensor *in = tens("x", DT_F32, SH(4), DBL(1, -2, 3.5, 0.25)), *out[3] = { NULL };

	v[0] = ir_instr(fn, OP_ABS, &x, 1, NULL, 0, DT_F32, SH(4));
	v[1] = ir_instr(fn, OP_AMAX, &v[0], 1, I64(0), 1, DT_F32, 0, NULL);
	v[2] = ir_instr(fn, OP_CONVERT, &v[1], 1, NULL, 0, DT_F64, 0, NULL);
	v[3] = ir_full(fn, 1e-12, DT_F64, 0, NULL);
	v[4] = ir_instr(fn, OP_MAXIMUM, (const uint32_t[]){ v[2], v[3] }, 2, NULL, 0, DT_F64, 0, NULL);
	v[5] = ir_full(fn, 448, DT_F64, 0, NULL);
	v[6] = ir_instr(fn, OP_DIV, (const uint32_t[]){ v[5], v[4] }, 2, NULL, 0, DT_F64, 0, NULL);
	v[7] = ir_instr(fn, OP_CONVERT, &v[6], 1, NULL, 0, DT_F32, 0, NULL);
	v[8] = ir_instr(fn, OP_MUL, (const uint32_t[]){ x, v[7] }, 2, NULL, 0, DT_F32, SH(4));
	v[9] = ir_full(fn, -448, DT_F32, 0, NULL);
	v[10] = ir_full(fn, 448, DT_F32, 0, NULL);
	v[11] = ir_instr(fn, OP_MAXIMUM, (const uint32_t[]){ v[8], v[9] }, 2, NULL, 0, DT_F32, SH(4));
	v[12] = ir_instr(fn, OP_MINIMUM, (const uint32_t[]){ v[11], v[10] }, 2, NULL, 0, DT_F32, SH(4));
	v[13] = ir_instr(fn, OP_CONVERT, &v[12], 1, NULL, 0, DT_F8E4M3FN, SH(4));
	v[14] = ir_instr(fn, OP_RECIPROCAL, &v[7], 1, NULL, 0, DT_F32, 0, NULL);
	ir_return(fn, v[13], "xq");
	ir_return(fn, v[14], "scale_inv");
	ir_return(fn, v[1], NULL);
	run(fn, &in, out);
	expect_codes(out[0], (const uint8_t[]){ 0x70, 0xF8, 0x7E, 0x60 }, 4, "quantized x");
	expect_vals(out[1], DBL(0.0078125), 1, "inverse scale");
	expect_vals(out[2], DBL(3.5), 1, "amax");
	cr_expect_str_eq(out[0]->name, "xq");
	cr_expect_str_eq(out[1]->name, "scale_inv");
	cr_expect_str_eq(out[2]->name, "2");
	tensor_free(in);
	free_all(out, 3);
}

/* an operand used twice, a dead value, a parameter returned, one value returned twice */
Test(interp, reuse_dead_values_and_parameter_outputs)
{
	Func *fn = ir_func_new(A, "reuse");
	uint32_t x = ir_param(fn, "x", DT_F32, SH(2)), a, b;
	Tensor *in = tens("x", DT_F32, SH(2), DBL(3, -0.0)), *out[4] = { NULL };

	a = ir_instr(fn, OP_MUL, (const uint32_t[]){ x, x }, 2, NULL, 0, DT_F32, SH(2));
	ir_instr(fn, OP_NEG, &a, 1, NULL, 0, DT_F32, SH(2)); /* dead */
	b = ir_instr(fn, OP_ADD, (const uint32_t[]){ a, a }, 2, NULL, 0, DT_F32, SH(2));
	ir_return(fn, b, NULL);
	ir_return(fn, x, "x_out");
	ir_return(fn, b, "b_again");
	ir_return(fn, a, NULL);
	run(fn, &in, out);
	expect_vals(out[0], DBL(18, 0.0), 2, "(x*x)+(x*x)");
	expect_vals(out[1], DBL(3, -0.0), 2, "x returned");
	expect_vals(out[2], DBL(18, 0.0), 2, "b returned twice");
	expect_vals(out[3], DBL(9, 0.0), 2, "x*x");
	cr_expect_str_eq(out[1]->name, "x_out");
	cr_expect(out[1]->data != in->data, "a returned parameter must be a copy");
	tensor_free(in);
	free_all(out, 4);
}

/* ---- inputs that do not match ---- */

static void
rejects_input(Tensor *bad, const char *want)
{
	Func *fn = ir_func_new(A, "f");
	uint32_t x = ir_param(fn, "x", DT_F32, SH(2, 3));
	Tensor *out = NULL;
	char err[256] = "";

	ir_return(fn, ir_instr(fn, OP_NEG, &x, 1, NULL, 0, DT_F32, SH(2, 3)), NULL);
	cr_assert_not(ir_interpret(fn, &bad, &out, err, sizeof err), "accepted a bad input (%s)", want);
	cr_expect_null(out);
	cr_expect(strstr(err, want), "message '%s' lacks '%s'", err, want);
	tensor_free(bad);
}

Test(interp, rejects_input_of_wrong_shape)
{
	rejects_input(tensor_new("x", DT_F32, SH(3, 2)), "input 'x' must be f32 with 2 dims");
}

Test(interp, rejects_input_of_wrong_rank)
{
	rejects_input(tensor_new("x", DT_F32, SH(6)), "input 'x' must be f32 with 2 dims");
}

Test(interp, rejects_input_of_wrong_dtype)
{
	rejects_input(tensor_new("x", DT_BF16, SH(2, 3)), "input 'x' must be f32");
}

/* ---- collectives over ranks in lockstep ---- */

/* collective op (attributes at) of x, waited for, over n ranks: rank r's
 * operand is xs[r]; outs[r] its result */
static void
run_n_ranks(
	int n, Op op, const int64_t *at, int nat, DType rt, int rank, const int64_t *dims, Tensor **xs, Tensor **outs)
{
	Func *fn = ir_func_new(A, ir_ops[op].name);
	uint32_t p = ir_param(fn, "x", xs[0]->dtype, xs[0]->rank, xs[0]->dims);
	uint32_t c = ir_instr(fn, op, &p, 1, at, nat, rt, rank, dims);
	char err[512] = "";

	ir_return(fn, ir_instr(fn, OP_WAIT, &c, 1, NULL, 0, rt, rank, dims), NULL);
	verify_ok(fn);
	cr_assert(ir_interpret_ranks(fn, n, xs, outs, err, sizeof err), "ir_interpret_ranks failed: %s", err);
}

static void
run_ranks(Op op, const int64_t *at, int nat, DType rt, int rank, const int64_t *dims, Tensor **xs, Tensor **outs)
{
	run_n_ranks(3, op, at, nat, rt, rank, dims, xs, outs);
}

Test(interp, collectives_over_three_ranks)
{
	Tensor *x[3], *o[3];

	/* all_gather: every rank gets the three operands, rank 0's first */
	for (int r = 0; r < 3; r++)
		x[r] = tens("x", DT_BF16, 1, I64(2), DBL(r, -0.0 - r));
	run_ranks(OP_ALL_GATHER, I64(3), 1, DT_BF16, 2, I64(3, 2), x, o);
	for (int r = 0; r < 3; r++)
		expect_vals(o[r], DBL(0, -0.0, 1, -1, 2, -2), 6, "all_gather");
	free_all(o, 3);
	free_all(x, 3);

	/* reduce_scatter avg: rank r gets the mean of the ranks' part r, in f64
	 * rounded once to bf16 */
	x[0] = tens("x", DT_BF16, 1, I64(3), DBL(1, 256, INFINITY));
	x[1] = tens("x", DT_BF16, 1, I64(3), DBL(2, 1, -INFINITY));
	x[2] = tens("x", DT_BF16, 1, I64(3), DBL(4, 1, 1));
	run_ranks(OP_REDUCE_SCATTER, I64(RED_AVG, 3), 2, DT_BF16, 1, I64(1), x, o);
	expect_vals(o[0], DBL(2.328125), 1, "reduce_scatter avg, rank 0"); /* 7/3 in bf16 */
	expect_vals(o[1], DBL(86), 1, "reduce_scatter avg, rank 1");       /* 258/3, exact */
	expect_vals(o[2], DBL(NAN), 1, "reduce_scatter avg, rank 2");
	free_all(o, 3);
	free_all(x, 3);

	/* all_reduce max drops a NaN (NCCL's float max); min too; i32 sums wrap */
	x[0] = tens("x", DT_F32, 1, I64(2), DBL(NAN, 1));
	x[1] = tens("x", DT_F32, 1, I64(2), DBL(-3, NAN));
	x[2] = tens("x", DT_F32, 1, I64(2), DBL(-5, 0.5));
	run_ranks(OP_ALL_REDUCE, I64(RED_MAX, 3), 2, DT_F32, 1, I64(2), x, o);
	for (int r = 0; r < 3; r++)
		expect_vals(o[r], DBL(-3, 1), 2, "all_reduce max");
	free_all(o, 3);
	run_ranks(OP_ALL_REDUCE, I64(RED_MIN, 0), 2, DT_F32, 1, I64(2), x, o);
	for (int r = 0; r < 3; r++)
		expect_vals(o[r], DBL(-5, 0.5), 2, "all_reduce min over any ranks");
	free_all(o, 3);
	free_all(x, 3);
	for (int r = 0; r < 3; r++)
		x[r] = tens_i("x", DT_I32, 1, I64(1), (const int64_t[]){ INT32_MAX - r });
	run_ranks(OP_ALL_REDUCE, I64(RED_SUM, 3), 2, DT_I32, 1, I64(1), x, o);
	for (int r = 0; r < 3; r++)
		expect_ints(o[r], (const int64_t[]){ (int32_t)(3u * INT32_MAX - 3u) }, 1, "all_reduce i32 sum");
	free_all(o, 3);
	free_all(x, 3);
}

/* over three ranks NCCL rounds each step of a float sum to the type, in
 * an order of its own: the interpreter flags each element whose bits that
 * could change */
Test(interp, collective_sums_flag_what_another_order_may_round)
{
	Tensor *x[3], *o[3];
	uint32_t first = 0;

	/* 1+2+4 exact at every step; 1 + 2^-8 + 2^-8 is 1 or 1+2^-7 by the
	 * order; an inf beside terms that cannot overflow decides the sum; beside
	 * two -3e38, which overflow to -inf together, it is inf or NaN by the
	 * order; a NaN, or two infinities of either sign, decide it */
	x[0] = tens("x", DT_BF16, 1, I64(6), DBL(1, 1, INFINITY, INFINITY, NAN, INFINITY));
	x[1] = tens("x", DT_BF16, 1, I64(6), DBL(2, 0x1p-8, 1, -3e38, 1, -INFINITY));
	x[2] = tens("x", DT_BF16, 1, I64(6), DBL(4, 0x1p-8, 2, -3e38, 0x1p-8, 1));
	run_ranks(OP_ALL_REDUCE, I64(RED_SUM, 3), 2, DT_BF16, 1, I64(6), x, o);
	cr_expect_eq(ir_interp_order_dependent(&first), 2, "the two sums another order may round otherwise");
	free_all(o, 3);
	/* an average: NCCL scales each term by 1/3 first */
	run_ranks(OP_ALL_REDUCE, I64(RED_AVG, 3), 2, DT_BF16, 1, I64(6), x, o);
	cr_expect_eq(ir_interp_order_dependent(&first), 4, "an average's finite and inf elements");
	free_all(o, 3);
	free_all(x, 3);
	/* over two ranks a sum rounds once either way; an average's halves may
	 * not be exact: bf16's smallest subnormal, 2^-133, halved */
	x[0] = tens("x", DT_BF16, 1, I64(3), DBL(1, 0x1p-133, 0x1p-8));
	x[1] = tens("x", DT_BF16, 1, I64(3), DBL(0x1p-8, 1, 3));
	run_n_ranks(2, OP_ALL_REDUCE, I64(RED_SUM, 2), 2, DT_BF16, 1, I64(3), x, o);
	cr_expect_eq(ir_interp_order_dependent(&first), 0, "a sum over two ranks");
	free_all(o, 2);
	run_n_ranks(2, OP_ALL_REDUCE, I64(RED_AVG, 2), 2, DT_BF16, 1, I64(3), x, o);
	cr_expect_eq(ir_interp_order_dependent(&first), 1, "an average over two ranks: the subnormal's half");
	free_all(o, 2);
	free_all(x, 2);
}

Test(interp, collective_over_other_ranks_is_an_error)
{
	Func *fn = ir_func_new(A, "g");
	uint32_t p = ir_param(fn, "x", DT_F32, 1, I64(2));
	uint32_t c = ir_instr(fn, OP_ALL_GATHER, &p, 1, I64(2), 1, DT_F32, 1, I64(4));
	Tensor *x[3], *o[3] = { 0 };
	char err[512] = "";

	ir_return(fn, ir_instr(fn, OP_WAIT, &c, 1, NULL, 0, DT_F32, 1, I64(4)), NULL);
	for (int r = 0; r < 3; r++)
		x[r] = tens("x", DT_F32, 1, I64(2), DBL(1, 2));
	cr_assert_not(ir_interpret_ranks(fn, 3, x, o, err, sizeof err));
	cr_expect_str_eq(err, "all_gather over 2 ranks, but the interpreter runs 3");
	free_all(x, 3);
}
