/* pipeline.c — the pass pipeline: one flat list, the verifier between every two.
 *
 *   -O0  layouts, fuse (one kernel per op)
 *   -O1  canonicalize, transposes, ranges, layouts, fuse (one kernel per op)
 *   -O2  canonicalize, transposes, canonicalize, ranges, layouts, fuse
 * layouts and fuse legalize: cuBLASLt takes its b operand only as (N,K), and
 * the backend runs nothing outside a kernel but GEMMs. pass_lowered says
 * whether a function is in that form (a --passes list may leave it not).
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

const char *const pass_names[] = { "canonicalize", "transposes", "layouts", "ranges", "fuse", NULL };

static Func *
after(Func *fn, const char *name, const PassOptions *o)
{
	char err[512];
	uint32_t pos;

	if (o->verify && !ir_verify(fn, err, sizeof err, &pos))
		die("IR is broken after %s: %s", name, err);
	if (o->print_after_all || (o->print_after && !strcmp(o->print_after, name))) {
		fprintf(stderr, "; IR after %s\n", name);
		ir_print(stderr, fn);
	}
	return fn;
}

static Func *
run_one(Func *fn, const char *name, size_t n, const PassOptions *o)
{
	if (n == 12 && !strncmp(name, "canonicalize", n))
		return after(pass_canonicalize(fn), "canonicalize", o);
	if (n == 10 && !strncmp(name, "transposes", n))
		return after(pass_transposes(fn), "transposes", o);
	if (n == 7 && !strncmp(name, "layouts", n))
		return after(pass_layouts(fn), "layouts", o);
	if (n == 6 && !strncmp(name, "ranges", n))
		return after(pass_ranges(fn), "ranges", o);
	if (n == 4 && !strncmp(name, "fuse", n))
		return after(pass_fuse(fn, o->opt), "fuse", o);
	die("unknown pass '%.*s'", (int)n, name);
}

bool
pass_list_ok(const char *list, const char **bad, size_t *badlen)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		bool found = false;

		for (int i = 0; pass_names[i]; i++)
			found |= strlen(pass_names[i]) == n && !strncmp(pass_names[i], p, n);
		if (!found) {
			*bad = p;
			*badlen = n;
			return false;
		}
		p += n + (p[n] == ',');
	}
	return true;
}

Func *
pass_pipeline(Func *fn, const PassOptions *o)
{
	if (o->only) {
		for (const char *p = o->only; *p;) {
			size_t n = strcspn(p, ",");

			fn = run_one(fn, p, n, o);
			p += n + (p[n] == ',');
		}
		return fn;
	}
	if (o->opt >= 1) {
		fn = after(pass_canonicalize(fn), "canonicalize", o);
		fn = after(pass_transposes(fn), "transposes", o);
		if (o->opt >= 2)
			fn = after(pass_canonicalize(fn), "canonicalize", o);
		fn = after(pass_ranges(fn), "ranges", o);
	}
	/* GEMM operand layouts are what cuBLASLt accepts: needed at every level */
	fn = after(pass_layouts(fn), "layouts", o);
	return after(pass_fuse(fn, o->opt), "fuse", o);
}

/* the reason fn is not what the backend takes, or NULL */
static const char *
not_lowered(Func *fn, const Instr *in)
{
	const uint32_t *a = ir_args(fn, in);
	static const int64_t colmajor[2] = { 1, 0 };

	if (!op_step((Op)in->op))
		return in->kernel < 0 ? "is in no kernel (the fuse pass makes them)" : NULL;
	if (in->kernel >= 0)
		return "is inside a kernel (it is a step of its own)";
	if (in->op == OP_EXTERN) {
		for (uint32_t j = 0; j < in->nargs; j++)
			if (!ir_is_rowmajor(fn, a[j]))
				return "has an operand that is not row-major (the layouts pass makes them so)";
		return ir_is_rowmajor(fn, in->res) ? NULL : "has a result that is not row-major";
	}
	if (in->op == OP_MATMUL)
		return !ir_is_rowmajor(fn, a[0]) || !ir_is_rowmajor(fn, a[1]) || !ir_is_rowmajor(fn, in->res) ?
			"has an operand or result that is not row-major (the layouts pass makes them so)" : NULL;
	if (fn->vals[a[1]].layout == IR_NONE ||
	    memcmp(&fn->ints[fn->vals[a[1]].layout], colmajor, sizeof colmajor) != 0)
		return "has a b operand not in layout {1,0} (the layouts pass gives it one)";
	if (!ir_is_rowmajor(fn, a[0]) || !ir_is_rowmajor(fn, in->res))
		return "has an a operand or result that is not row-major (the layouts pass makes them so)";
	return NULL;
}

bool
pass_lowered(Func *fn, char *err, size_t errlen)
{
	char nb[16];

	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];
		const char *why = not_lowered(fn, in);

		if (why) {
			snprintf(err, errlen, "%%%s = %s %s", ir_name(fn, in->res, nb), ir_ops[in->op].name, why);
			return false;
		}
	}
	return true;
}
