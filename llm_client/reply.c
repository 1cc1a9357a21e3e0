/* reply.c - fenced-block scanning and gpu.module counting for replies. */
#include "llm_client/reply.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define GPU_MODULE "gpu.module"
#define GPU_MODULE_LEN (sizeof(GPU_MODULE) - 1)

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* True when the `gpu.module` at `p` is an op: first on its line (or right
 * after a brace) and followed by a symbol name. */
static bool at_op_position(const char *text, const char *p, const char *end) {
  const char *b = p;
  while (b > text && (b[-1] == ' ' || b[-1] == '\t'))
    --b;
  if (b > text && b[-1] != '\n' && b[-1] != '{' && b[-1] != '}')
    return false;
  const char *a = p + GPU_MODULE_LEN;
  while (a < end && (*a == ' ' || *a == '\t'))
    ++a;
  return a < end && *a == '@';
}

size_t lf_reply_count_gpu_modules(const char *text, size_t len) {
  size_t count = 0;
  if (!text)
    return 0;
  const char *end = text + len;
  for (const char *p = text; (size_t)(end - p) >= GPU_MODULE_LEN;) {
    const char *hit = memmem(p, (size_t)(end - p), GPU_MODULE, GPU_MODULE_LEN);
    if (!hit)
      break;
    if (at_op_position(text, hit, end))
      ++count;
    p = hit + GPU_MODULE_LEN;
  }
  return count;
}

/* A line without its terminator ("\n" or "\r\n"). */
typedef struct line_s {
  const char *text;
  size_t len;
} line_t;

/* An opening fence: up to 3 spaces, then 3+ backticks or tildes; a
 * backtick fence's info string may not contain a backtick. */
static bool fence_open(line_t line, char *out_char, size_t *out_run) {
  size_t i = 0;
  while (i < line.len && i < 3 && line.text[i] == ' ')
    ++i;
  if (i >= line.len || (line.text[i] != '`' && line.text[i] != '~'))
    return false;
  char c = line.text[i];
  size_t run = 0;
  while (i + run < line.len && line.text[i + run] == c)
    ++run;
  if (run < 3)
    return false;
  if (c == '`' && memchr(line.text + i + run, '`', line.len - i - run))
    return false;
  *out_char = c;
  *out_run = run;
  return true;
}

/* A closing fence: up to 3 spaces, a run of `c` at least `min_run` long,
 * then only blanks. */
static bool fence_close(line_t line, char c, size_t min_run) {
  size_t i = 0;
  while (i < line.len && i < 3 && line.text[i] == ' ')
    ++i;
  size_t run = 0;
  while (i + run < line.len && line.text[i + run] == c)
    ++run;
  if (run < min_run)
    return false;
  for (i += run; i < line.len; ++i)
    if (!is_blank(line.text[i]))
      return false;
  return true;
}

static lf_status_t copy_out(const char *text, size_t len, char **out_text) {
  char *copy = malloc(len + 1);
  if (!copy)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  memcpy(copy, text, len);
  copy[len] = '\0';
  *out_text = copy;
  return LF_OK;
}

static bool starts_with(const char *p, const char *end, const char *prefix) {
  size_t n = strlen(prefix);
  return (size_t)(end - p) >= n && memcmp(p, prefix, n) == 0;
}

/* A reply without fences: accepted when it is only MLIR with one module. */
static lf_status_t extract_bare(const char *reply, size_t len, char **out_text,
                                size_t *out_line_offset) {
  size_t count = lf_reply_count_gpu_modules(reply, len);
  if (count == 0)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     len == 0 ? "reply has no gpu.module (the reply is empty)"
                              : "reply has no gpu.module");
  if (count > 1)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "reply has %zu gpu.module ops; exactly one is required",
                     count);
  const char *end = reply + len;
  const char *start = reply; /* first non-blank line */
  size_t skipped = 0;
  for (const char *p = reply; p < end; ++p) {
    if (*p == '\n') {
      ++skipped;
      start = p + 1;
    } else if (!is_blank(*p)) {
      break;
    }
  }
  const char *first = start;
  while (first < end && is_blank(*first))
    ++first;
  const char *last = end;
  while (last > first && (is_blank(last[-1]) || last[-1] == '\n'))
    --last;
  bool mlir_only =
      (starts_with(first, end, GPU_MODULE) ||
       starts_with(first, end, "module") || starts_with(first, end, "//")) &&
      last > first && last[-1] == '}';
  if (!mlir_only)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "reply has a gpu.module outside any fenced code block, "
                     "mixed with prose; put the kernel in one fenced block");
  LF_RETURN_IF_ERROR(copy_out(start, (size_t)(end - start), out_text));
  *out_line_offset = skipped;
  return LF_OK;
}

lf_status_t lf_reply_extract_gpu_module(const char *reply, size_t len,
                                        char **out_text,
                                        size_t *out_line_offset) {
  if (!out_text || !out_line_offset)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "out_text and out_line_offset are required");
  *out_text = NULL;
  *out_line_offset = 0;
  if (!reply && len > 0)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "reply is NULL");
  if (len == 0)
    return extract_bare("", 0, out_text, out_line_offset);
  if (memchr(reply, '\0', len))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "reply contains a NUL byte");

  const char *end = reply + len;
  bool in_fence = false, any_fence = false;
  char fence_char = 0;
  size_t fence_run = 0, fence_line = 0;
  const char *block_begin = NULL;
  size_t block_first_line = 0;
  size_t total = 0;
  const char *found_begin = NULL, *found_end = NULL;
  size_t found_line = 0;
  size_t line_no = 0;
  for (const char *p = reply; p < end; ++line_no) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *next = nl ? nl + 1 : end;
    line_t line = {p, (size_t)((nl ? nl : end) - p)};
    if (line.len && line.text[line.len - 1] == '\r')
      --line.len;
    if (!in_fence) {
      if (fence_open(line, &fence_char, &fence_run)) {
        in_fence = any_fence = true;
        fence_line = line_no;
        block_begin = next;
        block_first_line = line_no + 1;
      }
    } else if (fence_close(line, fence_char, fence_run)) {
      in_fence = false;
      size_t n =
          lf_reply_count_gpu_modules(block_begin, (size_t)(p - block_begin));
      if (n && !found_begin) {
        found_begin = block_begin;
        found_end = p;
        found_line = block_first_line;
      }
      total += n;
    }
    p = next;
  }
  if (in_fence &&
      lf_reply_count_gpu_modules(block_begin, (size_t)(end - block_begin)))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "reply's code fence opened at line %zu is never closed "
                     "(truncated reply?)",
                     fence_line + 1);
  if (!any_fence)
    return extract_bare(reply, len, out_text, out_line_offset);
  if (total > 1)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "reply has %zu gpu.module ops; exactly one is required",
                     total);
  if (total == 0) {
    if (lf_reply_count_gpu_modules(reply, len))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "reply has no gpu.module inside a fenced code block "
                       "(one appears in the prose around them)");
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "reply has no gpu.module");
  }
  LF_RETURN_IF_ERROR(
      copy_out(found_begin, (size_t)(found_end - found_begin), out_text));
  *out_line_offset = found_line;
  return LF_OK;
}
