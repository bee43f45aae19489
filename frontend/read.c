/* read.c — the trace reader's entry: pass 1 reads the lines (the header, the
 * def line, the statements and their subsymbols into a flat array; a
 * subsymbol is a commented-out line indented one level deeper than the
 * statement it belongs to, and stmts[i].end marks where i's subsymbols stop),
 * pass 2 lowers them (lower.c).
 *
 * A statement may continue over several lines, each but the last ending in a
 * backslash (Thunder prints long unpackings so). A line that has an error is
 * reported and kept as an S_ERROR statement naming what it would have
 * defined, so that pass 2 reports the errors of the statements after it and
 * not what follows from this one. */
#include "trace.h"

/* ---- pass 1: the lines ---- */

static bool
starts(const char *p, uint32_t n, const char *w)
{
	size_t k = strlen(w);

	return n >= k && memcmp(p, w, k) == 0;
}

/* def := "def" NAME "(" [param { "," param } [","]] ")" ":"
 * param := NAME | "*" NAME */
static void
parse_def(Reader *r)
{
	Tok *t;
	bool star;

	if (tr_lex_line(r, 0, false)) /* its tokens would end without T_EOF */
		tr_errat(r, r->lineno, r->llen + 1, "the def line ends in '\\': Thunder prints it on one line");
	tr_check_brackets(r);
	r->pos = 1;
	if ((t = tr_peek(r))->kind != T_NAME)
		tr_unexpected(r, "the function's name");
	r->fname = arena_strndup(r->a, t->p, t->len);
	r->pos++;
	tr_expect(r, '(');
	while (!tr_equal(r, ')')) {
		if ((star = tr_consume(r, '*')) && tr_equal(r, '*'))
			tr_errat(r, tr_peek(r)->line, tr_peek(r)->col, "a '**' parameter is not supported");
		if ((t = tr_peek(r))->kind != T_NAME)
			tr_unexpected(r, "a parameter name");
		GROW(r, r->params, r->capparams, r->nparams + 1);
		r->params[r->nparams].s = arena_strndup(r->a, t->p, t->len);
		r->params[r->nparams].col = t->col;
		r->params[r->nparams++].star = star;
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
	tr_errat(r, r->lineno, i + 1,
		"expected the trace's 'def' line (a Thunder trace starts with imports, decorators and 'def computation(...):')");
}

static void close_open(Reader *r, int depth);
static bool continues(const char *p, uint32_t n);

static Stmt *
new_stmt(Reader *r, StmtKind kind, int depth)
{
	Stmt *s;

	GROW(r, r->stmts, r->capstmts, r->nstmts + 1);
	s = &r->stmts[r->nstmts];
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->depth = depth;
	s->line = r->lineno;
	return s;
}

/* A bare string among the parameters' type comments, '# "sum"': older
 * Thunder wrote a string parameter's value so, in the place of its type
 * comment. It stands for the parameter after the one the comment above
 * typed; that parameter is a str (an object no op is given) if it has no
 * type comment of its own (tr_add_params). */
static void
str_param(Reader *r, uint32_t at)
{
	const char *p = r->lp + at;
	uint32_t n = r->llen - at, i = 1;

	while (i < n && p[i] == ' ')
		i++;
	if (r->nstmts > 0 || r->nextparam >= r->nparams || i + 1 >= n || p[i] != '"' ||
		memchr(p + i + 1, '"', n - i - 1) != p + n - 1)
		return;
	r->strparam = r->nextparam + 1;
	r->strline = r->lineno;
}

/* A type comment on a line of its own, "# NAME: \"TYPE\"", anywhere in the
 * body: it types a parameter (one comment each), or is kept as a statement
 * that types an unpacked value where it stands. */
static void
type_line(Reader *r, uint32_t at)
{
	TypeCmt ty = { 0 };
	Stmt *s;

	if (!tr_match_typecmt(r->lp + at, r->llen - at, at + 1, &ty)) {
		str_param(r, at);
		return;
	}
	for (uint32_t i = 0; i < r->nparams; i++) {
		if (strlen(r->params[i].s) != ty.nlen || memcmp(r->params[i].s, ty.name, ty.nlen) != 0)
			continue;
		if (r->ptypes[i].present)
			tr_errat(r, r->lineno, at + 1,
				"second type comment for parameter '%s' (the first is at line %u)", r->params[i].s,
				r->ptypeline[i]);
		r->ptypes[i] = ty;
		r->ptypeline[i] = r->lineno;
		r->nextparam = i + 1;
		return;
	}
	close_open(r, 0);
	s = new_stmt(r, S_TYPE, 0);
	s->col = at + 1;
	s->ty = ty;
	s->end = r->nstmts + 1;
	r->nstmts++;
}

/* close the open statements at `depth` or deeper: their subsymbols end here */
static void
close_open(Reader *r, int depth)
{
	while (r->nopen > 0 && r->stmts[r->open[r->nopen - 1]].depth >= depth)
		r->stmts[r->open[--r->nopen]].end = r->nstmts;
}

static void
open_stmt(Reader *r)
{
	GROW(r, r->open, r->capopen, r->nopen + 1);
	r->open[r->nopen++] = r->nstmts++;
}

/* the statement whose tokens are complete: parse and append it */
static void
finish_stmt(Reader *r)
{
	Stmt *s = new_stmt(r, S_CALL, r->pend_depth);

	tr_check_brackets(r);
	r->depth = 0;
	r->pos = 0;
	tr_parse_stmt(r, s);
	if (s->kind == S_RETURN && s->depth > 0)
		tr_errat(r, s->line, s->col, "'return' in a subsymbol");
	open_stmt(r);
	if (s->kind == S_RETURN)
		r->returned = true;
}

/* The names a statement that failed would have defined, as well as they can
 * be told: those before a '=' outside brackets. Their uses later on are then
 * not errors of their own. */
static void
failed_stmt(Reader *r, int depth)
{
	Stmt *s;
	uint32_t eq = UINT32_MAX;
	int nest = 0;

	for (uint32_t i = 0; i < r->ntoks && r->toks[i].kind != T_EOF && r->toks[i].kind != T_COMMENT; i++) {
		const Tok *t = &r->toks[i];

		nest += ispunct_(t, '(') || ispunct_(t, '[') || ispunct_(t, '{');
		nest -= ispunct_(t, ')') || ispunct_(t, ']') || ispunct_(t, '}');
		if (nest == 0 && ispunct_(t, '=')) {
			eq = i;
			break;
		}
	}
	close_open(r, depth);
	s = new_stmt(r, S_ERROR, depth);
	s->line = r->pend_line;
	for (uint32_t i = 0; eq != UINT32_MAX && i < eq; i++)
		if (r->toks[i].kind == T_NAME) {
			GROW(r, s->names, s->capnames, s->nnames + 1);
			s->names[s->nnames].s = arena_strndup(r->a, r->toks[i].p, r->toks[i].len);
			s->names[s->nnames++].col = r->toks[i].col;
		}
	open_stmt(r);
}

/* body-line := INDENT(2*(depth+1)) ["# "] stmt ["\"] | INDENT(2) comment,
 * or the continuation of the line above when that ended in a backslash */
static void
body_line(Reader *r)
{
	const char *p = r->lp;
	uint32_t n = r->llen, ind = 0, at;
	int depth;

	if (r->pending) {
		if (!tr_lex_line(r, 0, true)) {
			r->pending = false;
			finish_stmt(r);
		}
		return;
	}
	r->ntoks = 0;
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
		type_line(r, ind);
		return;
	}
	if (depth > 0 && (p[ind] != '#' || ind + 1 >= n || p[ind + 1] != ' '))
		tr_errat(r, r->lineno, ind + 1, "unexpected indentation (a subsymbol line starts with '# ')");
	if (r->returned)
		tr_errat(r, r->lineno, ind + 1, "statement after 'return'");
	if (depth > 0 && (r->nopen == 0 || depth > r->stmts[r->open[r->nopen - 1]].depth + 1))
		tr_errat(r, r->lineno, ind + 1,
			r->nopen == 0 ? "subsymbol line with no statement above it"
				      : "subsymbol line is nested deeper than the line above it");
	close_open(r, depth);
	at = depth > 0 ? ind + 2 : ind;
	r->pend_depth = depth;
	r->pend_line = r->lineno;
	if (tr_lex_line(r, at, false))
		r->pending = true;
	else
		finish_stmt(r);
}

static void
quiet_lex(Reader *r, uint32_t at)
{
	jmp_buf jb, *outer = r->jb;

	r->jb = &jb;
	r->quiet = true;
	if (setjmp(jb) == 0)
		tr_lex_line(r, at, false);
	r->quiet = false;
	r->jb = outer;
}

/* tokens of the line as well as they can be had, to tell the names it
 * defines; errors here are not said again */
static void
salvage_tokens(Reader *r)
{
	uint32_t i = 0;

	while (i < r->llen && (r->lp[i] == ' ' || r->lp[i] == '\t'))
		i++;
	r->ntoks = 0;
	if (i < r->llen && r->lp[i] != '#')
		quiet_lex(r, i);
}

/* After an error in the current line: a statement of the body that failed
 * becomes an S_ERROR one; a subsymbol line that failed breaks the statement
 * it belongs to, which then gives up quietly when lowered. */
static void
failed_line(Reader *r)
{
	uint32_t ind = 0;
	bool fresh = !r->pending && r->ntoks == 0;

	while (ind < r->llen && r->lp[ind] == ' ')
		ind++;
	if (fresh && ind > 2 && r->nopen > 0)
		r->stmts[r->open[r->nopen - 1]].broken = true;
	else if (fresh && ind <= 2 && ind < r->llen && r->lp[ind] != '#' && !r->returned)
		salvage_tokens(r);
	if (r->pending || r->ntoks > 0)
		failed_stmt(r, r->pending || !fresh ? r->pend_depth : 0);
	r->pending = false;
	r->ntoks = 0;
	r->skipping = continues(r->lp, r->llen);
}

/* true if the line ends in a backslash: the next one continues it */
static bool
continues(const char *p, uint32_t n)
{
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	return n > 0 && p[n - 1] == '\\';
}

/* one line; an error in it makes its statement an S_ERROR one */
static void
read_line(Reader *r)
{
	jmp_buf jb, *outer = r->jb;
	bool stmt = r->state == L_BODY;

	r->jb = &jb;
	if (setjmp(jb) == 0) {
		if (r->state == L_HEADER)
			header_line(r);
		else
			body_line(r);
	} else if (r->state == L_HEADER || !stmt) {
		longjmp(r->abort, 1); /* no def line: nothing to go on with */
	} else {
		failed_line(r);
	}
	r->jb = outer;
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
		if (r->skipping) /* the rest of a statement that had an error */
			r->skipping = continues(r->lp, r->llen);
		else
			read_line(r);
		p = nl ? nl + 1 : end;
	}
	if (r->state == L_HEADER)
		tr_errat(r, r->lastline, 1, "no 'def' line: this is not a Thunder trace");
	if (r->pending) {
		r->pending = false;
		tr_errat(r, r->lastline, r->lastlen + 1, "the file ends inside a statement continued with '\\'");
	}
	close_open(r, 0);
	if (!r->returned)
		tr_errat(r, r->lastline, r->lastlen + 1, "'%s' has no 'return'", r->fname);
}

/* what read_lines reports at the end goes on to pass 2 all the same */
static void
read_all(Reader *r)
{
	jmp_buf jb;

	r->jb = &jb;
	if (setjmp(jb) == 0)
		read_lines(r);
	else if (r->state == L_HEADER)
		longjmp(r->abort, 1);
	close_open(r, 0);
}

Func *
fe_read_trace(Arena *a, const Source *src)
{
	return fe_read_trace_linked(a, src, NULL);
}

Func *
fe_read_trace_linked(Arena *a, const Source *src, FeLink *link)
{
	Reader *r;

	if (!tr_check_text(src))
		return NULL;
	r = arena_alloc(a, sizeof *r);
	r->a = a;
	r->src = src;
	r->link = link;
	if (setjmp(r->abort)) {
		tr_flush(r);
		return NULL;
	}
	read_all(r);
	r->fn = ir_func_new(a, r->fname);
	tr_add_params(r);
	tr_lower_body(r);
	tr_wait_all(r);
	tr_flush(r);
	if (link)
		link->partial = r->fn;
	return r->nerrors ? NULL : r->fn;
}

/* The forward's saved values that its backward reads become outputs of the
 * forward that write state slots. */
static void
link_slots(Func *fwd, const FeLink *l)
{
	char nb[16];

	for (uint32_t k = 0; k < l->nslots; k++) {
		ir_return(fwd, l->slot_val[k], ir_name(fwd, l->slot_val[k], nb));
		ir_set_ret_slot(fwd, fwd->nrets - 1, (int32_t)k);
	}
}

/* a program of one trace, or of a forward and its backward */
Program *
fe_read_program(Arena *a, const Source *srcs, int n, const FeSig *sig)
{
	Program *p = ir_program_new(a);
	FeLink link = { 0 };
	Func *fwd, *bwd;

	link.sig = sig;
	if (n == 1 && !tr_check_text(&srcs[0]))
		return NULL;
	if (n == 1 && fe_is_ir(&srcs[0]))
		return fe_read_ir_program(a, &srcs[0]);
	if (n == 1) {
		if (!(fwd = fe_read_trace_linked(a, &srcs[0], &link)))
			return NULL;
		ir_program_add(p, fwd);
		return p;
	}
	link.forward = true;
	fwd = fe_read_trace_linked(a, &srcs[0], &link);
	if (!link.saved) /* the forward gave nothing to go on with */
		return NULL;
	link.forward = false;
	link.fwd = link.partial; /* the backward's errors are worth reading too */
	if (!(bwd = fe_read_trace_linked(a, &srcs[1], &link)) || !fwd)
		return NULL;
	if (!link.read_saved) {
		fe_error(&srcs[1], 0, 0,
			"this is not a backward trace: it takes no saved_for_backward collection "
			"(def backward_fn(saved_for_backward, cotangents):)");
		return NULL;
	}
	link_slots(fwd, &link);
	fwd->name = "forward";
	bwd->name = "backward";
	ir_program_add(p, fwd);
	ir_program_add(p, bwd);
	p->nslots = link.nslots;
	return p;
}

Func *
fe_read(Arena *a, const Source *src)
{
	if (!tr_check_text(src))
		return NULL;
	return fe_is_ir(src) ? fe_read_ir(a, src) : fe_read_trace(a, src);
}
