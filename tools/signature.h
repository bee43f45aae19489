/* signature.h — a program's inputs and outputs as JSON, in the one shape
 * both tools print (fp8cc --emit=signature, the "signature" of fp8run
 * --json), so that programs with several entry points fit later:
 *
 *   {"program": "seed", "target": "sm_90", "functions": [
 *     {"name": "computation",
 *      "inputs": [{"name": "x", "dtype": "bf16", "shape": [16, 32]}, ...],
 *      "outputs": [...]}]}
 *
 * dtypes in the plan's spelling (docs/plan.md). Built with jansson; knows
 * nothing of the IR or the runtime.
 */
#ifndef FP8CC_SIGNATURE_H
#define FP8CC_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* One input or output. */
typedef struct {
	const char *name;    /* the trace's name */
	const char *dtype;   /* plan spelling: "bf16", "f8e4m3fn" */
	int rank;            /* 0 for a scalar */
	const int64_t *dims; /* rank of them */
} SigTensor;

/* One function (entry point) of a program. */
typedef struct {
	const char *name; /* NULL: unknown (the plan of version 1 does not name it); JSON null */
	const SigTensor *in, *out;
	int nin, nout;
} SigFunc;

/* The signature object of a program of nfn functions; NULL when out of
 * memory. The caller owns the reference (json_decref). */
json_t *sig_json(const char *program, const char *target, const SigFunc *fn, int nfn);
/* Print j to f, indented, with a final newline; 0 or -1. */
int sig_print(FILE *f, const json_t *j);
/* The program's name from its file: the last path component without its
 * extension ("dir/seed.trace" -> "seed"), into buf of n bytes. */
const char *sig_stem(const char *path, char *buf, size_t n);

#endif
