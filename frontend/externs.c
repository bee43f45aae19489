/* externs.c — a call fp8cc does not compile: an executor's op that the trace
 * prints without subsymbols (attention, a loss kernel, a user's kernel)
 * becomes an extern call (docs/ir.md, "Externs"), which the application
 * supplies at run time. Its results need the trace's types; its arguments
 * are kept as the trace wrote them, tensors as operands. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

typedef struct {
	Reader *r;
	char buf[4096];
	size_t n;
	uint32_t ops[64];
	uint32_t nops;
} Spec;

static void
put(Spec *sp, const Expr *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
put(Spec *sp, const Expr *e, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(sp->buf + sp->n, sizeof sp->buf - sp->n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof sp->buf - sp->n)
		tr_errat(sp->r, e->line, e->col, "%s: the argument list is too long for an extern", sp->r->callee);
	sp->n += (size_t)k;
}

/* a Python float as the canonical form spells it: shortest round trip,
 * with "." or an exponent; inf, -inf, nan */
static void
put_float(Spec *sp, const Expr *e, double d)
{
	char b[40];

	if (isnan(d) || isinf(d)) {
		put(sp, e, "%s", isnan(d) ? "nan" : d < 0 ? "-inf" : "inf");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(b, sizeof b, "%.*g", prec, d);
		if (strtod(b, NULL) == d)
			break;
	}
	put(sp, e, "%s%s", b, strpbrk(b, ".e") ? "" : ".0");
}

static void
put_tensor(Spec *sp, const Expr *e, uint32_t v)
{
	if (sp->nops == NELEM(sp->ops))
		tr_errat(sp->r, e->line, e->col, "%s: more than %d tensor arguments for an extern", sp->r->callee,
			(int)NELEM(sp->ops));
	put(sp, e, "@%u", sp->nops);
	sp->ops[sp->nops++] = v;
}

static void value(Spec *sp, const Expr *e, int depth);

/* a name: a tensor or a number the program computes (an operand), a Python
 * number the trace knows, None, or a dotted name (torch.float32) */
static void
name(Spec *sp, const Expr *e)
{
	Reader *r = sp->r;
	Sym *s = tr_sym(r, e->s);

	if (!s || s->kind == SYM_NONE) {
		if (!strchr(e->s, '.'))
			tr_lookup(r, e);   /* undefined: says so */
		put(sp, e, "%s", e->s);
		return;
	}
	s = tr_lookup(r, e);
	switch (s->kind) {
	case SYM_VAL:
		put_tensor(sp, e, s->val);
		return;
	case SYM_NUM:
		if (s->val != IR_NONE)
			put_tensor(sp, e, s->val);
		else if (s->numkind == 'f')
			put_float(sp, e, s->num);
		else if (s->numkind == 'b')
			put(sp, e, "%s", s->num != 0 ? "True" : "False");
		else
			put(sp, e, "%lld", (long long)ir_float_to_int(s->num, DT_F64, DT_I64));
		return;
	default:
		tr_errat(r, e->line, e->col, "%s: '%s' is a Python object an extern cannot be passed", r->callee, e->s);
	}
}

static void
value(Spec *sp, const Expr *e, int depth)
{
	switch (e->kind) {
	case E_NAME: name(sp, e); return;
	case E_INT: put(sp, e, "%lld", (long long)e->i); return;
	case E_FLOAT: put_float(sp, e, e->f); return;
	case E_BOOL: put(sp, e, "%s", e->i ? "True" : "False"); return;
	case E_NONE: put(sp, e, "None"); return;
	case E_STR:
		put(sp, e, "'");
		for (const char *c = e->s; *c; c++) {
			if ((unsigned char)*c < 0x20)
				tr_errat(sp->r, e->line, e->col, "%s: a control character in a string argument", sp->r->callee);
			put(sp, e, "%s%c", *c == '\\' || *c == '\'' ? "\\" : "", *c);
		}
		put(sp, e, "'");
		return;
	case E_TUPLE: case E_LIST:
		if (depth > 16)
			tr_errat(sp->r, e->line, e->col, "%s: arguments nested too deep", sp->r->callee);
		put(sp, e, "(");
		for (uint32_t i = 0; i < e->n; i++) {
			put(sp, e, "%s", i ? ", " : "");
			value(sp, e->elts[i], depth + 1);
		}
		put(sp, e, "%s)", e->n == 1 ? "," : "");
		return;
	case E_DICT: case E_CALL:
		tr_errat(sp->r, e->line, e->col, "%s: a %s argument cannot be passed to an extern", sp->r->callee,
			e->kind == E_DICT ? "dict" : "call");
	}
}

/* A call with a callee that has no subsymbols and is not fp8cc's (prims.X,
 * ltorch.X): true when it may be an extern. */
bool
tr_extern_callee(const char *callee)
{
	return strncmp(callee, "prims.", 6) != 0 && strncmp(callee, "ltorch.", 7) != 0 &&
		!tr_unsupported_why(callee);
}

/* lhs = callee(args)  # lhs: "TYPE": an extern call of one result, which
 * it returns (the caller binds it) */
uint32_t
tr_lower_extern(Reader *r, const Stmt *s)
{
	Spec *sp = arena_alloc(r->a, sizeof *sp);
	Extern *ext = arena_alloc(r->a, sizeof *ext);
	Type t;
	DType dt;
	int rank;
	int64_t (*dims)[IR_MAXRANK] = arena_alloc(r->a, sizeof *dims);
	uint32_t dtcol, shcol, v;

	sp->r = r;
	if (s->nnames == 0)
		tr_refuse(r, s, arena_printf(r->a, "'%s' has no subsymbols and returns nothing: fp8cc has no way to "
			"run it (an extern call needs results)", r->callee));
	if (s->nnames > 1 || !s->ty.present)
		tr_refuse(r, s, arena_printf(r->a, "'%s' has no subsymbols, and its result%s no type comment: an "
			"extern call needs the dtype and shape of each (Thunder printed them untyped)", r->callee,
			s->nnames > 1 ? "s have" : " has"));
	for (uint32_t i = 0; i < s->e->nargs; i++) {
		const Arg *a = &s->e->args[i];

		put(sp, a->e, "%s%s%s", i ? ", " : "", a->kw ? a->kw : "", a->kw ? "=" : "");
		value(sp, a->e, 0);
	}
	tr_parse_type(r, s->line, &s->ty, &t, &dtcol, &shcol);
	dt = t.dt;
	rank = t.rank;
	memcpy(dims[0], t.d, sizeof t.d);
	ext->name = r->callee;
	ext->args = arena_strndup(r->a, sp->buf, sp->n);
	ext->nres = 1;
	v = ir_extern(r->fn, ext, sp->ops, (int)sp->nops, &dt, &rank, (const int64_t (*)[IR_MAXRANK])dims);
	tr_check_last(r);
	return v;
}
