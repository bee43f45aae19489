/* interp.c — the reference interpreter: evaluates a function on host tensors
 * with PyTorch eager's semantics, the oracle for every pass and GPU result.
 *
 * Every op computes in its own dtype: f64 in double; f32 in float; f16 and
 * bf16 in float, rounded to the dtype after each op (PyTorch's opmath; exact
 * for + - * / sqrt since float has more than twice their precision); fp8 only
 * through conversions. Integers compute in 64 bits and wrap to their width.
 * Shape ops copy bytes. Layouts are ignored: tensors here are logical. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* ---- elementwise ---- */

/* the inverse of erf in double: an initial guess (Giles, "Approximating the
 * erfinv function", 2010), then Newton steps on erf until they stop moving */
static double
erfinv(double y)
{
	double w, x;

	if (isnan(y) || y < -1 || y > 1)
		return NAN;
	if (y == 1 || y == -1)
		return y * INFINITY;
	if (y == 0)
		return y;
	w = -log((1 - y) * (1 + y));
	if (w < 5) {
		w -= 2.5;
		x = 2.81022636e-08;
		x = 3.43273939e-07 + x * w;
		x = -3.5233877e-06 + x * w;
		x = -4.39150654e-06 + x * w;
		x = 0.00021858087 + x * w;
		x = -0.00125372503 + x * w;
		x = -0.00417768164 + x * w;
		x = 0.246640727 + x * w;
		x = 1.50140941 + x * w;
	} else {
		w = sqrt(w) - 3;
		x = -0.000200214257;
		x = 0.000100950558 + x * w;
		x = 0.00134934322 + x * w;
		x = -0.00367342844 + x * w;
		x = 0.00573950773 + x * w;
		x = -0.0076224613 + x * w;
		x = 0.00943887047 + x * w;
		x = 1.00167406 + x * w;
		x = 2.83297682 + x * w;
	}
	x *= y;
	for (int i = 0; i < 4; i++) {
		double d = (erf(x) - y) / (1.1283791670955126 * exp(-x * x));

		if (!isfinite(d))
			break;
		x -= d;
	}
	return x;
}

/* unary and binary float ops, one body for float and double (T) */
#define UNARY_BODY(T, x)                                                                 \
	switch (op) {                                                                    \
	case OP_ABS:        return fabs(x);                                              \
	case OP_NEG:        return -(x);                                                 \
	case OP_RECIPROCAL: return (T)1 / (x);                                           \
	case OP_EXP:        return exp(x);                                               \
	case OP_EXP2:       return exp2(x);                                              \
	case OP_LOG:        return log(x);                                               \
	case OP_LOG1P:      return log1p(x);                                             \
	case OP_LOG2:       return log2(x);                                              \
	case OP_SQRT:       return sqrt(x);                                              \
	case OP_RSQRT:      return (T)1 / sqrt(x);                                       \
	case OP_TANH:       return tanh(x);                                              \
	case OP_ERF:        return erf(x);                                               \
	case OP_SIN:        return sin(x);                                               \
	case OP_COS:        return cos(x);                                               \
	case OP_SIGN:       return (T)(((x) > 0) - ((x) < 0)); /* NaN → 0, as PyTorch */ \
	case OP_FLOOR:      return floor(x);                                             \
	case OP_CEIL:       return ceil(x);                                              \
	case OP_ROUND:      return nearbyint(x);                                         \
	case OP_TRUNC:      return trunc(x);                                             \
	case OP_ISFINITE:   return isfinite(x);                                          \
	case OP_ACOS:       return acos(x);                                              \
	case OP_ACOSH:      return acosh(x);                                             \
	case OP_ASIN:       return asin(x);                                              \
	case OP_ASINH:      return asinh(x);                                             \
	case OP_ATAN:       return atan(x);                                              \
	case OP_ATANH:      return atanh(x);                                             \
	case OP_COSH:       return cosh(x);                                              \
	case OP_SINH:       return sinh(x);                                              \
	case OP_TAN:        return tan(x);                                               \
	case OP_ERFC:       return erfc(x);                                              \
	case OP_ERFINV:     return erfinv(x);                                            \
	case OP_EXPM1:      return expm1(x);                                             \
	case OP_LOG10:      return log10(x);                                             \
	case OP_LGAMMA:     return lgamma(x);                                            \
	case OP_SIGNBIT:    return signbit(x) != 0;                                      \
	default:            unreachable();                                                          \
	}

#define BINARY_BODY(T, x, y)                                                                                         \
	T m_;                                                                                                        \
	switch (op) {                                                                                                \
	case OP_ADD: return (x) + (y);                                                                               \
	case OP_SUB: return (x) - (y);                                                                               \
	case OP_MUL: return (x) * (y);                                                                               \
	case OP_DIV: return (x) / (y);                                                                               \
	case OP_POW: return pow(x, y);                                                                               \
	case OP_MAXIMUM:                                                                                             \
		return isnan(x)    ? (x)                                                                             \
			: isnan(y) ? (y)                                                                             \
				   : ((x) == (y) ? ((signbit(x) ? (y) : (x)))                                        \
						     : (x) > (y) ? (x)                                               \
								 : (y));                                             \
	case OP_MINIMUM:                                                                                             \
		return isnan(x)    ? (x)                                                                             \
			: isnan(y) ? (y)                                                                             \
				   : ((x) == (y) ? ((signbit(x) ? (x) : (y)))                                        \
						     : (x) < (y) ? (x)                                               \
								 : (y));                                             \
	case OP_FMOD:      return fmod(x, y);                                                                        \
	case OP_ATAN2:     return atan2(x, y);                                                                       \
	case OP_NEXTAFTER: return sizeof(T) == sizeof(float) ? nextafterf((float)(x), (float)(y)) : nextafter(x, y); \
	case OP_REMAINDER: m_ = fmod(x, y); return m_ != 0 && ((y) < 0) != (m_ < 0) ? m_ + (y) : m_;                 \
	default:           unreachable();                                                                                      \
	}

static float
unary_f(Op op, float x)
{
	UNARY_BODY(float, x)
}
static double
unary_d(Op op, double x)
{
	UNARY_BODY(double, x)
}
static float
binary_f(Op op, float x, float y)
{
	BINARY_BODY(float, x, y)
}
static double
binary_d(Op op, double x, double y){ BINARY_BODY(double, x, y) }

/* comparisons: IEEE for floats (NaN compares false but for ne), plain for integers */
#define COMPARE_BODY(x, y)             \
	switch (op) {                  \
	case OP_EQ: return (x) == (y); \
	case OP_NE: return (x) != (y); \
	case OP_LT: return (x) < (y);  \
	case OP_LE: return (x) <= (y); \
	case OP_GT: return (x) > (y);  \
	case OP_GE: return (x) >= (y); \
	default:    unreachable();        \
	}

static bool compare(Op op, double x, double y)
{
	COMPARE_BODY(x, y)
}
static bool
compare_i(Op op, int64_t x, int64_t y)
{
	COMPARE_BODY(x, y)
}

static int64_t
unary_i(Op op, int64_t x, DType t)
{
	switch (op) {
	case OP_ABS:         return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
	case OP_NEG:         return (int64_t)(0 - (uint64_t)x);
	case OP_SIGN:        return (x > 0) - (x < 0);
	case OP_ISFINITE:    return 1;
	case OP_BITWISE_NOT: return t == DT_B8 ? !x : ~x;
	case OP_LOGICAL_NOT: return !x;
	case OP_SIGNBIT:     return x < 0;
	default:             unreachable();
	}
}

/* shifts as c10's: by a negative amount or past the width, a left shift
 * gives 0 and a right shift the sign; unsigned types shift in zeros */
static int64_t
shift(Op op, int64_t x, int64_t y, DType t)
{
	int w = ir_dtypes[t].bits;

	if (op == OP_BITWISE_LEFT_SHIFT)
		return y < 0 || y >= w ? 0 : (int64_t)((uint64_t)x << y);
	if (t == DT_U8)
		return y < 0 || y >= w ? 0 : (int64_t)((uint64_t)(uint8_t)x >> y);
	return x >> (y < 0 || y >= w ? w - 1 : y);
}

/* integer division and modulo: truncating; by zero gives -1 and 0, no trap */
static int64_t
binary_i(Op op, int64_t x, int64_t y, DType t)
{
	int64_t m;

	switch (op) {
	case OP_BITWISE_LEFT_SHIFT:
	case OP_BITWISE_RIGHT_SHIFT: return shift(op, x, y, t);
	case OP_ADD:                 return (int64_t)((uint64_t)x + (uint64_t)y);
	case OP_SUB:                 return (int64_t)((uint64_t)x - (uint64_t)y);
	case OP_MUL:                 return (int64_t)((uint64_t)x * (uint64_t)y);
	case OP_DIV:                 return y == 0 ? -1 : (y == -1 ? (int64_t)(0 - (uint64_t)x) : x / y);
	case OP_MAXIMUM:             return x > y ? x : y;
	case OP_MINIMUM:             return x < y ? x : y;
	case OP_FMOD:                return y == 0 || y == -1 ? 0 : x % y;
	case OP_REMAINDER:           m = y == 0 || y == -1 ? 0 : x % y; return m != 0 && ((y < 0) != (m < 0)) ? m + y : m;
	case OP_BITWISE_AND:         return x & y;
	case OP_BITWISE_OR:          return x | y;
	case OP_BITWISE_XOR:         return x ^ y;
	default:                     unreachable();
	}
}

/* One elementwise op on numbers as Python computes them: t is F64 (floats)
 * or I64 (ints); comparisons give 0 or 1. The trace reader folds Python
 * arithmetic on numbers with it. */
double
ir_eval_scalar(Op op, const double *x, int n, DType t)
{
	bool cmp = ir_ops[op].cls == OC_COMPARE;
	int64_t a, b;

	if (t == DT_F64)
		return cmp ? compare(op, x[0], x[1]) : n == 1 ? unary_d(op, x[0]) : binary_d(op, x[0], x[1]);
	/* ints held in doubles: 2^63 saturates (ir_float_to_int), no cast past int64 */
	a = ir_float_to_int(x[0], DT_F64, DT_I64);
	b = n > 1 ? ir_float_to_int(x[1], DT_F64, DT_I64) : 0;
	if (cmp)
		return compare_i(op, a, b);
	return (double)(n == 1 ? unary_i(op, a, t) : binary_i(op, a, b, t));
}

/* operand i of an elementwise op: rank-0 operands broadcast */
#define AT(t, i) ((t)->rank == 0 ? 0 : (i))

static void
eval_convert(Tensor *r, const Tensor *a, int64_t n)
{
	bool fsrc = dt_isfloat(a->dtype) || dt_isfp8(a->dtype);

	for (int64_t i = 0; i < n; i++) {
		if (fsrc)
			tensor_setf_from(r, i, tensor_getf(a, i), a->dtype);
		else
			tensor_seti(r, i, tensor_geti(a, i));
	}
}

static void
eval_unary(Op op, Tensor *r, const Tensor *a, int64_t n)
{
	DType t = a->dtype;

	for (int64_t i = 0; i < n; i++) { /* a rank-0 operand broadcasts */
		if (t == DT_F64)
			tensor_setf(r, i, unary_d(op, tensor_getf(a, AT(a, i))));
		else if (op == OP_SIGNBIT && t == DT_F16 && isnan(tensor_getf(a, AT(a, i))))
			tensor_setf(r, i, 0); /* torch on CUDA: f16 NaNs widen to f32's canonical (positive) NaN */
		else if (dt_isfloat(t))
			tensor_setf(r, i, unary_f(op, (float)tensor_getf(a, AT(a, i))));
		else
			tensor_seti(r, i, ir_wrap_int(unary_i(op, tensor_geti(a, AT(a, i)), t), r->dtype));
	}
}

static void
eval_binary(Op op, Tensor *r, const Tensor *a, const Tensor *b, int64_t n)
{
	DType t = a->dtype;
	bool cmp = ir_ops[op].cls == OC_COMPARE;

	for (int64_t i = 0; i < n; i++) {
		int64_t ia = AT(a, i), ib = AT(b, i);

		if (cmp && (dt_isfloat(t)))
			tensor_seti(r, i, compare(op, tensor_getf(a, ia), tensor_getf(b, ib)));
		else if (cmp)
			tensor_seti(r, i, compare_i(op, tensor_geti(a, ia), tensor_geti(b, ib)));
		else if (t == DT_F64)
			tensor_setf(r, i, binary_d(op, tensor_getf(a, ia), tensor_getf(b, ib)));
		else if (dt_isfloat(t))
			tensor_setf(r, i, binary_f(op, (float)tensor_getf(a, ia), (float)tensor_getf(b, ib)));
		else
			tensor_seti(r, i, ir_wrap_int(binary_i(op, tensor_geti(a, ia), tensor_geti(b, ib), t), t));
	}
}

static void
eval_where(Tensor *r, const Tensor *c, const Tensor *a, const Tensor *b, int64_t n)
{
	int sz = dt_size(r->dtype);
	const unsigned char *pc = c->data;

	for (int64_t i = 0; i < n; i++) {
		const Tensor *s = pc[AT(c, i)] ? a : b;

		memcpy((char *)r->data + i * sz, (const char *)s->data + AT(s, i) * sz, (size_t)sz);
	}
}

/* a*b + c rounded once, in the operands' f32 or f64 */
static void
eval_fma(Tensor *r, const Tensor *a, const Tensor *b, const Tensor *c, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		double x = tensor_getf(a, AT(a, i)), y = tensor_getf(b, AT(b, i)), z = tensor_getf(c, AT(c, i));

		tensor_setf(r, i, r->dtype == DT_F64 ? fma(x, y, z) : (double)fmaf((float)x, (float)y, (float)z));
	}
}

/* ---- index arithmetic ---- */

static void
strides_of(const Tensor *t, int64_t *st)
{
	int64_t s = 1;

	for (int i = t->rank - 1; i >= 0; i--) {
		st[i] = s;
		s *= t->dims[i];
	}
}

/* coordinates of linear index i in t */
static void
coords(const Tensor *t, int64_t i, int64_t *c)
{
	for (int d = t->rank - 1; d >= 0; d--) {
		c[d] = t->dims[d] ? i % t->dims[d] : 0;
		i = t->dims[d] ? i / t->dims[d] : 0;
	}
}

static void
copy_elem(Tensor *r, int64_t i, const Tensor *a, int64_t j)
{
	int sz = dt_size(r->dtype);

	memcpy((char *)r->data + i * sz, (const char *)a->data + j * sz, (size_t)sz);
}

/* ---- reductions ---- */

typedef struct {
	double f;
	int64_t i;
	bool any;
	double mag;   /* a float sum's sum of |x|, a product's running |x| product */
	int lsb;      /* a sum's lowest set bit among its terms: 2^lsb divides each */
	bool special; /* a NaN, an inf or (a product) a zero among the terms */
} Acc;

/* results of the last ir_interpret whose bits another order of the terms
 * could change (ir_interp_order_dependent) */
static struct {
	int64_t n;
	uint32_t first;
} order_dep;

static void
acc_add(Op op, Acc *acc, const Tensor *a, int64_t j)
{
	bool fl = dt_isfloat(a->dtype);
	double x = fl ? tensor_getf(a, j) : 0;
	int64_t y = fl ? 0 : tensor_geti(a, j);

	if (fl && (!isfinite(x) || (op == OP_PROD && x == 0)))
		acc->special = true;
	switch (op) {
	case OP_SUM:
		acc->f += x;
		acc->mag += fabs(x);
		if (x != 0 && isfinite(x)) {
			int e;
			uint64_t m = (uint64_t)ldexp(fabs(frexp(x, &e)), 53);
			int lsb = e - 53 + __builtin_ctzll(m);

			acc->lsb = lsb < acc->lsb ? lsb : acc->lsb;
		}
		acc->i = (int64_t)((uint64_t)acc->i + (uint64_t)y);
		break;
	case OP_PROD:
		acc->f *= x;
		acc->mag *= fabs(x);
		acc->i = (int64_t)((uint64_t)acc->i * (uint64_t)y);
		break;
	case OP_AMAX:
		if (!acc->any || isnan(x) || (!isnan(acc->f) && (x > acc->f || (x == acc->f && !signbit(x)))))
			acc->f = x;
		if (!acc->any || y > acc->i)
			acc->i = y;
		break;
	case OP_AMIN:
		if (!acc->any || isnan(x) || (!isnan(acc->f) && (x < acc->f || (x == acc->f && signbit(x)))))
			acc->f = x;
		if (!acc->any || y < acc->i)
			acc->i = y;
		break;
	default: unreachable();
	}
	acc->any = true;
}

/* Whether another order of a float sum's or product's n terms could give
 * other bits than acc's (in order) once rounded to dt. Each f64 step rounds
 * by at most u = 2^-53 relative, and a term passes through at most n - 1
 * steps in any order (any tree of additions), so any order's result lies
 * within g mag of the exact one, g = (n-1)u / (1 - (n-1)u), and within
 * 2g mag of acc's; up to 2^25 terms 2g mag is below E = n 2^-52 mag, mag
 * (rounded too) counted (2E above, the bound's first form, loose by 2x):
 * if both ends of acc +- E round to the same value, every order gives it
 * (rounding is monotonic). A sum whose terms are all multiples of 2^lsb with
 * mag < 2^(lsb+53) is exact in every order (every partial sum is such a
 * multiple, small enough), even on a tie of dt's rounding, which the
 * interval would straddle. NaN and inf terms decide the result in any
 * order, and so does a zero a product's (f64 terms that overflow beside
 * them aside); a product that reached 0 or inf from nonzero finite terms
 * under- or overflowed on the way, which the order decides. */
static bool
order_matters(Op op, const Acc *acc, int64_t n, DType dt)
{
	double e = (n <= 1 << 25 ? 1 : 2) * (double)n * 0x1p-52 * acc->mag, lo, hi;

	if (acc->special || n < 2)
		return false;
	if (op == OP_PROD && (acc->f == 0 || !isfinite(acc->f) || !isfinite(acc->mag) || acc->mag == 0))
		return true;
	if (op == OP_SUM && (acc->mag == 0 || acc->mag < ldexp(1, acc->lsb + 53)))
		return false;
	if (!isfinite(e))
		return true;
	lo = ir_convert_scalar(acc->f - e, DT_F64, dt);
	hi = ir_convert_scalar(acc->f + e, DT_F64, dt);
	return memcmp(&lo, &hi, sizeof lo) != 0;
}

/* sums and products accumulate in double (in int64 for integers), then
 * round; float results whose bits depend on the order are counted in
 * order_dep */
static void
eval_reduce(Func *fn, const Instr *in, Tensor *r, const Tensor *a)
{
	const int64_t *dims = ir_attr(fn, in);
	int64_t n = tensor_numel(a), nr = tensor_numel(r), c[IR_MAXRANK], rs[IR_MAXRANK];
	Acc *acc = calloc((size_t)(nr ? nr : 1), sizeof *acc);
	bool red[IR_MAXRANK] = { false };
	int prod = in->op == OP_PROD; /* a product starts at 1, the rest at 0 */

	if (!acc)
		fatal("out of memory");
	for (uint32_t i = 0; i < in->nattr; i++)
		red[dims[i]] = true;
	strides_of(r, rs);
	for (int64_t i = 0; i < nr; i++)
		acc[i] = (Acc){ .f = prod, .i = prod, .mag = prod, .lsb = INT_MAX };
	for (int64_t j = 0; j < n; j++) {
		int64_t o = 0;

		coords(a, j, c);
		for (int d = 0, k = 0; d < a->rank; d++)
			if (!red[d])
				o += c[d] * rs[k++];
		acc_add(in->op, &acc[o], a, j);
	}
	for (int64_t i = 0; i < nr; i++) {
		if (dt_isfloat(a->dtype) && (in->op == OP_SUM || in->op == OP_PROD) &&
			order_matters(in->op, &acc[i], nr ? n / nr : 0, r->dtype) && order_dep.n++ == 0)
			order_dep.first = in->res;
		if (dt_isfloat(r->dtype))
			tensor_setf(r, i, acc[i].f);
		else
			tensor_seti(r, i, ir_wrap_int(acc[i].i, r->dtype));
	}
	free(acc);
}

/* ---- shape ops ---- */

static void
eval_broadcast(Func *fn, const Instr *in, Tensor *r, const Tensor *a)
{
	const int64_t *bd = ir_attr(fn, in);
	int64_t n = tensor_numel(r), c[IR_MAXRANK], as[IR_MAXRANK];

	strides_of(a, as);
	for (int64_t i = 0; i < n; i++) {
		int64_t j = 0;

		coords(r, i, c);
		for (int d = 0; d < a->rank; d++)
			j += (a->dims[d] == 1 ? 0 : c[bd[d]]) * as[d];
		copy_elem(r, i, a, j);
	}
}

static void
eval_transpose(Func *fn, const Instr *in, Tensor *r, const Tensor *a)
{
	const int64_t *perm = ir_attr(fn, in);
	int64_t n = tensor_numel(r), c[IR_MAXRANK], as[IR_MAXRANK];

	strides_of(a, as);
	for (int64_t i = 0; i < n; i++) {
		int64_t j = 0;

		coords(r, i, c);
		for (int d = 0; d < r->rank; d++)
			j += c[d] * as[perm[d]];
		copy_elem(r, i, a, j);
	}
}

static void
eval_slice(Func *fn, const Instr *in, Tensor *r, const Tensor *a)
{
	const int64_t *s = ir_attr(fn, in);
	int64_t n = tensor_numel(r), c[IR_MAXRANK], as[IR_MAXRANK];
	int rank = a->rank;

	strides_of(a, as);
	for (int64_t i = 0; i < n; i++) {
		int64_t j = 0;

		coords(r, i, c);
		for (int d = 0; d < rank; d++)
			j += (s[d] + c[d] * s[2 * rank + d]) * as[d];
		copy_elem(r, i, a, j);
	}
}

static void
eval_cat(Func *fn, const Instr *in, Tensor *r, Tensor **vals)
{
	int64_t dim = ir_attr(fn, in)[0], off = 0, c[IR_MAXRANK], as[IR_MAXRANK];

	for (uint32_t k = 0; k < in->nargs; k++) {
		const Tensor *a = vals[ir_args(fn, in)[k]];
		int64_t n = tensor_numel(a), rs[IR_MAXRANK];

		strides_of(r, rs);
		strides_of(a, as);
		for (int64_t j = 0; j < n; j++) {
			int64_t i = 0;

			coords(a, j, c);
			c[dim] += off;
			for (int d = 0; d < r->rank; d++)
				i += c[d] * rs[d];
			copy_elem(r, i, a, j);
		}
		off += a->dims[dim];
	}
}

static void
eval_flip(Func *fn, const Instr *in, Tensor *r, const Tensor *a)
{
	const int64_t *fd = ir_attr(fn, in);
	int64_t n = tensor_numel(r), c[IR_MAXRANK], as[IR_MAXRANK];
	bool flip[IR_MAXRANK] = { false };

	for (uint32_t k = 0; k < in->nattr; k++)
		flip[fd[k]] = true;
	strides_of(a, as);
	for (int64_t i = 0; i < n; i++) {
		int64_t j = 0;

		coords(r, i, c);
		for (int d = 0; d < r->rank; d++)
			j += (flip[d] ? a->dims[d] - 1 - c[d] : c[d]) * as[d];
		copy_elem(r, i, a, j);
	}
}

/* take and gather; an index out of range is the input's error */
static bool
eval_gather(Func *fn, const Instr *in, Tensor *r, const Tensor *a, const Tensor *ix, char *err, size_t errlen)
{
	int64_t dim = ir_attr(fn, in)[0], n = tensor_numel(r), c[IR_MAXRANK], as[IR_MAXRANK], is[IR_MAXRANK];

	strides_of(a, as);
	strides_of(ix, is);
	for (int64_t i = 0; i < n; i++) {
		int64_t j = 0, k = 0, q;

		coords(r, i, c);
		if (in->op == OP_TAKE)
			k = ix->rank ? c[dim] : 0;
		else
			for (int d = 0; d < ix->rank; d++)
				k += c[d] * is[d];
		q = tensor_geti(ix, k);
		if (q < 0 || q >= a->dims[dim]) {
			snprintf(err, errlen, "%s: index %lld is out of range for dim %lld of size %lld",
				ir_ops[in->op].name, (long long)q, (long long)dim, (long long)a->dims[dim]);
			return false;
		}
		for (int d = 0; d < a->rank; d++)
			j += (d == dim ? q : c[d]) * as[d];
		copy_elem(r, i, a, j);
	}
	return true;
}

static void
eval_pad(Func *fn, const Instr *in, Tensor *r, const Tensor *a, const Tensor *v)
{
	const int64_t *p = ir_attr(fn, in);
	int64_t n = tensor_numel(r), c[IR_MAXRANK], as[IR_MAXRANK];
	int rank = a->rank;

	strides_of(a, as);
	for (int64_t i = 0; i < n; i++) {
		int64_t j = 0;
		bool inside = true;

		coords(r, i, c);
		for (int d = 0; d < rank; d++) {
			int64_t s = c[d] - p[d], step = p[2 * rank + d] + 1;

			inside &= s >= 0 && s % step == 0 && s / step < a->dims[d];
			j += (inside ? s / step : 0) * as[d];
		}
		if (inside)
			copy_elem(r, i, a, j);
		else
			copy_elem(r, i, v, 0);
	}
}

static void
eval_iota(Func *fn, const Instr *in, Tensor *r)
{
	int64_t start = ir_attr(fn, in)[0], step = ir_attr(fn, in)[1], n = tensor_numel(r);

	for (int64_t i = 0; i < n; i++)
		tensor_seti(r, i, (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)step));
}

/* ---- scaled_mm ---- */

/* a tensor's elements as floats (exact for fp8); NULL if out of memory */
static float *
decode(const Tensor *t, int64_t n)
{
	float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);

	for (int64_t i = 0; f && i < n; i++)
		f[i] = (float)tensor_getf(t, i);
	return f;
}

/* exact fp8 decode; products of fp8 values are exact in float, accumulated in
 * float over k in order; then scaled by scale_a * scale_b (row-wise: by
 * scale_a[i], then by scale_b[j], in float), bias added, rounded.
 * Block-wise, each 128 of k are summed apart, the partial sum scaled by
 * scale_a[i][r], then by scale_b[r][j/128], and added in float in order. */
static void
eval_scaled_mm(Func *fn, const Instr *in, Tensor *r, Tensor **vals)
{
	const uint32_t *a = ir_args(fn, in);
	const Tensor *A = vals[a[0]], *B = vals[a[1]], *bias = in->nargs == 5 ? vals[a[4]] : NULL;
	int64_t M = A->dims[0], K = A->dims[1], N = B->dims[1];
	ScaleMode mode = ir_scale_mode(fn, in);
	int64_t KB = (K + IR_SCALE_BLOCK - 1) / IR_SCALE_BLOCK, NB = (N + IR_SCALE_BLOCK - 1) / IR_SCALE_BLOCK;
	float *af = decode(A, M * K), *bt = malloc((size_t)(K * N > 0 ? K * N : 1) * sizeof *bt);

	if (!af || !bt)
		fatal("out of memory");
	for (int64_t k = 0; k < K; k++) /* B transposed: rows of K */
		for (int64_t j = 0; j < N; j++)
			bt[j * K + k] = (float)tensor_getf(B, k * N + j);
	for (int64_t i = 0; i < M; i++) {
		for (int64_t j = 0; j < N; j++) {
			const float *x = af + i * K, *y = bt + j * K;
			float acc = 0;

			if (mode == SCALES_BLOCK) {
				for (int64_t r = 0; r < KB; r++) {
					float part = 0;

					for (int64_t k = r * IR_SCALE_BLOCK; k < K && k < (r + 1) * IR_SCALE_BLOCK; k++)
						part += x[k] * y[k];
					acc += part * (float)tensor_getf(vals[a[2]], i * KB + r) *
						(float)tensor_getf(vals[a[3]], r * NB + j / IR_SCALE_BLOCK);
				}
			} else {
				for (int64_t k = 0; k < K; k++)
					acc += x[k] * y[k];
			}
			if (mode == SCALES_ROW)
				acc = acc * (float)tensor_getf(vals[a[2]], i) * (float)tensor_getf(vals[a[3]], j);
			else if (mode == SCALES_TENSOR)
				acc *= (float)tensor_getf(vals[a[2]], 0) * (float)tensor_getf(vals[a[3]], 0);
			if (bias)
				acc += (float)tensor_getf(bias, j);
			tensor_setf(r, i * N + j, acc);
		}
	}
	free(af);
	free(bt);
}

/* gelu's tanh approximation, as cuBLASLt's epilogue computes it (in the
 * accumulator's type) */
static float
gelu_tanh(float x)
{
	return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

static double
gelu_tanh64(double x)
{
	return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* element (i, j) of matrix b of operand t (2-d, or batch b) given with trans */
static double
mat_at(const Tensor *t, int64_t batch, int64_t i, int64_t j, bool trans)
{
	int64_t r = t->dims[t->rank - 2], c = t->dims[t->rank - 1];
	int64_t base = t->rank == 2 ? 0 : batch * r * c;

	return tensor_getf(t, base + (trans ? j * c + i : i * c + j));
}

/* matmul: per batch and element, the products over k in order, each fused
 * into the f32 accumulator (f64 for f64) as the GPU's FMA and tensor cores
 * do (a product too large for f32 is not rounded to inf before it is
 * added), then bias, epilogue and one rounding; a gelu_aux one also writes
 * the pre-activation, rounded once, into its matmul_aux's tensor (the next
 * instruction's) */
static void
eval_matmul(Func *fn, const Instr *in, Tensor *r, Tensor **vals)
{
	const uint32_t *a = ir_args(fn, in);
	const Tensor *A = vals[a[0]], *B = vals[a[1]], *bias = in->nargs == 3 ? vals[a[2]] : NULL;
	bool ta = in->flags & IF_TRANS_A, tb = in->flags & IF_TRANS_B, dbl = r->dtype == DT_F64;
	int64_t M = r->dims[r->rank - 2], N = r->dims[r->rank - 1];
	int64_t K = A->dims[A->rank - (ta ? 2 : 1)], nb = tensor_numel(r) / (M * N > 0 ? M * N : 1);
	int epi = ir_epilogue(fn, in);
	Tensor *aux = epi == EPI_GELU_AUX ? vals[in[1].res] : NULL;

	for (int64_t b = 0; M * N > 0 && b < nb; b++)
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				double dacc = 0;
				float facc = 0;

				for (int64_t k = 0; k < K; k++) {
					if (dbl)
						dacc = fma(mat_at(A, b, i, k, ta), mat_at(B, b, k, j, tb), dacc);
					else
						facc = fmaf((float)mat_at(A, b, i, k, ta),
							(float)mat_at(B, b, k, j, tb), facc);
				}
				if (bias && dbl)
					dacc += tensor_getf(bias, j);
				else if (bias)
					facc += (float)tensor_getf(bias, j);
				if (aux)
					tensor_setf(aux, (b * M + i) * N + j, dbl ? dacc : facc);
				if (epi == EPI_RELU) /* NaN stays NaN, as cuBLASLt's and torch.relu */
					facc = facc < 0 ? 0 : facc, dacc = dacc < 0 ? 0 : dacc;
				else if (epi == EPI_GELU || epi == EPI_GELU_AUX)
					facc = gelu_tanh(facc), dacc = gelu_tanh64(dacc);
				tensor_setf(r, (b * M + i) * N + j, dbl ? dacc : facc);
			}
}

static void
eval_full(const Instr *in, Tensor *r)
{
	int64_t n = tensor_numel(r);

	for (int64_t i = 0; i < n; i++) {
		if (dt_isfloat(r->dtype) || dt_isfp8(r->dtype) || r->dtype == DT_B8)
			tensor_setf(r, i, in->fval);
		else
			tensor_seti(r, i, ir_float_to_int(in->fval, DT_F64, r->dtype));
	}
}

static void
eval_op(Func *fn, const Instr *in, Tensor **vals, Tensor *r, Tensor *x, int64_t n)
{
	const uint32_t *a = ir_args(fn, in);

	switch (ir_ops[in->op].cls) {
	case OC_CONVERT: eval_convert(r, x, n); return;
	case OC_UNARY:   eval_unary((Op)in->op, r, x, n); return;
	case OC_BINARY:
	case OC_COMPARE: eval_binary((Op)in->op, r, x, vals[a[1]], n); return;
	case OC_WHERE:   eval_where(r, x, vals[a[1]], vals[a[2]], n); return;
	case OC_FMA:     eval_fma(r, x, vals[a[1]], vals[a[2]], n); return;
	case OC_REDUCE:  eval_reduce(fn, in, r, x); return;
	case OC_CAT:     eval_cat(fn, in, r, vals); return;
	case OC_FULL:    eval_full(in, r); return;
	case OC_GEMM:
		if (in->op == OP_MATMUL)
			eval_matmul(fn, in, r, vals);
		else
			eval_scaled_mm(fn, in, r, vals);
		return;
	case OC_CLONE: memcpy(r->data, x->data, tensor_bytes(r)); return;
	case OC_SHAPE: break;
	default:       unreachable();
	}
	switch (in->op) {
	case OP_BROADCAST: eval_broadcast(fn, in, r, x); return;
	case OP_TRANSPOSE: eval_transpose(fn, in, r, x); return;
	case OP_SLICE:     eval_slice(fn, in, r, x); return;
	case OP_FLIP:      eval_flip(fn, in, r, x); return;
	case OP_RESHAPE:
	case OP_SQUEEZE:   memcpy(r->data, x->data, tensor_bytes(r)); return;
	default:           unreachable();
	}
}

static bool
eval(Func *fn, const Instr *in, Tensor **vals, char *err, size_t errlen)
{
	const uint32_t *a = ir_args(fn, in);
	Tensor *r = vals[in->res], *x = in->nargs ? vals[a[0]] : NULL;
	int64_t n = tensor_numel(r);

	switch (ir_ops[in->op].cls) {
	case OC_GATHER:  return eval_gather(fn, in, r, x, vals[a[1]], err, errlen);
	case OC_PAD:     eval_pad(fn, in, r, x, vals[a[1]]); return true;
	case OC_BITCAST: memcpy(r->data, x->data, tensor_bytes(r)); return true;
	case OC_IOTA:    eval_iota(fn, in, r); return true;
	default:         break;
	}
	eval_op(fn, in, vals, r, x, n);
	return true;
}

/* ---- collectives ---- */

/* element j of every rank's x reduced by op (RED_*) into element i of r: in
 * rank order, in f64 (int64 for integers), rounded once; min and max drop a
 * NaN as NCCL's do */
static void
reduce_ranks(int op, Tensor *r, int64_t i, Tensor ***vals, uint32_t x, int nranks, int64_t j)
{
	if (dt_isfloat(r->dtype)) {
		double acc = tensor_getf(vals[0][x], j);

		for (int k = 1; k < nranks; k++) {
			double y = tensor_getf(vals[k][x], j);

			acc = op == RED_PROD    ? acc * y
				: op == RED_MIN ? fmin(acc, y)
				: op == RED_MAX ? fmax(acc, y)
						: acc + y;
		}
		tensor_setf(r, i, op == RED_AVG ? acc / nranks : acc);
		return;
	}
	int64_t acc = tensor_geti(vals[0][x], j);

	for (int k = 1; k < nranks; k++) {
		int64_t y = tensor_geti(vals[k][x], j);

		acc = op == RED_PROD    ? (int64_t)((uint64_t)acc * (uint64_t)y)
			: op == RED_MIN ? (y < acc ? y : acc)
			: op == RED_MAX ? (y > acc ? y : acc)
					: (int64_t)((uint64_t)acc + (uint64_t)y);
	}
	tensor_seti(r, i, ir_wrap_int(op == RED_AVG ? acc / nranks : acc, r->dtype));
}

/* Whether NCCL may give element j of a float reduction over the ranks
 * other bits than reduce_ranks does: NCCL combines the ranks' terms in an
 * order its algorithm picks (a ring's starts at another rank for each
 * chunk), each step rounded to the tensor's type as it travels, where the
 * interpreter rounds once. Over two ranks both round once, but an
 * average, which NCCL takes by scaling each term by 1/n first, is flagged
 * where a half is not exact (a subnormal's last bit). A sum over more
 * gives the same bits in every order when each partial sum is exact: the
 * terms all multiples of 2^lsb, their magnitudes adding up to M 2^lsb,
 * and (2^k - 1) 2^lsb exact in the type, k the bits of M. A NaN decides
 * the result in any order, and so do two infinities of either sign, or
 * one where the finite terms' magnitudes add up to less than the type's
 * largest value (no step overflows). An average or a product over three
 * ranks or more is flagged. */
static bool
ranks_order_matters(int op, Tensor ***vals, uint32_t x, int nranks, int64_t j, DType dt)
{
	Acc acc = { .lsb = INT_MAX };
	bool nan = false, pinf = false, ninf = false;

	if (nranks < 2 || op == RED_MIN || op == RED_MAX)
		return false;
	if (nranks == 2) {
		for (int k = 0; op == RED_AVG && k < 2; k++) {
			double y = tensor_getf(vals[k][x], j), half = y * 0.5;

			if (isfinite(y) && ir_convert_scalar(half, DT_F64, dt) != half)
				return true;
		}
		return false;
	}
	for (int k = 0; k < nranks; k++) {
		double y = tensor_getf(vals[k][x], j);

		nan |= isnan(y);
		pinf |= y == INFINITY;
		ninf |= y == -INFINITY;
		if (isfinite(y))
			acc_add(OP_SUM, &acc, vals[k][x], j);
	}
	if (nan || (pinf && ninf))
		return false;
	if (op != RED_SUM)
		return true;
	if (pinf || ninf)
		return !isfinite(ir_convert_scalar(acc.mag, DT_F64, dt));
	if (acc.mag == 0)
		return false;
	if (acc.mag >= ldexp(1, acc.lsb + 53))
		return true;
	int bits = 64 - __builtin_clzll((uint64_t)ldexp(acc.mag, -acc.lsb));
	double top = ldexp((double)((UINT64_C(1) << bits) - 1), acc.lsb);

	return ir_convert_scalar(top, DT_F64, dt) != top;
}

/* collective `in` over nranks ranks at once (vals[k]: rank k's values); a
 * wait gives its collective's result; a float sum, average or product
 * whose bits NCCL's order may change is counted in order_dep */
static bool
eval_collective(Func *fn, const Instr *in, Tensor ***vals, int nranks, char *err, size_t errlen)
{
	uint32_t x = ir_args(fn, in)[0];
	int64_t ranks = ir_ranks(fn, in), n = tensor_numel(vals[0][x]), m = tensor_numel(vals[0][in->res]);
	size_t bytes = tensor_bytes(vals[0][x]);
	int op = in->nattr == 2 && in->op != OP_BCAST ? (int)ir_attr(fn, in)[0] : RED_SUM;
	int root = in->op == OP_BCAST ? (int)ir_attr(fn, in)[0] : 0;
	bool any = in->op == OP_ALL_REDUCE || in->op == OP_BCAST;

	if (in->op != OP_WAIT && ranks != nranks && !(any && ranks == 0)) {
		snprintf(err, errlen, "%s over %lld ranks, but the interpreter runs %d", ir_ops[in->op].name,
			(long long)ranks, nranks);
		return false;
	}
	if (root >= nranks) {
		snprintf(err, errlen, "broadcast from rank %d, but the interpreter runs %d", root, nranks);
		return false;
	}
	for (int r = 0; r < nranks; r++) {
		Tensor *res = vals[r][in->res];

		if (in->op == OP_WAIT || nranks == 1)
			memcpy(res->data, vals[r][x]->data, tensor_bytes(res));
		else if (in->op == OP_BCAST)
			memcpy(res->data, vals[root][x]->data, tensor_bytes(res));
		else if (in->op == OP_ALL_GATHER)
			for (int k = 0; k < nranks; k++)
				memcpy((char *)res->data + (size_t)k * bytes, vals[k][x]->data, bytes);
		else if (in->op == OP_ALL_REDUCE)
			for (int64_t i = 0; i < n; i++)
				reduce_ranks(op, res, i, vals, x, nranks, i);
		else
			for (int64_t i = 0; i < m; i++)
				reduce_ranks(op, res, i, vals, x, nranks, r * m + i);
	}
	/* each element once: an all-reduce's are every rank's */
	if ((in->op == OP_ALL_REDUCE || in->op == OP_REDUCE_SCATTER) && dt_isfloat(vals[0][x]->dtype))
		for (int64_t i = 0; i < (in->op == OP_ALL_REDUCE ? n : m * nranks); i++)
			if (ranks_order_matters(op, vals, x, nranks, i, vals[0][x]->dtype) && order_dep.n++ == 0)
				order_dep.first = in->res;
	return true;
}

/* ---- externs ---- */

static struct {
	const char *name;
	IrExternFn *fn;
} externs[64];
static int nexterns;

void
ir_register_extern(const char *name, IrExternFn *fn)
{
	for (int i = 0; i < nexterns; i++)
		if (!strcmp(externs[i].name, name)) {
			externs[i].fn = fn;
			return;
		}
	if (nexterns == (int)NELEM(externs))
		die("more than %d extern implementations", (int)NELEM(externs));
	externs[nexterns].name = name;
	externs[nexterns++].fn = fn;
}

/* the call whose result 0 is ins[i]: every result at once, by its host
 * implementation */
static bool
eval_extern(Func *fn, uint32_t i, Tensor **vals, char *err, size_t errlen)
{
	const Instr *in = &fn->ins[i];
	const Extern *e = in->ext;
	Tensor *ins[64], *outs[64];

	for (int k = 0; k < nexterns; k++) {
		if (strcmp(externs[k].name, e->name) != 0)
			continue;
		for (uint32_t j = 0; j < in->nargs; j++)
			ins[j] = vals[ir_args(fn, in)[j]];
		for (uint32_t j = 0; j < e->nres; j++)
			outs[j] = vals[in[j].res];
		if (externs[k].fn(e, ins, (int)in->nargs, outs, (int)e->nres, err, errlen))
			return true;
		if (!strstr(err, e->name)) {
			char msg[512];

			snprintf(msg, sizeof msg, "extern '%s': %s", e->name, err);
			snprintf(err, errlen, "%s", msg);
		}
		return false;
	}
	snprintf(err, errlen,
		"extern '%s': the interpreter has no host implementation of it "
		"(the application supplies it at run time)",
		e->name);
	return false;
}

static bool
check_input(Func *fn, uint32_t p, const Tensor *t, char *err, size_t errlen)
{
	const Value *v = &fn->vals[fn->params[p]];
	char nb[16];

	if (t->dtype != v->dtype || t->rank != v->rank ||
		memcmp(t->dims, ir_dims(fn, fn->params[p]), (size_t)v->rank * sizeof(int64_t)) != 0) {
		snprintf(err, errlen, "input '%s' must be %s with %d dims as the function declares",
			ir_name(fn, fn->params[p], nb), ir_dtypes[v->dtype].name, v->rank);
		return false;
	}
	return true;
}

/* a tensor for value v, named after it; NULL if it cannot be allocated */
static Tensor *
alloc_value(Func *fn, uint32_t v, const char *name)
{
	char nb[16];

	return tensor_new(name ? name : ir_name(fn, v, nb), (DType)fn->vals[v].dtype, fn->vals[v].rank, ir_dims(fn, v));
}

/* how many results instruction in computes: an extern's all at its result
 * 0 (none at the others), a gelu_aux matmul's its matmul_aux's too */
static uint32_t
results(Func *fn, const Instr *in)
{
	if (in->op == OP_EXTERN)
		return ir_attr(fn, in)[0] == 0 ? in->ext->nres : 0;
	if (in->op == OP_MATMUL_AUX)
		return 0;
	return ir_epilogue(fn, in) == EPI_GELU_AUX ? 2 : 1;
}

bool
ir_interpret_ranks(Func *fn, int nranks, Tensor **inputs, Tensor **outs, char *err, size_t errlen)
{
	Tensor ***vals = nranks > 0 ? calloc((size_t)nranks, sizeof *vals) : NULL;
	uint32_t *uses = NULL;
	bool ok = vals != NULL;
	char nb[16];

	order_dep.n = 0;
	for (int r = 0; ok && r < nranks; r++)
		ok = (vals[r] = calloc(fn->nvals + 1, sizeof **vals)) != NULL;
	if (!ok && nranks < 1)
		snprintf(err, errlen, "%d ranks: the interpreter runs one or more", nranks);
	else if (!ok)
		snprintf(err, errlen, "out of memory");
	for (int r = 0; ok && r < nranks; r++)
		for (uint32_t p = 0; ok && p < fn->nparams; p++)
			ok = check_input(fn, p, inputs[r * fn->nparams + p], err, errlen);
	if (ok)
		uses = ir_uses(fn);
	for (int r = 0; ok && r < nranks; r++)
		for (uint32_t p = 0; p < fn->nparams; p++)
			vals[r][fn->params[p]] = inputs[r * fn->nparams + p];
	for (uint32_t i = 0; ok && i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];
		uint32_t nres = results(fn, in);

		if (nres == 0)
			goto computed; /* with an instruction before it */
		for (int r = 0; ok && r < nranks; r++)
			for (uint32_t k = 0; ok && k < nres; k++)
				if (!(vals[r][in[k].res] = alloc_value(fn, in[k].res, NULL))) {
					snprintf(err, errlen, "out of memory for %%%s", ir_name(fn, in[k].res, nb));
					ok = false;
				}
		if (ok && ir_ops[in->op].cls == OC_COLLECTIVE)
			ok = eval_collective(fn, in, vals, nranks, err, errlen);
		for (int r = 0; ok && r < nranks; r++)
			if (ir_ops[in->op].cls != OC_COLLECTIVE)
				ok = in->op == OP_EXTERN ? eval_extern(fn, i, vals[r], err, errlen)
							 : eval(fn, in, vals[r], err, errlen);
		if (!ok)
			break;
	computed:
		/* free operands whose last use this was */
		for (uint32_t j = 0; j < in->nargs; j++) {
			uint32_t a = ir_args(fn, in)[j];

			if (--uses[a] == 0 && fn->vals[a].def != IR_NONE)
				for (int r = 0; r < nranks; r++) {
					tensor_free(vals[r][a]);
					vals[r][a] = NULL;
				}
		}
	}
	for (int r = 0; ok && r < nranks; r++)
		for (uint32_t i = 0; ok && i < fn->nrets; i++) {
			uint32_t v = fn->rets[i];
			Tensor **o = &outs[r * fn->nrets + i];

			if (!(*o = alloc_value(fn, v, ir_retname(fn, i, nb)))) {
				snprintf(err, errlen, "out of memory");
				ok = false;
				break;
			}
			memcpy((*o)->data, vals[r][v]->data, tensor_bytes(*o));
		}
	for (int r = 0; vals && r < nranks; r++) {
		for (uint32_t v = fn->nparams; vals[r] && v < fn->nvals; v++)
			tensor_free(vals[r][v]);
		free(vals[r]);
	}
	free(vals);
	return ok;
}

int64_t
ir_interp_order_dependent(uint32_t *first)
{
	if (order_dep.n && first)
		*first = order_dep.first;
	return order_dep.n;
}

bool
ir_interpret(Func *fn, Tensor **inputs, Tensor **outs, char *err, size_t errlen)
{
	return ir_interpret_ranks(fn, 1, inputs, outs, err, errlen);
}
