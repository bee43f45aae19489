/* layout.c — transposes and layouts.
 *
 * First the shape ops that change nothing go: transpose∘transpose composes
 * (and vanishes when the result is the identity), reshape/squeeze/slice/
 * broadcast that leave the shape as it was, and clone (in SSA nothing writes a
 * value after its definition, so a clone is the value itself).
 *
 * Then every GEMM operand gets the layout cuBLASLt needs on Hopper: a (M,K)
 * row-major, b (K,N) stored as (N,K) row-major — layout {1,0}. A b operand
 * that only GEMMs read is simply written in that layout by its producer (a
 * transpose before it becomes index arithmetic in the producing kernel). One
 * that is also needed row-major (a program output, an `a` operand) or that is
 * a program input gets a clone in layout {1,0}; fusion puts that clone in
 * the producing kernel, which then writes both layouts. An a operand that
 * is not row-major gets a row-major clone the same way, and a GEMM's result
 * is row-major whatever the input said: cuBLASLt writes it so. Block-wise
 * scales are laid out {1,0} the same way (cuBLASLt reads scale_a's M
 * values of a K block together, and scale_b's K blocks of a column of
 * blocks). An extern's operands and results are row-major too. */
#include <string.h>

#include "passes.h"

static bool
identity_perm(const int64_t *p, int n)
{
	for (int i = 0; i < n; i++)
		if (p[i] != i)
			return false;
	return true;
}

/* the value `in` reduces to without any work, or IR_NONE */
static uint32_t
noop(Func *src, Func *d, const Instr *in, const uint32_t *a)
{
	const int64_t *at = ir_attr(src, in);
	int rank = src->vals[in->res].rank;
	bool same;

	if (in->nargs != 1)
		return IR_NONE;
	same = d->vals[a[0]].rank == rank &&
		memcmp(ir_dims(d, a[0]), ir_dims(src, in->res), (size_t)rank * sizeof(int64_t)) == 0;
	switch (in->op) {
	case OP_CLONE:     return ir_is_rowmajor(src, in->res) ? a[0] : IR_NONE;
	case OP_TRANSPOSE: return identity_perm(at, rank) ? a[0] : IR_NONE;
	case OP_RESHAPE:
	case OP_SQUEEZE:   return same ? a[0] : IR_NONE;
	case OP_BROADCAST: return same && identity_perm(at, rank) ? a[0] : IR_NONE;
	case OP_SLICE:
		for (int i = 0; i < rank; i++)
			if (at[2 * rank + i] != 1)
				return IR_NONE;
		return same ? a[0] : IR_NONE;
	default: return IR_NONE;
	}
}

/* true if perm swaps the last two of rank dims and keeps the others */
static bool
swaps_last_two(const int64_t *perm, int rank)
{
	for (int i = 0; i < rank - 2; i++)
		if (perm[i] != i)
			return false;
	return rank >= 2 && perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

/* matmul(transpose(x), y): matmul(x, y) trans_a, so that cuBLASLt reads x as
 * it is; the same for b */
static uint32_t
fold_gemm_transposes(Func *src, Func *d, const Instr *in, uint32_t *a, uint32_t *map)
{
	uint8_t flags = in->flags;
	const Instr *t;
	uint32_t r;

	for (int j = 0; j < 2; j++) {
		t = ir_def(d, a[j]);
		if (!t || t->op != OP_TRANSPOSE || !swaps_last_two(ir_attr(d, t), d->vals[a[j]].rank))
			continue;
		a[j] = ir_args(d, t)[0];
		flags ^= j == 0 ? IF_TRANS_A : IF_TRANS_B;
	}
	if (flags == in->flags)
		return ir_copy_instr(d, src, in, map);
	r = ir_copy_instr(d, src, in, map);
	d->ins[d->nins - 1].flags = flags;
	d->argv[d->ins[d->nins - 1].args] = a[0];
	d->argv[d->ins[d->nins - 1].args + 1] = a[1];
	return r;
}

/* transpose(transpose(x, p), q) = transpose(x, p∘q); reshape(reshape(x)) =
 * reshape(x); transposes of GEMM operands fold into the GEMM */
static uint32_t
rewrite_instr(Func *src, Func *d, const Instr *in, uint32_t *map)
{
	uint32_t a[64], r;
	const Instr *inner;
	const Value *v = &src->vals[in->res];

	for (uint32_t i = 0; i < in->nargs; i++)
		a[i] = map[ir_args(src, in)[i]];
	if (in->op == OP_MATMUL)
		return fold_gemm_transposes(src, d, in, a, map);
	if ((r = noop(src, d, in, a)) != IR_NONE)
		return r;
	inner = in->nargs == 1 ? ir_def(d, a[0]) : NULL;
	if (in->op == OP_TRANSPOSE && inner && inner->op == OP_TRANSPOSE) {
		const int64_t *p = ir_attr(d, inner), *q = ir_attr(src, in);
		int64_t comp[IR_MAXRANK];

		for (int i = 0; i < v->rank; i++)
			comp[i] = p[q[i]];
		if (identity_perm(comp, v->rank))
			return ir_args(d, inner)[0];
		r = ir_instr(d, OP_TRANSPOSE, ir_args(d, inner), 1, comp, v->rank, (DType)v->dtype, v->rank,
			ir_dims(src, in->res));
		d->vals[r].name = v->name;
		return r;
	}
	if ((in->op == OP_RESHAPE || in->op == OP_SQUEEZE) && inner &&
		(inner->op == OP_RESHAPE || inner->op == OP_SQUEEZE)) {
		r = ir_instr(
			d, OP_RESHAPE, ir_args(d, inner), 1, NULL, 0, (DType)v->dtype, v->rank, ir_dims(src, in->res));
		d->vals[r].name = v->name;
		return r;
	}
	return ir_copy_instr(d, src, in, map);
}

Func *
pass_transposes(Func *fn)
{
	uint32_t *map;
	Func *d = ir_rewrite_begin(fn, &map);

	for (uint32_t i = 0; i < fn->nins; i++)
		map[fn->ins[i].res] = rewrite_instr(fn, d, &fn->ins[i], map);
	ir_rewrite_end(d, fn, map);
	return pass_dce(d);
}

/* ---- GEMM operand layouts ---- */

static const int64_t colmajor[2] = { 1, 0 };

static bool
has_layout(Func *fn, uint32_t v, const int64_t *want)
{
	return fn->vals[v].layout != IR_NONE && memcmp(&fn->ints[fn->vals[v].layout], want, 2 * sizeof *want) == 0;
}

/* true if operand j of `in` is one cuBLASLt reads in layout {1,0}: a
 * scaled_mm's b, and its scales when they are block-wise */
static bool
colmajor_operand(Func *fn, const Instr *in, uint32_t j)
{
	return in->op == OP_SCALED_MM && (j == 1 || ((j == 2 || j == 3) && ir_scale_mode(fn, in) == SCALES_BLOCK));
}

/* per value: true if every use of it is as an operand read in layout {1,0}
 * (colmajor_operand), and it is no output, input, GEMM or extern result
 * (those are written row-major) */
static bool *
only_colmajor(Func *fn)
{
	bool *other = arena_alloc(fn->arena, fn->nvals + 1), *only = arena_alloc(fn->arena, fn->nvals + 1);

	for (uint32_t i = 0; i < fn->nrets; i++)
		other[fn->rets[i]] = true;
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];

		for (uint32_t j = 0; j < in->nargs; j++)
			other[ir_args(fn, in)[j]] |= !colmajor_operand(fn, in, j);
	}
	for (uint32_t i = 0; i < fn->nins; i++)
		only[fn->ins[i].res] = !op_step((Op)fn->ins[i].op) && !other[fn->ins[i].res];
	return only;
}

/* a copy of value v (new id nv) in layout (NULL: row-major), made once and shared */
static uint32_t
copy_of(Func *d, uint32_t v, uint32_t nv, const int64_t *layout, uint32_t *copy)
{
	if (!copy[v]) {
		copy[v] = ir_instr(d, OP_CLONE, &nv, 1, NULL, 0, (DType)d->vals[nv].dtype, d->vals[nv].rank,
				  ir_dims(d, nv)) +
			1;
		if (layout) /* {1,0}: a 2-d scaled_mm operand */
			d->vals[copy[v] - 1].layout = ir_push_ints(d, layout, 2);
	}
	return copy[v] - 1;
}

/* a GEMM with its a operand row-major and its b operand in layout {1,0};
 * cuBLASLt writes its result row-major */
/* v (f32, one dim of n) broadcast along result dim `dim` of (m,n) */
static uint32_t
along(Func *d, uint32_t v, int64_t len, int dim, const int64_t *mn)
{
	int64_t at = dim;
	uint32_t flat = ir_instr(d, OP_RESHAPE, &v, 1, NULL, 0, (DType)d->vals[v].dtype, 1, &len);

	if (d->vals[flat].dtype != DT_F32)
		flat = ir_instr(d, OP_CONVERT, &flat, 1, NULL, 0, DT_F32, 1, &len);
	return ir_instr(d, OP_BROADCAST, &flat, 1, &at, 1, DT_F32, 2, mn);
}

/* Row-wise scales with a bf16 or f32 result run as they are: cuBLASLt's
 * outer-vector scale mode (plan version 3), which the H200 takes with
 * those results (docs/design.md). Any other result dtype — f16, which no
 * run has shown cuBLASLt to take — is lowered here: the GEMM runs with unit
 * scales into f32 and the scales, the bias and the rounding to the result
 * dtype follow as elementwise ops, which fuse into the kernel after it:
 * d = convert((acc · scale_a[i]) · scale_b[j] + bias[j]), in f32, the
 * interpreter's own order, so the bits are the row-wise scaled_mm's. */
static bool
native_rowwise(Func *fn, const Instr *in)
{
	DType t = (DType)fn->vals[in->res].dtype;

	return t == DT_BF16 || t == DT_F32;
}

static void
legal_rowwise(Func *fn, Func *d, const Instr *in, uint32_t *map, uint32_t na, uint32_t nb)
{
	const uint32_t *a = ir_args(fn, in);
	const int64_t *mn = ir_dims(fn, in->res);
	uint32_t one = ir_full(d, 1, DT_F32, 0, NULL), args[4] = { na, nb, one, one }, acc, y;
	DType t = (DType)fn->vals[in->res].dtype;

	acc = ir_instr(d, OP_SCALED_MM, args, 4, NULL, 0, DT_F32, 2, mn);
	d->ins[d->nins - 1].flags = in->flags;
	d->ins[d->nins - 1].line = in->line, d->ins[d->nins - 1].col = in->col;
	args[0] = acc, args[1] = along(d, map[a[2]], mn[0], 0, mn);
	y = ir_instr(d, OP_MUL, args, 2, NULL, 0, DT_F32, 2, mn);
	args[0] = y, args[1] = along(d, map[a[3]], mn[1], 1, mn);
	y = ir_instr(d, OP_MUL, args, 2, NULL, 0, DT_F32, 2, mn);
	if (in->nargs == 5) {
		args[0] = y, args[1] = along(d, map[a[4]], mn[1], 1, mn);
		y = ir_instr(d, OP_ADD, args, 2, NULL, 0, DT_F32, 2, mn);
	}
	if (t != DT_F32)
		y = ir_instr(d, OP_CONVERT, &y, 1, NULL, 0, t, 2, mn);
	map[in->res] = y;
}

/* operand v (new id nv) in layout {1,0}: its producer writes it so when
 * only such operands read it, else a copy does */
static uint32_t
in_colmajor(Func *d, uint32_t v, uint32_t nv, const bool *only, uint32_t *copy)
{
	if (has_layout(d, nv, colmajor))
		return nv;
	if (only[v]) {
		d->vals[nv].layout = ir_push_ints(d, colmajor, 2);
		return nv;
	}
	return copy_of(d, v, nv, colmajor, copy);
}

static void
legal_gemm(Func *fn, Func *d, const Instr *in, uint32_t *map, const bool *only_b, uint32_t *copy_a, uint32_t *copy_b)
{
	const uint32_t *args = ir_args(fn, in);
	uint32_t a = args[0], b = args[1], na = map[a], nb = in_colmajor(d, b, map[b], only_b, copy_b), r;
	uint32_t sa = map[args[2]], sb = map[args[3]];
	ScaleMode mode = ir_scale_mode(fn, in);

	if (mode == SCALES_BLOCK) {
		sa = in_colmajor(d, args[2], sa, only_b, copy_b);
		sb = in_colmajor(d, args[3], sb, only_b, copy_b);
	}
	if (!ir_is_rowmajor(d, na))
		na = copy_of(d, a, na, NULL, copy_a);
	if (mode == SCALES_ROW && !native_rowwise(fn, in)) {
		legal_rowwise(fn, d, in, map, na, nb);
		return;
	}
	r = ir_copy_instr(d, fn, in, map);
	d->argv[d->ins[d->nins - 1].args] = na;
	d->argv[d->ins[d->nins - 1].args + 1] = nb;
	d->argv[d->ins[d->nins - 1].args + 2] = sa;
	d->argv[d->ins[d->nins - 1].args + 3] = sb;
	d->vals[r].layout = IR_NONE;
}

/* a matmul with row-major operands: cuBLASLt reads what its trans flags say
 * of them, and writes its result row-major */
static void
legal_matmul(Func *fn, Func *d, const Instr *in, uint32_t *map, uint32_t *copy)
{
	uint32_t a[2], r;

	for (int j = 0; j < 2; j++) {
		a[j] = map[ir_args(fn, in)[j]];
		if (!ir_is_rowmajor(d, a[j]))
			a[j] = copy_of(d, ir_args(fn, in)[j], a[j], NULL, copy);
	}
	r = ir_copy_instr(d, fn, in, map);
	d->argv[d->ins[d->nins - 1].args] = a[0];
	d->argv[d->ins[d->nins - 1].args + 1] = a[1];
	d->vals[r].layout = IR_NONE;
}

/* an extern's tensors are row-major (the application gets dense tensors),
 * and so are its results */
static void
legal_extern(Func *fn, Func *d, const Instr *in, uint32_t *map, uint32_t *copy)
{
	uint32_t a[64], r;

	for (uint32_t j = 0; j < in->nargs; j++) {
		a[j] = map[ir_args(fn, in)[j]];
		if (!ir_is_rowmajor(d, a[j]))
			a[j] = copy_of(d, ir_args(fn, in)[j], a[j], NULL, copy);
	}
	r = ir_copy_instr(d, fn, in, map);
	memcpy(&d->argv[d->ins[d->nins - 1].args], a, in->nargs * sizeof *a);
	d->vals[r].layout = IR_NONE;
}

Func *
pass_layouts(Func *fn)
{
	uint32_t *map, *copy_a, *copy_b;
	bool *only_b = only_colmajor(fn);
	Func *d = ir_rewrite_begin(fn, &map);

	copy_a = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *copy_a);
	copy_b = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *copy_b);
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];

		if (in->op == OP_SCALED_MM)
			legal_gemm(fn, d, in, map, only_b, copy_a, copy_b);
		else if (in->op == OP_MATMUL)
			legal_matmul(fn, d, in, map, copy_a);
		else if (in->op == OP_EXTERN || ir_ops[in->op].cls == OC_COLLECTIVE)
			legal_extern(fn, d, in, map, copy_a);
		else if (in->op == OP_MATMUL_AUX) /* row-major, as its matmul's result */
			d->vals[ir_copy_instr(d, fn, in, map)].layout = IR_NONE;
		else
			ir_copy_instr(d, fn, in, map);
	}
	ir_rewrite_end(d, fn, map);
	return d;
}
