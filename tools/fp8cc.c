/* fp8cc — the compiler's command line: read a trace or IR, optimize, and emit
 * IR, the plan, a Graphviz drawing, the signature as JSON, LLVM IR or PTX; or
 * run the reference interpreter on safetensors inputs. A thin main over
 * libfp8cc.
 *
 * Options are parsed with getopt_long into one Options struct; the inputs
 * (positional arguments) are collected in an array: one trace (or IR), or a
 * forward trace and its backward, compiled into one program. The compile is one flat list of phases, each told to
 * phase(), which -v and --time report and the progress line shows.
 *
 * Exit status: 0 success, 1 an error in the input, 2 a usage error. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "fe.h"
#include "passes.h"
#include "safetensors.h"
#include "signature.h"

#define MAXFILES   8 /* positional inputs the parser collects */
#define MAXPROGRAM 2 /* inputs one program is read from: a forward and its backward */

enum { PROGRESS_NEVER, PROGRESS_AUTO, PROGRESS_ALWAYS };

typedef struct {
	const char *files[MAXFILES]; /* the inputs, in order */
	int nfiles;
	const char *output;      /* -o; NULL: by kind (PTX next to the input, the rest to stdout) */
	const char *emit;        /* ir plan dot signature llvm ptx; NULL: ptx */
	const char *gpu;         /* --gpu, -mcpu, --offload-arch */
	const char *cuda_path;   /* --cuda-path */
	const char *inputs;      /* --inputs IN.safetensors (interpreter) */
	const char *save_inputs; /* --save-inputs FILE (interpreter) */
	const char *signature;   /* --signature FILE: the types of inputs the traces leave untyped */
	PassOptions passes;
	bool interpret, special;
	int ranks;    /* --ranks N (interpreter) */
	bool report;  /* -v, --verbose, --time */
	int progress; /* PROGRESS_* */
	uint64_t seed;
} Options;

static const char usage[] = "usage: fp8cc INPUT [BACKWARD] [-o FILE] [--emit=KIND] [-O0|-O1|-O2|-O3] [--gpu=sm_90]\n"
			    "       fp8cc INPUT [BACKWARD] --interpret [--inputs IN.safetensors] [--ranks N]\n"
			    "             -o OUT.safetensors\n"
			    "\n"
			    "INPUT is a Lightning Thunder trace or fp8cc IR text; - reads standard input.\n"
			    "With BACKWARD, INPUT is a forward trace and BACKWARD its backward: one program\n"
			    "of two functions whose saved tensors stay on the GPU between the calls.\n"
			    "\n"
			    "Input:\n"
			    "  --signature=FILE        the dtypes and shapes of inputs the trace does not type\n"
			    "                          (*args, collections), by name or position, from the\n"
			    "                          header of a safetensors file (its data may be absent)\n"
			    "Output:\n"
			    "  -o FILE                 write FILE; - is standard output. Without -o, PTX goes\n"
			    "                          to INPUT with its extension replaced by .ptx (standard\n"
			    "                          output for -), every other kind to standard output\n"
			    "  --emit=KIND             ptx (the default: the fused kernels and the plan that\n"
			    "                          runs them), ir, plan, dot (Graphviz), signature (the\n"
			    "                          inputs and outputs as JSON), llvm\n"
			    "Target:\n"
			    "  --gpu=SM                %s (sm_90 is the default);\n"
			    "                          -mcpu=SM and --offload-arch=SM say the same\n"
			    "  --cuda-path=DIR         the CUDA toolkit whose libdevice to link (else\n"
			    "                          $CUDA_HOME, else /usr/local/cuda)\n"
			    "Passes:\n"
			    "  -O0, -O1, -O2, -O3      -O0 one kernel per op, -O2 (the default) every pass;\n"
			    "                          -O3 is -O2, -O is -O1\n"
			    "  --fuse-epilogues        a bias add, a ReLU and a GELU after a matmul become\n"
			    "                          its cuBLASLt epilogue (the GELU's input kept, when read\n"
			    "                          later: GELU_AUX): one rounding where the trace has\n"
			    "                          more (as F.linear with a bias), so not bit-exact with\n"
			    "                          eager\n"
			    "  --passes=PASS,...       run just these, in order; --passes= runs none\n"
			    "  --print-after=PASS      the IR after PASS on standard error (memplan: the plan)\n"
			    "  --print-after-all       the IR after every pass\n"
			    "                          PASS: canonicalize transposes shards epilogues layouts\n"
			    "                          ranges fuse; --print-after also memplan\n"
			    "Interpreter:\n"
			    "  --interpret             run the reference interpreter, write the outputs\n"
			    "  --inputs=FILE           safetensors inputs, matched to parameters by name; the\n"
			    "                          others are drawn at random (a warning names each)\n"
			    "  --seed=N                seed of the random draws (default 0)\n"
			    "  --special               mix in NaN, inf, -0, subnormal, fp8-boundary, huge values\n"
			    "  --save-inputs=FILE      write the inputs used\n"
			    "  --ranks=N               run N ranks in lockstep, their collectives combined;\n"
			    "                          rank R's tensors are named rankR/NAME in the files (an\n"
			    "                          input found only as NAME is every rank's)\n"
			    "Reports:\n"
			    "  -v, --verbose, --time   each phase on standard error: its time, what it read or\n"
			    "                          wrote, the kernels and GEMMs the passes made\n"
			    "  --progress=WHEN         a one-line progress report on standard error: auto (on a\n"
			    "                          terminal, once a compile passes a second), always, never\n"
			    "  -h, --help              this text\n"
			    "  --version               the version of fp8cc and of its LLVM\n"
			    "\n"
			    "Exit status: 0 success, 1 an error in the input, 2 a usage error.\n";

/* ---- options ---- */

enum {
	OPT_EMIT = 256,
	OPT_GPU,
	OPT_CUDA_PATH,
	OPT_SIGNATURE,
	OPT_PASSES,
	OPT_PRINT_AFTER,
	OPT_PRINT_AFTER_ALL,
	OPT_FUSE_EPILOGUES,
	OPT_TIME,
	OPT_PROGRESS,
	OPT_INTERPRET,
	OPT_INPUTS,
	OPT_SEED,
	OPT_SPECIAL,
	OPT_SAVE_INPUTS,
	OPT_RANKS,
	OPT_VERSION,
};

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "emit", required_argument, NULL, OPT_EMIT },
	{ "gpu", required_argument, NULL, OPT_GPU },
	{ "offload-arch", required_argument, NULL, OPT_GPU },
	{ "cuda-path", required_argument, NULL, OPT_CUDA_PATH },
	{ "signature", required_argument, NULL, OPT_SIGNATURE },
	{ "passes", required_argument, NULL, OPT_PASSES },
	{ "print-after", required_argument, NULL, OPT_PRINT_AFTER },
	{ "print-after-all", no_argument, NULL, OPT_PRINT_AFTER_ALL },
	{ "fuse-epilogues", no_argument, NULL, OPT_FUSE_EPILOGUES },
	{ "interpret", no_argument, NULL, OPT_INTERPRET },
	{ "inputs", required_argument, NULL, OPT_INPUTS },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "special", no_argument, NULL, OPT_SPECIAL },
	{ "save-inputs", required_argument, NULL, OPT_SAVE_INPUTS },
	{ "ranks", required_argument, NULL, OPT_RANKS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "time", no_argument, NULL, OPT_TIME },
	{ "progress", required_argument, NULL, OPT_PROGRESS },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static const char *const print_names[] = { "memplan", NULL }; /* besides pass_names */

static int
usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("fp8cc: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nfp8cc: see 'fp8cc --help'\n", stderr);
	return 2;
}

/* edit distance of a and b, both short */
static int
distance(const char *a, const char *b)
{
	int d[64], n = (int)strlen(b);

	if (n >= 64)
		return 99;
	for (int j = 0; j <= n; j++)
		d[j] = j;
	for (int i = 1; a[i - 1]; i++) {
		int diag = d[0];

		d[0] = i;
		for (int j = 1; j <= n; j++) {
			int up = d[j], best = diag + (a[i - 1] != b[j - 1]);

			best = best < up + 1 ? best : up + 1;
			best = best < d[j - 1] + 1 ? best : d[j - 1] + 1;
			diag = up;
			d[j] = best;
		}
	}
	return d[n];
}

/* an unknown option, with the nearest known one as a hint */
static int
unknown_option(const char *arg)
{
	char name[64];
	const char *best = NULL;
	int bestd = 3;

	snprintf(name, sizeof name, "%s", arg + strspn(arg, "-"));
	name[strcspn(name, "=")] = 0;
	for (int i = 0; longopts[i].name; i++) {
		int d = distance(name, longopts[i].name);

		if (d < bestd)
			best = longopts[i].name, bestd = d;
	}
	if (best)
		return usage_error("unknown option '%s'; did you mean '--%s'?", arg, best);
	return usage_error("unknown option '%s'", arg);
}

static bool
in_list(const char *s, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

/* "a, b, c" of both lists into buf, for messages */
static const char *
list_str(char *buf, size_t n, const char *const *a, const char *const *b)
{
	size_t used = 0;

	buf[0] = 0;
	for (int k = 0; k < 2; k++)
		for (int i = 0; (k ? b : a) && (k ? b : a)[i] && used < n; i++)
			used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", (k ? b : a)[i]);
	return buf;
}

/* -O, -O0 .. -O3 (optarg after the O) */
static int
opt_level(const char *v, Options *o)
{
	if (!v)
		o->passes.opt = 1;
	else if (v[0] >= '0' && v[0] <= '3' && !v[1])
		o->passes.opt = v[0] == '3' ? 2 : v[0] - '0';
	else
		return usage_error("unknown optimization level '-O%s' (-O0, -O1, -O2, -O3)", v);
	return 0;
}

/* one option; 0, or the exit status (2) of a usage error */
static int
option(int c, const char *arg, Options *o)
{
	char *end;

	switch (c) {
	case 'o': o->output = arg; break;
	case 'O': return opt_level(arg, o);
	case 'm':
		if (strncmp(arg, "cpu=", 4) != 0) {
			char m[64];

			snprintf(m, sizeof m, "-m%s", arg);
			return unknown_option(m);
		}
		o->gpu = arg + 4;
		break;
	case 'v':                 o->report = true; break;
	case OPT_EMIT:            o->emit = arg; break;
	case OPT_GPU:             o->gpu = arg; break;
	case OPT_CUDA_PATH:       o->cuda_path = arg; break;
	case OPT_SIGNATURE:       o->signature = arg; break;
	case OPT_PASSES:          o->passes.only = arg; break;
	case OPT_PRINT_AFTER:     o->passes.print_after = arg; break;
	case OPT_PRINT_AFTER_ALL: o->passes.print_after_all = true; break;
	case OPT_FUSE_EPILOGUES:  o->passes.epilogues = true; break;
	case OPT_TIME:            o->report = true; break;
	case OPT_INTERPRET:       o->interpret = true; break;
	case OPT_INPUTS:          o->inputs = arg; break;
	case OPT_SPECIAL:         o->special = true; break;
	case OPT_SAVE_INPUTS:     o->save_inputs = arg; break;
	case OPT_SEED:
		errno = 0;
		o->seed = strtoull(arg, &end, 10);
		if (*end || errno || !*arg || *arg == '-')
			return usage_error("bad --seed '%s' (an integer >= 0)", arg);
		break;
	case OPT_RANKS:
		errno = 0;
		o->ranks = (int)strtol(arg, &end, 10);
		if (*end || errno || !*arg || o->ranks < 1 || o->ranks > 1024)
			return usage_error("bad --ranks '%s' (1 to 1024)", arg);
		break;
	case OPT_PROGRESS:
		if (!strcmp(arg, "never"))
			o->progress = PROGRESS_NEVER;
		else if (!strcmp(arg, "auto"))
			o->progress = PROGRESS_AUTO;
		else if (!strcmp(arg, "always"))
			o->progress = PROGRESS_ALWAYS;
		else
			return usage_error("bad --progress '%s' (auto, always, never)", arg);
		break;
	case 'h':         printf(usage, be_target_list()); exit(0);
	case OPT_VERSION: printf("fp8cc %s (LLVM %s)\n", FP8CC_VERSION, be_llvm_version()); exit(0);
	default:          unreachable();
	}
	return 0;
}

/* what the options say together */
static int
check_args(Options *o)
{
	const char *bad;
	char list[256];
	size_t badlen;

	if (o->nfiles == 0)
		return usage_error("no input (a trace or IR file; - reads standard input)");
	if (o->nfiles > MAXPROGRAM)
		return usage_error("more than two inputs ('%s'); fp8cc compiles a trace, or a forward and its "
				   "backward",
			o->files[MAXPROGRAM]);
	if (o->interpret && !o->output)
		return usage_error("--interpret needs -o OUT.safetensors (- for standard output)");
	if (o->ranks && !o->interpret)
		return usage_error("--ranks is the interpreter's (with --interpret)");
	if (!o->ranks)
		o->ranks = 1;
	if (o->emit && !in_list(o->emit, be_emit_names))
		return usage_error(
			"unknown --emit kind '%s' (%s)", o->emit, list_str(list, sizeof list, be_emit_names, NULL));
	if (o->passes.only && !pass_list_ok(o->passes.only, &bad, &badlen))
		return usage_error("unknown pass '%.*s' in --passes (%s)", (int)badlen, bad,
			list_str(list, sizeof list, pass_names, NULL));
	if (o->passes.print_after && !in_list(o->passes.print_after, pass_names) &&
		!in_list(o->passes.print_after, print_names))
		return usage_error("unknown pass '%s' in --print-after (%s)", o->passes.print_after,
			list_str(list, sizeof list, pass_names, print_names));
	if (o->gpu && !be_target_ok(o->gpu))
		return usage_error("unsupported --gpu '%s' (%s)", o->gpu, be_target_list());
	return 0;
}

static int
parse_args(int argc, char **argv, Options *o)
{
	int c, rc;

	o->passes.opt = 2;
	o->passes.verify = true;
	o->progress = PROGRESS_AUTO;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:O::m:vh", longopts, NULL)) != -1) {
		const char *a = argv[optind - 1];

		if (c == '?' && optopt && !strncmp(a, "--", 2)) /* --time=3 */
			return usage_error("option '%.*s' takes no value", (int)strcspn(a, "="), a);
		if (c == '?' && optopt) {
			char opt[3] = { '-', (char)optopt, 0 };

			return unknown_option(opt);
		}
		if (c == '?')
			return unknown_option(a);
		if (c == ':')
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		if ((rc = option(c, optarg, o)))
			return rc;
	}
	for (; optind < argc; optind++) {
		if (o->nfiles == MAXFILES)
			return usage_error("more than %d inputs", MAXFILES);
		o->files[o->nfiles++] = argv[optind];
	}
	return check_args(o);
}

/* ---- phases: -v, --time and the progress line ---- */

static struct {
	bool report, line; /* report phases (-v, --time); keep a progress line */
	bool always;       /* the line from the start, terminal or not */
	const char *file;  /* the input, for the line */
	const char *name;  /* the current phase */
	char detail[512];  /* what it reads or writes, or made */
	char kernels[64];  /* "1 kernel, 1 GEMM", once fused */
	double t0, mark;   /* start of the compile, of the phase */
	bool shown, stop;  /* the line is on the screen; the ticker is to end */
	pthread_t ticker;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the end of the compile, for the ticker */
} ph = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

/* the progress line, over what was there; the cursor stays at its end */
static void
draw(void)
{
	fprintf(stderr, "\rfp8cc: %s: %s%s%s, %.1f s\033[K", ph.file, ph.name, ph.kernels[0] ? ", " : "", ph.kernels,
		(now_ms() - ph.t0) / 1000);
	fflush(stderr);
	ph.shown = true;
}

/* a line of its own on stderr, the progress line drawn again below it;
 * the caller holds ph.lock */
static void
vsay(const char *fmt, va_list ap)
{
	if (ph.shown)
		fputs("\r\033[K", stderr);
	vfprintf(stderr, fmt, ap);
	if (ph.shown)
		draw();
}

static void
sayl(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

/* the same, from anywhere */
static void
say(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&ph.lock);
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&ph.lock);
}

/* the progress line, five times a second, until phases_end wakes it */
static void *
tick(void *arg)
{
	struct timespec at;

	(void)arg;
	pthread_mutex_lock(&ph.lock);
	while (!ph.stop) {
		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_nsec += 200 * 1000 * 1000;
		at.tv_sec += at.tv_nsec / 1000000000;
		at.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&ph.wake, &ph.lock, &at);
		if (!ph.stop && ph.name && (ph.always || now_ms() - ph.t0 >= 1000))
			draw();
	}
	pthread_mutex_unlock(&ph.lock);
	return NULL;
}

/* the phase now running ends; name (NULL: none) begins */
static void
phase(const char *name, const char *detail)
{
	pthread_mutex_lock(&ph.lock);
	if (ph.name && ph.report)
		sayl("fp8cc: %-10s %9.2f ms%s%s\n", ph.name, now_ms() - ph.mark, ph.detail[0] ? "  " : "", ph.detail);
	ph.name = name;
	ph.mark = now_ms();
	snprintf(ph.detail, sizeof ph.detail, "%s", detail ? detail : "");
	if (name && ph.always)
		draw();
	pthread_mutex_unlock(&ph.lock);
}

static void
phases_start(const Options *o)
{
	ph.report = o->report;
	ph.always = o->progress == PROGRESS_ALWAYS;
	ph.line = ph.always || (o->progress == PROGRESS_AUTO && isatty(STDERR_FILENO));
	ph.file = o->files[0];
	ph.t0 = now_ms();
	if (ph.line && pthread_create(&ph.ticker, NULL, tick, NULL) != 0)
		ph.line = false;
}

static void
phases_end(void)
{
	phase(NULL, NULL);
	if (ph.line) {
		pthread_mutex_lock(&ph.lock);
		ph.stop = true;
		pthread_cond_signal(&ph.wake);
		pthread_mutex_unlock(&ph.lock);
		pthread_join(ph.ticker, NULL);
	}
	if (ph.shown)
		fputs("\r\033[K", stderr);
	if (ph.report)
		fprintf(stderr, "fp8cc: %-10s %9.2f ms\n", "total", now_ms() - ph.t0);
}

/* "1 kernel, 1 GEMM" of the fused program, every function together: what
 * the passes made, and part of the progress line from here on */
static void
count_kernels(const Program *prog)
{
	uint32_t kernels = 0, gemms = 0;

	for (uint32_t f = 0; f < prog->nfns; f++) {
		kernels += prog->fns[f]->nkernels;
		for (uint32_t i = 0; i < prog->fns[f]->nins; i++)
			gemms += op_gemm((Op)prog->fns[f]->ins[i].op);
	}
	pthread_mutex_lock(&ph.lock);
	snprintf(ph.kernels, sizeof ph.kernels, "%u kernel%s, %u GEMM%s", kernels, kernels == 1 ? "" : "s", gemms,
		gemms == 1 ? "" : "s");
	snprintf(ph.detail, sizeof ph.detail, "%s", ph.kernels);
	pthread_mutex_unlock(&ph.lock);
}

/* ---- the interpreter ---- */

/* the name a tensor of function f has in files: its own in a program of
 * one function, "FUNCTION/NAME" in one of several; rank R's under
 * "rankR/" when the interpreter runs several (rank < 0: no prefix) */
static const char *
file_name(const Program *prog, uint32_t f, int rank, const char *name, char *buf, size_t n)
{
	char rb[24] = "";

	if (rank >= 0)
		snprintf(rb, sizeof rb, "rank%d/", rank);
	if (prog->nfns == 1)
		snprintf(buf, n, "%s%s", rb, name);
	else
		snprintf(buf, n, "%s%s/%s", rb, prog->fns[f]->name, name);
	return buf;
}

/* rank r's input tensor: from the file under its name (rankR/, then
 * FUNCTION/NAME or NAME), else seeded random, with a warning that names it */
static Tensor *
load_input(const Program *prog, uint32_t f, uint32_t p, int r, const StFile *st, const Options *o, char *err,
	size_t errlen)
{
	Func *fn = prog->fns[f];
	uint32_t v = fn->params[p];
	const Value *val = &fn->vals[v];
	char nb[16], qb[256], rb[256];
	const char *name = ir_name(fn, v, nb), *qname = file_name(prog, f, o->ranks > 1 ? r : -1, name, qb, sizeof qb);
	const StTensor *s = st ? st_find(st, qname) : NULL;
	uint64_t seed = o->seed + p + 1000 * f + 1000003 * (uint64_t)r;
	Tensor *t;

	if (!s && st && o->ranks > 1)
		s = st_find(st, file_name(prog, f, -1, name, rb, sizeof rb));
	if (!s && st)
		s = st_find(st, name);
	if (!(t = tensor_new(qname, (DType)val->dtype, val->rank, ir_dims(fn, v)))) {
		snprintf(err, errlen, "input '%s': out of memory", qname);
		return NULL;
	}
	if (!s) {
		if (o->inputs)
			say("fp8cc: warning: input '%s' is not in %s; drawing it at random (seed %llu%s)\n", qname,
				o->inputs, (unsigned long long)seed, o->special ? ", special values" : "");
		else
			say("fp8cc: warning: no --inputs: drawing input '%s' at random (seed %llu%s)\n", qname,
				(unsigned long long)seed, o->special ? ", special values" : "");
		if (o->special)
			tensor_special(t, seed);
		else
			tensor_randn(t, seed);
		return t;
	}
	if (dt_lookup(s->dtype, strlen(s->dtype), 4) != val->dtype || s->rank != val->rank ||
		memcmp(s->dims, ir_dims(fn, v), (size_t)s->rank * sizeof(int64_t)) != 0) {
		snprintf(err, errlen, "input '%s' in the file is %s with %d dims; the program wants %s", qname,
			s->dtype, s->rank, ir_dtypes[val->dtype].name);
		tensor_free(t);
		return NULL;
	}
	memcpy(t->data, s->data, tensor_bytes(t));
	return t;
}

/* the n tensors to path; - is standard output */
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
	if (!strcmp(path, "-"))
		rc = st_fwrite(stdout, "<stdout>", st, (int)n, err, sizeof err);
	else
		rc = st_write(path, st, (int)n, err, sizeof err);
	if (rc)
		env_error("%s", err);
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

/* Run function f over o->ranks ranks: state slots feed the parameters
 * that read them and take the outputs that write them (state[r * nslots
 * + k]: rank r's slot k); the other inputs come from the file (or are
 * drawn), the other outputs go to outs. */
static bool
run_function(
	const Program *prog, uint32_t f, const StFile *st, const Options *o, Tensor **state, TList *used, TList *outs)
{
	Func *fn = prog->fns[f];
	int nr = o->ranks;
	Tensor **ins = calloc((size_t)nr * fn->nparams + 1, sizeof *ins),
	       **res = calloc((size_t)nr * fn->nrets + 1, sizeof *res);
	char err[512], nb[16], qb[256];
	bool ok = ins && res;
	int64_t nod;
	uint32_t first = 0;

	for (int r = 0; ok && r < nr; r++)
		for (uint32_t p = 0; ok && p < fn->nparams; p++) {
			Tensor **in = &ins[r * fn->nparams + p];

			if (fn->pslot[p] >= 0) {
				*in = state[r * prog->nslots + fn->pslot[p]];
				continue;
			}
			if (!(*in = load_input(prog, f, p, r, st, o, err, sizeof err)) || !tl_push(used, *in)) {
				env_error("%s", *in ? "out of memory" : err);
				tensor_free(*in);
				ok = false;
			}
		}
	if (ok && !(ok = ir_interpret_ranks(fn, nr, ins, res, err, sizeof err)))
		env_error("%s", err);
	if (ok && (nod = ir_interp_order_dependent(&first)) > 0)
		say("fp8cc: warning: @%s: %lld element%s of float sums or products (the first in %%%s) %s order-dependent "
		    "on these inputs: their f64 accumulation rounds (a collective's: once, where NCCL rounds each step), "
		    "so another order of the terms (the GPU's) may give other bits\n",
			fn->name, (long long)nod, nod == 1 ? "" : "s", ir_name(fn, first, nb), nod == 1 ? "is" : "are");
	for (int r = 0; ok && r < nr; r++)
		for (uint32_t i = 0; ok && i < fn->nrets; i++) {
			Tensor **t = &res[r * fn->nrets + i];

			if (fn->rslot[i] >= 0) {
				state[r * prog->nslots + fn->rslot[i]] = *t;
				*t = NULL;
				continue;
			}
			free((*t)->name);
			(*t)->name = strdup(file_name(prog, f, nr > 1 ? r : -1, ir_retname(fn, i, nb), qb, sizeof qb));
			ok = (*t)->name && tl_push(outs, *t);
			*t = NULL;
		}
	for (uint32_t i = 0; res && i < (uint32_t)nr * fn->nrets; i++)
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
	Tensor **state = calloc((size_t)o->ranks * prog->nslots + 1, sizeof *state);
	TList used = { 0 }, outs = { 0 };
	char err[512];
	int rc = 1;

	if (!state)
		goto done;
	if (o->inputs && st_read(o->inputs, &st, err, sizeof err)) {
		env_error("%s", err);
		goto done;
	}
	for (uint32_t f = 0; f < prog->nfns; f++)
		if (!run_function(prog, f, o->inputs ? &st : NULL, o, state, &used, &outs))
			goto done;
	if (o->save_inputs && write_tensors(used.t, used.n, o->save_inputs))
		goto done;
	phase("write", o->output);
	rc = write_tensors(outs.t, outs.n, o->output);
done:
	for (uint32_t k = 0; state && k < (uint32_t)o->ranks * prog->nslots; k++)
		tensor_free(state[k]);
	free(state);
	tl_free(&used);
	tl_free(&outs);
	st_free(&st);
	return rc;
}

/* ---- compiling ---- */

/* what the backend cannot compile (be_gemm_ok) is the input's error, at
 * its line */
static bool
gemms_ok(Func *fn, const Source *src)
{
	bool ok = true;
	char why[256];

	for (uint32_t i = 0; i < fn->nins; i++)
		if (!be_gemm_ok(fn, &fn->ins[i], why, sizeof why)) {
			fe_error(src, fn->ins[i].line, fn->ins[i].col, "%s", why);
			ok = false;
		}
	return ok;
}

/* the inputs and outputs of fn a caller gives and gets (not its state
 * slots, which stay on the GPU), as the plan lists them; names in nb */
static SigFunc
sig_func(Func *fn, SigTensor *t, char (*nb)[16])
{
	SigFunc sf = { fn->name, t, NULL, 0, 0 };
	uint32_t n = 0;

	for (int side = 0; side < 2; side++) {
		uint32_t count = side ? fn->nrets : fn->nparams;

		if (side)
			sf.out = &t[n];
		for (uint32_t i = 0; i < count; i++) {
			uint32_t v = side ? fn->rets[i] : fn->params[i];

			if ((side ? fn->rslot[i] : fn->pslot[i]) >= 0)
				continue;
			t[n].name = side ? ir_retname(fn, i, nb[n]) : ir_name(fn, v, nb[n]);
			t[n].dtype = ir_dtypes[fn->vals[v].dtype].name;
			t[n].rank = fn->vals[v].rank;
			t[n].dims = ir_dims(fn, v);
			n++;
			*(side ? &sf.nout : &sf.nin) += 1;
		}
	}
	return sf;
}

/* the signature as JSON (signature.h): the program is named after its
 * first file, each function after its trace's */
static void
print_signature(FILE *f, const Program *prog, const Options *o)
{
	SigFunc *sf = calloc(prog->nfns + 1, sizeof *sf);
	SigTensor **t = calloc(prog->nfns + 1, sizeof *t);
	char (**nb)[16] = calloc(prog->nfns + 1, sizeof *nb), stem[256];
	json_t *j;

	if (!sf || !t || !nb)
		fatal("out of memory");
	for (uint32_t i = 0; i < prog->nfns; i++) {
		Func *fn = prog->fns[i];

		t[i] = calloc(fn->nparams + fn->nrets + 1, sizeof *t[i]);
		nb[i] = calloc(fn->nparams + fn->nrets + 1, sizeof *nb[i]);
		if (!t[i] || !nb[i])
			fatal("out of memory");
		sf[i] = sig_func(fn, t[i], nb[i]);
	}
	if (!strcmp(o->files[0], "-"))
		snprintf(stem, sizeof stem, "%s", prog->fns[0]->name);
	else
		sig_stem(o->files[0], stem, sizeof stem);
	if (!(j = sig_json(stem, o->gpu ? o->gpu : "sm_90", sf, (int)prog->nfns)) || sig_print(f, j))
		fatal("out of memory");
	json_decref(j);
	for (uint32_t i = 0; i < prog->nfns; i++)
		free(t[i]), free(nb[i]);
	free(sf);
	free(t);
	free(nb);
}

/* where the output goes: -o, else PTX next to the input (llc's habit:
 * x.trace -> x.ptx) and everything else to standard output; "-" is stdout */
static const char *
output_path(const Options *o, Emit kind, char *buf, size_t n)
{
	const char *in = o->files[0], *base, *dot;

	if (o->output)
		return o->output;
	if (kind != EMIT_PTX || !strcmp(in, "-"))
		return "-";
	base = strrchr(in, '/');
	base = base ? base + 1 : in;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = base + strlen(base);
	snprintf(buf, n, "%.*s.ptx", (int)(dot - in), in);
	return buf;
}

/* the bytes to path ("-": standard output), whole or not at all */
static int
write_out(const char *path, const char *data, size_t len)
{
	FILE *f = stdout;

	if (strcmp(path, "-") && !(f = fopen(path, "wb"))) {
		env_error("cannot write '%s': %s", path, strerror(errno));
		return 1;
	}
	if (fwrite(data, 1, len, f) != len || (f == stdout ? fflush(f) : fclose(f)) != 0) {
		env_error("cannot write '%s': %s", path, strerror(errno));
		if (f != stdout)
			remove(path);
		return 1;
	}
	return 0;
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
	fprintf(stderr,
		"fp8cc: --passes=%s leaves the program unlowered for --emit=%s: %s\n"
		"fp8cc: a list for plan, llvm or ptx output ends with layouts,fuse\n",
		o->passes.only, o->emit ? o->emit : "ptx", err);
	return 2;
}

/* --emit's kind (checked by the option parser); PTX without it */
static Emit
emit_kind(const Options *o)
{
	for (int e = 0; o->emit && e < NEMITS; e++)
		if (!strcmp(o->emit, be_emit_names[e]))
			return (Emit)e;
	return EMIT_PTX;
}

/* the kind asked for, made in memory, then written to its place */
static int
emit(const Program *prog, const Source *srcs, const Options *o)
{
	Emit kind = emit_kind(o);
	BeOptions be = { .gpu = o->gpu ? o->gpu : "sm_90",
		.path = srcs[0].path,
		.cuda_path = o->cuda_path,
		.phase = phase,
		.print_memplan = o->passes.print_after_all ||
			(o->passes.print_after && !strcmp(o->passes.print_after, "memplan")) };
	char *buf = NULL, pathbuf[4096];
	const char *path = output_path(o, kind, pathbuf, sizeof pathbuf);
	size_t len = 0;
	FILE *f;
	bool ok = true;
	int rc;

	for (int i = 0; i < o->nfiles; i++)
		if (strcmp(path, "-") && !strcmp(path, o->files[i]))
			return usage_error("the output '%s' would overwrite an input; give -o FILE", path);
	for (uint32_t i = 0; be_emit_for_code(kind) && i < prog->nfns; i++)
		if ((rc = lowered(prog->fns[i], o)))
			return rc;
	if (!(f = open_memstream(&buf, &len)))
		fatal("out of memory");
	/* what cuBLASLt cannot run is an error where code is made for it */
	for (uint32_t i = 0; be_emit_for_code(kind) && ok && i < prog->nfns; i++)
		ok = gemms_ok(prog->fns[i], &srcs[o->nfiles == 2 ? i : 0]);
	if (ok && kind == EMIT_IR)
		ir_print_program(f, prog);
	else if (ok && kind == EMIT_SIGNATURE)
		print_signature(f, prog, o);
	else if (ok)
		ok = be_emit(prog, kind, &be, f);
	if (fclose(f) != 0)
		fatal("out of memory");
	phase("write", path);
	rc = ok ? write_out(path, buf, len) : 1;
	free(buf);
	return rc;
}

/* --signature: the dtype and shape of each tensor in the header of a
 * safetensors file (its data is not read, and need not be there) */
static bool
read_signature(Arena *a, const char *path, FeSig *sig)
{
	StFile st = { 0 };
	char err[512];
	int dt;

	if (st_read_header(path, &st, err, sizeof err)) {
		env_error("--signature: %s", err);
		return false;
	}
	sig->e = arena_alloc(a, ((size_t)st.n + 1) * sizeof *sig->e);
	for (int i = 0; i < st.n; i++) {
		FeSigEntry *e = &sig->e[sig->n++];

		if ((dt = dt_lookup(st.t[i].dtype, strlen(st.t[i].dtype), 4)) < 0) {
			env_error("--signature: %s: tensor '%s' has dtype %s, which fp8cc does not know", path,
				st.t[i].name, st.t[i].dtype);
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

int
main(int argc, char **argv)
{
	Options o = { 0 };
	Source src[MAXPROGRAM] = { 0 };
	Arena *arena;
	Program *prog = NULL;
	FeSig sig = { 0 };
	int rc = parse_args(argc, argv, &o), nsrc = 0;

	if (rc)
		return rc;
	phases_start(&o);
	arena = arena_new();
	rc = 1;
	phase("read", o.files[0]);
	for (; nsrc < o.nfiles; nsrc++)
		if (!fe_load(o.files[nsrc], &src[nsrc]))
			goto done;
	if (o.signature && !read_signature(arena, o.signature, &sig))
		goto done;
	if (!(prog = fe_read_program(arena, src, o.nfiles, o.signature ? &sig : NULL)))
		goto done;
	phase("passes", NULL);
	for (uint32_t i = 0; i < prog->nfns; i++)
		prog->fns[i] = pass_pipeline(prog->fns[i], &o.passes);
	count_kernels(prog);
	if (o.interpret) {
		phase("interpret", o.inputs);
		rc = interpret(prog, &o);
	} else {
		rc = emit(prog, src, &o);
	}
done:
	phases_end();
	arena_free(arena);
	for (int i = 0; i < nsrc; i++)
		fe_unload(&src[i]);
	return rc;
}
