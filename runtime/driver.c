/* driver.c — loads the CUDA driver at run time.
 *
 * libfp8rt does not link libcuda: it dlopens libcuda.so.1 (or the file named
 * by FP8RT_LIBCUDA) once per process, looks up every entry in RT_DRIVER_FUNCS
 * under the versioned name cuda.h gives it (and the optional ones where the
 * driver has them: cuFuncGetParamInfo, cuFuncGetParamCount), and calls
 * cuInit. A missing library, a missing entry, the toolkit's stub (cuInit
 * answers CUDA_ERROR_STUB_LIBRARY), a failed version query or a driver older
 * than 12.0 give FP8RT_NO_DRIVER; no device gives FP8RT_NO_DEVICE. The library is never
 * unloaded: the driver lives as long as the process.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

RtDriver drv;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static fp8rt_status init_status;
static char init_err[512];

#define STR_(x) #x
#define STR(x)  STR_(x)

/* Names for the errors seen before the driver can describe them itself. */
static const char *
known_error(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected";
	case CUDA_ERROR_STUB_LIBRARY:
		return "CUDA_ERROR_STUB_LIBRARY: the CUDA driver library is the toolkit's stub, not a real driver";
	case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
		return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: the driver library does not match the kernel driver";
	case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED: cuInit has not been called";
	default:                         return NULL;
	}
}

void
rt_cu_describe(CUresult r, char *buf, size_t n)
{
	const char *name = NULL, *str = NULL;
	if (drv.cuGetErrorName && drv.cuGetErrorName(r, &name) != CUDA_SUCCESS)
		name = NULL;
	if (drv.cuGetErrorString && drv.cuGetErrorString(r, &str) != CUDA_SUCCESS)
		str = NULL;
	if (name && str)
		snprintf(buf, n, "%s: %s", name, str);
	else if (known_error(r))
		snprintf(buf, n, "%s", known_error(r));
	else
		snprintf(buf, n, "CUDA error %d", (int)r);
}

static fp8rt_status
load_symbols(void *lib, const char *path)
{
#define LOAD(f)                                                                                      \
	if (!(*(void **)&drv.f = dlsym(lib, STR(f)))) {                                              \
		snprintf(init_err, sizeof init_err, "%s has no %s (driver too old?)", path, STR(f)); \
		return FP8RT_NO_DRIVER;                                                              \
	}
	RT_DRIVER_FUNCS(LOAD)
#undef LOAD
	*(void **)&drv.cuFuncGetParamInfo = dlsym(lib, "cuFuncGetParamInfo");
	*(void **)&drv.cuFuncGetParamCount = dlsym(lib, "cuFuncGetParamCount");
	return FP8RT_OK;
}

static void
init_once(void)
{
	const char *path = getenv("FP8RT_LIBCUDA");
	if (!path || !*path)
		path = "libcuda.so.1";
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		snprintf(init_err, sizeof init_err, "cannot load the CUDA driver library %s: %s", path,
			why ? why : "unknown error");
		init_status = FP8RT_NO_DRIVER;
		return;
	}
	if ((init_status = load_symbols(lib, path)) != FP8RT_OK) {
		memset(&drv, 0, sizeof drv);
		return;
	}
	CUresult r = drv.cuInit(0);
	if (r != CUDA_SUCCESS) {
		char what[256];
		rt_cu_describe(r, what, sizeof what);
		snprintf(init_err, sizeof init_err, "cuInit(0) with %s failed: %s", path, what);
		init_status = r == CUDA_ERROR_NO_DEVICE ? FP8RT_NO_DEVICE : FP8RT_NO_DRIVER;
		return;
	}
	int version = 0;
	if ((r = drv.cuDriverGetVersion(&version)) != CUDA_SUCCESS) {
		char what[256];
		rt_cu_describe(r, what, sizeof what);
		snprintf(init_err, sizeof init_err, "cuDriverGetVersion with %s failed: %s", path, what);
		init_status = FP8RT_NO_DRIVER;
	} else if (version < 12000) {
		snprintf(init_err, sizeof init_err, "the CUDA driver is version %d.%d; libfp8rt needs 12.0 or newer",
			version / 1000, version % 1000 / 10);
		init_status = FP8RT_NO_DRIVER;
	}
}

fp8rt_status
rt_driver_init(char *err, size_t errlen)
{
	pthread_once(&once, init_once);
	if (init_status != FP8RT_OK)
		snprintf(err, errlen, "%s", init_err);
	return init_status;
}
