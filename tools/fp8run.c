/* fp8run — run an fp8cc program on safetensors inputs.
 *
 *   fp8run fused.ptx --inputs IN.safetensors -o OUT.safetensors
 *          [--device N] [--iters N] [--warmup N] [--no-graph]
 *
 * Loads the program with libfp8rt, binds each program input to the tensor of
 * the same name in IN (dtype and shape must match), copies them to the
 * device, runs the plan once, and writes every output under the program's
 * name for it to OUT. With --iters N it then times N more runs (after
 * --warmup runs, 3 by default) with CUDA events and prints the median and the
 * minimum in microseconds. Exit status: 0 ok, 1 error, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8rt.h"
#include "safetensors.h"

typedef struct {
    const char *program, *inputs, *output;
    int device, iters, warmup, graphs;
} Options;

/* Device tensors of one side of the signature. */
typedef struct {
    int n;
    fp8rt_tensor *t;
    fp8rt_tensor_info *info;
    size_t *bytes;
} Side;

static const struct {
    fp8rt_dtype dt;
    const char *st;
} dtype_map[] = {
    {FP8RT_BOOL, "BOOL"}, {FP8RT_U8, "U8"},   {FP8RT_I8, "I8"},     {FP8RT_I16, "I16"},
    {FP8RT_I32, "I32"},   {FP8RT_I64, "I64"}, {FP8RT_F16, "F16"},   {FP8RT_BF16, "BF16"},
    {FP8RT_F32, "F32"},   {FP8RT_F64, "F64"}, {FP8RT_F8E4M3FN, "F8_E4M3"}, {FP8RT_F8E5M2, "F8_E5M2"},
};

static const char *st_name(fp8rt_dtype dt)
{
    for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
        if (dtype_map[i].dt == dt)
            return dtype_map[i].st;
    return "?";
}

static void usage(const char *why)
{
    if (why)
        fprintf(stderr, "fp8run: %s\n", why);
    fprintf(stderr, "usage: fp8run PROGRAM.ptx --inputs IN.safetensors -o OUT.safetensors\n"
                    "              [--device N] [--iters N] [--warmup N] [--no-graph]\n");
    exit(2);
}

static int parse_count(const char *s, const char *opt, int min)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || v < min || v > 1000000000) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s wants an integer >= %d", opt, min);
        usage(msg);
    }
    return (int)v;
}

static Options parse_args(int argc, char **argv)
{
    Options o = {NULL, NULL, NULL, 0, 0, 3, 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--inputs") || !strcmp(a, "-i")) {
            if (!next)
                usage("--inputs wants a file");
            o.inputs = argv[++i];
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!next)
                usage("-o wants a file");
            o.output = argv[++i];
        } else if (!strcmp(a, "--device")) {
            o.device = parse_count(next, a, 0), i++;
        } else if (!strcmp(a, "--iters")) {
            o.iters = parse_count(next, a, 1), i++;
        } else if (!strcmp(a, "--warmup")) {
            o.warmup = parse_count(next, a, 0), i++;
        } else if (!strcmp(a, "--no-graph")) {
            o.graphs = 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(NULL);
        } else if (a[0] == '-' && a[1]) {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown option '%s'", a);
            usage(msg);
        } else if (!o.program) {
            o.program = a;
        } else {
            usage("more than one program given");
        }
    }
    if (!o.program)
        usage("no program given");
    if (!o.output && !o.iters)
        usage("nothing to do: give -o OUT.safetensors (or --iters N)");
    return o;
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "fp8run: %s: %s\n", what, msg);
    return 1;
}

static size_t numel_bytes(const fp8rt_tensor_info *info)
{
    size_t n = fp8rt_dtype_size(info->dtype);
    for (int d = 0; d < info->rank; d++)
        n *= (size_t)info->dims[d];
    return n;
}

static void dims_str(const int64_t *dims, int rank, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (used < n)
        snprintf(buf + used, n - used, "]");
}

/* Allocates the device tensors of one side of the signature. */
static int alloc_side(fp8rt_context *ctx, const fp8rt_program *prog, int outputs, int n, Side *s)
{
    s->n = n;
    s->t = calloc((size_t)n + 1, sizeof *s->t);
    s->info = calloc((size_t)n + 1, sizeof *s->info);
    s->bytes = calloc((size_t)n + 1, sizeof *s->bytes);
    if (!s->t || !s->info || !s->bytes)
        return fail("out of memory", "host");
    for (int i = 0; i < n; i++) {
        fp8rt_tensor_info *info = &s->info[i];
        void *p = NULL;
        fp8rt_status st = outputs ? fp8rt_program_output(prog, i, info) : fp8rt_program_input(prog, i, info);
        if (st != FP8RT_OK)
            return fail("signature", fp8rt_last_error(NULL));
        s->bytes[i] = numel_bytes(info);
        if (s->bytes[i] && fp8rt_malloc(ctx, s->bytes[i], &p) != FP8RT_OK)
            return fail("device memory", fp8rt_last_error(ctx));
        s->t[i] = fp8rt_tensor_dense(p, info->dtype, info->rank, info->dims);
    }
    return 0;
}

static void free_side(fp8rt_context *ctx, Side *s)
{
    for (int i = 0; s->t && i < s->n; i++)
        fp8rt_free(ctx, s->t[i].data);
    free(s->t);
    free(s->info);
    free(s->bytes);
}

/* Binds program input i to the tensor of the same name in `in`. */
static int upload_input(fp8rt_context *ctx, const StFile *in, const char *path, const Side *s, int i)
{
    const fp8rt_tensor_info *info = &s->info[i];
    const StTensor *t = st_find(in, info->name);
    char msg[512], a[160], b[160];
    if (!t) {
        snprintf(msg, sizeof msg, "input %d '%s' is not in %s", i, info->name, path);
        return fail("inputs", msg);
    }
    dims_str(t->dims, t->rank, a, sizeof a);
    dims_str(info->dims, info->rank, b, sizeof b);
    if (strcmp(t->dtype, st_name(info->dtype)) != 0 || t->rank != info->rank ||
        memcmp(t->dims, info->dims, (size_t)info->rank * sizeof *info->dims) != 0) {
        snprintf(msg, sizeof msg, "input %d '%s': %s has %s%s, the program wants %s%s (%s)", i, info->name, path,
                 t->dtype, a, st_name(info->dtype), b, fp8rt_dtype_name(info->dtype));
        return fail("inputs", msg);
    }
    if (fp8rt_memcpy_htod(ctx, s->t[i].data, t->data, s->bytes[i]) != FP8RT_OK)
        return fail("copying inputs", fp8rt_last_error(ctx));
    return 0;
}

static int write_outputs(fp8rt_context *ctx, const Side *s, const char *path)
{
    StTensor *ts = calloc((size_t)s->n + 1, sizeof *ts);
    char err[512];
    int rc = 0;
    if (!ts)
        return fail("out of memory", "host");
    for (int i = 0; i < s->n && rc == 0; i++) {
        ts[i].name = (char *)s->info[i].name;
        snprintf(ts[i].dtype, sizeof ts[i].dtype, "%s", st_name(s->info[i].dtype));
        ts[i].rank = s->info[i].rank;
        memcpy(ts[i].dims, s->info[i].dims, sizeof ts[i].dims);
        ts[i].nbytes = s->bytes[i];
        ts[i].data = malloc(s->bytes[i] + 1);
        if (!ts[i].data)
            rc = fail("out of memory", "host");
        else if (fp8rt_memcpy_dtoh(ctx, ts[i].data, s->t[i].data, s->bytes[i]) != FP8RT_OK)
            rc = fail("copying outputs", fp8rt_last_error(ctx));
    }
    if (rc == 0 && st_write(path, ts, s->n, err, sizeof err) != 0)
        rc = fail("writing outputs", err);
    for (int i = 0; i < s->n; i++)
        free(ts[i].data);
    free(ts);
    return rc;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int time_runs(fp8rt_program *prog, const Side *in, const Side *out, const Options *o)
{
    float *us = calloc((size_t)o->iters, sizeof *us);
    if (!us)
        return fail("out of memory", "host");
    if (fp8rt_time_runs(prog, in->t, in->n, out->t, out->n, NULL, o->warmup, o->iters, us) != FP8RT_OK) {
        free(us);
        return fail("timing", fp8rt_last_error(NULL));
    }
    qsort(us, (size_t)o->iters, sizeof *us, cmp_float);
    float median = o->iters % 2 ? us[o->iters / 2] : (us[o->iters / 2 - 1] + us[o->iters / 2]) / 2;
    printf("fp8run: %s: %d runs (graphs %s): median %.2f us, min %.2f us\n", o->program, o->iters,
           o->graphs ? "on" : "off", median, us[0]);
    free(us);
    return 0;
}

static int run(fp8rt_context *ctx, const Options *o, const StFile *in)
{
    fp8rt_program *prog = NULL;
    Side si = {0}, so = {0};
    int nin, nout, rc;
    if (fp8rt_program_load_file(ctx, o->program, &prog) != FP8RT_OK)
        return fail("loading", fp8rt_last_error(ctx));
    fp8rt_program_io_count(prog, &nin, &nout);
    if (nin && !o->inputs) {
        rc = fail("inputs", "the program has inputs: give --inputs IN.safetensors");
        goto done;
    }
    if (o->graphs == 0)
        fp8rt_program_set_graphs(prog, 0);
    if ((rc = alloc_side(ctx, prog, 0, nin, &si)) || (rc = alloc_side(ctx, prog, 1, nout, &so)))
        goto done;
    for (int i = 0; i < nin && rc == 0; i++)
        rc = upload_input(ctx, in, o->inputs, &si, i);
    if (rc)
        goto done;
    if (fp8rt_run(prog, si.t, nin, so.t, nout, NULL) != FP8RT_OK || fp8rt_synchronize(ctx, NULL) != FP8RT_OK) {
        rc = fail("running", fp8rt_last_error(ctx));
        goto done;
    }
    if (o->output && (rc = write_outputs(ctx, &so, o->output)))
        goto done;
    if (o->iters)
        rc = time_runs(prog, &si, &so, o);
done:
    free_side(ctx, &si);
    free_side(ctx, &so);
    fp8rt_program_destroy(prog);
    return rc;
}

int main(int argc, char **argv)
{
    Options o = parse_args(argc, argv);
    fp8rt_context *ctx = NULL;
    StFile in = {0};
    char err[512];
    fp8rt_status st = fp8rt_context_create(o.device, &ctx);
    if (st == FP8RT_NO_DRIVER || st == FP8RT_NO_DEVICE)
        return fail("no CUDA driver/device", fp8rt_last_error(NULL));
    if (st != FP8RT_OK)
        return fail("creating the context", fp8rt_last_error(NULL));
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
