/* strbuf.c - size-capped growable buffer. */
#include "base/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_ALLOC 64

void lf_strbuf_init(lf_strbuf_t *buf, size_t cap) {
  buf->data = NULL;
  buf->len = 0;
  buf->alloc = 0;
  buf->cap = cap;
}

void lf_strbuf_free(lf_strbuf_t *buf) {
  if (!buf)
    return;
  free(buf->data);
  buf->data = NULL;
  buf->len = 0;
  buf->alloc = 0;
}

void lf_strbuf_reset(lf_strbuf_t *buf) {
  buf->len = 0;
  if (buf->data)
    buf->data[0] = '\0';
}

/* Makes room for `extra` more bytes plus the NUL, within the cap. */
static lf_status_t reserve(lf_strbuf_t *buf, size_t extra) {
  if (extra > buf->cap || buf->len > buf->cap - extra)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                     "buffer cap of %zu bytes reached (have %zu, adding %zu)",
                     buf->cap, buf->len, extra);
  size_t need = buf->len + extra + 1;
  if (need <= buf->alloc)
    return LF_OK;
  size_t grow = buf->alloc ? buf->alloc : MIN_ALLOC;
  while (grow < need)
    grow = grow > SIZE_MAX / 2 ? need : grow * 2;
  /* Never allocate far beyond what the cap can ever use. */
  if (grow > buf->cap + 1)
    grow = buf->cap + 1;
  char *p = realloc(buf->data, grow);
  if (!p)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                     "out of memory growing a buffer to %zu bytes", grow);
  buf->data = p;
  buf->alloc = grow;
  return LF_OK;
}

lf_status_t lf_strbuf_append(lf_strbuf_t *buf, const void *mem, size_t n) {
  LF_RETURN_IF_ERROR(reserve(buf, n));
  if (n)
    memcpy(buf->data + buf->len, mem, n);
  buf->len += n;
  buf->data[buf->len] = '\0';
  return LF_OK;
}

lf_status_t lf_strbuf_append_str(lf_strbuf_t *buf, const char *str) {
  return lf_strbuf_append(buf, str, strlen(str));
}

lf_status_t lf_strbuf_appendfv(lf_strbuf_t *buf, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "bad format string");
  LF_RETURN_IF_ERROR(reserve(buf, (size_t)n));
  vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, ap);
  buf->len += (size_t)n;
  return LF_OK;
}

lf_status_t lf_strbuf_appendf(lf_strbuf_t *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lf_status_t s = lf_strbuf_appendfv(buf, fmt, ap);
  va_end(ap);
  return s;
}

void lf_strbuf_truncate(lf_strbuf_t *buf, size_t len) {
  if (len >= buf->len)
    return;
  buf->len = len;
  buf->data[len] = '\0';
}

const char *lf_strbuf_cstr(const lf_strbuf_t *buf) {
  return buf->data ? buf->data : "";
}

char *lf_strbuf_take(lf_strbuf_t *buf) {
  char *out = buf->data;
  if (!out)
    out = calloc(1, 1);
  buf->data = NULL;
  buf->len = 0;
  buf->alloc = 0;
  return out;
}
