/* rt.h — libfp8rt's internal header for the files that talk to CUDA:
 * the driver table, the context, error recording and the one checking macro,
 * and the GEMM layer. Sectioned by source file.
 *
 * The driver (libcuda.so.1) is loaded at run time with dlopen, so the library
 * and the programs that link it start on machines without a driver (and
 * without linking the toolkit's stub) and report FP8RT_NO_DRIVER instead.
 */
#ifndef FP8RT_RT_H
#define FP8RT_RT_H

#include <stdatomic.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cuda.h>

#include "fp8rt.h"
#include "plan.h"

#define RT_ERRLEN       8192
#define RT_WS_ALIGN     256         /* a function workspace's base (docs/plan.md) */
#define RT_LT_WORKSPACE (32u << 20) /* cuBLASLt workspace: 32 MiB, the Hopper recommendation */
#define RT_GRAPHS       4           /* captured graphs kept per program */

/* ---- driver.c ------------------------------------------------------------ */

/* Every driver entry libfp8rt uses. Names go through cuda.h's macros, so
 * the table holds (and dlsym looks up) the versioned symbols the header
 * declares: cuMemAlloc is cuMemAlloc_v2, cuGraphInstantiate is
 * cuGraphInstantiateWithFlags. */
// clang-format off
#define RT_DRIVER_FUNCS(X) \
	X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) \
	X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxPushCurrent) \
	X(cuCtxPopCurrent) X(cuCtxSynchronize) X(cuModuleLoadDataEx) X(cuModuleUnload) \
	X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuFuncSetAttribute) \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD8) \
	X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync) X(cuLaunchKernel) \
	X(cuLaunchCooperativeKernel) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) \
	X(cuStreamIsCapturing) X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate) \
	X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuEventCreate) X(cuEventRecord) \
	X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) X(cuStreamWaitEvent)
// clang-format on

/* cuFuncGetParamCount: driver 13.2+, newer than the CUDA 13.0 headers */
typedef CUresult CUDAAPI RtFuncGetParamCount(CUfunction func, size_t *count);

#define RT_DRIVER_FIELD(f) __typeof__(f) *f;
typedef struct {
	RT_DRIVER_FUNCS(RT_DRIVER_FIELD)
	__typeof__(cuFuncGetParamInfo) *cuFuncGetParamInfo; /* optional: driver 12.4+ */
	RtFuncGetParamCount *cuFuncGetParamCount;           /* optional: driver 13.2+ */
} RtDriver;

extern RtDriver drv;

/* Load libcuda (once per process) and cuInit. FP8RT_NO_DRIVER / FP8RT_NO_DEVICE
 * with a message on failure; the same answer on every later call. */
fp8rt_status rt_driver_init(char *err, size_t errlen);
/* "CUDA_ERROR_INVALID_VALUE: invalid argument", also when the driver cannot say */
void rt_cu_describe(CUresult r, char *buf, size_t n);

/* ---- fp8rt.c: context and errors ---------------------------------------- */

typedef struct RtGemmEntry RtGemmEntry;

/* An extern the application registered (fp8rt_register_extern). */
typedef struct {
	char *name;
	fp8rt_extern_fn fn;
	void *user;
	unsigned flags;
} RtExtern;

struct fp8rt_context {
	int device;
	CUdevice dev;
	CUcontext cu; /* the device's primary context, retained */
	fp8rt_device_props props;
	int smem_optin;      /* max dynamic + static shared memory per block, opt-in */
	CUstream capture;    /* graphs are captured here, then launched on the caller's stream */
	cublasLtHandle_t lt; /* made by the first GEMM (rt_lt_init) */
	CUdeviceptr lt_ws;   /* RT_LT_WORKSPACE bytes */
	RtGemmEntry *gemms;  /* prepared GEMMs by problem key */
	int ngemms, capgemms;
	fp8rt_program *programs; /* loaded programs, freed with the context */
	RtExtern *externs;       /* registered externs */
	int nexterns, capexterns;
	void *comm;              /* an ncclComm_t (nccl.c), or NULL */
	int comm_owned;          /* made by fp8rt_context_init_comm: destroyed with the context */
	int nranks, rank;        /* the communicator's */
	CUstream comm_stream;    /* where collectives run */
	_Atomic uintptr_t owner; /* the thread inside one of the context's entries (rt_claim), or 0 */
	int depth;               /* its entries' nesting: an extern that calls libfp8rt back */
	char err[RT_ERRLEN];
};

/* Make room for one more element in *p (size sz each, *n used, *cap held):
 * 0, or -1 when out of memory (then *p is as it was). */
int rt_grow(void **p, int n, int *cap, size_t sz);

/* The registered extern called name, or NULL. */
const RtExtern *rt_find_extern(const fp8rt_context *ctx, const char *name);

/* Record a failure: into ctx's message (when ctx) and the thread's. */
fp8rt_status rt_err(fp8rt_context *ctx, fp8rt_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Record a failed CUDA (lib 0) or cuBLASLt (lib 1) call: where, what, why. */
fp8rt_status rt_fail_call(fp8rt_context *ctx, int lib, int code, const char *call, const char *file, int line);
/* Claim ctx for the calling thread, for entry `what`; the thread may claim
 * it again (an extern calling libfp8rt back), another thread is refused
 * with FP8RT_INVALID_ARGUMENT and a message in its own thread's buffer
 * only (the context's message is the other thread's). rt_unclaim undoes one claim. */
fp8rt_status rt_claim(fp8rt_context *ctx, const char *what);
void rt_unclaim(fp8rt_context *ctx);
/* Claim ctx and push its CUDA context on this thread / pop it and unclaim.
 * rt_enter's FP8RT_INVALID_ARGUMENT means the claim was refused (nothing
 * else gives it), so an entry that frees its object even when it cannot
 * enter frees nothing then. rt_leave returns st, or the pop's failure when
 * st is FP8RT_OK. */
fp8rt_status rt_enter(fp8rt_context *ctx, const char *what);
/* rt_enter for the entries that free or replace what a run uses (destroy,
 * a new workspace, graphs off): refused also on the thread inside, with
 * FP8RT_INVALID_ARGUMENT, when called from an extern of a run. */
fp8rt_status rt_enter_outer(fp8rt_context *ctx, const char *what);
fp8rt_status rt_leave(fp8rt_context *ctx, fp8rt_status st);

/* The one checking macro: every CUDA Driver and cuBLASLt call goes through
 * it. On failure it records file:line, the call and the error's name and
 * string, sets `st` and jumps to the function's `fail:` label, where the
 * function frees what it holds. Expects `ctx` and `st` in scope. */
#define CHECK(call)                                       \
	do {                                              \
		int rc_ = (int)(call);                    \
		if (rc_ != 0) {                           \
			st = RT_FAILED(call, #call, rc_); \
			goto fail;                        \
		}                                         \
	} while (0)

/* Its form for releases (free, unload, destroy): it goes on past a failure,
 * which becomes `st` unless an earlier failure is there, so everything is
 * released and the first failure reported. */
#define RELEASE(call)                                     \
	do {                                              \
		int rc_ = (int)(call);                    \
		if (rc_ != 0 && st == FP8RT_OK)           \
			st = RT_FAILED(call, #call, rc_); \
	} while (0)

#define RT_FAILED(call, text, rc) \
	rt_fail_call(ctx, _Generic((call), CUresult: 0, cublasStatus_t: 1), rc, text, __FILE__, __LINE__)

/* ---- gemm.c --------------------------------------------------------------- */

/* One GEMM call: row-major D(m,n) = epilogue(op(A) · op(B) (· scales) + bias),
 * per batch entry, as fp8rt_matmul describes it, leading dims filled; an
 * fp8 one (`scaled`) as fp8rt_scaled_mm does: trans_a=0, trans_b=1,
 * batch 1, no epilogue. */
typedef struct {
	int64_t m, n, k, batch, lda, ldb, ldd, stride_a, stride_b, stride_d;
	int trans_a, trans_b, scaled;
	RtEpilogue epilogue;
	fp8rt_dtype at, bt, dt, bias_dt; /* bias_dt FP8RT_DTYPE_NONE: no bias */
	int fast_accum;
	fp8rt_scale_mode scale_mode;                      /* scaled only */
	CUdeviceptr a, b, d, bias, scale_a, scale_b, aux; /* aux: RT_EPI_GELU_AUX's, laid out as d */
} RtGemmCall;

/* Create the context's cuBLASLt handle and workspace, once. */
fp8rt_status rt_lt_init(fp8rt_context *ctx);
/* Release the handle, the workspace and the prepared GEMMs. Like every
 * rt_*_free: everything is released, and the result is st, or the first
 * release that failed when st is FP8RT_OK. */
fp8rt_status rt_lt_free(fp8rt_context *ctx, fp8rt_status st);
/* Check everything about a call before it runs (no CUDA calls); `what`
 * starts the messages ("fp8rt_matmul"). */
fp8rt_status rt_gemm_check(fp8rt_context *ctx, const RtGemmCall *g, const char *what);
/* Make sure a prepared GEMM (descriptors + algorithm) exists for this call's
 * problem; done before a graph capture so the capture only enqueues. */
fp8rt_status rt_gemm_prepare(fp8rt_context *ctx, const RtGemmCall *g);
/* Enqueue it on stream (prepares first if needed). */
fp8rt_status rt_gemm_enqueue(fp8rt_context *ctx, const RtGemmCall *g, CUstream stream);

/* ---- nccl.c ----------------------------------------------------------------- */

/* Release the communicator (when the context made it) and its stream. */
fp8rt_status rt_comm_free(fp8rt_context *ctx, fp8rt_status st);
/* Enqueue collective c: after the work on stream so far (event ready), on
 * the context's collective stream, then event done. */
fp8rt_status rt_collective(fp8rt_context *ctx, const RtCollective *c, CUdeviceptr in, CUdeviceptr out, CUevent ready,
	CUevent done, CUstream stream);

/* ---- program.c ------------------------------------------------------------ */

/* Free a program (st as for rt_lt_free). */
fp8rt_status rt_program_free(fp8rt_program *prog, fp8rt_status st);

#endif /* FP8RT_RT_H */
