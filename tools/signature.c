/* signature.c — the JSON signature of a program (signature.h): one object
 * per tensor, in order, built with jansson and printed with its keys in the
 * order they were added. */
#include "signature.h"

#include <string.h>

/* {"name": ..., "dtype": ..., "shape": [...]} */
static json_t *
tensor(const SigTensor *t)
{
	json_t *shape = json_array();

	for (int i = 0; shape && i < t->rank; i++)
		if (json_array_append_new(shape, json_integer((json_int_t)t->dims[i])))
			return json_decref(shape), NULL;
	return json_pack("{s:s, s:s, s:o*}", "name", t->name, "dtype", t->dtype, "shape", shape);
}

/* [tensor, ...] */
static json_t *
tensors(const SigTensor *t, int n)
{
	json_t *a = json_array();

	for (int i = 0; a && i < n; i++)
		if (json_array_append_new(a, tensor(&t[i])))
			return json_decref(a), NULL;
	return a;
}

json_t *
sig_json(const char *program, const char *target, const SigFunc *fn, int nfn)
{
	json_t *fns = json_array();

	for (int i = 0; fns && i < nfn; i++) {
		json_t *f = json_pack("{s:s?, s:o*, s:o*}", "name", fn[i].name, "inputs", tensors(fn[i].in, fn[i].nin),
			"outputs", tensors(fn[i].out, fn[i].nout));
		if (!f || json_object_size(f) != 3 || json_array_append_new(fns, f))
			return json_decref(fns), NULL;
	}
	return json_pack("{s:s, s:s, s:o*}", "program", program, "target", target, "functions", fns);
}

int
sig_print(FILE *f, const json_t *j)
{
	if (json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)))
		return -1;
	return fputc('\n', f) == EOF ? -1 : 0;
}

const char *
sig_stem(const char *path, char *buf, size_t n)
{
	const char *base = strrchr(path, '/'), *dot;
	size_t len;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	snprintf(buf, n, "%.*s", (int)len, base);
	return buf;
}
