/* gemm_rules.h — what cuBLASLt's FP8 GEMM takes on Hopper (CUDA 12 and 13),
 * written once for the compiler (the verifier, fp8cc's input checks) and
 * libfp8rt (the plan reader, fp8rt_scaled_mm). Dtypes are the rows of
 * dtypes.def: the IR's DType is the row, fp8rt_dtype the row + 1. No
 * dependency but <stdint.h>. */
#ifndef FP8CC_GEMM_RULES_H
#define FP8CC_GEMM_RULES_H

#include <stdbool.h>
#include <stdint.h>

enum {
#define DTYPE(id, ...) GEMM_ROW_##id,
#include "dtypes.def"
#undef DTYPE
};

/* K and N of an FP8 GEMM are multiples of this (M is free) */
#define FP8_GEMM_MULTIPLE 16

static inline bool
fp8_gemm_dims_ok(int64_t k, int64_t n)
{
	return k % FP8_GEMM_MULTIPLE == 0 && n % FP8_GEMM_MULTIPLE == 0;
}

/* the bias dtype for an FP8 GEMM's output dtype, as torch._scaled_mm's:
 * f16 for f16 results, bf16 otherwise */
static inline int
fp8_gemm_bias_row(int out)
{
	return out == GEMM_ROW_F16 ? GEMM_ROW_F16 : GEMM_ROW_BF16;
}

#endif
