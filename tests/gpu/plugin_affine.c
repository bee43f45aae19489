/* plugin_affine.c — an fp8run --externs library for the tests: registers
 * test.affine (y = x * scale + shift, n = the count of x), which enqueues its
 * work on the mock driver's stream as a host operation. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "fp8rt.h"

typedef struct {
	const float *x;
	float *y;
	int64_t *n, count;
	double scale, shift;
} Op;

static void
op(const void *arg)
{
	const Op *o = arg;
	for (int64_t i = 0; i < o->count; i++)
		o->y[i] = (float)(o->x[i] * o->scale + o->shift);
	*o->n = o->count;
}

static fp8rt_status
affine(void *user, const fp8rt_extern_call *c, char *err, size_t errlen)
{
	Op o = { 0 };
	(void)user;
	if (c->ninputs != 1 || c->noutputs != 2) {
		snprintf(err, errlen, "test.affine wants one tensor and two results");
		return FP8RT_INVALID_ARGUMENT;
	}
	for (int i = 0; i < c->nargs; i++) {
		if (c->args[i].key && !strcmp(c->args[i].key, "scale"))
			o.scale = c->args[i].f;
		if (c->args[i].key && !strcmp(c->args[i].key, "shift"))
			o.shift = (double)c->args[i].i;
	}
	o.x = c->inputs[0].data, o.y = c->outputs[0].data, o.n = c->outputs[1].data;
	o.count = c->inputs[0].dims[0];
	CUresult (*host)(CUstream, void (*)(const void *), const void *, size_t) =
		(CUresult (*)(CUstream, void (*)(const void *), const void *, size_t))(uintptr_t)dlsym(
			dlopen(MOCKCUDA_PATH, RTLD_NOW), "mockcuda_host_op");
	return host && host((CUstream)c->stream, op, &o, sizeof o) == CUDA_SUCCESS ? FP8RT_OK : FP8RT_CUDA_ERROR;
}

__attribute__((visibility("default"))) fp8rt_status
fp8run_register_externs(fp8rt_context *ctx)
{
	return fp8rt_register_extern(ctx, "test.affine", affine, NULL, 0);
}
