/* status.c — failures, the context stack and the small helpers, which every
 * file of the runtime uses and which use no other file but the driver's
 * table.
 *
 * Failures are recorded twice: in the context (fp8rt_last_error(ctx)) and in
 * a thread-local buffer (fp8rt_last_error(NULL)). Every entry that touches
 * CUDA pushes its context on the calling thread first and pops it on the
 * way out (rt_enter, rt_leave), after claiming the context for the thread:
 * a context is used by one thread at a time, and a second thread's call is
 * refused instead of racing the first (rt_claim).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static _Thread_local char thread_err[RT_ERRLEN];

/* The calling thread's token: the address of a thread-local, which no two
 * live threads share. */
static _Thread_local char thread_token;

/* ---- errors ------------------------------------------------------------- */

/* The message goes into the context only while this thread holds it, or
 * can take it for the copy: a failure found before an entry's claim (a bad
 * argument) or by the claim itself never writes over the message of
 * another thread's call. */
fp8rt_status
rt_err(fp8rt_context *ctx, fp8rt_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(thread_err, sizeof thread_err, fmt, ap);
	va_end(ap);
	if (!ctx)
		return st;
	uintptr_t me = (uintptr_t)&thread_token, was = 0;
	if (atomic_compare_exchange_strong_explicit(
		    &ctx->owner, &was, me, memory_order_acquire, memory_order_relaxed)) {
		memcpy(ctx->err, thread_err, sizeof ctx->err);
		atomic_store_explicit(&ctx->owner, 0, memory_order_release);
	} else if (was == me) {
		memcpy(ctx->err, thread_err, sizeof ctx->err);
	}
	return st;
}

/* runtime/fp8rt.c from whatever path the build used */
static const char *
short_path(const char *file)
{
	const char *p = strstr(file, "runtime/");
	return p ? p : file;
}

static fp8rt_status
status_of_cu(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_OUT_OF_MEMORY:          return FP8RT_OUT_OF_MEMORY;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:         return FP8RT_NO_DEVICE;
	case CUDA_ERROR_STUB_LIBRARY:
	case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return FP8RT_NO_DRIVER;
	default:                                return FP8RT_CUDA_ERROR;
	}
}

fp8rt_status
rt_fail_call(fp8rt_context *ctx, int lib, int code, const char *call, const char *file, int line)
{
	char what[512];
	if (lib == 0) {
		rt_cu_describe((CUresult)code, what, sizeof what);
		return rt_err(
			ctx, status_of_cu((CUresult)code), "%s:%d: %s failed: %s", short_path(file), line, call, what);
	}
	cublasStatus_t s = (cublasStatus_t)code;
	return rt_err(ctx, s == CUBLAS_STATUS_ALLOC_FAILED ? FP8RT_OUT_OF_MEMORY : FP8RT_CUBLAS_ERROR,
		"%s:%d: %s failed: %s: %s", short_path(file), line, call, cublasLtGetStatusName(s),
		cublasLtGetStatusString(s));
}

const char *
fp8rt_last_error(const fp8rt_context *ctx)
{
	return ctx ? ctx->err : thread_err;
}

const char *
fp8rt_status_name(fp8rt_status s)
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
		[FP8RT_NCCL_ERROR] = "FP8RT_NCCL_ERROR",
	};
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "FP8RT_?";
}

/* ---- entering and leaving a context ------------------------------------- */

static fp8rt_status
claim(fp8rt_context *ctx, const char *what, int outer)
{
	uintptr_t me = (uintptr_t)&thread_token, was = 0;
	if (!atomic_compare_exchange_strong_explicit(
		    &ctx->owner, &was, me, memory_order_acquire, memory_order_relaxed) &&
		was != me)
		return rt_err(NULL, FP8RT_INVALID_ARGUMENT,
			"%s: the context is in use by another thread (a context and its programs are used by one "
			"thread at a time: give each thread a context of its own)",
			what);
	if (outer && was == me)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT,
			"%s: called inside another of the context's calls on this thread (an extern's): what it "
			"frees or replaces may be in use there",
			what);
	ctx->depth++;
	return FP8RT_OK;
}

fp8rt_status
rt_claim(fp8rt_context *ctx, const char *what)
{
	return claim(ctx, what, 0);
}

void
rt_unclaim(fp8rt_context *ctx)
{
	if (--ctx->depth == 0)
		atomic_store_explicit(&ctx->owner, 0, memory_order_release);
}

static fp8rt_status
enter(fp8rt_context *ctx, const char *what, int outer)
{
	fp8rt_status st = claim(ctx, what, outer);
	if (st != FP8RT_OK)
		return st;
	CHECK(drv.cuCtxPushCurrent(ctx->cu));
	return FP8RT_OK;
fail:
	rt_unclaim(ctx);
	return st;
}

fp8rt_status
rt_enter(fp8rt_context *ctx, const char *what)
{
	return enter(ctx, what, 0);
}

fp8rt_status
rt_enter_outer(fp8rt_context *ctx, const char *what)
{
	return enter(ctx, what, 1);
}

fp8rt_status
rt_leave(fp8rt_context *ctx, fp8rt_status st)
{
	CUcontext popped;
	RELEASE(drv.cuCtxPopCurrent(&popped));
	rt_unclaim(ctx);
	return st;
}

/* ---- helpers ------------------------------------------------------------- */

int
rt_grow(void **p, int n, int *cap, size_t sz)
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

fp8rt_tensor
fp8rt_tensor_dense(void *data, fp8rt_dtype dtype, int rank, const int64_t *dims)
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
