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

#define FP8CC_VERSION "0.1.0"

typedef struct {
	const char *input[2], *output, *inputs, *emit, *gpu, *save_inputs, *signature;
	int ninput;
	PassOptions passes;
	bool interpret, special, time;
	uint64_t seed;
} Options;

static const char usage[] =
	"usage: fp8cc INPUT [BACKWARD] [-o FILE] [--emit=ir|plan|dot|llvm|ptx] [-O0|-O1|-O2] [--gpu=sm_90]\n"
	"             [--signature EXAMPLE.safetensors]\n"
	"             [--passes=PASS,...] [--print-after-all] [--print-after=PASS] [--time]\n"
	"       fp8cc INPUT --interpret [--inputs IN.safetensors] -o OUT.safetensors [--seed N]\n"
	"             [--special] [--save-inputs FILE]\n"
	"       fp8cc --version | --help\n"
	"\n"
	"INPUT is a Lightning Thunder trace or fp8cc IR text; - reads standard input.\n"
	"With BACKWARD, INPUT is a forward trace and BACKWARD its backward: one program\n"
	"of two functions whose saved tensors stay on the GPU between the calls.\n"
	"--signature gives the dtypes and shapes of inputs the trace does not type\n"
	"(*args, collections), by name or position, from a safetensors file.\n"
	"Without --emit, fp8cc writes PTX (the fused kernels and the plan that runs them).\n"
	"--interpret runs the reference interpreter: inputs are matched to parameters by\n"
	"name; missing ones are drawn from a normal distribution seeded by --seed\n"
	"(--special mixes in NaN, inf, -0, subnormal, fp8-boundary and huge values);\n"
	"--save-inputs writes the inputs it used.\n"
	"--passes runs just the named passes in order (canonicalize, transposes,\n"
	"layouts, ranges, fuse); --passes= runs none. A list for plan, llvm or ptx\n"
	"output must leave the program lowered: it ends with layouts,fuse. --time\n"
	"prints where the compile time goes, in milliseconds, to standard error.\n";

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
		} else if ((v = optval(argc, argv, &i, "--signature"))) {
			o->signature = v;
		} else if ((v = optval(argc, argv, &i, "--seed"))) {
			errno = 0;
			o->seed = strtoull(v, &end, 10);
			if (*end || errno || !*v)
				return usage_error("bad --seed '%s'", v);
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (o->ninput == 2) {
			return usage_error("more than two inputs ('%s')", a);
		} else {
			o->input[o->ninput++] = a;
		}
	}
	if (!o->ninput)
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

/* the name a tensor of function f has in files: its own in a program of
 * one function, "FUNCTION/NAME" in one of several */
static const char *
file_name(const Program *prog, uint32_t f, const char *name, char *buf, size_t n)
{
	if (prog->nfns == 1)
		return name;
	snprintf(buf, n, "%s/%s", prog->fns[f]->name, name);
	return buf;
}

/* one input tensor: from the file under its name (FUNCTION/NAME or NAME),
 * else seeded random */
static Tensor *
load_input(const Program *prog, uint32_t f, uint32_t p, const StFile *st, const Options *o, char *err, size_t errlen)
{
	Func *fn = prog->fns[f];
	uint32_t v = fn->params[p];
	const Value *val = &fn->vals[v];
	char nb[16], qb[256];
	const char *name = ir_name(fn, v, nb), *qname = file_name(prog, f, name, qb, sizeof qb);
	const StTensor *s = st ? st_find(st, qname) : NULL;
	Tensor *t;

	if (!s && st)
		s = st_find(st, name);
	if (!(t = tensor_new(qname, (DType)val->dtype, val->rank, ir_dims(fn, v)))) {
		snprintf(err, errlen, "input '%s': out of memory", qname);
		return NULL;
	}
	if (!s) {
		if (o->special)
			tensor_special(t, o->seed + p + 1000 * f);
		else
			tensor_randn(t, o->seed + p + 1000 * f);
		return t;
	}
	if (dt_lookup(s->dtype, strlen(s->dtype), 4) != val->dtype || s->rank != val->rank ||
	    memcmp(s->dims, ir_dims(fn, v), (size_t)s->rank * sizeof(int64_t)) != 0) {
		snprintf(err, errlen, "input '%s' in the file is %s with %d dims; the program wants %s",
			qname, s->dtype, s->rank, ir_dtypes[val->dtype].name);
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

/* a growing list of tensors that owns them */
typedef struct {
	Tensor **t;
	uint32_t n, cap;
} TList;

static bool
tl_push(TList *l, Tensor *t)
{
	if (l->n == l->cap) {
		Tensor **nt = realloc(l->t, (l->cap ? 2 * l->cap : 16) * sizeof *nt);

		if (!nt)
			return false;
		l->t = nt;
		l->cap = l->cap ? 2 * l->cap : 16;
	}
	l->t[l->n++] = t;
	return true;
}

static void
tl_free(TList *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		tensor_free(l->t[i]);
	free(l->t);
}

/* Run function f: state slots feed the parameters that read them and take
 * the outputs that write them; the other inputs come from the file (or are
 * drawn), the other outputs go to outs. */
static bool
run_function(const Program *prog, uint32_t f, const StFile *st, const Options *o, Tensor **state, TList *used,
	TList *outs)
{
	Func *fn = prog->fns[f];
	Tensor **ins = calloc(fn->nparams + 1, sizeof *ins), **res = calloc(fn->nrets + 1, sizeof *res);
	char err[512], nb[16], qb[256];
	bool ok = ins && res;

	for (uint32_t p = 0; ok && p < fn->nparams; p++) {
		if (fn->pslot[p] >= 0) {
			ins[p] = state[fn->pslot[p]];
			continue;
		}
		if (!(ins[p] = load_input(prog, f, p, st, o, err, sizeof err)) || !tl_push(used, ins[p])) {
			fprintf(stderr, "fp8cc: error: %s\n", ins[p] ? "out of memory" : err);
			tensor_free(ins[p]);
			ok = false;
		}
	}
	if (ok && !(ok = ir_interpret(fn, ins, res, err, sizeof err)))
		fprintf(stderr, "fp8cc: error: %s\n", err);
	for (uint32_t i = 0; ok && i < fn->nrets; i++) {
		if (fn->rslot[i] >= 0) {
			state[fn->rslot[i]] = res[i];
			res[i] = NULL;
			continue;
		}
		free(res[i]->name);
		res[i]->name = strdup(file_name(prog, f, ir_retname(fn, i, nb), qb, sizeof qb));
		ok = res[i]->name && tl_push(outs, res[i]);
		res[i] = NULL;
	}
	for (uint32_t i = 0; res && i < fn->nrets; i++)
		tensor_free(res[i]);
	free(ins);
	free(res);
	return ok;
}

/* the reference interpreter over the whole program, function after function */
static int
interpret(const Program *prog, const Options *o)
{
	StFile st = { 0 };
	Tensor **state = calloc(prog->nslots + 1, sizeof *state);
	TList used = { 0 }, outs = { 0 };
	char err[512];
	int rc = 1;

	if (!state)
		goto done;
	if (o->inputs && st_read(o->inputs, &st, err, sizeof err)) {
		fprintf(stderr, "fp8cc: error: %s\n", err);
		goto done;
	}
	for (uint32_t f = 0; f < prog->nfns; f++)
		if (!run_function(prog, f, o->inputs ? &st : NULL, o, state, &used, &outs))
			goto done;
	if (o->save_inputs && write_tensors(used.t, used.n, o->save_inputs))
		goto done;
	rc = write_tensors(outs.t, outs.n, o->output);
done:
	for (uint32_t k = 0; state && k < prog->nslots; k++)
		tensor_free(state[k]);
	free(state);
	tl_free(&used);
	tl_free(&outs);
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

/* the backend takes only lowered IR: a --passes list that leaves it not is a
 * usage error; the whole pipeline always lowers */
static int
lowered(Func *fn, const Options *o)
{
	char err[512];

	if (pass_lowered(fn, err, sizeof err))
		return 0;
	if (!o->passes.only)
		die("the pipeline left the program unlowered: %s", err);
	fprintf(stderr, "fp8cc: --passes=%s leaves the program unlowered for --emit=%s: %s\n"
		"fp8cc: a list for plan, llvm or ptx output ends with layouts,fuse\n",
		o->passes.only, o->emit ? o->emit : "ptx", err);
	return 2;
}

static int
emit(const Program *prog, const Options *o)
{
	FILE *f = stdout;
	BeOptions be = { .gpu = o->gpu ? o->gpu : "sm_90", .path = o->input[0], .time = o->time };
	const char *kind = o->emit ? o->emit : "ptx";
	int rc;

	if (o->output && strcmp(o->output, "-") && !(f = fopen(o->output, "w"))) {
		fprintf(stderr, "fp8cc: error: cannot write '%s': %s\n", o->output, strerror(errno));
		return 1;
	}
	if (!strcmp(kind, "ir")) {
		ir_print_program(f, prog);
		rc = 0;
	} else {
		rc = be_emit(prog, kind, &be, f) ? 0 : 1;
	}
	if (f != stdout && fclose(f) != 0)
		rc = 1;
	return rc;
}

/* --signature: the dtype and shape of each tensor of a safetensors file */
static bool
read_signature(Arena *a, const char *path, FeSig *sig)
{
	StFile st = { 0 };
	char err[512];
	int dt;

	if (st_read(path, &st, err, sizeof err)) {
		fprintf(stderr, "fp8cc: error: --signature: %s\n", err);
		return false;
	}
	sig->e = arena_alloc(a, ((size_t)st.n + 1) * sizeof *sig->e);
	for (int i = 0; i < st.n; i++) {
		FeSigEntry *e = &sig->e[sig->n++];

		if ((dt = dt_lookup(st.t[i].dtype, strlen(st.t[i].dtype), 4)) < 0) {
			fprintf(stderr, "fp8cc: error: --signature: %s: tensor '%s' has dtype %s, which fp8cc does not know\n",
				path, st.t[i].name, st.t[i].dtype);
			st_free(&st);
			return false;
		}
		e->name = arena_strndup(a, st.t[i].name, strlen(st.t[i].name));
		e->dtype = (DType)dt;
		e->rank = st.t[i].rank;
		memcpy(e->dims, st.t[i].dims, sizeof e->dims);
	}
	st_free(&st);
	return true;
}

/* the passes over every function, and for the backend the program lowered
 * and its GEMMs checked; the exit status so far */
static int
optimize(Program *prog, const Options *o, const Source *srcs)
{
	int rc;

	for (uint32_t i = 0; i < prog->nfns; i++)
		prog->fns[i] = pass_pipeline(prog->fns[i], &o->passes);
	if (o->interpret || (o->emit && (!strcmp(o->emit, "ir") || !strcmp(o->emit, "dot"))))
		return 0;
	for (uint32_t i = 0; i < prog->nfns; i++) {
		if ((rc = lowered(prog->fns[i], o)))
			return rc;
		if (!gemms_ok(prog->fns[i], &srcs[o->ninput == 2 ? i : 0]))
			return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	Options o = { 0 };
	Source src[2] = { 0 };
	Arena *arena;
	Program *prog = NULL;
	FeSig sig = { 0 };
	int rc = parse_args(argc, argv, &o), nsrc = 0;

	if (rc)
		return rc;
	double t0 = now_ms(), t1, t2;

	arena = arena_new();
	rc = 1;
	for (; nsrc < o.ninput; nsrc++)
		if (!fe_load(o.input[nsrc], &src[nsrc]))
			goto done;
	if (o.signature && !read_signature(arena, o.signature, &sig))
		goto done;
	prog = fe_read_program(arena, src, o.ninput, o.signature ? &sig : NULL);
	t1 = now_ms();
	if (!prog)
		goto done;
	if ((rc = optimize(prog, &o, src)))
		goto done;
	t2 = now_ms();
	if (o.time)
		fprintf(stderr, "fp8cc: time: read %.2f ms, passes %.2f ms\n", t1 - t0, t2 - t1);
	rc = o.interpret ? interpret(prog, &o) : emit(prog, &o);
	if (o.time)
		fprintf(stderr, "fp8cc: time: total %.2f ms\n", now_ms() - t0);
done:
	arena_free(arena);
	for (int i = 0; i < nsrc; i++)
		fe_unload(&src[i]);
	return rc;
}
