/* fe.h — readers that turn text into IR: source files, diagnostics with
 * file:line:col and a caret, the fp8cc IR text reader and the Thunder trace
 * reader. A reader reports the first error it finds and returns NULL. */
#ifndef FP8CC_FE_H
#define FP8CC_FE_H

#include "ir.h"

/* ---- diag.c ---- */

typedef struct {
	const char *path;     /* as the user named it; "<stdin>" for - */
	char *text;           /* NUL-terminated copy */
	size_t len;
} Source;

/* read a file, or standard input for "-"; false with a message on stderr */
bool fe_load(const char *path, Source *src);
void fe_unload(Source *src);
/* "path:line:col: error: msg", the source line, a caret under col (1-based) */
void fe_error(const Source *src, uint32_t line, uint32_t col, const char *fmt, ...);
void fe_verror(const Source *src, uint32_t line, uint32_t col, const char *fmt, va_list ap);
/* where diagnostics go; stderr unless set */
extern FILE *fe_diag_out;

/* ---- irparse.c ---- */

Func *fe_read_ir(Arena *a, const Source *src);
/* true if the text looks like fp8cc IR (first token "func") */
bool fe_is_ir(const Source *src);

/* ---- trace.c ---- */

Func *fe_read_trace(Arena *a, const Source *src);

/* detect the kind from the content and read it */
Func *fe_read(Arena *a, const Source *src);

#endif
