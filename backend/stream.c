/* stream.c — a multi-phase kernel's outputs stored evict-first, after O3
 * (docs/design.md, "Cache hints").
 *
 * A kernel with a grid barrier reads an input before the barrier and again
 * after it. The outputs it writes after the barrier allocate L2 lines too;
 * stored with st.global.cs (cache streaming: allocated evict-first), they
 * leave L2 before the input does, within the run and after it. Measured on
 * the H200 (docs/gpu-results.md, 2026-12-04), runs back to back: the
 * both-layouts quantize at 4096^2 27.0 -> 24.6 us, the tensor-wise one
 * 18.9 -> 18.0; no change at 8192^2 and 14336x4096, in the backward step
 * or in the layer. Most of that gain is the next run finding its input
 * still in L2 (as a kernel does whose input its producer just wrote): with
 * L2 flushed before each run, a hand-written kernel of the same shape
 * gained 1.5 % (29.1 -> 28.7 us), not 15 %.
 *
 * codegen marks such stores !nontemporal (cg_store_at), which NVPTX
 * prints as a plain st.global. This pass, the last before PTX, first joins
 * a marked kernel's neighbouring stores into vectors (the load-store
 * vectorizer, which NVPTX would run after it and which keeps the mark on a
 * vector whose parts all have it), then replaces each marked global store
 * of 1, 2, 4, 8 or 16 bytes, aligned to its size, by the same store with
 * .cs written as inline PTX. The bits stored are the same; only where the
 * line waits in L2 changes. */
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "be.h"

static unsigned
nontemporal(LLVMContextRef cx)
{
	return LLVMGetMDKindIDInContext(cx, "nontemporal", 11);
}

void
be_mark_stream(LLVMContextRef cx, LLVMValueRef st)
{
	LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(cx), 1, 0));

	LLVMSetMetadata(st, nontemporal(cx), LLVMMetadataAsValue(cx, LLVMMDNodeInContext2(cx, &one, 1)));
}

/* the inline PTX that stores n bytes; its operands: the address, then the
 * value as one or four integer registers */
static LLVMValueRef
store_asm(LLVMContextRef cx, int n, LLVMTypeRef *fnty, LLVMTypeRef *word, int *words)
{
	static const struct {
		int n, bits, words;
		const char *text, *cons;
	} forms[] = {
		{ 1, 16, 1, "st.global.cs.b8 [$0], $1;", "l,h,~{memory}" },
		{ 2, 16, 1, "st.global.cs.b16 [$0], $1;", "l,h,~{memory}" },
		{ 4, 32, 1, "st.global.cs.b32 [$0], $1;", "l,r,~{memory}" },
		{ 8, 64, 1, "st.global.cs.b64 [$0], $1;", "l,l,~{memory}" },
		{ 16, 32, 4, "st.global.cs.v4.b32 [$0], {$1, $2, $3, $4};", "l,r,r,r,r,~{memory}" },
	};
	LLVMTypeRef params[5];

	for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
		if (forms[i].n != n)
			continue;
		*word = LLVMIntTypeInContext(cx, (unsigned)forms[i].bits);
		*words = forms[i].words;
		params[0] = LLVMInt64TypeInContext(cx);
		params[1] = params[2] = params[3] = params[4] = *word;
		*fnty = LLVMFunctionType(LLVMVoidTypeInContext(cx), params, (unsigned)(1 + *words), 0);
		return LLVMGetInlineAsm(*fnty, (char *)forms[i].text, strlen(forms[i].text), (char *)forms[i].cons,
			strlen(forms[i].cons), 1, 0, LLVMInlineAsmDialectATT, 0);
	}
	return NULL;
}

/* true if st is a plain store to global memory that codegen marked */
static bool
marked(LLVMValueRef st, unsigned kind)
{
	LLVMTypeRef pt;

	if (!LLVMIsAStoreInst(st) || LLVMGetVolatile(st) || LLVMGetOrdering(st) != LLVMAtomicOrderingNotAtomic ||
		!LLVMGetMetadata(st, kind))
		return false;
	pt = LLVMTypeOf(LLVMGetOperand(st, 1));
	return LLVMGetPointerAddressSpace(pt) == 1;
}

static bool
rewrite(LLVMBuilderRef b, LLVMContextRef cx, LLVMTargetDataRef td, LLVMValueRef st)
{
	LLVMValueRef x = LLVMGetOperand(st, 0), p = LLVMGetOperand(st, 1), fn, args[5];
	LLVMTypeRef t = LLVMTypeOf(x), fnty, word, i64 = LLVMInt64TypeInContext(cx);
	LLVMTypeKind k = LLVMGetTypeKind(t);
	int n = (int)LLVMStoreSizeOfType(td, t), words;

	if (LLVMSizeOfTypeInBits(td, t) != (unsigned long long)n * 8 || (int)LLVMGetAlignment(st) < n ||
		k == LLVMPointerTypeKind || !(fn = store_asm(cx, n, &fnty, &word, &words)))
		return false;
	LLVMPositionBuilderBefore(b, st);
	args[0] = LLVMBuildPtrToInt(b, p, i64, "");
	if (words == 1) {
		x = LLVMBuildBitCast(b, x, LLVMIntTypeInContext(cx, (unsigned)n * 8), "");
		args[1] = n == 1 ? LLVMBuildZExt(b, x, word, "") : x;
	} else {
		x = LLVMBuildBitCast(b, x, LLVMVectorType(word, (unsigned)words), "");
		for (int i = 0; i < words; i++)
			args[1 + i] = LLVMBuildExtractElement(b, x, LLVMConstInt(i64, (unsigned long long)i, 0), "");
	}
	LLVMBuildCall2(b, fnty, fn, args, (unsigned)(1 + words), "");
	LLVMInstructionEraseFromParent(st);
	return true;
}

static bool
has_marked(LLVMValueRef f, unsigned kind)
{
	for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
		for (LLVMValueRef x = LLVMGetFirstInstruction(bb); x; x = LLVMGetNextInstruction(x))
			if (marked(x, kind))
				return true;
	return false;
}

int
be_stream_stores(LLVMModuleRef mod, LLVMTargetMachineRef tm, LLVMPassBuilderOptionsRef po)
{
	LLVMContextRef cx = LLVMGetModuleContext(mod);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(cx);
	LLVMTargetDataRef td = LLVMGetModuleDataLayout(mod);
	unsigned kind = nontemporal(cx);
	LLVMErrorRef e;
	int n = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		if (!has_marked(f, kind))
			continue;
		if ((e = LLVMRunPassesOnFunction(f, "load-store-vectorizer", tm, po))) {
			LLVMConsumeError(e); /* the stores stay as they are: still right */
			continue;
		}
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
			for (LLVMValueRef x = LLVMGetFirstInstruction(bb), next; x; x = next) {
				next = LLVMGetNextInstruction(x);
				if (marked(x, kind) && rewrite(b, cx, td, x))
					n++;
			}
	}
	LLVMDisposeBuilder(b);
	return n;
}
