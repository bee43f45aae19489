/* mock_cuda.c — a fake CUDA driver for testing libfp8rt without a GPU.
 *
 * libfp8rt dlopens the driver named by FP8RT_LIBCUDA; the tests point it here.
 * Every entry libfp8rt uses is defined (cuda.h's macros give them the same
 * versioned names the real driver exports). "Device memory" is host memory
 * (new allocations filled with 0xAB, so a buffer the runtime forgets to zero
 * shows), kernels are emulated on the host by name (k0 and k1 of
 * test_data.c), a stream being captured records operations into a graph that
 * cuGraphLaunch replays, and every object is counted so a test can check that
 * the runtime released everything (mockcuda_live). cuBLASLt is mocked by
 * mock_cublaslt.c (in the fault tests' executable), which enqueues its GEMMs
 * here as host operations (mockcuda_host_op).
 *
 * Fault injection: mockcuda_fail_alloc_after(n) makes cuMemAlloc fail with
 * CUDA_ERROR_OUT_OF_MEMORY after n more successful calls. mockcuda_fail_call
 * makes the n-th call from now, of any entry here or of the mock cuBLASLt,
 * fail with CUDA_ERROR_UNKNOWN (or every call from it on). A failed call that
 * creates, creates nothing; one that releases (free, unload, destroy, pop,
 * end a capture) releases all the same, as a real driver reporting a sticky
 * error does; a failed launch into a capture invalidates it. Every call is
 * counted by name (mockcuda_count), so a test can see it made each one fail.
 * cuFuncGetParamInfo counts the queries past a kernel's last parameter
 * (compute-sanitizer's memcheck reports those on a real driver).
 * Built with MOCK_OLD_DRIVER it has no cuFuncGetParamCount (drivers before
 * 13.2).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

/* ---- bookkeeping --------------------------------------------------------- */

static struct {
	int allocs, modules, streams, graphs, execs, events, retained, pushed;
} live;
static int fail_alloc_after = -1;
static int initialized;
static int probes_past_end;

API void
mockcuda_fail_alloc_after(int n)
{
	fail_alloc_after = n;
}

/* cuFuncGetParamInfo queries past a kernel's last parameter so far. */
API int
mockcuda_param_probes_past_end(void)
{
	return probes_past_end;
}

/* The largest grid launched since the last call (0: none). */
static unsigned max_grid;

API unsigned
mockcuda_max_grid(void)
{
	unsigned g = max_grid;
	max_grid = 0;
	return g;
}

/* ---- fault injection ------------------------------------------------------ */

#define MAXNAMES 96

static struct {
	const char *name;
	int calls, failed;
} seen[MAXNAMES];
static int nseen;
static long ncalls, fail_at = -1, fail_from = -1;
static const char *last_failed, *first_failed;

/* Every entry calls this first (the mock cuBLASLt too): the call is counted
 * under its name; nonzero means it is to fail. */
API int
mockcuda_fault(const char *name)
{
	int i = 0;
	while (i < nseen && strcmp(seen[i].name, name) != 0)
		i++;
	if (i == nseen && nseen < MAXNAMES)
		seen[nseen++].name = name;
	long n = ncalls++;
	int fail = n == fail_at || (fail_from >= 0 && n >= fail_from);
	if (i < nseen) {
		seen[i].calls++;
		seen[i].failed += fail;
	}
	if (fail && !first_failed)
		first_failed = name;
	if (fail)
		last_failed = name;
	return fail;
}

/* The n-th call from now fails (n = 0: the next one); with persist, every
 * call from it on. n < 0: none. */
API void
mockcuda_fail_call(long n, int persist)
{
	fail_at = n >= 0 && !persist ? ncalls + n : -1;
	fail_from = n >= 0 && persist ? ncalls + n : -1;
	last_failed = first_failed = NULL;
}

/* Calls made so far; the names of the last and the first call made to fail
 * since mockcuda_fail_call (NULL: none). */
API long
mockcuda_calls(void)
{
	return ncalls;
}
API const char *
mockcuda_failed(void)
{
	return last_failed;
}
API const char *
mockcuda_first_failed(void)
{
	return first_failed;
}

/* How often the entry of this name was called, and made to fail. */
API int
mockcuda_count(const char *name, int *failed)
{
	for (int i = 0; i < nseen; i++)
		if (!strcmp(seen[i].name, name)) {
			if (failed)
				*failed = seen[i].failed;
			return seen[i].calls;
		}
	if (failed)
		*failed = 0;
	return 0;
}

#define INJECTED CUDA_ERROR_UNKNOWN
/* the entry's first line: an injected failure returns at once */
#define FAULT()                               \
	do {                                  \
		if (mockcuda_fault(__func__)) \
			return INJECTED;      \
	} while (0)
/* for releases: the failure is returned after the work is done */
#define FAULT_AFTER() int failed_ = mockcuda_fault(__func__)
#define DONE()        return failed_ ? INJECTED : CUDA_SUCCESS

/* Objects still alive: allocations, modules, streams, graphs, graph execs,
 * events, primary-context retains and pushed contexts, in that order. */
API void
mockcuda_live(int out[8])
{
	int v[8] = { live.allocs, live.modules, live.streams, live.graphs, live.execs, live.events, live.retained,
		live.pushed };
	memcpy(out, v, sizeof v);
}

/* ---- kernels ----------------------------------------------------------- */

typedef void (*HostKernel)(CUdeviceptr *args);

static void
k0(CUdeviceptr *a)
{
	const float *src = (const float *)(uintptr_t)a[0];
	float *dst = (float *)(uintptr_t)a[1];
	for (int i = 0; i < 1024; i++)
		dst[i] = src[i] + src[i];
}

static void
k1(CUdeviceptr *a)
{
	const float *src = (const float *)(uintptr_t)a[0], *zero = (const float *)(uintptr_t)a[1];
	float *dst = (float *)(uintptr_t)a[2];
	for (int i = 0; i < 1024; i++)
		dst[i] = src[i] + zero[0];
}

static const struct {
	const char *name;
	int nparams;
	HostKernel fn;
} kernels[] = { { "k0", 2, k0 }, { "k1", 3, k1 } };

struct CUfunc_st {
	int kernel; /* index into kernels */
	int max_dyn_smem;
};

struct CUmod_st {
	int n;
	struct CUfunc_st fn[8];
	char names[8][64];
};

/* ---- streams and graphs --------------------------------------------------- */

typedef void (*HostOp)(const void *arg);

typedef struct {
	int kind; /* 0 kernel, 1 copy, 2 host operation */
	HostKernel fn;
	CUdeviceptr args[16];
	CUdeviceptr dst, src;
	size_t bytes;
	HostOp host;
	_Alignas(16) unsigned char arg[256];
} Op;

struct CUgraph_st {
	int n, cap;
	Op *ops;
	/* the streams a wait for one of the capture's events brought into it,
	 * and whether the capture's own stream waited for them again */
	struct CUstream_st *forked[8];
	int joined[8], nforked;
};

struct CUgraphExec_st {
	struct CUgraph_st g;
};

/* the graphs being captured now */
#define MAXCAPTURES 8
static struct CUgraph_st *captures[MAXCAPTURES];

struct CUstream_st {
	int capturing, invalid;
	struct CUgraph_st *graph; /* the capture's; a forked stream's is its origin's */
};

struct CUevent_st {
	double t;
	struct CUstream_st *stream; /* recorded into a capture from this stream; NULL: not */
	struct CUgraph_st *graph;
};

static void
run_op(const Op *op)
{
	if (op->kind == 0)
		op->fn((CUdeviceptr *)op->args);
	else if (op->kind == 1)
		memmove((void *)(uintptr_t)op->dst, (const void *)(uintptr_t)op->src, op->bytes);
	else
		op->host(op->arg);
}

/* Run now, or record when the stream is being captured. */
static CUresult
submit(CUstream s, const Op *op)
{
	if (s && s->capturing) {
		struct CUgraph_st *g = s->graph;
		if (g->n == g->cap) {
			g->cap = g->cap ? 2 * g->cap : 8;
			g->ops = realloc(g->ops, (size_t)g->cap * sizeof *g->ops);
		}
		g->ops[g->n++] = *op;
		return CUDA_SUCCESS;
	}
	run_op(op);
	return CUDA_SUCCESS;
}

/* An injected failure of work enqueued into a capture invalidates it. */
static CUresult
enqueue_fault(const char *name, CUstream s)
{
	if (!mockcuda_fault(name))
		return CUDA_SUCCESS;
	if (s && s->capturing)
		s->invalid = 1;
	return INJECTED;
}

/* fn(arg) on the stream, in order with its other work (the mock cuBLASLt's
 * GEMMs); n bytes of arg are copied. */
API CUresult
mockcuda_host_op(CUstream s, HostOp fn, const void *arg, size_t n)
{
	Op op = { .kind = 2, .host = fn };
	if (n > sizeof op.arg)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(op.arg, arg, n);
	return submit(s, &op);
}

/* ---- the driver API --------------------------------------------------------- */

#define NEED_INIT()                                        \
	do {                                               \
		if (!initialized)                          \
			return CUDA_ERROR_NOT_INITIALIZED; \
	} while (0)

API CUresult CUDAAPI
cuInit(unsigned int flags)
{
	(void)flags;
	FAULT();
	initialized = 1;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuDriverGetVersion(int *v)
{
	FAULT();
	*v = 13000;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuGetErrorName(CUresult e, const char **s)
{
	FAULT();
	switch (e) {
	case CUDA_ERROR_OUT_OF_MEMORY:                *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case CUDA_ERROR_INVALID_PTX:                  *s = "CUDA_ERROR_INVALID_PTX"; break;
	case CUDA_ERROR_NOT_FOUND:                    *s = "CUDA_ERROR_NOT_FOUND"; break;
	case CUDA_ERROR_INVALID_VALUE:                *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: *s = "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"; break;
	case CUDA_ERROR_UNKNOWN:                      *s = "CUDA_ERROR_UNKNOWN"; break;
	default:                                      *s = "CUDA_ERROR_MOCK"; break;
	}
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuGetErrorString(CUresult e, const char **s)
{
	FAULT();
	*s = e == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : e == INJECTED ? "injected by the mock" : "mock error";
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuDeviceGetCount(int *n)
{
	NEED_INIT();
	FAULT();
	*n = 1;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuDeviceGet(CUdevice *d, int ordinal)
{
	NEED_INIT();
	FAULT();
	*d = ordinal;
	return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

API CUresult CUDAAPI
cuDeviceGetName(char *name, int len, CUdevice d)
{
	(void)d;
	FAULT();
	snprintf(name, (size_t)len, "Mock H200");
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)d;
	FAULT();
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:          *v = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:          *v = 0; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:              *v = 132; break;
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:                *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
	default:                                                    *v = 0; break;
	}
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
	(void)d;
	FAULT();
	*bytes = (size_t)141 << 30;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	(void)d;
	FAULT();
	*c = (CUcontext)(uintptr_t)0x1000;
	live.retained++;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuDevicePrimaryCtxRelease(CUdevice d)
{
	(void)d;
	FAULT_AFTER();
	live.retained--;
	DONE();
}

API CUresult CUDAAPI
cuCtxPushCurrent(CUcontext c)
{
	(void)c;
	FAULT();
	live.pushed++;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuCtxPopCurrent(CUcontext *c)
{
	FAULT_AFTER();
	*c = (CUcontext)(uintptr_t)0x1000;
	if (live.pushed == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	live.pushed--;
	DONE();
}

API CUresult CUDAAPI
cuCtxSynchronize(void)
{
	FAULT();
	return live.pushed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* Finds ".entry NAME(" for each known kernel; "%f1, %f1, %f1" is a syntax error. */
API CUresult CUDAAPI
cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *opt, void **val)
{
	const char *ptx = image;
	char *elog = NULL;
	size_t elen = 0;
	FAULT();
	for (unsigned i = 0; i < n; i++) {
		if (opt[i] == CU_JIT_ERROR_LOG_BUFFER)
			elog = val[i];
		if (opt[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
			elen = (size_t)(uintptr_t)val[i];
	}
	if (strstr(ptx, "%f1, %f1, %f1")) {
		if (elog && elen)
			snprintf(elog, elen,
				"ptxas application ptx input, line 48; error   : Arguments mismatch for "
				"instruction 'add'\nptxas fatal   : Ptx assembly aborted due to errors");
		return CUDA_ERROR_INVALID_PTX;
	}
	struct CUmod_st *mod = calloc(1, sizeof *mod);
	for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
		char pat[80];
		snprintf(pat, sizeof pat, ".entry %s(", kernels[k].name);
		if (strstr(ptx, pat) && mod->n < 8) {
			mod->fn[mod->n].kernel = (int)k;
			mod->fn[mod->n].max_dyn_smem = 48 * 1024;
			snprintf(mod->names[mod->n++], 64, "%s", kernels[k].name);
		}
	}
	live.modules++;
	*m = mod;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuModuleUnload(CUmodule m)
{
	FAULT_AFTER();
	free(m);
	live.modules--;
	DONE();
}

API CUresult CUDAAPI
cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	FAULT();
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->names[i], name)) {
			*f = &m->fn[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

API CUresult CUDAAPI
cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
	FAULT();
	if (i >= (size_t)kernels[f->kernel].nparams) {
		probes_past_end++;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*off = 8 * i;
	*size = 8;
	return CUDA_SUCCESS;
}

#ifndef MOCK_OLD_DRIVER
API CUresult CUDAAPI
cuFuncGetParamCount(CUfunction f, size_t *n)
{
	FAULT();
	*n = (size_t)kernels[f->kernel].nparams;
	return CUDA_SUCCESS;
}
#endif

API CUresult CUDAAPI
cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
	FAULT();
	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:         *v = 1024; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn_smem; break;
	default:                                              *v = 0; break;
	}
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
	FAULT();
	if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
		if (v > 232448)
			return CUDA_ERROR_INVALID_VALUE;
		f->max_dyn_smem = v;
	}
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t smem)
{
	(void)f;
	FAULT();
	*n = smem > 232448 ? 0 : 2048 / block;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuMemAlloc(CUdeviceptr *p, size_t bytes)
{
	NEED_INIT();
	FAULT();
	if (fail_alloc_after == 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (fail_alloc_after > 0)
		fail_alloc_after--;
	void *m = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
	memset(m, 0xab, bytes < (1u << 20) ? bytes : (1u << 20)); /* cuBLASLt's 32 MiB: its start */
	*p = (CUdeviceptr)(uintptr_t)m;
	live.allocs++;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuMemFree(CUdeviceptr p)
{
	FAULT_AFTER();
	free((void *)(uintptr_t)p);
	live.allocs--;
	DONE();
}

API CUresult CUDAAPI
cuMemsetD8(CUdeviceptr p, unsigned char v, size_t n)
{
	FAULT();
	memset((void *)(uintptr_t)p, v, n);
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	FAULT();
	memcpy((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	FAULT();
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	CUresult r = enqueue_fault(__func__, s);
	if (r)
		return r;
	Op op = { .kind = 1, .dst = dst, .src = src, .bytes = n };
	return submit(s, &op);
}

static CUresult
launch(const char *name, CUfunction f, unsigned grid, unsigned block, unsigned smem, CUstream s, void **params)
{
	CUresult r = enqueue_fault(name, s);
	if (r)
		return r;
	if (!grid || !block || block > 1024 || (int)smem > f->max_dyn_smem) {
		if (s && s->capturing)
			s->invalid = 1;
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (grid > max_grid)
		max_grid = grid;
	Op op = { .kind = 0, .fn = kernels[f->kernel].fn };
	for (int i = 0; i < kernels[f->kernel].nparams; i++)
		op.args[i] = *(CUdeviceptr *)params[i];
	return submit(s, &op);
}

API CUresult CUDAAPI
cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
	unsigned smem, CUstream s, void **params, void **extra)
{
	(void)gy, (void)gz, (void)by, (void)bz, (void)extra;
	return launch(__func__, f, gx, bx, smem, s, params);
}

API CUresult CUDAAPI
cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
	unsigned smem, CUstream s, void **params)
{
	(void)gy, (void)gz, (void)by, (void)bz;
	if (gx > (2048 / bx) * 132u)
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	return launch(__func__, f, gx, bx, smem, s, params);
}

API CUresult CUDAAPI
cuStreamCreate(CUstream *s, unsigned int flags)
{
	(void)flags;
	FAULT();
	*s = calloc(1, sizeof **s);
	live.streams++;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuStreamDestroy(CUstream s)
{
	FAULT_AFTER();
	free(s);
	live.streams--;
	DONE();
}

API CUresult CUDAAPI
cuStreamSynchronize(CUstream s)
{
	(void)s;
	FAULT();
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
	FAULT();
	*st = s && s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode)
{
	(void)mode;
	FAULT();
	if (!s || s->capturing)
		return CUDA_ERROR_ILLEGAL_STATE;
	s->capturing = 1;
	s->invalid = 0;
	s->graph = calloc(1, sizeof *s->graph);
	live.graphs++;
	for (int i = 0; i < MAXCAPTURES; i++)
		if (!captures[i]) {
			captures[i] = s->graph;
			break;
		}
	return CUDA_SUCCESS;
}

static void
capture_ends(CUgraph g)
{
	for (int i = 0; i < MAXCAPTURES; i++)
		if (captures[i] == g)
			captures[i] = NULL;
}

static int
capturing_now(CUgraph g)
{
	for (int i = 0; g && i < MAXCAPTURES; i++)
		if (captures[i] == g)
			return 1;
	return 0;
}

/* s is in a capture another stream began */
static int
forked_into(CUstream s)
{
	for (int i = 0; s->graph && i < s->graph->nforked; i++)
		if (s->graph->forked[i] == s)
			return 1;
	return 0;
}

static void
graph_free(CUgraph g)
{
	free(g->ops);
	free(g);
	live.graphs--;
}

API CUresult CUDAAPI
cuGraphDestroy(CUgraph g)
{
	FAULT_AFTER();
	graph_free(g);
	DONE();
}

/* An injected failure ends the capture all the same and makes no graph; so
 * does a stream forked into it and not joined back. The forked streams leave
 * the capture with it. */
API CUresult CUDAAPI
cuStreamEndCapture(CUstream s, CUgraph *g)
{
	FAULT_AFTER();
	if (!s->capturing || forked_into(s))
		return CUDA_ERROR_ILLEGAL_STATE;
	s->capturing = 0;
	capture_ends(s->graph);
	int unjoined = 0;
	for (int i = 0; i < s->graph->nforked; i++) {
		struct CUstream_st *f = s->graph->forked[i];
		unjoined |= !s->graph->joined[i];
		s->invalid |= f->invalid;
		f->capturing = 0, f->graph = NULL, f->invalid = 0;
	}
	s->graph->nforked = 0;
	if (unjoined && !failed_ && !s->invalid) {
		graph_free(s->graph);
		*g = NULL;
		return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
	}
	if (s->invalid || failed_) {
		graph_free(s->graph);
		*g = NULL;
		return failed_ ? INJECTED : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	}
	*g = s->graph;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuGraphInstantiate(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
	(void)flags;
	FAULT();
	struct CUgraphExec_st *x = calloc(1, sizeof *x);
	x->g.n = g->n;
	x->g.ops = malloc((size_t)(g->n ? g->n : 1) * sizeof *g->ops);
	if (g->n) /* a capture of nothing (a copy onto itself skipped) is an empty graph */
		memcpy(x->g.ops, g->ops, (size_t)g->n * sizeof *g->ops);
	live.execs++;
	*e = x;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuGraphLaunch(CUgraphExec e, CUstream s)
{
	FAULT();
	for (int i = 0; i < e->g.n; i++)
		submit(s, &e->g.ops[i]);
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuGraphExecDestroy(CUgraphExec e)
{
	FAULT_AFTER();
	free(e->g.ops);
	free(e);
	live.execs--;
	DONE();
}

API CUresult CUDAAPI
cuEventCreate(CUevent *e, unsigned int flags)
{
	(void)flags;
	FAULT();
	*e = calloc(1, sizeof **e);
	live.events++;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuEventRecord(CUevent e, CUstream s)
{
	struct timespec ts;
	FAULT();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	e->t = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
	e->stream = s && s->capturing ? s : NULL;
	e->graph = e->stream ? s->graph : NULL;
	return CUDA_SUCCESS;
}

/* Streams run their work as it is enqueued: nothing to wait for. A wait for
 * an event recorded into a capture brings the stream into that capture (its
 * work is recorded into the same graph, in the order it is enqueued, which
 * is an order the real graph may run it in); the capture's own stream
 * waiting for an event of a stream so brought in joins that stream back. */
API CUresult CUDAAPI
cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
	(void)flags;
	FAULT();
	if (!capturing_now(e->graph)) /* not recorded into a capture still going */
		return CUDA_SUCCESS;
	struct CUgraph_st *g = e->graph;
	if (!s->capturing) {
		if (g->nforked == 8)
			return CUDA_ERROR_NOT_SUPPORTED;
		s->capturing = 1, s->invalid = 0, s->graph = g;
		g->forked[g->nforked] = s, g->joined[g->nforked++] = 0;
		return CUDA_SUCCESS;
	}
	if (s->graph != g)
		return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
	for (int i = 0; i < g->nforked; i++)
		if (g->forked[i] == e->stream && s != e->stream)
			g->joined[i] = 1;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuEventSynchronize(CUevent e)
{
	(void)e;
	FAULT();
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	FAULT();
	*ms = (float)(b->t - a->t);
	if (*ms <= 0)
		*ms = 1e-4f;
	return CUDA_SUCCESS;
}

API CUresult CUDAAPI
cuEventDestroy(CUevent e)
{
	FAULT_AFTER();
	free(e);
	live.events--;
	DONE();
}
