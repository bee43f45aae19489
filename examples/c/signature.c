/* signature.c — an application of libfp8rt, built outside the fp8cc tree
 * against an installed libfp8rt (CMakeLists.txt: find_package; Makefile:
 * pkg-config). It needs no GPU: it reads an fp8cc program, checks its plan
 * and prints its signature, one line per input and output, in the plan's
 * own words ("input 0 x bf16[16,32]").
 *
 *   usage: signature PROGRAM.ptx
 */
#include <stdio.h>
#include <stdlib.h>

#include <fp8rt.h>

/* The whole file at path, malloc'd, in *len bytes; NULL on failure. */
static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
		(buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void
print_port(const char *kind, int i, const fp8rt_tensor_info *t)
{
	printf("%s %d %s %s[", kind, i, t->name, fp8rt_dtype_name(t->dtype));
	for (int d = 0; d < t->rank; d++)
		printf("%s%lld", d ? "," : "", (long long)t->dims[d]);
	printf("]\n");
}

int
main(int argc, char **argv)
{
	fp8rt_program *prog;
	fp8rt_tensor_info t;
	size_t len = 0;
	char *ptx;
	int nin, nout, lo, hi;

	if (argc != 2) {
		fprintf(stderr, "usage: signature PROGRAM.ptx\n");
		return 2;
	}
	if (fp8rt_version() / 10000 != FP8RT_VERSION_MAJOR) {
		fprintf(stderr, "built for libfp8rt %d, running with %d\n", FP8RT_VERSION, fp8rt_version());
		return 1;
	}
	if (!(ptx = slurp(argv[1], &len))) {
		perror(argv[1]);
		return 1;
	}
	if (fp8rt_program_check(ptx, len, argv[1]) != FP8RT_OK ||
		fp8rt_program_read(ptx, len, argv[1], &prog) != FP8RT_OK) {
		fprintf(stderr, "%s\n", fp8rt_last_error(NULL));
		free(ptx);
		return 1;
	}
	free(ptx);
	fp8rt_plan_versions(&lo, &hi);
	printf("# libfp8rt %d reads plan versions %d..%d\n", fp8rt_version(), lo, hi);
	printf("target %s\n", fp8rt_program_target(prog));
	fp8rt_program_io_count(prog, &nin, &nout);
	for (int i = 0; i < nin; i++)
		if (fp8rt_program_input(prog, i, &t) == FP8RT_OK)
			print_port("input", i, &t);
	for (int i = 0; i < nout; i++)
		if (fp8rt_program_output(prog, i, &t) == FP8RT_OK)
			print_port("output", i, &t);
	fp8rt_program_destroy(prog);
	return 0;
}
