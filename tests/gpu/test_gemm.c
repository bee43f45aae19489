/* test_gemm.c — fp8rt_scaled_mm on a GPU against a host reference: fp8
 * decoded exactly, products accumulated in double, scales and bias applied,
 * relative Frobenius error < 1e-2 (first mismatches printed). Shapes from the
 * seed layer up to M=1000 (not a multiple of 16); e4m3 x e4m3, e4m3 x e5m2
 * and e5m2 x e4m3; bf16, f32 and f16 outputs; bias; fast_accum on and off;
 * padded leading dimensions; row-wise and block-wise scales
 * (fp8rt_scaled_mm_ex). Then the
 * argument checks. Skipped visibly
 * without a GPU. */
#include <stdlib.h>

#include "rt_test.h"

typedef struct {
	int64_t m, n, k;
	fp8rt_dtype at, bt, dt;
	int bias, fast, pad, row; /* row: 1 row-wise scales, scale_a[i] and scale_b[j];
	                             2 block-wise (fp8rt.h's FP8RT_SCALE_BLOCK) */
} MmCase;

typedef struct {
	void *a, *b, *d, *bias, *scales;
} Dev;

static const float scale_a = 0.5f, scale_b = 0.25f;

/* the scales of row i of a and column j of b: tensor-wise the constants,
 * row-wise a power of two that varies along the row and the column */
static float
row_scale(const MmCase *c, int64_t i)
{
	return c->row ? scale_a * (float)(1 << (i % 5)) : scale_a;
}

static float
col_scale(const MmCase *c, int64_t j)
{
	return c->row ? scale_b / (float)(1 << (j % 3)) : scale_b;
}

/* block-wise: a's 1x128 block (i, r) and b's 128x128 block (r, c), powers
 * of two that vary along both */
static float
block_a(int64_t i, int64_t r)
{
	return scale_a * (float)(1 << ((i + r) % 5));
}

static float
block_b(int64_t r, int64_t c)
{
	return scale_b / (float)(1 << ((r + 2 * c) % 3));
}

static double
decode_out(const uint8_t *p, fp8rt_dtype dt)
{
	uint16_t h;
	float f;
	switch (dt) {
	case FP8RT_F32:  memcpy(&f, p, 4); return f;
	case FP8RT_BF16: memcpy(&h, p, 2); return bf16_decode(h);
	default:         memcpy(&h, p, 2); return f16_decode(h);
	}
}

static void *
upload(fp8rt_context *ctx, const void *host, size_t bytes)
{
	void *d = NULL;
	CHECK_OK(fp8rt_malloc(ctx, bytes, &d), ctx);
	CHECK_OK(fp8rt_memcpy_htod(ctx, d, host, bytes), ctx);
	return d;
}

/* D = (A · Bᵀ_stored) · sa · sb + bias in double; a is (m, lda), b is (n, ldb). */
static void
reference(
	const MmCase *c, int64_t lda, int64_t ldb, const uint8_t *a, const uint8_t *b, const double *bias, double *ref)
{
	double *ad = malloc((size_t)(c->m * c->k) * sizeof *ad), *bd = malloc((size_t)(c->n * c->k) * sizeof *bd);
	cr_assert(ad && bd);
	for (int64_t i = 0; i < c->m; i++)
		for (int64_t kk = 0; kk < c->k; kk++)
			ad[i * c->k + kk] = fp8_decode(a[i * lda + kk], c->at);
	for (int64_t j = 0; j < c->n; j++)
		for (int64_t kk = 0; kk < c->k; kk++)
			bd[j * c->k + kk] = fp8_decode(b[j * ldb + kk], c->bt);
	for (int64_t i = 0; i < c->m; i++)
		for (int64_t j = 0; j < c->n; j++) {
			const double *x = ad + i * c->k, *y = bd + j * c->k;
			double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
			if (c->row == 2) { /* each 128-long run scaled by its blocks */
				double v = 0;
				for (int64_t r = 0; r * 128 < c->k; r++) {
					double part = 0;
					for (int64_t kk = r * 128; kk < c->k && kk < r * 128 + 128; kk++)
						part += x[kk] * y[kk];
					v += part * block_a(i, r) * block_b(r, j / 128);
				}
				ref[i * c->n + j] = v + (bias ? bias[j] : 0);
				continue;
			}
			for (int64_t kk = 0; kk < c->k; kk += 4) {
				s0 += x[kk] * y[kk];
				s1 += x[kk + 1] * y[kk + 1];
				s2 += x[kk + 2] * y[kk + 2];
				s3 += x[kk + 3] * y[kk + 3];
			}
			ref[i * c->n + j] =
				(s0 + s1 + s2 + s3) * row_scale(c, i) * col_scale(c, j) + (bias ? bias[j] : 0);
		}
	free(ad);
	free(bd);
}

static void
check_mm(fp8rt_context *ctx, MmCase c)
{
	int64_t lda = c.k + (c.pad ? 16 : 0), ldb = c.k + (c.pad ? 32 : 0), ldd = c.n + (c.pad ? 16 : 0);
	size_t osize = fp8rt_dtype_size(c.dt);
	fp8rt_dtype bias_dt = c.dt == FP8RT_F16 ? FP8RT_F16 : FP8RT_BF16;
	uint8_t *a = malloc((size_t)(c.m * lda)), *b = malloc((size_t)(c.n * ldb));
	uint8_t *d = malloc((size_t)(c.m * ldd) * osize);
	uint16_t *bias16 = malloc((size_t)c.n * 2);
	double *bias = malloc((size_t)c.n * sizeof *bias), *ref = malloc((size_t)(c.m * c.n) * sizeof *ref);
	double *got = malloc((size_t)(c.m * c.n) * sizeof *got);
	/* scale_a's values, then scale_b's at a 16-byte aligned offset: m and n
	 * of them, or block-wise m*kb (scale_a[r*m + i]) and kb4 per 128
	 * columns (scale_b[c*kb4 + r]) */
	int64_t kb = (c.k + 127) / 128, kb4 = (kb + 3) / 4 * 4, nb = (c.n + 127) / 128;
	int64_t na = c.row == 2 ? c.m * kb : c.m, nsb = c.row == 2 ? kb4 * nb : c.n;
	int64_t sb_at = (na + 3) / 4 * 4;
	float *scales = calloc((size_t)(sb_at + nsb), sizeof *scales);
	cr_assert(scales);
	if (c.row == 2) {
		for (int64_t r = 0; r < kb; r++)
			for (int64_t i = 0; i < c.m; i++)
				scales[r * c.m + i] = block_a(i, r);
		for (int64_t cb = 0; cb < nb; cb++)
			for (int64_t r = 0; r < kb; r++)
				scales[sb_at + cb * kb4 + r] = block_b(r, cb);
	} else {
		for (int64_t i = 0; i < c.m; i++)
			scales[i] = row_scale(&c, i);
		for (int64_t j = 0; j < c.n; j++)
			scales[sb_at + j] = col_scale(&c, j);
	}
	uint64_t seed = 0x1234567ull + (uint64_t)(c.m * 31 + c.n * 7 + c.k) + (uint64_t)c.at * 1000;
	cr_assert(a && b && d && bias16 && bias && ref && got);
	for (int64_t i = 0; i < c.m * lda; i++)
		a[i] = rnd_fp8(&seed, c.at);
	for (int64_t i = 0; i < c.n * ldb; i++)
		b[i] = rnd_fp8(&seed, c.bt);
	for (int64_t j = 0; j < c.n; j++) {
		float v = (float)((int)(rnd(&seed) % 129) - 64) / 16.0f; /* exact in bf16 and f16 */
		bias16[j] = bias_dt == FP8RT_F16 ? f16_encode(v) : bf16_encode(v);
		bias[j] = v;
	}
	memset(d, 0xff, (size_t)(c.m * ldd) * osize); /* NaN: the padding must stay so */

	Dev dev = { upload(ctx, a, (size_t)(c.m * lda)), upload(ctx, b, (size_t)(c.n * ldb)),
		upload(ctx, d, (size_t)(c.m * ldd) * osize), upload(ctx, bias16, (size_t)c.n * 2),
		upload(ctx, scales, (size_t)(sb_at + nsb) * sizeof *scales) };
	fp8rt_scaled_mm_args args = {
		.m = c.m,
		.n = c.n,
		.k = c.k,
		.a = dev.a,
		.a_dtype = c.at,
		.lda = c.pad ? lda : 0,
		.b = dev.b,
		.b_dtype = c.bt,
		.ldb = c.pad ? ldb : 0,
		.scale_a = (const float *)dev.scales,
		.scale_b = (const float *)dev.scales + sb_at,
		.bias = c.bias ? dev.bias : NULL,
		.bias_dtype = c.bias ? bias_dt : FP8RT_DTYPE_NONE,
		.d = dev.d,
		.d_dtype = c.dt,
		.ldd = c.pad ? ldd : 0,
		.fast_accum = c.fast,
	};
	if (c.row) {
		fp8rt_scaled_mm_ex_args ex = {
			.size = sizeof ex, .mm = args, .scale_mode = c.row == 2 ? FP8RT_SCALE_BLOCK : FP8RT_SCALE_ROW
		};
		fp8rt_status st = fp8rt_scaled_mm_ex(ctx, &ex, NULL);
		if (st == FP8RT_UNSUPPORTED) /* what the installed cuBLASLt says, visibly */
			cr_skip("%s scales: %s", c.row == 2 ? "block-wise" : "row-wise", fp8rt_last_error(ctx));
		CHECK_OK(st, ctx);
		CHECK_OK(fp8rt_scaled_mm_ex(ctx, &ex, NULL), ctx);
	} else {
		CHECK_OK(fp8rt_scaled_mm(ctx, &args, NULL), ctx);
		CHECK_OK(fp8rt_scaled_mm(ctx, &args, NULL), ctx); /* again: the prepared GEMM from the cache */
	}
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	CHECK_OK(fp8rt_memcpy_dtoh(ctx, d, dev.d, (size_t)(c.m * ldd) * osize), ctx);

	reference(&c, lda, ldb, a, b, c.bias ? bias : NULL, ref);
	for (int64_t i = 0; i < c.m; i++) {
		for (int64_t j = 0; j < c.n; j++)
			got[i * c.n + j] = decode_out(d + (size_t)(i * ldd + j) * osize, c.dt);
		for (int64_t j = c.n; j < ldd; j++)
			cr_assert(isnan(decode_out(d + (size_t)(i * ldd + j) * osize, c.dt)),
				"padding [%lld,%lld] written", (long long)i, (long long)j);
	}
	char what[160];
	snprintf(what, sizeof what, "scaled_mm %lldx%lldx%lld %s x %s -> %s bias=%d fast_accum=%d pad=%d row=%d",
		(long long)c.m, (long long)c.n, (long long)c.k, fp8rt_dtype_name(c.at), fp8rt_dtype_name(c.bt),
		fp8rt_dtype_name(c.dt), c.bias, c.fast, c.pad, c.row);
	double err = rel_frobenius(ref, got, (size_t)(c.m * c.n), (int)c.n, 2e-2, what);
	cr_assert(err < 1e-2, "%s: relative Frobenius error %.3g", what, err);
	cr_log_info("%s: relative Frobenius error %.3g", what, err);

	fp8rt_free(ctx, dev.a), fp8rt_free(ctx, dev.b), fp8rt_free(ctx, dev.d), fp8rt_free(ctx, dev.bias);
	fp8rt_free(ctx, dev.scales);
	free(a), free(b), free(d), free(bias16), free(bias), free(ref), free(got), free(scales);
}

static const int64_t shapes[][3] = { { 16, 32, 64 }, { 16, 64, 32 }, { 128, 256, 512 }, { 1000, 1024, 2048 } };
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

Test(scaled_mm, e4m3_e4m3_to_bf16, .timeout = 300)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	for (int s = 0; s < NSHAPES; s++) {
		MmCase c = { shapes[s][0], shapes[s][1], shapes[s][2], FP8RT_F8E4M3FN, FP8RT_F8E4M3FN, FP8RT_BF16, 0, 0,
			0, 0 };
		check_mm(ctx, c);
		c.bias = 1, c.fast = 1;
		check_mm(ctx, c);
	}
	fp8rt_context_destroy(ctx);
}

Test(scaled_mm, e4m3_e5m2_to_f32, .timeout = 300)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	for (int s = 0; s < NSHAPES; s++) {
		MmCase c = { shapes[s][0], shapes[s][1], shapes[s][2], FP8RT_F8E4M3FN, FP8RT_F8E5M2, FP8RT_F32, 1, 0, 0,
			0 };
		check_mm(ctx, c);
		c.bias = 0, c.fast = 1;
		check_mm(ctx, c);
	}
	fp8rt_context_destroy(ctx);
}

Test(scaled_mm, e5m2_e4m3_to_f16_with_bias)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	check_mm(ctx, (MmCase){ 128, 256, 512, FP8RT_F8E5M2, FP8RT_F8E4M3FN, FP8RT_F16, 1, 0, 0, 0 });
	check_mm(ctx, (MmCase){ 1000, 64, 128, FP8RT_F8E5M2, FP8RT_F8E4M3FN, FP8RT_F16, 1, 1, 0, 0 });
	fp8rt_context_destroy(ctx);
}

Test(scaled_mm, padded_leading_dims)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	check_mm(ctx, (MmCase){ 100, 128, 256, FP8RT_F8E4M3FN, FP8RT_F8E4M3FN, FP8RT_BF16, 1, 0, 1, 0 });
	check_mm(ctx, (MmCase){ 33, 48, 64, FP8RT_F8E4M3FN, FP8RT_F8E5M2, FP8RT_F32, 0, 1, 1, 0 });
	fp8rt_context_destroy(ctx);
}

/* DeepSeek-V3's blocks: 1x128 on a, 128x128 on b; k a multiple of 128 (kb
 * = 1 and 3: a scale_b column padded to 4), m a multiple of 4, n not one of
 * 128; bf16 and f32 results, bias, padded leading dims, e4m3 x e5m2 */
Test(scaled_mm, block_wise_scales, .timeout = 300)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	static const int64_t bs[][3] = { { 16, 32, 128 }, { 128, 256, 512 }, { 1000, 1024, 384 }, { 512, 1024, 2048 } };
	for (int s = 0; s < 4; s++) {
		MmCase c = { bs[s][0], bs[s][1], bs[s][2], FP8RT_F8E4M3FN, FP8RT_F8E4M3FN, FP8RT_BF16, 0, 0, 0, 2 };
		check_mm(ctx, c);
		c.bias = 1, c.dt = FP8RT_F32;
		check_mm(ctx, c);
	}
	check_mm(ctx, (MmCase){ 100, 128, 256, FP8RT_F8E4M3FN, FP8RT_F8E5M2, FP8RT_BF16, 1, 0, 1, 2 });
	fp8rt_context_destroy(ctx);
}

Test(scaled_mm, row_wise_scales, .timeout = 300)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	for (int s = 0; s < NSHAPES; s++) {
		MmCase c = { shapes[s][0], shapes[s][1], shapes[s][2], FP8RT_F8E4M3FN, FP8RT_F8E4M3FN, FP8RT_BF16, 0, 0,
			0, 1 };
		check_mm(ctx, c);
		c.fast = 1, c.dt = FP8RT_F32;
		check_mm(ctx, c);
	}
	check_mm(ctx, (MmCase){ 100, 128, 256, FP8RT_F8E4M3FN, FP8RT_F8E5M2, FP8RT_BF16, 1, 0, 1, 1 });
	fp8rt_context_destroy(ctx);
}

/* ---- argument checks ------------------------------------------------------- */

Test(scaled_mm, rejects_bad_arguments)
{
	fp8rt_context *ctx;
	GPU_CONTEXT(ctx);
	void *buf = NULL;
	CHECK_OK(fp8rt_malloc(ctx, 1 << 20, &buf), ctx);
	char *base = buf;
	const fp8rt_scaled_mm_args ok = {
		.m = 32,
		.n = 32,
		.k = 32,
		.a = base,
		.a_dtype = FP8RT_F8E4M3FN,
		.b = base + 4096,
		.b_dtype = FP8RT_F8E4M3FN,
		.scale_a = (const float *)(base + 8192),
		.scale_b = (const float *)(base + 8192 + 16),
		.d = base + 16384,
		.d_dtype = FP8RT_BF16,
	};
	fp8rt_scaled_mm_args a;

	a = ok, a.a = base + 1;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "a (0x");
	cr_assert(strstr(fp8rt_last_error(ctx), "is not 16-byte aligned"), "%s", fp8rt_last_error(ctx));
	a = ok, a.d = base + 16384 + 8;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "d (0x");
	a = ok, a.k = 24;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "k=24 is not a multiple of 16");
	a = ok, a.n = 40;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "n=40 is not a multiple of 16");
	a = ok, a.a_dtype = FP8RT_F8E5M2, a.b_dtype = FP8RT_F8E5M2;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_UNSUPPORTED, ctx, "f8e5m2 x f8e5m2 is not supported");
	a = ok, a.a_dtype = FP8RT_BF16;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "must be f8e4m3fn or f8e5m2");
	a = ok, a.d_dtype = FP8RT_F8E4M3FN;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_UNSUPPORTED, ctx, "output dtype f8e4m3fn is not supported");
	a = ok, a.bias = base + 32768, a.bias_dtype = FP8RT_F32;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "cuBLASLt FP8 wants a bf16 bias");
	a = ok, a.d_dtype = FP8RT_F16, a.bias = base + 32768, a.bias_dtype = FP8RT_BF16;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "wants a f16 bias");
	a = ok, a.scale_a = NULL;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "scale_a is NULL");
	a = ok, a.lda = 16;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "lda=16 is less than 32");
	a = ok, a.ldb = 40;
	ASSERT_FAILS(
		fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "ldb=40: rows must start 16-byte aligned");
	a = ok, a.k = 8;
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, &a, NULL), FP8RT_INVALID_ARGUMENT, ctx, "out of range");
	ASSERT_FAILS(fp8rt_scaled_mm(ctx, NULL, NULL), FP8RT_INVALID_ARGUMENT, ctx, "args is NULL");
	/* nothing was enqueued, and the context still works */
	CHECK_OK(fp8rt_scaled_mm(ctx, &ok, NULL), ctx);
	CHECK_OK(fp8rt_synchronize(ctx, NULL), ctx);
	fp8rt_free(ctx, buf);
	fp8rt_context_destroy(ctx);
}
