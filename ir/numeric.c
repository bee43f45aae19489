/* numeric.c — scalar conversions between float32 and the narrow float types
 * (e4m3fn, e5m2, bfloat16, float16), bit for bit as PyTorch's c10 does them
 * (c10/util/Float8_e4m3fn.h, Float8_e5m2.h, BFloat16.h, Half.h).
 *
 * Encoders work on w = bits(x) with the sign stripped and put the sign back at
 * the end; all of them round to nearest, ties to even. Where c10 rounds with a
 * float addition (fp8 subnormals, float16) we do the same addition, so this
 * file needs float arithmetic evaluated in float (FLT_EVAL_METHOD 0) in the
 * default rounding mode, without flush-to-zero. Decoders are exact.
 *
 * Then the conversions of scalars between all dtypes, as PyTorch's casts
 * do them (the interpreter, the constant folder and the tensors use them). */
#include <float.h>
#include <math.h>

#include "ir.h"

#if FLT_EVAL_METHOD != 0
#error "numeric.c needs float arithmetic evaluated in float (FLT_EVAL_METHOD 0)"
#endif

/* float32 -> e4m3fn (c10 fp8e4m3fn_from_fp32_value). w >= 480 (0x43F00000,
 * also inf and NaN) -> 0x7F, the NaN code: so |x| > 464 gives NaN and 464
 * rounds to 448. w < 2^-6 (0x3C800000): add 2^14 (141 << 23) so the float adder
 * rounds to the 2^-9 grid, then take the low bits. Else rebias the exponent by
 * 7 - 127 and round the 20 dropped mantissa bits to even. */
uint8_t
f32_to_e4m3fn(float x)
{
	const uint32_t fp8_max = UINT32_C(1087) << 20;    /* 480.0f */
	const uint32_t denorm_mask = UINT32_C(141) << 23; /* 2^14 */
	uint32_t w = f32_bits(x);
	uint32_t sign = w & UINT32_C(0x80000000);
	uint8_t r;

	w ^= sign;
	if (w >= fp8_max) {
		r = 0x7F;
	} else if (w < (UINT32_C(121) << 23)) {
		w = f32_bits(bits_f32(w) + bits_f32(denorm_mask));
		r = (uint8_t)(w - denorm_mask);
	} else {
		uint32_t odd = (w >> 20) & 1;
		w += UINT32_C(0xC407FFFF) + odd; /* (7 - 127) << 23, + 0x7FFFF */
		r = (uint8_t)(w >> 20);
	}
	return (uint8_t)(r | (sign >> 24));
}

/* float32 -> e5m2 (c10 fp8e5m2_from_fp32_value). w >= 65536 (143 << 23):
 * NaN -> 0x7F, otherwise (finite or inf) -> 0x7C, inf. Values in [61440, 65536)
 * round up to 0x7C on the normal path, so |x| >= 61440 gives inf.
 * w < 2^-14 (113 << 23): add 2^7 (134 << 23) to round to the 2^-16 grid. Else
 * rebias by 15 - 127 and round the 21 dropped mantissa bits to even. */
uint8_t
f32_to_e5m2(float x)
{
	const uint32_t fp32_inf = UINT32_C(255) << 23;
	const uint32_t fp8_max = UINT32_C(143) << 23;     /* 65536.0f */
	const uint32_t denorm_mask = UINT32_C(134) << 23; /* 2^7 */
	uint32_t w = f32_bits(x);
	uint32_t sign = w & UINT32_C(0x80000000);
	uint8_t r;

	w ^= sign;
	if (w >= fp8_max) {
		r = w > fp32_inf ? 0x7F : 0x7C;
	} else if (w < (UINT32_C(113) << 23)) {
		w = f32_bits(bits_f32(w) + bits_f32(denorm_mask));
		r = (uint8_t)(w - denorm_mask);
	} else {
		uint32_t odd = (w >> 21) & 1;
		w += UINT32_C(0xC80FFFFF) + odd; /* (15 - 127) << 23, + 0xFFFFF */
		r = (uint8_t)(w >> 21);
	}
	return (uint8_t)(r | (sign >> 24));
}

/* e4m3fn -> float32, exact: s eeee mmm, bias 7, no infinities, 0x7F/0xFF
 * are NaN (decoded to sign | 0x7FF00000 as c10 does), exponent 0 is
 * subnormal m * 2^-9. */
float
e4m3fn_to_f32(uint8_t b)
{
	uint32_t sign = (uint32_t)(b & 0x80) << 24;
	uint32_t e = (b >> 3) & 15, m = b & 7;
	float mag;

	if (e == 15 && m == 7)
		return bits_f32(sign | UINT32_C(0x7FF00000));
	if (e == 0)
		mag = (float)m * 0x1p-9f;
	else
		mag = bits_f32((e + 120) << 23 | m << 20);
	return bits_f32(sign | f32_bits(mag));
}

/* e5m2 -> float32, exact: e5m2 is the top byte of a float16 (c10 does the
 * same), so exponent 31 is inf (mantissa 0) or NaN. */
float
e5m2_to_f32(uint8_t b)
{
	return f16_to_f32((uint16_t)(b << 8));
}

/* float32 -> bfloat16 (c10::detail::round_to_nearest_even): add 0x7FFF plus
 * the lowest kept bit and keep the top 16 bits; overflow carries into inf.
 * Any NaN gives 0x7FC0: c10 drops the NaN's sign here. (In CUDA code for
 * sm_80+, c10 uses __float2bfloat16 instead: same rounding, but its NaN bits
 * may differ; docs/design.md sets NaN payloads aside.) */
uint16_t
f32_to_bf16(float x)
{
	uint32_t u = f32_bits(x);

	if ((u & UINT32_C(0x7FFFFFFF)) > UINT32_C(0x7F800000))
		return UINT16_C(0x7FC0);
	return (uint16_t)((u + UINT32_C(0x7FFF) + ((u >> 16) & 1)) >> 16);
}

/* bfloat16 -> float32, exact: the top half of the float's bits. */
float
bf16_to_f32(uint16_t b)
{
	return bits_f32((uint32_t)b << 16);
}

/* float32 -> float16 (c10 fp16_ieee_from_fp32_value): IEEE binary16 round to
 * nearest even, done by the float adder. |x| is scaled by 2^112 then 2^-110
 * (overflowing to inf where binary16 would), then added to a power of two
 * chosen so that exactly 10 mantissa bits remain (the binary16 subnormal grid
 * for tiny inputs); the sum's exponent and mantissa bits are the result.
 * NaN gives sign | 0x7E00; overflow (|x| >= 65520) gives inf. */
uint16_t
f32_to_f16(float x)
{
	const float scale_to_inf = bits_f32(UINT32_C(239) << 23); /* 2^112 */
	const float scale_to_zero = bits_f32(UINT32_C(17) << 23); /* 2^-110 */
	uint32_t w = f32_bits(x);
	uint32_t shl1_w = w + w;
	uint32_t sign = w & UINT32_C(0x80000000);
	uint32_t bias = shl1_w & UINT32_C(0xFF000000);
	float base = (bits_f32(w ^ sign) * scale_to_inf) * scale_to_zero;
	uint32_t bits, nonsign;

	if (bias < UINT32_C(0x71000000))
		bias = UINT32_C(0x71000000);
	base = bits_f32((bias >> 1) + UINT32_C(0x07800000)) + base;
	bits = f32_bits(base);
	nonsign = ((bits >> 13) & UINT32_C(0x7C00)) + (bits & UINT32_C(0x0FFF));
	if (shl1_w > UINT32_C(0xFF000000))
		nonsign = 0x7E00;
	return (uint16_t)((sign >> 16) | nonsign);
}

/* float16 -> float32, exact (c10 fp16_ieee_to_fp32_value). Normal, inf and
 * NaN: move exponent and mantissa into place with the exponent offset by
 * 0xE0, then multiply by 2^-112 (inf and NaN stay so). Subnormal and zero:
 * put the mantissa under the exponent of 0.5 and subtract 0.5. */
float
f16_to_f32(uint16_t b)
{
	const uint32_t w = (uint32_t)b << 16;
	const uint32_t sign = w & UINT32_C(0x80000000);
	const uint32_t two_w = w + w;
	const float exp_scale = bits_f32(UINT32_C(15) << 23); /* 2^-112 */
	float normal = bits_f32((two_w >> 4) + (UINT32_C(0xE0) << 23)) * exp_scale;
	float denormal = bits_f32((two_w >> 17) | (UINT32_C(126) << 23)) - 0.5f;
	float mag = two_w < (UINT32_C(1) << 27) ? denormal : normal;

	return bits_f32(sign | f32_bits(mag));
}

/* ---- between all dtypes ---- */

/* wrap an int64 to the width of t */
int64_t
ir_wrap_int(int64_t v, DType t)
{
	uint64_t u = (uint64_t)v;

	switch (t) {
	case DT_B8:  return v != 0;
	case DT_U8:  return (uint8_t)u;
	case DT_I8:  return (int8_t)(uint8_t)u;
	case DT_I16: return (int16_t)(uint16_t)u;
	case DT_I32: return (int32_t)(uint32_t)u;
	default:     return v;
	}
}

/* float → integer as PyTorch's CUDA casts do it: truncate toward zero and
 * saturate, to int64 (NaN → INT64_MIN) for i64 and u8, to int32 for i32,
 * i16 and i8 (NaN → INT32_MIN from f64, 0 from narrower floats); the narrow
 * types then keep the low bits */
int64_t
ir_float_to_int(double v, DType from, DType to)
{
	int64_t r;

	if (to == DT_B8)
		return v != 0;
	if (to == DT_I64 || to == DT_U8) {
		if (isnan(v) || v <= -9223372036854775808.0)
			r = INT64_MIN;
		else
			r = v >= 9223372036854775808.0 ? INT64_MAX : (int64_t)v;
	} else {
		r = isnan(v)                 ? (from == DT_F64 ? INT32_MIN : 0)
			: v >= 2147483647.0  ? INT32_MAX
			: v <= -2147483648.0 ? INT32_MIN
					     : (int64_t)v;
	}
	return ir_wrap_int(r, to);
}

double
ir_convert_scalar(double v, DType from, DType to)
{
	float f = (float)v;

	switch (to) {
	case DT_F64:      return v;
	case DT_F32:      return f;
	case DT_BF16:     return bf16_to_f32(f32_to_bf16(f));
	case DT_F16:      return f16_to_f32(f32_to_f16(f));
	case DT_F8E4M3FN: return e4m3fn_to_f32(f32_to_e4m3fn(f));
	case DT_F8E5M2:   return e5m2_to_f32(f32_to_e5m2(f));
	case DT_B8:       return v != 0;
	default:          return (double)ir_float_to_int(v, from, to);
	}
}
