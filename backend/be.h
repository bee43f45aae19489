/* be.h — the backend's internals, shared by its files: kernel code generation
 * (codegen.c, ops.c), the NVPTX target (target.c), and the plan text (plan.c). */
#ifndef FP8CC_BE_H
#define FP8CC_BE_H

#include <llvm-c/Core.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "backend.h"
#include "passes.h"

#define BE_BLOCK 256 /* threads per block of every kernel */
/* the most blocks of a kernel but a map; a sum's partials in the scratch
 * buffer have a slot for each of these many blocks (codegen.c, analyze) */
#define BE_MAXGRID 4096
/* the most blocks of a map (one phase, no scratch, no tile: a block does
 * nothing but its elements). The GELUs of 8192x11008, 44032 blocks' worth,
 * took 2-3 % less time at 16384 blocks than at 4096, and 15 % less than on
 * the resident grid; a kernel whose blocks each add a partial and count in
 * was 24 % slower at 8192 blocks than at 4096 (the delayed-scaling quantize
 * of 4096^2), hence the two caps (H100, 2026-12-05, docs/gpu-results.md) */
#define BE_MAXGRID_MAP 16384
/* blocks an SM for a kernel whose amax walks the tiles of its cast
 * (cg_tile_walk): four took the both-layouts quantize 1.5-3 % less time
 * than eight on the H200 (8192^2: 110.3 -> 107.5 us), where the same kernel
 * without the walk was 4-7 % slower with four (docs/gpu-results.md). Only
 * where the kernel has more tiles than that many blocks on each of an
 * H100's or H200's 132 SMs take at once: below, the cap changes nothing
 * there, and the plan keeps its version. */
#define BE_WALK_PER_SM 4
#define BE_WALK_SMS    132
/* shared memory a block of a multi-phase kernel may keep its inputs in
 * across a grid barrier (codegen.c, Keep), at most: eight blocks of 16 KB
 * leave an SM of 228 KB (sm_90, sm_100) its full 2048 threads and most of
 * its L1; 24 KB, which fits too, took the L1 the loads in flight need and
 * was slower (measured on the H200, docs/gpu-results.md). A target whose
 * SM full of blocks leaves each less gets less (be_keep_bytes). */
#define BE_KEEP        (16 * 1024)
#define BE_STATIC_SMEM 49152               /* the static shared bytes a kernel may declare */
#define BE_REDUCE_SMEM (BE_BLOCK / 32 * 8) /* a block reduction's slots, a warp's i64 each */

/* ---- memplan.c: where each value lives, the steps in order ---- */

/* LOC_STATE: a state slot, which one function of a program writes and a
 * later one reads (a forward's saved tensors, its backward's inputs) */
typedef enum { LOC_NONE, LOC_IN, LOC_OUT, LOC_BUF, LOC_STATE } LocKind;

typedef struct {
	uint8_t kind; /* LocKind */
	uint32_t idx; /* input, output, buffer or state slot number */
} Loc;

static inline bool
same_loc(Loc a, Loc b)
{
	return a.kind == b.kind && a.idx == b.idx;
}

typedef struct {
	uint32_t value; /* the value it holds first (dtype, shape, layout); IR_NONE for scratch */
	int64_t offset, bytes;
	bool zero; /* scratch: zeroed once; a kernel keeps it as its next run starts from it */
} PlanBuf;

/* CALL: an extern, at its result 0; COLLECTIVE, WAIT: at their instruction */
typedef enum { STEP_LAUNCH, STEP_GEMM, STEP_COPY, STEP_CALL, STEP_COLLECTIVE, STEP_WAIT } StepKind;

typedef struct {
	uint8_t kind;   /* StepKind */
	uint32_t index; /* kernel index, or the GEMM's instruction index */
	Loc dst, src;   /* copy */
	int64_t bytes;  /* copy */
} Step;

/* an output value v that holds parameter u's new values, written by a kernel
 * that may run with the two in the same memory (codegen.c, "In place") */
typedef struct {
	uint32_t v, u;
} Shared;

typedef struct {
	Loc *loc; /* per value: where it lives; LOC_NONE if never in memory */
	PlanBuf *bufs;
	uint32_t nbufs, capbufs;
	Step *steps;
	uint32_t nsteps, capsteps;
	int64_t workspace; /* bytes of the one allocation holding every buffer */
	Shared *shared;    /* filled by codegen */
	uint32_t nshared, capshared;
} Plan;

Plan *pass_memplan(Func *fn);
/* a zeroed scratch buffer of its own (never shared); returns its number */
uint32_t plan_add_scratch(Func *fn, Plan *p, int64_t bytes);
/* the kernel that writes v may do so in u's memory (codegen.c, "In place") */
void plan_add_shared(Func *fn, Plan *p, uint32_t v, uint32_t u);

typedef struct {
	uint32_t grid;    /* blocks; 0: persistent, the runtime picks */
	uint32_t block;   /* threads per block */
	uint32_t smem;    /* dynamic shared memory bytes */
	bool coop;        /* has grid-wide barriers: launch cooperatively */
	uint32_t phases;  /* 1 + number of grid-wide barriers */
	uint32_t scratch; /* plan buffer of its scratch; IR_NONE if none */
	uint32_t per_sm;  /* at most this many blocks an SM (plan version 4); 0: as many as fit */
} Launch;

/* ---- codegen.c ---- */

/* the kernels built so far, by their LLVM text (names left out) */
typedef struct {
	char **text;
	const char **name;
	uint64_t *hash;
	uint32_t n, cap;
} Seen;

/* build one LLVM function per kernel of fn into mod; fills launches[k] and
 * adds each kernel's scratch to the plan; a block keeps at most keep bytes
 * across a grid barrier (be_keep_bytes). With seen, a kernel whose code is
 * one already built is not kept: fn's kernel takes that one's name. */
void be_codegen(Func *fn, Plan *plan, LLVMModuleRef mod, Launch *launches, Seen *seen, int64_t keep);
void be_seen_free(Seen *seen);

/* ---- ops.c: one element of an op, in registers ---- */

typedef struct {
	uint32_t v;           /* value */
	LLVMValueRef *coords; /* the coordinates it was computed at (NULL: rank 0) */
	LLVMValueRef val;
	uint32_t prev; /* the value's previous entry, or IR_NONE */
} Memo;

/* the state of code generation for one module and its current kernel */
typedef struct Cg {
	LLVMContextRef cx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	Func *fn;
	Plan *plan;
	LLVMTypeRef i1, i8, i16, i32, i64, f16, bf16, f32, f64, ptr, ity;
	/* the current kernel */
	uint32_t k;
	LLVMValueRef kfn;
	LLVMValueRef *ptr_of;  /* per value: its pointer parameter, or NULL */
	LLVMValueRef scratch;  /* the scratch parameter */
	int64_t *storage;      /* per value: scratch offset of a reduction's result, or -1 */
	uint32_t *phase_of;    /* per value of the current kernel: its phase */
	bool *is_out;          /* per value of the current kernel: an output of it */
	uint32_t *avail;       /* per value: the phase its result is available in */
	LLVMValueRef *uniform; /* per value: its rank-0 value in the current phase */
	LLVMBasicBlockRef pre; /* the current phase's preamble (dominates its loops) */
	Memo *memo;
	uint32_t nmemo, capmemo;
	uint32_t *memo_head; /* per value: its newest memo entry, or IR_NONE */
	/* the current loop's iteration space, to spot accesses at its own index */
	uint32_t space; /* a value with the loop's dims and memory order */
	LLVMValueRef *space_coords, space_lin;
	int space_align; /* bytes the current element's index is a multiple of */
	LLVMValueRef tid, bid, ntid, nctaid, gtid, gstride;
	LLVMValueRef gen; /* a multi-phase kernel's barrier generation at its start (i32) */
	/* inputs kept in shared memory across a grid barrier (codegen.c, Keep) */
	int64_t keep;         /* the bytes a block may keep (be_keep_bytes) */
	int64_t *keep_off;    /* per value: its place in a step's kept bytes, or -1 */
	LLVMValueRef keep_at; /* the current chunk's: this thread's first byte, or NULL */
	bool keep_load;       /* read them from there (else store them as they load) */
	int keep_j;           /* the element of the chunk being built */
	bool stream;          /* a multi-phase kernel: its stores marked evict-first (stream.c) */
	/* in-place updates the current kernel checks (codegen.c, "In place") */
	struct Inplace *ip;
	uint32_t nip;
	uint32_t phase, group, body, seq; /* where an access is: group 0 is none */
} Cg;

LLVMTypeRef be_type(Cg *c, DType t);
LLVMValueRef be_convert(Cg *c, LLVMValueRef x, DType from, DType to, bool fixup);
LLVMValueRef be_unary(Cg *c, Op op, LLVMValueRef x, DType t);
LLVMValueRef be_binary(Cg *c, Op op, LLVMValueRef x, LLVMValueRef y, DType t);
LLVMValueRef be_constant(Cg *c, double v, DType t);
LLVMValueRef be_call(Cg *c, const char *intrinsic, LLVMTypeRef *over, int nover, LLVMValueRef *args, int nargs);
LLVMValueRef be_libdevice(Cg *c, const char *name, LLVMTypeRef t, LLVMValueRef *args, int nargs);

/* ---- target.c ---- */

/* the shared bytes a block may keep across a grid barrier on gpu */
int64_t be_keep_bytes(const char *gpu);

/* link libdevice, optimize at O3 and write PTX; false with a message */
bool be_compile(LLVMModuleRef mod, const BeOptions *o, char **ptx, char *err, size_t errlen);
/* the same without the PTX: the module as the PTX writer will see it */
bool be_optimize(LLVMModuleRef mod, const BeOptions *o, char *err, size_t errlen);
LLVMModuleRef be_module(LLVMContextRef cx, const char *name);

/* ---- pairs.c ---- */

/* join an optimized module's one-float fp8 casts in pairs; how many */
int be_pair_casts(LLVMModuleRef mod);

/* ---- stream.c ---- */

/* mark a store of codegen's to be written evict-first (!nontemporal) */
void be_mark_stream(LLVMContextRef cx, LLVMValueRef st);
/* the marked global stores of an optimized module as st.global.cs; how many */
int be_stream_stores(LLVMModuleRef mod, LLVMTargetMachineRef tm, LLVMPassBuilderOptionsRef po);

/* ---- plan.c ---- */

/* l: each function's launches (NULL before codegen) */
int be_plan_version(const Program *prog, Launch *const *l);
/* the plan's first lines: version, target, state slots */
void be_print_plan_head(FILE *f, const Program *prog, Launch *const *l, const char *gpu, const char *prefix);
/* one function's part; l NULL: before codegen, launches without their
 * geometry or scratch */
void be_print_plan(FILE *f, Func *fn, Plan *p, const Launch *l, int version, const char *prefix);
/* the fused program for Graphviz: a cluster per kernel (and per function
 * in a program of several), GEMM operand edges labelled, saved values dashed */
void be_print_dot(FILE *f, const Program *prog);

#endif
