/* externs.c — a call fp8cc does not compile: an executor's op that the trace
 * prints without subsymbols (attention, a loss kernel, a user's kernel)
 * becomes an extern call (docs/ir.md, "Externs"), which the application
 * supplies at run time. Its results need types: the trace's, or for the
 * executor ops real traces print untyped, their metas' (below). Its
 * arguments are kept as the trace wrote them, tensors as operands. */
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

static void put(Spec *sp, const Expr *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

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
			tr_lookup(r, e); /* undefined: says so */
		put(sp, e, "%s", e->s);
		return;
	}
	s = tr_lookup(r, e);
	switch (s->kind) {
	case SYM_VAL: put_tensor(sp, e, s->val); return;
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
	case E_NAME:  name(sp, e); return;
	case E_INT:   put(sp, e, "%lld", (long long)e->i); return;
	case E_FLOAT: put_float(sp, e, e->f); return;
	case E_BOOL:  put(sp, e, "%s", e->i ? "True" : "False"); return;
	case E_NONE:  put(sp, e, "None"); return;
	case E_STR:
		put(sp, e, "'");
		for (const char *c = e->s; *c; c++) {
			if ((unsigned char)*c < 0x20)
				tr_errat(sp->r, e->line, e->col, "%s: a control character in a string argument",
					sp->r->callee);
			put(sp, e, "%s%c", *c == '\\' || *c == '\'' ? "\\" : "", *c);
		}
		put(sp, e, "'");
		return;
	case E_TUPLE:
	case E_LIST:
		if (depth > 16)
			tr_errat(sp->r, e->line, e->col, "%s: arguments nested too deep", sp->r->callee);
		put(sp, e, "(");
		for (uint32_t i = 0; i < e->n; i++) {
			put(sp, e, "%s", i ? ", " : "");
			value(sp, e->elts[i], depth + 1);
		}
		put(sp, e, "%s)", e->n == 1 ? "," : "");
		return;
	case E_DICT:
	case E_CALL:
	case E_ELLIPSIS:
		tr_errat(sp->r, e->line, e->col, "%s: a %s argument cannot be passed to an extern", sp->r->callee,
			e->kind == E_DICT           ? "dict"
				: e->kind == E_CALL ? "call"
						    : "'...'");
	}
}

/* A call with a callee that has no subsymbols and is not fp8cc's (prims.X):
 * true when it may be an extern. ltorch.X may: Thunder's initial traces
 * print its torch language without subsymbols, and a custom op is ltorch's
 * too (thunder.torch.custom_op). */
bool
tr_extern_callee(const char *callee)
{
	return strncmp(callee, "prims.", 6) != 0 && !tr_unsupported_why(callee);
}

/* ---- metas: the result types of executor ops Thunder prints untyped ----
 *
 * Thunder prints the results of some executor ops without type comments
 * (their tuples are unpacked, `(t181, t182, _) = op(...)`). For the ones in
 * real traces, the types are what the op's meta function in Thunder's
 * executor gives (thunder/executors/sdpaex.py, apex_entropyex_impl.py), as
 * a function of the arguments' types. One exception, said where it is. */

typedef struct {
	Reader *r;
	const Expr *c;
	ExtRes *res;
	Type *t; /* per result: its type, for 't' */
} Meta;

static Type
tensor_arg(Meta *m, const Expr *e, const char *what)
{
	Type t;

	if (!e)
		tr_errat(m->r, m->c->line, m->r->ccol, "%s: %s is missing", m->r->callee, what);
	tr_vtype(m->r->fn, tr_tensor(m->r, e), &t);
	return t;
}

static void
res_tensor(Meta *m, DType dt, int rank, const int64_t *d)
{
	int k = m->res->n++;

	m->res->kind[k] = 't';
	m->t[k].dt = dt;
	m->t[k].rank = rank;
	memcpy(m->t[k].d, d, (size_t)rank * sizeof *d);
}

static void
res_like(Meta *m, const Type *t)
{
	res_tensor(m, t->dt, t->rank, t->d);
}

static void
res_int(Meta *m, int64_t i)
{
	m->res->kind[m->res->n] = 'i';
	m->res->i[m->res->n++] = i;
}

/* query, key, value: (batch, heads, seq, E); float dtypes as the op takes */
static void
qkv(Meta *m, const Expr *const *a, Type *q, Type *k, Type *v, bool f32)
{
	const char *names[3] = { "query", "key", "value" };
	Type *t[3] = { q, k, v };

	for (int i = 0; i < 3; i++) {
		*t[i] = tensor_arg(m, a[i], names[i]);
		if (t[i]->rank != 4)
			tr_errat(m->r, a[i]->line, a[i]->col, "%s: %s must be (batch, heads, seq, E), not rank %d",
				m->r->callee, names[i], t[i]->rank);
		if (t[i]->dt != DT_F16 && t[i]->dt != DT_BF16 && (!f32 || t[i]->dt != DT_F32))
			tr_errat(m->r, a[i]->line, a[i]->col, "%s: %s must be f16 or bf16%s, not %s", m->r->callee,
				names[i], f32 ? " or f32" : "", ir_dtypes[t[i]->dt].thunder);
	}
}

static const int64_t scalar[1];

/* sdpafx_grad_forward_scaled_dot_product_efficient_attention(query, key,
 * value, dropout_p, is_causal, *, scale): flash attention, despite the
 * name -> out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed,
 * philox_offset, debug_attn_mask */
static void
flash_fwd(Meta *m)
{
	static const Param ps[] = { { "query", 0 }, { "key", 0 }, { "value", 0 }, { "dropout_p", 1 },
		{ "is_causal", 1 }, { "scale", 1 } };
	const Expr *a[6];
	Type q, k, v;

	tr_bind(m->r, m->c, ps, 6, a);
	qkv(m, a, &q, &k, &v, false);
	res_tensor(m, q.dt, 4, (int64_t[]){ q.d[0], q.d[1], q.d[2], q.d[3] });
	res_tensor(m, DT_F32, 3, (int64_t[]){ q.d[0], q.d[1], (q.d[2] + 15) / 16 * 16 });
	res_tensor(m, DT_I64, 1, (int64_t[]){ q.d[0] + 1 });
	res_tensor(m, DT_I64, 1, (int64_t[]){ q.d[0] + 1 });
	res_int(m, q.d[2]);
	res_int(m, k.d[2]);
	for (int i = 0; i < 3; i++)
		res_tensor(m, DT_I64, 0, scalar);
}

/* sdpafx_scaled_dot_product_efficient_attention_backward(grad_out, query,
 * key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
 * dropout_p, is_causal, philox_seed, philox_offset, *, scale) -> the
 * gradients of query, key, value: (batch, heads, max_q or max_k, E) */
static void
flash_bwd(Meta *m)
{
	static const Param ps[] = { { "grad_out", 0 }, { "query", 0 }, { "key", 0 }, { "value", 0 }, { "out", 0 },
		{ "logsumexp", 0 }, { "cum_seq_q", 0 }, { "cum_seq_k", 0 }, { "max_q", 0 }, { "max_k", 0 },
		{ "dropout_p", 0 }, { "is_causal", 0 }, { "philox_seed", 0 }, { "philox_offset", 0 }, { "scale", 1 } };
	const Expr *a[15];
	Type q, k, v;
	int64_t mq, mk;

	tr_bind(m->r, m->c, ps, 15, a);
	qkv(m, a + 1, &q, &k, &v, false);
	mq = tr_int_arg(m->r, a[8], "max_q");
	mk = tr_int_arg(m->r, a[9], "max_k");
	res_tensor(m, q.dt, 4, (int64_t[]){ q.d[0], q.d[1], mq, q.d[3] });
	res_tensor(m, k.dt, 4, (int64_t[]){ q.d[0], q.d[1], mk, q.d[3] });
	res_tensor(m, v.dt, 4, (int64_t[]){ q.d[0], q.d[1], mk, q.d[3] });
}

/* sdpaex_grad_forward_scaled_dot_product_efficient_attention(query, key,
 * value, attn_mask, dropout_p, is_causal, *, scale) -> out, logsumexp,
 * philox_seed, philox_offset */
static void
efficient_fwd(Meta *m)
{
	static const Param ps[] = { { "query", 0 }, { "key", 0 }, { "value", 0 }, { "attn_mask", 0 },
		{ "dropout_p", 1 }, { "is_causal", 1 }, { "scale", 1 } };
	const Expr *a[7];
	Type q, k, v;

	tr_bind(m->r, m->c, ps, 7, a);
	qkv(m, a, &q, &k, &v, true);
	res_tensor(m, q.dt, 4, (int64_t[]){ q.d[0], q.d[1], q.d[2], v.d[3] });
	res_tensor(m, DT_F32, 3, (int64_t[]){ q.d[0], q.d[1], (q.d[2] + 31) / 32 * 32 });
	res_tensor(m, DT_I64, 0, scalar);
	res_tensor(m, DT_I64, 0, scalar);
}

/* sdpaex_scaled_dot_product_efficient_attention_backward(grad_out, query,
 * key, value, attn_mask, out, logsumexp, philox_seed, philox_offset,
 * dropout_p, is_causal, *, scale) -> the gradients of query, key, value,
 * and of attn_mask (None without one) */
static void
efficient_bwd(Meta *m)
{
	static const Param ps[] = { { "grad_out", 0 }, { "query", 0 }, { "key", 0 }, { "value", 0 }, { "attn_mask", 0 },
		{ "out", 0 }, { "logsumexp", 0 }, { "philox_seed", 0 }, { "philox_offset", 0 }, { "dropout_p", 0 },
		{ "is_causal", 1 }, { "scale", 1 } };
	const Expr *a[12];
	Type q, k, v, mask;

	tr_bind(m->r, m->c, ps, 12, a);
	qkv(m, a + 1, &q, &k, &v, true);
	res_like(m, &q);
	res_like(m, &k);
	res_like(m, &v);
	if (tr_isnone(a[4])) {
		m->res->kind[m->res->n++] = 'n';
		return;
	}
	mask = tensor_arg(m, a[4], "attn_mask");
	res_like(m, &mask);
}

/* losses and max_log_sum_exp of apex's cross entropy: a (N, C) logits,
 * target (N). Losses are of a's dtype: (N) for reduction 'none' — Thunder's
 * meta says a's shape there, but the op returns one loss per row, and an
 * extern writes what the op returns — and () for 'mean' and 'sum';
 * max_log_sum_exp is (N) of a's dtype. */
static void
cross_entropy(Meta *m, const Expr *ea, const Expr *et, const Expr *red)
{
	Type a = tensor_arg(m, ea, "the logits"), t = tensor_arg(m, et, "target");
	const char *how = red ? (red->kind == E_STR ? red->s : NULL) : "mean";

	if (!how || (strcmp(how, "none") && strcmp(how, "mean") && strcmp(how, "sum")))
		tr_errat(m->r, red->line, red->col, "%s: reduction must be 'none', 'mean' or 'sum'", m->r->callee);
	if (a.rank != 2 || t.rank != 1 || t.d[0] != a.d[0])
		tr_errat(m->r, ea->line, ea->col, "%s: expected logits (N, C) and a target (N)", m->r->callee);
	if (!strcmp(how, "none"))
		res_tensor(m, a.dt, 1, t.d);
	else
		res_tensor(m, a.dt, 0, scalar);
	res_tensor(m, a.dt, 1, t.d);
}

/* the op under the arguments of torch's cross_entropy (a, target, weight,
 * size_average, ignore_index, reduce, reduction, label_smoothing), as older
 * Thunder called it: what apex computes only without a weight, the legacy
 * size_average and reduce, or an ignore_index that is a class (Thunder's
 * checker sends no other call to apex) */
static void
torch_form(Meta *m)
{
	static const Param ps[] = { { "a|input", 0 }, { "target", 0 }, { "weight", 1 }, { "size_average", 1 },
		{ "ignore_index", 1 }, { "reduce", 1 }, { "reduction", 1 }, { "label_smoothing", 1 } };
	static const char *const unsupported[] = { [2] = "weight", [3] = "size_average", [5] = "reduce" };
	const Expr *a[8];

	tr_bind(m->r, m->c, ps, 8, a);
	for (int i = 2; i < 6; i++)
		if (unsupported[i] && a[i] && !tr_isnone(a[i]))
			tr_errat(m->r, a[i]->line, a[i]->col, "%s: apex's cross entropy takes no %s", m->r->callee,
				unsupported[i]);
	if (a[4] && tr_int_arg(m->r, a[4], "ignore_index") >= 0)
		tr_errat(m->r, a[4]->line, a[4]->col,
			"%s: apex's cross entropy ignores no class (ignore_index must be negative)", m->r->callee);
	cross_entropy(m, a[0], a[1], a[6]);
}

/* apex_cross_entropy(a, target, reduction='mean', label_smoothing=0.0):
 * the losses and max_log_sum_exp; or, with torch's arguments (older
 * Thunder: more than four, or one of torch's names), the losses alone */
static void
apex_ce(Meta *m)
{
	static const Param ps[] = { { "a", 0 }, { "target", 0 }, { "reduction", 1 }, { "label_smoothing", 1 } };
	static const char *const torch_only[] = { "input", "weight", "size_average", "ignore_index", "reduce" };
	const Expr *a[4];
	bool torch = m->c->nargs > 4;

	for (uint32_t i = 0; i < m->c->nargs; i++)
		for (size_t k = 0; m->c->args[i].kw && k < NELEM(torch_only); k++)
			torch |= !strcmp(m->c->args[i].kw, torch_only[k]);
	if (torch) {
		torch_form(m);
		m->res->n = 1;
		return;
	}
	tr_bind(m->r, m->c, ps, 4, a);
	cross_entropy(m, a[0], a[1], a[2]);
}

/* apex_xentropy_forward: the same op under torch's arguments (an older
 * Thunder's name for it), the losses and max_log_sum_exp */
static void
apex_xf(Meta *m)
{
	torch_form(m);
}

static const struct {
	const char *name;
	void (*meta)(Meta *);
} metas[] = {
	{ "sdpafx_grad_forward_scaled_dot_product_efficient_attention", flash_fwd },
	{ "sdpafx_scaled_dot_product_efficient_attention_backward", flash_bwd },
	{ "sdpaex_grad_forward_scaled_dot_product_efficient_attention", efficient_fwd },
	{ "sdpaex_scaled_dot_product_efficient_attention_backward", efficient_bwd },
	{ "apex_cross_entropy", apex_ce },
	{ "apex_xentropy_forward", apex_xf },
};

/* lhs = callee(args): an extern call. Its results' types come from the
 * callee's meta, else from the statement's type comment (one result). */
void
tr_lower_extern(Reader *r, const Stmt *s, ExtRes *res)
{
	Spec *sp = arena_alloc(r->a, sizeof *sp);
	Extern *ext = arena_alloc(r->a, sizeof *ext);
	Type *t = arena_alloc(r->a, EXT_MAXRES * sizeof *t);
	DType dts[EXT_MAXRES];
	int ranks[EXT_MAXRES], nt = 0;
	int64_t (*dims)[IR_MAXRANK] = arena_alloc(r->a, EXT_MAXRES * sizeof *dims);
	uint32_t dtcol, shcol, v;
	Meta m = { r, s->e, res, t };

	sp->r = r;
	res->n = 0;
	for (size_t i = 0; i < NELEM(metas) && !res->n; i++)
		if (!strcmp(metas[i].name, r->callee))
			metas[i].meta(&m);
	if (!res->n) {
		if (s->nnames == 0)
			tr_refuse(r, s,
				arena_printf(r->a,
					"'%s' has no subsymbols and returns nothing: fp8cc has no "
					"way to run it (an extern call needs results)",
					r->callee));
		if (s->nnames > 1 || !s->ty.present)
			tr_refuse(r, s,
				arena_printf(r->a,
					"'%s' has no subsymbols, and its result%s no type "
					"comment: an extern call needs the dtype and shape of each (Thunder printed them "
					"untyped)",
					r->callee, s->nnames > 1 ? "s have" : " has"));
		tr_parse_type(r, s->line, &s->ty, &t[0], &dtcol, &shcol);
		res->n = 1;
		res->kind[0] = 't';
	}
	for (uint32_t i = 0; i < s->e->nargs; i++) {
		const Arg *a = &s->e->args[i];

		put(sp, a->e, "%s%s%s", i ? ", " : "", a->kw ? a->kw : "", a->kw ? "=" : "");
		value(sp, a->e, 0);
	}
	for (int i = 0; i < res->n; i++)
		if (res->kind[i] == 't') {
			dts[nt] = t[i].dt;
			ranks[nt] = t[i].rank;
			memcpy(dims[nt++], t[i].d, sizeof t[i].d);
		}
	ext->name = r->callee;
	ext->args = arena_strndup(r->a, sp->buf, sp->n);
	ext->nres = (uint32_t)nt;
	v = ir_extern(r->fn, ext, sp->ops, (int)sp->nops, dts, ranks, (const int64_t (*)[IR_MAXRANK])dims);
	for (int i = 0, k = 0; i < res->n; i++)
		if (res->kind[i] == 't')
			res->v[i] = v + (uint32_t)k++;
	tr_check_last(r);
}
