/* target.c — the NVPTX target: module set-up, libdevice (found when the
 * compiler runs: --cuda-path, $CUDA_HOME, /usr/local/cuda), LLVM's O3
 * pipeline and the PTX writer. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "be.h"

#define TRIPLE "nvptx64-nvidia-cuda"

/* the GPUs fp8cc compiles for, the PTX features each needs beyond
 * NVPTX's default for it, and an SM's shared memory and threads */
static const struct {
	const char *gpu, *features;
	int64_t smem, threads;
} targets[] = {
	{ "sm_89", "+ptx81", 100 * 1024, 1536 }, /* PTX 8.1 for its fp8 cvt */
	{ "sm_90", "", 228 * 1024, 2048 },
	{ "sm_90a", "+ptx80", 228 * 1024, 2048 },
	{ "sm_100", "+ptx86", 228 * 1024, 2048 },
};

static int
target_index(const char *gpu)
{
	for (size_t i = 0; i < NELEM(targets); i++)
		if (!strcmp(gpu, targets[i].gpu))
			return (int)i;
	return -1;
}

bool
be_target_ok(const char *gpu)
{
	return target_index(gpu) >= 0;
}

int64_t
be_keep_bytes(const char *gpu)
{
	int i = target_index(gpu);
	int64_t share;

	if (i < 0)
		i = target_index("sm_90");
	/* a block's share of an SM full of blocks, less the 1 KB the driver
	 * takes of each and the block reductions' slots */
	share = targets[i].smem / (targets[i].threads / BE_BLOCK) - 1024 - BE_REDUCE_SMEM;
	return share < BE_KEEP ? share : BE_KEEP;
}

const char *
be_target_list(void)
{
	static char list[128];

	if (!list[0])
		for (size_t i = 0; i < NELEM(targets); i++)
			snprintf(
				list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", targets[i].gpu);
	return list;
}

static LLVMTargetMachineRef
target_machine(const char *gpu, char *err, size_t errlen)
{
	static bool init;
	LLVMTargetRef t;
	char *msg = NULL;
	const char *features = target_index(gpu) >= 0 ? targets[target_index(gpu)].features : "";

	if (!init) {
		LLVMInitializeNVPTXTargetInfo();
		LLVMInitializeNVPTXTarget();
		LLVMInitializeNVPTXTargetMC();
		LLVMInitializeNVPTXAsmPrinter();
		init = true;
	}
	if (LLVMGetTargetFromTriple(TRIPLE, &t, &msg)) {
		snprintf(err, errlen, "no NVPTX target in this LLVM: %s", msg);
		LLVMDisposeMessage(msg);
		return NULL;
	}
	return LLVMCreateTargetMachine(
		t, TRIPLE, gpu, features, LLVMCodeGenLevelAggressive, LLVMRelocDefault, LLVMCodeModelDefault);
}

LLVMModuleRef
be_module(LLVMContextRef cx, const char *name)
{
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext(name, cx);
	LLVMValueRef zero = LLVMConstInt(LLVMInt32TypeInContext(cx), 0, 0);

	LLVMSetTarget(m, TRIPLE);
	LLVMSetDataLayout(m, "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64");
	/* libdevice asks __nvvm_reflect("__CUDA_FTZ"): no flushing of subnormals */
	LLVMAddModuleFlag(m, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16, LLVMValueAsMetadata(zero));
	return m;
}

#define LIBDEVICE "nvvm/libdevice/libdevice.10.bc"

/* libdevice of the CUDA toolkit: at o->cuda_path when given, else the
 * first of $CUDA_HOME and /usr/local/cuda that has it; tried lists the
 * candidates that did not, "PATH (where it came from)", comma-separated */
static bool
find_libdevice(const BeOptions *o, char *path, size_t n, char *tried, size_t len)
{
	const char *home = getenv("CUDA_HOME");
	const char *dirs[2] = { o->cuda_path, NULL };
	const char *why[2] = { "--cuda-path", NULL };
	size_t used = 0;

	if (!o->cuda_path) {
		dirs[0] = home && *home ? home : "/usr/local/cuda";
		why[0] = home && *home ? "$CUDA_HOME" : "the default";
		if (home && *home)
			dirs[1] = "/usr/local/cuda", why[1] = "the default";
	}
	tried[0] = 0;
	for (int i = 0; i < 2 && dirs[i]; i++) {
		snprintf(path, n, "%s/%s", dirs[i], LIBDEVICE);
		if (access(path, R_OK) == 0)
			return true;
		if (used < len)
			used += (size_t)snprintf(tried + used, len - used, "%s%s (%s)", i ? ", " : "", path, why[i]);
	}
	return false;
}

/* link the libdevice functions the kernels call; everything else is dropped */
static bool
link_libdevice(LLVMModuleRef mod, const BeOptions *o, char *err, size_t errlen)
{
	LLVMMemoryBufferRef buf;
	LLVMModuleRef lib;
	char *msg = NULL, path[4096], tried[4096];
	bool needed = false;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		needed |= LLVMIsDeclaration(f) && !strncmp(LLVMGetValueName(f), "__nv_", 5);
	if (!needed)
		return true;
	if (!find_libdevice(o, path, sizeof path, tried, sizeof tried)) {
		snprintf(err, errlen,
			"cannot find libdevice: tried %s; give the CUDA toolkit with "
			"--cuda-path DIR or CUDA_HOME",
			tried);
		return false;
	}
	if (o->phase && tried[0]) {
		char note[sizeof path + sizeof tried + 32]; /* the fallback, and what it passed over */

		snprintf(note, sizeof note, "%s (none at %s)", path, tried);
		o->phase("libdevice", note);
	} else if (o->phase) {
		o->phase("libdevice", path);
	}
	if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
		snprintf(err, errlen, "cannot read libdevice (%s): %s", path, msg);
		LLVMDisposeMessage(msg);
		return false;
	}
	if (LLVMParseBitcodeInContext2(LLVMGetModuleContext(mod), buf, &lib)) {
		LLVMDisposeMemoryBuffer(buf);
		snprintf(err, errlen, "cannot parse libdevice (%s)", path);
		return false;
	}
	LLVMDisposeMemoryBuffer(buf);
	LLVMSetTarget(lib, TRIPLE);
	LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
	if (LLVMLinkModules2(mod, lib)) {
		snprintf(err, errlen, "cannot link libdevice");
		return false;
	}
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) != LLVMPTXKernelCallConv)
			LLVMSetLinkage(f, LLVMInternalLinkage);
	return true;
}

/* verify, link libdevice and run O3; the module is then ready for PTX */
static LLVMTargetMachineRef
optimize(LLVMModuleRef mod, const BeOptions *o, char *err, size_t errlen)
{
	LLVMTargetMachineRef tm;
	LLVMPassBuilderOptionsRef po;
	LLVMErrorRef e;
	char *msg = NULL;

	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		snprintf(err, errlen, "internal error: invalid LLVM IR: %.600s", msg);
		LLVMDisposeMessage(msg);
		return NULL;
	}
	LLVMDisposeMessage(msg);
	if (!link_libdevice(mod, o, err, errlen) || !(tm = target_machine(o->gpu, err, errlen)))
		return NULL;
	if (o->phase)
		o->phase("LLVM O3", NULL);
	po = LLVMCreatePassBuilderOptions();
	e = LLVMRunPasses(mod, "default<O3>", tm, po);
	if (!e && be_pair_casts(mod) > 0) /* and fold what the pairs leave */
		e = LLVMRunPasses(mod, "function(instcombine,dce)", tm, po);
	if (!e)
		be_stream_stores(mod, tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (e) {
		msg = LLVMGetErrorMessage(e);
		snprintf(err, errlen, "LLVM passes failed: %s", msg);
		LLVMDisposeErrorMessage(msg);
		LLVMDisposeTargetMachine(tm);
		return NULL;
	}
	return tm;
}

bool
be_optimize(LLVMModuleRef mod, const BeOptions *o, char *err, size_t errlen)
{
	LLVMTargetMachineRef tm = optimize(mod, o, err, errlen);

	if (tm)
		LLVMDisposeTargetMachine(tm);
	return tm != NULL;
}

bool
be_compile(LLVMModuleRef mod, const BeOptions *o, char **ptx, char *err, size_t errlen)
{
	LLVMTargetMachineRef tm = optimize(mod, o, err, errlen);
	LLVMMemoryBufferRef out;
	char *msg = NULL;
	bool ok = false;

	if (!tm)
		return false;
	if (o->phase)
		o->phase("PTX", NULL);
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &out)) {
		snprintf(err, errlen, "PTX emission failed: %s", msg);
		LLVMDisposeMessage(msg);
	} else {
		size_t n = LLVMGetBufferSize(out);

		if ((*ptx = malloc(n + 1))) {
			memcpy(*ptx, LLVMGetBufferStart(out), n);
			(*ptx)[n] = 0;
			ok = true;
		}
		LLVMDisposeMemoryBuffer(out);
	}
	LLVMDisposeTargetMachine(tm);
	return ok;
}
