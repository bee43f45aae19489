/* fuzz_trace.c — the Thunder trace reader (fe_read_trace) on any bytes: it
 * either reports an error or returns IR that verifies and prints as text
 * the IR reader reads back (fuzz_read.h). */
#include "fuzz_read.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Source src = { .path = "fuzz.trace", .text = fuzz_text(data, size), .len = size };
	Arena *a = arena_new();
	Func *fn;

	fe_diag_out = fuzz_devnull();
	if ((fn = fe_read_trace(a, &src)))
		fuzz_check_read(fn);
	arena_free(a);
	fe_unload(&src);
	return 0;
}
