/* fuzz.h — what the libFuzzer harnesses of tests/fuzz share.
 *
 * Each harness defines LLVMFuzzerTestOneInput: built with clang's
 * -fsanitize=fuzzer it is a coverage-guided fuzzer (tools/fuzz.sh); linked
 * with replay.c instead it runs the inputs of its corpus directory once,
 * under any compiler, as a ctest test. A harness aborts (die, assert, a
 * sanitizer report) on a finding and returns 0 otherwise. */
#ifndef FP8CC_FUZZ_H
#define FP8CC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a finding: say what and abort, so libFuzzer keeps the input */
#define FUZZ_FAIL(...)                                                                                            \
	(fprintf(stderr, "fuzz: %s:%d: ", __FILE__, __LINE__), fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), \
		abort())

/* data as a NUL-terminated malloc'd copy (the readers' Source.text) */
static inline char *
fuzz_text(const uint8_t *data, size_t size)
{
	char *t = malloc(size + 1);

	if (!t)
		abort();
	for (size_t i = 0; i < size; i++)
		t[i] = (char)data[i];
	t[size] = 0;
	return t;
}

/* where diagnostics go while fuzzing: nowhere */
static inline FILE *
fuzz_devnull(void)
{
	static FILE *f;

	if (!f && !(f = fopen("/dev/null", "w")))
		abort();
	return f;
}

#endif
