/* cg.h — what the kernel generator's files share: codegen.c (values, loops,
 * reductions, phases, the kernel function), tiles.c (transposed writes
 * through shared-memory tiles) and rows.c (row kernels). docs/design.md,
 * "The backend". */
#ifndef FP8CC_CG_H
#define FP8CC_CG_H

#include "be.h"

/* values that share an iteration space, and so one loop */
typedef struct {
	uint32_t space; /* a value with the loop's dims and memory order */
	uint32_t *vals; /* outputs to write (or full reductions to feed) */
	uint32_t nvals;
} Group;

/* a counted loop being built (cg_loop_begin, cg_loop_end) */
typedef struct {
	LLVMValueRef iv, i, step;
	LLVMBasicBlockRef head, exit;
	uint32_t nmemo;
} Loop;

/* how a reduction combines: its keys and accumulator */
typedef struct {
	Op op;
	DType t;        /* the dtype of the reduced values */
	LLVMTypeRef kt; /* i32 or i64 key; f64/i64 accumulator for sums */
	bool wide;
	bool sum; /* sum or prod: accumulate in double or i64 */
	bool abs; /* amax of an abs: every value's sign bit is clear */
} Red;

/* a pair of groups written through shared-memory tiles (tiles.c) */
typedef struct {
	const Group *a, *b; /* a: in the input's order (may be NULL); b: across */
	uint32_t in;        /* a value laid out as a is: the loads' space */
	int64_t P, Q;
	int TP, TQ, V;
	int R;         /* rows of the input a thread takes: b's elements go to shared memory R at a time */
	int64_t bytes; /* of shared memory: TP rows of TQ elements per value of b */
	bool walked;   /* a loop of the phase before took the tiles' order (cg_tile_walk) */
} Tile;

/* the shape of a row kernel (rows.c) */
typedef struct {
	uint32_t space; /* a value of the space */
	int rank;       /* the space's; its rows are dims 0 .. rank - 2 */
	int64_t R, C;   /* rows, and elements a row */
	int T, V, nch;  /* threads per row, elements per chunk, chunks per thread */
} Rows;

/* ---- codegen.c ---- */

LLVMValueRef cg_ic(Cg *c, int64_t v);
bool cg_in_kernel(Cg *c, uint32_t v);
const int64_t *cg_order_of(Func *fn, uint32_t v, int64_t *tmp);
LLVMTypeRef cg_mem_type(Cg *c, DType t);
void cg_store_at(Cg *c, LLVMValueRef base, uint32_t v, LLVMValueRef *coords, LLVMValueRef x);
LLVMValueRef *cg_new_coords(Cg *c, int rank);
LLVMValueRef *cg_delinearize(Cg *c, LLVMValueRef lin, const int64_t *dims, const int64_t *ord, int rank);
void cg_memo_add(Cg *c, uint32_t v, LLVMValueRef *co, LLVMValueRef x);
LLVMValueRef cg_storage(Cg *c, uint32_t v);
LLVMValueRef cg_value(Cg *c, uint32_t v, LLVMValueRef *co);
LLVMBasicBlockRef cg_block(Cg *c, const char *name);
LLVMValueRef cg_entry_alloca(Cg *c, LLVMTypeRef t);
LLVMValueRef cg_loop_begin(Cg *c, Loop *l, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step);
void cg_loop_end(Cg *c, Loop *l);
LLVMBasicBlockRef cg_if_begin(Cg *c, LLVMValueRef cond);
void cg_if_end(Cg *c, LLVMBasicBlockRef join);
void cg_syncthreads(Cg *c);
Red cg_red_of(Cg *c, uint32_t v);
LLVMValueRef cg_key(Cg *c, const Red *r, LLVMValueRef x);
LLVMValueRef cg_identity(Cg *c, const Red *r);
LLVMValueRef cg_combine(Cg *c, const Red *r, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_unkey(Cg *c, const Red *r, LLVMValueRef k);
LLVMValueRef cg_lanes_reduce(Cg *c, const Red *r, LLVMValueRef x, unsigned top);
LLVMValueRef cg_warp_reduce(Cg *c, const Red *r, LLVMValueRef x);
LLVMValueRef cg_shared_array(Cg *c, const char *name, LLVMTypeRef at, unsigned align);
LLVMValueRef cg_smem_slot(Cg *c, LLVMValueRef i);
LLVMValueRef cg_to_i64(Cg *c, LLVMValueRef x);
LLVMValueRef cg_from_i64(Cg *c, LLVMValueRef x, LLVMTypeRef t);
LLVMValueRef cg_block_reduce(Cg *c, const Red *r, LLVMValueRef x);
int cg_vector_width(Cg *c, const Group *g);
void cg_element(
	Cg *c, const Group *g, LLVMValueRef *co, LLVMValueRef lin, int align, LLVMValueRef *accs, const Red *reds);
void cg_preload(Cg *c);
LLVMValueRef *cg_current(Cg *c, uint32_t space, LLVMValueRef *co, LLVMValueRef lin, int align);
bool cg_reads_across(Cg *c, uint32_t v, const int64_t *perm, int depth);
bool cg_group_reads_across(Cg *c, const Group *g);
int cg_lane_align(int j, int V);

/* ---- tiles.c: a group that reads its input across, in shared-memory tiles ---- */

bool cg_transposed_space(Cg *c, uint32_t b, uint32_t v);
void cg_split_across(Cg *c, Group *g, Group *to, uint32_t *ng);
bool cg_tile_shape(Cg *c, const Group *a, const Group *b, Tile *t);
void cg_tile_one_row(Cg *c, Tile *t);
uint32_t cg_tile_walk(Cg *c, const Tile *t, const Group *g, LLVMValueRef *accs, const Red *reds);
uint32_t cg_tile_loop(Cg *c, const Tile *t, bool backward);

/* ---- rows.c: a kernel that runs a row at a time ---- */

bool cg_rows_shape(Cg *c, Rows *rs);
uint32_t cg_rows_kernel(Cg *c, const Rows *rs);

#endif /* FP8CC_CG_H */
