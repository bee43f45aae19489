/* irparse.c — reads the IR text that ir/print.c writes (docs/ir.md).
 *
 * A hand-written lexer over the source with line and column, and one parse
 * function per grammar rule. Value names are resolved through a hash table;
 * a name of digits only is a bare id and stays unnamed. Each instruction is
 * checked by the verifier as it is read, so errors point at its line. */
#include <ctype.h>
#include <errno.h>
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
static bool
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
	return false;
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

static bool
expect(P *p, const char *punct)
{
	if (!is(p, punct))
		return err(p, &p->t, "expected '%s'", punct);
	next(p);
	return true;
}

/* ---- names ---- */

/* bind the value token's name to id; the value keeps it unless it is all digits */
static bool
define(P *p, const Tok *t, uint32_t id)
{
	const char *name;
	size_t i;

	if (map_getn(&p->names, t->s + 1, t->n - 1))
		return err(p, t, "'%.*s' is defined twice", (int)t->n, t->s);
	name = arena_strndup(p->fn->arena, t->s + 1, t->n - 1);
	map_put(p->fn->arena, &p->names, name, id);
	for (i = 1; i < t->n && isdigit((unsigned char)t->s[i]); i++)
		;
	p->fn->vals[id].name = i == t->n ? NULL : name;
	return true;
}

/* ref := "%" NAME */
static bool
ref(P *p, uint32_t *id)
{
	uint32_t *v;

	if (p->t.kind != T_VAL)
		return err(p, &p->t, "expected a value (%%name)");
	if (!(v = map_getn(&p->names, p->t.s + 1, p->t.n - 1)))
		return err(p, &p->t, "'%.*s' is not defined", (int)p->t.n, p->t.s);
	if (*v == POISON)
		return p->failed = true, false;
	*id = *v;
	next(p);
	return true;
}

/* ---- types ---- */

static bool
integer(P *p, int64_t *v)
{
	char *end;

	if (p->t.kind != T_NUM)
		return err(p, &p->t, "expected an integer");
	errno = 0;
	*v = strtoll(p->t.s, &end, 10);
	if (end != p->t.s + p->t.n || errno)
		return err(p, &p->t, "bad integer '%.*s'", (int)p->t.n, p->t.s);
	next(p);
	return true;
}

/* ints := open [INT {"," INT}] close */
static bool
ints(P *p, const char *open, const char *close, int64_t *v, int max, int *n)
{
	*n = 0;
	if (!expect(p, open))
		return false;
	while (!is(p, close)) {
		if (*n >= max)
			return err(p, &p->t, "more than %d entries", max);
		if ((*n && !expect(p, ",")) || !integer(p, &v[(*n)++]))
			return false;
	}
	next(p);
	return true;
}

/* type := DTYPE "[" dims "]" ["{" layout "}"] */
static bool
type(P *p, DType *dt, int *rank, int64_t *dims, int64_t *layout, bool *haslayout)
{
	int t, n;
	Tok at = p->t;

	if (p->t.kind != T_NAME || (t = dt_lookup(p->t.s, p->t.n, 0)) < 0)
		return err(p, &p->t, "unknown dtype '%.*s'", (int)p->t.n, p->t.s);
	*dt = (DType)t;
	next(p);
	if (!ints(p, "[", "]", dims, IR_MAXRANK, rank))
		return false;
	for (int i = 0; i < *rank; i++)
		if (dims[i] < 0)
			return err(p, &at, "negative dimension %lld", (long long)dims[i]);
	*haslayout = is(p, "{");
	if (!*haslayout)
		return true;
	at = p->t;
	if (!ints(p, "{", "}", layout, IR_MAXRANK, &n))
		return false;
	if (n != *rank)
		return err(p, &at, "layout needs %d entries", *rank);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (layout[j] < 0 || layout[j] >= n || (i != j && layout[i] == layout[j]))
				return err(p, &at, "layout is not a permutation");
	return true;
}

static void
set_layout(Func *fn, uint32_t v, const int64_t *layout)
{
	fn->vals[v].layout = ir_push_ints(fn, layout, fn->vals[v].rank);
}

/* param := "%" NAME ":" type */
/* saved := "saved" INT — the state slot a parameter reads or an output writes */
static bool
saved(P *p, int32_t *slot)
{
	char *end;
	long v;

	if (!is(p, "saved"))
		return true;
	next(p);
	errno = 0;
	v = p->t.kind == T_NUM ? strtol(p->t.s, &end, 10) : -1;
	if (p->t.kind != T_NUM || errno || end != p->t.s + p->t.n || v < 0 || v > 1 << 20)
		return err(p, &p->t, "expected a state slot number after 'saved'");
	*slot = (int32_t)v;
	if (v + 1 > p->nslots)
		p->nslots = (uint32_t)v + 1;
	next(p);
	return true;
}

/* param := "%" NAME ":" type [saved] */
static bool
param(P *p)
{
	Tok name = p->t;
	DType dt;
	int rank;
	int64_t dims[IR_MAXRANK], layout[IR_MAXRANK];
	bool hl;
	uint32_t id;

	if (name.kind != T_VAL)
		return err(p, &p->t, "expected a parameter (%%name)");
	next(p);
	if (!expect(p, ":") || !type(p, &dt, &rank, dims, layout, &hl))
		return false;
	id = ir_param(p->fn, NULL, dt, rank, dims);
	if (hl)
		set_layout(p->fn, id, layout);
	if (!saved(p, &p->fn->pslot[p->fn->nparams - 1]))
		return false;
	return define(p, &name, id);
}

/* ---- instructions ---- */

static bool
number(P *p, double *v)
{
	char *end;
	char buf[64];

	if (p->t.kind != T_NUM && !(p->t.kind == T_NAME && (is(p, "nan") || is(p, "inf"))))
		return err(p, &p->t, "expected a number");
	if (p->t.n >= sizeof buf)
		return err(p, &p->t, "number too long");
	memcpy(buf, p->t.s, p->t.n);
	buf[p->t.n] = 0;
	*v = strtod(buf, &end);
	if (*end)
		return err(p, &p->t, "bad number '%s'", buf);
	next(p);
	return true;
}

/* instr := "%" NAME "=" OP [refs] [NUMBER] ["[" ints "]"] {FLAG} ":" type */
/* ---- externs ---- */

/* The raw text from the current token (a '(') to its matching ')', quotes
 * respected: the extern's argument list, with each %name made @k, the k-th
 * tensor, into the canonical form ir/extern.c checks. Leaves p after ')'. */
static bool
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
			return err(p, &p->t, "extern: the argument list has no ')'");
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

				return err(p, &t, "'%.*s' is not defined", (int)(e - s), s);
			}
			if (*nops == 64)
				return err(p, &p->t, "extern: more than 64 tensor arguments");
			n += (size_t)snprintf(spec + n, cap - n, "@%u", *nops);
			ops[(*nops)++] = *v;
			s = e - 1;
			continue;
		}
		if (n + 16 >= cap)
			return err(p, &p->t, "extern: the argument list is too long");
		spec[n++] = c;
	}
	spec[n] = 0;
	p->p = s + 1;
	next(p);
	return true;
}

/* extern := VAL {"," VAL} "=" "extern" STRING "(" args ")" ":" type {"," type}
 * — the results' names are in names[0..nres) */
static bool
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
		return err(p, &p->t, "extern: expected the callee's name in double quotes");
	const char *q = p->t.s + 1, *end = q;
	while (*end && (isname((unsigned char)*end) || *end == ':'))
		end++;
	if (*end != '"' || end == q)
		return err(p, &p->t, "extern: expected the callee's name in double quotes");
	e->name = arena_strndup(fn->arena, q, (size_t)(end - q));
	p->p = end + 1;
	next(p);
	if (!is(p, "("))
		return err(p, &p->t, "extern: expected '(' and the arguments");
	if (!ext_args(p, spec, sizeof spec, ops, &nops))
		return false;
	if (!ext_args_check(spec, nops, msg, sizeof msg))
		return err(p, optok, "%s", msg);
	e->args = arena_strndup(fn->arena, spec, strlen(spec));
	e->nres = nres;
	if (!expect(p, ":"))
		return false;
	for (uint32_t i = 0; i < nres; i++) {
		if ((i && !expect(p, ",")) || !type(p, &dts[i], &ranks[i], dims[i], layout, &hl))
			return false;
		if (hl)
			return err(p, &p->t, "extern: results are row-major (no layout)");
	}
	if (is(p, ","))
		return err(p, &p->t, "extern: %u result%s named, more types given", nres, nres == 1 ? "" : "s");
	uint32_t first = ir_extern(fn, e, ops, (int)nops, dts, ranks, (const int64_t (*)[IR_MAXRANK])dims);
	for (uint32_t i = 0; i < nres; i++) {
		Instr *in = &fn->ins[fn->nins - nres + i];

		in->line = optok->line;
		in->col = optok->col;
		if (!define(p, &names[i], first + i))
			return false;
		if (!ir_check_instr(fn, in, msg, sizeof msg))
			return err(p, optok, "%s", msg);
	}
	return true;
}

static bool
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
			return err(p, &p->t, "expected a value (%%name)");
		if (nres == NELEM(names))
			return err(p, &p->t, "more than %d results", (int)NELEM(names));
		names[nres++] = p->t;
		next(p);
	}
	if (!expect(p, "="))
		return false;
	optok = p->t;
	if (p->t.kind != T_NAME || (op = op_lookup(p->t.s, p->t.n)) < 0)
		return err(p, &p->t, "unknown op '%.*s'", (int)p->t.n, p->t.s);
	next(p);
	if (op == OP_EXTERN && kernel >= 0)
		return err(p, &optok, "an extern cannot be in a kernel");
	if (op == OP_EXTERN)
		return extern_call(p, names, nres, &optok);
	if (nres > 1)
		return err(p, &names[1], "only an extern has several results");
	while (p->t.kind == T_VAL) {
		if (nargs >= NELEM(args))
			return err(p, &p->t, "too many operands");
		if (!ref(p, &args[nargs++]))
			return false;
		if (!is(p, ","))
			break;
		next(p);
		if (p->t.kind != T_VAL)
			return err(p, &p->t, "expected a value (%%name)");
	}
	if (op == OP_FULL && !number(p, &fval))
		return false;
	if (is(p, "[") && !ints(p, "[", "]", attr, NELEM(attr), &nattr))
		return false;
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
			return err(p, &p->t, "unknown flag '%.*s'", (int)p->t.n, p->t.s);
	}
	if (!expect(p, ":") || !type(p, &dt, &rank, dims, layout, &hl))
		return false;
	res = ir_instr(p->fn, (Op)op, args, (int)nargs, attr, nattr, dt, rank, dims);
	if (hl)
		set_layout(p->fn, res, layout);
	Instr *in = &p->fn->ins[p->fn->nins - 1];
	in->fval = fval;
	in->flags = flags;
	in->kernel = kernel;
	in->line = optok.line;
	in->col = optok.col;
	if (!define(p, &name, res))
		return false;
	if (!ir_check_instr(p->fn, in, msg, sizeof msg))
		return err(p, &optok, "%s", msg);
	return true;
}

/* refs := "(" [ref {"," ref}] ")" — pushed to fn->argv */
static bool
refs(P *p, uint32_t *at, uint32_t *n)
{
	uint32_t id;

	*n = 0;
	*at = p->fn->nargv;
	if (!expect(p, "("))
		return false;
	while (!is(p, ")")) {
		if ((*n && !expect(p, ",")) || !ref(p, &id))
			return false;
		ir_push_ids(p->fn, &id, 1);
		(*n)++;
	}
	next(p);
	return true;
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
static bool
kernel(P *p)
{
	Func *fn = p->fn;
	Kernel k = { 0 };
	int32_t idx = (int32_t)fn->nkernels;
	Mark outs, end;

	next(p);
	if (p->t.kind != T_GLOBAL)
		return err(p, &p->t, "expected a kernel name (@name)");
	k.name = arena_strndup(fn->arena, p->t.s + 1, p->t.n - 1);
	next(p);
	if (!refs(p, &k.ins, &k.nins) || (p->t.kind != T_ARROW && !err(p, &p->t, "expected '->'")))
		return false;
	next(p);
	outs = mark(p);
	while (!is(p, "{") && p->t.kind != T_EOF)
		next(p);
	if (!expect(p, "{"))
		return false;
	k.first = fn->nins;
	while (p->t.kind == T_VAL)
		if (!instr(p, idx))
			return false;
	k.count = fn->nins - k.first;
	if (k.count == 0)
		return err(p, &p->t, "empty kernel");
	if (!expect(p, "}"))
		return false;
	end = mark(p);
	reset(p, outs);
	if (!refs(p, &k.outs, &k.nouts))
		return false;
	if (!is(p, "{"))
		return err(p, &p->t, "expected '{'");
	reset(p, end);
	arena_grow(fn->arena, (void **)&fn->kernels, &fn->capkernels, fn->nkernels + 1, sizeof k);
	fn->kernels[fn->nkernels++] = k;
	return true;
}

/* the NAME after "as": digits may come first (84, 84_1: the names of
 * outputs whose value is known by its id) */
static bool
out_name(P *p, const char **name)
{
	const char *s = p->t.s;

	while (isname((unsigned char)*s))
		s++;
	if (s == p->t.s || (p->t.kind != T_NAME && p->t.kind != T_NUM))
		return err(p, &p->t, "expected an output name");
	*name = arena_strndup(p->fn->arena, p->t.s, (size_t)(s - p->t.s));
	p->p = s;
	next(p);
	return true;
}

/* ret := "return" [out {"," out}]; out := ref ["as" NAME] [saved] */
static bool
ret(P *p)
{
	uint32_t id;
	const char *name;

	next(p);
	while (p->t.kind == T_VAL) {
		if (!ref(p, &id))
			return false;
		name = NULL;
		if (is(p, "as")) {
			next(p);
			if (!out_name(p, &name))
				return false;
		}
		ir_return(p->fn, id, name);
		if (!saved(p, &p->fn->rslot[p->fn->nrets - 1]))
			return false;
		if (!is(p, ","))
			break;
		next(p);
	}
	return true;
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

/* func := "func" "@" NAME "(" [param {"," param}] ")" "{" {instr | kernel} ret "}" */
static bool
func(P *p)
{
	bool ok = true;

	if (!is(p, "func"))
		return err(p, &p->t, "expected 'func'");
	next(p);
	if (p->t.kind != T_GLOBAL)
		return err(p, &p->t, "expected a function name (@name)");
	if (!plan_ident(p->t.s + 1, p->t.n - 1)) /* the plan's `function NAME` is one */
		return err(p, &p->t,
			"function name '%.*s': a letter, '_' or '$' first, then letters, digits, '_' and '$'",
			(int)p->t.n, p->t.s);
	p->fn = ir_func_new(p->fn->arena, NULL);
	p->fn->name = arena_strndup(p->fn->arena, p->t.s + 1, p->t.n - 1);
	p->names = (Map){ 0 }; /* names are the function's own */
	next(p);
	if (!expect(p, "("))
		return false;
	while (!is(p, ")"))
		if ((p->fn->nparams && !expect(p, ",")) || !param(p))
			return false;
	next(p);
	if (!expect(p, "{"))
		return false;
	for (;;) {
		if (p->t.kind == T_VAL) {
			Mark start = mark(p);

			if (!instr(p, -1)) {
				if (p->nerrors >= FE_MAXERRORS)
					return false;
				ok = false;
				recover(p, start);
			}
		} else if (is(p, "kernel")) {
			if (!kernel(p))
				return false;
		} else if (is(p, "return")) {
			Mark start = mark(p);

			if (!ret(p)) {
				if (p->nerrors >= FE_MAXERRORS)
					return false;
				ok = false;
				recover(p, start);
			}
			break;
		} else {
			return err(p, &p->t, "expected an instruction, 'kernel' or 'return'");
		}
	}
	return expect(p, "}") && ok;
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
static bool
slots_ok(P *p, Program *prog)
{
	int32_t *writer = arena_alloc(prog->arena, (prog->nslots + 1) * sizeof *writer);

	for (uint32_t k = 0; k < prog->nslots; k++)
		writer[k] = -1;
	for (uint32_t f = 0; f < prog->nfns; f++) {
		Func *fn = prog->fns[f];

		for (uint32_t i = 0; i < fn->nparams; i++)
			if (fn->pslot[i] >= 0 && (writer[fn->pslot[i]] < 0 || writer[fn->pslot[i]] == (int32_t)f))
				return err(p, &p->t, "@%s reads state slot %d, which no function before it writes",
					fn->name, fn->pslot[i]);
		for (uint32_t i = 0; i < fn->nrets; i++) {
			if (fn->rslot[i] < 0)
				continue;
			if (writer[fn->rslot[i]] >= 0)
				return err(p, &p->t, "state slot %d is written twice", fn->rslot[i]);
			writer[fn->rslot[i]] = (int32_t)f;
		}
	}
	return true;
}

/* program := func {func} */
Program *
fe_read_ir_program(Arena *a, const Source *src)
{
	P p = { .src = src, .p = src->text, .line = 1, .bol = src->text };
	Func dummy = { .arena = a };
	Program *prog = ir_program_new(a);
	char msg[256];
	uint32_t pos;

	if (memchr(src->text, 0, src->len)) {
		fe_error(src, 1, 1, "binary data in the input");
		return NULL;
	}
	p.fn = &dummy;
	next(&p);
	do {
		/* a function with errors: the next one is read too (every error
		 * of the file in one run), the program is not made */
		if (!func(&p))
			continue;
		if (!ir_verify(p.fn, msg, sizeof msg, &pos)) {
			fe_error(src, p.t.line, p.t.col, "%s", msg);
			return NULL;
		}
		ir_program_add(prog, p.fn);
	} while (is(&p, "func") && p.nerrors < FE_MAXERRORS);
	if (p.failed)
		return NULL;
	if (p.t.kind != T_EOF) {
		err(&p, &p.t, "text after the function");
		return NULL;
	}
	prog->nslots = p.nslots;
	return slots_ok(&p, prog) ? prog : NULL;
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
