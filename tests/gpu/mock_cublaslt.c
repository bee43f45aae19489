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
 * Shapes and types are cuBLASLt's column-major view: D (rows m, cols n) =
 * op(A) · op(B), op by transa / transb, batched by the layouts' batch count
 * and strides; A and B fp8 (with f32 device scalar scales, with
 * OUTER_VEC_32F scale modes a vector of m for A and of n for B, or with
 * BLK128x128_32F on A and VEC128_32F on B block scales), bf16, f16, f32
 * or f64; the bias a vector of m in bias_type (fp8) or D's type; epilogues
 * BIAS, RELU, GELU (tanh), GELU_AUX (the pre-activation into the aux
 * pointer, in D's type and layout by EPILOGUE_AUX_LD and _BATCH_STRIDE;
 * float operands) and
 * their _BIAS forms. Compute is f32, f64 for
 * COMPUTE_64F. As cuBLASLt, the heuristic answers INVALID_VALUE to a scale
 * mode other than the scalar one whose scale pointer is not set yet;
 * mocklt_refuse_outer_vec makes it refuse outer-vector scales outright, as
 * a cuBLASLt or device without them would. */
#include <dlfcn.h>
#include <math.h>
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
static int refuse_outer_vec;

void
mocklt_refuse_outer_vec(int on)
{
	refuse_outer_vec = on;
}

void
mocklt_live(int out[4])
{
	int v[4] = { live.handles, live.descs, live.layouts, live.prefs };
	memcpy(out, v, sizeof v);
}

/* The mock driver, as libfp8rt loaded it. */
static void *
driver(const char *name)
{
	static void *h;
	if (!h && !(h = dlopen(MOCKCUDA_PATH, RTLD_NOW)))
		abort();
	void *f = dlsym(h, name);
	if (!f)
		abort();
	return f;
}

static int
fault(const char *name)
{
	int (*f)(const char *) = (int (*)(const char *))(uintptr_t)driver("mockcuda_fault");
	return f(name);
}

#define FAULT()                          \
	do {                             \
		if (fault(__func__))     \
			return INJECTED; \
	} while (0)
#define FAULT_AFTER() int failed_ = fault(__func__)
#define DONE()        return failed_ ? INJECTED : CUBLAS_STATUS_SUCCESS

typedef struct {
	int32_t transa, transb, epilogue, bias_type, scale_mode_a, scale_mode_b;
	int f64;
	const float *scale_a, *scale_b;
	const void *bias;
	void *aux;
	int64_t aux_ld, aux_stride;
} Desc;

typedef struct {
	cudaDataType type;
	uint64_t rows, cols;
	int64_t ld;
	int32_t batch;
	int64_t stride;
} Layout;

struct cublasLtContext {
	int unused;
};

/* ---- handles, descriptors, layouts, preferences -------------------------- */

cublasStatus_t CUBLASWINAPI
cublasLtCreate(cublasLtHandle_t *h)
{
	FAULT();
	*h = calloc(1, sizeof **h);
	live.handles++;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtDestroy(cublasLtHandle_t h)
{
	FAULT_AFTER();
	free(h);
	live.handles--;
	DONE();
}

const char *CUBLASWINAPI
cublasLtGetStatusName(cublasStatus_t s)
{
	return s == INJECTED ? "CUBLAS_STATUS_INTERNAL_ERROR" : "CUBLAS_STATUS_MOCK";
}

const char *CUBLASWINAPI
cublasLtGetStatusString(cublasStatus_t s)
{
	return s == INJECTED ? "injected by the mock" : "mock status";
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale)
{
	FAULT();
	int f64 = compute == CUBLAS_COMPUTE_64F && scale == CUDA_R_64F;
	if (!f64 && (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F))
		return CUBLAS_STATUS_NOT_SUPPORTED;
	Desc *x = calloc(1, sizeof *x);
	x->bias_type = -1;
	x->f64 = f64;
	*d = (cublasLtMatmulDesc_t)(void *)x;
	live.descs++;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
	FAULT_AFTER();
	free(d);
	live.descs--;
	DONE();
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t n)
{
	Desc *x = (Desc *)(void *)d;
	FAULT();
	switch (a) {
	case CUBLASLT_MATMUL_DESC_TRANSA:               memcpy(&x->transa, buf, n < 4 ? n : 4); break;
	case CUBLASLT_MATMUL_DESC_TRANSB:               memcpy(&x->transb, buf, n < 4 ? n : 4); break;
	case CUBLASLT_MATMUL_DESC_EPILOGUE:             memcpy(&x->epilogue, buf, n < 4 ? n : 4); break;
	case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:       memcpy(&x->bias_type, buf, n < 4 ? n : 4); break;
	case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:      memcpy(&x->scale_a, buf, sizeof x->scale_a); break;
	case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:      memcpy(&x->scale_b, buf, sizeof x->scale_b); break;
	case CUBLASLT_MATMUL_DESC_BIAS_POINTER:         memcpy(&x->bias, buf, sizeof x->bias); break;
	case CUBLASLT_MATMUL_DESC_A_SCALE_MODE:         memcpy(&x->scale_mode_a, buf, n < 4 ? n : 4); break;
	case CUBLASLT_MATMUL_DESC_B_SCALE_MODE:         memcpy(&x->scale_mode_b, buf, n < 4 ? n : 4); break;
	case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: memcpy(&x->aux, buf, sizeof x->aux); break;
	case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
		if (n != sizeof x->aux_ld)
			return CUBLAS_STATUS_INVALID_VALUE;
		memcpy(&x->aux_ld, buf, n);
		break;
	case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
		if (n != sizeof x->aux_stride)
			return CUBLAS_STATUS_INVALID_VALUE;
		memcpy(&x->aux_stride, buf, n);
		break;
	default: break;
	}
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld)
{
	FAULT();
	Layout *x = malloc(sizeof *x);
	*x = (Layout){ type, rows, cols, ld, 1, 0 };
	*l = (cublasLtMatrixLayout_t)(void *)x;
	live.layouts++;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, const void *buf, size_t n)
{
	Layout *x = (Layout *)(void *)l;
	FAULT();
	if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && n == sizeof x->batch)
		memcpy(&x->batch, buf, n);
	else if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && n == sizeof x->stride)
		memcpy(&x->stride, buf, n);
	else
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
	FAULT_AFTER();
	free(l);
	live.layouts--;
	DONE();
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
	FAULT();
	*p = calloc(1, sizeof **p);
	live.prefs++;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
	FAULT_AFTER();
	free(p);
	live.prefs--;
	DONE();
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulPreferenceSetAttribute(
	cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void *buf, size_t n)
{
	(void)p, (void)a, (void)buf, (void)n;
	FAULT();
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
	cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl, cublasLtMatmulPreference_t p,
	int want, cublasLtMatmulHeuristicResult_t results[], int *found)
{
	(void)h, (void)a, (void)b, (void)c, (void)dl, (void)p;
	const Desc *x = (const Desc *)(void *)d;
	int outer = x->scale_mode_a == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F ||
		x->scale_mode_b == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
	FAULT();
	memset(results, 0, sizeof *results);
	if (outer && refuse_outer_vec)
		return CUBLAS_STATUS_INVALID_VALUE; /* a cuBLASLt or device without them */
	/* as cuBLASLt: a scale mode other than the scalar one needs its scale
	 * pointer set before the heuristic ("requires a custom pointer") */
	if ((x->scale_mode_a && !x->scale_a) || (x->scale_mode_b && !x->scale_b))
		return CUBLAS_STATUS_INVALID_VALUE;
	*found = want > 0;
	return CUBLAS_STATUS_SUCCESS;
}

/* ---- the matmul ------------------------------------------------------------ */

typedef struct {
	Desc desc;
	Layout a, b, d;
	const uint8_t *pa, *pb;
	void *pd;
	double alpha;
} Call;

static size_t
type_size(cudaDataType t)
{
	switch (t) {
	case CUDA_R_8F_E4M3:
	case CUDA_R_8F_E5M2: return 1;
	case CUDA_R_16F:
	case CUDA_R_16BF:    return 2;
	case CUDA_R_64F:     return 8;
	default:             return 4;
	}
}

static double
load(const void *base, cudaDataType t, uint64_t i)
{
	const char *p = (const char *)base + i * type_size(t);
	uint16_t h;
	float f;
	double d;
	switch (t) {
	case CUDA_R_8F_E4M3: return fp8_decode(*(const uint8_t *)p, FP8RT_F8E4M3FN);
	case CUDA_R_8F_E5M2: return fp8_decode(*(const uint8_t *)p, FP8RT_F8E5M2);
	case CUDA_R_16F:     memcpy(&h, p, 2); return f16_decode(h);
	case CUDA_R_16BF:    memcpy(&h, p, 2); return bf16_decode(h);
	case CUDA_R_64F:     memcpy(&d, p, 8); return d;
	default:             memcpy(&f, p, 4); return f;
	}
}

static void
store(void *base, cudaDataType t, uint64_t i, double v)
{
	char *p = (char *)base + i * type_size(t);
	float f = (float)v;
	uint16_t h;
	switch (t) {
	case CUDA_R_64F: memcpy(p, &v, 8); return;
	case CUDA_R_32F: memcpy(p, &f, 4); return;
	case CUDA_R_16F: h = f16_encode(f); break;
	default:         h = bf16_encode(f); break;
	}
	memcpy(p, &h, 2);
}

static int
has_bias(int32_t e)
{
	return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
		e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

static int
has_aux(int32_t e)
{
	return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

static double
activate(int32_t e, double x)
{
	if (e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS)
		return x > 0 ? x : 0;
	if (e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS || has_aux(e))
		return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
	return x;
}

/* op(X)(i, p) of a column-major X with leading dimension ld */
static uint64_t
at(int32_t trans, int64_t ld, uint64_t i, uint64_t p)
{
	return trans == CUBLAS_OP_T ? p + i * (uint64_t)ld : i + p * (uint64_t)ld;
}

/* Block scales (A: BLK128x128_32F, B: VEC128_32F; libfp8rt's FP8RT_SCALE_BLOCK,
 * fp8rt.h): each 128-long run of p summed in f32, scaled by A's block
 * (i/128, p/128) at scale_a[(i/128)*kb4 + p/128] and by B's (p/128, j) at
 * scale_b[(p/128)*n + j], the runs summed in f32; then alpha and the bias. */
static double
block_sum(const Call *c, const uint8_t *pa, const uint8_t *pb, uint64_t i, uint64_t j, uint64_t k, uint64_t n,
	cudaDataType bt)
{
	const Desc *ds = &c->desc;
	uint64_t kb = (k + 127) / 128, kb4 = (kb + 3) / 4 * 4;
	float sum = 0;
	for (uint64_t r = 0; r < kb; r++) {
		float acc = 0;
		for (uint64_t p = r * 128; p < k && p < r * 128 + 128; p++)
			acc += (float)(load(pa, c->a.type, at(ds->transa, c->a.ld, i, p)) *
				load(pb, c->b.type, at(ds->transb, c->b.ld, p, j)));
		sum += acc * ds->scale_a[(i / 128) * kb4 + r] * ds->scale_b[r * n + j];
	}
	double v = (double)sum * c->alpha;
	if (has_bias(ds->epilogue))
		v += load(ds->bias, bt, i);
	return v;
}

/* D[i + j*ldd] = act(alpha * scales * sum_p op(A)(i,p) op(B)(p,j) + bias[i]), per batch entry, accumulated in
 * f32 (f64 with COMPUTE_64F) */
static void
matmul(const void *arg)
{
	const Call *c = arg;
	const Desc *ds = &c->desc;
	uint64_t m = c->d.rows, n = c->d.cols, k = ds->transa == CUBLAS_OP_T ? c->a.rows : c->a.cols;
	int outer_a = ds->scale_mode_a == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
	int outer_b = ds->scale_mode_b == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
	int blocks = ds->scale_mode_a == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
	cudaDataType bt = ds->bias_type >= 0 ? (cudaDataType)ds->bias_type : c->d.type;
	for (int64_t b = 0; b < c->d.batch; b++) {
		const uint8_t *pa = c->pa + (uint64_t)(b * c->a.stride) * type_size(c->a.type);
		const uint8_t *pb = c->pb + (uint64_t)(b * c->b.stride) * type_size(c->b.type);
		char *pd = (char *)c->pd + (uint64_t)(b * c->d.stride) * type_size(c->d.type);
		char *px = has_aux(ds->epilogue)
			? (char *)ds->aux + (uint64_t)(b * ds->aux_stride) * type_size(c->d.type)
			: NULL;
		for (uint64_t j = 0; j < n; j++)
			for (uint64_t i = 0; i < m; i++) {
				if (blocks) {
					store(pd, c->d.type, i + j * (uint64_t)c->d.ld,
						activate(ds->epilogue, block_sum(c, pa, pb, i, j, k, n, bt)));
					continue;
				}
				double acc64 = 0;
				float acc = 0;
				for (uint64_t p = 0; p < k; p++) {
					double x = load(pa, c->a.type, at(ds->transa, c->a.ld, i, p)) *
						load(pb, c->b.type, at(ds->transb, c->b.ld, p, j));
					if (ds->f64)
						acc64 += x;
					else
						acc += (float)x;
				}
				double sa = ds->scale_a ? ds->scale_a[outer_a ? i : 0] : 1.0f;
				double sb = ds->scale_b ? ds->scale_b[outer_b ? j : 0] : 1.0f;
				double v = (ds->f64 ? acc64 : (double)acc) * (c->alpha * sa * sb);
				if (has_bias(ds->epilogue))
					v += load(ds->bias, bt, i);
				if (px)
					store(px, c->d.type, i + j * (uint64_t)ds->aux_ld, v);
				store(pd, c->d.type, i + j * (uint64_t)c->d.ld, activate(ds->epilogue, v));
			}
	}
}

cublasStatus_t CUBLASWINAPI
cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
	cublasLtMatrixLayout_t la, const void *B, cublasLtMatrixLayout_t lb, const void *beta, const void *C,
	cublasLtMatrixLayout_t lc, void *D, cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo, void *ws,
	size_t wsbytes, cudaStream_t stream)
{
	(void)h, (void)beta, (void)C, (void)lc, (void)algo, (void)ws, (void)wsbytes;
	FAULT();
	Call c = {
		.desc = *(Desc *)(void *)desc,
		.a = *(Layout *)(void *)la,
		.b = *(Layout *)(void *)lb,
		.d = *(Layout *)(void *)ld,
		.pa = A,
		.pb = B,
		.pd = D,
	};
	c.alpha = c.desc.f64 ? *(const double *)alpha : *(const float *)alpha;
	uint64_t m = c.desc.transa == CUBLAS_OP_T ? c.a.cols : c.a.rows,
		 ka = c.desc.transa == CUBLAS_OP_T ? c.a.rows : c.a.cols;
	uint64_t kb = c.desc.transb == CUBLAS_OP_T ? c.b.cols : c.b.rows,
		 n = c.desc.transb == CUBLAS_OP_T ? c.b.rows : c.b.cols;
	int fp8 = type_size(c.a.type) == 1;
	if (ka != kb || c.d.rows != m || c.d.cols != n || c.a.batch != c.d.batch || c.b.batch != c.d.batch ||
		(fp8 &&
			(c.desc.transa != CUBLAS_OP_T || c.desc.transb != CUBLAS_OP_N || !c.desc.scale_a ||
				!c.desc.scale_b)) ||
		(has_bias(c.desc.epilogue) && !c.desc.bias) ||
		(has_aux(c.desc.epilogue) &&
			(fp8 || !c.desc.aux || c.desc.aux_ld < (int64_t)m || (c.d.batch > 1 && !c.desc.aux_stride))))
		return CUBLAS_STATUS_INVALID_VALUE;
	CUresult (*op)(CUstream, void (*)(const void *), const void *, size_t) = (CUresult (*)(
		CUstream, void (*)(const void *), const void *, size_t))(uintptr_t)driver("mockcuda_host_op");
	return op((CUstream)stream, matmul, &c, sizeof c) == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
									  : CUBLAS_STATUS_EXECUTION_FAILED;
}
