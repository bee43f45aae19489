/* irparse.c — reads the IR text that ir/print.c writes (docs/ir.md).
 *
 * A hand-written lexer over the source with line and column, and one parse
 * function per grammar rule. Value names are resolved through a hash table;
 * a name of digits only is a bare id and stays unnamed. Each instruction is
 * checked by the verifier as it is read, so errors point at its line. */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdnoreturn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"
#include "ident.h"

enum { T_EOF, T_NAME, T_VAL, T_GLOBAL, T_NUM, T_PUNCT, T_ARROW };

typedef struct {
	int kind;
	const char *s; /* text of the token */
	size_t n;
	uint32_t line, col;
} Tok;

typedef struct {
	const Source *src;
	Func *fn;
	const char *p;
	uint32_t line;
	const char *bol; /* beginning of the current line */
	Tok t;           /* current token */
	bool failed;
	jmp_buf *jb;      /* where an error unwinds to */
	uint32_t nerrors; /* reported so far (one a line, at most FE_MAXERRORS) */
	uint32_t errline; /* the line of the last one */
	Map names;        /* value names -> ids (POISON: its instruction failed) */
	uint32_t nslots;  /* state slots named so far, + 1 */
} P;

/* the id of a name whose instruction failed: a use of it fails quietly
 * (the instruction's own error said it all) */
#define POISON UINT32_MAX

/* one error a line (what follows on a line that failed is noise), and at
 * most FE_MAXERRORS a file */
static noreturn void
err(P *p, const Tok *t, const char *fmt, ...)
{
	va_list ap;

	if ((!p->nerrors || t->line != p->errline) && p->nerrors < FE_MAXERRORS) {
		va_start(ap, fmt);
		fe_verror(p->src, t->line, t->col, fmt, ap);
		va_end(ap);
		p->nerrors++;
		p->errline = t->line;
	}
	p->failed = true;
	longjmp(*p->jb, 1);
}

/* give up what is being read without a message: it uses a name that an
 * earlier error left undefined */
static noreturn void
quiet(P *p)
{
	p->failed = true;
	longjmp(*p->jb, 1);
}

static bool
isname(int c)
{
	return isalnum(c) || c == '_' || c == '.';
}

static void
skip_space(P *p)
{
	for (;;) {
		if (*p->p == '\n') {
			p->p++;
			p->line++;
			p->bol = p->p;
		} else if (*p->p == ' ' || *p->p == '\t' || *p->p == '\r') {
			p->p++;
		} else if (*p->p == ';' || *p->p == '#') {
			while (*p->p && *p->p != '\n')
				p->p++;
		} else {
			return;
		}
	}
}

static void
next(P *p)
{
	const char *s;

	skip_space(p);
	s = p->p;
	p->t = (Tok){ T_PUNCT, s, 1, p->line, (uint32_t)(s - p->bol) + 1 };
	if (!*s) {
		p->t.kind = T_EOF;
		p->t.n = 0;
		return;
	}
	if ((*s == '%' || *s == '@') && isname((unsigned char)s[1])) {
		p->t.kind = *s == '%' ? T_VAL : T_GLOBAL;
		for (s++; isname((unsigned char)*s); s++)
			;
	} else if (*s == '-' && s[1] == '>') {
		p->t.kind = T_ARROW;
		s += 2;
	} else if (isdigit((unsigned char)*s) || *s == '-' || *s == '+') {
		p->t.kind = T_NUM;
		for (s++; isalnum((unsigned char)*s) || *s == '.' || *s == '+' || *s == '-'; s++)
			if ((*s == '+' || *s == '-') && s[-1] != 'e' && s[-1] != 'E')
				break;
	} else if (isalpha((unsigned char)*s) || *s == '_') {
		p->t.kind = T_NAME;
		for (s++; isname((unsigned char)*s); s++)
			;
	} else {
		s++;
	}
	p->t.n = (size_t)(s - p->t.s);
	p->p = s;
}

static bool
is(P *p, const char *punct)
{
	return p->t.n == strlen(punct) && memcmp(p->t.s, punct, p->t.n) == 0 && p->t.kind != T_VAL &&
		p->t.kind != T_GLOBAL;
}

static void
expect(P *p, const char *punct)
{
	if (!is(p, punct))
		err(p, &p->t, "expected '%s'", punct);
	next(p);
}

/* ---- names ---- */

/* bind the value token's name to id; the value keeps it unless it is all digits */
static void
define(P *p, const Tok *t, uint32_t id)
{
	const char *name;
	size_t i;

	if (map_getn(&p->names, t->s + 1, t->n - 1))
		err(p, t, "'%.*s' is defined twice", (int)t->n, t->s);
	name = arena_strndup(p->fn->arena, t->s + 1, t->n - 1);
	map_put(p->fn->arena, &p->names, name, id);
	for (i = 1; i < t->n && isdigit((unsigned char)t->s[i]); i++)
		;
	p->fn->vals[id].name = i == t->n ? NULL : name;
}

/* ref := "%" NAME */
static void
ref(P *p, uint32_t *id)
{
	uint32_t *v;

	if (p->t.kind != T_VAL)
		err(p, &p->t, "expected a value (%%name)");
	if (!(v = map_getn(&p->names, p->t.s + 1, p->t.n - 1)))
		err(p, &p->t, "'%.*s' is not defined", (int)p->t.n, p->t.s);
	if (*v == POISON)
		quiet(p);
	*id = *v;
	next(p);
}

/* ---- types ---- */

static void
integer(P *p, int64_t *v)
{
	char *end;

	if (p->t.kind != T_NUM)
		err(p, &p->t, "expected an integer");
	errno = 0;
	*v = strtoll(p->t.s, &end, 10);
	if (end != p->t.s + p->t.n || errno)
		err(p, &p->t, "bad integer '%.*s'", (int)p->t.n, p->t.s);
	next(p);
}

/* ints := open [INT {"," INT}] close */
static void
ints(P *p, const char *open, const char *close, int64_t *v, int max, int *n)
{
	*n = 0;
	expect(p, open);
	while (!is(p, close)) {
		if (*n >= max)
			err(p, &p->t, "more than %d entries", max);
		if (*n)
			expect(p, ",");
		integer(p, &v[(*n)++]);
	}
	next(p);
}

/* type := DTYPE "[" dims "]" ["{" layout "}"] */
static void
type(P *p, DType *dt, int *rank, int64_t *dims, int64_t *layout, bool *haslayout)
{
	int t, n;
	Tok at = p->t;

	if (p->t.kind != T_NAME || (t = dt_lookup(p->t.s, p->t.n, 0)) < 0)
		err(p, &p->t, "unknown dtype '%.*s'", (int)p->t.n, p->t.s);
	*dt = (DType)t;
	next(p);
	ints(p, "[", "]", dims, IR_MAXRANK, rank);
	for (int i = 0; i < *rank; i++)
		if (dims[i] < 0)
			err(p, &at, "negative dimension %lld", (long long)dims[i]);
	*haslayout = is(p, "{");
	if (!*haslayout)
		return;
	at = p->t;
	ints(p, "{", "}", layout, IR_MAXRANK, &n);
	if (n != *rank)
		err(p, &at, "layout needs %d entries", *rank);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (layout[j] < 0 || layout[j] >= n || (i != j && layout[i] == layout[j]))
				err(p, &at, "layout is not a permutation");
}

static void
set_layout(Func *fn, uint32_t v, const int64_t *layout)
{
	fn->vals[v].layout = ir_push_ints(fn, layout, fn->vals[v].rank);
}

/* param := "%" NAME ":" type */
/* saved := "saved" INT — the state slot a parameter reads or an output writes */
static void
saved(P *p, int32_t *slot)
{
	char *end;
	long v;

	if (!is(p, "saved"))
		return;
	next(p);
	errno = 0;
	v = p->t.kind == T_NUM ? strtol(p->t.s, &end, 10) : -1;
	if (p->t.kind != T_NUM || errno || end != p->t.s + p->t.n || v < 0 || v > 1 << 20)
		err(p, &p->t, "expected a state slot number after 'saved'");
	*slot = (int32_t)v;
	if (v + 1 > p->nslots)
		p->nslots = (uint32_t)v + 1;
	next(p);
}

/* param := "%" NAME ":" type [saved] */
static void
param(P *p)
{
	Tok name = p->t;
	DType dt;
	int rank;
	int64_t dims[IR_MAXRANK], layout[IR_MAXRANK];
	bool hl;
	uint32_t id;

	if (name.kind != T_VAL)
		err(p, &p->t, "expected a parameter (%%name)");
	next(p);
	expect(p, ":");
	type(p, &dt, &rank, dims, layout, &hl);
	id = ir_param(p->fn, NULL, dt, rank, dims);
	if (hl)
		set_layout(p->fn, id, layout);
	saved(p, &p->fn->pslot[p->fn->nparams - 1]);
	define(p, &name, id);
}

/* ---- instructions ---- */

static void
number(P *p, double *v)
{
	char *end;
	char buf[64];

	if (p->t.kind != T_NUM && !(p->t.kind == T_NAME && (is(p, "nan") || is(p, "inf"))))
		err(p, &p->t, "expected a number");
	if (p->t.n >= sizeof buf)
		err(p, &p->t, "number too long");
	memcpy(buf, p->t.s, p->t.n);
	buf[p->t.n] = 0;
	*v = strtod(buf, &end);
	if (*end)
		err(p, &p->t, "bad number '%s'", buf);
	next(p);
}

/* instr := "%" NAME "=" OP [refs] [NUMBER] ["[" ints "]"] {FLAG} ":" type */
/* ---- externs ---- */

/* The raw text from the current token (a '(') to its matching ')', quotes
 * respected: the extern's argument list, with each %name made @k, the k-th
 * tensor, into the canonical form ir/extern.c checks. Leaves p after ')'. */
static void
ext_args(P *p, char *spec, size_t cap, uint32_t *ops, uint32_t *nops)
{
	const char *s = p->t.s + 1;
	size_t n = 0;
	int depth = 0;
	char quote = 0;

	*nops = 0;
	for (;; s++) {
		char c = *s;
		if (!c || c == '\n')
			err(p, &p->t, "extern: the argument list has no ')'");
		if (quote) {
			if (c == '\\' && s[1]) { /* an escape: both characters */
				spec[n++] = c;
				c = *++s;
			} else if (c == quote) {
				quote = 0;
			}
		} else if (c == '\'') {
			quote = c;
		} else if (c == '(') {
			depth++;
		} else if (c == ')' && depth-- == 0) {
			break;
		} else if (c == '%' && isname((unsigned char)s[1])) {
			const char *e = s + 1;
			uint32_t *v;

			while (isname((unsigned char)*e))
				e++;
			if (!(v = map_getn(&p->names, s + 1, (size_t)(e - s - 1)))) {
				Tok t = { T_VAL, s, (size_t)(e - s), p->line, (uint32_t)(s - p->bol) + 1 };

				err(p, &t, "'%.*s' is not defined", (int)(e - s), s);
			}
			if (*nops == 64)
				err(p, &p->t, "extern: more than 64 tensor arguments");
			n += (size_t)snprintf(spec + n, cap - n, "@%u", *nops);
			ops[(*nops)++] = *v;
			s = e - 1;
			continue;
		}
		if (n + 16 >= cap)
			err(p, &p->t, "extern: the argument list is too long");
		spec[n++] = c;
	}
	spec[n] = 0;
	p->p = s + 1;
	next(p);
}

/* extern := VAL {"," VAL} "=" "extern" STRING "(" args ")" ":" type {"," type}
 * — the results' names are in names[0..nres) */
static void
extern_call(P *p, const Tok *names, uint32_t nres, const Tok *optok)
{
	Func *fn = p->fn;
	Extern *e = arena_alloc(fn->arena, sizeof *e);
	char spec[4096], msg[300];
	uint32_t ops[64], nops;
	DType dts[64];
	int ranks[64];
	int64_t (*dims)[IR_MAXRANK] = arena_alloc(fn->arena, 64 * sizeof *dims), layout[IR_MAXRANK];
	bool hl;

	if (!is(p, "\""))
		err(p, &p->t, "extern: expected the callee's name in double quotes");
	const char *q = p->t.s + 1, *end = q;
	while (*end && (isname((unsigned char)*end) || *end == ':'))
		end++;
	if (*end != '"' || end == q)
		err(p, &p->t, "extern: expected the callee's name in double quotes");
	e->name = arena_strndup(fn->arena, q, (size_t)(end - q));
	p->p = end + 1;
	next(p);
	if (!is(p, "("))
		err(p, &p->t, "extern: expected '(' and the arguments");
	ext_args(p, spec, sizeof spec, ops, &nops);
	if (!ext_args_check(spec, nops, msg, sizeof msg))
		err(p, optok, "%s", msg);
	e->args = arena_strndup(fn->arena, spec, strlen(spec));
	e->nres = nres;
	expect(p, ":");
	for (uint32_t i = 0; i < nres; i++) {
		if (i)
			expect(p, ",");
		type(p, &dts[i], &ranks[i], dims[i], layout, &hl);
		if (hl)
			err(p, &p->t, "extern: results are row-major (no layout)");
	}
	if (is(p, ","))
		err(p, &p->t, "extern: %u result%s named, more types given", nres, nres == 1 ? "" : "s");
	uint32_t first = ir_extern(fn, e, ops, (int)nops, dts, ranks, (const int64_t (*)[IR_MAXRANK])dims);
	for (uint32_t i = 0; i < nres; i++) {
		Instr *in = &fn->ins[fn->nins - nres + i];

		in->line = optok->line;
		in->col = optok->col;
		define(p, &names[i], first + i);
		if (!ir_check_instr(fn, in, msg, sizeof msg))
			err(p, optok, "%s", msg);
	}
}

static void
instr(P *p, int32_t kernel)
{
	Tok name = p->t, optok;
	int op, nattr = 0, rank;
	uint32_t args[64], nargs = 0, res;
	int64_t attr[3 * IR_MAXRANK + 8], dims[IR_MAXRANK], layout[IR_MAXRANK];
	double fval = 0;
	uint8_t flags = 0;
	DType dt;
	bool hl;
	char msg[256];

	Tok names[64];
	uint32_t nres = 1;

	names[0] = name;
	next(p);
	while (is(p, ",")) { /* several results: an extern's */
		next(p);
		if (p->t.kind != T_VAL)
			err(p, &p->t, "expected a value (%%name)");
		if (nres == NELEM(names))
			err(p, &p->t, "more than %d results", (int)NELEM(names));
		names[nres++] = p->t;
		next(p);
	}
	expect(p, "=");
	optok = p->t;
	if (p->t.kind != T_NAME || (op = op_lookup(p->t.s, p->t.n)) < 0)
		err(p, &p->t, "unknown op '%.*s'", (int)p->t.n, p->t.s);
	next(p);
	if (op == OP_EXTERN && kernel >= 0)
		err(p, &optok, "an extern cannot be in a kernel");
	if (op == OP_EXTERN) {
		extern_call(p, names, nres, &optok);
		return;
	}
	if (nres > 1)
		err(p, &names[1], "only an extern has several results");
	while (p->t.kind == T_VAL) {
		if (nargs >= NELEM(args))
			err(p, &p->t, "too many operands");
		ref(p, &args[nargs++]);
		if (!is(p, ","))
			break;
		next(p);
		if (p->t.kind != T_VAL)
			err(p, &p->t, "expected a value (%%name)");
	}
	if (op == OP_FULL)
		number(p, &fval);
	if (is(p, "["))
		ints(p, "[", "]", attr, NELEM(attr), &nattr);
	for (; p->t.kind == T_NAME; next(p)) {
		if (is(p, "fast_accum"))
			flags |= IF_FAST_ACCUM;
		else if (is(p, "no_fixup"))
			flags |= IF_NO_FIXUP;
		else if (is(p, "trans_a"))
			flags |= IF_TRANS_A;
		else if (is(p, "trans_b"))
			flags |= IF_TRANS_B;
		else
			err(p, &p->t, "unknown flag '%.*s'", (int)p->t.n, p->t.s);
	}
	expect(p, ":");
	type(p, &dt, &rank, dims, layout, &hl);
	res = ir_instr(p->fn, (Op)op, args, (int)nargs, attr, nattr, dt, rank, dims);
	if (hl)
		set_layout(p->fn, res, layout);
	Instr *in = &p->fn->ins[p->fn->nins - 1];
	in->fval = fval;
	in->flags = flags;
	in->kernel = kernel;
	in->line = optok.line;
	in->col = optok.col;
	define(p, &name, res);
	if (!ir_check_instr(p->fn, in, msg, sizeof msg))
		err(p, &optok, "%s", msg);
}

/* refs := "(" [ref {"," ref}] ")" — pushed to fn->argv */
static void
refs(P *p, uint32_t *at, uint32_t *n)
{
	uint32_t id;

	*n = 0;
	*at = p->fn->nargv;
	expect(p, "(");
	while (!is(p, ")")) {
		if (*n)
			expect(p, ",");
		ref(p, &id);
		ir_push_ids(p->fn, &id, 1);
		(*n)++;
	}
	next(p);
}

typedef struct {
	const char *p, *bol;
	uint32_t line;
	Tok t;
} Mark;

static Mark
mark(P *p)
{
	return (Mark){ p->p, p->bol, p->line, p->t };
}

static void
reset(P *p, Mark m)
{
	p->p = m.p;
	p->bol = m.bol;
	p->line = m.line;
	p->t = m.t;
}

/* kernel := "kernel" "@" NAME refs "->" refs "{" {instr} "}"
 * The outputs are defined in the body: read it first, then come back. */
static void
kernel(P *p)
{
	Func *fn = p->fn;
	Kernel k = { 0 };
	int32_t idx = (int32_t)fn->nkernels;
	Mark outs, end;

	next(p);
	if (p->t.kind != T_GLOBAL)
		err(p, &p->t, "expected a kernel name (@name)");
	k.name = arena_strndup(fn->arena, p->t.s + 1, p->t.n - 1);
	next(p);
	refs(p, &k.ins, &k.nins);
	if (p->t.kind != T_ARROW)
		err(p, &p->t, "expected '->'");
	next(p);
	outs = mark(p);
	while (!is(p, "{") && p->t.kind != T_EOF)
		next(p);
	expect(p, "{");
	k.first = fn->nins;
	while (p->t.kind == T_VAL)
		instr(p, idx);
	k.count = fn->nins - k.first;
	if (k.count == 0)
		err(p, &p->t, "empty kernel");
	expect(p, "}");
	end = mark(p);
	reset(p, outs);
	refs(p, &k.outs, &k.nouts);
	if (!is(p, "{"))
		err(p, &p->t, "expected '{'");
	reset(p, end);
	arena_grow(fn->arena, (void **)&fn->kernels, &fn->capkernels, fn->nkernels + 1, sizeof k);
	fn->kernels[fn->nkernels++] = k;
}

/* the NAME after "as": digits may come first (84, 84_1: the names of
 * outputs whose value is known by its id) */
static void
out_name(P *p, const char **name)
{
	const char *s = p->t.s;

	while (isname((unsigned char)*s))
		s++;
	if (s == p->t.s || (p->t.kind != T_NAME && p->t.kind != T_NUM))
		err(p, &p->t, "expected an output name");
	*name = arena_strndup(p->fn->arena, p->t.s, (size_t)(s - p->t.s));
	p->p = s;
	next(p);
}

/* updates := "updates" ref — the parameter whose new values an output holds,
 * of the output's type */
static void
updates(P *p)
{
	Func *fn = p->fn;
	uint32_t i = fn->nrets - 1, id;
	Tok at;

	if (!is(p, "updates"))
		return;
	next(p);
	at = p->t;
	ref(p, &id);
	if (fn->vals[id].def != IR_NONE)
		err(p, &at, "'updates' names a parameter, and '%.*s' is not one", (int)at.n, at.s);
	for (uint32_t k = 0; k < fn->nparams; k++)
		if (fn->params[k] == id && fn->pslot[k] >= 0)
			err(p, &at, "'%.*s' is a state slot's, not an input: it cannot be updated", (int)at.n, at.s);
	if (fn->vals[id].dtype != fn->vals[fn->rets[i]].dtype || !ir_same_shape(fn, id, fn->rets[i]))
		err(p, &at, "output %u updates '%.*s' but has another type", i, (int)at.n, at.s);
	for (uint32_t j = 0; j < i; j++)
		if (fn->rupd[j] >= 0 && fn->params[fn->rupd[j]] == id)
			err(p, &at, "'%.*s' is updated by two outputs", (int)at.n, at.s);
	for (uint32_t k = 0; k < fn->nparams; k++)
		if (fn->params[k] == id)
			ir_set_ret_update(fn, i, (int32_t)k);
}

/* ret := "return" [out {"," out}]; out := ref ["as" NAME] [saved] [updates] */
static void
ret(P *p)
{
	uint32_t id;
	const char *name;

	next(p);
	while (p->t.kind == T_VAL) {
		ref(p, &id);
		name = NULL;
		if (is(p, "as")) {
			next(p);
			out_name(p, &name);
		}
		ir_return(p->fn, id, name);
		saved(p, &p->fn->rslot[p->fn->nrets - 1]);
		updates(p);
		if (!is(p, ","))
			break;
		next(p);
	}
}

/* After an instruction that failed: the names it was to define poisoned,
 * then on to the next line, so that the rest of the function is read and
 * its errors reported too. */
static void
recover(P *p, Mark start)
{
	uint32_t line = start.t.line;

	reset(p, start);
	while (p->t.kind == T_VAL && p->t.line == line) {
		if (!map_getn(&p->names, p->t.s + 1, p->t.n - 1))
			map_put(p->fn->arena, &p->names, arena_strndup(p->fn->arena, p->t.s + 1, p->t.n - 1), POISON);
		next(p);
		if (!is(p, ","))
			break;
		next(p);
	}
	while (p->t.kind != T_EOF && p->t.line == line)
		next(p);
}

/* func := "func" "@" NAME "(" [param {"," param}] ")" "{" {instr | kernel} ret "}"
 * An error in an instruction or the return is reported and the reading goes
 * on at the next line (recover): false then. An error anywhere else unwinds
 * to the caller's recovery point. */
static bool
func(P *p)
{
	volatile bool ok = true;
	jmp_buf jb, *volatile outer = p->jb;

	if (!is(p, "func"))
		err(p, &p->t, "expected 'func'");
	next(p);
	if (p->t.kind != T_GLOBAL)
		err(p, &p->t, "expected a function name (@name)");
	if (!plan_ident(p->t.s + 1, p->t.n - 1)) /* the plan's `function NAME` is one */
		err(p, &p->t, "function name '%.*s': a letter, '_' or '$' first, then letters, digits, '_' and '$'",
			(int)p->t.n, p->t.s);
	p->fn = ir_func_new(p->fn->arena, NULL);
	p->fn->name = arena_strndup(p->fn->arena, p->t.s + 1, p->t.n - 1);
	p->names = (Map){ 0 }; /* names are the function's own */
	next(p);
	expect(p, "(");
	while (!is(p, ")")) {
		if (p->fn->nparams)
			expect(p, ",");
		param(p);
	}
	next(p);
	expect(p, "{");
	for (;;) {
		if (p->t.kind == T_VAL || is(p, "return")) {
			volatile bool last = is(p, "return");
			Mark start = mark(p);

			p->jb = &jb;
			if (setjmp(jb) == 0) {
				if (last)
					ret(p);
				else
					instr(p, -1);
			} else {
				p->jb = outer;
				if (p->nerrors >= FE_MAXERRORS)
					longjmp(*outer, 1);
				ok = false;
				recover(p, start);
			}
			p->jb = outer;
			if (last)
				break;
		} else if (is(p, "kernel")) {
			kernel(p);
		} else {
			err(p, &p->t, "expected an instruction, 'kernel' or 'return'");
		}
	}
	expect(p, "}");
	return ok;
}

bool
fe_is_ir(const Source *src)
{
	P p = { .src = src, .p = src->text, .line = 1, .bol = src->text };

	next(&p);
	return is(&p, "func");
}

/* a state slot is written by one output of one function, before any
 * function that reads it */
static void
slots_ok(P *p, Program *prog)
{
	int32_t *writer = arena_alloc(prog->arena, (prog->nslots + 1) * sizeof *writer);

	for (uint32_t k = 0; k < prog->nslots; k++)
		writer[k] = -1;
	for (uint32_t f = 0; f < prog->nfns; f++) {
		Func *fn = prog->fns[f];

		for (uint32_t i = 0; i < fn->nparams; i++)
			if (fn->pslot[i] >= 0 && (writer[fn->pslot[i]] < 0 || writer[fn->pslot[i]] == (int32_t)f))
				err(p, &p->t, "@%s reads state slot %d, which no function before it writes", fn->name,
					fn->pslot[i]);
		for (uint32_t i = 0; i < fn->nrets; i++) {
			if (fn->rslot[i] < 0)
				continue;
			if (writer[fn->rslot[i]] >= 0)
				err(p, &p->t, "state slot %d is written twice", fn->rslot[i]);
			writer[fn->rslot[i]] = (int32_t)f;
		}
	}
}

/* program := func {func}
 * A function with errors: the next one is read too (every error of the file
 * in one run), and the program is not made. */
Program *
fe_read_ir_program(Arena *a, const Source *src)
{
	P p = { .src = src, .p = src->text, .line = 1, .bol = src->text };
	Func dummy = { .arena = a };
	Program *prog = ir_program_new(a);
	char msg[256];
	uint32_t pos;
	jmp_buf jb;

	if (memchr(src->text, 0, src->len)) {
		fe_error(src, 1, 1, "binary data in the input");
		return NULL;
	}
	p.fn = &dummy;
	p.jb = &jb;
	if (setjmp(jb) != 0) /* an error outside an instruction: the function is given up */
		return NULL;
	next(&p);
	do {
		if (!func(&p))
			continue;
		pos = UINT32_MAX;
		if (!ir_verify(p.fn, msg, sizeof msg, &pos)) {
			const Instr *at = pos < p.fn->nins && p.fn->ins[pos].line ? &p.fn->ins[pos] : NULL;

			fe_error(src, at ? at->line : p.t.line, at ? at->col : p.t.col, "%s", msg);
			return NULL;
		}
		ir_program_add(prog, p.fn);
	} while (is(&p, "func") && p.nerrors < FE_MAXERRORS);
	if (p.failed)
		return NULL;
	if (p.t.kind != T_EOF)
		err(&p, &p.t, "text after the function");
	prog->nslots = p.nslots;
	slots_ok(&p, prog);
	return prog;
}

Func *
fe_read_ir(Arena *a, const Source *src)
{
	Program *prog = fe_read_ir_program(a, src);

	if (prog && prog->nfns > 1) {
		fe_error(src, 1, 1, "this IR holds %u functions; expected one", prog->nfns);
		return NULL;
	}
	return prog ? prog->fns[0] : NULL;
}
