/* fp8run — run an fp8cc program on safetensors inputs.
 *
 *   fp8run PROGRAM.ptx --inputs IN.safetensors -o OUT.safetensors
 *          [--device N] [--iters N [--wall [--host-group N]] [--cold]] [--warmup N] [--no-graph] [--json]
 *   fp8run PROGRAM.ptx --json          (the signature only; no GPU needed)
 *
 * Loads the program with libfp8rt, binds each program input to the tensor of
 * the same name in IN (dtype and shape must match), copies them to the
 * device, runs the plan once, and writes every output under the program's
 * name for it to OUT (- is standard output). A program of several functions
 * (a training step's forward and backward) runs each once, in order, with
 * the program's default state; its tensors are named FUNCTION/NAME in both
 * files, as fp8cc --interpret names them. With --iters N it then times N
 * more runs of each function (after --warmup runs, 3 by default) with CUDA
 * events and prints the median and the minimum in microseconds; --json
 * prints the signature and the timings (every run) as one JSON object
 * instead. A program that calls externs gets them from --externs LIB.so
 * (repeatable): a shared library whose fp8run_register_externs(ctx)
 * registers them (fp8rt_register_extern). Options are parsed with
 * getopt_long. Exit status: 0 ok, 1 error, 2 usage.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dims.h"
#include "fp8rt.h"
#include "safetensors.h"
#include "signature.h"

#define MAXLIBS 8

typedef struct {
	const char *program, *inputs, *output;
	int device, iters, warmup, graphs, json, check, wall, host_group, cold, in_place;
	int ranks, rank;           /* --ranks, --rank: a communicator for collectives (ranks 0: none) */
	const char *nccl_id;       /* --nccl-id: where rank 0 leaves the id the others read */
	const char *libs[MAXLIBS]; /* --externs */
	int nlibs;
} Options;

/* Device tensors of one side of a function's signature. */
typedef struct {
	int n;
	fp8rt_tensor *t;
	fp8rt_tensor_info *info;
	size_t *bytes;
	char **names; /* in the files: NAME, or FUNCTION/NAME */
	int *lent;    /* outputs: given the memory of the input they update (--in-place) */
} Side;

typedef struct {
	Side in, out;
} FnSides;

/* safetensors' spelling of each dtype; fp8rt_dtype numbers the rows of
 * common/dtypes.def from 1 (runtime/plan.c checks it) */
static const char *const st_names[] = {
	"?",
#define DTYPE(id, ir, thunder, thunder_long, torch, st, bits, kind) st,
#include "dtypes.def"
#undef DTYPE
};

static const char usage_text[] =
	"usage: fp8run PROGRAM.ptx --inputs IN.safetensors -o OUT.safetensors\n"
	"              [--device N] [--iters N [--wall [--host-group N]] [--cold]] [--warmup N]\n"
	"              [--no-graph] [--in-place] [--json] [--ranks N --rank R [--nccl-id FILE]]\n"
	"       fp8run PROGRAM.ptx --json\n"
	"       fp8run PROGRAM.ptx --check\n"
	"\n"
	"Runs an fp8cc program once on the inputs of the same names and writes its\n"
	"outputs; with --iters, times that many more runs. The tensors of a program\n"
	"of several functions are named FUNCTION/NAME; each function runs in order.\n"
	"\n"
	"  -i, --inputs=FILE   safetensors inputs, matched to the program's by name\n"
	"  -o, --output=FILE   write the outputs (safetensors; - is standard output)\n"
	"  --device=N          the CUDA device (default 0)\n"
	"  --iters=N           time N runs with CUDA events (median and minimum)\n"
	"  --warmup=N          untimed runs before them (default 3)\n"
	"  --no-graph          run the plan step by step, without CUDA-graph replay\n"
	"  --in-place          give each output that updates an input in place, where the\n"
	"                      program allows it (fp8rt_function_output_updates), that\n"
	"                      input's memory: the run writes the input, and the output\n"
	"                      written to the file is read from there\n"
	"  --wall              with --iters, also the host's clock: a run's share of N runs\n"
	"                      back to back and one synchronize (wall_us), and the host's\n"
	"                      time inside one call, timed --host-group calls (default\n"
	"                      64) at a time between synchronizes (host_us); each the\n"
	"                      best of 5 rounds\n"
	"  --cold              with --iters, also each run's own time on an emptied L2: N\n"
	"                      runs, each after a 256 MiB memset, timed with CUDA events\n"
	"                      (cold_us, the median)\n"
	"  --ranks=N           run a program with collectives as one of N ranks (NCCL):\n"
	"  --rank=R            this process's rank; every rank runs the same program on\n"
	"                      its own inputs\n"
	"  --nccl-id=FILE      rank 0 writes the communicator's id there, the others wait\n"
	"                      for it (not needed for --ranks 1)\n"
	"  --externs=LIB.so    a library whose fp8run_register_externs(ctx) registers the\n"
	"                      externs the program calls (repeatable)\n"
	"  --json              print the signature and the timings (every run) as JSON;\n"
	"                      alone, the signature only, without a GPU\n"
	"  --check             read and check the program's plan as loading would, without a GPU\n"
	"  -h, --help          this text\n"
	"  --version           the versions of fp8run and libfp8rt\n"
	"\n"
	"Exit status: 0 success, 1 an error, 2 a usage error.\n";

static const char *
st_name(fp8rt_dtype dt)
{
	return (unsigned)dt < sizeof st_names / sizeof st_names[0] ? st_names[dt] : "?";
}

static void
usage(const char *fmt, ...)
{
	va_list ap;
	fputs("fp8run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nfp8run: see 'fp8run --help'\n", stderr);
	exit(2);
}

static int
parse_count(const char *s, const char *opt, int min)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < min || v > 1000000000)
		usage("%s wants an integer >= %d, not '%s'", opt, min, s);
	return (int)v;
}

enum {
	OPT_DEVICE = 256,
	OPT_ITERS,
	OPT_WARMUP,
	OPT_NO_GRAPH,
	OPT_JSON,
	OPT_VERSION,
	OPT_CHECK,
	OPT_EXTERNS,
	OPT_WALL,
	OPT_HOST_GROUP,
	OPT_COLD,
	OPT_RANKS,
	OPT_RANK,
	OPT_NCCL_ID,
	OPT_IN_PLACE
};

static const struct option longopts[] = {
	{ "inputs", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "iters", required_argument, NULL, OPT_ITERS },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "no-graph", no_argument, NULL, OPT_NO_GRAPH },
	{ "wall", no_argument, NULL, OPT_WALL },
	{ "host-group", required_argument, NULL, OPT_HOST_GROUP },
	{ "cold", no_argument, NULL, OPT_COLD },
	{ "ranks", required_argument, NULL, OPT_RANKS },
	{ "rank", required_argument, NULL, OPT_RANK },
	{ "nccl-id", required_argument, NULL, OPT_NCCL_ID },
	{ "in-place", no_argument, NULL, OPT_IN_PLACE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "externs", required_argument, NULL, OPT_EXTERNS },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* "0.1.0" of a version number MAJOR * 10000 + MINOR * 100 + PATCH */
static const char *
version_str(int v, char *buf, size_t n)
{
	snprintf(buf, n, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	return buf;
}

static void
print_version(void)
{
	char lib[32];
	int lo, hi;
	fp8rt_plan_versions(&lo, &hi);
	printf("fp8run %s (libfp8rt %s, plan versions %d..%d)\n", FP8CC_VERSION,
		version_str(fp8rt_version(), lib, sizeof lib), lo, hi);
}

/* getopt_long's '?': an unknown option, or a value given to a flag */
static void
bad_option(const char *arg)
{
	if (optopt && !strncmp(arg, "--", 2))
		usage("option '%.*s' takes no value", (int)strcspn(arg, "="), arg);
	if (optopt)
		usage("unknown option '-%c'", optopt);
	usage("unknown option '%s'", arg);
}

static Options
parse_args(int argc, char **argv)
{
	Options o = { .warmup = 3, .graphs = 1, .host_group = 64 };
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':            o.inputs = optarg; break;
		case 'o':            o.output = optarg; break;
		case OPT_DEVICE:     o.device = parse_count(optarg, "--device", 0); break;
		case OPT_ITERS:      o.iters = parse_count(optarg, "--iters", 1); break;
		case OPT_WARMUP:     o.warmup = parse_count(optarg, "--warmup", 0); break;
		case OPT_NO_GRAPH:   o.graphs = 0; break;
		case OPT_WALL:       o.wall = 1; break;
		case OPT_HOST_GROUP: o.host_group = parse_count(optarg, "--host-group", 1); break;
		case OPT_COLD:       o.cold = 1; break;
		case OPT_RANKS:      o.ranks = parse_count(optarg, "--ranks", 1); break;
		case OPT_RANK:       o.rank = parse_count(optarg, "--rank", 0); break;
		case OPT_NCCL_ID:    o.nccl_id = optarg; break;
		case OPT_IN_PLACE:   o.in_place = 1; break;
		case OPT_JSON:       o.json = 1; break;
		case OPT_CHECK:      o.check = 1; break;
		case OPT_EXTERNS:
			if (o.nlibs == MAXLIBS)
				usage("more than %d --externs", MAXLIBS);
			o.libs[o.nlibs++] = optarg;
			break;
		case 'h':         fputs(usage_text, stdout); exit(0);
		case OPT_VERSION: print_version(); exit(0);
		case ':':         usage("option '%s' needs a value", argv[optind - 1]); break;
		default:          bad_option(argv[optind - 1]); break;
		}
	}
	if (optind == argc)
		usage("no program given");
	if (argc - optind > 1)
		usage("more than one program given ('%s')", argv[optind + 1]);
	o.program = argv[optind];
	if (!o.output && !o.iters && !o.json && !o.check)
		usage("nothing to do: give -o OUT.safetensors, --iters N or --json");
	if (o.wall && !o.iters)
		usage("--wall times runs: give --iters N too");
	if (o.cold && !o.iters)
		usage("--cold times runs: give --iters N too");
	if (o.rank && o.rank >= o.ranks)
		usage("--rank %d wants --ranks above it", o.rank);
	if (o.ranks > 1 && !o.nccl_id)
		usage("--ranks %d: give --nccl-id FILE, where rank 0 leaves the communicator's id", o.ranks);
	if (o.output && !strcmp(o.output, "-") && (o.iters || o.json))
		usage("-o - and %s both want standard output", o.json ? "--json" : "--iters");
	return o;
}

static int
fail(const char *what, const char *msg)
{
	fprintf(stderr, "fp8run: %s: %s\n", what, msg);
	return 1;
}

static size_t
numel_bytes(const fp8rt_tensor_info *info)
{
	size_t n = fp8rt_dtype_size(info->dtype);
	for (int d = 0; d < info->rank; d++)
		n *= (size_t)info->dims[d];
	return n;
}

/* ---- the signature as JSON (tools/signature.h) ---------------------------- */

/* The signature object of prog. The plan of version 1 names no function:
 * its one function's name is null. */
static json_t *
signature(const fp8rt_program *prog, const char *path)
{
	int nf = fp8rt_program_function_count(prog), total = 0;
	for (int f = 0; f < nf; f++) {
		int nin = 0, nout = 0;
		fp8rt_function_io_count(prog, f, &nin, &nout);
		total += nin + nout;
	}
	fp8rt_tensor_info *info = calloc((size_t)total + 1, sizeof *info);
	SigTensor *t = calloc((size_t)total + 1, sizeof *t);
	SigFunc *fns = calloc((size_t)nf + 1, sizeof *fns);
	json_t *j = NULL;
	char stem[256];
	if (info && t && fns) {
		int k = 0;
		for (int f = 0; f < nf; f++) {
			int nin = 0, nout = 0;
			fp8rt_function_io_count(prog, f, &nin, &nout);
			for (int i = 0; i < nin + nout; i++) {
				if (i < nin)
					fp8rt_function_input(prog, f, i, &info[k + i]);
				else
					fp8rt_function_output(prog, f, i - nin, &info[k + i]);
				t[k + i] = (SigTensor){ info[k + i].name, fp8rt_dtype_name(info[k + i].dtype),
					info[k + i].rank, info[k + i].dims };
			}
			fns[f] = (SigFunc){ fp8rt_program_plan_version(prog) > 1 ? fp8rt_program_function_name(prog, f)
										 : NULL,
				t + k, t + k + nin, nin, nout };
			k += nin + nout;
		}
		j = sig_json(sig_stem(path, stem, sizeof stem), fp8rt_program_target(prog), fns, nf);
	}
	free(info);
	free(t);
	free(fns);
	return j;
}

/* {"signature": ..., "device": ..., "timing": ...} on stdout; takes the references */
static int
print_json(json_t *sig, json_t *device, json_t *timing)
{
	json_t *j = json_pack("{s:o, s:o, s:o}", "signature", sig ? sig : json_null(), "device",
		device ? device : json_null(), "timing", timing ? timing : json_null());
	int rc = j && sig_print(stdout, j) == 0 ? 0 : fail("printing JSON", "out of memory");
	json_decref(j);
	return rc;
}

/* --json alone: read the plan, no device */
static int
signature_only(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n = -1;
	fp8rt_program *prog = NULL;
	if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
		(buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n)
		n = -1;
	if (f)
		fclose(f);
	if (!f || n < 0 || !buf) {
		char msg[512];
		snprintf(msg, sizeof msg, "cannot read %s%s%s", path, f ? "" : ": ", f ? "" : strerror(errno));
		free(buf);
		return fail("reading", msg);
	}
	fp8rt_status st = fp8rt_program_read(buf, (size_t)n, path, &prog);
	free(buf);
	if (st != FP8RT_OK)
		return fail("loading", fp8rt_last_error(NULL));
	int rc = print_json(signature(prog, path), NULL, NULL);
	fp8rt_program_destroy(prog);
	return rc;
}

/* ---- running ------------------------------------------------------------- */

/* Allocates the device tensors of one side of function f's signature;
 * `prefix`: name them FUNCTION/NAME. */
static int
alloc_side(fp8rt_context *ctx, const fp8rt_program *prog, int f, int outputs, int prefix, Side *s)
{
	int nin = 0, nout = 0;
	fp8rt_function_io_count(prog, f, &nin, &nout);
	int n = s->n = outputs ? nout : nin;
	s->t = calloc((size_t)n + 1, sizeof *s->t);
	s->info = calloc((size_t)n + 1, sizeof *s->info);
	s->bytes = calloc((size_t)n + 1, sizeof *s->bytes);
	s->names = calloc((size_t)n + 1, sizeof *s->names);
	s->lent = calloc((size_t)n + 1, sizeof *s->lent);
	if (!s->t || !s->info || !s->bytes || !s->names || !s->lent)
		return fail("out of memory", "host");
	for (int i = 0; i < n; i++) {
		fp8rt_tensor_info *info = &s->info[i];
		void *p = NULL;
		fp8rt_status st =
			outputs ? fp8rt_function_output(prog, f, i, info) : fp8rt_function_input(prog, f, i, info);
		if (st != FP8RT_OK)
			return fail("signature", fp8rt_last_error(NULL));
		const char *fn = prefix ? fp8rt_program_function_name(prog, f) : "";
		size_t len = strlen(fn) + strlen(info->name) + 2;
		if (!(s->names[i] = malloc(len)))
			return fail("out of memory", "host");
		snprintf(s->names[i], len, "%s%s%s", fn, prefix ? "/" : "", info->name);
		s->bytes[i] = numel_bytes(info);
		if (s->bytes[i] && fp8rt_malloc(ctx, s->bytes[i], &p) != FP8RT_OK)
			return fail("device memory", fp8rt_last_error(ctx));
		s->t[i] = fp8rt_tensor_dense(p, info->dtype, info->rank, info->dims);
	}
	return 0;
}

static void
free_side(fp8rt_context *ctx, Side *s)
{
	for (int i = 0; s->t && i < s->n; i++)
		if (!s->lent || !s->lent[i])
			fp8rt_free(ctx, s->t[i].data);
	for (int i = 0; s->names && i < s->n; i++)
		free(s->names[i]);
	free(s->t);
	free(s->info);
	free(s->bytes);
	free(s->names);
	free(s->lent);
}

/* --in-place: the outputs the program lets share the memory of the input
 * they update are given it */
static int
lend_inputs(fp8rt_context *ctx, const fp8rt_program *prog, int f, FnSides *fs)
{
	for (int i = 0; i < fs->out.n; i++) {
		int in = -1, ok = 0;
		if (fp8rt_function_output_updates(prog, f, i, &in, &ok) != FP8RT_OK)
			return fail("signature", fp8rt_last_error(ctx));
		if (in < 0 || !ok)
			continue;
		fp8rt_free(ctx, fs->out.t[i].data);
		fs->out.t[i].data = fs->in.t[in].data;
		fs->out.lent[i] = 1;
	}
	return 0;
}

/* Binds program input i to the tensor of the same name in `in`. */
static int
upload_input(fp8rt_context *ctx, const StFile *in, const char *path, const Side *s, int i)
{
	const fp8rt_tensor_info *info = &s->info[i];
	const StTensor *t = st_find(in, s->names[i]);
	char msg[512], a[160], b[160];
	if (!t) {
		snprintf(msg, sizeof msg, "input %d '%s' is not in %s", i, s->names[i], path);
		return fail("inputs", msg);
	}
	dims_str(t->dims, t->rank, ",", a, sizeof a);
	dims_str(info->dims, info->rank, ",", b, sizeof b);
	if (strcmp(t->dtype, st_name(info->dtype)) != 0 || t->rank != info->rank ||
		memcmp(t->dims, info->dims, (size_t)info->rank * sizeof *info->dims) != 0) {
		snprintf(msg, sizeof msg, "input %d '%s': %s has %s%s, the program wants %s%s (%s)", i, s->names[i],
			path, t->dtype, a, st_name(info->dtype), b, fp8rt_dtype_name(info->dtype));
		return fail("inputs", msg);
	}
	if (fp8rt_memcpy_htod(ctx, s->t[i].data, t->data, s->bytes[i]) != FP8RT_OK)
		return fail("copying inputs", fp8rt_last_error(ctx));
	return 0;
}

/* Every function's outputs into one file. */
static int
write_outputs(fp8rt_context *ctx, const FnSides *fs, int nf, const char *path)
{
	int n = 0, k = 0, rc = 0;
	for (int f = 0; f < nf; f++)
		n += fs[f].out.n;
	StTensor *ts = calloc((size_t)n + 1, sizeof *ts);
	char err[512];
	if (!ts)
		return fail("out of memory", "host");
	for (int f = 0; f < nf && rc == 0; f++) {
		const Side *s = &fs[f].out;
		for (int i = 0; i < s->n && rc == 0; i++, k++) {
			ts[k].name = s->names[i];
			snprintf(ts[k].dtype, sizeof ts[k].dtype, "%s", st_name(s->info[i].dtype));
			ts[k].rank = s->info[i].rank;
			memcpy(ts[k].dims, s->info[i].dims, sizeof ts[k].dims);
			ts[k].nbytes = s->bytes[i];
			ts[k].data = malloc(s->bytes[i] + 1);
			if (!ts[k].data)
				rc = fail("out of memory", "host");
			else if (fp8rt_memcpy_dtoh(ctx, ts[k].data, s->t[i].data, s->bytes[i]) != FP8RT_OK)
				rc = fail("copying outputs", fp8rt_last_error(ctx));
		}
	}
	if (rc == 0 &&
		(strcmp(path, "-") ? st_write(path, ts, n, err, sizeof err)
				   : st_fwrite(stdout, "<stdout>", ts, n, err, sizeof err)) != 0)
		rc = fail("writing outputs", err);
	for (int i = 0; i < n; i++)
		free(ts[i].data);
	free(ts);
	return rc;
}

static int
cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* the median of v[0..n-1], which it sorts */
static float
median_of(float *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_float);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* microseconds, to 0.01 */
static json_t *
us_json(float us)
{
	return json_real((double)(long long)((double)us * 100 + 0.5) / 100);
}

static double
now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* --wall: microseconds a run by the host's clock, n runs back to back and
 * one synchronize, the best of 5 rounds; < 0 on a failure (said) */
static double
wall_us(fp8rt_context *ctx, fp8rt_program *prog, int f, const FnSides *fs, int n)
{
	double best = -1;
	for (int round = 0; round < 5; round++) {
		double t0 = now_us();
		for (int i = 0; i < n; i++)
			if (fp8rt_run_function(prog, f, NULL, fs->in.t, fs->in.n, fs->out.t, fs->out.n, NULL) !=
				FP8RT_OK)
				return fail("running", fp8rt_last_error(ctx)), -1;
		if (fp8rt_synchronize(ctx, NULL) != FP8RT_OK)
			return fail("running", fp8rt_last_error(ctx)), -1;
		double us = (now_us() - t0) / n;
		best = best < 0 || us < best ? us : best;
	}
	return best;
}

/* --wall also: microseconds the host spends in one call of
 * fp8rt_run_function, the mean over n calls timed in groups of `group`
 * with a synchronize between groups (outside the timed part, so the
 * launch queue never fills and the GPU's time is not in it), the best of 5
 * rounds; < 0 on a failure (said). A group of 64 keeps what the first calls
 * after a synchronize cost (a host that waited) from weighing on the mean;
 * tests/gpu/test_python.py times the Python call the same way. */
static double
host_us(fp8rt_context *ctx, fp8rt_program *prog, int f, const FnSides *fs, int n, int group)
{
	double best = -1;
	for (int round = 0; round < 5; round++) {
		double spent = 0;
		int calls = 0;
		while (calls < n) {
			if (fp8rt_synchronize(ctx, NULL) != FP8RT_OK)
				return fail("running", fp8rt_last_error(ctx)), -1;
			double t0 = now_us();
			for (int i = 0; i < group; i++, calls++)
				if (fp8rt_run_function(prog, f, NULL, fs->in.t, fs->in.n, fs->out.t, fs->out.n, NULL) !=
					FP8RT_OK)
					return fail("running", fp8rt_last_error(ctx)), -1;
			spent += now_us() - t0;
		}
		double us = spent / calls;
		best = best < 0 || us < best ? us : best;
	}
	if (fp8rt_synchronize(ctx, NULL) != FP8RT_OK)
		return fail("running", fp8rt_last_error(ctx)), -1;
	return best;
}

/* --cold: a run's own time when its inputs are not in L2, as where the
 * work before it moved other data: n runs, each timed with CUDA events
 * after a memset of 256 MiB (twice the largest L2, a B200's 126 MB), the
 * median; < 0 on a failure (said). fp8rt_memset returns once the memset is
 * done, so each run also counts the start of its launch, as the event-timed
 * median does: the two differ by the L2's state. */
static double
cold_us(fp8rt_context *ctx, fp8rt_program *prog, int f, const FnSides *fs, int n)
{
	const size_t bytes = (size_t)256 << 20;
	void *buf = NULL;
	float *us = calloc((size_t)n, sizeof *us);
	double median = -1;
	if (!us)
		return fail("out of memory", "host"), -1;
	if (fp8rt_malloc(ctx, bytes, &buf) != FP8RT_OK) {
		fail("--cold", fp8rt_last_error(ctx));
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (fp8rt_memset(ctx, buf, i & 0xff, bytes) != FP8RT_OK ||
			fp8rt_time_function(prog, f, NULL, fs->in.t, fs->in.n, fs->out.t, fs->out.n, NULL, 0, 1,
				&us[i]) != FP8RT_OK) {
			fail("timing", fp8rt_last_error(ctx));
			goto out;
		}
	median = median_of(us, n);
out:
	if (buf)
		fp8rt_free(ctx, buf);
	free(us);
	return median;
}

/* One function's timings: median and minimum (and with --wall the host's
 * clock a run), and with --json the object *timing (name: the function's,
 * or NULL for a program of one). */
static int
time_function(fp8rt_context *ctx, fp8rt_program *prog, int f, const FnSides *fs, const Options *o, const char *name,
	float *median, float *min, json_t **timing)
{
	int n = o->iters;
	float *us = calloc((size_t)n, sizeof *us), *sorted = calloc((size_t)n, sizeof *sorted);
	if (!us || !sorted) {
		free(us), free(sorted);
		return fail("out of memory", "host");
	}
	if (fp8rt_time_function(prog, f, NULL, fs->in.t, fs->in.n, fs->out.t, fs->out.n, NULL, o->warmup, n, us) !=
		FP8RT_OK) {
		free(us), free(sorted);
		return fail("timing", fp8rt_last_error(NULL));
	}
	memcpy(sorted, us, (size_t)n * sizeof *us);
	*median = median_of(sorted, n);
	*min = sorted[0];
	double wall = o->wall ? wall_us(ctx, prog, f, fs, n) : 0;
	double host = o->wall && wall >= 0 ? host_us(ctx, prog, f, fs, n, o->host_group) : 0;
	double cold = o->cold && wall >= 0 && host >= 0 ? cold_us(ctx, prog, f, fs, n) : 0;
	if (wall < 0 || host < 0 || cold < 0) {
		free(us), free(sorted);
		return 1;
	}
	if (o->json) {
		json_t *runs = json_array();
		for (int i = 0; runs && i < n; i++)
			json_array_append_new(runs, us_json(us[i]));
		*timing = name
			? json_pack("{s:s, s:o, s:o, s:o*}", "name", name, "median_us", us_json(*median), "min_us",
				  us_json(*min), "runs_us", runs)
			: json_pack("{s:b, s:i, s:i, s:o, s:o, s:o*}", "graphs", o->graphs, "warmup", o->warmup,
				  "iters", n, "median_us", us_json(*median), "min_us", us_json(*min), "runs_us", runs);
		if (*timing && o->wall) {
			json_object_set_new(*timing, "wall_us", us_json((float)wall));
			json_object_set_new(*timing, "host_us", us_json((float)host));
		}
		if (*timing && o->cold)
			json_object_set_new(*timing, "cold_us", us_json((float)cold));
	} else {
		printf("fp8run: %s%s%s: %d runs (graphs %s): median %.2f us, min %.2f us\n", o->program,
			name ? ": " : "", name ? name : "", n, o->graphs ? "on" : "off", *median, *min);
		if (o->wall)
			printf("fp8run: %s%s%s: %.2f us a run by the host's clock, back to back; %.2f us of the "
			       "host's in each call\n",
				o->program, name ? ": " : "", name ? name : "", wall, host);
		if (o->cold)
			printf("fp8run: %s%s%s: %.2f us a run on an emptied L2 (median)\n", o->program,
				name ? ": " : "", name ? name : "", cold);
	}
	free(us);
	free(sorted);
	return 0;
}

/* The timings of every function: for a program of several, each one's and
 * the step's (the sums of the medians and of the minimums). */
static int
time_runs(fp8rt_context *ctx, fp8rt_program *prog, const FnSides *fs, int nf, const Options *o, json_t **timing)
{
	float median, min, step_median = 0, step_min = 0;
	json_t *fns = nf > 1 && o->json ? json_array() : NULL;
	for (int f = 0; f < nf; f++) {
		json_t *t = NULL;
		int rc = time_function(ctx, prog, f, &fs[f], o, nf > 1 ? fp8rt_program_function_name(prog, f) : NULL,
			&median, &min, o->json ? &t : NULL);
		if (rc) {
			json_decref(fns);
			return rc;
		}
		step_median += median, step_min += min;
		if (nf == 1 && o->json)
			*timing = t;
		else if (fns)
			json_array_append_new(fns, t);
	}
	if (nf > 1 && o->json)
		*timing = json_pack("{s:b, s:i, s:i, s:o, s:o, s:o}", "graphs", o->graphs, "warmup", o->warmup, "iters",
			o->iters, "median_us", us_json(step_median), "min_us", us_json(step_min), "functions", fns);
	else if (nf > 1)
		printf("fp8run: %s: the step (every function once): median %.2f us, min %.2f us\n", o->program,
			step_median, step_min);
	return 0;
}

static int
run(fp8rt_context *ctx, const Options *o, const StFile *in)
{
	fp8rt_program *prog = NULL;
	FnSides *fs = NULL;
	json_t *timing = NULL;
	fp8rt_device_props props;
	int nf = 0, rc = 0, nin = 0;
	if (fp8rt_program_load_file(ctx, o->program, &prog) != FP8RT_OK)
		return fail("loading", fp8rt_last_error(ctx));
	nf = fp8rt_program_function_count(prog);
	if (!(fs = calloc((size_t)nf, sizeof *fs))) {
		rc = fail("out of memory", "host");
		goto done;
	}
	if (o->graphs == 0)
		fp8rt_program_set_graphs(prog, 0);
	for (int f = 0; f < nf && rc == 0; f++) {
		if (!(rc = alloc_side(ctx, prog, f, 0, nf > 1, &fs[f].in)))
			rc = alloc_side(ctx, prog, f, 1, nf > 1, &fs[f].out);
		if (rc == 0 && o->in_place)
			rc = lend_inputs(ctx, prog, f, &fs[f]);
		nin += fs[f].in.n;
	}
	if (rc == 0 && nin && !o->inputs)
		rc = fail("inputs", "the program has inputs: give --inputs IN.safetensors");
	for (int f = 0; f < nf && rc == 0; f++)
		for (int i = 0; i < fs[f].in.n && rc == 0; i++)
			rc = upload_input(ctx, in, o->inputs, &fs[f].in, i);
	for (int f = 0; f < nf && rc == 0; f++)
		if (fp8rt_run_function(prog, f, NULL, fs[f].in.t, fs[f].in.n, fs[f].out.t, fs[f].out.n, NULL) !=
			FP8RT_OK)
			rc = fail("running", fp8rt_last_error(ctx));
	if (rc == 0 && fp8rt_synchronize(ctx, NULL) != FP8RT_OK)
		rc = fail("running", fp8rt_last_error(ctx));
	if (rc == 0 && o->output)
		rc = write_outputs(ctx, fs, nf, o->output);
	if (rc == 0 && o->iters)
		rc = time_runs(ctx, prog, fs, nf, o, &timing);
	if (rc == 0 && o->json)
		rc = print_json(signature(prog, o->program),
			fp8rt_device_properties(ctx, &props) == FP8RT_OK ? json_string(props.name) : NULL, timing);
done:
	for (int f = 0; fs && f < nf; f++) {
		free_side(ctx, &fs[f].in);
		free_side(ctx, &fs[f].out);
	}
	free(fs);
	fp8rt_program_destroy(prog);
	return rc;
}

/* The plan read and checked as loading would, without a device. */
static int
check(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	if (!f)
		return fail("checking", "cannot open the program");
	for (size_t got = 1; got;) {
		if (n == cap) {
			char *nt = realloc(text, cap = cap ? 2 * cap : 1 << 16);
			if (!nt) {
				rc = fail("checking", "out of memory");
				break;
			}
			text = nt;
		}
		n += got = fread(text + n, 1, cap - n, f);
	}
	fclose(f);
	if (rc == 0 && fp8rt_program_check(text, n, path) != FP8RT_OK)
		rc = fail("checking", fp8rt_last_error(NULL));
	free(text);
	return rc;
}

/* --externs LIB.so: its fp8run_register_externs(ctx) registers the externs;
 * the library stays loaded until the process ends */
static int
load_externs(fp8rt_context *ctx, const char *path)
{
	char msg[1024];
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return fail("externs", dlerror());
	fp8rt_status (*reg)(fp8rt_context *) =
		(fp8rt_status (*)(fp8rt_context *))(uintptr_t)dlsym(h, "fp8run_register_externs");
	if (!reg) {
		snprintf(msg, sizeof msg, "%s has no fp8run_register_externs(fp8rt_context *)", path);
		return fail("externs", msg);
	}
	if (reg(ctx) != FP8RT_OK) {
		snprintf(msg, sizeof msg, "%s: fp8run_register_externs failed: %s", path, fp8rt_last_error(ctx));
		return fail("externs", msg);
	}
	return 0;
}

/* The communicator of --ranks: rank 0 makes the id and leaves it in
 * --nccl-id (written aside, then renamed, so no rank reads half of it);
 * the others wait up to two minutes for it. */
static int
join_comm(fp8rt_context *ctx, const Options *o)
{
	unsigned char id[FP8RT_NCCL_ID_BYTES];
	char tmp[4096];
	FILE *f;
	if (o->rank == 0) {
		if (fp8rt_nccl_unique_id(ctx, id) != FP8RT_OK)
			return fail("--ranks", fp8rt_last_error(ctx));
		if (o->nccl_id) {
			snprintf(tmp, sizeof tmp, "%s.%d", o->nccl_id, (int)getpid());
			if (!(f = fopen(tmp, "wb")) || fwrite(id, 1, sizeof id, f) != sizeof id || fclose(f) != 0 ||
				rename(tmp, o->nccl_id) != 0)
				return fail("--nccl-id", strerror(errno));
		}
	} else {
		for (int tries = 0;; tries++) {
			if ((f = fopen(o->nccl_id, "rb"))) {
				size_t n = fread(id, 1, sizeof id, f);
				fclose(f);
				if (n == sizeof id)
					break;
			}
			if (tries == 1200)
				return fail("--nccl-id", "rank 0 left no id there in two minutes");
			nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
		}
	}
	if (fp8rt_context_init_comm(ctx, id, o->ranks, o->rank) != FP8RT_OK)
		return fail("--ranks", fp8rt_last_error(ctx));
	return 0;
}

int
main(int argc, char **argv)
{
	Options o = parse_args(argc, argv);
	fp8rt_context *ctx = NULL;
	StFile in = { 0 };
	char err[512];
	if (o.check)
		return check(o.program);
	if (o.json && !o.output && !o.iters)
		return signature_only(o.program);
	fp8rt_status st = fp8rt_context_create(o.device, &ctx);
	if (st == FP8RT_NO_DRIVER || st == FP8RT_NO_DEVICE)
		return fail("no CUDA driver/device", fp8rt_last_error(NULL));
	if (st != FP8RT_OK)
		return fail("creating the context", fp8rt_last_error(NULL));
	if (o.ranks && join_comm(ctx, &o)) {
		fp8rt_context_destroy(ctx);
		return 1;
	}
	for (int i = 0; i < o.nlibs; i++)
		if (load_externs(ctx, o.libs[i])) {
			fp8rt_context_destroy(ctx);
			return 1;
		}
	if (o.inputs && st_read(o.inputs, &in, err, sizeof err) != 0) {
		fp8rt_context_destroy(ctx);
		return fail("reading inputs", err);
	}
	int rc = run(ctx, &o, &in);
	st_free(&in);
	if (fp8rt_context_destroy(ctx) != FP8RT_OK && rc == 0)
		rc = fail("closing", fp8rt_last_error(NULL));
	return rc;
}
