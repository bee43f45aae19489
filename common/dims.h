/* dims.h — a shape as text, "[16,32]" or "[16, 32]", for every message that
 * prints one. */
#ifndef FP8CC_DIMS_H
#define FP8CC_DIMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* dims[0..rank) between brackets, sep between them, into buf (cut to n) */
static inline const char *
dims_str(const int64_t *dims, int rank, const char *sep, char *buf, size_t n)
{
	size_t used = (size_t)snprintf(buf, n, "[");

	for (int i = 0; i < rank && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? sep : "", (long long)dims[i]);
	if (used < n)
		snprintf(buf + used, n - used, "]");
	return buf;
}

#endif
