/* test_functions.c — programs of several functions with state, and the
 * float GEMMs, on the mock driver and the mock cuBLASLt (linked into this
 * executable, as for the fault tests), so they run on every machine.
 *
 * The mock computes cuBLASLt's column-major problem as cuBLASLt defines it;
 * the references here are computed from the row-major definitions of the
 * plan and of fp8rt_matmul. Agreement checks the runtime's mapping of
 * transposes, leading dimensions, batch strides, biases and epilogues onto
 * cuBLASLt (the GPU suite checks the same programs against real cuBLASLt
 * and against torch). Inputs are small integers, so every sum is exact in
 * f32 and in bf16/f16 outputs, and results must match exactly (GELU,
 * which is not exact, within 1e-6 relative). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include <cuda.h>

#include "mock_cublaslt.h"
#include "rt_test.h"
#include "test_data.h"

#define N 1024

static fp8rt_context *
mock_context(void)
{
	fp8rt_context *ctx = NULL;
	setenv("FP8RT_LIBCUDA", MOCKCUDA_PATH, 1);
	CHECK_OK(fp8rt_context_create(0, &ctx), NULL);
	return ctx;
}

/* A device tensor of n f32 values from host, small integers drawn from seed. */
typedef struct {
	void *d;
	float *h;
	fp8rt_tensor t;
} Buf;

static Buf
buf_new(fp8rt_context *ctx, int rank, const int64_t *dims, uint64_t seed)
{
	Buf b;
	size_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= (size_t)dims[i];
	b.h = calloc(n + 1, sizeof *b.h);
	cr_assert(b.h);
	for (size_t i = 0; seed && i < n; i++)
		b.h[i] = (float)((int)(rnd(&seed) % 7) - 3);
	CHECK_OK(fp8rt_malloc(ctx, (n + 1) * 4, &b.d), ctx);
	CHECK_OK(fp8rt_memcpy_htod(ctx, b.d, b.h, n * 4), ctx);
	b.t = fp8rt_tensor_dense(b.d, FP8RT_F32, rank, dims);
	return b;
}

static void
buf_get(fp8rt_context *ctx, Buf *b, size_t n)
{
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, b->h, b->d, n * 4), ctx);
}

static void
buf_free(fp8rt_context *ctx, Buf *b)
{
	CHECK_OK(fp8rt_free(ctx, b->d), ctx);
	free(b->h);
}

/* C (m,n) = A (m,k) · B (k,n), row-major, each given by element functions */
static float
at2(const float *x, int64_t ld, int64_t r, int64_t c)
{
	return x[r * ld + c];
}

static void
assert_equal(const float *want, const float *got, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(want[i] == got[i], "%s[%zu]: expected %g, got %g", what, i, want[i], got[i]);
}

/* ---- the step program -------------------------------------------------------- */

typedef struct {
	fp8rt_context *ctx;
	fp8rt_program *p;
	Buf x, w, b, x3, v, y, z, g, gx, gw, ys;
} Step;

static Step
step_new(void)
{
	Step s;
	memset(&s, 0, sizeof s);
	s.ctx = mock_context();
	char *ptx = test_step_ptx(0, NULL);
	CHECK_OK(fp8rt_program_load_data(s.ctx, ptx, strlen(ptx), "step.ptx", &s.p), s.ctx);
	free(ptx);
	s.x = buf_new(s.ctx, 2, (int64_t[]){ 8, 16 }, 1);
	s.w = buf_new(s.ctx, 2, (int64_t[]){ 12, 16 }, 2);
	s.b = buf_new(s.ctx, 1, (int64_t[]){ 12 }, 3);
	s.x3 = buf_new(s.ctx, 3, (int64_t[]){ 2, 8, 16 }, 4);
	s.v = buf_new(s.ctx, 2, (int64_t[]){ 16, 4 }, 5);
	s.y = buf_new(s.ctx, 2, (int64_t[]){ 8, 12 }, 0);
	s.z = buf_new(s.ctx, 3, (int64_t[]){ 2, 8, 4 }, 0);
	s.g = buf_new(s.ctx, 2, (int64_t[]){ 8, 12 }, 6);
	s.gx = buf_new(s.ctx, 2, (int64_t[]){ 8, 16 }, 0);
	s.gw = buf_new(s.ctx, 2, (int64_t[]){ 12, 16 }, 0);
	s.ys = buf_new(s.ctx, 2, (int64_t[]){ 8, 12 }, 0);
	return s;
}

/* Frees it all; `last`: no other context is alive, so no cuBLASLt object may be. */
static void
step_free(Step *s, int last)
{
	Buf *all[] = { &s->x, &s->w, &s->b, &s->x3, &s->v, &s->y, &s->z, &s->g, &s->gx, &s->gw, &s->ys };
	CHECK_OK(fp8rt_program_destroy(s->p), s->ctx);
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		buf_free(s->ctx, all[i]);
	CHECK_OK(fp8rt_context_destroy(s->ctx), NULL);
	int lt[4];
	mocklt_live(lt);
	cr_assert(!last || (!lt[0] && !lt[1] && !lt[2] && !lt[3]), "cuBLASLt objects live: %d %d %d %d", lt[0], lt[1],
		lt[2], lt[3]);
}

static fp8rt_status
forward(Step *s, fp8rt_state *st)
{
	fp8rt_tensor in[] = { s->x.t, s->w.t, s->b.t, s->x3.t, s->v.t }, out[] = { s->y.t, s->z.t };
	return fp8rt_run_function(s->p, 0, st, in, 5, out, 2, NULL);
}

static fp8rt_status
backward(Step *s, fp8rt_state *st)
{
	fp8rt_tensor in[] = { s->g.t, s->w.t }, out[] = { s->gx.t, s->gw.t, s->ys.t };
	return fp8rt_run_function(s->p, 1, st, in, 2, out, 3, NULL);
}

/* What backward must give after a forward of x; with `fwd`, also the
 * outputs of that forward (the last one run). */
static void
check_step(Step *s, const float *x, int fwd)
{
	float y[96], z[64], gx[128], gw[192];
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 12; j++) {
			float acc = s->b.h[j];
			for (int k = 0; k < 16; k++)
				acc += at2(x, 16, i, k) * at2(s->w.h, 16, j, k); /* x · wᵀ */
			y[i * 12 + j] = acc > 0 ? acc : 0;
		}
	for (int bt = 0; bt < 2; bt++)
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < 4; j++) {
				float acc = 0;
				for (int k = 0; k < 16; k++)
					acc += s->x3.h[bt * 128 + i * 16 + k] * at2(s->v.h, 4, k, j);
				z[bt * 32 + i * 4 + j] = acc;
			}
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 16; j++) {
			float acc = 0;
			for (int k = 0; k < 12; k++)
				acc += at2(s->g.h, 12, i, k) * at2(s->w.h, 16, k, j); /* g · w */
			gx[i * 16 + j] = acc;
		}
	for (int i = 0; i < 12; i++)
		for (int j = 0; j < 16; j++) {
			float acc = 0;
			for (int k = 0; k < 8; k++)
				acc += at2(s->g.h, 12, k, i) * at2(x, 16, k, j); /* gᵀ · x */
			gw[i * 16 + j] = acc;
		}
	buf_get(s->ctx, &s->y, 96), buf_get(s->ctx, &s->z, 64), buf_get(s->ctx, &s->gx, 128);
	buf_get(s->ctx, &s->gw, 192), buf_get(s->ctx, &s->ys, 96);
	if (fwd) {
		assert_equal(y, s->y.h, 96, "y");
		assert_equal(z, s->z.h, 64, "z");
	}
	assert_equal(gx, s->gx.h, 128, "gx");
	assert_equal(gw, s->gw.h, 192, "gw");
	assert_equal(y, s->ys.h, 96, "ys (the saved y)");
}

Test(functions, signature)
{
	Step s = step_new();
	fp8rt_tensor_info info;
	int f = -1, from = -1, nin, nout;
	cr_assert_eq(fp8rt_program_function_count(s.p), 2);
	cr_assert_str_eq(fp8rt_program_function_name(s.p, 1), "backward");
	cr_assert_null(fp8rt_program_function_name(s.p, 2));
	CHECK_OK(fp8rt_program_find_function(s.p, "backward", &f), s.ctx);
	cr_assert_eq(f, 1);
	ASSERT_FAILS(fp8rt_program_find_function(s.p, "sideways", &f), FP8RT_INVALID_ARGUMENT, s.ctx,
		"step.ptx has no function 'sideways'");
	CHECK_OK(fp8rt_function_io_count(s.p, 1, &nin, &nout), s.ctx);
	cr_assert(nin == 2 && nout == 3);
	CHECK_OK(fp8rt_program_io_count(s.p, &nin, &nout), s.ctx);
	cr_assert(nin == 5 && nout == 2, "the program's signature is its first function's");
	CHECK_OK(fp8rt_function_output(s.p, 1, 1, &info), s.ctx);
	cr_assert(!strcmp(info.name, "gw") && info.rank == 2 && info.dims[0] == 12);
	ASSERT_FAILS(fp8rt_function_input(s.p, 2, 0, &info), FP8RT_INVALID_ARGUMENT, s.ctx,
		"function 2 out of range (step.ptx has 2)");
	cr_assert_eq(fp8rt_program_state_count(s.p), 2);
	CHECK_OK(fp8rt_program_state_info(s.p, 1, &info, &from), s.ctx);
	cr_assert(!strcmp(info.name, "y") && from == 0 && info.dtype == FP8RT_F32);
	step_free(&s, 1);
}

/* backward before forward reads state nobody wrote: refused; then the step
 * in order gives the reference results, twice (capture, replay) */
Test(functions, forward_then_backward)
{
	Step s = step_new();
	ASSERT_FAILS(backward(&s, NULL), FP8RT_INVALID_ARGUMENT, s.ctx,
		"fp8rt_run_function: backward reads state slot 0 'x', which forward writes and no run of forward "
		"has written into this state yet");
	for (int i = 0; i < 2; i++) {
		CHECK_OK(forward(&s, NULL), s.ctx);
		CHECK_OK(backward(&s, NULL), s.ctx);
		check_step(&s, s.x.h, 1);
	}
	CHECK_OK(fp8rt_program_set_graphs(s.p, 0), s.ctx);
	CHECK_OK(forward(&s, NULL), s.ctx);
	CHECK_OK(backward(&s, NULL), s.ctx);
	check_step(&s, s.x.h, 1);
	step_free(&s, 1);
}

/* Two states keep two forwards' saved tensors apart (graphs key on the
 * state too); a state's slot reads back as a tensor; a state is its
 * program's only. */
Test(functions, states_are_separate)
{
	Step s = step_new();
	Step t = step_new();
	fp8rt_state *s2 = NULL;
	fp8rt_tensor slot;
	float x1[128], x2[128], got[128];
	memcpy(x1, s.x.h, sizeof x1);
	CHECK_OK(fp8rt_state_create(s.p, &s2), s.ctx);
	CHECK_OK(forward(&s, NULL), s.ctx);
	for (int i = 0; i < 128; i++)
		x2[i] = s.x.h[i] = (float)(i % 5) - 2;
	CHECK_OK(fp8rt_memcpy_htod(s.ctx, s.x.d, x2, sizeof x2), s.ctx);
	CHECK_OK(forward(&s, s2), s.ctx);
	CHECK_OK(backward(&s, NULL), s.ctx);
	check_step(&s, x1, 0);
	CHECK_OK(backward(&s, s2), s.ctx);
	check_step(&s, x2, 1);
	CHECK_OK(fp8rt_state_tensor(s2, 0, &slot), s.ctx);
	cr_assert(slot.dtype == FP8RT_F32 && slot.rank == 2 && slot.dims[1] == 16 && slot.strides[0] == 16);
	CHECK_OK(fp8rt_memcpy_dtoh(s.ctx, got, slot.data, sizeof got), s.ctx);
	assert_equal(x2, got, 128, "state slot 0");
	ASSERT_FAILS(fp8rt_state_tensor(s2, 2, &slot), FP8RT_INVALID_ARGUMENT, s.ctx, "slot 2 out of range");
	ASSERT_FAILS(backward(&t, s2), FP8RT_INVALID_ARGUMENT, t.ctx, "the state belongs to step.ptx, not to step.ptx");
	/* a new state has nothing written, until the caller says so */
	fp8rt_state *s3 = NULL;
	CHECK_OK(fp8rt_state_create(s.p, &s3), s.ctx);
	ASSERT_FAILS(backward(&s, s3), FP8RT_INVALID_ARGUMENT, s.ctx, "reads state slot 0 'x'");
	CHECK_OK(fp8rt_state_mark_written(s3, 0), s.ctx);
	CHECK_OK(fp8rt_state_mark_written(s3, 1), s.ctx);
	CHECK_OK(backward(&s, s3), s.ctx);
	CHECK_OK(fp8rt_state_destroy(s3), s.ctx);
	CHECK_OK(fp8rt_state_destroy(s2), s.ctx);
	CHECK_OK(fp8rt_state_destroy(NULL), s.ctx);
	cr_assert_not_null(fp8rt_program_default_state(s.p));
	step_free(&t, 0);
	step_free(&s, 1); /* frees the default state with the program */
}

/* A prepared run sets only the stream and the pointers: the step through
 * two prepared runs gives the reference results; its slots are checked as
 * fp8rt_run_function's tensors; it is freed with its program or before. */
Test(functions, prepared_runs)
{
	Step s = step_new();
	fp8rt_prepared *fw = NULL, *bw = NULL, *spare = NULL;
	ASSERT_FAILS(
		fp8rt_prepare(s.p, 2, &fw), FP8RT_INVALID_ARGUMENT, s.ctx, "fp8rt_prepare: function 2 out of range");
	ASSERT_FAILS(fp8rt_prepare(NULL, 0, &fw), FP8RT_INVALID_ARGUMENT, NULL, "fp8rt_prepare: program is NULL");
	ASSERT_FAILS(fp8rt_prepared_run(NULL), FP8RT_INVALID_ARGUMENT, NULL, "the prepared run is NULL");
	cr_assert_null(fp8rt_prepared_slots(NULL));
	CHECK_OK(fp8rt_prepare(s.p, 0, &fw), s.ctx);
	CHECK_OK(fp8rt_prepare(s.p, 1, &bw), s.ctx);
	CHECK_OK(fp8rt_prepare(s.p, 1, &spare), s.ctx);
	void **f = fp8rt_prepared_slots(fw), **b = fp8rt_prepared_slots(bw);
	cr_assert(f && b && !f[0] && !f[5] && !b[5], "the slots start NULL");
	ASSERT_FAILS(fp8rt_prepared_run(fw), FP8RT_INVALID_ARGUMENT, s.ctx, "fp8rt_prepared_run: input 0");
	void *fin[] = { NULL, s.x.d, s.w.d, s.b.d, s.x3.d, s.v.d, s.y.d, s.z.d };
	void *bin[] = { NULL, s.g.d, s.w.d, s.gx.d, s.gw.d, s.ys.d };
	memcpy(b, bin, sizeof bin);
	ASSERT_FAILS(fp8rt_prepared_run(bw), FP8RT_INVALID_ARGUMENT, s.ctx, "reads state slot 0 'x'");
	memcpy(f, fin, sizeof fin);
	f[3] = (char *)s.b.d + 4;
	ASSERT_FAILS(fp8rt_prepared_run(fw), FP8RT_INVALID_ARGUMENT, s.ctx, "input 2");
	f[3] = s.b.d;
	for (int i = 0; i < 2; i++) {
		CHECK_OK(fp8rt_prepared_run(fw), s.ctx);
		CHECK_OK(fp8rt_prepared_run(bw), s.ctx);
		check_step(&s, s.x.h, 1);
	}
	CHECK_OK(fp8rt_prepared_destroy(spare), s.ctx);
	CHECK_OK(fp8rt_prepared_destroy(NULL), s.ctx);
	step_free(&s, 1); /* frees fw and bw with the program */
}

/* ---- fp8rt_matmul ------------------------------------------------------------ */

typedef struct {
	fp8rt_dtype dt;
	int m, n, k, batch, ta, tb, pad; /* pad: extra elements per row of a, b, d */
	int share_a, share_b;            /* stride 0 */
	int bias;
	fp8rt_epilogue epi;
} Form;

static const Form forms[] = {
	{ FP8RT_F32, 5, 7, 3, 1, 0, 0, 0, 0, 0, 0, FP8RT_EPILOGUE_NONE },
	{ FP8RT_F32, 5, 7, 3, 1, 1, 0, 0, 0, 0, 0, FP8RT_EPILOGUE_NONE },
	{ FP8RT_F32, 5, 7, 3, 1, 0, 1, 0, 0, 0, 0, FP8RT_EPILOGUE_NONE },
	{ FP8RT_F32, 5, 7, 3, 1, 1, 1, 0, 0, 0, 0, FP8RT_EPILOGUE_NONE },
	{ FP8RT_F32, 4, 6, 8, 3, 0, 1, 0, 0, 0, 1, FP8RT_EPILOGUE_RELU },
	{ FP8RT_F32, 4, 6, 8, 3, 1, 0, 2, 1, 0, 1, FP8RT_EPILOGUE_NONE },
	{ FP8RT_F32, 4, 6, 8, 3, 0, 0, 0, 0, 1, 0, FP8RT_EPILOGUE_GELU },
	{ FP8RT_F64, 3, 5, 9, 2, 1, 1, 1, 0, 0, 1, FP8RT_EPILOGUE_GELU },
	{ FP8RT_BF16, 6, 8, 16, 2, 0, 1, 0, 0, 0, 1, FP8RT_EPILOGUE_RELU },
	{ FP8RT_F16, 6, 8, 16, 1, 1, 0, 8, 0, 0, 0, FP8RT_EPILOGUE_NONE },
	{ FP8RT_F32, 4, 6, 8, 3, 0, 1, 2, 0, 1, 1, FP8RT_EPILOGUE_GELU_AUX },
	{ FP8RT_BF16, 6, 8, 16, 2, 1, 0, 0, 0, 0, 0, FP8RT_EPILOGUE_GELU_AUX },
};

static void
put(void *p, fp8rt_dtype dt, size_t i, double v)
{
	float f = (float)v;
	uint16_t h;
	switch (dt) {
	case FP8RT_F64: memcpy((char *)p + 8 * i, &v, 8); return;
	case FP8RT_F32: memcpy((char *)p + 4 * i, &f, 4); return;
	case FP8RT_F16: h = f16_encode(f); break;
	default:        h = bf16_encode(f); break;
	}
	memcpy((char *)p + 2 * i, &h, 2);
}

static double
get(const void *p, fp8rt_dtype dt, size_t i)
{
	float f;
	double d;
	uint16_t h;
	switch (dt) {
	case FP8RT_F64: memcpy(&d, (const char *)p + 8 * i, 8); return d;
	case FP8RT_F32: memcpy(&f, (const char *)p + 4 * i, 4); return f;
	case FP8RT_F16: memcpy(&h, (const char *)p + 2 * i, 2); return f16_decode(h);
	default:        memcpy(&h, (const char *)p + 2 * i, 2); return bf16_decode(h);
	}
}

/* rounded to dt, as the GEMM's output is */
static double
round_to(fp8rt_dtype dt, double v)
{
	char b[8];
	put(b, dt, 0, v);
	return get(b, dt, 0);
}

static double
act(fp8rt_epilogue e, double x)
{
	if (e == FP8RT_EPILOGUE_RELU)
		return x > 0 ? x : 0;
	if (e == FP8RT_EPILOGUE_GELU || e == FP8RT_EPILOGUE_GELU_AUX)
		return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
	return x;
}

Test(matmul, every_form)
{
	fp8rt_context *ctx = mock_context();
	for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++) {
		const Form *f = &forms[fi];
		size_t es = fp8rt_dtype_size(f->dt);
		int64_t ar = f->ta ? f->k : f->m, ac = f->ta ? f->m : f->k; /* a as stored */
		int64_t br = f->tb ? f->n : f->k, bc = f->tb ? f->k : f->n;
		int64_t lda = ac + f->pad, ldb = bc + f->pad, ldd = f->n + f->pad;
		int64_t sa = f->share_a ? 0 : ar * lda, sb = f->share_b ? 0 : br * ldb, sd = f->m * ldd;
		size_t na = (size_t)(sa * (f->batch - 1) + ar * lda), nb = (size_t)(sb * (f->batch - 1) + br * ldb);
		size_t nd = (size_t)(sd * f->batch);
		char *ha = calloc(na, es), *hb = calloc(nb, es), *hbias = calloc((size_t)f->n, es),
		     *hd = calloc(nd, es), *hx = calloc(nd, es);
		uint64_t seed = 11 + fi;
		int aux = f->epi == FP8RT_EPILOGUE_GELU_AUX;
		cr_assert(ha && hb && hbias && hd && hx);
		for (size_t i = 0; i < na; i++)
			put(ha, f->dt, i, (int)(rnd(&seed) % 7) - 3);
		for (size_t i = 0; i < nb; i++)
			put(hb, f->dt, i, (int)(rnd(&seed) % 7) - 3);
		for (int i = 0; i < f->n; i++)
			put(hbias, f->dt, (size_t)i, (int)(rnd(&seed) % 5) - 2);
		void *da, *db, *dbias, *dd, *dx;
		CHECK_OK(fp8rt_malloc(ctx, nd * es, &dx), ctx);
		CHECK_OK(fp8rt_malloc(ctx, na * es, &da), ctx);
		CHECK_OK(fp8rt_malloc(ctx, nb * es, &db), ctx);
		CHECK_OK(fp8rt_malloc(ctx, (size_t)f->n * es, &dbias), ctx);
		CHECK_OK(fp8rt_malloc(ctx, nd * es, &dd), ctx);
		CHECK_OK(fp8rt_memcpy_htod(ctx, da, ha, na * es), ctx);
		CHECK_OK(fp8rt_memcpy_htod(ctx, db, hb, nb * es), ctx);
		CHECK_OK(fp8rt_memcpy_htod(ctx, dbias, hbias, (size_t)f->n * es), ctx);
		CHECK_OK(fp8rt_memset(ctx, dd, 0, nd * es), ctx);
		fp8rt_matmul_args a = {
			.size = sizeof a,
			.m = f->m,
			.n = f->n,
			.k = f->k,
			.batch = f->batch,
			.dtype = f->dt,
			.a = da,
			.lda = lda,
			.stride_a = sa,
			.trans_a = f->ta,
			.b = db,
			.ldb = ldb,
			.stride_b = sb,
			.trans_b = f->tb,
			.bias = f->bias ? dbias : NULL,
			.d = dd,
			.ldd = ldd,
			.stride_d = sd,
			.epilogue = f->epi,
			.aux = aux ? dx : NULL,
		};
		CHECK_OK(fp8rt_matmul(ctx, &a, NULL), ctx);
		CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
		CHECK_OK(fp8rt_memcpy_dtoh(ctx, hd, dd, nd * es), ctx);
		CHECK_OK(fp8rt_memcpy_dtoh(ctx, hx, dx, nd * es), ctx);
		for (int bt = 0; bt < f->batch; bt++)
			for (int i = 0; i < f->m; i++)
				for (int j = 0; j < f->n; j++) {
					double acc = f->bias ? get(hbias, f->dt, (size_t)j) : 0;
					for (int k = 0; k < f->k; k++) {
						size_t ia = (size_t)(bt * sa + (f->ta ? k * lda + i : i * lda + k));
						size_t ib = (size_t)(bt * sb + (f->tb ? j * ldb + k : k * ldb + j));
						acc += get(ha, f->dt, ia) * get(hb, f->dt, ib);
					}
					double want = round_to(f->dt, act(f->epi, acc));
					double got = get(hd, f->dt, (size_t)(bt * sd + i * ldd + j));
					double tol = f->epi >= FP8RT_EPILOGUE_GELU ? 1e-6 * fabs(want) : 0;
					cr_assert(fabs(got - want) <= tol,
						"form %zu (%s m=%d n=%d k=%d batch=%d ta=%d tb=%d): d[%d][%d][%d] "
						"= %g, expected %g",
						fi, fp8rt_dtype_name(f->dt), f->m, f->n, f->k, f->batch, f->ta, f->tb,
						bt, i, j, got, want);
					/* the pre-activation, laid out as d */
					double x = get(hx, f->dt, (size_t)(bt * sd + i * ldd + j));
					cr_assert(!aux || x == round_to(f->dt, acc),
						"form %zu: aux[%d][%d][%d] = %g, expected %g", fi, bt, i, j, x,
						round_to(f->dt, acc));
				}
		void *ptrs[] = { da, db, dbias, dd, dx };
		for (int i = 0; i < 5; i++)
			CHECK_OK(fp8rt_free(ctx, ptrs[i]), ctx);
		free(ha), free(hb), free(hbias), free(hd), free(hx);
	}
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

Test(matmul, argument_checks)
{
	fp8rt_context *ctx = mock_context();
	void *d;
	CHECK_OK(fp8rt_malloc(ctx, 4096, &d), ctx);
	fp8rt_matmul_args ok = {
		.size = sizeof ok,
		.m = 4,
		.n = 8,
		.k = 8,
		.dtype = FP8RT_F32,
		.a = d,
		.b = d,
		.d = d,
	};
	fp8rt_matmul_args a = ok;
	a.size = offsetof(fp8rt_matmul_args, aux) - 4;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "set it to sizeof(fp8rt_matmul_args)");
	a = ok, a.size = offsetof(fp8rt_matmul_args, aux); /* a 0.6 caller's */
	CHECK_OK(fp8rt_matmul(ctx, &a, NULL), ctx);
	a.epilogue = FP8RT_EPILOGUE_GELU_AUX;
	ASSERT_FAILS(
		fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "the gelu_aux epilogue's aux is after it");
	a = ok, a.epilogue = FP8RT_EPILOGUE_GELU_AUX;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "fp8rt_matmul: aux is NULL");
	a.aux = (char *)d + 2;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "aux (0x");
	a = ok, a.aux = d;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "aux is given, but the epilogue");
	a = ok, a.dtype = FP8RT_F8E4M3FN;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "fp8 operands need scales");
	a = ok, a.k = 0;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "out of range");
	a = ok, a.lda = 4;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "fp8rt_matmul: lda=4 is less than 8");
	a = ok, a.trans_b = 1, a.ldb = 4;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "ldb=4 is less than 8");
	a = ok, a.batch = 2, a.stride_d = 16;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "the batch entries of d would overlap");
	a = ok, a.b = NULL;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "fp8rt_matmul: b is NULL");
	a = ok, a.d = (char *)d + 2;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "is not 4-byte aligned");
	a = ok, a.epilogue = (fp8rt_epilogue)7;
	ASSERT_FAILS(fp8rt_matmul(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "epilogue 7 is not one of");
	ASSERT_FAILS(fp8rt_matmul(ctx, NULL, NULL), FP8RT_INVALID_ARGUMENT, ctx, "fp8rt_matmul: args is NULL");
	a = ok, a.m = 0;
	CHECK_OK(fp8rt_matmul(ctx, &a, NULL), ctx); /* nothing to do */
	CHECK_OK(fp8rt_matmul(ctx, &ok, NULL), ctx);
	CHECK_OK(fp8rt_free(ctx, d), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

/* A plan's gemm with epilogue=gelu_aux: d the GELU, aux the pre-activation
 * x·wᵀ + b (small integers: exact), run as a program (a graph capture, then
 * a replay). */
Test(matmul, gelu_aux_plan)
{
	static const char ptx[] =
		"// fp8cc-plan 2\n"
		"// target sm_90\n"
		"// function main\n"
		"// input 0 x f32[4,8]\n"
		"// input 1 w f32[6,8]\n"
		"// input 2 b f32[6]\n"
		"// output 0 y f32[4,6]\n"
		"// output 1 pre f32[4,6]\n"
		"// workspace 0\n"
		"// gemm d=out:0 a=in:0 b=in:1 bias=in:2 m=4 n=6 k=8 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=gelu_aux aux=out:1\n"
		"// end-plan\n"
		".version 8.0\n.target sm_90\n.address_size 64\n";
	fp8rt_context *ctx = mock_context();
	fp8rt_program *p = NULL;
	float x[4 * 8], w[6 * 8], b[6], y[4 * 6], pre[4 * 6];
	uint64_t seed = 5;
	for (int i = 0; i < 4 * 8; i++)
		x[i] = (float)((int)(rnd(&seed) % 7) - 3);
	for (int i = 0; i < 6 * 8; i++)
		w[i] = (float)((int)(rnd(&seed) % 7) - 3);
	for (int i = 0; i < 6; i++)
		b[i] = (float)((int)(rnd(&seed) % 5) - 2);
	void *dev[5];
	size_t bytes[5] = { sizeof x, sizeof w, sizeof b, sizeof y, sizeof pre };
	const void *host[3] = { x, w, b };
	for (int i = 0; i < 5; i++)
		CHECK_OK(fp8rt_malloc(ctx, bytes[i], &dev[i]), ctx);
	for (int i = 0; i < 3; i++)
		CHECK_OK(fp8rt_memcpy_htod(ctx, dev[i], host[i], bytes[i]), ctx);
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "gelu_aux.ptx", &p), ctx);
	fp8rt_tensor in[3] = {
		fp8rt_tensor_dense(dev[0], FP8RT_F32, 2, (int64_t[]){ 4, 8 }),
		fp8rt_tensor_dense(dev[1], FP8RT_F32, 2, (int64_t[]){ 6, 8 }),
		fp8rt_tensor_dense(dev[2], FP8RT_F32, 1, (int64_t[]){ 6 }),
	};
	fp8rt_tensor out[2] = {
		fp8rt_tensor_dense(dev[3], FP8RT_F32, 2, (int64_t[]){ 4, 6 }),
		fp8rt_tensor_dense(dev[4], FP8RT_F32, 2, (int64_t[]){ 4, 6 }),
	};
	for (int run = 0; run < 2; run++) {
		CHECK_OK(fp8rt_memset(ctx, dev[3], 0, sizeof y), ctx);
		CHECK_OK(fp8rt_memset(ctx, dev[4], 0, sizeof pre), ctx);
		CHECK_OK(fp8rt_run(p, in, 3, out, 2, NULL), ctx);
		CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
		CHECK_OK(fp8rt_memcpy_dtoh(ctx, y, dev[3], sizeof y), ctx);
		CHECK_OK(fp8rt_memcpy_dtoh(ctx, pre, dev[4], sizeof pre), ctx);
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 6; j++) {
				double acc = b[j];
				for (int k = 0; k < 8; k++)
					acc += (double)x[i * 8 + k] * w[j * 8 + k];
				double g = act(FP8RT_EPILOGUE_GELU, acc);
				cr_assert(pre[i * 6 + j] == (float)acc, "run %d: pre[%d][%d] = %g, expected %g", run, i,
					j, pre[i * 6 + j], acc);
				cr_assert(fabs(y[i * 6 + j] - g) <= 1e-6 * fabs(g) + 1e-7,
					"run %d: y[%d][%d] = %g, expected %g", run, i, j, y[i * 6 + j], g);
			}
	}
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	for (int i = 0; i < 5; i++)
		CHECK_OK(fp8rt_free(ctx, dev[i]), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

/* ---- row-wise fp8 scales ---------------------------------------------------------- */

/* e4m3fn of the small integers -3..3 */
static uint8_t
e4m3_int(int v)
{
	static const uint8_t mag[] = { 0x00, 0x38, 0x40, 0x44 };
	return (uint8_t)(mag[v < 0 ? -v : v] | (v < 0 ? 0x80 : 0));
}

enum { RM = 4, RN = 16, RK = 16 };

/* a (RM,RK) and b stored (RN,RK) of small integers, sa[i] = (i+1)/2,
 * sb[j] = (j+1)/4: every product and sum is exact, so d must be
 * (a · bᵀ)[i][j] · sa[i] · sb[j] exactly */
typedef struct {
	uint8_t a[RM * RK], b[RN * RK];
	float sa[RM], sb[RN], want[RM * RN];
	void *da, *db, *dsa, *dsb, *dd;
} RowCase;

static void
row_case(fp8rt_context *ctx, RowCase *c)
{
	int ia[RM * RK], ib[RN * RK];
	uint64_t seed = 99;
	for (int i = 0; i < RM * RK; i++)
		c->a[i] = e4m3_int(ia[i] = (int)(rnd(&seed) % 7) - 3);
	for (int i = 0; i < RN * RK; i++)
		c->b[i] = e4m3_int(ib[i] = (int)(rnd(&seed) % 7) - 3);
	for (int i = 0; i < RM; i++)
		c->sa[i] = (float)(i + 1) / 2;
	for (int j = 0; j < RN; j++)
		c->sb[j] = (float)(j + 1) / 4;
	for (int i = 0; i < RM; i++)
		for (int j = 0; j < RN; j++) {
			int acc = 0;
			for (int k = 0; k < RK; k++)
				acc += ia[i * RK + k] * ib[j * RK + k];
			c->want[i * RN + j] = (float)acc * c->sa[i] * c->sb[j];
		}
	void **dev[] = { &c->da, &c->db, &c->dsa, &c->dsb, &c->dd };
	const void *host[] = { c->a, c->b, c->sa, c->sb, NULL };
	size_t bytes[] = { sizeof c->a, sizeof c->b, sizeof c->sa, sizeof c->sb, sizeof c->want };
	for (int i = 0; i < 5; i++) {
		CHECK_OK(fp8rt_malloc(ctx, bytes[i], dev[i]), ctx);
		if (host[i])
			CHECK_OK(fp8rt_memcpy_htod(ctx, *dev[i], host[i], bytes[i]), ctx);
		else
			CHECK_OK(fp8rt_memset(ctx, *dev[i], 0, bytes[i]), ctx);
	}
}

static void
row_check(fp8rt_context *ctx, RowCase *c, const char *what)
{
	float got[RM * RN];
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, got, c->dd, sizeof got), ctx);
	assert_equal(c->want, got, RM * RN, what);
}

static void
row_free(fp8rt_context *ctx, RowCase *c)
{
	void *ptrs[] = { c->da, c->db, c->dsa, c->dsb, c->dd };
	for (int i = 0; i < 5; i++)
		CHECK_OK(fp8rt_free(ctx, ptrs[i]), ctx);
}

/* fp8rt_scaled_mm_ex with FP8RT_SCALE_ROW: scale_a per row of d, scale_b
 * per column (the runtime swaps them onto cuBLASLt's A and B); its checks;
 * a cuBLASLt without outer-vector scaling is FP8RT_UNSUPPORTED, saying so. */
Test(scaled_mm, row_wise_scales)
{
	fp8rt_context *ctx = mock_context();
	RowCase c;
	row_case(ctx, &c);
	fp8rt_scaled_mm_ex_args ok = {
		.size = sizeof ok,
		.scale_mode = FP8RT_SCALE_ROW,
		.mm = { .m = RM,
			.n = RN,
			.k = RK,
			.a = c.da,
			.a_dtype = FP8RT_F8E4M3FN,
			.b = c.db,
			.b_dtype = FP8RT_F8E4M3FN,
			.scale_a = c.dsa,
			.scale_b = c.dsb,
			.d = c.dd,
			.d_dtype = FP8RT_F32 },
	};
	CHECK_OK(fp8rt_scaled_mm_ex(ctx, &ok, NULL), ctx);
	row_check(ctx, &c, "row-wise d");

	fp8rt_scaled_mm_ex_args a = ok;
	a.size = sizeof a - 4;
	ASSERT_FAILS(
		fp8rt_scaled_mm_ex(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "fp8rt_scaled_mm_ex: args->size is");
	a = ok, a.scale_mode = (fp8rt_scale_mode)5;
	ASSERT_FAILS(fp8rt_scaled_mm_ex(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "scale_mode 5 is not one of");
	a = ok, a.mm.k = 24;
	ASSERT_FAILS(fp8rt_scaled_mm_ex(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"fp8rt_scaled_mm_ex: gemm k=24 is not a multiple of 16");
	ASSERT_FAILS(
		fp8rt_scaled_mm_ex(ctx, NULL, NULL), FP8RT_INVALID_ARGUMENT, ctx, "fp8rt_scaled_mm_ex: args is NULL");

	/* tensor-wise through the same entry: sa[0] and sb[0] for every element */
	a = ok, a.scale_mode = FP8RT_SCALE_TENSOR;
	CHECK_OK(fp8rt_scaled_mm_ex(ctx, &a, NULL), ctx);
	float got[RM * RN];
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, got, c.dd, sizeof got), ctx);
	for (int i = 0; i < RM; i++)
		for (int j = 0; j < RN; j++) {
			float want = c.want[i * RN + j] / (c.sa[i] * c.sb[j]) * (c.sa[0] * c.sb[0]);
			cr_assert(got[i * RN + j] == want, "tensor-wise d[%d][%d] = %g, expected %g", i, j,
				got[i * RN + j], want);
		}

	/* a problem not prepared yet (m=2), on a cuBLASLt with no outer-vector scaling */
	mocklt_refuse_outer_vec(1);
	a = ok, a.mm.m = 2;
	ASSERT_FAILS(fp8rt_scaled_mm_ex(ctx, &a, NULL), FP8RT_UNSUPPORTED, ctx,
		"row-wise scales: this cuBLASLt has no outer-vector scaling for them on this device");
	a.scale_mode = FP8RT_SCALE_TENSOR;
	CHECK_OK(fp8rt_scaled_mm_ex(ctx, &a, NULL), ctx);
	mocklt_refuse_outer_vec(0);
	row_free(ctx, &c);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

/* A version 3 plan's gemm with scale_mode=row, run as a program (a graph
 * capture, then a replay). */
Test(scaled_mm, row_wise_plan)
{
	static const char ptx[] =
		"// fp8cc-plan 3\n"
		"// target sm_90\n"
		"// function main\n"
		"// input 0 a f8e4m3fn[4,16]\n"
		"// input 1 b f8e4m3fn[16,16]\n"
		"// input 2 sa f32[4,1]\n"
		"// input 3 sb f32[1,16]\n"
		"// output 0 d f32[4,16]\n"
		"// workspace 0\n"
		"// gemm d=out:0 a=in:0 b=in:1 scale_a=in:2 scale_b=in:3 bias=none m=4 n=16 k=16 batch=1 stride_a=0 "
		"stride_b=0 stride_d=0 trans_a=0 trans_b=1 atype=f8e4m3fn btype=f8e4m3fn dtype=f32 epilogue=none "
		"fast_accum=0 scale_mode=row\n"
		"// end-plan\n"
		".version 8.0\n.target sm_90\n.address_size 64\n";
	fp8rt_context *ctx = mock_context();
	fp8rt_program *p = NULL;
	RowCase c;
	row_case(ctx, &c);
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "row.ptx", &p), ctx);
	fp8rt_tensor in[4] = {
		fp8rt_tensor_dense(c.da, FP8RT_F8E4M3FN, 2, (int64_t[]){ RM, RK }),
		fp8rt_tensor_dense(c.db, FP8RT_F8E4M3FN, 2, (int64_t[]){ RN, RK }),
		fp8rt_tensor_dense(c.dsa, FP8RT_F32, 2, (int64_t[]){ RM, 1 }),
		fp8rt_tensor_dense(c.dsb, FP8RT_F32, 2, (int64_t[]){ 1, RN }),
	};
	fp8rt_tensor out = fp8rt_tensor_dense(c.dd, FP8RT_F32, 2, (int64_t[]){ RM, RN });
	for (int run = 0; run < 2; run++) {
		CHECK_OK(fp8rt_memset(ctx, c.dd, 0, sizeof c.want), ctx);
		CHECK_OK(fp8rt_run(p, in, 4, &out, 1, NULL), ctx);
		row_check(ctx, &c, run ? "row-wise plan, replayed" : "row-wise plan");
	}
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	row_free(ctx, &c);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

/* ---- block-wise fp8 scales -------------------------------------------------------- */

enum { BM = 4, BN = 16, BK = 256, BKB = BK / 128, BKB4 = 4 };

/* a (BM,BK) and b stored (BN,BK) of small integers; scale_a (BM, BKB) with
 * strides (1, BM), scale_b's 128x128 blocks (BKB of them, one column of
 * blocks) at c*BKB4 + r, powers of two: every sum is exact, so d must be
 * sum_r (a·bᵀ over block r)[i][j] · scale_a[r*BM+i] · scale_b[r] exactly */
Test(scaled_mm, block_wise_scales)
{
	fp8rt_context *ctx = mock_context();
	uint8_t a[BM * BK], b[BN * BK];
	int ia[BM * BK], ib[BN * BK];
	float sa[BKB * BM], sb[BKB4] = { 0.5f, 4.0f, 0, 0 }, want[BM * BN], got[BM * BN];
	uint64_t seed = 7;
	for (int i = 0; i < BM * BK; i++)
		a[i] = e4m3_int(ia[i] = (int)(rnd(&seed) % 7) - 3);
	for (int i = 0; i < BN * BK; i++)
		b[i] = e4m3_int(ib[i] = (int)(rnd(&seed) % 7) - 3);
	for (int r = 0; r < BKB; r++)
		for (int i = 0; i < BM; i++)
			sa[r * BM + i] = (float)(1 << (i + r)) / 4;
	for (int i = 0; i < BM; i++)
		for (int j = 0; j < BN; j++) {
			double d = 0;
			for (int r = 0; r < BKB; r++) {
				int acc = 0;
				for (int k = r * 128; k < r * 128 + 128; k++)
					acc += ia[i * BK + k] * ib[j * BK + k];
				d += acc * (double)sa[r * BM + i] * sb[r];
			}
			want[i * BN + j] = (float)d;
		}
	void *da, *db, *dsa, *dsb, *dd;
	CHECK_OK(fp8rt_malloc(ctx, sizeof a, &da), ctx);
	CHECK_OK(fp8rt_malloc(ctx, sizeof b, &db), ctx);
	CHECK_OK(fp8rt_malloc(ctx, sizeof sa, &dsa), ctx);
	CHECK_OK(fp8rt_malloc(ctx, sizeof sb, &dsb), ctx);
	CHECK_OK(fp8rt_malloc(ctx, sizeof want, &dd), ctx);
	CHECK_OK(fp8rt_memcpy_htod(ctx, da, a, sizeof a), ctx);
	CHECK_OK(fp8rt_memcpy_htod(ctx, db, b, sizeof b), ctx);
	CHECK_OK(fp8rt_memcpy_htod(ctx, dsa, sa, sizeof sa), ctx);
	CHECK_OK(fp8rt_memcpy_htod(ctx, dsb, sb, sizeof sb), ctx);
	fp8rt_scaled_mm_ex_args ok = {
		.size = sizeof ok,
		.scale_mode = FP8RT_SCALE_BLOCK,
		.mm = { .m = BM,
			.n = BN,
			.k = BK,
			.a = da,
			.a_dtype = FP8RT_F8E4M3FN,
			.b = db,
			.b_dtype = FP8RT_F8E4M3FN,
			.scale_a = dsa,
			.scale_b = dsb,
			.d = dd,
			.d_dtype = FP8RT_F32 },
	};
	CHECK_OK(fp8rt_scaled_mm_ex(ctx, &ok, NULL), ctx);
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, got, dd, sizeof got), ctx);
	assert_equal(want, got, BM * BN, "block-wise d");

	fp8rt_scaled_mm_ex_args x = ok;
	x.mm.k = 144;
	ASSERT_FAILS(fp8rt_scaled_mm_ex(ctx, &x, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"fp8rt_scaled_mm_ex: block-wise scales need k a multiple of 128 (k=144)");
	x = ok, x.mm.m = 2;
	ASSERT_FAILS(fp8rt_scaled_mm_ex(ctx, &x, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"block-wise scales need m a multiple of 4 (m=2)");
	x = ok, x.mm.fast_accum = 1;
	ASSERT_FAILS(
		fp8rt_scaled_mm_ex(ctx, &x, NULL), FP8RT_INVALID_ARGUMENT, ctx, "block-wise scales take no fast_accum");
	x = ok, x.mm.scale_a = (const float *)(const void *)((char *)dsa + 4);
	ASSERT_FAILS(fp8rt_scaled_mm_ex(ctx, &x, NULL), FP8RT_INVALID_ARGUMENT, ctx, "scale_a");

	/* the same through a version 3 plan: scale_a is BKB*BM values (an
	 * input is row-major: the (BKB, BM) of scale_a's bytes), scale_b BKB4
	 * per column of blocks */
	static const char ptx[] =
		"// fp8cc-plan 3\n"
		"// target sm_90\n"
		"// function main\n"
		"// input 0 a f8e4m3fn[4,256]\n"
		"// input 1 b f8e4m3fn[16,256]\n"
		"// input 2 sa f32[2,4]\n"
		"// input 3 sb f32[4,1]\n"
		"// output 0 d f32[4,16]\n"
		"// workspace 0\n"
		"// gemm d=out:0 a=in:0 b=in:1 scale_a=in:2 scale_b=in:3 bias=none m=4 n=16 k=256 batch=1 stride_a=0 "
		"stride_b=0 stride_d=0 trans_a=0 trans_b=1 atype=f8e4m3fn btype=f8e4m3fn dtype=f32 epilogue=none "
		"scale_mode=block fast_accum=0\n"
		"// end-plan\n"
		".version 8.0\n.target sm_90\n.address_size 64\n";
	fp8rt_program *p = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "block.ptx", &p), ctx);
	fp8rt_tensor in[4] = {
		fp8rt_tensor_dense(da, FP8RT_F8E4M3FN, 2, (int64_t[]){ BM, BK }),
		fp8rt_tensor_dense(db, FP8RT_F8E4M3FN, 2, (int64_t[]){ BN, BK }),
		fp8rt_tensor_dense(dsa, FP8RT_F32, 2, (int64_t[]){ BKB, BM }),
		fp8rt_tensor_dense(dsb, FP8RT_F32, 2, (int64_t[]){ BKB4, 1 }),
	};
	fp8rt_tensor out = fp8rt_tensor_dense(dd, FP8RT_F32, 2, (int64_t[]){ BM, BN });
	CHECK_OK(fp8rt_memset(ctx, dd, 0, sizeof want), ctx);
	CHECK_OK(fp8rt_run(p, in, 4, &out, 1, NULL), ctx);
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, got, dd, sizeof got), ctx);
	assert_equal(want, got, BM * BN, "block-wise plan");
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	void *ptrs[] = { da, db, dsa, dsb, dd };
	for (int i = 0; i < 5; i++)
		CHECK_OK(fp8rt_free(ctx, ptrs[i]), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

/* ---- outputs that are copies of inputs --------------------------------------------- */

/* how often the mock driver's entry `name` was called (cuda.h's names:
 * cuMemcpyDtoDAsync is cuMemcpyDtoDAsync_v2) */
static int
mock_count(const char *name)
{
	int (*count)(const char *, int *) =
		(int (*)(const char *, int *))(uintptr_t)dlsym(dlopen(MOCKCUDA_PATH, RTLD_NOW), "mockcuda_count");
	return count(name, NULL);
}

/* y: a copy of x and nothing else (fp8rt_function_output_source says x);
 * z: written by a kernel; w: a copy of x that a kernel then writes over.
 * Given x's own memory as y, the copy is skipped: one device copy (w's) a
 * run instead of two, and y still holds x. */
Test(outputs, copies_of_inputs)
{
	static const char plan[] = "// fp8cc-plan 2\n"
				   "// target sm_90\n"
				   "// function main\n"
				   "// input 0 x f32[1024]\n"
				   "// output 0 y f32[1024]\n"
				   "// output 1 z f32[1024]\n"
				   "// output 2 w f32[1024]\n"
				   "// workspace 0\n"
				   "// launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,out:1\n"
				   "// copy dst=out:0 src=in:0 bytes=4096\n"
				   "// copy dst=out:2 src=in:0 bytes=4096\n"
				   "// launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,out:2\n"
				   "// end-plan\n";
	fp8rt_context *ctx = mock_context();
	fp8rt_program *p = NULL;
	char *ext = test_extern_ptx(), *ptx = test_replace(ext, test_extern_plan, plan);
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "copies.ptx", &p), ctx);
	int src[3];
	for (int i = 0; i < 3; i++)
		CHECK_OK(fp8rt_function_output_source(p, 0, i, &src[i]), ctx);
	cr_assert(src[0] == 0 && src[1] == -1 && src[2] == -1, "sources %d %d %d", src[0], src[1], src[2]);
	ASSERT_FAILS(fp8rt_function_output_source(p, 0, 3, &src[0]), FP8RT_INVALID_ARGUMENT, ctx,
		"fp8rt_function_output_source: output 3 out of range (main has 3)");
	ASSERT_FAILS(fp8rt_function_output_source(p, 0, 0, NULL), FP8RT_INVALID_ARGUMENT, ctx, "input is NULL");
	ASSERT_FAILS(fp8rt_function_output_source(p, 1, 0, &src[0]), FP8RT_INVALID_ARGUMENT, ctx, "out of range");

	Buf x = buf_new(ctx, 1, (int64_t[]){ N }, 5), y = buf_new(ctx, 1, (int64_t[]){ N }, 0),
	    z = buf_new(ctx, 1, (int64_t[]){ N }, 0), w = buf_new(ctx, 1, (int64_t[]){ N }, 0);
	float *want = malloc(N * sizeof *want);
	cr_assert(want);
	memcpy(want, x.h, N * sizeof *want);
	CHECK_OK(fp8rt_program_set_graphs(p, 0), ctx);
	fp8rt_tensor outs[3] = { y.t, z.t, w.t };
	int before = mock_count("cuMemcpyDtoDAsync_v2");
	CHECK_OK(fp8rt_run(p, &x.t, 1, outs, 3, NULL), ctx);
	cr_assert_eq(mock_count("cuMemcpyDtoDAsync_v2") - before, 2, "%d copies with y apart from x, not two",
		mock_count("cuMemcpyDtoDAsync_v2") - before);
	buf_get(ctx, &y, N);
	assert_equal(want, y.h, N, "y");
	outs[0] = x.t; /* y in x's memory */
	before = mock_count("cuMemcpyDtoDAsync_v2");
	CHECK_OK(fp8rt_run(p, &x.t, 1, outs, 3, NULL), ctx);
	cr_assert_eq(mock_count("cuMemcpyDtoDAsync_v2") - before, 1, "one copy (w's) with y in x's memory");
	buf_get(ctx, &x, N);
	assert_equal(want, x.h, N, "y, in x's memory");
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	buf_free(ctx, &x), buf_free(ctx, &y), buf_free(ctx, &z), buf_free(ctx, &w);
	free(want);
	free(ptx);
	free(ext);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

/* ---- externs ------------------------------------------------------------------- */

typedef struct {
	int calls;              /* how often the extern was called */
	int fail;               /* make it fail */
	char seen[512];         /* what it saw of its arguments */
	void (*during)(void *); /* called inside, when set */
	void *during_arg;
} Affine;

typedef struct {
	const float *x;
	float *y;
	int64_t *n;
	double scale, shift;
} AffineOp;

static void
affine_op(const void *arg)
{
	const AffineOp *o = arg;
	for (int i = 0; i < N; i++)
		o->y[i] = (float)(o->x[i] * o->scale + o->shift);
	*o->n = N;
}

/* describes the arguments into a->seen, then enqueues the work */
static fp8rt_status
affine(void *user, const fp8rt_extern_call *c, char *err, size_t errlen)
{
	Affine *a = user;
	AffineOp op = { 0 };
	size_t n = 0;
	a->calls++;
	if (a->during)
		a->during(a->during_arg);
	if (a->fail) {
		snprintf(err, errlen, "told to fail");
		return FP8RT_UNSUPPORTED;
	}
	for (int i = 0; i < c->nargs; i++) {
		const fp8rt_arg *g = &c->args[i];
		n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "%s%s%s", i ? " " : "", g->key ? g->key : "",
			g->key ? "=" : "");
		switch (g->kind) {
		case FP8RT_ARG_TENSOR:
			n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "T%lld", (long long)g->i);
			break;
		case FP8RT_ARG_INT:
			n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "I%lld", (long long)g->i);
			break;
		case FP8RT_ARG_FLOAT: n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "F%g", g->f); break;
		case FP8RT_ARG_BOOL:
			n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "B%lld", (long long)g->i);
			break;
		case FP8RT_ARG_NONE:   n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "None"); break;
		case FP8RT_ARG_STRING: n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "S[%s]", g->s); break;
		case FP8RT_ARG_NAME:   n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "N[%s]", g->s); break;
		case FP8RT_ARG_TUPLE:
			n += (size_t)snprintf(a->seen + n, sizeof a->seen - n, "(%lld", (long long)g->i);
			break;
		}
		if (g->key && !strcmp(g->key, "scale"))
			op.scale = g->f;
		if (g->key && !strcmp(g->key, "shift"))
			op.shift = (double)g->i;
	}
	if (c->ninputs != 1 || c->noutputs != 2 || c->inputs[0].dims[0] != N || c->outputs[1].rank != 0 ||
		c->outputs[1].dtype != FP8RT_I64 || strcmp(c->name, "test.affine")) {
		snprintf(err, errlen, "wrong tensors");
		return FP8RT_INVALID_ARGUMENT;
	}
	op.x = c->inputs[0].data, op.y = c->outputs[0].data, op.n = c->outputs[1].data;
	CUresult (*host)(CUstream, void (*)(const void *), const void *, size_t) =
		(CUresult (*)(CUstream, void (*)(const void *), const void *, size_t))(uintptr_t)dlsym(
			dlopen(MOCKCUDA_PATH, RTLD_NOW), "mockcuda_host_op");
	return host((CUstream)c->stream, affine_op, &op, sizeof op) == CUDA_SUCCESS ? FP8RT_OK : FP8RT_CUDA_ERROR;
}

static char *
extern_ptx(void)
{
	return test_extern_ptx();
}

typedef struct {
	Buf x, y, n;
} AffineIO;

static AffineIO
affine_io(fp8rt_context *ctx)
{
	AffineIO io = { buf_new(ctx, 1, (int64_t[]){ N }, 0), buf_new(ctx, 1, (int64_t[]){ N }, 0),
		buf_new(ctx, 0, NULL, 0) };
	return io;
}

static void
affine_io_free(fp8rt_context *ctx, AffineIO *io)
{
	buf_free(ctx, &io->x), buf_free(ctx, &io->y), buf_free(ctx, &io->n);
}

/* run p on x = x0 + i and check y = 3 * 2x - 1, n = N */
static void
run_affine(fp8rt_context *ctx, fp8rt_program *p, AffineIO *io, float x0, fp8rt_status want)
{
	for (int i = 0; i < N; i++)
		io->x.h[i] = x0 + (float)i;
	CHECK_OK(fp8rt_memcpy_htod(ctx, io->x.d, io->x.h, N * 4), ctx);
	fp8rt_tensor nt = fp8rt_tensor_dense(io->n.d, FP8RT_I64, 0, NULL), out[] = { io->y.t, nt };
	fp8rt_status st = fp8rt_run(p, &io->x.t, 1, out, 2, NULL);
	cr_assert_eq(st, want, "run: %s", fp8rt_last_error(ctx));
	if (st == FP8RT_OK) {
		int64_t count = 0;
		buf_get(ctx, &io->y, N);
		CHECK_OK(fp8rt_memcpy_dtoh(ctx, &count, io->n.d, 8), ctx);
		for (int i = 0; i < N; i++)
			cr_assert_eq(io->y.h[i], (float)(2 * io->x.h[i] * 3.0 - 1), "y[%d] = %g", i, io->y.h[i]);
		cr_assert_eq(count, N);
	}
}

Test(externs, registered_called_captured)
{
	fp8rt_context *ctx = mock_context();
	fp8rt_program *p = NULL;
	Affine a = { 0 };
	char *ptx = extern_ptx();
	ASSERT_FAILS(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "ext.ptx", &p), FP8RT_UNSUPPORTED, ctx,
		"ext.ptx: the program calls extern that is not registered on this context: test.affine "
		"(fp8rt_register_extern before loading)");
	CHECK_OK(fp8rt_register_extern(ctx, "test.affine", affine, &a, 0), ctx);
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "ext.ptx", &p), ctx);
	AffineIO io = affine_io(ctx);
	run_affine(ctx, p, &io, -100, FP8RT_OK);
	cr_assert_str_eq(a.seen,
		"T0 scale=F3 shift=I-1 mode=S[it's ok] dims=(2 I1 (2 I2 I3 dt=N[torch.float32] "
		"flag=B1 none=None edge=F-inf");
	run_affine(ctx, p, &io, 7, FP8RT_OK); /* a replay: the extern's work is in the graph */
	cr_assert_eq(a.calls, 1, "called %d times: once, in the capture", a.calls);
	CHECK_OK(fp8rt_program_set_graphs(p, 0), ctx);
	run_affine(ctx, p, &io, 3, FP8RT_OK);
	cr_assert_eq(a.calls, 2);
	a.fail = 1;
	run_affine(ctx, p, &io, 3, FP8RT_UNSUPPORTED);
	cr_assert(strstr(fp8rt_last_error(ctx),
			  "ext.ptx:10: call test.affine: the extern failed (FP8RT_UNSUPPORTED): "
			  "told to fail"),
		"%s", fp8rt_last_error(ctx));
	affine_io_free(ctx, &io);
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	free(ptx);
}

/* FP8RT_EXTERN_NO_GRAPH: the function runs step by step, the extern each run */
Test(externs, not_capturable)
{
	fp8rt_context *ctx = mock_context();
	fp8rt_program *p = NULL;
	Affine a = { 0 };
	char *ptx = extern_ptx();
	CHECK_OK(fp8rt_register_extern(ctx, "test.affine", affine, &a, FP8RT_EXTERN_NO_GRAPH), ctx);
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "ext.ptx", &p), ctx);
	AffineIO io = affine_io(ctx);
	for (int i = 0; i < 3; i++)
		run_affine(ctx, p, &io, (float)i, FP8RT_OK);
	cr_assert_eq(a.calls, 3);
	affine_io_free(ctx, &io);
	ASSERT_FAILS(fp8rt_register_extern(ctx, "x", affine, &a, 2), FP8RT_INVALID_ARGUMENT, ctx, "unknown flags 0x2");
	ASSERT_FAILS(fp8rt_register_extern(ctx, "x", NULL, &a, 0), FP8RT_INVALID_ARGUMENT, ctx, "fn is NULL");
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	free(ptx);
}

/* One thread at a time: while a run is inside its extern, another thread's
 * calls on the context are refused (nothing done, the message on that
 * thread), and the thread inside may call back — but not run the program
 * again, nor free or replace what the run uses; once the run is over the
 * other thread may go on. */
typedef struct {
	fp8rt_context *ctx;
	fp8rt_program *p;
	fp8rt_status malloc_st, run_st, destroy_st, register_st, free_st, same_st;
	fp8rt_status nested_run_st, nested_destroy_st, nested_ctx_destroy_st, nested_graphs_st;
	char malloc_msg[512], run_msg[512], nested_run_msg[512], nested_destroy_msg[512];
	void *d;
} Other;

static void *
other_thread(void *arg)
{
	Other *o = arg;
	o->malloc_st = fp8rt_malloc(o->ctx, 16, &o->d);
	snprintf(o->malloc_msg, sizeof o->malloc_msg, "%s", fp8rt_last_error(NULL));
	o->run_st = fp8rt_run(o->p, NULL, 0, NULL, 0, NULL);
	snprintf(o->run_msg, sizeof o->run_msg, "%s", fp8rt_last_error(NULL));
	o->destroy_st = fp8rt_program_destroy(o->p);
	o->register_st = fp8rt_register_extern(o->ctx, "test.other", affine, NULL, 0);
	return NULL;
}

static void *
later_thread(void *arg)
{
	Other *o = arg;
	o->malloc_st = fp8rt_malloc(o->ctx, 16, &o->d);
	o->free_st = fp8rt_free(o->ctx, o->d);
	return NULL;
}

static void
on_other_thread(Other *o, void *(*fn)(void *))
{
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, fn, o), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

static void
in_the_run(void *arg)
{
	Other *o = arg;
	void *d = NULL;
	on_other_thread(o, other_thread);
	o->same_st = fp8rt_malloc(o->ctx, 16, &d);
	if (o->same_st == FP8RT_OK)
		o->same_st = fp8rt_free(o->ctx, d);
	o->nested_run_st = fp8rt_run(o->p, NULL, 0, NULL, 0, NULL);
	snprintf(o->nested_run_msg, sizeof o->nested_run_msg, "%s", fp8rt_last_error(NULL));
	o->nested_destroy_st = fp8rt_program_destroy(o->p);
	snprintf(o->nested_destroy_msg, sizeof o->nested_destroy_msg, "%s", fp8rt_last_error(NULL));
	o->nested_ctx_destroy_st = fp8rt_context_destroy(o->ctx);
	o->nested_graphs_st = fp8rt_program_set_graphs(o->p, 0);
}

Test(externs, one_thread_at_a_time)
{
	fp8rt_context *ctx = mock_context();
	fp8rt_program *p = NULL;
	Other o = { .ctx = ctx, .same_st = -1 };
	Affine a = { .during = in_the_run, .during_arg = &o };
	char *ptx = extern_ptx();
	CHECK_OK(fp8rt_register_extern(ctx, "test.affine", affine, &a, FP8RT_EXTERN_NO_GRAPH), ctx);
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "ext.ptx", &p), ctx);
	o.p = p;
	AffineIO io = affine_io(ctx);
	run_affine(ctx, p, &io, 5, FP8RT_OK);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(o.malloc_st, FP8RT_INVALID_ARGUMENT);
	cr_assert_null(o.d);
	cr_assert_str_eq(o.malloc_msg,
		"fp8rt_malloc: the context is in use by another thread (a context and its programs are used by "
		"one thread at a time: give each thread a context of its own)");
	cr_assert_eq(o.run_st, FP8RT_INVALID_ARGUMENT);
	cr_assert(strstr(o.run_msg, "fp8rt_run: the context is in use by another thread"), "%s", o.run_msg);
	cr_assert_eq(o.destroy_st, FP8RT_INVALID_ARGUMENT, "the program was not destroyed under the run");
	cr_assert_eq(o.register_st, FP8RT_INVALID_ARGUMENT);
	cr_assert_eq(o.same_st, FP8RT_OK, "the thread inside called back: %s", fp8rt_last_error(ctx));
	cr_assert_null(
		strstr(fp8rt_last_error(ctx), "another thread"), "the context's message: %s", fp8rt_last_error(ctx));
	cr_assert_eq(o.nested_run_st, FP8RT_INVALID_ARGUMENT);
	cr_assert_str_eq(o.nested_run_msg,
		"fp8rt_run: ext.ptx is running on this thread already (an extern of it called it): a program's runs "
		"do not nest");
	cr_assert_eq(o.nested_destroy_st, FP8RT_INVALID_ARGUMENT);
	cr_assert_str_eq(o.nested_destroy_msg,
		"fp8rt_program_destroy: called inside another of the context's calls on this thread (an extern's): "
		"what it frees or replaces may be in use there");
	cr_assert_eq(o.nested_ctx_destroy_st, FP8RT_INVALID_ARGUMENT);
	cr_assert_eq(o.nested_graphs_st, FP8RT_INVALID_ARGUMENT);
	a.during = NULL;
	on_other_thread(&o, later_thread); /* the run is over: the context is free */
	cr_assert_eq(o.malloc_st, FP8RT_OK, "%s", fp8rt_last_error(NULL));
	cr_assert_eq(o.free_st, FP8RT_OK);
	run_affine(ctx, p, &io, 6, FP8RT_OK); /* and this thread's again */
	affine_io_free(ctx, &io);
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	free(ptx);
}

/* ---- collectives, on the fake NCCL (one rank: each collective a copy) ---- */

static char *
coll_ptx(const char *from, const char *to)
{
	char *ptx = test_coll_ptx();
	if (from) {
		char *p = test_replace(ptx, from, to);
		free(ptx);
		ptx = p;
	}
	return ptx;
}

static int (*nccl_fn(const char *name))(void)
{
	void *lib = dlopen(MOCKNCCL_PATH, RTLD_NOW | RTLD_LOCAL);
	cr_assert(lib, "%s", dlerror());
	return (int (*)(void))(uintptr_t)dlsym(lib, name);
}

static void
load_coll(fp8rt_context *ctx, const char *from, const char *to, fp8rt_status want, const char *msg)
{
	fp8rt_program *p = NULL;
	char *ptx = coll_ptx(from, to);
	ASSERT_FAILS(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "coll.ptx", &p), want, ctx, msg);
	free(ptx);
}

Test(collectives, run_on_the_communicator)
{
	fp8rt_context *ctx = mock_context();
	fp8rt_program *p = NULL;
	unsigned char id[FP8RT_NCCL_ID_BYTES];
	int n = -1, rank = -1;
	char *ptx = coll_ptx(NULL, NULL);
	setenv("FP8RT_NCCL", MOCKNCCL_PATH, 1);
	ASSERT_FAILS(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "coll.ptx", &p), FP8RT_UNSUPPORTED, ctx,
		"coll.ptx: function main runs collectives, and the context has no communicator "
		"(fp8rt_context_init_comm or fp8rt_context_set_comm before loading)");
	ASSERT_FAILS(fp8rt_context_comm(ctx, &n, &rank), FP8RT_INVALID_ARGUMENT, ctx, "has no communicator");
	CHECK_OK(fp8rt_nccl_unique_id(ctx, id), ctx);
	ASSERT_FAILS(fp8rt_context_init_comm(ctx, id, 1, 1), FP8RT_INVALID_ARGUMENT, ctx, "0 <= rank < nranks");
	CHECK_OK(fp8rt_context_init_comm(ctx, id, 1, 0), ctx);
	ASSERT_FAILS(fp8rt_context_init_comm(ctx, id, 1, 0), FP8RT_INVALID_ARGUMENT, ctx, "has a communicator already");
	CHECK_OK(fp8rt_context_comm(ctx, &n, &rank), ctx);
	cr_assert(n == 1 && rank == 0, "%d ranks, rank %d", n, rank);
	cr_assert_eq(nccl_fn("mocknccl_live")(), 1);

	/* a program compiled for two ranks, on a communicator of one */
	load_coll(ctx, "op=avg ranks=0", "op=avg ranks=2", FP8RT_INVALID_ARGUMENT,
		"coll.ptx:16: the collective is over 2 ranks; the context's communicator has 1");
	/* plans the checker refuses */
	load_coll(ctx, "fp8cc-plan 5", "fp8cc-plan 4", FP8RT_BAD_PROGRAM,
		"'collective' lines need plan version 5 (this plan is version 4)");
	load_coll(ctx, "// wait id=2\n", "", FP8RT_BAD_PROGRAM, "function main: 3 collectives but 2 waits");
	load_coll(ctx, "// wait id=1\n", "// wait id=3\n", FP8RT_BAD_PROGRAM, "wait id=3: no collective 3 before it");
	load_coll(ctx, "// wait id=2\n", "// wait id=0\n", FP8RT_BAD_PROGRAM, "wait id=0: collective 0 was waited for");
	load_coll(ctx, "ranks=1 id=1", "ranks=1 id=2", FP8RT_BAD_PROGRAM,
		"collective id=2: the function's collective 1 is next");
	load_coll(ctx, "in=in:0 out=buf:1 count=1024", "in=in:0 out=buf:1 count=2048", FP8RT_BAD_PROGRAM,
		"collective in=in:0 holds 4096 bytes, not the 8192 it reads");
	load_coll(ctx, "dtype=f32 op=avg", "dtype=f16 op=avg", FP8RT_BAD_PROGRAM,
		"collective in=in:0 is f32, not dtype=f16");
	load_coll(ctx, "out=out:0 count=1024 dtype=f32 ranks=1", "out=out:0 count=1024 dtype=f32 op=sum ranks=1",
		FP8RT_BAD_PROGRAM, "an all_gather has no op=");

	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "coll.ptx", &p), ctx);
	Buf x = buf_new(ctx, 1, (int64_t[]){ N }, 3), g = buf_new(ctx, 1, (int64_t[]){ N }, 0),
	    r = buf_new(ctx, 1, (int64_t[]){ N }, 0), s = buf_new(ctx, 1, (int64_t[]){ N }, 0);
	fp8rt_tensor outs[3] = { g.t, r.t, s.t };
	/* graphs on: the first run captures the collectives with the kernels
	 * (NCCL is called then), the next replays them (NCCL is not called, and
	 * the new inputs' results show that the graph ran them); graphs off:
	 * NCCL every run */
	for (int run = 0; run < 4; run++) {
		if (run == 2)
			CHECK_OK(fp8rt_program_set_graphs(p, 0), ctx);
		for (int i = 0; i < N; i++)
			x.h[i] = (float)((i * 7 + run * 3) % 11) - 5;
		CHECK_OK(fp8rt_memcpy_htod(ctx, x.d, x.h, N * 4), ctx);
		int before = nccl_fn("mocknccl_calls")(), want = run == 1 ? 0 : 3;
		CHECK_OK(fp8rt_run(p, &x.t, 1, outs, 3, NULL), ctx);
		cr_assert_eq(nccl_fn("mocknccl_calls")() - before, want, "run %d: %d NCCL calls", run, want);
		buf_get(ctx, &g, N), buf_get(ctx, &r, N), buf_get(ctx, &s, N);
		for (int i = 0; i < N; i++)
			cr_assert(g.h[i] == 2 * x.h[i] && r.h[i] == 2 * x.h[i] && s.h[i] == x.h[i],
				"run %d [%d]: x %g, all_gather %g, reduce_scatter %g, all_reduce %g", run, i, x.h[i],
				g.h[i], r.h[i], s.h[i]);
	}
	CHECK_OK(fp8rt_program_set_graphs(p, 1), ctx);
	((void (*)(void))(uintptr_t)nccl_fn("mocknccl_fail_next"))();
	ASSERT_FAILS(fp8rt_run(p, &x.t, 1, outs, 3, NULL), FP8RT_NCCL_ERROR, ctx,
		"coll.ptx:12: collective: ncclAllGather failed: mock NCCL error (NCCL error 3)");
	buf_free(ctx, &x), buf_free(ctx, &g), buf_free(ctx, &r), buf_free(ctx, &s);
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	cr_assert_eq(nccl_fn("mocknccl_live")(), 0, "the context's communicator was destroyed with it");
	free(ptx);
}

/* a broadcast (plan version 6) from root 0 of a communicator of one: its
 * operand; what a plan or a communicator cannot give it, refused */
Test(collectives, broadcast)
{
	fp8rt_context *ctx = mock_context();
	fp8rt_program *p = NULL;
	unsigned char id[FP8RT_NCCL_ID_BYTES];
	const char *all_reduce = "collective all_reduce in=in:0 out=out:2 count=1024 dtype=f32 op=avg ranks=0 id=2";
	char *v5 =
		coll_ptx(all_reduce, "collective broadcast in=in:0 out=out:2 count=1024 dtype=f32 root=0 ranks=0 id=2");
	char *ptx = test_replace(v5, "fp8cc-plan 5", "fp8cc-plan 6");
	setenv("FP8RT_NCCL", MOCKNCCL_PATH, 1);
	CHECK_OK(fp8rt_nccl_unique_id(ctx, id), ctx);
	CHECK_OK(fp8rt_context_init_comm(ctx, id, 1, 0), ctx);
	ASSERT_FAILS(fp8rt_program_load_data(ctx, v5, strlen(v5), "coll.ptx", &p), FP8RT_BAD_PROGRAM, ctx,
		"a broadcast needs plan version 6 (this plan is version 5)");
	static const struct {
		const char *line, *msg;
		fp8rt_status st;
	} bad[] = {
		{ "collective broadcast in=in:0 out=out:2 count=1024 dtype=f32 root=1 ranks=1 id=2",
			"root=1 is no rank of 1", FP8RT_BAD_PROGRAM },
		{ "collective broadcast in=in:0 out=out:2 count=1024 dtype=f32 op=sum root=0 ranks=0 id=2",
			"a broadcast has no op=", FP8RT_BAD_PROGRAM },
		{ "collective broadcast in=in:0 out=out:2 count=1024 dtype=f32 ranks=0 id=2", "missing key 'root='",
			FP8RT_BAD_PROGRAM },
		{ "collective all_reduce in=in:0 out=out:2 count=1024 dtype=f32 op=avg root=0 ranks=0 id=2",
			"only a broadcast has a root=", FP8RT_BAD_PROGRAM },
		{ "collective broadcast in=in:0 out=out:2 count=1024 dtype=f32 root=1 ranks=0 id=2",
			"coll.ptx:16: the broadcast is from rank 1; the context's communicator has 1 ranks",
			FP8RT_INVALID_ARGUMENT },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *a = coll_ptx(all_reduce, bad[i].line), *b = test_replace(a, "fp8cc-plan 5", "fp8cc-plan 6");
		ASSERT_FAILS(fp8rt_program_load_data(ctx, b, strlen(b), "coll.ptx", &p), bad[i].st, ctx, bad[i].msg);
		free(a), free(b);
	}
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "coll.ptx", &p), ctx);
	cr_assert_eq(fp8rt_program_plan_version(p), 6);
	Buf x = buf_new(ctx, 1, (int64_t[]){ N }, 5), g = buf_new(ctx, 1, (int64_t[]){ N }, 0),
	    r = buf_new(ctx, 1, (int64_t[]){ N }, 0), s = buf_new(ctx, 1, (int64_t[]){ N }, 0);
	fp8rt_tensor outs[3] = { g.t, r.t, s.t };
	for (int run = 0; run < 2; run++) { /* a capture, then a replay */
		CHECK_OK(fp8rt_run(p, &x.t, 1, outs, 3, NULL), ctx);
		buf_get(ctx, &s, N);
		for (int i = 0; i < N; i++)
			cr_assert(s.h[i] == x.h[i], "run %d [%d]: x %g, broadcast %g", run, i, x.h[i], s.h[i]);
	}
	buf_free(ctx, &x), buf_free(ctx, &g), buf_free(ctx, &r), buf_free(ctx, &s);
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
	free(v5), free(ptx);
}

Test(collectives, no_nccl)
{
	fp8rt_context *ctx = mock_context();
	unsigned char id[FP8RT_NCCL_ID_BYTES];
	setenv("FP8RT_NCCL", "/nonexistent/libnccl.so.2", 1);
	ASSERT_FAILS(fp8rt_nccl_unique_id(ctx, id), FP8RT_NCCL_ERROR, ctx,
		"fp8rt_nccl_unique_id: cannot load NCCL (/nonexistent/libnccl.so.2)");
	ASSERT_FAILS(fp8rt_context_init_comm(ctx, id, 1, 0), FP8RT_NCCL_ERROR, ctx, "cannot load NCCL");
	ASSERT_FAILS(fp8rt_context_set_comm(ctx, id), FP8RT_NCCL_ERROR, ctx, "cannot load NCCL");
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}
