/* print.c — the IR's text form. frontend/irparse.c reads exactly what this
 * writes, so print → parse → print gives the same bytes (docs/ir.md).
 *
 *   func @computation(%input: bf16[16,32], %weight: bf16[64,32]) {
 *     %t173 = convert_element_type %input : f32[16,32]
 *     %t177 = amax %t174 [0,1] : f32[]
 *     %3 = full 448 : f64[]
 *     kernel @k0(%input) -> (%t177) { ... }
 *     return %t122, %t197 as x
 *   }
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static void
print_ints(FILE *f, const int64_t *v, uint32_t n)
{
	fputc('[', f);
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)v[i]);
	fputc(']', f);
}

void
ir_print_type(FILE *f, Func *fn, uint32_t v)
{
	const Value *val = &fn->vals[v];

	fputs(ir_dtypes[val->dtype].name, f);
	print_ints(f, ir_dims(fn, v), val->rank);
	if (val->layout != IR_NONE) {
		fputc('{', f);
		for (int i = 0; i < val->rank; i++)
			fprintf(f, "%s%lld", i ? "," : "", (long long)fn->ints[val->layout + i]);
		fputc('}', f);
	}
}

/* the shortest decimal that reads back as the same double */
void
ir_print_double(FILE *f, double d)
{
	char buf[40];

	if (isnan(d)) {
		fputs(signbit(d) ? "-nan" : "nan", f);
		return;
	}
	if (isinf(d)) {
		fputs(d < 0 ? "-inf" : "inf", f);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	fputs(buf, f);
}

static void
print_ref(FILE *f, Func *fn, uint32_t v)
{
	char nb[16];

	fprintf(f, "%%%s", ir_name(fn, v, nb));
}

static void
print_list(FILE *f, Func *fn, const uint32_t *ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		print_ref(f, fn, ids[i]);
	}
}

static void
print_instr(FILE *f, Func *fn, const Instr *in, const char *indent)
{
	fputs(indent, f);
	print_ref(f, fn, in->res);
	fprintf(f, " = %s", ir_ops[in->op].name);
	if (in->nargs) {
		fputc(' ', f);
		print_list(f, fn, ir_args(fn, in), in->nargs);
	}
	if (in->op == OP_FULL) {
		fputc(' ', f);
		ir_print_double(f, in->fval);
	}
	if (in->nattr || ir_ops[in->op].cls == OC_REDUCE || in->op == OP_BROADCAST || in->op == OP_SQUEEZE) {
		fputc(' ', f);
		print_ints(f, ir_attr(fn, in), in->nattr);
	}
	if (in->flags & IF_FAST_ACCUM)
		fputs(" fast_accum", f);
	if (in->flags & IF_NO_FIXUP)
		fputs(" no_fixup", f);
	if (in->flags & IF_TRANS_A)
		fputs(" trans_a", f);
	if (in->flags & IF_TRANS_B)
		fputs(" trans_b", f);
	fputs(" : ", f);
	ir_print_type(f, fn, in->res);
	fputc('\n', f);
}

/* an extern call, at its first result: %a, %b = extern "NAME" (ARGS) : T0, T1 */
static void
print_extern(FILE *f, Func *fn, const Instr *in, const char *indent)
{
	const Extern *e = in->ext;

	fputs(indent, f);
	for (uint32_t i = 0; i < e->nres; i++) {
		fputs(i ? ", " : "", f);
		print_ref(f, fn, in[i].res);
	}
	fprintf(f, " = extern \"%s\" (", e->name);
	ext_args_print(f, fn, e->args, ir_args(fn, in));
	fputs(") : ", f);
	for (uint32_t i = 0; i < e->nres; i++) {
		fputs(i ? ", " : "", f);
		ir_print_type(f, fn, in[i].res);
	}
	fputc('\n', f);
}

static void
print_kernel(FILE *f, Func *fn, const Kernel *k)
{
	fprintf(f, "  kernel @%s(", k->name);
	print_list(f, fn, &fn->argv[k->ins], k->nins);
	fputs(") -> (", f);
	print_list(f, fn, &fn->argv[k->outs], k->nouts);
	fputs(") {\n", f);
	for (uint32_t i = k->first; i < k->first + k->count; i++)
		print_instr(f, fn, &fn->ins[i], "    ");
	fputs("  }\n", f);
}

void
ir_print(FILE *f, Func *fn)
{
	char nb[16];

	fprintf(f, "func @%s(", fn->name);
	for (uint32_t i = 0; i < fn->nparams; i++) {
		fputs(i ? ", " : "", f);
		print_ref(f, fn, fn->params[i]);
		fputs(": ", f);
		ir_print_type(f, fn, fn->params[i]);
		if (fn->pslot[i] >= 0)
			fprintf(f, " saved %d", fn->pslot[i]);
	}
	fputs(") {\n", f);
	for (uint32_t i = 0; i < fn->nins; i++) {
		if (fn->ins[i].kernel >= 0) {
			const Kernel *k = &fn->kernels[fn->ins[i].kernel];

			print_kernel(f, fn, k);
			i = k->first + k->count - 1;
			continue;
		}
		if (fn->ins[i].op == OP_EXTERN) { /* its results are consecutive, result 0 first */
			print_extern(f, fn, &fn->ins[i], "  ");
			i += fn->ins[i].ext->nres - 1;
			continue;
		}
		print_instr(f, fn, &fn->ins[i], "  ");
	}
	fputs("  return", f);
	for (uint32_t i = 0; i < fn->nrets; i++) {
		fputs(i ? ", " : " ", f);
		print_ref(f, fn, fn->rets[i]);
		if (fn->retnames[i] && strcmp(fn->retnames[i], ir_name(fn, fn->rets[i], nb)) != 0)
			fprintf(f, " as %s", fn->retnames[i]);
		if (fn->rslot[i] >= 0)
			fprintf(f, " saved %d", fn->rslot[i]);
		if (fn->rupd[i] >= 0) {
			fputs(" updates ", f);
			print_ref(f, fn, fn->params[fn->rupd[i]]);
		}
	}
	fputs("\n}\n", f);
}

void
ir_print_program(FILE *f, const Program *p)
{
	for (uint32_t i = 0; i < p->nfns; i++) {
		if (i)
			fputc('\n', f);
		ir_print(f, p->fns[i]);
	}
}
