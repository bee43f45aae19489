/* test_program.c — loading and running a hand-written fp8cc program
 * (test_data.c: a persistent launch, a cooperative launch with dynamic shared
 * memory and a `zero` buffer, a gemm with bias and a copy) on a GPU: results
 * checked directly and with CUDA graphs (capture, replay, recapture on new
 * pointers); the caller's mistakes (dtype, shape, strides, null, alignment,
 * counts); programs that must not load (JIT syntax error with the log, a
 * missing kernel, a wrong parameter count, a target the device cannot run,
 * not an fp8cc file); and fp8run end to end. Skipped visibly without a GPU. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_test.h"
#include "safetensors.h"
#include "test_data.h"

#define NIN  6
#define NOUT 3
#define N    1024
#define M    32
#define NN   16
#define K    64

/* Host data of the test program and its expected outputs. */
typedef struct {
	float x[N];
	uint8_t a[M * K], w[NN * K];
	float sa, sb;
	uint16_t bias[NN];
	double d[M * NN]; /* reference of out:1 */
} Host;

typedef struct {
	fp8rt_tensor in[NIN], out[NOUT];
} Io;

static void
make_host(Host *h)
{
	uint64_t seed = 42;
	for (int i = 0; i < N; i++)
		h->x[i] = (float)((int)(rnd(&seed) % 2001) - 1000) / 64.0f;
	for (int i = 0; i < M * K; i++)
		h->a[i] = rnd_fp8(&seed, FP8RT_F8E4M3FN);
	for (int i = 0; i < NN * K; i++)
		h->w[i] = rnd_fp8(&seed, FP8RT_F8E4M3FN);
	h->sa = 0.5f, h->sb = 0.125f;
	for (int j = 0; j < NN; j++)
		h->bias[j] = bf16_encode((float)j - 8.0f);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < NN; j++) {
			double s = 0;
			for (int k = 0; k < K; k++)
				s += fp8_decode(h->a[i * K + k], FP8RT_F8E4M3FN) *
					fp8_decode(h->w[j * K + k], FP8RT_F8E4M3FN);
			h->d[i * NN + j] = s * h->sa * h->sb + bf16_decode(h->bias[j]);
		}
}

static fp8rt_tensor
dev_tensor(fp8rt_context *ctx, const void *host, fp8rt_dtype dt, int rank, int64_t d0, int64_t d1)
{
	int64_t dims[2] = { d0, d1 };
	size_t bytes = fp8rt_dtype_size(dt);
	for (int i = 0; i < rank; i++)
		bytes *= (size_t)dims[i];
	void *p = NULL;
	CHECK_OK(fp8rt_malloc(ctx, bytes, &p), ctx);
	if (host)
		CHECK_OK(fp8rt_memcpy_htod(ctx, p, host, bytes), ctx);
	else
		CHECK_OK(fp8rt_memset(ctx, p, 0, bytes), ctx);
	return fp8rt_tensor_dense(p, dt, rank, dims);
}

static void
make_io(fp8rt_context *ctx, const Host *h, Io *io)
{
	io->in[0] = dev_tensor(ctx, h->x, FP8RT_F32, 1, N, 0);
	io->in[1] = dev_tensor(ctx, h->a, FP8RT_F8E4M3FN, 2, M, K);
	io->in[2] = dev_tensor(ctx, h->w, FP8RT_F8E4M3FN, 2, NN, K);
	io->in[3] = dev_tensor(ctx, &h->sa, FP8RT_F32, 0, 0, 0);
	io->in[4] = dev_tensor(ctx, &h->sb, FP8RT_F32, 0, 0, 0);
	io->in[5] = dev_tensor(ctx, h->bias, FP8RT_BF16, 1, NN, 0);
	io->out[0] = dev_tensor(ctx, NULL, FP8RT_F32, 1, N, 0);
	io->out[1] = dev_tensor(ctx, NULL, FP8RT_BF16, 2, M, NN);
	io->out[2] = dev_tensor(ctx, NULL, FP8RT_F32, 1, N, 0);
}

static void
free_io(fp8rt_context *ctx, Io *io)
{
	for (int i = 0; i < NIN; i++)
		fp8rt_free(ctx, io->in[i].data);
	for (int i = 0; i < NOUT; i++)
		fp8rt_free(ctx, io->out[i].data);
}

static void
clear_outputs(fp8rt_context *ctx, const Io *io)
{
	CHECK_OK(fp8rt_memset(ctx, io->out[0].data, 0xff, N * 4), ctx);
	CHECK_OK(fp8rt_memset(ctx, io->out[1].data, 0xff, M * NN * 2), ctx);
	CHECK_OK(fp8rt_memset(ctx, io->out[2].data, 0xff, N * 4), ctx);
}

/* y = 2x exactly, xc = x bit for bit, d within 1e-2 of the reference. */
static void
check_outputs(fp8rt_context *ctx, const Host *h, const Io *io, const char *what)
{
	static float y[N], xc[N];
	static uint16_t d[M * NN];
	double got[M * NN];
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, y, io->out[0].data, sizeof y), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, d, io->out[1].data, sizeof d), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, xc, io->out[2].data, sizeof xc), ctx);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(y[i], 2 * h->x[i], "%s: y[%d]: expected %g, got %g", what, i, 2 * h->x[i], y[i]);
		cr_assert_eq(
			memcmp(&xc[i], &h->x[i], 4), 0, "%s: xc[%d]: expected %g, got %g", what, i, h->x[i], xc[i]);
	}
	for (int i = 0; i < M * NN; i++)
		got[i] = bf16_decode(d[i]);
	double err = rel_frobenius(h->d, got, M * NN, NN, 2e-2, what);
	cr_assert(err < 1e-2, "%s: gemm output: relative Frobenius error %.3g", what, err);
}

static fp8rt_program *
load_test_program(fp8rt_context *ctx)
{
	char *ptx = test_program_ptx(0, NULL);
	fp8rt_program *p = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "test.ptx", &p), ctx);
	free(ptx);
	return p;
}

Test(program, signature)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	fp8rt_program *p = load_test_program(ctx);
	int nin = -1, nout = -1;
	fp8rt_tensor_info info;
	CHECK_OK(fp8rt_program_io_count(p, &nin, &nout), ctx);
	cr_assert(nin == NIN && nout == NOUT, "%d inputs, %d outputs", nin, nout);
	CHECK_OK(fp8rt_program_input(p, 1, &info), ctx);
	cr_assert_str_eq(info.name, "a");
	cr_assert(info.dtype == FP8RT_F8E4M3FN && info.rank == 2 && info.dims[0] == M && info.dims[1] == K);
	CHECK_OK(fp8rt_program_output(p, 1, &info), ctx);
	cr_assert_str_eq(info.name, "d");
	cr_assert(info.dtype == FP8RT_BF16 && info.dims[1] == NN);
	CHECK_OK(fp8rt_program_input(p, 3, &info), ctx);
	cr_assert_eq(info.rank, 0);
	ASSERT_FAILS(fp8rt_program_output(p, 3, &info), FP8RT_INVALID_ARGUMENT, ctx, "index 3 out of range");
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	fp8rt_context_destroy(ctx);
}

Test(program, runs_without_graphs)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	static Host h;
	Io io;
	make_host(&h);
	make_io(ctx, &h, &io);
	fp8rt_program *p = load_test_program(ctx);
	CHECK_OK(fp8rt_program_set_graphs(p, 0), ctx);
	clear_outputs(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, NIN, io.out, NOUT, NULL), ctx);
	check_outputs(ctx, &h, &io, "direct run");
	clear_outputs(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, NIN, io.out, NOUT, NULL), ctx);
	check_outputs(ctx, &h, &io, "second direct run (zero buffer left zero)");
	free_io(ctx, &io);
	fp8rt_context_destroy(ctx); /* frees the program too */
}

Test(program, runs_with_graphs_replay_and_recapture)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	static Host h;
	Io io, io2;
	make_host(&h);
	make_io(ctx, &h, &io);
	fp8rt_program *p = load_test_program(ctx); /* graphs on by default */
	clear_outputs(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, NIN, io.out, NOUT, NULL), ctx);
	check_outputs(ctx, &h, &io, "graph: first run (capture)");
	clear_outputs(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, NIN, io.out, NOUT, NULL), ctx);
	check_outputs(ctx, &h, &io, "graph: second run (replay)");
	/* new output pointers: a new capture, and the old graph still replays */
	make_io(ctx, &h, &io2);
	clear_outputs(ctx, &io2);
	CHECK_OK(fp8rt_run(p, io2.in, NIN, io2.out, NOUT, NULL), ctx);
	check_outputs(ctx, &h, &io2, "graph: new pointers (recapture)");
	clear_outputs(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, NIN, io.out, NOUT, NULL), ctx);
	check_outputs(ctx, &h, &io, "graph: first pointers again (replay)");
	/* changed input data, same pointers: the replay reads the new data */
	for (int i = 0; i < N; i++)
		h.x[i] = -h.x[i] + 1.0f;
	CHECK_OK(fp8rt_memcpy_htod(ctx, io.in[0].data, h.x, sizeof h.x), ctx);
	clear_outputs(ctx, &io);
	CHECK_OK(fp8rt_run(p, io.in, NIN, io.out, NOUT, NULL), ctx);
	check_outputs(ctx, &h, &io, "graph: new input data (replay)");
	/* timing helper, graphs and not */
	float us[5];
	CHECK_OK(fp8rt_time_runs(p, io.in, NIN, io.out, NOUT, NULL, 2, 5, us), ctx);
	cr_assert(us[0] > 0 && us[4] > 0);
	CHECK_OK(fp8rt_program_set_graphs(p, 0), ctx);
	CHECK_OK(fp8rt_time_runs(p, io.in, NIN, io.out, NOUT, NULL, 1, 5, us), ctx);
	check_outputs(ctx, &h, &io, "after timing");
	free_io(ctx, &io);
	free_io(ctx, &io2);
	CHECK_OK(fp8rt_program_destroy(p), ctx);
	CHECK_OK(fp8rt_context_destroy(ctx), NULL);
}

Test(program, rejects_bad_tensors)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	static Host h;
	Io io;
	fp8rt_tensor in[NIN];
	make_host(&h);
	make_io(ctx, &h, &io);
	fp8rt_program *p = load_test_program(ctx);
#define RUN_WITH(i, field, value, substr)                                                                     \
	do {                                                                                                  \
		memcpy(in, io.in, sizeof in);                                                                 \
		in[i].field = value;                                                                          \
		ASSERT_FAILS(fp8rt_run(p, in, NIN, io.out, NOUT, NULL), FP8RT_INVALID_ARGUMENT, ctx, substr); \
	} while (0)
	RUN_WITH(0, dtype, FP8RT_BF16, "input 0 'x': dtype bf16, the program wants f32");
	RUN_WITH(1, dims[1], 65, "input 1 'a': shape [32,65] (rank 2), the program wants [32,64]");
	RUN_WITH(1, rank, 1, "input 1 'a': shape [32] (rank 1)");
	RUN_WITH(1, strides[0], 128, "input 1 'a': stride[0]=128, dense row-major needs 64");
	RUN_WITH(1, strides[1], 2, "stride[1]=2, dense row-major needs 1");
	RUN_WITH(2, data, NULL, "input 2 'w': data is NULL");
	RUN_WITH(0, data, (char *)io.in[0].data + 4, "input 0 'x': data");
	cr_assert(strstr(fp8rt_last_error(ctx), "is not 16-byte aligned"), "%s", fp8rt_last_error(ctx));
	ASSERT_FAILS(fp8rt_run(p, io.in, NIN - 1, io.out, NOUT, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"5 inputs and 3 outputs given; test.ptx has 6 and 3");
	ASSERT_FAILS(
		fp8rt_run(p, NULL, NIN, io.out, NOUT, NULL), FP8RT_INVALID_ARGUMENT, ctx, "the inputs array is NULL");
	fp8rt_tensor out[NOUT];
	memcpy(out, io.out, sizeof out);
	out[1].dtype = FP8RT_F16;
	ASSERT_FAILS(fp8rt_run(p, io.in, NIN, out, NOUT, NULL), FP8RT_INVALID_ARGUMENT, ctx,
		"output 1 'd': dtype f16, the program wants bf16");
	/* all-zero strides mean dense; size-1 dimensions may have any stride */
	memcpy(in, io.in, sizeof in);
	memset(in[1].strides, 0, sizeof in[1].strides);
	CHECK_OK(fp8rt_run(p, in, NIN, io.out, NOUT, NULL), ctx);
	check_outputs(ctx, &h, &io, "zero strides");
	free_io(ctx, &io);
	fp8rt_context_destroy(ctx);
}

/* A program that fails to load: its status and a message substring. */
static void
load_fails(fp8rt_context *ctx, const char *ptx, fp8rt_status st, const char *substr)
{
	fp8rt_program *p = (fp8rt_program *)1;
	ASSERT_FAILS(fp8rt_program_load_data(ctx, ptx, strlen(ptx), "bad.ptx", &p), st, ctx, substr);
	cr_assert_null(p);
	cr_log_info("%s: %s", fp8rt_status_name(st), fp8rt_last_error(ctx));
}

Test(program, jit_error_shows_log)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	char *ptx = test_program_ptx(0, NULL);
	char *bad = test_replace(ptx, "add.f32 %f2, %f1, %f1;", "add.f32 %f2, %f1, %f1, %f1;");
	load_fails(ctx, bad, FP8RT_BAD_PROGRAM,
		"cuModuleLoadDataEx(&module, ptx, 4, jit_options, jit_values) failed: CUDA_ERROR_INVALID_PTX");
	const char *msg = fp8rt_last_error(ctx);
	cr_assert(strstr(msg, "JIT error log:\n"), "%s", msg);
	cr_assert(strstr(msg, "error"), "no JIT log in: %s", msg);
	cr_assert(!strstr(msg, "(empty)"), "the JIT error log is empty: %s", msg);
	free(bad);
	free(ptx);
	fp8rt_context_destroy(ctx);
}

Test(program, rejects_bad_programs)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	char *missing = test_program_ptx(16, "launch k9 grid=2 block=128 smem=0 coop=1 args=buf:0,buf:1,out:0");
	load_fails(ctx, missing, FP8RT_BAD_PROGRAM, "bad.ptx:16: launch k9: the PTX has no kernel 'k9'");
	char *params = test_program_ptx(15, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,buf:0,buf:1");
	load_fails(ctx, params, FP8RT_BAD_PROGRAM, "bad.ptx:15: launch k0 passes 3 arguments");
	/* a cooperative grid larger than fits at once is cut to what fits */
	char *big = test_program_ptx(16, "launch k1 grid=100000000 block=128 smem=0 coop=1 args=buf:0,buf:1,out:0");
	fp8rt_program *bp = NULL;
	CHECK_OK(fp8rt_program_load_data(ctx, big, strlen(big), "big.ptx", &bp), ctx);
	fp8rt_program_destroy(bp);
	free(big);
	char *smem = test_program_ptx(16, "launch k1 grid=2 block=128 smem=100000000 coop=1 args=buf:0,buf:1,out:0");
	load_fails(ctx, smem, FP8RT_BAD_PROGRAM, "exceeds the device's");
	char *t = test_program_ptx(2, "target sm_999a");
	char *target = test_replace(t, ".target sm_90\n", ".target sm_999a\n");
	load_fails(ctx, target, FP8RT_UNSUPPORTED, "the program targets sm_999a");
	/* a version past the runtime's own, whichever that is */
	int vmax = 0;
	char line[32], msg[96];
	fp8rt_plan_versions(NULL, &vmax);
	snprintf(line, sizeof line, "fp8cc-plan %d", vmax + 1);
	snprintf(msg, sizeof msg, "bad.ptx:1: plan version %d; this runtime reads versions 1 to %d", vmax + 1, vmax);
	char *v2 = test_program_ptx(1, line);
	load_fails(ctx, v2, FP8RT_BAD_PROGRAM, msg);
	load_fails(ctx, "this is not PTX\n", FP8RT_BAD_PROGRAM, "not an fp8cc PTX file");
	load_fails(ctx, test_kernels_ptx, FP8RT_BAD_PROGRAM, "not an fp8cc PTX file");
	fp8rt_program *p = NULL;
	ASSERT_FAILS(fp8rt_program_load_file(ctx, "/nonexistent/x.ptx", &p), FP8RT_IO_ERROR, ctx, "cannot open");
	free(missing), free(params), free(smem), free(t), free(target), free(v2);
	/* the context still works */
	fp8rt_program *ok = load_test_program(ctx);
	CHECK_OK(fp8rt_program_destroy(ok), ctx);
	fp8rt_context_destroy(ctx);
}

/* ---- fp8run end to end ------------------------------------------------------ */

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

static StTensor
st_tensor(const char *name, const char *dtype, int rank, int64_t d0, int64_t d1, const void *data, size_t nbytes)
{
	StTensor t;
	memset(&t, 0, sizeof t);
	t.name = (char *)name;
	snprintf(t.dtype, sizeof t.dtype, "%s", dtype);
	t.rank = rank;
	t.dims[0] = d0, t.dims[1] = d1;
	t.nbytes = nbytes;
	t.data = (void *)data;
	return t;
}

Test(fp8run, runs_program_end_to_end)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	fp8rt_context_destroy(ctx);
	static Host h;
	make_host(&h);
	char dir[] = "/tmp/fp8run_test_XXXXXX", path[256], cmd[2048], out[8192], err[512];
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/prog.ptx", dir);
	cr_assert_eq(test_write_program(path), 0, "cannot write %s", path);
	StTensor ts[] = {
		st_tensor("x", "F32", 1, N, 0, h.x, sizeof h.x),
		st_tensor("a", "F8_E4M3", 2, M, K, h.a, sizeof h.a),
		st_tensor("w", "F8_E4M3", 2, NN, K, h.w, sizeof h.w),
		st_tensor("sa", "F32", 0, 0, 0, &h.sa, 4),
		st_tensor("sb", "F32", 0, 0, 0, &h.sb, 4),
		st_tensor("bias", "BF16", 1, NN, 0, h.bias, sizeof h.bias),
		st_tensor("unused", "F32", 0, 0, 0, &h.sa, 4),
	};
	snprintf(cmd, sizeof cmd, "%s/in.safetensors", dir);
	cr_assert_eq(st_write(cmd, ts, 7, err, sizeof err), 0, "%s", err);

	snprintf(cmd, sizeof cmd, "'%s' %s --inputs %s/in.safetensors -o %s/out.safetensors --iters 20 2>&1",
		FP8RUN_PATH, path, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
	cr_assert(strstr(out, "median") && strstr(out, "graphs on"), "%s", out);
	cr_log_info("%s", out);
	StFile res;
	snprintf(cmd, sizeof cmd, "%s/out.safetensors", dir);
	cr_assert_eq(st_read(cmd, &res, err, sizeof err), 0, "%s", err);
	const StTensor *y = st_find(&res, "y"), *d = st_find(&res, "d"), *xc = st_find(&res, "xc");
	cr_assert(y && d && xc && res.n == 3);
	cr_assert_str_eq(d->dtype, "BF16");
	cr_assert(d->rank == 2 && d->dims[0] == M && d->dims[1] == NN);
	for (int i = 0; i < N; i++)
		cr_assert_eq(((const float *)y->data)[i], 2 * h.x[i], "y[%d]", i);
	cr_assert_eq(memcmp(xc->data, h.x, sizeof h.x), 0);
	double got[M * NN];
	for (int i = 0; i < M * NN; i++)
		got[i] = bf16_decode(((const uint16_t *)d->data)[i]);
	cr_assert(rel_frobenius(h.d, got, M * NN, NN, 2e-2, "fp8run d") < 1e-2);
	st_free(&res);

	/* --no-graph, and an input file that lacks an input or has the wrong shape */
	snprintf(cmd, sizeof cmd, "'%s' %s --inputs %s/in.safetensors -o %s/out2.safetensors --no-graph --iters 3 2>&1",
		FP8RUN_PATH, path, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
	cr_assert(strstr(out, "graphs off"), "%s", out);
	ts[5] = st_tensor("bias", "BF16", 1, NN / 2, 0, h.bias, sizeof h.bias / 2);
	snprintf(cmd, sizeof cmd, "%s/bad.safetensors", dir);
	cr_assert_eq(st_write(cmd, ts, 7, err, sizeof err), 0, "%s", err);
	snprintf(cmd, sizeof cmd, "'%s' %s --inputs %s/bad.safetensors -o %s/o.safetensors 2>&1", FP8RUN_PATH, path,
		dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "input 5 'bias'") && strstr(out, "the program wants BF16[16]"), "%s", out);
	ts[5] = ts[6];
	snprintf(cmd, sizeof cmd, "%s/bad.safetensors", dir);
	cr_assert_eq(st_write(cmd, ts, 6, err, sizeof err), 0, "%s", err);
	snprintf(cmd, sizeof cmd, "'%s' %s --inputs %s/bad.safetensors -o %s/o.safetensors 2>&1", FP8RUN_PATH, path,
		dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "input 5 'bias' is not in"), "%s", out);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
