/* shards.c — work on shards before gathering them: the fp8 all-gather.
 *
 * An all-gathered tensor x = wait(all_gather(s)) that is read only by
 * elementwise work and by the amax of an absolute value over every dim —
 * torchao's tensor-wise quantize of an FSDP weight:
 *
 *   %x = wait (all_gather %s [R])           bf16[R*n, k]
 *   %f = convert %x : f32;  %a = abs %f;  %m = amax %a [0,1] : f32[]
 *   ... the scale from %m (rank 0) ...
 *   %q = convert (clamp (mul %f, broadcast %scale)) : f8e4m3fn[R*n, k]
 *
 * is computed on each rank's shard instead, and what leaves the
 * elementwise work is gathered (here the fp8 %q: half the bytes of bf16):
 *
 *   %fs = convert %s;  %as = abs %fs;  %ms = amax %as [all] : f32[]
 *   %m  = bitcast (wait (all_reduce (bitcast %ms : i32[]) [max, R])) : f32[]
 *   %qs = convert (clamp (mul %fs, broadcast %scale)) : f8e4m3fn[n, k]
 *   %q  = wait (all_gather %qs [R]) : f8e4m3fn[R*n, k]
 *
 * The same bits: elementwise work commutes with a gather (which only
 * concatenates the shards, rank 0's first), and the max of the ranks'
 * amaxes is the whole tensor's amax. The all-reduce takes the amax's bits
 * as an integer (i32 for f32, i64 for f64; 16-bit floats widened to i32):
 * an abs's amax is non-negative, so its bits order as its values do, NaN
 * above infinity, and the integer max keeps a NaN where NCCL's float max
 * would drop it (docs/design.md, "Collectives").
 *
 * The rewrite is made only where it gathers fewer bytes than before (each
 * gathered result narrower than x, together fewer bytes). The elementwise
 * work may also read rank-0 values (the scale, constants) and broadcasts of
 * them; anything else that reads it (a GEMM, a transpose, an output) reads
 * the gathered result.
 */
#include <string.h>

#include "passes.h"

enum { R_NONE, R_CONE, R_BCAST, R_AMAX };

typedef struct {
	Func *fn;
	uint32_t x, s;   /* the gathered value, the shard */
	uint32_t gather; /* the all_gather's instruction index */
	int64_t ranks;
	uint8_t *role; /* per value: R_* */
	bool *exit;    /* per value: a cone value read outside the cone */
} Cone;

static bool
same_as_x(Cone *c, uint32_t v)
{
	return ir_same_shape(c->fn, v, c->x) && c->fn->vals[v].layout == IR_NONE;
}

/* the role of instruction in, whose operands' roles are known */
static int
role_of(Cone *c, const Instr *in)
{
	Func *fn = c->fn;
	const uint32_t *a = ir_args(fn, in);
	bool reads = false;

	if (in->op == OP_BROADCAST)
		return fn->vals[a[0]].rank == 0 && same_as_x(c, in->res) ? R_BCAST : R_NONE;
	if (in->op == OP_AMAX) {
		const Instr *d = ir_def(fn, a[0]);
		DType t = (DType)fn->vals[in->res].dtype;

		return c->role[a[0]] == R_CONE && d && d->op == OP_ABS && dt_isfloat(t) &&
				in->nattr == fn->vals[a[0]].rank
			? R_AMAX
			: R_NONE;
	}
	if (!op_elementwise((Op)in->op) || !same_as_x(c, in->res))
		return R_NONE;
	for (uint32_t j = 0; j < in->nargs; j++) {
		if (c->role[a[j]] == R_CONE)
			reads = true;
		else if (c->role[a[j]] != R_BCAST && fn->vals[a[j]].rank != 0)
			return R_NONE;
	}
	return reads ? R_CONE : R_NONE;
}

/* the cone of the gather whose wait is instruction w: true if it can be
 * worked on shards, and gathers fewer bytes so */
static bool
find_cone(Cone *c, uint32_t w)
{
	Func *fn = c->fn;
	const Instr *wi = &fn->ins[w];
	const Instr *g = ir_def(fn, ir_args(fn, wi)[0]);
	int64_t bytes = 0;

	if (!g || g->op != OP_ALL_GATHER || fn->vals[wi->res].rank == 0 || fn->vals[wi->res].layout != IR_NONE)
		return false;
	c->x = wi->res;
	c->s = ir_args(fn, g)[0];
	c->gather = (uint32_t)(g - fn->ins);
	c->ranks = ir_ranks(fn, g);
	memset(c->role, 0, fn->nvals + 1);
	memset(c->exit, 0, (fn->nvals + 1) * sizeof *c->exit);
	c->role[c->x] = R_CONE;
	for (uint32_t i = w + 1; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];
		int r = role_of(c, in);

		c->role[in->res] = (uint8_t)r;
		if (r == R_CONE || r == R_AMAX)
			continue;
		for (uint32_t j = 0; j < in->nargs; j++)
			if (c->role[ir_args(fn, in)[j]] == R_CONE)
				c->exit[ir_args(fn, in)[j]] = true;
	}
	for (uint32_t i = 0; i < fn->nrets; i++)
		if (c->role[fn->rets[i]] == R_CONE)
			c->exit[fn->rets[i]] = true;
	if (c->exit[c->x])
		return false;
	for (uint32_t v = 0; v < fn->nvals; v++)
		if (c->exit[v]) {
			if (dt_size((DType)fn->vals[v].dtype) >= dt_size((DType)fn->vals[c->x].dtype))
				return false;
			bytes += ir_numel(fn, v) * dt_size((DType)fn->vals[v].dtype);
		}
	return bytes < ir_numel(fn, c->x) * dt_size((DType)fn->vals[c->x].dtype);
}

/* an instruction of d at src's position */
static uint32_t
emit(Func *d, const Instr *at, Op op, uint32_t arg, const int64_t *attr, int nattr, DType t, int rank,
	const int64_t *dims)
{
	uint32_t r = ir_instr(d, op, &arg, 1, attr, nattr, t, rank, dims);

	d->ins[d->nins - 1].line = at->line;
	d->ins[d->nins - 1].col = at->col;
	return r;
}

/* the collective `op` of v and its wait */
static uint32_t
collective(Func *d, const Instr *at, Op op, uint32_t v, const int64_t *attr, int nattr, int rank, const int64_t *dims)
{
	DType t = (DType)d->vals[v].dtype;
	uint32_t c = emit(d, at, op, v, attr, nattr, t, rank, dims);

	return emit(d, at, OP_WAIT, c, NULL, 0, t, rank, dims);
}

/* the amax over every rank of a rank's amax m (non-negative or NaN), as
 * integer keys */
static uint32_t
amax_all_ranks(Func *d, const Instr *at, uint32_t m, int64_t ranks)
{
	DType t = (DType)d->vals[m].dtype;
	DType key = t == DT_F64 ? DT_I64 : DT_I32, bits = t == DT_F64 ? DT_I64 : t == DT_F32 ? DT_I32 : DT_I16;
	int64_t attr[2] = { RED_MAX, ranks };
	uint32_t k = emit(d, at, OP_BITCAST, m, NULL, 0, bits, 0, NULL);

	if (bits != key)
		k = emit(d, at, OP_CONVERT, k, NULL, 0, key, 0, NULL);
	k = collective(d, at, OP_ALL_REDUCE, k, attr, 2, 0, NULL);
	if (bits != key)
		k = emit(d, at, OP_CONVERT, k, NULL, 0, bits, 0, NULL);
	return emit(d, at, OP_BITCAST, k, NULL, 0, t, 0, NULL);
}

/* cone instruction `in` on the shard: its operands in sh (the cone's and
 * the broadcasts'), or in map (rank-0 values) */
static uint32_t
on_shard(Cone *c, Func *d, const Instr *in, const uint32_t *map, const uint32_t *sh)
{
	Func *fn = c->fn;
	const Value *sv = &fn->vals[c->s];
	uint32_t args[3];

	for (uint32_t j = 0; j < in->nargs; j++) {
		uint32_t a = ir_args(fn, in)[j];

		args[j] = c->role[a] == R_CONE || c->role[a] == R_BCAST ? sh[a] : map[a];
	}
	uint32_t r = ir_instr(d, (Op)in->op, args, (int)in->nargs, ir_attr(fn, in), (int)in->nattr,
		(DType)fn->vals[in->res].dtype, sv->rank, ir_dims(fn, c->s));
	d->ins[d->nins - 1].fval = in->fval;
	d->ins[d->nins - 1].flags = in->flags;
	d->ins[d->nins - 1].line = in->line;
	d->ins[d->nins - 1].col = in->col;
	return r;
}

/* cone value v on the shard again, in copies of its own (memo: cp,
 * IR_NONE where none yet): what an amax reads is computed apart from what
 * is gathered, so that the kernel before the all-reduce and the one after
 * it each read the shard, rather than the first writing a widened copy
 * of it for the second */
static uint32_t
copy_cone(Cone *c, Func *d, uint32_t v, const uint32_t *map, uint32_t *cp)
{
	Func *fn = c->fn;
	const Instr *in = ir_def(fn, v);

	if (cp[v] != IR_NONE)
		return cp[v];
	if (c->role[v] == R_BCAST)
		return cp[v] = emit(d, in, OP_BROADCAST, map[ir_args(fn, in)[0]], NULL, 0, (DType)fn->vals[v].dtype,
			       fn->vals[c->s].rank, ir_dims(fn, c->s));
	for (uint32_t j = 0; j < in->nargs; j++) {
		uint32_t a = ir_args(fn, in)[j];

		if (c->role[a] == R_CONE || c->role[a] == R_BCAST)
			copy_cone(c, d, a, map, cp);
	}
	return cp[v] = on_shard(c, d, in, map, cp);
}

static Func *
rewrite(Cone *c)
{
	Func *fn = c->fn, *d;
	uint32_t *map, *shard = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *shard);
	uint32_t *red = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *red);
	const Value *sv = &fn->vals[c->s];
	int64_t all[IR_MAXRANK];

	for (int k = 0; k < IR_MAXRANK; k++)
		all[k] = k;
	d = ir_rewrite_begin(fn, &map);
	for (uint32_t v = 0; v < fn->nvals; v++)
		red[v] = IR_NONE;
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];
		const Value *v = &fn->vals[in->res];

		if (i == c->gather || in->res == c->x) {
			if (in->res == c->x) /* the shard is defined before it */
				shard[c->x] = red[c->x] = map[c->s];
			continue;
		}
		switch (c->role[in->res]) {
		case R_BCAST:
			shard[in->res] = emit(d, in, OP_BROADCAST, map[ir_args(fn, in)[0]], NULL, 0, (DType)v->dtype,
				sv->rank, ir_dims(fn, c->s));
			break;
		case R_AMAX: {
			uint32_t a = copy_cone(c, d, ir_args(fn, in)[0], map, red);
			uint32_t m = emit(d, in, OP_AMAX, a, all, sv->rank, (DType)v->dtype, 0, NULL);

			map[in->res] = amax_all_ranks(d, in, m, c->ranks);
			d->vals[map[in->res]].name = v->name;
			continue;
		}
		case R_CONE:
			shard[in->res] = on_shard(c, d, in, map, shard);
			if (c->exit[in->res]) {
				map[in->res] = collective(d, in, OP_ALL_GATHER, shard[in->res], &c->ranks, 1, v->rank,
					ir_dims(fn, in->res));
				d->vals[map[in->res]].name = v->name;
			}
			continue;
		}
		ir_copy_instr(d, fn, in, map);
	}
	ir_rewrite_end(d, fn, map);
	return pass_dce(d);
}

/* ---- one all-reduce for the amaxes of several gathers ---- */

/* v's instructions back to the parameters, marked in in_slice; false if
 * one is a step (a collective, a wait, a GEMM, an extern) */
static bool
slice_of(Func *fn, uint32_t v, bool *in_slice)
{
	const Instr *in = ir_def(fn, v);

	if (!in || in_slice[v])
		return true;
	if (op_step((Op)in->op) || in->op == OP_WAIT)
		return false;
	in_slice[v] = true;
	for (uint32_t j = 0; j < in->nargs; j++)
		if (!slice_of(fn, ir_args(fn, in)[j], in_slice))
			return false;
	return true;
}

/* the wait of collective instruction c, IR_NONE if none */
static uint32_t
wait_of(Func *fn, const uint32_t *uses, uint32_t c)
{
	uint32_t v = fn->ins[c].res;

	if (uses[v] != 1)
		return IR_NONE;
	for (uint32_t i = c + 1; i < fn->nins; i++)
		if (fn->ins[i].op == OP_WAIT && ir_args(fn, &fn->ins[i])[0] == v)
			return i;
	return IR_NONE;
}

/* Each rewritten gather all-reduces its amax key, a few bytes: a
 * collective's latency each, one after another on the collective stream.
 * The keys of shards that are inputs (FSDP's parameters) depend on nothing
 * else, so they are computed first and all-reduced together: the
 * rank-0 max all-reduces of one dtype and ranks whose operands reach only
 * the parameters become one all-reduce of their keys, concatenated (the
 * first 64 of them: pass_shards joins again while there are more), and a
 * slice of it each. fn itself if there are fewer than two. */
static Func *
join_amaxes(Func *fn)
{
	uint32_t *uses = ir_uses(fn), cand[64], wait[64], n = 0, *map;
	bool *in_slice = arena_alloc(fn->arena, fn->nvals + 1), *skip = arena_alloc(fn->arena, fn->nins + 1);
	const Instr *first = NULL;

	for (uint32_t i = 0; i < fn->nins && n < NELEM(cand); i++) {
		const Instr *in = &fn->ins[i];
		const Value *v = &fn->vals[in->res];

		if (in->op != OP_ALL_REDUCE || ir_attr(fn, in)[0] != RED_MAX || v->rank != 0 ||
			!dt_isint((DType)v->dtype) ||
			(first && (v->dtype != fn->vals[first->res].dtype || ir_ranks(fn, in) != ir_ranks(fn, first))))
			continue;
		if ((wait[n] = wait_of(fn, uses, i)) == IR_NONE || !slice_of(fn, ir_args(fn, in)[0], in_slice))
			continue;
		first = first ? first : in;
		cand[n++] = i;
	}
	if (n < 2)
		return fn;
	/* the keys' instructions, the joined all-reduce, then the rest in order */
	Func *d = ir_rewrite_begin(fn, &map);
	DType t = (DType)fn->vals[first->res].dtype;
	uint32_t keys[64], all, w;
	int64_t at[2] = { RED_MAX, ir_ranks(fn, first) }, one = 1, nn = n;

	for (uint32_t i = 0; i < fn->nins; i++)
		if (in_slice[fn->ins[i].res])
			ir_copy_instr(d, fn, &fn->ins[i], map);
	for (uint32_t k = 0; k < n; k++) {
		keys[k] = emit(d, first, OP_RESHAPE, map[ir_args(fn, &fn->ins[cand[k]])[0]], NULL, 0, t, 1, &one);
		skip[cand[k]] = skip[wait[k]] = true;
	}
	all = ir_instr(d, OP_CAT, keys, (int)n, (const int64_t[]){ 0 }, 1, t, 1, &nn);
	w = collective(d, first, OP_ALL_REDUCE, all, at, 2, 1, &nn);
	for (uint32_t k = 0; k < n; k++) {
		int64_t sl[3] = { k, k + 1, 1 };
		uint32_t part = emit(d, first, OP_SLICE, w, sl, 3, t, 1, &one);

		map[fn->ins[wait[k]].res] = emit(d, first, OP_RESHAPE, part, NULL, 0, t, 0, NULL);
		d->vals[map[fn->ins[wait[k]].res]].name = fn->vals[fn->ins[wait[k]].res].name;
	}
	for (uint32_t i = 0; i < fn->nins; i++)
		if (!in_slice[fn->ins[i].res] && !skip[i])
			ir_copy_instr(d, fn, &fn->ins[i], map);
	ir_rewrite_end(d, fn, map);
	return d;
}

Func *
pass_shards(Func *fn)
{
	for (;;) {
		Cone c = { fn, .role = arena_alloc(fn->arena, fn->nvals + 1),
			.exit = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof(bool)) };
		uint32_t i;

		if (fn->nkernels)
			return fn;
		for (i = 0; i < fn->nins; i++)
			if (fn->ins[i].op == OP_WAIT && find_cone(&c, i))
				break;
		if (i == fn->nins)
			break;
		fn = rewrite(&c);
	}
	for (;;) { /* 64 keys a collective */
		Func *j = join_amaxes(fn);

		if (j == fn)
			return fn;
		fn = j;
	}
}
