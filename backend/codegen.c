/* codegen.c — fused kernels as LLVM functions for NVPTX.
 *
 * A kernel is a list of tasks — values to write, reductions to compute — run
 * in phases: a reduction completes at the end of its phase and its result is
 * read from the next one on, after a grid-wide barrier (the kernel is then
 * launched cooperatively). Each task loops over an iteration space (dims and
 * memory order) with a grid-stride loop; tasks with the same space share a
 * loop, so what they have in common is computed once. A thread takes V
 * consecutive elements (16 bytes of the narrowest tensor) so that loads and
 * stores at the loop's own index are marked aligned and become vector
 * accesses. Every value is computed from the kernel's inputs at the element's
 * coordinates: elementwise ops in registers, transposes, broadcasts, reshapes
 * and slices as index arithmetic. Rank-0 values are computed once per kernel
 * in a block that dominates all the loops after it.
 *
 * Full reductions: amax/amin map each element to an unsigned key whose order
 * is the value's (NaN on top), reduce in the warp with shuffles and meet in
 * one atomic max per warp on a zeroed accumulator; sums and products reduce
 * per block and sum the block partials in a fixed order after the barrier.
 * The last block to read an accumulator zeroes it again for the next run.
 * Partial reductions give each output element to a warp. All of it is
 * deterministic: the same inputs give the same bits on every run.
 *
 * Two shapes replace the loops where they apply (docs/design.md, "The
 * backend"): row kernels, for reductions over the last dim with the result
 * broadcast back, keep a row in registers through one pass; transposed
 * writes go through shared-memory tiles beside the row-major copy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "be.h"

typedef struct {
	uint32_t space; /* a value with the loop's dims and memory order */
	uint32_t *vals; /* outputs to write (or full reductions to feed) */
	uint32_t nvals;
} Group;

static LLVMValueRef
ic(Cg *c, int64_t v)
{
	return LLVMConstInt(c->ity, (unsigned long long)v, 0);
}

static LLVMValueRef
i32c(Cg *c, uint32_t v)
{
	return LLVMConstInt(c->i32, v, 0);
}

static bool
in_kernel(Cg *c, uint32_t v)
{
	return c->fn->vals[v].def != IR_NONE && c->fn->ins[c->fn->vals[v].def].kernel == (int32_t)c->k;
}

static bool
is_reduce(Cg *c, uint32_t v)
{
	const Instr *in = ir_def(c->fn, v);

	return in && ir_ops[in->op].cls == OC_REDUCE;
}

static const int64_t *
order_of(Func *fn, uint32_t v, int64_t *tmp)
{
	if (fn->vals[v].layout != IR_NONE)
		return &fn->ints[fn->vals[v].layout];
	for (int i = 0; i < fn->vals[v].rank; i++)
		tmp[i] = i;
	return tmp;
}

/* same dims and memory order */
static bool
same_space(Func *fn, uint32_t a, uint32_t b)
{
	int64_t t1[IR_MAXRANK], t2[IR_MAXRANK];
	int r = fn->vals[a].rank;

	return ir_same_shape(fn, a, b) &&
		memcmp(order_of(fn, a, t1), order_of(fn, b, t2), (size_t)r * sizeof(int64_t)) == 0;
}

/* ---- memory access ---- */

static LLVMTypeRef
mem_type(Cg *c, DType t)
{
	return t == DT_B8 ? c->i8 : be_type(c, t);
}

static void
strides(Func *fn, uint32_t v, int64_t *st)
{
	int64_t tmp[IR_MAXRANK], s = 1;
	const int64_t *ord = order_of(fn, v, tmp), *d = ir_dims(fn, v);

	for (int j = fn->vals[v].rank - 1; j >= 0; j--) {
		st[ord[j]] = s;
		s *= d[ord[j]];
	}
}

/* true if v at coords lies at the loop's own linear index: walking v's
 * memory order, outermost first, meets the loop's coordinates in the loop's
 * memory order with the same extents (a transposed read of a transposed
 * write is one, a broadcast is not) */
static bool
at_space_index(Cg *c, uint32_t v, LLVMValueRef *coords)
{
	Func *fn = c->fn;
	int64_t t1[IR_MAXRANK], t2[IR_MAXRANK];
	const int64_t *ov, *os, *dv, *ds;
	uint32_t s = c->space;
	int rank = fn->vals[v].rank;

	if (!coords || !c->space_coords || rank != fn->vals[s].rank)
		return false;
	ov = order_of(fn, v, t1);
	os = order_of(fn, s, t2);
	dv = ir_dims(fn, v);
	ds = ir_dims(fn, s);
	for (int m = 0; m < rank; m++)
		if (coords[ov[m]] != c->space_coords[os[m]] || dv[ov[m]] != ds[os[m]])
			return false;
	return true;
}

/* element offset of coords in v's layout, and the alignment it is known to have */
static LLVMValueRef
offset(Cg *c, uint32_t v, LLVMValueRef *coords, int *align)
{
	int64_t st[IR_MAXRANK];
	LLVMValueRef off = ic(c, 0);
	int size = dt_size((DType)c->fn->vals[v].dtype);

	*align = size;
	if (at_space_index(c, v, coords)) {
		int a = c->space_align * size;

		*align = a > 16 ? 16 : a < size ? size : a;
		return c->space_lin;
	}
	strides(c->fn, v, st);
	for (int i = 0; i < c->fn->vals[v].rank; i++)
		off = LLVMBuildAdd(c->b, off, LLVMBuildMul(c->b, coords[i], ic(c, st[i]), ""), "");
	return off;
}

static LLVMValueRef
load_at(Cg *c, LLVMValueRef base, uint32_t v, LLVMValueRef *coords)
{
	DType t = (DType)c->fn->vals[v].dtype;
	int align;
	LLVMValueRef off = offset(c, v, coords, &align);
	LLVMValueRef p = LLVMBuildGEP2(c->b, mem_type(c, t), base, &off, 1, "");
	LLVMValueRef x = LLVMBuildLoad2(c->b, mem_type(c, t), p, "");

	LLVMSetAlignment(x, (unsigned)align);
	return t == DT_B8 ? LLVMBuildICmp(c->b, LLVMIntNE, x, LLVMConstInt(c->i8, 0, 0), "") : x;
}

static void
store_at(Cg *c, LLVMValueRef base, uint32_t v, LLVMValueRef *coords, LLVMValueRef x)
{
	DType t = (DType)c->fn->vals[v].dtype;
	int align;
	LLVMValueRef off = offset(c, v, coords, &align);
	LLVMValueRef p = LLVMBuildGEP2(c->b, mem_type(c, t), base, &off, 1, "");

	if (t == DT_B8)
		x = LLVMBuildZExt(c->b, x, c->i8, "");
	LLVMSetAlignment(LLVMBuildStore(c->b, x, p), (unsigned)align);
}

/* a byte offset into the scratch buffer, as a pointer */
static LLVMValueRef
scratch_at(Cg *c, int64_t off)
{
	LLVMValueRef o = LLVMConstInt(c->i64, (unsigned long long)off, 0);

	return LLVMBuildGEP2(c->b, c->i8, c->scratch, &o, 1, "");
}

/* ---- coordinates ---- */

static LLVMValueRef *
new_coords(Cg *c, int rank)
{
	return arena_alloc(c->fn->arena, (size_t)(rank + 1) * sizeof(LLVMValueRef));
}

/* coordinates of a linear index over dims taken in the given order */
static LLVMValueRef *
delinearize(Cg *c, LLVMValueRef lin, const int64_t *dims, const int64_t *ord, int rank)
{
	LLVMValueRef *co = new_coords(c, rank);

	for (int j = rank - 1; j >= 0; j--) {
		int64_t d = dims[ord[j]];

		co[ord[j]] = j == 0 ? lin : LLVMBuildURem(c->b, lin, ic(c, d), "");
		if (j > 0)
			lin = LLVMBuildUDiv(c->b, lin, ic(c, d), "");
	}
	return co;
}

static LLVMValueRef
linearize(Cg *c, LLVMValueRef *co, const int64_t *dims, int rank)
{
	LLVMValueRef lin = ic(c, 0);

	for (int i = 0; i < rank; i++)
		lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, lin, ic(c, dims[i]), ""), co[i], "");
	return lin;
}

/* ---- values ---- */

static LLVMValueRef value(Cg *c, uint32_t v, LLVMValueRef *coords);

static LLVMValueRef
operand(Cg *c, uint32_t a, LLVMValueRef *coords)
{
	return value(c, a, c->fn->vals[a].rank == 0 ? NULL : coords);
}

/* the coordinates of a shape op's operand for the result's coordinates */
static LLVMValueRef *
shape_coords(Cg *c, const Instr *in, LLVMValueRef *co)
{
	Func *fn = c->fn;
	uint32_t a = ir_args(fn, in)[0];
	const int64_t *at = ir_attr(fn, in), *ad = ir_dims(fn, a);
	int rank = fn->vals[a].rank, rr = fn->vals[in->res].rank;
	LLVMValueRef *n = new_coords(c, rank);
	int64_t ord[IR_MAXRANK];

	switch (in->op) {
	case OP_BROADCAST:
		for (int i = 0; i < rank; i++)
			n[i] = ad[i] == 1 ? ic(c, 0) : co[at[i]];
		return n;
	case OP_TRANSPOSE:
		for (int i = 0; i < rank; i++)
			n[at[i]] = co[i];
		return n;
	case OP_SLICE:
		for (int i = 0; i < rank; i++)
			n[i] = LLVMBuildAdd(
				c->b, ic(c, at[i]), LLVMBuildMul(c->b, co[i], ic(c, at[2 * rank + i]), ""), "");
		return n;
	case OP_SQUEEZE:
		for (int i = 0, j = 0, k = 0; i < rank; i++)
			n[i] = (k < (int)in->nattr && at[k] == i) ? (k++, ic(c, 0)) : co[j++];
		return n;
	case OP_RESHAPE:
		for (int i = 0; i < rank; i++)
			ord[i] = i;
		return delinearize(c, linearize(c, co, ir_dims(fn, in->res), rr), ad, ord, rank);
	case OP_FLIP:
		memcpy(n, co, (size_t)rank * sizeof *n);
		for (uint32_t k = 0; k < in->nattr; k++)
			n[at[k]] = LLVMBuildSub(c->b, ic(c, ad[at[k]] - 1), co[at[k]], "");
		return n;
	default: unreachable();
	}
}

/* cat: every operand at clamped coordinates, then the one that holds it */
static LLVMValueRef
cat(Cg *c, const Instr *in, LLVMValueRef *co)
{
	Func *fn = c->fn;
	int64_t dim = ir_attr(fn, in)[0], off = 0;
	int rank = fn->vals[in->res].rank;
	LLVMValueRef r = NULL;

	for (uint32_t k = 0; k < in->nargs; k++) {
		uint32_t a = ir_args(fn, in)[k];
		int64_t size = ir_dims(fn, a)[dim];
		LLVMValueRef *n = new_coords(c, rank), rel, x, inside;

		if (size == 0)
			continue;
		memcpy(n, co, (size_t)rank * sizeof *n);
		rel = LLVMBuildSub(c->b, co[dim], ic(c, off), "");
		inside = LLVMBuildICmp(c->b, LLVMIntULT, rel, ic(c, size), "");
		n[dim] = LLVMBuildSelect(c->b, inside, rel, ic(c, 0), "");
		x = value(c, a, n);
		r = r ? LLVMBuildSelect(c->b, inside, x, r, "") : x;
		off += size;
	}
	return r;
}

/* an index of dtype t as the loop's index type, clamped to [0, size) so
 * that no read leaves the tensor (an index out of range is undefined) */
static LLVMValueRef
clamp_index(Cg *c, LLVMValueRef q, DType t, int64_t size)
{
	LLVMValueRef zero = ic(c, 0), hi = ic(c, size - 1);

	q = be_convert(c, q, t, c->ity == c->i64 ? DT_I64 : DT_I32, false);
	q = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, q, zero, ""), zero, q, "");
	return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSGT, q, hi, ""), hi, q, "");
}

/* take and gather: a at the result's coordinates, dim replaced by the index */
static LLVMValueRef
gather(Cg *c, const Instr *in, LLVMValueRef *co)
{
	Func *fn = c->fn;
	uint32_t x = ir_args(fn, in)[0], ix = ir_args(fn, in)[1];
	int64_t dim = ir_attr(fn, in)[0], size = ir_dims(fn, x)[dim];
	int rank = fn->vals[x].rank;
	LLVMValueRef *n = new_coords(c, rank), *icoord = co, q;

	if (size == 0)
		return be_constant(c, 0, (DType)fn->vals[in->res].dtype);
	if (in->op == OP_TAKE) {
		icoord = new_coords(c, 1);
		icoord[0] = co[dim];
	}
	q = clamp_index(c, operand(c, ix, icoord), (DType)fn->vals[ix].dtype, size);
	memcpy(n, co, (size_t)rank * sizeof *n);
	n[dim] = q;
	return value(c, x, n);
}

/* pad: a where the coordinates fall on one of its elements, else the value */
static LLVMValueRef
pad(Cg *c, const Instr *in, LLVMValueRef *co)
{
	Func *fn = c->fn;
	uint32_t x = ir_args(fn, in)[0], v = ir_args(fn, in)[1];
	const int64_t *p = ir_attr(fn, in), *xd = ir_dims(fn, x);
	int rank = fn->vals[x].rank;
	LLVMValueRef *n = new_coords(c, rank), inside = LLVMConstInt(c->i1, 1, 0), zero = ic(c, 0);

	if (rank == 0)
		return operand(c, x, NULL);
	if (ir_numel(fn, x) == 0)
		return operand(c, v, NULL);
	for (int d = 0; d < rank; d++) {
		int64_t step = p[2 * rank + d] + 1;
		LLVMValueRef s = LLVMBuildSub(c->b, co[d], ic(c, p[d]), ""), ok, q;

		ok = LLVMBuildICmp(c->b, LLVMIntSGE, s, zero, "");
		s = LLVMBuildSelect(c->b, ok, s, zero, "");
		q = step == 1 ? s : LLVMBuildUDiv(c->b, s, ic(c, step), "");
		if (step > 1)
			ok = LLVMBuildAnd(c->b, ok,
				LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildURem(c->b, s, ic(c, step), ""), zero, ""), "");
		ok = LLVMBuildAnd(c->b, ok, LLVMBuildICmp(c->b, LLVMIntSLT, q, ic(c, xd[d]), ""), "");
		n[d] = LLVMBuildSelect(c->b, ok, q, zero, "");
		inside = LLVMBuildAnd(c->b, inside, ok, "");
	}
	return LLVMBuildSelect(c->b, inside, value(c, x, n), operand(c, v, NULL), "");
}

/* iota: start + i * step in 64 bits, then the result's width */
static LLVMValueRef
iota(Cg *c, const Instr *in, LLVMValueRef *co)
{
	const int64_t *at = ir_attr(c->fn, in);
	DType t = (DType)c->fn->vals[in->res].dtype;
	LLVMValueRef i = c->ity == c->i64 ? co[0] : LLVMBuildZExt(c->b, co[0], c->i64, "");
	LLVMValueRef x = LLVMBuildAdd(c->b, LLVMConstInt(c->i64, (unsigned long long)at[0], 0),
		LLVMBuildMul(c->b, i, LLVMConstInt(c->i64, (unsigned long long)at[1], 0), ""), "");

	return be_convert(c, x, DT_I64, t, false);
}

static LLVMValueRef
compute(Cg *c, const Instr *in, LLVMValueRef *co)
{
	Func *fn = c->fn;
	const uint32_t *a = ir_args(fn, in);
	DType t = (DType)fn->vals[in->res].dtype, at = in->nargs ? (DType)fn->vals[a[0]].dtype : t;

	switch (ir_ops[in->op].cls) {
	case OC_CONVERT: return be_convert(c, operand(c, a[0], co), at, t, !(in->flags & IF_NO_FIXUP));
	case OC_UNARY:   return be_unary(c, (Op)in->op, operand(c, a[0], co), at);
	case OC_BINARY:
	case OC_COMPARE: return be_binary(c, (Op)in->op, operand(c, a[0], co), operand(c, a[1], co), at);
	case OC_WHERE:
		return LLVMBuildSelect(c->b, operand(c, a[0], co), operand(c, a[1], co), operand(c, a[2], co), "");
	case OC_FULL:    return be_constant(c, in->fval, t);
	case OC_CLONE:   return operand(c, a[0], co);
	case OC_SHAPE:   return value(c, a[0], fn->vals[a[0]].rank ? shape_coords(c, in, co) : NULL);
	case OC_CAT:     return cat(c, in, co);
	case OC_GATHER:  return gather(c, in, co);
	case OC_PAD:     return pad(c, in, co);
	case OC_BITCAST: return LLVMBuildBitCast(c->b, operand(c, a[0], co), be_type(c, t), "");
	case OC_IOTA:    return iota(c, in, co);
	case OC_REDUCE:
	case OC_GEMM:
	case OC_EXTERN:  break;
	}
	die("%s cannot be computed in a kernel here", ir_ops[in->op].name);
}

/* The memo: what was computed at which coordinates, newest first per value
 * (memo_head chains a value's entries, so a lookup sees only its own). */
static LLVMValueRef
memo_find(Cg *c, uint32_t v, LLVMValueRef *co)
{
	int rank = c->fn->vals[v].rank;

	for (uint32_t i = c->memo_head[v]; i != IR_NONE; i = c->memo[i].prev) {
		Memo *m = &c->memo[i];

		if (m->coords == co || !memcmp(m->coords, co, (size_t)rank * sizeof *co))
			return m->val;
	}
	return NULL;
}

static void
memo_add(Cg *c, uint32_t v, LLVMValueRef *co, LLVMValueRef x)
{
	arena_grow(c->fn->arena, (void **)&c->memo, &c->capmemo, c->nmemo + 1, sizeof *c->memo);
	c->memo[c->nmemo] = (Memo){ v, co, x, c->memo_head[v] };
	c->memo_head[v] = c->nmemo++;
}

/* forget the entries from n on */
static void
memo_truncate(Cg *c, uint32_t n)
{
	while (c->nmemo > n) {
		const Memo *m = &c->memo[--c->nmemo];

		c->memo_head[m->v] = m->prev;
	}
}

/* where a reduction's result lives: its output, or its place in scratch */
static LLVMValueRef
storage(Cg *c, uint32_t v)
{
	return c->ptr_of[v] ? c->ptr_of[v] : scratch_at(c, c->storage[v]);
}

/* a rank-0 value, computed once in the block that dominates what follows */
static LLVMValueRef
uniform(Cg *c, uint32_t v)
{
	LLVMBasicBlockRef here = LLVMGetInsertBlock(c->b);
	LLVMValueRef x;

	if (c->uniform[v])
		return c->uniform[v];
	if (here != c->pre)
		LLVMPositionBuilderBefore(c->b, LLVMGetBasicBlockTerminator(c->pre));
	if (!in_kernel(c, v))
		x = load_at(c, c->ptr_of[v], v, NULL);
	else
		x = compute(c, ir_def(c->fn, v), NULL);
	if (here != c->pre)
		LLVMPositionBuilderAtEnd(c->b, here);
	return c->uniform[v] = x;
}

static LLVMValueRef
value(Cg *c, uint32_t v, LLVMValueRef *co)
{
	LLVMValueRef x;

	if (c->fn->vals[v].rank == 0)
		return uniform(c, v);
	if ((x = memo_find(c, v, co)))
		return x;
	if (!in_kernel(c, v))
		x = load_at(c, c->ptr_of[v], v, co);
	else if (is_reduce(c, v))
		x = load_at(c, storage(c, v), v, co); /* a partial reduction of an earlier phase */
	else
		x = compute(c, ir_def(c->fn, v), co);
	memo_add(c, v, co, x);
	return x;
}

/* ---- control flow ---- */

static LLVMBasicBlockRef
block(Cg *c, const char *name)
{
	return LLVMAppendBasicBlockInContext(c->cx, c->kfn, name);
}

static LLVMValueRef
entry_alloca(Cg *c, LLVMTypeRef t)
{
	LLVMBasicBlockRef here = LLVMGetInsertBlock(c->b), entry = LLVMGetEntryBasicBlock(c->kfn);
	LLVMValueRef first = LLVMGetFirstInstruction(entry), a;

	if (first)
		LLVMPositionBuilderBefore(c->b, first);
	else
		LLVMPositionBuilderAtEnd(c->b, entry);
	a = LLVMBuildAlloca(c->b, t, "");
	LLVMPositionBuilderAtEnd(c->b, here);
	return a;
}

typedef struct {
	LLVMValueRef iv, i, step;
	LLVMBasicBlockRef head, exit;
	uint32_t nmemo;
} Loop;

/* for (i = start; i < end; i += step): leaves the builder in the body */
static LLVMValueRef
loop_begin(Cg *c, Loop *l, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step)
{
	LLVMBasicBlockRef body;

	l->iv = entry_alloca(c, c->ity);
	l->step = step;
	LLVMBuildStore(c->b, start, l->iv);
	l->head = block(c, "loop");
	body = block(c, "body");
	l->exit = block(c, "done");
	LLVMBuildBr(c->b, l->head);
	LLVMPositionBuilderAtEnd(c->b, l->head);
	l->i = LLVMBuildLoad2(c->b, c->ity, l->iv, "i");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntULT, l->i, end, ""), body, l->exit);
	LLVMPositionBuilderAtEnd(c->b, body);
	l->nmemo = c->nmemo;
	return l->i;
}

static void
loop_end(Cg *c, Loop *l)
{
	LLVMBuildStore(c->b, LLVMBuildAdd(c->b, l->i, l->step, ""), l->iv);
	LLVMBuildBr(c->b, l->head);
	LLVMPositionBuilderAtEnd(c->b, l->exit);
	memo_truncate(c, l->nmemo); /* what the body computed does not dominate the exit */
}

/* if (cond) { ... }: returns the join block; the builder is in the then-block */
static LLVMBasicBlockRef
if_begin(Cg *c, LLVMValueRef cond)
{
	LLVMBasicBlockRef then = block(c, "then"), join = block(c, "join");

	LLVMBuildCondBr(c->b, cond, then, join);
	LLVMPositionBuilderAtEnd(c->b, then);
	return join;
}

static void
if_end(Cg *c, LLVMBasicBlockRef join)
{
	LLVMBuildBr(c->b, join);
	LLVMPositionBuilderAtEnd(c->b, join);
}

static void
syncthreads(Cg *c)
{
	LLVMValueRef zero = i32c(c, 0);

	be_call(c, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, &zero, 1);
}

static void
membar(Cg *c)
{
	be_call(c, "llvm.nvvm.membar.gl", NULL, 0, NULL, 0);
}

/* ---- grid-wide barrier: scratch[0] arrivals, scratch[4] generation ---- */

static void
grid_barrier(Cg *c)
{
	LLVMValueRef cnt = scratch_at(c, 0), gen = scratch_at(c, 4), g, old, v;
	LLVMBasicBlockRef join, last, wait, spin, done;

	syncthreads(c);
	join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, ic(c, 0), ""));
	g = LLVMBuildLoad2(c->b, c->i32, gen, "");
	LLVMSetVolatile(g, 1);
	membar(c);
	old = LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpAdd, cnt, i32c(c, 1), LLVMAtomicOrderingMonotonic, 0);
	last = block(c, "last");
	wait = block(c, "wait");
	spin = block(c, "spin");
	done = block(c, "arrived");
	LLVMBuildCondBr(c->b,
		LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildZExt(c->b, old, c->ity, ""),
			LLVMBuildSub(c->b, c->nctaid, ic(c, 1), ""), ""),
		last, wait);
	LLVMPositionBuilderAtEnd(c->b, last);
	LLVMSetVolatile(LLVMBuildStore(c->b, i32c(c, 0), cnt), 1);
	membar(c);
	LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpAdd, gen, i32c(c, 1), LLVMAtomicOrderingMonotonic, 0);
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, wait);
	LLVMBuildBr(c->b, spin);
	LLVMPositionBuilderAtEnd(c->b, spin);
	v = LLVMBuildLoad2(c->b, c->i32, gen, "");
	LLVMSetVolatile(v, 1);
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, v, g, ""), spin, done);
	LLVMPositionBuilderAtEnd(c->b, done);
	membar(c);
	if_end(c, join);
	syncthreads(c);
}

/* ---- reduction keys: unsigned integers that order like the values ---- */

typedef struct {
	Op op;
	DType t;        /* the dtype of the reduced values */
	LLVMTypeRef kt; /* i32 or i64 key; f64/i64 accumulator for sums */
	bool wide;
	bool sum; /* sum or prod: accumulate in double or i64 */
} Red;

static Red
red_of(Cg *c, uint32_t v)
{
	const Instr *in = ir_def(c->fn, v);
	Red r = { (Op)in->op, (DType)c->fn->vals[v].dtype, NULL, false, false };

	r.sum = r.op == OP_SUM || r.op == OP_PROD;
	r.wide = r.t == DT_F64 || r.t == DT_I64;
	if (r.sum)
		r.kt = dt_isfloat(r.t) ? c->f64 : c->i64;
	else
		r.kt = r.wide ? c->i64 : c->i32;
	return r;
}

static LLVMValueRef
max_key(Cg *c, const Red *r, LLVMValueRef x)
{
	unsigned w = r->wide ? 64 : 32;
	LLVMValueRef top = LLVMConstInt(r->kt, 1ull << (w - 1), 0), bits, mask;

	if (dt_isfloat(r->t)) {
		LLVMTypeRef ft = r->wide ? c->f64 : c->f32;

		if (!r->wide)
			x = be_convert(c, x, r->t, DT_F32, true);
		x = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, ""), LLVMConstReal(ft, NAN), x, "");
		bits = LLVMBuildBitCast(c->b, x, r->kt, "");
		mask = LLVMBuildOr(c->b, LLVMBuildAShr(c->b, bits, LLVMConstInt(r->kt, w - 1, 0), ""), top, "");
		return LLVMBuildXor(c->b, bits, mask, "");
	}
	if (r->t == DT_U8 || r->t == DT_B8)
		return LLVMBuildZExt(c->b, x, r->kt, "");
	x = r->wide ? x : LLVMBuildSExt(c->b, x, r->kt, "");
	return LLVMBuildXor(c->b, x, top, "");
}

static LLVMValueRef
key(Cg *c, const Red *r, LLVMValueRef x)
{
	LLVMValueRef k;

	if (r->sum)
		return dt_isfloat(r->t) ? be_convert(c, x, r->t, DT_F64, true) : be_convert(c, x, r->t, DT_I64, true);
	k = max_key(c, r, x);
	if (r->op == OP_AMAX)
		return k;
	k = LLVMBuildNot(c->b, k, "");
	if (!dt_isfloat(r->t))
		return k;
	return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, ""), LLVMConstAllOnes(r->kt), k, "");
}

static LLVMValueRef
identity(Cg *c, const Red *r)
{
	if (r->op == OP_SUM)
		return dt_isfloat(r->t) ? LLVMConstReal(c->f64, 0) : LLVMConstInt(c->i64, 0, 0);
	if (r->op == OP_PROD)
		return dt_isfloat(r->t) ? LLVMConstReal(c->f64, 1) : LLVMConstInt(c->i64, 1, 0);
	return LLVMConstInt(r->kt, 0, 0);
}

static LLVMValueRef
combine(Cg *c, const Red *r, LLVMValueRef a, LLVMValueRef b)
{
	bool f = dt_isfloat(r->t);

	if (r->op == OP_SUM)
		return f ? LLVMBuildFAdd(c->b, a, b, "") : LLVMBuildAdd(c->b, a, b, "");
	if (r->op == OP_PROD)
		return f ? LLVMBuildFMul(c->b, a, b, "") : LLVMBuildMul(c->b, a, b, "");
	return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntUGT, a, b, ""), a, b, "");
}

/* the reduced value (in the result's dtype) of an accumulated key */
static LLVMValueRef
unkey(Cg *c, const Red *r, LLVMValueRef k)
{
	unsigned w = r->wide ? 64 : 32;
	LLVMValueRef top = LLVMConstInt(r->kt, 1ull << (w - 1), 0), mask, bits, x, nan = NULL;

	if (r->sum)
		return dt_isfloat(r->t) ? be_convert(c, k, DT_F64, r->t, true) : be_convert(c, k, DT_I64, r->t, true);
	if (r->op == OP_AMIN) {
		nan = LLVMBuildICmp(c->b, LLVMIntEQ, k, LLVMConstAllOnes(r->kt), "");
		k = LLVMBuildNot(c->b, k, "");
	}
	if (!dt_isfloat(r->t)) {
		x = r->t == DT_U8 || r->t == DT_B8 ? k : LLVMBuildXor(c->b, k, top, "");
		return r->wide ? x : LLVMBuildTrunc(c->b, x, be_type(c, r->t), "");
	}
	mask = LLVMBuildSelect(c->b,
		LLVMBuildICmp(c->b, LLVMIntNE, LLVMBuildAnd(c->b, k, top, ""), LLVMConstInt(r->kt, 0, 0), ""), top,
		LLVMConstAllOnes(r->kt), "");
	bits = LLVMBuildXor(c->b, k, mask, "");
	x = LLVMBuildBitCast(c->b, bits, r->wide ? c->f64 : c->f32, "");
	if (nan)
		x = LLVMBuildSelect(c->b, nan, LLVMConstReal(LLVMTypeOf(x), NAN), x, "");
	return r->wide ? x : be_convert(c, x, DT_F32, r->t, true);
}

/* butterfly over the warp: every lane ends with the combination of all 32,
 * in the same order on every run */
static LLVMValueRef
warp_reduce(Cg *c, const Red *r, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	bool wide = t == c->i64 || t == c->f64;

	for (unsigned d = 16; d >= 1; d /= 2) {
		LLVMValueRef bits = wide ? LLVMBuildBitCast(c->b, x, c->i64, "") : x, lo, hi, other;
		LLVMValueRef a[4] = { LLVMConstAllOnes(c->i32), NULL, i32c(c, d), i32c(c, 31) };

		lo = wide ? LLVMBuildTrunc(c->b, bits, c->i32, "") : bits;
		a[1] = lo;
		lo = be_call(c, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
		if (wide) {
			a[1] = LLVMBuildTrunc(
				c->b, LLVMBuildLShr(c->b, bits, LLVMConstInt(c->i64, 32, 0), ""), c->i32, "");
			hi = be_call(c, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
			other = LLVMBuildOr(c->b, LLVMBuildZExt(c->b, lo, c->i64, ""),
				LLVMBuildShl(
					c->b, LLVMBuildZExt(c->b, hi, c->i64, ""), LLVMConstInt(c->i64, 32, 0), ""),
				"");
			other = LLVMBuildBitCast(c->b, other, t, "");
		} else {
			other = LLVMBuildBitCast(c->b, lo, t, "");
		}
		x = combine(c, r, x, other); /* + and max commute: both lanes get the same bits */
	}
	return x;
}

/* ---- block-level reduction: warps, then warp 0 over the warps' results ---- */

/* a shared-memory array of the kernel, named after it */
static LLVMValueRef
shared_array(Cg *c, const char *name, LLVMTypeRef at, unsigned align)
{
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, at, name, 3);

	LLVMSetInitializer(g, LLVMGetUndef(at));
	LLVMSetLinkage(g, LLVMInternalLinkage);
	LLVMSetAlignment(g, align);
	return g;
}

static LLVMValueRef
smem_slot(Cg *c, LLVMValueRef i)
{
	char name[32];
	LLVMTypeRef at = LLVMArrayType2(c->i64, BE_BLOCK / 32);
	LLVMValueRef g, idx[2] = { LLVMConstInt(c->i64, 0, 0), i };

	snprintf(name, sizeof name, "%s.smem", c->fn->kernels[c->k].name);
	if (!(g = LLVMGetNamedGlobal(c->mod, name)))
		g = shared_array(c, name, at, 8);
	return LLVMBuildGEP2(c->b, at, g, idx, 2, "");
}

static LLVMValueRef
to_i64(Cg *c, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);

	if (t == c->f64)
		return LLVMBuildBitCast(c->b, x, c->i64, "");
	return t == c->i64 ? x : LLVMBuildZExt(c->b, x, c->i64, "");
}

static LLVMValueRef
from_i64(Cg *c, LLVMValueRef x, LLVMTypeRef t)
{
	if (t == c->f64)
		return LLVMBuildBitCast(c->b, x, c->f64, "");
	return t == c->i64 ? x : LLVMBuildTrunc(c->b, x, t, "");
}

/* every thread's x combined over the block; valid in thread 0 */
static LLVMValueRef
block_reduce(Cg *c, const Red *r, LLVMValueRef x)
{
	LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, ic(c, 31), ""), warp = LLVMBuildLShr(c->b, c->tid, ic(c, 5), "");
	LLVMValueRef res = entry_alloca(c, r->kt), v;
	LLVMBasicBlockRef join;

	x = warp_reduce(c, r, x);
	join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, lane, ic(c, 0), ""));
	LLVMBuildStore(c->b, to_i64(c, x), smem_slot(c, warp));
	if_end(c, join);
	syncthreads(c);
	LLVMBuildStore(c->b, identity(c, r), res);
	join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, warp, ic(c, 0), ""));
	v = from_i64(c,
		LLVMBuildLoad2(c->b, c->i64, smem_slot(c, LLVMBuildAnd(c->b, lane, ic(c, BE_BLOCK / 32 - 1), "")), ""),
		r->kt);
	v = LLVMBuildSelect(
		c->b, LLVMBuildICmp(c->b, LLVMIntULT, lane, ic(c, BE_BLOCK / 32), ""), v, identity(c, r), "");
	LLVMBuildStore(c->b, warp_reduce(c, r, v), res);
	if_end(c, join);
	syncthreads(c); /* the slots are free again */
	return LLVMBuildLoad2(c->b, r->kt, res, "");
}

/* ---- the kernel's plan: phases, storage, scratch ---- */

typedef struct {
	uint32_t *phase; /* per value: the phase that computes it */
	bool *out;       /* per value: written to a kernel output */
	uint32_t nphases;
	int64_t scratch; /* bytes */
	bool readers;    /* some accumulator needs zeroing after it is read */
} KPlan;

static void
analyze(Cg *c, KPlan *kp)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	int64_t off = 16; /* barrier arrivals, generation, readers */

	kp->phase = c->phase_of;
	kp->out = c->is_out;
	kp->nphases = 1;
	for (uint32_t j = 0; j < k->nouts; j++)
		kp->out[fn->argv[k->outs + j]] = true;
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		const Instr *in = &fn->ins[i];
		uint32_t p = 0, v = in->res;

		for (uint32_t j = 0; j < in->nargs; j++) {
			uint32_t a = ir_args(fn, in)[j];

			if (in_kernel(c, a) && c->avail[a] > p)
				p = c->avail[a];
		}
		kp->phase[v] = p;
		c->avail[v] = p;
		c->storage[v] = -1;
		if (ir_ops[in->op].cls != OC_REDUCE)
			continue;
		c->avail[v] = p + 1;
		if (fn->vals[v].rank == 0) {
			Red r = red_of(c, v);

			c->storage[v] = off;
			off += r.sum ? 8 * BE_MAXGRID : 8;
			kp->readers |= !r.sum;
		} else if (!kp->out[v]) {
			c->storage[v] = off;
			off += (ir_numel(fn, v) * dt_size((DType)fn->vals[v].dtype) + 15) / 16 * 16;
		}
	}
	/* the last phase is the latest task: an output, or a reduction's loop */
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res, p = kp->phase[v];
		bool red = ir_ops[fn->ins[i].op].cls == OC_REDUCE;

		if (kp->out[v] && red && fn->vals[v].rank == 0)
			p++; /* a full reduction is written once it is complete */
		else if (!kp->out[v] && !red)
			continue;
		if (p + 1 > kp->nphases)
			kp->nphases = p + 1;
	}
	kp->scratch = (kp->nphases > 1 || off > 16) ? off : 0;
}

/* ---- loops over an iteration space ---- */

/* elements per thread: 16 bytes of the narrowest tensor read or written at the
 * loop's own index */
static int
vector_width(Cg *c, const Group *g)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	int size = 16;

	if (fn->vals[g->space].rank == 0)
		return 1;
	for (uint32_t i = 0; i < g->nvals; i++) {
		uint32_t v = g->vals[i];

		if (ir_ops[ir_def(fn, v)->op].cls != OC_REDUCE && dt_size((DType)fn->vals[v].dtype) < size)
			size = dt_size((DType)fn->vals[v].dtype);
	}
	for (uint32_t j = 0; j < k->nins; j++) {
		uint32_t v = fn->argv[k->ins + j];

		if (same_space(fn, v, g->space) && dt_size((DType)fn->vals[v].dtype) < size)
			size = dt_size((DType)fn->vals[v].dtype);
	}
	return 16 / size;
}

/* one element of a group: write its outputs, feed its reductions */
static void
element(Cg *c, const Group *g, LLVMValueRef *accs, const Red *reds)
{
	Func *fn = c->fn;

	for (uint32_t i = 0; i < g->nvals; i++) {
		uint32_t v = g->vals[i];
		const Instr *in = ir_def(fn, v);

		if (ir_ops[in->op].cls == OC_REDUCE && fn->vals[v].rank == 0 && accs[i]) {
			LLVMValueRef x = operand(c, ir_args(fn, in)[0], c->space_coords);

			LLVMBuildStore(c->b,
				combine(c, &reds[i], LLVMBuildLoad2(c->b, reds[i].kt, accs[i], ""),
					key(c, &reds[i], x)),
				accs[i]);
		} else {
			store_at(c, c->ptr_of[v], v, c->space_coords, value(c, v, c->space_coords));
		}
	}
}

/* make co, at linear index lin (a multiple of align), the current element
 * of space: accesses at the space's own index are aligned */
static LLVMValueRef *
current(Cg *c, uint32_t space, LLVMValueRef *co, LLVMValueRef lin, int align)
{
	c->space = space;
	c->space_coords = co;
	c->space_lin = lin;
	c->space_align = align;
	return co;
}

static void
space_element(Cg *c, const Group *g, LLVMValueRef lin, int align, LLVMValueRef *accs, const Red *reds)
{
	int64_t tmp[IR_MAXRANK];
	uint32_t s = g->space;

	current(c, s,
		c->fn->vals[s].rank == 0
			? NULL
			: delinearize(c, lin, ir_dims(c->fn, s), order_of(c->fn, s, tmp), c->fn->vals[s].rank),
		lin, align);
	element(c, g, accs, reds);
	c->space_coords = NULL;
}

/* ---- transposed reads ---- */

/* true if computing v, whose dim d is the space's dim perm[d], reads some
 * kernel input across the space's memory order: the input's inner dim is
 * the space's outer one. Walks elementwise ops and transposes; anything that
 * remaps coordinates otherwise ends the walk. */
static bool
reads_across(Cg *c, uint32_t v, const int64_t *perm, int depth)
{
	Func *fn = c->fn;
	const Instr *in = ir_def(fn, v);
	int64_t t1[IR_MAXRANK], t2[IR_MAXRANK], p2[IR_MAXRANK];
	const int64_t *ov, *os;

	if (fn->vals[v].rank != 2 || depth > 64)
		return false;
	if (!in_kernel(c, v)) {
		ov = order_of(fn, v, t1);
		os = order_of(fn, c->space, t2);
		return perm[ov[1]] == os[0];
	}
	if (in->op == OP_TRANSPOSE) {
		for (int d = 0; d < 2; d++)
			p2[ir_attr(fn, in)[d]] = perm[d];
		return reads_across(c, ir_args(fn, in)[0], p2, depth + 1);
	}
	if (!op_elementwise((Op)in->op) && in->op != OP_CLONE)
		return false;
	for (uint32_t j = 0; j < in->nargs; j++)
		if (reads_across(c, ir_args(fn, in)[j], perm, depth + 1))
			return true;
	return false;
}

static bool
group_reads_across(Cg *c, const Group *g)
{
	static const int64_t id[2] = { 0, 1 };

	for (uint32_t i = 0; i < g->nvals; i++)
		if (ir_ops[ir_def(c->fn, g->vals[i])->op].cls != OC_REDUCE && reads_across(c, g->vals[i], id, 0))
			return true;
	return false;
}

/* the first element of chunk ch (V elements along the space's inner dim).
 * Across reads, the 32 threads of a warp take the same columns of 32
 * consecutive rows, so each reads 32 neighbours of its input rows at once
 * instead of 32 distinct rows; needs outer % 32 == 0 and inner % V == 0. */
static LLVMValueRef
chunk_start(Cg *c, LLVMValueRef ch, int64_t inner, int V, bool across)
{
	LLVMValueRef w, a, b;
	int64_t rowchunks = inner / V;

	if (!across)
		return LLVMBuildMul(c->b, ch, ic(c, V), "");
	w = LLVMBuildUDiv(c->b, ch, ic(c, 32), "");
	a = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, LLVMBuildUDiv(c->b, w, ic(c, rowchunks), ""), ic(c, 32), ""),
		LLVMBuildURem(c->b, ch, ic(c, 32), ""), "");
	b = LLVMBuildMul(c->b, LLVMBuildURem(c->b, w, ic(c, rowchunks), ""), ic(c, V), "");
	return LLVMBuildAdd(c->b, LLVMBuildMul(c->b, a, ic(c, inner), ""), b, "");
}

/* the elements element j of a thread's V (the first at a multiple of V) is
 * aligned to */
static int
lane_align(int j, int V)
{
	return j ? (j & -j) : V;
}

/* the V elements of a thread from the loop's index i */
static void
chunk(Cg *c, const Group *g, LLVMValueRef i, int V, LLVMValueRef *accs, const Red *reds)
{
	for (int j = 0; j < V; j++)
		space_element(c, g, j ? LLVMBuildAdd(c->b, i, ic(c, j), "") : i, lane_align(j, V), accs, reds);
}

/* grid-stride loop over the space, V elements a thread, then the tail
 * (backward: the grid's steps last first); returns the blocks it wants */
static uint32_t
group_loop(Cg *c, const Group *g, LLVMValueRef *accs, const Red *reds, bool backward)
{
	Func *fn = c->fn;
	int64_t total = ir_numel(fn, g->space), t[IR_MAXRANK], outer = 0, inner = 0;
	int V = vector_width(c, g);
	int64_t nvec = total / V;
	bool across = false;
	Loop l;
	LLVMValueRef i;

	if (fn->vals[g->space].rank == 2) {
		const int64_t *ord = order_of(fn, g->space, t);

		c->space = g->space;
		outer = ir_dims(fn, g->space)[ord[0]];
		inner = ir_dims(fn, g->space)[ord[1]];
		across = outer % 32 == 0 && inner % V == 0 && group_reads_across(c, g);
	}
	if (nvec > 0 && backward) {
		/* the grid's steps taken last first: what the phase before read last
		 * is what L2 still holds */
		LLVMValueRef steps =
			LLVMBuildUDiv(c->b, LLVMBuildAdd(c->b, ic(c, nvec - 1), c->gstride, ""), c->gstride, "");
		LLVMBasicBlockRef join;

		i = loop_begin(c, &l, ic(c, 0), steps, ic(c, 1));
		i = LLVMBuildAdd(c->b,
			LLVMBuildMul(c->b, LLVMBuildSub(c->b, LLVMBuildSub(c->b, steps, ic(c, 1), ""), i, ""),
				c->gstride, ""),
			c->gtid, "");
		join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntULT, i, ic(c, nvec), ""));
		chunk(c, g, chunk_start(c, i, inner, V, across), V, accs, reds);
		if_end(c, join);
		loop_end(c, &l);
	} else if (nvec > 0) {
		i = loop_begin(c, &l, c->gtid, ic(c, nvec), c->gstride);
		chunk(c, g, chunk_start(c, i, inner, V, across), V, accs, reds);
		loop_end(c, &l);
	}
	if (nvec * V < total) {
		i = loop_begin(c, &l, LLVMBuildAdd(c->b, c->gtid, ic(c, nvec * V), ""), ic(c, total), c->gstride);
		space_element(c, g, i, 1, accs, reds);
		loop_end(c, &l);
	}
	return (uint32_t)((nvec + BE_BLOCK - 1) / BE_BLOCK);
}

/* ---- tiled transposed writes ----
 * A group whose space reads its input across (a transposed copy, the
 * backward's transposed fp8 operands) takes the space in tiles, as a
 * hand-written cast-transpose does: the block computes a tile's values in
 * the order the input lies in memory (16-byte loads), writes them to shared
 * memory, and stores the tile row by row in the output's order (16-byte
 * stores). The group of the transposed space — the same values in the
 * input's order, the row-major copy — is written from the same pass, so the
 * input is read once for both layouts. In the space (P, Q) of the
 * transposed group's memory order (P outer), element (p, q) is that group's
 * (p, q) and the other's (q, p); a thread takes V consecutive p, the tile is
 * TP x TQ with TP * TQ = BE_BLOCK * V. */

#define TILE_SMEM 32768 /* shared bytes the tiles of one group may take */

typedef struct {
	const Group *a, *b; /* a: in the input's order (may be NULL); b: across */
	uint32_t in;        /* a value laid out as a is: the loads' space */
	int64_t P, Q;
	int TP, TQ, V;
	int64_t bytes; /* of shared memory: TP rows of TQ + V elements per value of b */
} Tile;

/* the space of a value laid out as the transpose of b's: its order's outer
 * dim has b's inner extent, its inner dim b's outer extent */
static bool
transposed_space(Cg *c, uint32_t b, uint32_t v)
{
	Func *fn = c->fn;
	int64_t t1[IR_MAXRANK], t2[IR_MAXRANK];
	const int64_t *ob, *ov;

	if (fn->vals[v].rank != 2 || fn->vals[b].rank != 2)
		return false;
	ob = order_of(fn, b, t1);
	ov = order_of(fn, v, t2);
	return ir_dims(fn, v)[ov[0]] == ir_dims(fn, b)[ob[1]] && ir_dims(fn, v)[ov[1]] == ir_dims(fn, b)[ob[0]];
}

static bool
feeds_reduction(Cg *c, const Group *g)
{
	for (uint32_t i = 0; i < g->nvals; i++)
		if (ir_ops[ir_def(c->fn, g->vals[i])->op].cls == OC_REDUCE)
			return true;
	return false;
}

/* the values of g that read across, moved to a group of their own at *to:
 * a value and its transpose have one space when it is square, and values
 * of one space may read their inputs either way */
static void
split_across(Cg *c, Group *g, Group *to, uint32_t *ng)
{
	static const int64_t id[2] = { 0, 1 };
	Func *fn = c->fn;
	uint32_t n = 0;

	if (fn->vals[g->space].rank != 2 || feeds_reduction(c, g))
		return;
	c->space = g->space;
	*to = (Group){ g->space, arena_alloc(fn->arena, (g->nvals + 1) * sizeof(uint32_t)), 0 };
	for (uint32_t i = 0; i < g->nvals; i++)
		if (reads_across(c, g->vals[i], id, 0))
			to->vals[to->nvals++] = g->vals[i];
		else
			g->vals[n++] = g->vals[i];
	if (n == 0 || to->nvals == 0) {
		for (uint32_t i = 0; i < to->nvals; i++) /* all or none: as it was */
			g->vals[n++] = to->vals[i];
		return;
	}
	g->nvals = n;
	(*ng)++;
}

/* true if b, with a (or NULL), can run in tiles; fills t */
static bool
tile_shape(Cg *c, const Group *a, const Group *b, Tile *t)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	int64_t tmp[IR_MAXRANK];
	const int64_t *ob;

	if (fn->vals[b->space].rank != 2 || feeds_reduction(c, b) || (a && feeds_reduction(c, a)))
		return false;
	c->space = b->space;
	if (!group_reads_across(c, b))
		return false;
	t->a = a;
	t->b = b;
	t->in = a ? a->space : IR_NONE;
	for (uint32_t j = 0; j < k->nins && t->in == IR_NONE; j++)
		if (transposed_space(c, b->space, fn->argv[k->ins + j]))
			t->in = fn->argv[k->ins + j];
	if (t->in == IR_NONE)
		return false;
	t->V = vector_width(c, b);
	if (a && vector_width(c, a) < t->V)
		t->V = vector_width(c, a);
	for (t->TP = t->V; (int64_t)t->TP * 2 * t->TP * 2 <= (int64_t)BE_BLOCK * t->V; t->TP *= 2)
		;
	t->TQ = BE_BLOCK * t->V / t->TP;
	ob = order_of(fn, b->space, tmp);
	t->P = ir_dims(fn, b->space)[ob[0]];
	t->Q = ir_dims(fn, b->space)[ob[1]];
	t->bytes = 0;
	for (uint32_t i = 0; i < b->nvals; i++)
		t->bytes += (int64_t)t->TP * (t->TQ + t->V) * dt_size((DType)fn->vals[b->vals[i]].dtype);
	return t->TQ >= t->V && t->P % t->TP == 0 && t->Q % t->TQ == 0 && t->bytes <= TILE_SMEM;
}

/* element idx of the tile buffer at byte base: the kernel's one shared
 * array, in which b's values have TP rows of TQ + V elements each, one
 * after the other */
static LLVMValueRef
tile_at(Cg *c, const Tile *t, int64_t base, LLVMTypeRef et, LLVMValueRef idx)
{
	char name[48];
	LLVMTypeRef at;
	LLVMValueRef g, old;
	LLVMValueRef ix[2] = { LLVMConstInt(c->i64, 0, 0), LLVMConstInt(c->i64, (unsigned long long)base, 0) };

	snprintf(name, sizeof name, "%s.tile", c->fn->kernels[c->k].name);
	g = LLVMGetNamedGlobal(c->mod, name);
	/* the kernel's tiles share one buffer, as large as the largest needs */
	if (!g || (int64_t)LLVMGetArrayLength2(LLVMGlobalGetValueType(g)) < t->bytes) {
		if ((old = g))
			LLVMSetValueName2(old, "", 0);
		g = shared_array(c, name, LLVMArrayType2(c->i8, (uint64_t)t->bytes), 16);
		if (old) {
			LLVMReplaceAllUsesWith(old, g);
			LLVMDeleteGlobal(old);
		}
	}
	at = LLVMGlobalGetValueType(g);
	return LLVMBuildGEP2(c->b, et, LLVMBuildGEP2(c->b, at, g, ix, 2, ""), &idx, 1, "");
}

/* the coordinates of element (o, i) of v: o on its outer dim, i on its inner */
static LLVMValueRef *
tile_coords(Cg *c, uint32_t v, LLVMValueRef o, LLVMValueRef i)
{
	int64_t tmp[IR_MAXRANK];
	const int64_t *ord = order_of(c->fn, v, tmp);
	LLVMValueRef *co = new_coords(c, 2);

	co[ord[0]] = o;
	co[ord[1]] = i;
	return co;
}

/* the bytes element j of a thread's V is aligned to, for elements of size */
static unsigned
chunk_align(int j, int V, int size)
{
	int a = lane_align(j, V) * size;

	return (unsigned)(a > 16 ? 16 : a);
}

static uint32_t
tile_loop(Cg *c, const Tile *t)
{
	Func *fn = c->fn;
	const Group *b = t->b;
	int64_t ntp = t->P / t->TP, ntiles = ntp * (t->Q / t->TQ), pitch = t->TQ + t->V, base;
	LLVMValueRef tl, p0, q0, k, m, p, q, pb, qb, lin, row, x, *ca;
	Loop l;

	tl = loop_begin(c, &l, c->bid, ic(c, ntiles), c->nctaid);
	p0 = LLVMBuildMul(c->b, LLVMBuildURem(c->b, tl, ic(c, ntp), ""), ic(c, t->TP), "");
	q0 = LLVMBuildMul(c->b, LLVMBuildUDiv(c->b, tl, ic(c, ntp), ""), ic(c, t->TQ), "");
	/* the tile in the input's order: V consecutive p a thread */
	k = LLVMBuildMul(c->b, LLVMBuildURem(c->b, c->tid, ic(c, t->TP / t->V), ""), ic(c, t->V), "");
	m = LLVMBuildUDiv(c->b, c->tid, ic(c, t->TP / t->V), "");
	q = LLVMBuildAdd(c->b, q0, m, "");
	pb = LLVMBuildAdd(c->b, p0, k, "");
	lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, q, ic(c, t->P), ""), pb, "");
	for (int j = 0; j < t->V; j++) {
		LLVMValueRef pl = j ? LLVMBuildAdd(c->b, k, ic(c, j), "") : k;

		/* each index the first's plus j, so that the accesses become vectors */
		p = j ? LLVMBuildAdd(c->b, pb, ic(c, j), "") : pb;
		current(c, t->in, tile_coords(c, t->in, q, p), j ? LLVMBuildAdd(c->b, lin, ic(c, j), "") : lin,
			lane_align(j, t->V));
		for (uint32_t i = 0; t->a && i < t->a->nvals; i++) {
			uint32_t v = t->a->vals[i];

			ca = tile_coords(c, v, q, p);
			store_at(c, c->ptr_of[v], v, ca, value(c, v, ca));
		}
		base = 0;
		for (uint32_t i = 0; i < b->nvals; i++) {
			uint32_t v = b->vals[i];
			DType dt = (DType)fn->vals[v].dtype;
			LLVMValueRef idx = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, pl, ic(c, pitch), ""), m, "");

			x = value(c, v, tile_coords(c, v, p, q));
			if (dt == DT_B8)
				x = LLVMBuildZExt(c->b, x, c->i8, "");
			LLVMBuildStore(c->b, x, tile_at(c, t, base, mem_type(c, dt), idx));
			base += (int64_t)t->TP * pitch * dt_size(dt);
		}
	}
	syncthreads(c);
	/* the tile in b's order: V consecutive q a thread */
	k = LLVMBuildMul(c->b, LLVMBuildURem(c->b, c->tid, ic(c, t->TQ / t->V), ""), ic(c, t->V), "");
	m = LLVMBuildUDiv(c->b, c->tid, ic(c, t->TQ / t->V), "");
	p = LLVMBuildAdd(c->b, p0, m, "");
	qb = LLVMBuildAdd(c->b, q0, k, "");
	lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, p, ic(c, t->Q), ""), qb, "");
	row = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, m, ic(c, pitch), ""), k, "");
	for (int j = 0; j < t->V; j++) {
		q = j ? LLVMBuildAdd(c->b, qb, ic(c, j), "") : qb;
		current(c, b->space, tile_coords(c, b->space, p, q), j ? LLVMBuildAdd(c->b, lin, ic(c, j), "") : lin,
			lane_align(j, t->V));
		base = 0;
		for (uint32_t i = 0; i < b->nvals; i++) {
			uint32_t v = b->vals[i];
			DType dt = (DType)fn->vals[v].dtype;
			LLVMValueRef idx = j ? LLVMBuildAdd(c->b, row, ic(c, j), "") : row;

			x = LLVMBuildLoad2(c->b, mem_type(c, dt), tile_at(c, t, base, mem_type(c, dt), idx), "");
			LLVMSetAlignment(x, chunk_align(j, t->V, dt_size(dt)));
			if (dt == DT_B8)
				x = LLVMBuildICmp(c->b, LLVMIntNE, x, LLVMConstInt(c->i8, 0, 0), "");
			store_at(c, c->ptr_of[v], v, tile_coords(c, v, p, q), x);
			base += (int64_t)t->TP * pitch * dt_size(dt);
		}
	}
	syncthreads(c); /* the tile buffers are free again */
	loop_end(c, &l);
	c->space_coords = NULL;
	return (uint32_t)ntiles;
}

/* a partial reduction: a warp for each output element; returns the blocks it wants */
static uint32_t
partial_reduction(Cg *c, uint32_t v)
{
	Func *fn = c->fn;
	const Instr *in = ir_def(fn, v);
	uint32_t a = ir_args(fn, in)[0];
	const int64_t *rd = ir_attr(fn, in), *ad = ir_dims(fn, a);
	int rank = fn->vals[a].rank, nr = (int)in->nattr;
	int64_t nout = ir_numel(fn, v), nred = 1, rdims[IR_MAXRANK], ord[IR_MAXRANK];
	Red r = red_of(c, v);
	LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, ic(c, 31), ""), acc = entry_alloca(c, r.kt);
	LLVMValueRef o, ri, *oc, *rc, *co, k;
	LLVMBasicBlockRef join;
	Loop lo, li;

	for (int i = 0; i < IR_MAXRANK; i++)
		ord[i] = i;
	for (int i = 0; i < nr; i++)
		nred *= rdims[i] = ad[rd[i]];
	o = loop_begin(c, &lo, LLVMBuildLShr(c->b, c->gtid, ic(c, 5), ""), ic(c, nout),
		LLVMBuildLShr(c->b, c->gstride, ic(c, 5), ""));
	oc = delinearize(c, o, ir_dims(fn, v), ord, fn->vals[v].rank);
	LLVMBuildStore(c->b, identity(c, &r), acc);
	ri = loop_begin(c, &li, lane, ic(c, nred), ic(c, 32));
	rc = delinearize(c, ri, rdims, ord, nr);
	co = new_coords(c, rank);
	for (int i = 0, j = 0, kk = 0; i < rank; i++)
		co[i] = (kk < nr && rd[kk] == i) ? rc[kk++] : oc[j++];
	LLVMBuildStore(c->b, combine(c, &r, LLVMBuildLoad2(c->b, r.kt, acc, ""), key(c, &r, value(c, a, co))), acc);
	loop_end(c, &li);
	k = warp_reduce(c, &r, LLVMBuildLoad2(c->b, r.kt, acc, ""));
	join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, lane, ic(c, 0), ""));
	store_at(c, storage(c, v), v, oc, unkey(c, &r, k));
	if_end(c, join);
	loop_end(c, &lo);
	return (uint32_t)((nout * 32 + BE_BLOCK - 1) / BE_BLOCK);
}

/* ---- row kernels ----
 * A kernel whose reductions all reduce the last dim of one row-major space
 * (..., C), and whose outputs are that space's or per row (softmax, RMSNorm,
 * LayerNorm, row-wise quantize), runs a row at a time: a warp for a short
 * row, else a block, each thread holding its V-element chunks of the row in
 * registers (the memo keeps what it loaded and computed at those
 * coordinates) from the first reduction to the last write. One read, one
 * write, no grid barrier. What depends on a reduction must keep its row:
 * elementwise ops over the space or per row (the leading dims, with or
 * without a trailing 1 as keepdim leaves it), broadcasts that keep the
 * leading dims, reductions of the last dim — anything else, and the kernel
 * runs in phases. */

#define ROW_MAXCHUNKS 8 /* V-element chunks a thread holds */

typedef struct {
	uint32_t space; /* a value of the space */
	int rank;       /* the space's; its rows are dims 0 .. rank - 2 */
	int64_t R, C;   /* rows, and elements a row */
	int T, V, nch;  /* threads per row, elements per chunk, chunks per thread */
} Rows;

static bool
lead_dims(Func *fn, const Rows *rs, uint32_t v)
{
	return fn->vals[v].rank >= rs->rank - 1 &&
		!memcmp(ir_dims(fn, v), ir_dims(fn, rs->space), (size_t)(rs->rank - 1) * sizeof(int64_t));
}

static bool
row_space(Func *fn, const Rows *rs, uint32_t v)
{
	return fn->vals[v].rank == rs->rank && lead_dims(fn, rs, v) && ir_dims(fn, v)[rs->rank - 1] == rs->C &&
		ir_is_rowmajor(fn, v);
}

/* the leading dims, or those and a 1 */
static bool
per_row(Func *fn, const Rows *rs, uint32_t v)
{
	int r = fn->vals[v].rank;

	return lead_dims(fn, rs, v) && ir_is_rowmajor(fn, v) &&
		(r == rs->rank - 1 || (r == rs->rank && ir_dims(fn, v)[r - 1] == 1));
}

/* a broadcast that keeps the leading dims where they are */
static bool
keeps_rows(Func *fn, const Rows *rs, const Instr *in)
{
	uint32_t a = ir_args(fn, in)[0];

	if (!per_row(fn, rs, a) || !(per_row(fn, rs, in->res) || row_space(fn, rs, in->res)))
		return false;
	for (int i = 0; i < fn->vals[a].rank; i++)
		if (ir_attr(fn, in)[i] != i)
			return false;
	return true;
}

static bool
rows_shape(Cg *c, Rows *rs)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	bool *dep = arena_alloc(fn->arena, fn->nvals + 1);
	int size = 16;

	rs->space = IR_NONE;
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		const Instr *in = &fn->ins[i];
		uint32_t v = in->res, a = in->nargs ? ir_args(fn, in)[0] : IR_NONE;
		bool any = false;

		if (ir_ops[in->op].cls == OC_REDUCE) {
			int r = fn->vals[a].rank;

			if (r < 2 || fn->vals[v].rank != r - 1 || in->nattr != 1 || ir_attr(fn, in)[0] != r - 1)
				return false;
			if (rs->space == IR_NONE) {
				rs->space = a;
				rs->rank = r;
				rs->C = ir_dims(fn, a)[r - 1];
				rs->R = ir_numel(fn, v);
			}
			if (!row_space(fn, rs, a))
				return false;
			dep[v] = true;
			continue;
		}
		for (uint32_t j = 0; j < in->nargs; j++)
			any |= in_kernel(c, ir_args(fn, in)[j]) && dep[ir_args(fn, in)[j]];
		if (!any)
			continue;
		if (in->op == OP_BROADCAST)
			dep[v] = keeps_rows(fn, rs, in);
		else
			dep[v] = op_elementwise((Op)in->op) && (row_space(fn, rs, v) || per_row(fn, rs, v));
		if (!dep[v])
			return false;
	}
	if (rs->space == IR_NONE || rs->C <= 0 || rs->R <= 0)
		return false;
	for (uint32_t j = 0; j < k->nouts; j++) {
		uint32_t v = fn->argv[k->outs + j];

		if (!row_space(fn, rs, v) && !per_row(fn, rs, v))
			return false;
		if (row_space(fn, rs, v) && dt_size((DType)fn->vals[v].dtype) < size)
			size = dt_size((DType)fn->vals[v].dtype);
	}
	for (uint32_t j = 0; j < k->nins; j++) {
		uint32_t v = fn->argv[k->ins + j];

		if (row_space(fn, rs, v) && dt_size((DType)fn->vals[v].dtype) < size)
			size = dt_size((DType)fn->vals[v].dtype);
	}
	rs->V = 16 / size;
	if (rs->C % rs->V)
		return false;
	rs->T = rs->C / rs->V <= 32 * 2 ? 32 : BE_BLOCK; /* a warp for up to two chunks a thread */
	rs->nch = (int)((rs->C / rs->V + rs->T - 1) / rs->T);
	return rs->nch <= ROW_MAXCHUNKS;
}

/* a block's x, combined over the block, in every thread */
static LLVMValueRef
block_allreduce(Cg *c, const Red *r, LLVMValueRef x)
{
	LLVMValueRef y = block_reduce(c, r, x);
	LLVMBasicBlockRef join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, ic(c, 0), ""));

	LLVMBuildStore(c->b, to_i64(c, y), smem_slot(c, ic(c, 0)));
	if_end(c, join);
	syncthreads(c);
	y = from_i64(c, LLVMBuildLoad2(c->b, c->i64, smem_slot(c, ic(c, 0)), ""), r->kt);
	syncthreads(c); /* the slot is free again */
	return y;
}

/* element e of this thread's chunks: its coordinates and linear index */
typedef struct {
	LLVMValueRef *co, lin;
	int align;
} RowElem;

/* make e the current element of the space (aligned accesses at its index) */
static LLVMValueRef *
at(Cg *c, const Rows *rs, const RowElem *e)
{
	return current(c, rs->space, e->co, e->lin, e->align);
}

static uint32_t
rows_kernel(Cg *c, const Rows *rs)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	int64_t per_block = BE_BLOCK / rs->T;
	LLVMValueRef lane = LLVMBuildURem(c->b, c->tid, ic(c, rs->T), ""), row, *rowco, *keepco;
	int64_t tmp[IR_MAXRANK];
	LLVMValueRef col, lin, ok[ROW_MAXCHUNKS];
	RowElem *el;
	LLVMBasicBlockRef uni = block(c, "uni"), body = block(c, "rows"), join;
	bool partial = rs->C % ((int64_t)rs->T * rs->V) != 0;
	Loop l;

	LLVMBuildBr(c->b, uni);
	LLVMPositionBuilderAtEnd(c->b, uni);
	LLVMBuildBr(c->b, body);
	LLVMPositionBuilderAtEnd(c->b, body);
	c->pre = uni;
	row = loop_begin(c, &l,
		LLVMBuildAdd(c->b, LLVMBuildMul(c->b, c->bid, ic(c, per_block), ""),
			LLVMBuildUDiv(c->b, c->tid, ic(c, rs->T), ""), ""),
		ic(c, rs->R), LLVMBuildMul(c->b, c->nctaid, ic(c, per_block), ""));
	/* the row's coordinates; a dim of one is the constant 0 that
	 * broadcasts index it with, so that the memo finds what they read */
	rowco = delinearize(c, row, ir_dims(fn, rs->space), order_of(fn, rs->space, tmp), rs->rank - 1);
	for (int i = 0; i < rs->rank - 1; i++)
		if (ir_dims(fn, rs->space)[i] == 1)
			rowco[i] = ic(c, 0);
	keepco = new_coords(c, rs->rank);
	memcpy(keepco, rowco, (size_t)(rs->rank - 1) * sizeof *keepco);
	keepco[rs->rank - 1] = ic(c, 0);
	el = arena_alloc(fn->arena, (size_t)rs->nch * rs->V * sizeof *el);
	for (int ch = 0; ch < rs->nch; ch++) {
		/* a chunk past the row's end reads the row's first (masked out) */
		col = LLVMBuildMul(c->b, LLVMBuildAdd(c->b, lane, ic(c, (int64_t)ch * rs->T), ""), ic(c, rs->V), "");
		ok[ch] = LLVMBuildICmp(c->b, LLVMIntULT, col, ic(c, rs->C), "");
		if (partial)
			col = LLVMBuildSelect(c->b, ok[ch], col, ic(c, 0), "");
		lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, row, ic(c, rs->C), ""), col, "");
		for (int j = 0; j < rs->V; j++) {
			RowElem *e = &el[ch * rs->V + j];

			/* each index the chunk's first plus j: the accesses become vectors */
			e->co = new_coords(c, rs->rank);
			memcpy(e->co, rowco, (size_t)(rs->rank - 1) * sizeof *e->co);
			e->co[rs->rank - 1] = j ? LLVMBuildAdd(c->b, col, ic(c, j), "") : col;
			e->lin = j ? LLVMBuildAdd(c->b, lin, ic(c, j), "") : lin;
			e->align = lane_align(j, rs->V);
		}
	}
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res, a = fn->ins[i].nargs ? ir_args(fn, &fn->ins[i])[0] : IR_NONE;
		Red r;
		LLVMValueRef acc;

		if (ir_ops[fn->ins[i].op].cls != OC_REDUCE)
			continue;
		r = red_of(c, v);
		acc = identity(c, &r);
		for (int e = 0; e < rs->nch * rs->V; e++) {
			LLVMValueRef x = key(c, &r, value(c, a, at(c, rs, &el[e])));

			if (partial)
				x = LLVMBuildSelect(c->b, ok[e / rs->V], x, identity(c, &r), "");
			acc = combine(c, &r, acc, x);
		}
		acc = rs->T == 32 ? warp_reduce(c, &r, acc) : block_allreduce(c, &r, acc);
		memo_add(c, v, rowco, unkey(c, &r, acc));
	}
	for (uint32_t j = 0; j < k->nouts; j++) {
		uint32_t v = fn->argv[k->outs + j];
		LLVMValueRef x[16];

		if (per_row(fn, rs, v)) {
			LLVMValueRef *pc = fn->vals[v].rank == rs->rank ? keepco : rowco;

			c->space_coords = NULL;
			x[0] = value(c, v, pc);
			join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, lane, ic(c, 0), ""));
			store_at(c, c->ptr_of[v], v, pc, x[0]);
			if_end(c, join);
			continue;
		}
		for (int ch = 0; ch < rs->nch; ch++) {
			for (int e = 0; e < rs->V; e++)
				x[e] = value(c, v, at(c, rs, &el[ch * rs->V + e]));
			join = partial ? if_begin(c, ok[ch]) : NULL;
			for (int e = 0; e < rs->V; e++)
				store_at(c, c->ptr_of[v], v, at(c, rs, &el[ch * rs->V + e]), x[e]);
			if (join)
				if_end(c, join);
		}
	}
	loop_end(c, &l);
	c->space_coords = NULL;
	return (uint32_t)((rs->R + per_block - 1) / per_block);
}

/* ---- phases ---- */

static void
group_add(Cg *c, Group *gs, uint32_t *ng, uint32_t space, uint32_t v)
{
	Func *fn = c->fn;

	for (uint32_t i = 0; i < *ng; i++)
		if (same_space(fn, gs[i].space, space)) {
			gs[i].vals[gs[i].nvals++] = v;
			return;
		}
	gs[*ng] = (Group){ space, arena_alloc(fn->arena, (c->fn->kernels[c->k].count + 1) * sizeof(uint32_t)), 1 };
	gs[*ng].vals[0] = v;
	(*ng)++;
}

/* full reductions completed in the previous phase: read, then zero for the next run */
static void
read_reductions(Cg *c, const KPlan *kp, uint32_t p)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	bool any = false;
	LLVMBasicBlockRef join, last;
	LLVMValueRef old;

	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res;
		Red r;
		LLVMValueRef acc, x;
		Loop l;

		if (ir_ops[fn->ins[i].op].cls != OC_REDUCE || fn->vals[v].rank != 0 || c->avail[v] != p)
			continue;
		r = red_of(c, v);
		if (!r.sum) {
			x = LLVMBuildLoad2(c->b, r.kt, scratch_at(c, c->storage[v]), "");
			LLVMSetVolatile(x, 1);
			c->uniform[v] = unkey(c, &r, x);
			any = true;
			continue;
		}
		acc = entry_alloca(c, r.kt);
		LLVMBuildStore(c->b, identity(c, &r), acc);
		x = loop_begin(c, &l, ic(c, 0), c->nctaid, ic(c, 1));
		x = LLVMBuildGEP2(c->b, r.kt, scratch_at(c, c->storage[v]), &x, 1, "");
		x = LLVMBuildLoad2(c->b, r.kt, x, "");
		LLVMSetVolatile(x, 1);
		LLVMBuildStore(c->b, combine(c, &r, LLVMBuildLoad2(c->b, r.kt, acc, ""), x), acc);
		loop_end(c, &l);
		c->uniform[v] = unkey(c, &r, LLVMBuildLoad2(c->b, r.kt, acc, ""));
	}
	if (!any || !kp->readers)
		return;
	/* the last block to have read the accumulators zeroes them */
	syncthreads(c);
	join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, ic(c, 0), ""));
	membar(c);
	old = LLVMBuildAtomicRMW(
		c->b, LLVMAtomicRMWBinOpAdd, scratch_at(c, 8), i32c(c, 1), LLVMAtomicOrderingMonotonic, 0);
	last = if_begin(c,
		LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildZExt(c->b, old, c->ity, ""),
			LLVMBuildSub(c->b, c->nctaid, ic(c, 1), ""), ""));
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res;

		if (ir_ops[fn->ins[i].op].cls == OC_REDUCE && fn->vals[v].rank == 0 && c->avail[v] == p &&
			!red_of(c, v).sum)
			LLVMSetVolatile(
				LLVMBuildStore(c->b, LLVMConstInt(c->i64, 0, 0), scratch_at(c, c->storage[v])), 1);
	}
	LLVMSetVolatile(LLVMBuildStore(c->b, i32c(c, 0), scratch_at(c, 8)), 1);
	membar(c);
	if_end(c, last);
	if_end(c, join);
}

/* the accumulator of a full reduction at the end of its phase */
static void
finish_reduction(Cg *c, uint32_t v, const Red *r, LLVMValueRef acc)
{
	LLVMValueRef x = block_reduce(c, r, LLVMBuildLoad2(c->b, r->kt, acc, "")), p;
	LLVMBasicBlockRef join = if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, ic(c, 0), ""));

	if (r->sum) {
		p = LLVMBuildGEP2(c->b, r->kt, scratch_at(c, c->storage[v]), &c->bid, 1, "");
		LLVMSetVolatile(LLVMBuildStore(c->b, x, p), 1);
	} else {
		LLVMBuildAtomicRMW(
			c->b, LLVMAtomicRMWBinOpUMax, scratch_at(c, c->storage[v]), x, LLVMAtomicOrderingMonotonic, 0);
	}
	if_end(c, join);
}

static uint32_t
phase(Cg *c, const KPlan *kp, uint32_t p)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	Group *gs = arena_alloc(fn->arena, (2 * k->count + 2) * sizeof *gs);
	uint32_t ng = 0, blocks = 1, b;
	bool *tiled;
	LLVMBasicBlockRef pre = block(c, "pre"), uni = block(c, "uni"), body = block(c, "phase");

	LLVMBuildBr(c->b, pre);
	LLVMPositionBuilderAtEnd(c->b, pre);
	if (p > 0)
		read_reductions(c, kp, p);
	LLVMBuildBr(c->b, uni);
	LLVMPositionBuilderAtEnd(c->b, uni);
	LLVMBuildBr(c->b, body);
	LLVMPositionBuilderAtEnd(c->b, body);
	c->pre = uni;
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		const Instr *in = &fn->ins[i];
		uint32_t v = in->res;
		bool red = ir_ops[in->op].cls == OC_REDUCE, full = red && fn->vals[v].rank == 0;

		if (full && kp->phase[v] == p)
			group_add(c, gs, &ng, ir_args(fn, in)[0], v);
		if (full && kp->out[v] && c->avail[v] == p)
			group_add(c, gs, &ng, v, v);
		if (!red && kp->out[v] && kp->phase[v] == p)
			group_add(c, gs, &ng, v, v);
	}
	/* what reads across apart from what does not, so that it runs in tiles
	 * beside the group of the transposed space that does not */
	for (uint32_t gi = 0, n = ng; gi < n; gi++)
		split_across(c, &gs[gi], &gs[ng], &ng);
	/* transposed writes in tiles, each with the group of the transposed
	 * space if there is one */
	tiled = arena_alloc(fn->arena, ng + 1);
	for (uint32_t gi = 0; gi < ng; gi++)
		for (uint32_t ai = 0; ai <= ng && !tiled[gi]; ai++) {
			const Group *a = ai < ng ? &gs[ai] : NULL;
			Tile t;

			if (a && (ai == gi || tiled[ai] || !transposed_space(c, gs[gi].space, a->space)))
				continue;
			if (a && (c->space = a->space, group_reads_across(c, a)))
				continue;
			if (!tile_shape(c, a, &gs[gi], &t))
				continue;
			tiled[gi] = true;
			if (a)
				tiled[ai] = true;
			if ((b = tile_loop(c, &t)) > blocks)
				blocks = b;
		}
	for (uint32_t gi = 0; gi < ng; gi++) {
		Group *g = &gs[gi];
		LLVMValueRef *accs;
		Red *reds = arena_alloc(fn->arena, (g->nvals + 1) * sizeof *reds);

		bool feeds = false; /* some reduction: its order stays the first phase's */

		if (tiled[gi])
			continue;
		accs = arena_alloc(fn->arena, (g->nvals + 1) * sizeof *accs);

		for (uint32_t j = 0; j < g->nvals; j++) {
			uint32_t v = g->vals[j];

			if (ir_ops[ir_def(fn, v)->op].cls != OC_REDUCE || kp->phase[v] != p)
				continue;
			feeds = true;
			reds[j] = red_of(c, v);
			accs[j] = entry_alloca(c, reds[j].kt);
			LLVMBuildStore(c->b, identity(c, &reds[j]), accs[j]);
		}
		if ((b = group_loop(c, g, accs, reds, p > 0 && !feeds)) > blocks)
			blocks = b;
		for (uint32_t j = 0; j < g->nvals; j++)
			if (accs[j])
				finish_reduction(c, g->vals[j], &reds[j], accs[j]);
	}
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res;

		if (ir_ops[fn->ins[i].op].cls == OC_REDUCE && fn->vals[v].rank > 0 && kp->phase[v] == p &&
			(b = partial_reduction(c, v)) > blocks)
			blocks = b;
	}
	if (p + 1 < kp->nphases)
		grid_barrier(c);
	return blocks;
}

/* ---- the kernel function ---- */

static LLVMValueRef
sreg(Cg *c, const char *name)
{
	return LLVMBuildZExt(c->b, be_call(c, name, NULL, 0, NULL, 0), c->ity, "");
}

static void
add_attr(Cg *c, LLVMValueRef f, unsigned idx, const char *name, uint64_t val)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));

	LLVMAddAttributeAtIndex(f, idx, LLVMCreateEnumAttribute(c->cx, kind, val));
}

/* one pointer parameter per input, output and the scratch buffer */
static void
signature(Cg *c, const KPlan *kp)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	uint32_t n = k->nins + k->nouts + (kp->scratch > 0), i = 0;
	LLVMTypeRef *ps = arena_alloc(fn->arena, (n + 1) * sizeof *ps);
	LLVMValueRef f;
	char nb[16];

	for (uint32_t j = 0; j < n; j++)
		ps[j] = c->ptr;
	f = LLVMAddFunction(c->mod, k->name, LLVMFunctionType(LLVMVoidTypeInContext(c->cx), ps, n, 0));
	LLVMSetFunctionCallConv(f, LLVMPTXKernelCallConv);
	LLVMAddAttributeAtIndex(
		f, LLVMAttributeFunctionIndex, LLVMCreateStringAttribute(c->cx, "nvvm.maxntid", 12, "256", 3));
	for (uint32_t j = 0; j < n; j++) {
		add_attr(c, f, j + 1, "noalias", 0);
		add_attr(c, f, j + 1, "align", 16);
	}
	for (uint32_t j = 0; j < k->nins + k->nouts; j++, i++) {
		uint32_t v = fn->argv[(j < k->nins ? k->ins + j : k->outs + j - k->nins)];
		const char *name = ir_name(fn, v, nb);

		c->ptr_of[v] = LLVMGetParam(f, i);
		LLVMSetValueName2(c->ptr_of[v], name, strlen(name));
	}
	c->scratch = kp->scratch ? LLVMGetParam(f, i) : NULL;
	c->kfn = f;
}

static bool
needs_wide_index(Func *fn, const Kernel *k)
{
	for (uint32_t i = k->first; i < k->first + k->count; i++)
		for (uint32_t j = 0; j <= fn->ins[i].nargs; j++) {
			uint32_t v = j < fn->ins[i].nargs ? ir_args(fn, &fn->ins[i])[j] : fn->ins[i].res;

			if (ir_numel(fn, v) > (INT64_C(1) << 30))
				return true;
		}
	return false;
}

/* clear what the kernel left per value, touching only its own values (a
 * memset of every value per kernel costs time quadratic in the program) */
static void
kernel_done(Cg *c)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];

	memo_truncate(c, 0);
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res;

		c->uniform[v] = NULL;
		c->ptr_of[v] = NULL;
		c->is_out[v] = false;
	}
	for (uint32_t j = 0; j < k->nins; j++) {
		uint32_t v = fn->argv[k->ins + j];

		c->uniform[v] = NULL;
		c->ptr_of[v] = NULL;
	}
}

static void
kernel(Cg *c, uint32_t kidx, Launch *l)
{
	Func *fn = c->fn;
	KPlan kp = { 0 };
	Rows rs;
	bool rows;
	uint32_t blocks = 1, b;

	c->k = kidx;
	c->ity = needs_wide_index(fn, &fn->kernels[kidx]) ? c->i64 : c->i32;
	analyze(c, &kp);
	if ((rows = rows_shape(c, &rs))) {
		kp.nphases = 1;
		kp.scratch = 0;
	}
	signature(c, &kp);
	LLVMPositionBuilderAtEnd(c->b, block(c, "entry"));
	c->tid = sreg(c, "llvm.nvvm.read.ptx.sreg.tid.x");
	c->bid = sreg(c, "llvm.nvvm.read.ptx.sreg.ctaid.x");
	c->ntid = sreg(c, "llvm.nvvm.read.ptx.sreg.ntid.x");
	c->nctaid = sreg(c, "llvm.nvvm.read.ptx.sreg.nctaid.x");
	c->gtid = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, c->bid, c->ntid, ""), c->tid, "gtid");
	c->gstride = LLVMBuildMul(c->b, c->nctaid, c->ntid, "gstride");
	if (rows)
		blocks = rows_kernel(c, &rs);
	for (uint32_t p = 0; !rows && p < kp.nphases; p++)
		if ((b = phase(c, &kp, p)) > blocks)
			blocks = b;
	LLVMBuildRetVoid(c->b);
	*l = (Launch){ blocks > BE_MAXGRID ? BE_MAXGRID : blocks, BE_BLOCK, 0, kp.nphases > 1, kp.nphases, IR_NONE };
	if (kp.scratch)
		l->scratch = plan_add_scratch(fn, c->plan, kp.scratch);
	kernel_done(c);
}

static void reuse(Cg *c, uint32_t k, Seen *seen);

void
be_codegen(Func *fn, Plan *plan, LLVMModuleRef mod, Launch *launches, Seen *seen)
{
	Cg c = { .fn = fn, .plan = plan, .mod = mod, .cx = LLVMGetModuleContext(mod) };
	bool *launched;

	c.b = LLVMCreateBuilderInContext(c.cx);
	c.i1 = LLVMInt1TypeInContext(c.cx);
	c.i8 = LLVMInt8TypeInContext(c.cx);
	c.i16 = LLVMInt16TypeInContext(c.cx);
	c.i32 = LLVMInt32TypeInContext(c.cx);
	c.i64 = LLVMInt64TypeInContext(c.cx);
	c.f16 = LLVMHalfTypeInContext(c.cx);
	c.bf16 = LLVMBFloatTypeInContext(c.cx);
	c.f32 = LLVMFloatTypeInContext(c.cx);
	c.f64 = LLVMDoubleTypeInContext(c.cx);
	c.ptr = LLVMPointerTypeInContext(c.cx, 1);
	c.ptr_of = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *c.ptr_of);
	c.uniform = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *c.uniform);
	c.storage = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *c.storage);
	c.avail = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *c.avail);
	c.phase_of = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *c.phase_of);
	c.is_out = arena_alloc(fn->arena, fn->nvals + 1);
	c.memo_head = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *c.memo_head);
	for (uint32_t v = 0; v <= fn->nvals; v++)
		c.memo_head[v] = IR_NONE;
	launched = arena_alloc(fn->arena, fn->nkernels + 1);
	for (uint32_t i = 0; i < plan->nsteps; i++)
		if (plan->steps[i].kind == STEP_LAUNCH)
			launched[plan->steps[i].index] = true;
	for (uint32_t k = 0; k < fn->nkernels; k++) {
		if (!launched[k]) /* a reshape the memory plan made a view */
			continue;
		kernel(&c, k, &launches[k]);
		if (seen)
			reuse(&c, k, seen);
	}
	LLVMDisposeBuilder(c.b);
}

/* ---- one kernel for the same code ----------------------------------------
 * A model's layers give the same kernels again and again (a Llama's 16
 * layers: 81 kernels of 6 kinds). A kernel whose LLVM function is another's,
 * but for the names, is not kept: its launches run the other, and LLVM
 * optimizes and compiles each kind once. */

static uint64_t
fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* each value of f with a name: the value and its name */
typedef struct {
	struct {
		LLVMValueRef v;
		const char *name;
	} *e;
	uint32_t n, cap;
} Names;

static void
keep_name(Arena *a, Names *ns, LLVMValueRef v)
{
	size_t len;
	const char *name = LLVMGetValueName2(v, &len);

	if (!len)
		return;
	arena_grow(a, (void **)&ns->e, &ns->cap, ns->n + 1, sizeof *ns->e);
	ns->e[ns->n].v = v;
	ns->e[ns->n++].name = arena_strndup(a, name, len);
	LLVMSetValueName2(v, "", 0);
}

/* the function's text without its values' names (the trace's, there for
 * reading the LLVM IR) and with its own name, and its shared arrays', as
 * placeholders: two copies of the same code print the same. The names are
 * put back. */
static char *
text_of(Cg *c, LLVMValueRef f, LLVMValueRef *shared, const char **suffix, int nshared)
{
	static const char fname[] = "fp8cc.same";
	Arena *a = c->fn->arena;
	Names ns = { 0 };
	size_t len;
	const char *name = LLVMGetValueName2(f, &len);
	char *keep = arena_strndup(a, name, len), *text, *gname;

	for (unsigned i = 0; i < LLVMCountParams(f); i++)
		keep_name(a, &ns, LLVMGetParam(f, i));
	for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
		for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in))
			keep_name(a, &ns, in);
	LLVMSetValueName2(f, fname, sizeof fname - 1);
	for (int i = 0; i < nshared; i++)
		if (shared[i]) {
			gname = arena_printf(a, "%s%s", fname, suffix[i]);
			LLVMSetValueName2(shared[i], gname, strlen(gname));
		}
	text = LLVMPrintValueToString(f);
	LLVMSetValueName2(f, keep, len);
	for (int i = 0; i < nshared; i++)
		if (shared[i]) {
			gname = arena_printf(a, "%s%s", keep, suffix[i]);
			LLVMSetValueName2(shared[i], gname, strlen(gname));
		}
	for (uint32_t i = 0; i < ns.n; i++)
		LLVMSetValueName2(ns.e[i].v, ns.e[i].name, strlen(ns.e[i].name));
	return text;
}

static void
reuse(Cg *c, uint32_t k, Seen *seen)
{
	static const char *suffix[] = { ".smem", ".tile" };
	Kernel *kn = &c->fn->kernels[k];
	LLVMValueRef shared[2];
	char *text;
	uint64_t h;

	for (int i = 0; i < 2; i++)
		shared[i] = LLVMGetNamedGlobal(c->mod, arena_printf(c->fn->arena, "%s%s", kn->name, suffix[i]));
	text = text_of(c, c->kfn, shared, suffix, 2);
	h = fnv(text);
	for (uint32_t i = 0; i < seen->n; i++)
		if (seen->hash[i] == h && !strcmp(seen->text[i], text)) {
			LLVMDeleteFunction(c->kfn);
			for (int j = 0; j < 2; j++)
				if (shared[j])
					LLVMDeleteGlobal(shared[j]);
			kn->name = seen->name[i];
			LLVMDisposeMessage(text);
			return;
		}
	if (seen->n == seen->cap) {
		seen->cap = seen->cap ? 2 * seen->cap : 16;
		seen->text = realloc(seen->text, seen->cap * sizeof *seen->text);
		seen->name = realloc(seen->name, seen->cap * sizeof *seen->name);
		seen->hash = realloc(seen->hash, seen->cap * sizeof *seen->hash);
		if (!seen->text || !seen->name || !seen->hash)
			fatal("out of memory");
	}
	seen->text[seen->n] = text;
	seen->name[seen->n] = kn->name;
	seen->hash[seen->n++] = h;
}

void
be_seen_free(Seen *seen)
{
	for (uint32_t i = 0; i < seen->n; i++)
		LLVMDisposeMessage(seen->text[i]);
	free(seen->text);
	free(seen->name);
	free(seen->hash);
	*seen = (Seen){ 0 };
}
