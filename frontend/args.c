/* args.c — what lowerings share: a call's arguments bound to a callee's
 * parameters, operands and Python numbers, and instructions built and
 * checked as they are appended. */
#include "trace.h"

/* ---- operands ---- */

uint32_t
tr_tensor(Reader *r, const Expr *e)
{
	Sym *s;

	if (e->kind != E_NAME)
		tr_errat(r, e->line, e->col, "%s: expected a tensor", r->callee);
	s = tr_lookup(r, e);
	if (s->kind == SYM_OBJ)
		tr_errat(r, e->line, e->col, "'%s' is not a tensor but a %s object (line %u)", e->s, s->owner, s->line);
	if (s->kind == SYM_NUM)
		tr_errat(r, e->line, e->col, "%s: expected a tensor; '%s' is a number", r->callee, e->s);
	if (s->kind == SYM_COLL)
		tr_errat(r, e->line, e->col, "%s: expected a tensor; '%s' is a collection", r->callee, e->s);
	if (s->dglobal)
		tr_errat(r, e->line, e->col,
			"%s: '%s' is a DTensor, which fp8cc reads only as its local shard, through "
			"get_dtensor_inner_tensor",
			r->callee, e->s);
	return s->val;
}

/* the literal a name of a known Python number stands for, at the name's place */
static const Expr *
number_literal(Reader *r, const Expr *e, const Sym *s)
{
	Expr *x = arena_alloc(r->a, sizeof *x);

	x->kind = s->numkind == 'f' ? E_FLOAT : s->numkind == 'i' ? E_INT : E_BOOL;
	x->line = e->line;
	x->col = e->col;
	x->f = s->num;
	x->i = ir_float_to_int(s->num, DT_F64, DT_I64); /* NaN and inf too: no cast past int64 */
	return x;
}

/* e, or the literal it names when it names a Python number known here;
 * inside tuples and lists too (shapes may hold them) */
const Expr *
tr_resolve(Reader *r, const Expr *e)
{
	const Sym *s;
	Expr *t;

	if (e && e->kind == E_NAME && (s = tr_sym(r, e->s)) && s->kind == SYM_NUM && s->val == IR_NONE)
		return number_literal(r, e, s);
	if (!e || (e->kind != E_TUPLE && e->kind != E_LIST))
		return e;
	t = arena_alloc(r->a, sizeof *t);
	*t = *e;
	t->elts = arena_alloc(r->a, (e->n + 1) * sizeof *t->elts);
	for (uint32_t i = 0; i < e->n; i++)
		t->elts[i] = (Expr *)tr_resolve(r, e->elts[i]);
	return t;
}

/* a tensor, a Python number written or known, or one known at run time */
Opnd
tr_operand(Reader *r, const Expr *e)
{
	Opnd o = { e, false, false, 0 };
	const Sym *s;

	if (e->kind == E_INT || e->kind == E_FLOAT || e->kind == E_BOOL)
		return o;
	if (e->kind != E_NAME)
		tr_errat(r, e->line, e->col, "%s: expected a tensor or a number", r->callee);
	s = tr_lookup(r, e);
	if (s->kind == SYM_NUM && s->val == IR_NONE) {
		o.e = number_literal(r, e, s);
		return o;
	}
	if (s->kind == SYM_NUM) {
		o.num = true;
		o.v = s->val;
		return o;
	}
	o.tensor = true;
	o.v = tr_tensor(r, e);
	return o;
}

/* the dtype of a Python number of kind 'f', 'i' or 'b' at run time */
DType
tr_number_dtype(char kind)
{
	return kind == 'f' ? DT_F64 : kind == 'i' ? DT_I64 : DT_B8;
}

DType
tr_vdtype(Reader *r, uint32_t v)
{
	return (DType)r->fn->vals[v].dtype;
}

/* the Python number e as a constant of dtype t, rounded as PyTorch rounds a
 * Python scalar (double -> float -> narrower) */
double
tr_scalar_in(Reader *r, const Expr *e, DType t)
{
	const DTypeInfo *d = &ir_dtypes[t];
	double x = e->kind == E_FLOAT ? e->f : (double)e->i;
	int64_t lo, hi;
	float f = (float)x;

	switch (d->kind) {
	case DK_BOOL:
		if (e->kind == E_FLOAT || e->i < 0 || e->i > 1)
			tr_errat(r, e->line, e->col, "%s: scalar does not fit in b8", r->callee);
		return x;
	case DK_INT:
	case DK_UINT:
		if (e->kind == E_FLOAT)
			tr_errat(r, e->line, e->col, "%s: float scalar with an %s tensor", r->callee, d->thunder);
		lo = d->kind == DK_UINT ? 0 : -(INT64_C(1) << (d->bits - 2)) * 2;
		hi = d->bits == 64 ? INT64_MAX : (d->kind == DK_UINT ? (INT64_C(1) << d->bits) - 1 : -lo - 1);
		if (e->i < lo || e->i > hi || e->i > (INT64_C(1) << 53) || e->i < -(INT64_C(1) << 53))
			tr_errat(r, e->line, e->col, "%s: scalar %lld does not fit in %s", r->callee, (long long)e->i,
				d->thunder);
		return x;
	case DK_FLOAT:
		return t == DT_F64     ? x
			: t == DT_F32  ? (double)f
			: t == DT_BF16 ? (double)bf16_to_f32(f32_to_bf16(f))
				       : (double)f16_to_f32(f32_to_f16(f));
	case DK_FP8:
		return t == DT_F8E4M3FN ? (double)e4m3fn_to_f32(f32_to_e4m3fn(f)) : (double)e5m2_to_f32(f32_to_e5m2(f));
	}
	unreachable();
}

bool
tr_exact_in(Reader *r, const Expr *e, DType t)
{
	double x = e->kind == E_FLOAT ? e->f : (double)e->i;

	return tr_scalar_in(r, e, t) == x;
}

/* ---- building instructions ---- */

/* check the last instruction; the verifier's message starts "%name = op: " */
void
tr_check_last(Reader *r)
{
	char err[256];
	const char *why;

	if (ir_check_instr(r->fn, &r->fn->ins[r->fn->nins - 1], err, sizeof err))
		return;
	why = strstr(err, ": ");
	tr_errat(r, r->cur->line, r->ccol, "%s: %s", r->callee, why ? why + 2 : err);
}

/* append an instruction of type t and check it */
uint32_t
tr_emit(Reader *r, Op op, const uint32_t *args, int nargs, const int64_t *attr, int nattr, const Type *t)
{
	uint32_t v = ir_instr(r->fn, op, args, nargs, attr, nattr, t->dt, t->rank, t->d);

	tr_check_last(r);
	return v;
}

uint32_t
tr_konst(Reader *r, double x, DType t)
{
	return ir_full(r->fn, x, t, 0, NULL);
}

uint32_t
tr_convert(Reader *r, uint32_t v, DType t)
{
	Type ty;

	tr_vtype(r->fn, v, &ty);
	ty.dt = t;
	return tr_emit(r, OP_CONVERT, &v, 1, NULL, 0, &ty);
}

/* ---- arguments ---- */

static bool
param_is(const char *names, const char *kw)
{
	size_t n = strlen(kw);

	for (const char *p = names; p; p = strchr(p, '|'), p = p ? p + 1 : NULL)
		if (strncmp(p, kw, n) == 0 && (p[n] == 0 || p[n] == '|'))
			return true;
	return false;
}

/* match the call's arguments to ps; out[i] is NULL for an absent optional */
void
tr_bind(Reader *r, const Expr *c, const Param *ps, int np, const Expr **out)
{
	int npos = 0, i;

	for (i = 0; i < np; i++)
		out[i] = NULL;
	for (uint32_t k = 0; k < c->nargs; k++) {
		const Arg *a = &c->args[k];

		if (!a->kw && npos >= np)
			tr_errat(r, a->e->line, a->e->col, "too many arguments to %s (it takes %d)", r->callee, np);
		for (i = a->kw ? 0 : npos++; a->kw && i < np && !param_is(ps[i].name, a->kw); i++)
			;
		if (i == np)
			tr_errat(r, c->line, a->kwcol, "%s got an unexpected keyword argument '%s'", r->callee, a->kw);
		if (out[i])
			tr_errat(r, c->line, a->kw ? a->kwcol : a->e->col, "%s got argument '%.*s' twice", r->callee,
				(int)strcspn(ps[i].name, "|"), ps[i].name);
		out[i] = tr_resolve(r, a->e);
	}
	for (i = 0; i < np; i++)
		if (!out[i] && !ps[i].opt)
			tr_errat(r, c->line, r->ccol, "%s is missing argument '%.*s' (got %u)", r->callee,
				(int)strcspn(ps[i].name, "|"), ps[i].name, c->nargs);
}

bool
tr_isnone(const Expr *e)
{
	return !e || e->kind == E_NONE;
}

/* the name an argument is, NULL if it is not a name */
const char *
tr_name_of(const Expr *e)
{
	return e && e->kind == E_NAME ? e->s : NULL;
}

static const struct {
	const char *name;
	DType t;
} torch_alias[] = {
	{ "float", DT_F32 },
	{ "double", DT_F64 },
	{ "half", DT_F16 },
	{ "long", DT_I64 },
	{ "int", DT_I32 },
	{ "short", DT_I16 },
};

/* dtype := "dtypes." LONG ["_"] | "torch." TORCH */
DType
tr_dtype_arg(Reader *r, const Expr *e)
{
	const char *s = e->kind == E_NAME ? e->s : "";
	size_t n;
	int t = -1;

	if (strncmp(s, "dtypes.", 7) == 0) {
		n = strlen(s + 7);
		t = dt_lookup(s + 7, n > 1 && s[6 + n] == '_' ? n - 1 : n, 2);
	} else if (!strcmp(s, "float") || !strcmp(s, "int") || !strcmp(s, "bool")) {
		t = s[0] == 'f' ? DT_F32 : s[0] == 'i' ? DT_I64 : DT_B8; /* Thunder's weak dtypes */
	} else if (strncmp(s, "torch.", 6) == 0) {
		t = dt_lookup(s + 6, strlen(s + 6), 3);
		for (size_t i = 0; t < 0 && i < NELEM(torch_alias); i++)
			if (strcmp(s + 6, torch_alias[i].name) == 0)
				t = (int)torch_alias[i].t;
	} else {
		tr_errat(r, e->line, e->col, "%s: expected a dtype (dtypes.X or torch.X)", r->callee);
	}
	if (t < 0)
		tr_errat(r, e->line, e->col, "unknown dtype '%s'", s);
	return (DType)t;
}

bool
tr_bool_arg(Reader *r, const Expr *e, bool dflt)
{
	if (tr_isnone(e))
		return dflt;
	if (e->kind != E_BOOL)
		tr_errat(r, e->line, e->col, "%s: expected True or False", r->callee);
	return e->i != 0;
}

int64_t
tr_int_arg(Reader *r, const Expr *e, const char *what)
{
	if (e->kind != E_INT)
		tr_errat(r, e->line, e->col, "%s: %s must be an int", r->callee, what);
	return e->i;
}

/* ints := "(" [INT {"," INT}] ")" | "[" ... "]" | INT when `one` */
void
tr_ints(Reader *r, const Expr *e, const char *what, bool one, Ints *out)
{
	out->n = 0;
	out->list = e;
	if (one && e->kind == E_INT) {
		out->n = 1;
		out->v[0] = e->i;
		out->e[0] = e;
		return;
	}
	if (e->kind != E_TUPLE && e->kind != E_LIST)
		tr_errat(r, e->line, e->col, "%s: %s must be a tuple of ints", r->callee, what);
	if (e->n > IR_MAXRANK)
		tr_errat(r, e->line, e->col, "%s: %s has %u entries; the maximum rank is %d", r->callee, what, e->n,
			IR_MAXRANK);
	for (uint32_t i = 0; i < e->n; i++) {
		out->v[i] = tr_int_arg(r, e->elts[i], what);
		out->e[i] = e->elts[i];
	}
	out->n = (int)e->n;
}

/* a shape: non-negative dims (one -1 when `infer`) that can be addressed */
void
tr_shape_arg(Reader *r, const Expr *e, bool infer, Ints *s)
{
	Type t = { .dt = DT_B8 };

	tr_ints(r, e, "shape", false, s);
	for (int i = 0; i < s->n; i++) {
		if (s->v[i] < 0 && !(infer && s->v[i] == -1))
			tr_errat(
				r, e->line, s->e[i]->col, "%s: negative dimension %lld", r->callee, (long long)s->v[i]);
		t.d[t.rank++] = s->v[i] < 0 ? 1 : s->v[i];
	}
	tr_check_numel(r, e->line, e->col, &t);
}

/* a call's arguments from k on as one sequence: the one tuple or list
 * given, or the arguments themselves gathered in *list
 * (Tensor.view(x, 4, -1), Tensor.permute(x, 1, 0)); none may be a keyword */
const Expr *
tr_rest_args(Reader *r, const Expr *c, uint32_t k, Expr *list)
{
	for (uint32_t i = k; i < c->nargs; i++)
		if (c->args[i].kw)
			tr_errat(r, c->line, c->args[i].kwcol, "%s got an unexpected keyword argument '%s'", r->callee,
				c->args[i].kw);
	if (c->nargs == k + 1 && c->args[k].e->kind != E_INT)
		return c->args[k].e;
	memset(list, 0, sizeof *list);
	list->kind = E_TUPLE;
	list->line = c->line;
	list->col = c->args[k].e->col;
	for (uint32_t i = k; i < c->nargs; i++)
		tr_push_elt(r, list, c->args[i].e);
	return list;
}

/* a dim in [-rank, rank), made non-negative */
int64_t
tr_norm_dim(Reader *r, const Expr *e, int64_t d, int rank)
{
	if (d < -rank || d >= rank)
		tr_errat(r, e->line, e->col, "%s: dimension %lld is out of range for rank %d", r->callee, (long long)d,
			rank);
	return d < 0 ? d + rank : d;
}

/* dims normalized, sorted, distinct */
void
tr_dims_arg(Reader *r, const Expr *e, int rank, Ints *d)
{
	tr_ints(r, e, "dims", true, d);
	for (int i = 0; i < d->n; i++) {
		int64_t v = tr_norm_dim(r, d->e[i], d->v[i], rank);
		const Expr *x = d->e[i];
		int j = i;

		for (; j > 0 && d->v[j - 1] > v; j--) {
			d->v[j] = d->v[j - 1];
			d->e[j] = d->e[j - 1];
		}
		if (j > 0 && d->v[j - 1] == v)
			tr_errat(r, x->line, x->col, "%s: dimension %lld appears twice", r->callee, (long long)v);
		d->v[j] = v;
		d->e[j] = x;
	}
}

/* the type t without the dims in d (sorted) */
void
tr_drop_dims(Type *t, const Ints *d)
{
	int k = 0;

	for (int i = 0, j = 0; i < t->rank; i++) {
		if (j < d->n && d->v[j] == i)
			j++;
		else
			t->d[k++] = t->d[i];
	}
	t->rank = k;
}
