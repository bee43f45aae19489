/* gemm.c — the FP8 GEMM through cuBLASLt, and fp8rt_scaled_mm.
 *
 * Row-major D(M,N) = A(M,K) · B(K,N), B stored as (N,K) row-major, is
 * cuBLASLt's column-major "TN" problem D^T(N,M) = B_stored^T · A^T, which is
 * the only FP8 form Hopper supports — exactly what torch._scaled_mm does:
 *   cuBLASLt A := B   rows=K cols=N ld=ldb, transa = T
 *   cuBLASLt B := A   rows=K cols=M ld=lda, transb = N
 *   cuBLASLt C = D    rows=N cols=M ld=ldd (beta = 0)
 *   m = N, n = M, k = K; A_SCALE_POINTER = scale_b, B_SCALE_POINTER = scale_a.
 * The bias (a vector of N) is broadcast along cuBLASLt's rows, which are our
 * columns: CUBLASLT_EPILOGUE_BIAS.
 *
 * A prepared GEMM — the matmul descriptor, the three layouts and the
 * heuristic's algorithm — is kept per problem key (shape, leading dims,
 * dtypes, bias, fast_accum, pointer alignments) in the context; a call only
 * sets the scale and bias pointers on the descriptor and enqueues.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* Everything a cuBLASLt algorithm choice depends on. Compared with memcmp:
 * always zero-filled before it is set. */
typedef struct {
    int64_t m, n, k, lda, ldb, ldd;
    int32_t at, bt, dt, bias_dt, fast_accum;
    uint32_t align_a, align_b, align_d;     /* bytes, 16..256 */
} GemmKey;

struct RtGemmEntry {
    GemmKey key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, ld;      /* cuBLASLt's A (our b), B (our a), C = D */
    cublasLtMatmulAlgo_t algo;
};

static cudaDataType_t cuda_type(fp8rt_dtype dt)
{
    switch (dt) {
    case FP8RT_F8E4M3FN: return CUDA_R_8F_E4M3;
    case FP8RT_F8E5M2: return CUDA_R_8F_E5M2;
    case FP8RT_BF16: return CUDA_R_16BF;
    case FP8RT_F16: return CUDA_R_16F;
    default: return CUDA_R_32F;
    }
}

/* The largest power of two (up to 256) that divides p. */
static uint32_t alignment(CUdeviceptr p)
{
    uint32_t a = 256;
    while (a > 1 && p % a)
        a /= 2;
    return a;
}

/* ---- checks --------------------------------------------------------------- */

static fp8rt_status check_ptr(fp8rt_context *ctx, CUdeviceptr p, const char *what, unsigned align)
{
    if (!p)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_scaled_mm: %s is NULL", what);
    if (p % align)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_scaled_mm: %s (0x%llx) is not %u-byte aligned", what,
                      (unsigned long long)p, align);
    return FP8RT_OK;
}

static fp8rt_status check_ld(fp8rt_context *ctx, const char *what, int64_t ld, int64_t min, size_t esize)
{
    if (ld < min)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_scaled_mm: %s=%lld is less than %lld", what,
                      (long long)ld, (long long)min);
    if ((ld * (int64_t)esize) % 16)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
                      "fp8rt_scaled_mm: %s=%lld: rows must start 16-byte aligned (%s * %zu bytes %% 16 != 0)", what,
                      (long long)ld, what, esize);
    return FP8RT_OK;
}

fp8rt_status rt_gemm_check(fp8rt_context *ctx, const RtGemmCall *g)
{
    char msg[256];
    fp8rt_status st = rt_gemm_rules(g->m, g->n, g->k, g->at, g->bt, g->dt, g->bias_dt, msg, sizeof msg);
    if (st)
        return rt_err(ctx, st, "fp8rt_scaled_mm: %s", msg);
    const fp8rt_device_props *pr = &ctx->props;
    if (pr->cc_major * 10 + pr->cc_minor < 89)
        return rt_err(ctx, FP8RT_UNSUPPORTED, "fp8rt_scaled_mm: FP8 GEMMs need compute capability 8.9 or newer; %s is %d.%d",
                      pr->name, pr->cc_major, pr->cc_minor);
    if ((st = check_ld(ctx, "lda", g->lda, g->k, 1)) || (st = check_ld(ctx, "ldb", g->ldb, g->k, 1)) ||
        (st = check_ld(ctx, "ldd", g->ldd, g->n, rt_dtype_size(g->dt))))
        return st;
    if ((st = check_ptr(ctx, g->a, "a", 16)) || (st = check_ptr(ctx, g->b, "b", 16)) ||
        (st = check_ptr(ctx, g->d, "d", 16)) || (st = check_ptr(ctx, g->scale_a, "scale_a", 4)) ||
        (st = check_ptr(ctx, g->scale_b, "scale_b", 4)) ||
        (g->bias_dt != FP8RT_DTYPE_NONE && (st = check_ptr(ctx, g->bias, "bias", 16))))
        return st;
    return FP8RT_OK;
}

/* ---- prepared GEMMs ------------------------------------------------------- */

static GemmKey key_of(const RtGemmCall *g)
{
    GemmKey k;
    memset(&k, 0, sizeof k);
    k.m = g->m, k.n = g->n, k.k = g->k, k.lda = g->lda, k.ldb = g->ldb, k.ldd = g->ldd;
    k.at = g->at, k.bt = g->bt, k.dt = g->dt, k.bias_dt = g->bias_dt, k.fast_accum = g->fast_accum;
    k.align_a = alignment(g->a), k.align_b = alignment(g->b), k.align_d = alignment(g->d);
    return k;
}

static fp8rt_status entry_free(fp8rt_context *ctx, RtGemmEntry *e, fp8rt_status st)
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

fp8rt_status rt_lt_free(fp8rt_context *ctx, fp8rt_status st)
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

#define SET_DESC(attr, v) CHECK(cublasLtMatmulDescSetAttribute(e->desc, attr, &(v), sizeof(v)))

static fp8rt_status make_descriptors(fp8rt_context *ctx, RtGemmEntry *e)
{
    fp8rt_status st = FP8RT_OK;
    const GemmKey *k = &e->key;
    int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    int8_t fast = (int8_t)k->fast_accum;
    CHECK(cublasLtMatmulDescCreate(&e->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    SET_DESC(CUBLASLT_MATMUL_DESC_TRANSA, ta);
    SET_DESC(CUBLASLT_MATMUL_DESC_TRANSB, tb);
    SET_DESC(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast);
    if (k->bias_dt != FP8RT_DTYPE_NONE) {
        uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
        int32_t bt = cuda_type((fp8rt_dtype)k->bias_dt);
        SET_DESC(CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
        SET_DESC(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bt);
    }
    CHECK(cublasLtMatrixLayoutCreate(&e->la, cuda_type((fp8rt_dtype)k->bt), (uint64_t)k->k, (uint64_t)k->n, k->ldb));
    CHECK(cublasLtMatrixLayoutCreate(&e->lb, cuda_type((fp8rt_dtype)k->at), (uint64_t)k->k, (uint64_t)k->m, k->lda));
    CHECK(cublasLtMatrixLayoutCreate(&e->ld, cuda_type((fp8rt_dtype)k->dt), (uint64_t)k->n, (uint64_t)k->m, k->ldd));
fail:
    return st;
}

#define SET_PREF(attr, v) CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &(v), sizeof(v)))

static fp8rt_status choose_algo(fp8rt_context *ctx, RtGemmEntry *e)
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
    CHECK(cublasLtMatmulAlgoGetHeuristic(ctx->lt, e->desc, e->la, e->lb, e->ld, e->ld, pref, 1, &result, &found));
    if (found == 0) {
        st = rt_err(ctx, FP8RT_UNSUPPORTED,
                    "cuBLASLt has no FP8 algorithm for m=%lld n=%lld k=%lld %s x %s -> %s%s (fast_accum=%d)",
                    (long long)k->m, (long long)k->n, (long long)k->k, rt_dtype_name((fp8rt_dtype)k->at),
                    rt_dtype_name((fp8rt_dtype)k->bt), rt_dtype_name((fp8rt_dtype)k->dt),
                    k->bias_dt ? " + bias" : "", k->fast_accum);
        goto fail;
    }
    e->algo = result.algo;
fail:
    if (pref)
        RELEASE(cublasLtMatmulPreferenceDestroy(pref));
    return st;
}

fp8rt_status rt_lt_init(fp8rt_context *ctx)
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
static fp8rt_status lookup(fp8rt_context *ctx, const RtGemmCall *g, RtGemmEntry **out)
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
    if (ctx->ngemms == ctx->capgemms) {
        int cap = ctx->capgemms ? 2 * ctx->capgemms : 8;
        RtGemmEntry *ng = realloc(ctx->gemms, (size_t)cap * sizeof *ng);
        if (!ng)
            return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "fp8rt_scaled_mm: out of host memory");
        ctx->gemms = ng;
        ctx->capgemms = cap;
    }
    RtGemmEntry *e = &ctx->gemms[ctx->ngemms];
    memset(e, 0, sizeof *e);
    e->key = key;
    st = make_descriptors(ctx, e);
    if (st == FP8RT_OK)
        st = choose_algo(ctx, e);
    if (st != FP8RT_OK)
        return entry_free(ctx, e, st);
    ctx->ngemms++;
    *out = e;
    return FP8RT_OK;
}

fp8rt_status rt_gemm_prepare(fp8rt_context *ctx, const RtGemmCall *g)
{
    RtGemmEntry *e;
    return lookup(ctx, g, &e);
}

fp8rt_status rt_gemm_enqueue(fp8rt_context *ctx, const RtGemmCall *g, CUstream stream)
{
    RtGemmEntry *e;
    fp8rt_status st = lookup(ctx, g, &e);
    const float one = 1.0f, zero = 0.0f;
    void *sa = (void *)(uintptr_t)g->scale_b, *sb = (void *)(uintptr_t)g->scale_a;
    void *bias = (void *)(uintptr_t)g->bias;
    void *ws = (void *)(uintptr_t)ctx->lt_ws;
    void *d = (void *)(uintptr_t)g->d;
    if (st != FP8RT_OK)
        return st;
    SET_DESC(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sa);
    SET_DESC(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sb);
    if (g->bias_dt != FP8RT_DTYPE_NONE)
        SET_DESC(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    CHECK(cublasLtMatmul(ctx->lt, e->desc, &one, (const void *)(uintptr_t)g->b, e->la, (const void *)(uintptr_t)g->a,
                         e->lb, &zero, d, e->ld, d, e->ld, &e->algo, ws, RT_LT_WORKSPACE, (cudaStream_t)stream));
fail:
    return st;
}

/* ---- the public entry ------------------------------------------------------ */

/* The first GEMM of a context allocates cuBLASLt's workspace, which a stream
 * capture does not allow: say so instead of failing inside the capture. */
static fp8rt_status first_use(fp8rt_context *ctx, CUstream stream)
{
    fp8rt_status st = FP8RT_OK;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    if (ctx->lt)
        return FP8RT_OK;
    CHECK(drv.cuStreamIsCapturing(stream, &cs));
    if (cs != CU_STREAM_CAPTURE_STATUS_NONE)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
                      "fp8rt_scaled_mm: the first GEMM of a context allocates cuBLASLt's workspace, which a stream "
                      "capture does not allow: call it once before capturing");
    return rt_lt_init(ctx);
fail:
    return st;
}

fp8rt_status fp8rt_scaled_mm(fp8rt_context *ctx, const fp8rt_scaled_mm_args *args, void *stream)
{
    if (!ctx || !args)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_scaled_mm: %s is NULL", ctx ? "args" : "ctx");
    RtGemmCall g = {
        .m = args->m, .n = args->n, .k = args->k,
        .lda = args->lda ? args->lda : args->k,
        .ldb = args->ldb ? args->ldb : args->k,
        .ldd = args->ldd ? args->ldd : args->n,
        .at = args->a_dtype, .bt = args->b_dtype, .dt = args->d_dtype,
        .bias_dt = !args->bias ? FP8RT_DTYPE_NONE
                   : args->bias_dtype ? args->bias_dtype : rt_gemm_bias_dtype(args->d_dtype),
        .fast_accum = args->fast_accum != 0,
        .a = (CUdeviceptr)(uintptr_t)args->a, .b = (CUdeviceptr)(uintptr_t)args->b,
        .d = (CUdeviceptr)(uintptr_t)args->d, .bias = (CUdeviceptr)(uintptr_t)args->bias,
        .scale_a = (CUdeviceptr)(uintptr_t)args->scale_a, .scale_b = (CUdeviceptr)(uintptr_t)args->scale_b,
    };
    fp8rt_status st = rt_gemm_check(ctx, &g);
    if (st != FP8RT_OK || g.m == 0 || g.n == 0)
        return st;
    if ((st = rt_enter(ctx)) != FP8RT_OK)
        return st;
    st = first_use(ctx, (CUstream)stream);
    if (st == FP8RT_OK)
        st = rt_gemm_enqueue(ctx, &g, (CUstream)stream);
    return rt_leave(ctx, st);
}
