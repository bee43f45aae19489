/* target.c — the NVPTX target: module set-up, libdevice, LLVM's O3 pipeline
 * and the PTX writer. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "be.h"

#define TRIPLE "nvptx64-nvidia-cuda"

static LLVMTargetMachineRef
target_machine(const char *gpu, char *err, size_t errlen)
{
	static bool init;
	LLVMTargetRef t;
	char *msg = NULL;
	const char *features = !strcmp(gpu, "sm_89") ? "+ptx81" : !strcmp(gpu, "sm_90a") ? "+ptx80" :
		!strcmp(gpu, "sm_100") ? "+ptx86" : "";   /* sm_89 needs PTX 8.1 for its fp8 cvt */

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
	return LLVMCreateTargetMachine(t, TRIPLE, gpu, features, LLVMCodeGenLevelAggressive,
		LLVMRelocDefault, LLVMCodeModelDefault);
}

LLVMModuleRef
be_module(LLVMContextRef cx, const char *name)
{
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext(name, cx);
	LLVMValueRef zero = LLVMConstInt(LLVMInt32TypeInContext(cx), 0, 0);

	LLVMSetTarget(m, TRIPLE);
	LLVMSetDataLayout(m, "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64");
	/* libdevice asks __nvvm_reflect("__CUDA_FTZ"): no flushing of subnormals */
	LLVMAddModuleFlag(m, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
		LLVMValueAsMetadata(zero));
	return m;
}

/* link the libdevice functions the kernels call; everything else is dropped */
static bool
link_libdevice(LLVMModuleRef mod, char *err, size_t errlen)
{
	LLVMMemoryBufferRef buf;
	LLVMModuleRef lib;
	char *msg = NULL;
	bool needed = false;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		needed |= LLVMIsDeclaration(f) && !strncmp(LLVMGetValueName(f), "__nv_", 5);
	if (!needed)
		return true;
	if (LLVMCreateMemoryBufferWithContentsOfFile(FP8CC_LIBDEVICE, &buf, &msg)) {
		snprintf(err, errlen, "cannot read libdevice (%s): %s", FP8CC_LIBDEVICE, msg);
		LLVMDisposeMessage(msg);
		return false;
	}
	if (LLVMParseBitcodeInContext2(LLVMGetModuleContext(mod), buf, &lib)) {
		LLVMDisposeMemoryBuffer(buf);
		snprintf(err, errlen, "cannot parse libdevice (%s)", FP8CC_LIBDEVICE);
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
optimize(LLVMModuleRef mod, const char *gpu, char *err, size_t errlen)
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
	if (!link_libdevice(mod, err, errlen) || !(tm = target_machine(gpu, err, errlen)))
		return NULL;
	po = LLVMCreatePassBuilderOptions();
	e = LLVMRunPasses(mod, "default<O3>", tm, po);
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
be_optimize(LLVMModuleRef mod, const char *gpu, char *err, size_t errlen)
{
	LLVMTargetMachineRef tm = optimize(mod, gpu, err, errlen);

	if (tm)
		LLVMDisposeTargetMachine(tm);
	return tm != NULL;
}

bool
be_compile(LLVMModuleRef mod, const char *gpu, char **ptx, char *err, size_t errlen)
{
	LLVMTargetMachineRef tm = optimize(mod, gpu, err, errlen);
	LLVMMemoryBufferRef out;
	char *msg = NULL;
	bool ok = false;

	if (!tm)
		return false;
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
