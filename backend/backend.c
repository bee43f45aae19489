/* backend.c — the backend's entry: plan the memory, generate the kernels,
 * and write what was asked for — the plan, the LLVM IR, or the PTX file that
 * carries the plan at its top (docs/plan.md). */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "be.h"

bool
be_target_ok(const char *gpu)
{
	return !strcmp(gpu, "sm_89") || !strcmp(gpu, "sm_90") || !strcmp(gpu, "sm_90a") ||
		!strcmp(gpu, "sm_100");
}

const char *
be_llvm_version(void)
{
	static char buf[32];
	unsigned maj, min, pat;

	LLVMGetVersion(&maj, &min, &pat);
	snprintf(buf, sizeof buf, "%u.%u.%u", maj, min, pat);
	return buf;
}

static bool
write_ptx(FILE *f, Func *fn, Plan *plan, const Launch *l, LLVMModuleRef mod, const BeOptions *o)
{
	char err[1024], *ptx = NULL;

	if (!be_compile(mod, o, &ptx, err, sizeof err)) {
		fprintf(stderr, "fp8cc: error: %s: %s\n", o->path, err);
		return false;
	}
	be_print_plan(f, fn, plan, l, o->gpu, "// ");
	fputs("// end-plan\n", f);
	fputs(ptx, f);
	free(ptx);
	return true;
}

bool
be_emit(Func *fn, const char *kind, const BeOptions *o, FILE *f)
{
	LLVMContextRef cx;
	LLVMModuleRef mod;
	Plan *plan;
	Launch *l;
	char *text, err[1024];
	bool ok = true;

	if (!strcmp(kind, "dot")) {
		be_print_dot(f, fn);
		return true;
	}
	if (o->phase)
		o->phase("memplan", NULL);
	plan = pass_memplan(fn);
	if (o->print_memplan) {
		fputs("; plan after memplan (kernels not yet generated)\n", stderr);
		be_print_plan(stderr, fn, plan, NULL, o->gpu, "");
	}
	l = arena_alloc(fn->arena, (fn->nkernels + 1) * sizeof *l);
	cx = LLVMContextCreate();
	mod = be_module(cx, fn->name);
	if (o->phase)
		o->phase("codegen", NULL);
	be_codegen(fn, plan, mod, l);
	if (!strcmp(kind, "plan")) {
		be_print_plan(f, fn, plan, l, o->gpu, "");
	} else if (!strcmp(kind, "llvm")) {
		if ((ok = be_optimize(mod, o, err, sizeof err))) {
			text = LLVMPrintModuleToString(mod);
			fputs(text, f);
			LLVMDisposeMessage(text);
		} else {
			fprintf(stderr, "fp8cc: error: %s: %s\n", o->path, err);
		}
	} else {
		ok = write_ptx(f, fn, plan, l, mod, o);
	}
	LLVMDisposeModule(mod);
	LLVMContextDispose(cx);
	return ok;
}
