/* codegen.c — fused kernels as LLVM functions for NVPTX.
 *
 * A kernel is a list of tasks — values to write, reductions to compute — run
 * in phases: a reduction completes at the end of its phase and its result is
 * read from the next one on, after a grid-wide barrier (the kernel is then
 * launched cooperatively) — or, where the last phase only writes scalars,
 * by the last block in, alone, with no one waiting (last_arrival). Each task loops over an iteration space (dims and
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
 * backend"): row kernels (rows.c), for reductions over the last dim with the
 * result broadcast back, keep a row in registers through one pass;
 * transposed writes go through shared-memory tiles beside the row-major copy
 * (tiles.c). What those files share with this one is in cg.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cg.h"

LLVMValueRef
cg_ic(Cg *c, int64_t v)
{
	return LLVMConstInt(c->ity, (unsigned long long)v, 0);
}

static LLVMValueRef
i32c(Cg *c, uint32_t v)
{
	return LLVMConstInt(c->i32, v, 0);
}

bool
cg_in_kernel(Cg *c, uint32_t v)
{
	return c->fn->vals[v].def != IR_NONE && c->fn->ins[c->fn->vals[v].def].kernel == (int32_t)c->k;
}

static bool
is_reduce(Cg *c, uint32_t v)
{
	const Instr *in = ir_def(c->fn, v);

	return in && ir_ops[in->op].cls == OC_REDUCE;
}

const int64_t *
cg_order_of(Func *fn, uint32_t v, int64_t *tmp)
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
		memcmp(cg_order_of(fn, a, t1), cg_order_of(fn, b, t2), (size_t)r * sizeof(int64_t)) == 0;
}

/* ---- memory access ---- */

LLVMTypeRef
cg_mem_type(Cg *c, DType t)
{
	return t == DT_B8 ? c->i8 : be_type(c, t);
}

static void
strides(Func *fn, uint32_t v, int64_t *st)
{
	int64_t tmp[IR_MAXRANK], s = 1;
	const int64_t *ord = cg_order_of(fn, v, tmp), *d = ir_dims(fn, v);

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
	ov = cg_order_of(fn, v, t1);
	os = cg_order_of(fn, s, t2);
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
	LLVMValueRef off = cg_ic(c, 0);
	int size = dt_size((DType)c->fn->vals[v].dtype);

	*align = size;
	if (at_space_index(c, v, coords)) {
		int a = c->space_align * size;

		*align = a > 16 ? 16 : a < size ? size : a;
		return c->space_lin;
	}
	strides(c->fn, v, st);
	for (int i = 0; i < c->fn->vals[v].rank; i++)
		off = LLVMBuildAdd(c->b, off, LLVMBuildMul(c->b, coords[i], cg_ic(c, st[i]), ""), "");
	return off;
}

/* ---- in place ----
 * An output v that holds a parameter u's new values (an update in place,
 * Func.rupd) may be given u's memory by the caller if the kernel that
 * writes v reads u only at v's own elements before writing them there, or
 * in an earlier phase (a grid barrier between). Every load of u and store
 * of v is noted with where it is — phase; group loop, whose loops (the
 * kept steps, the main one, the tail) take disjoint elements; loop body
 * and element, whose index is one LLVM value in a body (chunk); order in
 * the code — and checked when the kernel is done. Tiles and partial
 * reductions load through load_at too, outside any group loop: what they
 * read of u must come a phase before. A row kernel prefetches its rows
 * into shared memory (cp.async, not noted): it does not share. A kernel that
 * shares loses noalias on the two parameters, so that LLVM keeps each load
 * before the store after it (docs/design.md, "In-place updates"). */

typedef struct {
	uint32_t phase, group, body, seq;
	LLVMValueRef elem; /* the element's index in the loop, if at its own (own) */
	bool own;
} Access;

typedef struct Inplace {
	uint32_t v, u;
	Access *ld, *st;
	uint32_t nld, nst, capld, capst;
} Inplace;

static void
note_access(Cg *c, uint32_t v, LLVMValueRef base, LLVMValueRef *coords, bool store)
{
	for (uint32_t i = 0; i < c->nip; i++) {
		Inplace *ip = &c->ip[i];
		Access a;

		if ((store ? ip->v : ip->u) != v || base != c->ptr_of[v])
			continue;
		a = (Access){ c->phase, c->group, c->body, c->seq, c->space_lin, at_space_index(c, v, coords) };
		c->seq++;
		if (store) {
			arena_grow(c->fn->arena, (void **)&ip->st, &ip->capst, ip->nst + 1, sizeof a);
			ip->st[ip->nst++] = a;
		} else {
			arena_grow(c->fn->arena, (void **)&ip->ld, &ip->capld, ip->nld + 1, sizeof a);
			ip->ld[ip->nld++] = a;
		}
	}
}

/* how many of the kernel's inputs (outputs) live where x does; *other: one
 * of them is not x (a view of it, which the notes would miss) */
static uint32_t
at_loc(Cg *c, uint32_t x, bool outs, bool *other)
{
	const Kernel *k = &c->fn->kernels[c->k];
	Loc l = c->plan->loc[x];
	uint32_t n = 0;

	for (uint32_t j = 0; j < (outs ? k->nouts : k->nins); j++) {
		uint32_t w = c->fn->argv[(outs ? k->outs : k->ins) + j];

		if (same_loc(c->plan->loc[w], l)) {
			n++;
			*other |= w != x;
		}
	}
	return n;
}

/* the pairs the kernel checks: returned values it writes that update a
 * parameter it reads; one it does not read shares already */
static void
inplace_begin(Cg *c)
{
	Func *fn = c->fn;

	c->nip = 0;
	c->ip = arena_alloc(fn->arena, (fn->nrets + 1) * sizeof *c->ip);
	c->phase = c->group = c->body = 0;
	c->seq = 1;
	for (uint32_t i = 0; i < fn->nrets; i++) {
		uint32_t v = fn->rets[i], u, reads;
		bool other = false;

		if (fn->rupd[i] < 0 || !cg_in_kernel(c, v) || is_reduce(c, v))
			continue;
		u = fn->params[fn->rupd[i]];
		reads = at_loc(c, u, false, &other);
		at_loc(c, v, true, &other);
		if (other)
			continue;
		if (reads)
			c->ip[c->nip++] = (Inplace){ .v = v, .u = u };
		else
			plan_add_shared(c->fn, c->plan, v, u);
	}
}

static bool
may_share(const Inplace *ip)
{
	if (!ip->nst)
		return false;
	for (uint32_t i = 0; i < ip->nld; i++)
		for (uint32_t j = 0; j < ip->nst; j++) {
			const Access *l = &ip->ld[i], *s = &ip->st[j];

			if (l->phase < s->phase)
				continue;
			if (l->phase > s->phase || !l->group || l->group != s->group || !l->own || !s->own ||
				(l->body == s->body && l->elem == s->elem && l->seq > s->seq))
				return false;
		}
	return true;
}

static void
no_alias_attr(Cg *c, uint32_t v)
{
	const Kernel *k = &c->fn->kernels[c->k];
	unsigned na = LLVMGetEnumAttributeKindForName("noalias", 7);

	for (uint32_t j = 0; j < k->nins + k->nouts; j++)
		if (c->fn->argv[j < k->nins ? k->ins + j : k->outs + j - k->nins] == v)
			LLVMRemoveEnumAttributeAtIndex(c->kfn, j + 1, na);
}

static void
inplace_end(Cg *c, bool rows)
{
	for (uint32_t i = 0; i < c->nip; i++) {
		if (rows || !may_share(&c->ip[i]))
			continue;
		plan_add_shared(c->fn, c->plan, c->ip[i].v, c->ip[i].u);
		no_alias_attr(c, c->ip[i].u);
		no_alias_attr(c, c->ip[i].v);
	}
	c->nip = 0;
}

static LLVMValueRef
load_at(Cg *c, LLVMValueRef base, uint32_t v, LLVMValueRef *coords)
{
	DType t = (DType)c->fn->vals[v].dtype;
	int align;
	LLVMValueRef off = offset(c, v, coords, &align);
	LLVMValueRef p = LLVMBuildGEP2(c->b, cg_mem_type(c, t), base, &off, 1, "");
	LLVMValueRef x = LLVMBuildLoad2(c->b, cg_mem_type(c, t), p, "");

	LLVMSetAlignment(x, (unsigned)align);
	note_access(c, v, base, coords, false);
	return t == DT_B8 ? LLVMBuildICmp(c->b, LLVMIntNE, x, LLVMConstInt(c->i8, 0, 0), "") : x;
}

void
cg_store_at(Cg *c, LLVMValueRef base, uint32_t v, LLVMValueRef *coords, LLVMValueRef x)
{
	DType t = (DType)c->fn->vals[v].dtype;
	int align;
	LLVMValueRef off = offset(c, v, coords, &align);
	LLVMValueRef p = LLVMBuildGEP2(c->b, cg_mem_type(c, t), base, &off, 1, ""), st;

	if (t == DT_B8)
		x = LLVMBuildZExt(c->b, x, c->i8, "");
	st = LLVMBuildStore(c->b, x, p);
	LLVMSetAlignment(st, (unsigned)align);
	note_access(c, v, base, coords, true);
	if (c->stream)
		be_mark_stream(c->cx, st);
}

/* The scratch buffer: the grid barrier's arrival count and generation,
 * then the reductions' accumulators. The count, the generation and each
 * max accumulator in its own 128-byte line: a thousand blocks update each
 * in turn, and words that share a line share its turns. A max accumulator
 * has two lines, for the phases of even and odd generations (below). */
enum { SC_LINE = 128, SC_ARRIVED = 0, SC_GENERATION = SC_LINE, SC_FIRST = 2 * SC_LINE };

/* a byte offset into the scratch buffer, as a pointer */
static LLVMValueRef
scratch_at(Cg *c, int64_t off)
{
	LLVMValueRef o = LLVMConstInt(c->i64, (unsigned long long)off, 0);

	return LLVMBuildGEP2(c->b, c->i8, c->scratch, &o, 1, "");
}

/* A full max-reduction of phase p accumulates (atomic max from each block)
 * in the slot of generation gen + p — gen the barrier's generation when
 * the kernel started, bumped once by each barrier — and is read there after
 * barrier p. The last block to arrive at barrier p zeroes the slot of
 * generation gen + p + 1: everyone has read it after barrier p - 1, and no
 * one accumulates into it before barrier p. So the accumulators are zero
 * again for the next phase and the next run, without a count of readers. */
static LLVMValueRef
max_slot(Cg *c, uint32_t v, uint32_t p)
{
	LLVMValueRef odd = LLVMBuildAnd(c->b, LLVMBuildAdd(c->b, c->gen, i32c(c, p), ""), i32c(c, 1), "");

	return LLVMBuildGEP2(c->b, c->i8, scratch_at(c, c->storage[v]),
		(LLVMValueRef[]){ LLVMBuildZExt(c->b, LLVMBuildMul(c->b, odd, i32c(c, SC_LINE), ""), c->i64, "") }, 1,
		"");
}

/* ---- coordinates ---- */

LLVMValueRef *
cg_new_coords(Cg *c, int rank)
{
	return arena_alloc(c->fn->arena, (size_t)(rank + 1) * sizeof(LLVMValueRef));
}

/* coordinates of a linear index over dims taken in the given order */
LLVMValueRef *
cg_delinearize(Cg *c, LLVMValueRef lin, const int64_t *dims, const int64_t *ord, int rank)
{
	LLVMValueRef *co = cg_new_coords(c, rank);

	for (int j = rank - 1; j >= 0; j--) {
		int64_t d = dims[ord[j]];

		co[ord[j]] = j == 0 ? lin : LLVMBuildURem(c->b, lin, cg_ic(c, d), "");
		if (j > 0)
			lin = LLVMBuildUDiv(c->b, lin, cg_ic(c, d), "");
	}
	return co;
}

static LLVMValueRef
linearize(Cg *c, LLVMValueRef *co, const int64_t *dims, int rank)
{
	LLVMValueRef lin = cg_ic(c, 0);

	for (int i = 0; i < rank; i++)
		lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, lin, cg_ic(c, dims[i]), ""), co[i], "");
	return lin;
}

/* ---- values ---- */

static LLVMValueRef
operand(Cg *c, uint32_t a, LLVMValueRef *coords)
{
	return cg_value(c, a, c->fn->vals[a].rank == 0 ? NULL : coords);
}

/* the coordinates of a shape op's operand for the result's coordinates */
static LLVMValueRef *
shape_coords(Cg *c, const Instr *in, LLVMValueRef *co)
{
	Func *fn = c->fn;
	uint32_t a = ir_args(fn, in)[0];
	const int64_t *at = ir_attr(fn, in), *ad = ir_dims(fn, a);
	int rank = fn->vals[a].rank, rr = fn->vals[in->res].rank;
	LLVMValueRef *n = cg_new_coords(c, rank);
	int64_t ord[IR_MAXRANK];

	switch (in->op) {
	case OP_BROADCAST:
		for (int i = 0; i < rank; i++)
			n[i] = ad[i] == 1 ? cg_ic(c, 0) : co[at[i]];
		return n;
	case OP_TRANSPOSE:
		for (int i = 0; i < rank; i++)
			n[at[i]] = co[i];
		return n;
	case OP_SLICE:
		for (int i = 0; i < rank; i++)
			n[i] = LLVMBuildAdd(
				c->b, cg_ic(c, at[i]), LLVMBuildMul(c->b, co[i], cg_ic(c, at[2 * rank + i]), ""), "");
		return n;
	case OP_SQUEEZE:
		for (int i = 0, j = 0, k = 0; i < rank; i++)
			n[i] = (k < (int)in->nattr && at[k] == i) ? (k++, cg_ic(c, 0)) : co[j++];
		return n;
	case OP_RESHAPE:
		for (int i = 0; i < rank; i++)
			ord[i] = i;
		return cg_delinearize(c, linearize(c, co, ir_dims(fn, in->res), rr), ad, ord, rank);
	case OP_FLIP:
		memcpy(n, co, (size_t)rank * sizeof *n);
		for (uint32_t k = 0; k < in->nattr; k++)
			n[at[k]] = LLVMBuildSub(c->b, cg_ic(c, ad[at[k]] - 1), co[at[k]], "");
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
		LLVMValueRef *n = cg_new_coords(c, rank), rel, x, inside;

		if (size == 0)
			continue;
		memcpy(n, co, (size_t)rank * sizeof *n);
		rel = LLVMBuildSub(c->b, co[dim], cg_ic(c, off), "");
		inside = LLVMBuildICmp(c->b, LLVMIntULT, rel, cg_ic(c, size), "");
		n[dim] = LLVMBuildSelect(c->b, inside, rel, cg_ic(c, 0), "");
		x = cg_value(c, a, n);
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
	LLVMValueRef zero = cg_ic(c, 0), hi = cg_ic(c, size - 1);

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
	LLVMValueRef *n = cg_new_coords(c, rank), *icoord = co, q;

	if (size == 0)
		return be_constant(c, 0, (DType)fn->vals[in->res].dtype);
	if (in->op == OP_TAKE) {
		icoord = cg_new_coords(c, 1);
		icoord[0] = co[dim];
	}
	q = clamp_index(c, operand(c, ix, icoord), (DType)fn->vals[ix].dtype, size);
	memcpy(n, co, (size_t)rank * sizeof *n);
	n[dim] = q;
	return cg_value(c, x, n);
}

/* pad: a where the coordinates fall on one of its elements, else the value */
static LLVMValueRef
pad(Cg *c, const Instr *in, LLVMValueRef *co)
{
	Func *fn = c->fn;
	uint32_t x = ir_args(fn, in)[0], v = ir_args(fn, in)[1];
	const int64_t *p = ir_attr(fn, in), *xd = ir_dims(fn, x);
	int rank = fn->vals[x].rank;
	LLVMValueRef *n = cg_new_coords(c, rank), inside = LLVMConstInt(c->i1, 1, 0), zero = cg_ic(c, 0);

	if (rank == 0)
		return operand(c, x, NULL);
	if (ir_numel(fn, x) == 0)
		return operand(c, v, NULL);
	for (int d = 0; d < rank; d++) {
		int64_t step = p[2 * rank + d] + 1;
		LLVMValueRef s = LLVMBuildSub(c->b, co[d], cg_ic(c, p[d]), ""), ok, q;

		ok = LLVMBuildICmp(c->b, LLVMIntSGE, s, zero, "");
		s = LLVMBuildSelect(c->b, ok, s, zero, "");
		q = step == 1 ? s : LLVMBuildUDiv(c->b, s, cg_ic(c, step), "");
		if (step > 1)
			ok = LLVMBuildAnd(c->b, ok,
				LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildURem(c->b, s, cg_ic(c, step), ""), zero, ""),
				"");
		ok = LLVMBuildAnd(c->b, ok, LLVMBuildICmp(c->b, LLVMIntSLT, q, cg_ic(c, xd[d]), ""), "");
		n[d] = LLVMBuildSelect(c->b, ok, q, zero, "");
		inside = LLVMBuildAnd(c->b, inside, ok, "");
	}
	return LLVMBuildSelect(c->b, inside, cg_value(c, x, n), operand(c, v, NULL), "");
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

/* the operand of a clamp of v to an fp8 format's finite range (torchao's
 * before every cast): the saturating conversion clamps the same way, so a
 * cast without fix-up may read the clamp's operand (a NaN keeps its sign
 * there, as torch's clamp keeps it). Only a clamp the kernel computes: one
 * it loads is read as it is */
static uint32_t
unclamped(Cg *c, uint32_t v, DType to)
{
	Func *fn = c->fn;
	double big = to == DT_F8E4M3FN ? 448 : 57344, k;

	for (;;) {
		const Instr *d = ir_def(fn, v);
		const uint32_t *a;
		int i;

		/* a clamp computed here: its operand is at hand */
		if (!cg_in_kernel(c, v) || (d->op != OP_MINIMUM && d->op != OP_MAXIMUM) ||
			!dt_isfloat((DType)fn->vals[v].dtype))
			return v;
		a = ir_args(fn, d);
		i = ir_const(fn, a[1], &k) ? 0 : ir_const(fn, a[0], &k) ? 1 : -1;
		if (i < 0 || (d->op == OP_MAXIMUM ? -k : k) != big || fn->vals[a[i]].dtype != fn->vals[v].dtype ||
			!ir_same_shape(fn, a[i], v))
			return v;
		v = a[i];
	}
}

static LLVMValueRef
compute(Cg *c, const Instr *in, LLVMValueRef *co)
{
	Func *fn = c->fn;
	const uint32_t *a = ir_args(fn, in);
	DType t = (DType)fn->vals[in->res].dtype, at = in->nargs ? (DType)fn->vals[a[0]].dtype : t;

	switch (ir_ops[in->op].cls) {
	case OC_CONVERT:
		if (!(in->flags & IF_NO_FIXUP))
			return be_convert(c, operand(c, a[0], co), at, t, true);
		return be_convert(c, operand(c, dt_isfp8(t) ? unclamped(c, a[0], t) : a[0], co), at, t, false);
	case OC_UNARY:   return be_unary(c, (Op)in->op, operand(c, a[0], co), at);
	case OC_BINARY:
	case OC_COMPARE: return be_binary(c, (Op)in->op, operand(c, a[0], co), operand(c, a[1], co), at);
	case OC_WHERE:
		return LLVMBuildSelect(c->b, operand(c, a[0], co), operand(c, a[1], co), operand(c, a[2], co), "");
	case OC_FMA: {
		LLVMTypeRef ft = be_type(c, t);
		LLVMValueRef x[3] = { operand(c, a[0], co), operand(c, a[1], co), operand(c, a[2], co) };

		return be_call(c, "llvm.fma", &ft, 1, x, 3);
	}
	case OC_FULL:       return be_constant(c, in->fval, t);
	case OC_CLONE:      return operand(c, a[0], co);
	case OC_SHAPE:      return cg_value(c, a[0], fn->vals[a[0]].rank ? shape_coords(c, in, co) : NULL);
	case OC_CAT:        return cat(c, in, co);
	case OC_GATHER:     return gather(c, in, co);
	case OC_PAD:        return pad(c, in, co);
	case OC_BITCAST:    return LLVMBuildBitCast(c->b, operand(c, a[0], co), be_type(c, t), "");
	case OC_IOTA:       return iota(c, in, co);
	case OC_REDUCE:
	case OC_GEMM:
	case OC_EXTERN:
	case OC_AUX:
	case OC_COLLECTIVE: break;
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

void
cg_memo_add(Cg *c, uint32_t v, LLVMValueRef *co, LLVMValueRef x)
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
LLVMValueRef
cg_storage(Cg *c, uint32_t v)
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
	if (!cg_in_kernel(c, v))
		x = load_at(c, c->ptr_of[v], v, NULL);
	else
		x = compute(c, ir_def(c->fn, v), NULL);
	if (here != c->pre)
		LLVMPositionBuilderAtEnd(c->b, here);
	return c->uniform[v] = x;
}

/* a kept input at the current chunk's element: read from the shared array,
 * or loaded and stored there (Keep). Element j of the V a thread takes is
 * in the step's 16-byte piece j * size / 16 of the input, each piece
 * BE_BLOCK threads' 16 bytes side by side, so a warp's accesses meet no
 * bank twice. */
static LLVMValueRef
kept(Cg *c, uint32_t v, LLVMValueRef *co)
{
	DType t = (DType)c->fn->vals[v].dtype;
	int64_t sz = dt_size(t), at = c->keep_off[v] + c->keep_j * sz / 16 * BE_BLOCK * 16 + c->keep_j * sz % 16;
	LLVMValueRef o = LLVMConstInt(c->i64, (unsigned long long)at, 0), x;
	LLVMValueRef p = LLVMBuildGEP2(c->b, c->i8, c->keep_at, &o, 1, "");
	unsigned align = at % 16 ? (unsigned)(at & -at) : 16;

	if (c->keep_load) {
		x = LLVMBuildLoad2(c->b, cg_mem_type(c, t), p, "");
		LLVMSetAlignment(x, align);
		return x;
	}
	x = load_at(c, c->ptr_of[v], v, co);
	LLVMSetAlignment(LLVMBuildStore(c->b, x, p), align);
	return x;
}

/* the current chunk element's own coordinates (those of any access that
 * reads there, by whatever path) */
static bool
at_element(Cg *c, uint32_t v, LLVMValueRef *co)
{
	return c->space_coords &&
		(co == c->space_coords || !memcmp(co, c->space_coords, (size_t)c->fn->vals[v].rank * sizeof *co));
}

LLVMValueRef
cg_value(Cg *c, uint32_t v, LLVMValueRef *co)
{
	LLVMValueRef x;

	if (c->fn->vals[v].rank == 0)
		return uniform(c, v);
	if ((x = memo_find(c, v, co)))
		return x;
	if (!cg_in_kernel(c, v))
		x = c->keep_at && c->keep_off[v] >= 0 && at_element(c, v, co) ? kept(c, v, co)
									      : load_at(c, c->ptr_of[v], v, co);
	else if (is_reduce(c, v))
		x = load_at(c, cg_storage(c, v), v, co); /* a partial reduction of an earlier phase */
	else
		x = compute(c, ir_def(c->fn, v), co);
	cg_memo_add(c, v, co, x);
	return x;
}

/* ---- control flow ---- */

LLVMBasicBlockRef
cg_block(Cg *c, const char *name)
{
	return LLVMAppendBasicBlockInContext(c->cx, c->kfn, name);
}

LLVMValueRef
cg_entry_alloca(Cg *c, LLVMTypeRef t)
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

/* for (i = start; i < end; i += step): leaves the builder in the body */
LLVMValueRef
cg_loop_begin(Cg *c, Loop *l, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step)
{
	LLVMBasicBlockRef body;

	l->iv = cg_entry_alloca(c, c->ity);
	l->step = step;
	LLVMBuildStore(c->b, start, l->iv);
	l->head = cg_block(c, "loop");
	body = cg_block(c, "body");
	l->exit = cg_block(c, "done");
	LLVMBuildBr(c->b, l->head);
	LLVMPositionBuilderAtEnd(c->b, l->head);
	l->i = LLVMBuildLoad2(c->b, c->ity, l->iv, "i");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntULT, l->i, end, ""), body, l->exit);
	LLVMPositionBuilderAtEnd(c->b, body);
	l->nmemo = c->nmemo;
	c->body = c->seq++;
	return l->i;
}

void
cg_loop_end(Cg *c, Loop *l)
{
	LLVMBuildStore(c->b, LLVMBuildAdd(c->b, l->i, l->step, ""), l->iv);
	LLVMBuildBr(c->b, l->head);
	LLVMPositionBuilderAtEnd(c->b, l->exit);
	memo_truncate(c, l->nmemo); /* what the body computed does not dominate the exit */
	c->body = c->seq++;
}

/* if (cond) { ... }: returns the join block; the builder is in the then-block */
LLVMBasicBlockRef
cg_if_begin(Cg *c, LLVMValueRef cond)
{
	LLVMBasicBlockRef then = cg_block(c, "then"), join = cg_block(c, "join");

	LLVMBuildCondBr(c->b, cond, then, join);
	LLVMPositionBuilderAtEnd(c->b, then);
	return join;
}

void
cg_if_end(Cg *c, LLVMBasicBlockRef join)
{
	LLVMBuildBr(c->b, join);
	LLVMPositionBuilderAtEnd(c->b, join);
}

void
cg_syncthreads(Cg *c)
{
	LLVMValueRef zero = i32c(c, 0);

	be_call(c, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, &zero, 1);
}

/* ---- what blocks share through global memory: device-scope accesses ---- */

static unsigned
gpu_scope(Cg *c)
{
	return LLVMGetSyncScopeID(c->cx, "device", 6);
}

/* fence.acq_rel.gpu: with a relaxed atomic after it, a release of what the
 * block wrote (after a CTA barrier); after one, an acquire of what others did */
static void
fence(Cg *c)
{
	LLVMBuildFenceSyncScope(c->b, LLVMAtomicOrderingAcquireRelease, gpu_scope(c), "");
}

/* a relaxed device-scope atomic (atom.global.OP) */
static LLVMValueRef
atomic_rmw(Cg *c, LLVMAtomicRMWBinOp op, LLVMValueRef p, LLVMValueRef x)
{
	return LLVMBuildAtomicRMWSyncScope(c->b, op, p, x, LLVMAtomicOrderingMonotonic, gpu_scope(c));
}

static unsigned
type_bytes(LLVMTypeRef t)
{
	switch (LLVMGetTypeKind(t)) {
	case LLVMDoubleTypeKind: return 8;
	case LLVMFloatTypeKind:  return 4;
	default:                 return LLVMGetIntTypeWidth(t) / 8;
	}
}

/* a relaxed device-scope load or store (ld.relaxed.gpu, st.relaxed.gpu):
 * what other blocks wrote, or what they read, through L2 */
static LLVMValueRef
load_relaxed(Cg *c, LLVMTypeRef t, LLVMValueRef p)
{
	LLVMValueRef v = LLVMBuildLoad2(c->b, t, p, "");

	LLVMSetOrdering(v, LLVMAtomicOrderingMonotonic);
	LLVMSetAtomicSyncScopeID(v, gpu_scope(c));
	LLVMSetAlignment(v, type_bytes(t));
	return v;
}

static void
store_relaxed(Cg *c, LLVMValueRef x, LLVMValueRef p)
{
	LLVMValueRef st = LLVMBuildStore(c->b, x, p);

	LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic);
	LLVMSetAtomicSyncScopeID(st, gpu_scope(c));
	LLVMSetAlignment(st, type_bytes(LLVMTypeOf(x)));
}

/* ---- grid-wide barrier: arrivals and a generation, each in its own line ----
 *
 * Thread 0 of each block counts in; the last one in resets the count and
 * bumps the generation, which the others poll. Measured on the H200
 * (docs/design.md, "The backend"): when the count, the generation and the
 * accumulators shared a line, and the fences were fence.sc, a barrier of
 * 1056 blocks cost about 9 ns a block (the polls queue with the arrivals
 * at that line); apart, about 4 µs less at 4096² — and sleeping between
 * polls (nanosleep, 32 to 1000 ns) changed nothing more. */

/* thread 0 of a block at barrier p, after a fence: its arrival; true in
 * the last block in */
static LLVMValueRef
arrive(Cg *c)
{
	LLVMValueRef old;

	fence(c);
	old = atomic_rmw(c, LLVMAtomicRMWBinOpAdd, scratch_at(c, SC_ARRIVED), i32c(c, 1));
	return LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildZExt(c->b, old, c->ity, ""),
		LLVMBuildSub(c->b, c->nctaid, cg_ic(c, 1), ""), "");
}

/* what the last block into barrier p does for everyone: zero the max
 * accumulators of the next generation (max_slot), reset the count, bump
 * the generation */
static void
last_in(Cg *c, uint32_t p)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];

	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res;

		if (ir_ops[fn->ins[i].op].cls == OC_REDUCE && fn->vals[v].rank == 0 && !cg_red_of(c, v).sum)
			store_relaxed(c, LLVMConstInt(c->i64, 0, 0), max_slot(c, v, p + 1));
	}
	store_relaxed(c, i32c(c, 0), scratch_at(c, SC_ARRIVED));
	fence(c);
	atomic_rmw(c, LLVMAtomicRMWBinOpAdd, scratch_at(c, SC_GENERATION), i32c(c, 1));
}

static void
grid_barrier(Cg *c, uint32_t p)
{
	LLVMValueRef gen = scratch_at(c, SC_GENERATION), g, v;
	LLVMBasicBlockRef join, last, wait, spin, done;

	cg_syncthreads(c);
	join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_ic(c, 0), ""));
	g = load_relaxed(c, c->i32, gen);
	last = cg_block(c, "last");
	wait = cg_block(c, "wait");
	spin = cg_block(c, "spin");
	done = cg_block(c, "arrived");
	LLVMBuildCondBr(c->b, arrive(c), last, wait);
	LLVMPositionBuilderAtEnd(c->b, last);
	last_in(c, p);
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, wait);
	LLVMBuildBr(c->b, spin);
	LLVMPositionBuilderAtEnd(c->b, spin);
	v = load_relaxed(c, c->i32, gen);
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, v, g, ""), spin, done);
	LLVMPositionBuilderAtEnd(c->b, done);
	fence(c);
	cg_if_end(c, join);
	cg_syncthreads(c);
}

/* Barrier p when the last phase only writes what completed at it (full
 * reductions, and scalars computed from them): each block counts in as at
 * a grid barrier, and thread 0 of the last one in, alone, runs the last
 * phase; the others end there. Nobody waits, so this needs no cooperative
 * launch. Returns the kernel's end, where the last phase goes on. */
static LLVMBasicBlockRef
last_arrival(Cg *c, uint32_t p)
{
	LLVMBasicBlockRef first = cg_block(c, "arrive"), last = cg_block(c, "last"), end = cg_block(c, "end");

	cg_syncthreads(c);
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_ic(c, 0), ""), first, end);
	LLVMPositionBuilderAtEnd(c->b, first);
	LLVMBuildCondBr(c->b, arrive(c), last, end);
	LLVMPositionBuilderAtEnd(c->b, last);
	last_in(c, p);
	fence(c);
	return end;
}

/* ---- reduction keys: unsigned integers that order like the values ---- */

Red
cg_red_of(Cg *c, uint32_t v)
{
	const Instr *in = ir_def(c->fn, v);
	Red r = { (Op)in->op, (DType)c->fn->vals[v].dtype, NULL, false, false, false };
	const Instr *of = ir_def(c->fn, ir_args(c->fn, in)[0]);

	r.sum = r.op == OP_SUM || r.op == OP_PROD;
	r.abs = r.op == OP_AMAX && dt_isfloat(r.t) && of && of->op == OP_ABS;
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
		if (!r->wide)
			x = be_convert(c, x, r->t, DT_F32, true);
		/* no sign: the bits order as the values do, a NaN above all
		 * (cg_unkey makes the NaN found canonical). But LLVM, sure that
		 * fabs clears the sign, may turn the or into a xor, and the GPU's
		 * abs.f64 of a -NaN keeps its sign, which the xor then clears:
		 * keyed below every number (the GPU's random programs,
		 * 2026-12-06). An f64 NaN takes the top key by an integer
		 * select; f32 keys (the quantizes) are as the GPU suite passed
		 * them */
		if (r->abs) {
			bits = LLVMBuildOr(c->b, LLVMBuildBitCast(c->b, x, r->kt, ""), top, "");
			return r->wide ? LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, ""),
						 LLVMConstAllOnes(r->kt), bits, "")
				       : bits;
		}
		/* a NaN of either sign gets the top key. Not by making x a
		 * positive NaN first: LLVM may take any NaN for the result of an
		 * FP op, so it folds select(isnan(x), NaN, x) to x, and the GPU's
		 * f64 sqrt of a negative number is a -NaN, which would then key
		 * below every number (the GPU's random programs, 2026-12-05) */
		bits = LLVMBuildBitCast(c->b, x, r->kt, "");
		mask = LLVMBuildOr(c->b, LLVMBuildAShr(c->b, bits, LLVMConstInt(r->kt, w - 1, 0), ""), top, "");
		return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, ""), LLVMConstAllOnes(r->kt),
			LLVMBuildXor(c->b, bits, mask, ""), "");
	}
	if (r->t == DT_U8 || r->t == DT_B8)
		return LLVMBuildZExt(c->b, x, r->kt, "");
	x = r->wide ? x : LLVMBuildSExt(c->b, x, r->kt, "");
	return LLVMBuildXor(c->b, x, top, "");
}

LLVMValueRef
cg_key(Cg *c, const Red *r, LLVMValueRef x)
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

LLVMValueRef
cg_identity(Cg *c, const Red *r)
{
	if (r->op == OP_SUM)
		return dt_isfloat(r->t) ? LLVMConstReal(c->f64, 0) : LLVMConstInt(c->i64, 0, 0);
	if (r->op == OP_PROD)
		return dt_isfloat(r->t) ? LLVMConstReal(c->f64, 1) : LLVMConstInt(c->i64, 1, 0);
	return LLVMConstInt(r->kt, 0, 0);
}

LLVMValueRef
cg_combine(Cg *c, const Red *r, LLVMValueRef a, LLVMValueRef b)
{
	bool f = dt_isfloat(r->t);

	if (r->op == OP_SUM)
		return f ? LLVMBuildFAdd(c->b, a, b, "") : LLVMBuildAdd(c->b, a, b, "");
	if (r->op == OP_PROD)
		return f ? LLVMBuildFMul(c->b, a, b, "") : LLVMBuildMul(c->b, a, b, "");
	return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntUGT, a, b, ""), a, b, "");
}

/* the reduced value (in the result's dtype) of an accumulated key */
LLVMValueRef
cg_unkey(Cg *c, const Red *r, LLVMValueRef k)
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
	if (r->abs)
		nan = LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, "");
	if (nan)
		x = LLVMBuildSelect(c->b, nan, LLVMConstReal(LLVMTypeOf(x), NAN), x, "");
	return r->wide ? x : be_convert(c, x, DT_F32, r->t, true);
}

/* butterfly over groups of 2·top lanes: every lane ends with the
 * combination of its group's, in the same order on every run */
LLVMValueRef
cg_lanes_reduce(Cg *c, const Red *r, LLVMValueRef x, unsigned top)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	bool wide = t == c->i64 || t == c->f64;

	for (unsigned d = top; d >= 1; d /= 2) {
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
		x = cg_combine(c, r, x, other); /* + and max commute: both lanes get the same bits */
	}
	return x;
}

/* butterfly over the warp: every lane ends with the combination of all 32 */
LLVMValueRef
cg_warp_reduce(Cg *c, const Red *r, LLVMValueRef x)
{
	return cg_lanes_reduce(c, r, x, 16);
}

/* ---- block-level reduction: warps, then warp 0 over the warps' results ---- */

/* a shared-memory array of the kernel, named after it */
LLVMValueRef
cg_shared_array(Cg *c, const char *name, LLVMTypeRef at, unsigned align)
{
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, at, name, 3);

	LLVMSetInitializer(g, LLVMGetUndef(at));
	LLVMSetLinkage(g, LLVMInternalLinkage);
	LLVMSetAlignment(g, align);
	return g;
}

LLVMValueRef
cg_smem_slot(Cg *c, LLVMValueRef i)
{
	char name[32];
	LLVMTypeRef at = LLVMArrayType2(c->i64, BE_REDUCE_SMEM / 8);
	LLVMValueRef g, idx[2] = { LLVMConstInt(c->i64, 0, 0), i };

	snprintf(name, sizeof name, "%s.smem", c->fn->kernels[c->k].name);
	if (!(g = LLVMGetNamedGlobal(c->mod, name)))
		g = cg_shared_array(c, name, at, 8);
	return LLVMBuildGEP2(c->b, at, g, idx, 2, "");
}

LLVMValueRef
cg_to_i64(Cg *c, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);

	if (t == c->f64)
		return LLVMBuildBitCast(c->b, x, c->i64, "");
	return t == c->i64 ? x : LLVMBuildZExt(c->b, x, c->i64, "");
}

LLVMValueRef
cg_from_i64(Cg *c, LLVMValueRef x, LLVMTypeRef t)
{
	if (t == c->f64)
		return LLVMBuildBitCast(c->b, x, c->f64, "");
	return t == c->i64 ? x : LLVMBuildTrunc(c->b, x, t, "");
}

/* every thread's x combined over the block; valid in thread 0 */
LLVMValueRef
cg_block_reduce(Cg *c, const Red *r, LLVMValueRef x)
{
	LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, cg_ic(c, 31), ""),
		     warp = LLVMBuildLShr(c->b, c->tid, cg_ic(c, 5), "");
	LLVMValueRef res = cg_entry_alloca(c, r->kt), v;
	LLVMBasicBlockRef join;

	x = cg_warp_reduce(c, r, x);
	join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, lane, cg_ic(c, 0), ""));
	LLVMBuildStore(c->b, cg_to_i64(c, x), cg_smem_slot(c, warp));
	cg_if_end(c, join);
	cg_syncthreads(c);
	LLVMBuildStore(c->b, cg_identity(c, r), res);
	join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, warp, cg_ic(c, 0), ""));
	v = cg_from_i64(c,
		LLVMBuildLoad2(
			c->b, c->i64, cg_smem_slot(c, LLVMBuildAnd(c->b, lane, cg_ic(c, BE_BLOCK / 32 - 1), "")), ""),
		r->kt);
	v = LLVMBuildSelect(
		c->b, LLVMBuildICmp(c->b, LLVMIntULT, lane, cg_ic(c, BE_BLOCK / 32), ""), v, cg_identity(c, r), "");
	LLVMBuildStore(c->b, cg_warp_reduce(c, r, v), res);
	cg_if_end(c, join);
	cg_syncthreads(c); /* the slots are free again */
	return LLVMBuildLoad2(c->b, r->kt, res, "");
}

/* ---- the kernel's plan: phases, storage, scratch ---- */

typedef struct {
	uint32_t *phase; /* per value: the phase that computes it */
	bool *out;       /* per value: written to a kernel output */
	uint32_t nphases;
	int64_t scratch; /* bytes */
} KPlan;

static void
analyze(Cg *c, KPlan *kp)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	int64_t off = SC_FIRST;

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

			if (cg_in_kernel(c, a) && c->avail[a] > p)
				p = c->avail[a];
		}
		kp->phase[v] = p;
		c->avail[v] = p;
		c->storage[v] = -1;
		if (ir_ops[in->op].cls != OC_REDUCE)
			continue;
		c->avail[v] = p + 1;
		if (fn->vals[v].rank == 0) {
			Red r = cg_red_of(c, v);

			c->storage[v] = off;
			off += r.sum ? 8 * BE_MAXGRID : 2 * SC_LINE;
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
	kp->scratch = (kp->nphases > 1 || off > SC_FIRST) ? off : 0;
}

/* ---- loops over an iteration space ---- */

/* elements per thread: 16 bytes of the narrowest tensor read or written at the
 * loop's own index */
int
cg_vector_width(Cg *c, const Group *g)
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
				cg_combine(c, &reds[i], LLVMBuildLoad2(c->b, reds[i].kt, accs[i], ""),
					cg_key(c, &reds[i], x)),
				accs[i]);
		} else {
			cg_store_at(c, c->ptr_of[v], v, c->space_coords, cg_value(c, v, c->space_coords));
		}
	}
}

/* make co, at linear index lin (a multiple of align), the current element
 * of space: accesses at the space's own index are aligned */
LLVMValueRef *
cg_current(Cg *c, uint32_t space, LLVMValueRef *co, LLVMValueRef lin, int align)
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

	cg_element(c, g,
		c->fn->vals[s].rank == 0
			? NULL
			: cg_delinearize(c, lin, ir_dims(c->fn, s), cg_order_of(c->fn, s, tmp), c->fn->vals[s].rank),
		lin, align, accs, reds);
}

/* group g's element at coordinates co, linear index lin (a multiple of
 * align) */
void
cg_element(Cg *c, const Group *g, LLVMValueRef *co, LLVMValueRef lin, int align, LLVMValueRef *accs, const Red *reds)
{
	cg_current(c, g->space, co, lin, align);
	element(c, g, accs, reds);
	c->space_coords = NULL;
}

/* load each kernel input laid out as the current space at the current
 * element, into the memo: a loop that calls this for each element of its
 * chunk first issues all of the chunk's loads before any computation (a
 * load nothing reads is dead, and LLVM drops it) */
void
cg_preload(Cg *c)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];

	for (uint32_t j = 0; j < k->nins; j++) {
		uint32_t u = fn->argv[k->ins + j];

		if (fn->vals[u].rank > 0 && same_space(fn, u, c->space))
			cg_value(c, u, c->space_coords);
	}
}

/* ---- transposed reads ---- */

/* true if computing v, whose dim d is the space's dim perm[d], reads some
 * kernel input across the space's memory order: the input's inner dim is
 * the space's outer one. Walks elementwise ops and transposes; anything that
 * remaps coordinates otherwise ends the walk. */
bool
cg_reads_across(Cg *c, uint32_t v, const int64_t *perm, int depth)
{
	Func *fn = c->fn;
	const Instr *in = ir_def(fn, v);
	int64_t t1[IR_MAXRANK], t2[IR_MAXRANK], p2[IR_MAXRANK];
	const int64_t *ov, *os;

	if (fn->vals[v].rank != 2 || depth > 64)
		return false;
	if (!cg_in_kernel(c, v)) {
		ov = cg_order_of(fn, v, t1);
		os = cg_order_of(fn, c->space, t2);
		return perm[ov[1]] == os[0];
	}
	if (in->op == OP_TRANSPOSE) {
		for (int d = 0; d < 2; d++)
			p2[ir_attr(fn, in)[d]] = perm[d];
		return cg_reads_across(c, ir_args(fn, in)[0], p2, depth + 1);
	}
	if (!op_elementwise((Op)in->op) && in->op != OP_CLONE)
		return false;
	for (uint32_t j = 0; j < in->nargs; j++)
		if (cg_reads_across(c, ir_args(fn, in)[j], perm, depth + 1))
			return true;
	return false;
}

bool
cg_group_reads_across(Cg *c, const Group *g)
{
	static const int64_t id[2] = { 0, 1 };

	for (uint32_t i = 0; i < g->nvals; i++)
		if (ir_ops[ir_def(c->fn, g->vals[i])->op].cls != OC_REDUCE && cg_reads_across(c, g->vals[i], id, 0))
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
		return LLVMBuildMul(c->b, ch, cg_ic(c, V), "");
	w = LLVMBuildUDiv(c->b, ch, cg_ic(c, 32), "");
	a = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, LLVMBuildUDiv(c->b, w, cg_ic(c, rowchunks), ""), cg_ic(c, 32), ""),
		LLVMBuildURem(c->b, ch, cg_ic(c, 32), ""), "");
	b = LLVMBuildMul(c->b, LLVMBuildURem(c->b, w, cg_ic(c, rowchunks), ""), cg_ic(c, V), "");
	return LLVMBuildAdd(c->b, LLVMBuildMul(c->b, a, cg_ic(c, inner), ""), b, "");
}

/* the elements element j of a thread's V (the first at a multiple of V) is
 * aligned to */
int
cg_lane_align(int j, int V)
{
	return j ? (j & -j) : V;
}

#define CHUNK_SWEEP_VALUES 2 /* the most outputs and inputs a chunk in sweeps has */

/* the ops whose libdevice functions branch (CUDA 13.0's libdevice: one
 * kernel an op, compiled, left 2-byte loads of bf16 for these and 16-byte
 * ones for exp, log, sqrt, rsqrt, cosh and the rest) */
static bool
branches(Op op)
{
	switch (op) {
	case OP_TANH:
	case OP_ERF:
	case OP_ERFC:
	case OP_ERFINV:
	case OP_SIN:
	case OP_COS:
	case OP_TAN:
	case OP_ATAN:
	case OP_ASINH:
	case OP_ACOSH:
	case OP_ATANH:
	case OP_LGAMMA:
	case OP_POW:
	case OP_ATAN2:
	case OP_FMOD:
	case OP_REMAINDER:
	case OP_NEXTAFTER: return true;
	default:           return false;
	}
}

/* Walk what computing v reads, through elementwise ops (at v's own
 * coordinates), marking each value in seen: with `load`, load the kernel
 * inputs it reaches at the current element; returns whether an op on the
 * way calls a libdevice function that branches. */
static bool
walk_elementwise(Cg *c, uint32_t v, bool *seen, bool load)
{
	Func *fn = c->fn;
	const Instr *in = ir_def(fn, v);
	bool calls = false;

	if (seen[v] || fn->vals[v].rank == 0)
		return false;
	seen[v] = true;
	if (!cg_in_kernel(c, v)) {
		if (load)
			cg_value(c, v, c->space_coords);
		return false;
	}
	if (!op_elementwise((Op)in->op) && in->op != OP_CLONE)
		return false;
	for (uint32_t j = 0; j < in->nargs; j++)
		calls |= walk_elementwise(c, ir_args(fn, in)[j], seen, load);
	return calls || branches((Op)in->op);
}

/* what element() computes for value k of the group: a reduction's operand
 * where it feeds an accumulator, else the value */
static uint32_t
element_root(Cg *c, const Group *g, uint32_t k, LLVMValueRef *accs)
{
	const Instr *in = ir_def(c->fn, g->vals[k]);

	return ir_ops[in->op].cls == OC_REDUCE && c->fn->vals[g->vals[k]].rank == 0 && accs[k] ? ir_args(c->fn, in)[0]
											       : g->vals[k];
}

/* load, at the current element, the kernel inputs that the group's
 * values read through elementwise ops */
static void
load_group(Cg *c, const Group *g, LLVMValueRef *accs, bool *seen)
{
	memset(seen, 0, c->fn->nvals + 1);
	for (uint32_t k = 0; k < g->nvals; k++)
		walk_elementwise(c, element_root(c, g, k, accs), seen, true);
}

/* the V elements of a thread from the loop's index i. Where the group's
 * computation calls a libdevice function that branches (tanh, erf, sin:
 * the element's code becomes several basic blocks, and LLVM makes vector
 * accesses only within one), the inputs of all V are loaded first and the
 * outputs of all V stored last, in one block each (the memo keeps what
 * each step made for the next) */
static void
chunk(Cg *c, const Group *g, LLVMValueRef i, int V, LLVMValueRef *accs, const Red *reds)
{
	Func *fn = c->fn;
	bool *seen = arena_alloc(fn->arena, fn->nvals + 1), calls = false;
	LLVMValueRef lin[16], *co[16];
	int64_t tmp[IR_MAXRANK];
	uint32_t s = g->space, nin = 0;

	for (uint32_t k = 0; k < g->nvals; k++)
		calls |= walk_elementwise(c, element_root(c, g, k, accs), seen, false);
	for (uint32_t v = 0; v < fn->nvals; v++)
		nin += seen[v] && !cg_in_kernel(c, v);
	/* only a few values: V of each input stay live through the chunk, and
	 * the memo keeps V of each shared step (a kernel of fifteen outputs went
	 * from 62 registers to 207) */
	if (c->nip && V <= 16 && fn->vals[s].rank > 0) {
		/* an update in place ("In place"): every load of the chunk before
		 * its first store, where LLVM, told that the two may alias, would
		 * otherwise keep each element's loads after the last one's stores
		 * and could not join them into vector loads; only the inputs the
		 * group reads, as a load that LLVM would drop is noted all the same
		 * (and an input read in a later phase than its update would then
		 * not share) */
		for (int j = 0; j < V; j++) {
			lin[j] = j ? LLVMBuildAdd(c->b, i, cg_ic(c, j), "") : i;
			co[j] = cg_delinearize(c, lin[j], ir_dims(fn, s), cg_order_of(fn, s, tmp), fn->vals[s].rank);
			c->keep_j = j;
			cg_current(c, s, co[j], lin[j], cg_lane_align(j, V));
			load_group(c, g, accs, seen);
		}
		for (int j = 0; j < V; j++) {
			c->keep_j = j;
			cg_element(c, g, co[j], lin[j], cg_lane_align(j, V), accs, reds);
		}
		return;
	}
	if (!calls || V > 16 || fn->vals[s].rank == 0 || g->nvals > CHUNK_SWEEP_VALUES || nin > CHUNK_SWEEP_VALUES) {
		for (int j = 0; j < V; j++) {
			c->keep_j = j;
			space_element(
				c, g, j ? LLVMBuildAdd(c->b, i, cg_ic(c, j), "") : i, cg_lane_align(j, V), accs, reds);
		}
		return;
	}
	for (int j = 0; j < V; j++) {
		lin[j] = j ? LLVMBuildAdd(c->b, i, cg_ic(c, j), "") : i;
		co[j] = cg_delinearize(c, lin[j], ir_dims(fn, s), cg_order_of(fn, s, tmp), fn->vals[s].rank);
	}
	for (int j = 0; j < V; j++) { /* the loads */
		c->keep_j = j;
		cg_current(c, s, co[j], lin[j], cg_lane_align(j, V));
		load_group(c, g, accs, seen);
	}
	for (uint32_t k = 0; k < g->nvals; k++) { /* each value's computation, then its stores */
		Group one = { g->space, &g->vals[k], 1 };

		for (int j = 0; j < V; j++) {
			c->keep_j = j;
			cg_current(c, s, co[j], lin[j], cg_lane_align(j, V));
			operand(c, element_root(c, g, k, accs), c->space_coords);
		}
		for (int j = 0; j < V; j++) {
			c->keep_j = j;
			cg_current(c, s, co[j], lin[j], cg_lane_align(j, V));
			element(c, &one, accs + k, reds + k);
		}
	}
	c->space_coords = NULL;
}

/* Inputs that a phase reads and the next reads again over the same space
 * (a tensor-wise quantize: its amax reads x, and its cast reads x again
 * after the grid barrier) are kept in shared memory between the two: each
 * thread stores what it loads in its first K steps of the grid, and after
 * the barrier reads those back from there, not from memory. The next
 * phase takes its steps last first, so it reads from memory first what L2
 * still holds, then what is kept. Both loops take chunks of the same V, so
 * a thread meets in the second the elements it loaded in the first. */
typedef struct {
	uint32_t p;       /* the phase that stores; p + 1 reads; IR_NONE: none */
	uint32_t g[2];    /* the group of each */
	int V, K;         /* elements a chunk, steps kept */
	int64_t step;     /* bytes a block keeps of a step */
	LLVMValueRef buf; /* the shared array, K steps */
} Keep;

/* a loop's part in a Keep */
typedef enum { KEEP_NONE, KEEP_STORE, KEEP_LOAD } KeepRole;

static KeepRole
keep_role(const Keep *kk, uint32_t p, uint32_t gi)
{
	if (kk->p == IR_NONE)
		return KEEP_NONE;
	if (kk->p == p && kk->g[0] == gi)
		return KEEP_STORE;
	return kk->p + 1 == p && kk->g[1] == gi ? KEEP_LOAD : KEEP_NONE;
}

/* how a group's loop takes its space: chunks of V elements, nvec of them,
 * a row of inner elements (rank 2), across reads (chunk_start) */
typedef struct {
	int V;
	int64_t nvec, inner;
	bool across;
} Chunks;

/* the chunks of the grid's steps lo .. lo + n - 1 (lo NULL: 0), last first
 * if backward; with a role, the kept inputs of step s are stored in (read
 * from) buf at s * step + tid * 16 */
static void
steps_loop(Cg *c, const Group *g, const Chunks *ch, LLVMValueRef lo, LLVMValueRef n, bool backward, const Keep *kk,
	KeepRole role, LLVMValueRef *accs, const Red *reds)
{
	LLVMValueRef hi = lo ? LLVMBuildAdd(c->b, lo, n, "") : n, s, i, o;
	LLVMBasicBlockRef join;
	Loop l;

	s = cg_loop_begin(c, &l, cg_ic(c, 0), n, cg_ic(c, 1));
	if (backward)
		s = LLVMBuildSub(c->b, LLVMBuildSub(c->b, hi, cg_ic(c, 1), ""), s, "");
	else if (lo)
		s = LLVMBuildAdd(c->b, lo, s, "");
	i = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, s, c->gstride, ""), c->gtid, "");
	join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntULT, i, cg_ic(c, ch->nvec), ""));
	if (role) {
		o = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, s, cg_ic(c, kk->step), ""),
			LLVMBuildMul(c->b, c->tid, cg_ic(c, 16), ""), "");
		c->keep_at = LLVMBuildGEP2(c->b, c->i8, kk->buf, &o, 1, "");
		c->keep_load = role == KEEP_LOAD;
	}
	chunk(c, g, chunk_start(c, i, ch->inner, ch->V, ch->across), ch->V, accs, reds);
	c->keep_at = NULL;
	cg_if_end(c, join);
	cg_loop_end(c, &l);
}

/* grid-stride loop over the space, V elements a thread, then the tail
 * (backward: the grid's steps last first), with its role in kk. Returns
 * the blocks it wants. */
static uint32_t
group_loop(Cg *c, const Group *g, LLVMValueRef *accs, const Red *reds, bool backward, const Keep *kk, KeepRole role)
{
	Func *fn = c->fn;
	int64_t total = ir_numel(fn, g->space), t[IR_MAXRANK], outer = 0, inner = 0;
	int V = role ? kk->V : cg_vector_width(c, g);
	int64_t nvec = total / V;
	Chunks ch;
	bool across = false;
	Loop l;
	LLVMValueRef i, steps = NULL, K = NULL;

	if (fn->vals[g->space].rank == 2) {
		const int64_t *ord = cg_order_of(fn, g->space, t);

		c->space = g->space;
		outer = ir_dims(fn, g->space)[ord[0]];
		inner = ir_dims(fn, g->space)[ord[1]];
		across = outer % 32 == 0 && inner % V == 0 && cg_group_reads_across(c, g);
	}
	ch = (Chunks){ V, nvec, inner, across };
	c->group = c->seq++;
	if (nvec > 0 && (role || backward)) /* the grid's steps */
		steps = LLVMBuildUDiv(c->b, LLVMBuildAdd(c->b, cg_ic(c, nvec - 1), c->gstride, ""), c->gstride, "");
	if (nvec > 0 && role) { /* at least K of them; the kept ones first, or last if backward */
		K = cg_ic(c, kk->K);
		steps = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntULT, steps, K, ""), K, steps, "");
		if (backward)
			steps_loop(c, g, &ch, K, LLVMBuildSub(c->b, steps, K, ""), true, kk, KEEP_NONE, accs, reds);
		steps_loop(c, g, &ch, NULL, K, backward, kk, role, accs, reds);
	} else if (nvec > 0 && backward) {
		/* the grid's steps taken last first: what the phase before read last
		 * is what L2 still holds */
		steps_loop(c, g, &ch, NULL, steps, true, kk, KEEP_NONE, accs, reds);
	}
	if (nvec > 0 && !backward) { /* the steps after those kept, by the grid's stride */
		i = cg_loop_begin(c, &l,
			role ? LLVMBuildAdd(c->b, LLVMBuildMul(c->b, K, c->gstride, ""), c->gtid, "") : c->gtid,
			cg_ic(c, nvec), c->gstride);
		chunk(c, g, chunk_start(c, i, inner, V, across), V, accs, reds);
		cg_loop_end(c, &l);
	}
	if (nvec * V < total) {
		i = cg_loop_begin(
			c, &l, LLVMBuildAdd(c->b, c->gtid, cg_ic(c, nvec * V), ""), cg_ic(c, total), c->gstride);
		space_element(c, g, i, 1, accs, reds);
		cg_loop_end(c, &l);
	}
	c->group = 0;
	return (uint32_t)((nvec + BE_BLOCK - 1) / BE_BLOCK);
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
	Red r = cg_red_of(c, v);
	LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, cg_ic(c, 31), ""), acc = cg_entry_alloca(c, r.kt);
	LLVMValueRef o, ri, *oc, *rc, *co, k;
	LLVMBasicBlockRef join;
	Loop lo, li;

	for (int i = 0; i < IR_MAXRANK; i++)
		ord[i] = i;
	for (int i = 0; i < nr; i++)
		nred *= rdims[i] = ad[rd[i]];
	o = cg_loop_begin(c, &lo, LLVMBuildLShr(c->b, c->gtid, cg_ic(c, 5), ""), cg_ic(c, nout),
		LLVMBuildLShr(c->b, c->gstride, cg_ic(c, 5), ""));
	oc = cg_delinearize(c, o, ir_dims(fn, v), ord, fn->vals[v].rank);
	LLVMBuildStore(c->b, cg_identity(c, &r), acc);
	ri = cg_loop_begin(c, &li, lane, cg_ic(c, nred), cg_ic(c, 32));
	rc = cg_delinearize(c, ri, rdims, ord, nr);
	co = cg_new_coords(c, rank);
	for (int i = 0, j = 0, kk = 0; i < rank; i++)
		co[i] = (kk < nr && rd[kk] == i) ? rc[kk++] : oc[j++];
	LLVMBuildStore(
		c->b, cg_combine(c, &r, LLVMBuildLoad2(c->b, r.kt, acc, ""), cg_key(c, &r, cg_value(c, a, co))), acc);
	cg_loop_end(c, &li);
	k = cg_warp_reduce(c, &r, LLVMBuildLoad2(c->b, r.kt, acc, ""));
	join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, lane, cg_ic(c, 0), ""));
	cg_store_at(c, cg_storage(c, v), v, oc, cg_unkey(c, &r, k));
	cg_if_end(c, join);
	cg_loop_end(c, &lo);
	return (uint32_t)((nout * 32 + BE_BLOCK - 1) / BE_BLOCK);
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

/* full reductions completed in the previous phase, read (the last block
 * into the barrier zeroed the next slots: max_slot) */
static void
read_reductions(Cg *c, uint32_t p)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];

	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res;
		Red r;
		LLVMValueRef acc, x;
		Loop l;

		if (ir_ops[fn->ins[i].op].cls != OC_REDUCE || fn->vals[v].rank != 0 || c->avail[v] != p)
			continue;
		r = cg_red_of(c, v);
		if (!r.sum) {
			x = load_relaxed(c, r.kt, max_slot(c, v, c->phase_of[v]));
			c->uniform[v] = cg_unkey(c, &r, x);
			continue;
		}
		acc = cg_entry_alloca(c, r.kt);
		LLVMBuildStore(c->b, cg_identity(c, &r), acc);
		x = cg_loop_begin(c, &l, cg_ic(c, 0), c->nctaid, cg_ic(c, 1));
		x = LLVMBuildGEP2(c->b, r.kt, scratch_at(c, c->storage[v]), &x, 1, "");
		x = load_relaxed(c, r.kt, x);
		LLVMBuildStore(c->b, cg_combine(c, &r, LLVMBuildLoad2(c->b, r.kt, acc, ""), x), acc);
		cg_loop_end(c, &l);
		c->uniform[v] = cg_unkey(c, &r, LLVMBuildLoad2(c->b, r.kt, acc, ""));
	}
}

/* the accumulator of a full reduction at the end of its phase */
static void
finish_reduction(Cg *c, uint32_t v, const Red *r, LLVMValueRef acc)
{
	LLVMValueRef x = cg_block_reduce(c, r, LLVMBuildLoad2(c->b, r->kt, acc, "")), p;
	LLVMBasicBlockRef join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_ic(c, 0), ""));

	if (r->sum) {
		p = LLVMBuildGEP2(c->b, r->kt, scratch_at(c, c->storage[v]), &c->bid, 1, "");
		store_relaxed(c, x, p);
	} else {
		atomic_rmw(c, LLVMAtomicRMWBinOpUMax, max_slot(c, v, c->phase_of[v]), x);
	}
	cg_if_end(c, join);
}

/* the loops of a phase: groups of one space each, and the pairs of them
 * written through tiles */
typedef struct {
	Group *gs;
	uint32_t ng;
	bool *tiled; /* per group: written in one of the tiles */
	Tile *tiles;
	uint32_t nt;
} Tasks;

static void
phase_tasks(Cg *c, const KPlan *kp, uint32_t p, Tasks *ts)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	Group *gs = arena_alloc(fn->arena, (2 * k->count + 2) * sizeof *gs);
	uint32_t ng = 0;
	bool *tiled;

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
		cg_split_across(c, &gs[gi], &gs[ng], &ng);
	/* transposed writes in tiles, each with the group of the transposed
	 * space if there is one */
	*ts = (Tasks){ gs, ng, tiled = arena_alloc(fn->arena, ng + 1), arena_alloc(fn->arena, (ng + 1) * sizeof(Tile)),
		0 };
	for (uint32_t gi = 0; gi < ng; gi++)
		for (uint32_t ai = 0; ai <= ng && !tiled[gi]; ai++) {
			const Group *a = ai < ng ? &gs[ai] : NULL;

			if (a && (ai == gi || tiled[ai] || !cg_transposed_space(c, gs[gi].space, a->space)))
				continue;
			if (a && (c->space = a->space, cg_group_reads_across(c, a)))
				continue;
			if (!cg_tile_shape(c, a, &gs[gi], &ts->tiles[ts->nt]))
				continue;
			ts->nt++;
			tiled[gi] = true;
			if (a)
				tiled[ai] = true;
		}
	/* beside other tiles, two rows a thread cost more registers than they
	 * save (tiles.c) */
	for (uint32_t i = 0; ts->nt > 1 && i < ts->nt; i++)
		cg_tile_one_row(c, &ts->tiles[i]);
}

static void
forget_kept(Cg *c)
{
	for (uint32_t v = 0; v <= c->fn->nvals; v++)
		c->keep_off[v] = -1;
}

/* the kernel inputs that group g of phase p reads at its own index */
static void
group_reads(Cg *c, const KPlan *kp, uint32_t p, const Group *g, bool *seen)
{
	Func *fn = c->fn;

	for (uint32_t i = 0; i < g->nvals; i++) {
		uint32_t v = g->vals[i];
		const Instr *in = ir_def(fn, v);
		bool acc = ir_ops[in->op].cls == OC_REDUCE && fn->vals[v].rank == 0 && kp->phase[v] == p;

		walk_elementwise(c, acc ? ir_args(fn, in)[0] : v, seen, false);
	}
}

/* the first pair of loops, in phases p and p + 1, over the same space that
 * read some inputs both: those are kept (Keep), as many steps as the
 * target's keep bytes hold (and the space has), or what the kernel's other
 * shared arrays (the block reductions' slots, the largest tile) leave of
 * BE_STATIC_SMEM */
static void
plan_keep(Cg *c, const KPlan *kp, const Tasks *ts, Keep *kk)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	bool *sa = arena_alloc(fn->arena, fn->nvals + 1), *sb = arena_alloc(fn->arena, fn->nvals + 1);
	int64_t room = BE_STATIC_SMEM - BE_REDUCE_SMEM, tiles = 0;

	for (uint32_t p = 0; p < kp->nphases; p++)
		for (uint32_t i = 0; i < ts[p].nt; i++)
			if (ts[p].tiles[i].bytes > tiles)
				tiles = ts[p].tiles[i].bytes;
	room -= tiles;
	if (room > c->keep)
		room = c->keep;
	kk->p = IR_NONE;
	forget_kept(c);
	for (uint32_t p = 0; p + 1 < kp->nphases; p++)
		for (uint32_t a = 0; a < ts[p].ng; a++)
			for (uint32_t b = 0; b < ts[p + 1].ng; b++) {
				const Group *ga = &ts[p].gs[a], *gb = &ts[p + 1].gs[b];
				uint32_t s = ga->space;
				int64_t bytes = 0, nvec;
				int V, va, vb;

				if (ts[p].tiled[a] || ts[p + 1].tiled[b] || fn->vals[s].rank == 0 ||
					!same_space(fn, s, gb->space))
					continue;
				c->space = s;
				if (fn->vals[s].rank == 2 &&
					(cg_group_reads_across(c, ga) || cg_group_reads_across(c, gb)))
					continue;
				memset(sa, 0, fn->nvals + 1);
				memset(sb, 0, fn->nvals + 1);
				group_reads(c, kp, p, ga, sa);
				group_reads(c, kp, p + 1, gb, sb);
				va = cg_vector_width(c, ga);
				vb = cg_vector_width(c, gb);
				V = va > vb ? va : vb;
				forget_kept(c); /* what an earlier pair left */
				for (uint32_t j = 0; j < k->nins; j++) {
					uint32_t u = fn->argv[k->ins + j];

					if (!sa[u] || !sb[u] || c->keep_off[u] >= 0 || fn->vals[u].dtype == DT_B8 ||
						!ir_same_shape(fn, u, s))
						continue;
					c->keep_off[u] = bytes * BE_BLOCK;
					bytes += V * dt_size((DType)fn->vals[u].dtype);
				}
				nvec = ir_numel(fn, s) / V;
				if (!bytes || nvec == 0)
					continue;
				kk->step = bytes * BE_BLOCK;
				kk->K = (int)(room / kk->step);
				if ((nvec + BE_BLOCK - 1) / BE_BLOCK < kk->K) /* more than a grid of one block takes */
					kk->K = (int)((nvec + BE_BLOCK - 1) / BE_BLOCK);
				if (kk->K < 1)
					continue;
				kk->p = p;
				kk->g[0] = a;
				kk->g[1] = b;
				kk->V = V;
				kk->buf = cg_shared_array(c, arena_printf(fn->arena, "%s.keep", k->name),
					LLVMArrayType2(c->i8, (uint64_t)(kk->K * kk->step)), 16);
				return;
			}
	forget_kept(c);
}

/* The one tile of phase p + 1 (next) if it alone reads again the kernel
 * inputs that g, a group of phase p, reads: g's loop then walks the tile's
 * space as the tile's loop will (cg_tile_walk). NULL if there is none, if
 * g's space is not laid out as the tile's input, or if g feeds a sum
 * (whose bits depend on the order it takes its elements in). Not where
 * the next phase has several tiles (the backward step's kernel, three
 * amaxes before three tiles: its loops walking their tiles took 39
 * registers instead of 32 and ran no faster; docs/design.md, "The
 * backend"). */
static Tile *
walk_tile(Cg *c, const KPlan *kp, uint32_t p, const Group *g, const Red *reds, const LLVMValueRef *accs, Tasks *next)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	Tile *t = NULL;
	bool *seen, *again;

	if (!next || next->nt != 1 || fn->vals[g->space].rank != 2)
		return NULL;
	for (uint32_t j = 0; j < g->nvals; j++)
		if (accs[j] && reds[j].sum)
			return NULL;
	c->space = g->space;
	if (cg_group_reads_across(c, g))
		return NULL;
	seen = arena_alloc(fn->arena, fn->nvals + 1);
	again = arena_alloc(fn->arena, fn->nvals + 1);
	group_reads(c, kp, p, g, seen);
	for (uint32_t gi = 0; gi < next->ng; gi++) {
		memset(again, 0, fn->nvals + 1);
		group_reads(c, kp, p + 1, &next->gs[gi], again);
		for (uint32_t j = 0; j < k->nins; j++) {
			uint32_t u = fn->argv[k->ins + j];

			if (seen[u] && again[u] && !next->tiled[gi])
				return NULL; /* read again, not by the tile */
			if (seen[u] && again[u])
				t = &next->tiles[0];
		}
	}
	return t && same_space(fn, g->space, t->in) ? t : NULL;
}

static uint32_t
phase(Cg *c, const KPlan *kp, uint32_t p, const Tasks *ts, Tasks *next, const Keep *kk)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	uint32_t blocks = 1, b;
	LLVMBasicBlockRef pre = cg_block(c, "pre"), uni = cg_block(c, "uni"), body = cg_block(c, "phase");

	LLVMBuildBr(c->b, pre);
	LLVMPositionBuilderAtEnd(c->b, pre);
	if (p > 0)
		read_reductions(c, p);
	LLVMBuildBr(c->b, uni);
	LLVMPositionBuilderAtEnd(c->b, uni);
	LLVMBuildBr(c->b, body);
	LLVMPositionBuilderAtEnd(c->b, body);
	c->pre = uni;
	for (uint32_t i = 0; i < ts->nt; i++)
		if ((b = cg_tile_loop(c, &ts->tiles[i], p > 0)) > blocks)
			blocks = b;
	for (uint32_t gi = 0; gi < ts->ng; gi++) {
		const Group *g = &ts->gs[gi];
		LLVMValueRef *accs;
		Red *reds = arena_alloc(fn->arena, (g->nvals + 1) * sizeof *reds);
		bool feeds = false; /* some reduction: its order stays the first phase's */
		Tile *t;

		if (ts->tiled[gi])
			continue;
		accs = arena_alloc(fn->arena, (g->nvals + 1) * sizeof *accs);

		for (uint32_t j = 0; j < g->nvals; j++) {
			uint32_t v = g->vals[j];

			if (ir_ops[ir_def(fn, v)->op].cls != OC_REDUCE || kp->phase[v] != p)
				continue;
			feeds = true;
			reds[j] = cg_red_of(c, v);
			accs[j] = cg_entry_alloca(c, reds[j].kt);
			LLVMBuildStore(c->b, cg_identity(c, &reds[j]), accs[j]);
		}
		t = keep_role(kk, p, gi) == KEEP_NONE ? walk_tile(c, kp, p, g, reds, accs, next) : NULL;
		if (t)
			t->walked = true;
		b = t ? cg_tile_walk(c, t, g, accs, reds)
		      : group_loop(c, g, accs, reds, p > 0 && !feeds, kk, keep_role(kk, p, gi));
		if (b > blocks)
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
	return blocks;
}

/* The last phase only writes what completed at the barrier before it
 * (full reductions, and scalars computed from them; no tile, no kept
 * input, no partial reduction): one thread can run it (last_arrival). */
static bool
tail_phase(Cg *c, const KPlan *kp, const Tasks *ts, const Keep *kk)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	uint32_t p = kp->nphases - 1;

	if (p == 0 || ts[p].nt > 0 || (kk->p != IR_NONE && kk->p + 1 == p))
		return false;
	for (uint32_t gi = 0; gi < ts[p].ng; gi++)
		if (fn->vals[ts[p].gs[gi].space].rank != 0)
			return false;
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res;

		if (ir_ops[fn->ins[i].op].cls == OC_REDUCE && fn->vals[v].rank > 0 && kp->phase[v] == p)
			return false;
	}
	return true;
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
	Tasks *ts = NULL;
	Keep kk = { .p = IR_NONE };
	Rows rs;
	bool rows, tail = false;
	uint32_t blocks = 1, b, cap;
	LLVMBasicBlockRef end = NULL;

	c->k = kidx;
	c->ity = needs_wide_index(fn, &fn->kernels[kidx]) ? c->i64 : c->i32;
	analyze(c, &kp);
	if ((rows = cg_rows_shape(c, &rs))) {
		kp.nphases = 1;
		kp.scratch = 0;
	}
	signature(c, &kp);
	inplace_begin(c);
	LLVMPositionBuilderAtEnd(c->b, cg_block(c, "entry"));
	c->tid = sreg(c, "llvm.nvvm.read.ptx.sreg.tid.x");
	c->bid = sreg(c, "llvm.nvvm.read.ptx.sreg.ctaid.x");
	c->ntid = sreg(c, "llvm.nvvm.read.ptx.sreg.ntid.x");
	c->nctaid = sreg(c, "llvm.nvvm.read.ptx.sreg.nctaid.x");
	c->gtid = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, c->bid, c->ntid, ""), c->tid, "gtid");
	c->gstride = LLVMBuildMul(c->b, c->nctaid, c->ntid, "gstride");
	/* the generation before any barrier of this run: no block has passed
	 * barrier 0 before this one arrives there (a kernel of one phase has
	 * no barrier, and reads no accumulator: its generation stays 0) */
	c->gen = kp.scratch ? load_relaxed(c, c->i32, scratch_at(c, SC_GENERATION)) : NULL;
	c->stream = false;
	if (rows)
		blocks = cg_rows_kernel(c, &rs);
	if (!rows) {
		ts = arena_alloc(fn->arena, kp.nphases * sizeof *ts);
		for (uint32_t p = 0; p < kp.nphases; p++)
			phase_tasks(c, &kp, p, &ts[p]);
		plan_keep(c, &kp, ts, &kk);
		tail = tail_phase(c, &kp, ts, &kk);
		c->stream = kp.nphases - tail > 1;
	}
	for (uint32_t p = 0; !rows && p < kp.nphases; p++) {
		c->phase = p;
		if (tail && p + 1 == kp.nphases)
			c->gtid = cg_ic(c, 0); /* the one thread's: element 0 of each scalar */
		if ((b = phase(c, &kp, p, &ts[p], p + 1 < kp.nphases ? &ts[p + 1] : NULL, &kk)) > blocks)
			blocks = b;
		if (tail && p + 2 == kp.nphases)
			end = last_arrival(c, p);
		else if (p + 1 < kp.nphases)
			grid_barrier(c, p);
	}
	if (end) {
		LLVMBuildBr(c->b, end);
		LLVMPositionBuilderAtEnd(c->b, end);
	}
	LLVMBuildRetVoid(c->b);
	cap = !rows && kp.nphases == 1 && !kp.scratch && !ts[0].nt ? BE_MAXGRID_MAP : BE_MAXGRID;
	*l = (Launch){ blocks > cap ? cap : blocks, BE_BLOCK, 0, kp.nphases - tail > 1, kp.nphases - tail, IR_NONE, 0 };
	for (uint32_t p = 0; !rows && p < kp.nphases; p++)
		for (uint32_t i = 0; i < ts[p].nt; i++)
			if (ts[p].tiles[i].walked && blocks > BE_WALK_PER_SM * BE_WALK_SMS)
				l->per_sm = BE_WALK_PER_SM;
	if (kp.scratch)
		l->scratch = plan_add_scratch(fn, c->plan, kp.scratch);
	inplace_end(c, rows);
	kernel_done(c);
}

static void reuse(Cg *c, uint32_t k, Seen *seen);

void
be_codegen(Func *fn, Plan *plan, LLVMModuleRef mod, Launch *launches, Seen *seen, int64_t keep)
{
	Cg c = { .fn = fn, .plan = plan, .mod = mod, .cx = LLVMGetModuleContext(mod), .keep = keep };
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
	c.keep_off = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *c.keep_off);
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
	static const char *suffix[] = { ".smem", ".tile", ".keep", ".prefetch" };
	Kernel *kn = &c->fn->kernels[k];
	LLVMValueRef shared[NELEM(suffix)];
	char *text;
	uint64_t h;

	for (int i = 0; i < (int)NELEM(suffix); i++)
		shared[i] = LLVMGetNamedGlobal(c->mod, arena_printf(c->fn->arena, "%s%s", kn->name, suffix[i]));
	text = text_of(c, c->kfn, shared, suffix, (int)NELEM(suffix));
	h = fnv(text);
	for (uint32_t i = 0; i < seen->n; i++)
		if (seen->hash[i] == h && !strcmp(seen->text[i], text)) {
			LLVMDeleteFunction(c->kfn);
			for (int j = 0; j < (int)NELEM(suffix); j++)
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
