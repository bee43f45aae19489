/* The C call of tests/gpu/test_python.py's cost comparison, made in the
 * Python process itself: `group` calls of fp8rt_run_function as a C
 * application makes them (fp8run --wall's host_us loop), timed by the
 * host's monotonic clock. The test takes turns, a group of Python calls
 * and a group of these, on one thread, so both sides see the same CPU at
 * the same clock: a host whose cores change speed under it (the device
 * machines' do, by up to 1.7x within a minute) otherwise decides the
 * difference. The function is passed in (the binding's own
 * libfp8rt's fp8rt_run_function), so this module links nothing. */
#include <time.h>

#include "fp8rt.h"

typedef fp8rt_status (*RunFn)(
	fp8rt_program *, int, fp8rt_state *, const fp8rt_tensor *, int, const fp8rt_tensor *, int, void *);

/* microseconds of `group` calls, or -1 at the first that fails */
double
fp8rt_host_loop(RunFn run, fp8rt_program *prog, int f, const fp8rt_tensor *in, int nin, const fp8rt_tensor *out,
	int nout, void *stream, int group)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < group; i++)
		if (run(prog, f, NULL, in, nin, out, nout, stream) != FP8RT_OK)
			return -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
}
