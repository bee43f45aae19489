/* test_numeric.c — the float32 <-> e4m3fn / e5m2 / bfloat16 / float16
 * conversions of ir/numeric.c against references written here from the format
 * definitions alone: a decoder built on ldexp, and an encoder that searches
 * the sorted list of a format's finite values for the nearest one (ties to the
 * even code) with PyTorch's overflow and NaN rules. Inputs: every code, every
 * midpoint between neighbouring values and one float ulp either side, special
 * values, and millions of fixed-seed random floats. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "ir.h"

#define NRANDOM 2000000 /* random inputs per kind (raw bits, near range) */
#define NSHOW   5       /* mismatches printed per test */

typedef struct {
	const char *name;
	int ebits, mbits;     /* exponent and mantissa widths; sign is 1 bit */
	bool fn;              /* e4m3fn style: no inf, all-ones code is NaN */
	uint32_t nan;         /* what a NaN input encodes to (positive) */
	bool nan_signed;      /* NaN keeps its sign (not so for bf16 in c10) */
	int fexp_lo, fexp_hi; /* biased float32 exponents "near the range" */
	uint32_t (*enc)(float);
	float (*dec)(uint32_t);
} Fmt;

static uint32_t
enc_e4m3fn(float x)
{
	return f32_to_e4m3fn(x);
}
static uint32_t
enc_e5m2(float x)
{
	return f32_to_e5m2(x);
}
static uint32_t
enc_bf16(float x)
{
	return f32_to_bf16(x);
}
static uint32_t
enc_f16(float x)
{
	return f32_to_f16(x);
}
static float
dec_e4m3fn(uint32_t b)
{
	return e4m3fn_to_f32((uint8_t)b);
}
static float
dec_e5m2(uint32_t b)
{
	return e5m2_to_f32((uint8_t)b);
}
static float
dec_bf16(uint32_t b)
{
	return bf16_to_f32((uint16_t)b);
}
static float
dec_f16(uint32_t b)
{
	return f16_to_f32((uint16_t)b);
}

static const Fmt E4M3FN = { "e4m3fn", 4, 3, true, 0x7F, true, 115, 137, enc_e4m3fn, dec_e4m3fn };
static const Fmt E5M2 = { "e5m2", 5, 2, false, 0x7F, true, 108, 144, enc_e5m2, dec_e5m2 };
static const Fmt BF16 = { "bf16", 8, 7, false, 0x7FC0, false, 0, 12, enc_bf16, dec_bf16 };
static const Fmt F16 = { "f16", 5, 10, false, 0x7E00, true, 100, 144, enc_f16, dec_f16 };

static int
fmt_bits(const Fmt *f)
{
	return 1 + f->ebits + f->mbits;
}
static uint32_t
sign_bit(const Fmt *f)
{
	return UINT32_C(1) << (f->ebits + f->mbits);
}
static int
hexw(const Fmt *f)
{
	return fmt_bits(f) / 4;
}

/* The value a positive code would have if it were a finite number:
 * exponent 0 is subnormal m * 2^(1-bias-mbits), else (2^mbits + m) *
 * 2^(e-bias-mbits). Exact in a double for all four formats. */
static double
code_value(const Fmt *f, uint32_t c)
{
	int bias = (1 << (f->ebits - 1)) - 1;
	uint32_t e = (c >> f->mbits) & ((UINT32_C(1) << f->ebits) - 1);
	uint32_t m = c & ((UINT32_C(1) << f->mbits) - 1);

	if (e == 0)
		return ldexp((double)m, 1 - bias - f->mbits);
	return ldexp((double)((UINT32_C(1) << f->mbits) + m), (int)e - bias - f->mbits);
}

/* Reference decoder from the format definition. fn formats: only all-ones
 * exponent and mantissa is NaN, no inf. IEEE formats: all-ones exponent is
 * inf (mantissa 0) or NaN. */
static double
ref_decode(const Fmt *f, uint32_t c)
{
	uint32_t mag = c & (sign_bit(f) - 1);
	uint32_t emax = (UINT32_C(1) << f->ebits) - 1, mmax = (UINT32_C(1) << f->mbits) - 1;
	uint32_t e = mag >> f->mbits, m = mag & mmax;
	double s = (c & sign_bit(f)) ? -1.0 : 1.0, v;

	if (f->fn && e == emax && m == mmax)
		v = NAN;
	else if (!f->fn && e == emax)
		v = m ? NAN : INFINITY;
	else
		v = code_value(f, mag);
	return copysign(v, s);
}

/* Codes 0 .. top-1 are the finite non-negative values in increasing order;
 * code top is the first one past them, and the table gives it the value its
 * bits would have if it were finite: 480 for e4m3fn (code 0x7F, NaN),
 * 2^(emax+1) for the IEEE formats (the inf code). A value at or past the
 * midpoint below it rounds to that code like to any other neighbour, which
 * is exactly PyTorch's overflow rule: e4m3fn |x| > 464 -> NaN (464 ties to
 * even 448), e5m2 |x| >= 61440 -> inf, f16 |x| >= 65520 -> inf. */
typedef struct {
	const Fmt *f;
	uint32_t top;
	double *v; /* v[0..top] */
} Table;

static Table
table_make(const Fmt *f)
{
	Table t = { f, 0, NULL };

	t.top = f->fn ? sign_bit(f) - 1 : (((UINT32_C(1) << f->ebits) - 1) << f->mbits);
	t.v = malloc((t.top + 1) * sizeof *t.v);
	cr_assert_not_null(t.v);
	for (uint32_t c = 0; c <= t.top; c++) {
		t.v[c] = code_value(f, c);
		cr_assert(c == 0 || t.v[c] > t.v[c - 1], "%s: table not increasing at 0x%x", f->name, c);
	}
	return t;
}

/* Reference encoder: nearest table value to |x|, ties to the even code
 * (= even mantissa), at or beyond v[top] -> top; sign put back; NaN -> the
 * format's NaN code, signed or not as c10 does it. Comparing 2|x| with the
 * sum of the neighbours is exact in double. */
static uint32_t
ref_encode(const Table *t, float x)
{
	const Fmt *f = t->f;
	uint32_t s = signbit(x) ? sign_bit(f) : 0, lo = 0, hi = t->top, c;
	double a = fabs((double)x);

	if (isnan(x))
		return f->nan | (f->nan_signed ? s : 0);
	if (a >= t->v[t->top])
		return t->top | s;
	while (hi - lo > 1) { /* invariant v[lo] <= a < v[hi] */
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->v[mid] <= a)
			lo = mid;
		else
			hi = mid;
	}
	if (2 * a < t->v[lo] + t->v[hi])
		c = lo;
	else if (2 * a > t->v[lo] + t->v[hi])
		c = hi;
	else
		c = (lo & 1) ? hi : lo;
	return c | s;
}

/* Counts encodings that differ from the reference, printing the first few. */
typedef struct {
	const Table *t;
	long n, bad;
} Check;

static void
check(Check *k, float x)
{
	const Fmt *f = k->t->f;
	uint32_t want = ref_encode(k->t, x), got = f->enc(x);

	k->n++;
	if (got != want && k->bad++ < NSHOW)
		cr_log_error("%s: x = %a (bits 0x%08x): want 0x%0*x, got 0x%0*x", f->name, (double)x, f32_bits(x),
			hexw(f), want, hexw(f), got);
}

static void
check_both(Check *k, float x)
{
	check(k, x);
	check(k, -x);
}

static void
check_done(Check *k, const char *what)
{
	cr_assert_eq(
		k->bad, 0, "%s %s: %ld of %ld encodings differ from the reference", k->t->f->name, what, k->bad, k->n);
}

/* Every code: decodes to the reference value (NaN: a NaN with the code's
 * sign), and encodes back to itself (NaN codes: to the format's NaN code). */
static void
all_codes(const Fmt *f)
{
	long bad = 0;

	for (uint32_t c = 0; c < (UINT32_C(1) << fmt_bits(f)); c++) {
		double want = ref_decode(f, c);
		float got = f->dec(c);
		uint32_t s = (c & sign_bit(f)) ? sign_bit(f) : 0;
		uint32_t back = f->enc(got), wback = isnan(want) ? f->nan | (f->nan_signed ? s : 0) : c;
		bool ok = isnan(want) ? isnan(got) && !signbit(got) == !s
				      : (double)(float)want == want && f32_bits(got) == f32_bits((float)want);

		if ((!ok || back != wback) && bad++ < NSHOW)
			cr_log_error(
				"%s code 0x%0*x: decode want %a got %a (bits 0x%08x); encode back want 0x%0*x got 0x%0*x",
				f->name, hexw(f), c, want, (double)got, f32_bits(got), hexw(f), wback, hexw(f), back);
	}
	cr_assert_eq(bad, 0, "%s: %ld codes decode or round-trip wrong", f->name, bad);
}

/* Each finite value, the midpoints between neighbours (including the one
 * below the overflow code), the floats one ulp either side of each, and
 * values up to 8 times the overflow code's. */
static void
midpoints(const Fmt *f)
{
	Table t = table_make(f);
	Check k = { &t, 0, 0 };

	for (uint32_t c = 0; c < t.top; c++) {
		double mid = (t.v[c] + t.v[c + 1]) / 2;
		float m = (float)mid;

		cr_assert((double)m == mid, "%s: midpoint %a not a float", f->name, mid);
		check_both(&k, (float)t.v[c]);
		check_both(&k, nextafterf((float)t.v[c], INFINITY));
		check_both(&k, nextafterf((float)t.v[c], 0));
		check_both(&k, m);
		check_both(&k, nextafterf(m, INFINITY));
		check_both(&k, nextafterf(m, 0));
	}
	for (int i = 0; i <= 448; i++) /* past the overflow code */
		check_both(&k, (float)(t.v[t.top] * (64 + i) / 64));
	check_both(&k, nextafterf((float)t.v[t.top], INFINITY));
	check_done(&k, "midpoints");
	free(t.v);
}

/* Zeros, infinities, NaNs of both signs and several payloads, float32
 * subnormals and extremes. */
static void
specials(const Fmt *f)
{
	static const uint32_t bits[] = {
		0x00000000,
		0x00000001,
		0x00000002,
		0x007FFFFF,
		0x00800000,
		0x00400000,
		0x7F7FFFFF,
		0x7F800000,
		0x7F800001,
		0x7FC00000,
		0x7FFFFFFF,
		0x7FA00000,
		0x3F800000,
		0x33800000,
		0x34000000,
		0x3A800000,
		0x3B000000,
	};
	Table t = table_make(f);
	Check k = { &t, 0, 0 };

	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
		check(&k, bits_f32(bits[i]));
		check(&k, bits_f32(bits[i] | UINT32_C(0x80000000)));
	}
	check_done(&k, "specials");
	free(t.v);
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random floats: raw 32-bit patterns (every exponent, NaNs included), and
 * patterns with a biased float exponent in [fexp_lo, fexp_hi], around the
 * format's range, subnormals and overflow. */
static void
random_floats(const Fmt *f, uint64_t seed)
{
	Table t = table_make(f);
	Check k = { &t, 0, 0 };
	uint32_t span = (uint32_t)(f->fexp_hi - f->fexp_lo + 1);

	for (long i = 0; i < NRANDOM; i++)
		check(&k, bits_f32((uint32_t)(xorshift(&seed) >> 32)));
	for (long i = 0; i < NRANDOM; i++) {
		uint64_t r = xorshift(&seed);
		uint32_t e = (uint32_t)f->fexp_lo + (uint32_t)(r >> 40) % span;
		uint32_t u = (uint32_t)(r >> 63) << 31 | e << 23 | ((uint32_t)r & UINT32_C(0x7FFFFF));
		check(&k, bits_f32(u));
	}
	check_done(&k, "random");
	free(t.v);
}

Test(numeric, e4m3fn_all_codes) { all_codes(&E4M3FN); }
Test(numeric, e5m2_all_codes) { all_codes(&E5M2); }
Test(numeric, bf16_all_codes) { all_codes(&BF16); }
Test(numeric, f16_all_codes) { all_codes(&F16); }

Test(numeric, e4m3fn_midpoints) { midpoints(&E4M3FN); }
Test(numeric, e5m2_midpoints) { midpoints(&E5M2); }
Test(numeric, bf16_midpoints) { midpoints(&BF16); }
Test(numeric, f16_midpoints) { midpoints(&F16); }

Test(numeric, e4m3fn_specials) { specials(&E4M3FN); }
Test(numeric, e5m2_specials) { specials(&E5M2); }
Test(numeric, bf16_specials) { specials(&BF16); }
Test(numeric, f16_specials) { specials(&F16); }

Test(numeric, e4m3fn_random) { random_floats(&E4M3FN, UINT64_C(0x9E3779B97F4A7C15)); }
Test(numeric, e5m2_random) { random_floats(&E5M2, UINT64_C(0xD1B54A32D192ED03)); }
Test(numeric, bf16_random) { random_floats(&BF16, UINT64_C(0x8CB92BA72F3D8DD7)); }
Test(numeric, f16_random) { random_floats(&F16, UINT64_C(0xABC98388FB8FAC03)); }

/* The rules written out as numbers, independent of the tables above. */
#define EXPECT_CODE(fn, x, want) \
	cr_expect_eq(fn(x), want, #fn "(%a) = 0x%x, want 0x%x", (double)(x), (unsigned)fn(x), (unsigned)(want))

Test(numeric, pytorch_rules)
{
	float nan = bits_f32(0x7FC00000), mnan = bits_f32(0xFFC00000);

	EXPECT_CODE(f32_to_e4m3fn, 448.0f, 0x7E);
	EXPECT_CODE(f32_to_e4m3fn, 464.0f, 0x7E);
	EXPECT_CODE(f32_to_e4m3fn, nextafterf(464.0f, INFINITY), 0x7F);
	EXPECT_CODE(f32_to_e4m3fn, -nextafterf(464.0f, INFINITY), 0xFF);
	EXPECT_CODE(f32_to_e4m3fn, 480.0f, 0x7F);
	EXPECT_CODE(f32_to_e4m3fn, 500.0f, 0x7F);
	EXPECT_CODE(f32_to_e4m3fn, 1e6f, 0x7F);
	EXPECT_CODE(f32_to_e4m3fn, INFINITY, 0x7F);
	EXPECT_CODE(f32_to_e4m3fn, -INFINITY, 0xFF);
	EXPECT_CODE(f32_to_e4m3fn, nan, 0x7F);
	EXPECT_CODE(f32_to_e4m3fn, mnan, 0xFF);
	EXPECT_CODE(f32_to_e4m3fn, -0.0f, 0x80);
	EXPECT_CODE(f32_to_e4m3fn, -1e-30f, 0x80);
	EXPECT_CODE(f32_to_e4m3fn, 0x1p-9f, 0x01);
	EXPECT_CODE(f32_to_e4m3fn, 0x1p-10f, 0x00);
	EXPECT_CODE(f32_to_e4m3fn, 0x3p-10f, 0x02);
	EXPECT_CODE(f32_to_e4m3fn, 0x1.1p0f, 0x38); /* 1.0625: tie, to even 1.0 */
	EXPECT_CODE(f32_to_e4m3fn, 0x1.3p0f, 0x3A); /* 1.1875: tie, to even 1.25 */

	EXPECT_CODE(f32_to_e5m2, 57344.0f, 0x7B);
	EXPECT_CODE(f32_to_e5m2, nextafterf(61440.0f, 0), 0x7B);
	EXPECT_CODE(f32_to_e5m2, 61440.0f, 0x7C);
	EXPECT_CODE(f32_to_e5m2, -61440.0f, 0xFC);
	EXPECT_CODE(f32_to_e5m2, 65536.0f, 0x7C);
	EXPECT_CODE(f32_to_e5m2, INFINITY, 0x7C);
	EXPECT_CODE(f32_to_e5m2, -INFINITY, 0xFC);
	EXPECT_CODE(f32_to_e5m2, nan, 0x7F);
	EXPECT_CODE(f32_to_e5m2, mnan, 0xFF);
	EXPECT_CODE(f32_to_e5m2, -0.0f, 0x80);
	EXPECT_CODE(f32_to_e5m2, 0x1p-16f, 0x01);
	EXPECT_CODE(f32_to_e5m2, 0x1p-17f, 0x00);

	EXPECT_CODE(f32_to_bf16, nan, 0x7FC0);
	EXPECT_CODE(f32_to_bf16, mnan, 0x7FC0); /* c10 drops the sign */
	EXPECT_CODE(f32_to_bf16, bits_f32(0x7F800001), 0x7FC0);
	EXPECT_CODE(f32_to_bf16, INFINITY, 0x7F80);
	EXPECT_CODE(f32_to_bf16, -INFINITY, 0xFF80);
	EXPECT_CODE(f32_to_bf16, bits_f32(0x7F7FFFFF), 0x7F80);
	EXPECT_CODE(f32_to_bf16, bits_f32(0x7F7F7FFF), 0x7F7F);
	EXPECT_CODE(f32_to_bf16, bits_f32(0x3F808000), 0x3F80); /* tie, even */
	EXPECT_CODE(f32_to_bf16, bits_f32(0x3F818000), 0x3F82); /* tie, even */
	EXPECT_CODE(f32_to_bf16, -0.0f, 0x8000);

	EXPECT_CODE(f32_to_f16, 65504.0f, 0x7BFF);
	EXPECT_CODE(f32_to_f16, 65519.99f, 0x7BFF);
	EXPECT_CODE(f32_to_f16, 65520.0f, 0x7C00);
	EXPECT_CODE(f32_to_f16, -65520.0f, 0xFC00);
	EXPECT_CODE(f32_to_f16, INFINITY, 0x7C00);
	EXPECT_CODE(f32_to_f16, nan, 0x7E00);
	EXPECT_CODE(f32_to_f16, mnan, 0xFE00);
	EXPECT_CODE(f32_to_f16, 0x1p-24f, 0x0001);
	EXPECT_CODE(f32_to_f16, 0x1p-25f, 0x0000);
	EXPECT_CODE(f32_to_f16, 0x3p-25f, 0x0002);
	EXPECT_CODE(f32_to_f16, -0.0f, 0x8000);

	cr_expect_eq(e4m3fn_to_f32(0x7E), 448.0f);
	cr_expect_eq(e4m3fn_to_f32(0x01), 0x1p-9f);
	cr_expect_eq(e4m3fn_to_f32(0xB8), -1.0f);
	cr_expect(isnan(e4m3fn_to_f32(0x7F)) && isnan(e4m3fn_to_f32(0xFF)) && signbit(e4m3fn_to_f32(0xFF)));
	cr_expect(!isnan(e4m3fn_to_f32(0x78)) && e4m3fn_to_f32(0x78) == 256.0f);
	cr_expect_eq(e5m2_to_f32(0x7B), 57344.0f);
	cr_expect_eq(e5m2_to_f32(0x01), 0x1p-16f);
	cr_expect_eq(e5m2_to_f32(0xFC), -INFINITY);
	cr_expect(isnan(e5m2_to_f32(0x7D)) && isnan(e5m2_to_f32(0xFF)));
	cr_expect_eq(bf16_to_f32(0x0001), 0x1p-133f);
	cr_expect_eq(f16_to_f32(0x7BFF), 65504.0f);
	cr_expect_eq(f16_to_f32(0x0001), 0x1p-24f);
}
