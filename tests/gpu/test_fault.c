/* test_fault.c — injected faults: the n-th CUDA Driver or cuBLASLt call
 * fails, for every n along a program's whole life, on the mock driver
 * (mock_cuda.c) and the mock cuBLASLt (mock_cublaslt.c, linked into this
 * executable).
 *
 * The life is a list of steps, each one public call or a few: create the
 * context, allocate and fill the tensors, load the test program (two
 * launches, a gemm with bias, a copy, a zero buffer), run it (the capture),
 * run it again (the replay), time it, give it a workspace of the caller's
 * and run it without graphs, an
 * fp8rt_scaled_mm, a training step of two functions with a state (load,
 * make a state, forward, backward, free them) and a batched fp8rt_matmul,
 * load and destroy a program that raises a kernel's shared memory, destroy
 * the program, free the tensors, destroy the context.
 * Outputs are compared with a run without faults after every run.
 *
 * One fault at call n: the step that made call n must fail, with the
 * failed call's name and its place in runtime/ in the message; the step is
 * then done again and must succeed (the program or context is still usable),
 * except a destroy or free, after which the object is gone all the same.
 * Every fault from call n on: the steps fail until the end, and the
 * destroys still release everything. Either way every driver and cuBLASLt
 * object is released at the end (and, under the sanitizers, every byte of
 * host memory). Then every entry libfp8rt calls — each name in
 * RT_DRIVER_FUNCS, the optional ones, and each cuBLASLt function named in
 * runtime/'s sources — must have been made to fail at least once. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "mock_cublaslt.h"
#include "rt.h"
#include "rt_test.h"
#include "test_data.h"

#define N  1024
#define NT 11 /* tensors: 6 inputs, 3 outputs, the scaled_mm result, the step's results */

/* ---- the mock driver's controls ------------------------------------------- */

static void *
sym(const char *name)
{
	static void *h;
	if (!h)
		h = dlopen(MOCKCUDA_PATH, RTLD_NOW);
	cr_assert(h, "%s", dlerror());
	void *f = dlsym(h, name);
	cr_assert(f, "mock has no %s", name);
	return f;
}

static void
fail_call(long n, int persist)
{
	((void (*)(long, int))(uintptr_t)sym("mockcuda_fail_call"))(n, persist);
}

static long
calls(void)
{
	return ((long (*)(void))(uintptr_t)sym("mockcuda_calls"))();
}

static const char *
failed_call(void)
{
	return ((const char *(*)(void))(uintptr_t)sym("mockcuda_failed"))();
}

static const char *
first_failed_call(void)
{
	return ((const char *(*)(void))(uintptr_t)sym("mockcuda_first_failed"))();
}

static int
count(const char *name, int *failed)
{
	return ((int (*)(const char *, int *))(uintptr_t)sym("mockcuda_count"))(name, failed);
}

static void
assert_nothing_live(const char *when)
{
	int v[8], lt[4];
	((void (*)(int *))(uintptr_t)sym("mockcuda_live"))(v);
	mocklt_live(lt);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(v[i], 0,
			"%s: driver objects still live: allocs %d modules %d streams %d graphs %d execs %d "
			"events %d retained %d pushed %d",
			when, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(lt[i], 0, "%s: cuBLASLt objects still live: handles %d descs %d layouts %d prefs %d", when,
			lt[0], lt[1], lt[2], lt[3]);
}

/* ---- the life of a program ------------------------------------------------- */

typedef struct {
	fp8rt_context *ctx;
	fp8rt_program *p;
	void *d[NT];
	fp8rt_tensor t[NT];
	void *ws; /* the workspace the caller gives the program */
	int nchecks;
} World;

typedef struct {
	uint8_t out[3][N * 4];   /* y, d, xc */
	uint8_t mm[32 * 16 * 2]; /* the scaled_mm result */
	uint8_t step[N * 4];     /* the training step's and the batched matmul's results */
} Outputs;

static Outputs golden;
static int have_golden;
static char *prog_ptx, *smem_ptx;

/* x: f32[1024], a: e4m3[32,64], w: e4m3[16,64], sa, sb: f32[], bias: bf16[16];
 * y: f32[1024], d: bf16[32,16], xc: f32[1024]; the scaled_mm d: bf16[32,16] */
static const struct {
	fp8rt_dtype dt;
	int rank;
	int64_t dims[2];
} shapes[NT] = {
	{ FP8RT_F32, 1, { N } },
	{ FP8RT_F8E4M3FN, 2, { 32, 64 } },
	{ FP8RT_F8E4M3FN, 2, { 16, 64 } },
	{ FP8RT_F32, 0, { 0 } },
	{ FP8RT_F32, 0, { 0 } },
	{ FP8RT_BF16, 1, { 16 } },
	{ FP8RT_F32, 1, { N } },
	{ FP8RT_BF16, 2, { 32, 16 } },
	{ FP8RT_F32, 1, { N } },
	{ FP8RT_BF16, 2, { 32, 16 } },
	{ FP8RT_F32, 1, { N } },
};

static size_t
bytes_of(int i)
{
	size_t n = fp8rt_dtype_size(shapes[i].dt);
	for (int d = 0; d < shapes[i].rank; d++)
		n *= (size_t)shapes[i].dims[d];
	return n;
}

static fp8rt_status
s_create(World *w)
{
	return fp8rt_context_create(0, &w->ctx);
}

static fp8rt_status
s_alloc(World *w)
{
	for (int i = 0; i < NT; i++) {
		fp8rt_status st;
		if (!w->d[i] && (st = fp8rt_malloc(w->ctx, bytes_of(i), &w->d[i])) != FP8RT_OK)
			return st;
		w->t[i] = fp8rt_tensor_dense(w->d[i], shapes[i].dt, shapes[i].rank, shapes[i].dims);
	}
	return FP8RT_OK;
}

static fp8rt_status
s_upload(World *w)
{
	static float x[N], sc[2] = { 0.5f, 2.0f };
	static uint8_t a[32 * 64], wt[16 * 64];
	static uint16_t bias[16];
	uint64_t seed = 7;
	for (int i = 0; i < N; i++)
		x[i] = (float)i * 0.25f - 100.0f;
	for (int i = 0; i < 32 * 64; i++)
		a[i] = rnd_fp8(&seed, FP8RT_F8E4M3FN);
	for (int i = 0; i < 16 * 64; i++)
		wt[i] = rnd_fp8(&seed, FP8RT_F8E4M3FN);
	for (int i = 0; i < 16; i++)
		bias[i] = bf16_encode((float)i - 8.0f);
	const void *src[6] = { x, a, wt, &sc[0], &sc[1], bias };
	for (int i = 0; i < 6; i++) {
		fp8rt_status st = fp8rt_memcpy_htod(w->ctx, w->d[i], src[i], bytes_of(i));
		if (st != FP8RT_OK)
			return st;
	}
	return FP8RT_OK;
}

static fp8rt_status
s_load(World *w)
{
	return w->p ? FP8RT_OK : fp8rt_program_load_data(w->ctx, prog_ptx, strlen(prog_ptx), "fault.ptx", &w->p);
}

static fp8rt_status
s_clear(World *w)
{
	for (int i = 6; i < NT; i++) {
		fp8rt_status st = fp8rt_memset(w->ctx, w->d[i], 0, bytes_of(i));
		if (st != FP8RT_OK)
			return st;
	}
	return FP8RT_OK;
}

static fp8rt_status
s_run(World *w)
{
	return fp8rt_run(w->p, w->t, 6, w->t + 6, 3, NULL);
}

/* every output as the run without faults left it */
static fp8rt_status
s_check(World *w)
{
	Outputs got;
	fp8rt_status st = fp8rt_synchronize(w->ctx, NULL);
	for (int i = 0; i < 3 && st == FP8RT_OK; i++)
		st = fp8rt_memcpy_dtoh(w->ctx, got.out[i], w->d[6 + i], bytes_of(6 + i));
	if (st == FP8RT_OK)
		st = fp8rt_memcpy_dtoh(w->ctx, got.mm, w->d[9], sizeof got.mm);
	if (st == FP8RT_OK)
		st = fp8rt_memcpy_dtoh(w->ctx, got.step, w->d[10], sizeof got.step);
	if (st != FP8RT_OK)
		return st;
	if (!have_golden) {
		golden = got;
		have_golden = 1;
	}
	for (int i = 0; i < 3; i++)
		cr_assert(
			memcmp(got.out[i], golden.out[i], bytes_of(6 + i)) == 0, "output %d differs after a fault", i);
	cr_assert(memcmp(got.mm, golden.mm, sizeof got.mm) == 0, "the scaled_mm result differs after a fault");
	cr_assert(memcmp(got.step, golden.step, sizeof got.step) == 0, "the training step differs after a fault");
	w->nchecks++;
	return FP8RT_OK;
}

static fp8rt_status
s_time(World *w)
{
	float us[2];
	return fp8rt_time_runs(w->p, w->t, 6, w->t + 6, 3, NULL, 1, 2, us);
}

static fp8rt_status
s_graphs_off(World *w)
{
	return fp8rt_program_set_graphs(w->p, 0);
}

static fp8rt_status
s_scaled_mm(World *w)
{
	fp8rt_scaled_mm_args a = {
		.m = 32,
		.n = 16,
		.k = 64,
		.a = w->d[1],
		.a_dtype = FP8RT_F8E4M3FN,
		.b = w->d[2],
		.b_dtype = FP8RT_F8E4M3FN,
		.scale_a = w->d[3],
		.scale_b = w->d[4],
		.bias = w->d[5],
		.bias_dtype = FP8RT_BF16,
		.d = w->d[9],
		.d_dtype = FP8RT_BF16,
	};
	return fp8rt_scaled_mm(w->ctx, &a, NULL);
}

/* A view of n floats of tensor i at element off, of the given shape. */
static fp8rt_tensor
view(World *w, int i, int64_t off, int rank, const int64_t *dims)
{
	return fp8rt_tensor_dense((float *)w->d[i] + off, FP8RT_F32, rank, dims);
}

/* the step program (test_data.c) on views of x, into tensor 10; then a
 * batched fp8rt_matmul; the program and its state freed whatever failed */
static fp8rt_status
s_step_program(World *w)
{
	fp8rt_program *q = NULL;
	fp8rt_state *s = NULL;
	char *ptx = test_step_ptx(0, NULL);
	fp8rt_status st = fp8rt_program_load_data(w->ctx, ptx, strlen(ptx), "step.ptx", &q);
	free(ptx);
	if (st != FP8RT_OK)
		return st;
	fp8rt_tensor in[] = { view(w, 0, 0, 2, (int64_t[]){ 8, 16 }), view(w, 0, 128, 2, (int64_t[]){ 12, 16 }),
		view(w, 0, 320, 1, (int64_t[]){ 12 }), view(w, 0, 336, 3, (int64_t[]){ 2, 8, 16 }),
		view(w, 0, 592, 2, (int64_t[]){ 16, 4 }) };
	fp8rt_tensor out[] = { view(w, 10, 0, 2, (int64_t[]){ 8, 12 }), view(w, 10, 96, 3, (int64_t[]){ 2, 8, 4 }) };
	fp8rt_tensor bin[] = { view(w, 0, 656, 2, (int64_t[]){ 8, 12 }), in[1] };
	fp8rt_tensor bout[] = { view(w, 10, 160, 2, (int64_t[]){ 8, 16 }), view(w, 10, 288, 2, (int64_t[]){ 12, 16 }),
		view(w, 10, 480, 2, (int64_t[]){ 8, 12 }) };
	fp8rt_matmul_args mm = {
		.size = sizeof mm,
		.m = 4,
		.n = 8,
		.k = 16,
		.batch = 2,
		.dtype = FP8RT_F32,
		.a = w->d[0],
		.stride_a = 64,
		.b = (float *)w->d[0] + 128,
		.stride_b = 0,
		.trans_b = 1,
		.d = (float *)w->d[10] + 576,
		.stride_d = 32,
		.epilogue = FP8RT_EPILOGUE_RELU,
	};
	st = fp8rt_state_create(q, &s);
	if (st == FP8RT_OK)
		st = fp8rt_run_function(q, 0, s, in, 5, out, 2, NULL);
	if (st == FP8RT_OK)
		st = fp8rt_run_function(q, 1, s, bin, 2, bout, 3, NULL);
	if (st == FP8RT_OK)
		st = fp8rt_matmul(w->ctx, &mm, NULL);
	fp8rt_status st2 = fp8rt_state_destroy(s), st3 = fp8rt_program_destroy(q);
	return st ? st : st2 ? st2 : st3;
}

/* a program with collectives of all three kinds on a communicator of one
 * rank of the fake NCCL (made by the first such step), into outputs of
 * its own */
static fp8rt_status
s_collectives(World *w)
{
	fp8rt_program *q = NULL;
	unsigned char id[FP8RT_NCCL_ID_BYTES];
	void *buf = NULL;
	int n, r;
	fp8rt_status st = FP8RT_OK;
	if (fp8rt_context_comm(w->ctx, &n, &r) != FP8RT_OK &&
		((st = fp8rt_nccl_unique_id(w->ctx, id)) != FP8RT_OK ||
			(st = fp8rt_context_init_comm(w->ctx, id, 1, 0)) != FP8RT_OK))
		return st;
	char *ptx = test_coll_ptx();
	st = fp8rt_program_load_data(w->ctx, ptx, strlen(ptx), "coll.ptx", &q);
	free(ptx);
	if (st != FP8RT_OK)
		return st;
	if ((st = fp8rt_malloc(w->ctx, 3 * N * 4, &buf)) == FP8RT_OK) {
		fp8rt_tensor out[3];
		for (int i = 0; i < 3; i++)
			out[i] = fp8rt_tensor_dense((float *)buf + i * N, FP8RT_F32, 1, (int64_t[]){ N });
		st = fp8rt_run(q, &w->t[0], 1, out, 3, NULL);
	}
	fp8rt_status st2 = fp8rt_free(w->ctx, buf), st3 = fp8rt_program_destroy(q);
	return st ? st : st2 ? st2 : st3;
}

/* a kernel with more dynamic shared memory than its default limit */
static fp8rt_status
s_smem_program(World *w)
{
	fp8rt_program *q = NULL;
	fp8rt_status st = fp8rt_program_load_data(w->ctx, smem_ptx, strlen(smem_ptx), "smem.ptx", &q);
	if (st != FP8RT_OK)
		return st;
	return fp8rt_program_destroy(q);
}

/* the program's workspace from the caller (8 KiB, it needs 4352 bytes) */
static fp8rt_status
s_callers_workspace(World *w)
{
	fp8rt_status st = w->ws ? FP8RT_OK : fp8rt_malloc(w->ctx, 8192, &w->ws);
	return st != FP8RT_OK ? st : fp8rt_function_set_workspace(w->p, 0, w->ws, 8192);
}

static fp8rt_status
s_destroy_program(World *w)
{
	fp8rt_status st = fp8rt_program_destroy(w->p);
	w->p = NULL;
	return st;
}

static fp8rt_status
s_free(World *w)
{
	fp8rt_status st = FP8RT_OK;
	for (int i = 0; i < NT; i++) {
		fp8rt_status fst = fp8rt_free(w->ctx, w->d[i]);
		if (st == FP8RT_OK)
			st = fst;
		w->d[i] = NULL;
	}
	fp8rt_status fst = fp8rt_free(w->ctx, w->ws);
	w->ws = NULL;
	return st != FP8RT_OK ? st : fst;
}

static fp8rt_status
s_destroy_context(World *w)
{
	fp8rt_status st = fp8rt_context_destroy(w->ctx);
	w->ctx = NULL;
	return st;
}

typedef struct {
	const char *name;
	fp8rt_status (*fn)(World *);
	int release; /* the object is gone after it, failed or not */
} Step;

static const Step steps[] = {
	{ "create the context", s_create, 0 },
	{ "allocate", s_alloc, 0 },
	{ "upload", s_upload, 0 },
	{ "load", s_load, 0 },
	{ "clear", s_clear, 0 },
	{ "first run (capture)", s_run, 0 },
	{ "scaled_mm", s_scaled_mm, 0 },
	{ "training step", s_step_program, 0 },
	{ "collectives", s_collectives, 0 },
	{ "check", s_check, 0 },
	{ "clear", s_clear, 0 },
	{ "second run (replay)", s_run, 0 },
	{ "scaled_mm", s_scaled_mm, 0 },
	{ "training step", s_step_program, 0 },
	{ "check", s_check, 0 },
	{ "time", s_time, 0 },
	{ "the caller's workspace", s_callers_workspace, 0 },
	{ "graphs off", s_graphs_off, 0 },
	{ "clear", s_clear, 0 },
	{ "run without graphs", s_run, 0 },
	{ "scaled_mm", s_scaled_mm, 0 },
	{ "training step", s_step_program, 0 },
	{ "check", s_check, 0 },
	{ "shared-memory program", s_smem_program, 0 },
	{ "destroy the program", s_destroy_program, 1 },
	{ "free", s_free, 1 },
	{ "destroy the context", s_destroy_context, 1 },
};
#define NSTEPS (int)(sizeof steps / sizeof steps[0])

/* "cuMemAlloc_v2" as the runtime's message spells the call: cuMemAlloc */
static void
call_name(const char *entry, char *buf, size_t n)
{
	snprintf(buf, n, "%s", entry);
	char *v = strstr(buf, "_v");
	if (v && v[2] >= '0' && v[2] <= '9')
		*v = 0;
	if ((v = strstr(buf, "WithFlags")))
		*v = 0;
}

/* A step failed with call `entry` injected: a status, a message naming it
 * at its place in runtime/. Under persistent faults a step of several
 * public calls reports its last one, and the driver cannot name errors
 * either: the message names an injected error. */
static void
assert_reported(fp8rt_status st, const char *entry, const Step *s, long n, int persist)
{
	char name[96];
	const char *msg = fp8rt_last_error(NULL);
	cr_assert(entry, "call %ld: step '%s' failed with %s but no fault was injected: %s", n, s->name,
		fp8rt_status_name(st), msg);
	call_name(entry, name, sizeof name);
	if (persist)
		snprintf(name, sizeof name, "%s",
			strstr(msg, "CUBLAS_STATUS_INTERNAL_ERROR") ? "CUBLAS" : "CUDA error 999");
	cr_assert(strstr(msg, name) && strstr(msg, "runtime/"),
		"call %ld: step '%s' failed (%s injected) with a message that does not name it at its place: %s", n,
		s->name, entry, msg);
}

/* The life with a fault at call n from now (n < 0: none). */
static void
life(long n, int persist)
{
	World w;
	memset(&w, 0, sizeof w);
	fail_call(n, persist);
	int failing = 0;
	for (int i = 0; i < NSTEPS; i++) {
		const Step *s = &steps[i];
		if (failing && !s->release)
			continue; /* every call fails: on to the destroys */
		const char *before = failed_call();
		fp8rt_status st = s->fn(&w);
		const char *entry = failed_call();
		if (st == FP8RT_OK) {
			cr_assert(entry == before || persist, "call %ld: %s failed, but step '%s' says FP8RT_OK", n,
				entry, s->name);
			continue;
		}
		if (failing)
			continue; /* a destroy under persistent faults: it must still release */
		assert_reported(st, first_failed_call(), s, n, persist);
		if (persist) {
			failing = 1;
			continue;
		}
		if (!s->release) {
			st = s->fn(&w); /* one fault only: done again, it works */
			cr_assert_eq(st, FP8RT_OK, "call %ld (%s): step '%s' failed again: %s", n, entry, s->name,
				fp8rt_last_error(NULL));
		}
	}
	fail_call(-1, 0);
	cr_assert(failing || w.nchecks == 3, "call %ld: %d output checks ran", n, w.nchecks);
	assert_nothing_live(persist ? "after persistent faults" : "after one fault");
}

static void
load_programs(void)
{
	prog_ptx = test_program_ptx(0, NULL);
	char *a = test_replace(prog_ptx, "grid=2 block=128 smem=1024", "grid=0 block=128 smem=100000");
	smem_ptx = test_replace(a, "// launch k0 grid=0", "// # launch k0 grid=0"); /* drop k0 */
	free(a);
	setenv("FP8RT_LIBCUDA", MOCKCUDA_PATH, 1);
	setenv("FP8RT_NCCL", MOCKNCCL_PATH, 1);
}

/* ---- every call the runtime makes --------------------------------------- */

/* cuBLASLt entries libfp8rt calls; the two lookups cannot fail. */
static const char *const lt_calls[] = {
	"cublasLtCreate",
	"cublasLtDestroy",
	"cublasLtMatmulDescCreate",
	"cublasLtMatmulDescDestroy",
	"cublasLtMatmulDescSetAttribute",
	"cublasLtMatrixLayoutCreate",
	"cublasLtMatrixLayoutDestroy",
	"cublasLtMatrixLayoutSetAttribute",
	"cublasLtMatmulPreferenceCreate",
	"cublasLtMatmulPreferenceDestroy",
	"cublasLtMatmulPreferenceSetAttribute",
	"cublasLtMatmulAlgoGetHeuristic",
	"cublasLtMatmul",
};
static const char *const lt_lookups[] = { "cublasLtGetStatusName", "cublasLtGetStatusString" };

#define STR_(x) #x
#define STR(x)  STR_(x)
#define NAME(f) STR(f),
static const char *const driver_calls[] = { RT_DRIVER_FUNCS(NAME) "cuFuncGetParamInfo", "cuFuncGetParamCount" };

static int
listed(const char *name, size_t n, const char *const *list, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (strlen(list[i]) == n && !strncmp(list[i], name, n))
			return 1;
	return 0;
}

#define LISTED(name, n, list) listed(name, n, list, sizeof list / sizeof list[0])

/* Every cuBLASLt function runtime/'s sources call is in lt_calls or
 * lt_lookups, and every drv.X in RT_DRIVER_FUNCS or the optional ones. */
static void
assert_sources_listed(void)
{
	DIR *d = opendir(FP8RT_SOURCE_DIR);
	struct dirent *e;
	char path[512], *text;
	int files = 0;
	cr_assert(d, "cannot open %s", FP8RT_SOURCE_DIR);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 3 || strcmp(e->d_name + n - 2, ".c"))
			continue;
		snprintf(path, sizeof path, "%s/%s", FP8RT_SOURCE_DIR, e->d_name);
		FILE *f = fopen(path, "rb");
		cr_assert(f, "cannot open %s", path);
		text = calloc(1, 1 << 20);
		fread(text, 1, (1 << 20) - 1, f);
		fclose(f);
		files++;
		for (char *p = text; (p = strstr(p, "cublasLt")); p++) {
			size_t k = 8;
			while (p[k] == '_' || (p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= 'a' && p[k] <= 'z') ||
				(p[k] >= '0' && p[k] <= '9'))
				k++;
			if (p[k] == '(' && !LISTED(p, k, lt_calls) && !LISTED(p, k, lt_lookups))
				cr_assert_fail("%s calls %.*s, which test_fault.c does not list", e->d_name, (int)k, p);
		}
		for (char *p = text; (p = strstr(p, "drv.cu")); p++) {
			size_t k = 4;
			while (p[k] == '_' || (p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= 'a' && p[k] <= 'z') ||
				(p[k] >= '0' && p[k] <= '9'))
				k++;
			char name[96];
			snprintf(name, sizeof name, "%.*s", (int)(k - 4), p + 4);
			int found = 0;
			for (size_t i = 0; i < sizeof driver_calls / sizeof driver_calls[0]; i++) {
				char base[96];
				call_name(driver_calls[i], base, sizeof base);
				found |= !strcmp(base, name) || !strcmp(driver_calls[i], name);
			}
			cr_assert(found, "%s calls drv.%s, which is not in RT_DRIVER_FUNCS", e->d_name, name);
		}
		free(text);
	}
	closedir(d);
	cr_assert(files >= 4, "read %d runtime sources from %s", files, FP8RT_SOURCE_DIR);
}

static void
assert_failed(const char *name)
{
	int failed, n = count(name, &failed);
	cr_assert(n > 0, "libfp8rt never called %s", name);
	cr_assert(failed > 0, "%s was called %d times and never made to fail", name, n);
}

/* ---- the tests ------------------------------------------------------------ */

Test(fault, every_call_fails_in_turn)
{
	load_programs();
	life(-1, 0); /* the life without faults: the outputs to compare with */
	long c0 = calls();
	life(-1, 0);
	long total = calls() - c0;
	cr_assert(total > 100, "the life made only %ld calls", total);
	for (long n = 0; n < total; n++)
		life(n, 0);
	for (long n = 0; n < total; n++)
		life(n, 1);
	assert_sources_listed();
	for (size_t i = 0; i < sizeof driver_calls / sizeof driver_calls[0]; i++)
		if (strcmp(driver_calls[i], "cuInit") && strcmp(driver_calls[i], "cuDriverGetVersion"))
			assert_failed(driver_calls[i]); /* those two: driver_init_fails */
	for (size_t i = 0; i < sizeof lt_calls / sizeof lt_calls[0]; i++)
		assert_failed(lt_calls[i]);
	free(prog_ptx);
	free(smem_ptx);
}

/* The driver is loaded once per process: a test of its own for each of the
 * two calls loading makes. */
static void
init_fails(long n, const char *substr)
{
	fp8rt_context *ctx = (fp8rt_context *)1;
	load_programs();
	fail_call(n, 0);
	ASSERT_FAILS(fp8rt_context_create(0, &ctx), FP8RT_NO_DRIVER, NULL, substr);
	cr_assert_null(ctx);
	ASSERT_FAILS(fp8rt_context_create(0, &ctx), FP8RT_NO_DRIVER, NULL, substr); /* the same answer later */
	assert_failed(n == 0 ? "cuInit" : "cuDriverGetVersion");
	assert_nothing_live("after a failed driver load");
	free(prog_ptx);
	free(smem_ptx);
}

Test(fault, driver_init_fails_at_cuinit) { init_fails(0, "cuInit(0) with"); }

Test(fault, driver_init_fails_at_version) { init_fails(1, "cuDriverGetVersion with"); }
