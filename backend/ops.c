/* ops.c — one element of an op in LLVM IR, with PyTorch's numerics.
 *
 * f32 and f64 ops compute in their own type with IEEE division and square
 * root (no fast-math flags anywhere); f16 and bf16 ops compute in f32 and
 * round back to nearest even; narrow conversions from f64 go through f32, as
 * c10 does. float → fp8 uses the NVPTX saturating conversion and, unless value
 * ranges proved it needless, the fix-up that turns its saturation into
 * PyTorch's NaN (e4m3fn) or inf (e5m2). Transcendental functions come from
 * libdevice, the math library PyTorch's own CUDA kernels use. */
#include <string.h>

#include "be.h"

LLVMTypeRef
be_type(Cg *c, DType t)
{
	switch (t) {
	case DT_B8:       return c->i1;
	case DT_U8:
	case DT_I8:
	case DT_F8E4M3FN:
	case DT_F8E5M2:   return c->i8;
	case DT_I16:      return c->i16;
	case DT_I32:      return c->i32;
	case DT_I64:      return c->i64;
	case DT_F16:      return c->f16;
	case DT_BF16:     return c->bf16;
	case DT_F32:      return c->f32;
	case DT_F64:      return c->f64;
	case DT_COUNT:    break;
	}
	unreachable();
}

LLVMValueRef
be_call(Cg *c, const char *name, LLVMTypeRef *over, int nover, LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f;

	if (!id)
		die("no intrinsic %s in this LLVM", name);
	f = LLVMGetIntrinsicDeclaration(c->mod, id, over, (size_t)nover);
	return LLVMBuildCall2(c->b, LLVMIntrinsicGetType(c->cx, id, over, (size_t)nover), f, args, (unsigned)nargs, "");
}

LLVMValueRef
be_libdevice(Cg *c, const char *name, LLVMTypeRef t, LLVMValueRef *args, int nargs)
{
	LLVMTypeRef ps[3] = { t, t, t }, fty = LLVMFunctionType(t, ps, (unsigned)nargs, 0);
	LLVMValueRef f = LLVMGetNamedFunction(c->mod, name);

	if (!f)
		f = LLVMAddFunction(c->mod, name, fty);
	return LLVMBuildCall2(c->b, fty, f, args, (unsigned)nargs, "");
}

LLVMValueRef
be_constant(Cg *c, double v, DType t)
{
	/* integers: the interpreter's rule for a full (saturate, NaN, wrap) */
	if (t == DT_B8)
		return LLVMConstInt(c->i1, v != 0, 0);
	if (dt_isint(t))
		return LLVMConstInt(be_type(c, t), (unsigned long long)ir_float_to_int(v, DT_F64, t), 1);
	if (dt_isfp8(t)) {
		float f = (float)v;
		return LLVMConstInt(c->i8, t == DT_F8E4M3FN ? f32_to_e4m3fn(f) : f32_to_e5m2(f), 0);
	}
	if (t == DT_F64)
		return LLVMConstReal(c->f64, v);
	/* f32, f16, bf16: exact, the value is already rounded to the dtype */
	return LLVMConstReal(be_type(c, t), (double)(float)v);
}

/* ---- conversions ---- */

static bool
isfp(DType t)
{
	return dt_isfloat(t);
}

/* fp8 byte → f32, exactly: the hardware pair conversion to f16, then widen */
static LLVMValueRef
fp8_to_f32(Cg *c, LLVMValueRef x, DType t)
{
	LLVMValueRef pair = LLVMBuildZExt(c->b, x, c->i16, "");
	LLVMValueRef h2 = be_call(c, t == DT_F8E4M3FN ? "llvm.nvvm.e4m3x2.to.f16x2.rn" : "llvm.nvvm.e5m2x2.to.f16x2.rn",
		NULL, 0, &pair, 1);
	LLVMValueRef h = LLVMBuildExtractElement(c->b, h2, LLVMConstInt(c->i32, 0, 0), "");

	return LLVMBuildFPExt(c->b, h, c->f32, "");
}

/* f32 → fp8 byte with PyTorch's rounding: RNE, e4m3fn |x| > 464 → NaN,
 * e5m2 |x| >= 61440 → inf, NaN → 0x7F with its sign */
static LLVMValueRef
f32_to_fp8(Cg *c, LLVMValueRef x, DType t, bool fixup)
{
	LLVMValueRef args[2] = { LLVMConstReal(c->f32, 0), x };
	LLVMValueRef r = LLVMBuildTrunc(c->b,
		be_call(c, t == DT_F8E4M3FN ? "llvm.nvvm.ff.to.e4m3x2.rn" : "llvm.nvvm.ff.to.e5m2x2.rn", NULL, 0, args,
			2),
		c->i8, "");
	LLVMValueRef bits = LLVMBuildBitCast(c->b, x, c->i32, "");
	LLVMValueRef mag = LLVMBuildAnd(c->b, bits, LLVMConstInt(c->i32, 0x7FFFFFFF, 0), "");
	LLVMValueRef sign = LLVMBuildTrunc(c->b, LLVMBuildLShr(c->b, bits, LLVMConstInt(c->i32, 24, 0), ""), c->i8, "");
	LLVMValueRef nan, over;

	sign = LLVMBuildAnd(c->b, sign, LLVMConstInt(c->i8, 0x80, 0), "");
	if (t == DT_F8E4M3FN && !fixup) /* the conversion's NaN is 0x7F: its sign */
		return LLVMBuildOr(c->b, r, sign, "");
	nan = LLVMBuildOr(c->b, sign, LLVMConstInt(c->i8, 0x7F, 0), "");
	if (t == DT_F8E4M3FN) { /* NaN, inf and all past 464 */
		over = LLVMBuildICmp(c->b, LLVMIntUGT, mag, LLVMConstInt(c->i32, 0x43E80000, 0), "");
		return LLVMBuildSelect(c->b, over, nan, r, "");
	}
	if (fixup) { /* e5m2: from 61440 up, inf */
		over = LLVMBuildICmp(c->b, LLVMIntUGE, mag, LLVMConstInt(c->i32, 0x47700000, 0), "");
		r = LLVMBuildSelect(c->b, over, LLVMBuildOr(c->b, sign, LLVMConstInt(c->i8, 0x7C, 0), ""), r, "");
	}
	over = LLVMBuildICmp(c->b, LLVMIntUGT, mag, LLVMConstInt(c->i32, 0x7F800000, 0), "");
	return LLVMBuildSelect(c->b, over, nan, r, "");
}

/* any float (fp8 included) → f32; f64 rounds to nearest */
static LLVMValueRef
to_f32(Cg *c, LLVMValueRef x, DType t)
{
	if (dt_isfp8(t))
		return fp8_to_f32(c, x, t);
	if (t == DT_F64)
		return LLVMBuildFPTrunc(c->b, x, c->f32, "");
	if (t == DT_F32)
		return x;
	return LLVMBuildFPExt(c->b, x, c->f32, "");
}

/* f32 → a narrower float type */
static LLVMValueRef
from_f32(Cg *c, LLVMValueRef x, DType to, bool fixup)
{
	if (dt_isfp8(to))
		return f32_to_fp8(c, x, to, fixup);
	if (to == DT_F32)
		return x;
	return LLVMBuildFPTrunc(c->b, x, be_type(c, to), "");
}

static LLVMValueRef
int_to_float(Cg *c, LLVMValueRef x, DType from, DType to, bool fixup)
{
	bool sgn = from != DT_U8 && from != DT_B8;
	LLVMValueRef f;

	if (to == DT_F64)
		return sgn ? LLVMBuildSIToFP(c->b, x, c->f64, "") : LLVMBuildUIToFP(c->b, x, c->f64, "");
	f = sgn ? LLVMBuildSIToFP(c->b, x, c->f32, "") : LLVMBuildUIToFP(c->b, x, c->f32, "");
	return from_f32(c, f, to, fixup);
}

/* float → integer as PyTorch's CUDA casts (interp.c, ir_float_to_int):
 * saturate to int64 with NaN → INT64_MIN for i64 and u8, to int32 for i32,
 * i16 and i8 with NaN → INT32_MIN from f64 and 0 otherwise; narrow types
 * keep the low bits */
static LLVMValueRef
float_to_int(Cg *c, LLVMValueRef x, DType from, DType to)
{
	bool wide = to == DT_I64 || to == DT_U8;
	LLVMTypeRef over[2] = { wide ? c->i64 : c->i32, NULL };
	LLVMValueRef w;

	if (dt_isfp8(from) || from == DT_F16 || from == DT_BF16)
		x = to_f32(c, x, from);
	over[1] = LLVMTypeOf(x);
	w = be_call(c, "llvm.fptosi.sat", over, 2, &x, 1);
	if (wide || from == DT_F64)
		w = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, ""),
			LLVMConstInt(LLVMTypeOf(w), wide ? 1ull << 63 : 1ull << 31, 0), w, "");
	return to == DT_I64 || to == DT_I32 ? w : LLVMBuildTrunc(c->b, w, be_type(c, to), "");
}

LLVMValueRef
be_convert(Cg *c, LLVMValueRef x, DType from, DType to, bool fixup)
{
	bool ffrom = isfp(from) || dt_isfp8(from), fto = isfp(to) || dt_isfp8(to);

	if (from == to)
		return x;
	if (to == DT_B8 && !ffrom)
		return LLVMBuildICmp(c->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
	if (to == DT_B8) { /* NaN is true */
		x = dt_isfp8(from) ? to_f32(c, x, from) : x;
		return LLVMBuildFCmp(c->b, LLVMRealUNE, x, LLVMConstReal(LLVMTypeOf(x), 0), "");
	}
	if (ffrom && fto) {
		if (to == DT_F64)
			return LLVMBuildFPExt(c->b, to_f32(c, x, from), c->f64, "");
		return from_f32(c, to_f32(c, x, from), to, fixup);
	}
	if (ffrom)
		return float_to_int(c, x, from, to);
	if (fto)
		return int_to_float(c, x, from, to, fixup);
	/* integer → integer: widen by the source's signedness, or truncate */
	if (LLVMGetIntTypeWidth(be_type(c, to)) <= LLVMGetIntTypeWidth(be_type(c, from)))
		return LLVMBuildTrunc(c->b, x, be_type(c, to), "");
	return from == DT_U8 || from == DT_B8 ? LLVMBuildZExt(c->b, x, be_type(c, to), "")
					      : LLVMBuildSExt(c->b, x, be_type(c, to), "");
}

/* ---- float ops ---- */

static LLVMValueRef
intrinsic1(Cg *c, const char *name, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);

	return be_call(c, name, &t, 1, &x, 1);
}

static LLVMValueRef
libm1(Cg *c, const char *base, LLVMValueRef x, bool dbl)
{
	char name[32];

	snprintf(name, sizeof name, "__nv_%s%s", base, dbl ? "" : "f");
	return be_libdevice(c, name, LLVMTypeOf(x), &x, 1);
}

static LLVMValueRef
libm2(Cg *c, const char *base, LLVMValueRef x, LLVMValueRef y, bool dbl)
{
	char name[32];
	LLVMValueRef args[2] = { x, y };

	snprintf(name, sizeof name, "__nv_%s%s", base, dbl ? "" : "f");
	return be_libdevice(c, name, LLVMTypeOf(x), args, 2);
}

static LLVMValueRef
unary_float(Cg *c, Op op, LLVMValueRef x, bool dbl)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef one = LLVMConstReal(t, 1), zero = LLVMConstReal(t, 0), pos, neg;

	switch (op) {
	case OP_ABS:        return intrinsic1(c, "llvm.fabs", x);
	case OP_NEG:        return LLVMBuildFNeg(c->b, x, "");
	case OP_RECIPROCAL: return LLVMBuildFDiv(c->b, one, x, "");
	case OP_SQRT:       return intrinsic1(c, "llvm.sqrt", x);
	case OP_FLOOR:      return intrinsic1(c, "llvm.floor", x);
	case OP_CEIL:       return intrinsic1(c, "llvm.ceil", x);
	case OP_ROUND:      return intrinsic1(c, "llvm.roundeven", x);
	case OP_TRUNC:      return intrinsic1(c, "llvm.trunc", x);
	case OP_SIGN:
		pos = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOGT, x, zero, ""), one, zero, "");
		neg = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, x, zero, ""), one, zero, "");
		return LLVMBuildFSub(c->b, pos, neg, ""); /* NaN → 0, as PyTorch */
	case OP_ISFINITE:
		return LLVMBuildFCmp(c->b, LLVMRealOLT, intrinsic1(c, "llvm.fabs", x), LLVMConstReal(t, 1.0 / 0.0), "");
	case OP_SIGNBIT:
		return LLVMBuildICmp(c->b, LLVMIntSLT, LLVMBuildBitCast(c->b, x, dbl ? c->i64 : c->i32, ""),
			LLVMConstInt(dbl ? c->i64 : c->i32, 0, 0), "");
	default:
		if (!ir_ops[op].libdevice[0])
			unreachable();
		return libm1(c, ir_ops[op].libdevice, x, dbl);
	}
}

/* maximum/minimum: NaN wins; at equality +0 beats -0 for max, -0 for min */
static LLVMValueRef
max_min(Cg *c, bool max, LLVMValueRef x, LLVMValueRef y)
{
	LLVMTypeRef t = LLVMTypeOf(x);

	return be_call(c, max ? "llvm.maximum" : "llvm.minimum", &t, 1, (LLVMValueRef[]){ x, y }, 2);
}

static LLVMValueRef
binary_float(Cg *c, Op op, LLVMValueRef x, LLVMValueRef y, bool dbl)
{
	LLVMValueRef args[2] = { x, y }, m;
	LLVMTypeRef t = LLVMTypeOf(x);

	switch (op) {
	case OP_ADD:     return LLVMBuildFAdd(c->b, x, y, "");
	case OP_SUB:     return LLVMBuildFSub(c->b, x, y, "");
	case OP_MUL:     return LLVMBuildFMul(c->b, x, y, "");
	case OP_DIV:     return LLVMBuildFDiv(c->b, x, y, "");
	case OP_MAXIMUM: return max_min(c, true, x, y);
	case OP_MINIMUM: return max_min(c, false, x, y);
	case OP_REMAINDER:
		m = be_libdevice(c, dbl ? "__nv_fmod" : "__nv_fmodf", t, args, 2);
		return LLVMBuildSelect(c->b,
			LLVMBuildAnd(c->b, LLVMBuildFCmp(c->b, LLVMRealUNE, m, LLVMConstReal(t, 0), ""),
				LLVMBuildXor(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, y, LLVMConstReal(t, 0), ""),
					LLVMBuildFCmp(c->b, LLVMRealOLT, m, LLVMConstReal(t, 0), ""), ""),
				""),
			LLVMBuildFAdd(c->b, m, y, ""), m, "");
	case OP_EQ: return LLVMBuildFCmp(c->b, LLVMRealOEQ, x, y, "");
	case OP_NE: return LLVMBuildFCmp(c->b, LLVMRealUNE, x, y, "");
	case OP_LT: return LLVMBuildFCmp(c->b, LLVMRealOLT, x, y, "");
	case OP_LE: return LLVMBuildFCmp(c->b, LLVMRealOLE, x, y, "");
	case OP_GT: return LLVMBuildFCmp(c->b, LLVMRealOGT, x, y, "");
	case OP_GE: return LLVMBuildFCmp(c->b, LLVMRealOGE, x, y, "");
	default:
		if (!ir_ops[op].libdevice[0])
			unreachable();
		return libm2(c, ir_ops[op].libdevice, x, y, dbl);
	}
}

/* ---- integer ops ---- */

/* shifts as c10's: by a negative amount or past the width, a left shift
 * gives 0 and a right shift the sign (zeros for unsigned types). The
 * shifts that give 0 shift by the amount's low bits and select 0 outside
 * the width: NVPTX turns select(y < w, shl(x, y), 0) into PTX's shl alone,
 * whose clamp it relies on, but PTX takes a u32 amount, so an i64 amount
 * of 2^32 or more shifted by its low 32 bits (the GPU's random program
 * 4313: -300 << 0x4079000000000000 gave -300). The masked amount is not
 * the compared one, and the select stays. */
static LLVMValueRef
shift(Cg *c, Op op, LLVMValueRef x, LLVMValueRef y, bool sgn)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	unsigned w = LLVMGetIntTypeWidth(t);
	LLVMValueRef in = LLVMBuildICmp(c->b, LLVMIntULT, y, LLVMConstInt(t, w, 0), ""), low;

	if (op == OP_BITWISE_LEFT_SHIFT || !sgn) {
		low = LLVMBuildAnd(c->b, y, LLVMConstInt(t, w - 1, 0), "");
		return LLVMBuildSelect(c->b, in,
			op == OP_BITWISE_LEFT_SHIFT ? LLVMBuildShl(c->b, x, low, "") : LLVMBuildLShr(c->b, x, low, ""),
			LLVMConstInt(t, 0, 0), "");
	}
	return LLVMBuildAShr(c->b, x, LLVMBuildSelect(c->b, in, y, LLVMConstInt(t, w - 1, 0), ""), "");
}

static LLVMValueRef
unary_int(Cg *c, Op op, LLVMValueRef x, DType t)
{
	LLVMTypeRef ty = LLVMTypeOf(x);
	LLVMValueRef zero = LLVMConstInt(ty, 0, 0), neg;

	switch (op) {
	case OP_ABS:
		if (t == DT_U8)
			return x;
		neg = LLVMBuildSub(c->b, zero, x, "");
		return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, x, zero, ""), neg, x, "");
	case OP_NEG: return LLVMBuildSub(c->b, zero, x, "");
	case OP_SIGN:
		return LLVMBuildSub(c->b,
			LLVMBuildZExt(
				c->b, LLVMBuildICmp(c->b, t == DT_U8 ? LLVMIntUGT : LLVMIntSGT, x, zero, ""), ty, ""),
			LLVMBuildZExt(
				c->b, LLVMBuildICmp(c->b, t == DT_U8 ? LLVMIntULT : LLVMIntSLT, x, zero, ""), ty, ""),
			"");
	case OP_ISFINITE:    return LLVMConstInt(c->i1, 1, 0);
	case OP_SIGNBIT:     return t == DT_U8 ? LLVMConstInt(c->i1, 0, 0) : LLVMBuildICmp(c->b, LLVMIntSLT, x, zero, "");
	case OP_BITWISE_NOT:
	case OP_LOGICAL_NOT: return LLVMBuildNot(c->b, x, "");
	default:             unreachable();
	}
}

/* division and modulo never trap: by 0 they give -1 and 0, by -1 negate */
static LLVMValueRef
div_mod(Cg *c, Op op, LLVMValueRef x, LLVMValueRef y, bool sgn)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef zero = LLVMConstInt(t, 0, 0), mone = LLVMConstAllOnes(t);
	LLVMValueRef bad = LLVMBuildICmp(c->b, LLVMIntEQ, y, zero, ""), safe, q, m;

	if (sgn)
		bad = LLVMBuildOr(c->b, bad, LLVMBuildICmp(c->b, LLVMIntEQ, y, mone, ""), "");
	safe = LLVMBuildSelect(c->b, bad, LLVMConstInt(t, 1, 0), y, "");
	if (op == OP_DIV) {
		q = sgn ? LLVMBuildSDiv(c->b, x, safe, "") : LLVMBuildUDiv(c->b, x, safe, "");
		return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, y, zero, ""), mone,
			LLVMBuildSelect(c->b, bad, LLVMBuildSub(c->b, zero, x, ""), q, ""), "");
	}
	m = sgn ? LLVMBuildSRem(c->b, x, safe, "") : LLVMBuildURem(c->b, x, safe, "");
	m = LLVMBuildSelect(c->b, bad, zero, m, "");
	if (op == OP_FMOD || !sgn)
		return m;
	return LLVMBuildSelect(c->b,
		LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntNE, m, zero, ""),
			LLVMBuildXor(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, y, zero, ""),
				LLVMBuildICmp(c->b, LLVMIntSLT, m, zero, ""), ""),
			""),
		LLVMBuildAdd(c->b, m, y, ""), m, "");
}

static LLVMValueRef
binary_int(Cg *c, Op op, LLVMValueRef x, LLVMValueRef y, DType t)
{
	bool sgn = t != DT_U8 && t != DT_B8;

	switch (op) {
	case OP_ADD:       return LLVMBuildAdd(c->b, x, y, "");
	case OP_SUB:       return LLVMBuildSub(c->b, x, y, "");
	case OP_MUL:       return LLVMBuildMul(c->b, x, y, "");
	case OP_DIV:
	case OP_FMOD:
	case OP_REMAINDER: return div_mod(c, op, x, y, sgn);
	case OP_MAXIMUM:
		return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, sgn ? LLVMIntSGT : LLVMIntUGT, x, y, ""), x, y, "");
	case OP_MINIMUM:
		return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, sgn ? LLVMIntSLT : LLVMIntULT, x, y, ""), x, y, "");
	case OP_BITWISE_AND:         return LLVMBuildAnd(c->b, x, y, "");
	case OP_BITWISE_OR:          return LLVMBuildOr(c->b, x, y, "");
	case OP_BITWISE_XOR:         return LLVMBuildXor(c->b, x, y, "");
	case OP_BITWISE_LEFT_SHIFT:
	case OP_BITWISE_RIGHT_SHIFT: return shift(c, op, x, y, sgn);
	case OP_EQ:                  return LLVMBuildICmp(c->b, LLVMIntEQ, x, y, "");
	case OP_NE:                  return LLVMBuildICmp(c->b, LLVMIntNE, x, y, "");
	case OP_LT:                  return LLVMBuildICmp(c->b, sgn ? LLVMIntSLT : LLVMIntULT, x, y, "");
	case OP_LE:                  return LLVMBuildICmp(c->b, sgn ? LLVMIntSLE : LLVMIntULE, x, y, "");
	case OP_GT:                  return LLVMBuildICmp(c->b, sgn ? LLVMIntSGT : LLVMIntUGT, x, y, "");
	case OP_GE:                  return LLVMBuildICmp(c->b, sgn ? LLVMIntSGE : LLVMIntUGE, x, y, "");
	default:                     unreachable();
	}
}

/* ---- entry points: narrow floats compute in f32 and round back ---- */

LLVMValueRef
be_unary(Cg *c, Op op, LLVMValueRef x, DType t)
{
	LLVMValueRef r, xf;

	if (!isfp(t))
		return unary_int(c, op, x, t);
	if (t == DT_F32 || t == DT_F64)
		return unary_float(c, op, x, t == DT_F64);
	xf = to_f32(c, x, t);
	r = unary_float(c, op, xf, false);
	if (op == OP_SIGNBIT && t == DT_F16) /* torch: an f16 NaN widens to the positive canonical NaN */
		r = LLVMBuildAnd(c->b, r, LLVMBuildFCmp(c->b, LLVMRealORD, xf, xf, ""), "");
	return op == OP_ISFINITE || op == OP_SIGNBIT ? r : from_f32(c, r, t, true);
}

LLVMValueRef
be_binary(Cg *c, Op op, LLVMValueRef x, LLVMValueRef y, DType t)
{
	LLVMValueRef r;

	if (!isfp(t))
		return binary_int(c, op, x, y, t);
	if (t == DT_F32 || t == DT_F64)
		return binary_float(c, op, x, y, t == DT_F64);
	r = binary_float(c, op, to_f32(c, x, t), to_f32(c, y, t), false);
	return ir_ops[op].cls == OC_COMPARE ? r : from_f32(c, r, t, true);
}
