/* extern.c — an application that supplies an extern: the op fp8cc left
 * for it in examples/extern_gram.trace, mylib.gram(x) = x · xᵀ per batch,
 * implemented with libfp8rt's batched GEMM (a cuBLASLt call) on the
 * stream the plan gives it. It runs the program on random data and checks
 * the result against the same arithmetic on the host. Needs a GPU.
 *
 *   fp8cc examples/extern_gram.trace -o gram.ptx
 *   extern gram.ptx
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <fp8rt.h>

enum { B = 4, M = 16, K = 32 };

/* mylib.gram(x): x (b, m, k) f32 -> (b, m, m) f32, x_p · x_pᵀ for each p */
static fp8rt_status
gram(void *user, const fp8rt_extern_call *call, char *err, size_t errlen)
{
	(void)user;
	const fp8rt_tensor *x = &call->inputs[0], *y = &call->outputs[0];
	if (call->ninputs != 1 || call->noutputs != 1 || x->rank != 3 || x->dtype != FP8RT_F32 ||
		y->dtype != FP8RT_F32 || y->dims[1] != x->dims[1] || y->dims[2] != x->dims[1]) {
		snprintf(err, errlen, "mylib.gram wants x (b, m, k) f32 and gives (b, m, m) f32");
		return FP8RT_INVALID_ARGUMENT;
	}
	int64_t m = x->dims[1], k = x->dims[2];
	fp8rt_matmul_args a = {
		.size = sizeof a,
		.m = m,
		.n = m,
		.k = k,
		.batch = x->dims[0],
		.dtype = FP8RT_F32,
		.a = x->data,
		.stride_a = m * k,
		.b = x->data,
		.stride_b = m * k,
		.trans_b = 1, /* b = xᵀ: x stored (n, k) */
		.d = y->data,
		.stride_d = m * m,
	};
	fp8rt_status st = fp8rt_matmul(call->ctx, &a, call->stream);
	if (st != FP8RT_OK)
		snprintf(err, errlen, "%s", fp8rt_last_error(call->ctx));
	return st;
}

static int
fail(fp8rt_context *ctx, const char *what)
{
	fprintf(stderr, "extern: %s: %s\n", what, fp8rt_last_error(ctx));
	return 1;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: extern PROGRAM.ptx   (fp8cc examples/extern_gram.trace -o PROGRAM.ptx)\n");
		return 2;
	}
	static float x[B * M * K], y[B * M * M];
	uint64_t seed = 1;
	for (int i = 0; i < B * M * K; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)((seed >> 40) % 2001) / 1000.0f - 1.0f;
	}
	fp8rt_context *ctx = NULL;
	fp8rt_program *prog = NULL;
	void *dx = NULL, *dy = NULL;
	int rc = 1;
	if (fp8rt_context_create(0, &ctx) != FP8RT_OK)
		return fail(NULL, "no GPU");
	/* Before the load: the program resolves its externs then. The first
     * GEMM of a context makes its cuBLASLt handle, which must not happen
     * inside a CUDA-graph capture, so this extern is not captured. */
	if (fp8rt_register_extern(ctx, "mylib.gram", gram, NULL, FP8RT_EXTERN_NO_GRAPH) != FP8RT_OK ||
		fp8rt_program_load_file(ctx, argv[1], &prog) != FP8RT_OK) {
		fail(ctx, argv[1]);
		goto done;
	}
	if (fp8rt_malloc(ctx, sizeof x, &dx) != FP8RT_OK || fp8rt_malloc(ctx, sizeof y, &dy) != FP8RT_OK ||
		fp8rt_memcpy_htod(ctx, dx, x, sizeof x) != FP8RT_OK) {
		fail(ctx, "device memory");
		goto done;
	}
	fp8rt_tensor in = fp8rt_tensor_dense(dx, FP8RT_F32, 3, (int64_t[]){ B, M, K });
	fp8rt_tensor out = fp8rt_tensor_dense(dy, FP8RT_F32, 3, (int64_t[]){ B, M, M });
	if (fp8rt_run(prog, &in, 1, &out, 1, NULL) != FP8RT_OK || fp8rt_synchronize(ctx, NULL) != FP8RT_OK ||
		fp8rt_memcpy_dtoh(ctx, y, dy, sizeof y) != FP8RT_OK) {
		fail(ctx, "run");
		goto done;
	}
	/* the host's 0.5 · tanh(x) · tanh(x)ᵀ; the GPU's tanh and summation
     * order differ in the last bits, so compare each entry relatively to
     * the sum of its products' magnitudes (what bounds a summation's
     * rounding; an entry near zero has an error of the size of its terms) */
	double worst = 0;
	for (int p = 0; p < B; p++)
		for (int i = 0; i < M; i++)
			for (int j = 0; j < M; j++) {
				double acc = 0, mag = 0;
				for (int k = 0; k < K; k++) {
					double t = tanh(x[(p * M + i) * K + k]) * tanh(x[(p * M + j) * K + k]);
					acc += t;
					mag += fabs(t);
				}
				double want = 0.5 * acc, got = y[(p * M + i) * M + j];
				double e = fabs(got - want) / fmax(0.5 * mag, 1e-30);
				worst = e > worst ? e : worst;
			}
	printf("extern: mylib.gram ran inside %s: y[0][0][0] = %g, worst relative error %.2e\n", argv[1], y[0], worst);
	rc = worst <= 1e-5 ? 0 : 1;
	if (rc)
		fprintf(stderr, "extern: FAILED: the error is above 1e-5\n");
done:
	fp8rt_free(ctx, dx);
	fp8rt_free(ctx, dy);
	fp8rt_context_destroy(ctx); /* frees the program too */
	return rc;
}
