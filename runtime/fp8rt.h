/* fp8rt.h — the public API of libfp8rt, the runtime for fp8cc programs.
 *
 * An fp8cc program is one PTX file: the fused kernels plus, at its top, the
 * plan (docs/plan.md) that says which buffers exist and which kernels, copies
 * and cuBLASLt GEMMs run in which order. libfp8rt loads such a file through
 * the CUDA Driver API and runs the plan on a stream. A program is one or
 * more functions (a training step's forward and backward); what one saves
 * for a later one lives in a state (fp8rt_state). libfp8rt also exposes the
 * GEMMs on their own: fp8rt_scaled_mm, with torch._scaled_mm's semantics, and
 * fp8rt_matmul, torch.matmul's on bf16/f16/f32/f64.
 *
 * Conventions:
 *  - Every entry returns an fp8rt_status; FP8RT_OK is 0. On failure a readable
 *    message, with the place it failed (and the CUDA / cuBLASLt error name),
 *    is kept: fp8rt_last_error(ctx) for the context, fp8rt_last_error(NULL)
 *    for the calling thread (this one also covers errors before a context
 *    exists). The library never exits and frees what it allocates on every
 *    error path.
 *  - All tensor data pointers are device pointers (CUdeviceptr values cast to
 *    void *) in the context's device; "stream" is a CUstream cast to void *,
 *    NULL meaning the legacy default stream.
 *  - A context and its programs are used by one thread at a time: while one
 *    thread is inside an entry that takes the context (or a program, state or
 *    prepared run of it), another thread's call is refused with
 *    FP8RT_INVALID_ARGUMENT, having done nothing, its message (like any
 *    failure of its while another thread is inside) in
 *    fp8rt_last_error(NULL) only; an extern may call back on its own thread,
 *    but not run its own program again or destroy, set a workspace or turn
 *    graphs off on the context (each refused with FP8RT_INVALID_ARGUMENT).
 *    All work of one context is assumed to be ordered: the GEMMs of a context
 *    share one cuBLASLt workspace, and a program's intermediates live in one
 *    workspace, so do not run work of one context concurrently on two
 *    streams — use one context per concurrent stream (libfp8rt cannot see
 *    the streams' order, so this one is not checked).
 */
#ifndef FP8RT_H
#define FP8RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FP8RT_API __attribute__((visibility("default")))
#else
#define FP8RT_API
#endif

/* The version of this header; fp8rt_version() is the library's. The
 * library's SONAME is libfp8rt.so.MAJOR: within one MAJOR version entries
 * are only added, never changed (runtime/README.md, "ABI"). */
#define FP8RT_VERSION_MAJOR 0
#define FP8RT_VERSION_MINOR 11
#define FP8RT_VERSION_PATCH 0
#define FP8RT_VERSION       (FP8RT_VERSION_MAJOR * 10000 + FP8RT_VERSION_MINOR * 100 + FP8RT_VERSION_PATCH)

#define FP8RT_MAX_RANK 8

typedef enum fp8rt_status {
	FP8RT_OK = 0,
	FP8RT_INVALID_ARGUMENT, /* a caller's argument is wrong: null, dtype, shape, strides, alignment */
	FP8RT_NO_DEVICE,        /* driver present but no such CUDA device */
	FP8RT_NO_DRIVER,        /* libcuda.so.1 missing, or only the toolkit's stub, or too old */
	FP8RT_CUDA_ERROR,       /* a CUDA Driver API call failed */
	FP8RT_CUBLAS_ERROR,     /* a cuBLASLt call failed */
	FP8RT_BAD_PROGRAM,      /* not an fp8cc PTX, bad plan, PTX that does not JIT, missing kernel */
	FP8RT_UNSUPPORTED,      /* valid, but not on this device / library (e.g. e5m2 x e5m2 GEMM) */
	FP8RT_OUT_OF_MEMORY,    /* host or device allocation failed */
	FP8RT_IO_ERROR,         /* a file could not be read */
	FP8RT_NCCL_ERROR,       /* NCCL could not be loaded, or a collective or communicator call failed */
} fp8rt_status;

/* Element types. The plan spells them b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64
 * f8e4m3fn f8e5m2 (fp8rt_dtype_name). */
typedef enum fp8rt_dtype {
	FP8RT_DTYPE_NONE = 0,
	FP8RT_BOOL,
	FP8RT_U8,
	FP8RT_I8,
	FP8RT_I16,
	FP8RT_I32,
	FP8RT_I64,
	FP8RT_F16,
	FP8RT_BF16,
	FP8RT_F32,
	FP8RT_F64,
	FP8RT_F8E4M3FN,
	FP8RT_F8E5M2,
	FP8RT_NUM_DTYPES
} fp8rt_dtype;

typedef struct fp8rt_context fp8rt_context;
typedef struct fp8rt_program fp8rt_program;
typedef struct fp8rt_state fp8rt_state;

/* A device tensor handed to fp8rt_run. Program tensors are dense row-major:
 * strides[i] (in elements) must equal dims[i+1] * strides[i+1], with
 * strides[rank-1] == 1; a dimension of size 1 may have any stride, and a
 * tensor whose strides are all 0 is taken as dense row-major (so a
 * zero-initialized struct with data, dtype, rank and dims filled in is
 * valid). data must be 16-byte aligned (kernels use 16-byte vector accesses,
 * cuBLASLt needs it); it may be NULL only for a tensor of no elements. */
typedef struct fp8rt_tensor {
	void *data; /* device pointer */
	fp8rt_dtype dtype;
	int rank; /* 0 for a scalar */
	int64_t dims[FP8RT_MAX_RANK];
	int64_t strides[FP8RT_MAX_RANK]; /* in elements */
} fp8rt_tensor;

/* The signature of one program input or output, as the plan declares it. */
typedef struct fp8rt_tensor_info {
	const char *name; /* the trace's name; valid while the program lives */
	fp8rt_dtype dtype;
	int rank;
	int64_t dims[FP8RT_MAX_RANK];
} fp8rt_tensor_info;

typedef struct fp8rt_device_props {
	char name[256];
	int cc_major, cc_minor; /* compute capability, 9.0 on H100/H200 */
	int sm_count;
	int cooperative_launch; /* 1 when cuLaunchCooperativeKernel is supported */
	size_t total_memory;    /* bytes */
} fp8rt_device_props;

/* ---- versions ------------------------------------------------------------ */

/* The library's version, MAJOR * 10000 + MINOR * 100 + PATCH: compare with
 * FP8RT_VERSION to see which library a program runs with. */
FP8RT_API int fp8rt_version(void);
/* The plan versions (docs/plan.md, "fp8cc-plan V") this library reads:
 * every V with *min <= V <= *max. Either pointer may be NULL. */
FP8RT_API void fp8rt_plan_versions(int *min, int *max);

/* ---- errors and small helpers ------------------------------------------- */

/* The message of the last failure on ctx, or with ctx == NULL the last
 * failure on the calling thread (any context, or none). "" when none. The
 * string stays valid until the next call that fails. */
FP8RT_API const char *fp8rt_last_error(const fp8rt_context *ctx);
FP8RT_API const char *fp8rt_status_name(fp8rt_status s); /* "FP8RT_BAD_PROGRAM" */
FP8RT_API const char *fp8rt_dtype_name(fp8rt_dtype dt);  /* plan spelling: "bf16"; "?" if invalid */
FP8RT_API size_t fp8rt_dtype_size(fp8rt_dtype dt);       /* bytes per element; 0 if invalid */
/* A dense row-major tensor descriptor: strides filled in from dims. */
FP8RT_API fp8rt_tensor fp8rt_tensor_dense(void *data, fp8rt_dtype dtype, int rank, const int64_t *dims);

/* ---- context ------------------------------------------------------------ */

/* Initialize the CUDA driver (loaded at run time: libcuda.so.1, or the path in
 * the environment variable FP8RT_LIBCUDA), retain device `device`'s primary
 * context. The context's cuBLASLt handle and 32 MiB workspace are made once,
 * by the first GEMM: loading a program with a gemm step, or the first
 * fp8rt_scaled_mm (which therefore must not be inside a stream capture). Returns
 * FP8RT_NO_DRIVER when there is no usable driver (also with the toolkit's
 * stub libcuda), FP8RT_NO_DEVICE when the device does not exist. *out is NULL
 * on failure; the message is in fp8rt_last_error(NULL). */
FP8RT_API fp8rt_status fp8rt_context_create(int device, fp8rt_context **out);
/* Frees the context and every program still loaded in it (their handles
 * become invalid). Waits for the context's outstanding work. NULL is a no-op. */
FP8RT_API fp8rt_status fp8rt_context_destroy(fp8rt_context *ctx);
FP8RT_API fp8rt_status fp8rt_device_properties(fp8rt_context *ctx, fp8rt_device_props *out);

/* ---- device memory (for applications and tools without their own CUDA) --
 * Copies and memset are synchronous, on the legacy default stream:
 * synchronize other streams first. */

FP8RT_API fp8rt_status fp8rt_malloc(fp8rt_context *ctx, size_t bytes, void **dptr); /* 256-byte aligned */
FP8RT_API fp8rt_status fp8rt_free(fp8rt_context *ctx, void *dptr);                  /* NULL is a no-op */
FP8RT_API fp8rt_status fp8rt_memcpy_htod(fp8rt_context *ctx, void *dst, const void *src, size_t bytes);
FP8RT_API fp8rt_status fp8rt_memcpy_dtoh(fp8rt_context *ctx, void *dst, const void *src, size_t bytes);
FP8RT_API fp8rt_status fp8rt_memset(fp8rt_context *ctx, void *dst, int byte, size_t bytes);
/* Waits for the work queued on stream (NULL: the whole context). */
FP8RT_API fp8rt_status fp8rt_synchronize(fp8rt_context *ctx, void *stream);

/* ---- programs ----------------------------------------------------------- */

/* Load an fp8cc PTX file: parse and check the plan, check its target against
 * the device, JIT the PTX (the JIT error log goes into the message on
 * failure), look up every kernel, allocate the workspace once and zero the
 * plan's `zero` buffers. Errors in the plan name the line: "fused.ptx:7: ...". */
FP8RT_API fp8rt_status fp8rt_program_load_file(fp8rt_context *ctx, const char *path, fp8rt_program **out);
/* The same from memory: `len` bytes of PTX text (need not be NUL-terminated);
 * `name` is used in messages (NULL: "<memory>"). The data is copied. */
FP8RT_API fp8rt_status fp8rt_program_load_data(
	fp8rt_context *ctx, const void *data, size_t len, const char *name, fp8rt_program **out);
/* Parse and check a program's plan without a device (for tools and tests):
 * the same checks and messages as loading, up to the point where the device
 * is needed. Messages go to fp8rt_last_error(NULL). */
FP8RT_API fp8rt_status fp8rt_program_check(const void *data, size_t len, const char *name);
/* The same checks, and a program that answers questions about itself
 * (fp8rt_program_io_count, _input, _output, _target) without a device, for
 * tools that want its signature. It belongs to no context and cannot run:
 * fp8rt_run, fp8rt_time_runs and fp8rt_program_set_graphs answer
 * FP8RT_INVALID_ARGUMENT. Free it with fp8rt_program_destroy. `name` is
 * used in messages (NULL: "<memory>"), which go to fp8rt_last_error(NULL). */
FP8RT_API fp8rt_status fp8rt_program_read(const void *data, size_t len, const char *name, fp8rt_program **out);
FP8RT_API fp8rt_status fp8rt_program_destroy(fp8rt_program *prog); /* NULL is a no-op */

/* The signature of the program's first function (its only one, for a
 * program compiled from one trace): fp8rt_function_io_count(prog, 0, ...). */
FP8RT_API fp8rt_status fp8rt_program_io_count(const fp8rt_program *prog, int *ninputs, int *noutputs);
FP8RT_API fp8rt_status fp8rt_program_input(const fp8rt_program *prog, int i, fp8rt_tensor_info *out);
FP8RT_API fp8rt_status fp8rt_program_output(const fp8rt_program *prog, int i, fp8rt_tensor_info *out);
/* The GPU architecture the plan names ("sm_90"); valid while the program
 * lives. NULL for a NULL program. */
FP8RT_API const char *fp8rt_program_target(const fp8rt_program *prog);
/* The plan version the program's file is written in (docs/plan.md); 0 for
 * a NULL program. A version 1 plan names no function: libfp8rt calls its
 * one function "main". */
FP8RT_API int fp8rt_program_plan_version(const fp8rt_program *prog);

/* CUDA-graph replay, on by default. When on, the first run with a given set of
 * input/output pointers captures the whole plan into a CUDA graph, and later
 * runs with the same pointers replay it with one cuGraphLaunch (a few pointer
 * sets are kept, least recently used one replaced). When the caller's stream
 * is itself being captured, the plan is enqueued step by step into the
 * caller's capture instead. Turning it off frees the kept graphs. */
FP8RT_API fp8rt_status fp8rt_program_set_graphs(fp8rt_program *prog, int enable);

/* Run the program's first function with the default state:
 * fp8rt_run_function(prog, 0, NULL, ...). */
FP8RT_API fp8rt_status fp8rt_run(fp8rt_program *prog, const fp8rt_tensor *inputs, int ninputs,
	const fp8rt_tensor *outputs, int noutputs, void *stream);

/* fp8rt_time_function(prog, 0, NULL, ...) */
FP8RT_API fp8rt_status fp8rt_time_runs(fp8rt_program *prog, const fp8rt_tensor *inputs, int ninputs,
	const fp8rt_tensor *outputs, int noutputs, void *stream, int warmup, int iters, float *us);

/* ---- functions and state ---------------------------------------------------
 * A program compiled from a forward and a backward trace has two functions,
 * "forward" and "backward", in that order. What the forward saves for the
 * backward (Thunder's saved_for_backward) is not an output the caller
 * handles: it is a state slot, written by the function that saves it and read
 * by the later ones, kept in an fp8rt_state on the device. A program with
 * state slots has a default state; fp8rt_state_create makes more, one per
 * step in flight (micro-batches of gradient accumulation, pipeline stages).
 * Running a function that reads a slot no call has written into that state
 * is an error (FP8RT_INVALID_ARGUMENT naming the slot and its function).
 * Functions are numbered from 0 in the plan's order. */

FP8RT_API int fp8rt_program_function_count(const fp8rt_program *prog); /* 0 for NULL */
/* "forward"; NULL when f is out of range. Valid while the program lives. */
FP8RT_API const char *fp8rt_program_function_name(const fp8rt_program *prog, int f);
/* The externs the program calls (fp8rt_register_extern), each once, in the
 * order of their first call: what the application registers before it
 * loads the program (a program from fp8rt_program_read has them too). The
 * name is NULL when i is out of range; valid while the program lives. */
FP8RT_API int fp8rt_program_extern_count(const fp8rt_program *prog); /* 0 for NULL */
FP8RT_API const char *fp8rt_program_extern_name(const fp8rt_program *prog, int i);
/* The number of the function called `name`; FP8RT_INVALID_ARGUMENT if none. */
FP8RT_API fp8rt_status fp8rt_program_find_function(const fp8rt_program *prog, const char *name, int *f);
FP8RT_API fp8rt_status fp8rt_function_io_count(const fp8rt_program *prog, int f, int *ninputs, int *noutputs);
FP8RT_API fp8rt_status fp8rt_function_input(const fp8rt_program *prog, int f, int i, fp8rt_tensor_info *out);
FP8RT_API fp8rt_status fp8rt_function_output(const fp8rt_program *prog, int f, int i, fp8rt_tensor_info *out);
/* Whether output i of function f is a copy of an input: *input gets that
 * input's number, or -1. A trace that returns its inputs (Thunder's
 * augmented forward returns its flat_args) has such outputs; a caller may
 * pass the input's memory as the output, and the copy, onto itself, is then
 * skipped (the function writes that output nowhere else). */
FP8RT_API fp8rt_status fp8rt_function_output_source(const fp8rt_program *prog, int f, int i, int *input);
/* Whether output i of function f holds the new values of an input that the
 * trace updates in place (a copy_ into it; batch_norm's running statistics):
 * *input gets that input's number, or -1; *inplace (may be NULL) whether the
 * caller may pass that input's memory as this output, so that the run
 * updates the input itself (the plan's inplace=1: the program reads the
 * input nowhere after writing there). Outputs share memory with nothing
 * else: a run given an output that overlaps an input or another output,
 * but for these two cases with exactly the input's memory, fails with
 * FP8RT_INVALID_ARGUMENT. */
FP8RT_API fp8rt_status fp8rt_function_output_updates(const fp8rt_program *prog, int f, int i, int *input, int *inplace);

FP8RT_API int fp8rt_program_state_count(const fp8rt_program *prog); /* 0 for NULL */
/* State slot i: its name (the trace's), type, and the function that writes
 * it (from may be NULL). */
FP8RT_API fp8rt_status fp8rt_program_state_info(const fp8rt_program *prog, int i, fp8rt_tensor_info *out, int *from);

/* A new state for prog: every slot zeroed and unwritten. States belong to
 * their program and are freed with it; fp8rt_state_destroy frees one before
 * (after the work that uses it is done). */
FP8RT_API fp8rt_status fp8rt_state_create(fp8rt_program *prog, fp8rt_state **out);
FP8RT_API fp8rt_status fp8rt_state_destroy(fp8rt_state *state); /* NULL is a no-op */
/* The program's default state (NULL for a program without state slots). */
FP8RT_API fp8rt_state *fp8rt_program_default_state(fp8rt_program *prog);
/* Slot i of a state as a device tensor (dense row-major), to read or set it
 * (checkpointing, debugging). Setting a slot by hand does not mark it
 * written; fp8rt_state_mark_written does. */
FP8RT_API fp8rt_status fp8rt_state_tensor(const fp8rt_state *state, int i, fp8rt_tensor *out);
FP8RT_API fp8rt_status fp8rt_state_mark_written(fp8rt_state *state, int i);

/* Run function f on `stream` with `state` (NULL: the default state):
 * inputs[i] / outputs[i] match the function's signature
 * (fp8rt_function_input / _output) in count, dtype, rank and dims, dense
 * row-major. Everything is checked before anything is enqueued. The call is
 * asynchronous: results are ready after the stream is synchronized; the
 * slots it writes count as written once it is enqueued. */
FP8RT_API fp8rt_status fp8rt_run_function(fp8rt_program *prog, int f, fp8rt_state *state, const fp8rt_tensor *inputs,
	int ninputs, const fp8rt_tensor *outputs, int noutputs, void *stream);

/* A prepared run of function f with the default state: the tensors are the
 * function's signature (dense row-major), so a run sets only the stream and
 * the pointers, in the prepared run's slots — the quickest way in for a
 * binding that has checked its arrays itself (fp8cc's Python package).
 * fp8rt_prepared_slots gives 1 + ninputs + noutputs slots: [0] the stream
 * (NULL: the legacy default stream), then each input's and each output's
 * device pointer, all NULL after fp8rt_prepare. fp8rt_prepared_run checks
 * them as fp8rt_run_function does and runs. A prepared run belongs to its
 * program and is freed with it; fp8rt_prepared_destroy frees one before. */
typedef struct fp8rt_prepared fp8rt_prepared;
FP8RT_API fp8rt_status fp8rt_prepare(fp8rt_program *prog, int f, fp8rt_prepared **out);
FP8RT_API void **fp8rt_prepared_slots(fp8rt_prepared *run); /* NULL for NULL */
FP8RT_API fp8rt_status fp8rt_prepared_run(fp8rt_prepared *run);
FP8RT_API fp8rt_status fp8rt_prepared_destroy(fp8rt_prepared *run); /* NULL is a no-op */

/* Function f's workspace: the device memory its intermediates live in,
 * one allocation the library makes at load. An application with its own
 * allocator (torch's caching allocator) can give it instead:
 * fp8rt_function_workspace says how many bytes f needs (0: none; it also
 * answers for a program read without a device), and
 * fp8rt_function_set_workspace makes f use `bytes` at dptr (at least that
 * many, 256-byte aligned, in the context's device), freeing the library's
 * own. It waits for the context's work, zeroes what the plan keeps zeroed
 * there (synchronously), and drops f's kept CUDA graphs. The memory stays
 * the caller's: it must outlive every run of f until the program is
 * destroyed or the workspace set again, and nothing else may use it while
 * f runs. dptr NULL gives f a library-allocated
 * workspace again. */
FP8RT_API fp8rt_status fp8rt_function_workspace(const fp8rt_program *prog, int f, size_t *bytes);
FP8RT_API fp8rt_status fp8rt_function_set_workspace(fp8rt_program *prog, int f, void *dptr, size_t bytes);

/* Time `iters` runs of function f (after `warmup` untimed ones) with CUDA
 * events, one event pair around each run, and synchronize; us[i] gets run
 * i's time in microseconds. */
FP8RT_API fp8rt_status fp8rt_time_function(fp8rt_program *prog, int f, fp8rt_state *state, const fp8rt_tensor *inputs,
	int ninputs, const fp8rt_tensor *outputs, int noutputs, void *stream, int warmup, int iters, float *us);

/* ---- the FP8 GEMM -------------------------------------------------------- */

/* D (m,n) = (A · B) · scale_a · scale_b (+ bias), accumulated in f32 — the
 * semantics of torch._scaled_mm and of the plan's `gemm` line:
 *   a:  (m,k) row-major, row stride lda elements (0: k)            f8e4m3fn or f8e5m2
 *   b:  (k,n) column-major, i.e. (n,k) row-major with K contiguous,
 *       column stride ldb elements (0: k) — torch's b = w.t() for a
 *       row-major weight w of shape (n,k)                           f8e4m3fn or f8e5m2
 *   scale_a, scale_b: device f32 scalars (the dequantization scales, 1/s)
 *   bias: NULL, or a device vector of n: bf16 for bf16 and f32 outputs,
 *       f16 for f16 outputs (cuBLASLt's FP8 rule); bias_dtype may be left
 *       FP8RT_DTYPE_NONE to mean that type
 *   d:  (m,n) row-major, row stride ldd elements (0: n)            bf16, f16 or f32
 *   fast_accum: 1 for Hopper's faster, less precise FP8 accumulation
 * a, b, d and bias must be 16-byte aligned; k, n, lda, ldb multiples of 16,
 * ldd * sizeof(d element) a multiple of 16; m is free. e5m2 x e5m2 is
 * FP8RT_UNSUPPORTED. Needs compute capability 8.9 or newer. Asynchronous on
 * `stream`. */
typedef struct fp8rt_scaled_mm_args {
	int64_t m, n, k;
	const void *a;
	fp8rt_dtype a_dtype;
	int64_t lda;
	const void *b;
	fp8rt_dtype b_dtype;
	int64_t ldb;
	const float *scale_a;
	const float *scale_b;
	const void *bias;
	fp8rt_dtype bias_dtype;
	void *d;
	fp8rt_dtype d_dtype;
	int64_t ldd;
	int fast_accum;
} fp8rt_scaled_mm_args;

FP8RT_API fp8rt_status fp8rt_scaled_mm(fp8rt_context *ctx, const fp8rt_scaled_mm_args *args, void *stream);

/* How an FP8 GEMM's scales apply (torch._scaled_mm's cuBLASLt forms). */
typedef enum fp8rt_scale_mode {
	FP8RT_SCALE_TENSOR = 0, /* scale_a, scale_b: one f32 each */
	FP8RT_SCALE_ROW,        /* scale_a: m f32, one per row of a; scale_b: n f32,
                                 one per column of b (torch's (m,1) and (1,n):
                                 torchao's row-wise recipe); D(i,j) is scaled by
                                 scale_a[i] * scale_b[j] */
	FP8RT_SCALE_BLOCK,      /* DeepSeek-V3's blocks (torch's BlockWise1x128 on
                                 a, BlockWise128x128 on b; cuBLASLt's VEC128_32F
                                 and BLK128x128_32F). With kb = k/128 and
                                 kb4 = kb rounded up to a multiple of 4: a's
                                 1x128 block (i, r) is scaled by
                                 scale_a[r*m + i] (torch's (m, kb) with strides
                                 (1, m)), b's 128x128 block (r, c) by
                                 scale_b[c*kb4 + r] (torch's (kb, ceil(n/128))
                                 with strides (1, kb4)); each block's partial
                                 sum is scaled, then summed in f32. k a multiple
                                 of 128, m of 4, no fast_accum. */
} fp8rt_scale_mode;

/* fp8rt_scaled_mm with a scale mode: `mm` as fp8rt_scaled_mm takes it;
 * `size` is sizeof(fp8rt_scaled_mm_ex_args) as the caller was built with
 * (runtime/README.md, "ABI"). Row-wise scales need cuBLASLt's outer-vector
 * scaling, block-wise its 1x128 and 128x128 block scaling, for these dtypes
 * on this device: where the installed cuBLASLt has no algorithm for it,
 * FP8RT_UNSUPPORTED, saying so. */
typedef struct fp8rt_scaled_mm_ex_args {
	size_t size;
	fp8rt_scaled_mm_args mm;
	fp8rt_scale_mode scale_mode;
} fp8rt_scaled_mm_ex_args;

FP8RT_API fp8rt_status fp8rt_scaled_mm_ex(fp8rt_context *ctx, const fp8rt_scaled_mm_ex_args *args, void *stream);

/* ---- GEMMs on float operands ---------------------------------------------- */

typedef enum fp8rt_epilogue {
	FP8RT_EPILOGUE_NONE = 0,
	FP8RT_EPILOGUE_RELU,     /* max(x, 0) */
	FP8RT_EPILOGUE_GELU,     /* GELU, tanh form (cuBLASLt's) */
	FP8RT_EPILOGUE_GELU_AUX, /* GELU, and the pre-activation op(A)·op(B) + bias written to aux (0.7) */
} fp8rt_epilogue;

/* For each of `batch` problems p:
 *   D_p (m,n) = epilogue(op(A_p) · op(B_p) + bias)
 * all of one dtype (f16, bf16, f32, f64), accumulated in f32 (f64 for f64;
 * f32 without TF32, as torch's default allow_tf32=False), row-major:
 *   a: (m,k), row stride lda (0: k); with trans_a, stored (k,m), lda (0: m)
 *   b: (k,n), row stride ldb (0: n); with trans_b, stored (n,k), ldb (0: k)
 *      — torch's F.linear(x, w) is a = x, b = w, trans_b = 1
 *   d: (m,n), row stride ldd (0: n)
 *   bias: NULL or a device vector of n, added to every row
 *   aux: with FP8RT_EPILOGUE_GELU_AUX, where the pre-activation goes, laid
 *      out as d (ldd, stride_d); NULL otherwise (a 0.6 caller's args end
 *      before it)
 *   stride_a, stride_b, stride_d: elements from problem p to p+1 (0 for a
 *      and b: the same matrix in every problem; d's must not make problems
 *      overlap)
 * Each pointer needs the alignment of its element (cuBLASLt picks its
 * algorithm for the alignment the pointers and strides have). `size` is sizeof(fp8rt_matmul_args) as the
 * caller was built with (runtime/README.md, "ABI"). Asynchronous on
 * `stream`. */
typedef struct fp8rt_matmul_args {
	size_t size;
	int64_t m, n, k, batch; /* batch 0 means 1 */
	fp8rt_dtype dtype;
	const void *a;
	int64_t lda, stride_a;
	int trans_a;
	const void *b;
	int64_t ldb, stride_b;
	int trans_b;
	const void *bias;
	void *d;
	int64_t ldd, stride_d;
	fp8rt_epilogue epilogue;
	void *aux; /* 0.7 */
} fp8rt_matmul_args;

FP8RT_API fp8rt_status fp8rt_matmul(fp8rt_context *ctx, const fp8rt_matmul_args *args, void *stream);

/* ---- externs ---------------------------------------------------------------
 * An op fp8cc does not compile (an executor's op that the trace prints
 * without subsymbols: attention, a fused loss, a user's kernel) is a `call`
 * step of the plan, which the application supplies: a function registered
 * by name on the context before the program is loaded. At run it gets the
 * call's tensors (dense row-major device tensors of the plan's types), its
 * other arguments as the trace wrote them, and the stream, and enqueues its
 * work there; it returns FP8RT_OK, or a status and a message in err.
 *
 * Loading resolves every extern the program calls: one that is not
 * registered makes the load fail with FP8RT_UNSUPPORTED naming every missing
 * one. A registration made later is for programs loaded later (a loaded
 * program keeps what it resolved). With graphs on, a function is captured
 * with its externs' work inside the graph: the extern is then called once
 * per capture (per set of pointers), not once per run, so it must only
 * enqueue work on the stream it is given, whose effect depends on nothing
 * but its tensors — as a kernel's does. An extern that cannot be captured
 * (it synchronizes, allocates, or reads host state that changes between
 * runs) is registered with FP8RT_EXTERN_NO_GRAPH, and the functions that
 * call it then run step by step. */

typedef enum fp8rt_arg_kind {
	FP8RT_ARG_TENSOR, /* inputs[i] of the call */
	FP8RT_ARG_INT,    /* i */
	FP8RT_ARG_FLOAT,  /* f (inf, -inf, nan too) */
	FP8RT_ARG_BOOL,   /* i: 0 or 1 */
	FP8RT_ARG_NONE,
	FP8RT_ARG_STRING, /* s, NUL-terminated */
	FP8RT_ARG_NAME,   /* s: a dotted name as the trace wrote it (torch.float32) */
	FP8RT_ARG_TUPLE,  /* i: how many elements; they follow it in the array */
} fp8rt_arg_kind;

/* One argument, in the trace's order; a tuple's elements follow it
 * (preorder), so args[] holds every argument at every depth. */
typedef struct fp8rt_arg {
	fp8rt_arg_kind kind;
	const char *key; /* the keyword (key=value), or NULL for a positional argument */
	int64_t i;
	double f;
	const char *s;
} fp8rt_arg;

typedef struct fp8rt_extern_call {
	const char *name;
	const fp8rt_arg *args;
	int nargs; /* entries of args, nested ones included */
	const fp8rt_tensor *inputs;
	int ninputs;
	const fp8rt_tensor *outputs; /* to write; the plan's types */
	int noutputs;
	void *stream; /* a CUstream; possibly one being captured */
	fp8rt_context *ctx;
} fp8rt_extern_call;

typedef fp8rt_status (*fp8rt_extern_fn)(void *user, const fp8rt_extern_call *call, char *err, size_t errlen);

enum { FP8RT_EXTERN_NO_GRAPH = 1 };

/* Register fn (with user, passed back) as the extern `name` for programs
 * loaded into ctx from now on; again with the same name replaces it for
 * them. flags: 0 or FP8RT_EXTERN_NO_GRAPH. */
FP8RT_API fp8rt_status fp8rt_register_extern(
	fp8rt_context *ctx, const char *name, fp8rt_extern_fn fn, void *user, unsigned flags);

/* ---- collectives (NCCL, loaded at run time: libnccl.so.2 or FP8RT_NCCL) ----
 *
 * A program whose plan has collectives (all-gather, reduce-scatter,
 * all-reduce: Thunder's FSDP and DDP) loads only into a context with a
 * communicator of as many ranks as the program was compiled for; every rank
 * runs the same program on its own shard. The collectives run on a stream
 * of the context's, beside the caller's work until their waits; with graphs
 * on, a function's graph holds them (every rank must then replay its graphs
 * in the same order, as it must run its collectives). */
#define FP8RT_NCCL_ID_BYTES 128

/* A new NCCL unique id (NCCL_UNIQUE_ID_BYTES bytes into id), made on one
 * rank and handed to every rank's fp8rt_context_init_comm. */
FP8RT_API fp8rt_status fp8rt_nccl_unique_id(fp8rt_context *ctx, void *id);
/* Make the context's communicator: rank `rank` of `nranks`, all of which
 * call this with the same id (it returns once they all have). Destroyed
 * with the context. */
FP8RT_API fp8rt_status fp8rt_context_init_comm(fp8rt_context *ctx, const void *id, int nranks, int rank);
/* Use the application's communicator (an ncclComm_t on this context's
 * device), which it destroys after the context. */
FP8RT_API fp8rt_status fp8rt_context_set_comm(fp8rt_context *ctx, void *comm);
/* The communicator's size and this context's rank in it. */
FP8RT_API fp8rt_status fp8rt_context_comm(fp8rt_context *ctx, int *nranks, int *rank);

#ifdef __cplusplus
}
#endif
#endif /* FP8RT_H */
