/* rt_test.h — helpers shared by the runtime tests: getting a GPU or skipping
 * visibly, exact fp8/bf16/f16 conversions for host references, a small
 * deterministic random generator, and the first-mismatch printer. */
#ifndef FP8RT_TEST_H
#define FP8RT_TEST_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fp8rt.h"

/* A context on device 0, or skip the test with the reason. */
#define GPU_CONTEXT(ctx)                                                                         \
	do {                                                                                     \
		fp8rt_status st_ = fp8rt_context_create(0, &(ctx));                              \
		if (st_ == FP8RT_NO_DRIVER || st_ == FP8RT_NO_DEVICE)                            \
			cr_skip_test("no CUDA device: %s", fp8rt_last_error(NULL));              \
		cr_assert_eq(st_, FP8RT_OK, "fp8rt_context_create: %s", fp8rt_last_error(NULL)); \
	} while (0)

/* Assert a status and that the message holds a substring. */
#define ASSERT_FAILS(call, status, ctx, substr)                                                                   \
	do {                                                                                                      \
		fp8rt_status got_ = (call);                                                                       \
		const char *msg_ = fp8rt_last_error(ctx);                                                         \
		cr_assert_eq(got_, (status), "%s: got %s, want %s; message: %s", #call, fp8rt_status_name(got_),  \
			fp8rt_status_name(status), msg_);                                                         \
		cr_assert(strstr(msg_, (substr)) != NULL, "%s: message lacks \"%s\": %s", #call, (substr), msg_); \
	} while (0)

#define CHECK_OK(call, ctx) cr_assert_eq((call), FP8RT_OK, "%s: %s", #call, fp8rt_last_error(ctx))

/* ---- numbers ------------------------------------------------------------ */

/* float8 e4m3fn / e5m2 to double, exactly */
static inline double
fp8_decode(uint8_t v, fp8rt_dtype dt)
{
	int sign = v >> 7;
	double x;
	if (dt == FP8RT_F8E4M3FN) {
		int e = (v >> 3) & 15, m = v & 7;
		if (e == 15 && m == 7)
			return NAN;
		x = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
	} else {
		int e = (v >> 2) & 31, m = v & 3;
		if (e == 31)
			return m ? NAN : sign ? -INFINITY : INFINITY;
		x = e == 0 ? ldexp(m, -16) : ldexp(4 + m, e - 17);
	}
	return sign ? -x : x;
}

static inline double
bf16_decode(uint16_t v)
{
	uint32_t bits = (uint32_t)v << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static inline uint16_t
bf16_encode(float f)
{
	uint32_t bits;
	memcpy(&bits, &f, 4);
	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((bits >> 16) | 0x40);
	bits += 0x7fffu + ((bits >> 16) & 1);
	return (uint16_t)(bits >> 16);
}

static inline double
f16_decode(uint16_t v)
{
	int sign = v >> 15, e = (v >> 10) & 31, m = v & 1023;
	double x = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
	return sign ? -x : x;
}

/* f16 from a float that is exactly representable or close; round to nearest even */
static inline uint16_t
f16_encode(float f)
{
	uint16_t sign = f < 0 ? 0x8000 : 0;
	double a = fabs(f);
	if (a < ldexp(1, -24))
		return sign;
	int e;
	frexp(a, &e);        /* a = frac * 2^e, frac in [0.5, 1) */
	int ue = e - 1 + 15; /* biased exponent */
	if (ue <= 0)
		return (uint16_t)(sign | (uint16_t)nearbyint(ldexp(a, 24)));
	double m = nearbyint(ldexp(a, 10 - (e - 1))) - 1024; /* 10-bit mantissa */
	if (m >= 1024)
		m = 0, ue++;
	return (uint16_t)(sign | (ue << 10) | (uint16_t)m);
}

/* xorshift64*: deterministic test data */
static inline uint32_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (uint32_t)((*s * 2685821657736338717ull) >> 32);
}

/* A random finite fp8 value of magnitude about 2^-3 .. 2^4. */
static inline uint8_t
rnd_fp8(uint64_t *s, fp8rt_dtype dt)
{
	uint32_t r = rnd(s);
	uint8_t sign = (uint8_t)((r & 1) << 7);
	if (dt == FP8RT_F8E4M3FN)
		return (uint8_t)(sign | ((4 + (r >> 1) % 7) << 3) | ((r >> 8) & 7));
	return (uint8_t)(sign | ((12 + (r >> 1) % 7) << 2) | ((r >> 8) & 3));
}

/* Relative Frobenius error of got against ref; prints the first mismatches
 * (elements off by more than tol relative to the larger of |ref| and the
 * RMS of ref) as index, expected, got. */
static inline double
rel_frobenius(const double *ref, const double *got, size_t n, int cols, double tol, const char *what)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		num += (got[i] - ref[i]) * (got[i] - ref[i]);
		den += ref[i] * ref[i];
	}
	double rms = sqrt(den / (double)(n ? n : 1));
	int shown = 0;
	for (size_t i = 0; i < n && shown < 5; i++) {
		double scale = fabs(ref[i]) > rms ? fabs(ref[i]) : rms;
		if (!(fabs(got[i] - ref[i]) <= tol * scale)) {
			fprintf(stderr, "%s: mismatch at [%zu,%zu]: expected %.6g, got %.6g\n", what, i / (size_t)cols,
				i % (size_t)cols, ref[i], got[i]);
			shown++;
		}
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif /* FP8RT_TEST_H */
