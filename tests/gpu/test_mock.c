/* test_mock.c — libfp8rt's CUDA-side logic on the mock driver (mock_cuda.c),
 * so it runs on every machine: context lifecycle, program loading and its
 * failures, the `zero` buffer, direct runs, graph capture / replay /
 * recapture / least-recently-used replacement, runs into a caller's own
 * capture, timing, allocation failures at every point, fp8rt_scaled_mm's
 * argument checks, and fp8run end to end — each ending with a check that
 * every driver object was released. Programs here have no gemm step:
 * cuBLASLt needs a real GPU (test_gemm.c, test_program.c). */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cuda.h>

#include <jansson.h>

#include "rt_test.h"
#include "safetensors.h"
#include "test_data.h"

#define N         1024
#define GEMM_LINE 17 /* the test program's gemm line, dropped here */

static void *
mock(void)
{
	void *h = dlopen(MOCKCUDA_PATH, RTLD_NOW);
	cr_assert(h, "%s", dlerror());
	return h;
}

static void *
sym(const char *name)
{
	void *f = dlsym(mock(), name);
	cr_assert(f, "mock has no %s", name);
	return f;
}

/* A context on the mock driver. */
static fp8rt_context *
mock_context(void)
{
	fp8rt_context *ctx = NULL;
	setenv("FP8RT_LIBCUDA", MOCKCUDA_PATH, 1);
	CHECK_OK(fp8rt_context_create(0, &ctx), NULL);
	return ctx;
}

/* What the mock still holds: allocations, modules, streams, graphs, execs,
 * events, retains, pushes. */
static void
live(int v[8])
{
	void (*f)(int *) = (void (*)(int *))(uintptr_t)sym("mockcuda_live");
	f(v);
}

static void
assert_live(int allocs, int modules, int streams, int execs, int retained, const char *when)
{
	int v[8];
	live(v);
	cr_assert(v[0] == allocs && v[1] == modules && v[2] == streams && v[3] == 0 && v[4] == execs && v[5] == 0 &&
			v[6] == retained && v[7] == 0,
		"%s: live allocs %d (want %d) modules %d (%d) streams %d (%d) graphs %d execs %d (%d) events %d "
		"retained %d (%d) pushed %d",
		when, v[0], allocs, v[1], modules, v[2], streams, v[3], v[4], execs, v[5], v[6], retained, v[7]);
}

static void
fail_alloc_after(int n)
{
	void (*f)(int) = (void (*)(int))(uintptr_t)sym("mockcuda_fail_alloc_after");
	f(n);
}

static char *
program_text(void)
{
	return test_program_ptx(GEMM_LINE, NULL);
}

static fp8rt_program *
load(fp8rt_context *ctx)
{
	char *ptx = program_text();
	fp8rt_program *p = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "mock.ptx", &p), ctx);
	free(ptx);
	return p;
}

/* Inputs and outputs on the mock device. */
typedef struct {
	fp8rt_tensor in[6], out[3];
	float x[N];
} Io;

static void
make_io(fp8rt_context *ctx, Io *io, float base)
{
	fp8rt_program *p = load(ctx);
	for (int i = 0; i < N; i++)
		io->x[i] = base + (float)i * 0.5f;
	for (int side = 0; side < 2; side++)
		for (int i = 0; i < (side ? 3 : 6); i++) {
			fp8rt_tensor_info info;
			void *d = NULL;
			CHECK_OK(side ? fp8rt_program_output(p, i, &info) : fp8rt_program_input(p, i, &info), ctx);
			size_t bytes = fp8rt_dtype_size(info.dtype);
			for (int k = 0; k < info.rank; k++)
				bytes *= (size_t)info.dims[k];
			CHECK_OK(fp8rt_malloc(ctx, bytes, &d), ctx);
			(side ? io->out : io->in)[i] = fp8rt_tensor_dense(d, info.dtype, info.rank, info.dims);
		}
	CHECK_OK(fp8rt_memcpy_htod(ctx, io->in[0].data, io->x, sizeof io->x), ctx);
	fp8rt_program_destroy(p);
}

static void
free_io(fp8rt_context *ctx, Io *io)
{
	for (int i = 0; i < 6; i++)
		fp8rt_free(ctx, io->in[i].data);
	for (int i = 0; i < 3; i++)
		fp8rt_free(ctx, io->out[i].data);
}

static void
check(fp8rt_context *ctx, const Io *io, const char *what)
{
	static float y[N], xc[N];
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, y, io->out[0].data, sizeof y), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, xc, io->out[2].data, sizeof xc), ctx);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(y[i], 2 * io->x[i], "%s: y[%d]: expected %g, got %g", what, i, 2 * io->x[i], y[i]);
		cr_assert_eq(xc[i], io->x[i], "%s: xc[%d]: expected %g, got %g", what, i, io->x[i], xc[i]);
	}
}

static void
clear(fp8rt_context *ctx, const Io *io)
{
	CHECK_OK(fp8rt_memset(ctx, io->out[0].data, 0, N * 4), ctx);
	CHECK_OK(fp8rt_memset(ctx, io->out[2].data, 0, N * 4), ctx);
}

Test(mock, context_lifecycle)
{
	fp8rt_context *ctx = mock_context();
	fp8rt_device_props pr;
	CHECK_OK(fp8rt_device_properties(ctx, &pr), ctx);
	cr_assert_str_eq(pr.name, "Mock H200");
	cr_assert(pr.cc_major == 9 && pr.sm_count == 132 && pr.cooperative_launch == 1);
	assert_live(0, 0, 1, 0, 1, "after create");
	ASSERT_FAILS(fp8rt_context_create(1, &(fp8rt_context *){ NULL }), FP8RT_NO_DEVICE, NULL,
		"no CUDA device 1: this machine has 1");
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

Test(mock, direct_run)
{
	fp8rt_context *ctx = mock_context();
	Io io;
	make_io(ctx, &io, 1.0f);
	fp8rt_program *p = load(ctx);
	CHECK_OK(fp8rt_program_set_graphs(p, 0), ctx);
	CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);
	check(ctx, &io, "direct (zero buffer zeroed at load)");
	clear(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);
	check(ctx, &io, "direct, second run");
	assert_live(9 + 1, 1, 1, 0, 1, "loaded, graphs off");
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	free_io(ctx, &io);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

/* A launch's per_sm (plan version 4) caps the blocks an SM: grid=0 is
 * per_sm x 132 on the mock H200, not the occupancy's 8 x 132. */
Test(mock, per_sm_caps_the_grid)
{
	fp8rt_context *ctx = mock_context();
	unsigned (*max_grid)(void) = (unsigned (*)(void))(uintptr_t)sym("mockcuda_max_grid");
	Io io;
	make_io(ctx, &io, 1.0f);
	char *v1 = program_text();
	char *v4 = test_replace(
		v1, "// fp8cc-plan 1\n// target sm_90\n", "// fp8cc-plan 4\n// target sm_90\n// function main\n");
	for (int per_sm = 0; per_sm <= 9; per_sm += 3) {
		char line[96];
		snprintf(line, sizeof line, "grid=0 block=256 smem=0 coop=0 per_sm=%d args=in:0,buf:0", per_sm);
		char *text =
			per_sm ? test_replace(v4, "grid=0 block=256 smem=0 coop=0 args=in:0,buf:0", line) : strdup(v4);
		fp8rt_program *p = NULL;
		CHECK_OK(fp8rt_program_load_data(ctx, text, strlen(text), "per_sm.ptx", &p), ctx);
		CHECK_OK(fp8rt_program_set_graphs(p, 0), ctx);
		max_grid();
		CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);
		check(ctx, &io, "per_sm");
		clear(ctx, &io);
		unsigned want = (per_sm && per_sm < 8 ? (unsigned)per_sm : 8u) * 132u, got = max_grid();
		cr_assert_eq(got, want, "per_sm=%d: grid %u, want %u", per_sm, got, want);
		CHECK_OK(fp8rt_program_destroy(p), ctx);
		free(text);
	}
	char *zero = test_replace(v4, "grid=0 block=256 smem=0 coop=0 args=in:0,buf:0",
		"grid=0 block=256 smem=0 coop=0 per_sm=0 args=in:0,buf:0");
	fp8rt_program *bad = NULL;
	ASSERT_FAILS(fp8rt_program_load_data(ctx, zero, strlen(zero), "zero.ptx", &bad), FP8RT_BAD_PROGRAM, ctx,
		"zero.ptx:16: per_sm=0 is out of range [1, 1024]");
	free(v1), free(v4), free(zero);
	free_io(ctx, &io);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

Test(mock, graphs_capture_replay_recapture)
{
	fp8rt_context *ctx = mock_context();
	Io io[6];
	for (int i = 0; i < 6; i++)
		make_io(ctx, &io[i], (float)i * 100.0f);
	fp8rt_program *p = load(ctx);
	CHECK_OK(fp8rt_run(p, io[0].in, 6, io[0].out, 3, NULL), ctx);
	check(ctx, &io[0], "capture");
	assert_live(6 * 9 + 1, 1, 1, 1, 1, "one graph");
	clear(ctx, &io[0]);
	CHECK_OK(fp8rt_run(p, io[0].in, 6, io[0].out, 3, NULL), ctx);
	check(ctx, &io[0], "replay");
	assert_live(6 * 9 + 1, 1, 1, 1, 1, "replay made no new graph");
	/* new data behind the same pointers: the replay reads it */
	for (int i = 0; i < N; i++)
		io[0].x[i] = -io[0].x[i];
	CHECK_OK(fp8rt_memcpy_htod(ctx, io[0].in[0].data, io[0].x, sizeof io[0].x), ctx);
	CHECK_OK(fp8rt_run(p, io[0].in, 6, io[0].out, 3, NULL), ctx);
	check(ctx, &io[0], "replay, new data");
	/* five more pointer sets: at most four graphs are kept */
	for (int k = 1; k < 6; k++) {
		CHECK_OK(fp8rt_run(p, io[k].in, 6, io[k].out, 3, NULL), ctx);
		check(ctx, &io[k], "recapture");
	}
	assert_live(6 * 9 + 1, 1, 1, 4, 1, "four graphs kept");
	/* io[5] is the most recent: replayed, not captured again; io[0] was dropped and is recaptured */
	clear(ctx, &io[5]);
	CHECK_OK(fp8rt_run(p, io[5].in, 6, io[5].out, 3, NULL), ctx);
	check(ctx, &io[5], "replay of the newest");
	clear(ctx, &io[0]);
	CHECK_OK(fp8rt_run(p, io[0].in, 6, io[0].out, 3, NULL), ctx);
	check(ctx, &io[0], "recapture of a dropped one");
	float us[4];
	CHECK_OK(fp8rt_time_runs(p, io[1].in, 6, io[1].out, 3, NULL, 1, 4, us), ctx);
	check(ctx, &io[1], "after timing");
	CHECK_OK(fp8rt_program_set_graphs(p, 0), ctx);
	assert_live(6 * 9 + 1, 1, 1, 0, 1, "graphs off frees them");
	for (int i = 0; i < 6; i++)
		free_io(ctx, &io[i]);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL); /* frees the program too */
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

/* A workspace from the caller: its size is the plan's, the `zero` buffer in
 * it is zeroed when it is set (the mock fills new memory with 0xAB, so a
 * buffer left unzeroed shows in y), the library's own is freed, kept graphs
 * are dropped (they hold the old addresses), and NULL brings back a
 * library-allocated one. */
Test(mock, callers_workspace)
{
	fp8rt_context *ctx = mock_context();
	Io io;
	make_io(ctx, &io, 2.0f);
	fp8rt_program *p = load(ctx), *r = NULL;
	size_t bytes = 0;
	void *ws = NULL;
	CHECK_OK(fp8rt_function_workspace(p, 0, &bytes), ctx);
	cr_assert_eq(bytes, 4352);
	CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);
	assert_live(9 + 1, 1, 1, 1, 1, "the library's workspace, one graph");
	CHECK_OK(fp8rt_malloc(ctx, 8192, &ws), ctx);
	ASSERT_FAILS(fp8rt_function_set_workspace(p, 0, ws, 4000), FP8RT_INVALID_ARGUMENT, ctx,
		"mock.ptx function main needs 4352 bytes of workspace, not 4000");
	ASSERT_FAILS(fp8rt_function_set_workspace(p, 0, (char *)ws + 16, 4352), FP8RT_INVALID_ARGUMENT, ctx,
		"is not 256-byte aligned");
	ASSERT_FAILS(
		fp8rt_function_set_workspace(p, 1, ws, 8192), FP8RT_INVALID_ARGUMENT, ctx, "function 1 out of range");
	CHECK_OK(fp8rt_function_set_workspace(p, 0, ws, 8192), ctx);
	assert_live(9 + 1, 1, 1, 0, 1, "the caller's workspace: the library's freed, the graph dropped");
	clear(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);
	check(ctx, &io, "in the caller's workspace");
	CHECK_OK(fp8rt_function_set_workspace(p, 0, NULL, 0), ctx);
	assert_live(9 + 2, 1, 1, 0, 1, "the library's own again");
	clear(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);
	check(ctx, &io, "in a new library workspace");
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	CHECK_OK(fp8rt_free(ctx, ws), ctx);
	/* a program read without a device says its size, and cannot take one */
	char *ptx = program_text();
	CHECK_OK(fp8rt_program_read(ptx, strlen(ptx), "read.ptx", &r), NULL);
	free(ptx);
	CHECK_OK(fp8rt_function_workspace(r, 0, &bytes), NULL);
	cr_assert_eq(bytes, 4352);
	ASSERT_FAILS(fp8rt_function_set_workspace(r, 0, NULL, 0), FP8RT_INVALID_ARGUMENT, NULL,
		"read.ptx was read without a device");
	fp8rt_program_destroy(r);
	free_io(ctx, &io);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

/* One kernel launched twice (fp8cc launches one kernel for every copy of
 * the same code): each launch resolves on its own, both run. */
Test(mock, one_kernel_two_launches)
{
	fp8rt_context *ctx = mock_context();
	Io io;
	make_io(ctx, &io, 4.0f);
	char *ptx = test_program_ptx(GEMM_LINE, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,buf:0");
	fp8rt_program *p = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "twice.ptx", &p), ctx);
	free(ptx);
	for (int graphs = 1; graphs >= 0; graphs--) {
		CHECK_OK(fp8rt_program_set_graphs(p, graphs), ctx);
		clear(ctx, &io);
		CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);
		check(ctx, &io, graphs ? "k0 twice, captured" : "k0 twice, step by step");
	}
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	free_io(ctx, &io);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

/* The caller captures its own stream: the plan goes into the caller's graph. */
Test(mock, run_into_callers_capture)
{
	fp8rt_context *ctx = mock_context();
	Io io;
	make_io(ctx, &io, 3.0f);
	fp8rt_program *p = load(ctx);
	__typeof__(cuStreamCreate) *create = (__typeof__(cuStreamCreate) *)(uintptr_t)sym("cuStreamCreate");
	__typeof__(cuStreamDestroy) *destroy = (__typeof__(cuStreamDestroy) *)(uintptr_t)sym("cuStreamDestroy_v2");
	__typeof__(cuStreamBeginCapture) *begin =
		(__typeof__(cuStreamBeginCapture) *)(uintptr_t)sym("cuStreamBeginCapture_v2");
	__typeof__(cuStreamEndCapture) *end = (__typeof__(cuStreamEndCapture) *)(uintptr_t)sym("cuStreamEndCapture");
	__typeof__(cuGraphInstantiate) *inst =
		(__typeof__(cuGraphInstantiate) *)(uintptr_t)sym("cuGraphInstantiateWithFlags");
	__typeof__(cuGraphLaunch) *glaunch = (__typeof__(cuGraphLaunch) *)(uintptr_t)sym("cuGraphLaunch");
	__typeof__(cuGraphDestroy) *gdestroy = (__typeof__(cuGraphDestroy) *)(uintptr_t)sym("cuGraphDestroy");
	__typeof__(cuGraphExecDestroy) *xdestroy =
		(__typeof__(cuGraphExecDestroy) *)(uintptr_t)sym("cuGraphExecDestroy");
	CUstream s;
	CUgraph g;
	CUgraphExec x;
	cr_assert_eq(create(&s, 0), CUDA_SUCCESS);
	cr_assert_eq(begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, s), ctx);
	cr_assert_eq(end(s, &g), CUDA_SUCCESS);
	clear(ctx, &io);
	cr_assert_eq(inst(&x, g, 0), CUDA_SUCCESS);
	cr_assert_eq(glaunch(x, s), CUDA_SUCCESS);
	check(ctx, &io, "the caller's graph");
	xdestroy(x), gdestroy(g), destroy(s);
	assert_live(9 + 1, 1, 1, 0, 1, "the runtime made no graph of its own");
	free_io(ctx, &io);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

static void
load_fails(fp8rt_context *ctx, const char *ptx, fp8rt_status st, const char *substr)
{
	fp8rt_program *p = (fp8rt_program *)1;
	ASSERT_FAILS(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "bad.ptx", &p), st, ctx, substr);
	cr_assert_null(p);
	assert_live(0, 0, 1, 0, 1, substr);
}

Test(mock, load_failures_release_everything)
{
	fp8rt_context *ctx = mock_context();
	char *good = program_text();
	char *syntax = test_replace(good, "add.f32 %f2, %f1, %f1;", "add.f32 %f2, %f1, %f1, %f1;");
	load_fails(ctx, syntax, FP8RT_BAD_PROGRAM,
		"cuModuleLoadDataEx(&module, ptx, 4, jit_options, jit_values) failed: CUDA_ERROR_INVALID_PTX");
	cr_assert(strstr(fp8rt_last_error(ctx), "JIT error log:\nptxas application ptx input, line 48; error"), "%s",
		fp8rt_last_error(ctx));
	char *t[6];
	t[0] = test_program_ptx(16, "launch k9 grid=2 block=128 smem=0 coop=1 args=buf:0,buf:1,out:0");
	load_fails(ctx, t[0], FP8RT_BAD_PROGRAM, "bad.ptx:16: launch k9: the PTX has no kernel 'k9'");
	t[1] = test_program_ptx(15, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,buf:0,buf:1");
	load_fails(ctx, t[1], FP8RT_BAD_PROGRAM, "bad.ptx:15: launch k0 passes 3 arguments but the kernel takes 2");
	t[2] = test_program_ptx(15, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0");
	load_fails(ctx, t[2], FP8RT_BAD_PROGRAM, "bad.ptx:15: launch k0 passes 1 arguments but the kernel takes 2");
	t[3] = NULL; /* an oversized cooperative grid is no error: the runtime cuts it (program tests) */
	t[4] = test_program_ptx(16, "launch k1 grid=2 block=128 smem=300000 coop=1 args=buf:0,buf:1,out:0");
	load_fails(ctx, t[4], FP8RT_BAD_PROGRAM, "smem=300000 plus 0 static bytes exceeds the device's 232448 bytes");
	char *a = test_program_ptx(2, "target sm_100");
	t[5] = test_replace(a, ".target sm_90\n", ".target sm_100\n");
	load_fails(ctx, t[5], FP8RT_UNSUPPORTED, "the program targets sm_100; device 0 (Mock H200) is sm_90");
	free(a);
	/* sm_89 PTX runs on sm_90 (JIT forward); sm_89a would not */
	a = test_replace(good, "// target sm_90\n", "// target sm_89\n");
	char *b = test_replace(a, ".target sm_90\n", ".target sm_89\n");
	fp8rt_program *p = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, b, strlen(b), "sm89.ptx", &p), ctx);
	fp8rt_program_destroy(p);
	free(a), free(b);
	a = test_program_ptx(2, "target sm_89a");
	b = test_replace(a, ".target sm_90\n", ".target sm_89a\n");
	load_fails(ctx, b, FP8RT_UNSUPPORTED, "the program targets sm_89a");
	free(a), free(b);
	for (int i = 0; i < 6; i++)
		free(t[i]);
	free(syntax);
	/* grid=0 resolves to occupancy x SMs; a large smem raises the kernel's limit */
	a = test_replace(good, "grid=2 block=128 smem=1024", "grid=0 block=128 smem=100000");
	b = test_replace(a, "// launch k0 grid=0", "// # launch k0 grid=0"); /* drop k0: y = x + 0 */
	free(good);
	CHECK_OK(fp8rt_program_load_data(ctx, b, strlen(b), "smem.ptx", &p), ctx);
	fp8rt_program_destroy(p);
	free(a), free(b);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

/* Loading asks the driver for each kernel's parameters without a query past
 * its last one (compute-sanitizer's memcheck reports those): the count
 * comes from cuFuncGetParamCount. */
Test(mock, param_queries_stay_inside_the_kernel)
{
	fp8rt_context *ctx = mock_context();
	int (*probes)(void) = (int (*)(void))(uintptr_t)sym("mockcuda_param_probes_past_end");
	fp8rt_program *p = load(ctx);
	cr_assert_eq(probes(), 0, "loading queried %d parameters past a kernel's last", probes());
	fp8rt_program_destroy(p);
	fp8rt_context_destroy(ctx);
}

/* A driver before 13.2 has no cuFuncGetParamCount: the sizes of the
 * parameters the plan passes are checked, none past the kernel's last, and
 * a launch passing more than the kernel takes is still an error. */
Test(mock_old_driver, param_queries_stay_inside_the_kernel)
{
	fp8rt_context *ctx = NULL;
	void *h = dlopen(MOCKCUDA_OLD_PATH, RTLD_NOW);
	cr_assert(h, "%s", dlerror());
	cr_assert_null(dlsym(h, "cuFuncGetParamCount"), "the old mock has cuFuncGetParamCount");
	int (*probes)(void) = (int (*)(void))(uintptr_t)dlsym(h, "mockcuda_param_probes_past_end");
	setenv("FP8RT_LIBCUDA", MOCKCUDA_OLD_PATH, 1);
	CHECK_OK(fp8rt_context_create(0, &ctx), NULL);
	char *ptx = program_text();
	fp8rt_program *p = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "old.ptx", &p), ctx);
	cr_assert_eq(probes(), 0, "loading queried %d parameters past a kernel's last", probes());
	fp8rt_program_destroy(p);
	char *bad = test_program_ptx(15, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,buf:0,buf:1");
	ASSERT_FAILS(fp8rt_program_load_data(ctx, bad, strlen(bad), "bad.ptx", &p), FP8RT_BAD_PROGRAM, ctx,
		"bad.ptx:15: launch k0 passes 3 arguments but the kernel takes 2");
	free(bad);
	free(ptx);
	fp8rt_context_destroy(ctx);
}

/* Device allocations fail at every point in turn: each failure is
 * FP8RT_OUT_OF_MEMORY with a message, and nothing leaks. */
Test(mock, allocation_failures_release_everything)
{
	fp8rt_context *ctx = mock_context();
	Io io;
	make_io(ctx, &io, 7.0f);
	char *ptx = program_text();
	for (int n = 0;; n++) {
		fp8rt_program *p = NULL;
		fail_alloc_after(n);
		fp8rt_status st = fp8rt_program_load_data(ctx, ptx, strlen(ptx), "oom.ptx", &p);
		if (st == FP8RT_OK) {
			fail_alloc_after(-1);
			CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);
			check(ctx, &io, "after allocation failures");
			fp8rt_program_destroy(p);
			cr_assert(n >= 1, "the program allocated nothing");
			break;
		}
		cr_assert_eq(st, FP8RT_OUT_OF_MEMORY, "%s", fp8rt_last_error(ctx));
		cr_assert(strstr(fp8rt_last_error(ctx), "CUDA_ERROR_OUT_OF_MEMORY"), "%s", fp8rt_last_error(ctx));
		cr_assert(strstr(fp8rt_last_error(ctx), "runtime/"), "no file:line: %s", fp8rt_last_error(ctx));
		assert_live(9, 0, 1, 0, 1, "after a failed load");
	}
	fail_alloc_after(0);
	void *d = (void *)1;
	ASSERT_FAILS(fp8rt_malloc(ctx, 64, &d), FP8RT_OUT_OF_MEMORY, ctx, "cuMemAlloc");
	cr_assert_null(d);
	fail_alloc_after(-1);
	free(ptx);
	free_io(ctx, &io);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

Test(mock, run_checks_tensors)
{
	fp8rt_context *ctx = mock_context();
	Io io;
	make_io(ctx, &io, 0.0f);
	fp8rt_program *p = load(ctx);
	fp8rt_tensor in[6];
	memcpy(in, io.in, sizeof in);
	in[0].dims[0] = 1000;
	ASSERT_FAILS(fp8rt_run(p, in, 6, io.out, 3, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"fp8rt_run: input 0 'x': shape [1000] (rank 1), the program wants [1024]");
	memcpy(in, io.in, sizeof in);
	in[2].strides[0] = 1, in[2].strides[1] = 16; /* column-major */
	ASSERT_FAILS(fp8rt_run(p, in, 6, io.out, 3, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"input 2 'w': stride[1]=16, dense row-major needs 1");
	memcpy(in, io.in, sizeof in);
	in[3].data = (char *)in[3].data + 8;
	ASSERT_FAILS(fp8rt_run(p, in, 6, io.out, 3, NULL), FP8RT_INVALID_ARGUMENT, ctx, "is not 16-byte aligned");
	assert_live(9 + 1, 1, 1, 0, 1, "nothing ran");
	fp8rt_program_destroy(p);
	free_io(ctx, &io);
	fp8rt_context_destroy(ctx);
}

/* fp8rt_scaled_mm checks its arguments before cuBLASLt is touched. */
Test(mock, scaled_mm_argument_checks)
{
	fp8rt_context *ctx = mock_context();
	void *buf = NULL;
	CHECK_OK(fp8rt_malloc(ctx, 65536, &buf), ctx);
	char *base = buf;
	const fp8rt_scaled_mm_args ok = {
		.m = 1000,
		.n = 64,
		.k = 128,
		.a = base,
		.a_dtype = FP8RT_F8E4M3FN,
		.b = base + 16384,
		.b_dtype = FP8RT_F8E5M2,
		.scale_a = (const float *)(base + 32768),
		.scale_b = (const float *)(base + 32768 + 4),
		.d = base + 40960,
		.d_dtype = FP8RT_F32,
	};
	fp8rt_scaled_mm_args a = ok;
	a.b = base + 16384 + 8;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "b (0x");
	a = ok, a.k = 120;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "k=120 is not a multiple of 16");
	a = ok, a.a_dtype = FP8RT_F8E5M2;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_UNSUPPORTED, ctx, "f8e5m2 x f8e5m2 is not supported");
	a = ok, a.bias = base + 512, a.bias_dtype = FP8RT_F16;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"gemm bias dtype f16 with f32 output: cuBLASLt FP8 wants a bf16 bias");
	a = ok, a.ldd = 65;
	ASSERT_FAILS(
		fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "ldd=65: rows must start 16-byte aligned");
	a = ok, a.m = 0;
	CHECK_OK(fp8rt_scaled_mm(ctx, &a, NULL), ctx); /* nothing to do */
	assert_live(1, 0, 1, 0, 1, "no cuBLASLt workspace yet");
	fp8rt_free(ctx, buf);
	fp8rt_context_destroy(ctx);
	assert_live(0, 0, 0, 0, 0, "after destroy");
}

/* ---- fp8run on the mock ----------------------------------------------------- */

static int
sh(const char *cmd, char *out, size_t n)
{
	FILE *f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	size_t got = fread(out, 1, n - 1, f);
	out[got] = 0;
	int status = pclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* dir/name := text (malloc'd, freed here) */
static void
write_file(const char *dir, const char *name, char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert(f, "cannot write %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	free(text);
}

/* DIR/FILE: the test program's inputs, x (f32[N], written as dtype xdt)
 * and zeros, scales 1 */
static void
write_inputs(const char *dir, const char *file, float *x, const char *xdt)
{
	static uint8_t zero[32 * 64];
	static float one = 1;
	const char *names[6] = { "x", "a", "w", "sa", "sb", "bias" };
	const char *dts[6] = { xdt, "F8_E4M3", "F8_E4M3", "F32", "F32", "BF16" };
	int64_t dims[6][2] = { { N, 0 }, { 32, 64 }, { 16, 64 }, { 0, 0 }, { 0, 0 }, { 16, 0 } };
	int ranks[6] = { 1, 2, 2, 0, 0, 1 };
	size_t bytes[6] = { N * sizeof *x, 32 * 64, 16 * 64, 4, 4, 32 };
	void *data[6] = { x, zero, zero, &one, &one, zero };
	StTensor ts[6];
	char path[512], err[512];
	memset(ts, 0, sizeof ts);
	for (int i = 0; i < 6; i++) {
		ts[i].name = (char *)names[i];
		snprintf(ts[i].dtype, sizeof ts[i].dtype, "%s", dts[i]);
		ts[i].rank = ranks[i];
		ts[i].dims[0] = dims[i][0], ts[i].dims[1] = dims[i][1];
		ts[i].nbytes = bytes[i];
		ts[i].data = data[i];
	}
	snprintf(path, sizeof path, "%s/%s", dir, file);
	cr_assert_eq(st_write(path, ts, 6, err, sizeof err), 0, "%s", err);
}

/* DIR/in.safetensors: x, f32[N] */
static void
write_x(const char *dir, float *x)
{
	char path[512], err[512];
	StTensor t = { .name = "x", .rank = 1, .dims = { N }, .nbytes = N * sizeof *x, .data = x };
	snprintf(t.dtype, sizeof t.dtype, "F32");
	snprintf(path, sizeof path, "%s/in.safetensors", dir);
	cr_assert_eq(st_write(path, &t, 1, err, sizeof err), 0, "%s", err);
}

/* A program with collectives: refused without a communicator, run as the
 * one rank of the fake NCCL's (--ranks 1) */
Test(mock, fp8run_collectives)
{
	static float x[N];
	char dir[] = "/tmp/fp8run_coll_XXXXXX", cmd[2048], out[8192], err[512];
	cr_assert(mkdtemp(dir));
	for (int i = 0; i < N; i++)
		x[i] = (float)i - 100.0f;
	write_file(dir, "c.ptx", test_coll_ptx());
	write_x(dir, x);
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' FP8RT_NCCL='%s' '%s' %s/c.ptx --inputs %s/in.safetensors -o %s/out.safetensors 2>&1",
		MOCKCUDA_PATH, MOCKNCCL_PATH, FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s\n%s", cmd, out);
	cr_assert(strstr(out, "runs collectives, and the context has no communicator"), "%s", out);
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' FP8RT_NCCL='%s' '%s' %s/c.ptx --ranks 1 --rank 0 --inputs %s/in.safetensors "
		"-o %s/out.safetensors 2>&1",
		MOCKCUDA_PATH, MOCKNCCL_PATH, FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
	StFile res;
	snprintf(cmd, sizeof cmd, "%s/out.safetensors", dir);
	cr_assert_eq(st_read(cmd, &res, err, sizeof err), 0, "%s", err);
	const StTensor *g = st_find(&res, "g"), *r = st_find(&res, "r"), *s = st_find(&res, "s");
	cr_assert(g && r && s, "outputs g, r, s");
	for (int i = 0; i < N; i++)
		cr_assert(((const float *)g->data)[i] == 2 * x[i] && ((const float *)r->data)[i] == 2 * x[i] &&
				((const float *)s->data)[i] == x[i],
			"[%d]", i);
	st_free(&res);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(mock, fp8run_end_to_end)
{
	static float x[N];
	char dir[] = "/tmp/fp8run_mock_XXXXXX", cmd[2048], out[8192], err[512];
	cr_assert(mkdtemp(dir));
	for (int i = 0; i < N; i++)
		x[i] = (float)i - 512.0f;
	write_file(dir, "p.ptx", program_text());
	write_inputs(dir, "in.safetensors", x, "F32");
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/in.safetensors -o %s/out.safetensors --iters 5 2>&1",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
	cr_assert(strstr(out, "5 runs (graphs on): median"), "%s", out);
	StFile res;
	snprintf(cmd, sizeof cmd, "%s/out.safetensors", dir);
	cr_assert_eq(st_read(cmd, &res, err, sizeof err), 0, "%s", err);
	const StTensor *y = st_find(&res, "y"), *xc = st_find(&res, "xc"), *d = st_find(&res, "d");
	cr_assert(y && xc && d && res.n == 3, "outputs y, d, xc");
	cr_assert_str_eq(y->dtype, "F32");
	cr_assert(d->rank == 2 && d->dims[0] == 32 && d->dims[1] == 16 && !strcmp(d->dtype, "BF16"));
	for (int i = 0; i < N; i++) {
		cr_assert_eq(((const float *)y->data)[i], 2 * x[i], "y[%d]", i);
		cr_assert_eq(((const float *)xc->data)[i], x[i], "xc[%d]", i);
	}
	st_free(&res);
	/* --json: the signature, the device, every timed run */
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/in.safetensors --iters 5 --warmup=1 --json --no-graph",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
	json_error_t je;
	json_t *j = json_loads(out, JSON_REJECT_DUPLICATES, &je);
	cr_assert(j, "not JSON (%s): %s", je.text, out);
	json_t *timing = json_object_get(j, "timing"), *runs = json_object_get(timing, "runs_us");
	cr_assert_eq(json_integer_value(json_object_get(timing, "iters")), 5);
	cr_assert_eq(json_integer_value(json_object_get(timing, "warmup")), 1);
	cr_assert(json_is_false(json_object_get(timing, "graphs")));
	cr_assert_eq(json_array_size(runs), 5);
	double lo = 1e30, hi = -1, median = json_number_value(json_object_get(timing, "median_us"));
	for (size_t i = 0; i < json_array_size(runs); i++) {
		double v = json_number_value(json_array_get(runs, i));
		lo = v < lo ? v : lo, hi = v > hi ? v : hi;
	}
	cr_assert_eq(json_number_value(json_object_get(timing, "min_us")), lo, "min is the least run");
	cr_assert(median >= lo && median <= hi, "median %g outside [%g, %g]", median, lo, hi);
	cr_assert(json_string_value(json_object_get(j, "device")), "%s", out);
	json_t *fn = json_array_get(json_object_get(json_object_get(j, "signature"), "functions"), 0);
	cr_assert_eq(json_array_size(json_object_get(fn, "inputs")), 6);
	json_decref(j);
	/* --wall: the host's clock, back to back and inside a call; --cold:
	 * runs after a memset of 256 MiB */
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/in.safetensors --iters 20 --wall --cold --json",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
	j = json_loads(out, JSON_REJECT_DUPLICATES, &je);
	cr_assert(j, "not JSON (%s): %s", je.text, out);
	timing = json_object_get(j, "timing");
	double wall = json_number_value(json_object_get(timing, "wall_us"));
	double host = json_number_value(json_object_get(timing, "host_us"));
	cr_assert(json_is_number(json_object_get(timing, "wall_us")) && wall > 0, "%s", out);
	cr_assert(json_is_number(json_object_get(timing, "host_us")) && host > 0, "%s", out);
	cr_assert(json_is_number(json_object_get(timing, "cold_us")) &&
			json_number_value(json_object_get(timing, "cold_us")) > 0,
		"%s", out);
	json_decref(j);
	/* wrong dtype of an input */
	write_inputs(dir, "bad.safetensors", x, "I32");
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/bad.safetensors -o %s/o.safetensors 2>&1", MOCKCUDA_PATH,
		FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "fp8run: inputs: input 0 'x': ") &&
			strstr(out, "has I32[1024], the program wants F32[1024]"),
		"%s", out);
	/* a program that does not load */
	snprintf(cmd, sizeof cmd, "FP8RT_LIBCUDA='%s' '%s' %s/in.safetensors --inputs %s/in.safetensors -o %s/o 2>&1",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "fp8run: loading: ") && strstr(out, "not an fp8cc PTX file"), "%s", out);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* A program of two functions with a state slot and no gemm (the mock
 * driver emulates k0 and k1): fp8run names its tensors FUNCTION/NAME, runs
 * forward then backward, times each and the step, and prints both
 * functions in the signature. */
static const char two_functions[] = "// fp8cc-plan 2\n"
				    "// target sm_90\n"
				    "// state 0 x2 f32[1024] from=forward\n"
				    "// function forward\n"
				    "// input 0 x f32[1024]\n"
				    "// output 0 y f32[1024]\n"
				    "// launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,st:0\n"
				    "// copy dst=out:0 src=st:0 bytes=4096\n"
				    "// function backward\n"
				    "// input 0 g f32[1024]\n"
				    "// output 0 z f32[1024]\n"
				    "// workspace 16\n"
				    "// buffer 0 f32[] offset=0 bytes=16 zero\n"
				    "// launch k0 grid=0 block=256 smem=0 coop=0 args=st:0,out:0\n"
				    "// end-plan\n";

Test(mock, fp8run_two_functions)
{
	static float x[N], g[N];
	char dir[] = "/tmp/fp8run_fns_XXXXXX", cmd[2048], out[16384], err[512];
	cr_assert(mkdtemp(dir));
	for (int i = 0; i < N; i++)
		x[i] = (float)i - 100.0f, g[i] = 1;
	snprintf(cmd, sizeof cmd, "%s/p.ptx", dir);
	FILE *f = fopen(cmd, "w");
	cr_assert(f);
	fputs(two_functions, f);
	fputs(test_kernels_ptx, f);
	fclose(f);
	StTensor ts[2];
	memset(ts, 0, sizeof ts);
	const char *names[2] = { "forward/x", "backward/g" };
	void *data[2] = { x, g };
	for (int i = 0; i < 2; i++) {
		ts[i].name = (char *)names[i];
		snprintf(ts[i].dtype, sizeof ts[i].dtype, "F32");
		ts[i].rank = 1;
		ts[i].dims[0] = N;
		ts[i].nbytes = sizeof x;
		ts[i].data = data[i];
	}
	snprintf(cmd, sizeof cmd, "%s/in.safetensors", dir);
	cr_assert_eq(st_write(cmd, ts, 2, err, sizeof err), 0, "%s", err);
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/in.safetensors -o %s/out.safetensors --iters 3 2>&1",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
	cr_assert(strstr(out, "p.ptx: forward: 3 runs") && strstr(out, "p.ptx: backward: 3 runs") &&
			strstr(out, "the step (every function once): median"),
		"%s", out);
	StFile res;
	snprintf(cmd, sizeof cmd, "%s/out.safetensors", dir);
	cr_assert_eq(st_read(cmd, &res, err, sizeof err), 0, "%s", err);
	const StTensor *y = st_find(&res, "forward/y"), *z = st_find(&res, "backward/z");
	cr_assert(y && z && res.n == 2, "outputs forward/y, backward/z");
	for (int i = 0; i < N; i++) {
		cr_assert_eq(((const float *)y->data)[i], 2 * x[i], "y[%d]", i);
		cr_assert_eq(((const float *)z->data)[i], 4 * x[i], "z[%d] is twice the saved 2x", i);
	}
	st_free(&res);
	snprintf(cmd, sizeof cmd, "FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/in.safetensors --iters 2 --json",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
	json_error_t je;
	json_t *j = json_loads(out, JSON_REJECT_DUPLICATES, &je);
	cr_assert(j, "not JSON (%s): %s", je.text, out);
	json_t *fns = json_object_get(json_object_get(j, "signature"), "functions");
	cr_assert_eq(json_array_size(fns), 2);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(fns, 1), "name")), "backward");
	json_t *tf = json_object_get(json_object_get(j, "timing"), "functions");
	cr_assert_eq(json_array_size(tf), 2, "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(tf, 0), "name")), "forward");
	json_decref(j);
	/* without the forward's input the program does not run */
	snprintf(cmd, sizeof cmd, "%s/in.safetensors", dir);
	cr_assert_eq(st_write(cmd, ts + 1, 1, err, sizeof err), 0, "%s", err);
	snprintf(cmd, sizeof cmd, "FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/in.safetensors -o %s/o 2>&1",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "input 0 'forward/x' is not in"), "%s", out);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* fp8run --externs: a program with an extern, the extern from a library;
 * without it, the load fails naming the extern */
Test(mock, fp8run_externs)
{
	static float x[N];
	char dir[] = "/tmp/fp8run_ext_XXXXXX", cmd[2048], out[8192], err[512];
	cr_assert(mkdtemp(dir));
	for (int i = 0; i < N; i++)
		x[i] = (float)i * 0.5f - 10;
	write_file(dir, "p.ptx", test_extern_ptx());
	write_x(dir, x);
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/in.safetensors -o %s/o.safetensors 2>&1", MOCKCUDA_PATH,
		FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(
		strstr(out, "the program calls extern that is not registered on this context: test.affine"), "%s", out);
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --externs '%s' --inputs %s/in.safetensors -o %s/o.safetensors 2>&1",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, PLUGIN_AFFINE_PATH, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
	StFile res;
	snprintf(cmd, sizeof cmd, "%s/o.safetensors", dir);
	cr_assert_eq(st_read(cmd, &res, err, sizeof err), 0, "%s", err);
	const StTensor *y = st_find(&res, "y"), *n = st_find(&res, "n");
	cr_assert(y && n, "outputs y and n");
	for (int i = 0; i < N; i++)
		cr_assert_eq(((const float *)y->data)[i], (float)(2 * x[i] * 3.0 - 1), "y[%d]", i);
	cr_assert_eq(*(const int64_t *)n->data, N);
	st_free(&res);
	snprintf(cmd, sizeof cmd,
		"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --externs %s/nope.so --inputs %s/in.safetensors -o - 2>&1",
		MOCKCUDA_PATH, FP8RUN_PATH, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "fp8run: externs: ") && strstr(out, "nope.so"), "%s", out);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Outputs share memory with nothing but what the plan allows: an output
 * that updates an input in place (inplace=1) or copies one, given exactly
 * that input's memory. Anything else that overlaps fails before a launch. */
Test(mock, outputs_share_only_what_the_plan_allows)
{
	fp8rt_context *ctx = mock_context();
	Io io;
	make_io(ctx, &io, 0.0f);
	char *base = program_text(), *v = test_replace(base, "fp8cc-plan 1", "fp8cc-plan 7");
	char *v7 = test_replace(v, "// target sm_90\n", "// target sm_90\n// function main\n");
	char *yes = test_replace(v7, "output 0 y f32[1024]", "output 0 y f32[1024] updates=0 inplace=1");
	char *no = test_replace(v7, "output 0 y f32[1024]", "output 0 y f32[1024] updates=0 inplace=0");
	fp8rt_program *p = NULL, *q = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, yes, strlen(yes), "yes.ptx", &p), ctx);
	CHECK_OK(fp8rt_program_load_data(ctx, no, strlen(no), "no.ptx", &q), ctx);
	int input = -2, inplace = -2;
	CHECK_OK(fp8rt_function_output_updates(p, 0, 0, &input, &inplace), ctx);
	cr_assert(input == 0 && inplace == 1, "y updates input %d, inplace %d", input, inplace);
	CHECK_OK(fp8rt_function_output_updates(q, 0, 0, &input, NULL), ctx);
	cr_assert_eq(input, 0);
	CHECK_OK(fp8rt_function_output_updates(p, 0, 2, &input, &inplace), ctx);
	cr_assert(input == -1 && inplace == 0, "xc updates input %d, inplace %d", input, inplace);
	ASSERT_FAILS(fp8rt_function_output_updates(p, 0, 3, &input, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"fp8rt_function_output_updates: output 3 out of range (main has 3)");
	ASSERT_FAILS(fp8rt_function_output_updates(p, 0, 0, NULL, NULL), FP8RT_INVALID_ARGUMENT, ctx, "input is NULL");

	fp8rt_tensor out[3];
	memcpy(out, io.out, sizeof out);
	out[0].data = io.in[0].data; /* y into x: allowed by one plan, not the other */
	CHECK_OK(fp8rt_run(p, io.in, 6, out, 3, NULL), ctx);
	CHECK_OK(fp8rt_run(p, io.in, 6, out, 3, NULL), ctx); /* the same pointers: checked once */
	ASSERT_FAILS(fp8rt_run(q, io.in, 6, out, 3, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"fp8rt_run: output 0 'y' shares memory with input 0 'x': it holds that input's new values, but the "
		"program reads the input after writing there (the plan's inplace=0)");
	out[2].data = io.in[0].data; /* xc, x's copy, into x as well: two outputs in one place */
	ASSERT_FAILS(fp8rt_run(p, io.in, 6, out, 3, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"fp8rt_run: output 2 'xc' shares memory with output 0 'y': outputs need memory of their own");
	memcpy(out, io.out, sizeof out);
	out[2].data = io.in[0].data; /* the copy of x into x alone: allowed */
	CHECK_OK(fp8rt_run(q, io.in, 6, out, 3, NULL), ctx);
	out[2].data = (char *)io.in[0].data + 16; /* overlapping, not the same */
	ASSERT_FAILS(fp8rt_run(q, io.in, 6, out, 3, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"output 2 'xc' shares memory with input 0 'x'");
	memcpy(out, io.out, sizeof out);
	out[1].data = io.in[1].data; /* d (bf16[32,16]) over a (f8[32,64]): unrelated */
	ASSERT_FAILS(fp8rt_run(p, io.in, 6, out, 3, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"output 1 'd' shares memory with input 1 'a'");
	out[1].data = (char *)io.out[0].data + 1024; /* d inside y */
	ASSERT_FAILS(fp8rt_run(p, io.in, 6, out, 3, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"output 1 'd' shares memory with output 0 'y'");
	CHECK_OK(fp8rt_run(p, io.in, 6, io.out, 3, NULL), ctx);

	/* the key needs version 7, an input before it of the same type, once */
	const char *bad[][2] = {
		{ "output 0 y f32[1024] updates=0 inplace=1", "1" },
		{ "output 0 y f32[1024] updates=3 inplace=1", "7" },
		{ "output 0 y f32[1024] updates=9 inplace=1", "7" },
		{ "output 0 y f32[1024] updates=0 inplace=2", "7" },
		{ "output 0 y f32[1024] inplace=1 updates=0", "7" },
	};
	const char *why[] = { "output key 'updates' needs plan version 7", "updates input 3 'sa', of another type",
		"updates=9 names no input before it", "inplace", "'output' wants 3 words" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *t = test_replace(*bad[i][1] == '7' ? v7 : base, "output 0 y f32[1024]", bad[i][0]);
		fp8rt_program *r = NULL;
		ASSERT_FAILS(
			fp8rt_program_load_data(ctx, t, strlen(t), "bad.ptx", &r), FP8RT_BAD_PROGRAM, NULL, why[i]);
		free(t);
	}
	char *t = test_replace(yes, "output 2 xc f32[1024]", "output 2 xc f32[1024] updates=0 inplace=0");
	fp8rt_program *r = NULL;
	ASSERT_FAILS(fp8rt_program_load_data(ctx, t, strlen(t), "bad.ptx", &r), FP8RT_BAD_PROGRAM, NULL,
		"outputs 0 and 2 both update input 0");
	free(t);
	free(base), free(v), free(v7), free(yes), free(no);
	fp8rt_program_destroy(p);
	fp8rt_program_destroy(q);
	free_io(ctx, &io);
	fp8rt_context_destroy(ctx);
}

/* The rule on shared memory, from many random layouts: inputs and outputs
 * in slots of one allocation, some at an input's own address, some 16 or
 * 1024 bytes into a slot. A run fails exactly when this test's pair-by-pair
 * reading of the rule says so (y may take x's memory, updating it in place;
 * xc, x's copy, may too, alone or with another copy: none here). */
Test(mock, shared_memory_rule_holds_for_random_layouts)
{
	fp8rt_context *ctx = mock_context();
	char *base = program_text(), *v = test_replace(base, "fp8cc-plan 1", "fp8cc-plan 7");
	char *v7 = test_replace(v, "// target sm_90\n", "// target sm_90\n// function main\n");
	char *yes = test_replace(v7, "output 0 y f32[1024]", "output 0 y f32[1024] updates=0 inplace=1");
	fp8rt_program *p = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, yes, strlen(yes), "yes.ptx", &p), ctx);
	const size_t inb[6] = { 4096, 2048, 1024, 4, 4, 32 }, outb[3] = { 4096, 1024, 4096 };
	const int src[3] = { -1, -1, 0 }, upd[3] = { 0, -1, -1 };
	char *arena = NULL;
	CHECK_OK(fp8rt_malloc(ctx, 16 * 4096 + 4096, (void **)&arena), ctx);
	fp8rt_tensor in[6], out[3];
	int64_t dims[6][2] = { { 1024 }, { 32, 64 }, { 16, 64 }, { 0 }, { 0 }, { 16 } },
		odims[3][2] = { { 1024 }, { 32, 16 }, { 1024 } };
	const fp8rt_dtype idt[6] = { FP8RT_F32, FP8RT_F8E4M3FN, FP8RT_F8E4M3FN, FP8RT_F32, FP8RT_F32, FP8RT_BF16 };
	const fp8rt_dtype odt[3] = { FP8RT_F32, FP8RT_BF16, FP8RT_F32 };
	const int irank[6] = { 1, 2, 2, 0, 0, 1 }, orank[3] = { 1, 2, 1 };
	unsigned seed = 12345;
	int fails = 0;
	for (int trial = 0; trial < 4000; trial++) {
		uintptr_t ia[6], oa[3];
		for (int j = 0; j < 6; j++) {
			seed = seed * 1103515245u + 12345u;
			ia[j] = (uintptr_t)arena + ((seed >> 16) % 16) * 4096;
			in[j] = fp8rt_tensor_dense((void *)ia[j], idt[j], irank[j], dims[j]);
		}
		for (int i = 0; i < 3; i++) {
			seed = seed * 1103515245u + 12345u;
			unsigned r = seed >> 16;
			oa[i] = r % 4 == 0   ? ia[(r / 4) % 6]
				: r % 4 == 1 ? (uintptr_t)arena + ((r / 4) % 16) * 4096 + ((r / 64) % 2 ? 1024 : 16)
					     : (uintptr_t)arena + ((r / 4) % 16) * 4096;
			out[i] = fp8rt_tensor_dense((void *)oa[i], odt[i], orank[i], odims[i]);
		}
		int bad = 0;
		for (int i = 0; i < 3; i++) {
			for (int j = 0; j < 6; j++)
				bad |= oa[i] < ia[j] + inb[j] && ia[j] < oa[i] + outb[i] &&
					!(oa[i] == ia[j] && (src[i] == j || upd[i] == j));
			for (int k = 0; k < i; k++)
				bad |= oa[i] < oa[k] + outb[k] && oa[k] < oa[i] + outb[i] &&
					!(oa[i] == oa[k] && src[i] >= 0 && src[i] == src[k] && ia[src[i]] == oa[i]);
		}
		fp8rt_status st = fp8rt_run(p, in, 6, out, 3, NULL);
		fails += bad ? st != FP8RT_INVALID_ARGUMENT : st != FP8RT_OK;
		cr_expect(bad ? st == FP8RT_INVALID_ARGUMENT : st == FP8RT_OK, "trial %d: expected %s, got %d (%s)",
			trial, bad ? "a refusal" : "a run", st, fp8rt_last_error(ctx));
		if (fails > 3)
			break;
	}
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	fp8rt_free(ctx, arena);
	free(base), free(v), free(v7), free(yes);
	fp8rt_program_destroy(p);
	fp8rt_context_destroy(ctx);
}

/* fp8run --in-place: y, which updates x in place, is given x's memory; the
 * file's y is read from there. xc, x copied after y is written (a plan the
 * compiler would mark inplace=0, written here by hand), shows where y went. */
Test(mock, fp8run_in_place)
{
	static float x[N];
	char dir[] = "/tmp/fp8run_mock_XXXXXX", cmd[2048], out[8192], err[512];
	cr_assert(mkdtemp(dir));
	for (int i = 0; i < N; i++)
		x[i] = (float)i - 512.0f;
	char *base = program_text(), *v = test_replace(base, "fp8cc-plan 1", "fp8cc-plan 7");
	char *v7 = test_replace(v, "// target sm_90\n", "// target sm_90\n// function main\n");
	char *u = test_replace(v7, "output 0 y f32[1024]", "output 0 y f32[1024] updates=0 inplace=1");
	write_file(dir, "p.ptx", u); /* and frees it */
	free(base), free(v), free(v7);
	write_inputs(dir, "in.safetensors", x, "F32");
	for (int in_place = 0; in_place < 2; in_place++) {
		snprintf(cmd, sizeof cmd,
			"FP8RT_LIBCUDA='%s' '%s' %s/p.ptx --inputs %s/in.safetensors -o %s/out.safetensors%s 2>&1",
			MOCKCUDA_PATH, FP8RUN_PATH, dir, dir, dir, in_place ? " --in-place" : "");
		cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
		StFile res;
		snprintf(cmd, sizeof cmd, "%s/out.safetensors", dir);
		cr_assert_eq(st_read(cmd, &res, err, sizeof err), 0, "%s", err);
		const StTensor *y = st_find(&res, "y"), *xc = st_find(&res, "xc");
		cr_assert(y && xc, "outputs y, xc");
		for (int i = 0; i < N; i++) {
			cr_assert_eq(((const float *)y->data)[i], 2 * x[i], "in place %d: y[%d]", in_place, i);
			cr_assert_eq(((const float *)xc->data)[i], (in_place ? 2 : 1) * x[i], "in place %d: xc[%d]",
				in_place, i);
		}
		st_free(&res);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
