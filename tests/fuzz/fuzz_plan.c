/* fuzz_plan.c — libfp8rt's plan reader on any bytes, without a driver:
 * fp8rt_program_check (a whole PTX file, as loading reads it) and the bare
 * plan form (rt_plan_parse_text, fp8cc --emit=plan). Either fails with
 * "NAME:LINE: message", or gives a plan whose references, buffers and GEMM
 * operands are inside what it declares. */
#include <string.h>

#include "fuzz.h"
#include "plan.h"

static void
check_ref(const RtPlan *p, const RtFunc *fn, RtRef r)
{
	int n = r.kind == REF_IN ? fn->nin : r.kind == REF_OUT ? fn->nout : r.kind == REF_BUF ? fn->nbuf : p->nstate;

	if (r.index < 0 || r.index >= n)
		FUZZ_FAIL("reference %d of kind %d out of range (%d)", r.index, (int)r.kind, n);
}

static void
check_gemm(const RtPlan *p, const RtFunc *fn, const RtGemm *g, int i)
{
	check_ref(p, fn, g->d), check_ref(p, fn, g->a), check_ref(p, fn, g->b);
	if (g->scaled)
		check_ref(p, fn, g->scale_a), check_ref(p, fn, g->scale_b);
	if (g->has_bias)
		check_ref(p, fn, g->bias);
	if (rt_plan_ref_bytes(p, fn, g->a) < rt_gemm_span(g->batch, g->stride_a, g->m, g->k) ||
		rt_plan_ref_bytes(p, fn, g->b) < rt_gemm_span(g->batch, g->stride_b, g->k, g->n) ||
		rt_plan_ref_bytes(p, fn, g->d) < rt_gemm_span(g->batch, g->stride_d, g->m, g->n))
		FUZZ_FAIL("gemm %d operands smaller than m, n, k, batch and strides say", i);
}

static void
check_func(const RtPlan *p, const RtFunc *fn)
{
	for (int i = 0; i < fn->nbuf; i++)
		if (fn->buf[i].offset < 0 || fn->buf[i].bytes < 0 ||
			fn->buf[i].offset + fn->buf[i].bytes > fn->workspace)
			FUZZ_FAIL("buffer %d outside the workspace", i);
	for (int i = 0; i < fn->nreads; i++)
		if (fn->reads[i] < 0 || fn->reads[i] >= p->nstate)
			FUZZ_FAIL("function %s reads state slot %d of %d", fn->name, fn->reads[i], p->nstate);
	for (int i = 0; i < fn->nstep; i++) {
		const RtStep *s = &fn->step[i];

		if (s->kind == STEP_LAUNCH) {
			for (int j = 0; j < s->u.launch.nargs; j++)
				check_ref(p, fn, s->u.launch.args[j]);
		} else if (s->kind == STEP_GEMM) {
			check_gemm(p, fn, &s->u.gemm, i);
		} else if (s->kind == STEP_CALL) {
			for (int j = 0; j < s->u.call.nins; j++)
				check_ref(p, fn, s->u.call.ins[j]);
			for (int j = 0; j < s->u.call.nouts; j++)
				check_ref(p, fn, s->u.call.outs[j]);
		} else if (s->kind == STEP_COLLECTIVE) {
			const RtCollective *c = &s->u.coll;
			int64_t r = c->ranks ? c->ranks : 1, size = (int64_t)rt_dtype_size(c->dtype);

			check_ref(p, fn, c->in), check_ref(p, fn, c->out);
			if (c->id < 0 || c->id >= fn->ncoll ||
				rt_plan_ref_bytes(p, fn, c->in) <
					(c->kind == RT_REDUCE_SCATTER ? r : 1) * c->count * size ||
				rt_plan_ref_bytes(p, fn, c->out) < (c->kind == RT_ALL_GATHER ? r : 1) * c->count * size)
				FUZZ_FAIL("collective %d: id %d of %d, or its tensors smaller than it moves", i, c->id,
					fn->ncoll);
		} else if (s->kind == STEP_WAIT) {
			if (s->u.wait < 0 || s->u.wait >= fn->ncoll)
				FUZZ_FAIL("wait %d for collective %d of %d", i, s->u.wait, fn->ncoll);
		} else {
			check_ref(p, fn, s->u.copy.dst), check_ref(p, fn, s->u.copy.src);
			if (s->u.copy.bytes > rt_plan_ref_bytes(p, fn, s->u.copy.src) ||
				s->u.copy.bytes > rt_plan_ref_bytes(p, fn, s->u.copy.dst))
				FUZZ_FAIL("copy %d larger than its operands", i);
		}
	}
}

static void
check_plan(const RtPlan *p, size_t len)
{
	if (p->ptx_offset > len || p->sm < 10 || !p->target[0] || p->nfunc < 1)
		FUZZ_FAIL("ptx_offset %zu of %zu, sm %d, %d functions", p->ptx_offset, len, p->sm, p->nfunc);
	for (int i = 0; i < p->nstate; i++)
		if (p->state[i].from < 0 || p->state[i].from >= p->nfunc || p->state[i].offset % 256 ||
			p->state[i].offset >= p->state_bytes)
			FUZZ_FAIL("state %d: from %d, offset %lld of %lld", i, p->state[i].from,
				(long long)p->state[i].offset, (long long)p->state_bytes);
	for (int f = 0; f < p->nfunc; f++)
		check_func(p, &p->func[f]);
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
