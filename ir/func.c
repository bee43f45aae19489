/* func.c — SSA functions and the builder.
 *
 * Builders append: parameters first, then instructions in order, each with
 * exactly one result value. Side arrays (argv, ints) grow in the arena. */
#include <string.h>

#include "ir.h"

#define GROW(fn, arr, n, cap, need) arena_grow((fn)->arena, (void **)&(fn)->arr, &(fn)->cap, (need), sizeof *(fn)->arr)

Func *
ir_func_new(Arena *a, const char *name)
{
	Func *fn = arena_alloc(a, sizeof *fn);

	fn->arena = a;
	fn->name = name ? arena_strndup(a, name, strlen(name)) : "main";
	return fn;
}

uint32_t
ir_push_ints(Func *fn, const int64_t *v, int n)
{
	uint32_t at = fn->nints;

	GROW(fn, ints, nints, capints, fn->nints + (uint32_t)n + 1);
	if (n > 0)
		memcpy(&fn->ints[at], v, (size_t)n * sizeof *v);
	fn->nints += (uint32_t)n;
	return at;
}

uint32_t
ir_push_ids(Func *fn, const uint32_t *v, int n)
{
	uint32_t at = fn->nargv;

	GROW(fn, argv, nargv, capargv, fn->nargv + (uint32_t)n + 1);
	if (n > 0)
		memcpy(&fn->argv[at], v, (size_t)n * sizeof *v);
	fn->nargv += (uint32_t)n;
	return at;
}

static uint32_t
newval(Func *fn, const char *name, DType t, int rank, const int64_t *dims, uint32_t def)
{
	uint32_t id = fn->nvals;
	Value *v;

	if (rank < 0 || rank > IR_MAXRANK)
		die("rank %d out of range", rank);
	GROW(fn, vals, nvals, capvals, fn->nvals + 1);
	v = &fn->vals[fn->nvals++];
	v->dtype = (uint8_t)t;
	v->rank = (uint8_t)rank;
	v->shape = ir_push_ints(fn, dims, rank);
	v->layout = IR_NONE;
	v->def = def;
	v->name = name ? arena_strndup(fn->arena, name, strlen(name)) : NULL;
	return id;
}

Program *
ir_program_new(Arena *a)
{
	Program *p = arena_alloc(a, sizeof *p);

	p->arena = a;
	return p;
}

void
ir_program_add(Program *p, Func *fn)
{
	arena_grow(p->arena, (void **)&p->fns, &p->capfns, p->nfns + 1, sizeof *p->fns);
	p->fns[p->nfns++] = fn;
}

uint32_t
ir_param(Func *fn, const char *name, DType t, int rank, const int64_t *dims)
{
	uint32_t id = newval(fn, name, t, rank, dims, IR_NONE), cap = fn->capparams;

	GROW(fn, params, nparams, capparams, fn->nparams + 1);
	arena_grow(fn->arena, (void **)&fn->pslot, &cap, fn->nparams + 1, sizeof *fn->pslot);
	fn->pslot[fn->nparams] = -1;
	fn->params[fn->nparams++] = id;
	return id;
}

void
ir_set_param_slot(Func *fn, uint32_t i, int32_t slot)
{
	fn->pslot[i] = slot;
}

void
ir_set_ret_slot(Func *fn, uint32_t i, int32_t slot)
{
	fn->rslot[i] = slot;
}

void
ir_set_ret_update(Func *fn, uint32_t i, int32_t p)
{
	fn->rupd[i] = p;
}

uint32_t
ir_instr(Func *fn, Op op, const uint32_t *args, int nargs, const int64_t *attr, int nattr, DType t, int rank,
	const int64_t *dims)
{
	Instr *in;
	uint32_t idx = fn->nins;

	GROW(fn, ins, nins, capins, fn->nins + 1);
	in = &fn->ins[fn->nins++];
	memset(in, 0, sizeof *in);
	in->op = (uint16_t)op;
	in->args = ir_push_ids(fn, args, nargs);
	in->nargs = (uint32_t)nargs;
	in->attr = ir_push_ints(fn, attr, nattr);
	in->nattr = (uint32_t)nattr;
	in->kernel = -1;
	in->res = newval(fn, NULL, t, rank, dims, idx);
	return in->res;
}

uint32_t
ir_extern(Func *fn, const Extern *ext, const uint32_t *ops, int nops, const DType *dts, const int *ranks,
	const int64_t (*dims)[IR_MAXRANK])
{
	uint32_t first = IR_NONE;

	for (uint32_t i = 0; i < ext->nres; i++) {
		int64_t at = i;
		uint32_t r = ir_instr(fn, OP_EXTERN, ops, nops, &at, 1, dts[i], ranks[i], dims[i]);

		fn->ins[fn->nins - 1].ext = ext;
		if (i == 0)
			first = r;
	}
	return first;
}

uint32_t
ir_full(Func *fn, double v, DType t, int rank, const int64_t *dims)
{
	uint32_t r = ir_instr(fn, OP_FULL, NULL, 0, NULL, 0, t, rank, dims);

	fn->ins[fn->nins - 1].fval = v;
	return r;
}

static void
add_ret(Func *fn, uint32_t v, const char *name)
{
	uint32_t cap = fn->caprets, cap2 = fn->caprets, cap3 = fn->caprets;

	GROW(fn, rets, nrets, caprets, fn->nrets + 1);
	arena_grow(fn->arena, (void **)&fn->retnames, &cap, fn->nrets + 1, sizeof *fn->retnames);
	arena_grow(fn->arena, (void **)&fn->rslot, &cap2, fn->nrets + 1, sizeof *fn->rslot);
	arena_grow(fn->arena, (void **)&fn->rupd, &cap3, fn->nrets + 1, sizeof *fn->rupd);
	fn->retnames[fn->nrets] = name ? arena_strndup(fn->arena, name, strlen(name)) : NULL;
	fn->rslot[fn->nrets] = -1;
	fn->rupd[fn->nrets] = -1;
	fn->rets[fn->nrets++] = v;
}

static bool
retname_used(Func *fn, const char *name)
{
	char nb[16];

	for (uint32_t i = 0; i < fn->nrets; i++)
		if (!strcmp(ir_retname(fn, i, nb), name))
			return true;
	return false;
}

/* Outputs have distinct names (the runtime and safetensors find them by
 * name): one already taken — a value returned twice, or two outputs named
 * alike — becomes NAME_1, NAME_2, ... */
void
ir_return(Func *fn, uint32_t v, const char *name)
{
	char nb[16];
	const char *want = name ? name : ir_name(fn, v, nb), *n = want;

	for (uint32_t k = 1; retname_used(fn, n); k++)
		n = arena_printf(fn->arena, "%s_%u", want, k);
	add_ret(fn, v, n == want ? name : n);
}

const char *
ir_retname(Func *fn, uint32_t i, char buf[16])
{
	return fn->retnames[i] ? fn->retnames[i] : ir_name(fn, fn->rets[i], buf);
}

/* the element count; INT64_MAX when it does not fit (the verifier rejects those) */
int64_t
ir_numel(Func *fn, uint32_t v)
{
	const int64_t *d = ir_dims(fn, v);
	int64_t n = 1;

	for (int i = 0; i < fn->vals[v].rank; i++) {
		if (d[i] < 0 || __builtin_mul_overflow(n, d[i], &n))
			return INT64_MAX;
	}
	return n;
}

bool
ir_same_shape(Func *fn, uint32_t a, uint32_t b)
{
	const Value *va = &fn->vals[a], *vb = &fn->vals[b];

	return va->rank == vb->rank && memcmp(ir_dims(fn, a), ir_dims(fn, b), va->rank * sizeof(int64_t)) == 0;
}

const char *
ir_name(Func *fn, uint32_t v, char buf[16])
{
	if (fn->vals[v].name)
		return fn->vals[v].name;
	snprintf(buf, 16, "%u", v);
	return buf;
}

uint32_t *
ir_uses(Func *fn)
{
	uint32_t *n = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *n);

	for (uint32_t i = 0; i < fn->nins; i++)
		for (uint32_t j = 0; j < fn->ins[i].nargs; j++)
			n[fn->argv[fn->ins[i].args + j]]++;
	for (uint32_t i = 0; i < fn->nrets; i++)
		n[fn->rets[i]]++;
	return n;
}

/* ---- rewriting: passes build a new function while walking the old one ---- */

Func *
ir_rewrite_begin(Func *src, uint32_t **map)
{
	Func *dst = ir_func_new(src->arena, src->name);

	*map = arena_alloc(src->arena, (src->nvals + 1) * sizeof **map);
	for (uint32_t v = 0; v < src->nvals; v++)
		(*map)[v] = IR_NONE;
	for (uint32_t p = 0; p < src->nparams; p++) {
		uint32_t v = src->params[p], n;

		n = ir_param(dst, src->vals[v].name, (DType)src->vals[v].dtype, src->vals[v].rank, ir_dims(src, v));
		dst->pslot[p] = src->pslot[p];
		if (src->vals[v].layout != IR_NONE)
			dst->vals[n].layout = ir_push_ints(dst, &src->ints[src->vals[v].layout], src->vals[v].rank);
		(*map)[v] = n;
	}
	return dst;
}

uint32_t
ir_copy_instr(Func *dst, Func *src, const Instr *in, uint32_t *map)
{
	uint32_t args[64], r;
	const Value *v = &src->vals[in->res];
	Instr *out;

	if (in->nargs > NELEM(args))
		die("too many operands");
	for (uint32_t i = 0; i < in->nargs; i++) {
		args[i] = map[ir_args(src, in)[i]];
		if (args[i] == IR_NONE)
			die("operand %u of instruction %u has no mapping", i, v->def);
	}
	r = ir_instr(dst, (Op)in->op, args, (int)in->nargs, ir_attr(src, in), (int)in->nattr, (DType)v->dtype, v->rank,
		ir_dims(src, in->res));
	out = &dst->ins[dst->nins - 1];
	out->fval = in->fval;
	out->flags = in->flags;
	out->ext = in->ext;
	out->line = in->line;
	out->col = in->col;
	dst->vals[r].name = v->name;
	if (v->layout != IR_NONE)
		dst->vals[r].layout = ir_push_ints(dst, &src->ints[v->layout], v->rank);
	map[in->res] = r;
	return r;
}

void
ir_rewrite_end(Func *dst, Func *src, const uint32_t *map)
{
	char nb[16];

	/* outputs keep their names, also those of values known by their id */
	for (uint32_t i = 0; i < src->nrets; i++) {
		if (map[src->rets[i]] == IR_NONE)
			die("returned value has no mapping");
		add_ret(dst, map[src->rets[i]], ir_retname(src, i, nb));
		dst->rslot[i] = src->rslot[i];
		dst->rupd[i] = src->rupd[i];
	}
}

int
ir_epilogue(Func *fn, const Instr *in)
{
	return in->op == OP_MATMUL && in->nattr ? (int)ir_attr(fn, in)[0] : EPI_NONE;
}

int64_t
ir_ranks(Func *fn, const Instr *in)
{
	if (!op_collective((Op)in->op) || !in->nattr)
		return 0;
	return ir_attr(fn, in)[in->nattr - 1];
}

ScaleMode
ir_scale_mode(Func *fn, const Instr *in)
{
	const uint32_t *a = ir_args(fn, in);
	const int64_t *sa, *sb;
	int64_t M, K, N;

	if (in->op != OP_SCALED_MM || in->nargs < 4 || fn->vals[a[2]].rank != 2 || fn->vals[a[3]].rank != 2 ||
		fn->vals[a[0]].rank != 2 || fn->vals[a[1]].rank != 2)
		return SCALES_TENSOR;
	sa = ir_dims(fn, a[2]), sb = ir_dims(fn, a[3]);
	M = ir_dims(fn, a[0])[0], K = ir_dims(fn, a[0])[1], N = ir_dims(fn, a[1])[1];
	if (sa[0] == M && sa[1] == 1 && sb[0] == 1 && sb[1] == N)
		return SCALES_ROW;
	int64_t KB = (K + IR_SCALE_BLOCK - 1) / IR_SCALE_BLOCK, NB = (N + IR_SCALE_BLOCK - 1) / IR_SCALE_BLOCK;

	if (sa[0] == M && sa[1] == KB && sb[0] == KB && sb[1] == NB)
		return SCALES_BLOCK;
	return SCALES_TENSOR;
}

/* the dim of v at memory position t, outermost first */
static int64_t
dim_at(Func *fn, uint32_t v, int t)
{
	return fn->vals[v].layout == IR_NONE ? t : fn->ints[fn->vals[v].layout + t];
}

bool
ir_same_bytes(Func *fn, const Instr *in)
{
	uint32_t x, y = in->res;

	if (in->nargs != 1)
		return false;
	x = ir_args(fn, in)[0];
	if (in->op == OP_RESHAPE || in->op == OP_SQUEEZE)
		return ir_is_rowmajor(fn, x) && ir_is_rowmajor(fn, y);
	if (in->op != OP_TRANSPOSE)
		return false;
	for (int t = 0; t < fn->vals[y].rank; t++)
		if (ir_attr(fn, in)[dim_at(fn, y, t)] != dim_at(fn, x, t))
			return false;
	return true;
}

bool
ir_is_rowmajor(Func *fn, uint32_t v)
{
	const Value *val = &fn->vals[v];

	if (val->layout == IR_NONE)
		return true;
	for (int i = 0; i < val->rank; i++)
		if (fn->ints[val->layout + i] != i)
			return false;
	return true;
}

const Instr *
ir_def(Func *fn, uint32_t v)
{
	return fn->vals[v].def == IR_NONE ? NULL : &fn->ins[fn->vals[v].def];
}

/* the value of a rank-0 or uniform full constant, if v is one */
bool
ir_const(Func *fn, uint32_t v, double *c)
{
	const Instr *d = ir_def(fn, v);

	if (!d || d->op != OP_FULL)
		return false;
	*c = d->fval;
	return true;
}
