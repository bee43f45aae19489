/* dtype.c — the dtype and op tables, expanded from dtypes.def and ops.def. */
#include <string.h>

#include "ir.h"

const DTypeInfo ir_dtypes[DT_COUNT] = {
#define DTYPE(id, name, th, thl, torch, st, bits, kind) { name, th, thl, torch, st, bits, kind },
#include "dtypes.def"
#undef DTYPE
};

const OpInfo ir_ops[OP_COUNT] = {
#define OP(id, name, mina, maxa, cls, tc, prim, lib) { name, mina, maxa, cls, tc, prim, lib },
#include "ops.def"
#undef OP
};

int
dt_size(DType t)
{
	return ir_dtypes[t].bits / 8;
}

bool
dt_isfloat(DType t)
{
	return ir_dtypes[t].kind == DK_FLOAT;
}

bool
dt_isfp8(DType t)
{
	return ir_dtypes[t].kind == DK_FP8;
}

bool
dt_isint(DType t)
{
	return ir_dtypes[t].kind == DK_INT || ir_dtypes[t].kind == DK_UINT;
}

static const char *
dt_field(int t, int which)
{
	const DTypeInfo *d = &ir_dtypes[t];

	switch (which) {
	case 0: return d->name;
	case 1: return d->thunder;
	case 2: return d->thunder_long;
	case 3: return d->torch;
	case 4: return d->st;
	}
	unreachable();
}

int
dt_lookup(const char *s, size_t n, int which)
{
	for (int t = 0; t < DT_COUNT; t++) {
		const char *f = dt_field(t, which);

		if (strlen(f) == n && memcmp(f, s, n) == 0)
			return t;
	}
	return -1;
}

int
op_lookup(const char *s, size_t n)
{
	for (int op = 0; op < OP_COUNT; op++)
		if (strlen(ir_ops[op].name) == n && memcmp(ir_ops[op].name, s, n) == 0)
			return op;
	return -1;
}

bool
op_elementwise(Op op)
{
	switch (ir_ops[op].cls) {
	case OC_CONVERT:
	case OC_UNARY:
	case OC_BINARY:
	case OC_COMPARE:
	case OC_WHERE:
	case OC_FMA:     return true;
	default:         return false;
	}
}

bool
op_gemm(Op op)
{
	return ir_ops[op].cls == OC_GEMM;
}

bool
op_collective(Op op)
{
	return ir_ops[op].cls == OC_COLLECTIVE && op != OP_WAIT;
}

bool
op_step(Op op)
{
	return ir_ops[op].cls == OC_GEMM || ir_ops[op].cls == OC_EXTERN || ir_ops[op].cls == OC_AUX ||
		ir_ops[op].cls == OC_COLLECTIVE;
}
