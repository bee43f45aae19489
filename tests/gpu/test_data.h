/* test_data.h — the runtime tests' program (test_data.c) and text helpers. */
#ifndef FP8RT_TEST_DATA_H
#define FP8RT_TEST_DATA_H

#define TEST_PLAN_NLINES 18

#define TEST_STEP_NLINES 25

extern const char *const test_plan_lines[TEST_PLAN_NLINES];
extern const char *const test_step_lines[TEST_STEP_NLINES];
extern const char test_kernels_ptx[];

/* The plan with line `line` (1-based; 0: none) replaced by `with` (NULL:
 * dropped), each line behind `prefix` ("" for a bare plan, "// " in PTX).
 * malloc'd. */
char *test_plan_text(int line, const char *with, const char *prefix);
/* The whole PTX file, with the same replacement. malloc'd. */
char *test_program_ptx(int line, const char *with);
/* The two-function step program's PTX file, line `line` replaced as above. */
char *test_step_ptx(int line, const char *with);
/* A program with an extern: y = test.affine(k0(x), scale=3.0, shift=-1,
 * ...) = 3 * 2x - 1, and n = the count of x (test_functions.c, and fp8run
 * with tests/gpu/plugin_affine.c). malloc'd. */
extern const char test_extern_plan[];
char *test_extern_ptx(void);
/* The whole PTX file, unchanged, written to path; 0, or -1 on failure. */
int test_write_program(const char *path);
/* s with the first `old` replaced by `with` (which must be there). malloc'd. */
char *test_replace(const char *s, const char *old, const char *with);
/* a program of collectives (all three kinds) and k0 launches, plan version 5 */
extern const char test_coll_plan[];
char *test_coll_ptx(void);

#endif
