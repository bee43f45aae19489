/* fuzz_read.h — the checks the reader harnesses share: whatever a reader
 * accepts verifies, and prints as IR text that reads back to the same text
 * (the printer's promise: every pass is testable text in, text out). */
#ifndef FP8CC_FUZZ_READ_H
#define FP8CC_FUZZ_READ_H

#include <string.h>

#include "fe.h"
#include "fuzz.h"

/* fn printed; malloc'd, its length in *len */
static inline char *
fuzz_print(Func *fn, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	if (!f)
		abort();
	ir_print(f, fn);
	if (fclose(f))
		abort();
	return text;
}

/* fn verifies, and its text reads back and prints the same */
static inline void
fuzz_check_read(Func *fn)
{
	char err[512];
	size_t n1, n2;
	char *t1, *t2;
	Arena *a;
	Func *back;
	Source src;

	if (!ir_verify(fn, err, sizeof err, NULL))
		FUZZ_FAIL("the reader accepted IR that does not verify: %s", err);
	t1 = fuzz_print(fn, &n1);
	a = arena_new();
	src = (Source){ .path = "<printed>", .text = t1, .len = n1 };
	fe_diag_out = stderr;
	if (!(back = fe_read_ir(a, &src)))
		FUZZ_FAIL("the printed IR does not read back:\n%s", t1);
	fe_diag_out = fuzz_devnull();
	t2 = fuzz_print(back, &n2);
	if (n1 != n2 || memcmp(t1, t2, n1))
		FUZZ_FAIL("the printed IR prints differently when read back:\n%s\n---\n%s", t1, t2);
	free(t2);
	free(t1);
	arena_free(a);
}

#endif
