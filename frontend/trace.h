/* trace.h — the Thunder trace reader's shared types, one section per file.
 *
 * Thunder prints a trace as a Python function (docs/design.md, "Input:
 * Thunder traces"). The reader is layered, each file using only the ones
 * below it:
 *
 *   read.c    the lines: header, def, statements and their subsymbols (pass 1),
 *             then the lowering (pass 2); the entry points fe_read_trace, fe_read
 *   lower.c   symbols, statements, subsymbol frames, the return
 *   prims.c   one lowering per known callee: prims.*, torch.*, Tensor.*
 *   compose.c the prims that lower to several IR ops
 *   args.c    arguments bound to parameters, operands, building instructions
 *   parse.c   one statement's tokens into expressions; type comments
 *   lex.c     one line into tokens; errors; the input's text checks
 *
 * Errors go through tr_errat once and unwind with longjmp to the reader's
 * entry; all memory is the caller's arena.
 */
#ifndef FP8CC_TRACE_H
#define FP8CC_TRACE_H

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "dims.h"
#include "fe.h"

#define MAXDEPTH 64 /* brackets and unary minus in one expression */
#define NOSTMT   UINT32_MAX

/* ---- tokens, expressions, statements ---- */

typedef enum { T_EOF, T_NAME, T_INT, T_FLOAT, T_STR, T_PUNCT, T_COMMENT } TokKind;

typedef struct {
	TokKind kind;
	const char *p; /* spelling; T_STR: the contents, without quotes */
	uint32_t len;
	uint32_t line, col; /* where its first byte is; columns count from 1 */
	int64_t i;          /* T_INT */
	double f;           /* T_FLOAT */
} Tok;

typedef enum { E_NAME, E_INT, E_FLOAT, E_STR, E_NONE, E_BOOL, E_TUPLE, E_LIST, E_DICT, E_CALL, E_ELLIPSIS } ExprKind;

typedef struct Expr Expr;

typedef struct {
	const char *kw; /* keyword, NULL if positional */
	uint32_t kwcol;
	Expr *e;
} Arg;

struct Expr {
	ExprKind kind;
	uint32_t line, col;
	const char *s; /* E_NAME: dotted name; E_STR: contents */
	int64_t i;     /* E_INT, E_BOOL */
	double f;      /* E_FLOAT */
	Expr **elts;   /* E_TUPLE, E_LIST; E_DICT: key, value, key, ... */
	uint32_t n, cap;
	Expr *fn;  /* E_CALL: the callee, an E_NAME */
	Arg *args; /* E_CALL */
	uint32_t nargs, capargs;
};

/* a type comment: "# NAME: \"cuda:0 f32[16, 32]\"" */
typedef struct {
	bool present;
	const char *name; /* the name it types */
	uint32_t nlen, ncol;
	const char *text; /* between the quotes */
	uint32_t len;
	uint32_t col; /* column of text */
} TypeCmt;

typedef struct {
	const char *s; /* "_" for an unused output */
	uint32_t col;
	bool star; /* a def parameter *NAME */
} Name;

/* S_UNPACK: targets = NAME; S_TYPE: a type comment on a line of its own;
 * S_ERROR: a line that had an error, with the names it would have defined */
typedef enum { S_CALL, S_DEL, S_RETURN, S_UNPACK, S_TYPE, S_ERROR } StmtKind;

typedef struct {
	StmtKind kind;
	uint32_t line, col; /* the first token */
	int depth;          /* 0: the body; d > 0: a subsymbol, indented 2*(d+1) */
	uint32_t end;       /* index of the first statement after its subsymbols */
	Name *names;        /* S_CALL, S_UNPACK: the left side, flattened; S_DEL: the names deleted */
	uint32_t nnames, capnames;
	bool tuple;  /* the left side is a tuple: "a, = x", "(a, b) = f(...)" */
	bool broken; /* one of its subsymbol lines had an error */
	Expr *e;     /* S_CALL: the call; S_RETURN: the value; S_UNPACK: the collection's name */
	TypeCmt ty;
} Stmt;

/* ---- symbols ---- */

typedef struct {
	DType dt;
	int rank;
	int64_t d[IR_MAXRANK];
	bool dtensor; /* tr_parse_type: the comment says "DTensor ..." (a global type) */
} Type;

/* SYM_NUM: a Python number, known (val IR_NONE) or a rank-0 value; SYM_COLL:
 * a collection to unpack; SYM_UNTYPED: unpacked without a type; SYM_PYNONE:
 * None unpacked; SYM_ERR: left undefined by an error */
typedef enum {
	SYM_NONE,
	SYM_VAL,
	SYM_OBJ,
	SYM_DEL,
	SYM_LOCAL,
	SYM_NUM,
	SYM_COLL,
	SYM_UNTYPED,
	SYM_PYNONE,
	SYM_ERR
} SymKind;

/* a tensor handed to a constructor, under the name it was passed as */
typedef struct {
	uint32_t v;
	const char *name;
} Saved;

typedef struct {
	const char *name;
	SymKind kind;
	uint32_t val;      /* SYM_VAL: the value id; SYM_NUM: the value, or IR_NONE for a constant */
	double num;        /* SYM_NUM: the constant */
	char numkind;      /* SYM_NUM: 'f' float, 'i' int, 'b' bool */
	const PyObj *coll; /* SYM_COLL: its members, NULL if unknown */
	bool top;          /* SYM_COLL: a parameter (members match --signature by position too) */
	uint32_t line;     /* SYM_DEL: the del; SYM_LOCAL, SYM_OBJ, SYM_UNTYPED: the defining statement */
	const char *owner; /* SYM_LOCAL: callee whose subsymbols defined it; SYM_OBJ: constructor;
	                         SYM_UNTYPED, SYM_PYNONE: the collection */
	Saved *objv;       /* SYM_OBJ: tensors passed to the constructor */
	uint32_t nobjv;
	uint64_t stamp;      /* when it was last (re)defined */
	bool keep;           /* scratch: an output of the frame being closed */
	const Type *dglobal; /* SYM_VAL: a DTensor's global type (val is its local shard: dtensor.c) */
} Sym;

typedef struct {
	uint32_t sym;
	Sym old; /* the symbol before this definition */
} LogEnt;

/* a statement whose subsymbols are being lowered (NOSTMT: the body) */
typedef struct {
	uint32_t stmt;
	uint32_t next;    /* the next subsymbol to lower */
	uint32_t logmark; /* r->nlog when it began */
	uint64_t stamp;   /* stamps from here on were defined inside */
} Frame;

/* an input the trace updates in place (batch_norm's running statistics,
 * copy_): its new value becomes an output of its own. name: the trace's
 * name that copy_ rebound to val (NULL for batch_norm) */
typedef struct {
	uint32_t param, val;
	const char *name;
} Update;

/* a diagnostic, kept until the end */
typedef struct {
	uint32_t line;
	const char *text;
} Diag;

enum { L_HEADER, L_BODY };

typedef struct {
	Arena *a;
	const Source *src;
	jmp_buf abort; /* too many errors, or nothing to go on with */
	jmp_buf *jb;   /* where an error goes on: the line, the statement */
	int nerrors;
	Diag *diags;
	uint32_t ndiags, capdiags;
	bool quiet; /* errors unwind but are not said (a second look at a bad line) */
	bool cpu_noted;
	bool offload_noted;   /* offload_to_cpu / load_to_gpu said they stay on the GPU */
	bool redop_noted;     /* a reduction named by its printed object taken as SUM */
	bool dtensor_noted;   /* DTensors said to be their local shards */
	const Type *dpending; /* construct_dtensor's global type, for its result's name */
	FeLink *link;         /* the program this trace is part of, or NULL */
	Func *fn;

	/* pass 1 */
	int state;       /* L_HEADER, L_BODY */
	uint32_t lineno; /* the line being read */
	const char *lp;  /* its text */
	uint32_t llen;
	uint32_t lastline, lastlen; /* the last non-blank line */
	Tok *toks;                  /* its tokens, ending in T_EOF */
	uint32_t ntoks, captoks, pos;
	int depth; /* expression nesting while parsing */
	const char *fname;
	Name *params;
	uint32_t nparams, capparams, defline;
	TypeCmt *ptypes; /* one per parameter */
	uint32_t *ptypeline;
	uint32_t nextparam;         /* the parameter after the one the last type comment typed */
	uint32_t strparam, strline; /* 1 + the parameter a bare '# "sum"' may type, and its line */
	Stmt *stmts;
	uint32_t nstmts, capstmts;
	uint32_t *open; /* statements whose subsymbols may still follow */
	uint32_t nopen, capopen;
	bool returned;
	bool pending;   /* the statement's line ended in a backslash */
	bool skipping;  /* the rest of a statement that had an error */
	int pend_depth; /* the depth and first line of the statement being read */
	uint32_t pend_line;

	/* pass 2 */
	Sym *syms;
	uint32_t nsyms, capsyms;
	Map symmap; /* name -> index in syms */
	Map vnames; /* value names in use */
	LogEnt *log;
	uint32_t nlog, caplog;
	uint64_t stamp;
	Frame *frames;
	uint32_t nframes, capframes;
	uint32_t top;       /* the statement of the body being lowered */
	const Stmt *cur;    /* the statement being lowered */
	const char *callee; /* its callee */
	uint32_t ccol;      /* its callee's column */
	Sym *num;           /* a lowering whose result is a Python number sets it here */
	uint32_t multi[64]; /* a lowering with several results sets them here */
	int nmulti;
	Update *updates; /* inputs updated in place, in order */
	uint32_t nupdates, capupdates;
	Map reported;   /* callees that could not be lowered, said once */
	Map externs;    /* callees that became externs, said once */
	bool backward;  /* the trace takes collections (saved_for_backward, cotangents) */
	uint32_t ncoll; /* collection parameters so far */
	bool lost;      /* an output was left undefined by an error */
} Reader;

#define GROW(r, arr, cap, need) arena_grow((r)->a, (void **)&(arr), &(cap), (need), sizeof *(arr))

/* an operand of an elementwise op: a tensor, a Python number written or
 * known (e), or a Python number known at run time (num: v is its rank-0 value) */
typedef struct {
	const Expr *e;
	bool tensor, num;
	uint32_t v;
} Opnd;

/* a parameter of a known callee; "a|input" accepts either keyword */
typedef struct {
	const char *name;
	bool opt;
} Param;

/* a tuple or list of at most IR_MAXRANK ints, with their columns */
typedef struct {
	int n;
	int64_t v[IR_MAXRANK];
	const Expr *e[IR_MAXRANK];
	const Expr *list;
} Ints;

typedef uint32_t (*Lower)(Reader *r, const Expr *c, Op op);

static inline bool
isname0(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static inline bool
isdig(int c)
{
	return c >= '0' && c <= '9';
}
static inline bool
isname1(int c)
{
	return isname0(c) || isdig(c);
}
static inline bool
ispunct_(const Tok *t, char c)
{
	return t->kind == T_PUNCT && t->p[0] == c;
}

/* ---- lex.c ---- */
noreturn void tr_errat(Reader *r, uint32_t line, uint32_t col, const char *fmt, ...);
noreturn void tr_silent(Reader *r);
void tr_note(Reader *r, uint32_t line, uint32_t col, const char *fmt, ...);
void tr_flush(Reader *r);
const char *tr_tystr(const Type *t, char *buf, size_t n);
void tr_vtype(Func *fn, uint32_t v, Type *t);
bool tr_same_shape(const Type *a, const Type *b);
bool tr_check_text(const Source *src);
bool tr_lex_line(Reader *r, uint32_t start, bool more);
void tr_check_brackets(Reader *r);

/* ---- parse.c ---- */
Tok *tr_peek(Reader *r);
bool tr_equal(Reader *r, char c);
bool tr_consume(Reader *r, char c);
noreturn void tr_unexpected(Reader *r, const char *what);
void tr_expect(Reader *r, char c);
void tr_push_elt(Reader *r, Expr *e, Expr *x);
const Expr *tr_rest_args(Reader *r, const Expr *c, uint32_t k, Expr *list);
bool tr_match_typecmt(const char *p, uint32_t n, uint32_t col0, TypeCmt *ty);
void tr_parse_stmt(Reader *r, Stmt *s);
void tr_check_numel(Reader *r, uint32_t line, uint32_t col, const Type *t);
void tr_parse_type(Reader *r, uint32_t line, const TypeCmt *tc, Type *t, uint32_t *dtcol, uint32_t *shcol);

/* ---- scope.c ---- */
Sym *tr_lookup(Reader *r, const Expr *e);                            /* errors for undefined, deleted, local, untyped */
Sym *tr_sym(Reader *r, const char *name);                            /* the symbol, if any; no errors */
void tr_define(Reader *r, const char *name, Sym s);                  /* (re)define; logged inside a frame */
void tr_define_val(Reader *r, const char *name, uint32_t v);         /* tr_define of a tensor */
noreturn void tr_refuse(Reader *r, const Stmt *s, const char *what); /* once per callee, with its count */

/* ---- lower.c ---- */
void tr_update(Reader *r, uint32_t to, uint32_t val, const char *name);
void tr_add_params(Reader *r);
void tr_lower_body(Reader *r);
void tr_wait_all(Reader *r); /* a wait for every collective the trace leaves without one */
uint32_t tr_new_param(Reader *r, const char *name, const Type *t);

/* ---- args.c ---- */
uint32_t tr_tensor(Reader *r, const Expr *e);
const Expr *tr_resolve(Reader *r, const Expr *e);
Opnd tr_operand(Reader *r, const Expr *e);
DType tr_vdtype(Reader *r, uint32_t v);
DType tr_number_dtype(char kind);
double tr_scalar_in(Reader *r, const Expr *e, DType t);
bool tr_exact_in(Reader *r, const Expr *e, DType t);
void tr_check_last(Reader *r);
uint32_t tr_emit(Reader *r, Op op, const uint32_t *args, int nargs, const int64_t *attr, int nattr, const Type *t);
uint32_t tr_konst(Reader *r, double x, DType t);
uint32_t tr_convert(Reader *r, uint32_t v, DType t);
void tr_bind(Reader *r, const Expr *c, const Param *ps, int np, const Expr **out);
bool tr_isnone(const Expr *e);
const char *tr_name_of(const Expr *e);
DType tr_dtype_arg(Reader *r, const Expr *e);
bool tr_bool_arg(Reader *r, const Expr *e, bool dflt);
int64_t tr_int_arg(Reader *r, const Expr *e, const char *what);
void tr_ints(Reader *r, const Expr *e, const char *what, bool one, Ints *out);
void tr_shape_arg(Reader *r, const Expr *e, bool infer, Ints *s);
int64_t tr_norm_dim(Reader *r, const Expr *e, int64_t d, int rank);
void tr_dims_arg(Reader *r, const Expr *e, int rank, Ints *d);
void tr_drop_dims(Type *t, const Ints *d);

/* ---- compose.c ---- */
uint32_t tr_un(Reader *r, Op op, uint32_t x);                              /* a unary op in x's type */
uint32_t tr_bin(Reader *r, Op op, uint32_t x, uint32_t y);                 /* the shape of the one not rank 0 */
uint32_t tr_reduce(Reader *r, Op op, uint32_t x, const Ints *d);           /* x's type without d's dims */
uint32_t tr_unreduce(Reader *r, uint32_t v, uint32_t like, const Ints *d); /* v back in like's shape */
uint32_t tr_lower_var_mean(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_var(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_argmax(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_index_copy(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_unfold(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_topk(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_sort(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_setitem(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_lerp(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_scatter(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_index_add(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_index_put(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_batch_norm(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_embedding(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_embedding_backward(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_linear(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_matmul(Reader *r, const Expr *c, Op op);

/* ---- prims.c ---- */
Lower tr_find_known(const char *name, Op *op);
uint32_t tr_elementwise(Reader *r, Op op, const Opnd *o, int n);
uint32_t tr_transpose_by(Reader *r, uint32_t x, const Ints *p);
uint32_t tr_lower_identity(Reader *r, const Expr *c, Op op);
const char *tr_unsupported_why(const char *callee);

/* ---- promote.c, tshape.c, tnn.c: torch's functions, for calls without subsymbols ---- */
Lower tr_find_torch(const char *name, Op *op);       /* any of these */
Lower tr_find_torch_shape(const char *name, Op *op); /* shape and creation functions, tnn.c's */
uint32_t tr_lower_gelu(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_softmax(Reader *r, const Expr *c, Op op); /* op: OP_DIV softmax, OP_LOG log_softmax */
uint32_t tr_lower_norm(Reader *r, const Expr *c, Op op);    /* op: OP_SUB layer_norm, OP_MUL rms_norm */

/* ---- dtensor.c ---- */
uint32_t tr_dtensor_name(Reader *r, const char *name, const Type *global, uint32_t line, uint32_t col, uint32_t v);
uint32_t tr_lower_dtensor_inner(Reader *r, const Expr *c, Op op);
uint32_t tr_lower_construct_dtensor(Reader *r, const Expr *c, Op op);

/* ---- externs.c ---- */
bool tr_extern_callee(const char *callee); /* may be an extern call (not prims.X, not refused) */
/* an extern call's results: tensors, Python ints, None (an executor op's
 * meta gives these when the trace does not type them) */
#define EXT_MAXRES 16
typedef struct {
	int n;
	char kind[EXT_MAXRES];  /* 't' tensor, 'i' int, 'n' None */
	uint32_t v[EXT_MAXRES]; /* 't': the value */
	int64_t i[EXT_MAXRES];  /* 'i': the number */
} ExtRes;
void tr_lower_extern(Reader *r, const Stmt *s, ExtRes *res);

#endif
