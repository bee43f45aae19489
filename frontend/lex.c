/* lex.c — the trace reader's bottom layer: errors with a caret, the checks that
 * the input is text, and the lexer, which turns a line into tokens.
 *
 * An error is kept once and unwinds (longjmp) to the reader's current
 * recovery point: the line being read in pass 1, the statement being lowered
 * in pass 2. The reader goes on with the next one, so one run reports every
 * problem of a file, up to FE_MAXERRORS; then it stops. The diagnostics are
 * printed at the end, in the order of their lines. */
#include "trace.h"
#include "utf8.h"

/* ---- errors ---- */

/* keep a diagnostic; they are printed in the order of their lines */
static void
keep(Reader *r, uint32_t line, uint32_t col, const char *kind, const char *fmt, va_list ap)
{
	char *text = fe_vformat(r->src, line, col, kind, fmt, ap);

	GROW(r, r->diags, r->capdiags, r->ndiags + 1);
	r->diags[r->ndiags].line = line;
	r->diags[r->ndiags++].text = arena_strndup(r->a, text, strlen(text));
	free(text);
}

noreturn void
tr_errat(Reader *r, uint32_t line, uint32_t col, const char *fmt, ...)
{
	va_list ap;

	if (r->quiet)
		longjmp(*r->jb, 1);
	va_start(ap, fmt);
	keep(r, line, col, "error", fmt, ap);
	va_end(ap);
	if (++r->nerrors >= FE_MAXERRORS)
		longjmp(r->abort, 1);
	longjmp(*r->jb, 1);
}

void
tr_note(Reader *r, uint32_t line, uint32_t col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	keep(r, line, col, "note", fmt, ap);
	va_end(ap);
}

/* print what was kept, by line (in the order found within a line) */
void
tr_flush(Reader *r)
{
	FILE *out = fe_diag_out ? fe_diag_out : stderr;

	for (uint32_t i = 1; i < r->ndiags; i++) /* insertion sort: stable, and nearly sorted */
		for (uint32_t j = i; j > 0 && r->diags[j - 1].line > r->diags[j].line; j--) {
			Diag t = r->diags[j];

			r->diags[j] = r->diags[j - 1];
			r->diags[j - 1] = t;
		}
	for (uint32_t i = 0; i < r->ndiags; i++)
		fputs(r->diags[i].text, out);
	if (r->nerrors >= FE_MAXERRORS)
		fe_diag(r->src, 0, 0, "fatal error", "too many errors (%d), stopping now", FE_MAXERRORS);
	r->ndiags = 0;
}

/* give up the statement without a message: it uses what an earlier error
 * left undefined */
noreturn void
tr_silent(Reader *r)
{
	longjmp(*r->jb, 1);
}

/* "f32[16, 32]", as Thunder's type comments print a type */
const char *
tr_tystr(const Type *t, char *buf, size_t n)
{
	char dims[200];

	snprintf(buf, n, "%s%s", ir_dtypes[t->dt].thunder, dims_str(t->d, t->rank, ", ", dims, sizeof dims));
	return buf;
}

void
tr_vtype(Func *fn, uint32_t v, Type *t)
{
	t->dt = (DType)fn->vals[v].dtype;
	t->rank = fn->vals[v].rank;
	memcpy(t->d, ir_dims(fn, v), (size_t)t->rank * sizeof *t->d);
}

bool
tr_same_shape(const Type *a, const Type *b)
{
	return a->rank == b->rank && memcmp(a->d, b->d, (size_t)a->rank * sizeof *a->d) == 0;
}

/* ---- the input as text ---- */

/* An empty file or binary data gets its own message: NUL bytes, control
 * bytes other than tab, CR and LF, bytes that are not UTF-8. */
bool
tr_check_text(const Source *src)
{
	const unsigned char *p = (const unsigned char *)src->text;
	uint32_t line = 1, col = 1;
	size_t i = 0, k;

	while (i < src->len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
		i++;
	if (i == src->len) {
		fe_error(src, 1, 1, "empty input: expected a Thunder trace or fp8cc IR");
		return false;
	}
	for (i = 0; i < src->len; i += k, col += (uint32_t)k) {
		k = utf8_seq_len(p + i, src->len - i);
		if (p[i] == '\n') {
			line++;
			col = 0;
		} else if (p[i] == 0) {
			fe_error(src, line, col, "NUL byte in the input: this is binary data, not a trace");
			return false;
		} else if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\r') || p[i] == 0x7F) {
			fe_error(src, line, col,
				"control byte 0x%02X in the input: this looks like binary data, not a trace", p[i]);
			return false;
		} else if (k == 0) {
			fe_error(src, line, col,
				"byte 0x%02X is not valid UTF-8: this looks like binary data, not a trace", p[i]);
			return false;
		}
	}
	return true;
}

/* ---- the lexer: one line at a time ---- */

static Tok *
newtok(Reader *r, TokKind k, uint32_t at, uint32_t len)
{
	Tok *t;

	GROW(r, r->toks, r->captoks, r->ntoks + 1);
	t = &r->toks[r->ntoks++];
	memset(t, 0, sizeof *t);
	t->kind = k;
	t->p = r->lp + at;
	t->len = len;
	t->col = at + 1;
	t->line = r->lineno;
	return t;
}

static double
lex_float(Reader *r, uint32_t at, uint32_t len)
{
	char buf[512];

	if (len >= sizeof buf)
		tr_errat(r, r->lineno, at + 1, "number literal is too long");
	memcpy(buf, r->lp + at, len);
	buf[len] = 0;
	return strtod(buf, NULL);
}

static int64_t
lex_int(Reader *r, uint32_t at, uint32_t len)
{
	int64_t v = 0;

	for (uint32_t i = 0; i < len; i++) {
		int d = r->lp[at + i] - '0';

		if (v > (INT64_MAX - d) / 10)
			tr_errat(r, r->lineno, at + 1, "integer literal is too large");
		v = v * 10 + d;
	}
	return v;
}

/* number := digits ["." digits] [("e"|"E") ["+"|"-"] digits] | "." digits ... */
static uint32_t
lex_number(Reader *r, uint32_t i)
{
	const char *s = r->lp;
	uint32_t n = r->llen, j = i, k;
	bool isf = false;
	Tok *t;

	while (j < n && isdig(s[j]))
		j++;
	if (j < n && s[j] == '.') {
		isf = true;
		for (j++; j < n && isdig(s[j]); j++)
			;
	}
	if (j < n && (s[j] == 'e' || s[j] == 'E')) {
		k = j + 1;
		if (k < n && (s[k] == '+' || s[k] == '-'))
			k++;
		if (k < n && isdig(s[k])) {
			isf = true;
			for (j = k; j < n && isdig(s[j]); j++)
				;
		}
	}
	if (j < n && isname1(s[j]))
		tr_errat(r, r->lineno, i + 1, "invalid number literal '%.*s'", (int)(j + 1 - i), s + i);
	t = newtok(r, isf ? T_FLOAT : T_INT, i, j - i);
	if (isf)
		t->f = lex_float(r, i, j - i);
	else
		t->i = lex_int(r, i, j - i);
	return j;
}

/* string := "'" chars "'" | '"' chars '"', backslash escapes one char */
static uint32_t
lex_string(Reader *r, uint32_t i)
{
	const char *s = r->lp;
	char q = s[i];
	uint32_t j = i + 1;
	Tok *t;

	while (j < r->llen && s[j] != q)
		j += s[j] == '\\' ? 2 : 1;
	if (j >= r->llen)
		tr_errat(r, r->lineno, i + 1, "unterminated string");
	t = newtok(r, T_STR, i + 1, j - i - 1);
	t->col = i + 1;
	return j + 1;
}

static uint32_t
lex_one(Reader *r, uint32_t i)
{
	const char *s = r->lp;
	unsigned char c = (unsigned char)s[i];
	uint32_t j = i;

	if (c == '#') {
		newtok(r, T_COMMENT, i, r->llen - i);
		return r->llen;
	}
	if (isname0(c)) {
		while (j < r->llen && isname1(s[j]))
			j++;
		newtok(r, T_NAME, i, j - i);
		return j;
	}
	if (isdig(c) || (c == '.' && i + 1 < r->llen && isdig(s[i + 1])))
		return lex_number(r, i);
	if (c == '\'' || c == '"')
		return lex_string(r, i);
	if (c != 0 && strchr("()[]{},:=.-*", c)) {
		newtok(r, T_PUNCT, i, 1);
		return i + 1;
	}
	if (c >= 0x21 && c < 0x7F)
		tr_errat(r, r->lineno, i + 1, "unexpected character '%c'", c);
	tr_errat(r, r->lineno, i + 1, "unexpected byte 0x%02X", c);
}

/* Tokenize the current line from byte `start`, after the tokens of the lines
 * it continues; true if it ends in a backslash, which continues it on the
 * next line. The last line's tokens end in T_EOF. */
bool
tr_lex_line(Reader *r, uint32_t start, bool more)
{
	uint32_t i = start, end = r->llen;

	if (!more) {
		r->ntoks = 0;
		r->pos = 0;
	}
	while (end > i && (r->lp[end - 1] == ' ' || r->lp[end - 1] == '\t'))
		end--;
	if (end > i && r->lp[end - 1] == '\\' && !memchr(r->lp + i, '#', end - i)) {
		r->llen = end - 1;
		for (;;) {
			while (i < r->llen && (r->lp[i] == ' ' || r->lp[i] == '\t'))
				i++;
			if (i >= r->llen)
				return true;
			i = lex_one(r, i);
		}
	}
	for (;;) {
		while (i < r->llen && (r->lp[i] == ' ' || r->lp[i] == '\t'))
			i++;
		if (i >= r->llen)
			break;
		i = lex_one(r, i);
	}
	newtok(r, T_EOF, r->llen, 0);
	return false;
}

static char
closer(char c)
{
	return c == '(' ? ')' : c == '[' ? ']' : '}';
}

/* Brackets balance and nest at most MAXDEPTH deep, checked before parsing so
 * that the parser's recursion is bounded. */
void
tr_check_brackets(Reader *r)
{
	uint32_t stack[MAXDEPTH];
	int sp = 0;

	for (uint32_t i = 0; i < r->ntoks; i++) {
		const Tok *t = &r->toks[i];
		char c = t->kind == T_PUNCT ? t->p[0] : 0;

		if (c == '(' || c == '[' || c == '{') {
			if (sp == MAXDEPTH)
				tr_errat(r, t->line, t->col, "nesting too deep (more than %d levels)", MAXDEPTH);
			stack[sp++] = i;
		} else if (c == ')' || c == ']' || c == '}') {
			const Tok *o;

			if (sp == 0)
				tr_errat(r, t->line, t->col, "unbalanced '%c': nothing to close", c);
			o = &r->toks[stack[--sp]];
			if (closer(o->p[0]) != c) {
				if (o->line == t->line)
					tr_errat(r, t->line, t->col, "'%c' does not match '%c' at column %u", c,
						o->p[0], o->col);
				tr_errat(r, t->line, t->col, "'%c' does not match '%c' at line %u, column %u", c,
					o->p[0], o->line, o->col);
			}
		}
	}
	if (sp > 0) {
		const Tok *o = &r->toks[stack[sp - 1]];

		tr_errat(r, o->line, o->col, "unbalanced '%c': no matching '%c'", o->p[0], closer(o->p[0]));
	}
}
