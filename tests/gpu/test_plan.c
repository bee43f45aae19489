/* test_plan.c — the plan parser (runtime/plan.c), without a GPU: the example
 * of docs/plan.md, the test program's plan, a corpus of bad plans (each with
 * its status, a message substring and the line it names), and robustness on
 * truncated, mutated and binary input (run under ASan to catch over-reads). */
#include <stdlib.h>

#include "plan.h"
#include "rt_test.h"
/* after criterion.h (rt_test.h): it redefines Test otherwise */
#include <criterion/parameterized.h>
#include "test_data.h"

static char err[1024];

/* The first ``` block of docs/plan.md after `heading` ("" for the first
 * of all). malloc'd. */
static char *
docs_block(const char *heading)
{
	FILE *f = fopen(FP8RT_DOCS_PLAN, "rb");
	cr_assert(f, "cannot open %s", FP8RT_DOCS_PLAN);
	static char doc[1 << 16];
	size_t n = fread(doc, 1, sizeof doc - 1, f);
	fclose(f);
	doc[n] = 0;
	char *from = strstr(doc, heading);
	cr_assert(from, "no '%s' in %s", heading, FP8RT_DOCS_PLAN);
	char *start = strstr(from, "```\n");
	cr_assert(start, "no ``` block in %s", FP8RT_DOCS_PLAN);
	start += 4;
	char *end = strstr(start, "```");
	cr_assert(end);
	return strndup(start, (size_t)(end - start));
}

static char *
docs_example(void)
{
	return docs_block("");
}

/* The example is what fp8cc prints for the seed layer (the lit test
 * backend/docs-plan-example.test keeps it so); here it must parse, and say
 * what the doc's prose says of it. */
Test(plan, accepts_docs_example)
{
	char *text = docs_example();
	RtPlan p;
	fp8rt_status st = rt_plan_parse_text(text, strlen(text), "plan.md", &p, err, sizeof err);
	cr_assert_eq(st, FP8RT_OK, "%s", err);
	cr_assert_eq(p.version, 1);
	cr_assert_str_eq(p.target, "sm_90");
	cr_assert_eq(p.sm, 90);
	cr_assert_eq(p.func[0].nin, 2);
	cr_assert_eq(p.func[0].nout, 3);
	cr_assert_str_eq(p.func[0].in[0].name, "input");
	cr_assert_str_eq(p.func[0].in[1].name, "weight");
	cr_assert_eq(p.func[0].in[1].type.dtype, FP8RT_BF16);
	cr_assert_eq(p.func[0].out[1].type.dtype, FP8RT_F8E4M3FN);
	cr_assert_eq(p.func[0].out[2].type.rank, 0);
	for (int i = 0; i < p.func[0].nbuf; i++)
		cr_assert(p.func[0].buf[i].offset % 256 == 0 &&
				p.func[0].buf[i].offset + p.func[0].buf[i].bytes <= p.func[0].workspace,
			"buffer %d at %lld+%lld of %lld", i, (long long)p.func[0].buf[i].offset,
			(long long)p.func[0].buf[i].bytes, (long long)p.func[0].workspace);
	/* one kernel, then the GEMM, whose b is a buffer laid out [1,0]: the
     * (K,N) = (32,64) w.t() with K contiguous */
	cr_assert_eq(p.func[0].nstep, 2);
	cr_assert_eq(p.func[0].step[0].kind, STEP_LAUNCH);
	cr_assert_str_eq(p.func[0].step[0].u.launch.kernel, "k0");
	cr_assert_eq(p.func[0].step[0].u.launch.coop, 1);
	const RtGemm *g = &p.func[0].step[1].u.gemm;
	cr_assert_eq(p.func[0].step[1].kind, STEP_GEMM);
	cr_assert(g->m == 16 && g->n == 64 && g->k == 32 && g->fast_accum == 1 && !g->has_bias);
	cr_assert_eq(g->b.kind, REF_BUF);
	const RtBuffer *b = &p.func[0].buf[g->b.index];
	cr_assert(b->type.dtype == FP8RT_F8E4M3FN && b->type.rank == 2 && b->type.dims[0] == 32 &&
		b->type.dims[1] == 64 && b->layout[0] == 1 && b->layout[1] == 0);
	cr_assert(g->a.kind == REF_OUT && g->a.index == 1, "a is the fp8 input, output 1");
	rt_plan_free(&p);

	/* the same plan as the top of a PTX file */
	char *ptx = calloc(1, strlen(text) * 2 + 200);
	char *line = strtok(text, "\n");
	for (; line; line = strtok(NULL, "\n"))
		strcat(strcat(strcat(ptx, "// "), line), "\n");
	strcat(ptx, "// end-plan\n.version 8.0\n.target sm_90\n.address_size 64\n");
	st = rt_plan_parse_ptx(ptx, strlen(ptx), "plan.ptx", &p, err, sizeof err);
	cr_assert_eq(st, FP8RT_OK, "%s", err);
	cr_assert_eq(p.func[0].nstep, 2);
	cr_assert(p.ptx_offset > 0 && strncmp(ptx + p.ptx_offset, ".version", 8) == 0);
	rt_plan_free(&p);
	free(ptx);
	free(text);
}

Test(plan, accepts_test_program)
{
	char *ptx = test_program_ptx(0, NULL);
	RtPlan p;
	fp8rt_status st = rt_plan_parse_ptx(ptx, strlen(ptx), "prog.ptx", &p, err, sizeof err);
	cr_assert_eq(st, FP8RT_OK, "%s", err);
	cr_assert_eq(p.func[0].nin, 6);
	cr_assert_eq(p.func[0].nout, 3);
	cr_assert_eq(p.func[0].step[1].u.launch.smem, 1024);
	cr_assert_eq(p.func[0].step[2].u.gemm.bias_dtype, FP8RT_BF16);
	rt_plan_free(&p);
	/* and through the public entry that needs no device */
	cr_assert_eq(fp8rt_program_check(ptx, strlen(ptx), "prog.ptx"), FP8RT_OK, "%s", fp8rt_last_error(NULL));
	free(ptx);
}

Test(plan, accepts_crlf_comments_blank_lines_any_key_order)
{
	char *ptx = test_program_ptx(15, "launch k0 args=in:0,buf:0 coop=0 smem=0 block=256 grid=0   # comment");
	char *a = test_replace(ptx, "// target sm_90\n", "//target sm_90\r\n//\n// # a comment line\n");
	RtPlan p;
	fp8rt_status st = rt_plan_parse_ptx(a, strlen(a), "crlf.ptx", &p, err, sizeof err);
	cr_assert_eq(st, FP8RT_OK, "%s", err);
	cr_assert_eq(p.func[0].step[0].u.launch.block, 256);
	rt_plan_free(&p);
	free(a);
	free(ptx);
}

/* One bad plan: plan line `line` replaced by `with` ("" drops it). Arrays,
 * not pointers: criterion copies parameters into a worker process whose
 * addresses differ. */
typedef struct {
	int line;
	char with[200];
	fp8rt_status status;
	char substr[80];
	int errline; /* the line the message must name */
} BadPlan;

static const BadPlan bad_plans[] = {
	{ 15, "lanch k0 grid=0 block=256 smem=0 coop=0 args=in:0", FP8RT_BAD_PROGRAM, "unknown plan line 'lanch'", 15 },
	{ 1, "fp8cc-plan 8", FP8RT_BAD_PROGRAM, "plan version 8; this runtime reads versions 1 to 7", 1 },
	{ 1, "fp8cc-plan one", FP8RT_BAD_PROGRAM, "not a non-negative integer", 1 },
	{ 2, "", FP8RT_BAD_PROGRAM, "missing 'target' line", 1 },
	{ 2, "target gfx90a", FP8RT_BAD_PROGRAM, "bad target 'gfx90a'", 2 },
	{ 2, "target sm_2447483647", FP8RT_BAD_PROGRAM, "target sm=2447483647 is out of range [10, 9999]", 2 },
	{ 2, "target sm_09", FP8RT_BAD_PROGRAM, "target sm=9 is out of range", 2 },
	{ 2, "target sm_90b", FP8RT_BAD_PROGRAM, "bad target 'sm_90b'", 2 },
	{ 12, "target sm_90", FP8RT_BAD_PROGRAM, "second 'target' line", 12 },
	{ 3, "input 1 x f32[1024]", FP8RT_BAD_PROGRAM, "input 1 out of order", 3 },
	{ 3, "input 0 x f33[1024]", FP8RT_BAD_PROGRAM, "unknown dtype 'f33'", 3 },
	{ 3, "input 0 x f32", FP8RT_BAD_PROGRAM, "has no [dims]", 3 },
	{ 3, "input 0 x f32[1,2,3,4,5,6,7,8,9]", FP8RT_BAD_PROGRAM, "more than 8 entries", 3 },
	{ 3, "input 0 x f32[99999999999999999999]", FP8RT_BAD_PROGRAM, "too large", 3 },
	{ 3, "input 0 x f32[1024] extra", FP8RT_BAD_PROGRAM, "wants 3 words", 3 },
	{ 4, "input 1 x f8e4m3fn[32,64]", FP8RT_BAD_PROGRAM, "name 'x' is already used by input 0", 4 },
	{ 13, "buffer 0 f32[1024] offset=0 bytes=8192", FP8RT_BAD_PROGRAM, "ends outside the workspace", 13 },
	{ 14, "buffer 1 f32[] offset=4104 bytes=4 zero", FP8RT_BAD_PROGRAM, "offset=4104 is not a multiple of 16", 14 },
	{ 13, "buffer 0 f32[1024] offset=0 bytes=4000", FP8RT_BAD_PROGRAM, "less than its type needs", 13 },
	{ 13, "buffer 0 f32[32,32] layout=[0,0] offset=0 bytes=4096", FP8RT_BAD_PROGRAM, "not a permutation", 13 },
	{ 13, "buffer 0 f32[1024] offset=0 bytes=4096 zero zero", FP8RT_BAD_PROGRAM, "'zero' given twice", 13 },
	{ 14, "buffer 0 f32[] offset=4096 bytes=4", FP8RT_BAD_PROGRAM, "buffer 0 out of order", 14 },
	{ 15, "launch k0 grid=0 smem=0 coop=0 args=in:0,buf:0", FP8RT_BAD_PROGRAM, "missing key 'block='", 15 },
	{ 15, "launch k0 gird=0 block=256 smem=0 coop=0 args=in:0,buf:0", FP8RT_BAD_PROGRAM, "unknown key 'gird'", 15 },
	{ 15, "launch k0 grid=0 block=256 smem=0 coop=0 per_sm=4 args=in:0,buf:0", FP8RT_BAD_PROGRAM,
		"launch key 'per_sm' needs plan version 4 (this plan is version 1)", 15 },
	{ 15, "launch k0 grid=0 grid=1 block=256 smem=0 coop=0 args=in:0", FP8RT_BAD_PROGRAM, "key 'grid' given twice",
		15 },
	{ 15, "launch k0 grid=0 block=2048 smem=0 coop=0 args=in:0,buf:0", FP8RT_BAD_PROGRAM,
		"block=2048 is out of range", 15 },
	{ 15, "launch k0 grid=0 block=256 smem=0 coop=2 args=in:0,buf:0", FP8RT_BAD_PROGRAM, "coop=2 is out of range",
		15 },
	{ 15, "launch k0 grid=-1 block=256 smem=0 coop=0 args=in:0,buf:0", FP8RT_BAD_PROGRAM, "not a non-negative",
		15 },
	{ 15, "launch 9k grid=0 block=256 smem=0 coop=0 args=in:0", FP8RT_BAD_PROGRAM, "wants a kernel name", 15 },
	{ 15, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,in:6", FP8RT_BAD_PROGRAM,
		"reference 'in:6' is out of range (the function has 6 inputs)", 15 },
	{ 15, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,buf:2", FP8RT_BAD_PROGRAM, "out of range", 15 },
	{ 15, "launch k0 grid=0 block=256 smem=0 coop=0 args=inp:0,buf:0", FP8RT_BAD_PROGRAM, "bad reference 'inp:0'",
		15 },
	{ 15, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,,buf:0", FP8RT_BAD_PROGRAM, "empty reference", 15 },
	{ 17,
		"gemm d=out:1 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=in:5 m=32 n=16 k=24 atype=f8e4m3fn "
		"btype=f8e4m3fn dtype=bf16 fast_accum=0",
		FP8RT_BAD_PROGRAM, "k=24 is not a multiple of 16", 17 },
	{ 17,
		"gemm d=out:1 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=in:5 m=32 n=16 k=64 atype=f8e5m2 "
		"btype=f8e5m2 dtype=bf16 fast_accum=0",
		FP8RT_UNSUPPORTED, "f8e5m2 x f8e5m2 is not supported", 17 },
	{ 17,
		"gemm d=out:1 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=in:5 m=32 n=16 k=64 atype=f8e4m3fn "
		"btype=f8e4m3fn dtype=f16 fast_accum=0",
		FP8RT_BAD_PROGRAM, "gemm d=out:1 is bf16, the gemm wants f16", 17 },
	{ 17,
		"gemm d=out:1 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=in:5 m=64 n=16 k=64 atype=f8e4m3fn "
		"btype=f8e4m3fn dtype=bf16 fast_accum=0",
		FP8RT_BAD_PROGRAM, "holds 512 elements, the gemm needs 1024", 17 },
	{ 17,
		"gemm d=out:1 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=in:0 m=32 n=16 k=64 atype=f8e4m3fn "
		"btype=f8e4m3fn dtype=bf16 fast_accum=0",
		FP8RT_BAD_PROGRAM, "gemm bias=in:0 is f32, the gemm wants bf16", 17 },
	{ 17,
		"gemm d=out:1 a=in:1 b=in:2 scale_a=in:0 scale_b=in:4 bias=none m=32 n=16 k=64 atype=f8e4m3fn "
		"btype=f8e4m3fn dtype=bf16 fast_accum=0",
		FP8RT_BAD_PROGRAM, "in:0 is f32 with 1024 elements, the gemm wants 1 f32 (scale_mode=tensor)", 17 },
	{ 17,
		"gemm d=in:0 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=none m=32 n=16 k=64 atype=f8e4m3fn "
		"btype=f8e4m3fn dtype=bf16 fast_accum=0",
		FP8RT_BAD_PROGRAM, "writes a program input", 17 },
	{ 17,
		"gemm d=out:1 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=none m=32 n=16 k=64 atype=f8e4m3fn "
		"btype=f8e4m3fn dtype=bf16",
		FP8RT_BAD_PROGRAM, "missing key 'fast_accum='", 17 },
	{ 17,
		"gemm d=out:1 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=none m=32 n=16 k=64 atype=f8e4m3 "
		"btype=f8e4m3fn dtype=bf16 fast_accum=0",
		FP8RT_BAD_PROGRAM, "atype: unknown dtype 'f8e4m3'", 17 },
	{ 18, "copy dst=out:2 src=in:0 bytes=8192", FP8RT_BAD_PROGRAM, "copy bytes=8192 is more than out:2 holds", 18 },
	{ 18, "copy dst=in:0 src=out:2 bytes=4096", FP8RT_BAD_PROGRAM, "copy dst=in:0 writes a program input", 18 },
	{ 18, "copy dst=out:2 src=in:0 bytes=4096 a b c d e f g h i j k l m n o p q r s t u v w x y z 1 2 3 4 5",
		FP8RT_BAD_PROGRAM, "too many words", 18 },
	{ 18, "copy dst=out:2 src=in:0 bytes=4096 \x01", FP8RT_BAD_PROGRAM, "byte 0x01 at column 39 is not printable",
		18 },
	{ 18, "copy dst=out:2 src=in:0 bytes=4096 \xc3\xa9", FP8RT_BAD_PROGRAM, "not printable ASCII", 18 },
	{ 12, "workspace 4352 4352", FP8RT_BAD_PROGRAM, "'workspace' wants one word", 12 },
};

ParameterizedTestParameters(plan, rejects_bad_plan)
{
	return cr_make_param_array(BadPlan, bad_plans, sizeof bad_plans / sizeof bad_plans[0]);
}

/* The plan in ptx is refused as b says (or, with FP8RT_OK, read), by the
 * parser and by the public, device-free entry alike. Frees ptx. */
static void
assert_bad(const BadPlan *b, char *ptx)
{
	RtPlan p;
	char prefix[64];
	fp8rt_status st = rt_plan_parse_ptx(ptx, strlen(ptx), "bad.ptx", &p, err, sizeof err);
	cr_assert_eq(st, b->status, "line %d '%s': got %s, want %s: %s", b->line, b->with[0] ? b->with : "(dropped)",
		fp8rt_status_name(st), fp8rt_status_name(b->status), err);
	cr_assert_eq(fp8rt_program_check(ptx, strlen(ptx), "bad.ptx"), b->status);
	free(ptx);
	if (st == FP8RT_OK) {
		rt_plan_free(&p);
		return;
	}
	cr_assert(strstr(err, b->substr), "line %d: message lacks \"%s\": %s", b->line, b->substr, err);
	snprintf(prefix, sizeof prefix, "bad.ptx:%d: ", b->errline);
	cr_assert(strncmp(err, prefix, strlen(prefix)) == 0, "message does not name line %d: %s", b->errline, err);
	cr_assert_eq(p.arena, NULL, "a failed parse leaves nothing to free");
	cr_assert_str_eq(fp8rt_last_error(NULL), err);
}

ParameterizedTest(const BadPlan *b, plan, rejects_bad_plan)
{
	assert_bad(b, test_program_ptx(b->line, b->with[0] ? b->with : NULL));
}

/* Whole-file problems: a whole text, its status and message. */
typedef struct {
	const char *text;
	const char *substr;
} BadFile;

Test(plan, rejects_bad_files)
{
	char *prog = test_program_ptx(0, NULL);
	char *wrong_target = test_replace(prog, ".target sm_90\n", ".target sm_89\n");
	char *no_ptx = test_plan_text(0, NULL, "// ");
	no_ptx = realloc(no_ptx, strlen(no_ptx) + 20);
	strcat(no_ptx, "// end-plan\n");
	char *no_end = test_replace(prog, "// end-plan\n", "");
	char *unprefixed = test_replace(prog, "// workspace 4352\n", "workspace 4352\n");
	const BadFile files[] = {
		{ "", "not an fp8cc PTX file: it is empty" },
		{ "\n\n   \n", "not an fp8cc PTX file: it is empty" },
		{ "hello, world\n", "not an fp8cc PTX file: the first line is not '// fp8cc-plan VERSION'" },
		{ ".version 8.0\n.target sm_90\n", "not an fp8cc PTX file" },
		{ "\x7f"
		  "ELF\x02\x01\x01\x00\x00\x00",
			"not an fp8cc PTX file" },
		{ "fp8cc-plan 1\ntarget sm_90\n", "not an fp8cc PTX file" },
		{ "// fp8cc-plan 1\n// target sm_90\n", "no '// end-plan' line" },
		{ wrong_target, "the PTX says '.target sm_89' but the plan says 'target sm_90'" },
		{ no_ptx, "no PTX after the plan" },
		{ no_end, "f.ptx:19: plan line does not start with '//' (no '// end-plan' before it?)" },
		{ unprefixed, "does not start with '//'" },
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		size_t len = strlen(files[i].text);
		char *copy = malloc(len + 1); /* exact size: ASan sees any over-read */
		memcpy(copy, files[i].text, len);
		RtPlan p;
		fp8rt_status st = rt_plan_parse_ptx(copy, len, "f.ptx", &p, err, sizeof err);
		cr_assert_eq(st, FP8RT_BAD_PROGRAM, "file %zu: got %s: %s", i, fp8rt_status_name(st), err);
		cr_assert(strstr(err, files[i].substr), "file %zu: message lacks \"%s\": %s", i, files[i].substr, err);
		free(copy);
	}
	/* a NUL inside the PTX */
	size_t len = strlen(prog);
	prog[len - 5] = 0;
	RtPlan p;
	cr_assert_eq(rt_plan_parse_ptx(prog, len, "nul.ptx", &p, err, sizeof err), FP8RT_BAD_PROGRAM);
	cr_assert(strstr(err, "NUL byte inside the PTX"), "%s", err);
	free(prog), free(wrong_target), free(no_ptx), free(no_end), free(unprefixed);
}

Test(plan, version_mismatch_message)
{
	char *ptx = test_program_ptx(1, "fp8cc-plan 8");
	cr_assert_eq(fp8rt_program_check(ptx, strlen(ptx), "v4.ptx"), FP8RT_BAD_PROGRAM);
	cr_assert_str_eq(fp8rt_last_error(NULL), "v4.ptx:1: plan version 8; this runtime reads versions 1 to 7");
	free(ptx);
}

/* Every prefix of a valid file, each in a buffer of its exact size. */
Test(plan, survives_truncation)
{
	char *ptx = test_program_ptx(0, NULL);
	size_t n = strlen(ptx);
	for (size_t len = 0; len <= n; len++) {
		char *copy = malloc(len ? len : 1);
		memcpy(copy, ptx, len);
		RtPlan p;
		fp8rt_status st = rt_plan_parse_ptx(copy, len, "t.ptx", &p, err, sizeof err);
		cr_assert(st == FP8RT_OK || (st == FP8RT_BAD_PROGRAM && err[0]), "prefix %zu: %s", len, err);
		if (st == FP8RT_OK)
			rt_plan_free(&p);
		free(copy);
	}
	free(ptx);
}

/* Random byte flips of a valid file, and random bytes. */
Test(plan, survives_mutation_and_binary)
{
	char *ptx = test_program_ptx(0, NULL);
	size_t n = strlen(ptx);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	char *copy = malloc(n);
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(copy, ptx, n);
		int flips = 1 + (int)(rnd(&seed) % 4);
		for (int f = 0; f < flips; f++)
			copy[rnd(&seed) % n] =
				(char)(iter % 3 == 0 ? "=,:[] #\n/0159x"[rnd(&seed) % 14] : (int)(rnd(&seed) & 255));
		size_t len = iter % 5 == 0 ? rnd(&seed) % n : n;
		RtPlan p;
		fp8rt_status st = rt_plan_parse_ptx(copy, len, "m.ptx", &p, err, sizeof err);
		cr_assert(st == FP8RT_OK || ((st == FP8RT_BAD_PROGRAM || st == FP8RT_UNSUPPORTED) && err[0]));
		if (st == FP8RT_OK)
			rt_plan_free(&p);
	}
	for (int iter = 0; iter < 500; iter++) {
		size_t len = rnd(&seed) % 4096;
		char *bin = malloc(len ? len : 1);
		for (size_t i = 0; i < len; i++)
			bin[i] = (char)rnd(&seed);
		if (iter % 2 && len > 16)
			memcpy(bin, "// fp8cc-plan 1\n", 16);
		RtPlan p;
		fp8rt_status st = rt_plan_parse_ptx(bin, len, "b.ptx", &p, err, sizeof err);
		cr_assert_eq(st, FP8RT_BAD_PROGRAM, "%s", err);
		free(bin);
	}
	free(copy);
	free(ptx);
}

/* A 100000-argument launch parses; a 1 MB word is quoted briefly. */
Test(plan, long_lines)
{
	size_t nargs = 100000;
	char *line = malloc(nargs * 5 + 100);
	strcpy(line, "launch k0 grid=0 block=256 smem=0 coop=0 args=in:0");
	size_t at = strlen(line);
	for (size_t i = 1; i < nargs; i++, at += 5)
		memcpy(line + at, ",in:0", 5);
	line[at] = 0;
	char *ptx = test_program_ptx(15, line);
	RtPlan p;
	fp8rt_status st = rt_plan_parse_ptx(ptx, strlen(ptx), "long.ptx", &p, err, sizeof err);
	cr_assert_eq(st, FP8RT_OK, "%s", err);
	cr_assert_eq(p.func[0].step[0].u.launch.nargs, (int)nargs);
	rt_plan_free(&p);
	free(ptx);

	memset(line, 'x', nargs * 5);
	line[nargs * 5] = 0;
	ptx = test_program_ptx(15, line);
	st = rt_plan_parse_ptx(ptx, strlen(ptx), "long.ptx", &p, err, sizeof err);
	cr_assert_eq(st, FP8RT_BAD_PROGRAM);
	cr_assert(strstr(err, "unknown plan line 'xxxx") && strlen(err) < 200, "%s", err);
	free(ptx);
	free(line);
}

/* ---- version 3: row-wise fp8 scales --------------------------------------- */

static const char row_plan[] =
	"fp8cc-plan 3\n"
	"target sm_90\n"
	"function main\n"
	"input 0 a f8e4m3fn[4,16]\n"
	"input 1 b f8e4m3fn[16,16]\n"
	"input 2 sa f32[4,1]\n"
	"input 3 sb f32[1,16]\n"
	"input 4 x f32[8,16]\n"
	"output 0 d bf16[4,16]\n"
	"output 1 y f32[8,8]\n"
	"workspace 0\n"
	"gemm d=out:0 a=in:0 b=in:1 scale_a=in:2 scale_b=in:3 bias=none m=4 n=16 k=16 batch=1 stride_a=0 "
	"stride_b=0 stride_d=0 trans_a=0 trans_b=1 atype=f8e4m3fn btype=f8e4m3fn dtype=bf16 epilogue=none "
	"fast_accum=0 scale_mode=row\n"
	"gemm d=out:1 a=in:4 b=in:4 bias=none m=8 n=8 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 trans_a=0 "
	"trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=none\n";

/* `base` with its text `old` replaced by `with` (NULL: as it is), parsed:
 * the status must be `want`, and for a failure the message must contain
 * `substr`. True if it parsed (p then holds the plan). */
static bool
plan_case(const char *base, const char *old, const char *with, fp8rt_status want, const char *substr, RtPlan *p)
{
	char *text = old ? test_replace(base, old, with) : strdup(base);
	fp8rt_status st = rt_plan_parse_text(text, strlen(text), "v3.plan", p, err, sizeof err);
	free(text);
	cr_assert_eq(st, want, "'%s' -> '%s': %s: %s", old ? old : "", with ? with : "", fp8rt_status_name(st), err);
	if (st != FP8RT_OK)
		cr_assert(strstr(err, substr), "message lacks \"%s\": %s", substr, err);
	return st == FP8RT_OK;
}

/* row_plan with `old` replaced by `with`: the status, the message, and for
 * a plan that parses (row_plan itself) its scale modes */
static void
row_plan_case(const char *old, const char *with, fp8rt_status want, const char *substr)
{
	RtPlan p;
	if (!plan_case(row_plan, old, with, want, substr, &p))
		return;
	cr_assert_eq(p.version, 3);
	const RtGemm *g = &p.func[0].step[0].u.gemm;
	cr_assert_eq(g->scale_mode, FP8RT_SCALE_ROW);
	cr_assert_eq(p.func[0].step[1].u.gemm.scale_mode, FP8RT_SCALE_TENSOR);
	rt_plan_free(&p);
}

Test(plan, version_3_scale_mode)
{
	row_plan_case(NULL, NULL, FP8RT_OK, "");
	/* tensor-wise: scalars, with or without the key */
	row_plan_case("input 2 sa f32[4,1]\ninput 3 sb f32[1,16]", "input 2 sa f32[]\ninput 3 sb f32[]",
		FP8RT_BAD_PROGRAM, "gemm scale_a=in:2 is f32 with 1 elements, the gemm wants 4 f32 (scale_mode=row)");
	row_plan_case("input 3 sb f32[1,16]", "input 3 sb f32[16,2]", FP8RT_BAD_PROGRAM,
		"gemm scale_b=in:3 is f32 with 32 elements, the gemm wants 16 f32 (scale_mode=row)");
	row_plan_case("input 2 sa f32[4,1]\ninput 3 sb f32[1,16]", "input 2 sa f32[]\ninput 3 sb f32[]",
		FP8RT_BAD_PROGRAM, "scale_mode=row");
	row_plan_case("fast_accum=0 scale_mode=row", "fast_accum=0", FP8RT_BAD_PROGRAM,
		"gemm scale_a=in:2 is f32 with 4 elements, the gemm wants 1 f32 (scale_mode=tensor)");
	row_plan_case("scale_mode=row", "scale_mode=blocks", FP8RT_BAD_PROGRAM,
		"scale_mode: unknown scale mode 'blocks' (tensor, row or block)");
	/* block-wise: k a multiple of 128, m of 4, no fast_accum, scale_a
	 * m*ceil(k/128) values, scale_b ceil(k/128) rounded up to 4 per 128
	 * columns of b */
	row_plan_case("scale_mode=row", "scale_mode=block", FP8RT_BAD_PROGRAM,
		"block-wise scales need k a multiple of 128 (k=16)");
	row_plan_case("epilogue=none\n", "epilogue=none scale_mode=row\n", FP8RT_BAD_PROGRAM,
		"key 'scale_mode' is for fp8 gemms; this one is f32 x f32");
	row_plan_case(
		"scale_mode=row", "scale_mode=row scale_mode=row", FP8RT_BAD_PROGRAM, "key 'scale_mode' given twice");
	row_plan_case("fp8cc-plan 3", "fp8cc-plan 2", FP8RT_BAD_PROGRAM, "unknown key 'scale_mode'");
}

/* row_plan turned block-wise (k=256, scale_a 4*2 values, scale_b 4) with
 * `old` replaced by `with` */
static void
block_plan_case(const char *old, const char *with, fp8rt_status want, const char *substr)
{
	char *b1 = test_replace(row_plan,
		"input 0 a f8e4m3fn[4,16]\ninput 1 b f8e4m3fn[16,16]\ninput 2 sa f32[4,1]\ninput 3 sb f32[1,16]",
		"input 0 a f8e4m3fn[4,256]\ninput 1 b f8e4m3fn[16,256]\ninput 2 sa f32[2,4]\ninput 3 sb f32[4,1]");
	char *b2 = test_replace(b1, "m=4 n=16 k=16 batch=1", "m=4 n=16 k=256 batch=1");
	char *b3 = test_replace(b2, "scale_mode=row", "scale_mode=block");
	RtPlan p;
	if (plan_case(b3, old, with, want, substr, &p)) {
		cr_assert_eq(p.func[0].step[0].u.gemm.scale_mode, FP8RT_SCALE_BLOCK);
		rt_plan_free(&p);
	}
	free(b1), free(b2), free(b3);
}

Test(plan, version_3_block_scales)
{
	block_plan_case(NULL, NULL, FP8RT_OK, "");
	block_plan_case("input 2 sa f32[2,4]", "input 2 sa f32[4]", FP8RT_BAD_PROGRAM,
		"gemm scale_a=in:2 is f32 with 4 elements, the gemm wants 8 f32 (scale_mode=block)");
	block_plan_case("input 3 sb f32[4,1]", "input 3 sb f32[2,1]", FP8RT_BAD_PROGRAM,
		"gemm scale_b=in:3 is f32 with 2 elements, the gemm wants 4 f32 (scale_mode=block)");
	block_plan_case("fast_accum=0 scale_mode=block", "fast_accum=1 scale_mode=block", FP8RT_BAD_PROGRAM,
		"block-wise scales take no fast_accum");
	block_plan_case("m=4 n=16 k=256", "m=2 n=16 k=256", FP8RT_BAD_PROGRAM,
		"block-wise scales need m a multiple of 4 (m=2)");
}

/* ---- version 2: functions, state slots, float GEMMs ------------------------ */

/* The step program (test_data.c): two functions, two state slots, each
 * gemm form's keys, the slots backward reads. */
Test(plan, reads_the_step_program)
{
	char *ptx = test_step_ptx(0, NULL);
	RtPlan p;
	fp8rt_status st = rt_plan_parse_ptx(ptx, strlen(ptx), "step.ptx", &p, err, sizeof err);
	cr_assert_eq(st, FP8RT_OK, "%s", err);
	cr_assert_eq(p.version, 2);
	cr_assert(p.nfunc == 2 && !strcmp(p.func[0].name, "forward") && !strcmp(p.func[1].name, "backward"));
	cr_assert(p.nstate == 2 && !strcmp(p.state[1].name, "y") && p.state[1].from == 0);
	cr_assert(p.state[0].offset == 0 && p.state[1].offset == 512 && p.state_bytes == 512 + 512,
		"state offsets %lld %lld, %lld bytes", (long long)p.state[0].offset, (long long)p.state[1].offset,
		(long long)p.state_bytes);
	const RtFunc *f = &p.func[0], *b = &p.func[1];
	cr_assert(f->nin == 5 && f->nout == 2 && f->nstep == 4 && f->nreads == 0);
	cr_assert(b->nin == 2 && b->nout == 3 && b->nstep == 3);
	cr_assert(b->nreads == 2 && b->reads[0] == 0 && b->reads[1] == 1, "backward reads %d slots", b->nreads);
	const RtGemm *y = &f->step[0].u.gemm, *z = &f->step[2].u.gemm, *gw = &b->step[1].u.gemm;
	cr_assert(!y->scaled && y->has_bias && y->epilogue == RT_EPI_RELU && y->trans_b && !y->trans_a);
	cr_assert(y->d.kind == REF_STATE && y->d.index == 1 && y->bias_dtype == FP8RT_F32);
	cr_assert(z->batch == 2 && z->stride_a == 128 && z->stride_b == 0 && z->stride_d == 32 && !z->trans_b);
	cr_assert(gw->trans_a && gw->b.kind == REF_STATE && gw->m == 12 && gw->k == 8);
	rt_plan_free(&p);
	free(ptx);
}

static const BadPlan bad_step_plans[] = {
	{ 5, "function 2fast", FP8RT_BAD_PROGRAM, "'function' wants a name", 5 },
	{ 17, "function forward", FP8RT_BAD_PROGRAM, "function 'forward' is already defined on line 5", 17 },
	{ 3, "state 0 x f32[8,16] from=sideways", FP8RT_BAD_PROGRAM, "from=sideways names no function", 3 },
	{ 3, "state 0 x f32[8,16]", FP8RT_BAD_PROGRAM, "'state' wants 4 words", 3 },
	{ 3, "state 1 x f32[8,16] from=forward", FP8RT_BAD_PROGRAM, "state 1 out of order", 3 },
	{ 4, "state 1 x f32[8,12] from=forward", FP8RT_BAD_PROGRAM, "name 'x' is already used by state 0", 4 },
	{ 6, "state 2 q f32[] from=forward", FP8RT_BAD_PROGRAM, "'state' after a 'function' line", 6 },
	{ 5, "", FP8RT_BAD_PROGRAM, "'input' before the first 'function' line", 5 },
	{ 16, "copy dst=st:0 src=in:0 bytes=512 # x is not saved", FP8RT_OK, "", 0 },
	{ 16, "", FP8RT_BAD_PROGRAM, "state 0 ('x') is from=forward, but function forward never writes it", 3 },
	{ 16, "copy dst=st:2 src=in:0 bytes=512", FP8RT_BAD_PROGRAM,
		"reference 'st:2' is out of range (the program has 2 state slots)", 16 },
	{ 25, "copy dst=st:1 src=in:0 bytes=384", FP8RT_BAD_PROGRAM,
		"st:1 ('y') is written here, but it is state that function forward writes", 25 },
	{ 6, "input 0 x f32[8,16] extra", FP8RT_BAD_PROGRAM, "wants 3 words", 6 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=silu",
		FP8RT_BAD_PROGRAM, "unknown epilogue 'silu'", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32",
		FP8RT_BAD_PROGRAM, "missing key 'epilogue='", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=relu fast_accum=1",
		FP8RT_BAD_PROGRAM, "key 'fast_accum' is for fp8 gemms; this one is f32 x f32", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=2 atype=f32 btype=f32 dtype=f32 epilogue=relu",
		FP8RT_BAD_PROGRAM, "trans_b=2 is out of range", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=bf16 epilogue=relu",
		FP8RT_BAD_PROGRAM, "gemm dtypes f32 x f32 -> bf16: a, b and d must be one of", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=0 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=relu",
		FP8RT_BAD_PROGRAM, "k=0 batch=1 out of range", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f8e4m3fn btype=f8e4m3fn dtype=f32 epilogue=relu",
		FP8RT_BAD_PROGRAM, "missing key 'scale_a=' (an fp8 gemm has scales and fast_accum)", 13 },
	{ 15,
		"gemm d=out:1 a=in:3 b=in:4 bias=none m=8 n=4 k=16 batch=3 stride_a=128 stride_b=0 stride_d=32 "
		"trans_a=0 trans_b=0 atype=f32 btype=f32 dtype=f32 epilogue=none",
		FP8RT_BAD_PROGRAM, "gemm d=out:1 holds 64 elements, the gemm needs 96", 15 },
	{ 15,
		"gemm d=out:1 a=in:3 b=in:4 bias=none m=8 n=4 k=16 batch=2 stride_a=128 stride_b=0 stride_d=16 "
		"trans_a=0 trans_b=0 atype=f32 btype=f32 dtype=f32 epilogue=none",
		FP8RT_BAD_PROGRAM, "stride_d=16, less than m*n=32: the batches would overlap", 15 },
	{ 15,
		"gemm d=out:1 a=in:3 b=in:4 bias=none m=8 n=4 k=16 batch=2 stride_a=129 stride_b=0 stride_d=32 "
		"trans_a=0 trans_b=0 atype=f32 btype=f32 dtype=f32 epilogue=none",
		FP8RT_BAD_PROGRAM, "gemm a=in:3 holds 256 elements, the gemm needs 257", 15 },
	{ 15,
		"gemm d=out:1 a=in:3 b=in:4 bias=none m=8 n=4 k=16 batch=2 stride_a=9223372036854775 stride_b=0 "
		"stride_d=32 trans_a=0 trans_b=0 atype=f32 btype=f32 dtype=f32 epilogue=none",
		FP8RT_BAD_PROGRAM, "holds 256 elements, the gemm needs", 15 },
	/* epilogue=gelu_aux and its aux= */
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=gelu_aux aux=out:0",
		FP8RT_OK, "", 0 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=gelu_aux",
		FP8RT_BAD_PROGRAM, "epilogue=gelu_aux wants aux=", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=relu aux=out:0",
		FP8RT_BAD_PROGRAM, "key 'aux' is for epilogue=gelu_aux", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=gelu_aux aux=in:3",
		FP8RT_BAD_PROGRAM, "gemm aux=in:3 writes a program input", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=gelu_aux aux=st:1",
		FP8RT_BAD_PROGRAM, "gemm aux=st:1 is its d too", 13 },
	{ 13,
		"gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
		"trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=gelu_aux aux=out:1",
		FP8RT_BAD_PROGRAM, "gemm aux=out:1 holds 64 elements, the gemm needs 96", 13 },
	{ 1, "fp8cc-plan 1", FP8RT_BAD_PROGRAM, "'state' lines need plan version 2 (this plan is version 1)", 3 },
	/* call lines: an extern */
	{ 25, "call lib.f:g ins=in:0,st:1 outs=out:2 args=@0,@1,None,'a%20b',k=(1,(2,)),x=-inf", FP8RT_OK, "", 0 },
	{ 25, "call f!x ins=in:0 outs=out:2 args=@0", FP8RT_BAD_PROGRAM, "'call' wants the extern's name first", 25 },
	{ 25, "call f ins=in:0 outs=out:2 args=@1", FP8RT_BAD_PROGRAM, "args: tensor @N out of order or range", 25 },
	{ 25, "call f ins=in:0,in:1 outs=out:2 args=@0", FP8RT_BAD_PROGRAM, "args: '@0' names 1 tensors, ins= gives 2",
		25 },
	{ 25, "call f ins=in:0 outs= args=@0", FP8RT_BAD_PROGRAM, "call f has no outs= (an extern has results)", 25 },
	{ 25, "call f ins= outs=in:0 args=", FP8RT_BAD_PROGRAM, "call f: outs in:0 is a program input", 25 },
	{ 25, "call f ins= outs=out:2,out:2 args=", FP8RT_BAD_PROGRAM, "call f: outs names out:2 twice", 25 },
	{ 25, "call f ins= outs=out:2 args='x", FP8RT_BAD_PROGRAM, "args: unterminated string", 25 },
	{ 25, "call f ins= outs=out:2 args=%zz", FP8RT_BAD_PROGRAM, "args: bad escape at column 1", 25 },
	{ 25, "call f ins= outs=out:2 args=(1,2", FP8RT_BAD_PROGRAM, "args: expected ',' or ')'", 25 },
	{ 25, "call f ins= outs=out:2 args=1e999", FP8RT_BAD_PROGRAM, "args: bad number", 25 },
	/* a subnormal, as the compiler writes 5e-324 (strtod's ERANGE) */
	{ 25, "call f ins= outs=out:2 args=(1.63e-322,5e-324,-5e-324)", FP8RT_OK, "", 0 },
	{ 25, "call f ins= outs=out:2", FP8RT_BAD_PROGRAM, "missing key 'args='", 25 },
	{ 25, "call f ins= outs=st:0 args=", FP8RT_BAD_PROGRAM,
		"st:0 ('x') is written here, but it is state that "
		"function forward writes",
		25 },
};

ParameterizedTestParameters(plan, rejects_bad_step_plan)
{
	return cr_make_param_array(BadPlan, bad_step_plans, sizeof bad_step_plans / sizeof bad_step_plans[0]);
}

ParameterizedTest(const BadPlan *b, plan, rejects_bad_step_plan)
{
	assert_bad(b, test_step_ptx(b->line, b->with[0] ? b->with : NULL));
}

/* The arguments of a call, decoded: kinds, keys, nesting. */
Test(plan, reads_call_arguments)
{
	char *ptx = test_step_ptx(25,
		"call lib.f ins=in:0,st:1 outs=out:2 args=@0,@1,None,'a%20b%5C%27',k=(1,(2.5,)),x=-inf,d=torch.float32");
	RtPlan p;
	cr_assert_eq(rt_plan_parse_ptx(ptx, strlen(ptx), "c.ptx", &p, err, sizeof err), FP8RT_OK, "%s", err);
	const RtCall *c = &p.func[1].step[2].u.call;
	cr_assert(p.func[1].step[2].kind == STEP_CALL && !strcmp(c->name, "lib.f") && c->nins == 2 && c->nouts == 1);
	cr_assert_eq(c->nargs, 10);
	cr_assert(c->args[0].kind == FP8RT_ARG_TENSOR && c->args[0].i == 0 && c->args[1].i == 1);
	cr_assert(c->args[2].kind == FP8RT_ARG_NONE);
	cr_assert(c->args[3].kind == FP8RT_ARG_STRING && !strcmp(c->args[3].s, "a b'"), "%s", c->args[3].s);
	cr_assert(c->args[4].kind == FP8RT_ARG_TUPLE && c->args[4].i == 2 && !strcmp(c->args[4].key, "k"));
	cr_assert(c->args[5].kind == FP8RT_ARG_INT && c->args[5].i == 1 && !c->args[5].key);
	cr_assert(c->args[6].kind == FP8RT_ARG_TUPLE && c->args[6].i == 1);
	cr_assert(c->args[7].kind == FP8RT_ARG_FLOAT && c->args[7].f == 2.5);
	cr_assert(c->args[8].kind == FP8RT_ARG_FLOAT && isinf(c->args[8].f) && c->args[8].f < 0);
	cr_assert(c->args[9].kind == FP8RT_ARG_NAME && !strcmp(c->args[9].s, "torch.float32"));
	cr_assert(p.func[1].nreads == 2, "backward reads both slots, st:1 through the call");
	rt_plan_free(&p);
	free(ptx);
	ptx = test_program_ptx(18, "call f ins= outs=out:2 args=");
	cr_assert_eq(rt_plan_parse_ptx(ptx, strlen(ptx), "v1.ptx", &p, err, sizeof err), FP8RT_BAD_PROGRAM);
	cr_assert(strstr(err, "v1.ptx:18: 'call' lines need plan version 2"), "%s", err);
	free(ptx);
}

/* A version 1 plan is one function, "main", without state; st:N is refused there. */
Test(plan, version_1_is_one_function)
{
	char *ptx = test_program_ptx(0, NULL);
	RtPlan p;
	cr_assert_eq(rt_plan_parse_ptx(ptx, strlen(ptx), "v1.ptx", &p, err, sizeof err), FP8RT_OK, "%s", err);
	cr_assert(p.nfunc == 1 && !strcmp(p.func[0].name, "main") && p.nstate == 0 && p.state_bytes == 0);
	rt_plan_free(&p);
	free(ptx);
	ptx = test_program_ptx(18, "copy dst=st:0 src=in:0 bytes=4096");
	cr_assert_eq(rt_plan_parse_ptx(ptx, strlen(ptx), "v1.ptx", &p, err, sizeof err), FP8RT_BAD_PROGRAM);
	cr_assert(strstr(err, "v1.ptx:18: reference 'st:0': state slots need plan version 2"), "%s", err);
	free(ptx);
}

/* docs/plan.md's version 2 example (the training step fp8cc writes): two
 * functions, backward reading both slots that forward writes. */
Test(plan, accepts_docs_version_2_example)
{
	char *text = docs_block("## Version 2");
	RtPlan p;
	fp8rt_status st = rt_plan_parse_text(text, strlen(text), "plan.md", &p, err, sizeof err);
	cr_assert_eq(st, FP8RT_OK, "%s", err);
	cr_assert(p.version == 2 && p.nfunc == 2 && p.nstate == 2);
	cr_assert(p.func[1].nreads == 2 && p.func[0].nreads == 0);
	cr_assert(p.func[0].step[1].u.gemm.scaled && p.func[0].step[1].u.gemm.fast_accum == 1);
	rt_plan_free(&p);
	free(text);
}
