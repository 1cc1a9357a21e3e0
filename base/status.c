/* status.c - the status type: allocation, annotation, formatting. */
#include "base/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lf_status_s {
  lf_status_code_t code;
  int line;
  const char *file; /* a __FILE__ literal: static storage */
  char *message;    /* owned; NULL only for the out-of-memory status */
};

static struct lf_status_s oom_status = {
    LF_STATUS_RESOURCE_EXHAUSTED, __LINE__, __FILE__, NULL};

static const char *const code_names[LF_STATUS_CODE_COUNT_] = {
    [LF_STATUS_OK] = "OK",
    [LF_STATUS_CANCELLED] = "CANCELLED",
    [LF_STATUS_UNKNOWN] = "UNKNOWN",
    [LF_STATUS_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [LF_STATUS_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
    [LF_STATUS_NOT_FOUND] = "NOT_FOUND",
    [LF_STATUS_ALREADY_EXISTS] = "ALREADY_EXISTS",
    [LF_STATUS_PERMISSION_DENIED] = "PERMISSION_DENIED",
    [LF_STATUS_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
    [LF_STATUS_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
    [LF_STATUS_ABORTED] = "ABORTED",
    [LF_STATUS_OUT_OF_RANGE] = "OUT_OF_RANGE",
    [LF_STATUS_UNIMPLEMENTED] = "UNIMPLEMENTED",
    [LF_STATUS_INTERNAL] = "INTERNAL",
    [LF_STATUS_UNAVAILABLE] = "UNAVAILABLE",
    [LF_STATUS_DATA_LOSS] = "DATA_LOSS",
};

const char *lf_status_code_name(lf_status_code_t code) {
  if ((unsigned)code >= LF_STATUS_CODE_COUNT_)
    return "UNKNOWN_CODE";
  return code_names[code];
}

/* vasprintf without the GNU extension: measure, then print. */
static char *vformat(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0)
    return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s)
    return NULL;
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

lf_status_t lf_status_makev(lf_status_code_t code, const char *file, int line,
                            const char *fmt, va_list ap) {
  /* An OK code would make a non-NULL "OK" status, which breaks the NULL == OK
   * rule; treat it as a programming error and report it as INTERNAL. */
  if (code == LF_STATUS_OK || (unsigned)code >= LF_STATUS_CODE_COUNT_)
    code = LF_STATUS_INTERNAL;
  struct lf_status_s *s = malloc(sizeof(*s));
  if (!s)
    return &oom_status;
  s->message = vformat(fmt ? fmt : "", ap);
  if (!s->message) {
    free(s);
    return &oom_status;
  }
  s->code = code;
  s->file = file ? file : "";
  s->line = line;
  return s;
}

lf_status_t lf_status_make(lf_status_code_t code, const char *file, int line,
                           const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lf_status_t s = lf_status_makev(code, file, line, fmt, ap);
  va_end(ap);
  return s;
}

void lf_status_free(lf_status_t status) {
  if (!status || status == &oom_status)
    return;
  free(status->message);
  free(status);
}

lf_status_code_t lf_status_code(lf_status_t status) {
  return status ? status->code : LF_STATUS_OK;
}

const char *lf_status_message(lf_status_t status) {
  if (!status)
    return "";
  return status->message ? status->message : "out of memory";
}

const char *lf_status_file(lf_status_t status) {
  return status ? status->file : "";
}

int lf_status_line(lf_status_t status) { return status ? status->line : 0; }

lf_status_t lf_status_annotate(lf_status_t status, const char *fmt, ...) {
  if (!status || status == &oom_status)
    return status;
  va_list ap;
  va_start(ap, fmt);
  char *context = vformat(fmt, ap);
  va_end(ap);
  if (!context)
    goto out_oom;
  size_t n = strlen(context) + 2 + strlen(status->message) + 1;
  char *joined = malloc(n);
  if (!joined)
    goto out_free_context;
  snprintf(joined, n, "%s: %s", context, status->message);
  free(context);
  free(status->message);
  status->message = joined;
  return status;

out_free_context:
  free(context);
out_oom:
  lf_status_free(status);
  return &oom_status;
}

char *lf_status_format(lf_status_t status, char *buf, size_t size) {
  if (!buf || size == 0)
    return buf;
  if (!status) {
    snprintf(buf, size, "OK");
    return buf;
  }
  snprintf(buf, size, "%s: %s (%s:%d)", lf_status_code_name(status->code),
           lf_status_message(status), status->file, status->line);
  return buf;
}
