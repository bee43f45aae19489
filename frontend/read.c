/* read.c — the trace reader's entry: pass 1 reads the lines (the header, the
 * def line, the statements and their subsymbols into a flat array; a
 * subsymbol is a commented-out line indented one level deeper than the
 * statement it belongs to, and stmts[i].end marks where i's subsymbols stop),
 * pass 2 lowers them (lower.c). */
#include "trace.h"

/* ---- pass 1: the lines ---- */

static bool
starts(const char *p, uint32_t n, const char *w)
{
	size_t k = strlen(w);

	return n >= k && memcmp(p, w, k) == 0;
}

/* def := "def" NAME "(" [NAME { "," NAME } [","]] ")" ":" */
static void
parse_def(Reader *r)
{
	Tok *t;

	tr_lex_line(r, 0);
	tr_check_brackets(r);
	r->pos = 1;
	if ((t = tr_peek(r))->kind != T_NAME)
		tr_unexpected(r, "the function's name");
	r->fname = arena_strndup(r->a, t->p, t->len);
	r->pos++;
	tr_expect(r, '(');
	while (!tr_equal(r, ')')) {
		if ((t = tr_peek(r))->kind != T_NAME)
			tr_unexpected(r, "a parameter name");
		GROW(r, r->params, r->capparams, r->nparams + 1);
		r->params[r->nparams].s = arena_strndup(r->a, t->p, t->len);
		r->params[r->nparams++].col = t->col;
		for (uint32_t i = 0; i + 1 < r->nparams; i++)
			if (strcmp(r->params[i].s, r->params[r->nparams - 1].s) == 0)
				tr_errat(r, r->lineno, t->col, "duplicate parameter '%s'", r->params[i].s);
		r->pos++;
		if (!tr_consume(r, ','))
			break;
	}
	tr_expect(r, ')');
	tr_expect(r, ':');
	if (tr_peek(r)->kind != T_EOF && tr_peek(r)->kind != T_COMMENT)
		tr_unexpected(r, "the end of the def line");
	r->defline = r->lineno;
	r->ptypes = arena_alloc(r->a, (r->nparams + 1) * sizeof *r->ptypes);
	r->ptypeline = arena_alloc(r->a, (r->nparams + 1) * sizeof *r->ptypeline);
	r->state = L_BODY;
}

/* header := { comment | "import ..." | "from ..." | "@decorator" } def */
static void
header_line(Reader *r)
{
	const char *p = r->lp;
	uint32_t n = r->llen, i = 0;

	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (i == n || p[i] == '#')
		return;
	if (i == 0 && (starts(p, n, "import ") || starts(p, n, "from ") || p[0] == '@'))
		return;
	if (i == 0 && starts(p, n, "def ")) {
		parse_def(r);
		return;
	}
	tr_errat(r, r->lineno, i + 1, "expected the trace's 'def' line (a Thunder trace starts with imports, decorators and 'def computation(...):')");
}

/* "# NAME: \"TYPE\"" right after def, before any statement, types a parameter */
static void
param_type(Reader *r, uint32_t at)
{
	TypeCmt ty = { 0 };

	if (r->nstmts > 0 || !tr_match_typecmt(r->lp + at, r->llen - at, at + 1, &ty))
		return;
	for (uint32_t i = 0; i < r->nparams; i++) {
		if (strlen(r->params[i].s) != ty.nlen || memcmp(r->params[i].s, ty.name, ty.nlen) != 0)
			continue;
		if (r->ptypes[i].present)
			tr_errat(r, r->lineno, at + 1, "second type comment for parameter '%s' (the first is at line %u)",
				r->params[i].s, r->ptypeline[i]);
		r->ptypes[i] = ty;
		r->ptypeline[i] = r->lineno;
	}
}

/* append a statement at `depth` (indented `ind` spaces) from the current line,
 * and close the statements whose subsymbols it ends */
static void
add_stmt(Reader *r, int depth, uint32_t ind)
{
	uint32_t at = depth > 0 ? ind + 2 : ind;
	Stmt *s;

	if (depth > 0 && (r->nopen == 0 || depth > r->stmts[r->open[r->nopen - 1]].depth + 1))
		tr_errat(r, r->lineno, ind + 1,
			r->nopen == 0 ? "subsymbol line with no statement above it"
			: "subsymbol line is nested deeper than the line above it");
	while (r->nopen > 0 && r->stmts[r->open[r->nopen - 1]].depth >= depth)
		r->stmts[r->open[--r->nopen]].end = r->nstmts;
	GROW(r, r->stmts, r->capstmts, r->nstmts + 1);
	s = &r->stmts[r->nstmts];
	memset(s, 0, sizeof *s);
	s->depth = depth;
	tr_lex_line(r, at);
	tr_check_brackets(r);
	r->depth = 0;
	tr_parse_stmt(r, s);
	if (s->kind == S_RETURN && depth > 0)
		tr_errat(r, s->line, s->col, "'return' in a subsymbol");
	GROW(r, r->open, r->capopen, r->nopen + 1);
	r->open[r->nopen++] = r->nstmts++;
	if (s->kind == S_RETURN)
		r->returned = true;
}

/* body-line := INDENT(2*(depth+1)) ["# "] stmt | INDENT(2) comment */
static void
body_line(Reader *r)
{
	const char *p = r->lp;
	uint32_t n = r->llen, ind = 0;
	int depth;

	while (ind < n && p[ind] == ' ')
		ind++;
	if (ind == n)
		return;
	if (p[ind] == '\t')
		tr_errat(r, r->lineno, ind + 1, "tab in indentation: Thunder indents with spaces");
	if (ind == 0 && p[0] == '#')
		return;
	if (ind == 0 && r->returned)
		tr_errat(r, r->lineno, 1, "unexpected text after the function body");
	if (ind == 0)
		tr_errat(r, r->lineno, 1, "expected an indented statement of '%s'", r->fname);
	if (ind % 2)
		tr_errat(r, r->lineno, ind + 1, "indentation of %u spaces is not a multiple of 2", ind);
	depth = (int)(ind / 2) - 1;
	if (depth == 0 && p[ind] == '#') {
		param_type(r, ind);
		return;
	}
	if (depth > 0 && (p[ind] != '#' || ind + 1 >= n || p[ind + 1] != ' '))
		tr_errat(r, r->lineno, ind + 1, "unexpected indentation (a subsymbol line starts with '# ')");
	if (r->returned)
		tr_errat(r, r->lineno, ind + 1, "statement after 'return'");
	add_stmt(r, depth, ind);
}

static void
read_lines(Reader *r)
{
	const char *p = r->src->text, *end = p + r->src->len, *nl;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		r->lp = p;
		r->llen = (uint32_t)((nl ? nl : end) - p);
		r->lineno++;
		if (r->llen > 0 && p[r->llen - 1] == '\r')
			r->llen--;
		for (uint32_t i = 0; i < r->llen; i++)
			if (p[i] != ' ' && p[i] != '\t') {
				r->lastline = r->lineno;
				r->lastlen = r->llen;
				break;
			}
		if (r->state == L_HEADER)
			header_line(r);
		else
			body_line(r);
		p = nl ? nl + 1 : end;
	}
	while (r->nopen > 0)
		r->stmts[r->open[--r->nopen]].end = r->nstmts;
	if (r->state == L_HEADER)
		tr_errat(r, r->lastline, 1, "no 'def' line: this is not a Thunder trace");
	if (!r->returned)
		tr_errat(r, r->lastline, r->lastlen + 1, "'%s' has no 'return'", r->fname);
}

Func *
fe_read_trace(Arena *a, const Source *src)
{
	Reader *r;

	if (!tr_check_text(src))
		return NULL;
	r = arena_alloc(a, sizeof *r);
	r->a = a;
	r->src = src;
	if (setjmp(r->jb))
		return NULL;
	read_lines(r);
	r->fn = ir_func_new(a, r->fname);
	tr_add_params(r);
	tr_lower_body(r);
	return r->fn;
}

Func *
fe_read(Arena *a, const Source *src)
{
	if (!tr_check_text(src))
		return NULL;
	return fe_is_ir(src) ? fe_read_ir(a, src) : fe_read_trace(a, src);
}
