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
 * (p, q) and the other's (q, p); a thread takes V consecutive p of R
 * consecutive q, the tile is TP x TQ with TP * TQ = BE_BLOCK * V * R, and
 * each p's R elements of b go to shared memory as one word. In a phase
 * after a grid barrier the tiles are taken last first: the input's end is
 * what the phase before read last, and L2 still holds it. In shared
 * memory a row's chunks of V elements are rotated by the row's chunk of V
 * rows (tile_index), so that the threads of one store, which write one
 * column of rows V apart, fall in different banks (rows padded to TQ + V
 * instead left a 4-way conflict on fp8 tiles: 1280-byte row groups start
 * in one bank). */

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

/* the tile's sides for t->V and t->R: TP * TQ = BE_BLOCK * V * R, TP the
 * largest power of two with TP * TP at most that; true if b's values fit
 * in TILE_SMEM and the space in whole tiles */
static bool
tile_fits(Cg *c, Tile *t)
{
	Func *fn = c->fn;
	const Group *b = t->b;
	int64_t area = (int64_t)BE_BLOCK * t->V * t->R;

	for (t->TP = t->V; (int64_t)t->TP * 2 * t->TP * 2 <= area; t->TP *= 2)
		;
	t->TQ = (int)(area / t->TP);
	t->bytes = 0;
	for (uint32_t i = 0; i < b->nvals; i++)
		t->bytes += (int64_t)t->TP * t->TQ * dt_size((DType)fn->vals[b->vals[i]].dtype);
	return t->TQ >= t->V && t->TP >= t->R && t->V % t->R == 0 && t->P % t->TP == 0 && t->Q % t->TQ == 0 &&
		t->bytes <= TILE_SMEM;
}

/* t with one row a thread (a space that took two fits one) */
void
cg_tile_one_row(Cg *c, Tile *t)
{
	t->R = 1;
	if (!tile_fits(c, t))
		die("a tile of one row does not fit where one of two did");
}

/* true if b, with a (or NULL), can run in tiles; fills t. A thread takes
 * two rows of the input when b is one value of one byte (an fp8 or bool
 * transposed copy), so that its elements go to shared memory two at a
 * time; one row if not, or if the space is no whole number of the larger
 * tiles (and cg_tile_one_row where a phase has other tiles). Measured on
 * an H200 (docs/design.md, "The backend"): four rows took 45 registers,
 * five blocks an SM instead of eight, and ran slower than two; two rows in
 * the backward step's kernel (two tiled groups) took 38 to 43 and ran it
 * 2-6 us slower than one row. */
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
	ob = cg_order_of(fn, b->space, tmp);
	t->P = ir_dims(fn, b->space)[ob[0]];
	t->Q = ir_dims(fn, b->space)[ob[1]];
	t->R = b->nvals == 1 && dt_size((DType)fn->vals[b->vals[0]].dtype) == 1 ? 2 : 1;
	if (t->R > 1 && tile_fits(c, t))
		return true;
	t->R = 1;
	return tile_fits(c, t);
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

/* x as an integer of its own width (a bool as a byte) */
static LLVMValueRef
as_bits(Cg *c, LLVMValueRef x, DType dt)
{
	if (dt == DT_B8)
		return LLVMBuildZExt(c->b, x, c->i8, "");
	if (LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMIntegerTypeKind)
		return x;
	return LLVMBuildBitCast(c->b, x, LLVMIntTypeInContext(c->cx, 8 * (unsigned)dt_size(dt)), "");
}

/* the R elements x[0..R-1] of one tile row, side by side in one integer
 * (one element as it is, a bool as a byte) */
static LLVMValueRef
word_of(Cg *c, LLVMValueRef *x, int R, DType dt)
{
	unsigned bits = 8 * (unsigned)dt_size(dt);
	LLVMTypeRef wt = LLVMIntTypeInContext(c->cx, bits * (unsigned)R);
	LLVMValueRef w = NULL;

	if (R == 1)
		return dt == DT_B8 ? LLVMBuildZExt(c->b, x[0], c->i8, "") : x[0];
	for (int r = 0; r < R; r++) {
		LLVMValueRef e = LLVMBuildZExt(c->b, as_bits(c, x[r], dt), wt, "");

		if (r)
			e = LLVMBuildShl(c->b, e, LLVMConstInt(wt, bits * (unsigned)r, 0), "");
		w = w ? LLVMBuildOr(c->b, w, e, "") : e;
	}
	return w;
}

/* the tiles of t's space */
static int64_t
tile_count(const Tile *t)
{
	return t->P / t->TP * (t->Q / t->TQ);
}

/* where a thread's loads of a tile lie: the tile's first p and q; V
 * consecutive p from pb (k into the tile) of R consecutive rows q from
 * qr[0] (m into the tile); linr[r], row r's index in the input, is row 0's
 * plus r * P, so that each row's accesses have one base */
typedef struct {
	LLVMValueRef p0, q0, k, m, pb, qr[4], linr[4];
} TileAt;

static void
tile_thread(Cg *c, const Tile *t, LLVMValueRef tl, TileAt *a)
{
	int64_t ntp = t->P / t->TP;

	a->p0 = LLVMBuildMul(c->b, LLVMBuildURem(c->b, tl, cg_ic(c, ntp), ""), cg_ic(c, t->TP), "");
	a->q0 = LLVMBuildMul(c->b, LLVMBuildUDiv(c->b, tl, cg_ic(c, ntp), ""), cg_ic(c, t->TQ), "");
	a->k = LLVMBuildMul(c->b, LLVMBuildURem(c->b, c->tid, cg_ic(c, t->TP / t->V), ""), cg_ic(c, t->V), "");
	a->m = LLVMBuildMul(c->b, LLVMBuildUDiv(c->b, c->tid, cg_ic(c, t->TP / t->V), ""), cg_ic(c, t->R), "");
	a->pb = LLVMBuildAdd(c->b, a->p0, a->k, "");
	a->qr[0] = LLVMBuildAdd(c->b, a->q0, a->m, "");
	a->linr[0] = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, a->qr[0], cg_ic(c, t->P), ""), a->pb, "");
	for (int r = 1; r < t->R; r++) {
		a->qr[r] = LLVMBuildAdd(c->b, a->qr[0], cg_ic(c, r), "");
		a->linr[r] = LLVMBuildAdd(c->b, a->linr[0], cg_ic(c, r * t->P), "");
	}
}

/* The loop over the block's tiles: bid, bid + G, ... (G the grid's
 * blocks). Backward, the grid's tiles last first: the same tiles, after
 * cg_tile_walk, each block its own last first. Returns the tile. */
static LLVMValueRef
tiles_begin(Cg *c, const Tile *t, Loop *l, bool backward)
{
	int64_t ntiles = tile_count(t);
	LLVMValueRef last = NULL, more, tl;

	if (backward && t->walked) { /* the block's last tile: bid + (ntiles - 1 - bid) / G * G */
		more = LLVMBuildUDiv(c->b, LLVMBuildSub(c->b, cg_ic(c, ntiles - 1), c->bid, ""), c->nctaid, "");
		last = LLVMBuildAdd(c->b, c->bid, LLVMBuildMul(c->b, more, c->nctaid, ""), "");
	}
	tl = cg_loop_begin(c, l, c->bid, cg_ic(c, ntiles), c->nctaid);
	if (last)
		return LLVMBuildSub(c->b, LLVMBuildAdd(c->b, last, c->bid, ""), tl, "");
	return backward ? LLVMBuildSub(c->b, cg_ic(c, ntiles - 1), tl, "") : tl;
}

/* g, a loop of the phase before t's over t's input (the amax before a
 * quantize's grid barrier), in t's tiles: each block reads the tiles it
 * takes after the barrier, each thread the elements it loads there, so
 * that t's loop, taking them last first, finds them in its SM's L1 or in
 * L2. Returns the tiles. */
uint32_t
cg_tile_walk(Cg *c, const Tile *t, const Group *g, LLVMValueRef *accs, const Red *reds)
{
	int R = t->R, V = t->V;
	LLVMValueRef **co = arena_alloc(c->fn->arena, (size_t)(R * V) * sizeof *co);
	LLVMValueRef *lin = arena_alloc(c->fn->arena, (size_t)(R * V) * sizeof *lin), p;
	TileAt at;
	Loop l;

	tile_thread(c, t, tiles_begin(c, t, &l, false), &at);
	for (int j = 0; j < V; j++) {
		p = j ? LLVMBuildAdd(c->b, at.pb, cg_ic(c, j), "") : at.pb;
		for (int r = 0; r < R; r++) {
			co[r * V + j] = tile_coords(c, g->space, at.qr[r], p);
			lin[r * V + j] = j ? LLVMBuildAdd(c->b, at.linr[r], cg_ic(c, j), "") : at.linr[r];
		}
	}
	for (int i = 0; i < R * V; i++) { /* the loads first */
		cg_current(c, g->space, co[i], lin[i], cg_lane_align(i % V, V));
		cg_preload(c);
	}
	for (int i = 0; i < R * V; i++)
		cg_element(c, g, co[i], lin[i], cg_lane_align(i % V, V), accs, reds);
	cg_loop_end(c, &l);
	return (uint32_t)tile_count(t);
}

/* The tiles of t, the grid's blocks taking them in turn (backward: the last
 * first, which a second pass over the input finds still in L2; after
 * cg_tile_walk, each block its own last first, in its SM's L1). A thread
 * first takes V consecutive p of R consecutive rows q of the input (16-byte
 * loads, the row-major copy a written with 16-byte stores) and puts each
 * p's R elements of b side by side in shared memory, one store; then it
 * takes V consecutive q of R tile rows, each read and written 16 bytes at a
 * time. Returns the tiles. */
uint32_t
cg_tile_loop(Cg *c, const Tile *t, bool backward)
{
	Func *fn = c->fn;
	const Group *b = t->b;
	int R = t->R, V = t->V, rpp = BE_BLOCK * V / t->TQ;
	int64_t rows = (int64_t)t->TP * t->TQ, base;
	LLVMValueRef p0, q0, k, m, p, q, pb, qb, lin, lin0, row, x, *ca, idx0;
	LLVMValueRef *xs = arena_alloc(fn->arena, (size_t)b->nvals * (size_t)t->R * sizeof *xs);
	TileAt at;
	Loop l;

	if (R < 1 || R > 4) /* TileAt */
		die("a tile of %d rows a thread", R);
	/* the tile in the input's order: V consecutive p of R rows a thread */
	tile_thread(c, t, tiles_begin(c, t, &l, backward), &at);
	p0 = at.p0, q0 = at.q0, k = at.k, m = at.m, pb = at.pb;
	idx0 = tile_index(c, t, k, m); /* row k + j is j rows further, in k's rotation */
	for (int j = 0; j < V; j++) {
		/* each index the first's plus j, so that the accesses become vectors */
		p = j ? LLVMBuildAdd(c->b, pb, cg_ic(c, j), "") : pb;
		for (int r = 0; r < R; r++) {
			q = at.qr[r];
			cg_current(c, t->in, tile_coords(c, t->in, q, p),
				j ? LLVMBuildAdd(c->b, at.linr[r], cg_ic(c, j), "") : at.linr[r], cg_lane_align(j, V));
			for (uint32_t i = 0; t->a && i < t->a->nvals; i++) {
				uint32_t v = t->a->vals[i];

				ca = tile_coords(c, v, q, p);
				cg_store_at(c, c->ptr_of[v], v, ca, cg_value(c, v, ca));
			}
			for (uint32_t i = 0; i < b->nvals; i++)
				xs[i * R + r] = cg_value(c, b->vals[i], tile_coords(c, b->vals[i], p, q));
		}
		base = 0;
		for (uint32_t i = 0; i < b->nvals; i++) {
			DType dt = (DType)fn->vals[b->vals[i]].dtype;
			LLVMValueRef idx = j ? LLVMBuildAdd(c->b, idx0, cg_ic(c, j * t->TQ), "") : idx0;

			/* idx is a multiple of R: the word's first element */
			x = word_of(c, &xs[i * R], R, dt);
			LLVMSetAlignment(LLVMBuildStore(c->b, x, tile_at(c, t, base, cg_mem_type(c, dt), idx)),
				(unsigned)(R * dt_size(dt)));
			base += rows * dt_size(dt);
		}
	}
	cg_syncthreads(c);
	/* the tile in b's order: V consecutive q of R tile rows a thread */
	k = LLVMBuildMul(c->b, LLVMBuildURem(c->b, c->tid, cg_ic(c, t->TQ / V), ""), cg_ic(c, V), "");
	m = LLVMBuildUDiv(c->b, c->tid, cg_ic(c, t->TQ / V), "");
	qb = LLVMBuildAdd(c->b, q0, k, "");
	pb = LLVMBuildAdd(c->b, p0, m, "");
	lin0 = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, pb, cg_ic(c, t->Q), ""), qb, "");
	for (int r = 0; r < R; r++) {
		LLVMValueRef mr = r ? LLVMBuildAdd(c->b, m, cg_ic(c, r * rpp), "") : m;

		p = r ? LLVMBuildAdd(c->b, pb, cg_ic(c, r * rpp), "") : pb;
		lin = r ? LLVMBuildAdd(c->b, lin0, cg_ic(c, r * rpp * t->Q), "") : lin0;
		row = tile_index(c, t, mr, k);
		for (int j = 0; j < V; j++) {
			q = j ? LLVMBuildAdd(c->b, qb, cg_ic(c, j), "") : qb;
			cg_current(c, b->space, tile_coords(c, b->space, p, q),
				j ? LLVMBuildAdd(c->b, lin, cg_ic(c, j), "") : lin, cg_lane_align(j, V));
			base = 0;
			for (uint32_t i = 0; i < b->nvals; i++) {
				uint32_t v = b->vals[i];
				DType dt = (DType)fn->vals[v].dtype;
				LLVMValueRef idx = j ? LLVMBuildAdd(c->b, row, cg_ic(c, j), "") : row;

				x = LLVMBuildLoad2(
					c->b, cg_mem_type(c, dt), tile_at(c, t, base, cg_mem_type(c, dt), idx), "");
				LLVMSetAlignment(x, chunk_align(j, V, dt_size(dt)));
				if (dt == DT_B8)
					x = LLVMBuildICmp(c->b, LLVMIntNE, x, LLVMConstInt(c->i8, 0, 0), "");
				cg_store_at(c, c->ptr_of[v], v, tile_coords(c, v, p, q), x);
				base += rows * dt_size(dt);
			}
		}
	}
	cg_syncthreads(c); /* the tile buffers are free again */
	cg_loop_end(c, &l);
	c->space_coords = NULL;
	return (uint32_t)tile_count(t);
}
