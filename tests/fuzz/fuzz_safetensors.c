/* fuzz_safetensors.c — the safetensors reader (st_read_mem) on any bytes:
 * it either fails with a message or returns tensors that keep its promises
 * (known dtypes, nbytes = product(dims) * size, distinct names, data never
 * NULL), and that st_write writes and st_read reads back equal. */
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "safetensors.h"

static char path[64];

static void
remove_tmp(void)
{
	unlink(path);
}

/* a file of our own for the round trip, made once */
static const char *
tmp_path(void)
{
	int fd;

	if (path[0])
		return path;
	snprintf(path, sizeof path, "/tmp/fuzz_st_XXXXXX");
	if ((fd = mkstemp(path)) < 0)
		abort();
	close(fd);
	atexit(remove_tmp);
	return path;
}

static void
check_tensor(const StFile *f, int i)
{
	const StTensor *t = &f->t[i];
	size_t n = (size_t)st_dtype_size(t->dtype);

	if (!n || t->rank < 0 || t->rank > ST_MAXRANK || !t->data || !t->name)
		FUZZ_FAIL("tensor %d: bad dtype, rank or pointers", i);
	for (int d = 0; d < t->rank; d++)
		n *= (size_t)t->dims[d];
	if (n != t->nbytes)
		FUZZ_FAIL("tensor %d '%s': nbytes %zu, its type holds %zu", i, t->name, t->nbytes, n);
	for (int j = 0; j < i; j++)
		if (!strcmp(f->t[j].name, t->name))
			FUZZ_FAIL("tensors %d and %d are both '%s'", j, i, t->name);
}

static void
check_same(const StFile *a, const StFile *b)
{
	if (a->n != b->n)
		FUZZ_FAIL("%d tensors written, %d read back", a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		const StTensor *x = &a->t[i], *y = &b->t[i];

		if (strcmp(x->name, y->name) || strcmp(x->dtype, y->dtype) || x->rank != y->rank ||
			memcmp(x->dims, y->dims, sizeof x->dims) || x->nbytes != y->nbytes ||
			memcmp(x->data, y->data, x->nbytes))
			FUZZ_FAIL("tensor %d '%s' reads back different", i, x->name);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	StFile f, back;
	char err[512];

	if (st_read_mem(data, size, &f, err, sizeof err)) {
		if (f.n || f.t || !err[0])
			FUZZ_FAIL("a failed read left tensors or no message");
		return 0;
	}
	for (int i = 0; i < f.n; i++)
		check_tensor(&f, i);
	if (st_write(tmp_path(), f.t, f.n, err, sizeof err))
		FUZZ_FAIL("what was read does not write: %s", err);
	if (st_read(tmp_path(), &back, err, sizeof err))
		FUZZ_FAIL("what was written does not read back: %s", err);
	check_same(&f, &back);
	st_free(&back);
	st_free(&f);
	return 0;
}
