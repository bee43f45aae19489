/* canon.c — canonicalize: bit-exact constant folding, algebraic identities that
 * hold for every input (NaN and -0 included), the NaN-propagating clamp that
 * traces spell in prims, common subexpressions, and dead code.
 *
 * The pass walks the function once, building a new one; each instruction is
 * first simplified against the new function's definitions, then looked up in
 * a table of what was already built. Constant folding runs the reference
 * interpreter on the constants, so it cannot disagree with it. */
#include <math.h>
#include <string.h>

#include "passes.h"

typedef struct {
	Func *src, *dst;
	uint32_t *map;
	uint32_t *table; /* CSE: dst instruction index + 1, open addressing */
	uint32_t cap;
} Canon;

/* ---- constant folding ---- */

static double
scalar_of(const Tensor *t)
{
	return dt_isint(t->dtype) || t->dtype == DT_B8 ? (double)tensor_geti(t, 0) : tensor_getf(t, 0);
}

/* a constant's value as the interpreter's full stores it */
static void
set_scalar(Tensor *t, double v)
{
	if (dt_isint(t->dtype) || t->dtype == DT_B8)
		tensor_seti(t, 0, ir_float_to_int(v, DT_F64, t->dtype));
	else
		tensor_setf(t, 0, v);
}

/* evaluate an elementwise op on rank-0 constants with the interpreter */
static bool
fold_elementwise(Canon *c, const Instr *in, const uint32_t *a, double *out)
{
	Func *d = c->dst, *fn;
	DType rt = (DType)c->src->vals[in->res].dtype;
	Tensor *ins[4] = { 0 }, *res[1] = { 0 };
	uint32_t p[4];
	double v[4];
	bool ok = true;
	char err[160];

	if (rt == DT_I64 || in->nargs > 4)
		return false;
	for (uint32_t i = 0; i < in->nargs; i++)
		if (d->vals[a[i]].dtype == DT_I64 || !ir_const(d, a[i], &v[i]))
			return false;
	fn = ir_func_new(d->arena, "fold");
	for (uint32_t i = 0; ok && i < in->nargs; i++) {
		DType t = (DType)d->vals[a[i]].dtype;

		p[i] = ir_param(fn, NULL, t, 0, NULL);
		if ((ok = (ins[i] = tensor_new(NULL, t, 0, NULL)) != NULL))
			set_scalar(ins[i], v[i]);
	}
	if (ok) {
		ir_return(fn, ir_instr(fn, (Op)in->op, p, (int)in->nargs, NULL, 0, rt, 0, NULL), NULL);
		ok = ir_check_instr(fn, &fn->ins[0], err, sizeof err) && ir_interpret(fn, ins, res, err, sizeof err);
	}
	if (ok)
		*out = scalar_of(res[0]);
	for (uint32_t i = 0; i < in->nargs; i++)
		tensor_free(ins[i]);
	tensor_free(res[0]);
	return ok;
}

/* a constant result, or false */
static bool
fold(Canon *c, const Instr *in, const uint32_t *a, double *out)
{
	Func *d = c->dst;

	if (in->op == OP_FULL || in->nargs == 0)
		return false;
	if (op_elementwise((Op)in->op))
		return fold_elementwise(c, in, a, out);
	switch (in->op) {
	case OP_BROADCAST:
	case OP_RESHAPE:
	case OP_TRANSPOSE:
	case OP_SQUEEZE:
	case OP_SLICE:
	case OP_CLONE:
	case OP_AMAX:
	case OP_AMIN:      return ir_numel(d, a[0]) > 0 && ir_const(d, a[0], out);
	default:           return false;
	}
}

/* ---- identities ---- */

static bool
is_const(Func *d, uint32_t v, double want)
{
	double c;

	return ir_const(d, v, &c) && c == want && signbit(c) == signbit(want);
}

static bool
shape_is_result(Canon *c, uint32_t v, const Instr *in)
{
	const Value *r = &c->src->vals[in->res], *x = &c->dst->vals[v];

	return r->rank == x->rank && r->dtype == x->dtype &&
		memcmp(ir_dims(c->src, in->res), ir_dims(c->dst, v), r->rank * sizeof(int64_t)) == 0;
}

static const Instr *
def_op(Func *d, uint32_t v, Op op)
{
	const Instr *in = ir_def(d, v);

	return in && in->op == op ? in : NULL;
}

/* where(ne(x,x), x, where(cmp(x,k), x, k)) with k a constant that is neither
 * zero nor NaN is maximum(x,k) for cmp = gt, minimum(x,k) for cmp = lt: both
 * return x when x is NaN, and agree elsewhere (at x == k both give k). */
static Op
clamp_pattern(Func *d, const uint32_t *a, uint32_t *x, uint32_t *k)
{
	const Instr *ne = def_op(d, a[0], OP_NE), *inner = def_op(d, a[2], OP_WHERE), *cmp;
	double kv;

	if (!ne || !inner || ir_args(d, ne)[0] != a[1] || ir_args(d, ne)[1] != a[1])
		return OP_COUNT;
	cmp = ir_def(d, ir_args(d, inner)[0]);
	if (!cmp || (cmp->op != OP_GT && cmp->op != OP_LT))
		return OP_COUNT;
	*x = a[1];
	*k = ir_args(d, cmp)[1];
	if (ir_args(d, cmp)[0] != *x || ir_args(d, inner)[1] != *x || ir_args(d, inner)[2] != *k)
		return OP_COUNT;
	if (!ir_const(d, *k, &kv) || kv == 0 || isnan(kv) || d->vals[*k].rank != 0)
		return OP_COUNT;
	return cmp->op == OP_GT ? OP_MAXIMUM : OP_MINIMUM;
}

/* the value in stands for, or IR_NONE; may build a replacement (*op set) */
static uint32_t
identity(Canon *c, const Instr *in, const uint32_t *a, Op *newop, uint32_t *na)
{
	Func *d = c->dst;
	const Instr *inner;

	switch (in->op) {
	case OP_CONVERT: return d->vals[a[0]].dtype == c->src->vals[in->res].dtype ? a[0] : IR_NONE;
	case OP_MUL:
		if (is_const(d, a[1], 1) && shape_is_result(c, a[0], in))
			return a[0];
		return is_const(d, a[0], 1) && shape_is_result(c, a[1], in) ? a[1] : IR_NONE;
	case OP_DIV:         return is_const(d, a[1], 1) && shape_is_result(c, a[0], in) ? a[0] : IR_NONE;
	case OP_ADD:         return is_const(d, a[1], -0.0) && shape_is_result(c, a[0], in) ? a[0] : IR_NONE;
	case OP_SUB:         return is_const(d, a[1], 0.0) && shape_is_result(c, a[0], in) ? a[0] : IR_NONE;
	case OP_NEG:
	case OP_LOGICAL_NOT: return (inner = def_op(d, a[0], (Op)in->op)) ? ir_args(d, inner)[0] : IR_NONE;
	case OP_ABS:
		if (def_op(d, a[0], OP_ABS))
			return a[0];
		if ((inner = def_op(d, a[0], OP_NEG))) {
			*newop = OP_ABS;
			na[0] = ir_args(d, inner)[0];
		}
		return IR_NONE;
	case OP_MAXIMUM:
	case OP_MINIMUM: return a[0] == a[1] ? a[0] : IR_NONE;
	case OP_WHERE:
		if (a[1] == a[2] && shape_is_result(c, a[1], in))
			return a[1];
		*newop = clamp_pattern(d, a, &na[0], &na[1]); /* OP_COUNT if none */
		return IR_NONE;
	default: return IR_NONE;
	}
}

/* ---- common subexpressions ---- */

static uint32_t
hash_instr(Func *d, const Instr *in)
{
	uint32_t h = 2166136261u ^ in->op;
	const Value *r = &d->vals[in->res];

	for (uint32_t i = 0; i < in->nargs; i++)
		h = (h ^ ir_args(d, in)[i]) * 16777619u;
	for (uint32_t i = 0; i < in->nattr; i++)
		h = (h ^ (uint32_t)ir_attr(d, in)[i]) * 16777619u;
	for (int i = 0; i < r->rank; i++)
		h = (h ^ (uint32_t)ir_dims(d, in->res)[i]) * 16777619u;
	return (h ^ r->dtype) * 16777619u;
}

static bool
same_instr(Func *d, const Instr *x, const Instr *y)
{
	return x->op == y->op && x->ext == y->ext && x->nargs == y->nargs && x->nattr == y->nattr &&
		x->flags == y->flags && memcmp(&x->fval, &y->fval, sizeof x->fval) == 0 &&
		d->vals[x->res].dtype == d->vals[y->res].dtype && ir_same_shape(d, x->res, y->res) &&
		ir_is_rowmajor(d, x->res) == ir_is_rowmajor(d, y->res) &&
		memcmp(ir_args(d, x), ir_args(d, y), x->nargs * sizeof(uint32_t)) == 0 &&
		memcmp(ir_attr(d, x), ir_attr(d, y), x->nattr * sizeof(int64_t)) == 0;
}

/* the earlier copy of the last instruction of dst, or IR_NONE (then it is entered) */
static uint32_t
cse(Canon *c)
{
	Func *d = c->dst;
	const Instr *in = &d->ins[d->nins - 1];
	uint32_t i = hash_instr(d, in) & (c->cap - 1);

	for (; c->table[i]; i = (i + 1) & (c->cap - 1))
		if (same_instr(d, &d->ins[c->table[i] - 1], in))
			return d->ins[c->table[i] - 1].res;
	c->table[i] = d->nins;
	return IR_NONE;
}

/* drop the instruction just built (it duplicated an earlier one) */
static void
unbuild(Func *d)
{
	d->nins--;
	d->nvals--;
}

static void
canon_instr(Canon *c, const Instr *in)
{
	uint32_t a[64], na[4], r, prev;
	Op newop = OP_COUNT;
	double k;
	const Value *v = &c->src->vals[in->res];

	for (uint32_t i = 0; i < in->nargs; i++)
		a[i] = c->map[ir_args(c->src, in)[i]];
	if (fold(c, in, a, &k)) {
		r = ir_full(c->dst, k, (DType)v->dtype, v->rank, ir_dims(c->src, in->res));
		c->dst->vals[r].name = v->name;
	} else if ((r = identity(c, in, a, &newop, na)) != IR_NONE) {
		c->map[in->res] = r;
		return;
	} else if (newop != OP_COUNT) {
		r = ir_instr(c->dst, newop, na, newop == OP_ABS ? 1 : 2, NULL, 0, (DType)v->dtype, v->rank,
			ir_dims(c->src, in->res));
		c->dst->vals[r].name = v->name;
	} else {
		r = ir_copy_instr(c->dst, c->src, in, c->map);
	}
	if ((prev = cse(c)) != IR_NONE) {
		unbuild(c->dst);
		r = prev;
	}
	c->map[in->res] = r;
}

Func *
pass_canonicalize(Func *fn)
{
	Canon c = { .src = fn };

	c.dst = ir_rewrite_begin(fn, &c.map);
	for (c.cap = 64; c.cap < 2 * fn->nins + 2; c.cap *= 2)
		;
	c.table = arena_alloc(fn->arena, c.cap * sizeof *c.table);
	for (uint32_t i = 0; i < fn->nins; i++)
		canon_instr(&c, &fn->ins[i]);
	ir_rewrite_end(c.dst, fn, c.map);
	return pass_dce(c.dst);
}

/* ---- dead code ---- */

Func *
pass_dce(Func *fn)
{
	bool *live = arena_alloc(fn->arena, fn->nvals + 1);
	uint32_t *map, ndead = 0;
	Func *dst;

	for (uint32_t i = 0; i < fn->nrets; i++)
		live[fn->rets[i]] = true;
	for (uint32_t i = fn->nins; i-- > 0;) {
		const Instr *in = &fn->ins[i];

		if (in->op == OP_EXTERN && ir_attr(fn, in)[0] == in->ext->nres - 1) {
			/* its last result, seen first: every use of the call is behind; the
			 * call lives, all its results, when one of them is used */
			const Instr *r0 = in - (in->ext->nres - 1);
			bool any = false;

			for (uint32_t k = 0; k < in->ext->nres; k++)
				any |= live[r0[k].res];
			for (uint32_t k = 0; k < in->ext->nres; k++)
				live[r0[k].res] = any;
		}
		if (in->op == OP_MATMUL_AUX) /* its GEMM writes it anyway; the pair lives together */
			live[in->res] |= live[ir_args(fn, in)[0]];
		if (!live[in->res]) {
			ndead++;
			continue;
		}
		for (uint32_t j = 0; j < in->nargs; j++)
			live[ir_args(fn, in)[j]] = true;
	}
	if (ndead == 0)
		return fn;
	dst = ir_rewrite_begin(fn, &map);
	for (uint32_t i = 0; i < fn->nins; i++)
		if (live[fn->ins[i].res])
			ir_copy_instr(dst, fn, &fn->ins[i], map);
	ir_rewrite_end(dst, fn, map);
	return dst;
}
