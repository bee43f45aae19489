/* lower.c — pass 2: the statements become IR. A callee the reader knows
 * (prims.c) becomes instructions and its subsymbols are ignored; an unknown
 * one (nvFusion0, ltorch.*) is replaced by its subsymbols, depth first, with
 * an explicit stack of frames, so nothing recurses on their nesting. A
 * tensor-subclass constructor (Float8Tensor(...)) is not computed: it makes
 * an object that remembers the tensors passed in, and those become outputs
 * when the object is saved in the return. Every value's dtype and shape is
 * what its op computes; a type comment that says otherwise is an error. */
#include "trace.h"

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
	const Type *dg = r->dpending;

	if (!s->ty.present)
		return;
	tr_parse_type(r, s->line, &s->ty, &want, &dtcol, &shcol);
	if (!dg && want.dtensor) { /* a DTensor op's: its subsymbols' construct_dtensor named it */
		const Sym *sym = tr_sym(r, arena_strndup(r->a, s->ty.name, s->ty.nlen));

		dg = sym && sym->kind == SYM_VAL && sym->val == v ? sym->dglobal : NULL;
	}
	if (want.dtensor != (dg != NULL))
		tr_errat(r, s->line, s->ty.col, "type comment says %s but %s gives %s",
			want.dtensor ? "a DTensor" : "a tensor", what,
			want.dtensor ? "a tensor (fp8cc's DTensors are parameters and construct_dtensor's results)"
				     : "a DTensor");
	if (dg)
		got = *dg;
	else
		tr_vtype(r->fn, v, &got);
	if (want.dt != got.dt || !tr_same_shape(&want, &got))
		tr_errat(r, s->line, want.dt != got.dt ? dtcol : shcol, "type comment says %s%s but %s gives %s%s",
			dg ? "DTensor " : "", tr_tystr(&want, b1, sizeof b1), what, dg ? "DTensor " : "",
			tr_tystr(&got, b2, sizeof b2));
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
	tr_errat(r, s->line, s->ty.ncol, "type comment names '%.*s', which the statement does not define",
		(int)s->ty.nlen, s->ty.name);
}

/* name stands for the tensor v from here on */
void
tr_define_val(Reader *r, const char *name, uint32_t v)
{
	Sym sym = { 0 };

	sym.kind = SYM_VAL;
	sym.val = v;
	tr_define(r, name, sym);
}

/* value `to` updated in place to val (later updates win): `to` is an
 * input, or the value an earlier copy_ gave the name `name`, which stands
 * for that input since; any other value is not an input, and nobody sees
 * its update */
void
tr_update(Reader *r, uint32_t to, uint32_t val, const char *name)
{
	for (uint32_t i = 0; i < r->nupdates; i++) {
		Update *u = &r->updates[i];

		if (u->param == to || (name && u->name && u->val == to && !strcmp(u->name, name))) {
			u->val = val;
			u->name = name;
			return;
		}
	}
	if (r->fn->vals[to].def != IR_NONE)
		return;
	GROW(r, r->updates, r->capupdates, r->nupdates + 1);
	r->updates[r->nupdates++] = (Update){ to, val, name };
}

/* name i of s is tensor v (tn: the name the type comment types) */
static void
bind_tensor(Reader *r, const Stmt *s, const Name *tn, uint32_t i, uint32_t v, uint32_t nv0)
{
	if (tn == &s->names[i])
		check_typecmt(r, s, v, r->callee);
	if (!strcmp(s->names[i].s, "_"))
		return;
	if (v >= nv0 && !r->fn->vals[v].name)
		name_value(r, v, s->names[i].s);
	tr_define_val(r, s->names[i].s, v);
}

/* the results of a callee with several, one for each name */
static void
bind_results(Reader *r, const Stmt *s, uint32_t nv0)
{
	const Name *tn = typed_name(r, s);

	if (s->nnames != (uint32_t)r->nmulti)
		tr_errat(r, s->line, s->col, "%s gives %d tensors, not %u", r->callee, r->nmulti, s->nnames);
	for (uint32_t i = 0; i < s->nnames; i++)
		bind_tensor(r, s, tn, i, r->multi[i], nv0);
}

/* the results of an extern call, one for each name: tensors, Python ints
 * and None */
static void
bind_extern(Reader *r, const Stmt *s, const ExtRes *res, uint32_t nv0)
{
	const Name *tn = typed_name(r, s);
	Sym num = { 0 };

	if (res->n > 1 && s->nnames != (uint32_t)res->n)
		tr_errat(r, s->line, s->col, "%s gives %d results, not %u", r->callee, res->n, s->nnames);
	for (uint32_t i = 0; i < s->nnames; i++) {
		switch (res->kind[i]) {
		case 't': bind_tensor(r, s, tn, i, res->v[i], nv0); continue;
		case 'i':
			num.kind = SYM_NUM;
			num.val = IR_NONE;
			num.numkind = 'i';
			num.num = (double)res->i[i];
			break;
		default:
			num.kind = SYM_PYNONE;
			num.owner = r->callee;
			break;
		}
		if (tn == &s->names[i])
			tr_errat(r, s->line, s->ty.ncol, "'%s' is not a tensor: %s gives a %s there", s->names[i].s,
				r->callee, res->kind[i] == 'i' ? "Python int" : "None");
		tr_define(r, s->names[i].s, num);
	}
}

/* bind the result of a known callee to the statement's left side: one
 * tensor, or a Python number (v is IR_NONE and *num holds it) */
static void
bind_result(Reader *r, const Stmt *s, uint32_t v, uint32_t nv0, const Sym *num)
{
	const Name *tn = typed_name(r, s);

	if (r->nmulti > 0) {
		bind_results(r, s, nv0);
		return;
	}
	if (s->nnames > 1)
		tr_errat(r, s->line, s->names[1].col, "%s gives one %s, not %u", r->callee, num ? "number" : "tensor",
			s->nnames);
	if (tn && !num)
		check_typecmt(r, s, v, r->callee);
	if (s->nnames == 0 || strcmp(s->names[0].s, "_") == 0)
		return;
	if (num) {
		tr_define(r, s->names[0].s, *num);
		return;
	}
	if (v >= nv0 && !r->fn->vals[v].name)
		name_value(r, v, s->names[0].s);
	tr_define_val(r, s->names[0].s, v);
}

/* collect the tensors in e, in order: names of tensors and of objects, inside
 * tuples, lists, dicts and nested calls. Unknown names are Python objects. */
static void
collect(Reader *r, const Expr *e, Saved **sv, uint32_t *n, uint32_t *cap)
{
	const Sym *s;

	switch (e->kind) {
	case E_NAME:
		s = tr_sym(r, e->s);
		if (!s || s->kind == SYM_NONE)
			return;
		s = tr_lookup(r, e);
		if (s->kind != SYM_VAL && s->kind != SYM_OBJ)
			return;
		for (uint32_t i = 0; i < (s->kind == SYM_OBJ ? s->nobjv : 1); i++) {
			GROW(r, *sv, *cap, *n + 1);
			(*sv)[(*n)++] = s->kind == SYM_OBJ ? s->objv[i] : (Saved){ s->val, s->name };
		}
		return;
	case E_TUPLE:
	case E_LIST:
	case E_DICT:
		for (uint32_t i = 0; i < e->n; i++)
			collect(r, e->elts[i], sv, n, cap);
		return;
	case E_CALL:
		for (uint32_t i = 0; i < e->nargs; i++)
			collect(r, e->args[i].e, sv, n, cap);
		return;
	default: return;
	}
}

/* a collective's result is read through its wait alone */
static void
refuse_in_flight(Reader *r, const Stmt *s, uint32_t v)
{
	const Instr *d = ir_def(r->fn, v);
	char nb[16];

	if (d && op_collective((Op)d->op))
		tr_errat(r, s->line, r->ccol ? r->ccol : s->col,
			"%s reads '%s', a collective's result still in flight: read it through its wait "
			"(torch_wait_prim_impl)",
			r->callee ? r->callee : "this statement", ir_name(r->fn, d->res, nb));
}

/* Float8Tensor(data, scale, ...): an object that remembers its tensors */
static void
make_object(Reader *r, const Stmt *s)
{
	Sym sym = { 0 };
	uint32_t cap = 0;

	for (uint32_t i = 0; i < s->e->nargs; i++)
		collect(r, s->e->args[i].e, &sym.objv, &sym.nobjv, &cap);
	for (uint32_t i = 0; i < sym.nobjv; i++)
		refuse_in_flight(r, s, sym.objv[i].v);
	sym.kind = SYM_OBJ;
	sym.line = s->line;
	sym.owner = r->callee;
	for (uint32_t i = 0; i < s->nnames; i++)
		tr_define(r, s->names[i].s, sym);
}

/* a tensor-subclass constructor: a callee whose last part is capitalized */
static bool
is_constructor(const char *name)
{
	const char *dot = strrchr(name, '.');

	name = dot ? dot + 1 : name;
	return name[0] >= 'A' && name[0] <= 'Z';
}

/* callees that do nothing fp8cc can see: Thunder frees collections with them */
static bool
is_noop(const char *name)
{
	return !strcmp(name, "clear_collection") || !strcmp(name, "clear_mutable_collection");
}

static noreturn void
unsupported(Reader *r, const Stmt *s)
{
	const char *why = tr_unsupported_why(r->callee);

	if (why)
		tr_refuse(r, s, arena_printf(r->a, why, r->callee));
	tr_refuse(r, s, arena_printf(r->a, "unknown callee '%s' has no subsymbols to lower it from", r->callee));
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
	Sym num = { 0 };

	r->cur = s;
	r->callee = s->e->fn->s;
	r->ccol = s->e->fn->col;
	r->num = &num;
	r->nmulti = 0;
	r->dpending = NULL; /* what an earlier statement's error left */
	if (!(f = tr_find_known(r->callee, &op)) && s->end == si + 1) {
		/* no subsymbols: torch's elementwise functions as torch computes
		 * them; Thunder's torch language (its initial traces print some
		 * so) as torch's function of that name where fp8cc lowers that;
		 * else an extern (below) */
		const char *torch = r->callee;

		if (!strncmp(torch, "ltorch.", 7))
			torch = arena_printf(r->a, "torch.%s", torch + 7);
		if ((f = tr_find_known(torch, &op)) || (f = tr_find_torch(torch, &op)))
			r->callee = torch;
	}
	if (f) {
		v = f(r, s->e, op);
		for (uint32_t i = ni0; i < r->fn->nins; i++) {
			r->fn->ins[i].line = s->line;
			r->fn->ins[i].col = s->col;
		}
		bind_result(r, s, v, nv0, v == IR_NONE ? &num : NULL);
		if (r->dpending && s->nnames == 1 && strcmp(s->names[0].s, "_"))
			tr_sym(r, s->names[0].s)->dglobal = r->dpending;
		r->dpending = NULL;
		return true;
	}
	if (s->end > si + 1)
		return false;
	if (is_constructor(r->callee)) {
		make_object(r, s);
		return true;
	}
	if (is_noop(r->callee))
		return true;
	if (tr_extern_callee(r->callee)) {
		ExtRes res;

		tr_lower_extern(r, s, &res);
		for (uint32_t i = ni0; i < r->fn->nins; i++) {
			r->fn->ins[i].line = s->line;
			r->fn->ins[i].col = s->col;
		}
		if (!map_get(&r->externs, r->callee)) {
			map_put(r->a, &r->externs, r->callee, 1);
			tr_note(r, s->line, r->ccol,
				"'%s' has no subsymbols: it becomes an extern call, which the "
				"application supplies at run time%s",
				r->callee,
				strncmp(r->callee, "torch.", 6) && strncmp(r->callee, "ltorch.", 7)
					? ""
					: " (fp8cc.torch runs torch's own function of the name)");
		}
		bind_extern(r, s, &res, nv0);
		return true;
	}
	unsupported(r, s);
}

/* del := "del" targets: the names, flattened by the parser */
static void
lower_del(Reader *r, const Stmt *s)
{
	Sym sym = { 0 };

	for (uint32_t i = 0; i < s->nnames; i++) {
		Expr e = { 0 };
		Sym *old = tr_sym(r, s->names[i].s);

		e.kind = E_NAME;
		e.line = s->line;
		e.col = s->names[i].col;
		e.s = s->names[i].s;
		if (!old || (old->kind != SYM_UNTYPED && old->kind != SYM_PYNONE))
			tr_lookup(r, &e);
		sym.kind = SYM_DEL;
		sym.line = s->line;
		tr_define(r, e.s, sym);
	}
}

/* ---- collections and numbers ---- */

static bool
all_digits(const char *p)
{
	if (!*p)
		return false;
	for (; *p; p++)
		if (!isdig(*p) && *p != '_')
			return false;
	return true;
}

/* Thunder's names for Python numbers: f3 (float), i3 (int), b3 (bool);
 * 'f', 'i', 'b', or 0 for any other name */
static char
number_name(const char *name)
{
	return (name[0] == 'f' || name[0] == 'i' || name[0] == 'b') && all_digits(name + 1) ? name[0] : 0;
}

/* C0, C1: Thunder's names for collections */
static bool
collection_name(const char *name)
{
	return name[0] == 'C' && all_digits(name + 1);
}

/* a new parameter named `name` of type t */
uint32_t
tr_new_param(Reader *r, const char *name, const Type *t)
{
	uint32_t v = ir_param(r->fn, NULL, t->dt, t->rank, t->d);

	name_value(r, v, name);
	return v;
}

/* the --signature entry for name, or for position pos (UINT32_MAX: none) */
static const FeSigEntry *
sig_find(Reader *r, const char *name, uint32_t pos)
{
	const FeSig *sig = r->link ? r->link->sig : NULL;
	char buf[16];

	if (!sig)
		return NULL;
	for (uint32_t i = 0; i < sig->n; i++)
		if (!strcmp(sig->e[i].name, name))
			return &sig->e[i];
	snprintf(buf, sizeof buf, "%u", pos);
	for (uint32_t i = 0; pos != UINT32_MAX && i < sig->n; i++)
		if (!strcmp(sig->e[i].name, buf))
			return &sig->e[i];
	return NULL;
}

static bool
sig_type(Reader *r, const char *name, uint32_t pos, Type *t)
{
	const FeSigEntry *e = sig_find(r, name, pos);

	if (!e)
		return false;
	t->dt = e->dtype;
	t->rank = e->rank;
	memcpy(t->d, e->dims, sizeof t->d);
	return true;
}

/* the state slot that carries forward value fv into the backward */
static uint32_t
slot_of(Reader *r, uint32_t fv)
{
	FeLink *l = r->link;

	for (uint32_t k = 0; k < l->nslots; k++)
		if (l->slot_val[k] == fv)
			return k;
	arena_grow(r->a, (void **)&l->slot_val, &l->capslots, l->nslots + 1, sizeof *l->slot_val);
	l->slot_val[l->nslots] = fv;
	return l->nslots++;
}

/* a parameter with the type of forward value fv; from a state slot, or an
 * input of its own (a cotangent) */
static uint32_t
forward_param(Reader *r, const char *name, uint32_t fv, bool state)
{
	Type t;
	uint32_t v;

	tr_vtype(r->link->fwd, fv, &t);
	v = tr_new_param(r, name, &t);
	if (state)
		ir_set_param_slot(r->fn, r->fn->nparams - 1, (int32_t)slot_of(r, fv));
	return v;
}

/* A member of a collection whose contents fp8cc does not know: a
 * collection, a number (by Thunder's names), a tensor the signature types,
 * or a value without a type (an error where it is used). */
static void
unknown_member(Reader *r, const Stmt *s, const Name *n, const Sym *coll, uint32_t pos)
{
	Sym sym = { 0 };
	Type t = { 0 };
	char k = number_name(n->s);

	sym.line = s->line;
	sym.owner = coll->name;
	if (collection_name(n->s)) {
		sym.kind = SYM_COLL;
	} else if (k) {
		sym.kind = SYM_NUM;
		sym.numkind = k;
		t.dt = tr_number_dtype(k);
		sym.val = tr_new_param(r, n->s, &t);
	} else if (sig_type(r, n->s, coll->top ? pos : UINT32_MAX, &t)) {
		sym.kind = SYM_VAL;
		sym.val = tr_new_param(r, n->s, &t);
	} else {
		sym.kind = SYM_UNTYPED;
	}
	tr_define(r, n->s, sym);
}

/* a member of a collection whose contents the forward trace gave */
static void
known_member(Reader *r, const Stmt *s, const Name *n, const Sym *coll, const PyObj *o)
{
	Sym sym = { 0 };

	sym.line = s->line;
	sym.owner = coll->name;
	switch (o->kind) {
	case PY_TUPLE:
		sym.kind = SYM_COLL;
		sym.coll = o;
		break;
	case PY_TENSOR:
		sym.kind = SYM_VAL;
		sym.val = forward_param(r, n->s, o->val, !o->input);
		break;
	case PY_NUM:
		sym.kind = SYM_NUM;
		sym.numkind = o->numkind;
		sym.num = o->num;
		sym.val = o->val == IR_NONE ? IR_NONE : forward_param(r, n->s, o->val, true);
		break;
	case PY_NONE: sym.kind = SYM_PYNONE; break;
	case PY_ERR:  sym.kind = SYM_ERR; break;
	}
	tr_define(r, n->s, sym);
}

/* unpack := targets "=" NAME: the members of a collection, in order; or, with
 * one name and no comma, the value under a second name */
static void
lower_unpack(Reader *r, const Stmt *s)
{
	Sym *c = tr_lookup(r, s->e), coll;

	if (c->kind != SYM_COLL) {
		if (s->tuple || (c->kind != SYM_VAL && c->kind != SYM_NUM && c->kind != SYM_OBJ))
			tr_errat(r, s->e->line, s->e->col, "'%s' is not a collection to unpack", s->e->s);
		coll = *c;
		tr_define(r, s->names[0].s, coll);
		return;
	}
	coll = *c;
	if (coll.coll && coll.coll->n != s->nnames)
		tr_errat(r, s->e->line, s->e->col, "'%s' holds %u values; the statement unpacks %u", s->e->s,
			coll.coll->n, s->nnames);
	for (uint32_t i = 0; i < s->nnames; i++) {
		if (!strcmp(s->names[i].s, "_"))
			continue;
		if (coll.coll)
			known_member(r, s, &s->names[i], &coll, coll.coll->elts[i]);
		else
			unknown_member(r, s, &s->names[i], &coll, i);
	}
}

/* "# NAME: \"TYPE\"" on a line of its own: types a value unpacked without a
 * type, or is checked against the one it has */
static void
lower_type(Reader *r, const Stmt *s)
{
	char *name = arena_strndup(r->a, s->ty.name, s->ty.nlen);
	Sym *sym = tr_sym(r, name);
	uint32_t dtcol, shcol;
	Type t;

	if (!sym || (sym->kind != SYM_UNTYPED && sym->kind != SYM_VAL))
		return;
	tr_parse_type(r, s->line, &s->ty, &t, &dtcol, &shcol);
	if (t.dtensor || (sym->kind == SYM_VAL && sym->dglobal)) {
		tr_dtensor_name(r, name, &t, s->line, s->ty.col, sym->kind == SYM_VAL ? sym->val : IR_NONE);
		return;
	}
	if (sym->kind == SYM_VAL) {
		check_typecmt(r, s, sym->val, "its definition");
		return;
	}
	sym->kind = SYM_VAL;
	sym->val = tr_new_param(r, name, &t);
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
		Sym *sym = tr_sym(r, s->names[i].s);

		if (strcmp(s->names[i].s, "_") == 0)
			continue;
		if (!sym || sym->stamp < f->stamp ||
			(sym->kind != SYM_VAL && sym->kind != SYM_OBJ && sym->kind != SYM_NUM))
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

	if (e->old.kind != SYM_NONE && e->old.kind != SYM_LOCAL) {
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

/* a collective's result is read through its wait, returned or saved too */
static void
check_landed(Reader *r, const Expr *e, uint32_t v)
{
	const Instr *d = ir_def(r->fn, v);

	if (d && op_collective((Op)d->op))
		tr_errat(r, e->line, e->col,
			"'%s' is a collective's result still in flight: only its wait "
			"(torch_wait_prim_impl) may be returned or saved",
			e->s);
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
			check_landed(r, e, s->val);
		if (s->kind == SYM_VAL)
			add_output(r, s->val, e->s, primary);
		for (uint32_t i = 0; s->kind == SYM_OBJ && i < s->nobjv; i++)
			add_output(r, s->objv[i].v, s->objv[i].name, primary);
		if (primary && (s->kind == SYM_NUM || s->kind == SYM_COLL))
			tr_errat(r, e->line, e->col, "a trace can return only tensors; '%s' is a %s", e->s,
				s->kind == SYM_NUM ? "number" : "collection");
		return;
	case E_TUPLE:
	case E_LIST:
		for (uint32_t i = 0; i < e->n; i++)
			outputs(r, e->elts[i], primary);
		return;
	case E_DICT:
		for (uint32_t i = 1; i < e->n; i += 2)
			outputs(r, e->elts[i], primary);
		return;
	case E_NONE: return;
	default:
		if (primary)
			tr_errat(r, e->line, e->col, "a trace can return only tensors");
		return;
	}
}

/* every name in e must be defined (or left undefined by an error) */
static void
check_names(Reader *r, const Expr *e)
{
	const Sym *s;

	if (e->kind == E_NAME && (!(s = tr_sym(r, e->s)) || s->kind != SYM_ERR))
		tr_lookup(r, e);
	for (uint32_t i = 0; i < e->n; i++)
		check_names(r, e->elts[i]);
	for (uint32_t i = 0; i < e->nargs; i++)
		check_names(r, e->args[i].e);
}

static PyObj *
new_py(Reader *r, PyKind k)
{
	PyObj *o = arena_alloc(r->a, sizeof *o);

	o->kind = k;
	o->val = IR_NONE;
	return o;
}

static void
py_push(Reader *r, PyObj *t, PyObj *x)
{
	uint32_t cap = t->n;

	arena_grow(r->a, (void **)&t->elts, &cap, t->n + 1, sizeof *t->elts);
	t->elts[t->n++] = x;
}

/* what a forward saves for its backward, as the backward will unpack it */
static PyObj *
saved_obj(Reader *r, const Expr *e)
{
	const Sym *s;
	PyObj *o;

	switch (e->kind) {
	case E_NAME:
		if ((s = tr_sym(r, e->s)) && s->kind == SYM_ERR)
			return new_py(r, PY_ERR);
		s = tr_lookup(r, e);
		if (s->kind == SYM_VAL) {
			check_landed(r, e, s->val);
			o = new_py(r, PY_TENSOR);
			o->val = s->val;
			o->name = e->s;
			return o;
		}
		if (s->kind == SYM_NUM) {
			o = new_py(r, PY_NUM);
			o->num = s->num;
			o->numkind = s->numkind;
			o->val = s->val;
			return o;
		}
		if (s->kind == SYM_COLL && s->coll)
			return (PyObj *)s->coll;
		o = new_py(r, PY_TUPLE);
		for (uint32_t i = 0; s->kind == SYM_OBJ && i < s->nobjv; i++) {
			PyObj *t = new_py(r, PY_TENSOR);

			t->val = s->objv[i].v;
			py_push(r, o, t);
		}
		if (s->kind != SYM_OBJ)
			tr_errat(r, e->line, e->col,
				"cannot save '%s' for the backward: it is not a tensor or a number", e->s);
		return o;
	case E_INT:
	case E_FLOAT:
	case E_BOOL:
		o = new_py(r, PY_NUM);
		o->num = e->kind == E_FLOAT ? e->f : (double)e->i;
		o->numkind = e->kind == E_FLOAT ? 'f' : e->kind == E_INT ? 'i' : 'b';
		return o;
	case E_NONE: return new_py(r, PY_NONE);
	case E_TUPLE:
	case E_LIST:
		o = new_py(r, PY_TUPLE);
		for (uint32_t i = 0; i < e->n; i++)
			py_push(r, o, saved_obj(r, e->elts[i]));
		return o;
	default:
		tr_errat(r, e->line, e->col,
			"cannot save this for the backward: only tensors, numbers, None and tuples");
	}
}

/* A forward's outputs: the tensors of e, in order, as outputs and as the
 * tuple its backward's cotangents mirror; a name an error left undefined
 * keeps its place there, unknown. */
static void
forward_outputs(Reader *r, const Expr *e)
{
	PyObj *all = new_py(r, PY_TUPLE);

	if (e->kind != E_TUPLE && e->kind != E_LIST) {
		py_push(r, all, saved_obj(r, e));
	} else {
		for (uint32_t i = 0; i < e->n; i++)
			py_push(r, all, saved_obj(r, e->elts[i]));
	}
	r->link->outputs = all;
	for (uint32_t i = 0; i < all->n; i++) {
		if (all->elts[i]->kind == PY_TENSOR)
			add_output(r, all->elts[i]->val, all->elts[i]->name, true);
		else if (all->elts[i]->kind == PY_ERR)
			r->lost = true;
		else if (all->elts[i]->kind != PY_NONE)
			tr_errat(r, e->line, e->col, "the forward's outputs must be tensors");
	}
}

/* return := NAME | tuple | list | dict | "{'output': X, ...}, (saved, ...)".
 * The forward of a pair returns its flat outputs and hands the saved values
 * to the backward; a trace read alone returns both. */
static void
lower_return(Reader *r, const Stmt *s)
{
	const Expr *e = s->e, *out = e, *saved = NULL, *flat = NULL;

	check_names(r, e);
	if (e->kind == E_TUPLE && e->n == 2 && e->elts[0]->kind == E_DICT) {
		out = e->elts[0];
		saved = e->elts[1];
	}
	if (out->kind == E_DICT) {
		flat = dict_get(out, "flat_output");
		if (!(out = dict_get(out, "output")))
			tr_errat(r, e->line, e->col, "the returned dict has no 'output' entry");
	}
	if (r->link && r->link->forward) {
		forward_outputs(r, flat ? flat : out);
		r->link->saved = saved ? saved_obj(r, saved) : new_py(r, PY_TUPLE);
	} else {
		outputs(r, out, true);
		if (saved)
			outputs(r, saved, false);
	}
	for (uint32_t i = 0; i < r->nupdates; i++) {
		char nb[16];

		ir_return(r->fn, r->updates[i].val,
			arena_printf(r->a, "%s_updated", ir_name(r->fn, r->updates[i].param, nb)));
		for (uint32_t k = 0; k < r->fn->nparams; k++)
			if (r->fn->params[k] == r->updates[i].param && r->fn->pslot[k] < 0)
				ir_set_ret_update(r->fn, r->fn->nrets - 1, (int32_t)k);
	}
	if (r->fn->nrets == 0 && !r->lost)
		tr_errat(r, s->line, s->col, "the trace returns no tensors");
}

/* ---- pass 2 ---- */

/* the forward's outputs as the backward's cotangents: inputs of their types */
static PyObj *
cotangents(Reader *r)
{
	PyObj *o = new_py(r, PY_TUPLE), *outs = r->link->outputs;

	for (uint32_t i = 0; outs && i < outs->n; i++) {
		PyObj *t = new_py(r, outs->elts[i]->kind);

		*t = *outs->elts[i];
		t->input = true;
		py_push(r, o, t);
	}
	return o;
}

/* a Collection parameter; in a backward read with its forward, the first one
 * holds the saved values and the second the cotangents */
static void
collection_param(Reader *r, uint32_t i)
{
	Sym sym = { 0 };

	sym.kind = SYM_COLL;
	sym.top = true;
	sym.line = r->defline;
	if (r->link && r->link->fwd) {
		bool cot = !strcmp(r->params[i].s, "cotangents") ||
			(r->ncoll == 1 && strcmp(r->params[i].s, "saved_for_backward"));

		sym.coll = cot ? cotangents(r) : r->link->saved;
		r->link->read_saved |= !cot;
	}
	r->ncoll++;
	tr_define(r, r->params[i].s, sym);
}

/* true if the parameter is unpacked somewhere: a collection */
static bool
unpacked(Reader *r, const char *name)
{
	for (uint32_t i = 0; i < r->nstmts; i++)
		if (r->stmts[i].kind == S_UNPACK && !strcmp(r->stmts[i].e->s, name))
			return true;
	return false;
}

/* a type comment that names a Python value's type as Thunder prints it:
 * its word ("int 5", "float ?", "bool True", "tuple", "str", ...), else NULL
 * (a complex number, which has no dtype here, too) */
static const char *
python_type(const TypeCmt *tc)
{
	static const char *const words[] = { "int", "float", "bool", "tuple", "list", "dict", "str", "Any" };

	for (size_t k = 0; tc->present && k < NELEM(words); k++) {
		size_t n = strlen(words[k]);

		if (tc->len >= n && !memcmp(tc->text, words[k], n) && (tc->len == n || tc->text[n] == ' '))
			return words[k];
	}
	return NULL;
}

/* a parameter that is a Python value: a number ("int 10106": Thunder's
 * proxy of one, with the value it was traced with) is a rank-0 input of its
 * kind, as a number unpacked from a collection is; anything else (a tuple
 * whose values the trace's subsymbols already hold, a string) is an object,
 * which no operation and no extern call can be given */
static void
python_param(Reader *r, uint32_t i, const char *word)
{
	Sym sym = { 0 };
	Type t = { 0 };

	sym.line = r->ptypeline[i];
	if (!strcmp(word, "int") || !strcmp(word, "float") || !strcmp(word, "bool")) {
		sym.kind = SYM_NUM;
		sym.numkind = word[0];
		t.dt = tr_number_dtype(word[0]);
		sym.val = tr_new_param(r, r->params[i].s, &t);
	} else {
		sym.kind = SYM_OBJ;
		sym.owner = word;
	}
	tr_define(r, r->params[i].s, sym);
}

static void
add_param(Reader *r, uint32_t i)
{
	const TypeCmt *tc = &r->ptypes[i];
	const char *word = python_type(tc);
	uint32_t dtcol, shcol;
	Type t;

	if (r->params[i].star || (tc->present && tc->len == 10 && !memcmp(tc->text, "Collection", 10)) ||
		(!tc->present &&
			(unpacked(r, r->params[i].s) || !strcmp(r->params[i].s, "saved_for_backward") ||
				!strcmp(r->params[i].s, "cotangents"))) ||
		(word && (!strcmp(word, "tuple") || !strcmp(word, "list")) && unpacked(r, r->params[i].s))) {
		collection_param(r, i);
		return;
	}
	if (!tc->present && r->strparam == i + 1) { /* a bare '# "sum"' in its place */
		r->ptypeline[i] = r->strline;
		word = "str";
	}
	if (word) {
		python_param(r, i, word);
		return;
	}
	if (!tc->present && sig_type(r, r->params[i].s, i, &t)) {
		tr_define_val(r, r->params[i].s, tr_new_param(r, r->params[i].s, &t));
		return;
	}
	if (!tc->present)
		tr_errat(r, r->defline, r->params[i].col,
			"parameter '%s' has no type comment (# %s: \"cuda:0 f32[...]\")%s", r->params[i].s,
			r->params[i].s, r->link && r->link->sig ? "" : " and no --signature gives it one");
	tr_parse_type(r, r->ptypeline[i], tc, &t, &dtcol, &shcol);
	if (t.dtensor)
		tr_dtensor_name(r, r->params[i].s, &t, r->ptypeline[i], tc->col, IR_NONE);
	else
		tr_define_val(r, r->params[i].s, tr_new_param(r, r->params[i].s, &t));
}

/* the parameters; one that has an error is left undefined */
void
tr_add_params(Reader *r)
{
	jmp_buf jb;
	volatile uint32_t i = 0;

	r->jb = &jb;
	for (; i < r->nparams; i++) {
		if (setjmp(jb) == 0) {
			add_param(r, i);
		} else {
			Sym sym = { .kind = SYM_ERR };

			tr_define(r, r->params[i].s, sym);
		}
	}
	r->backward = r->ncoll > 0 && !r->params[0].star;
}

/* a collective's result is read through its wait alone: not by what
 * instructions first .. the last read (an extern, an op) */
static void
check_in_flight(Reader *r, const Stmt *s, uint32_t first)
{
	Func *fn = r->fn;

	for (uint32_t i = first; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];

		for (uint32_t j = 0; in->op != OP_WAIT && j < in->nargs; j++)
			refuse_in_flight(r, s, ir_args(fn, in)[j]);
	}
}

static void
lower_stmt(Reader *r, uint32_t si)
{
	const Stmt *s = &r->stmts[si];
	uint32_t first = r->fn->nins;

	if (s->broken)
		tr_silent(r);
	switch (s->kind) {
	case S_DEL:    lower_del(r, s); break;
	case S_RETURN: lower_return(r, s); break;
	case S_CALL:
		if (!lower_call(r, si))
			push_frame(r, si);
		break;
	case S_UNPACK: lower_unpack(r, s); break;
	case S_TYPE:   lower_type(r, s); break;
	case S_ERROR:  tr_silent(r);
	}
	check_in_flight(r, s, first);
}

/* After an error in statement si of the body or in its subsymbols: undo what
 * its subsymbols defined, and leave its own names undefined, quietly. */
static void
recover(Reader *r, uint32_t si)
{
	const Stmt *s = &r->stmts[si];
	Sym err = { .kind = SYM_ERR };

	if (r->nframes > 1) {
		for (uint32_t k = r->nlog; k-- > r->frames[1].logmark;)
			r->syms[r->log[k].sym] = r->log[k].old;
		r->nlog = r->frames[1].logmark;
		r->nframes = 1;
	}
	for (uint32_t i = 0; s->kind != S_DEL && i < s->nnames; i++)
		tr_define(r, s->names[i].s, err);
}

/* a collective the trace never waits for still runs (every rank runs it):
 * waited for at the end */
void
tr_wait_all(Reader *r)
{
	Func *fn = r->fn;
	bool *waited = arena_alloc(r->a, fn->nvals + 1);

	for (uint32_t i = 0; i < fn->nins; i++)
		if (fn->ins[i].op == OP_WAIT)
			waited[ir_args(fn, &fn->ins[i])[0]] = true;
	for (uint32_t i = 0, n = fn->nins; i < n; i++) {
		uint32_t c = fn->ins[i].res;

		if (op_collective((Op)fn->ins[i].op) && !waited[c])
			ir_instr(fn, OP_WAIT, &c, 1, NULL, 0, (DType)fn->vals[c].dtype, fn->vals[c].rank,
				ir_dims(fn, c));
	}
}

/* lower the body, replacing unknown callees by their subsymbols (an explicit
 * stack of frames, so deep nesting does not recurse); an error gives up the
 * statement of the body it is in, and the next one goes on */
void
tr_lower_body(Reader *r)
{
	jmp_buf jb;

	r->jb = &jb;
	push_frame(r, NOSTMT);
	while (r->nframes > 0) {
		Frame *f = &r->frames[r->nframes - 1];
		uint32_t end = f->stmt == NOSTMT ? r->nstmts : r->stmts[f->stmt].end, si;

		if (setjmp(jb) != 0) {
			recover(r, r->top);
			continue;
		}
		if (f->next >= end) {
			if (f->stmt != NOSTMT)
				close_frame(r, f);
			r->nframes--;
			continue;
		}
		si = f->next;
		f->next = r->stmts[si].end;
		if (r->nframes == 1)
			r->top = si;
		lower_stmt(r, si);
	}
}
