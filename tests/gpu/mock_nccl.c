/* mock_nccl.c — a fake NCCL for testing libfp8rt's collectives without a
 * GPU (FP8RT_NCCL points libfp8rt at it). A communicator of one rank runs
 * each collective as the copy it is over one rank, on the mock driver's
 * host memory, enqueued on its stream like any of the mock's work (done at
 * once, or recorded into the stream's capture and done at each replay); one
 * of more ranks says the others never came (ncclInvalidUsage), which is
 * enough to test that libfp8rt reports what NCCL says. Communicators are
 * counted (mocknccl_live) and calls too (mocknccl_calls), and
 * mocknccl_fail_next makes the next collective fail. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef struct {
	char internal[128];
} ncclUniqueId;

typedef struct {
	int nranks, rank;
} Comm;

static int live, calls, fail_next;

API int
mocknccl_live(void)
{
	return live;
}

API int
mocknccl_calls(void)
{
	return calls;
}

API void
mocknccl_fail_next(void)
{
	fail_next = 1;
}

API int
ncclGetVersion(int *v)
{
	*v = 22805;
	return 0;
}

API int
ncclGetUniqueId(ncclUniqueId *id)
{
	memset(id->internal, 7, sizeof id->internal);
	return 0;
}

API int
ncclCommInitRank(void **comm, int nranks, ncclUniqueId id, int rank)
{
	Comm *c;
	if (id.internal[0] != 7 || nranks < 1 || rank < 0 || rank >= nranks)
		return 4; /* ncclInvalidArgument */
	if (!(c = calloc(1, sizeof *c)))
		return 2;
	c->nranks = nranks, c->rank = rank;
	*comm = c;
	live++;
	return 0;
}

API int
ncclCommDestroy(void *comm)
{
	free(comm);
	live--;
	return 0;
}

API int
ncclCommCount(void *comm, int *n)
{
	*n = ((Comm *)comm)->nranks;
	return 0;
}

API int
ncclCommUserRank(void *comm, int *r)
{
	*r = ((Comm *)comm)->rank;
	return 0;
}

API const char *
ncclGetErrorString(int r)
{
	return r == 5 ? "invalid usage (the mock: the other ranks never came)" : "mock NCCL error";
}

static const size_t size[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2 };

typedef struct {
	const void *send;
	void *recv;
	size_t bytes;
} Copy;

static void
run_copy(const void *arg)
{
	const Copy *c = arg;
	memmove(c->recv, c->send, c->bytes);
}

/* The collective over one rank, a copy on the stream: on the mock driver's
 * (mockcuda_host_op: done now, or recorded into the stream's capture and
 * done at each replay, as NCCL's kernels are), at once without one. */
static int
copy(void *comm, const void *send, void *recv, size_t count, int type, void *stream)
{
	static int (*host_op)(void *, void (*)(const void *), const void *, size_t);
	static int looked;
	calls++;
	if (fail_next) {
		fail_next = 0;
		return 3; /* ncclInternalError */
	}
	if (((Comm *)comm)->nranks != 1)
		return 5;
	if (type < 0 || type > 9)
		return 4;
	if (!looked) {
		const char *cuda = getenv("FP8RT_LIBCUDA");
		void *lib = cuda ? dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : NULL;
		host_op = lib ? (int (*)(void *, void (*)(const void *), const void *, size_t))(uintptr_t)dlsym(
					lib, "mockcuda_host_op")
			      : NULL;
		looked = 1; /* the handle stays open: the driver outlives this library's use */
	}
	Copy c = { send, recv, count * size[type] };
	if (host_op)
		return host_op(stream, run_copy, &c, sizeof c) ? 2 : 0;
	run_copy(&c);
	return 0;
}

API int
ncclAllGather(const void *send, void *recv, size_t count, int type, void *comm, void *stream)
{
	return copy(comm, send, recv, count, type, stream);
}

API int
ncclReduceScatter(const void *send, void *recv, size_t count, int type, int op, void *comm, void *stream)
{
	return op < 0 || op > 4 ? 4 : copy(comm, send, recv, count, type, stream);
}

API int
ncclBroadcast(const void *send, void *recv, size_t count, int type, int root, void *comm, void *stream)
{
	return root != 0 ? 4 : copy(comm, send, recv, count, type, stream);
}

API int
ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, void *comm, void *stream)
{
	return op < 0 || op > 4 ? 4 : copy(comm, send, recv, count, type, stream);
}
