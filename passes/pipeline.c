/* pipeline.c — the pass pipeline: one flat list, the verifier between every two.
 *
 *   -O0  layouts, fuse (one kernel per op)
 *   -O1  canonicalize, transposes, shards, ranges, layouts, fuse (one kernel per op)
 *   -O2  canonicalize, transposes, canonicalize, shards, ranges, layouts, fuse
 * and with --fuse-epilogues, at every level, epilogues after the last
 * canonicalize (it changes roundings: epilogue.c says how)
 * (the table `pipeline` below says it; each pass is named once, in PASSES)
 * layouts and fuse legalize: cuBLASLt takes its b operand only as (N,K), and
 * the backend runs nothing outside a kernel but GEMMs. pass_lowered says
 * whether a function is in that form (a --passes list may leave it not).
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* the passes, each once: its name (--passes, --print-after) and how to run it */
static Func *
canonicalize(Func *fn, int opt)
{
	(void)opt;
	return pass_canonicalize(fn);
}
static Func *
transposes(Func *fn, int opt)
{
	(void)opt;
	return pass_transposes(fn);
}
static Func *
shards(Func *fn, int opt)
{
	(void)opt;
	return pass_shards(fn);
}
static Func *
layouts(Func *fn, int opt)
{
	(void)opt;
	return pass_layouts(fn);
}
static Func *
ranges(Func *fn, int opt)
{
	(void)opt;
	return pass_ranges(fn);
}
static Func *
epilogues(Func *fn, int opt)
{
	(void)opt;
	return pass_epilogues(fn);
}
static Func *
fuse(Func *fn, int opt)
{
	return pass_fuse(fn, opt);
}

#define PASSES(X)  X(canonicalize) X(transposes) X(shards) X(epilogues) X(layouts) X(ranges) X(fuse)
#define AS_NAME(n) #n,
#define AS_FN(n)   n,
#define AS_ENUM(n) P_##n,
enum { PASSES(AS_ENUM) NPASSES };
const char *const pass_names[] = { PASSES(AS_NAME) NULL };
static Func *(*const pass_fns[NPASSES])(Func *, int) = { PASSES(AS_FN) };

/* the pipeline: each pass runs at every -O level from its minimum on */
static const struct {
	int pass, minopt;
} pipeline[] = {
	{ P_canonicalize, 1 },
	{ P_transposes, 1 },
	{ P_canonicalize, 2 },
	{ P_shards, 1 },    /* after the last canonicalize, whose CSE would join what it copies */
	{ P_epilogues, 0 }, /* with --fuse-epilogues only, which asks for it at every level */
	{ P_ranges, 1 },
	{ P_layouts, 0 }, /* GEMM operand layouts are what cuBLASLt accepts: needed at every level */
	{ P_fuse, 0 },
};

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

/* the pass called name[0..n), or -1 */
static int
find(const char *name, size_t n)
{
	for (int i = 0; i < NPASSES; i++)
		if (strlen(pass_names[i]) == n && !strncmp(pass_names[i], name, n))
			return i;
	return -1;
}

bool
pass_list_ok(const char *list, const char **bad, size_t *badlen)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (find(p, n) < 0) {
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
			int k = find(p, n);

			if (k < 0)
				die("unknown pass '%.*s'", (int)n, p);
			fn = after(pass_fns[k](fn, o->opt), pass_names[k], o);
			p += n + (p[n] == ',');
		}
		return fn;
	}
	for (size_t i = 0; i < NELEM(pipeline); i++)
		if (o->opt >= pipeline[i].minopt && (pipeline[i].pass != P_epilogues || o->epilogues))
			fn = after(pass_fns[pipeline[i].pass](fn, o->opt), pass_names[pipeline[i].pass], o);
	return fn;
}

static bool
colmajor(Func *fn, uint32_t v)
{
	static const int64_t cm[2] = { 1, 0 };

	return fn->vals[v].layout != IR_NONE && memcmp(&fn->ints[fn->vals[v].layout], cm, sizeof cm) == 0;
}

/* the reason fn is not what the backend takes, or NULL */
static const char *
not_lowered(Func *fn, const Instr *in)
{
	const uint32_t *a = ir_args(fn, in);

	if (!op_step((Op)in->op))
		return in->kernel < 0 ? "is in no kernel (the fuse pass makes them)" : NULL;
	if (in->kernel >= 0)
		return "is inside a kernel (it is a step of its own)";
	if (in->op == OP_EXTERN || ir_ops[in->op].cls == OC_COLLECTIVE) {
		for (uint32_t j = 0; j < in->nargs; j++)
			if (!ir_is_rowmajor(fn, a[j]))
				return "has an operand that is not row-major (the layouts pass makes them so)";
		return ir_is_rowmajor(fn, in->res) ? NULL : "has a result that is not row-major";
	}
	if (in->op == OP_MATMUL_AUX)
		return ir_is_rowmajor(fn, in->res) ? NULL : "has a result that is not row-major";
	if (in->op == OP_MATMUL)
		return !ir_is_rowmajor(fn, a[0]) || !ir_is_rowmajor(fn, a[1]) || !ir_is_rowmajor(fn, in->res)
			? "has an operand or result that is not row-major (the layouts pass makes them so)"
			: NULL;
	if (!colmajor(fn, a[1]))
		return "has a b operand not in layout {1,0} (the layouts pass gives it one)";
	if (!ir_is_rowmajor(fn, a[0]) || !ir_is_rowmajor(fn, in->res))
		return "has an a operand or result that is not row-major (the layouts pass makes them so)";
	if (ir_scale_mode(fn, in) == SCALES_BLOCK && (!colmajor(fn, a[2]) || !colmajor(fn, a[3])))
		return "has block-wise scales not in layout {1,0} (the layouts pass gives them one)";
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
