/* nccl.c — collectives through NCCL, loaded at run time.
 *
 * libfp8rt does not link NCCL: the first communicator dlopens libnccl.so.2
 * (or the file named by FP8RT_NCCL) once per process and looks up the
 * entries below. A process that has loaded NCCL already (PyTorch's) gets
 * that copy: the dynamic loader matches the soname. The declarations are
 * NCCL's, from nccl.h (stable since NCCL 2.10, which added ncclAvg and
 * bf16); the toolkit does not ship the header, so they are written here.
 *
 * The context's communicator is the application's (fp8rt_context_set_comm:
 * an ncclComm_t the application made and destroys), or made here from a
 * unique id every rank shares (fp8rt_context_init_comm), then destroyed with
 * the context. Collectives run on the context's own stream, ordered after
 * the caller's work by an event and before the wait by another
 * (docs/design.md, "Collectives"). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

typedef int ncclResult_t; /* ncclSuccess 0 */
typedef struct {
	char internal[FP8RT_NCCL_ID_BYTES];
} ncclUniqueId;
enum {
	nccl_int8,
	nccl_uint8,
	nccl_int32,
	nccl_uint32,
	nccl_int64,
	nccl_uint64,
	nccl_f16,
	nccl_f32,
	nccl_f64,
	nccl_bf16
};
enum { nccl_sum, nccl_prod, nccl_max, nccl_min, nccl_avg };

// clang-format off
#define NCCL_FUNCS(X) \
	X(ncclGetVersion, ncclResult_t, (int *)) \
	X(ncclGetUniqueId, ncclResult_t, (ncclUniqueId *)) \
	X(ncclCommInitRank, ncclResult_t, (void **, int, ncclUniqueId, int)) \
	X(ncclCommDestroy, ncclResult_t, (void *)) \
	X(ncclCommCount, ncclResult_t, (void *, int *)) \
	X(ncclCommUserRank, ncclResult_t, (void *, int *)) \
	X(ncclGetErrorString, const char *, (ncclResult_t)) \
	X(ncclAllGather, ncclResult_t, (const void *, void *, size_t, int, void *, CUstream)) \
	X(ncclReduceScatter, ncclResult_t, (const void *, void *, size_t, int, int, void *, CUstream)) \
	X(ncclAllReduce, ncclResult_t, (const void *, void *, size_t, int, int, void *, CUstream)) \
	X(ncclBroadcast, ncclResult_t, (const void *, void *, size_t, int, int, void *, CUstream))
// clang-format on

#define NCCL_FIELD(name, ret, args) ret(*name) args;
static struct {
	NCCL_FUNCS(NCCL_FIELD)
} nccl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_err[512];

static void
load(void)
{
	const char *path = getenv("FP8RT_NCCL");
	void *lib = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	int version = 0;
	if (!lib) {
		snprintf(load_err, sizeof load_err,
			"cannot load NCCL (%s): %s; install NCCL 2.10 or later, or name its library in FP8RT_NCCL",
			path && *path ? path : "libnccl.so.2", dlerror());
		return;
	}
#define NCCL_LOOKUP(name, ret, args)                                                                              \
	if (!load_err[0] && !(*(void **)&nccl.name = dlsym(lib, #name)))                                          \
		snprintf(load_err, sizeof load_err, "NCCL (%s) has no %s", path && *path ? path : "libnccl.so.2", \
			#name);
	NCCL_FUNCS(NCCL_LOOKUP)
	if (!load_err[0] && (nccl.ncclGetVersion(&version) != 0 || version < 21000))
		snprintf(load_err, sizeof load_err, "NCCL %d.%d is older than 2.10, which fp8rt needs", version / 10000,
			version / 100 % 100);
	if (load_err[0])
		memset(&nccl, 0, sizeof nccl); /* the library stays: the loader may share it */
}

static fp8rt_status
loaded(fp8rt_context *ctx, const char *what)
{
	pthread_once(&once, load);
	return load_err[0] ? rt_err(ctx, FP8RT_NCCL_ERROR, "%s: %s", what, load_err) : FP8RT_OK;
}

static fp8rt_status
nccl_fail(fp8rt_context *ctx, ncclResult_t r, const char *call)
{
	return rt_err(ctx, FP8RT_NCCL_ERROR, "%s failed: %s (NCCL error %d)", call,
		nccl.ncclGetErrorString ? nccl.ncclGetErrorString(r) : "?", r);
}

fp8rt_status
fp8rt_nccl_unique_id(fp8rt_context *ctx, void *id)
{
	fp8rt_status st;
	ncclResult_t r;
	ncclUniqueId u;
	if (!id)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_nccl_unique_id: id is NULL");
	if ((st = loaded(ctx, "fp8rt_nccl_unique_id")) != FP8RT_OK)
		return st;
	if ((r = nccl.ncclGetUniqueId(&u)) != 0)
		return nccl_fail(ctx, r, "fp8rt_nccl_unique_id: ncclGetUniqueId");
	memcpy(id, u.internal, sizeof u.internal);
	return FP8RT_OK;
}

/* The communicator's size and this rank, and the stream its collectives run on. */
static fp8rt_status
adopt(fp8rt_context *ctx, void *comm, int owned, const char *what)
{
	fp8rt_status st = FP8RT_OK;
	ncclResult_t r;
	int n = 0, rank = 0;
	if ((r = nccl.ncclCommCount(comm, &n)) != 0 || (r = nccl.ncclCommUserRank(comm, &rank)) != 0)
		return nccl_fail(ctx, r, what);
	if (!ctx->comm_stream)
		CHECK(drv.cuStreamCreate(&ctx->comm_stream, CU_STREAM_NON_BLOCKING));
	ctx->comm = comm, ctx->comm_owned = owned, ctx->nranks = n, ctx->rank = rank;
fail:
	return st;
}

static fp8rt_status
check_settable(fp8rt_context *ctx, const char *what)
{
	if (!ctx)
		return rt_err(NULL, FP8RT_INVALID_ARGUMENT, "%s: ctx is NULL", what);
	if (ctx->comm)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: the context has a communicator already", what);
	return loaded(ctx, what);
}

fp8rt_status
fp8rt_context_init_comm(fp8rt_context *ctx, const void *id, int nranks, int rank)
{
	static const char what[] = "fp8rt_context_init_comm";
	fp8rt_status st = check_settable(ctx, what);
	ncclUniqueId u;
	void *comm = NULL;
	ncclResult_t r;
	if (st != FP8RT_OK)
		return st;
	if (!id || nranks < 1 || rank < 0 || rank >= nranks)
		return rt_err(
			ctx, FP8RT_INVALID_ARGUMENT, "%s: %s", what, !id ? "id is NULL" : "wants 0 <= rank < nranks");
	memcpy(u.internal, id, sizeof u.internal);
	if ((st = rt_enter(ctx, what)) != FP8RT_OK)
		return st;
	if ((r = nccl.ncclCommInitRank(&comm, nranks, u, rank)) != 0)
		st = nccl_fail(ctx, r, "fp8rt_context_init_comm: ncclCommInitRank");
	else if ((st = adopt(ctx, comm, 1, what)) != FP8RT_OK)
		nccl.ncclCommDestroy(comm);
	return rt_leave(ctx, st);
}

fp8rt_status
fp8rt_context_set_comm(fp8rt_context *ctx, void *comm)
{
	static const char what[] = "fp8rt_context_set_comm";
	fp8rt_status st = check_settable(ctx, what);
	if (st != FP8RT_OK)
		return st;
	if (!comm)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "%s: comm is NULL", what);
	if ((st = rt_enter(ctx, what)) != FP8RT_OK)
		return st;
	return rt_leave(ctx, adopt(ctx, comm, 0, what));
}

fp8rt_status
fp8rt_context_comm(fp8rt_context *ctx, int *nranks, int *rank)
{
	if (!ctx || !nranks || !rank)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_context_comm: %s is NULL",
			!ctx ? "ctx"
				: !nranks ? "nranks"
					  : "rank");
	if (!ctx->comm)
		return rt_err(ctx, FP8RT_INVALID_ARGUMENT, "fp8rt_context_comm: the context has no communicator");
	*nranks = ctx->nranks, *rank = ctx->rank;
	return FP8RT_OK;
}

fp8rt_status
rt_comm_free(fp8rt_context *ctx, fp8rt_status st)
{
	if (ctx->comm && ctx->comm_owned) {
		ncclResult_t r = nccl.ncclCommDestroy(ctx->comm);
		if (r != 0 && st == FP8RT_OK)
			st = nccl_fail(ctx, r, "ncclCommDestroy");
	}
	ctx->comm = NULL;
	if (ctx->comm_stream)
		RELEASE(drv.cuStreamDestroy(ctx->comm_stream));
	ctx->comm_stream = NULL;
	return st;
}

/* NCCL's type for a reduction's dtype (the plan checker allows no other);
 * an all-gather or a broadcast moves bytes: *count is then theirs */
static int
nccl_type(const RtCollective *c, size_t *count)
{
	*count = (size_t)c->count;
	if (c->kind != RT_ALL_GATHER && c->kind != RT_BROADCAST)
		switch (c->dtype) {
		case FP8RT_U8:   return nccl_uint8;
		case FP8RT_I8:   return nccl_int8;
		case FP8RT_I32:  return nccl_int32;
		case FP8RT_I64:  return nccl_int64;
		case FP8RT_F16:  return nccl_f16;
		case FP8RT_BF16: return nccl_bf16;
		case FP8RT_F32:  return nccl_f32;
		case FP8RT_F64:  return nccl_f64;
		default:         break;
		}
	*count = (size_t)c->count * rt_dtype_size(c->dtype);
	return nccl_uint8;
}

fp8rt_status
rt_collective(fp8rt_context *ctx, const RtCollective *c, CUdeviceptr in, CUdeviceptr out, CUevent ready, CUevent done,
	CUstream stream)
{
	static const int ops[] = { nccl_sum, nccl_avg, nccl_prod, nccl_min, nccl_max };
	static const char *const names[] = { "ncclAllGather", "ncclReduceScatter", "ncclAllReduce", "ncclBroadcast" };
	fp8rt_status st = FP8RT_OK;
	size_t count;
	int type = nccl_type(c, &count);
	ncclResult_t r;
	CHECK(drv.cuEventRecord(ready, stream));
	CHECK(drv.cuStreamWaitEvent(ctx->comm_stream, ready, 0));
	if (c->kind == RT_ALL_GATHER)
		r = nccl.ncclAllGather(
			(void *)(uintptr_t)in, (void *)(uintptr_t)out, count, type, ctx->comm, ctx->comm_stream);
	else if (c->kind == RT_REDUCE_SCATTER)
		r = nccl.ncclReduceScatter((void *)(uintptr_t)in, (void *)(uintptr_t)out, count, type, ops[c->op],
			ctx->comm, ctx->comm_stream);
	else if (c->kind == RT_BROADCAST)
		r = nccl.ncclBroadcast((void *)(uintptr_t)in, (void *)(uintptr_t)out, count, type, c->root, ctx->comm,
			ctx->comm_stream);
	else
		r = nccl.ncclAllReduce((void *)(uintptr_t)in, (void *)(uintptr_t)out, count, type, ops[c->op],
			ctx->comm, ctx->comm_stream);
	if (r != 0)
		return nccl_fail(ctx, r, names[c->kind]);
	CHECK(drv.cuEventRecord(done, ctx->comm_stream));
fail:
	return st;
}
