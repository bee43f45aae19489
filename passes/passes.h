/* passes.h — IR → IR transformations and the pipeline that runs them.
 * Each pass lives in its own file; the pipeline is one flat list (pipeline.c). */
#ifndef FP8CC_PASSES_H
#define FP8CC_PASSES_H

#include "ir.h"

typedef struct {
	int opt;                  /* -O level: pipeline.c says what each runs */
	bool print_after_all;     /* dump IR to stderr after each pass */
	const char *print_after;  /* dump IR after the pass of this name */
	bool verify;              /* run the verifier between passes */
	const char *only;         /* run just these passes, comma-separated ("" runs none) */
} PassOptions;

/* ---- the memory plan (memplan.c) ---- */

/* LOC_STATE: a state slot, which one function of a program writes and a
 * later one reads (a forward's saved tensors, its backward's inputs) */
typedef enum { LOC_NONE, LOC_IN, LOC_OUT, LOC_BUF, LOC_STATE } LocKind;

typedef struct {
	uint8_t kind;         /* LocKind */
	uint32_t idx;         /* input, output, buffer or state slot number */
} Loc;

typedef struct {
	uint32_t value;       /* the value it holds first (dtype, shape, layout); IR_NONE for scratch */
	int64_t offset, bytes;
	bool zero;            /* scratch: zeroed once; kernels leave it zeroed */
} PlanBuf;

typedef enum { STEP_LAUNCH, STEP_GEMM, STEP_COPY, STEP_CALL } StepKind;   /* CALL: an extern, at its result 0 */

typedef struct {
	uint8_t kind;         /* StepKind */
	uint32_t index;       /* kernel index, or the GEMM's instruction index */
	Loc dst, src;         /* copy */
	int64_t bytes;        /* copy */
} Step;

typedef struct {
	Loc *loc;             /* per value: where it lives; LOC_NONE if never in memory */
	PlanBuf *bufs; uint32_t nbufs, capbufs;
	Step *steps; uint32_t nsteps, capsteps;
	int64_t workspace;    /* bytes of the one allocation holding every buffer */
} Plan;

Plan *pass_memplan(Func *fn);
/* a zeroed scratch buffer of its own (never shared); returns its number */
uint32_t plan_add_scratch(Func *fn, Plan *p, int64_t bytes);

/* ---- passes ---- */

Func *pass_canonicalize(Func *fn);
Func *pass_dce(Func *fn);
Func *pass_transposes(Func *fn);
Func *pass_layouts(Func *fn);
Func *pass_ranges(Func *fn);
Func *pass_fuse(Func *fn, int opt);

/* run the pipeline; returns the final function (passes may rebuild it) */
Func *pass_pipeline(Func *fn, const PassOptions *opt);
/* true if fn is what the backend takes: every instruction but GEMMs in a
 * kernel, every GEMM outside one with a row-major, b in layout {1,0} and a
 * row-major result; else the first one that is not, in err */
bool pass_lowered(Func *fn, char *err, size_t errlen);
/* true if every name in the comma-separated list is a pass */
bool pass_list_ok(const char *list, const char **bad, size_t *badlen);
/* names of the passes, NULL-terminated, for --print-after */
extern const char *const pass_names[];

#endif
