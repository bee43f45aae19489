/* fuzz_planread.c — the pipeline harness's view of libfp8rt's plan parser:
 * the plan text fp8cc wrote must read back with the program's signature,
 * or, of a plan version this runtime does not read, be refused as such. */
#include <string.h>

#include "fuzz.h"
#include "plan.h"

void fuzz_read_plan(const char *text, size_t len, int version, uint32_t nin, const char *const *outs, uint32_t nout);

void
fuzz_read_plan(const char *text, size_t len, int version, uint32_t nin, const char *const *outs, uint32_t nout)
{
	char err[1024];
	RtPlan p;
	fp8rt_status st = rt_plan_parse_text(text, len, "plan", &p, err, sizeof err);

	if (version > RT_PLAN_VERSION_MAX) {
		if (st != FP8RT_BAD_PROGRAM || !strstr(err, "plan version"))
			FUZZ_FAIL("a version %d plan is not refused as one: %s", version, err);
		return;
	}
	if (st != FP8RT_OK)
		FUZZ_FAIL("libfp8rt refuses the plan fp8cc wrote: %s\n%.*s", err, (int)len, text);
	const RtFunc *fn = &p.func[0];

	if (p.nfunc != 1 || (uint32_t)fn->nin != nin || (uint32_t)fn->nout != nout)
		FUZZ_FAIL("the plan has %d functions, %d inputs and %d outputs, the program 1, %u and %u", p.nfunc,
			fn->nin, fn->nout, nin, nout);
	for (uint32_t i = 0; i < nout; i++)
		if (strcmp(fn->out[i].name, outs[i]))
			FUZZ_FAIL("plan output %u is '%s', the program's '%s'", i, fn->out[i].name, outs[i]);
	rt_plan_free(&p);
}
