/* fuse.c — partition the function into kernels and GEMM steps.
 *
 * A GEMM is a plan step of its own. Everything else joins a kernel. The
 * GEMM depth of a value counts the GEMMs on its longest path from the inputs;
 * every non-GEMM instruction of depth d goes into kernel d, so all
 * independent work of a step shares one launch (the input's and the weight's
 * quantization together), and a reduction whose result is broadcast back over
 * the data it reduced stays in the same kernel: the backend splits such a
 * kernel into phases with a grid-wide barrier between them. Constants go to
 * the kernel of their first user. A level whose kernel would take more
 * parameters (values read and written) than PTX allows is cut, in order,
 * into kernels that each fit. A reshape or transpose that only views a
 * value in memory anyway (free_view) is a kernel of its own, first in its
 * level, which the memory plan turns into no launch.
 *
 * With opt < 2 each instruction is a kernel of its own.
 * The function is rebuilt in schedule order: kernel 0, the GEMMs of depth 1,
 * kernel 1, ... and each kernel lists the values it reads and writes. */
#include <string.h>

#include "passes.h"

/* PTX before ISA 8.1 takes 4352 bytes of kernel parameters: 544 pointers,
 * one of them the scratch buffer's */
#define MAXPARAMS 543

/* the parameters of the kernel being filled, as instructions join it */
typedef struct {
	uint32_t *last;     /* per value: the place of its last use (UINT32_MAX: returned) */
	uint32_t *defined;  /* per value: the kernel that defines it, + 1 */
	uint32_t *read;     /* per value: the kernel that reads it from outside, + 1 */
	uint32_t id;        /* the kernel being filled, + 1 */
	uint32_t nin, nout; /* its inputs; its values used after the place reached */
} Params;

/* in may move to the kernel of its readers: a broadcast, or elementwise
 * work on tensors whose result is no narrower than any tensor it reads */
static bool
sinks(Func *fn, const Instr *in)
{
	if (in->op == OP_BROADCAST)
		return true;
	if (!op_elementwise((Op)in->op) || fn->vals[in->res].rank == 0)
		return false;
	for (uint32_t j = 0; j < in->nargs; j++) {
		const Value *a = &fn->vals[ir_args(fn, in)[j]];

		if (a->rank && dt_size((DType)a->dtype) > dt_size((DType)fn->vals[in->res].dtype))
			return false;
	}
	return true;
}

static uint32_t *
depths(Func *fn)
{
	uint32_t *dep = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *dep);

	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];
		uint32_t d = 0;

		for (uint32_t j = 0; j < in->nargs; j++)
			if (dep[ir_args(fn, in)[j]] > d)
				d = dep[ir_args(fn, in)[j]];
		/* a GEMM's second result is of its GEMM's depth: the same step */
		dep[in->res] = in->op == OP_MATMUL_AUX ? d : op_step((Op)in->op) ? d + 1 : d;
	}
	/* constants: the kernel of their earliest user (0 is a depth too, so
	 * `placed` says which have one); a broadcast, or elementwise work no
	 * narrower than what it reads (a widening convert), that no output
	 * is: the kernel of its earliest user, when that is a later one (it is
	 * computed there from its operands instead of written out whole by an
	 * earlier kernel and read back) */
	bool *placed = arena_alloc(fn->arena, fn->nvals + 1), *returned = arena_alloc(fn->arena, fn->nvals + 1);
	uint32_t *sink = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *sink), last = 0;

	for (uint32_t i = 0; i < fn->nrets; i++)
		returned[fn->rets[i]] = true;
	for (uint32_t i = 0; i < fn->nins; i++)
		if (dep[fn->ins[i].res] > last)
			last = dep[fn->ins[i].res];
	/* and a wait as late as its first reader lets it (the collective runs
	 * beside the steps before it): that reader's depth, or the last */
	for (uint32_t i = fn->nins; i-- > 0;) {
		const Instr *in = &fn->ins[i];

		if (sinks(fn, in) && !returned[in->res] && sink[in->res] > dep[in->res] + 1)
			dep[in->res] = sink[in->res] - 1;
		if (in->op == OP_WAIT)
			dep[in->res] = sink[in->res] ? sink[in->res] - 1 : last > dep[in->res] ? last : dep[in->res];
		for (uint32_t j = 0; j < in->nargs; j++) {
			uint32_t a = ir_args(fn, in)[j];
			uint32_t want = op_step((Op)in->op) ? dep[in->res] - 1 : dep[in->res];
			const Instr *def = ir_def(fn, a);

			if (def && def->op == OP_FULL && (!placed[a] || want < dep[a])) {
				dep[a] = want;
				placed[a] = true;
			}
			/* + 1: 0 is "no user yet"; elementwise work read by a step
			 * stays (a kernel before the step may have nothing else) */
			if (def && def->op != OP_BROADCAST && sinks(fn, def) && op_step((Op)in->op))
				sink[a] = 1;
			else if (def && sinks(fn, def) && (!sink[a] || want + 1 < sink[a]))
				sink[a] = want + 1;
			if (def && def->op == OP_WAIT && (!sink[a] || dep[in->res] + 1 < sink[a]))
				sink[a] = dep[in->res] + 1;
		}
	}
	return dep;
}

/* record kernel k's inputs and outputs, in order of first appearance;
 * inside is zeroed scratch of one entry per value, left zeroed */
static void
kernel_io(Func *fn, uint32_t k, const uint32_t *uses, uint32_t *inside)
{
	Kernel *kn = &fn->kernels[k];
	uint32_t last = kn->first + kn->count;

	kn->ins = fn->nargv;
	kn->nins = 0;
	for (uint32_t i = kn->first; i < last; i++) {
		const Instr *in = &fn->ins[i];

		for (uint32_t j = 0; j < in->nargs; j++) {
			uint32_t a = ir_args(fn, in)[j];
			uint32_t def = fn->vals[a].def;

			if (def != IR_NONE && def >= kn->first && def < last) {
				inside[a]++;
			} else if (!inside[a]) {
				inside[a] = UINT32_MAX / 2; /* marks an input already listed */
				ir_push_ids(fn, &a, 1);
				kn->nins++;
			}
		}
	}
	kn->outs = fn->nargv;
	kn->nouts = 0;
	for (uint32_t i = kn->first; i < last; i++) {
		uint32_t r = fn->ins[i].res;

		if (uses[r] > inside[r]) { /* used outside the kernel or returned */
			ir_push_ids(fn, &r, 1);
			kn->nouts++;
		}
	}
	for (uint32_t i = kn->first; i < last; i++) {
		inside[fn->ins[i].res] = 0;
		for (uint32_t j = 0; j < fn->ins[i].nargs; j++)
			inside[ir_args(fn, &fn->ins[i])[j]] = 0;
	}
}

/* every kernel's inputs and outputs */
static void
kernels_io(Func *fn)
{
	uint32_t *uses = ir_uses(fn), *inside = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *inside);

	for (uint32_t k = 0; k < fn->nkernels; k++)
		kernel_io(fn, k, uses, inside);
}

/* where an instruction goes: slot 2l+1 for level l's kernel, 2l+2 for the
 * GEMMs, externs and collectives of depth l+1 that follow it; slot 0, before
 * every kernel, for a collective of the function's inputs alone (FSDP's
 * gather of a parameter's shards), so that it runs beside level 0 */
static uint32_t
slot(Func *fn, const Instr *in, const uint32_t *dep)
{
	bool inputs = op_collective((Op)in->op);

	for (uint32_t j = 0; inputs && j < in->nargs; j++)
		inputs = fn->vals[ir_args(fn, in)[j]].def == IR_NONE;
	if (inputs)
		return 0;
	return op_step((Op)in->op) ? 2 * dep[in->res] : 2 * dep[in->res] + 1;
}

/* the instructions by slot, in their order within each: order[start[s] ..
 * start[s+1]) (a counting sort, so the pass stays linear in the program) */
static uint32_t *
by_slot(Func *fn, const uint32_t *dep, uint32_t nslots, uint32_t **start)
{
	uint32_t *order = arena_alloc(fn->arena, (fn->nins + 1) * sizeof *order);
	uint32_t *at = arena_alloc(fn->arena, (nslots + 1) * sizeof *at);

	for (uint32_t i = 0; i < fn->nins; i++)
		at[slot(fn, &fn->ins[i], dep) + 1]++;
	for (uint32_t s = 1; s <= nslots; s++)
		at[s] += at[s - 1];
	*start = arena_alloc(fn->arena, (nslots + 1) * sizeof **start);
	memcpy(*start, at, (nslots + 1) * sizeof *at);
	for (uint32_t i = 0; i < fn->nins; i++)
		order[at[slot(fn, &fn->ins[i], dep)]++] = i;
	return order;
}

static void
add_kernel(Func *fn, uint32_t first)
{
	Kernel k = { .first = first, .count = fn->nins - first };

	if (k.count == 0)
		return;
	k.name = arena_printf(fn->arena, "k%u", fn->nkernels);
	for (uint32_t i = first; i < fn->nins; i++)
		fn->ins[i].kernel = (int32_t)fn->nkernels;
	arena_grow(fn->arena, (void **)&fn->kernels, &fn->capkernels, fn->nkernels + 1, sizeof k);
	fn->kernels[fn->nkernels++] = k;
}

/* the place of each value's last use in the new order */
static uint32_t *
last_uses(Func *fn, const uint32_t *order)
{
	uint32_t *last = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *last);

	for (uint32_t j = 0; j < fn->nins; j++) {
		const Instr *in = &fn->ins[order[j]];

		for (uint32_t k = 0; k < in->nargs; k++)
			last[ir_args(fn, in)[k]] = j;
	}
	for (uint32_t i = 0; i < fn->nrets; i++)
		last[fn->rets[i]] = UINT32_MAX;
	return last;
}

static bool
seen_before(Func *fn, const Instr *in, uint32_t k)
{
	for (uint32_t m = 0; m < k; m++)
		if (ir_args(fn, in)[m] == ir_args(fn, in)[k])
			return true;
	return false;
}

/* the kernel's parameters if the instruction at place j joined it */
static uint32_t
params_with(Func *fn, const Params *p, const Instr *in, uint32_t j)
{
	uint32_t n = p->nin + p->nout + (p->last[in->res] > j);

	for (uint32_t k = 0; k < in->nargs; k++) {
		uint32_t a = ir_args(fn, in)[k];

		if (seen_before(fn, in, k))
			continue;
		if (p->defined[a] == p->id)
			n -= p->last[a] == j; /* its last use: not needed after the kernel */
		else
			n += p->read[a] != p->id;
	}
	return n;
}

static void
join(Func *fn, Params *p, const Instr *in, uint32_t j)
{
	for (uint32_t k = 0; k < in->nargs; k++) {
		uint32_t a = ir_args(fn, in)[k];

		if (seen_before(fn, in, k))
			continue;
		if (p->defined[a] == p->id) {
			p->nout -= p->last[a] == j;
		} else if (p->read[a] != p->id) {
			p->read[a] = p->id;
			p->nin++;
		}
	}
	p->defined[in->res] = p->id;
	p->nout += p->last[in->res] > j;
}

static void
next_kernel(Params *p)
{
	p->id++;
	p->nin = p->nout = 0;
}

/* a reshape with its operand's bytes computed in this level, whose result
 * nothing else in the level reads: a view of the operand after the level's
 * kernel, which then writes the operand in its own shape (a row kernel's
 * space: the block-wise quantize's (M, K/128, 128) before its (M, K)) */
static bool
trailing_view(Func *fn, const Instr *in, const uint32_t *read_in, uint32_t level)
{
	const Instr *def;

	if ((in->op != OP_RESHAPE && in->op != OP_SQUEEZE) || !ir_same_bytes(fn, in) || read_in[in->res] == level + 1)
		return false;
	def = ir_def(fn, ir_args(fn, in)[0]);
	return def && !op_step((Op)def->op);
}

/* a reshape or transpose with its operand's bytes (ir_same_bytes) whose
 * operand is in memory whatever the kernels are: an input, or a GEMM's or
 * an extern's result. Fused with its operand's producer it would cost a
 * write; alone it costs nothing. */
static bool
free_view(Func *fn, const Instr *in)
{
	const Instr *def;

	if (!ir_same_bytes(fn, in))
		return false;
	def = ir_def(fn, ir_args(fn, in)[0]);
	return !def || op_step((Op)def->op);
}

Func *
pass_fuse(Func *fn, int opt)
{
	uint32_t *dep = depths(fn), maxd = 0, *map, first, *order, *start;
	Params p = { 0 };
	Func *d = ir_rewrite_begin(fn, &map);

	for (uint32_t i = 0; i < fn->nins; i++)
		if (dep[fn->ins[i].res] > maxd)
			maxd = dep[fn->ins[i].res];
	order = by_slot(fn, dep, 2 * maxd + 3, &start);
	p.last = last_uses(fn, order);
	p.defined = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *p.defined);
	p.read = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *p.read);
	/* per value: the first level (+ 1) whose kernel reads it — its own
	 * level's if any does, as no earlier one can */
	uint32_t *read_in = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *read_in);

	for (uint32_t level = 0; level <= maxd; level++)
		for (uint32_t j = start[2 * level + 1]; j < start[2 * level + 2]; j++)
			for (uint32_t a = 0; a < fn->ins[order[j]].nargs; a++)
				if (!read_in[ir_args(fn, &fn->ins[order[j]])[a]])
					read_in[ir_args(fn, &fn->ins[order[j]])[a]] = level + 1;
	for (uint32_t j = start[0]; j < start[1]; j++) /* collectives of inputs, first */
		ir_copy_instr(d, fn, &fn->ins[order[j]], map);
	for (uint32_t level = 0; level <= maxd; level++) {
		/* a view of a value in memory anyway first, each its own kernel:
		 * the memory plan gives it no launch */
		for (uint32_t j = start[2 * level + 1]; opt >= 2 && j < start[2 * level + 2]; j++) {
			if (!free_view(fn, &fn->ins[order[j]]))
				continue;
			next_kernel(&p);
			join(fn, &p, &fn->ins[order[j]], j);
			ir_copy_instr(d, fn, &fn->ins[order[j]], map);
			add_kernel(d, d->nins - 1);
		}
		first = d->nins;
		next_kernel(&p);
		for (uint32_t j = start[2 * level + 1]; j < start[2 * level + 2]; j++) {
			const Instr *in = &fn->ins[order[j]];

			if (opt >= 2 && (free_view(fn, in) || trailing_view(fn, in, read_in, level)))
				continue;
			if (opt >= 2 && d->nins > first && params_with(fn, &p, in, j) > MAXPARAMS) {
				add_kernel(d, first); /* full: the level goes on in a new kernel */
				first = d->nins;
				next_kernel(&p);
			}
			join(fn, &p, in, j);
			ir_copy_instr(d, fn, in, map);
			if (opt < 2)
				add_kernel(d, d->nins - 1);
		}
		if (opt >= 2)
			add_kernel(d, first);
		for (uint32_t j = start[2 * level + 1]; opt >= 2 && j < start[2 * level + 2]; j++) {
			if (free_view(fn, &fn->ins[order[j]]) || !trailing_view(fn, &fn->ins[order[j]], read_in, level))
				continue;
			next_kernel(&p);
			join(fn, &p, &fn->ins[order[j]], j);
			ir_copy_instr(d, fn, &fn->ins[order[j]], map);
			add_kernel(d, d->nins - 1);
		}
		for (uint32_t j = start[2 * level + 2]; j < start[2 * level + 3]; j++)
			ir_copy_instr(d, fn, &fn->ins[order[j]], map);
	}
	ir_rewrite_end(d, fn, map);
	kernels_io(d);
	return d;
}
