/* memplan.c — the memory plan: where every materialized value lives and the
 * order of the steps.
 *
 * A value is materialized when a kernel writes it for another step, a GEMM
 * produces it, or it is an input or output. Inputs and outputs live in the
 * caller's tensors, and the values a function saves for a later one in state
 * slots; a value returned twice, or an input returned, costs a copy step.
 * Every other value gets a buffer in one workspace: buffers are placed
 * first-fit at 256-byte alignment, and a buffer whose last reader has run is
 * reused by the next. A step never writes over a buffer it reads.
 *
 * A kernel whose one instruction keeps its operand's bytes (ir_same_bytes:
 * a reshape of a row-major value, or a transpose into a layout of the same
 * bytes) moves no data: it gets no launch, and its result is its source's
 * bytes — where the source lives, or, when the result is returned or saved
 * and its source is neither, the source is written straight there (a
 * GEMM's output returned reshaped).
 *
 * A collective runs on a stream of its own from its step to its wait's: its
 * operand lives until the wait, and it writes where its wait's result lives
 * (the wait moves no data), a buffer taken from the collective's step on. */
#include <string.h>

#include "be.h"

#define ALIGN 256

static int64_t
bytes_of(Func *fn, uint32_t v)
{
	int64_t n = ir_numel(fn, v) * dt_size((DType)fn->vals[v].dtype);

	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

static void
add_step(Func *fn, Plan *p, Step s)
{
	arena_grow(fn->arena, (void **)&p->steps, &p->capsteps, p->nsteps + 1, sizeof s);
	p->steps[p->nsteps++] = s;
}

static uint32_t
add_buf(Func *fn, Plan *p, PlanBuf b)
{
	arena_grow(fn->arena, (void **)&p->bufs, &p->capbufs, p->nbufs + 1, sizeof b);
	p->bufs[p->nbufs] = b;
	return p->nbufs++;
}

/* per value: the value whose bytes it is, or IR_NONE: the result of a
 * kernel of one instruction that moves no data (a view, given no launch),
 * and a wait's result (its collective's) */
static uint32_t *
views(Func *fn)
{
	uint32_t *src = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *src);
	bool *ret = arena_alloc(fn->arena, fn->nvals + 1), *taken = arena_alloc(fn->arena, fn->nvals + 1);

	for (uint32_t v = 0; v <= fn->nvals; v++)
		src[v] = IR_NONE;
	for (uint32_t i = 0; i < fn->nins; i++)
		if (fn->ins[i].op == OP_WAIT)
			src[fn->ins[i].res] = ir_args(fn, &fn->ins[i])[0];
	for (uint32_t i = 0; i < fn->nrets; i++)
		ret[fn->rets[i]] = true;
	for (uint32_t i = 0; i < fn->nparams; i++)
		taken[fn->params[i]] = true;
	for (uint32_t k = 0; k < fn->nkernels; k++) {
		const Kernel *kn = &fn->kernels[k];
		const Instr *in = &fn->ins[kn->first];
		uint32_t x = in->nargs ? ir_args(fn, in)[0] : IR_NONE, y = in->res;

		if (kn->count != 1 || !ir_same_bytes(fn, in))
			continue;
		/* a returned result takes its source into the output: a source
		 * that is an input, returned itself, taken already or a view
		 * itself (nothing writes it) cannot go */
		if (ret[y]) {
			if (taken[x] || ret[x])
				continue;
			taken[x] = true;
		}
		src[y] = x;
		taken[y] = true;
	}
	return src;
}

/* the step that writes each value, and the last step that reads it */
static void
lifetimes(Func *fn, Plan *p, const uint32_t *view, uint32_t *def, uint32_t *last)
{
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];

		if (in->kernel >= 0 && view[in->res] != IR_NONE) {
			def[in->res] = def[view[in->res]]; /* its bytes are its source's */
			continue;
		}
		if (in->kernel >= 0 && fn->kernels[in->kernel].first == i)
			add_step(fn, p, (Step){ .kind = STEP_LAUNCH, .index = (uint32_t)in->kernel });
		else if (op_gemm((Op)in->op))
			add_step(fn, p, (Step){ .kind = STEP_GEMM, .index = i });
		else if (in->op == OP_EXTERN && ir_attr(fn, in)[0] == 0) /* one step for all its results */
			add_step(fn, p, (Step){ .kind = STEP_CALL, .index = i });
		else if (ir_ops[in->op].cls == OC_COLLECTIVE)
			add_step(fn, p, (Step){ .kind = in->op == OP_WAIT ? STEP_WAIT : STEP_COLLECTIVE, .index = i });
		def[in->res] = p->nsteps - 1;
		if (in->op == OP_WAIT) { /* its collective's bytes; the operand is read until now */
			uint32_t x = ir_args(fn, ir_def(fn, view[in->res]))[0];

			def[in->res] = def[view[in->res]];
			if (last[x] == IR_NONE || last[x] < p->nsteps - 1)
				last[x] = p->nsteps - 1;
		}
		if (in->kernel >= 0)
			continue;
		for (uint32_t j = 0; j < in->nargs; j++)
			last[ir_args(fn, in)[j]] = p->nsteps - 1;
	}
	for (uint32_t k = 0; k < fn->nkernels; k++)
		for (uint32_t j = 0; view[fn->ins[fn->kernels[k].first].res] == IR_NONE && j < fn->kernels[k].nins;
			j++) {
			uint32_t v = fn->argv[fn->kernels[k].ins + j];

			if (last[v] == IR_NONE || last[v] < def[fn->ins[fn->kernels[k].first].res])
				last[v] = def[fn->ins[fn->kernels[k].first].res];
		}
	/* a source lives as long as its views are read (last first: a view's
	 * own source may be a view, or a wait) */
	for (uint32_t y = fn->nvals; y-- > 0;) {
		uint32_t x = view[y];

		if (x != IR_NONE && last[y] != IR_NONE && (last[x] == IR_NONE || last[x] < last[y]))
			last[x] = last[y];
	}
}

/* per value: a kernel writes it for another step (one of its outputs) */
static bool *
kernel_outputs(Func *fn)
{
	bool *out = arena_alloc(fn->arena, fn->nvals + 1);

	for (uint32_t k = 0; k < fn->nkernels; k++)
		for (uint32_t j = 0; j < fn->kernels[k].nouts; j++)
			out[fn->argv[fn->kernels[k].outs + j]] = true;
	return out;
}

static bool
materialized(Func *fn, const bool *kout, uint32_t v)
{
	const Instr *in = ir_def(fn, v);

	if (!in || op_step((Op)in->op))
		return true;
	if (in->kernel < 0)
		die("value %u is in no kernel: the memory plan wants lowered IR (pass_lowered)", v);
	return kout[v];
}

/* the lowest offset in {0} ∪ {ends of live buffers} where [off, off+size)
 * overlaps none of the buffers live[0..n), sorted by offset: one pass */
static int64_t
first_fit(Plan *p, const uint32_t *live, uint32_t n, int64_t size)
{
	int64_t off = 0;

	for (uint32_t i = 0; i < n; i++) {
		const PlanBuf *pb = &p->bufs[live[i]];

		if (off < pb->offset + pb->bytes && pb->offset < off + size)
			off = pb->offset + pb->bytes;
	}
	return off;
}

/* Values are placed in program order, so the steps that write them never
 * go back: a buffer dead before one step is dead for every later one, and
 * leaves the list of live buffers (kept sorted by offset) for good. */
static void
place(Func *fn, Plan *p, const uint32_t *view, const uint32_t *def, const uint32_t *last)
{
	uint32_t *bufend = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *bufend);
	uint32_t *live = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *live), nlive = 0, n;
	bool *kout = kernel_outputs(fn);

	for (uint32_t i = 0; i < fn->nins; i++) {
		uint32_t v = fn->ins[i].res, b = p->nbufs;
		int64_t size, off;

		if (view[v] != IR_NONE) {
			if (p->loc[v].kind == LOC_NONE) /* where its source is, placed before it */
				p->loc[v] = p->loc[view[v]];
			continue;
		}
		if (p->loc[v].kind != LOC_NONE || !materialized(fn, kout, v))
			continue;
		n = 0;
		for (uint32_t j = 0; j < nlive; j++)
			if (bufend[live[j]] >= def[v])
				live[n++] = live[j];
		nlive = n;
		size = bytes_of(fn, v);
		off = first_fit(p, live, nlive, size);
		p->loc[v] = (Loc){ LOC_BUF, b };
		bufend[b] = last[v] == IR_NONE ? def[v] : last[v];
		add_buf(fn, p, (PlanBuf){ v, off, size, false });
		for (n = nlive++; n > 0 && p->bufs[live[n - 1]].offset > off; n--)
			live[n] = live[n - 1];
		live[n] = b;
		if (off + size > p->workspace)
			p->workspace = off + size;
	}
}

Plan *
pass_memplan(Func *fn)
{
	Plan *p = arena_alloc(fn->arena, sizeof *p);
	uint32_t *def = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *def);
	uint32_t *last = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *last);

	uint32_t *view = views(fn);

	p->loc = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *p->loc);
	for (uint32_t v = 0; v < fn->nvals; v++)
		last[v] = IR_NONE;
	lifetimes(fn, p, view, def, last);
	for (uint32_t i = 0, n = 0; i < fn->nparams; i++)
		p->loc[fn->params[i]] =
			fn->pslot[i] >= 0 ? (Loc){ LOC_STATE, (uint32_t)fn->pslot[i] } : (Loc){ LOC_IN, n++ };
	for (uint32_t i = 0, n = 0; i < fn->nrets; i++) {
		uint32_t v = fn->rets[i];
		Loc dst = fn->rslot[i] >= 0 ? (Loc){ LOC_STATE, (uint32_t)fn->rslot[i] } : (Loc){ LOC_OUT, n++ };

		if (p->loc[v].kind == LOC_NONE)
			p->loc[v] = dst;
		else
			add_step(fn, p,
				(Step){ .kind = STEP_COPY,
					.dst = dst,
					.src = p->loc[v],
					.bytes = ir_numel(fn, v) * dt_size((DType)fn->vals[v].dtype) });
	}
	/* a returned view's source is written where the view is returned (last
	 * first: a wait's collective, when the wait's view is returned) */
	for (uint32_t y = fn->nvals; y-- > 0;) {
		uint32_t x = view[y];

		if (x != IR_NONE && p->loc[y].kind != LOC_NONE && p->loc[x].kind == LOC_NONE)
			p->loc[x] = p->loc[y];
	}
	place(fn, p, view, def, last);
	return p;
}

uint32_t
plan_add_scratch(Func *fn, Plan *p, int64_t bytes)
{
	int64_t size = (bytes + ALIGN - 1) / ALIGN * ALIGN;
	uint32_t b = add_buf(fn, p, (PlanBuf){ IR_NONE, p->workspace, size, true });

	p->workspace += size;
	return b;
}

void
plan_add_shared(Func *fn, Plan *p, uint32_t v, uint32_t u)
{
	arena_grow(fn->arena, (void **)&p->shared, &p->capshared, p->nshared + 1, sizeof *p->shared);
	p->shared[p->nshared++] = (Shared){ v, u };
}
