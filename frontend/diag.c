/* diag.c — diagnostics.
 *
 * Errors print as clang does: "path:line:col: error: message", then the source
 * line, then a caret under the column. Columns count bytes from 1. Notes
 * ("note") and the last word ("fatal error") print the same way; line 0
 * means the file as a whole. */
#include <stdlib.h>
#include <string.h>

#include "fe.h"

FILE *fe_diag_out;

static const char *
line_at(const Source *src, uint32_t line, size_t *len)
{
	const char *p = src->text, *end = src->text + src->len, *nl;

	for (uint32_t l = 1; l < line && p < end; l++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	nl = memchr(p, '\n', (size_t)(end - p));
	*len = (size_t)((nl ? nl : end) - p);
	return p;
}

static void
vdiag(const Source *src, uint32_t line, uint32_t col, const char *kind, const char *fmt, va_list ap)
{
	FILE *out = fe_diag_out ? fe_diag_out : stderr;
	size_t len;
	const char *text;

	if (line == 0)
		fprintf(out, "%s: %s: ", src->path, kind);
	else
		fprintf(out, "%s:%u:%u: %s: ", src->path, line, col, kind);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	if (line == 0)
		return;
	text = line_at(src, line, &len);
	if (len > 400) { /* a long line: show the 400 bytes around the column */
		size_t from = col > 200 ? col - 200 : 0;

		from = from > len - 400 ? len - 400 : from;
		text += from;
		col -= (uint32_t)from;
		len = 400;
	}
	for (size_t i = 0; i < len; i++)
		fputc((unsigned char)text[i] < 0x20 && text[i] != '\t' ? ' ' : text[i], out);
	fputc('\n', out);
	for (uint32_t i = 1; i < col && i <= len; i++)
		fputc(text[i - 1] == '\t' ? '\t' : ' ', out);
	fputs("^\n", out);
}

void
fe_verror(const Source *src, uint32_t line, uint32_t col, const char *fmt, va_list ap)
{
	vdiag(src, line, col, "error", fmt, ap);
}

/* the text fe_diag would print, in a string of the caller's (free it) */
char *
fe_vformat(const Source *src, uint32_t line, uint32_t col, const char *kind, const char *fmt, va_list ap)
{
	FILE *old = fe_diag_out, *f;
	char *buf = NULL;
	size_t len = 0;

	if (!(f = open_memstream(&buf, &len)))
		fatal("out of memory");
	fe_diag_out = f;
	vdiag(src, line, col, kind, fmt, ap);
	fe_diag_out = old;
	if (fclose(f) != 0 || !buf)
		fatal("out of memory");
	return buf;
}

void
fe_error(const Source *src, uint32_t line, uint32_t col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(src, line, col, "error", fmt, ap);
	va_end(ap);
}

void
fe_diag(const Source *src, uint32_t line, uint32_t col, const char *kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(src, line, col, kind, fmt, ap);
	va_end(ap);
}
