/* fp8cc — the compiler's command line: read a trace or IR, optimize, and emit
 * IR, the plan, a Graphviz drawing, LLVM IR or PTX; or run the reference
 * interpreter on safetensors inputs. A thin main over libfp8cc.
 *
 * Exit status: 0 success, 1 an error in the input, 2 a usage error. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fe.h"
#include "passes.h"
#include "safetensors.h"


typedef struct {
	const char *input, *output, *inputs, *emit, *gpu, *save_inputs;
	PassOptions passes;
	bool interpret, special, time;
	uint64_t seed;
} Options;

static const char usage[] =
	"usage: fp8cc INPUT [-o FILE] [--emit=ir|plan|dot|llvm|ptx] [-O0|-O1|-O2] [--gpu=sm_90]\n"
	"             [--passes=PASS,...] [--print-after-all] [--print-after=PASS] [--time]\n"
	"       fp8cc INPUT --interpret [--inputs IN.safetensors] -o OUT.safetensors [--seed N]\n"
	"             [--special] [--save-inputs FILE]\n"
	"       fp8cc --version | --help\n"
	"\n"
	"INPUT is a Lightning Thunder trace or fp8cc IR text; - reads standard input.\n"
	"Without --emit, fp8cc writes PTX (the fused kernels and the plan that runs them).\n"
	"--interpret runs the reference interpreter: inputs are matched to parameters by\n"
	"name; missing ones are drawn from a normal distribution seeded by --seed\n"
	"(--special mixes in NaN, inf, -0, subnormal, fp8-boundary and huge values);\n"
	"--save-inputs writes the inputs it used.\n"
	"--passes runs just the named passes in order (canonicalize, transposes,\n"
	"layouts, ranges, fuse); --passes= runs none. --time prints where the\n"
	"compile time goes, in milliseconds, to standard error.\n";

static int
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "fp8cc: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

/* value of "--name=value" or "--name value"; NULL if argv[*i] is not --name */
static const char *
optval(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == 0 && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static int
parse_args(int argc, char **argv, Options *o)
{
	const char *v, *bad;
	char *end;
	size_t badlen;

	o->passes.opt = 2;
	o->passes.verify = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--version")) {
			printf("fp8cc %s (LLVM %s)\n", FP8CC_VERSION, be_llvm_version());
			exit(0);
		} else if (!strcmp(a, "-O0") || !strcmp(a, "-O1") || !strcmp(a, "-O2")) {
			o->passes.opt = a[2] - '0';
		} else if (!strcmp(a, "--time")) {
			o->time = true;
		} else if (!strcmp(a, "--special")) {
			o->special = true;
		} else if ((v = optval(argc, argv, &i, "--save-inputs"))) {
			o->save_inputs = v;
		} else if (!strcmp(a, "--interpret")) {
			o->interpret = true;
		} else if (!strcmp(a, "--print-after-all")) {
			o->passes.print_after_all = true;
		} else if ((v = optval(argc, argv, &i, "--print-after"))) {
			o->passes.print_after = v;
		} else if ((v = optval(argc, argv, &i, "--passes"))) {
			o->passes.only = v;
		} else if ((v = optval(argc, argv, &i, "-o"))) {
			o->output = v;
		} else if ((v = optval(argc, argv, &i, "--inputs"))) {
			o->inputs = v;
		} else if ((v = optval(argc, argv, &i, "--emit"))) {
			o->emit = v;
		} else if ((v = optval(argc, argv, &i, "--gpu"))) {
			o->gpu = v;
		} else if ((v = optval(argc, argv, &i, "--seed"))) {
			errno = 0;
			o->seed = strtoull(v, &end, 10);
			if (*end || errno || !*v)
				return usage_error("bad --seed '%s'", v);
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (o->input) {
			return usage_error("more than one input ('%s')", a);
		} else {
			o->input = a;
		}
	}
	if (!o->input)
		return usage_error("no input%s", "");
	if (o->interpret && !o->output)
		return usage_error("--interpret needs -o OUT.safetensors%s", "");
	if (o->emit && strcmp(o->emit, "ir") && strcmp(o->emit, "plan") && strcmp(o->emit, "dot") &&
	    strcmp(o->emit, "llvm") && strcmp(o->emit, "ptx"))
		return usage_error("unknown --emit kind '%s'", o->emit);
	if (o->passes.only && !pass_list_ok(o->passes.only, &bad, &badlen)) {
		fprintf(stderr, "fp8cc: unknown pass '%.*s' in --passes (", (int)badlen, bad);
		for (int i = 0; pass_names[i]; i++)
			fprintf(stderr, "%s%s", i ? ", " : "", pass_names[i]);
		fprintf(stderr, ")\n");
		return 2;
	}
	if (o->gpu && !be_target_ok(o->gpu))
		return usage_error("unsupported --gpu '%s' (sm_89, sm_90, sm_90a, sm_100)", o->gpu);
	return 0;
}

/* one input tensor: from the file when it has the name, else seeded random */
static Tensor *
load_input(Func *fn, uint32_t p, const StFile *st, const Options *o, char *err, size_t errlen)
{
	uint32_t v = fn->params[p];
	const Value *val = &fn->vals[v];
	char nb[16];
	const char *name = ir_name(fn, v, nb);
	const StTensor *s = st ? st_find(st, name) : NULL;
	Tensor *t = tensor_new(name, (DType)val->dtype, val->rank, ir_dims(fn, v));

	if (!t) {
		snprintf(err, errlen, "input '%s': out of memory", name);
		return NULL;
	}
	if (!s) {
		if (o->special)
			tensor_special(t, o->seed + p);
		else
			tensor_randn(t, o->seed + p);
		return t;
	}
	if (dt_lookup(s->dtype, strlen(s->dtype), 4) != val->dtype || s->rank != val->rank ||
	    memcmp(s->dims, ir_dims(fn, v), (size_t)s->rank * sizeof(int64_t)) != 0) {
		snprintf(err, errlen, "input '%s' in the file is %s with %d dims; the program wants %s",
			name, s->dtype, s->rank, ir_dtypes[val->dtype].name);
		tensor_free(t);
		return NULL;
	}
	memcpy(t->data, s->data, tensor_bytes(t));
	return t;
}

static int
write_tensors(Tensor **ts, uint32_t n, const char *path)
{
	StTensor *st = calloc(n + 1, sizeof *st);
	char err[512];
	int rc;

	if (!st)
		return 1;
	for (uint32_t i = 0; i < n; i++) {
		st[i].name = ts[i]->name;
		snprintf(st[i].dtype, sizeof st[i].dtype, "%s", ir_dtypes[ts[i]->dtype].st);
		st[i].rank = ts[i]->rank;
		memcpy(st[i].dims, ts[i]->dims, sizeof ts[i]->dims);
		st[i].nbytes = tensor_bytes(ts[i]);
		st[i].data = ts[i]->data;
	}
	rc = st_write(path, st, (int)n, err, sizeof err);
	if (rc)
		fprintf(stderr, "fp8cc: error: %s\n", err);
	free(st);
	return rc ? 1 : 0;
}

static int
interpret(Func *fn, const Options *o)
{
	StFile st = { 0 };
	Tensor **ins = calloc(fn->nparams + 1, sizeof *ins), **outs = calloc(fn->nrets + 1, sizeof *outs);
	char err[512];
	int rc = 1;

	if (!ins || !outs)
		goto done;
	if (o->inputs && st_read(o->inputs, &st, err, sizeof err)) {
		fprintf(stderr, "fp8cc: error: %s\n", err);
		goto done;
	}
	for (uint32_t p = 0; p < fn->nparams; p++)
		if (!(ins[p] = load_input(fn, p, o->inputs ? &st : NULL, o, err, sizeof err))) {
			fprintf(stderr, "fp8cc: error: %s\n", err);
			goto done;
		}
	if (o->save_inputs && write_tensors(ins, fn->nparams, o->save_inputs))
		goto done;
	if (!ir_interpret(fn, ins, outs, err, sizeof err)) {
		fprintf(stderr, "fp8cc: error: %s\n", err);
		goto done;
	}
	rc = write_tensors(outs, fn->nrets, o->output);
done:
	for (uint32_t p = 0; ins && p < fn->nparams; p++)
		tensor_free(ins[p]);
	for (uint32_t i = 0; outs && i < fn->nrets; i++)
		tensor_free(outs[i]);
	free(ins);
	free(outs);
	st_free(&st);
	return rc;
}

/* what cuBLASLt's FP8 GEMMs cannot do is the input's error, at its line:
 * K and N multiples of 16 (the interpreter runs any shape) */
static bool
gemms_ok(Func *fn, const Source *src)
{
	for (uint32_t i = 0; i < fn->nins; i++) {
		const Instr *in = &fn->ins[i];
		const int64_t *da, *db;

		if (in->op != OP_SCALED_MM)
			continue;
		da = ir_dims(fn, ir_args(fn, in)[0]);
		db = ir_dims(fn, ir_args(fn, in)[1]);
		if (da[1] % 16 == 0 && db[1] % 16 == 0)
			continue;
		fe_error(src, in->line, in->col, "scaled_mm with K=%lld and N=%lld: cuBLASLt's FP8 GEMMs "
			"need K and N multiples of 16", (long long)da[1], (long long)db[1]);
		return false;
	}
	return true;
}

static int
emit(Func *fn, const Options *o)
{
	FILE *f = stdout;
	BeOptions be = { .gpu = o->gpu ? o->gpu : "sm_90", .path = o->input, .time = o->time };
	const char *kind = o->emit ? o->emit : "ptx";
	int rc;

	if (o->output && strcmp(o->output, "-") && !(f = fopen(o->output, "w"))) {
		fprintf(stderr, "fp8cc: error: cannot write '%s': %s\n", o->output, strerror(errno));
		return 1;
	}
	if (!strcmp(kind, "ir")) {
		ir_print(f, fn);
		rc = 0;
	} else {
		rc = be_emit(fn, kind, &be, f) ? 0 : 1;
	}
	if (f != stdout && fclose(f) != 0)
		rc = 1;
	return rc;
}

int
main(int argc, char **argv)
{
	Options o = { 0 };
	Source src;
	Arena *arena;
	Func *fn;
	int rc = parse_args(argc, argv, &o);

	if (rc)
		return rc;
	double t0 = now_ms(), t1, t2;

	if (!fe_load(o.input, &src))
		return 1;
	arena = arena_new();
	fn = fe_read(arena, &src);
	t1 = now_ms();
	if (fn) {
		fn = pass_pipeline(fn, &o.passes);
		t2 = now_ms();
		if (o.time)
			fprintf(stderr, "fp8cc: time: read %.2f ms, passes %.2f ms\n", t1 - t0, t2 - t1);
		if (o.interpret)
			rc = interpret(fn, &o);
		else if (o.emit && (!strcmp(o.emit, "ir") || !strcmp(o.emit, "dot")))
			rc = emit(fn, &o);
		else
			rc = gemms_ok(fn, &src) ? emit(fn, &o) : 1;
		if (o.time)
			fprintf(stderr, "fp8cc: time: total %.2f ms\n", now_ms() - t0);
	} else {
		rc = 1;
	}
	arena_free(arena);
	fe_unload(&src);
	return rc;
}
