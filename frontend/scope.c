/* scope.c — the trace reader's names: the symbol table (what each name of
 * the trace means at this point of the lowering, with the frames of
 * subsymbols logged so they can be undone), lookups that report undefined,
 * deleted, local and untyped names, and the refusal of a callee, said once.
 * Below every lowering file (args.c, prims.c, externs.c, lower.c), which
 * all call it; it calls none of them. */
#include "trace.h"

static Sym *
sym_find(Reader *r, const char *name)
{
	uint32_t *i = map_get(&r->symmap, name);

	return i ? &r->syms[*i] : NULL;
}

static uint32_t
sym_intern(Reader *r, const char *name)
{
	uint32_t *i = map_get(&r->symmap, name);

	if (i)
		return *i;
	GROW(r, r->syms, r->capsyms, r->nsyms + 1);
	memset(&r->syms[r->nsyms], 0, sizeof r->syms[0]);
	r->syms[r->nsyms].name = name;
	map_put(r->a, &r->symmap, name, r->nsyms);
	return r->nsyms++;
}

/* (re)define name as s; inside a frame the old meaning is logged */
void
tr_define(Reader *r, const char *name, Sym s)
{
	uint32_t i;

	if (strcmp(name, "_") == 0)
		return;
	i = sym_intern(r, name);
	if (r->nframes > 1) {
		GROW(r, r->log, r->caplog, r->nlog + 1);
		r->log[r->nlog].sym = i;
		r->log[r->nlog++].old = r->syms[i];
	}
	s.name = r->syms[i].name;
	s.stamp = ++r->stamp;
	r->syms[i] = s;
}

/* A value unpacked from a collection whose members the trace does not type:
 * say where its type can come from. */
static noreturn void
untyped(Reader *r, const Expr *e, const Sym *s)
{
	const char *coll = s->owner;
	uint32_t line = s->line, others = 0;

	for (uint32_t i = 0; i < r->nsyms; i++) /* one error for them all */
		if (r->syms[i].kind == SYM_UNTYPED && r->syms[i].line == line && r->syms[i].owner == coll) {
			others += &r->syms[i] != s;
			r->syms[i].kind = SYM_ERR;
		}
	tr_errat(r, e->line, e->col,
		"'%s' has no type: it is unpacked from '%s' at line %u, which does not type "
		"%s; give --signature FILE (a safetensors file of example inputs, by name or position)%s",
		e->s, coll, line, others ? arena_printf(r->a, "it or %u more of its members", others) : "it",
		r->backward ? " or compile the backward with its forward trace" : "");
}

/* the symbol a name refers to: errors for undefined, deleted, local and
 * untyped names; a name an earlier error left undefined gives up quietly */
Sym *
tr_lookup(Reader *r, const Expr *e)
{
	Sym *s = sym_find(r, e->s);

	if (!s || s->kind == SYM_NONE)
		tr_errat(r, e->line, e->col, "undefined name '%s'", e->s);
	if (s->kind == SYM_ERR)
		tr_silent(r);
	if (s->kind == SYM_DEL)
		tr_errat(r, e->line, e->col, "'%s' was deleted at line %u", e->s, s->line);
	if (s->kind == SYM_LOCAL)
		tr_errat(r, e->line, e->col, "'%s' is defined only inside the subsymbols of %s at line %u", e->s,
			s->owner, s->line);
	if (s->kind == SYM_UNTYPED)
		untyped(r, e, s);
	if (s->kind == SYM_PYNONE)
		tr_errat(r, e->line, e->col, "'%s' is None here (it is unpacked from '%s' at line %u)", e->s, s->owner,
			s->line);
	return s;
}

/* the symbol of a name, if it has one; no errors */
Sym *
tr_sym(Reader *r, const char *name)
{
	return sym_find(r, name);
}

/* the uses of a callee without subsymbols, in the whole trace */
static uint32_t
count_uses(Reader *r, const char *callee)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->nstmts; i++) {
		const Stmt *s = &r->stmts[i];

		n += s->kind == S_CALL && s->end == i + 1 && !strcmp(s->e->fn->s, callee);
	}
	return n;
}

/* A callee fp8cc cannot lower: said once per callee (what), with how often
 * the trace calls it; its other uses give up quietly. */
noreturn void
tr_refuse(Reader *r, const Stmt *s, const char *what)
{
	uint32_t n;

	if (map_get(&r->reported, r->callee))
		tr_silent(r);
	map_put(r->a, &r->reported, r->callee, 1);
	n = count_uses(r, r->callee);
	tr_errat(r, s->line, r->ccol, "%s%s", what,
		n > 1 ? arena_printf(r->a, " (%u uses; the others are not reported)", n) : "");
}
