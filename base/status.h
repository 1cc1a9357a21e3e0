/* status.h - the one error type of llm-fuse's C code.
 *
 * A status is a pointer: NULL means OK, anything else is a heap object that
 * carries a code, a message and the file:line where it was made. Whoever
 * receives a non-NULL status owns it and must either return it upward or
 * release it with lf_status_free(). Modelled on IREE's iree_status_t.
 */
#ifndef LF_BASE_STATUS_H
#define LF_BASE_STATUS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Error codes. OK is zero; the rest follow the usual canonical set.
typedef enum lf_status_code_e {
  LF_STATUS_OK = 0,
  LF_STATUS_CANCELLED,
  LF_STATUS_UNKNOWN,
  LF_STATUS_INVALID_ARGUMENT,
  LF_STATUS_DEADLINE_EXCEEDED,
  LF_STATUS_NOT_FOUND,
  LF_STATUS_ALREADY_EXISTS,
  LF_STATUS_PERMISSION_DENIED,
  LF_STATUS_RESOURCE_EXHAUSTED,
  LF_STATUS_FAILED_PRECONDITION,
  LF_STATUS_ABORTED,
  LF_STATUS_OUT_OF_RANGE,
  LF_STATUS_UNIMPLEMENTED,
  LF_STATUS_INTERNAL,
  LF_STATUS_UNAVAILABLE,
  LF_STATUS_DATA_LOSS,
  LF_STATUS_CODE_COUNT_ /* not a code */
} lf_status_code_t;

/// Opaque status object; NULL is OK.
typedef struct lf_status_s *lf_status_t;

#define LF_OK ((lf_status_t)NULL)

/// Makes a status with `code` (must not be LF_STATUS_OK) and a printf-style
/// message. Never returns NULL: if memory runs out, a shared static
/// "out of memory" status is returned, which lf_status_free() ignores.
lf_status_t lf_status_make(lf_status_code_t code, const char *file, int line,
                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/// va_list form of lf_status_make().
lf_status_t lf_status_makev(lf_status_code_t code, const char *file, int line,
                            const char *fmt, va_list ap);

/// Makes a status at the call site: LF_STATUS(LF_STATUS_NOT_FOUND, "x %d", 1).
#define LF_STATUS(code, ...) lf_status_make((code), __FILE__, __LINE__, __VA_ARGS__)

/// Returns from the enclosing function when `expr` yields a non-OK status.
/// Use before resources are taken; afterwards use a goto cleanup chain.
#define LF_RETURN_IF_ERROR(expr)                                               \
  do {                                                                         \
    lf_status_t lf_status_tmp_ = (expr);                                       \
    if (lf_status_tmp_)                                                        \
      return lf_status_tmp_;                                                   \
  } while (0)

/// Releases a status. Accepts NULL and the static out-of-memory status.
void lf_status_free(lf_status_t status);

/// True when `status` is OK (NULL).
static inline bool lf_status_is_ok(lf_status_t status) { return !status; }

/// The code of `status`; LF_STATUS_OK for NULL.
lf_status_code_t lf_status_code(lf_status_t status);

/// The message of `status`, borrowed; "" for NULL.
const char *lf_status_message(lf_status_t status);

/// The source file that made `status`, borrowed; "" for NULL.
const char *lf_status_file(lf_status_t status);

/// The source line that made `status`; 0 for NULL.
int lf_status_line(lf_status_t status);

/// Canonical upper-case name of a code ("INVALID_ARGUMENT"); "UNKNOWN_CODE"
/// for values out of range.
const char *lf_status_code_name(lf_status_code_t code);

/// Prefixes the message of `status` with "<context>: ", keeping the code and
/// origin. Takes ownership of `status` and returns it (or the static
/// out-of-memory status). NULL in, NULL out.
lf_status_t lf_status_annotate(lf_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// Formats `status` as "CODE: message (file:line)" into `buf` (always
/// NUL-terminated, truncated to `size`). Returns `buf`. NULL formats as "OK".
char *lf_status_format(lf_status_t status, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* LF_BASE_STATUS_H */
