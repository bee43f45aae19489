/* tiles.c — transposed writes through shared-memory tiles (docs/design.md, "The backend"). */
#include <string.h>

#include "cg.h"

/* ---- tiled transposed writes ----
 * A group whose space reads its input across (a transposed copy, the
 * backward's transposed fp8 operands) takes the space in tiles, as a
 * hand-written cast-transpose does: the block computes a tile's values in
 * the order the input lies in memory (16-byte loads), writes them to shared
 * memory, and stores the tile row by row in the output's order (16-byte
 * stores). The group of the transposed space — the same values in the
 * input's order, the row-major copy — is written from the same pass, so the
 * input is read once for both layouts. In the space (P, Q) of the
 * transposed group's memory order (P outer), element (p, q) is that group's
 * (p, q) and the other's (q, p); a thread takes V consecutive p, the tile is
 * TP x TQ with TP * TQ = BE_BLOCK * V. In shared memory a row's chunks of V
 * elements are rotated by the row's chunk of V rows (tile_index), so that
 * the threads of one byte store, which write one column of rows V apart,
 * fall in different banks (rows padded to TQ + V instead left a 4-way
 * conflict on fp8 tiles: 1280-byte row groups start in one bank). */

#define TILE_SMEM 32768 /* shared bytes the tiles of one group may take */

/* the space of a value laid out as the transpose of b's: its order's outer
 * dim has b's inner extent, its inner dim b's outer extent */
bool
cg_transposed_space(Cg *c, uint32_t b, uint32_t v)
{
	Func *fn = c->fn;
	int64_t t1[IR_MAXRANK], t2[IR_MAXRANK];
	const int64_t *ob, *ov;

	if (fn->vals[v].rank != 2 || fn->vals[b].rank != 2)
		return false;
	ob = cg_order_of(fn, b, t1);
	ov = cg_order_of(fn, v, t2);
	return ir_dims(fn, v)[ov[0]] == ir_dims(fn, b)[ob[1]] && ir_dims(fn, v)[ov[1]] == ir_dims(fn, b)[ob[0]];
}

static bool
feeds_reduction(Cg *c, const Group *g)
{
	for (uint32_t i = 0; i < g->nvals; i++)
		if (ir_ops[ir_def(c->fn, g->vals[i])->op].cls == OC_REDUCE)
			return true;
	return false;
}

/* the values of g that read across, moved to a group of their own at *to:
 * a value and its transpose have one space when it is square, and values
 * of one space may read their inputs either way */
void
cg_split_across(Cg *c, Group *g, Group *to, uint32_t *ng)
{
	static const int64_t id[2] = { 0, 1 };
	Func *fn = c->fn;
	uint32_t n = 0;

	if (fn->vals[g->space].rank != 2 || feeds_reduction(c, g))
		return;
	c->space = g->space;
	*to = (Group){ g->space, arena_alloc(fn->arena, (g->nvals + 1) * sizeof(uint32_t)), 0 };
	for (uint32_t i = 0; i < g->nvals; i++)
		if (cg_reads_across(c, g->vals[i], id, 0))
			to->vals[to->nvals++] = g->vals[i];
		else
			g->vals[n++] = g->vals[i];
	if (n == 0 || to->nvals == 0) {
		for (uint32_t i = 0; i < to->nvals; i++) /* all or none: as it was */
			g->vals[n++] = to->vals[i];
		return;
	}
	g->nvals = n;
	(*ng)++;
}

/* true if b, with a (or NULL), can run in tiles; fills t */
bool
cg_tile_shape(Cg *c, const Group *a, const Group *b, Tile *t)
{
	Func *fn = c->fn;
	const Kernel *k = &fn->kernels[c->k];
	int64_t tmp[IR_MAXRANK];
	const int64_t *ob;

	if (fn->vals[b->space].rank != 2 || feeds_reduction(c, b) || (a && feeds_reduction(c, a)))
		return false;
	c->space = b->space;
	if (!cg_group_reads_across(c, b))
		return false;
	t->a = a;
	t->b = b;
	t->in = a ? a->space : IR_NONE;
	for (uint32_t j = 0; j < k->nins && t->in == IR_NONE; j++)
		if (cg_transposed_space(c, b->space, fn->argv[k->ins + j]))
			t->in = fn->argv[k->ins + j];
	if (t->in == IR_NONE)
		return false;
	t->V = cg_vector_width(c, b);
	if (a && cg_vector_width(c, a) < t->V)
		t->V = cg_vector_width(c, a);
	for (t->TP = t->V; (int64_t)t->TP * 2 * t->TP * 2 <= (int64_t)BE_BLOCK * t->V; t->TP *= 2)
		;
	t->TQ = BE_BLOCK * t->V / t->TP;
	ob = cg_order_of(fn, b->space, tmp);
	t->P = ir_dims(fn, b->space)[ob[0]];
	t->Q = ir_dims(fn, b->space)[ob[1]];
	t->bytes = 0;
	for (uint32_t i = 0; i < b->nvals; i++)
		t->bytes += (int64_t)t->TP * t->TQ * dt_size((DType)fn->vals[b->vals[i]].dtype);
	return t->TQ >= t->V && t->P % t->TP == 0 && t->Q % t->TQ == 0 && t->bytes <= TILE_SMEM;
}

/* element idx of the tile buffer at byte base: the kernel's one shared
 * array, in which b's values have TP rows of TQ elements each, one
 * after the other */
static LLVMValueRef
tile_at(Cg *c, const Tile *t, int64_t base, LLVMTypeRef et, LLVMValueRef idx)
{
	char name[48];
	LLVMTypeRef at;
	LLVMValueRef g, old;
	LLVMValueRef ix[2] = { LLVMConstInt(c->i64, 0, 0), LLVMConstInt(c->i64, (unsigned long long)base, 0) };

	snprintf(name, sizeof name, "%s.tile", c->fn->kernels[c->k].name);
	g = LLVMGetNamedGlobal(c->mod, name);
	/* the kernel's tiles share one buffer, as large as the largest needs */
	if (!g || (int64_t)LLVMGetArrayLength2(LLVMGlobalGetValueType(g)) < t->bytes) {
		if ((old = g))
			LLVMSetValueName2(old, "", 0);
		g = cg_shared_array(c, name, LLVMArrayType2(c->i8, (uint64_t)t->bytes), 16);
		if (old) {
			LLVMReplaceAllUsesWith(old, g);
			LLVMDeleteGlobal(old);
		}
	}
	at = LLVMGlobalGetValueType(g);
	return LLVMBuildGEP2(c->b, et, LLVMBuildGEP2(c->b, at, g, ix, 2, ""), &idx, 1, "");
}

/* the place of element (row, col) in a tile's rows of TQ elements: col's
 * chunk of V rotated by row's chunk of V rows, so that the threads of one
 * byte store, which write one column of rows V apart, fall in different
 * banks */
static LLVMValueRef
tile_index(Cg *c, const Tile *t, LLVMValueRef row, LLVMValueRef col)
{
	LLVMValueRef chunk = LLVMBuildUDiv(c->b, col, cg_ic(c, t->V), "");

	chunk = LLVMBuildAdd(c->b, chunk, LLVMBuildUDiv(c->b, row, cg_ic(c, t->V), ""), "");
	chunk = LLVMBuildURem(c->b, chunk, cg_ic(c, t->TQ / t->V), "");
	return LLVMBuildAdd(c->b, LLVMBuildMul(c->b, row, cg_ic(c, t->TQ), ""),
		LLVMBuildAdd(c->b, LLVMBuildMul(c->b, chunk, cg_ic(c, t->V), ""),
			LLVMBuildURem(c->b, col, cg_ic(c, t->V), ""), ""),
		"");
}

/* the coordinates of element (o, i) of v: o on its outer dim, i on its inner */
static LLVMValueRef *
tile_coords(Cg *c, uint32_t v, LLVMValueRef o, LLVMValueRef i)
{
	int64_t tmp[IR_MAXRANK];
	const int64_t *ord = cg_order_of(c->fn, v, tmp);
	LLVMValueRef *co = cg_new_coords(c, 2);

	co[ord[0]] = o;
	co[ord[1]] = i;
	return co;
}

/* the bytes element j of a thread's V is aligned to, for elements of size */
static unsigned
chunk_align(int j, int V, int size)
{
	int a = cg_lane_align(j, V) * size;

	return (unsigned)(a > 16 ? 16 : a);
}

uint32_t
cg_tile_loop(Cg *c, const Tile *t)
{
	Func *fn = c->fn;
	const Group *b = t->b;
	int64_t ntp = t->P / t->TP, ntiles = ntp * (t->Q / t->TQ), rows = (int64_t)t->TP * t->TQ, base;
	LLVMValueRef tl, p0, q0, k, m, p, q, pb, qb, lin, row, x, *ca, idx0;
	Loop l;

	tl = cg_loop_begin(c, &l, c->bid, cg_ic(c, ntiles), c->nctaid);
	p0 = LLVMBuildMul(c->b, LLVMBuildURem(c->b, tl, cg_ic(c, ntp), ""), cg_ic(c, t->TP), "");
	q0 = LLVMBuildMul(c->b, LLVMBuildUDiv(c->b, tl, cg_ic(c, ntp), ""), cg_ic(c, t->TQ), "");
	/* the tile in the input's order: V consecutive p a thread */
	k = LLVMBuildMul(c->b, LLVMBuildURem(c->b, c->tid, cg_ic(c, t->TP / t->V), ""), cg_ic(c, t->V), "");
	m = LLVMBuildUDiv(c->b, c->tid, cg_ic(c, t->TP / t->V), "");
	q = LLVMBuildAdd(c->b, q0, m, "");
	pb = LLVMBuildAdd(c->b, p0, k, "");
	lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, q, cg_ic(c, t->P), ""), pb, "");
	idx0 = tile_index(c, t, k, m); /* row k + j is j rows further, in k's rotation */
	for (int j = 0; j < t->V; j++) {
		/* each index the first's plus j, so that the accesses become vectors */
		p = j ? LLVMBuildAdd(c->b, pb, cg_ic(c, j), "") : pb;
		cg_current(c, t->in, tile_coords(c, t->in, q, p), j ? LLVMBuildAdd(c->b, lin, cg_ic(c, j), "") : lin,
			cg_lane_align(j, t->V));
		for (uint32_t i = 0; t->a && i < t->a->nvals; i++) {
			uint32_t v = t->a->vals[i];

			ca = tile_coords(c, v, q, p);
			cg_store_at(c, c->ptr_of[v], v, ca, cg_value(c, v, ca));
		}
		base = 0;
		for (uint32_t i = 0; i < b->nvals; i++) {
			uint32_t v = b->vals[i];
			DType dt = (DType)fn->vals[v].dtype;
			LLVMValueRef idx = j ? LLVMBuildAdd(c->b, idx0, cg_ic(c, j * t->TQ), "") : idx0;

			x = cg_value(c, v, tile_coords(c, v, p, q));
			if (dt == DT_B8)
				x = LLVMBuildZExt(c->b, x, c->i8, "");
			LLVMBuildStore(c->b, x, tile_at(c, t, base, cg_mem_type(c, dt), idx));
			base += rows * dt_size(dt);
		}
	}
	cg_syncthreads(c);
	/* the tile in b's order: V consecutive q a thread */
	k = LLVMBuildMul(c->b, LLVMBuildURem(c->b, c->tid, cg_ic(c, t->TQ / t->V), ""), cg_ic(c, t->V), "");
	m = LLVMBuildUDiv(c->b, c->tid, cg_ic(c, t->TQ / t->V), "");
	p = LLVMBuildAdd(c->b, p0, m, "");
	qb = LLVMBuildAdd(c->b, q0, k, "");
	lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, p, cg_ic(c, t->Q), ""), qb, "");
	row = tile_index(c, t, m, k);
	for (int j = 0; j < t->V; j++) {
		q = j ? LLVMBuildAdd(c->b, qb, cg_ic(c, j), "") : qb;
		cg_current(c, b->space, tile_coords(c, b->space, p, q),
			j ? LLVMBuildAdd(c->b, lin, cg_ic(c, j), "") : lin, cg_lane_align(j, t->V));
		base = 0;
		for (uint32_t i = 0; i < b->nvals; i++) {
			uint32_t v = b->vals[i];
			DType dt = (DType)fn->vals[v].dtype;
			LLVMValueRef idx = j ? LLVMBuildAdd(c->b, row, cg_ic(c, j), "") : row;

			x = LLVMBuildLoad2(c->b, cg_mem_type(c, dt), tile_at(c, t, base, cg_mem_type(c, dt), idx), "");
			LLVMSetAlignment(x, chunk_align(j, t->V, dt_size(dt)));
			if (dt == DT_B8)
				x = LLVMBuildICmp(c->b, LLVMIntNE, x, LLVMConstInt(c->i8, 0, 0), "");
			cg_store_at(c, c->ptr_of[v], v, tile_coords(c, v, p, q), x);
			base += rows * dt_size(dt);
		}
	}
	cg_syncthreads(c); /* the tile buffers are free again */
	cg_loop_end(c, &l);
	c->space_coords = NULL;
	return (uint32_t)ntiles;
}
