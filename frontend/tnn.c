/* tnn.c — torch.nn.functional's gelu, softmax, log_softmax, layer_norm
 * and rms_norm as Thunder prints them without subsymbols: the IR's ops in
 * the order torch's CUDA kernels compute them, in f32 for f16, bf16 and
 * f32 (f64 for f64). gelu is elementwise; the others sum in another order
 * than torch's (docs/design.md, "Reading traces"). */
#include "trace.h"

#include "../common/dims.h"

/* <math.h>'s M_SQRT2, M_2_SQRTPI and M_SQRT1_2, which torch's kernels use */
#define SQRT2      1.41421356237309504880
#define TWO_SQRTPI 1.12837916709551257390
#define SQRT1_2    0.70710678118654752440

/* a float tensor operand in its compute dtype (f32, or f64 for f64);
 * *dt gets the result's dtype */
static uint32_t
float_in(Reader *r, const Expr *e, DType *dt, DType *ct)
{
	uint32_t x = tr_tensor(r, e);

	*dt = tr_vdtype(r, x);
	if (!dt_isfloat(*dt))
		tr_errat(r, e->line, e->col, "%s of %s tensors is not supported", r->callee, ir_dtypes[*dt].thunder);
	*ct = *dt == DT_F64 ? DT_F64 : DT_F32;
	return *dt == *ct ? x : tr_convert(r, x, *ct);
}

/* gelu(input, approximate='none'): x*0.5 * (1 + erf(x*√½)); 'tanh':
 * 0.5*x * (1 + tanh(β * fma(κ, x*x*x, x))), torch's constants in the
 * compute dtype (nvcc contracts x + κ·x³) */
uint32_t
tr_lower_gelu(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "input|a", false }, { "approximate", true } };
	const Expr *a[2];
	bool tanh_ = false;
	uint32_t x, v, h;
	DType dt, ct;

	(void)op;
	tr_bind(r, c, ps, 2, a);
	if (!tr_isnone(a[1])) {
		if (a[1]->kind != E_STR || (strcmp(a[1]->s, "none") && strcmp(a[1]->s, "tanh")))
			tr_errat(r, a[1]->line, a[1]->col, "%s: approximate must be 'none' or 'tanh'", r->callee);
		tanh_ = !strcmp(a[1]->s, "tanh");
	}
	x = float_in(r, a[0], &dt, &ct);
#define K(v) tr_konst(r, ct == DT_F64 ? (double)(v) : (double)(float)(v), ct)
	if (tanh_) {
		v = tr_bin(r, OP_MUL, tr_bin(r, OP_MUL, x, x), x);
		{
			uint32_t args[3] = { K(0.044715), v, x }; /* x + κ·x³, contracted */
			Type t;

			tr_vtype(r->fn, x, &t);
			v = tr_emit(r, OP_FMA, args, 3, NULL, 0, &t);
		}
		v = tr_un(r, OP_TANH, tr_bin(r, OP_MUL, K(SQRT2 * TWO_SQRTPI * 0.5), v));
		h = tr_bin(r, OP_MUL, K(0.5), x);
	} else {
		v = tr_un(r, OP_ERF, tr_bin(r, OP_MUL, x, K(SQRT1_2)));
		h = tr_bin(r, OP_MUL, x, K(0.5));
	}
	v = tr_bin(r, OP_MUL, h, tr_bin(r, OP_ADD, K(1), v));
#undef K
	return dt == ct ? v : tr_convert(r, v, dt);
}

/* softmax(input, dim, dtype=None): exp(x - max) / sum, and log_softmax
 * (op OP_LOG): (x - max) - log(sum), each row's max and sum along dim;
 * dtype= converts the input first */
uint32_t
tr_lower_softmax(Reader *r, const Expr *c, Op op)
{
	static const Param pf[] = { { "input|a|self", false }, { "dim", false }, { "_stacklevel", true },
		{ "dtype", true } }; /* torch.nn.functional's */
	static const Param pt[] = { { "input|a|self", false }, { "dim", false }, { "dtype", true } };
	bool f = !strncmp(r->callee, "torch.nn.functional.", 20);
	const Expr *a[4];
	uint32_t x, d, e, s;
	int64_t dim;
	Ints dims = { 1, { 0 }, { NULL }, NULL };
	DType dt, ct;

	tr_bind(r, c, f ? pf : pt, f ? 4 : 3, a);
	if (!f)
		a[3] = a[2];
	if (tr_isnone(a[1]))
		tr_errat(r, a[1]->line, a[1]->col, "%s without a dim is not supported (torch's implicit dim)",
			r->callee);
	x = tr_tensor(r, a[0]);
	if (!tr_isnone(a[3]) && tr_dtype_arg(r, a[3]) != tr_vdtype(r, x)) {
		DType want = tr_dtype_arg(r, a[3]);

		if (!dt_isfloat(want))
			tr_errat(r, a[3]->line, a[3]->col, "%s to %s is not supported", r->callee,
				ir_dtypes[want].thunder);
		x = tr_convert(r, x, want);
	}
	if (r->fn->vals[x].rank == 0)
		tr_errat(r, a[0]->line, a[0]->col, "%s of a rank-0 tensor is not supported", r->callee);
	dim = tr_norm_dim(r, a[1], tr_int_arg(r, a[1], "dim"), r->fn->vals[x].rank);
	dt = tr_vdtype(r, x);
	if (!dt_isfloat(dt))
		tr_errat(r, a[0]->line, a[0]->col, "%s of %s tensors is not supported", r->callee,
			ir_dtypes[dt].thunder);
	ct = dt == DT_F64 ? DT_F64 : DT_F32;
	if (dt != ct)
		x = tr_convert(r, x, ct);
	dims.v[0] = dim;
	d = tr_bin(r, OP_SUB, x, tr_unreduce(r, tr_reduce(r, OP_AMAX, x, &dims), x, &dims));
	e = tr_un(r, OP_EXP, d);
	s = tr_reduce(r, OP_SUM, e, &dims);
	if (op == OP_LOG)
		x = tr_bin(r, OP_SUB, d, tr_unreduce(r, tr_un(r, OP_LOG, s), x, &dims));
	else
		x = tr_bin(r, OP_DIV, e, tr_unreduce(r, s, x, &dims));
	return dt == ct ? x : tr_convert(r, x, dt);
}

/* the trailing dims of x that normalized_shape names */
static void
normalized(Reader *r, const Expr *e, uint32_t x, Ints *d, int64_t *n)
{
	Ints s;
	Type t;
	char b1[256], b2[256];

	tr_vtype(r->fn, x, &t);
	tr_ints(r, e, "normalized_shape", true, &s);
	*n = 1;
	for (int i = 0; i < s.n; i++)
		if (s.n > t.rank || s.v[i] != t.d[t.rank - s.n + i])
			tr_errat(r, e->line, e->col, "%s: normalized_shape %s is not the last dims of %s", r->callee,
				dims_str(s.v, s.n, ", ", b1, sizeof b1), dims_str(t.d, t.rank, ", ", b2, sizeof b2));
	d->n = s.n;
	for (int i = 0; i < s.n; i++) {
		d->v[i] = t.rank - s.n + i;
		*n *= s.v[i];
	}
}

/* a weight or bias of normalized_shape, in ct, broadcast to x's trailing dims */
static uint32_t
affine(Reader *r, const Expr *e, uint32_t x, const Ints *d, DType ct)
{
	int64_t bd[IR_MAXRANK];
	uint32_t w = tr_tensor(r, e);
	Type t, u;
	char b1[256], b2[256];

	tr_vtype(r->fn, w, &u);
	tr_vtype(r->fn, x, &t);
	if (!dt_isfloat(u.dt) || u.rank != d->n)
		tr_errat(r, e->line, e->col, "%s: expected a float tensor of the normalized shape", r->callee);
	for (int i = 0; i < d->n; i++) {
		bd[i] = d->v[i];
		if (u.d[i] != t.d[d->v[i]])
			tr_errat(r, e->line, e->col, "%s: %s does not match the normalized dims of %s", r->callee,
				dims_str(u.d, u.rank, ", ", b1, sizeof b1), dims_str(t.d, t.rank, ", ", b2, sizeof b2));
	}
	if (u.dt != ct)
		w = tr_convert(r, w, ct);
	t.dt = ct;
	return tr_emit(r, OP_BROADCAST, &w, 1, bd, d->n, &t);
}

/* the mean over d of v (n elements each) */
static uint32_t
mean(Reader *r, uint32_t v, const Ints *d, int64_t n, DType ct)
{
	return tr_bin(r, OP_DIV, tr_reduce(r, OP_SUM, v, d), tr_konst(r, (double)n, ct));
}

/* layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
 * (x - mean) * rsqrt(var + eps) over the normalized dims (var biased),
 * then fma(that, weight, bias); rms_norm(input, normalized_shape,
 * weight=None, eps=None) (op OP_MUL): x * rsqrt(mean(x*x) + eps) * weight,
 * eps None the input dtype's machine epsilon */
uint32_t
tr_lower_norm(Reader *r, const Expr *c, Op op)
{
	static const Param pl[] = { { "input|a", false }, { "normalized_shape", false }, { "weight", true },
		{ "bias", true }, { "eps", true } };
	static const Param pr[] = { { "input|a", false }, { "normalized_shape", false }, { "weight", true },
		{ "eps", true } };
	bool rms = op == OP_MUL;
	const Expr *a[5], *eps;
	uint32_t x, v, dv, w = IR_NONE, b = IR_NONE;
	double e;
	int64_t n;
	DType dt, ct;
	Ints d;

	tr_bind(r, c, rms ? pr : pl, rms ? 4 : 5, a);
	eps = a[rms ? 3 : 4];
	x = float_in(r, a[0], &dt, &ct);
	normalized(r, a[1], x, &d, &n);
	if (tr_isnone(eps))
		e = !rms ? 1e-5 : dt == DT_F64 ? 0x1p-52 : dt == DT_F32 ? 0x1p-23 : dt == DT_BF16 ? 0x1p-7 : 0x1p-10;
	else if (eps->kind == E_FLOAT || eps->kind == E_INT)
		e = eps->kind == E_FLOAT ? eps->f : (double)eps->i;
	else
		tr_errat(r, eps->line, eps->col, "%s: eps must be a number written in the trace", r->callee);
	if (!tr_isnone(a[2]))
		w = affine(r, a[2], x, &d, ct);
	if (!rms && !tr_isnone(a[3]))
		b = affine(r, a[3], x, &d, ct);
	dv = rms ? x : tr_bin(r, OP_SUB, x, tr_unreduce(r, mean(r, x, &d, n, ct), x, &d));
	v = tr_un(r, OP_RSQRT, tr_bin(r, OP_ADD, mean(r, tr_bin(r, OP_MUL, dv, dv), &d, n, ct), tr_konst(r, e, ct)));
	v = tr_bin(r, OP_MUL, dv, tr_unreduce(r, v, x, &d));
	if (w != IR_NONE && b != IR_NONE) {
		uint32_t args[3] = { v, w, b };
		Type t;

		tr_vtype(r->fn, v, &t);
		v = tr_emit(r, OP_FMA, args, 3, NULL, 0, &t);
	} else if (w != IR_NONE) {
		v = tr_bin(r, OP_MUL, v, w);
	} else if (b != IR_NONE) {
		v = tr_bin(r, OP_ADD, v, b);
	}
	return dt == ct ? v : tr_convert(r, v, dt);
}
