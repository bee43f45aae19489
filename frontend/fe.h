/* fe.h — readers that turn text into IR: source files, diagnostics with
 * file:line:col and a caret, the fp8cc IR text reader and the Thunder trace
 * reader. A reader reports the first error it finds and returns NULL. */
#ifndef FP8CC_FE_H
#define FP8CC_FE_H

#include "ir.h"

/* ---- diag.c ---- */

typedef struct {
	const char *path; /* as the user named it; "<stdin>" for - */
	char *text;       /* NUL-terminated copy */
	size_t len;
} Source;

/* ---- source.c ---- */

/* read a file, or standard input for "-"; false with a message on stderr */
bool fe_load(const char *path, Source *src);
void fe_unload(Source *src);

/* ---- diag.c ---- */

/* "path:line:col: error: msg", the source line, a caret under col (1-based) */
void fe_error(const Source *src, uint32_t line, uint32_t col, const char *fmt, ...);
void fe_verror(const Source *src, uint32_t line, uint32_t col, const char *fmt, va_list ap);
/* the same with another kind: "note", "warning", "fatal error"; line 0: no position */
void fe_diag(const Source *src, uint32_t line, uint32_t col, const char *kind, const char *fmt, ...);
/* what fe_diag prints, as a malloc'd string */
char *fe_vformat(const Source *src, uint32_t line, uint32_t col, const char *kind, const char *fmt, va_list ap);
/* where diagnostics go; stderr unless set */
extern FILE *fe_diag_out;

/* ---- irparse.c ---- */

Func *fe_read_ir(Arena *a, const Source *src);
/* several functions whose parameters and outputs may name state slots */
Program *fe_read_ir_program(Arena *a, const Source *src);
/* true if the text looks like fp8cc IR (first token "func") */
bool fe_is_ir(const Source *src);

/* ---- the Thunder trace reader (read.c and the files below it) ---- */

#define FE_MAXERRORS 20 /* errors one file reports before the reader stops */

/* A Python value a forward hands its backward in saved_for_backward: tuples
 * over tensors (values of the forward), numbers and None */
/* PY_ERR: what the forward could not compute (its error is reported) */
typedef enum { PY_NONE, PY_TENSOR, PY_NUM, PY_TUPLE, PY_ERR } PyKind;

typedef struct PyObj PyObj;
struct PyObj {
	PyKind kind;
	uint32_t val; /* PY_TENSOR, PY_NUM known at run time: the forward's value; else IR_NONE */
	bool input;   /* PY_TENSOR: a new input of that value's type (a cotangent), not the value */
	double num;   /* PY_NUM */
	char numkind; /* PY_NUM: 'f', 'i' or 'b' */
	PyObj **elts; /* PY_TUPLE */
	uint32_t n;
	const char *name; /* the name the trace gave it, or NULL */
};

/* --signature: the types of inputs a trace does not type, by name or by
 * position ("0", "1", ... in the def or in *args) */
typedef struct {
	const char *name;
	DType dtype;
	int rank;
	int64_t dims[IR_MAXRANK];
} FeSigEntry;

typedef struct {
	FeSigEntry *e;
	uint32_t n;
} FeSig;

/* What reading one trace of a program takes from the one before and gives to
 * the one after. */
typedef struct {
	const FeSig *sig;   /* types of untyped inputs, or NULL */
	bool forward;       /* the forward of a pair: its saved values go to .saved */
	Func *fwd;          /* reading a backward: its forward */
	PyObj *saved;       /* the forward's saved values */
	PyObj *outputs;     /* the forward's outputs, in order: its backward's cotangents */
	uint32_t *slot_val; /* state slot k carries the forward's value slot_val[k] */
	uint32_t nslots, capslots;
	bool read_saved; /* the backward took the saved values */
	Func *partial;   /* the function read, errors or not */
} FeLink;

Func *fe_read_trace(Arena *a, const Source *src);
/* the same as part of a program (link may be NULL) */
Func *fe_read_trace_linked(Arena *a, const Source *src, FeLink *link);

/* detect the kind from the content and read it */
Func *fe_read(Arena *a, const Source *src);
/* A program: one trace (or IR text), or a forward trace and its backward
 * (n = 2), whose saved values pass through state slots; sig types inputs
 * the traces do not type (NULL: none). NULL after errors, reported. */
Program *fe_read_program(Arena *a, const Source *srcs, int n, const FeSig *sig);

#endif
