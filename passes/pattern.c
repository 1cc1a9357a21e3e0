/* pattern.c - the pattern key: the canonical text with sizes abstracted
 * (pattern.h, docs/pattern-key.md). */
#include "passes/pattern.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Constants this small are not taken for sizes (2.0 in a GELU is math). */
#define MIN_SIZE_CONSTANT 8

static long find_size(const lf_pattern_t *p, int64_t v) {
  for (size_t i = 0; i < p->num_sizes; ++i)
    if (p->sizes[i] == v)
      return (long)i;
  return -1;
}

static lf_status_t bind_size(lf_pattern_t *p, int64_t v, long *out) {
  long k = find_size(p, v);
  if (k < 0) {
    if (p->num_sizes == LF_PATTERN_MAX_SIZES)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                       "more than %d distinct sizes in one subgraph",
                       LF_PATTERN_MAX_SIZES);
    k = (long)p->num_sizes;
    p->sizes[p->num_sizes++] = v;
  }
  *out = k;
  return LF_OK;
}

/* First pass: bind the dimensions of every tensor type, in order. */
static lf_status_t bind_tensor_dims(const char *s, size_t n, lf_pattern_t *p) {
  for (size_t i = 0; i + 7 < n; ++i) {
    if (memcmp(s + i, "tensor<", 7) != 0)
      continue;
    size_t j = i + 7;
    while (j < n && isdigit((unsigned char)s[j])) {
      int64_t v = 0;
      while (j < n && isdigit((unsigned char)s[j]))
        v = v * 10 + (s[j++] - '0');
      if (j < n && s[j] == 'x') {
        ++j;
        long k;
        if (v > 1)
          LF_RETURN_IF_ERROR(bind_size(p, v, &k));
      } else {
        break;
      }
    }
    i = j;
  }
  return LF_OK;
}

/* A float constant that is the f32 reciprocal of a bound size of at least
 * MIN_SIZE_CONSTANT (a mean's 1/N once a TOSA reciprocal is folded): its
 * symbol, else -1. */
static long find_reciprocal(const lf_pattern_t *p, double v) {
  if (!(v > 0.0) || v > 1.0 / MIN_SIZE_CONSTANT)
    return -1;
  for (size_t i = 0; i < p->num_sizes; ++i)
    if (p->sizes[i] >= MIN_SIZE_CONSTANT &&
        (float)v == 1.0f / (float)p->sizes[i])
      return (long)i;
  return -1;
}

static lf_status_t put_reciprocal(lf_strbuf_t *b, long k) {
  return lf_strbuf_appendf(b, "1/S%ld", k);
}

static lf_status_t put_symbol(lf_strbuf_t *b, long k) {
  return lf_strbuf_appendf(b, "S%ld", k);
}

/* A number token at s[i..): an integer or a float literal as the printer
 * writes them. Returns its length (0: none) and its value. */
static size_t number_at(const char *s, size_t n, size_t i, double *out) {
  if (i >= n || !(isdigit((unsigned char)s[i]) || s[i] == '-'))
    return 0;
  char buf[64];
  size_t m = 0;
  while (i + m < n && m + 1 < sizeof(buf) &&
         (isalnum((unsigned char)s[i + m]) || s[i + m] == '.' ||
          s[i + m] == '-' || s[i + m] == '+'))
    buf[m] = s[i + m], ++m;
  buf[m] = '\0';
  if (!m || (m > 1 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')))
    return 0; /* none, or a hex float's bits */
  char *end = NULL;
  double v = strtod(buf, &end);
  if (end == buf)
    return 0;
  *out = v;
  return (size_t)(end - buf);
}

lf_status_t lf_pattern_compute(const char *s, size_t n, lf_pattern_t *p,
                               lf_strbuf_t *abstract_out) {
  memset(p, 0, sizeof(*p));
  LF_RETURN_IF_ERROR(bind_tensor_dims(s, n, p));
  lf_strbuf_t b;
  lf_strbuf_init(&b, n + 4096);
  lf_status_t st = lf_strbuf_append_str(&b, "llm-fuse-pattern/1\n");
  size_t i = 0;
  while (!st && i < n) {
    if (i + 7 <= n && memcmp(s + i, "tensor<", 7) == 0) {
      /* tensor<AxBxT>: each dimension > 1 becomes its symbol */
      st = lf_strbuf_append(&b, "tensor<", 7);
      i += 7;
      while (!st && i < n && isdigit((unsigned char)s[i])) {
        size_t j = i;
        int64_t v = 0;
        while (j < n && isdigit((unsigned char)s[j]))
          v = v * 10 + (s[j++] - '0');
        if (j >= n || s[j] != 'x')
          break; /* not a dimension: an element type such as i64 */
        long k = v > 1 ? find_size(p, v) : -1;
        st = k >= 0 ? put_symbol(&b, k) : lf_strbuf_append(&b, s + i, j - i);
        if (!st)
          st = lf_strbuf_append(&b, "x", 1);
        i = j + 1;
      }
      continue;
    }
    if (i + 11 <= n && memcmp(s + i, "array<i64: ", 11) == 0) {
      /* integer arrays (shapes of reshapes, slices): sizes -> symbols */
      st = lf_strbuf_append(&b, s + i, 11);
      i += 11;
      while (!st && i < n && s[i] != '>') {
        double v;
        size_t len = number_at(s, n, i, &v);
        long k = len && v >= MIN_SIZE_CONSTANT && v == floor(v)
                     ? find_size(p, (int64_t)v)
                     : -1;
        if (k >= 0) {
          st = put_symbol(&b, k);
          i += len;
        } else {
          st = lf_strbuf_append(&b, s + i, 1);
          ++i;
        }
      }
      continue;
    }
    if (i + 6 <= n && memcmp(s + i, "dense<", 6) == 0) {
      /* dense elements (a TOSA shape's dense<[1, 4096]>, a splat
       * dense<4.096000e+03> of a mean's divisor): each number equal to a
       * size -> its symbol, as in integer arrays */
      st = lf_strbuf_append(&b, s + i, 6);
      i += 6;
      while (!st && i < n && s[i] != '>') {
        double v;
        size_t len = (s[i - 1] == '<' || s[i - 1] == '[' || s[i - 1] == ' ')
                         ? number_at(s, n, i, &v)
                         : 0;
        long k = len && v >= MIN_SIZE_CONSTANT && v == floor(v) &&
                         fabs(v) < 9.0e15
                     ? find_size(p, (int64_t)v)
                     : -1;
        long r = len && k < 0 ? find_reciprocal(p, v) : -1;
        if (k >= 0 || r >= 0) {
          st = k >= 0 ? put_symbol(&b, k) : put_reciprocal(&b, r);
          i += len;
        } else {
          st = lf_strbuf_append(&b, s + i, 1);
          ++i;
        }
      }
      continue;
    }
    if (i + 8 <= n && memcmp(s + i, "value = ", 8) == 0) {
      /* a constant equal to a size (a mean's divisor) -> its symbol */
      st = lf_strbuf_append(&b, s + i, 8);
      i += 8;
      double v;
      size_t len = number_at(s, n, i, &v);
      long k =
          len && v >= MIN_SIZE_CONSTANT && v == floor(v) && fabs(v) < 9.0e15
              ? find_size(p, (int64_t)v)
              : -1;
      long r = len && k < 0 ? find_reciprocal(p, v) : -1;
      if (!st && (k >= 0 || r >= 0)) {
        st = k >= 0 ? put_symbol(&b, k) : put_reciprocal(&b, r);
        i += len;
      }
      continue;
    }
    st = lf_strbuf_append(&b, s + i, 1);
    ++i;
  }
  if (!st)
    st = lf_sha256_hex(lf_strbuf_cstr(&b), lf_strbuf_len(&b), p->key);
  if (!st && abstract_out)
    st = lf_strbuf_append(abstract_out, lf_strbuf_cstr(&b), lf_strbuf_len(&b));
  lf_strbuf_free(&b);
  return st;
}
