/* prims.c — one lowering per callee the reader knows: Thunder's prims, and
 * the torch-level calls that Thunder prints without subsymbols. */
#include <math.h>

#include "trace.h"

/* ---- prims ---- */

static const Param P_A[] = { { "a", false } };
static const Param P_AB[] = { { "a", false }, { "b", false } };

/* A Python number known at run time (a rank-0 f64, i64 or b8 value) as an
 * operand of dtype t: converted as PyTorch converts a scalar, and for a
 * division its reciprocal in t */
static uint32_t
runtime_scalar(Reader *r, const Opnd *o, DType t, bool recip)
{
	DType from = tr_vdtype(r, o->v);
	uint32_t x;
	Type rt = { .dt = t };

	if (from == DT_F64 && !dt_isfloat(t) && !dt_isfp8(t))
		tr_errat(r, o->e->line, o->e->col, "%s: a float number with an %s tensor", r->callee,
			ir_dtypes[t].thunder);
	x = from == t ? o->v : tr_convert(r, o->v, t);
	return recip ? tr_emit(r, OP_RECIPROCAL, &x, 1, NULL, 0, &rt) : x;
}

static bool
any_tensor(const Opnd *o, int n)
{
	for (int i = 0; i < n; i++)
		if (o[i].tensor)
			return true;
	return false;
}

static double
number_value(const Opnd *o)
{
	return o->e->kind == E_FLOAT ? o->e->f : (double)o->e->i;
}

/* Python's arithmetic on numbers alone: ints stay ints (but / is true
 * division), a float makes a float, comparisons give bools. Known numbers
 * fold; numbers known at run time compute in f64 or i64. The result is a
 * number (r->num), not a tensor. */
static uint32_t
number_op(Reader *r, Op op, const Opnd *o, int n)
{
	bool isf = op == OP_DIV, known = true, cmp = ir_ops[op].cls == OC_COMPARE;
	double x[3];
	uint32_t args[3];
	DType t;
	Type rt = { .dt = DT_F64 };

	for (int i = 0; i < n; i++) {
		known &= !o[i].num;
		isf |= o[i].num ? tr_vdtype(r, o[i].v) == DT_F64 : o[i].e->kind == E_FLOAT;
	}
	if (ir_ops[op].cls != OC_BINARY && ir_ops[op].cls != OC_COMPARE && ir_ops[op].cls != OC_UNARY)
		tr_errat(r, r->cur->line, r->ccol, "%s on Python numbers alone is not supported", r->callee);
	if (isf && (ir_ops[op].tc == TC_INT || ir_ops[op].tc == TC_BOOL)) /* Python: a TypeError */
		tr_errat(r, r->cur->line, r->ccol, "%s of a float number: it takes integers and booleans", r->callee);
	if (op == OP_ISFINITE || (!isf && ir_ops[op].tc == TC_FLOAT))
		isf = true;
	r->num->kind = SYM_NUM;
	r->num->numkind = cmp ? 'b' : isf ? 'f' : 'i';
	r->num->val = IR_NONE;
	t = isf ? DT_F64 : DT_I64;
	if (known) {
		for (int i = 0; i < n; i++)
			x[i] = number_value(&o[i]);
		r->num->num = ir_eval_scalar(op, x, n, t);
		return IR_NONE;
	}
	for (int i = 0; i < n; i++)
		args[i] = o[i].num ? (tr_vdtype(r, o[i].v) == t ? o[i].v : tr_convert(r, o[i].v, t))
				   : tr_konst(r, number_value(&o[i]), t);
	rt.dt = cmp ? DT_B8 : t;
	r->num->val = tr_emit(r, op, args, n, NULL, 0, &rt);
	return IR_NONE;
}

static uint32_t
unary(Reader *r, Op op, const Opnd *o)
{
	Type t;

	if (!o->tensor)
		return number_op(r, op, o, 1);
	tr_vtype(r->fn, o->v, &t);
	if (op == OP_ISFINITE || op == OP_SIGNBIT)
		t.dt = DT_B8;
	return tr_emit(r, op, &o->v, 1, NULL, 0, &t);
}

static uint32_t
prim_unary(Reader *r, const Expr *c, Op op)
{
	const Expr *a[1];
	Opnd o;

	tr_bind(r, c, P_A, 1, a);
	o = tr_operand(r, a[0]);
	return unary(r, op, &o);
}

/* the result shape of an elementwise op: its operands' one non-scalar shape */
static void
ew_shape(Reader *r, const Opnd *o, int n, Type *t)
{
	Type u;
	char b1[256], b2[256];
	int from = -1;

	t->rank = 0;
	for (int i = 0; i < n; i++) {
		if (!o[i].tensor || r->fn->vals[o[i].v].rank == 0)
			continue;
		tr_vtype(r->fn, o[i].v, &u);
		if (from >= 0 && !tr_same_shape(t, &u))
			tr_errat(r, o[i].e->line, o[i].e->col, "%s: shapes %s and %s differ (prims do not broadcast)",
				r->callee, dims_str(t->d, t->rank, ", ", b1, sizeof b1),
				dims_str(u.d, u.rank, ", ", b2, sizeof b2));
		*t = u;
		from = i;
	}
}

/* one dtype for the data operands (not where's condition) */
static DType
ew_dtype(Reader *r, const Opnd *o, int first, int n)
{
	int have = -1;

	for (int i = first; i < n; i++) {
		if (!o[i].tensor)
			continue;
		if (have >= 0 && tr_vdtype(r, o[i].v) != tr_vdtype(r, o[have].v))
			tr_errat(r, o[i].e->line, o[i].e->col, "%s: operands have different dtypes (%s and %s)",
				r->callee, ir_dtypes[tr_vdtype(r, o[have].v)].thunder,
				ir_dtypes[tr_vdtype(r, o[i].v)].thunder);
		if (have < 0)
			have = i;
	}
	if (have < 0)
		tr_errat(r, r->cur->line, r->ccol, "%s needs a tensor operand", r->callee);
	return tr_vdtype(r, o[have].v);
}

/* PyTorch computes f16/bf16 tensor-scalar ops in f32 with the scalar as f32,
 * except comparisons, where, maximum and minimum with a scalar the tensor's
 * dtype holds exactly */
static bool
widen(Reader *r, Op op, const Opnd *o, int first, int n, DType t)
{
	bool exact_ok = ir_ops[op].cls == OC_COMPARE || op == OP_WHERE || op == OP_MAXIMUM || op == OP_MINIMUM;

	if (t != DT_BF16 && t != DT_F16)
		return false;
	for (int i = first; i < n; i++)
		if (o[i].num || (!o[i].tensor && !(exact_ok && tr_exact_in(r, o[i].e, t))))
			return true;
	return false;
}

/* 1/s in the op-math dtype t (f32 or f64) */
static double
reciprocal(double s, DType t)
{
	return t == DT_F64 ? 1.0 / s : (double)(1.0f / (float)s);
}

/* Unary, binary, compare and where ops on operands of one dtype, each of
 * the result's shape or rank 0; Python numbers become rank-0 constants.
 * A float tensor divided by a Python number is, as PyTorch's CUDA kernel
 * computes it, a product with the number's reciprocal. */
uint32_t
tr_elementwise(Reader *r, Op op, const Opnd *o, int n)
{
	int first = op == OP_WHERE ? 1 : 0;
	uint32_t args[3], v;
	DType t, ct;
	bool wide, recip;
	Type rt;

	if (ir_ops[op].cls == OC_UNARY)
		return unary(r, op, o);
	if (first && !o[0].tensor)
		tr_errat(r, o[0].e->line, o[0].e->col, "%s: the condition must be a tensor", r->callee);
	if (!any_tensor(o, n))
		return number_op(r, op, o, n);
	t = ew_dtype(r, o, first, n);
	wide = widen(r, op, o, first, n, t);
	ct = wide ? DT_F32 : t;
	ew_shape(r, o, n, &rt);
	if ((recip = op == OP_DIV && o[0].tensor && !o[1].tensor && dt_isfloat(ct)))
		op = OP_MUL;
	for (int i = 0; i < n; i++)
		args[i] = i < first   ? o[i].v
			: o[i].tensor ? (wide ? tr_convert(r, o[i].v, ct) : o[i].v)
			: o[i].num
			? runtime_scalar(r, &o[i], ct, recip)
			: tr_konst(r, recip ? reciprocal(tr_scalar_in(r, o[i].e, ct), ct) : tr_scalar_in(r, o[i].e, ct),
				  ct);
	rt.dt = ir_ops[op].cls == OC_COMPARE ? DT_B8 : ct;
	v = tr_emit(r, op, args, n, NULL, 0, &rt);
	return wide && rt.dt != DT_B8 ? tr_convert(r, v, t) : v;
}

static uint32_t
elementwise(Reader *r, Op op, const Expr **ex, int n)
{
	Opnd o[3];

	for (int i = 0; i < n; i++)
		o[i] = tr_operand(r, ex[i]);
	return tr_elementwise(r, op, o, n);
}

static uint32_t
prim_binary(Reader *r, const Expr *c, Op op)
{
	const Expr *a[2];

	tr_bind(r, c, P_AB, 2, a);
	return elementwise(r, op, a, 2);
}

static uint32_t
prim_where(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "pred", false }, { "a", false }, { "b", false } };
	const Expr *a[3];

	tr_bind(r, c, ps, 3, a);
	return elementwise(r, OP_WHERE, a, 3);
}

/* convert_element_type(NUMBER, float|int|bool): a Python number, as Python
 * converts it (int() truncates) */
static uint32_t
convert_number(Reader *r, const Expr *num, const Expr *dt)
{
	Opnd o = tr_operand(r, num);
	const char *k = dt->kind == E_NAME ? dt->s : "";
	DType t;
	Type rt = { .dt = DT_F64 };

	if (strcmp(k, "float") && strcmp(k, "int") && strcmp(k, "bool"))
		tr_errat(r, dt->line, dt->col, "%s: a number converts to float, int or bool", r->callee);
	if (o.tensor)
		tr_errat(r, num->line, num->col, "%s: expected a number", r->callee);
	r->num->kind = SYM_NUM;
	r->num->numkind = k[0];
	r->num->val = IR_NONE;
	t = tr_number_dtype(k[0]);
	if (!o.num) {
		double x = number_value(&o);

		r->num->num = k[0] == 'f' ? x : k[0] == 'i' ? trunc(x) : x != 0;
		return IR_NONE;
	}
	rt.dt = t;
	r->num->val = tr_vdtype(r, o.v) == t ? o.v : tr_emit(r, OP_CONVERT, &o.v, 1, NULL, 0, &rt);
	return IR_NONE;
}

/* convert_element_type(a, dtype); to the same dtype: no instruction */
static uint32_t
prim_convert(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "dtype", false } };
	const Expr *a[2];
	uint32_t x;
	DType t;

	tr_bind(r, c, ps, 2, a);
	if (a[0]->kind != E_NAME || tr_lookup(r, a[0])->kind == SYM_NUM)
		return convert_number(r, a[0], a[1]);
	x = tr_tensor(r, a[0]);
	t = tr_dtype_arg(r, a[1]);
	return t == tr_vdtype(r, x) ? x : tr_convert(r, x, t);
}

/* amax(a, dims) and friends: the reduced dims vanish */
static uint32_t
prim_reduce(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "dims", false }, { "output_dtype", true } };
	const Expr *a[3];
	uint32_t x;
	Ints d;
	Type t;

	tr_bind(r, c, ps, 3, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (!tr_isnone(a[2]) && tr_dtype_arg(r, a[2]) != t.dt)
		tr_errat(r, a[2]->line, a[2]->col, "%s: an output_dtype other than the input's is not supported",
			r->callee);
	tr_dims_arg(r, a[1], t.rank, &d);
	tr_drop_dims(&t, &d);
	return tr_emit(r, op, &x, 1, d.v, d.n, &t);
}

/* broadcast_in_dim(a, shape, broadcast_dimensions) */
static uint32_t
prim_broadcast(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "shape", false }, { "broadcast_dimensions", false } };
	const Expr *a[3];
	uint32_t x;
	Ints s, bd;
	Type t;

	tr_bind(r, c, ps, 3, a);
	x = tr_tensor(r, a[0]);
	tr_shape_arg(r, a[1], false, &s);
	tr_ints(r, a[2], "broadcast_dimensions", false, &bd);
	t.dt = tr_vdtype(r, x);
	t.rank = s.n;
	memcpy(t.d, s.v, sizeof t.d);
	return tr_emit(r, OP_BROADCAST, &x, 1, bd.v, bd.n, &t);
}

/* reshape to s; a -1 in s (when `infer`) takes what is left */
static uint32_t
reshape_to(Reader *r, uint32_t x, Ints *s)
{
	int64_t n = ir_numel(r->fn, x), known = 1;
	int at = -1;
	Type t;
	char b1[256], b2[256];

	for (int i = 0; i < s->n; i++) {
		if (s->v[i] == -1 && at >= 0)
			tr_errat(r, s->e[i]->line, s->e[i]->col, "%s: only one dimension can be -1", r->callee);
		if (s->v[i] == -1)
			at = i;
		else
			known *= s->v[i];
	}
	if (at >= 0)
		s->v[at] = known && n % known == 0 ? n / known : -1;
	tr_vtype(r->fn, x, &t);
	tr_tystr(&t, b1, sizeof b1);
	t.rank = s->n;
	memcpy(t.d, s->v, sizeof t.d);
	if ((at >= 0 && s->v[at] < 0) || (at < 0 && known != n))
		tr_errat(r, s->list->line, s->list->col, "%s: cannot reshape %s to %s", r->callee, b1,
			at >= 0 ? "that shape: no size fits the -1" : dims_str(t.d, t.rank, ", ", b2, sizeof b2));
	return tr_emit(r, OP_RESHAPE, &x, 1, NULL, 0, &t);
}

static uint32_t
prim_reshape(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "shape", false } };
	const Expr *a[2];
	Ints s;

	tr_bind(r, c, ps, 2, a);
	tr_shape_arg(r, a[1], false, &s);
	return reshape_to(r, tr_tensor(r, a[0]), &s);
}

/* transpose by permutation p, which must be one of x's dims */
uint32_t
tr_transpose_by(Reader *r, uint32_t x, const Ints *p)
{
	Type src, t;
	bool seen[IR_MAXRANK] = { false };
	char b[256];

	tr_vtype(r->fn, x, &src);
	t = src;
	for (int i = 0; i < p->n || i < src.rank; i++) {
		if (p->n != src.rank || p->v[i] < 0 || p->v[i] >= src.rank || seen[p->v[i]])
			tr_errat(r, p->list->line, p->list->col, "%s: %s is not a permutation of %d dims", r->callee,
				dims_str(p->v, p->n, ", ", b, sizeof b), src.rank);
		seen[p->v[i]] = true;
		t.d[i] = src.d[p->v[i]];
	}
	return tr_emit(r, OP_TRANSPOSE, &x, 1, p->v, p->n, &t);
}

static uint32_t
prim_transpose(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "permutation", false } };
	const Expr *a[2];
	Ints p;

	tr_bind(r, c, ps, 2, a);
	tr_ints(r, a[1], "permutation", false, &p);
	return tr_transpose_by(r, tr_tensor(r, a[0]), &p);
}

static uint32_t
prim_squeeze(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "dims", false } };
	const Expr *a[2];
	uint32_t x;
	Ints d;
	Type t;

	tr_bind(r, c, ps, 2, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	tr_dims_arg(r, a[1], t.rank, &d);
	tr_drop_dims(&t, &d);
	return tr_emit(r, OP_SQUEEZE, &x, 1, d.v, d.n, &t);
}

/* slice_prim(a, start_indices, end_indices, strides=None); attr: starts, ends, strides */
static uint32_t
prim_slice(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "start_indices", false }, { "end_indices", false },
		{ "strides", true } };
	const Expr *a[4];
	int64_t attr[3 * IR_MAXRANK];
	Ints lo, hi, st;
	uint32_t x;
	Type t;

	tr_bind(r, c, ps, 4, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	tr_ints(r, a[1], "start_indices", false, &lo);
	tr_ints(r, a[2], "end_indices", false, &hi);
	st.n = t.rank;
	for (int i = 0; i < t.rank; i++)
		st.v[i] = 1;
	if (!tr_isnone(a[3]))
		tr_ints(r, a[3], "strides", false, &st);
	if (lo.n != t.rank || hi.n != t.rank || st.n != t.rank)
		tr_errat(r, c->line, r->ccol, "%s: needs a start, end and stride for each of %d dims", r->callee,
			t.rank);
	for (int i = 0; i < t.rank; i++) {
		if (lo.v[i] < 0 || hi.v[i] < lo.v[i] || hi.v[i] > t.d[i] || st.v[i] < 1)
			tr_errat(r, c->line, lo.list->col,
				"%s: dim %d: slice [%lld:%lld:%lld] out of range for size %lld", r->callee, i,
				(long long)lo.v[i], (long long)hi.v[i], (long long)st.v[i], (long long)t.d[i]);
		if (st.v[i] > hi.v[i] - lo.v[i]) /* picks the first element at most: same slice */
			st.v[i] = hi.v[i] > lo.v[i] ? hi.v[i] - lo.v[i] : 1;
		t.d[i] = (hi.v[i] - lo.v[i] + st.v[i] - 1) / st.v[i];
		attr[i] = lo.v[i];
		attr[t.rank + i] = hi.v[i];
		attr[2 * t.rank + i] = st.v[i];
	}
	return tr_emit(r, OP_SLICE, &x, 1, attr, 3 * t.rank, &t);
}

/* cat(tensors, dim) */
static uint32_t
prim_cat(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "tensors", false }, { "dim", false } };
	const Expr *a[2];
	uint32_t xs[64];
	int64_t dim;
	Type t, u;

	tr_bind(r, c, ps, 2, a);
	if ((a[0]->kind != E_LIST && a[0]->kind != E_TUPLE) || a[0]->n == 0 || a[0]->n > 64)
		tr_errat(r, a[0]->line, a[0]->col, "%s: expected a list of 1 to 64 tensors", r->callee);
	for (uint32_t i = 0; i < a[0]->n; i++)
		xs[i] = tr_tensor(r, a[0]->elts[i]);
	tr_vtype(r->fn, xs[0], &t);
	dim = tr_norm_dim(r, a[1], tr_int_arg(r, a[1], "dim"), t.rank);
	for (uint32_t i = 1; i < a[0]->n; i++) {
		tr_vtype(r->fn, xs[i], &u);
		if (u.rank != t.rank)
			tr_errat(r, a[0]->elts[i]->line, a[0]->elts[i]->col, "%s: tensors have ranks %d and %d",
				r->callee, t.rank, u.rank);
		t.d[dim] += u.d[dim];
	}
	tr_check_numel(r, c->line, a[0]->col, &t);
	return tr_emit(r, OP_CAT, xs, (int)a[0]->n, &dim, 1, &t);
}

static uint32_t
prim_clone(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a|input", false }, { "memory_format", true } };
	const Expr *a[2];
	uint32_t x;
	Type t;

	tr_bind(r, c, ps, 2, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	return tr_emit(r, OP_CLONE, &x, 1, NULL, 0, &t);
}

/* full(shape, fill_value, *, device, dtype) */
static uint32_t
prim_full(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "shape", false }, { "fill_value", false }, { "device", true },
		{ "dtype", false } };
	const Expr *a[4];
	Ints s;
	Type t;

	tr_bind(r, c, ps, 4, a);
	tr_shape_arg(r, a[0], false, &s);
	if (a[1]->kind != E_INT && a[1]->kind != E_FLOAT && a[1]->kind != E_BOOL)
		tr_errat(r, a[1]->line, a[1]->col, "%s: fill_value must be a number", r->callee);
	t.dt = tr_dtype_arg(r, a[3]);
	t.rank = s.n;
	memcpy(t.d, s.v, sizeof t.d);
	ir_full(r->fn, tr_scalar_in(r, a[1], t.dt), t.dt, t.rank, t.d);
	tr_check_last(r);
	return r->fn->ins[r->fn->nins - 1].res;
}

/* flip(a, dims) */
static uint32_t
prim_flip(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "dims", false } };
	const Expr *a[2];
	uint32_t x;
	Ints d;
	Type t;

	tr_bind(r, c, ps, 2, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	tr_dims_arg(r, a[1], t.rank, &d);
	return tr_emit(r, OP_FLIP, &x, 1, d.v, d.n, &t);
}

/* take(a, index, dim), gather(a, index, dim), take_along_axis(a, index, dim) */
static uint32_t
prim_gather(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "index|indices", false }, { "dim", false } };
	const Expr *a[3];
	uint32_t x[2];
	int64_t dim;
	Type t, it;

	tr_bind(r, c, ps, 3, a);
	x[0] = tr_tensor(r, a[0]);
	x[1] = tr_tensor(r, a[1]);
	tr_vtype(r->fn, x[0], &t);
	tr_vtype(r->fn, x[1], &it);
	dim = tr_norm_dim(r, a[2], tr_int_arg(r, a[2], "dim"), t.rank);
	if (!dt_isint(it.dt))
		tr_errat(r, a[1]->line, a[1]->col, "%s: indices must be integers, not %s", r->callee,
			ir_dtypes[it.dt].thunder);
	if (op == OP_TAKE) {
		if (it.rank > 1)
			tr_errat(r, a[1]->line, a[1]->col, "%s: indices must have rank 0 or 1", r->callee);
		t.d[dim] = it.rank ? it.d[0] : 1;
	} else {
		if (it.rank != t.rank)
			tr_errat(r, a[1]->line, a[1]->col, "%s: indices must have rank %d", r->callee, t.rank);
		memcpy(t.d, it.d, sizeof t.d);
	}
	return tr_emit(r, op, x, 2, &dim, 1, &t);
}

/* iota(length, *, start, step, device, dtype): start, start + step, ... */
static uint32_t
prim_iota(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "length", false }, { "start", false }, { "step", false }, { "device", true },
		{ "dtype", false } };
	const Expr *a[5];
	int64_t attr[2];
	Type t = { .dt = DT_I64, .rank = 1 };

	tr_bind(r, c, ps, 5, a);
	t.d[0] = tr_int_arg(r, a[0], "length");
	attr[0] = tr_int_arg(r, a[1], "start");
	attr[1] = tr_int_arg(r, a[2], "step");
	t.dt = tr_dtype_arg(r, a[4]);
	if (t.d[0] <= 0)
		tr_errat(r, a[0]->line, a[0]->col, "%s: length must be positive", r->callee);
	if (!dt_isint(t.dt))
		tr_errat(r, a[4]->line, a[4]->col, "%s: dtype must be an integer type", r->callee);
	tr_check_numel(r, c->line, r->ccol, &t);
	return tr_emit(r, OP_IOTA, NULL, 0, attr, 2, &t);
}

/* pad(a, padding_value, padding_config): ((lo, hi, interior), ...) per dim */
static uint32_t
prim_pad(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "padding_value", false }, { "padding_config", false } };
	const Expr *a[3];
	int64_t attr[3 * IR_MAXRANK];
	uint32_t x[2];
	Opnd v;
	Type t;

	tr_bind(r, c, ps, 3, a);
	x[0] = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x[0], &t);
	v = tr_operand(r, a[1]);
	if (v.tensor)
		tr_errat(r, a[1]->line, a[1]->col, "%s: padding_value must be a number", r->callee);
	x[1] = v.num ? runtime_scalar(r, &v, t.dt, false) : tr_konst(r, tr_scalar_in(r, v.e, t.dt), t.dt);
	if ((a[2]->kind != E_TUPLE && a[2]->kind != E_LIST) || (int)a[2]->n != t.rank)
		tr_errat(r, a[2]->line, a[2]->col, "%s: padding_config needs (lo, hi, interior) for each of %d dims",
			r->callee, t.rank);
	for (int i = 0; i < t.rank; i++) {
		Ints p;

		tr_ints(r, a[2]->elts[i], "padding_config", false, &p);
		if (p.n != 3 || p.v[2] < 0)
			tr_errat(r, a[2]->elts[i]->line, a[2]->elts[i]->col,
				"%s: expected (lo, hi, interior) with interior >= 0", r->callee);
		attr[i] = p.v[0];
		attr[t.rank + i] = p.v[1];
		attr[2 * t.rank + i] = p.v[2];
		t.d[i] = t.d[i] + (t.d[i] > 0 ? (t.d[i] - 1) * p.v[2] : 0) + p.v[0] + p.v[1];
		if (t.d[i] < 0)
			tr_errat(r, a[2]->elts[i]->line, a[2]->elts[i]->col, "%s: dim %d would have a negative size",
				r->callee, i);
	}
	tr_check_numel(r, c->line, r->ccol, &t);
	return tr_emit(r, OP_PAD, x, 2, attr, 3 * t.rank, &t);
}

/* the same bits as dtype t (of the same width) */
static uint32_t
bitcast_to(Reader *r, uint32_t x, DType to, const Expr *at)
{
	Type t;

	tr_vtype(r->fn, x, &t);
	if (to == t.dt)
		return x;
	if (t.dt == DT_B8 || to == DT_B8 || ir_dtypes[t.dt].bits != ir_dtypes[to].bits)
		tr_errat(r, at->line, at->col, "%s: viewing %s as %s changes the element width, which is not supported",
			r->callee, ir_dtypes[t.dt].thunder, ir_dtypes[to].thunder);
	t.dt = to;
	return tr_emit(r, OP_BITCAST, &x, 1, NULL, 0, &t);
}

static uint32_t
prim_bitcast(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "src", false }, { "dtype", false } };
	const Expr *a[2];

	tr_bind(r, c, ps, 2, a);
	return bitcast_to(r, tr_tensor(r, a[0]), tr_dtype_arg(r, a[1]), a[1]);
}

static uint32_t
lower_prim(Reader *r, const Expr *c, Op op)
{
	switch (ir_ops[op].cls) {
	case OC_CONVERT: return prim_convert(r, c);
	case OC_UNARY:   return prim_unary(r, c, op);
	case OC_BINARY:
	case OC_COMPARE: return prim_binary(r, c, op);
	case OC_WHERE:   return prim_where(r, c);
	case OC_REDUCE:  return prim_reduce(r, c, op);
	case OC_CAT:     return prim_cat(r, c);
	case OC_CLONE:   return prim_clone(r, c);
	case OC_FULL:    return prim_full(r, c);
	case OC_SHAPE:
		switch (op) {
		case OP_BROADCAST: return prim_broadcast(r, c);
		case OP_RESHAPE:   return prim_reshape(r, c);
		case OP_TRANSPOSE: return prim_transpose(r, c);
		case OP_SQUEEZE:   return prim_squeeze(r, c);
		case OP_SLICE:     return prim_slice(r, c);
		case OP_FLIP:      return prim_flip(r, c);
		default:           break;
		}
		break;
	case OC_GATHER:     return prim_gather(r, c, op);
	case OC_IOTA:       return prim_iota(r, c);
	case OC_PAD:        return prim_pad(r, c);
	case OC_BITCAST:    return prim_bitcast(r, c);
	case OC_FMA:
	case OC_GEMM:
	case OC_EXTERN:
	case OC_AUX:
	case OC_COLLECTIVE: /* no prims spelling */ break;
	}
	unreachable();
}

/* ---- prims that are another prim or nothing here ---- */

/* the tensor itself: prims.stride_order and device_put, and
 * Tensor.contiguous (the IR's values are dense) */
uint32_t
tr_lower_identity(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|input", false }, { "order|device|memory_format", true } };
	const Expr *a[2];

	(void)op;
	tr_bind(r, c, ps, 2, a);
	return tr_tensor(r, a[0]);
}

static uint32_t
lower_as_prim(Reader *r, const Expr *c, Op op)
{
	return lower_prim(r, c, op);
}

/* empty(shape, *, device, dtype): any values will do; zeros */
static uint32_t
lower_empty(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "shape", false }, { "device", true }, { "dtype", false } };
	const Expr *a[3];
	Ints s;
	Type t;

	(void)op;
	tr_bind(r, c, ps, 3, a);
	tr_shape_arg(r, a[0], false, &s);
	t.dt = tr_dtype_arg(r, a[2]);
	t.rank = s.n;
	memcpy(t.d, s.v, sizeof t.d);
	ir_full(r->fn, 0, t.dt, t.rank, t.d);
	tr_check_last(r);
	return r->fn->ins[r->fn->nins - 1].res;
}

/* item(a): the one element of a tensor as a Python number known at run time */
static uint32_t
lower_item(Reader *r, const Expr *c, Op op)
{
	const Expr *a[1];
	uint32_t x;
	Type t;
	char k;

	(void)op;
	tr_bind(r, c, P_A, 1, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (ir_numel(r->fn, x) != 1)
		tr_errat(r, a[0]->line, a[0]->col, "%s: the tensor has %lld elements, not one", r->callee,
			(long long)ir_numel(r->fn, x));
	k = dt_isfloat(t.dt) || dt_isfp8(t.dt) ? 'f' : t.dt == DT_B8 ? 'b' : 'i';
	if (t.rank > 0) {
		Ints none = { 0 };

		x = reshape_to(r, x, &none);
	}
	r->num->kind = SYM_NUM;
	r->num->numkind = k;
	r->num->val = tr_vdtype(r, x) == tr_number_dtype(k) ? x : tr_convert(r, x, tr_number_dtype(k));
	return IR_NONE;
}

/* ---- torch-level callees ---- */

/* Tensor.to(x, [device], [dtype], copy=False, dtype=..., ...): a dtype change
 * converts; anything else is the tensor itself (or a clone with copy=True) */
static uint32_t
lower_to(Reader *r, const Expr *c, Op op)
{
	uint32_t x = 0;
	int dt = -1;
	bool copy = false;
	Type t;

	(void)op;
	if (c->nargs == 0 || c->args[0].kw)
		tr_errat(r, c->line, r->ccol, "%s needs a tensor", r->callee);
	x = tr_tensor(r, c->args[0].e);
	for (uint32_t k = 1; k < c->nargs; k++) {
		const Arg *a = &c->args[k];
		const char *kw = a->kw ? a->kw : "";

		if (strcmp(kw, "dtype") == 0 || (!a->kw && a->e->kind == E_NAME && strchr(a->e->s, '.')))
			dt = tr_isnone(a->e) ? dt : (int)tr_dtype_arg(r, a->e);
		else if (!a->kw && a->e->kind == E_NAME)
			dt = tr_vdtype(r, tr_tensor(r, a->e));
		else if (strcmp(kw, "copy") == 0)
			copy = tr_bool_arg(r, a->e, false);
		else if (a->kw && strcmp(kw, "device") && strcmp(kw, "non_blocking") && strcmp(kw, "memory_format"))
			tr_errat(r, c->line, a->kwcol, "%s got an unexpected keyword argument '%s'", r->callee, kw);
		else if (!a->kw && a->e->kind != E_STR && a->e->kind != E_NONE && a->e->kind != E_BOOL)
			tr_errat(r, a->e->line, a->e->col, "%s: expected a dtype, a device or a tensor", r->callee);
	}
	if (dt >= 0 && (DType)dt != tr_vdtype(r, x))
		return tr_convert(r, x, (DType)dt);
	if (!copy)
		return x;
	tr_vtype(r->fn, x, &t);
	return tr_emit(r, OP_CLONE, &x, 1, NULL, 0, &t);
}

/* Tensor.view(x, shape), Tensor.view(x, d0, d1, ...) or Tensor.view(x, dtype) */
static uint32_t
lower_view(Reader *r, const Expr *c, Op op)
{
	Expr list;
	const Expr *e;
	Ints s;

	(void)op;
	if (c->nargs < 2 || c->args[0].kw)
		tr_errat(r, c->line, r->ccol, "%s takes a tensor and a shape", r->callee);
	e = tr_rest_args(r, c, 1, &list);
	if (c->nargs == 2 && c->args[1].e->kind == E_NAME &&
		(!strncmp(c->args[1].e->s, "torch.", 6) ||
			!strncmp(c->args[1].e->s, "dtypes.", 7))) /* view(x, dtype): the same bits */
		return bitcast_to(r, tr_tensor(r, c->args[0].e), tr_dtype_arg(r, c->args[1].e), c->args[1].e);
	tr_shape_arg(r, e, true, &s);
	if (e == &list)
		s.list = c->args[1].e;
	return reshape_to(r, tr_tensor(r, c->args[0].e), &s);
}

static uint32_t
lower_treshape(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|input", false }, { "shape", false } };
	const Expr *a[2];
	Ints s;

	(void)op;
	tr_bind(r, c, ps, 2, a);
	tr_shape_arg(r, a[1], true, &s);
	return reshape_to(r, tr_tensor(r, a[0]), &s);
}

/* torch.transpose(x, dim0, dim1): swap two dims */
static uint32_t
lower_ttranspose(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|input", false }, { "dim0", false }, { "dim1", false } };
	const Expr *a[3];
	uint32_t x;
	int64_t d0, d1;
	Ints p;
	int rank;

	(void)op;
	tr_bind(r, c, ps, 3, a);
	x = tr_tensor(r, a[0]);
	rank = r->fn->vals[x].rank;
	d0 = tr_norm_dim(r, a[1], tr_int_arg(r, a[1], "dim0"), rank);
	d1 = tr_norm_dim(r, a[2], tr_int_arg(r, a[2], "dim1"), rank);
	p.n = rank;
	p.list = a[1];
	for (int i = 0; i < rank; i++)
		p.v[i] = i == d0 ? d1 : i == d1 ? d0 : i;
	return tr_transpose_by(r, x, &p);
}

static uint32_t
lower_tclone(Reader *r, const Expr *c, Op op)
{
	(void)op;
	return prim_clone(r, c);
}

/* torch._scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None,
 * out_dtype=None, use_fast_accum=False): a (M,K) fp8, b (K,N) fp8, scales
 * f32[]; the result is (M,N) in out_dtype */
static uint32_t
lower_scaled_mm(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|self|input", false }, { "b|mat2", false }, { "scale_a", false },
		{ "scale_b", false }, { "bias", true }, { "scale_result", true }, { "out_dtype", true },
		{ "use_fast_accum", true } };
	const Expr *a[8];
	uint32_t args[5], v;
	int n = 4;
	Type t;

	(void)op;
	tr_bind(r, c, ps, 8, a);
	for (int i = 0; i < 4; i++)
		args[i] = tr_tensor(r, a[i]);
	if (!tr_isnone(a[4]))
		args[n++] = tr_tensor(r, a[4]);
	if (!tr_isnone(a[5]))
		tr_errat(r, a[5]->line, a[5]->col, "%s: scale_result is not supported", r->callee);
	for (int i = 0; i < 2; i++)
		if (r->fn->vals[args[i]].rank != 2)
			tr_errat(r, a[i]->line, a[i]->col, "%s: operands must be 2-d matrices", r->callee);
	t.dt = tr_isnone(a[6]) ? tr_vdtype(r, args[0]) : tr_dtype_arg(r, a[6]);
	t.rank = 2;
	t.d[0] = ir_dims(r->fn, args[0])[0];
	t.d[1] = ir_dims(r->fn, args[1])[1];
	tr_check_numel(r, c->line, r->ccol, &t);
	v = tr_emit(r, OP_SCALED_MM, args, n, NULL, 0, &t);
	if (tr_bool_arg(r, a[7], false))
		r->fn->ins[r->fn->nins - 1].flags |= IF_FAST_ACCUM;
	return v;
}

/* offload_to_cpu(x), load_to_gpu(x, device): Thunder's CPU offloading moves
 * saved tensors to the host between forward and backward; fp8cc's saved
 * state lives in device memory, so the tensor stays where it is (said once,
 * as a note, and the "cpu" type of the offloaded value is not a CPU trace) */
static uint32_t
lower_offload(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "t|tensor", false }, { "device", true } };
	const Expr *a[2];

	(void)op;
	tr_bind(r, c, ps, 2, a);
	r->cpu_noted = true;
	if (!r->offload_noted) {
		r->offload_noted = true;
		tr_note(r, c->line, r->ccol,
			"%s: fp8cc keeps offloaded tensors on the GPU (its saved state "
			"lives in device memory)",
			r->callee);
	}
	return tr_tensor(r, a[0]);
}

/* shallow_copy(x): the same tensor under a new name */
static uint32_t
lower_shallow(Reader *r, const Expr *c, Op op)
{
	const Expr *a[1];

	(void)op;
	tr_bind(r, c, P_A, 1, a);
	return tr_tensor(r, a[0]);
}

/* ---- collectives: Thunder's FSDP and DDP (docs/design.md, "Collectives") ---- */

/* the reduction a collective's op argument names: DistributedReduceOps.SUM
 * and its kin by name; the name Thunder prints for the enum object
 * (_DistributedReduceOps_0: a counter, not the value) as SUM, the one its
 * DDP and FSDP transforms pass, which a note says once */
static int64_t
reduce_op(Reader *r, const Expr *e)
{
	static const char *const names[RED_COUNT] = { "SUM", "AVG", "PRODUCT", "MIN", "MAX" };
	const char *s = e->kind == E_NAME ? e->s : "", *dot = strrchr(s, '.');

	if (strstr(s, "DistributedReduceOps") && dot) {
		for (int i = 0; i < RED_COUNT; i++)
			if (!strcmp(dot + 1, names[i]))
				return i;
	} else if (strstr(s, "DistributedReduceOps")) {
		if (!r->redop_noted)
			tr_note(r, e->line, e->col,
				"%s: the trace names the reduction '%s', not its value; fp8cc takes SUM, "
				"what Thunder's DDP and FSDP pass",
				r->callee, s);
		r->redop_noted = true;
		return RED_SUM;
	}
	tr_errat(r, e->line, e->col, "%s: the reduction must be DistributedReduceOps.SUM, AVG, PRODUCT, MIN or MAX",
		r->callee);
}

/* the result type of a collective that changes the shape, from the
 * statement's type comment (it says how many ranks there are); a's shape
 * with dim (None: 0) times ranks (gather) or divided by them (scatter) */
static int64_t
collective_type(Reader *r, uint32_t x, const Expr *dim, bool gather, Type *t)
{
	Type ax;
	uint32_t dtcol, shcol;
	int64_t d = 0, n = ir_numel(r->fn, x), m, ranks;
	char b1[64], b2[64];

	if (!r->cur->ty.present)
		tr_errat(r, r->cur->line, r->ccol,
			"%s: the result's type comment says how many ranks there are; this call has none", r->callee);
	tr_parse_type(r, r->cur->line, &r->cur->ty, t, &dtcol, &shcol);
	tr_vtype(r->fn, x, &ax);
	if (ax.rank == 0)
		tr_errat(r, r->cur->line, r->ccol, "%s: the operand must have a dimension", r->callee);
	if (!tr_isnone(dim))
		d = tr_norm_dim(r, dim, tr_int_arg(r, dim, "dim"), ax.rank);
	m = 1;
	for (int i = 0; i < t->rank; i++)
		m *= t->d[i];
	ranks = gather ? (n ? m / n : 0) : (m ? n / m : 0);
	Type want = ax;
	if (ranks >= 1)
		want.d[d] = gather ? ax.d[d] * ranks : ax.d[d] / ranks;
	if (ranks < 1 || (gather ? m != n * ranks : n != m * ranks) || !tr_same_shape(&want, t) || t->dt != ax.dt)
		tr_errat(r, r->cur->line, shcol, "%s: %s over ranks along dim %lld cannot give %s", r->callee,
			tr_tystr(&ax, b1, sizeof b1), (long long)d, tr_tystr(t, b2, sizeof b2));
	return ranks;
}

/* a collective's result as the call gives it: in flight (a FUTURE, read
 * through a wait the trace has) when do_async is True, as Thunder's FSDP
 * and DDP pass; the tensor itself, waited for here, when it is False */
static uint32_t
collective_result(Reader *r, const Expr *do_async, uint32_t v)
{
	Type t;

	if (tr_bool_arg(r, do_async, true))
		return v;
	tr_vtype(r->fn, v, &t);
	return tr_emit(r, OP_WAIT, &v, 1, NULL, 0, &t);
}

/* torch_all_gather_prim_impl(a, group, do_async, dim=None), prims.all_gather */
static uint32_t
lower_all_gather(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "group", false }, { "do_async", true }, { "dim", true } };
	const Expr *a[4];
	uint32_t x;
	int64_t ranks;
	Type t;

	(void)op;
	tr_bind(r, c, ps, 4, a);
	x = tr_tensor(r, a[0]);
	ranks = collective_type(r, x, a[3], true, &t);
	return collective_result(r, a[2], tr_emit(r, OP_ALL_GATHER, &x, 1, &ranks, 1, &t));
}

/* torch_reduce_scatter_prim_impl(a, op, group, do_async, dim=None),
 * prims.reduce_scatter; torch_all_reduce_prim_impl(a, op, group, do_async,
 * skip_clone=False), prims.all_reduce: over however many ranks the
 * communicator has */
static uint32_t
lower_reduction(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "op", false }, { "group", false }, { "do_async", true },
		{ "dim|skip_clone", true } };
	const Expr *a[5];
	uint32_t x;
	int64_t at[2] = { 0, 0 };
	Type t;

	tr_bind(r, c, ps, 5, a);
	x = tr_tensor(r, a[0]);
	at[0] = reduce_op(r, a[1]);
	if (op == OP_REDUCE_SCATTER)
		at[1] = collective_type(r, x, a[4], false, &t);
	else
		tr_vtype(r->fn, x, &t);
	return collective_result(r, a[3], tr_emit(r, op, &x, 1, at, 2, &t));
}

/* torch_broadcast_prim_impl(a, root, group, do_async), prims.broadcast:
 * rank root's a on every rank (root a rank of the communicator) */
static uint32_t
lower_broadcast(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "root", false }, { "group", false }, { "do_async", true } };
	const Expr *a[4];
	uint32_t x;
	int64_t at[2] = { 0, 0 };
	Type t;

	(void)op;
	tr_bind(r, c, ps, 4, a);
	x = tr_tensor(r, a[0]);
	at[0] = tr_int_arg(r, a[1], "root");
	if (at[0] < 0 || at[0] >= 1 << 20)
		tr_errat(r, a[1]->line, a[1]->col, "%s: root %lld is no rank", r->callee, (long long)at[0]);
	tr_vtype(r->fn, x, &t);
	return collective_result(r, a[3], tr_emit(r, OP_BCAST, &x, 1, at, 2, &t));
}

/* torch_wait_prim_impl(a), prims.wait: a collective's result */
static uint32_t
lower_wait(Reader *r, const Expr *c, Op op)
{
	const Expr *a[1];
	const Instr *d;
	uint32_t x;
	Type t;

	(void)op;
	tr_bind(r, c, P_A, 1, a);
	x = tr_tensor(r, a[0]);
	d = ir_def(r->fn, x);
	if (!d || !op_collective((Op)d->op))
		tr_errat(r, a[0]->line, a[0]->col, "%s: '%s' is not a collective's result", r->callee, a[0]->s);
	for (uint32_t i = r->fn->vals[x].def + 1; i < r->fn->nins; i++) /* waited for again: that result */
		if (r->fn->ins[i].op == OP_WAIT && ir_args(r->fn, &r->fn->ins[i])[0] == x)
			return r->fn->ins[i].res;
	tr_vtype(r->fn, x, &t);
	return tr_emit(r, OP_WAIT, &x, 1, NULL, 0, &t);
}

/* prims.synchronize(a, group, distparallel_type) (older: without the
 * type): a parameter made whole
 * before a layer reads it — FSDP's sharded one gathered (an all_gather and
 * its wait), DDP's replicated one as it is (the forward does nothing; the
 * backward's all-reduce is in the backward trace). Thunder prints the type
 * as an object's name (_DistParallelType_0), not its value: the type
 * comment tells which, a's shape (replicated) or dim 0 times the ranks */
static uint32_t
lower_synchronize(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "group", false }, { "distparallel_type", true } };
	const Expr *a[3];
	uint32_t x, g;
	uint32_t dtcol, shcol;
	int64_t ranks;
	Type t, ax;

	(void)op;
	tr_bind(r, c, ps, 3, a);
	x = tr_tensor(r, a[0]);
	if (r->cur->ty.present) {
		tr_parse_type(r, r->cur->line, &r->cur->ty, &t, &dtcol, &shcol);
		tr_vtype(r->fn, x, &ax);
		if (tr_same_shape(&ax, &t) && t.dt == ax.dt)
			return x;
	}
	ranks = collective_type(r, x, NULL, true, &t);
	g = tr_emit(r, OP_ALL_GATHER, &x, 1, &ranks, 1, &t);
	return tr_emit(r, OP_WAIT, &g, 1, NULL, 0, &t);
}

/* copy_(copy_from, copy_to, *, grad_enabled): copy_to takes copy_from's
 * values in place. The trace's name for copy_to stands for them from here
 * on, as the tensor would after torch's copy_; and where copy_to is an input
 * (or a name that stands for one since an earlier copy_), the program
 * returns the values as an output of its own, NAME_updated, which the
 * application copies into the input (docs/ir.md, "Thunder's prims") */
static uint32_t
lower_copy(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "copy_from", false }, { "copy_to", false }, { "grad_enabled", true } };
	const Expr *a[3];
	uint32_t from, to;
	Type ft, tt;
	char b1[64], b2[64];

	(void)op;
	tr_bind(r, c, ps, 3, a);
	from = tr_tensor(r, a[0]);
	to = tr_tensor(r, a[1]);
	tr_vtype(r->fn, from, &ft);
	tr_vtype(r->fn, to, &tt);
	if (!tr_same_shape(&ft, &tt) || ft.dt != tt.dt)
		tr_errat(r, a[0]->line, a[0]->col, "%s: copies a %s into a %s: the shapes and dtypes must be the same",
			r->callee, tr_tystr(&ft, b1, sizeof b1), tr_tystr(&tt, b2, sizeof b2));
	tr_update(r, to, from, tr_name_of(a[1]));
	if (tr_name_of(a[1]))
		tr_define_val(r, a[1]->s, from);
	return from;
}

/* update_aliases(aliases): the tensors themselves — Thunder marks where
 * views of a tensor updated in place are read again; in fp8cc's values a
 * view is a value of its own, already current */
static uint32_t
lower_update_aliases(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "aliases", false } };
	const Expr *a[1];

	(void)op;
	tr_bind(r, c, ps, 1, a);
	if ((a[0]->kind != E_TUPLE && a[0]->kind != E_LIST) || a[0]->n == 0 || a[0]->n > NELEM(r->multi))
		tr_errat(r, a[0]->line, a[0]->col, "%s: expected a tuple of 1 to %zu tensors", r->callee,
			NELEM(r->multi));
	for (uint32_t i = 0; i < a[0]->n; i++)
		r->multi[i] = tr_tensor(r, a[0]->elts[i]);
	r->nmulti = (int)a[0]->n;
	return r->multi[0];
}

static const struct {
	const char *name;
	Lower fn;
	Op op;
} known[] = {
	{ "prims.stride_order", tr_lower_identity, OP_COUNT },
	{ "prims.device_put", tr_lower_identity, OP_COUNT },
	{ "prims.view", lower_treshape, OP_COUNT },
	{ "prims.empty", lower_empty, OP_COUNT },
	{ "prims.item", lower_item, OP_COUNT },
	{ "prims.take_along_axis", lower_as_prim, OP_GATHER },
	{ "torch_slice_prim_impl", lower_as_prim, OP_SLICE },
	{ "prims.py_abs", lower_as_prim, OP_ABS },
	{ "ltorch.to", lower_to, OP_COUNT },
	{ "prims.var_mean", tr_lower_var_mean, OP_COUNT },
	{ "prims.var", tr_lower_var, OP_COUNT },
	{ "prims.std", tr_lower_var, OP_SQRT },
	{ "prims.argmax", tr_lower_argmax, OP_AMAX },
	{ "prims.argmin", tr_lower_argmax, OP_AMIN },
	{ "prims.index_copy", tr_lower_index_copy, OP_COUNT },
	{ "torch.index_copy", tr_lower_index_copy, OP_COUNT },
	{ "prims.unfold", tr_lower_unfold, OP_COUNT },
	{ "prims.topk", tr_lower_topk, OP_COUNT },
	{ "torch.topk", tr_lower_topk, OP_COUNT },
	{ "prims.sort", tr_lower_sort, OP_COUNT },
	{ "torch.sort", tr_lower_sort, OP_COUNT },
	{ "torch.argsort", tr_lower_sort, OP_COUNT },
	{ "prims.copy_with_setitem", tr_lower_setitem, OP_COUNT },
	{ "copy_with_setitem_impl", tr_lower_setitem, OP_COUNT },
	{ "prims.lerp", tr_lower_lerp, OP_COUNT },
	{ "torch.lerp", tr_lower_lerp, OP_COUNT },
	{ "prims.scatter", tr_lower_scatter, OP_WHERE },
	{ "prims.scatter_add", tr_lower_scatter, OP_ADD },
	{ "torch.scatter", tr_lower_scatter, OP_WHERE },
	{ "torch.scatter_add", tr_lower_scatter, OP_ADD },
	{ "prims.index_add", tr_lower_index_add, OP_COUNT },
	{ "torch.index_add", tr_lower_index_add, OP_COUNT },
	{ "prims.index_put", tr_lower_index_put, OP_COUNT },
	{ "prims.batch_norm", tr_lower_batch_norm, OP_COUNT },
	{ "prims.embedding", tr_lower_embedding, OP_COUNT },
	{ "ltorch.embedding", tr_lower_embedding, OP_COUNT },
	{ "torch.nn.functional.embedding", tr_lower_embedding, OP_COUNT },
	{ "prims.embedding_backward", tr_lower_embedding_backward, OP_COUNT },
	{ "prims.linear", tr_lower_linear, OP_COUNT },
	{ "ltorch.linear", tr_lower_linear, OP_COUNT },
	{ "torch.nn.functional.linear", tr_lower_linear, OP_COUNT },
	{ "prims.matmul", tr_lower_matmul, OP_COUNT },
	{ "ltorch.matmul", tr_lower_matmul, OP_COUNT },
	{ "torch.matmul", tr_lower_matmul, OP_COUNT },
	{ "Tensor.to", lower_to, OP_COUNT },
	{ "Tensor.view", lower_view, OP_COUNT },
	{ "ltorch.view", lower_view, OP_COUNT },
	{ "torch.reshape", lower_treshape, OP_COUNT },
	{ "torch.transpose", lower_ttranspose, OP_COUNT },
	{ "torch.clone", lower_tclone, OP_COUNT },
	{ "torch._scaled_mm", lower_scaled_mm, OP_COUNT },
	{ "shallow_copy", lower_shallow, OP_COUNT },
	{ "offload_to_cpu", lower_offload, OP_COUNT },
	{ "get_dtensor_inner_tensor", tr_lower_dtensor_inner, OP_COUNT },
	{ "thunder.torch.experimental.dtensor_prims_and_impl.get_dtensor_inner_tensor", tr_lower_dtensor_inner,
		OP_COUNT },
	{ "construct_dtensor", tr_lower_construct_dtensor, OP_COUNT },
	{ "thunder.torch.experimental.dtensor_prims_and_impl.construct_dtensor", tr_lower_construct_dtensor, OP_COUNT },
	{ "load_to_gpu", lower_offload, OP_COUNT },
	{ "torch_all_gather_prim_impl", lower_all_gather, OP_COUNT },
	{ "prims.all_gather", lower_all_gather, OP_COUNT },
	{ "torch_reduce_scatter_prim_impl", lower_reduction, OP_REDUCE_SCATTER },
	{ "prims.reduce_scatter", lower_reduction, OP_REDUCE_SCATTER },
	{ "torch_all_reduce_prim_impl", lower_reduction, OP_ALL_REDUCE },
	{ "prims.all_reduce", lower_reduction, OP_ALL_REDUCE },
	{ "torch_broadcast_prim_impl", lower_broadcast, OP_COUNT },
	{ "prims.broadcast", lower_broadcast, OP_COUNT },
	{ "torch_wait_prim_impl", lower_wait, OP_COUNT },
	{ "prims.wait", lower_wait, OP_COUNT },
	{ "prims.synchronize", lower_synchronize, OP_COUNT },
	{ "prims.copy_", lower_copy, OP_COUNT },
	{ "copy_", lower_copy, OP_COUNT },
	{ "prims.update_aliases", lower_update_aliases, OP_COUNT },
	{ "update_aliases", lower_update_aliases, OP_COUNT },
};

/* the lowering of a callee, NULL if the reader does not know it. The
 * distributed prims are prims.* here, as Thunder prints them now; older
 * traces name their module (thunder.distributed.prims.all_gather). */
Lower
tr_find_known(const char *name, Op *op)
{
	static const char dist[] = "thunder.distributed.";

	if (strncmp(name, dist, sizeof dist - 1) == 0 && strncmp(name + sizeof dist - 1, "prims.", 6) == 0)
		name += sizeof dist - 1;
	for (size_t i = 0; i < NELEM(known); i++)
		if (strcmp(known[i].name, name) == 0) {
			*op = known[i].op;
			return known[i].fn;
		}
	if (strncmp(name, "prims.", 6) == 0)
		for (int i = 0; i < OP_COUNT; i++)
			if (ir_ops[i].prim[0] && strcmp(ir_ops[i].prim, name + 6) == 0) {
				*op = (Op)i;
				return lower_prim;
			}
	return NULL;
}

/* ---- callees fp8cc knows of but cannot lower yet ---- */

enum { U_GEMM, U_RANDOM, U_RNG_STATE, U_CONV, U_SPECIAL, U_COMPLEX, U_NUMBERS, U_PROLOGUE, U_NOT_YET };

static const char *const why[] = {
	[U_GEMM] = "'%s' (a grouped GEMM) is not supported yet",
	[U_RANDOM] = "'%s' draws random numbers: fp8cc cannot reproduce torch's generator, so it is not supported",
	[U_RNG_STATE] = "'%s' reads or sets the state of torch's random number generator, for random numbers "
			"fp8cc cannot reproduce, so it is not supported",
	[U_CONV] = "'%s' (a convolution) is not supported",
	[U_SPECIAL] = "'%s' is not supported yet: fp8cc has no implementation that gives PyTorch's bits",
	[U_COMPLEX] = "'%s' works on complex numbers, and fp8cc has no complex dtypes",
	[U_NUMBERS] = "'%s' (on Python numbers) is not supported yet",
	/* one message in two literals: the parentheses say so to clang's -Wstring-concatenation */
	[U_PROLOGUE] = ("'%s' belongs in Thunder's prologue trace, which checks the inputs; fp8cc compiles the "
			"computation trace"),
	[U_NOT_YET] = "'%s' is not supported yet",
};

/* exact names, or prefixes ending in '_' (the prologue's families) */
static const struct {
	const char *name;
	int why;
} unsupported[] = {
	{ "prims._grouped_mm", U_GEMM },
	{ "prims.convolution", U_CONV },
	{ "prims.uniform", U_RANDOM },
	{ "prims.uniform_philox", U_RANDOM },
	{ "prims.randn", U_RANDOM },
	{ "prims.randint", U_RANDOM },
	{ "prims.multinomial", U_RANDOM },
	{ "prims.get_and_update_rng_state", U_RANDOM },
	{ "prims.get_rng_state", U_RNG_STATE }, /* before the prologue's prefixes: prims.pack_, prims.unpack_ */
	{ "prims.set_rng_state", U_RNG_STATE },
	{ "prims.pack_rng_state", U_RNG_STATE },
	{ "prims.unpack_rng_state", U_RNG_STATE },
	{ "get_rng_state_prim_impl", U_RNG_STATE },
	{ "set_rng_state_prim_impl", U_RNG_STATE },
	{ "pack_rng_state_prim_impl", U_RNG_STATE },
	{ "unpack_rng_state_prim_impl", U_RNG_STATE },
	{ "torch.rand", U_RANDOM },
	{ "torch.randn", U_RANDOM },
	{ "torch.randint", U_RANDOM },
	{ "torch.nn.functional.dropout", U_RANDOM },
	{ "ltorch.dropout", U_RANDOM },
	{ "prims.digamma", U_SPECIAL },
	{ "prims.zeta", U_SPECIAL },
	{ "prims.ndtri", U_SPECIAL },
	{ "prims.erfcinv", U_SPECIAL },
	{ "prims.real", U_COMPLEX },
	{ "prims.imag", U_COMPLEX },
	{ "prims.py_floordiv", U_NUMBERS },
	{ "prims.check_", U_PROLOGUE },
	{ "prims.unpack_", U_PROLOGUE },
	{ "prims.pack_", U_PROLOGUE },
	{ "prims.assert_", U_PROLOGUE },
	{ "prims.construct_tuple", U_PROLOGUE },
	{ "prims.python_vars", U_PROLOGUE },
	{ "prims.get_grad", U_PROLOGUE },
	{ "prims.put_grad", U_PROLOGUE },
	{ "prims.frexp", U_NOT_YET },
	{ "prims.shape", U_NOT_YET },
	{ "prims.tensor_from_sequence", U_NOT_YET },
	{ "prims.exogenous_like", U_NOT_YET },
	{ "prims.numpy_array_to_torch_tensor", U_NOT_YET },
	{ "prims.sink", U_NOT_YET },
};

/* the message (one %s: the callee) for a callee without subsymbols that
 * fp8cc knows of but cannot lower; NULL for one it does not know at all */
const char *
tr_unsupported_why(const char *callee)
{
	for (size_t i = 0; i < NELEM(unsupported); i++) {
		const char *n = unsupported[i].name;
		size_t len = strlen(n);

		if (n[len - 1] == '_' ? !strncmp(n, callee, len) : !strcmp(n, callee))
			return why[unsupported[i].why];
	}
	return NULL;
}
