/* passes.h — IR → IR transformations and the pipeline that runs them.
 * Each pass lives in its own file; the pipeline is one flat list (pipeline.c). */
#ifndef FP8CC_PASSES_H
#define FP8CC_PASSES_H

#include "ir.h"

typedef struct {
	int opt;                 /* -O level: pipeline.c says what each runs */
	bool print_after_all;    /* dump IR to stderr after each pass */
	const char *print_after; /* dump IR after the pass of this name */
	bool verify;             /* run the verifier between passes */
	const char *only;        /* run just these passes, comma-separated ("" runs none) */
	bool epilogues;          /* --fuse-epilogues: bias adds and ReLUs into the matmuls before them */
} PassOptions;

/* ---- passes ---- */

Func *pass_canonicalize(Func *fn);
Func *pass_dce(Func *fn);
Func *pass_transposes(Func *fn);
Func *pass_shards(Func *fn); /* the fp8 all-gather: shards.c */
Func *pass_layouts(Func *fn);
Func *pass_ranges(Func *fn);
Func *pass_fuse(Func *fn, int opt);
Func *pass_epilogues(Func *fn); /* changes roundings: only under PassOptions.epilogues */

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
