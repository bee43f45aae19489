/* fp8rt.c — versions, contexts, device memory and the small public helpers.
 *
 * A context is one device's primary CUDA context (retained), a stream that
 * graphs are captured on, and one cuBLASLt handle with its workspace (made
 * once, when the first GEMM needs it: a program with a gemm step is loaded,
 * or fp8rt_scaled_mm is first called). Every
 * entry that touches CUDA pushes the context on the calling thread and pops
 * it on the way out (status.c), so the caller's current context is left as
 * it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* ---- versions ----------------------------------------------------------- */

int
fp8rt_version(void)
{
	return FP8RT_VERSION;
}

void
fp8rt_plan_versions(int *min, int *max)
{
	if (min)
		*min = RT_PLAN_VERSION_MIN;
	if (max)
		*max = RT_PLAN_VERSION_MAX;
}

const char *
fp8rt_dtype_name(fp8rt_dtype dt)
{
	return rt_dtype_name(dt);
}

size_t
fp8rt_dtype_size(fp8rt_dtype dt)
{
	return rt_dtype_size(dt);
}

/* ---- contexts ----------------------------------------------------------- */

static fp8rt_status
query_device(fp8rt_context *ctx)
{
	fp8rt_status st = FP8RT_OK;
	fp8rt_device_props *pr = &ctx->props;
	CHECK(drv.cuDeviceGetName(pr->name, (int)sizeof pr->name, ctx->dev));
	CHECK(drv.cuDeviceGetAttribute(&pr->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->dev));
	CHECK(drv.cuDeviceGetAttribute(&pr->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->dev));
	CHECK(drv.cuDeviceGetAttribute(&pr->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx->dev));
	CHECK(drv.cuDeviceGetAttribute(&pr->cooperative_launch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, ctx->dev));
	CHECK(drv.cuDeviceGetAttribute(
		&ctx->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, ctx->dev));
	CHECK(drv.cuDeviceTotalMem(&pr->total_memory, ctx->dev));
fail:
	return st;
}

/* Everything after the primary context: the capture stream. (cuBLASLt's
 * handle and workspace come with the first GEMM: gemm.c, rt_lt_init.) */
static fp8rt_status
create_resources(fp8rt_context *ctx)
{
	fp8rt_status st = FP8RT_OK;
	CHECK(drv.cuStreamCreate(&ctx->capture, CU_STREAM_NON_BLOCKING));
fail:
	return st;
}

/* Everything is released; returns st, or the first failure when st is OK. */
static fp8rt_status
release_resources(fp8rt_context *ctx, fp8rt_status st)
{
	while (ctx->programs)
		st = rt_program_free(ctx->programs, st);
	st = rt_lt_free(ctx, st);
	st = rt_comm_free(ctx, st);
	if (ctx->capture)
		RELEASE(drv.cuStreamDestroy(ctx->capture));
	ctx->capture = NULL;
	return st;
}

static fp8rt_status
create(int device, fp8rt_context *ctx)
{
	fp8rt_status st = FP8RT_OK;
	int count = 0;
	CHECK(drv.cuDeviceGetCount(&count));
	if (device < 0 || device >= count)
		return rt_err(ctx, FP8RT_NO_DEVICE, "no CUDA device %d: this machine has %d", device, count);
	ctx->device = device;
	CHECK(drv.cuDeviceGet(&ctx->dev, device));
	CHECK(drv.cuDevicePrimaryCtxRetain(&ctx->cu, ctx->dev));
	if ((st = rt_enter(ctx, "fp8rt_context_create")) == FP8RT_OK) {
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

fp8rt_status
fp8rt_context_create(int device, fp8rt_context **out)
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
fp8rt_status
fp8rt_context_destroy(fp8rt_context *ctx)
{
	if (!ctx)
		return FP8RT_OK;
	fp8rt_status st = rt_enter_outer(ctx, "fp8rt_context_destroy");
	if (st == FP8RT_INVALID_ARGUMENT)
		return st; /* in use by another thread: nothing released */
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
	free(ctx); /* a failure's message stays in fp8rt_last_error(NULL) */
	return st;
}

fp8rt_status
fp8rt_device_properties(fp8rt_context *ctx, fp8rt_device_props *out)
{
	if (!ctx || !out)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_device_properties: %s is NULL", ctx ? "out" : "ctx");
	*out = ctx->props;
	return FP8RT_OK;
}

/* ---- device memory -------------------------------------------------------- */

fp8rt_status
fp8rt_malloc(fp8rt_context *ctx, size_t bytes, void **dptr)
{
	fp8rt_status st;
	CUdeviceptr p = 0;
	if (!ctx || !dptr)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_malloc: %s is NULL", ctx ? "dptr" : "ctx");
	*dptr = NULL;
	if ((st = rt_enter(ctx, "fp8rt_malloc")) != FP8RT_OK)
		return st;
	CHECK(drv.cuMemAlloc(&p, bytes ? bytes : 1));
	*dptr = (void *)(uintptr_t)p;
fail:
	return rt_leave(ctx, st);
}

/* The memory is freed also when entering the context fails, unless
 * another thread is inside it. */
fp8rt_status
fp8rt_free(fp8rt_context *ctx, void *dptr)
{
	if (!ctx)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_free: ctx is NULL");
	if (!dptr)
		return FP8RT_OK;
	fp8rt_status st = rt_enter(ctx, "fp8rt_free");
	if (st == FP8RT_INVALID_ARGUMENT)
		return st;
	int entered = st == FP8RT_OK;
	RELEASE(drv.cuMemFree((CUdeviceptr)(uintptr_t)dptr));
	return entered ? rt_leave(ctx, st) : st;
}

/* dir: 0 host to device, 1 device to host, 2 memset */
static fp8rt_status
transfer(fp8rt_context *ctx, int dir, void *dst, const void *src, int byte, size_t bytes)
{
	static const char *const names[] = { "fp8rt_memcpy_htod", "fp8rt_memcpy_dtoh", "fp8rt_memset" };
	fp8rt_status st;
	if (!ctx || ((!dst || (dir < 2 && !src)) && bytes))
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: %s is NULL", names[dir],
			!ctx ? "ctx"
				: !dst ? "dst"
				       : "src");
	if (bytes == 0)
		return FP8RT_OK;
	if ((st = rt_enter(ctx, names[dir])) != FP8RT_OK)
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

fp8rt_status
fp8rt_memcpy_htod(fp8rt_context *ctx, void *dst, const void *src, size_t bytes)
{
	return transfer(ctx, 0, dst, src, 0, bytes);
}

fp8rt_status
fp8rt_memcpy_dtoh(fp8rt_context *ctx, void *dst, const void *src, size_t bytes)
{
	return transfer(ctx, 1, dst, src, 0, bytes);
}

fp8rt_status
fp8rt_memset(fp8rt_context *ctx, void *dst, int byte, size_t bytes)
{
	return transfer(ctx, 2, dst, NULL, byte, bytes);
}

fp8rt_status
fp8rt_synchronize(fp8rt_context *ctx, void *stream)
{
	fp8rt_status st;
	if (!ctx)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_synchronize: ctx is NULL");
	if ((st = rt_enter(ctx, "fp8rt_synchronize")) != FP8RT_OK)
		return st;
	if (stream)
		CHECK(drv.cuStreamSynchronize((CUstream)stream));
	else
		CHECK(drv.cuCtxSynchronize());
fail:
	return rt_leave(ctx, st);
}
