/* mock_cublaslt.c — a fake cuBLASLt for the fault-injection tests.
 *
 * libfp8rt links cuBLASLt; the fault tests' executable defines every
 * cuBLASLt entry libfp8rt calls, and the dynamic linker binds libfp8rt's
 * calls to these (the executable comes first in the lookup), so no test
 * needs a GPU. Descriptors, layouts and preferences record what was set; a
 * matmul computes on the host, f32 accumulation, as a host operation on the
 * mock driver's stream (mockcuda_host_op), so it lands in a graph being
 * captured like any kernel. Every entry but the two status-string lookups
 * goes through the mock driver's fault injection (mockcuda_fault): a failed
 * call returns CUBLAS_STATUS_INTERNAL_ERROR; a failed destroy destroys all
 * the same. mocklt_live counts the objects alive.
 *
 * Shapes and types (cuBLASLt's column-major view, as runtime/gemm.c calls
 * it): A (rows k, cols m) with transa = T, B (rows k, cols n), D (rows m,
 * cols n); A and B fp8, D bf16, f16 or f32; scales f32 device scalars; bias a
 * vector of m in bias_type. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda.h>

#include "rt_test.h"
#include "mock_cublaslt.h"

#define INJECTED CUBLAS_STATUS_INTERNAL_ERROR

static struct {
    int handles, descs, layouts, prefs;
} live;

void mocklt_live(int out[4])
{
    int v[4] = {live.handles, live.descs, live.layouts, live.prefs};
    memcpy(out, v, sizeof v);
}

/* The mock driver, as libfp8rt loaded it. */
static void *driver(const char *name)
{
    static void *h;
    if (!h && !(h = dlopen(MOCKCUDA_PATH, RTLD_NOW)))
        abort();
    void *f = dlsym(h, name);
    if (!f)
        abort();
    return f;
}

static int fault(const char *name)
{
    int (*f)(const char *) = (int (*)(const char *))(uintptr_t)driver("mockcuda_fault");
    return f(name);
}

#define FAULT()                     \
    do {                            \
        if (fault(__func__))        \
            return INJECTED;        \
    } while (0)
#define FAULT_AFTER() int failed_ = fault(__func__)
#define DONE() return failed_ ? INJECTED : CUBLAS_STATUS_SUCCESS

typedef struct {
    int32_t transa, transb, epilogue, bias_type;
    const float *scale_a, *scale_b;
    const void *bias;
} Desc;

typedef struct {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
} Layout;

struct cublasLtContext {
    int unused;
};

/* ---- handles, descriptors, layouts, preferences -------------------------- */

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *h)
{
    FAULT();
    *h = calloc(1, sizeof **h);
    live.handles++;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t h)
{
    FAULT_AFTER();
    free(h);
    live.handles--;
    DONE();
}

const char *CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t s)
{
    return s == INJECTED ? "CUBLAS_STATUS_INTERNAL_ERROR" : "CUBLAS_STATUS_MOCK";
}

const char *CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t s)
{
    return s == INJECTED ? "injected by the mock" : "mock status";
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                                     cudaDataType_t scale)
{
    FAULT();
    if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    *d = calloc(1, sizeof(Desc));
    live.descs++;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    FAULT_AFTER();
    free(d);
    live.descs--;
    DONE();
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                                           const void *buf, size_t n)
{
    Desc *x = (Desc *)(void *)d;
    FAULT();
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: memcpy(&x->transa, buf, n < 4 ? n : 4); break;
    case CUBLASLT_MATMUL_DESC_TRANSB: memcpy(&x->transb, buf, n < 4 ? n : 4); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: memcpy(&x->epilogue, buf, n < 4 ? n : 4); break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: memcpy(&x->bias_type, buf, n < 4 ? n : 4); break;
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER: memcpy(&x->scale_a, buf, sizeof x->scale_a); break;
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER: memcpy(&x->scale_b, buf, sizeof x->scale_b); break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: memcpy(&x->bias, buf, sizeof x->bias); break;
    default: break;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld)
{
    FAULT();
    Layout *x = malloc(sizeof *x);
    *x = (Layout){type, rows, cols, ld};
    *l = (cublasLtMatrixLayout_t)(void *)x;
    live.layouts++;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    FAULT_AFTER();
    free(l);
    live.layouts--;
    DONE();
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    FAULT();
    *p = calloc(1, sizeof **p);
    live.prefs++;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    FAULT_AFTER();
    free(p);
    live.prefs--;
    DONE();
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                                 cublasLtMatmulPreferenceAttributes_t a,
                                                                 const void *buf, size_t n)
{
    (void)p, (void)a, (void)buf, (void)n;
    FAULT();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                                           cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                           cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
                                                           cublasLtMatmulPreference_t p, int want,
                                                           cublasLtMatmulHeuristicResult_t results[], int *found)
{
    (void)h, (void)d, (void)a, (void)b, (void)c, (void)dl, (void)p;
    FAULT();
    memset(results, 0, sizeof *results);
    *found = want > 0;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- the matmul ------------------------------------------------------------ */

typedef struct {
    Desc desc;
    Layout a, b, d;
    const uint8_t *pa, *pb;
    void *pd;
    float alpha;
} Call;

static double fp8_value(uint8_t v, cudaDataType t)
{
    return fp8_decode(v, t == CUDA_R_8F_E4M3 ? FP8RT_F8E4M3FN : FP8RT_F8E5M2);
}

static float bias_value(const Call *c, uint64_t i)
{
    uint16_t v;
    memcpy(&v, (const char *)c->desc.bias + 2 * i, 2);
    return (float)(c->desc.bias_type == CUDA_R_16F ? f16_decode(v) : bf16_decode(v));
}

static void store(const Call *c, uint64_t i, float v)
{
    char *p = (char *)c->pd;
    uint16_t h;
    switch (c->d.type) {
    case CUDA_R_32F: memcpy(p + 4 * i, &v, 4); return;
    case CUDA_R_16F: h = f16_encode(v); break;
    default: h = bf16_encode(v); break;
    }
    memcpy(p + 2 * i, &h, 2);
}

/* D[r + col*ld] = alpha * scale_a * scale_b * sum_k A[k + r*lda] * B[k + col*ldb] (+ bias[r]) */
static void matmul(const void *arg)
{
    const Call *c = arg;
    float s = c->alpha * *c->desc.scale_a * *c->desc.scale_b;
    for (uint64_t col = 0; col < c->b.cols; col++)
        for (uint64_t r = 0; r < c->a.cols; r++) {
            float acc = 0;
            for (uint64_t k = 0; k < c->a.rows; k++)
                acc += (float)(fp8_value(c->pa[k + r * (uint64_t)c->a.ld], c->a.type) *
                               fp8_value(c->pb[k + col * (uint64_t)c->b.ld], c->b.type));
            acc *= s;
            if (c->desc.epilogue == CUBLASLT_EPILOGUE_BIAS)
                acc += bias_value(c, r);
            store(c, r + col * (uint64_t)c->d.ld, acc);
        }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
                                           const void *A, cublasLtMatrixLayout_t la, const void *B,
                                           cublasLtMatrixLayout_t lb, const void *beta, const void *C,
                                           cublasLtMatrixLayout_t lc, void *D, cublasLtMatrixLayout_t ld,
                                           const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsbytes,
                                           cudaStream_t stream)
{
    (void)h, (void)beta, (void)C, (void)lc, (void)algo, (void)ws, (void)wsbytes;
    FAULT();
    Call c = {
        .desc = *(Desc *)(void *)desc,
        .a = *(Layout *)(void *)la, .b = *(Layout *)(void *)lb, .d = *(Layout *)(void *)ld,
        .pa = A, .pb = B, .pd = D, .alpha = *(const float *)alpha,
    };
    if (c.desc.transa != CUBLAS_OP_T || c.desc.transb != CUBLAS_OP_N || c.a.rows != c.b.rows ||
        c.d.rows != c.a.cols || c.d.cols != c.b.cols || !c.desc.scale_a || !c.desc.scale_b)
        return CUBLAS_STATUS_INVALID_VALUE;
    CUresult (*op)(CUstream, void (*)(const void *), const void *, size_t) =
        (CUresult(*)(CUstream, void (*)(const void *), const void *, size_t))(uintptr_t)driver("mockcuda_host_op");
    return op((CUstream)stream, matmul, &c, sizeof c) == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
                                                                      : CUBLAS_STATUS_EXECUTION_FAILED;
}
