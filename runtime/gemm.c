/* gemm.c — GEMMs through cuBLASLt: the plan's gemm steps, fp8rt_scaled_mm
 * and fp8rt_matmul.
 *
 * Row-major D(M,N) = op(A) · op(B) is cuBLASLt's column-major problem
 * D^T(N,M) = op(B)^T · op(A)^T: a row-major matrix is its transpose in
 * column-major, so the operands swap and keep their bytes:
 *   cuBLASLt A := B   trans_b: rows=K cols=N, transa = T; else rows=N cols=K, N
 *   cuBLASLt B := A   trans_a: rows=M cols=K, transb = T; else rows=K cols=M, N
 *   cuBLASLt C = D    rows=N cols=M ld=ldd (beta = 0)
 *   m = N, n = M, k = K; batches by BATCH_COUNT and STRIDED_BATCH_OFFSET.
 * FP8 is the TN case only (B stored (N,K), trans_b; Hopper has no other FP8
 * form), as torch._scaled_mm: A_SCALE_POINTER = scale_b, B_SCALE_POINTER =
 * scale_a. Row-wise scales are cuBLASLt's OUTER_VEC_32F on both: cuBLASLt's
 * A scale is a vector of its m = our N (scale_b, one per column of D), its B
 * scale one of its n = our M (scale_a, one per row). The bias (a vector of N) is broadcast along cuBLASLt's rows, which
 * are our columns: the BIAS epilogues, with RELU or GELU when asked for;
 * GELU_AUX's pre-activation is laid out as D (EPILOGUE_AUX_LD = ldd).
 * Float GEMMs compute in f32 (f64 for f64), no TF32.
 *
 * A prepared GEMM — the matmul descriptor, the three layouts and the
 * heuristic's algorithm — is kept per problem key (shape, leading dims,
 * batch and strides, dtypes, transposes, epilogue, bias, fast_accum, pointer
 * alignments) in the context; a call only sets the scale and bias pointers
 * on the descriptor and enqueues.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* Everything a cuBLASLt algorithm choice depends on. Compared with memcmp:
 * always zero-filled before it is set. */
typedef struct {
	int64_t m, n, k, batch, lda, ldb, ldd, stride_a, stride_b, stride_d;
	int32_t at, bt, dt, bias_dt, fast_accum, trans_a, trans_b, scaled, epilogue, scale_mode;
	uint32_t align_a, align_b, align_d, align_aux; /* bytes, 1..256 */
} GemmKey;

struct RtGemmEntry {
	GemmKey key;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, ld; /* cuBLASLt's A (our b), B (our a), C = D */
	cublasLtMatmulAlgo_t algo;
};

static cudaDataType_t
cuda_type(fp8rt_dtype dt)
{
	switch (dt) {
	case FP8RT_F8E4M3FN: return CUDA_R_8F_E4M3;
	case FP8RT_F8E5M2:   return CUDA_R_8F_E5M2;
	case FP8RT_BF16:     return CUDA_R_16BF;
	case FP8RT_F16:      return CUDA_R_16F;
	case FP8RT_F64:      return CUDA_R_64F;
	default:             return CUDA_R_32F;
	}
}

/* The largest power of two (up to 256) that divides p, and every batch
 * entry's start p + i * stride elements. */
static uint32_t
alignment(CUdeviceptr p, int64_t batch, int64_t stride, fp8rt_dtype dt)
{
	uint64_t bytes = batch > 1 ? (uint64_t)stride * rt_dtype_size(dt) : 0;
	uint32_t a = 256;
	while (a > 1 && (p % a || bytes % a))
		a /= 2;
	return a;
}

/* ---- checks --------------------------------------------------------------- */

static fp8rt_status
check_ptr(fp8rt_context *ctx, const char *what, CUdeviceptr p, const char *name, unsigned align)
{
	if (!p)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s is NULL", what, name);
	if (p % align)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s (0x%llx) is not %u-byte aligned", what, name,
			(unsigned long long)p, align);
	return FP8RT_OK;
}

/* ld >= min; with `rows16`, rows start 16-byte aligned (FP8) */
static fp8rt_status
check_ld(fp8rt_context *ctx, const char *what, const char *name, int64_t ld, int64_t min, size_t esize, int rows16)
{
	if (ld < min || ld < 1)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s=%lld is less than %lld", what, name, (long long)ld,
			(long long)(min > 1 ? min : 1));
	if (rows16 && (ld * (int64_t)esize) % 16)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"%s: %s=%lld: rows must start 16-byte aligned (%s * %zu bytes %% 16 != 0)", what, name,
			(long long)ld, name, esize);
	return FP8RT_OK;
}

static fp8rt_status
check_scaled(fp8rt_context *ctx, const RtGemmCall *g, const char *what)
{
	char msg[256];
	fp8rt_status st = rt_gemm_rules(g->m, g->n, g->k, g->at, g->bt, g->dt, g->bias_dt, msg, sizeof msg);
	if (st)
		return rt_err(ctx, st, "%s: %s", what, msg);
	const fp8rt_device_props *pr = &ctx->props;
	if (pr->cc_major * 10 + pr->cc_minor < 89)
		return rt_err(ctx, FP8RT_UNSUPPORTED, "%s: FP8 GEMMs need compute capability 8.9 or newer; %s is %d.%d",
			what, pr->name, pr->cc_major, pr->cc_minor);
	if ((st = check_ld(ctx, what, "lda", g->lda, g->k, 1, 1)) ||
		(st = check_ld(ctx, what, "ldb", g->ldb, g->k, 1, 1)) ||
		(st = check_ld(ctx, what, "ldd", g->ldd, g->n, rt_dtype_size(g->dt), 1)))
		return st;
	if (g->scale_mode == FP8RT_SCALE_BLOCK && (st = rt_block_rules(g->m, g->k, g->fast_accum, msg, sizeof msg)))
		return rt_err(ctx, st, "%s: %s", what, msg);
	unsigned sal = g->scale_mode == FP8RT_SCALE_BLOCK ? 16 : 4;
	if ((st = check_ptr(ctx, what, g->a, "a", 16)) || (st = check_ptr(ctx, what, g->b, "b", 16)) ||
		(st = check_ptr(ctx, what, g->d, "d", 16)) || (st = check_ptr(ctx, what, g->scale_a, "scale_a", sal)) ||
		(st = check_ptr(ctx, what, g->scale_b, "scale_b", sal)) ||
		(g->bias_dt != FP8RT_DTYPE_NONE && (st = check_ptr(ctx, what, g->bias, "bias", 16))))
		return st;
	return FP8RT_OK;
}

static fp8rt_status
check_float(fp8rt_context *ctx, const RtGemmCall *g, const char *what)
{
	char msg[256];
	size_t es = rt_dtype_size(g->dt);
	fp8rt_status st = rt_matmul_rules(g->m, g->n, g->k, g->batch, g->at, g->bt, g->dt, msg, sizeof msg);
	if (st)
		return rt_err(ctx, st, "%s: %s", what, msg);
	if ((unsigned)g->epilogue > RT_EPI_GELU_AUX)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: epilogue %d is not one of none, relu, gelu, gelu_aux",
			what, (int)g->epilogue);
	if (g->epilogue != RT_EPI_GELU_AUX && g->aux)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: aux is given, but the epilogue is not gelu_aux", what);
	if (g->bias_dt != FP8RT_DTYPE_NONE && g->bias_dt != g->dt)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: the bias is %s, the GEMM %s: they must be one dtype",
			what, rt_dtype_name(g->bias_dt), rt_dtype_name(g->dt));
	if ((st = check_ld(ctx, what, "lda", g->lda, g->trans_a ? g->m : g->k, es, 0)) ||
		(st = check_ld(ctx, what, "ldb", g->ldb, g->trans_b ? g->k : g->n, es, 0)) ||
		(st = check_ld(ctx, what, "ldd", g->ldd, g->n, es, 0)))
		return st;
	if (g->stride_a < 0 || g->stride_b < 0 || g->stride_d < 0)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: a batch stride is negative", what);
	if (g->batch > 1 && g->stride_d < g->m * g->ldd)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"%s: stride_d=%lld is less than m*ldd=%lld: the batch entries of d would overlap", what,
			(long long)g->stride_d, (long long)(g->m * g->ldd));
	if ((st = check_ptr(ctx, what, g->a, "a", (unsigned)es)) ||
		(st = check_ptr(ctx, what, g->b, "b", (unsigned)es)) ||
		(st = check_ptr(ctx, what, g->d, "d", (unsigned)es)) ||
		(g->bias_dt != FP8RT_DTYPE_NONE && (st = check_ptr(ctx, what, g->bias, "bias", (unsigned)es))) ||
		(g->epilogue == RT_EPI_GELU_AUX && (st = check_ptr(ctx, what, g->aux, "aux", (unsigned)es))))
		return st;
	return FP8RT_OK;
}

fp8rt_status
rt_gemm_check(fp8rt_context *ctx, const RtGemmCall *g, const char *what)
{
	return g->scaled ? check_scaled(ctx, g, what) : check_float(ctx, g, what);
}

/* ---- prepared GEMMs ------------------------------------------------------- */

static GemmKey
key_of(const RtGemmCall *g)
{
	GemmKey k;
	memset(&k, 0, sizeof k);
	k.m = g->m, k.n = g->n, k.k = g->k, k.batch = g->batch, k.lda = g->lda, k.ldb = g->ldb, k.ldd = g->ldd;
	k.stride_a = g->stride_a, k.stride_b = g->stride_b, k.stride_d = g->stride_d;
	k.at = g->at, k.bt = g->bt, k.dt = g->dt, k.bias_dt = g->bias_dt, k.fast_accum = g->fast_accum;
	k.trans_a = g->trans_a, k.trans_b = g->trans_b, k.scaled = g->scaled, k.epilogue = (int32_t)g->epilogue;
	k.scale_mode = g->scaled ? (int32_t)g->scale_mode : 0;
	k.align_a = alignment(g->a, g->batch, g->stride_a, g->at);
	k.align_b = alignment(g->b, g->batch, g->stride_b, g->bt);
	k.align_d = alignment(g->d, g->batch, g->stride_d, g->dt);
	k.align_aux = g->epilogue == RT_EPI_GELU_AUX ? alignment(g->aux, g->batch, g->stride_d, g->dt) : 0;
	return k;
}

static fp8rt_status
entry_free(fp8rt_context *ctx, RtGemmEntry *e, fp8rt_status st)
{
	if (e->desc)
		RELEASE(cublasLtMatmulDescDestroy(e->desc));
	if (e->la)
		RELEASE(cublasLtMatrixLayoutDestroy(e->la));
	if (e->lb)
		RELEASE(cublasLtMatrixLayoutDestroy(e->lb));
	if (e->ld)
		RELEASE(cublasLtMatrixLayoutDestroy(e->ld));
	memset(e, 0, sizeof *e);
	return st;
}

fp8rt_status
rt_lt_free(fp8rt_context *ctx, fp8rt_status st)
{
	for (int i = 0; i < ctx->ngemms; i++)
		st = entry_free(ctx, &ctx->gemms[i], st);
	free(ctx->gemms);
	ctx->gemms = NULL;
	ctx->ngemms = ctx->capgemms = 0;
	if (ctx->lt_ws)
		RELEASE(drv.cuMemFree(ctx->lt_ws));
	if (ctx->lt)
		RELEASE(cublasLtDestroy(ctx->lt));
	ctx->lt_ws = 0;
	ctx->lt = NULL;
	return st;
}

#define SET_DESC(attr, v)      CHECK(cublasLtMatmulDescSetAttribute(e->desc, attr, &(v), sizeof(v)))
#define SET_LAYOUT(l, attr, v) CHECK(cublasLtMatrixLayoutSetAttribute(l, attr, &(v), sizeof(v)))

static uint32_t
epilogue_of(const GemmKey *k)
{
	int bias = k->bias_dt != FP8RT_DTYPE_NONE;
	switch ((RtEpilogue)k->epilogue) {
	case RT_EPI_RELU:     return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
	case RT_EPI_GELU:     return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
	case RT_EPI_GELU_AUX: return bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
	default:              return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
	}
}

static fp8rt_status
make_layout(fp8rt_context *ctx, cublasLtMatrixLayout_t *l, fp8rt_dtype dt, int64_t rows, int64_t cols, int64_t ld,
	int64_t batch, int64_t stride)
{
	fp8rt_status st = FP8RT_OK;
	int32_t count = (int32_t)batch;
	CHECK(cublasLtMatrixLayoutCreate(l, cuda_type(dt), (uint64_t)rows, (uint64_t)cols, ld));
	if (batch > 1) {
		SET_LAYOUT(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, count);
		SET_LAYOUT(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
	}
fail:
	return st;
}

/* e's descriptors, for the first call g of its key */
static fp8rt_status
make_descriptors(fp8rt_context *ctx, RtGemmEntry *e, const RtGemmCall *g)
{
	fp8rt_status st = FP8RT_OK;
	const GemmKey *k = &e->key;
	int f64 = k->dt == FP8RT_F64;
	int32_t ta = k->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	uint32_t epi = epilogue_of(k);
	int8_t fast = (int8_t)k->fast_accum;
	CHECK(cublasLtMatmulDescCreate(
		&e->desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F));
	SET_DESC(CUBLASLT_MATMUL_DESC_TRANSA, ta);
	SET_DESC(CUBLASLT_MATMUL_DESC_TRANSB, tb);
	if (k->scaled)
		SET_DESC(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast);
	if (k->scaled && k->scale_mode != FP8RT_SCALE_TENSOR) {
		/* cuBLASLt's A is our b: its 128x128 blocks; its B our a */
		int32_t ma = k->scale_mode == FP8RT_SCALE_ROW ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
							      : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
		int32_t mb = k->scale_mode == FP8RT_SCALE_ROW ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
							      : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
		/* a scale mode other than the scalar one wants its scale pointers
		 * set when the heuristic runs (cuBLASLt answers INVALID_VALUE
		 * without them); each call sets the real ones, until then they
		 * point at the workspace */
		void *placeholder = (void *)(uintptr_t)ctx->lt_ws;
		SET_DESC(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, ma);
		SET_DESC(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mb);
		SET_DESC(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, placeholder);
		SET_DESC(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, placeholder);
	}
	if (epi != CUBLASLT_EPILOGUE_DEFAULT)
		SET_DESC(CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
	if (k->epilogue == RT_EPI_GELU_AUX) {
		/* each call sets its pointer, as the bias's; the heuristic sees
		 * this one's (the key holds its alignment) */
		void *aux = (void *)(uintptr_t)g->aux;
		int64_t ld = k->ldd, stride = k->batch > 1 ? k->stride_d : 0;
		SET_DESC(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
		SET_DESC(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, ld);
		if (k->batch > 1)
			SET_DESC(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, stride);
	}
	if (k->scaled && k->bias_dt != FP8RT_DTYPE_NONE) {
		int32_t bt = cuda_type((fp8rt_dtype)k->bias_dt);
		SET_DESC(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bt);
	}
	if ((st = make_layout(ctx, &e->la, (fp8rt_dtype)k->bt, k->trans_b ? k->k : k->n, k->trans_b ? k->n : k->k,
		     k->ldb, k->batch, k->stride_b)) ||
		(st = make_layout(ctx, &e->lb, (fp8rt_dtype)k->at, k->trans_a ? k->m : k->k, k->trans_a ? k->k : k->m,
			 k->lda, k->batch, k->stride_a)) ||
		(st = make_layout(ctx, &e->ld, (fp8rt_dtype)k->dt, k->n, k->m, k->ldd, k->batch, k->stride_d)))
		goto fail;
fail:
	return st;
}

#define SET_PREF(attr, v) CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &(v), sizeof(v)))

static fp8rt_status
choose_algo(fp8rt_context *ctx, RtGemmEntry *e)
{
	fp8rt_status st = FP8RT_OK;
	const GemmKey *k = &e->key;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t result;
	int found = 0;
	uint64_t ws = RT_LT_WORKSPACE;
	memset(&result, 0, sizeof result);
	CHECK(cublasLtMatmulPreferenceCreate(&pref));
	SET_PREF(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws);
	SET_PREF(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, k->align_b);
	SET_PREF(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, k->align_a);
	SET_PREF(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, k->align_d);
	SET_PREF(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, k->align_d);
	cublasStatus_t hs =
		cublasLtMatmulAlgoGetHeuristic(ctx->lt, e->desc, e->la, e->lb, e->ld, e->ld, pref, 1, &result, &found);
	/* outer-vector or block scales that this cuBLASLt or device does not
	 * take (on the H200, cuBLASLt 13.1 answered INVALID_VALUE to
	 * outer-vector scales while their pointers were unset at this point,
	 * docs/gpu-results.md): no algorithm, said so */
	if (k->scale_mode != FP8RT_SCALE_TENSOR &&
		(hs == CUBLAS_STATUS_INVALID_VALUE || hs == CUBLAS_STATUS_NOT_SUPPORTED))
		hs = CUBLAS_STATUS_SUCCESS, found = 0;
	if (hs != CUBLAS_STATUS_SUCCESS) {
		st = RT_FAILED(hs, "cublasLtMatmulAlgoGetHeuristic(ctx->lt, e->desc, ...)", (int)hs);
		goto fail;
	}
	if (found == 0) {
		st = rt_err(ctx, FP8RT_UNSUPPORTED,
			"cuBLASLt has no algorithm for m=%lld n=%lld k=%lld batch=%lld %s%s x %s%s -> %s%s%s "
			"(fast_accum=%d%s)",
			(long long)k->m, (long long)k->n, (long long)k->k, (long long)k->batch,
			rt_dtype_name((fp8rt_dtype)k->at), k->trans_a ? "^T" : "", rt_dtype_name((fp8rt_dtype)k->bt),
			k->trans_b ? "^T" : "", rt_dtype_name((fp8rt_dtype)k->dt), k->bias_dt ? " + bias" : "",
			k->epilogue == RT_EPI_RELU               ? ", relu"
				: k->epilogue == RT_EPI_GELU     ? ", gelu"
				: k->epilogue == RT_EPI_GELU_AUX ? ", gelu_aux"
								 : "",
			k->fast_accum,
			k->scale_mode == FP8RT_SCALE_ROW ? ", row-wise scales: this cuBLASLt has no outer-vector "
							   "scaling for them on this device"
				: k->scale_mode == FP8RT_SCALE_BLOCK
				? ", block-wise scales: this cuBLASLt has no 1x128/128x128 "
				  "block scaling for them on this device"
				: "");
		goto fail;
	}
	e->algo = result.algo;
fail:
	if (pref)
		RELEASE(cublasLtMatmulPreferenceDestroy(pref));
	return st;
}

fp8rt_status
rt_lt_init(fp8rt_context *ctx)
{
	fp8rt_status st = FP8RT_OK;
	if (ctx->lt)
		return FP8RT_OK;
	CHECK(drv.cuMemAlloc(&ctx->lt_ws, RT_LT_WORKSPACE));
	CHECK(cublasLtCreate(&ctx->lt));
	return FP8RT_OK;
fail:
	if (ctx->lt_ws)
		RELEASE(drv.cuMemFree(ctx->lt_ws));
	ctx->lt_ws = 0;
	ctx->lt = NULL;
	return st;
}

/* The prepared GEMM for g's key, made now if it is not there. */
static fp8rt_status
lookup(fp8rt_context *ctx, const RtGemmCall *g, RtGemmEntry **out)
{
	GemmKey key = key_of(g);
	fp8rt_status st = rt_lt_init(ctx);
	if (st != FP8RT_OK)
		return st;
	for (int i = 0; i < ctx->ngemms; i++)
		if (memcmp(&ctx->gemms[i].key, &key, sizeof key) == 0) {
			*out = &ctx->gemms[i];
			return FP8RT_OK;
		}
	if (rt_grow((void **)&ctx->gemms, ctx->ngemms, &ctx->capgemms, sizeof *ctx->gemms))
		return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "gemm: out of host memory");
	RtGemmEntry *e = &ctx->gemms[ctx->ngemms];
	memset(e, 0, sizeof *e);
	e->key = key;
	st = make_descriptors(ctx, e, g);
	if (st == FP8RT_OK)
		st = choose_algo(ctx, e);
	if (st != FP8RT_OK)
		return entry_free(ctx, e, st);
	ctx->ngemms++;
	*out = e;
	return FP8RT_OK;
}

fp8rt_status
rt_gemm_prepare(fp8rt_context *ctx, const RtGemmCall *g)
{
	RtGemmEntry *e;
	return lookup(ctx, g, &e);
}

fp8rt_status
rt_gemm_enqueue(fp8rt_context *ctx, const RtGemmCall *g, CUstream stream)
{
	RtGemmEntry *e;
	fp8rt_status st = lookup(ctx, g, &e);
	const float one = 1.0f, zero = 0.0f;
	const double one64 = 1.0, zero64 = 0.0;
	int f64 = g->dt == FP8RT_F64;
	void *sa = (void *)(uintptr_t)g->scale_b, *sb = (void *)(uintptr_t)g->scale_a;
	void *bias = (void *)(uintptr_t)g->bias, *aux = (void *)(uintptr_t)g->aux;
	void *ws = (void *)(uintptr_t)ctx->lt_ws;
	void *d = (void *)(uintptr_t)g->d;
	if (st != FP8RT_OK)
		return st;
	if (g->scaled) {
		SET_DESC(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sa);
		SET_DESC(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sb);
	}
	if (g->bias_dt != FP8RT_DTYPE_NONE)
		SET_DESC(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
	if (g->epilogue == RT_EPI_GELU_AUX)
		SET_DESC(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
	CHECK(cublasLtMatmul(ctx->lt, e->desc, f64 ? (const void *)&one64 : (const void *)&one,
		(const void *)(uintptr_t)g->b, e->la, (const void *)(uintptr_t)g->a, e->lb,
		f64 ? (const void *)&zero64 : (const void *)&zero, d, e->ld, d, e->ld, &e->algo, ws, RT_LT_WORKSPACE,
		(cudaStream_t)stream));
fail:
	return st;
}

/* ---- the public entry ------------------------------------------------------ */

/* The first GEMM of a context allocates cuBLASLt's workspace, which a stream
 * capture does not allow: say so instead of failing inside the capture. */
static fp8rt_status
first_use(fp8rt_context *ctx, CUstream stream, const char *what)
{
	fp8rt_status st = FP8RT_OK;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (ctx->lt)
		return FP8RT_OK;
	CHECK(drv.cuStreamIsCapturing(stream, &cs));
	if (cs != CU_STREAM_CAPTURE_STATUS_NONE)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"%s: the first GEMM of a context allocates cuBLASLt's workspace, which a stream "
			"capture does not allow: call it once before capturing",
			what);
	return rt_lt_init(ctx);
fail:
	return st;
}

/* Check, then enqueue (the context pushed around it). */
static fp8rt_status
direct(fp8rt_context *ctx, const RtGemmCall *g, void *stream, const char *what)
{
	fp8rt_status st = rt_gemm_check(ctx, g, what);
	if (st != FP8RT_OK || g->m == 0 || g->n == 0)
		return st;
	if ((st = rt_enter(ctx, what)) != FP8RT_OK)
		return st;
	st = first_use(ctx, (CUstream)stream, what);
	if (st == FP8RT_OK)
		st = rt_gemm_enqueue(ctx, g, (CUstream)stream);
	return rt_leave(ctx, st);
}

static RtGemmCall
scaled_call(const fp8rt_scaled_mm_args *args, fp8rt_scale_mode mode)
{
	return (RtGemmCall){
		.m = args->m,
		.n = args->n,
		.k = args->k,
		.batch = 1,
		.trans_b = 1,
		.scaled = 1,
		.lda = args->lda ? args->lda : args->k,
		.ldb = args->ldb ? args->ldb : args->k,
		.ldd = args->ldd ? args->ldd : args->n,
		.at = args->a_dtype,
		.bt = args->b_dtype,
		.dt = args->d_dtype,
		.bias_dt = !args->bias     ? FP8RT_DTYPE_NONE
			: args->bias_dtype ? args->bias_dtype
					   : rt_gemm_bias_dtype(args->d_dtype),
		.fast_accum = args->fast_accum != 0,
		.a = (CUdeviceptr)(uintptr_t)args->a,
		.b = (CUdeviceptr)(uintptr_t)args->b,
		.d = (CUdeviceptr)(uintptr_t)args->d,
		.bias = (CUdeviceptr)(uintptr_t)args->bias,
		.scale_a = (CUdeviceptr)(uintptr_t)args->scale_a,
		.scale_b = (CUdeviceptr)(uintptr_t)args->scale_b,
		.scale_mode = mode,
	};
}

fp8rt_status
fp8rt_scaled_mm(fp8rt_context *ctx, const fp8rt_scaled_mm_args *args, void *stream)
{
	if (!ctx || !args)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_scaled_mm: %s is NULL", ctx ? "args" : "ctx");
	RtGemmCall g = scaled_call(args, FP8RT_SCALE_TENSOR);
	return direct(ctx, &g, stream, "fp8rt_scaled_mm");
}

fp8rt_status
fp8rt_scaled_mm_ex(fp8rt_context *ctx, const fp8rt_scaled_mm_ex_args *args, void *stream)
{
	if (!ctx || !args)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_scaled_mm_ex: %s is NULL", ctx ? "args" : "ctx");
	if (args->size < sizeof *args)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"fp8rt_scaled_mm_ex: args->size is %zu; set it to "
			"sizeof(fp8rt_scaled_mm_ex_args), %zu",
			args->size, sizeof *args);
	if ((unsigned)args->scale_mode > FP8RT_SCALE_BLOCK)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"fp8rt_scaled_mm_ex: scale_mode %d is not one of "
			"FP8RT_SCALE_TENSOR, FP8RT_SCALE_ROW, FP8RT_SCALE_BLOCK",
			(int)args->scale_mode);
	RtGemmCall g = scaled_call(&args->mm, args->scale_mode);
	return direct(ctx, &g, stream, "fp8rt_scaled_mm_ex");
}

fp8rt_status
fp8rt_matmul(fp8rt_context *ctx, const fp8rt_matmul_args *args, void *stream)
{
	if (!ctx || !args)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_matmul: %s is NULL", ctx ? "args" : "ctx");
	/* a 0.6 caller's struct ends before aux */
	size_t v06 = offsetof(fp8rt_matmul_args, aux);
	if (args->size < v06 || (args->size < sizeof *args && args->epilogue == FP8RT_EPILOGUE_GELU_AUX))
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"fp8rt_matmul: args->size is %zu; set it to "
			"sizeof(fp8rt_matmul_args), %zu%s",
			args->size, sizeof *args,
			args->size >= v06 ? " (the gelu_aux epilogue's aux is after it)" : "");
	int ta = args->trans_a != 0, tb = args->trans_b != 0;
	RtGemmCall g = {
		.m = args->m,
		.n = args->n,
		.k = args->k,
		.batch = args->batch ? args->batch : 1,
		.lda = args->lda ? args->lda
			: ta     ? args->m
				 : args->k,
		.ldb = args->ldb ? args->ldb
			: tb     ? args->k
				 : args->n,
		.ldd = args->ldd ? args->ldd : args->n,
		.stride_a = args->stride_a,
		.stride_b = args->stride_b,
		.stride_d = args->stride_d,
		.trans_a = ta,
		.trans_b = tb,
		.epilogue = (RtEpilogue)args->epilogue,
		.at = args->dtype,
		.bt = args->dtype,
		.dt = args->dtype,
		.bias_dt = args->bias ? args->dtype : FP8RT_DTYPE_NONE,
		.a = (CUdeviceptr)(uintptr_t)args->a,
		.b = (CUdeviceptr)(uintptr_t)args->b,
		.d = (CUdeviceptr)(uintptr_t)args->d,
		.bias = (CUdeviceptr)(uintptr_t)args->bias,
		.aux = args->size >= sizeof *args ? (CUdeviceptr)(uintptr_t)args->aux : 0,
	};
	return direct(ctx, &g, stream, "fp8rt_matmul");
}
