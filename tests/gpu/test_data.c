/* test_data.c — the runtime tests' program: a plan (per docs/plan.md) and
 * hand-written PTX for sm_90 (checked with ptxas -arch=sm_90).
 *
 *   y  = k1(k0(x))  : k0 doubles x into buf:0 (grid=0, persistent), k1 adds the
 *                     `zero` buffer buf:1 and writes y (coop=1, smem=1024)
 *   d  = a · wᵀ · sa · sb + bias   (gemm, e4m3 x e4m3 -> bf16)
 *   xc = x                         (copy)
 *
 * and a training step of two functions (plan version 2, GEMMs only, so it
 * runs on the mock cuBLASLt too), f32:
 *   forward(x [8,16], w [12,16], b [12], x3 [2,8,16], v [16,4])
 *       y = relu(x · wᵀ + b) -> state 1, and out y (copy)
 *       z = x3 · v  (batched a, shared b)
 *       x -> state 0
 *   backward(g [8,12], w [12,16])
 *       gx = g · w;  gw = gᵀ · x (state 0);  ys = y (state 1, copied out)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_data.h"

/* Plan line i+1 of the test program (line 1 is the header). */
const char *const test_plan_lines[TEST_PLAN_NLINES] = {
	"fp8cc-plan 1",
	"target sm_90",
	"input 0 x f32[1024]",
	"input 1 a f8e4m3fn[32,64]",
	"input 2 w f8e4m3fn[16,64]",
	"input 3 sa f32[]",
	"input 4 sb f32[]",
	"input 5 bias bf16[16]",
	"output 0 y f32[1024]",
	"output 1 d bf16[32,16]",
	"output 2 xc f32[1024]",
	"workspace 4352",
	"buffer 0 f32[1024] offset=0 bytes=4096",
	"buffer 1 f32[] offset=4096 bytes=4 zero",
	"launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,buf:0",
	"launch k1 grid=2 block=128 smem=1024 coop=1 args=buf:0,buf:1,out:0",
	("gemm d=out:1 a=in:1 b=in:2 scale_a=in:3 scale_b=in:4 bias=in:5 m=32 n=16 k=64 "
	 "atype=f8e4m3fn btype=f8e4m3fn dtype=bf16 fast_accum=0"),
	"copy dst=out:2 src=in:0 bytes=4096",
};

const char *const test_step_lines[TEST_STEP_NLINES] = {
	"fp8cc-plan 2",
	"target sm_90",
	"state 0 x f32[8,16] from=forward",
	"state 1 y f32[8,12] from=forward",
	"function forward",
	"input 0 x f32[8,16]",
	"input 1 w f32[12,16]",
	"input 2 b f32[12]",
	"input 3 x3 f32[2,8,16]",
	"input 4 v f32[16,4]",
	"output 0 y f32[8,12]",
	"output 1 z f32[2,8,4]",
	("gemm d=st:1 a=in:0 b=in:1 bias=in:2 m=8 n=12 k=16 batch=1 stride_a=0 stride_b=0 stride_d=0 "
	 "trans_a=0 trans_b=1 atype=f32 btype=f32 dtype=f32 epilogue=relu"),
	"copy dst=out:0 src=st:1 bytes=384",
	("gemm d=out:1 a=in:3 b=in:4 bias=none m=8 n=4 k=16 batch=2 stride_a=128 stride_b=0 stride_d=32 "
	 "trans_a=0 trans_b=0 atype=f32 btype=f32 dtype=f32 epilogue=none"),
	"copy dst=st:0 src=in:0 bytes=512",
	"function backward",
	"input 0 g f32[8,12]",
	"input 1 w f32[12,16]",
	"output 0 gx f32[8,16]",
	"output 1 gw f32[12,16]",
	"output 2 ys f32[8,12]",
	("gemm d=out:0 a=in:0 b=in:1 bias=none m=8 n=16 k=12 batch=1 stride_a=0 stride_b=0 stride_d=0 "
	 "trans_a=0 trans_b=0 atype=f32 btype=f32 dtype=f32 epilogue=none"),
	("gemm d=out:1 a=in:0 b=st:0 bias=none m=12 n=16 k=8 batch=1 stride_a=0 stride_b=0 stride_d=0 "
	 "trans_a=1 trans_b=0 atype=f32 btype=f32 dtype=f32 epilogue=none"),
	"copy dst=out:2 src=st:1 bytes=384",
};

/* y = k0(x) = 2x, then test.affine(y, scale=3.0, shift=-1, ...) -> (3y - 1, the count of y) */
const char test_extern_plan[] =
	"// fp8cc-plan 2\n"
	"// target sm_90\n"
	"// function main\n"
	"// input 0 x f32[1024]\n"
	"// output 0 y f32[1024]\n"
	"// output 1 n i64[]\n"
	"// workspace 4096\n"
	"// buffer 0 f32[1024] offset=0 bytes=4096\n"
	"// launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,buf:0\n"
	"// call test.affine ins=buf:0 outs=out:0,out:1 args=@0,scale=3.0,shift=-1,mode='it%5C's%20ok',"
	"dims=(1,(2,3)),dt=torch.float32,flag=True,none=None,edge=-inf\n"
	"// end-plan\n";

/* all_gather(2x), reduce_scatter(x) then 2 that, all_reduce(x), over one rank */
const char test_coll_plan[] =
	"// fp8cc-plan 5\n"
	"// target sm_90\n"
	"// function main\n"
	"// input 0 x f32[1024]\n"
	"// output 0 g f32[1024]\n"
	"// output 1 r f32[1024]\n"
	"// output 2 s f32[1024]\n"
	"// workspace 8192\n"
	"// buffer 0 f32[1024] offset=0 bytes=4096\n"
	"// buffer 1 f32[1024] offset=4096 bytes=4096\n"
	"// launch k0 grid=0 block=256 smem=0 coop=0 args=in:0,buf:0\n"
	"// collective all_gather in=buf:0 out=out:0 count=1024 dtype=f32 ranks=1 id=0\n"
	"// collective reduce_scatter in=in:0 out=buf:1 count=1024 dtype=f32 op=sum ranks=1 id=1\n"
	"// wait id=1\n"
	"// launch k0 grid=0 block=256 smem=0 coop=0 args=buf:1,out:1\n"
	"// collective all_reduce in=in:0 out=out:2 count=1024 dtype=f32 op=avg ranks=0 id=2\n"
	"// wait id=0\n"
	"// wait id=2\n"
	"// end-plan\n";

/* The PTX after "// end-plan". */
const char test_kernels_ptx[] = "\n"
				".version 8.0\n"
				".target sm_90\n"
				".address_size 64\n"
				"\n"
				"// k0: dst[i] = src[i] + src[i] for i < 1024, grid-stride\n"
				".visible .entry k0(.param .u64 k0_src, .param .u64 k0_dst)\n"
				"{\n"
				"\t.reg .pred %p<2>;\n"
				"\t.reg .b32 %r<8>;\n"
				"\t.reg .f32 %f<3>;\n"
				"\t.reg .b64 %rd<6>;\n"
				"\tld.param.u64 %rd1, [k0_src];\n"
				"\tld.param.u64 %rd2, [k0_dst];\n"
				"\tcvta.to.global.u64 %rd1, %rd1;\n"
				"\tcvta.to.global.u64 %rd2, %rd2;\n"
				"\tmov.u32 %r1, %ctaid.x;\n"
				"\tmov.u32 %r2, %ntid.x;\n"
				"\tmov.u32 %r3, %tid.x;\n"
				"\tmad.lo.s32 %r4, %r1, %r2, %r3;\n"
				"\tmov.u32 %r5, %nctaid.x;\n"
				"\tmul.lo.s32 %r6, %r5, %r2;\n"
				"k0_loop:\n"
				"\tsetp.ge.s32 %p1, %r4, 1024;\n"
				"\t@%p1 bra k0_done;\n"
				"\tmul.wide.s32 %rd3, %r4, 4;\n"
				"\tadd.s64 %rd4, %rd1, %rd3;\n"
				"\tld.global.f32 %f1, [%rd4];\n"
				"\tadd.f32 %f2, %f1, %f1;\n"
				"\tadd.s64 %rd5, %rd2, %rd3;\n"
				"\tst.global.f32 [%rd5], %f2;\n"
				"\tadd.s32 %r4, %r4, %r6;\n"
				"\tbra.uni k0_loop;\n"
				"k0_done:\n"
				"\tret;\n"
				"}\n"
				"\n"
				"// k1: dst[i] = src[i] + zero[0] for i < 1024, grid-stride (zero is a `zero` buffer)\n"
				".visible .entry k1(.param .u64 k1_src, .param .u64 k1_zero, .param .u64 k1_dst)\n"
				"{\n"
				"\t.reg .pred %p<2>;\n"
				"\t.reg .b32 %r<8>;\n"
				"\t.reg .f32 %f<4>;\n"
				"\t.reg .b64 %rd<7>;\n"
				"\tld.param.u64 %rd1, [k1_src];\n"
				"\tld.param.u64 %rd6, [k1_zero];\n"
				"\tld.param.u64 %rd2, [k1_dst];\n"
				"\tcvta.to.global.u64 %rd1, %rd1;\n"
				"\tcvta.to.global.u64 %rd6, %rd6;\n"
				"\tcvta.to.global.u64 %rd2, %rd2;\n"
				"\tld.global.f32 %f3, [%rd6];\n"
				"\tmov.u32 %r1, %ctaid.x;\n"
				"\tmov.u32 %r2, %ntid.x;\n"
				"\tmov.u32 %r3, %tid.x;\n"
				"\tmad.lo.s32 %r4, %r1, %r2, %r3;\n"
				"\tmov.u32 %r5, %nctaid.x;\n"
				"\tmul.lo.s32 %r6, %r5, %r2;\n"
				"k1_loop:\n"
				"\tsetp.ge.s32 %p1, %r4, 1024;\n"
				"\t@%p1 bra k1_done;\n"
				"\tmul.wide.s32 %rd3, %r4, 4;\n"
				"\tadd.s64 %rd4, %rd1, %rd3;\n"
				"\tld.global.f32 %f1, [%rd4];\n"
				"\tadd.f32 %f2, %f1, %f3;\n"
				"\tadd.s64 %rd5, %rd2, %rd3;\n"
				"\tst.global.f32 [%rd5], %f2;\n"
				"\tadd.s32 %r4, %r4, %r6;\n"
				"\tbra.uni k1_loop;\n"
				"k1_done:\n"
				"\tret;\n"
				"}\n";

static char *
append(char *s, size_t *n, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *ns = realloc(s, *n + la + lb + 1);
	if (!ns) {
		free(s);
		abort();
	}
	memcpy(ns + *n, a, la);
	memcpy(ns + *n + la, b, lb + 1);
	*n += la + lb;
	return ns;
}

/* lines[0..n) with line `line` replaced, each behind prefix */
static char *
lines_text(const char *const *lines, int nlines, int line, const char *with, const char *prefix)
{
	size_t n = 0;
	char *s = calloc(1, 1);
	if (!s)
		abort();
	for (int i = 0; i < nlines; i++) {
		const char *l = i + 1 == line ? with : lines[i];
		if (l) {
			s = append(s, &n, prefix, l);
			s = append(s, &n, "\n", "");
		}
	}
	return s;
}

char *
test_plan_text(int line, const char *with, const char *prefix)
{
	return lines_text(test_plan_lines, TEST_PLAN_NLINES, line, with, prefix);
}

char *
test_program_ptx(int line, const char *with)
{
	char *plan = test_plan_text(line, with, "// ");
	size_t n = strlen(plan);
	plan = append(plan, &n, "// end-plan\n\n", test_kernels_ptx);
	return plan;
}

char *
test_step_ptx(int line, const char *with)
{
	char *s = lines_text(test_step_lines, TEST_STEP_NLINES, line, with, "// ");
	size_t n = strlen(s);
	return append(s, &n, "// end-plan\n\n", test_kernels_ptx);
}

int
test_write_program(const char *path)
{
	char *ptx = test_program_ptx(0, NULL);
	FILE *f = fopen(path, "w");
	int ok = f && fputs(ptx, f) >= 0;
	if (f && fclose(f) != 0)
		ok = 0;
	free(ptx);
	return ok ? 0 : -1;
}

char *
test_replace(const char *s, const char *old, const char *with)
{
	const char *at = strstr(s, old);
	if (!at)
		abort();
	size_t n = 0;
	char *r = calloc(1, 1);
	char *head = strndup(s, (size_t)(at - s));
	if (!r || !head)
		abort();
	r = append(r, &n, head, with);
	r = append(r, &n, at + strlen(old), "");
	free(head);
	return r;
}

char *
test_coll_ptx(void)
{
	char *ext = test_extern_ptx(), *ptx = test_replace(ext, test_extern_plan, test_coll_plan);
	free(ext);
	return ptx;
}

char *
test_extern_ptx(void)
{
	size_t n = strlen(test_extern_plan);
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, test_extern_plan, n + 1);
	return append(s, &n, test_kernels_ptx, "");
}
