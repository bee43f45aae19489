/* fuzz_pipeline.c — the whole compiler after a successful read (fe_read:
 * a trace or IR text). At -O0, -O1 and -O2: the passes with the verifier
 * between them, the result lowered (pass_lowered), the memory plan, kernel
 * code generation to LLVM IR that LLVM verifies, and the plan text read
 * back by libfp8rt's parser with the program's signature. Small programs
 * are interpreted before the passes and after each level, on normal and on
 * special-value inputs, and every output must agree bit for bit. Then a
 * --passes list drawn from the input: it must run, and what it leaves
 * lowered goes through the backend too. */
#include <string.h>

#include <llvm-c/Analysis.h>

#include "be.h"
#include "fe.h"
#include "fuzz.h"

#define MAXELEMS (1 << 16) /* interpret programs whose values hold this many elements */
#define MAXMACS  (1 << 18) /* and whose GEMMs about this many multiply-adds */

typedef struct {
	uint32_t n;
	Tensor **t;
	bool ok; /* false: the interpreter refused (a gather index out of range, ...) */
	char err[256];
} Outs;

static bool
small(Func *fn)
{
	int64_t elems = 0;

	for (uint32_t v = 0; v < fn->nvals; v++) {
		int64_t n = ir_numel(fn, v);

		if (n > MAXELEMS || (elems += n) > MAXELEMS)
			return false;
	}
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];
		uint32_t a = in->nargs ? ir_args(fn, in)[0] : 0;
		int64_t k = 1;

		if (!op_gemm((Op)in->op))
			continue;
		for (int d = 0; d < fn->vals[a].rank; d++) /* at least K */
			k = ir_dims(fn, a)[d] > k ? ir_dims(fn, a)[d] : k;
		if (ir_numel(fn, in->res) * k > MAXMACS)
			return false;
	}
	return true;
}

/* what fp8cc itself rejects before the backend (be_gemm_ok) */
static bool
gemms_ok(Func *fn)
{
	char why[256];

	for (uint32_t i = 0; i < fn->nins; i++)
		if (!be_gemm_ok(fn, &fn->ins[i], why, sizeof why))
			return false;
	return true;
}

/* the ranks the interpreter runs fn over: its first collective's that
 * names more than one (at most 4), else 1 */
static int
ranks_of(Func *fn)
{
	for (uint32_t i = 0; i < fn->nins; i++) {
		int64_t r = op_collective((Op)fn->ins[i].op) ? ir_ranks(fn, &fn->ins[i]) : 0;

		if (r > 1)
			return r <= 4 ? (int)r : 1;
	}
	return 1;
}

/* fn over its ranks (each rank's inputs drawn apart) */
static Outs
interpret(Func *fn, uint64_t seed, bool special)
{
	int nr = ranks_of(fn);
	uint32_t nin = (uint32_t)nr * fn->nparams;
	Tensor **ins = calloc(nin + 1, sizeof *ins);
	Outs o = { (uint32_t)nr * fn->nrets, calloc((size_t)nr * fn->nrets + 1, sizeof *o.t), true, "" };

	if (!ins || !o.t)
		abort();
	for (uint32_t k = 0; k < nin; k++) {
		uint32_t v = fn->params[k % fn->nparams];
		uint64_t s = seed + k % fn->nparams + 7919 * (k / fn->nparams);

		if (!(ins[k] = tensor_new(NULL, (DType)fn->vals[v].dtype, fn->vals[v].rank, ir_dims(fn, v))))
			abort();
		if (special)
			tensor_special(ins[k], s);
		else
			tensor_randn(ins[k], s);
	}
	if (!ir_interpret_ranks(fn, nr, ins, o.t, o.err, sizeof o.err)) { /* data it cannot run on */
		o.ok = false;
		for (uint32_t i = 0; i < o.n; i++)
			tensor_free(o.t[i]), o.t[i] = NULL;
	}
	for (uint32_t k = 0; k < nin; k++)
		tensor_free(ins[k]);
	free(ins);
	return o;
}

static void
outs_free(Outs *o)
{
	for (uint32_t i = 0; i < o->n; i++)
		tensor_free(o->t[i]);
	free(o->t);
}

static void
same_outs(const Outs *a, const Outs *b, int opt)
{
	if (!a->ok)
		return;
	if (!b->ok)
		FUZZ_FAIL("-O%d: the interpreter refuses what it ran before the passes: %s", opt, b->err);
	if (a->n != b->n)
		FUZZ_FAIL("-O%d: %u outputs, %u before the passes", opt, b->n, a->n);
	for (uint32_t i = 0; i < a->n; i++) {
		const Tensor *x = a->t[i], *y = b->t[i];

		if (strcmp(x->name, y->name))
			FUZZ_FAIL("-O%d: output %u is '%s', '%s' before the passes", opt, i, y->name, x->name);
		if (x->dtype != y->dtype || x->rank != y->rank || memcmp(x->dims, y->dims, sizeof x->dims) ||
			memcmp(x->data, y->data, tensor_bytes(x)))
			FUZZ_FAIL("-O%d: output %u '%s' differs from the interpreter's before the passes", opt, i,
				x->name);
	}
}

/* fuzz_planread.c: libfp8rt's parser on the plan text (plan.h and
 * passes.h cannot meet in one file) */
void fuzz_read_plan(const char *text, size_t len, int version, uint32_t nin, const char *const *outs, uint32_t nout);

/* the plan as text, read back by libfp8rt with the program's signature */
static void
check_plan(Func *fn, Plan *plan, Launch *l)
{
	char *text = NULL, nb[16];
	const char **outs = arena_alloc(fn->arena, (fn->nrets + 1) * sizeof *outs);
	size_t len;
	FILE *f = open_memstream(&text, &len);
	Program prog = { .arena = fn->arena, .fns = &fn, .nfns = 1 };

	if (!f)
		abort();
	be_print_plan_head(f, &prog, &l, "sm_90", "");
	be_print_plan(f, fn, plan, l, be_plan_version(&prog, &l), "");
	if (fclose(f))
		abort();
	for (uint32_t i = 0; i < fn->nrets; i++)
		outs[i] = arena_printf(fn->arena, "%s", ir_retname(fn, i, nb));
	fuzz_read_plan(text, len, be_plan_version(&prog, &l), fn->nparams, outs, fn->nrets);
	free(text);
}

/* no kernel declares more static shared memory than PTX allows (ptxas
 * would refuse it): its arrays are named for it, "KERNEL.smem" and the like */
static void
check_shared(LLVMModuleRef mod)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		size_t n, m;
		const char *fname = LLVMGetValueName2(f, &n);
		int64_t bytes = 0;

		for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
			const char *gname = LLVMGetValueName2(g, &m);
			LLVMTypeRef t = LLVMGlobalGetValueType(g);

			if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != 3 || m <= n || memcmp(gname, fname, n) ||
				gname[n] != '.' || strchr(gname + n + 1, '.') ||
				LLVMGetTypeKind(t) != LLVMArrayTypeKind)
				continue;
			bytes += (int64_t)LLVMGetArrayLength2(t) * (LLVMGetIntTypeWidth(LLVMGetElementType(t)) / 8);
		}
		if (bytes > BE_STATIC_SMEM)
			FUZZ_FAIL("kernel %.*s declares %lld bytes of shared memory, more than %d", (int)n, fname,
				(long long)bytes, BE_STATIC_SMEM);
	}
}

/* memory plan, kernels to LLVM IR that verifies, the plan read back */
static void
backend(Func *fn)
{
	Plan *plan = pass_memplan(fn);
	Launch *l = arena_alloc(fn->arena, (fn->nkernels + 1) * sizeof *l);
	LLVMContextRef cx = LLVMContextCreate();
	LLVMModuleRef mod = be_module(cx, fn->name);
	char *msg = NULL;
	Seen seen = { 0 };

	be_codegen(fn, plan, mod, l, &seen, be_keep_bytes("sm_90"));
	be_seen_free(&seen);
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
		FUZZ_FAIL("kernel code generation made invalid LLVM IR: %.2000s", msg);
	LLVMDisposeMessage(msg);
	check_shared(mod);
	if (gemms_ok(fn))
		check_plan(fn, plan, l);
	LLVMDisposeModule(mod);
	LLVMContextDispose(cx);
}

/* a --passes list drawn from h: any list runs with the verifier between
 * the passes and no internal error; what it leaves lowered goes on to the
 * backend */
static void
any_passes(const Source *src, Arena *a, uint64_t h)
{
	char list[120] = "", err[512];
	int n = 1 + (int)(h % 4), npasses = 0;
	PassOptions po = { .opt = (int)(h / 4 % 3), .verify = true, .only = list };
	Func *f;

	while (pass_names[npasses])
		npasses++;
	for (int i = 0; i < n; i++, h /= (uint64_t)npasses) {
		strcat(list, i ? "," : "");
		strcat(list, pass_names[h / 16 % (uint64_t)npasses]);
	}
	if ((f = fe_read(a, src)) && pass_lowered(f = pass_pipeline(f, &po), err, sizeof err))
		backend(f);
}

static uint64_t
hash(const uint8_t *data, size_t size)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ull;
	return h;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Source src = { .path = "fuzz.in", .text = fuzz_text(data, size), .len = size };
	Arena *a = arena_new();
	uint64_t seed = hash(data, size) % 1000;
	Func *fn;
	Outs ref[2];
	bool interp;
	char err[512];

	fe_diag_out = fuzz_devnull();
	if (!(fn = fe_read(a, &src)))
		goto done;
	if ((interp = small(fn)))
		for (int s = 0; s < 2; s++)
			ref[s] = interpret(fn, seed, s);
	for (int opt = 0; opt <= 2; opt++) {
		PassOptions po = { .opt = opt, .verify = true };
		Func *f = pass_pipeline(fe_read(a, &src), &po);

		if (!pass_lowered(f, err, sizeof err))
			FUZZ_FAIL("-O%d leaves the program unlowered: %s", opt, err);
		for (int s = 0; interp && s < 2; s++) {
			Outs o = interpret(f, seed, s);

			same_outs(&ref[s], &o, opt);
			outs_free(&o);
		}
		backend(f);
	}
	for (int s = 0; interp && s < 2; s++)
		outs_free(&ref[s]);
	/* --fuse-epilogues: other roundings, so no comparison of bits; the
	 * verifier between the passes, a lowered result and valid kernels */
	PassOptions epi = { .opt = 2, .verify = true, .epilogues = true };
	Func *f = pass_pipeline(fe_read(a, &src), &epi);
	if (!pass_lowered(f, err, sizeof err))
		FUZZ_FAIL("--fuse-epilogues leaves the program unlowered: %s", err);
	backend(f);
	any_passes(&src, a, hash(data, size) / 1000);
done:
	arena_free(a);
	fe_unload(&src);
	return 0;
}
