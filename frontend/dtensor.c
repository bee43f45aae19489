/* dtensor.c — DTensors, PyTorch's distributed tensors, as Thunder's traces
 * show them ("DTensor cuda:0 f32[16, 16]"). A program runs on every rank,
 * and there a DTensor is its local shard: Thunder's own executor takes
 * `t.to_local()` for get_dtensor_inner_tensor and
 * `DTensor.from_local(t, mesh, placements)` for construct_dtensor. So a
 * DTensor's value in the IR is the local tensor, and its name keeps the
 * global type (Sym.dglobal), which type comments are checked against: the
 * program takes and returns local shards, and the application unwraps and
 * wraps them. A DTensor parameter's local type is the type the trace gives
 * get_dtensor_inner_tensor of it; nothing else reads a DTensor whole (a
 * DTensor op's subsymbols read the local tensors). construct_dtensor's
 * spec gives the global type: the local shape times the mesh's size on each
 * Shard dimension (docs/design.md, "Reading traces"). */
#include "trace.h"

static bool
ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail) && (n == m || s[n - m - 1] == '.');
}

/* the type the trace gives get_dtensor_inner_tensor(name), at any depth */
static bool
local_type(Reader *r, const char *name, Type *t)
{
	for (uint32_t i = 0; i < r->nstmts; i++) {
		const Stmt *s = &r->stmts[i];
		const Expr *c = s->e;
		uint32_t dtcol, shcol;

		if (s->kind != S_CALL || !c || c->kind != E_CALL || !ends_with(c->fn->s, "get_dtensor_inner_tensor") ||
			c->nargs != 1 || c->args[0].e->kind != E_NAME || strcmp(c->args[0].e->s, name) ||
			!s->ty.present || s->nnames != 1 || strlen(s->names[0].s) != s->ty.nlen ||
			memcmp(s->names[0].s, s->ty.name, s->ty.nlen))
			continue;
		tr_parse_type(r, s->line, &s->ty, t, &dtcol, &shcol);
		return !t->dtensor;
	}
	return false;
}

/* local can be an even shard of global */
static bool
shards(const Type *local, const Type *global)
{
	if (local->dt != global->dt || local->rank != global->rank)
		return false;
	for (int i = 0; i < local->rank; i++)
		if (local->d[i] ? global->d[i] % local->d[i] != 0 : global->d[i] != 0)
			return false;
	return true;
}

/* name, typed as the DTensor `global` at line:col, is the local tensor v
 * (IR_NONE: a parameter of the local type, made here); its value */
uint32_t
tr_dtensor_name(Reader *r, const char *name, const Type *global, uint32_t line, uint32_t col, uint32_t v)
{
	Sym *sym = tr_sym(r, name);
	Type local, got, *g;
	char b1[256], b2[256];

	if (!global->dtensor)
		tr_errat(r, line, col, "type comment says %s, but '%s' is a DTensor", tr_tystr(global, b1, sizeof b1),
			name);
	if (sym && sym->kind == SYM_VAL && sym->dglobal) {
		if (sym->dglobal->dt != global->dt || !tr_same_shape(sym->dglobal, global))
			tr_errat(r, line, col, "type comment says DTensor %s but '%s' is a DTensor %s",
				tr_tystr(global, b1, sizeof b1), name, tr_tystr(sym->dglobal, b2, sizeof b2));
		return sym->val;
	}
	if (!local_type(r, name, &local))
		tr_errat(r, line, col,
			"'%s' is a DTensor: fp8cc runs on each rank's local shard, whose type the trace gives "
			"where get_dtensor_inner_tensor(%s) is typed, and this trace has no such line",
			name, name);
	if (!shards(&local, global))
		tr_errat(r, line, col,
			"'%s' is a DTensor %s, but its local shard is %s (a shard has the dtype and rank, and "
			"each dimension divides the global one)",
			name, tr_tystr(global, b1, sizeof b1), tr_tystr(&local, b2, sizeof b2));
	if (v == IR_NONE) {
		v = tr_new_param(r, name, &local);
	} else {
		tr_vtype(r->fn, v, &got);
		if (got.dt != local.dt || !tr_same_shape(&got, &local))
			tr_errat(r, line, col, "'%s' is %s, but get_dtensor_inner_tensor(%s) gives %s", name,
				tr_tystr(&got, b1, sizeof b1), name, tr_tystr(&local, b2, sizeof b2));
	}
	if (!r->dtensor_noted) {
		r->dtensor_noted = true;
		tr_note(r, line, col,
			"'%s' is a DTensor: the program takes and returns each rank's local shard "
			"(DTensor.to_local(), DTensor.from_local() with the trace's placements)",
			name);
	}
	tr_define_val(r, name, v);
	g = arena_alloc(r->a, sizeof *g);
	*g = *global;
	tr_sym(r, name)->dglobal = g;
	return v;
}

/* get_dtensor_inner_tensor(x): x's local shard, the value x stands for */
uint32_t
tr_lower_dtensor_inner(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "t", false } };
	const Expr *a[1];
	Sym *s;

	(void)op;
	tr_bind(r, c, ps, 1, a);
	if (a[0]->kind != E_NAME)
		tr_errat(r, a[0]->line, a[0]->col, "%s: expected a DTensor", r->callee);
	s = tr_lookup(r, a[0]);
	if (s->kind != SYM_VAL || !s->dglobal)
		tr_errat(r, a[0]->line, a[0]->col, "%s: '%s' is not a DTensor", r->callee, a[0]->s);
	return s->val;
}

/* the argument called kw, or the pos-th positional one; NULL if absent */
static const Expr *
arg_of(const Expr *c, const char *kw, uint32_t pos)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < c->nargs; i++) {
		if (c->args[i].kw ? !strcmp(c->args[i].kw, kw) : k++ == pos)
			return c->args[i].e;
	}
	return NULL;
}

static bool
called(const Expr *e, const char *name)
{
	return e && e->kind == E_CALL && ends_with(e->fn->s, name);
}

/* the mesh's shape: DeviceMesh(device_type, mesh) with mesh a (nested)
 * list of ranks */
static int
mesh_shape(Reader *r, const Expr *dm, int64_t *d)
{
	const Expr *m = arg_of(dm, "mesh", 1);
	int n = 0;

	while (m && (m->kind == E_LIST || m->kind == E_TUPLE) && m->n > 0 && n < IR_MAXRANK) {
		d[n++] = m->n;
		m = m->elts[0];
	}
	if (n == 0 || !m || m->kind != E_INT)
		tr_errat(r, dm->line, dm->col, "%s: DeviceMesh without a list of ranks", r->callee);
	return n;
}

/* construct_dtensor(t, spec): t, named as a DTensor of the spec's global type */
uint32_t
tr_lower_construct_dtensor(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "local_tensor_proxy|t", false }, { "spec|metadata", false } };
	const Expr *a[2], *dm, *pl, *meta, *shape;
	int64_t mesh[IR_MAXRANK];
	Type *g = arena_alloc(r->a, sizeof *g), local;
	uint32_t v;
	int nm;
	char b1[256], b2[256];

	(void)op;
	tr_bind(r, c, ps, 2, a);
	v = tr_tensor(r, a[0]);
	if (!called(a[1], "DTensorSpec"))
		tr_errat(r, a[1]->line, a[1]->col, "%s: expected DTensorSpec(mesh=..., placements=...)", r->callee);
	dm = arg_of(a[1], "mesh", 0);
	pl = arg_of(a[1], "placements", 1);
	if (!called(dm, "DeviceMesh"))
		tr_errat(r, a[1]->line, a[1]->col, "%s: DTensorSpec without a DeviceMesh(...)", r->callee);
	nm = mesh_shape(r, dm, mesh);
	if (!pl || (pl->kind != E_TUPLE && pl->kind != E_LIST) || (int)pl->n != nm)
		tr_errat(r, (pl ? pl : a[1])->line, (pl ? pl : a[1])->col,
			"%s: the placements must be a tuple of one placement for each of the mesh's %d dimensions",
			r->callee, nm);
	tr_vtype(r->fn, v, &local);
	*g = local;
	g->dtensor = true;
	for (int i = 0; i < nm; i++) {
		const Expr *p = pl->elts[i], *dim;
		int64_t d;

		if (called(p, "Replicate"))
			continue;
		if (called(p, "Partial"))
			tr_errat(r, p->line, p->col,
				"%s: a Partial placement (each rank holds a part of a sum not yet reduced) is not "
				"supported",
				r->callee);
		if (!called(p, "Shard") || !(dim = arg_of(p, "dim", 0)) || dim->kind != E_INT)
			tr_errat(r, p->line, p->col,
				"%s: placement %s is not supported (fp8cc knows Shard(dim=D) and Replicate())",
				r->callee, p->kind == E_CALL ? p->fn->s : "of this form");
		d = dim->i < 0 ? dim->i + g->rank : dim->i;
		if (d < 0 || d >= g->rank)
			tr_errat(r, dim->line, dim->col, "%s: Shard(dim=%lld) of a tensor of rank %d", r->callee,
				(long long)dim->i, g->rank);
		g->d[d] *= mesh[i];
	}
	meta = arg_of(a[1], "tensor_meta", 2);
	if (called(meta, "TensorMeta") && (shape = arg_of(meta, "shape", 0))) {
		Ints s;
		Type m = *g;
		char b3[256];

		if (called(shape, "Size") && shape->nargs == 1) /* torch.Size([16, 16]) */
			shape = shape->args[0].e;
		tr_ints(r, shape, "shape", false, &s);
		m.rank = s.n;
		memcpy(m.d, s.v, (size_t)s.n * sizeof *m.d);
		if (!tr_same_shape(&m, g))
			tr_errat(r, shape->line, shape->col,
				"%s: the spec's shape is %s, but the local shard %s over the mesh gives %s (an uneven "
				"shard, which fp8cc does not support)",
				r->callee, tr_tystr(&m, b1, sizeof b1), tr_tystr(&local, b2, sizeof b2),
				tr_tystr(g, b3, sizeof b3));
	}
	r->dpending = g;
	return v;
}
