/* fuse.c — partition the function into kernels and GEMM steps.
 *
 * A GEMM is a plan step of its own. Everything else joins a kernel. The
 * GEMM depth of a value counts the GEMMs on its longest path from the inputs;
 * every non-GEMM instruction of depth d goes into kernel d, so all
 * independent work of a step shares one launch (the input's and the weight's
 * quantization together), and a reduction whose result is broadcast back over
 * the data it reduced stays in the same kernel: the backend splits such a
 * kernel into phases with a grid-wide barrier between them. Constants go to
 * the kernel of their first user.
 *
 * With opt < 2 each instruction is a kernel of its own.
 * The function is rebuilt in schedule order: kernel 0, the GEMMs of depth 1,
 * kernel 1, ... and each kernel lists the values it reads and writes. */
#include <string.h>

#include "passes.h"

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
		dep[in->res] = op_gemm((Op)in->op) ? d + 1 : d;
	}
	/* constants: the kernel of their earliest user */
	for (uint32_t i = fn->nins; i-- > 0;) {
		const Instr *in = &fn->ins[i];

		for (uint32_t j = 0; j < in->nargs; j++) {
			uint32_t a = ir_args(fn, in)[j];
			uint32_t want = op_gemm((Op)in->op) ? dep[in->res] - 1 : dep[in->res];

			if (ir_def(fn, a) && ir_def(fn, a)->op == OP_FULL && (dep[a] == 0 || want < dep[a]))
				dep[a] = want;
		}
	}
	return dep;
}

/* record kernel k's inputs and outputs, in order of first appearance */
void
pass_kernel_io(Func *fn, uint32_t k)
{
	Kernel *kn = &fn->kernels[k];
	uint32_t *uses = ir_uses(fn), *inside = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *inside);
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
				inside[a] = UINT32_MAX / 2;   /* marks an input already listed */
				ir_push_ids(fn, &a, 1);
				kn->nins++;
			}
		}
	}
	kn->outs = fn->nargv;
	kn->nouts = 0;
	for (uint32_t i = kn->first; i < last; i++) {
		uint32_t r = fn->ins[i].res;

		if (uses[r] > inside[r]) {   /* used outside the kernel or returned */
			ir_push_ids(fn, &r, 1);
			kn->nouts++;
		}
	}
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

Func *
pass_fuse(Func *fn, int opt)
{
	uint32_t *dep = depths(fn), maxd = 0, *map, first;
	Func *d = ir_rewrite_begin(fn, &map);

	for (uint32_t i = 0; i < fn->nins; i++)
		if (dep[fn->ins[i].res] > maxd)
			maxd = dep[fn->ins[i].res];
	for (uint32_t level = 0; level <= maxd; level++) {
		first = d->nins;
		for (uint32_t i = 0; i < fn->nins; i++) {
			const Instr *in = &fn->ins[i];

			if (op_gemm((Op)in->op) || dep[in->res] != level)
				continue;
			ir_copy_instr(d, fn, in, map);
			if (opt < 2)
				add_kernel(d, d->nins - 1);
		}
		if (opt >= 2)
			add_kernel(d, first);
		for (uint32_t i = 0; i < fn->nins; i++)
			if (op_gemm((Op)fn->ins[i].op) && dep[fn->ins[i].res] == level + 1)
				ir_copy_instr(d, fn, &fn->ins[i], map);
	}
	ir_rewrite_end(d, fn, map);
	for (uint32_t k = 0; k < d->nkernels; k++)
		pass_kernel_io(d, k);
	return d;
}
