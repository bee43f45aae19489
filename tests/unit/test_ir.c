/* test_ir.c — the IR text form and the verifier.
 *
 * Round trips: a function that uses every op of ops.def (built with the
 * builder, and written as text) prints, parses back through fe_read_ir and
 * prints again to the same bytes. Diagnostics are captured by pointing
 * fe_diag_out at a memory stream. Then one test per rule the verifier and
 * the reader enforce, each asserting the message it gives. Suites: ir_text
 * (printer and reader), ir_verify (verifier rules), ir_parse (reader errors). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "fe.h"
#include "ir.h"
#include "passes.h"

#define IDS(...)  ((const uint32_t[]){ __VA_ARGS__ })
#define I64(...)  ((const int64_t[]){ __VA_ARGS__ })
#define NI64(...) ((int)(sizeof(I64(__VA_ARGS__)) / sizeof(int64_t)))
#define NIDS(...) ((int)(sizeof(IDS(__VA_ARGS__)) / sizeof(uint32_t)))
/* shape arguments "rank, dims" of the builder */
#define SH(...) NI64(__VA_ARGS__), I64(__VA_ARGS__)
/* operand and attribute arguments "ptr, count" of ir_instr */
#define ARGS(...) IDS(__VA_ARGS__), NIDS(__VA_ARGS__)
#define ATTR(...) I64(__VA_ARGS__), NI64(__VA_ARGS__)
#define NOATTR    NULL, 0
#define SCALAR    0, NULL

static Arena *A;
static Func *F;

static void
setup(void)
{
	A = arena_new();
	F = ir_func_new(A, "t");
}

static void
teardown(void)
{
	arena_free(A);
	fe_diag_out = NULL;
}

TestSuite(ir_text, .init = setup, .fini = teardown);
TestSuite(ir_verify, .init = setup, .fini = teardown);
TestSuite(ir_parse, .init = setup, .fini = teardown);
TestSuite(ir_extern, .init = setup, .fini = teardown);

/* ---- helpers ---- */

static char *
print_str(Func *fn)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	cr_assert_not_null(f);
	ir_print(f, fn);
	fclose(f);
	return buf;
}

/* read len bytes of text as file "t.ir"; *diag gets what the reader reported */
static Func *
parse_mem(const char *text, size_t len, char **diag)
{
	char *buf = NULL, *copy = malloc(len + 1);
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	Source src = { "t.ir", copy, len };
	Func *fn;

	cr_assert(copy && f);
	memcpy(copy, text, len);
	copy[len] = 0;
	fe_diag_out = f;
	fn = fe_read_ir(A, &src);
	fe_diag_out = NULL;
	fclose(f);
	free(copy);
	*diag = buf;
	return fn;
}

static Func *
parse_ok(const char *text)
{
	char *diag;
	Func *fn = parse_mem(text, strlen(text), &diag);

	cr_assert_not_null(fn, "the reader rejected:\n%s\n--- with:\n%s", text, diag);
	cr_assert_str_empty(diag, "a successful read reported:\n%s", diag);
	free(diag);
	return fn;
}

/* the reader must reject text with a diagnostic that contains want */
static void
parse_fails(const char *text, const char *want)
{
	char *diag;
	Func *fn = parse_mem(text, strlen(text), &diag);

	cr_assert_null(fn, "the reader accepted (wanted '%s'):\n%s", want, text);
	cr_assert(strstr(diag, "t.ir:") == diag && strstr(diag, ": error: "),
		"diagnostic not in file:line:col form:\n%s", diag);
	cr_assert(strstr(diag, want), "diagnostic lacks '%s':\n%s", want, diag);
	free(diag);
}

/* the reader must reject text with exactly this first diagnostic line */
static void
parse_fails_at(const char *text, const char *line)
{
	char *diag, first[512];
	Func *fn = parse_mem(text, strlen(text), &diag);

	snprintf(first, sizeof first, "%.*s", (int)strcspn(diag, "\n"), diag);
	free(diag);
	cr_assert_null(fn, "the reader accepted (wanted '%s'):\n%s", line, text);
	cr_assert_str_eq(first, line);
}

static void
verify_ok(Func *fn)
{
	char err[512] = "";

	cr_assert(ir_verify(fn, err, sizeof err, NULL), "verifier rejected: %s", err);
}

/* the verifier must reject fn with a message that contains want */
static void
rejects(Func *fn, const char *want)
{
	char err[512] = "";
	uint32_t pos = UINT32_MAX;

	cr_assert_not(ir_verify(fn, err, sizeof err, &pos), "verifier accepted; wanted '%s'", want);
	cr_assert(strstr(err, want), "message '%s' lacks '%s'", err, want);
}

/* texts equal; else report the first line that differs */
static void
same_text(const char *got, const char *want)
{
	const char *g = got, *w = want;
	int line = 1;

	while (*g && *g == *w) {
		if (*g == '\n')
			line++;
		g++, w++;
	}
	if (*g == *w)
		return;
	while (g > got && g[-1] != '\n')
		g--;
	while (w > want && w[-1] != '\n')
		w--;
	cr_assert_fail("texts differ at line %d:\n  want: %.*s\n  got:  %.*s\n--- got, whole:\n%s", line,
		(int)strcspn(w, "\n"), w, (int)strcspn(g, "\n"), g, got);
}

static void
set_layout(Func *fn, uint32_t v, const int64_t *perm)
{
	fn->vals[v].layout = ir_push_ints(fn, perm, fn->vals[v].rank);
}

static void
set_name(Func *fn, uint32_t v, const char *name)
{
	fn->vals[v].name = arena_strndup(fn->arena, name, strlen(name));
}

static void
set_flags(Func *fn, uint8_t flags)
{
	fn->ins[fn->nins - 1].flags = flags;
}

/* make instructions [first, fn->nins) kernel `name` with the given ins and outs */
static void
add_kernel(Func *fn, const char *name, uint32_t first, const uint32_t *ins, int nins, const uint32_t *outs, int nouts)
{
	Kernel k = { 0 };

	k.first = first;
	k.count = fn->nins - first;
	k.ins = ir_push_ids(fn, ins, nins);
	k.nins = (uint32_t)nins;
	k.outs = ir_push_ids(fn, outs, nouts);
	k.nouts = (uint32_t)nouts;
	k.name = arena_strndup(fn->arena, name, strlen(name));
	for (uint32_t i = first; i < fn->nins; i++)
		fn->ins[i].kernel = (int32_t)fn->nkernels;
	arena_grow(fn->arena, (void **)&fn->kernels, &fn->capkernels, fn->nkernels + 1, sizeof k);
	fn->kernels[fn->nkernels++] = k;
}

/* ---- a function with every op ---- */

static const double full_values[] = {
	1e-12,
	448,
	-0.0,
	INFINITY,
	-INFINITY,
	NAN,
	0.1,
	1e300,
	5e-324,
	-448,
	2.5,
	-NAN,
};

/* One instruction (or a few) of every op in ops.def, by category; fails if
 * ops.def gains an op this does not know how to build. With kernels, adds
 * two kernel regions and outputs that leave them. */
static Func *
build_all_ops(Arena *a, bool kernels)
{
	Func *fn = ir_func_new(a, "all_ops");
	uint32_t x = ir_param(fn, "x", DT_F32, SH(2, 3));
	uint32_t y = ir_param(fn, "y", DT_F32, SH(2, 3));
	uint32_t i = ir_param(fn, "i", DT_I32, SH(2, 3));
	uint32_t b = ir_param(fn, "b", DT_B8, SH(2, 3));
	uint32_t s = ir_param(fn, "s", DT_F32, SCALAR);
	uint32_t a8 = ir_param(fn, "a8", DT_F8E4M3FN, SH(4, 16));
	uint32_t w8 = ir_param(fn, "w8", DT_F8E5M2, SH(16, 8));
	uint32_t bias = ir_param(fn, "bias", DT_BF16, SH(8));
	uint32_t r8 = ir_param(fn, "r8", DT_F32, SH(1, 2, 1, 2, 1, 2, 1, 2));
	uint32_t gemm = IR_NONE, red = IR_NONE, v;
	bool built[OP_COUNT] = { false };

	set_layout(fn, y, I64(1, 0));
	set_layout(fn, w8, I64(1, 0));
	set_layout(fn, r8, I64(7, 6, 5, 4, 3, 2, 1, 0));
	for (int op = 0; op < OP_COUNT; op++) {
		const OpInfo *oi = &ir_ops[op];
		uint32_t src = oi->tc == TC_INT ? i : oi->tc == TC_BOOL ? b : x;
		DType st = (DType)fn->vals[src].dtype;

		built[op] = true;
		switch (oi->cls) {
		case OC_CONVERT:
			ir_instr(fn, op, ARGS(x), NOATTR, DT_BF16, SH(2, 3));
			ir_instr(fn, op, ARGS(x), NOATTR, DT_F8E4M3FN, SH(2, 3));
			set_flags(fn, IF_NO_FIXUP);
			v = ir_instr(fn, op, ARGS(a8), NOATTR, DT_F32, SH(4, 16));
			set_layout(fn, v, I64(1, 0));
			break;
		case OC_UNARY:
			v = ir_instr(fn, op, ARGS(src), NOATTR, op == OP_ISFINITE || op == OP_SIGNBIT ? DT_B8 : st,
				SH(2, 3));
			if (op == OP_ABS)
				set_name(fn, v, "abs.x");
			break;
		case OC_BINARY:
			if (oi->tc == TC_INT)
				ir_instr(fn, op, ARGS(i, i), NOATTR, DT_I32, SH(2, 3));
			else if (op % 2)
				ir_instr(fn, op, ARGS(x, s), NOATTR, DT_F32, SH(2, 3));
			else
				ir_instr(fn, op, ARGS(s, y), NOATTR, DT_F32, SH(2, 3));
			break;
		case OC_COMPARE:
			ir_instr(fn, op, ARGS(x, y), NOATTR, DT_B8, SH(2, 3));
			ir_instr(fn, op, ARGS(i, i), NOATTR, DT_B8, SH(2, 3));
			break;
		case OC_WHERE: ir_instr(fn, op, ARGS(b, x, s), NOATTR, DT_F32, SH(2, 3)); break;
		case OC_FMA:   ir_instr(fn, op, ARGS(x, y, s), NOATTR, DT_F32, SH(2, 3)); break;
		case OC_REDUCE:
			red = ir_instr(fn, op, ARGS(x), ATTR(1), DT_F32, SH(2));
			ir_instr(fn, op, ARGS(x), ATTR(0, 1), DT_F32, SCALAR);
			ir_instr(fn, op, ARGS(s), NOATTR, DT_F32, SCALAR);
			ir_instr(fn, op, ARGS(r8), ATTR(0, 3, 7), DT_F32, SH(2, 1, 1, 2, 1));
			break;
		case OC_SHAPE:
			switch (op) {
			case OP_BROADCAST:
				ir_instr(fn, op, ARGS(s), NOATTR, DT_F32, SH(2, 3));
				v = ir_instr(fn, op, ARGS(x), ATTR(1, 2), DT_F32, SH(4, 2, 3));
				ir_instr(fn, op, ARGS(v), ATTR(0, 1, 2), DT_F32, SH(4, 2, 3));
				break;
			case OP_RESHAPE:
				ir_instr(fn, op, ARGS(x), NOATTR, DT_F32, SH(3, 2));
				ir_instr(fn, op, ARGS(r8), NOATTR, DT_F32, SH(16));
				break;
			case OP_TRANSPOSE:
				v = ir_instr(fn, op, ARGS(x), ATTR(1, 0), DT_F32, SH(3, 2));
				set_layout(fn, v, I64(1, 0));
				ir_instr(fn, op, ARGS(r8), ATTR(7, 6, 5, 4, 3, 2, 1, 0), DT_F32,
					SH(2, 1, 2, 1, 2, 1, 2, 1));
				break;
			case OP_SQUEEZE:
				ir_instr(fn, op, ARGS(r8), ATTR(0, 2, 6), DT_F32, SH(2, 2, 1, 2, 2));
				ir_instr(fn, op, ARGS(x), NOATTR, DT_F32, SH(2, 3));
				break;
			case OP_SLICE:
				ir_instr(fn, op, ARGS(x), ATTR(0, 1, 2, 3, 1, 2), DT_F32, SH(2, 1));
				ir_instr(fn, op, ARGS(s), NOATTR, DT_F32, SCALAR);
				break;
			case OP_FLIP:
				ir_instr(fn, op, ARGS(x), ATTR(1), DT_F32, SH(2, 3));
				ir_instr(fn, op, ARGS(r8), ATTR(0, 7), DT_F32, SH(1, 2, 1, 2, 1, 2, 1, 2));
				break;
			default: cr_assert_fail("shape op %s: teach build_all_ops to build it", oi->name);
			}
			break;
		case OC_CAT:
			ir_instr(fn, op, ARGS(x, y, x), ATTR(0), DT_F32, SH(6, 3));
			ir_instr(fn, op, ARGS(x), ATTR(1), DT_F32, SH(2, 3));
			break;
		case OC_CLONE:
			v = ir_instr(fn, op, ARGS(y), NOATTR, DT_F32, SH(2, 3));
			set_layout(fn, v, I64(1, 0));
			break;
		case OC_FULL:
			for (size_t k = 0; k < NELEM(full_values); k++)
				ir_full(fn, full_values[k], k == 7 || k == 8 ? DT_F64 : DT_F32, SCALAR);
			ir_full(fn, 3, DT_I64, SH(2, 2));
			ir_full(fn, 1, DT_B8, SH(1));
			ir_full(fn, 448, DT_F8E4M3FN, SH(0, 4));
			break;
		case OC_GATHER:
			if (op == OP_TAKE) {
				v = ir_instr(fn, OP_RESHAPE, ARGS(i), NOATTR, DT_I32, SH(6));
				ir_instr(fn, op, ARGS(y, v), ATTR(1), DT_F32, SH(2, 6));
				v = ir_instr(fn, OP_SLICE, ARGS(v), ATTR(0, 1, 1), DT_I32, SH(1));
				ir_instr(fn, op, ARGS(x, v), ATTR(0), DT_F32, SH(1, 3));
			} else {
				ir_instr(fn, op, ARGS(x, i), ATTR(1), DT_F32, SH(2, 3));
			}
			break;
		case OC_PAD:     ir_instr(fn, op, ARGS(x, s), ATTR(1, -1, 0, 2, 0, 1), DT_F32, SH(3, 6)); break;
		case OC_BITCAST: ir_instr(fn, op, ARGS(x), NOATTR, DT_I32, SH(2, 3)); break;
		case OC_IOTA:    ir_instr(fn, op, NULL, 0, ATTR(-2, 3), DT_I64, SH(5)); break;
		case OC_GEMM:
			if (op == OP_MATMUL) {
				ir_instr(fn, op, ARGS(x, y), NOATTR, DT_F32, SH(2, 2));
				set_flags(fn, IF_TRANS_B);
				v = ir_instr(fn, OP_RESHAPE, ARGS(x), NOATTR, DT_F32, SH(3, 2));
				ir_instr(fn, op, ARGS(x, v, ir_full(fn, 0.5, DT_F32, SH(2))), ATTR(EPI_GELU), DT_F32,
					SH(2, 2));
				break;
			}
			gemm = ir_instr(fn, op, ARGS(a8, w8, s, s, bias), NOATTR, DT_BF16, SH(4, 8));
			set_flags(fn, IF_FAST_ACCUM);
			set_name(fn, gemm, "mm");
			ir_instr(fn, op, ARGS(a8, w8, s, s), NOATTR, DT_F32, SH(4, 8));
			ir_instr(fn, op, ARGS(a8, w8, s, s), NOATTR, DT_F16, SH(4, 8));
			set_flags(fn, IF_FAST_ACCUM | IF_NO_FIXUP);
			break;
		case OC_AUX: /* a gelu_aux matmul's pre-activation, right after it */
			v = ir_instr(fn, OP_MATMUL, ARGS(x, y), ATTR(EPI_GELU_AUX), DT_F32, SH(2, 2));
			set_flags(fn, IF_TRANS_B);
			ir_instr(fn, op, ARGS(v), NOATTR, DT_F32, SH(2, 2));
			break;
		case OC_EXTERN: { /* two results of one call, then one of another */
			static const Extern two = { "lib.two", "@0, 'mean', dims=(0, 1), eps=1e-05", 2 };
			static const Extern one = { "lib.one", "", 1 };
			DType dts[2] = { DT_F32, DT_I64 };
			int ranks[2] = { 2, 0 };
			int64_t dims[2][IR_MAXRANK] = { { 2, 3 } };

			ir_extern(fn, &two, ARGS(x), dts, ranks, (const int64_t (*)[IR_MAXRANK])dims);
			ir_extern(fn, &one, NULL, 0, dts + 1, ranks + 1, (const int64_t (*)[IR_MAXRANK])dims + 1);
			break;
		}
		case OC_COLLECTIVE: /* each, and its wait */
			if (op == OP_ALL_GATHER) {
				v = ir_instr(fn, op, ARGS(x), ATTR(2), DT_F32, SH(4, 3));
				ir_instr(fn, OP_WAIT, ARGS(v), NOATTR, DT_F32, SH(4, 3));
			} else if (op == OP_ALL_REDUCE) {
				v = ir_instr(fn, op, ARGS(x), ATTR(RED_AVG, 0), DT_F32, SH(2, 3));
				ir_instr(fn, OP_WAIT, ARGS(v), NOATTR, DT_F32, SH(2, 3));
			} else if (op == OP_REDUCE_SCATTER) {
				v = ir_instr(fn, op, ARGS(x), ATTR(RED_SUM, 2), DT_F32, SH(1, 3));
				ir_instr(fn, OP_WAIT, ARGS(v), NOATTR, DT_F32, SH(1, 3));
			} else if (op == OP_BCAST) {
				v = ir_instr(fn, op, ARGS(x), ATTR(1, 0), DT_F32, SH(2, 3));
				ir_instr(fn, OP_WAIT, ARGS(v), NOATTR, DT_F32, SH(2, 3));
			}
			break;
		default: built[op] = false;
		}
	}
	for (int op = 0; op < OP_COUNT; op++)
		cr_assert(built[op], "op %s: teach build_all_ops to build it", ir_ops[op].name);
	if (kernels) {
		uint32_t first = fn->nins, t1, t2, t3, t4;

		t1 = ir_instr(fn, OP_ABS, ARGS(x), NOATTR, DT_F32, SH(2, 3));
		t2 = ir_instr(fn, OP_AMAX, ARGS(t1), ATTR(0, 1), DT_F32, SCALAR);
		set_name(fn, t2, "amax");
		t3 = ir_instr(fn, OP_MUL, ARGS(x, t2), NOATTR, DT_F32, SH(2, 3));
		t4 = ir_instr(fn, OP_CONVERT, ARGS(t3), NOATTR, DT_F8E4M3FN, SH(2, 3));
		set_flags(fn, IF_NO_FIXUP);
		set_layout(fn, t4, I64(1, 0));
		add_kernel(fn, "k0", first, ARGS(x), ARGS(t2, t3, t4));
		first = fn->nins;
		t1 = ir_instr(fn, OP_NEG, ARGS(t3), NOATTR, DT_F32, SH(2, 3));
		add_kernel(fn, "k1", first, ARGS(t3), ARGS(t1));
		ir_return(fn, t4, "xq");
		ir_return(fn, t2, NULL);
		ir_return(fn, t1, NULL);
	}
	ir_return(fn, gemm, NULL);
	ir_return(fn, gemm, "out");
	ir_return(fn, red, NULL);
	ir_return(fn, x, "x_again");
	return fn;
}

/* the fval of every full instruction, bit for bit (NaN: NaN of the same sign) */
static void
same_full_values(Func *a, Func *b)
{
	cr_assert_eq(a->nins, b->nins);
	for (uint32_t i = 0; i < a->nins; i++) {
		double x = a->ins[i].fval, y = b->ins[i].fval;
		bool same = isnan(x) ? isnan(y) && !signbit(x) == !signbit(y) : memcmp(&x, &y, sizeof x) == 0;

		cr_expect_eq(a->ins[i].op, b->ins[i].op, "instruction %u: op differs", i);
		cr_expect_eq(a->ins[i].flags, b->ins[i].flags, "instruction %u: flags differ", i);
		cr_expect(same, "instruction %u: full value %a read back as %a", i, x, y);
	}
}

static void
roundtrip_builder(bool kernels)
{
	Func *fn = build_all_ops(A, kernels), *back;
	char *t1, *t2;

	verify_ok(fn);
	t1 = print_str(fn);
	for (int op = 0; op < OP_COUNT; op++) {
		char pat[64];

		snprintf(pat, sizeof pat, " = %s ", ir_ops[op].name);
		cr_expect(strstr(t1, pat), "op %s not printed:\n%s", ir_ops[op].name, t1);
	}
	back = parse_ok(t1);
	t2 = print_str(back);
	same_text(t2, t1);
	same_full_values(fn, back);
	cr_assert_eq(back->nkernels, fn->nkernels);
	cr_assert_eq(back->nrets, fn->nrets);
	free(t1);
	free(t2);
}

Test(ir_text, roundtrip_builder_every_op) { roundtrip_builder(false); }

Test(ir_text, roundtrip_builder_with_kernels) { roundtrip_builder(true); }

/* a pass rebuilds the function (ir_rewrite_begin, ir_copy_instr,
 * ir_rewrite_end): copying every instruction must give the same text,
 * layouts of parameters and results included */
Test(ir_text, rewrite_copy_is_identity)
{
	Func *src = build_all_ops(A, false), *dst;
	uint32_t *map;
	char *t1, *t2;

	dst = ir_rewrite_begin(src, &map);
	for (uint32_t i = 0; i < src->nins; i++)
		ir_copy_instr(dst, src, &src->ins[i], map);
	ir_rewrite_end(dst, src, map);
	verify_ok(dst);
	t1 = print_str(src);
	t2 = print_str(dst);
	same_text(t2, t1);
	free(t1);
	free(t2);
}

Test(ir_text, rowmajor_def_const)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3)), y = ir_param(F, "y", DT_F32, SH(2, 3));
	uint32_t z = ir_param(F, "z", DT_F32, SH(2, 3)), c, a;
	double v = 0;

	set_layout(F, x, I64(0, 1));
	set_layout(F, y, I64(1, 0));
	c = ir_full(F, -448, DT_F32, SCALAR);
	a = ir_instr(F, OP_ABS, ARGS(z), NOATTR, DT_F32, SH(2, 3));
	cr_expect(ir_is_rowmajor(F, x));
	cr_expect_not(ir_is_rowmajor(F, y));
	cr_expect(ir_is_rowmajor(F, z));
	cr_expect_null(ir_def(F, x));
	cr_expect_eq(ir_def(F, a)->op, OP_ABS);
	cr_expect(ir_const(F, c, &v) && v == -448);
	cr_expect_not(ir_const(F, a, &v));
	cr_expect_not(ir_const(F, x, &v));
}

/* what the printer writes for the full values, in the order of full_values */
Test(ir_text, full_value_spellings)
{
	static const char *const want[] = {
		"full 1e-12 : f32[]",
		"full 448 : f32[]",
		"full -0 : f32[]",
		"full inf : f32[]",
		"full -inf : f32[]",
		"full nan : f32[]",
		"full 0.1 : f32[]",
		"full 1e+300 : f64[]",
		"full 5e-324 : f64[]",
		"full -448 : f32[]",
		"full 2.5 : f32[]",
		"full -nan : f32[]",
	};
	char *t;

	for (size_t k = 0; k < NELEM(full_values); k++)
		ir_full(F, full_values[k], k == 7 || k == 8 ? DT_F64 : DT_F32, SCALAR);
	ir_return(F, 0, NULL);
	t = print_str(F);
	for (size_t k = 0; k < NELEM(want); k++)
		cr_expect(strstr(t, want[k]), "'%s' not in:\n%s", want[k], t);
	free(t);
}

/* The canonical text, as the printer writes it: parse and print give it back.
 * Every op, scalars, rank 8, layouts, flags, numeric ids, `as` names. */
/* every op once, in two halves (C11 caps a string literal at 4095 bytes) */
static const char every_op_text1[] =
	"func @every_op(%x: f32[2,3], %y: f32[2,3]{1,0}, %i: i32[2,3], %b: b8[2,3], %s: f32[], %a8: f8e4m3fn[4,16], %w8: f8e5m2[16,8]{1,0}, %bias: bf16[8], %r8: bf16[1,2,1,2,1,2,1,2]{7,6,5,4,3,2,1,0}, %d: f64[2,3], %u: u8[4], %e: i8[], %h: f16[2,3], %l: i64[2], %w: i16[3]) {\n"
	"  %c0 = convert_element_type %x : bf16[2,3]\n"
	"  %c1 = convert_element_type %x no_fixup : f8e4m3fn[2,3]{1,0}\n"
	"  %c2 = convert_element_type %a8 : f32[4,16]\n"
	"  %c3 = convert_element_type %d : f8e5m2[2,3]\n"
	"  %c4 = convert_element_type %u : b8[4]\n"
	"  %abs = abs %x : f32[2,3]\n"
	"  %neg = neg %i : i32[2,3]\n"
	"  %reciprocal = reciprocal %x : f32[2,3]\n"
	"  %exp = exp %d : f64[2,3]\n"
	"  %exp2 = exp2 %h : f16[2,3]\n"
	"  %log = log %x : f32[2,3]\n"
	"  %log1p = log1p %x : f32[2,3]\n"
	"  %log2 = log2 %x : f32[2,3]\n"
	"  %sqrt = sqrt %x : f32[2,3]\n"
	"  %rsqrt = rsqrt %x : f32[2,3]\n"
	"  %tanh = tanh %x : f32[2,3]\n"
	"  %erf = erf %x : f32[2,3]\n"
	"  %sin = sin %x : f32[2,3]\n"
	"  %cos = cos %x : f32[2,3]\n"
	"  %sign = sign %i : i32[2,3]\n"
	"  %floor = floor %x : f32[2,3]\n"
	"  %ceil = ceil %x : f32[2,3]\n"
	"  %round = round %x : f32[2,3]\n"
	"  %trunc = trunc %x : f32[2,3]\n"
	"  %isfinite = isfinite %x : b8[2,3]\n"
	"  %bitwise_not = bitwise_not %u : u8[4]\n"
	"  %logical_not = logical_not %b : b8[2,3]\n"
	"  %add = add %x, %s : f32[2,3]\n"
	"  %sub = sub %s, %y : f32[2,3]\n"
	"  %mul = mul %x, %y : f32[2,3]\n"
	"  %div = div %i, %i : i32[2,3]\n"
	"  %pow = pow %d, %d : f64[2,3]\n"
	"  %maximum = maximum %x, %y : f32[2,3]\n"
	"  %minimum = minimum %h, %h : f16[2,3]\n"
	"  %fmod = fmod %e, %e : i8[]\n"
	"  %remainder = remainder %x, %y : f32[2,3]\n"
	"  %bitwise_and = bitwise_and %b, %b : b8[2,3]\n"
	"  %bitwise_or = bitwise_or %l, %l : i64[2]\n"
	"  %bitwise_xor = bitwise_xor %w, %w : i16[3]\n"
	"  %eq = eq %x, %y : b8[2,3]\n"
	"  %ne = ne %b, %b : b8[2,3]\n"
	"  %lt = lt %i, %i : b8[2,3]\n"
	"  %le = le %x, %s : b8[2,3]\n"
	"  %gt = gt %s, %x : b8[2,3]\n"
	"  %ge = ge %e, %e : b8[]\n"
	"  %where = where %b, %x, %s : f32[2,3]\n"
	"  %where8 = where %b, %c1, %c1 : f8e4m3fn[2,3]\n"
	"  %fma = fma %x, %y, %s : f32[2,3]\n"
	"  %amax = amax %x [1] : f32[2]\n"
	"  %amin = amin %x [0,1] : f32[]\n"
	"  %sum = sum %x [] : f32[2,3]\n"
	"  %prod = prod %r8 [0,2,4,6] : bf16[2,2,2,2]\n"
	"  %broadcast_in_dim = broadcast_in_dim %amax [0] : f32[2,3]\n"
	"  %b0 = broadcast_in_dim %s [] : f32[4,5,6,7,1,2,3,4]\n"
	"  %reshape = reshape %x : f32[6]\n";
static const char every_op_text2[] =
	"  %transpose = transpose %x [1,0] : f32[3,2]{1,0}\n"
	"  %squeeze = squeeze %r8 [0,2,4,6] : bf16[2,2,2,2]\n"
	"  %slice = slice %x [0,1,2,3,1,2] : f32[2,1]\n"
	"  %cat = cat %x, %y, %x [1] : f32[2,9]\n"
	"  %clone = clone %y : f32[2,3]{1,0}\n"
	"  %full = full 448 : f32[]\n"
	"  %f1 = full 1e-12 : f64[]\n"
	"  %f2 = full -0 : f32[2,3]\n"
	"  %f3 = full inf : bf16[]\n"
	"  %f4 = full -inf : f16[]\n"
	"  %f5 = full nan : f32[]\n"
	"  %f6 = full 0.1 : f32[]\n"
	"  %f7 = full 1e+300 : f64[]\n"
	"  %f8 = full 5e-324 : f64[]\n"
	"  %f9 = full -nan : f32[]\n"
	"  %f10 = full 1 : b8[]\n"
	"  %f11 = full -3 : i32[7]\n"
	"  %f12 = full 0.3333333432674408 : f32[]\n"
	"  %scaled_mm = scaled_mm %a8, %w8, %s, %s, %bias fast_accum : bf16[4,8]\n"
	"  %mm2 = scaled_mm %a8, %w8, %s, %s : f32[4,8]\n"
	"  %mm3 = scaled_mm %a8, %w8, %s, %s fast_accum no_fixup : f16[4,8]\n"
	"  %91 = add %abs, %mul : f32[2,3]\n"
	"  %92 = mul %91, %91 : f32[2,3]\n"
	"  %acos = acos %x : f32[2,3]\n"
	"  %acosh = acosh %x : f32[2,3]\n"
	"  %asin = asin %x : f32[2,3]\n"
	"  %asinh = asinh %d : f64[2,3]\n"
	"  %atan = atan %x : f32[2,3]\n"
	"  %atanh = atanh %h : f16[2,3]\n"
	"  %cosh = cosh %x : f32[2,3]\n"
	"  %sinh = sinh %x : f32[2,3]\n"
	"  %tan = tan %x : f32[2,3]\n"
	"  %erfc = erfc %x : f32[2,3]\n"
	"  %erfinv = erfinv %x : f32[2,3]\n"
	"  %expm1 = expm1 %x : f32[2,3]\n"
	"  %log10 = log10 %x : f32[2,3]\n"
	"  %lgamma = lgamma %x : f32[2,3]\n"
	"  %signbit = signbit %i : b8[2,3]\n"
	"  %shl = bitwise_left_shift %i, %i : i32[2,3]\n"
	"  %shr = bitwise_right_shift %u, %u : u8[4]\n"
	"  %atan2 = atan2 %x, %y : f32[2,3]\n"
	"  %nextafter = nextafter %d, %d : f64[2,3]\n"
	"  %flip = flip %x [0,1] : f32[2,3]\n"
	"  %take = take %x, %l [1] : f32[2,2]\n"
	"  %gather = gather %x, %i [1] : f32[2,3]\n"
	"  %pad = pad %x, %s [1,0,0,2,0,1] : f32[3,7]\n"
	"  %bitcast = bitcast %h : i16[2,3]\n"
	"  %iota = iota [0,1] : i64[3]\n"
	"  %matmul = matmul %x, %y trans_b : f32[2,2]\n"
	"  %bias3 = full 0.5 : f32[3]\n"
	"  %mm4 = matmul %x, %x, %bias3 [1] trans_a : f32[3,3]\n"
	"  %gelu = matmul %x, %x, %bias3 [3] trans_a : f32[3,3]\n"
	"  %pre = matmul_aux %gelu : f32[3,3]\n"
	"  %ext, %ext2 = extern \"lib.two\" (%x, 'mean', dims=(0, 1), eps=1e-05) : f32[2,3], i64[]\n"
	"  %ext3 = extern \"lib.one\" () : i64[]\n"
	"  %ag = all_gather %x [2] : f32[4,3]\n"
	"  %rs = reduce_scatter %x [0,2] : f32[3]\n"
	"  %ar = all_reduce %i [4,0] : i32[2,3]\n"
	"  %bc = broadcast %a8 [1,0] : f8e4m3fn[4,16]\n"
	"  %agw = wait %ag : f32[4,3]\n"
	"  %rsw = wait %rs : f32[3]\n"
	"  %arw = wait %ar : i32[2,3]\n"
	"  %bcw = wait %bc : f8e4m3fn[4,16]\n"
	"  return %scaled_mm, %amax as a_max, %92, %x as x_in, %92 as last\n"
	"}\n";
static char every_op_text[sizeof every_op_text1 + sizeof every_op_text2];

static void
join_every_op_text(void)
{
	snprintf(every_op_text, sizeof every_op_text, "%s%s", every_op_text1, every_op_text2);
}

Test(ir_text, roundtrip_text_every_op)
{
	join_every_op_text();
	Func *fn = parse_ok(every_op_text);
	char *t = print_str(fn);
	bool used[OP_COUNT] = { false };

	same_text(t, every_op_text);
	for (uint32_t i = 0; i < fn->nins; i++)
		used[fn->ins[i].op] = true;
	for (int op = 0; op < OP_COUNT; op++)
		cr_expect(used[op], "op %s is missing from every_op_text", ir_ops[op].name);
	cr_assert_eq(fn->nparams, 15);
	cr_assert_eq(fn->nrets, 5);
	cr_assert_str_eq(fn->retnames[1], "a_max");
	cr_assert_null(fn->retnames[2]);
	free(t);
}

static const char kernel_text[] = "func @computation(%input: bf16[16,32], %weight: bf16[64,32]) {\n"
				  "  kernel @k0(%input, %weight) -> (%t177, %q, %wq) {\n"
				  "    %t173 = convert_element_type %input : f32[16,32]\n"
				  "    %t174 = abs %t173 : f32[16,32]\n"
				  "    %t177 = amax %t174 [0,1] : f32[]\n"
				  "    %q = convert_element_type %t173 no_fixup : f8e4m3fn[16,32]\n"
				  "    %w = convert_element_type %weight : f32[64,32]\n"
				  "    %wq = convert_element_type %w : f8e4m3fn[64,32]{1,0}\n"
				  "  }\n"
				  "  %wt = transpose %wq [1,0] : f8e4m3fn[32,64]{1,0}\n"
				  "  %one = full 1 : f32[]\n"
				  "  %t122 = scaled_mm %q, %wt, %one, %one fast_accum : bf16[16,64]\n"
				  "  kernel @k1(%t177) -> (%11) {\n"
				  "    %11 = reciprocal %t177 : f32[]\n"
				  "  }\n"
				  "  return %t122, %11 as scale_inv, %q as x\n"
				  "}\n";

/* kernel blocks: their outputs are values defined inside the block */
Test(ir_text, roundtrip_text_kernels)
{
	Func *fn = parse_ok(kernel_text);
	char *t = print_str(fn);

	same_text(t, kernel_text);
	cr_assert_eq(fn->nkernels, 2);
	cr_assert_eq(fn->kernels[0].first, 0);
	cr_assert_eq(fn->kernels[0].count, 6);
	cr_assert_eq(fn->kernels[0].nins, 2);
	cr_assert_eq(fn->kernels[0].nouts, 3);
	cr_assert_eq(fn->kernels[1].first, 9);
	cr_assert_eq(fn->ins[6].kernel, -1);
	cr_assert_eq(fn->ins[9].kernel, 1);
	free(t);
}

/* a kernel whose outputs are empty needs nothing from inside the block */
Test(ir_text, roundtrip_text_kernel_without_outputs)
{
	static const char text[] = "func @f(%x: f32[4]) {\n"
				   "  kernel @k0(%x) -> () {\n"
				   "    %a = abs %x : f32[4]\n"
				   "  }\n"
				   "  return %x\n"
				   "}\n";
	Func *fn = parse_ok(text);
	char *t = print_str(fn);

	same_text(t, text);
	cr_assert_eq(fn->nkernels, 1);
	free(t);
}

/* names of digits only are ids: they print as the value's id */
Test(ir_text, numeric_names_are_ids)
{
	Func *fn = parse_ok("func @f(%7: f32[2], %x: f32[2]) {\n"
			    "  %12 = add %7, %x : f32[2]\n"
			    "  %y = neg %12 : f32[2]\n"
			    "  %0 = abs %y : f32[2]\n"
			    "  return %0, %12 as z\n"
			    "}\n");
	char *t = print_str(fn);

	same_text(t,
		"func @f(%0: f32[2], %x: f32[2]) {\n"
		"  %2 = add %0, %x : f32[2]\n"
		"  %y = neg %2 : f32[2]\n"
		"  %4 = abs %y : f32[2]\n"
		"  return %4, %2 as z\n"
		"}\n");
	cr_assert_null(fn->vals[0].name);
	cr_assert_str_eq(fn->vals[1].name, "x");
	cr_assert_null(fn->vals[2].name);
	free(t);
}

Test(ir_text, comments_and_spacing)
{
	Func *fn = parse_ok("; a comment before the function\n"
			    "# and another kind\n"
			    "func   @f ( %x :f32[ 2 , 3 ] ) {   ; trailing\n"
			    "\t%a=abs %x:f32[2,3]   # trailing hash\n"
			    "\r\n"
			    "  %s = sum %a [ 0 , 1 ] : f32[]\n"
			    "  return %s as total ,%a\n"
			    "}  ; done\n");
	char *t = print_str(fn);

	same_text(t,
		"func @f(%x: f32[2,3]) {\n"
		"  %a = abs %x : f32[2,3]\n"
		"  %s = sum %a [0,1] : f32[]\n"
		"  return %s as total, %a\n"
		"}\n");
	free(t);
}

Test(ir_text, empty_function)
{
	static const char text[] = "func @nothing() {\n  return\n}\n";
	Func *fn = parse_ok(text);
	char *t = print_str(fn);

	same_text(t, text);
	cr_assert_eq(fn->nparams, 0);
	cr_assert_eq(fn->nrets, 0);
	free(t);
}

/* `as NAME` is printed only when the name differs from the value's */
Test(ir_text, return_as_same_name_is_dropped)
{
	Func *fn = parse_ok("func @f(%x: f32[]) {\n  return %x as x, %x as y\n}\n");
	char *t = print_str(fn);

	same_text(t, "func @f(%x: f32[]) {\n  return %x, %x as y\n}\n");
	free(t);
}

Test(ir_text, print_type)
{
	uint32_t a = ir_param(F, "a", DT_F8E4M3FN, SH(16, 32));
	uint32_t b = ir_param(F, NULL, DT_F32, SCALAR);
	uint32_t c = ir_param(F, NULL, DT_BF16, SH(2, 3, 4));
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	set_layout(F, c, I64(2, 0, 1));
	ir_print_type(f, F, a);
	fputc(' ', f);
	ir_print_type(f, F, b);
	fputc(' ', f);
	ir_print_type(f, F, c);
	fclose(f);
	cr_assert_str_eq(buf, "f8e4m3fn[16,32] f32[] bf16[2,3,4]{2,0,1}");
	free(buf);
}

Test(ir_text, is_ir)
{
	Source a = { "a", "  ; comment\n func @f() {", 0 }, b = { "b", "# Constructed by Thunder\ndef f(x):", 0 };

	a.len = strlen(a.text);
	b.len = strlen(b.text);
	cr_assert(fe_is_ir(&a));
	cr_assert_not(fe_is_ir(&b));
}

/* the reader records where each instruction came from */
Test(ir_text, source_positions)
{
	Func *fn = parse_ok("func @f(%x: f32[]) {\n  %a = abs %x : f32[]\n    %b = neg %a : f32[]\n  return %b\n}\n");

	cr_assert_eq(fn->ins[0].line, 2);
	cr_assert_eq(fn->ins[0].col, 8);
	cr_assert_eq(fn->ins[1].line, 3);
	cr_assert_eq(fn->ins[1].col, 10);
}

/* the full diagnostic: location, message, source line, caret */
Test(ir_text, diagnostic_format)
{
	char *diag;
	const char text[] = "func @f(%x: f32[]) {\n  %y = frobnicate %x : f32[]\n  return %y\n}\n";

	cr_assert_null(parse_mem(text, strlen(text), &diag));
	cr_assert_str_eq(diag,
		"t.ir:2:8: error: unknown op 'frobnicate'\n"
		"  %y = frobnicate %x : f32[]\n"
		"       ^\n");
	free(diag);
}

/* ---- verifier rules, one test each ---- */

Test(ir_verify, accepts_builder_function)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));
	uint32_t a = ir_instr(F, OP_ABS, ARGS(x), NOATTR, DT_F32, SH(2, 3));

	ir_return(F, a, NULL);
	verify_ok(F);
}

Test(ir_verify, wrong_operand_count)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_ADD, ARGS(x), NOATTR, DT_F32, SH(2, 3));
	rejects(F, "%1 = add: takes 2 to 2 operands, not 1");
}

Test(ir_verify, too_many_operands)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_NEG, ARGS(x, x), NOATTR, DT_F32, SH(2, 3));
	rejects(F, "takes 1 to 1 operands, not 2");
}

Test(ir_verify, full_with_operand)
{
	uint32_t x = ir_param(F, "x", DT_F32, SCALAR);

	ir_instr(F, OP_FULL, ARGS(x), NOATTR, DT_F32, SCALAR);
	rejects(F, "takes 0 to 0 operands, not 1");
}

Test(ir_verify, binary_dtype_mismatch)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3)), y = ir_param(F, "y", DT_BF16, SH(2, 3));

	ir_instr(F, OP_ADD, ARGS(x, y), NOATTR, DT_F32, SH(2, 3));
	rejects(F, "operands must have one dtype (f32 and bf16)");
}

Test(ir_verify, fp8_operand_to_arithmetic)
{
	uint32_t x = ir_param(F, "x", DT_F8E4M3FN, SH(4));

	ir_instr(F, OP_MUL, ARGS(x, x), NOATTR, DT_F8E4M3FN, SH(4));
	rejects(F, "does not take f8e4m3fn operands");
}

Test(ir_verify, fp8_operand_to_unary)
{
	uint32_t x = ir_param(F, "x", DT_F8E5M2, SH(4));

	ir_instr(F, OP_ABS, ARGS(x), NOATTR, DT_F8E5M2, SH(4));
	rejects(F, "does not take f8e5m2 operands");
}

Test(ir_verify, fp8_operand_to_reduction)
{
	uint32_t x = ir_param(F, "x", DT_F8E4M3FN, SH(4));

	ir_instr(F, OP_AMAX, ARGS(x), ATTR(0), DT_F8E4M3FN, SCALAR);
	rejects(F, "does not take f8e4m3fn operands");
}

Test(ir_verify, float_only_op_on_int)
{
	uint32_t x = ir_param(F, "x", DT_I32, SH(4));

	ir_instr(F, OP_EXP, ARGS(x), NOATTR, DT_I32, SH(4));
	rejects(F, "%1 = exp: does not take i32 operands");
}

Test(ir_verify, int_only_op_on_float)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(4));

	ir_instr(F, OP_BITWISE_AND, ARGS(x, x), NOATTR, DT_F32, SH(4));
	rejects(F, "does not take f32 operands");
}

Test(ir_verify, bool_only_op_on_int)
{
	uint32_t x = ir_param(F, "x", DT_I8, SH(4));

	ir_instr(F, OP_LOGICAL_NOT, ARGS(x), NOATTR, DT_B8, SH(4));
	rejects(F, "does not take i8 operands");
}

Test(ir_verify, result_dtype_wrong)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(4));

	ir_instr(F, OP_ADD, ARGS(x, x), NOATTR, DT_BF16, SH(4));
	rejects(F, "result dtype must be f32, not bf16");
}

Test(ir_verify, compare_result_not_b8)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(4));

	ir_instr(F, OP_LT, ARGS(x, x), NOATTR, DT_F32, SH(4));
	rejects(F, "result dtype must be b8, not f32");
}

Test(ir_verify, isfinite_result_not_b8)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(4));

	ir_instr(F, OP_ISFINITE, ARGS(x), NOATTR, DT_F32, SH(4));
	rejects(F, "result dtype must be b8, not f32");
}

Test(ir_verify, where_condition_not_b8)
{
	uint32_t c = ir_param(F, "c", DT_F32, SH(4)), x = ir_param(F, "x", DT_F32, SH(4));

	ir_instr(F, OP_WHERE, ARGS(c, x, x), NOATTR, DT_F32, SH(4));
	rejects(F, "condition must be b8, not f32");
}

Test(ir_verify, where_branches_differ)
{
	uint32_t c = ir_param(F, "c", DT_B8, SH(4)), x = ir_param(F, "x", DT_F32, SH(4));
	uint32_t y = ir_param(F, "y", DT_F16, SH(4));

	ir_instr(F, OP_WHERE, ARGS(c, x, y), NOATTR, DT_F32, SH(4));
	rejects(F, "operands must have one dtype (f32 and f16)");
}

Test(ir_verify, shape_mismatch)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3)), y = ir_param(F, "y", DT_F32, SH(3, 2));

	ir_instr(F, OP_ADD, ARGS(x, y), NOATTR, DT_F32, SH(2, 3));
	rejects(F, "operand f32[3,2] does not match result f32[2,3]");
}

Test(ir_verify, unary_result_shape)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_NEG, ARGS(x), NOATTR, DT_F32, SH(6));
	rejects(F, "operand f32[2,3] does not match result f32[6]");
}

Test(ir_verify, elementwise_takes_no_attributes)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_NEG, ARGS(x), ATTR(0), DT_F32, SH(2, 3));
	rejects(F, "takes no attributes");
}

Test(ir_verify, convert_shape_mismatch)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_CONVERT, ARGS(x), NOATTR, DT_BF16, SH(3, 2));
	rejects(F, "result shape must be the operand's (f32[2,3])");
}

Test(ir_verify, reduction_dim_out_of_range)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_AMAX, ARGS(x), ATTR(2), DT_F32, SH(2));
	rejects(F, "reduction dims must be distinct, increasing and below the rank 2");
}

Test(ir_verify, reduction_dim_negative)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_SUM, ARGS(x), ATTR(-1), DT_F32, SH(2));
	rejects(F, "reduction dims must be distinct");
}

Test(ir_verify, reduction_dim_duplicate)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_SUM, ARGS(x), ATTR(1, 1), DT_F32, SCALAR);
	rejects(F, "reduction dims must be distinct");
}

Test(ir_verify, reduction_dims_not_increasing)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_PROD, ARGS(x), ATTR(1, 0), DT_F32, SCALAR);
	rejects(F, "reduction dims must be distinct, increasing");
}

Test(ir_verify, reduce_result_shape_wrong)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_SUM, ARGS(x), ATTR(1), DT_F32, SH(3));
	rejects(F, "result dim 0 must be 2");
}

Test(ir_verify, reduce_result_rank_wrong)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_AMIN, ARGS(x), ATTR(1), DT_F32, SH(2, 1));
	rejects(F, "result rank must be 1");
}

Test(ir_verify, reduce_result_dtype_wrong)
{
	uint32_t x = ir_param(F, "x", DT_BF16, SH(2, 3));

	ir_instr(F, OP_SUM, ARGS(x), ATTR(0, 1), DT_F32, SCALAR);
	rejects(F, "result dtype must be bf16");
}

Test(ir_verify, amax_over_empty_dim)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(0, 3));

	ir_instr(F, OP_AMAX, ARGS(x), ATTR(0), DT_F32, SH(3));
	rejects(F, "cannot reduce an empty dimension");
}

/* sum over an empty dim is fine: it gives 0 */
Test(ir_verify, sum_over_empty_dim_is_fine)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(0, 3));

	ir_instr(F, OP_SUM, ARGS(x), ATTR(0), DT_F32, SH(3));
	verify_ok(F);
}

Test(ir_verify, broadcast_dims_wrong_count)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(3));

	ir_instr(F, OP_BROADCAST, ARGS(x), ATTR(0, 1), DT_F32, SH(2, 3));
	rejects(F, "needs one broadcast dim per operand dim (1)");
}

Test(ir_verify, broadcast_dims_not_increasing)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(3, 2));

	ir_instr(F, OP_BROADCAST, ARGS(x), ATTR(1, 0), DT_F32, SH(2, 3));
	rejects(F, "broadcast dims must be increasing and below the result rank 2");
}

Test(ir_verify, broadcast_dim_out_of_range)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(3));

	ir_instr(F, OP_BROADCAST, ARGS(x), ATTR(2), DT_F32, SH(2, 3));
	rejects(F, "broadcast dims must be increasing and below the result rank 2");
}

Test(ir_verify, broadcast_size_mismatch)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(3));

	ir_instr(F, OP_BROADCAST, ARGS(x), ATTR(1), DT_F32, SH(2, 4));
	rejects(F, "operand dim 0 (3) cannot broadcast to 4");
}

Test(ir_verify, broadcast_dtype_changes)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(3));

	ir_instr(F, OP_BROADCAST, ARGS(x), ATTR(1), DT_BF16, SH(2, 3));
	rejects(F, "result dtype must be f32");
}

Test(ir_verify, reshape_numel_mismatch)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_RESHAPE, ARGS(x), NOATTR, DT_F32, SH(4, 2));
	rejects(F, "cannot reshape f32[2,3] to f32[4,2]");
}

Test(ir_verify, reshape_with_attributes)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_RESHAPE, ARGS(x), ATTR(6), DT_F32, SH(6));
	rejects(F, "takes no attributes");
}

Test(ir_verify, transpose_invalid_permutation)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_TRANSPOSE, ARGS(x), ATTR(0, 0), DT_F32, SH(2, 2));
	rejects(F, "invalid permutation");
}

Test(ir_verify, transpose_permutation_out_of_range)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_TRANSPOSE, ARGS(x), ATTR(2, 0), DT_F32, SH(3, 2));
	rejects(F, "invalid permutation");
}

Test(ir_verify, transpose_permutation_wrong_length)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_TRANSPOSE, ARGS(x), ATTR(1, 0, 2), DT_F32, SH(3, 2));
	rejects(F, "permutation must have 2 entries");
}

Test(ir_verify, transpose_result_shape)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_TRANSPOSE, ARGS(x), ATTR(1, 0), DT_F32, SH(2, 3));
	rejects(F, "result dim 0 must be 3");
}

Test(ir_verify, squeeze_non_one_dim)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 1, 3));

	ir_instr(F, OP_SQUEEZE, ARGS(x), ATTR(0), DT_F32, SH(1, 3));
	rejects(F, "dim 0 has size 2, not 1");
}

Test(ir_verify, squeeze_result_rank)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 1, 3));

	ir_instr(F, OP_SQUEEZE, ARGS(x), ATTR(1), DT_F32, SH(2, 1, 3));
	rejects(F, "result rank must be 2");
}

Test(ir_verify, slice_out_of_range)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_SLICE, ARGS(x), ATTR(0, 0, 2, 4, 1, 1), DT_F32, SH(2, 4));
	rejects(F, "dim 1: slice [0:4:1] out of range for size 3");
}

Test(ir_verify, slice_start_after_end)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(5));

	ir_instr(F, OP_SLICE, ARGS(x), ATTR(3, 2, 1), DT_F32, SH(0));
	rejects(F, "dim 0: slice [3:2:1] out of range for size 5");
}

Test(ir_verify, slice_stride_zero)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_SLICE, ARGS(x), ATTR(0, 0, 2, 3, 1, 0), DT_F32, SH(2, 3));
	rejects(F, "dim 1: slice [0:3:0] out of range for size 3");
}

Test(ir_verify, slice_wrong_attribute_count)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_SLICE, ARGS(x), ATTR(0, 0, 2, 3), DT_F32, SH(2, 3));
	rejects(F, "needs start, end and stride for each of 2 dims");
}

Test(ir_verify, slice_result_shape)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(10));

	ir_instr(F, OP_SLICE, ARGS(x), ATTR(1, 8, 3), DT_F32, SH(2));
	rejects(F, "result dim 0 must be 3");
}

/* a huge stride is legal: one element; the size arithmetic must not overflow */
Test(ir_verify, slice_huge_stride)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(10));

	ir_instr(F, OP_SLICE, ARGS(x), ATTR(2, 10, INT64_MAX), DT_F32, SH(1));
	verify_ok(F);
}

Test(ir_verify, cat_dim_mismatch)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3)), y = ir_param(F, "y", DT_F32, SH(2, 4));

	ir_instr(F, OP_CAT, ARGS(x, y), ATTR(0), DT_F32, SH(4, 3));
	rejects(F, "operand 1: dim 1 is 4, not 3");
}

Test(ir_verify, cat_dim_out_of_range)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_CAT, ARGS(x, x), ATTR(2), DT_F32, SH(4, 3));
	rejects(F, "needs a dim below the rank 2");
}

Test(ir_verify, cat_result_size)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_CAT, ARGS(x, x), ATTR(1), DT_F32, SH(2, 5));
	rejects(F, "result dim 1 must be 6");
}

Test(ir_verify, cat_dtype_mismatch)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3)), y = ir_param(F, "y", DT_BF16, SH(2, 3));

	ir_instr(F, OP_CAT, ARGS(x, y), ATTR(0), DT_F32, SH(4, 3));
	rejects(F, "operand 1 has another dtype or rank");
}

Test(ir_verify, clone_shape_mismatch)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, 3));

	ir_instr(F, OP_CLONE, ARGS(x), NOATTR, DT_F32, SH(3, 2));
	rejects(F, "result must be f32[2,3]");
}

Test(ir_verify, full_with_attributes)
{
	ir_instr(F, OP_FULL, NULL, 0, ATTR(1), DT_F32, SCALAR);
	rejects(F, "takes no attributes");
}

/* scaled_mm operands: a (4,16) e4m3fn, b (16,8) e4m3fn, two f32[] scales */
static uint32_t mm_a, mm_b, mm_s;

static void
mm_params(DType ta, DType tb, int64_t k2)
{
	mm_a = ir_param(F, "a", ta, SH(4, 16));
	mm_b = ir_param(F, "b", tb, SH(k2, 8));
	mm_s = ir_param(F, "s", DT_F32, SCALAR);
}

Test(ir_verify, scaled_mm_accepts)
{
	uint32_t bias;

	mm_params(DT_F8E4M3FN, DT_F8E5M2, 16);
	bias = ir_param(F, "bias", DT_BF16, SH(8));
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s, bias), NOATTR, DT_BF16, SH(4, 8));
	verify_ok(F);
}

Test(ir_verify, scaled_mm_non_fp8)
{
	mm_params(DT_BF16, DT_F8E4M3FN, 16);
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s), NOATTR, DT_BF16, SH(4, 8));
	rejects(F, "operands must be fp8");
}

Test(ir_verify, scaled_mm_e5m2_e5m2)
{
	mm_params(DT_F8E5M2, DT_F8E5M2, 16);
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s), NOATTR, DT_BF16, SH(4, 8));
	rejects(F, "f8e5m2 x f8e5m2 is not supported");
}

Test(ir_verify, scaled_mm_k_mismatch)
{
	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 32);
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s), NOATTR, DT_BF16, SH(4, 8));
	rejects(F, "operands must be (M,K) and (K,N)");
}

Test(ir_verify, scaled_mm_scale_not_scalar)
{
	uint32_t v;

	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 16);
	v = ir_param(F, "v", DT_F32, SH(1));
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, v, mm_s), NOATTR, DT_BF16, SH(4, 8));
	rejects(F,
		"scales must be f32[] and f32[] (tensor-wise), f32[4,1] and f32[1,8] (row-wise) or f32[4,1] and f32[1,1] (block-wise)");
}

Test(ir_verify, scaled_mm_scale_not_f32)
{
	uint32_t h;

	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 16);
	h = ir_param(F, "h", DT_BF16, SCALAR);
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, h), NOATTR, DT_BF16, SH(4, 8));
	rejects(F, "scales must be f32");
}

Test(ir_verify, scaled_mm_bias_wrong_length)
{
	uint32_t bias;

	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 16);
	bias = ir_param(F, "bias", DT_BF16, SH(4));
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s, bias), NOATTR, DT_BF16, SH(4, 8));
	rejects(F, "bias must be a bf16 vector of 8 for a bf16 result");
}

/* cuBLASLt's FP8 bias rule, as torch's: bf16 for bf16 and f32 results, f16 for f16 */
Test(ir_verify, scaled_mm_bias_dtype_follows_result)
{
	uint32_t bias;

	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 16);
	bias = ir_param(F, "bias", DT_F32, SH(8));
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s, bias), NOATTR, DT_F32, SH(4, 8));
	rejects(F, "bias must be a bf16 vector of 8 for a f32 result");
}

Test(ir_verify, scaled_mm_bias_not_float)
{
	uint32_t bias;

	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 16);
	bias = ir_param(F, "bias", DT_I32, SH(8));
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s, bias), NOATTR, DT_BF16, SH(4, 8));
	rejects(F, "bias must be a bf16 vector of 8 for a bf16 result");
}

Test(ir_verify, scaled_mm_result_fp8)
{
	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 16);
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s), NOATTR, DT_F8E4M3FN, SH(4, 8));
	rejects(F, "result dtype must be bf16, f16 or f32");
}

Test(ir_verify, scaled_mm_result_shape)
{
	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 16);
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s), NOATTR, DT_BF16, SH(8, 4));
	rejects(F, "result must be (4,8)");
}

Test(ir_verify, scaled_mm_with_attributes)
{
	mm_params(DT_F8E4M3FN, DT_F8E4M3FN, 16);
	ir_instr(F, OP_SCALED_MM, ARGS(mm_a, mm_b, mm_s, mm_s), ATTR(1, 0), DT_BF16, SH(4, 8));
	rejects(F, "takes no attributes");
}

Test(ir_verify, use_before_def)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2));

	ir_instr(F, OP_ADD, ARGS(x, x + 2), NOATTR, DT_F32, SH(2));
	ir_instr(F, OP_NEG, ARGS(x), NOATTR, DT_F32, SH(2));
	rejects(F, "%1 = add: operand 1 is not defined before use");
}

Test(ir_verify, self_use)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2));

	ir_instr(F, OP_ADD, ARGS(x, x + 1), NOATTR, DT_F32, SH(2));
	rejects(F, "operand 1 is not defined before use");
}

Test(ir_verify, negative_dims)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2, -3));

	ir_instr(F, OP_NEG, ARGS(x), NOATTR, DT_F32, SH(2, -3));
	rejects(F, "%x: shape is negative or too large");
}

Test(ir_verify, shape_too_large)
{
	ir_param(F, "x", DT_F32, SH(INT64_C(1) << 40, INT64_C(1) << 40));
	rejects(F, "%x: shape is negative or too large");
}

Test(ir_verify, error_position)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2)), pos = 99;
	char err[256];

	ir_instr(F, OP_NEG, ARGS(x), NOATTR, DT_F32, SH(2));
	ir_instr(F, OP_EXP, ARGS(x), NOATTR, DT_F32, SH(3));
	cr_assert_not(ir_verify(F, err, sizeof err, &pos));
	cr_assert_eq(pos, 1);
}

Test(ir_verify, return_of_missing_value)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2));

	ir_return(F, x + 5, NULL);
	rejects(F, "return 0: no such value");
}

Test(ir_verify, kernel_out_of_order)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2));
	uint32_t a = ir_instr(F, OP_NEG, ARGS(x), NOATTR, DT_F32, SH(2));

	add_kernel(F, "k0", 0, ARGS(x), ARGS(a));
	ir_instr(F, OP_ABS, ARGS(a), NOATTR, DT_F32, SH(2));
	add_kernel(F, "k1", 1, ARGS(a), ARGS(a + 1));
	F->kernels[1].first = 0; /* overlaps k0 */
	rejects(F, "kernel k1: instructions out of order");
}

Test(ir_verify, kernel_foreign_instruction)
{
	uint32_t x = ir_param(F, "x", DT_F32, SH(2));
	uint32_t a = ir_instr(F, OP_NEG, ARGS(x), NOATTR, DT_F32, SH(2));

	ir_instr(F, OP_ABS, ARGS(a), NOATTR, DT_F32, SH(2));
	add_kernel(F, "k0", 0, ARGS(x), ARGS(a + 1));
	F->ins[1].kernel = -1;
	rejects(F, "kernel k0: instruction 1 does not belong to it");
}

/* ---- reader errors, one test each ---- */

Test(ir_parse, negative_dims_in_text)
{
	parse_fails_at("func @f(%x: f32[2,-1]) {\n  return %x\n}\n", "t.ir:1:13: error: negative dimension -1");
}

Test(ir_parse, negative_dims_in_result)
{
	parse_fails("func @f(%x: f32[2]) {\n  %y = reshape %x : f32[-2,-1]\n  return %y\n}\n", "negative dimension -2");
}

Test(ir_parse, layout_not_a_permutation)
{
	parse_fails_at(
		"func @f(%x: f32[2,3]{1,1}) {\n  return %x\n}\n", "t.ir:1:21: error: layout is not a permutation");
}

Test(ir_parse, layout_out_of_range)
{
	parse_fails("func @f(%x: f32[2,3]{0,2}) {\n  return %x\n}\n", "layout is not a permutation");
}

Test(ir_parse, layout_wrong_length)
{
	parse_fails("func @f(%x: f32[2,3]{0}) {\n  return %x\n}\n", "layout needs 2 entries");
}

Test(ir_parse, unknown_op)
{
	parse_fails_at("func @f(%x: f32[]) {\n  %y = frobnicate %x : f32[]\n  return %y\n}\n",
		"t.ir:2:8: error: unknown op 'frobnicate'");
}

Test(ir_parse, unknown_dtype)
{
	parse_fails_at("func @f(%x: f33[]) {\n  return %x\n}\n", "t.ir:1:13: error: unknown dtype 'f33'");
}

Test(ir_parse, thunder_dtype_spelling_is_not_ir)
{
	parse_fails("func @f(%x: f8_e4m3fn[2]) {\n  return %x\n}\n", "unknown dtype 'f8_e4m3fn'");
}

Test(ir_parse, undefined_value)
{
	parse_fails_at("func @f(%x: f32[]) {\n  %y = add %x, %nope : f32[]\n  return %y\n}\n",
		"t.ir:2:16: error: '%nope' is not defined");
}

Test(ir_parse, use_before_def)
{
	parse_fails_at("func @f(%x: f32[]) {\n  %y = neg %z : f32[]\n  %z = abs %x : f32[]\n  return %y\n}\n",
		"t.ir:2:12: error: '%z' is not defined");
}

Test(ir_parse, undefined_return) { parse_fails("func @f(%x: f32[]) {\n  return %x, %q\n}\n", "'%q' is not defined"); }

Test(ir_parse, duplicate_definition)
{
	parse_fails_at("func @f(%x: f32[]) {\n  %x = neg %x : f32[]\n  return %x\n}\n",
		"t.ir:2:3: error: '%x' is defined twice");
}

Test(ir_parse, duplicate_parameter)
{
	parse_fails("func @f(%x: f32[], %x: f32[]) {\n  return %x\n}\n", "'%x' is defined twice");
}

Test(ir_parse, duplicate_numeric_name)
{
	parse_fails("func @f(%0: f32[]) {\n  %0 = neg %0 : f32[]\n  return %0\n}\n", "'%0' is defined twice");
}

Test(ir_parse, text_after_function)
{
	parse_fails_at("func @f(%x: f32[]) {\n  return %x\n}\nreturn %x\n", "t.ir:4:1: error: text after the function");
}

Test(ir_parse, binary_data)
{
	static const char text[] = "func @f(%x: f32[]) {\n  return %x\n}\n\0\x01garbage";
	char *diag;

	cr_assert_null(parse_mem(text, sizeof text - 1, &diag));
	cr_assert(strstr(diag, "t.ir:1:1: error: binary data in the input"), "got:\n%s", diag);
	free(diag);
}

Test(ir_parse, verifier_error_points_at_op)
{
	parse_fails_at("func @f(%x: f32[2], %y: bf16[2]) {\n  %z = add %x, %y : f32[2]\n  return %z\n}\n",
		"t.ir:2:8: error: %z = add: operands must have one dtype (f32 and bf16)");
}

Test(ir_parse, unknown_flag)
{
	parse_fails("func @f(%x: f32[]) {\n  %y = neg %x fast : f32[]\n  return %y\n}\n", "unknown flag 'fast'");
}

Test(ir_parse, full_without_value)
{
	parse_fails("func @f() {\n  %y = full : f32[]\n  return %y\n}\n", "expected a number");
}

Test(ir_parse, full_bad_value)
{
	parse_fails("func @f() {\n  %y = full 1.5.2 : f32[]\n  return %y\n}\n", "bad number '1.5.2'");
}

Test(ir_parse, rank_above_eight)
{
	parse_fails("func @f(%x: f32[1,1,1,1,1,1,1,1,1]) {\n  return %x\n}\n", "more than 8 entries");
}

Test(ir_parse, rank_eight_is_fine) { parse_ok("func @f(%x: f32[1,1,1,1,1,1,1,1]) {\n  return %x\n}\n"); }

Test(ir_parse, bad_integer) { parse_fails("func @f(%x: f32[2x]) {\n  return %x\n}\n", "bad integer '2x'"); }

Test(ir_parse, missing_func) { parse_fails_at("fn @f() {\n  return\n}\n", "t.ir:1:1: error: expected 'func'"); }

Test(ir_parse, missing_return)
{
	parse_fails(
		"func @f(%x: f32[]) {\n  %y = neg %x : f32[]\n}\n", "expected an instruction, 'kernel' or 'return'");
}

Test(ir_parse, missing_close_brace) { parse_fails("func @f(%x: f32[]) {\n  return %x\n", "expected '}'"); }

Test(ir_parse, empty_input) { parse_fails_at("", "t.ir:1:1: error: expected 'func'"); }

Test(ir_parse, empty_kernel)
{
	parse_fails("func @f(%x: f32[]) {\n  kernel @k0(%x) -> () {\n  }\n  return %x\n}\n", "empty kernel");
}

Test(ir_parse, kernel_without_arrow)
{
	parse_fails("func @f(%x: f32[]) {\n  kernel @k0(%x) {\n    %y = neg %x : f32[]\n  }\n  return %x\n}\n",
		"expected '->'");
}

/* a NAME may start with a digit (the name of an output of a value known by
 * its id), but it is a run of A-Z a-z 0-9 _ . */
Test(ir_parse, return_as_needs_name)
{
	parse_fails("func @f(%x: f32[]) {\n  return %x as -3\n}\n", "expected an output name");
	parse_fails("func @f(%x: f32[]) {\n  return %x as\n}\n", "expected an output name");
}

Test(ir_parse, missing_type) { parse_fails("func @f(%x: f32[]) {\n  %y = neg %x\n}\n", "expected ':'"); }

/* a result shape whose element count overflows int64 is an error, not UB */
Test(ir_parse, reshape_to_huge_shape)
{
	parse_fails("func @f(%x: f32[1]) {\n"
		    "  %y = reshape %x : f32[4294967296,4294967296,4294967296]\n"
		    "  return %y\n}\n",
		"");
}

/* ---- externs ---- */

/* lib.affine(x, scale=S, shift=T): x * S + T, and the count of x's elements;
 * S and T from the call's argument list */
static bool
affine(const Extern *e, Tensor **ins, int nins, Tensor **outs, int nouts, char *err, size_t errlen)
{
	double scale = 1, shift = 0;
	const char *p;

	if (nins != 1 || nouts != 2) {
		snprintf(err, errlen, "wants one tensor and two results");
		return false;
	}
	if ((p = strstr(e->args, "scale=")))
		scale = strtod(p + 6, NULL);
	if ((p = strstr(e->args, "shift=")))
		shift = strtod(p + 6, NULL);
	for (int64_t i = 0; i < tensor_numel(ins[0]); i++)
		tensor_setf(outs[0], i, tensor_getf(ins[0], i) * scale + shift);
	tensor_seti(outs[1], 0, tensor_numel(ins[0]));
	return true;
}

static const char extern_text[] = "func @f(%x: f32[2,3]) {\n"
				  "  %a = neg %x : f32[2,3]\n"
				  "  %dead = abs %x : f32[2,3]\n"
				  "  %y, %n = extern \"lib.affine\" (%a, scale=2.0, shift=0.5) : f32[2,3], i64[]\n"
				  "  %z, %w = extern \"lib.affine\" (%dead, scale=3.0) : f32[2,3], i64[]\n"
				  "  %b = exp %y : f32[2,3]\n"
				  "  %c = abs %x : f32[2,3]\n"
				  "  return %b, %n, %c\n"
				  "}\n";

/* the interpreter calls a registered host implementation; the passes keep
 * the call (both results, when one is used), drop the call nothing reads,
 * cut kernels around it, and compute the same bits */
Test(ir_extern, interpret_across_passes)
{
	char err[256], *t;
	Tensor *x = tensor_new("x", DT_F32, 2, (const int64_t[]){ 2, 3 }), *o1[3] = { 0 }, *o2[3] = { 0 };
	PassOptions po = { .opt = 2, .verify = true };
	Func *fn = parse_ok(extern_text), *opt;

	for (int i = 0; i < 6; i++)
		tensor_setf(x, i, i - 2.5);
	cr_assert(!ir_interpret(fn, &x, o1, err, sizeof err));
	cr_assert(strstr(err, "extern 'lib.affine': the interpreter has no host implementation"), "%s", err);
	ir_register_extern("lib.affine", affine);
	cr_assert(ir_interpret(fn, &x, o1, err, sizeof err), "%s", err);
	cr_assert_eq(tensor_geti(o1[1], 0), 6);
	cr_assert_eq(tensor_getf(o1[0], 0), (float)expf(2.5f * 2.0f + 0.5f));
	opt = pass_pipeline(fn, &po);
	t = print_str(opt);
	cr_assert(strstr(t, "%y, %n = extern \"lib.affine\" (%a, scale=2.0, shift=0.5) : f32[2,3], i64[]"), "%s", t);
	cr_assert(!strstr(t, "scale=3.0"), "the call nobody reads is gone:\n%s", t);
	cr_assert(pass_lowered(opt, err, sizeof err), "%s", err);
	cr_assert(ir_interpret(opt, &x, o2, err, sizeof err), "%s", err);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(memcmp(o1[i]->data, o2[i]->data, tensor_bytes(o1[i])), 0,
			"output %d differs after the passes", i);
		tensor_free(o1[i]);
		tensor_free(o2[i]);
	}
	free(t);
	tensor_free(x);
}

/* one name for two results: refused */
Test(ir_extern, reader_counts_results)
{
	static const char text[] = "func @f(%x: f32[4]) {\n"
				   "  %y = extern \"lib.two\" (%x) : f32[4], f32[4]\n"
				   "  return %y\n"
				   "}\n";
	char *diag;

	cr_assert_null(parse_mem(text, strlen(text), &diag));
	cr_assert(strstr(diag, "2:38: error: extern: 1 result named, more types given"), "%s", diag);
	free(diag);
}

/* a call's results are one group: consecutive, result 0 first */
Test(ir_extern, verifier_wants_the_group)
{
	static const Extern two = { "lib.two", "@0", 2 };
	Func *fn = ir_func_new(A, "g");
	uint32_t x = ir_param(fn, "x", DT_F32, SH(4));
	DType dts[2] = { DT_F32, DT_F32 };
	int ranks[2] = { 1, 1 };
	int64_t dims[2][IR_MAXRANK] = { { 4 }, { 4 } };
	char err[256];

	ir_extern(fn, &two, ARGS(x), dts, ranks, (const int64_t (*)[IR_MAXRANK])dims);
	ir_return(fn, x + 2, NULL);
	cr_assert(ir_verify(fn, err, sizeof err, NULL), "%s", err);
	fn->ins[1].ext = NULL;
	cr_assert(!ir_verify(fn, err, sizeof err, NULL));
	cr_assert(strstr(err, "has no call"), "%s", err);
	fn->ins[1].ext = &two;
	fn->ins[0].op = OP_NEG, fn->ins[0].nattr = 0;
	cr_assert(!ir_verify(fn, err, sizeof err, NULL));
	cr_assert(strstr(err, "result 1 of extern 'lib.two' without its result 0"), "%s", err);
}
