/* tune.c - parsing tuning declarations and instantiating the variants.
 *
 * Two passes over the lines of the text: the first collects the knob
 * declarations, the second checks every requirement and placeholder
 * (syntax and names, with arithmetic failures ignored) so that errors are
 * reported before anything is built. Then each combination of values is
 * filtered by the requirements and instantiated line by line. Expressions
 * are parsed and evaluated in one go by a small recursive-descent
 * evaluator over 64-bit integers, with its depth and length bounded.
 */
#include "llm_client/tune.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

#define DECL "llm-fuse.tune"
#define DECL_LEN (sizeof(DECL) - 1)
#define REQUIRE_SUFFIX "-require"
#define REQUIRE_SUFFIX_LEN (sizeof(REQUIRE_SUFFIX) - 1)
#define SNIPPET_MAX 40

typedef struct knob_s {
  char name[LF_TUNE_MAX_NAME + 1];
  size_t name_len;
  int values[LF_TUNE_MAX_VALUES];
  size_t count;
  size_t line; /* 1-based */
} knob_t;

typedef struct require_s {
  const char *line_start; /* for columns */
  const char *expr;
  size_t len;
  size_t line; /* 1-based */
} require_t;

typedef struct tune_s {
  knob_t knobs[LF_TUNE_MAX_DECLS];
  size_t knob_count;
  size_t tuned_count; /* knobs with more than one value */
  size_t product;
  require_t requires[LF_TUNE_MAX_REQUIRES];
  size_t require_count;
} tune_t;

/* ---- Lines ---------------------------------------------------------------*/

/* A line: its content without the terminator, and the terminator ("\n",
 * "\r\n", or "" or "\r" for a last line without a newline). */
typedef struct line_s {
  const char *text;
  size_t len;
  const char *term;
  size_t term_len;
} line_t;

static bool next_line(const char **p, const char *end, line_t *out) {
  if (*p >= end)
    return false;
  const char *s = *p;
  const char *nl = memchr(s, '\n', (size_t)(end - s));
  const char *stop = nl ? nl : end;
  out->text = s;
  out->len = (size_t)(stop - s);
  out->term = stop;
  out->term_len = nl ? 1 : 0;
  if (out->len && s[out->len - 1] == '\r') {
    --out->len;
    --out->term;
    ++out->term_len;
  }
  *p = nl ? nl + 1 : end;
  return true;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static bool is_ident_start(char c) {
  return is_upper(c) || (c >= 'a' && c <= 'z') || c == '_';
}
static bool is_ident(char c) { return is_ident_start(c) || is_digit(c); }

static const char *skip_blanks(const char *p, const char *end) {
  while (p < end && is_blank(*p))
    ++p;
  return p;
}

/* Copies up to SNIPPET_MAX bytes of model text for a message: control
 * characters become '?', a cut is made at a UTF-8 boundary and marked. */
static const char *snippet(const char *s, size_t n, char *buf, size_t size) {
  size_t cut = n;
  if (cut > SNIPPET_MAX) {
    cut = SNIPPET_MAX;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
      --cut;
  }
  if (cut + 4 > size)
    cut = size - 4;
  for (size_t i = 0; i < cut; ++i) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = c < 0x20 || c == 0x7F ? '?' : (char)c;
  }
  size_t k = cut;
  if (cut < n) {
    memcpy(buf + k, "...", 3);
    k += 3;
  }
  buf[k] = '\0';
  return buf;
}

typedef enum line_kind_e { LINE_PLAIN, LINE_DECL, LINE_REQUIRE } line_kind_t;

/* Classifies a line. For a directive, `*out_rest` is what follows the
 * keyword and `*out_indent` the length of the leading blanks. */
static lf_status_t classify(line_t l, size_t line_no, line_kind_t *out_kind,
                            const char **out_rest, size_t *out_indent) {
  const char *end = l.text + l.len;
  const char *p = skip_blanks(l.text, end);
  *out_kind = LINE_PLAIN;
  *out_indent = (size_t)(p - l.text);
  if (end - p < 2 || p[0] != '/' || p[1] != '/')
    return LF_OK;
  p = skip_blanks(p + 2, end);
  if ((size_t)(end - p) < DECL_LEN || memcmp(p, DECL, DECL_LEN) != 0)
    return LF_OK;
  const char *kw = p;
  p += DECL_LEN;
  if (p == end || is_blank(*p)) {
    *out_kind = LINE_DECL;
    *out_rest = p;
    return LF_OK;
  }
  if ((size_t)(end - p) >= REQUIRE_SUFFIX_LEN &&
      memcmp(p, REQUIRE_SUFFIX, REQUIRE_SUFFIX_LEN) == 0 &&
      (p + REQUIRE_SUFFIX_LEN == end || is_blank(p[REQUIRE_SUFFIX_LEN]))) {
    *out_kind = LINE_REQUIRE;
    *out_rest = p + REQUIRE_SUFFIX_LEN;
    return LF_OK;
  }
  /* `// llm-fuse.tuned NAME = V` and `// llm-fuse.tuned-require EXPR` are
   * what instantiation writes: comments. */
  if (*p == 'd')
    return LF_OK;
  const char *w = p;
  while (w < end && !is_blank(*w))
    ++w;
  char buf[SNIPPET_MAX + 8];
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "line %zu: unknown directive '%s'; write "
                   "'// llm-fuse.tune NAME = V1, V2, ...' or "
                   "'// llm-fuse.tune-require EXPR'",
                   line_no, snippet(kw, (size_t)(w - kw), buf, sizeof(buf)));
}

/* ---- Expressions ---------------------------------------------------------*/

enum { EV_OK, EV_SYNTAX, EV_ARITH };

typedef struct eval_s {
  const char *p, *end; /* cursor and end of the expression */
  const char *line;    /* start of its line, for columns */
  const tune_t *tune;  /* the declared knobs */
  const int *values;   /* the variant's values; NULL: check only */
  int depth;           /* current nesting */
  int skip;            /* > 0 inside an operand && or || skips */
  int error;           /* EV_* */
  char msg[SNIPPET_MAX * 2 + 160];
} eval_t;

static bool ev_or(eval_t *e, int64_t *out);

__attribute__((format(printf, 3, 4))) static bool fail(eval_t *e, int kind,
                                                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
  va_end(ap);
  e->error = kind;
  return false;
}

static size_t column(const eval_t *e) { return (size_t)(e->p - e->line) + 1; }

static void ev_blanks(eval_t *e) { e->p = skip_blanks(e->p, e->end); }

/* The token at the cursor, for messages. */
static const char *here(const eval_t *e, char *buf, size_t size) {
  if (e->p >= e->end)
    return "the end of the expression";
  const char *w = e->p;
  if (is_ident(*w))
    while (w < e->end && is_ident(*w))
      ++w;
  else
    ++w;
  char tmp[SNIPPET_MAX + 8];
  snprintf(buf, size, "'%s' at column %zu",
           snippet(e->p, (size_t)(w - e->p), tmp, sizeof(tmp)), column(e));
  return buf;
}

/* Applies a binary arithmetic operator. A failure (division by zero,
 * overflow) is an error, except while only checking or skipping, where it
 * yields 0. */
static bool arith(eval_t *e, char op, int64_t a, int64_t b, int64_t *out) {
  const char *why = NULL;
  int64_t r = 0;
  switch (op) {
  case '+':
    if (__builtin_add_overflow(a, b, &r))
      why = "overflow in '+'";
    break;
  case '-':
    if (__builtin_sub_overflow(a, b, &r))
      why = "overflow in '-'";
    break;
  case '*':
    if (__builtin_mul_overflow(a, b, &r))
      why = "overflow in '*'";
    break;
  case '/':
  case '%':
    if (b == 0)
      why = op == '/' ? "division by zero" : "modulo by zero";
    else if (a == INT64_MIN && b == -1)
      why = op == '/' ? "overflow in '/'" : "overflow in '%'";
    else
      r = op == '/' ? a / b : a % b;
    break;
  }
  if (why) {
    if (!e->values || e->skip)
      r = 0;
    else
      return fail(e, EV_ARITH, "%s (%" PRId64 " %c %" PRId64 ")", why, a, op,
                  b);
  }
  *out = r;
  return true;
}

static bool ev_primary(eval_t *e, int64_t *out) {
  char buf[SNIPPET_MAX + 64], tmp[SNIPPET_MAX + 8];
  ev_blanks(e);
  if (e->p < e->end && *e->p == '(') {
    if (++e->depth > LF_TUNE_MAX_DEPTH)
      return fail(e, EV_SYNTAX, "nested more than %d levels deep at column %zu",
                  LF_TUNE_MAX_DEPTH, column(e));
    ++e->p;
    if (!ev_or(e, out))
      return false;
    ev_blanks(e);
    if (e->p >= e->end || *e->p != ')')
      return fail(e, EV_SYNTAX, "expected ')' but found %s",
                  here(e, buf, sizeof(buf)));
    ++e->p;
    --e->depth;
    return true;
  }
  if (e->p < e->end && is_digit(*e->p)) {
    const char *start = e->p;
    int64_t v = 0;
    bool big = false;
    for (; e->p < e->end && is_digit(*e->p); ++e->p)
      if (__builtin_mul_overflow(v, 10, &v) ||
          __builtin_add_overflow(v, *e->p - '0', &v))
        big = true;
    if (big)
      return fail(e, EV_SYNTAX, "number '%s' at column %zu is too large",
                  snippet(start, (size_t)(e->p - start), tmp, sizeof(tmp)),
                  (size_t)(start - e->line) + 1);
    *out = v;
    return true;
  }
  if (e->p < e->end && is_ident_start(*e->p)) {
    const char *start = e->p;
    while (e->p < e->end && is_ident(*e->p))
      ++e->p;
    size_t n = (size_t)(e->p - start);
    for (size_t k = 0; k < e->tune->knob_count; ++k) {
      const knob_t *knob = &e->tune->knobs[k];
      if (knob->name_len == n && memcmp(knob->name, start, n) == 0) {
        *out = e->values ? e->values[k] : 1;
        return true;
      }
    }
    char names[LF_TUNE_MAX_DECLS * (LF_TUNE_MAX_NAME + 2) + 1] = "";
    for (size_t k = 0; k < e->tune->knob_count; ++k) {
      if (k)
        strcat(names, ", ");
      strcat(names, e->tune->knobs[k].name);
    }
    return fail(e, EV_SYNTAX,
                "'%s' at column %zu is not a declared knob (declared: %s)",
                snippet(start, n, tmp, sizeof(tmp)),
                (size_t)(start - e->line) + 1, names);
  }
  return fail(e, EV_SYNTAX,
              "expected a number, a knob name or '(' but found %s",
              here(e, buf, sizeof(buf)));
}

static bool ev_unary(eval_t *e, int64_t *out) {
  ev_blanks(e);
  if (e->p < e->end && *e->p == '-') {
    if (++e->depth > LF_TUNE_MAX_DEPTH)
      return fail(e, EV_SYNTAX, "nested more than %d levels deep at column %zu",
                  LF_TUNE_MAX_DEPTH, column(e));
    ++e->p;
    int64_t v;
    if (!ev_unary(e, &v))
      return false;
    --e->depth;
    return arith(e, '-', 0, v, out);
  }
  return ev_primary(e, out);
}

static bool ev_mul(eval_t *e, int64_t *out) {
  int64_t a, b;
  if (!ev_unary(e, &a))
    return false;
  for (;;) {
    ev_blanks(e);
    if (e->p >= e->end || (*e->p != '*' && *e->p != '/' && *e->p != '%'))
      break;
    char op = *e->p++;
    if (!ev_unary(e, &b) || !arith(e, op, a, b, &a))
      return false;
  }
  *out = a;
  return true;
}

static bool ev_add(eval_t *e, int64_t *out) {
  int64_t a, b;
  if (!ev_mul(e, &a))
    return false;
  for (;;) {
    ev_blanks(e);
    if (e->p >= e->end || (*e->p != '+' && *e->p != '-'))
      break;
    char op = *e->p++;
    if (!ev_mul(e, &b) || !arith(e, op, a, b, &a))
      return false;
  }
  *out = a;
  return true;
}

/* The comparison operator at the cursor: its length (0: none). */
static size_t cmp_op(const eval_t *e, char *out_op) {
  const char *p = e->p;
  size_t left = (size_t)(e->end - p);
  if (left >= 2 && p[1] == '=' &&
      (p[0] == '=' || p[0] == '!' || p[0] == '<' || p[0] == '>')) {
    *out_op = p[0] == '=' ? 'e' : p[0] == '!' ? 'n' : p[0] == '<' ? 'l' : 'g';
    return 2;
  }
  if (left >= 1 && (p[0] == '<' || p[0] == '>')) {
    *out_op = p[0];
    return 1;
  }
  return 0;
}

static bool ev_cmp(eval_t *e, int64_t *out) {
  int64_t a, b;
  char op;
  if (!ev_add(e, &a))
    return false;
  ev_blanks(e);
  size_t n = cmp_op(e, &op);
  if (!n) {
    *out = a;
    return true;
  }
  e->p += n;
  if (!ev_add(e, &b))
    return false;
  switch (op) {
  case 'e':
    *out = a == b;
    break;
  case 'n':
    *out = a != b;
    break;
  case 'l':
    *out = a <= b;
    break;
  case 'g':
    *out = a >= b;
    break;
  case '<':
    *out = a < b;
    break;
  default:
    *out = a > b;
    break;
  }
  ev_blanks(e);
  if (cmp_op(e, &op))
    return fail(e, EV_SYNTAX,
                "comparisons cannot be chained (column %zu); join them with "
                "'&&'",
                column(e));
  return true;
}

/* One level of && or ||, short-circuiting: the operand not evaluated is
 * still checked for syntax, but its arithmetic cannot fail. */
static bool ev_logic(eval_t *e, int64_t *out, char c,
                     bool (*operand)(eval_t *, int64_t *)) {
  int64_t a, b;
  if (!operand(e, &a))
    return false;
  for (;;) {
    ev_blanks(e);
    if (e->end - e->p < 2 || e->p[0] != c || e->p[1] != c)
      break;
    e->p += 2;
    bool decided = c == '&' ? a == 0 : a != 0;
    e->skip += decided;
    bool ok = operand(e, &b);
    e->skip -= decided;
    if (!ok)
      return false;
    a = c == '&' ? (a != 0 && b != 0) : (a != 0 || b != 0);
  }
  *out = a;
  return true;
}

static bool ev_and(eval_t *e, int64_t *out) {
  return ev_logic(e, out, '&', ev_cmp);
}

static bool ev_or(eval_t *e, int64_t *out) {
  return ev_logic(e, out, '|', ev_and);
}

/* Evaluates `len` bytes at `expr` (on the line starting at `line`) for the
 * variant `values` (NULL: check only). Returns EV_*; the message is in
 * `e->msg`. */
static int evaluate(eval_t *e, const tune_t *tune, const char *line,
                    const char *expr, size_t len, const int *values,
                    int64_t *out) {
  memset(e, 0, sizeof(*e));
  e->p = expr;
  e->end = expr + len;
  e->line = line;
  e->tune = tune;
  e->values = values;
  char buf[SNIPPET_MAX + 64];
  if (len > LF_TUNE_MAX_EXPR) {
    fail(e, EV_SYNTAX, "expression is %zu bytes long; at most %d", len,
         LF_TUNE_MAX_EXPR);
    return e->error;
  }
  ev_blanks(e);
  if (e->p == e->end) {
    fail(e, EV_SYNTAX, "empty expression");
    return e->error;
  }
  if (!ev_or(e, out))
    return e->error;
  ev_blanks(e);
  if (e->p < e->end) {
    const char *hint = "";
    if (*e->p == '=')
      hint = " (compare with '==')";
    else if (*e->p == '&' || *e->p == '|')
      hint = " (use '&&' or '||')";
    fail(e, EV_SYNTAX, "unexpected %s%s", here(e, buf, sizeof(buf)), hint);
  }
  return e->error;
}

/* ---- Declarations --------------------------------------------------------*/

/* Parses the rest of a `// llm-fuse.tune` line into a new knob. */
static lf_status_t parse_decl(tune_t *t, line_t l, const char *rest,
                              size_t line_no) {
  const char *end = l.text + l.len;
  char buf[SNIPPET_MAX + 8];
#define DECL_ERROR(...)                                                        \
  LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "line %zu: "                           \
                                        "llm-fuse.tune: " __VA_ARGS__)
  const char *p = skip_blanks(rest, end);
  const char *name = p;
  while (p < end && is_ident(*p))
    ++p;
  size_t n = (size_t)(p - name);
  if (n == 0)
    return DECL_ERROR("expected a knob name after 'llm-fuse.tune' (write "
                      "'// llm-fuse.tune NAME = V1, V2, ...')",
                      line_no);
  if (n > LF_TUNE_MAX_NAME)
    return DECL_ERROR("knob name '%s' is longer than %d characters", line_no,
                      snippet(name, n, buf, sizeof(buf)), LF_TUNE_MAX_NAME);
  for (size_t i = 0; i < n; ++i)
    if (!(i == 0 ? is_upper(name[i])
                 : is_upper(name[i]) || is_digit(name[i]) || name[i] == '_'))
      return DECL_ERROR("knob name '%s' must match [A-Z][A-Z0-9_]* "
                        "(upper case, e.g. BLOCK)",
                        line_no, snippet(name, n, buf, sizeof(buf)));
  for (size_t k = 0; k < t->knob_count; ++k)
    if (t->knobs[k].name_len == n && memcmp(t->knobs[k].name, name, n) == 0)
      return DECL_ERROR("knob '%.*s' declared twice (first on line %zu)",
                        line_no, (int)n, name, t->knobs[k].line);
  if (t->knob_count == LF_TUNE_MAX_DECLS)
    return DECL_ERROR("too many declarations: '%.*s' would be number %d; at "
                      "most %d",
                      line_no, (int)n, name, LF_TUNE_MAX_DECLS + 1,
                      LF_TUNE_MAX_DECLS);
  knob_t knob = {.name_len = n, .line = line_no};
  memcpy(knob.name, name, n);
  p = skip_blanks(p, end);
  if (p == end || *p != '=')
    return DECL_ERROR("expected '=' after knob name '%s' (write "
                      "'// llm-fuse.tune %s = V1, V2, ...')",
                      line_no, knob.name, knob.name);
  for (++p;;) {
    p = skip_blanks(p, end);
    const char *v = p;
    if (p < end && *p == '-')
      ++p;
    const char *digits = p;
    int64_t value = 0;
    while (p < end && is_digit(*p)) {
      if (value <= (int64_t)1 << 40)
        value = value * 10 + (*p - '0');
      ++p;
    }
    if (p == digits || (p < end && is_ident(*p))) {
      while (p < end && !is_blank(*p) && *p != ',')
        ++p;
      if (p == v)
        return DECL_ERROR("knob '%s': expected a value %s", line_no, knob.name,
                          p == end ? "at the end of the line" : "before ','");
      return DECL_ERROR("knob '%s': value '%s' is not a decimal integer",
                        line_no, knob.name,
                        snippet(v, (size_t)(p - v), buf, sizeof(buf)));
    }
    if (*v == '-')
      value = -value;
    if (value < INT32_MIN || value > INT32_MAX)
      return DECL_ERROR("knob '%s': value %s is out of range (at most "
                        "2147483647 in magnitude)",
                        line_no, knob.name,
                        snippet(v, (size_t)(p - v), buf, sizeof(buf)));
    for (size_t i = 0; i < knob.count; ++i)
      if (knob.values[i] == (int)value)
        return DECL_ERROR("knob '%s': value %d listed twice", line_no,
                          knob.name, (int)value);
    if (knob.count == LF_TUNE_MAX_VALUES)
      return DECL_ERROR("knob '%s' has more than %d values", line_no, knob.name,
                        LF_TUNE_MAX_VALUES);
    knob.values[knob.count++] = (int)value;
    p = skip_blanks(p, end);
    if (p == end)
      break;
    if (*p != ',')
      return DECL_ERROR("knob '%s': expected ',' or the end of the line but "
                        "found '%s'",
                        line_no, knob.name,
                        snippet(p, (size_t)(end - p), buf, sizeof(buf)));
    ++p;
  }
  /* Single-valued knobs are constants (a template's bound sizes): only the
   * knobs that make variants count toward LF_TUNE_MAX_KNOBS. */
  if (knob.count > 1 && t->tuned_count == LF_TUNE_MAX_KNOBS)
    return DECL_ERROR("too many knobs: '%s' would be knob %d with more than "
                      "one value; at most %d",
                      line_no, knob.name, LF_TUNE_MAX_KNOBS + 1,
                      LF_TUNE_MAX_KNOBS);
  size_t product = (t->knob_count ? t->product : 1) * knob.count;
  if (product > LF_TUNE_MAX_VARIANTS)
    return DECL_ERROR("knob '%s' makes %zu variants (the product of the "
                      "value counts); at most %d",
                      line_no, knob.name, product, LF_TUNE_MAX_VARIANTS);
#undef DECL_ERROR
  t->knobs[t->knob_count++] = knob;
  t->tuned_count += knob.count > 1;
  t->product = product;
  return LF_OK;
}

/* ---- Placeholders --------------------------------------------------------*/

/* Finds the next `{{` in `*p`..`end` (one line). Returns false when none;
 * otherwise sets the expression between the braces, or fails when no `}}`
 * follows on the line. `*p` moves past the placeholder. */
static lf_status_t next_placeholder(const char **p, const char *end,
                                    size_t line_no, bool *out_found,
                                    const char **out_start,
                                    const char **out_expr, size_t *out_len) {
  *out_found = false;
  const char *open = memmem(*p, (size_t)(end - *p), "{{", 2);
  if (!open)
    return LF_OK;
  const char *expr = open + 2;
  const char *close = memmem(expr, (size_t)(end - expr), "}}", 2);
  if (!close) {
    char buf[SNIPPET_MAX + 8];
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "line %zu: unterminated placeholder '%s': '{{' needs "
                     "'}}' on the same line",
                     line_no,
                     snippet(open, (size_t)(end - open), buf, sizeof(buf)));
  }
  *out_found = true;
  *out_start = open;
  *out_expr = expr;
  *out_len = (size_t)(close - expr);
  *p = close + 2;
  return LF_OK;
}

/* ---- The set -------------------------------------------------------------*/

void lf_tune_set_destroy(lf_tune_set_t *set) {
  if (!set)
    return;
  for (size_t i = 0; i < set->count; ++i) {
    free(set->variants[i].text);
    free(set->variants[i].label);
  }
  free(set->variants);
  free(set);
}

static lf_status_t oom(void) {
  return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

/* The single variant of a text without declarations: a copy. */
static lf_status_t passthrough(const char *text, size_t len,
                               lf_tune_set_t *set) {
  set->variants = calloc(1, sizeof(*set->variants));
  if (!set->variants)
    return oom();
  set->count = 1;
  set->variants[0].text = malloc(len + 1);
  set->variants[0].label = strdup("");
  if (!set->variants[0].text || !set->variants[0].label)
    return oom();
  if (len)
    memcpy(set->variants[0].text, text, len);
  set->variants[0].text[len] = '\0';
  return LF_OK;
}

/* Where the first `{{` outside directive lines is: its line (0: none) and
 * the rest of that line. */
typedef struct brace_s {
  size_t line;
  const char *at;
  size_t len;
} brace_t;

/* First pass: declarations, requirement lines, and the first `{{`. */
static lf_status_t scan_declarations(tune_t *t, const char *text, size_t len,
                                     brace_t *out_brace) {
  const char *p = text, *end = text + len;
  line_t l;
  out_brace->line = 0;
  out_brace->at = NULL;
  out_brace->len = 0;
  for (size_t line_no = 1; next_line(&p, end, &l); ++line_no) {
    line_kind_t kind;
    const char *rest = NULL;
    size_t indent;
    LF_RETURN_IF_ERROR(classify(l, line_no, &kind, &rest, &indent));
    if (kind == LINE_DECL) {
      LF_RETURN_IF_ERROR(parse_decl(t, l, rest, line_no));
    } else if (kind == LINE_REQUIRE) {
      if (t->require_count == LF_TUNE_MAX_REQUIRES)
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "line %zu: llm-fuse.tune-require: more than %d "
                         "requirement lines; join conditions with '&&'",
                         line_no, LF_TUNE_MAX_REQUIRES);
      require_t *r = &t->requires[t->require_count++];
      r->line_start = l.text;
      r->expr = skip_blanks(rest, l.text + l.len);
      r->len = (size_t)(l.text + l.len - r->expr);
      r->line = line_no;
    } else if (!out_brace->line) {
      const char *at = memmem(l.text, l.len, "{{", 2);
      if (at) {
        out_brace->line = line_no;
        out_brace->at = at;
        out_brace->len = (size_t)(l.text + l.len - at);
      }
    }
  }
  return LF_OK;
}

/* Second pass: every requirement and placeholder parses and names only
 * declared knobs. */
static lf_status_t check_expressions(const tune_t *t, const char *text,
                                     size_t len) {
  eval_t e;
  int64_t v;
  char buf[SNIPPET_MAX + 8];
  for (size_t i = 0; i < t->require_count; ++i) {
    const require_t *r = &t->requires[i];
    if (evaluate(&e, t, r->line_start, r->expr, r->len, NULL, &v))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "line %zu: llm-fuse.tune-require: %s", r->line, e.msg);
  }
  const char *p = text, *end = text + len;
  line_t l;
  for (size_t line_no = 1; next_line(&p, end, &l); ++line_no) {
    line_kind_t kind;
    const char *rest = NULL;
    size_t indent;
    LF_RETURN_IF_ERROR(classify(l, line_no, &kind, &rest, &indent));
    if (kind != LINE_PLAIN)
      continue;
    const char *q = l.text, *lend = l.text + l.len;
    for (;;) {
      bool found;
      const char *open, *expr;
      size_t n;
      LF_RETURN_IF_ERROR(
          next_placeholder(&q, lend, line_no, &found, &open, &expr, &n));
      if (!found)
        break;
      if (evaluate(&e, t, l.text, expr, n, NULL, &v))
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "line %zu: placeholder '{{%s}}': %s", line_no,
                         snippet(expr, n, buf, sizeof(buf)), e.msg);
    }
  }
  return LF_OK;
}

/* The values of combination `index` (the last knob varies fastest). */
static void combination(const tune_t *t, size_t index, int *values) {
  for (size_t k = t->knob_count; k-- > 0;) {
    const knob_t *knob = &t->knobs[k];
    values[k] = knob->values[index % knob->count];
    index /= knob->count;
  }
}

/* True when every requirement holds for `values`; arithmetic that fails
 * (division by zero, overflow) makes a requirement false. */
static bool admitted(const tune_t *t, const int *values) {
  eval_t e;
  int64_t v;
  for (size_t i = 0; i < t->require_count; ++i) {
    const require_t *r = &t->requires[i];
    if (evaluate(&e, t, r->line_start, r->expr, r->len, values, &v) || v == 0)
      return false;
  }
  return true;
}

static lf_status_t make_label(const tune_t *t, const int *values, char **out) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 4096);
  lf_status_t s = LF_OK;
  for (size_t k = 0; k < t->knob_count && !s; ++k)
    s = lf_strbuf_appendf(&b, "%s%s=%d", k ? " " : "", t->knobs[k].name,
                          values[k]);
  if (!s && !(*out = lf_strbuf_take(&b)))
    s = oom();
  lf_strbuf_free(&b);
  return s;
}

/* Writes the text of one variant. */
static lf_status_t instantiate(const tune_t *t, const char *text, size_t len,
                               const int *values, const char *label,
                               char **out) {
  eval_t e;
  char buf[SNIPPET_MAX + 8];
  lf_strbuf_t b;
  /* A placeholder is at least 5 bytes and becomes at most 20; a
   * declaration line is at least 19 and becomes at most its indent + 64. */
  lf_strbuf_init(&b, len / 5 * 20 + len + 4096);
  lf_status_t s = LF_OK;
  const char *p = text, *end = text + len;
  line_t l;
  for (size_t line_no = 1; !s && next_line(&p, end, &l); ++line_no) {
    line_kind_t kind;
    const char *rest = NULL;
    size_t indent;
    s = classify(l, line_no, &kind, &rest, &indent);
    if (s)
      break;
    if (kind == LINE_DECL) {
      /* Declarations are numbered in line order. */
      size_t k = 0;
      while (t->knobs[k].line != line_no)
        ++k;
      s = lf_strbuf_append(&b, l.text, indent);
      if (!s)
        s = lf_strbuf_appendf(&b, "// llm-fuse.tuned %s = %d", t->knobs[k].name,
                              values[k]);
    } else if (kind == LINE_REQUIRE) {
      s = lf_strbuf_append(&b, l.text, indent);
      if (!s) {
        const char *expr = skip_blanks(rest, l.text + l.len);
        s = lf_strbuf_appendf(&b, "// llm-fuse.tuned-require %.*s",
                              (int)(l.text + l.len - expr), expr);
      }
    } else {
      const char *q = l.text, *lend = l.text + l.len;
      while (!s) {
        bool found;
        const char *open, *expr;
        size_t n;
        int64_t v;
        const char *from = q;
        s = next_placeholder(&q, lend, line_no, &found, &open, &expr, &n);
        if (s)
          break;
        if (!found) {
          s = lf_strbuf_append(&b, from, (size_t)(lend - from));
          break;
        }
        s = lf_strbuf_append(&b, from, (size_t)(open - from));
        if (s)
          break;
        if (evaluate(&e, t, l.text, expr, n, values, &v)) {
          s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                        "line %zu: placeholder '{{%s}}': %s for variant %s; "
                        "exclude that variant with a llm-fuse.tune-require "
                        "line or change the expression",
                        line_no, snippet(expr, n, buf, sizeof(buf)), e.msg,
                        label);
          break;
        }
        s = lf_strbuf_appendf(&b, "%" PRId64, v);
      }
    }
    if (!s)
      s = lf_strbuf_append(&b, l.term, l.term_len);
  }
  if (!s && !(*out = lf_strbuf_take(&b)))
    s = oom();
  lf_strbuf_free(&b);
  return s;
}

lf_status_t lf_tune_expand(const char *text, size_t len, lf_tune_set_t **out) {
  if (!out)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "out is required");
  *out = NULL;
  if (!text && len)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "text is NULL");
  if (!text)
    text = "";
  const char *nul = memchr(text, '\0', len);
  if (nul) {
    size_t line_no = 1;
    for (const char *c = text; c < nul; ++c)
      line_no += *c == '\n';
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "line %zu: the text contains a NUL byte", line_no);
  }

  tune_t *t = calloc(1, sizeof(*t));
  lf_tune_set_t *set = calloc(1, sizeof(*set));
  lf_status_t s = LF_OK;
  if (!t || !set) {
    s = oom();
    goto out_free;
  }
  brace_t brace;
  s = scan_declarations(t, text, len, &brace);
  if (s)
    goto out_free;
  if (t->knob_count == 0) {
    if (t->require_count) {
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                    "line %zu: llm-fuse.tune-require without any "
                    "'// llm-fuse.tune NAME = V1, V2, ...' declaration",
                    t->requires[0].line);
    } else if (brace.line) {
      /* Show the placeholder up to its `}}`, if it has one. */
      const char *close = memmem(brace.at + 2, brace.len - 2, "}}", 2);
      size_t n = close ? (size_t)(close + 2 - brace.at) : brace.len;
      char buf[SNIPPET_MAX + 8];
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                    "line %zu: placeholder '%s' without any "
                    "'// llm-fuse.tune NAME = V1, V2, ...' declaration; "
                    "declare its knob or remove the braces",
                    brace.line, snippet(brace.at, n, buf, sizeof(buf)));
    } else {
      s = passthrough(text, len, set);
    }
    goto out_free;
  }
  s = check_expressions(t, text, len);
  if (s)
    goto out_free;

  set->tuned = true;
  set->knob_count = t->knob_count;
  for (size_t k = 0; k < t->knob_count; ++k)
    memcpy(set->knobs[k], t->knobs[k].name, sizeof(set->knobs[k]));
  set->variants = calloc(t->product, sizeof(*set->variants));
  if (!set->variants) {
    s = oom();
    goto out_free;
  }
  for (size_t i = 0; i < t->product; ++i) {
    int values[LF_TUNE_MAX_DECLS] = {0};
    combination(t, i, values);
    if (!admitted(t, values)) {
      ++set->excluded;
      continue;
    }
    lf_tune_variant_t *v = &set->variants[set->count++];
    memcpy(v->values, values, sizeof(values));
    s = make_label(t, values, &v->label);
    if (!s)
      s = instantiate(t, text, len, values, v->label, &v->text);
    if (s)
      goto out_free;
  }
  if (set->count == 0) {
    char lines[LF_TUNE_MAX_REQUIRES * 24] = "";
    for (size_t i = 0; i < t->require_count; ++i)
      snprintf(lines + strlen(lines), sizeof(lines) - strlen(lines), "%s%zu",
               i ? ", " : "", t->requires[i].line);
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "line %zu: llm-fuse.tune-require: every one of the %zu "
                  "variants is excluded (requirements on line%s %s); relax "
                  "them or change the values",
                  t->requires[0].line, t->product,
                  t->require_count > 1 ? "s" : "", lines);
  }

out_free:
  if (s) {
    lf_tune_set_destroy(set);
    set = NULL;
  }
  free(t);
  *out = set;
  return s;
}
