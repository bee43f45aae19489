/* ident.h — the one rule for a name in the plan (a kernel, a function):
 * [A-Za-z_$][A-Za-z0-9_$]*, PTX's identifiers. The runtime's plan reader
 * takes only such names, so the IR reader refuses others where they are
 * written. */
#ifndef FP8CC_IDENT_H
#define FP8CC_IDENT_H

#include <stdbool.h>
#include <stddef.h>

static inline bool
plan_ident(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			    c == '$'))
			return false;
	}
	return true;
}

#endif
