/* tshape.c — torch's shape and creation functions as Thunder prints them
 * without subsymbols (torch.permute, torch.unsqueeze, Tensor.expand,
 * torch.cat, torch.split, torch.full, ...; Thunder's ltorch.X read as
 * torch.X): the IR's shape ops, which move bits without changing them, and
 * full. With subsymbols the reader lowers those instead, as Thunder
 * decomposed the call (docs/design.md, "Reading traces"). */
#include "trace.h"

#include "../common/dims.h"

/* x as the type t (same element count): itself if the shape is x's */
static uint32_t
reshape(Reader *r, uint32_t x, const Type *t)
{
	Type u;

	tr_vtype(r->fn, x, &u);
	if (tr_same_shape(&u, t))
		return x;
	return tr_emit(r, OP_RESHAPE, &x, 1, NULL, 0, t);
}

/* the ints of a call's arguments from k on: one tuple or list, or the
 * ints themselves (Tensor.permute(x, 1, 0), Tensor.expand(x, 4, -1)) */
static void
ints_from(Reader *r, const Expr *c, uint32_t k, const char *what, Ints *out)
{
	Expr list;
	const Expr *e;

	if (k >= c->nargs)
		tr_errat(r, c->line, r->ccol, "%s takes a tensor and %s", r->callee, what);
	e = tr_rest_args(r, c, k, &list);
	tr_ints(r, e, what, false, out);
	if (e == &list)
		out->list = c->args[k].e;
}

/* permute(input, dims), Tensor.permute(x, *dims) */
static uint32_t
lower_permute(Reader *r, const Expr *c, Op op)
{
	uint32_t x;
	Ints p;

	(void)op;
	if (c->nargs == 0 || c->args[0].kw)
		tr_errat(r, c->line, r->ccol, "%s takes a tensor and dims", r->callee);
	x = tr_tensor(r, c->args[0].e);
	ints_from(r, c, 1, "dims", &p);
	for (int i = 0; i < p.n; i++)
		p.v[i] = tr_norm_dim(r, p.e[i], p.v[i], r->fn->vals[x].rank);
	return tr_transpose_by(r, x, &p);
}

/* x with a dim of 1 inserted at d (0..rank) */
static uint32_t
unsqueeze(Reader *r, uint32_t x, int64_t d, const Expr *at)
{
	Type t;

	tr_vtype(r->fn, x, &t);
	if (t.rank == IR_MAXRANK)
		tr_errat(r, at->line, at->col, "%s: a rank-%d tensor has no room for another dim", r->callee, t.rank);
	memmove(t.d + d + 1, t.d + d, (size_t)(t.rank - d) * sizeof *t.d);
	t.d[d] = 1;
	t.rank++;
	return reshape(r, x, &t);
}

/* unsqueeze(input, dim): a dim of 1 at dim, in [-rank-1, rank] */
static uint32_t
lower_unsqueeze(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "input|a", false }, { "dim", false } };
	const Expr *a[2];
	uint32_t x;
	int rank;

	(void)op;
	tr_bind(r, c, ps, 2, a);
	x = tr_tensor(r, a[0]);
	rank = r->fn->vals[x].rank;
	return unsqueeze(
		r, x, rank < IR_MAXRANK ? tr_norm_dim(r, a[1], tr_int_arg(r, a[1], "dim"), rank + 1) : 0, a[0]);
}

/* squeeze(input, dim=None): the dims of size 1 among dim (every one
 * without it); a dim of another size stays, as in torch */
static uint32_t
lower_squeeze(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "input|a", false }, { "dim", true } };
	const Expr *a[2];
	uint32_t x;
	Ints d;
	Type t, u;

	(void)op;
	tr_bind(r, c, ps, 2, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (t.rank == 0)
		return x;
	if (tr_isnone(a[1])) {
		d.n = t.rank;
		for (int i = 0; i < t.rank; i++)
			d.v[i] = i;
	} else {
		tr_dims_arg(r, a[1], t.rank, &d);
	}
	u = t;
	u.rank = 0;
	for (int i = 0, j = 0; i < t.rank; i++) {
		bool named = j < d.n && d.v[j] == i;

		j += named;
		if (!named || t.d[i] != 1)
			u.d[u.rank++] = t.d[i];
	}
	return reshape(r, x, &u);
}

/* flatten(input, start_dim=0, end_dim=-1): the dims start..end as one */
static uint32_t
lower_flatten(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "input|a", false }, { "start_dim", true }, { "end_dim", true } };
	const Expr *a[3];
	int64_t s = 0, e = -1;
	uint32_t x;
	Type t, u;

	(void)op;
	tr_bind(r, c, ps, 3, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (t.rank == 0) { /* a scalar flattens to one element */
		u = t;
		u.rank = 1;
		u.d[0] = 1;
		return reshape(r, x, &u);
	}
	if (!tr_isnone(a[1]))
		s = tr_norm_dim(r, a[1], tr_int_arg(r, a[1], "start_dim"), t.rank);
	else
		s = 0;
	e = tr_isnone(a[2]) ? t.rank - 1 : tr_norm_dim(r, a[2], tr_int_arg(r, a[2], "end_dim"), t.rank);
	if (s > e)
		tr_errat(r, a[1]->line, a[1]->col, "%s: start_dim %lld comes after end_dim %lld", r->callee,
			(long long)s, (long long)e);
	u = t;
	u.rank = 0;
	for (int i = 0; i < t.rank; i++) {
		if (i > s && i <= e)
			u.d[u.rank - 1] *= t.d[i];
		else
			u.d[u.rank++] = t.d[i];
	}
	return reshape(r, x, &u);
}

/* Tensor.expand(x, *sizes): new dims in front, -1 keeps a dim, a dim of 1
 * repeats */
static uint32_t
lower_expand(Reader *r, const Expr *c, Op op)
{
	int64_t bd[IR_MAXRANK];
	uint32_t x;
	Ints s;
	Type t, u;
	char b1[256], b2[256];

	(void)op;
	if (c->nargs == 0 || c->args[0].kw)
		tr_errat(r, c->line, r->ccol, "%s takes a tensor and sizes", r->callee);
	x = tr_tensor(r, c->args[0].e);
	ints_from(r, c, 1, "sizes", &s);
	tr_vtype(r->fn, x, &t);
	u = t;
	u.rank = s.n;
	for (int i = 0; i < s.n; i++) {
		int k = i - (s.n - t.rank); /* x's dim there, if any */

		u.d[i] = s.v[i] == -1 && k >= 0 ? t.d[k] : s.v[i];
		if (s.n < t.rank || u.d[i] < 0 || (k >= 0 && t.d[k] != 1 && t.d[k] != u.d[i]))
			tr_errat(r, s.list->line, s.list->col, "%s: cannot expand %s to %s", r->callee,
				dims_str(t.d, t.rank, ", ", b1, sizeof b1), dims_str(s.v, s.n, ", ", b2, sizeof b2));
		if (k >= 0)
			bd[k] = i;
	}
	tr_check_numel(r, c->line, s.list->col, &u);
	if (tr_same_shape(&t, &u))
		return x;
	return tr_emit(r, OP_BROADCAST, &x, 1, bd, t.rank, &u);
}

/* the tensors of a list argument, of one dtype and rank */
static int
tensors_of(Reader *r, const Expr *e, uint32_t *xs, int max)
{
	Type t, u;

	if ((e->kind != E_LIST && e->kind != E_TUPLE) || e->n == 0 || e->n > (uint32_t)max)
		tr_errat(r, e->line, e->col, "%s: expected a list of 1 to %d tensors", r->callee, max);
	for (uint32_t i = 0; i < e->n; i++) {
		xs[i] = tr_tensor(r, e->elts[i]);
		tr_vtype(r->fn, xs[i], &u);
		if (i == 0)
			t = u;
		else if (u.rank != t.rank)
			tr_errat(r, e->elts[i]->line, e->elts[i]->col, "%s: tensors of rank %d and %d", r->callee,
				t.rank, u.rank);
		else if (u.dt != t.dt)
			tr_errat(r, e->elts[i]->line, e->elts[i]->col,
				"%s of %s and %s tensors is not supported (torch promotes them; convert them first)",
				r->callee, ir_dtypes[t.dt].thunder, ir_dtypes[u.dt].thunder);
	}
	return (int)e->n;
}

static uint32_t
cat(Reader *r, const uint32_t *xs, int n, int64_t dim, const Expr *at)
{
	Type t, u;
	char b1[256], b2[256];

	tr_vtype(r->fn, xs[0], &t);
	for (int i = 1; i < n; i++) {
		tr_vtype(r->fn, xs[i], &u);
		for (int k = 0; k < t.rank; k++)
			if (k != dim && u.d[k] != t.d[k])
				tr_errat(r, at->line, at->col, "%s: shapes %s and %s differ outside dim %lld",
					r->callee, dims_str(t.d, t.rank, ", ", b1, sizeof b1),
					dims_str(u.d, u.rank, ", ", b2, sizeof b2), (long long)dim);
		t.d[dim] += u.d[dim];
	}
	tr_check_numel(r, at->line, at->col, &t);
	return n == 1 ? xs[0] : tr_emit(r, OP_CAT, xs, n, &dim, 1, &t);
}

/* cat(tensors, dim=0); stack(tensors, dim=0): each with a new dim of 1 */
static uint32_t
lower_cat(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "tensors", false }, { "dim", true } };
	bool stack = op == OP_RESHAPE;
	const Expr *a[2];
	uint32_t xs[64];
	int n, rank;
	int64_t dim = 0;

	tr_bind(r, c, ps, 2, a);
	n = tensors_of(r, a[0], xs, 64);
	rank = r->fn->vals[xs[0]].rank + stack;
	if (rank == 0)
		tr_errat(r, a[0]->line, a[0]->col, "%s: rank-0 tensors cannot be concatenated", r->callee);
	if (!tr_isnone(a[1]))
		dim = tr_norm_dim(r, a[1], tr_int_arg(r, a[1], "dim"), rank);
	for (int i = 0; stack && i < n; i++)
		xs[i] = unsqueeze(r, xs[i], dim, a[0]);
	return cat(r, xs, n, dim, a[0]);
}

/* split(input, split_size_or_sections, dim=0): slices of that size (the
 * last one what is left), or of the listed sizes; a result each */
static uint32_t
lower_split(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "input|a|tensor", false }, { "split_size_or_sections|split_size", false },
		{ "dim", true } };
	const Expr *a[3];
	int64_t attr[3 * IR_MAXRANK], dim = 0, at = 0;
	uint32_t x;
	Ints sz;
	Type t;
	int n = 0;

	(void)op;
	tr_bind(r, c, ps, 3, a);
	x = tr_tensor(r, a[0]);
	tr_vtype(r->fn, x, &t);
	if (t.rank == 0)
		tr_errat(r, a[0]->line, a[0]->col, "%s: a rank-0 tensor cannot be split", r->callee);
	if (!tr_isnone(a[2]))
		dim = tr_norm_dim(r, a[2], tr_int_arg(r, a[2], "dim"), t.rank);
	if (a[1]->kind == E_INT) {
		int64_t size = a[1]->i;

		if (size <= 0 && t.d[dim] > 0)
			tr_errat(r, a[1]->line, a[1]->col, "%s: split size %lld", r->callee, (long long)size);
		sz.n = 0;
		for (int64_t left = t.d[dim]; left > 0 || sz.n == 0; left -= size) {
			if (sz.n == (int)NELEM(r->multi))
				tr_errat(r, a[1]->line, a[1]->col, "%s: more than %zu pieces", r->callee,
					NELEM(r->multi));
			sz.v[sz.n++] = left < size ? left : size;
			if (size <= 0)
				break;
		}
	} else {
		int64_t sum = 0;

		tr_ints(r, a[1], "split sizes", false, &sz);
		for (int i = 0; i < sz.n; i++)
			sum += sz.v[i] < 0 ? -1 : sz.v[i];
		if (sum != t.d[dim])
			tr_errat(r, a[1]->line, a[1]->col, "%s: sizes that add up to %lld, not %lld", r->callee,
				(long long)sum, (long long)t.d[dim]);
	}
	for (int i = 0; i < t.rank; i++) {
		attr[i] = 0;
		attr[t.rank + i] = t.d[i];
		attr[2 * t.rank + i] = 1;
	}
	for (; n < sz.n; n++) {
		Type u = t;

		attr[dim] = at;
		attr[t.rank + dim] = at + sz.v[n];
		u.d[dim] = sz.v[n];
		r->multi[n] = tr_emit(r, OP_SLICE, &x, 1, attr, 3 * t.rank, &u);
		at += sz.v[n];
	}
	r->nmulti = n;
	return r->multi[0];
}

/* the dtype torch gives a Python number's fill (dtype=None) */
static DType
fill_dtype(Reader *r, const Expr *e)
{
	if (e->kind != E_INT && e->kind != E_FLOAT && e->kind != E_BOOL)
		tr_errat(r, e->line, e->col, "%s: the fill value must be a number written in the trace", r->callee);
	return e->kind == E_FLOAT ? DT_F32 : e->kind == E_BOOL ? DT_B8 : DT_I64;
}

static uint32_t
fill(Reader *r, const Expr *v, DType dt, const Type *shape)
{
	uint32_t res = ir_full(r->fn, tr_scalar_in(r, v, dt), dt, shape->rank, shape->d);

	tr_check_last(r);
	return res;
}

/* full(size, fill_value, *, dtype=None, ...): dtype None is the fill's
 * (a float f32, an int i64, a bool b8) */
static uint32_t
lower_full(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "size|shape", false }, { "fill_value", false }, { "dtype", true },
		{ "layout", true }, { "device", true }, { "pin_memory", true }, { "requires_grad", true } };
	const Expr *a[7];
	Ints s;
	Type t;

	(void)op;
	tr_bind(r, c, ps, 7, a);
	tr_shape_arg(r, a[0], false, &s);
	t.dt = tr_isnone(a[2]) ? fill_dtype(r, a[1]) : tr_dtype_arg(r, a[2]);
	t.rank = s.n;
	memcpy(t.d, s.v, sizeof t.d);
	return fill(r, a[1], t.dt, &t);
}

/* zeros_like(input, *, dtype=None, ...), ones_like, full_like(input,
 * fill_value, ...): input's shape, and its dtype unless dtype says */
static uint32_t
lower_like(Reader *r, const Expr *c, Op op)
{
	static const Param pz[] = { { "input|a", false }, { "dtype", true }, { "layout", true }, { "device", true },
		{ "requires_grad", true }, { "memory_format", true } };
	static const Param pf[] = { { "input|a", false }, { "fill_value", false }, { "dtype", true },
		{ "layout", true }, { "device", true }, { "requires_grad", true }, { "memory_format", true } };
	bool full = op == OP_COUNT;
	const Expr *a[7];
	Expr one = { 0 };
	Type t;

	tr_bind(r, c, full ? pf : pz, full ? 7 : 6, a);
	tr_vtype(r->fn, tr_tensor(r, a[0]), &t);
	if (!tr_isnone(a[full ? 2 : 1]))
		t.dt = tr_dtype_arg(r, a[full ? 2 : 1]);
	if (full)
		return fill(r, a[1], t.dt, &t);
	one.kind = E_INT;
	one.i = op == OP_MUL; /* ones_like */
	one.line = c->line;
	one.col = r->ccol;
	return fill(r, &one, t.dt, &t);
}

static const struct {
	const char *name;
	Lower fn;
	Op op;
} known[] = {
	{ "torch.permute", lower_permute, OP_COUNT },
	{ "Tensor.permute", lower_permute, OP_COUNT },
	{ "torch.unsqueeze", lower_unsqueeze, OP_COUNT },
	{ "Tensor.unsqueeze", lower_unsqueeze, OP_COUNT },
	{ "torch.squeeze", lower_squeeze, OP_COUNT },
	{ "Tensor.squeeze", lower_squeeze, OP_COUNT },
	{ "torch.flatten", lower_flatten, OP_COUNT },
	{ "Tensor.flatten", lower_flatten, OP_COUNT },
	{ "torch.expand", lower_expand, OP_COUNT }, /* ltorch.expand */
	{ "Tensor.expand", lower_expand, OP_COUNT },
	{ "torch.cat", lower_cat, OP_CAT },
	{ "torch.concat", lower_cat, OP_CAT },
	{ "torch.concatenate", lower_cat, OP_CAT },
	{ "torch.stack", lower_cat, OP_RESHAPE },
	{ "torch.split", lower_split, OP_COUNT },
	{ "Tensor.split", lower_split, OP_COUNT },
	{ "torch.contiguous", tr_lower_identity, OP_COUNT }, /* ltorch.contiguous */
	{ "Tensor.contiguous", tr_lower_identity, OP_COUNT },
	{ "torch.full", lower_full, OP_COUNT },
	{ "torch.zeros_like", lower_like, OP_ADD },
	{ "torch.ones_like", lower_like, OP_MUL },
	{ "torch.full_like", lower_like, OP_COUNT },
	{ "torch.nn.functional.gelu", tr_lower_gelu, OP_COUNT }, /* tnn.c */
	{ "torch.softmax", tr_lower_softmax, OP_DIV },
	{ "torch.nn.functional.softmax", tr_lower_softmax, OP_DIV },
	{ "Tensor.softmax", tr_lower_softmax, OP_DIV },
	{ "torch.log_softmax", tr_lower_softmax, OP_LOG },
	{ "torch.nn.functional.log_softmax", tr_lower_softmax, OP_LOG },
	{ "Tensor.log_softmax", tr_lower_softmax, OP_LOG },
	{ "torch.nn.functional.layer_norm", tr_lower_norm, OP_SUB },
	{ "torch.layer_norm", tr_lower_norm, OP_SUB },
	{ "torch.nn.functional.rms_norm", tr_lower_norm, OP_MUL },
	{ "torch.rms_norm", tr_lower_norm, OP_MUL },
};

/* the lowering of a torch shape or creation function, or of tnn.c's
 * composites, printed without subsymbols; NULL if neither file knows it */
Lower
tr_find_torch_shape(const char *name, Op *op)
{
	for (size_t i = 0; i < NELEM(known); i++)
		if (!strcmp(known[i].name, name)) {
			*op = known[i].op;
			return known[i].fn;
		}
	return NULL;
}
