/* fuzz_ir.c — the IR text reader (fe_read_ir) on any bytes: it either
 * reports an error or returns IR that verifies and prints as text that
 * reads back to the same text (fuzz_read.h). */
#include "fuzz_read.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Source src = { .path = "fuzz.ir", .text = fuzz_text(data, size), .len = size };
	Arena *a = arena_new();
	Func *fn;

	fe_diag_out = fuzz_devnull();
	if ((fn = fe_read_ir(a, &src)))
		fuzz_check_read(fn);
	arena_free(a);
	fe_unload(&src);
	return 0;
}
