/* verify.c — the IR verifier: every op's dtype and shape rules, SSA order,
 * kernel regions. Messages name the offending instruction as it prints. */
#include <stdlib.h>
#include <string.h>

#include "gemm_rules.h"
#include "ir.h"

typedef struct {
	Func *fn;
	const Instr *in;
	char *err;
	size_t len;
} Check;

static bool
fail(Check *c, const char *fmt, ...)
{
	char nb[16], head[96];
	va_list ap;
	int n;

	snprintf(head, sizeof head, "%%%s = %s", ir_name(c->fn, c->in->res, nb), ir_ops[c->in->op].name);
	n = snprintf(c->err, c->len, "%s: ", head);
	if (n < 0 || (size_t)n >= c->len)
		return false;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->len - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

/* "f32[16,32]" */
static const char *
tystr(Func *fn, uint32_t v, char *buf, size_t n)
{
	const int64_t *d = ir_dims(fn, v);
	size_t k = (size_t)snprintf(buf, n, "%s[", ir_dtypes[fn->vals[v].dtype].name);

	for (int i = 0; i < fn->vals[v].rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)d[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

static bool
class_ok(TypeClass tc, DType t, OpClass oc)
{
	DKind k = ir_dtypes[t].kind;

	switch (tc) {
	case TC_FLOAT: return k == DK_FLOAT;
	case TC_NUM:   return k == DK_FLOAT || k == DK_INT || k == DK_UINT || (k == DK_BOOL && oc == OC_COMPARE);
	case TC_INT:   return k == DK_INT || k == DK_UINT || k == DK_BOOL;
	case TC_BOOL:  return k == DK_BOOL;
	case TC_ANY:   return true;
	}
	return false;
}

/* operand is the result's shape, or a rank-0 scalar */
static bool
fits(Func *fn, uint32_t a, uint32_t res)
{
	return fn->vals[a].rank == 0 || ir_same_shape(fn, a, res);
}

static bool
check_elementwise(Check *c, const uint32_t *a, DType rt)
{
	Func *fn = c->fn;
	const Instr *in = c->in;
	const OpInfo *oi = &ir_ops[in->op];
	int first = oi->cls == OC_WHERE ? 1 : 0;
	DType t = fn->vals[a[first]].dtype;
	char b1[64], b2[64];

	if (oi->cls == OC_WHERE && fn->vals[a[0]].dtype != DT_B8)
		return fail(c, "condition must be b8, not %s", ir_dtypes[fn->vals[a[0]].dtype].name);
	for (uint32_t i = first; i < in->nargs; i++)
		if (fn->vals[a[i]].dtype != t)
			return fail(c, "operands must have one dtype (%s and %s)", ir_dtypes[t].name,
				ir_dtypes[fn->vals[a[i]].dtype].name);
	if (!class_ok(oi->tc, t, oi->cls))
		return fail(c, "does not take %s operands", ir_dtypes[t].name);
	if ((oi->cls != OC_WHERE && dt_isfp8(t)) ||
		((in->op == OP_BITWISE_LEFT_SHIFT || in->op == OP_BITWISE_RIGHT_SHIFT) && t == DT_B8))
		return fail(c, "does not take %s operands", ir_dtypes[t].name);
	for (uint32_t i = 0; i < in->nargs; i++)
		if (!fits(fn, a[i], in->res))
			return fail(c, "operand %s does not match result %s", tystr(fn, a[i], b1, sizeof b1),
				tystr(fn, in->res, b2, sizeof b2));
	if (oi->cls == OC_COMPARE || in->op == OP_ISFINITE || in->op == OP_SIGNBIT)
		t = DT_B8;
	if (rt != t)
		return fail(c, "result dtype must be %s, not %s", ir_dtypes[t].name, ir_dtypes[rt].name);
	return true;
}

/* dims: nd distinct values in [0, rank), increasing */
static bool
dims_ok(const int64_t *d, uint32_t nd, int rank)
{
	for (uint32_t i = 0; i < nd; i++)
		if (d[i] < 0 || d[i] >= rank || (i > 0 && d[i] <= d[i - 1]))
			return false;
	return true;
}

static bool
check_reduce(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const int64_t *d = ir_attr(fn, c->in), *sd = ir_dims(fn, a[0]), *rd = ir_dims(fn, c->in->res);
	int rank = fn->vals[a[0]].rank, k = 0;
	DType t = fn->vals[a[0]].dtype;

	if (!class_ok(ir_ops[c->in->op].tc, t, OC_REDUCE) || dt_isfp8(t))
		return fail(c, "does not take %s operands", ir_dtypes[t].name);
	if (!dims_ok(d, c->in->nattr, rank))
		return fail(c, "reduction dims must be distinct, increasing and below the rank %d", rank);
	if (fn->vals[c->in->res].dtype != t)
		return fail(c, "result dtype must be %s", ir_dtypes[t].name);
	if (fn->vals[c->in->res].rank != rank - (int)c->in->nattr)
		return fail(c, "result rank must be %d", rank - (int)c->in->nattr);
	for (int i = 0, j = 0; i < rank; i++) {
		if (j < (int)c->in->nattr && d[j] == i) {
			if ((c->in->op == OP_AMAX || c->in->op == OP_AMIN) && sd[i] == 0)
				return fail(c, "cannot reduce an empty dimension");
			j++;
			continue;
		}
		if (rd[k++] != sd[i])
			return fail(c, "result dim %d must be %lld", k - 1, (long long)sd[i]);
	}
	return true;
}

static bool
check_broadcast(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const int64_t *bd = ir_attr(fn, c->in), *sd = ir_dims(fn, a[0]), *rd = ir_dims(fn, c->in->res);
	int rank = fn->vals[a[0]].rank, rrank = fn->vals[c->in->res].rank;

	if ((int)c->in->nattr != rank)
		return fail(c, "needs one broadcast dim per operand dim (%d)", rank);
	if (!dims_ok(bd, c->in->nattr, rrank))
		return fail(c, "broadcast dims must be increasing and below the result rank %d", rrank);
	for (int i = 0; i < rank; i++)
		if (sd[i] != 1 && sd[i] != rd[bd[i]])
			return fail(c, "operand dim %d (%lld) cannot broadcast to %lld", i, (long long)sd[i],
				(long long)rd[bd[i]]);
	return true;
}

static bool
check_transpose(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const int64_t *p = ir_attr(fn, c->in), *sd = ir_dims(fn, a[0]), *rd = ir_dims(fn, c->in->res);
	int rank = fn->vals[a[0]].rank;
	bool seen[IR_MAXRANK] = { false };

	if ((int)c->in->nattr != rank || fn->vals[c->in->res].rank != rank)
		return fail(c, "permutation must have %d entries", rank);
	for (int i = 0; i < rank; i++) {
		if (p[i] < 0 || p[i] >= rank || seen[p[i]])
			return fail(c, "invalid permutation");
		seen[p[i]] = true;
		if (rd[i] != sd[p[i]])
			return fail(c, "result dim %d must be %lld", i, (long long)sd[p[i]]);
	}
	return true;
}

static bool
check_squeeze(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const int64_t *d = ir_attr(fn, c->in), *sd = ir_dims(fn, a[0]), *rd = ir_dims(fn, c->in->res);
	int rank = fn->vals[a[0]].rank, k = 0;

	if (!dims_ok(d, c->in->nattr, rank))
		return fail(c, "squeezed dims must be distinct, increasing and below the rank %d", rank);
	if (fn->vals[c->in->res].rank != rank - (int)c->in->nattr)
		return fail(c, "result rank must be %d", rank - (int)c->in->nattr);
	for (int i = 0, j = 0; i < rank; i++) {
		if (j < (int)c->in->nattr && d[j] == i) {
			if (sd[i] != 1)
				return fail(c, "dim %d has size %lld, not 1", i, (long long)sd[i]);
			j++;
		} else if (rd[k++] != sd[i]) {
			return fail(c, "result dim %d must be %lld", k - 1, (long long)sd[i]);
		}
	}
	return true;
}

static bool
check_slice(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const int64_t *s = ir_attr(fn, c->in), *sd = ir_dims(fn, a[0]), *rd = ir_dims(fn, c->in->res);
	int rank = fn->vals[a[0]].rank;

	if ((int)c->in->nattr != 3 * rank || fn->vals[c->in->res].rank != rank)
		return fail(c, "needs start, end and stride for each of %d dims", rank);
	for (int i = 0; i < rank; i++) {
		int64_t lo = s[i], hi = s[rank + i], st = s[2 * rank + i];

		if (lo < 0 || hi < lo || hi > sd[i] || st < 1)
			return fail(c, "dim %d: slice [%lld:%lld:%lld] out of range for size %lld", i, (long long)lo,
				(long long)hi, (long long)st, (long long)sd[i]);
		int64_t n = hi == lo ? 0 : (hi - lo - 1) / st + 1; /* no overflow for huge strides */

		if (rd[i] != n)
			return fail(c, "result dim %d must be %lld", i, (long long)n);
	}
	return true;
}

static bool
check_cat(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	int rank = fn->vals[a[0]].rank;
	int64_t dim = c->in->nattr == 1 ? ir_attr(fn, c->in)[0] : -1, total = 0;
	const int64_t *rd = ir_dims(fn, c->in->res);

	if (dim < 0 || dim >= rank || fn->vals[c->in->res].rank != rank)
		return fail(c, "needs a dim below the rank %d", rank);
	for (uint32_t i = 0; i < c->in->nargs; i++) {
		const int64_t *d = ir_dims(fn, a[i]);

		if (fn->vals[a[i]].dtype != fn->vals[c->in->res].dtype || fn->vals[a[i]].rank != rank)
			return fail(c, "operand %u has another dtype or rank", i);
		for (int j = 0; j < rank; j++)
			if (j != dim && d[j] != rd[j])
				return fail(c, "operand %u: dim %d is %lld, not %lld", i, j, (long long)d[j],
					(long long)rd[j]);
		total += d[dim];
	}
	if (rd[dim] != total)
		return fail(c, "result dim %lld must be %lld", (long long)dim, (long long)total);
	return true;
}

static bool
check_flip(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;

	if (!dims_ok(ir_attr(fn, c->in), c->in->nattr, fn->vals[a[0]].rank))
		return fail(c, "flipped dims must be distinct, increasing and below the rank %d", fn->vals[a[0]].rank);
	if (!ir_same_shape(fn, a[0], c->in->res))
		return fail(c, "result must have the operand's shape");
	return true;
}

static bool
check_gather(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const Value *x = &fn->vals[a[0]], *ix = &fn->vals[a[1]], *r = &fn->vals[c->in->res];
	const int64_t *xd = ir_dims(fn, a[0]), *id = ir_dims(fn, a[1]), *rd = ir_dims(fn, c->in->res);
	int64_t dim = c->in->nattr == 1 ? ir_attr(fn, c->in)[0] : -1;

	if (!dt_isint((DType)ix->dtype))
		return fail(c, "indices must be integers, not %s", ir_dtypes[ix->dtype].name);
	if (dim < 0 || dim >= x->rank)
		return fail(c, "needs one dim below the rank %d", x->rank);
	if (r->dtype != x->dtype || r->rank != x->rank)
		return fail(c, "result must be %s of rank %d", ir_dtypes[x->dtype].name, x->rank);
	if (c->in->op == OP_TAKE) {
		if (ix->rank > 1)
			return fail(c, "indices must have rank 0 or 1");
		for (int i = 0; i < x->rank; i++)
			if (rd[i] != (i == dim ? (ix->rank ? id[0] : 1) : xd[i]))
				return fail(c, "result dim %d must be %lld", i,
					(long long)(i == dim ? (ix->rank ? id[0] : 1) : xd[i]));
		return true;
	}
	if (ix->rank != x->rank)
		return fail(c, "indices must have rank %d", x->rank);
	for (int i = 0; i < x->rank; i++) {
		if (rd[i] != id[i])
			return fail(c, "result must have the shape of the indices");
		if (i != dim && id[i] > xd[i])
			return fail(c, "indices dim %d (%lld) exceeds the operand's (%lld)", i, (long long)id[i],
				(long long)xd[i]);
	}
	return true;
}

static bool
check_pad(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const int64_t *p = ir_attr(fn, c->in), *xd = ir_dims(fn, a[0]), *rd = ir_dims(fn, c->in->res);
	int rank = fn->vals[a[0]].rank;

	if (fn->vals[a[1]].rank != 0 || fn->vals[a[1]].dtype != fn->vals[a[0]].dtype)
		return fail(c, "the padding value must be a %s scalar", ir_dtypes[fn->vals[a[0]].dtype].name);
	if ((int)c->in->nattr != 3 * rank || fn->vals[c->in->res].rank != rank ||
		fn->vals[c->in->res].dtype != fn->vals[a[0]].dtype)
		return fail(c, "needs low, high and interior padding for each of %d dims", rank);
	for (int i = 0; i < rank; i++) {
		int64_t lo = p[i], hi = p[rank + i], in = p[2 * rank + i], n;

		if (in < 0 || in > (INT64_C(1) << 32) || lo < -(INT64_C(1) << 40) || lo > (INT64_C(1) << 40) ||
			hi < -(INT64_C(1) << 40) || hi > (INT64_C(1) << 40))
			return fail(c, "dim %d: padding out of range", i);
		n = xd[i] + (xd[i] > 0 ? (xd[i] - 1) * in : 0) + lo + hi;
		if (n < 0 || rd[i] != n)
			return fail(c, "result dim %d must be %lld", i, (long long)n);
	}
	return true;
}

static bool
check_bitcast(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	DType f = (DType)fn->vals[a[0]].dtype, t = (DType)fn->vals[c->in->res].dtype;

	if (f == DT_B8 || t == DT_B8 || ir_dtypes[f].bits != ir_dtypes[t].bits)
		return fail(c, "cannot bitcast %s to %s: the widths differ", ir_dtypes[f].name, ir_dtypes[t].name);
	if (!ir_same_shape(fn, a[0], c->in->res))
		return fail(c, "result must have the operand's shape");
	return true;
}

static bool
check_iota(Check *c)
{
	Func *fn = c->fn;
	DType t = (DType)fn->vals[c->in->res].dtype;

	if (!dt_isint(t))
		return fail(c, "result must be an integer, not %s", ir_dtypes[t].name);
	if (fn->vals[c->in->res].rank != 1 || c->in->nattr != 2)
		return fail(c, "needs a 1-d result and [start, step]");
	return true;
}

static bool
check_gemm(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const Value *va = &fn->vals[a[0]], *vb = &fn->vals[a[1]], *vr = &fn->vals[c->in->res];
	const int64_t *da = ir_dims(fn, a[0]), *db = ir_dims(fn, a[1]), *dr = ir_dims(fn, c->in->res);

	if (!dt_isfp8(va->dtype) || !dt_isfp8(vb->dtype))
		return fail(c, "operands must be fp8");
	if (va->dtype == DT_F8E5M2 && vb->dtype == DT_F8E5M2)
		return fail(c, "f8e5m2 x f8e5m2 is not supported");
	if (va->rank != 2 || vb->rank != 2 || da[1] != db[0])
		return fail(c, "operands must be (M,K) and (K,N)");
	/* torch._scaled_mm's forms: one f32 each (tensor-wise), scale_a (M,1)
	 * and scale_b (1,N) (row-wise), or scale_a (M, K/128) and scale_b
	 * (K/128, N/128) rounded up (block-wise: DeepSeek-V3's 1x128 and
	 * 128x128 blocks) */
	if (fn->vals[a[2]].dtype != DT_F32 || fn->vals[a[3]].dtype != DT_F32)
		return fail(c, "scales must be f32");
	ScaleMode mode = ir_scale_mode(fn, c->in);
	int64_t kb = (da[1] + IR_SCALE_BLOCK - 1) / IR_SCALE_BLOCK, nb = (db[1] + IR_SCALE_BLOCK - 1) / IR_SCALE_BLOCK;

	if (fn->vals[a[2]].rank == 0 ? fn->vals[a[3]].rank != 0 : mode == SCALES_TENSOR)
		return fail(c,
			"scales must be f32[] and f32[] (tensor-wise), f32[%lld,1] and f32[1,%lld] (row-wise) or "
			"f32[%lld,%lld] and f32[%lld,%lld] (block-wise)",
			(long long)da[0], (long long)db[1], (long long)da[0], (long long)kb, (long long)kb,
			(long long)nb);
	/* what cuBLASLt's block scaling takes (torch's rules too), and K a
	 * multiple of 512 so that scale_b's column of K blocks is a multiple of
	 * 4 long, the leading dim cuBLASLt wants (docs/ir.md) */
	if (mode == SCALES_BLOCK) {
		if (c->in->flags & IF_FAST_ACCUM)
			return fail(c, "block-wise scales take no fast accumulation (cuBLASLt, torch._scaled_mm)");
		if (da[1] % (4 * IR_SCALE_BLOCK) || da[0] % 4)
			return fail(c,
				"block-wise scales need K a multiple of 512 and M of 4 (cuBLASLt's scale layouts); "
				"this is %lldx%lldx%lld",
				(long long)da[0], (long long)db[1], (long long)da[1]);
	}
	if (vr->dtype != DT_BF16 && vr->dtype != DT_F16 && vr->dtype != DT_F32)
		return fail(c, "result dtype must be bf16, f16 or f32");
	if (vr->rank != 2 || dr[0] != da[0] || dr[1] != db[1])
		return fail(c, "result must be (%lld,%lld)", (long long)da[0], (long long)db[1]);
	/* cuBLASLt's FP8 rule (gemm_rules.h) */
	if (c->in->nargs == 5 &&
		(fn->vals[a[4]].rank != 1 || ir_dims(fn, a[4])[0] != db[1] ||
			fn->vals[a[4]].dtype != fp8_gemm_bias_row(vr->dtype)))
		return fail(c, "bias must be a %s vector of %lld for a %s result",
			ir_dtypes[fp8_gemm_bias_row(vr->dtype)].name, (long long)db[1], ir_dtypes[vr->dtype].name);
	return true;
}

/* the logical (rows, cols) of a matmul operand given with flag trans */
static void
mat_dims(Func *fn, uint32_t v, bool trans, int64_t *rows, int64_t *cols)
{
	int r = fn->vals[v].rank;
	const int64_t *d = ir_dims(fn, v);

	*rows = d[r - (trans ? 1 : 2)];
	*cols = d[r - (trans ? 2 : 1)];
}

static bool
check_matmul(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const Instr *in = c->in;
	const Value *va = &fn->vals[a[0]], *vb = &fn->vals[a[1]], *vr = &fn->vals[in->res];
	const int64_t *dr = ir_dims(fn, in->res);
	int64_t m, k, k2, n;

	if (!dt_isfloat((DType)va->dtype) || vb->dtype != va->dtype || vr->dtype != va->dtype)
		return fail(c, "operands and result must be of one float dtype");
	if (va->rank < 2 || vb->rank < 2 || vr->rank < 2)
		return fail(c, "operands and result must have at least 2 dims");
	if (in->nattr > 1 || (in->nattr == 1 && (ir_attr(fn, in)[0] < EPI_NONE || ir_attr(fn, in)[0] > EPI_GELU_AUX)))
		return fail(c, "the epilogue must be 0 (none), 1 (relu), 2 (gelu) or 3 (gelu_aux)");
	mat_dims(fn, a[0], in->flags & IF_TRANS_A, &m, &k);
	mat_dims(fn, a[1], in->flags & IF_TRANS_B, &k2, &n);
	if (k != k2)
		return fail(c, "inner dims differ (%lld and %lld)", (long long)k, (long long)k2);
	if (dr[vr->rank - 2] != m || dr[vr->rank - 1] != n)
		return fail(c, "result must end in (%lld,%lld)", (long long)m, (long long)n);
	for (int i = 0; i < 2; i++) {
		const Value *v = &fn->vals[a[i]];

		if (v->rank != 2 &&
			(v->rank != vr->rank || memcmp(ir_dims(fn, a[i]), dr, (size_t)(vr->rank - 2) * sizeof *dr)))
			return fail(c, "operand %d must be 2-d or have the result's batch dims", i);
	}
	if (in->nargs == 3 &&
		(fn->vals[a[2]].dtype != va->dtype || fn->vals[a[2]].rank != 1 || ir_dims(fn, a[2])[0] != n))
		return fail(c, "bias must be a %s vector of %lld", ir_dtypes[va->dtype].name, (long long)n);
	return true;
}

/* matmul_aux: the pre-activation of a gelu_aux matmul, of its type, in no
 * kernel (that it comes right after its matmul, check_aux_pairs says) */
static bool
check_aux(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const Instr *mm = ir_def(fn, a[0]);
	char b1[64];

	if (!mm || ir_epilogue(fn, mm) != EPI_GELU_AUX)
		return fail(c, "the operand must be a matmul with epilogue 3 (gelu_aux)");
	if (fn->vals[a[0]].dtype != fn->vals[c->in->res].dtype || !ir_same_shape(fn, a[0], c->in->res))
		return fail(c, "the result must be %s, as its matmul", tystr(fn, a[0], b1, sizeof b1));
	if (c->in->nattr)
		return fail(c, "takes no attributes");
	return c->in->kernel < 0 || fail(c, "is in a kernel: it is its GEMM's second result");
}

/* result i of a call with a valid argument list, in no kernel */
static bool
check_extern(Check *c, const Instr *in)
{
	const Extern *e = in->ext;
	char msg[300];

	if (!e || !e->name || !e->args || e->nres == 0)
		return fail(c, "has no call");
	if (in->nattr != 1 || ir_attr(c->fn, in)[0] < 0 || ir_attr(c->fn, in)[0] >= e->nres)
		return fail(c, "takes [i], the result it is, below its call's %u", e->nres);
	if (in->kernel >= 0)
		return fail(c, "is in a kernel: an extern is a step of its own");
	if (!ext_args_check(e->args, in->nargs, msg, sizeof msg))
		return fail(c, "%s", msg);
	return true;
}

/* a collective: its operand's dtype, row-major both, the numels its
 * ranks say, in no kernel; a wait: a collective's result, of its type */
static bool
check_collective(Check *c, const uint32_t *a)
{
	Func *fn = c->fn;
	const Instr *in = c->in;
	const int64_t *at = ir_attr(fn, in);
	int64_t n = ir_numel(fn, a[0]), m = ir_numel(fn, in->res), ranks;
	int want = in->op == OP_ALL_GATHER ? 1 : in->op == OP_WAIT ? 0 : 2; /* broadcast: [root, ranks] */
	char b1[64];

	if (in->kernel >= 0)
		return fail(c, "is in a kernel: a collective is a step of its own");
	if (fn->vals[a[0]].dtype != fn->vals[in->res].dtype)
		return fail(c, "result dtype must be %s", ir_dtypes[fn->vals[a[0]].dtype].name);
	if (!class_ok(ir_ops[in->op].tc, (DType)fn->vals[in->res].dtype, OC_COLLECTIVE))
		return fail(c, "cannot reduce %s", ir_dtypes[fn->vals[in->res].dtype].name);
	if (fn->vals[a[0]].layout != IR_NONE || fn->vals[in->res].layout != IR_NONE)
		return fail(c, "takes and gives row-major tensors");
	if ((int)in->nattr != want)
		return fail(c,
			want == 0                    ? "takes no attributes"
				: want == 1          ? "takes [ranks]"
				: in->op == OP_BCAST ? "takes [root, ranks]"
						     : "takes [op, ranks]");
	if (in->op == OP_WAIT) {
		const Instr *d = ir_def(fn, a[0]);
		if (!d || !op_collective((Op)d->op))
			return fail(c, "the operand must be a collective's result");
		return ir_same_shape(fn, a[0], in->res) || fail(c, "result must be %s", tystr(fn, a[0], b1, sizeof b1));
	}
	ranks = ir_ranks(fn, in);
	if (want == 2 && in->op != OP_BCAST && (at[0] < 0 || at[0] >= RED_COUNT))
		return fail(c, "op %lld is none of 0 sum, 1 avg, 2 prod, 3 min, 4 max", (long long)at[0]);
	if (ranks < (in->op == OP_ALL_REDUCE || in->op == OP_BCAST ? 0 : 1) || ranks > 1 << 20)
		return fail(c, "%lld ranks", (long long)ranks);
	if (in->op == OP_BCAST && (at[0] < 0 || at[0] >= (ranks ? ranks : 1 << 20)))
		return fail(c, "root %lld is no rank of %lld", (long long)at[0], (long long)ranks);
	if (in->op == OP_ALL_GATHER && m != n * ranks)
		return fail(c, "gathers %lld elements from each of %lld ranks: the result must have %lld, not %lld",
			(long long)n, (long long)ranks, (long long)(n * ranks), (long long)m);
	if (in->op == OP_REDUCE_SCATTER && n != m * ranks)
		return fail(c, "scatters %lld elements over %lld ranks: the result must have %lld, not %lld",
			(long long)n, (long long)ranks, (long long)(ranks ? n / ranks : 0), (long long)m);
	if ((in->op == OP_ALL_REDUCE || in->op == OP_BCAST) && !ir_same_shape(fn, a[0], in->res))
		return fail(c, "result must be %s", tystr(fn, a[0], b1, sizeof b1));
	return true;
}

/* a collective's result is read by one wait alone, and never returned: it
 * is in flight until its wait */
static bool
check_waits(Func *fn, char *err, size_t errlen, uint32_t *pos)
{
	char nb[16], nb2[16];
	uint32_t *waits = NULL;

	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];

		if (in->op != OP_WAIT)
			continue;
		if (!waits && !(waits = calloc(fn->nvals + 1, sizeof *waits))) {
			snprintf(err, errlen, "out of memory");
			return false;
		}
		if (waits[ir_args(fn, in)[0]]++) {
			snprintf(err, errlen, "%%%s = wait: the collective %%%s has a wait already",
				ir_name(fn, in->res, nb), ir_name(fn, ir_args(fn, in)[0], nb2));
			free(waits);
			if (pos)
				*pos = i;
			return false;
		}
	}
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];

		if (op_collective((Op)in->op) && !(waits && waits[in->res])) {
			snprintf(err, errlen, "%%%s = %s: has no wait (a collective is waited for once)",
				ir_name(fn, in->res, nb), ir_ops[in->op].name);
			free(waits);
			if (pos)
				*pos = i;
			return false;
		}
	}
	free(waits);

	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];

		for (uint32_t j = 0; j < in->nargs; j++) {
			const Instr *d = ir_def(fn, ir_args(fn, in)[j]);

			if (d && op_collective((Op)d->op) && in->op != OP_WAIT) {
				snprintf(err, errlen, "%%%s = %s: reads the collective %%%s before its wait",
					ir_name(fn, in->res, nb), ir_ops[in->op].name, ir_name(fn, d->res, nb2));
				if (pos)
					*pos = i;
				return false;
			}
		}
	}
	for (uint32_t i = 0; i < fn->nrets; i++) {
		const Instr *d = ir_def(fn, fn->rets[i]);

		if (d && op_collective((Op)d->op)) {
			snprintf(err, errlen, "return %u: the collective %%%s is returned before its wait", i,
				ir_name(fn, d->res, nb));
			return false;
		}
	}
	return true;
}

/* a gelu_aux matmul and its matmul_aux: one right after the other */
static bool
check_aux_pairs(Func *fn, char *err, size_t errlen, uint32_t *pos)
{
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i], *next = i + 1 < fn->nins ? in + 1 : NULL;
		bool gelu_aux = ir_epilogue(fn, in) == EPI_GELU_AUX;
		const char *why = NULL;
		char nb[16];

		if (gelu_aux && (!next || next->op != OP_MATMUL_AUX || ir_args(fn, next)[0] != in->res))
			why = "epilogue 3 (gelu_aux) wants its matmul_aux right after it";
		else if (in->op == OP_MATMUL_AUX && (i == 0 || ir_args(fn, in)[0] != in[-1].res))
			why = "does not come right after its matmul";
		if (why) {
			snprintf(err, errlen, "%%%s = %s: %s", ir_name(fn, in->res, nb), ir_ops[in->op].name, why);
			if (pos)
				*pos = i;
			return false;
		}
	}
	return true;
}

/* the results of an extern call: consecutive, result 0 first, one call */
static bool
check_calls(Func *fn, char *err, size_t errlen, uint32_t *pos)
{
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];

		if (in->op != OP_EXTERN || ir_attr(fn, in)[0] != 0)
			continue;
		for (uint32_t k = 1; k < in->ext->nres; k++) {
			const Instr *m = i + k < fn->nins ? &fn->ins[i + k] : NULL;

			if (!m || m->op != OP_EXTERN || m->ext != in->ext || ir_attr(fn, m)[0] != k ||
				m->nargs != in->nargs ||
				memcmp(ir_args(fn, m), ir_args(fn, in), in->nargs * sizeof(uint32_t))) {
				snprintf(err, errlen, "instruction %u: result %u of extern '%s' does not follow it", i,
					k, in->ext->name);
				if (pos)
					*pos = i;
				return false;
			}
		}
		i += in->ext->nres - 1;
	}
	for (uint32_t i = 0; i < fn->nins; i++)
		if (fn->ins[i].op == OP_EXTERN && ir_attr(fn, &fn->ins[i])[0] != 0 &&
			(i == 0 || fn->ins[i - 1].op != OP_EXTERN || fn->ins[i - 1].ext != fn->ins[i].ext)) {
			snprintf(err, errlen, "instruction %u: result %lld of extern '%s' without its result 0", i,
				(long long)ir_attr(fn, &fn->ins[i])[0], fn->ins[i].ext->name);
			if (pos)
				*pos = i;
			return false;
		}
	return true;
}

bool
ir_check_instr(Func *fn, const Instr *in, char *err, size_t errlen)
{
	Check c = { fn, in, err, errlen };
	const OpInfo *oi = &ir_ops[in->op];
	const uint32_t *a = ir_args(fn, in);
	const Value *r = &fn->vals[in->res];
	char b1[64], b2[64];

	if ((int)in->nargs < oi->minargs || (int)in->nargs > oi->maxargs)
		return fail(&c, "takes %d to %d operands, not %u", oi->minargs, oi->maxargs, in->nargs);
	for (uint32_t i = 0; i < in->nargs; i++)
		if (a[i] >= in->res)
			return fail(&c, "operand %u is not defined before use", i);
	for (int i = 0; i < r->rank; i++)
		if (ir_dims(fn, in->res)[i] < 0)
			return fail(&c, "negative dimension");
	if (ir_numel(fn, in->res) > INT64_MAX / 64)
		return fail(&c, "shape has too many elements");
	if (oi->cls != OC_REDUCE && oi->cls != OC_SHAPE && oi->cls != OC_CAT && oi->cls != OC_GEMM &&
		oi->cls != OC_FULL && oi->cls != OC_GATHER && oi->cls != OC_PAD && oi->cls != OC_IOTA &&
		oi->cls != OC_EXTERN && oi->cls != OC_COLLECTIVE && in->nattr != 0)
		return fail(&c, "takes no attributes");
	switch (oi->cls) {
	case OC_UNARY:
	case OC_BINARY:
	case OC_COMPARE:
	case OC_WHERE:   return check_elementwise(&c, a, r->dtype);
	case OC_FMA:
		if (fn->vals[a[0]].dtype != DT_F32 && fn->vals[a[0]].dtype != DT_F64)
			return fail(&c, "takes f32 or f64 operands, not %s", ir_dtypes[fn->vals[a[0]].dtype].name);
		return check_elementwise(&c, a, r->dtype);
	case OC_CONVERT:
		if (!ir_same_shape(fn, a[0], in->res))
			return fail(&c, "result shape must be the operand's (%s)", tystr(fn, a[0], b1, sizeof b1));
		return true;
	case OC_REDUCE: return check_reduce(&c, a);
	case OC_CLONE:
	case OC_SHAPE:
		if (fn->vals[a[0]].dtype != r->dtype)
			return fail(&c, "result dtype must be %s", ir_dtypes[fn->vals[a[0]].dtype].name);
		switch (in->op) {
		case OP_BROADCAST: return check_broadcast(&c, a);
		case OP_TRANSPOSE: return check_transpose(&c, a);
		case OP_SQUEEZE:   return check_squeeze(&c, a);
		case OP_SLICE:     return check_slice(&c, a);
		case OP_FLIP:      return check_flip(&c, a);
		case OP_RESHAPE:
			if (ir_numel(fn, a[0]) != ir_numel(fn, in->res))
				return fail(&c, "cannot reshape %s to %s", tystr(fn, a[0], b1, sizeof b1),
					tystr(fn, in->res, b2, sizeof b2));
			return in->nattr == 0 || fail(&c, "takes no attributes");
		default:
			if (!ir_same_shape(fn, a[0], in->res))
				return fail(&c, "result must be %s", tystr(fn, a[0], b1, sizeof b1));
			return true;
		}
	case OC_CAT:  return check_cat(&c, a);
	case OC_FULL: return in->nattr == 0 || fail(&c, "takes no attributes");
	case OC_GEMM:
		if (in->op == OP_MATMUL)
			return check_matmul(&c, a);
		return in->nattr == 0 ? check_gemm(&c, a) : fail(&c, "takes no attributes");
	case OC_GATHER:     return check_gather(&c, a);
	case OC_PAD:        return check_pad(&c, a);
	case OC_BITCAST:    return check_bitcast(&c, a);
	case OC_IOTA:       return check_iota(&c);
	case OC_EXTERN:     return check_extern(&c, in);
	case OC_AUX:        return check_aux(&c, a);
	case OC_COLLECTIVE: return check_collective(&c, a);
	}
	unreachable();
}

/* a kernel's lists name exactly the values it reads from outside and the
 * values it defines that are used outside or returned. cnt and mark are
 * zeroed scratch of one entry per value; they are left zeroed. */
static bool
check_kernel_io(Func *fn, const Kernel *k, const uint32_t *uses, uint32_t *cnt, uint8_t *mark, char *err, size_t errlen)
{
	uint32_t last = k->first + k->count, nin = 0, nout = 0;
	const char *bad = NULL;
	uint32_t badv = 0;
	char nb[16];

	for (uint32_t j = 0; j < k->nins; j++)
		mark[fn->argv[k->ins + j]] |= 1;
	for (uint32_t j = 0; j < k->nouts; j++)
		mark[fn->argv[k->outs + j]] |= 2;
	for (uint32_t i = k->first; i < last; i++)
		for (uint32_t j = 0; j < fn->ins[i].nargs; j++)
			cnt[ir_args(fn, &fn->ins[i])[j]]++;
	for (uint32_t i = k->first; i < last; i++) {
		const Instr *in = &fn->ins[i];

		for (uint32_t j = 0; j < in->nargs; j++) {
			uint32_t a = ir_args(fn, in)[j], def = fn->vals[a].def;

			if ((def == IR_NONE || def < k->first || def >= last) && !(mark[a] & 4)) {
				mark[a] |= 4; /* counted once */
				nin++;
				if (!(mark[a] & 1) && !bad)
					bad = "reads %%%s but does not list it as an input", badv = a;
			}
		}
		if (uses[in->res] > cnt[in->res]) {
			nout++;
			if (!(mark[in->res] & 2) && !bad)
				bad = "does not list %%%s, used outside it, as an output", badv = in->res;
		}
	}
	for (uint32_t i = k->first; i < last; i++)
		for (uint32_t j = 0; j < fn->ins[i].nargs; j++) {
			cnt[ir_args(fn, &fn->ins[i])[j]] = 0;
			mark[ir_args(fn, &fn->ins[i])[j]] = 0;
		}
	for (uint32_t j = 0; j < k->nins; j++)
		mark[fn->argv[k->ins + j]] = 0;
	for (uint32_t j = 0; j < k->nouts; j++)
		mark[fn->argv[k->outs + j]] = 0;
	if (!bad && (nin != k->nins || nout != k->nouts))
		bad = "lists values it does not read, or does not write for others";
	if (!bad)
		return true;
	snprintf(err, errlen, "kernel %s ", k->name);
	snprintf(err + strlen(err), errlen - strlen(err), bad, ir_name(fn, badv, nb));
	return false;
}

static bool
check_kernels(Func *fn, char *err, size_t errlen)
{
	uint32_t next = 0, *uses, *cnt;
	uint8_t *mark;

	if (fn->nkernels == 0)
		return true;
	uses = ir_uses(fn);
	cnt = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *cnt);
	mark = arena_alloc(fn->arena, fn->nvals + 1);
	for (uint32_t k = 0; k < fn->nkernels; k++) {
		const Kernel *kn = &fn->kernels[k];

		if (kn->first < next || kn->first + kn->count > fn->nins || kn->count == 0) {
			snprintf(err, errlen, "kernel %s: instructions out of order", kn->name);
			return false;
		}
		for (uint32_t i = kn->first; i < kn->first + kn->count; i++)
			if (fn->ins[i].kernel != (int32_t)k) {
				snprintf(err, errlen, "kernel %s: instruction %u does not belong to it", kn->name, i);
				return false;
			}
		if (!check_kernel_io(fn, kn, uses, cnt, mark, err, errlen))
			return false;
		next = kn->first + kn->count;
	}
	return true;
}

static bool
check_value(Func *fn, uint32_t v, char *err, size_t errlen)
{
	const int64_t *d = ir_dims(fn, v);
	int64_t n = 1;
	char nb[16];

	for (int i = 0; i < fn->vals[v].rank; i++) {
		if (d[i] < 0 || (d[i] > 0 && n > INT64_MAX / 64 / d[i])) {
			snprintf(err, errlen, "%%%s: shape is negative or too large", ir_name(fn, v, nb));
			return false;
		}
		n *= d[i];
	}
	return true;
}

bool
ir_verify(Func *fn, char *err, size_t errlen, uint32_t *pos)
{
	for (uint32_t v = 0; v < fn->nvals; v++)
		if (!check_value(fn, v, err, errlen))
			return false;
	for (uint32_t i = 0; i < fn->nins; i++) {
		if (fn->ins[i].res != fn->nparams + i || fn->vals[fn->ins[i].res].def != i) {
			snprintf(err, errlen, "instruction %u: result id out of order", i);
			return false;
		}
		if (!ir_check_instr(fn, &fn->ins[i], err, errlen)) {
			if (pos)
				*pos = i;
			return false;
		}
	}
	for (uint32_t i = 0; i < fn->nrets; i++) {
		int32_t u = fn->rupd[i];

		if (fn->rets[i] >= fn->nvals) {
			snprintf(err, errlen, "return %u: no such value", i);
			return false;
		}
		if (u >= 0 &&
			((uint32_t)u >= fn->nparams || fn->pslot[u] >= 0 ||
				fn->vals[fn->params[u]].dtype != fn->vals[fn->rets[i]].dtype ||
				!ir_same_shape(fn, fn->params[u], fn->rets[i]))) {
			snprintf(err, errlen, "return %u: updates parameter %d, not an input of its type", i, u);
			return false;
		}
	}
	return check_calls(fn, err, errlen, pos) && check_aux_pairs(fn, err, errlen, pos) &&
		check_waits(fn, err, errlen, pos) && check_kernels(fn, err, errlen);
}
