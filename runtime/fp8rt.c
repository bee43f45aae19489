/* fp8rt.c — contexts, error messages and the small public helpers.
 *
 * A context is one device's primary CUDA context (retained), a stream that
 * graphs are captured on, and one cuBLASLt handle with its workspace (made
 * once, when the first GEMM needs it: a program with a gemm step is loaded,
 * or fp8rt_scaled_mm is first called). Every
 * entry that touches CUDA pushes the context on the calling thread and pops
 * it on the way out, so the caller's current context is left as it was.
 * Failures are recorded twice: in the context (fp8rt_last_error(ctx)) and in
 * a thread-local buffer (fp8rt_last_error(NULL)).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static _Thread_local char thread_err[RT_ERRLEN];

/* ---- versions ----------------------------------------------------------- */

int fp8rt_version(void)
{
    return FP8RT_VERSION;
}

void fp8rt_plan_versions(int *min, int *max)
{
    if (min)
        *min = RT_PLAN_VERSION_MIN;
    if (max)
        *max = RT_PLAN_VERSION_MAX;
}

/* ---- errors ------------------------------------------------------------- */

fp8rt_status rt_err(fp8rt_context *ctx, fp8rt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(thread_err, sizeof thread_err, fmt, ap);
    va_end(ap);
    if (ctx)
        memcpy(ctx->err, thread_err, sizeof ctx->err);
    return st;
}

/* runtime/fp8rt.c from whatever path the build used */
static const char *short_path(const char *file)
{
    const char *p = strstr(file, "runtime/");
    return p ? p : file;
}

static fp8rt_status status_of_cu(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY: return FP8RT_OUT_OF_MEMORY;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE: return FP8RT_NO_DEVICE;
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return FP8RT_NO_DRIVER;
    default: return FP8RT_CUDA_ERROR;
    }
}

fp8rt_status rt_fail_call(fp8rt_context *ctx, int lib, int code, const char *call, const char *file, int line)
{
    char what[512];
    if (lib == 0) {
        rt_cu_describe((CUresult)code, what, sizeof what);
        return rt_err(ctx, status_of_cu((CUresult)code), "%s:%d: %s failed: %s", short_path(file), line, call,
                      what);
    }
    cublasStatus_t s = (cublasStatus_t)code;
    return rt_err(ctx, s == CUBLAS_STATUS_ALLOC_FAILED ? FP8RT_OUT_OF_MEMORY : FP8RT_CUBLAS_ERROR,
                  "%s:%d: %s failed: %s: %s", short_path(file), line, call, cublasLtGetStatusName(s),
                  cublasLtGetStatusString(s));
}

const char *fp8rt_last_error(const fp8rt_context *ctx)
{
    return ctx ? ctx->err : thread_err;
}

const char *fp8rt_status_name(fp8rt_status s)
{
    static const char *const names[] = {
        [FP8RT_OK] = "FP8RT_OK",
        [FP8RT_INVALID_ARGUMENT] = "FP8RT_INVALID_ARGUMENT",
        [FP8RT_NO_DEVICE] = "FP8RT_NO_DEVICE",
        [FP8RT_NO_DRIVER] = "FP8RT_NO_DRIVER",
        [FP8RT_CUDA_ERROR] = "FP8RT_CUDA_ERROR",
        [FP8RT_CUBLAS_ERROR] = "FP8RT_CUBLAS_ERROR",
        [FP8RT_BAD_PROGRAM] = "FP8RT_BAD_PROGRAM",
        [FP8RT_UNSUPPORTED] = "FP8RT_UNSUPPORTED",
        [FP8RT_OUT_OF_MEMORY] = "FP8RT_OUT_OF_MEMORY",
        [FP8RT_IO_ERROR] = "FP8RT_IO_ERROR",
    };
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "FP8RT_?";
}

const char *fp8rt_dtype_name(fp8rt_dtype dt)
{
    return rt_dtype_name(dt);
}

size_t fp8rt_dtype_size(fp8rt_dtype dt)
{
    return rt_dtype_size(dt);
}

fp8rt_tensor fp8rt_tensor_dense(void *data, fp8rt_dtype dtype, int rank, const int64_t *dims)
{
    fp8rt_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.rank = rank < 0 ? 0 : rank > FP8RT_MAX_RANK ? FP8RT_MAX_RANK : rank;
    int64_t stride = 1;
    for (int i = t.rank - 1; i >= 0; i--) {
        t.dims[i] = dims[i];
        t.strides[i] = stride;
        stride *= dims[i];
    }
    return t;
}

/* ---- entering and leaving a context ------------------------------------- */

fp8rt_status rt_enter(fp8rt_context *ctx)
{
    fp8rt_status st = FP8RT_OK;
    CHECK(drv.cuCtxPushCurrent(ctx->cu));
fail:
    return st;
}

fp8rt_status rt_leave(fp8rt_context *ctx, fp8rt_status st)
{
    CUcontext popped;
    RELEASE(drv.cuCtxPopCurrent(&popped));
    return st;
}

/* ---- contexts ----------------------------------------------------------- */


static fp8rt_status query_device(fp8rt_context *ctx)
{
    fp8rt_status st = FP8RT_OK;
    fp8rt_device_props *pr = &ctx->props;
    CHECK(drv.cuDeviceGetName(pr->name, (int)sizeof pr->name, ctx->dev));
    CHECK(drv.cuDeviceGetAttribute(&pr->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->dev));
    CHECK(drv.cuDeviceGetAttribute(&pr->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->dev));
    CHECK(drv.cuDeviceGetAttribute(&pr->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx->dev));
    CHECK(drv.cuDeviceGetAttribute(&pr->cooperative_launch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, ctx->dev));
    CHECK(drv.cuDeviceGetAttribute(&ctx->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                   ctx->dev));
    CHECK(drv.cuDeviceTotalMem(&pr->total_memory, ctx->dev));
fail:
    return st;
}

/* Everything after the primary context: the capture stream. (cuBLASLt's
 * handle and workspace come with the first GEMM: gemm.c, rt_lt_init.) */
static fp8rt_status create_resources(fp8rt_context *ctx)
{
    fp8rt_status st = FP8RT_OK;
    CHECK(drv.cuStreamCreate(&ctx->capture, CU_STREAM_NON_BLOCKING));
fail:
    return st;
}

/* Everything is released; returns st, or the first failure when st is OK. */
static fp8rt_status release_resources(fp8rt_context *ctx, fp8rt_status st)
{
    while (ctx->programs)
        st = rt_program_free(ctx->programs, st);
    st = rt_lt_free(ctx, st);
    if (ctx->capture)
        RELEASE(drv.cuStreamDestroy(ctx->capture));
    ctx->capture = NULL;
    return st;
}

static fp8rt_status create(int device, fp8rt_context *ctx)
{
    fp8rt_status st = FP8RT_OK;
    int count = 0;
    CHECK(drv.cuDeviceGetCount(&count));
    if (device < 0 || device >= count)
        return rt_err(ctx, FP8RT_NO_DEVICE, "no CUDA device %d: this machine has %d", device, count);
    ctx->device = device;
    CHECK(drv.cuDeviceGet(&ctx->dev, device));
    CHECK(drv.cuDevicePrimaryCtxRetain(&ctx->cu, ctx->dev));
    if ((st = rt_enter(ctx)) == FP8RT_OK) {
        if ((st = query_device(ctx)) == FP8RT_OK)
            st = create_resources(ctx);
        st = rt_leave(ctx, st);
    }
    if (st != FP8RT_OK) {
        st = release_resources(ctx, st);
        RELEASE(drv.cuDevicePrimaryCtxRelease(ctx->dev));
        ctx->cu = NULL;
    }
fail:
    return st;
}

fp8rt_status fp8rt_context_create(int device, fp8rt_context **out)
{
    char msg[512];
    if (!out)
        return rt_err(NULL, FP8RT_INVALID_ARGUMENT, "fp8rt_context_create: out is NULL");
    *out = NULL;
    fp8rt_status st = rt_driver_init(msg, sizeof msg);
    if (st != FP8RT_OK)
        return rt_err(NULL, st, "fp8rt_context_create: %s", msg);
    fp8rt_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return rt_err(NULL, FP8RT_OUT_OF_MEMORY, "fp8rt_context_create: out of host memory");
    if ((st = create(device, ctx)) != FP8RT_OK) {
        free(ctx);
        return st;
    }
    *out = ctx;
    return FP8RT_OK;
}

/* Everything is released, also when a call fails (the driver takes the
 * context from the objects); the status is the first failure. */
fp8rt_status fp8rt_context_destroy(fp8rt_context *ctx)
{
    if (!ctx)
        return FP8RT_OK;
    fp8rt_status st = rt_enter(ctx);
    int entered = st == FP8RT_OK;
    if (entered)
        RELEASE(drv.cuCtxSynchronize());
    st = release_resources(ctx, st);
    if (entered)
        st = rt_leave(ctx, st);
    RELEASE(drv.cuDevicePrimaryCtxRelease(ctx->dev));
    for (int i = 0; i < ctx->nexterns; i++)
        free(ctx->externs[i].name);
    free(ctx->externs);
    free(ctx);   /* a failure's message stays in fp8rt_last_error(NULL) */
    return st;
}

/* ---- externs ------------------------------------------------------------ */

int rt_grow(void **p, int n, int *cap, size_t sz)
{
    if (n < *cap)
        return 0;
    int ncap = *cap ? 2 * *cap : 8;
    void *np = realloc(*p, (size_t)ncap * sz);
    if (!np)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

const RtExtern *rt_find_extern(const fp8rt_context *ctx, const char *name)
{
    for (int i = 0; i < ctx->nexterns; i++)
        if (!strcmp(ctx->externs[i].name, name))
            return &ctx->externs[i];
    return NULL;
}

fp8rt_status fp8rt_register_extern(fp8rt_context *ctx, const char *name, fp8rt_extern_fn fn, void *user,
                                   unsigned flags)
{
    if (!ctx || !name || !fn)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_register_extern: %s is NULL",
                      !ctx ? "ctx" : !name ? "name" : "fn");
    if (flags & ~(unsigned)FP8RT_EXTERN_NO_GRAPH)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_register_extern: unknown flags 0x%x", flags);
    RtExtern *e = (RtExtern *)rt_find_extern(ctx, name);
    if (!e) {
        if (rt_grow((void **)&ctx->externs, ctx->nexterns, &ctx->capexterns, sizeof *ctx->externs))
            return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "fp8rt_register_extern: out of host memory");
        e = &ctx->externs[ctx->nexterns];
        if (!(e->name = strdup(name)))
            return rt_err(ctx, FP8RT_OUT_OF_MEMORY, "fp8rt_register_extern: out of host memory");
        ctx->nexterns++;
    }
    e->fn = fn;
    e->user = user;
    e->flags = flags;
    return FP8RT_OK;
}

fp8rt_status fp8rt_device_properties(fp8rt_context *ctx, fp8rt_device_props *out)
{
    if (!ctx || !out)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_device_properties: %s is NULL", ctx ? "out" : "ctx");
    *out = ctx->props;
    return FP8RT_OK;
}

/* ---- device memory -------------------------------------------------------- */

fp8rt_status fp8rt_malloc(fp8rt_context *ctx, size_t bytes, void **dptr)
{
    fp8rt_status st;
    CUdeviceptr p = 0;
    if (!ctx || !dptr)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_malloc: %s is NULL", ctx ? "dptr" : "ctx");
    *dptr = NULL;
    if ((st = rt_enter(ctx)) != FP8RT_OK)
        return st;
    CHECK(drv.cuMemAlloc(&p, bytes ? bytes : 1));
    *dptr = (void *)(uintptr_t)p;
fail:
    return rt_leave(ctx, st);
}

/* The memory is freed also when entering the context fails. */
fp8rt_status fp8rt_free(fp8rt_context *ctx, void *dptr)
{
    if (!ctx)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_free: ctx is NULL");
    if (!dptr)
        return FP8RT_OK;
    fp8rt_status st = rt_enter(ctx);
    int entered = st == FP8RT_OK;
    RELEASE(drv.cuMemFree((CUdeviceptr)(uintptr_t)dptr));
    return entered ? rt_leave(ctx, st) : st;
}

/* dir: 0 host to device, 1 device to host, 2 memset */
static fp8rt_status transfer(fp8rt_context *ctx, int dir, void *dst, const void *src, int byte, size_t bytes)
{
    static const char *const names[] = {"fp8rt_memcpy_htod", "fp8rt_memcpy_dtoh", "fp8rt_memset"};
    fp8rt_status st;
    if (!ctx || ((!dst || (dir < 2 && !src)) && bytes))
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s is NULL", names[dir], !ctx ? "ctx" : !dst ? "dst" : "src");
    if (bytes == 0)
        return FP8RT_OK;
    if ((st = rt_enter(ctx)) != FP8RT_OK)
        return st;
    if (dir == 0)
        CHECK(drv.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes));
    else if (dir == 1)
        CHECK(drv.cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes));
    else {
        CHECK(drv.cuMemsetD8((CUdeviceptr)(uintptr_t)dst, (unsigned char)byte, bytes));
        CHECK(drv.cuCtxSynchronize());
    }
fail:
    return rt_leave(ctx, st);
}

fp8rt_status fp8rt_memcpy_htod(fp8rt_context *ctx, void *dst, const void *src, size_t bytes)
{
    return transfer(ctx, 0, dst, src, 0, bytes);
}

fp8rt_status fp8rt_memcpy_dtoh(fp8rt_context *ctx, void *dst, const void *src, size_t bytes)
{
    return transfer(ctx, 1, dst, src, 0, bytes);
}

fp8rt_status fp8rt_memset(fp8rt_context *ctx, void *dst, int byte, size_t bytes)
{
    return transfer(ctx, 2, dst, NULL, byte, bytes);
}

fp8rt_status fp8rt_synchronize(fp8rt_context *ctx, void *stream)
{
    fp8rt_status st;
    if (!ctx)
        return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_synchronize: ctx is NULL");
    if ((st = rt_enter(ctx)) != FP8RT_OK)
        return st;
    if (stream)
        CHECK(drv.cuStreamSynchronize((CUstream)stream));
    else
        CHECK(drv.cuCtxSynchronize());
fail:
    return rt_leave(ctx, st);
}
