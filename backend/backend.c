/* backend.c — the backend's entry: plan the memory, generate the kernels,
 * and write what was asked for — the plan, the LLVM IR, or the PTX file that
 * carries the plan at its top (docs/plan.md). */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "be.h"
#include "gemm_rules.h"

#define AS_NAME(id, name) name,
const char *const be_emit_names[] = { EMITS(AS_NAME) NULL };
#undef AS_NAME

const char *
be_llvm_version(void)
{
	static char buf[32];
	unsigned maj, min, pat;

	LLVMGetVersion(&maj, &min, &pat);
	snprintf(buf, sizeof buf, "%u.%u.%u", maj, min, pat);
	return buf;
}

bool
be_gemm_ok(Func *fn, const Instr *in, char *why, size_t n)
{
	const uint32_t *a = ir_args(fn, in);
	const int64_t *da, *db;
	int ra;

	if (!op_gemm((Op)in->op))
		return true;
	da = ir_dims(fn, a[0]);
	db = ir_dims(fn, a[1]);
	ra = fn->vals[a[0]].rank;
	if (in->op == OP_SCALED_MM && !fp8_gemm_dims_ok(da[1], db[1])) {
		snprintf(why, n, "scaled_mm with K=%lld and N=%lld: cuBLASLt's FP8 GEMMs need K and N multiples of %d",
			(long long)da[1], (long long)db[1], FP8_GEMM_MULTIPLE);
		return false;
	}
	if (in->op == OP_MATMUL && da[ra - (in->flags & IF_TRANS_A ? 2 : 1)] == 0) {
		snprintf(why, n,
			"matmul with K=0 (an empty sum): the GPU backend does not compile it "
			"(--interpret computes it)");
		return false;
	}
	return true;
}

/* the plan of every function, behind pre */
static void
print_plans(FILE *f, const Program *prog, Plan **plans, Launch **l, const char *gpu, const char *pre)
{
	be_print_plan_head(f, prog, l, gpu, pre);
	for (uint32_t i = 0; i < prog->nfns; i++)
		be_print_plan(f, prog->fns[i], plans[i], l[i], be_plan_version(prog, l), pre);
}

static bool
write_ptx(FILE *f, const Program *prog, Plan **plans, Launch **l, LLVMModuleRef mod, const BeOptions *o)
{
	char err[1024], *ptx = NULL;

	if (!be_compile(mod, o, &ptx, err, sizeof err)) {
		env_error("%s: %s", o->path, err);
		return false;
	}
	print_plans(f, prog, plans, l, o->gpu, "// ");
	fputs("// end-plan\n", f);
	fputs(ptx, f);
	free(ptx);
	return true;
}

/* In a program of several functions, kernels are named after their
 * function: forward_k0, backward_k0. */
static void
name_kernels(const Program *prog)
{
	for (uint32_t i = 0; prog->nfns > 1 && i < prog->nfns; i++)
		for (uint32_t k = 0; k < prog->fns[i]->nkernels; k++)
			prog->fns[i]->kernels[k].name =
				arena_printf(prog->arena, "%s_%s", prog->fns[i]->name, prog->fns[i]->kernels[k].name);
}

bool
be_emit(const Program *prog, Emit kind, const BeOptions *o, FILE *f)
{
	LLVMContextRef cx;
	LLVMModuleRef mod;
	Plan **plans;
	Launch **l;
	char *text, err[1024];
	bool ok = true;
	Seen seen = { 0 };

	name_kernels(prog);
	if (kind == EMIT_DOT) {
		be_print_dot(f, prog);
		return true;
	}
	plans = arena_alloc(prog->arena, (prog->nfns + 1) * sizeof *plans);
	l = arena_alloc(prog->arena, (prog->nfns + 1) * sizeof *l);
	if (o->phase)
		o->phase("memplan", NULL);
	for (uint32_t i = 0; i < prog->nfns; i++) {
		Func *fn = prog->fns[i];

		plans[i] = pass_memplan(fn);
		l[i] = arena_alloc(fn->arena, (fn->nkernels + 1) * sizeof *l[i]);
		if (o->print_memplan) {
			fprintf(stderr, "; plan after memplan of %s (kernels not yet generated)\n", fn->name);
			if (i == 0)
				be_print_plan_head(stderr, prog, NULL, o->gpu, "");
			be_print_plan(stderr, fn, plans[i], NULL, be_plan_version(prog, NULL), "");
		}
	}
	cx = LLVMContextCreate();
	mod = be_module(cx, prog->fns[0]->name);
	if (o->phase)
		o->phase("codegen", NULL);
	for (uint32_t i = 0; i < prog->nfns; i++)
		be_codegen(prog->fns[i], plans[i], mod, l[i], &seen, be_keep_bytes(o->gpu));
	be_seen_free(&seen);
	if (kind == EMIT_PLAN) {
		print_plans(f, prog, plans, l, o->gpu, "");
	} else if (kind == EMIT_LLVM) {
		if ((ok = be_optimize(mod, o, err, sizeof err))) {
			text = LLVMPrintModuleToString(mod);
			fputs(text, f);
			LLVMDisposeMessage(text);
		} else {
			env_error("%s: %s", o->path, err);
		}
	} else {
		ok = write_ptx(f, prog, plans, l, mod, o);
	}
	LLVMDisposeModule(mod);
	LLVMContextDispose(cx);
	return ok;
}
