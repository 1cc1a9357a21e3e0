/* strbuf.h - a growable byte/string buffer with a hard size cap.
 *
 * Every buffer that holds data from outside (an LLM reply, a diagnostic, a
 * file) has a cap so hostile input cannot make us allocate without bound.
 * The contents are always NUL-terminated, so the buffer doubles as a C
 * string. A failed append (cap reached, or out of memory) leaves the buffer
 * exactly as it was. Modelled on curl's dynbuf.
 */
#ifndef LF_BASE_STRBUF_H
#define LF_BASE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lf_strbuf_s {
  char *data;   /* owned; NULL until the first append */
  size_t len;   /* bytes in use, not counting the NUL */
  size_t alloc; /* bytes allocated */
  size_t cap;   /* the most `len` may ever reach */
} lf_strbuf_t;

/// Initializes an empty buffer whose length may never exceed `cap` bytes.
/// Allocates nothing.
void lf_strbuf_init(lf_strbuf_t *buf, size_t cap);

/// Frees the storage and returns the buffer to the empty state (the cap is
/// kept). Accepts NULL.
void lf_strbuf_free(lf_strbuf_t *buf);

/// Empties the buffer, keeping its storage.
void lf_strbuf_reset(lf_strbuf_t *buf);

/// Appends `n` bytes. Fails with RESOURCE_EXHAUSTED when the result would
/// exceed the cap (nothing is appended then).
lf_status_t lf_strbuf_append(lf_strbuf_t *buf, const void *mem, size_t n);

/// Appends a NUL-terminated string.
lf_status_t lf_strbuf_append_str(lf_strbuf_t *buf, const char *str);

/// Appends printf-style output; all or nothing.
lf_status_t lf_strbuf_appendf(lf_strbuf_t *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// va_list form of lf_strbuf_appendf().
lf_status_t lf_strbuf_appendfv(lf_strbuf_t *buf, const char *fmt, va_list ap);

/// Shortens the contents to `len` bytes (no-op if already shorter).
void lf_strbuf_truncate(lf_strbuf_t *buf, size_t len);

/// The contents as a C string, borrowed; "" when empty. Valid until the next
/// call that modifies the buffer.
const char *lf_strbuf_cstr(const lf_strbuf_t *buf);

/// Number of bytes held.
static inline size_t lf_strbuf_len(const lf_strbuf_t *buf) { return buf->len; }

/// Hands the contents to the caller (free() them) and leaves the buffer
/// empty. Never NULL: an empty buffer yields a fresh "" (NULL only if memory
/// is exhausted).
char *lf_strbuf_take(lf_strbuf_t *buf);

#ifdef __cplusplus
}
#endif

#endif /* LF_BASE_STRBUF_H */
