/* source.c — the input files: read whole into memory (standard input for
 * "-"), freed when the compilation is done. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"

static bool
slurp(FILE *f, Source *src)
{
	size_t cap = 1 << 16, n = 0, got;
	char *buf = malloc(cap), *nb;

	if (!buf)
		return false;
	while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n - 1 == 0) {
			if (cap > ((size_t)1 << 30) || !(nb = realloc(buf, cap * 2))) {
				free(buf);
				return false;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (ferror(f)) {
		free(buf);
		return false;
	}
	buf[n] = 0;
	src->text = buf;
	src->len = n;
	return true;
}

bool
fe_load(const char *path, Source *src)
{
	FILE *f;
	bool ok;

	memset(src, 0, sizeof *src);
	if (strcmp(path, "-") == 0) {
		src->path = "<stdin>";
		ok = slurp(stdin, src);
	} else {
		src->path = path;
		if (!(f = fopen(path, "rb"))) {
			env_error("cannot open '%s': %s", path, strerror(errno));
			return false;
		}
		ok = slurp(f, src);
		fclose(f);
	}
	if (!ok)
		env_error("cannot read '%s'", src->path);
	return ok;
}

void
fe_unload(Source *src)
{
	free(src->text);
	src->text = NULL;
}

/* the text of line `line` (1-based), without its newline */
