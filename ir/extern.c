/* extern.c — the argument list of an extern call, in its canonical form
 * (docs/ir.md, "Externs"):
 *
 *   args  := [item {", " item}]
 *   item  := [KEY "="] value
 *   value := "@" INT | INT | FLOAT | "True" | "False" | "None" | STRING | NAME
 *          | "(" [value {", " value} [","]] ")"
 *   FLOAT := a decimal with "." or an exponent, or inf, -inf, nan
 *   STRING := "'" { char other than ' and \ | "\\" | "\'" } "'"
 *   NAME  := IDENT {"." IDENT}            (torch.float32)
 *
 * @N is tensor operand N of the call; the k-th @ of the list is @k. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"

typedef struct {
	const char *s, *p;
	uint32_t nops, nat; /* operands; @ seen so far */
	char *err;
	size_t errlen;
} Args;

static bool
fail(Args *a, const char *what)
{
	snprintf(a->err, a->errlen, "extern arguments: %s at column %d of '%s'", what, (int)(a->p - a->s) + 1, a->s);
	return false;
}

static bool
ident(Args *a)
{
	if (!isalpha((unsigned char)*a->p) && *a->p != '_')
		return false;
	while (isalnum((unsigned char)*a->p) || *a->p == '_')
		a->p++;
	return true;
}

static bool
number(Args *a)
{
	const char *q = a->p;

	if (*q == '-')
		q++;
	if (!strncmp(q, "inf", 3) || !strncmp(q, "nan", 3)) {
		a->p = q + 3;
		return true;
	}
	if (!isdigit((unsigned char)*q))
		return fail(a, "expected a value");
	while (isdigit((unsigned char)*q))
		q++;
	if (*q == '.')
		for (q++; isdigit((unsigned char)*q); q++)
			;
	if (*q == 'e' || *q == 'E') {
		q++;
		if (*q == '-' || *q == '+')
			q++;
		if (!isdigit((unsigned char)*q))
			return fail(a, "bad exponent");
		while (isdigit((unsigned char)*q))
			q++;
	}
	a->p = q;
	return true;
}

static bool
value(Args *a, int depth)
{
	if (depth > 16)
		return fail(a, "tuples nested too deep");
	if (*a->p == '@') {
		unsigned long n = 0;

		a->p++;
		if (!isdigit((unsigned char)*a->p))
			return fail(a, "expected an operand number after @");
		while (isdigit((unsigned char)*a->p))
			n = n * 10 + (unsigned long)(*a->p++ - '0');
		if (n >= a->nops)
			return fail(a, "operand out of range");
		if (n != a->nat)
			return fail(a, "operands out of order (the k-th @ is @k)");
		a->nat++;
		return true;
	}
	if (*a->p == '\'') {
		for (a->p++; *a->p != '\''; a->p++) {
			if (!*a->p)
				return fail(a, "unterminated string");
			if (*a->p == '\\' && (a->p[1] == '\\' || a->p[1] == '\''))
				a->p++;
			else if (*a->p == '\\' || (unsigned char)*a->p < 0x20)
				return fail(a, "bad character in a string");
		}
		a->p++;
		return true;
	}
	if (*a->p == '(') {
		a->p++;
		while (*a->p != ')') {
			if (!value(a, depth + 1))
				return false;
			if (*a->p == ',') {
				a->p++;
				if (*a->p == ' ')
					a->p++;
			} else if (*a->p != ')') {
				return fail(a, "expected ',' or ')'");
			}
		}
		a->p++;
		return true;
	}
	if (ident(a)) { /* True, False, None, a dotted name */
		while (*a->p == '.') {
			a->p++;
			if (!ident(a))
				return fail(a, "bad name");
		}
		return true;
	}
	return number(a);
}

bool
ext_args_check(const char *s, uint32_t nops, char *err, size_t errlen)
{
	Args a = { s, s, nops, 0, err, errlen };

	while (*a.p) {
		const char *q = a.p;

		if (ident(&a) && *a.p == '=') /* KEY= */
			a.p++;
		else
			a.p = q;
		if (!value(&a, 0))
			return false;
		if (!*a.p)
			break;
		if (strncmp(a.p, ", ", 2) != 0)
			return fail(&a, "expected ', '");
		a.p += 2;
		if (!*a.p)
			return fail(&a, "expected an argument");
	}
	if (a.nat != nops) {
		snprintf(err, errlen, "extern arguments '%s' name %u tensors, the call has %u", s, a.nat, nops);
		return false;
	}
	return true;
}

void
ext_args_print(FILE *f, Func *fn, const char *s, const uint32_t *ops)
{
	char nb[16];
	bool quoted = false;

	for (const char *p = s; *p; p++) {
		if (quoted) { /* inside a string: \\ and \' are two characters */
			fputc(*p, f);
			if (*p == '\\' && p[1])
				fputc(*++p, f);
			else if (*p == '\'')
				quoted = false;
		} else if (*p == '@') {
			unsigned long n = 0;

			while (isdigit((unsigned char)p[1]))
				n = n * 10 + (unsigned long)(*++p - '0');
			fprintf(f, "%%%s", ir_name(fn, ops[n], nb));
		} else {
			quoted = *p == '\'';
			fputc(*p, f);
		}
	}
}
