/* fuzz_plan.c — libfp8rt's plan reader on any bytes, without a driver:
 * fp8rt_program_check (a whole PTX file, as loading reads it) and the bare
 * plan form (rt_plan_parse_text, fp8cc --emit=plan). Either fails with
 * "NAME:LINE: message", or gives a plan whose references, buffers and GEMM
 * operands are inside what it declares. */
#include <string.h>

#include "fuzz.h"
#include "plan.h"

static void
check_ref(const RtPlan *p, RtRef r)
{
	int n = r.kind == REF_IN ? p->nin : r.kind == REF_OUT ? p->nout : p->nbuf;

	if (r.index < 0 || r.index >= n)
		FUZZ_FAIL("reference %d of kind %d out of range (%d)", r.index, (int)r.kind, n);
}

static void
check_plan(const RtPlan *p, size_t len)
{
	if (p->ptx_offset > len || p->sm < 10 || !p->target[0])
		FUZZ_FAIL("ptx_offset %zu of %zu, sm %d", p->ptx_offset, len, p->sm);
	for (int i = 0; i < p->nbuf; i++)
		if (p->buf[i].offset < 0 || p->buf[i].bytes < 0 ||
		    p->buf[i].offset + p->buf[i].bytes > p->workspace)
			FUZZ_FAIL("buffer %d outside the workspace", i);
	for (int i = 0; i < p->nstep; i++) {
		const RtStep *s = &p->step[i];

		if (s->kind == STEP_LAUNCH) {
			for (int j = 0; j < s->u.launch.nargs; j++)
				check_ref(p, s->u.launch.args[j]);
		} else if (s->kind == STEP_GEMM) {
			const RtGemm *g = &s->u.gemm;

			check_ref(p, g->d), check_ref(p, g->a), check_ref(p, g->b);
			check_ref(p, g->scale_a), check_ref(p, g->scale_b);
			if (g->has_bias)
				check_ref(p, g->bias);
			if (rt_plan_ref_bytes(p, g->a) < g->m * g->k || rt_plan_ref_bytes(p, g->b) < g->k * g->n)
				FUZZ_FAIL("gemm %d operands smaller than m, n, k say", i);
		} else {
			check_ref(p, s->u.copy.dst), check_ref(p, s->u.copy.src);
			if (s->u.copy.bytes > rt_plan_ref_bytes(p, s->u.copy.src) ||
			    s->u.copy.bytes > rt_plan_ref_bytes(p, s->u.copy.dst))
				FUZZ_FAIL("copy %d larger than its operands", i);
		}
	}
}

static void
check_failure(fp8rt_status st, const char *msg)
{
	if (st != FP8RT_BAD_PROGRAM && st != FP8RT_UNSUPPORTED)
		FUZZ_FAIL("status %s on bad text: %s", fp8rt_status_name(st), msg);
	if (strncmp(msg, "fuzz.ptx:", 9) != 0)
		FUZZ_FAIL("the message does not name the line: %s", msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024];
	RtPlan p;
	fp8rt_status st = fp8rt_program_check(data, size, "fuzz.ptx");

	if (st != FP8RT_OK)
		check_failure(st, fp8rt_last_error(NULL));
	if (rt_plan_parse_ptx((const char *)data, size, "fuzz.ptx", &p, err, sizeof err) != st)
		FUZZ_FAIL("fp8rt_program_check and the plan parser disagree: %s", err);
	if (st == FP8RT_OK) {
		check_plan(&p, size);
		rt_plan_free(&p);
	} else {
		check_failure(st, err);
		if (p.arena)
			FUZZ_FAIL("a failed parse left an arena");
	}
	st = rt_plan_parse_text((const char *)data, size, "fuzz.ptx", &p, err, sizeof err);
	if (st == FP8RT_OK) {
		check_plan(&p, size);
		rt_plan_free(&p);
	} else {
		check_failure(st, err);
	}
	return 0;
}
