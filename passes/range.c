/* range.c — value ranges: an interval per value, through the elementwise ops,
 * so that a float → fp8 conversion whose input provably lies within the
 * format's largest finite value is marked no_fixup (the GPU's saturating
 * conversion then gives PyTorch's bits without the overflow fix-up).
 *
 * Intervals are in double and conservative: [lo, hi] holds every non-NaN
 * value; NaN is tracked apart (a NaN input keeps its own handling in the
 * backend). Anything not understood is [-inf, inf]. */
#include <math.h>

#include "passes.h"

typedef struct {
	double lo, hi;
} Range;

static const Range everything = { -INFINITY, INFINITY };

static Range
span(double a, double b)
{
	return (Range){ fmin(a, b), fmax(a, b) };
}

static Range
join(Range a, Range b)
{
	return (Range){ fmin(a.lo, b.lo), fmax(a.hi, b.hi) };
}

/* products of the corners; NaN corners (0·inf) mean anything */
static Range
mul(Range a, Range b)
{
	double c[4] = { a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi };
	Range r = { INFINITY, -INFINITY };

	for (int i = 0; i < 4; i++) {
		if (isnan(c[i]))
			return everything;
		r.lo = fmin(r.lo, c[i]);
		r.hi = fmax(r.hi, c[i]);
	}
	return r;
}

static Range
range_of(Func *fn, const Instr *in, const Range *r)
{
	const uint32_t *a = ir_args(fn, in);
	Range x = in->nargs ? r[a[0]] : everything, y = in->nargs > 1 ? r[a[1]] : everything;

	switch (in->op) {
	case OP_FULL: return isnan(in->fval) ? everything : span(in->fval, in->fval);
	case OP_CONVERT:
		/* rounding is monotonic; integer targets wrap, so only floats keep the range */
		return dt_isfloat((DType)fn->vals[in->res].dtype) || dt_isfp8((DType)fn->vals[in->res].dtype)
			? x
			: everything;
	case OP_ABS:       return x.lo >= 0 ? x : x.hi <= 0 ? span(-x.hi, -x.lo) : span(0, fmax(-x.lo, x.hi));
	case OP_NEG:       return span(-x.hi, -x.lo);
	case OP_MAXIMUM:   return span(fmax(x.lo, y.lo), fmax(x.hi, y.hi));
	case OP_MINIMUM:   return span(fmin(x.lo, y.lo), fmin(x.hi, y.hi));
	case OP_MUL:       return mul(x, y);
	case OP_ADD:       return span(x.lo + y.lo, x.hi + y.hi);
	case OP_WHERE:     return join(r[a[1]], r[a[2]]);
	case OP_AMAX:
	case OP_AMIN:
	case OP_BROADCAST:
	case OP_RESHAPE:
	case OP_TRANSPOSE:
	case OP_SQUEEZE:
	case OP_SLICE:
	case OP_CLONE:     return x;
	case OP_SIGN:      return span(-1, 1);
	case OP_TANH:
	case OP_SIN:
	case OP_COS:
	case OP_ERF:       return span(-1, 1);
	default:           return everything;
	}
}

/* largest finite magnitude; sums overflow to inf correctly inside a range */
static double
fp8_max(DType t)
{
	return t == DT_F8E4M3FN ? 448.0 : 57344.0;
}

Func *
pass_ranges(Func *fn)
{
	Range *r = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *r);

	for (uint32_t p = 0; p < fn->nparams; p++)
		r[fn->params[p]] = everything;
	for (uint32_t i = 0; i < fn->nins; i++) {
		Instr *in = &fn->ins[i];
		DType t = (DType)fn->vals[in->res].dtype;
		Range x;

		r[in->res] = range_of(fn, in, r);
		if (in->op != OP_CONVERT || !dt_isfp8(t) || dt_isfp8((DType)fn->vals[ir_args(fn, in)[0]].dtype))
			continue;
		x = r[ir_args(fn, in)[0]];
		if (x.lo >= -fp8_max(t) && x.hi <= fp8_max(t))
			in->flags |= IF_NO_FIXUP;
		else
			in->flags &= (uint8_t)~IF_NO_FIXUP;
	}
	return fn;
}
