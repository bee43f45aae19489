/* compose.c — prims that lower to several IR ops: var, var_mean and std,
 * argmax, argmin and topk, index_copy, copy_with_setitem, unfold,
 * batch_norm, embedding and its backward. Reductions compute in f32 for
 * f16 and bf16 inputs (f64 stays f64), as PyTorch's kernels accumulate;
 * their sums match PyTorch within a tolerance, not bit for bit, since the
 * order of a sum is the kernel's (docs/ir.md, "Numerics"); max, min,
 * indices and copies are exact. */
#include <math.h>

#include "trace.h"

/* ---- building blocks ---- */

uint32_t
tr_un(Reader *r, Op op, uint32_t x)
{
	Type t;

	tr_vtype(r->fn, x, &t);
	return tr_emit(r, op, &x, 1, NULL, 0, &t);
}

/* a binary op on x and y of one dtype; the result has the shape of the
 * operand that is not rank 0 */
uint32_t
tr_bin(Reader *r, Op op, uint32_t x, uint32_t y)
{
	uint32_t args[2] = { x, y };
	Type t;

	tr_vtype(r->fn, r->fn->vals[x].rank ? x : y, &t);
	if (ir_ops[op].cls == OC_COMPARE)
		t.dt = DT_B8;
	return tr_emit(r, op, args, 2, NULL, 0, &t);
}

static uint32_t
where(Reader *r, uint32_t c, uint32_t x, uint32_t y)
{
	uint32_t args[3] = { c, x, y };
	Type t;

	tr_vtype(r->fn, r->fn->vals[x].rank ? x : y, &t);
	if (t.rank == 0)
		tr_vtype(r->fn, c, &t), t.dt = tr_vdtype(r, x);
	return tr_emit(r, OP_WHERE, args, 3, NULL, 0, &t);
}

static uint32_t
cvt(Reader *r, uint32_t x, DType t)
{
	return tr_vdtype(r, x) == t ? x : tr_convert(r, x, t);
}

/* the reduction op of x over the dims in d (sorted): x's type without them */
uint32_t
tr_reduce(Reader *r, Op op, uint32_t x, const Ints *d)
{
	Type t;

	tr_vtype(r->fn, x, &t);
	tr_drop_dims(&t, d);
	return tr_emit(r, op, &x, 1, d->v, d->n, &t);
}

static uint32_t
sum(Reader *r, uint32_t x, const Ints *d)
{
	return tr_reduce(r, OP_SUM, x, d);
}

/* v (x's shape without the dims in d) broadcast back to x's shape */
uint32_t
tr_unreduce(Reader *r, uint32_t v, uint32_t like, const Ints *d)
{
	int64_t keep[IR_MAXRANK];
	int n = 0;
	Type t;

	tr_vtype(r->fn, like, &t);
	t.dt = tr_vdtype(r, v);
	for (int i = 0, j = 0; i < t.rank; i++) {
		if (j < d->n && d->v[j] == i)
			j++;
		else
			keep[n++] = i;
	}
	return tr_emit(r, OP_BROADCAST, &v, 1, keep, n, &t);
}

/* v broadcast to the shape dims, its dims going to bd */
static uint32_t
bcast(Reader *r, uint32_t v, int rank, const int64_t *dims, const int64_t *bd)
{
	Type t;

	t.dt = tr_vdtype(r, v);
	t.rank = rank;
	memcpy(t.d, dims, (size_t)rank * sizeof *dims);
	return tr_emit(r, OP_BROADCAST, &v, 1, bd, r->fn->vals[v].rank, &t);
}

static uint32_t
reshape(Reader *r, uint32_t x, int rank, const int64_t *dims)
{
	Type t;

	t.dt = tr_vdtype(r, x);
	t.rank = rank;
	memcpy(t.d, dims, (size_t)rank * sizeof *dims);
	return tr_emit(r, OP_RESHAPE, &x, 1, NULL, 0, &t);
}

/* the dtype reductions of t compute in */
static DType
acc_dtype(DType t)
{
	return t == DT_F64 ? DT_F64 : DT_F32;
}

static int64_t
count(Reader *r, uint32_t x, const Ints *d)
{
	int64_t n = 1;

	for (int i = 0; i < d->n; i++)
		n *= ir_dims(r->fn, x)[d->v[i]];
	return n;
}

static void
results(Reader *r, int n, const uint32_t *v)
{
	r->nmulti = n;
	memcpy(r->multi, v, (size_t)n * sizeof *v);
}

/* the indices 0 .. n-1 along dim of the shape (rank, dims), as i64 */
static uint32_t
dim_iota(Reader *r, int64_t n, int rank, const int64_t *dims, int64_t dim)
{
	int64_t io[2] = { 0, 1 };
	Type t = { .dt = DT_I64, .rank = 1, .d = { n } };

	return bcast(r, tr_emit(r, OP_IOTA, NULL, 0, io, 2, &t), rank, dims, &dim);
}

/* v's dims in the order perm */
static uint32_t
transpose(Reader *r, uint32_t v, const int64_t *perm)
{
	Type t, pt;

	tr_vtype(r->fn, v, &t);
	pt = t;
	for (int d = 0; d < t.rank; d++)
		pt.d[d] = t.d[perm[d]];
	return tr_emit(r, OP_TRANSPOSE, &v, 1, perm, t.rank, &pt);
}

/* along eq's last dim, the last index where eq holds, -1 where none does */
static uint32_t
last_match(Reader *r, uint32_t eq)
{
	int64_t last;
	Type t;

	tr_vtype(r->fn, eq, &t);
	last = t.rank - 1;
	eq = where(r, eq, dim_iota(r, t.d[last], t.rank, t.d, last), tr_konst(r, -1, DT_I64));
	t.rank--;
	t.dt = DT_I64;
	return tr_emit(r, OP_AMAX, &eq, 1, &last, 1, &t);
}

/* the torch executor's spelling (torch.X), whose arguments are torch's */
static bool
torch_spelling(const Reader *r)
{
	return strncmp(r->callee, "torch.", 6) == 0;
}

/* ---- var, var_mean, std ---- */

/* the mean of x (in its accumulation dtype) over d and the variance with
 * Bessel's correction c: sum((x - mean)^2) / (n - c) */
static void
moments(Reader *r, uint32_t x, const Ints *d, double corr, uint32_t *mean, uint32_t *var)
{
	DType ct = acc_dtype(tr_vdtype(r, x));
	int64_t n = count(r, x, d);
	uint32_t xc = cvt(r, x, ct), m, dev;

	m = tr_bin(r, OP_DIV, sum(r, xc, d), tr_konst(r, (double)n, ct));
	dev = tr_bin(r, OP_SUB, xc, tr_unreduce(r, m, xc, d));
	*var = tr_bin(r, OP_DIV, sum(r, tr_bin(r, OP_MUL, dev, dev), d), tr_konst(r, (double)n - corr, ct));
	*mean = m;
}

static const Param P_VAR[] = { { "a", false }, { "dims", false }, { "correction", false } };

static void
var_args(Reader *r, const Expr *c, uint32_t *x, Ints *d, double *corr)
{
	const Expr *a[3];

	tr_bind(r, c, P_VAR, 3, a);
	*x = tr_tensor(r, a[0]);
	if (!dt_isfloat(tr_vdtype(r, *x)))
		tr_errat(r, a[0]->line, a[0]->col, "%s: expected a float tensor", r->callee);
	tr_dims_arg(r, a[1], r->fn->vals[*x].rank, d);
	if (a[2]->kind != E_INT && a[2]->kind != E_FLOAT)
		tr_errat(r, a[2]->line, a[2]->col, "%s: correction must be a number", r->callee);
	*corr = a[2]->kind == E_INT ? (double)a[2]->i : a[2]->f;
}

/* var_mean(a, dims, *, correction) -> (var, mean) */
uint32_t
tr_lower_var_mean(Reader *r, const Expr *c, Op op)
{
	uint32_t x, m, v, res[2];
	double corr;
	Ints d;

	(void)op;
	var_args(r, c, &x, &d, &corr);
	moments(r, x, &d, corr, &m, &v);
	res[0] = cvt(r, v, tr_vdtype(r, x));
	res[1] = cvt(r, m, tr_vdtype(r, x));
	results(r, 2, res);
	return res[0];
}

/* var(a, dims, *, correction); std: its square root */
uint32_t
tr_lower_var(Reader *r, const Expr *c, Op op)
{
	uint32_t x, m, v;
	double corr;
	Ints d;

	var_args(r, c, &x, &d, &corr);
	moments(r, x, &d, corr, &m, &v);
	if (op == OP_SQRT)
		v = tr_un(r, OP_SQRT, v);
	return cvt(r, v, tr_vdtype(r, x));
}

/* ---- argmax, argmin ---- */

static uint32_t topk_round(Reader *r, uint32_t x, uint32_t alive, uint32_t ix, const Ints *d, bool largest);

/* argmax(a, dim), argmin(a, dim) (op: OP_AMAX, OP_AMIN): the first index
 * along dim (of a flattened when dim is None) where a has its max (min), as
 * an i64. As in PyTorch a NaN is both the max and the min, so a row with
 * NaNs gives its first NaN's index. Exact: topk's first round (a NaN above
 * every number), argmin's on the order reversed — -x, which keeps NaN a
 * NaN, and for integers ~x, which cannot overflow. */
uint32_t
tr_lower_argmax(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "dim", false } };
	const Expr *a[2];
	uint32_t x;
	int64_t n;
	Type t;
	Ints d = { 1, { 0 }, { NULL }, NULL };

	tr_bind(r, c, ps, 2, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (t.dt == DT_B8 || dt_isfp8(t.dt))
		tr_errat(r, a[0]->line, a[0]->col, "%s: expected a float or integer tensor, not %s", r->callee,
			ir_dtypes[t.dt].thunder);
	if (!tr_isnone(a[1]))
		d.v[0] = tr_norm_dim(r, a[1], tr_int_arg(r, a[1], "dim"), t.rank ? t.rank : 1);
	if (t.rank == 0) /* a number's only index */
		return tr_konst(r, 0, DT_I64);
	if (tr_isnone(a[1])) {
		n = ir_numel(r->fn, x);
		x = reshape(r, x, 1, &n);
		tr_vtype(r->fn, x, &t);
	}
	if (t.d[d.v[0]] == 0)
		tr_errat(r, c->line, r->ccol, "%s: dim %lld has no elements to take the %s of", r->callee,
			(long long)d.v[0], op == OP_AMAX ? "max" : "min");
	if (op == OP_AMIN)
		x = tr_un(r, dt_isfloat(t.dt) ? OP_NEG : OP_BITWISE_NOT, x);
	return topk_round(r, x, IR_NONE, IR_NONE, &d, true);
}

/* ---- topk ---- */

/* One round of topk along the dims d (one dim): the index of the first
 * alive element that comes first in topk's order — the largest, or for
 * !largest the smallest — NaN above every number either way, as PyTorch
 * orders (so a NaN comes first, or for !largest once no number is left).
 * alive: IR_NONE for every element; ix: the dim's indices broadcast to x's
 * shape (IR_NONE: made here). The result has x's shape without the dim. */
static uint32_t
topk_round(Reader *r, uint32_t x, uint32_t alive, uint32_t ix, const Ints *d, bool largest)
{
	DType t = tr_vdtype(r, x);
	bool f = dt_isfloat(t);
	uint32_t live = alive, nan = IR_NONE, m = x, hit, cand;
	Type mt, xt;

	tr_vtype(r->fn, x, &xt);
	mt = xt;
	tr_drop_dims(&mt, d);
	if (f && !largest) {
		nan = tr_bin(r, OP_NE, x, x);
		live = tr_un(r, OP_LOGICAL_NOT, nan);
		if (alive != IR_NONE)
			live = tr_bin(r, OP_BITWISE_AND, alive, live);
	}
	/* dead elements (and, for !largest, NaNs) below (above) every live one */
	if (live != IR_NONE)
		m = where(r, live, x,
			f ? tr_konst(r, largest ? -INFINITY : INFINITY, t)
			  : tr_konst(r, t == DT_U8 ? 0 : -ldexp(1, ir_dtypes[t].bits - 1), t));
	m = tr_emit(r, largest ? OP_AMAX : OP_AMIN, &m, 1, d->v, d->n, &mt);
	hit = tr_bin(r, OP_EQ, x, tr_unreduce(r, m, x, d));
	if (f && largest)
		hit = tr_bin(r, OP_BITWISE_OR, hit, nan = tr_bin(r, OP_NE, x, x));
	if (live != IR_NONE)
		hit = tr_bin(r, OP_BITWISE_AND, hit, live);
	if (f && !largest) { /* no number left alive: the alive NaNs */
		Type it = mt;
		uint32_t any;

		it.dt = DT_I32;
		any = cvt(r, live, DT_I32);
		any = tr_emit(r, OP_AMAX, &any, 1, d->v, d->n, &it);
		any = tr_unreduce(r, tr_bin(r, OP_NE, any, tr_konst(r, 0, DT_I32)), x, d);
		hit = where(r, any, hit, alive == IR_NONE ? nan : tr_bin(r, OP_BITWISE_AND, alive, nan));
	}
	if (ix == IR_NONE)
		ix = dim_iota(r, xt.d[d->v[0]], xt.rank, xt.d, d->v[0]);
	cand = where(r, hit, ix, tr_konst(r, (double)xt.d[d->v[0]], DT_I64));
	mt.dt = DT_I64;
	return tr_emit(r, OP_AMIN, &cand, 1, d->v, d->n, &mt);
}

/* The first k elements of a along dim (None: the last) in topk's order,
 * values and indices (res): k rounds, each taking the first alive element
 * (topk_round) and its value, which then leaves. Exact. PyTorch leaves the
 * order of equal elements unspecified for topk (and of all of them when not
 * sorted): here the first index first, always sorted — which is also
 * torch.sort's stable order. The smallest integers are the largest of their
 * complements (~x: exact, no overflow). Each round is two passes over the
 * dim: right for a router's k of a few, slow for a sampler's k of 50.
 * ek: k's expression, NULL for every element (a sort). */
static void
select_first(Reader *r, const Expr *ea, const Expr *ek, const Expr *ed, bool largest, uint32_t res[2])
{
	uint32_t x, key, ix, alive, idx, vals[64], idxs[64];
	int64_t k, n, dim;
	Type t, kt;
	Ints d = { 1, { 0 }, { NULL }, NULL };

	x = tr_tensor(r, ea);
	tr_vtype(r->fn, x, &t);
	if (t.rank == 0 || t.dt == DT_B8 || dt_isfp8(t.dt))
		tr_errat(r, ea->line, ea->col, "%s: expected a float or integer tensor with at least one dim",
			r->callee);
	dim = tr_isnone(ed) ? t.rank - 1 : tr_norm_dim(r, ed, tr_int_arg(r, ed, "dim"), t.rank);
	n = t.d[dim];
	k = ek ? tr_int_arg(r, ek, "k") : n;
	if (ek && (k < 1 || k > n || k > 64))
		tr_errat(r, ek->line, ek->col, "%s: k = %lld: fp8cc takes 1 to %lld (the dim's size, at most 64)",
			r->callee, (long long)k, (long long)(n < 64 ? n : 64));
	if (!ek && (n < 1 || n > 64))
		tr_errat(r, ea->line, ea->col,
			"%s: a dim of %lld elements: fp8cc sorts dims of 1 to 64 elements (a round of a max each)",
			r->callee, (long long)n);
	d.v[0] = dim;
	key = x;
	if (!largest && !dt_isfloat(t.dt)) {
		key = tr_un(r, OP_BITWISE_NOT, x);
		largest = true;
	}
	ix = dim_iota(r, n, t.rank, t.d, dim);
	alive = bcast(r, tr_konst(r, 1, DT_B8), t.rank, t.d, NULL);
	kt = t;
	kt.d[dim] = 1;
	for (int64_t i = 0; i < k; i++) {
		uint32_t args[2];

		idx = topk_round(r, key, alive, ix, &d, largest);
		kt.dt = DT_I64;
		idxs[i] = reshape(r, idx, kt.rank, kt.d);
		args[0] = x;
		args[1] = idxs[i];
		kt.dt = t.dt;
		vals[i] = tr_emit(r, OP_GATHER, args, 2, &dim, 1, &kt);
		if (i + 1 < k)
			alive = tr_bin(r, OP_BITWISE_AND, alive, tr_bin(r, OP_NE, ix, tr_unreduce(r, idx, x, &d)));
	}
	kt.d[dim] = k;
	res[0] = k == 1 ? vals[0] : tr_emit(r, OP_CAT, vals, (int)k, &dim, 1, &kt);
	kt.dt = DT_I64;
	res[1] = k == 1 ? idxs[0] : tr_emit(r, OP_CAT, idxs, (int)k, &dim, 1, &kt);
}

/* prims.topk(a, k, dim, largest, sorted), and torch.topk(input, k, dim=-1,
 * largest=True, sorted=True) as the torch executor prints it */
uint32_t
tr_lower_topk(Reader *r, const Expr *c, Op op)
{
	static const Param pp[] = { { "a", false }, { "k", false }, { "dim", false }, { "largest", false },
		{ "sorted", false } };
	static const Param pt[] = { { "input|a", false }, { "k", false }, { "dim", true }, { "largest", true },
		{ "sorted", true } };
	const Expr *a[5];
	uint32_t res[2];

	(void)op;
	tr_bind(r, c, torch_spelling(r) ? pt : pp, 5, a);
	select_first(r, a[0], a[1], a[2], tr_isnone(a[3]) || tr_bool_arg(r, a[3], true), res);
	results(r, 2, res);
	return res[0];
}

/* prims.sort(a, dim, descending, stable), and torch.sort(input, dim=-1,
 * descending=False, stable=False) and torch.argsort (its indices) as the
 * torch executor prints them: select_first over the whole dim, which orders
 * as torch's stable sort (NaN above every number) */
uint32_t
tr_lower_sort(Reader *r, const Expr *c, Op op)
{
	static const Param pp[] = { { "a", false }, { "dim", false }, { "descending", false }, { "stable", false } };
	static const Param pt[] = { { "input|a", false }, { "dim", true }, { "descending", true }, { "stable", true } };
	const Expr *a[4];
	uint32_t res[2];

	(void)op;
	tr_bind(r, c, torch_spelling(r) ? pt : pp, 4, a);
	select_first(r, a[0], NULL, a[1], !tr_isnone(a[2]) && tr_bool_arg(r, a[2], false), res);
	if (!strcmp(r->callee, "torch.argsort"))
		return res[1];
	results(r, 2, res);
	return res[0];
}

/* ---- lerp ---- */

/* lerp(start, end, weight), as PyTorch's CUDA kernel computes it, in f32
 * for f16 and bf16 (f64 stays f64): |w| < 0.5 ? start + w*(end - start)
 * : end - (end - start)*(1 - w), nvcc contracting each multiply-add into
 * one fma — so composed of fma ops, exact. weight: a tensor or a Python
 * number (known, or at run time). */
uint32_t
tr_lower_lerp(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "start|input|a", false }, { "end", false }, { "weight", false } };
	const Expr *a[3];
	uint32_t s, e, w, d, small, r1, r2, args[3];
	Type t, et;
	DType ct, ot;
	Opnd o;

	(void)op;
	tr_bind(r, c, ps, 3, a);
	s = tr_tensor(r, a[0]);
	e = tr_tensor(r, a[1]);
	tr_vtype(r->fn, s, &t);
	tr_vtype(r->fn, e, &et);
	if (!dt_isfloat(t.dt) || et.dt != t.dt || !tr_same_shape(&t, &et))
		tr_errat(r, a[1]->line, a[1]->col, "%s: start and end must be float tensors of one dtype and shape",
			r->callee);
	ot = t.dt;
	ct = acc_dtype(t.dt);
	o = tr_operand(r, a[2]);
	if (o.tensor) {
		Type wt;

		tr_vtype(r->fn, o.v, &wt);
		if (wt.dt != t.dt || (wt.rank && !tr_same_shape(&t, &wt)))
			tr_errat(r, a[2]->line, a[2]->col, "%s: weight must have start's dtype and shape", r->callee);
		w = cvt(r, o.v, ct);
	} else {
		w = o.num ? cvt(r, o.v, ct) : tr_konst(r, tr_scalar_in(r, a[2], ct), ct);
	}
	s = cvt(r, s, ct);
	e = cvt(r, e, ct);
	d = tr_bin(r, OP_SUB, e, s);
	small = tr_bin(r, OP_LT, tr_un(r, OP_ABS, w), tr_konst(r, 0.5, ct));
	tr_vtype(r->fn, d, &t);
	args[0] = w;
	args[1] = d;
	args[2] = s;
	r1 = tr_emit(r, OP_FMA, args, 3, NULL, 0, &t);
	args[0] = tr_un(r, OP_NEG, d);
	args[1] = tr_bin(r, OP_SUB, tr_konst(r, 1, ct), w);
	args[2] = e;
	r2 = tr_emit(r, OP_FMA, args, 3, NULL, 0, &t);
	return cvt(r, where(r, small, r1, r2), ot);
}

/* ---- scatter, scatter_add, index_add ---- */

/* v (a's rank, index's shape) with dim moved last, in the space (a's dims
 * but dim, then J; bd maps them) */
static uint32_t
to_space(Reader *r, uint32_t v, int64_t dim, const Type *sp, const int64_t *bd)
{
	int64_t perm[IR_MAXRANK];
	int rank = sp->rank - 1;

	for (int d = 0, k = 0; d < rank; d++)
		if (d != dim)
			perm[k++] = d;
	perm[rank - 1] = dim;
	return bcast(r, transpose(r, v, perm), sp->rank, sp->d, bd);
}

/* Writes at indices known at run time, composed over the space of a's
 * elements times J (the index's size along dim): at each element p of a,
 * which j have index[..., j, ...] == p along dim. scatter takes the last
 * such j's src (PyTorch leaves which of equal indices wins unspecified);
 * scatter_add and index_add add the matching srcs, in j order, in f32 for
 * f16 and bf16 (PyTorch adds with atomics in any order: a tolerance). The
 * work is a's elements times J, so a space above 2^28 is an error rather
 * than a kernel that would crawl. op: OP_WHERE (scatter) or OP_ADD. index
 * has a's shape but along dim (index_add's 1-d index is broadcast so
 * first); src: a tensor of index's shape or more, or a number (scatter).
 * at: where errors about the indices point. */
static uint32_t
scatter(Reader *r, Op op, uint32_t x, uint32_t ix, const Expr *es, int64_t dim, const Expr *at)
{
	uint32_t src = IR_NONE, eq, out;
	int64_t bd[IR_MAXRANK], J, P;
	Type t, it, sp, rt;
	Ints last = { 1, { 0 }, { NULL }, NULL };
	Opnd o;

	tr_vtype(r->fn, x, &t);
	tr_vtype(r->fn, ix, &it);
	if (t.rank == 0 || t.rank >= IR_MAXRANK || it.rank != t.rank || !dt_isint(it.dt))
		tr_errat(r, at->line, at->col, "%s: expected integer indices of the tensor's rank (1 to %d)", r->callee,
			IR_MAXRANK - 1);
	for (int d = 0; d < t.rank; d++)
		if (d != dim && it.d[d] != t.d[d])
			tr_errat(r, at->line, at->col,
				"%s: indices smaller than the tensor in a dim other than %lld are not supported yet",
				r->callee, (long long)dim);
	J = it.d[dim];
	P = t.d[dim];
	if ((double)ir_numel(r->fn, x) * (double)J > (double)(1 << 28))
		tr_errat(r, at->line, at->col,
			"%s: composed, it compares %lld elements with %lld indices each, too many: a scatter kernel is "
			"not built yet",
			r->callee, (long long)ir_numel(r->fn, x), (long long)J);
	o = tr_operand(r, es);
	if (o.tensor) {
		int64_t attr[3 * IR_MAXRANK];
		Type st;

		src = o.v;
		tr_vtype(r->fn, src, &st);
		if (st.rank != t.rank || st.dt != t.dt)
			tr_errat(r, es->line, es->col, "%s: the source must have the tensor's dtype and rank",
				r->callee);
		for (int d = 0; d < t.rank; d++) {
			if (st.d[d] < it.d[d])
				tr_errat(r, es->line, es->col, "%s: the source is smaller than the indices in dim %d",
					r->callee, d);
			attr[d] = 0;
			attr[t.rank + d] = it.d[d];
			attr[2 * t.rank + d] = 1;
		}
		if (memcmp(st.d, it.d, (size_t)t.rank * sizeof *st.d)) { /* PyTorch reads index's extent */
			st = it;
			st.dt = t.dt;
			src = tr_emit(r, OP_SLICE, &src, 1, attr, 3 * t.rank, &st);
		}
	} else if (op != OP_WHERE) {
		tr_errat(r, es->line, es->col, "%s: the values must be a tensor", r->callee);
	}
	if (J == 0 || P == 0)
		return x;
	/* the space: a's dims, then J; index (and src) go there with dim last */
	sp = t;
	sp.rank = t.rank + 1;
	sp.d[t.rank] = J;
	for (int d = 0, k = 0; d < t.rank; d++)
		if (d != dim)
			bd[k++] = d;
	bd[t.rank - 1] = t.rank;
	eq = tr_bin(r, OP_EQ, dim_iota(r, P, sp.rank, sp.d, dim), to_space(r, cvt(r, ix, DT_I64), dim, &sp, bd));
	if (op == OP_WHERE) { /* the last matching j, and its src */
		uint32_t js = last_match(r, eq), has = tr_bin(r, OP_GE, js, tr_konst(r, 0, DT_I64)), args[2];

		if (src != IR_NONE) {
			args[0] = src;
			args[1] = tr_bin(r, OP_MAXIMUM, js, tr_konst(r, 0, DT_I64));
			rt = t;
			out = tr_emit(r, OP_GATHER, args, 2, &dim, 1, &rt);
		} else {
			out = o.num ? cvt(r, o.v, t.dt) : tr_konst(r, tr_scalar_in(r, es, t.dt), t.dt);
		}
		return where(r, has, out, x);
	}
	{ /* the matching srcs added, in f32 for f16 and bf16 */
		DType ct = dt_isfloat(t.dt) ? acc_dtype(t.dt) : t.dt;
		uint32_t v = where(r, eq, to_space(r, cvt(r, src, ct), dim, &sp, bd), tr_konst(r, 0, ct));

		last.v[0] = t.rank;
		return cvt(r, tr_bin(r, OP_ADD, cvt(r, x, ct), sum(r, v, &last)), t.dt);
	}
}

/* the arguments of an indexed write: prims' (a, index, value, dim), or
 * torch's (input, dim, index, source) for the torch executor's spelling */
static void
bind_indexed(Reader *r, const Expr *c, const Expr **ea, const Expr **ed, const Expr **ei, const Expr **ev)
{
	static const Param pp[] = { { "a", false }, { "index", false }, { "value|src|source", false },
		{ "dim", false } };
	static const Param pt[] = { { "input|a", false }, { "dim", false }, { "index", false },
		{ "source|src|value|tensor", false } };
	bool torch = torch_spelling(r);
	const Expr *a[4];

	tr_bind(r, c, torch ? pt : pp, 4, a);
	*ea = a[0];
	*ed = torch ? a[1] : a[3];
	*ei = torch ? a[2] : a[1];
	*ev = torch ? a[3] : a[2];
}

/* prims.scatter(a, index, src, dim) and prims.scatter_add(a, index, value,
 * dim) (op OP_WHERE, OP_ADD), and torch.scatter and
 * torch.scatter_add(input, dim, index, src) as the torch executor prints
 * them */
uint32_t
tr_lower_scatter(Reader *r, const Expr *c, Op op)
{
	const Expr *ea, *ed, *ei, *es;
	uint32_t x;

	bind_indexed(r, c, &ea, &ed, &ei, &es);
	x = tr_tensor(r, ea);
	return scatter(r, op, x, tr_tensor(r, ei), es,
		tr_norm_dim(r, ed, tr_int_arg(r, ed, "dim"), r->fn->vals[x].rank ? r->fn->vals[x].rank : 1), ei);
}

/* prims.index_add(a, index, value, dim) and torch.index_add(input, dim,
 * index, source): value's rows added at index's rows — a scatter_add whose
 * 1-d index is broadcast to value's shape */
uint32_t
tr_lower_index_add(Reader *r, const Expr *c, Op op)
{
	const Expr *ea, *ed, *ei, *es;
	uint32_t x, ix, v;
	int64_t dim, n;
	Type t, vt;

	(void)op;
	bind_indexed(r, c, &ea, &ed, &ei, &es);
	x = tr_tensor(r, ea);
	tr_vtype(r->fn, x, &t);
	dim = tr_norm_dim(r, ed, tr_int_arg(r, ed, "dim"), t.rank ? t.rank : 1);
	ix = tr_tensor(r, ei);
	v = tr_tensor(r, es);
	tr_vtype(r->fn, v, &vt);
	n = ir_numel(r->fn, ix);
	if (r->fn->vals[ix].rank > 1 || vt.rank != t.rank || vt.d[dim] != n)
		tr_errat(r, ei->line, ei->col, "%s: expected a 1-d index as long as the values' dim %lld", r->callee,
			(long long)dim);
	ix = bcast(r, reshape(r, ix, 1, &n), vt.rank, vt.d, &dim);
	return scatter(r, OP_ADD, x, ix, es, dim, ei);
}

/* ---- index_copy ---- */

/* index_copy of v into a along dim at index ix (a KV cache's update): row
 * ix[j] of a becomes row j of v. Composed, exact: for each row i of a the
 * last j with ix[j] == i (a small rows x indices compare of the indices
 * alone), then a take of v's rows and a where. PyTorch leaves duplicates'
 * winner unspecified (here the last); an index out of range, an error in
 * PyTorch, changes no row. ei, ev: where errors about ix and v point. */
static uint32_t
index_copy(Reader *r, uint32_t a, uint32_t ix, uint32_t v, int64_t dim, const Expr *ei, const Expr *ev)
{
	uint32_t has, js, g, args[2];
	int64_t A, N, s[2];
	Type at, it, vt;

	tr_vtype(r->fn, a, &at);
	tr_vtype(r->fn, ix, &it);
	tr_vtype(r->fn, v, &vt);
	N = ir_numel(r->fn, ix);
	if (!dt_isint(it.dt) || it.rank > 1)
		tr_errat(r, ei->line, ei->col, "%s: the index must be integers of rank 0 or 1", r->callee);
	if (vt.dt != at.dt || vt.rank != at.rank)
		tr_errat(r, ev->line, ev->col, "%s: the values must have the tensor's dtype and rank", r->callee);
	for (int i = 0; i < at.rank; i++)
		if (vt.d[i] != (i == dim ? N : at.d[i]))
			tr_errat(r, ev->line, ev->col,
				"%s: the values must have the tensor's shape but in dim %lld, which is the "
				"index's length",
				r->callee, (long long)dim);
	A = at.d[dim];
	if (A == 0 || N == 0)
		return a;
	s[0] = A;
	s[1] = N;
	js = last_match(r,
		tr_bin(r, OP_EQ, dim_iota(r, A, 2, s, 0),
			bcast(r, cvt(r, reshape(r, ix, 1, &N), DT_I64), 2, s, (int64_t[]){ 1 })));
	has = tr_bin(r, OP_GE, js, tr_konst(r, 0, DT_I64));
	args[0] = v;
	args[1] = tr_bin(r, OP_MAXIMUM, js, tr_konst(r, 0, DT_I64));
	vt.d[dim] = A;
	g = tr_emit(r, OP_TAKE, args, 2, &dim, 1, &vt);
	return where(r, bcast(r, has, at.rank, at.d, &dim), g, a);
}

/* prims.index_copy(a, index, value, dim), and torch.index_copy(input, dim,
 * index, source) as the torch executor prints it */
uint32_t
tr_lower_index_copy(Reader *r, const Expr *c, Op op)
{
	const Expr *ea, *ed, *ei, *ev;
	uint32_t x;

	(void)op;
	bind_indexed(r, c, &ea, &ed, &ei, &ev);
	x = tr_tensor(r, ea);
	if (r->fn->vals[x].rank == 0)
		tr_errat(r, ea->line, ea->col, "%s: expected a tensor with at least one dim", r->callee);
	return index_copy(r, x, tr_tensor(r, ei), tr_tensor(r, ev),
		tr_norm_dim(r, ed, tr_int_arg(r, ed, "dim"), r->fn->vals[x].rank), ei, ev);
}

/* ---- copy_with_setitem ---- */

/* one entry of a setitem key: an int (the dim goes), a slice, or `...` */
typedef struct {
	enum { K_INT, K_SLICE, K_ELLIPSIS } kind;
	int64_t v[3]; /* K_INT: v[0]; K_SLICE: start, stop, step (INT64_MIN: None) */
	const Expr *e;
} KeyItem;

static int64_t
slice_bound(Reader *r, const Expr *e)
{
	if (e->kind == E_NONE)
		return INT64_MIN;
	if (e->kind != E_INT)
		tr_errat(r, e->line, e->col, "%s: a slice bound must be an int or None here", r->callee);
	return e->i;
}

static void
key_item(Reader *r, const Expr *e, KeyItem *k)
{
	k->e = e;
	if (e->kind == E_INT) {
		k->kind = K_INT;
		k->v[0] = e->i;
		return;
	}
	if (e->kind == E_ELLIPSIS) {
		k->kind = K_ELLIPSIS;
		return;
	}
	if (e->kind == E_CALL && !strcmp(e->fn->s, "slice") && e->nargs >= 1 && e->nargs <= 3) {
		k->kind = K_SLICE;
		k->v[0] = k->v[2] = INT64_MIN;
		for (uint32_t i = 0; i < e->nargs; i++)
			if (e->args[i].kw)
				tr_errat(r, e->line, e->col, "%s: slice() takes no keywords", r->callee);
		if (e->nargs == 1)
			k->v[1] = slice_bound(r, e->args[0].e);
		else
			for (uint32_t i = 0; i < e->nargs; i++)
				k->v[i] = slice_bound(r, e->args[i].e);
		return;
	}
	if (e->kind == E_NONE)
		tr_errat(r, e->line, e->col, "%s: a None (new dim) in the key is not supported yet", r->callee);
	if (e->kind == E_NAME || e->kind == E_LIST)
		tr_errat(r, e->line, e->col,
			"%s: a tensor or list in the key (advanced indexing: a scatter) is not supported yet",
			r->callee);
	tr_errat(r, e->line, e->col, "%s: expected an int, a slice or '...' in the key", r->callee);
}

/* copy_with_setitem(a, key, value): a with a[key] = value, for a key of
 * ints, slices and `...` (basic indexing). Composed, exact: the value
 * broadcast to the view a[key] and converted to a's dtype, as torch's
 * setitem does, placed in a's shape by a pad (a slice's step its interior
 * padding), then a where on the same pad of a mask. */
uint32_t
tr_lower_setitem(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "key|index", false }, { "value", false } };
	const Expr *a[3];
	KeyItem k[IR_MAXRANK + 1];
	const KeyItem *dk[IR_MAXRANK + 1];
	int nk = 0, ndk = 0, ell = -1, vr = 0;
	int64_t vd[IR_MAXRANK], pads[3 * IR_MAXRANK], lens[IR_MAXRANK];
	uint32_t x, v, mask, args[2];
	Opnd o;
	Type t, ty;

	(void)op;
	tr_bind(r, c, ps, 3, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (a[1]->kind == E_TUPLE) {
		if (a[1]->n > IR_MAXRANK + 1)
			tr_errat(r, a[1]->line, a[1]->col, "%s: a key of %u entries", r->callee, a[1]->n);
		for (uint32_t i = 0; i < a[1]->n; i++)
			key_item(r, a[1]->elts[i], &k[nk++]);
	} else {
		key_item(r, a[1], &k[nk++]);
	}
	for (int i = 0; i < nk; i++)
		if (k[i].kind == K_ELLIPSIS) {
			if (ell >= 0)
				tr_errat(r, k[i].e->line, k[i].e->col, "%s: two '...' in the key", r->callee);
			ell = i;
		}
	if (nk - (ell >= 0) > t.rank)
		tr_errat(r, a[1]->line, a[1]->col, "%s: a key of %d entries for a tensor of rank %d", r->callee,
			nk - (ell >= 0), t.rank);
	/* each dim's key item (NULL: all of it, for `...` and the dims after
	 * the key), start, length and step in a; the view's dims */
	for (int i = 0; i < nk; i++)
		if (i == ell)
			for (int j = 0; j < t.rank - (nk - 1); j++)
				dk[ndk++] = NULL;
		else
			dk[ndk++] = &k[i];
	while (ndk < t.rank)
		dk[ndk++] = NULL;
	for (int d = 0; d < t.rank; d++) {
		const KeyItem *ki = dk[d];
		int64_t n = t.d[d], st = 0, len = n, step = 1;

		if (ki && ki->kind == K_INT) {
			st = ki->v[0] < 0 ? ki->v[0] + n : ki->v[0];
			if (st < 0 || st >= n)
				tr_errat(r, ki->e->line, ki->e->col,
					"%s: index %lld is out of range for dim %d of size %lld", r->callee,
					(long long)ki->v[0], d, (long long)n);
			len = 1;
		} else {
			if (ki) {
				int64_t lo = ki->v[0], hi = ki->v[1];

				step = ki->v[2] == INT64_MIN ? 1 : ki->v[2];
				if (step < 1)
					tr_errat(r, ki->e->line, ki->e->col, "%s: a slice's step must be positive",
						r->callee);
				lo = lo == INT64_MIN ? 0 : lo < 0 ? (lo + n < 0 ? 0 : lo + n) : (lo > n ? n : lo);
				hi = hi == INT64_MIN ? n : hi < 0 ? (hi + n < 0 ? 0 : hi + n) : (hi > n ? n : hi);
				st = lo;
				len = hi > lo ? (hi - lo - 1) / step + 1 : 0; /* no overflow for any step */
			}
			vd[vr++] = len;
		}
		if (!len)
			return x; /* an empty view: nothing is written */
		lens[d] = len;
		pads[d] = st;
		pads[t.rank + d] = n - (st + (len - 1) * step + 1);
		pads[2 * t.rank + d] = len > 1 ? step - 1 : 0;
	}
	/* the value, broadcast to the view (right-aligned) and converted */
	o = tr_operand(r, a[2]);
	if (o.tensor) {
		Type vt;
		int64_t bd[IR_MAXRANK];

		v = o.v;
		tr_vtype(r->fn, v, &vt);
		if (vt.rank > vr)
			tr_errat(r, a[2]->line, a[2]->col, "%s: a value of rank %d for a view of rank %d", r->callee,
				vt.rank, vr);
		for (int i = 0; i < vt.rank; i++) {
			int64_t want = vd[vr - vt.rank + i];

			if (vt.d[i] != want && vt.d[i] != 1)
				tr_errat(r, a[2]->line, a[2]->col, "%s: a value of dim %d size %lld for a view's %lld",
					r->callee, i, (long long)vt.d[i], (long long)want);
		}
		if (vt.rank == vr && !memcmp(vt.d, vd, (size_t)vr * sizeof *vd)) {
			v = cvt(r, v, t.dt);
		} else {
			/* size-1 dims first go (broadcast_in_dim maps dims of the same size) */
			int n1 = 0;
			int64_t kd[IR_MAXRANK];

			for (int i = 0; i < vt.rank; i++)
				if (vt.d[i] != 1 || vd[vr - vt.rank + i] == 1) {
					kd[n1] = vt.d[i];
					bd[n1++] = vr - vt.rank + i;
				}
			if (n1 != vt.rank)
				v = reshape(r, v, n1, kd);
			v = bcast(r, cvt(r, v, t.dt), vr, vd, bd);
		}
	} else {
		v = o.num ? cvt(r, o.v, t.dt) : tr_konst(r, tr_scalar_in(r, a[2], t.dt), t.dt);
		v = bcast(r, v, vr, vd, NULL);
	}
	v = reshape(r, v, t.rank, lens);
	mask = bcast(r, tr_konst(r, 1, DT_B8), t.rank, lens, NULL);
	ty = t;
	args[0] = v;
	args[1] = tr_konst(r, 0, t.dt);
	v = tr_emit(r, OP_PAD, args, 2, pads, 3 * t.rank, &ty);
	args[0] = mask;
	args[1] = tr_konst(r, 0, DT_B8);
	ty.dt = DT_B8;
	mask = tr_emit(r, OP_PAD, args, 2, pads, 3 * t.rank, &ty);
	return where(r, mask, v, x);
}

/* ---- unfold ---- */

/* unfold(a, dim, size, step): the windows of `size` elements along dim,
 * `step` apart, as a new last dim (dim keeps the window count). Composed,
 * exact: a take of dim at w*step + j for each window w and element j, then a
 * reshape and a transpose that moves j last. */
uint32_t
tr_lower_unfold(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "dim", false }, { "size", false }, { "step", false } };
	const Expr *a[4];
	uint32_t x, wi, ji, ix, args[2];
	int64_t dim, size, step, n, io[2] = { 0, 1 }, sp[2], b0 = 0, b1 = 1, nd[IR_MAXRANK], perm[IR_MAXRANK];
	Type t, it = { .dt = DT_I64, .rank = 1 };
	int rank;

	(void)op;
	tr_bind(r, c, ps, 4, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (t.rank == 0 || t.rank >= IR_MAXRANK)
		tr_errat(r, a[0]->line, a[0]->col, "%s: expected a tensor of rank 1 to %d", r->callee, IR_MAXRANK - 1);
	dim = tr_norm_dim(r, a[1], tr_int_arg(r, a[1], "dim"), t.rank);
	size = tr_int_arg(r, a[2], "size");
	step = tr_int_arg(r, a[3], "step");
	if (size < 1 || size > t.d[dim])
		tr_errat(r, a[2]->line, a[2]->col, "%s: size %lld is not within 1 and dim %lld's %lld", r->callee,
			(long long)size, (long long)dim, (long long)t.d[dim]);
	if (step < 1)
		tr_errat(r, a[3]->line, a[3]->col, "%s: step must be positive", r->callee);
	n = (t.d[dim] - size) / step + 1;
	io[1] = step;
	it.d[0] = n;
	wi = tr_emit(r, OP_IOTA, NULL, 0, io, 2, &it);
	io[1] = 1;
	it.d[0] = size;
	ji = tr_emit(r, OP_IOTA, NULL, 0, io, 2, &it);
	sp[0] = n;
	sp[1] = size;
	ix = tr_bin(r, OP_ADD, bcast(r, wi, 2, sp, &b0), bcast(r, ji, 2, sp, &b1));
	n *= size;
	ix = reshape(r, ix, 1, &n);
	args[0] = x;
	args[1] = ix;
	t.d[dim] = n;
	x = tr_emit(r, OP_TAKE, args, 2, &dim, 1, &t);
	rank = t.rank + 1;
	for (int i = 0; i < rank; i++)
		nd[i] = i < dim ? t.d[i] : i == dim ? n / size : i == dim + 1 ? size : t.d[i - 1];
	x = reshape(r, x, rank, nd);
	if (dim + 2 == rank)
		return x;
	for (int i = 0, k = 0; i < rank; i++)
		if (i != dim + 1)
			perm[k++] = i;
	perm[rank - 1] = dim + 1;
	return transpose(r, x, perm);
}

/* ---- index_put ---- */

/* index_put(a, indices, values, accumulate) with one 1-d index (rows of
 * dim 0: a[index] = values, or += when accumulating): index_copy's or
 * index_add's composition. Several indices, and values that need
 * broadcasting, are errors. */
uint32_t
tr_lower_index_put(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "indices", false }, { "values", false }, { "accumulate", true } };
	const Expr *a[4], *ei;
	uint32_t x, ix, v;
	int64_t n, dim = 0;
	Type t, it, vt;

	(void)op;
	tr_bind(r, c, ps, 4, a);
	if ((a[1]->kind != E_LIST && a[1]->kind != E_TUPLE) || a[1]->n != 1)
		tr_errat(
			r, a[1]->line, a[1]->col, "%s: indices other than one tensor are not supported yet", r->callee);
	ei = a[1]->elts[0];
	x = tr_tensor(r, a[0]);
	ix = tr_tensor(r, ei);
	v = tr_tensor(r, a[2]);
	tr_vtype(r->fn, x, &t);
	tr_vtype(r->fn, ix, &it);
	tr_vtype(r->fn, v, &vt);
	n = ir_numel(r->fn, ix);
	if (it.rank != 1 || t.rank < 1 || vt.rank != t.rank || vt.d[0] != n ||
		memcmp(vt.d + 1, t.d + 1, (size_t)(t.rank - 1) * sizeof *t.d))
		tr_errat(r, a[2]->line, a[2]->col,
			"%s: supported: a 1-d index and values of the rows' shape (no broadcasting) yet", r->callee);
	if (tr_isnone(a[3]) || !tr_bool_arg(r, a[3], false))
		return index_copy(r, x, ix, v, 0, ei, a[2]);
	return scatter(r, OP_ADD, x, bcast(r, ix, vt.rank, vt.d, &dim), a[2], 0, ei);
}

/* ---- batch_norm ---- */

/* batch_norm(a, weight, bias, running_mean, running_var, training, momentum,
 * eps) -> (out, mean, invstd) over every dim but 1. In training the running
 * statistics are updated in place: fp8cc returns their new values as
 * outputs of their own, after the trace's (NAME_updated). */
uint32_t
tr_lower_batch_norm(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "weight", false }, { "bias", false }, { "running_mean", false },
		{ "running_var", false }, { "training", false }, { "momentum", false }, { "eps", false } };
	const Expr *a[8];
	uint32_t x, w = IR_NONE, b = IR_NONE, rm = IR_NONE, rv = IR_NONE, xc, m, v, inv, y, res[3];
	DType t, ct, st;
	double mom, eps;
	bool train;
	int64_t n;
	Ints d = { 0 };

	(void)op;
	tr_bind(r, c, ps, 8, a);
	x = tr_tensor(r, a[0]);
	t = tr_vdtype(r, x);
	ct = acc_dtype(t);
	if (!dt_isfloat(t) || r->fn->vals[x].rank < 2)
		tr_errat(
			r, a[0]->line, a[0]->col, "%s: expected a float tensor with batch and channel dims", r->callee);
	for (int i = 0; i < r->fn->vals[x].rank; i++)
		if (i != 1)
			d.v[d.n++] = i;
	w = tr_isnone(a[1]) ? IR_NONE : tr_tensor(r, a[1]);
	b = tr_isnone(a[2]) ? IR_NONE : tr_tensor(r, a[2]);
	rm = tr_isnone(a[3]) ? IR_NONE : tr_tensor(r, a[3]);
	rv = tr_isnone(a[4]) ? IR_NONE : tr_tensor(r, a[4]);
	train = tr_bool_arg(r, a[5], false);
	if ((a[6]->kind != E_INT && a[6]->kind != E_FLOAT) || (a[7]->kind != E_INT && a[7]->kind != E_FLOAT))
		tr_errat(r, a[6]->line, a[6]->col, "%s: momentum and eps must be numbers", r->callee);
	mom = a[6]->kind == E_INT ? (double)a[6]->i : a[6]->f;
	eps = a[7]->kind == E_INT ? (double)a[7]->i : a[7]->f;
	if (!train && (rm == IR_NONE || rv == IR_NONE))
		tr_errat(r, c->line, r->ccol, "%s: evaluation needs running_mean and running_var", r->callee);
	n = count(r, x, &d);
	xc = cvt(r, x, ct);
	if (train) {
		moments(r, x, &d, 0, &m, &v);
	} else {
		m = cvt(r, rm, ct);
		v = cvt(r, rv, ct);
	}
	inv = tr_un(r, OP_RECIPROCAL, tr_un(r, OP_SQRT, tr_bin(r, OP_ADD, v, tr_konst(r, (double)(float)eps, ct))));
	y = tr_bin(r, OP_MUL, tr_bin(r, OP_SUB, xc, tr_unreduce(r, m, xc, &d)), tr_unreduce(r, inv, xc, &d));
	if (w != IR_NONE)
		y = tr_bin(r, OP_MUL, tr_unreduce(r, cvt(r, w, ct), xc, &d), y);
	if (b != IR_NONE)
		y = tr_bin(r, OP_ADD, y, tr_unreduce(r, cvt(r, b, ct), xc, &d));
	st = rm != IR_NONE ? tr_vdtype(r, rm) : t;
	res[0] = cvt(r, y, t);
	res[1] = cvt(r, m, st);
	res[2] = cvt(r, inv, st);
	if (train && rm != IR_NONE) { /* running = (1 - momentum) * running + momentum * batch */
		uint32_t k1 = tr_konst(r, (double)(float)(1 - mom), ct), k2 = tr_konst(r, (double)(float)mom, ct);
		uint32_t vu = tr_bin(r, OP_MUL, v, tr_konst(r, (double)n / (double)(n > 1 ? n - 1 : 1), ct));

		tr_update(r, rm,
			cvt(r, tr_bin(r, OP_ADD, tr_bin(r, OP_MUL, cvt(r, rm, ct), k1), tr_bin(r, OP_MUL, m, k2)),
				tr_vdtype(r, rm)),
			tr_name_of(a[3]));
		tr_update(r, rv,
			cvt(r, tr_bin(r, OP_ADD, tr_bin(r, OP_MUL, cvt(r, rv, ct), k1), tr_bin(r, OP_MUL, vu, k2)),
				tr_vdtype(r, rv)),
			tr_name_of(a[4]));
	}
	results(r, 3, res);
	return res[0];
}

/* ---- embedding ---- */

/* embedding(a, weight, *, padding_idx, max_norm, norm_type, scale_grad_by_freq,
 * sparse): the rows of weight at the indices of a */
uint32_t
tr_lower_embedding(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|input", false }, { "weight", false }, { "padding_idx", true },
		{ "max_norm", true }, { "norm_type", true }, { "scale_grad_by_freq", true }, { "sparse", true } };
	const Expr *a[7];
	uint32_t ix, w, flat, args[2];
	int64_t n, dim = 0, dims[IR_MAXRANK];
	Type t, it;

	(void)op;
	tr_bind(r, c, ps, 7, a);
	ix = tr_tensor(r, a[0]);
	w = tr_tensor(r, a[1]);
	if (!tr_isnone(a[3]))
		tr_errat(r, a[3]->line, a[3]->col,
			"%s: max_norm renormalizes the weight in place, which is not supported", r->callee);
	tr_vtype(r->fn, ix, &it);
	tr_vtype(r->fn, w, &t);
	if (!dt_isint(it.dt) || t.rank != 2 || it.rank + 1 > IR_MAXRANK)
		tr_errat(r, c->line, r->ccol, "%s: expected integer indices and a 2-d weight", r->callee);
	n = ir_numel(r->fn, ix);
	flat = reshape(r, ix, 1, &n);
	args[0] = w;
	args[1] = flat;
	t.d[0] = n;
	w = tr_emit(r, OP_TAKE, args, 2, &dim, 1, &t);
	memcpy(dims, it.d, (size_t)it.rank * sizeof *dims);
	dims[it.rank] = t.d[1];
	return reshape(r, w, it.rank + 1, dims);
}

/* embedding_backward(grad, indices, num_weights, padding_idx,
 * scale_grad_by_freq, sparse): row w of the result sums the rows of grad
 * whose index is w, in order: a sum over the indices of a (weights, indices,
 * features) space. Deterministic, but its work grows as weights x indices x
 * features. */
uint32_t
tr_lower_embedding_backward(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "grad", false }, { "indices", false }, { "num_weights", false },
		{ "padding_idx", false }, { "scale_grad_by_freq", false }, { "sparse", false } };
	const Expr *a[6];
	uint32_t g, ix, rows, eq, hit, out;
	int64_t V, N, D, pad, sp[3], flat[2], io[2] = { 0, 1 };
	Type gt, it, rt = { .dt = DT_I64, .rank = 1 };
	Ints d = { 1, { 1 }, { NULL }, NULL };

	(void)op;
	tr_bind(r, c, ps, 6, a);
	g = tr_tensor(r, a[0]);
	ix = tr_tensor(r, a[1]);
	V = tr_int_arg(r, a[2], "num_weights");
	pad = tr_int_arg(r, a[3], "padding_idx");
	if (tr_bool_arg(r, a[5], false))
		tr_errat(r, a[5]->line, a[5]->col, "%s: sparse gradients are not supported", r->callee);
	tr_vtype(r->fn, g, &gt);
	tr_vtype(r->fn, ix, &it);
	N = ir_numel(r->fn, ix);
	D = gt.rank ? gt.d[gt.rank - 1] : 1;
	if (!dt_isint(it.dt) || !dt_isfloat(gt.dt) || gt.rank != it.rank + 1 || N * D != ir_numel(r->fn, g) || V <= 0)
		tr_errat(r, c->line, r->ccol, "%s: expected float grad of the indices' shape and one more dim",
			r->callee);
	flat[0] = N;
	flat[1] = D;
	sp[0] = V;
	sp[1] = N;
	sp[2] = D;
	g = bcast(r, reshape(r, g, 2, flat), 3, sp, (int64_t[]){ 1, 2 });
	ix = cvt(r, reshape(r, ix, 1, &N), DT_I64);
	rt.d[0] = V;
	rows = tr_emit(r, OP_IOTA, NULL, 0, io, 2, &rt);
	eq = tr_bin(r, OP_EQ, bcast(r, rows, 3, sp, (int64_t[]){ 0 }), bcast(r, ix, 3, sp, (int64_t[]){ 1 }));
	if (pad >= 0)
		eq = tr_bin(r, OP_BITWISE_AND, eq,
			tr_bin(r, OP_NE, bcast(r, ix, 3, sp, (int64_t[]){ 1 }), tr_konst(r, (double)pad, DT_I64)));
	hit = where(r, eq, g, tr_konst(r, 0, gt.dt));
	if (tr_bool_arg(r, a[4], false)) { /* each row's contributions divided by how often it occurs */
		uint32_t ones = where(r, eq, tr_konst(r, 1, gt.dt), tr_konst(r, 0, gt.dt));
		uint32_t freq = sum(r, ones, &d);

		freq = tr_bin(r, OP_MAXIMUM, freq, tr_konst(r, 1, gt.dt));
		out = tr_bin(r, OP_DIV, sum(r, hit, &d), freq);
	} else {
		out = sum(r, hit, &d);
	}
	return out;
}

/* ---- linear and matmul ---- */

static uint32_t
matmul(Reader *r, uint32_t a, uint32_t b, uint32_t bias, uint8_t flags, const Type *t)
{
	uint32_t args[3] = { a, b, bias };
	uint32_t v = ir_instr(r->fn, OP_MATMUL, args, bias == IR_NONE ? 2 : 3, NULL, 0, t->dt, t->rank, t->d);

	r->fn->ins[r->fn->nins - 1].flags |= flags;
	tr_check_last(r);
	return v;
}

static void
same_float(Reader *r, const Expr *e, uint32_t x, uint32_t y)
{
	DType t = tr_vdtype(r, x);

	if (!dt_isfloat(t))
		tr_errat(r, e->line, e->col, "%s: operands must be floats, not %s", r->callee, ir_dtypes[t].thunder);
	if (tr_vdtype(r, y) != t)
		tr_errat(r, e->line, e->col, "%s: operands have different dtypes (%s and %s)", r->callee,
			ir_dtypes[t].thunder, ir_dtypes[tr_vdtype(r, y)].thunder);
}

/* linear(a (..., K), w (N, K), bias (N) or None) -> (..., N) */
uint32_t
tr_lower_linear(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|input", false }, { "w|weight", false }, { "bias", true } };
	const Expr *e[3];
	uint32_t a, w, bias = IR_NONE, v;
	int64_t k, n, one[2];
	Type ta, tw, t;

	(void)op;
	tr_bind(r, c, ps, 3, e);
	a = tr_tensor(r, e[0]);
	w = tr_tensor(r, e[1]);
	same_float(r, e[1], a, w);
	tr_vtype(r->fn, a, &ta);
	tr_vtype(r->fn, w, &tw);
	if (ta.rank < 1 || tw.rank != 2)
		tr_errat(r, c->line, r->ccol, "%s: expected an input of rank 1 or more and a 2-d weight", r->callee);
	k = ta.d[ta.rank - 1];
	n = tw.d[0];
	if (tw.d[1] != k)
		tr_errat(r, e[1]->line, e[1]->col, "%s: the weight is (%lld, %lld); the input's last dim is %lld",
			r->callee, (long long)tw.d[0], (long long)tw.d[1], (long long)k);
	if (!tr_isnone(e[2])) {
		bias = tr_tensor(r, e[2]);
		same_float(r, e[2], a, bias);
		if (r->fn->vals[bias].rank != 1 || ir_dims(r->fn, bias)[0] != n)
			tr_errat(
				r, e[2]->line, e[2]->col, "%s: bias must be a vector of %lld", r->callee, (long long)n);
	}
	if (ta.rank == 1) {
		one[0] = 1;
		one[1] = k;
		a = reshape(r, a, 2, one);
	}
	t = ta;
	t.rank = ta.rank == 1 ? 2 : ta.rank;
	if (ta.rank == 1)
		t.d[0] = 1;
	t.d[t.rank - 1] = n;
	tr_check_numel(r, c->line, r->ccol, &t);
	v = matmul(r, a, w, bias, IF_TRANS_B, &t);
	return ta.rank == 1 ? reshape(r, v, 1, &n) : v;
}

/* an operand of a batched matmul: 2-d, or broadcast to the result's batch */
static uint32_t
batch_operand(Reader *r, uint32_t x, const Type *out)
{
	Type t;
	int64_t bd[IR_MAXRANK];

	tr_vtype(r->fn, x, &t);
	if (t.rank == 2 || (t.rank == out->rank && !memcmp(t.d, out->d, (size_t)(out->rank - 2) * sizeof *t.d)))
		return x;
	for (int i = 0; i < t.rank; i++)
		bd[i] = out->rank - t.rank + i;
	t.rank = out->rank;
	memcpy(t.d, out->d, (size_t)(out->rank - 2) * sizeof *t.d);
	t.d[out->rank - 2] = ir_dims(r->fn, x)[r->fn->vals[x].rank - 2];
	t.d[out->rank - 1] = ir_dims(r->fn, x)[r->fn->vals[x].rank - 1];
	return bcast(r, x, t.rank, t.d, bd);
}

/* matmul(a, b) with torch's rules: a 1-d operand is a row (a) or a column (b)
 * that the result drops again; batch dims broadcast */
uint32_t
tr_lower_matmul(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|input", false }, { "b|other", false } };
	const Expr *e[2];
	uint32_t a, b, v;
	Type ga, gb, ta, tb, t; /* as given; as multiplied; the product */
	int64_t two[2];
	char b1[256], b2[256];

	(void)op;
	tr_bind(r, c, ps, 2, e);
	a = tr_tensor(r, e[0]);
	b = tr_tensor(r, e[1]);
	same_float(r, e[1], a, b);
	tr_vtype(r->fn, a, &ga);
	tr_vtype(r->fn, b, &gb);
	if (ga.rank == 0 || gb.rank == 0)
		tr_errat(r, c->line, r->ccol, "%s: operands must have at least one dim", r->callee);
	if (ga.rank == 1) {
		two[0] = 1, two[1] = ga.d[0];
		a = reshape(r, a, 2, two);
	}
	if (gb.rank == 1) {
		two[0] = gb.d[0], two[1] = 1;
		b = reshape(r, b, 2, two);
	}
	tr_vtype(r->fn, a, &ta);
	tr_vtype(r->fn, b, &tb);
	if (ta.d[ta.rank - 1] != tb.d[tb.rank - 2])
		tr_errat(r, c->line, r->ccol, "%s: cannot multiply %s and %s", r->callee, tr_tystr(&ga, b1, sizeof b1),
			tr_tystr(&gb, b2, sizeof b2));
	t = ta.rank >= tb.rank ? ta : tb; /* the batch dims broadcast, aligned on the right */
	for (int i = 0; i < t.rank - 2; i++) {
		int ia = i - (t.rank - ta.rank), ib = i - (t.rank - tb.rank);
		int64_t x = ia >= 0 ? ta.d[ia] : 1, y = ib >= 0 ? tb.d[ib] : 1;

		if (x != y && x != 1 && y != 1)
			tr_errat(r, c->line, r->ccol, "%s: batch dims %lld and %lld do not broadcast", r->callee,
				(long long)x, (long long)y);
		t.d[i] = x > y ? x : y;
	}
	t.d[t.rank - 2] = ta.d[ta.rank - 2];
	t.d[t.rank - 1] = tb.d[tb.rank - 1];
	tr_check_numel(r, c->line, r->ccol, &t);
	a = batch_operand(r, a, &t);
	b = batch_operand(r, b, &t);
	v = matmul(r, a, b, IR_NONE, 0, &t);
	if (ga.rank > 1 && gb.rank > 1)
		return v;
	if (gb.rank == 1) /* drop the dims the 1-d operands added: b's column */
		t.rank--;
	if (ga.rank == 1) { /* and a's row */
		t.d[t.rank - 2 + (gb.rank == 1)] = t.d[t.rank - 1 + (gb.rank == 1)];
		t.rank--;
	}
	return reshape(r, v, t.rank, t.d);
}
