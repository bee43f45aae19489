/* ir.h — the fp8cc IR layer: dtypes, ops, SSA functions, builder, verifier,
 * printer, numeric conversions and the reference interpreter.
 *
 * A function is straight-line SSA. Values are small integer ids into
 * fn->vals; parameters come first, then one result per instruction.
 * Instructions are fixed structs; operand lists, integer attributes and shapes
 * live in side arrays of the function. Everything is allocated from one arena
 * per compilation and freed with it. */
#ifndef FP8CC_IR_H
#define FP8CC_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>
#include <string.h>

#define IR_MAXRANK 8
#define IR_NONE    UINT32_MAX

/* ---- util.c ---- */

/* an error of the environment (memory, files, the toolkit), not of the
 * input and not a bug: "fp8cc: error: ..." on stderr; fatal then exits 1 */
void env_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a bug: the place in the source, then abort */
noreturn void die_(const char *file, int line, const char *fmt, ...);
#define die(...)      die_(__FILE__, __LINE__, __VA_ARGS__)
#define unreachable() die("unreachable")
#define NELEM(a)      (sizeof(a) / sizeof((a)[0]))

double now_ms(void); /* a monotonic clock, for --time */

typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n); /* zeroed, 16-byte aligned */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...);
/* grow *p (elements of size sz, capacity *cap) to hold need elements */
void arena_grow(Arena *a, void **p, uint32_t *cap, uint32_t need, size_t sz);

/* a string map, names -> ids: open addressing in the arena; a key is kept
 * by pointer, so it must live as long as the map (an arena string) */
typedef struct {
	const char **keys;
	uint32_t *vals;
	uint32_t cap, n;
} Map;
uint32_t *map_getn(const Map *m, const char *s, size_t n); /* the value of s[0..n), or NULL */
static inline uint32_t *
map_get(const Map *m, const char *s)
{
	return map_getn(m, s, strlen(s));
}
void map_put(Arena *a, Map *m, const char *key, uint32_t v);

/* ---- dtype.c ---- */

typedef enum { DK_BOOL, DK_UINT, DK_INT, DK_FLOAT, DK_FP8 } DKind;

typedef enum {
#define DTYPE(id, ...) DT_##id,
#include "dtypes.def"
#undef DTYPE
	DT_COUNT
} DType;

typedef struct {
	const char *name;         /* IR text: f8e4m3fn */
	const char *thunder;      /* type comments: f8_e4m3fn */
	const char *thunder_long; /* dtypes.float8_e4m3fn */
	const char *torch;        /* torch.float8_e4m3fn */
	const char *st;           /* safetensors: F8_E4M3 */
	int bits;
	DKind kind;
} DTypeInfo;

extern const DTypeInfo ir_dtypes[DT_COUNT];
int dt_size(DType t);     /* bytes per element */
bool dt_isfloat(DType t); /* f16 bf16 f32 f64 (not fp8) */
bool dt_isfp8(DType t);
bool dt_isint(DType t);                            /* integer, not bool */
int dt_lookup(const char *s, size_t n, int which); /* which: 0 ir, 1 thunder, 2 long, 3 torch, 4 st; -1 if none */

/* ---- ops ---- */

typedef enum {
	OC_CONVERT,
	OC_UNARY,
	OC_BINARY,
	OC_COMPARE,
	OC_WHERE,
	OC_FMA, /* a*b + c rounded once */
	OC_REDUCE,
	OC_SHAPE,
	OC_CAT,
	OC_CLONE,
	OC_FULL,
	OC_GEMM,
	OC_GATHER,
	OC_PAD,
	OC_BITCAST,
	OC_IOTA,
	OC_EXTERN,
	OC_AUX,       /* a second result of the GEMM step right before it */
	OC_COLLECTIVE /* a collective over the ranks, or its wait */
} OpClass;
typedef enum { TC_FLOAT, TC_NUM, TC_INT, TC_ANY, TC_BOOL } TypeClass;

typedef enum {
#define OP(id, ...) OP_##id,
#include "ops.def"
#undef OP
	OP_COUNT
} Op;

typedef struct {
	const char *name; /* IR text */
	int minargs, maxargs;
	OpClass cls;
	TypeClass tc;
	const char *prim;      /* Thunder prims.X spelling, "" if none */
	const char *libdevice; /* __nv_X / __nv_Xf computes it, "" if none */
} OpInfo;

extern const OpInfo ir_ops[OP_COUNT];
int op_lookup(const char *s, size_t n); /* by IR name; -1 if none */
bool op_elementwise(Op op);             /* convert, unary, binary, compare, where */
bool op_gemm(Op op);                    /* a GEMM */
bool op_step(Op op);                    /* a GEMM, an extern, a GEMM's second result or a collective: in no kernel */
bool op_collective(Op op);              /* all_gather, reduce_scatter, all_reduce: in flight until its wait */
enum { RED_SUM, RED_AVG, RED_PROD, RED_MIN, RED_MAX, RED_COUNT }; /* a collective's reduction (attr 0) */

/* ---- func.c: SSA functions and the builder ---- */

enum { IF_FAST_ACCUM = 1, IF_NO_FIXUP = 2, IF_TRANS_A = 4, IF_TRANS_B = 8 };
enum { EPI_NONE, EPI_RELU, EPI_GELU, EPI_GELU_AUX }; /* matmul's epilogue attribute */

typedef struct {
	uint8_t dtype; /* DType */
	uint8_t rank;
	uint32_t shape;   /* fn->ints[shape .. shape+rank): dims */
	uint32_t layout;  /* fn->ints[layout ..]: memory order, outermost first; IR_NONE = row-major */
	uint32_t def;     /* defining instruction, IR_NONE for a parameter */
	const char *name; /* source name, or NULL */
} Value;

/* An extern call: an op fp8cc does not compile, which the application
 * supplies at run time. Each of its results is an instruction of its own
 * (op extern, attr [i]) pointing here; the pointer is the call's identity.
 * `args` is the argument list as the trace wrote it, in the canonical form
 * of docs/ir.md ("Externs"): @N stands for tensor operand N. */
typedef struct {
	const char *name; /* the callee: apex_xentropy_backward */
	const char *args; /* @0, @1, 0.0, reduction='mean' */
	uint32_t nres;
} Extern;

typedef struct {
	uint16_t op;          /* Op */
	uint8_t flags;        /* IF_* */
	uint32_t args, nargs; /* fn->argv[args .. args+nargs): operand value ids */
	uint32_t attr, nattr; /* fn->ints[attr .. attr+nattr): integer attributes */
	double fval;          /* full: the value */
	uint32_t res;         /* result value id */
	int32_t kernel;       /* kernel index after fusion, -1 before */
	uint32_t line, col;   /* source position, 0 if none */
	const Extern *ext;    /* extern: its call */
} Instr;

typedef struct {
	uint32_t first, count; /* instructions fn->ins[first .. first+count) */
	uint32_t ins, nins;    /* fn->argv[ins ..]: values read from outside */
	uint32_t outs, nouts;  /* fn->argv[outs ..]: values used outside or returned */
	const char *name;
} Kernel;

typedef struct Func {
	Arena *arena;
	const char *name;
	Value *vals;
	uint32_t nvals, capvals;
	Instr *ins;
	uint32_t nins, capins;
	uint32_t *argv;
	uint32_t nargv, capargv; /* operand and id lists */
	int64_t *ints;
	uint32_t nints, capints; /* shapes, layouts, attributes */
	uint32_t *params;
	uint32_t nparams, capparams;
	uint32_t *rets;
	uint32_t nrets, caprets;
	const char **retnames;  /* output names; NULL: the value's own */
	int32_t *pslot, *rslot; /* per parameter, output: the state slot it reads,
	                                               writes; -1: an input, output of the call */
	int32_t *rupd;          /* per output: the parameter it holds the new values of (an
	                  update in place, docs/design.md "In-place updates"); -1: none */
	Kernel *kernels;
	uint32_t nkernels, capkernels;
} Func;

/* A program: functions called one after another (a training step's forward,
 * then its backward); state slot k is written by the output of one
 * function whose rslot is k and read by the parameters whose pslot is k. */
typedef struct {
	Arena *arena;
	Func **fns;
	uint32_t nfns, capfns;
	uint32_t nslots;
} Program;

Program *ir_program_new(Arena *a);
void ir_program_add(Program *p, Func *fn);

Func *ir_func_new(Arena *a, const char *name);
uint32_t ir_param(Func *fn, const char *name, DType t, int rank, const int64_t *dims);
/* append an instruction; its result has dtype t and shape dims */
uint32_t ir_instr(Func *fn, Op op, const uint32_t *args, int nargs, const int64_t *attr, int nattr, DType t, int rank,
	const int64_t *dims);
uint32_t ir_full(Func *fn, double v, DType t, int rank, const int64_t *dims);
/* append the nres instructions of an extern call (results' types in
 * dts[i], ranks[i], dims[i]); returns the first result (the others follow) */
uint32_t ir_extern(Func *fn, const Extern *ext, const uint32_t *ops, int nops, const DType *dts, const int *ranks,
	const int64_t (*dims)[IR_MAXRANK]);
/* append an output; name NULL: it is named after the value. A name an
 * earlier output has gets a suffix: NAME_1, NAME_2, ... */
void ir_return(Func *fn, uint32_t v, const char *name);
const char *ir_retname(Func *fn, uint32_t i, char buf[16]);
void ir_set_param_slot(Func *fn, uint32_t i, int32_t slot);
void ir_set_ret_slot(Func *fn, uint32_t i, int32_t slot);
/* output i holds parameter p's new values (p: its number among the params) */
void ir_set_ret_update(Func *fn, uint32_t i, int32_t p);
uint32_t ir_push_ints(Func *fn, const int64_t *v, int n);
uint32_t ir_push_ids(Func *fn, const uint32_t *v, int n);

static inline Value *
ir_val(Func *fn, uint32_t v)
{
	return &fn->vals[v];
}
static inline const int64_t *
ir_dims(Func *fn, uint32_t v)
{
	return &fn->ints[fn->vals[v].shape];
}
static inline const uint32_t *
ir_args(Func *fn, const Instr *in)
{
	return &fn->argv[in->args];
}
static inline const int64_t *
ir_attr(Func *fn, const Instr *in)
{
	return &fn->ints[in->attr];
}
int64_t ir_numel(Func *fn, uint32_t v);
bool ir_same_shape(Func *fn, uint32_t a, uint32_t b);
/* the name a value prints under: its own, else its id */
const char *ir_name(Func *fn, uint32_t v, char buf[16]);
/* per-value use counts, returns included; arena-allocated */
uint32_t *ir_uses(Func *fn);
bool ir_is_rowmajor(Func *fn, uint32_t v);
/* How a scaled_mm's scales apply (docs/ir.md): one f32 each; row-wise,
 * scale_a (M,1) and scale_b (1,N); block-wise, scale_a (M, ceil(K/128)) per
 * 1x128 block of a and scale_b (ceil(K/128), ceil(N/128)) per 128x128 block
 * of b. Not a scaled_mm, or scales of no form: SCALES_TENSOR. */
typedef enum { SCALES_TENSOR, SCALES_ROW, SCALES_BLOCK } ScaleMode;
#define IR_SCALE_BLOCK 128 /* the k (and n) a block-wise scale covers */
ScaleMode ir_scale_mode(Func *fn, const Instr *in);
/* a matmul's epilogue attribute (EPI_*); EPI_NONE for any other instruction */
int ir_epilogue(Func *fn, const Instr *in);
/* a collective's ranks attribute (all_reduce's 0: any number); 0 for a wait
 * or any other instruction */
int64_t ir_ranks(Func *fn, const Instr *in);
/* true if the result of `in` has its operand's bytes: a reshape between
 * row-major values, or a transpose whose result's layout walks the
 * operand's dims in the operand's memory order (the transpose of a
 * row-major (N,K) weight into a column-major (K,N) b) */
bool ir_same_bytes(Func *fn, const Instr *in);
const Instr *ir_def(Func *fn, uint32_t v);      /* NULL for a parameter */
bool ir_const(Func *fn, uint32_t v, double *c); /* v is a full constant: its value */

/* Rewriting: a pass walks src and builds dst. map[old value] = new value
 * (IR_NONE until defined). Instructions copied keep names, flags, positions. */
Func *ir_rewrite_begin(Func *src, uint32_t **map);
uint32_t ir_copy_instr(Func *dst, Func *src, const Instr *in, uint32_t *map);
void ir_rewrite_end(Func *dst, Func *src, const uint32_t *map);

/* ---- verify.c ---- */

/* true if fn is well formed; else writes "instruction %x = op ...: reason" to err
 * and, when pos is not NULL, the instruction index to *pos */
bool ir_verify(Func *fn, char *err, size_t errlen, uint32_t *pos);
/* check one instruction's dtype and shape rules (used by readers as they build) */
bool ir_check_instr(Func *fn, const Instr *in, char *err, size_t errlen);

/* ---- extern.c: extern calls' argument lists ---- */

/* true if s is a canonical argument list (docs/ir.md, "Externs") whose @N
 * are all below nops, and that names every operand; else a message in err */
bool ext_args_check(const char *s, uint32_t nops, char *err, size_t errlen);
/* print s with each @N as operand N's name */
void ext_args_print(FILE *f, Func *fn, const char *s, const uint32_t *ops);

/* ---- print.c ---- */

void ir_print(FILE *f, Func *fn);
void ir_print_program(FILE *f, const Program *p);
void ir_print_type(FILE *f, Func *fn, uint32_t v);
/* the shortest decimal that reads back as d; nan, -nan, inf, -inf */
void ir_print_double(FILE *f, double d);

/* ---- numeric.c: PyTorch-exact scalar conversions ---- */

uint8_t f32_to_e4m3fn(float x);
uint8_t f32_to_e5m2(float x);
float e4m3fn_to_f32(uint8_t b);
float e5m2_to_f32(uint8_t b);
uint16_t f32_to_bf16(float x); /* round to nearest even, NaN stays NaN */
float bf16_to_f32(uint16_t b);
uint16_t f32_to_f16(float x); /* IEEE binary16, round to nearest even */
float f16_to_f32(uint16_t b);
static inline uint32_t
f32_bits(float x)
{
	union {
		float f;
		uint32_t u;
	} c = { x };
	return c.u;
}
static inline float
bits_f32(uint32_t u)
{
	union {
		uint32_t u;
		float f;
	} c = { u };
	return c.f;
}
/* conversion of one element through double, the rules of convert_element_type */
double ir_convert_scalar(double v, DType from, DType to);
/* float → integer dtype as PyTorch's CUDA casts (numeric.c says how) */
int64_t ir_float_to_int(double v, DType from, DType to);
int64_t ir_wrap_int(int64_t v, DType t); /* an int64 wrapped to the width of t */

/* ---- tensor.c: host tensors ---- */

typedef struct {
	DType dtype;
	int rank;
	int64_t dims[IR_MAXRANK];
	void *data; /* row-major, contiguous, malloc'd */
	char *name; /* malloc'd, or NULL */
} Tensor;

int64_t tensor_numel(const Tensor *t);
size_t tensor_bytes(const Tensor *t);
/* allocate a zeroed tensor; NULL if the size overflows or memory runs out */
Tensor *tensor_new(const char *name, DType t, int rank, const int64_t *dims);
void tensor_free(Tensor *t);
/* element i as double (exact for every float dtype and ints up to 2^53) */
double tensor_getf(const Tensor *t, int64_t i);
int64_t tensor_geti(const Tensor *t, int64_t i);
/* store v rounded to the tensor's dtype with PyTorch's conversion rules */
void tensor_setf(Tensor *t, int64_t i, double v);
/* the same for a value of dtype `from` (integer targets depend on it) */
void tensor_setf_from(Tensor *t, int64_t i, double v, DType from);
void tensor_seti(Tensor *t, int64_t i, int64_t v);
/* fill with a seeded standard normal draw, rounded to the dtype */
void tensor_randn(Tensor *t, uint64_t seed);
/* a quarter special values (NaN, inf, -0, subnormals, fp8 boundaries, huge),
 * a quarter normal values scaled by 2^-20 .. 2^19, the rest normal */
void tensor_special(Tensor *t, uint64_t seed);

/* ---- interp.c: the reference interpreter ---- */

/* Evaluate fn on inputs (one per parameter, matching dtype and shape).
 * outs[i] receives a new tensor for return value i, named after it.
 * Returns false and writes a message if an input does not match. */
bool ir_interpret(Func *fn, Tensor **inputs, Tensor **outs, char *err, size_t errlen);
/* The same over nranks ranks at once, in lockstep: rank r's inputs are
 * inputs[r * nparams ..], its outputs outs[r * nrets ..]. A collective
 * combines the ranks' operands (docs/ir.md, "Collectives"): reductions in
 * rank order in f64 (int64), rounded once; max and min drop NaN as NCCL's
 * do. A collective over another number of ranks is an error. */
bool ir_interpret_ranks(Func *fn, int nranks, Tensor **inputs, Tensor **outs, char *err, size_t errlen);

/* After the last ir_interpret(_ranks): how many elements of float sums and
 * products could have other bits in another order of their terms (the f64
 * accumulation rounds on these inputs, docs/design.md "Numbers"), and in
 * *first the value of the first. 0 when every one is order-independent. */
int64_t ir_interp_order_dependent(uint32_t *first);

/* A host implementation of an extern for the interpreter (tests, and
 * programs whose externs have one): computes outs (allocated, of the
 * results' types) from ins, the call's tensor operands. false and a message
 * on failure. ir_register_extern replaces an earlier one of the same name;
 * at most 64 names. */
typedef bool IrExternFn(const Extern *e, Tensor **ins, int nins, Tensor **outs, int nouts, char *err, size_t errlen);
void ir_register_extern(const char *name, IrExternFn *fn);

/* one elementwise op on Python numbers: t F64 for floats, I64 for ints */
double ir_eval_scalar(Op op, const double *x, int n, DType t);

#endif
