/* replay.c — a main for a fuzz harness without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file named, and on every regular
 * file of every directory named, in name order. A finding aborts; otherwise
 * it prints how many inputs ran. The ctest tests fuzz-* replay each
 * harness's corpus (tests/fuzz/corpus/HARNESS) this way, so every input a
 * campaign found stays a regression test, under gcc and the sanitizers too.
 *
 * usage: replay-HARNESS PATH... */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0, got = 1;

	if (!f) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return 1;
	}
	while (got) {
		if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 4096)))
			abort();
		n += got = fread(buf + n, 1, cap - n, f);
	}
	fclose(f);
	/* an exact-size copy, so AddressSanitizer sees a read past the end */
	uint8_t *exact = malloc(n ? n : 1);

	if (!exact)
		abort();
	memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

static int
byname(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every regular file of dir, in name order; the count run in *ran */
static int
run_dir(const char *dir, int *ran)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0;
	struct stat st;
	int bad = 0;

	if (!d) {
		fprintf(stderr, "replay: cannot open %s\n", dir);
		return 1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names)))
			abort();
		if (!(names[n++] = strdup(e->d_name)))
			abort();
	}
	closedir(d);
	qsort(names, n, sizeof *names, byname);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			bad |= run_file(path);
			(*ran)++;
		}
		free(names[i]);
	}
	free(names);
	return bad;
}

int
main(int argc, char **argv)
{
	struct stat st;
	int bad = 0, ran = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			bad |= run_dir(argv[i], &ran);
		} else {
			bad |= run_file(argv[i]);
			ran++;
		}
	}
	printf("replay: %d inputs, no finding%s\n", ran, bad ? "; some could not be read" : "");
	return bad;
}
