/* rows.c — row kernels (docs/design.md, "The backend"). */
#include <string.h>

#include "cg.h"

/* ---- row kernels ----
 * A kernel whose reductions all reduce the last dim of one row-major space
 * (..., C), and whose outputs are that space's or per row (softmax, RMSNorm,
 * LayerNorm, row-wise quantize), runs a row at a time: T threads a row (a
 * warp for a short row, up to a block), each thread holding its V-element
 * chunks of the row in registers (the memo keeps what it loaded and
 * computed at those coordinates) from the first reduction to the last
 * write. One read, one write, no grid barrier. What depends on a
 * reduction must keep its row: elementwise ops over the space or per row
 * (the leading dims, with or without a trailing 1 as keepdim leaves it;
 * clones, the copy of a per-row value in another layout too), broadcasts
 * that keep the leading dims, reductions of the last dim — anything else,
 * and the kernel runs in phases. */

#define ROW_MAXCHUNKS 8 /* V-element chunks a thread holds */

static bool
lead_dims(Func *fn, const Rows *rs, uint32_t v)
{
	return fn->vals[v].rank >= rs->rank - 1 &&
		!memcmp(ir_dims(fn, v), ir_dims(fn, rs->space), (size_t)(rs->rank - 1) * sizeof(int64_t));
}

static bool
row_space(Func *fn, const Rows *rs, uint32_t v)
{
	return fn->vals[v].rank == rs->rank && lead_dims(fn, rs, v) && ir_dims(fn, v)[rs->rank - 1] == rs->C &&
		ir_is_rowmajor(fn, v);
}

/* the leading dims, or those and a 1, in any layout: a per-row value is
 * read and written one element at a time (block-wise scales are written
 * column-major) */
static bool
per_row(Func *fn, const Rows *rs, uint32_t v)
{
	int r = fn->vals[v].rank;

	return lead_dims(fn, rs, v) && (r == rs->rank - 1 || (r == rs->rank && ir_dims(fn, v)[r - 1] == 1));
}

/* a broadcast that keeps the leading dims where they are */
static bool
keeps_rows(Func *fn, const Rows *rs, const Instr *in)
{
	uint32_t a = ir_args(fn, in)[0];

	if (!per_row(fn, rs, a) || !(per_row(fn, rs, in->res) || row_space(fn, rs, in->res)))
		return false;
	for (int i = 0; i < fn->vals[a].rank; i++)
		if (ir_attr(fn, in)[i] != i)
			return false;
	return true;
}

bool
cg_rows_shape(Cg *c, Rows *rs)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	bool *dep = arena_alloc(fn->arena, fn->nvals + 1);
	int size = 16;

	rs->space = IR_NONE;
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		const Instr *in = &fn->ins[i];
		uint32_t v = in->res, a = in->nargs ? ir_args(fn, in)[0] : IR_NONE;
		bool any = false;

		if (ir_ops[in->op].cls == OC_REDUCE) {
			int r = fn->vals[a].rank;

			if (r < 2 || fn->vals[v].rank != r - 1 || in->nattr != 1 || ir_attr(fn, in)[0] != r - 1)
				return false;
			if (rs->space == IR_NONE) {
				rs->space = a;
				rs->rank = r;
				rs->C = ir_dims(fn, a)[r - 1];
				rs->R = ir_numel(fn, v);
			}
			if (!row_space(fn, rs, a))
				return false;
			dep[v] = true;
			continue;
		}
		for (uint32_t j = 0; j < in->nargs; j++)
			any |= cg_in_kernel(c, ir_args(fn, in)[j]) && dep[ir_args(fn, in)[j]];
		if (!any)
			continue;
		if (in->op == OP_BROADCAST)
			dep[v] = keeps_rows(fn, rs, in);
		else
			dep[v] = (op_elementwise((Op)in->op) || in->op == OP_CLONE) &&
				(row_space(fn, rs, v) || per_row(fn, rs, v));
		if (!dep[v])
			return false;
	}
	if (rs->space == IR_NONE || rs->C <= 0 || rs->R <= 0)
		return false;
	for (uint32_t j = 0; j < k->nouts; j++) {
		uint32_t v = fn->argv[k->outs + j];

		if (!row_space(fn, rs, v) && !per_row(fn, rs, v))
			return false;
		if (row_space(fn, rs, v) && dt_size((DType)fn->vals[v].dtype) < size)
			size = dt_size((DType)fn->vals[v].dtype);
	}
	for (uint32_t j = 0; j < k->nins; j++) {
		uint32_t v = fn->argv[k->ins + j];

		if (row_space(fn, rs, v) && dt_size((DType)fn->vals[v].dtype) < size)
			size = dt_size((DType)fn->vals[v].dtype);
	}
	rs->V = 16 / size;
	if (rs->C % rs->V)
		return false;
	/* the fewest threads a row, down to a warp, that give each two chunks
	 * (row-wise quantize of 4096 bf16 columns on the H200: 2.80 TB/s with
	 * one chunk a thread, 2.90 with two); a block of several rows needs
	 * every one of them to take the loop's trips, for its barriers */
	for (rs->T = 32; rs->T < BE_BLOCK && rs->C / rs->V >= 2 * (rs->T * 2); rs->T *= 2)
		; /* twice the threads still leave each two chunks */
	if (rs->T > 32 && rs->R % (BE_BLOCK / rs->T))
		rs->T = BE_BLOCK;
	rs->nch = (int)((rs->C / rs->V + rs->T - 1) / rs->T);
	return rs->nch <= ROW_MAXCHUNKS;
}

/* x combined over the T threads of this thread's row (T/32 warps), in
 * every thread: each warp's butterfly, then in every warp a butterfly over
 * the row's warps' results — for T = BE_BLOCK the tree cg_block_reduce
 * builds, so the bits do not depend on T */
static LLVMValueRef
group_allreduce(Cg *c, const Red *r, LLVMValueRef x, int T)
{
	unsigned w = (unsigned)T / 32;
	LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, cg_ic(c, 31), ""),
		     warp = LLVMBuildLShr(c->b, c->tid, cg_ic(c, 5), ""), slot;
	LLVMBasicBlockRef join;

	x = cg_warp_reduce(c, r, x);
	if (w == 1)
		return x;
	join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, lane, cg_ic(c, 0), ""));
	LLVMBuildStore(c->b, cg_to_i64(c, x), cg_smem_slot(c, warp));
	cg_if_end(c, join);
	cg_syncthreads(c);
	slot = LLVMBuildOr(c->b, LLVMBuildAnd(c->b, warp, cg_ic(c, -(int64_t)w), ""),
		LLVMBuildAnd(c->b, lane, cg_ic(c, w - 1), ""), "");
	x = cg_from_i64(c, LLVMBuildLoad2(c->b, c->i64, cg_smem_slot(c, slot), ""), r->kt);
	x = cg_lanes_reduce(c, r, x, w / 2);
	cg_syncthreads(c); /* the slots are free again */
	return x;
}

/* ---- prefetch ----
 * While a thread reduces and writes one row, the next row's loads are in
 * flight: each thread copies its own chunks of the next row's inputs into
 * shared memory (cp.async, 16 bytes a copy, two buffers: the row being
 * read and the next) and reads them back after cp.async.wait_group, which
 * makes a thread's own copies visible to it, so no CTA barrier is needed.
 * Inputs read at the row's elements are prefetched, in the layout a Keep
 * uses (kept() reads them): chunk ch of buffer b at (b * nch + ch) * step,
 * input u's piece q (16 bytes) at keep_off[u] + q * BE_BLOCK * 16 + tid * 16.
 * A chunk of one piece is copied past L1 (.cg: a warp's copies are 512
 * contiguous bytes); a chunk of several (bf16 in, fp8 out: 32 bytes a
 * thread) through it (.ca), which joins the halves of each sector that
 * the pieces' copies take apart. H200 (docs/gpu-results.md, 2026-12-04):
 * LayerNorm 41.3 -> 39.0 us; row-wise quantize of 4096^2 15.3 -> 14.2
 * with .ca, 21.9 with .cg; RMSNorm the same; softmax 48.0 -> 48.7. */
typedef struct {
	uint32_t *in; /* the inputs prefetched */
	int n;
	int64_t step;     /* bytes of one chunk over the block, every input */
	LLVMValueRef buf; /* shared, two buffers of nch chunks */
} Prefetch;

/* an input that an elementwise op over the rows' space reads at its element */
static bool
read_at_element(Cg *c, const Rows *rs, uint32_t u)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];

	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		const Instr *in = &fn->ins[i];

		if (!op_elementwise((Op)in->op) || !row_space(fn, rs, in->res))
			continue;
		for (uint32_t j = 0; j < in->nargs; j++)
			if (ir_args(fn, in)[j] == u)
				return true;
	}
	return false;
}

static void
plan_prefetch(Cg *c, const Rows *rs, Prefetch *pf)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	int64_t bytes = 0;

	pf->in = arena_alloc(fn->arena, (k->nins + 1) * sizeof *pf->in);
	pf->n = 0;
	for (uint32_t j = 0; j < k->nins; j++) {
		uint32_t u = fn->argv[k->ins + j];

		c->keep_off[u] = -1;
		if (!row_space(fn, rs, u) || fn->vals[u].dtype == DT_B8 || !read_at_element(c, rs, u))
			continue;
		c->keep_off[u] = bytes * BE_BLOCK;
		bytes += rs->V * dt_size((DType)fn->vals[u].dtype);
		pf->in[pf->n++] = u;
	}
	pf->step = bytes * BE_BLOCK;
	/* each buffer within what a block may keep across a grid barrier
	 * (be_keep_bytes): 16 KB on sm_90 and sm_100, less on sm_89, whose SM
	 * has 100 KB for six blocks */
	if (!pf->n || rs->nch * pf->step > c->keep) {
		for (int i = 0; i < pf->n; i++)
			c->keep_off[pf->in[i]] = -1;
		pf->n = 0;
		return;
	}
	pf->buf = cg_shared_array(c, arena_printf(fn->arena, "%s.prefetch", k->name),
		LLVMArrayType2(c->i8, (uint64_t)(2 * rs->nch * pf->step)), 16);
}

/* this thread's first byte of chunk ch in buffer b */
static LLVMValueRef
prefetch_at(Cg *c, const Rows *rs, const Prefetch *pf, LLVMValueRef b, int ch)
{
	LLVMValueRef o = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, b, cg_ic(c, rs->nch * pf->step), ""),
		LLVMBuildAdd(c->b, cg_ic(c, ch * pf->step), LLVMBuildMul(c->b, c->tid, cg_ic(c, 16), ""), ""), "");

	return LLVMBuildGEP2(c->b, c->i8, pf->buf, &o, 1, "");
}

/* start the copies of row `row`'s chunks (columns col) into buffer b, then
 * close the group (an empty one past the last row) */
static void
prefetch_row(Cg *c, const Rows *rs, const Prefetch *pf, LLVMValueRef row, LLVMValueRef b, const LLVMValueRef *col)
{
	Func *fn = c->fn;
	LLVMBasicBlockRef join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntULT, row, cg_ic(c, rs->R), ""));

	for (int ch = 0; ch < rs->nch; ch++) {
		LLVMValueRef lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, row, cg_ic(c, rs->C), ""), col[ch], ""),
			     at = prefetch_at(c, rs, pf, b, ch);

		for (int i = 0; i < pf->n; i++) {
			uint32_t u = pf->in[i];
			DType t = (DType)fn->vals[u].dtype;
			int sz = dt_size(t), pieces = rs->V * sz / 16;

			for (int q = 0; q < pieces; q++) {
				LLVMValueRef src = LLVMBuildAdd(c->b, lin, cg_ic(c, q * 16 / sz), ""), args[2];
				LLVMValueRef o = cg_ic(c, c->keep_off[u] + (int64_t)q * BE_BLOCK * 16);

				args[0] = LLVMBuildGEP2(c->b, c->i8, at, &o, 1, "");
				args[1] = LLVMBuildGEP2(c->b, cg_mem_type(c, t), c->ptr_of[u], &src, 1, "");
				be_call(c,
					pieces > 1 ? "llvm.nvvm.cp.async.ca.shared.global.16"
						   : "llvm.nvvm.cp.async.cg.shared.global.16",
					NULL, 0, args, 2);
			}
		}
	}
	cg_if_end(c, join);
	be_call(c, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
}

/* element e of this thread's chunks: its coordinates and linear index */
typedef struct {
	LLVMValueRef *co, lin;
	int align;
} RowElem;

/* make e the current element of the space (aligned accesses at its index) */
static LLVMValueRef *
at(Cg *c, const Rows *rs, const RowElem *e)
{
	return cg_current(c, rs->space, e->co, e->lin, e->align);
}

uint32_t
cg_rows_kernel(Cg *c, const Rows *rs)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	int64_t per_block = BE_BLOCK / rs->T;
	LLVMValueRef lane = LLVMBuildURem(c->b, c->tid, cg_ic(c, rs->T), ""), row, *rowco, *keepco;
	int64_t tmp[IR_MAXRANK];
	LLVMValueRef lin, col[ROW_MAXCHUNKS], ok[ROW_MAXCHUNKS], first, stride, par = NULL, cur = NULL;
	RowElem *el;
	LLVMBasicBlockRef uni = cg_block(c, "uni"), body = cg_block(c, "rows"), join;
	bool partial = rs->C % ((int64_t)rs->T * rs->V) != 0;
	Prefetch pf;
	Loop l;

	LLVMBuildBr(c->b, uni);
	LLVMPositionBuilderAtEnd(c->b, uni);
	LLVMBuildBr(c->b, body);
	LLVMPositionBuilderAtEnd(c->b, body);
	c->pre = uni;
	for (int ch = 0; ch < rs->nch; ch++) {
		/* a chunk past the row's end reads the row's first (masked out) */
		col[ch] = LLVMBuildNUWAdd(c->b, LLVMBuildNUWMul(c->b, lane, cg_ic(c, rs->V), ""),
			cg_ic(c, (int64_t)ch * rs->T * rs->V), "");
		ok[ch] = LLVMBuildICmp(c->b, LLVMIntULT, col[ch], cg_ic(c, rs->C), "");
		if (partial)
			col[ch] = LLVMBuildSelect(c->b, ok[ch], col[ch], cg_ic(c, 0), "");
	}
	first = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, c->bid, cg_ic(c, per_block), ""),
		LLVMBuildUDiv(c->b, c->tid, cg_ic(c, rs->T), ""), "");
	stride = LLVMBuildMul(c->b, c->nctaid, cg_ic(c, per_block), "");
	plan_prefetch(c, rs, &pf);
	if (pf.n) {
		par = cg_entry_alloca(c, c->ity);
		LLVMBuildStore(c->b, cg_ic(c, 0), par);
		prefetch_row(c, rs, &pf, first, cg_ic(c, 0), col);
	}
	row = cg_loop_begin(c, &l, first, cg_ic(c, rs->R), stride);
	if (pf.n) { /* the next row's copies out, this row's in */
		LLVMValueRef one = LLVMConstInt(c->i32, 1, 0), next;

		cur = LLVMBuildLoad2(c->b, c->ity, par, "");
		next = LLVMBuildXor(c->b, cur, cg_ic(c, 1), "");
		LLVMBuildStore(c->b, next, par);
		prefetch_row(c, rs, &pf, LLVMBuildAdd(c->b, row, stride, ""), next, col);
		be_call(c, "llvm.nvvm.cp.async.wait.group", NULL, 0, &one, 1);
	}
	/* the row's coordinates; a dim of one is the constant 0 that
	 * broadcasts index it with, so that the memo finds what they read */
	rowco = cg_delinearize(c, row, ir_dims(fn, rs->space), cg_order_of(fn, rs->space, tmp), rs->rank - 1);
	for (int i = 0; i < rs->rank - 1; i++)
		if (ir_dims(fn, rs->space)[i] == 1)
			rowco[i] = cg_ic(c, 0);
	keepco = cg_new_coords(c, rs->rank);
	memcpy(keepco, rowco, (size_t)(rs->rank - 1) * sizeof *keepco);
	keepco[rs->rank - 1] = cg_ic(c, 0);
	el = arena_alloc(fn->arena, (size_t)rs->nch * rs->V * sizeof *el);
	for (int ch = 0; ch < rs->nch; ch++) {
		lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, row, cg_ic(c, rs->C), ""), col[ch], "");
		for (int j = 0; j < rs->V; j++) {
			RowElem *e = &el[ch * rs->V + j];

			/* each index the chunk's first plus j: the accesses become vectors */
			e->co = cg_new_coords(c, rs->rank);
			memcpy(e->co, rowco, (size_t)(rs->rank - 1) * sizeof *e->co);
			e->co[rs->rank - 1] = j ? LLVMBuildAdd(c->b, col[ch], cg_ic(c, j), "") : col[ch];
			e->lin = j ? LLVMBuildAdd(c->b, lin, cg_ic(c, j), "") : lin;
			e->align = cg_lane_align(j, rs->V);
		}
		/* the prefetched inputs of the chunk, read back from shared memory */
		for (int j = 0; j < rs->V && pf.n; j++) {
			c->keep_at = prefetch_at(c, rs, &pf, cur, ch);
			c->keep_load = true;
			c->keep_j = j;
			for (int i = 0; i < pf.n; i++)
				cg_value(c, pf.in[i], at(c, rs, &el[ch * rs->V + j]));
		}
		c->keep_at = NULL;
	}
	for (uint32_t i = k->first; i < k->first + k->count; i++) {
		uint32_t v = fn->ins[i].res, a = fn->ins[i].nargs ? ir_args(fn, &fn->ins[i])[0] : IR_NONE;
		Red r;
		LLVMValueRef acc;

		if (ir_ops[fn->ins[i].op].cls != OC_REDUCE)
			continue;
		r = cg_red_of(c, v);
		acc = cg_identity(c, &r);
		for (int e = 0; e < rs->nch * rs->V; e++) {
			LLVMValueRef x = cg_key(c, &r, cg_value(c, a, at(c, rs, &el[e])));

			if (partial)
				x = LLVMBuildSelect(c->b, ok[e / rs->V], x, cg_identity(c, &r), "");
			acc = cg_combine(c, &r, acc, x);
		}
		acc = group_allreduce(c, &r, acc, rs->T);
		cg_memo_add(c, v, rowco, cg_unkey(c, &r, acc));
	}
	for (uint32_t j = 0; j < k->nouts; j++) {
		uint32_t v = fn->argv[k->outs + j];
		LLVMValueRef x[16];

		if (per_row(fn, rs, v)) {
			LLVMValueRef *pc = fn->vals[v].rank == rs->rank ? keepco : rowco;

			c->space_coords = NULL;
			x[0] = cg_value(c, v, pc);
			join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, lane, cg_ic(c, 0), ""));
			cg_store_at(c, c->ptr_of[v], v, pc, x[0]);
			cg_if_end(c, join);
			continue;
		}
		for (int ch = 0; ch < rs->nch; ch++) {
			for (int e = 0; e < rs->V; e++)
				x[e] = cg_value(c, v, at(c, rs, &el[ch * rs->V + e]));
			join = partial ? cg_if_begin(c, ok[ch]) : NULL;
			for (int e = 0; e < rs->V; e++)
				cg_store_at(c, c->ptr_of[v], v, at(c, rs, &el[ch * rs->V + e]), x[e]);
			if (join)
				cg_if_end(c, join);
		}
	}
	cg_loop_end(c, &l);
	c->space_coords = NULL;
	return (uint32_t)((rs->R + per_block - 1) / per_block);
}
