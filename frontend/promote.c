/* promote.c — torch's elementwise functions as Thunder prints them without
 * subsymbols (torch.mul, torch.add(..., alpha=2), ltorch.exp): the torch
 * executor's ops in an execution trace, Thunder's torch language in an
 * initial one. With subsymbols the reader lowers those instead, as Thunder
 * decomposed the call; without, it does what torch does: the result dtype
 * by torch's type promotion, each tensor converted to it and broadcast to
 * the common shape, then the IR op, which computes f16 and bf16 in f32 as
 * torch's kernels do (docs/design.md, "Reading traces"). The reductions
 * (torch.sum, mean, prod, amax, amin) take torch's result dtypes too; the
 * activations (relu, clamp, sigmoid, silu) and pow follow torch's CUDA
 * kernels. tr_find_torch looks here, then in tshape.c's table (shape and
 * creation functions, tnn.c's composites). The statement's type comment
 * is checked against the result, as for every call. */
#include "trace.h"

#include "../common/dims.h"

/* how an op's result dtype follows from its operands' common dtype (the
 * promotion kinds of Thunder's ltorch, which are torch's) */
enum {
	P_SAME,     /* the common dtype */
	P_FLOAT,    /* the common dtype, ints and bool as the default float (f32) */
	P_ROUND,    /* floor, ceil, round, trunc: ints and bool are already whole */
	P_COMPARE,  /* b8, comparing in the common dtype */
	P_ALPHA,    /* add and sub: the common dtype, other scaled by alpha */
	P_TRUE_DIV, /* div: P_FLOAT; rounding_mode None only */
	P_NOT,      /* logical_not: b8, x == 0 */
	P_WHERE,    /* where(condition, input, other): the common dtype of the two */
	P_SUM,      /* reductions: sum and prod (ints and bool as i64) */
	P_MEAN,     /* mean: floats only */
	P_MAX,      /* amax and amin: the input's dtype */
	P_RELU,     /* activations: relu, the input's dtype */
	P_CLAMP,    /* clamp(input, min, max): the common dtype of the three */
	P_SIGMOID,  /* sigmoid: P_FLOAT */
	P_SILU,     /* silu: floats only */
	P_POW,      /* pow(input, exponent): the common dtype, torch's special exponents */
};

static const struct {
	const char *name; /* after "torch." */
	Op op;
	int nargs, kind;
} ops[] = {
	{ "abs", OP_ABS, 1, P_SAME },
	{ "neg", OP_NEG, 1, P_SAME },
	{ "negative", OP_NEG, 1, P_SAME },
	{ "sign", OP_SIGN, 1, P_SAME },
	{ "bitwise_not", OP_BITWISE_NOT, 1, P_SAME },
	{ "isfinite", OP_ISFINITE, 1, P_SAME },
	{ "signbit", OP_SIGNBIT, 1, P_SAME },
	{ "logical_not", OP_EQ, 1, P_NOT },
	{ "floor", OP_FLOOR, 1, P_ROUND },
	{ "ceil", OP_CEIL, 1, P_ROUND },
	{ "trunc", OP_TRUNC, 1, P_ROUND },
	{ "fix", OP_TRUNC, 1, P_ROUND },
	{ "round", OP_ROUND, 1, P_ROUND },
	{ "reciprocal", OP_RECIPROCAL, 1, P_FLOAT },
	{ "exp", OP_EXP, 1, P_FLOAT },
	{ "exp2", OP_EXP2, 1, P_FLOAT },
	{ "expm1", OP_EXPM1, 1, P_FLOAT },
	{ "log", OP_LOG, 1, P_FLOAT },
	{ "log1p", OP_LOG1P, 1, P_FLOAT },
	{ "log2", OP_LOG2, 1, P_FLOAT },
	{ "log10", OP_LOG10, 1, P_FLOAT },
	{ "sqrt", OP_SQRT, 1, P_FLOAT },
	{ "rsqrt", OP_RSQRT, 1, P_FLOAT },
	{ "tanh", OP_TANH, 1, P_FLOAT },
	{ "erf", OP_ERF, 1, P_FLOAT },
	{ "erfc", OP_ERFC, 1, P_FLOAT },
	{ "erfinv", OP_ERFINV, 1, P_FLOAT },
	{ "lgamma", OP_LGAMMA, 1, P_FLOAT },
	{ "sin", OP_SIN, 1, P_FLOAT },
	{ "cos", OP_COS, 1, P_FLOAT },
	{ "tan", OP_TAN, 1, P_FLOAT },
	{ "asin", OP_ASIN, 1, P_FLOAT },
	{ "acos", OP_ACOS, 1, P_FLOAT },
	{ "atan", OP_ATAN, 1, P_FLOAT },
	{ "sinh", OP_SINH, 1, P_FLOAT },
	{ "cosh", OP_COSH, 1, P_FLOAT },
	{ "asinh", OP_ASINH, 1, P_FLOAT },
	{ "acosh", OP_ACOSH, 1, P_FLOAT },
	{ "atanh", OP_ATANH, 1, P_FLOAT },
	{ "add", OP_ADD, 2, P_ALPHA },
	{ "sub", OP_SUB, 2, P_ALPHA },
	{ "subtract", OP_SUB, 2, P_ALPHA },
	{ "mul", OP_MUL, 2, P_SAME },
	{ "multiply", OP_MUL, 2, P_SAME },
	{ "div", OP_DIV, 2, P_TRUE_DIV },
	{ "divide", OP_DIV, 2, P_TRUE_DIV },
	{ "true_divide", OP_DIV, 2, P_TRUE_DIV },
	{ "maximum", OP_MAXIMUM, 2, P_SAME },
	{ "minimum", OP_MINIMUM, 2, P_SAME },
	{ "fmod", OP_FMOD, 2, P_SAME },
	{ "remainder", OP_REMAINDER, 2, P_SAME },
	{ "atan2", OP_ATAN2, 2, P_FLOAT },
	{ "bitwise_and", OP_BITWISE_AND, 2, P_SAME },
	{ "bitwise_or", OP_BITWISE_OR, 2, P_SAME },
	{ "bitwise_xor", OP_BITWISE_XOR, 2, P_SAME },
	{ "eq", OP_EQ, 2, P_COMPARE },
	{ "ne", OP_NE, 2, P_COMPARE },
	{ "not_equal", OP_NE, 2, P_COMPARE },
	{ "lt", OP_LT, 2, P_COMPARE },
	{ "less", OP_LT, 2, P_COMPARE },
	{ "le", OP_LE, 2, P_COMPARE },
	{ "less_equal", OP_LE, 2, P_COMPARE },
	{ "gt", OP_GT, 2, P_COMPARE },
	{ "greater", OP_GT, 2, P_COMPARE },
	{ "ge", OP_GE, 2, P_COMPARE },
	{ "greater_equal", OP_GE, 2, P_COMPARE },
	{ "where", OP_WHERE, 3, P_WHERE },
	{ "sum", OP_SUM, 1, P_SUM },
	{ "prod", OP_PROD, 1, P_SUM },
	{ "mean", OP_SUM, 1, P_MEAN },
	{ "amax", OP_AMAX, 1, P_MAX },
	{ "amin", OP_AMIN, 1, P_MAX },
	{ "relu", OP_MAXIMUM, 1, P_RELU },
	{ "nn.functional.relu", OP_MAXIMUM, 1, P_RELU },
	{ "clamp", OP_COUNT, 3, P_CLAMP },
	{ "clip", OP_COUNT, 3, P_CLAMP },
	{ "clamp_min", OP_MAXIMUM, 2, P_CLAMP },
	{ "clamp_max", OP_MINIMUM, 2, P_CLAMP },
	{ "sigmoid", OP_DIV, 1, P_SIGMOID },
	{ "nn.functional.sigmoid", OP_DIV, 1, P_SIGMOID },
	{ "nn.functional.silu", OP_DIV, 1, P_SILU },
	{ "pow", OP_POW, 2, P_POW },
};

/* ---- type promotion (c10's promoteTypes and ResultTypeState) ---- */

enum { NO_DTYPE = -1, BAD_DTYPE = -2 };

static bool
floating(int t)
{
	return t >= 0 && (dt_isfloat((DType)t) || dt_isfp8((DType)t));
}

/* torch's promoteTypes: the smallest dtype that holds both; BAD_DTYPE for
 * an fp8 dtype with another, which torch refuses */
static int
promote2(int a, int b)
{
	if (a == NO_DTYPE || a == b)
		return b;
	if (b == NO_DTYPE)
		return a;
	if (a < 0 || b < 0 || dt_isfp8((DType)a) || dt_isfp8((DType)b))
		return BAD_DTYPE;
	if (a == DT_B8 || b == DT_B8)
		return a == DT_B8 ? b : a;
	if (floating(a) != floating(b))
		return floating(a) ? a : b;
	if (floating(a)) /* f16 with bf16 is f32; else the wider */
		return dt_size((DType)a) == dt_size((DType)b) ? DT_F32 : dt_size((DType)a) > dt_size((DType)b) ? a : b;
	if ((a == DT_U8) != (b == DT_U8)) { /* u8 with a signed int: one that holds both */
		int s = a == DT_U8 ? b : a;

		return s == DT_I8 ? DT_I16 : s;
	}
	return dt_size((DType)a) > dt_size((DType)b) ? a : b;
}

/* c10's combine_categories: a higher-priority group's dtype wins unless a
 * lower group is of a higher category (bool < integer < float) */
static int
combine(int higher, int lower)
{
	if (floating(higher) || higher < NO_DTYPE)
		return higher;
	if (higher == DT_B8 || floating(lower))
		return promote2(higher, lower);
	return higher != NO_DTYPE ? higher : lower;
}

/* the dtype a Python number takes among tensors: a float the default dtype
 * (f32), an int i64, a bool b8 */
static int
number_dtype(Reader *r, const Opnd *o)
{
	DType t = o->num ? tr_vdtype(r, o->v) : o->e->kind == E_FLOAT ? DT_F64 : o->e->kind == E_BOOL ? DT_B8 : DT_I64;

	return t == DT_F64 ? DT_F32 : (int)t;
}

/* torch's result_type over the operands: tensors with dims first, then
 * rank-0 tensors, then Python numbers */
static int
result_type(Reader *r, const Opnd *o, int n)
{
	int dim = NO_DTYPE, zero = NO_DTYPE, wrapped = NO_DTYPE;

	for (int i = 0; i < n; i++) {
		if (!o[i].tensor)
			wrapped = promote2(wrapped, number_dtype(r, &o[i]));
		else if (r->fn->vals[o[i].v].rank > 0)
			dim = promote2(dim, tr_vdtype(r, o[i].v));
		else
			zero = promote2(zero, tr_vdtype(r, o[i].v));
	}
	return combine(dim, combine(zero, wrapped));
}

/* ---- broadcasting ---- */

/* the shape all tensor operands broadcast to (dims aligned from the right) */
static void
common_shape(Reader *r, const Opnd *o, int n, Type *t)
{
	char b1[256], b2[256];

	t->rank = 0;
	for (int i = 0; i < n; i++) {
		Type u;

		if (!o[i].tensor)
			continue;
		tr_vtype(r->fn, o[i].v, &u);
		if (u.rank > t->rank) {
			memmove(t->d + (u.rank - t->rank), t->d, (size_t)t->rank * sizeof *t->d);
			for (int k = 0; k < u.rank - t->rank; k++)
				t->d[k] = 1;
			t->rank = u.rank;
		}
		for (int k = 0; k < u.rank; k++) {
			int64_t *d = &t->d[t->rank - u.rank + k];

			if (u.d[k] != *d && u.d[k] != 1 && *d != 1)
				tr_errat(r, o[i].e->line, o[i].e->col, "%s: shape %s does not broadcast with %s",
					r->callee, dims_str(u.d, u.rank, ", ", b1, sizeof b1),
					dims_str(t->d, t->rank, ", ", b2, sizeof b2));
			if (*d == 1)
				*d = u.d[k];
		}
	}
}

/* a tensor operand in dtype dt and, unless it is rank 0 (a scalar to the
 * IR's elementwise ops), in the shape s */
static void
conform(Reader *r, Opnd *o, DType dt, const Type *s)
{
	Type t;
	int64_t bd[IR_MAXRANK];

	if (!o->tensor)
		return;
	if (tr_vdtype(r, o->v) != dt)
		o->v = tr_convert(r, o->v, dt);
	tr_vtype(r->fn, o->v, &t);
	if (t.rank == 0 || tr_same_shape(&t, s))
		return;
	for (int k = 0; k < t.rank; k++)
		bd[k] = s->rank - t.rank + k;
	t.rank = s->rank;
	memcpy(t.d, s->d, sizeof t.d);
	o->v = tr_emit(r, OP_BROADCAST, &o->v, 1, bd, r->fn->vals[o->v].rank, &t);
}

/* ---- the ops ---- */

/* torch raises for these; the IR has no op for them */
static void
check_dtype(Reader *r, Op op, DType t)
{
	TypeClass tc = ir_ops[op].tc;
	bool num = dt_isfloat(t) || dt_isint(t);

	if (dt_isfp8(t))
		tr_errat(r, r->cur->line, r->ccol, "%s of %s tensors: torch has no kernel for it", r->callee,
			ir_dtypes[t].thunder);
	if (tc == TC_FLOAT ? !dt_isfloat(t) : tc == TC_NUM ? !num : !dt_isint(t) && t != DT_B8)
		tr_errat(
			r, r->cur->line, r->ccol, "%s of %s tensors is not supported", r->callee, ir_dtypes[t].thunder);
}

/* alpha of add and sub: a Python number written in the trace (None: 1) */
static double
alpha_of(Reader *r, const Expr *e, DType t)
{
	if (tr_isnone(e))
		return 1;
	if (e->kind != E_INT && e->kind != E_FLOAT && e->kind != E_BOOL)
		tr_errat(r, e->line, e->col, "%s: alpha must be a number written in the trace", r->callee);
	if (e->kind == E_FLOAT && !dt_isfloat(t))
		tr_errat(r, e->line, e->col, "%s: a float alpha with %s tensors (torch refuses it)", r->callee,
			ir_dtypes[t].thunder);
	return tr_scalar_in(r, e, dt_isfloat(t) && t != DT_F64 ? DT_F32 : t);
}

/* an operand in the compute type ct: a tensor converted, a number as
 * torch takes a scalar into its kernel's compute type */
static uint32_t
in_compute(Reader *r, const Opnd *o, DType ct)
{
	if (o->tensor || o->num)
		return tr_vdtype(r, o->v) == ct ? o->v : tr_convert(r, o->v, ct);
	return tr_konst(r, tr_scalar_in(r, o->e, ct), ct);
}

/* a + alpha*b, as torch's add kernel computes it: in float types one fma
 * in the compute type (f32 for f16 and bf16; nvcc contracts a + b*alpha),
 * in integers a product and a sum; sub is add with -alpha */
static uint32_t
add_alpha(Reader *r, Op op, Opnd *o, double alpha, DType t)
{
	DType ct = t == DT_F64 ? DT_F64 : DT_F32;
	uint32_t args[3], v;
	Type rt;

	if (op == OP_SUB)
		alpha = -alpha;
	if (!o[0].tensor && !o[1].tensor)
		tr_errat(r, r->cur->line, r->ccol, "%s with alpha on two numbers is not supported", r->callee);
	if (!dt_isfloat(t)) { /* b*alpha, then a + that */
		if (!o[1].tensor)
			tr_errat(r, o[1].e->line, o[1].e->col, "%s: alpha with an integer number is not supported",
				r->callee);
		args[0] = o[1].v;
		args[1] = tr_konst(r, alpha, t);
		tr_vtype(r->fn, o[1].v, &rt);
		o[1].v = tr_emit(r, OP_MUL, args, 2, NULL, 0, &rt);
		return tr_elementwise(r, OP_ADD, o, 2);
	}
	args[0] = in_compute(r, &o[1], ct); /* fma(b, alpha, a) */
	args[1] = tr_konst(r, alpha, ct);
	args[2] = in_compute(r, &o[0], ct);
	tr_vtype(r->fn, r->fn->vals[args[0]].rank ? args[0] : args[2], &rt);
	rt.dt = ct;
	v = tr_emit(r, OP_FMA, args, 3, NULL, 0, &rt);
	return ct == t ? v : tr_convert(r, v, t);
}

static int
find(const char *name)
{
	if (strncmp(name, "torch.", 6))
		return -1;
	for (size_t i = 0; i < NELEM(ops); i++)
		if (!strcmp(ops[i].name, name + 6))
			return (int)i;
	return -1;
}

/* logical_not(x): x == 0, b8 (bool: not x) */
static uint32_t
logical_not(Reader *r, Opnd *o, DType t)
{
	Expr zero = { 0 };

	if (t == DT_B8)
		return tr_elementwise(r, OP_LOGICAL_NOT, o, 1);
	check_dtype(r, OP_EQ, t);
	zero.kind = E_INT;
	zero.line = o[0].e->line;
	zero.col = o[0].e->col;
	o[1] = (Opnd){ &zero, false, false, 0 };
	return tr_elementwise(r, OP_EQ, o, 2);
}

static uint32_t
lower_torch_ew(Reader *r, const Expr *c, Op unused)
{
	static const Param p1[] = { { "input|a", false } };
	static const Param p2[] = { { "input|a", false }, { "other|b", false } };
	static const Param padd[] = { { "input|a", false }, { "other|b", false }, { "alpha", true } };
	static const Param pdiv[] = { { "input|a", false }, { "other|b", false }, { "rounding_mode", true } };
	static const Param p3[] = { { "condition|pred", false }, { "input|a", false }, { "other|b", false } };
	int k = find(r->callee), kind = ops[k].kind, n = ops[k].nargs, first = kind == P_WHERE, t;
	bool third = kind == P_ALPHA || kind == P_TRUE_DIV;
	Op op = ops[k].op;
	const Expr *a[3];
	Opnd o[3];
	Type s;
	DType ct;

	(void)unused;
	tr_bind(r, c, n == 1 ? p1 : n == 3 ? p3 : kind == P_ALPHA ? padd : third ? pdiv : p2, n + third, a);
	if (kind == P_TRUE_DIV && !tr_isnone(a[2]))
		tr_errat(r, a[2]->line, a[2]->col, "%s with a rounding_mode is not supported yet", r->callee);
	for (int i = 0; i < n; i++)
		o[i] = tr_operand(r, a[i]);
	if (first && (!o[0].tensor || tr_vdtype(r, o[0].v) != DT_B8))
		tr_errat(r, a[0]->line, a[0]->col, "%s: the condition must be a bool tensor", r->callee);
	t = result_type(r, o + first, n - first);
	if (t == BAD_DTYPE)
		tr_errat(r, r->cur->line, r->ccol, "%s: torch does not promote a float8 dtype with another", r->callee);
	if (t == NO_DTYPE) /* numbers alone: Python's arithmetic */
		return tr_elementwise(r, op, o, n);
	ct = (DType)t;
	if ((kind == P_FLOAT || kind == P_TRUE_DIV) && !dt_isfloat(ct) && !dt_isfp8(ct))
		ct = DT_F32;
	if (kind == P_COMPARE && ct == DT_B8) /* bools compare as the bytes 0 and 1 */
		ct = DT_U8;
	common_shape(r, o, n, &s);
	for (int i = first; i < n; i++)
		conform(r, &o[i], ct, &s);
	if (first) {
		conform(r, &o[0], DT_B8, &s);
		if (!o[1].tensor && !o[2].tensor) /* where(c, 1.0, 0.0): the numbers in the result's dtype */
			for (int i = 1; i < 3; i++)
				o[i] = (Opnd){ o[i].e, true, false, in_compute(r, &o[i], ct) };
	}
	switch (kind) {
	case P_ROUND:
		if (!dt_isfloat(ct) && !dt_isfp8(ct))
			return o[0].v;
		break;
	case P_NOT:   return logical_not(r, o, ct);
	case P_ALPHA: {
		double alpha;

		if (ct == DT_B8)
			tr_errat(r, r->cur->line, r->ccol, "%s of bool tensors is not supported", r->callee);
		check_dtype(r, op, ct);
		if ((alpha = alpha_of(r, a[2], ct)) != 1)
			return add_alpha(r, op, o, alpha, ct);
		break;
	}
	default: break;
	}
	if (kind != P_WHERE)
		check_dtype(r, op, ct);
	return tr_elementwise(r, op, o, n);
}

/* ---- reductions ---- */

/* torch.sum(input, dim=None, keepdim=False, *, dtype=None), and prod, mean,
 * amax and amin (no dtype): no dim (or an empty one) reduces every dim. sum
 * and prod of ints and bools are i64; mean is sum times the factor torch's
 * kernel uses, (float)outputs / inputs, in f32 (f64 for f64) */
static uint32_t
lower_torch_reduce(Reader *r, const Expr *c, Op unused)
{
	static const Param ps[] = { { "input|a", false }, { "dim", true }, { "keepdim", true }, { "dtype", true } };
	int k = find(r->callee), kind = ops[k].kind;
	const Expr *a[4];
	uint32_t x, v;
	Ints d;
	Type t, kept;
	DType dt, ct;
	int64_t n = 1;

	(void)unused;
	tr_bind(r, c, ps, kind == P_MAX ? 3 : 4, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (tr_isnone(a[1]) || ((a[1]->kind == E_TUPLE || a[1]->kind == E_LIST) && a[1]->n == 0)) {
		d.n = t.rank;
		for (int i = 0; i < t.rank; i++)
			d.v[i] = i;
	} else {
		tr_dims_arg(r, a[1], t.rank, &d);
	}
	dt = kind != P_MAX && !tr_isnone(a[3])                       ? tr_dtype_arg(r, a[3])
		: kind == P_SUM && (dt_isint(t.dt) || t.dt == DT_B8) ? DT_I64
								     : t.dt;
	if (dt_isfp8(dt) || dt == DT_B8)
		tr_errat(r, r->cur->line, r->ccol, "%s of %s tensors is not supported", r->callee,
			ir_dtypes[dt].thunder);
	if (kind == P_MEAN && !dt_isfloat(dt))
		tr_errat(r, r->cur->line, r->ccol, "%s of %s tensors: torch takes floats only (give dtype=)", r->callee,
			ir_dtypes[dt].thunder);
	ct = kind == P_MEAN && dt != DT_F64 ? DT_F32 : dt;
	x = tr_vdtype(r, x) == ct ? x : tr_convert(r, x, ct);
	kept = t;
	for (int i = 0; i < d.n; i++) {
		n *= t.d[d.v[i]];
		kept.d[d.v[i]] = 1;
	}
	tr_drop_dims(&t, &d);
	t.dt = ct;
	v = tr_reduce(r, ops[k].op, x, &d);
	if (kind == P_MEAN) {
		uint32_t args[2] = { v, 0 };
		int64_t outs = 1;
		double f;

		for (int i = 0; i < t.rank; i++)
			outs *= t.d[i];
		f = ct == DT_F64 ? (double)outs / (double)(outs * n) : (double)((float)outs / (float)(outs * n));

		args[1] = tr_konst(r, f, ct);
		v = tr_emit(r, OP_MUL, args, 2, NULL, 0, &t);
		if (ct != dt)
			v = tr_convert(r, v, dt);
	}
	if (!tr_bool_arg(r, a[2], false))
		return v;
	kept.dt = dt;
	return tr_emit(r, OP_RESHAPE, &v, 1, NULL, 0, &kept);
}

/* ---- activations ---- */

/* sigmoid(x) = 1 / (1 + exp(-x)), silu(x) = x / (1 + exp(-x)): in f32 (f64
 * for f64), as torch's kernels compute them */
static uint32_t
logistic(Reader *r, uint32_t x, bool silu)
{
	DType t = tr_vdtype(r, x), ct = t == DT_F64 ? DT_F64 : DT_F32;
	uint32_t xc = t == ct ? x : tr_convert(r, x, ct), one = tr_konst(r, 1, ct), e;

	e = tr_un(r, OP_EXP, tr_un(r, OP_NEG, xc));
	e = tr_bin(r, OP_ADD, one, e);
	e = tr_bin(r, OP_DIV, silu ? xc : one, e);
	return ct == t ? e : tr_convert(r, e, t);
}

/* relu(input) (clamp_min at 0), clamp(input, min=None, max=None) and
 * clamp_min, clamp_max: maximum and minimum, which propagate a NaN input,
 * in the common dtype (a bound written as a number rounded to it first, as
 * torch does); sigmoid and silu (torch.nn.functional's inplace=False) */
static uint32_t
lower_torch_act(Reader *r, const Expr *c, Op unused)
{
	static const Param p1[] = { { "input|a", false }, { "inplace", true } };
	static const Param pc[] = { { "input|a", false }, { "min", true }, { "max", true } };
	static const Param pmin[] = { { "input|a", false }, { "min", false } };
	static const Param pmax[] = { { "input|a", false }, { "max", false } };
	int k = find(r->callee), kind = ops[k].kind, n = ops[k].nargs, nb = 1, t;
	const Param *ps = kind != P_CLAMP ? p1 : n == 3 ? pc : ops[k].op == OP_MAXIMUM ? pmin : pmax;
	const Expr *a[3];
	Opnd o[3];
	Op bound[3];
	uint32_t v;
	Type s;
	DType ct;

	(void)unused;
	tr_bind(r, c, ps, kind != P_CLAMP ? 2 : n, a);
	if (kind != P_CLAMP && tr_bool_arg(r, a[1], false))
		tr_errat(r, a[1]->line, a[1]->col, "%s with inplace=True is not supported", r->callee);
	if (kind == P_CLAMP && n == 3 && tr_isnone(a[1]) && tr_isnone(a[2]))
		tr_errat(r, r->cur->line, r->ccol, "%s: at least one of min and max must be given", r->callee);
	n = kind == P_CLAMP ? n : 1;
	for (int i = 0, m = 0; i < n; i++) { /* o: the input, then the bounds given */
		if (tr_isnone(a[i]))
			continue;
		o[m] = tr_operand(r, a[i]);
		if (m > 0 && !o[m].tensor && !o[m].num && a[i]->kind == E_FLOAT && a[i]->f != a[i]->f)
			tr_errat(r, a[i]->line, a[i]->col, "%s: a NaN bound is not supported", r->callee);
		bound[m++] = n == 2 ? ops[k].op : i == 1 ? OP_MAXIMUM : OP_MINIMUM;
		nb = m;
	}
	if (!o[0].tensor)
		tr_errat(r, a[0]->line, a[0]->col, "%s: the input must be a tensor", r->callee);
	t = result_type(r, o, nb);
	if (t == BAD_DTYPE)
		tr_errat(r, r->cur->line, r->ccol, "%s: torch does not promote a float8 dtype with another", r->callee);
	ct = (DType)t;
	if (kind == P_SIGMOID && !dt_isfloat(ct) && !dt_isfp8(ct))
		ct = DT_F32;
	if (dt_isfp8(ct) || ct == DT_B8 || (kind == P_SILU && !dt_isfloat(ct)))
		tr_errat(r, r->cur->line, r->ccol, "%s of %s tensors is not supported", r->callee,
			ir_dtypes[ct].thunder);
	common_shape(r, o, nb, &s);
	for (int i = 0; i < nb; i++) {
		if (!o[i].tensor) /* a number: its value in ct */
			o[i] = (Opnd){ o[i].e, true, false, in_compute(r, &o[i], ct) };
		conform(r, &o[i], ct, &s);
	}
	if (kind == P_SIGMOID || kind == P_SILU)
		return logistic(r, o[0].v, kind == P_SILU);
	if (kind == P_RELU) {
		o[1] = (Opnd){ o[0].e, true, false, tr_konst(r, 0, ct) };
		return tr_elementwise(r, OP_MAXIMUM, o, 2);
	}
	v = o[0].v;
	for (int i = 1; i < nb; i++) {
		Opnd x[2] = { { o[0].e, true, false, v }, o[i] };

		v = tr_elementwise(r, bound[i], x, 2);
	}
	return v;
}

/* ---- pow ---- */

static uint32_t
square(Reader *r, uint32_t x)
{
	Opnd o[2] = { { NULL, true, false, x }, { NULL, true, false, x } };

	return tr_elementwise(r, OP_MUL, o, 2);
}

/* pow(input, exponent) as torch's CUDA kernels compute it. A tensor to a
 * number (in the dtype of the two, the base converted): exponent 0 is 1
 * and 1 the base; 0.5, -0.5 and -1 are sqrt, rsqrt and reciprocal; else
 * the exponent rounded to the dtype decides: 2 is x*x, 3 (x*x)*x, -2
 * 1/(x*x), each product rounded, and any other pow(x, e) (floats only:
 * torch's integer powers by squaring are not among the IR's ops). Two
 * tensors, or a number to a tensor: pow in their dtype (floats only). */
static uint32_t
lower_torch_pow(Reader *r, const Expr *c, Op unused)
{
	static const Param ps[] = { { "input|self|a", false }, { "exponent|b", false } };
	const Expr *a[2];
	Opnd o[2];
	Type s;
	DType ct;
	double e, ex;
	int t;

	(void)unused;
	tr_bind(r, c, ps, 2, a);
	o[0] = tr_operand(r, a[0]);
	o[1] = tr_operand(r, a[1]);
	if (!o[0].tensor && !o[1].tensor)
		tr_errat(r, r->cur->line, r->ccol, "%s of two numbers is not supported", r->callee);
	t = result_type(r, o, 2);
	if (t == BAD_DTYPE || dt_isfp8((DType)t) || t == DT_B8)
		tr_errat(r, r->cur->line, r->ccol, "%s of these dtypes is not supported", r->callee);
	ct = (DType)t;
	if (o[1].num && o[0].tensor)
		tr_errat(r, a[1]->line, a[1]->col,
			"%s with an exponent that is an input of the program is not supported: torch picks its kernel by "
			"the exponent's value",
			r->callee);
	common_shape(r, o, 2, &s);
	if (o[1].tensor || !o[0].tensor) { /* pow elementwise */
		if (!dt_isfloat(ct))
			tr_errat(r, r->cur->line, r->ccol, "%s of %s tensors is not supported (integer powers)",
				r->callee, ir_dtypes[ct].thunder);
		for (int i = 0; i < 2; i++) {
			if (!o[i].tensor)
				o[i] = (Opnd){ o[i].e, true, false, in_compute(r, &o[i], ct) };
			conform(r, &o[i], ct, &s);
		}
		return tr_elementwise(r, OP_POW, o, 2);
	}
	e = a[1]->kind == E_FLOAT ? a[1]->f : (double)a[1]->i;
	if (!dt_isfloat(tr_vdtype(r, o[0].v)) && a[1]->kind != E_FLOAT && e < 0)
		tr_errat(r, a[1]->line, a[1]->col, "%s: integers to negative integer powers are not allowed (torch)",
			r->callee);
	conform(r, &o[0], ct, &s);
	if (e == 0)
		return ir_full(r->fn, 1, ct, s.rank, s.d);
	if (e == 1)
		return o[0].v;
	if (dt_isfloat(ct) && (e == 0.5 || e == -0.5 || e == -1)) {
		Type t1;

		tr_vtype(r->fn, o[0].v, &t1);
		return tr_emit(r, e == 0.5 ? OP_SQRT : e == -0.5 ? OP_RSQRT : OP_RECIPROCAL, &o[0].v, 1, NULL, 0, &t1);
	}
	ex = dt_isfloat(ct) ? tr_scalar_in(r, a[1], ct) : (double)(int64_t)e;
	if (ex == 2)
		return square(r, o[0].v);
	if (ex == 3) {
		Opnd m[2] = { { NULL, true, false, square(r, o[0].v) }, o[0] };

		return tr_elementwise(r, OP_MUL, m, 2);
	}
	if (!dt_isfloat(ct))
		tr_errat(r, a[1]->line, a[1]->col,
			"%s of %s tensors to a power other than 0, 1, 2 or 3 is not supported", r->callee,
			ir_dtypes[ct].thunder);
	o[1] = (Opnd){ a[1], true, false, tr_konst(r, ex == -2 ? 1 : ex, ct) };
	if (ex != -2)
		return tr_elementwise(r, OP_POW, o, 2);
	o[0] = (Opnd){ o[0].e, true, false, square(r, o[0].v) }; /* 1.0 / (x*x) */
	return tr_elementwise(r, OP_DIV, (Opnd[2]){ o[1], o[0] }, 2);
}

/* the lowering of torch.NAME (or Tensor.NAME) printed without subsymbols
 * as torch computes it: this file's elementwise functions, reductions,
 * activations and pow, then tshape.c's and tnn.c's; NULL if none knows it */
Lower
tr_find_torch(const char *name, Op *op)
{
	int k = find(name);

	*op = OP_COUNT;
	if (k < 0)
		return tr_find_torch_shape(name, op);
	return ops[k].kind == P_POW     ? lower_torch_pow
		: ops[k].kind >= P_RELU ? lower_torch_act
		: ops[k].kind >= P_SUM  ? lower_torch_reduce
					: lower_torch_ew;
}
