/* tensor.c — host tensors: dense row-major buffers with a dtype, element access
 * through double or int64 with PyTorch's conversion rules, and seeded random fill. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

int64_t
tensor_numel(const Tensor *t)
{
	int64_t n = 1;

	for (int i = 0; i < t->rank; i++)
		n *= t->dims[i];
	return n;
}

size_t
tensor_bytes(const Tensor *t)
{
	return (size_t)tensor_numel(t) * (size_t)dt_size(t->dtype);
}

Tensor *
tensor_new(const char *name, DType dt, int rank, const int64_t *dims)
{
	Tensor *t;
	int64_t n = 1;

	if (rank < 0 || rank > IR_MAXRANK)
		return NULL;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0 || (dims[i] > 0 && n > (INT64_MAX >> 4) / dims[i]))
			return NULL;
		n *= dims[i];
	}
	if (!(t = calloc(1, sizeof *t)))
		return NULL;
	t->dtype = dt;
	t->rank = rank;
	if (rank)
		memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
	t->data = calloc((size_t)(n ? n : 1), (size_t)dt_size(dt));
	t->name = name ? strdup(name) : NULL;
	if (!t->data || (name && !t->name)) {
		tensor_free(t);
		return NULL;
	}
	return t;
}

void
tensor_free(Tensor *t)
{
	if (!t)
		return;
	free(t->data);
	free(t->name);
	free(t);
}

double
tensor_getf(const Tensor *t, int64_t i)
{
	const unsigned char *p = (const unsigned char *)t->data;
	uint16_t h;
	float f;
	double d;

	switch (t->dtype) {
	case DT_F32:      memcpy(&f, p + 4 * i, 4); return f;
	case DT_F64:      memcpy(&d, p + 8 * i, 8); return d;
	case DT_BF16:     memcpy(&h, p + 2 * i, 2); return bf16_to_f32(h);
	case DT_F16:      memcpy(&h, p + 2 * i, 2); return f16_to_f32(h);
	case DT_F8E4M3FN: return e4m3fn_to_f32(p[i]);
	case DT_F8E5M2:   return e5m2_to_f32(p[i]);
	default:          return (double)tensor_geti(t, i);
	}
}

int64_t
tensor_geti(const Tensor *t, int64_t i)
{
	const unsigned char *p = (const unsigned char *)t->data;
	int8_t i8;
	int16_t i16;
	int32_t i32;
	int64_t i64;

	switch (t->dtype) {
	case DT_B8:  return p[i] != 0;
	case DT_U8:  return p[i];
	case DT_I8:  memcpy(&i8, p + i, 1); return i8;
	case DT_I16: memcpy(&i16, p + 2 * i, 2); return i16;
	case DT_I32: memcpy(&i32, p + 4 * i, 4); return i32;
	case DT_I64: memcpy(&i64, p + 8 * i, 8); return i64;
	default:     return ir_float_to_int(tensor_getf(t, i), t->dtype, DT_I64);
	}
}

/* v is a value of the dtype `from`; stored with convert_element_type's rules */
static void
setf_from(Tensor *t, int64_t i, double v, DType from)
{
	unsigned char *p = (unsigned char *)t->data;
	float f = (float)v; /* every narrow float goes through f32, as c10 does */
	uint16_t h;

	switch (t->dtype) {
	case DT_F32: memcpy(p + 4 * i, &f, 4); return;
	case DT_F64: memcpy(p + 8 * i, &v, 8); return;
	case DT_BF16:
		h = f32_to_bf16(f);
		memcpy(p + 2 * i, &h, 2);
		return;
	case DT_F16:
		h = f32_to_f16(f);
		memcpy(p + 2 * i, &h, 2);
		return;
	case DT_F8E4M3FN: p[i] = f32_to_e4m3fn(f); return;
	case DT_F8E5M2:   p[i] = f32_to_e5m2(f); return;
	case DT_B8:       p[i] = v != 0; return; /* NaN is true */
	default:          tensor_seti(t, i, ir_float_to_int(v, from, t->dtype)); return;
	}
}

void
tensor_setf(Tensor *t, int64_t i, double v)
{
	setf_from(t, i, v, DT_F64);
}

void
tensor_setf_from(Tensor *t, int64_t i, double v, DType from)
{
	setf_from(t, i, v, from);
}

void
tensor_seti(Tensor *t, int64_t i, int64_t v)
{
	unsigned char *p = (unsigned char *)t->data;
	int16_t i16 = (int16_t)(uint16_t)(uint64_t)v;
	int32_t i32 = (int32_t)(uint32_t)(uint64_t)v;

	switch (t->dtype) {
	case DT_B8:  p[i] = v != 0; return;
	case DT_U8:
	case DT_I8:  p[i] = (unsigned char)(uint64_t)v; return;
	case DT_I16: memcpy(p + 2 * i, &i16, 2); return;
	case DT_I32: memcpy(p + 4 * i, &i32, 4); return;
	case DT_I64: memcpy(p + 8 * i, &v, 8); return;
	case DT_F32:
	case DT_BF16:
	case DT_F16:
	case DT_F8E4M3FN:
	case DT_F8E5M2:
		tensor_setf(t, i, (double)(float)v); /* int → f32 first, as c10 does */
		return;
	case DT_F64:   tensor_setf(t, i, (double)v); return;
	case DT_COUNT: break;
	}
	unreachable();
}

/* xorshift64*, then Box-Muller: a standard normal per element */
static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static double
rng_unit(uint64_t *s)
{
	return ((double)(rng_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

void
tensor_randn(Tensor *t, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
	int64_t n = tensor_numel(t);

	for (int64_t i = 0; i < n; i++) {
		double u = rng_unit(&s), v = rng_unit(&s);
		double z = sqrt(-2 * log(u)) * cos(6.283185307179586 * v);

		if (t->dtype == DT_B8)
			z = z > 0;
		tensor_setf(t, i, dt_isint(t->dtype) ? nearbyint(z * 8) : z);
	}
}

/* values that break careless kernels: NaN of both signs, infinities, signed
 * zeros, subnormals, the fp8 rounding and overflow boundaries, huge values */
static const double specials[] = {
	NAN,
	-NAN,
	INFINITY,
	-INFINITY,
	0.0,
	-0.0,
	1.401298464324817e-45,
	-1.401298464324817e-45,
	1e-40,
	-1e-40,
	1.1754942e-38,
	448,
	-448,
	464,
	-464,
	465,
	480,
	-480,
	57344,
	61440,
	-61440,
	65504,
	1e30,
	-1e30,
	3.4028234663852886e38,
	1.0 / 1024,
	-0.0009765625,
	0.5,
	1.5,
	-2.5,
};

void
tensor_special(Tensor *t, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
	int64_t n = tensor_numel(t);

	tensor_randn(t, seed);
	if (!dt_isfloat(t->dtype) && !dt_isfp8(t->dtype))
		return;
	for (int64_t i = 0; i < n; i++) {
		uint64_t r = rng_next(&s);

		if (r % 4 == 0)
			tensor_setf(t, i, specials[(r >> 8) % NELEM(specials)]);
		else if (r % 4 == 1)
			tensor_setf(t, i, tensor_getf(t, i) * ldexp(1.0, (int)((r >> 8) % 40) - 20));
	}
}
