/* trace.c — the Thunder trace reader.
 *
 * Thunder prints a trace as a Python function (DESIGN.md, "Input: Thunder
 * traces"). The reader makes two passes:
 *
 *   1. over the lines: skip the header (comments, imports, decorators), read
 *      the def line and the parameter type comments, and tokenize and parse
 *      every statement, subsymbols included, into a flat array. A subsymbol
 *      is a commented-out line indented one level deeper than the statement it
 *      belongs to; stmts[i].end marks where i's subsymbols stop.
 *   2. over the statements: add the parameters, then lower each statement.
 *      A callee the reader knows (prims.*, a few torch calls) becomes IR
 *      instructions and its subsymbols are ignored; an unknown one (nvFusion0,
 *      ltorch.*) is replaced by its subsymbols, depth first, with an explicit
 *      stack of frames. A tensor-subclass constructor (Float8Tensor(...)) is
 *      not computed: it makes an object that remembers the tensors passed in,
 *      and those become outputs when the object is saved in the return.
 *
 * Every value's dtype and shape is what its op computes; a type comment that
 * says otherwise is an error. Expressions nest at most MAXDEPTH deep and
 * nothing recurses on the nesting of subsymbols. Errors go through fe_error
 * once and unwind with longjmp; all memory is the caller's arena.
 */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "fe.h"

#define MAXDEPTH 64           /* brackets and unary minus in one expression */
#define NOSTMT UINT32_MAX

/* ---- tokens, expressions, statements ---- */

typedef enum { T_EOF, T_NAME, T_INT, T_FLOAT, T_STR, T_PUNCT, T_COMMENT } TokKind;

typedef struct {
	TokKind kind;
	const char *p;        /* spelling; T_STR: the contents, without quotes */
	uint32_t len;
	uint32_t col;         /* 1-based column of the first byte */
	int64_t i;            /* T_INT */
	double f;             /* T_FLOAT */
} Tok;

typedef enum { E_NAME, E_INT, E_FLOAT, E_STR, E_NONE, E_BOOL, E_TUPLE, E_LIST,
	E_DICT, E_CALL } ExprKind;

typedef struct Expr Expr;

typedef struct {
	const char *kw;       /* keyword, NULL if positional */
	uint32_t kwcol;
	Expr *e;
} Arg;

struct Expr {
	ExprKind kind;
	uint32_t line, col;
	const char *s;        /* E_NAME: dotted name; E_STR: contents */
	int64_t i;            /* E_INT, E_BOOL */
	double f;             /* E_FLOAT */
	Expr **elts;          /* E_TUPLE, E_LIST; E_DICT: key, value, key, ... */
	uint32_t n, cap;
	Expr *fn;             /* E_CALL: the callee, an E_NAME */
	Arg *args;            /* E_CALL */
	uint32_t nargs, capargs;
};

/* a type comment: "# NAME: \"cuda:0 f32[16, 32]\"" */
typedef struct {
	bool present;
	const char *name;     /* the name it types */
	uint32_t nlen, ncol;
	const char *text;     /* between the quotes */
	uint32_t len;
	uint32_t col;         /* column of text */
} TypeCmt;

typedef struct {
	const char *s;        /* "_" for an unused output */
	uint32_t col;
} Name;

typedef enum { S_CALL, S_DEL, S_RETURN } StmtKind;

typedef struct {
	StmtKind kind;
	uint32_t line, col;   /* the first token */
	int depth;            /* 0: the body; d > 0: a subsymbol, indented 2*(d+1) */
	uint32_t end;         /* index of the first statement after its subsymbols */
	Name *names;          /* S_CALL: the left side; S_DEL: the names deleted */
	uint32_t nnames, capnames;
	Expr *e;              /* S_CALL: the call; S_RETURN: the value */
	TypeCmt ty;
} Stmt;

/* ---- symbols ---- */

typedef enum { SYM_NONE, SYM_VAL, SYM_OBJ, SYM_DEL, SYM_LOCAL } SymKind;

/* a tensor handed to a constructor, under the name it was passed as */
typedef struct {
	uint32_t v;
	const char *name;
} Saved;

typedef struct {
	const char *name;
	SymKind kind;
	uint32_t val;         /* SYM_VAL: the value id */
	uint32_t line;        /* SYM_DEL: the del; SYM_LOCAL, SYM_OBJ: the defining statement */
	const char *owner;    /* SYM_LOCAL: callee whose subsymbols defined it; SYM_OBJ: constructor */
	Saved *objv;          /* SYM_OBJ: tensors passed to the constructor */
	uint32_t nobjv;
	uint64_t stamp;       /* when it was last (re)defined */
	bool keep;            /* scratch: an output of the frame being closed */
} Sym;

typedef struct {
	const char **keys;
	uint32_t *vals;
	uint32_t cap, n;
} Map;

typedef struct {
	uint32_t sym;
	Sym old;              /* the symbol before this definition */
} LogEnt;

/* a statement whose subsymbols are being lowered (NOSTMT: the body) */
typedef struct {
	uint32_t stmt;
	uint32_t next;        /* the next subsymbol to lower */
	uint32_t logmark;     /* r->nlog when it began */
	uint64_t stamp;       /* stamps from here on were defined inside */
} Frame;

typedef struct {
	DType dt;
	int rank;
	int64_t d[IR_MAXRANK];
} Type;

enum { L_HEADER, L_BODY };

typedef struct {
	Arena *a;
	const Source *src;
	jmp_buf jb;
	Func *fn;

	/* pass 1 */
	int state;            /* L_HEADER, L_BODY */
	uint32_t lineno;      /* the line being read */
	const char *lp;       /* its text */
	uint32_t llen;
	uint32_t lastline, lastlen;   /* the last non-blank line */
	Tok *toks;            /* its tokens, ending in T_EOF */
	uint32_t ntoks, captoks, pos;
	int depth;            /* expression nesting while parsing */
	const char *fname;
	Name *params;
	uint32_t nparams, capparams, defline;
	TypeCmt *ptypes;      /* one per parameter */
	uint32_t *ptypeline;
	Stmt *stmts;
	uint32_t nstmts, capstmts;
	uint32_t *open;       /* statements whose subsymbols may still follow */
	uint32_t nopen, capopen;
	bool returned;

	/* pass 2 */
	Sym *syms;
	uint32_t nsyms, capsyms;
	Map symmap;           /* name -> index in syms */
	Map vnames;           /* value names in use */
	LogEnt *log;
	uint32_t nlog, caplog;
	uint64_t stamp;
	Frame *frames;
	uint32_t nframes, capframes;
	const Stmt *cur;      /* the statement being lowered */
	const char *callee;   /* its callee */
	uint32_t ccol;        /* its callee's column */
} Reader;

#define GROW(r, arr, cap, need) \
	arena_grow((r)->a, (void **)&(arr), &(cap), (need), sizeof *(arr))

/* ---- errors ---- */

static noreturn void
errat(Reader *r, uint32_t line, uint32_t col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fe_verror(r->src, line, col, fmt, ap);
	va_end(ap);
	longjmp(r->jb, 1);
}

/* "[16, 32]" */
static const char *
dimstr(const int64_t *d, int rank, char *buf, size_t n)
{
	size_t k = (size_t)snprintf(buf, n, "[");

	for (int i = 0; i < rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)d[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* "f32[16, 32]", as Thunder's type comments print a type */
static const char *
tystr(const Type *t, char *buf, size_t n)
{
	char dims[200];

	snprintf(buf, n, "%s%s", ir_dtypes[t->dt].thunder, dimstr(t->d, t->rank, dims, sizeof dims));
	return buf;
}

static void
vtype(Func *fn, uint32_t v, Type *t)
{
	t->dt = (DType)fn->vals[v].dtype;
	t->rank = fn->vals[v].rank;
	memcpy(t->d, ir_dims(fn, v), (size_t)t->rank * sizeof *t->d);
}

static bool
same_shape(const Type *a, const Type *b)
{
	return a->rank == b->rank && memcmp(a->d, b->d, (size_t)a->rank * sizeof *a->d) == 0;
}

/* ---- the input as text ---- */

/* length of the UTF-8 sequence at p, 0 if it is not one */
static size_t
utf8_len(const unsigned char *p, size_t n)
{
	size_t k;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		k = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		k = 3;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		k = 4;
	else
		return 0;
	if (k > n)
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return k;
}

/* An empty file or binary data gets its own message: NUL bytes, control
 * bytes other than tab, CR and LF, bytes that are not UTF-8. */
static bool
check_text(const Source *src)
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
		k = utf8_len(p + i, src->len - i);
		if (p[i] == '\n') {
			line++;
			col = 0;
		} else if (p[i] == 0) {
			fe_error(src, line, col, "NUL byte in the input: this is binary data, not a trace");
			return false;
		} else if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\r') || p[i] == 0x7F) {
			fe_error(src, line, col, "control byte 0x%02X in the input: this looks like binary data, not a trace", p[i]);
			return false;
		} else if (k == 0) {
			fe_error(src, line, col, "byte 0x%02X is not valid UTF-8: this looks like binary data, not a trace", p[i]);
			return false;
		}
	}
	return true;
}

/* ---- a string map (names -> ids) ---- */

static uint32_t
hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* where s is, or where it would go */
static uint32_t
map_slot(const Map *m, const char *s)
{
	uint32_t i = hash(s) & (m->cap - 1);

	while (m->keys[i] && strcmp(m->keys[i], s) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint32_t *
map_get(const Map *m, const char *s)
{
	uint32_t i;

	if (m->cap == 0)
		return NULL;
	i = map_slot(m, s);
	return m->keys[i] ? &m->vals[i] : NULL;
}

static void
map_put(Arena *a, Map *m, const char *s, uint32_t v)
{
	uint32_t i;

	if (2 * (m->n + 1) > m->cap) {
		Map old = *m;

		m->cap = m->cap ? 2 * m->cap : 64;
		m->keys = arena_alloc(a, m->cap * sizeof *m->keys);
		m->vals = arena_alloc(a, m->cap * sizeof *m->vals);
		m->n = 0;
		for (uint32_t j = 0; j < old.cap; j++)
			if (old.keys[j])
				map_put(a, m, old.keys[j], old.vals[j]);
	}
	i = map_slot(m, s);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = s;
	m->vals[i] = v;
}

/* ---- the lexer: one line at a time ---- */

static bool isname0(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool isdig(int c) { return c >= '0' && c <= '9'; }
static bool isname1(int c) { return isname0(c) || isdig(c); }

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
	return t;
}

static double
lex_float(Reader *r, uint32_t at, uint32_t len)
{
	char buf[512];

	if (len >= sizeof buf)
		errat(r, r->lineno, at + 1, "number literal is too long");
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
			errat(r, r->lineno, at + 1, "integer literal is too large");
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
		errat(r, r->lineno, i + 1, "invalid number literal '%.*s'", (int)(j + 1 - i), s + i);
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
		errat(r, r->lineno, i + 1, "unterminated string");
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
	if (c != 0 && strchr("()[]{},:=.-", c)) {
		newtok(r, T_PUNCT, i, 1);
		return i + 1;
	}
	if (c >= 0x21 && c < 0x7F)
		errat(r, r->lineno, i + 1, "unexpected character '%c'", c);
	errat(r, r->lineno, i + 1, "unexpected byte 0x%02X", c);
}

/* tokenize the current line from byte `start`; the last token is T_EOF */
static void
lex_line(Reader *r, uint32_t start)
{
	uint32_t i = start;

	r->ntoks = 0;
	r->pos = 0;
	for (;;) {
		while (i < r->llen && (r->lp[i] == ' ' || r->lp[i] == '\t'))
			i++;
		if (i >= r->llen)
			break;
		i = lex_one(r, i);
	}
	newtok(r, T_EOF, r->llen, 0);
}

static bool
ispunct_(const Tok *t, char c)
{
	return t->kind == T_PUNCT && t->p[0] == c;
}

static char
closer(char c)
{
	return c == '(' ? ')' : c == '[' ? ']' : '}';
}

/* Brackets balance and nest at most MAXDEPTH deep, checked before parsing so
 * that the parser's recursion is bounded. */
static void
check_brackets(Reader *r)
{
	uint32_t stack[MAXDEPTH];
	int sp = 0;

	for (uint32_t i = 0; i < r->ntoks; i++) {
		const Tok *t = &r->toks[i];
		char c = t->kind == T_PUNCT ? t->p[0] : 0;

		if (c == '(' || c == '[' || c == '{') {
			if (sp == MAXDEPTH)
				errat(r, r->lineno, t->col, "nesting too deep (more than %d levels)", MAXDEPTH);
			stack[sp++] = i;
		} else if (c == ')' || c == ']' || c == '}') {
			const Tok *o;

			if (sp == 0)
				errat(r, r->lineno, t->col, "unbalanced '%c': nothing to close", c);
			o = &r->toks[stack[--sp]];
			if (closer(o->p[0]) != c)
				errat(r, r->lineno, t->col, "'%c' does not match '%c' at column %u", c, o->p[0], o->col);
		}
	}
	if (sp > 0) {
		const Tok *o = &r->toks[stack[sp - 1]];

		errat(r, r->lineno, o->col, "unbalanced '%c': no matching '%c'", o->p[0], closer(o->p[0]));
	}
}

/* ---- the parser: one statement per line ---- */

static Tok *
peek(Reader *r)
{
	return &r->toks[r->pos];
}

static bool
equal(Reader *r, char c)
{
	return ispunct_(peek(r), c);
}

static bool
consume(Reader *r, char c)
{
	if (!equal(r, c))
		return false;
	r->pos++;
	return true;
}

static bool
is_word(const Tok *t, const char *w)
{
	return t->kind == T_NAME && t->len == strlen(w) && memcmp(t->p, w, t->len) == 0;
}

static noreturn void
unexpected(Reader *r, const char *what)
{
	Tok *t = peek(r);

	if (t->kind == T_EOF || t->kind == T_COMMENT)
		errat(r, r->lineno, t->col, "expected %s at the end of the line", what);
	errat(r, r->lineno, t->col, "expected %s, found '%.*s'", what, (int)(t->len < 40 ? t->len : 40), t->p);
}

static void
expect(Reader *r, char c)
{
	char what[4] = { '\'', c, '\'', 0 };

	if (!consume(r, c))
		unexpected(r, what);
}

static Expr *
newexpr(Reader *r, ExprKind k, const Tok *t)
{
	Expr *e = arena_alloc(r->a, sizeof *e);

	e->kind = k;
	e->line = r->lineno;
	e->col = t->col;
	return e;
}

static void
push_elt(Reader *r, Expr *e, Expr *x)
{
	GROW(r, e->elts, e->cap, e->n + 1);
	e->elts[e->n++] = x;
}

static Expr *expr(Reader *r);

/* name := NAME { "." NAME }; None, True and False are constants */
static Expr *
name(Reader *r)
{
	Tok *t = peek(r);
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
	for (r->pos++; equal(r, '.') && r->toks[r->pos + 1].kind == T_NAME; r->pos += 2)
		end = r->toks[r->pos + 1].p + r->toks[r->pos + 1].len;
	if (equal(r, '.')) {
		r->pos++;
		unexpected(r, "a name after '.'");
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
	while (!equal(r, close)) {
		push_elt(r, e, expr(r));
		if (!consume(r, ',')) {
			if (!equal(r, close)) {
				char what[16];

				snprintf(what, sizeof what, "',' or '%c'", close);
				unexpected(r, what);
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

	while (!equal(r, '}')) {
		push_elt(r, e, expr(r));
		expect(r, ':');
		push_elt(r, e, expr(r));
		if (!consume(r, ','))
			break;
	}
	expect(r, '}');
	return e;
}

/* atom := name | INT | FLOAT | STR | paren | "[" exprs "]" | dict */
static Expr *
atom(Reader *r)
{
	Tok *t = peek(r);
	Expr *e;
	bool comma;

	switch (t->kind) {
	case T_NAME:
		return name(r);
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
		r->pos--;
		break;
	default:
		break;
	}
	unexpected(r, "an expression");
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
		errat(r, c->line, c->col, "float() takes one string: float('inf')");
	s = a->s;
	v = strtod(s, &end);
	if (end == s || *end)
		errat(r, a->line, a->col, "float() of '%s' is not a number", s);
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
		errat(r, r->lineno, open->col, "only a named function can be called");
	c->col = fn->col;
	c->fn = fn;
	while (!equal(r, ')')) {
		Arg a = { NULL, 0, NULL };
		Tok *t = peek(r);

		if (t->kind == T_NAME && ispunct_(&r->toks[r->pos + 1], '=')) {
			a.kw = arena_strndup(r->a, t->p, t->len);
			a.kwcol = t->col;
			r->pos += 2;
		} else if (c->nargs > 0 && c->args[c->nargs - 1].kw) {
			errat(r, r->lineno, t->col, "positional argument follows keyword argument");
		}
		a.e = expr(r);
		GROW(r, c->args, c->capargs, c->nargs + 1);
		c->args[c->nargs++] = a;
		if (!consume(r, ','))
			break;
	}
	expect(r, ')');
	return strcmp(fn->s, "float") == 0 ? fold_float(r, c) : c;
}

/* postfix := atom { "(" args ")" } */
static Expr *
postfix(Reader *r)
{
	Expr *e = atom(r);

	while (equal(r, '(')) {
		Tok *open = peek(r);

		r->pos++;
		e = call(r, e, open);
	}
	return e;
}

/* expr := "-" expr | postfix */
static Expr *
expr(Reader *r)
{
	Tok *t = peek(r);
	Expr *e;

	if (++r->depth > MAXDEPTH)
		errat(r, r->lineno, t->col, "nesting too deep (more than %d levels)", MAXDEPTH);
	if (consume(r, '-')) {
		e = expr(r);
		if (e->kind == E_INT)
			e->i = -e->i;
		else if (e->kind == E_FLOAT)
			e->f = -e->f;
		else
			errat(r, r->lineno, t->col, "'-' applies only to numbers here");
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

/* names := NAME { "," NAME } [","], up to `stop` */
static void
names(Reader *r, Stmt *s, char stop, const char *what)
{
	while (!equal(r, stop) && peek(r)->kind != T_EOF && peek(r)->kind != T_COMMENT) {
		if (peek(r)->kind != T_NAME)
			unexpected(r, what);
		push_name(r, s, peek(r));
		r->pos++;
		if (!consume(r, ','))
			break;
	}
}

/* lhs := names | "[" [names] "]" | "(" [names] ")" */
static void
lhs(Reader *r, Stmt *s)
{
	char close = consume(r, '[') ? ']' : consume(r, '(') ? ')' : '=';

	names(r, s, close, "a name on the left of '='");
	if (close != '=')
		expect(r, close);
	expect(r, '=');
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
static bool
match_typecmt(const char *p, uint32_t n, uint32_t col0, TypeCmt *ty)
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
	Tok *t = peek(r);
	Expr *e, *tup;

	if (t->kind == T_EOF || t->kind == T_COMMENT)
		return newexpr(r, E_NONE, t);
	e = expr(r);
	if (!equal(r, ','))
		return e;
	tup = newexpr(r, E_TUPLE, t);
	push_elt(r, tup, e);
	while (consume(r, ',') && peek(r)->kind != T_EOF && peek(r)->kind != T_COMMENT)
		push_elt(r, tup, expr(r));
	return tup;
}

/* stmt := "del" names | "return" [exprs] | [lhs "="] call, then an optional
 * comment; "# NAME: \"TYPE\"" types the result */
static void
parse_stmt(Reader *r, Stmt *s)
{
	Tok *t = peek(r);

	s->line = r->lineno;
	s->col = t->col;
	if (is_word(t, "del")) {
		s->kind = S_DEL;
		r->pos++;
		names(r, s, 0, "a name to delete");
		if (s->nnames == 0)
			unexpected(r, "a name to delete");
	} else if (is_word(t, "return")) {
		s->kind = S_RETURN;
		r->pos++;
		s->e = ret_value(r);
	} else {
		s->kind = S_CALL;
		if (assigns(r))
			lhs(r, s);
		s->e = expr(r);
		if (s->e->kind != E_CALL)
			errat(r, r->lineno, s->e->col, "expected a call");
	}
	t = peek(r);
	if (t->kind == T_COMMENT) {
		match_typecmt(t->p, t->len, t->col, &s->ty);
		r->pos++;
	}
	if (peek(r)->kind != T_EOF)
		unexpected(r, "the end of the statement");
}

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

	lex_line(r, 0);
	check_brackets(r);
	r->pos = 1;
	if ((t = peek(r))->kind != T_NAME)
		unexpected(r, "the function's name");
	r->fname = arena_strndup(r->a, t->p, t->len);
	r->pos++;
	expect(r, '(');
	while (!equal(r, ')')) {
		if ((t = peek(r))->kind != T_NAME)
			unexpected(r, "a parameter name");
		GROW(r, r->params, r->capparams, r->nparams + 1);
		r->params[r->nparams].s = arena_strndup(r->a, t->p, t->len);
		r->params[r->nparams++].col = t->col;
		for (uint32_t i = 0; i + 1 < r->nparams; i++)
			if (strcmp(r->params[i].s, r->params[r->nparams - 1].s) == 0)
				errat(r, r->lineno, t->col, "duplicate parameter '%s'", r->params[i].s);
		r->pos++;
		if (!consume(r, ','))
			break;
	}
	expect(r, ')');
	expect(r, ':');
	if (peek(r)->kind != T_EOF && peek(r)->kind != T_COMMENT)
		unexpected(r, "the end of the def line");
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
	errat(r, r->lineno, i + 1, "expected the trace's 'def' line (a Thunder trace starts with imports, decorators and 'def computation(...):')");
}

/* "# NAME: \"TYPE\"" right after def, before any statement, types a parameter */
static void
param_type(Reader *r, uint32_t at)
{
	TypeCmt ty = { 0 };

	if (r->nstmts > 0 || !match_typecmt(r->lp + at, r->llen - at, at + 1, &ty))
		return;
	for (uint32_t i = 0; i < r->nparams; i++) {
		if (strlen(r->params[i].s) != ty.nlen || memcmp(r->params[i].s, ty.name, ty.nlen) != 0)
			continue;
		if (r->ptypes[i].present)
			errat(r, r->lineno, at + 1, "second type comment for parameter '%s' (the first is at line %u)",
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
		errat(r, r->lineno, ind + 1,
			r->nopen == 0 ? "subsymbol line with no statement above it"
			: "subsymbol line is nested deeper than the line above it");
	while (r->nopen > 0 && r->stmts[r->open[r->nopen - 1]].depth >= depth)
		r->stmts[r->open[--r->nopen]].end = r->nstmts;
	GROW(r, r->stmts, r->capstmts, r->nstmts + 1);
	s = &r->stmts[r->nstmts];
	memset(s, 0, sizeof *s);
	s->depth = depth;
	lex_line(r, at);
	check_brackets(r);
	r->depth = 0;
	parse_stmt(r, s);
	if (s->kind == S_RETURN && depth > 0)
		errat(r, s->line, s->col, "'return' in a subsymbol");
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
		errat(r, r->lineno, ind + 1, "tab in indentation: Thunder indents with spaces");
	if (ind == 0 && p[0] == '#')
		return;
	if (ind == 0 && r->returned)
		errat(r, r->lineno, 1, "unexpected text after the function body");
	if (ind == 0)
		errat(r, r->lineno, 1, "expected an indented statement of '%s'", r->fname);
	if (ind % 2)
		errat(r, r->lineno, ind + 1, "indentation of %u spaces is not a multiple of 2", ind);
	depth = (int)(ind / 2) - 1;
	if (depth == 0 && p[ind] == '#') {
		param_type(r, ind);
		return;
	}
	if (depth > 0 && (p[ind] != '#' || ind + 1 >= n || p[ind + 1] != ' '))
		errat(r, r->lineno, ind + 1, "unexpected indentation (a subsymbol line starts with '# ')");
	if (r->returned)
		errat(r, r->lineno, ind + 1, "statement after 'return'");
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
		errat(r, r->lastline, 1, "no 'def' line: this is not a Thunder trace");
	if (!r->returned)
		errat(r, r->lastline, r->lastlen + 1, "'%s' has no 'return'", r->fname);
}

/* ---- types in type comments ---- */

/* dims must be non-negative and small enough to count and address */
static void
check_numel(Reader *r, uint32_t line, uint32_t col, const Type *t)
{
	int64_t n = 1;
	char b[256];

	for (int i = 0; i < t->rank; i++) {
		if (t->d[i] < 0)
			errat(r, line, col, "negative dimension %lld in %s", (long long)t->d[i], dimstr(t->d, t->rank, b, sizeof b));
		if (t->d[i] > 0 && n > INT64_MAX / 64 / t->d[i])
			errat(r, line, col, "shape %s has too many elements", dimstr(t->d, t->rank, b, sizeof b));
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
		errat(r, line, tc->col + *i, "expected a dimension in the type comment");
	for (; *i < n && isdig(s[*i]); (*i)++) {
		if (v > (INT64_MAX - (s[*i] - '0')) / 10)
			errat(r, line, tc->col + at, "dimension is too large");
		v = v * 10 + (s[*i] - '0');
	}
	if (neg)
		errat(r, line, tc->col + at, "negative dimension -%lld in the type comment", (long long)v);
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
			errat(r, line, tc->col + open, "rank above the maximum of %d", IR_MAXRANK);
		t->d[t->rank++] = type_dim(r, line, tc, &i);
		while (i < n && s[i] == ' ')
			i++;
		if (i < n && s[i] == ']')
			break;
		if (i >= n || s[i] != ',')
			errat(r, line, tc->col + i, "expected ',' or ']' in the type comment");
	}
	if (i + 1 != n)
		errat(r, line, tc->col + i + 1, "unexpected text after the type's shape");
	check_numel(r, line, tc->col + open, t);
}

/* TYPE := [DEVICE " "] DTYPE dims, e.g. "cuda:0 f8_e4m3fn[16, 32]".
 * *dtcol and *shcol receive the columns of the dtype and the shape. */
static void
parse_type(Reader *r, uint32_t line, const TypeCmt *tc, Type *t, uint32_t *dtcol, uint32_t *shcol)
{
	const char *s = tc->text, *br = memchr(s, '[', tc->len), *sp;
	uint32_t de = br ? (uint32_t)(br - s) : tc->len, ds;
	int dt;

	if (!br)
		errat(r, line, tc->col, "type \"%.*s\" is not a tensor type", (int)tc->len, s);
	sp = memchr(s, ' ', de);
	for (ds = sp ? (uint32_t)(sp - s) : 0; ds < de && s[ds] == ' '; ds++)
		;
	if ((dt = dt_lookup(s + ds, de - ds, 1)) < 0)
		errat(r, line, tc->col + ds, "unknown dtype '%.*s'", (int)(de - ds), s + ds);
	t->dt = (DType)dt;
	*dtcol = tc->col + ds;
	*shcol = tc->col + de;
	parse_dims(r, line, tc, de, t);
}

/* ---- symbols ---- */

static Sym *
sym_find(Reader *r, const char *name)
{
	uint32_t *i = map_get(&r->symmap, name);

	return i ? &r->syms[*i] : NULL;
}

static uint32_t
sym_intern(Reader *r, const char *name)
{
	uint32_t *i = map_get(&r->symmap, name);

	if (i)
		return *i;
	GROW(r, r->syms, r->capsyms, r->nsyms + 1);
	memset(&r->syms[r->nsyms], 0, sizeof r->syms[0]);
	r->syms[r->nsyms].name = name;
	map_put(r->a, &r->symmap, name, r->nsyms);
	return r->nsyms++;
}

/* (re)define name as s; inside a frame the old meaning is logged */
static void
define(Reader *r, const char *name, Sym s)
{
	uint32_t i;

	if (strcmp(name, "_") == 0)
		return;
	i = sym_intern(r, name);
	if (r->nframes > 1) {
		GROW(r, r->log, r->caplog, r->nlog + 1);
		r->log[r->nlog].sym = i;
		r->log[r->nlog++].old = r->syms[i];
	}
	s.name = r->syms[i].name;
	s.stamp = ++r->stamp;
	r->syms[i] = s;
}

/* the symbol a name refers to: errors for undefined, deleted and local names */
static Sym *
lookup(Reader *r, const Expr *e)
{
	Sym *s = sym_find(r, e->s);

	if (!s || s->kind == SYM_NONE)
		errat(r, e->line, e->col, "undefined name '%s'", e->s);
	if (s->kind == SYM_DEL)
		errat(r, e->line, e->col, "'%s' was deleted at line %u", e->s, s->line);
	if (s->kind == SYM_LOCAL)
		errat(r, e->line, e->col, "'%s' is defined only inside the subsymbols of %s at line %u",
			e->s, s->owner, s->line);
	return s;
}

/* give value v the trace's name, made unique among value names */
static void
name_value(Reader *r, uint32_t v, const char *name)
{
	const char *n = name;

	for (int k = 1; map_get(&r->vnames, n); k++)
		n = arena_printf(r->a, "%s_%d", name, k);
	map_put(r->a, &r->vnames, n, v);
	r->fn->vals[v].name = n;
}

/* ---- operands ---- */

static uint32_t
tensor(Reader *r, const Expr *e)
{
	Sym *s;

	if (e->kind != E_NAME)
		errat(r, e->line, e->col, "%s: expected a tensor", r->callee);
	s = lookup(r, e);
	if (s->kind == SYM_OBJ)
		errat(r, e->line, e->col, "'%s' is not a tensor but a %s object (line %u)", e->s, s->owner, s->line);
	return s->val;
}

/* an operand of an elementwise op: a tensor or a Python number */
typedef struct {
	const Expr *e;
	bool tensor;
	uint32_t v;
} Opnd;

static Opnd
operand(Reader *r, const Expr *e)
{
	Opnd o = { e, false, 0 };

	if (e->kind == E_INT || e->kind == E_FLOAT || e->kind == E_BOOL)
		return o;
	if (e->kind != E_NAME)
		errat(r, e->line, e->col, "%s: expected a tensor or a number", r->callee);
	o.tensor = true;
	o.v = tensor(r, e);
	return o;
}

static DType
vdtype(Reader *r, uint32_t v)
{
	return (DType)r->fn->vals[v].dtype;
}

/* the Python number e as a constant of dtype t, rounded as PyTorch rounds a
 * Python scalar (double -> float -> narrower) */
static double
scalar_in(Reader *r, const Expr *e, DType t)
{
	const DTypeInfo *d = &ir_dtypes[t];
	double x = e->kind == E_FLOAT ? e->f : (double)e->i;
	int64_t lo, hi;
	float f = (float)x;

	switch (d->kind) {
	case DK_BOOL:
		if (e->kind == E_FLOAT || e->i < 0 || e->i > 1)
			errat(r, e->line, e->col, "%s: scalar does not fit in b8", r->callee);
		return x;
	case DK_INT:
	case DK_UINT:
		if (e->kind == E_FLOAT)
			errat(r, e->line, e->col, "%s: float scalar with an %s tensor", r->callee, d->thunder);
		lo = d->kind == DK_UINT ? 0 : -(INT64_C(1) << (d->bits - 2)) * 2;
		hi = d->bits == 64 ? INT64_MAX : (d->kind == DK_UINT ? (INT64_C(1) << d->bits) - 1 : -lo - 1);
		if (e->i < lo || e->i > hi || e->i > (INT64_C(1) << 53) || e->i < -(INT64_C(1) << 53))
			errat(r, e->line, e->col, "%s: scalar %lld does not fit in %s", r->callee, (long long)e->i, d->thunder);
		return x;
	case DK_FLOAT:
		return t == DT_F64 ? x : t == DT_F32 ? (double)f
			: t == DT_BF16 ? (double)bf16_to_f32(f32_to_bf16(f)) : (double)f16_to_f32(f32_to_f16(f));
	case DK_FP8:
		return t == DT_F8E4M3FN ? (double)e4m3fn_to_f32(f32_to_e4m3fn(f)) : (double)e5m2_to_f32(f32_to_e5m2(f));
	}
	unreachable();
}

static bool
exact_in(Reader *r, const Expr *e, DType t)
{
	double x = e->kind == E_FLOAT ? e->f : (double)e->i;

	return scalar_in(r, e, t) == x;
}

/* ---- building instructions ---- */

/* check the last instruction; the verifier's message starts "%name = op: " */
static void
check_last(Reader *r)
{
	char err[256];
	const char *why;

	if (ir_check_instr(r->fn, &r->fn->ins[r->fn->nins - 1], err, sizeof err))
		return;
	why = strstr(err, ": ");
	errat(r, r->cur->line, r->ccol, "%s: %s", r->callee, why ? why + 2 : err);
}

/* append an instruction of type t and check it */
static uint32_t
emit(Reader *r, Op op, const uint32_t *args, int nargs, const int64_t *attr, int nattr, const Type *t)
{
	uint32_t v = ir_instr(r->fn, op, args, nargs, attr, nattr, t->dt, t->rank, t->d);

	check_last(r);
	return v;
}

static uint32_t
konst(Reader *r, double x, DType t)
{
	return ir_full(r->fn, x, t, 0, NULL);
}

static uint32_t
convert(Reader *r, uint32_t v, DType t)
{
	Type ty;

	vtype(r->fn, v, &ty);
	ty.dt = t;
	return emit(r, OP_CONVERT, &v, 1, NULL, 0, &ty);
}

/* ---- arguments ---- */

/* a parameter of a known callee; "a|input" accepts either keyword */
typedef struct {
	const char *name;
	bool opt;
} Param;

static bool
param_is(const char *names, const char *kw)
{
	size_t n = strlen(kw);

	for (const char *p = names; p; p = strchr(p, '|'), p = p ? p + 1 : NULL)
		if (strncmp(p, kw, n) == 0 && (p[n] == 0 || p[n] == '|'))
			return true;
	return false;
}

/* match the call's arguments to ps; out[i] is NULL for an absent optional */
static void
bind(Reader *r, const Expr *c, const Param *ps, int np, const Expr **out)
{
	int npos = 0, i;

	for (i = 0; i < np; i++)
		out[i] = NULL;
	for (uint32_t k = 0; k < c->nargs; k++) {
		const Arg *a = &c->args[k];

		if (!a->kw && npos >= np)
			errat(r, a->e->line, a->e->col, "too many arguments to %s (it takes %d)", r->callee, np);
		for (i = a->kw ? 0 : npos++; a->kw && i < np && !param_is(ps[i].name, a->kw); i++)
			;
		if (i == np)
			errat(r, c->line, a->kwcol, "%s got an unexpected keyword argument '%s'", r->callee, a->kw);
		if (out[i])
			errat(r, c->line, a->kw ? a->kwcol : a->e->col, "%s got argument '%.*s' twice", r->callee,
				(int)strcspn(ps[i].name, "|"), ps[i].name);
		out[i] = a->e;
	}
	for (i = 0; i < np; i++)
		if (!out[i] && !ps[i].opt)
			errat(r, c->line, r->ccol, "%s is missing argument '%.*s' (got %u)", r->callee,
				(int)strcspn(ps[i].name, "|"), ps[i].name, c->nargs);
}

static bool
isnone(const Expr *e)
{
	return !e || e->kind == E_NONE;
}

static const struct { const char *name; DType t; } torch_alias[] = {
	{ "float", DT_F32 }, { "double", DT_F64 }, { "half", DT_F16 }, { "long", DT_I64 },
	{ "int", DT_I32 }, { "short", DT_I16 },
};

/* dtype := "dtypes." LONG ["_"] | "torch." TORCH */
static DType
dtype_arg(Reader *r, const Expr *e)
{
	const char *s = e->kind == E_NAME ? e->s : "";
	size_t n;
	int t = -1;

	if (strncmp(s, "dtypes.", 7) == 0) {
		n = strlen(s + 7);
		t = dt_lookup(s + 7, n > 1 && s[6 + n] == '_' ? n - 1 : n, 2);
	} else if (strncmp(s, "torch.", 6) == 0) {
		t = dt_lookup(s + 6, strlen(s + 6), 3);
		for (size_t i = 0; t < 0 && i < NELEM(torch_alias); i++)
			if (strcmp(s + 6, torch_alias[i].name) == 0)
				t = (int)torch_alias[i].t;
	} else {
		errat(r, e->line, e->col, "%s: expected a dtype (dtypes.X or torch.X)", r->callee);
	}
	if (t < 0)
		errat(r, e->line, e->col, "unknown dtype '%s'", s);
	return (DType)t;
}

static bool
bool_arg(Reader *r, const Expr *e, bool dflt)
{
	if (isnone(e))
		return dflt;
	if (e->kind != E_BOOL)
		errat(r, e->line, e->col, "%s: expected True or False", r->callee);
	return e->i != 0;
}

static int64_t
int_arg(Reader *r, const Expr *e, const char *what)
{
	if (e->kind != E_INT)
		errat(r, e->line, e->col, "%s: %s must be an int", r->callee, what);
	return e->i;
}

/* a tuple or list of at most IR_MAXRANK ints, with their columns */
typedef struct {
	int n;
	int64_t v[IR_MAXRANK];
	const Expr *e[IR_MAXRANK];
	const Expr *list;
} Ints;

/* ints := "(" [INT {"," INT}] ")" | "[" ... "]" | INT when `one` */
static void
ints(Reader *r, const Expr *e, const char *what, bool one, Ints *out)
{
	out->n = 0;
	out->list = e;
	if (one && e->kind == E_INT) {
		out->n = 1;
		out->v[0] = e->i;
		out->e[0] = e;
		return;
	}
	if (e->kind != E_TUPLE && e->kind != E_LIST)
		errat(r, e->line, e->col, "%s: %s must be a tuple of ints", r->callee, what);
	if (e->n > IR_MAXRANK)
		errat(r, e->line, e->col, "%s: %s has %u entries; the maximum rank is %d", r->callee, what, e->n, IR_MAXRANK);
	for (uint32_t i = 0; i < e->n; i++) {
		out->v[i] = int_arg(r, e->elts[i], what);
		out->e[i] = e->elts[i];
	}
	out->n = (int)e->n;
}

/* a shape: non-negative dims (one -1 when `infer`) that can be addressed */
static void
shape_arg(Reader *r, const Expr *e, bool infer, Ints *s)
{
	Type t = { DT_B8, 0, { 0 } };

	ints(r, e, "shape", false, s);
	for (int i = 0; i < s->n; i++) {
		if (s->v[i] < 0 && !(infer && s->v[i] == -1))
			errat(r, e->line, s->e[i]->col, "%s: negative dimension %lld", r->callee, (long long)s->v[i]);
		t.d[t.rank++] = s->v[i] < 0 ? 1 : s->v[i];
	}
	check_numel(r, e->line, e->col, &t);
}

/* a dim in [-rank, rank), made non-negative */
static int64_t
norm_dim(Reader *r, const Expr *e, int64_t d, int rank)
{
	if (d < -rank || d >= rank)
		errat(r, e->line, e->col, "%s: dimension %lld is out of range for rank %d", r->callee, (long long)d, rank);
	return d < 0 ? d + rank : d;
}

/* dims normalized, sorted, distinct */
static void
dims_arg(Reader *r, const Expr *e, int rank, Ints *d)
{
	ints(r, e, "dims", true, d);
	for (int i = 0; i < d->n; i++) {
		int64_t v = norm_dim(r, d->e[i], d->v[i], rank);
		const Expr *x = d->e[i];
		int j = i;

		for (; j > 0 && d->v[j - 1] > v; j--) {
			d->v[j] = d->v[j - 1];
			d->e[j] = d->e[j - 1];
		}
		if (j > 0 && d->v[j - 1] == v)
			errat(r, x->line, x->col, "%s: dimension %lld appears twice", r->callee, (long long)v);
		d->v[j] = v;
		d->e[j] = x;
	}
}

/* the type t without the dims in d (sorted) */
static void
drop_dims(Type *t, const Ints *d)
{
	int k = 0;

	for (int i = 0, j = 0; i < t->rank; i++) {
		if (j < d->n && d->v[j] == i)
			j++;
		else
			t->d[k++] = t->d[i];
	}
	t->rank = k;
}

/* ---- prims ---- */

static const Param P_A[] = { { "a", false } };
static const Param P_AB[] = { { "a", false }, { "b", false } };

static uint32_t
prim_unary(Reader *r, const Expr *c, Op op)
{
	const Expr *a[1];
	uint32_t x;
	Type t;

	bind(r, c, P_A, 1, a);
	x = tensor(r, a[0]);
	vtype(r->fn, x, &t);
	if (op == OP_ISFINITE)
		t.dt = DT_B8;
	return emit(r, op, &x, 1, NULL, 0, &t);
}

/* the result shape of an elementwise op: its operands' one non-scalar shape */
static void
ew_shape(Reader *r, const Opnd *o, int n, Type *t)
{
	Type u;
	char b1[256], b2[256];
	int from = -1;

	t->rank = 0;
	for (int i = 0; i < n; i++) {
		if (!o[i].tensor || r->fn->vals[o[i].v].rank == 0)
			continue;
		vtype(r->fn, o[i].v, &u);
		if (from >= 0 && !same_shape(t, &u))
			errat(r, o[i].e->line, o[i].e->col, "%s: shapes %s and %s differ (prims do not broadcast)",
				r->callee, dimstr(t->d, t->rank, b1, sizeof b1), dimstr(u.d, u.rank, b2, sizeof b2));
		*t = u;
		from = i;
	}
}

/* one dtype for the data operands (not where's condition) */
static DType
ew_dtype(Reader *r, const Opnd *o, int first, int n)
{
	int have = -1;

	for (int i = first; i < n; i++) {
		if (!o[i].tensor)
			continue;
		if (have >= 0 && vdtype(r, o[i].v) != vdtype(r, o[have].v))
			errat(r, o[i].e->line, o[i].e->col, "%s: operands have different dtypes (%s and %s)", r->callee,
				ir_dtypes[vdtype(r, o[have].v)].thunder, ir_dtypes[vdtype(r, o[i].v)].thunder);
		if (have < 0)
			have = i;
	}
	if (have < 0)
		errat(r, r->cur->line, r->ccol, "%s needs a tensor operand", r->callee);
	return vdtype(r, o[have].v);
}

/* PyTorch computes f16/bf16 tensor-scalar ops in f32 with the scalar as f32,
 * except comparisons, where, maximum and minimum with a scalar the tensor's
 * dtype holds exactly */
static bool
widen(Reader *r, Op op, const Opnd *o, int first, int n, DType t)
{
	bool exact_ok = ir_ops[op].cls == OC_COMPARE || op == OP_WHERE || op == OP_MAXIMUM || op == OP_MINIMUM;

	if (t != DT_BF16 && t != DT_F16)
		return false;
	for (int i = first; i < n; i++)
		if (!o[i].tensor && !(exact_ok && exact_in(r, o[i].e, t)))
			return true;
	return false;
}

/* 1/s in the op-math dtype t (f32 or f64) */
static double
reciprocal(double s, DType t)
{
	return t == DT_F64 ? 1.0 / s : (double)(1.0f / (float)s);
}

/* Binary, compare and where ops; Python numbers become rank-0 constants.
 * A float tensor divided by a Python number is, as PyTorch's CUDA kernel
 * computes it, a product with the number's reciprocal. */
static uint32_t
elementwise(Reader *r, Op op, const Expr **ex, int n)
{
	Opnd o[3];
	int first = op == OP_WHERE ? 1 : 0;
	uint32_t args[3], v;
	DType t, ct;
	bool wide, recip;
	Type rt;

	for (int i = 0; i < n; i++)
		o[i] = operand(r, ex[i]);
	if (first && !o[0].tensor)
		errat(r, ex[0]->line, ex[0]->col, "%s: the condition must be a tensor", r->callee);
	t = ew_dtype(r, o, first, n);
	wide = widen(r, op, o, first, n, t);
	ct = wide ? DT_F32 : t;
	ew_shape(r, o, n, &rt);
	if ((recip = op == OP_DIV && o[0].tensor && !o[1].tensor && dt_isfloat(ct)))
		op = OP_MUL;
	for (int i = 0; i < n; i++)
		args[i] = i < first ? o[i].v : o[i].tensor ? (wide ? convert(r, o[i].v, ct) : o[i].v)
			: konst(r, recip ? reciprocal(scalar_in(r, o[i].e, ct), ct) : scalar_in(r, o[i].e, ct), ct);
	rt.dt = ir_ops[op].cls == OC_COMPARE ? DT_B8 : ct;
	v = emit(r, op, args, n, NULL, 0, &rt);
	return wide && rt.dt != DT_B8 ? convert(r, v, t) : v;
}

static uint32_t
prim_binary(Reader *r, const Expr *c, Op op)
{
	const Expr *a[2];

	bind(r, c, P_AB, 2, a);
	return elementwise(r, op, a, 2);
}

static uint32_t
prim_where(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "pred", false }, { "a", false }, { "b", false } };
	const Expr *a[3];

	bind(r, c, ps, 3, a);
	return elementwise(r, OP_WHERE, a, 3);
}

/* convert_element_type(a, dtype); to the same dtype: no instruction */
static uint32_t
prim_convert(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "dtype", false } };
	const Expr *a[2];
	uint32_t x;
	DType t;

	bind(r, c, ps, 2, a);
	x = tensor(r, a[0]);
	t = dtype_arg(r, a[1]);
	return t == vdtype(r, x) ? x : convert(r, x, t);
}

/* amax(a, dims) and friends: the reduced dims vanish */
static uint32_t
prim_reduce(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a", false }, { "dims", false }, { "output_dtype", true } };
	const Expr *a[3];
	uint32_t x;
	Ints d;
	Type t;

	bind(r, c, ps, 3, a);
	x = tensor(r, a[0]);
	vtype(r->fn, x, &t);
	if (!isnone(a[2]) && dtype_arg(r, a[2]) != t.dt)
		errat(r, a[2]->line, a[2]->col, "%s: an output_dtype other than the input's is not supported", r->callee);
	dims_arg(r, a[1], t.rank, &d);
	drop_dims(&t, &d);
	return emit(r, op, &x, 1, d.v, d.n, &t);
}

/* broadcast_in_dim(a, shape, broadcast_dimensions) */
static uint32_t
prim_broadcast(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "shape", false }, { "broadcast_dimensions", false } };
	const Expr *a[3];
	uint32_t x;
	Ints s, bd;
	Type t;

	bind(r, c, ps, 3, a);
	x = tensor(r, a[0]);
	shape_arg(r, a[1], false, &s);
	ints(r, a[2], "broadcast_dimensions", false, &bd);
	t.dt = vdtype(r, x);
	t.rank = s.n;
	memcpy(t.d, s.v, sizeof t.d);
	return emit(r, OP_BROADCAST, &x, 1, bd.v, bd.n, &t);
}

/* reshape to s; a -1 in s (when `infer`) takes what is left */
static uint32_t
reshape_to(Reader *r, uint32_t x, Ints *s)
{
	int64_t n = ir_numel(r->fn, x), known = 1;
	int at = -1;
	Type t;
	char b1[256], b2[256];

	for (int i = 0; i < s->n; i++) {
		if (s->v[i] == -1 && at >= 0)
			errat(r, s->e[i]->line, s->e[i]->col, "%s: only one dimension can be -1", r->callee);
		if (s->v[i] == -1)
			at = i;
		else
			known *= s->v[i];
	}
	if (at >= 0)
		s->v[at] = known && n % known == 0 ? n / known : -1;
	vtype(r->fn, x, &t);
	tystr(&t, b1, sizeof b1);
	t.rank = s->n;
	memcpy(t.d, s->v, sizeof t.d);
	if ((at >= 0 && s->v[at] < 0) || (at < 0 && known != n))
		errat(r, s->list->line, s->list->col, "%s: cannot reshape %s to %s", r->callee, b1,
			at >= 0 ? "that shape: no size fits the -1" : dimstr(t.d, t.rank, b2, sizeof b2));
	return emit(r, OP_RESHAPE, &x, 1, NULL, 0, &t);
}

static uint32_t
prim_reshape(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "shape", false } };
	const Expr *a[2];
	Ints s;

	bind(r, c, ps, 2, a);
	shape_arg(r, a[1], false, &s);
	return reshape_to(r, tensor(r, a[0]), &s);
}

/* transpose by permutation p, which must be one of x's dims */
static uint32_t
transpose_by(Reader *r, uint32_t x, const Ints *p)
{
	Type src, t;
	bool seen[IR_MAXRANK] = { false };
	char b[256];

	vtype(r->fn, x, &src);
	t = src;
	for (int i = 0; i < p->n || i < src.rank; i++) {
		if (p->n != src.rank || p->v[i] < 0 || p->v[i] >= src.rank || seen[p->v[i]])
			errat(r, p->list->line, p->list->col, "%s: %s is not a permutation of %d dims", r->callee,
				dimstr(p->v, p->n, b, sizeof b), src.rank);
		seen[p->v[i]] = true;
		t.d[i] = src.d[p->v[i]];
	}
	return emit(r, OP_TRANSPOSE, &x, 1, p->v, p->n, &t);
}

static uint32_t
prim_transpose(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "permutation", false } };
	const Expr *a[2];
	Ints p;

	bind(r, c, ps, 2, a);
	ints(r, a[1], "permutation", false, &p);
	return transpose_by(r, tensor(r, a[0]), &p);
}

static uint32_t
prim_squeeze(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "dims", false } };
	const Expr *a[2];
	uint32_t x;
	Ints d;
	Type t;

	bind(r, c, ps, 2, a);
	x = tensor(r, a[0]);
	vtype(r->fn, x, &t);
	dims_arg(r, a[1], t.rank, &d);
	drop_dims(&t, &d);
	return emit(r, OP_SQUEEZE, &x, 1, d.v, d.n, &t);
}

/* slice_prim(a, start_indices, end_indices, strides=None); attr: starts, ends, strides */
static uint32_t
prim_slice(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a", false }, { "start_indices", false }, { "end_indices", false },
		{ "strides", true } };
	const Expr *a[4];
	int64_t attr[3 * IR_MAXRANK];
	Ints lo, hi, st;
	uint32_t x;
	Type t;

	bind(r, c, ps, 4, a);
	x = tensor(r, a[0]);
	vtype(r->fn, x, &t);
	ints(r, a[1], "start_indices", false, &lo);
	ints(r, a[2], "end_indices", false, &hi);
	st.n = t.rank;
	for (int i = 0; i < t.rank; i++)
		st.v[i] = 1;
	if (!isnone(a[3]))
		ints(r, a[3], "strides", false, &st);
	if (lo.n != t.rank || hi.n != t.rank || st.n != t.rank)
		errat(r, c->line, r->ccol, "%s: needs a start, end and stride for each of %d dims", r->callee, t.rank);
	for (int i = 0; i < t.rank; i++) {
		if (lo.v[i] < 0 || hi.v[i] < lo.v[i] || hi.v[i] > t.d[i] || st.v[i] < 1)
			errat(r, c->line, lo.list->col, "%s: dim %d: slice [%lld:%lld:%lld] out of range for size %lld",
				r->callee, i, (long long)lo.v[i], (long long)hi.v[i], (long long)st.v[i], (long long)t.d[i]);
		if (st.v[i] > hi.v[i] - lo.v[i])    /* picks the first element at most: same slice */
			st.v[i] = hi.v[i] > lo.v[i] ? hi.v[i] - lo.v[i] : 1;
		t.d[i] = (hi.v[i] - lo.v[i] + st.v[i] - 1) / st.v[i];
		attr[i] = lo.v[i];
		attr[t.rank + i] = hi.v[i];
		attr[2 * t.rank + i] = st.v[i];
	}
	return emit(r, OP_SLICE, &x, 1, attr, 3 * t.rank, &t);
}

/* cat(tensors, dim) */
static uint32_t
prim_cat(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "tensors", false }, { "dim", false } };
	const Expr *a[2];
	uint32_t xs[64];
	int64_t dim;
	Type t, u;

	bind(r, c, ps, 2, a);
	if ((a[0]->kind != E_LIST && a[0]->kind != E_TUPLE) || a[0]->n == 0 || a[0]->n > 64)
		errat(r, a[0]->line, a[0]->col, "%s: expected a list of 1 to 64 tensors", r->callee);
	for (uint32_t i = 0; i < a[0]->n; i++)
		xs[i] = tensor(r, a[0]->elts[i]);
	vtype(r->fn, xs[0], &t);
	dim = norm_dim(r, a[1], int_arg(r, a[1], "dim"), t.rank);
	for (uint32_t i = 1; i < a[0]->n; i++) {
		vtype(r->fn, xs[i], &u);
		if (u.rank != t.rank)
			errat(r, a[0]->elts[i]->line, a[0]->elts[i]->col, "%s: tensors have ranks %d and %d",
				r->callee, t.rank, u.rank);
		t.d[dim] += u.d[dim];
	}
	check_numel(r, c->line, a[0]->col, &t);
	return emit(r, OP_CAT, xs, (int)a[0]->n, &dim, 1, &t);
}

static uint32_t
prim_clone(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "a|input", false }, { "memory_format", true } };
	const Expr *a[2];
	uint32_t x;
	Type t;

	bind(r, c, ps, 2, a);
	x = tensor(r, a[0]);
	vtype(r->fn, x, &t);
	return emit(r, OP_CLONE, &x, 1, NULL, 0, &t);
}

/* full(shape, fill_value, *, device, dtype) */
static uint32_t
prim_full(Reader *r, const Expr *c)
{
	static const Param ps[] = { { "shape", false }, { "fill_value", false }, { "device", true },
		{ "dtype", false } };
	const Expr *a[4];
	Ints s;
	Type t;

	bind(r, c, ps, 4, a);
	shape_arg(r, a[0], false, &s);
	if (a[1]->kind != E_INT && a[1]->kind != E_FLOAT && a[1]->kind != E_BOOL)
		errat(r, a[1]->line, a[1]->col, "%s: fill_value must be a number", r->callee);
	t.dt = dtype_arg(r, a[3]);
	t.rank = s.n;
	memcpy(t.d, s.v, sizeof t.d);
	ir_full(r->fn, scalar_in(r, a[1], t.dt), t.dt, t.rank, t.d);
	check_last(r);
	return r->fn->ins[r->fn->nins - 1].res;
}

static uint32_t
lower_prim(Reader *r, const Expr *c, Op op)
{
	switch (ir_ops[op].cls) {
	case OC_CONVERT: return prim_convert(r, c);
	case OC_UNARY: return prim_unary(r, c, op);
	case OC_BINARY: case OC_COMPARE: return prim_binary(r, c, op);
	case OC_WHERE: return prim_where(r, c);
	case OC_REDUCE: return prim_reduce(r, c, op);
	case OC_CAT: return prim_cat(r, c);
	case OC_CLONE: return prim_clone(r, c);
	case OC_FULL: return prim_full(r, c);
	case OC_SHAPE:
		switch (op) {
		case OP_BROADCAST: return prim_broadcast(r, c);
		case OP_RESHAPE: return prim_reshape(r, c);
		case OP_TRANSPOSE: return prim_transpose(r, c);
		case OP_SQUEEZE: return prim_squeeze(r, c);
		case OP_SLICE: return prim_slice(r, c);
		default: break;
		}
		break;
	case OC_GEMM:
		break;
	}
	unreachable();
}

/* ---- torch-level callees ---- */

/* Tensor.to(x, [device], [dtype], copy=False, dtype=..., ...): a dtype change
 * converts; anything else is the tensor itself (or a clone with copy=True) */
static uint32_t
lower_to(Reader *r, const Expr *c, Op op)
{
	uint32_t x = 0;
	int dt = -1;
	bool copy = false;
	Type t;

	(void)op;
	if (c->nargs == 0 || c->args[0].kw)
		errat(r, c->line, r->ccol, "%s needs a tensor", r->callee);
	x = tensor(r, c->args[0].e);
	for (uint32_t k = 1; k < c->nargs; k++) {
		const Arg *a = &c->args[k];
		const char *kw = a->kw ? a->kw : "";

		if (strcmp(kw, "dtype") == 0 || (!a->kw && a->e->kind == E_NAME && strchr(a->e->s, '.')))
			dt = isnone(a->e) ? dt : (int)dtype_arg(r, a->e);
		else if (!a->kw && a->e->kind == E_NAME)
			dt = vdtype(r, tensor(r, a->e));
		else if (strcmp(kw, "copy") == 0)
			copy = bool_arg(r, a->e, false);
		else if (a->kw && strcmp(kw, "device") && strcmp(kw, "non_blocking") && strcmp(kw, "memory_format"))
			errat(r, c->line, a->kwcol, "%s got an unexpected keyword argument '%s'", r->callee, kw);
		else if (!a->kw && a->e->kind != E_STR && a->e->kind != E_NONE && a->e->kind != E_BOOL)
			errat(r, a->e->line, a->e->col, "%s: expected a dtype, a device or a tensor", r->callee);
	}
	if (dt >= 0 && (DType)dt != vdtype(r, x))
		return convert(r, x, (DType)dt);
	if (!copy)
		return x;
	vtype(r->fn, x, &t);
	return emit(r, OP_CLONE, &x, 1, NULL, 0, &t);
}

/* Tensor.view(x, shape) or Tensor.view(x, d0, d1, ...) */
static uint32_t
lower_view(Reader *r, const Expr *c, Op op)
{
	Expr list = { 0 };
	Ints s;

	(void)op;
	if (c->nargs < 2 || c->args[0].kw)
		errat(r, c->line, r->ccol, "%s takes a tensor and a shape", r->callee);
	for (uint32_t k = 1; k < c->nargs; k++)
		if (c->args[k].kw)
			errat(r, c->line, c->args[k].kwcol, "%s got an unexpected keyword argument '%s'", r->callee, c->args[k].kw);
	if (c->nargs == 2 && c->args[1].e->kind != E_INT) {
		shape_arg(r, c->args[1].e, true, &s);
	} else {
		list.kind = E_TUPLE;
		list.line = c->line;
		list.col = c->args[1].e->col;
		for (uint32_t k = 1; k < c->nargs; k++)
			push_elt(r, &list, c->args[k].e);
		shape_arg(r, &list, true, &s);
		s.list = c->args[1].e;
	}
	return reshape_to(r, tensor(r, c->args[0].e), &s);
}

static uint32_t
lower_treshape(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|input", false }, { "shape", false } };
	const Expr *a[2];
	Ints s;

	(void)op;
	bind(r, c, ps, 2, a);
	shape_arg(r, a[1], true, &s);
	return reshape_to(r, tensor(r, a[0]), &s);
}

/* torch.transpose(x, dim0, dim1): swap two dims */
static uint32_t
lower_ttranspose(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|input", false }, { "dim0", false }, { "dim1", false } };
	const Expr *a[3];
	uint32_t x;
	int64_t d0, d1;
	Ints p;
	int rank;

	(void)op;
	bind(r, c, ps, 3, a);
	x = tensor(r, a[0]);
	rank = r->fn->vals[x].rank;
	d0 = norm_dim(r, a[1], int_arg(r, a[1], "dim0"), rank);
	d1 = norm_dim(r, a[2], int_arg(r, a[2], "dim1"), rank);
	p.n = rank;
	p.list = a[1];
	for (int i = 0; i < rank; i++)
		p.v[i] = i == d0 ? d1 : i == d1 ? d0 : i;
	return transpose_by(r, x, &p);
}

static uint32_t
lower_tclone(Reader *r, const Expr *c, Op op)
{
	(void)op;
	return prim_clone(r, c);
}

/* torch._scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None,
 * out_dtype=None, use_fast_accum=False): a (M,K) fp8, b (K,N) fp8, scales
 * f32[]; the result is (M,N) in out_dtype */
static uint32_t
lower_scaled_mm(Reader *r, const Expr *c, Op op)
{
	static const Param ps[] = { { "a|self|input", false }, { "b|mat2", false }, { "scale_a", false },
		{ "scale_b", false }, { "bias", true }, { "scale_result", true }, { "out_dtype", true },
		{ "use_fast_accum", true } };
	const Expr *a[8];
	uint32_t args[5], v;
	int n = 4;
	Type t;

	(void)op;
	bind(r, c, ps, 8, a);
	for (int i = 0; i < 4; i++)
		args[i] = tensor(r, a[i]);
	if (!isnone(a[4]))
		args[n++] = tensor(r, a[4]);
	if (!isnone(a[5]))
		errat(r, a[5]->line, a[5]->col, "%s: scale_result is not supported", r->callee);
	for (int i = 0; i < 2; i++)
		if (r->fn->vals[args[i]].rank != 2)
			errat(r, a[i]->line, a[i]->col, "%s: operands must be 2-d matrices", r->callee);
	t.dt = isnone(a[6]) ? vdtype(r, args[0]) : dtype_arg(r, a[6]);
	t.rank = 2;
	t.d[0] = ir_dims(r->fn, args[0])[0];
	t.d[1] = ir_dims(r->fn, args[1])[1];
	check_numel(r, c->line, r->ccol, &t);
	v = emit(r, OP_SCALED_MM, args, n, NULL, 0, &t);
	if (bool_arg(r, a[7], false))
		r->fn->ins[r->fn->nins - 1].flags |= IF_FAST_ACCUM;
	return v;
}

/* shallow_copy(x): the same tensor under a new name */
static uint32_t
lower_shallow(Reader *r, const Expr *c, Op op)
{
	const Expr *a[1];

	(void)op;
	bind(r, c, P_A, 1, a);
	return tensor(r, a[0]);
}

typedef uint32_t (*Lower)(Reader *r, const Expr *c, Op op);

static const struct { const char *name; Lower fn; } known[] = {
	{ "Tensor.to", lower_to },
	{ "Tensor.view", lower_view },
	{ "torch.reshape", lower_treshape },
	{ "torch.transpose", lower_ttranspose },
	{ "torch.clone", lower_tclone },
	{ "torch._scaled_mm", lower_scaled_mm },
	{ "shallow_copy", lower_shallow },
};

/* the lowering of a callee, NULL if the reader does not know it */
static Lower
find_known(const char *name, Op *op)
{
	if (strncmp(name, "prims.", 6) == 0) {
		for (int i = 0; i < OP_COUNT; i++)
			if (ir_ops[i].prim[0] && strcmp(ir_ops[i].prim, name + 6) == 0) {
				*op = (Op)i;
				return lower_prim;
			}
		return NULL;
	}
	for (size_t i = 0; i < NELEM(known); i++)
		if (strcmp(known[i].name, name) == 0)
			return known[i].fn;
	return NULL;
}

/* ---- statements ---- */

/* the value the type comment of s types is v, as `what` computed it */
static void
check_typecmt(Reader *r, const Stmt *s, uint32_t v, const char *what)
{
	Type want, got;
	uint32_t dtcol, shcol;
	char b1[256], b2[256];

	if (!s->ty.present)
		return;
	parse_type(r, s->line, &s->ty, &want, &dtcol, &shcol);
	vtype(r->fn, v, &got);
	if (want.dt != got.dt || !same_shape(&want, &got))
		errat(r, s->line, want.dt != got.dt ? dtcol : shcol, "type comment says %s but %s gives %s",
			tystr(&want, b1, sizeof b1), what, tystr(&got, b2, sizeof b2));
}

/* the lhs name the type comment names, or NULL (an error if it names none) */
static const Name *
typed_name(Reader *r, const Stmt *s)
{
	if (!s->ty.present)
		return NULL;
	for (uint32_t i = 0; i < s->nnames; i++)
		if (strlen(s->names[i].s) == s->ty.nlen && memcmp(s->names[i].s, s->ty.name, s->ty.nlen) == 0)
			return &s->names[i];
	errat(r, s->line, s->ty.ncol, "type comment names '%.*s', which the statement does not define", (int)s->ty.nlen, s->ty.name);
}

/* bind the one result v of a known callee to the statement's left side */
static void
bind_result(Reader *r, const Stmt *s, uint32_t v, uint32_t nv0)
{
	Sym sym = { 0 };
	const Name *tn = typed_name(r, s);

	if (s->nnames > 1)
		errat(r, s->line, s->names[1].col, "%s gives one tensor, not %u", r->callee, s->nnames);
	if (tn)
		check_typecmt(r, s, v, r->callee);
	if (s->nnames == 0 || strcmp(s->names[0].s, "_") == 0)
		return;
	if (v >= nv0 && !r->fn->vals[v].name)
		name_value(r, v, s->names[0].s);
	sym.kind = SYM_VAL;
	sym.val = v;
	define(r, s->names[0].s, sym);
}

/* collect the tensors in e, in order: names of tensors and of objects, inside
 * tuples, lists, dicts and nested calls. Unknown names are Python objects. */
static void
collect(Reader *r, const Expr *e, Saved **sv, uint32_t *n, uint32_t *cap)
{
	const Sym *s;

	switch (e->kind) {
	case E_NAME:
		s = sym_find(r, e->s);
		if (!s || s->kind == SYM_NONE)
			return;
		s = lookup(r, e);
		for (uint32_t i = 0; i < (s->kind == SYM_OBJ ? s->nobjv : 1); i++) {
			GROW(r, *sv, *cap, *n + 1);
			(*sv)[(*n)++] = s->kind == SYM_OBJ ? s->objv[i] : (Saved){ s->val, s->name };
		}
		return;
	case E_TUPLE: case E_LIST: case E_DICT:
		for (uint32_t i = 0; i < e->n; i++)
			collect(r, e->elts[i], sv, n, cap);
		return;
	case E_CALL:
		for (uint32_t i = 0; i < e->nargs; i++)
			collect(r, e->args[i].e, sv, n, cap);
		return;
	default:
		return;
	}
}

/* Float8Tensor(data, scale, ...): an object that remembers its tensors */
static void
make_object(Reader *r, const Stmt *s)
{
	Sym sym = { 0 };
	uint32_t cap = 0;

	for (uint32_t i = 0; i < s->e->nargs; i++)
		collect(r, s->e->args[i].e, &sym.objv, &sym.nobjv, &cap);
	sym.kind = SYM_OBJ;
	sym.line = s->line;
	sym.owner = r->callee;
	for (uint32_t i = 0; i < s->nnames; i++)
		define(r, s->names[i].s, sym);
}

/* a tensor-subclass constructor: a callee whose last part is capitalized */
static bool
is_constructor(const char *name)
{
	const char *dot = strrchr(name, '.');

	name = dot ? dot + 1 : name;
	return name[0] >= 'A' && name[0] <= 'Z';
}

/* Lower a call: a known callee directly, a constructor as an object. false:
 * the callee is unknown and has subsymbols, which the caller lowers instead. */
static bool
lower_call(Reader *r, uint32_t si)
{
	const Stmt *s = &r->stmts[si];
	uint32_t nv0 = r->fn->nvals, ni0 = r->fn->nins, v;
	Op op = OP_COUNT;
	Lower f;

	r->cur = s;
	r->callee = s->e->fn->s;
	r->ccol = s->e->fn->col;
	if ((f = find_known(r->callee, &op))) {
		v = f(r, s->e, op);
		for (uint32_t i = ni0; i < r->fn->nins; i++) {
			r->fn->ins[i].line = s->line;
			r->fn->ins[i].col = s->col;
		}
		bind_result(r, s, v, nv0);
		return true;
	}
	if (s->end > si + 1)
		return false;
	if (is_constructor(r->callee)) {
		make_object(r, s);
		return true;
	}
	errat(r, s->line, r->ccol, "unknown callee '%s' has no subsymbols to lower it from", r->callee);
}

/* del := "del" NAME {"," NAME} */
static void
lower_del(Reader *r, const Stmt *s)
{
	Sym sym = { 0 };

	for (uint32_t i = 0; i < s->nnames; i++) {
		Expr e = { 0 };

		e.kind = E_NAME;
		e.line = s->line;
		e.col = s->names[i].col;
		e.s = s->names[i].s;
		lookup(r, &e);
		sym.kind = SYM_DEL;
		sym.line = s->line;
		define(r, e.s, sym);
	}
}

/* ---- subsymbol frames ---- */

static void
push_frame(Reader *r, uint32_t stmt)
{
	Frame *f;

	GROW(r, r->frames, r->capframes, r->nframes + 1);
	f = &r->frames[r->nframes++];
	f->stmt = stmt;
	f->next = stmt == NOSTMT ? 0 : stmt + 1;
	f->logmark = r->nlog;
	f->stamp = r->stamp + 1;
}

/* the frame's outputs: every lhs name must have been defined inside; they
 * are marked keep */
static void
frame_outputs(Reader *r, const Frame *f, const Stmt *s)
{
	const Name *tn = typed_name(r, s);

	for (uint32_t i = 0; i < s->nnames; i++) {
		Sym *sym = sym_find(r, s->names[i].s);

		if (strcmp(s->names[i].s, "_") == 0)
			continue;
		if (!sym || sym->stamp < f->stamp || (sym->kind != SYM_VAL && sym->kind != SYM_OBJ))
			errat(r, s->line, s->names[i].col, "'%s' is not defined by the subsymbols of %s",
				s->names[i].s, s->e->fn->s);
		sym->keep = true;
		if (tn == &s->names[i] && sym->kind == SYM_VAL)
			check_typecmt(r, s, sym->val, s->e->fn->s);
	}
}

/* undo one definition made inside s's subsymbols: back to what the name
 * was, or local to s if it was nothing */
static void
unwind(Reader *r, const LogEnt *e, const Stmt *s)
{
	Sym *sym = &r->syms[e->sym];
	const char *name = sym->name;

	if (e->old.kind == SYM_VAL || e->old.kind == SYM_OBJ || e->old.kind == SYM_DEL) {
		*sym = e->old;
		return;
	}
	memset(sym, 0, sizeof *sym);
	sym->name = name;
	sym->kind = SYM_LOCAL;
	sym->line = s->line;
	sym->owner = s->e->fn->s;
}

/* Close a frame: names defined inside that are not its outputs are undone,
 * newest first; the outputs stay, each logged once (its oldest meaning) for
 * the frame around this one. */
static void
close_frame(Reader *r, const Frame *f)
{
	const Stmt *s = &r->stmts[f->stmt];
	uint32_t k, n = f->logmark;

	frame_outputs(r, f, s);
	for (k = r->nlog; k-- > f->logmark;)
		if (!r->syms[r->log[k].sym].keep)
			unwind(r, &r->log[k], s);
	for (k = f->logmark; k < r->nlog; k++) {
		Sym *sym = &r->syms[r->log[k].sym];

		if (sym->keep) {
			sym->keep = false;
			r->log[n++] = r->log[k];
		}
	}
	r->nlog = n;
}

/* ---- return ---- */

static const Expr *
dict_get(const Expr *d, const char *key)
{
	for (uint32_t i = 0; i + 1 < d->n; i += 2)
		if (d->elts[i]->kind == E_STR && strcmp(d->elts[i]->s, key) == 0)
			return d->elts[i + 1];
	return NULL;
}

static void
add_output(Reader *r, uint32_t v, const char *name, bool primary)
{
	for (uint32_t i = 0; !primary && i < r->fn->nrets; i++)
		if (r->fn->rets[i] == v)
			return;
	ir_return(r->fn, v, name);
}

/* Add the tensors of e as outputs, in order. primary: the 'output' part,
 * where anything but tensors, objects and None is an error; else the saved
 * part, deduplicated against the outputs so far. */
static void
outputs(Reader *r, const Expr *e, bool primary)
{
	const Sym *s;

	switch (e->kind) {
	case E_NAME:
		s = lookup(r, e);
		if (s->kind == SYM_VAL)
			add_output(r, s->val, e->s, primary);
		for (uint32_t i = 0; s->kind == SYM_OBJ && i < s->nobjv; i++)
			add_output(r, s->objv[i].v, s->objv[i].name, primary);
		return;
	case E_TUPLE: case E_LIST:
		for (uint32_t i = 0; i < e->n; i++)
			outputs(r, e->elts[i], primary);
		return;
	case E_DICT:
		for (uint32_t i = 1; i < e->n; i += 2)
			outputs(r, e->elts[i], primary);
		return;
	case E_NONE:
		return;
	default:
		if (primary)
			errat(r, e->line, e->col, "a trace can return only tensors");
		return;
	}
}

/* every name in e must be defined */
static void
check_names(Reader *r, const Expr *e)
{
	if (e->kind == E_NAME)
		lookup(r, e);
	for (uint32_t i = 0; i < e->n; i++)
		check_names(r, e->elts[i]);
	for (uint32_t i = 0; i < e->nargs; i++)
		check_names(r, e->args[i].e);
}

/* return := NAME | tuple | list | dict | "{'output': X, ...}, (saved, ...)" */
static void
lower_return(Reader *r, const Stmt *s)
{
	const Expr *e = s->e, *out = e, *saved = NULL;

	check_names(r, e);
	if (e->kind == E_TUPLE && e->n == 2 && e->elts[0]->kind == E_DICT) {
		out = e->elts[0];
		saved = e->elts[1];
	}
	if (out->kind == E_DICT && !(out = dict_get(out, "output")))
		errat(r, e->line, e->col, "the returned dict has no 'output' entry");
	outputs(r, out, true);
	if (saved)
		outputs(r, saved, false);
	if (r->fn->nrets == 0)
		errat(r, s->line, s->col, "the trace returns no tensors");
}

/* ---- pass 2 ---- */

static void
add_params(Reader *r)
{
	for (uint32_t i = 0; i < r->nparams; i++) {
		Sym sym = { 0 };
		uint32_t dtcol, shcol;
		Type t;

		if (!r->ptypes[i].present)
			errat(r, r->defline, r->params[i].col, "parameter '%s' has no type comment (# %s: \"cuda:0 f32[...]\")",
				r->params[i].s, r->params[i].s);
		parse_type(r, r->ptypeline[i], &r->ptypes[i], &t, &dtcol, &shcol);
		sym.kind = SYM_VAL;
		sym.val = ir_param(r->fn, NULL, t.dt, t.rank, t.d);
		name_value(r, sym.val, r->params[i].s);
		define(r, r->params[i].s, sym);
	}
}

static void
lower_stmt(Reader *r, uint32_t si)
{
	const Stmt *s = &r->stmts[si];

	switch (s->kind) {
	case S_DEL:
		lower_del(r, s);
		break;
	case S_RETURN:
		lower_return(r, s);
		break;
	case S_CALL:
		if (!lower_call(r, si))
			push_frame(r, si);
		break;
	}
}

/* lower the body, replacing unknown callees by their subsymbols (an explicit
 * stack of frames, so deep nesting does not recurse) */
static void
lower_body(Reader *r)
{
	push_frame(r, NOSTMT);
	while (r->nframes > 0) {
		Frame *f = &r->frames[r->nframes - 1];
		uint32_t end = f->stmt == NOSTMT ? r->nstmts : r->stmts[f->stmt].end, si;

		if (f->next >= end) {
			if (f->stmt != NOSTMT)
				close_frame(r, f);
			r->nframes--;
			continue;
		}
		si = f->next;
		f->next = r->stmts[si].end;
		lower_stmt(r, si);
	}
}

Func *
fe_read_trace(Arena *a, const Source *src)
{
	Reader *r;

	if (!check_text(src))
		return NULL;
	r = arena_alloc(a, sizeof *r);
	r->a = a;
	r->src = src;
	if (setjmp(r->jb))
		return NULL;
	read_lines(r);
	r->fn = ir_func_new(a, r->fname);
	add_params(r);
	lower_body(r);
	return r->fn;
}

Func *
fe_read(Arena *a, const Source *src)
{
	if (!check_text(src))
		return NULL;
	return fe_is_ir(src) ? fe_read_ir(a, src) : fe_read_trace(a, src);
}
