/* plan.c — the plan as text (docs/plan.md), and the fused graph for Graphviz. */
#include <ctype.h>
#include <string.h>

#include "be.h"

static void
print_loc(FILE *f, Loc l)
{
	static const char *const kind[] = { "none", "in", "out", "buf", "st" };

	fprintf(f, "%s:%u", kind[l.kind], l.idx);
}

/* where value v lives, as a plan reference */
static void
print_ref(FILE *f, const Plan *p, uint32_t v)
{
	if (p->loc[v].kind == LOC_NONE)
		die("value %u is not in memory", v);
	print_loc(f, p->loc[v]);
}

static void
print_type(FILE *f, Func *fn, uint32_t v)
{
	fprintf(f, "%s[", ir_dtypes[fn->vals[v].dtype].name);
	for (int i = 0; i < fn->vals[v].rank; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)ir_dims(fn, v)[i]);
	fputc(']', f);
}

static void
print_launch(FILE *f, Func *fn, const Plan *p, uint32_t k, const Launch *l, const char *pre)
{
	const Kernel *kn = &fn->kernels[k];
	const char *sep = "";

	fprintf(f, "%slaunch %s ", pre, kn->name);
	if (l)
		fprintf(f, "grid=%u block=%u smem=%u coop=%d ", l->grid, l->block, l->smem, l->coop);
	if (l && l->per_sm)
		fprintf(f, "per_sm=%u ", l->per_sm);
	fputs("args=", f);
	for (uint32_t j = 0; j < kn->nins + kn->nouts; j++) {
		fputs(sep, f);
		print_ref(f, p, fn->argv[(j < kn->nins ? kn->ins + j : kn->outs + j - kn->nins)]);
		sep = ",";
	}
	if (l && l->scratch != IR_NONE)
		fprintf(f, "%sbuf:%u", sep, l->scratch);
	fputc('\n', f);
}

static void
print_gemm(FILE *f, Func *fn, const Plan *p, const Instr *in, const char *pre, int version)
{
	static const char *const modes[] = { [SCALES_ROW] = " scale_mode=row", [SCALES_BLOCK] = " scale_mode=block" };
	const uint32_t *a = ir_args(fn, in);
	const int64_t *da = ir_dims(fn, a[0]), *db = ir_dims(fn, a[1]);
	ScaleMode mode = ir_scale_mode(fn, in);

	fprintf(f, "%sgemm d=", pre);
	print_ref(f, p, in->res);
	fputs(" a=", f);
	print_ref(f, p, a[0]);
	fputs(" b=", f);
	print_ref(f, p, a[1]);
	fputs(" scale_a=", f);
	print_ref(f, p, a[2]);
	fputs(" scale_b=", f);
	print_ref(f, p, a[3]);
	fputs(" bias=", f);
	if (in->nargs == 5)
		print_ref(f, p, a[4]);
	else
		fputs("none", f);
	fprintf(f, " m=%lld n=%lld k=%lld", (long long)da[0], (long long)db[1], (long long)da[1]);
	if (version > 1) /* the b operand is (N,K) row-major, as cuBLASLt's FP8 GEMMs want it */
		fputs(" batch=1 stride_a=0 stride_b=0 stride_d=0 trans_a=0 trans_b=1", f);
	fprintf(f, " atype=%s btype=%s dtype=%s", ir_dtypes[fn->vals[a[0]].dtype].name,
		ir_dtypes[fn->vals[a[1]].dtype].name, ir_dtypes[fn->vals[in->res].dtype].name);
	if (version > 1)
		fputs(" epilogue=none", f);
	if (mode != SCALES_TENSOR)
		fputs(modes[mode], f);
	fprintf(f, " fast_accum=%d\n", (in->flags & IF_FAST_ACCUM) != 0);
}

/* matmul: cuBLASLt's strided batch (batch 1, strides 0 for one matrix);
 * a batched a times a 2-d b folds the batch into the rows when a is not
 * transposed. A gelu_aux one names its matmul_aux's place (the next
 * instruction), laid out as d. */
static void
print_matmul(FILE *f, Func *fn, const Plan *p, const Instr *in, const char *pre)
{
	static const char *const epi[] = { "none", "relu", "gelu", "gelu_aux" };
	int e = ir_epilogue(fn, in);
	const uint32_t *a = ir_args(fn, in);
	const int64_t *dr = ir_dims(fn, in->res);
	int ra = fn->vals[a[0]].rank, rb = fn->vals[a[1]].rank, rr = fn->vals[in->res].rank;
	bool ta = in->flags & IF_TRANS_A, tb = in->flags & IF_TRANS_B;
	int64_t m = dr[rr - 2], n = dr[rr - 1], k = ir_dims(fn, a[0])[ra - (ta ? 2 : 1)], batch = 1;

	for (int i = 0; i < rr - 2; i++)
		batch *= dr[i];
	if (batch == 0) /* an empty product: nothing to run */
		m = 0, batch = 1;
	if (batch == 1)
		ra = rb = 2; /* one matrix each: no strides */
	if (batch > 1 && ra > 2 && rb == 2 && !ta) {
		m *= batch;
		batch = 1;
		ra = 2;
	}
	fprintf(f, "%sgemm d=", pre);
	print_ref(f, p, in->res);
	fputs(" a=", f);
	print_ref(f, p, a[0]);
	fputs(" b=", f);
	print_ref(f, p, a[1]);
	fputs(" bias=", f);
	if (in->nargs == 3)
		print_ref(f, p, a[2]);
	else
		fputs("none", f);
	fprintf(f,
		" m=%lld n=%lld k=%lld batch=%lld stride_a=%lld stride_b=%lld stride_d=%lld trans_a=%d trans_b=%d"
		" atype=%s btype=%s dtype=%s epilogue=%s",
		(long long)m, (long long)n, (long long)k, (long long)batch, (long long)(ra > 2 ? m * k : 0),
		(long long)(rb > 2 ? k * n : 0), (long long)(batch > 1 ? m * n : 0), ta, tb,
		ir_dtypes[fn->vals[a[0]].dtype].name, ir_dtypes[fn->vals[a[1]].dtype].name,
		ir_dtypes[fn->vals[in->res].dtype].name, epi[e]);
	if (e == EPI_GELU_AUX) {
		fputs(" aux=", f);
		print_ref(f, p, in[1].res);
	}
	fputc('\n', f);
}

static void
plan_byte(FILE *f, unsigned char c)
{
	if (isalnum(c) || strchr("_.@=,()'+-", c))
		fputc(c, f);
	else
		fprintf(f, "%%%02X", c);
}

/* an extern: call NAME ins=R,... outs=R,... args=TEXT, the argument list
 * with "," for ", " and each byte outside [A-Za-z0-9_.@=,()'+-] as %XX
 * (docs/plan.md) */
static void
print_call(FILE *f, Func *fn, const Plan *p, const Instr *in, const char *pre)
{
	const Extern *e = in->ext;
	bool quoted = false;

	fprintf(f, "%scall %s ins=", pre, e->name);
	for (uint32_t j = 0; j < in->nargs; j++) {
		fputs(j ? "," : "", f);
		print_ref(f, p, ir_args(fn, in)[j]);
	}
	fputs(" outs=", f);
	for (uint32_t j = 0; j < e->nres; j++) {
		fputs(j ? "," : "", f);
		print_ref(f, p, in[j].res);
	}
	fputs(" args=", f);
	for (const unsigned char *c = (const unsigned char *)e->args; *c; c++) {
		if (quoted && *c == '\\' && c[1]) { /* an escape in a string: two bytes */
			plan_byte(f, *c++);
		} else if (*c == '\'') {
			quoted = !quoted;
		} else if (!quoted && *c == ' ' && c > (const unsigned char *)e->args && c[-1] == ',') {
			continue; /* ", " is "," here */
		}
		plan_byte(f, *c);
	}
	fputc('\n', f);
}

/* a collective: collective KIND in=R out=R count=N dtype=T [op=OP | root=R]
 * ranks=N id=N, count the elements the op's NCCL call takes (all-gather:
 * each rank's; reduce-scatter: the result's), id its wait's; wait id=N */
static void
print_collective(FILE *f, Func *fn, const Plan *p, const Instr *in, uint32_t id, const char *pre)
{
	static const char *const red[RED_COUNT] = { "sum", "avg", "prod", "min", "max" };
	const uint32_t *a = ir_args(fn, in);
	const int64_t *at = ir_attr(fn, in);

	fprintf(f, "%scollective %s in=", pre, ir_ops[in->op].name);
	print_ref(f, p, a[0]);
	fputs(" out=", f);
	print_ref(f, p, in->res);
	fprintf(f, " count=%lld dtype=%s", (long long)ir_numel(fn, in->op == OP_ALL_GATHER ? a[0] : in->res),
		ir_dtypes[fn->vals[in->res].dtype].name);
	if (in->op == OP_BCAST)
		fprintf(f, " root=%lld", (long long)at[0]);
	else if (in->op != OP_ALL_GATHER)
		fprintf(f, " op=%s", red[at[0]]);
	fprintf(f, " ranks=%lld id=%u\n", (long long)ir_ranks(fn, in), id);
}

static void
print_buffer(FILE *f, Func *fn, const PlanBuf *b, uint32_t i, const char *pre)
{
	fprintf(f, "%sbuffer %u ", pre, i);
	if (b->value == IR_NONE) {
		fprintf(f, "u8[%lld]", (long long)b->bytes);
	} else {
		print_type(f, fn, b->value);
		if (!ir_is_rowmajor(fn, b->value)) {
			fputs(" layout=[", f);
			for (int j = 0; j < fn->vals[b->value].rank; j++)
				fprintf(f, "%s%lld", j ? "," : "", (long long)fn->ints[fn->vals[b->value].layout + j]);
			fputc(']', f);
		}
	}
	fprintf(f, " offset=%lld bytes=%lld%s\n", (long long)b->offset, (long long)b->bytes, b->zero ? " zero" : "");
}

/* Version 1 for a program of one function that saves nothing: its lines
 * come first. Version 2 names the state slots, then each function. */
void
be_print_plan_head(FILE *f, const Program *prog, Launch *const *l, const char *gpu, const char *pre)
{
	char nb[16];

	fprintf(f, "%sfp8cc-plan %d\n%starget %s\n", pre, be_plan_version(prog, l), pre, gpu);
	for (uint32_t fi = 0; fi < prog->nfns; fi++) {
		Func *fn = prog->fns[fi];

		for (uint32_t i = 0; i < fn->nrets; i++) {
			if (fn->rslot[i] < 0)
				continue;
			fprintf(f, "%sstate %d %s ", pre, fn->rslot[i], ir_retname(fn, i, nb));
			print_type(f, fn, fn->rets[i]);
			fprintf(f, " from=%s\n", fn->name);
		}
	}
}

/* 1 for a program that needs nothing past version 1: one function, no state,
 * no GEMM but torch._scaled_mm's with tensor-wise scales, no extern; 7 for
 * one with an update in place; 6 for
 * one with a broadcast; 5 for one with other collectives; 4 for one with a
 * launch of at most so many blocks an SM; 3 for one with row-wise or
 * block-wise scales; else 2 */
int
be_plan_version(const Program *prog, Launch *const *l)
{
	int v = prog->nfns > 1 || prog->nslots > 0 ? 2 : 1;
	bool coll = false;

	for (uint32_t fi = 0; fi < prog->nfns; fi++)
		for (uint32_t i = 0; i < prog->fns[fi]->nrets; i++)
			if (prog->fns[fi]->rupd[i] >= 0)
				return 7;
	for (uint32_t fi = 0; fi < prog->nfns; fi++)
		for (uint32_t i = 0; i < prog->fns[fi]->nins; i++) {
			const Instr *in = &prog->fns[fi]->ins[i];
			if (in->op == OP_BCAST)
				return 6;
			coll |= ir_ops[in->op].cls == OC_COLLECTIVE;
		}
	if (coll)
		return 5;
	for (uint32_t fi = 0; fi < prog->nfns; fi++) {
		Func *fn = prog->fns[fi];

		for (uint32_t k = 0; l && l[fi] && k < fn->nkernels; k++)
			if (l[fi][k].per_sm)
				return 4;
		for (uint32_t i = 0; i < fn->nins; i++) {
			if (ir_scale_mode(fn, &fn->ins[i]) != SCALES_TENSOR)
				v = 3;
			if ((fn->ins[i].op == OP_MATMUL || fn->ins[i].op == OP_EXTERN) && v < 2)
				v = 2;
		}
	}
	return v;
}

/* ---- in-place updates ---- */

/* parameter i's number among the function's inputs (its state slots apart) */
static uint32_t
input_number(Func *fn, uint32_t i)
{
	uint32_t n = 0;

	for (uint32_t j = 0; j < i; j++)
		n += fn->pslot[j] < 0;
	return n;
}

static bool
any_at(const Plan *p, const uint32_t *vs, uint32_t n, Loc l)
{
	for (uint32_t i = 0; i < n; i++)
		if (same_loc(p->loc[vs[i]], l))
			return true;
	return false;
}

/* whether step st reads (writes) the memory at l */
static bool
touches(Func *fn, const Plan *p, const Step *st, Loc l, bool write)
{
	const Instr *in;
	const Kernel *k;

	switch (st->kind) {
	case STEP_LAUNCH:
		k = &fn->kernels[st->index];
		return write ? any_at(p, &fn->argv[k->outs], k->nouts, l) : any_at(p, &fn->argv[k->ins], k->nins, l);
	case STEP_COPY: return same_loc(write ? st->dst : st->src, l);
	case STEP_WAIT: return false;
	default:
		in = &fn->ins[st->index];
		if (!write)
			return any_at(p, ir_args(fn, in), in->nargs, l);
		for (uint32_t r = 0; r < (in->op == OP_EXTERN ? in->ext->nres : 1); r++)
			if (same_loc(p->loc[in[r].res], l))
				return true;
		return st->kind == STEP_GEMM && st->index + 1 < fn->nins && in[1].op == OP_MATMUL_AUX &&
			same_loc(p->loc[in[1].res], l);
	}
}

/* whether output i (at out) may be written in the memory of the input it
 * updates: every step that reads that input runs before the first that
 * writes the output, or is that step — a kernel whose codegen found that it
 * reads the input only where and before it writes (codegen.c, "In place"),
 * or the copy of the input onto itself; no collective reads it, as those
 * run beside the steps (docs/design.md, "In-place updates") */
static bool
shares(Func *fn, const Plan *p, uint32_t i, Loc out)
{
	uint32_t u = fn->params[fn->rupd[i]], first = p->nsteps;
	bool at_first = false;

	for (uint32_t s = 0; s < p->nsteps && first == p->nsteps; s++)
		if (touches(fn, p, &p->steps[s], out, true))
			first = s;
	if (first == p->nsteps)
		return false;
	for (uint32_t s = 0; s < p->nsteps; s++) {
		if (!touches(fn, p, &p->steps[s], p->loc[u], false))
			continue;
		if (p->steps[s].kind == STEP_COLLECTIVE || s > first)
			return false;
		if (s < first || p->steps[s].kind == STEP_COPY) /* a copy of it onto itself */
			continue;
		if (p->steps[s].kind != STEP_LAUNCH)
			return false;
		at_first = true;
	}
	if (!at_first)
		return true;
	for (uint32_t j = 0; j < p->nshared; j++)
		if (p->shared[j].u == u && p->shared[j].v == fn->rets[i] && same_loc(p->loc[fn->rets[i]], out))
			return true;
	return false;
}

void
be_print_plan(FILE *f, Func *fn, Plan *p, const Launch *l, int version, const char *pre)
{
	char nb[16];

	if (version > 1)
		fprintf(f, "%sfunction %s\n", pre, fn->name);
	for (uint32_t i = 0, n = 0; i < fn->nparams; i++) {
		if (fn->pslot[i] >= 0)
			continue;
		fprintf(f, "%sinput %u %s ", pre, n++, ir_name(fn, fn->params[i], nb));
		print_type(f, fn, fn->params[i]);
		fputc('\n', f);
	}
	for (uint32_t i = 0, n = 0; i < fn->nrets; i++) {
		if (fn->rslot[i] >= 0)
			continue;
		fprintf(f, "%soutput %u %s ", pre, n, ir_retname(fn, i, nb));
		print_type(f, fn, fn->rets[i]);
		if (fn->rupd[i] >= 0)
			fprintf(f, " updates=%u inplace=%d", input_number(fn, (uint32_t)fn->rupd[i]),
				l && shares(fn, p, i, (Loc){ LOC_OUT, n }));
		n++;
		fputc('\n', f);
	}
	fprintf(f, "%sworkspace %lld\n", pre, (long long)p->workspace);
	for (uint32_t i = 0; i < p->nbufs; i++)
		print_buffer(f, fn, &p->bufs[i], i, pre);
	uint32_t *id = arena_alloc(fn->arena, (fn->nvals + 1) * sizeof *id), ncoll = 0;

	for (uint32_t s = 0; s < p->nsteps; s++) {
		const Step *st = &p->steps[s];

		if (st->kind == STEP_COLLECTIVE) {
			id[fn->ins[st->index].res] = ncoll;
			print_collective(f, fn, p, &fn->ins[st->index], ncoll++, pre);
		} else if (st->kind == STEP_WAIT) {
			fprintf(f, "%swait id=%u\n", pre, id[ir_args(fn, &fn->ins[st->index])[0]]);
		} else if (st->kind == STEP_LAUNCH) {
			print_launch(f, fn, p, st->index, l ? &l[st->index] : NULL, pre);
		} else if (st->kind == STEP_GEMM && fn->ins[st->index].op == OP_MATMUL) {
			print_matmul(f, fn, p, &fn->ins[st->index], pre);
		} else if (st->kind == STEP_GEMM) {
			print_gemm(f, fn, p, &fn->ins[st->index], pre, version);
		} else if (st->kind == STEP_CALL) {
			print_call(f, fn, p, &fn->ins[st->index], pre);
		} else {
			fprintf(f, "%scopy dst=", pre);
			print_loc(f, st->dst);
			fputs(" src=", f);
			print_loc(f, st->src);
			fprintf(f, " bytes=%lld\n", (long long)st->bytes);
		}
	}
}

/* ---- Graphviz: one cluster per kernel, GEMMs as boxes ---- */

static const char *const scaled_mm_operands[] = { "a", "b", "scale_a", "scale_b", "bias" };
static const char *const matmul_operands[] = { "a", "b", "bias" };

/* s inside a double-quoted Graphviz string */
static void
dot_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
}

/* a value as the trace names it; one without a name as the IR text does
 * (%12), so that it reads as a name and not as a number */
static void
dot_name(FILE *f, Func *fn, uint32_t v)
{
	char nb[16];

	if (!fn->vals[v].name)
		fputc('%', f);
	dot_str(f, ir_name(fn, v, nb));
}

/* the state slot parameter v reads; -1: a caller's input */
static int32_t
param_slot(Func *fn, uint32_t v)
{
	for (uint32_t i = 0; i < fn->nparams; i++)
		if (fn->params[i] == v)
			return fn->pslot[i];
	return -1;
}

/* name, then "op [attrs] type"; a constant shows its value. Node ids are
 * v<value> behind the function's prefix (f0_ in a program of several). */
static void
dot_node(FILE *f, Func *fn, const char *id, uint32_t v, const char *indent)
{
	const Instr *in = ir_def(fn, v);
	const int64_t *attr = in ? ir_attr(fn, in) : NULL;

	fprintf(f, "%s%sv%u [label=\"", indent, id, v);
	dot_name(f, fn, v);
	fprintf(f, "\\n%s ", in ? ir_ops[in->op].name : param_slot(fn, v) >= 0 ? "saved" : "input");
	if (in && in->op == OP_FULL) {
		ir_print_double(f, in->fval);
		fputc(' ', f);
	}
	if (in && in->op == OP_EXTERN) {
		dot_str(f, in->ext->name);
		fputc(' ', f);
	}
	for (uint32_t i = 0; in && i < in->nattr; i++)
		fprintf(f, "%s%lld%s", i ? "," : "[", (long long)attr[i], i + 1 == in->nattr ? "] " : "");
	print_type(f, fn, v);
	fprintf(f, "\"%s];\n",
		!in ? " shape=invhouse"
			: op_gemm((Op)in->op) || in->op == OP_MATMUL_AUX ? " shape=box style=filled fillcolor=lightblue"
			: in->op == OP_EXTERN                            ? " shape=box style=filled fillcolor=khaki"
			: in->op == OP_FULL                              ? " shape=plaintext"
									 : "");
}

/* the edges into instruction i; a GEMM's say which operand they are */
static void
dot_edges(FILE *f, Func *fn, const char *id, const Instr *in)
{
	for (uint32_t j = 0; j < in->nargs; j++) {
		fprintf(f, "  %sv%u -> %sv%u", id, ir_args(fn, in)[j], id, in->res);
		if (in->op == OP_SCALED_MM && j < sizeof scaled_mm_operands / sizeof scaled_mm_operands[0])
			fprintf(f, " [label=\"%s\"]", scaled_mm_operands[j]);
		else if (in->op == OP_MATMUL && j < sizeof matmul_operands / sizeof matmul_operands[0])
			fprintf(f, " [label=\"%s\"]", matmul_operands[j]);
		fputs(";\n", f);
	}
}

/* one function: its inputs, a cluster per kernel, the rest, its outputs */
static void
dot_func(FILE *f, Func *fn, const char *id, const char *in)
{
	char nb[16];

	for (uint32_t i = 0; i < fn->nparams; i++)
		dot_node(f, fn, id, fn->params[i], in);
	for (uint32_t i = 0; i < fn->nins; i++) {
		if (fn->ins[i].kernel >= 0 && fn->kernels[fn->ins[i].kernel].first == i) {
			const Kernel *k = &fn->kernels[fn->ins[i].kernel];

			fprintf(f,
				"%ssubgraph cluster_%s%s {\n%s  label=\"kernel %s\"; style=rounded; color=darkgreen;\n",
				in, id, k->name, in, k->name);
			for (uint32_t j = k->first; j < k->first + k->count; j++)
				dot_node(f, fn, id, fn->ins[j].res, "    ");
			fprintf(f, "%s}\n", in);
			i = k->first + k->count - 1;
		} else if (fn->ins[i].kernel < 0) {
			dot_node(f, fn, id, fn->ins[i].res, in);
		}
	}
	for (uint32_t i = 0; i < fn->nrets; i++) {
		if (fn->rslot[i] >= 0)
			continue;
		fprintf(f, "%s%sout%u [label=\"", in, id, i);
		dot_str(f, ir_retname(fn, i, nb));
		fputs("\" shape=house];\n", f);
	}
}

/* edges: within each function, to its outputs, and a dashed one from the
 * value a function saves to the parameter of a later one that reads it */
static void
dot_flow(FILE *f, const Program *prog, char (*ids)[16])
{
	for (uint32_t fi = 0; fi < prog->nfns; fi++) {
		Func *fn = prog->fns[fi];

		for (uint32_t i = 0; i < fn->nins; i++)
			dot_edges(f, fn, ids[fi], &fn->ins[i]);
		for (uint32_t i = 0; i < fn->nrets; i++)
			if (fn->rslot[i] < 0)
				fprintf(f, "  %sv%u -> %sout%u;\n", ids[fi], fn->rets[i], ids[fi], i);
		for (uint32_t i = 0; i < fn->nrets; i++)
			for (uint32_t gj = fi + 1; fn->rslot[i] >= 0 && gj < prog->nfns; gj++)
				for (uint32_t p = 0; p < prog->fns[gj]->nparams; p++)
					if (prog->fns[gj]->pslot[p] == fn->rslot[i])
						fprintf(f, "  %sv%u -> %sv%u [style=dashed label=\"saved %d\"];\n",
							ids[fi], fn->rets[i], ids[gj], prog->fns[gj]->params[p],
							fn->rslot[i]);
	}
}

void
be_print_dot(FILE *f, const Program *prog)
{
	char (*ids)[16] = arena_alloc(prog->arena, (prog->nfns + 1) * sizeof *ids);
	bool several = prog->nfns > 1;

	fputs("digraph \"", f);
	dot_str(f, prog->fns[0]->name);
	fputs("\" {\n  rankdir=TB;\n  node [shape=ellipse fontsize=10];\n  edge [fontsize=9];\n", f);
	for (uint32_t fi = 0; fi < prog->nfns; fi++) {
		snprintf(ids[fi], sizeof ids[fi], several ? "f%u_" : "", fi);
		if (several) {
			fprintf(f, "  subgraph cluster_f%u {\n    label=\"function ", fi);
			dot_str(f, prog->fns[fi]->name);
			fputs("\"; style=dashed;\n", f);
		}
		dot_func(f, prog->fns[fi], ids[fi], "  ");
		if (several)
			fputs("  }\n", f);
	}
	dot_flow(f, prog, ids);
	fputs("}\n", f);
}
