/* plan.h — libfp8rt's internal view of an fp8cc plan (docs/plan.md), and
 * the parser that reads it. No CUDA here: the tests use it without a GPU.
 *
 * The parser is strict (unknown line kinds, unknown or missing keys, bad
 * references, bad dtypes, a buffer outside the workspace, a version it does
 * not know: each an error naming the line) and never reads past the text it
 * is given, whatever bytes the text holds. Everything a plan owns lives in
 * one arena, freed by rt_plan_free.
 */
#ifndef FP8RT_PLAN_H
#define FP8RT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "fp8rt.h"

#define RT_PLAN_VERSION_MIN 1 /* the plan versions this parser reads */
#define RT_PLAN_VERSION_MAX 7

typedef struct RtArena RtArena;

typedef enum { REF_IN, REF_OUT, REF_BUF, REF_STATE } RtRefKind;

/* in:N, out:N, buf:N (of the function), st:N (of the program) */
typedef struct {
	RtRefKind kind;
	int index;
} RtRef;

/* DTYPE[d0,d1,...] */
typedef struct {
	fp8rt_dtype dtype;
	int rank;
	int64_t dims[FP8RT_MAX_RANK];
} RtType;

/* input N NAME TYPE / output N NAME TYPE / state N NAME TYPE from=FUNCTION */
typedef struct {
	char *name;
	RtType type;
	int line;
	int from;       /* state: the function that writes it */
	int updates;    /* output: the input it holds the new values of, or -1 (version 7) */
	int inplace;    /* output: may be given that input's memory */
	int64_t offset; /* state: where it lives in a state's allocation */
} RtPort;

/* buffer N TYPE [layout=[...]] offset=O bytes=B [zero] */
typedef struct {
	RtType type;
	int layout[FP8RT_MAX_RANK]; /* memory order, outermost first; identity when not given */
	int64_t offset, bytes;
	int zero;
	int line;
} RtBuffer;

typedef enum { STEP_LAUNCH, STEP_GEMM, STEP_COPY, STEP_CALL, STEP_COLLECTIVE, STEP_WAIT } RtStepKind;

/* launch KERNEL grid=G block=B smem=S coop=C [per_sm=N] args=R,R,... */
typedef struct {
	char *kernel;
	int64_t grid; /* 0: persistent, occupancy x SMs */
	int block, smem, coop;
	int per_sm; /* version 4: at most this many blocks an SM; 0: as many as fit */
	int nargs;
	RtRef *args;
} RtLaunch;

/* the values are fp8rt_epilogue's */
typedef enum { RT_EPI_NONE, RT_EPI_RELU, RT_EPI_GELU, RT_EPI_GELU_AUX } RtEpilogue;

/* version 1: gemm d=R a=R b=R scale_a=R scale_b=R bias=R|none m=M n=N k=K
 *            atype=T btype=T dtype=T fast_accum=0|1
 * version 2 adds batch= stride_a= stride_b= stride_d= trans_a= trans_b=
 * epilogue=; scale_a, scale_b and fast_accum are there exactly for fp8
 * operands (`scaled`). Version 1's gemm is version 2's with batch=1,
 * strides 0, trans_a=0 trans_b=1, epilogue=none. Version 3 adds
 * scale_mode=tensor|row, optional, for fp8 gemms only (tensor when absent):
 * row scales are a vector of m (scale_a) and one of n (scale_b).
 * epilogue=gelu_aux (version 2 on, float gemms) names aux=R, where the gemm
 * writes the pre-activation, laid out as d. */
typedef struct {
	RtRef d, a, b, scale_a, scale_b, bias, aux;
	int has_bias, scaled;
	int64_t m, n, k;
	int64_t batch, stride_a, stride_b, stride_d; /* elements between batch entries; 0: shared */
	int trans_a, trans_b;                        /* a stored (K,M) / b stored (N,K), row-major */
	RtEpilogue epilogue;
	fp8rt_dtype atype, btype, dtype, bias_dtype;
	int fast_accum;
	fp8rt_scale_mode scale_mode;
} RtGemm;

/* copy dst=R src=R bytes=B */
typedef struct {
	RtRef dst, src;
	int64_t bytes;
} RtCopy;

/* call NAME ins=R,... outs=R,... args=TEXT   (version 2) */
typedef struct {
	char *name;
	int nins, nouts, nargs;
	RtRef *ins, *outs;
	fp8rt_arg *args; /* decoded: strings and names in the arena */
} RtCall;

/* collective KIND in=R out=R count=N dtype=T [op=OP | root=R] ranks=N id=N
 * (version 5; broadcast version 6)
 * KIND all_gather (count: each rank's elements; out holds ranks times as
 * many), reduce_scatter (count: out's; in holds ranks times as many),
 * all_reduce (count: both's; op and ranks=0, any number, there) or
 * broadcast (count: both's; root=R, the rank whose in every rank's out
 * gets; ranks=0 there too); op sum, avg, prod, min or max. id: the
 * function's collectives in order, 0 first. */
typedef enum { RT_ALL_GATHER, RT_REDUCE_SCATTER, RT_ALL_REDUCE, RT_BROADCAST } RtCollKind;
typedef enum { RT_RED_SUM, RT_RED_AVG, RT_RED_PROD, RT_RED_MIN, RT_RED_MAX } RtRedOp;

typedef struct {
	RtCollKind kind;
	RtRef in, out;
	int64_t count;
	fp8rt_dtype dtype;
	RtRedOp op;
	int ranks; /* 0: any (all_reduce, broadcast) */
	int root;  /* broadcast */
	int id;
} RtCollective;

typedef struct {
	RtStepKind kind;
	int line;
	union {
		RtLaunch launch;
		RtGemm gemm;
		RtCopy copy;
		RtCall call;
		RtCollective coll;
		int wait; /* wait id=N: the collective's id */
	} u;
} RtStep;

/* function NAME, and the lines after it up to the next function: what one
 * call runs. A version 1 plan is one function, "main". */
typedef struct {
	char *name;
	int line;
	int nin, nout, nbuf, nstep;
	RtPort *in, *out;
	RtBuffer *buf;
	RtStep *step;
	int64_t workspace;
	int nreads;
	int *reads; /* the state slots it reads that another function writes */
	int ncoll;  /* collectives (ids 0 .. ncoll-1), each waited for once, later */
} RtFunc;

typedef struct {
	int version;
	char target[16]; /* "sm_90a" */
	int sm;          /* 90 */
	char sm_suffix;  /* 'a', 'f' or 0 */
	int nstate, nfunc;
	RtPort *state;
	RtFunc *func;
	const char **externs; /* the externs the calls name, each once, in the order of their first call */
	int nexterns;
	int64_t state_bytes; /* one state's allocation: every slot, 256-byte aligned */
	size_t ptx_offset;   /* where the PTX after "// end-plan" starts in the text */
	RtArena *arena;
} RtPlan;

/* Parse the plan at the top of an fp8cc PTX file: lines behind "// " between
 * "// fp8cc-plan V" and "// end-plan". `name` is used in messages
 * ("name:LINE: ..."). Returns FP8RT_OK, FP8RT_BAD_PROGRAM (or
 * FP8RT_UNSUPPORTED, FP8RT_OUT_OF_MEMORY) with the message in err. On failure
 * *plan holds nothing to free. */
fp8rt_status rt_plan_parse_ptx(const char *text, size_t len, const char *name, RtPlan *plan, char *err, size_t errlen);
/* The same for a bare plan, as `fp8cc --emit=plan` prints it (no "// "). */
fp8rt_status rt_plan_parse_text(const char *text, size_t len, const char *name, RtPlan *plan, char *err, size_t errlen);
void rt_plan_free(RtPlan *plan);

/* The type a reference of function fn names (a port's, a buffer's or a
 * state slot's) and its size in bytes (a buffer's declared bytes). */
const RtType *rt_plan_ref_type(const RtPlan *plan, const RtFunc *fn, RtRef r);
int64_t rt_plan_ref_bytes(const RtPlan *plan, const RtFunc *fn, RtRef r);
/* The input whose copy output `out` of fn is, or -1: the output's only
 * reference in fn's steps is one copy of all its bytes from that input, of
 * the same type. (A caller may then pass the input's memory as the output:
 * the copy onto itself is skipped.) */
int rt_plan_output_source(const RtPlan *plan, const RtFunc *fn, int out);
/* The elements a gemm operand spans: (batch-1)*stride + rows*cols. */
int64_t rt_gemm_span(int64_t batch, int64_t stride, int64_t rows, int64_t cols);
/* "in:3" into buf (at least 24 bytes) */
const char *rt_ref_str(RtRef r, char *buf, size_t n);

/* dtypes by plan spelling */
fp8rt_dtype rt_dtype_parse(const char *s, size_t n);
const char *rt_dtype_name(fp8rt_dtype dt); /* "?" if invalid */
size_t rt_dtype_size(fp8rt_dtype dt);      /* 0 if invalid */
int64_t rt_type_numel(const RtType *t);    /* -1 on overflow */

/* The FP8 GEMM's shape and dtype rules, shared by the plan checker and
 * fp8rt_scaled_mm: k >= 16, k and n multiples of 16, a/b dtypes fp8 and not
 * both e5m2, d bf16/f16/f32, bias dtype bf16 (bf16, f32 out) or f16 (f16 out).
 * bias_dtype FP8RT_DTYPE_NONE means no bias. Returns FP8RT_OK,
 * FP8RT_INVALID_ARGUMENT or FP8RT_UNSUPPORTED with a message. */
fp8rt_status rt_gemm_rules(int64_t m, int64_t n, int64_t k, fp8rt_dtype at, fp8rt_dtype bt, fp8rt_dtype dt,
	fp8rt_dtype bias_dt, char *err, size_t errlen);
/* FP8RT_SCALE_BLOCK's rules (fp8rt.h): k a multiple of 128, m of 4, no
 * fast_accum; FP8RT_OK or FP8RT_INVALID_ARGUMENT with a message. */
fp8rt_status rt_block_rules(int64_t m, int64_t k, int fast_accum, char *err, size_t errlen);
/* The f32 values an fp8 GEMM's scale holds in `mode` (fp8rt.h's layouts):
 * scale_b's if b, else scale_a's. */
int64_t rt_scale_numel(fp8rt_scale_mode mode, int64_t m, int64_t n, int64_t k, int b);
/* The bias dtype cuBLASLt wants for an FP8 GEMM writing dt. */
fp8rt_dtype rt_gemm_bias_dtype(fp8rt_dtype dt);
/* The rules of a GEMM on float operands (plan version 2's matmul and
 * fp8rt_matmul): a, b and d one dtype of f16 bf16 f32 f64, bias the same;
 * m, n >= 0, k >= 1, batch >= 1, all below 2^31. */
fp8rt_status rt_matmul_rules(int64_t m, int64_t n, int64_t k, int64_t batch, fp8rt_dtype at, fp8rt_dtype bt,
	fp8rt_dtype dt, char *err, size_t errlen);

#endif /* FP8RT_PLAN_H */
