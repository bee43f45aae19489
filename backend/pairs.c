/* pairs.c — fp8 casts two at a time, after O3 (docs/design.md, "The
 * backend").
 *
 * cvt.rn.satfinite.e4m3x2.f32 converts two floats in one instruction (the
 * first lands in the high byte), but an element is generated alone, so each
 * cast fills one lane with 0.0 and throws the high byte away. Once O3 has
 * unrolled and vectorized a chunk, its casts stand side by side in one
 * block; this pass joins them in pairs: the earlier call becomes the low
 * byte of one call that converts both, the later its high byte. The lanes
 * are independent, so the bits are the same. A pair needs the later cast's
 * operand to exist where the earlier one stands: defined before it in the
 * block, or outside the block (then it dominates the block), or movable up
 * to there with what it needs (lanes, arithmetic, loads of inputs nothing
 * writes). */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "be.h"

#define WINDOW 16 /* later casts of a block looked at for a partner */

/* true if call x is a cast of one float (the high lane 0.0) */
static bool
lone_cast(LLVMValueRef x)
{
	LLVMValueRef callee, hi;
	const char *name;
	size_t n;

	if (!LLVMIsACallInst(x) || !(callee = LLVMGetCalledValue(x)) || !LLVMIsAFunction(callee))
		return false;
	name = LLVMGetValueName2(callee, &n);
	if (strcmp(name, "llvm.nvvm.ff.to.e4m3x2.rn") && strcmp(name, "llvm.nvvm.ff.to.e5m2x2.rn"))
		return false;
	hi = LLVMGetOperand(x, 0);
	return LLVMIsAConstantFP(hi) && LLVMIsNull(hi); /* +0.0 */
}

/* true if v can be used just before instruction at */
static bool
available(LLVMValueRef v, LLVMValueRef at)
{
	if (!LLVMIsAInstruction(v) || LLVMGetInstructionParent(v) != LLVMGetInstructionParent(at))
		return true;
	for (LLVMValueRef x = LLVMGetPreviousInstruction(at); x; x = LLVMGetPreviousInstruction(x))
		if (x == v)
			return true;
	return false;
}

/* true if p points into a kernel parameter nothing writes (readonly and
 * noalias: a load from it may move anywhere in the kernel) */
static bool
invariant_memory(LLVMValueRef p)
{
	static unsigned ro, na;
	LLVMValueRef f;
	unsigned i = 0;

	while (LLVMIsAGetElementPtrInst(p))
		p = LLVMGetOperand(p, 0);
	if (!LLVMIsAArgument(p))
		return false;
	if (!ro) {
		ro = LLVMGetEnumAttributeKindForName("readonly", 8);
		na = LLVMGetEnumAttributeKindForName("noalias", 7);
	}
	f = LLVMGetParamParent(p);
	while (LLVMGetParam(f, i) != p)
		i++;
	return LLVMGetEnumAttributeAtIndex(f, i + 1, ro) && LLVMGetEnumAttributeAtIndex(f, i + 1, na);
}

/* true if v may be computed earlier than where it is: arithmetic, casts,
 * lanes, addresses and loads of invariant memory; no calls, no memory
 * writes, no division (it may trap), no control flow */
static bool
movable(LLVMValueRef v)
{
	LLVMOpcode op = LLVMGetInstructionOpcode(v);

	switch (op) {
	case LLVMLoad:
		return !LLVMGetVolatile(v) && LLVMGetOrdering(v) == LLVMAtomicOrderingNotAtomic &&
			invariant_memory(LLVMGetOperand(v, 0));
	case LLVMCall:
	case LLVMPHI:
	case LLVMStore:
	case LLVMAtomicRMW:
	case LLVMAtomicCmpXchg:
	case LLVMFence:
	case LLVMAlloca:
	case LLVMSDiv:
	case LLVMUDiv:
	case LLVMSRem:
	case LLVMURem:          return false;
	default:                return !LLVMIsATerminatorInst(v);
	}
}

/* v made available before at: so it is, or it can move there with what it
 * needs (O3 leaves each element's loads and arithmetic just before its
 * cast) */
static bool
bring(LLVMBuilderRef b, LLVMValueRef v, LLVMValueRef at, int depth)
{
	if (available(v, at))
		return true;
	if (depth > 8 || !movable(v))
		return false;
	for (int i = 0; i < LLVMGetNumOperands(v); i++)
		if (!bring(b, LLVMGetOperand(v, i), at, depth + 1))
			return false;
	LLVMInstructionRemoveFromParent(v);
	LLVMPositionBuilderBefore(b, at);
	LLVMInsertIntoBuilder(b, v);
	return true;
}

static int
pair_block(LLVMBuilderRef b, LLVMContextRef cx, LLVMBasicBlockRef bb)
{
	LLVMTypeRef i16 = LLVMInt16TypeInContext(cx), i8x2 = LLVMVectorType(LLVMInt8TypeInContext(cx), 2);
	LLVMValueRef *casts = NULL;
	int n = 0, cap = 0, paired = 0;

	for (LLVMValueRef x = LLVMGetFirstInstruction(bb); x; x = LLVMGetNextInstruction(x)) {
		if (!lone_cast(x))
			continue;
		if (n == cap && !(casts = realloc(casts, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *casts)))
			fatal("out of memory");
		casts[n++] = x;
	}
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; casts[i] && j < n && j <= i + WINDOW; j++) {
			LLVMValueRef lo = casts[i], hi = casts[j], f, args[2], both, bytes;

			if (!hi || (f = LLVMGetCalledValue(lo)) != LLVMGetCalledValue(hi) ||
				!bring(b, LLVMGetOperand(hi, 1), lo, 0))
				continue;
			args[0] = LLVMGetOperand(hi, 1);
			args[1] = LLVMGetOperand(lo, 1);
			LLVMPositionBuilderBefore(b, lo);
			both = LLVMBuildCall2(b, LLVMGlobalGetValueType(f), f, args, 2, "");
			/* as bytes, so that the byte stores and shuffles after see lanes */
			bytes = LLVMBuildBitCast(b, both, i8x2, "");
			LLVMReplaceAllUsesWith(lo,
				LLVMBuildZExt(
					b, LLVMBuildExtractElement(b, bytes, LLVMConstInt(i16, 0, 0), ""), i16, ""));
			LLVMReplaceAllUsesWith(hi,
				LLVMBuildZExt(
					b, LLVMBuildExtractElement(b, bytes, LLVMConstInt(i16, 1, 0), ""), i16, ""));
			LLVMInstructionEraseFromParent(lo);
			LLVMInstructionEraseFromParent(hi);
			casts[i] = casts[j] = NULL;
			paired++;
		}
	}
	free(casts);
	return paired;
}

int
be_pair_casts(LLVMModuleRef mod)
{
	LLVMContextRef cx = LLVMGetModuleContext(mod);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(cx);
	int paired = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
			paired += pair_block(b, cx, bb);
	LLVMDisposeBuilder(b);
	return paired;
}
