/* program.c — loading an fp8cc program and running its functions.
 *
 * Loading: parse the plan (plan.c), check its target against the device,
 * JIT the PTX (cuModuleLoadDataEx with the error and info logs), resolve every
 * launch once (function, parameter count, block and shared-memory limits, the
 * grid of a persistent launch, cooperative residency), allocate each
 * function's workspace and zero its `zero` buffers, and make the default
 * state when the program has state slots.
 *
 * Running a function: check the caller's tensors against its signature and
 * that the state slots it reads were written, then either enqueue the steps
 * one by one on the caller's stream, or — graphs on — replay the CUDA graph
 * captured for this set of pointers (inputs, outputs, the state's base),
 * capturing it first (on the context's capture stream) when there is none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dims.h"
#include "rt.h"

/* A launch step resolved against the module. */
typedef struct {
	CUfunction fn;
	unsigned grid; /* blocks, after grid=0 is resolved */
} Launch;

/* A captured function for one set of pointers. */
typedef struct {
	CUgraphExec exec;
	CUdeviceptr *ptrs; /* the nin + nout + 1 pointers it was captured with */
	uint64_t used;     /* last use, for replacing the least recently used */
} Graph;

/* A call step resolved against the context's externs: what it calls and
 * the tensors it passes (types from the plan, pointers set at each run). */
typedef struct {
	RtExtern ext; /* a copy: later registrations are for later loads */
	fp8rt_tensor *ins, *outs;
} Call;

/* An output's memory, for check_shared. */
typedef struct Span {
	uintptr_t a;
	size_t n;
	int out;
} Span;

/* A plan function, loaded. */
typedef struct {
	const RtFunc *f;
	int index;
	CUdeviceptr ws;       /* f->workspace bytes, or 0 */
	int ws_caller;        /* ws is the caller's (fp8rt_function_set_workspace) */
	Launch *launch;       /* per step (unused for gemm and copy) */
	Call *calls;          /* per step (used for call) */
	int nograph;          /* it calls an extern that cannot be captured */
	CUevent *ev;          /* per collective: ready (2 id), done (2 id + 1) */
	CUdeviceptr *ptrs;    /* this run's inputs, outputs, then the state's base */
	CUdeviceptr *checked; /* the last pointers check_shared passed */
	int *src, *upd;       /* per output: the input it copies, it may update in place; -1: none */
	size_t *bytes;        /* per input, then per output: its size */
	Span *span;           /* per output: check_shared's scratch */
	Graph graph[RT_GRAPHS];
	uint64_t clock;
} Fn;

/* The state slots of one sequence of calls (a training step's forward and
 * backward): one allocation, and which slots a call has written. */
struct fp8rt_state {
	fp8rt_program *prog;
	fp8rt_state *next, *prev; /* the program's list */
	CUdeviceptr base;         /* plan.state_bytes, or 0 */
	unsigned char *written;   /* per slot */
};

struct fp8rt_program {
	fp8rt_context *ctx;
	fp8rt_program *next, *prev; /* the context's list */
	char *name;
	RtPlan plan;
	CUmodule module;
	Fn *fn;                   /* per plan function */
	CUdeviceptr *argv;        /* kernel parameter values, max args */
	void **argp;              /* pointers to them, for cuLaunchKernel */
	int graphs;               /* replay on */
	int running;              /* inside one of its externs, which may call libfp8rt back */
	fp8rt_state *states;      /* every state made for it */
	fp8rt_state *dflt;        /* the default state; NULL without state slots */
	fp8rt_prepared *prepared; /* every prepared run made for it */
};

/* A prepared run (fp8rt_prepare): f's signature as descriptors, and the
 * slots a caller sets before each run. */
struct fp8rt_prepared {
	fp8rt_program *prog;
	fp8rt_prepared *next, *prev; /* the program's list */
	int f;
	fp8rt_tensor *in, *out;
	void **slots; /* the stream, the inputs' pointers, the outputs' */
};

/* ---- loading ------------------------------------------------------------- */

/* The device runs PTX for target sm_XY when it is at least XY; an
 * architecture-specific target (sm_90a) needs exactly that architecture, a
 * family target (sm_100f) the same major version. */
static fp8rt_status
check_target(fp8rt_program *p)
{
	fp8rt_context *ctx = p->ctx;
	const RtPlan *pl = &p->plan;
	int cc = ctx->props.cc_major * 10 + ctx->props.cc_minor;
	int ok = pl->sm_suffix == 'a'  ? cc == pl->sm
		: pl->sm_suffix == 'f' ? cc / 10 == pl->sm / 10 && cc >= pl->sm
				       : cc >= pl->sm;
	if (!ok)
		return rt_err(ctx, FP8RT_UNSUPPORTED, "%s: the program targets %s; device %d (%s) is sm_%d", p->name,
			pl->target, ctx->device, ctx->props.name, cc);
	return FP8RT_OK;
}

static fp8rt_status
jit(fp8rt_program *p, const char *ptx)
{
	fp8rt_context *ctx = p->ctx;
	char *elog = calloc(1, 16384), *ilog = calloc(1, 4096);
	CUjit_option opt[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
		CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES };
	void *val[] = { elog, (void *)(uintptr_t)16384, ilog, (void *)(uintptr_t)4096 };
	if (!elog || !ilog) {
		free(elog), free(ilog);
		return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", p->name);
	}
	/* not CHECK: the failure wants the JIT's logs and its own status */
	CUresult r = drv.cuModuleLoadDataEx(&p->module, ptx, 4, opt, val);
	fp8rt_status st = FP8RT_OK;
	if (r != CUDA_SUCCESS) {
		rt_fail_call(
			ctx, 0, r, "cuModuleLoadDataEx(&module, ptx, 4, jit_options, jit_values)", __FILE__, __LINE__);
		st = r == CUDA_ERROR_OUT_OF_MEMORY                ? FP8RT_OUT_OF_MEMORY
			: r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ? FP8RT_UNSUPPORTED
			: r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_INVALID_IMAGE ||
				r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_JIT_COMPILATION_DISABLED
			? FP8RT_BAD_PROGRAM
			: FP8RT_CUDA_ERROR;
		rt_err(ctx, st, "%s: %s\nJIT error log:\n%s%s%s", p->name, fp8rt_last_error(ctx),
			elog[0] ? elog : "(empty)\n", ilog[0] ? "\nJIT info log:\n" : "", ilog);
		p->module = NULL;
	}
	free(elog);
	free(ilog);
	return st;
}

static fp8rt_status
wrong_count(fp8rt_program *p, const RtLaunch *l, size_t n, int line)
{
	return rt_err(p->ctx, FP8RT_BAD_PROGRAM, "%s:%d: launch %s passes %d arguments but the kernel takes %zu",
		p->name, line, l->kernel, l->nargs, n);
}

/* The kernel takes what the launch passes, one 8-byte pointer per
 * reference, where the driver can tell: the count from cuFuncGetParamCount
 * (13.2+), the sizes from cuFuncGetParamInfo (12.4+). Parameters are asked
 * for only below the count (with no count, below the plan's), never past
 * the kernel's last one: compute-sanitizer's memcheck reports such a query. */
static fp8rt_status
check_params(fp8rt_program *p, const RtLaunch *l, CUfunction fn, int line)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	size_t n = (size_t)l->nargs, off, size;
	if (drv.cuFuncGetParamCount) {
		CHECK(drv.cuFuncGetParamCount(fn, &n));
		if (n != (size_t)l->nargs)
			return wrong_count(p, l, n, line);
	}
	for (size_t i = 0; drv.cuFuncGetParamInfo && i < n; i++) {
		CUresult r = drv.cuFuncGetParamInfo(fn, i, &off, &size);
		if (r != CUDA_SUCCESS && !drv.cuFuncGetParamCount)
			return wrong_count(p, l, i, line); /* no count: the first failure is the end */
		if (r != CUDA_SUCCESS)
			return rt_fail_call(
				ctx, 0, r, "drv.cuFuncGetParamInfo(fn, i, &off, &size)", __FILE__, __LINE__);
		if (size != sizeof(CUdeviceptr))
			return rt_err(ctx, FP8RT_BAD_PROGRAM,
				"%s:%d: launch %s: kernel parameter %zu is %zu bytes, the plan passes an 8-byte pointer",
				p->name, line, l->kernel, i, size);
	}
fail:
	return st;
}

/* Block and shared-memory limits, and the grid: grid=0 is as many blocks as
 * fit at once; a cooperative grid is cut to what fits at once (fp8cc's
 * kernels loop over their work with the grid's stride, so any grid works);
 * "fits" is at most per_sm blocks an SM where the plan says so. */
static fp8rt_status
size_launch(fp8rt_program *p, const RtLaunch *l, Launch *out, int line)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	int maxthreads = 0, static_smem = 0, dyn_max = 0, per_sm = 0;
	CHECK(drv.cuFuncGetAttribute(&maxthreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, out->fn));
	CHECK(drv.cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, out->fn));
	CHECK(drv.cuFuncGetAttribute(&dyn_max, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, out->fn));
	if (l->block > maxthreads)
		return rt_err(ctx, FP8RT_BAD_PROGRAM,
			"%s:%d: launch %s block=%d, but the kernel allows at most %d threads", p->name, line, l->kernel,
			l->block, maxthreads);
	if ((int64_t)l->smem + static_smem > ctx->smem_optin)
		return rt_err(ctx, FP8RT_BAD_PROGRAM,
			"%s:%d: launch %s smem=%d plus %d static bytes exceeds the device's %d bytes per block",
			p->name, line, l->kernel, l->smem, static_smem, ctx->smem_optin);
	if (l->smem > dyn_max)
		CHECK(drv.cuFuncSetAttribute(out->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, l->smem));
	CHECK(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, out->fn, l->block, (size_t)l->smem));
	if (l->per_sm && l->per_sm < per_sm) /* the plan's cap (version 4) */
		per_sm = l->per_sm;
	int64_t resident = (int64_t)per_sm * ctx->props.sm_count;
	if (resident == 0)
		return rt_err(ctx, FP8RT_BAD_PROGRAM,
			"%s:%d: launch %s: no block of %d threads with smem=%d fits on an SM", p->name, line, l->kernel,
			l->block, l->smem);
	if (l->coop && !ctx->props.cooperative_launch)
		return rt_err(ctx, FP8RT_UNSUPPORTED,
			"%s:%d: launch %s coop=1, but %s does not support cooperative launches", p->name, line,
			l->kernel, ctx->props.name);
	out->grid = (unsigned)(l->grid && !(l->coop && l->grid > resident) ? l->grid : resident);
fail:
	return st;
}

static fp8rt_status
resolve_launches(fp8rt_program *p)
{
	fp8rt_context *ctx = p->ctx;
	int maxargs = 1;
	for (int f = 0; f < p->plan.nfunc; f++) {
		const RtFunc *pf = &p->plan.func[f];
		for (int i = 0; i < pf->nstep; i++) {
			const RtStep *s = &pf->step[i];
			Launch *out = &p->fn[f].launch[i];
			if (s->kind != STEP_LAUNCH)
				continue;
			const RtLaunch *l = &s->u.launch;
			CUresult r = drv.cuModuleGetFunction(&out->fn, p->module, l->kernel);
			if (r == CUDA_ERROR_NOT_FOUND)
				return rt_err(ctx, FP8RT_BAD_PROGRAM, "%s:%d: launch %s: the PTX has no kernel '%s'",
					p->name, s->line, l->kernel, l->kernel);
			if (r != CUDA_SUCCESS)
				return rt_fail_call(
					ctx, 0, r, "cuModuleGetFunction(&fn, module, kernel)", __FILE__, __LINE__);
			fp8rt_status st = check_params(p, l, out->fn, s->line);
			if (st == FP8RT_OK)
				st = size_launch(p, l, out, s->line);
			if (st != FP8RT_OK)
				return st;
			if (l->nargs > maxargs)
				maxargs = l->nargs;
		}
	}
	p->argv = calloc((size_t)maxargs, sizeof *p->argv);
	p->argp = calloc((size_t)maxargs, sizeof *p->argp);
	if (!p->argv || !p->argp)
		return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", p->name);
	for (int i = 0; i < maxargs; i++)
		p->argp[i] = &p->argv[i];
	return FP8RT_OK;
}

/* Zero function f's `zero` buffers in its workspace. */
static fp8rt_status
zero_buffers(fp8rt_program *p, int f)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	const RtFunc *pf = &p->plan.func[f];
	for (int i = 0; i < pf->nbuf; i++)
		if (pf->buf[i].zero && pf->buf[i].bytes)
			CHECK(drv.cuMemsetD8(
				p->fn[f].ws + (CUdeviceptr)pf->buf[i].offset, 0, (size_t)pf->buf[i].bytes));
fail:
	return st;
}

/* One allocation per function for every buffer of it; `zero` buffers zeroed
 * once, here. (Functions do not share a workspace: one's `zero` buffers
 * must stay zero while another runs.) */
static fp8rt_status
alloc_workspaces(fp8rt_program *p)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	for (int f = 0; f < p->plan.nfunc; f++) {
		if (p->plan.func[f].workspace == 0)
			continue;
		CHECK(drv.cuMemAlloc(&p->fn[f].ws, (size_t)p->plan.func[f].workspace));
		if ((st = zero_buffers(p, f)) != FP8RT_OK)
			goto fail;
	}
	CHECK(drv.cuCtxSynchronize());
fail:
	return st;
}

/* Drop a kept graph (its pointers stay allocated for the next capture). */
static fp8rt_status
graph_drop(fp8rt_context *ctx, Graph *g, fp8rt_status st)
{
	if (g->exec)
		RELEASE(drv.cuGraphExecDestroy(g->exec));
	g->exec = NULL;
	g->used = 0;
	return st;
}

static fp8rt_status
fn_graphs_free(fp8rt_context *ctx, Fn *fn, fp8rt_status st)
{
	for (int i = 0; i < RT_GRAPHS; i++)
		st = graph_drop(ctx, &fn->graph[i], st);
	return st;
}

static fp8rt_status
graphs_free(fp8rt_program *p, fp8rt_status st)
{
	for (int f = 0; p->fn && f < p->plan.nfunc; f++)
		st = fn_graphs_free(p->ctx, &p->fn[f], st);
	return st;
}

/* ---- state ------------------------------------------------------------------ */

static fp8rt_status
state_free(fp8rt_state *s, fp8rt_status st)
{
	fp8rt_program *p = s->prog;
	fp8rt_context *ctx = p->ctx;
	if (s->prev)
		s->prev->next = s->next;
	else
		p->states = s->next;
	if (s->next)
		s->next->prev = s->prev;
	if (p->dflt == s)
		p->dflt = NULL;
	if (s->base)
		RELEASE(drv.cuMemFree(s->base));
	free(s->written);
	free(s);
	return st;
}

static void
prepared_free(fp8rt_prepared *r)
{
	fp8rt_program *p = r->prog;
	if (r->prev)
		r->prev->next = r->next;
	else
		p->prepared = r->next;
	if (r->next)
		r->next->prev = r->prev;
	free(r->in);
	free(r->out);
	free(r->slots);
	free(r);
}

/* A state of zeroed slots, none written; the context pushed by the caller. */
static fp8rt_status
state_make(fp8rt_program *p, fp8rt_state **out)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	fp8rt_state *s = calloc(1, sizeof *s);
	if (!s || !(s->written = calloc((size_t)p->plan.nstate + 1, 1))) {
		free(s);
		return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", p->name);
	}
	s->prog = p;
	s->next = p->states;
	if (p->states)
		p->states->prev = s;
	p->states = s;
	if (p->plan.state_bytes) {
		CHECK(drv.cuMemAlloc(&s->base, (size_t)p->plan.state_bytes));
		CHECK(drv.cuMemsetD8(s->base, 0, (size_t)p->plan.state_bytes));
	}
	*out = s;
	return FP8RT_OK;
fail:
	return state_free(s, st);
}

/* Frees a program (its context pushed by the caller, or not needed: the
 * driver calls take the context from the objects). */
fp8rt_status
rt_program_free(fp8rt_program *p, fp8rt_status st)
{
	fp8rt_context *ctx = p->ctx;
	if (p->prev)
		p->prev->next = p->next;
	else if (ctx && ctx->programs == p)
		ctx->programs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	st = graphs_free(p, st);
	while (p->states)
		st = state_free(p->states, st);
	while (p->prepared)
		prepared_free(p->prepared);
	for (int f = 0; p->fn && f < p->plan.nfunc; f++) {
		Fn *fn = &p->fn[f];
		for (int i = 0; i < RT_GRAPHS; i++)
			free(fn->graph[i].ptrs);
		if (fn->ws && !fn->ws_caller)
			RELEASE(drv.cuMemFree(fn->ws));
		for (int i = 0; fn->calls && i < fn->f->nstep; i++) {
			free(fn->calls[i].ins);
			free(fn->calls[i].outs);
		}
		free(fn->calls);
		free(fn->launch);
		free(fn->ptrs);
		free(fn->checked);
		free(fn->src);
		free(fn->upd);
		free(fn->bytes);
		free(fn->span);
		for (int i = 0; fn->ev && i < 2 * fn->f->ncoll; i++)
			if (fn->ev[i])
				RELEASE(drv.cuEventDestroy(fn->ev[i]));
		free(fn->ev);
	}
	if (p->module)
		RELEASE(drv.cuModuleUnload(p->module));
	rt_plan_free(&p->plan);
	free(p->fn);
	free(p->argv);
	free(p->argp);
	free(p->name);
	free(p);
	return st;
}

static size_t
port_bytes(const RtPort *port)
{
	return (size_t)rt_type_numel(&port->type) * rt_dtype_size(port->type.dtype);
}

static fp8rt_status
alloc_host(fp8rt_program *p)
{
	const RtPlan *pl = &p->plan;
	int ok = (p->fn = calloc((size_t)pl->nfunc, sizeof *p->fn)) != NULL;
	for (int f = 0; ok && f < pl->nfunc; f++) {
		Fn *fn = &p->fn[f];
		size_t nptr = (size_t)(pl->func[f].nin + pl->func[f].nout) + 1;
		fn->f = &pl->func[f];
		fn->index = f;
		ok = (fn->launch = calloc((size_t)pl->func[f].nstep + 1, sizeof *fn->launch)) &&
			(fn->calls = calloc((size_t)pl->func[f].nstep + 1, sizeof *fn->calls)) &&
			(fn->ptrs = calloc(nptr, sizeof *fn->ptrs)) &&
			(fn->checked = calloc(nptr, sizeof *fn->checked)) &&
			(fn->src = calloc((size_t)pl->func[f].nout + 1, sizeof *fn->src)) &&
			(fn->upd = calloc((size_t)pl->func[f].nout + 1, sizeof *fn->upd)) &&
			(fn->bytes = calloc(nptr, sizeof *fn->bytes)) &&
			(fn->span = calloc((size_t)pl->func[f].nout + 1, sizeof *fn->span));
		for (int i = 0; ok && i < pl->func[f].nout; i++) {
			const RtPort *o = &pl->func[f].out[i];
			fn->src[i] = rt_plan_output_source(pl, &pl->func[f], i);
			fn->upd[i] = o->updates >= 0 && o->inplace ? o->updates : -1;
			fn->bytes[pl->func[f].nin + i] = port_bytes(o);
		}
		for (int i = 0; ok && i < pl->func[f].nin; i++)
			fn->bytes[i] = port_bytes(&pl->func[f].in[i]);
		for (int i = 0; ok && i < RT_GRAPHS; i++)
			ok = (fn->graph[i].ptrs = calloc(nptr, sizeof *fn->graph[i].ptrs)) != NULL;
	}
	return ok ? FP8RT_OK : rt_err(p->ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", p->name);
}

/* Every call step's extern, from the context's registrations; the ones
 * missing, all named in one message. */
static fp8rt_status
resolve_externs(fp8rt_program *p)
{
	char missing[1024] = "";
	size_t n = 0;
	int nmissing = 0;
	for (int k = 0; k < p->plan.nexterns; k++)
		if (!rt_find_extern(p->ctx, p->plan.externs[k]) && n < sizeof missing - 64) {
			n += (size_t)snprintf(
				missing + n, sizeof missing - n, "%s%s", nmissing ? ", " : "", p->plan.externs[k]);
			nmissing++;
		}
	if (nmissing)
		return rt_err(p->ctx, FP8RT_UNSUPPORTED,
			"%s: the program calls extern%s that %s not registered on this context: %s "
			"(fp8rt_register_extern before loading)",
			p->name, nmissing > 1 ? "s" : "", nmissing > 1 ? "are" : "is", missing);
	for (int f = 0; f < p->plan.nfunc; f++) {
		Fn *fn = &p->fn[f];
		for (int i = 0; i < fn->f->nstep; i++) {
			const RtStep *s = &fn->f->step[i];
			if (s->kind != STEP_CALL)
				continue;
			const RtCall *c = &s->u.call;
			const RtExtern *e = rt_find_extern(p->ctx, c->name);
			Call *cl = &fn->calls[i];
			cl->ext = *e;
			fn->nograph |= (e->flags & FP8RT_EXTERN_NO_GRAPH) != 0;
			if (!(cl->ins = calloc((size_t)c->nins + 1, sizeof *cl->ins)) ||
				!(cl->outs = calloc((size_t)c->nouts + 1, sizeof *cl->outs)))
				return rt_err(p->ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", p->name);
			for (int j = 0; j < c->nins + c->nouts; j++) {
				const RtType *t = rt_plan_ref_type(
					&p->plan, fn->f, j < c->nins ? c->ins[j] : c->outs[j - c->nins]);
				fp8rt_tensor *d = j < c->nins ? &cl->ins[j] : &cl->outs[j - c->nins];
				*d = fp8rt_tensor_dense(NULL, t->dtype, t->rank, t->dims);
			}
		}
	}
	return FP8RT_OK;
}

/* A program with collectives wants the context's communicator, of the
 * ranks it was compiled for, and two events a collective. A graph of one
 * of its functions holds its collectives too: the events fork the
 * context's collective stream into the capture and join it back at each
 * wait (docs/design.md, "Collectives"). */
static fp8rt_status
resolve_collectives(fp8rt_program *p)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	for (int f = 0; f < p->plan.nfunc; f++) {
		Fn *fn = &p->fn[f];
		if (fn->f->ncoll == 0)
			continue;
		if (!ctx->comm)
			return rt_err(ctx, FP8RT_UNSUPPORTED,
				"%s: function %s runs collectives, and the context has no communicator "
				"(fp8rt_context_init_comm or fp8rt_context_set_comm before loading)",
				p->name, fn->f->name);
		for (int i = 0; i < fn->f->nstep; i++) {
			const RtStep *s = &fn->f->step[i];
			if (s->kind == STEP_COLLECTIVE && s->u.coll.ranks && s->u.coll.ranks != ctx->nranks)
				return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
					"%s:%d: the collective is over %d ranks; the context's communicator has %d",
					p->name, s->line, s->u.coll.ranks, ctx->nranks);
			if (s->kind == STEP_COLLECTIVE && s->u.coll.kind == RT_BROADCAST &&
				s->u.coll.root >= ctx->nranks)
				return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
					"%s:%d: the broadcast is from rank %d; the context's communicator has %d ranks",
					p->name, s->line, s->u.coll.root, ctx->nranks);
		}
		if (!(fn->ev = calloc(2 * (size_t)fn->f->ncoll, sizeof *fn->ev)))
			return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", p->name);
		for (int i = 0; i < 2 * fn->f->ncoll; i++)
			CHECK(drv.cuEventCreate(&fn->ev[i], CU_EVENT_DISABLE_TIMING));
	}
fail:
	return st;
}

static int
has_gemm(const RtPlan *pl)
{
	for (int f = 0; f < pl->nfunc; f++)
		for (int i = 0; i < pl->func[f].nstep; i++)
			if (pl->func[f].step[i].kind == STEP_GEMM)
				return 1;
	return 0;
}

/* Everything after parsing; `text` is the NUL-terminated PTX file. */
static fp8rt_status
load(fp8rt_program *p, const char *text)
{
	fp8rt_status st = check_target(p);
	if (st == FP8RT_OK)
		st = alloc_host(p);
	if (st == FP8RT_OK)
		st = resolve_externs(p);
	if (st == FP8RT_OK)
		st = resolve_collectives(p);
	if (st == FP8RT_OK)
		st = jit(p, text);
	if (st == FP8RT_OK)
		st = resolve_launches(p);
	if (st == FP8RT_OK)
		st = alloc_workspaces(p);
	if (st == FP8RT_OK && p->plan.nstate)
		st = state_make(p, &p->dflt);
	if (st == FP8RT_OK && has_gemm(&p->plan))
		st = rt_lt_init(p->ctx);
	return st;
}

fp8rt_status
fp8rt_program_load_data(fp8rt_context *ctx, const void *data, size_t len, const char *name, fp8rt_program **out)
{
	char msg[1024];
	if (!ctx || !out || (!data && len))
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_program_load_data: %s is NULL",
			!ctx ? "ctx"
				: !out ? "out"
				       : "data");
	*out = NULL;
	if (!name)
		name = "<memory>";
	fp8rt_program *p = calloc(1, sizeof *p);
	char *text = malloc(len + 1);
	if (!p || !text || !(p->name = strdup(name))) {
		if (p)
			free(p->name);
		free(p), free(text);
		return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", name);
	}
	if (len)
		memcpy(text, data, len);
	text[len] = 0;
	p->ctx = ctx;
	p->graphs = 1;
	fp8rt_status st = rt_plan_parse_ptx(text, len, name, &p->plan, msg, sizeof msg);
	if (st != FP8RT_OK) {
		rt_err(ctx, st, "%s", msg);
	} else if ((st = rt_enter(ctx, name)) == FP8RT_OK) {
		if ((st = load(p, text)) != FP8RT_OK) {
			rt_program_free(p, st);
			p = NULL;
		}
		st = rt_leave(ctx, st);
	}
	free(text);
	if (st != FP8RT_OK) {
		if (p) /* not loaded, or loaded but the context not left */
			rt_program_free(p, st);
		return st;
	}
	p->next = ctx->programs;
	if (ctx->programs)
		ctx->programs->prev = p;
	ctx->programs = p;
	*out = p;
	return FP8RT_OK;
}

/* Reads a whole file; *data is NUL-terminated, for the caller to free. */
static fp8rt_status
read_file(fp8rt_context *ctx, const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	char *buf = NULL;
	if (!f)
		return rt_err(ctx, FP8RT_IO_ERROR, "cannot open %s: %s", path, strerror(errno));
	for (;;) {
		if (!buf || n == cap) {
			char *nb = realloc(buf, buf ? (cap *= 2) : cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", path);
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return rt_err(ctx, FP8RT_IO_ERROR, "cannot read %s", path);
	}
	*data = buf;
	*len = n;
	return FP8RT_OK;
}

fp8rt_status
fp8rt_program_load_file(fp8rt_context *ctx, const char *path, fp8rt_program **out)
{
	char *data = NULL;
	size_t len = 0;
	if (!ctx || !path || !out)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_program_load_file: %s is NULL",
			!ctx ? "ctx"
				: !path ? "path"
					: "out");
	*out = NULL;
	fp8rt_status st = read_file(ctx, path, &data, &len);
	if (st != FP8RT_OK)
		return st;
	st = fp8rt_program_load_data(ctx, data, len, path, out);
	free(data);
	return st;
}

fp8rt_status
fp8rt_program_check(const void *data, size_t len, const char *name)
{
	char msg[1024];
	RtPlan plan;
	if (!data && len)
		return rt_err(NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_program_check: data is NULL");
	fp8rt_status st = rt_plan_parse_ptx(data, len, name, &plan, msg, sizeof msg);
	if (st != FP8RT_OK)
		return rt_err(NULL, st, "%s", msg);
	rt_plan_free(&plan);
	return FP8RT_OK;
}

/* A program of no context: the plan only, for its signature. */
fp8rt_status
fp8rt_program_read(const void *data, size_t len, const char *name, fp8rt_program **out)
{
	char msg[1024];
	if (!out || (!data && len))
		return rt_err(NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_program_read: %s is NULL", !out ? "out" : "data");
	*out = NULL;
	if (!name)
		name = "<memory>";
	fp8rt_program *p = calloc(1, sizeof *p);
	if (!p || !(p->name = strdup(name))) {
		free(p);
		return rt_err(NULL, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", name);
	}
	fp8rt_status st = rt_plan_parse_ptx(data, len, name, &p->plan, msg, sizeof msg);
	if (st != FP8RT_OK) {
		free(p->name);
		free(p);
		return rt_err(NULL, st, "%s", msg);
	}
	*out = p;
	return FP8RT_OK;
}

/* fp8rt_run and friends on a program that fp8rt_program_read made */
static fp8rt_status
no_context(const fp8rt_program *p, const char *fn)
{
	return rt_err(NULL, FP8RT_INVALID_ARGUMENT,
		"%s: %s was read without a device (fp8rt_program_read); load it into a context to run it", fn, p->name);
}

fp8rt_status
fp8rt_program_destroy(fp8rt_program *p)
{
	if (!p)
		return FP8RT_OK;
	if (!p->ctx) {
		rt_program_free(p, FP8RT_OK); /* owns no CUDA object */
		return FP8RT_OK;
	}
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = rt_enter_outer(ctx, "fp8rt_program_destroy");
	if (st == FP8RT_INVALID_ARGUMENT)
		return st;  /* in use by another thread: nothing freed */
	if (st != FP8RT_OK) /* freed all the same */
		return rt_program_free(p, st);
	return rt_leave(ctx, rt_program_free(p, FP8RT_OK));
}

/* ---- signature ------------------------------------------------------------- */

int
fp8rt_program_function_count(const fp8rt_program *p)
{
	return p ? p->plan.nfunc : 0;
}

const char *
fp8rt_program_function_name(const fp8rt_program *p, int f)
{
	return p && f >= 0 && f < p->plan.nfunc ? p->plan.func[f].name : NULL;
}

int
fp8rt_program_extern_count(const fp8rt_program *p)
{
	return p ? p->plan.nexterns : 0;
}

const char *
fp8rt_program_extern_name(const fp8rt_program *p, int i)
{
	return p && i >= 0 && i < p->plan.nexterns ? p->plan.externs[i] : NULL;
}

fp8rt_status
fp8rt_program_find_function(const fp8rt_program *p, const char *name, int *f)
{
	if (!p || !name || !f)
		return rt_err(p ? p->ctx : NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_program_find_function: %s is NULL",
			!p ? "program"
				: !name ? "name"
					: "f");
	for (int i = 0; i < p->plan.nfunc; i++)
		if (strcmp(p->plan.func[i].name, name) == 0) {
			*f = i;
			return FP8RT_OK;
		}
	return rt_err(
		p->ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_program_find_function: %s has no function '%s'", p->name, name);
}

/* The function f of p, or an error from entry `what`. */
static fp8rt_status
get_func(const fp8rt_program *p, int f, const char *what, const RtFunc **out)
{
	if (!p)
		return rt_err(NULL, FP8RT_INVALID_ARGUMENT, "%s: program is NULL", what);
	if (f < 0 || f >= p->plan.nfunc)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT, "%s: function %d out of range (%s has %d)", what, f,
			p->name, p->plan.nfunc);
	*out = &p->plan.func[f];
	return FP8RT_OK;
}

fp8rt_status
fp8rt_function_io_count(const fp8rt_program *p, int f, int *nin, int *nout)
{
	const RtFunc *fn = NULL;
	fp8rt_status st = get_func(p, f, "fp8rt_function_io_count", &fn);
	if (st != FP8RT_OK)
		return st;
	if (nin)
		*nin = fn->nin;
	if (nout)
		*nout = fn->nout;
	return FP8RT_OK;
}

fp8rt_status
fp8rt_program_io_count(const fp8rt_program *p, int *nin, int *nout)
{
	return fp8rt_function_io_count(p, 0, nin, nout);
}

static void
tensor_info(const RtPort *port, fp8rt_tensor_info *info)
{
	memset(info, 0, sizeof *info);
	info->name = port->name;
	info->dtype = port->type.dtype;
	info->rank = port->type.rank;
	memcpy(info->dims, port->type.dims, sizeof info->dims);
}

static fp8rt_status
port_info(const fp8rt_program *p, int f, int i, int out, fp8rt_tensor_info *info)
{
	const char *what = out ? "fp8rt_function_output" : "fp8rt_function_input";
	const RtFunc *fn = NULL;
	fp8rt_status st = get_func(p, f, what, &fn);
	if (st != FP8RT_OK)
		return st;
	if (!info)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT, "%s: info is NULL", what);
	int n = out ? fn->nout : fn->nin;
	if (i < 0 || i >= n)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT, "%s: index %d out of range (function %s has %d)", what, i,
			fn->name, n);
	tensor_info(out ? &fn->out[i] : &fn->in[i], info);
	return FP8RT_OK;
}

fp8rt_status
fp8rt_function_input(const fp8rt_program *p, int f, int i, fp8rt_tensor_info *info)
{
	return port_info(p, f, i, 0, info);
}

fp8rt_status
fp8rt_function_output(const fp8rt_program *p, int f, int i, fp8rt_tensor_info *info)
{
	return port_info(p, f, i, 1, info);
}

fp8rt_status
fp8rt_program_input(const fp8rt_program *p, int i, fp8rt_tensor_info *info)
{
	return port_info(p, 0, i, 0, info);
}

fp8rt_status
fp8rt_program_output(const fp8rt_program *p, int i, fp8rt_tensor_info *info)
{
	return port_info(p, 0, i, 1, info);
}

const char *
fp8rt_program_target(const fp8rt_program *p)
{
	return p ? p->plan.target : NULL;
}

int
fp8rt_program_plan_version(const fp8rt_program *p)
{
	return p ? p->plan.version : 0;
}

int
fp8rt_program_state_count(const fp8rt_program *p)
{
	return p ? p->plan.nstate : 0;
}

fp8rt_status
fp8rt_program_state_info(const fp8rt_program *p, int i, fp8rt_tensor_info *info, int *from)
{
	if (!p || !info)
		return rt_err(p ? p->ctx : NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_program_state_info: %s is NULL",
			!p ? "program" : "info");
	if (i < 0 || i >= p->plan.nstate)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT,
			"fp8rt_program_state_info: slot %d out of range (%s has %d)", i, p->name, p->plan.nstate);
	tensor_info(&p->plan.state[i], info);
	if (from)
		*from = p->plan.state[i].from;
	return FP8RT_OK;
}

fp8rt_status
fp8rt_program_set_graphs(fp8rt_program *p, int enable)
{
	if (!p)
		return rt_err(NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_program_set_graphs: program is NULL");
	if (!p->ctx)
		return no_context(p, "fp8rt_program_set_graphs");
	fp8rt_status st = rt_enter_outer(p->ctx, "fp8rt_program_set_graphs");
	if (st != FP8RT_OK)
		return st;
	p->graphs = enable != 0;
	return rt_leave(p->ctx, enable ? FP8RT_OK : graphs_free(p, FP8RT_OK));
}

/* ---- externs: the context's registry ------------------------------------------ */

const RtExtern *
rt_find_extern(const fp8rt_context *ctx, const char *name)
{
	for (int i = 0; i < ctx->nexterns; i++)
		if (!strcmp(ctx->externs[i].name, name))
			return &ctx->externs[i];
	return NULL;
}

fp8rt_status
fp8rt_register_extern(fp8rt_context *ctx, const char *name, fp8rt_extern_fn fn, void *user, unsigned flags)
{
	if (!ctx || !name || !fn)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_register_extern: %s is NULL",
			!ctx ? "ctx"
				: !name ? "name"
					: "fn");
	if (flags & ~(unsigned)FP8RT_EXTERN_NO_GRAPH)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_register_extern: unknown flags 0x%x", flags);
	fp8rt_status st = rt_claim(ctx, "fp8rt_register_extern");
	if (st != FP8RT_OK)
		return st;
	RtExtern *e = (RtExtern *)rt_find_extern(ctx, name);
	if (!e && !rt_grow((void **)&ctx->externs, ctx->nexterns, &ctx->capexterns, sizeof *ctx->externs) &&
		(ctx->externs[ctx->nexterns].name = strdup(name)))
		e = &ctx->externs[ctx->nexterns++];
	if (e)
		e->fn = fn, e->user = user, e->flags = flags;
	else
		st = rt_err(ctx, FP8RT_OUT_OF_MEMORY, "fp8rt_register_extern: out of host memory");
	rt_unclaim(ctx);
	return st;
}

/* ---- workspaces ------------------------------------------------------------ */

/* function f's output i, for entry `what`, which writes *input */
static fp8rt_status
get_output(const fp8rt_program *p, int f, int i, const int *input, const char *what, const RtFunc **fn)
{
	fp8rt_status st = get_func(p, f, what, fn);
	if (st != FP8RT_OK)
		return st;
	if (!input)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT, "%s: input is NULL", what);
	if (i < 0 || i >= (*fn)->nout)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT, "%s: output %d out of range (%s has %d)", what, i,
			(*fn)->name, (*fn)->nout);
	return FP8RT_OK;
}

fp8rt_status
fp8rt_function_output_source(const fp8rt_program *p, int f, int i, int *input)
{
	const RtFunc *fn = NULL;
	fp8rt_status st = get_output(p, f, i, input, "fp8rt_function_output_source", &fn);
	if (st != FP8RT_OK)
		return st;
	*input = rt_plan_output_source(&p->plan, fn, i);
	return FP8RT_OK;
}

fp8rt_status
fp8rt_function_output_updates(const fp8rt_program *p, int f, int i, int *input, int *inplace)
{
	const RtFunc *fn = NULL;
	fp8rt_status st = get_output(p, f, i, input, "fp8rt_function_output_updates", &fn);
	if (st != FP8RT_OK)
		return st;
	*input = fn->out[i].updates;
	if (inplace)
		*inplace = fn->out[i].updates >= 0 && fn->out[i].inplace;
	return FP8RT_OK;
}

fp8rt_status
fp8rt_function_workspace(const fp8rt_program *p, int f, size_t *bytes)
{
	const RtFunc *fn = NULL;
	fp8rt_status st = get_func(p, f, "fp8rt_function_workspace", &fn);
	if (st != FP8RT_OK)
		return st;
	if (!bytes)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_function_workspace: bytes is NULL");
	*bytes = (size_t)fn->workspace;
	return FP8RT_OK;
}

fp8rt_status
fp8rt_function_set_workspace(fp8rt_program *p, int f, void *dptr, size_t bytes)
{
	const RtFunc *pf = NULL;
	fp8rt_status st = get_func(p, f, "fp8rt_function_set_workspace", &pf);
	if (st != FP8RT_OK)
		return st;
	if (!p->ctx)
		return no_context(p, "fp8rt_function_set_workspace");
	fp8rt_context *ctx = p->ctx;
	Fn *fn = &p->fn[f];
	if (dptr && bytes < (size_t)pf->workspace)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"fp8rt_function_set_workspace: %s function %s needs %lld bytes of workspace, not %zu", p->name,
			pf->name, (long long)pf->workspace, bytes);
	if ((uintptr_t)dptr % RT_WS_ALIGN)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"fp8rt_function_set_workspace: the workspace %p is not %d-byte aligned", dptr, RT_WS_ALIGN);
	if (pf->workspace == 0)
		return FP8RT_OK; /* nothing to place */
	if ((st = rt_enter_outer(ctx, "fp8rt_function_set_workspace")) != FP8RT_OK)
		return st;
	CUdeviceptr nws = (CUdeviceptr)(uintptr_t)dptr, old = fn->ws;
	CHECK(drv.cuCtxSynchronize()); /* work still using the old one */
	if (!dptr)
		CHECK(drv.cuMemAlloc(&nws, (size_t)pf->workspace));
	fn->ws = nws;
	if ((st = zero_buffers(p, f)) == FP8RT_OK)
		RELEASE(drv.cuCtxSynchronize());
	if (st != FP8RT_OK) { /* keep the old one */
		fn->ws = old;
		if (!dptr)
			RELEASE(drv.cuMemFree(nws));
		goto fail;
	}
	if (old && !fn->ws_caller)
		RELEASE(drv.cuMemFree(old));
	fn->ws_caller = dptr != NULL;
	st = fn_graphs_free(ctx, fn, st); /* captured with the old addresses */
fail:
	return rt_leave(ctx, st);
}

/* ---- states ------------------------------------------------------------------ */

fp8rt_status
fp8rt_state_create(fp8rt_program *p, fp8rt_state **out)
{
	if (!p || !out)
		return rt_err(p ? p->ctx : NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_state_create: %s is NULL",
			!p ? "program" : "out");
	*out = NULL;
	if (!p->ctx)
		return no_context(p, "fp8rt_state_create");
	fp8rt_status st = rt_enter(p->ctx, "fp8rt_state_create");
	if (st != FP8RT_OK)
		return st;
	return rt_leave(p->ctx, state_make(p, out));
}

fp8rt_status
fp8rt_state_destroy(fp8rt_state *s)
{
	if (!s)
		return FP8RT_OK;
	fp8rt_context *ctx = s->prog->ctx;
	fp8rt_status st = rt_enter_outer(ctx, "fp8rt_state_destroy");
	if (st == FP8RT_INVALID_ARGUMENT)
		return st;  /* in use by another thread: nothing freed */
	if (st != FP8RT_OK) /* freed all the same */
		return state_free(s, st);
	return rt_leave(ctx, state_free(s, FP8RT_OK));
}

fp8rt_state *
fp8rt_program_default_state(fp8rt_program *p)
{
	return p ? p->dflt : NULL;
}

static fp8rt_status
state_slot(const fp8rt_state *s, int i, const char *what)
{
	if (!s)
		return rt_err(NULL, FP8RT_INVALID_ARGUMENT, "%s: state is NULL", what);
	if (i < 0 || i >= s->prog->plan.nstate)
		return rt_err(s->prog->ctx, FP8RT_INVALID_ARGUMENT, "%s: slot %d out of range (%s has %d)", what, i,
			s->prog->name, s->prog->plan.nstate);
	return FP8RT_OK;
}

fp8rt_status
fp8rt_state_tensor(const fp8rt_state *s, int i, fp8rt_tensor *out)
{
	fp8rt_status st = state_slot(s, i, "fp8rt_state_tensor");
	if (st != FP8RT_OK)
		return st;
	if (!out)
		return rt_err(s->prog->ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_state_tensor: out is NULL");
	const RtPort *slot = &s->prog->plan.state[i];
	*out = fp8rt_tensor_dense((void *)(uintptr_t)(s->base + (CUdeviceptr)slot->offset), slot->type.dtype,
		slot->type.rank, slot->type.dims);
	return FP8RT_OK;
}

fp8rt_status
fp8rt_state_mark_written(fp8rt_state *s, int i)
{
	fp8rt_status st = state_slot(s, i, "fp8rt_state_mark_written");
	if (st != FP8RT_OK)
		return st;
	fp8rt_context *ctx = s->prog->ctx;
	if (!ctx)
		return no_context(s->prog, "fp8rt_state_mark_written");
	if ((st = rt_claim(ctx, "fp8rt_state_mark_written")) != FP8RT_OK)
		return st;
	s->written[i] = 1;
	rt_unclaim(ctx);
	return FP8RT_OK;
}

/* ---- checking the caller's tensors ----------------------------------------- */

static fp8rt_status
check_tensor(fp8rt_program *p, const fp8rt_tensor *t, const RtPort *port, const char *kind, int i, const char *what)
{
	fp8rt_context *ctx = p->ctx;
	const RtType *want = &port->type;
	char a[200], b[200];
	if (t->dtype != want->dtype)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s %d '%s': dtype %s, the program wants %s", what, kind,
			i, port->name, rt_dtype_name(t->dtype), rt_dtype_name(want->dtype));
	if (t->rank != want->rank || memcmp(t->dims, want->dims, (size_t)want->rank * sizeof *want->dims) != 0) {
		dims_str(t->dims,
			t->rank < 0                        ? 0
				: t->rank > FP8RT_MAX_RANK ? FP8RT_MAX_RANK
							   : t->rank,
			",", a, sizeof a);
		dims_str(want->dims, want->rank, ",", b, sizeof b);
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s %d '%s': shape %s (rank %d), the program wants %s",
			what, kind, i, port->name, a, t->rank, b);
	}
	int all_zero = 1;
	for (int d = 0; d < t->rank; d++)
		all_zero &= t->strides[d] == 0;
	int64_t stride = 1;
	for (int d = t->rank - 1; d >= 0 && !all_zero; d--) {
		if (t->dims[d] != 1 && t->strides[d] != stride)
			return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
				"%s: %s %d '%s': stride[%d]=%lld, dense row-major needs %lld "
				"(program tensors must be contiguous)",
				what, kind, i, port->name, d, (long long)t->strides[d], (long long)stride);
		stride *= t->dims[d];
	}
	uintptr_t addr = (uintptr_t)t->data;
	if (!t->data && rt_type_numel(want) > 0)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s %d '%s': data is NULL", what, kind, i, port->name);
	if (addr % 16)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"%s: %s %d '%s': data %p is not 16-byte aligned (program tensors must be)", what, kind, i,
			port->name, t->data);
	return FP8RT_OK;
}

/* The state slots fn reads must have been written into s. */
static fp8rt_status
check_state(fp8rt_program *p, const Fn *fn, const fp8rt_state *s, const char *what)
{
	const RtPlan *pl = &p->plan;
	if (s->prog != p)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT, "%s: the state belongs to %s, not to %s", what,
			s->prog->name, p->name);
	for (int i = 0; i < fn->f->nreads; i++) {
		const RtPort *slot = &pl->state[fn->f->reads[i]];
		if (!s->written[fn->f->reads[i]])
			return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT,
				"%s: %s reads state slot %d '%s', which %s writes and no run of %s "
				"has written into this state yet: run %s with it first",
				what, fn->f->name, fn->f->reads[i], slot->name, pl->func[slot->from].name,
				pl->func[slot->from].name, pl->func[slot->from].name);
	}
	return FP8RT_OK;
}

/* whether output i, at a, may be given the memory of input j (at b) or of
 * output k (at b): exactly that memory, of an input it copies or updates
 * with inplace=1, or of an input that both outputs copy */
static int
may_take_input(const Fn *fn, int i, int j, uintptr_t a, uintptr_t b)
{
	return a == b && (fn->src[i] == j || fn->upd[i] == j);
}

static int
may_take_output(const Fn *fn, const fp8rt_tensor *in, int i, int k, uintptr_t a, uintptr_t b)
{
	return a == b && fn->src[i] >= 0 && fn->src[i] == fn->src[k] && (uintptr_t)in[fn->src[i]].data == a;
}

static int
by_address(const void *x, const void *y)
{
	uintptr_t a = ((const Span *)x)->a, b = ((const Span *)y)->a;
	return (a > b) - (a < b);
}

/* whether no output overlaps memory that check_shared's rule forbids, in
 * O(n log n): the outputs sorted by address, each disjoint from the next or
 * exactly the memory of an input that both copy (so ends grow too); then
 * each input against the outputs that reach into it, found by binary
 * search. 0 may be wrong (the caller then looks pair by pair); 1 is not. */
static int
shared_clear(Fn *fn, const fp8rt_tensor *in, const fp8rt_tensor *out)
{
	const RtFunc *f = fn->f;
	Span *s = fn->span;
	int n = 0;
	for (int i = 0; i < f->nout; i++)
		if (fn->bytes[f->nin + i])
			s[n++] = (Span){ (uintptr_t)out[i].data, fn->bytes[f->nin + i], i };
	qsort(s, (size_t)n, sizeof *s, by_address);
	for (int k = 1; k < n; k++)
		if (s[k - 1].a + s[k - 1].n > s[k].a &&
			!may_take_output(fn, in, s[k].out, s[k - 1].out, s[k].a, s[k - 1].a))
			return 0;
	for (int j = 0; j < f->nin; j++) {
		uintptr_t b = (uintptr_t)in[j].data;
		int lo = 0, hi = n;
		if (!fn->bytes[j])
			continue;
		while (lo < hi) { /* the first output that ends after b */
			int mid = lo + (hi - lo) / 2;
			if (s[mid].a + s[mid].n > b)
				hi = mid;
			else
				lo = mid + 1;
		}
		for (int k = lo; k < n && s[k].a < b + fn->bytes[j]; k++)
			if (!may_take_input(fn, s[k].out, j, s[k].a, b))
				return 0;
	}
	return 1;
}

/* the first output that shares memory it may not, pair by pair, named */
static fp8rt_status
name_shared(fp8rt_program *p, const Fn *fn, const fp8rt_tensor *in, const fp8rt_tensor *out, const char *what)
{
	const RtFunc *f = fn->f;
	for (int i = 0; i < f->nout; i++) {
		uintptr_t a = (uintptr_t)out[i].data;
		size_t na = fn->bytes[f->nin + i];
		for (int j = 0; na && j < f->nin + i; j++) {
			int o = j >= f->nin;
			const RtPort *port = o ? &f->out[j - f->nin] : &f->in[j];
			uintptr_t b = (uintptr_t)(o ? out[j - f->nin].data : in[j].data);
			size_t nb = fn->bytes[j];
			if (!nb || a + na <= b || b + nb <= a ||
				(o ? may_take_output(fn, in, i, j - f->nin, a, b) : may_take_input(fn, i, j, a, b)))
				continue;
			return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT,
				"%s: output %d '%s' shares memory with %s %d '%s'%s", what, i, f->out[i].name,
				o ? "output" : "input", o ? j - f->nin : j, port->name,
				!o && f->out[i].updates == j
					? ": it holds that input's new values, but the program reads the input after "
					  "writing there (the plan's inplace=0); give it memory of its own and copy it back"
					: ": outputs need memory of their own (fp8rt_function_output_updates and "
					  "fp8rt_function_output_source name the input whose memory one may take)");
		}
	}
	return FP8RT_OK;
}

/* No output shares memory with an input or another output, but one given
 * exactly the memory of an input it copies (nothing is written there) or
 * updates in place where the plan allows it (docs/plan.md, "output"); two
 * copies of one input may both be given it. Checked again only when the
 * pointers change; pair by pair only when shared_clear finds something,
 * to name it. */
static fp8rt_status
check_shared(fp8rt_program *p, Fn *fn, const fp8rt_tensor *in, const fp8rt_tensor *out, const char *what)
{
	size_t n = (size_t)(fn->f->nin + fn->f->nout) + 1;
	fp8rt_status st;
	if (!memcmp(fn->ptrs, fn->checked, n * sizeof *fn->ptrs))
		return FP8RT_OK;
	if (!shared_clear(fn, in, out) && (st = name_shared(p, fn, in, out, what)))
		return st;
	memcpy(fn->checked, fn->ptrs, n * sizeof *fn->ptrs);
	return FP8RT_OK;
}

static fp8rt_status
check_io(fp8rt_program *p, Fn *fn, const fp8rt_state *s, const fp8rt_tensor *in, int nin, const fp8rt_tensor *out,
	int nout, const char *what)
{
	const RtFunc *f = fn->f;
	fp8rt_status st;
	if (p->running) /* its extern called it: this run would overwrite the pointers and arguments of that one */
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT,
			"%s: %s is running on this thread already (an extern of it called it): a program's runs do not "
			"nest",
			what, p->name);
	if (nin != f->nin || nout != f->nout)
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT,
			"%s: %d inputs and %d outputs given; %s%s%s has %d and %d", what, nin, nout, p->name,
			p->plan.nfunc > 1 ? " function " : "", p->plan.nfunc > 1 ? f->name : "", f->nin, f->nout);
	if ((nin && !in) || (nout && !out))
		return rt_err(p->ctx, FP8RT_INVALID_ARGUMENT, "%s: the %s array is NULL", what,
			!in && nin ? "inputs" : "outputs");
	for (int i = 0; i < nin; i++)
		if ((st = check_tensor(p, &in[i], &f->in[i], "input", i, what)))
			return st;
	for (int i = 0; i < nout; i++)
		if ((st = check_tensor(p, &out[i], &f->out[i], "output", i, what)))
			return st;
	if (s && (st = check_state(p, fn, s, what)))
		return st;
	for (int i = 0; i < nin; i++)
		fn->ptrs[i] = (CUdeviceptr)(uintptr_t)in[i].data;
	for (int i = 0; i < nout; i++)
		fn->ptrs[nin + i] = (CUdeviceptr)(uintptr_t)out[i].data;
	fn->ptrs[nin + nout] = s ? s->base : 0;
	return check_shared(p, fn, in, out, what);
}

/* ---- enqueueing a function ---------------------------------------------------- */

static CUdeviceptr
ref_ptr(const fp8rt_program *p, const Fn *fn, RtRef r)
{
	const RtFunc *f = fn->f;
	switch (r.kind) {
	case REF_IN:    return fn->ptrs[r.index];
	case REF_OUT:   return fn->ptrs[f->nin + r.index];
	case REF_BUF:   return fn->ws + (CUdeviceptr)f->buf[r.index].offset;
	case REF_STATE: return fn->ptrs[f->nin + f->nout] + (CUdeviceptr)p->plan.state[r.index].offset;
	}
	return 0;
}

/* The leading dimensions of row-major operands, as the plan's gemm has them. */
static RtGemmCall
gemm_call(const fp8rt_program *p, const Fn *fn, const RtGemm *g)
{
	RtGemmCall c = {
		.m = g->m,
		.n = g->n,
		.k = g->k,
		.batch = g->batch,
		.lda = g->trans_a ? g->m : g->k,
		.ldb = g->trans_b ? g->k : g->n,
		.ldd = g->n,
		.stride_a = g->stride_a,
		.stride_b = g->stride_b,
		.stride_d = g->stride_d,
		.trans_a = g->trans_a,
		.trans_b = g->trans_b,
		.epilogue = g->epilogue,
		.scaled = g->scaled,
		.at = g->atype,
		.bt = g->btype,
		.dt = g->dtype,
		.bias_dt = g->bias_dtype,
		.fast_accum = g->fast_accum,
		.a = ref_ptr(p, fn, g->a),
		.b = ref_ptr(p, fn, g->b),
		.d = ref_ptr(p, fn, g->d),
		.bias = g->has_bias ? ref_ptr(p, fn, g->bias) : 0,
		.scale_a = g->scaled ? ref_ptr(p, fn, g->scale_a) : 0,
		.scale_b = g->scaled ? ref_ptr(p, fn, g->scale_b) : 0,
		.scale_mode = g->scale_mode,
		.aux = g->epilogue == RT_EPI_GELU_AUX ? ref_ptr(p, fn, g->aux) : 0,
	};
	return c;
}

static fp8rt_status
enqueue_launch(fp8rt_program *p, const Fn *fn, const RtStep *s, const Launch *l, CUstream stream)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	const RtLaunch *pl = &s->u.launch;
	for (int i = 0; i < pl->nargs; i++)
		p->argv[i] = ref_ptr(p, fn, pl->args[i]);
	if (pl->coop)
		CHECK(drv.cuLaunchCooperativeKernel(
			l->fn, l->grid, 1, 1, (unsigned)pl->block, 1, 1, (unsigned)pl->smem, stream, p->argp));
	else
		CHECK(drv.cuLaunchKernel(
			l->fn, l->grid, 1, 1, (unsigned)pl->block, 1, 1, (unsigned)pl->smem, stream, p->argp, NULL));
fail:
	if (st != FP8RT_OK)
		rt_err(ctx, st, "%s:%d: launch %s: %s", p->name, s->line, pl->kernel, fp8rt_last_error(ctx));
	return st;
}

/* a call step: the extern enqueues its work on the stream */
static fp8rt_status
enqueue_call(fp8rt_program *p, const Fn *fn, const RtStep *s, const Call *cl, CUstream stream)
{
	const RtCall *c = &s->u.call;
	char msg[1024] = "";
	for (int j = 0; j < c->nins; j++)
		cl->ins[j].data = (void *)(uintptr_t)ref_ptr(p, fn, c->ins[j]);
	for (int j = 0; j < c->nouts; j++)
		cl->outs[j].data = (void *)(uintptr_t)ref_ptr(p, fn, c->outs[j]);
	fp8rt_extern_call call = {
		.name = c->name,
		.args = c->args,
		.nargs = c->nargs,
		.inputs = cl->ins,
		.ninputs = c->nins,
		.outputs = cl->outs,
		.noutputs = c->nouts,
		.stream = stream,
		.ctx = p->ctx,
	};
	p->running = 1; /* the extern may call libfp8rt back, but not run p (check_io) */
	fp8rt_status st = cl->ext.fn(cl->ext.user, &call, msg, sizeof msg);
	p->running = 0;
	if (st == FP8RT_OK)
		return FP8RT_OK;
	if ((unsigned)st > (unsigned)FP8RT_NCCL_ERROR)
		st = FP8RT_INVALID_ARGUMENT; /* not a status: the extern's fault, said so */
	return rt_err(p->ctx, st, "%s:%d: call %s: the extern failed (%s): %s", p->name, s->line, c->name,
		fp8rt_status_name(st), msg[0] ? msg : "it gave no message");
}

static fp8rt_status
enqueue_step(fp8rt_program *p, const Fn *fn, int i, CUstream stream)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	const RtStep *s = &fn->f->step[i];
	RtGemmCall g;
	switch (s->kind) {
	case STEP_LAUNCH: return enqueue_launch(p, fn, s, &fn->launch[i], stream);
	case STEP_GEMM:
		g = gemm_call(p, fn, &s->u.gemm);
		if (g.m == 0 || g.n == 0)
			return FP8RT_OK;
		if ((st = rt_gemm_enqueue(ctx, &g, stream)) != FP8RT_OK)
			rt_err(ctx, st, "%s:%d: gemm: %s", p->name, s->line, fp8rt_last_error(ctx));
		return st;
	case STEP_COPY: {
		CUdeviceptr dst = ref_ptr(p, fn, s->u.copy.dst), src = ref_ptr(p, fn, s->u.copy.src);
		if (s->u.copy.bytes && dst != src) /* an output given the input's memory: nothing to copy */
			CHECK(drv.cuMemcpyDtoDAsync(dst, src, (size_t)s->u.copy.bytes, stream));
		return FP8RT_OK;
	}
	case STEP_CALL:       return enqueue_call(p, fn, s, &fn->calls[i], stream);
	case STEP_COLLECTIVE: {
		const RtCollective *c = &s->u.coll;
		if ((st = rt_collective(ctx, c, ref_ptr(p, fn, c->in), ref_ptr(p, fn, c->out), fn->ev[2 * c->id],
			     fn->ev[2 * c->id + 1], stream)) != FP8RT_OK)
			rt_err(ctx, st, "%s:%d: collective: %s", p->name, s->line, fp8rt_last_error(ctx));
		return st;
	}
	case STEP_WAIT: CHECK(drv.cuStreamWaitEvent(stream, fn->ev[2 * s->u.wait + 1], 0)); return FP8RT_OK;
	}
fail:
	return rt_err(ctx, st, "%s:%d: %s: %s", p->name, s->line, s->kind == STEP_WAIT ? "wait" : "copy",
		fp8rt_last_error(ctx));
}

static fp8rt_status
enqueue_func(fp8rt_program *p, const Fn *fn, CUstream stream)
{
	for (int i = 0; i < fn->f->nstep; i++) {
		fp8rt_status st = enqueue_step(p, fn, i, stream);
		if (st != FP8RT_OK)
			return st;
	}
	return FP8RT_OK;
}

/* cuBLASLt algorithms for this run's pointers, chosen before a capture. */
static fp8rt_status
prepare_gemms(fp8rt_program *p, const Fn *fn)
{
	for (int i = 0; i < fn->f->nstep; i++) {
		const RtStep *s = &fn->f->step[i];
		if (s->kind != STEP_GEMM || s->u.gemm.m == 0 || s->u.gemm.n == 0)
			continue;
		RtGemmCall g = gemm_call(p, fn, &s->u.gemm);
		fp8rt_status st = rt_gemm_prepare(p->ctx, &g);
		if (st != FP8RT_OK)
			return rt_err(p->ctx, st, "%s:%d: gemm: %s", p->name, s->line, fp8rt_last_error(p->ctx));
	}
	return FP8RT_OK;
}

/* ---- graphs ------------------------------------------------------------------ */

static size_t
nptrs(const Fn *fn)
{
	return (size_t)(fn->f->nin + fn->f->nout) + 1;
}

static Graph *
find_graph(Fn *fn)
{
	for (int i = 0; i < RT_GRAPHS; i++)
		if (fn->graph[i].exec && memcmp(fn->graph[i].ptrs, fn->ptrs, nptrs(fn) * sizeof *fn->ptrs) == 0)
			return &fn->graph[i];
	return NULL;
}

/* Capture the function for the current pointers into the least recently used slot. */
static fp8rt_status
capture(fp8rt_program *p, Fn *fn, Graph **out)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	CUgraph graph = NULL;
	Graph *g = &fn->graph[0];
	for (int i = 1; i < RT_GRAPHS; i++)
		if (fn->graph[i].used < g->used)
			g = &fn->graph[i];
	if ((st = graph_drop(ctx, g, st)) != FP8RT_OK || (st = prepare_gemms(p, fn)) != FP8RT_OK)
		goto fail;
	CHECK(drv.cuStreamBeginCapture(ctx->capture, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	st = enqueue_func(p, fn, ctx->capture);
	RELEASE(drv.cuStreamEndCapture(ctx->capture, &graph)); /* ends the capture, failed or not */
	if (st != FP8RT_OK)
		goto fail;
	CHECK(drv.cuGraphInstantiate(&g->exec, graph, 0));
	memcpy(g->ptrs, fn->ptrs, nptrs(fn) * sizeof *fn->ptrs);
	*out = g;
fail:
	if (graph)
		RELEASE(drv.cuGraphDestroy(graph));
	if (st != FP8RT_OK) {
		if (g->exec)
			RELEASE(drv.cuGraphExecDestroy(g->exec));
		g->exec = NULL;
		rt_err(ctx, st,
			"%s: capturing the plan into a CUDA graph failed (fp8rt_program_set_graphs(prog, 0) "
			"runs without graphs): %s",
			p->name, fp8rt_last_error(ctx));
	}
	return st;
}

static fp8rt_status
run_graph(fp8rt_program *p, Fn *fn, CUstream stream)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	Graph *g = find_graph(fn);
	if (!g && (st = capture(p, fn, &g)) != FP8RT_OK)
		return st;
	g->used = ++fn->clock;
	CHECK(drv.cuGraphLaunch(g->exec, stream));
fail:
	return st;
}

/* Run fn with the pointers check_io set; the state's slots that fn writes
 * count as written once it is enqueued. */
static fp8rt_status
run(fp8rt_program *p, Fn *fn, fp8rt_state *s, CUstream stream)
{
	fp8rt_context *ctx = p->ctx;
	fp8rt_status st = FP8RT_OK;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (p->graphs || fn->nograph)
		CHECK(drv.cuStreamIsCapturing(stream, &cs));
	if (fn->nograph && cs != CU_STREAM_CAPTURE_STATUS_NONE)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"%s: function %s calls an extern registered with FP8RT_EXTERN_NO_GRAPH, and the stream is "
			"being captured",
			p->name, fn->f->name);
	st = p->graphs && !fn->nograph && cs == CU_STREAM_CAPTURE_STATUS_NONE ? run_graph(p, fn, stream)
									      : enqueue_func(p, fn, stream);
	for (int i = 0; st == FP8RT_OK && s && i < p->plan.nstate; i++)
		if (p->plan.state[i].from == fn->index)
			s->written[i] = 1;
fail:
	return st;
}

/* The loaded function f and the state to run it with, for entry `what`. */
static fp8rt_status
get_run(fp8rt_program *p, int f, fp8rt_state **s, const char *what, Fn **fn)
{
	const RtFunc *pf = NULL;
	fp8rt_status st = get_func(p, f, what, &pf);
	if (st != FP8RT_OK)
		return st;
	if (!p->ctx)
		return no_context(p, what);
	if (!*s)
		*s = p->dflt;
	*fn = &p->fn[f];
	return FP8RT_OK;
}

static fp8rt_status
run_entry(fp8rt_program *p, int f, fp8rt_state *s, const fp8rt_tensor *in, int nin, const fp8rt_tensor *out, int nout,
	void *stream, const char *what)
{
	Fn *fn = NULL;
	fp8rt_status st = get_run(p, f, &s, what, &fn);
	if (st != FP8RT_OK || (st = rt_enter(p->ctx, what)) != FP8RT_OK)
		return st;
	if ((st = check_io(p, fn, s, in, nin, out, nout, what)) == FP8RT_OK)
		st = run(p, fn, s, (CUstream)stream);
	return rt_leave(p->ctx, st);
}

fp8rt_status
fp8rt_run_function(fp8rt_program *p, int f, fp8rt_state *s, const fp8rt_tensor *in, int nin, const fp8rt_tensor *out,
	int nout, void *stream)
{
	return run_entry(p, f, s, in, nin, out, nout, stream, "fp8rt_run_function");
}

fp8rt_status
fp8rt_run(fp8rt_program *p, const fp8rt_tensor *in, int nin, const fp8rt_tensor *out, int nout, void *stream)
{
	return run_entry(p, 0, NULL, in, nin, out, nout, stream, "fp8rt_run");
}

/* ---- prepared runs ------------------------------------------------------------ */

static fp8rt_tensor *
signature_tensors(const RtPort *ports, int n)
{
	fp8rt_tensor *t = calloc((size_t)n + 1, sizeof *t);
	for (int i = 0; t && i < n; i++)
		t[i] = fp8rt_tensor_dense(NULL, ports[i].type.dtype, ports[i].type.rank, ports[i].type.dims);
	return t;
}

fp8rt_status
fp8rt_prepare(fp8rt_program *p, int f, fp8rt_prepared **out)
{
	fp8rt_state *s = NULL;
	Fn *fn = NULL;
	if (!out)
		return rt_err(p ? p->ctx : NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_prepare: out is NULL");
	*out = NULL;
	fp8rt_status st = get_run(p, f, &s, "fp8rt_prepare", &fn);
	if (st != FP8RT_OK)
		return st;
	if ((st = rt_claim(p->ctx, "fp8rt_prepare")) != FP8RT_OK)
		return st;
	const RtFunc *pf = fn->f;
	fp8rt_prepared *r = calloc(1, sizeof *r);
	if (!r || !(r->in = signature_tensors(pf->in, pf->nin)) || !(r->out = signature_tensors(pf->out, pf->nout)) ||
		!(r->slots = calloc((size_t)(1 + pf->nin + pf->nout), sizeof *r->slots))) {
		if (r)
			free(r->in), free(r->out);
		free(r);
		rt_unclaim(p->ctx);
		return rt_err(p->ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", p->name);
	}
	r->prog = p, r->f = f;
	r->next = p->prepared;
	if (p->prepared)
		p->prepared->prev = r;
	p->prepared = r;
	*out = r;
	rt_unclaim(p->ctx);
	return FP8RT_OK;
}

void **
fp8rt_prepared_slots(fp8rt_prepared *r)
{
	return r ? r->slots : NULL;
}

fp8rt_status
fp8rt_prepared_run(fp8rt_prepared *r)
{
	if (!r)
		return rt_err(NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_prepared_run: the prepared run is NULL");
	const RtFunc *f = r->prog->fn[r->f].f;
	for (int i = 0; i < f->nin; i++)
		r->in[i].data = r->slots[1 + i];
	for (int i = 0; i < f->nout; i++)
		r->out[i].data = r->slots[1 + f->nin + i];
	return run_entry(r->prog, r->f, NULL, r->in, f->nin, r->out, f->nout, r->slots[0], "fp8rt_prepared_run");
}

fp8rt_status
fp8rt_prepared_destroy(fp8rt_prepared *r)
{
	if (!r)
		return FP8RT_OK;
	fp8rt_context *ctx = r->prog->ctx;
	fp8rt_status st = rt_enter_outer(ctx, "fp8rt_prepared_destroy");
	if (st == FP8RT_INVALID_ARGUMENT)
		return st; /* in use: nothing freed */
	prepared_free(r);  /* host memory: freed all the same */
	return st == FP8RT_OK ? rt_leave(ctx, st) : st;
}

/* ---- timing -------------------------------------------------------------------- */

static fp8rt_status
time_entry(fp8rt_program *p, int f, fp8rt_state *s, const fp8rt_tensor *in, int nin, const fp8rt_tensor *out, int nout,
	void *stream, int warmup, int iters, float *us, const char *what)
{
	Fn *fn = NULL;
	fp8rt_status st = get_run(p, f, &s, what, &fn);
	if (st != FP8RT_OK)
		return st;
	fp8rt_context *ctx = p->ctx;
	if (iters < 1 || warmup < 0 || !us)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s", what,
			!us ? "us is NULL" : "iters must be >= 1 and warmup >= 0");
	if ((st = rt_enter(ctx, what)) != FP8RT_OK)
		return st;
	CUevent *ev = NULL;
	CUstream cs = (CUstream)stream;
	if ((st = check_io(p, fn, s, in, nin, out, nout, what)) != FP8RT_OK)
		goto fail;
	if (!(ev = calloc(2 * (size_t)iters, sizeof *ev))) {
		st = rt_err(ctx, FP8RT_OUT_OF_MEMORY, "%s: out of host memory", what);
		goto fail;
	}
	for (int i = 0; i < 2 * iters; i++)
		CHECK(drv.cuEventCreate(&ev[i], CU_EVENT_DEFAULT));
	for (int i = 0; i < warmup; i++)
		if ((st = run(p, fn, s, cs)) != FP8RT_OK)
			goto fail;
	CHECK(drv.cuStreamSynchronize(cs));
	for (int i = 0; i < iters; i++) {
		CHECK(drv.cuEventRecord(ev[2 * i], cs));
		if ((st = run(p, fn, s, cs)) != FP8RT_OK)
			goto fail;
		CHECK(drv.cuEventRecord(ev[2 * i + 1], cs));
	}
	CHECK(drv.cuEventSynchronize(ev[2 * iters - 1]));
	for (int i = 0; i < iters; i++) {
		float ms = 0;
		CHECK(drv.cuEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
		us[i] = ms * 1000.0f;
	}
fail:
	for (int i = 0; ev && i < 2 * iters; i++)
		if (ev[i])
			RELEASE(drv.cuEventDestroy(ev[i]));
	free(ev);
	return rt_leave(ctx, st);
}

fp8rt_status
fp8rt_time_function(fp8rt_program *p, int f, fp8rt_state *s, const fp8rt_tensor *in, int nin, const fp8rt_tensor *out,
	int nout, void *stream, int warmup, int iters, float *us)
{
	return time_entry(p, f, s, in, nin, out, nout, stream, warmup, iters, us, "fp8rt_time_function");
}

fp8rt_status
fp8rt_time_runs(fp8rt_program *p, const fp8rt_tensor *in, int nin, const fp8rt_tensor *out, int nout, void *stream,
	int warmup, int iters, float *us)
{
	return time_entry(p, 0, NULL, in, nin, out, nout, stream, warmup, iters, us, "fp8rt_time_runs");
}
