/* lower.c — pass 2: the statements become IR. A callee the reader knows
 * (prims.c) becomes instructions and its subsymbols are ignored; an unknown
 * one (nvFusion0, ltorch.*) is replaced by its subsymbols, depth first, with
 * an explicit stack of frames, so nothing recurses on their nesting. A
 * tensor-subclass constructor (Float8Tensor(...)) is not computed: it makes
 * an object that remembers the tensors passed in, and those become outputs
 * when the object is saved in the return. Every value's dtype and shape is
 * what its op computes; a type comment that says otherwise is an error. */
#include "trace.h"

/* ---- a string map (names -> ids) ---- */

static uint32_t
hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* where s is, or where it would go */
static uint32_t
map_slot(const Map *m, const char *s)
{
	uint32_t i = hash(s) & (m->cap - 1);

	while (m->keys[i] && strcmp(m->keys[i], s) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint32_t *
map_get(const Map *m, const char *s)
{
	uint32_t i;

	if (m->cap == 0)
		return NULL;
	i = map_slot(m, s);
	return m->keys[i] ? &m->vals[i] : NULL;
}

static void
map_put(Arena *a, Map *m, const char *s, uint32_t v)
{
	uint32_t i;

	if (2 * (m->n + 1) > m->cap) {
		Map old = *m;

		m->cap = m->cap ? 2 * m->cap : 64;
		m->keys = arena_alloc(a, m->cap * sizeof *m->keys);
		m->vals = arena_alloc(a, m->cap * sizeof *m->vals);
		m->n = 0;
		for (uint32_t j = 0; j < old.cap; j++)
			if (old.keys[j])
				map_put(a, m, old.keys[j], old.vals[j]);
	}
	i = map_slot(m, s);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = s;
	m->vals[i] = v;
}

/* ---- symbols ---- */

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
static void
define(Reader *r, const char *name, Sym s)
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

/* the symbol a name refers to: errors for undefined, deleted and local names */
Sym *
tr_lookup(Reader *r, const Expr *e)
{
	Sym *s = sym_find(r, e->s);

	if (!s || s->kind == SYM_NONE)
		tr_errat(r, e->line, e->col, "undefined name '%s'", e->s);
	if (s->kind == SYM_DEL)
		tr_errat(r, e->line, e->col, "'%s' was deleted at line %u", e->s, s->line);
	if (s->kind == SYM_LOCAL)
		tr_errat(r, e->line, e->col, "'%s' is defined only inside the subsymbols of %s at line %u",
			e->s, s->owner, s->line);
	return s;
}

/* give value v the trace's name, made unique among value names */
static void
name_value(Reader *r, uint32_t v, const char *name)
{
	const char *n = name;

	for (int k = 1; map_get(&r->vnames, n); k++)
		n = arena_printf(r->a, "%s_%d", name, k);
	map_put(r->a, &r->vnames, n, v);
	r->fn->vals[v].name = n;
}

/* ---- statements ---- */

/* the value the type comment of s types is v, as `what` computed it */
static void
check_typecmt(Reader *r, const Stmt *s, uint32_t v, const char *what)
{
	Type want, got;
	uint32_t dtcol, shcol;
	char b1[256], b2[256];

	if (!s->ty.present)
		return;
	tr_parse_type(r, s->line, &s->ty, &want, &dtcol, &shcol);
	tr_vtype(r->fn, v, &got);
	if (want.dt != got.dt || !tr_same_shape(&want, &got))
		tr_errat(r, s->line, want.dt != got.dt ? dtcol : shcol, "type comment says %s but %s gives %s",
			tr_tystr(&want, b1, sizeof b1), what, tr_tystr(&got, b2, sizeof b2));
}

/* the lhs name the type comment names, or NULL (an error if it names none) */
static const Name *
typed_name(Reader *r, const Stmt *s)
{
	if (!s->ty.present)
		return NULL;
	for (uint32_t i = 0; i < s->nnames; i++)
		if (strlen(s->names[i].s) == s->ty.nlen && memcmp(s->names[i].s, s->ty.name, s->ty.nlen) == 0)
			return &s->names[i];
	tr_errat(r, s->line, s->ty.ncol, "type comment names '%.*s', which the statement does not define", (int)s->ty.nlen, s->ty.name);
}

/* bind the one result v of a known callee to the statement's left side */
static void
bind_result(Reader *r, const Stmt *s, uint32_t v, uint32_t nv0)
{
	Sym sym = { 0 };
	const Name *tn = typed_name(r, s);

	if (s->nnames > 1)
		tr_errat(r, s->line, s->names[1].col, "%s gives one tensor, not %u", r->callee, s->nnames);
	if (tn)
		check_typecmt(r, s, v, r->callee);
	if (s->nnames == 0 || strcmp(s->names[0].s, "_") == 0)
		return;
	if (v >= nv0 && !r->fn->vals[v].name)
		name_value(r, v, s->names[0].s);
	sym.kind = SYM_VAL;
	sym.val = v;
	define(r, s->names[0].s, sym);
}

/* collect the tensors in e, in order: names of tensors and of objects, inside
 * tuples, lists, dicts and nested calls. Unknown names are Python objects. */
static void
collect(Reader *r, const Expr *e, Saved **sv, uint32_t *n, uint32_t *cap)
{
	const Sym *s;

	switch (e->kind) {
	case E_NAME:
		s = sym_find(r, e->s);
		if (!s || s->kind == SYM_NONE)
			return;
		s = tr_lookup(r, e);
		for (uint32_t i = 0; i < (s->kind == SYM_OBJ ? s->nobjv : 1); i++) {
			GROW(r, *sv, *cap, *n + 1);
			(*sv)[(*n)++] = s->kind == SYM_OBJ ? s->objv[i] : (Saved){ s->val, s->name };
		}
		return;
	case E_TUPLE: case E_LIST: case E_DICT:
		for (uint32_t i = 0; i < e->n; i++)
			collect(r, e->elts[i], sv, n, cap);
		return;
	case E_CALL:
		for (uint32_t i = 0; i < e->nargs; i++)
			collect(r, e->args[i].e, sv, n, cap);
		return;
	default:
		return;
	}
}

/* Float8Tensor(data, scale, ...): an object that remembers its tensors */
static void
make_object(Reader *r, const Stmt *s)
{
	Sym sym = { 0 };
	uint32_t cap = 0;

	for (uint32_t i = 0; i < s->e->nargs; i++)
		collect(r, s->e->args[i].e, &sym.objv, &sym.nobjv, &cap);
	sym.kind = SYM_OBJ;
	sym.line = s->line;
	sym.owner = r->callee;
	for (uint32_t i = 0; i < s->nnames; i++)
		define(r, s->names[i].s, sym);
}

/* a tensor-subclass constructor: a callee whose last part is capitalized */
static bool
is_constructor(const char *name)
{
	const char *dot = strrchr(name, '.');

	name = dot ? dot + 1 : name;
	return name[0] >= 'A' && name[0] <= 'Z';
}

/* Lower a call: a known callee directly, a constructor as an object. false:
 * the callee is unknown and has subsymbols, which the caller lowers instead. */
static bool
lower_call(Reader *r, uint32_t si)
{
	const Stmt *s = &r->stmts[si];
	uint32_t nv0 = r->fn->nvals, ni0 = r->fn->nins, v;
	Op op = OP_COUNT;
	Lower f;

	r->cur = s;
	r->callee = s->e->fn->s;
	r->ccol = s->e->fn->col;
	if ((f = tr_find_known(r->callee, &op))) {
		v = f(r, s->e, op);
		for (uint32_t i = ni0; i < r->fn->nins; i++) {
			r->fn->ins[i].line = s->line;
			r->fn->ins[i].col = s->col;
		}
		bind_result(r, s, v, nv0);
		return true;
	}
	if (s->end > si + 1)
		return false;
	if (is_constructor(r->callee)) {
		make_object(r, s);
		return true;
	}
	tr_errat(r, s->line, r->ccol, "unknown callee '%s' has no subsymbols to lower it from", r->callee);
}

/* del := "del" NAME {"," NAME} */
static void
lower_del(Reader *r, const Stmt *s)
{
	Sym sym = { 0 };

	for (uint32_t i = 0; i < s->nnames; i++) {
		Expr e = { 0 };

		e.kind = E_NAME;
		e.line = s->line;
		e.col = s->names[i].col;
		e.s = s->names[i].s;
		tr_lookup(r, &e);
		sym.kind = SYM_DEL;
		sym.line = s->line;
		define(r, e.s, sym);
	}
}

/* ---- subsymbol frames ---- */

static void
push_frame(Reader *r, uint32_t stmt)
{
	Frame *f;

	GROW(r, r->frames, r->capframes, r->nframes + 1);
	f = &r->frames[r->nframes++];
	f->stmt = stmt;
	f->next = stmt == NOSTMT ? 0 : stmt + 1;
	f->logmark = r->nlog;
	f->stamp = r->stamp + 1;
}

/* the frame's outputs: every lhs name must have been defined inside; they
 * are marked keep */
static void
frame_outputs(Reader *r, const Frame *f, const Stmt *s)
{
	const Name *tn = typed_name(r, s);

	for (uint32_t i = 0; i < s->nnames; i++) {
		Sym *sym = sym_find(r, s->names[i].s);

		if (strcmp(s->names[i].s, "_") == 0)
			continue;
		if (!sym || sym->stamp < f->stamp || (sym->kind != SYM_VAL && sym->kind != SYM_OBJ))
			tr_errat(r, s->line, s->names[i].col, "'%s' is not defined by the subsymbols of %s",
				s->names[i].s, s->e->fn->s);
		sym->keep = true;
		if (tn == &s->names[i] && sym->kind == SYM_VAL)
			check_typecmt(r, s, sym->val, s->e->fn->s);
	}
}

/* undo one definition made inside s's subsymbols: back to what the name
 * was, or local to s if it was nothing */
static void
unwind(Reader *r, const LogEnt *e, const Stmt *s)
{
	Sym *sym = &r->syms[e->sym];
	const char *name = sym->name;

	if (e->old.kind == SYM_VAL || e->old.kind == SYM_OBJ || e->old.kind == SYM_DEL) {
		*sym = e->old;
		return;
	}
	memset(sym, 0, sizeof *sym);
	sym->name = name;
	sym->kind = SYM_LOCAL;
	sym->line = s->line;
	sym->owner = s->e->fn->s;
}

/* Close a frame: names defined inside that are not its outputs are undone,
 * newest first; the outputs stay, each logged once (its oldest meaning) for
 * the frame around this one. */
static void
close_frame(Reader *r, const Frame *f)
{
	const Stmt *s = &r->stmts[f->stmt];
	uint32_t k, n = f->logmark;

	frame_outputs(r, f, s);
	for (k = r->nlog; k-- > f->logmark;)
		if (!r->syms[r->log[k].sym].keep)
			unwind(r, &r->log[k], s);
	for (k = f->logmark; k < r->nlog; k++) {
		Sym *sym = &r->syms[r->log[k].sym];

		if (sym->keep) {
			sym->keep = false;
			r->log[n++] = r->log[k];
		}
	}
	r->nlog = n;
}

/* ---- return ---- */

static const Expr *
dict_get(const Expr *d, const char *key)
{
	for (uint32_t i = 0; i + 1 < d->n; i += 2)
		if (d->elts[i]->kind == E_STR && strcmp(d->elts[i]->s, key) == 0)
			return d->elts[i + 1];
	return NULL;
}

static void
add_output(Reader *r, uint32_t v, const char *name, bool primary)
{
	for (uint32_t i = 0; !primary && i < r->fn->nrets; i++)
		if (r->fn->rets[i] == v)
			return;
	ir_return(r->fn, v, name);
}

/* Add the tensors of e as outputs, in order. primary: the 'output' part,
 * where anything but tensors, objects and None is an error; else the saved
 * part, deduplicated against the outputs so far. */
static void
outputs(Reader *r, const Expr *e, bool primary)
{
	const Sym *s;

	switch (e->kind) {
	case E_NAME:
		s = tr_lookup(r, e);
		if (s->kind == SYM_VAL)
			add_output(r, s->val, e->s, primary);
		for (uint32_t i = 0; s->kind == SYM_OBJ && i < s->nobjv; i++)
			add_output(r, s->objv[i].v, s->objv[i].name, primary);
		return;
	case E_TUPLE: case E_LIST:
		for (uint32_t i = 0; i < e->n; i++)
			outputs(r, e->elts[i], primary);
		return;
	case E_DICT:
		for (uint32_t i = 1; i < e->n; i += 2)
			outputs(r, e->elts[i], primary);
		return;
	case E_NONE:
		return;
	default:
		if (primary)
			tr_errat(r, e->line, e->col, "a trace can return only tensors");
		return;
	}
}

/* every name in e must be defined */
static void
check_names(Reader *r, const Expr *e)
{
	if (e->kind == E_NAME)
		tr_lookup(r, e);
	for (uint32_t i = 0; i < e->n; i++)
		check_names(r, e->elts[i]);
	for (uint32_t i = 0; i < e->nargs; i++)
		check_names(r, e->args[i].e);
}

/* return := NAME | tuple | list | dict | "{'output': X, ...}, (saved, ...)" */
static void
lower_return(Reader *r, const Stmt *s)
{
	const Expr *e = s->e, *out = e, *saved = NULL;

	check_names(r, e);
	if (e->kind == E_TUPLE && e->n == 2 && e->elts[0]->kind == E_DICT) {
		out = e->elts[0];
		saved = e->elts[1];
	}
	if (out->kind == E_DICT && !(out = dict_get(out, "output")))
		tr_errat(r, e->line, e->col, "the returned dict has no 'output' entry");
	outputs(r, out, true);
	if (saved)
		outputs(r, saved, false);
	if (r->fn->nrets == 0)
		tr_errat(r, s->line, s->col, "the trace returns no tensors");
}

/* ---- pass 2 ---- */

void
tr_add_params(Reader *r)
{
	for (uint32_t i = 0; i < r->nparams; i++) {
		Sym sym = { 0 };
		uint32_t dtcol, shcol;
		Type t;

		if (!r->ptypes[i].present)
			tr_errat(r, r->defline, r->params[i].col, "parameter '%s' has no type comment (# %s: \"cuda:0 f32[...]\")",
				r->params[i].s, r->params[i].s);
		tr_parse_type(r, r->ptypeline[i], &r->ptypes[i], &t, &dtcol, &shcol);
		sym.kind = SYM_VAL;
		sym.val = ir_param(r->fn, NULL, t.dt, t.rank, t.d);
		name_value(r, sym.val, r->params[i].s);
		define(r, r->params[i].s, sym);
	}
}

static void
lower_stmt(Reader *r, uint32_t si)
{
	const Stmt *s = &r->stmts[si];

	switch (s->kind) {
	case S_DEL:
		lower_del(r, s);
		break;
	case S_RETURN:
		lower_return(r, s);
		break;
	case S_CALL:
		if (!lower_call(r, si))
			push_frame(r, si);
		break;
	}
}

/* lower the body, replacing unknown callees by their subsymbols (an explicit
 * stack of frames, so deep nesting does not recurse) */
void
tr_lower_body(Reader *r)
{
	push_frame(r, NOSTMT);
	while (r->nframes > 0) {
		Frame *f = &r->frames[r->nframes - 1];
		uint32_t end = f->stmt == NOSTMT ? r->nstmts : r->stmts[f->stmt].end, si;

		if (f->next >= end) {
			if (f->stmt != NOSTMT)
				close_frame(r, f);
			r->nframes--;
			continue;
		}
		si = f->next;
		f->next = r->stmts[si].end;
		lower_stmt(r, si);
	}
}

