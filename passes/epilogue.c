/* epilogue.c — epilogues: a bias add, a ReLU and a tanh GELU right after a
 * matmul become the matmul's own bias and epilogue (cuBLASLt's BIAS, RELU,
 * RELU_BIAS, GELU, GELU_BIAS; the erf GELU too in bf16 and f16), so
 * the GEMM's result is written once, already finished, and no kernel reads
 * it back. docs/design.md, "GEMM epilogues".
 *
 * What a trace spells, in its own dtype T (bf16, f16 or f32):
 *
 *   %mm = matmul %a, %b : T[..., N]
 *   %bias_add = add (convert %mm to f32), (broadcast_in_dim (convert %bias to f32) [rank-1])
 *   %y = convert %bias_add to T
 *   %relu = where (gt %y, 0), %y, 0          (ltorch.relu, maybe over convert %y)
 *   %gelu = 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y³)))   (below)
 *
 * (the converts absent when T is f32; the broadcast and the convert of the
 * bias in either order; either operand of the add). %bias is a T[N]. Every
 * value between the matmul and the last op has no other reader (the bias's
 * broadcast may have others: it stays for them).
 *
 * The numbers are not the same: the trace rounds the matmul's f32 sums to T,
 * adds the bias in f32 and rounds again; the epilogue adds the bias to the
 * sums and rounds once (what torch's F.linear with a bias and Transformer
 * Engine compute). At most one rounding of T apart, inside a GEMM's
 * tolerance, but not bit-exact with eager torch: the pass runs only under
 * --fuse-epilogues. A ReLU alone changes nothing but a NaN's result and the
 * sign of a zero; a GELU is computed once in f32 where a bf16 trace rounds
 * between its prims. cuBLASLt's GELU is the tanh form: the erf form
 * (torch's default) becomes it only in bf16 and f16 (below).
 *
 * A GELU's pre-activation read after the GELU too (saved for a backward)
 * is GELU_AUX: the matmul with epilogue 3 and its matmul_aux, which those
 * readers read instead. */
#include <math.h>

#include "passes.h"

typedef struct {
	Func *fn;
	uint32_t *uses;
} Match;

static const Instr *
def_op(Match *m, uint32_t v, Op op)
{
	const Instr *in = ir_def(m->fn, v);

	return in && in->op == op ? in : NULL;
}

static bool
is_zero(Match *m, uint32_t v)
{
	double c;

	return ir_const(m->fn, v, &c) && c == 0;
}

/* v itself, or the operand of a convert to f32 whose only reader is v's */
static uint32_t
widened(Match *m, uint32_t v)
{
	const Instr *cv = def_op(m, v, OP_CONVERT);

	if (cv && m->fn->vals[v].dtype == DT_F32 && m->uses[v] == 1)
		return ir_args(m->fn, cv)[0];
	return v;
}

/* the matmul without bias or epilogue that v is (used once), or NULL */
static const Instr *
bare_matmul(Match *m, uint32_t v)
{
	const Instr *mm = def_op(m, v, OP_MATMUL);

	if (!mm || mm->nargs != 2 || ir_epilogue(m->fn, mm) != EPI_NONE || m->uses[v] != 1)
		return NULL;
	return mm;
}

/* the T[N] vector that v broadcasts along the last dim of a rank-r value
 * (through converts to f32 of a T), or IR_NONE */
static uint32_t
bias_vector(Match *m, uint32_t v, DType t, int64_t n)
{
	Func *fn = m->fn;
	int r = fn->vals[v].rank;

	for (int step = 0; step < 3; step++) {
		const Instr *in = ir_def(fn, v);

		if (fn->vals[v].rank == 1 && fn->vals[v].dtype == t && ir_dims(fn, v)[0] == n)
			return v;
		if (!in)
			return IR_NONE;
		if (in->op == OP_CONVERT && fn->vals[v].dtype == DT_F32 && fn->vals[ir_args(fn, in)[0]].dtype == t)
			v = ir_args(fn, in)[0];
		else if (in->op == OP_BROADCAST && fn->vals[ir_args(fn, in)[0]].rank == 1 &&
			ir_attr(fn, in)[0] == r - 1)
			v = ir_args(fn, in)[0];
		else
			return IR_NONE;
	}
	return IR_NONE;
}

/* y = convert(add(widened mm, bias) in f32) to T, or add(mm, bias) when T
 * is f32: the bias vector, and the matmul in *mm; else IR_NONE */
static uint32_t
bias_add(Match *m, uint32_t y, const Instr **mm)
{
	Func *fn = m->fn;
	DType t = (DType)fn->vals[y].dtype;
	uint32_t s = y;
	const Instr *add;

	if (t != DT_F32) {
		const Instr *cv = def_op(m, y, OP_CONVERT);

		if (!cv || fn->vals[ir_args(fn, cv)[0]].dtype != DT_F32 || m->uses[ir_args(fn, cv)[0]] != 1)
			return IR_NONE;
		s = ir_args(fn, cv)[0];
	}
	if (!(add = def_op(m, s, OP_ADD)))
		return IR_NONE;
	for (int i = 0; i < 2; i++) {
		const uint32_t *a = ir_args(fn, add);
		const Instr *g = bare_matmul(m, widened(m, a[i]));
		uint32_t b;

		if (g && fn->vals[g->res].dtype == t &&
			(b = bias_vector(m, a[1 - i], t, ir_dims(fn, g->res)[fn->vals[g->res].rank - 1])) != IR_NONE) {
			*mm = g;
			return b;
		}
	}
	return IR_NONE;
}

/* x = maximum(y, 0), or where(gt(y, 0), y, 0) with the gt maybe on y's
 * widening (ltorch.relu), y read by nothing else: y, else IR_NONE */
static uint32_t
relu_of(Match *m, uint32_t x)
{
	Func *fn = m->fn;
	const Instr *w = def_op(m, x, OP_WHERE), *mx = def_op(m, x, OP_MAXIMUM), *gt;

	if (mx) {
		const uint32_t *a = ir_args(fn, mx);

		for (int i = 0; i < 2; i++)
			if (is_zero(m, a[1 - i]) && m->uses[a[i]] == 1)
				return a[i];
		return IR_NONE;
	}
	if (!w || !is_zero(m, ir_args(fn, w)[2]))
		return IR_NONE;
	uint32_t c = ir_args(fn, w)[0], y = ir_args(fn, w)[1];
	if (!(gt = def_op(m, c, OP_GT)) || m->uses[c] != 1 || !is_zero(m, ir_args(fn, gt)[1]))
		return IR_NONE;
	return widened(m, ir_args(fn, gt)[0]) == y && m->uses[y] == 2 ? y : IR_NONE;
}

/* ---- GELU, the tanh form as ltorch.gelu(approximate='tanh') spells it ----
 *
 *   0.5 * a * (1 + tanh(sqrt(2/pi) * (a + 0.044715 * a*a*a)))
 *
 * in muls and adds of either operand order, with converts between float
 * types anywhere (a bf16 trace rounds between its ltorch ops). The chain's
 * values must have no reader outside it, a included. */

enum { GELU_MAX = 48 };

typedef struct {
	Match *m;
	DType t;     /* the GELU's result dtype */
	uint32_t a;  /* the pre-activation, converts stripped, once seen */
	uint32_t at; /* the value of dtype t on the way to a (the one a GEMM writes) */
	double c;    /* the constant with_constant looks for */
	uint32_t vals[GELU_MAX];
	int n;
	bool ok;
} Gelu;

/* v with its converts stripped, each recorded */
static uint32_t
through(Gelu *g, uint32_t v)
{
	const Instr *cv;

	while ((cv = def_op(g->m, v, OP_CONVERT)) && dt_isfloat((DType)g->m->fn->vals[v].dtype) &&
		dt_isfloat((DType)g->m->fn->vals[ir_args(g->m->fn, cv)[0]].dtype)) {
		if (g->n == GELU_MAX)
			return g->ok = false, v;
		g->vals[g->n++] = v;
		v = ir_args(g->m->fn, cv)[0];
	}
	return v;
}

static bool
constant_near(Match *m, uint32_t v, double want)
{
	double c;

	return ir_const(m->fn, v, &c) && fabs(c - want) <= 1e-6 * fabs(want);
}

/* the instruction of op v is (through converts), recorded; NULL if not */
static const Instr *
gelu_op(Gelu *g, uint32_t v, Op op)
{
	const Instr *in;

	v = through(g, v);
	if (!g->ok || !(in = def_op(g->m, v, op)) || g->n == GELU_MAX)
		return NULL;
	g->vals[g->n++] = v;
	return in;
}

/* v is a (through converts): the first one seen fixes a, and at, the
 * last value of the GELU's dtype on the way down to it */
static bool
is_a(Gelu *g, uint32_t v)
{
	Func *fn = g->m->fn;
	uint32_t at = fn->vals[v].dtype == g->t ? v : IR_NONE, u = through(g, v);

	for (uint32_t w = v; w != u; w = ir_args(fn, ir_def(fn, w))[0])
		if (fn->vals[w].dtype == g->t)
			at = w;
	if (fn->vals[u].dtype == g->t)
		at = u;
	if (g->a == IR_NONE)
		g->a = u, g->at = at;
	return g->ok && u == g->a && at == g->at;
}

/* op(x, y) with f(x) and h(y), in either order (what a failed order
 * recorded is forgotten) */
static bool
either(Gelu *g, uint32_t v, Op op, bool (*f)(Gelu *, uint32_t), bool (*h)(Gelu *, uint32_t))
{
	const Instr *in = gelu_op(g, v, op);

	if (!in)
		return false;
	const uint32_t *x = ir_args(g->m->fn, in);
	for (int i = 0; i < 2; i++) {
		Gelu before = *g;

		if (f(g, x[i]) && h(g, x[1 - i]))
			return true;
		*g = before;
	}
	return false;
}

/* v is the constant with_constant looks for */
static bool
is_c(Gelu *g, uint32_t v)
{
	return constant_near(g->m, through(g, v), g->c);
}

/* a binary op of a constant near c and a value that `rest` accepts */
static bool
with_constant(Gelu *g, uint32_t v, Op op, double c, bool (*rest)(Gelu *, uint32_t))
{
	g->c = c;
	return either(g, v, op, is_c, rest);
}

static bool
square(Gelu *g, uint32_t v)
{
	return either(g, v, OP_MUL, is_a, is_a);
}

/* a*a*a, as (a*a)*a or a*(a*a) */
static bool
cube(Gelu *g, uint32_t v)
{
	return either(g, v, OP_MUL, square, is_a);
}

static bool
cubic_term(Gelu *g, uint32_t v)
{
	return with_constant(g, v, OP_MUL, 0.044715, cube);
}

/* a + 0.044715 a³ */
static bool
inner(Gelu *g, uint32_t v)
{
	return either(g, v, OP_ADD, is_a, cubic_term);
}

static bool
scaled_inner(Gelu *g, uint32_t v)
{
	return with_constant(g, v, OP_MUL, 0.7978845608028654, inner);
}

static bool
tanh_of(Gelu *g, uint32_t v)
{
	const Instr *in = gelu_op(g, v, OP_TANH);

	return in && scaled_inner(g, ir_args(g->m->fn, in)[0]);
}

static bool
half_a(Gelu *g, uint32_t v)
{
	return with_constant(g, v, OP_MUL, 0.5, is_a);
}

static bool
one_plus_tanh(Gelu *g, uint32_t v)
{
	return with_constant(g, v, OP_ADD, 1.0, tanh_of);
}

/* ---- GELU, the erf form as ltorch.gelu spells it ----
 *
 *   a * (0.5 + 0.5 * erf(a / sqrt(2)))      (or a * (1/sqrt(2)))
 *
 * cuBLASLt computes the tanh form for it, at most 4.8e-4 from the erf form
 * (near a = -2.7, where the GELU is -0.009): far inside a bf16 or f16
 * GEMM's tolerance, not an f32 one's, so only a bf16 or f16 GELU is taken. */

/* a / sqrt(2) or a * (1/sqrt(2)) */
static bool
erf_arg(Gelu *g, uint32_t v)
{
	const Instr *in = gelu_op(g, v, OP_DIV);

	if (!in)
		return with_constant(g, v, OP_MUL, 0.7071067811865476, is_a);
	g->c = 1.4142135623730951;
	return is_a(g, ir_args(g->m->fn, in)[0]) && is_c(g, ir_args(g->m->fn, in)[1]);
}

static bool
erf_of(Gelu *g, uint32_t v)
{
	const Instr *in = gelu_op(g, v, OP_ERF);

	return in && erf_arg(g, ir_args(g->m->fn, in)[0]);
}

static bool
half_erf(Gelu *g, uint32_t v)
{
	return with_constant(g, v, OP_MUL, 0.5, erf_of);
}

/* 0.5 + 0.5 erf(a / sqrt(2)): the normal distribution's CDF at a */
static bool
phi(Gelu *g, uint32_t v)
{
	return with_constant(g, v, OP_ADD, 0.5, half_erf);
}

/* readers of v (one per operand) in instructions 0 .. last */
static uint32_t
readers_upto(Func *fn, uint32_t v, uint32_t last)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= last; i++)
		for (uint32_t j = 0; j < fn->ins[i].nargs; j++)
			n += ir_args(fn, &fn->ins[i])[j] == v;
	return n;
}

/* x = (0.5 a) * (1 + tanh(...)) or a * phi(a): a as a value of x's dtype,
 * else IR_NONE. Every value of the chain but x must have all its readers in
 * the chain, but a itself: readers of a after x (a training forward saves
 * it for the backward) set *kept, and the GEMM writes a too (GELU_AUX). */
static uint32_t
gelu_of(Match *m, uint32_t x, bool *kept)
{
	Func *fn = m->fn;
	DType t = (DType)fn->vals[x].dtype;

	for (int i = 0; i < 4; i++) {
		Gelu g = { m, t, IR_NONE, IR_NONE, 0, { 0 }, 0, true };
		const Instr *top = gelu_op(&g, x, OP_MUL);

		if (!top)
			return IR_NONE;
		const uint32_t *a = ir_args(fn, top);
		bool tanh_form = i < 2, erf_ok = t == DT_BF16 || t == DT_F16;
		if (!(tanh_form ? half_a(&g, a[i % 2]) && one_plus_tanh(&g, a[1 - i % 2])
				: erf_ok && is_a(&g, a[i % 2]) && phi(&g, a[1 - i % 2])) ||
			!g.ok)
			continue;
		/* the readers inside the chain: top's and every recorded value's */
		uint32_t inside[GELU_MAX + 1], seen[GELU_MAX + 1];
		int n = 0;
		g.vals[g.n] = x;
		for (int k = 0; k <= g.n; k++) {
			const Instr *in = ir_def(fn, g.vals[k]);
			bool dup = false;

			for (int j = 0; j < k; j++)
				dup |= g.vals[j] == g.vals[k];
			if (dup || !in)
				continue;
			for (uint32_t j = 0; j < in->nargs; j++) {
				uint32_t v = ir_args(fn, in)[j];
				int at = 0;

				while (at < n && seen[at] != v)
					at++;
				if (at == n) {
					if (n == GELU_MAX + 1)
						return IR_NONE;
					seen[n] = v, inside[n++] = 0;
				}
				inside[at]++;
			}
		}
		bool closed = true;
		*kept = false;
		for (int k = 0; k < n; k++) {
			if (ir_def(fn, seen[k]) && ir_def(fn, seen[k])->op == OP_FULL)
				continue;
			if (seen[k] == g.at && m->uses[g.at] > inside[k]) /* read outside the chain too */
				*kept = readers_upto(fn, g.at, fn->vals[x].def) == inside[k];
			closed &= inside[k] == m->uses[seen[k]] || (seen[k] == g.at && *kept);
		}
		if (closed)
			return g.at;
	}
	return IR_NONE;
}

/* the matmul with bias and epilogue that value x of src is, built in dst at
 * x's place; IR_NONE if x ends no such chain. A GELU whose pre-activation
 * is read after it is a gelu_aux matmul and its matmul_aux, which those
 * readers then read. */
static uint32_t
fuse_at(Match *m, Func *dst, uint32_t x, uint32_t *map)
{
	Func *fn = m->fn;
	const Value *v = &fn->vals[x];
	const Instr *mm = NULL;
	uint32_t y = relu_of(m, x), bias, args[3];
	int64_t epi = y != IR_NONE && fn->vals[y].dtype == v->dtype ? EPI_RELU : EPI_NONE;
	bool kept = false;

	if (epi == EPI_NONE && (y = gelu_of(m, x, &kept)) != IR_NONE && fn->vals[y].dtype == v->dtype)
		epi = kept ? EPI_GELU_AUX : EPI_GELU;

	if (epi == EPI_NONE)
		y = x;
	if ((bias = bias_add(m, y, &mm)) == IR_NONE) {
		/* a relu right after a matmul (with its own bias or none) */
		mm = ir_def(fn, y);
		if (epi == EPI_NONE || !mm || mm->op != OP_MATMUL || ir_epilogue(fn, mm) != EPI_NONE)
			return IR_NONE;
		if (mm->nargs == 3)
			bias = ir_args(fn, mm)[2];
	}
	args[0] = map[ir_args(fn, mm)[0]];
	args[1] = map[ir_args(fn, mm)[1]];
	if (bias != IR_NONE)
		args[2] = map[bias];
	uint32_t res = ir_instr(dst, OP_MATMUL, args, bias != IR_NONE ? 3 : 2, &epi, epi != EPI_NONE, (DType)v->dtype,
		v->rank, ir_dims(fn, x));
	Instr *ni = &dst->ins[dst->nins - 1];
	ni->flags = mm->flags;
	ni->line = mm->line, ni->col = mm->col;
	dst->vals[res].name = v->name;
	if (epi == EPI_GELU_AUX) {
		uint32_t aux = ir_instr(dst, OP_MATMUL_AUX, &res, 1, NULL, 0, (DType)v->dtype, v->rank, ir_dims(fn, x));

		dst->ins[dst->nins - 1].line = mm->line, dst->ins[dst->nins - 1].col = mm->col;
		dst->vals[aux].name = fn->vals[y].name;
		map[y] = aux; /* its readers are all after x */
	}
	return res;
}

Func *
pass_epilogues(Func *fn)
{
	uint32_t *map;
	Match m = { fn, ir_uses(fn) };
	Func *d = ir_rewrite_begin(fn, &map);

	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];
		uint32_t r = IR_NONE;

		if (in->op == OP_CONVERT || in->op == OP_ADD || in->op == OP_WHERE || in->op == OP_MAXIMUM ||
			in->op == OP_MUL)
			r = fuse_at(&m, d, in->res, map);
		map[in->res] = r != IR_NONE ? r : ir_copy_instr(d, fn, in, map);
	}
	ir_rewrite_end(d, fn, map);
	return pass_dce(d);
}
