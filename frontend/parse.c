/* parse.c — one statement's tokens into expressions (a recursive descent
 * parser over Python's expression forms that Thunder prints, bounded by
 * MAXDEPTH), and the text of type comments into dtypes and shapes. */
#include "trace.h"

/* ---- the parser: one statement per line ---- */

Tok *
tr_peek(Reader *r)
{
	return &r->toks[r->pos];
}

bool
tr_equal(Reader *r, char c)
{
	return ispunct_(tr_peek(r), c);
}

bool
tr_consume(Reader *r, char c)
{
	if (!tr_equal(r, c))
		return false;
	r->pos++;
	return true;
}

static bool
is_word(const Tok *t, const char *w)
{
	return t->kind == T_NAME && t->len == strlen(w) && memcmp(t->p, w, t->len) == 0;
}

noreturn void
tr_unexpected(Reader *r, const char *what)
{
	Tok *t = tr_peek(r);

	if (t->kind == T_EOF || t->kind == T_COMMENT)
		tr_errat(r, t->line, t->col, "expected %s at the end of the line", what);
	tr_errat(r, t->line, t->col, "expected %s, found '%.*s'", what, (int)(t->len < 40 ? t->len : 40), t->p);
}

void
tr_expect(Reader *r, char c)
{
	char what[4] = { '\'', c, '\'', 0 };

	if (!tr_consume(r, c))
		tr_unexpected(r, what);
}

static Expr *
newexpr(Reader *r, ExprKind k, const Tok *t)
{
	Expr *e = arena_alloc(r->a, sizeof *e);

	e->kind = k;
	e->line = t->line;
	e->col = t->col;
	return e;
}

void
tr_push_elt(Reader *r, Expr *e, Expr *x)
{
	GROW(r, e->elts, e->cap, e->n + 1);
	e->elts[e->n++] = x;
}

static Expr *expr(Reader *r);

/* name := NAME { "." NAME }; None, True and False are constants */
static Expr *
name(Reader *r)
{
	Tok *t = tr_peek(r);
	const char *end = t->p + t->len;
	Expr *e;
	char *s;
	uint32_t n = 0;

	if (is_word(t, "None") || is_word(t, "True") || is_word(t, "False")) {
		e = newexpr(r, t->p[0] == 'N' ? E_NONE : E_BOOL, t);
		e->i = t->p[0] == 'T';
		r->pos++;
		return e;
	}
	e = newexpr(r, E_NAME, t);
	for (r->pos++; tr_equal(r, '.') && r->toks[r->pos + 1].kind == T_NAME; r->pos += 2)
		end = r->toks[r->pos + 1].p + r->toks[r->pos + 1].len;
	if (tr_equal(r, '.')) {
		r->pos++;
		tr_unexpected(r, "a name after '.'");
	}
	s = arena_alloc(r->a, (size_t)(end - t->p) + 1);
	for (const char *p = t->p; p < end; p++)
		if (*p != ' ' && *p != '\t')
			s[n++] = *p;
	e->s = s;
	return e;
}

/* exprs := [expr { "," expr } [","]] up to `close`; *comma: a comma was seen */
static void
exprs(Reader *r, Expr *e, char close, bool *comma)
{
	*comma = false;
	while (!tr_equal(r, close)) {
		tr_push_elt(r, e, expr(r));
		if (!tr_consume(r, ',')) {
			if (!tr_equal(r, close)) {
				char what[16];

				snprintf(what, sizeof what, "',' or '%c'", close);
				tr_unexpected(r, what);
			}
			break;
		}
		*comma = true;
	}
	r->pos++;
}

/* paren := "(" ")" | "(" expr ")" | "(" expr "," [exprs] ")" */
static Expr *
paren(Reader *r, const Tok *open)
{
	Expr *e = newexpr(r, E_TUPLE, open);
	bool comma;

	exprs(r, e, ')', &comma);
	return e->n == 1 && !comma ? e->elts[0] : e;
}

/* dict := "{" [expr ":" expr { "," expr ":" expr } [","]] "}" */
static Expr *
dict(Reader *r, const Tok *open)
{
	Expr *e = newexpr(r, E_DICT, open);

	while (!tr_equal(r, '}')) {
		tr_push_elt(r, e, expr(r));
		tr_expect(r, ':');
		tr_push_elt(r, e, expr(r));
		if (!tr_consume(r, ','))
			break;
	}
	tr_expect(r, '}');
	return e;
}

/* atom := name | INT | FLOAT | STR | paren | "[" exprs "]" | dict */
static Expr *
atom(Reader *r)
{
	Tok *t = tr_peek(r);
	Expr *e;
	bool comma;

	switch (t->kind) {
	case T_NAME: return name(r);
	case T_INT:
	case T_FLOAT:
		e = newexpr(r, t->kind == T_INT ? E_INT : E_FLOAT, t);
		e->i = t->i;
		e->f = t->f;
		r->pos++;
		return e;
	case T_STR:
		e = newexpr(r, E_STR, t);
		e->s = arena_strndup(r->a, t->p, t->len);
		r->pos++;
		return e;
	case T_PUNCT:
		r->pos++;
		if (t->p[0] == '(')
			return paren(r, t);
		if (t->p[0] == '{')
			return dict(r, t);
		if (t->p[0] == '[') {
			e = newexpr(r, E_LIST, t);
			exprs(r, e, ']', &comma);
			return e;
		}
		if (t->p[0] == '.' && t[1].kind == T_PUNCT && t[1].p == t->p + 1 && t[1].p[0] == '.' &&
			t[2].kind == T_PUNCT && t[2].p == t->p + 2 && t[2].p[0] == '.') { /* Ellipsis, x[..., 0]'s */
			r->pos += 2;
			return newexpr(r, E_ELLIPSIS, t);
		}
		r->pos--;
		break;
	default: break;
	}
	tr_unexpected(r, "an expression");
}

/* float('inf'), float('-inf'), float('nan'), float('1.5') fold to numbers */
static Expr *
fold_float(Reader *r, Expr *c)
{
	const Expr *a = c->nargs == 1 && !c->args[0].kw ? c->args[0].e : NULL;
	const char *s;
	char *end;
	double v;

	if (!a || a->kind != E_STR)
		tr_errat(r, c->line, c->col, "float() takes one string: float('inf')");
	s = a->s;
	v = strtod(s, &end);
	if (end == s || *end)
		tr_errat(r, a->line, a->col, "float() of '%s' is not a number", s);
	c->kind = E_FLOAT;
	c->f = v;
	return c;
}

/* args := [arg { "," arg } [","]] ")"; arg := NAME "=" expr | expr */
static Expr *
call(Reader *r, Expr *fn, const Tok *open)
{
	Expr *c = newexpr(r, E_CALL, open);

	if (fn->kind != E_NAME)
		tr_errat(r, open->line, open->col, "only a named function can be called");
	c->col = fn->col;
	c->fn = fn;
	while (!tr_equal(r, ')')) {
		Arg a = { NULL, 0, NULL };
		Tok *t = tr_peek(r);

		if (t->kind == T_NAME && ispunct_(&r->toks[r->pos + 1], '=')) {
			a.kw = arena_strndup(r->a, t->p, t->len);
			a.kwcol = t->col;
			r->pos += 2;
		} else if (c->nargs > 0 && c->args[c->nargs - 1].kw) {
			tr_errat(r, t->line, t->col, "positional argument follows keyword argument");
		}
		a.e = expr(r);
		GROW(r, c->args, c->capargs, c->nargs + 1);
		c->args[c->nargs++] = a;
		if (!tr_consume(r, ','))
			break;
	}
	tr_expect(r, ')');
	return strcmp(fn->s, "float") == 0 ? fold_float(r, c) : c;
}

/* postfix := atom { "(" args ")" } */
static Expr *
postfix(Reader *r)
{
	Expr *e = atom(r);

	while (tr_equal(r, '(')) {
		Tok *open = tr_peek(r);

		r->pos++;
		e = call(r, e, open);
	}
	return e;
}

/* expr := "-" expr | postfix */
static Expr *
expr(Reader *r)
{
	Tok *t = tr_peek(r);
	Expr *e;

	if (++r->depth > MAXDEPTH)
		tr_errat(r, t->line, t->col, "nesting too deep (more than %d levels)", MAXDEPTH);
	if (tr_consume(r, '-')) {
		e = expr(r);
		if (e->kind == E_INT)
			e->i = -e->i;
		else if (e->kind == E_FLOAT)
			e->f = -e->f;
		else
			tr_errat(r, t->line, t->col, "'-' applies only to numbers here");
		e->col = t->col;
	} else {
		e = postfix(r);
	}
	r->depth--;
	return e;
}

static void
push_name(Reader *r, Stmt *s, const Tok *t)
{
	GROW(r, s->names, s->capnames, s->nnames + 1);
	s->names[s->nnames].s = arena_strndup(r->a, t->p, t->len);
	s->names[s->nnames++].col = t->col;
}

/* targets := target { "," target } [","] up to `stop`, flattened into the
 * statement's names; target := NAME | "(" targets ")" | "[" targets "]"
 * (what: what a name is, for the error) */
static bool
targets(Reader *r, Stmt *s, char stop, int depth, const char *what)
{
	bool comma = false;
	Tok *t;

	while (!tr_equal(r, stop) && (t = tr_peek(r))->kind != T_EOF && t->kind != T_COMMENT) {
		if (tr_consume(r, '(') || tr_consume(r, '[')) {
			char close = t->p[0] == '(' ? ')' : ']';

			if (depth >= MAXDEPTH)
				tr_errat(r, t->line, t->col, "nesting too deep (more than %d levels)", MAXDEPTH);
			targets(r, s, close, depth + 1, what);
			tr_expect(r, close);
		} else if (t->kind == T_NAME) {
			push_name(r, s, t);
			r->pos++;
		} else {
			tr_unexpected(r, what);
		}
		if (!tr_consume(r, ','))
			break;
		comma = true;
	}
	return comma;
}

/* lhs := targets "=" ; a tuple when bracketed or with a comma */
static void
lhs(Reader *r, Stmt *s)
{
	Tok *t = tr_peek(r);

	s->tuple = targets(r, s, '=', 0, "a name on the left of '='") || s->nnames != 1 || t->kind != T_NAME;
	tr_expect(r, '=');
}

/* true if the statement assigns: an '=' outside brackets */
static bool
assigns(Reader *r)
{
	int depth = 0;

	for (uint32_t i = r->pos; r->toks[i].kind != T_EOF && r->toks[i].kind != T_COMMENT; i++) {
		const Tok *t = &r->toks[i];

		if (ispunct_(t, '(') || ispunct_(t, '[') || ispunct_(t, '{'))
			depth++;
		else if (ispunct_(t, ')') || ispunct_(t, ']') || ispunct_(t, '}'))
			depth--;
		else if (ispunct_(t, '=') && depth == 0)
			return true;
	}
	return false;
}

/* A comment "# NAME: \"TEXT\"" (trailing blanks allowed) is a type comment;
 * false for any other comment. col0 is the column of p[0]. */
bool
tr_match_typecmt(const char *p, uint32_t n, uint32_t col0, TypeCmt *ty)
{
	uint32_t i = 1, ns, ne, ts, te;

	if (n == 0 || p[0] != '#')
		return false;
	while (i < n && p[i] == ' ')
		i++;
	for (ns = i; i < n && isname1(p[i]); i++)
		;
	if ((ne = i) == ns || isdig(p[ns]) || i >= n || p[i++] != ':')
		return false;
	while (i < n && p[i] == ' ')
		i++;
	if (i >= n || p[i] != '"')
		return false;
	for (ts = ++i; i < n && p[i] != '"'; i++)
		;
	for (te = i++; i < n && (p[i] == ' ' || p[i] == '\t'); i++)
		;
	if (te >= n || i != n)
		return false;
	ty->present = true;
	ty->name = p + ns;
	ty->nlen = ne - ns;
	ty->ncol = col0 + ns;
	ty->text = p + ts;
	ty->len = te - ts;
	ty->col = col0 + ts;
	return true;
}

/* return := "return" [expr { "," expr } [","]] — a bare list is a tuple */
static Expr *
ret_value(Reader *r)
{
	Tok *t = tr_peek(r);
	Expr *e, *tup;

	if (t->kind == T_EOF || t->kind == T_COMMENT)
		return newexpr(r, E_NONE, t);
	e = expr(r);
	if (!tr_equal(r, ','))
		return e;
	tup = newexpr(r, E_TUPLE, t);
	tr_push_elt(r, tup, e);
	while (tr_consume(r, ',') && tr_peek(r)->kind != T_EOF && tr_peek(r)->kind != T_COMMENT)
		tr_push_elt(r, tup, expr(r));
	return tup;
}

/* stmt := "del" targets | "return" [exprs] | [lhs "="] call | lhs "=" NAME,
 * then an optional comment; "# NAME: \"TYPE\"" types the result. The last
 * form unpacks a collection (t0, t1, = args) or names a value again. */
void
tr_parse_stmt(Reader *r, Stmt *s)
{
	Tok *t = tr_peek(r);

	s->line = t->line;
	s->col = t->col;
	if (is_word(t, "del")) {
		s->kind = S_DEL;
		r->pos++;
		targets(r, s, 0, 0, "a name to delete"); /* del a, b; del [a, b] (older Thunder) */
		if (s->nnames == 0)
			tr_unexpected(r, "a name to delete");
	} else if (is_word(t, "return")) {
		s->kind = S_RETURN;
		r->pos++;
		s->e = ret_value(r);
	} else {
		s->kind = S_CALL;
		if (assigns(r))
			lhs(r, s);
		s->e = expr(r);
		if (s->e->kind == E_NAME && s->nnames > 0)
			s->kind = S_UNPACK;
		else if (s->e->kind != E_CALL)
			tr_errat(r, s->e->line, s->e->col, "expected a call");
	}
	t = tr_peek(r);
	if (t->kind == T_COMMENT) {
		tr_match_typecmt(t->p, t->len, t->col, &s->ty);
		r->pos++;
	}
	if (tr_peek(r)->kind != T_EOF)
		tr_unexpected(r, "the end of the statement");
}

/* ---- types in type comments ---- */

/* dims must be non-negative and small enough to count and address */
void
tr_check_numel(Reader *r, uint32_t line, uint32_t col, const Type *t)
{
	int64_t n = 1;
	char b[256];

	for (int i = 0; i < t->rank; i++) {
		if (t->d[i] < 0)
			tr_errat(r, line, col, "negative dimension %lld in %s", (long long)t->d[i],
				dims_str(t->d, t->rank, ", ", b, sizeof b));
		if (t->d[i] > 0 && n > INT64_MAX / 64 / t->d[i])
			tr_errat(r, line, col, "shape %s has too many elements",
				dims_str(t->d, t->rank, ", ", b, sizeof b));
		n *= t->d[i];
	}
}

/* one dimension in a type comment, at text[*i]: digits, not negative */
static int64_t
type_dim(Reader *r, uint32_t line, const TypeCmt *tc, uint32_t *i)
{
	const char *s = tc->text;
	uint32_t at = *i, n = tc->len;
	bool neg = at < n && s[at] == '-';
	int64_t v = 0;

	*i += neg;
	if (*i >= n || !isdig(s[*i]))
		tr_errat(r, line, tc->col + *i, "expected a dimension in the type comment");
	for (; *i < n && isdig(s[*i]); (*i)++) {
		if (v > (INT64_MAX - (s[*i] - '0')) / 10)
			tr_errat(r, line, tc->col + at, "dimension is too large");
		v = v * 10 + (s[*i] - '0');
	}
	if (neg)
		tr_errat(r, line, tc->col + at, "negative dimension -%lld in the type comment", (long long)v);
	return v;
}

/* dims := "[" [DIM {"," DIM}] "]" at text[i], ending the type comment */
static void
parse_dims(Reader *r, uint32_t line, const TypeCmt *tc, uint32_t i, Type *t)
{
	const char *s = tc->text;
	uint32_t n = tc->len, open = i++;

	for (t->rank = 0;; i++) {
		while (i < n && s[i] == ' ')
			i++;
		if (i < n && s[i] == ']' && t->rank == 0)
			break;
		if (t->rank == IR_MAXRANK)
			tr_errat(r, line, tc->col + open, "rank above the maximum of %d", IR_MAXRANK);
		t->d[t->rank++] = type_dim(r, line, tc, &i);
		while (i < n && s[i] == ' ')
			i++;
		if (i < n && s[i] == ']')
			break;
		if (i >= n || s[i] != ',')
			tr_errat(r, line, tc->col + i, "expected ',' or ']' in the type comment");
	}
	if (i + 1 != n)
		tr_errat(r, line, tc->col + i + 1, "unexpected text after the type's shape");
	tr_check_numel(r, line, tc->col + open, t);
}

/* TYPE := [["FUTURE " | "DTensor "] DEVICE " "] DTYPE dims, e.g. "cuda:0 f8_e4m3fn[16, 32]";
 * DEVICE is cuda:N, cpu or thunder.devices.Device(...): the last word before
 * the shape is the dtype. A trace that ran on the CPU (or a tensor of one
 * that did not) compiles for the GPU all the same, which a note says once.
 * *dtcol and *shcol receive the columns of the dtype and the shape. */
void
tr_parse_type(Reader *r, uint32_t line, const TypeCmt *tc, Type *t, uint32_t *dtcol, uint32_t *shcol)
{
	const char *s = tc->text, *br = memchr(s, '[', tc->len);
	uint32_t de = br ? (uint32_t)(br - s) : tc->len, ds = de;
	int dt;

	if (!br)
		tr_errat(r, line, tc->col, "type \"%.*s\" is not a tensor type", (int)tc->len, s);
	while (ds > 0 && s[ds - 1] != ' ')
		ds--;
	t->dtensor = ds >= 8 && memcmp(s, "DTensor ", 8) == 0;
	if (ds >= 4 && memcmp(s, "cpu ", 4) == 0 && !r->cpu_noted) {
		r->cpu_noted = true;
		tr_note(r, line, tc->col,
			"a tensor on the CPU: fp8cc compiles the trace for the GPU, every tensor there");
	}
	if ((dt = dt_lookup(s + ds, de - ds, 1)) < 0)
		tr_errat(r, line, tc->col + ds, "unknown dtype '%.*s'", (int)(de - ds), s + ds);
	t->dt = (DType)dt;
	*dtcol = tc->col + ds;
	*shcol = tc->col + de;
	parse_dims(r, line, tc, de, t);
}
